//! Hardware discovery and executor choice, and the moves between executors: whatever executor
//! `ARRAYFLOW_DEVICE` picks for this run (CI runs this file once per executor), f64 work the device
//! cannot do goes to the CPU and data crosses between them with correct results.

mod common;

use arrayflow::{Array, Backend, DeviceChoice, DeviceKind, Runtime};
use common::*;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn required(b: &str) -> bool {
    std::env::var("ARRAYFLOW_REQUIRE_BACKENDS").is_ok_and(|v| v.split(',').any(|x| x.trim() == b))
}

#[test]
fn inventory_lists_every_installed_backend() {
    let inv = Runtime::devices();
    for d in inv {
        println!("{d}");
        assert!(!d.name.is_empty(), "a device without a name: {d:?}");
        assert!(d.memory.is_none_or(|m| m > 0), "{d:?}");
    }
    for (name, b) in [("opencl", Backend::OpenCl), ("wgpu", Backend::Wgpu)] {
        let n = inv.iter().filter(|d| d.backend == b).count();
        if required(name) {
            assert!(
                n > 0,
                "ARRAYFLOW_REQUIRE_BACKENDS names {name} but no device was found"
            );
        } else if n == 0 {
            println!("no {name} device on this machine: its executor is not tested here");
        }
        // Indices count from 0 within a backend.
        let idx: Vec<usize> = inv
            .iter()
            .filter(|d| d.backend == b)
            .map(|d| d.index)
            .collect();
        assert_eq!(idx, (0..n).collect::<Vec<_>>());
    }
    // PoCL and lavapipe are CPU devices: `auto` must not pick them.
    if !inv.iter().any(|d| d.kind == DeviceKind::Discrete) {
        assert_eq!(DeviceChoice::Auto.resolve(), None);
    }
}

#[test]
fn device_choice_parses_and_rejects() {
    assert_eq!("cpu".parse(), Ok(DeviceChoice::Cpu));
    assert_eq!("auto".parse(), Ok(DeviceChoice::Auto));
    assert_eq!("opencl".parse(), Ok(DeviceChoice::OpenCl(None)));
    assert_eq!("opencl:1".parse(), Ok(DeviceChoice::OpenCl(Some(1))));
    assert_eq!("WGPU:0".parse(), Ok(DeviceChoice::Wgpu(Some(0))));
    let e = "cuda".parse::<DeviceChoice>().unwrap_err();
    assert!(e.contains("cpu, opencl[:N], wgpu[:N], auto, all"), "{e}");
    assert!("opencl:x".parse::<DeviceChoice>().is_err());
    assert_eq!("all".parse(), Ok(DeviceChoice::All));
    assert_eq!(
        "opencl:1, wgpu:0,cpu".parse(),
        Ok(DeviceChoice::List(vec![
            DeviceChoice::OpenCl(Some(1)),
            DeviceChoice::Wgpu(Some(0)),
            DeviceChoice::Cpu
        ]))
    );
    let e = "opencl,all".parse::<DeviceChoice>().unwrap_err();
    assert!(e.contains("`all` cannot be part of a list"), "{e}");
}

#[test]
fn executor_is_the_one_asked_for() {
    let want = std::env::var("ARRAYFLOW_DEVICE").unwrap_or_default();
    let backend = Runtime::backend(); // the device asked for
    println!("executor: {}", Runtime::executor());
    match want.split(':').next().unwrap_or("") {
        "opencl" if required("opencl") => assert_eq!(backend, Backend::OpenCl),
        "wgpu" if required("wgpu") => assert_eq!(backend, Backend::Wgpu),
        "cpu" => assert_eq!(backend, Backend::Cpu),
        _ => {}
    }
    if backend != Backend::Cpu {
        assert!(
            Runtime::executor().contains(" + cpu"),
            "{}",
            Runtime::executor()
        );
    }
}

