//! Complex element types (`Complex<f32>`, `Complex<f64>`) against num-complex evaluated in f64 on
//! the host, on seeded random data, plus edge cases (huge moduli, tiny divisors, NaN) and the
//! errors for operations complex numbers do not have.
//!
//! Tolerances (per part, relative to the modulus of the f64 oracle `|want|`):
//! - `+ - conj re im neg`, casts, `eq`/`ne`: exact (bit for bit where the result is a float).
//! - `*`, `/`, `abs`, `arg`, `exp`, `ln`, `sqrt`: `|got - want| <= k * eps * max(|want|, 1e-300)`
//!   with `eps` of the component type and `k = 8` (f32 results) or `k = 16` (f64), a few roundings
//!   of the formula (Smith's division rounds about four times, `exp` rounds `e^re`, `cos`, `sin`).
//! - `sum`, `mean`: `k * eps * sum |z_i|` with `k = 4` (f32 sums accumulate in f64 on the CPU;
//!   in f32 on wgpu, where the tolerance is `n * eps * sum |z_i|`).

mod common;

use arrayflow::{Array, Complex, ErrorKind};
use common::*;

type C32 = Complex<f32>;
type C64 = Complex<f64>;

const N: usize = 2000;

fn cplx32(r: &mut rand::rngs::StdRng, n: usize, lo: f32, hi: f32) -> Vec<C32> {
    let re = rand_f32(r, n, lo, hi);
    let im = rand_f32(r, n, lo, hi);
    re.into_iter()
        .zip(im)
        .map(|(a, b)| C32::new(a, b))
        .collect()
}

fn cplx64(r: &mut rand::rngs::StdRng, n: usize, lo: f64, hi: f64) -> Vec<C64> {
    let re = rand_f64(r, n, lo, hi);
    let im = rand_f64(r, n, lo, hi);
    re.into_iter()
        .zip(im)
        .map(|(a, b)| C64::new(a, b))
        .collect()
}

fn wide(z: C32) -> C64 {
    C64::new(z.re as f64, z.im as f64)
}

/// Each part of `got` within `k * eps * max(|want|, tiny)` of `want` (NaN parts must match NaN,
/// infinite parts the same infinity).
fn assert_near(got: &[C64], want: &[C64], eps: f64, k: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let allowed = k * eps * w.norm().max(1e-300);
        for (gp, wp, part) in [(g.re, w.re, "re"), (g.im, w.im, "im")] {
            let ok = if wp.is_nan() {
                gp.is_nan()
            } else if wp.is_infinite() {
                gp == wp
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

fn assert_bits32(got: &[C32], want: &[C32], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.re.to_bits() == w.re.to_bits() && g.im.to_bits() == w.im.to_bits(),
            "{what}: element {i}: got {g}, want {w} (bit for bit)"
        );
    }
    assert_eq!(got.len(), want.len());
}

fn assert_bits64(got: &[C64], want: &[C64], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.re.to_bits() == w.re.to_bits() && g.im.to_bits() == w.im.to_bits(),
            "{what}: element {i}: got {g}, want {w} (bit for bit)"
        );
    }
    assert_eq!(got.len(), want.len());
}

fn widen(v: &[C32]) -> Vec<C64> {
    v.iter().map(|&z| wide(z)).collect()
}

#[test]
fn round_trip_and_item() {
    let mut r = rng(1);
    let a = cplx32(&mut r, 37, -5.0, 5.0);
    let x = Array::from_vec(a.clone(), &[37]);
    assert_bits32(&read(&x), &a, "from_vec/to_vec");
    let b = cplx64(&mut r, 12, -5.0, 5.0);
    let y = Array::from_slice(&b, &[3, 4]);
    assert_bits64(&read(&y), &b, "from_slice/to_vec");
    let s = Array::scalar(C64::new(1.5, -2.25));
    assert_eq!(item(&s), C64::new(1.5, -2.25));
}

