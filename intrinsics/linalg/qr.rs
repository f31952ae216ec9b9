//! `qr` (the reduced QR factorisation of `a [..., m, n]`, `k = min(m, n)`: `Q [m, k]` with
//! orthonormal columns and upper-triangular `R [k, n]`, `A = Q R`, R's diagonal non-negative so
//! the factorisation is unique for full-rank input) by faer's blocked Householder QR, and
//! `lstsq` (the least-squares solution of `a x ~ b` for `m >= n`: `x = R^-1 Q^T b`).
//!
//! **Packed output of `qr`**: `[..., m + k, n]`: rows `0..m`, columns `0..k` hold Q (the rest
//! of those rows 0), rows `m..m + k` hold R. The API returns the two blocks as views.
//!
//! faer's QR skips a column that is numerically dependent on the ones before it (its part
//! orthogonal to them at most `16 (m - j) eps` times the column's norm), which leaves R in
//! echelon rather than triangular form; for such a (rank-deficient) matrix `qr` runs a plain
//! unblocked Householder QR in f64 instead (LAPACK geqr2: an exactly zero column gives an
//! identity reflector), so `A = Q R` with R triangular still holds. `lstsq` of a rank-deficient
//! matrix fails the program, naming the matrix of the batch and the first dependent column
//! (where the f64 Householder's `|R_jj| <= 16 m eps |A_j|`, eps of the element type); there is
//! no minimum-norm solution (use the normal equations with a regularisation, or drop the
//! column). NaN anywhere in a matrix (or its right-hand side) gives an all-NaN result.

use super::dense;
use super::{
    Failed, Real, batch_of, batch_source, broadcast_batch, by_dtype, float_dtype, for_each, matrix,
};
use crate::error::{Error, ErrorKind, Result};
use crate::intrinsics::{Cost, IntrinsicDef, MagInput, Operand, Output};
use crate::ir::{Intrinsic, Shape, Site, TypedVec};
use crate::proggen::sequence::IntrinsicCall;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::{Conj, Mat, Par};

