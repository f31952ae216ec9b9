//! The debugger's breakpoints (issue 24): breakpoints stop at the right line and count their
//! hits; the values at a stop equal plain f64 loops; non-intrusive debugging leaves the results
//! bit-identical and the fusion (kernel and flush counts) unchanged; intrusive stops split the
//! kernel and give the same numbers; reproducible mode equals the normal run; conditional
//! breakpoints, watchpoints (in-place updates, and the computation of the watched array), ignore
//! counts, delete and disable; live arrays, printing slices, and edits at a stop that the
//! continuation uses. Tests run one at a time (the debugger and the statistics are process-wide).

use arrayflow::Array;
use arrayflow::{ArrayId, Breakpoint, DebugMode, Debugger, Runtime, Stats, Stop, StopReason};
use parking_lot::Mutex;
use std::sync::Arc;

static SERIAL: Mutex<()> = Mutex::new(());

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

const ROWS: usize = 24;
const COLS: usize = 64;

/// The lines of `workload`'s results, as `line!()` gives them.
#[derive(Debug, Clone, Copy, Default)]
struct Lines {
    t: u32,
    u: u32,
    s: u32,
    m: u32,
    r: u32,
}

/// What `workload` returns: `r`, `m`, the total, and its result lines.
type Outcome = (Vec<f32>, Vec<f32>, f32, Lines);

/// Several fused programs with reductions: `t`, `u` element-wise, `s` and `m` reductions along
/// each axis, `r` element-wise after a reduction, `total` two full reductions.
fn workload(a: &[f32], b: &[f32]) -> Outcome {
    let x = Array::from_slice(a, &[ROWS, COLS]);
    let y = Array::from_slice(b, &[ROWS, COLS]);
    let (t, lt) = ((&x * &y + 1.0f32).abs().sqrt(), line!());
    let (u, lu) = ((&t - &x).exp(), line!());
    let (s, ls) = (u.sum_axis(1), line!());
    let (m, lm) = ((&t * 2.0f32).max_axis(0), line!());
    let (r, lr) = ((&s / 3.0f32).tanh(), line!());
    let total = &r.sum() + &m.sum();
    let lines = Lines {
        t: lt,
        u: lu,
        s: ls,
        m: lm,
        r: lr,
    };
    (
        r.to_vec().unwrap(),
        m.to_vec().unwrap(),
        total.item().unwrap(),
        lines,
    )
}

/// `workload`'s intermediates in f64: t, u, s, m, r.
fn oracle(a: &[f32], b: &[f32]) -> [Vec<f64>; 5] {
    let t: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 * y as f64 + 1.0).abs().sqrt())
        .collect();
    let u: Vec<f64> = t
        .iter()
        .zip(a)
        .map(|(t, &x)| (t - x as f64).exp())
        .collect();
    let s: Vec<f64> = (0..ROWS)
        .map(|i| u[i * COLS..(i + 1) * COLS].iter().sum())
        .collect();
    let m: Vec<f64> = (0..COLS)
        .map(|j| {
            (0..ROWS)
                .map(|i| t[i * COLS + j] * 2.0)
                .fold(f64::MIN, f64::max)
        })
        .collect();
    let r: Vec<f64> = s.iter().map(|s| (s / 3.0).tanh()).collect();
    [t, u, s, m, r]
}

fn close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs().max(1.0),
            "{what}[{i}]: {g} vs oracle {w}"
        );
    }
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn check_outcome(o: &Outcome, want: &[Vec<f64>; 5]) {
    close(&f64s(&o.0), &want[4], 1e-5, "r");
    close(&f64s(&o.1), &want[3], 1e-5, "m");
    let total: f64 = want[4].iter().sum::<f64>() + want[3].iter().sum::<f64>();
    close(&[o.2 as f64], &[total], 1e-5, "total");
}

/// What a test's callback saw at one stop: line, column, reason and the value there.
type Seen = Arc<Mutex<Vec<(u32, u32, StopReason, Vec<f64>)>>>;

fn recorder(seen: &Seen) -> impl FnMut(&mut Stop) + Send + 'static {
    let seen = seen.clone();
    move |stop: &mut Stop| {
        let v = stop.values().expect("value at the stop").to_f64();
        seen.lock().push((
            stop.site().line(),
            stop.site().column(),
            stop.reason().clone(),
            v,
        ));
    }
}

/// The last value seen at `line` (the line's final API call).
fn last_at(seen: &Seen, line: u32) -> Vec<f64> {
    seen.lock()
        .iter()
        .rev()
        .find(|s| s.0 == line)
        .map(|s| s.3.clone())
        .unwrap_or_else(|| panic!("no stop at line {line}"))
}

