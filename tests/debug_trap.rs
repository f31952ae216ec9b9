//! Traps and passes (issue 24, `arrayflow::debug::trap`): NaN, infinity and index traps and user
//! assertions on random data with bad values planted at random positions. Each trap must name the
//! first bad element (the planted position with the lowest index, found by a plain loop), its
//! value and the op's call site, on whichever executor runs the kernel; traps on and nothing
//! failing leave results bit-identical; a launch in passes (on a device, one dispatch per pass,
//! checked through the device counters and the trap's `device` flag) gives one launch's bits
//! for any pass size, stops after the pass with the first bad element, lets independent work
//! run, and resumes to the one-launch result; `Runtime::resume` counts the launches of every
//! executor.
//!
//! The trap configuration is process-wide, so the tests take turns (`lock`).

mod common;

use arrayflow::{Array, ErrorKind, Runtime};
use arrayflow::{Trap, TrapConfig, TrapKind};
use common::{on_device, pass_cut, rand_f32, rng, several_devices, trap_found_where_computed};
use rand::RngExt;
use std::sync::{Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    Runtime::traps(TrapConfig::off());
    // A launch a failed test left suspended.
    let _ = Runtime::resume();
    Runtime::take_traps();
    g
}

/// `count` distinct random positions below `n`, and the lowest.
fn plant(r: &mut impl RngExt, n: usize, count: usize) -> (Vec<usize>, usize) {
    let mut ps: Vec<usize> = Vec::new();
    while ps.len() < count {
        let p = r.random_range(0..n);
        if !ps.contains(&p) {
            ps.push(p);
        }
    }
    let first = *ps.iter().min().unwrap();
    (ps, first)
}

/// The single trap recorded since the test's start.
#[track_caller]
fn one_trap() -> Trap {
    let mut ts = Runtime::take_traps();
    assert_eq!(ts.len(), 1, "traps: {ts:#?}");
    ts.pop().unwrap()
}

fn assert_site(t: &Trap, line: u32) {
    assert!(t.site.file().ends_with("debug_trap.rs"), "{t}");
    assert_eq!(t.site.line(), line, "{t}");
}

