//! What the linear algebra tests share (`tests/linalg.rs`, `tests/linalg_gpu_batched.rs`): the
//! element types under test, random matrices rounded to them, and f64 oracles for products and
//! residuals.

use super::rand_f64;
use arrayflow::{Array, Float};
use rand::rngs::StdRng;

/// The multiple of `n * eps` a residual may reach.
pub const RESIDUAL: f64 = 8.0;

/// An element type under test.
pub trait F: Float + Into<f64> {
    const EPS: f64;
    /// Whether it is f64.
    const F64: bool;
    fn of(x: f64) -> Self;
}
impl F for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    const F64: bool = false;
    fn of(x: f64) -> Self {
        x as f32
    }
}
impl F for f64 {
    const EPS: f64 = f64::EPSILON;
    const F64: bool = true;
    fn of(x: f64) -> Self {
        x
    }
}

pub fn f64s<T: F>(v: &[T]) -> Vec<f64> {
    v.iter().map(|&x| x.into()).collect()
}

/// `len` random values in [-1, 1), rounded to `T`, as f64.
pub fn values<T: F>(r: &mut StdRng, len: usize) -> Vec<f64> {
    rand_f64(r, len, -1.0, 1.0)
        .into_iter()
        .map(|x| T::of(x).into())
        .collect()
}

/// `count` random `n x n` matrices, as [`values`].
pub fn matrices<T: F>(r: &mut StdRng, count: usize, n: usize) -> Vec<f64> {
    values::<T>(r, count * n * n)
}

pub fn upload<T: F>(v: &[f64], shape: &[usize]) -> Array<T> {
    Array::from_vec(v.iter().map(|&x| T::of(x)).collect(), shape)
}

/// `[m, k] x [k, n]` in f64.
pub fn mul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

pub fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Checks `|A x - b| / (|A| |x|)` for `x`, `b` of `r` columns against `RESIDUAL * n * eps`.
#[track_caller]
pub fn check_residual<T: F>(a: &[f64], x: &[f64], b: &[f64], n: usize, r: usize, ctx: &str) {
    let ax = mul(a, x, n, n, r);
    let diff: Vec<f64> = ax.iter().zip(b).map(|(p, q)| p - q).collect();
    let anorm = (0..n)
        .map(|i| (0..n).map(|j| a[i * n + j].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let rel = norm_inf(&diff) / (anorm * norm_inf(x)).max(f64::MIN_POSITIVE);
    let bound = RESIDUAL * n as f64 * T::EPS;
    assert!(
        rel <= bound,
        "{ctx}: residual {rel:e} over {bound:e} (n = {n})"
    );
}
