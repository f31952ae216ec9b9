//! Sorting (`src/api/sort.rs`, `intrinsics/sort/`) on the executor `ARRAYFLOW_DEVICE` picks (CI
//! runs this file on each: the CPU, OpenCL on PoCL, wgpu on lavapipe, and in comparison mode),
//! against oracles written here: a stable `sort_by` whose comparison is `f64::total_cmp` with
//! NaN of either sign moved last and -0.0 equal to +0.0 (integers: `Ord`). Data are seeded,
//! with many duplicates, signed zeros, infinities and NaNs with payloads of both signs; values
//! are compared bit for bit (so stability shows in which zero or NaN comes where), positions
//! exactly (so argsort's stability is checked element by element). Covered: 1-D sorts crossing
//! the GPU paths (rows of up to 2048 elements sort in one work-group, longer ones take the
//! radix passes: 70,000 elements), descending sorts, both axes of 2-D arrays (one long row per
//! radix tile set, strided rows), topk (also of rows longer than 2048, which take a selection
//! instead of a sort), searchsorted on both sides, unique with counts,
//! take_along_axis (i32 and u32 indices, broadcasting, indices out of range), and errors naming
//! this file. On a device executor every call must also have run on the device (no CPU
//! fallback; f64 goes to the CPU only where the device has none). Lengths repeat across tests
//! (1000, 70,000) so that each device program is built once per process: PoCL takes about 5 s
//! for a radix-sort program on CI's machine (`--nocapture` prints the builds per case).

mod common;

use arrayflow::{Array, Backend, ErrorKind, Numeric, Runtime, Side};
use common::*;
use rand::RngExt;
use rand::rngs::StdRng;
use std::cmp::Ordering;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// An element type under test: random data with duplicates and special values, the oracle's
/// order and the bits compared.
trait Case: Numeric {
    fn random(r: &mut StdRng, n: usize) -> Vec<Self>;
    fn order(a: Self, b: Self) -> Ordering;
    fn bits(self) -> u64;
}

/// `total_cmp` with every NaN last (both signs equal) and -0.0 equal to +0.0.
fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ if a == b => Ordering::Equal,
        _ => a.total_cmp(&b),
    }
}

impl Case for f32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<f32> {
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(0xffa0_0001),
            f32::from_bits(0x0000_0003),
            f32::MAX,
        ];
        (0..n)
            .map(|_| match r.random_range(0..10) {
                0 => special[r.random_range(0..special.len())],
                // Few distinct values: many duplicates.
                1..=5 => r.random_range(-20..20) as f32 * 0.25,
                _ => r.random_range(-1e6f32..1e6),
            })
            .collect()
    }
    fn order(a: f32, b: f32) -> Ordering {
        float_order(a as f64, b as f64)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Case for f64 {
    fn random(r: &mut StdRng, n: usize) -> Vec<f64> {
        let special = [
            0.0,
            -0.0,
            f64::NEG_INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef),
            f64::from_bits(0xfff0_0000_0000_0001),
        ];
        (0..n)
            .map(|_| match r.random_range(0..10) {
                0 => special[r.random_range(0..special.len())],
                1..=5 => r.random_range(-20..20) as f64 * 0.5,
                _ => r.random_range(-1e12f64..1e12),
            })
            .collect()
    }
    fn order(a: f64, b: f64) -> Ordering {
        float_order(a, b)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

impl Case for i32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<i32> {
        (0..n)
            .map(|_| match r.random_range(0..10) {
                0 => [i32::MIN, i32::MAX, 0, -1][r.random_range(0..4)],
                1..=5 => r.random_range(-30..30),
                _ => r.random::<i32>(),
            })
            .collect()
    }
    fn order(a: i32, b: i32) -> Ordering {
        a.cmp(&b)
    }
    fn bits(self) -> u64 {
        self as u32 as u64
    }
}

impl Case for u32 {
    fn random(r: &mut StdRng, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| match r.random_range(0..10) {
                0 => [0, u32::MAX, 1 << 31][r.random_range(0..3)],
                1..=5 => r.random_range(0..40),
                _ => r.random::<u32>(),
            })
            .collect()
    }
    fn order(a: u32, b: u32) -> Ordering {
        a.cmp(&b)
    }
    fn bits(self) -> u64 {
        self as u64
    }
}

