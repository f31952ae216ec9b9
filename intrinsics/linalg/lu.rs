//! The LU family: `lu` (packed factors and LAPACK's `ipiv`), `lu_unpack` (P, L, U),
//! `lu_solve`, `lu_cond` (LAPACK gecon's reciprocal 1-norm condition estimate), `solve`, `inv`,
//! `det` and `slogdet`. The CPU factors with faer's partial-pivoting LU (the first largest
//! |pivot| of a column, as LAPACK); a matrix with an exact zero pivot is refactored by the plain
//! LAPACK getf2 loop here, which skips the scaling at a zero pivot so the factors stay finite.
//! `det`/`slogdet` multiply (add the logs of) the pivots in f64. On the GPU executors `lu`,
//! `solve` and `inv` of matrices up to 64 x 64 run the batched kernels of `batched/`, larger
//! ones and `det`/`slogdet` of every size the blocked LU of `blocked/`.

use super::dense;
use super::{Failed, Real, batch_of, batch_source, by_dtype, float_dtype, for_each, square};
use crate::error::{Error, ErrorKind, Result};
use crate::intrinsics::{Cost, IntrinsicDef, MagInput, Operand, Output};
use crate::ir::{Intrinsic, Shape, Site, TypedVec};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use faer::{MatMut, MatRef, Par};

/// The definitions of the LU family (one per registry entry, by name).
pub struct LuDef(pub &'static str);

/// What a zero pivot is called in errors.
const SINGULAR: &str = "is singular (an exact zero pivot)";

fn pivots_shape(name: &str, batch: &[usize], n: usize, p: &Operand, site: Site) -> Result<()> {
    let want: Vec<usize> = batch.iter().copied().chain([n]).collect();
    if p.shape != want.as_slice() {
        return Err(Error::new(
            ErrorKind::Shape,
            format!(
                "{name}: pivots of shape {:?} do not fit factors of batch {batch:?} and n = {n}",
                p.shape
            ),
        )
        .at(site)
        .hint("pass the pivots that linalg::lu returned with the factors"));
    }
    Ok(())
}

/// `b [..., n, r]` against a square operand of batch `batch` and size `n`: the broadcast batch.
pub(crate) fn rhs(
    name: &str,
    batch: &[usize],
    n: usize,
    b: &Operand,
    site: Site,
) -> Result<(Vec<usize>, usize)> {
    let (bb, rows, r) = super::matrix(name, "b", b.shape, site)?;
    if rows != n {
        return Err(Error::new(
            ErrorKind::Shape,
            format!(
                "{name}: b of shape {:?} has {rows} rows, the matrix has {n}",
                b.shape
            ),
        )
        .at(site));
    }
    Ok((super::broadcast_batch(name, batch, bb, site)?, r))
}

fn shape(batch: &[usize], tail: &[usize]) -> Shape {
    batch.iter().chain(tail).copied().collect()
}

impl IntrinsicDef for LuDef {
    fn name(&self) -> &'static str {
        self.0
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        // The factorisations' packed outputs are not what the API returns: no spelling.
        Some(match op {
            Intrinsic::Solve => format!("{}.solve(&{})", args[0], args[1]),
            Intrinsic::Inv => format!("{}.inv()", args[0]),
            Intrinsic::Det => format!("{}.det()", args[0]),
            _ => return None,
        })
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let name = self.0;
        let int: &[usize] = match op {
            Intrinsic::LuSolve | Intrinsic::LuCond | Intrinsic::LuUnpack => &[1],
            _ => &[],
        };
        let dtype = float_dtype(name, inputs, int, site)?;
        let (batch, n) = square(name, "the matrix", inputs[0].shape, site)?;
        let out = match op {
            Intrinsic::Lu => shape(batch, &[n, n + 1]),
            Intrinsic::LuUnpack => {
                pivots_shape(name, batch, n, &inputs[1], site)?;
                shape(batch, &[n, 3 * n])
            }
            Intrinsic::LuSolve => {
                pivots_shape(name, batch, n, &inputs[1], site)?;
                let (b, r) = rhs(name, batch, n, &inputs[2], site)?;
                shape(&b, &[n, r])
            }
            Intrinsic::LuCond => {
                pivots_shape(name, batch, n, &inputs[1], site)?;
                if inputs[2].shape != batch {
                    return Err(Error::new(
                        ErrorKind::Shape,
                        format!(
                            "{name}: anorm of shape {:?} must have the batch shape {batch:?}",
                            inputs[2].shape
                        ),
                    )
                    .at(site));
                }
                shape(batch, &[])
            }
            Intrinsic::Solve => {
                let (b, r) = rhs(name, batch, n, &inputs[1], site)?;
                shape(&b, &[n, r])
            }
            Intrinsic::Inv => shape(batch, &[n, n]),
            Intrinsic::Det => shape(batch, &[]),
            Intrinsic::Slogdet => shape(batch, &[2]),
            _ => unreachable!("the LU family called for {op:?}"),
        };
        Ok(vec![Output { shape: out, dtype }])
    }

    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let v = reference(op, inputs, &outputs[0].shape);
        Ok(vec![super::reference_output(outputs[0].dtype, &v)])
    }

    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        magnitudes(op, &out.shape, inputs, result)
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let s = &call.in_shapes[0];
        let n = s[s.len() - 1] as f64;
        let count = crate::intrinsics::numel(batch_of(&call.out_shape, out_core(&call.op))) as f64;
        let lu = 2.0 / 3.0 * n * n * n;
        let r = |k: usize| call.out_shape[call.out_shape.len() - k] as f64;
        let per = match call.op {
            Intrinsic::Lu | Intrinsic::Det | Intrinsic::Slogdet => lu,
            Intrinsic::LuUnpack => n * n,
            Intrinsic::LuSolve => 2.0 * n * n * r(1),
            Intrinsic::LuCond => 10.0 * n * n,
            Intrinsic::Solve => lu + 2.0 * n * n * r(1),
            Intrinsic::Inv => lu + 2.0 * n * n * n,
            _ => 0.0,
        };
        super::cost(call, per * count)
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        by_dtype!(call, cpu(call, inputs, &mut outputs[0]))
    }

    /// `lu`, `solve` and `inv` of small matrices on the batched kernels (`batched/`), larger
    /// ones and `det`/`slogdet` on the blocked LU (`blocked/`); `solve` and `inv` only when
    /// [`batched::solve_enabled`](super::batched::solve_enabled). The rest run the CPU entry.
    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        super::batched::gate(call)?;
        super::batched::opencl::render(call, t)
            .or_else(|small| blocked_or(small, || super::blocked::opencl::render(call, t)))
    }

    /// As [`opencl`](Self::opencl), f32 only.
    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        super::batched::gate(call)?;
        super::batched::wgsl::render(call)
            .or_else(|small| blocked_or(small, || super::blocked::wgsl::render(call)))
    }
}

