//! The workload suite's peers: each workload hand-written as a plain single-threaded loop
//! (generic over the float type, so its f64 instance is also the oracle), with rayon, and with
//! ndarray the way its users write it.

#![allow(dead_code)]

use super::params::*;
use ndarray::{Array1, Array2, Axis, Zip, s};
use num_traits::Float;
use rayon::prelude::*;

/// The float operations the plain peers need beyond `num_traits::Float`.
pub trait Real: Float + Send + Sync + std::iter::Sum + 'static {
    fn erf(self) -> Self;
    fn c(v: f64) -> Self {
        Self::from(v).unwrap()
    }
}
impl Real for f32 {
    fn erf(self) -> f32 {
        libm::erff(self)
    }
}
impl Real for f64 {
    fn erf(self) -> f64 {
        libm::erf(self)
    }
}

// ---------------------------------------------------------------- heat equation

/// Plain loops, one grid pass per step.
pub fn heat_plain<F: Real>(u0: &[F], n: usize, steps: usize) -> Vec<F> {
    let alpha = F::c(HEAT_ALPHA as f64);
    let four = F::c(4.0);
    let mut u = u0.to_vec();
    let mut next = u.clone();
    for _ in 0..steps {
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                let c = u[i * n + j];
                let lap =
                    u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]
                        - c * four;
                next[i * n + j] = c + lap * alpha;
            }
        }
        std::mem::swap(&mut u, &mut next);
    }
    u
}

/// Rows of each step in parallel.
pub fn heat_rayon(u0: &[f32], n: usize, steps: usize) -> Vec<f32> {
    let mut u = u0.to_vec();
    let mut next = u.clone();
    for _ in 0..steps {
        next[n..n * (n - 1)]
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(r, row)| {
                let i = r + 1;
                for j in 1..n - 1 {
                    let c = u[i * n + j];
                    let lap = u[(i - 1) * n + j]
                        + u[(i + 1) * n + j]
                        + u[i * n + j - 1]
                        + u[i * n + j + 1]
                        - c * 4.0;
                    row[j] = c + lap * HEAT_ALPHA;
                }
            });
        std::mem::swap(&mut u, &mut next);
    }
    u
}

/// ndarray slices, as NumPy users write the stencil.
pub fn heat_ndarray(u0: &[f32], n: usize, steps: usize) -> Vec<f32> {
    let mut u = Array2::from_shape_vec((n, n), u0.to_vec()).unwrap();
    for _ in 0..steps {
        let c = u.slice(s![1..n - 1, 1..n - 1]);
        let lap = &u.slice(s![0..n - 2, 1..n - 1]) + &u.slice(s![2..n, 1..n - 1]);
        let lap = lap + u.slice(s![1..n - 1, 0..n - 2]);
        let lap = lap + u.slice(s![1..n - 1, 2..n]);
        let lap = lap - &c * 4.0;
        let inner = &c + &(lap * HEAT_ALPHA);
        u.slice_mut(s![1..n - 1, 1..n - 1]).assign(&inner);
    }
    u.into_raw_vec_and_offset().0
}

// ---------------------------------------------------------------- k-means

fn nearest<F: Real>(x: F, y: F, c: &[F]) -> usize {
    let mut best = (F::infinity(), 0);
    for (j, cj) in c.chunks_exact(2).enumerate() {
        let d = (x - cj[0]) * (x - cj[0]) + (y - cj[1]) * (y - cj[1]);
        if d < best.0 {
            best = (d, j);
        }
    }
    best.1
}

fn kmeans_update<F: Real>(sums: &[F], counts: &[F], k: usize) -> Vec<F> {
    (0..2 * k)
        .map(|i| sums[i] / counts[i / 2].max(F::one()))
        .collect()
}

/// Plain loops: assign each point, accumulate sums and counts.
pub fn kmeans_plain<F: Real>(points: &[F], init: &[F], k: usize, iters: usize) -> Vec<F> {
    let mut c = init.to_vec();
    for _ in 0..iters {
        let mut sums = vec![F::zero(); 2 * k];
        let mut counts = vec![F::zero(); k];
        for p in points.chunks_exact(2) {
            let j = nearest(p[0], p[1], &c);
            sums[2 * j] = sums[2 * j] + p[0];
            sums[2 * j + 1] = sums[2 * j + 1] + p[1];
            counts[j] = counts[j] + F::one();
        }
        c = kmeans_update(&sums, &counts, k);
    }
    c
}

