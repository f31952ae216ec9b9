//! Shared helpers for the op test suite: seeded random data, independent oracles for shapes
//! (broadcasting, reductions, strides) and comparisons with explicit tolerances.
//!
//! Each test file uses a subset of these helpers.
#![allow(dead_code)]

pub mod linalg;

use arrayflow::{Array, Element};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::fmt::Debug;

/// A seeded generator, so every failure reproduces.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn rand_f64(r: &mut StdRng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}
pub fn rand_f32(r: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}
pub fn rand_i32(r: &mut StdRng, n: usize, lo: i32, hi: i32) -> Vec<i32> {
    (0..n).map(|_| r.random_range(lo..=hi)).collect()
}
pub fn rand_u32(r: &mut StdRng, n: usize, lo: u32, hi: u32) -> Vec<u32> {
    (0..n).map(|_| r.random_range(lo..=hi)).collect()
}
/// Any i32, so wrapping arithmetic is exercised.
pub fn rand_i32_any(r: &mut StdRng, n: usize) -> Vec<i32> {
    (0..n).map(|_| r.random::<i32>()).collect()
}
/// Any u32, so wrapping arithmetic is exercised.
pub fn rand_u32_any(r: &mut StdRng, n: usize) -> Vec<u32> {
    (0..n).map(|_| r.random::<u32>()).collect()
}
pub fn rand_bool(r: &mut StdRng, n: usize, p_true: f64) -> Vec<bool> {
    (0..n).map(|_| r.random_bool(p_true)).collect()
}
/// Random values with magnitude in `[lo, hi)` and a random sign.
pub fn rand_signed_mag(r: &mut StdRng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let m = r.random_range(lo..hi);
            if r.random_bool(0.5) { -m } else { m }
        })
        .collect()
}

/// Reads an array, panicking with the error if the read fails.
#[track_caller]
pub fn read<T: Element>(a: &Array<T>) -> Vec<T> {
    match a.to_vec() {
        Ok(v) => v,
        Err(e) => panic!("reading {a:?} failed: {e}"),
    }
}

/// Reads a one-element array.
#[track_caller]
pub fn item<T: Element>(a: &Array<T>) -> T {
    match a.item() {
        Ok(v) => v,
        Err(e) => panic!("item() of {a:?} failed: {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Float element abstraction for generic tests over f32 and f64.

/// f32 and f64 for generic oracle tests: conversion to and from f64 plus the tolerances used.
pub trait TestFloat: arrayflow::Float + PartialOrd + Debug {
    /// Tolerance for transcendental functions against the f64 oracle (relative, absolute):
    /// f32: rel 2e-6 or abs 1e-6; f64: rel 1e-12 or abs 1e-13.
    const REL: f64;
    const ABS: f64;
    /// Machine epsilon as f64.
    const EPS: f64;
    fn of(v: f64) -> Self;
    fn to(self) -> f64;
    fn name() -> &'static str;
}
impl TestFloat for f32 {
    const REL: f64 = 2e-6;
    const ABS: f64 = 1e-6;
    const EPS: f64 = f32::EPSILON as f64;
    fn of(v: f64) -> Self {
        v as f32
    }
    fn to(self) -> f64 {
        self as f64
    }
    fn name() -> &'static str {
        "f32"
    }
}
impl TestFloat for f64 {
    const REL: f64 = 1e-12;
    const ABS: f64 = 1e-13;
    const EPS: f64 = f64::EPSILON;
    fn of(v: f64) -> Self {
        v
    }
    fn to(self) -> f64 {
        self
    }
    fn name() -> &'static str {
        "f64"
    }
}

/// Converts f64 values to `T` (rounding for f32).
pub fn conv<T: TestFloat>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// Whether `actual` is within `max(rel * |expected|, abs)` of `expected`; NaN must match NaN and an
/// infinite expectation must be met exactly. `expected` is rounded to the actual type first when
/// that overflows (an f64 oracle beyond f32 range expects inf).
pub fn close(actual: f64, expected: f64, rel: f64, abs: f64) -> bool {
    if expected.is_nan() {
        return actual.is_nan();
    }
    if expected.is_infinite() {
        return actual == expected;
    }
    if !actual.is_finite() {
        return false;
    }
    (actual - expected).abs() <= (rel * expected.abs()).max(abs)
}

/// Compares float results (as f64) with an f64 oracle element by element.
#[track_caller]
pub fn assert_close<T: TestFloat>(actual: &[T], expected: &[f64], rel: f64, abs: f64, ctx: &str) {
    assert_eq!(actual.len(), expected.len(), "{ctx}: length");
    // A device executor's functions may be up to DEVICE_ULPS from the correctly rounded value.
    let eps = if T::name() == "f32" {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let rel = if any_device() {
        rel.max(DEVICE_ULPS as f64 * eps)
    } else {
        rel
    };
    let mut bad = Vec::new();
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        // An oracle value beyond the type's range expects the type's infinity.
        let e = if T::name() == "f32" && e.is_finite() && (e as f32).is_infinite() {
            e as f32 as f64
        } else {
            e
        };
        if !close(a.to(), e, rel, abs) {
            bad.push((i, a.to(), e));
        }
    }
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(8)
            .map(|(i, a, e)| format!("[{i}] got {a:e} want {e:e} (diff {:e})", (a - e).abs()))
            .collect();
        panic!(
            "{ctx} ({}): {} of {} elements outside rel {rel:e} / abs {abs:e}:\n  {}",
            T::name(),
            bad.len(),
            actual.len(),
            shown.join("\n  ")
        );
    }
}

