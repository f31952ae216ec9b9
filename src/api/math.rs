//! Element-wise functions (the seed's section 4.2): transcendental and rounding functions on floats,
//! `abs`/`sign` on numbers, comparisons returning `Array<bool>`, logical functions on bools,
//! `select` (the seed's Cond), `pow`/`powi`, `minimum`/`maximum`/`clamp`.

use super::array::{Array, ok, site};
use super::element::{Element, Float, Inexact, Logical, Numeric};
use super::ops::Operand;
use crate::frontend;
use crate::ir::{BinaryOp, UnaryOp};

macro_rules! float_unary {
    ($($name:ident $op:ident $doc:literal),* $(,)?) => {
        impl<T: Float> Array<T> {$(
            #[doc = $doc]
            #[track_caller]
            pub fn $name(&self) -> Array<T> { self.un(UnaryOp::$op) }
        )*}
    };
}
float_unary! {
    exp2 Exp2 "2^x", rsqrt Rsqrt "1 / sqrt(x)",
    cbrt Cbrt "cube root", log10 Log10 "base-10 logarithm",
    log2 Log2 "base-2 logarithm", sin Sin "sine", cos Cos "cosine", tan Tan "tangent",
    sec Sec "secant, 1 / cos(x)", csc Csc "cosecant, 1 / sin(x)", cot Cot "cotangent, 1 / tan(x)",
    asin Asin "arcsine", acos Acos "arccosine", atan Atan "arctangent",
    asec Asec "arcsecant, acos(1 / x)", acsc Acsc "arccosecant, asin(1 / x)", acot Acot "arccotangent, atan(1 / x)",
    sinh Sinh "hyperbolic sine", cosh Cosh "hyperbolic cosine", tanh Tanh "hyperbolic tangent",
    sech Sech "hyperbolic secant", csch Csch "hyperbolic cosecant", coth Coth "hyperbolic cotangent",
    erf Erf "error function", erfc Erfc "complementary error function, 1 - erf(x) without cancellation",
    asinh Asinh "inverse hyperbolic sine", acosh Acosh "inverse hyperbolic cosine", atanh Atanh "inverse hyperbolic tangent",
    floor Floor "round down", ceil Ceil "round up", trunc Trunc "round toward zero",
    round Round "round to nearest, halves away from zero",
}

impl<T: Inexact> Array<T> {
    /// `e^x` (complex: `e^re (cos im + i sin im)`).
    #[track_caller]
    pub fn exp(&self) -> Array<T> {
        self.un(UnaryOp::Exp)
    }
    /// Natural logarithm (complex: the principal value, branch cut along the negative real axis).
    #[track_caller]
    pub fn ln(&self) -> Array<T> {
        self.un(UnaryOp::Ln)
    }
    /// Square root (complex: the principal value, real part >= 0).
    #[track_caller]
    pub fn sqrt(&self) -> Array<T> {
        self.un(UnaryOp::Sqrt)
    }
    /// `x^n` for an integer `n` by repeated squaring, a chain of multiplications fused into one
    /// kernel (`1 / x^|n|` for negative `n`); real `|n| > 64` is `pow(x, n)`. Complex numbers
    /// always take the chain (at most 62 products), so every executor computes them.
    #[track_caller]
    pub fn powi(&self, n: i32) -> Array<T> {
        self.powi_abs(n.unsigned_abs(), n < 0)
    }
    #[track_caller]
    fn powi_abs(&self, n: u32, invert: bool) -> Array<T> {
        if invert {
            return Array::scalar(T::ONE).bin(BinaryOp::Div, self.powi_abs(n, false));
        }
        match n {
            0 => Array::ones(self.shape()),
            1 => self.clone(),
            _ if n > 64 && !T::DTYPE.is_complex() => self.bin(BinaryOp::Pow, T::from_f64(n as f64)),
            _ => {
                // Square and multiply.
                let half = self.powi_abs(n / 2, false);
                let sq = &half * &half;
                if n % 2 == 1 { &sq * self } else { sq }
            }
        }
    }
}

impl<T: Float> Array<T> {
    /// Whether each element is NaN.
    #[track_caller]
    pub fn is_nan(&self) -> Array<bool> {
        self.un(UnaryOp::IsNan)
    }
    /// Whether each element is +inf or -inf.
    #[track_caller]
    pub fn is_inf(&self) -> Array<bool> {
        self.un(UnaryOp::IsInf)
    }
    /// `x^y` element-wise (`y` an array or a scalar).
    #[track_caller]
    pub fn pow(&self, y: impl Operand<T>) -> Array<T> {
        let s = site();
        let y = y.into_handle(s);
        // Strength reduction: x^2 is x * x, x^1 is x.
        match y.konst.map(|v| v.as_f64()) {
            Some(2.0) if y.shape.is_empty() => self.bin(BinaryOp::Mul, self),
            Some(1.0) if y.shape.is_empty() => self.clone(),
            _ => ok(frontend::binary(BinaryOp::Pow, &self.h, &y, s).map(Array::wrap)),
        }
    }
    /// Logarithm in `base`.
    #[track_caller]
    pub fn log(&self, base: T) -> Array<T> {
        self.ln() / T::from_f64(base.scalar().as_f64().ln())
    }
    /// Four-quadrant arctangent of `self / x`.
    #[track_caller]
    pub fn atan2(&self, x: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Atan2, x)
    }
}

