//! The transforms' reference (comparison mode), written apart from the CPU entries: each line
//! sequentially in f64, through one complex transform: a direct O(n^2) DFT for lines of up to
//! [`DIRECT`] points (twiddles exact at the quarter turns) and rustfft's f64 plans, from a
//! planner of the reference's own, for longer ones. `rfft` keeps the first `n / 2 + 1`
//! coefficients of the complex transform of its real line; `irfft` builds the Hermitian
//! spectrum of its coefficients here (imaginary parts of coefficient 0, and of `n / 2` for even
//! `n`, dropped) and keeps the real part of its inverse.

use super::{Kind, Spec, lines};
use crate::ir::{DType, Scalar, TypedVec};
use num_complex::Complex;
use parking_lot::Mutex;
use rustfft::FftPlanner;
use std::sync::LazyLock;

type C = Complex<f64>;

/// Lines up to this long are transformed by the direct sum.
pub const DIRECT: usize = 64;

static PLANNER: LazyLock<Mutex<FftPlanner<f64>>> = LazyLock::new(|| Mutex::new(FftPlanner::new()));

/// Element `i` of `v` as a complex f64 (real types with a zero imaginary part).
pub fn value(v: &TypedVec, i: usize) -> C {
    match v.get(i) {
        Scalar::C64(z) => C::new(z.re as f64, z.im as f64),
        Scalar::C128(z) => z,
        s => C::new(s.as_f64(), 0.0),
    }
}

/// `exp(-+2 pi i t / n)` (`+` for the inverse), exact at multiples of a quarter turn.
fn twiddle(t: usize, n: usize, inverse: bool) -> C {
    let sign = if inverse { 1.0 } else { -1.0 };
    if (4 * t).is_multiple_of(n) {
        return match 4 * t / n {
            0 => C::new(1.0, 0.0),
            1 => C::new(0.0, sign),
            2 => C::new(-1.0, 0.0),
            _ => C::new(0.0, -sign),
        };
    }
    let angle = sign * 2.0 * std::f64::consts::PI * t as f64 / n as f64;
    C::new(angle.cos(), angle.sin())
}

/// The unscaled DFT of `x` (forward `sum_j x_j exp(-2 pi i jk / n)`, or the inverse).
pub fn dft(x: &[C], inverse: bool) -> Vec<C> {
    let n = x.len();
    if n <= DIRECT {
        return (0..n)
            .map(|k| {
                x.iter().enumerate().fold(C::new(0.0, 0.0), |acc, (j, &v)| {
                    acc + v * twiddle(j * k % n, n, inverse)
                })
            })
            .collect();
    }
    let plan = {
        let mut p = PLANNER.lock();
        if inverse {
            p.plan_fft_inverse(n)
        } else {
            p.plan_fft_forward(n)
        }
    };
    let mut y = x.to_vec();
    plan.process(&mut y);
    y
}

/// One line's result: `x` (the input line as read) transformed and scaled.
fn line(spec: Spec, mut x: Vec<C>) -> Vec<C> {
    let (n, h) = (spec.n, spec.half());
    let y = match spec.kind {
        Kind::C2c { inverse } => {
            x.resize(n, C::new(0.0, 0.0));
            dft(&x, inverse)
        }
        Kind::R2c => {
            x.resize(n, C::new(0.0, 0.0));
            let mut y = dft(&x, false);
            y.truncate(h);
            y
        }
        Kind::C2r => {
            x.resize(h, C::new(0.0, 0.0));
            x[0].im = 0.0;
            if n.is_multiple_of(2) {
                x[n / 2].im = 0.0;
            }
            let mut full = vec![C::new(0.0, 0.0); n];
            full[..h].copy_from_slice(&x);
            for k in 1..h {
                full[n - k] = x[k].conj();
            }
            dft(&full, true)
                .into_iter()
                .map(|z| C::new(z.re, 0.0))
                .collect()
        }
    };
    let s = spec.scale();
    y.into_iter().map(|z| z * s).collect()
}

/// The reference result of a call on `x` of `shape`, of element type `out`.
pub fn run(spec: Spec, x: &TypedVec, shape: &[usize], out: DType) -> Result<TypedVec, String> {
    let g = lines(spec, shape);
    let mut res = vec![C::new(0.0, 0.0); g.pre * g.lout * g.post];
    for p in 0..g.pre {
        for q in 0..g.post {
            let xs: Vec<C> = (0..g.m)
                .map(|j| value(x, (p * g.m + j) * g.post + q))
                .collect();
            for (k, z) in line(spec, xs).into_iter().enumerate() {
                res[(p * g.lout + k) * g.post + q] = z;
            }
        }
    }
    Ok(match out {
        DType::C64 => TypedVec::C64(
            res.iter()
                .map(|z| Complex::new(z.re as f32, z.im as f32))
                .collect(),
        ),
        DType::C128 => TypedVec::C128(res),
        DType::F32 => TypedVec::F32(res.iter().map(|z| z.re as f32).collect()),
        DType::F64 => TypedVec::F64(res.iter().map(|z| z.re).collect()),
        d => return Err(format!("{} into {d}", spec.name())),
    })
}
