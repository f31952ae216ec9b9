//! `scatter`, `scatter_add` and `put_along_axis` on the executor the environment picks (CI runs
//! this file on the CPU, OpenCL, wgpu, the tile VM alone and under comparison mode), against
//! plain-Rust loops on seeded random data with many duplicate indices: every element type, i32
//! and u32 indices, every axis of 1- to 3-D arrays, sizes that cross work-groups and the CPU's
//! chunked path, `scatter_add` of many sources into few targets (k-means' shape: a GPU's
//! privatised sums) and into more than a work-group holds (atomic adds), computed (fused) inputs
//! and broadcast values.
//!
//! Oracles: the replacing forms apply the sources in order onto a copy (the last duplicate wins)
//! and are compared exactly (floats bit for bit, NaN as NaN). `scatter_add` sums each target in
//! f64 (integers wrap): integers are exact; a float element may differ from the exact sum by
//! `(k + 1) eps_T sum |terms|` for its `k` added terms (a GPU adds in the element type in any
//! order). Errors: an index out of range fails the read (naming this file), a shape or axis that
//! does not fit is an error at the call's line in this file. On a device executor, f32, i32 and
//! u32 calls must run on the device (no CPU fallback).

mod common;

use arrayflow::{Array, Backend, DType, Element, ErrorKind, Runtime};
use common::*;
use rand::RngExt;
use rand::rngs::StdRng;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Which form of scatter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Replace,
    Add,
    Along,
}

/// An element type under test: random values (floats with -0.0 and NaN among them where only
/// data moves), exact comparison, and the sum's size for `scatter_add`'s bound.
trait Case: Element {
    fn random(r: &mut StdRng, n: usize, special: bool) -> Vec<Self>;
    fn same(a: Self, b: Self) -> bool;
    fn f(self) -> f64;
    /// Machine epsilon (0 for integers: exact).
    const EPS: f64;
    /// `a + b` as `scatter_add` defines it for this type (integers wrap; floats through f64).
    fn acc(a: f64, b: Self) -> f64;
    fn from_acc(a: f64) -> Self;
    /// `a.scatter_add(i, v, axis)` (numbers only).
    fn add<I: arrayflow::Index>(
        a: &Array<Self>,
        i: &Array<I>,
        v: &Array<Self>,
        axis: usize,
    ) -> Array<Self>;
}

macro_rules! adds {
    () => {
        fn add<I: arrayflow::Index>(
            a: &Array<Self>,
            i: &Array<I>,
            v: &Array<Self>,
            axis: usize,
        ) -> Array<Self> {
            a.scatter_add(i, v, axis)
        }
    };
}

