//! `cholesky` (the lower factor `L` of a symmetric positive-definite matrix, `A = L L^T`; only
//! the lower triangle of `A` is read, L's upper triangle is 0) by faer's blocked LL^T, and
//! `cholesky_solve` (`L L^T x = b` from the factor, two triangular solves). A pivot that is not
//! positive (or not finite) fails the program, naming the matrix of the batch and the pivot; a
//! matrix with NaN in its lower triangle gives a NaN factor instead (NaN in, NaN out).

use super::dense;
use super::lu::rhs;
use super::triangular::{
    ZERO_DIAGONAL, solve_magnitudes, solve_reference, solve_tri, solve_tri_ref, zero_diagonal,
};
use super::{Failed, Real, batch_of, batch_source, by_dtype, float_dtype, for_each, square};
use crate::error::{Error, Result};
use crate::intrinsics::{Cost, IntrinsicDef, MagInput, Operand, Output};
use crate::ir::{Intrinsic, Shape, Site, TypedVec};
use crate::proggen::sequence::IntrinsicCall;
use faer::{MatMut, MatRef, Par};

/// The definitions of `cholesky` and `cholesky_solve` (by name).
pub struct CholeskyDef(pub &'static str);

impl IntrinsicDef for CholeskyDef {
    fn name(&self) -> &'static str {
        self.0
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        Some(match op {
            Intrinsic::Cholesky => format!("{}.cholesky()", args[0]),
            Intrinsic::CholeskySolve => {
                format!(
                    "arrayflow::linalg::cholesky_solve(&{}, &{})",
                    args[0], args[1]
                )
            }
            _ => return None,
        })
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let name = self.0;
        let dtype = float_dtype(name, inputs, &[], site)?;
        let (batch, n) = square(name, "the matrix", inputs[0].shape, site)?;
        let shape: Shape = match op {
            Intrinsic::Cholesky => inputs[0].shape.into(),
            _ => {
                let (b, r) = rhs(name, batch, n, &inputs[1], site)?;
                b.iter().copied().chain([n, r]).collect()
            }
        };
        Ok(vec![Output { shape, dtype }])
    }

    /// Cholesky–Banachiewicz in f64 (row by row; a pivot that is not positive gives NaN), and
    /// forward then back substitution.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let v = match op {
            Intrinsic::Cholesky => {
                let (av, s) = inputs[0];
                let n = s[s.len() - 1];
                let a = dense::f64s(av);
                a.chunks(n * n.max(1))
                    .flat_map(|m| banachiewicz(m, n))
                    .collect()
            }
            _ => solve_reference(inputs, &outputs[0].shape, |l, n, x, r| {
                let l = lower(l, n);
                dense::tri_solve(&l, n, x, r, false, false);
                dense::tri_solve(&dense::transpose(&l, n, n), n, x, r, true, false);
            }),
        };
        Ok(vec![super::reference_output(outputs[0].dtype, &v)])
    }

    /// Cholesky: `n * |L| tril(|L^-1| (|L| |L^T| + m_A) |L^-T|)`, the first-order change of `L`
    /// for a backward error of that size; the solve: `n * |A^-1| (|L| |L^T| |x| + |b|)`.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        match op {
            Intrinsic::Cholesky => {
                let s = inputs[0].shape;
                let n = s[s.len() - 1];
                let res = dense::f64s(result);
                let mut out = Vec::with_capacity(res.len());
                for (i, l) in res.chunks(n * n.max(1)).enumerate() {
                    let ma = &inputs[0].magnitude[i * n * n..(i + 1) * n * n];
                    let al = dense::abs(l);
                    let alt = dense::transpose(&al, n, n);
                    let back: Vec<f64> = dense::mul(&al, &alt, n, n, n)
                        .iter()
                        .zip(ma)
                        .map(|(x, y)| x + y)
                        .collect();
                    let mut linv = vec![0.0; n * n];
                    for k in 0..n {
                        linv[k * n + k] = 1.0;
                    }
                    dense::tri_solve(l, n, &mut linv, n, false, false);
                    let li = dense::abs(&linv);
                    let g = dense::mul(
                        &dense::mul(&li, &back, n, n, n),
                        &dense::transpose(&li, n, n),
                        n,
                        n,
                        n,
                    );
                    let finite = g.iter().all(|v| v.is_finite());
                    let mut gl = g;
                    for r in 0..n {
                        for c in r + 1..n {
                            gl[r * n + c] = 0.0;
                        }
                    }
                    let d = dense::mul(&al, &gl, n, n, n);
                    for r in 0..n {
                        for c in 0..n {
                            out.push(match (c > r, finite) {
                                (true, _) => 0.0,
                                (false, true) => n as f64 * d[r * n + c],
                                (false, false) => f64::INFINITY,
                            });
                        }
                    }
                }
                out
            }
            _ => solve_magnitudes(&out.shape, inputs, result, |l, n| {
                let l = lower(l, n);
                let al = dense::abs(&l);
                let a = dense::mul(&l, &dense::transpose(&l, n, n), n, n, n);
                (
                    dense::mul(&al, &dense::transpose(&al, n, n), n, n, n),
                    dense::inverse(&a, n),
                )
            }),
        }
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let o = &call.out_shape;
        let (n, r) = (o[o.len() - 2] as f64, o[o.len() - 1] as f64);
        let count = crate::intrinsics::numel(batch_of(o, 2)) as f64;
        let per = match call.op {
            Intrinsic::Cholesky => n * n * n / 3.0,
            _ => 2.0 * n * n * r,
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

/// The lower triangle of `m [n, n]` (the rest 0).
fn lower(m: &[f64], n: usize) -> Vec<f64> {
    let mut l = m.to_vec();
    for r in 0..n {
        for c in r + 1..n {
            l[r * n + c] = 0.0;
        }
    }
    l
}

/// Cholesky–Banachiewicz of the lower triangle of `a [n, n]` (NaN past a pivot that is not
/// positive; all NaN when the triangle holds a NaN).
fn banachiewicz(a: &[f64], n: usize) -> Vec<f64> {
    if (0..n).any(|i| (0..=i).any(|j| a[i * n + j].is_nan())) {
        return vec![f64::NAN; n * n];
    }
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = a[i * n + j] - (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum::<f64>();
            l[i * n + j] = if i == j {
                if s > 0.0 { s.sqrt() } else { f64::NAN }
            } else {
                s / l[j * n + j]
            };
        }
    }
    l
}