#[test]
fn nan_trap_names_the_first_nan_its_op_and_line() {
    let _g = lock();
    let mut r = rng(0x7a1);
    let shape = [48, 40];
    let n = 48 * 40;
    let mut x = rand_f32(&mut r, n, 0.5, 4.0);
    let (ps, first) = plant(&mut r, n, 3);
    for &p in &ps {
        x[p] = -r.random_range(0.5f32..2.0);
    }
    Runtime::traps(TrapConfig::nan());
    let before = Runtime::stats();
    let a = Array::from_slice(&x, &shape);
    let line = line!() + 1;
    let s = a.sqrt();
    let y = &(&s * 2.0) + 1.0;
    let e = y.to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
    let t = one_trap();
    assert_eq!((t.kind, t.op.as_str()), (TrapKind::Nan, "sqrt"), "{t}");
    assert_site(&t, line);
    assert_eq!(t.element, first);
    assert_eq!(t.index, vec![first / 40, first % 40]);
    assert!(t.value.is_nan());
    assert_eq!(e.origin, Some(t.site), "{e}");
    assert!(e.to_string().contains(&format!("element {first}")), "{e}");
    // A result computed from the trapped one reads as the same trap.
    let z = &y * 3.0;
    assert_eq!(z.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    trap_found_where_computed(&t, &before, false);
    Runtime::traps(TrapConfig::off());
}

#[test]
fn inf_trap_names_the_first_division_by_zero() {
    let _g = lock();
    let mut r = rng(0x1f0);
    let n = 1500;
    let a = rand_f32(&mut r, n, 1.0, 2.0);
    let mut b = rand_f32(&mut r, n, 1.0, 2.0);
    let (ps, first) = plant(&mut r, n, 4);
    for &p in &ps {
        b[p] = 0.0;
    }
    Runtime::traps(TrapConfig::nan().inf());
    let before = Runtime::stats();
    let (a, b) = (Array::from_slice(&a, &[n]), Array::from_slice(&b, &[n]));
    let line = line!() + 1;
    let q = &a / &b;
    let y = &q - 3.0;
    assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    let t = one_trap();
    assert_eq!((t.kind, t.op.as_str()), (TrapKind::Inf, "div"), "{t}");
    assert_site(&t, line);
    assert_eq!((t.element, t.index.clone()), (first, vec![first]));
    assert_eq!(t.value, f64::INFINITY);
    trap_found_where_computed(&t, &before, false);
    Runtime::traps(TrapConfig::off());
}

/// `((sqrt(x) * 3 + y) / y)` by plain loops in f64.
fn chain_oracle(x: &[f32], y: &[f32]) -> Vec<f64> {
    x.iter()
        .zip(y)
        .map(|(&x, &y)| ((x as f64).sqrt() * 3.0 + y as f64) / y as f64)
        .collect()
}

#[test]
fn traps_on_and_nothing_failing_leave_results_bit_identical() {
    let _g = lock();
    let mut r = rng(0xb17);
    let n = 2500;
    let x = rand_f32(&mut r, n, 0.5, 4.0);
    let y = rand_f32(&mut r, n, 1.0, 2.0);
    let run = || {
        let (a, b) = (Array::from_slice(&x, &[n]), Array::from_slice(&y, &[n]));
        let v = ((&a.sqrt() * 3.0 + &b) / &b).to_vec().unwrap();
        (v, Runtime::last_flush_listing())
    };
    let (off, listing_off) = run();
    Runtime::traps(TrapConfig::nan().inf());
    let before = Runtime::stats();
    let (on, listing_on) = run();
    Runtime::traps(TrapConfig::off());
    // On a device, the checked kernel ran there (it compiled, and nothing fell back).
    if on_device() {
        let d = Runtime::stats().device.since(&before.device);
        assert!(d.kernels >= 1 && d.fallbacks == 0, "{d:?}");
    }
    // Off, kernels carry no checks; on, they do.
    assert!(!listing_off.contains("trap if"), "{listing_off}");
    assert!(listing_on.contains("trap if"), "{listing_on}");
    assert!(Runtime::take_traps().is_empty());
    for (i, (a, b)) in off.iter().zip(&on).enumerate() {
        assert_eq!(a.to_bits(), b.to_bits(), "element {i}: {a} vs {b}");
    }
    for (i, (v, w)) in off.iter().zip(chain_oracle(&x, &y)).enumerate() {
        assert!(
            ((*v as f64) - w).abs() <= 1e-5 * w.abs(),
            "element {i}: {v} vs {w}"
        );
    }
}

#[test]
fn passes_stop_at_the_trapping_pass_let_other_work_run_and_resume() {
    let _g = lock();
    let mut r = rng(0x9a55);
    let n = 20_000;
    let pass: usize = 4096;
    let (per, passes) = pass_cut(n, pass);
    let mut x = rand_f32(&mut r, n, 0.5, 4.0);
    let c = rand_f32(&mut r, n, -1.0, 1.0);
    // One bad element in the second pass, one in the fourth.
    let p1 = r.random_range(per..2 * per);
    let p2 = r.random_range(3 * per..4 * per);
    x[p1] = -1.5;
    x[p2] = -0.25;
    let oracle: Vec<f64> = x.iter().map(|&v| (v as f64).sqrt() * 2.0 + 1.0).collect();

    // The one-launch result: one pass, which traps (stopping after it) and resumes to the end.
    Runtime::traps(TrapConfig::nan().passes(1 << 30));
    let a = Array::from_slice(&x, &[n]);
    let y1 = &(&a.sqrt() * 2.0) + 1.0;
    assert_eq!(y1.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    let t = one_trap();
    assert_eq!((t.element, t.pass, t.suspended), (p1, Some((0, 1)), true));
    assert_eq!(Runtime::resume().unwrap(), 1);
    let whole = y1.to_vec().unwrap();
    assert!(Runtime::take_traps().is_empty());

    Runtime::traps(TrapConfig::nan().passes(pass));
    let before = Runtime::stats();
    let a = Array::from_slice(&x, &[n]);
    let line = line!() + 1;
    let s = a.sqrt();
    let y = &(&s * 2.0) + 1.0;
    let e = y.to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Trap);
    let t = one_trap();
    // On a device, the device ran the passes and named the element.
    trap_found_where_computed(&t, &before, false);
    assert_eq!(
        (t.kind, t.element, t.op.as_str()),
        (TrapKind::Nan, p1, "sqrt")
    );
    assert_site(&t, line);
    assert_eq!(t.pass, Some((1, passes)));
    assert!(t.suspended);

    // Independent work goes on while the launch is suspended.
    let cc = Array::from_slice(&c, &[n]);
    let ind = (&cc * 2.0).to_vec().unwrap();
    for (i, (v, w)) in ind.iter().zip(&c).enumerate() {
        assert_eq!(*v, w * 2.0, "element {i}");
    }
    // Work that reads the suspended result waits (and reads as the trap meanwhile).
    let dep = &y - &cc;
    assert_eq!(dep.to_vec().unwrap_err().kind(), ErrorKind::Trap);

    // Resuming runs on to the pass of the next bad element ...
    assert_eq!(Runtime::resume().unwrap(), 1);
    assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    let t = one_trap();
    assert_eq!((t.element, t.pass), (p2, Some((3, passes))));
    assert!(ran_where_expected(t.device), "{t}");
    // ... and then to the end: the same bits as one launch, and the waiting work done.
    assert_eq!(Runtime::resume().unwrap(), 1);
    Runtime::traps(TrapConfig::off());
    let yv = y.to_vec().unwrap();
    // NaNs compare as NaNs: under spread placement the two launches may run on different
    // executors, whose NaNs differ in sign (x86's `sqrt(-1)` is -NaN, PoCL's and lavapipe's +NaN).
    for (i, (v, w)) in yv.iter().zip(&whole).enumerate() {
        assert!(
            v.to_bits() == w.to_bits() || (v.is_nan() && w.is_nan()),
            "element {i}: {v} vs {w}"
        );
    }
    for (i, (v, w)) in yv.iter().zip(&oracle).enumerate() {
        if i == p1 || i == p2 {
            assert!(v.is_nan() && w.is_nan());
        } else {
            assert!(
                ((*v as f64) - w).abs() <= 1e-6 * w.abs(),
                "element {i}: {v} vs {w}"
            );
        }
    }
    let dv = dep.to_vec().unwrap();
    for i in (0..n).filter(|&i| i != p1 && i != p2) {
        assert!(
            ((dv[i] - (yv[i] - c[i])) as f64).abs() <= 1e-6,
            "element {i}"
        );
    }
    assert_eq!(Runtime::resume().unwrap(), 0);
}

/// Launches in passes of any size (one not dividing the length, one longer than it) give the
/// bits of one unchecked launch and the plain-loop values; on a device the passes run there (one
/// dispatch of the same program per pass, nothing on the CPU).
#[test]
fn passes_of_any_size_give_one_launchs_bits() {
    let _g = lock();
    let mut r = rng(0x9a5e);
    let n = 30_001;
    let x = rand_f32(&mut r, n, 0.5, 4.0);
    let y = rand_f32(&mut r, n, 1.0, 2.0);
    let run = || {
        let (a, b) = (Array::from_slice(&x, &[n]), Array::from_slice(&y, &[n]));
        ((&a.sqrt() * 3.0 + &b) / &b).to_vec().unwrap()
    };
    let whole = run();
    for (i, (v, w)) in whole.iter().zip(chain_oracle(&x, &y)).enumerate() {
        assert!(
            ((*v as f64) - w).abs() <= 1e-5 * w.abs(),
            "element {i}: {v} vs {w}"
        );
    }
    for pass in [1000, 4096, 7777, n, 1 << 20] {
        let (_, passes) = pass_cut(n, pass);
        Runtime::traps(TrapConfig::nan().inf().passes(pass));
        let before = Runtime::stats();
        let v = run();
        let d = Runtime::stats().device.since(&before.device);
        Runtime::traps(TrapConfig::off());
        assert!(Runtime::take_traps().is_empty());
        if on_device() {
            assert!(
                d.kernels >= 1 && d.fallbacks == 0 && d.dispatches >= passes as u64,
                "pass {pass} ({passes} passes): {d:?}"
            );
        }
        for (i, (a, b)) in whole.iter().zip(&v).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "pass {pass}, element {i}: {a} vs {b}"
            );
        }
    }
}