/// The blocked plan where the batched kernels do not take a call (`small` says why); both
/// reasons when neither does.
fn blocked_or(
    small: Unsupported,
    blocked: impl FnOnce() -> std::result::Result<GpuPlan, Unsupported>,
) -> std::result::Result<GpuPlan, Unsupported> {
    blocked().map_err(|large| Unsupported(format!("{small}; {large}")))
}

/// The matrix axes of each routine's output.
fn out_core(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Det | Intrinsic::LuCond => 0,
        Intrinsic::Slogdet => 1,
        _ => 2,
    }
}

/// LU with partial pivoting of `a [n, n]` in place: LAPACK's `ipiv` and the first exact zero
/// pivot. faer factors; a zero pivot (which faer divides by) refactors `orig` with the plain
/// getf2 loop.
pub(crate) fn factor<T: Real>(a: &mut [T], n: usize) -> (Vec<usize>, Option<usize>) {
    let orig = a.to_vec();
    let mut perm = vec![0usize; n];
    let mut perm_inv = vec![0usize; n];
    {
        use faer::linalg::lu::partial_pivoting::factor as f;
        let par = Par::Seq;
        let mut buf = faer::dyn_stack::MemBuffer::new(f::lu_in_place_scratch::<usize, T>(
            n,
            n,
            par,
            Default::default(),
        ));
        let stack = faer::dyn_stack::MemStack::new(&mut buf);
        let m = MatMut::from_row_major_slice_mut(a, n, n);
        f::lu_in_place(m, &mut perm, &mut perm_inv, par, stack, Default::default());
    }
    let zero = T::of(0.0);
    if (0..n).any(|k| a[k * n + k] == zero) {
        a.copy_from_slice(&orig);
        return getf2(a, n);
    }
    // faer's row permutation (row i of L U is row perm[i] of A) as LAPACK's interchanges.
    let mut row_at: Vec<usize> = (0..n).collect();
    let mut pos: Vec<usize> = (0..n).collect();
    let mut ipiv = vec![0; n];
    for k in 0..n {
        let j = pos[perm[k]];
        ipiv[k] = j;
        let (rk, rj) = (row_at[k], row_at[j]);
        row_at.swap(k, j);
        pos[rk] = j;
        pos[rj] = k;
    }
    (ipiv, None)
}

