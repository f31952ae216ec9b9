//! The workload suite, the project's main benchmark: programs a new user writes from the README
//! (heat equation in two forms, k-means in two forms (a one-hot product; `scatter_add`), Monte-Carlo pricing, Black-Scholes, softmax and layer
//! norm over rows, an MLP forward pass, least squares, a loop of small steps), each against a
//! plain single-threaded loop, the same loop with rayon, and ndarray, in the same run.
//!
//! Every implementation's result is checked against an oracle (the plain loop in f64, or the
//! analytic price) before it is timed. arrayflow's first iteration (program generation, compiles)
//! is reported apart from the steady state (median of repetitions).
//!
//! `cargo bench --bench workloads`; `WORKLOADS_ONLY=kmeans,heat` runs some; `WORKLOADS_SECONDS`
//! (default 1.0) is the time aimed at per cell; `WORKLOADS_SMALL=1` shrinks every size (a quick
//! check); `WORKLOADS_COLD=1` empties the kernel cache directory first (a cold start).
//!
//! On a GPU machine: `WORKLOADS_GPU=1` uses sizes for a GPU and skips the CPU peers (the peers are
//! PyTorch eager and `torch.compile`: `benches/peers/workloads.py`, which reads the JSON lines this
//! binary writes to `WORKLOADS_JSON` and runs the same programs at the same sizes).
//!
//! The profiler's overhead (issue 23): `WORKLOADS_PROFILE=1` times arrayflow alone, with the
//! profiler off and on (`Runtime::profile`) in alternating rounds (`WORKLOADS_PROFILE_ROUNDS`,
//! default 5) in this one process, on the workloads and on the tour's work (`tour` row: its
//! Black-Scholes and Monte-Carlo pi, without its f64 oracle), and prints the ratios. It arms the
//! device timers with the profiler's default sampling (`ARRAYFLOW_PROFILE_SAMPLE=default`, unless
//! set), so both halves run on the same queues. Beside wall time it prints the process's CPU
//! time per call (all threads, the collector's too), which other jobs on a shared machine sway
//! less.

#[path = "workloads/af.rs"]
mod af;
mod common;
#[path = "workloads/params.rs"]
mod params;
#[path = "workloads/peers.rs"]
mod peers;
#[allow(dead_code)]
#[path = "../examples/tour.rs"]
mod tour;

use arrayflow::Runtime;
use common::{cpu_model, fmt_time};
use params::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// One timed implementation of a workload.
struct Cell {
    first: Duration,
    steady: Duration,
    reps: usize,
}

/// Runs `f` once (the first iteration) and then repeatedly for about `target`; returns the first
/// time and the median of the rest.
fn time<R>(target: Duration, mut f: impl FnMut() -> R) -> Cell {
    let t = Instant::now();
    black_box(f());
    let first = t.elapsed();
    let reps = ((target.as_secs_f64() / first.as_secs_f64().max(1e-6)) as usize).clamp(3, 200);
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    Cell {
        first,
        steady: times[reps / 2],
        reps,
    }
}

/// Runs `f` once and says how long it took (arrayflow's first iteration, which the checks run).
fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// Largest error of `got` against `want`, relative to `scale` (or each value's magnitude).
fn max_rel_err<F: Into<f64> + Copy, G: Into<f64> + Copy>(got: &[F], want: &[G], floor: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "result length");
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            let (g, w): (f64, f64) = (g.into(), w.into());
            if g.is_nan() != w.is_nan() {
                f64::INFINITY
            } else {
                (g - w).abs() / w.abs().max(floor)
            }
        })
        .fold(0.0, f64::max)
}

fn check(name: &str, who: &str, err: f64, tol: f64) {
    assert!(
        err <= tol,
        "{name}: {who}'s result is off by {err:.3e} (allowed {tol:.1e})"
    );
}

struct Row {
    name: &'static str,
    size: String,
    af: Cell,
    plain: Cell,
    rayon: Cell,
    nd: Cell,
    /// Kernels and intrinsics arrayflow launched per steady iteration.
    launches: f64,
    matmul: bool,
    /// `WORKLOADS_PROFILE`: the profiler's overhead.
    overhead: Option<Overhead>,
}

