//! Batched small-matrix `solve`, `inv` and `lu` (`intrinsics/linalg/batched/`: one work-group
//! per matrix on the OpenCL and wgpu executors; the CPU entry elsewhere) on the executor
//! `ARRAYFLOW_DEVICE` picks, against f64 oracles written here: the residual
//! `|A x - b|_inf / (|A|_inf |x|_inf)` within `RESIDUAL * n * eps` (eps of the element type),
//! `P L U = A` within the same multiple relative to `|L| |U|`, and the pivots of an f64 Gaussian
//! elimination choosing the first largest |pivot| (LAPACK's rule). Shapes: n in {1, 2, 3, 8, 17,
//! 33, 64}, batches of 1 to 300, several right-hand sides, batch axes that broadcast; singular
//! matrices in the middle of a batch (the error names that index, the pivot and this file's
//! line); NaN in, NaN out. On a device executor each call whose matrix fits the kernels' local
//! memory ran there (`Runtime::stats()`: a device kernel, no CPU fallback), so these tests
//! check the device kernels and not the CPU fallback (`solve` and `inv` unless
//! `ARRAYFLOW_LINALG_GPU_SOLVE=off`, see `intrinsics/linalg/batched/mod.rs`). Stats are process-wide: tests here run one at a time (`SERIAL`).

mod common;

use arrayflow::{Backend, Runtime, linalg};
use common::linalg::*;
use common::*;
use parking_lot::Mutex;
use rand::rngs::StdRng;

static SERIAL: Mutex<()> = Mutex::new(());

/// The oracle's interchanges: f64 elimination with partial pivoting, first largest |pivot|.
fn oracle_pivots(a: &[f64], n: usize) -> Vec<usize> {
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
    piv
}

/// Whether the batched kernels take `n x n` matrices of `T` on this process's executor (the
/// local memory budgets of `intrinsics/linalg/batched/mod.rs`; f64 on wgpu runs on the CPU
/// executor, not as a fallback).
fn on_device_kernel<T: F>(n: usize) -> bool {
    device_fits::<T>(n)
}

/// As [`on_device_kernel`] for `solve` and `inv`, which `ARRAYFLOW_LINALG_GPU_SOLVE=off` keeps
/// on the CPU (`intrinsics/linalg/batched/mod.rs`).
fn on_device_solve<T: F>(n: usize) -> bool {
    std::env::var("ARRAYFLOW_LINALG_GPU_SOLVE").map_or(true, |v| v != "off" && v != "0")
        && device_fits::<T>(n)
}

fn device_fits<T: F>(n: usize) -> bool {
    match common::the_device() {
        Backend::OpenCl => !T::F64 || n <= 62,
        Backend::Wgpu => !T::F64 && n <= 61,
        Backend::Cpu => false,
    }
}

/// Runs `f` and checks that on a device executor it ran device kernels and none of its programs
/// fell back to the CPU (where the kernels take the shape).
#[track_caller]
fn on_device<T: F, R>(n: usize, what: &str, f: impl FnOnce() -> R) -> R {
    checked(on_device_kernel::<T>(n), what, f)
}

/// [`on_device`] for `solve` and `inv`.
#[track_caller]
fn solve_on_device<T: F, R>(n: usize, what: &str, f: impl FnOnce() -> R) -> R {
    checked(on_device_solve::<T>(n), what, f)
}

/// The sizes and batch counts walked (fewer under comparison mode, which interprets every op
/// again in f64).
fn cases() -> Vec<(usize, usize)> {
    let all = [
        (1, 300),
        (2, 37),
        (3, 1),
        (3, 300),
        (8, 100),
        (17, 13),
        (33, 5),
        (64, 3),
    ];
    if comparison_mode() {
        all.iter().copied().filter(|&(_, b)| b <= 37).collect()
    } else {
        all.to_vec()
    }
}

