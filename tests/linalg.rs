//! Dense linear algebra (`arrayflow::linalg`, `intrinsics/linalg/`) on the executor
//! `ARRAYFLOW_DEVICE` picks (CI runs this file on each, and in comparison mode; the GPU
//! executors run the CPU entry from host copies for now), against oracles written here in f64:
//! a Gaussian elimination with partial pivoting (first largest |pivot|), triangular products and
//! exact inverses. Data are seeded random matrices (entries in [-1, 1), odd sizes 1, 3, 17, 65,
//! batches whose batch axes broadcast); Hilbert matrices for the condition estimate.
//! QR and least squares: tall, wide, square and 1x1 shapes, checked by `Q R = A`, `Q^T Q = I`,
//! R upper triangular with a non-negative diagonal (which makes the factors unique), and for
//! `lstsq` the residual's orthogonality to A's columns and an f64 normal-equations oracle.
//!
//! Stated tolerances: a solve's residual `|A x - b|_inf / (|A|_inf |x|_inf)` and the
//! reconstructions (`P L U = A`) within `RESIDUAL * n * eps` (eps of the element type), `det`
//! within `n * eps * cond_1(A)` relative (plus a floor), `lu_cond` within a factor 3 of the true
//! reciprocal 1-norm condition number.

mod common;

use arrayflow::{Array, linalg};
use common::linalg::*;
use common::*;
use rand::rngs::StdRng;

/// The oracle: elimination with partial pivoting in f64 (pivot: first largest |value|); the
/// packed factors, interchanges and determinant.
fn oracle_lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>, f64) {
    let mut f = a.to_vec();
    let mut piv = vec![0; n];
    let mut det = 1.0;
    for k in 0..n {
        let mut p = k;
        for i in k..n {
            if f[i * n + k].abs() > f[p * n + k].abs() {
                p = i;
            }
        }
        piv[k] = p;
        if p != k {
            det = -det;
            for j in 0..n {
                f.swap(k * n + j, p * n + j);
            }
        }
        det *= f[k * n + k];
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
    (f, piv, det)
}

/// The exact inverse (f64, Gauss-Jordan on the oracle's factors).
fn oracle_inv(a: &[f64], n: usize) -> Vec<f64> {
    let (f, piv, _) = oracle_lu(a, n);
    let mut x = vec![0.0; n * n];
    for i in 0..n {
        x[i * n + i] = 1.0;
    }
    for (k, &p) in piv.iter().enumerate() {
        for j in 0..n {
            x.swap(k * n + j, p * n + j);
        }
    }
    for c in 0..n {
        for i in 0..n {
            let s: f64 = (0..i).map(|j| f[i * n + j] * x[j * n + c]).sum();
            x[i * n + c] -= s;
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|j| f[i * n + j] * x[j * n + c]).sum();
            x[i * n + c] = (x[i * n + c] - s) / f[i * n + i];
        }
    }
    x
}

