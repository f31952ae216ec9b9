//! The result comparison rule (the seed's FIG. 9C), element by element: if either value is NaN
//! both must be NaN; if either is infinite both must be the same infinity; otherwise the optimised
//! value passes when `|optimised - reference| <= magnitude * scale + floor`, where the magnitude
//! follows the op's conditioning (`conditioning.rs`; `|reference|` where none is known). Scale 0
//! and floor 0 demand an exact match. Scale and floor are set globally and per element type.
//!
//! Complex values are compared per component (real part with real part, imaginary with
//! imaginary), each by the rule above with the tolerance of the component type (`Complex<f32>`
//! takes f32's), the magnitude at least the reference's modulus `|z|`: a part that is tiny beside
//! the other is held to the precision of the number, not of the part (as the modulus rule would),
//! while NaN and infinity are still matched part by part.

use crate::ir::DType;

/// Allowed error for one element type (and op).
///
/// An element passes when `|optimised - reference| <= magnitude * scale + floor`. The magnitude
/// follows the conditioning of the computation that produced the element, not only the size of
/// the result, so correct but ill-conditioned results are not reported:
///
/// - exact data (uploads, constants): 0, nothing to carry; generated values: `|value|`;
/// - sums and means: `sum_i max(|x_i|, m_i)` over the terms (a cancelling sum may round to a
///   result far from the reference, within its terms' rounding); dot products and `matmul`:
///   `sum_p max(|a_p|, m_a) * max(|b_p|, m_b)`; products: `n * prod max(|x_i|, m_i)`; min/max:
///   `|result| + max m_i`;
/// - element-wise ops: `|result| + change / scale`, where `change` sums, over the float inputs,
///   the largest change of the result when that input moves to either end of its own allowed
///   interval (`m * scale + floor` of its op): the inputs' allowed differences carried through
///   the op. Near a discontinuity (`x % d` at a multiple of `d`, `floor` at an integer) that is
///   the step;
/// - data movement: the magnitudes move with the data.
///
/// A result compared exactly (bool, integer: a comparison, a cast, argmax) whose value can change
/// within its inputs' allowances has an infinite magnitude: any optimised value matches. So does
/// anything computed from it element-wise. A wrong value is still caught where it is beyond its
/// conditioned allowance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative part: the allowance is `|reference * scale|`.
    pub scale: f64,
    /// Absolute floor added to the allowance.
    pub floor: f64,
}

impl Tolerance {
    /// No allowance: values must be equal (NaN equals NaN).
    pub const EXACT: Tolerance = Tolerance {
        scale: 0.0,
        floor: 0.0,
    };

    /// The documented defaults. Floats: relative `1e-5` (f32) and `1e-12` (f64), plus an absolute
    /// floor of `1e-6` (f32) and `1e-14` (f64), because sums and matrix products whose terms
    /// cancel round differently in blocked, fused or native code than in the reference's
    /// sequential f64 accumulation: the error follows the size of the terms, not of the result.
    /// Integers and bools: exact.
    pub fn default_for(d: DType) -> Tolerance {
        match d {
            DType::F32 => Tolerance {
                scale: 1e-5,
                floor: 1e-6,
            },
            DType::F64 => Tolerance {
                scale: 1e-12,
                floor: 1e-14,
            },
            DType::C64 => Tolerance::default_for(DType::F32),
            DType::C128 => Tolerance::default_for(DType::F64),
            _ => Tolerance::EXACT,
        }
    }
}

/// The verdict on one pair of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Pass,
    /// The values differ beyond the allowance: the error and the allowance.
    Fail {
        error: f64,
        allowed: f64,
    },
}