/// LAPACK getf2 in the element type: the first largest |pivot|; a zero pivot skips the scaling.
fn getf2<T: Real>(a: &mut [T], n: usize) -> (Vec<usize>, Option<usize>) {
    let zero = T::of(0.0);
    let mut ipiv = vec![0; n];
    let mut info = None;
    for k in 0..n {
        let (mut p, mut best) = (k, zero);
        for i in k..n {
            if a[i * n + k].mag() > best {
                best = a[i * n + k].mag();
                p = i;
            }
        }
        ipiv[k] = p;
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
        }
        let d = a[k * n + k];
        if d == zero {
            info.get_or_insert(k);
            continue;
        }
        for i in k + 1..n {
            let l = a[i * n + k] / d;
            a[i * n + k] = l;
            for j in k + 1..n {
                a[i * n + j] -= l * a[k * n + j];
            }
        }
    }
    (ipiv, info)
}

/// The first exact zero on the diagonal of the packed factors.
fn zero_pivot<T: Real>(lu: &[T], n: usize) -> Option<usize> {
    (0..n).find(|&k| lu[k * n + k] == T::of(0.0))
}

/// Solves `A x = b` in place (`x [n, r]` holds b) from packed factors and `ipiv`.
pub(crate) fn solve_factored<T: Real>(lu: &[T], ipiv: &[usize], n: usize, x: &mut [T], r: usize) {
    for (k, &p) in ipiv.iter().enumerate() {
        if p != k {
            for j in 0..r {
                x.swap(k * r + j, p * r + j);
            }
        }
    }
    let f = MatRef::from_row_major_slice(lu, n, n);
    let mut xm = MatMut::from_row_major_slice_mut(x, n, r);
    faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place(f, xm.as_mut(), Par::Seq);
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(f, xm, Par::Seq);
}

/// Solves `A^T x = b` in place (`x [n]`) from packed factors and `ipiv`.
fn solve_factored_t<T: Real>(lu: &[T], ipiv: &[usize], n: usize, x: &mut [T]) {
    let f = MatRef::from_row_major_slice(lu, n, n).transpose();
    let mut xm = MatMut::from_row_major_slice_mut(x, n, 1);
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(f, xm.as_mut(), Par::Seq);
    faer::linalg::triangular_solve::solve_unit_upper_triangular_in_place(f, xm, Par::Seq);
    for (k, &p) in ipiv.iter().enumerate().rev() {
        if p != k {
            x.swap(k, p);
        }
    }
}

/// Higham's 1-norm estimate of `A^-1` (LAPACK dlacn2, as gecon uses it), given solves with `A`
/// (`false`) and `A^T` (`true`) on f64 vectors.
pub(crate) fn inverse_norm1(n: usize, solve: impl Fn(&mut [f64], bool)) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let norm1 = |v: &[f64]| v.iter().map(|x| x.abs()).sum::<f64>();
    let sign = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .map(|&x| if x >= 0.0 { 1.0 } else { -1.0 })
            .collect()
    };
    let mut x = vec![1.0 / n as f64; n];
    solve(&mut x, false);
    if n == 1 {
        return x[0].abs();
    }
    let mut est = norm1(&x);
    let mut s = sign(&x);
    let mut z = s.clone();
    solve(&mut z, true);
    let mut j = argmax(&z);
    for iter in 1..5 {
        let mut y = vec![0.0; n];
        y[j] = 1.0;
        solve(&mut y, false);
        let old = est;
        est = norm1(&y);
        let s2 = sign(&y);
        if s2 == s || est <= old {
            est = est.max(old);
            break;
        }
        s = s2;
        z = s.clone();
        solve(&mut z, true);
        let jlast = j;
        j = argmax(&z);
        if z[jlast].abs() == z[j].abs() || iter == 4 {
            break;
        }
    }
    let mut alt: Vec<f64> = (0..n)
        .map(|i| {
            let v = 1.0 + i as f64 / (n - 1) as f64;
            if i % 2 == 0 { v } else { -v }
        })
        .collect();
    solve(&mut alt, false);
    let temp = 2.0 * norm1(&alt) / (3.0 * n as f64);
    est.max(temp)
}

