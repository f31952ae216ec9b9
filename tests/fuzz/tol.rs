//! Error bounds by propagation: the one table of rules the oracle applies. Each oracle element
//! carries `e`, a bound on `|implementation - oracle|`; `DC` ("don't care") marks an element whose
//! value the implementation may legitimately choose (a comparison within its error of the
//! threshold, a cast across a rounding boundary). Integer and bool results are exact or `DC`.
//!
//! | op | bound on the result's error |
//! | --- | --- |
//! | `a ± b` | `ea + eb + u·(|r| + ea + eb)` |
//! | `a · b` | `|a|·eb + |b|·ea + ea·eb + u·(...)` |
//! | `a / b` (`|b| > eb`) | `(|b|·ea + |a|·eb) / (|b|·(|b| - eb)) + u·(...)` |
//! | `f(a)` (functions) | `max|f'| over [a - ea, a + ea] · ea + 66·u·|f(a)|` (README: 32 ulp, plus the correct rounding; an ulp is at most `2u|y|`) |
//! | `sqrt` | the smaller of the derivative rule and `sqrt(ea)` (Hölder), plus rounding |
//! | `powi(n)` | the function rule with `(66 + |n|)·u` (a chain of products) |
//! | `floor`, `ceil`, `trunc`, `round`, `sign` | exact if every value in the interval maps alike, else `DC` |
//! | `min`, `max`, `clamp`, `abs`, `-a`, views, gather, concat | `max(ea, eb)` / unchanged |
//! | `fmod(a, s)` (scalar `s`) | `ea` if `trunc(a / s)` is the same over the interval, else `DC`; floored `modulo` adds `u·|r|` |
//! | comparisons | exact if the intervals decide it, else `DC` |
//! | `select(c, a, b)` | the chosen side; the hull of both where `c` is `DC` |
//! | casts | float→float: `ea + u·|a|`; int→float: `u·|a|`; float→int: exact unless the interval crosses an integer, else `DC`; to bool: `DC` if the interval holds 0 |
//! | `Σ x` over `n` | `Σ ei + (n + 1)·u·Σ (|xi| + ei)` (any summation order) |
//! | `Π x` over `n` | `Π(|xi| + ei) - Π|xi| + (n + 1)·u·Π(|xi| + ei)` |
//! | `min`/`max` reductions | `max ei` |
//! | `argmin`/`argmax` | exact unless another element's interval reaches the winner's, else `DC` |
//! | `matmul` (inner size `k`) | `Σ (|a|·eb + |b|·ea + ea·eb) + (k + 1)·u·Σ (|a| + ea)(|b| + eb)` |
//! | variance | per element `d = x - mean` with `ed = e + em + u·(|d| + e + em)`, squares `2|d|·ed + ed² + u·d²`, then the sum rule and `/ n` |
//!
//! `u` is the unit roundoff of the result type (2^-24 for f32, 2^-53 for f64). Every float rule
//! also adds [`ORACLE_U`]`·|r|`: the oracle computes in f64 and rounds too.

use super::program::Ty;

/// Don't care: any value is accepted.
pub const DC: f64 = f64::INFINITY;

/// The oracle's own rounding per operation (its f64 arithmetic and `libm`, within a few ulp).
pub const ORACLE_U: f64 = 4.0 / 9_007_199_254_740_992.0;

/// Function accuracy: the README promises 32 ulp of the correctly rounded value; with that
/// rounding 33 ulp, and an ulp of `y` is at most `2u·|y|`.
pub const FN_UNITS: f64 = 66.0;

/// Unit roundoff of a float type (0 for exact types).
pub fn unit(ty: Ty) -> f64 {
    match ty {
        Ty::F32 => 1.0 / 16_777_216.0,
        Ty::F64 => 1.0 / 9_007_199_254_740_992.0,
        _ => 0.0,
    }
}

/// The rounding of a result `r` computed in `k` rounding steps of `ty`, given the error `prop`
/// propagated from its inputs: `prop + k·u·(|r| + prop) + ORACLE_U·|r|`.
pub fn rounded(ty: Ty, prop: f64, k: f64, r: f64) -> f64 {
    if prop.is_infinite() {
        return DC;
    }
    prop + k * unit(ty) * (r.abs() + prop) + ORACLE_U * r.abs()
}

pub fn add(ty: Ty, ea: f64, eb: f64, r: f64) -> f64 {
    rounded(ty, ea + eb, 1.0, r)
}

pub fn mul(ty: Ty, a: f64, ea: f64, b: f64, eb: f64, r: f64) -> f64 {
    if ea.is_infinite() || eb.is_infinite() {
        return DC;
    }
    rounded(ty, a.abs() * eb + b.abs() * ea + ea * eb, 1.0, r)
}

/// `a / b`; the caller has checked `|b| > eb`.
pub fn div(ty: Ty, a: f64, ea: f64, b: f64, eb: f64, r: f64) -> f64 {
    if ea.is_infinite() || eb.is_infinite() {
        return DC;
    }
    let prop = (b.abs() * ea + a.abs() * eb) / (b.abs() * (b.abs() - eb));
    rounded(ty, prop, 1.0, r)
}

/// A sum of `n` terms with `sum_e = Σ ei` and `sum_abs = Σ (|xi| + ei)`.
pub fn sum(ty: Ty, n: usize, sum_e: f64, sum_abs: f64, r: f64) -> f64 {
    if sum_e.is_infinite() {
        return DC;
    }
    sum_e + (n as f64 + 1.0) * unit(ty) * sum_abs + ORACLE_U * (sum_abs + r.abs())
}