/// The definitions of `qr` and `lstsq` (by name).
pub struct QrDef(pub &'static str);

impl IntrinsicDef for QrDef {
    fn name(&self) -> &'static str {
        self.0
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let name = self.0;
        let dtype = float_dtype(name, inputs, &[], site)?;
        let (batch, m, n) = matrix(name, "the matrix", inputs[0].shape, site)?;
        let shape: Shape = match op {
            Intrinsic::Qr => batch.iter().copied().chain([m + m.min(n), n]).collect(),
            _ => {
                if m < n {
                    return Err(Error::new(
                        ErrorKind::Shape,
                        format!(
                            "{name}: the matrix of shape {:?} has fewer rows ({m}) than columns \
                             ({n}): the system is underdetermined",
                            inputs[0].shape
                        ),
                    )
                    .at(site)
                    .hint("lstsq solves overdetermined or square systems (rows >= columns)"));
                }
                let (bb, rows, r) = matrix(name, "b", inputs[1].shape, site)?;
                if rows != m {
                    return Err(Error::new(
                        ErrorKind::Shape,
                        format!(
                            "{name}: b of shape {:?} has {rows} rows, the matrix has {m}",
                            inputs[1].shape
                        ),
                    )
                    .at(site));
                }
                let b = broadcast_batch(name, batch, bb, site)?;
                b.into_iter().chain([n, r]).collect()
            }
        };
        Ok(vec![Output { shape, dtype }])
    }

    /// Modified Gram-Schmidt in f64 (R's diagonal the norms, so non-negative); for `m < n` the
    /// columns past `m` are `Q^T a_j`. `lstsq`: each column of `b` projected out column by
    /// column of Q (as MGS on `[A b]`), then back substitution with R.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (av, s0) = inputs[0];
        let (m, n) = (s0[s0.len() - 2], s0[s0.len() - 1]);
        let k = m.min(n);
        let a = dense::f64s(av);
        let out_shape = &outputs[0].shape;
        let v: Vec<f64> = match op {
            Intrinsic::Qr => {
                let mut v = Vec::with_capacity(crate::intrinsics::numel(out_shape) as usize);
                for am in a
                    .chunks(m * n)
                    .take(if m * n == 0 { 0 } else { usize::MAX })
                {
                    let (q, r) = mgs(am, m, n);
                    v.extend(pack(&q, &r, m, n));
                }
                if m * n == 0 {
                    v.resize(crate::intrinsics::numel(out_shape) as usize, 0.0);
                }
                let _ = k;
                v
            }
            _ => {
                let (bv, bs) = inputs[1];
                let r = bs[bs.len() - 1];
                let batch = batch_of(out_shape, 2);
                let count: usize = batch.iter().product();
                let mut v = Vec::with_capacity(count * n * r);
                for i in 0..count {
                    let ai = batch_source(batch, batch_of(s0, 2), i);
                    let bi = batch_source(batch, batch_of(bs, 2), i);
                    let am = &a[ai * m * n..(ai + 1) * m * n];
                    let b: Vec<f64> = (0..m * r)
                        .map(|e| bv.get(bi * m * r + e).as_f64())
                        .collect();
                    v.extend(mgs_lstsq(am, &b, m, n, r));
                }
                v
            }
        };
        Ok(vec![super::reference_output(outputs[0].dtype, &v)])
    }

    /// Normwise first-order bounds for a backward error of `max(m, n) |A|` (see the module
    /// comment of `linalg`): with `s = |A|_F + |m_A|_F` and `kappa = s |R^-1|_F` (R of the
    /// result), Q's elements get `max(m, n) kappa`, R's `max(m, n) kappa s`; lstsq's
    /// `max(m, n) (kappa |x| + kappa^2 |b - A x| / s + |R^-1| (|b| + |m_b|))` (the least-squares
    /// perturbation bound). Infinite where R is singular.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let s0 = inputs[0].shape;
        let (m, n) = (s0[s0.len() - 2], s0[s0.len() - 1]);
        let k = m.min(n);
        let big = m.max(n) as f64;
        let a = dense::f64s(inputs[0].value);
        let res = dense::f64s(result);
        let fro = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let batch = batch_of(&out.shape, 2);
        let count: usize = batch.iter().product();
        let mut mags = Vec::with_capacity(res.len());
        for i in 0..count {
            let ai = match op {
                Intrinsic::Qr => i,
                _ => batch_source(batch, batch_of(s0, 2), i),
            };
            let am = &a[ai * m * n..(ai + 1) * m * n];
            let s = fro(am) + fro(&inputs[0].magnitude[ai * m * n..(ai + 1) * m * n]);
            // R (k x k, leading block) from the result (qr) or from MGS (lstsq).
            let rk: Vec<f64> = match op {
                Intrinsic::Qr => {
                    let o = &res[i * (m + k) * n..];
                    (0..k * k).map(|e| o[(m + e / k) * n + e % k]).collect()
                }
                _ => {
                    let (_, r) = mgs(am, m, n);
                    (0..k * k).map(|e| r[(e / k) * n + e % k]).collect()
                }
            };
            let mut rinv = vec![0.0; k * k];
            for d in 0..k {
                rinv[d * k + d] = 1.0;
            }
            dense::tri_solve(&rk, k, &mut rinv, k, true, false);
            let ri = fro(&rinv);
            let ok = ri.is_finite() && (0..k).all(|d| rk[d * k + d] != 0.0);
            let kappa = s * ri;
            match op {
                Intrinsic::Qr => {
                    for row in 0..m + k {
                        for c in 0..n {
                            let used = if row < m { c < k } else { c >= row - m };
                            mags.push(match (used, ok) {
                                (false, _) => 0.0,
                                (true, false) => f64::INFINITY,
                                (true, true) if row < m => big * kappa,
                                (true, true) => big * kappa * s,
                            });
                        }
                    }
                }
                _ => {
                    let bs = inputs[1].shape;
                    let r = bs[bs.len() - 1];
                    let bi = batch_source(batch, batch_of(bs, 2), i);
                    let b: Vec<f64> = (0..m * r)
                        .map(|e| inputs[1].value.get(bi * m * r + e).as_f64())
                        .collect();
                    let mb = fro(&inputs[1].magnitude[bi * m * r..(bi + 1) * m * r]);
                    let x = &res[i * n * r..(i + 1) * n * r];
                    let ax = dense::mul(am, x, m, n, r);
                    let resid: Vec<f64> = b.iter().zip(&ax).map(|(p, q)| p - q).collect();
                    let v = if ok && s > 0.0 {
                        big * (kappa * fro(x)
                            + kappa * kappa * fro(&resid) / s
                            + ri * (fro(&b) + mb))
                    } else if ok {
                        0.0
                    } else {
                        f64::INFINITY
                    };
                    mags.extend(std::iter::repeat_n(
                        if v.is_finite() { v } else { f64::INFINITY },
                        n * r,
                    ));
                }
            }
        }
        mags
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let s = &call.in_shapes[0];
        let (m, n) = (s[s.len() - 2] as f64, s[s.len() - 1] as f64);
        let k = m.min(n);
        let o = &call.out_shape;
        let count = crate::intrinsics::numel(batch_of(o, 2)) as f64;
        // Householder QR: 2 k^2 (max - k / 3); forming Q about as much again; lstsq applies Q^T
        // (4 m n r) and solves with R (n^2 r).
        let fact = 2.0 * k * k * (m.max(n) - k / 3.0);
        let per = match call.op {
            Intrinsic::Qr => 2.0 * fact,
            _ => {
                let r = o[o.len() - 1] as f64;
                fact + 4.0 * m * n * r + n * n * r
            }
        };
        super::cost(call, count * per)
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        by_dtype!(call, cpu(call, inputs, &mut outputs[0]))
    }
}

