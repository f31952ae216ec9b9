//! Element-wise unary ops against independent oracles on seeded random data drawn from each
//! function's domain, plus boundary values and out-of-domain inputs (which must give NaN).
//!
//! Tolerances:
//! - f32 transcendental functions: the oracle is the f64 function evaluated on the exact f32 input;
//!   pass when |got - want| <= max(2e-6 * |want|, 1e-6) (the absolute term only matters near zeros).
//! - f64 transcendental functions: rel 1e-12 or abs 1e-13 against the f64 std functions.
//! - floor/ceil/trunc/round, abs, neg: exact and bitwise (sign of zero included).
//! - sign, is_nan, is_inf, integer and bool ops: exact.

mod common;

use arrayflow::Array;
use common::*;
use std::f64::consts::{E, FRAC_PI_2, PI};

const N: usize = 3000;

fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `N` values uniform in `[lo, hi)` followed by `extra`.
fn dom(r: &mut rand::rngs::StdRng, lo: f64, hi: f64, extra: &[f64]) -> Vec<f64> {
    let mut v = rand_f64(r, N, lo, hi);
    v.extend_from_slice(extra);
    v
}

/// `N` values with magnitude in `[lo, hi)` and random sign, followed by `extra`.
fn dom_signed(r: &mut rand::rngs::StdRng, lo: f64, hi: f64, extra: &[f64]) -> Vec<f64> {
    let mut v = rand_signed_mag(r, N, lo, hi);
    v.extend_from_slice(extra);
    v
}

/// Applies `op` to `xs` (converted to `T`) as a [len/…]-shaped array and compares with `oracle`
/// evaluated in f64 on the exact `T` inputs; then checks that every `nan_inputs` value gives NaN.
fn run<T: TestFloat>(
    name: &str,
    xs: &[f64],
    op: impl Fn(&Array<T>) -> Array<T>,
    oracle: impl Fn(f64) -> f64,
    nan_inputs: &[f64],
) {
    let x: Vec<T> = conv(xs);
    let a = Array::from_slice(&x, &[x.len()]);
    let got = read(&op(&a));
    let want: Vec<f64> = x.iter().map(|v| oracle(v.to())).collect();
    assert_close(&got, &want, T::REL, T::ABS, name);

    // The same op on a 2-D view of the data (another kernel shape) must agree exactly.
    let rows = x.len() / 7;
    let a2 = Array::from_slice(&x[..rows * 7], &[rows, 7]);
    let got2 = read(&op(&a2));
    assert_exact_f(&got2, &got[..rows * 7], &format!("{name} on [{rows}, 7]"));

    if !nan_inputs.is_empty() {
        let bad: Vec<T> = conv(nan_inputs);
        let out = read(&op(&Array::from_slice(&bad, &[bad.len()])));
        for (i, (o, b)) in out.iter().zip(&bad).enumerate() {
            assert!(
                o.to().is_nan(),
                "{name} ({}): input [{i}] {b:?} should give NaN, got {o:?}",
                T::name()
            );
        }
    }
}

