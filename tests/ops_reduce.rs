//! Reductions, whole-array, along each axis and along several axes, on 1-D to 4-D shapes (including
//! non-trailing axes), against f64 / wrapping-integer oracles on seeded random data.
//!
//! Tolerances (n = elements reduced into one output, S = sum of |terms|):
//! - float sum (the runtime accumulates in f64): |err| <= 2 eps_T |exact| + 4 n eps_f64 S, i.e. an
//!   f32 sum is as accurate as rounding the exact sum; dot, norm_l1, norm_l2 also allow one rounding
//!   per product/square: + eps_T S.
//! - float prod: rel 2 eps_T + 2 n eps_f64.
//! - mean: rel 4 eps_T; variance/stddev: f32 rel 4e-6, f64 rel 1e-12 (two-pass oracle in f64).
//! - integer sum/prod (wrapping), max, min, argmax, argmin, any, all, norm_inf: exact.

mod common;

use arrayflow::Array;
use common::*;

const SHAPES: &[&[usize]] = &[
    &[1000],
    &[13, 17],
    &[5, 6, 7],
    &[3, 4, 2, 5],
    &[1, 9],
    &[6, 1, 4],
];

/// The shapes a test walks: all of [`SHAPES`] on the CPU executor; on a device executor, where
/// every shape, axis set and op is a program the driver compiles (on a fresh PoCL this file took
/// eleven minutes of CI), one of each kind: a vector, a matrix, rank 4, and unit axes.
fn shapes() -> Vec<&'static [usize]> {
    if any_device() {
        vec![SHAPES[0], SHAPES[1], SHAPES[3], SHAPES[5]]
    } else {
        SHAPES.to_vec()
    }
}

/// Every non-empty subset of the axes of a rank-`r` shape; on a device executor, for rank 3 and
/// up, the first axis, the last, the middle ones, the first and last together, and all.
fn axis_sets(r: usize) -> Vec<Vec<usize>> {
    let all: Vec<Vec<usize>> = (1u32..(1 << r))
        .map(|m| (0..r).filter(|&d| m & (1 << d) != 0).collect())
        .collect();
    if !any_device() || r < 3 {
        return all;
    }
    let keep = [
        vec![0],
        vec![r - 1],
        (1..r - 1).collect(),
        vec![0, r - 1],
        (0..r).collect::<Vec<usize>>(),
    ];
    all.into_iter().filter(|s| keep.contains(s)).collect()
}

fn sum_tol<T: TestFloat>(exact: f64, n: usize, s: f64) -> f64 {
    2.0 * T::EPS * exact.abs() + 2.0 * acc_rounding::<T>(n) * s
}

/// The accumulated rounding of a float reduction over `n` terms, relative to the terms' size: f64
/// accumulation on the CPU and OpenCL (with f64) gives at most `2 n` f64 roundings; wgpu (WGSL
/// has no f64) accumulates in the element type over a tree, `log2 n + 2` roundings deep.
fn acc_rounding<T: TestFloat>(n: usize) -> f64 {
    if f32_sums_in_f32() {
        ((n.max(1) as f64).log2().ceil() + 2.0) * T::EPS
    } else {
        2.0 * n as f64 * f64::EPSILON
    }
}

#[track_caller]
fn assert_within<T: TestFloat>(got: &[T], want: &[f64], tol: &[f64], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: length");
    for (i, ((g, w), t)) in got.iter().zip(want).zip(tol).enumerate() {
        let g = g.to();
        assert!(
            (g - w).abs() <= *t || (g.is_nan() && w.is_nan()),
            "{ctx} ({}): [{i}] got {g:e} want {w:e} (diff {:e} > tol {t:e})",
            T::name(),
            (g - w).abs()
        );
    }
}

fn float_reductions<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    for shape in shapes() {
        let n = numel(shape);
        let x: Vec<T> = conv(&rand_f64(&mut r, n, -10.0, 10.0));
        let xf: Vec<f64> = x.iter().map(|v| v.to()).collect();
        let a = Array::from_slice(&x, shape);
        let p: Vec<T> = conv(&rand_f64(&mut r, n, 0.8, 1.25));
        let pa = Array::from_slice(&p, shape);
        let pf: Vec<f64> = p.iter().map(|v| v.to()).collect();
        let mut sets = axis_sets(shape.len());
        sets.push((0..shape.len()).collect());
        for axes in &sets {
            let ctx = format!("shape {shape:?} axes {axes:?}");
            let m: usize = axes.iter().map(|&d| shape[d]).product();
            let (oshape, acc) = reduce_oracle(&xf, shape, axes, (0.0, 0.0), |(s, g), _, v| {
                (s + v, g + v.abs())
            });
            let want: Vec<f64> = acc.iter().map(|a| a.0).collect();
            let tol: Vec<f64> = acc.iter().map(|a| sum_tol::<T>(a.0, m, a.1)).collect();
            let got = a.sum_axes(axes);
            assert_eq!(got.shape(), &oshape[..], "{ctx}: sum shape");
            assert_within(&read(&got), &want, &tol, &format!("{ctx}: sum"));
            if axes.len() == 1 {
                assert_within(
                    &read(&a.sum_axis(axes[0])),
                    &want,
                    &tol,
                    &format!("{ctx}: sum_axis"),
                );
            }

            let (_, acc) = reduce_oracle(&pf, shape, axes, 1.0, |s, _, v| s * v);
            let tol: Vec<f64> = acc
                .iter()
                .map(|w| w.abs() * (2.0 * T::EPS + acc_rounding::<T>(m)))
                .collect();
            assert_within(
                &read(&pa.prod_axes(axes)),
                &acc,
                &tol,
                &format!("{ctx}: prod"),
            );

            let (_, mx) = reduce_oracle(&xf, shape, axes, f64::NEG_INFINITY, |s, _, v| s.max(v));
            assert_exact_f(
                &read(&a.max_axes(axes)),
                &conv::<T>(&mx),
                &format!("{ctx}: max"),
            );
            let (_, mn) = reduce_oracle(&xf, shape, axes, f64::INFINITY, |s, _, v| s.min(v));
            assert_exact_f(
                &read(&a.min_axes(axes)),
                &conv::<T>(&mn),
                &format!("{ctx}: min"),
            );
            if axes.len() == 1 {
                let ax = axes[0];
                assert_exact_f(
                    &read(&a.max_axis(ax)),
                    &conv::<T>(&mx),
                    &format!("{ctx}: max_axis"),
                );
                assert_exact_f(
                    &read(&a.min_axis(ax)),
                    &conv::<T>(&mn),
                    &format!("{ctx}: min_axis"),
                );
                let (_, pr) = reduce_oracle(&pf, shape, axes, 1.0, |s, _, v| s * v);
                let tol: Vec<f64> = pr
                    .iter()
                    .map(|w| w.abs() * (2.0 * T::EPS + acc_rounding::<T>(m)))
                    .collect();
                assert_within(
                    &read(&pa.prod_axis(ax)),
                    &pr,
                    &tol,
                    &format!("{ctx}: prod_axis"),
                );

                // mean / variance / stddev along one axis, two-pass oracle in f64.
                let mean: Vec<f64> = want.iter().map(|s| s / m as f64).collect();
                let tol: Vec<f64> = acc_tol_mean::<T>(
                    &mean,
                    &reduce_oracle(&xf, shape, axes, 0.0, |g, _, v| g + v.abs()).1,
                    m,
                );
                assert_within(
                    &read(&a.mean_axis(ax)),
                    &mean,
                    &tol,
                    &format!("{ctx}: mean_axis"),
                );
                let var = variance_oracle(&xf, shape, ax);
                let vrel = if T::name() == "f32" { 4e-6 } else { 1e-12 };
                assert_close(
                    &read(&a.variance_axis(ax)),
                    &var,
                    vrel,
                    0.0,
                    &format!("{ctx}: variance_axis"),
                );
                let sd: Vec<f64> = var.iter().map(|v| v.sqrt()).collect();
                assert_close(
                    &read(&a.stddev_axis(ax)),
                    &sd,
                    vrel,
                    0.0,
                    &format!("{ctx}: stddev_axis"),
                );
            }
        }
        // Whole-array forms return 0-d arrays.
        let s = a.sum();
        assert_eq!(s.shape(), &[] as &[usize], "whole sum is 0-d");
        let exact: f64 = xf.iter().sum();
        let sabs: f64 = xf.iter().map(|v| v.abs()).sum();
        assert_within(
            &[item(&s)],
            &[exact],
            &[sum_tol::<T>(exact, n, sabs)],
            &format!("{shape:?}: whole sum"),
        );
        let mx = xf.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mn = xf.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(item(&a.max()).to(), mx, "{shape:?}: whole max");
        assert_eq!(item(&a.min()).to(), mn, "{shape:?}: whole min");
        let mean = exact / n as f64;
        let var = xf.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let vrel = if T::name() == "f32" { 4e-6 } else { 1e-12 };
        assert_close(
            &[item(&a.mean())],
            &[mean],
            4.0 * T::EPS,
            4.0 * T::EPS * sabs / n as f64,
            &format!("{shape:?}: mean"),
        );
        assert_close(
            &[item(&a.variance())],
            &[var],
            vrel,
            0.0,
            &format!("{shape:?}: variance"),
        );
        assert_close(
            &[item(&a.stddev())],
            &[var.sqrt()],
            vrel,
            0.0,
            &format!("{shape:?}: stddev"),
        );
        let prod: f64 = pf.iter().product();
        assert_close(
            &[item(&pa.prod())],
            &[prod],
            // The product's rounding as a sum's: f64 on the CPU, an f32 tree on wgpu.
            2.0 * T::EPS + acc_rounding::<T>(n),
            0.0,
            &format!("{shape:?}: whole prod"),
        );
    }
}

