//! Dense linear algebra (issue 21), f32 and f64, batched over leading axes: what the routines
//! share (the checks of square, shape and type; batch iteration with NumPy broadcasting of the
//! batch axes where two operands meet; the error of a failing matrix; the element trait the CPU
//! kernels are generic over; plain f64 helpers for the references and their conditioning), and
//! one file per family: `lu.rs` (lu, lu_unpack, lu_solve, lu_cond, solve, inv, det, slogdet),
//! `cholesky.rs` (cholesky, cholesky_solve), `triangular.rs` (triangular_solve), `qr.rs` (qr,
//! lstsq), `batched/` (the GPU kernels of small-matrix lu, solve and inv) and `blocked/` (the
//! blocked GPU LU: lu, solve and inv of larger matrices, det and slogdet of every size).
//!
//! The CPU entries run faer (one matrix per rayon task over the batch). On the GPU executors,
//! `lu`, `solve` and `inv` of small matrices (`n <= 64`, within the local memory budget) run
//! `batched/` (one work-group per matrix), larger ones and `det`/`slogdet` run `blocked/` (a
//! multi-pass plan: panel, row interchanges and `U12`, tiled trailing update, per panel); the
//! other routines (`lu_solve`, `lu_unpack`, `lu_cond`, Cholesky, QR, `triangular_solve`) are
//! `Unsupported` there, so a GPU executor runs the CPU entry from host copies (see "Steps on
//! the host" in `intrinsics/mod.rs`). The references are written independently of faer: plain
//! f64 loops (Gaussian elimination choosing the first largest |pivot|, Cholesky–Banachiewicz,
//! modified Gram-Schmidt for QR).
//!
//! **Singular** means an exact zero pivot, as LAPACK: `lu` still returns the factors (LAPACK's
//! `info > 0`; `det` is 0), while `solve`, `inv`, `lu_solve` fail the program with an error that
//! names the matrix of the batch and the pivot. Cholesky fails at the first pivot that is not
//! positive (or NaN). NaN in gives NaN out, never a hang.
//!
//! **Comparison tolerances** (`magnitudes`): factorisations and solves round by about `n * eps`
//! relative to the sizes of their terms, and errors in the result grow with the conditioning.
//! Each routine's magnitude is a first-order forward error bound for a backward error of
//! `n * |A|` (plus the inputs' own magnitudes): for a solve `n * |A^-1| (|A| |x| + |b|)`, for
//! the factors the perturbation of `L`, `U` (or Cholesky's `L`, QR's `Q`, `R`) under such a
//! backward error, for `det` `n * |det| * sum |A^-1|^T .* |A|`. A singular matrix's magnitudes
//! are infinite (any result matches). The bounds hold for every executor's kernels: the GPU's
//! batched and blocked LUs have the same `n * eps` backward error as faer's (their `det` keeps
//! the pivots' product as mantissa and exponent: `n` roundings, no overflow short of the
//! result's). Where two pivot candidates tie to rounding, executors may choose different rows;
//! the factors then differ by more than these bounds while `P L U = A` holds for each.

pub mod batched;
pub mod blocked;
pub mod cholesky;
pub mod lu;
pub mod qr;
pub mod triangular;

use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, Site, TypedVec};
use crate::proggen::sequence::IntrinsicCall;
use rayon::prelude::*;

/// The element types the CPU kernels take (f32, f64): faer's real field plus what the kernels
/// here need.
pub(crate) trait Real:
    faer::traits::RealField
    + Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::SubAssign
    + 'static
{
    fn to_f64(self) -> f64;
    fn of(x: f64) -> Self;
    fn slice(v: &TypedVec) -> &[Self];
    fn slice_mut(v: &mut TypedVec) -> &mut [Self];
    fn mag(self) -> Self {
        if self < Self::of(0.0) { -self } else { self }
    }
}

macro_rules! real {
    ($t:ty, $v:ident) => {
        impl Real for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn of(x: f64) -> Self {
                x as $t
            }
            fn slice(v: &TypedVec) -> &[Self] {
                match v {
                    TypedVec::$v(v) => v,
                    _ => panic!("linalg: expected {}", stringify!($t)),
                }
            }
            fn slice_mut(v: &mut TypedVec) -> &mut [Self] {
                match v {
                    TypedVec::$v(v) => v,
                    _ => panic!("linalg: expected {}", stringify!($t)),
                }
            }
        }
    };
}
real!(f32, F32);
real!(f64, F64);

