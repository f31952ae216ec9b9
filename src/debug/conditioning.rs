//! How well conditioned each reference element is (comparison mode): the magnitude its allowance
//! scales with (see [`Tolerance`]), computed beside the reference value from the inputs' values,
//! magnitudes and allowances. Sums, products and matrix products scale with the sum of the
//! magnitudes of their terms; element-wise ops carry their inputs' allowed differences through
//! the op by evaluating it at the ends of each input's allowed interval (so `mod`, `floor`, casts
//! and comparisons near a discontinuity get the step as allowance); data movement moves the
//! magnitudes with the data. An infinite magnitude means any optimised value matches.

use super::Tolerance;
use super::reference::{self, source_indices};
use crate::exec::TypedVec;
use crate::ir::{DType, Op, ReduceOp, Site};
use crate::ir::{NodeInfo, NodeState};
use smallvec::SmallVec;

/// One input of an op: its reference value, shape, magnitudes and the allowance of its op.
pub struct CondInput<'a> {
    pub value: &'a TypedVec,
    pub shape: &'a [usize],
    pub magnitude: &'a [f64],
    pub tolerance: Tolerance,
}

/// The magnitudes of a leaf's elements: exact data (an upload, a constant) has none to carry
/// (0), generated values carry their own size.
pub fn leaf(op: &Op, value: &TypedVec) -> Vec<f64> {
    match op {
        Op::Source | Op::Const(_) => vec![0.0; value.len()],
        _ => abs(value),
    }
}

fn abs(v: &TypedVec) -> Vec<f64> {
    (0..v.len()).map(|i| modulus(v.get(i))).collect()
}

/// `|a - b|`; for complex values the larger change of the two parts.
fn part_change(a: crate::ir::Scalar, b: crate::ir::Scalar) -> f64 {
    use crate::ir::Scalar;
    match (a, b) {
        (Scalar::C64(a), Scalar::C64(b)) => {
            ((a.re - b.re).abs() as f64).max((a.im - b.im).abs() as f64)
        }
        (Scalar::C128(a), Scalar::C128(b)) => (a.re - b.re).abs().max((a.im - b.im).abs()),
        (a, b) => (a.as_f64() - b.as_f64()).abs(),
    }
}

/// `|x|`; the modulus for complex values.
fn modulus(x: crate::ir::Scalar) -> f64 {
    match x {
        crate::ir::Scalar::C64(z) => (z.re as f64).hypot(z.im as f64),
        crate::ir::Scalar::C128(z) => z.re.hypot(z.im),
        x => x.as_f64().abs(),
    }
}

/// The allowed difference of one input element: `scale * magnitude + floor` (infinite when the
/// element may be anything).
fn allowance(t: Tolerance, magnitude: f64) -> f64 {
    if magnitude.is_infinite() {
        f64::INFINITY
    } else {
        t.scale * magnitude + t.floor
    }
}

/// The magnitude of each element of `result`, the reference value of an op with `op`, `shape`
/// and `dtype` on `inputs`, whose own allowance is `out`.
pub fn magnitudes(
    op: &Op,
    shape: &[usize],
    dtype: DType,
    inputs: &[CondInput],
    result: &TypedVec,
    out: Tolerance,
    site: Site,
) -> Vec<f64> {
    let node = |d: DType| {
        NodeInfo::new(
            op.clone(),
            SmallVec::new(),
            shape.into(),
            d,
            site,
            NodeState::Pending,
        )
    };
    let mags = |k: usize| TypedVec::F64(inputs[k].magnitude.to_vec());
    match op {
        Op::Source | Op::Const(_) | Op::Generate(_) => leaf(op, result),
        Op::Unary(_) | Op::Binary(_) | Op::Select | Op::Cast(_) => {
            elementwise(&node(dtype), inputs, result, out)
        }
        Op::Reshape
        | Op::Broadcast
        | Op::Permute(_)
        | Op::Slice { .. }
        | Op::Tile
        | Op::Fold { .. } => {
            let m = mags(0);
            moved(&node(DType::F64), &[(&m, inputs[0].shape)], result)
        }
        Op::Intrinsic(i) => {
            let out = crate::ir::IntrinsicOutput {
                shape: shape.into(),
                dtype,
            };
            let ins: Vec<crate::intrinsics::MagInput> = inputs
                .iter()
                .map(|x| crate::intrinsics::MagInput {
                    value: x.value,
                    shape: x.shape,
                    magnitude: x.magnitude,
                    tolerance: (x.tolerance.scale, x.tolerance.floor),
                })
                .collect();
            i.def().magnitudes(i, &out, &ins, result)
        }
        Op::Reduce { op, axes } => reduce(*op, axes, &inputs[0], result),
    }
}