fn argmax(v: &[f64]) -> usize {
    let mut j = 0;
    for (i, x) in v.iter().enumerate() {
        if x.abs() > v[j].abs() {
            j = i;
        }
    }
    j
}

/// The reciprocal condition number from `anorm` and the estimate of `|A^-1|_1` (0 where the
/// matrix is singular or `anorm` is 0; NaN in, NaN out).
pub(crate) fn rcond(anorm: f64, ainv: f64, singular: bool) -> f64 {
    if anorm.is_nan() || ainv.is_nan() {
        f64::NAN
    } else if singular || anorm == 0.0 || ainv == 0.0 {
        if ainv == 0.0 && !singular && anorm != 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    } else {
        1.0 / anorm / ainv
    }
}

fn cpu<T: Real>(
    call: &IntrinsicCall,
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> std::result::Result<(), Error> {
    let name = call.op.name();
    let s0 = &call.in_shapes[0];
    let n = s0[s0.len() - 1];
    let a = T::slice(inputs[0]);
    let o = T::slice_mut(out);
    let batch = batch_of(&call.out_shape, out_core(&call.op)).to_vec();
    let abatch = batch_of(s0, 2);
    let nn = n * n;
    let pivots = |i: usize| -> Vec<usize> {
        match inputs[1] {
            TypedVec::I32(p) => p[i * n..(i + 1) * n]
                .iter()
                .map(|&x| x.max(0) as usize)
                .collect(),
            _ => Vec::new(),
        }
    };
    let bad_pivots = |p: &[usize]| p.iter().enumerate().any(|(k, &x)| x < k || x >= n);
    let bad_pivots_error = || {
        crate::intrinsics::cpu::exec_error(format!(
            "{name}: a pivot is out of range (row k may only swap with a row k..n of the {n})"
        ))
    };
    match call.op {
        Intrinsic::Lu => for_each(name, &batch, o, n * (n + 1), |i, o| {
            let mut f = a[i * nn..(i + 1) * nn].to_vec();
            let (ipiv, _) = factor(&mut f, n);
            for r in 0..n {
                o[r * (n + 1)..r * (n + 1) + n].copy_from_slice(&f[r * n..(r + 1) * n]);
                o[r * (n + 1) + n] = T::of(ipiv[r] as f64);
            }
            Ok(())
        }),
        Intrinsic::LuUnpack => {
            if (0..crate::intrinsics::numel(&batch) as usize).any(|i| bad_pivots(&pivots(i))) {
                return Err(bad_pivots_error());
            }
            for_each(name, &batch, o, 3 * nn, |i, o| {
                let f = &a[i * nn..(i + 1) * nn];
                let ipiv = pivots(i);
                // P with A = P L U: the interchanges applied to the identity's rows, inverted.
                let mut perm: Vec<usize> = (0..n).collect();
                for (k, &p) in ipiv.iter().enumerate() {
                    perm.swap(k, p);
                }
                o.fill(T::of(0.0));
                for r in 0..n {
                    let row = &mut o[r * 3 * n..(r + 1) * 3 * n];
                    for c in 0..n {
                        if c < r {
                            row[n + c] = f[r * n + c];
                        } else {
                            row[2 * n + c] = f[r * n + c];
                        }
                    }
                    row[n + r] = T::of(1.0);
                }
                for (r, &src) in perm.iter().enumerate() {
                    o[src * 3 * n + r] = T::of(1.0);
                }
                Ok(())
            })
        }
        Intrinsic::LuSolve | Intrinsic::Solve => {
            let bi = if call.op == Intrinsic::Solve { 1 } else { 2 };
            let b = T::slice(inputs[bi]);
            let bshape = &call.in_shapes[bi];
            let bbatch = batch_of(bshape, 2);
            let r = bshape[bshape.len() - 1];
            if call.op == Intrinsic::LuSolve
                && (0..crate::intrinsics::numel(abatch) as usize).any(|i| bad_pivots(&pivots(i)))
            {
                return Err(bad_pivots_error());
            }
            for_each(name, &batch, o, n * r, |i, x| {
                let ai = batch_source(&batch, abatch, i);
                let bsrc = batch_source(&batch, bbatch, i);
                x.copy_from_slice(&b[bsrc * n * r..(bsrc + 1) * n * r]);
                let m = &a[ai * nn..(ai + 1) * nn];
                let (f, ipiv) = if call.op == Intrinsic::Solve {
                    let mut f = m.to_vec();
                    let (ipiv, info) = factor(&mut f, n);
                    if let Some(k) = info {
                        return Err(Failed {
                            at: "pivot",
                            pivot: k,
                            what: SINGULAR,
                        });
                    }
                    (f, ipiv)
                } else {
                    if let Some(k) = zero_pivot(m, n) {
                        return Err(Failed {
                            at: "pivot",
                            pivot: k,
                            what: SINGULAR,
                        });
                    }
                    (m.to_vec(), pivots(ai))
                };
                solve_factored(&f, &ipiv, n, x, r);
                Ok(())
            })
        }
        Intrinsic::Inv => for_each(name, &batch, o, nn, |i, x| {
            let mut f = a[i * nn..(i + 1) * nn].to_vec();
            let (ipiv, info) = factor(&mut f, n);
            if let Some(k) = info {
                return Err(Failed {
                    at: "pivot",
                    pivot: k,
                    what: SINGULAR,
                });
            }
            x.fill(T::of(0.0));
            for k in 0..n {
                x[k * n + k] = T::of(1.0);
            }
            solve_factored(&f, &ipiv, n, x, n);
            Ok(())
        }),
        Intrinsic::Det | Intrinsic::Slogdet => {
            let per = if call.op == Intrinsic::Det { 1 } else { 2 };
            for_each(name, &batch, o, per, |i, d| {
                let mut f = a[i * nn..(i + 1) * nn].to_vec();
                let (ipiv, _) = factor(&mut f, n);
                let swaps = ipiv.iter().enumerate().filter(|(k, p)| *k != **p).count();
                let sign0 = if swaps % 2 == 0 { 1.0 } else { -1.0 };
                let diag = (0..n).map(|k| f[k * n + k].to_f64());
                if per == 1 {
                    d[0] = T::of(sign0 * diag.product::<f64>());
                } else {
                    let (mut sign, mut log) = (sign0, 0.0f64);
                    for u in diag {
                        sign *= u.signum();
                        log += u.abs().ln();
                        if u.is_nan() {
                            sign = f64::NAN;
                        }
                    }
                    if log == f64::NEG_INFINITY {
                        sign = 0.0;
                    }
                    d[0] = T::of(sign);
                    d[1] = T::of(log);
                }
                Ok(())
            })
        }
        Intrinsic::LuCond => {
            let anorm = T::slice(inputs[2]);
            if (0..crate::intrinsics::numel(abatch) as usize).any(|i| bad_pivots(&pivots(i))) {
                return Err(bad_pivots_error());
            }
            for_each(name, &batch, o, 1, |i, c| {
                let f = &a[i * nn..(i + 1) * nn];
                let ipiv = pivots(i);
                let singular = zero_pivot(f, n).is_some();
                let est = if singular {
                    f64::INFINITY
                } else {
                    inverse_norm1(n, |v, t| {
                        let mut x: Vec<T> = v.iter().map(|&e| T::of(e)).collect();
                        if t {
                            solve_factored_t(f, &ipiv, n, &mut x);
                        } else {
                            solve_factored(f, &ipiv, n, &mut x, 1);
                        }
                        for (d, s) in v.iter_mut().zip(&x) {
                            *d = s.to_f64();
                        }
                    })
                };
                c[0] = T::of(rcond(anorm[i].to_f64(), est, singular));
                Ok(())
            })
        }
        _ => unreachable!("the LU family called for {:?}", call.op),
    }
}

/// The plain f64 reference of each routine.
fn reference(op: &Intrinsic, inputs: &[(&TypedVec, &[usize])], out_shape: &[usize]) -> Vec<f64> {
    let (av, s0) = inputs[0];
    let a = dense::f64s(av);
    let n = s0[s0.len() - 1];
    let nn = n * n;
    let abatch = batch_of(s0, 2);
    let batch = batch_of(out_shape, out_core(op));
    let count: usize = batch.iter().product();
    let pivots = |i: usize| -> Vec<usize> {
        (0..n)
            .map(|k| inputs[1].0.get(i * n + k).as_f64().max(0.0) as usize)
            .map(|p| p.min(n.saturating_sub(1)))
            .collect()
    };
    let mut out = Vec::with_capacity(out_shape.iter().product());
    for i in 0..count {
        match op {
            Intrinsic::Lu => {
                let mut f = a[i * nn..(i + 1) * nn].to_vec();
                let (ipiv, _) = dense::lu(&mut f, n);
                for r in 0..n {
                    out.extend_from_slice(&f[r * n..(r + 1) * n]);
                    out.push(ipiv[r] as f64);
                }
            }
            Intrinsic::LuUnpack => {
                let f = &a[i * nn..(i + 1) * nn];
                let mut p = vec![0.0; nn];
                for k in 0..n {
                    p[k * n + k] = 1.0;
                }
                // P = (the interchanges applied to I in order)^T.
                dense::swap_rows(&pivots(i), &mut p, n);
                let p = dense::transpose(&p, n, n);
                for r in 0..n {
                    out.extend_from_slice(&p[r * n..(r + 1) * n]);
                    out.extend((0..n).map(|c| match c.cmp(&r) {
                        std::cmp::Ordering::Less => f[r * n + c],
                        std::cmp::Ordering::Equal => 1.0,
                        _ => 0.0,
                    }));
                    out.extend((0..n).map(|c| if c >= r { f[r * n + c] } else { 0.0 }));
                }
            }
            Intrinsic::LuSolve | Intrinsic::Solve => {
                let bi = if *op == Intrinsic::Solve { 1 } else { 2 };
                let (bv, bs) = inputs[bi];
                let r = bs[bs.len() - 1];
                let src = batch_source(batch, batch_of(bs, 2), i);
                let mut x: Vec<f64> = (0..n * r)
                    .map(|e| bv.get(src * n * r + e).as_f64())
                    .collect();
                let ai = batch_source(batch, abatch, i);
                let m = &a[ai * nn..(ai + 1) * nn];
                if *op == Intrinsic::Solve {
                    let mut f = m.to_vec();
                    let (ipiv, _) = dense::lu(&mut f, n);
                    dense::lu_solve(&f, &ipiv, n, &mut x, r);
                } else {
                    dense::lu_solve(m, &pivots(ai), n, &mut x, r);
                }
                out.extend(x);
            }
            Intrinsic::Inv => out.extend(dense::inverse(&a[i * nn..(i + 1) * nn], n)),
            Intrinsic::Det | Intrinsic::Slogdet => {
                let mut f = a[i * nn..(i + 1) * nn].to_vec();
                let (ipiv, _) = dense::lu(&mut f, n);
                let mut det = 1.0;
                for (k, &p) in ipiv.iter().enumerate() {
                    det *= f[k * n + k];
                    if p != k {
                        det = -det;
                    }
                }
                if *op == Intrinsic::Det {
                    out.push(det);
                } else {
                    let log: f64 = (0..n).map(|k| f[k * n + k].abs().ln()).sum();
                    out.push(if det.is_nan() {
                        f64::NAN
                    } else {
                        det.signum() * (det != 0.0) as u8 as f64
                    });
                    out.push(log);
                }
            }
            Intrinsic::LuCond => {
                let f = &a[i * nn..(i + 1) * nn];
                let ipiv = pivots(i);
                let singular = (0..n).any(|k| f[k * n + k] == 0.0);
                // The exact norm of the inverse would differ from an estimate; the reference
                // runs the same estimator on its own f64 solves.
                let est = if singular {
                    f64::INFINITY
                } else {
                    inverse_norm1(n, |v, t| {
                        if t {
                            let ft = dense::transpose(f, n, n);
                            dense::tri_solve(&ft, n, v, 1, false, false);
                            dense::tri_solve(&ft, n, v, 1, true, true);
                            for (k, &p) in ipiv.iter().enumerate().rev() {
                                v.swap(k, p);
                            }
                        } else {
                            dense::lu_solve(f, &ipiv, n, v, 1);
                        }
                    })
                };
                out.push(rcond(inputs[2].0.get(i).as_f64(), est, singular));
            }
            _ => unreachable!("the LU family called for {op:?}"),
        }
    }
    out
}

/// `tri` with `unit` diagonal inverted (f64).
fn tri_inverse(t: &[f64], n: usize, upper: bool, unit: bool) -> Vec<f64> {
    let mut x = vec![0.0; n * n];
    for k in 0..n {
        x[k * n + k] = 1.0;
    }
    dense::tri_solve(t, n, &mut x, n, upper, unit);
    x
}

/// L (unit lower) and U of packed factors.
pub(crate) fn split(f: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut l = vec![0.0; n * n];
    let mut u = vec![0.0; n * n];
    for r in 0..n {
        for c in 0..n {
            match c.cmp(&r) {
                std::cmp::Ordering::Less => l[r * n + c] = f[r * n + c],
                std::cmp::Ordering::Equal => {
                    l[r * n + c] = 1.0;
                    u[r * n + c] = f[r * n + c];
                }
                _ => u[r * n + c] = f[r * n + c],
            }
        }
    }
    (l, u)
}

/// `n * |A^-1|^T .* size(A)` summed: the relative first-order change of `det(A)`.
fn det_change(ainv: &[f64], size: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..n {
            s += ainv[j * n + i].abs() * size[i * n + j];
        }
    }
    let s = n as f64 * s;
    if s.is_finite() { s } else { f64::INFINITY }
}