/// The float type of a linear-algebra call: every float operand (all but the `int` positions)
/// f32, or every one f64.
pub(crate) fn float_dtype(
    name: &str,
    inputs: &[crate::intrinsics::Operand],
    int: &[usize],
    site: Site,
) -> Result<DType> {
    let d = inputs[0].dtype;
    for (i, x) in inputs.iter().enumerate() {
        if int.contains(&i) {
            if x.dtype != DType::I32 {
                return Err(Error::new(
                    ErrorKind::DType,
                    format!("{name}: the pivots must be i32, not {}", x.dtype),
                )
                .at(site));
            }
        } else if x.dtype != d || !d.is_float() {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "{name} of {} and {}: the matrices must be all f32 or all f64",
                    d, x.dtype
                ),
            )
            .at(site));
        }
    }
    Ok(d)
}

/// A `[..., rows, cols]` operand: its batch shape, rows and columns.
pub(crate) fn matrix<'a>(
    name: &str,
    what: &str,
    shape: &'a [usize],
    site: Site,
) -> Result<(&'a [usize], usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::new(
            ErrorKind::Shape,
            format!("{name}: {what} of shape {shape:?} is not a matrix"),
        )
        .at(site)
        .hint("linear algebra takes [..., rows, cols] matrices (leading axes are a batch)"));
    }
    let r = shape.len() - 2;
    Ok((&shape[..r], shape[r], shape[r + 1]))
}

/// A square `[..., n, n]` operand: its batch shape and `n`.
pub(crate) fn square<'a>(
    name: &str,
    what: &str,
    shape: &'a [usize],
    site: Site,
) -> Result<(&'a [usize], usize)> {
    let (b, r, c) = matrix(name, what, shape, site)?;
    if r != c {
        return Err(Error::new(
            ErrorKind::Shape,
            format!("{name}: {what} of shape {shape:?} is not square"),
        )
        .at(site));
    }
    Ok((b, r))
}

/// NumPy broadcasting of two batch shapes.
pub(crate) fn broadcast_batch(
    name: &str,
    a: &[usize],
    b: &[usize],
    site: Site,
) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            _ => Err(Error::new(
                ErrorKind::Shape,
                format!("{name}: batch shapes {a:?} and {b:?} do not broadcast"),
            )
            .at(site)),
        })
        .collect()
}

/// The linear index in batch shape `from` of element `i` of the broadcast batch shape `out`.
pub(crate) fn batch_source(out: &[usize], from: &[usize], mut i: usize) -> usize {
    let lead = out.len() - from.len();
    let (mut src, mut stride) = (0, 1);
    for d in (0..out.len()).rev() {
        let idx = i % out[d];
        i /= out[d];
        if d >= lead {
            let f = from[d - lead];
            if f != 1 {
                src += idx * stride;
            }
            stride *= f;
        }
    }
    src
}

/// The batch shape of an output of shape `out_shape` whose last `core` axes are the matrix.
pub(crate) fn batch_of(out_shape: &[usize], core: usize) -> &[usize] {
    &out_shape[..out_shape.len() - core]
}

/// A matrix of the batch that the routine cannot factor or solve with, at `pivot`.
pub(crate) struct Failed {
    /// What `pivot` counts ("pivot", "column").
    pub at: &'static str,
    pub pivot: usize,
    pub what: &'static str,
}

/// The error of matrix `index` of the batch of shape `batch` failing in `routine`.
pub(crate) fn failed_error(routine: &str, batch: &[usize], index: usize, f: Failed) -> Error {
    let mut at = Vec::with_capacity(batch.len());
    let mut i = index;
    for &d in batch.iter().rev() {
        at.push(i % d.max(1));
        i /= d.max(1);
    }
    at.reverse();
    let which = if batch.is_empty() {
        "the matrix".to_string()
    } else {
        format!("matrix {index} of the batch (batch index {at:?})")
    };
    crate::intrinsics::cpu::exec_error(format!(
        "{routine}: {which} {} at {} {}",
        f.what, f.at, f.pivot
    ))
}

