//! Counting benchmark: `histogram` and `scatter_add` on the executor `ARRAYFLOW_DEVICE` selects
//! (`cpu`, `opencl[:N]`, `wgpu[:N]`), against plain-Rust rayon loops in the same process.
//!
//! - **histogram**: `n` f32 uniform on [-0.05, 1.05) into 256 bins over [0, 1] (values outside
//!   are not counted); n = 2^27 on a device executor, 2^24 on the CPU. Peer: a rayon loop with a
//!   256-bin histogram per task (fold/reduce), binning as NumPy does (a guess from the bin width
//!   corrected against the edges), which is also how arrayflow bins.
//! - **scatter_add**: 2^24 f32 values on [-1, 1) added into 2^16 bins at random u32 indices
//!   (`out = base.scatter_add(idx, vals, 0)`). Peer: a rayon loop adding into an f32 partial
//!   array per task, the partials then summed onto the base.
//! - **scatter_add, k-means' shape**: 2^24 f32 values as 2^23 rows of 2 added into 8 rows of 2
//!   (`base[8, 2].scatter_add(idx[2^23], vals[2^23, 2], 0)`: few targets, every one hit by
//!   millions of sources). Same peer, on rows.
//!
//! Every result (arrayflow's and the peer's) is checked against a sequential oracle before it is
//! timed: histogram counts exactly, scatter_add within `(k + 1) eps_f32 sum |terms|` of the f64
//! sum of each bin's `k` terms. The inputs are uploaded and evaluated once first, so a device
//! holds them; each arrayflow iteration records the op and `eval()`s it (computed and waited for,
//! nothing copied back; a histogram also uploads its 257 edges). Timing: a warm-up, then loops
//! of K iterations with K chosen so a loop takes about `COUNTING_SECONDS` (default 0.3), 5
//! loops, the median per iteration.
//!
//! Sizes: `COUNTING_HIST_LOG2` (default 27 on a device, 24 on the CPU), `COUNTING_HIST_BINS`
//! (256), `COUNTING_SCATTER_LOG2` (24, values of both scatter_add rows), `COUNTING_BINS_LOG2`
//! (16), `COUNTING_FEW_BINS` (8) and `COUNTING_FEW_ROW` (2) for k-means' shape. The table ends with one
//! `JSON {...}` line per row (the lead compares with `torch.histc` / `index_add_` on the GPU).
//!
//! ```sh
//! cargo bench --bench counting                          # the CPU executor
//! ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench counting  # a device executor
//! ```

mod common;
use common::{cpu_model, fmt_time, gbs, random_vec};

use arrayflow::{Array, Backend, Runtime};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Timed loops per measurement; the median is reported.
const REPEATS: usize = 5;

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The median time per iteration of `run(k)` (which runs and waits for `k` iterations).
fn time_loop(target: Duration, mut run: impl FnMut(usize)) -> Duration {
    let mut warm = Vec::new();
    let start = Instant::now();
    while warm.len() < 3 || start.elapsed() < target / 4 {
        let t = Instant::now();
        run(1);
        warm.push(t.elapsed().as_secs_f64());
    }
    warm.sort_by(f64::total_cmp);
    let per = warm[warm.len() / 2].max(1e-7);
    let k = ((target.as_secs_f64() / per) as usize).clamp(1, 10_000);
    let mut t: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let s = Instant::now();
            run(k);
            s.elapsed() / k as u32
        })
        .collect();
    t.sort_unstable();
    t[REPEATS / 2]
}

/// Deterministic u32 values below `bound`.
fn random_indices(n: usize, seed: u64, bound: u32) -> Vec<u32> {
    random_vec(n, seed, 0.0, 1.0)
        .into_iter()
        .map(|u| ((u as f64 * bound as f64) as u32).min(bound - 1))
        .collect()
}

/// NumPy's edges for `bins` bins on [lo, hi] in f32.
fn edges(bins: usize, lo: f64, hi: f64) -> Vec<f32> {
    let step = (hi - lo) / bins as f64;
    (0..=bins)
        .map(|k| if k == bins { hi } else { k as f64 * step + lo } as f32)
        .collect()
}

