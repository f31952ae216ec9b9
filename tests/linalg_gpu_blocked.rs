//! The blocked GPU LU (`intrinsics/linalg/blocked/`: `lu`, `solve` and `inv` of matrices larger
//! than 64, `det` and `slogdet` of every size, on the OpenCL and wgpu executors; the CPU entry
//! elsewhere) on the executor `ARRAYFLOW_DEVICE` picks, against f64 oracles written here:
//! `P L U = A` within `RESIDUAL * n * eps` relative to `|L| |U|` with `|L| <= 1`, the
//! interchanges of an f64 elimination choosing the first largest |pivot| (f64), the residual
//! `|A x - b|_inf / (|A|_inf |x|_inf)` within `RESIDUAL * n * eps`, `det` against the product
//! of the pivots of the same matrix's `lu` taken in f64 (within `4 n eps`, the mantissa
//! product's rounding) and against an f64 elimination of `A` (within `RESIDUAL * n * eps`
//! times `sum |A^-1|^T .* |A|`, the first-order change of `det` under a backward error of that
//! size). Sizes 65, 127, 200 (panels of 32) and 257 (panels of 64, a last panel of one
//! column), batches, broadcast batch axes, several right-hand sides; a singular matrix in a
//! batch names its index, its pivot and this file's line. On a device executor each call ran
//! device kernels and none fell back to the CPU (`Runtime::stats()`). Stats are process-wide:
//! tests here run one at a time (`SERIAL`).

mod common;

use arrayflow::{Backend, Runtime, linalg};
use common::linalg::*;
use common::*;
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Whether the blocked kernels take calls of `T` here (WGSL has no f64).
fn on_blocked<T: F>() -> bool {
    let off = |k: &str| std::env::var(k).is_ok_and(|v| v == "off" || v == "0");
    !off("ARRAYFLOW_LINALG_GPU_BLOCKED")
        && match common::the_device() {
            Backend::OpenCl => true,
            Backend::Wgpu => !T::F64,
            Backend::Cpu => false,
        }
}

/// As [`on_blocked`] for `solve` and `inv` (`ARRAYFLOW_LINALG_GPU_SOLVE=off` keeps them on the
/// CPU).
fn solve_on_blocked<T: F>() -> bool {
    on_blocked::<T>()
        && std::env::var("ARRAYFLOW_LINALG_GPU_SOLVE").map_or(true, |v| v != "off" && v != "0")
}

/// The sizes walked with their batch counts (fewer under comparison mode, which interprets
/// every op again in f64).
fn cases() -> Vec<(usize, usize)> {
    // 520: register panels (n >= 512).
    let all = [(65, 2), (127, 3), (200, 1), (257, 1), (520, 1)];
    if comparison_mode() {
        all[..2].to_vec()
    } else {
        all.to_vec()
    }
}

/// f64 elimination with partial pivoting, first largest |pivot|: factors and interchanges.
fn oracle_lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>) {
    let mut f = a.to_vec();
    let mut piv = vec![0; n];
    for k in 0..n {
        let mut p = k;
        for i in k..n {
            if f[i * n + k].abs() > f[p * n + k].abs() {
                p = i;
            }
        }
        piv[k] = p;
        for j in 0..n {
            f.swap(k * n + j, p * n + j);
        }
        if f[k * n + k] == 0.0 {
            continue;
        }
        for i in k + 1..n {
            f[i * n + k] /= f[k * n + k];
            for j in k + 1..n {
                f[i * n + j] -= f[i * n + k] * f[k * n + j];
            }
        }
    }
    (f, piv)
}

fn factors<T: F>(seed: u64) {
    let _g = SERIAL.lock();
    let mut rng = rng(seed);
    for (n, count) in cases() {
        let a = values::<T>(&mut rng, count * n * n);
        let what = format!("lu {count} x {n}x{n}");
        let (f, piv) = checked(on_blocked::<T>(), &what, || {
            let (lu, piv) = linalg::lu(&upload::<T>(&a, &[count, n, n]));
            (f64s(&read(&lu)), read(&piv))
        });
        for m in 0..count {
            let s = m * n * n..(m + 1) * n * n;
            let pm = &piv[m * n..(m + 1) * n];
            check_lu::<T>(&f[s.clone()], pm, &a[s.clone()], n, &format!("{what}, {m}"));
            if T::F64 {
                let got: Vec<usize> = pm.iter().map(|&x| x as usize).collect();
                assert_eq!(got, oracle_lu(&a[s], n).1, "{what}, matrix {m}: pivots");
            }
        }
    }
}

#[test]
fn blocked_lu_reconstructs_the_matrices_f32() {
    factors::<f32>(2201);
}

#[test]
fn blocked_lu_reconstructs_the_matrices_f64() {
    factors::<f64>(2202);
}