fn acc_tol_mean<T: TestFloat>(mean: &[f64], sabs: &[f64], m: usize) -> Vec<f64> {
    mean.iter()
        .zip(sabs)
        .map(|(w, s)| 4.0 * T::EPS * (w.abs() + s / m as f64))
        .collect()
}

/// Population variance along one axis, two passes in f64.
fn variance_oracle(x: &[f64], shape: &[usize], ax: usize) -> Vec<f64> {
    let m = shape[ax] as f64;
    let (_, sums) = reduce_oracle(x, shape, &[ax], 0.0, |s, _, v| s + v);
    let kept: Vec<usize> = (0..shape.len()).filter(|&d| d != ax).collect();
    let oshape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let mut acc = vec![0.0; sums.len()];
    for (lin, &v) in x.iter().enumerate() {
        let idx = unravel(lin, shape);
        let o = ravel(&kept.iter().map(|&d| idx[d]).collect::<Vec<_>>(), &oshape);
        let d = v - sums[o] / m;
        acc[o] += d * d;
    }
    acc.iter().map(|s| s / m).collect()
}

#[test]
fn float_reductions_f32() {
    float_reductions::<f32>(301);
}

#[test]
fn float_reductions_f64() {
    float_reductions::<f64>(302);
}

#[test]
fn int_reductions() {
    let mut r = rng(303);
    for shape in shapes() {
        let n = numel(shape);
        let xi = rand_i32_any(&mut r, n);
        let xu = rand_u32_any(&mut r, n);
        let ai = Array::from_slice(&xi, shape);
        let au = Array::from_slice(&xu, shape);
        let mut sets = axis_sets(shape.len());
        sets.push((0..shape.len()).collect());
        for axes in &sets {
            let ctx = format!("shape {shape:?} axes {axes:?}");
            let (_, w) = reduce_oracle(&xi, shape, axes, 0i32, |s, _, v| s.wrapping_add(v));
            assert_same(
                &read(&ai.sum_axes(axes)),
                &w,
                &format!("{ctx}: i32 sum (wrapping)"),
            );
            let (_, w) = reduce_oracle(&xi, shape, axes, 1i32, |s, _, v| s.wrapping_mul(v));
            assert_same(
                &read(&ai.prod_axes(axes)),
                &w,
                &format!("{ctx}: i32 prod (wrapping)"),
            );
            let (_, w) = reduce_oracle(&xi, shape, axes, i32::MIN, |s, _, v| s.max(v));
            assert_same(&read(&ai.max_axes(axes)), &w, &format!("{ctx}: i32 max"));
            let (_, w) = reduce_oracle(&xi, shape, axes, i32::MAX, |s, _, v| s.min(v));
            assert_same(&read(&ai.min_axes(axes)), &w, &format!("{ctx}: i32 min"));
            let (_, w) = reduce_oracle(&xu, shape, axes, 0u32, |s, _, v| s.wrapping_add(v));
            assert_same(
                &read(&au.sum_axes(axes)),
                &w,
                &format!("{ctx}: u32 sum (wrapping)"),
            );
            let (_, w) = reduce_oracle(&xu, shape, axes, 1u32, |s, _, v| s.wrapping_mul(v));
            assert_same(
                &read(&au.prod_axes(axes)),
                &w,
                &format!("{ctx}: u32 prod (wrapping)"),
            );
            let (_, w) = reduce_oracle(&xu, shape, axes, 0u32, |s, _, v| s.max(v));
            assert_same(&read(&au.max_axes(axes)), &w, &format!("{ctx}: u32 max"));
            let (_, w) = reduce_oracle(&xu, shape, axes, u32::MAX, |s, _, v| s.min(v));
            assert_same(&read(&au.min_axes(axes)), &w, &format!("{ctx}: u32 min"));
            if axes.len() == 1 {
                let (_, w) = reduce_oracle(&xi, shape, axes, 0i32, |s, _, v| s.wrapping_add(v));
                assert_same(
                    &read(&ai.sum_axis(axes[0])),
                    &w,
                    &format!("{ctx}: i32 sum_axis"),
                );
                let (_, w) = reduce_oracle(&xu, shape, axes, u32::MAX, |s, _, v| s.min(v));
                assert_same(
                    &read(&au.min_axis(axes[0])),
                    &w,
                    &format!("{ctx}: u32 min_axis"),
                );
            }
        }
        assert_eq!(
            item(&ai.sum()),
            xi.iter().fold(0i32, |s, &v| s.wrapping_add(v)),
            "{shape:?}: whole i32 sum"
        );
        assert_eq!(
            item(&au.prod()),
            xu.iter().fold(1u32, |s, &v| s.wrapping_mul(v)),
            "{shape:?}: whole u32 prod"
        );
        assert_eq!(
            item(&ai.max()),
            *xi.iter().max().unwrap(),
            "{shape:?}: whole i32 max"
        );
        assert_eq!(
            item(&au.min()),
            *xu.iter().min().unwrap(),
            "{shape:?}: whole u32 min"
        );
    }
    // Small integer products that do not wrap.
    let x = rand_i32(&mut r, 60, -3, 3);
    let a = Array::from_slice(&x, &[6, 10]);
    let (_, w) = reduce_oracle(&x, &[6, 10], &[1], 1i32, |s, _, v| s * v);
    assert_same(&read(&a.prod_axis(1)), &w, "small i32 prod_axis");
}

/// argmax / argmin: index within the reduced extent (row-major over the reduced axes), the first
/// on ties, the first NaN if any. Data come from a small set so ties are common.
fn arg_reductions<T: TestFloat>(seed: u64, with_nan: bool) {
    let mut r = rng(seed);
    let set = [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0];
    for shape in shapes() {
        let n = numel(shape);
        let mut xf: Vec<f64> = rand_u32(&mut r, n, 0, set.len() as u32 - 1)
            .iter()
            .map(|&i| set[i as usize])
            .collect();
        if with_nan {
            for k in 0..n / 40 {
                xf[(k * 97 + 13) % n] = f64::NAN;
            }
        }
        let x: Vec<T> = conv(&xf);
        let a = Array::from_slice(&x, shape);
        let mut sets = axis_sets(shape.len());
        sets.push((0..shape.len()).collect());
        type Acc = (f64, Option<usize>);
        let better_max = |(bv, bi): Acc, k: usize, v: f64| -> Acc {
            match bi {
                None => (v, Some(k)),
                Some(_) if bv.is_nan() => (bv, bi),
                Some(_) if v.is_nan() || v > bv => (v, Some(k)),
                _ => (bv, bi),
            }
        };
        let better_min = |(bv, bi): Acc, k: usize, v: f64| -> Acc {
            match bi {
                None => (v, Some(k)),
                Some(_) if bv.is_nan() => (bv, bi),
                Some(_) if v.is_nan() || v < bv => (v, Some(k)),
                _ => (bv, bi),
            }
        };
        for axes in &sets {
            let ctx = format!("{} shape {shape:?} axes {axes:?} nan {with_nan}", T::name());
            let (oshape, w) = reduce_oracle(&xf, shape, axes, (0.0, None), better_max);
            let w: Vec<u32> = w.iter().map(|a| a.1.unwrap() as u32).collect();
            let got = a.argmax_axes(axes);
            assert_eq!(got.shape(), &oshape[..], "{ctx}: argmax shape");
            assert_same(&read(&got), &w, &format!("{ctx}: argmax"));
            if axes.len() == 1 {
                assert_same(
                    &read(&a.argmax_axis(axes[0])),
                    &w,
                    &format!("{ctx}: argmax_axis"),
                );
            }
            let (_, w) = reduce_oracle(&xf, shape, axes, (0.0, None), better_min);
            let w: Vec<u32> = w.iter().map(|a| a.1.unwrap() as u32).collect();
            assert_same(&read(&a.argmin_axes(axes)), &w, &format!("{ctx}: argmin"));
            if axes.len() == 1 {
                assert_same(
                    &read(&a.argmin_axis(axes[0])),
                    &w,
                    &format!("{ctx}: argmin_axis"),
                );
            }
            // max / min with NaN present propagate NaN.
            let (_, mx) = reduce_oracle(&xf, shape, axes, f64::NEG_INFINITY, |s, _, v| {
                if s.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    s.max(v)
                }
            });
            assert_exact_f(
                &read(&a.max_axes(axes)),
                &conv::<T>(&mx),
                &format!("{ctx}: max (NaN propagates)"),
            );
            let (_, mn) = reduce_oracle(&xf, shape, axes, f64::INFINITY, |s, _, v| {
                if s.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    s.min(v)
                }
            });
            assert_exact_f(
                &read(&a.min_axes(axes)),
                &conv::<T>(&mn),
                &format!("{ctx}: min (NaN propagates)"),
            );
        }
        let w = xf
            .iter()
            .enumerate()
            .fold((0.0, None), |acc, (k, &v)| better_max(acc, k, v))
            .1
            .unwrap() as u32;
        assert_eq!(item(&a.argmax()), w, "{shape:?}: whole argmax");
        let w = xf
            .iter()
            .enumerate()
            .fold((0.0, None), |acc, (k, &v)| better_min(acc, k, v))
            .1
            .unwrap() as u32;
        assert_eq!(item(&a.argmin()), w, "{shape:?}: whole argmin");
    }
}

