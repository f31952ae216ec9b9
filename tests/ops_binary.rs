//! Element-wise binary ops against independent oracles on seeded random data: every operator form
//! (array-array, array-scalar, scalar-array, owned and borrowed, compound assignment), the math
//! methods (rem, modulo, pow, powi, atan2, minimum, maximum, clamp), comparisons, logical and
//! bitwise ops, and integer division by zero (reading the result returns `Err`).
//!
//! Tolerances:
//! - add, sub, mul, div and float `%` (fmod) are correctly rounded/exact in IEEE arithmetic, so the oracle is
//!   the same operation done by Rust on the same values: exact (NaN equal to NaN). Float floored
//!   `modulo` is computed in f64 (fmod exact, then one rounded add): exact.
//! - pow, atan2: f32 rel 2e-6 or abs 1e-6 vs f64; f64 rel 1e-12 or abs 1e-13.
//! - powi: f32 rel 2e-6 (a chain of at most ~8 multiplications); f64 rel 1e-12.
//! - integers (wrapping), comparisons, bool and bitwise ops, minimum/maximum/clamp: exact.

mod common;

use arrayflow::{Array, ErrorKind};
use common::*;

const N: usize = 2000;
const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

/// Checks one operator in every form against `f` (the oracle on one pair of elements).
macro_rules! check_forms {
    ($name:expr, $x:expr, $y:expr, $s:expr, $op:tt, $aop:tt, $f:expr, $cmp:ident) => {{
        let (x, y, s) = ($x, $y, $s);
        let name: &str = $name;
        let n = x.len();
        let a = Array::from_slice(&x, &[n]);
        let b = Array::from_slice(&y, &[n]);
        let f = $f;
        let want_ab: Vec<_> = x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect();
        let want_as: Vec<_> = x.iter().map(|&p| f(p, s)).collect();
        let want_sa: Vec<_> = x.iter().map(|&p| f(s, p)).collect();
        $cmp(&read(&(&a $op &b)), &want_ab, &format!("{name}: &a op &b"));
        $cmp(&read(&(&a $op b.clone())), &want_ab, &format!("{name}: &a op b"));
        $cmp(&read(&(a.clone() $op &b)), &want_ab, &format!("{name}: a op &b"));
        $cmp(&read(&(a.clone() $op b.clone())), &want_ab, &format!("{name}: a op b"));
        $cmp(&read(&(&a $op s)), &want_as, &format!("{name}: &a op scalar"));
        $cmp(&read(&(a.clone() $op s)), &want_as, &format!("{name}: a op scalar"));
        $cmp(&read(&(s $op &a)), &want_sa, &format!("{name}: scalar op &a"));
        $cmp(&read(&(s $op a.clone())), &want_sa, &format!("{name}: scalar op a"));
        let mut c = a.clone();
        c $aop &b;
        $cmp(&read(&c), &want_ab, &format!("{name}: a op= &b"));
        let mut c = a.clone();
        c $aop b.clone();
        $cmp(&read(&c), &want_ab, &format!("{name}: a op= b"));
        let mut c = a.clone();
        c $aop s;
        $cmp(&read(&c), &want_as, &format!("{name}: a op= scalar"));
        // A 0-d array as the right-hand side behaves like the scalar.
        $cmp(&read(&(&a $op Array::scalar(s))), &want_as, &format!("{name}: &a op 0-d array"));
        // The compound assignments above rebound clones; the original is untouched.
        $cmp(&read(&a), &x, &format!("{name}: operand unchanged"));
    }};
}

/// Float data: random values of both signs with NaN, infinities and signed zeros sprinkled in.
fn float_data(r: &mut rand::rngs::StdRng, lo: f64, hi: f64) -> Vec<f64> {
    let mut v = rand_f64(r, N, lo, hi);
    let specials = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0];
    for (i, s) in specials.iter().enumerate() {
        let p = (i * 131 + 17) % v.len();
        v[p] = *s;
    }
    v
}

/// Scalar-on-the-left operators exist for the concrete types only, hence a macro.
macro_rules! arith_float {
    ($t:ty, $seed:expr) => {{
        let mut r = rng($seed);
        let x: Vec<$t> = conv(&float_data(&mut r, -100.0, 100.0));
        let y: Vec<$t> = conv(&float_data(&mut r, -100.0, 100.0));
        let s: $t = -2.75;
        check_forms!("add", x.clone(), y.clone(), s, +, +=, |p: $t, q: $t| p + q, assert_exact_f);
        check_forms!("sub", x.clone(), y.clone(), s, -, -=, |p: $t, q: $t| p - q, assert_exact_f);
        check_forms!("mul", x.clone(), y.clone(), s, *, *=, |p: $t, q: $t| p * q, assert_exact_f);
        check_forms!("div", x.clone(), y.clone(), s, /, /=, |p: $t, q: $t| p / q, assert_exact_f);
        check_forms!("rem", x.clone(), y.clone(), s, %, %=, |p: $t, q: $t| p % q, assert_exact_f);
    }};
}

#[test]
fn arith_forms_f32() {
    arith_float!(f32, 101);
}

#[test]
fn arith_forms_f64() {
    arith_float!(f64, 102);
}