/// The bits of a reduction test's outputs: a full sum, row sums, column sums (a thread per
/// result), an argmax over rows and the row sums of rows of four (a thread per row on wgpu), all
/// of `sqrt(x)` for `x` of `[rows, cols]`.
fn reductions_of(x: &[f32], rows: usize, cols: usize) -> Vec<Vec<u32>> {
    let a = Array::from_slice(x, &[rows, cols]).sqrt();
    let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect();
    vec![
        bits(a.sum().to_vec().unwrap()),
        bits(a.sum_axis(1).to_vec().unwrap()),
        bits(a.sum_axis(0).to_vec().unwrap()),
        (&a * 2.0).argmax_axis(1).to_vec().unwrap(),
        bits(
            a.reshape(&[rows * cols / 4, 4])
                .sum_axis(1)
                .to_vec()
                .unwrap(),
        ),
    ]
}

/// Kernels with reductions in passes of any size give one launch's bits (a pass longer than the
/// launch) and the f64 oracle's values: a full sum, row and column sums, an argmax over rows, row
/// sums of short rows; on a device the passes run there (many dispatches, nothing on the CPU).
#[test]
fn reductions_in_passes_of_any_size_give_one_launchs_bits() {
    let _g = lock();
    let mut r = rng(0x5ed0);
    let (rows, cols) = (300, 260);
    let x = rand_f32(&mut r, rows * cols, 0.5, 4.0);
    Runtime::traps(TrapConfig::nan().passes(1 << 30));
    let whole = reductions_of(&x, rows, cols);
    assert!(Runtime::take_traps().is_empty());
    // The oracle, in f64.
    let s = |i: usize, j: usize| (x[i * cols + j] as f64).sqrt();
    let total: f64 = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (i, j)))
        .map(|(i, j)| s(i, j))
        .sum();
    let row = |i: usize| (0..cols).map(|j| s(i, j)).sum::<f64>();
    let col = |j: usize| (0..rows).map(|i| s(i, j)).sum::<f64>();
    let close = |v: u32, w: f64, what: &str| {
        let v = f32::from_bits(v) as f64;
        assert!((v - w).abs() <= 1e-5 * w, "{what}: {v} vs {w}");
    };
    close(whole[0][0], total, "sum");
    for (i, (&v, &m)) in whole[1].iter().zip(&whole[3]).enumerate() {
        close(v, row(i), &format!("row {i}"));
        let best = (0..cols).fold(0, |b, j| if s(i, j) > s(i, b) { j } else { b });
        assert_eq!(m as usize, best, "argmax of row {i}");
    }
    for (j, &v) in whole[2].iter().enumerate() {
        close(v, col(j), &format!("column {j}"));
    }
    for q in 0..rows * cols / 4 {
        let w: f64 = (0..4).map(|u| (x[4 * q + u] as f64).sqrt()).sum();
        close(whole[4][q], w, &format!("short row {q}"));
    }
    for pass in [1000, 7777, 40_000] {
        Runtime::traps(TrapConfig::nan().passes(pass));
        let before = Runtime::stats();
        let v = reductions_of(&x, rows, cols);
        let d = Runtime::stats().device.since(&before.device);
        Runtime::traps(TrapConfig::off());
        assert!(Runtime::take_traps().is_empty());
        if on_device() {
            // Small passes: each kernel in several (a whole launch is one or two dispatches).
            let cut = pass > 10_000 || d.dispatches > 2 * d.kernels;
            assert!(
                d.kernels >= 5 && d.fallbacks == 0 && cut,
                "pass {pass}: {d:?}"
            );
        }
        for (o, (a, b)) in whole.iter().zip(&v).enumerate() {
            assert_eq!(a, b, "pass {pass}, output {o}");
        }
    }
}