macro_rules! float_case {
    ($t:ty) => {
        impl Case for $t {
            fn random(r: &mut StdRng, n: usize, special: bool) -> Vec<$t> {
                (0..n)
                    .map(|i| match i % 37 {
                        3 if special => -0.0,
                        7 if special => <$t>::NAN,
                        11 if special => 0.0,
                        _ => r.random_range(-100.0..100.0),
                    })
                    .collect()
            }
            fn same(a: $t, b: $t) -> bool {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            fn f(self) -> f64 {
                self as f64
            }
            const EPS: f64 = <$t>::EPSILON as f64;
            fn acc(a: f64, b: $t) -> f64 {
                a + b as f64
            }
            fn from_acc(a: f64) -> $t {
                a as $t
            }
            adds!();
        }
    };
}
float_case!(f32);
float_case!(f64);

macro_rules! int_case {
    ($t:ty) => {
        impl Case for $t {
            fn random(r: &mut StdRng, n: usize, _special: bool) -> Vec<$t> {
                (0..n).map(|_| r.random::<$t>()).collect()
            }
            fn same(a: $t, b: $t) -> bool {
                a == b
            }
            fn f(self) -> f64 {
                self as f64
            }
            const EPS: f64 = 0.0;
            // Wrapping: accumulate the bits in an f64-carried i64 (exact below 2^53 terms).
            fn acc(a: f64, b: $t) -> f64 {
                ((a as i64 as $t).wrapping_add(b)) as i64 as f64
            }
            fn from_acc(a: f64) -> $t {
                a as i64 as $t
            }
            adds!();
        }
    };
}
int_case!(i32);
int_case!(u32);

impl Case for bool {
    fn random(r: &mut StdRng, n: usize, _special: bool) -> Vec<bool> {
        rand_bool(r, n, 0.5)
    }
    fn same(a: bool, b: bool) -> bool {
        a == b
    }
    fn f(self) -> f64 {
        self as u8 as f64
    }
    const EPS: f64 = 0.0;
    fn acc(_: f64, b: bool) -> f64 {
        b as u8 as f64
    }
    fn from_acc(a: f64) -> bool {
        a != 0.0
    }
    fn add<I: arrayflow::Index>(
        _: &Array<bool>,
        _: &Array<I>,
        _: &Array<bool>,
        _: usize,
    ) -> Array<bool> {
        unreachable!("scatter_add adds numbers")
    }
}

/// One call's geometry: data shape, indices shape, axis, and the index values.
struct Call {
    dshape: Vec<usize>,
    ishape: Vec<usize>,
    axis: usize,
    idx: Vec<usize>,
}

impl Call {
    /// The values' shape.
    fn vshape(&self, form: Form) -> Vec<usize> {
        match form {
            Form::Along => self.ishape.clone(),
            _ => [
                &self.dshape[..self.axis],
                &self.ishape[..],
                &self.dshape[self.axis + 1..],
            ]
            .concat(),
        }
    }
    /// For each source element in order (row-major over the values), the data element it lands
    /// on: written from the multi-index, independently of the library's row/column arithmetic.
    fn targets(&self, form: Form) -> Vec<usize> {
        let vshape = self.vshape(form);
        (0..numel(&vshape))
            .map(|s| {
                let v = unravel(s, &vshape);
                let mut d: Vec<usize> = Vec::with_capacity(self.dshape.len());
                match form {
                    Form::Along => {
                        d.extend_from_slice(&v);
                        d[self.axis] = self.idx[s];
                    }
                    _ => {
                        let ir = self.ishape.len();
                        let j = ravel(&v[self.axis..self.axis + ir], &self.ishape);
                        d.extend_from_slice(&v[..self.axis]);
                        d.push(self.idx[j]);
                        d.extend_from_slice(&v[self.axis + ir..]);
                    }
                }
                ravel(&d, &self.dshape)
            })
            .collect()
    }
}

/// A random call: 1- to 3-D data, indices drawn from a small range so most repeat.
fn random_call(r: &mut StdRng, form: Form) -> Call {
    let rank = r.random_range(1..=3);
    let dshape: Vec<usize> = (0..rank).map(|_| r.random_range(1..=6)).collect();
    let axis = r.random_range(0..rank);
    let ishape: Vec<usize> = match form {
        Form::Along => {
            let mut s = dshape.clone();
            s[axis] = r.random_range(1..=8);
            s
        }
        _ => (0..r.random_range(1..=2))
            .map(|_| r.random_range(1..=5))
            .collect(),
    };
    let idx = (0..numel(&ishape))
        .map(|_| r.random_range(0..dshape[axis]))
        .collect();
    Call {
        dshape,
        ishape,
        axis,
        idx,
    }
}

/// The oracle: sources applied in order onto a copy of data (replace), or summed per target in
/// f64 / wrapping (add); with, per target, the sum of its terms' sizes and their count.
fn oracle<T: Case>(c: &Call, form: Form, data: &[T], vals: &[T]) -> (Vec<T>, Vec<f64>, Vec<usize>) {
    let targets = c.targets(form);
    let mut out = data.to_vec();
    let mut acc: Vec<f64> = data.iter().map(|x| x.f()).collect();
    let mut size: Vec<f64> = data.iter().map(|x| x.f().abs()).collect();
    let mut terms = vec![0usize; data.len()];
    for (s, &t) in targets.iter().enumerate() {
        match form {
            Form::Add => {
                acc[t] = T::acc(acc[t], vals[s]);
                size[t] += vals[s].f().abs();
                terms[t] += 1;
            }
            _ => out[t] = vals[s],
        }
    }
    if form == Form::Add {
        out = acc.iter().map(|&a| T::from_acc(a)).collect();
    }
    (out, size, terms)
}

fn run<T: Case, I: arrayflow::Index>(
    c: &Call,
    form: Form,
    data: &Array<T>,
    idx: &Array<I>,
    vals: &Array<T>,
) -> Array<T> {
    match form {
        Form::Replace => data.scatter(idx, vals, c.axis),
        Form::Add => T::add(data, idx, vals, c.axis),
        Form::Along => data.put_along_axis(idx, vals, c.axis),
    }
}

/// Compares a result with the oracle (`size`/`terms`: `scatter_add`'s bound).
#[track_caller]
fn check<T: Case>(got: &[T], want: &[T], size: &[f64], terms: &[usize], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| {
            if T::EPS == 0.0 || terms[i] == 0 {
                return !T::same(got[i], want[i]);
            }
            let bound = (terms[i] + 1) as f64 * T::EPS * size[i];
            let (g, w) = (got[i].f(), want[i].f());
            !(same_value(g, w) || (g - w).abs() <= bound)
        })
        .take(8)
        .map(|i| format!("[{i}] got {:?} want {:?}", got[i], want[i]))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatch:\n  {}", bad.join("\n  "));
}