#[test]
fn arith_forms_i32() {
    let mut r = rng(103);
    let mut x = rand_i32_any(&mut r, N);
    x[..4].copy_from_slice(&[i32::MIN, i32::MAX, 0, -1]);
    let mut y = rand_i32_any(&mut r, N);
    y[..4].copy_from_slice(&[-1, 1, i32::MIN, i32::MAX]);
    check_forms!("add", x.clone(), y.clone(), -7i32, +, +=, |p: i32, q: i32| p.wrapping_add(q), assert_same);
    check_forms!("sub", x.clone(), y.clone(), i32::MIN, -, -=, |p: i32, q: i32| p.wrapping_sub(q), assert_same);
    check_forms!("mul", x.clone(), y.clone(), 65539i32, *, *=, |p: i32, q: i32| p.wrapping_mul(q), assert_same);
    // Division-like ops need non-zero divisors on both sides of the scalar forms.
    let nz =
        |v: Vec<i32>| -> Vec<i32> { v.into_iter().map(|q| if q == 0 { 3 } else { q }).collect() };
    let small: Vec<i32> = nz(rand_i32(&mut r, N, -1000, 1000));
    let xnz = nz(x.clone());
    check_forms!("div (big/small)", xnz.clone(), small.clone(), -7i32, /, /=, |p: i32, q: i32| p.wrapping_div(q), assert_same);
    check_forms!("div (any/any)", xnz.clone(), nz(y.clone()), -1i32, /, /=, |p: i32, q: i32| p.wrapping_div(q), assert_same);
    check_forms!("rem", xnz.clone(), small.clone(), 13i32, %, %=, |p: i32, q: i32| p.wrapping_rem(q), assert_same);
    check_forms!("rem (-1)", xnz, nz(y), -1i32, %, %=, |p: i32, q: i32| p.wrapping_rem(q), assert_same);
}

#[test]
fn arith_forms_u32() {
    let mut r = rng(104);
    let mut x = rand_u32_any(&mut r, N);
    x[..3].copy_from_slice(&[0, u32::MAX, 1]);
    let y = rand_u32_any(&mut r, N);
    check_forms!("add", x.clone(), y.clone(), 4_000_000_000u32, +, +=, |p: u32, q: u32| p.wrapping_add(q), assert_same);
    check_forms!("sub", x.clone(), y.clone(), 5u32, -, -=, |p: u32, q: u32| p.wrapping_sub(q), assert_same);
    check_forms!("mul", x.clone(), y.clone(), 65539u32, *, *=, |p: u32, q: u32| p.wrapping_mul(q), assert_same);
    let nz =
        |v: Vec<u32>| -> Vec<u32> { v.into_iter().map(|q| if q == 0 { 3 } else { q }).collect() };
    let small = nz(rand_u32(&mut r, N, 1, 1000));
    let xnz = nz(x);
    check_forms!("div", xnz.clone(), small.clone(), 7u32, /, /=, |p: u32, q: u32| p / q, assert_same);
    check_forms!("div (any/any)", xnz.clone(), nz(y), 3_000_000_000u32, /, /=, |p: u32, q: u32| p / q, assert_same);
    check_forms!("rem", xnz, small, 13u32, %, %=, |p: u32, q: u32| p % q, assert_same);
}

/// The `try_` forms return the same values, and `Err` for shapes that do not broadcast.
#[test]
fn try_forms() {
    let mut r = rng(105);
    let x = rand_f32(&mut r, 12, -5.0, 5.0);
    let y = rand_f32(&mut r, 12, 0.5, 5.0);
    let a = Array::from_slice(&x, &[3, 4]);
    let b = Array::from_slice(&y, &[3, 4]);
    let zip =
        |f: fn(f32, f32) -> f32| -> Vec<f32> { x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect() };
    assert_exact_f(
        &read(&a.try_add(&b).unwrap()),
        &zip(|p, q| p + q),
        "try_add",
    );
    assert_exact_f(
        &read(&a.try_sub(&b).unwrap()),
        &zip(|p, q| p - q),
        "try_sub",
    );
    assert_exact_f(
        &read(&a.try_mul(2.0).unwrap()),
        &x.iter().map(|p| p * 2.0).collect::<Vec<_>>(),
        "try_mul",
    );
    assert_exact_f(
        &read(&a.try_div(b.clone()).unwrap()),
        &zip(|p, q| p / q),
        "try_div",
    );
    assert_exact_f(
        &read(&a.try_rem(&b).unwrap()),
        &zip(|p, q| p % q),
        "try_rem",
    );
    let c = Array::from_slice(&y[..4], &[4, 1]);
    let e = a.try_add(&c).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Shape,
        "[3,4] + [4,1] must be a shape error: {e}"
    );
    let bi = Array::from_slice(&[1u32, 2, 3], &[3]);
    let e = bi.try_and(Array::from_slice(&[1u32, 2], &[2])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert_same(&read(&bi.try_xor(6u32).unwrap()), &[7, 4, 5], "try_xor");
    assert_same(&read(&bi.try_or(&bi).unwrap()), &[1, 2, 3], "try_or");
}

