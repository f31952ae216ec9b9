//! Reads and writes: from_vec / from_slice / from_vec1 / scalar round trips for every element type
//! and rank, to_vec, item and read_into (including their errors), shape metadata, reads of computed
//! arrays (repeated, after the inputs are dropped, after hint_read / execute / blocks) and DynArray.
//!
//! Tolerances: data round trips are exact (bitwise for floats); computed values use + - * only
//! (correctly rounded, so exact against Rust doing the same operations).

mod common;

use arrayflow::{Array, DType, DynArray, Element, ErrorKind, Runtime};
use common::*;

fn round_trip<T: Element>(v: Vec<T>, shape: &[usize], dtype: DType) {
    let ctx = format!("{dtype} {shape:?}");
    let a = Array::from_slice(&v, shape);
    assert_eq!(a.shape(), shape, "{ctx}: shape");
    assert_eq!(a.ndim(), shape.len(), "{ctx}: ndim");
    assert_eq!(a.len(), v.len(), "{ctx}: len");
    assert_eq!(a.is_empty(), v.is_empty(), "{ctx}: is_empty");
    assert_eq!(a.dtype(), dtype, "{ctx}: dtype");
    assert_same(&read(&a), &v, &format!("{ctx}: from_slice -> to_vec"));
    let b = Array::from_vec(v.clone(), shape);
    assert_same(&read(&b), &v, &format!("{ctx}: from_vec -> to_vec"));
    let c = Array::try_from_vec(v.clone(), shape).unwrap();
    let mut out = v.clone();
    out.reverse();
    c.read_into(&mut out).unwrap();
    assert_same(&out, &v, &format!("{ctx}: read_into"));
    if v.len() == 1 {
        assert_eq!(c.item().unwrap(), v[0], "{ctx}: item");
    } else {
        assert_eq!(
            c.item().unwrap_err().kind,
            ErrorKind::Shape,
            "{ctx}: item of {} elements",
            v.len()
        );
    }
    if let Some(&first) = v.first() {
        let mut wrong = vec![first; v.len() + 1];
        assert_eq!(
            c.read_into(&mut wrong).unwrap_err().kind,
            ErrorKind::Shape,
            "{ctx}: read_into a longer slice"
        );
    } else {
        assert!(
            c.read_into(&mut []).is_ok(),
            "{ctx}: read_into an empty slice"
        );
    }
    // Wrong lengths are rejected at construction.
    let mut longer = v.clone();
    longer.extend(v.first().copied());
    if !v.is_empty() {
        assert_eq!(
            Array::try_from_vec(longer, shape).unwrap_err().kind,
            ErrorKind::Shape,
            "{ctx}: try_from_vec too long"
        );
    }
    // DynArray round trip.
    let d: DynArray = a.clone().into_dyn();
    assert_eq!(d.dtype(), dtype);
    assert_eq!(d.shape(), shape);
    assert_same(
        &read(&d.downcast::<T>().unwrap()),
        &v,
        &format!("{ctx}: into_dyn -> downcast"),
    );
}

#[test]
fn round_trips_all_types_and_ranks() {
    let mut r = rng(601);
    let shapes: &[&[usize]] = &[
        &[],
        &[1],
        &[17],
        &[1, 1],
        &[4, 6],
        &[2, 3, 4],
        &[2, 1, 3, 2],
        &[0],
        &[3, 0],
        &[64, 80],
    ];
    for &shape in shapes {
        let n = numel(shape);
        let mut f = rand_f32(&mut r, n, -1e6, 1e6);
        if n > 3 {
            f[0] = f32::NAN;
            f[1] = -0.0;
            f[2] = f32::INFINITY;
            f[3] = f32::MIN_POSITIVE / 4.0; // subnormal
        }
        let a = Array::from_slice(&f, shape);
        assert_bits_f(&read(&a), &f, "f32 bits survive the round trip");
        round_trip(rand_f32(&mut r, n, -1e6, 1e6), shape, DType::F32);
        round_trip(rand_f64(&mut r, n, -1e300, 1e300), shape, DType::F64);
        round_trip(rand_i32_any(&mut r, n), shape, DType::I32);
        round_trip(rand_u32_any(&mut r, n), shape, DType::U32);
        round_trip(rand_bool(&mut r, n, 0.5), shape, DType::Bool);
    }
    let v = rand_f64(&mut r, 9, -1.0, 1.0);
    let a = Array::from_vec1(v.clone());
    assert_eq!(a.shape(), &[9]);
    assert_bits_f(&read(&a), &v, "from_vec1");
    assert_eq!(item(&Array::scalar(-7i32)), -7);
    assert_eq!(Array::scalar(1.5f32).shape(), &[] as &[usize]);
    assert!(
        std::panic::catch_unwind(|| Array::from_vec(vec![1u32, 2, 3], &[2, 2])).is_err(),
        "from_vec with a wrong length panics"
    );
    let d = Array::from_slice(&[1.0f32], &[1]).into_dyn();
    assert_eq!(
        d.downcast::<f64>().unwrap_err().kind,
        ErrorKind::DType,
        "downcast to the wrong type"
    );
}