/// Packs `q [m, k]` and `r [k, n]` as the output of `qr`: `[m + k, n]`.
fn pack(q: &[f64], r: &[f64], m: usize, n: usize) -> Vec<f64> {
    let k = m.min(n);
    let mut o = vec![0.0; (m + k) * n];
    for i in 0..m {
        o[i * n..i * n + k].copy_from_slice(&q[i * k..(i + 1) * k]);
    }
    o[m * n..].copy_from_slice(r);
    o
}

/// Modified Gram-Schmidt of `a [m, n]`: `q [m, k]`, `r [k, n]` (a zero column leaves a zero
/// column of Q and a zero on R's diagonal; NaN anywhere gives all NaN).
fn mgs(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    if a.iter().any(|x| x.is_nan()) {
        return (vec![f64::NAN; m * k], vec![f64::NAN; k * n]);
    }
    let mut v = a.to_vec();
    let mut q = vec![0.0; m * k];
    let mut r = vec![0.0; k * n];
    for j in 0..k {
        let norm = (0..m).map(|i| v[i * n + j].powi(2)).sum::<f64>().sqrt();
        r[j * n + j] = norm;
        if norm > 0.0 {
            for i in 0..m {
                q[i * k + j] = v[i * n + j] / norm;
            }
        }
        for c in j + 1..n {
            let d: f64 = (0..m).map(|i| q[i * k + j] * v[i * n + c]).sum();
            r[j * n + c] = d;
            for i in 0..m {
                v[i * n + c] -= d * q[i * k + j];
            }
        }
    }
    (q, r)
}

/// The least-squares solution of `a [m, n] x = b [m, r]` (`m >= n`) by MGS on `[A b]`.
fn mgs_lstsq(a: &[f64], b: &[f64], m: usize, n: usize, r: usize) -> Vec<f64> {
    let (q, rr) = mgs(a, m, n);
    if b.iter().any(|x| x.is_nan()) || q.iter().any(|x| x.is_nan()) {
        return vec![f64::NAN; n * r];
    }
    let mut z = b.to_vec();
    let mut x = vec![0.0; n * r];
    for j in 0..n {
        for c in 0..r {
            let d: f64 = (0..m).map(|i| q[i * n + j] * z[i * r + c]).sum();
            x[j * r + c] = d;
            for i in 0..m {
                z[i * r + c] -= d * q[i * n + j];
            }
        }
    }
    let rn: Vec<f64> = (0..n * n).map(|e| rr[(e / n) * n + e % n]).collect();
    dense::tri_solve(&rn, n, &mut x, r, true, false);
    x
}