#[test]
fn argmax_argmin_f32() {
    arg_reductions::<f32>(304, false);
    arg_reductions::<f32>(305, true);
}

#[test]
fn argmax_argmin_f64() {
    arg_reductions::<f64>(306, false);
    arg_reductions::<f64>(307, true);
}

#[test]
fn argmax_argmin_int() {
    let mut r = rng(308);
    for shape in shapes() {
        let n = numel(shape);
        let xi = rand_i32(&mut r, n, -3, 3);
        let xu = rand_u32(&mut r, n, 0, 4);
        let (ai, au) = (Array::from_slice(&xi, shape), Array::from_slice(&xu, shape));
        let mut sets = axis_sets(shape.len());
        sets.push((0..shape.len()).collect());
        for axes in &sets {
            let ctx = format!("shape {shape:?} axes {axes:?}");
            let first_best = |better: fn(i64, i64) -> bool| {
                move |(bv, bi): (i64, Option<usize>), k: usize, v: i64| match bi {
                    Some(_) if !better(v, bv) => (bv, bi),
                    _ => (v, Some(k)),
                }
            };
            let xi64: Vec<i64> = xi.iter().map(|&v| v as i64).collect();
            let xu64: Vec<i64> = xu.iter().map(|&v| v as i64).collect();
            let idx = |v: Vec<(i64, Option<usize>)>| -> Vec<u32> {
                v.iter().map(|a| a.1.unwrap() as u32).collect()
            };
            let (_, w) = reduce_oracle(&xi64, shape, axes, (0, None), first_best(|v, b| v > b));
            assert_same(
                &read(&ai.argmax_axes(axes)),
                &idx(w),
                &format!("{ctx}: i32 argmax"),
            );
            let (_, w) = reduce_oracle(&xi64, shape, axes, (0, None), first_best(|v, b| v < b));
            assert_same(
                &read(&ai.argmin_axes(axes)),
                &idx(w),
                &format!("{ctx}: i32 argmin"),
            );
            let (_, w) = reduce_oracle(&xu64, shape, axes, (0, None), first_best(|v, b| v > b));
            assert_same(
                &read(&au.argmax_axes(axes)),
                &idx(w),
                &format!("{ctx}: u32 argmax"),
            );
            let (_, w) = reduce_oracle(&xu64, shape, axes, (0, None), first_best(|v, b| v < b));
            assert_same(
                &read(&au.argmin_axes(axes)),
                &idx(w),
                &format!("{ctx}: u32 argmin"),
            );
        }
    }
    // Extreme values (beyond f64's exact range is impossible for 32-bit ints, but check the ends).
    let a = Array::from_slice(&[i32::MIN + 1, i32::MAX, i32::MIN, i32::MAX - 1], &[4]);
    assert_eq!(item(&a.argmax()), 1);
    assert_eq!(item(&a.argmin()), 2);
    let u = Array::from_slice(&[u32::MAX - 1, 0, u32::MAX, 1], &[4]);
    assert_eq!(item(&u.argmax()), 2);
    assert_eq!(item(&u.argmin()), 1);
}

#[test]
fn any_all() {
    let mut r = rng(309);
    for shape in shapes() {
        let n = numel(shape);
        for p in [0.05, 0.5, 0.95] {
            let x = rand_bool(&mut r, n, p);
            let a = Array::from_slice(&x, shape);
            let mut sets = axis_sets(shape.len());
            sets.push((0..shape.len()).collect());
            for axes in &sets {
                let ctx = format!("shape {shape:?} axes {axes:?} p {p}");
                let (_, w) = reduce_oracle(&x, shape, axes, false, |s, _, v| s || v);
                assert_same(&read(&a.any_axes(axes)), &w, &format!("{ctx}: any"));
                let (_, w2) = reduce_oracle(&x, shape, axes, true, |s, _, v| s && v);
                assert_same(&read(&a.all_axes(axes)), &w2, &format!("{ctx}: all"));
                if axes.len() == 1 {
                    assert_same(&read(&a.any_axis(axes[0])), &w, &format!("{ctx}: any_axis"));
                    assert_same(
                        &read(&a.all_axis(axes[0])),
                        &w2,
                        &format!("{ctx}: all_axis"),
                    );
                }
            }
            assert_eq!(item(&a.any()), x.iter().any(|&v| v), "{shape:?}: whole any");
            assert_eq!(item(&a.all()), x.iter().all(|&v| v), "{shape:?}: whole all");
        }
    }
    // Rows that are entirely true / false, from comparisons (fused producer).
    let v: Vec<f32> = (0..40)
        .map(|i| {
            if i < 10 {
                1.0
            } else if i < 20 {
                -1.0
            } else {
                (i % 3) as f32 - 1.0
            }
        })
        .collect();
    let a = Array::from_slice(&v, &[4, 10]);
    assert_same(
        &read(&a.gt(0.0f32).all_axis(1)),
        &[true, false, false, false],
        "all of a row of trues",
    );
    assert_same(
        &read(&a.gt(0.0f32).any_axis(1)),
        &[true, false, true, true],
        "any per row",
    );
}

fn dot_norms<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    for n in [1usize, 7, 1000, 10_000] {
        let xf: Vec<f64> = conv::<T>(&rand_f64(&mut r, n, -3.0, 3.0))
            .iter()
            .map(|v: &T| v.to())
            .collect();
        let yf: Vec<f64> = conv::<T>(&rand_f64(&mut r, n, -3.0, 3.0))
            .iter()
            .map(|v: &T| v.to())
            .collect();
        let (x, y): (Vec<T>, Vec<T>) = (conv(&xf), conv(&yf));
        let (a, b) = (Array::from_slice(&x, &[n]), Array::from_slice(&y, &[n]));
        let ctx = format!("n = {n}");
        let d: f64 = xf.iter().zip(&yf).map(|(p, q)| p * q).sum();
        let s: f64 = xf.iter().zip(&yf).map(|(p, q)| (p * q).abs()).sum();
        let tol = sum_tol::<T>(d, n, s) + T::EPS * s;
        assert_within(&[item(&a.dot(&b))], &[d], &[tol], &format!("{ctx}: dot"));
        let l1: f64 = xf.iter().map(|v| v.abs()).sum();
        assert_within(
            &[item(&a.norm_l1())],
            &[l1],
            &[sum_tol::<T>(l1, n, l1)],
            &format!("{ctx}: norm_l1"),
        );
        let sq: f64 = xf.iter().map(|v| v * v).sum();
        let l2 = sq.sqrt();
        let tol = (sum_tol::<T>(sq, n, sq) + T::EPS * sq) / (2.0 * l2) + T::EPS * l2;
        assert_within(
            &[item(&a.norm_l2())],
            &[l2],
            &[tol],
            &format!("{ctx}: norm_l2"),
        );
        let li = xf.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_eq!(item(&a.norm_inf()).to(), li, "{ctx}: norm_inf");
    }
    // A 2-D array's norms are over all elements.
    let xf = rand_f64(&mut r, 60, -1.0, 1.0);
    let x: Vec<T> = conv(&xf);
    let a = Array::from_slice(&x, &[6, 10]);
    let li = x.iter().fold(0.0f64, |m, v| m.max(v.to().abs()));
    assert_eq!(item(&a.norm_inf()).to(), li, "2-D norm_inf");
    let l1: f64 = x.iter().map(|v| v.to().abs()).sum();
    assert_close(
        &[item(&a.norm_l1())],
        &[l1],
        4.0 * T::EPS,
        0.0,
        "2-D norm_l1",
    );
}

#[test]
fn dot_and_norms_f32() {
    dot_norms::<f32>(310);
}

#[test]
fn dot_and_norms_f64() {
    dot_norms::<f64>(311);
}

#[test]
fn dot_int() {
    let mut r = rng(312);
    let x = rand_i32_any(&mut r, 5000);
    let y = rand_i32_any(&mut r, 5000);
    let d = Array::from_slice(&x, &[5000]).dot(&Array::from_slice(&y, &[5000]));
    assert_eq!(
        item(&d),
        x.iter()
            .zip(&y)
            .fold(0i32, |s, (&p, &q)| s.wrapping_add(p.wrapping_mul(q))),
        "i32 dot wraps"
    );
    let xu = rand_u32(&mut r, 100, 0, 1000);
    let yu = rand_u32(&mut r, 100, 0, 1000);
    let d = Array::from_slice(&xu, &[100]).dot(&Array::from_slice(&yu, &[100]));
    assert_eq!(
        item(&d),
        xu.iter().zip(&yu).map(|(p, q)| p * q).sum::<u32>(),
        "u32 dot"
    );
}