/// Runs `f` and asserts that a device executor ran its f32, i32 and u32 work on the device.
fn on_the_device<T: Element>(what: &str, f: impl FnOnce()) {
    let before = Runtime::stats();
    f();
    let st = Runtime::stats().since(&before);
    let device = !matches!(common::the_device(), Backend::Cpu);
    if device && matches!(T::DTYPE, DType::F32 | DType::I32 | DType::U32) {
        assert_eq!(
            st.device.fallbacks, 0,
            "{what}: ran on the CPU: {:?}",
            st.device
        );
    }
}

/// Random calls of `form` for element type `T`, with i32 and u32 indices.
fn random_calls<T: Case>(form: Form, seed: u64) {
    let _one = SERIAL.lock();
    let mut r = rng(seed);
    // A device compiles a program per shape and type (seconds each on PoCL): fewer there.
    let rounds = if any_device() {
        2
    } else if comparison_mode() {
        6
    } else {
        16
    };
    for round in 0..rounds {
        let c = random_call(&mut r, form);
        let data = T::random(&mut r, numel(&c.dshape), form != Form::Add);
        let vshape = c.vshape(form);
        let vals = T::random(&mut r, numel(&vshape), form != Form::Add);
        let (want, size, terms) = oracle(&c, form, &data, &vals);
        let what = format!(
            "{form:?} {:?} round {round}: data {:?} indices {:?} axis {}",
            T::DTYPE,
            c.dshape,
            c.ishape,
            c.axis
        );
        let (a, v) = (
            Array::from_slice(&data, &c.dshape),
            Array::from_slice(&vals, &vshape),
        );
        on_the_device::<T>(&what, || {
            // Both index types on the CPU; one per round, alternating, on a device.
            let both = !any_device();
            if both || round % 2 == 0 {
                let iu: Vec<u32> = c.idx.iter().map(|&i| i as u32).collect();
                let got = run(&c, form, &a, &Array::from_slice(&iu, &c.ishape), &v);
                assert_eq!(got.shape(), &c.dshape[..], "{what}");
                check(&read(&got), &want, &size, &terms, &format!("{what}, u32"));
            }
            if both || round % 2 == 1 {
                let ii: Vec<i32> = c.idx.iter().map(|&i| i as i32).collect();
                let got = run(&c, form, &a, &Array::from_slice(&ii, &c.ishape), &v);
                check(&read(&got), &want, &size, &terms, &format!("{what}, i32"));
            }
        });
    }
}

#[test]
fn scatter_replaces_and_the_last_duplicate_wins() {
    random_calls::<f32>(Form::Replace, 1);
    random_calls::<f64>(Form::Replace, 2);
    random_calls::<i32>(Form::Replace, 3);
    random_calls::<u32>(Form::Replace, 4);
    random_calls::<bool>(Form::Replace, 5);
}

#[test]
fn scatter_add_accumulates_duplicates() {
    random_calls::<f32>(Form::Add, 11);
    random_calls::<f64>(Form::Add, 12);
    random_calls::<i32>(Form::Add, 13);
    random_calls::<u32>(Form::Add, 14);
}

#[test]
fn put_along_axis_replaces_and_the_last_duplicate_wins() {
    random_calls::<f32>(Form::Along, 21);
    random_calls::<f64>(Form::Along, 22);
    random_calls::<i32>(Form::Along, 23);
    random_calls::<u32>(Form::Along, 24);
    random_calls::<bool>(Form::Along, 25);
}

