//! Several devices at once (issue 25): `K` independent chains of `n` f32 elements, each drawn on
//! the device by the counter-based generator, put through an element-wise chain and summed (each
//! started with `hint_read`, so each is a launch of its own), then all `K` sums read. The same
//! program runs in child processes, one per device list (a runtime's executors are fixed per
//! process): by default the first discrete GPU alone, then every
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
            let s = (((&x * 1.5f32 + 1.0f32).sqrt() * 0.5f32 + x.sin()).exp() - 1.0f32).sum();
            // Started now, as its own program: otherwise every chain fuses into one kernel with
            // `chains` reductions, one launch that no scheduler could spread.
            s.hint_read();
            s
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
    if names.len() < 2 {
        println!(
            "NOTE no device started for ARRAYFLOW_DEVICE={:?}; inventory: {:?}",
            std::env::var("ARRAYFLOW_DEVICE"),
            Runtime::devices()
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
        );
    }
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
    move_costs(n);
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

/// With two devices or more: a value of `n` f32 made on the first device and moved to the
/// second (through the host), timed; printed as `MOVE <from> <to> <bytes> <ms>`.
fn move_costs(n: usize) {
    let live = Runtime::live_devices();
    if live.len() < 3 {
        return;
    }
    let (a, b) = (&live[1], &live[2]);
    let mut ms = Vec::new();
    for i in 0..3 {
        let x = {
            let _on = Runtime::place_on(a);
            Rng::new(100 + i).uniform::<f32>(&[n]) * 2.0f32
        };
        x.eval().expect("computed");
        let t = Instant::now();
        let y = x.to_device(b).expect("moved");
        Runtime::execute();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(y.devices().contains(b));
    }
    ms.sort_by(f64::total_cmp);
    println!("MOVE {} {} {} {:.3}", a.name(), b.name(), 4 * n, ms[1]);
}

fn main() {
    match std::env::var("MULTI_CHILD").as_deref() {
        // The inventory's discrete OpenCL GPUs, one per line, from a child: the parent loads no
        // driver itself (NVIDIA's OpenCL platform went missing in children of a process that
        // had loaded it).
        Ok("list") => {
            for d in Runtime::devices() {
                if d.kind == DeviceKind::Discrete && d.backend == arrayflow::Backend::OpenCl {
                    println!("GPU opencl:{}", d.index);
                }
            }
            return;
        }
        Ok(_) => {
            child();
            return;
        }
        Err(_) => {}
    }
    let exe = std::env::current_exe().expect("own path");
    let lists: Vec<String> = match std::env::var("MULTI_LISTS") {
        Ok(v) => v.split(';').map(str::to_string).collect(),
        Err(_) => {
            let listed = Command::new(&exe)
                .env("MULTI_CHILD", "list")
                .output()
                .expect("run the child");
            let gpus: Vec<String> = String::from_utf8_lossy(&listed.stdout)
                .lines()
                .filter_map(|l| l.strip_prefix("GPU ").map(str::to_string))
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
    let mut moves = Vec::new();
    for list in lists {
        let out = Command::new(&exe)
            .env("MULTI_CHILD", "1")
            .env("ARRAYFLOW_DEVICE", &list)
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        // The child's warnings (a device that would not start, say), for the reader.
        for l in String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("panicked"))
        {
            println!("  [{list}] {l}");
        }
        for l in text.lines().filter(|l| l.starts_with("NOTE ")) {
            println!("  [{list}] {l}");
        }
        for m in text.lines().filter(|l| l.starts_with("MOVE ")) {
            let f: Vec<&str> = m.split_whitespace().collect();
            let (bytes, ms): (f64, f64) =
                (f[3].parse().unwrap_or(0.0), f[4].parse().unwrap_or(1.0));
            moves.push(format!(
                "move {} -> {}: {:.1} MB in {:.2} ms, {:.1} GB/s (through the host)",
                f[1],
                f[2],
                bytes / 1e6,
                ms,
                bytes / ms / 1e6
            ));
        }
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
            list,
            ms,
            b / ms,
            f[3],
            f.get(4).unwrap_or(&"")
        );
    }
    for m in moves {
        println!("{m}");
    }
}