/// Float equality where NaN equals NaN and -0.0 equals 0.0.
pub fn same_value(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// How far (in units in the last place) a device executor's float result may be from the CPU's
/// where the two CPU tiers agree exactly because they share one libm: OpenCL's full-profile
/// accuracy bounds for the functions arrayflow uses reach 16 ulp (`pow`, `erf`), and WGSL's are
/// and the WGSL library's pow reaches about 20 (see README, "Accuracy on GPU executors").
pub const DEVICE_ULPS: u64 = 32;

/// Whether comparison mode is on for this process (`ARRAYFLOW_COMPARE`, as CI's comparison stage
/// sets it): every op is interpreted again, so tests that walk many shapes walk fewer.
pub fn comparison_mode() -> bool {
    std::env::var("ARRAYFLOW_COMPARE").is_ok_and(|v| !v.is_empty() && v != "off")
}

/// Whether kernels run on one device executor (OpenCL or wgpu) in this process. False with
/// several executors live (`ARRAYFLOW_DEVICE=all`): programs then go where placement says, so
/// tests that assert a kernel ran on "the device" have no single device to ask.
pub fn on_device() -> bool {
    arrayflow::Runtime::backend() != arrayflow::Backend::Cpu && !several_devices()
}

/// The backend of the one device executor kernels go to, for assertions about where work ran;
/// `Backend::Cpu` with no device, and with several live (`ARRAYFLOW_DEVICE=all`), where placement
/// decides and there is no single device to ask (values are still checked everywhere).
pub fn the_device() -> arrayflow::Backend {
    if several_devices() {
        arrayflow::Backend::Cpu
    } else {
        arrayflow::Runtime::backend()
    }
}

/// Whether any device executor is live (one, or several with `ARRAYFLOW_DEVICE=all`): work may
/// run off the CPU executor, so values follow a device's arithmetic (tolerances, not the CPU's
/// bits), and each new shape may compile a device program (tests walk fewer shapes).
pub fn any_device() -> bool {
    arrayflow::Runtime::live_devices().len() > 1
}

/// Whether more than one device executor runs (`ARRAYFLOW_DEVICE=all` or a list).
pub fn several_devices() -> bool {
    arrayflow::Runtime::live_devices().len() > 2
}

/// Whether f32 sums and products may accumulate in f32 (on a wgpu executor: WGSL has no f64)
/// rather than in f64 (the CPU, and OpenCL devices with f64).
pub fn f32_sums_in_f32() -> bool {
    arrayflow::Runtime::live_devices()
        .iter()
        .any(|d| d.backend() == arrayflow::Backend::Wgpu)
}

/// Units in the last place between two values of the same float type (`f32` when `single`).
pub fn ulps_apart(a: f64, b: f64, single: bool) -> u64 {
    if same_value(a, b) {
        return 0;
    }
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
        return u64::MAX;
    }
    let key = |x: f64| -> i64 {
        if single {
            let i = (x as f32).to_bits() as i32 as i64;
            if i < 0 { i32::MIN as i64 - i } else { i }
        } else {
            let i = x.to_bits() as i64;
            if i < 0 { i64::MIN - i } else { i }
        }
    };
    key(a).abs_diff(key(b))
}

