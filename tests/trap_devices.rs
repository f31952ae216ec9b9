//! Traps where the data is computed (issue 24): the first failing element a device's kernel finds
//! itself (its first-failing word), checked against a plain loop's first bad element on random
//! data with NaNs, infinities, bad gather indices and bad bincount values planted at random
//! positions. On a device the trap record says the device found the element (`Trap::device`)
//! and the CPU ran no fallback of the launch; on the CPU it says the CPU did. Every mode checks
//! the element, its index, the op, the call site and the value.
//!
//! The trap configuration is process-wide, so the tests take turns (`lock`).

mod common;

use arrayflow::{Array, ErrorKind, Runtime};
use arrayflow::{Trap, TrapConfig, TrapKind};
use common::{rand_f32, rng, trap_found_where_computed};
use rand::RngExt;
use std::sync::{Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    Runtime::traps(TrapConfig::off());
    let _ = Runtime::resume();
    Runtime::take_traps();
    g
}

/// `count` distinct random positions below `n` not in `taken`.
fn plant(r: &mut impl RngExt, n: usize, count: usize, taken: &[usize]) -> Vec<usize> {
    let mut ps: Vec<usize> = Vec::new();
    while ps.len() < count {
        let p = r.random_range(0..n);
        if !ps.contains(&p) && !taken.contains(&p) {
            ps.push(p);
        }
    }
    ps
}

/// The single trap recorded since the test's start.
#[track_caller]
fn one_trap() -> Trap {
    let mut ts = Runtime::take_traps();
    assert_eq!(ts.len(), 1, "traps: {ts:#?}");
    ts.pop().unwrap()
}

#[test]
fn the_device_names_the_first_nan_or_infinity_as_a_plain_loop_does() {
    let _g = lock();
    let mut r = rng(0xd1f5);
    Runtime::traps(TrapConfig::nan().inf());
    for (round, shape) in [[33usize, 1000], [257, 255], [1, 100_003], [3, 5]]
        .into_iter()
        .enumerate()
    {
        let n = shape[0] * shape[1];
        let x = rand_f32(&mut r, n, 0.5, 4.0);
        let mut a = rand_f32(&mut r, n, 1.0, 2.0);
        let mut b = rand_f32(&mut r, n, 1.0, 2.0);
        let mut x = x;
        // NaNs from sqrt of a negative, infinities from a division by zero (some negative).
        let nans = plant(&mut r, n, 1 + round % 3, &[]);
        let infs = plant(&mut r, n, 2 + round % 2, &nans);
        for &p in &nans {
            x[p] = -r.random_range(0.5f32..3.0);
        }
        for &p in &infs {
            b[p] = 0.0;
            if r.random_bool(0.5) {
                a[p] = -a[p];
            }
        }
        // The oracle: the first element where sqrt or the division goes bad, by a plain loop.
        let first = (0..n)
            .find(|&i| (x[i] as f64).sqrt().is_nan() || (a[i] as f64 / b[i] as f64).is_infinite())
            .unwrap();
        let before = Runtime::stats();
        let (xa, aa, ba) = (
            Array::from_slice(&x, &shape),
            Array::from_slice(&a, &shape),
            Array::from_slice(&b, &shape),
        );
        let line = line!() + 1;
        let (s, q) = (xa.sqrt(), &aa / &ba);
        let y = &(&s * 2.0) + &q;
        let e = y.to_vec().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
        let t = one_trap();
        assert_eq!(t.element, first, "round {round}: {t}");
        assert_eq!(t.index, vec![first / shape[1], first % shape[1]], "{t}");
        assert_eq!(t.site.line(), line, "{t}");
        assert!(t.site.file().ends_with("trap_devices.rs"), "{t}");
        if nans.contains(&first) {
            assert_eq!((t.kind, t.op.as_str()), (TrapKind::Nan, "sqrt"), "{t}");
            assert!(t.value.is_nan());
        } else {
            assert_eq!((t.kind, t.op.as_str()), (TrapKind::Inf, "div"), "{t}");
            let w = a[first] as f64 / 0.0;
            assert_eq!(t.value, w, "{t}");
        }
        trap_found_where_computed(&t, &before, false);
    }
    Runtime::traps(TrapConfig::off());
}

