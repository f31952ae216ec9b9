//! Element-wise chain benchmark: one 8-op f32 expression over two arrays,
//!
//!     y = |sqrt(a * b + 1) * a - b| * 0.5 + a
//!
//! (ops: mul, add 1, sqrt, mul a, sub b, abs, mul 0.5, add a), measured for arrayflow (recorded,
//! fused, read with `read_into`), ndarray written eagerly, a hand-fused rayon loop and a parallel
//! memcpy moving the same number of bytes. Also measures the host cost of recording one op.
//!
//! Run with `cargo bench --bench chain`. Every cell is the median of many timed repetitions after
//! a warm-up; `CHAIN_SECONDS` (default 1.0) sets the time aimed at per cell.

mod common;
use common::{chain_af, chain_scalar, cpu_model, fmt_time, gbs, random_vec};

use arrayflow::{Array, Runtime, Stats};
use ndarray::Array1;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Elements per rayon work item in the hand-written loops (64 KiB of f32).
const CHUNK: usize = 16 * 1024;

/// ndarray the usual eager way: every op allocates a new array.
fn chain_nd_eager(a: &Array1<f32>, b: &Array1<f32>) -> Array1<f32> {
    let t = a * b;
    let t = &t + 1.0;
    let t = t.sqrt();
    let t = &t * a;
    let t = &t - b;
    let t = t.abs();
    let t = &t * 0.5;
    &t + a
}

/// ndarray eager, but with owned temporaries (`t + 1.0` reuses `t`'s buffer): one allocation.
fn chain_nd_owned(a: &Array1<f32>, b: &Array1<f32>) -> Array1<f32> {
    let t = a * b;
    let t = t + 1.0;
    let t = t.mapv_into(f32::sqrt);
    let t = t * a;
    let t = t - b;
    let t = t.mapv_into(f32::abs);
    let t = t * 0.5;
    t + a
}

/// Hand-written fused loop: one parallel pass over the output, whole chain per element.
fn chain_fused(a: &[f32], b: &[f32], out: &mut [f32]) {
    out.par_chunks_mut(CHUNK)
        .zip(a.par_chunks(CHUNK))
        .zip(b.par_chunks(CHUNK))
        .for_each(|((o, a), b)| {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                *o = chain_scalar(a, b);
            }
        });
}