/// Unblocked Householder QR in f64 (LAPACK geqr2; an exactly zero column gives an identity
/// reflector): `q [m, k]`, `r [k, n]`, R's diagonal not yet made non-negative.
fn householder(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut w = a.to_vec();
    let mut vs: Vec<Option<(Vec<f64>, f64)>> = Vec::with_capacity(k);
    for j in 0..k {
        let norm = (j..m).map(|i| w[i * n + j].powi(2)).sum::<f64>().sqrt();
        let alpha = w[j * n + j];
        let beta = if alpha < 0.0 { norm } else { -norm };
        let mut v: Vec<f64> = (j..m).map(|i| w[i * n + j]).collect();
        v[0] -= beta;
        let vv: f64 = v.iter().map(|x| x * x).sum();
        if norm == 0.0 || vv == 0.0 {
            vs.push(None);
            continue;
        }
        for c in j..n {
            let d: f64 = (j..m).map(|i| v[i - j] * w[i * n + c]).sum::<f64>() * 2.0 / vv;
            for i in j..m {
                w[i * n + c] -= d * v[i - j];
            }
        }
        vs.push(Some((v, vv)));
    }
    let mut q = vec![0.0; m * k];
    for d in 0..k {
        q[d * k + d] = 1.0;
    }
    for (j, h) in vs.iter().enumerate().rev() {
        if let Some((v, vv)) = h {
            for c in 0..k {
                let d: f64 = (j..m).map(|i| v[i - j] * q[i * k + c]).sum::<f64>() * 2.0 / vv;
                for i in j..m {
                    q[i * k + c] -= d * v[i - j];
                }
            }
        }
    }
    let mut r = vec![0.0; k * n];
    for i in 0..k {
        for c in i..n {
            r[i * n + c] = w[i * n + c];
        }
    }
    (q, r)
}

/// faer's Householder QR of `a [m, n]` (row-major): the factored matrix (R above the diagonal,
/// the reflectors below), the block reflector factors, and whether every column was used
/// (full rank, so R is triangular).
fn faer_qr<T: Real>(a: &[T], m: usize, n: usize) -> (Mat<T>, Mat<T>, bool) {
    use faer::linalg::qr::no_pivoting::factor as f;
    let k = m.min(n);
    let mut fm = Mat::<T>::from_fn(m, n, |i, j| a[i * n + j]);
    let bs = f::recommended_block_size::<T>(m, n).max(1);
    let mut h = Mat::<T>::zeros(bs, k);
    let mut buf = MemBuffer::new(f::qr_in_place_scratch::<T>(
        m,
        n,
        bs,
        Par::Seq,
        Default::default(),
    ));
    let info = f::qr_in_place(
        fm.as_mut(),
        h.as_mut(),
        Par::Seq,
        MemStack::new(&mut buf),
        Default::default(),
    );
    (fm, h, info.rank == k)
}

/// The first column `j` of `a [m, n]` whose part orthogonal to the columns before it is at
/// most `16 m eps |a_j|` (f64 Householder), or `fallback`.
fn dependent_column(a: &[f64], m: usize, n: usize, eps: f64, fallback: usize) -> usize {
    let (_, r) = householder(a, m, n);
    (0..m.min(n))
        .find(|&j| {
            let col = (0..m).map(|i| a[i * n + j].powi(2)).sum::<f64>().sqrt();
            r[j * n + j].abs() <= 16.0 * m as f64 * eps * col
        })
        .unwrap_or(fallback)
}

