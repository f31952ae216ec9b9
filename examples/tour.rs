//! The arrayflow tour: the project's main job. Run it with
//!
//! ```text
//! cargo run --release --example tour
//! RUST_LOG=arrayflow=debug cargo run --release --example tour   # one log line per flush
//! ```
//!
//! 1. Prices 1,000,000 European call and put options with Black-Scholes on `Array<f32>` (the normal
//!    CDF is the polynomial approximation of the CUDA/OpenCL Black-Scholes samples, written in array
//!    ops) and checks every price against a plain-Rust f64 Black-Scholes on the same inputs.
//! 2. Estimates pi by Monte-Carlo on 16 million random points, once in one go and once in batches
//!    inside a `Runtime::block` that replays the same random stream; both counts must agree exactly.
//! 3. Reports the executor, wall times and `Runtime::stats()`.
//!
//! Exits with status 1 if a check fails or arrayflow returns an error.

use arrayflow::{Array, Rng, Runtime, Stats};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;
use tracing_subscriber::EnvFilter;

/// Options priced.
pub const OPTIONS: usize = 1_000_000;
/// Points for the Monte-Carlo estimate of pi.
pub const PI_POINTS: usize = 16 * 1024 * 1024;
/// Batches of the second pi run (must divide `PI_POINTS`).
pub const PI_BATCHES: usize = 8;

/// Largest Black-Scholes error accepted, relative to the price scale (the largest spot or strike).
/// Single precision plus the CND polynomial (absolute error about 7.5e-8) give about 1e-6.
const BS_TOLERANCE: f64 = 1e-4;
/// Largest error of the pi estimate accepted (its standard error at 16M points is about 4e-4).
const PI_TOLERANCE: f64 = 0.01;

