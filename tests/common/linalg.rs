//! What the linear algebra tests share (`tests/linalg.rs`, `tests/linalg_gpu_batched.rs`, `tests/linalg_gpu_blocked.rs`): the
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

/// The packed factors `f` and interchanges `piv` of `a` (all `n x n`): `L U` equals `a` with
/// the interchanges applied to its rows (`P L U = A`) within `RESIDUAL * n * eps` relative to
/// `|L| |U|`, `|L| <= 1` (partial pivoting), the interchanges in range.
#[track_caller]
pub fn check_lu<T: F>(f: &[f64], piv: &[i32], a: &[f64], n: usize, ctx: &str) {
    let mut pa = a.to_vec();
    for (k, &p) in piv.iter().enumerate() {
        assert!(
            p as usize >= k && (p as usize) < n,
            "{ctx}: pivot {p} at {k}"
        );
        for j in 0..n {
            pa.swap(k * n + j, p as usize * n + j);
        }
    }
    let (mut l, mut u) = (vec![0.0; n * n], vec![0.0; n * n]);
    for i in 0..n {
        for j in 0..n {
            match i.cmp(&j) {
                std::cmp::Ordering::Greater => l[i * n + j] = f[i * n + j],
                std::cmp::Ordering::Equal => (l[i * n + j], u[i * n + j]) = (1.0, f[i * n + j]),
                std::cmp::Ordering::Less => u[i * n + j] = f[i * n + j],
            }
        }
    }
    assert!(l.iter().all(|x| x.abs() <= 1.0), "{ctx}: |L| > 1");
    let lu = mul(&l, &u, n, n, n);
    let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
    let scale = norm_inf(&mul(&abs(&l), &abs(&u), n, n, n));
    let err = norm_inf(&lu.iter().zip(&pa).map(|(x, y)| x - y).collect::<Vec<_>>());
    assert!(
        err <= RESIDUAL * n as f64 * T::EPS * scale,
        "{ctx}: P L U - A = {err:e} (scale {scale:e})"
    );
}

/// Runs `f` (which reads its results); where `device`, asserts that it ran device kernels and that
/// none of its programs fell back to the CPU.
#[track_caller]
pub fn checked<R>(device: bool, what: &str, f: impl FnOnce() -> R) -> R {
    use arrayflow::Runtime;
    Runtime::execute();
    let before = Runtime::stats();
    let out = f();
    let d = Runtime::stats().since(&before);
    if device {
        assert_eq!(d.device.fallbacks, 0, "{what}: ran on the CPU: {d:?}");
        assert!(d.device.kernels > 0, "{what}: no device kernel ran: {d:?}");
    }
    out
}
