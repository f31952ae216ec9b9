//! Element types an `Array` can hold, and the trait families operations are defined on.

use crate::exec::TypedVec;
use crate::ir::{DType, Scalar};
use num_complex::Complex;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for bool {}
    impl Sealed for num_complex::Complex<f32> {}
    impl Sealed for num_complex::Complex<f64> {}
}

/// An element type: `f32`, `f64`, `i32`, `u32`, `bool`, `Complex<f32>` or `Complex<f64>`
/// (num-complex's types, re-exported as `arrayflow::Complex`).
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

/// Number types: `f32`, `f64`, `i32`, `u32`, `Complex<f32>`, `Complex<f64>` (arithmetic, sums).
/// Ordering operations (comparisons, min/max, sorting) are refused for complex arrays when
/// recorded, with an error naming the call.
pub trait Numeric: Element {
    /// The additive identity.
    const ZERO: Self;
    /// The multiplicative identity.
    const ONE: Self;
    /// The type `abs` returns: the type itself for real numbers, the component type for complex.
    type Real: Numeric;
}
/// Floating-point types, real or complex (NumPy's "inexact"): `f32`, `f64`, `Complex<f32>`,
/// `Complex<f64>` (`exp`, `ln`, `sqrt`, `mean`).
pub trait Inexact: Numeric {
    #[doc(hidden)]
    fn from_f64(v: f64) -> Self;
}
/// Complex types: `Complex<f32>`, `Complex<f64>` (`conj`, `re`, `im`, `arg`).
pub trait ComplexFloat: Inexact + Numeric<Real = Self::Part> {
    /// The component type (`f32` or `f64`).
    type Part: Float;
}
/// Floating-point types: `f32`, `f64` (transcendental functions, means, norms, matmul, random).
pub trait Float: Inexact + Numeric<Real = Self> {}
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
element!(Complex<f32>, C64);
element!(Complex<f64>, C128);

impl Numeric for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    type Real = f32;
}
impl Numeric for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    type Real = f64;
}
impl Numeric for i32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    type Real = i32;
}
impl Numeric for u32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    type Real = u32;
}
impl Numeric for Complex<f32> {
    const ZERO: Self = Complex::new(0.0, 0.0);
    const ONE: Self = Complex::new(1.0, 0.0);
    type Real = f32;
}
impl Numeric for Complex<f64> {
    const ZERO: Self = Complex::new(0.0, 0.0);
    const ONE: Self = Complex::new(1.0, 0.0);
    type Real = f64;
}
impl ComplexFloat for Complex<f32> {
    type Part = f32;
}
impl ComplexFloat for Complex<f64> {
    type Part = f64;
}
impl Float for f32 {}
impl Float for f64 {}
impl Inexact for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl Inexact for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl Inexact for Complex<f32> {
    fn from_f64(v: f64) -> Self {
        Complex::new(v as f32, 0.0)
    }
}
impl Inexact for Complex<f64> {
    fn from_f64(v: f64) -> Self {
        Complex::new(v, 0.0)
    }
}
impl Index for i32 {}
impl Index for u32 {}
impl Logical for bool {}
impl Logical for i32 {}
impl Logical for u32 {}
