//! k-means (Lloyd's algorithm) in f32, written the natural way: distances to every centroid by
//! broadcasting `[n, 1, d] - [1, k, d]`, the nearest with `argmin_axis`, new centroids as
//! `scatter_add` sums over counts (an empty cluster keeps its centroid). The iterations are
//! recorded lazily; at the end every iteration's assignment and centroids are read and checked
//! against the same step in plain f64 loops, started from the library's centroids of the step
//! before: a point may change cluster only at a near tie (its distances to the two centroids
//! within 1e-4 relative, at most 0.1 % of the points), and the centroids must agree to 1e-4 of
//! the data's scale. Then the whole run is repeated in f64 loops from the same start, and the
//! final centroids compared. Exits non-zero on a mismatch.
//!
//! `cargo run --release --example kmeans` (uses a GPU when `ARRAYFLOW_DEVICE` names one;
//! `KMEANS_N`, `KMEANS_K`, `KMEANS_D`, `KMEANS_ITERS` change the sizes).

use arrayflow::{Array, Rng, Runtime, s, select};
use std::process::ExitCode;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One Lloyd step in f64: each point's nearest centroid (the first of equal distances), and the
/// new centroids from `assign` (the caller's assignment, so that a near tie decided the other
/// way does not change what is compared), an empty cluster keeping its centroid.
struct Step {
    nearest: Vec<usize>,
    dist: Vec<f64>, // [n, k] squared distances
    centroids: Vec<f64>,
}

fn step(points: &[f64], c: &[f64], d: usize, assign: Option<&[u32]>) -> Step {
    let (n, k) = (points.len() / d, c.len() / d);
    let mut dist = vec![0.0; n * k];
    let mut nearest = vec![0; n];
    for i in 0..n {
        for j in 0..k {
            dist[i * k + j] = (0..d)
                .map(|e| (points[i * d + e] - c[j * d + e]).powi(2))
                .sum();
            if dist[i * k + j] < dist[i * k + nearest[i]] {
                nearest[i] = j;
            }
        }
    }
    let mut sums = vec![0.0; k * d];
    let mut counts = vec![0usize; k];
    for i in 0..n {
        let j = assign.map_or(nearest[i], |a| a[i] as usize);
        counts[j] += 1;
        for e in 0..d {
            sums[j * d + e] += points[i * d + e];
        }
    }
    let centroids = (0..k * d)
        .map(|t| match counts[t / d] {
            0 => c[t],
            m => sums[t] / m as f64,
        })
        .collect();
    Step {
        nearest,
        dist,
        centroids,
    }
}