/// Points in parallel, per-thread sums combined.
pub fn kmeans_rayon(points: &[f32], init: &[f32], k: usize, iters: usize) -> Vec<f32> {
    let mut c = init.to_vec();
    for _ in 0..iters {
        let (sums, counts) = points
            .par_chunks(2 * 4096)
            .map(|chunk| {
                let mut sums = vec![0.0f32; 2 * k];
                let mut counts = vec![0.0f32; k];
                for p in chunk.chunks_exact(2) {
                    let j = nearest(p[0], p[1], &c);
                    sums[2 * j] += p[0];
                    sums[2 * j + 1] += p[1];
                    counts[j] += 1.0;
                }
                (sums, counts)
            })
            .reduce(
                || (vec![0.0; 2 * k], vec![0.0; k]),
                |(mut s, mut c), (s2, c2)| {
                    s.iter_mut().zip(s2).for_each(|(a, b)| *a += b);
                    c.iter_mut().zip(c2).for_each(|(a, b)| *a += b);
                    (s, c)
                },
            );
        c = kmeans_update(&sums, &counts, k);
    }
    c
}

/// ndarray the NumPy way: a distance matrix by broadcasting, argmin per row, one-hot product.
pub fn kmeans_ndarray(points: &[f32], init: &[f32], k: usize, iters: usize) -> Vec<f32> {
    let n = points.len() / 2;
    let p = Array2::from_shape_vec((n, 2), points.to_vec()).unwrap();
    let mut c = Array2::from_shape_vec((k, 2), init.to_vec()).unwrap();
    let p3 = p.view().into_shape_with_order((n, 1, 2)).unwrap();
    for _ in 0..iters {
        let c3 = c.view().into_shape_with_order((1, k, 2)).unwrap();
        let diff = &p3 - &c3;
        let d = (&diff * &diff).sum_axis(Axis(2));
        let assign: Vec<usize> = d
            .rows()
            .into_iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .fold(
                        (f32::INFINITY, 0),
                        |b, (j, &v)| if v < b.0 { (v, j) } else { b },
                    )
                    .1
            })
            .collect();
        let mut onehot = Array2::<f32>::zeros((n, k));
        for (i, &j) in assign.iter().enumerate() {
            onehot[[i, j]] = 1.0;
        }
        let counts = onehot.sum_axis(Axis(0)).mapv(|v| v.max(1.0));
        let sums = onehot.t().dot(&p);
        c = sums / &counts.insert_axis(Axis(1));
    }
    c.into_raw_vec_and_offset().0
}

// ---------------------------------------------------------------- Monte-Carlo

/// Discounted payoff of one path from a standard normal draw.
fn payoff(z: f32) -> f32 {
    let (s0, k, r, sigma, t) = MC;
    let st = s0 * ((r - 0.5 * sigma * sigma) * t + sigma * t.sqrt() * z).exp();
    (st - k).max(0.0) * (-r * t).exp()
}

/// Box-Muller normals from SplitMix64, both outputs used.
fn normals(d: &mut Data, out: &mut [f32]) {
    for pair in out.chunks_mut(2) {
        let u1 = d.f64(f64::MIN_POSITIVE, 1.0) as f32;
        let u2 = d.f64(0.0, 1.0) as f32;
        let r = (-2.0 * u1.max(f32::MIN_POSITIVE).ln()).sqrt();
        let (sn, cs) = (std::f32::consts::TAU * u2).sin_cos();
        pair[0] = r * cs;
        if pair.len() > 1 {
            pair[1] = r * sn;
        }
    }
}

fn mean_se(sum: f64, sum_sq: f64, n: usize) -> (f32, f32) {
    let mean = sum / n as f64;
    let var = (sum_sq / n as f64 - mean * mean).max(0.0);
    (mean as f32, (var / n as f64).sqrt() as f32)
}

/// Plain loop: draw, price, accumulate in f64.
pub fn mc_plain(n: usize, seed: u64) -> (f32, f32) {
    let mut d = Data::new(seed);
    let mut z = [0.0f32; 2];
    let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
    for i in 0..n {
        if i % 2 == 0 {
            normals(&mut d, &mut z);
        }
        let p = payoff(z[i % 2]) as f64;
        sum += p;
        sum_sq += p * p;
    }
    mean_se(sum, sum_sq, n)
}