#[test]
fn exact_ops_are_bit_exact() {
    let mut r = rng(2);
    let (a, b) = (
        cplx32(&mut r, N, -100.0, 100.0),
        cplx32(&mut r, N, -100.0, 100.0),
    );
    let (x, y) = (
        Array::from_vec(a.clone(), &[N]),
        Array::from_vec(b.clone(), &[N]),
    );
    let zip =
        |f: fn(C32, C32) -> C32| -> Vec<C32> { a.iter().zip(&b).map(|(&p, &q)| f(p, q)).collect() };
    assert_bits32(
        &read(&(&x + &y)),
        &zip(|p, q| C32::new(p.re + q.re, p.im + q.im)),
        "add",
    );
    assert_bits32(
        &read(&(&x - &y)),
        &zip(|p, q| C32::new(p.re - q.re, p.im - q.im)),
        "sub",
    );
    let conj: Vec<C32> = a.iter().map(|z| C32::new(z.re, -z.im)).collect();
    assert_bits32(&read(&x.conj()), &conj, "conj");
    let neg: Vec<C32> = a.iter().map(|z| C32::new(-z.re, -z.im)).collect();
    assert_bits32(&read(&-&x), &neg, "neg");
    let re: Vec<f32> = a.iter().map(|z| z.re).collect();
    let im: Vec<f32> = a.iter().map(|z| z.im).collect();
    assert_same(&read(&x.re()), &re, "re");
    assert_same(&read(&x.im()), &im, "im");
    // Joining the parts again gives the input.
    let joined: Array<C32> = x.re().complex(&x.im());
    assert_bits32(&read(&joined), &a, "complex(re, im)");
    // f64: the same ops, fused into one kernel.
    let (c, d) = (cplx64(&mut r, N, -1e3, 1e3), cplx64(&mut r, N, -1e3, 1e3));
    let (u, v) = (
        Array::from_vec(c.clone(), &[N]),
        Array::from_vec(d.clone(), &[N]),
    );
    let want: Vec<C64> = c
        .iter()
        .zip(&d)
        .map(|(p, q)| C64::new(p.re + q.re - q.re, -(p.im + q.im - q.im)))
        .collect();
    assert_bits64(
        &read(&(&u + &v - &v).conj()),
        &want,
        "f64 (u + v - v).conj()",
    );
}

#[test]
fn mul_div_against_num_complex() {
    let mut r = rng(3);
    let (a, b) = (
        cplx32(&mut r, N, -10.0, 10.0),
        cplx32(&mut r, N, -10.0, 10.0),
    );
    let (x, y) = (
        Array::from_vec(a.clone(), &[N]),
        Array::from_vec(b.clone(), &[N]),
    );
    let (wa, wb) = (widen(&a), widen(&b));
    let prod: Vec<C64> = wa.iter().zip(&wb).map(|(p, q)| p * q).collect();
    let quot: Vec<C64> = wa.iter().zip(&wb).map(|(p, q)| p / q).collect();
    assert_near(
        &widen(&read(&(&x * &y))),
        &prod,
        f32::EPSILON as f64,
        8.0,
        "f32 mul",
    );
    assert_near(
        &widen(&read(&(&x / &y))),
        &quot,
        f32::EPSILON as f64,
        8.0,
        "f32 div",
    );
    let (c, d) = (
        cplx64(&mut r, N, -10.0, 10.0),
        cplx64(&mut r, N, -10.0, 10.0),
    );
    let (u, v) = (
        Array::from_vec(c.clone(), &[N]),
        Array::from_vec(d.clone(), &[N]),
    );
    let prod: Vec<C64> = c.iter().zip(&d).map(|(p, q)| p * q).collect();
    let quot: Vec<C64> = c.iter().zip(&d).map(|(p, q)| p / q).collect();
    assert_near(&read(&(&u * &v)), &prod, f64::EPSILON, 16.0, "f64 mul");
    assert_near(&read(&(&u / &v)), &quot, f64::EPSILON, 16.0, "f64 div");
}

#[test]
fn real_operands_converted_to_complex() {
    let mut r = rng(4);
    let a = cplx64(&mut r, N, -10.0, 10.0);
    let s = rand_f64(&mut r, N, 0.5, 4.0);
    let (z, x) = (
        Array::from_vec(a.clone(), &[N]),
        Array::from_vec(s.clone(), &[N]),
    );
    let want: Vec<C64> = a
        .iter()
        .zip(&s)
        .map(|(p, &q)| (p * 2.5 + C64::new(q, 0.0)) / q - 1.0)
        .collect();
    let xc = x.cast::<C64>();
    let got = (((&z * C64::new(2.5, 0.0)) + &xc) / &xc) - C64::new(1.0, 0.0);
    assert_near(
        &read(&got),
        &want,
        f64::EPSILON,
        16.0,
        "z * 2.5 + x / x - 1",
    );
    let want: Vec<C64> = a
        .iter()
        .map(|p| C64::new(3.0, 0.0) - C64::new(0.0, 1.0) * p)
        .collect();
    let got = C64::new(3.0, 0.0) - C64::new(0.0, 1.0) * &z;
    assert_near(&read(&got), &want, f64::EPSILON, 4.0, "3 - i z");
}

