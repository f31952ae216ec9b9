//! What the CPU and GPU benchmarks share: their deterministic input data, the 8-op chain (as
//! arrayflow code and as a scalar function), the table formatting, and the products' and
//! solves' timing loop (`benches/{matmul,linalg,small_matmul}.rs`).
#![allow(dead_code)]

use arrayflow::Array;
use std::time::{Duration, Instant};

/// Deterministic values in [-1, 1) (a 64-bit LCG; independent of the runtime's generators), each
/// a multiple of 2^-23, so exact in f32 too.
pub fn lcg_values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// [`lcg_values`] as f32.
pub fn lcg_values_f32(n: usize, seed: u64) -> Vec<f32> {
    lcg_values(n, seed).into_iter().map(|v| v as f32).collect()
}

/// The environment variable `name`, or `default`.
pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Median seconds per call of `f` (each call computes and waits): a warm-up, then 5 loops of
/// `k` calls, `k` chosen so a loop takes about `MATMUL_LOOP_SECONDS` (default 0.3).
pub fn median_call_secs(mut f: impl FnMut()) -> f64 {
    let budget: f64 = env_or("MATMUL_LOOP_SECONDS", "0.3").parse().unwrap_or(0.3);
    f();
    let t0 = Instant::now();
    f();
    let one = t0.elapsed().as_secs_f64().max(1e-7);
    let k = ((budget / one) as usize).clamp(1, 10_000);
    let mut loops: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..k {
                f();
            }
            t.elapsed().as_secs_f64() / k as f64
        })
        .collect();
    loops.sort_by(|a, b| a.partial_cmp(b).unwrap());
    loops[2]
}

/// Deterministic pseudo-random values in [lo, hi) (xorshift64*): non-zero, no NaNs in the chain.
pub fn random_vec(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

#[inline(always)]
pub fn chain_scalar(a: f32, b: f32) -> f32 {
    (((a * b + 1.0).sqrt() * a - b).abs()) * 0.5 + a
}

/// arrayflow: the chain recorded as one expression (nothing runs until it is read or evaluated).
pub fn chain_af(a: &Array<f32>, b: &Array<f32>) -> Array<f32> {
    (((a * b + 1.0).sqrt() * a - b).abs()) * 0.5 + a
}

pub fn fmt_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

pub fn gbs(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// With `ARRAYFLOW_KERNEL_TIMES=1`: prints the device time of each kernel run since the last
/// call (`Runtime::take_kernel_times`), per launch, under the heading `what`; otherwise nothing.
pub fn print_kernel_times(what: &str) {
    let times = arrayflow::Runtime::take_kernel_times();
    if times.is_empty() {
        return;
    }
    let total: u64 = times.iter().map(|t| t.device_ns).sum();
    println!(
        "kernel times, {what} (device; {:.3} ms in all):",
        total as f64 / 1e6
    );
    for t in times.iter().take(12) {
        println!(
            "  {:>10.1} us/launch x{:<5} {:>5.1}%  {}",
            t.device_ns as f64 / t.launches.max(1) as f64 / 1e3,
            t.launches,
            100.0 * t.device_ns as f64 / total.max(1) as f64,
            t.name
        );
    }
}

/// The environment variable `k` as a count, or `default`.
pub fn env_usize(k: &str, default: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The median of `repeats` timed runs of `run` (after one untimed warm-up); `prepare` runs
/// before each, untimed, and hands `run` its input.
pub fn median_prepared<P, R>(
    repeats: usize,
    mut prepare: impl FnMut() -> P,
    mut run: impl FnMut(P) -> R,
) -> Duration {
    std::hint::black_box(run(prepare()));
    let mut t: Vec<Duration> = (0..repeats)
        .map(|_| {
            let p = prepare();
            let t0 = Instant::now();
            std::hint::black_box(run(p));
            t0.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

/// One operation timed in arrayflow and in its peer (`benches/{sort,fft}.rs`).
pub struct PeerRow {
    pub name: String,
    /// The problem's size as the table shows it (`n`, or a shape).
    pub size: String,
    pub af: Duration,
    pub peer: Duration,
    pub peer_name: &'static str,
}

/// Prints `rows` as a table with their ratios, then one `JSON` line each (`bench`, the `extra`
/// fields, written `"key":value,`, and the row).
pub fn print_peer_rows(bench: &str, extra: &str, rows: &[PeerRow]) {
    println!();
    println!(
        "{:<14} {:>14} {:>12} {:>12} {:>8}  peer",
        "op", "size", "arrayflow", "peer", "ratio"
    );
    for r in rows {
        let ratio = r.peer.as_secs_f64() / r.af.as_secs_f64();
        println!(
            "{:<14} {:>14} {:>12} {:>12} {:>7.2}x  {}",
            r.name,
            r.size,
            fmt_time(r.af),
            fmt_time(r.peer),
            ratio,
            r.peer_name
        );
    }
    println!("(ratio = peer time / arrayflow time: above 1 arrayflow is faster)");
    for r in rows {
        println!(
            "JSON {{\"bench\":\"{bench}\",{extra}\"op\":\"{}\",\"size\":\"{}\",\"af_s\":{:.6e},\"peer\":\"{}\",\"peer_s\":{:.6e}}}",
            r.name,
            r.size,
            r.af.as_secs_f64(),
            r.peer_name,
            r.peer.as_secs_f64()
        );
    }
}

/// arrayflow's log on stderr at the level `RUST_LOG` sets (default `warn`: a missing or failed
/// device shows; `RUST_LOG=arrayflow::exec::source=trace` prints each generated kernel's source).
pub fn init_log() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
}
