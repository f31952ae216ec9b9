//! Scan benchmark: `cumsum` of f32 along a contiguous axis, against peers measured in the same run.
//!
//! - **CPU** (`ARRAYFLOW_DEVICE` unset or `cpu`): `x.cumsum(0)` of 2^24 f32 (`SCAN_CPU_LOG2`
//!   overrides) on the CPU executor, each iteration evaluated (`eval()`: computed and waited for,
//!   no copy out), against a hand-written rayon two-pass scan of the same data into a
//!   preallocated vector (chunks of n / (4 x threads): chunk sums in eight f32 lanes in parallel,
//!   the chunks' carries in order, every chunk rescanned from its carry in parallel; f32
//!   accumulation) and a sequential loop (f32 accumulation). Also the scan's CPU entry alone
//!   (`intrinsics::cpu::run` on vectors, no runtime), which tells the runtime's share.
//! - **GPU** (`ARRAYFLOW_DEVICE=opencl[:N]` or `wgpu[:N]`): `x.cumsum(0)` of 2^27 f32
//!   (`SCAN_GPU_LOG2` overrides) against the cheapest device copy arrayflow has, `&x + 0.0`
//!   (not folded: `x + 0.0` is not `x` for `x = -0.0`; one kernel reading n and writing n
//!   elements), both evaluated on the device each iteration. The copy moves 8n bytes; a
//!   reduce-then-scan moves 12n (reads the input twice), so the ideal ratio is 0.67.
//!
//! Every result is checked against a sequential f64 loop before timing: element k within
//! `1e-5 * sum_{j<=k} |x_j|` (comparison mode's f32 allowance for a cumsum). Timing: a warm-up,
//! then 7 loops of K iterations (K chosen so a loop takes about `SCAN_SECONDS`, default 0.3 s);
//! the median per iteration. "speed" is the peer's time over arrayflow's (above 1: arrayflow is
//! faster); "GB/s" counts 8n bytes (the input read once, the output written once).
//!
//! ```sh
//! cargo bench --bench scan                          # CPU
//! ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench scan  # GPU (the list printed first gives N)
//! ARRAYFLOW_KERNEL_TIMES=1 ARRAYFLOW_DEVICE=opencl cargo bench --bench scan  # and each pass's time
//! ```

mod common;
use common::{cpu_model, fmt_time, gbs, random_vec};

use arrayflow::{Array, Backend, Runtime};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Timed loops per measurement; the median is reported.
const REPEATS: usize = 7;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Median time per iteration of `run(k)` (k iterations, waited for).
fn time_loop(target: Duration, mut run: impl FnMut(usize)) -> Duration {
    let start = Instant::now();
    let mut warm = Vec::new();
    while warm.len() < 3 || start.elapsed() < target / 4 {
        let t = Instant::now();
        run(1);
        warm.push(t.elapsed().as_secs_f64());
    }
    warm.sort_by(f64::total_cmp);
    let per = warm[warm.len() / 2];
    let k = ((target.as_secs_f64() / per.max(1e-9)) as usize).clamp(1, 10_000);
    let mut times: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            run(k);
            t.elapsed() / k as u32
        })
        .collect();
    times.sort_unstable();
    times[REPEATS / 2]
}

/// Checks a cumsum of `x` against a sequential f64 loop (see the module comment).
fn check(what: &str, x: &[f32], got: &[f32]) {
    assert_eq!(x.len(), got.len(), "{what}: length");
    let (mut acc, mut mag) = (0.0f64, 0.0f64);
    let mut worst = 0.0f64;
    for (k, (&v, &g)) in x.iter().zip(got).enumerate() {
        acc += v as f64;
        mag += (v as f64).abs();
        let err = (g as f64 - acc).abs();
        assert!(
            err <= 1e-5 * mag,
            "{what}: element {k} is {g}, the loop gives {acc} (allowed {:e})",
            1e-5 * mag
        );
        worst = worst.max(err / mag.max(f64::MIN_POSITIVE));
    }
    println!("  checked {what}: largest error {worst:.1e} x the running sum of |x|");
}

/// The peer: a rayon two-pass scan with f32 accumulation.
fn rayon_scan(x: &[f32], y: &mut [f32]) {
    let chunk = x
        .len()
        .div_ceil(4 * rayon::current_num_threads())
        .max(1 << 12);
    let sums: Vec<f32> = x
        .par_chunks(chunk)
        .map(|c| {
            let mut lanes = [0.0f32; 8];
            let mut it = c.chunks_exact(8);
            for q in &mut it {
                for (l, &v) in lanes.iter_mut().zip(q) {
                    *l += v;
                }
            }
            lanes.iter().sum::<f32>() + it.remainder().iter().sum::<f32>()
        })
        .collect();
    let mut carries = Vec::with_capacity(sums.len());
    let mut acc = 0.0f32;
    for s in sums {
        carries.push(acc);
        acc += s;
    }
    y.par_chunks_mut(chunk)
        .zip(x.par_chunks(chunk))
        .zip(carries.par_iter())
        .for_each(|((y, x), &c)| {
            let mut acc = c;
            for (o, &v) in y.iter_mut().zip(x) {
                acc += v;
                *o = acc;
            }
        });
}

/// The peer: one sequential loop.
fn sequential_scan(x: &[f32], y: &mut [f32]) {
    let mut acc = 0.0f32;
    for (o, &v) in y.iter_mut().zip(x) {
        acc += v;
        *o = acc;
    }
}

fn row(name: &str, t: Duration, n: usize, speed: Option<f64>) {
    let speed = speed.map_or("".into(), |s| format!("{s:.2}x"));
    println!(
        "| {name:<42} | {:>10} | {:>7.1} | {speed:>8} |",
        fmt_time(t),
        gbs(8 * n, t)
    );
}

