//! Fourier transforms (`arrayflow::fft`) against oracles computed here in f64 on seeded random
//! data: a direct O(n^2) DFT (`sum_j x_j exp(-+2 pi i jk / n)`, twiddles from exact integer
//! angles, compensated sums) for lines of up to 512 points; beyond, rustfft's f64 plans (from a
//! planner of this file's own) for the whole line, and 16 bins of each line by direct sums (an
//! oracle independent of rustfft, which the CPU executor also runs); NumPy's
//! conventions for `n`, `norm`, the real transforms, `fftfreq` and `fftshift` written out here.
//!
//! Tolerance: each output line `y` of a transform of length `n` against the oracle's `w`
//! satisfies `||y - w||_2 <= C * max(1, log2 n) * eps * ||w||_2` (2-norms over the line, `eps`
//! of the element type) with `C = 4` (a transform rounds by about `log2(n) eps` relative to the
//! line's norm; the inputs themselves are exact in the oracle, and `C` covers the scaling and
//! the final rounding). Every length class: powers of two, mixed radices (3 5 7 11 and 2^k
//! factors), primes (7, 13, 997, 65537, for Rader's and Bluestein's algorithms), on the
//! contiguous axis and on strided ones, batched, f32 and f64.
//!
//! On a GPU executor (`ARRAYFLOW_DEVICE=opencl|wgpu`) every transform whose length the generated
//! Stockham kernels take (`intrinsics/fft/gpu.rs`: factors 2, 3, 5, 7, one local-memory pass or
//! global passes; a larger prime factor by Bluestein's algorithm, `intrinsics/fft/bluestein.rs`)
//! is checked to have run there (`Runtime::stats()`: a device kernel, no CPU fallback);
//! `Complex<f64>` on wgpu runs on the CPU executor. Stats are process-wide: the tests run one
//! at a time.

mod common;

use arrayflow::fft::{self, FftInput, Norm};
use arrayflow::{Array, Complex, ComplexFloat, ErrorKind, Site};
use common::*;
use rand::rngs::StdRng;

type Z = Complex<f64>;

/// The constant `C` of the tolerance (see the file's comment).
const C: f64 = 4.0;

// ---------------------------------------------------------------------------------------------
// The oracle.

/// Lines up to this long are transformed by the direct sum.
const DIRECT: usize = 512;

/// The unscaled DFT of `x` in f64: forward `sum_j x_j exp(-2 pi i jk / n)`, or the inverse.
fn dft(x: &[Z], inverse: bool) -> Vec<Z> {
    let n = x.len();
    if n > DIRECT {
        use std::sync::{LazyLock, Mutex};
        static PLANNER: LazyLock<Mutex<rustfft::FftPlanner<f64>>> =
            LazyLock::new(|| Mutex::new(rustfft::FftPlanner::new()));
        let plan = {
            let mut p = PLANNER.lock().unwrap();
            if inverse {
                p.plan_fft_inverse(n)
            } else {
                p.plan_fft_forward(n)
            }
        };
        let mut y = x.to_vec();
        plan.process(&mut y);
        return y;
    }
    let w = twiddles(n, inverse);
    (0..n).map(|k| bin(x, &w, k)).collect()
}

/// `sum_j x_j w[jk mod n]`, each part summed with Neumaier's compensation (the oracle's own
/// error stays near one rounding of each term, below the transforms' `log2(n) eps`).
fn bin(x: &[Z], w: &[Z], k: usize) -> Z {
    let n = x.len();
    let add = |(s, c): (f64, f64), v: f64| {
        let t = s + v;
        let d = if s.abs() >= v.abs() {
            (s - t) + v
        } else {
            (v - t) + s
        };
        (t, c + d)
    };
    let (mut re, mut im) = ((0.0, 0.0), (0.0, 0.0));
    for (j, &v) in x.iter().enumerate() {
        let p = v * w[j * k % n];
        re = add(re, p.re);
        im = add(im, p.im);
    }
    Z::new(re.0 + re.1, im.0 + im.1)
}

/// The twiddles `exp(-+2 pi i t / n)` (`+` for the inverse), each angle from an exact `t < n`.
fn twiddles(n: usize, inverse: bool) -> Vec<Z> {
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n)
        .map(|t| {
            let a = sign * 2.0 * std::f64::consts::PI * t as f64 / n as f64;
            Z::new(a.cos(), a.sin())
        })
        .collect()
}

/// Checks 16 bins of `got`, the transform of `x` scaled by `s`, against direct sums: an oracle
/// independent of rustfft for lines too long for the whole direct DFT. Each element's error is
/// bounded by the line's, `C max(1, log2 n) eps` times the exact line's 2-norm
/// (`s sqrt(n) ||x||_2`).
#[track_caller]
fn assert_bins(got: &[Z], x: &[Z], inverse: bool, s: f64, eps: f64, what: &str) {
    let n = x.len();
    let w = twiddles(n, inverse);
    let line = s * (n as f64).sqrt() * norm2(x);
    let allowed = C * (n as f64).log2().max(1.0) * eps * line + 1e-300;
    for i in 0..16 {
        let k = (i * 7919 + i * i * 104_729) % n;
        if k >= got.len() {
            continue;
        }
        let err = (got[k] - bin(x, &w, k) * s).norm();
        assert!(
            err <= allowed,
            "{what}: bin {k} against its direct sum: error {err:e} > {allowed:e}"
        );
    }
}