/// A NaN in a row sum's kernel in passes: the trap names the lowest of the planted elements, the
/// op and line, found where the launch ran (on a device, by the device, in one of its passes;
/// on the CPU in the CPU's pass); resumed, the sums equal one launch's bits (NaN in the rows
/// planted) and the oracle elsewhere.
#[test]
fn a_nan_in_a_reduction_in_passes_suspends_and_resumes_to_one_launchs_bits() {
    let _g = lock();
    let mut r = rng(0x7ed5);
    let (rows, cols) = (400, 300);
    let n = rows * cols;
    for pass in [2500usize, 30_000] {
        let mut x = rand_f32(&mut r, n, 0.5, 4.0);
        let (bad, first) = plant(&mut r, n, 2);
        for &b in &bad {
            x[b] = -r.random_range(0.5f32..2.0);
        }
        let sums = |pass: usize| {
            Runtime::traps(TrapConfig::nan().passes(pass));
            let before = Runtime::stats();
            let line = line!() + 1;
            let y = Array::from_slice(&x, &[rows, cols]).sqrt().sum_axis(1);
            assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
            let t = one_trap();
            assert_eq!(
                (t.element, t.suspended, t.op.as_str()),
                (first, true, "sqrt"),
                "pass {pass}: {t}"
            );
            assert_site(&t, line);
            trap_found_where_computed(&t, &before, false);
            let (k, passes) = t.pass.expect("a launch in passes names its pass");
            if t.device {
                assert!(k < passes, "{t}");
            } else {
                let (per, cut) = pass_cut(n, pass);
                assert_eq!((k, passes), (first / per, cut), "{t}");
            }
            // Resumed (other bad elements trap again, in later passes) to the end.
            let mut resumed = 0;
            while Runtime::resume().unwrap() == 1 {
                resumed += 1;
                assert!(resumed <= bad.len(), "resumed {resumed} times");
                let _ = y.to_vec();
            }
            Runtime::traps(TrapConfig::off());
            Runtime::take_traps();
            y.to_vec().unwrap()
        };
        let one = sums(1 << 30);
        let v = sums(pass);
        for (i, (a, b)) in one.iter().zip(&v).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "pass {pass}, row {i}: {a} vs {b}");
            if bad.iter().any(|&p| p / cols == i) {
                assert!(a.is_nan(), "row {i}: {a}");
            } else {
                let w: f64 = (0..cols).map(|j| (x[i * cols + j] as f64).sqrt()).sum();
                assert!(((*a as f64) - w).abs() <= 1e-5 * w, "row {i}: {a} vs {w}");
            }
        }
    }
}

/// A NaN planted in pass k (pass sizes that divide the length, that do not, and one longer than
/// it): the trap names the element, pass k and the count, found where the launch ran; while the
/// launch is suspended an independent array is computed (on the device too) and read; resumed,
/// the launch's results equal the plain loop's (NaN where planted).
#[test]
fn a_nan_in_pass_k_suspends_there_and_resumes_to_the_oracle() {
    let _g = lock();
    let mut r = rng(0x4a55);
    let n = 25_000;
    let c = rand_f32(&mut r, n, -1.0, 1.0);
    for pass in [3000usize, 8192, 1 << 16] {
        let (per, passes) = pass_cut(n, pass);
        let k = r.random_range(0..passes);
        let bad = r.random_range(k * per..((k + 1) * per).min(n));
        let mut x = rand_f32(&mut r, n, 0.5, 4.0);
        x[bad] = -r.random_range(0.5f32..2.0);
        Runtime::traps(TrapConfig::nan().passes(pass));
        let before = Runtime::stats();
        let a = Array::from_slice(&x, &[n]);
        let line = line!() + 1;
        let y = &a.sqrt() * 0.5;
        assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
        let t = one_trap();
        assert_eq!(
            (t.element, t.pass, t.suspended, t.op.as_str()),
            (bad, Some((k, passes)), true, "sqrt"),
            "pass {pass}: {t}"
        );
        assert!(t.value.is_nan(), "{t}");
        assert_site(&t, line);
        trap_found_where_computed(&t, &before, false);
        // Independent work (itself checked, in passes) runs and reads while it is suspended.
        let before = Runtime::stats();
        let ind = (&Array::from_slice(&c, &[n]) * 2.0).to_vec().unwrap();
        for (i, (v, w)) in ind.iter().zip(&c).enumerate() {
            assert_eq!(*v, w * 2.0, "element {i}");
        }
        if on_device() {
            let d = Runtime::stats().device.since(&before.device);
            assert!(d.kernels >= 1 && d.fallbacks == 0, "{d:?}");
        }
        assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
        // Traps turned off meanwhile, the launch still resumes to its end (its passes as cut).
        if pass == 8192 {
            Runtime::traps(TrapConfig::off());
        }
        assert_eq!(Runtime::resume().unwrap(), 1);
        let yv = y.to_vec().unwrap();
        assert!(Runtime::take_traps().is_empty());
        for (i, (v, &xi)) in yv.iter().zip(&x).enumerate() {
            if i == bad {
                assert!(v.is_nan(), "element {i}: {v}");
                continue;
            }
            let w = (xi as f64).sqrt() * 0.5;
            assert!(
                ((*v as f64) - w).abs() <= 1e-6 * w,
                "element {i}: {v} vs {w}"
            );
        }
        Runtime::traps(TrapConfig::off());
        assert_eq!(Runtime::resume().unwrap(), 0);
    }
}