fn header(what: &str) {
    println!("\n{what}");
    println!(
        "| {:<42} | {:>10} | {:>7} | {:>8} |",
        "", "time", "GB/s", "speed"
    );
    println!("|{:-<44}|{:->12}|{:->9}|{:->10}|", "", "", "", "");
}

fn cpu_part(target: Duration) {
    let n = 1usize << env_usize("SCAN_CPU_LOG2", 24);
    println!(
        "CPU: {} ({} rayon threads)",
        cpu_model(),
        rayon::current_num_threads()
    );
    let x = random_vec(n, 7, -1.0, 1.0);
    let a = Array::from_slice(&x, &[n]);
    let got = a.cumsum(0).to_vec().expect("cumsum");
    check("arrayflow cumsum", &x, &got);
    let mut y = vec![0.0f32; n];
    rayon_scan(&x, &mut y);
    check("rayon two-pass scan", &x, &y);
    sequential_scan(&x, &mut y);
    check("sequential loop", &x, &y);

    let t_af = time_loop(target, |k| {
        for _ in 0..k {
            a.cumsum(0).eval().expect("eval");
        }
    });
    // The CPU entry alone, on vectors (no runtime: no recording, no scheduler, no buffers).
    let call = arrayflow::proggen::sequence::IntrinsicCall {
        op: arrayflow::ir::Intrinsic::Scan {
            op: arrayflow::ir::ReduceOp::Sum,
            axis: 0,
        },
        in_shapes: vec![arrayflow::ir::Shape::from_slice(&[n])],
        in_dtypes: vec![arrayflow::ir::DType::F32],
        out_shape: arrayflow::ir::Shape::from_slice(&[n]),
        dtype: arrayflow::ir::DType::F32,
    };
    let xv = arrayflow::exec::TypedVec::F32(x.clone());
    let mut yv = arrayflow::exec::TypedVec::F32(vec![0.0; n]);
    let t_entry = time_loop(target, |k| {
        for _ in 0..k {
            arrayflow::intrinsics::cpu::run(&call, &[&xv], &mut yv).expect("scan");
        }
    });
    let t_rayon = time_loop(target, |k| {
        for _ in 0..k {
            rayon_scan(&x, &mut y);
        }
        std::hint::black_box(&y);
    });
    let t_seq = time_loop(target, |k| {
        for _ in 0..k {
            sequential_scan(&x, &mut y);
        }
        std::hint::black_box(&y);
    });
    header(&format!(
        "cumsum of 2^{} f32 on the CPU (speed: the peer's time over arrayflow's)",
        n.trailing_zeros()
    ));
    row("arrayflow x.cumsum(0), CPU executor", t_af, n, None);
    row(
        "  its CPU entry alone, no runtime",
        t_entry,
        n,
        Some(t_entry.as_secs_f64() / t_af.as_secs_f64()),
    );
    row(
        "rayon two-pass scan (f32 accumulation)",
        t_rayon,
        n,
        Some(t_rayon.as_secs_f64() / t_af.as_secs_f64()),
    );
    row(
        "sequential loop (f32 accumulation)",
        t_seq,
        n,
        Some(t_seq.as_secs_f64() / t_af.as_secs_f64()),
    );
    println!(
        "target: arrayflow >= 0.9x the rayon scan: {:.2}x",
        t_rayon.as_secs_f64() / t_af.as_secs_f64()
    );
}

fn gpu_part(target: Duration) {
    let n = 1usize << env_usize("SCAN_GPU_LOG2", 27);
    println!("executor: {}", Runtime::executor());
    let x = random_vec(n, 7, -1.0, 1.0);
    let a = Array::from_slice(&x, &[n]);
    let before = Runtime::stats().device;
    let got = a.cumsum(0).to_vec().expect("cumsum");
    check("arrayflow cumsum", &x, &got);
    let copy = (&a + 0.0f32).to_vec().expect("copy");
    assert!(copy.iter().zip(&x).all(|(c, v)| c == v), "the copy differs");
    drop((got, copy));
    // With `ARRAYFLOW_KERNEL_TIMES=1`, each pass's device time (reduce, carry, block scan).
    let _ = Runtime::take_kernel_times();
    let t_scan = time_loop(target, |k| {
        for _ in 0..k {
            a.cumsum(0).eval().expect("eval");
        }
    });
    common::print_kernel_times("cumsum");
    let t_copy = time_loop(target, |k| {
        for _ in 0..k {
            (&a + 0.0f32).eval().expect("eval");
        }
    });
    common::print_kernel_times("copy");
    let after = Runtime::stats().device.since(&before);
    assert_eq!(after.fallbacks, 0, "the scan ran on the CPU");
    header(&format!(
        "cumsum of 2^{} f32 on the device (speed: the copy's time over the scan's)",
        n.trailing_zeros()
    ));
    row("arrayflow x.cumsum(0)", t_scan, n, None);
    row(
        "device copy &x + 0.0 (8n bytes)",
        t_copy,
        n,
        Some(t_copy.as_secs_f64() / t_scan.as_secs_f64()),
    );
    println!(
        "target: scan >= 0.6x the copy's speed: {:.2}x (ideal for reduce-then-scan: 0.67)",
        t_copy.as_secs_f64() / t_scan.as_secs_f64()
    );
}

fn main() {
    let target = Duration::from_secs_f64(
        std::env::var("SCAN_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.3),
    );
    println!(
        "arrayflow scan benchmark | ARRAYFLOW_DEVICE={}",
        std::env::var("ARRAYFLOW_DEVICE").unwrap_or_else(|_| "(unset)".into())
    );
    if Runtime::backend() == Backend::Cpu {
        cpu_part(target);
    } else {
        gpu_part(target);
    }
}