/// The bin of `x` (the peer's binning: a guess, corrected against the edges).
#[inline]
fn bin_of(x: f32, e: &[f32], scale: f32) -> Option<usize> {
    let bins = e.len() - 1;
    if !(x >= e[0] && x <= e[bins]) {
        return None;
    }
    let mut b = (((x - e[0]) * scale) as usize).min(bins - 1);
    while b > 0 && x < e[b] {
        b -= 1;
    }
    while b + 1 < bins && x >= e[b + 1] {
        b += 1;
    }
    Some(b)
}

/// The rayon peer: a histogram per task, added together.
fn histogram_peer(x: &[f32], e: &[f32]) -> Vec<u32> {
    let bins = e.len() - 1;
    let scale = bins as f32 / (e[bins] - e[0]);
    x.par_chunks(1 << 16)
        .fold(
            || vec![0u32; bins],
            |mut h, c| {
                for &v in c {
                    if let Some(b) = bin_of(v, e, scale) {
                        h[b] += 1;
                    }
                }
                h
            },
        )
        .reduce(
            || vec![0u32; bins],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// The oracle: a sequential linear scan over the edges (exact counts).
fn histogram_oracle(x: &[f32], e: &[f32]) -> Vec<u32> {
    let bins = e.len() - 1;
    let mut h = vec![0u32; bins];
    for &v in x {
        if v >= e[0] && v <= e[bins] {
            let b = e[..bins].partition_point(|&edge| edge <= v) - 1;
            h[b] += 1;
        }
    }
    h
}

/// The rayon peer: f32 partial sums per task, then summed onto the base (`row` values per
/// index, landing on `row` consecutive elements of the base).
fn scatter_add_peer(base: &[f32], idx: &[u32], vals: &[f32], row: usize) -> Vec<f32> {
    let bins = base.len();
    let part = idx
        .par_chunks(1 << 16)
        .zip(vals.par_chunks(row << 16))
        .fold(
            || vec![0f32; bins],
            |mut acc, (i, v)| {
                if row == 1 {
                    for (&i, &v) in i.iter().zip(v) {
                        acc[i as usize] += v;
                    }
                } else {
                    for (&i, v) in i.iter().zip(v.chunks_exact(row)) {
                        let t = i as usize * row;
                        acc[t..t + row]
                            .iter_mut()
                            .zip(v)
                            .for_each(|(a, &x)| *a += x);
                    }
                }
                acc
            },
        )
        .reduce(
            || vec![0f32; bins],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    base.iter().zip(part).map(|(b, p)| b + p).collect()
}

/// Checks a scatter_add result against the f64 sums: each bin within `(k + 1) eps sum |terms|`.
fn check_scatter_add(got: &[f32], base: &[f32], idx: &[u32], vals: &[f32], row: usize, who: &str) {
    let mut sum: Vec<f64> = base.iter().map(|&b| b as f64).collect();
    let mut size: Vec<f64> = base.iter().map(|&b| (b as f64).abs()).collect();
    let mut terms = vec![1usize; base.len()];
    for (s, &v) in vals.iter().enumerate() {
        let t = idx[s / row] as usize * row + s % row;
        sum[t] += v as f64;
        size[t] += (v as f64).abs();
        terms[t] += 1;
    }
    for t in 0..base.len() {
        let bound = (terms[t] + 1) as f64 * f32::EPSILON as f64 * size[t];
        let err = (got[t] as f64 - sum[t]).abs();
        assert!(
            err <= bound,
            "{who}: scatter_add bin {t} is {} (sum {}; error {err:e} > {bound:e})",
            got[t],
            sum[t]
        );
    }
}

struct Row {
    name: String,
    n: usize,
    bytes: usize,
    af: Duration,
    peer: Duration,
}

fn label(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

fn main() {
    let device = Runtime::backend() != Backend::Cpu;
    let target = Duration::from_secs_f64(
        std::env::var("COUNTING_SECONDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.3),
    );
    let hist_n = 1usize << env_num("COUNTING_HIST_LOG2", if device { 27 } else { 24 });
    let hist_bins = env_num("COUNTING_HIST_BINS", 256);
    let sc_n = 1usize << env_num("COUNTING_SCATTER_LOG2", 24);
    let sc_bins = 1usize << env_num("COUNTING_BINS_LOG2", 16);
    println!(
        "executor: {} (host: {}, {} rayon threads)",
        Runtime::executor(),
        cpu_model(),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();

    // Histogram.
    {
        let x = random_vec(hist_n, 7, -0.05, 1.05);
        let e = edges(hist_bins, 0.0, 1.0);
        let want = histogram_oracle(&x, &e);
        let peer = histogram_peer(&x, &e);
        assert_eq!(peer, want, "the rayon histogram differs from the oracle");
        let a = Array::from_vec(x.clone(), &[hist_n]);
        a.eval().unwrap();
        let got = a.histogram(hist_bins, 0.0, 1.0).to_vec().unwrap();
        assert_eq!(got, want, "arrayflow's histogram differs from the oracle");
        let af = time_loop(target, |k| {
            for _ in 0..k {
                a.histogram(hist_bins, 0.0, 1.0).eval().unwrap();
            }
        });
        let peer = time_loop(target, |k| {
            for _ in 0..k {
                std::hint::black_box(histogram_peer(&x, &e));
            }
        });
        rows.push(Row {
            name: format!("histogram {hist_bins} bins"),
            n: hist_n,
            bytes: hist_n * 4,
            af,
            peer,
        });
    }

    // scatter_add: many bins, and k-means' shape (few bins of `row` columns).
    let (few, row) = (
        env_num("COUNTING_FEW_BINS", 8),
        env_num("COUNTING_FEW_ROW", 2).max(1),
    );
    for (bins, row) in [(sc_bins, 1), (few, row)] {
        let n_idx = sc_n / row;
        let base = random_vec(bins * row, 11, -1.0, 1.0);
        let idx = random_indices(n_idx, 12, bins as u32);
        let vals = random_vec(n_idx * row, 13, -1.0, 1.0);
        check_scatter_add(
            &scatter_add_peer(&base, &idx, &vals, row),
            &base,
            &idx,
            &vals,
            row,
            "rayon",
        );
        let (dshape, vshape) = if row == 1 {
            (vec![bins], vec![n_idx])
        } else {
            (vec![bins, row], vec![n_idx, row])
        };
        let (b, i, v) = (
            Array::from_vec(base.clone(), &dshape),
            Array::from_vec(idx.clone(), &[n_idx]),
            Array::from_vec(vals.clone(), &vshape),
        );
        for z in [&b, &v] {
            z.eval().unwrap();
        }
        i.eval().unwrap();
        let got = b.scatter_add(&i, &v, 0).to_vec().unwrap();
        check_scatter_add(&got, &base, &idx, &vals, row, "arrayflow");
        let af = time_loop(target, |k| {
            for _ in 0..k {
                b.scatter_add(&i, &v, 0).eval().unwrap();
            }
        });
        let peer = time_loop(target, |k| {
            for _ in 0..k {
                std::hint::black_box(scatter_add_peer(&base, &idx, &vals, row));
            }
        });
        let into = if row == 1 {
            label(bins)
        } else {
            format!("{bins} x {row}")
        };
        rows.push(Row {
            name: format!("scatter_add into {into}"),
            n: n_idx * row,
            bytes: n_idx * (row + 1) * 4 + bins * row * 8,
            af,
            peer,
        });
    }

    let stats = Runtime::stats();
    println!();
    println!("| workload | n | arrayflow | GB/s | rayon peer | GB/s | peer / arrayflow |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.1} | {} | {:.1} | {:.2}x |",
            r.name,
            label(r.n),
            fmt_time(r.af),
            gbs(r.bytes, r.af),
            fmt_time(r.peer),
            gbs(r.bytes, r.peer),
            r.peer.as_secs_f64() / r.af.as_secs_f64()
        );
    }
    println!(
        "\n(GB/s counts the input bytes read once; device fallbacks to the CPU: {})",
        stats.device.fallbacks
    );
    for r in &rows {
        println!(
            "JSON {{\"bench\":\"counting\",\"executor\":\"{}\",\"workload\":\"{}\",\"n\":{},\"af_s\":{},\"peer\":\"rayon\",\"peer_s\":{}}}",
            Runtime::backend(),
            r.name,
            r.n,
            r.af.as_secs_f64(),
            r.peer.as_secs_f64()
        );
    }
}