/// Arrayflow's time with the profiler off and on, from alternating rounds.
struct Overhead {
    /// Medians over every round's calls.
    off: Duration,
    on: Duration,
    /// Median over the rounds of each round's on/off ratio, and the rounds' smallest and largest.
    ratio: f64,
    lo: f64,
    hi: f64,
    /// The process's CPU time per call (every thread: the collector's too), off and on, medians
    /// over the rounds: less swayed than wall time by other jobs on a shared machine.
    cpu_off: Duration,
    cpu_on: Duration,
    /// Median over the rounds of each round's CPU-time on/off ratio.
    cpu_ratio: f64,
}

/// The CPU time this process has used so far, all threads.
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `time` and the process's CPU time per call over it.
fn time_cpu<R>(target: Duration, f: impl FnMut() -> R) -> (Cell, Duration) {
    let c0 = process_cpu();
    let cell = time(target, f);
    let cpu = (process_cpu() - c0) / (cell.reps + 1) as u32;
    (cell, cpu)
}

/// Times `af` in `rounds` rounds of profiler off, then on (each about `target / rounds`);
/// returns the overhead and the call count of the first round's off half (for launches per
/// call).
fn overhead<A>(
    target: Duration,
    rounds: usize,
    dir: &std::path::Path,
    mut af: impl FnMut() -> A,
) -> Overhead {
    let per = target / rounds as u32;
    let (mut offs, mut ons, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cpu_offs, mut cpu_ons, mut cpu_ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (off, cpu_off) = time_cpu(per, &mut af);
        let guard = Runtime::profile(dir).expect("start the profiler");
        let (on, cpu_on) = time_cpu(per, &mut af);
        guard.finish().expect("profile written");
        let _ = std::fs::remove_dir_all(dir);
        ratios.push(on.steady.as_secs_f64() / off.steady.as_secs_f64());
        offs.push(off.steady);
        ons.push(on.steady);
        cpu_ratios.push(cpu_on.as_secs_f64() / cpu_off.as_secs_f64().max(1e-9));
        cpu_offs.push(cpu_off);
        cpu_ons.push(cpu_on);
    }
    cpu_ratios.sort_by(f64::total_cmp);
    let med = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    ratios.sort_by(f64::total_cmp);
    Overhead {
        off: med(&mut offs),
        on: med(&mut ons),
        ratio: ratios[ratios.len() / 2],
        lo: ratios[0],
        hi: ratios[ratios.len() - 1],
        cpu_off: med(&mut cpu_offs),
        cpu_on: med(&mut cpu_ons),
        cpu_ratio: cpu_ratios[cpu_ratios.len() / 2],
    }
}

struct Suite {
    target: Duration,
    small: bool,
    /// Time the CPU peers (off on a GPU machine, where PyTorch is the peer).
    peers: bool,
    /// JSON lines for the GPU peer script: name, sizes, arrayflow's times.
    json: Vec<String>,
    only: Option<Vec<String>>,
    rows: Vec<Row>,
    /// `WORKLOADS_PROFILE`: rounds of profiler off and on, and where the runs go.
    profile: Option<(usize, std::path::PathBuf)>,
}