/// Parallel copy (bandwidth reference).
fn par_copy(src: &[f32], dst: &mut [f32]) {
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Times `f`: a warm-up, then as many repetitions as fit in about `target` (at least `min_reps`,
/// at most `max_reps`); returns the median of the per-repetition times.
fn measure(
    target: Duration,
    min_reps: usize,
    max_reps: usize,
    mut f: impl FnMut(),
) -> (Duration, usize) {
    // Warm-up: at least 3 calls and about 10% of the target time.
    let start = Instant::now();
    let mut warm = 0;
    while warm < 3 || start.elapsed() < target / 10 {
        f();
        warm += 1;
    }
    let per = start.elapsed() / warm as u32;
    let reps =
        ((target.as_secs_f64() / per.as_secs_f64().max(1e-9)) as usize).clamp(min_reps, max_reps);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort_unstable();
    (times[reps / 2], reps)
}

struct Row {
    n: usize,
    af: Duration,
    nd_eager: Duration,
    nd_owned: Duration,
    fused: Duration,
    memcpy: Duration,
    phases: Phases,
    reps: [usize; 5],
    stats: Stats,
    max_err: f32,
    foreign: f64,
}

/// Medians of the three phases of one arrayflow iteration, timed separately.
struct Phases {
    /// Recording the 8-op expression (host only, nothing runs).
    record: Duration,
    /// `Runtime::execute()`: flush (program generation), scheduling, the kernel, and the wait.
    run: Duration,
    /// `read_into` once the result is ready: the round trip to the executor and the copy into the Vec.
    read: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn af_phases(a: &Array<f32>, b: &Array<f32>, out: &mut [f32], reps: usize) -> Phases {
    let (mut record, mut run, mut read) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..reps + 3 {
        let t0 = Instant::now();
        let y = chain_af(black_box(a), black_box(b));
        let t1 = Instant::now();
        Runtime::execute();
        let t2 = Instant::now();
        y.read_into(black_box(&mut *out)).unwrap();
        let t3 = Instant::now();
        drop(y);
        black_box(&*out);
        if i >= 3 {
            record.push(t1 - t0);
            run.push(t2 - t1);
            read.push(t3 - t2);
        }
    }
    Phases {
        record: median(record),
        run: median(run),
        read: median(read),
    }
}

/// CPU ticks of the whole machine (busy, total) and of this process, to tell how much of the
/// machine other processes used while a measurement ran.
#[derive(Clone, Copy)]
struct CpuSample {
    busy: u64,
    total: u64,
    own: u64,
}

fn cpu_sample() -> CpuSample {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = f.iter().take(8).sum();
    let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest: Vec<u64> = me
        .rsplit_once(')')
        .map(|(_, r)| r)
        .unwrap_or("")
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    CpuSample {
        busy: total - idle,
        total,
        own: rest.iter().sum(),
    }
}

/// Percent of the machine's CPU time used by other processes between `a` and `b`.
fn foreign_percent(a: CpuSample, b: CpuSample) -> f64 {
    let busy = (b.busy - a.busy) as f64;
    let own = (b.own - a.own) as f64;
    let total = (b.total - a.total).max(1) as f64;
    (100.0 * (busy - own) / total).max(0.0)
}

fn bench_size(n: usize, target: Duration) -> Row {
    let cpu0 = cpu_sample();
    let av = random_vec(n, 1, 0.5, 1.5);
    let bv = random_vec(n, 2, 0.5, 1.5);
    let (min_reps, max_reps) = if n >= 1 << 24 {
        (7, 200)
    } else {
        (20, 100_000)
    };

    // Reference result from the fused loop.
    let mut reference = vec![0.0f32; n];
    chain_fused(&av, &bv, &mut reference);

    // 1. arrayflow: record the chain, read it into a preallocated Vec (the read flushes).
    let a = Array::from_vec(av.clone(), &[n]);
    let b = Array::from_vec(bv.clone(), &[n]);
    let mut out = vec![0.0f32; n];
    let (af, af_reps) = measure(target, min_reps, max_reps, || {
        let y = chain_af(black_box(&a), black_box(&b));
        y.read_into(black_box(&mut out)).unwrap();
        black_box(&out);
    });
    // Stats for exactly one iteration (after the warm-up above).
    Runtime::execute();
    let before = Runtime::stats();
    let y = chain_af(&a, &b);
    y.read_into(&mut out).unwrap();
    drop(y);
    let stats = Runtime::stats().since(&before);
    let max_err = out
        .iter()
        .zip(&reference)
        .map(|(x, r)| ((x - r) / r).abs())
        .fold(0.0f32, f32::max);
    // The same iteration split into its phases (separate runs; for the analysis).
    let phases = af_phases(&a, &b, &mut out, af_reps.clamp(7, 2000));
    drop((a, b));
    Runtime::execute();

    // 2. ndarray, eager.
    let na = Array1::from_vec(av.clone());
    let nb = Array1::from_vec(bv.clone());
    let (nd_eager, eager_reps) = measure(target, min_reps, max_reps, || {
        black_box(chain_nd_eager(black_box(&na), black_box(&nb)));
    });
    let (nd_owned, owned_reps) = measure(target, min_reps, max_reps, || {
        black_box(chain_nd_owned(black_box(&na), black_box(&nb)));
    });
    let nd_check = chain_nd_eager(&na, &nb);
    assert!(
        nd_check
            .iter()
            .zip(&reference)
            .all(|(x, r)| ((x - r) / r).abs() < 1e-5),
        "ndarray result differs"
    );
    drop((na, nb, nd_check));

    // 3. Hand-fused rayon loop.
    let (fused, fused_reps) = measure(target, min_reps, max_reps, || {
        chain_fused(black_box(&av), black_box(&bv), black_box(&mut out));
        black_box(&out);
    });

    // 4. Parallel memcpy moving 12n bytes: copy 1.5n f32 (6n bytes read + 6n bytes written).
    let m = n * 3 / 2;
    let src = random_vec(m, 3, 0.5, 1.5);
    let mut dst = vec![0.0f32; m];
    let (memcpy, memcpy_reps) = measure(target, min_reps, max_reps, || {
        par_copy(black_box(&src), black_box(&mut dst));
        black_box(&dst);
    });

    Row {
        n,
        af,
        nd_eager,
        nd_owned,
        fused,
        memcpy,
        phases,
        reps: [af_reps, eager_reps, owned_reps, fused_reps, memcpy_reps],
        stats,
        max_err,
        foreign: foreign_percent(cpu0, cpu_sample()),
    }
}

/// Host cost of recording one op: `x = &x + 1.0` (a binary node plus the scalar constant leaf it
/// records) on a 16-element array, in rounds of `per_round` ops inside a block, so no flush happens
/// while the loop is timed. Each round's flush and run (`end_block`, `Runtime::execute`) are timed
/// separately. Returns (median ns/op, mean ns/op, median µs per flush + run of one round).
fn record_cost(total: usize, per_round: usize) -> (f64, f64, f64) {
    let mut per_op = Vec::new();
    let mut flush = Vec::new();
    for _ in 0..total / per_round {
        let mut x = Array::from_vec(vec![1.0f32; 16], &[16]);
        Runtime::begin_block();
        let t = Instant::now();
        for _ in 0..per_round {
            x = &x + 1.0;
        }
        let el = t.elapsed();
        let t = Instant::now();
        Runtime::end_block().unwrap();
        Runtime::execute();
        flush.push(t.elapsed().as_secs_f64() * 1e6);
        black_box(&x);
        per_op.push(el.as_secs_f64() * 1e9 / per_round as f64);
    }
    per_op.sort_by(f64::total_cmp);
    flush.sort_by(f64::total_cmp);
    let mean = per_op.iter().sum::<f64>() / per_op.len() as f64;
    (per_op[per_op.len() / 2], mean, flush[flush.len() / 2])
}

/// Host cost per op without a block: the queue flushes itself every `queue_threshold` ops, so this
/// includes program generation and submission (the kernels run on the executor threads, which
/// share the cores). Timed up to the end of the loop; the final `Runtime::execute` is not timed.
fn record_cost_unblocked(total: usize) -> f64 {
    let mut x = Array::from_vec(vec![1.0f32; 16], &[16]);
    let t = Instant::now();
    for _ in 0..total {
        x = &x + 1.0;
    }
    let el = t.elapsed();
    Runtime::execute();
    black_box(&x);
    el.as_secs_f64() * 1e9 / total as f64
}

/// The git commit measured, with a note when the library's sources differ from it.
fn revision() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => {
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "src",
                "primitives",
                "intrinsics",
                "Cargo.toml",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head} + uncommitted library changes")
            } else {
                head
            }
        }
        None => "unknown".into(),
    }
}

