//! Convolution and correlation (`arrayflow::signal`) on the executor `ARRAYFLOW_DEVICE` picks,
//! against a direct loop in f64 written here, in the three modes, in 1-D and 2-D, batched with
//! one shared filter or one per batch entry, real and complex, by both methods:
//!
//! - direct results within `2 T eps` of the sum of the `T` terms' sizes (a sum's rounding);
//! - FFT results within `8 log2(L) eps |x|_2 |k|_2` of each batch entry (`L` the transform's
//!   points), the rounding of a transform pair relative to its operands' norms.
//!
//! On a device executor every real f32 direct call runs the device kernel (`Runtime::stats()`:
//! device kernels and no CPU fallback). Bad shapes give errors naming this file's line.

mod common;

use arrayflow::signal::{self, Convolvable, Method, Mode};
use arrayflow::{Array, Backend, Complex, Runtime};
use common::*;
use parking_lot::Mutex;
use rand::RngExt;
use rand::rngs::StdRng;

/// Stats are process-wide: the tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const MODES: [Mode; 3] = [Mode::Full, Mode::Same, Mode::Valid];

/// The oracle in f64 on complex values: `x [batch, n0, n1]`, `k [kb, m0, m1]` (`kb` 1 or
/// `batch`); returns the outputs `[batch, o0, o1]` and each output's sum of term sizes.
fn oracle(
    x: &[Complex<f64>],
    k: &[Complex<f64>],
    batch: usize,
    n: [usize; 2],
    m: [usize; 2],
    mode: Mode,
) -> (Vec<Complex<f64>>, Vec<f64>, [usize; 2]) {
    let ext = |n: usize, m: usize| match mode {
        Mode::Full => (n + m - 1, 0),
        Mode::Same => (n, (m - 1) / 2),
        Mode::Valid => (n - m + 1, m - 1),
    };
    let (o0, off0) = ext(n[0], m[0]);
    let (o1, off1) = ext(n[1], m[1]);
    let per = k.len() > m[0] * m[1];
    let (mut y, mut s) = (Vec::new(), Vec::new());
    for b in 0..batch {
        let kb = if per { b * m[0] * m[1] } else { 0 };
        for i0 in 0..o0 {
            for i1 in 0..o1 {
                let (mut acc, mut size) = (Complex::new(0.0, 0.0), 0.0);
                for p0 in 0..m[0] {
                    for p1 in 0..m[1] {
                        let (s0, s1) = (
                            (i0 + off0) as isize - p0 as isize,
                            (i1 + off1) as isize - p1 as isize,
                        );
                        if s0 < 0 || s1 < 0 || s0 >= n[0] as isize || s1 >= n[1] as isize {
                            continue;
                        }
                        let xv = x[(b * n[0] + s0 as usize) * n[1] + s1 as usize];
                        let kv = k[kb + p0 * m[1] + p1];
                        acc += xv * kv;
                        size += xv.norm() * kv.norm();
                    }
                }
                y.push(acc);
                s.push(size);
            }
        }
    }
    (y, s, [o0, o1])
}

/// The element types under test, as complex f64 for the oracle.
trait El: Convolvable + Copy {
    const EPS: f64;
    const COMPLEX: bool;
    fn make(re: f64, im: f64) -> Self;
    fn wide(self) -> Complex<f64>;
}
impl El for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    const COMPLEX: bool = false;
    fn make(re: f64, _: f64) -> Self {
        re as f32
    }
    fn wide(self) -> Complex<f64> {
        Complex::new(self as f64, 0.0)
    }
}
impl El for f64 {
    const EPS: f64 = f64::EPSILON;
    const COMPLEX: bool = false;
    fn make(re: f64, _: f64) -> Self {
        re
    }
    fn wide(self) -> Complex<f64> {
        Complex::new(self, 0.0)
    }
}
impl El for Complex<f32> {
    const EPS: f64 = f32::EPSILON as f64;
    const COMPLEX: bool = true;
    fn make(re: f64, im: f64) -> Self {
        Complex::new(re as f32, im as f32)
    }
    fn wide(self) -> Complex<f64> {
        Complex::new(self.re as f64, self.im as f64)
    }
}
impl El for Complex<f64> {
    const EPS: f64 = f64::EPSILON;
    const COMPLEX: bool = true;
    fn make(re: f64, im: f64) -> Self {
        Complex::new(re, im)
    }
    fn wide(self) -> Complex<f64> {
        self
    }
}

fn values<T: El>(r: &mut StdRng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::make(r.random_range(-1.0..1.0), r.random_range(-1.0..1.0)))
        .collect()
}

/// Whether a direct call of `T` must have run the device kernel here.
fn device_kernel<T: El>() -> bool {
    !T::COMPLEX && std::any::type_name::<T>() == "f32" && common::the_device() != Backend::Cpu
}

