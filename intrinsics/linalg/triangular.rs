//! `triangular_solve`: `A x = b` for a triangular `a [..., n, n]` (upper or lower; with a unit
//! diagonal that is not read), by faer's blocked triangular solves. Only the triangle named is
//! read. An exact zero on the diagonal (not unit) fails the program, naming the matrix of the
//! batch and the row.

use super::dense;
use super::lu::rhs;
use super::{Failed, Real, batch_of, batch_source, by_dtype, float_dtype, for_each, square};
use crate::error::{Error, Result};
use crate::intrinsics::{Cost, IntrinsicDef, MagInput, Operand, Output};
use crate::ir::{Intrinsic, Site, TypedVec};
use crate::proggen::sequence::IntrinsicCall;
use faer::{MatMut, MatRef, Par};

/// The triangular solve's definition.
pub struct TriangularSolveDef;

/// What a zero on the diagonal is called in errors.
pub(crate) const ZERO_DIAGONAL: &str = "is singular (an exact zero on the diagonal)";

fn flags(op: &Intrinsic) -> (bool, bool) {
    match op {
        Intrinsic::TriangularSolve {
            upper,
            unit_diagonal,
        } => (*upper, *unit_diagonal),
        _ => unreachable!("triangular_solve called for {op:?}"),
    }
}

/// Solves `t x = b` in place (`x [n, r]` holds b) with faer; `t` row-major `[n, n]`.
pub(crate) fn solve_tri<T: Real>(
    t: &[T],
    n: usize,
    x: &mut [T],
    r: usize,
    upper: bool,
    unit: bool,
) {
    solve_tri_ref(MatRef::from_row_major_slice(t, n, n), x, n, r, upper, unit);
}

/// As [`solve_tri`] for a faer view (a transpose).
pub(crate) fn solve_tri_ref<T: Real>(
    t: MatRef<'_, T>,
    x: &mut [T],
    n: usize,
    r: usize,
    upper: bool,
    unit: bool,
) {
    use faer::linalg::triangular_solve as ts;
    let xm = MatMut::from_row_major_slice_mut(x, n, r);
    match (upper, unit) {
        (false, false) => ts::solve_lower_triangular_in_place(t, xm, Par::Seq),
        (false, true) => ts::solve_unit_lower_triangular_in_place(t, xm, Par::Seq),
        (true, false) => ts::solve_upper_triangular_in_place(t, xm, Par::Seq),
        (true, true) => ts::solve_unit_upper_triangular_in_place(t, xm, Par::Seq),
    }
}

/// The first exact zero on the diagonal of `t [n, n]`.
pub(crate) fn zero_diagonal<T: Real>(t: &[T], n: usize) -> Option<usize> {
    (0..n).find(|&k| t[k * n + k] == T::of(0.0))
}

/// The triangle of `t` (`upper` or lower, unit diagonal or not) as a full f64 matrix.
pub(crate) fn triangle(t: &[f64], n: usize, upper: bool, unit: bool) -> Vec<f64> {
    let mut o = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if i == j {
                o[i * n + j] = if unit { 1.0 } else { t[i * n + j] };
            } else if (j > i) == upper {
                o[i * n + j] = t[i * n + j];
            }
        }
    }
    o
}

