//! Element types an `Array` can hold, and the trait families operations are defined on.

use crate::exec::TypedVec;
use crate::ir::{DType, Scalar};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for bool {}
}

/// An element type: `f32`, `f64`, `i32`, `u32` or `bool`.
pub trait Element:
    Copy + Send + Sync + std::fmt::Debug + PartialEq + 'static + sealed::Sealed
{
    /// The run-time tag of this type.
    const DTYPE: DType;
    #[doc(hidden)]
    fn scalar(self) -> Scalar;
    #[doc(hidden)]
    fn from_scalar(s: Scalar) -> Self;
    #[doc(hidden)]
    fn typed_vec(v: Vec<Self>) -> TypedVec;
    #[doc(hidden)]
    fn slice(v: &TypedVec) -> &[Self];
}

/// Number types: `f32`, `f64`, `i32`, `u32` (arithmetic, comparisons, sums).
pub trait Numeric: Element {
    /// The additive identity.
    const ZERO: Self;
    /// The multiplicative identity.
    const ONE: Self;
}
/// Floating-point types: `f32`, `f64` (transcendental functions, means, norms, matmul, random).
pub trait Float: Numeric {
    #[doc(hidden)]
    fn from_f64(v: f64) -> Self;
}
/// Integer types usable as indices: `i32`, `u32`.
pub trait Index: Numeric {}
/// Types with logical/bitwise operators (`!`, `&`, `|`, `^`): `bool`, `i32`, `u32`.
pub trait Logical: Element {}

macro_rules! element {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn scalar(self) -> Scalar {
                Scalar::$d(self)
            }
            fn from_scalar(s: Scalar) -> Self {
                match s.cast(DType::$d) {
                    Scalar::$d(v) => v,
                    _ => unreachable!(),
                }
            }
            fn typed_vec(v: Vec<Self>) -> TypedVec {
                TypedVec::$d(v)
            }
            fn slice(v: &TypedVec) -> &[Self] {
                match v {
                    TypedVec::$d(v) => v,
                    other => panic!(
                        "arrayflow: buffer holds {} elements, expected {}",
                        other.dtype(),
                        DType::$d
                    ),
                }
            }
        }
    };
}
element!(f32, F32);
element!(f64, F64);
element!(i32, I32);
element!(u32, U32);
element!(bool, Bool);

impl Numeric for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl Numeric for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl Numeric for i32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
}
impl Numeric for u32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
}
impl Float for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl Float for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl Index for i32 {}
impl Index for u32 {}
impl Logical for bool {}
impl Logical for i32 {}
impl Logical for u32 {}