fn solves<T: F>(seed: u64) {
    let _g = SERIAL.lock();
    let mut rng = rng(seed);
    // One or three right-hand sides by turns (each shape is a plan to compile on PoCL).
    for (i, (n, count)) in cases().into_iter().enumerate() {
        for r in [[1usize, 3][i % 2]] {
            let a = values::<T>(&mut rng, count * n * n);
            let b = values::<T>(&mut rng, count * n * r);
            let what = format!("solve {count} x {n}x{n}, r = {r}");
            let x = checked(solve_on_blocked::<T>(), &what, || {
                f64s(&read(&linalg::solve(
                    &upload::<T>(&a, &[count, n, n]),
                    &upload::<T>(&b, &[count, n, r]),
                )))
            });
            for m in 0..count {
                check_residual::<T>(
                    &a[m * n * n..(m + 1) * n * n],
                    &x[m * n * r..(m + 1) * n * r],
                    &b[m * n * r..(m + 1) * n * r],
                    n,
                    r,
                    &format!("{what}, matrix {m}"),
                );
            }
        }
    }
    // inv: A inv(A) = I.
    for n in [130usize] {
        let a = values::<T>(&mut rng, n * n);
        let what = format!("inv {n}x{n}");
        let x = checked(solve_on_blocked::<T>(), &what, || {
            f64s(&read(&upload::<T>(&a, &[n, n]).inv()))
        });
        let mut id = vec![0.0; n * n];
        for i in 0..n {
            id[i * n + i] = 1.0;
        }
        check_residual::<T>(&a, &x, &id, n, n, &what);
    }
}

#[test]
fn blocked_solve_and_inv_have_small_residuals_f32() {
    solves::<f32>(2203);
}

#[test]
fn blocked_solve_and_inv_have_small_residuals_f64() {
    solves::<f64>(2204);
}

/// `a [2, 1, n, n]` with `b [3, n, r]`; a batch of matrices against one vector.
#[test]
fn blocked_solve_broadcasts_the_batch_axes() {
    let _g = SERIAL.lock();
    let mut rng = rng(2205);
    let (n, r) = (70usize, 2usize);
    let a = values::<f32>(&mut rng, 2 * n * n);
    let b = values::<f32>(&mut rng, 3 * n * r);
    let x = checked(solve_on_blocked::<f32>(), "a [2, 1] b [3]", || {
        let x = linalg::solve(
            &upload::<f32>(&a, &[2, 1, n, n]),
            &upload::<f32>(&b, &[3, n, r]),
        );
        assert_eq!(x.shape(), &[2, 3, n, r]);
        f64s(&read(&x))
    });
    for i in 0..2 {
        for j in 0..3 {
            let k = (i * 3 + j) * n * r;
            check_residual::<f32>(
                &a[i * n * n..(i + 1) * n * n],
                &x[k..k + n * r],
                &b[j * n * r..(j + 1) * n * r],
                n,
                r,
                &format!("broadcast ({i}, {j})"),
            );
        }
    }
    let x = checked(solve_on_blocked::<f32>(), "a [2] b [n]", || {
        f64s(&read(
            &upload::<f32>(&a, &[2, n, n]).solve(&upload::<f32>(&b[..n], &[n])),
        ))
    });
    for i in 0..2 {
        check_residual::<f32>(
            &a[i * n * n..(i + 1) * n * n],
            &x[i * n..(i + 1) * n],
            &b[..n],
            n,
            1,
            "one vector",
        );
    }
}

/// `sum |A^-1|^T .* |A|` in f64: how much a relative backward error of one in every element of
/// `A` changes `log |det A|` to first order.
fn det_condition(a: &[f64], n: usize) -> f64 {
    let (f, piv) = oracle_lu(a, n);
    let mut inv = vec![0.0; n * n];
    for c in 0..n {
        let mut x = vec![0.0; n];
        x[c] = 1.0;
        for (k, &p) in piv.iter().enumerate() {
            x.swap(k, p);
        }
        for i in 0..n {
            for t in 0..i {
                x[i] -= f[i * n + t] * x[t];
            }
        }
        for i in (0..n).rev() {
            for t in i + 1..n {
                x[i] -= f[i * n + t] * x[t];
            }
            x[i] /= f[i * n + i];
        }
        for i in 0..n {
            inv[i * n + c] = x[i];
        }
    }
    (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| inv[j * n + i].abs() * a[i * n + j].abs())
        .sum()
}

