//! Random-number benchmark: 10M uniforms and normals (f32 and f64) from each generator
//! (Philox4x32-10 `Rng::new`, Hash32 `Rng::fast`), summed, in ns per element. Columns:
//! arrayflow on the CPU's tile VM and native tier (all threads; on a device executor, chosen
//! with `ARRAYFLOW_DEVICE`, the device instead), a plain single-threaded Rust loop over the same
//! generator (one call per word, `f32::ln`/`cos` for normals), and the `rand` crate's `StdRng`
//! (ChaCha12; `rand_distr::StandardNormal` for normals), single-threaded. Every arrayflow sum is
//! first checked against the plain loop's f64 sum of the same stream.
//!
//! Run with `cargo bench --bench random`. `RANDOM_N` sets the element count (default 10M),
//! `RANDOM_SECONDS` (default 0.5) the time aimed at per cell; each cell is the median of timed
//! repetitions after a warm-up. "per thread" multiplies arrayflow's ns/element by the threads
//! it ran on (issue 17 compares that with 33 and 78 ns per uniform and normal).

mod common;
use common::cpu_model;

use arrayflow::primitives::cpu as prim;
use arrayflow::{Backend, NativeMode, Rng, RngAlgorithm, Runtime};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Median of repeated runs of `f` after a warm-up.
fn time<R>(mut f: impl FnMut() -> R) -> Duration {
    for _ in 0..2 {
        black_box(f());
    }
    let budget = Duration::from_secs_f64(env_or("RANDOM_SECONDS", 0.5));
    let start = Instant::now();
    let mut v = Vec::new();
    while v.len() < 5 || (start.elapsed() < budget && v.len() < 100) {
        let t = Instant::now();
        black_box(f());
        v.push(t.elapsed());
    }
    v.sort();
    v[v.len() / 2]
}

#[derive(Clone, Copy, PartialEq)]
enum Case {
    UniformF32,
    NormalF32,
    UniformF64,
    NormalF64,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::UniformF32 => "uniform f32",
            Case::NormalF32 => "normal f32",
            Case::UniformF64 => "uniform f64",
            Case::NormalF64 => "normal f64",
        }
    }
    fn words(self) -> usize {
        match self {
            Case::UniformF32 => 1,
            Case::NormalF32 | Case::UniformF64 => 2,
            Case::NormalF64 => 4,
        }
    }
}