/// Adding, subtracting, multiplying and dividing by scalar identities (which the runtime may
/// simplify) must keep IEEE results bit for bit, signed zeros and NaN included.
#[test]
fn scalar_identities_keep_ieee_bits() {
    let x32 = [
        -0.0f32,
        0.0,
        1.5,
        -2.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e-40,
    ];
    let a = Array::from_slice(&x32, &[8]);
    let cases: Vec<(&str, Array<f32>, Vec<f32>)> = vec![
        ("a + 0", &a + 0.0, x32.iter().map(|v| v + 0.0).collect()),
        ("a + -0", &a + -0.0, x32.iter().map(|v| v + -0.0).collect()),
        ("a - 0", &a - 0.0, x32.iter().map(|v| v - 0.0).collect()),
        ("a - -0", &a - -0.0, x32.iter().map(|v| v - -0.0).collect()),
        ("0 + a", 0.0 + &a, x32.iter().map(|v| 0.0 + v).collect()),
        ("0 - a", 0.0 - &a, x32.iter().map(|v| 0.0 - v).collect()),
        ("a * 1", &a * 1.0, x32.iter().map(|v| v * 1.0).collect()),
        ("1 * a", 1.0 * &a, x32.iter().map(|v| 1.0 * v).collect()),
        ("a * -1", &a * -1.0, x32.iter().map(|v| v * -1.0).collect()),
        ("a * 0", &a * 0.0, x32.iter().map(|v| v * 0.0).collect()),
        ("a / 1", &a / 1.0, x32.iter().map(|v| v / 1.0).collect()),
        ("a / -1", &a / -1.0, x32.iter().map(|v| v / -1.0).collect()),
        (
            "a.pow(1)",
            a.pow(1.0),
            x32.iter().map(|v| v.powf(1.0)).collect(),
        ),
        (
            "a.pow(2)",
            a.pow(2.0),
            x32.iter().map(|v| v.powf(2.0)).collect(),
        ),
    ];
    // Every case is checked; the failures are reported together.
    let mut failures = Vec::new();
    for (name, got, want) in cases {
        let got = read(&got);
        if let Err(e) =
            std::panic::catch_unwind(|| assert_bits_f(&got, &want, &format!("f32 {name}")))
        {
            failures.push(e.downcast_ref::<String>().cloned().unwrap_or_default());
        }
    }
    let x64 = [-0.0f64, 0.0, 1.5, -2.0, f64::NAN, f64::INFINITY];
    let a = Array::from_slice(&x64, &[6]);
    let cases: Vec<(&str, Array<f64>, Vec<f64>)> = vec![
        ("a - -0", &a - -0.0, x64.iter().map(|v| v - -0.0).collect()),
        ("a + 0", &a + 0.0, x64.iter().map(|v| v + 0.0).collect()),
        ("a - 0", &a - 0.0, x64.iter().map(|v| v - 0.0).collect()),
        ("a * 1", &a * 1.0, x64.to_vec()),
        ("a / 1", &a / 1.0, x64.to_vec()),
    ];
    for (name, got, want) in cases {
        let got = read(&got);
        if let Err(e) =
            std::panic::catch_unwind(|| assert_bits_f(&got, &want, &format!("f64 {name}")))
        {
            failures.push(e.downcast_ref::<String>().cloned().unwrap_or_default());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Integer identities and wrap-around spot values.
#[test]
fn integer_wrapping_spots() {
    let a = Array::from_slice(&[i32::MAX, i32::MIN, i32::MIN, -1, 7], &[5]);
    let b = Array::from_slice(&[1, -1, -1, i32::MIN, -2], &[5]);
    assert_same(
        &read(&(&a + &b)),
        &[i32::MIN, i32::MAX, i32::MAX, i32::MAX, 5],
        "i32 add wraps",
    );
    assert_same(
        &read(&(&a * &b)),
        &[i32::MAX, i32::MIN, i32::MIN, i32::MIN, -14],
        "i32 mul wraps",
    );
    assert_same(
        &read(&(&a / &b)),
        &[i32::MAX, i32::MIN, i32::MIN, 0, -3],
        "i32 div truncates, MIN/-1 wraps",
    );
    assert_same(
        &read(&(&a % &b)),
        &[0, 0, 0, -1, 1],
        "i32 rem has the dividend's sign",
    );
    assert_same(
        &read(&a.modulo(&b)),
        &[0, 0, 0, -1, -1],
        "i32 modulo has the divisor's sign",
    );
    let u = Array::from_slice(&[0u32, u32::MAX, 5], &[3]);
    assert_same(
        &read(&(&u - 1u32)),
        &[u32::MAX, u32::MAX - 1, 4],
        "u32 sub wraps",
    );
    assert_same(&read(&(&u + 1u32)), &[1, 0, 6], "u32 add wraps");
    assert_same(
        &read(&(0u32 - &u)),
        &[0, 1, u32::MAX - 4],
        "u32 0 - x wraps",
    );
}

/// Floored modulo and truncated remainder on integers vs an i64 oracle, all sign combinations.
#[test]
fn int_rem_modulo() {
    let mut r = rng(106);
    let x = rand_i32(&mut r, N, -100_000, 100_000);
    let y: Vec<i32> = rand_i32(&mut r, N, -300, 300)
        .into_iter()
        .map(|v| if v == 0 { -7 } else { v })
        .collect();
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    let fmod = |p: i32, q: i32| (((p as i64 % q as i64) + q as i64) % q as i64) as i32;
    let trem = |p: i32, q: i32| (p as i64 - (p as i64 / q as i64) * q as i64) as i32;
    assert_same(
        &read(&a.modulo(&b)),
        &x.iter()
            .zip(&y)
            .map(|(&p, &q)| fmod(p, q))
            .collect::<Vec<_>>(),
        "i32 modulo",
    );
    assert_same(
        &read(&a.rem(&b)),
        &x.iter()
            .zip(&y)
            .map(|(&p, &q)| trem(p, q))
            .collect::<Vec<_>>(),
        "i32 rem",
    );
    assert_same(
        &read(&a.modulo(-7)),
        &x.iter().map(|&p| fmod(p, -7)).collect::<Vec<_>>(),
        "i32 modulo scalar",
    );
    assert_same(
        &read(&a.modulo(b.clone())),
        &x.iter()
            .zip(&y)
            .map(|(&p, &q)| fmod(p, q))
            .collect::<Vec<_>>(),
        "i32 modulo owned",
    );
    let xu = rand_u32_any(&mut r, N);
    let yu = rand_u32(&mut r, N, 1, 5000);
    let au = Array::from_slice(&xu, &[N]);
    let bu = Array::from_slice(&yu, &[N]);
    let want: Vec<u32> = xu
        .iter()
        .zip(&yu)
        .map(|(&p, &q)| (p as u64 % q as u64) as u32)
        .collect();
    assert_same(&read(&au.modulo(&bu)), &want, "u32 modulo");
    assert_same(&read(&au.rem(&bu)), &want, "u32 rem");
}

/// Float floored modulo vs an f64 oracle (fmod is exact; one rounded add when the signs differ).
fn float_modulo<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    let x: Vec<T> = conv(&float_data(&mut r, -1e3, 1e3));
    let y: Vec<T> = conv(&rand_signed_mag(&mut r, N, 0.01, 50.0));
    let oracle = |p: f64, q: f64| {
        let m = p % q;
        if m != 0.0 && ((m < 0.0) != (q < 0.0)) {
            m + q
        } else {
            m
        }
    };
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    let want: Vec<T> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| T::of(oracle(p.to(), q.to())))
        .collect();
    assert_exact_f(&read(&a.modulo(&b)), &want, "float modulo");
    let want: Vec<T> = x.iter().map(|p| T::of(oracle(p.to(), -2.5))).collect();
    assert_exact_f(
        &read(&a.modulo(T::of(-2.5))),
        &want,
        "float modulo by scalar",
    );
    let want: Vec<T> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| T::of(p.to() % q.to()))
        .collect();
    assert_exact_f(&read(&a.rem(&b)), &want, "float rem");
    // Spot values: sign of the divisor for modulo, of the dividend for rem.
    let p = Array::from_slice(&conv::<T>(&[5.5, -5.5, 5.5, -5.5]), &[4]);
    let q = Array::from_slice(&conv::<T>(&[2.0, 2.0, -2.0, -2.0]), &[4]);
    assert_exact_f(
        &read(&p.modulo(&q)),
        &conv::<T>(&[1.5, 0.5, -0.5, -1.5]),
        "modulo spots",
    );
    assert_exact_f(
        &read(&p.rem(&q)),
        &conv::<T>(&[1.5, -1.5, 1.5, -1.5]),
        "rem spots",
    );
    let z = read(&p.modulo(T::of(0.0)));
    assert!(
        z.iter().all(|v| v.to().is_nan()),
        "float modulo by 0 is NaN, got {z:?}"
    );
}