/// The profiler records a launch in passes once, when its last pass ends, timed by the host over
/// all its passes (suspended in pass 1 and resumed), with each pass a `pass` event of the
/// executor that ran it; the results still equal the plain loop's.
#[test]
fn the_profiler_records_each_pass_and_the_launch_once() {
    use arrayflow::profile::db;
    let _g = lock();
    let mut r = rng(0x9a55);
    let n = 25_000;
    let pass = 3000usize;
    let (per, passes) = pass_cut(n, pass);
    let bad = r.random_range(per..(2 * per).min(n));
    let mut x = rand_f32(&mut r, n, 0.5, 4.0);
    x[bad] = -1.5;
    let dir = std::env::temp_dir().join(format!("arrayflow-trap-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Runtime::traps(TrapConfig::nan().passes(pass));
    let a = Array::from_slice(&x, &[n]);
    Runtime::execute();
    let guard = Runtime::profile(&dir).expect("the profiler starts");
    let line = line!() + 1;
    let y = (&a.sqrt() + 0.25) * 3.0;
    assert_eq!(y.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    let t = one_trap();
    assert_eq!(t.pass, Some((1, passes)), "{t}");
    assert_eq!(Runtime::resume().unwrap(), 1);
    let yv = y.to_vec().unwrap();
    Runtime::traps(TrapConfig::off());
    guard.finish().expect("the run is written");
    let run = db::read(&dir).expect("the run reads back");
    let _ = std::fs::remove_dir_all(&dir);
    for (i, (v, &xi)) in yv.iter().zip(&x).enumerate() {
        if i == bad {
            assert!(v.is_nan(), "element {i}: {v}");
            continue;
        }
        let w = ((xi as f64).sqrt() + 0.25) * 3.0;
        assert!(
            ((*v as f64) - w).abs() <= 1e-6 * w,
            "element {i}: {v} vs {w}"
        );
    }
    let pass_events: Vec<_> = run.runtime.iter().filter(|e| e.kind == "pass").collect();
    assert_eq!(pass_events.len(), passes, "{pass_events:?}");
    let site = format!("tests/debug_trap.rs:{line}");
    let ck: Vec<_> = run
        .cks
        .iter()
        .filter(|c| c.sites.iter().any(|s| s.site == site))
        .collect();
    assert_eq!(ck.len(), 1, "one kernel at {site}: {ck:?}");
    let ck = ck[0];
    assert_eq!(
        (ck.launches, ck.measured, ck.time_source.as_str()),
        (1, 1, "host"),
        "{ck:?}"
    );
    let in_passes: u64 = pass_events.iter().map(|e| e.dur_ns).sum();
    assert_eq!(
        ck.device_ns, in_passes,
        "{ck:?} against its passes {pass_events:?}"
    );
    // Where the passes ran: on the device when one ran the launch (its own executor index),
    // else on the CPU.
    let detail = if ck.executor == 0 { "cpu" } else { "device" };
    assert!(
        pass_events.iter().all(|e| e.detail == detail),
        "{ck:?} {pass_events:?}"
    );
    assert!(ran_where_expected(ck.executor != 0), "{ck:?}");
}

/// Whether a trapped launch ran where this process runs element-wise kernels: on its one device
/// executor, or on the CPU without one. With several executors live (`ARRAYFLOW_DEVICE=all`),
/// placement decides where each program runs, and either answer holds.
fn ran_where_expected(device: bool) -> bool {
    several_devices() || device == on_device()
}

/// `Runtime::resume` resumes the suspended launches of every executor and counts them: two
/// element-wise launches and a reduction's (on the device where one runs), each suspended by its
/// own NaN.
#[test]
fn resume_counts_the_launches_of_every_executor() {
    let _g = lock();
    let mut r = rng(0xc0de);
    let n = 10_000;
    let mut xs: Vec<Vec<f32>> = (0..3).map(|_| rand_f32(&mut r, n, 0.5, 4.0)).collect();
    let bad: Vec<usize> = (0..3).map(|_| r.random_range(0..n)).collect();
    for (x, &b) in xs.iter_mut().zip(&bad) {
        x[b] = -1.0;
    }
    Runtime::traps(TrapConfig::nan().ops(&["sqrt"]).passes(2048));
    let y0 = Array::from_slice(&xs[0], &[n]).sqrt();
    assert_eq!(y0.eval().unwrap_err().kind(), ErrorKind::Trap);
    let y1 = &Array::from_slice(&xs[1], &[n]).sqrt() + 1.0;
    assert_eq!(y1.eval().unwrap_err().kind(), ErrorKind::Trap);
    let s2 = Array::from_slice(&xs[2], &[n]).sqrt().sum();
    assert_eq!(s2.eval().unwrap_err().kind(), ErrorKind::Trap);
    let ts = Runtime::take_traps();
    assert_eq!(ts.len(), 3, "{ts:#?}");
    let (per, passes) = pass_cut(n, 2048);
    for (t, &b) in ts.iter().zip(&bad) {
        assert_eq!((t.element, t.suspended), (b, true), "{t}");
        assert!(ran_where_expected(t.device), "{t}");
    }
    // The element-wise launches' passes are the CPU's cut everywhere; the reduction's on a
    // device are its own.
    for t in &ts[..2] {
        assert_eq!(t.pass, Some((t.element / per, passes)), "{t}");
    }
    if !ts[2].device {
        assert_eq!(ts[2].pass, Some((ts[2].element / per, passes)), "{}", ts[2]);
    }
    assert_eq!(Runtime::resume().unwrap(), 3);
    assert_eq!(Runtime::resume().unwrap(), 0);
    Runtime::traps(TrapConfig::off());
    let (v0, v1, v2) = (
        y0.to_vec().unwrap(),
        y1.to_vec().unwrap(),
        s2.to_vec().unwrap(),
    );
    for i in 0..n {
        let (w0, w1) = ((xs[0][i] as f64).sqrt(), (xs[1][i] as f64).sqrt() + 1.0);
        if i == bad[0] {
            assert!(v0[i].is_nan());
        } else {
            assert!(((v0[i] as f64) - w0).abs() <= 1e-6 * w0, "element {i}");
        }
        if i == bad[1] {
            assert!(v1[i].is_nan());
        } else {
            assert!(((v1[i] as f64) - w1).abs() <= 1e-6 * w1, "element {i}");
        }
    }
    assert!(v2[0].is_nan(), "{v2:?}");
    assert!(Runtime::take_traps().is_empty());
}

/// A launch in passes whose kernel faults otherwise (integer division by zero beside a checked
/// op) fails with the division's error on every executor, as one launch does, and leaves
/// nothing suspended; the elements before the fault are not a trap.
#[test]
fn a_fault_that_is_not_a_trap_fails_a_launch_in_passes() {
    let _g = lock();
    let mut r = rng(0xd1f0);
    let n = 9000;
    let x = rand_f32(&mut r, n, 0.5, 4.0);
    let a: Vec<i32> = (0..n).map(|_| r.random_range(-100..100)).collect();
    let mut b: Vec<i32> = (0..n).map(|_| r.random_range(1..9)).collect();
    b[r.random_range(n / 2..n)] = 0;
    Runtime::traps(TrapConfig::nan().passes(2048));
    let before = Runtime::stats();
    let (xa, aa, ba) = (
        Array::from_slice(&x, &[n]),
        Array::from_slice(&a, &[n]),
        Array::from_slice(&b, &[n]),
    );
    let y = &xa.sqrt() + &(&aa / &ba).cast::<f32>();
    let e = y.to_vec().unwrap_err();
    assert_ne!(e.kind(), ErrorKind::Trap, "{e}");
    assert!(e.to_string().contains("division by zero"), "{e}");
    // On a device, the passes before the fault ran there; the CPU ran the launch for the error.
    if on_device() {
        let d = Runtime::stats().device.since(&before.device);
        assert!(
            d.kernels >= 1 && d.dispatches >= 2 && d.fallbacks == 1,
            "{d:?}"
        );
    }
    assert!(Runtime::take_traps().is_empty());
    assert_eq!(Runtime::resume().unwrap(), 0);
    Runtime::traps(TrapConfig::off());
}

/// Runs `Runtime::execute()` on another thread; fails (instead of hanging) when it has not
/// returned within a minute.
#[track_caller]
fn execute_returns() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        Runtime::execute();
        let _ = tx.send(());
    });
    if rx.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
        panic!("Runtime::execute() still waits a minute later: it waits for a suspended launch");
    }
}

