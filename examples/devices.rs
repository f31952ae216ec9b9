//! Lists the devices arrayflow found, runs a small program set of kernels on the executor
//! `ARRAYFLOW_DEVICE` picks (default: a discrete GPU if there is one, else the CPU), checks the
//! results against plain Rust, and prints how long the device's compiles took — run it twice to
//! see the second process load the programs from the on-disk cache instead of compiling
//! (`ARRAYFLOW_CACHE_DIR` moves that cache).
//!
//!     cargo run --release --example devices

use arrayflow::{Array, Runtime};
use std::time::Instant;

fn main() {
    println!("devices found:");
    for d in Runtime::devices() {
        println!("  {d}");
    }
    if Runtime::devices().is_empty() {
        println!("  none (no OpenCL platform or Vulkan adapter): kernels run on the CPU");
    }
    let t0 = Instant::now();
    println!("executor: {}", Runtime::executor());
    let started = t0.elapsed();

    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 1000.0 + 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32 / 777.0 + 0.25).collect();
    let before = Runtime::stats();
    let t1 = Instant::now();
    let x = Array::from_vec(a.clone(), &[n]);
    let y = Array::from_vec(b.clone(), &[n]);
    // Element-wise chain, a reduction, random numbers, integer work and a matrix product: the
    // kernels a typical program compiles at start-up.
    let chain = (((&x * &y + 1.0).sqrt() * &x - &y).abs() * 0.5 + &x)
        .to_vec()
        .unwrap();
    let total = (&x * &y).sum().item().unwrap() as f64;
    let mut rng = arrayflow::Rng::new(7);
    let u = rng.uniform::<f32>(&[n]).mean().item().unwrap() as f64;
    let idx = (Array::<u32>::iota(&[n], 0) * 3u32 % 1000u32)
        .max()
        .item()
        .unwrap();
    let m = Array::<f32>::iota(&[64, 64], 1);
    let mm = m.matmul(&m.transpose()).to_vec().unwrap();
    let first_run = t1.elapsed();
    let st = Runtime::stats().since(&before);

    let mut worst = 0f64;
    for i in 0..n {
        let (p, q) = (a[i], b[i]);
        let want = (((p * q + 1.0).sqrt() * p - q).abs()) * 0.5 + p;
        worst = worst.max(((chain[i] - want) / want).abs() as f64);
    }
    let want_total: f64 = a.iter().zip(&b).map(|(p, q)| (p * q) as f64).sum();
    assert!(worst < 1e-5, "chain off by {worst}");
    assert!(
        (total - want_total).abs() < 1e-4 * want_total,
        "{total} vs {want_total}"
    );
    assert!((u - 0.5).abs() < 0.01, "uniform mean {u}");
    assert_eq!(idx, 999);
    let want_mm: f32 = (0..64).map(|k| (k * k) as f32).sum();
    assert!(
        (mm[0] - want_mm).abs() < 1e-3 * want_mm,
        "{} vs {want_mm}",
        mm[0]
    );
    println!("results match plain Rust (chain worst relative error {worst:.1e})");

    let d = st.device;
    println!(
        "start-up {:.1} ms; first run {:.1} ms: {} device programs compiled, {} loaded from the \
         disk cache, {} found in memory, {:.1} ms compiling or loading; {} tasks on the device, {} on \
         its CPU fallback, {} f64 programs sent to the CPU",
        started.as_secs_f64() * 1e3,
        first_run.as_secs_f64() * 1e3,
        d.compiles,
        d.disk_hits,
        d.memory_hits,
        d.compile_ns as f64 / 1e6,
        d.tasks,
        d.fallbacks,
        d.f64_to_cpu
    );
}
