//! Host memory stays flat in long loops: uploading data, computing from it, reading the result and
//! dropping everything must give the memory back (GitHub issue 18: every upload's data was kept
//! by the CPU executor's buffer pool, which nothing of that size ever took back out). The resident
//! set size comes from `/proc/self/statm`, so these tests run on Linux only. Tests run one at a
//! time (they measure the whole process).

#![cfg(target_os = "linux")]

mod common;

use arrayflow::{Array, Runtime};
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Resident set size of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("the resident field of statm");
    pages * 4096
}

const MB: usize = 1 << 20;
/// Growth allowed after warm-up: far below what the loops would keep if each upload stayed
/// (3000 x 256 KiB = 750 MiB).
const ALLOWED: usize = 50 * MB;

/// Runs `step` `warm` times, then `n` times more, and checks RSS grew by less than [`ALLOWED`]
/// over the second part. Not under comparison mode, which keeps a reference copy of every array
/// it checks and interprets every op again (the soak measures the runtime as programs use it).
fn soak(warm: usize, n: usize, mut step: impl FnMut(usize)) {
    if common::comparison_mode() {
        eprintln!("memory soak: not run under comparison mode");
        return;
    }
    for i in 0..warm {
        step(i);
    }
    Runtime::execute();
    let before = rss();
    let mut peak = before;
    for i in 0..n {
        step(warm + i);
        if i % 100 == 0 {
            peak = peak.max(rss());
        }
    }
    Runtime::execute();
    let after = rss();
    peak = peak.max(after);
    assert!(
        peak < before + ALLOWED,
        "RSS grew from {} MiB to {} MiB (peak {} MiB) over {n} iterations",
        before / MB,
        after / MB,
        peak / MB
    );
}

#[test]
fn upload_compute_read_drop_keeps_host_memory_flat() {
    let _g = SERIAL.lock();
    const N: usize = 65536;
    soak(200, 3000, |i| {
        let v = (i % 7) as f32;
        let b = Array::from_vec(vec![v; N], &[N]);
        let c = &b * 2.0 + 1.0;
        // A stored result (the sum) and a zero-copy read of an element-wise one.
        let s = c.sum().item().unwrap();
        assert_eq!(s, (v * 2.0 + 1.0) * N as f32, "iteration {i}");
        let out = c.to_vec().unwrap();
        assert_eq!(out[N - 1], v * 2.0 + 1.0);
        drop((b, c));
        Runtime::execute();
    });
}

#[test]
fn uploads_dropped_unread_keep_host_memory_flat() {
    // The loop: upload, drop, execute.
    let _g = SERIAL.lock();
    soak(200, 3000, |_| {
        let b = Array::from_vec(vec![1.0f32; 65536], &[65536]);
        drop(b);
        Runtime::execute();
    });
}

#[test]
fn uploads_of_changing_sizes_keep_host_memory_flat() {
    // Each size is seen a few times and then never again: nothing may pile up per size in the
    // CPU executor's pool. (A device executor compiles a program per size, 500 of them, and keeps
    // device buffers by size under its own memory budget, `ARRAYFLOW_DEVICE_MEMORY`; on PoCL that
    // memory is the process's. This test is about the CPU executor's pool.)
    let _g = SERIAL.lock();
    if Runtime::backend() != arrayflow::Backend::Cpu {
        eprintln!("the changing-sizes soak checks the CPU executor's pool: not run on a device");
        return;
    }
    soak(100, 2000, |i| {
        let n = 32768 + (i % 500) * 64;
        let b = Array::from_vec(vec![2.0f64; n], &[n]);
        let c = (&b + 1.0).sum().item().unwrap();
        assert_eq!(c, 3.0 * n as f64);
        drop(b);
        Runtime::execute();
    });
}

#[test]
fn a_hundred_thousand_small_iterations_keep_host_memory_flat() {
    // Issue 18: RSS flat over 10^5 iterations of upload, compute and read. Small arrays, so the
    // per-iteration bookkeeping (nodes, buffers, programs, replies) is what would pile up: 512
    // bytes kept per iteration would already exceed the allowance. On a device executor each
    // iteration is a device round trip (1.5-2.7 ms on lavapipe: 10^5 of them took 194-276 s of
    // CI's wgpu stage): 25,000 iterations there, where 2 KiB kept per launch would show; the
    // front end's and scheduler's bookkeeping is the same on every executor and is soaked for
    // 10^5 iterations on the CPU's.
    let _g = SERIAL.lock();
    let n = if common::any_device() {
        25_000
    } else {
        100_000
    };
    soak(2000, n, |i| {
        let v = (i % 13) as f32;
        let b = Array::from_vec(vec![v; 256], &[256]);
        let s = (&b * 2.0 + 1.0).sum().item().unwrap();
        assert_eq!(s, (v * 2.0 + 1.0) * 256.0, "iteration {i}");
    });
}