#[test]
fn float_modulo_f32() {
    float_modulo::<f32>(107);
}

#[test]
fn float_modulo_f64() {
    float_modulo::<f64>(108);
}

fn pow_atan2<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    // Positive bases with real exponents.
    let x: Vec<T> = conv(&rand_f64(&mut r, N, 0.1, 10.0));
    let y: Vec<T> = conv(&rand_f64(&mut r, N, -5.0, 5.0));
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    let want: Vec<f64> = x.iter().zip(&y).map(|(p, q)| p.to().powf(q.to())).collect();
    assert_close(&read(&a.pow(&b)), &want, T::REL, T::ABS, "pow array");
    assert_close(
        &read(&a.pow(b.clone())),
        &want,
        T::REL,
        T::ABS,
        "pow owned array",
    );
    for e in [0.5, -1.5, 3.0, 2.0, 1.0, 0.0, -2.0] {
        let want: Vec<f64> = x.iter().map(|p| p.to().powf(e)).collect();
        assert_close(
            &read(&a.pow(T::of(e))),
            &want,
            T::REL,
            T::ABS,
            &format!("pow scalar {e}"),
        );
        let want: Vec<f64> = x.iter().map(|p| e.powf(p.to())).collect();
        assert_close(
            &read(&Array::full(&[N], T::of(e)).pow(&a)),
            &want,
            T::REL,
            T::ABS,
            &format!("{e}.pow(array)"),
        );
    }
    // Negative bases: integral exponents are real, fractional ones NaN.
    let xn: Vec<T> = conv(&rand_f64(&mut r, N, -4.0, -0.25));
    let yi: Vec<T> = conv(
        &rand_i32(&mut r, N, -6, 6)
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>(),
    );
    let want: Vec<f64> = xn
        .iter()
        .zip(&yi)
        .map(|(p, q)| p.to().powf(q.to()))
        .collect();
    let an = Array::from_slice(&xn, &[N]);
    assert_close(
        &read(&an.pow(Array::from_slice(&yi, &[N]))),
        &want,
        T::REL,
        T::ABS,
        "pow negative base",
    );
    let frac = read(&an.pow(T::of(0.5)));
    assert!(
        frac.iter().all(|v| v.to().is_nan()),
        "negative base ^ 0.5 must be NaN"
    );
    // Special values: 0^-1 = inf, x^0 = 1 (NaN too), 1^NaN = 1, NaN^1 = NaN.
    let sp_x = conv::<T>(&[0.0, NAN, 1.0, NAN, 0.0, INF, 2.0]);
    let sp_y = conv::<T>(&[-1.0, 0.0, NAN, 1.5, 2.5, -1.0, INF]);
    let want: Vec<f64> = sp_x
        .iter()
        .zip(&sp_y)
        .map(|(p, q)| p.to().powf(q.to()))
        .collect();
    assert_close(
        &read(&Array::from_slice(&sp_x, &[7]).pow(Array::from_slice(&sp_y, &[7]))),
        &want,
        T::REL,
        T::ABS,
        "pow specials",
    );

    // atan2 over all four quadrants plus signed zeros and infinities.
    let mut yv = rand_f64(&mut r, N, -10.0, 10.0);
    let mut xv = rand_f64(&mut r, N, -10.0, 10.0);
    yv[..8].copy_from_slice(&[0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, NAN]);
    xv[..8].copy_from_slice(&[1.0, 1.0, -1.0, -1.0, 0.0, 0.0, INF, 1.0]);
    let yt: Vec<T> = conv(&yv);
    let xt: Vec<T> = conv(&xv);
    let want: Vec<f64> = yt
        .iter()
        .zip(&xt)
        .map(|(p, q)| p.to().atan2(q.to()))
        .collect();
    let ay = Array::from_slice(&yt, &[N]);
    let got = read(&ay.atan2(Array::from_slice(&xt, &[N])));
    assert_close(&got, &want, T::REL, T::ABS, "atan2");
    // The sign of atan2(+-0, -1) is +-pi: compare signs of the zero/pi cases exactly.
    for i in 0..4 {
        assert_eq!(
            got[i].to().is_sign_negative(),
            want[i].is_sign_negative(),
            "atan2 sign at [{i}]"
        );
    }
    let want: Vec<f64> = yt.iter().map(|p| p.to().atan2(-2.0)).collect();
    assert_close(
        &read(&ay.atan2(T::of(-2.0))),
        &want,
        T::REL,
        T::ABS,
        "atan2 scalar",
    );
}

#[test]
fn pow_atan2_f32() {
    pow_atan2::<f32>(109);
}

#[test]
fn pow_atan2_f64() {
    pow_atan2::<f64>(110);
}