/// Sums of 10^5+ f32 elements (many CPU tiles) vs the f64 oracle, whole-array and along trailing
/// and non-trailing axes. Tolerance as for all float sums (f64 accumulation, one final rounding).
#[test]
fn large_f32_sums() {
    let mut r = rng(313);
    let n = 300_000;
    let x = rand_f32(&mut r, n, 0.0, 1.0);
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let exact: f64 = xf.iter().sum();
    let a = Array::from_slice(&x, &[n]);
    assert_within(
        &[item(&a.sum())],
        &[exact],
        &[sum_tol::<f32>(exact, n, exact)],
        "300k sum",
    );
    // Naive f32 accumulation would be off by far more than this bound; check it is meaningful.
    let naive = x.iter().fold(0.0f32, |s, &v| s + v) as f64;
    assert!(
        (naive - exact).abs() > sum_tol::<f32>(exact, n, exact),
        "the bound must reject naive f32 summation"
    );
    let mean = item(&a.mean()) as f64;
    assert_close(
        &[mean],
        &[exact / n as f64],
        4.0 * f32::EPSILON as f64,
        0.0,
        "300k mean",
    );

    // Mixed signs: cancellation.
    let y = rand_f32(&mut r, n, -1.0, 1.0);
    let yf: Vec<f64> = y.iter().map(|&v| v as f64).collect();
    let ex: f64 = yf.iter().sum();
    let sabs: f64 = yf.iter().map(|v| v.abs()).sum();
    assert_within(
        &[item(&Array::from_slice(&y, &[n]).sum())],
        &[ex],
        &[sum_tol::<f32>(ex, n, sabs)],
        "300k signed sum",
    );

    for shape in [[3usize, 100_000], [100_000, 3], [600, 500]] {
        let a = Array::from_slice(&x, &shape);
        for ax in 0..2 {
            let m = shape[ax];
            let (_, w) = reduce_oracle(&xf, &shape, &[ax], 0.0, |s, _, v| s + v);
            let tol: Vec<f64> = w.iter().map(|s| sum_tol::<f32>(*s, m, *s)).collect();
            assert_within(
                &read(&a.sum_axis(ax)),
                &w,
                &tol,
                &format!("{shape:?} sum_axis({ax})"),
            );
        }
    }
    // An f32 sum that exceeds 2^24 in magnitude (where f32 stops counting by 1).
    let ones = Array::<f32>::ones(&[16_800_001]);
    assert_eq!(
        item(&ones.sum()),
        16_800_001f64 as f32,
        "sum of 16.8M ones (f64 accumulation)"
    );
}

/// Extremes and their positions when the winner sits in a later tile, and ties across tiles
/// (the first index wins).
#[test]
fn large_extrema_across_tiles() {
    let mut r = rng(314);
    let n = 50_000;
    let mut x = rand_f32(&mut r, n, -1.0, 1.0);
    x[1234] = 5.0;
    x[40_000] = 5.0;
    x[30_001] = -7.0;
    let a = Array::from_slice(&x, &[n]);
    assert_eq!(item(&a.max()), 5.0);
    assert_eq!(
        item(&a.argmax()),
        1234,
        "first of two tied maxima in different tiles"
    );
    assert_eq!(item(&a.min()), -7.0);
    assert_eq!(item(&a.argmin()), 30_001);
    let b = Array::from_slice(&x, &[5, 10_000]);
    let am = read(&b.argmax_axis(1));
    let want: Vec<u32> = (0..5)
        .map(|row| {
            let s = &x[row * 10_000..(row + 1) * 10_000];
            let m = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            s.iter().position(|&v| v == m).unwrap() as u32
        })
        .collect();
    assert_same(&am, &want, "argmax_axis(1) over tiles");
    let am0 = read(&b.argmin_axis(0));
    let want: Vec<u32> = (0..10_000)
        .map(|c| {
            let col: Vec<f32> = (0..5).map(|row| x[row * 10_000 + c]).collect();
            let m = col.iter().cloned().fold(f32::INFINITY, f32::min);
            col.iter().position(|&v| v == m).unwrap() as u32
        })
        .collect();
    assert_same(&am0, &want, "argmin_axis(0) over tiles");
    let mut xi = rand_i32_any(&mut r, n);
    xi[45_000] = i32::MAX;
    let ai = Array::from_slice(&xi, &[n]);
    assert_eq!(
        item(&ai.argmax()),
        xi.iter().position(|&v| v == i32::MAX).unwrap() as u32
    );
    assert_eq!(
        item(&ai.sum()),
        xi.iter().fold(0i32, |s, &v| s.wrapping_add(v)),
        "large i32 sum wraps"
    );
}

/// A device reduction takes its partials' buffers from the pool without clearing them: each
/// round reduces new data of the same shapes, so a partial slot the first pass failed to write
/// would bring the previous round's value into this round's result.
#[test]
fn reductions_in_a_row_on_the_same_shapes() {
    let mut r = rng(316);
    let n = 1 << 20;
    for round in 0..4 {
        let lo = [0.0f32, -3.0, 2.0, -0.5][round];
        let x = rand_f32(&mut r, n, lo, lo + 1.0);
        let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let ctx = format!("round {round}");
        let a = Array::from_slice(&x, &[n]);
        let exact: f64 = xf.iter().sum();
        let sabs: f64 = xf.iter().map(|v| v.abs()).sum();
        assert_within(
            &[item(&a.sum())],
            &[exact],
            &[sum_tol::<f32>(exact, n, sabs)],
            &format!("{ctx}: sum"),
        );
        let max = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(item(&a.max()), max, "{ctx}: max");
        let min = x.iter().cloned().fold(f32::INFINITY, f32::min);
        assert_eq!(
            item(&a.argmin()),
            x.iter().position(|&v| v == min).unwrap() as u32,
            "{ctx}: argmin"
        );
        let shape = [1024usize, 1024];
        let m = Array::from_slice(&x, &shape);
        for ax in 0..2 {
            let (_, w) = reduce_oracle(&xf, &shape, &[ax], 0.0, |s, _, v| s + v);
            let (_, wabs) = reduce_oracle(&xf, &shape, &[ax], 0.0, |s, _, v| s + v.abs());
            let tol: Vec<f64> = w
                .iter()
                .zip(&wabs)
                .map(|(s, sa)| sum_tol::<f32>(*s, 1024, *sa))
                .collect();
            assert_within(
                &read(&m.sum_axis(ax)),
                &w,
                &tol,
                &format!("{ctx}: sum_axis({ax})"),
            );
        }
    }
}

/// Reductions of fused producers and of views.
#[test]
fn reductions_of_expressions_and_views() {
    let mut r = rng(315);
    let (m, n) = (37, 53);
    let x = rand_f64(&mut r, m * n, -2.0, 2.0);
    let y = rand_f64(&mut r, m * n, -2.0, 2.0);
    let (a, b) = (
        Array::from_slice(&x, &[m, n]),
        Array::from_slice(&y, &[m, n]),
    );
    let e: Vec<f64> = x.iter().zip(&y).map(|(p, q)| p * q + 1.0).collect();
    let rel = 1e-13;
    for ax in 0..2 {
        let (_, w) = reduce_oracle(&e, &[m, n], &[ax], 0.0, |s, _, v| s + v);
        assert_close(
            &read(&(&a * &b + 1.0).sum_axis(ax)),
            &w,
            rel,
            1e-13,
            &format!("(a*b+1).sum_axis({ax})"),
        );
    }
    // The max of the values the CPU executor's exp gives (`primitives/vmath.rs`; within an ulp of
    // the C library's), so the reduction's exactness is what is checked.
    let ex: Vec<f64> = x
        .iter()
        .map(|&v| arrayflow::primitives::vmath::exp_f64(v))
        .collect();
    let (_, w) = reduce_oracle(&ex, &[m, n], &[0], f64::NEG_INFINITY, |s, _, v| s.max(v));
    assert_exact_f(&read(&a.exp().max_axis(0)), &w, "exp(a).max_axis(0)");
    // Transposed input: sum over axis 0 of a^T is the row sum of a.
    let (_, w) = reduce_oracle(&x, &[m, n], &[1], 0.0, |s, _, v| s + v);
    assert_close(
        &read(&a.transpose().sum_axis(0)),
        &w,
        rel,
        1e-13,
        "a^T.sum_axis(0)",
    );
    // Sliced input.
    let sl = a.slice(&[(2..30).into(), arrayflow::Slice::step(.., 3)]);
    let sel = vec![(2..30).collect::<Vec<_>>(), (0..n).step_by(3).collect()];
    let (sshape, sv) = slice_oracle(&x, &[m, n], &sel);
    let (_, w) = reduce_oracle(&sv, &sshape, &[0], 0.0, |s, _, v| s + v);
    assert_close(&read(&sl.sum_axis(0)), &w, rel, 1e-13, "slice.sum_axis(0)");
    // Broadcast input: a row broadcast to m rows, summed over rows, is m * row.
    let row = Array::from_slice(&y[..n], &[n]);
    let w: Vec<f64> = y[..n].iter().map(|v| v * m as f64).collect();
    assert_close(
        &read(&row.broadcast_to(&[m, n]).sum_axis(0)),
        &w,
        rel,
        1e-13,
        "broadcast.sum_axis(0)",
    );
    // A reduction feeding element-wise ops: centering rows.
    let (_, rs) = reduce_oracle(&x, &[m, n], &[1], 0.0, |s, _, v| s + v);
    let centered = &a - &a.mean_axis(1).reshape(&[m, 1]);
    let w: Vec<f64> = (0..m * n).map(|l| x[l] - rs[l / n] / n as f64).collect();
    assert_close(&read(&centered), &w, rel, 1e-13, "a - mean_axis(1)");
    // Two reductions of one expression in the same flush.
    let c = &a * 2.0;
    let (s0, s1) = (c.sum_axis(0), c.max_axis(1));
    let (_, w0) = reduce_oracle(&x, &[m, n], &[0], 0.0, |s, _, v| s + 2.0 * v);
    let (_, w1) = reduce_oracle(&x, &[m, n], &[1], f64::NEG_INFINITY, |s, _, v| {
        s.max(2.0 * v)
    });
    assert_close(&read(&s0), &w0, rel, 1e-13, "sibling sum");
    assert_exact_f(&read(&s1), &w1, "sibling max");
}