/// Chunks of paths in parallel, each with its own generator.
pub fn mc_rayon(n: usize, seed: u64) -> (f32, f32) {
    const CHUNK: usize = 1 << 16;
    let (sum, sum_sq) = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut d = Data::new(seed ^ (c as u64).wrapping_mul(0x9E37_79B9));
            let len = CHUNK.min(n - c * CHUNK);
            let mut z = vec![0.0f32; len];
            normals(&mut d, &mut z);
            z.iter().fold((0.0f64, 0.0f64), |(s, q), &z| {
                let p = payoff(z) as f64;
                (s + p, q + p * p)
            })
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    mean_se(sum, sum_sq, n)
}

/// ndarray: draw all normals, then array expressions, mean and std.
pub fn mc_ndarray(n: usize, seed: u64) -> (f32, f32) {
    let (s0, k, r, sigma, t) = MC;
    let mut d = Data::new(seed);
    let mut z = Array1::<f32>::zeros(n);
    normals(&mut d, z.as_slice_mut().unwrap());
    let st = (z * (sigma * t.sqrt()) + (r - 0.5 * sigma * sigma) * t).mapv_into(f32::exp) * s0;
    let pay = (st - k).mapv_into(|v| v.max(0.0)) * (-r * t).exp();
    let mean = pay.mean().unwrap();
    let std = pay.std(0.0);
    (mean, std / (n as f32).sqrt())
}

// ---------------------------------------------------------------- Black-Scholes

fn cnd<F: Real>(x: F) -> F {
    F::c(0.5) * (F::one() + (x * F::c(std::f64::consts::FRAC_1_SQRT_2)).erf())
}

fn bs_one<F: Real>(s: F, x: F, t: F) -> (F, F) {
    let (r, v) = (F::c(BS_RATE_VOL.0 as f64), F::c(BS_RATE_VOL.1 as f64));
    let sqrt_t = t.sqrt();
    let d1 = ((s / x).ln() + t * (r + F::c(0.5) * v * v)) / (sqrt_t * v);
    let d2 = d1 - sqrt_t * v;
    let disc = x * (-(t * r)).exp();
    (s * cnd(d1) - disc * cnd(d2), disc * cnd(-d2) - s * cnd(-d1))
}

/// Plain loop over options.
pub fn bs_plain<F: Real>(s: &[F], x: &[F], t: &[F]) -> (Vec<F>, Vec<F>) {
    (0..s.len()).map(|i| bs_one(s[i], x[i], t[i])).unzip()
}

/// Options in parallel.
pub fn bs_rayon(s: &[f32], x: &[f32], t: &[f32]) -> (Vec<f32>, Vec<f32>) {
    (0..s.len())
        .into_par_iter()
        .map(|i| bs_one(s[i], x[i], t[i]))
        .unzip()
}

/// ndarray: one `Zip` pass per output (as ndarray's docs teach).
pub fn bs_ndarray(s: &[f32], x: &[f32], t: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (s, x, t) = (
        Array1::from(s.to_vec()),
        Array1::from(x.to_vec()),
        Array1::from(t.to_vec()),
    );
    let call = Zip::from(&s)
        .and(&x)
        .and(&t)
        .map_collect(|&s, &x, &t| bs_one(s, x, t).0);
    let put = Zip::from(&s)
        .and(&x)
        .and(&t)
        .map_collect(|&s, &x, &t| bs_one(s, x, t).1);
    (
        call.into_raw_vec_and_offset().0,
        put.into_raw_vec_and_offset().0,
    )
}

// ---------------------------------------------------------------- softmax and layer norm

fn softmax_row<F: Real>(x: &[F], y: &mut [F]) {
    let m = x.iter().fold(F::neg_infinity(), |a, &b| a.max(b));
    let mut sum = F::zero();
    for (y, &x) in y.iter_mut().zip(x) {
        *y = (x - m).exp();
        sum = sum + *y;
    }
    y.iter_mut().for_each(|y| *y = *y / sum);
}

pub fn softmax_plain<F: Real>(x: &[F], rows: usize, cols: usize) -> Vec<F> {
    let mut y = vec![F::zero(); rows * cols];
    for (xr, yr) in x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)) {
        softmax_row(xr, yr);
    }
    y
}

pub fn softmax_rayon(x: &[f32], _rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    y.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(yr, xr)| softmax_row(xr, yr));
    y
}