fn powi<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    let mut xs = rand_signed_mag(&mut r, N, 0.5, 2.0);
    xs.extend_from_slice(&[0.0, -0.0, 1.0, -1.0]);
    let x: Vec<T> = conv(&xs);
    let a = Array::from_slice(&x, &[x.len()]);
    for n in [-7, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 65, 70] {
        let want: Vec<f64> = x.iter().map(|v| v.to().powi(n)).collect();
        assert_close(&read(&a.powi(n)), &want, T::REL, 0.0, &format!("powi({n})"));
    }
    let nan = read(&Array::from_slice(&[T::of(NAN)], &[1]).powi(0));
    assert_eq!(nan[0].to(), 1.0, "NaN.powi(0) is 1");
}

#[test]
fn powi_f32() {
    powi::<f32>(111);
}

#[test]
fn powi_f64() {
    powi::<f64>(112);
}

/// NaN-propagating minimum / maximum and clamp (= maximum(lo) then minimum(hi)); exact.
fn min_max_clamp<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    let xs = float_data(&mut r, -10.0, 10.0);
    let ys = float_data(&mut r, -10.0, 10.0);
    let x: Vec<T> = conv(&xs);
    let mut y: Vec<T> = conv(&ys);
    y[..10].copy_from_slice(&x[..10]); // ties
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    let mn = |p: f64, q: f64| {
        if p.is_nan() || q.is_nan() {
            NAN
        } else if q < p {
            q
        } else {
            p
        }
    };
    let mx = |p: f64, q: f64| {
        if p.is_nan() || q.is_nan() {
            NAN
        } else if q > p {
            q
        } else {
            p
        }
    };
    let want: Vec<T> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| T::of(mn(p.to(), q.to())))
        .collect();
    assert_exact_f(&read(&a.minimum(&b)), &want, "minimum");
    assert_exact_f(&read(&a.minimum(b.clone())), &want, "minimum owned");
    let want: Vec<T> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| T::of(mx(p.to(), q.to())))
        .collect();
    assert_exact_f(&read(&a.maximum(&b)), &want, "maximum");
    let want: Vec<T> = x.iter().map(|p| T::of(mn(p.to(), 1.5))).collect();
    assert_exact_f(&read(&a.minimum(T::of(1.5))), &want, "minimum scalar");
    let want: Vec<T> = x.iter().map(|p| T::of(mx(p.to(), -1.5))).collect();
    assert_exact_f(&read(&a.maximum(T::of(-1.5))), &want, "maximum scalar");
    // NaN in either operand gives NaN.
    let nan = read(
        &Array::from_slice(&conv::<T>(&[NAN, 1.0]), &[2])
            .maximum(Array::from_slice(&conv::<T>(&[1.0, NAN]), &[2])),
    );
    assert!(
        nan.iter().all(|v| v.to().is_nan()),
        "maximum with NaN: {nan:?}"
    );
    let want: Vec<T> = x.iter().map(|p| T::of(mn(mx(p.to(), -2.0), 3.0))).collect();
    assert_exact_f(
        &read(&a.clamp(T::of(-2.0), T::of(3.0))),
        &want,
        "clamp scalars",
    );
    let lo: Vec<T> = conv(&rand_f64(&mut r, N, -8.0, 0.0));
    let hi: Vec<T> = conv(&rand_f64(&mut r, N, 0.0, 8.0));
    let want: Vec<T> = x
        .iter()
        .zip(lo.iter().zip(&hi))
        .map(|(p, (l, h))| T::of(mn(mx(p.to(), l.to()), h.to())))
        .collect();
    let (al, ah) = (Array::from_slice(&lo, &[N]), Array::from_slice(&hi, &[N]));
    assert_exact_f(&read(&a.clamp(&al, &ah)), &want, "clamp arrays");
    assert_exact_f(&read(&a.clamp(al, ah)), &want, "clamp owned arrays");
}

#[test]
fn min_max_clamp_f32() {
    min_max_clamp::<f32>(113);
}

#[test]
fn min_max_clamp_f64() {
    min_max_clamp::<f64>(114);
}

#[test]
fn min_max_clamp_int() {
    let mut r = rng(115);
    let x = rand_i32_any(&mut r, N);
    let y = rand_i32_any(&mut r, N);
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    assert_same(
        &read(&a.minimum(&b)),
        &x.iter()
            .zip(&y)
            .map(|(&p, &q)| p.min(q))
            .collect::<Vec<_>>(),
        "i32 minimum",
    );
    assert_same(
        &read(&a.maximum(&b)),
        &x.iter()
            .zip(&y)
            .map(|(&p, &q)| p.max(q))
            .collect::<Vec<_>>(),
        "i32 maximum",
    );
    assert_same(
        &read(&a.clamp(-1000, 1000)),
        &x.iter().map(|&p| p.clamp(-1000, 1000)).collect::<Vec<_>>(),
        "i32 clamp",
    );
    let xu = rand_u32_any(&mut r, N);
    let yu = rand_u32_any(&mut r, N);
    let au = Array::from_slice(&xu, &[N]);
    let bu = Array::from_slice(&yu, &[N]);
    assert_same(
        &read(&au.minimum(&bu)),
        &xu.iter()
            .zip(&yu)
            .map(|(&p, &q)| p.min(q))
            .collect::<Vec<_>>(),
        "u32 minimum",
    );
    assert_same(
        &read(&au.maximum(bu)),
        &xu.iter()
            .zip(&yu)
            .map(|(&p, &q)| p.max(q))
            .collect::<Vec<_>>(),
        "u32 maximum",
    );
    assert_same(
        &read(&au.clamp(1u32 << 30, 3u32 << 30)),
        &xu.iter()
            .map(|&p| p.clamp(1 << 30, 3 << 30))
            .collect::<Vec<_>>(),
        "u32 clamp",
    );
}

