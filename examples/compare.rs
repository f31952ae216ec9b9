//! Comparison mode on a real workload: Black-Scholes pricing (now with `erf` for the normal CDF)
//! and a reduction-heavy statistics routine run on the best executor while every op's result is
//! checked against the sequential reference interpreter. Prints the largest relative error per op
//! and any mismatches. `cargo run --release --example compare`.

use arrayflow::{Array, CompareConfig, CompareMode, MismatchAction, Rng, Runtime};

fn normal_cdf(x: &Array<f32>) -> Array<f32> {
    (x * std::f32::consts::FRAC_1_SQRT_2).erf() * 0.5 + 0.5
}

fn black_scholes(
    s: &Array<f32>,
    k: &Array<f32>,
    t: &Array<f32>,
    r: f32,
    v: &Array<f32>,
) -> (Array<f32>, Array<f32>) {
    let sig_sqrt_t = v * t.sqrt();
    let d1 = ((s / k).ln() + (v * v * 0.5 + r) * t) / &sig_sqrt_t;
    let d2 = &d1 - &sig_sqrt_t;
    let k_disc = k * (t * -r).exp();
    let call = s * normal_cdf(&d1) - &k_disc * normal_cdf(&d2);
    let put = &k_disc * normal_cdf(&-&d2) - s * normal_cdf(&-&d1);
    (call, put)
}

/// Per-column statistics of a table: mean, standard deviation, min, max, argmax, a normalised copy
/// and its column norms.
fn statistics(table: &Array<f64>) -> Vec<Array<f64>> {
    let mean = table.mean_axis(0);
    let std = table.stddev_axis(0);
    let z = (table - &mean) / &std;
    vec![
        mean,
        std,
        table.min_axis(0),
        table.max_axis(0),
        table.argmax_axis(0).cast::<f64>(),
        z.norm_l2_axis(0),
        z.abs().sum(),
    ]
}

fn main() -> arrayflow::Result<()> {
    println!("arrayflow comparison mode on {}", Runtime::executor());
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::AfterComputation).action(MismatchAction::Log),
    ));

    let n = 200_000;
    let mut rng = Rng::new(2026);
    let s = rng.uniform::<f32>(&[n]) * 90.0 + 10.0;
    let k = &s * (rng.uniform::<f32>(&[n]) * 0.6 + 0.7);
    let t = rng.uniform::<f32>(&[n]) * 2.95 + 0.05;
    let v = rng.uniform::<f32>(&[n]) * 0.6 + 0.05;
    let (call, put) = black_scholes(&s, &k, &t, 0.03, &v);
    println!(
        "Black-Scholes, {n} options: mean call {:.4}, mean put {:.4}",
        call.mean().item()?,
        put.mean().item()?
    );

    let table = rng.normal::<f64>(&[20_000, 16]) * 3.0 + Array::<f64>::iota(&[20_000, 16], 1);
    let stats = statistics(&table);
    println!(
        "statistics of a 20000 x 16 table: column means {:?}",
        &stats[0].to_vec()?[..4]
    );

    let summary = Runtime::comparison_summary();
    let mismatches = Runtime::mismatches();
    println!(
        "\n{:>10} | {:<28} | {:>9} | {:>12} | mismatches",
        "op", "call site", "elements", "max rel err"
    );
    println!("{:-<80}", "");
    let mut rows = summary.clone();
    rows.sort_by(|a, b| b.max_relative_error.total_cmp(&a.max_relative_error));
    for r in &rows {
        println!(
            "{:>10} | {:<28} | {:>9} | {:>12.3e} | {}",
            r.op,
            r.site.to_string(),
            r.checked,
            r.max_relative_error,
            r.mismatches
        );
    }
    println!(
        "\n{} ops checked, {} mismatches",
        summary.len(),
        mismatches.len()
    );
    for m in &mismatches {
        println!("  {m}");
    }
    Runtime::set_compare(None);
    if !mismatches.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