/// Reductions over zero elements have their identities; sizes of 1 are pass-throughs.
#[test]
fn empty_and_unit_reductions() {
    let e = Array::<f32>::from_slice(&[], &[3, 0]);
    assert_exact_f(&read(&e.sum_axis(1)), &[0.0; 3], "sum over an empty axis");
    assert_exact_f(&read(&e.prod_axis(1)), &[1.0; 3], "prod over an empty axis");
    assert_eq!(
        read(&e.sum_axis(0)).len(),
        0,
        "sum over axis 0 of [3, 0] has 0 elements"
    );
    assert_eq!(item(&e.sum()), 0.0);
    let b = Array::<bool>::from_slice(&[], &[0, 4]);
    assert_same(&read(&b.any_axis(0)), &[false; 4], "any of nothing");
    assert_same(&read(&b.all_axis(0)), &[true; 4], "all of nothing");
    assert!(
        std::panic::catch_unwind(|| Array::<f32>::from_slice(&[], &[0]).max()).is_err(),
        "max of nothing is an error"
    );
    let x = [1.5f32, -2.0, 3.0];
    let a = Array::from_slice(&x, &[3, 1]);
    assert_exact_f(&read(&a.sum_axis(1)), &x, "sum over a unit axis");
    assert_same(
        &read(&a.argmax_axis(1)),
        &[0, 0, 0],
        "argmax over a unit axis",
    );
    let s = Array::scalar(4.5f64);
    assert_eq!(item(&s.sum()), 4.5, "sum of a 0-d array");
    assert_eq!(item(&s.max()), 4.5, "max of a 0-d array");
}

/// Special values in reductions: NaN and infinities propagate through sums and products; all -inf
/// (or +inf) arrays have max/argmax at the first element; an f32 sum whose partial sums exceed the
/// f32 range but whose total does not is exact thanks to f64 accumulation.
#[test]
fn reductions_with_special_values() {
    let a = Array::from_slice(&[1.0f32, f32::NAN, 2.0, 3.0], &[2, 2]);
    assert!(item(&a.sum()).is_nan(), "sum with NaN");
    assert!(item(&a.prod()).is_nan(), "prod with NaN");
    assert!(item(&a.mean()).is_nan(), "mean with NaN");
    let s = read(&a.sum_axis(1));
    assert!(
        s[0].is_nan() && s[1] == 5.0,
        "sum_axis(1) with one NaN row: {s:?}"
    );
    let b = Array::from_slice(&[f64::INFINITY, 1.0, f64::NEG_INFINITY, 1.0], &[4]);
    assert!(item(&b.sum()).is_nan(), "inf + -inf");
    assert_eq!(
        item(&b.slice(&[(0..2).into()]).sum()),
        f64::INFINITY,
        "sum with +inf"
    );
    assert_eq!(item(&b.max()), f64::INFINITY);
    assert_eq!(item(&b.min()), f64::NEG_INFINITY);
    assert_eq!(item(&b.argmin()), 2);
    let ninf = Array::full(&[5], f32::NEG_INFINITY);
    assert_eq!(item(&ninf.max()), f32::NEG_INFINITY, "max of all -inf");
    assert_eq!(item(&ninf.argmax()), 0, "argmax of all -inf");
    let d = Array::from_slice(&[f64::NEG_INFINITY; 6], &[2, 3]);
    assert_same(
        &read(&d.argmax_axis(1)),
        &[0, 0],
        "argmax_axis of all -inf rows",
    );
    let pinf = Array::from_slice(&[f32::INFINITY; 6], &[3, 2]);
    assert_same(
        &read(&pinf.argmin_axis(0)),
        &[0, 0],
        "argmin_axis of all +inf columns",
    );
    assert_eq!(item(&pinf.min()), f32::INFINITY, "min of all +inf");
    // NaN in a later tile than the maximum: argmax is the NaN's index.
    let mut x = vec![0.0f32; 20_000];
    x[10] = 9.0;
    x[15_000] = f32::NAN;
    x[18_000] = f32::NAN;
    let big = Array::from_slice(&x, &[20_000]);
    assert_eq!(
        item(&big.argmax()),
        15_000,
        "first NaN wins argmax across tiles"
    );
    assert_eq!(
        item(&big.argmin()),
        15_000,
        "first NaN wins argmin across tiles"
    );
    assert!(item(&big.max()).is_nan(), "max with a NaN in a later tile");
    // f32 values whose running f32 sum would overflow: 3e38 + 3e38 - 3e38 = 3e38.
    let o = Array::from_slice(&[3e38f32, 3e38, -3e38], &[3]);
    if several_devices() {
        // Placement picks the executor: f64 accumulation, or f32 on wgpu.
        let s = item(&o.sum());
        assert!(s == 3e38 || s == f32::INFINITY, "{s}");
    } else if f32_sums_in_f32() {
        // wgpu (no f64 in WGSL) accumulates in f32: the partial sum overflows, as documented.
        assert_eq!(item(&o.sum()), f32::INFINITY, "f32 accumulation overflows");
    } else {
        assert_eq!(
            item(&o.sum()),
            3e38,
            "f64 accumulation avoids intermediate overflow"
        );
    }
    // A product beyond the f32 range is inf.
    let p = Array::from_slice(&[1e30f32, 1e30, 1e-30, 1e30], &[4]);
    assert_eq!(
        item(&p.prod()),
        ((1e30f32 as f64) * (1e30f32 as f64) * (1e-30f32 as f64) * (1e30f32 as f64)) as f32,
        "prod via f64"
    );
    let q = Array::from_slice(&[1e30f32, 1e30], &[2]);
    assert_eq!(item(&q.prod()), f32::INFINITY, "prod overflowing f32");
}

// ---------------------------------------------------------------------------------------------
// Short and long reduced extents, along the last axis and along the first (a strided domain).
// On the CPU executor float sums and products must equal, bit for bit, an independent statement
// of the grouping rule (README "How evaluation works"): the reduced elements of one output, in
// domain order, are cut where the domain's linear index is a multiple of 1024; each piece sums in
// eight lanes (chunks of 8 from the piece's start, lanes then added in order, the rest one by one,
// in f64); pieces combine in order starting from the identity. Whatever ARRAYFLOW_TILE and tier
// (run this file with ARRAYFLOW_TILE=2048 and ARRAYFLOW_NATIVE=off / require too).

const EXTENTS: &[usize] = &[1, 2, 3, 7, 8, 16, 1000, 1023, 1025, 5000];

/// The extents a test walks: all of them on the CPU executor, whose short-axis and row-order
/// paths they exercise; one on a device executor, where each shape and op is a program the driver
/// compiles (on PoCL the full set took 20 minutes) and the device's reductions have their own
/// tests above; a short, a tile-crossing and a long one under comparison mode, which interprets
/// every op again (the full walk took three minutes there; the other CPU stages walk it all).
fn extents() -> &'static [usize] {
    if any_device() {
        &[8]
    } else if comparison_mode() {
        &[3, 1025, 5000]
    } else {
        EXTENTS
    }
}

/// Columns of the axis-0 cases (fewer on a device executor and under comparison mode, as
/// [`extents`]).
fn columns() -> &'static [usize] {
    if any_device() {
        &[3]
    } else if comparison_mode() {
        &[3, 33]
    } else {
        &[2, 3, 8, 16, 33]
    }
}

