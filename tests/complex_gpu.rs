//! Complex kernels on the executor this process runs (`ARRAYFLOW_DEVICE`, `ARRAYFLOW_NATIVE`):
//! each case asserts where its kernels ran (`Runtime::stats()`: on OpenCL every complex kernel,
//! `Complex<f64>` included where the device computes f64; on wgpu every `Complex<f32>` kernel,
//! while `Complex<f64>` goes to the CPU as f64 work does (`f64_to_cpu`, no fallback); on the CPU
//! with `ARRAYFLOW_NATIVE=require` or `always` as native code) and compares the results with
//! num-complex evaluated in f64 on the host, on seeded random data led by edge cases: moduli
//! near overflow, tiny divisors, NaN parts, signed zeros, the branch cut of `ln` and `sqrt`.
//!
//! Tolerances, per part, relative to the f64 oracle's modulus `|want|` (rounded to the result
//! type first, so an overflow in the result type is an infinity to match):
//! - `+ - neg conj re im`, `complex(re, im)`, casts, `eq`/`ne`: exact (plain loops in the
//!   element type);
//! - `* /`, `abs`: `8 eps |want|`; `arg`, `exp`, `ln`, `sqrt`: `32 eps |want|` (device
//!   libraries are within a few ulp of the C library, `common::DEVICE_ULPS`);
//!
//! plus the smallest normal value of the type (GPUs may flush subnormal results).
//! Division by `0 + 0i` gives NaN parts (Smith's algorithm divides 0 by 0), as the oracle says.
//! Also `powi` (repeated squaring), `from_polar`, `dot` and the conjugating `vdot` of 1-D arrays,
//! against the same oracle; `prod` (whole array and along either axis of a matrix) on factors of
//! modulus near 1, lengths 1, odd and past a work-group, against num-complex's sequential product
//! in f64 within `8 (log2 n + 2) eps |want|` (a pairwise tree of complex multiplies,
//! `src/frontend/complex_product.rs`; an empty product is `1 + 0i`, a zero factor gives `0 + 0i`
//! even where the others overflow).
//! Stats are process-wide: the tests run one at a time (`SERIAL`).

mod common;

use arrayflow::{Array, Backend, Complex, Runtime};
use common::*;
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

type W = Complex<f64>;

const N: usize = 2003;

/// Whether this process's executor runs complex kernels of the given width on its device.
fn on_device_for(wide: bool) -> bool {
    match common::the_device() {
        Backend::Cpu => false,
        Backend::Wgpu => !wide,
        Backend::OpenCl => {
            !wide
                || Runtime::devices()
                    .iter()
                    .filter(|d| d.backend == Backend::OpenCl)
                    .all(|d| d.fp64)
        }
    }
}

/// Whether the CPU executor compiles every kernel (`ARRAYFLOW_NATIVE=require` or `always`).
fn native_everywhere() -> bool {
    matches!(
        std::env::var("ARRAYFLOW_NATIVE").as_deref(),
        Ok("require") | Ok("always")
    )
}

/// Runs `f` (which reads its results) and asserts that its kernels ran where they should.
#[track_caller]
fn checked<R>(wide: bool, what: &str, f: impl FnOnce() -> R) -> R {
    Runtime::execute();
    let before = Runtime::stats();
    let out = f();
    let d = Runtime::stats().since(&before);
    match common::the_device() {
        Backend::Cpu => {
            if native_everywhere() && !comparison_mode() {
                assert!(d.native_launches > 0, "{what}: no native kernel ran: {d:?}");
            }
        }
        _ => {
            assert_eq!(d.device.fallbacks, 0, "{what}: fell back to the CPU: {d:?}");
            if on_device_for(wide) {
                assert!(d.device.kernels > 0, "{what}: no device kernel ran: {d:?}");
            } else {
                assert!(
                    d.device.f64_to_cpu > 0,
                    "{what}: not sent to the CPU: {d:?}"
                );
            }
        }
    }
    out
}

/// Each part of `got` within `k * eps * |want| + floor` of `want`, `want` rounded to the
/// result type first (`single`); NaN parts match NaN, infinite parts the same infinity.
#[track_caller]
fn assert_near(got: &[W], want: &[W], single: bool, k: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let (eps, floor) = if single {
        (f32::EPSILON as f64, f32::MIN_POSITIVE as f64)
    } else {
        (f64::EPSILON, f64::MIN_POSITIVE)
    };
    let round = |x: f64| if single { x as f32 as f64 } else { x };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let w = W::new(round(w.re), round(w.im));
        let allowed = k * eps * w.norm() + floor;
        for (gp, wp, part) in [(g.re, w.re, "re"), (g.im, w.im, "im")] {
            let ok = if wp.is_nan() {
                gp.is_nan()
            } else if wp.is_infinite() || !allowed.is_finite() {
                gp == wp || (wp.is_finite() && (gp - wp).abs() <= k * eps * wp.abs() + floor)
            } else {
                (gp - wp).abs() <= allowed
            };
            assert!(
                ok,
                "{what}: element {i} {part}: got {g}, want {w} (allowed {allowed:e} per part)"
            );
        }
    }
}