impl Suite {
    fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|w| name.contains(w.as_str())))
    }

    /// Times the four implementations (after their checks, done by the caller).
    #[allow(clippy::too_many_arguments)]
    fn run<A, P, R, N>(
        &mut self,
        name: &'static str,
        size: String,
        params: String,
        matmul: bool,
        first: Duration,
        mut af: impl FnMut() -> A,
        plain: impl FnMut() -> P,
        rayon: impl FnMut() -> R,
        nd: impl FnMut() -> N,
    ) {
        let mid = Runtime::stats();
        let _ = Runtime::take_kernel_times();
        let mut af_cell = time(self.target, &mut af);
        af_cell.first = first;
        let steady = Runtime::stats().since(&mid);
        let overhead = self
            .profile
            .as_ref()
            .map(|(rounds, dir)| overhead(self.target, *rounds, dir, &mut af));
        common::print_kernel_times(name);
        // `time` runs one warm-up call before its repetitions.
        let launches = (steady.kernels_launched + steady.intrinsics_launched) as f64
            / (af_cell.reps + 1) as f64;
        let skip = || Cell {
            first: Duration::ZERO,
            steady: Duration::ZERO,
            reps: 0,
        };
        let (plain, rayon, nd) = if self.peers && overhead.is_none() {
            (
                time(self.target, plain),
                time(self.target, rayon),
                time(self.target, nd),
            )
        } else {
            (skip(), skip(), skip())
        };
        self.json.push(format!(
            "{{\"name\": \"{name}\", \"size\": \"{size}\", \"params\": {params}, \"first_s\": {}, \"steady_s\": {}, \"launches\": {launches}}}",
            first.as_secs_f64(),
            af_cell.steady.as_secs_f64()
        ));
        self.rows.push(Row {
            name,
            size,
            af: af_cell,
            plain,
            rayon,
            nd,
            launches,
            matmul,
            overhead,
        });
        let r = self.rows.last().unwrap();
        let calls = (r.af.reps + 1) as f64;
        let d = &steady.device;
        eprintln!(
            "  {name}: arrayflow {} (first {}), plain {}, rayon {}, ndarray {}; per call: {launches:.0} launches, device {:.0} kernels, {:.0} submissions, {:.0} on the CPU (f64 {:.0}, fallbacks {:.0}), {:.1} MiB in, {:.1} MiB out",
            fmt_time(r.af.steady),
            fmt_time(r.af.first),
            fmt_time(r.plain.steady),
            fmt_time(r.rayon.steady),
            fmt_time(r.nd.steady),
            d.kernels as f64 / calls,
            d.submissions as f64 / calls,
            (d.f64_to_cpu + d.fallbacks) as f64 / calls,
            d.f64_to_cpu as f64 / calls,
            d.fallbacks as f64 / calls,
            d.bytes_to_device as f64 / calls / 1048576.0,
            d.bytes_from_device as f64 / calls / 1048576.0,
        );
    }
}

