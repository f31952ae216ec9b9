//! Scans along an axis (`cumsum`, `cumprod`, `cummax`, `cummin`) against sequential plain-Rust
//! oracles written here, on seeded random data, for f32, f64, i32 and u32: every axis of 3-D
//! arrays (the contiguous one and strided ones), lines long enough to cross many GPU blocks and
//! chunks (70,000 elements, cut at no block boundary), NaN propagation, empty and length-1 axes,
//! inputs that are views or computed, and errors naming this file.
//!
//! Oracles and tolerances: integers exactly (sums and products wrap modulo 2^32). Floats in f64,
//! one element after another from the line's first: max and min exactly (NaN equal to NaN);
//! element `k` of a sum within `tol * sum_{j<=k} |x_j|` (tol 1e-5 for f32, whose GPU scans
//! accumulate in f32 in a tree of depth about 50; 1e-12 for f64), of a product within
//! `4 (k + 2) eps |want|` (each factor rounds once, `eps` of the element type).

mod common;

use arrayflow::{Array, ErrorKind, Numeric};
use common::*;
use std::fmt::Debug;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Prod,
    Max,
    Min,
}
const OPS: [Op; 4] = [Op::Sum, Op::Prod, Op::Max, Op::Min];

fn apply<T: Numeric>(a: &Array<T>, op: Op, axis: usize) -> Array<T> {
    match op {
        Op::Sum => a.cumsum(axis),
        Op::Prod => a.cumprod(axis),
        Op::Max => a.cummax(axis),
        Op::Min => a.cummin(axis),
    }
}

/// The elements of every line along `axis` of `shape` (linear indices, in order).
fn lines(shape: &[usize], axis: usize) -> Vec<Vec<usize>> {
    let n = shape[axis];
    let post: usize = shape[axis + 1..].iter().product();
    let pre: usize = shape[..axis].iter().product();
    let mut out = Vec::new();
    for p in 0..pre {
        for q in 0..post {
            out.push((0..n).map(|k| (p * n + k) * post + q).collect());
        }
    }
    out
}