/// The magnitudes of each routine's reference (see the module comment of `linalg`).
fn magnitudes(
    op: &Intrinsic,
    out_shape: &[usize],
    inputs: &[MagInput],
    result: &TypedVec,
) -> Vec<f64> {
    let a = dense::f64s(inputs[0].value);
    let s0 = inputs[0].shape;
    let n = s0[s0.len() - 1];
    let nn = n * n;
    let abatch = batch_of(s0, 2);
    let batch = batch_of(out_shape, out_core(op));
    let count: usize = batch.iter().product();
    let res = dense::f64s(result);
    let mut out = Vec::with_capacity(res.len());
    let nf = n as f64;
    for i in 0..count {
        match op {
            Intrinsic::Lu => {
                let per = n * (n + 1);
                let r = &res[i * per..(i + 1) * per];
                let f: Vec<f64> = (0..nn).map(|e| r[(e / n) * (n + 1) + e % n]).collect();
                let (l, u) = split(&f, n);
                let mut ma = inputs[0].magnitude[i * nn..(i + 1) * nn].to_vec();
                let ipiv: Vec<usize> = (0..n).map(|k| r[k * (n + 1) + n] as usize).collect();
                dense::swap_rows(&ipiv, &mut ma, n);
                let lu = dense::mul(&dense::abs(&l), &dense::abs(&u), n, n, n);
                let backward: Vec<f64> = lu.iter().zip(&ma).map(|(x, y)| x + y).collect();
                let linv = dense::abs(&tri_inverse(&l, n, false, true));
                let uinv = dense::abs(&tri_inverse(&u, n, true, false));
                let g = dense::mul(&dense::mul(&linv, &backward, n, n, n), &uinv, n, n, n);
                let finite = g.iter().all(|v| v.is_finite());
                let (mut gu, mut gl) = (g.clone(), g);
                for rr in 0..n {
                    for c in 0..n {
                        if c < rr {
                            gu[rr * n + c] = 0.0;
                        } else {
                            gl[rr * n + c] = 0.0;
                        }
                    }
                }
                let du = dense::mul(&gu, &dense::abs(&u), n, n, n);
                let dl = dense::mul(&dense::abs(&l), &gl, n, n, n);
                for rr in 0..n {
                    for c in 0..n {
                        let m = if c < rr {
                            dl[rr * n + c]
                        } else {
                            du[rr * n + c]
                        };
                        out.push(if finite { nf * m } else { f64::INFINITY });
                    }
                    out.push(if finite { 0.0 } else { f64::INFINITY });
                }
            }
            Intrinsic::LuUnpack => {
                let m = &inputs[0].magnitude[i * nn..(i + 1) * nn];
                for r in 0..n {
                    out.extend(std::iter::repeat_n(0.0, n));
                    out.extend((0..n).map(|c| {
                        if c < r {
                            m[r * n + c] + a[i * nn + r * n + c].abs()
                        } else {
                            0.0
                        }
                    }));
                    out.extend((0..n).map(|c| {
                        if c >= r {
                            m[r * n + c] + a[i * nn + r * n + c].abs()
                        } else {
                            0.0
                        }
                    }));
                }
            }
            Intrinsic::Solve | Intrinsic::LuSolve | Intrinsic::Inv => {
                let ai = batch_source(batch, abatch, i);
                let m = &a[ai * nn..(ai + 1) * nn];
                let ma = &inputs[0].magnitude[ai * nn..(ai + 1) * nn];
                let (asize, ainv) = if *op == Intrinsic::LuSolve {
                    let (l, u) = split(m, n);
                    let (al, au) = (
                        dense::size(&l, &vec![0.0; nn]),
                        dense::size(&u, &vec![0.0; nn]),
                    );
                    let lu = dense::mul(&l, &u, n, n, n);
                    let s: Vec<f64> = dense::mul(&al, &au, n, n, n)
                        .iter()
                        .zip(ma)
                        .map(|(x, y)| x + y)
                        .collect();
                    (s, dense::inverse(&lu, n))
                } else {
                    (dense::size(m, ma), dense::inverse(m, n))
                };
                let (x, bsize, r) = if *op == Intrinsic::Inv {
                    let mut id = vec![0.0; nn];
                    for k in 0..n {
                        id[k * n + k] = 1.0;
                    }
                    (res[i * nn..(i + 1) * nn].to_vec(), id, n)
                } else {
                    let bi = if *op == Intrinsic::Solve { 1 } else { 2 };
                    let bs = inputs[bi].shape;
                    let r = bs[bs.len() - 1];
                    let src = batch_source(batch, batch_of(bs, 2), i);
                    let bv: Vec<f64> = (0..n * r)
                        .map(|e| inputs[bi].value.get(src * n * r + e).as_f64())
                        .collect();
                    let mut bsize =
                        dense::size(&bv, &inputs[bi].magnitude[src * n * r..(src + 1) * n * r]);
                    if *op == Intrinsic::LuSolve {
                        dense::swap_rows(
                            &(0..n)
                                .map(|k| inputs[1].value.get(ai * n + k).as_f64().max(0.0) as usize)
                                .map(|p| p.min(n - 1))
                                .collect::<Vec<_>>(),
                            &mut bsize,
                            r,
                        );
                    }
                    (res[i * n * r..(i + 1) * n * r].to_vec(), bsize, r)
                };
                out.extend(dense::solve_magnitudes(&ainv, &asize, &x, &bsize, n, r));
            }
            Intrinsic::Det | Intrinsic::Slogdet => {
                let m = &a[i * nn..(i + 1) * nn];
                let size = dense::size(m, &inputs[0].magnitude[i * nn..(i + 1) * nn]);
                let rel = det_change(&dense::inverse(m, n), &size, n);
                if *op == Intrinsic::Det {
                    let d = res[i].abs() * rel;
                    out.push(if d.is_nan() { f64::INFINITY } else { d });
                } else {
                    out.push(rel);
                    out.push(rel);
                }
            }
            Intrinsic::LuCond => out.push(nf * res[i].abs()),
            _ => unreachable!("the LU family called for {op:?}"),
        }
    }
    out
}
