//! Every device at once (issue 25): this process starts with `DeviceChoice::All` (PoCL's device,
//! lavapipe's adapter and the CPU on CI), whatever `ARRAYFLOW_DEVICE` says. Checks that every
//! installed device runs live, that independent programs spread over executors by the cost
//! model, that a placement scope pins work and `to_device` moves data, that data crosses between
//! every pair of executors with the right values and byte counts, that f64 never runs on a device
//! without it, and that placement does not depend on timing.

mod common;

use arrayflow::{Array, Backend, Device, Runtime, Stats};
use common::*;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn required(b: &str) -> bool {
    std::env::var("ARRAYFLOW_REQUIRE_BACKENDS").is_ok_and(|v| v.split(',').any(|x| x.trim() == b))
}

/// Starts the runtime on every device (once per process) and takes the statistics lock.
fn start() -> parking_lot::MutexGuard<'static, ()> {
    start_on_every_device();
    SERIAL.lock()
}

/// A chain of element-wise steps whose f64 oracle is `chain_f64`.
fn chain(x: &Array<f32>, k: f32) -> Array<f32> {
    ((x * k + 1.0f32).sqrt() * 0.5f32 + x.sin()).exp() - 1.0f32
}

fn chain_f64(x: f64, k: f64) -> f64 {
    (((x * k + 1.0).sqrt() * 0.5) + x.sin()).exp() - 1.0
}

fn check_chain(got: &[f32], x: &[f32], k: f32) {
    for (i, (&g, &v)) in got.iter().zip(x).enumerate() {
        let w = chain_f64(v as f64, k as f64);
        assert!(
            ((g as f64) - w).abs() <= 2e-6 * w.abs().max(1.0),
            "element {i}: {g} vs {w}"
        );
    }
}

fn tasks(s: &Stats, d: &Device) -> u64 {
    s.executors[d.index()].tasks
}