/// Equal on the CPU executor; within [`DEVICE_ULPS`] on a device executor.
pub fn same_on_executor(a: f64, b: f64, single: bool) -> bool {
    same_value(a, b)
        || (any_device() && (ulps_apart(a, b, single) <= DEVICE_ULPS || flushed(a, b, single)))
}

/// Whether a device may have flushed an f32 subnormal to zero here: GPUs (NVIDIA's Vulkan and
/// OpenCL drivers among them) treat f32 subnormals as zero, so an element whose expected or
/// computed value is subnormal is not compared on a device executor (README, "Accuracy on GPU
/// executors").
pub fn flushed(actual: f64, expected: f64, single: bool) -> bool {
    let sub = |x: f64| x != 0.0 && x.abs() < f32::MIN_POSITIVE as f64;
    single && any_device() && (sub(actual) || sub(expected))
}

/// Exact comparison of float results, NaN equal to NaN (zero signs ignored); within
/// [`DEVICE_ULPS`] when a device executor computed them.
#[track_caller]
pub fn assert_exact_f<T: TestFloat>(actual: &[T], expected: &[T], ctx: &str) {
    assert_eq!(actual.len(), expected.len(), "{ctx}: length");
    let single = T::name() == "f32";
    let bad: Vec<String> = actual
        .iter()
        .zip(expected)
        .enumerate()
        .filter(|(_, (a, e))| !same_on_executor(a.to(), e.to(), single))
        .take(8)
        .map(|(i, (a, e))| format!("[{i}] got {a:?} want {e:?}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{ctx} ({}): exact mismatch:\n  {}",
        T::name(),
        bad.join("\n  ")
    );
}

/// Exact bitwise comparison of float results: zero signs must match, any NaN matches any NaN.
#[track_caller]
pub fn assert_bits_f<T: TestFloat>(actual: &[T], expected: &[T], ctx: &str) {
    assert_eq!(actual.len(), expected.len(), "{ctx}: length");
    let bad: Vec<String> = actual
        .iter()
        .zip(expected)
        .enumerate()
        .filter(|(_, (a, e))| {
            let (a, e) = (a.to(), e.to());
            !((a.is_nan() && e.is_nan())
                || (a == e && a.is_sign_negative() == e.is_sign_negative())
                || flushed(a, e, T::name() == "f32"))
        })
        .take(8)
        .map(|(i, (a, e))| format!("[{i}] got {a:?} want {e:?}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{ctx} ({}): bitwise mismatch:\n  {}",
        T::name(),
        bad.join("\n  ")
    );
}

/// Exact comparison for integers and bools (and anything `PartialEq`).
#[track_caller]
pub fn assert_same<T: PartialEq + Debug>(actual: &[T], expected: &[T], ctx: &str) {
    assert_eq!(actual.len(), expected.len(), "{ctx}: length");
    let bad: Vec<String> = actual
        .iter()
        .zip(expected)
        .enumerate()
        .filter(|(_, (a, e))| a != e)
        .take(8)
        .map(|(i, (a, e))| format!("[{i}] got {a:?} want {e:?}"))
        .collect();
    assert!(bad.is_empty(), "{ctx}: mismatch:\n  {}", bad.join("\n  "));
}

// ---------------------------------------------------------------------------------------------
// Shape oracles (row-major).

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

pub fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        if shape[k] > 0 {
            idx[k] = lin % shape[k];
            lin /= shape[k];
        }
    }
    idx
}

pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// NumPy broadcast of two shapes (panics if they do not broadcast).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (da, db) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => panic!("shapes {a:?} and {b:?} do not broadcast"),
            }
        })
        .collect()
}

/// The linear index in an input of `in_shape` read at output index `out_idx` under broadcasting.
pub fn broadcast_src(out_idx: &[usize], in_shape: &[usize]) -> usize {
    let lead = out_idx.len() - in_shape.len();
    let idx: Vec<usize> = in_shape
        .iter()
        .enumerate()
        .map(|(j, &d)| if d == 1 { 0 } else { out_idx[j + lead] })
        .collect();
    ravel(&idx, in_shape)
}

/// Element-wise oracle of two broadcast inputs.
pub fn bcast2<A: Copy, B: Copy, R>(
    a: &[A],
    sa: &[usize],
    b: &[B],
    sb: &[usize],
    f: impl Fn(A, B) -> R,
) -> (Vec<usize>, Vec<R>) {
    let out = broadcast_shape(sa, sb);
    let v = (0..numel(&out))
        .map(|l| {
            let idx = unravel(l, &out);
            f(a[broadcast_src(&idx, sa)], b[broadcast_src(&idx, sb)])
        })
        .collect();
    (out, v)
}

/// Reduction oracle over `axes`: folds `f(acc, k, x)` where `k` is the row-major position of the
/// element within the reduced extent. Returns the kept shape and one accumulator per output.
pub fn reduce_oracle<T: Copy, A: Clone>(
    data: &[T],
    shape: &[usize],
    axes: &[usize],
    init: A,
    f: impl Fn(A, usize, T) -> A,
) -> (Vec<usize>, Vec<A>) {
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let red: Vec<usize> = (0..shape.len()).filter(|d| axes.contains(d)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let red_shape: Vec<usize> = red.iter().map(|&d| shape[d]).collect();
    let mut acc = vec![init; numel(&out_shape)];
    for (lin, &x) in data.iter().enumerate() {
        let idx = unravel(lin, shape);
        let o: Vec<usize> = kept.iter().map(|&d| idx[d]).collect();
        let k: Vec<usize> = red.iter().map(|&d| idx[d]).collect();
        let oi = ravel(&o, &out_shape);
        acc[oi] = f(acc[oi].clone(), ravel(&k, &red_shape), x);
    }
    (out_shape, acc)
}

/// Permutation oracle: output axis `i` is input axis `perm[i]`.
pub fn permute_oracle<T: Copy>(
    data: &[T],
    shape: &[usize],
    perm: &[usize],
) -> (Vec<usize>, Vec<T>) {
    let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let v = (0..numel(&out))
        .map(|l| {
            let oi = unravel(l, &out);
            let mut ii = vec![0; shape.len()];
            for (i, &p) in perm.iter().enumerate() {
                ii[p] = oi[i];
            }
            data[ravel(&ii, shape)]
        })
        .collect();
    (out, v)
}

/// Python slice oracle for one axis of length `n`: the selected indices.
pub fn slice_indices(
    n: usize,
    start: Option<isize>,
    end: Option<isize>,
    step: isize,
) -> Vec<usize> {
    assert!(step != 0);
    let n = n as isize;
    let mut out = Vec::new();
    if step > 0 {
        let norm = |v: isize| if v < 0 { (v + n).max(0) } else { v.min(n) };
        let b = start.map_or(0, norm);
        let e = end.map_or(n, norm);
        let mut i = b;
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else {
        let norm = |v: isize| if v < 0 { (v + n).max(-1) } else { v.min(n - 1) };
        let b = start.map_or(n - 1, norm);
        let e = end.map_or(-1, norm);
        let mut i = b;
        while i > e {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

/// Multi-axis slice oracle from per-axis index lists (axes beyond the list are kept whole).
pub fn slice_oracle<T: Copy>(
    data: &[T],
    shape: &[usize],
    sel: &[Vec<usize>],
) -> (Vec<usize>, Vec<T>) {
    let sel: Vec<Vec<usize>> = (0..shape.len())
        .map(|d| {
            sel.get(d)
                .cloned()
                .unwrap_or_else(|| (0..shape[d]).collect())
        })
        .collect();
    let out: Vec<usize> = sel.iter().map(|s| s.len()).collect();
    let v = (0..numel(&out))
        .map(|l| {
            let oi = unravel(l, &out);
            let ii: Vec<usize> = oi.iter().enumerate().map(|(d, &i)| sel[d][i]).collect();
            data[ravel(&ii, shape)]
        })
        .collect();
    (out, v)
}

/// Matrix product oracle in f64 plus, per element, `sum |a_ik * b_kj|` for the error bound.
pub fn matmul_oracle(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut g) = (0.0, 0.0);
            for p in 0..k {
                s += a[i * k + p] * b[p * n + j];
                g += (a[i * k + p] * b[p * n + j]).abs();
            }
            c[i * n + j] = s;
            mag[i * n + j] = g;
        }
    }
    (c, mag)
}

/// Where a trap was found: on a device the device named the element itself (`Trap::device`)
/// after running the kernel, and nothing of the launch fell back to the CPU unless
/// `whole_rerun`; with the CPU executor alone, the CPU named it; with several devices live,
/// placement picked who computed it.
#[track_caller]
pub fn trap_found_where_computed(
    t: &arrayflow::Trap,
    before: &arrayflow::Stats,
    whole_rerun: bool,
) {
    if on_device() {
        let d = arrayflow::Runtime::stats().device.since(&before.device);
        assert!(t.device, "the device did not name the element: {t}");
        assert!(d.kernels >= 1, "{d:?}");
        if !whole_rerun {
            assert_eq!(d.fallbacks, 0, "{d:?}");
        }
    } else if !any_device() {
        assert!(!t.device, "{t}");
    }
}

/// Under one device executor (`ARRAYFLOW_DEVICE=opencl` or `wgpu`): the work since `before`
/// ran its kernels on the device and none on the CPU in its place (no fallback to the tile VM),
/// so what those kernels computed (a fault planted by `arrayflow::debug::inject_fault`) came
/// from the device's renderer. Nothing to check on the CPU or with several devices.
pub fn kernels_ran_on_the_device(before: &arrayflow::Stats) {
    if on_device() {
        let d = arrayflow::Runtime::stats().device.since(&before.device);
        assert!(
            d.tasks >= 1 && d.kernels >= 1,
            "nothing ran on the device: {d:?}"
        );
        assert_eq!(
            d.fallbacks, 0,
            "the CPU ran a kernel in the device's place: {d:?}"
        );
    }
}

/// Starts the runtime on every device (`DeviceChoice::All`), once per process: for test binaries
/// that spread work over several executors themselves, before anything else uses the runtime.
pub fn start_on_every_device() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        arrayflow::Runtime::builder()
            .device(arrayflow::DeviceChoice::All)
            .start()
            .expect("this test binary starts the runtime first");
    });
}

/// How a checked launch of `n` elements is cut into passes of about `pass` elements (whole tiles
/// of the configured tile, the same cut on every executor): elements per pass, and passes.
pub fn pass_cut(n: usize, pass: usize) -> (usize, usize) {
    let tile = arrayflow::Runtime::config().tile.min(n);
    let per = pass.div_ceil(tile) * tile;
    (per, n.div_ceil(per))
}