/// The parts of a complex optimised value and its reference, `[(re, re), (im, im)]`, and the
/// reference's modulus (0 when not finite); `None` for real values.
pub fn parts(
    optimised: crate::ir::Scalar,
    reference: crate::ir::Scalar,
) -> Option<([(f64, f64); 2], f64)> {
    use crate::ir::Scalar;
    let (o, r) = match (optimised, reference) {
        (Scalar::C64(o), Scalar::C64(r)) => {
            ((o.re as f64, o.im as f64), (r.re as f64, r.im as f64))
        }
        (Scalar::C128(o), Scalar::C128(r)) => ((o.re, o.im), (r.re, r.im)),
        _ => return None,
    };
    let modulus = r.0.hypot(r.1);
    let modulus = if modulus.is_finite() { modulus } else { 0.0 };
    Some(([(o.0, r.0), (o.1, r.1)], modulus))
}

/// Compares one optimised value with its reference under the FIG. 9C rule, the allowance scaled
/// by `|reference|` (an infinite reference must be matched exactly: its magnitude is not the
/// "matches anything" of [`compare_conditioned`]).
pub fn compare(optimised: f64, reference: f64, tol: Tolerance) -> Verdict {
    let magnitude = if reference.is_finite() {
        reference.abs()
    } else {
        0.0
    };
    compare_conditioned(optimised, reference, magnitude, tol)
}

/// Compares one optimised value with its reference, the allowance scaled by
/// `max(|reference|, magnitude)` (see [`Tolerance`]); an infinite magnitude matches anything.
pub fn compare_conditioned(
    optimised: f64,
    reference: f64,
    magnitude: f64,
    tol: Tolerance,
) -> Verdict {
    if magnitude.is_infinite() {
        return Verdict::Pass;
    }
    if optimised.is_nan() || reference.is_nan() {
        return if optimised.is_nan() && reference.is_nan() {
            Verdict::Pass
        } else {
            Verdict::Fail {
                error: f64::NAN,
                allowed: 0.0,
            }
        };
    }
    if optimised.is_infinite() || reference.is_infinite() {
        return if optimised == reference {
            Verdict::Pass
        } else {
            Verdict::Fail {
                error: f64::INFINITY,
                allowed: 0.0,
            }
        };
    }
    let allowed = reference.abs().max(magnitude) * tol.scale + tol.floor;
    let error = (optimised - reference).abs();
    if error <= allowed {
        Verdict::Pass
    } else {
        Verdict::Fail { error, allowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_on_its_edge_cases() {
        let t = Tolerance {
            scale: 1e-6,
            floor: 0.0,
        };
        assert_eq!(compare(f64::NAN, f64::NAN, t), Verdict::Pass);
        assert!(matches!(compare(f64::NAN, 1.0, t), Verdict::Fail { .. }));
        assert!(matches!(compare(1.0, f64::NAN, t), Verdict::Fail { .. }));
        assert_eq!(compare(f64::INFINITY, f64::INFINITY, t), Verdict::Pass);
        assert!(matches!(
            compare(f64::INFINITY, f64::NEG_INFINITY, t),
            Verdict::Fail { .. }
        ));
        assert!(matches!(
            compare(1e300, f64::INFINITY, t),
            Verdict::Fail { .. }
        ));
        // Zero scale and floor: exact only.
        assert_eq!(compare(1.5, 1.5, Tolerance::EXACT), Verdict::Pass);
        assert!(matches!(
            compare(1.5, 1.5 + f64::EPSILON, Tolerance::EXACT),
            Verdict::Fail { .. }
        ));
        // Relative allowance.
        assert_eq!(compare(1.000_000_5, 1.0, t), Verdict::Pass);
        assert!(matches!(compare(1.000_002, 1.0, t), Verdict::Fail { .. }));
        // Denormals: a zero reference allows only the floor.
        let tiny = f64::from_bits(1); // smallest positive subnormal
        assert!(matches!(compare(tiny, 0.0, t), Verdict::Fail { .. }));
        assert_eq!(
            compare(
                tiny,
                0.0,
                Tolerance {
                    scale: 1e-6,
                    floor: 1e-300
                }
            ),
            Verdict::Pass
        );
        assert_eq!(
            compare(tiny * 3.0, tiny * 3.0, Tolerance::EXACT),
            Verdict::Pass
        );
        // +0 and -0 are equal numbers.
        assert_eq!(compare(0.0, -0.0, Tolerance::EXACT), Verdict::Pass);
    }
}
