//! Operator overloading for every owned/borrowed combination and scalars on either side
//! (`&a + &b`, `a * 2.0`, `1.0 - &a`, `-a`, `!mask`, `a += &b`), and `Operand`, which lets methods
//! take an array or a scalar.

use super::array::{Array, ok, site};
use super::element::{Element, Logical, Numeric};
use crate::frontend::{self, Handle};
use crate::ir::{BinaryOp, Shape, Site, UnaryOp};
use std::ops;

/// Something usable as the right-hand side of an element-wise operation: an array (owned or
/// borrowed) or a scalar of the same element type.
///
/// The operators take every owned/borrowed combination and scalars on either side; shapes
/// broadcast as in NumPy. Math functions and comparisons are methods.
///
/// ```
/// use arrayflow::{Array, select};
///
/// let a = Array::from_vec(vec![0.5f64, 1.0, 2.0, 4.0], &[4]);
/// let b = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3, 1]); // broadcasts against `a`
/// let c = (&a * &b + 1.0).ln(); // shape [3, 4]
/// let d = 2.0 - a.pow(0.5) / &a; // scalars on either side
/// let big = a.gt(1.0); // comparisons give Array<bool>
/// let e = select(&big, &a, 0.0); // element-wise if/else
///
/// let (av, bv) = ([0.5f64, 1.0, 2.0, 4.0], [1.0f64, 2.0, 3.0]);
/// let c_oracle: Vec<f64> = bv.iter().flat_map(|b| av.iter().map(move |a| (a * b + 1.0).ln())).collect();
/// arrayflow::assert_allclose(&c, &Array::from_vec(c_oracle, &[3, 4]), 1e-12, 0.0);
/// let d_oracle: Vec<f64> = av.iter().map(|a| 2.0 - a.powf(0.5) / a).collect();
/// arrayflow::assert_allclose(&d, &Array::from_vec(d_oracle, &[4]), 1e-12, 0.0);
/// assert_eq!(e.to_vec()?, vec![0.0, 0.0, 2.0, 4.0]);
///
/// // Integers and bools: `%`, bitwise and logical operators.
/// let n = Array::from_vec(vec![7u32, 12, 5], &[3]);
/// assert_eq!((&n % 4).to_vec()?, vec![3, 0, 1]);
/// assert_eq!((&n & 6u32).to_vec()?, vec![6, 4, 4]);
/// assert_eq!((!n.gt(6)).to_vec()?, vec![false, false, true]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
pub trait Operand<T: Element> {
    #[doc(hidden)]
    fn into_handle(self, site: Site) -> Handle;
}
impl<T: Element> Operand<T> for &Array<T> {
    fn into_handle(self, _: Site) -> Handle {
        self.h.clone()
    }
}
impl<T: Element> Operand<T> for Array<T> {
    fn into_handle(self, _: Site) -> Handle {
        self.h
    }
}
impl<T: Element> Operand<T> for T {
    fn into_handle(self, site: Site) -> Handle {
        frontend::constant(self.scalar(), Shape::new(), site)
    }
}

impl<T: Element> Array<T> {
    #[track_caller]
    pub(crate) fn bin<U: Element>(&self, op: BinaryOp, rhs: impl Operand<T>) -> Array<U> {
        let s = site();
        ok(frontend::binary(op, &self.h, &rhs.into_handle(s), s).map(Array::wrap))
    }
    #[track_caller]
    pub(crate) fn try_bin<U: Element>(
        &self,
        op: BinaryOp,
        rhs: impl Operand<T>,
    ) -> crate::Result<Array<U>> {
        let s = site();
        Ok(Array::wrap(frontend::binary(
            op,
            &self.h,
            &rhs.into_handle(s),
            s,
        )?))
    }
    #[track_caller]
    pub(crate) fn un<U: Element>(&self, op: UnaryOp) -> Array<U> {
        ok(frontend::unary(op, &self.h, site()).map(Array::wrap))
    }
}