/// The plain single-threaded loop: the stream's words one call at a time (a Philox block per
/// four words, a Hash32 call per word), std's `ln`/`cos` for normals, summed in f64.
fn plain_sum(alg: RngAlgorithm, key: [u32; 2], n: usize, case: Case) -> f64 {
    let w = case.words();
    let mut sum = 0.0f64;
    let mut block = (u64::MAX, [0u32; 4]);
    for g in 0..n as u64 {
        let r: [u32; 4] = match alg {
            RngAlgorithm::Philox => {
                let per = (4 / w) as u64;
                if block.0 != g / per {
                    block = (g / per, prim::philox_at(key, g / per));
                }
                let first = (g % per) as usize * w;
                std::array::from_fn(|k| block.1[(first + k) % 4])
            }
            RngAlgorithm::Hash32 => {
                let c = (g as u32).wrapping_mul(w as u32);
                std::array::from_fn(|k| prim::hash32(key, c.wrapping_add(k as u32)))
            }
        };
        sum += match case {
            Case::UniformF32 => prim::uniform_f32(r[0]) as f64,
            Case::UniformF64 => prim::uniform_f64(r[0], r[1]),
            Case::NormalF32 => {
                let u1 = ((r[0] >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0);
                let u2 = prim::uniform_f32(r[1]);
                ((-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()) as f64
            }
            Case::NormalF64 => {
                let u1 = 1.0 - prim::uniform_f64(r[0], r[1]);
                let u2 = prim::uniform_f64(r[2], r[3]);
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            }
        };
    }
    sum
}

/// The `rand` crate's peer, single-threaded.
fn rand_sum(n: usize, case: Case) -> f64 {
    let mut r = StdRng::seed_from_u64(42);
    let mut sum = 0.0f64;
    match case {
        Case::UniformF32 => (0..n).for_each(|_| sum += r.random::<f32>() as f64),
        Case::UniformF64 => (0..n).for_each(|_| sum += r.random::<f64>()),
        Case::NormalF32 => (0..n).for_each(|_| {
            let z: f32 = StandardNormal.sample(&mut r);
            sum += z as f64
        }),
        Case::NormalF64 => (0..n).for_each(|_| {
            let z: f64 = StandardNormal.sample(&mut r);
            sum += z
        }),
    }
    sum
}

fn af_sum(alg: RngAlgorithm, seed: u64, n: usize, case: Case) -> f64 {
    let mut rng = Rng::with_algorithm(alg, seed);
    match case {
        Case::UniformF32 => rng.uniform::<f32>(&[n]).sum().item().unwrap() as f64,
        Case::NormalF32 => rng.normal::<f32>(&[n]).sum().item().unwrap() as f64,
        Case::UniformF64 => rng.uniform::<f64>(&[n]).sum().item().unwrap(),
        Case::NormalF64 => rng.normal::<f64>(&[n]).sum().item().unwrap(),
    }
}

fn main() {
    let n: usize = env_or("RANDOM_N", 10_000_000);
    let cpu = Runtime::backend() == Backend::Cpu;
    let threads = if cpu { rayon::current_num_threads() } else { 1 };
    println!(
        "random: {} ({} threads), {} elements per draw, executor {:?}; ns per element (median)\n",
        cpu_model(),
        rayon::current_num_threads(),
        n,
        Runtime::backend()
    );
    let tiers: Vec<(&str, Option<NativeMode>)> = if cpu {
        vec![
            ("tile VM", Some(NativeMode::Off)),
            ("native", Some(NativeMode::Require)),
        ]
    } else {
        vec![("device", None)]
    };
    let mut head = String::from("| generator | draw |");
    for (t, _) in &tiers {
        head += &format!(" arrayflow {t} | {t} per thread |");
    }
    println!("{head} plain Rust (1 thread) | rand StdRng (1 thread) |");
    println!("|{}", " --- |".repeat(2 + 2 * tiers.len() + 2));
    let ns = |d: Duration| d.as_secs_f64() * 1e9 / n as f64;
    for alg in [RngAlgorithm::Philox, RngAlgorithm::Hash32] {
        for case in [
            Case::UniformF32,
            Case::NormalF32,
            Case::UniformF64,
            Case::NormalF64,
        ] {
            let seed = 0x5eed_0042;
            let key = Rng::with_algorithm(alg, seed).key();
            let want = plain_sum(alg, key, n, case);
            let mut row = format!("| {alg:?} | {} |", case.name());
            for (_, mode) in &tiers {
                if let Some(m) = mode {
                    Runtime::set_native(*m);
                }
                let got = af_sum(alg, seed, n, case);
                // Sums in different orders (and f32 terms' `ln`/`cos` differing in the last
                // bits): another stream would be off by about sqrt(n / 12) or sqrt(n).
                assert!(
                    (got - want).abs() <= (1e-3 * (n as f64).sqrt()).max(1e-6 * want.abs()),
                    "{alg:?} {}: arrayflow sum {got}, plain loop {want}",
                    case.name()
                );
                let t = ns(time(|| af_sum(alg, seed, n, case)));
                row += &format!(" {t:.3} | {:.2} |", t * threads as f64);
            }
            Runtime::set_native(NativeMode::Auto);
            let plain = ns(time(|| plain_sum(alg, key, n, case)));
            let peer = ns(time(|| rand_sum(n, case)));
            println!("{row} {plain:.2} | {peer:.2} |");
        }
    }
}