fn delta(before: &Stats, after: &Stats) -> [u64; 7] {
    [
        after.kernels_launched - before.kernels_launched,
        after.kernels_generated - before.kernels_generated,
        after.intrinsics_launched - before.intrinsics_launched,
        after.flushes.total() - before.flushes.total(),
        after.sequences_generated - before.sequences_generated,
        after.final_stages_launched - before.final_stages_launched,
        after.ops_recorded - before.ops_recorded,
    ]
}

#[test]
fn non_intrusive_stops_show_unfused_values_and_change_nothing() {
    let _g = SERIAL.lock();
    let (a, b) = (data(ROWS * COLS, 11), data(ROWS * COLS, 12));
    let want = oracle(&a, &b);
    let warm = workload(&a, &b); // caches warm, lines known
    let l = warm.3;

    let s0 = Runtime::stats();
    let plain = workload(&a, &b);
    let s1 = Runtime::stats();

    let seen: Seen = Default::default();
    let d = Runtime::debug(
        Debugger::new()
            .break_at(file!(), l.t)
            .break_at("debugger.rs", l.u)
            .break_at("tests/debugger.rs", l.s)
            .break_at(file!(), l.m)
            .break_at(file!(), l.r)
            .on_stop(recorder(&seen)),
    );
    let s2 = Runtime::stats();
    let debugged = workload(&a, &b);
    let s3 = Runtime::stats();
    let infos = d.breakpoints();
    drop(d);

    // Bit-identical results, the same kernels and flushes.
    assert_eq!(plain.0, debugged.0);
    assert_eq!(plain.1, debugged.1);
    assert_eq!(plain.2.to_bits(), debugged.2.to_bits());
    assert_eq!(delta(&s0, &s1), delta(&s2, &s3), "kernels/flushes changed");
    check_outcome(&debugged, &want);

    // Each API call at a breakpoint's line stopped once: t's line records 4 calls (mul, add,
    // abs, sqrt), u's 2, s's 1, m's 2, r's 2.
    let hits: Vec<u64> = infos.iter().map(|i| i.hits).collect();
    assert_eq!(hits, vec![4, 2, 1, 2, 2]);
    let seen_lines: Vec<u32> = seen.lock().iter().map(|s| s.0).collect();
    let mut expect = vec![l.t; 4];
    expect.extend([l.u, l.u, l.s, l.m, l.m, l.r, l.r]);
    assert_eq!(seen_lines, expect);
    // The values there are the unfused values (plain f64 loops).
    close(&last_at(&seen, l.t), &want[0], 1e-5, "t at its stop");
    close(&last_at(&seen, l.u), &want[1], 1e-5, "u at its stop");
    close(&last_at(&seen, l.s), &want[2], 1e-5, "s at its stop");
    close(&last_at(&seen, l.m), &want[3], 1e-5, "m at its stop");
    close(&last_at(&seen, l.r), &want[4], 1e-5, "r at its stop");
    // After detaching nothing stops.
    let n = seen.lock().len();
    workload(&a, &b);
    assert_eq!(seen.lock().len(), n);
}

#[test]
fn intrusive_stops_split_the_kernel_and_keep_the_numbers() {
    let _g = SERIAL.lock();
    let (a, b) = (data(ROWS * COLS, 21), data(ROWS * COLS, 22));
    let want = oracle(&a, &b);
    let l = workload(&a, &b).3;
    let s0 = Runtime::stats();
    let plain = workload(&a, &b);
    let s1 = Runtime::stats();
    let seen: Seen = Default::default();
    let d = Runtime::debug(
        Debugger::new()
            .mode(DebugMode::Intrusive)
            .break_at(file!(), l.u)
            .on_stop(recorder(&seen)),
    );
    let s2 = Runtime::stats();
    let split = workload(&a, &b);
    let s3 = Runtime::stats();
    drop(d);
    check_outcome(&split, &want);
    close(
        &f64s(&split.0),
        &f64s(&plain.0),
        1e-6,
        "r intrusive vs plain",
    );
    close(&last_at(&seen, l.u), &want[1], 1e-5, "u at its stop");
    let (p, q) = (delta(&s0, &s1), delta(&s2, &s3));
    // Two stops on u's line, each materialised: more flushes and more kernels.
    assert!(q[3] >= p[3] + 2, "flushes {p:?} vs {q:?}");
    assert!(q[0] > p[0], "kernels {p:?} vs {q:?}");
}