#[test]
fn values_cross_between_device_and_cpu() {
    let _one_at_a_time = SERIAL.lock();
    // f32 on the device, f64 on the CPU where the device has no f64, then f32 again: every
    // hand-over between executors must carry the right values.
    let mut r = rng(41);
    let n = 5000;
    let a = rand_f32(&mut r, n, -3.0, 3.0);
    let b = rand_f32(&mut r, n, 0.5, 2.0);
    let before = Runtime::stats();
    let x = Array::from_vec(a.clone(), &[n]);
    let y = Array::from_vec(b.clone(), &[n]);
    let s = &x * &y + 1.0; // device (or CPU)
    s.eval().unwrap();
    let d = s.cast::<f64>().exp(); // f64
    d.eval().unwrap();
    let back = (d.cast::<f32>() - &y).abs(); // f32 again
    let got = back.to_vec().unwrap();
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let s = a[i] * b[i] + 1.0;
            ((s as f64).exp() as f32 - b[i]).abs() as f64
        })
        .collect();
    assert_close(&got, &want, 1e-5, 1e-5, "device -> cpu f64 -> device");
    let st = Runtime::stats().since(&before);
    if common::the_device() == Backend::Wgpu {
        assert!(st.device.f64_to_cpu > 0, "{:?}", st.device);
        assert!(st.device.bytes_from_device > 0 && st.device.bytes_to_device > 0);
    }
    if common::the_device() != Backend::Cpu {
        assert!(st.device.tasks > 0, "{:?}", st.device);
    }
}

#[test]
fn device_results_are_kept_on_the_device_until_read() {
    let _one_at_a_time = SERIAL.lock();
    let n = 1 << 16;
    let a = Array::<f32>::iota(&[n], 0);
    let before = Runtime::stats();
    let y = (&a * 2.0 + 1.0).sqrt();
    y.eval().unwrap();
    let z = &y * &y - 1.0; // reads y where it was computed
    let got = z.to_vec().unwrap();
    let st = Runtime::stats().since(&before);
    for (i, g) in got.iter().enumerate() {
        let w = 2.0 * i as f64;
        assert!(
            (*g as f64 - w).abs() <= 1e-6 * w.max(1.0) * 4.0,
            "{i}: {g} vs {w}"
        );
    }
    if common::the_device() != Backend::Cpu {
        // Only the final read comes back to the host.
        assert_eq!(st.device.bytes_from_device, 0, "{:?}", st.device);
        // One submission per program (the read's download goes with the program that computes
        // it, straight into the caller's vector).
        assert!(st.device.tasks >= 1, "{:?}", st.device);
        assert_eq!(st.device.submissions, st.device.tasks, "{:?}", st.device);
    }
}

/// Results dropped while their program is still queued on a device go back to its pool at once
/// (the device runs its queue in order), so a loop that starts many programs and keeps only the
/// last result reuses a few buffers instead of allocating one per program in flight; the values
/// stay right.
#[test]
fn results_dropped_in_flight_are_reused_on_the_device() {
    let _one_at_a_time = SERIAL.lock();
    // Smaller under comparison mode (every op interpreted again; the buffer counts are checked on
    // a device executor only).
    let n = if comparison_mode() { 1 << 12 } else { 1 << 18 };
    let av: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001 + 0.5).collect();
    let a = Array::from_vec1(av.clone());
    (&a + 0.0).eval().unwrap(); // a is on the executor, the kernel is compiled
    let iters = 64;
    let before = Runtime::stats();
    let mut last = None;
    for k in 0..iters {
        let y = (&a * 2.0 + k as f32).sqrt();
        y.hint_read();
        last = Some(y); // the previous result is dropped, its program maybe still queued
    }
    let got = last.unwrap().to_vec().unwrap();
    let st = Runtime::stats().since(&before);
    for (i, (&g, &x)) in got.iter().zip(&av).enumerate() {
        let w = (x as f64 * 2.0 + (iters - 1) as f64).sqrt();
        assert!(
            (g as f64 - w).abs() <= 4.0 * f32::EPSILON as f64 * w,
            "{i}: {g} vs {w}"
        );
    }
    if on_device() {
        assert!(
            st.buffers_allocated <= 4,
            "{} buffers allocated for {iters} programs whose results were dropped in flight \
             ({} reused)",
            st.buffers_allocated,
            st.buffers_reused
        );
    } else {
        println!("skip: stream-ordered reuse is a device executor's (this run is on the CPU)");
    }
}