/// NumPy's factor for a transform of length `n`.
fn scale(norm: Norm, n: usize, inverse: bool) -> f64 {
    match (norm, inverse) {
        (Norm::Backward, false) | (Norm::Forward, true) => 1.0,
        (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        _ => 1.0 / n as f64,
    }
}

/// `x` cropped or padded with zeros to `n`.
fn fit(x: &[Z], n: usize) -> Vec<Z> {
    (0..n)
        .map(|j| x.get(j).copied().unwrap_or_default())
        .collect()
}

/// NumPy's `fft` / `ifft` of one line with length `n` and `norm`.
fn oracle_c2c(x: &[Z], n: usize, inverse: bool, norm: Norm) -> Vec<Z> {
    let s = scale(norm, n, inverse);
    dft(&fit(x, n), inverse)
        .into_iter()
        .map(|z| z * s)
        .collect()
}

/// NumPy's `rfft` of one (real) line.
fn oracle_r2c(x: &[Z], n: usize, norm: Norm) -> Vec<Z> {
    let mut y = oracle_c2c(x, n, false, norm);
    y.truncate(n / 2 + 1);
    y
}

/// NumPy's `irfft` of one line of coefficients to `n` reals (as complex with zero imaginary
/// parts): the first `n / 2 + 1` coefficients, the imaginary parts of 0 and (even n) n / 2
/// dropped, mirrored into the Hermitian spectrum and inverted.
fn oracle_c2r(x: &[Z], n: usize, norm: Norm) -> Vec<Z> {
    let h = n / 2 + 1;
    let mut c = fit(x, h);
    c[0].im = 0.0;
    if n.is_multiple_of(2) {
        c[n / 2].im = 0.0;
    }
    let full: Vec<Z> = (0..n)
        .map(|k| if k < h { c[k] } else { c[n - k].conj() })
        .collect();
    let s = scale(norm, n, true);
    dft(&full, true)
        .into_iter()
        .map(|z| Z::new(z.re * s, 0.0))
        .collect()
}

/// Applies `f` to every line of `x` (of `shape`) along `axis`: the result and its shape.
fn along(
    x: &[Z],
    shape: &[usize],
    axis: usize,
    f: impl Fn(&[Z]) -> Vec<Z>,
) -> (Vec<Z>, Vec<usize>) {
    let pre: usize = shape[..axis].iter().product();
    let post: usize = shape[axis + 1..].iter().product();
    let m = shape[axis];
    let mut out_shape = shape.to_vec();
    let mut out = Vec::new();
    for p in 0..pre {
        for q in 0..post {
            let line: Vec<Z> = (0..m).map(|j| x[(p * m + j) * post + q]).collect();
            let y = f(&line);
            if out.is_empty() {
                out_shape[axis] = y.len();
                out = vec![Z::default(); pre * y.len() * post];
            }
            let l = y.len();
            for (k, v) in y.into_iter().enumerate() {
                out[(p * l + k) * post + q] = v;
            }
        }
    }
    (out, out_shape)
}

// ---------------------------------------------------------------------------------------------
// Precisions and comparisons.

/// f32 and f64 with their complex types and conversions to the oracle's f64.
trait Prec: TestFloat + FftInput<Complex = Self::C> {
    type C: ComplexFloat<Part = Self> + FftInput<Complex = Self::C>;
    fn cz(z: Z) -> Self::C;
    fn zc(c: Self::C) -> Z;
}
impl Prec for f32 {
    type C = Complex<f32>;
    fn cz(z: Z) -> Complex<f32> {
        Complex::new(z.re as f32, z.im as f32)
    }
    fn zc(c: Complex<f32>) -> Z {
        Z::new(c.re as f64, c.im as f64)
    }
}
impl Prec for f64 {
    type C = Complex<f64>;
    fn cz(z: Z) -> Z {
        z
    }
    fn zc(c: Z) -> Z {
        c
    }
}

/// Random complex values of precision `F` (parts in [-1, 1)), and the same values in f64.
fn rand_c<F: Prec>(r: &mut StdRng, n: usize) -> (Array<F::C>, Vec<Z>) {
    let re = rand_f64(r, 2 * n, -1.0, 1.0);
    let v: Vec<F::C> = (0..n)
        .map(|i| F::cz(Z::new(re[2 * i], re[2 * i + 1])))
        .collect();
    let z = v.iter().map(|&c| F::zc(c)).collect();
    (Array::from_vec(v, &[n]), z)
}

/// Random real values of precision `F` in [-1, 1), and the same values in f64 (as complex).
fn rand_r<F: Prec>(r: &mut StdRng, n: usize) -> (Array<F>, Vec<Z>) {
    let v: Vec<F> = conv(&rand_f64(r, n, -1.0, 1.0));
    let z = v.iter().map(|&x| Z::new(x.to(), 0.0)).collect();
    (Array::from_vec(v, &[n]), z)
}

#[track_caller]
fn read_c<F: Prec>(a: &Array<F::C>) -> Vec<Z> {
    read(a).into_iter().map(F::zc).collect()
}

#[track_caller]
fn read_r<F: Prec>(a: &Array<F>) -> Vec<Z> {
    read(a).into_iter().map(|x| Z::new(x.to(), 0.0)).collect()
}

fn norm2(v: &[Z]) -> f64 {
    v.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// Each line of `got` along `axis` (of `shape`) within `C max(1, log2 n) eps` of the oracle's
/// line in the 2-norm; the largest ratio of error to allowance is returned.
#[track_caller]
fn assert_lines(
    got: &[Z],
    want: &[Z],
    shape: &[usize],
    axis: usize,
    n: usize,
    eps: f64,
    what: &str,
) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    assert_eq!(got.len(), shape.iter().product::<usize>(), "{what}: shape");
    let pre: usize = shape[..axis].iter().product();
    let post: usize = shape[axis + 1..].iter().product();
    let m = shape[axis];
    let k = C * (n as f64).log2().max(1.0) * eps;
    let mut worst: f64 = 0.0;
    for p in 0..pre {
        for q in 0..post {
            let idx = |j: usize| (p * m + j) * post + q;
            let gl: Vec<Z> = (0..m).map(|j| got[idx(j)]).collect();
            let wl: Vec<Z> = (0..m).map(|j| want[idx(j)]).collect();
            let err = norm2(&gl.iter().zip(&wl).map(|(a, b)| a - b).collect::<Vec<_>>());
            let allowed = k * norm2(&wl) + 1e-300;
            assert!(
                err <= allowed,
                "{what}: line ({p}, {q}): error {err:e} > allowed {allowed:e} \
                 (C log2(n) eps ||want||, n = {n})"
            );
            worst = worst.max(err / allowed);
        }
    }
    worst
}

/// The lengths of every class: powers of two, mixed radices, primes.
const LENGTHS: [usize; 21] = [
    1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 105, 210, 840, 997, 1000, 1024, 2310, 4096, 6720, 65536, 65537,
];

// ---------------------------------------------------------------------------------------------
// One axis.

fn c2c_every_length<F: Prec>() {
    let mut r = rng(0xff7);
    let mut worst: f64 = 0.0;
    for &n in &LENGTHS {
        let (x, z) = rand_c::<F>(&mut r, n);
        for inverse in [false, true] {
            let y = if inverse {
                fft::ifft(&x, None, 0, Norm::Backward)
            } else {
                fft::fft(&x, None, 0, Norm::Backward)
            };
            assert_eq!(y.shape(), &[n]);
            let want = oracle_c2c(&z, n, inverse, Norm::Backward);
            let what = format!(
                "{} {} n={n}",
                F::name(),
                if inverse { "ifft" } else { "fft" }
            );
            let got = read_c::<F>(&y);
            worst = worst.max(assert_lines(&got, &want, &[n], 0, n, F::EPS, &what));
            if n > DIRECT {
                let s = scale(Norm::Backward, n, inverse);
                assert_bins(&got, &z, inverse, s, F::EPS, &what);
            }
        }
        // A real input is read as complex.
        let (xr, zr) = rand_r::<F>(&mut r, n);
        let y = fft::fft(&xr, None, 0, Norm::Backward);
        let want = oracle_c2c(&zr, n, false, Norm::Backward);
        let what = format!("{} fft of real n={n}", F::name());
        worst = worst.max(assert_lines(
            &read_c::<F>(&y),
            &want,
            &[n],
            0,
            n,
            F::EPS,
            &what,
        ));
    }
    if std::env::var("FFT_WORST").is_ok() {
        eprintln!("{} c2c: worst error / allowance {worst:.3}", F::name());
    }
}

#[test]
fn fft_and_ifft_of_every_length_class_match_the_oracle() {
    let _g = serial();
    c2c_every_length::<f32>();
    c2c_every_length::<f64>();
}

fn round_trip_and_parseval<F: Prec>() {
    let mut r = rng(0x9a5);
    for &n in &[1usize, 6, 64, 105, 997, 1024, 65537] {
        let (x, z) = rand_c::<F>(&mut r, n);
        // ifft(fft(x)) == x: two transforms' rounding.
        let back = fft::ifft(
            &fft::fft(&x, None, 0, Norm::Backward),
            None,
            0,
            Norm::Backward,
        );
        let what = format!("{} round trip n={n}", F::name());
        assert_lines(&read_c::<F>(&back), &z, &[n], 0, n, 2.0 * F::EPS, &what);
        // The same with the unitary scaling both ways.
        let back = fft::ifft(&fft::fft(&x, None, 0, Norm::Ortho), None, 0, Norm::Ortho);
        assert_lines(&read_c::<F>(&back), &z, &[n], 0, n, 2.0 * F::EPS, &what);
        // Parseval: sum |X_k|^2 = n sum |x_j|^2 (Backward), = sum |x_j|^2 (Ortho).
        let e_x: f64 = z.iter().map(|v| v.norm_sqr()).sum();
        for (norm, factor) in [(Norm::Backward, n as f64), (Norm::Ortho, 1.0)] {
            let y = read_c::<F>(&fft::fft(&x, None, 0, norm));
            let e_y: f64 = y.iter().map(|v| v.norm_sqr()).sum();
            let tol = 2.0 * C * (n as f64).log2().max(1.0) * F::EPS;
            assert!(
                (e_y / factor - e_x).abs() <= tol * e_x,
                "{} Parseval n={n} {norm:?}: {e_y} / {factor} vs {e_x}",
                F::name()
            );
        }
    }
}

#[test]
fn round_trips_and_parseval_hold() {
    let _g = serial();
    round_trip_and_parseval::<f32>();
    round_trip_and_parseval::<f64>();
}

fn real_transforms<F: Prec>() {
    let mut r = rng(0x7ea1);
    for &n in &[1usize, 2, 3, 8, 15, 64, 105, 997, 1000, 1024, 65536, 65537] {
        let (x, z) = rand_r::<F>(&mut r, n);
        let h = n / 2 + 1;
        let rf = fft::rfft(&x, None, 0, Norm::Backward);
        assert_eq!(rf.shape(), &[h], "rfft of {n}");
        let got = read_c::<F>(&rf);
        let what = format!("{} rfft n={n}", F::name());
        assert_lines(
            &got,
            &oracle_r2c(&z, n, Norm::Backward),
            &[h],
            0,
            n,
            F::EPS,
            &what,
        );
        if n > DIRECT {
            assert_bins(&got, &z, false, 1.0, F::EPS, &what);
        }
        // The full transform of the same data is Hermitian and starts with rfft's coefficients.
        let full = read_c::<F>(&fft::fft(&x, None, 0, Norm::Backward));
        let mirrored: Vec<Z> = (0..n).map(|k| full[(n - k) % n].conj()).collect();
        let what = format!("{} fft of real data is Hermitian, n={n}", F::name());
        assert_lines(&full, &mirrored, &[n], 0, n, 2.0 * F::EPS, &what);
        let what = format!("{} rfft vs fft's first half, n={n}", F::name());
        assert_lines(&got, &full[..h], &[h], 0, n, 2.0 * F::EPS, &what);
        // irfft inverts rfft given the length (odd lengths need it).
        let back = fft::irfft(&rf, Some(n), 0, Norm::Backward);
        assert_eq!(back.shape(), &[n]);
        let what = format!("{} irfft(rfft) n={n}", F::name());
        assert_lines(&read_r::<F>(&back), &z, &[n], 0, n, 2.0 * F::EPS, &what);
    }
}

#[test]
fn rfft_is_the_first_half_of_a_hermitian_fft_and_irfft_inverts_it() {
    let _g = serial();
    real_transforms::<f32>();
    real_transforms::<f64>();
}

fn irfft_of_any_coefficients<F: Prec>() {
    let mut r = rng(0x1ff);
    // m coefficients (imaginary parts of 0 and n/2 not zero: NumPy ignores them), to n reals:
    // the default n = 2 (m - 1), odd n, and n that crop or pad the coefficients.
    for &(m, n) in &[
        (2, None),
        (5, None),
        (5, Some(9)),
        (5, Some(4)),
        (5, Some(20)),
        (33, None),
        (499, Some(997)),
        (513, None),
        (1000, Some(1999)),
    ] {
        let (c, z) = rand_c::<F>(&mut r, m);
        let nn = n.unwrap_or(2 * (m - 1));
        let y = fft::irfft(&c, n, 0, Norm::Backward);
        assert_eq!(y.shape(), &[nn]);
        let what = format!("{} irfft m={m} n={nn}", F::name());
        // Relative to the spectrum's norm (the line's output norm can be far smaller when the
        // dropped imaginary parts dominate).
        let want = oracle_c2r(&z, nn, Norm::Backward);
        assert_lines(&read_r::<F>(&y), &want, &[nn], 0, nn, F::EPS, &what);
    }
}

#[test]
fn irfft_follows_numpy_for_any_coefficients() {
    let _g = serial();
    irfft_of_any_coefficients::<f32>();
    irfft_of_any_coefficients::<f64>();
}

fn norms_and_lengths<F: Prec>() {
    let mut r = rng(0x40);
    for norm in [Norm::Backward, Norm::Ortho, Norm::Forward] {
        // n = None, n that pads, n that crops.
        for (m, n) in [
            (12usize, None),
            (12, Some(20)),
            (12, Some(7)),
            (997, Some(1024)),
        ] {
            let nn = n.unwrap_or(m);
            let (x, z) = rand_c::<F>(&mut r, m);
            for inverse in [false, true] {
                let y = if inverse {
                    fft::ifft(&x, n, 0, norm)
                } else {
                    fft::fft(&x, n, 0, norm)
                };
                let want = oracle_c2c(&z, nn, inverse, norm);
                let what = format!("{} {norm:?} inverse={inverse} m={m} n={nn}", F::name());
                assert_lines(&read_c::<F>(&y), &want, &[nn], 0, nn, F::EPS, &what);
            }
            let (xr, zr) = rand_r::<F>(&mut r, m);
            let y = fft::rfft(&xr, n, 0, norm);
            let what = format!("{} rfft {norm:?} m={m} n={nn}", F::name());
            let want = oracle_r2c(&zr, nn, norm);
            assert_lines(&read_c::<F>(&y), &want, &[nn / 2 + 1], 0, nn, F::EPS, &what);
            let (xc, zc) = rand_c::<F>(&mut r, m);
            let y = fft::irfft(&xc, n, 0, norm);
            let nn = n.unwrap_or(2 * (m - 1)); // irfft's default
            let what = format!("{} irfft {norm:?} m={m} n={nn}", F::name());
            let want = oracle_c2r(&zc, nn, norm);
            assert_lines(&read_r::<F>(&y), &want, &[nn], 0, nn, F::EPS, &what);
        }
    }
    // The modes' factors exactly, on an impulse: fft of [1, 0, 0, 0] is 1 scaled.
    let one = Array::from_vec(
        vec![
            F::cz(Z::new(1.0, 0.0)),
            F::cz(Z::default()),
            F::cz(Z::default()),
            F::cz(Z::default()),
        ],
        &[4],
    );
    for (norm, f, i) in [
        (Norm::Backward, 1.0, 0.25),
        (Norm::Ortho, 0.5, 0.5),
        (Norm::Forward, 0.25, 1.0),
    ] {
        let y = read_c::<F>(&fft::fft(&one, None, 0, norm));
        assert!(y.iter().all(|&v| v == Z::new(f, 0.0)), "{norm:?}: {y:?}");
        let y = read_c::<F>(&fft::ifft(&one, None, 0, norm));
        assert!(y.iter().all(|&v| v == Z::new(i, 0.0)), "{norm:?}: {y:?}");
    }
}

#[test]
fn norm_modes_and_n_pad_or_crop_as_numpy() {
    let _g = serial();
    norms_and_lengths::<f32>();
    norms_and_lengths::<f64>();
}

fn batches<F: Prec>() {
    let mut r = rng(0xba7c);
    // Small batches on every axis, and batches large enough for the parallel paths (the
    // contiguous axis and a strided one, over 2^15 elements).
    let shapes: [(&[usize], usize); 9] = [
        (&[3, 8, 5], 0),
        (&[3, 8, 5], 1),
        (&[3, 8, 5], 2),
        (&[2, 13, 3], 1),
        (&[4, 105], 0),
        (&[4, 105], 1),
        (&[64, 1024], 1),
        (&[1024, 40], 0),
        (&[6, 997, 7], 1),
    ];
    for (shape, axis) in shapes {
        let len: usize = shape.iter().product();
        let n = shape[axis];
        let (x, z) = rand_c::<F>(&mut r, len);
        let x = x.reshape(shape);
        for inverse in [false, true] {
            let y = if inverse {
                fft::ifft(&x, None, axis, Norm::Backward)
            } else {
                fft::fft(&x, None, axis, Norm::Backward)
            };
            assert_eq!(y.shape(), shape);
            let (want, _) = along(&z, shape, axis, |l| {
                oracle_c2c(l, n, inverse, Norm::Backward)
            });
            let what = format!("{} {shape:?} axis {axis} inverse={inverse}", F::name());
            assert_lines(&read_c::<F>(&y), &want, shape, axis, n, F::EPS, &what);
        }
        // Real transforms along the same axis, padding by 3.
        let (xr, zr) = rand_r::<F>(&mut r, len);
        let xr = xr.reshape(shape);
        let rf = fft::rfft(&xr, Some(n + 3), axis, Norm::Ortho);
        let (want, wshape) = along(&zr, shape, axis, |l| oracle_r2c(l, n + 3, Norm::Ortho));
        assert_eq!(rf.shape(), &wshape[..]);
        let what = format!("{} rfft {shape:?} axis {axis}", F::name());
        let got = read_c::<F>(&rf);
        assert_lines(&got, &want, &wshape, axis, n + 3, F::EPS, &what);
        let back = fft::irfft(&rf, Some(n + 3), axis, Norm::Ortho);
        let (want, bshape) = along(&want, &wshape, axis, |l| oracle_c2r(l, n + 3, Norm::Ortho));
        assert_eq!(back.shape(), &bshape[..]);
        let what = format!("{} irfft {shape:?} axis {axis}", F::name());
        assert_lines(
            &read_r::<F>(&back),
            &want,
            &bshape,
            axis,
            n + 3,
            2.0 * F::EPS,
            &what,
        );
    }
}

#[test]
fn batched_transforms_along_every_axis() {
    let _g = serial();
    batches::<f32>();
    batches::<f64>();
}

// ---------------------------------------------------------------------------------------------
// Several axes.

/// The oracle's transform over `axes` with lengths `s` (the last axis first, as NumPy).
fn oracle_nd(
    z: &[Z],
    shape: &[usize],
    s: &[usize],
    axes: &[usize],
    inverse: bool,
    norm: Norm,
) -> (Vec<Z>, Vec<usize>) {
    let (mut v, mut sh) = (z.to_vec(), shape.to_vec());
    for (&n, &a) in s.iter().zip(axes).rev() {
        let (nv, nsh) = along(&v, &sh, a, |l| oracle_c2c(l, n, inverse, norm));
        v = nv;
        sh = nsh;
    }
    (v, sh)
}

/// Each element within `C log2(N) eps ||want||_2` of the oracle, `N` the product of the lengths.
#[track_caller]
fn assert_all(got: &[Z], want: &[Z], n: usize, eps: f64, what: &str) {
    let len = got.len();
    assert_lines(got, want, &[len], 0, n, eps, what);
}

fn several_axes<F: Prec>() {
    let mut r = rng(0x2d);
    let shape = [2usize, 6, 10];
    let len = 120;
    let (x, z) = rand_c::<F>(&mut r, len);
    let x = x.reshape(&shape);
    // fft2 / ifft2 over the last two axes, with and without s.
    for (s, inverse) in [(None, false), (Some([4usize, 16]), false), (None, true)] {
        let y = if inverse {
            fft::ifft2(&x, s, Norm::Backward)
        } else {
            fft::fft2(&x, s, Norm::Backward)
        };
        let ss = s.unwrap_or([6, 10]);
        let (want, wshape) = oracle_nd(&z, &shape, &ss, &[1, 2], inverse, Norm::Backward);
        assert_eq!(y.shape(), &wshape[..]);
        let what = format!("{} fft2 s={s:?} inverse={inverse}", F::name());
        assert_all(&read_c::<F>(&y), &want, ss[0] * ss[1], F::EPS, &what);
    }
    // fftn: every axis; chosen axes; s with the axes it implies (the last len(s)).
    // (s, axes, the lengths and axes they imply)
    type Case<'a> = (
        Option<&'a [usize]>,
        Option<&'a [usize]>,
        Vec<usize>,
        Vec<usize>,
    );
    let cases: [Case; 4] = [
        (None, None, vec![2, 6, 10], vec![0, 1, 2]),
        (None, Some(&[2, 0]), vec![10, 2], vec![2, 0]),
        (Some(&[5, 12]), None, vec![5, 12], vec![1, 2]),
        (Some(&[3]), Some(&[0]), vec![3], vec![0]),
    ];
    for (s, axes, ws, wa) in cases {
        for norm in [Norm::Backward, Norm::Ortho] {
            let y = fft::fftn(&x, s, axes, norm);
            let (want, wshape) = oracle_nd(&z, &shape, &ws, &wa, false, norm);
            assert_eq!(y.shape(), &wshape[..], "fftn s={s:?} axes={axes:?}");
            let what = format!("{} fftn s={s:?} axes={axes:?} {norm:?}", F::name());
            let n: usize = ws.iter().product();
            assert_all(&read_c::<F>(&y), &want, n, F::EPS, &what);
            let back = fft::ifftn(&y, None, axes.or(s.map(|_| &wa[..])), norm);
            if s.is_none() {
                let what = format!("{} ifftn(fftn) axes={axes:?} {norm:?}", F::name());
                assert_all(&read_c::<F>(&back), &z, n, 2.0 * F::EPS, &what);
            }
        }
    }
    // A real array: fftn reads it as complex; rfftn is rfft along the last axis, then fft.
    let (xr, zr) = rand_r::<F>(&mut r, len);
    let xr = xr.reshape(&shape);
    let (full, _) = oracle_nd(&zr, &shape, &[2, 6, 10], &[0, 1, 2], false, Norm::Backward);
    assert_all(
        &read_c::<F>(&fft::fftn(&xr, None, None, Norm::Backward)),
        &full,
        120,
        F::EPS,
        &format!("{} fftn of real", F::name()),
    );
    let r2 = fft::rfft2(&xr, None, Norm::Backward);
    assert_eq!(r2.shape(), &[2, 6, 6]);
    let (f2, f2shape) = oracle_nd(&zr, &shape, &[6, 10], &[1, 2], false, Norm::Backward);
    let (half, _) = along(&f2, &f2shape, 2, |l| l[..6].to_vec());
    let got = read_c::<F>(&r2);
    assert_all(&got, &half, 60, F::EPS, &format!("{} rfft2", F::name()));
    let back = fft::irfft2(&r2, Some([6, 10]), Norm::Backward);
    assert_eq!(back.shape(), &shape);
    assert_all(
        &read_r::<F>(&back),
        &zr,
        60,
        2.0 * F::EPS,
        &format!("{} irfft2", F::name()),
    );
    // rfftn / irfftn over axes 0 and 1 (the last of them, 1, is the real one), odd length 5.
    let rn = fft::rfftn(&xr, Some(&[2, 5]), Some(&[0, 1]), Norm::Forward);
    assert_eq!(rn.shape(), &[2, 3, 10]);
    let (a, ash) = along(&zr, &shape, 1, |l| oracle_r2c(l, 5, Norm::Forward));
    let (want, _) = along(&a, &ash, 0, |l| oracle_c2c(l, 2, false, Norm::Forward));
    let got = read_c::<F>(&rn);
    assert_all(&got, &want, 10, F::EPS, &format!("{} rfftn", F::name()));
    let back = fft::irfftn(&rn, Some(&[2, 5]), Some(&[0, 1]), Norm::Forward);
    assert_eq!(back.shape(), &[2, 5, 10]);
    let (crop, _) = along(&zr, &shape, 1, |l| l[..5].to_vec());
    assert_all(
        &read_r::<F>(&back),
        &crop,
        10,
        2.0 * F::EPS,
        &format!("{} irfftn", F::name()),
    );
}