/// Runs `f(i, out_i)` for each matrix `i` of a batch in parallel, `out_i` the `per` elements of
/// output `i`; the first failing matrix (lowest index) is the call's error.
pub(crate) fn for_each<T: Real>(
    routine: &str,
    batch: &[usize],
    out: &mut [T],
    per: usize,
    f: impl Fn(usize, &mut [T]) -> std::result::Result<(), Failed> + Sync,
) -> std::result::Result<(), Error> {
    if per == 0 {
        return Ok(());
    }
    let fail = out
        .par_chunks_mut(per)
        .enumerate()
        .filter_map(|(i, o)| f(i, o).err().map(|e| (i, e)))
        .min_by_key(|(i, _)| *i);
    match fail {
        Some((i, e)) => Err(failed_error(routine, batch, i, e)),
        None => Ok(()),
    }
}

/// Runs a generic CPU body on the call's float type.
macro_rules! by_dtype {
    ($call:expr, $f:ident ( $($arg:expr),* )) => {
        match $call.dtype {
            crate::ir::DType::F32 => $f::<f32>($($arg),*),
            crate::ir::DType::F64 => $f::<f64>($($arg),*),
            d => Err(crate::intrinsics::cpu::exec_error(format!(
                "{} of {d} matrices",
                $call.op.name()
            ))),
        }
    };
}
pub(crate) use by_dtype;

/// The flop count of a call as bytes and flops (each input read once, the output written once).
/// A reference result computed in f64, as a value of the output's element type.
pub(crate) fn reference_output(dtype: crate::ir::DType, v: &[f64]) -> TypedVec {
    crate::ir::collect(dtype, v.len(), |i| crate::ir::Scalar::F64(v[i]))
}

pub(crate) fn cost(call: &IntrinsicCall, flops: f64) -> crate::intrinsics::Cost {
    let el = call.dtype.size() as u64;
    let bytes: u64 = call
        .in_shapes
        .iter()
        .chain(std::iter::once(&call.out_shape))
        .map(|s| crate::intrinsics::numel(s))
        .sum::<u64>()
        * el;
    crate::intrinsics::Cost {
        flops: flops as u64,
        bytes,
    }
}

/// Plain f64 dense-matrix helpers (row-major) for the references and their conditioning,
/// independent of faer.
pub(crate) mod dense {
    use crate::ir::TypedVec;

    /// All elements of `v` as f64.
    pub fn f64s(v: &TypedVec) -> Vec<f64> {
        (0..v.len()).map(|i| v.get(i).as_f64()).collect()
    }