/// The grouping rule over `d` (the domain's values in order), segments of `inner`, in f64.
fn grouped(d: &[f64], inner: usize, prod: bool) -> Vec<f64> {
    let id = if prod { 1.0 } else { 0.0 };
    let op = |a: f64, b: f64| if prod { a * b } else { a + b };
    (0..d.len() / inner)
        .map(|o| {
            let (mut pos, end) = (o * inner, (o + 1) * inner);
            let mut total = id;
            while pos < end {
                let cut = ((pos / 1024 + 1) * 1024).min(end);
                let piece = &d[pos..cut];
                let mut lanes = [id; 8];
                let whole = piece.len() / 8 * 8;
                for (k, &x) in piece[..whole].iter().enumerate() {
                    lanes[k % 8] = op(lanes[k % 8], x);
                }
                let mut p = lanes[0];
                for &l in &lanes[1..] {
                    p = op(p, l);
                }
                for &x in &piece[whole..] {
                    p = op(p, x);
                }
                total = op(total, p);
                pos = cut;
            }
            total
        })
        .collect()
}

/// The domain order of reducing axis `axis` of a [rows, cols] array: kept axis first.
fn domain_order<T: Copy>(x: &[T], rows: usize, cols: usize, axis: usize) -> Vec<T> {
    if axis == 1 {
        x.to_vec()
    } else {
        (0..cols)
            .flat_map(|c| (0..rows).map(move |r| x[r * cols + c]))
            .collect()
    }
}

/// Extrema and positions of each segment (first NaN wins; first of equals).
fn seg_extrema(d: &[f64], inner: usize) -> Vec<[f64; 4]> {
    d.chunks(inner)
        .map(|s| {
            let (mut mx, mut mn, mut ax, mut an) = (s[0], s[0], 0, 0);
            for (k, &v) in s.iter().enumerate() {
                if mx.is_nan() || mn.is_nan() {
                    break;
                }
                if v.is_nan() {
                    (mx, mn, ax, an) = (v, v, k, k);
                    break;
                }
                if v > mx {
                    (mx, ax) = (v, k);
                }
                if v < mn {
                    (mn, an) = (v, k);
                }
            }
            [mx, mn, ax as f64, an as f64]
        })
        .collect()
}

/// The shapes tested for reduced extent `inner`: [outer, inner] along axis 1 and [inner, outer]
/// along axis 0 (outer odd, the domain large enough for several tiles and threads).
fn extent_cases(inner: usize) -> Vec<(usize, usize, usize)> {
    let outer = ((100_000 / inner) | 1).max(3);
    vec![(outer, inner, 1), (inner, outer, 0)]
}

fn short_axis_floats<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    for &inner in extents() {
        for (rows, cols, axis) in extent_cases(inner) {
            let n = rows * cols;
            let outer = n / inner;
            let mut xf = rand_f64(&mut r, n, -4.0, 4.0);
            // Values near 1 for products; NaN in a few segments for extrema.
            let pf: Vec<f64> = rand_f64(&mut r, n, 0.995, 1.005);
            let mut nf = xf.clone();
            for k in 0..(n / 997).max(1) {
                nf[(k * 7919 + 3) % n] = f64::NAN;
            }
            // Ties, so "first of equals" matters.
            for v in xf.iter_mut().step_by(5) {
                *v = v.round();
            }
            let x: Vec<T> = conv(&xf);
            let p: Vec<T> = conv(&pf);
            let nn: Vec<T> = conv(&nf);
            let ctx = format!("{} [{rows}, {cols}] axis {axis}", T::name());
            let to64 = |v: &[T]| -> Vec<f64> {
                domain_order(
                    &v.iter().map(|t| t.to()).collect::<Vec<_>>(),
                    rows,
                    cols,
                    axis,
                )
            };
            let (a, pa, na) = (
                Array::from_slice(&x, &[rows, cols]),
                Array::from_slice(&p, &[rows, cols]),
                Array::from_slice(&nn, &[rows, cols]),
            );
            let (dx, dp, dn) = (to64(&x), to64(&p), to64(&nn));
            // Sums, means and products: the grouping rule, bit for bit on the CPU.
            let sum: Vec<T> = conv(&grouped(&dx, inner, false));
            let prod: Vec<T> = conv(&grouped(&dp, inner, true));
            let got_sum = read(&a.sum_axis(axis));
            let got_prod = read(&pa.prod_axis(axis));
            let got_mean = read(&a.mean_axis(axis));
            let mean: Vec<T> = sum
                .iter()
                // An f32 quotient rounded from f64 is the correctly rounded f32 quotient.
                .map(|&s| T::of(s.to() / inner as f64))
                .collect();
            if any_device() {
                let exact = grouped(&dx, inner, false);
                let sabs = grouped(
                    &dx.iter().map(|v| v.abs()).collect::<Vec<_>>(),
                    inner,
                    false,
                );
                for o in 0..outer {
                    let tol = 2.0 * T::EPS * exact[o].abs() + 8.0 * inner as f64 * T::EPS * sabs[o];
                    assert!(
                        (got_sum[o].to() - exact[o]).abs() <= tol,
                        "{ctx}: sum [{o}] {:?} vs {}",
                        got_sum[o],
                        exact[o]
                    );
                }
            } else {
                assert_bits_f(&got_sum, &sum, &format!("{ctx}: sum"));
                assert_bits_f(&got_prod, &prod, &format!("{ctx}: prod"));
                assert_bits_f(&got_mean, &mean, &format!("{ctx}: mean"));
            }
            // Extrema and their positions, with and without NaN: exact.
            for (arr, d, what) in [(&a, &dx, "plain"), (&na, &dn, "with NaN")] {
                let e = seg_extrema(d, inner);
                let col = |k: usize| -> Vec<f64> { e.iter().map(|v| v[k]).collect() };
                let idx = |k: usize| -> Vec<u32> { e.iter().map(|v| v[k] as u32).collect() };
                assert_exact_f(
                    &read(&arr.max_axis(axis)),
                    &conv::<T>(&col(0)),
                    &format!("{ctx} {what}: max"),
                );
                assert_exact_f(
                    &read(&arr.min_axis(axis)),
                    &conv::<T>(&col(1)),
                    &format!("{ctx} {what}: min"),
                );
                assert_same(
                    &read(&arr.argmax_axis(axis)),
                    &idx(2),
                    &format!("{ctx} {what}: argmax"),
                );
                assert_same(
                    &read(&arr.argmin_axis(axis)),
                    &idx(3),
                    &format!("{ctx} {what}: argmin"),
                );
            }
        }
    }
}

#[test]
fn short_and_long_axis_floats_f32() {
    short_axis_floats::<f32>(901);
}

#[test]
fn short_and_long_axis_floats_f64() {
    short_axis_floats::<f64>(902);
}

#[test]
fn short_and_long_axis_ints_and_bools() {
    let mut r = rng(903);
    for &inner in extents() {
        for (rows, cols, axis) in extent_cases(inner) {
            let n = rows * cols;
            let ctx = format!("[{rows}, {cols}] axis {axis}");
            let xi: Vec<i32> = rand_i32_any(&mut r, n)
                .into_iter()
                .enumerate()
                .map(|(k, v)| if k % 3 == 0 { v % 4 } else { v })
                .collect();
            let xu: Vec<u32> = rand_u32(&mut r, n, 0, 9);
            let xb = rand_bool(&mut r, n, if inner > 100 { 0.999 } else { 0.5 });
            let (di, du, db) = (
                domain_order(&xi, rows, cols, axis),
                domain_order(&xu, rows, cols, axis),
                domain_order(&xb, rows, cols, axis),
            );
            let ai = Array::from_slice(&xi, &[rows, cols]);
            let au = Array::from_slice(&xu, &[rows, cols]);
            let ab = Array::from_slice(&xb, &[rows, cols]);
            let seg_i = |f: fn(i32, i32) -> i32| -> Vec<i32> {
                di.chunks(inner)
                    .map(|s| s[1..].iter().fold(s[0], |a, &b| f(a, b)))
                    .collect()
            };
            let seg_u = |f: fn(u32, u32) -> u32| -> Vec<u32> {
                du.chunks(inner)
                    .map(|s| s[1..].iter().fold(s[0], |a, &b| f(a, b)))
                    .collect()
            };
            assert_same(
                &read(&ai.sum_axis(axis)),
                &seg_i(i32::wrapping_add),
                &format!("{ctx}: i32 sum"),
            );
            assert_same(
                &read(&ai.prod_axis(axis)),
                &seg_i(i32::wrapping_mul),
                &format!("{ctx}: i32 prod"),
            );
            assert_same(
                &read(&ai.max_axis(axis)),
                &seg_i(i32::max),
                &format!("{ctx}: i32 max"),
            );
            assert_same(
                &read(&ai.min_axis(axis)),
                &seg_i(i32::min),
                &format!("{ctx}: i32 min"),
            );
            assert_same(
                &read(&au.sum_axis(axis)),
                &seg_u(u32::wrapping_add),
                &format!("{ctx}: u32 sum"),
            );
            assert_same(
                &read(&au.prod_axis(axis)),
                &seg_u(u32::wrapping_mul),
                &format!("{ctx}: u32 prod"),
            );
            assert_same(
                &read(&au.max_axis(axis)),
                &seg_u(u32::max),
                &format!("{ctx}: u32 max"),
            );
            assert_same(
                &read(&au.min_axis(axis)),
                &seg_u(u32::min),
                &format!("{ctx}: u32 min"),
            );
            let first = |d: &[i64], max: bool| -> Vec<u32> {
                d.chunks(inner)
                    .map(|s| {
                        let mut b = 0;
                        for (k, &v) in s.iter().enumerate() {
                            if (max && v > s[b]) || (!max && v < s[b]) {
                                b = k;
                            }
                        }
                        b as u32
                    })
                    .collect()
            };
            let wi: Vec<i64> = di.iter().map(|&v| v as i64).collect();
            let wu: Vec<i64> = du.iter().map(|&v| v as i64).collect();
            assert_same(
                &read(&ai.argmax_axis(axis)),
                &first(&wi, true),
                &format!("{ctx}: i32 argmax"),
            );
            assert_same(
                &read(&ai.argmin_axis(axis)),
                &first(&wi, false),
                &format!("{ctx}: i32 argmin"),
            );
            assert_same(
                &read(&au.argmax_axis(axis)),
                &first(&wu, true),
                &format!("{ctx}: u32 argmax"),
            );
            assert_same(
                &read(&au.argmin_axis(axis)),
                &first(&wu, false),
                &format!("{ctx}: u32 argmin"),
            );
            let any: Vec<bool> = db.chunks(inner).map(|s| s.iter().any(|&b| b)).collect();
            let all: Vec<bool> = db.chunks(inner).map(|s| s.iter().all(|&b| b)).collect();
            assert_same(&read(&ab.any_axis(axis)), &any, &format!("{ctx}: any"));
            assert_same(&read(&ab.all_axis(axis)), &all, &format!("{ctx}: all"));
        }
    }
}

