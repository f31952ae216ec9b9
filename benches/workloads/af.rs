//! The workload suite's programs written with arrayflow the way the README teaches: no `eval()`
//! or hints a new user would not know to add. Shared by `benches/workloads.rs` (timing against
//! peers) and `tests/workloads.rs` (results against oracles, work per step flat over a loop).

#![allow(dead_code)]

use super::params::*;
use arrayflow::{Array, Pad, Rng, Slice, select};

fn s(r: std::ops::Range<usize>) -> Slice {
    r.into()
}

/// One explicit heat-equation step on the interior of an `n x n` grid (fixed boundary), with
/// slices for the neighbours and `concat` to put the boundary back.
pub fn heat_slices_step(u: &Array<f32>, n: usize) -> Array<f32> {
    let c = u.slice(&[s(1..n - 1), s(1..n - 1)]);
    let lap = u.slice(&[s(0..n - 2), s(1..n - 1)])
        + u.slice(&[s(2..n), s(1..n - 1)])
        + u.slice(&[s(1..n - 1), s(0..n - 2)])
        + u.slice(&[s(1..n - 1), s(2..n)])
        - &c * 4.0;
    let inner = &c + lap * HEAT_ALPHA;
    let mid = Array::concat(
        &[
            &u.slice(&[s(1..n - 1), s(0..1)]),
            &inner,
            &u.slice(&[s(1..n - 1), s(n - 1..n)]),
        ],
        1,
    );
    Array::concat(
        &[
            &u.slice(&[s(0..1), Slice::all()]),
            &mid,
            &u.slice(&[s(n - 1..n), Slice::all()]),
        ],
        0,
    )
}

/// The heat equation, slice form: `steps` steps, then the grid is read.
pub fn heat_slices(u0: &[f32], n: usize, steps: usize) -> Vec<f32> {
    let mut u = Array::from_slice(u0, &[n, n]);
    for _ in 0..steps {
        u = heat_slices_step(&u, n);
    }
    u.to_vec().unwrap()
}

/// One heat step in the mask form: the Laplacian everywhere (neighbours by `roll`), the
/// boundary kept by `select` with an interior mask.
pub fn heat_select_step(u: &Array<f32>, interior: &Array<bool>, _n: usize) -> Array<f32> {
    let lap = u.roll(1, 0) + u.roll(-1, 0) + u.roll(1, 1) + u.roll(-1, 1) - u * 4.0;
    select(interior, &(u + lap * HEAT_ALPHA), u)
}

/// The interior mask of an `n x n` grid.
pub fn interior_mask(n: usize) -> Array<bool> {
    // NumPy's `m = zeros((n, n), bool); m[1:-1, 1:-1] = True`, built where it is used.
    Array::full(&[n - 2, n - 2], true).pad(&[(1, 1), (1, 1)], Pad::Constant(false))
}

/// The heat equation, mask/`select` form.
pub fn heat_select(u0: &[f32], n: usize, steps: usize) -> Vec<f32> {
    let interior = interior_mask(n);
    let mut u = Array::from_slice(u0, &[n, n]);
    for _ in 0..steps {
        u = heat_select_step(&u, &interior, n);
    }
    u.to_vec().unwrap()
}

/// One k-means iteration: distances to every centroid, nearest centroid, new centroids as
/// one-hot sums (a matrix product) over counts.
pub fn kmeans_step(p: &Array<f32>, c: &Array<f32>, n: usize, k: usize) -> Array<f32> {
    let d = (p.reshape(&[n, 1, 2]) - c.reshape(&[1, k, 2]))
        .powi(2)
        .sum_axis(2);
    let assign = d.argmin_axis(1);
    let onehot = assign
        .reshape(&[n, 1])
        .eq(Array::<u32>::iota(&[1, k], 1))
        .cast::<f32>();
    let counts = onehot.sum_axis(0).reshape(&[k, 1]);
    onehot.transpose().matmul(p) / counts.maximum(1.0)
}

/// One k-means step written with `scatter_add`: each point's coordinates added into its
/// cluster's row (NumPy's `np.add.at`), the counts by `bincount`.
pub fn kmeans_scatter_step(p: &Array<f32>, c: &Array<f32>, n: usize, k: usize) -> Array<f32> {
    let d = (p.reshape(&[n, 1, 2]) - c.reshape(&[1, k, 2]))
        .powi(2)
        .sum_axis(2);
    let assign = d.argmin_axis(1);
    let sums = Array::<f32>::zeros(&[k, 2]).scatter_add(&assign, p, 0);
    let counts = assign.bincount(k).cast::<f32>().reshape(&[k, 1]);
    sums / counts.maximum(1.0)
}

/// k-means with [`kmeans_scatter_step`].
pub fn kmeans_scatter(points: &[f32], init: &[f32], k: usize, iters: usize) -> Vec<f32> {
    let n = points.len() / 2;
    let p = Array::from_slice(points, &[n, 2]);
    let mut c = Array::from_slice(init, &[k, 2]);
    for _ in 0..iters {
        c = kmeans_scatter_step(&p, &c, n, k);
    }
    c.to_vec().unwrap()
}

