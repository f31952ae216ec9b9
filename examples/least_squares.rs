//! A least-squares polynomial fit two ways: `linalg::lstsq` on the Vandermonde matrix (QR) and
//! the normal equations `A^T A c = A^T y` with `cholesky` + `cholesky_solve`, in f64 (and
//! `lstsq` in f32), checked against an f64 oracle written here (the normal equations by
//! Gaussian elimination with partial pivoting). Prints the fitted coefficients; exits non-zero
//! when a result is off the oracle.
//!
//! `cargo run --release --example least_squares` (`LSQ_M` points, `LSQ_DEGREE`; uses a GPU
//! executor when `ARRAYFLOW_DEVICE` names one).

use arrayflow::{Array, Runtime, linalg};
use std::process::ExitCode;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The oracle: solves `g c = h` (`g [n, n]`) by Gaussian elimination with partial pivoting.
fn gauss(mut g: Vec<f64>, mut h: Vec<f64>, n: usize) -> Vec<f64> {
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| g[i * n + k].abs().total_cmp(&g[j * n + k].abs()))
            .unwrap();
        for j in 0..n {
            g.swap(k * n + j, p * n + j);
        }
        h.swap(k, p);
        for i in k + 1..n {
            let l = g[i * n + k] / g[k * n + k];
            for j in k..n {
                g[i * n + j] -= l * g[k * n + j];
            }
            h[i] -= l * h[k];
        }
    }
    let mut c = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|j| g[i * n + j] * c[j]).sum();
        c[i] = (h[i] - s) / g[i * n + i];
    }
    c
}

fn main() -> Result<ExitCode, arrayflow::Error> {
    let m = env("LSQ_M", 200);
    let n = env("LSQ_DEGREE", 3) + 1;
    // Samples of 1 - 2t + 0.5t^3 on [-1, 1] with a deterministic wobble as noise.
    let t: Vec<f64> = (0..m)
        .map(|i| -1.0 + 2.0 * i as f64 / (m - 1).max(1) as f64)
        .collect();
    let y: Vec<f64> = t
        .iter()
        .enumerate()
        .map(|(i, &t)| 1.0 - 2.0 * t + 0.5 * t.powi(3) + 0.01 * (7.0 * i as f64).sin())
        .collect();
    let vander: Vec<f64> = t
        .iter()
        .flat_map(|&t| (0..n).map(move |p| t.powi(p as i32)))
        .collect();

    // The oracle: normal equations in f64.
    let g: Vec<f64> = (0..n * n)
        .map(|e| {
            (0..m)
                .map(|i| vander[i * n + e / n] * vander[i * n + e % n])
                .sum()
        })
        .collect();
    let h: Vec<f64> = (0..n)
        .map(|p| (0..m).map(|i| vander[i * n + p] * y[i]).sum())
        .collect();
    let want = gauss(g, h, n);

    let a = Array::from_vec(vander.clone(), &[m, n]);
    let yy = Array::from_vec(y.clone(), &[m]);
    let by_qr = linalg::lstsq(&a, &yy).to_vec()?;
    let at = a.transpose();
    let normal =
        linalg::cholesky_solve(&at.matmul(&a).cholesky(), &at.matmul(&yy.reshape(&[m, 1])))
            .to_vec()?;
    let a32 = Array::from_vec(vander.iter().map(|&x| x as f32).collect(), &[m, n]);
    let y32 = Array::from_vec(y.iter().map(|&x| x as f32).collect(), &[m]);
    let by_qr32: Vec<f64> = linalg::lstsq(&a32, &y32)
        .to_vec()?
        .into_iter()
        .map(f64::from)
        .collect();

    println!(
        "least-squares fit of degree {} to {m} points ({})",
        n - 1,
        Runtime::executor()
    );
    println!(
        "{:>6} {:>14} {:>14} {:>14} {:>14}",
        "power", "oracle", "lstsq f64", "normal+chol", "lstsq f32"
    );
    for p in 0..n {
        println!(
            "{p:>6} {:>14.9} {:>14.9} {:>14.9} {:>14.9}",
            want[p], by_qr[p], normal[p], by_qr32[p]
        );
    }
    let off = |got: &[f64]| {
        got.iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max)
            / want.iter().fold(0.0f64, |s, w| s.max(w.abs()))
    };
    let mut ok = true;
    for (what, got, tol) in [
        ("lstsq f64", &by_qr, 1e-10),
        ("normal equations + cholesky_solve f64", &normal, 1e-10),
        ("lstsq f32", &by_qr32, 1e-4),
    ] {
        let e = off(got);
        let pass = e <= tol;
        ok &= pass;
        println!(
            "{what}: largest difference from the oracle {e:.2e} (relative; allowed {tol:.0e}) {}",
            if pass { "ok" } else { "WRONG" }
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