fn label(n: usize) -> String {
    format!("2^{}", n.trailing_zeros())
}

fn main() {
    let target = Duration::from_secs_f64(
        std::env::var("CHAIN_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1.0),
    );
    let cpu0 = cpu_sample();
    println!(
        "arrayflow chain benchmark: y = |sqrt(a*b + 1)*a - b| * 0.5 + a  (8 f32 ops, 2 inputs, 1 output)"
    );
    println!(
        "machine: {} | logical CPUs: {} | rayon threads: {} | arrayflow executor: {}",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        rayon::current_num_threads(),
        Runtime::executor()
    );
    println!(
        "arrayflow config: {:?} | commit: {}",
        Runtime::config(),
        revision()
    );
    println!(
        "bytes per iteration = 12 n (read a, read b, write y); each cell: median of repetitions after warm-up, ~{:.1} s",
        target.as_secs_f64()
    );
    println!();

    let rows: Vec<Row> = [16, 20, 24]
        .iter()
        .map(|&p| bench_size(1 << p, target))
        .collect();

    println!("Time per iteration (median)");
    println!(
        "{:>6} | {:>10} | {:>13} | {:>13} | {:>10} | {:>10} | {:>8} | {:>10} | {:>11}",
        "n",
        "arrayflow",
        "ndarray eager",
        "ndarray owned",
        "fused loop",
        "memcpy",
        "af GB/s",
        "fused GB/s",
        "memcpy GB/s"
    );
    println!("{}", "-".repeat(117));
    for r in &rows {
        let bytes = 12 * r.n;
        println!(
            "{:>6} | {:>10} | {:>13} | {:>13} | {:>10} | {:>10} | {:>8.1} | {:>10.1} | {:>11.1}",
            label(r.n),
            fmt_time(r.af),
            fmt_time(r.nd_eager),
            fmt_time(r.nd_owned),
            fmt_time(r.fused),
            fmt_time(r.memcpy),
            gbs(bytes, r.af),
            gbs(bytes, r.fused),
            gbs(bytes, r.memcpy),
        );
    }
    println!();
    println!(
        "Ratios (issue targets at 2^24: >= 3x faster than eager ndarray, >= 0.8x of the fused loop)"
    );
    println!(
        "{:>6} | {:>21} | {:>21} | {:>16} | {:>23}",
        "n",
        "af speed-up vs eager",
        "af speed-up vs owned",
        "af / fused loop",
        "af / memcpy bandwidth"
    );
    println!("{}", "-".repeat(99));
    for r in &rows {
        let s = |x: Duration| x.as_secs_f64() / r.af.as_secs_f64();
        println!(
            "{:>6} | {:>20.2}x | {:>20.2}x | {:>15.2}x | {:>22.2}x",
            label(r.n),
            s(r.nd_eager),
            s(r.nd_owned),
            s(r.fused),
            s(r.memcpy),
        );
    }
    println!(
        "(all ratios = other variant's time / arrayflow's time; above 1 means arrayflow is faster)"
    );
    println!();

    println!("arrayflow, one iteration: Runtime::stats() delta");
    for r in &rows {
        let s = &r.stats;
        println!(
            "{:>6}: kernels launched {} (generated {}), flushes {} (by read {}), ops recorded {}, ops folded {}, \
             buffers allocated {} / reused {}, bytes downloaded {}, max rel. diff vs fused loop {:.1e}",
            label(r.n),
            s.kernels_launched,
            s.kernels_generated,
            s.flushes.total(),
            s.flushes.read,
            s.ops_recorded,
            s.ops_folded,
            s.buffers_allocated,
            s.buffers_reused,
            s.bytes_downloaded,
            r.max_err,
        );
    }
    println!();
    println!(
        "arrayflow, one iteration split into phases (separate runs: record | Runtime::execute() | read_into after that)"
    );
    println!(
        "{:>6} | {:>10} | {:>30} | {:>22} | {:>10}",
        "n", "record", "flush + schedule + kernel + wait", "read_into (copy out)", "sum"
    );
    println!("{}", "-".repeat(92));
    for r in &rows {
        let p = &r.phases;
        println!(
            "{:>6} | {:>10} | {:>32} | {:>22} | {:>10}",
            label(r.n),
            fmt_time(p.record),
            fmt_time(p.run),
            fmt_time(p.read),
            fmt_time(p.record + p.run + p.read)
        );
    }
    {
        // Fixed cost of one record + flush + run + read, from a tiny array.
        let n = 1 << 10;
        let a = Array::from_vec(random_vec(n, 4, 0.5, 1.5), &[n]);
        let b = Array::from_vec(random_vec(n, 5, 0.5, 1.5), &[n]);
        let mut out = vec![0.0f32; n];
        let (t, _) = measure(target / 2, 20, 100_000, || {
            let y = chain_af(black_box(&a), black_box(&b));
            y.read_into(black_box(&mut out)).unwrap();
            black_box(&out);
        });
        let p = af_phases(&a, &b, &mut out, 2000);
        println!(
            "{:>6} | {:>10} | {:>32} | {:>22} | {:>10}   (fixed cost; plain record + read_into loop: {})",
            label(n),
            fmt_time(p.record),
            fmt_time(p.run),
            fmt_time(p.read),
            fmt_time(p.record + p.run + p.read),
            fmt_time(t)
        );
    }
    println!();

    let (median, mean, flush) = record_cost(100_000, 250);
    let unblocked = record_cost_unblocked(100_000);
    println!("Record cost: `x = &x + 1.0` on a 16-element array, 100k ops (target < 500 ns/op)");
    println!(
        "  recording only, 400 blocks of 250 ops (flush + run untimed): median {median:.0} ns/op, mean {mean:.0} ns/op"
    );
    println!(
        "  (the untimed flush + run of one 250-op block took {flush:.0} µs median, {:.0} ns/op)",
        flush * 1e3 / 250.0
    );
    println!(
        "  no block, 100k ops, the queue flushing itself every {} ops (generation + submit timed, kernels run on the other threads): {unblocked:.0} ns/op",
        Runtime::config().queue_threshold
    );
    println!();
    println!(
        "other processes' CPU use during each size: {} ; whole run: {:.0}% of the machine",
        rows.iter()
            .map(|r| format!("{} {:.0}%", label(r.n), r.foreign))
            .collect::<Vec<_>>()
            .join(", "),
        foreign_percent(cpu0, cpu_sample())
    );
    println!(
        "reps [arrayflow, eager, owned, fused, memcpy]: {}",
        rows.iter()
            .map(|r| format!("{} {:?}", label(r.n), r.reps))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