macro_rules! binop {
    ($tr:ident, $m:ident, $atr:ident, $am:ident, $op:expr, $bound:ident, $try:ident) => {
        impl<T: $bound> ops::$tr<&Array<T>> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: &Array<T>) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$tr<Array<T>> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: Array<T>) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$tr<&Array<T>> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: &Array<T>) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$tr<Array<T>> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: Array<T>) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$tr<T> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: T) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$tr<T> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $m(self, rhs: T) -> Array<T> {
                self.bin($op, rhs)
            }
        }
        impl<T: $bound> ops::$atr<&Array<T>> for Array<T> {
            #[track_caller]
            fn $am(&mut self, rhs: &Array<T>) {
                let new = self.bin($op, rhs);
                crate::debug::breakpoints::on_rebind(&self.h, &new.h);
                *self = new;
            }
        }
        impl<T: $bound> ops::$atr<Array<T>> for Array<T> {
            #[track_caller]
            fn $am(&mut self, rhs: Array<T>) {
                let new = self.bin($op, rhs);
                crate::debug::breakpoints::on_rebind(&self.h, &new.h);
                *self = new;
            }
        }
        impl<T: $bound> ops::$atr<T> for Array<T> {
            #[track_caller]
            fn $am(&mut self, rhs: T) {
                let new = self.bin($op, rhs);
                crate::debug::breakpoints::on_rebind(&self.h, &new.h);
                *self = new;
            }
        }
        impl<T: $bound> Array<T> {
            /// The operator's `Result`-returning form: shape and type errors come back as `Err`.
            #[track_caller]
            pub fn $try(&self, rhs: impl Operand<T>) -> crate::Result<Array<T>> {
                self.try_bin($op, rhs)
            }
        }
    };
}
binop!(
    Add,
    add,
    AddAssign,
    add_assign,
    BinaryOp::Add,
    Numeric,
    try_add
);
binop!(
    Sub,
    sub,
    SubAssign,
    sub_assign,
    BinaryOp::Sub,
    Numeric,
    try_sub
);
binop!(
    Mul,
    mul,
    MulAssign,
    mul_assign,
    BinaryOp::Mul,
    Numeric,
    try_mul
);
binop!(
    Div,
    div,
    DivAssign,
    div_assign,
    BinaryOp::Div,
    Numeric,
    try_div
);
binop!(
    Rem,
    rem,
    RemAssign,
    rem_assign,
    BinaryOp::Rem,
    Numeric,
    try_rem
);
binop!(
    BitAnd,
    bitand,
    BitAndAssign,
    bitand_assign,
    BinaryOp::And,
    Logical,
    try_and
);
binop!(
    BitOr,
    bitor,
    BitOrAssign,
    bitor_assign,
    BinaryOp::Or,
    Logical,
    try_or
);
binop!(
    BitXor,
    bitxor,
    BitXorAssign,
    bitxor_assign,
    BinaryOp::Xor,
    Logical,
    try_xor
);

/// Scalars on the left: `1.0 - &a`, `2 * a`.
macro_rules! scalar_lhs {
    ($t:ty; $($tr:ident $m:ident $op:expr),*) => {$(
        impl ops::$tr<&Array<$t>> for $t {
            type Output = Array<$t>;
            #[track_caller]
            fn $m(self, rhs: &Array<$t>) -> Array<$t> {
                let s = site();
                ok(frontend::binary($op, &self.into_handle(s), &rhs.h, s).map(Array::wrap))
            }
        }
        impl ops::$tr<Array<$t>> for $t {
            type Output = Array<$t>;
            #[track_caller]
            fn $m(self, rhs: Array<$t>) -> Array<$t> {
                let s = site();
                ok(frontend::binary($op, &self.into_handle(s), &rhs.h, s).map(Array::wrap))
            }
        }
    )*};
}
macro_rules! scalar_lhs_numeric {
    ($($t:ty),*) => {$(
        scalar_lhs!($t; Add add BinaryOp::Add, Sub sub BinaryOp::Sub, Mul mul BinaryOp::Mul, Div div BinaryOp::Div, Rem rem BinaryOp::Rem);
    )*};
}
scalar_lhs_numeric!(f32, f64, i32, u32);
scalar_lhs!(bool; BitAnd bitand BinaryOp::And, BitOr bitor BinaryOp::Or, BitXor bitxor BinaryOp::Xor);

impl<T: Numeric> ops::Neg for &Array<T> {
    type Output = Array<T>;
    #[track_caller]
    fn neg(self) -> Array<T> {
        self.un(UnaryOp::Neg)
    }
}
impl<T: Numeric> ops::Neg for Array<T> {
    type Output = Array<T>;
    #[track_caller]
    fn neg(self) -> Array<T> {
        self.un(UnaryOp::Neg)
    }
}
impl<T: Logical> ops::Not for &Array<T> {
    type Output = Array<T>;
    #[track_caller]
    fn not(self) -> Array<T> {
        self.un(UnaryOp::Not)
    }
}
impl<T: Logical> ops::Not for Array<T> {
    type Output = Array<T>;
    #[track_caller]
    fn not(self) -> Array<T> {
        self.un(UnaryOp::Not)
    }
}