macro_rules! float_unary {
    ($test:ident, $m:ident, $oracle:expr, |$r:ident| $dom:expr, [$($nan:expr),* $(,)?]) => {
        #[test]
        fn $test() {
            let mut $r = rng(seed_of(stringify!($m)));
            let xs: Vec<f64> = $dom;
            let nan: &[f64] = &[$($nan),*];
            run::<f32>(stringify!($m), &xs, |a| a.$m(), $oracle, nan);
            run::<f64>(stringify!($m), &xs, |a| a.$m(), $oracle, nan);
        }
    };
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

float_unary!(
    exp,
    exp,
    f64::exp,
    |r| dom(
        &mut r,
        -80.0,
        80.0,
        &[0.0, -0.0, 1.0, 100.0, -200.0, INF, -INF]
    ),
    [NAN]
);
float_unary!(
    exp2,
    exp2,
    f64::exp2,
    |r| dom(
        &mut r,
        -120.0,
        120.0,
        &[0.0, 1.0, 10.0, -1.0, 130.0, INF, -INF]
    ),
    [NAN]
);
float_unary!(
    sqrt,
    sqrt,
    f64::sqrt,
    |r| dom(&mut r, 0.0, 1e4, &[0.0, -0.0, 1.0, 4.0, 1e30, INF]),
    [-1.0, -1e-30, -INF, NAN]
);
float_unary!(
    rsqrt,
    rsqrt,
    |x: f64| 1.0 / x.sqrt(),
    |r| dom(&mut r, 1e-3, 1e4, &[1.0, 4.0, 0.25, 0.0, -0.0, INF]),
    [-1.0, -INF, NAN]
);
float_unary!(
    cbrt,
    cbrt,
    f64::cbrt,
    |r| dom(
        &mut r,
        -1e3,
        1e3,
        &[0.0, -0.0, 8.0, -27.0, 1e-30, INF, -INF]
    ),
    [NAN]
);
float_unary!(
    ln,
    ln,
    f64::ln,
    |r| dom(&mut r, 1e-3, 1e4, &[1.0, E, 0.0, 1e-30, INF]),
    [-1.0, -1e-30, -INF, NAN]
);
float_unary!(
    log10,
    log10,
    f64::log10,
    |r| dom(&mut r, 1e-3, 1e4, &[1.0, 10.0, 100.0, 1000.0, 0.0, INF]),
    [-1.0, -INF, NAN]
);
float_unary!(
    log2,
    log2,
    f64::log2,
    |r| dom(&mut r, 1e-3, 1e4, &[1.0, 2.0, 1024.0, 0.5, 0.0, INF]),
    [-1.0, -INF, NAN]
);
float_unary!(
    sin,
    sin,
    f64::sin,
    |r| dom(
        &mut r,
        -10.0,
        10.0,
        &[0.0, -0.0, FRAC_PI_2, PI, 100.0, -1000.0]
    ),
    [INF, -INF, NAN]
);
float_unary!(
    cos,
    cos,
    f64::cos,
    |r| dom(
        &mut r,
        -10.0,
        10.0,
        &[0.0, -0.0, FRAC_PI_2, PI, 100.0, -1000.0]
    ),
    [INF, -INF, NAN]
);
float_unary!(
    tan,
    tan,
    f64::tan,
    |r| dom(&mut r, -1.5, 1.5, &[0.0, -0.0, 1.0, -1.0, 3.0]),
    [INF, -INF, NAN]
);
float_unary!(
    sec,
    sec,
    |x: f64| 1.0 / x.cos(),
    |r| dom(&mut r, -1.5, 1.5, &[0.0, 3.0, -3.0]),
    [INF, NAN]
);
float_unary!(
    csc,
    csc,
    |x: f64| 1.0 / x.sin(),
    |r| dom_signed(&mut r, 0.05, 3.1, &[1.0, -1.0, 2.0, 0.0, -0.0]),
    [INF, NAN]
);
float_unary!(
    cot,
    cot,
    |x: f64| 1.0 / x.tan(),
    |r| dom_signed(&mut r, 0.05, 1.5, &[1.0, 0.0, -0.0]),
    [INF, NAN]
);
float_unary!(
    asin,
    asin,
    f64::asin,
    |r| dom(&mut r, -1.0, 1.0, &[1.0, -1.0, 0.0, -0.0, 0.5]),
    [1.5, -1.0001, INF, NAN]
);
float_unary!(
    acos,
    acos,
    f64::acos,
    |r| dom(&mut r, -1.0, 1.0, &[1.0, -1.0, 0.0, -0.0, 0.5]),
    [1.5, -1.0001, INF, NAN]
);
float_unary!(
    atan,
    atan,
    f64::atan,
    |r| dom(&mut r, -50.0, 50.0, &[0.0, -0.0, 1.0, 1e10, INF, -INF]),
    [NAN]
);
float_unary!(
    asec,
    asec,
    |x: f64| (1.0 / x).acos(),
    |r| dom_signed(&mut r, 1.05, 50.0, &[1.0, -1.0, 2.0, INF, -INF]),
    [0.5, -0.5, 0.0, NAN]
);
float_unary!(
    acsc,
    acsc,
    |x: f64| (1.0 / x).asin(),
    |r| dom_signed(&mut r, 1.05, 50.0, &[1.0, -1.0, 2.0, INF, -INF]),
    [0.5, -0.99, 0.0, NAN]
);
float_unary!(
    acot,
    acot,
    |x: f64| (1.0 / x).atan(),
    |r| dom_signed(&mut r, 0.01, 50.0, &[1.0, -1.0, 0.0, -0.0, INF]),
    [NAN]
);
float_unary!(
    sinh,
    sinh,
    f64::sinh,
    |r| dom(
        &mut r,
        -10.0,
        10.0,
        &[0.0, -0.0, 1e-10, 50.0, 100.0, INF, -INF]
    ),
    [NAN]
);
float_unary!(
    cosh,
    cosh,
    f64::cosh,
    |r| dom(&mut r, -10.0, 10.0, &[0.0, -0.0, 50.0, 100.0, INF, -INF]),
    [NAN]
);
float_unary!(
    tanh,
    tanh,
    f64::tanh,
    |r| dom(&mut r, -10.0, 10.0, &[0.0, -0.0, 1e-10, 20.0, INF, -INF]),
    [NAN]
);
float_unary!(
    sech,
    sech,
    |x: f64| 1.0 / x.cosh(),
    |r| dom(&mut r, -10.0, 10.0, &[0.0, 100.0, INF, -INF]),
    [NAN]
);
float_unary!(
    csch,
    csch,
    |x: f64| 1.0 / x.sinh(),
    |r| dom_signed(&mut r, 0.01, 10.0, &[0.0, -0.0, 100.0, INF]),
    [NAN]
);
float_unary!(
    coth,
    coth,
    |x: f64| 1.0 / x.tanh(),
    |r| dom_signed(&mut r, 0.01, 10.0, &[0.0, -0.0, 30.0, INF, -INF]),
    [NAN]
);
float_unary!(
    asinh,
    asinh,
    f64::asinh,
    |r| dom(
        &mut r,
        -100.0,
        100.0,
        &[0.0, -0.0, 1e-10, 1e10, -1e10, INF, -INF]
    ),
    [NAN]
);
float_unary!(
    acosh,
    acosh,
    f64::acosh,
    |r| dom(&mut r, 1.0, 100.0, &[1.0, 2.0, 1e10, INF]),
    [0.5, 0.0, -1.0, -INF, NAN]
);
float_unary!(
    atanh,
    atanh,
    f64::atanh,
    |r| dom(&mut r, -0.99, 0.99, &[0.0, -0.0, 0.5, 1.0, -1.0]),
    [2.0, -1.5, INF, NAN]
);

/// Logarithm in an arbitrary base: oracle ln(x) / ln(base) in f64, transcendental tolerance.
#[test]
fn log_base() {
    let mut r = rng(seed_of("log_base"));
    let xs = dom(&mut r, 1e-3, 1e4, &[1.0, 9.0, 0.5, INF]);
    for base in [3.0f64, 0.5, 10.0, 2.0] {
        run::<f32>(
            &format!("log({base})"),
            &xs,
            |a| a.log(base as f32),
            |x| x.ln() / base.ln(),
            &[-1.0, NAN],
        );
        run::<f64>(
            &format!("log({base})"),
            &xs,
            |a| a.log(base),
            |x| x.ln() / base.ln(),
            &[-1.0, NAN],
        );
    }
}

/// Values for the rounding ops: random reals, exact halves, signed zeros, huge values, and
/// f32 integers around 2^23/2^24 (where f32 has no fraction bits left).
fn rounding_inputs(r: &mut rand::rngs::StdRng) -> Vec<f64> {
    let mut xs = rand_f64(r, N, -100.0, 100.0);
    for k in -6..6 {
        xs.push(k as f64 + 0.5);
    }
    xs.extend_from_slice(&[
        0.0,
        -0.0,
        0.4,
        -0.4,
        0.6,
        -0.6,
        0.49999997,
        -0.49999997,
        1e20,
        -1e20,
    ]);
    xs.extend_from_slice(&[8388607.5, -8388607.5, 8388609.0, 16777217.0, INF, -INF]);
    xs
}

/// Independent rounding oracles (f64 arithmetic; results are integers, so the cast to f32 is exact).
fn o_floor(x: f64) -> f64 {
    let t = x.trunc();
    if x < t { t - 1.0 } else { t }
}
fn o_ceil(x: f64) -> f64 {
    let t = x.trunc();
    if x > t {
        t + 1.0
    } else if x < 0.0 && t == 0.0 {
        -0.0
    } else {
        t
    }
}
/// Toward zero, keeping the sign of a zero result.
fn o_trunc(x: f64) -> f64 {
    if x.is_infinite() {
        x
    } else {
        (x - x % 1.0).copysign(x)
    }
}
/// Half away from zero; keeps the sign of a zero result.
fn o_round(x: f64) -> f64 {
    let t = x.trunc();
    if (x - t).abs() >= 0.5 {
        t + x.signum()
    } else {
        t
    }
}

fn check_rounding<T: TestFloat>(
    name: &str,
    xs: &[f64],
    op: impl Fn(&Array<T>) -> Array<T>,
    oracle: impl Fn(f64) -> f64,
) {
    let x: Vec<T> = conv(xs);
    let got = read(&op(&Array::from_slice(&x, &[x.len()])));
    let want: Vec<T> = x.iter().map(|v| T::of(oracle(v.to()))).collect();
    assert_bits_f(&got, &want, name);
    let nan = read(&op(&Array::from_slice(&[T::of(NAN)], &[1])));
    assert!(nan[0].to().is_nan(), "{name}(NaN) should be NaN");
}

#[test]
fn floor_ceil_trunc_round() {
    let mut r = rng(seed_of("rounding"));
    let xs = rounding_inputs(&mut r);
    check_rounding::<f32>("floor", &xs, |a| a.floor(), o_floor);
    check_rounding::<f64>("floor", &xs, |a| a.floor(), o_floor);
    check_rounding::<f32>("ceil", &xs, |a| a.ceil(), o_ceil);
    check_rounding::<f64>("ceil", &xs, |a| a.ceil(), o_ceil);
    check_rounding::<f32>("trunc", &xs, |a| a.trunc(), o_trunc);
    check_rounding::<f64>("trunc", &xs, |a| a.trunc(), o_trunc);
    check_rounding::<f32>("round", &xs, |a| a.round(), o_round);
    check_rounding::<f64>("round", &xs, |a| a.round(), o_round);
}

/// Round is half away from zero (not half to even): spot values.
#[test]
fn round_half_away_from_zero() {
    let x = [0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51];
    let got = read(&Array::from_slice(&x, &[8]).round());
    assert_same(
        &got,
        &[1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 3.0, -4.0],
        "round f32 halves",
    );
    let x = [0.5f64, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51];
    let got = read(&Array::from_slice(&x, &[8]).round());
    assert_same(
        &got,
        &[1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 3.0, -4.0],
        "round f64 halves",
    );
}

fn float_sign_ops<T: TestFloat>(xs: &[f64]) {
    let x: Vec<T> = conv(xs);
    let a = Array::from_slice(&x, &[x.len()]);
    let abs = read(&a.abs());
    let neg = read(&(-&a));
    let neg_owned = read(&(-a.clone()));
    let sign = read(&a.sign());
    let want_abs: Vec<T> = x
        .iter()
        .map(|v| T::of(f64::from_bits(v.to().to_bits() & !(1u64 << 63))))
        .collect();
    let want_neg: Vec<T> = x
        .iter()
        .map(|v| T::of(f64::from_bits(v.to().to_bits() ^ (1u64 << 63))))
        .collect();
    let want_sign: Vec<T> = x
        .iter()
        .map(|v| {
            let v = v.to();
            T::of(if v.is_nan() {
                NAN
            } else if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                0.0
            })
        })
        .collect();
    assert_bits_f(&abs, &want_abs, "abs");
    assert_bits_f(&neg, &want_neg, "neg (borrowed)");
    assert_bits_f(&neg_owned, &want_neg, "neg (owned)");
    // sign: -1, 0 or 1; NaN stays NaN (the sign of a zero result is not checked).
    assert_exact_f(&sign, &want_sign, "sign");
}