// Reductions over outer and middle axes ([A, R, B] reducing R with B > 1), which the CPU walks in
// the input's row order: the same grouping rule as above, bit for bit, on odd extents; extrema,
// positions, integer sums and any/all exact; fused producers (an expression, a one-hot cast).

/// The domain order of reducing the middle axis of [a, r, b]: kept elements (a, b) in order, each
/// with its `r` values.
fn middle_order<T: Copy>(x: &[T], a: usize, r: usize, b: usize) -> Vec<T> {
    let mut d = Vec::with_capacity(x.len());
    for i in 0..a {
        for j in 0..b {
            d.extend((0..r).map(|k| x[(i * r + k) * b + j]));
        }
    }
    d
}

/// The shapes and axes tested: axis 0 of [rows, cols] for each extent, and middle axes.
fn outer_cases() -> Vec<(Vec<usize>, usize, [usize; 3])> {
    let mut v = Vec::new();
    for &rows in extents() {
        for &cols in columns() {
            v.push((vec![rows, cols], 0, [1, rows, cols]));
        }
    }
    if any_device() {
        return v; // the CPU's row bands and tasks; see `extents`
    }
    // Large enough for several tasks and threads (row bands of one `a`); under comparison mode
    // only the smallest of them (see `extents`).
    v.push((vec![40_000, 5], 0, [1, 40_000, 5]));
    if !comparison_mode() {
        v.push((vec![70_001, 16], 0, [1, 70_001, 16]));
        v.push((vec![50, 3000, 7], 1, [50, 3000, 7]));
        v.push((vec![2, 40_000, 9], 1, [2, 40_000, 9]));
    }
    v.push((vec![3, 1025, 2], 1, [3, 1025, 2]));
    v.push((vec![4, 7, 5], 1, [4, 7, 5]));
    v.push((vec![2, 3, 5, 7], 1, [2, 3, 35]));
    // Wide rows (up to and past the widest walked in row order).
    v.push((vec![20, 4096], 0, [1, 20, 4096]));
    v.push((vec![17, 5000], 0, [1, 17, 5000]));
    v
}

fn outer_axis_floats<T: TestFloat>(seed: u64) {
    let mut r = rng(seed);
    for (shape, axis, [na, nr, nb]) in outer_cases() {
        let n = na * nr * nb;
        let mut xf = rand_f64(&mut r, n, -4.0, 4.0);
        for v in xf.iter_mut().step_by(5) {
            *v = v.round();
        }
        let pf = rand_f64(&mut r, n, 0.995, 1.005);
        let mut nf = xf.clone();
        for k in 0..(n / 997).max(1) {
            nf[(k * 7919 + 3) % n] = f64::NAN;
        }
        let (x, p, nn): (Vec<T>, Vec<T>, Vec<T>) = (conv(&xf), conv(&pf), conv(&nf));
        let ctx = format!("{} {shape:?} axis {axis}", T::name());
        let to64 = |v: &[T]| -> Vec<f64> {
            middle_order(&v.iter().map(|t| t.to()).collect::<Vec<_>>(), na, nr, nb)
        };
        let (a, pa, nan) = (
            Array::from_slice(&x, &shape),
            Array::from_slice(&p, &shape),
            Array::from_slice(&nn, &shape),
        );
        let (dx, dp) = (to64(&x), to64(&p));
        let sum: Vec<T> = conv(&grouped(&dx, nr, false));
        let prod: Vec<T> = conv(&grouped(&dp, nr, true));
        // A fused producer: (x * 2 + 1) summed, grouped the same way.
        let dx2: Vec<f64> = x
            .iter()
            .map(|&v| {
                let t: T = T::of(v.to() * 2.0);
                T::of(t.to() + 1.0).to()
            })
            .collect();
        let expr: Vec<T> = conv(&grouped(&middle_order(&dx2, na, nr, nb), nr, false));
        if any_device() {
            let exact = grouped(&dx, nr, false);
            let got = read(&a.sum_axis(axis));
            for (o, w) in exact.iter().enumerate() {
                let s: f64 = dx[o * nr..(o + 1) * nr].iter().map(|v| v.abs()).sum();
                let tol = 2.0 * T::EPS * w.abs() + 8.0 * nr as f64 * T::EPS * s;
                assert!((got[o].to() - w).abs() <= tol, "{ctx}: sum [{o}]");
            }
        } else {
            assert_bits_f(&read(&a.sum_axis(axis)), &sum, &format!("{ctx}: sum"));
            assert_bits_f(&read(&pa.prod_axis(axis)), &prod, &format!("{ctx}: prod"));
            let mean: Vec<T> = sum.iter().map(|&s| T::of(s.to() / nr as f64)).collect();
            assert_bits_f(&read(&a.mean_axis(axis)), &mean, &format!("{ctx}: mean"));
            let two = a.clone() * T::of(2.0) + T::of(1.0);
            assert_bits_f(
                &read(&two.sum_axis(axis)),
                &expr,
                &format!("{ctx}: expr sum"),
            );
        }
        for (arr, d, what) in [(&a, dx.clone(), "plain"), (&nan, to64(&nn), "with NaN")] {
            let e = seg_extrema(&d, nr);
            let col = |k: usize| -> Vec<f64> { e.iter().map(|v| v[k]).collect() };
            let idx = |k: usize| -> Vec<u32> { e.iter().map(|v| v[k] as u32).collect() };
            let c = format!("{ctx} {what}");
            assert_exact_f(
                &read(&arr.max_axis(axis)),
                &conv::<T>(&col(0)),
                &format!("{c}: max"),
            );
            assert_exact_f(
                &read(&arr.min_axis(axis)),
                &conv::<T>(&col(1)),
                &format!("{c}: min"),
            );
            assert_same(
                &read(&arr.argmax_axis(axis)),
                &idx(2),
                &format!("{c}: argmax"),
            );
            assert_same(
                &read(&arr.argmin_axis(axis)),
                &idx(3),
                &format!("{c}: argmin"),
            );
        }
    }
}

#[test]
fn outer_and_middle_axis_floats_f32() {
    outer_axis_floats::<f32>(911);
}

#[test]
fn outer_and_middle_axis_floats_f64() {
    outer_axis_floats::<f64>(912);
}