impl IntrinsicDef for TriangularSolveDef {
    fn name(&self) -> &'static str {
        "triangular_solve"
    }

    fn check(&self, _op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let name = self.name();
        let dtype = float_dtype(name, inputs, &[], site)?;
        let (batch, n) = square(name, "the matrix", inputs[0].shape, site)?;
        let (b, r) = rhs(name, batch, n, &inputs[1], site)?;
        let shape = b.iter().copied().chain([n, r]).collect();
        Ok(vec![Output { shape, dtype }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (upper, unit) = flags(op);
        w.push(upper as u64 | (unit as u64) << 1);
    }

    /// Forward or back substitution in f64.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (upper, unit) = flags(op);
        let v = solve_reference(inputs, &outputs[0].shape, |t, n, x, r| {
            dense::tri_solve(t, n, x, r, upper, unit)
        });
        Ok(vec![super::reference_output(outputs[0].dtype, &v)])
    }

    /// `n * |T^-1| (|T| |x| + |b|)` (see `linalg`'s module comment).
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let (upper, unit) = flags(op);
        solve_magnitudes(&out.shape, inputs, result, |m, n| {
            let t = triangle(m, n, upper, unit);
            let mut inv = vec![0.0; n * n];
            for k in 0..n {
                inv[k * n + k] = 1.0;
            }
            dense::tri_solve(&t, n, &mut inv, n, upper, unit);
            (dense::abs(&t), inv)
        })
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let o = &call.out_shape;
        let (n, r) = (o[o.len() - 2] as f64, o[o.len() - 1] as f64);
        let count = crate::intrinsics::numel(batch_of(o, 2)) as f64;
        super::cost(call, count * n * n * r)
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

fn cpu<T: Real>(
    call: &IntrinsicCall,
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> std::result::Result<(), Error> {
    let (upper, unit) = flags(&call.op);
    let s0 = &call.in_shapes[0];
    let n = s0[s0.len() - 1];
    let (a, b) = (T::slice(inputs[0]), T::slice(inputs[1]));
    let bs = &call.in_shapes[1];
    let r = bs[bs.len() - 1];
    let batch = batch_of(&call.out_shape, 2).to_vec();
    for_each(call.op.name(), &batch, T::slice_mut(out), n * r, |i, x| {
        let ai = batch_source(&batch, batch_of(s0, 2), i);
        let bi = batch_source(&batch, batch_of(bs, 2), i);
        let t = &a[ai * n * n..(ai + 1) * n * n];
        if !unit && let Some(k) = zero_diagonal(t, n) {
            return Err(Failed {
                at: "pivot",
                pivot: k,
                what: ZERO_DIAGONAL,
            });
        }
        x.copy_from_slice(&b[bi * n * r..(bi + 1) * n * r]);
        solve_tri(t, n, x, r, upper, unit);
        Ok(())
    })
}

/// The reference of a solve with matrix input 0 and right-hand side input 1: `solve(m, n, x, r)`
/// solves in place with the f64 matrix.
pub(crate) fn solve_reference(
    inputs: &[(&TypedVec, &[usize])],
    out_shape: &[usize],
    solve: impl Fn(&[f64], usize, &mut [f64], usize),
) -> Vec<f64> {
    let (av, s0) = inputs[0];
    let (bv, bs) = inputs[1];
    let n = s0[s0.len() - 1];
    let r = bs[bs.len() - 1];
    let a = dense::f64s(av);
    let batch = batch_of(out_shape, 2);
    let count: usize = batch.iter().product();
    let mut out = Vec::with_capacity(count * n * r);
    for i in 0..count {
        let ai = batch_source(batch, batch_of(s0, 2), i);
        let bi = batch_source(batch, batch_of(bs, 2), i);
        let mut x: Vec<f64> = (0..n * r)
            .map(|e| bv.get(bi * n * r + e).as_f64())
            .collect();
        solve(&a[ai * n * n..(ai + 1) * n * n], n, &mut x, r);
        out.extend(x);
    }
    out
}

/// The magnitudes of a solve with matrix input 0 and right-hand side input 1:
/// `sizes(m, n)` gives the sizes of the matrix's terms and the inverse of the matrix solved with.
pub(crate) fn solve_magnitudes(
    out_shape: &[usize],
    inputs: &[MagInput],
    result: &TypedVec,
    sizes: impl Fn(&[f64], usize) -> (Vec<f64>, Vec<f64>),
) -> Vec<f64> {
    let s0 = inputs[0].shape;
    let bs = inputs[1].shape;
    let n = s0[s0.len() - 1];
    let r = bs[bs.len() - 1];
    let a = dense::f64s(inputs[0].value);
    let res = dense::f64s(result);
    let batch = batch_of(out_shape, 2);
    let count: usize = batch.iter().product();
    let mut out = Vec::with_capacity(res.len());
    for i in 0..count {
        let ai = batch_source(batch, batch_of(s0, 2), i);
        let bi = batch_source(batch, batch_of(bs, 2), i);
        let (asize, ainv) = sizes(&a[ai * n * n..(ai + 1) * n * n], n);
        let ma = &inputs[0].magnitude[ai * n * n..(ai + 1) * n * n];
        let asize: Vec<f64> = asize.iter().zip(ma).map(|(x, y)| x + y).collect();
        let bvals: Vec<f64> = (0..n * r)
            .map(|e| inputs[1].value.get(bi * n * r + e).as_f64())
            .collect();
        let bsize = dense::size(&bvals, &inputs[1].magnitude[bi * n * r..(bi + 1) * n * r]);
        let x = &res[i * n * r..(i + 1) * n * r];
        out.extend(dense::solve_magnitudes(&ainv, &asize, x, &bsize, n, r));
    }
    out
}