pub fn softmax_ndarray(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let x = Array2::from_shape_vec((rows, cols), x.to_vec()).unwrap();
    let m = x
        .fold_axis(Axis(1), f32::NEG_INFINITY, |&a, &b| a.max(b))
        .insert_axis(Axis(1));
    let e = (&x - &m).mapv_into(f32::exp);
    let sum = e.sum_axis(Axis(1)).insert_axis(Axis(1));
    (e / &sum).into_raw_vec_and_offset().0
}

fn layer_norm_row<F: Real>(x: &[F], g: &[F], b: &[F], y: &mut [F]) {
    let n = F::c(x.len() as f64);
    let mean = x.iter().copied().sum::<F>() / n;
    let var = x.iter().map(|&v| (v - mean) * (v - mean)).sum::<F>() / n;
    let inv = F::one() / (var + F::c(LN_EPS as f64)).sqrt();
    for i in 0..x.len() {
        y[i] = (x[i] - mean) * inv * g[i] + b[i];
    }
}

pub fn layer_norm_plain<F: Real>(x: &[F], g: &[F], b: &[F], _rows: usize, cols: usize) -> Vec<F> {
    let mut y = vec![F::zero(); x.len()];
    for (xr, yr) in x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)) {
        layer_norm_row(xr, g, b, yr);
    }
    y
}

pub fn layer_norm_rayon(x: &[f32], g: &[f32], b: &[f32], _rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    y.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(yr, xr)| layer_norm_row(xr, g, b, yr));
    y
}

pub fn layer_norm_ndarray(x: &[f32], g: &[f32], b: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let x = Array2::from_shape_vec((rows, cols), x.to_vec()).unwrap();
    let g = Array1::from(g.to_vec());
    let b = Array1::from(b.to_vec());
    let mean = x.mean_axis(Axis(1)).unwrap().insert_axis(Axis(1));
    let var = x.var_axis(Axis(1), 0.0).insert_axis(Axis(1));
    let y = (&x - &mean) / &(var + LN_EPS).mapv_into(f32::sqrt) * &g + &b;
    y.into_raw_vec_and_offset().0
}

// ---------------------------------------------------------------- MLP

/// `x (n x d) · w (d x h)` with an i-k-j loop.
fn matmul_plain<F: Real>(x: &[F], w: &[F], n: usize, d: usize, h: usize) -> Vec<F> {
    let mut y = vec![F::zero(); n * h];
    for i in 0..n {
        let yr = &mut y[i * h..(i + 1) * h];
        for k in 0..d {
            let a = x[i * d + k];
            for (yv, &wv) in yr.iter_mut().zip(&w[k * h..(k + 1) * h]) {
                *yv = *yv + a * wv;
            }
        }
    }
    y
}

fn bias_relu<F: Real>(y: &mut [F], b: &[F], relu: bool) {
    for row in y.chunks_exact_mut(b.len()) {
        for (v, &bv) in row.iter_mut().zip(b) {
            *v = *v + bv;
            if relu {
                *v = v.max(F::zero());
            }
        }
    }
}

pub fn mlp_plain<F: Real>(x: &[F], w1: &[F], b1: &[F], w2: &[F], b2: &[F], dims: Dims) -> Vec<F> {
    let (n, d, h, o) = dims;
    let mut hid = matmul_plain(x, w1, n, d, h);
    bias_relu(&mut hid, b1, true);
    let mut y = matmul_plain(&hid, w2, n, h, o);
    bias_relu(&mut y, b2, false);
    y
}

pub fn mlp_rayon(
    x: &[f32],
    w1: &[f32],
    b1: &[f32],
    w2: &[f32],
    b2: &[f32],
    dims: Dims,
) -> Vec<f32> {
    let (_, d, h, o) = dims;
    const ROWS: usize = 64;
    x.par_chunks(ROWS * d)
        .flat_map_iter(|xc| {
            let r = xc.len() / d;
            let mut hid = matmul_plain(xc, w1, r, d, h);
            bias_relu(&mut hid, b1, true);
            let mut y = matmul_plain(&hid, w2, r, h, o);
            bias_relu(&mut y, b2, false);
            y
        })
        .collect()
}