/// Comparisons on every numeric type, array and scalar right-hand sides; exact. Data come from a
/// small set so that ties are common (and floats include NaN, which compares false except `ne`).
macro_rules! compare_all {
    ($x:expr, $y:expr, $s:expr) => {{
        let (x, y, s) = ($x, $y, $s);
        let n = x.len();
        let a = Array::from_slice(&x, &[n]);
        let b = Array::from_slice(&y, &[n]);
        let zip = |f: &dyn Fn(_, _) -> bool| -> Vec<bool> {
            x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect()
        };
        let sc = |f: &dyn Fn(_, _) -> bool| -> Vec<bool> { x.iter().map(|&p| f(p, s)).collect() };
        assert_same(&read(&a.lt(&b)), &zip(&|p, q| p < q), "lt");
        assert_same(&read(&a.le(&b)), &zip(&|p, q| p <= q), "le");
        assert_same(&read(&a.gt(&b)), &zip(&|p, q| p > q), "gt");
        assert_same(&read(&a.ge(&b)), &zip(&|p, q| p >= q), "ge");
        assert_same(&read(&a.eq(&b)), &zip(&|p, q| p == q), "eq");
        assert_same(&read(&a.ne(&b)), &zip(&|p, q| p != q), "ne");
        assert_same(&read(&a.lt(b.clone())), &zip(&|p, q| p < q), "lt owned");
        assert_same(&read(&a.lt(s)), &sc(&|p, q| p < q), "lt scalar");
        assert_same(&read(&a.le(s)), &sc(&|p, q| p <= q), "le scalar");
        assert_same(&read(&a.gt(s)), &sc(&|p, q| p > q), "gt scalar");
        assert_same(&read(&a.ge(s)), &sc(&|p, q| p >= q), "ge scalar");
        assert_same(&read(&a.eq(s)), &sc(&|p, q| p == q), "eq scalar");
        assert_same(&read(&a.ne(s)), &sc(&|p, q| p != q), "ne scalar");
    }};
}

#[test]
fn comparisons_all_numeric() {
    let mut r = rng(116);
    let pick = |r: &mut rand::rngs::StdRng, set: &[f64]| -> Vec<f64> {
        (0..N)
            .map(|_| set[rand_u32(r, 1, 0, set.len() as u32 - 1)[0] as usize])
            .collect()
    };
    let set = [-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, NAN, INF, -INF];
    let (x, y) = (pick(&mut r, &set), pick(&mut r, &set));
    compare_all!(conv::<f32>(&x), conv::<f32>(&y), 0.5f32);
    compare_all!(x.clone(), y.clone(), -0.0f64);
    compare_all!(conv::<f64>(&x), conv::<f64>(&y), NAN);
    let xi = rand_i32(&mut r, N, -3, 3);
    let yi = rand_i32(&mut r, N, -3, 3);
    compare_all!(xi, yi, 1i32);
    let xi = vec![i32::MIN, i32::MAX, -1, 0];
    compare_all!(xi, vec![i32::MAX, i32::MIN, 0, -1], i32::MIN);
    let xu = rand_u32(&mut r, N, 0, 5);
    let yu = rand_u32(&mut r, N, 0, 5);
    compare_all!(xu, yu, 2u32);
    compare_all!(
        vec![0u32, u32::MAX, 1 << 31],
        vec![u32::MAX, 0, 1 << 31],
        1u32 << 31
    );
}

#[test]
fn bool_logic() {
    let mut r = rng(117);
    let x = rand_bool(&mut r, N, 0.5);
    let y = rand_bool(&mut r, N, 0.5);
    let a = Array::from_slice(&x, &[N]);
    let b = Array::from_slice(&y, &[N]);
    let zip = |f: fn(bool, bool) -> bool| -> Vec<bool> {
        x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect()
    };
    check_forms!("bool &", x.clone(), y.clone(), true, &, &=, |p: bool, q: bool| p & q, assert_same);
    check_forms!("bool &", x.clone(), y.clone(), false, &, &=, |p: bool, q: bool| p & q, assert_same);
    check_forms!("bool |", x.clone(), y.clone(), false, |, |=, |p: bool, q: bool| p | q, assert_same);
    check_forms!("bool |", x.clone(), y.clone(), true, |, |=, |p: bool, q: bool| p | q, assert_same);
    check_forms!("bool ^", x.clone(), y.clone(), true, ^, ^=, |p: bool, q: bool| p ^ q, assert_same);
    assert_same(&read(&a.and(&b)), &zip(|p, q| p && q), "and");
    assert_same(&read(&a.or(&b)), &zip(|p, q| p || q), "or");
    assert_same(&read(&a.xor(&b)), &zip(|p, q| p != q), "xor");
    assert_same(&read(&a.nand(&b)), &zip(|p, q| !(p && q)), "nand");
    assert_same(&read(&a.nor(&b)), &zip(|p, q| !(p || q)), "nor");
    assert_same(
        &read(&a.nand(b.clone())),
        &zip(|p, q| !(p && q)),
        "nand owned",
    );
    assert_same(
        &read(&a.nor(false)),
        &x.iter().map(|p| !p).collect::<Vec<_>>(),
        "nor false",
    );
    assert_same(
        &read(&a.nand(true)),
        &x.iter().map(|p| !p).collect::<Vec<_>>(),
        "nand true",
    );
    assert_same(&read(&a.eq(&b)), &zip(|p, q| p == q), "bool eq");
    assert_same(&read(&a.ne(&b)), &zip(|p, q| p != q), "bool ne");
    assert_same(&read(&a.eq(true)), &x, "bool eq true");
    assert_same(
        &read(&a.ne(true)),
        &x.iter().map(|p| !p).collect::<Vec<_>>(),
        "bool ne true",
    );
    // Comparisons of numbers feeding logic, fused.
    let v = rand_f32(&mut r, N, -1.0, 1.0);
    let av = Array::from_slice(&v, &[N]);
    let got = read(&(av.gt(0.25f32) & av.lt(0.75f32) | !&a));
    let want: Vec<bool> = v
        .iter()
        .zip(&x)
        .map(|(&p, &q)| (p > 0.25 && p < 0.75) || !q)
        .collect();
    assert_same(&got, &want, "fused comparison logic");
}