#[test]
fn execute_does_not_wait_for_a_suspended_launch() {
    let _g = lock();
    let mut r = rng(0xe5ec);
    let n = 12_000;
    let mut x = rand_f32(&mut r, n, 0.5, 4.0);
    let c = rand_f32(&mut r, n, -1.0, 1.0);
    let bad = r.random_range(n / 2..n);
    x[bad] = -2.0;
    // Only sqrt is checked: the work that reads its result is an unchecked kernel, which on a
    // device waits in the scheduler's pending table rather than on the CPU executor.
    Runtime::traps(TrapConfig::nan().ops(&["sqrt"]).passes(2048));
    let (a, cc) = (Array::from_slice(&x, &[n]), Array::from_slice(&c, &[n]));
    let s = a.sqrt();
    // Waits for results a trap holds back return its error (they do not wait for a resume).
    assert_eq!(s.eval().unwrap_err().kind(), ErrorKind::Trap);
    let dep = &(&s * 2.0) - &cc;
    assert_eq!(dep.eval().unwrap_err().kind(), ErrorKind::Trap);
    let ind = &cc * 3.0;
    ind.hint_read();
    // A barrier with a suspended launch (and work waiting for it) queued.
    execute_returns();
    let t = one_trap();
    assert_eq!((t.element, t.suspended), (bad, true), "{t}");
    // Independent work submitted before the barrier is done; the suspended result still reads
    // as the trap.
    let iv = ind.to_vec().unwrap();
    for (i, (v, w)) in iv.iter().zip(&c).enumerate() {
        assert_eq!(*v as f64, *w as f64 * 3.0, "element {i}");
    }
    assert_eq!(s.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    assert_eq!(dep.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    execute_returns();
    // Resumed, everything finishes; the barrier then waits for the resumed work, too.
    assert_eq!(Runtime::resume().unwrap(), 1);
    execute_returns();
    Runtime::traps(TrapConfig::off());
    let (sv, dv) = (s.to_vec().unwrap(), dep.to_vec().unwrap());
    for i in 0..n {
        let w = (x[i] as f64).sqrt();
        if i == bad {
            assert!(sv[i].is_nan() && dv[i].is_nan(), "element {i}");
            continue;
        }
        assert!(((sv[i] as f64) - w).abs() <= 1e-6 * w, "element {i}");
        let d = sv[i] as f64 * 2.0 - c[i] as f64;
        assert!(
            ((dv[i] as f64) - d).abs() <= 1e-6,
            "element {i}: {} vs {d}",
            dv[i]
        );
    }
    assert!(Runtime::take_traps().is_empty());
    assert_eq!(Runtime::resume().unwrap(), 0);
}

#[test]
fn assertions_trap_with_their_message_element_and_line() {
    let _g = lock();
    let mut r = rng(0xa55e);
    let shape = [30, 50];
    let n = 1500;
    let mut x = rand_f32(&mut r, n, 0.0, 1.0);
    let (ps, first) = plant(&mut r, n, 3);
    for &p in &ps {
        x[p] = 1.5;
    }
    let a = Array::from_slice(&x, &shape);
    let line = line!() + 1;
    let y = (&a * 2.0).assert_in_range(0.0, 2.0);
    let z = &y + 1.0;
    let e = z.to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Trap);
    let t = one_trap();
    assert_eq!(
        (t.kind, t.op.as_str()),
        (TrapKind::Assertion, "assert"),
        "{t}"
    );
    assert_site(&t, line);
    assert_eq!(
        (t.element, t.index.clone()),
        (first, vec![first / 50, first % 50])
    );
    assert_eq!(t.value, 3.0);
    assert!(
        t.message.as_deref().unwrap().contains("assert_in_range"),
        "{t}"
    );

    let line = line!() + 1;
    let m = a.lt(1.0f32).assert_true("a must stay below one");
    let e = m.to_vec().unwrap_err();
    let t = one_trap();
    assert!(e.to_string().contains("a must stay below one"), "{e}");
    assert_site(&t, line);
    assert_eq!((t.element, t.value), (first, 0.0));

    // Passing assertions change nothing.
    let w = rand_f32(&mut r, n, -1.0, 1.0);
    let b = Array::from_slice(&w, &shape);
    let v = (&b * 2.0).assert_finite().to_vec().unwrap();
    assert!(Runtime::take_traps().is_empty());
    for (i, (v, w)) in v.iter().zip(&w).enumerate() {
        assert_eq!(*v, w * 2.0, "element {i}");
    }
}

#[test]
fn index_trap_names_the_first_bad_gather_index() {
    let _g = lock();
    let mut r = rng(0x1dc5);
    let data = rand_f32(&mut r, 50, 0.0, 1.0);
    let mut idx: Vec<i32> = (0..300).map(|_| r.random_range(0..50)).collect();
    let (ps, first) = plant(&mut r, 300, 3);
    for &p in &ps {
        idx[p] = r.random_range(50..90);
    }
    let d = Array::from_slice(&data, &[50]);
    let ix = Array::from_slice(&idx, &[300]);
    // Off: the execution error it always was.
    let e = d.gather(&ix, 0).to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidResult, "{e}");
    assert!(Runtime::take_traps().is_empty());

    Runtime::traps(TrapConfig::nan().index());
    let line = line!() + 1;
    let g = d.gather(&ix, 0);
    let e = g.to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
    let t = one_trap();
    assert_eq!((t.kind, t.op.as_str()), (TrapKind::Index, "gather"), "{t}");
    assert_site(&t, line);
    assert_eq!((t.element, t.value), (first, idx[first] as f64));
    Runtime::traps(TrapConfig::off());
}