#[test]
fn functions_against_num_complex() {
    let mut r = rng(5);
    let a = cplx32(&mut r, N, -4.0, 4.0);
    let x = Array::from_vec(a.clone(), &[N]);
    let wa = widen(&a);
    let map = |f: fn(&C64) -> C64| -> Vec<C64> { wa.iter().map(f).collect() };
    let e32 = f32::EPSILON as f64;
    assert_near(
        &widen(&read(&x.exp())),
        &map(|z| z.exp()),
        e32,
        8.0,
        "f32 exp",
    );
    assert_near(&widen(&read(&x.ln())), &map(|z| z.ln()), e32, 8.0, "f32 ln");
    assert_near(
        &widen(&read(&x.sqrt())),
        &map(|z| z.sqrt()),
        e32,
        8.0,
        "f32 sqrt",
    );
    let abs: Vec<C64> = wa.iter().map(|z| C64::new(z.norm(), 0.0)).collect();
    let got: Vec<C64> = read(&x.abs())
        .iter()
        .map(|&v| C64::new(v as f64, 0.0))
        .collect();
    assert_near(&got, &abs, e32, 2.0, "f32 abs");
    let arg: Vec<C64> = wa.iter().map(|z| C64::new(z.arg(), 0.0)).collect();
    let got: Vec<C64> = read(&x.arg())
        .iter()
        .map(|&v| C64::new(v as f64, 0.0))
        .collect();
    assert_near(&got, &arg, e32, 8.0, "f32 arg");
    let b = cplx64(&mut r, N, -4.0, 4.0);
    let y = Array::from_vec(b.clone(), &[N]);
    let map = |f: fn(&C64) -> C64| -> Vec<C64> { b.iter().map(f).collect() };
    let e = f64::EPSILON;
    assert_near(&read(&y.exp()), &map(|z| z.exp()), e, 16.0, "f64 exp");
    assert_near(&read(&y.ln()), &map(|z| z.ln()), e, 16.0, "f64 ln");
    assert_near(&read(&y.sqrt()), &map(|z| z.sqrt()), e, 16.0, "f64 sqrt");
    // sqrt(z)^2 == z, a fused chain.
    assert_near(
        &read(&(&y.sqrt() * &y.sqrt())),
        &b,
        e,
        16.0,
        "f64 sqrt(z)^2",
    );
}

#[test]
fn edge_cases() {
    // abs of huge parts: no overflow of re^2 + im^2.
    let big = vec![
        C32::new(2e38, 2e38),
        C32::new(-3e38, 1e38),
        C32::new(1e-40, -1e-40),
    ];
    let got = read(&Array::from_vec(big.clone(), &[3]).abs());
    for (g, z) in got.iter().zip(&big) {
        let want = wide(*z).norm();
        // Relative 2 eps, or the subnormal quantum where the modulus is subnormal.
        let allowed = 2.0 * f32::EPSILON as f64 * want + f32::from_bits(1) as f64;
        assert!(
            g.is_finite() && ((*g as f64) - want).abs() <= allowed,
            "abs {z}: {g} vs {want}"
        );
    }
    let big = vec![C64::new(1e308, 1e308), C64::new(-1e308, 5e307)];
    let got = read(&Array::from_vec(big, &[2]).abs());
    let want = [1e308 * 2f64.sqrt(), (1.0f64 + 0.25).sqrt() * 1e308];
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.is_finite() && (g - w).abs() <= 4.0 * f64::EPSILON * w,
            "f64 abs: {g} vs {w}"
        );
    }
    // Division by a tiny complex number: |b|^2 would underflow to 0 (f32, f64).
    let a = Array::from_vec(vec![C32::new(1.0, 2.0), C32::new(-3.0, 0.5)], &[2]);
    let b = Array::from_vec(vec![C32::new(1e-30, 2e-30), C32::new(3e-25, -1e-25)], &[2]);
    let want: Vec<C64> = [
        (
            C64::new(1.0, 2.0),
            C64::new(1e-30f32 as f64, 2e-30f32 as f64),
        ),
        (
            C64::new(-3.0, 0.5),
            C64::new(3e-25f32 as f64, -1e-25f32 as f64),
        ),
    ]
    .iter()
    .map(|(p, q)| p / q)
    .collect();
    assert_near(
        &widen(&read(&(&a / &b))),
        &want,
        f32::EPSILON as f64,
        8.0,
        "f32 / tiny",
    );
    // f64: the oracle scales the divisor by 2^600 (exact) to keep num-complex's |b|^2 in range.
    let (p, q) = (C64::new(1.0, -2.0), C64::new(3e-300, 4e-300));
    let s = 2f64.powi(600);
    let want = (p / (q * s)) * s;
    let got = item(&(Array::scalar(p) / Array::scalar(q)));
    assert_near(&[got], &[want], f64::EPSILON, 16.0, "f64 / tiny");
    // NaN parts propagate; eq/ne follow IEEE per part.
    let n = Array::from_vec(
        vec![
            C64::new(f64::NAN, 0.0),
            C64::new(1.0, 2.0),
            C64::new(1.0, -0.0),
        ],
        &[3],
    );
    let m = Array::from_vec(
        vec![
            C64::new(f64::NAN, 0.0),
            C64::new(1.0, 2.0),
            C64::new(1.0, 0.0),
        ],
        &[3],
    );
    assert_same(&read(&n.eq(&m)), &[false, true, true], "eq");
    assert_same(&read(&n.ne(&m)), &[true, false, false], "ne");
    let s = read(&(&n + &m));
    assert!(s[0].re.is_nan() && s[1] == C64::new(2.0, 4.0));
}