fn norm1(a: &[f64], n: usize) -> f64 {
    (0..n)
        .map(|j| (0..n).map(|i| a[i * n + j].abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

fn solves<T: F>(seed: u64) {
    let mut r = rng(seed);
    for &n in &[1usize, 3, 17, 65] {
        // A batch of 3 against one b [n, 2]; the matrix b broadcasts over the batch.
        let a = matrices::<T>(&mut r, 3, n);
        let b: Vec<f64> = matrices::<T>(&mut r, 1, n)[..n * 2.min(n)].to_vec();
        let rr = 2.min(n);
        let x = read(&linalg::solve(
            &upload::<T>(&a, &[3, n, n]),
            &upload::<T>(&b, &[n, rr]),
        ));
        let x = f64s(&x);
        for m in 0..3 {
            check_residual::<T>(
                &a[m * n * n..(m + 1) * n * n],
                &x[m * n * rr..(m + 1) * n * rr],
                &b,
                n,
                rr,
                &format!("solve n={n} matrix {m}"),
            );
        }
        // A vector b, one matrix, and the method form.
        let bv: Vec<f64> = b[..n].to_vec();
        let am = upload::<T>(&a[..n * n], &[n, n]);
        let xv = am.solve(&upload::<T>(&bv, &[n]));
        assert_eq!(xv.shape(), &[n]);
        check_residual::<T>(&a[..n * n], &f64s(&read(&xv)), &bv, n, 1, "solve vector");
        // inv: A * inv(A) = I within the residual bound (column by column).
        let ai = f64s(&read(&am.inv()));
        let mut id = vec![0.0; n * n];
        for i in 0..n {
            id[i * n + i] = 1.0;
        }
        check_residual::<T>(&a[..n * n], &ai, &id, n, n, &format!("inv n={n}"));
    }
}

#[test]
fn solve_and_inv_have_small_residuals_f32() {
    solves::<f32>(1);
}

#[test]
fn solve_and_inv_have_small_residuals_f64() {
    solves::<f64>(2);
}

#[test]
fn batch_axes_broadcast() {
    // a [2, 1, n, n] with b [3, n, r] -> x [2, 3, n, r].
    let mut r = rng(3);
    let (n, rr) = (5, 2);
    let a = matrices::<f64>(&mut r, 2, n);
    let b = rand_f64(&mut r, 3 * n * rr, -1.0, 1.0);
    let x = linalg::solve(
        &upload::<f64>(&a, &[2, 1, n, n]),
        &upload::<f64>(&b, &[3, n, rr]),
    );
    assert_eq!(x.shape(), &[2, 3, n, rr]);
    let x = read(&x);
    for i in 0..2 {
        for j in 0..3 {
            let xs = &x[(i * 3 + j) * n * rr..(i * 3 + j + 1) * n * rr];
            check_residual::<f64>(
                &a[i * n * n..(i + 1) * n * n],
                xs,
                &b[j * n * rr..(j + 1) * n * rr],
                n,
                rr,
                "broadcast solve",
            );
        }
    }
    // lu_solve with the factors of the batch and a vector b shared by all.
    let (lu, piv) = linalg::lu(&upload::<f64>(&a, &[2, n, n]));
    let bv = b[..n].to_vec();
    let x = read(&linalg::lu_solve(&lu, &piv, &upload::<f64>(&bv, &[n])));
    for i in 0..2 {
        check_residual::<f64>(
            &a[i * n * n..(i + 1) * n * n],
            &x[i * n..(i + 1) * n],
            &bv,
            n,
            1,
            "lu_solve",
        );
    }
    // Batch shapes that do not broadcast: an error naming this file.
    let e = linalg::try_solve(
        &upload::<f64>(&a, &[2, n, n]),
        &upload::<f64>(&b, &[3, n, rr]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("broadcast") && e.contains("linalg.rs"), "{e}");
}

fn factors<T: F>(seed: u64) {
    let mut r = rng(seed);
    for &n in &[1usize, 3, 17, 65] {
        let a = matrices::<T>(&mut r, 2, n);
        let (lu, piv) = linalg::lu(&upload::<T>(&a, &[2, n, n]));
        assert_eq!((lu.shape(), piv.shape()), (&[2, n, n][..], &[2, n][..]));
        let (p, l, u) = linalg::lu_unpack(&lu, &piv);
        let (p, l, u) = (f64s(&read(&p)), f64s(&read(&l)), f64s(&read(&u)));
        let pivs = read(&piv);
        let f = f64s(&read(&lu));
        for m in 0..2 {
            let s = m * n * n..(m + 1) * n * n;
            let (pm, lm, um) = (&p[s.clone()], &l[s.clone()], &u[s.clone()]);
            // L unit lower, U upper, both as the packed factors say; P a permutation.
            for i in 0..n {
                for j in 0..n {
                    let e = f[s.start + i * n + j];
                    match i.cmp(&j) {
                        std::cmp::Ordering::Greater => {
                            assert_eq!((lm[i * n + j], um[i * n + j]), (e, 0.0))
                        }
                        std::cmp::Ordering::Equal => {
                            assert_eq!((lm[i * n + j], um[i * n + j]), (1.0, e))
                        }
                        std::cmp::Ordering::Less => {
                            assert_eq!((lm[i * n + j], um[i * n + j]), (0.0, e))
                        }
                    }
                }
                assert_eq!(pm[i * n..(i + 1) * n].iter().sum::<f64>(), 1.0);
            }
            // P L U = A within the bound, relative to |L| |U|.
            let plu = mul(pm, &mul(lm, um, n, n, n), n, n, n);
            let scale = norm_inf(&mul(
                &lm.iter().map(|x| x.abs()).collect::<Vec<_>>(),
                &um.iter().map(|x| x.abs()).collect::<Vec<_>>(),
                n,
                n,
                n,
            ));
            let err = norm_inf(
                &plu.iter()
                    .zip(&a[s.clone()])
                    .map(|(x, y)| x - y)
                    .collect::<Vec<_>>(),
            );
            assert!(
                err <= RESIDUAL * n as f64 * T::EPS * scale,
                "P L U - A = {err:e} (n = {n})"
            );
            // |L| <= 1: partial pivoting.
            assert!(lm.iter().all(|x| x.abs() <= 1.0));
            // f64: the same interchanges as the oracle's (random data: no near ties).
            if T::EPS < 1e-10 {
                let (_, opiv, _) = oracle_lu(&a[s.clone()], n);
                let got: Vec<usize> = pivs[m * n..(m + 1) * n]
                    .iter()
                    .map(|&x| x as usize)
                    .collect();
                assert_eq!(got, opiv, "pivots n = {n}");
            }
        }
    }
}

#[test]
fn lu_reconstructs_the_matrix_f32() {
    factors::<f32>(4);
}

#[test]
fn lu_reconstructs_the_matrix_f64() {
    factors::<f64>(5);
}

fn dets<T: F>(seed: u64) {
    let mut r = rng(seed);
    for &n in &[1usize, 3, 17, 65] {
        let a = matrices::<T>(&mut r, 3, n);
        let x = upload::<T>(&a, &[3, n, n]);
        let d = f64s(&read(&linalg::det(&x)));
        let (sign, logabs) = linalg::slogdet(&x);
        let (sign, logabs) = (f64s(&read(&sign)), f64s(&read(&logabs)));
        for m in 0..3 {
            let am = &a[m * n * n..(m + 1) * n * n];
            let (_, _, want) = oracle_lu(am, n);
            let cond = norm1(am, n) * norm1(&oracle_inv(am, n), n);
            let rel = 4.0 * n as f64 * T::EPS * cond;
            assert!(
                (d[m] - want).abs() <= rel * want.abs() + 1e-300,
                "det n={n}: {} vs {want}",
                d[m]
            );
            assert_eq!(sign[m], want.signum());
            assert!(
                (logabs[m] - want.abs().ln()).abs() <= rel + 1e-12,
                "logabsdet n={n}"
            );
        }
    }
    // A singular matrix: lu is no error, det 0, slogdet (0, -inf).
    let s = upload::<T>(&[1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0], &[3, 3]);
    assert_eq!(f64s(&read(&s.det())), vec![0.0]);
    let (sg, la) = linalg::slogdet(&s);
    assert_eq!(
        (f64s(&read(&sg)), f64s(&read(&la))),
        (vec![0.0], vec![f64::NEG_INFINITY])
    );
    let (lu, _) = linalg::lu(&s);
    assert!(f64s(&read(&lu)).iter().all(|x| x.is_finite()));
}

#[test]
fn det_and_slogdet_match_the_pivot_product_f32() {
    dets::<f32>(6);
}

#[test]
fn det_and_slogdet_match_the_pivot_product_f64() {
    dets::<f64>(7);
}

#[test]
fn hilbert_determinants_and_condition_estimates() {
    for n in 4..=8usize {
        let h: Vec<f64> = (0..n * n)
            .map(|e| 1.0 / ((e / n + e % n + 1) as f64))
            .collect();
        // det(H_n) = c_n^4 / c_2n with c_n = prod_{i<n} i!.
        let fact = |k: usize| (1..=k).map(|x| x as f64).product::<f64>();
        let c = |m: usize| (0..m).map(fact).product::<f64>();
        let want = c(n).powi(4) / c(2 * n);
        let d = read(&linalg::det(&upload::<f64>(&h, &[n, n])))[0];
        let cond = norm1(&h, n) * norm1(&oracle_inv(&h, n), n);
        assert!(
            (d - want).abs() <= 1e-15 * cond * want,
            "det(H_{n}) = {d:e}, want {want:e}"
        );
        let (lu, piv) = linalg::lu(&upload::<f64>(&h, &[n, n]));
        let anorm = Array::from_vec(vec![norm1(&h, n)], &[]);
        let rc = read(&linalg::lu_cond(&lu, &piv, &anorm))[0];
        let truth = 1.0 / cond;
        assert!(
            rc <= 3.0 * truth && rc >= truth / 3.0,
            "rcond(H_{n}) = {rc:e}, true {truth:e}"
        );
    }
}

#[test]
fn singular_matrices_name_the_batch_index_and_pivot() {
    // Matrix 1 of the batch has two equal rows: elimination meets an exact zero at pivot 1.
    let a = vec![
        2.0f64, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0, // fine
        1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 0.0, 0.0, 1.0, // singular
    ];
    let b = vec![1.0f64, 2.0, 3.0];
    let line = line!() + 1;
    let x = linalg::solve(&upload::<f64>(&a, &[2, 3, 3]), &upload::<f64>(&b, &[3]));
    let e = x.to_vec().unwrap_err().to_string();
    assert!(
        e.contains("singular") && e.contains("matrix 1 of the batch"),
        "{e}"
    );
    assert!(e.contains("pivot 1"), "{e}");
    assert!(e.contains(&format!("linalg.rs:{line}")), "{e}");
    // inv and lu_solve likewise (f32).
    let a32 = upload::<f32>(&a, &[2, 3, 3]);
    let e = a32.inv().to_vec().unwrap_err().to_string();
    assert!(
        e.contains("matrix 1 of the batch") && e.contains("linalg.rs"),
        "{e}"
    );
    let (lu, piv) = linalg::lu(&a32);
    let e = linalg::lu_solve(&lu, &piv, &upload::<f32>(&b, &[3]))
        .to_vec()
        .unwrap_err()
        .to_string();
    assert!(e.contains("singular") && e.contains("matrix 1"), "{e}");
    // One 2-D matrix: no batch index to name.
    let e = linalg::solve(&upload::<f64>(&a[9..], &[3, 3]), &upload::<f64>(&b, &[3]))
        .to_vec()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the matrix is singular") && e.contains("pivot 1"),
        "{e}"
    );
}

#[test]
fn nan_in_nan_out() {
    let mut a = matrices::<f64>(&mut rng(8), 1, 4);
    a[5] = f64::NAN;
    let x = read(&linalg::solve(
        &upload::<f64>(&a, &[4, 4]),
        &upload::<f64>(&[1.0; 4], &[4]),
    ));
    assert!(x.iter().any(|v| v.is_nan()), "{x:?}");
    assert!(read(&linalg::det(&upload::<f32>(&a, &[4, 4])))[0].is_nan());
}

#[test]
fn shape_and_type_errors_name_the_line() {
    let a = Array::<f64>::ones(&[2, 3]);
    let e = linalg::try_inv(&a).unwrap_err().to_string();
    assert!(e.contains("not square") && e.contains("linalg.rs"), "{e}");
    let v = Array::<f64>::ones(&[3]);
    let e = linalg::try_det(&v).unwrap_err().to_string();
    assert!(e.contains("not a matrix") && e.contains("linalg.rs"), "{e}");
    let sq = Array::<f64>::ones(&[3, 3]);
    let e = linalg::try_solve(&sq, &Array::<f64>::ones(&[4]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows") && e.contains("linalg.rs"), "{e}");
    let (lu, piv) = linalg::lu(&sq);
    let e = linalg::try_lu_solve(&lu, &piv.slice(&[(0..2).into()]), &Array::<f64>::ones(&[3]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("pivots") && e.contains("linalg.rs"), "{e}");
}

/// A random symmetric positive-definite matrix: `M M^T + n I`, rounded to `T`.
fn spd<T: F>(r: &mut StdRng, n: usize) -> Vec<f64> {
    let m = rand_f64(r, n * n, -1.0, 1.0);
    let mut a = mul(&m, &transpose(&m, n), n, n, n);
    for i in 0..n {
        a[i * n + i] += n as f64;
    }
    a.into_iter().map(|x| T::of(x).into()).collect()
}

fn transpose(a: &[f64], n: usize) -> Vec<f64> {
    (0..n * n).map(|e| a[(e % n) * n + e / n]).collect()
}

fn choleskys<T: F>(seed: u64) {
    let mut r = rng(seed);
    for &n in &[1usize, 3, 17, 65] {
        let a: Vec<f64> = (0..2).flat_map(|_| spd::<T>(&mut r, n)).collect();
        let x = upload::<T>(&a, &[2, n, n]);
        let l = f64s(&read(&linalg::cholesky(&x)));
        let b = rand_f64(&mut r, n, -1.0, 1.0)
            .into_iter()
            .map(|v| T::of(v).into())
            .collect::<Vec<f64>>();
        let sol = f64s(&read(&linalg::cholesky_solve(
            &x.cholesky(),
            &upload::<T>(&b, &[n]),
        )));
        for m in 0..2 {
            let s = m * n * n..(m + 1) * n * n;
            let lm = &l[s.clone()];
            assert!(
                (0..n).all(|i| (i + 1..n).all(|j| lm[i * n + j] == 0.0) && lm[i * n + i] > 0.0)
            );
            let llt = mul(lm, &transpose(lm, n), n, n, n);
            let err = norm_inf(
                &llt.iter()
                    .zip(&a[s.clone()])
                    .map(|(p, q)| p - q)
                    .collect::<Vec<_>>(),
            );
            assert!(
                err <= RESIDUAL * n as f64 * T::EPS * norm_inf(&a[s.clone()]),
                "L L^T - A = {err:e} (n = {n})"
            );
            check_residual::<T>(
                &a[s],
                &sol[m * n..(m + 1) * n],
                &b,
                n,
                1,
                &format!("cholesky_solve n={n}"),
            );
        }
    }
}

#[test]
fn cholesky_reconstructs_and_solves_f32() {
    choleskys::<f32>(9);
}

#[test]
fn cholesky_reconstructs_and_solves_f64() {
    choleskys::<f64>(10);
}

#[test]
fn cholesky_of_an_indefinite_matrix_names_the_pivot() {
    let mut r = rng(11);
    let mut a: Vec<f64> = (0..3).flat_map(|_| spd::<f64>(&mut r, 4)).collect();
    // Matrix 2: its (1, 1) entry made too small, so the second pivot is negative.
    a[2 * 16 + 5] = -50.0;
    let line = line!() + 1;
    let l = linalg::cholesky(&upload::<f64>(&a, &[3, 4, 4]));
    let e = l.to_vec().unwrap_err().to_string();
    assert!(
        e.contains("not positive definite") && e.contains("matrix 2 of the batch"),
        "{e}"
    );
    assert!(
        e.contains("pivot 1") && e.contains(&format!("linalg.rs:{line}")),
        "{e}"
    );
    // NaN in, NaN out.
    a[2 * 16 + 5] = f64::NAN;
    let l = read(&linalg::cholesky(&upload::<f32>(&a, &[3, 4, 4])));
    assert!(l[32..].iter().all(|v| v.is_nan()) && l[..32].iter().all(|v| v.is_finite()));
}

fn triangulars<T: F>(seed: u64) {
    let mut r = rng(seed);
    for &n in &[1usize, 3, 17, 65] {
        // Random triangles with a diagonal of 2 and -3, garbage in the other triangle.
        let mut a = matrices::<T>(&mut r, 1, n);
        for i in 0..n {
            a[i * n + i] = T::of(if i % 2 == 0 { 2.0 } else { -3.0 }).into();
        }
        let b = matrices::<T>(&mut r, 1, n)[..n * 2.min(n)].to_vec();
        let rr = 2.min(n);
        for (upper, unit) in [(false, false), (true, false), (false, true), (true, true)] {
            let x = f64s(&read(&linalg::triangular_solve(
                &upload::<T>(&a, &[n, n]),
                &upload::<T>(&b, &[n, rr]),
                upper,
                unit,
            )));
            // The triangle the solve reads (the other one is garbage).
            let mut tt = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    if i == j {
                        tt[i * n + j] = if unit { 1.0 } else { a[i * n + j] };
                    } else if (j > i) == upper {
                        tt[i * n + j] = a[i * n + j];
                    }
                }
            }
            check_residual::<T>(
                &tt,
                &x,
                &b,
                n,
                rr,
                &format!("triangular n={n} upper={upper} unit={unit}"),
            );
        }
    }
}

#[test]
fn triangular_solves_have_small_residuals_f32() {
    triangulars::<f32>(12);
}

#[test]
fn triangular_solves_have_small_residuals_f64() {
    triangulars::<f64>(13);
}

#[test]
fn triangular_solve_with_a_zero_on_the_diagonal_is_an_error() {
    let a = vec![1.0f64, 0.0, 0.0, 2.0, 0.0, 0.0, 1.0, 1.0, 1.0];
    let e = linalg::triangular_solve(
        &upload::<f64>(&a, &[3, 3]),
        &upload::<f64>(&[1.0; 3], &[3]),
        false,
        false,
    )
    .to_vec()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("singular") && e.contains("pivot 1") && e.contains("linalg.rs"),
        "{e}"
    );
    // With a unit diagonal the zero is not read.
    let x = read(&linalg::triangular_solve(
        &upload::<f64>(&a, &[3, 3]),
        &upload::<f64>(&[1.0; 3], &[3]),
        false,
        true,
    ));
    assert_eq!(x, vec![1.0, -1.0, 1.0]);
}

/// `a^T [n, m]` of `a [m, n]`.
fn transpose_mn(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    (0..n * m).map(|e| a[(e % m) * n + e / m]).collect()
}

fn norm_fro(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Checks `Q R = A`, `Q^T Q = I` and R's form for each matrix of a `[count, m, n]` batch.
#[track_caller]
fn check_qr<T: F>(a: &[f64], q: &[f64], r: &[f64], count: usize, m: usize, n: usize, ctx: &str) {
    let k = m.min(n);
    let bound = RESIDUAL * m.max(n) as f64 * T::EPS;
    for i in 0..count {
        let (ai, qi, ri) = (
            &a[i * m * n..(i + 1) * m * n],
            &q[i * m * k..(i + 1) * m * k],
            &r[i * k * n..(i + 1) * k * n],
        );
        let qr = mul(qi, ri, m, k, n);
        let diff: Vec<f64> = qr.iter().zip(ai).map(|(p, q)| p - q).collect();
        let rel = norm_fro(&diff) / norm_fro(ai).max(f64::MIN_POSITIVE);
        assert!(
            rel <= bound,
            "{ctx} #{i}: |QR - A| / |A| = {rel:e} over {bound:e}"
        );
        let qtq = mul(&transpose_mn(qi, m, k), qi, k, m, k);
        for p in 0..k {
            for c in 0..k {
                let want = if p == c { 1.0 } else { 0.0 };
                let d = (qtq[p * k + c] - want).abs();
                assert!(d <= bound, "{ctx} #{i}: (Q^T Q)[{p}, {c}] off by {d:e}");
            }
            assert!(ri[p * n + p] >= 0.0, "{ctx} #{i}: R[{p}, {p}] < 0");
            for c in 0..p.min(n) {
                assert_eq!(
                    ri[p * n + c],
                    0.0,
                    "{ctx} #{i}: R[{p}, {c}] below the diagonal"
                );
            }
        }
    }
}

fn qrs<T: F>(seed: u64) {
    let mut r = rng(seed);
    for (batch, m, n) in [
        (vec![], 1, 1),
        (vec![], 3, 3),
        (vec![2], 17, 5),
        (vec![], 5, 17),
        (vec![], 65, 17),
        (vec![3], 4, 7),
        (vec![2, 1], 1, 4),
    ] {
        let count: usize = batch.iter().product();
        let a: Vec<f64> = rand_f64(&mut r, count * m * n, -1.0, 1.0)
            .into_iter()
            .map(|x| T::of(x).into())
            .collect();
        let shape: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
        let (q, rr) = linalg::qr(&upload::<T>(&a, &shape));
        let k = m.min(n);
        let mut qs = batch.clone();
        qs.extend([m, k]);
        let mut rs = batch.clone();
        rs.extend([k, n]);
        assert_eq!(q.shape(), &qs[..]);
        assert_eq!(rr.shape(), &rs[..]);
        let ctx = format!("qr {shape:?}");
        check_qr::<T>(&a, &f64s(&read(&q)), &f64s(&read(&rr)), count, m, n, &ctx);
    }
    // Rank-deficient: an exactly zero column and a repeated column still factor.
    let mut a = rand_f64(&mut r, 2 * 6 * 3, -1.0, 1.0);
    for i in 0..6 {
        a[i * 3 + 1] = 0.0;
        a[18 + i * 3 + 2] = a[18 + i * 3];
    }
    let a: Vec<f64> = a.into_iter().map(|x| T::of(x).into()).collect();
    let (q, rr) = linalg::qr(&upload::<T>(&a, &[2, 6, 3]));
    check_qr::<T>(
        &a,
        &f64s(&read(&q)),
        &f64s(&read(&rr)),
        2,
        6,
        3,
        "rank-deficient qr",
    );
}

#[test]
fn qr_reconstructs_with_orthonormal_q_f32() {
    qrs::<f32>(40);
}

#[test]
fn qr_reconstructs_with_orthonormal_q_f64() {
    qrs::<f64>(41);
}

/// The normal-equations oracle in f64: `(A^T A)^-1 A^T b` and the 1-norm condition number of
/// `A^T A`.
fn oracle_lstsq(a: &[f64], b: &[f64], m: usize, n: usize, r: usize) -> (Vec<f64>, f64) {
    let at = transpose_mn(a, m, n);
    let g = mul(&at, a, n, m, n);
    let gi = oracle_inv(&g, n);
    let x = mul(&gi, &mul(&at, b, n, m, r), n, n, r);
    (x, norm1(&g, n) * norm1(&gi, n))
}

fn lstsqs<T: F>(seed: u64) {
    let mut r = rng(seed);
    // (batch of a, batch of b, m, n, r; r = 0: b is a vector).
    type Case = (Vec<usize>, Vec<usize>, usize, usize, usize);
    let cases: [Case; 6] = [
        (vec![], vec![], 1, 1, 0),
        (vec![], vec![], 3, 3, 2),
        (vec![2], vec![2], 17, 5, 3),
        (vec![], vec![], 65, 17, 0),
        (vec![2, 1], vec![3], 9, 4, 2),
        (vec![], vec![4], 6, 2, 1),
    ];
    for (ab, bb, m, n, rc) in cases {
        // NumPy broadcasting of the batch shapes (aligned on the right).
        let len = ab.len().max(bb.len());
        let at = |s: &[usize], i: usize| {
            if i + s.len() >= len {
                s[i + s.len() - len]
            } else {
                1
            }
        };
        let batch: Vec<usize> = (0..len).map(|i| at(&ab, i).max(at(&bb, i))).collect();
        let (na, nb): (usize, usize) = (ab.iter().product(), bb.iter().product());
        let cols = rc.max(1);
        let a: Vec<f64> = rand_f64(&mut r, na * m * n, -1.0, 1.0)
            .into_iter()
            .map(|x| T::of(x).into())
            .collect();
        let b: Vec<f64> = rand_f64(&mut r, nb * m * cols, -1.0, 1.0)
            .into_iter()
            .map(|x| T::of(x).into())
            .collect();
        let a_shape: Vec<usize> = ab.iter().copied().chain([m, n]).collect();
        let b_shape: Vec<usize> = if rc == 0 {
            vec![m]
        } else {
            bb.iter().copied().chain([m, rc]).collect()
        };
        let x = linalg::lstsq(&upload::<T>(&a, &a_shape), &upload::<T>(&b, &b_shape));
        let mut want_shape = batch.clone();
        want_shape.push(n);
        if rc > 0 {
            want_shape.push(rc);
        }
        let ctx = format!("lstsq {a_shape:?} {b_shape:?}");
        assert_eq!(x.shape(), &want_shape[..], "{ctx}");
        let x = f64s(&read(&x));
        let count: usize = batch.iter().product();
        // Batch index of a / b for output matrix i (broadcasting from the right).
        let src = |from: &[usize], mut i: usize| {
            let (mut s, mut stride) = (0, 1);
            for d in (0..batch.len()).rev() {
                let idx = i % batch[d];
                i /= batch[d];
                let lead = batch.len() - from.len();
                if d >= lead {
                    let f = from[d - lead];
                    if f != 1 {
                        s += idx * stride;
                    }
                    stride *= f;
                }
            }
            s
        };
        for i in 0..count {
            let ai = &a[src(&ab, i) * m * n..][..m * n];
            let bi = &b[src(&bb, i) * m * cols..][..m * cols];
            let xi = &x[i * n * cols..(i + 1) * n * cols];
            // Residual orthogonality: A^T (b - A x) ~ 0 relative to |A| (|A| |x| + |b|).
            let ax = mul(ai, xi, m, n, cols);
            let res: Vec<f64> = bi.iter().zip(&ax).map(|(p, q)| p - q).collect();
            let atr = mul(&transpose_mn(ai, m, n), &res, n, m, cols);
            let an = norm_fro(ai);
            let scale = an * (an * norm_fro(xi) + norm_fro(bi));
            let rel = norm_fro(&atr) / scale.max(f64::MIN_POSITIVE);
            let bound = RESIDUAL * m as f64 * T::EPS;
            assert!(
                rel <= bound,
                "{ctx} #{i}: |A^T r| rel {rel:e} over {bound:e}"
            );
            // The normal-equations oracle, within the conditioning of A^T A.
            let (xo, cond) = oracle_lstsq(ai, bi, m, n, cols);
            let diff: Vec<f64> = xi.iter().zip(&xo).map(|(p, q)| p - q).collect();
            let err = norm_inf(&diff) / norm_inf(&xo).max(1e-300);
            let tol = RESIDUAL * m as f64 * T::EPS * cond;
            assert!(
                err <= tol,
                "{ctx} #{i}: x off the oracle by {err:e} over {tol:e}"
            );
        }
    }
}

#[test]
fn lstsq_residual_is_orthogonal_and_matches_the_normal_equations_f32() {
    lstsqs::<f32>(50);
}

#[test]
fn lstsq_residual_is_orthogonal_and_matches_the_normal_equations_f64() {
    lstsqs::<f64>(51);
}

#[test]
fn lstsq_of_a_rank_deficient_matrix_names_the_batch_index_and_column() {
    // Matrix 1 of the batch repeats column 0 as column 2.
    let mut a = rand_f64(&mut rng(52), 2 * 5 * 3, -1.0, 1.0);
    for i in 0..5 {
        a[15 + i * 3 + 2] = a[15 + i * 3];
    }
    let b = rand_f64(&mut rng(53), 5, -1.0, 1.0);
    let a32: Vec<f64> = a.iter().map(|&x| x as f32 as f64).collect();
    let line = line!() + 1;
    let x = linalg::lstsq(&upload::<f32>(&a32, &[2, 5, 3]), &upload::<f32>(&b, &[5]));
    let e = x.to_vec().unwrap_err().to_string();
    assert!(
        e.contains("rank deficient") && e.contains("matrix 1 of the batch"),
        "{e}"
    );
    assert!(e.contains("column 2"), "{e}");
    assert!(e.contains(&format!("linalg.rs:{line}")), "{e}");
    // One f64 matrix with a zero column 1.
    let mut z = a[..15].to_vec();
    for i in 0..5 {
        z[i * 3 + 1] = 0.0;
    }
    let e = linalg::lstsq(&upload::<f64>(&z, &[5, 3]), &upload::<f64>(&b, &[5]))
        .to_vec()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the matrix is rank deficient") && e.contains("column 1"),
        "{e}"
    );
}

#[test]
fn qr_and_lstsq_nan_in_nan_out() {
    let mut a = rand_f64(&mut rng(54), 12, -1.0, 1.0);
    a[4] = f64::NAN;
    let (q, r) = linalg::qr(&upload::<f64>(&a, &[4, 3]));
    assert!(read(&q).iter().chain(&read(&r)).all(|v| v.is_nan()));
    let x = read(&linalg::lstsq(
        &upload::<f32>(&a, &[4, 3]),
        &upload::<f32>(&[1.0; 4], &[4]),
    ));
    assert!(x.iter().all(|v| v.is_nan()), "{x:?}");
}

#[test]
fn qr_and_lstsq_shape_errors_name_the_line() {
    let e = linalg::try_qr(&Array::<f64>::ones(&[3]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a matrix") && e.contains("linalg.rs"), "{e}");
    let wide = Array::<f64>::ones(&[2, 3]);
    let line = line!() + 1;
    let e = linalg::try_lstsq(&wide, &Array::<f64>::ones(&[2]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("fewer rows") && e.contains(&format!("linalg.rs:{line}")),
        "{e}"
    );
    let tall = Array::<f64>::ones(&[4, 3]);
    let e = linalg::try_lstsq(&tall, &Array::<f64>::ones(&[3, 1]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows") && e.contains("linalg.rs"), "{e}");
    let e = linalg::try_lstsq(&tall, &Array::<f64>::ones(&[2, 4, 1]))
        .map(|x| x.shape().to_vec())
        .unwrap();
    assert_eq!(e, vec![2, 3, 1]);
}