#[test]
fn outer_and_middle_axis_ints_bools_and_onehot() {
    let mut r = rng(913);
    for (shape, axis, [na, nr, nb]) in outer_cases() {
        let n = na * nr * nb;
        let ctx = format!("{shape:?} axis {axis}");
        let xi: Vec<i32> = rand_i32_any(&mut r, n)
            .into_iter()
            .enumerate()
            .map(|(k, v)| if k % 3 == 0 { v % 4 } else { v })
            .collect();
        let xu: Vec<u32> = rand_u32(&mut r, n, 0, 9);
        let xb = rand_bool(&mut r, n, if nr > 100 { 0.999 } else { 0.5 });
        let (di, du, db) = (
            middle_order(&xi, na, nr, nb),
            middle_order(&xu, na, nr, nb),
            middle_order(&xb, na, nr, nb),
        );
        let (ai, au, ab) = (
            Array::from_slice(&xi, &shape),
            Array::from_slice(&xu, &shape),
            Array::from_slice(&xb, &shape),
        );
        let seg = |d: &[i64], f: &dyn Fn(i64, i64) -> i64| -> Vec<i64> {
            d.chunks(nr)
                .map(|s| s[1..].iter().fold(s[0], |a, &b| f(a, b)))
                .collect()
        };
        let wi: Vec<i64> = di.iter().map(|&v| v as i64).collect();
        let wu: Vec<i64> = du.iter().map(|&v| v as i64).collect();
        let as_i32 = |v: Vec<i64>| -> Vec<i32> { v.into_iter().map(|x| x as i32).collect() };
        let as_u32 = |v: Vec<i64>| -> Vec<u32> { v.into_iter().map(|x| x as u32).collect() };
        let add_i = |a: i64, b: i64| (a as i32).wrapping_add(b as i32) as i64;
        let mul_i = |a: i64, b: i64| (a as i32).wrapping_mul(b as i32) as i64;
        let add_u = |a: i64, b: i64| (a as u32).wrapping_add(b as u32) as i64;
        let mul_u = |a: i64, b: i64| (a as u32).wrapping_mul(b as u32) as i64;
        assert_same(
            &read(&ai.sum_axis(axis)),
            &as_i32(seg(&wi, &add_i)),
            &format!("{ctx}: i32 sum"),
        );
        assert_same(
            &read(&ai.prod_axis(axis)),
            &as_i32(seg(&wi, &mul_i)),
            &format!("{ctx}: i32 prod"),
        );
        assert_same(
            &read(&ai.max_axis(axis)),
            &as_i32(seg(&wi, &i64::max)),
            &format!("{ctx}: i32 max"),
        );
        assert_same(
            &read(&ai.min_axis(axis)),
            &as_i32(seg(&wi, &i64::min)),
            &format!("{ctx}: i32 min"),
        );
        assert_same(
            &read(&au.sum_axis(axis)),
            &as_u32(seg(&wu, &add_u)),
            &format!("{ctx}: u32 sum"),
        );
        assert_same(
            &read(&au.prod_axis(axis)),
            &as_u32(seg(&wu, &mul_u)),
            &format!("{ctx}: u32 prod"),
        );
        assert_same(
            &read(&au.max_axis(axis)),
            &as_u32(seg(&wu, &i64::max)),
            &format!("{ctx}: u32 max"),
        );
        assert_same(
            &read(&au.min_axis(axis)),
            &as_u32(seg(&wu, &i64::min)),
            &format!("{ctx}: u32 min"),
        );
        let first = |d: &[i64], max: bool| -> Vec<u32> {
            d.chunks(nr)
                .map(|s| {
                    let mut b = 0;
                    for (k, &v) in s.iter().enumerate() {
                        if (max && v > s[b]) || (!max && v < s[b]) {
                            b = k;
                        }
                    }
                    b as u32
                })
                .collect()
        };
        assert_same(
            &read(&ai.argmax_axis(axis)),
            &first(&wi, true),
            &format!("{ctx}: i32 argmax"),
        );
        assert_same(
            &read(&ai.argmin_axis(axis)),
            &first(&wi, false),
            &format!("{ctx}: i32 argmin"),
        );
        assert_same(
            &read(&au.argmax_axis(axis)),
            &first(&wu, true),
            &format!("{ctx}: u32 argmax"),
        );
        assert_same(
            &read(&au.argmin_axis(axis)),
            &first(&wu, false),
            &format!("{ctx}: u32 argmin"),
        );
        let any: Vec<bool> = db.chunks(nr).map(|s| s.iter().any(|&b| b)).collect();
        let all: Vec<bool> = db.chunks(nr).map(|s| s.iter().all(|&b| b)).collect();
        assert_same(&read(&ab.any_axis(axis)), &any, &format!("{ctx}: any"));
        assert_same(&read(&ab.all_axis(axis)), &all, &format!("{ctx}: all"));
        // One-hot counts (k-means): a comparison with the values, cast to f32, summed; exact.
        let onehot = au.eq(3u32).cast::<f32>();
        let want: Vec<f32> = du
            .chunks(nr)
            .map(|s| s.iter().filter(|&&v| v == 3).count() as f32)
            .collect();
        assert_same(
            &read(&onehot.sum_axis(axis)),
            &want,
            &format!("{ctx}: one-hot count"),
        );
    }
}

/// A product of many factors overflows long before its end; with a zero factor the product is 0
/// however the executor splits the work (a blocked product met `0 * inf = NaN`: fuzz seed
/// 795674356508). With a zero and a NaN or infinite factor it is NaN, as in any order in IEEE
/// arithmetic. Oracle: the sequential product in f64 with the zero handled first.
#[test]
fn product_with_a_zero_factor_and_an_overflow() {
    for n in [1000usize, 65_600, 300_001] {
        for zero_at in [0, n / 2, n - 1] {
            // Factors 1.5 and -2.0 alternating (the running product overflows f32 and f64), one zero.
            let v: Vec<f32> = (0..n)
                .map(|i| {
                    if i == zero_at {
                        0.0
                    } else if i % 2 == 0 {
                        1.5
                    } else {
                        -2.0
                    }
                })
                .collect();
            let a = Array::from_vec(v.clone(), &[n]);
            assert_eq!(
                a.prod().to_vec().unwrap(),
                vec![0.0],
                "n {n}, zero at {zero_at}"
            );
            if n % 2 == 0 {
                let b =
                    Array::from_vec(v.iter().map(|&x| x as f64).collect::<Vec<_>>(), &[2, n / 2]);
                let rows = b.prod_axis(1).to_vec().unwrap();
                for (r, &got) in rows.iter().enumerate() {
                    let row = &v[r * (n / 2)..(r + 1) * (n / 2)];
                    let want: f64 = if row.contains(&0.0) {
                        0.0
                    } else {
                        row.iter().map(|&x| x as f64).product()
                    };
                    let ok = got == want || ((got - want) / want).abs() < 1e-12;
                    assert!(
                        ok,
                        "row {r}, n {n}, zero at {zero_at}: {got} against {want}"
                    );
                }
            }
        }
    }
    let with_inf = Array::from_vec(vec![3.0f32, 0.0, 2.0, f32::INFINITY], &[2, 2]);
    let r = with_inf.prod_axis(0).to_vec().unwrap();
    assert!(r[0] == 6.0 && r[1].is_nan(), "{r:?}");
    assert!(with_inf.prod().to_vec().unwrap()[0].is_nan());
    let with_nan = Array::from_vec(vec![f64::NAN, 0.0, 5.0], &[3]);
    assert!(with_nan.prod().to_vec().unwrap()[0].is_nan());
    let iota = Array::<f32>::iota(&[65_600], 0);
    assert_eq!(iota.prod().to_vec().unwrap(), vec![0.0]);
}

/// Sums along an axis of 2 to 4 elements are recorded as element-wise adds (so they fuse with
/// what reads them): the same value as the reduction, bit for bit on the CPU (in order from
/// `+0.0`, f32 accumulated in f64), with signed zeros, infinities and NaN (`tests/fusion.rs`
/// checks that k-means' distances then fuse into their `argmin`).
#[test]
fn short_axis_sums_fuse_and_keep_the_reductions_value() {
    let mut r = rng(77);
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e30,
        -1e30,
        1e-30,
    ];
    for len in 2..=4usize {
        for axis in 0..3 {
            let mut shape = vec![7usize, 5, 6];
            shape[axis] = len;
            let n = numel(&shape);
            let mut v = rand_f64(&mut r, n, -10.0, 10.0);
            for (i, x) in v.iter_mut().enumerate() {
                if i % 5 == 0 {
                    *x = specials[(i / 5) % specials.len()];
                }
            }
            // Rows whose terms are all -0.0: the sum is +0.0 (the reductions start from +0.0).
            for x in v.iter_mut().take(len * 6) {
                *x = -0.0;
            }
            let strides = [shape[1] * shape[2], shape[2], 1];
            let out: Vec<usize> = (0..3).filter(|&x| x != axis).map(|x| shape[x]).collect();
            let mut want = Vec::new();
            for i in 0..out[0] {
                for j in 0..out[1] {
                    let mut acc = 0.0f64;
                    for k in 0..len {
                        let mut at = [0usize; 3];
                        let o: Vec<usize> = (0..3).filter(|&x| x != axis).collect();
                        at[o[0]] = i;
                        at[o[1]] = j;
                        at[axis] = k;
                        acc += v[at[0] * strides[0] + at[1] * strides[1] + at[2]] as f32 as f64;
                    }
                    want.push(acc);
                }
            }
            let x32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            let got32 = Array::from_vec(x32, &shape)
                .sum_axis(axis)
                .to_vec()
                .unwrap();
            let got64 = Array::from_vec(
                v.iter().map(|&x| x as f32 as f64).collect::<Vec<f64>>(),
                &shape,
            )
            .sum_axis(axis)
            .to_vec()
            .unwrap();
            for (i, w) in want.iter().enumerate() {
                let ctx = format!("len {len}, axis {axis}, [{i}]");
                if any_device() {
                    let tol = 1e-6 * w.abs() + 1e-30;
                    let ok = |g: f64| (g - w).abs() <= tol || (g.is_nan() && w.is_nan()) || g == *w;
                    assert!(ok(got32[i] as f64), "{ctx}: f32 {} vs {w}", got32[i]);
                } else {
                    assert_eq!(got32[i].to_bits(), (*w as f32).to_bits(), "{ctx}: f32");
                    assert_eq!(got64[i].to_bits(), w.to_bits(), "{ctx}: f64");
                }
            }
        }
    }
}
