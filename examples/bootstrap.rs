//! Resampling statistics with the random orderings: a bootstrap percentile confidence interval of
//! a mean (resamples drawn with `Rng::integers` and taken with `gather`, all `B` at once as a
//! `[B, n]` index array) and a two-sample permutation test of a difference of means (`R`
//! permutations of the pooled data from `Rng::permutations`, one sort for all of them). Checked
//! against plain f64 loops over the same indices, read back from the arrays: every resample's
//! and permutation's statistic, the interval's ends and the p-value. Exits non-zero on a
//! mismatch.
//!
//! `cargo run --release --example bootstrap` (uses a GPU when `ARRAYFLOW_DEVICE` names one;
//! `BOOT_N`, `BOOT_B`, `BOOT_R` change the sizes).

use arrayflow::{Array, Rng, Runtime, s};
use std::process::ExitCode;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, c) = v.fold((0.0, 0usize), |(s, c), x| (s + x, c + 1));
    s / c as f64
}

/// Compares f32 results with f64 loops to within `TOL` of a scale, keeping the largest difference.
struct Check {
    worst: f64,
    ok: bool,
}

/// Largest difference allowed, relative to the data's scale.
const TOL: f64 = 1e-5;

impl Check {
    fn close(&mut self, what: &str, got: f32, want: f64, scale: f64) {
        let err = (got as f64 - want).abs() / scale;
        self.worst = self.worst.max(err);
        if err > TOL {
            eprintln!("{what}: {got}, the f64 loop gives {want}");
            self.ok = false;
        }
    }
    fn fail(&mut self, what: String) {
        eprintln!("{what}");
        self.ok = false;
    }
}

fn main() -> arrayflow::Result<ExitCode> {
    let (n, b, r) = (env("BOOT_N", 5000), env("BOOT_B", 200), env("BOOT_R", 200));
    let (n1, n2) = (n * 2 / 5, n - n * 2 / 5);
    let t0 = Instant::now();
    let before = Runtime::stats();
    let mut rng = Rng::new(7);

    // 1. Bootstrap: a skewed sample (exponential, mean 2), B resamples of its n values.
    let x = rng.exponential::<f32>(&[n], 0.5);
    let idx = rng.integers::<u32>(&[b, n], 0, n as u32);
    let means = x.gather(&idx, 0).mean_axis(1); // [B]
    let sorted = means.sort();
    let (lo_at, hi_at) = (
        (0.025 * (b - 1) as f64).round() as usize,
        (0.975 * (b - 1) as f64).round() as usize,
    );
    let (lo, hi) = (sorted.get(&[lo_at])?, sorted.get(&[hi_at])?);
    let est = x.mean().item()?;

    // 2. Permutation test: do groups a (n1 values) and b (n2 values) have the same mean?
    let a = rng.normal_with::<f32>(&[n1], 0.0, 1.0);
    let g = rng.normal_with::<f32>(&[n2], 0.05, 1.0);
    let observed = (&g.mean() - &a.mean()).item()?;
    let pooled = Array::concat(&[&a, &g], 0);
    let perms = rng.permutations(r, n); // [R, n]
    let shuffled = pooled.gather(&perms, 0); // [R, n]
    let diffs =
        &shuffled.slice(s![.., n1..]).mean_axis(1) - &shuffled.slice(s![.., ..n1]).mean_axis(1);
    let extreme = diffs.abs().ge(observed.abs()).count().item()?;
    let p_value = (extreme as f64 + 1.0) / (r as f64 + 1.0);
    let (means_v, diffs_v) = (means.to_vec()?, diffs.to_vec()?);
    let elapsed = t0.elapsed();
    let st = Runtime::stats().since(&before);

    // The oracle: the same statistics over the same indices in f64.
    let xs: Vec<f64> = x.to_vec()?.iter().map(|&v| v as f64).collect();
    let scale = mean(xs.iter().copied()); // the values' size (positive data)
    let idx_v = idx.to_vec()?;
    let mut check = Check {
        worst: 0.0,
        ok: true,
    };
    check.close("the sample mean", est, mean(xs.iter().copied()), scale);
    let mut want_means: Vec<f64> = idx_v
        .chunks(n)
        .map(|row| mean(row.iter().map(|&i| xs[i as usize])))
        .collect();
    for (i, (&got, &want)) in means_v.iter().zip(&want_means).enumerate() {
        check.close(&format!("resample {i}'s mean"), got, want, scale);
    }
    // Order statistics move no more than the values they come from: compare them directly.
    want_means.sort_by(f64::total_cmp);
    check.close("the interval's low end", lo, want_means[lo_at], scale);
    check.close("the interval's high end", hi, want_means[hi_at], scale);

    let pool: Vec<f64> = pooled.to_vec()?.iter().map(|&v| v as f64).collect();
    let spread = mean(pool.iter().map(|v| v.abs()));
    let want_obs = mean(pool[n1..].iter().copied()) - mean(pool[..n1].iter().copied());
    check.close("the observed difference", observed, want_obs, spread);
    let perms_v = perms.to_vec()?;
    let mut want_diffs = Vec::with_capacity(r);
    for (k, row) in perms_v.chunks(n).enumerate() {
        let mut seen = vec![false; n];
        row.iter().for_each(|&i| seen[i as usize] = true);
        if !seen.iter().all(|&s| s) {
            check.fail(format!("permutation {k} is not a permutation"));
        }
        let d = mean(row[n1..].iter().map(|&i| pool[i as usize]))
            - mean(row[..n1].iter().map(|&i| pool[i as usize]));
        check.close(
            &format!("permutation {k}'s difference"),
            diffs_v[k],
            d,
            spread,
        );
        want_diffs.push(d);
    }
    // The count of |difference| >= |observed| may differ only by differences within rounding of
    // the threshold.
    let at_least = |t: f64| want_diffs.iter().filter(|d| d.abs() >= t).count() as u32;
    let (fewest, most) = (
        at_least(want_obs.abs() + TOL * spread),
        at_least(want_obs.abs() - TOL * spread),
    );
    if !(fewest..=most).contains(&extreme) {
        check.fail(format!(
            "{extreme} permutations at least as extreme, the f64 loop gives {fewest}..={most}"
        ));
    }

    println!(
        "bootstrap of the mean of {n} exponential values (B = {b}) on {}: {est:.4}, 95 % \
         interval [{lo:.4}, {hi:.4}]; permutation test ({n1} vs {n2} values, R = {r}): observed \
         difference {observed:.4}, p = {p_value:.3} ({extreme} as extreme); {:.3} s ({} device \
         programs built, {:.2} s); largest difference from the f64 loops {:.1e} of the data's \
         scale",
        Runtime::executor(),
        elapsed.as_secs_f64(),
        st.device.compiles,
        st.device.compile_ns as f64 * 1e-9,
        check.worst
    );
    Ok(if check.ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("MISMATCH");
        ExitCode::FAILURE
    })
}