/// Data movement: the magnitudes move as the data does.
fn moved(n: &NodeInfo, inputs: &[(&TypedVec, &[usize])], result: &TypedVec) -> Vec<f64> {
    match reference::eval(n, inputs) {
        Ok(TypedVec::F64(m)) => m,
        _ => abs(result),
    }
}

/// An element-wise op: each float input is moved to both ends of its allowed interval in turn;
/// the largest change of the result per input is summed over inputs (a first-order bound that
/// also sees discontinuities). The magnitude is `|result| + change / out.scale`; an output type
/// compared exactly (a comparison, a cast to an integer) whose result can change matches anything.
fn elementwise(n: &NodeInfo, inputs: &[CondInput], result: &TypedVec, out: Tolerance) -> Vec<f64> {
    let len = result.len();
    // Complex results: the modulus, and changes as the largest change of a part.
    let r: Vec<f64> = (0..len).map(|i| modulus(result.get(i))).collect();
    let mut change = vec![0.0f64; len];
    let mut anything = vec![false; len];
    let values: Vec<(&TypedVec, &[usize])> = inputs.iter().map(|i| (i.value, i.shape)).collect();
    for (k, input) in inputs.iter().enumerate() {
        // An input element that may be anything makes the result anything.
        if input.magnitude.iter().any(|m| m.is_infinite()) {
            let m = reference::broadcast(
                &TypedVec::F64(input.magnitude.to_vec()),
                input.shape,
                &n.shape,
            );
            for (i, a) in anything.iter_mut().enumerate() {
                *a |= m.get(i).as_f64().is_infinite();
            }
        }
        let complex = matches!(input.value.dtype(), DType::C64 | DType::C128);
        if !complex && !matches!(input.value.dtype(), DType::F32 | DType::F64) {
            continue;
        }
        let allowed: Vec<f64> = input
            .magnitude
            .iter()
            .map(|&m| allowance(input.tolerance, m))
            .collect();
        if allowed.iter().all(|&a| a == 0.0 || a.is_infinite()) {
            continue;
        }
        let mut worst = vec![0.0f64; len];
        // A real input moves to both ends of its interval; a complex one to the four corners of
        // its box, and onto the real axis from either side where the box reaches it (so `arg`,
        // `ln` or `sqrt` at the negative real axis get the whole jump across their cut: the two
        // signs of a zero imaginary part are both right).
        let moves: &[Move] = if complex {
            &[
                Move::Corner(-1.0, -1.0),
                Move::Corner(1.0, 1.0),
                Move::Corner(-1.0, 1.0),
                Move::Corner(1.0, -1.0),
                Move::Axis(1.0),
                Move::Axis(-1.0),
            ]
        } else {
            &[Move::Corner(-1.0, 0.0), Move::Corner(1.0, 0.0)]
        };
        for &m in moves {
            let moved_input = shifted(input.value, &allowed, m);
            let mut args = values.clone();
            args[k] = (&moved_input, input.shape);
            let Ok(v) = reference::eval(n, &args) else {
                continue;
            };
            for (i, w) in worst.iter_mut().enumerate() {
                let d = part_change(v.get(i), result.get(i));
                if d.is_finite() {
                    *w = w.max(d);
                }
            }
        }
        for (c, w) in change.iter_mut().zip(worst) {
            *c += w;
        }
    }
    if let Op::Binary(crate::ir::BinaryOp::Rem) = n.op
        && matches!(inputs[0].value.dtype(), DType::F32 | DType::F64)
    {
        rem_steps(n, inputs, &mut change);
    }
    (0..len)
        .map(|i| {
            if anything[i] {
                f64::INFINITY
            } else if change[i] == 0.0 {
                r[i].abs()
            } else if out.scale > 0.0 {
                r[i].abs() + change[i] / out.scale
            } else {
                f64::INFINITY
            }
        })
        .collect()
}

/// `x % y` jumps by `|y|` where `x / y` crosses an integer: inside `x`'s allowed interval (which
/// its ends alone may not show: every f32 beyond 2^24 is even), the change includes the step.
fn rem_steps(n: &NodeInfo, inputs: &[CondInput], change: &mut [f64]) {
    let f64s = |v: &TypedVec| TypedVec::F64((0..v.len()).map(|i| v.get(i).as_f64()).collect());
    let allowed: Vec<f64> = inputs[0]
        .magnitude
        .iter()
        .map(|&m| allowance(inputs[0].tolerance, m))
        .collect();
    let x = reference::broadcast(&f64s(inputs[0].value), inputs[0].shape, &n.shape);
    let a = reference::broadcast(&TypedVec::F64(allowed), inputs[0].shape, &n.shape);
    let y = reference::broadcast(&f64s(inputs[1].value), inputs[1].shape, &n.shape);
    for (i, c) in change.iter_mut().enumerate() {
        let (x, a, y) = (
            x.get(i).as_f64(),
            a.get(i).as_f64(),
            y.get(i).as_f64().abs(),
        );
        if a > 0.0 && y > 0.0 && ((x - a) / y).trunc() != ((x + a) / y).trunc() {
            *c += y;
        }
    }
}

