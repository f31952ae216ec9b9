//! The workload suite's constants, input data and the small host-side solve every peer shares.

#![allow(dead_code)]

/// Diffusion number of the heat equation (stable below 0.25).
pub const HEAT_ALPHA: f32 = 0.2;
/// Spot, strike, rate, volatility and expiry of the Monte-Carlo call.
pub const MC: (f32, f32, f32, f32, f32) = (100.0, 105.0, 0.05, 0.2, 1.0);
/// Rate and volatility of the Black-Scholes options.
pub const BS_RATE_VOL: (f32, f32) = (0.02, 0.30);
/// Layer norm's epsilon.
pub const LN_EPS: f32 = 1e-5;
/// MLP: batch, input, hidden and output widths.
pub type Dims = (usize, usize, usize, usize);
/// The MLP's size in the benchmark.
pub const MLP_DIMS: Dims = (4096, 256, 512, 10);
/// Oscillators: stiffness, damping, time step.
pub const PARTICLES: (f32, f32, f32) = (4.0, 0.1, 0.01);

/// A deterministic pseudo-random generator for inputs (SplitMix64).
pub struct Data(u64);

impl Data {
    pub fn new(seed: u64) -> Data {
        Data(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A uniform f64 in `[lo, hi)`.
    pub fn f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn vec_f32(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n)
            .map(|_| self.f64(lo as f64, hi as f64) as f32)
            .collect()
    }
    pub fn vec_f64(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.f64(lo, hi)).collect()
    }
    /// A standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.f64(f64::MIN_POSITIVE, 1.0);
        let u2 = self.f64(0.0, 1.0);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// k-means input: `n` points around `k` well-separated centres, and the first `k` points as the
/// initial centroids.
pub fn kmeans_data(n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut d = Data::new(seed);
    let centres: Vec<(f64, f64)> = (0..k)
        .map(|_| (d.f64(-10.0, 10.0), d.f64(-10.0, 10.0)))
        .collect();
    let mut p = Vec::with_capacity(2 * n);
    for i in 0..n {
        let (cx, cy) = centres[i % k];
        p.push((cx + d.normal()) as f32);
        p.push((cy + d.normal()) as f32);
    }
    let init = p[..2 * k].to_vec();
    (p, init)
}

/// Solves the symmetric positive-definite `n x n` system `m x = b` by Cholesky (row-major `m`).
pub fn cholesky_solve(m: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0f64; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = m[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = if i == j { s.sqrt() } else { s / l[j * n + j] };
        }
    }
    let mut y = vec![0.0f64; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * y[k]).sum();
        y[i] = (b[i] - s) / l[i * n + i];
    }
    let mut x = vec![0.0f64; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * x[k]).sum();
        x[i] = (y[i] - s) / l[i * n + i];
    }
    x
}

/// The analytic Black-Scholes price of the Monte-Carlo call (the oracle for its estimate).
pub fn mc_exact() -> f64 {
    let (s0, k, r, sigma, t) = MC;
    let (s0, k, r, sigma, t) = (s0 as f64, k as f64, r as f64, sigma as f64, t as f64);
    let d1 = ((s0 / k).ln() + (r + 0.5 * sigma * sigma) * t) / (sigma * t.sqrt());
    let d2 = d1 - sigma * t.sqrt();
    let n = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
    s0 * n(d1) - k * (-r * t).exp() * n(d2)
}