#[test]
fn abs_neg_sign_float() {
    let mut r = rng(seed_of("abs_neg_sign"));
    let mut xs = rand_f64(&mut r, N, -1e3, 1e3);
    xs.extend_from_slice(&[0.0, -0.0, 1e-40, -1e-40, INF, -INF, NAN, 1.0, -1.0]);
    float_sign_ops::<f32>(&xs);
    float_sign_ops::<f64>(&xs);
}

#[test]
fn abs_neg_sign_not_i32() {
    let mut r = rng(seed_of("int_unary_i32"));
    let mut x = rand_i32_any(&mut r, N);
    x.extend_from_slice(&[0, 1, -1, i32::MIN, i32::MAX, i32::MIN + 1]);
    let a = Array::from_slice(&x, &[x.len()]);
    assert_same(
        &read(&(-&a)),
        &x.iter().map(|v| v.wrapping_neg()).collect::<Vec<_>>(),
        "i32 neg (wrapping)",
    );
    assert_same(
        &read(&a.abs()),
        &x.iter().map(|v| v.wrapping_abs()).collect::<Vec<_>>(),
        "i32 abs (wrapping)",
    );
    assert_same(
        &read(&a.sign()),
        &x.iter().map(|v| v.signum()).collect::<Vec<_>>(),
        "i32 sign",
    );
    assert_same(
        &read(&!&a),
        &x.iter().map(|v| !v).collect::<Vec<_>>(),
        "i32 !",
    );
    assert_same(
        &read(&a.not()),
        &x.iter().map(|v| !v).collect::<Vec<_>>(),
        "i32 not()",
    );
    assert_same(
        &read(&!a.clone()),
        &x.iter().map(|v| !v).collect::<Vec<_>>(),
        "i32 ! (owned)",
    );
}

