//! Several devices at once (issue 25): `K` independent chains of `n` f32 elements, each drawn on
//! the device by the counter-based generator, put through an element-wise chain and summed, then
//! all `K` sums read. The same program runs in child processes, one per device list (a runtime's
//! executors are fixed per process): by default the first discrete GPU alone, then every
//! discrete GPU at once, then `ARRAYFLOW_DEVICE`'s own list if set. Prints the median time per
//! round of each, the tasks each executor ran and the speed-up over the single device.
//!
//! `MULTI_CHAINS` (64), `MULTI_N` (2^24), `MULTI_ROUNDS` (7), `MULTI_LISTS` (`;`-separated
//! device lists, overriding the defaults).

use arrayflow::{Array, DeviceKind, Rng, Runtime};
use std::process::Command;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One round: every chain recorded, then every sum read.
fn round(chains: usize, n: usize, seed: u64) -> f64 {
    let sums: Vec<Array<f32>> = (0..chains)
        .map(|i| {
            let x = Rng::new(seed + i as u64).uniform::<f32>(&[n]);
            (((&x * 1.5f32 + 1.0f32).sqrt() * 0.5f32 + x.sin()).exp() - 1.0f32).sum()
        })
        .collect();
    sums.iter()
        .map(|s| s.item().expect("sum") as f64)
        .sum::<f64>()
}

/// The child: runs the rounds on this process's devices and prints one line
/// `RESULT <devices> <median ms> <checksum> <tasks per executor>`.
fn child() {
    let (chains, n, rounds) = (
        env("MULTI_CHAINS", 64),
        env("MULTI_N", 1 << 24),
        env("MULTI_ROUNDS", 7),
    );
    let names: Vec<String> = Runtime::live_devices()
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    let check = round(chains, n, 1); // warm-up: compiles, allocates
    let before = Runtime::stats();
    let mut times: Vec<f64> = (0..rounds)
        .map(|r| {
            let t = Instant::now();
            let c = round(chains, n, 1);
            assert_eq!(c, check, "round {r} gave a different checksum");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let s = Runtime::stats().since(&before);
    times.sort_by(f64::total_cmp);
    let tasks: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n}={}", s.executors[i].tasks / rounds as u64))
        .collect();
    println!(
        "RESULT {} {:.3} {:.6e} {}",
        names[1..].join(","),
        times[times.len() / 2],
        check,
        tasks.join(",")
    );
}

fn main() {
    if std::env::var_os("MULTI_CHILD").is_some() {
        child();
        return;
    }
    let lists: Vec<String> = match std::env::var("MULTI_LISTS") {
        Ok(v) => v.split(';').map(str::to_string).collect(),
        Err(_) => {
            let gpus: Vec<String> = Runtime::devices()
                .iter()
                .filter(|d| {
                    d.kind == DeviceKind::Discrete && d.backend == arrayflow::Backend::OpenCl
                })
                .map(|d| format!("opencl:{}", d.index))
                .collect();
            if gpus.is_empty() {
                eprintln!(
                    "no discrete OpenCL GPU: set MULTI_LISTS, e.g. \"opencl:0;opencl:0,wgpu:0\""
                );
                return;
            }
            let mut l = vec![gpus[0].clone()];
            if gpus.len() > 1 {
                l.push(gpus.join(","));
            }
            if let Ok(own) = std::env::var("ARRAYFLOW_DEVICE") {
                l.push(own);
            }
            l
        }
    };
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{} chains of {} f32 (uniform draw, 6-op chain, sum), median of {} rounds",
        env("MULTI_CHAINS", 64),
        env("MULTI_N", 1 << 24),
        env("MULTI_ROUNDS", 7)
    );
    println!(
        "{:<28} {:>10} {:>9}  {:<16}  tasks per round by executor",
        "devices", "ms/round", "speed-up", "checksum"
    );
    let mut base = None;
    for list in lists {
        let out = Command::new(&exe)
            .env("MULTI_CHILD", "1")
            .env("ARRAYFLOW_DEVICE", &list)
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
            println!(
                "{list:<28} failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            continue;
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        let ms: f64 = f[2].parse().unwrap_or(f64::NAN);
        let b = *base.get_or_insert(ms);
        println!(
            "{:<28} {:>10.2} {:>8.2}x  {:<16}  {}",
            f[1],
            ms,
            b / ms,
            f[3],
            f.get(4).unwrap_or(&"")
        );
    }
}