/// The rows of `shape` along `axis`: for each row, the linear index of each of its elements.
fn rows(shape: &[usize], axis: usize) -> Vec<Vec<usize>> {
    let pre: usize = shape[..axis].iter().product();
    let post: usize = shape[axis + 1..].iter().product();
    let dim = shape[axis];
    let mut out = Vec::new();
    for p in 0..pre {
        for q in 0..post {
            out.push((0..dim).map(|j| (p * dim + j) * post + q).collect());
        }
    }
    out
}

/// The oracle's argsort along `axis`: a stable sort of each row's positions.
fn oracle_argsort<T: Case>(x: &[T], shape: &[usize], axis: usize, descending: bool) -> Vec<u32> {
    let mut out = vec![0u32; x.len()];
    for row in rows(shape, axis) {
        let mut js: Vec<usize> = (0..row.len()).collect();
        js.sort_by(|&a, &b| {
            let o = T::order(x[row[a]], x[row[b]]);
            if descending { o.reverse() } else { o }
        });
        for (j, &from) in js.iter().enumerate() {
            out[row[j]] = from as u32;
        }
    }
    out
}

/// The sorted values the oracle's positions give.
fn take_rows<T: Copy>(x: &[T], shape: &[usize], axis: usize, pos: &[u32]) -> Vec<T> {
    let mut out = x.to_vec();
    for row in rows(shape, axis) {
        for &i in &row {
            out[i] = x[row[pos[i] as usize]];
        }
    }
    out
}

#[track_caller]
fn assert_bits<T: Case>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| g.bits() != w.bits())
        .take(8)
        .map(|(i, (g, w))| format!("[{i}] got {g:?} want {w:?}"))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatch:\n  {}", bad.join("\n  "));
}

#[track_caller]
fn assert_positions(got: &[u32], want: &[u32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| g != w)
        .take(8)
        .map(|(i, (g, w))| format!("[{i}] got {g} want {w}"))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatch:\n  {}", bad.join("\n  "));
}

/// On a device executor, the work of `f` ran on the device: no program fell back to the CPU (f64
/// programs go to the CPU on a device without f64, counted apart).
fn on_the_device<T: Case, R>(what: &str, f: impl FnOnce() -> R) -> R {
    let before = Runtime::stats();
    let r = f();
    let st = Runtime::stats().since(&before);
    println!(
        "{what}: {} device compiles, {:.2} s",
        st.device.compiles,
        st.device.compile_ns as f64 * 1e-9
    );
    if common::the_device() != Backend::Cpu {
        assert_eq!(st.device.fallbacks, 0, "{what}: {:?}", st.device);
        let f64_on_cpu = T::DTYPE == arrayflow::DType::F64 && common::the_device() == Backend::Wgpu;
        if !f64_on_cpu && st.device.f64_to_cpu == 0 {
            assert!(st.device.tasks > 0, "{what}: nothing ran on the device");
        }
    }
    r
}

/// What a 1-D case runs: value sorts and argsorts, ascending and descending.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Sort,
    Argsort,
    SortDown,
    ArgsortDown,
}