#[test]
fn discovery_prints_nothing_on_standard_error() {
    // The child: takes the inventory and computes something; the parent reads its stderr.
    if std::env::var("ARRAYFLOW_TEST_CHILD").is_ok() {
        let _ = arrayflow::Runtime::devices();
        let total = arrayflow::Array::<f32>::ones(&[64]).sum().item().unwrap();
        assert_eq!(total, 64.0);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "discovery_prints_nothing_on_standard_error",
            "--test-threads=1",
        ])
        .env("ARRAYFLOW_TEST_CHILD", "1")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {err}");
    assert!(
        !err.contains("XDG_RUNTIME_DIR") && !err.contains("error"),
        "stray lines on stderr: {err}"
    );
}

#[test]
fn exit_with_work_in_flight_is_orderly() {
    // GitHub issue 18 item 9: a wgpu process crashed after its last line. The child runs a mix of
    // programs, leaves a long one queued and returns; at exit the runtime's threads must leave the
    // drivers before those tear down (the exit handler logs that they ended).
    if std::env::var("ARRAYFLOW_TEST_CHILD").is_ok() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("arrayflow::exec=debug")
            .with_writer(std::io::stderr)
            .try_init();
        let mut r = rng(9);
        let a = Array::from_vec(rand_f32(&mut r, 128 * 128, -1.0, 1.0), &[128, 128]);
        let m = a.matmul(&a.transpose());
        let e = (&m - m.max_axis(1).reshape(&[128, 1])).exp();
        let soft = &e / e.sum_axis(1).reshape(&[128, 1]);
        let cols = soft.sum_axis(0);
        let total = cols.sum().item().unwrap();
        assert!((total - 128.0).abs() < 1e-2, "softmax rows sum to {total}");
        let mut x = Array::<f32>::zeros(&[1 << 16]);
        for _ in 0..50 {
            x = (&x * 0.5 + 1.0).sqrt();
        }
        x.eval().unwrap();
        Runtime::execute();
        // Work still to compile and run when the program returns: many small distinct kernels
        // (one per function, two element types), so with an empty driver cache (below) a device
        // executor is in the driver's compiler, with more to compile, when the process exits.
        type Unary = fn(&Array<f32>) -> Array<f32>;
        let fs: [Unary; 16] = [
            Array::exp,
            Array::sqrt,
            Array::cbrt,
            Array::ln,
            Array::sin,
            Array::cos,
            Array::tan,
            Array::atan,
            Array::sinh,
            Array::tanh,
            Array::erf,
            Array::erfc,
            Array::asinh,
            Array::floor,
            Array::round,
            Array::exp2,
        ];
        let x64 = x.cast::<f64>();
        for f in fs {
            f(&x).hint_read();
            f(&x64.cast::<f32>()).cast::<f64>().hint_read();
        }
        return;
    }
    // Once on a device executor (on PoCL each child compiles its kernels again) with the caches
    // it found and twice more with empty ones, three times on the CPU. Orderly exit is the
    // default: the children do not ask for it.
    let runs = 3;
    for run in 0..runs {
        let fresh = std::env::temp_dir().join(format!("af-exit-{}-{run}", std::process::id()));
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "exit_with_work_in_flight_is_orderly",
            "--test-threads=1",
        ])
        .env("ARRAYFLOW_TEST_CHILD", "1");
        if run > 0 && on_device() {
            cmd.env("POCL_CACHE_DIR", fresh.join("pocl"))
                .env("ARRAYFLOW_CACHE_DIR", fresh.join("arrayflow"));
        }
        let out = cmd.output().unwrap();
        let _ = std::fs::remove_dir_all(&fresh);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "run {run}: the child failed ({:?}): {err}",
            out.status
        );
        assert!(
            err.contains("the runtime's threads have ended"),
            "run {run}: the exit handler did not report that the runtime's threads ended: {err}"
        );
    }
}