#[test]
fn all_starts_every_installed_device_beside_the_cpu() {
    let _g = start();
    let live = Runtime::live_devices();
    println!(
        "{}",
        live.iter()
            .map(|d| format!("{} = {d}", d.name()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(live[0], Device::cpu());
    for (i, d) in live.iter().enumerate() {
        assert_eq!(d.index(), i);
    }
    for (name, b) in [("opencl", Backend::OpenCl), ("wgpu", Backend::Wgpu)] {
        let n = live.iter().filter(|d| d.backend() == b).count();
        if required(name) {
            assert!(n > 0, "ARRAYFLOW_REQUIRE_BACKENDS names {name}: {live:?}");
        }
    }
    // One physical device runs once, whichever backends offer it: as many devices of a name as
    // the backend offering most of them has.
    for d in &live[1..] {
        let name = &d.info().expect("a device").name;
        let per = |b: Backend| {
            Runtime::devices()
                .iter()
                .filter(|i| &i.name == name && i.backend == b)
                .count()
        };
        let want = per(Backend::OpenCl).max(per(Backend::Wgpu));
        let got = live[1..]
            .iter()
            .filter(|l| l.info().is_some_and(|i| &i.name == name))
            .count();
        assert_eq!(got, want, "{name}: {live:?}");
    }
}

#[test]
fn independent_chains_spread_over_executors_with_the_right_values() {
    let _g = start();
    let live = Runtime::live_devices();
    let mut r = rng(25);
    let n = 1 << 17;
    let xs: Vec<Vec<f32>> = (0..12).map(|_| rand_f32(&mut r, n, 0.0, 2.0)).collect();
    let before = Runtime::stats();
    let ys: Vec<Array<f32>> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| chain(&Array::from_slice(x, &[n]), 1.0 + i as f32 * 0.25))
        .collect();
    for (i, (y, x)) in ys.iter().zip(&xs).enumerate() {
        check_chain(&read(y), x, 1.0 + i as f32 * 0.25);
    }
    let s = Runtime::stats().since(&before);
    let used: Vec<&Device> = live.iter().filter(|d| tasks(&s, d) > 0).collect();
    println!(
        "tasks per executor: {:?}",
        live.iter()
            .map(|d| (d.name(), tasks(&s, d)))
            .collect::<Vec<_>>()
    );
    let total: u64 = live.iter().map(|d| tasks(&s, d)).sum();
    assert_eq!(total, s.kernels_launched + s.intrinsics_launched);
    if live.len() > 2 {
        assert!(
            used.len() >= 2,
            "12 independent chains ran on one executor: {used:?}"
        );
    }
}

#[test]
fn a_placement_scope_pins_work_and_to_device_moves_data() {
    let _g = start();
    let mut r = rng(7);
    let n = 1 << 15;
    let x = rand_f32(&mut r, n, 0.0, 1.0);
    for d in Runtime::live_devices() {
        let before = Runtime::stats();
        let y = {
            let _scope = Runtime::place_on(&d);
            chain(&Array::from_slice(&x, &[n]), 0.5)
        };
        y.eval().expect("computed");
        let s = Runtime::stats().since(&before);
        assert!(tasks(&s, &d) > 0, "nothing ran on {d}");
        let all: u64 = s.executors.iter().map(|e| e.tasks).sum();
        assert_eq!(tasks(&s, &d), all, "pinned to {d}: {:?}", s.executors);
        assert!(y.devices().contains(&d), "{d}: {:?}", y.devices());
        check_chain(&read(&y), &x, 0.5);

        // `to_device` moves a value held elsewhere, once, and counts its bytes.
        let a = Array::from_slice(&x, &[n]);
        a.eval().expect("uploaded");
        let before = Runtime::stats();
        let b = a.to_device(&d).expect("placed");
        Runtime::execute();
        let s = Runtime::stats().since(&before);
        assert!(b.devices().contains(&d), "{d}: {:?}", b.devices());
        let moved = if d.index() == 0 { 0 } else { 4 * n as u64 };
        assert_eq!(s.executors[d.index()].bytes_in, moved, "{d}");
        assert_eq!(read(&b), x);
    }
}

/// A value made on each executor in turn and read on the next: every pair of executors moves
/// data both ways, through the host, with the bytes counted on both ends.
#[test]
fn values_cross_between_every_pair_of_executors() {
    let _g = start();
    let live = Runtime::live_devices();
    let mut r = rng(11);
    let n = 1 << 12;
    let x = rand_f32(&mut r, n, 0.0, 1.0);
    let mut want: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut y = Array::from_slice(&x, &[n]);
    for from in &live {
        for to in &live {
            let before = Runtime::stats();
            y = {
                let _s = Runtime::place_on(from);
                &y * 0.5f32 + 0.25f32
            };
            y.eval().expect("computed");
            let z = {
                let _s = Runtime::place_on(to);
                &y * 2.0f32 - 0.5f32
            };
            z.eval().expect("computed");
            let s = Runtime::stats().since(&before);
            for w in want.iter_mut() {
                *w = (*w * 0.5 + 0.25) * 2.0 - 0.5;
            }
            if from != to {
                assert_eq!(
                    s.executors[to.index()].bytes_in,
                    4 * n as u64,
                    "{from} -> {to}: {:?}",
                    s.executors
                );
                assert!(s.executors[from.index()].bytes_out >= 4 * n as u64);
            }
            y = z;
        }
    }
    for (i, (&g, &w)) in read(&y).iter().zip(&want).enumerate() {
        assert!(((g as f64) - w).abs() <= 1e-5, "element {i}: {g} vs {w}");
    }
}

#[test]
fn f64_work_never_runs_on_a_device_without_f64() {
    let _g = start();
    let mut r = rng(3);
    let n = 1 << 14;
    let x = rand_f64(&mut r, n, -1.0, 1.0);
    for d in Runtime::live_devices() {
        let before = Runtime::stats();
        let y = {
            let _s = Runtime::place_on(&d);
            (Array::from_slice(&x, &[n]) * 3.0).exp().sum()
        };
        let got = y.item().expect("computed");
        let s = Runtime::stats().since(&before);
        let want: f64 = x.iter().map(|v| (v * 3.0).exp()).sum();
        assert!((got - want).abs() <= 1e-12 * want.abs(), "{got} vs {want}");
        for e in Runtime::live_devices() {
            if e.info().is_some_and(|i| !i.fp64) {
                assert_eq!(tasks(&s, &e), 0, "f64 ran on {e}");
            }
        }
    }
}

/// The same program twice, each time after every earlier result was read: the same executors
/// run the same number of programs (placement is a function of the program and the devices).
#[test]
fn placement_does_not_depend_on_timing() {
    let _g = start();
    let live = Runtime::live_devices();
    let mut r = rng(5);
    let n = 1 << 16;
    let xs: Vec<Vec<f32>> = (0..6).map(|_| rand_f32(&mut r, n, 0.0, 1.0)).collect();
    let run = || {
        let before = Runtime::stats();
        let ys: Vec<Array<f32>> = xs
            .iter()
            .map(|x| chain(&Array::from_slice(x, &[n]), 2.0))
            .collect();
        let sums: Vec<f32> = ys.iter().map(|y| y.sum().item().expect("sum")).collect();
        let s = Runtime::stats().since(&before);
        (live.iter().map(|d| tasks(&s, d)).collect::<Vec<_>>(), sums)
    };
    // The first run settles what earlier tests left in the model (every result read).
    let _ = run();
    let (a, sa) = run();
    // Busy the CPU between the runs: timing differs, placement must not.
    let _ = (0..2_000_000u64).fold(0u64, |h, i| h.wrapping_mul(31).wrapping_add(i));
    let (b, sb) = run();
    assert_eq!(a, b, "tasks per executor differ between identical runs");
    assert_eq!(sa, sb);
}

/// Where an array lives is shown at a debugger stop (`Stop::live`) and asked with
/// `Array::devices`.
#[test]
fn a_debugger_stop_shows_where_each_array_lives() {
    let _g = start();
    let n = 1 << 12;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.001).collect();
    for d in Runtime::live_devices() {
        let seen: std::sync::Arc<parking_lot::Mutex<Vec<Vec<String>>>> = Default::default();
        let sink = seen.clone();
        let line = line!() + 15;
        let dbg = Runtime::debug(arrayflow::Debugger::new().break_at(file!(), line).on_stop(
            move |stop| {
                let live = stop.live().into_iter();
                sink.lock().extend(
                    live.filter(|l| l.name.as_deref() == Some("placed"))
                        .map(|l| l.devices),
                );
            },
        ));
        let a = {
            let _s = Runtime::place_on(&d);
            (Array::from_slice(&x, &[n]) + 1.0f32).named("placed")
        };
        a.eval().expect("computed");
        let b = &a * 2.0f32;
        drop(dbg);
        let seen = seen.lock().clone();
        assert_eq!(seen.len(), 1, "{d}: one stop with `placed` live");
        assert!(seen[0].iter().any(|n| n == d.name()), "{d}: {:?}", seen[0]);
        for (i, (&g, &v)) in read(&b).iter().zip(&x).enumerate() {
            assert!(
                ((g as f64) - (v as f64 + 1.0) * 2.0).abs() <= 1e-6,
                "{i}: {g}"
            );
        }
    }
}