/// `det` and `slogdet` of small (one panel) and large matrices, batched: against the product of
/// the pivots of the same matrices' `lu` in f64, and against an f64 elimination.
fn dets<T: F>(seed: u64) {
    let _g = SERIAL.lock();
    let mut rng = rng(seed);
    for (n, count) in [(1usize, 5usize), (3, 40), (100, 2), (257, 1)] {
        if comparison_mode() && n > 100 {
            continue;
        }
        let a = values::<T>(&mut rng, count * n * n);
        let what = format!("det {count} x {n}x{n}");
        let (det, sign, logdet) = checked(on_blocked::<T>(), &what, || {
            let m = upload::<T>(&a, &[count, n, n]);
            let (s, l) = linalg::slogdet(&m);
            (
                f64s(&read(&linalg::det(&m))),
                f64s(&read(&s)),
                f64s(&read(&l)),
            )
        });
        let (f, piv) = {
            let (lu, piv) = linalg::lu(&upload::<T>(&a, &[count, n, n]));
            (f64s(&read(&lu)), read(&piv))
        };
        for m in 0..count {
            let ctx = format!("{what}, matrix {m}");
            let fm = &f[m * n * n..(m + 1) * n * n];
            let swaps = (0..n).filter(|&k| piv[m * n + k] as usize != k).count();
            let pivots: f64 = (0..n).map(|k| fm[k * n + k]).product::<f64>()
                * if swaps % 2 == 0 { 1.0 } else { -1.0 };
            let tight = 4.0 * n as f64 * T::EPS;
            // Past the type's range the product (and the CPU's f64 one, rounded) is infinite.
            let want: f64 = T::of(pivots).into();
            if !want.is_finite() {
                assert_eq!(det[m], want, "{ctx}: det out of range");
            }
            assert!(
                !want.is_finite() || (det[m] - pivots).abs() <= tight * pivots.abs(),
                "{ctx}: det {} against the pivots' product {pivots}",
                det[m]
            );
            // The oracle: sign and log |det| of an f64 elimination.
            let am = &a[m * n * n..(m + 1) * n * n];
            let (of, op) = oracle_lu(am, n);
            let osign = (0..n).fold(1.0, |s, k| {
                s * of[k * n + k].signum() * if op[k] != k { -1.0 } else { 1.0 }
            });
            let olog: f64 = (0..n).map(|k| of[k * n + k].abs().ln()).sum();
            let bound = RESIDUAL * n as f64 * T::EPS * det_condition(am, n);
            assert_eq!(sign[m], osign, "{ctx}: sign");
            assert!(
                (logdet[m] - olog).abs() <= bound + 2.0 * T::EPS * olog.abs(),
                "{ctx}: log |det| {} against {olog} (bound {bound:e})",
                logdet[m]
            );
            assert!(
                !want.is_finite()
                    || (det[m] - osign * olog.exp()).abs() <= (bound + tight) * olog.exp() * 1.5,
                "{ctx}: det {} against {}",
                det[m],
                osign * olog.exp()
            );
        }
    }
}

#[test]
fn blocked_det_and_slogdet_match_the_pivots_f32() {
    dets::<f32>(2206);
}

#[test]
fn blocked_det_and_slogdet_match_the_pivots_f64() {
    dets::<f64>(2207);
}

/// A batch of random `n x n` matrices whose matrix `bad` has a zero column `z`: elimination meets
/// an exact zero pivot at `z` whatever the order of its operations.
fn with_singular(count: usize, n: usize, bad: usize, z: usize, seed: u64) -> Vec<f64> {
    let mut a = values::<f32>(&mut rng(seed), count * n * n);
    let m = &mut a[bad * n * n..(bad + 1) * n * n];
    for i in 0..n {
        m[i * n + z] = 0.0;
    }
    a
}

/// A singular matrix in a batch fails `solve` and `inv` with the CPU's error (its batch index,
/// the pivot, this file's line); its `lu` still reproduces it and its `det` is 0.
#[test]
fn a_singular_matrix_names_its_index_and_pivot() {
    let _g = SERIAL.lock();
    for (n, count, bad, z) in [(80usize, 3usize, 1usize, 40usize), (100, 2, 0, 70)] {
        let a = with_singular(count, n, bad, z, 2208 + n as u64);
        let b = values::<f32>(&mut rng(2210), count * n);
        Runtime::execute();
        let before = Runtime::stats();
        let line = line!() + 1;
        let x = linalg::solve(
            &upload::<f32>(&a, &[count, n, n]),
            &upload::<f32>(&b, &[count, n, 1]),
        );
        let e = x.to_vec().unwrap_err().to_string();
        let d = Runtime::stats().since(&before);
        if solve_on_blocked::<f32>() {
            assert!(d.device.kernels > 0, "no device kernel ran: {d:?}");
        }
        assert!(
            e.contains("singular") && e.contains(&format!("matrix {bad} of the batch")),
            "n = {n}: {e}"
        );
        assert!(e.contains(&format!("at pivot {z}")), "{e}");
        assert!(e.contains(&format!("linalg_gpu_blocked.rs:{line}")), "{e}");
        let line = line!() + 1;
        let inv = upload::<f32>(&a, &[count, n, n]).inv();
        let e = inv.to_vec().unwrap_err().to_string();
        assert!(
            e.contains(&format!("matrix {bad} of the batch"))
                && e.contains(&format!("linalg_gpu_blocked.rs:{line}")),
            "{e}"
        );
        let (f, piv, det) = checked(on_blocked::<f32>(), "lu of a singular matrix", || {
            let m = upload::<f32>(&a, &[count, n, n]);
            let (lu, piv) = linalg::lu(&m);
            (f64s(&read(&lu)), read(&piv), f64s(&read(&linalg::det(&m))))
        });
        let packed = &f[bad * n * n..(bad + 1) * n * n];
        check_lu::<f32>(
            packed,
            &piv[bad * n..(bad + 1) * n],
            &a[bad * n * n..(bad + 1) * n * n],
            n,
            "lu",
        );
        assert_eq!(det[bad], 0.0, "det of the singular matrix");
        assert!(packed[z * n + z] == 0.0, "U has no zero pivot at {z}");
    }
}
