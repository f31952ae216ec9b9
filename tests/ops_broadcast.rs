//! NumPy broadcasting of element-wise ops, `select`, and casts between every pair of element types,
//! against index-walking oracles on seeded random data.
//!
//! Tolerances: everything here is exact. Broadcast arithmetic uses + - * / (correctly rounded, so
//! the Rust operation on the same values is the exact oracle) and comparisons; casts follow Rust
//! `as` (float to int saturates, NaN to 0; numbers to bool is `!= 0`; bool to number is 0/1) and
//! are compared bitwise for float targets.

mod common;

use arrayflow::{Array, ErrorKind, select};
use common::*;

const SHAPE_PAIRS: &[(&[usize], &[usize])] = &[
    (&[3, 1, 5], &[4, 1]),
    (&[4, 1], &[3, 1, 5]),
    (&[1, 5], &[4, 1]),
    (&[4, 1], &[1, 5]),
    (&[5], &[3, 4, 5]),
    (&[3, 4, 5], &[5]),
    (&[3, 4, 5], &[]),
    (&[], &[2, 3]),
    (&[2, 1, 3], &[2, 4, 1]),
    (&[1], &[7]),
    (&[6, 1, 1, 4], &[1, 5, 3, 1]),
    (&[3, 4], &[3, 4]),
    (&[1, 1], &[2, 3]),
    (&[70, 1], &[1, 90]),
];