/// k-means: `iters` iterations from the given centroids; returns the final centroids.
pub fn kmeans(points: &[f32], init: &[f32], k: usize, iters: usize) -> Vec<f32> {
    let n = points.len() / 2;
    let p = Array::from_slice(points, &[n, 2]);
    let mut c = Array::from_slice(init, &[k, 2]);
    for _ in 0..iters {
        c = kmeans_step(&p, &c, n, k);
    }
    c.to_vec().unwrap()
}

/// Monte-Carlo price of a European call under geometric Brownian motion with `n` paths, and its
/// standard error: the mean and standard deviation of the discounted payoff, read one after the
/// other.
pub fn monte_carlo(n: usize, seed: u64) -> (f32, f32) {
    let (s0, k, r, sigma, t) = MC;
    let mut rng = Rng::new(seed);
    let z = rng.normal::<f32>(&[n]);
    let st = (z * (sigma * t.sqrt()) + (r - 0.5 * sigma * sigma) * t).exp() * s0;
    let payoff = (st - k).maximum(0.0) * (-r * t).exp();
    let price = payoff.mean().item().unwrap();
    let se = payoff.stddev().item().unwrap() / (n as f32).sqrt();
    (price, se)
}

/// The standard normal CDF.
fn cnd(x: &Array<f32>) -> Array<f32> {
    ((x * std::f32::consts::FRAC_1_SQRT_2).erf() + 1.0) * 0.5
}

/// Black-Scholes call and put prices of every option (spot, strike, expiry), rate and
/// volatility fixed.
pub fn black_scholes(spot: &[f32], strike: &[f32], expiry: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = spot.len();
    let (r, v) = BS_RATE_VOL;
    let s = Array::from_slice(spot, &[n]);
    let x = Array::from_slice(strike, &[n]);
    let t = Array::from_slice(expiry, &[n]);
    let sqrt_t = t.sqrt();
    let d1 = ((&s / &x).ln() + (&t * (r + 0.5 * v * v))) / (&sqrt_t * v);
    let d2 = &d1 - &sqrt_t * v;
    let disc = &x * (&t * -r).exp();
    let call = &s * cnd(&d1) - &disc * cnd(&d2);
    let put = &disc * cnd(&-&d2) - &s * cnd(&-&d1);
    (call.to_vec().unwrap(), put.to_vec().unwrap())
}

/// Softmax over the rows of a `rows x cols` matrix.
pub fn softmax(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let x = Array::from_slice(x, &[rows, cols]);
    let m = x.max_axis(1).reshape(&[rows, 1]);
    let e = (&x - &m).exp();
    let y = &e / e.sum_axis(1).reshape(&[rows, 1]);
    y.to_vec().unwrap()
}

/// Layer norm over the rows of a `rows x cols` matrix, with a scale and a shift per column.
pub fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let x = Array::from_slice(x, &[rows, cols]);
    let g = Array::from_slice(gamma, &[1, cols]);
    let b = Array::from_slice(beta, &[1, cols]);
    let mean = x.mean_axis(1).reshape(&[rows, 1]);
    let var = x.variance_axis(1).reshape(&[rows, 1]);
    let y = (&x - &mean) / (var + LN_EPS).sqrt() * &g + &b;
    y.to_vec().unwrap()
}

/// A two-layer perceptron's forward pass: `relu(x W1 + b1) W2 + b2`.
pub fn mlp(x: &[f32], w1: &[f32], b1: &[f32], w2: &[f32], b2: &[f32], dims: Dims) -> Vec<f32> {
    let (n, d, h, o) = dims;
    let x = Array::from_slice(x, &[n, d]);
    let w1 = Array::from_slice(w1, &[d, h]);
    let b1 = Array::from_slice(b1, &[1, h]);
    let w2 = Array::from_slice(w2, &[h, o]);
    let b2 = Array::from_slice(b2, &[1, o]);
    let hidden = (x.matmul(&w1) + &b1).maximum(0.0);
    (hidden.matmul(&w2) + &b2).to_vec().unwrap()
}

/// Least squares by the normal equations: `AᵀA` and `Aᵀb` on the runtime, the small solve on the
/// host (Cholesky).
pub fn least_squares(a: &[f64], b: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let a = Array::from_slice(a, &[rows, cols]);
    let b = Array::from_slice(b, &[rows, 1]);
    let at = a.transpose();
    let ata = at.matmul(&a).to_vec().unwrap();
    let atb = at.matmul(&b).to_vec().unwrap();
    cholesky_solve(&ata, &atb, cols)
}

/// Damped oscillators, one per element, stepped with semi-implicit Euler; the total energy is
/// read after every step (a loop of small steps). Returns the energies.
pub fn particles(x0: &[f32], v0: &[f32], steps: usize) -> Vec<f32> {
    let (k, c, dt) = PARTICLES;
    let n = x0.len();
    let mut x = Array::from_slice(x0, &[n]);
    let mut v = Array::from_slice(v0, &[n]);
    let mut energies = Vec::with_capacity(steps);
    for _ in 0..steps {
        let a = &x * -k - &v * c;
        v = &v + a * dt;
        x = &x + &v * dt;
        let e = ((&v * &v + &x * &x * k) * 0.5).sum().item().unwrap();
        energies.push(e);
    }
    energies
}