    /// `a [m, k] * b [k, n]`.
    pub fn mul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                let x = a[i * k + p];
                if x == 0.0 {
                    continue;
                }
                for j in 0..n {
                    c[i * n + j] += x * b[p * n + j];
                }
            }
        }
        c
    }

    /// Element-wise absolute values.
    pub fn abs(a: &[f64]) -> Vec<f64> {
        a.iter().map(|x| x.abs()).collect()
    }

    /// The transpose of `a [m, n]`.
    pub fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                t[j * m + i] = a[i * n + j];
            }
        }
        t
    }

    /// Gaussian elimination with partial pivoting in place (LAPACK getf2): the pivot of column
    /// `k` is the first row of largest |value| at or below `k`; an exact zero pivot skips the
    /// scaling (the factors stay usable) and the first such `k` is returned beside `ipiv`.
    pub fn lu(a: &mut [f64], n: usize) -> (Vec<usize>, Option<usize>) {
        let mut ipiv = vec![0; n];
        let mut info = None;
        for k in 0..n {
            let mut p = k;
            let mut best = 0.0;
            for i in k..n {
                let v = a[i * n + k].abs();
                if v > best {
                    best = v;
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
            if d == 0.0 {
                info.get_or_insert(k);
                continue;
            }
            for i in k + 1..n {
                a[i * n + k] /= d;
                let l = a[i * n + k];
                for j in k + 1..n {
                    a[i * n + j] -= l * a[k * n + j];
                }
            }
        }
        (ipiv, info)
    }

    /// Applies the row interchanges `ipiv` (in order) to `b [n, r]`.
    pub fn swap_rows(ipiv: &[usize], b: &mut [f64], r: usize) {
        for (k, &p) in ipiv.iter().enumerate() {
            if p != k {
                for j in 0..r {
                    b.swap(k * r + j, p * r + j);
                }
            }
        }
    }

    /// Solves `t x = b` in place for triangular `t [n, n]` (`upper` or lower; `unit`: the
    /// diagonal taken as 1), `b [n, r]`.
    pub fn tri_solve(t: &[f64], n: usize, b: &mut [f64], r: usize, upper: bool, unit: bool) {
        let rows: Vec<usize> = if upper {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for &i in &rows {
            for c in 0..r {
                let mut s = b[i * r + c];
                let js: Box<dyn Iterator<Item = usize>> = if upper {
                    Box::new(i + 1..n)
                } else {
                    Box::new(0..i)
                };
                for j in js {
                    s -= t[i * n + j] * b[j * r + c];
                }
                b[i * r + c] = if unit { s } else { s / t[i * n + i] };
            }
        }
    }

    /// Solves `A x = b` from the packed factors of [`lu`].
    pub fn lu_solve(lu: &[f64], ipiv: &[usize], n: usize, b: &mut [f64], r: usize) {
        swap_rows(ipiv, b, r);
        tri_solve(lu, n, b, r, false, true);
        tri_solve(lu, n, b, r, true, false);
    }

    /// The inverse of `a [n, n]` (non-finite entries where `a` is singular).
    pub fn inverse(a: &[f64], n: usize) -> Vec<f64> {
        let mut f = a.to_vec();
        let (ipiv, _) = lu(&mut f, n);
        let mut x = vec![0.0; n * n];
        for i in 0..n {
            x[i * n + i] = 1.0;
        }
        lu_solve(&f, &ipiv, n, &mut x, n);
        x
    }

    /// `n * |ainv| (asize |x| + bsize)`: the first-order forward error of a solve whose backward
    /// error is `asize` (the sizes of `A`'s terms) and `bsize`, for `ainv [n, n]`, `x [n, r]`;
    /// infinite where `ainv` is not finite.
    pub fn solve_magnitudes(
        ainv: &[f64],
        asize: &[f64],
        x: &[f64],
        bsize: &[f64],
        n: usize,
        r: usize,
    ) -> Vec<f64> {
        if ainv.iter().any(|v| !v.is_finite()) {
            return vec![f64::INFINITY; n * r];
        }
        let ax = mul(asize, &abs(x), n, n, r);
        let rhs: Vec<f64> = ax.iter().zip(bsize).map(|(a, b)| a + b).collect();
        let m = mul(&abs(ainv), &rhs, n, n, r);
        m.into_iter()
            .map(|v| {
                if v.is_finite() {
                    n as f64 * v
                } else {
                    f64::INFINITY
                }
            })
            .collect()
    }

    /// Element-wise maximum of `|v|` and the input magnitudes `m`.
    pub fn size(v: &[f64], m: &[f64]) -> Vec<f64> {
        v.iter().zip(m).map(|(a, b)| a.abs().max(*b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sources_broadcast() {
        // out [2, 3], from [3]: rows repeat; from [2, 1]: columns repeat.
        let s: Vec<usize> = (0..6).map(|i| batch_source(&[2, 3], &[3], i)).collect();
        assert_eq!(s, vec![0, 1, 2, 0, 1, 2]);
        let s: Vec<usize> = (0..6).map(|i| batch_source(&[2, 3], &[2, 1], i)).collect();
        assert_eq!(s, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(batch_source(&[], &[], 0), 0);
    }

    #[test]
    fn reference_lu_reproduces_the_matrix() {
        let a = vec![2.0, 1.0, 1.0, 4.0, -6.0, 0.0, -2.0, 7.0, 2.0];
        let mut f = a.clone();
        let (ipiv, info) = dense::lu(&mut f, 3);
        assert_eq!(info, None);
        assert_eq!(ipiv[0], 1);
        let inv = dense::inverse(&a, 3);
        let id = dense::mul(&a, &inv, 3, 3, 3);
        for i in 0..3 {
            for j in 0..3 {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((id[i * 3 + j] - want).abs() < 1e-12);
            }
        }
    }
}