/// 1-D calls of `n` sources into `bins` targets: many work-groups, and for `scatter_add` the
/// CPU's chunked path (40,000 sources into 1,000 targets).
fn long<T: Case>(form: Form, n: usize, bins: usize, seed: u64) {
    let _one = SERIAL.lock();
    let mut r = rng(seed);
    let c = Call {
        dshape: vec![bins],
        ishape: vec![n],
        axis: 0,
        idx: (0..n).map(|_| r.random_range(0..bins)).collect(),
    };
    let form_shape = c.vshape(form);
    let data = T::random(&mut r, bins, false);
    let vals = T::random(&mut r, numel(&form_shape), false);
    let (want, size, terms) = oracle(&c, form, &data, &vals);
    let what = format!("{form:?} {:?}: {n} sources into {bins}", T::DTYPE);
    on_the_device::<T>(&what, || {
        let iu: Vec<u32> = c.idx.iter().map(|&i| i as u32).collect();
        let got = run(
            &c,
            form,
            &Array::from_slice(&data, &c.dshape),
            &Array::from_slice(&iu, &c.ishape),
            &Array::from_slice(&vals, &form_shape),
        );
        check(&read(&got), &want, &size, &terms, &what);
    });
}

#[test]
fn long_calls_cross_work_groups() {
    long::<f32>(Form::Add, 40_000, 1_000, 31);
    long::<f64>(Form::Add, 40_000, 1_000, 32);
    long::<i32>(Form::Add, 3_000, 700, 33);
    long::<u32>(Form::Add, 40_000, 1_000, 34);
    // Past the targets a work-group holds in local memory: atomic adds into the output.
    long::<f32>(Form::Add, 12_000, 5_000, 37);
    long::<u32>(Form::Add, 12_000, 5_000, 38);
    long::<f32>(Form::Replace, 5_000, 300, 35);
    long::<i32>(Form::Along, 5_000, 300, 36);
}

#[test]
fn scatter_add_of_many_rows_and_columns() {
    // Rows in parallel on the CPU (axis 1 of [64, 9, 5]), many sources per target.
    let _one = SERIAL.lock();
    let mut r = rng(41);
    let c = Call {
        dshape: vec![64, 9, 5],
        ishape: vec![40],
        axis: 1,
        idx: (0..40).map(|_| r.random_range(0..9)).collect(),
    };
    let data = f32::random(&mut r, numel(&c.dshape), false);
    let vshape = c.vshape(Form::Add);
    let vals = f32::random(&mut r, numel(&vshape), false);
    let (want, size, terms) = oracle(&c, Form::Add, &data, &vals);
    let iu: Vec<u32> = c.idx.iter().map(|&i| i as u32).collect();
    let got = Array::from_slice(&data, &c.dshape).scatter_add(
        &Array::from_slice(&iu, &c.ishape),
        &Array::from_slice(&vals, &vshape),
        1,
    );
    check(
        &read(&got),
        &want,
        &size,
        &terms,
        "scatter_add [64, 9, 5] axis 1",
    );
}

/// `scatter_add` of `n` rows of `row` values into `k` rows of data (k-means' shape: data
/// `[k, row]`, values `[n, row]`, axis 0), with targets that no source names (their data, -0.0
/// among it, kept bit for bit).
fn few_targets<T: Case>(k: usize, row: usize, n: usize, seed: u64) {
    let _one = SERIAL.lock();
    let mut r = rng(seed);
    // Rows 0 and k - 1 of a k > 2 are never named.
    let named = if k > 2 { 1..k - 1 } else { 0..k };
    let c = Call {
        dshape: vec![k, row],
        ishape: vec![n],
        axis: 0,
        idx: (0..n).map(|_| r.random_range(named.clone())).collect(),
    };
    let mut data = T::random(&mut r, k * row, false);
    if k > 2 {
        data[0] = T::from_acc(-0.0);
    }
    let vshape = c.vshape(Form::Add);
    let vals = T::random(&mut r, numel(&vshape), false);
    let (want, size, terms) = oracle(&c, Form::Add, &data, &vals);
    let what = format!("scatter_add {:?}: {n} rows of {row} into {k}", T::DTYPE);
    on_the_device::<T>(&what, || {
        let a = Array::from_slice(&data, &c.dshape);
        let v = Array::from_slice(&vals, &vshape);
        // Both index types on the CPU; on a device (a program per type), by the seed's parity.
        // `check` compares targets without terms bit for bit.
        if !any_device() || seed.is_multiple_of(2) {
            let iu: Vec<u32> = c.idx.iter().map(|&i| i as u32).collect();
            let got = read(&T::add(&a, &Array::from_slice(&iu, &c.ishape), &v, 0));
            check(&got, &want, &size, &terms, &format!("{what}, u32"));
        }
        if !any_device() || !seed.is_multiple_of(2) {
            let ii: Vec<i32> = c.idx.iter().map(|&i| i as i32).collect();
            let got = read(&T::add(&a, &Array::from_slice(&ii, &c.ishape), &v, 0));
            check(&got, &want, &size, &terms, &format!("{what}, i32"));
        }
    });
}