/// `ops` on `n` random elements (ascending through the flattening `sort()`/`argsort()` of a
/// 2-D array, descending along axis 0 of a 1-D one). Each (type, length, op) is one device
/// program, compiled once per process: the tests share lengths so that PoCL builds few.
fn one_dimensional<T: Case>(n: usize, seed: u64, ops: &[Op]) {
    let x = T::random(&mut rng(seed), n);
    let a = Array::from_slice(&x, &[n / 10, 10]);
    let v = Array::from_slice(&x, &[n]);
    for &op in ops {
        let descending = matches!(op, Op::SortDown | Op::ArgsortDown);
        let what = format!(
            "{:?} n={n} {}",
            T::DTYPE,
            match op {
                Op::Sort => "sort",
                Op::Argsort => "argsort",
                Op::SortDown => "sort descending",
                Op::ArgsortDown => "argsort descending",
            }
        );
        let want = oracle_argsort(&x, &[n], 0, descending);
        on_the_device::<T, _>(&what, || match op {
            Op::Sort => assert_bits(&read(&a.sort()), &take_rows(&x, &[n], 0, &want), &what),
            Op::SortDown => assert_bits(
                &read(&v.sort_axis_descending(0)),
                &take_rows(&x, &[n], 0, &want),
                &what,
            ),
            Op::Argsort => assert_positions(&read(&a.argsort()), &want, &what),
            Op::ArgsortDown => assert_positions(&read(&v.argsort_axis_descending(0)), &want, &what),
        });
    }
}

use Op::*;

#[test]
fn f32_sorts_in_one_work_group_and_across_radix_tiles() {
    let _one = SERIAL.lock();
    one_dimensional::<f32>(1000, 1, &[Sort, Argsort, SortDown, ArgsortDown]);
    one_dimensional::<f32>(70_000, 2, &[Sort, Argsort]);
}

#[test]
fn f64_sorts() {
    let _one = SERIAL.lock();
    one_dimensional::<f64>(1000, 3, &[Sort, Argsort]);
    one_dimensional::<f64>(70_000, 4, &[Sort]);
}

#[test]
fn i32_sorts() {
    let _one = SERIAL.lock();
    one_dimensional::<i32>(70_000, 6, &[Sort, ArgsortDown]);
}

#[test]
fn u32_sorts() {
    let _one = SERIAL.lock();
    one_dimensional::<u32>(1000, 7, &[Sort, Argsort]);
}

/// Equal keys keep their input order: signed zeros and NaNs of both signs come out as they went
/// in, and an argsort of all-equal elements is the identity.
#[test]
fn stable_for_equal_keys() {
    let _one = SERIAL.lock();
    let nan = f32::from_bits(0x7fc0_0001);
    let neg_nan = f32::from_bits(0xffc0_0002);
    let x: Vec<f32> = (0..70_000)
        .map(|i| match i % 5 {
            0 => 0.0,
            1 => -0.0,
            2 => nan,
            3 => neg_nan,
            _ => -0.0,
        })
        .collect();
    // The lengths of the f32 cases above: the same device programs.
    for n in [1000usize, 70_000] {
        let a = Array::from_slice(&x[..n], &[n]);
        let s = read(&a.sort());
        let zeros: Vec<f32> = x[..n].iter().copied().filter(|v| *v == 0.0).collect();
        let nans: Vec<f32> = x[..n].iter().copied().filter(|v| v.is_nan()).collect();
        let want: Vec<f32> = zeros.into_iter().chain(nans).collect();
        assert_bits(&s, &want, &format!("zeros then NaNs in input order, n={n}"));
        let same = Array::from_slice(&vec![-0.0f32; n], &[n]);
        let id: Vec<u32> = (0..n as u32).collect();
        assert_positions(&read(&same.argsort()), &id, "all equal");
        if n == 1000 {
            assert_positions(
                &read(&same.argsort_axis_descending(0)),
                &id,
                "all equal, descending",
            );
        }
    }
}