fn main() {
    let env = |k: &str| std::env::var(k).ok();
    if env("WORKLOADS_COLD").is_some_and(|v| v == "1") {
        let dir = env("ARRAYFLOW_CACHE_DIR")
            .map(std::path::PathBuf::from)
            .or_else(|| env("HOME").map(|h| std::path::Path::new(&h).join(".cache/arrayflow")));
        if let Some(d) = dir {
            let _ = std::fs::remove_dir_all(&d);
            eprintln!("cold start: removed {}", d.display());
        }
    }
    if env("WORKLOADS_PROFILE").is_some_and(|v| v == "1")
        && env("ARRAYFLOW_PROFILE_SAMPLE").is_none()
    {
        // SAFETY: before the runtime starts, on the only thread.
        unsafe { std::env::set_var("ARRAYFLOW_PROFILE_SAMPLE", "default") };
    }
    let t = Instant::now();
    // `WORKLOADS_TRACE=<filter>` (e.g. `arrayflow::exec::source=trace`): the runtime's logs on
    // stderr.
    if let Some(filter) = env("WORKLOADS_TRACE") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    Runtime::builder().start().expect("runtime start");
    let startup = t.elapsed();
    let small = env("WORKLOADS_SMALL").is_some_and(|v| v == "1");
    let gpu = env("WORKLOADS_GPU").is_some_and(|v| v == "1");
    let profile = env("WORKLOADS_PROFILE").is_some_and(|v| v == "1").then(|| {
        let rounds = env("WORKLOADS_PROFILE_ROUNDS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(5usize)
            .max(1);
        let dir = std::env::temp_dir().join(format!("af-workloads-profile-{}", std::process::id()));
        (rounds, dir)
    });
    let mut suite = Suite {
        target: Duration::from_secs_f64(
            env("WORKLOADS_SECONDS")
                .and_then(|s| s.parse().ok())
                .unwrap_or(1.0),
        ),
        small,
        peers: !gpu,
        json: Vec::new(),
        only: env("WORKLOADS_ONLY").map(|s| s.split(',').map(str::to_string).collect()),
        rows: Vec::new(),
        profile,
    };
    eprintln!(
        "workloads on {} ({} threads), executor {}",
        cpu_model(),
        rayon::current_num_threads(),
        Runtime::executor()
    );
    // Sizes: on the CPU, for a quick check, and for a GPU.
    let sz = |cpu: usize, little: usize, on_gpu: usize| {
        if small {
            little
        } else if gpu {
            on_gpu
        } else {
            cpu
        }
    };

    // Heat equation, both forms (the same numbers: the same sums in the same order).
    let (n, steps) = (sz(1024, 128, 2048), sz(200, 20, 100));
    let u0 = Data::new(1).vec_f32(n * n, 0.0, 1.0);
    if suite.wants("heat_slices") || suite.wants("heat_select") {
        let u64_: Vec<f64> = u0.iter().map(|&v| v as f64).collect();
        let want = peers::heat_plain(&u64_, n, steps);
        let size = format!("{n}² x {steps} steps");
        check(
            "heat",
            "plain",
            max_rel_err(&peers::heat_plain(&u0, n, steps), &want, 1.0),
            1e-4,
        );
        check(
            "heat",
            "rayon",
            max_rel_err(&peers::heat_rayon(&u0, n, steps), &want, 1.0),
            1e-4,
        );
        check(
            "heat",
            "ndarray",
            max_rel_err(&peers::heat_ndarray(&u0, n, steps), &want, 1.0),
            1e-4,
        );
        for (name, f) in [
            (
                "heat_slices",
                af::heat_slices as fn(&[f32], usize, usize) -> Vec<f32>,
            ),
            ("heat_select", af::heat_select),
        ] {
            if !suite.wants(name) {
                continue;
            }
            let (got, af_first) = timed(|| f(&u0, n, steps));
            check(name, "arrayflow", max_rel_err(&got, &want, 1.0), 1e-4);
            suite.run(
                name,
                size.clone(),
                format!("{{\"n\": {n}, \"steps\": {steps}}}"),
                false,
                af_first,
                || f(&u0, n, steps),
                || peers::heat_plain(&u0, n, steps),
                || peers::heat_rayon(&u0, n, steps),
                || peers::heat_ndarray(&u0, n, steps),
            );
        }
    }

    // k-means.
    if suite.wants("kmeans") {
        let (n, k, iters) = (sz(200_000, 20_000, 2_000_000), 8, 20);
        let (p, init) = kmeans_data(n, k, 2);
        let p64: Vec<f64> = p.iter().map(|&v| v as f64).collect();
        let i64_: Vec<f64> = init.iter().map(|&v| v as f64).collect();
        let want = peers::kmeans_plain(&p64, &i64_, k, iters);
        let (af_got, af_first) = timed(|| af::kmeans(&p, &init, k, iters));
        for (who, got) in [
            ("arrayflow", af_got),
            ("plain", peers::kmeans_plain(&p, &init, k, iters)),
            ("rayon", peers::kmeans_rayon(&p, &init, k, iters)),
            ("ndarray", peers::kmeans_ndarray(&p, &init, k, iters)),
        ] {
            check("kmeans", who, max_rel_err(&got, &want, 1.0), 1e-3);
        }
        suite.run(
            "kmeans",
            format!("{n} x 2, k={k}, {iters} iters"),
            format!("{{\"n\": {n}, \"k\": {k}, \"iters\": {iters}}}"),
            false,
            af_first,
            || af::kmeans(&p, &init, k, iters),
            || peers::kmeans_plain(&p, &init, k, iters),
            || peers::kmeans_rayon(&p, &init, k, iters),
            || peers::kmeans_ndarray(&p, &init, k, iters),
        );
    }

    // k-means with scatter_add and bincount in place of the one-hot product (the same peers).
    if suite.wants("kmeans_scatter") {
        let (n, k, iters) = (sz(200_000, 20_000, 2_000_000), 8, 20);
        let (p, init) = kmeans_data(n, k, 2);
        let p64: Vec<f64> = p.iter().map(|&v| v as f64).collect();
        let i64_: Vec<f64> = init.iter().map(|&v| v as f64).collect();
        let want = peers::kmeans_plain(&p64, &i64_, k, iters);
        let (af_got, af_first) = timed(|| af::kmeans_scatter(&p, &init, k, iters));
        check(
            "kmeans_scatter",
            "arrayflow",
            max_rel_err(&af_got, &want, 1.0),
            1e-3,
        );
        suite.run(
            "kmeans_scatter",
            format!("{n} x 2, k={k}, {iters} iters"),
            format!("{{\"n\": {n}, \"k\": {k}, \"iters\": {iters}}}"),
            false,
            af_first,
            || af::kmeans_scatter(&p, &init, k, iters),
            || peers::kmeans_plain(&p, &init, k, iters),
            || peers::kmeans_rayon(&p, &init, k, iters),
            || peers::kmeans_ndarray(&p, &init, k, iters),
        );
    }

    // Monte-Carlo: every estimate within 4 standard errors of the analytic price.
    if suite.wants("monte_carlo") {
        let n = sz(10_000_000, 1_000_000, 1 << 24);
        let exact = mc_exact();
        let (af_got, af_first) = timed(|| af::monte_carlo(n, 7));
        for (who, (price, se)) in [
            ("arrayflow", af_got),
            ("plain", peers::mc_plain(n, 7)),
            ("rayon", peers::mc_rayon(n, 7)),
            ("ndarray", peers::mc_ndarray(n, 7)),
        ] {
            let z = (price as f64 - exact).abs() / se as f64;
            assert!(
                z < 4.0 && se > 0.0,
                "monte_carlo: {who} priced {price} ± {se}, exact {exact:.4}"
            );
        }
        suite.run(
            "monte_carlo",
            format!("{n} paths"),
            format!("{{\"n\": {n}}}"),
            false,
            af_first,
            || af::monte_carlo(n, 7),
            || peers::mc_plain(n, 7),
            || peers::mc_rayon(n, 7),
            || peers::mc_ndarray(n, 7),
        );
    }

    // Black-Scholes.
    if suite.wants("black_scholes") {
        let n = sz(1 << 22, 1 << 18, 1 << 24);
        let mut d = Data::new(3);
        let (s, x, t) = (
            d.vec_f32(n, 5.0, 30.0),
            d.vec_f32(n, 1.0, 100.0),
            d.vec_f32(n, 0.25, 10.0),
        );
        let w = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let (wc, wp) = peers::bs_plain(&w(&s), &w(&x), &w(&t));
        let (af_got, af_first) = timed(|| af::black_scholes(&s, &x, &t));
        for (who, (c, p)) in [
            ("arrayflow", af_got),
            ("plain", peers::bs_plain(&s, &x, &t)),
            ("rayon", peers::bs_rayon(&s, &x, &t)),
            ("ndarray", peers::bs_ndarray(&s, &x, &t)),
        ] {
            check("black_scholes", who, max_rel_err(&c, &wc, 1.0), 1e-4);
            check("black_scholes", who, max_rel_err(&p, &wp, 1.0), 1e-4);
        }
        suite.run(
            "black_scholes",
            format!("{n} options"),
            format!("{{\"n\": {n}}}"),
            false,
            af_first,
            || af::black_scholes(&s, &x, &t),
            || peers::bs_plain(&s, &x, &t),
            || peers::bs_rayon(&s, &x, &t),
            || peers::bs_ndarray(&s, &x, &t),
        );
    }

    // Softmax and layer norm over rows.
    let (rows, cols) = (sz(4096, 256, 8192), sz(1024, 1024, 4096));
    let x = Data::new(4).vec_f32(rows * cols, -4.0, 4.0);
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    if suite.wants("softmax") {
        let want = peers::softmax_plain(&x64, rows, cols);
        let (af_got, af_first) = timed(|| af::softmax(&x, rows, cols));
        for (who, got) in [
            ("arrayflow", af_got),
            ("plain", peers::softmax_plain(&x, rows, cols)),
            ("rayon", peers::softmax_rayon(&x, rows, cols)),
            ("ndarray", peers::softmax_ndarray(&x, rows, cols)),
        ] {
            check("softmax", who, max_rel_err(&got, &want, 1e-30), 1e-4);
        }
        suite.run(
            "softmax",
            format!("{rows} x {cols} rows"),
            format!("{{\"rows\": {rows}, \"cols\": {cols}}}"),
            false,
            af_first,
            || af::softmax(&x, rows, cols),
            || peers::softmax_plain(&x, rows, cols),
            || peers::softmax_rayon(&x, rows, cols),
            || peers::softmax_ndarray(&x, rows, cols),
        );
    }
    if suite.wants("layer_norm") {
        let mut d = Data::new(5);
        let (g, b) = (d.vec_f32(cols, 0.5, 1.5), d.vec_f32(cols, -0.5, 0.5));
        let w = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let want = peers::layer_norm_plain(&x64, &w(&g), &w(&b), rows, cols);
        let (af_got, af_first) = timed(|| af::layer_norm(&x, &g, &b, rows, cols));
        for (who, got) in [
            ("arrayflow", af_got),
            ("plain", peers::layer_norm_plain(&x, &g, &b, rows, cols)),
            ("rayon", peers::layer_norm_rayon(&x, &g, &b, rows, cols)),
            ("ndarray", peers::layer_norm_ndarray(&x, &g, &b, rows, cols)),
        ] {
            check("layer_norm", who, max_rel_err(&got, &want, 1.0), 1e-4);
        }
        suite.run(
            "layer_norm",
            format!("{rows} x {cols} rows"),
            format!("{{\"rows\": {rows}, \"cols\": {cols}}}"),
            false,
            af_first,
            || af::layer_norm(&x, &g, &b, rows, cols),
            || peers::layer_norm_plain(&x, &g, &b, rows, cols),
            || peers::layer_norm_rayon(&x, &g, &b, rows, cols),
            || peers::layer_norm_ndarray(&x, &g, &b, rows, cols),
        );
    }

    // MLP forward.
    if suite.wants("mlp") {
        let dims = if gpu {
            (8192, 1024, 2048, 10)
        } else {
            MLP_DIMS
        };
        let (n, dd, h, o) = dims;
        let mut d = Data::new(6);
        let xs = d.vec_f32(n * dd, -1.0, 1.0);
        let w1 = d.vec_f32(dd * h, -0.1, 0.1);
        let b1 = d.vec_f32(h, -0.1, 0.1);
        let w2 = d.vec_f32(h * o, -0.1, 0.1);
        let b2 = d.vec_f32(o, -0.1, 0.1);
        let w = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let want = peers::mlp_ndarray(&w(&xs), &w(&w1), &w(&b1), &w(&w2), &w(&b2), dims);
        let (af_got, af_first) = timed(|| af::mlp(&xs, &w1, &b1, &w2, &b2, dims));
        for (who, got) in [
            ("arrayflow", af_got),
            ("plain", peers::mlp_plain(&xs, &w1, &b1, &w2, &b2, dims)),
            ("rayon", peers::mlp_rayon(&xs, &w1, &b1, &w2, &b2, dims)),
            ("ndarray", peers::mlp_ndarray(&xs, &w1, &b1, &w2, &b2, dims)),
        ] {
            check("mlp", who, max_rel_err(&got, &want, 1.0), 1e-4);
        }
        suite.run(
            "mlp",
            format!("{n}x{dd} -> {h} -> {o}"),
            format!("{{\"n\": {n}, \"d\": {dd}, \"h\": {h}, \"o\": {o}}}"),
            true,
            af_first,
            || af::mlp(&xs, &w1, &b1, &w2, &b2, dims),
            || peers::mlp_plain(&xs, &w1, &b1, &w2, &b2, dims),
            || peers::mlp_rayon(&xs, &w1, &b1, &w2, &b2, dims),
            || peers::mlp_ndarray(&xs, &w1, &b1, &w2, &b2, dims),
        );
    }

    // Least squares (f64): the coefficients a noisy linear model was built from.
    if suite.wants("least_squares") {
        let (rows, cols) = (sz(200_000, 20_000, 2_000_000), 16);
        let mut d = Data::new(8);
        let a = d.vec_f64(rows * cols, -1.0, 1.0);
        let coef: Vec<f64> = (0..cols).map(|i| i as f64 - 7.5).collect();
        let b: Vec<f64> = a
            .chunks_exact(cols)
            .map(|r| r.iter().zip(&coef).map(|(x, c)| x * c).sum::<f64>() + d.f64(-1e-3, 1e-3))
            .collect();
        let want = peers::lstsq_plain(&a, &b, rows, cols);
        check(
            "least_squares",
            "oracle",
            max_rel_err(&want, &coef, 1.0),
            1e-4,
        );
        let (af_got, af_first) = timed(|| af::least_squares(&a, &b, rows, cols));
        for (who, got) in [
            ("arrayflow", af_got),
            ("rayon", peers::lstsq_rayon(&a, &b, rows, cols)),
            ("ndarray", peers::lstsq_ndarray(&a, &b, rows, cols)),
        ] {
            check("least_squares", who, max_rel_err(&got, &want, 1.0), 1e-9);
        }
        suite.run(
            "least_squares",
            format!("{rows} x {cols} f64"),
            format!("{{\"rows\": {rows}, \"cols\": {cols}}}"),
            true,
            af_first,
            || af::least_squares(&a, &b, rows, cols),
            || peers::lstsq_plain(&a, &b, rows, cols),
            || peers::lstsq_rayon(&a, &b, rows, cols),
            || peers::lstsq_ndarray(&a, &b, rows, cols),
        );
    }

    // A loop of small steps with a read every step.
    if suite.wants("particles") {
        let (n, steps) = (10_000, sz(200, 50, 200));
        let mut d = Data::new(9);
        let (x0, v0) = (d.vec_f32(n, -1.0, 1.0), d.vec_f32(n, -1.0, 1.0));
        let w = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let want = peers::particles_plain(&w(&x0), &w(&v0), steps);
        let (af_got, af_first) = timed(|| af::particles(&x0, &v0, steps));
        for (who, got) in [
            ("arrayflow", af_got),
            ("plain", peers::particles_plain(&x0, &v0, steps)),
            ("rayon", peers::particles_rayon(&x0, &v0, steps)),
            ("ndarray", peers::particles_ndarray(&x0, &v0, steps)),
        ] {
            check("particles", who, max_rel_err(&got, &want, 1.0), 1e-4);
        }
        suite.run(
            "particles",
            format!("{n} x {steps} steps"),
            format!("{{\"n\": {n}, \"steps\": {steps}}}"),
            false,
            af_first,
            || af::particles(&x0, &v0, steps),
            || peers::particles_plain(&x0, &v0, steps),
            || peers::particles_rayon(&x0, &v0, steps),
            || peers::particles_ndarray(&x0, &v0, steps),
        );
    }

    // The tour's work (`examples/tour.rs`), under the profiler's overhead mode only.
    if suite.profile.is_some() && suite.wants("tour") {
        let (ok, first) = timed(tour_work);
        assert!(ok, "the tour's checks failed");
        suite.run(
            "tour",
            "Black-Scholes 1M, pi 16M".into(),
            "{}".into(),
            false,
            first,
            tour_work,
            || (),
            || (),
            || (),
        );
    }

    if let Some(path) = env("WORKLOADS_JSON") {
        std::fs::write(&path, suite.json.join("\n") + "\n").expect("write WORKLOADS_JSON");
    }
    print_table(&suite, startup);
}

/// The tour's arrayflow work (`examples/tour.rs`): Black-Scholes on 1M options with its reads,
/// and the Monte-Carlo pi count in one go and in batches in a block (the tour's f64 oracle and
/// printing left out); `true` when its checks hold.
fn tour_work() -> bool {
    use arrayflow::{Array, Rng};
    let mut rng = Rng::new(2024);
    let n = [tour::OPTIONS];
    let spot = rng.uniform::<f32>(&n) * 90.0 + 10.0;
    let strike = &spot * (rng.uniform::<f32>(&n) * 0.6 + 0.7);
    let time = rng.uniform::<f32>(&n) * 2.95 + 0.05;
    let rate = rng.uniform::<f32>(&n) * 0.08;
    let vol = rng.uniform::<f32>(&n) * 0.6 + 0.05;
    let (call, put) = tour::black_scholes(&spot, &strike, &time, &rate, &vol);
    let (call_sum, put_sum) = (call.sum(), put.sum());
    let call_v = call.to_vec().expect("read");
    let put_v = put.to_vec().expect("read");
    let sums = (
        call_sum.item().expect("read"),
        put_sum.item().expect("read"),
    );
    let bs_ok = sums.0 > 0.0 && sums.1 > 0.0 && call_v.len() == put_v.len();

    let points = tour::PI_POINTS;
    let mut rng = Rng::new(7);
    let x = rng.uniform::<f32>(&[points]);
    let y = rng.uniform::<f32>(&[points]);
    let count = (&x * &x + &y * &y)
        .lt(1.0)
        .cast::<u32>()
        .sum()
        .item()
        .expect("read");
    let b = points / tour::PI_BATCHES;
    let mut rng = Rng::new(7);
    let batched = Runtime::block(|| {
        let mut total = Array::<u32>::scalar(0);
        for i in 0..tour::PI_BATCHES {
            rng.seek((i * b) as u64);
            let x = rng.uniform::<f32>(&[b]);
            rng.seek((points + i * b) as u64);
            let y = rng.uniform::<f32>(&[b]);
            total += (&x * &x + &y * &y).lt(1.0).cast::<u32>().sum();
        }
        total
    })
    .item()
    .expect("read");
    let pi = 4.0 * count as f64 / points as f64;
    bs_ok && batched == count && (pi - std::f64::consts::PI).abs() < 0.01
}

fn print_table(suite: &Suite, startup: Duration) {
    println!(
        "\nWorkload suite on {} ({} threads), executor {}; runtime start-up {}{}",
        cpu_model(),
        rayon::current_num_threads(),
        Runtime::executor(),
        fmt_time(startup),
        if suite.small { " (small sizes)" } else { "" }
    );
    if suite.profile.is_some() {
        let rounds = suite.profile.as_ref().map_or(0, |p| p.0);
        println!(
            "\nProfiler overhead ({rounds} alternating rounds of off and on; medians; {}):",
            arrayflow::profile::Sampling::current().describe()
        );
        println!(
            "\n| workload | size | launches/iter | off | on | on/off (median of rounds) | rounds' range | CPU time off | CPU time on | CPU on/off |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for r in &suite.rows {
            let Some(o) = &r.overhead else { continue };
            println!(
                "| {} | {} | {:.0} | {} | {} | {:+.1}% | {:+.1}% .. {:+.1}% | {} | {} | {:+.1}% |",
                r.name,
                r.size,
                r.launches,
                fmt_time(o.off),
                fmt_time(o.on),
                100.0 * (o.ratio - 1.0),
                100.0 * (o.lo - 1.0),
                100.0 * (o.hi - 1.0),
                fmt_time(o.cpu_off),
                fmt_time(o.cpu_on),
                100.0 * (o.cpu_ratio - 1.0)
            );
        }
        return;
    }
    if !suite.peers {
        println!("\n| workload | size | arrayflow first | arrayflow | launches/iter |");
        println!("| --- | --- | --- | --- | --- |");
        for r in &suite.rows {
            println!(
                "| {} | {} | {} | {} | {:.0} |",
                r.name,
                r.size,
                fmt_time(r.af.first),
                fmt_time(r.af.steady),
                r.launches
            );
        }
        return;
    }
    println!(
        "\n| workload | size | arrayflow first | arrayflow | plain | rayon | ndarray | vs plain | vs rayon | vs ndarray | launches/iter | target |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &suite.rows {
        let ratio = |peer: &Cell| peer.steady.as_secs_f64() / r.af.steady.as_secs_f64();
        let (vp, vn) = (ratio(&r.plain), ratio(&r.nd));
        let met = if r.matmul {
            vn >= 1.0
        } else {
            vp >= 1.0 && vn >= 1.5
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2}x | {:.2}x | {:.2}x | {:.0} | {} |",
            r.name,
            r.size,
            fmt_time(r.af.first),
            fmt_time(r.af.steady),
            fmt_time(r.plain.steady),
            fmt_time(r.rayon.steady),
            fmt_time(r.nd.steady),
            vp,
            ratio(&r.rayon),
            vn,
            r.launches,
            if met { "met" } else { "missed" }
        );
    }
    println!(
        "\nRatios are peer time / arrayflow time (above 1: arrayflow faster), steady state (median). \
         Targets: not matmul-bound, >= 1.0x plain and >= 1.5x ndarray; matmul-bound (mlp, least \
         squares), >= 1.0x ndarray."
    );
}
