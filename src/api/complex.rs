//! Functions of complex arrays (`Array<Complex<f32>>`, `Array<Complex<f64>>`): parts, conjugate,
//! argument, building complex arrays from real ones (parts or polar form), complex scalars on the
//! left of operators.
//! `+ - * /` (with complex scalars on the right), `abs`, `sum`, `eq`/`ne` come with `Numeric`;
//! `exp`, `ln`, `sqrt` and `mean` with `Inexact`. Real operands are converted explicitly
//! (`x.cast::<Complex<f32>>()`, `Complex::new(2.0, 0.0)`): operator impls mixing real and complex
//! types would make `Array::ones(..) * &a` ambiguous for the type checker.

use super::array::{Array, ok, site};
use super::element::{ComplexFloat, Element, Float};
use crate::frontend;
use crate::ir::{BinaryOp, UnaryOp};
use num_complex::Complex;
use std::ops;

impl<T: ComplexFloat> Array<T> {
    /// The complex conjugate `re - i im`.
    #[track_caller]
    pub fn conj(&self) -> Array<T> {
        self.un(UnaryOp::Conj)
    }
    /// The real part.
    #[track_caller]
    pub fn re(&self) -> Array<T::Part> {
        self.un(UnaryOp::Re)
    }
    /// The imaginary part.
    #[track_caller]
    pub fn im(&self) -> Array<T::Part> {
        self.un(UnaryOp::Im)
    }
    /// The argument (phase) `atan2(im, re)`, in `[-pi, pi]`.
    #[track_caller]
    pub fn arg(&self) -> Array<T::Part> {
        self.un(UnaryOp::Arg)
    }
    /// The complex array `r (cos theta + i sin theta)` from moduli `r` and angles `theta`
    /// (num-complex's `from_polar`; shapes broadcast), in one fused kernel.
    #[track_caller]
    pub fn from_polar(r: &Array<T::Part>, theta: &Array<T::Part>) -> Array<T> {
        (r * &theta.cos()).complex(&(r * &theta.sin()))
    }
}

impl<F: Float> Array<F> {
    /// The complex array `self + i im` (shapes broadcast): `Array<f32>` gives
    /// `Array<Complex<f32>>`.
    #[track_caller]
    pub fn complex<C: ComplexFloat<Part = F>>(&self, im: &Array<F>) -> Array<C> {
        self.bin(BinaryOp::Complex, im)
    }
}

/// Complex scalars on the left: `Complex::new(1.0, 2.0) * &z`.
macro_rules! complex_lhs {
    ($f:ty; $($tr:ident $m:ident $op:expr),*) => {$(
        impl ops::$tr<&Array<Complex<$f>>> for Complex<$f> {
            type Output = Array<Complex<$f>>;
            #[track_caller]
            fn $m(self, rhs: &Array<Complex<$f>>) -> Array<Complex<$f>> {
                let s = site();
                let lhs = frontend::constant(Element::scalar(self), crate::ir::Shape::new(), s);
                ok(frontend::binary($op, &lhs, &rhs.h, s).map(Array::wrap))
            }
        }
        impl ops::$tr<Array<Complex<$f>>> for Complex<$f> {
            type Output = Array<Complex<$f>>;
            #[track_caller]
            fn $m(self, rhs: Array<Complex<$f>>) -> Array<Complex<$f>> {
                let s = site();
                let lhs = frontend::constant(Element::scalar(self), crate::ir::Shape::new(), s);
                ok(frontend::binary($op, &lhs, &rhs.h, s).map(Array::wrap))
            }
        }
    )*};
}
complex_lhs!(f32; Add add BinaryOp::Add, Sub sub BinaryOp::Sub, Mul mul BinaryOp::Mul, Div div BinaryOp::Div);
complex_lhs!(f64; Add add BinaryOp::Add, Sub sub BinaryOp::Sub, Mul mul BinaryOp::Mul, Div div BinaryOp::Div);