/// Both axes of 2-D arrays: many short rows (one work-group sorts several), long rows (radix
/// tiles per row), and rows along axis 0 (strided).
#[test]
fn along_each_axis_of_2d_arrays() {
    let _one = SERIAL.lock();
    let mut r = rng(20);
    // (shape, axis, sort, argsort): radix rows along the last axis (argsort) and strided
    // along the first (sort), work-group rows both ways.
    let cases = [
        ([37usize, 300usize], 0usize, true, true),
        ([37, 300], 1, true, true),
        ([3, 5000], 1, false, true),
        ([5000, 3], 0, true, false),
        ([5000, 3], 1, true, false),
    ];
    for (shape, axis, sort, argsort) in cases {
        let x = f32::random(&mut r, shape[0] * shape[1]);
        let a = Array::from_slice(&x, &shape);
        let what = format!("f32 {shape:?} axis {axis}");
        let want = oracle_argsort(&x, &shape, axis, false);
        on_the_device::<f32, _>(&what, || {
            if argsort {
                let got = read(&a.argsort_axis(axis));
                assert_positions(&got, &want, &format!("argsort {what}"));
            }
            if sort {
                assert_bits(
                    &read(&a.sort_axis(axis)),
                    &take_rows(&x, &shape, axis, &want),
                    &format!("sort {what}"),
                );
            }
        });
    }
    // Integers along axis 0 of a 3-D array, descending.
    let x = i32::random(&mut r, 4 * 50 * 3);
    let a = Array::from_slice(&x, &[4, 50, 3]);
    let want = oracle_argsort(&x, &[4, 50, 3], 1, true);
    on_the_device::<i32, _>("i32 [4, 50, 3] axis 1", || {
        assert_positions(
            &read(&a.argsort_axis_descending(1)),
            &want,
            "argsort descending i32 [4, 50, 3] axis 1",
        );
        assert_bits(
            &read(&a.sort_axis_descending(1)),
            &take_rows(&x, &[4, 50, 3], 1, &want),
            "sort descending i32 [4, 50, 3] axis 1",
        );
    });
}

/// topk against the oracle's descending order: the first k of each row, largest first.
#[test]
fn topk_largest_first() {
    let _one = SERIAL.lock();
    let mut r = rng(30);
    let x = f32::random(&mut r, 6 * 500);
    let a = Array::from_slice(&x, &[6, 500]);
    for (k, axis) in [(5usize, 1usize), (3, 0), (500, 1)] {
        let what = format!("topk({k}, {axis}) of [6, 500]");
        let order = oracle_argsort(&x, &[6, 500], axis, true);
        let mut want_shape = [6usize, 500];
        want_shape[axis] = k;
        let (got_v, got_i) = on_the_device::<f32, _>(&what, || {
            let (values, idx) = a.topk(k, axis);
            assert_eq!(values.shape(), &want_shape[..], "{what}");
            assert_eq!(idx.shape(), &want_shape[..], "{what}");
            (read(&values), read(&idx))
        });
        // Element (p, j) of the result is the row's j-th largest.
        let (rows_n, dim) = if axis == 1 { (6, 500) } else { (500, 6) };
        let (mut wv, mut wi) = (Vec::new(), Vec::new());
        for out in 0..got_v.len() {
            let (p, j, q) = if axis == 1 {
                (out / k, out % k, 0)
            } else {
                (0, out / rows_n, out % rows_n)
            };
            let at = |jj: usize| {
                if axis == 1 {
                    p * dim + jj
                } else {
                    jj * rows_n + q
                }
            };
            let pos = order[at(j)] as usize;
            wi.push(pos as u32);
            wv.push(x[at(pos)]);
        }
        assert_positions(&got_i, &wi, &format!("{what} positions"));
        assert_bits(&got_v, &wv, &format!("{what} values"));
    }
    // A long 1-D row.
    let y = u32::random(&mut r, 70_000);
    let b = Array::from_slice(&y, &[70_000]);
    let order = oracle_argsort(&y, &[70_000], 0, true);
    let (v, i) = on_the_device::<u32, _>("topk 100 of 70000", || {
        let (v, i) = b.topk(100, 0);
        (read(&v), read(&i))
    });
    assert_positions(&i, &order[..100], "topk 100 of 70000 positions");
    let wv: Vec<u32> = order[..100].iter().map(|&p| y[p as usize]).collect();
    assert_bits(&v, &wv, "topk 100 of 70000 values");
}

