//! `histogram`, `bincount` and `count_nonzero` on the executor the environment picks (CI runs
//! this file on the CPU, OpenCL, wgpu, the tile VM alone and under comparison mode), against
//! plain-Rust loops on seeded random data.
//!
//! - `histogram`: the oracle builds NumPy's edges (`linspace` in f64: `k * ((hi - lo) / bins) +
//!   lo`, the last exactly `hi`, rounded to the element type) and bins by a linear scan (bin `k`
//!   holds `e[k] <= x < e[k + 1]`, the last bin also `x == e[bins]`; outside values and NaN are
//!   not counted). The data holds every edge itself, its neighbours one ulp either side, values
//!   outside the range, ±0, ±inf and NaN. Counts are exact. Bin counts of 1, 7, 256 (local
//!   counters on a GPU) and 5000 (global counters); sizes that cross work-groups.
//! - `bincount`: i32 and u32, counts exact; a value out of range (too large, negative) fails the
//!   read.
//! - `count_nonzero`: along every axis of 3-D arrays with zeros, -0.0 and NaN, every type.
//!
//! Bad calls (no bins, `lo >= hi`, a range the type cannot resolve, an axis out of range) are
//! errors at the call's line in this file. On a device executor f32/integer calls must run on
//! the device (no CPU fallback).

mod common;

use arrayflow::{Array, Backend, DType, Element, ErrorKind, Float, Runtime};
use common::*;
use rand::RngExt;
use rand::rngs::StdRng;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Runs `f` and asserts that a device executor ran the work on the device (f64 aside).
fn on_the_device<T: Element>(what: &str, f: impl FnOnce()) {
    let before = Runtime::stats();
    f();
    let st = Runtime::stats().since(&before);
    let device = !matches!(common::the_device(), Backend::Cpu);
    if device && T::DTYPE != DType::F64 {
        assert_eq!(
            st.device.fallbacks, 0,
            "{what}: ran on the CPU: {:?}",
            st.device
        );
    }
}

/// A float under test.
trait F: Float + PartialOrd + Copy + std::fmt::Debug + std::ops::Neg<Output = Self> {
    fn of(x: f64) -> Self;
    fn next_up(self) -> Self;
    fn next_down(self) -> Self;
    const NAN: Self;
    const INF: Self;
}

macro_rules! float {
    ($t:ty) => {
        impl F for $t {
            fn of(x: f64) -> $t {
                x as $t
            }
            fn next_up(self) -> $t {
                <$t>::next_up(self)
            }
            fn next_down(self) -> $t {
                <$t>::next_down(self)
            }
            const NAN: $t = <$t>::NAN;
            const INF: $t = <$t>::INFINITY;
        }
    };
}
float!(f32);
float!(f64);

/// NumPy's edges for `bins` bins on `[lo, hi]`, rounded to `T`.
fn edges<T: F>(bins: usize, lo: f64, hi: f64) -> Vec<T> {
    let step = (hi - lo) / bins as f64;
    let mut e: Vec<T> = (0..bins).map(|k| T::of(k as f64 * step + lo)).collect();
    e.push(T::of(hi));
    e
}

/// The oracle: a linear scan over the bins.
fn histogram_oracle<T: F>(x: &[T], e: &[T]) -> Vec<u32> {
    let bins = e.len() - 1;
    let mut counts = vec![0u32; bins];
    for &v in x {
        for k in 0..bins {
            let last = k == bins - 1;
            if e[k] <= v && (v < e[k + 1] || (last && v <= e[k + 1])) {
                counts[k] += 1;
                break;
            }
        }
    }
    counts
}

/// `n` values: uniform over a range a little wider than `[lo, hi]`, and every edge with its
/// neighbours, the ends, ±0, ±inf and NaN mixed in.
fn data<T: F>(r: &mut StdRng, n: usize, e: &[T], lo: f64, hi: f64) -> Vec<T> {
    let w = hi - lo;
    let mut x: Vec<T> = (0..n)
        .map(|_| T::of(r.random_range(lo - 0.1 * w..hi + 0.1 * w)))
        .collect();
    let mut special = vec![T::of(0.0), T::of(-0.0), T::INF, -T::INF, T::NAN];
    for &edge in e {
        special.extend([edge, edge.next_up(), edge.next_down()]);
    }
    for (i, s) in special.into_iter().enumerate() {
        let at = (i * 7919) % x.len().max(1);
        if at < x.len() {
            x[at] = s;
        } else {
            x.push(s);
        }
    }
    x
}