#[test]
fn reproducible_mode_runs_each_call_and_equals_the_normal_run() {
    let _g = SERIAL.lock();
    let (a, b) = (data(ROWS * COLS, 31), data(ROWS * COLS, 32));
    let want = oracle(&a, &b);
    let plain = workload(&a, &b);
    let d = Runtime::debug(Debugger::new().mode(DebugMode::Reproducible));
    let s0 = Runtime::stats();
    let sync = workload(&a, &b);
    let s1 = Runtime::stats();
    drop(d);
    check_outcome(&sync, &want);
    close(
        &f64s(&sync.0),
        &f64s(&plain.0),
        1e-6,
        "r reproducible vs plain",
    );
    close(
        &f64s(&sync.1),
        &f64s(&plain.1),
        1e-6,
        "m reproducible vs plain",
    );
    // Every computing call flushed on its own: at least the 13 calls that compute something
    // (t: 4, u: 2, s: 1, m: 2, r: 2, total: 3) less the folded ones.
    let d = delta(&s0, &s1);
    assert!(d[3] >= 12, "flushes {d:?}");

    // Stepping: one stop per API call from the breakpoint on.
    let lines: Arc<Mutex<Vec<u32>>> = Default::default();
    let log = lines.clone();
    let dbg = Runtime::debug(
        Debugger::new()
            .mode(DebugMode::Reproducible)
            .break_at(file!(), sync.3.s)
            .on_stop(move |stop| {
                log.lock().push(stop.site().line());
                if log.lock().len() < 4 {
                    stop.step();
                }
            }),
    );
    let stepped = workload(&a, &b);
    drop(dbg);
    check_outcome(&stepped, &want);
    let l = sync.3;
    assert_eq!(*lines.lock(), vec![l.s, l.m, l.m, l.r]);
}

#[test]
fn conditions_ignore_counts_delete_and_disable() {
    let _g = SERIAL.lock();
    let n = 300;
    let base = data(n, 41);
    let seen: Seen = Default::default();
    // Returns the lines of sqrt, the division and max. A negative element (at `nan_at`) makes
    // sqrt NaN there; an element of 0.5 (at `inf_at`) makes the division infinite there.
    let run = |nan_at: Option<usize>, inf_at: Option<usize>| -> [u32; 3] {
        let mut v: Vec<f32> = base.iter().map(|x| x.abs() + 0.75).collect();
        if let Some(k) = nan_at {
            v[k] = -1.0;
        }
        if let Some(k) = inf_at {
            v[k] = 0.5;
        }
        let x = Array::from_slice(&v, &[n]);
        let (y, l1) = (x.sqrt(), line!());
        let (z, l2) = (&y / (&x - 0.5f32), line!());
        let (w, l3) = (z.max(), line!());
        w.to_vec().unwrap();
        [l1, l2, l3]
    };
    let [l_sqrt, l_div, l_max] = run(None, None);
    let d = Runtime::debug(
        Debugger::new()
            .breakpoint(Breakpoint::at(file!(), l_sqrt).if_nan())
            .breakpoint(Breakpoint::at(file!(), l_div).if_inf())
            .breakpoint(
                Breakpoint::at(file!(), l_max)
                    .when(|v| v.to_f64()[0] > 1e6)
                    .ignore(1),
            )
            .on_stop(recorder(&seen)),
    );
    // Conditions are evaluated on the host copy: only the runs that plant a NaN stop at sqrt,
    // only those that plant a zero divisor at the division and (past the ignored first) at max.
    let runs = [
        (None, None),
        (Some(7), None),
        (None, Some(20)),
        (Some(250), None),
        (None, Some(99)),
        (None, Some(5)),
    ];
    for (nan_at, inf_at) in runs {
        run(nan_at, inf_at);
    }
    let got: Vec<(u32, Vec<f64>)> = seen.lock().iter().map(|s| (s.0, s.3.clone())).collect();
    let at = |line: u32, f: fn(f64) -> bool| -> Vec<usize> {
        got.iter()
            .filter(|s| s.0 == line)
            .map(|s| s.1.iter().position(|&x| f(x)).unwrap_or(usize::MAX))
            .collect()
    };
    assert_eq!(at(l_sqrt, f64::is_nan), vec![7, 250]);
    assert_eq!(at(l_div, f64::is_infinite), vec![20, 99, 5]);
    assert_eq!(at(l_max, f64::is_infinite), vec![0, 0]);
    let info = d.breakpoints();
    assert_eq!(
        info.iter().map(|i| i.hits).collect::<Vec<_>>(),
        vec![2, 3, 3]
    );
    // Disabled: no stop, no hit; deleted: gone.
    assert!(d.enable(info[0].id, false));
    seen.lock().clear();
    run(Some(3), None);
    assert!(seen.lock().iter().all(|s| s.0 != l_sqrt));
    assert_eq!(d.breakpoints()[0].hits, 2);
    assert!(d.enable(info[0].id, true));
    run(Some(3), None);
    assert_eq!(seen.lock().iter().filter(|s| s.0 == l_sqrt).count(), 1);
    assert!(d.delete(info[0].id));
    assert!(!d.delete(info[0].id));
    seen.lock().clear();
    run(Some(5), None);
    assert!(seen.lock().iter().all(|s| s.0 != l_sqrt));
    assert_eq!(d.breakpoints().len(), 2);
    drop(d);
}