/// The oracle's topk of `x` (shape `shape`) along `axis`: positions and values, the first `k` of
/// each row of the descending stable order, in the result's layout.
fn oracle_topk<T: Case>(x: &[T], shape: &[usize], axis: usize, k: usize) -> (Vec<u32>, Vec<T>) {
    let order = oracle_argsort(x, shape, axis, true);
    let mut out_shape = shape.to_vec();
    out_shape[axis] = k;
    let (src_rows, out_rows) = (rows(shape, axis), rows(&out_shape, axis));
    let n: usize = out_shape.iter().product();
    let (mut pos, mut val) = (vec![0u32; n], vec![x[0]; n]);
    for (sr, or) in src_rows.iter().zip(&out_rows) {
        for j in 0..k {
            let p = order[sr[j]];
            pos[or[j]] = p;
            val[or[j]] = x[sr[p as usize]];
        }
    }
    (pos, val)
}

/// topk of `x` (shape `shape`) along `axis` against the oracle, on the device.
fn check_topk<T: Case>(x: &[T], shape: &[usize], axis: usize, k: usize, what: &str) {
    let what = format!("{what}: topk({k}, {axis}) of {:?} {shape:?}", T::DTYPE);
    let a = Array::from_slice(x, shape);
    let (got_v, got_i) = on_the_device::<T, _>(&what, || {
        let (v, i) = a.topk(k, axis);
        let mut want_shape = shape.to_vec();
        want_shape[axis] = k;
        assert_eq!(v.shape(), &want_shape[..], "{what}");
        assert_eq!(i.shape(), &want_shape[..], "{what}");
        (read(&v), read(&i))
    });
    let (want_i, want_v) = oracle_topk(x, shape, axis, k);
    assert_positions(&got_i, &want_i, &format!("{what} positions"));
    assert_bits(&got_v, &want_v, &format!("{what} values"));
}

/// topk of rows longer than one work-group's sort (2048): the selection path (a radix select on
/// the GPUs). k = 1, 100 and 2000 (near the most it keeps, 2048), ties at the threshold across tiles of
/// 4096, NaNs of both signs and signed zeros, rows of only equal keys, 2-D along both axes, f64
/// (8 digits), and k = len and k past the selection's limit (the sort's path).
#[test]
fn topk_selects_in_long_rows() {
    let _one = SERIAL.lock();
    let mut r = rng(31);
    let x = f32::random(&mut r, 70_000);
    for k in [1, 100] {
        check_topk(&x, &[70_000], 0, k, "random f32");
    }
    check_topk(&x, &[70_000], 0, 70_000, "k = len");
    check_topk(&x[..5000], &[5000], 0, 3000, "k past the selection");
    // Few distinct values: the threshold's ties span tiles; the first of them by position win.
    let ties: Vec<i32> = (0..10_000).map(|_| r.random_range(0..6)).collect();
    check_topk(&ties, &[10_000], 0, 2000, "ties");
    // Only NaNs of both signs and zeros of both signs: NaNs first, then zeros, in input order.
    let special = [f32::NAN, -f32::NAN, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0];
    let eq: Vec<f32> = (0..5000)
        .map(|_| special[r.random_range(0..special.len())])
        .collect();
    check_topk(&eq, &[5000], 0, 2000, "NaNs and zeros");
    // 2-D: rows along the last axis and strided rows along the first.
    check_topk(&x[..15_000], &[3, 5000], 1, 37, "2-D");
    check_topk(&x[..15_000], &[5000, 3], 0, 37, "2-D strided");
    let y = f64::random(&mut r, 5000);
    check_topk(&y, &[5000], 0, 10, "f64");
}