#[test]
fn scatter_add_into_few_targets() {
    // Many sources per target (2^16 rows: many work-groups): privatised sums on a GPU.
    let n = 1 << 16;
    few_targets::<f32>(1, 1, n, 51);
    few_targets::<f32>(3, 3, n, 52);
    few_targets::<f32>(8, 2, n, 53);
    few_targets::<i32>(8, 2, n, 54);
    few_targets::<u32>(3, 1, n, 55);
    few_targets::<f64>(8, 2, 5_000, 56);
    // 40 targets: sums in local memory on a GPU.
    few_targets::<f32>(20, 2, 20_000, 57);
    few_targets::<i32>(40, 1, 20_000, 58);
}

#[test]
fn computed_inputs_and_broadcast_values() {
    let _one = SERIAL.lock();
    // Data, indices and values computed by fused kernels; the result used by one.
    let x = Array::from_vec((0..12).map(|i| i as f32).collect(), &[3, 4]);
    let idx = Array::from_vec(vec![5u32, 3, 5], &[3]) - 2u32; // [3, 1, 3]
    let v = Array::from_vec(
        vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[3, 3],
    );
    let got = ((&x * 2.0).scatter(&idx, &(&v + 0.5), 1) + 1.0)
        .to_vec()
        .unwrap();
    let mut want: Vec<f32> = (0..12).map(|i| i as f32 * 2.0 + 1.0).collect();
    for row in 0..3 {
        for (j, &col) in [3usize, 1, 3].iter().enumerate() {
            want[row * 4 + col] = v_at(row, j) + 0.5 + 1.0;
        }
    }
    fn v_at(row: usize, j: usize) -> f32 {
        (row * 3 + j + 1) as f32
    }
    assert_same(&got, &want, "scatter of computed inputs");
    // A scalar broadcast to the values' shape, scatter and put_along_axis.
    let s = x.scatter(
        &Array::from_vec(vec![0i32, 2], &[2]),
        &Array::scalar(-1.0f32),
        0,
    );
    let mut want: Vec<f32> = (0..12).map(|i| i as f32).collect();
    want[..4].fill(-1.0);
    want[8..].fill(-1.0);
    assert_same(&read(&s), &want, "scatter of a broadcast scalar");
    let row = Array::from_vec(vec![10.0f32, 20.0, 30.0, 40.0], &[1, 4]);
    let s = x.scatter_add(&Array::from_vec(vec![1u32, 1], &[2]), &row, 0);
    let mut want: Vec<f32> = (0..12).map(|i| i as f32).collect();
    for c in 0..4 {
        want[4 + c] += 2.0 * (10.0 * (c + 1) as f32);
    }
    assert_same(&read(&s), &want, "scatter_add of a broadcast row");
    let cols = Array::from_vec(vec![3i32, 0, 3, 2, 2, 2], &[3, 2]);
    let p = x.put_along_axis(&cols, &Array::from_vec(vec![7.0f32, 8.0], &[1, 2]), 1);
    let want = vec![8.0, 1.0, 2.0, 7.0, 4.0, 5.0, 8.0, 7.0, 8.0, 9.0, 8.0, 11.0];
    // Row 0: col 3 <- 7, col 0 <- 8; row 1: col 3 <- 7, col 2 <- 8; row 2: col 2 <- 7 then 8.
    let want: Vec<f32> = want.to_vec();
    assert_same(&read(&p), &want, "put_along_axis of broadcast values");
}

