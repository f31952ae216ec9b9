//! The sweep's inputs: values log-spaced over the whole finite range of both signs (evenly
//! spaced keys, so every binade, subnormals included, gets the same share), uniform samples of
//! each function's interesting intervals, and special values with the floats next to them
//! (zeros, infinities, NaN, the range's edges, singularities and branch points, multiples of
//! pi/2, overflow and underflow edges).

use super::ulp::Bits;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::f64::consts::FRAC_PI_2;

/// How many floats on each side of a special value are swept.
const NEIGHBOURS: i64 = 32;

/// `n` values evenly spaced in key order from `-MAX` to `MAX`, each moved by a random part of its
/// step.
pub fn log_spaced<T: Bits>(rng: &mut StdRng, n: usize) -> Vec<T> {
    let (lo, hi) = (-(T::max_key() as i128), T::max_key() as i128);
    let step = ((hi - lo) / n as i128).max(1);
    (0..n as i128)
        .map(|i| {
            let k = lo + i * step + rng.random_range(0..step as u64) as i128;
            T::from_key(k.min(hi) as i64)
        })
        .collect()
}

/// `n` values uniform in `[lo, hi]`.
pub fn uniform<T: Bits>(rng: &mut StdRng, n: usize, lo: f64, hi: f64) -> Vec<T> {
    (0..n).map(|_| T::of(rng.random_range(lo..=hi))).collect()
}

/// Each value rounded to `T` with its `NEIGHBOURS` floats on either side (finite ones only).
pub fn around<T: Bits>(centres: &[f64]) -> Vec<T> {
    let mut v = Vec::new();
    for &c in centres {
        let k = T::of(c).key();
        for d in -NEIGHBOURS..=NEIGHBOURS {
            let x = T::from_key((k + d).clamp(-T::max_key(), T::max_key()));
            v.push(x);
        }
    }
    v
}

/// The special values every function sees, with their neighbours where they have some.
pub fn specials<T: Bits>() -> Vec<T> {
    let tiny = T::from_key(1).to(); // the smallest subnormal
    let min_pos = if T::SINGLE {
        f32::MIN_POSITIVE as f64
    } else {
        f64::MIN_POSITIVE
    };
    let max = T::from_key(T::max_key()).to();
    let mut v: Vec<T> = [
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
    ]
    .iter()
    .map(|&x| T::of(x))
    .collect();
    let centres = [tiny, min_pos, max, 1.0, 0.5, 2.0, 0.1, 1e-3, 1e3];
    v.extend(around::<T>(&centres));
    v.extend(around::<T>(&centres.map(|c| -c)));
    v
}

/// Centres of the function's own special regions (both signs where the function has them).
fn centres(name: &str, single: bool) -> Vec<f64> {
    let pick = |a: f64, b: f64| if single { a } else { b };
    let mut c: Vec<f64> = match name {
        "sin" | "cos" | "tan" | "sec" | "csc" | "cot" => {
            let mut c: Vec<f64> = (-24..=24).map(|k| k as f64 * FRAC_PI_2).collect();
            for k in [1e3f64, 1e5, 1e6, 1e9, 1e15, 1e20, 1e30] {
                c.push(k.round() * FRAC_PI_2);
            }
            c.extend([8192.0, 1.6e6, 1e38]);
            // Multiples of pi/2 up to 8192, where a reduction with too few bits of pi loses the
            // remainder's low bits (WGSL's Cephes reduction was 975 ulp off there on an H200),
            // and the worst inputs that exhaustive sweep found.
            c.extend((25..5216).step_by(7).map(|k| k as f64 * FRAC_PI_2));
            c.extend([
                252.89820861816406,
                505.7964172363281,
                2238.384765625,
                4476.76953125,
            ]);
            c.push(6715.1543);
            c
        }
        "asin" | "acos" | "atanh" | "asec" | "acsc" | "acosh" => vec![1.0, -1.0, 0.5, -0.5],
        "ln" | "log2" | "log10" => vec![1.0, 2.0, 10.0],
        "exp" => vec![
            pick(88.72284, 709.782712893384),
            pick(-87.33655, -708.3964185322641),
            pick(-103.97208, -745.1332191019411),
        ],
        "exp2" => vec![
            pick(128.0, 1024.0),
            pick(-126.0, -1022.0),
            pick(-149.0, -1074.0),
        ],
        "sinh" | "cosh" | "csch" | "sech" => vec![
            pick(89.415985, 710.4758600739439),
            pick(-89.415985, -710.4758600739439),
        ],
        "tanh" | "coth" => vec![pick(9.01, 19.06), pick(-9.01, -19.06)],
        // erfc's underflow edges (the last normal result, the last subnormal one) and the region
        // near 23.56 (f64, results near 1e-243) issue 18 reports.
        "erfc" => vec![
            pick(9.194, 26.543),
            pick(10.05, 27.2281),
            23.56,
            0.5,
            -1.0,
            1.0,
        ],
        "erf" => vec![0.5, 1.0, pick(3.92, 5.93), pick(-3.92, -5.93)],
        "floor" | "ceil" | "trunc" | "round" => vec![
            0.5,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -2.5,
            pick(8388608.0, 4503599627370496.0),
        ],
        _ => vec![],
    };
    c.retain(|x| !single || x.abs() < f32::MAX as f64);
    c
}