#[test]
fn abs_neg_sign_not_u32() {
    let mut r = rng(seed_of("int_unary_u32"));
    let mut x = rand_u32_any(&mut r, N);
    x.extend_from_slice(&[0, 1, u32::MAX, 1 << 31]);
    let a = Array::from_slice(&x, &[x.len()]);
    assert_same(
        &read(&(-&a)),
        &x.iter().map(|v| v.wrapping_neg()).collect::<Vec<_>>(),
        "u32 neg (wrapping)",
    );
    assert_same(&read(&a.abs()), &x, "u32 abs (identity)");
    assert_same(
        &read(&a.sign()),
        &x.iter().map(|&v| (v > 0) as u32).collect::<Vec<_>>(),
        "u32 sign",
    );
    assert_same(
        &read(&!&a),
        &x.iter().map(|v| !v).collect::<Vec<_>>(),
        "u32 !",
    );
    assert_same(
        &read(&a.not()),
        &x.iter().map(|v| !v).collect::<Vec<_>>(),
        "u32 not()",
    );
}

#[test]
fn not_bool() {
    let mut r = rng(seed_of("not_bool"));
    let x = rand_bool(&mut r, N, 0.5);
    let a = Array::from_slice(&x, &[x.len()]);
    let want: Vec<bool> = x.iter().map(|v| !v).collect();
    assert_same(&read(&!&a), &want, "bool ! (borrowed)");
    assert_same(&read(&!a.clone()), &want, "bool ! (owned)");
    assert_same(&read(&a.not()), &want, "bool not()");
    assert_same(&read(&!!&a), &x, "bool !!");
}