fn solves<T: F>(seed: u64) {
    let _g = SERIAL.lock();
    let mut rng = rng(seed);
    for (n, count) in cases() {
        for r in [1usize, 3, n + 2] {
            let a = values::<T>(&mut rng, count * n * n);
            let b = values::<T>(&mut rng, count * n * r);
            let what = format!("solve {count} x {n}x{n}, r = {r}");
            let x = solve_on_device::<T, _>(n, &what, || {
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
        // inv: A inv(A) = I, column by column.
        let a = values::<T>(&mut rng, count * n * n);
        let what = format!("inv {count} x {n}x{n}");
        let x = solve_on_device::<T, _>(n, &what, || {
            f64s(&read(&upload::<T>(&a, &[count, n, n]).inv()))
        });
        let mut id = vec![0.0; n * n];
        for i in 0..n {
            id[i * n + i] = 1.0;
        }
        for m in 0..count {
            let s = m * n * n..(m + 1) * n * n;
            check_residual::<T>(&a[s.clone()], &x[s], &id, n, n, &format!("{what}, {m}"));
        }
    }
}

#[test]
fn batched_solve_and_inv_have_small_residuals_f32() {
    solves::<f32>(2101);
}

#[test]
fn batched_solve_and_inv_have_small_residuals_f64() {
    solves::<f64>(2102);
}

/// Batch axes broadcast: `a [2, 1, n, n]` with `b [3, n, r]`, one matrix against a batch of
/// right-hand sides, a batch against one vector.
#[test]
fn batched_solve_broadcasts_the_batch_axes() {
    let _g = SERIAL.lock();
    let mut rng = rng(2103);
    for n in [3usize, 8, 17] {
        let r = 2;
        let a = values::<f32>(&mut rng, 2 * n * n);
        let b = values::<f32>(&mut rng, 3 * n * r);
        let x = solve_on_device::<f32, _>(n, "a [2, 1] b [3]", || {
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
                    &format!("broadcast n = {n} ({i}, {j})"),
                );
            }
        }
        // One matrix, a batch of right-hand sides.
        let x = solve_on_device::<f32, _>(n, "a [n, n] b [3]", || {
            f64s(&read(&linalg::solve(
                &upload::<f32>(&a[..n * n], &[n, n]),
                &upload::<f32>(&b, &[3, n, r]),
            )))
        });
        for j in 0..3 {
            let k = j * n * r;
            check_residual::<f32>(
                &a[..n * n],
                &x[k..k + n * r],
                &b[k..k + n * r],
                n,
                r,
                "one matrix",
            );
        }
        // A batch of matrices, one vector.
        let x = solve_on_device::<f32, _>(n, "a [2] b [n]", || {
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
}

fn factors<T: F>(seed: u64) {
    let _g = SERIAL.lock();
    let mut rng = rng(seed);
    for (n, count) in cases() {
        let count = count.min(40);
        let a = values::<T>(&mut rng, count * n * n);
        let what = format!("lu {count} x {n}x{n}");
        let (f, piv) = on_device::<T, _>(n, &what, || {
            let (lu, piv) = linalg::lu(&upload::<T>(&a, &[count, n, n]));
            (f64s(&read(&lu)), read(&piv))
        });
        for m in 0..count {
            let s = m * n * n..(m + 1) * n * n;
            let pm = &piv[m * n..(m + 1) * n];
            check_lu::<T>(
                &f[s.clone()],
                pm,
                &a[s.clone()],
                n,
                &format!("{what}, matrix {m}"),
            );
            // The interchanges follow LAPACK's rule (f64: no near ties on random data).
            if T::F64 {
                let got: Vec<usize> = pm.iter().map(|&x| x as usize).collect();
                assert_eq!(got, oracle_pivots(&a[s], n), "{what}, matrix {m}: pivots");
            }
        }
    }
}

#[test]
fn batched_lu_reconstructs_the_matrices_f32() {
    factors::<f32>(2104);
}

#[test]
fn batched_lu_reconstructs_the_matrices_f64() {
    factors::<f64>(2105);
}

/// A batch of `count` random `n x n` matrices whose matrix `bad` has a zero column `n / 2`:
/// elimination meets an exact zero pivot there, whatever the order of its operations (the
/// column stays zero), so the CPU and the device agree on the pivot.
fn with_singular(rng: &mut StdRng, count: usize, n: usize, bad: usize) -> Vec<f64> {
    let mut a = values::<f32>(rng, count * n * n);
    let m = &mut a[bad * n * n..(bad + 1) * n * n];
    for i in 0..n {
        m[i * n + n / 2] = 0.0;
    }
    a
}

/// A singular matrix in the middle of a batch fails `solve` and `inv` with the CPU's error:
/// the batch index, the pivot and this file's line; `lu` of it is not an error and its factors
/// still reproduce it.
#[test]
fn a_singular_matrix_in_a_batch_names_its_index_and_pivot() {
    let _g = SERIAL.lock();
    let mut rng = rng(2106);
    for (n, count, bad) in [(3usize, 200usize, 117usize), (8, 50, 31), (33, 4, 2)] {
        let a = with_singular(&mut rng, count, n, bad);
        let b = values::<f32>(&mut rng, count * n);
        Runtime::execute();
        let before = Runtime::stats();
        let line = line!() + 1;
        let x = linalg::solve(
            &upload::<f32>(&a, &[count, n, n]),
            &upload::<f32>(&b, &[count, n, 1]),
        );
        let e = x.to_vec().unwrap_err().to_string();
        // On a device the kernel ran (and faulted: the CPU ran the call again for its error).
        let d = Runtime::stats().since(&before);
        if on_device_solve::<f32>(n) {
            assert!(d.device.kernels > 0, "no device kernel ran: {d:?}");
        }
        assert!(
            e.contains("singular") && e.contains(&format!("matrix {bad} of the batch")),
            "n = {n}: {e}"
        );
        assert!(e.contains("pivot "), "{e}");
        assert!(e.contains(&format!("linalg_gpu_batched.rs:{line}")), "{e}");
        assert!(e.contains(&format!("at pivot {}", n / 2)), "{e}");
        let am = upload::<f32>(&a, &[count, n, n]);
        let line = line!() + 1;
        let inv = am.inv();
        let e = inv.to_vec().unwrap_err().to_string();
        assert!(
            e.contains(&format!("matrix {bad} of the batch"))
                && e.contains(&format!("linalg_gpu_batched.rs:{line}")),
            "{e}"
        );
        // lu: factors of every matrix, the singular one included (the device kernel's).
        let (f, piv) = on_device::<f32, _>(n, "lu of a singular matrix", || {
            let (lu, piv) = linalg::lu(&upload::<f32>(&a, &[count, n, n]));
            (f64s(&read(&lu)), read(&piv))
        });
        let s = bad * n * n..(bad + 1) * n * n;
        check_lu::<f32>(
            &f[s.clone()],
            &piv[bad * n..(bad + 1) * n],
            &a[s.clone()],
            n,
            "lu",
        );
        let u = &f[s];
        assert!((0..n).any(|k| u[k * n + k] == 0.0), "U has no zero pivot");
    }
}

/// NaN in one matrix: its solution is NaN, the others of the batch are unaffected; no hang.
#[test]
fn nan_in_one_matrix_stays_in_that_matrix() {
    let _g = SERIAL.lock();
    let mut rng = rng(2107);
    let (n, count) = (8, 20);
    let mut a = values::<f32>(&mut rng, count * n * n);
    a[5 * n * n + 9] = f64::NAN;
    let b = values::<f32>(&mut rng, count * n);
    let x = solve_on_device::<f32, _>(n, "NaN solve", || {
        f64s(&read(&linalg::solve(
            &upload::<f32>(&a, &[count, n, n]),
            &upload::<f32>(&b, &[count, n, 1]),
        )))
    });
    for m in 0..count {
        let xm = &x[m * n..(m + 1) * n];
        if m == 5 {
            assert!(xm.iter().any(|v| v.is_nan()), "{xm:?}");
        } else {
            check_residual::<f32>(
                &a[m * n * n..(m + 1) * n * n],
                xm,
                &b[m * n..(m + 1) * n],
                n,
                1,
                &format!("matrix {m}"),
            );
        }
    }
}