#[test]
fn reads_of_computed_arrays() {
    let mut r = rng(602);
    let x = rand_f64(&mut r, 10_000, -10.0, 10.0);
    let y = rand_f64(&mut r, 10_000, -10.0, 10.0);
    let want: Vec<f64> = x.iter().zip(&y).map(|(p, q)| (p - q) * p + 0.5).collect();
    let c = {
        let a = Array::from_vec(x.clone(), &[100, 100]);
        let b = Array::from_slice(&y, &[100, 100]);
        (&a - &b) * &a + 0.5
        // a and b are dropped here; c must still compute.
    };
    c.hint_read();
    assert_exact_f(&read(&c), &want, "read after the inputs were dropped");
    assert_exact_f(&read(&c), &want, "second read of the same array");
    let mut buf = vec![0.0; 10_000];
    c.read_into(&mut buf).unwrap();
    assert_exact_f(&buf, &want, "read_into of a computed array");
    // Item of a 1-element computed array and of a reduction.
    let one = c.slice(&[arrayflow::Slice::at(3), arrayflow::Slice::at(-1)]);
    assert_eq!(one.shape(), &[1, 1]);
    assert_eq!(
        item(&one),
        want[3 * 100 + 99],
        "item of a computed [1, 1] array"
    );
    assert_eq!(c.sum().item().unwrap(), item(&c.sum()), "item twice");

    // Several pending arrays, then execute(), then reads.
    let d = &c * 2.0;
    let e = c.gt(0.0);
    Runtime::execute();
    assert_exact_f(
        &read(&d),
        &want.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
        "read after execute",
    );
    assert_same(
        &read(&e),
        &want.iter().map(|&v| v > 0.0).collect::<Vec<_>>(),
        "bool read after execute",
    );

    // A block: everything recorded inside is compiled together; results are the same.
    let xi = rand_i32_any(&mut r, 5000);
    let (s, t) = Runtime::block(|| {
        let a = Array::from_slice(&xi, &[5000]);
        let mut acc = a.clone();
        for k in 0..20 {
            acc = &acc * 3 + k;
        }
        (acc.clone(), acc ^ &a)
    });
    let mut ws: Vec<i32> = xi.clone();
    for k in 0..20 {
        ws = ws
            .iter()
            .map(|v| v.wrapping_mul(3).wrapping_add(k))
            .collect();
    }
    assert_same(&read(&s), &ws, "block result");
    assert_same(
        &read(&t),
        &ws.iter().zip(&xi).map(|(p, q)| p ^ q).collect::<Vec<_>>(),
        "block second result",
    );
}

/// A long chain recorded without reads (more entries than the queue threshold) computes the same.
#[test]
fn long_unread_chains() {
    let mut r = rng(603);
    let x = rand_f32(&mut r, 1000, -1.0, 1.0);
    let mut a = Array::from_slice(&x, &[1000]);
    let mut want = x.clone();
    for k in 0..700 {
        let c = (k % 7) as f32 * 0.125;
        a = &a * 0.5 + c;
        want.iter_mut().for_each(|v| *v = *v * 0.5 + c);
    }
    assert_exact_f(&read(&a), &want, "700-op chain");
}

#[test]
fn dyn_array_arithmetic() {
    let mut r = rng(604);
    let x = rand_f32(&mut r, 12, -5.0, 5.0);
    let y = rand_f32(&mut r, 12, 0.5, 5.0);
    let a = Array::from_slice(&x, &[3, 4]).into_dyn();
    let b = Array::from_slice(&y, &[3, 4]).into_dyn();
    let zip =
        |f: fn(f32, f32) -> f32| -> Vec<f32> { x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect() };
    let get = |d: DynArray| read(&d.downcast::<f32>().unwrap());
    assert_exact_f(&get(a.try_add(&b).unwrap()), &zip(|p, q| p + q), "dyn add");
    assert_exact_f(&get(a.try_sub(&b).unwrap()), &zip(|p, q| p - q), "dyn sub");
    assert_exact_f(&get(a.try_mul(&b).unwrap()), &zip(|p, q| p * q), "dyn mul");
    assert_exact_f(&get(a.try_div(&b).unwrap()), &zip(|p, q| p / q), "dyn div");
    let i = Array::from_slice(&[1i32; 12], &[3, 4]).into_dyn();
    assert_eq!(
        a.try_add(&i).unwrap_err().kind,
        ErrorKind::DType,
        "dyn add of f32 and i32"
    );
}