#[test]
fn the_device_names_the_first_failing_assertion_among_several_checks() {
    let _g = lock();
    let mut r = rng(0xa5e2);
    let shape = [61, 301];
    let n = shape[0] * shape[1];
    for round in 0..3 {
        let mut x = rand_f32(&mut r, n, 0.0, 1.0);
        let high = plant(&mut r, n, 3, &[]);
        let low = plant(&mut r, n, 2, &high);
        for &p in &high {
            x[p] = 1.5;
        }
        for &p in &low {
            x[p] = -0.5;
        }
        // Two assertions in one kernel: (x * 2) in 0..=2, then (x * 2 + 1) at least 0.5.
        let first = (0..n)
            .find(|&i| {
                let v = x[i] as f64 * 2.0;
                !(0.0..=2.0).contains(&v) || v + 1.0 < 0.5
            })
            .unwrap();
        let before = Runtime::stats();
        let xa = Array::from_slice(&x, &shape);
        let y = (&xa * 2.0).assert_in_range(0.0, 2.0);
        let z = (&y + 1.0).assert_in_range(0.5, 10.0);
        let e = z.to_vec().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
        let t = one_trap();
        // The lowest element; at it, the first assertion (the earlier op) when both fail.
        assert_eq!(t.element, first, "round {round}: {t}");
        assert_eq!(t.index, vec![first / shape[1], first % shape[1]]);
        assert_eq!(t.value, x[first] as f64 * 2.0, "{t}");
        assert!(t.message.as_deref().unwrap().contains("0, 2"), "{t}");
        trap_found_where_computed(&t, &before, false);
    }
}

#[test]
fn the_device_names_the_first_bad_gather_index() {
    let _g = lock();
    let mut r = rng(0x6a7e);
    Runtime::traps(TrapConfig::nan().index());
    for (round, (dim, ni)) in [(50usize, 300usize), (7, 5000), (1000, 40_000)]
        .into_iter()
        .enumerate()
    {
        let data = rand_f32(&mut r, dim * 3, 0.0, 1.0);
        let mut idx: Vec<i32> = (0..ni).map(|_| r.random_range(0..dim as i32)).collect();
        for &p in &plant(&mut r, ni, 2 + round, &[]) {
            idx[p] = if r.random_bool(0.5) {
                r.random_range(dim as i32..2 * dim as i32 + 5)
            } else {
                -r.random_range(1..20)
            };
        }
        let first = (0..ni)
            .find(|&j| idx[j] < 0 || idx[j] as usize >= dim)
            .unwrap();
        let before = Runtime::stats();
        let d = Array::from_slice(&data, &[3, dim]);
        let ix = Array::from_slice(&idx, &[ni]);
        let line = line!() + 1;
        let g = d.gather(&ix, 1);
        let e = g.to_vec().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
        let t = one_trap();
        assert_eq!((t.kind, t.op.as_str()), (TrapKind::Index, "gather"), "{t}");
        assert_eq!(t.site.line(), line, "{t}");
        assert_eq!((t.element, t.value), (first, idx[first] as f64), "{t}");
        assert_eq!(t.index, vec![first]);
        // The CPU re-runs the gather for the error's message; the device named the position.
        trap_found_where_computed(&t, &before, true);
    }
    Runtime::traps(TrapConfig::off());
}

#[test]
fn the_device_names_the_first_bad_bincount_value() {
    let _g = lock();
    let mut r = rng(0xb1c7);
    Runtime::traps(TrapConfig::nan().index());
    // Lengths that count in registers, in local counters and in global counters.
    for (round, (length, n)) in [(9usize, 300usize), (700, 5000), (9000, 70_000)]
        .into_iter()
        .enumerate()
    {
        let mut x: Vec<i32> = (0..n).map(|_| r.random_range(0..length as i32)).collect();
        for &p in &plant(&mut r, n, 2 + round, &[]) {
            x[p] = if r.random_bool(0.5) {
                r.random_range(length as i32..2 * length as i32 + 5)
            } else {
                -r.random_range(1..20)
            };
        }
        let first = (0..n)
            .find(|&j| x[j] < 0 || x[j] as usize >= length)
            .unwrap();
        let before = Runtime::stats();
        let xa = Array::from_slice(&x, &[n]);
        let line = line!() + 1;
        let c = xa.bincount(length);
        let e = c.to_vec().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
        let t = one_trap();
        assert_eq!(
            (t.kind, t.op.as_str()),
            (TrapKind::Index, "bincount"),
            "{t}"
        );
        assert_eq!(t.site.line(), line, "{t}");
        assert!(t.site.file().ends_with("trap_devices.rs"), "{t}");
        assert_eq!((t.element, t.value), (first, x[first] as f64), "{t}");
        assert_eq!(t.index, vec![first]);
        // The CPU re-runs the count for the error's message; the device named the position.
        trap_found_where_computed(&t, &before, true);
    }
    Runtime::traps(TrapConfig::off());
}