/// Where [`shifted`] moves an input element within its allowed interval (or box).
#[derive(Clone, Copy)]
enum Move {
    /// The real part (a real value) by `.0 * allowed`, the imaginary part by `.1 * allowed`.
    Corner(f64, f64),
    /// A complex value whose imaginary part is within `allowed` of 0 onto the real axis, its
    /// imaginary part a zero of `.0`'s sign (real values and other complex values stay).
    Axis(f64),
}

/// Each element of `v` moved by `m` within its allowance, in `v`'s type (elements that may be
/// anything stay).
fn shifted(v: &TypedVec, allowed: &[f64], m: Move) -> TypedVec {
    let a = |i: usize| {
        if allowed[i].is_finite() {
            allowed[i]
        } else {
            0.0
        }
    };
    let real = |i: usize, x: f64| match m {
        Move::Corner(r, _) => x + r * a(i),
        Move::Axis(_) => x,
    };
    let complex = |i: usize, re: f64, im: f64| match m {
        Move::Corner(r, j) => (re + r * a(i), im + j * a(i)),
        Move::Axis(s) if im.abs() <= a(i) => (re, 0.0f64.copysign(s)),
        Move::Axis(_) => (re, im),
    };
    match v {
        TypedVec::F32(x) => TypedVec::F32(
            x.iter()
                .enumerate()
                .map(|(i, &e)| real(i, e as f64) as f32)
                .collect(),
        ),
        TypedVec::C64(x) => TypedVec::C64(
            x.iter()
                .enumerate()
                .map(|(i, z)| {
                    let (re, im) = complex(i, z.re as f64, z.im as f64);
                    num_complex::Complex::new(re as f32, im as f32)
                })
                .collect(),
        ),
        TypedVec::C128(x) => TypedVec::C128(
            x.iter()
                .enumerate()
                .map(|(i, z)| {
                    let (re, im) = complex(i, z.re, z.im);
                    num_complex::Complex::new(re, im)
                })
                .collect(),
        ),
        _ => TypedVec::F64((0..v.len()).map(|i| real(i, v.get(i).as_f64())).collect()),
    }
}

/// Reductions, per output element over the elements it combines: sums `sum max(|x|, m)`,
/// products `n * prod max(|x|, m)`, min/max `|result| + max m`; argmin/argmax and any/all match
/// anything when another element is within the allowances of the winner (or may be anything).
fn reduce(op: ReduceOp, axes: &[usize], input: &CondInput, result: &TypedVec) -> Vec<f64> {
    let from = input.shape;
    let kept: Vec<usize> = (0..from.len()).filter(|a| !axes.contains(a)).collect();
    let order: Vec<usize> = kept.iter().chain(axes.iter()).copied().collect();
    let domain: Vec<usize> = order.iter().map(|&a| from[a]).collect();
    let inner: usize = axes.iter().map(|&a| from[a]).product();
    let at = source_indices(&domain, from, |d, s| {
        for (k, &a) in order.iter().enumerate() {
            s[a] = d[k];
        }
    });
    let src = |lin: usize| at[lin];
    let x = |j: usize| input.value.get(j).as_f64();
    let size = |j: usize| x(j).abs().max(input.magnitude[j]);
    (0..result.len())
        .map(|o| {
            let group: Vec<usize> = (o * inner..(o + 1) * inner).map(src).collect();
            let r = result.get(o).as_f64();
            match op {
                ReduceOp::Sum => group.iter().map(|&j| size(j)).sum(),
                ReduceOp::Prod => {
                    group.len() as f64 * group.iter().map(|&j| size(j)).product::<f64>()
                }
                ReduceOp::Max | ReduceOp::Min => {
                    r.abs()
                        + group
                            .iter()
                            .map(|&j| input.magnitude[j])
                            .fold(0.0, f64::max)
                }
                ReduceOp::Any | ReduceOp::All => {
                    if group.iter().any(|&j| input.magnitude[j].is_infinite()) {
                        f64::INFINITY
                    } else {
                        0.0
                    }
                }
                ReduceOp::ArgMax | ReduceOp::ArgMin => {
                    let Some(&best) = group.get(r as usize) else {
                        return 0.0;
                    };
                    let a = |j: usize| allowance(input.tolerance, input.magnitude[j]);
                    let close = group
                        .iter()
                        .any(|&j| j != best && (x(j) - x(best)).abs() <= a(j) + a(best));
                    if close { f64::INFINITY } else { 0.0 }
                }
            }
        })
        .collect()
}