/// searchsorted on both sides against counts: left = elements ordered before v, right = those
/// not after it.
#[test]
fn searchsorted_both_sides() {
    let _one = SERIAL.lock();
    let mut r = rng(40);
    fn check<T: Case>(r: &mut StdRng, n: usize, nv: usize) {
        let mut a = T::random(r, n);
        a.sort_by(|&x, &y| T::order(x, y));
        let mut v = T::random(r, nv);
        v.extend(a.iter().step_by(7).copied());
        v.truncate(v.len() / 2 * 2);
        let sorted = Array::from_slice(&a, &[n]);
        let values = Array::from_slice(&v, &[v.len() / 2, 2]);
        for side in [Side::Left, Side::Right] {
            let what = format!("searchsorted {:?} {side:?} n={n}", T::DTYPE);
            let got = on_the_device::<T, _>(&what, || read(&sorted.searchsorted(&values, side)));
            let want: Vec<u32> = v
                .iter()
                .map(|&x| {
                    a.iter()
                        .filter(|&&e| match side {
                            Side::Left => T::order(e, x) == Ordering::Less,
                            Side::Right => T::order(e, x) != Ordering::Greater,
                        })
                        .count() as u32
                })
                .collect();
            assert_positions(&got, &want, &what);
        }
    }
    check::<f32>(&mut r, 3000, 200);
    check::<i32>(&mut r, 501, 61);
    check::<f64>(&mut r, 100, 20);
}

/// unique: distinct values ascending (the first of each run of equal elements in stable sorted
/// order, so the first zero or NaN of the input) with their counts.
#[test]
fn unique_values_and_counts() {
    let _one = SERIAL.lock();
    let mut r = rng(50);
    fn check<T: Case>(x: &[T], shape: &[usize]) {
        let what = format!("unique {:?} {shape:?}", T::DTYPE);
        let order = oracle_argsort(x, &[x.len()], 0, false);
        let sorted: Vec<T> = order.iter().map(|&i| x[i as usize]).collect();
        let (mut wv, mut wc) = (Vec::<T>::new(), Vec::<u32>::new());
        for &s in &sorted {
            match wv.last() {
                Some(&l) if T::order(l, s) == Ordering::Equal => *wc.last_mut().unwrap() += 1,
                _ => {
                    wv.push(s);
                    wc.push(1);
                }
            }
        }
        let a = Array::from_slice(x, shape);
        let run = || {
            let (v, c) = a.unique().expect(&what);
            (read(&v), read(&c))
        };
        // An empty array runs on the CPU.
        let (v, c) = if x.is_empty() {
            run()
        } else {
            on_the_device::<T, _>(&what, run)
        };
        assert_bits(&v, &wv, &format!("{what} values"));
        assert_positions(&c, &wc, &format!("{what} counts"));
    }
    // Lengths of the sorts above (their device programs), crossing 2048-element blocks.
    check(&f32::random(&mut r, 70_000), &[70, 1000]);
    check(&i32::random(&mut r, 70_000), &[70_000]);
    check(&[7u32; 1000], &[1000]);
    check::<f64>(&[], &[0]);
    let x: Vec<f32> = (0..70_000).map(|i| (i % 997) as f32 - 400.0).collect();
    check(&x, &[70_000]);
}