/// Bincount's values are indices into its counts: one out of range (past the length, or
/// negative) is an index trap naming the first bad position (a plain loop's), its coordinates in
/// the input, the value and the call site; without traps it is the execution error naming the
/// value, its position and the line. Good values count as a plain loop counts.
#[test]
fn index_trap_names_the_first_bad_bincount_value() {
    let _g = lock();
    let mut r = rng(0xb1c0);
    let (shape, length) = ([20usize, 15], 12usize);
    let n = shape[0] * shape[1];
    let good: Vec<i32> = (0..n).map(|_| r.random_range(0..length as i32)).collect();
    let mut x = good.clone();
    let (ps, first) = plant(&mut r, n, 3);
    for (k, &p) in ps.iter().enumerate() {
        x[p] = if k % 2 == 0 {
            r.random_range(length as i32..40)
        } else {
            -r.random_range(1..9)
        };
    }
    let xa = Array::from_slice(&x, &shape);
    // Off: the execution error, naming the value, its position and the line.
    let line = line!() + 1;
    let e = xa.bincount(length).to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidResult, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "bincount value {} (at position {first})",
            x[first]
        )),
        "{msg}"
    );
    assert!(msg.contains(&format!("debug_trap.rs:{line}:")), "{msg}");
    assert!(Runtime::take_traps().is_empty());

    Runtime::traps(TrapConfig::nan().index());
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
    assert_site(&t, line);
    assert_eq!((t.element, t.value), (first, x[first] as f64), "{t}");
    assert_eq!(t.index, vec![first / shape[1], first % shape[1]], "{t}");
    assert!(ran_where_expected(t.device), "{t}");

    // Traps on and every value in range: the counts of a plain loop.
    let mut want = vec![0u32; length];
    for &v in &good {
        want[v as usize] += 1;
    }
    let got = Array::from_slice(&good, &shape)
        .bincount(length)
        .to_vec()
        .unwrap();
    assert_eq!(got, want);
    assert!(Runtime::take_traps().is_empty());
    Runtime::traps(TrapConfig::off());
}