#[test]
fn the_device_names_the_first_bad_scatter_index() {
    let _g = lock();
    let mut r = rng(0x5ca7);
    Runtime::traps(TrapConfig::nan().index());
    // Axis lengths whose scatter_add sums in registers (15 targets), in local memory (1200) and
    // with global atomics (9000); scatter and put_along_axis check the same way at every length.
    for (round, (dim, ni)) in [(5usize, 300usize), (400, 5000), (3000, 40_000)]
        .into_iter()
        .enumerate()
    {
        let rows = 3;
        let data = rand_f32(&mut r, rows * dim, 0.0, 1.0);
        let vals = rand_f32(&mut r, rows * ni, 0.0, 1.0);
        let bad = |r: &mut rand::rngs::StdRng| {
            if r.random_bool(0.5) {
                r.random_range(dim as i32..2 * dim as i32 + 5)
            } else {
                -r.random_range(1..20)
            }
        };
        let mut idx: Vec<i32> = (0..ni).map(|_| r.random_range(0..dim as i32)).collect();
        for &p in &plant(&mut r, ni, 2 + round, &[]) {
            idx[p] = bad(&mut r);
        }
        // put_along_axis: indices of the data's shape but `ni / 10` along the axis; the position
        // is in the indices flattened row-major.
        let na = rows * (ni / 10);
        let mut along: Vec<i32> = (0..na).map(|_| r.random_range(0..dim as i32)).collect();
        for &p in &plant(&mut r, na, 2 + round, &[]) {
            along[p] = bad(&mut r);
        }
        let out = |x: i32| x < 0 || x as usize >= dim;
        let first = (0..ni).find(|&j| out(idx[j])).unwrap();
        let first_along = (0..na).find(|&j| out(along[j])).unwrap();
        let d = Array::from_slice(&data, &[rows, dim]);
        let ix = Array::from_slice(&idx, &[ni]);
        let v = Array::from_slice(&vals, &[rows, ni]);
        let ia = Array::from_slice(&along, &[rows, ni / 10]);
        let va = Array::from_slice(&vals[..na], &[rows, ni / 10]);
        for op in ["scatter", "scatter_add", "put_along_axis"] {
            let before = Runtime::stats();
            let (s, line) = match op {
                "scatter" => (d.scatter(&ix, &v, 1), line!()),
                "scatter_add" => (d.scatter_add(&ix, &v, 1), line!()),
                _ => (d.put_along_axis(&ia, &va, 1), line!()),
            };
            let e = s.to_vec().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Trap, "{op}: {e}");
            let t = one_trap();
            assert_eq!((t.kind, t.op.as_str()), (TrapKind::Index, op), "{t}");
            assert_eq!(t.site.line(), line, "{t}");
            assert!(t.site.file().ends_with("trap_devices.rs"), "{t}");
            if op == "put_along_axis" {
                let want = (first_along, along[first_along] as f64);
                assert_eq!((t.element, t.value), want, "{t}");
                assert_eq!(t.index, vec![first_along], "{t}");
            } else {
                assert_eq!((t.element, t.value), (first, idx[first] as f64), "{t}");
                assert_eq!(t.index, vec![first], "{t}");
            }
            // The CPU re-runs the scatter for the error's message; the device named the position.
            trap_found_where_computed(&t, &before, true);
        }
    }
    Runtime::traps(TrapConfig::off());
}