/// take_along_axis against an index-walking loop: i32 and u32 indices along each axis, fewer
/// and more positions than the axis, broadcast extents, and indices out of range.
#[test]
fn take_along_axis_both_axes() {
    let _one = SERIAL.lock();
    let mut r = rng(60);
    let shape = [7usize, 9];
    let x = f32::random(&mut r, 63);
    let a = Array::from_slice(&x, &shape);
    for axis in 0..2 {
        for m in [4usize, 12] {
            let mut ishape = shape;
            ishape[axis] = m;
            let n = ishape[0] * ishape[1];
            let idx = rand_u32(&mut r, n, 0, shape[axis] as u32 - 1);
            let want: Vec<f32> = (0..n)
                .map(|o| {
                    let (i, j) = (o / ishape[1], o % ishape[1]);
                    let k = idx[o] as usize;
                    if axis == 0 {
                        x[k * 9 + j]
                    } else {
                        x[i * 9 + k]
                    }
                })
                .collect();
            let what = format!("take_along_axis axis {axis} m {m}");
            let (g32, gi) = on_the_device::<f32, _>(&what, || {
                let iu = Array::from_slice(&idx, &ishape);
                let ii: Vec<i32> = idx.iter().map(|&k| k as i32).collect();
                let ii = Array::from_slice(&ii, &ishape);
                (
                    read(&a.take_along_axis(&iu, axis)),
                    read(&a.take_along_axis(&ii, axis)),
                )
            });
            assert_bits(&g32, &want, &format!("{what} u32"));
            assert_bits(&gi, &want, &format!("{what} i32"));
        }
    }
    // Indices [1, 3] broadcast against data [7, 9] along axis 1: every row takes columns 8, 0, 4.
    let idx = Array::from_slice(&[8u32, 0, 4], &[1, 3]);
    let got = read(&a.take_along_axis(&idx, 1));
    let want: Vec<f32> = (0..7)
        .flat_map(|i| [8, 0, 4].map(|k| x[i * 9 + k]))
        .collect();
    assert_bits(&got, &want, "broadcast indices");
    // Out of range: the result is invalid, like gather's.
    for (name, g) in [
        (
            "u32 index 9 on an axis of 9",
            a.take_along_axis(&Array::from_slice(&[9u32; 7], &[7, 1]), 1),
        ),
        (
            "i32 index -1",
            a.take_along_axis(
                &Array::from_slice(&[0i32, -1, 0, 0, 0, 0, 0, 0, 0], &[1, 9]),
                0,
            ),
        ),
    ] {
        let e = g.to_vec().expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidResult, "{name}: {e}");
        assert!(e.to_string().contains("out of bounds"), "{name}: {e}");
        assert!(e.to_string().contains("sort.rs"), "{name}: {e}");
    }
}

/// Bad calls are errors naming this file.
#[test]
fn errors_name_the_callers_file() {
    let a = Array::from_slice(&[3.0f32, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3]);
    let idx = Array::from_slice(&[0u32, 1], &[2]);
    let errors = [
        ("sort axis", a.try_sort_axis(2).map(|_| ()).unwrap_err()),
        (
            "sort descending axis",
            a.try_sort_axis_descending(5).map(|_| ()).unwrap_err(),
        ),
        (
            "argsort axis",
            a.try_argsort_axis(2).map(|_| ()).unwrap_err(),
        ),
        ("topk k", a.try_topk(4, 1).map(|_| ()).unwrap_err()),
        ("topk axis", a.try_topk(1, 3).map(|_| ()).unwrap_err()),
        (
            "take_along_axis rank",
            a.try_take_along_axis(&idx, 1).map(|_| ()).unwrap_err(),
        ),
        (
            "take_along_axis extents",
            a.try_take_along_axis(&Array::from_slice(&[0u32; 6], &[3, 2]), 1)
                .map(|_| ())
                .unwrap_err(),
        ),
        (
            "searchsorted in 2-D",
            a.try_searchsorted(&a, Side::Left).map(|_| ()).unwrap_err(),
        ),
    ];
    for (what, e) in errors {
        let text = e.to_string();
        assert!(
            text.contains(file!()),
            "{what}: `{text}` does not name {}",
            file!()
        );
    }
    // The panicking forms report the same.
    let p = std::panic::catch_unwind(|| a.sort_axis(9)).expect_err("sort_axis(9) panics");
    let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("out of range") && msg.contains(file!()),
        "{msg}"
    );
}