/// Scatter, scatter_add and put_along_axis: an index out of range is an index trap naming the
/// first bad position in the flattened indices (a plain loop's), the index and the call site;
/// without traps, the execution error naming the index, its position and the line.
#[test]
fn index_trap_names_the_first_bad_scatter_index() {
    let _g = lock();
    let mut r = rng(0x5ca7);
    let (rows, dim, ni) = (3usize, 40usize, 250usize);
    let data = rand_f32(&mut r, rows * dim, 0.0, 1.0);
    let vals = rand_f32(&mut r, rows * ni, 0.0, 1.0);
    let mut idx: Vec<i32> = (0..ni).map(|_| r.random_range(0..dim as i32)).collect();
    let (ps, first) = plant(&mut r, ni, 3);
    for (k, &p) in ps.iter().enumerate() {
        idx[p] = if k % 2 == 1 {
            r.random_range(dim as i32..2 * dim as i32)
        } else {
            -r.random_range(1..20)
        };
    }
    let d = Array::from_slice(&data, &[rows, dim]);
    let ix = Array::from_slice(&idx, &[ni]);
    let v = Array::from_slice(&vals, &[rows, ni]);
    // Off: the execution error it always was, naming the index, its position and the line.
    let line = line!() + 1;
    let e = d.scatter(&ix, &v, 1).to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidResult, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "scatter index {} (at position {first})",
            idx[first]
        )),
        "{msg}"
    );
    assert!(msg.contains(&format!("debug_trap.rs:{line}:")), "{msg}");
    assert!(Runtime::take_traps().is_empty());

    Runtime::traps(TrapConfig::nan().index());
    // Each recorded and read in turn (one flush would run both, and both would trap).
    for op in ["scatter", "scatter_add"] {
        let (s, line) = if op == "scatter" {
            (d.scatter(&ix, &v, 1), line!())
        } else {
            (d.scatter_add(&ix, &v, 1), line!())
        };
        let e = s.to_vec().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
        let t = one_trap();
        assert_eq!((t.kind, t.op.as_str()), (TrapKind::Index, op), "{t}");
        assert_site(&t, line);
        assert_eq!((t.element, t.value), (first, idx[first] as f64), "{t}");
        assert_eq!(t.index, vec![first], "{t}");
    }
    // put_along_axis: indices of the data's rank, flattened row-major for the position.
    let mut along: Vec<i32> = (0..rows * 2)
        .map(|_| r.random_range(0..dim as i32))
        .collect();
    along[4] = dim as i32 + 3;
    along[5] = -2;
    let ia = Array::from_slice(&along, &[rows, 2]);
    let line = line!() + 1;
    let p = d.put_along_axis(&ia, &Array::scalar(-1.0f32), 1);
    let e = p.to_vec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Trap, "{e}");
    let t = one_trap();
    assert_eq!(
        (t.kind, t.op.as_str()),
        (TrapKind::Index, "put_along_axis"),
        "{t}"
    );
    assert_site(&t, line);
    assert_eq!((t.element, t.value), (4, (dim + 3) as f64), "{t}");

    // Traps on and every index in range: scatter's values where a plain loop puts them (the
    // last duplicate wins).
    let ok: Vec<i32> = (0..ni).map(|_| r.random_range(0..dim as i32)).collect();
    let got = d
        .scatter(&Array::from_slice(&ok, &[ni]), &v, 1)
        .to_vec()
        .unwrap();
    let mut want = data.clone();
    for p in 0..rows {
        for (j, &i) in ok.iter().enumerate() {
            want[p * dim + i as usize] = vals[p * ni + j];
        }
    }
    assert_eq!(got, want);
    assert!(Runtime::take_traps().is_empty());
    Runtime::traps(TrapConfig::off());
}