/// One call checked against the oracle: `lead` batch axes, convolved lengths `n` and `m`
/// (`rank` of them), the filter shared or per batch entry.
#[allow(clippy::too_many_arguments)]
fn check<T: El>(
    r: &mut StdRng,
    lead: &[usize],
    n: &[usize],
    m: &[usize],
    per_batch: bool,
    mode: Mode,
    method: Method,
    correlate: bool,
) {
    let rank = n.len();
    let batch: usize = lead.iter().product();
    let (n2, m2) = if rank == 1 {
        ([1, n[0]], [1, m[0]])
    } else {
        ([n[0], n[1]], [m[0], m[1]])
    };
    let xs: Vec<usize> = lead.iter().chain(n).copied().collect();
    let ks: Vec<usize> = if per_batch {
        lead.iter().chain(m).copied().collect()
    } else {
        m.to_vec()
    };
    let xv: Vec<T> = values(r, xs.iter().product());
    let kv: Vec<T> = values(r, ks.iter().product());
    let (x, k) = (
        Array::from_vec(xv.clone(), &xs),
        Array::from_vec(kv.clone(), &ks),
    );
    let ctx = format!(
        "{} {lead:?} x {n:?} * {m:?} per_batch {per_batch} {mode:?} {method:?} correlate {correlate}",
        std::any::type_name::<T>()
    );
    // The oracle's filter: correlation is convolution with the filter reversed and conjugated.
    let taps = m2[0] * m2[1];
    let kw: Vec<Complex<f64>> = kv
        .chunks(taps)
        .flat_map(|f| {
            let mut f: Vec<Complex<f64>> = f.iter().map(|v| v.wide()).collect();
            if correlate {
                f.reverse();
                f.iter_mut().for_each(|v| *v = v.conj());
            }
            f
        })
        .collect();
    let xw: Vec<Complex<f64>> = xv.iter().map(|v| v.wide()).collect();
    let (want, size, o) = oracle(&xw, &kw, batch, n2, m2, mode);
    let direct = method == Method::Direct
        || (method == Method::Auto && signal::Method::auto_for(m) == Method::Direct);
    Runtime::execute();
    let before = Runtime::stats();
    let y = match (rank, correlate) {
        (1, false) => signal::convolve(&x, &k, mode, method),
        (1, true) => signal::correlate(&x, &k, mode, method),
        (_, false) => signal::convolve2d(&x, &k, mode, method),
        (_, true) => signal::correlate2d(&x, &k, mode, method),
    };
    let mut shape: Vec<usize> = lead.to_vec();
    shape.extend_from_slice(if rank == 1 { &o[1..] } else { &o[..] });
    assert_eq!(y.shape(), &shape[..], "{ctx}: shape");
    let got = read(&y);
    let d = Runtime::stats().since(&before);
    if direct && device_kernel::<T>() {
        assert_eq!(d.device.fallbacks, 0, "{ctx}: ran on the CPU: {d:?}");
        assert!(d.device.kernels > 0, "{ctx}: no device kernel ran: {d:?}");
    }
    let per_out = o[0] * o[1];
    let points: f64 = (0..2).map(|a| (n2[a] + m2[a] - 1) as f64).product();
    let norm = |v: &[Complex<f64>]| v.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let b = i / per_out.max(1);
        let tol = if direct {
            2.0 * taps as f64 * T::EPS * size[i] + 1e-300
        } else {
            let xb = &xw[b * n2[0] * n2[1]..(b + 1) * n2[0] * n2[1]];
            let kb = if per_batch {
                &kw[b * taps..(b + 1) * taps]
            } else {
                &kw[..taps]
            };
            8.0 * points.log2().max(1.0) * T::EPS * norm(xb) * norm(kb)
        };
        let err = (g.wide() - w).norm();
        assert!(
            err <= tol,
            "{ctx}: output {i}: {:?} against {w:?} (error {err:e}, allowed {tol:e})",
            g.wide()
        );
    }
}

/// Whether to walk fewer shapes: on a device executor every new shape compiles a program
/// (about a second each on PoCL).
fn few() -> bool {
    any_device()
}

/// The shapes walked: all of them, or on a device every other one and the last.
fn sizes<S>(all: &[S]) -> Vec<&S> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| !few() || i % 2 == 1 || *i == all.len() - 1)
        .map(|(_, s)| s)
        .collect()
}