#[test]
fn watchpoints_follow_in_place_updates() {
    let _g = SERIAL.lock();
    let v = data(50, 51);
    let mut x = Array::from_slice(&v, &[50]);
    let seen: Seen = Default::default();
    let d = Runtime::debug(Debugger::new().watch(&x).on_stop(recorder(&seen)));
    let other = &x * 3.0f32; // reads x, gives x no new value: no stop
    x += 1.0f32;
    let l_times = line!() + 1;
    x *= 2.0f32;
    let y = (&x - &other).sum();
    // Two stops so far, both at the in-place updates (recorded, nothing computed yet).
    assert_eq!(seen.lock().len(), 2);
    // The read computes x's latest value (in the same flush): the third stop.
    let total = y.item().unwrap() as f64;
    let info = d.breakpoints();
    drop(d);
    let got = seen.lock().clone();
    assert_eq!(got.len(), 3);
    assert!(
        got[..2]
            .iter()
            .all(|s| matches!(s.2, StopReason::Watch { .. }))
    );
    assert!(
        matches!(got[2].2, StopReason::Computed { hits: 3, .. }),
        "{:?}",
        got[2].2
    );
    assert_eq!(
        got[2].0, l_times,
        "the computed stop is at the array's line"
    );
    let plus: Vec<f64> = v.iter().map(|&a| a as f64 + 1.0).collect();
    let times: Vec<f64> = plus.iter().map(|a| a * 2.0).collect();
    close(&got[0].3, &plus, 1e-6, "x after +=");
    close(&got[1].3, &times, 1e-6, "x after *=");
    close(&got[2].3, &times, 1e-6, "x computed");
    assert_eq!(info[0].hits, 3);
    let want: f64 = times.iter().zip(&v).map(|(t, &a)| t - 3.0 * a as f64).sum();
    close(&[total], &[want], 1e-4, "total");
}

/// `y = f(x)` and work that reads it, for `watchpoints_stop_once_when_the_array_is_computed`.
struct Watched {
    y: Array<f32>,
    line: u32,
    s: Array<f32>,
}

fn watched_program(a: &[f32], b: &[f32]) -> Watched {
    let x = Array::from_slice(a, &[ROWS, COLS]);
    let c = Array::from_slice(b, &[ROWS, COLS]);
    let (y, line) = ((&x * &c + 1.0f32).abs().sqrt(), line!());
    let s = (&y - &x).exp().sum_axis(1);
    Watched { y, line, s }
}

/// A watchpoint on an array produced by `let y = f(x)` (no in-place update) stops once, when the
/// runtime computes `y` (the read of a result that needs it), not when it is recorded; the stop
/// is at `y`'s line and shows `y`'s value (an f64 oracle); reading `y` afterwards does not stop
/// again; the results, kernels and flushes are those of a run without the debugger, bit for bit.
#[test]
fn watchpoints_stop_once_when_the_array_is_computed() {
    let _g = SERIAL.lock();
    let (a, b) = (data(ROWS * COLS, 71), data(ROWS * COLS, 72));
    let want: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &c)| (x as f64 * c as f64 + 1.0).abs().sqrt())
        .collect();
    let read = |w: &Watched| (w.s.to_vec().unwrap(), w.y.to_vec().unwrap());
    let _warm = read(&watched_program(&a, &b));

    let s0 = Runtime::stats();
    let plain = read(&watched_program(&a, &b));
    let s1 = Runtime::stats();

    let seen: Seen = Default::default();
    let d = Runtime::debug(Debugger::new().on_stop(recorder(&seen)));
    let s2 = Runtime::stats();
    let w = watched_program(&a, &b);
    let id = d.watch(&w.y);
    // Recorded, not computed: no stop yet.
    assert!(seen.lock().is_empty(), "{:?}", seen.lock());
    let s_val = w.s.to_vec().unwrap();
    assert_eq!(seen.lock().len(), 1, "the read that computes y stops once");
    let y_val = w.y.to_vec().unwrap();
    let s3 = Runtime::stats();
    let info = d.breakpoints();
    drop(d);

    let got = seen.lock().clone();
    assert_eq!(got.len(), 1, "y is computed once: {got:?}");
    assert_eq!(got[0].2, StopReason::Computed { id, hits: 1 });
    assert_eq!(got[0].0, w.line);
    close(&got[0].3, &want, 1e-6, "y at its computed stop");
    assert_eq!(info[0].hits, 1);
    // Bit-identical results, the same kernels and flushes.
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&plain.0), bits(&s_val));
    assert_eq!(bits(&plain.1), bits(&y_val));
    assert_eq!(delta(&s0, &s1), delta(&s2, &s3), "kernels/flushes changed");
    close(&f64s(&y_val), &want, 1e-6, "y");
}