/// Intervals sampled uniformly for a unary function.
fn intervals(name: &str, single: bool) -> Vec<(f64, f64)> {
    let pick = |a: f64, b: f64| if single { a } else { b };
    match name {
        "sin" | "cos" | "tan" | "sec" | "csc" | "cot" => {
            vec![(-10.0, 10.0), (-1e4, 1e4), (-1e7, 1e7)]
        }
        "asin" | "acos" | "atanh" => vec![(-1.0, 1.0)],
        "asec" | "acsc" => vec![(-4.0, 4.0), (-1.01, 1.01)],
        "atan" | "acot" | "asinh" | "tanh" | "coth" => vec![(-10.0, 10.0)],
        "acosh" => vec![(1.0, 10.0), (1.0, 1.01)],
        "exp" => vec![(pick(-104.0, -746.0), pick(89.0, 710.0)), (-2.0, 2.0)],
        "exp2" => vec![(pick(-150.0, -1075.0), pick(128.0, 1024.0)), (-2.0, 2.0)],
        "sinh" | "cosh" | "sech" | "csch" => {
            vec![(pick(-90.0, -711.0), pick(90.0, 711.0)), (-2.0, 2.0)]
        }
        "ln" | "log2" | "log10" | "sqrt" | "rsqrt" | "cbrt" => vec![(0.0, 4.0), (0.9, 1.1)],
        "erf" => vec![(-6.0, 6.0)],
        "erfc" => vec![(pick(-4.0, -6.0), pick(11.0, 28.0)), (23.5, 23.6)],
        _ => vec![(-10.0, 10.0)],
    }
}

/// Inputs of a unary function: about `n` values plus specials, seeded by the function's name.
pub fn unary<T: Bits>(name: &str, n: usize) -> Vec<T> {
    let mut rng = StdRng::seed_from_u64(seed(name, T::SINGLE));
    let mut v = log_spaced::<T>(&mut rng, n / 2);
    let iv = intervals(name, T::SINGLE);
    for &(lo, hi) in &iv {
        v.extend(uniform::<T>(&mut rng, n / 2 / iv.len(), lo, hi));
    }
    v.extend(specials::<T>());
    v.extend(around::<T>(&centres(name, T::SINGLE)));
    v
}

/// Inputs of a binary function: about `n` pairs plus every pair of two special sets.
pub fn binary<T: Bits>(name: &str, n: usize) -> (Vec<T>, Vec<T>) {
    let mut rng = StdRng::seed_from_u64(seed(name, T::SINGLE));
    // Independent log-spaced operands (shuffled against each other), then a special grid.
    let mut x = log_spaced::<T>(&mut rng, n / 2);
    let mut y = log_spaced::<T>(&mut rng, n / 2);
    for i in (1..y.len()).rev() {
        y.swap(i, rng.random_range(0..=i));
    }
    let emax = if T::SINGLE { 128.0 } else { 1024.0 };
    match name {
        // x^y with |y log2 |x|| spread over the whole exponent range (results that neither
        // overflow nor vanish), half of them with integral y (negative x has real powers there).
        "pow" => {
            for i in 0..n / 2 {
                let xi = log_spaced::<T>(&mut rng, 1)[0]
                    .to()
                    .abs()
                    .max(f64::MIN_POSITIVE);
                let xi = if rng.random_bool(0.25) { -xi } else { xi };
                let t = rng.random_range(-1.1 * emax..1.1 * emax);
                let l = xi.abs().log2();
                let mut yi = if l != 0.0 { t / l } else { t };
                if i % 2 == 0 || xi < 0.0 {
                    yi = yi.round();
                }
                x.push(T::of(xi));
                y.push(T::of(yi));
            }
        }
        // Nearby operands: x / y within a few thousand, where the quotient's bits matter.
        _ => {
            for _ in 0..n / 2 {
                let yi = rng.random_range(-100.0..100.0);
                let xi = yi * rng.random_range(-3000.0..3000.0);
                x.push(T::of(xi));
                y.push(T::of(yi));
            }
        }
    }
    let mut s: Vec<T> = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1e-3,
        10.0,
        1e30,
    ]
    .iter()
    .map(|&v| T::of(v))
    .collect();
    s.extend([1, T::max_key(), -1, -T::max_key()].map(T::from_key));
    if name == "pow" {
        s.extend(around::<T>(&[1.0, -1.0]).into_iter().step_by(4));
    }
    for &a in &s {
        for &b in &s {
            x.push(a);
            y.push(b);
        }
    }
    (x, y)
}

/// A seed from the function's name and type, so each function's points reproduce on their own.
fn seed(name: &str, single: bool) -> u64 {
    name.bytes().fold(if single { 32 } else { 64 }, |h, b| {
        h.wrapping_mul(0x100_0000_01b3) ^ b as u64
    })
}