fn nan_inf_preds<T: TestFloat>(xs: &[f64]) {
    let x: Vec<T> = conv(xs);
    let a = Array::from_slice(&x, &[x.len()]);
    assert_same(
        &read(&a.is_nan()),
        &x.iter().map(|v| v.to().is_nan()).collect::<Vec<_>>(),
        "is_nan",
    );
    assert_same(
        &read(&a.is_inf()),
        &x.iter().map(|v| v.to().is_infinite()).collect::<Vec<_>>(),
        "is_inf",
    );
}

#[test]
fn is_nan_is_inf() {
    let mut r = rng(seed_of("is_nan"));
    let mut xs = rand_f64(&mut r, N, -1e3, 1e3);
    // Sprinkle specials at random positions.
    for i in 0..xs.len() / 10 {
        let p = (i * 7919) % xs.len();
        xs[p] = [NAN, INF, -INF, f64::MAX, 0.0][i % 5];
    }
    nan_inf_preds::<f32>(&xs);
    nan_inf_preds::<f64>(&xs);
    // f64::MAX overflows to inf in f32 only.
    let f = read(&Array::from_slice(&[f64::MAX as f32], &[1]).is_inf());
    assert!(f[0], "f32 of f64::MAX is inf");
    let d = read(&Array::from_slice(&[f64::MAX], &[1]).is_inf());
    assert!(!d[0], "f64::MAX is finite");
}