/// Bit-for-bit equality of two lists of complex parts (as f64 pairs).
#[track_caller]
fn assert_bits(got: &[(u64, u64)], want: &[(u64, u64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {i} (bits of re, im)");
    }
}

/// `a / b` in f64 without intermediate overflow or underflow: both scaled by the power of two
/// that brings `b`'s larger part near 1 (exact), then num-complex's division. `b = 0` gives NaN.
fn oracle_div(a: W, b: W) -> W {
    let m = b.re.abs().max(b.im.abs());
    if m == 0.0 {
        return W::new(f64::NAN, f64::NAN);
    }
    if !m.is_finite() || a.re.is_nan() || a.im.is_nan() {
        return a / b;
    }
    let s = 2f64.powi(-(m.log2().floor() as i32));
    (a * s) / (b * s)
}

macro_rules! suite {
    ($name:ident, $f:ty, $wide:expr, huge: $huge:expr, tiny: $tiny:expr, big_exp: $big_exp:expr) => {
        mod $name {
            use super::*;
            type F = $f;
            type C = Complex<F>;
            const WIDE: bool = $wide;
            const SINGLE: bool = !WIDE;

            fn widen(v: &[C]) -> Vec<W> {
                v.iter().map(|z| W::new(z.re as f64, z.im as f64)).collect()
            }
            fn bits(v: &[C]) -> Vec<(u64, u64)> {
                v.iter()
                    .map(|z| ((z.re as f64).to_bits(), (z.im as f64).to_bits()))
                    .collect()
            }
            fn random(seed: u64, n: usize) -> Vec<C> {
                let mut r = rng(seed);
                let re = rand_f64(&mut r, n, -4.0, 4.0);
                let im = rand_f64(&mut r, n, -4.0, 4.0);
                re.iter()
                    .zip(&im)
                    .map(|(&a, &b)| C::new(a as F, b as F))
                    .collect()
            }
            /// Edge cases for the one-input functions, then random values.
            fn unary_data(seed: u64) -> Vec<C> {
                let (h, t, nan) = ($huge as F, $tiny as F, F::NAN);
                let mut v = vec![
                    C::new(h, 0.6 * h),
                    C::new(-h, t),
                    C::new(-0.5 * h, -h),
                    C::new(t, t),
                    C::new(-t, 3.0 * t),
                    C::new(0.0, 0.0),
                    C::new(-0.0, 0.0),
                    C::new(0.0, -0.0),
                    C::new(-0.0, -0.0),
                    C::new(-4.0, 0.0),
                    C::new(-4.0, -0.0),
                    C::new(nan, 1.0),
                    C::new(1.0, nan),
                    C::new($big_exp as F, 0.5),
                    C::new(2.0, 0.0),
                    C::new(0.0, 3.0),
                ];
                let n = N - v.len();
                v.extend(random(seed, n));
                v
            }
            /// Divisors: tiny ones, zero, NaN parts, then random values.
            fn divisor_data(seed: u64) -> Vec<C> {
                let (t, nan) = ($tiny as F, F::NAN);
                let mut v = vec![
                    C::new(t, 0.2 * t),
                    C::new(0.3 * t, -t),
                    C::new(-t, t),
                    C::new(t, 0.0),
                    C::new(0.0, -t),
                    C::new(0.0, 0.0),
                    C::new(-0.0, 0.0),
                    C::new(nan, 1.0),
                    C::new(1.0, nan),
                    C::new(-0.0, -0.0),
                ];
                let n = N - v.len();
                v.extend(random(seed, n));
                v
            }

            #[test]
            fn arithmetic_matches_num_complex() {
                let _g = SERIAL.lock();
                let mut a = random(11, N);
                let mut b = divisor_data(12);
                // 0 - 0i against 0 + 0i: equal (and a NaN quotient).
                a[5] = C::new(0.0, -0.0);
                // Equal elements for eq/ne, signed zeros against each other.
                for i in (20..N).step_by(7) {
                    b[i] = a[i];
                }
                let (x, y) = (
                    Array::from_vec(a.clone(), &[N]),
                    Array::from_vec(b.clone(), &[N]),
                );
                let zip = |f: fn(C, C) -> C| -> Vec<C> {
                    a.iter().zip(&b).map(|(&p, &q)| f(p, q)).collect()
                };
                let what = stringify!($name);
                let (sum, diff, neg, conj) = checked(WIDE, what, || {
                    (
                        read(&(&x + &y)),
                        read(&(&x - &y)),
                        read(&-&x),
                        read(&x.conj()),
                    )
                });
                assert_bits(
                    &bits(&sum),
                    &bits(&zip(|p, q| C::new(p.re + q.re, p.im + q.im))),
                    "add",
                );
                assert_bits(
                    &bits(&diff),
                    &bits(&zip(|p, q| C::new(p.re - q.re, p.im - q.im))),
                    "sub",
                );
                let want: Vec<C> = a.iter().map(|z| C::new(-z.re, -z.im)).collect();
                assert_bits(&bits(&neg), &bits(&want), "neg");
                let want: Vec<C> = a.iter().map(|z| C::new(z.re, -z.im)).collect();
                assert_bits(&bits(&conj), &bits(&want), "conj");

                let (wa, wb) = (widen(&a), widen(&b));
                let (prod, quot) = checked(WIDE, what, || (read(&(&x * &y)), read(&(&x / &y))));
                let want: Vec<W> = wa.iter().zip(&wb).map(|(p, q)| p * q).collect();
                assert_near(&widen(&prod), &want, SINGLE, 8.0, "mul");
                let want: Vec<W> = wa
                    .iter()
                    .zip(&wb)
                    .map(|(&p, &q)| oracle_div(p, q))
                    .collect();
                assert_near(&widen(&quot), &want, SINGLE, 8.0, "div");

                let (eq, ne) = checked(WIDE, what, || (read(&x.eq(&y)), read(&x.ne(&y))));
                let want: Vec<bool> = a
                    .iter()
                    .zip(&b)
                    .map(|(p, q)| p.re == q.re && p.im == q.im)
                    .collect();
                assert!(want.iter().filter(|&&e| e).count() > 100);
                assert_same(&eq, &want, "eq");
                let want: Vec<bool> = want.iter().map(|e| !e).collect();
                assert_same(&ne, &want, "ne");
            }

            #[test]
            fn functions_match_num_complex() {
                let _g = SERIAL.lock();
                let a = unary_data(21);
                let x = Array::from_vec(a.clone(), &[N]);
                let wa = widen(&a);
                let what = stringify!($name);
                let (abs, arg, re, im) = checked(WIDE, what, || {
                    (read(&x.abs()), read(&x.arg()), read(&x.re()), read(&x.im()))
                });
                let real =
                    |v: &[F]| -> Vec<W> { v.iter().map(|&r| W::new(r as f64, 0.0)).collect() };
                let want: Vec<W> = wa.iter().map(|z| W::new(z.norm(), 0.0)).collect();
                assert_near(&real(&abs), &want, SINGLE, 8.0, "abs");
                let want: Vec<W> = wa.iter().map(|z| W::new(z.arg(), 0.0)).collect();
                assert_near(&real(&arg), &want, SINGLE, 32.0, "arg");
                let want: Vec<F> = a.iter().map(|z| z.re).collect();
                assert_bits_f(&re, &want, "re");
                let want: Vec<F> = a.iter().map(|z| z.im).collect();
                assert_bits_f(&im, &want, "im");

                let (exp, ln, sqrt) = checked(WIDE, what, || {
                    (read(&x.exp()), read(&x.ln()), read(&x.sqrt()))
                });
                let want: Vec<W> = wa.iter().map(|z| z.exp()).collect();
                assert_near(&widen(&exp), &want, SINGLE, 32.0, "exp");
                let want: Vec<W> = wa.iter().map(|z| z.ln()).collect();
                assert_near(&widen(&ln), &want, SINGLE, 32.0, "ln");
                let want: Vec<W> = wa.iter().map(|z| z.sqrt()).collect();
                assert_near(&widen(&sqrt), &want, SINGLE, 32.0, "sqrt");
                // The principal branch: sqrt(-4 +- 0i) = +-2i, ln's imaginary part +-pi.
                assert_eq!((sqrt[9].re as f64, sqrt[9].im as f64), (0.0, 2.0));
                assert_eq!((sqrt[10].re as f64, sqrt[10].im as f64), (0.0, -2.0));
                assert!(sqrt[10].im.is_sign_negative() && ln[10].im < 0.0 && ln[9].im > 0.0);
            }

            #[test]
            fn parts_casts_and_fused_broadcasts() {
                let _g = SERIAL.lock();
                let what = stringify!($name);
                let a = unary_data(31);
                let x = Array::from_vec(a.clone(), &[N]);
                let reals: Vec<F> = a.iter().map(|z| z.im).collect();
                let r = Array::from_vec(reals.clone(), &[N]);
                let (joined, cast) = checked(WIDE, what, || {
                    (read(&x.re().complex(&x.im())), read(&r.cast::<C>()))
                });
                assert_bits(&bits(&joined), &bits(&a), "complex(re, im)");
                let want: Vec<C> = reals.iter().map(|&v| C::new(v, 0.0)).collect();
                assert_bits(&bits(&cast), &bits(&want), "cast real to complex");

                // [rows, cols] times a broadcast row, plus the conjugate, its modulus: one fused
                // kernel with a strided load; and the complex row sums (a reduction reading
                // complex registers).
                let (rows, cols) = (37, 53);
                let m = random(32, rows * cols);
                let v = random(33, cols);
                let (xm, xv) = (
                    Array::from_vec(m.clone(), &[rows, cols]),
                    Array::from_vec(v.clone(), &[cols]),
                );
                let (modulus, sums) = checked(WIDE, what, || {
                    let p = &xm * &xv;
                    (read(&(&p + &xm.conj()).abs()), read(&p.sum_axis(1)))
                });
                let (wm, wv) = (widen(&m), widen(&v));
                let want: Vec<W> = (0..rows * cols)
                    .map(|i| W::new((wm[i] * wv[i % cols] + wm[i].conj()).norm(), 0.0))
                    .collect();
                let got: Vec<W> = modulus.iter().map(|&g| W::new(g as f64, 0.0)).collect();
                assert_near(&got, &want, SINGLE, 16.0, "|m v + conj m|");
                for (i, s) in sums.iter().enumerate() {
                    let terms: Vec<W> = (0..cols).map(|j| wm[i * cols + j] * wv[j]).collect();
                    let want: W = terms.iter().sum();
                    let scale: f64 = terms.iter().map(|t| t.norm()).sum();
                    let k = if SINGLE { cols as f64 * 4.0 } else { 8.0 };
                    let eps = if SINGLE {
                        f32::EPSILON as f64
                    } else {
                        f64::EPSILON
                    };
                    let err = (W::new(s.re as f64, s.im as f64) - want).norm();
                    assert!(err <= k * eps * scale, "row sum {i}: got {s}, want {want}");
                }
            }

            #[test]
            fn powers_polar_form_and_dot_products() {
                let _g = SERIAL.lock();
                let what = stringify!($name);
                let a = random(41, N);
                let x = Array::from_vec(a.clone(), &[N]);
                let wa = widen(&a);
                let (p7, pm3, p0) = checked(WIDE, what, || {
                    (read(&x.powi(7)), read(&x.powi(-3)), read(&x.powi(0)))
                });
                let want: Vec<W> = wa.iter().map(|z| z.powi(7)).collect();
                assert_near(&widen(&p7), &want, SINGLE, 32.0, "powi(7)");
                let want: Vec<W> = wa.iter().map(|z| W::new(1.0, 0.0) / z.powi(3)).collect();
                assert_near(&widen(&pm3), &want, SINGLE, 32.0, "powi(-3)");
                assert!(p0.iter().all(|z| z.re == 1.0 && z.im == 0.0), "powi(0)");

                let mut r = rng(43);
                let (mo, an) = (
                    rand_f64(&mut r, N, 0.0, 3.0),
                    rand_f64(&mut r, N, -7.0, 7.0),
                );
                let (mo, an): (Vec<F>, Vec<F>) = (
                    mo.iter().map(|&v| v as F).collect(),
                    an.iter().map(|&v| v as F).collect(),
                );
                let (rm, ra) = (
                    Array::from_vec(mo.clone(), &[N]),
                    Array::from_vec(an.clone(), &[N]),
                );
                let polar = checked(WIDE, what, || read(&Array::<C>::from_polar(&rm, &ra)));
                let want: Vec<W> = mo
                    .iter()
                    .zip(&an)
                    .map(|(&m, &t)| W::from_polar(m as f64, t as f64))
                    .collect();
                assert_near(&widen(&polar), &want, SINGLE, 32.0, "from_polar");

                let b = random(44, N);
                let y = Array::from_vec(b.clone(), &[N]);
                let wb = widen(&b);
                let (dot, vdot) = checked(WIDE, what, || (item(&x.dot(&y)), item(&x.vdot(&y))));
                let want_dot: W = wa.iter().zip(&wb).map(|(p, q)| p * q).sum();
                let want_vdot: W = wa.iter().zip(&wb).map(|(p, q)| p.conj() * q).sum();
                let scale: f64 = wa.iter().zip(&wb).map(|(p, q)| p.norm() * q.norm()).sum();
                let (eps, k) = if SINGLE {
                    (
                        f32::EPSILON as f64,
                        if f32_sums_in_f32() { N as f64 } else { 4.0 },
                    )
                } else {
                    (f64::EPSILON, 8.0)
                };
                for (got, want, name) in [(dot, want_dot, "dot"), (vdot, want_vdot, "vdot")] {
                    let err = (W::new(got.re as f64, got.im as f64) - want).norm();
                    assert!(err <= k * eps * scale, "{name}: got {got}, want {want}");
                }
            }

            /// Factors `(1 + d) e^{i t}` with `|d| <= 0.01` (the product of a few thousand neither
            /// overflows nor vanishes) and `t` anywhere on the circle.
            fn near_unit(seed: u64, n: usize) -> Vec<C> {
                let mut r = rng(seed);
                let m = rand_f64(&mut r, n, 0.99, 1.01);
                let t = rand_f64(&mut r, n, -3.2, 3.2);
                m.iter()
                    .zip(&t)
                    .map(|(&m, &t)| {
                        let z = W::from_polar(m, t);
                        C::new(z.re as F, z.im as F)
                    })
                    .collect()
            }

            #[test]
            fn products_match_num_complex() {
                let _g = SERIAL.lock();
                let what = concat!(stringify!($name), " prod");
                let one = W::new(1.0, 0.0);
                for (k, &n) in [1usize, 2, 7, 64, 255, 1000, N, 4099].iter().enumerate() {
                    let a = near_unit(60 + k as u64, 3 * n);
                    let w = widen(&a);
                    let tol = 8.0 * ((n as f64).log2() + 2.0);
                    let x = Array::from_vec(a[..n].to_vec(), &[n]);
                    // `m` is `[3, n]`; `mt` its transpose `[n, 3]`, contiguous.
                    let m = Array::from_vec(a.clone(), &[3, n]);
                    let t: Vec<C> = (0..3 * n).map(|i| a[(i % 3) * n + i / 3]).collect();
                    let mt = Array::from_vec(t, &[n, 3]);
                    let (whole, rows, cols) = checked(WIDE, what, || {
                        (
                            item(&x.prod()),
                            read(&m.prod_axis(1)),
                            read(&mt.prod_axis(0)),
                        )
                    });
                    let row = |i: usize| w[i * n..(i + 1) * n].iter().fold(one, |p, z| p * z);
                    let want: Vec<W> = (0..3).map(row).collect();
                    let label = format!("{what} n={n}");
                    assert_near(&widen(&[whole]), &want[..1], SINGLE, tol, &label);
                    assert_near(
                        &widen(&rows),
                        &want,
                        SINGLE,
                        tol,
                        &format!("{label} axis 1"),
                    );
                    assert_near(
                        &widen(&cols),
                        &want,
                        SINGLE,
                        tol,
                        &format!("{label} axis 0"),
                    );
                }
                // Both axes, and the empty product.
                let a = near_unit(70, 6 * 35);
                let m = Array::from_vec(a.clone(), &[6, 35]);
                let all = checked(WIDE, what, || item(&m.prod_axes(&[0, 1])));
                let want = widen(&a).iter().fold(one, |p, z| p * z);
                assert_near(&widen(&[all]), &[want], SINGLE, 8.0 * 10.0, "prod_axes");
                let e = Array::from_vec(Vec::<C>::new(), &[2, 0]);
                assert_eq!(
                    read(&e.prod_axis(1)),
                    vec![C::new(1.0, 0.0); 2],
                    "empty prod"
                );
                // A zero factor after factors whose product overflows: exactly 0, as the
                // sequential product (which starts from the zero) gives.
                let mut f = vec![C::new(0.0, 0.0)];
                f.extend(std::iter::repeat_n(C::new(($huge / 4.0) as F, 1.0), 63));
                let z = Array::from_vec(f, &[64]);
                assert_eq!(
                    item(&z.prod()),
                    C::new(0.0, 0.0),
                    "zero factor beside overflow"
                );
            }
        }
    };
}

suite!(c64, f32, false, huge: 2.5e38, tiny: 1.0e-30, big_exp: 80.0);
suite!(c128, f64, true, huge: 1.0e308, tiny: 1.0e-300, big_exp: 700.0);
