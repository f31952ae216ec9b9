//! Device memory pressure and kernel splitting, shared by `device_pressure_opencl.rs` and
//! `device_pressure_wgpu.rs` (one process per backend, since the runtime is one per process): the
//! runtime starts on that backend with 1 MiB of device memory and kernels limited to 8
//! instructions, so buffers are swapped to the host backing store, tasks that cannot fit run on
//! the CPU, and big kernels are split and retried — and every result must still be right.
#![allow(dead_code)]

use arrayflow::{Array, Backend, DeviceChoice, DeviceLimits, ErrorKind, Runtime, TrapConfig};
use std::sync::OnceLock;

/// Starts the runtime on `backend` once and returns a guard that runs this file's tests one at a
/// time (their statistics would mix otherwise); `None` (skip) when this machine has no such device
/// and `ARRAYFLOW_REQUIRE_BACKENDS` does not name it (then it panics).
pub fn start(backend: Backend) -> Option<parking_lot::MutexGuard<'static, ()>> {
    static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    static STARTED: OnceLock<bool> = OnceLock::new();
    let started = *STARTED.get_or_init(|| {
        let name = backend.to_string();
        if !Runtime::devices().iter().any(|d| d.backend == backend) {
            let req = std::env::var("ARRAYFLOW_REQUIRE_BACKENDS").unwrap_or_default();
            assert!(
                !req.split(',').any(|b| b.trim() == name),
                "ARRAYFLOW_REQUIRE_BACKENDS names {name} but there is no {name} device"
            );
            println!("skipped: no {name} device on this machine");
            return false;
        }
        let choice = match backend {
            Backend::OpenCl => DeviceChoice::OpenCl(None),
            _ => DeviceChoice::Wgpu(None),
        };
        Runtime::builder()
            .device(choice)
            .device_limits(DeviceLimits {
                memory: Some(1 << 20),
                kernel_instructions: Some(8),
                // The threads spin before blocking (off by default on CPU-backed devices), so
                // that path runs under memory pressure too.
                spin: Some(std::time::Duration::from_micros(200)),
                ..DeviceLimits::from_env()
            })
            .start()
            .expect("the runtime starts on the device");
        assert_eq!(Runtime::backend(), backend, "{}", Runtime::executor());
        true
    });
    started.then(|| ONE_AT_A_TIME.lock())
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 16_777_216.0
                + 0.5
        })
        .collect()
}

