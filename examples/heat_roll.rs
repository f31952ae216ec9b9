//! The periodic heat equation written with `roll`: each step is one fused kernel. Checked against
//! a plain loop in f64 before it prints.
//!
//! `cargo run --release --example heat_roll` (uses a GPU when `ARRAYFLOW_DEVICE` names one).

use arrayflow::{Array, Runtime};

fn main() -> arrayflow::Result<()> {
    let (n, steps, alpha) = (256usize, 100usize, 0.2f32);
    // A hot square in a cold periodic plate.
    let u0: Vec<f32> = (0..n * n)
        .map(|k| {
            let (i, j) = (k / n, k % n);
            if (n / 4..n / 2).contains(&i) && (n / 4..n / 2).contains(&j) {
                1.0
            } else {
                0.0
            }
        })
        .collect();

    let before = Runtime::stats();
    let mut u = Array::from_vec(u0.clone(), &[n, n]);
    for _ in 0..steps {
        let lap = u.roll(1, 0) + u.roll(-1, 0) + u.roll(1, 1) + u.roll(-1, 1) - &u * 4.0;
        u = &u + lap * alpha;
    }
    let got = u.to_vec()?;
    let st = Runtime::stats().since(&before);

    // The oracle: the same steps in f64 with explicit periodic indices.
    let mut w: Vec<f64> = u0.iter().map(|&v| v as f64).collect();
    for _ in 0..steps {
        let o = w.clone();
        for i in 0..n {
            for j in 0..n {
                let at = |a: usize, b: usize| o[(a % n) * n + b % n];
                let lap = at(i + 1, j) + at(i + n - 1, j) + at(i, j + 1) + at(i, j + n - 1)
                    - 4.0 * o[i * n + j];
                w[i * n + j] = o[i * n + j] + alpha as f64 * lap;
            }
        }
    }
    let err = got
        .iter()
        .zip(&w)
        .map(|(&a, &b)| (a as f64 - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-5, "largest difference from the f64 loop: {err}");
    let heat: f64 = got.iter().map(|&v| v as f64).sum();
    println!(
        "heat equation {n}x{n}, {steps} steps on {}: total heat {heat:.3} (conserved: {}), \
         largest difference from the f64 loop {err:.1e}, {} kernels launched",
        Runtime::executor(),
        (n * n / 16) as f64,
        st.kernels_launched
    );
    Ok(())
}