fn main() -> ExitCode {
    // Logs go to stderr; `RUST_LOG=arrayflow=debug` shows every flush (target `arrayflow::jit`).
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    match run() {
        Ok(true) => {
            println!("\nall checks passed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("\nSOME CHECKS FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            // arrayflow's errors start with the call site (file:line) that made the failing request.
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> arrayflow::Result<bool> {
    let start = Instant::now();
    println!("arrayflow tour");
    println!("executor: {}", Runtime::executor());
    let config = Runtime::config();
    println!(
        "config:   queue threshold {}, tile {} elements, max outstanding {}",
        config.queue_threshold, config.tile, config.max_outstanding
    );

    let bs_ok = black_scholes_section()?;
    let pi_ok = pi_section()?;

    let total = Runtime::stats();
    println!("\n== runtime totals ({:.2?} wall) ==", start.elapsed());
    print_stats(&total);
    let clean = total.failed_programs == 0;
    check("no failed programs", clean);
    Ok(bs_ok && pi_ok && clean)
}

// ---------------------------------------------------------------------------------------------
// Black-Scholes
// ---------------------------------------------------------------------------------------------

/// Cumulative normal distribution, the polynomial of the CUDA/OpenCL Black-Scholes samples
/// (Abramowitz-Stegun 26.2.17, absolute error below 7.5e-8), written in array ops: the whole
/// function fuses into the kernel that uses it.
fn cnd(d: &Array<f32>) -> Array<f32> {
    const A1: f32 = 0.319_381_53;
    const A2: f32 = -0.356_563_78;
    const A3: f32 = 1.781_477_9;
    const A4: f32 = -1.821_256;
    const A5: f32 = 1.330_274_4;
    const RSQRT2PI: f32 = 0.398_942_3; // 1 / sqrt(2 pi)

    let k = 1.0 / (d.abs() * 0.231_641_9 + 1.0);
    let poly = &k * ((((&k * A5 + A4) * &k + A3) * &k + A2) * &k + A1);
    let tail = (d * d * -0.5).exp() * RSQRT2PI * poly; // N(-|d|)
    d.gt(0.0).select(1.0 - &tail, &tail)
}

/// Prices with arrayflow: returns (call, put). Nothing runs here; the ops are only recorded.
pub fn black_scholes(
    s: &Array<f32>,
    k: &Array<f32>,
    t: &Array<f32>,
    r: &Array<f32>,
    v: &Array<f32>,
) -> (Array<f32>, Array<f32>) {
    let sig_sqrt_t = v * t.sqrt();
    let d1 = ((s / k).ln() + (r + v * v * 0.5) * t) / &sig_sqrt_t;
    let d2 = &d1 - &sig_sqrt_t;
    let k_disc = k * (-(r * t)).exp();
    let (nd1, nd2) = (cnd(&d1), cnd(&d2));
    let call = s * &nd1 - &k_disc * &nd2;
    let put = &k_disc * (1.0 - &nd2) - s * (1.0 - &nd1);
    (call, put)
}

/// Standard normal CDF in f64 by Marsaglia's series (2004): Phi(x) = 1/2 + phi(x) (x + x^3/3 +
/// x^5/15 + ...). All terms have one sign, so it is accurate to about 1e-15 absolute.
fn phi_f64(x: f64) -> f64 {
    if x < -10.0 {
        return 0.0;
    }
    if x > 10.0 {
        return 1.0;
    }
    let q = x * x;
    let (mut sum, mut term, mut i) = (x, x, 1.0);
    loop {
        i += 2.0;
        term *= q / i;
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
    }
    0.5 + sum * (-0.5 * q - 0.918_938_533_204_672_7).exp() // ln(sqrt(2 pi)) = 0.9189...
}

/// The oracle: Black-Scholes for one option in f64.
fn black_scholes_f64(s: f64, k: f64, t: f64, r: f64, v: f64) -> (f64, f64) {
    let sig_sqrt_t = v * t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / sig_sqrt_t;
    let d2 = d1 - sig_sqrt_t;
    let k_disc = k * (-r * t).exp();
    let call = s * phi_f64(d1) - k_disc * phi_f64(d2);
    let put = k_disc * phi_f64(-d2) - s * phi_f64(-d1);
    (call, put)
}

fn black_scholes_section() -> arrayflow::Result<bool> {
    println!("\n== Black-Scholes: {OPTIONS} European calls and puts (f32) ==");
    let before = Runtime::stats();
    let t0 = Instant::now();

    // Inputs: uniform draws scaled to realistic ranges. Random arrays are lazy generators; the
    // scaled inputs are stored because we keep their handles (and read them back below).
    let mut rng = Rng::new(2024);
    let n = [OPTIONS];
    let spot = rng.uniform::<f32>(&n) * 90.0 + 10.0; // 10 .. 100
    let strike = &spot * (rng.uniform::<f32>(&n) * 0.6 + 0.7); // moneyness 0.7 .. 1.3
    let time = rng.uniform::<f32>(&n) * 2.95 + 0.05; // 0.05 .. 3 years
    let rate = rng.uniform::<f32>(&n) * 0.08; // 0 .. 8 %
    let vol = rng.uniform::<f32>(&n) * 0.6 + 0.05; // 5 .. 65 %

    let (call, put) = black_scholes(&spot, &strike, &time, &rate, &vol);
    let call_sum = call.sum();
    let put_sum = put.sum();
    let call_mean = call.mean();
    let recorded = t0.elapsed();

    // The first read flushes the queue: everything above runs as a few fused kernels.
    let call_v = call.to_vec()?;
    let put_v = put.to_vec()?;
    let (call_sum, put_sum, call_mean) = (call_sum.item()?, put_sum.item()?, call_mean.item()?);
    let af_time = t0.elapsed();
    let stats = Runtime::stats().since(&before);

    for i in 0..4 {
        println!(
            "  option {i}: call {:>9.4}  put {:>9.4}",
            call_v[i], put_v[i]
        );
    }
    println!(
        "  call: sum {call_sum:.1}, mean {call_mean:.4};  put: sum {put_sum:.1}, mean {:.4}",
        put_sum / OPTIONS as f32
    );
    println!(
        "  arrayflow: {:.2?} (recording {:.2?}), {} ops recorded, {} kernels",
        af_time, recorded, stats.ops_recorded, stats.kernels_launched
    );

    // The oracle: the same inputs, read back, priced in plain Rust f64 (one thread).
    let (s, k, t, r, v) = (
        spot.to_vec()?,
        strike.to_vec()?,
        time.to_vec()?,
        rate.to_vec()?,
        vol.to_vec()?,
    );
    let t1 = Instant::now();
    let mut max_err = 0.0f64;
    let mut worst = 0;
    let mut scale = 0.0f64;
    let (mut ref_call_sum, mut ref_put_sum) = (0.0f64, 0.0f64);
    for i in 0..OPTIONS {
        let (c, p) = black_scholes_f64(
            s[i] as f64,
            k[i] as f64,
            t[i] as f64,
            r[i] as f64,
            v[i] as f64,
        );
        ref_call_sum += c;
        ref_put_sum += p;
        scale = scale.max(s[i] as f64).max(k[i] as f64);
        let err = (call_v[i] as f64 - c)
            .abs()
            .max((put_v[i] as f64 - p).abs());
        if err > max_err || err.is_nan() {
            max_err = if err.is_nan() { f64::INFINITY } else { err };
            worst = i;
        }
    }
    let oracle_time = t1.elapsed();
    println!(
        "  oracle (plain Rust f64 loop, 1 thread): {oracle_time:.2?} (a check, not a benchmark: see BENCHMARKS.md)"
    );
    println!(
        "  oracle sums: call {ref_call_sum:.1}, put {ref_put_sum:.1};  max |error| {max_err:.3e} (option {worst}), {:.2e} of price scale {scale:.1}",
        max_err / scale
    );

    let sums_ok =
        rel(call_sum as f64, ref_call_sum) < 1e-5 && rel(put_sum as f64, ref_put_sum) < 1e-5;
    let prices_ok = max_err / scale <= BS_TOLERANCE;
    check("Black-Scholes prices match the f64 oracle", prices_ok);
    check("Black-Scholes sums match the f64 oracle", sums_ok);
    Ok(prices_ok && sums_ok)
}

// ---------------------------------------------------------------------------------------------
// Monte-Carlo pi
// ---------------------------------------------------------------------------------------------

fn pi_section() -> arrayflow::Result<bool> {
    println!("\n== Monte-Carlo pi: {PI_POINTS} points ==");
    let before = Runtime::stats();
    let t0 = Instant::now();

    // One go: x and y are lazy random generators, so the test x^2 + y^2 < 1 and the count fuse
    // into one kernel with a reduction; no array of 16M points is ever allocated.
    // The intermediates are never stored: released or merely held, element-wise results stay in
    // registers unless something reads them.
    let mut rng = Rng::new(7);
    let count = {
        let x = rng.uniform::<f32>(&[PI_POINTS]);
        let y = rng.uniform::<f32>(&[PI_POINTS]);
        let inside = (&x * &x + &y * &y).lt(1.0);
        inside.cast::<u32>().sum()
    };
    let count = count.item()?;
    let one_go = t0.elapsed();
    let stats = Runtime::stats().since(&before);

    let estimate = 4.0 * count as f64 / PI_POINTS as f64;
    let err = (estimate - std::f64::consts::PI).abs();
    println!(
        "  pi ~ {estimate:.6}  (error {err:.2e}; standard error {:.1e})",
        4.0 * (0.25 * std::f64::consts::PI * (1.0 - 0.25 * std::f64::consts::PI)
            / PI_POINTS as f64)
            .sqrt()
    );
    println!(
        "  arrayflow: {one_go:.2?}, {} kernels, {} bytes allocated, {} flushes",
        stats.kernels_launched,
        stats.bytes_allocated,
        stats.flushes.total()
    );

    // In batches inside a block (compiled together, flushed once at its end). Seeking replays the
    // same counters: batch i takes x from [i*b, (i+1)*b) and y from PI_POINTS + the same, so the
    // total must equal the one-go count exactly.
    let t1 = Instant::now();
    let b = PI_POINTS / PI_BATCHES;
    let mut rng = Rng::new(7);
    let total = Runtime::block(|| {
        let mut total = Array::<u32>::scalar(0);
        for i in 0..PI_BATCHES {
            rng.seek((i * b) as u64);
            let x = rng.uniform::<f32>(&[b]);
            rng.seek((PI_POINTS + i * b) as u64);
            let y = rng.uniform::<f32>(&[b]);
            total += (&x * &x + &y * &y).lt(1.0).cast::<u32>().sum();
        }
        total
    });
    let batched = total.item()?;
    println!(
        "  {PI_BATCHES} batches in a block: count {batched} (one go: {count}), {:.2?}",
        t1.elapsed()
    );

    let pi_ok = err <= PI_TOLERANCE;
    check("pi estimate within 0.01", pi_ok);
    check("batched count equals the one-go count", batched == count);
    Ok(pi_ok && batched == count)
}

// ---------------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------------

fn print_stats(s: &Stats) {
    let f = &s.flushes;
    println!(
        "  ops recorded {} (folded {}, eliminated as dead {})",
        s.ops_recorded, s.ops_folded, s.ops_eliminated
    );
    println!(
        "  kernels generated {}, launched {} (+ {} final reduction stages); intrinsics generated {}, launched {}",
        s.kernels_generated,
        s.kernels_launched,
        s.final_stages_launched,
        s.intrinsics_generated,
        s.intrinsics_launched
    );
    println!(
        "  flushes {} (read {}, threshold {}, non-fusible {}, hint {}, execute {}, block end {})",
        f.total(),
        f.read,
        f.threshold,
        f.non_fusible,
        f.hint,
        f.execute,
        f.block_end
    );
    println!(
        "  buffers allocated {} ({:.1} MiB), reused {}, temporaries {}",
        s.buffers_allocated,
        s.bytes_allocated as f64 / (1 << 20) as f64,
        s.buffers_reused,
        s.temporaries
    );
    println!(
        "  uploaded {:.1} MiB, downloaded {:.1} MiB, failed programs {}",
        s.bytes_uploaded as f64 / (1 << 20) as f64,
        s.bytes_downloaded as f64 / (1 << 20) as f64,
        s.failed_programs
    );
}

fn check(what: &str, ok: bool) {
    println!("  [{}] {what}", if ok { "ok" } else { "FAIL" });
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}