macro_rules! bitwise_int {
    ($t:ty, $x:expr, $y:expr, $s:expr) => {{
        let (x, y): (Vec<$t>, Vec<$t>) = ($x, $y);
        let s: $t = $s;
        let n = x.len();
        let a = Array::from_slice(&x, &[n]);
        let b = Array::from_slice(&y, &[n]);
        let zip =
            |f: fn($t, $t) -> $t| -> Vec<$t> { x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect() };
        let sc = |f: fn($t, $t) -> $t| -> Vec<$t> { x.iter().map(|&p| f(p, s)).collect() };
        assert_same(&read(&(&a & &b)), &zip(|p, q| p & q), "&a & &b");
        assert_same(&read(&(a.clone() & b.clone())), &zip(|p, q| p & q), "a & b");
        assert_same(&read(&(&a | &b)), &zip(|p, q| p | q), "&a | &b");
        assert_same(&read(&(&a | b.clone())), &zip(|p, q| p | q), "&a | b");
        assert_same(&read(&(&a ^ &b)), &zip(|p, q| p ^ q), "&a ^ &b");
        assert_same(&read(&(a.clone() ^ &b)), &zip(|p, q| p ^ q), "a ^ &b");
        assert_same(&read(&(&a & s)), &sc(|p, q| p & q), "& scalar");
        assert_same(&read(&(&a | s)), &sc(|p, q| p | q), "| scalar");
        assert_same(&read(&(a.clone() ^ s)), &sc(|p, q| p ^ q), "^ scalar");
        assert_same(&read(&a.and(&b)), &zip(|p, q| p & q), "and()");
        assert_same(&read(&a.or(s)), &sc(|p, q| p | q), "or()");
        assert_same(&read(&a.xor(b.clone())), &zip(|p, q| p ^ q), "xor()");
        let mut c = a.clone();
        c &= &b;
        assert_same(&read(&c), &zip(|p, q| p & q), "&=");
        let mut c = a.clone();
        c |= s;
        assert_same(&read(&c), &sc(|p, q| p | q), "|= scalar");
        let mut c = a.clone();
        c ^= b.clone();
        assert_same(&read(&c), &zip(|p, q| p ^ q), "^= owned");
        assert_same(&read(&!(&a ^ &b)), &zip(|p, q| !(p ^ q)), "!(a ^ b)");
    }};
}

#[test]
fn bitwise_i32_u32() {
    let mut r = rng(118);
    bitwise_int!(
        i32,
        rand_i32_any(&mut r, N),
        rand_i32_any(&mut r, N),
        0x0F0F_0F0Fi32
    );
    bitwise_int!(i32, rand_i32_any(&mut r, N), rand_i32_any(&mut r, N), -1);
    bitwise_int!(
        u32,
        rand_u32_any(&mut r, N),
        rand_u32_any(&mut r, N),
        0xF0F0_F0F0u32
    );
}

/// Integer division, remainder and modulo by zero make the result invalid: reading it returns
/// `Err` (of kind InvalidResult), and so does reading anything computed from it; unrelated arrays
/// are still computed.
#[test]
fn int_division_by_zero_is_an_error() {
    let mut r = rng(119);
    let mut y = rand_i32(&mut r, 100, 1, 50);
    y[37] = 0;
    let x = rand_i32(&mut r, 100, -50, 50);
    let a = Array::from_slice(&x, &[100]);
    let b = Array::from_slice(&y, &[100]);
    let cases: Vec<(&str, Array<i32>)> = vec![
        ("div", &a / &b),
        ("rem", &a % &b),
        ("modulo", a.modulo(&b)),
        ("div scalar 0", &a / 0),
        ("rem scalar 0", a.rem(0)),
        ("modulo scalar 0", a.modulo(0)),
        ("scalar / array", 7 / &b),
        ("constant / 0", Array::full(&[4], 9) / 0),
        ("dependent of div", (&a / &b) + 1),
    ];
    for (name, c) in cases {
        let e = c.to_vec().expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidResult, "{name}: {e}");
        let mut buf = vec![0; c.len()];
        assert!(
            c.read_into(&mut buf).is_err(),
            "{name}: read_into must fail too"
        );
    }
    let mut c = a.clone();
    c /= 0;
    assert!(c.to_vec().is_err(), "/= 0 must fail");
    let s = (&a / &b).sum();
    assert!(
        s.item().is_err(),
        "a reduction of an invalid array is invalid"
    );

    let u = Array::from_slice(&[5u32, 6, 7], &[3]);
    let z = Array::from_slice(&[1u32, 0, 2], &[3]);
    assert!((&u / &z).to_vec().is_err(), "u32 div by zero");
    assert!((&u % &z).to_vec().is_err(), "u32 rem by zero");
    assert!(u.modulo(&z).to_vec().is_err(), "u32 modulo by zero");

    // The runtime keeps working after a failed kernel.
    assert_same(
        &read(&(&a + 1)),
        &x.iter().map(|v| v + 1).collect::<Vec<_>>(),
        "after error",
    );
    // Float division by zero is not an error: it gives inf/NaN.
    let f = read(&(Array::from_slice(&[1.0f32, -1.0, 0.0], &[3]) / 0.0));
    assert!(
        f[0] == f32::INFINITY && f[1] == -f32::INFINITY && f[2].is_nan(),
        "float / 0: {f:?}"
    );
}