fn histogram_case<T: F>(bins: usize, lo: f64, hi: f64, n: usize, seed: u64) {
    let _one = SERIAL.lock();
    let mut r = rng(seed);
    let e = edges::<T>(bins, lo, hi);
    let x = data(&mut r, n, &e, lo, hi);
    let want = histogram_oracle(&x, &e);
    let what = format!(
        "{:?} histogram of {} into {bins} on [{lo}, {hi}]",
        T::DTYPE,
        x.len()
    );
    on_the_device::<T>(&what, || {
        // Also of a 2-D array: the histogram counts every element.
        let a = Array::from_slice(&x, &[x.len()]);
        let got = a.histogram(bins, lo, hi);
        assert_eq!(got.shape(), &[bins], "{what}");
        assert_same(&read(&got), &want, &what);
    });
}

#[test]
fn histogram_f32_edges_and_bins() {
    histogram_case::<f32>(1, -1.0, 1.0, 300, 1);
    histogram_case::<f32>(7, 0.1, 0.8, 3000, 2);
    histogram_case::<f32>(256, -3.0, 5.0, 20_000, 3);
    histogram_case::<f32>(10, 0.0, 1.0, 2000, 4);
    histogram_case::<f32>(5000, -1e3, 1e3, 12_000, 5);
    // Few bins, many work-groups: counts per thread on a GPU.
    histogram_case::<f32>(8, -2.0, 2.0, 70_000, 6);
}

#[test]
fn histogram_f64_edges_and_bins() {
    histogram_case::<f64>(1, 2.0, 3.0, 300, 11);
    histogram_case::<f64>(10, 0.0, 1.0, 3000, 12);
    histogram_case::<f64>(300, -1e-3, 1e-3, 5000, 13);
}

#[test]
fn histogram_of_computed_values_and_any_shape() {
    let _one = SERIAL.lock();
    // Values exactly on the bin edges 0, 0.25, ..., 1 (the sums are exact), a 2-D input
    // computed by a fused kernel.
    let x = Array::from_vec((0..20).map(|i| (i % 5) as f32).collect(), &[4, 5]);
    let got = (&x * 0.25f32).histogram(4, 0.0, 1.0);
    // 0, 0.25, 0.5, 0.75 in bins 0..3 and 1.0 in the last (closed) bin, four of each.
    assert_same(&read(&got), &[4, 4, 4, 8], "histogram of x * 0.25");
    // Hand-checked: NaN and outside values ignored, lo and hi counted.
    let x = Array::from_vec(vec![-0.5f64, 0.0, 0.2, 0.4, 0.6, 1.0, 1.5, f64::NAN], &[8]);
    assert_same(
        &read(&x.histogram(2, 0.0, 1.0)),
        &[3, 2],
        "histogram by hand",
    );
}

#[test]
fn bincount_counts_each_value() {
    let _one = SERIAL.lock();
    let mut r = rng(21);
    for (n, length) in [
        (1usize, 1usize),
        (3000, 10),
        (9000, 5000),
        (500, 256),
        // Few bins, many work-groups: counts per thread on a GPU.
        (70_000, 1),
        (70_000, 8),
    ] {
        let v: Vec<u32> = (0..n).map(|_| r.random_range(0..length as u32)).collect();
        let mut want = vec![0u32; length];
        for &x in &v {
            want[x as usize] += 1;
        }
        let what = format!("bincount of {n} into {length}");
        on_the_device::<u32>(&what, || {
            let got = Array::from_slice(&v, &[n]).bincount(length);
            assert_eq!(got.shape(), &[length]);
            assert_same(&read(&got), &want, &format!("{what}, u32"));
            let vi: Vec<i32> = v.iter().map(|&x| x as i32).collect();
            // Counted over all elements of a 2-D array.
            let shape = if n % 2 == 0 { vec![n / 2, 2] } else { vec![n] };
            let got = Array::from_slice(&vi, &shape).bincount(length);
            assert_same(&read(&got), &want[..], &format!("{what}, i32"));
        });
    }
}

#[test]
fn bincount_out_of_range_fails_the_read() {
    let _one = SERIAL.lock();
    for (name, a) in [
        (
            "u32 value 5 for length 5",
            Array::from_vec(vec![0u32, 5, 1], &[3]).bincount(5),
        ),
        (
            "i32 value -1",
            Array::from_vec(vec![0i32, -1], &[2]).bincount(5),
        ),
        ("length 0", Array::from_vec(vec![0u32], &[1]).bincount(0)),
    ] {
        let e = a.to_vec().expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidResult, "{name}: {e}");
        let text = e.to_string();
        assert!(text.contains("out of range"), "{name}: {text}");
        assert!(
            text.contains("counting.rs"),
            "{name}: names the call site: {text}"
        );
    }
    // Valid calls work afterwards; an empty input counts nothing.
    let ok = Array::from_vec(vec![4u32, 4, 0], &[3]).bincount(5);
    assert_same(
        &read(&ok),
        &[1, 0, 0, 0, 2],
        "a valid call after the errors",
    );
    let empty = Array::<u32>::zeros(&[0]).bincount(3);
    assert_same(&read(&empty), &[0, 0, 0], "bincount of nothing");
}