#[test]
fn broadcast_binary_all_types() {
    let mut r = rng(201);
    for &(sa, sb) in SHAPE_PAIRS {
        let (na, nb) = (numel(sa), numel(sb));
        let ctx = format!("{sa:?} with {sb:?}");

        let x = rand_f32(&mut r, na, -10.0, 10.0);
        let y = rand_f32(&mut r, nb, 0.5, 10.0);
        let (a, b) = (Array::from_slice(&x, sa), Array::from_slice(&y, sb));
        let (shape, want) = bcast2(&x, sa, &y, sb, |p, q| p * q - q);
        let got = &a * &b - &b;
        assert_eq!(got.shape(), &shape[..], "{ctx}: f32 shape");
        assert_exact_f(&read(&got), &want, &format!("{ctx}: f32 a*b-b"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p / q);
        assert_exact_f(
            &read(&(a.clone() / b.clone())),
            &want,
            &format!("{ctx}: f32 a/b owned"),
        );
        let (_, want) = bcast2(&y, sb, &x, sa, |p, q| p - q);
        assert_exact_f(&read(&(&b - &a)), &want, &format!("{ctx}: f32 b-a"));

        let x = rand_f64(&mut r, na, -10.0, 10.0);
        let y = rand_f64(&mut r, nb, -10.0, 10.0);
        let (a, b) = (Array::from_slice(&x, sa), Array::from_slice(&y, sb));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p + q);
        assert_exact_f(&read(&(&a + &b)), &want, &format!("{ctx}: f64 add"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p.max(q));
        assert_exact_f(&read(&a.maximum(&b)), &want, &format!("{ctx}: f64 maximum"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p < q);
        assert_same(&read(&a.lt(&b)), &want, &format!("{ctx}: f64 lt"));

        let x = rand_i32_any(&mut r, na);
        let y = rand_i32_any(&mut r, nb);
        let (a, b) = (Array::from_slice(&x, sa), Array::from_slice(&y, sb));
        let (_, want) = bcast2(&x, sa, &y, sb, |p: i32, q: i32| p.wrapping_sub(q));
        assert_same(&read(&(&a - &b)), &want, &format!("{ctx}: i32 sub"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p ^ q);
        assert_same(&read(&(&a ^ &b)), &want, &format!("{ctx}: i32 xor"));

        let x = rand_u32_any(&mut r, na);
        let y = rand_u32(&mut r, nb, 1, 1000);
        let (a, b) = (Array::from_slice(&x, sa), Array::from_slice(&y, sb));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p % q);
        assert_same(&read(&(&a % &b)), &want, &format!("{ctx}: u32 rem"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p >= q);
        assert_same(&read(&a.ge(&b)), &want, &format!("{ctx}: u32 ge"));

        let x = rand_bool(&mut r, na, 0.5);
        let y = rand_bool(&mut r, nb, 0.5);
        let (a, b) = (Array::from_slice(&x, sa), Array::from_slice(&y, sb));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| !(p || q));
        assert_same(&read(&a.nor(&b)), &want, &format!("{ctx}: bool nor"));
        let (_, want) = bcast2(&x, sa, &y, sb, |p, q| p ^ q);
        assert_same(&read(&(&a ^ &b)), &want, &format!("{ctx}: bool xor"));
    }
}

/// Compound assignment with a broadcast right-hand side keeps the left shape.
#[test]
fn broadcast_compound_assign() {
    let mut r = rng(202);
    let x = rand_f64(&mut r, 60, -5.0, 5.0);
    let row = rand_f64(&mut r, 5, -5.0, 5.0);
    let col = rand_f64(&mut r, 12, -5.0, 5.0);
    let mut a = Array::from_slice(&x, &[12, 5]);
    a += &Array::from_slice(&row, &[5]);
    a *= Array::from_slice(&col, &[12, 1]);
    a -= 0.25;
    assert_eq!(a.shape(), &[12, 5]);
    let want: Vec<f64> = (0..60)
        .map(|i| (x[i] + row[i % 5]) * col[i / 5] - 0.25)
        .collect();
    assert_exact_f(&read(&a), &want, "compound assignment with broadcasts");
}

/// Broadcasting a view (a transposed matrix, a slice) against another operand.
#[test]
fn broadcast_of_views() {
    let mut r = rng(203);
    let x = rand_f32(&mut r, 20, -3.0, 3.0);
    let y = rand_f32(&mut r, 5, -3.0, 3.0);
    let a = Array::from_slice(&x, &[4, 5]);
    let t = a.transpose(); // [5, 4]
    let col = Array::from_slice(&y, &[5, 1]);
    let got = read(&(&t + &col));
    let want: Vec<f32> = (0..20).map(|l| x[(l % 4) * 5 + l / 4] + y[l / 4]).collect();
    assert_exact_f(&got, &want, "transpose + column");
    let row = Array::from_slice(&y[..4], &[4]);
    let got = read(&(t * &row));
    let want: Vec<f32> = (0..20).map(|l| x[(l % 4) * 5 + l / 4] * y[l % 4]).collect();
    assert_exact_f(&got, &want, "transpose * row");
}

#[test]
fn broadcast_shape_errors() {
    let a = Array::from_slice(&[1.0f32; 6], &[2, 3]);
    let b = Array::from_slice(&[1.0f32; 4], &[4]);
    let e = a.try_add(&b).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape, "{e}");
    let e = a.try_broadcast_to(&[4, 3]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape, "{e}");
}

macro_rules! select_case {
    ($r:expr, $sc:expr, $sa:expr, $sb:expr, $gen:expr, $cmp:ident, $ctx:expr) => {{
        let (sc, sa, sb): (&[usize], &[usize], &[usize]) = ($sc, $sa, $sb);
        let c = rand_bool($r, numel(sc), 0.4);
        let x = $gen($r, numel(sa));
        let y = $gen($r, numel(sb));
        let (ca, aa, ba) = (
            Array::from_slice(&c, sc),
            Array::from_slice(&x, sa),
            Array::from_slice(&y, sb),
        );
        let ab = broadcast_shape(sa, sb);
        let out = broadcast_shape(sc, &ab);
        let want: Vec<_> = (0..numel(&out))
            .map(|l| {
                let idx = unravel(l, &out);
                if c[broadcast_src(&idx, sc)] {
                    x[broadcast_src(&idx, sa)]
                } else {
                    y[broadcast_src(&idx, sb)]
                }
            })
            .collect();
        let got = select(&ca, &aa, &ba);
        assert_eq!(got.shape(), &out[..], "{}: shape", $ctx);
        $cmp(
            &read(&got),
            &want,
            &format!("{} select {sc:?} {sa:?} {sb:?}", $ctx),
        );
        $cmp(
            &read(&ca.select(aa.clone(), ba.clone())),
            &want,
            &format!("{} method select", $ctx),
        );
        // Scalar branches.
        let (s0, s1) = (x[0], y[0]);
        let want: Vec<_> = (0..numel(&broadcast_shape(sc, sa)))
            .map(|l| {
                let idx = unravel(l, &broadcast_shape(sc, sa));
                if c[broadcast_src(&idx, sc)] {
                    s0
                } else {
                    x[broadcast_src(&idx, sa)]
                }
            })
            .collect();
        $cmp(
            &read(&select(&ca, s0, &aa)),
            &want,
            &format!("{} select(scalar, array)", $ctx),
        );
        let want: Vec<_> = c.iter().map(|&v| if v { s0 } else { s1 }).collect();
        $cmp(
            &read(&select(&ca, s0, s1)),
            &want,
            &format!("{} select(scalar, scalar)", $ctx),
        );
    }};
}

#[test]
fn select_all_types_and_broadcasts() {
    let mut r = rng(204);
    let shapes: &[(&[usize], &[usize], &[usize])] = &[
        (&[50], &[50], &[50]),
        (&[4, 5], &[4, 5], &[4, 5]),
        (&[4, 1], &[1, 5], &[5]),
        (&[3, 4, 5], &[4, 1], &[]),
        (&[], &[3, 2], &[3, 2]),
        (&[2, 1, 6], &[7, 1], &[1, 6]),
    ];
    for &(sc, sa, sb) in shapes {
        select_case!(
            &mut r,
            sc,
            sa,
            sb,
            |r: &mut rand::rngs::StdRng, n| rand_f32(r, n, -9.0, 9.0),
            assert_exact_f,
            "f32"
        );
        select_case!(
            &mut r,
            sc,
            sa,
            sb,
            |r: &mut rand::rngs::StdRng, n| rand_f64(r, n, -9.0, 9.0),
            assert_exact_f,
            "f64"
        );
        select_case!(
            &mut r,
            sc,
            sa,
            sb,
            |r: &mut rand::rngs::StdRng, n| rand_i32_any(r, n),
            assert_same,
            "i32"
        );
        select_case!(
            &mut r,
            sc,
            sa,
            sb,
            |r: &mut rand::rngs::StdRng, n| rand_u32_any(r, n),
            assert_same,
            "u32"
        );
        select_case!(
            &mut r,
            sc,
            sa,
            sb,
            |r: &mut rand::rngs::StdRng, n| rand_bool(r, n, 0.5),
            assert_same,
            "bool"
        );
    }
}

/// select fused with comparisons: a NaN-safe ReLU and clipping, vs the oracle.
#[test]
fn select_from_comparisons() {
    let mut r = rng(205);
    let mut x = rand_f32(&mut r, 5000, -2.0, 2.0);
    x[10] = f32::NAN;
    let a = Array::from_slice(&x, &[50, 100]);
    let got = read(&a.gt(0.0f32).select(&a, 0.0f32));
    let want: Vec<f32> = x.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect();
    assert_exact_f(&got, &want, "relu via select");
    let got = read(&select(&a.is_nan(), -1.0f32, &(&a * 2.0)));
    let want: Vec<f32> = x
        .iter()
        .map(|&v| if v.is_nan() { -1.0 } else { v * 2.0 })
        .collect();
    assert_exact_f(&got, &want, "nan replacement via select");
    // Constant conditions.
    let t = select(&Array::scalar(true), &a, 5.0f32);
    assert_exact_f(&read(&t), &x, "select(true, a, s)");
    let f = select(&Array::full(&[50, 100], false), &a, 5.0f32);
    assert_exact_f(&read(&f), &[5.0; 5000], "select(false, a, s)");
}

// ---------------------------------------------------------------------------------------------
// Casts between every pair of element types.

fn f64_sources(r: &mut rand::rngs::StdRng) -> Vec<f64> {
    let mut v = rand_f64(r, 300, -300.0, 300.0);
    v.extend(rand_f64(r, 300, -1e10, 1e10));
    v.extend(rand_f64(r, 100, -1.0, 1.0));
    v.extend_from_slice(&[
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.99,
        -0.99,
        1.0,
        -1.0,
        2147483647.0,
        2147483648.0,
        -2147483648.0,
        -2147483649.0,
        4294967295.0,
        4294967296.0,
        16777217.0,
        1e38,
        -1e38,
        1e300,
        -1e300,
        1e-300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]);
    v
}

/// Casts `x` to every type and compares with Rust `as` (bitwise for floats, NaN equal to NaN).
macro_rules! cast_all {
    ($t:ty, $x:expr, $bool_of:expr) => {{
        let x: Vec<$t> = $x;
        let n = x.len();
        let a = Array::from_slice(&x, &[n]);
        let ctx = stringify!($t);
        let bool_of = $bool_of;
        assert_bits_f(
            &read(&a.cast::<f32>()),
            &x.iter().map(|&v| v as f32).collect::<Vec<_>>(),
            &format!("{ctx} -> f32"),
        );
        assert_bits_f(
            &read(&a.cast::<f64>()),
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            &format!("{ctx} -> f64"),
        );
        assert_same(
            &read(&a.cast::<i32>()),
            &x.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            &format!("{ctx} -> i32"),
        );
        assert_same(
            &read(&a.cast::<u32>()),
            &x.iter().map(|&v| v as u32).collect::<Vec<_>>(),
            &format!("{ctx} -> u32"),
        );
        assert_same(
            &read(&a.cast::<bool>()),
            &x.iter().map(|&v| bool_of(v)).collect::<Vec<_>>(),
            &format!("{ctx} -> bool"),
        );
        // Casting through an element-wise op (the cast is fused into a kernel with its producer).
        let twice = &a + &a;
        let x2: Vec<$t> = read(&twice);
        assert_same(
            &read(&twice.cast::<i32>()),
            &x2.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            &format!("{ctx} (a + a) -> i32"),
        );
        assert_bits_f(
            &read(&twice.cast::<f64>()),
            &x2.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            &format!("{ctx} (a + a) -> f64"),
        );
        // Constants are converted at record time: same rules.
        for &v in x.iter().take(40).chain(x.iter().rev().take(23)) {
            let k = Array::full(&[2], v);
            assert_same(
                &read(&k.cast::<i32>()),
                &[v as i32; 2],
                &format!("{ctx} const {v:?} -> i32"),
            );
            assert_same(
                &read(&k.cast::<u32>()),
                &[v as u32; 2],
                &format!("{ctx} const {v:?} -> u32"),
            );
            assert_same(
                &read(&k.cast::<bool>()),
                &[bool_of(v); 2],
                &format!("{ctx} const {v:?} -> bool"),
            );
            assert_bits_f(
                &read(&k.cast::<f32>()),
                &[v as f32; 2],
                &format!("{ctx} const {v:?} -> f32"),
            );
            assert_bits_f(
                &read(&k.cast::<f64>()),
                &[v as f64; 2],
                &format!("{ctx} const {v:?} -> f64"),
            );
        }
    }};
}

#[test]
fn cast_from_f64() {
    let mut r = rng(206);
    cast_all!(f64, f64_sources(&mut r), |v: f64| v != 0.0);
}

#[test]
fn cast_from_f32() {
    let mut r = rng(207);
    let x: Vec<f32> = f64_sources(&mut r).iter().map(|&v| v as f32).collect();
    cast_all!(f32, x, |v: f32| v != 0.0);
}

#[test]
fn cast_from_i32() {
    let mut r = rng(208);
    let mut x = rand_i32_any(&mut r, 500);
    x.extend(rand_i32(&mut r, 100, -3, 3));
    x.extend_from_slice(&[0, 1, -1, i32::MIN, i32::MAX, 16_777_217, -16_777_217]);
    cast_all!(i32, x, |v: i32| v != 0);
}

#[test]
fn cast_from_u32() {
    let mut r = rng(209);
    let mut x = rand_u32_any(&mut r, 500);
    x.extend(rand_u32(&mut r, 100, 0, 3));
    x.extend_from_slice(&[0, 1, u32::MAX, 1 << 31, (1 << 31) - 1, 16_777_217]);
    cast_all!(u32, x, |v: u32| v != 0);
}

#[test]
fn cast_from_bool() {
    let mut r = rng(210);
    let x = rand_bool(&mut r, 500, 0.5);
    let n = x.len();
    let a = Array::from_slice(&x, &[n]);
    assert_bits_f(
        &read(&a.cast::<f32>()),
        &x.iter().map(|&v| v as u8 as f32).collect::<Vec<_>>(),
        "bool -> f32",
    );
    assert_bits_f(
        &read(&a.cast::<f64>()),
        &x.iter().map(|&v| v as u8 as f64).collect::<Vec<_>>(),
        "bool -> f64",
    );
    assert_same(
        &read(&a.cast::<i32>()),
        &x.iter().map(|&v| v as i32).collect::<Vec<_>>(),
        "bool -> i32",
    );
    assert_same(
        &read(&a.cast::<u32>()),
        &x.iter().map(|&v| v as u32).collect::<Vec<_>>(),
        "bool -> u32",
    );
    assert_same(&read(&a.cast::<bool>()), &x, "bool -> bool");
    assert_same(
        &read(&(!&a).cast::<i32>()),
        &x.iter().map(|&v| !v as i32).collect::<Vec<_>>(),
        "(!bool) -> i32",
    );
    assert_same(
        &read(&Array::full(&[3], true).cast::<u32>()),
        &[1, 1, 1],
        "const true -> u32",
    );
    assert_same(
        &read(&Array::full(&[3], false).cast::<f32>()),
        &[0.0, 0.0, 0.0],
        "const false -> f32",
    );
    // Counting trues by casting then summing.
    let count = x.iter().filter(|&&v| v).count() as u32;
    assert_eq!(
        item(&a.cast::<u32>().sum()),
        count,
        "sum of bools cast to u32"
    );
}

/// Round trips that must be lossless: i32 -> f64 -> i32, u32 -> f64 -> u32, f32 -> f64 -> f32.
#[test]
fn lossless_cast_round_trips() {
    let mut r = rng(211);
    let xi = rand_i32_any(&mut r, 1000);
    let a = Array::from_slice(&xi, &[1000]);
    assert_same(
        &read(&a.cast::<f64>().cast::<i32>()),
        &xi,
        "i32 -> f64 -> i32",
    );
    let xu = rand_u32_any(&mut r, 1000);
    let a = Array::from_slice(&xu, &[1000]);
    assert_same(
        &read(&a.cast::<f64>().cast::<u32>()),
        &xu,
        "u32 -> f64 -> u32",
    );
    let xf = rand_f32(&mut r, 1000, -1e30, 1e30);
    let a = Array::from_slice(&xf, &[10, 100]);
    assert_bits_f(
        &read(&a.cast::<f64>().cast::<f32>()),
        &xf,
        "f32 -> f64 -> f32",
    );
    // i32 -> u32 -> i32 reinterprets two's complement both ways.
    let a = Array::from_slice(&xi, &[1000]);
    assert_same(
        &read(&a.cast::<u32>().cast::<i32>()),
        &xi,
        "i32 -> u32 -> i32",
    );
}