/// A stop's values read a stored array whose own inputs are gone (the application dropped them
/// and the flush that stored it let them go): the value at the stop is computed from it.
#[test]
fn values_at_a_stop_read_stored_arrays_whose_inputs_are_gone() {
    let _g = SERIAL.lock();
    let va = data(64, 81);
    let seen: Seen = Default::default();
    let d = Runtime::debug(Debugger::new().on_stop(recorder(&seen)));
    let v = {
        let u = Array::from_slice(&va, &[64]);
        (&u * 2.0f32 + 1.0f32).abs().sqrt()
    };
    v.eval().unwrap(); // stored; `u` and the intermediates are gone
    d.break_at(file!(), line!() + 1);
    let x = &v * 3.0f32;
    let got = x.to_vec().unwrap();
    drop(d);
    let want: Vec<f64> = va
        .iter()
        .map(|&a| (a as f64 * 2.0 + 1.0).abs().sqrt() * 3.0)
        .collect();
    let stops = seen.lock().clone();
    assert_eq!(stops.len(), 1, "{stops:?}");
    close(&stops[0].3, &want, 1e-6, "x at its stop");
    close(&f64s(&got), &want, 1e-6, "x");
}

#[test]
fn live_arrays_print_and_edits_that_the_continuation_uses() {
    let _g = SERIAL.lock();
    let (va, vb) = (data(12, 61), data(12, 62));
    let at_stop: Arc<Mutex<Vec<String>>> = Default::default();
    let log = at_stop.clone();
    let d = Runtime::debug(Debugger::new().on_stop(move |stop| {
        let live = stop.live();
        let a = stop.find("a").expect("a is named");
        let la = live.iter().find(|l| l.id == a).expect("a is live");
        assert_eq!(
            (la.shape.clone(), la.dtype),
            (vec![3, 4], arrayflow::DType::F32)
        );
        let here = stop.site().line();
        assert!(
            live.iter()
                .any(|l| l.id == stop.array() && l.site.line() == here)
        );
        log.lock()
            .push(stop.print(stop.array(), "[1, 1:3]").unwrap());
        // Edit: x[1, 2] = 100 and a's first row to 7; what follows must use them.
        stop.set_element(stop.array(), &[1, 2], 100.0f32).unwrap();
        let mut edited = stop.read::<f32>(a).unwrap();
        edited[..4].fill(7.0);
        stop.set(a, &edited).unwrap();
        assert!(stop.set(a, &[1.0f32]).is_err());
    }));
    let a = Array::from_slice(&va, &[3, 4]).named("a");
    let b = Array::from_slice(&vb, &[3, 4]);
    // The line below records two calls (mul, then add): the first hit is ignored.
    d.add(Breakpoint::at(file!(), line!() + 1).ignore(1));
    let x = &a * 2.0f32 + &b;
    let y = (&x * &a).sum_axis(1);
    let got = y.to_vec().unwrap();
    drop(d);
    let mut ea: Vec<f64> = va.iter().map(|&v| v as f64).collect();
    let mut ex: Vec<f64> = ea
        .iter()
        .zip(&vb)
        .map(|(a, &b)| a * 2.0 + b as f64)
        .collect();
    let printed = at_stop.lock()[0].clone();
    let expect = format!("[{:?}, {:?}]", ex[5] as f32, ex[6] as f32);
    assert_eq!(printed.replace(' ', ""), expect.replace(' ', ""));
    ex[6] = 100.0;
    ea[..4].fill(7.0);
    let want: Vec<f64> = (0..3)
        .map(|i| (0..4).map(|j| ex[i * 4 + j] * ea[i * 4 + j]).sum())
        .collect();
    close(&f64s(&got), &want, 1e-5, "y with the edits");
    let _ = ArrayId::of(&a);
}