fn eps<T: Real>() -> f64 {
    if std::mem::size_of::<T>() == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// One matrix's `qr` into `o [m + k, n]`.
fn qr_one<T: Real>(a: &[T], m: usize, n: usize, o: &mut [T]) {
    let k = m.min(n);
    o.fill(T::of(0.0));
    if a.iter().any(|x| x.to_f64().is_nan()) {
        o.fill(T::of(f64::NAN));
        return;
    }
    let (fm, h, full) = faer_qr(a, m, n);
    if full {
        use faer::linalg::householder as hh;
        let mut q = Mat::<T>::zeros(m, k);
        for d in 0..k {
            q[(d, d)] = T::of(1.0);
        }
        let mut buf = MemBuffer::new(
            hh::apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(m, h.nrows(), k),
        );
        hh::apply_block_householder_sequence_on_the_left_in_place_with_conj(
            fm.as_ref(),
            h.as_ref(),
            Conj::No,
            q.as_mut(),
            Par::Seq,
            MemStack::new(&mut buf),
        );
        for i in 0..k {
            let flip = fm[(i, i)] < T::of(0.0);
            for c in i..n {
                let v = fm[(i, c)];
                o[(m + i) * n + c] = if flip { -v } else { v };
            }
            for r in 0..m {
                let v = q[(r, i)];
                o[r * n + i] = if flip { -v } else { v };
            }
        }
    } else {
        let af: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
        let (q, r) = householder(&af, m, n);
        for i in 0..k {
            let s = if r[i * n + i] < 0.0 { -1.0 } else { 1.0 };
            for c in i..n {
                o[(m + i) * n + c] = T::of(s * r[i * n + c]);
            }
            for row in 0..m {
                o[row * n + i] = T::of(s * q[row * k + i]);
            }
        }
    }
}

fn cpu<T: Real>(
    call: &IntrinsicCall,
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> std::result::Result<(), Error> {
    let s0 = &call.in_shapes[0];
    let (m, n) = (s0[s0.len() - 2], s0[s0.len() - 1]);
    let k = m.min(n);
    let a = T::slice(inputs[0]);
    let batch = batch_of(&call.out_shape, 2).to_vec();
    let name = call.op.name();
    match call.op {
        Intrinsic::Qr => for_each(name, &batch, T::slice_mut(out), (m + k) * n, |i, o| {
            qr_one(&a[i * m * n..(i + 1) * m * n], m, n, o);
            Ok(())
        }),
        _ => {
            let b = T::slice(inputs[1]);
            let bs = &call.in_shapes[1];
            let r = bs[bs.len() - 1];
            for_each(name, &batch, T::slice_mut(out), n * r, |i, x| {
                let ai = batch_source(&batch, batch_of(s0, 2), i);
                let bi = batch_source(&batch, batch_of(bs, 2), i);
                let am = &a[ai * m * n..(ai + 1) * m * n];
                let bm = &b[bi * m * r..(bi + 1) * m * r];
                if am.iter().chain(bm).any(|v| v.to_f64().is_nan()) {
                    x.fill(T::of(f64::NAN));
                    return Ok(());
                }
                let (fm, h, full) = faer_qr(am, m, n);
                if !full {
                    let af: Vec<f64> = am.iter().map(|v| v.to_f64()).collect();
                    return Err(Failed {
                        at: "column",
                        pivot: dependent_column(&af, m, n, eps::<T>(), n - 1),
                        what: "is rank deficient (a column depends on the columns before it)",
                    });
                }
                use faer::linalg::householder as hh;
                let mut bmat = Mat::<T>::from_fn(m, r, |p, q| bm[p * r + q]);
                let mut buf = MemBuffer::new(
                    hh::apply_block_householder_sequence_transpose_on_the_left_in_place_scratch::<T>(
                        m,
                        h.nrows(),
                        r,
                    ),
                );
                hh::apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj(
                    fm.as_ref(),
                    h.as_ref(),
                    Conj::No,
                    bmat.as_mut(),
                    Par::Seq,
                    MemStack::new(&mut buf),
                );
                faer::linalg::triangular_solve::solve_upper_triangular_in_place(
                    fm.as_ref().get(..n, ..n),
                    bmat.as_mut().get_mut(..n, ..),
                    Par::Seq,
                );
                for p in 0..n {
                    for q in 0..r {
                        x[p * r + q] = bmat[(p, q)];
                    }
                }
                Ok(())
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn householder_and_mgs_agree_up_to_signs() {
        let a = vec![
            2.0, -1.0, 0.5, 1.0, 3.0, -2.0, 0.0, 1.0, 4.0, -1.0, 2.0, 1.0,
        ];
        for (m, n) in [(4, 3), (3, 4)] {
            let (q1, r1) = householder(&a, m, n);
            let (q2, r2) = mgs(&a, m, n);
            let k = m.min(n);
            for i in 0..k {
                let s = r1[i * n + i].signum();
                for c in 0..n {
                    assert!((s * r1[i * n + c] - r2[i * n + c]).abs() < 1e-12);
                }
                for row in 0..m {
                    assert!((s * q1[row * k + i] - q2[row * k + i]).abs() < 1e-12);
                }
            }
        }
    }
}