impl<T: Numeric> Array<T> {
    /// Absolute value (integers wrap: `i32::MIN.abs()` stays `i32::MIN`); for complex numbers
    /// the modulus `|z|` (as C `hypot`: no overflow for huge parts), of the component type.
    #[track_caller]
    pub fn abs(&self) -> Array<T::Real> {
        self.un(UnaryOp::Abs)
    }
    /// -1, 0 or 1 by sign (NaN stays NaN).
    #[track_caller]
    pub fn sign(&self) -> Array<T> {
        self.un(UnaryOp::Sign)
    }
    /// Remainder with the sign of the dividend (C `fmod`, Rust `%`).
    #[track_caller]
    pub fn rem(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Rem, y)
    }
    /// Floored modulo with the sign of the divisor (NumPy `mod`).
    #[track_caller]
    pub fn modulo(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Mod, y)
    }
    /// Element-wise minimum (NaN if either is NaN, as NumPy `minimum`).
    #[track_caller]
    pub fn minimum(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Min, y)
    }
    /// Element-wise maximum (NaN if either is NaN, as NumPy `maximum`).
    #[track_caller]
    pub fn maximum(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Max, y)
    }
    /// Each element limited to `[lo, hi]`.
    #[track_caller]
    pub fn clamp(&self, lo: impl Operand<T>, hi: impl Operand<T>) -> Array<T> {
        self.maximum(lo).minimum(hi)
    }
    /// Element-wise `self < y`.
    #[track_caller]
    pub fn lt(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Lt, y)
    }
    /// Element-wise `self <= y`.
    #[track_caller]
    pub fn le(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Le, y)
    }
    /// Element-wise `self > y`.
    #[track_caller]
    pub fn gt(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Gt, y)
    }
    /// Element-wise `self >= y`.
    #[track_caller]
    pub fn ge(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Ge, y)
    }
}

impl<T: Element> Array<T> {
    /// Element-wise equality.
    #[track_caller]
    pub fn eq(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Eq, y)
    }
    /// Element-wise inequality.
    #[track_caller]
    pub fn ne(&self, y: impl Operand<T>) -> Array<bool> {
        self.bin(BinaryOp::Ne, y)
    }
}

impl<T: Logical> Array<T> {
    /// Element-wise logical (bool) or bitwise (integer) and; also the `&` operator.
    #[track_caller]
    pub fn and(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::And, y)
    }
    /// Element-wise logical (bool) or bitwise (integer) or; also the `|` operator.
    #[track_caller]
    pub fn or(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Or, y)
    }
    /// Element-wise logical (bool) or bitwise (integer) exclusive or; also the `^` operator.
    #[track_caller]
    pub fn xor(&self, y: impl Operand<T>) -> Array<T> {
        self.bin(BinaryOp::Xor, y)
    }
    /// Element-wise logical (bool) or bitwise (integer) complement; also the `!` operator.
    #[track_caller]
    pub fn not(&self) -> Array<T> {
        self.un(UnaryOp::Not)
    }
}

impl Array<bool> {
    /// Element-wise `!(self & y)`.
    #[track_caller]
    pub fn nand(&self, y: impl Operand<bool>) -> Array<bool> {
        self.bin(BinaryOp::Nand, y)
    }
    /// Element-wise `!(self | y)`.
    #[track_caller]
    pub fn nor(&self, y: impl Operand<bool>) -> Array<bool> {
        self.bin(BinaryOp::Nor, y)
    }
    /// Number of true elements.
    #[track_caller]
    pub fn count(&self) -> Array<u32> {
        self.cast::<u32>().sum()
    }
    /// `a` where this is true, else `b` (the seed's Cond).
    #[track_caller]
    pub fn select<T: Element>(&self, a: impl Operand<T>, b: impl Operand<T>) -> Array<T> {
        let s = site();
        ok(frontend::select(&self.h, &a.into_handle(s), &b.into_handle(s), s).map(Array::wrap))
    }
}

/// `a` where `cond` is true, else `b`, broadcast together (the seed's Cond).
#[track_caller]
pub fn select<T: Element>(cond: &Array<bool>, a: impl Operand<T>, b: impl Operand<T>) -> Array<T> {
    let s = site();
    ok(frontend::select(&cond.h, &a.into_handle(s), &b.into_handle(s), s).map(Array::wrap))
}

/// Element-wise minimum of `a` and `b` (NaN if either is NaN); the method form is `a.minimum(b)`
/// (`a.min()` is the reduction).
#[track_caller]
pub fn min<T: Numeric>(a: &Array<T>, b: impl Operand<T>) -> Array<T> {
    a.bin(BinaryOp::Min, b)
}

/// Element-wise maximum of `a` and `b` (NaN if either is NaN); the method form is `a.maximum(b)`
/// (`a.max()` is the reduction).
#[track_caller]
pub fn max<T: Numeric>(a: &Array<T>, b: impl Operand<T>) -> Array<T> {
    a.bin(BinaryOp::Max, b)
}