#[test]
fn fft2_fftn_and_the_real_nd_transforms_match_the_oracle() {
    let _g = serial();
    several_axes::<f32>();
    several_axes::<f64>();
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// NumPy's `fftfreq`: `results * (1.0 / (n * d))` with results `[0, .., (n-1)//2, -(n//2), .., -1]`.
fn numpy_fftfreq(n: usize, d: f64) -> Vec<f64> {
    let val = 1.0 / (n as f64 * d);
    let big_n = (n - 1) / 2 + 1;
    let mut results: Vec<i64> = (0..big_n as i64).collect();
    results.extend(-((n / 2) as i64)..0);
    results.into_iter().map(|k| k as f64 * val).collect()
}

/// NumPy's `rfftfreq`: `arange(0, n//2 + 1) * (1.0 / (n * d))`.
fn numpy_rfftfreq(n: usize, d: f64) -> Vec<f64> {
    let val = 1.0 / (n as f64 * d);
    (0..=(n / 2) as i64).map(|k| k as f64 * val).collect()
}

/// NumPy's `roll` of a 1-D vector by `shift`.
fn roll(v: &[f64], shift: isize) -> Vec<f64> {
    let n = v.len() as isize;
    let mut out = vec![0.0; v.len()];
    for (i, &x) in v.iter().enumerate() {
        out[(i as isize + shift).rem_euclid(n) as usize] = x;
    }
    out
}

#[test]
fn fftfreq_rfftfreq_and_the_shifts_follow_numpy() {
    let _g = serial();
    for n in 1..=12 {
        for d in [1.0, 0.1, 2.5] {
            assert_eq!(
                read(&fft::fftfreq::<f64>(n, d)),
                numpy_fftfreq(n, d),
                "n={n} d={d}"
            );
            assert_eq!(
                read(&fft::rfftfreq::<f64>(n, d)),
                numpy_rfftfreq(n, d),
                "n={n} d={d}"
            );
            let f32s: Vec<f32> = numpy_fftfreq(n, d).iter().map(|&v| v as f32).collect();
            assert_eq!(read(&fft::fftfreq::<f32>(n, d)), f32s, "f32 n={n} d={d}");
            // fftshift rolls by n // 2, ifftshift by -(n // 2); they differ for odd n.
            let f = numpy_fftfreq(n, d);
            let a = fft::fftfreq::<f64>(n, d);
            let shifted = roll(&f, (n / 2) as isize);
            assert_eq!(read(&fft::fftshift(&a, None)), shifted, "fftshift n={n}");
            assert_eq!(
                read(&fft::ifftshift(&a, None)),
                roll(&f, -((n / 2) as isize))
            );
            assert_eq!(read(&fft::ifftshift(&fft::fftshift(&a, None), None)), f);
            // The shifted frequencies ascend.
            assert!(
                shifted.windows(2).all(|w| w[0] < w[1]),
                "n={n}: {shifted:?}"
            );
        }
    }
    // Over chosen axes of a 2-D array (and of a complex one).
    let v: Vec<f64> = (0..15).map(|i| i as f64).collect();
    let a = Array::from_vec(v.clone(), &[3, 5]);
    let at = |i: usize, j: usize| v[i * 5 + j];
    let both: Vec<f64> = (0..3)
        .flat_map(|i| (0..5).map(move |j| (i, j)))
        .map(|(i, j)| at((i + 3 - 1) % 3, (j + 5 - 2) % 5))
        .collect();
    assert_eq!(read(&fft::fftshift(&a, None)), both);
    let rows: Vec<f64> = (0..3)
        .flat_map(|i| (0..5).map(move |j| (i, j)))
        .map(|(i, j)| at(i, (j + 2) % 5))
        .collect();
    assert_eq!(read(&fft::ifftshift(&a, Some(&[1]))), rows);
    let c: Array<Complex<f32>> = a.cast::<f32>().cast();
    let sc = read(&fft::fftshift(&c, Some(&[0, 1])));
    assert!(
        sc.iter()
            .zip(&both)
            .all(|(z, &w)| z.re as f64 == w && z.im == 0.0)
    );
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// The error's kind, its text, and its site: this file, at a line in `lines` (the lines of
/// the statement that made the call).
#[track_caller]
fn assert_at(e: &arrayflow::Error, kind: ErrorKind, lines: (u32, u32), has: &str) {
    let text = e.to_string();
    assert_eq!(e.kind, kind, "{text}");
    let site: Site = e.site.expect("an error with the caller's site");
    assert!(site.file().ends_with("fft.rs"), "{text}");
    assert!(
        (lines.0..=lines.1).contains(&site.line()),
        "`{text}`: line {} not in {lines:?}",
        site.line()
    );
    let want = format!("{}:{}:", site.file(), site.line());
    assert!(
        text.starts_with(&want),
        "`{text}` does not start with `{want}`"
    );
    assert!(text.contains(has), "`{text}` does not mention `{has}`");
}

/// `$call`'s error, checked by [`assert_at`] against the lines of the invocation (`line!()` is
/// its first line; formatted, an invocation spans at most 5).
macro_rules! err_at {
    ($call:expr, $kind:expr, $has:expr) => {{
        let l0 = line!();
        let e = $call.unwrap_err();
        assert_at(&e, $kind, (l0, l0 + 4), $has);
    }};
}

fn errors_of<F: Prec>() {
    let x = Array::<F>::ones(&[2, 3]);
    let c: Array<F::C> = x.cast();
    let b = Norm::Backward;
    let arg = ErrorKind::Argument;
    err_at!(
        fft::try_fft(&x, None, 2, b),
        arg,
        "`fft` axis 2 is out of range for shape [2, 3]"
    );
    err_at!(fft::try_ifft(&c, Some(0), 1, b), arg, "`ifft` of length 0");
    err_at!(fft::try_rfft(&x, None, 5, b), arg, "`rfft` axis 5");
    let one = Array::<F::C>::ones(&[4, 1]);
    err_at!(fft::try_irfft(&one, None, 1, b), arg, "`irfft` of length 0");
    let line = Array::<F>::ones(&[8]);
    err_at!(
        fft::try_fft2(&line, None, b),
        arg,
        "`fft2` of an array of shape [8]"
    );
    err_at!(
        fft::try_fftn(&x, Some(&[2, 3]), Some(&[0]), b),
        arg,
        "2 lengths for 1 axes"
    );
    err_at!(
        fft::try_ifftn(&c, None, Some(&[0, 4]), b),
        arg,
        "`ifftn` axis 4 is out of range"
    );
    err_at!(fft::try_fftfreq::<F>(0, 1.0), arg, "`fftfreq` of 0 samples");
    err_at!(fft::try_fftshift(&x, Some(&[3])), arg, "axis 3");
}

#[test]
fn bad_arguments_are_errors_at_the_callers_line() {
    let _g = serial();
    errors_of::<f32>();
    errors_of::<f64>();
    // Integer arrays are refused by the type system (`FftInput`); the operator form panics with
    // the error, which names the line.
    let x = Array::<f32>::ones(&[3]);
    let call = || fft::fft(&x, None, 1, Norm::Backward);
    let line = line!() - 1;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains(&format!("fft.rs:{line}:")), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// Executors.

/// Points a GPU line holds in local memory (`intrinsics/fft/gpu.rs`: 32 KiB on OpenCL, 16 KiB
/// on WGSL); `None` where the generated kernels do not run.
fn device_line_points<F: Prec>() -> Option<usize> {
    use arrayflow::Backend;
    let off = std::env::var("ARRAYFLOW_FFT_GPU").is_ok_and(|v| v == "off" || v == "0");
    match common::the_device() {
        _ if off => None,
        Backend::OpenCl => Some(32768 / (2 * std::mem::size_of::<F>())),
        Backend::Wgpu if std::mem::size_of::<F>() == 4 => Some(16384 / 8),
        _ => None,
    }
}

/// Whether the generated kernels take a complex transform of `n` points (factors 2, 3, 5, 7;
/// one local-memory pass, or up to four global passes of at most 256 points: every such
/// length below 2^24 here; other lengths up to 2^23 by Bluestein's algorithm) of precision
/// `F` on this process's executor.
fn on_device<F: Prec>(n: usize) -> bool {
    if device_line_points::<F>().is_none() {
        return false;
    }
    let mut left = n;
    for p in [2, 3, 5, 7] {
        while left.is_multiple_of(p) {
            left /= p;
        }
    }
    (left == 1 && n <= 1 << 24) || n <= 1 << 23
}

/// The complex transform length of a call: `n` for `fft` and odd real transforms, `n / 2` for
/// even ones.
fn inner_len(n: usize, real: bool) -> usize {
    if real && n.is_multiple_of(2) {
        n / 2
    } else {
        n
    }
}

/// Runs `f` and, where the kernels take length `n`, checks that a device kernel ran and no
/// program fell back to the CPU (`Runtime::stats()`; on the CPU executor, nothing).
#[track_caller]
fn device<F: Prec, R>(n: usize, what: &str, f: impl FnOnce() -> R) -> R {
    use arrayflow::Runtime;
    Runtime::execute();
    let before = Runtime::stats();
    let out = f();
    let d = Runtime::stats().since(&before).device;
    if on_device::<F>(n) {
        assert_eq!(d.fallbacks, 0, "{what}: ran on the CPU fallback: {d:?}");
        assert!(d.kernels > 0, "{what}: no device kernel ran: {d:?}");
    }
    if common::the_device() == arrayflow::Backend::Wgpu && std::mem::size_of::<F>() == 8 {
        // WGSL has no f64: the scheduler gives Complex<f64> work to the CPU executor.
        assert_eq!(
            d.fallbacks, 0,
            "{what}: f64 on wgpu went through the fallback: {d:?}"
        );
    }
    out
}

/// Stats are process-wide: the tests here run one at a time (each holds this lock), so that one
/// test's CPU fallbacks are not counted in another's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every length class the GPU kernels take, each checked against the oracle with the device
/// kernels really running: powers of two 2 .. 2^16, 3 5 7 mixes, 1, odd lengths, on one line
/// and batched along either axis of a 2-D array, complex and real transforms, every norm.
fn device_lengths<F: Prec>() {
    let mut r = rng(0xd3f);
    let mut lengths: Vec<usize> = (0..=16).map(|k| 1usize << k).collect();
    lengths.extend([
        3,
        5,
        7,
        9,
        15,
        21,
        35,
        45,
        105,
        315,
        375,
        1029,
        2401,
        3 * 5 * 7 * 64,
        6125,
    ]);
    lengths.extend([6 * 2048, 5 * 4096 * 3]);
    let norms = [Norm::Backward, Norm::Ortho, Norm::Forward];
    for (t, &n) in lengths.iter().enumerate() {
        if comparison_mode() && n > 1 << 12 {
            continue;
        }
        let norm = norms[t % 3];
        let (x, z) = rand_c::<F>(&mut r, n);
        for inverse in [false, true] {
            let what = format!(
                "{} {} n={n} {norm:?}",
                F::name(),
                if inverse { "ifft" } else { "fft" }
            );
            let got = device::<F, _>(n, &what, || {
                let y = if inverse {
                    fft::ifft(&x, None, 0, norm)
                } else {
                    fft::fft(&x, None, 0, norm)
                };
                read_c::<F>(&y)
            });
            assert_lines(
                &got,
                &oracle_c2c(&z, n, inverse, norm),
                &[n],
                0,
                n,
                F::EPS,
                &what,
            );
        }
        // A real input read as complex; rfft and irfft back (a round trip).
        let (xr, zr) = rand_r::<F>(&mut r, n);
        let what = format!("{} fft of real n={n}", F::name());
        let got = device::<F, _>(n, &what, || read_c::<F>(&fft::fft(&xr, None, 0, norm)));
        assert_lines(
            &got,
            &oracle_c2c(&zr, n, false, norm),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        );
        let what = format!("{} rfft n={n} {norm:?}", F::name());
        let (got, rf) = device::<F, _>(inner_len(n, true), &what, || {
            let rf = fft::rfft(&xr, None, 0, norm);
            (read_c::<F>(&rf), rf)
        });
        let want = oracle_r2c(&zr, n, norm);
        assert_lines(&got, &want, &[n / 2 + 1], 0, n, F::EPS, &what);
        let what = format!("{} irfft(rfft) n={n} {norm:?}", F::name());
        let got = device::<F, _>(inner_len(n, true), &what, || {
            read_r::<F>(&fft::irfft(&rf, Some(n), 0, norm))
        });
        assert_lines(&got, &zr, &[n], 0, n, 2.0 * F::EPS, &what);
    }
    // Batched 2-D arrays along either axis, lengths cropped and padded.
    // [1024, 5] along axis 0: a strided axis longer than one strided pass takes (global passes).
    let shapes: [&[usize]; 7] = [
        &[8, 64],
        &[37, 105],
        &[3, 4096],
        &[6, 2],
        &[1, 1],
        &[300, 12],
        &[1024, 5],
    ];
    for (t, shape) in shapes.into_iter().enumerate() {
        let len: usize = shape.iter().product();
        let (x, z) = rand_c::<F>(&mut r, len);
        let x = x.reshape(shape);
        let (xr, zr) = rand_r::<F>(&mut r, len);
        let xr = xr.reshape(shape);
        for axis in 0..2 {
            let m = shape[axis];
            let norm = norms[(t + axis) % 3];
            for n in [m, m + 2, m.div_ceil(2).max(1)] {
                let what = format!("{} fft {shape:?} axis {axis} n={n} {norm:?}", F::name());
                let got =
                    device::<F, _>(n, &what, || read_c::<F>(&fft::fft(&x, Some(n), axis, norm)));
                let (want, ws) = along(&z, shape, axis, |l| oracle_c2c(l, n, false, norm));
                assert_lines(&got, &want, &ws, axis, n, F::EPS, &what);
                let what = format!("{} ifft {shape:?} axis {axis} n={n}", F::name());
                let got = device::<F, _>(n, &what, || {
                    read_c::<F>(&fft::ifft(&x, Some(n), axis, norm))
                });
                let (want, ws) = along(&z, shape, axis, |l| oracle_c2c(l, n, true, norm));
                assert_lines(&got, &want, &ws, axis, n, F::EPS, &what);
                let what = format!("{} rfft {shape:?} axis {axis} n={n}", F::name());
                let got = device::<F, _>(inner_len(n, true), &what, || {
                    read_c::<F>(&fft::rfft(&xr, Some(n), axis, norm))
                });
                let (want, ws) = along(&zr, shape, axis, |l| oracle_r2c(l, n, norm));
                assert_lines(&got, &want, &ws, axis, n, F::EPS, &what);
                let what = format!("{} irfft {shape:?} axis {axis} n={n}", F::name());
                let got = device::<F, _>(inner_len(n, true), &what, || {
                    read_r::<F>(&fft::irfft(&x, Some(n), axis, norm))
                });
                let (want, ws) = along(&z, shape, axis, |l| oracle_c2r(l, n, norm));
                assert_lines(&got, &want, &ws, axis, n, 2.0 * F::EPS, &what);
            }
        }
    }
}

#[test]
fn gpu_kernels_run_every_supported_length_on_the_device() {
    let _g = serial();
    device_lengths::<f32>();
    device_lengths::<f64>();
}

/// Lengths with a prime factor above 7 (Bluestein's algorithm on the GPU executors), checked
/// against the oracle with the device kernels really running: primes and a mixed length, both
/// directions and every norm, a batch of lines, a strided axis (one local-memory pass, and
/// global passes), a 2-D transform with a prime side, the real transforms of a prime and of
/// an even length. Few distinct plans: each is a program PoCL compiles cold.
fn bluestein_lengths<F: Prec>() {
    let mut r = rng(0xb1e);
    let norms = [Norm::Backward, Norm::Ortho, Norm::Forward];
    let wide = std::mem::size_of::<F>() == 8;
    let lengths: &[usize] = if wide {
        &[13, 1009, 65537]
    } else {
        &[11, 13, 17, 97, 101, 1009, 66, 8191, 65537, 100_003]
    };
    let mut worst: f64 = 0.0;
    for (t, &n) in lengths.iter().enumerate() {
        if comparison_mode() && n > 1 << 14 {
            continue;
        }
        let norm = norms[t % 3];
        let (x, z) = rand_c::<F>(&mut r, n);
        let what = format!("{} fft n={n} {norm:?}", F::name());
        let (got, y) = device::<F, _>(n, &what, || {
            let y = fft::fft(&x, None, 0, norm);
            (read_c::<F>(&y), y)
        });
        worst = worst.max(assert_lines(
            &got,
            &oracle_c2c(&z, n, false, norm),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        ));
        if n > DIRECT {
            assert_bins(&got, &z, false, scale(norm, n, false), F::EPS, &what);
        }
        // ifft against its own oracle, and back to x.
        let what = format!("{} ifft n={n} {norm:?}", F::name());
        let got = device::<F, _>(n, &what, || read_c::<F>(&fft::ifft(&x, None, 0, norm)));
        worst = worst.max(assert_lines(
            &got,
            &oracle_c2c(&z, n, true, norm),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        ));
        let what = format!("{} ifft(fft) n={n} {norm:?}", F::name());
        let got = device::<F, _>(n, &what, || read_c::<F>(&fft::ifft(&y, None, 0, norm)));
        assert_lines(&got, &z, &[n], 0, n, 2.0 * F::EPS, &what);
    }
    // The real transforms of a prime and of an even length (2 * 11: the complex path, not
    // half-length pairs), cropped and padded.
    for (n, m) in [(17, 17), (22, 20), (1009, 1100)] {
        let norm = norms[n % 3];
        let (xr, zr) = rand_r::<F>(&mut r, m);
        let what = format!("{} rfft m={m} n={n} {norm:?}", F::name());
        let (got, rf) = device::<F, _>(n, &what, || {
            let rf = fft::rfft(&xr, Some(n), 0, norm);
            (read_c::<F>(&rf), rf)
        });
        assert_lines(
            &got,
            &oracle_r2c(&zr, n, norm),
            &[n / 2 + 1],
            0,
            n,
            F::EPS,
            &what,
        );
        let what = format!("{} irfft n={n} {norm:?}", F::name());
        let got = device::<F, _>(n, &what, || read_r::<F>(&fft::irfft(&rf, Some(n), 0, norm)));
        let zc = fit(&zr, n);
        assert_lines(&got, &zc, &[n], 0, n, 2.0 * F::EPS, &what);
    }
    // A batch of lines; strided axes: 97 points (one pass) and 1009 (global passes).
    let cases: [(&[usize], usize); 3] = [(&[5, 101], 1), (&[97, 6], 0), (&[1009, 3], 0)];
    for (t, (shape, axis)) in cases.into_iter().enumerate() {
        let len: usize = shape.iter().product();
        let (x, z) = rand_c::<F>(&mut r, len);
        let x = x.reshape(shape);
        let n = shape[axis];
        let norm = norms[t % 3];
        for inverse in [false, true] {
            let what = format!("{} fft {shape:?} axis {axis} inverse={inverse}", F::name());
            let got = device::<F, _>(n, &what, || {
                let y = if inverse {
                    fft::ifft(&x, None, axis, norm)
                } else {
                    fft::fft(&x, None, axis, norm)
                };
                read_c::<F>(&y)
            });
            let (want, ws) = along(&z, shape, axis, |l| oracle_c2c(l, n, inverse, norm));
            assert_lines(&got, &want, &ws, axis, n, F::EPS, &what);
        }
    }
    // fft2 with a prime side (13 along the strided axis) and its inverse.
    let shape = [13usize, 12];
    let (x, z) = rand_c::<F>(&mut r, 13 * 12);
    let x = x.reshape(&shape);
    let what = format!("{} fft2 {shape:?}", F::name());
    let (got, y) = device::<F, _>(13, &what, || {
        let y = fft::fft2(&x, None, Norm::Ortho);
        (read_c::<F>(&y), y)
    });
    let (want, _) = oracle_nd(&z, &shape, &[13, 12], &[0, 1], false, Norm::Ortho);
    assert_all(&got, &want, 13 * 12, F::EPS, &what);
    let what = format!("{} ifft2(fft2) {shape:?}", F::name());
    let got = device::<F, _>(13, &what, || {
        read_c::<F>(&fft::ifft2(&y, None, Norm::Ortho))
    });
    assert_all(&got, &z, 13 * 12, 2.0 * F::EPS, &what);
    if std::env::var("FFT_WORST").is_ok() {
        eprintln!(
            "{} Bluestein: worst error / allowance {worst:.3}",
            F::name()
        );
    }
}

#[test]
fn lengths_with_a_prime_factor_above_7_run_on_the_device_by_bluestein() {
    let _g = serial();
    bluestein_lengths::<f32>();
    bluestein_lengths::<f64>();
}

/// Bluestein's transformed chirp filter is computed once per length, direction and element
/// type on a device and kept (`GpuPlan::kept`): a second call of the same length on other data
/// runs fewer passes (`stats().device.dispatches`) and binds the kept filter
/// (`device.kept_hits`), with results that still match the oracle, and a call on the first
/// call's data again gives it bit for bit. A strided batch of the same length shares the filter;
/// the other direction computes its own. Lengths no other test here uses (the tables live as long
/// as the process): 1031 (one local-memory pass) and 70001 (global passes).
fn bluestein_filter_kept<F: Prec>() {
    use arrayflow::Runtime;
    let mut r = rng(0xf17);
    for n in [1031usize, 70001] {
        if comparison_mode() && n > 1 << 14 {
            continue;
        }
        let dev = on_device::<F>(n);
        let call = |x: &Array<F::C>, inverse: bool, what: &str| {
            let before = Runtime::stats().device;
            let got = device::<F, _>(n, what, || {
                let y = if inverse {
                    fft::ifft(x, None, 0, Norm::Backward)
                } else {
                    fft::fft(x, None, 0, Norm::Backward)
                };
                read_c::<F>(&y)
            });
            (got, Runtime::stats().device.since(&before))
        };
        let (x1, z1) = rand_c::<F>(&mut r, n);
        let (x2, z2) = rand_c::<F>(&mut r, n);
        let what = format!("{} fft n={n}", F::name());
        let (first, d1) = call(&x1, false, &format!("{what}, first call"));
        assert_lines(
            &first,
            &oracle_c2c(&z1, n, false, Norm::Backward),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        );
        let (second, d2) = call(&x2, false, &format!("{what}, second call"));
        assert_lines(
            &second,
            &oracle_c2c(&z2, n, false, Norm::Backward),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        );
        let (again, d3) = call(&x1, false, &format!("{what}, first data again"));
        assert!(
            again.iter().zip(&first).all(|(a, b)| a == b),
            "{what}: the kept filter changed the result"
        );
        if dev {
            assert_eq!(d1.kept_hits, 0, "{what}: first call found a filter: {d1:?}");
            assert_eq!(
                d2.kept_hits, 1,
                "{what}: second call computed its filter: {d2:?}"
            );
            assert_eq!(
                d3.kept_hits, 1,
                "{what}: third call computed its filter: {d3:?}"
            );
            assert!(
                d2.dispatches < d1.dispatches && d2.dispatches > 0,
                "{what}: passes per call {} then {}",
                d1.dispatches,
                d2.dispatches
            );
            assert_eq!(d2.dispatches, d3.dispatches, "{what}");
            eprintln!(
                "{what}: {} passes on the first call, {} on later ones",
                d1.dispatches, d2.dispatches
            );
        }
        // The inverse's filter is its own (computed once, then kept too).
        let what = format!("{} ifft n={n}", F::name());
        let (got, i1) = call(&x2, true, &what);
        assert_lines(
            &got,
            &oracle_c2c(&z2, n, true, Norm::Backward),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        );
        let (got, i2) = call(&x1, true, &what);
        assert_lines(
            &got,
            &oracle_c2c(&z1, n, true, Norm::Backward),
            &[n],
            0,
            n,
            F::EPS,
            &what,
        );
        if dev {
            assert_eq!(
                (i1.kept_hits, i2.kept_hits),
                (0, 1),
                "{what}: {i1:?} {i2:?}"
            );
        }
        // A batch of strided lines of the same length: the same filter, found kept.
        if n < 2048 {
            let shape = [n, 3];
            let (x, z) = rand_c::<F>(&mut r, 3 * n);
            let x = x.reshape(&shape);
            let what = format!("{} fft {shape:?} axis 0", F::name());
            let before = Runtime::stats().device;
            let got = device::<F, _>(n, &what, || {
                read_c::<F>(&fft::fft(&x, None, 0, Norm::Ortho))
            });
            let d = Runtime::stats().device.since(&before);
            let (want, ws) = along(&z, &shape, 0, |l| oracle_c2c(l, n, false, Norm::Ortho));
            assert_lines(&got, &want, &ws, 0, n, F::EPS, &what);
            if dev {
                assert_eq!(d.kept_hits, 1, "{what}: {d:?}");
            }
        }
    }
}

#[test]
fn bluesteins_filter_is_computed_once_per_length_direction_and_type() {
    let _g = serial();
    bluestein_filter_kept::<f32>();
    bluestein_filter_kept::<f64>();
}

#[test]
fn a_large_elementwise_result_of_a_transform_is_read_straight_into_host_memory() {
    let _g = serial();
    // 2^17 elements: a pending element-wise result this large is computed into the reader's
    // memory (on a GPU executor the transform runs on its CPU fallback, the complex product on
    // the device).
    let n = 1 << 17;
    let mut r = rng(0x2e7);
    let (x, z) = rand_c::<f32>(&mut r, n);
    let y = fft::fft(&x, None, 0, Norm::Ortho);
    let doubled = read_c::<f32>(&(&y * Complex::new(2.0f32, 0.0)));
    let want: Vec<Z> = oracle_c2c(&z, n, false, Norm::Ortho)
        .into_iter()
        .map(|v| v * 2.0)
        .collect();
    assert_lines(&doubled, &want, &[n], 0, n, f32::EPS, "2 fft(x)");
}

#[test]
fn long_lines_reuse_buffers_without_stale_values() {
    let _g = serial();
    // A line of 2^18 points runs on one thread, its buffers (1 MB and more) kept between calls
    // with their values: calls on other data, cropped or zero-padded, must see none of them.
    let mut r = rng(0x5a);
    let n = 1 << 18;
    for (m, nn) in [(n, n), (n - 1000, n), (n, n - 7), (n, n)] {
        let what = format!("m={m} n={nn}");
        let (x, z) = rand_r::<f32>(&mut r, m);
        let y = read_c::<f32>(&fft::rfft(&x, Some(nn), 0, Norm::Backward));
        let want = oracle_r2c(&z, nn, Norm::Backward);
        assert_lines(
            &y,
            &want,
            &[nn / 2 + 1],
            0,
            nn,
            f32::EPS,
            &format!("rfft {what}"),
        );
        let (c, zc) = rand_c::<f32>(&mut r, m);
        let y = read_c::<f32>(&fft::ifft(&c, Some(nn), 0, Norm::Ortho));
        let want = oracle_c2c(&zc, nn, true, Norm::Ortho);
        assert_lines(&y, &want, &[nn], 0, nn, f32::EPS, &format!("ifft {what}"));
        let y = read_r::<f32>(&fft::irfft(&c, Some(nn), 0, Norm::Forward));
        let want = oracle_c2r(&zc, nn, Norm::Forward);
        assert_lines(&y, &want, &[nn], 0, nn, f32::EPS, &format!("irfft {what}"));
    }
}