/// ndarray's GEMM; its f64 instance is also the oracle at sizes a plain loop takes too long for.
pub fn mlp_ndarray<F: Real + ndarray::LinalgScalar>(
    x: &[F],
    w1: &[F],
    b1: &[F],
    w2: &[F],
    b2: &[F],
    dims: Dims,
) -> Vec<F> {
    let (n, d, h, o) = dims;
    let x = Array2::from_shape_vec((n, d), x.to_vec()).unwrap();
    let w1 = Array2::from_shape_vec((d, h), w1.to_vec()).unwrap();
    let w2 = Array2::from_shape_vec((h, o), w2.to_vec()).unwrap();
    let (b1, b2) = (Array1::from(b1.to_vec()), Array1::from(b2.to_vec()));
    let hid = (x.dot(&w1) + &b1).mapv_into(|v| v.max(F::zero()));
    (hid.dot(&w2) + &b2).into_raw_vec_and_offset().0
}

// ---------------------------------------------------------------- least squares

/// `AᵀA` and `Aᵀb` accumulated row by row.
fn normal_equations(a: &[f64], b: &[f64], cols: usize) -> (Vec<f64>, Vec<f64>) {
    let mut ata = vec![0.0f64; cols * cols];
    let mut atb = vec![0.0f64; cols];
    for (row, &bv) in a.chunks_exact(cols).zip(b) {
        for i in 0..cols {
            let ai = row[i];
            for j in 0..cols {
                ata[i * cols + j] += ai * row[j];
            }
            atb[i] += ai * bv;
        }
    }
    (ata, atb)
}

pub fn lstsq_plain(a: &[f64], b: &[f64], _rows: usize, cols: usize) -> Vec<f64> {
    let (ata, atb) = normal_equations(a, b, cols);
    cholesky_solve(&ata, &atb, cols)
}

pub fn lstsq_rayon(a: &[f64], b: &[f64], _rows: usize, cols: usize) -> Vec<f64> {
    const ROWS: usize = 4096;
    let (ata, atb) = a
        .par_chunks(ROWS * cols)
        .zip(b.par_chunks(ROWS))
        .map(|(a, b)| normal_equations(a, b, cols))
        .reduce(
            || (vec![0.0; cols * cols], vec![0.0; cols]),
            |(mut m, mut v), (m2, v2)| {
                m.iter_mut().zip(m2).for_each(|(x, y)| *x += y);
                v.iter_mut().zip(v2).for_each(|(x, y)| *x += y);
                (m, v)
            },
        );
    cholesky_solve(&ata, &atb, cols)
}

pub fn lstsq_ndarray(a: &[f64], b: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let a = Array2::from_shape_vec((rows, cols), a.to_vec()).unwrap();
    let b = Array1::from(b.to_vec());
    let ata = a.t().dot(&a);
    let atb = a.t().dot(&b);
    cholesky_solve(ata.as_slice().unwrap(), atb.as_slice().unwrap(), cols)
}

// ---------------------------------------------------------------- small steps

fn oscillator_step<F: Real>(x: &mut [F], v: &mut [F]) -> F {
    let (k, c, dt) = (
        F::c(PARTICLES.0 as f64),
        F::c(PARTICLES.1 as f64),
        F::c(PARTICLES.2 as f64),
    );
    let half = F::c(0.5);
    let mut e = F::zero();
    for (x, v) in x.iter_mut().zip(v.iter_mut()) {
        let a = -k * *x - c * *v;
        *v = *v + a * dt;
        *x = *x + *v * dt;
        e = e + half * (*v * *v + k * *x * *x);
    }
    e
}

pub fn particles_plain<F: Real>(x0: &[F], v0: &[F], steps: usize) -> Vec<F> {
    let (mut x, mut v) = (x0.to_vec(), v0.to_vec());
    (0..steps)
        .map(|_| oscillator_step(&mut x, &mut v))
        .collect()
}

pub fn particles_rayon(x0: &[f32], v0: &[f32], steps: usize) -> Vec<f32> {
    let (mut x, mut v) = (x0.to_vec(), v0.to_vec());
    (0..steps)
        .map(|_| {
            x.par_chunks_mut(2048)
                .zip(v.par_chunks_mut(2048))
                .map(|(x, v)| oscillator_step(x, v) as f64)
                .sum::<f64>() as f32
        })
        .collect()
}

pub fn particles_ndarray(x0: &[f32], v0: &[f32], steps: usize) -> Vec<f32> {
    let (k, c, dt) = PARTICLES;
    let mut x = Array1::from(x0.to_vec());
    let mut v = Array1::from(v0.to_vec());
    (0..steps)
        .map(|_| {
            let a = &x * -k - &v * c;
            v = &v + &(a * dt);
            x = &x + &(&v * dt);
            ((&v * &v + &x * &x * k) * 0.5).sum()
        })
        .collect()
}
