//! What comparison mode's narrowing costs (issue 24, `CompareConfig::narrow`): a user's loop of
//! fused element-wise kernels (`y = tanh(x * a + b) * x - c`, 64 Ki elements, read each
//! iteration) timed with comparison mode off (the peer), on without narrowing, and on with the
//! default narrowing (the last 8 fused kernels kept, their inputs held), in alternating
//! repetitions of the same run. Nothing mismatches here: the cost measured is keeping kernels,
//! which every flush pays; narrowing itself runs only on a mismatch.
//!
//! Run with `cargo bench --bench compare_narrow` (or, for a quick look at the unoptimised build,
//! `cargo test --bench compare_narrow`).

use arrayflow::{Array, CompareConfig, CompareMode, Runtime};
use std::hint::black_box;
use std::time::Instant;

const N: usize = 1 << 16;
const ITERS: usize = 20;

/// Seconds for `ITERS` iterations, each one fused kernel read back.
fn run(x: &[f32]) -> f64 {
    let a = Array::from_slice(x, &[N]);
    let (b, c) = (Array::full(&[N], 0.25f32), Array::full(&[N], 1.5f32));
    let t0 = Instant::now();
    let mut y = a.clone();
    for _ in 0..ITERS {
        y = (&(&y * &a) + &b).tanh() * &a - &c;
        black_box(y.to_vec().unwrap());
    }
    t0.elapsed().as_secs_f64()
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn main() {
    println!("executor: {}", Runtime::executor());
    let x: Vec<f32> = (0..N)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    let configs: [(&str, Option<CompareConfig>); 3] = [
        ("comparison off (peer)", None),
        (
            "comparison on copy-out, narrowing off",
            Some(CompareConfig::new(CompareMode::OnCopyOut).narrow(0)),
        ),
        (
            "comparison on copy-out, narrowing on (default, 8 kernels)",
            Some(CompareConfig::new(CompareMode::OnCopyOut)),
        ),
    ];
    let mut times = vec![Vec::new(); configs.len()];
    run(&x); // warm: caches, threads
    for _ in 0..5 {
        for (i, (_, c)) in configs.iter().enumerate() {
            Runtime::set_compare(c.clone());
            times[i].push(run(&x));
        }
    }
    Runtime::set_compare(None);
    let off = best(&times[0]);
    let plain = best(&times[1]);
    println!();
    println!(
        "| run ({ITERS} fused kernels of {N} f32, each read; best of 5) | time | vs off | vs comparison without narrowing |"
    );
    println!("| --- | --- | --- | --- |");
    for (i, (name, _)) in configs.iter().enumerate() {
        let t = best(&times[i]);
        println!(
            "| {name} | {:.2} ms | {:.2} | {:.3} |",
            t * 1e3,
            t / off,
            t / plain
        );
    }
}