/// Unary ops applied to constants are folded at record time; the folded value must equal what the
/// kernel computes for the same input (both f32 and f64), and the oracle.
#[test]
fn constant_folded_unary_matches_kernel() {
    type F32Op = fn(&Array<f32>) -> Array<f32>;
    type Case = (&'static str, F32Op, fn(f64) -> f64);
    let ops: Vec<Case> = vec![
        ("exp", |a| a.exp(), f64::exp),
        ("exp2", |a| a.exp2(), f64::exp2),
        ("sqrt", |a| a.sqrt(), f64::sqrt),
        ("rsqrt", |a| a.rsqrt(), |x| 1.0 / x.sqrt()),
        ("cbrt", |a| a.cbrt(), f64::cbrt),
        ("ln", |a| a.ln(), f64::ln),
        ("log10", |a| a.log10(), f64::log10),
        ("log2", |a| a.log2(), f64::log2),
        ("sin", |a| a.sin(), f64::sin),
        ("cos", |a| a.cos(), f64::cos),
        ("tan", |a| a.tan(), f64::tan),
        ("sec", |a| a.sec(), |x| 1.0 / x.cos()),
        ("csc", |a| a.csc(), |x| 1.0 / x.sin()),
        ("cot", |a| a.cot(), |x| 1.0 / x.tan()),
        ("asin", |a| a.asin(), f64::asin),
        ("acos", |a| a.acos(), f64::acos),
        ("atan", |a| a.atan(), f64::atan),
        ("asec", |a| a.asec(), |x| (1.0 / x).acos()),
        ("acsc", |a| a.acsc(), |x| (1.0 / x).asin()),
        ("acot", |a| a.acot(), |x| (1.0 / x).atan()),
        ("sinh", |a| a.sinh(), f64::sinh),
        ("cosh", |a| a.cosh(), f64::cosh),
        ("tanh", |a| a.tanh(), f64::tanh),
        ("sech", |a| a.sech(), |x| 1.0 / x.cosh()),
        ("csch", |a| a.csch(), |x| 1.0 / x.sinh()),
        ("coth", |a| a.coth(), |x| 1.0 / x.tanh()),
        ("asinh", |a| a.asinh(), f64::asinh),
        ("acosh", |a| a.acosh(), f64::acosh),
        ("atanh", |a| a.atanh(), f64::atanh),
        ("floor", |a| a.floor(), f64::floor),
        ("ceil", |a| a.ceil(), f64::ceil),
        ("trunc", |a| a.trunc(), f64::trunc),
        ("round", |a| a.round(), f64::round),
        ("abs", |a| a.abs(), f64::abs),
        ("neg", |a| -a, |x| -x),
    ];
    for x in [0.375f32, -0.625, 1.75, -2.5, 7.0] {
        let data = Array::from_slice(&[x, x, x], &[3]);
        let konst = Array::full(&[3], x);
        let scalar = Array::scalar(x);
        for (name, op, oracle) in &ops {
            let k = read(&op(&data));
            let f = read(&op(&konst));
            let s = read(&op(&scalar));
            assert_eq!(f.len(), 3, "{name}: folded shape");
            assert_eq!(s.len(), 1, "{name}: 0-d shape");
            assert!(
                same_on_executor(k[0] as f64, f[0] as f64, true),
                "{name}({x}): folded {} != kernel {}",
                f[0],
                k[0]
            );
            assert!(
                same_on_executor(k[0] as f64, s[0] as f64, true),
                "{name}({x}): 0-d {} != kernel {}",
                s[0],
                k[0]
            );
            assert_close(
                &k,
                &[oracle(x as f64); 3],
                2e-6,
                1e-6,
                &format!("{name}({x})"),
            );
        }
        let b = Array::full(&[2], x as f64);
        assert_close(
            &read(&b.exp()),
            &[(x as f64).exp(); 2],
            1e-12,
            1e-13,
            "f64 folded exp",
        );
        assert_same(
            &read(&Array::full(&[2], x).is_nan()),
            &[false, false],
            "folded is_nan",
        );
    }
}

/// A long fused chain of unary and binary ops vs the f64 oracle. Tolerance: f32 rel 1e-5 / abs 1e-5
/// (a few roundings of each op compound); f64 rel 1e-12 / abs 1e-13.
#[test]
fn fused_unary_chain() {
    let mut r = rng(seed_of("chain"));
    let xs = rand_f64(&mut r, 10_000, 0.1, 3.0);
    let oracle = |x: f64| ((x.sin() * x.cos() + x.exp().ln()).sqrt() + x.tanh().abs()).cbrt();
    let want: Vec<f64> = xs.iter().map(|&x| oracle(x as f32 as f64)).collect();
    let a = Array::from_slice(&conv::<f32>(&xs), &[100, 100]);
    let got = read(&((&a.sin() * &a.cos() + a.exp().ln()).sqrt() + a.tanh().abs()).cbrt());
    assert_close(&got, &want, 1e-5, 1e-5, "fused chain f32");
    let want: Vec<f64> = xs.iter().map(|&x| oracle(x)).collect();
    let a = Array::from_slice(&xs, &[100, 100]);
    let got = read(&((&a.sin() * &a.cos() + a.exp().ln()).sqrt() + a.tanh().abs()).cbrt());
    assert_close(&got, &want, 1e-12, 1e-13, "fused chain f64");
}

/// acosh just above 1, where random draws rarely land and results are small, so the tolerance is
/// relative only (f32: 2e-6, f64: 1e-12; a correctly rounded function is within 1 ulp). Oracle:
/// acosh(1 + t) = ln1p(t + sqrt(t (t + 2))) with t = x - 1 exact, in f64 (a few f64 ulp).
fn acosh_oracle(x: f64) -> f64 {
    let t = x - 1.0;
    (t + (t * (t + 2.0)).sqrt()).ln_1p()
}

#[test]
fn acosh_near_one_f32() {
    let xs: Vec<f64> = (4..24)
        .map(|k| 1.0 + 2f64.powi(-k))
        .chain([1.000001, 1.0001, 1.001, 1.01])
        .collect();
    let x: Vec<f32> = conv(&xs);
    let got = read(&Array::from_slice(&x, &[x.len()]).acosh());
    let want: Vec<f64> = x.iter().map(|&v| acosh_oracle(v as f64)).collect();
    assert_close(&got, &want, f32::REL, 0.0, "acosh near 1 (relative)");
}

#[test]
fn acosh_near_one_f64() {
    let xs: Vec<f64> = (4..44).map(|k| 1.0 + 2f64.powi(-k)).collect();
    let got = read(&Array::from_slice(&xs, &[xs.len()]).acosh());
    let want: Vec<f64> = xs.iter().map(|&v| acosh_oracle(v)).collect();
    assert_close(&got, &want, f64::REL, 0.0, "acosh near 1 (relative)");
}

/// asec and acsc just outside [-1, 1], relative tolerance only (as for acosh above). Independent
/// oracles in f64: with g = sqrt((|x| - 1)(|x| + 1)), asec(x) = atan(g) for x > 0 and pi - atan(g)
/// for x < 0; acsc(x) = sign(x) atan(1 / g).
fn asec_acsc_near_one<T: TestFloat + std::panic::RefUnwindSafe>() {
    let mags: Vec<f64> = (6..if T::name() == "f32" { 20 } else { 40 })
        .map(|k| 1.0 + 2f64.powi(-k))
        .chain([1.001, 1.01])
        .collect();
    let xs: Vec<f64> = mags.iter().flat_map(|&m| [m, -m]).collect();
    let g = |x: f64| ((x.abs() - 1.0) * (x.abs() + 1.0)).sqrt();
    let x: Vec<T> = conv(&xs);
    let a = Array::from_slice(&x, &[x.len()]);
    let w: Vec<f64> = x
        .iter()
        .map(|v| v.to())
        .map(|v| {
            if v > 0.0 {
                g(v).atan()
            } else {
                PI - g(v).atan()
            }
        })
        .collect();
    let got = read(&a.asec());
    let asec = std::panic::catch_unwind(|| {
        assert_close(&got, &w, T::REL, 0.0, "asec near +-1 (relative)")
    });
    let w: Vec<f64> = x
        .iter()
        .map(|v| v.to())
        .map(|v| (1.0 / g(v)).atan().copysign(v))
        .collect();
    let got = read(&a.acsc());
    let acsc = std::panic::catch_unwind(|| {
        assert_close(&got, &w, T::REL, 0.0, "acsc near +-1 (relative)")
    });
    // Both are checked; the failures are reported together.
    let msgs: Vec<String> = [asec, acsc]
        .into_iter()
        .filter_map(|r| r.err())
        .map(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
        .collect();
    assert!(msgs.is_empty(), "{}", msgs.join("\n"));
}

#[test]
fn asec_acsc_near_one_f32() {
    asec_acsc_near_one::<f32>();
}

#[test]
fn asec_acsc_near_one_f64() {
    asec_acsc_near_one::<f64>();
}