fn one_d<T: El>(method: Method, seed: u64) {
    let _g = SERIAL.lock();
    let r = &mut rng(seed);
    let all: &[(usize, usize)] = &[(1, 1), (5, 3), (3, 5), (16, 16), (100, 7), (257, 130)];
    for &(n, m) in sizes(all) {
        for mode in MODES {
            if mode == Mode::Valid && m > n {
                continue;
            }
            check::<T>(r, &[], &[n], &[m], false, mode, method, false);
            check::<T>(r, &[2, 2], &[n], &[m], true, mode, method, true);
            if !few() {
                check::<T>(r, &[], &[n], &[m], false, mode, method, true);
                check::<T>(r, &[3], &[n], &[m], false, mode, method, false);
            }
        }
    }
}

fn two_d<T: El>(method: Method, seed: u64) {
    let _g = SERIAL.lock();
    let r = &mut rng(seed);
    let all: &[([usize; 2], [usize; 2])] = &[
        ([1, 1], [1, 1]),
        ([8, 9], [3, 3]),
        ([6, 5], [2, 7]),
        ([30, 17], [7, 7]),
        ([20, 24], [19, 18]),
        // Large enough for whole tiles inside the input (the GPU kernels' local-memory path).
        ([40, 80], [3, 4]),
    ];
    for &(n, m) in sizes(all) {
        for mode in MODES {
            if mode == Mode::Valid && (m[0] > n[0] || m[1] > n[1]) {
                continue;
            }
            check::<T>(r, &[], &n, &m, false, mode, method, true);
            check::<T>(r, &[2], &n, &m, true, mode, method, false);
            if !few() {
                check::<T>(r, &[], &n, &m, false, mode, method, false);
            }
        }
    }
}

#[test]
fn direct_1d_matches_the_f64_loop() {
    one_d::<f32>(Method::Direct, 1);
    one_d::<f64>(Method::Direct, 2);
}

#[test]
fn fft_1d_matches_the_f64_loop() {
    one_d::<f32>(Method::Fft, 3);
    one_d::<f64>(Method::Fft, 4);
    one_d::<f32>(Method::Auto, 5);
}

#[test]
fn direct_2d_matches_the_f64_loop() {
    two_d::<f32>(Method::Direct, 6);
    two_d::<f64>(Method::Direct, 7);
}

#[test]
fn fft_2d_matches_the_f64_loop() {
    two_d::<f32>(Method::Fft, 8);
    two_d::<f64>(Method::Auto, 9);
}

#[test]
fn complex_convolutions_match_the_f64_loop() {
    one_d::<Complex<f32>>(Method::Direct, 10);
    one_d::<Complex<f64>>(Method::Fft, 11);
    two_d::<Complex<f32>>(Method::Fft, 12);
    two_d::<Complex<f64>>(Method::Direct, 13);
}

#[test]
fn a_long_signal_matches_the_f64_loop() {
    let _g = SERIAL.lock();
    let r = &mut rng(14);
    let n = if comparison_mode() { 20_000 } else { 100_000 };
    for mode in MODES {
        check::<f32>(r, &[], &[n], &[31], false, mode, Method::Direct, false);
    }
    check::<f32>(r, &[], &[n], &[300], false, Mode::Same, Method::Auto, false);
}

#[test]
fn the_auto_method_follows_the_stated_thresholds() {
    assert_eq!(Method::auto_for(&[128]), Method::Direct);
    assert_eq!(Method::auto_for(&[129]), Method::Fft);
    assert_eq!(Method::auto_for(&[17, 17]), Method::Direct);
    assert_eq!(Method::auto_for(&[3, 18]), Method::Fft);
}

#[test]
fn bad_shapes_name_the_callers_line() {
    let x = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    let long = Array::from_vec(vec![1.0f32; 4], &[4]);
    let empty = Array::from_vec(Vec::<f32>::new(), &[0]);
    let other_batch = Array::from_vec(vec![1.0f32; 9], &[3, 3]);
    let flat = Array::from_vec(vec![1.0f32; 3], &[3]);
    let cases: Vec<(arrayflow::Error, u32, &str)> = vec![
        (
            signal::try_convolve(&x, &long, Mode::Valid, Method::Direct).unwrap_err(),
            line!() - 1,
            "valid",
        ),
        (
            signal::try_convolve(&x, &empty, Mode::Full, Method::Fft).unwrap_err(),
            line!() - 1,
            "empty",
        ),
        (
            signal::try_convolve(&x, &other_batch, Mode::Full, Method::Direct).unwrap_err(),
            line!() - 1,
            "leading axes",
        ),
        (
            signal::try_convolve2d(&flat, &flat, Mode::Full, Method::Direct).unwrap_err(),
            line!() - 1,
            "at least 2 axes",
        ),
        (
            signal::try_correlate2d(&x, &flat, Mode::Full, Method::Auto).unwrap_err(),
            line!() - 1,
            "at least 2 axes",
        ),
    ];
    for (e, line, what) in cases {
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("convolve.rs:{line}")),
            "{what}: the error names another line: {msg}"
        );
        assert!(msg.contains(what), "{what}: {msg}");
    }
}