/// Arrays of several MiB go to the device and back through reused staging buffers
/// (`exec/gpu/wgpu_staging.rs` on wgpu); each round trip must carry its own values, also when
/// a buffer is reused for an array of another size, for booleans (widened on the device), and for
/// an upload recorded behind a dispatch of the same batch.
#[test]
fn large_arrays_cross_to_the_device_and_back() {
    let _one_at_a_time = SERIAL.lock();
    let mut r = rng(43);
    let small = comparison_mode();
    let sizes: &[usize] = if small {
        &[1 << 14, 3 << 12]
    } else {
        &[
            (1 << 20) + 5,
            (1 << 20) + 5,
            3 << 20,
            1 << 19,
            (1 << 20) + 5,
        ]
    };
    for (round, &n) in sizes.iter().enumerate() {
        let a = rand_f32(&mut r, n, -2.0, 2.0);
        let x = Array::from_vec(a.clone(), &[n]);
        let y = &x * 3.0 - 1.0;
        // Another upload after a dispatch, before the batch is submitted.
        y.hint_read();
        let b = rand_f32(&mut r, n, -1.0, 1.0);
        let z = Array::from_vec(b.clone(), &[n]) + &y;
        let pos = z.gt(0.0);
        let (got_y, got_z, got_pos) = (
            y.to_vec().unwrap(),
            z.to_vec().unwrap(),
            pos.to_vec().unwrap(),
        );
        // f64 oracles; a fused multiply-add on the device is within an ulp or two.
        let close = |g: f32, w: f64| (g as f64 - w).abs() <= 1e-6 * (1.0 + w.abs());
        for i in 0..n {
            let wy = a[i] as f64 * 3.0 - 1.0;
            let wz = b[i] as f64 + wy;
            assert!(
                close(got_y[i], wy),
                "round {round}, n {n}, y[{i}] = {} vs {wy}",
                got_y[i]
            );
            assert!(
                close(got_z[i], wz),
                "round {round}, n {n}, z[{i}] = {} vs {wz}",
                got_z[i]
            );
            assert_eq!(got_pos[i], got_z[i] > 0.0, "round {round}, n {n}, pos[{i}]");
        }
    }
}

/// A program that reads one host array twice (`aᵀ a`: both operands of the product are `a`)
/// moves it to the device once.
#[test]
fn an_array_read_twice_by_one_program_moves_once() {
    let _one_at_a_time = SERIAL.lock();
    let mut r = rng(47);
    let (rows, cols) = (1000, 8);
    let av = rand_f32(&mut r, rows * cols, -1.0, 1.0);
    let a = Array::from_vec(av.clone(), &[rows, cols]);
    let before = Runtime::stats();
    let got = a.transpose().matmul(&a).to_vec().unwrap();
    let st = Runtime::stats().since(&before);
    for i in 0..cols {
        for j in 0..cols {
            let w: f64 = (0..rows)
                .map(|k| av[k * cols + i] as f64 * av[k * cols + j] as f64)
                .sum();
            let g = got[i * cols + j] as f64;
            assert!(
                (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "[{i}, {j}]: {g} vs {w}"
            );
        }
    }
    if on_device() {
        assert_eq!(
            st.device.bytes_to_device,
            (rows * cols * 4) as u64,
            "{:?}",
            st.device
        );
    }
}