/// Operands of different shapes and mixed element-wise chains over more than one CPU tile
/// (default tile: 4096 elements): exact for integers and for f64 + - * chains.
#[test]
fn multi_tile_chain() {
    let mut r = rng(120);
    let n = 3 * 4096 + 123;
    let x = rand_i32_any(&mut r, n);
    let y = rand_i32(&mut r, n, 1, 1 << 20);
    let a = Array::from_slice(&x, &[n]);
    let b = Array::from_slice(&y, &[n]);
    let got = read(&((&a * 3 - &b) / &b + (&a ^ &b)));
    let want: Vec<i32> = x
        .iter()
        .zip(&y)
        .map(|(&p, &q)| {
            p.wrapping_mul(3)
                .wrapping_sub(q)
                .wrapping_div(q)
                .wrapping_add(p ^ q)
        })
        .collect();
    assert_same(&got, &want, "i32 chain over tiles");
    let xf = rand_f64(&mut r, n, -1.0, 1.0);
    let yf = rand_f64(&mut r, n, -1.0, 1.0);
    let a = Array::from_slice(&xf, &[n]);
    let b = Array::from_slice(&yf, &[n]);
    let got = read(&((&a * &b - 0.5) * (&a + &b) - &a));
    let want: Vec<f64> = xf
        .iter()
        .zip(&yf)
        .map(|(&p, &q)| (p * q - 0.5) * (p + q) - p)
        .collect();
    assert_exact_f(&got, &want, "f64 chain over tiles");
}

/// Binary ops on two constants are folded at record time; the folded values must equal the kernel
/// results for the same inputs, for every op and type (exact), and folds of identities must still
/// broadcast to the full shape.
#[test]
fn constant_folded_binary_matches_kernel() {
    type F = fn(&Array<f32>, &Array<f32>) -> Array<f32>;
    type C = fn(&Array<f32>, &Array<f32>) -> Array<bool>;
    let fops: Vec<(&str, F)> = vec![
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("rem", |a, b| a % b),
        ("modulo", |a, b| a.modulo(b)),
        ("pow", |a, b| a.pow(b)),
        ("atan2", |a, b| a.atan2(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("maximum", |a, b| a.maximum(b)),
    ];
    let cops: Vec<(&str, C)> = vec![
        ("lt", |a, b| a.lt(b)),
        ("le", |a, b| a.le(b)),
        ("gt", |a, b| a.gt(b)),
        ("ge", |a, b| a.ge(b)),
        ("eq", |a, b| a.eq(b)),
        ("ne", |a, b| a.ne(b)),
    ];
    let vals = [-2.5f32, -0.0, 0.75, 3.0, f32::NAN];
    for &p in &vals {
        for &q in &vals {
            let (kp, kq) = (Array::full(&[2], p), Array::full(&[2], q));
            let (dp, dq) = (
                Array::from_slice(&[p, p], &[2]),
                Array::from_slice(&[q, q], &[2]),
            );
            for (name, f) in &fops {
                let (k, d) = (read(&f(&kp, &kq)), read(&f(&dp, &dq)));
                assert!(
                    same_on_executor(k[0] as f64, d[0] as f64, true),
                    "{name}({p}, {q}): folded {} != kernel {}",
                    k[0],
                    d[0]
                );
            }
            for (name, f) in &cops {
                assert_eq!(
                    read(&f(&kp, &kq)),
                    read(&f(&dp, &dq)),
                    "{name}({p}, {q}): folded != kernel"
                );
            }
        }
    }
    for &p in &[i32::MIN, -7, 0, 5, i32::MAX] {
        for &q in &[-1i32, 3, -4, i32::MIN] {
            let (kp, kq) = (Array::full(&[2], p), Array::full(&[2], q));
            let (dp, dq) = (
                Array::from_slice(&[p, p], &[2]),
                Array::from_slice(&[q, q], &[2]),
            );
            assert_eq!(read(&(&kp + &kq)), read(&(&dp + &dq)), "i32 add({p}, {q})");
            assert_eq!(read(&(&kp * &kq)), read(&(&dp * &dq)), "i32 mul({p}, {q})");
            assert_eq!(read(&(&kp / &kq)), read(&(&dp / &dq)), "i32 div({p}, {q})");
            assert_eq!(
                read(&kp.modulo(&kq)),
                read(&dp.modulo(&dq)),
                "i32 modulo({p}, {q})"
            );
            assert_eq!(read(&(&kp ^ &kq)), read(&(&dp ^ &dq)), "i32 xor({p}, {q})");
            assert_eq!(
                read(&kp.abs()),
                vec![p.wrapping_abs(); 2],
                "folded i32 abs({p})"
            );
            assert_eq!(
                read(&(-&kp)),
                vec![p.wrapping_neg(); 2],
                "folded i32 neg({p})"
            );
        }
    }
    // Constants of different shapes fold to the broadcast shape.
    let c = Array::full(&[3, 1], 2.0f64) * Array::full(&[1, 4], 3.0);
    assert_eq!(c.shape(), &[3, 4]);
    assert_same(&read(&c), &[6.0; 12], "folded broadcast");
    // Identity constants larger than the data still broadcast the data.
    let x = [1.5f32, -2.0, 4.0];
    let a = Array::from_slice(&x, &[3]);
    let want6: Vec<f32> = x.iter().chain(&x).copied().collect();
    let m = &a * Array::ones(&[2, 3]);
    assert_eq!(m.shape(), &[2, 3], "a * ones([2, 3]) shape");
    assert_exact_f(&read(&m), &want6, "a * ones([2, 3])");
    let d = &a / Array::ones(&[2, 1]);
    assert_eq!(d.shape(), &[2, 3], "a / ones([2, 1]) shape");
    assert_exact_f(&read(&d), &want6, "a / ones([2, 1])");
    let s = Array::ones(&[2, 3]) * &a;
    assert_exact_f(&read(&s), &want6, "ones([2, 3]) * a");
    let z = &a - Array::zeros(&[2, 1, 3]);
    assert_eq!(z.shape(), &[2, 1, 3], "a - zeros([2, 1, 3]) shape");
    assert_exact_f(&read(&z), &want6, "a - zeros([2, 1, 3])");
    let ai = Array::from_slice(&[1i32, 2, 3], &[3]);
    let zi = Array::<i32>::zeros(&[2, 3]) + &ai;
    assert_same(&read(&zi), &[1, 2, 3, 1, 2, 3], "zeros([2, 3]) + a (i32)");
    let zi = &ai + Array::<i32>::zeros(&[2, 3]);
    assert_same(&read(&zi), &[1, 2, 3, 1, 2, 3], "a + zeros([2, 3]) (i32)");
}