fn main() -> arrayflow::Result<ExitCode> {
    let (n, k, d, iters) = (
        env("KMEANS_N", 20_000),
        env("KMEANS_K", 8),
        env("KMEANS_D", 2),
        env("KMEANS_ITERS", 10),
    );
    let t0 = Instant::now();
    let before = Runtime::stats();

    // Data: n points around k random centers in [-10, 10)^d (unit normal noise).
    let mut rng = Rng::new(2024);
    let centers = rng.uniform_in::<f32>(&[k, d], -10.0, 10.0);
    let labels = rng.integers::<u32>(&[n], 0, k as u32);
    let points = &centers.gather(&labels, 0) + &rng.normal::<f32>(&[n, d]);
    // Start: k distinct random points (Forgy).
    let first = rng.permutation(n).slice(s![..k]);
    let mut c = points.gather(&first, 0);
    let start = c.clone();

    // Lloyd's iterations, recorded lazily.
    let x = points.reshape(&[n, 1, d]);
    let ones = Array::scalar(1.0f32);
    let mut history = Vec::with_capacity(iters);
    for _ in 0..iters {
        let diff = &x - &c.reshape(&[1, k, d]); // [n, k, d]
        let assign = (&diff * &diff).sum_axis(2).argmin_axis(1); // [n]
        let sums = Array::<f32>::zeros(&[k, d]).scatter_add(&assign, &points, 0);
        let counts = Array::<f32>::zeros(&[k])
            .scatter_add(&assign, &ones, 0)
            .reshape(&[k, 1]);
        c = select(&counts.gt(0.0), &sums / &counts, &c);
        history.push((assign, c.clone()));
    }
    let mut read = Vec::with_capacity(iters);
    for (a, cent) in &history {
        read.push((a.to_vec()?, cent.to_vec()?));
    }
    let elapsed = t0.elapsed();
    let st = Runtime::stats().since(&before);

    // Check each step from the library's centroids before it.
    let pts: Vec<f64> = points.to_vec()?.iter().map(|&v| v as f64).collect();
    let scale = pts.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut prev: Vec<f64> = start.to_vec()?.iter().map(|&v| v as f64).collect();
    let initial = prev.clone();
    let (mut worst_c, mut flips, mut ok) = (0.0f64, 0usize, true);
    for (it, (assign, cent)) in read.iter().enumerate() {
        let o = step(&pts, &prev, d, Some(assign));
        let mut near_ties = 0;
        for (i, (&got, &want)) in assign.iter().zip(&o.nearest).enumerate() {
            let got = got as usize;
            if got == want {
                continue;
            }
            let (dg, dw) = (o.dist[i * k + got], o.dist[i * k + want]);
            if dg - dw <= 1e-4 * dw.max(1e-6 * scale * scale) {
                near_ties += 1;
            } else {
                eprintln!(
                    "iteration {it}: point {i} went to centroid {got} (squared distance {dg}), \
                     the nearest is {want} ({dw})"
                );
                ok = false;
            }
        }
        if near_ties * 1000 > n {
            eprintln!("iteration {it}: {near_ties} near ties, more than 0.1 % of the points");
            ok = false;
        }
        flips += near_ties;
        for (t, (&g, &w)) in cent.iter().zip(&o.centroids).enumerate() {
            let err = (g as f64 - w).abs() / scale;
            worst_c = worst_c.max(err);
            if err > 1e-4 {
                eprintln!("iteration {it}: centroid element {t} is {g}, the f64 loop gives {w}");
                ok = false;
            }
        }
        prev = cent.iter().map(|&v| v as f64).collect();
    }

    // The whole run in f64 from the same start.
    let mut w = initial;
    for _ in 0..iters {
        w = step(&pts, &w, d, None).centroids;
    }
    let last = &read[iters - 1].1;
    let drift = last
        .iter()
        .zip(&w)
        .map(|(&g, &v)| (g as f64 - v).abs() / scale)
        .fold(0.0, f64::max);
    if drift > 1e-3 {
        eprintln!("final centroids differ from the f64 run by {drift:.2e} of the data's scale");
        ok = false;
    }

    let sizes = {
        let mut s = vec![0usize; k];
        read[iters - 1].0.iter().for_each(|&j| s[j as usize] += 1);
        s
    };
    println!(
        "k-means of {n} points in {d}-D, k = {k}, {iters} iterations on {}: {:.3} s; cluster \
         sizes {sizes:?}; largest differences from the f64 steps: centroids {worst_c:.1e} of the \
         data's scale, {flips} near-tie assignments; from the f64 run {drift:.1e}; {} kernels and \
         {} intrinsics launched, {} device programs built ({:.2} s of the time)",
        Runtime::executor(),
        elapsed.as_secs_f64(),
        st.kernels_launched,
        st.intrinsics_launched,
        st.device.compiles,
        st.device.compile_ns as f64 * 1e-9
    );
    for j in 0..k {
        let row: Vec<String> = last[j * d..(j + 1) * d]
            .iter()
            .map(|v| format!("{v:8.3}"))
            .collect();
        println!("  centroid {j}: [{}]", row.join(", "));
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("MISMATCH");
        ExitCode::FAILURE
    })
}