/// Twelve 256 KiB arrays live at once on a 1 MiB device: older ones go to the host backing store
/// and come back when used again.
pub fn swapping_keeps_values() {
    let n = 64 * 1024;
    let before = Runtime::stats();
    let inputs: Vec<Vec<f32>> = (0..12).map(|k| data(n, k)).collect();
    let arrays: Vec<Array<f32>> = inputs
        .iter()
        .map(|v| Array::from_vec(v.clone(), &[n]))
        .collect();
    let mut results = Vec::new();
    for (k, a) in arrays.iter().enumerate() {
        let r = a * (k as f32 + 1.0) + 0.25;
        r.eval().unwrap();
        results.push(r);
    }
    // Use every result again, the oldest first (those were swapped out).
    for (k, r) in results.iter().enumerate() {
        let got = (r - 0.25).to_vec().unwrap();
        for (i, (&g, &x)) in got.iter().zip(&inputs[k]).enumerate() {
            let w = x as f64 * (k as f64 + 1.0);
            assert!(
                (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
                "array {k} [{i}]: {g} vs {w}"
            );
        }
    }
    let st = Runtime::stats().since(&before);
    println!("{:?}", st.device);
    assert!(
        st.device.swapped_out > 0,
        "nothing was swapped out: {:?}",
        st.device
    );
    assert!(
        st.device.swapped_in > 0,
        "nothing came back: {:?}",
        st.device
    );
}

/// The profiler records each swap with its direction, bytes and duration (as many as the
/// runtime's counters saw; every buffer here is 256 KiB), and the I/O report lists them.
pub fn profiled_swaps_carry_bytes_and_time() {
    use arrayflow::profile::{db, report};
    let dir = std::env::temp_dir().join(format!("af-pressure-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let n = 64 * 1024;
    let inputs: Vec<Vec<f32>> = (0..12).map(|k| data(n, 100 + k)).collect();
    let arrays: Vec<Array<f32>> = inputs
        .iter()
        .map(|v| Array::from_vec(v.clone(), &[n]))
        .collect();
    Runtime::execute();
    let before = Runtime::stats();
    let guard = Runtime::profile(&dir).expect("start the profiler");
    let wall = std::time::Instant::now();
    let results: Vec<Array<f32>> = arrays.iter().map(|a| a * 2.0 + 1.0).collect();
    for r in &results {
        r.eval().unwrap();
    }
    for (k, r) in results.iter().enumerate() {
        let got = (r - 1.0).to_vec().unwrap();
        for (i, (&g, &x)) in got.iter().zip(&inputs[k]).enumerate() {
            let w = x as f64 * 2.0;
            assert!(
                (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{k}[{i}]: {g} vs {w}"
            );
        }
    }
    let wall_ns = wall.elapsed().as_nanos() as u64;
    let folder = guard.finish().expect("profile written");
    let st = Runtime::stats().since(&before).device;
    let run = db::read(&folder).expect("read the run");
    let swaps = |d: &str| {
        run.runtime
            .iter()
            .filter(|e| e.kind == "swap" && e.detail == d)
            .collect::<Vec<_>>()
    };
    let (out, back) = (swaps("out"), swaps("in"));
    assert!(st.swapped_out > 0 && st.swapped_in > 0, "{st:?}");
    assert_eq!(out.len() as u64, st.swapped_out, "{st:?}");
    assert_eq!(back.len() as u64, st.swapped_in, "{st:?}");
    for e in out.iter().chain(&back) {
        assert_eq!(e.bytes, 4 * n as u64, "{e:?}");
        assert!(
            e.dur_ns > 0 && e.dur_ns <= wall_ns,
            "{e:?} vs wall {wall_ns}"
        );
    }
    let io = report::io_report(&run);
    let line = io
        .lines()
        .find(|l| l.starts_with("swap") && l.contains(" out "))
        .unwrap_or_else(|| panic!("{io}"));
    assert!(line.contains(&st.swapped_out.to_string()), "{io}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One task whose buffers cannot fit in 1 MiB even after swapping runs on the CPU instead.
pub fn too_big_runs_on_the_cpu() {
    let n = 1 << 19; // 2 MiB per array
    let a = data(n, 7);
    let before = Runtime::stats();
    let x = Array::from_vec(a.clone(), &[n]);
    let got = (&x * 3.0 - 1.0).to_vec().unwrap();
    for (i, (&g, &v)) in got.iter().zip(&a).enumerate() {
        let w = v as f64 * 3.0 - 1.0;
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "[{i}] {g} vs {w}"
        );
    }
    let st = Runtime::stats().since(&before);
    assert!(st.device.fallbacks > 0, "{:?}", st.device);
}

/// A 20-instruction kernel on a device that compiles at most 8: split until the pieces compile.
pub fn big_kernels_are_split() {
    let n = 4096;
    let a = data(n, 3);
    let b = data(n, 9);
    let before = Runtime::stats();
    let x = Array::from_vec(a.clone(), &[n]);
    let y = Array::from_vec(b.clone(), &[n]);
    let mut t = &x * &y;
    for k in 0..8 {
        t = (&t + &x * (k as f32)).sqrt() + &y;
    }
    let got = t.to_vec().unwrap();
    for i in 0..n {
        let (xa, yb) = (a[i] as f64, b[i] as f64);
        let mut w = xa * yb;
        for k in 0..8 {
            w = (w + xa * k as f64).sqrt() + yb;
        }
        assert!(
            (got[i] as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "[{i}] {} vs {w}",
            got[i]
        );
    }
    let st = Runtime::stats().since(&before);
    assert!(st.device.splits > 0, "{:?}", st.device);
    assert_eq!(
        st.device.fallbacks, 0,
        "split kernels must run on the device: {:?}",
        st.device
    );
}

/// A checked launch in passes whose kernel the device splits (over the 8-instruction limit)
/// cannot be cut into passes on the device (its halves would number their checks apart): the
/// device executor runs its passes on the CPU tile VM from host copies of its inputs, stops
/// after the pass holding the planted NaN, stays suspended while other work runs on the device,
/// and resumes to the plain loop's values.
pub fn split_kernels_in_passes_run_on_the_tile_vm() {
    let n = 20_000;
    let mut a = data(n, 5);
    let bad = 13_001;
    a[bad] = -1.0;
    let tile = Runtime::config().tile.min(n);
    let pass: usize = 4096;
    let per = pass.div_ceil(tile) * tile;
    let passes = n.div_ceil(per);
    Runtime::traps(TrapConfig::nan().passes(pass));
    let before = Runtime::stats();
    let x = Array::from_vec(a.clone(), &[n]);
    let mut t = x.sqrt();
    for k in 0..6 {
        t = (&t + k as f32) * 0.5 + &x;
    }
    assert_eq!(t.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    let traps = Runtime::take_traps();
    assert_eq!(traps.len(), 1, "{traps:?}");
    let tr = &traps[0];
    assert_eq!(
        (tr.element, tr.pass, tr.suspended, tr.device, tr.op.as_str()),
        (bad, Some((bad / per, passes)), true, false, "sqrt"),
        "{tr}"
    );
    let st = Runtime::stats().since(&before);
    assert!(
        st.device.splits > 0 && st.device.fallbacks > 0,
        "{:?}",
        st.device
    );
    // Other work runs on the device meanwhile.
    let b = data(n, 6);
    let other = (Array::from_vec(b.clone(), &[n]) * 2.0).to_vec().unwrap();
    for (i, (&g, &w)) in other.iter().zip(&b).enumerate() {
        assert_eq!(g, w * 2.0, "[{i}]");
    }
    assert_eq!(t.to_vec().unwrap_err().kind(), ErrorKind::Trap);
    assert_eq!(Runtime::resume().unwrap(), 1);
    let got = t.to_vec().unwrap();
    Runtime::traps(TrapConfig::off());
    assert!(Runtime::take_traps().is_empty());
    for (i, (&g, &xa)) in got.iter().zip(&a).enumerate() {
        if i == bad {
            assert!(g.is_nan(), "[{i}] {g}");
            continue;
        }
        let xa = xa as f64;
        let w = (0..6).fold(xa.sqrt(), |w, k| (w + k as f64) * 0.5 + xa);
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "[{i}] {g} vs {w}"
        );
    }
}