fn cpu<T: Real>(
    call: &IntrinsicCall,
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> std::result::Result<(), Error> {
    let s0 = &call.in_shapes[0];
    let n = s0[s0.len() - 1];
    let a = T::slice(inputs[0]);
    let batch = batch_of(&call.out_shape, 2).to_vec();
    let name = call.op.name();
    match call.op {
        Intrinsic::Cholesky => for_each(name, &batch, T::slice_mut(out), n * n, |i, l| {
            let m = &a[i * n * n..(i + 1) * n * n];
            l.fill(T::of(0.0));
            for r in 0..n {
                l[r * n..r * n + r + 1].copy_from_slice(&m[r * n..r * n + r + 1]);
            }
            if l.iter().any(|x| x.to_f64().is_nan()) {
                l.fill(T::of(f64::NAN));
                return Ok(());
            }
            use faer::linalg::cholesky::llt::factor as f;
            let mut buf = faer::dyn_stack::MemBuffer::new(f::cholesky_in_place_scratch::<T>(
                n,
                Par::Seq,
                Default::default(),
            ));
            let stack = faer::dyn_stack::MemStack::new(&mut buf);
            let lm = MatMut::from_row_major_slice_mut(l, n, n);
            let res =
                f::cholesky_in_place(lm, Default::default(), Par::Seq, stack, Default::default());
            for r in 0..n {
                for c in r + 1..n {
                    l[r * n + c] = T::of(0.0);
                }
            }
            match res {
                Ok(_) => Ok(()),
                Err(f::LltError::NonPositivePivot { index }) => Err(Failed {
                    at: "pivot",
                    pivot: index,
                    what: "is not positive definite (a pivot is not positive)",
                }),
            }
        }),
        _ => {
            let b = T::slice(inputs[1]);
            let bs = &call.in_shapes[1];
            let r = bs[bs.len() - 1];
            for_each(name, &batch, T::slice_mut(out), n * r, |i, x| {
                let ai = batch_source(&batch, batch_of(s0, 2), i);
                let bi = batch_source(&batch, batch_of(bs, 2), i);
                let l = &a[ai * n * n..(ai + 1) * n * n];
                if let Some(k) = zero_diagonal(l, n) {
                    return Err(Failed {
                        at: "pivot",
                        pivot: k,
                        what: ZERO_DIAGONAL,
                    });
                }
                x.copy_from_slice(&b[bi * n * r..(bi + 1) * n * r]);
                solve_tri(l, n, x, r, false, false);
                let lt = MatRef::from_row_major_slice(l, n, n).transpose();
                solve_tri_ref(lt, x, n, r, true, false);
                Ok(())
            })
        }
    }
}
