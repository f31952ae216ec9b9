//! Scalar complex arithmetic the CPU sources of the op tables use (`table.rs`, the `complex`,
//! `cpart`, `ceq` and `mkc` columns): written out here rather than taken from num-complex's
//! operators where the textbook formula overflows or loses accuracy (division, square root), so
//! the tile VM, the reference interpreter and constant folding compute the same bits.

use super::cpu::Real;
use num_complex::Complex;

/// `a * b` by the schoolbook formula (four products, no fused multiply-add), as every target
/// computes it.
#[inline(always)]
pub fn cmul<F: Real>(a: Complex<F>, b: Complex<F>) -> Complex<F> {
    Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// `a / b` by Smith's algorithm (1962): scales by the larger component of `b`, so neither a
/// tiny nor a huge divisor overflows or underflows an intermediate `|b|^2`.
#[inline(always)]
pub fn cdiv<F: Real>(a: Complex<F>, b: Complex<F>) -> Complex<F> {
    if b.re.abs() >= b.im.abs() {
        let r = b.im / b.re;
        let d = b.re + b.im * r;
        Complex::new((a.re + a.im * r) / d, (a.im - a.re * r) / d)
    } else {
        let r = b.re / b.im;
        let d = b.re * r + b.im;
        Complex::new((a.re * r + a.im) / d, (a.im * r - a.re) / d)
    }
}

/// `|z|` without overflow or underflow of `re^2 + im^2` (C `hypot`).
#[inline(always)]
pub fn cabs<F: Real>(z: Complex<F>) -> F {
    z.re.hypot(z.im)
}

/// `e^z = e^re (cos im + i sin im)`; a real `z` (`im == 0`) gives exactly `(e^re, im)`.
#[inline(always)]
pub fn cexp<F: Real>(z: Complex<F>) -> Complex<F> {
    let m = z.re.exp();
    if z.im == F::zero() {
        return Complex::new(m, z.im);
    }
    Complex::new(m * z.im.cos(), m * z.im.sin())
}

/// The principal logarithm `ln|z| + i arg z` (branch cut along the negative real axis).
#[inline(always)]
pub fn cln<F: Real>(z: Complex<F>) -> Complex<F> {
    Complex::new(cabs(z).ln(), z.im.atan2(z.re))
}

/// The principal square root (real part >= 0, imaginary part with the sign of `im`), from
/// `t = sqrt((|re| + |z|) / 2)` computed as halves so it does not overflow near the largest
/// finite values.
#[inline(always)]
pub fn csqrt<F: Real>(z: Complex<F>) -> Complex<F> {
    let half = F::from(0.5).unwrap();
    if z.re == F::zero() && z.im == F::zero() {
        return Complex::new(F::zero(), z.im);
    }
    if z.im.is_infinite() {
        return Complex::new(F::infinity(), z.im);
    }
    let t = (half * z.re.abs() + half * cabs(z)).sqrt();
    if z.re >= F::zero() {
        Complex::new(t, half * z.im / t)
    } else {
        Complex::new(half * z.im.abs() / t, t.copysign(z.im))
    }
}