/// An element type with its oracle and comparison.
trait El: Numeric + Copy + Debug + PartialEq {
    /// Checks `got` (the scan `op` of `x` along `axis` of `shape`) against the oracle.
    fn check(op: Op, x: &[Self], shape: &[usize], axis: usize, got: &[Self], ctx: &str);
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}
fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Float oracle: per element, the expected value and its allowance.
#[allow(clippy::too_many_arguments)]
fn float_check(
    op: Op,
    x: &[f64],
    shape: &[usize],
    axis: usize,
    got: &[f64],
    eps: f64,
    tol: f64,
    ctx: &str,
) {
    assert_eq!(got.len(), x.len(), "{ctx}: length");
    let mut bad = Vec::new();
    for line in lines(shape, axis) {
        let (mut acc, mut abs) = (0.0f64, 0.0f64);
        for (k, &i) in line.iter().enumerate() {
            acc = if k == 0 {
                x[i]
            } else {
                match op {
                    Op::Sum => acc + x[i],
                    Op::Prod => acc * x[i],
                    Op::Max => nan_max(acc, x[i]),
                    Op::Min => nan_min(acc, x[i]),
                }
            };
            abs += x[i].abs();
            let allowed = match op {
                Op::Sum => tol * abs + 1e-30,
                Op::Prod => 4.0 * (k + 2) as f64 * eps * acc.abs() + 1e-30,
                _ => 0.0,
            };
            let g = got[i];
            let ok = if acc.is_nan() {
                g.is_nan()
            } else {
                g == acc || (g - acc).abs() <= allowed
            };
            if !ok {
                bad.push(format!(
                    "[{i}] (element {k} of its line) got {g:e} want {acc:e} (allowed {allowed:e})"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{ctx}: {} of {} wrong:\n  {}",
        bad.len(),
        x.len(),
        bad[..bad.len().min(8)].join("\n  ")
    );
}

impl El for f32 {
    fn check(op: Op, x: &[f32], shape: &[usize], axis: usize, got: &[f32], ctx: &str) {
        let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        float_check(op, &x, shape, axis, &got, f32::EPSILON as f64, 1e-5, ctx);
    }
}
impl El for f64 {
    fn check(op: Op, x: &[f64], shape: &[usize], axis: usize, got: &[f64], ctx: &str) {
        float_check(op, x, shape, axis, got, f64::EPSILON, 1e-12, ctx);
    }
}

/// Integer oracle: sums and products wrapping in u32, max and min exact.
#[allow(clippy::too_many_arguments)]
fn int_check<T: El + Ord>(
    op: Op,
    x: &[T],
    shape: &[usize],
    axis: usize,
    got: &[T],
    bits: impl Fn(T) -> u32,
    from: impl Fn(u32) -> T,
    ctx: &str,
) {
    let mut want = x.to_vec();
    for line in lines(shape, axis) {
        let mut acc = match line.first() {
            Some(&i) => x[i],
            None => continue,
        };
        for &i in &line[1..] {
            acc = match op {
                Op::Sum => from(bits(acc).wrapping_add(bits(x[i]))),
                Op::Prod => from(bits(acc).wrapping_mul(bits(x[i]))),
                Op::Max if x[i] > acc => x[i],
                Op::Min if x[i] < acc => x[i],
                _ => acc,
            };
            want[i] = acc;
        }
    }
    assert_same(got, &want, ctx);
}

impl El for i32 {
    fn check(op: Op, x: &[i32], shape: &[usize], axis: usize, got: &[i32], ctx: &str) {
        int_check(op, x, shape, axis, got, |v| v as u32, |b| b as i32, ctx);
    }
}
impl El for u32 {
    fn check(op: Op, x: &[u32], shape: &[usize], axis: usize, got: &[u32], ctx: &str) {
        int_check(op, x, shape, axis, got, |v| v, |b| b, ctx);
    }
}

/// Scans `x` of `shape` with `op` along `axis` and checks the result.
#[track_caller]
fn check<T: El>(op: Op, x: &[T], shape: &[usize], axis: usize, ctx: &str) {
    let a = Array::from_slice(x, shape);
    let s = apply(&a, op, axis);
    assert_eq!(s.shape(), shape, "{ctx}: shape");
    let ctx = format!("{ctx}: {op:?} along axis {axis} of {shape:?}");
    T::check(op, x, shape, axis, &read(&s), &ctx);
}

/// Float data for `op`: sums in [-1, 1]; products `e^u`, |u| <= 0.05 (a random walk in the log
/// that stays in range over 70,000 factors); max and min drawn from a few values, so lines hold
/// duplicates and both zeros.
fn floats(r: &mut rand::rngs::StdRng, op: Op, n: usize) -> Vec<f64> {
    match op {
        Op::Sum => rand_f64(r, n, -1.0, 1.0),
        Op::Prod => rand_f64(r, n, -0.05, 0.05)
            .into_iter()
            .map(f64::exp)
            .collect(),
        Op::Max | Op::Min => {
            let pool = [-3.5, -1.0, -0.0, 0.0, 0.25, 2.0, 1e30, -1e30];
            rand_u32(r, n, 0, 15)
                .into_iter()
                .zip(rand_f64(r, n, -10.0, 10.0))
                .map(|(k, v)| pool.get(k as usize).copied().unwrap_or(v))
                .collect()
        }
    }
}

/// Integer data for `op`: any values (sums wrap), odd values for products (so a product does not
/// become 0 after a few dozen even factors), a narrow range for max and min (duplicates).
fn ints(r: &mut rand::rngs::StdRng, op: Op, n: usize) -> Vec<i32> {
    match op {
        Op::Sum => rand_i32_any(r, n),
        Op::Prod => rand_i32_any(r, n).into_iter().map(|v| v | 1).collect(),
        Op::Max | Op::Min => rand_i32(r, n, -20, 20),
    }
}

/// Checks `op` along `axis` of `shape` on fresh data of element type `d` ("f32", "f64", "i32",
/// "u32").
fn one(r: &mut rand::rngs::StdRng, d: &str, op: Op, shape: &[usize], axis: usize) {
    let n = numel(shape);
    match d {
        "f32" => {
            let f: Vec<f32> = floats(r, op, n).iter().map(|&v| v as f32).collect();
            check(op, &f, shape, axis, d);
        }
        "f64" => check(op, &floats(r, op, n), shape, axis, d),
        "i32" => check(op, &ints(r, op, n), shape, axis, d),
        _ => {
            let u: Vec<u32> = ints(r, op, n)
                .iter()
                .map(|&v| (v as u32).wrapping_add(20))
                .collect();
            check(op, &u, shape, axis, d);
        }
    }
}

const TYPES: [&str; 4] = ["f32", "f64", "i32", "u32"];

/// Every op and element type along each axis of a 3-D array: along axis 2 short rows, axes 1 and
/// 0 strided (a GPU thread per line); along axis 2 of [3, 5, 40] rows that share a GPU block.
#[test]
fn every_op_and_type_along_each_axis_of_a_3d_array() {
    let mut r = rng(0x5ca0);
    for axis in 0..3 {
        for op in OPS {
            for d in TYPES {
                one(&mut r, d, op, &[5, 7, 9], axis);
            }
        }
    }
    for (j, op) in OPS.into_iter().enumerate() {
        one(&mut r, TYPES[j], op, &[3, 5, 40], 2);
    }
}

/// 70,000 elements along one axis: 18 GPU blocks of 4096 (35 of 2048 on WGSL), rows starting
/// inside blocks, the CPU's chunks of long rows and a short last chunk (every op); the same length along a strided axis, which the GPU cuts into
/// chunks; rows of a length that is no multiple of any block (every block holds a row start);
/// few strided lines of 300 (two ops each). The element types in turn. A GPU executor runs every
/// scan itself (none falls back to the CPU).
#[test]
fn long_lines_cross_many_gpu_blocks() {
    let mut r = rng(0x70000);
    let before = arrayflow::Runtime::stats().device.fallbacks;
    let n = 70_000;
    for (k, (shape, axis)) in [
        (vec![2, n + 1], 1),
        (vec![n, 2], 0),
        (vec![13, 5003], 1),
        (vec![2, 300, 3], 1),
    ]
    .into_iter()
    .enumerate()
    {
        for (j, op) in OPS.into_iter().enumerate() {
            if k == 0 || (j + k) % 2 == 0 {
                one(&mut r, TYPES[(j + k) % 4], op, &shape, axis);
            }
        }
    }
    assert_eq!(
        arrayflow::Runtime::stats().device.fallbacks,
        before,
        "scans fell back to the CPU"
    );
}

/// Lines of millions of elements: more block totals than one work-group of a GPU carry pass
/// takes (1024), so the totals are scanned a chunk per work-group and then the chunks' totals
/// (4,500,017 elements: 1099 blocks of 4096 on OpenCL, 2198 of 2048 on WGSL and for f64); rows
/// of 1,500,007 put segment starts inside chunks, so a block's carry must not take its chunk's.
/// Every result against the f64 (or exact integer) oracle; no scan falls back to the CPU.
#[test]
fn lines_of_millions_cross_chunks_of_block_totals() {
    let mut r = rng(0xc4a2);
    let before = arrayflow::Runtime::stats().device.fallbacks;
    for (shape, axis) in [(vec![4_500_017], 0), (vec![3, 1_500_007], 1)] {
        one(&mut r, "f32", Op::Sum, &shape, axis);
        one(&mut r, "i32", Op::Sum, &shape, axis);
        one(&mut r, "f64", Op::Sum, &shape, axis);
        one(&mut r, "f32", Op::Max, &shape, axis);
        one(&mut r, "u32", Op::Min, &shape, axis);
    }
    assert_eq!(
        arrayflow::Runtime::stats().device.fallbacks,
        before,
        "scans fell back to the CPU"
    );
}

/// Once a line has seen a NaN the rest of it is NaN, in `cummax` and `cummin`, also across GPU
/// blocks and chunks; lines without one are not touched. Infinities are ordinary values.
#[test]
fn nan_propagates_through_cummax_and_cummin() {
    let mut r = rng(0x7a7);
    for (shape, axis) in [(vec![3, 20_000], 1), (vec![20_000, 3], 0)] {
        let n = numel(&shape);
        let mut x = rand_f64(&mut r, n, -5.0, 5.0);
        let ls = lines(&shape, axis);
        // Line 0 gets a NaN in its middle, line 1 at its start, line 2 none, and infinities.
        let len = ls[0].len();
        x[ls[0][len / 2 + 1]] = f64::NAN;
        x[ls[1][0]] = f64::NAN;
        x[ls[2][len / 3]] = f64::INFINITY;
        x[ls[2][len / 4]] = f64::NEG_INFINITY;
        for op in [Op::Max, Op::Min] {
            if axis == 0 {
                check(op, &x, &shape, axis, "f64");
            }
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            check(op, &xf, &shape, axis, "f32");
            // Spelled out for the first line: NaN from the NaN on, not before.
            let got = read(&apply(&Array::from_slice(&xf, &shape), op, axis));
            let first = &ls[0];
            assert!(first[..=len / 2].iter().all(|&i| !got[i].is_nan()));
            assert!(first[len / 2 + 1..].iter().all(|&i| got[i].is_nan()));
            assert!(ls[1].iter().all(|&i| got[i].is_nan()));
        }
    }
}

/// Empty arrays and axes give empty results of the same shape; a length-1 axis copies its input
/// (f32 and i32 in turn, every op on a length-1 axis).
#[test]
fn empty_and_length_one_axes() {
    let mut r = rng(0xe1);
    for (k, (shape, axis)) in [
        (vec![0], 0),
        (vec![3, 0, 2], 1),
        (vec![3, 0, 2], 2),
        (vec![4, 1, 5], 1),
        (vec![1], 0),
        (vec![6, 1], 1),
    ]
    .into_iter()
    .enumerate()
    {
        let n = numel(&shape);
        for (j, op) in OPS.into_iter().enumerate() {
            if n == 0 && j != k % 4 {
                continue;
            }
            if (j + k) % 2 == 0 {
                let x = rand_f32(&mut r, n, -2.0, 2.0);
                check(op, &x, &shape, axis, "f32");
                continue;
            }
            let i = rand_i32_any(&mut r, n);
            check(op, &i, &shape, axis, "i32");
            if shape[axis] == 1 {
                let got = read(&apply(&Array::from_slice(&i, &shape), op, axis));
                assert_eq!(got, i, "{op:?} of a length-1 axis of {shape:?}");
            }
        }
    }
}

/// A view or a computed array as the input, and a scan feeding element-wise work.
#[test]
fn scans_of_views_and_into_computed_arrays() {
    let mut r = rng(0x71e);
    let x = rand_f64(&mut r, 6 * 40, -1.0, 1.0);
    let a = Array::from_slice(&x, &[6, 40]);
    // cumsum along axis 0 of the transpose [40, 6]: the rows of `a`, scanned with 2x + 1 after.
    let s = a.transpose().cumsum(1) * 2.0 + 1.0;
    let got = read(&s);
    for c in 0..40 {
        let mut acc = 0.0;
        for j in 0..6 {
            acc += x[j * 40 + c];
            let g = got[c * 6 + j];
            assert!((g - (2.0 * acc + 1.0)).abs() <= 1e-12, "[{c}, {j}] {g}");
        }
    }
    // The scan of a computed input: cummax of |x| along axis 1.
    let m = read(&a.abs().cummax(1));
    for row in 0..6 {
        let mut acc = 0.0f64;
        for c in 0..40 {
            acc = acc.max(x[row * 40 + c].abs());
            assert_eq!(m[row * 40 + c], acc);
        }
    }
}

/// An axis out of range is an error of kind `Argument` naming this file and line, for each scan
/// (and the panicking form names the line too).
#[test]
fn axis_out_of_range_is_an_error_naming_this_file() {
    let a = Array::from_vec(vec![1.0f32; 24], &[2, 3, 4]);
    let b = Array::from_vec(vec![1u32; 3], &[3]);
    let errors = [
        (line!(), a.try_cumsum(3).unwrap_err(), "cumsum axis 3"),
        (line!(), a.try_cumprod(7).unwrap_err(), "cumprod axis 7"),
        (line!(), b.try_cummax(1).unwrap_err(), "cummax axis 1"),
        (line!(), b.try_cummin(9).unwrap_err(), "cummin axis 9"),
    ];
    for (line, e, what) in errors {
        assert_eq!(e.kind, ErrorKind::Argument, "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("tests/scan.rs:{line}:")) && text.contains(what),
            "{text}"
        );
        assert!(text.contains("out of range for shape"), "{text}");
    }
    let line = line!() + 1;
    let p = std::panic::catch_unwind(|| a.cumsum(3)).unwrap_err();
    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("tests/scan.rs:{line}:")) && msg.contains("cumsum axis 3"),
        "{msg}"
    );
}