#[test]
fn index_out_of_range_fails_the_read() {
    let _one = SERIAL.lock();
    let x = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let v2 = Array::from_vec(vec![9.0f32; 4], &[2, 2]);
    let cases = [
        (
            "u32 index 3 on an axis of 3",
            x.scatter(&Array::from_vec(vec![0u32, 3], &[2]), &v2, 1),
        ),
        (
            "i32 index -1",
            x.scatter(&Array::from_vec(vec![-1i32, 0], &[2]), &v2, 1),
        ),
        (
            "scatter_add index 2 on axis 0",
            x.scatter_add(&Array::from_vec(vec![2i32], &[1]), &Array::scalar(1.0), 0),
        ),
        (
            "put_along_axis index 7",
            x.put_along_axis(
                &Array::from_vec(vec![0u32, 7], &[2, 1]),
                &Array::scalar(0.0),
                1,
            ),
        ),
        // Every index is checked, even where no value is scattered (a data row of length 0).
        (
            "no sources",
            Array::<f32>::zeros(&[0, 3]).scatter(
                &Array::from_vec(vec![4u32], &[1]),
                &Array::<f32>::zeros(&[0, 1]),
                1,
            ),
        ),
    ];
    for (name, a) in cases {
        let e = a.to_vec().expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidResult, "{name}: {e}");
        let text = e.to_string();
        assert!(text.contains("out of bounds"), "{name}: {text}");
        assert!(
            text.contains("scatter.rs"),
            "{name}: names the call site: {text}"
        );
    }
    // Valid calls still work afterwards.
    let ok = x.scatter(&Array::from_vec(vec![2u32, 0], &[2]), &v2, 1);
    assert_same(
        &read(&ok),
        &[9.0, 2.0, 9.0, 9.0, 5.0, 9.0],
        "a valid call after the errors",
    );
}

/// The error's text names this file and the line of the call.
#[track_caller]
fn at_this_line(e: &arrayflow::Error, line: u32, what: &str) {
    let text = e.to_string();
    let want = format!("scatter.rs:{line}:");
    assert!(
        text.contains(&want),
        "{what}: `{text}` does not name `{want}`"
    );
}

#[test]
fn bad_calls_are_errors_at_the_callers_line() {
    // Each call sits on one line with its `line!()` (short names keep rustfmt from splitting).
    let x = Array::from_vec(vec![1.0f32; 6], &[2, 3]);
    let i2 = Array::from_vec(vec![0u32, 1], &[2]);
    let (v3, v22, one) = (
        Array::from_vec(vec![1.0f32; 3], &[3]),
        Array::from_vec(vec![1.0f32; 4], &[2, 2]),
        Array::scalar(1.0f32),
    );
    let (e, line) = (x.try_scatter(&i2, &v3, 1).unwrap_err(), line!());
    at_this_line(&e, line, "values of the wrong shape");
    assert!(e.to_string().contains("expected shape [2, 2]"), "{e}");
    assert_eq!(e.kind, ErrorKind::Shape);
    let (e, line) = (x.try_scatter_add(&i2, &v22, 2).unwrap_err(), line!());
    at_this_line(&e, line, "axis out of range");
    assert!(e.to_string().contains("axis 2 is out of range"), "{e}");
    let (e, line) = (x.try_put_along_axis(&i2, &one, 1).unwrap_err(), line!());
    at_this_line(&e, line, "put_along_axis indices of another rank");
    assert!(e.to_string().contains("do not fit"), "{e}");
    let wrong = Array::from_vec(vec![0u32; 6], &[3, 2]);
    let (e, line) = (x.try_put_along_axis(&wrong, &one, 1).unwrap_err(), line!());
    at_this_line(&e, line, "put_along_axis indices of another extent");
    let i21 = i2.reshape(&[2, 1]);
    let (e, line) = (x.try_put_along_axis(&i21, &v3, 1).unwrap_err(), line!());
    at_this_line(&e, line, "put_along_axis values of the wrong shape");
    assert!(e.to_string().contains("expected shape [2, 1]"), "{e}");
}
