//! Small-result matrix products over a long inner extent (`aᵀ b` with `a` stored `[k, m]` and `b`
//! `[k, n]`, the shape of k-means' and least squares' products): the GEMM intrinsic against the
//! fused multiply-and-sum the front end records (`src/frontend/small_product.rs`), in the same
//! run, for each `m x n` of `SMALL_SHAPES` (default `1x1,2x2,8x2,8x8,16x8,16x16`) and each `k`
//! of `SMALL_K` (default `256,4096,200000`), f32 and f64, on the executor `ARRAYFLOW_DEVICE`
//! selects (`ARRAYFLOW_NATIVE=off` for the tile VM alone). This is what chose the limits
//! `MAX_RESULT` and `MIN_INNER`; the fused column is the reduction only where `k` reaches
//! `ARRAYFLOW_SMALL_MATMUL_MIN_K` (default 4096: set it to 1 to measure shorter `k`).
//!
//! Timing: a warm-up, then loops of products each read to the host (`to_vec`), about 0.2 s a
//! loop, 5 loops, the median per product. Each result is first checked against f64 dot products.
//!
//! ```sh
//! ARRAYFLOW_SMALL_MATMUL_MIN_K=1 cargo bench --bench small_matmul
//! ARRAYFLOW_NATIVE=off SMALL_K=200000 cargo bench --bench small_matmul
//! ```

mod common;

use arrayflow::{Array, Float, Runtime};
use common::lcg_values;
use std::time::Instant;

/// The element types measured, with what the check needs.
trait Elem: Float {
    const EPS: f64;
    fn to64(self) -> f64;
}
impl Elem for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn to64(self) -> f64 {
        self as f64
    }
}
impl Elem for f64 {
    const EPS: f64 = f64::EPSILON;
    fn to64(self) -> f64 {
        self
    }
}

fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Median seconds per call of `f`.
fn time(mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    f();
    let once = t.elapsed().as_secs_f64().max(1e-6);
    let reps = ((0.2 / once) as usize).clamp(1, 10_000);
    let mut loops: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    loops.sort_by(f64::total_cmp);
    loops[2]
}

/// `aᵀ b` for `a` `[k, m]`, `b` `[k, n]`: checked, then timed with the GEMM (limit 0) and with
/// the fused reduction (limit `m * n`). Returns (gemm, fused) seconds.
fn case<T: Elem>(m: usize, n: usize, k: usize) -> (f64, f64) {
    let (av, bv) = (lcg_values(k * m, 1), lcg_values(k * n, 2));
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let (a, b) = (
        Array::from_slice(&conv(&av), &[k, m]),
        Array::from_slice(&conv(&bv), &[k, n]),
    );
    let mut out = [0.0; 2];
    for (slot, limit) in [(0, 0), (1, m * n)] {
        Runtime::set_small_matmul(limit);
        let got = a.transpose().matmul(&b).to_vec().unwrap();
        for i in 0..m {
            for j in 0..n {
                let (mut want, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = av[p * m + i] * bv[p * n + j];
                    want += x;
                    mag += x.abs();
                }
                let g = got[i * n + j].to64();
                let tol = k as f64 * T::EPS * mag;
                assert!((g - want).abs() <= tol, "{m}x{n}x{k}: {g} vs {want}");
            }
        }
        out[slot] = time(|| {
            std::hint::black_box(a.transpose().matmul(&b).to_vec().unwrap());
        });
    }
    Runtime::set_small_matmul(0);
    (out[0], out[1])
}

/// k-means' product and counts, `onehotᵀ p` and `onehot.sum_axis(0)` with `onehot` the `eq` and
/// `cast` of `n` assignments to 8 clusters, both read: GEMM, then fused (seconds).
fn one_hot(n: usize) -> (f64, f64) {
    let k = 8;
    let assign: Vec<u32> = lcg_values(n, 3)
        .iter()
        .map(|v| ((v + 1.0) * 4.0) as u32 % 8)
        .collect();
    let (a, p) = (
        Array::from_slice(&assign, &[n]),
        Array::from_slice(
            &lcg_values(n * 2, 4)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>(),
            &[n, 2],
        ),
    );
    let step = || {
        let onehot = a
            .reshape(&[n, 1])
            .eq(Array::<u32>::iota(&[1, k], 1))
            .cast::<f32>();
        let counts = onehot.sum_axis(0);
        let sums = onehot.transpose().matmul(&p);
        (sums.to_vec().unwrap(), counts.to_vec().unwrap())
    };
    let mut out = [0.0; 2];
    let mut first = None;
    for (slot, limit) in [(0, 0), (1, 16)] {
        Runtime::set_small_matmul(limit);
        let got = step();
        assert_eq!(*first.get_or_insert_with(|| got.clone()).1, got.1);
        out[slot] = time(|| {
            std::hint::black_box(step());
        });
    }
    Runtime::set_small_matmul(0);
    (out[0], out[1])
}

fn main() {
    println!(
        "small-result matmul aᵀb, a [k, m], b [k, n]; executor {} ({}); native {}",
        Runtime::executor(),
        std::env::var("ARRAYFLOW_DEVICE").unwrap_or_else(|_| "cpu".into()),
        std::env::var("ARRAYFLOW_NATIVE").unwrap_or_else(|_| "auto".into()),
    );
    println!(
        "{:>6} {:>8} {:>5} {:>12} {:>12} {:>7}",
        "m x n", "k", "type", "gemm", "fused", "gemm/fused"
    );
    for n in list("SMALL_ONEHOT", "200000") {
        let n: usize = n.trim().parse().expect("SMALL_ONEHOT");
        if n > 0 {
            let (g, f) = one_hot(n);
            println!(
                "one-hot [8, {n}] @ [{n}, 2] and counts: gemm {:.1}us fused {:.1}us ({:.2})",
                g * 1e6,
                f * 1e6,
                g / f
            );
        }
    }
    for k in list("SMALL_K", "256,4096,200000") {
        let k: usize = k.trim().parse().expect("SMALL_K");
        for shape in list("SMALL_SHAPES", "1x1,2x2,8x2,8x8,16x8,16x16") {
            let (m, n) = shape.split_once('x').expect("SMALL_SHAPES: MxN");
            let (m, n): (usize, usize) = (m.trim().parse().unwrap(), n.trim().parse().unwrap());
            for (ty, (g, f)) in [("f32", case::<f32>(m, n, k)), ("f64", case::<f64>(m, n, k))] {
                println!(
                    "{:>6} {:>8} {:>5} {:>10.1}us {:>10.1}us {:>7.2}",
                    format!("{m}x{n}"),
                    k,
                    ty,
                    g * 1e6,
                    f * 1e6,
                    g / f
                );
            }
        }
    }
}
