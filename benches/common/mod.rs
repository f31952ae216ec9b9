//! What the CPU and GPU benchmarks share: their deterministic input data, the 8-op chain (as
//! arrayflow code and as a scalar function) and the table formatting.
#![allow(dead_code)]

use arrayflow::Array;
use std::time::Duration;

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