/// `count_nonzero` along each axis of a `[3, 4, 5]` array against a loop.
fn count_nonzero_case<T: arrayflow::Numeric + PartialEq>(x: Vec<T>, zero: T) {
    let shape = [3usize, 4, 5];
    let a = Array::from_slice(&x, &shape);
    let nz = |v: T| (v != zero) as u32; // NaN != 0; -0.0 == 0
    let total: u32 = x.iter().map(|&v| nz(v)).sum();
    let what = format!("count_nonzero {:?}", T::DTYPE);
    on_the_device::<T>(&what, || {
        assert_eq!(item(&a.count_nonzero()), total, "{what}");
        for axis in 0..3 {
            let kept: Vec<usize> = (0..3).filter(|&d| d != axis).collect();
            let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
            let mut want = vec![0u32; numel(&out_shape)];
            for (lin, &v) in x.iter().enumerate() {
                let i = unravel(lin, &shape);
                let o: Vec<usize> = kept.iter().map(|&d| i[d]).collect();
                want[ravel(&o, &out_shape)] += nz(v);
            }
            let got = a.count_nonzero_axis(axis);
            assert_eq!(got.shape(), &out_shape[..], "{what} axis {axis}");
            assert_same(&read(&got), &want, &format!("{what} axis {axis}"));
        }
        let got = a.try_count_nonzero_axes(&[0, 2]).unwrap();
        let want: Vec<u32> = (0..4)
            .map(|j| {
                (0..3)
                    .flat_map(|i| (0..5).map(move |k| (i * 4 + j) * 5 + k))
                    .map(|lin| nz(x[lin]))
                    .sum()
            })
            .collect();
        assert_same(&read(&got), &want, &format!("{what} axes [0, 2]"));
    });
}

#[test]
fn count_nonzero_along_axes() {
    let _one = SERIAL.lock();
    let mut r = rng(31);
    let n = 60;
    let pick = |r: &mut StdRng, i: usize| -> f64 {
        match (i * 13) % 7 {
            0 | 1 => 0.0,
            2 => -0.0,
            3 => f64::NAN,
            _ => r.random_range(-5.0..5.0),
        }
    };
    let x: Vec<f64> = (0..n).map(|i| pick(&mut r, i)).collect();
    count_nonzero_case(x.iter().map(|&v| v as f32).collect::<Vec<f32>>(), 0.0);
    count_nonzero_case(x.clone(), 0.0);
    count_nonzero_case(
        (0..n).map(|_| r.random_range(-2..=2)).collect::<Vec<i32>>(),
        0,
    );
    count_nonzero_case(
        (0..n).map(|_| r.random_range(0..=2)).collect::<Vec<u32>>(),
        0,
    );
}

/// The error's text names this file and the line of the call.
#[track_caller]
fn at_this_line(e: &arrayflow::Error, line: u32, what: &str) {
    let text = e.to_string();
    let want = format!("counting.rs:{line}:");
    assert!(
        text.contains(&want),
        "{what}: `{text}` does not name `{want}`"
    );
}

#[test]
fn bad_calls_are_errors_at_the_callers_line() {
    let x = Array::from_vec(vec![0.5f32; 6], &[2, 3]);
    let (e, line) = (x.try_histogram(0, 0.0, 1.0).unwrap_err(), line!());
    at_this_line(&e, line, "zero bins");
    assert!(e.to_string().contains("at least one bin"), "{e}");
    let (e, line) = (x.try_histogram(4, 1.0, 1.0).unwrap_err(), line!());
    at_this_line(&e, line, "lo == hi");
    let (e, line) = (x.try_histogram(4, 2.0, 1.0).unwrap_err(), line!());
    at_this_line(&e, line, "lo > hi");
    assert!(e.to_string().contains("lo < hi"), "{e}");
    let (e, line) = (x.try_histogram(4, f64::NAN, 1.0).unwrap_err(), line!());
    at_this_line(&e, line, "NaN lo");
    let (e, line) = (x.try_histogram(4, 1.0, 1.0 + 1e-12).unwrap_err(), line!());
    at_this_line(&e, line, "a range f32 cannot resolve");
    assert!(e.to_string().contains("empty in f32"), "{e}");
    assert!(x.cast::<f64>().try_histogram(4, 1.0, 1.0 + 1e-12).is_ok());
    let (e, line) = (x.try_count_nonzero_axes(&[2]).unwrap_err(), line!());
    at_this_line(&e, line, "count_nonzero axis out of range");
    let one = Array::from_vec(vec![1u32], &[1]);
    let (e, line) = (one.try_bincount(1 << 33).unwrap_err(), line!());
    at_this_line(&e, line, "bincount length past u32");
}