#[test]
fn casts_from_real() {
    let mut r = rng(6);
    let v = rand_f32(&mut r, 100, -50.0, 50.0);
    let x = Array::from_vec(v.clone(), &[100]);
    let want: Vec<C32> = v.iter().map(|&a| C32::new(a, 0.0)).collect();
    assert_bits32(&read(&x.cast::<C32>()), &want, "f32 -> Complex<f32>");
    let want: Vec<C64> = v.iter().map(|&a| C64::new(a as f64, 0.0)).collect();
    assert_bits64(&read(&x.cast::<C64>()), &want, "f32 -> Complex<f64>");
    let i = Array::from_vec(vec![-3i32, 0, 7], &[3]);
    assert_bits64(
        &read(&i.cast::<C64>()),
        &[C64::new(-3.0, 0.0), C64::new(0.0, 0.0), C64::new(7.0, 0.0)],
        "i32 -> Complex<f64>",
    );
    let z = Array::from_vec(want.clone(), &[100]);
    let back: Vec<C32> = want
        .iter()
        .map(|z| C32::new(z.re as f32, z.im as f32))
        .collect();
    assert_bits32(
        &read(&z.cast::<C32>()),
        &back,
        "Complex<f64> -> Complex<f32>",
    );
}

#[test]
fn sums_and_means() {
    let mut r = rng(7);
    let shape = [37, 53];
    let a = cplx32(&mut r, 37 * 53, -1.0, 1.0);
    let x = Array::from_vec(a.clone(), &shape);
    let wa = widen(&a);
    let k = if f32_sums_in_f32() {
        (37 * 53) as f64
    } else {
        4.0
    };
    let total: C64 = wa.iter().sum();
    let scale: f64 = wa.iter().map(|z| z.norm()).sum();
    let tol = |v: f64| k * f32::EPSILON as f64 * v;
    let close = |g: C32, w: C64, s: f64, what: &str| {
        let g = wide(g);
        assert!(
            (g.re - w.re).abs() <= tol(s) && (g.im - w.im).abs() <= tol(s),
            "{what}: {g} vs {w}"
        );
    };
    close(item(&x.sum()), total, scale, "sum");
    close(
        item(&x.mean()),
        total / (37.0 * 53.0),
        scale / (37.0 * 53.0),
        "mean",
    );
    for axis in 0..2 {
        let (outer, n) = (shape[1 - axis], shape[axis]);
        let at = |o: usize, j: usize| {
            if axis == 0 {
                wa[j * 53 + o]
            } else {
                wa[o * 53 + j]
            }
        };
        let sums = read(&x.sum_axis(axis));
        let means = read(&x.mean_axis(axis));
        for o in 0..outer {
            let w: C64 = (0..n).map(|j| at(o, j)).sum();
            let s: f64 = (0..n).map(|j| at(o, j).norm()).sum();
            close(sums[o], w, s, &format!("sum_axis({axis})[{o}]"));
            close(
                means[o],
                w / n as f64,
                s / n as f64,
                &format!("mean_axis({axis})[{o}]"),
            );
        }
    }
    let b = cplx64(&mut r, 1000, -1.0, 1.0);
    let y = Array::from_vec(b.clone(), &[1000]);
    let total: C64 = b.iter().sum();
    let s: f64 = b.iter().map(|z| z.norm()).sum();
    let g = item(&y.sum());
    assert!(
        (g - total).norm() <= 8.0 * f64::EPSILON * s,
        "f64 sum {g} vs {total}"
    );
}

#[test]
fn unordered_ops_are_refused_at_the_call() {
    let z = Array::from_vec(vec![C32::new(1.0, 2.0)], &[1]);
    let err = z.try_rem(C32::new(1.0, 0.0)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DType, "{err}");
    assert!(
        err.to_string().contains("complex.rs"),
        "the error names the call: {err}"
    );
    for (what, f) in [
        (
            "lt",
            Box::new(|| drop(z.lt(C32::new(0.0, 0.0)))) as Box<dyn Fn()>,
        ),
        ("max", Box::new(|| drop(z.max()))),
        ("sort", Box::new(|| drop(z.sort()))),
        ("floor-like sign", Box::new(|| drop(z.sign()))),
        ("cast to f32", Box::new(|| drop(z.cast::<f32>()))),
    ] {
        let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err(what);
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(
            msg.contains("Complex<f32>") && msg.contains("complex.rs"),
            "{what}: {msg}"
        );
    }
}
