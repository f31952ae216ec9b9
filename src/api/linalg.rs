//! Dense linear algebra (`arrayflow::linalg`): LU with partial pivoting and what it gives
//! (`lu`, `lu_unpack`, `lu_solve`, `lu_cond`, `solve`, `inv`, `det`, `slogdet`), Cholesky
//! (`cholesky`, `cholesky_solve`), `triangular_solve`, and QR (`qr`, `lstsq`), with NumPy's
//! names and conventions, f32 and f64, batched over leading axes whose batch shapes broadcast
//! where two operands meet, over the intrinsics of `intrinsics/linalg/`. A right-hand side `b`
//! is a vector `[n]` (only when it is 1-D, as NumPy 2) or a matrix `[..., n, r]`.
//!
//! Routines with several results compute one packed array and return views (slices) of it,
//! which fuse into what follows. A shape or type error names your line (the `try_` forms return
//! it). A matrix that fails numerically (singular: an exact zero pivot, as LAPACK) fails when the
//! computation runs: the result is invalid and reading it (`try_to_vec`, `to_vec`) returns an
//! error naming the matrix of the batch, the pivot and your line. `lu` and `det` of a singular
//! matrix are not errors (the factors have a zero on U's diagonal; `det` is 0). NaN in gives NaN
//! out.

use super::array::{Array, ok, site};
use super::element::{Element, Float};
use super::view::Slice;
use crate::error::Result;
use crate::frontend;
use crate::ir::Intrinsic;
use crate::runtime::Inner;

/// Like `ok`, for a pair.
#[track_caller]
fn ok2<A: Element, B: Element>(r: Result<(Array<A>, Array<B>)>) -> (Array<A>, Array<B>) {
    match r {
        Ok(v) => v,
        Err(e) => {
            let inner = Inner::get();
            match inner.handle_error(&e) {
                true => (
                    Array::wrap(inner.invalid_array(e.clone(), A::DTYPE)),
                    Array::wrap(inner.invalid_array(e, B::DTYPE)),
                ),
                false => panic!("{e}"),
            }
        }
    }
}

/// Like `ok`, for a triple.
#[track_caller]
fn ok3<T: Float>(r: Result<(Array<T>, Array<T>, Array<T>)>) -> (Array<T>, Array<T>, Array<T>) {
    match r {
        Ok(v) => v,
        Err(e) => {
            let inner = Inner::get();
            match inner.handle_error(&e) {
                true => (
                    Array::wrap(inner.invalid_array(e.clone(), T::DTYPE)),
                    Array::wrap(inner.invalid_array(e.clone(), T::DTYPE)),
                    Array::wrap(inner.invalid_array(e, T::DTYPE)),
                ),
                false => panic!("{e}"),
            }
        }
    }
}

/// Records `op` on `inputs`.
#[track_caller]
fn call<T: Element>(op: Intrinsic, inputs: &[&frontend::Handle]) -> Result<Array<T>> {
    Ok(Array::wrap(frontend::intrinsic(op, inputs, site())?))
}

/// The last two axes of `x` cut to `rows` and `cols` (every batch axis whole).
#[track_caller]
fn block<T: Element>(x: &Array<T>, rows: Slice, cols: Slice) -> Result<Array<T>> {
    let mut s = vec![Slice::all(); x.ndim() - 2];
    s.push(rows);
    s.push(cols);
    x.try_slice(&s)
}

/// The last axis of `x` at `i` (dropped).
#[track_caller]
fn last_at<T: Element>(x: &Array<T>, i: usize) -> Result<Array<T>> {
    let mut s = vec![Slice::all(); x.ndim() - 1];
    s.push(Slice::index(i as isize));
    x.try_slice(&s)
}

fn range(a: usize, b: usize) -> Slice {
    Slice::new(Some(a as isize), Some(b as isize), 1)
}

/// Runs a solve-like `op` whose right-hand side is the last input, treating a 1-D `b` as one
/// column.
#[track_caller]
fn with_rhs<T: Float>(op: Intrinsic, ins: &[&frontend::Handle], b: &Array<T>) -> Result<Array<T>> {
    if b.ndim() == 1 {
        let n = b.shape()[0];
        let col = b.try_reshape(&[n, 1])?;
        let mut all = ins.to_vec();
        all.push(&col.h);
        let x: Array<T> = call(op, &all)?;
        let shape = x.shape()[..x.ndim() - 1].to_vec();
        x.try_reshape(&shape)
    } else {
        let mut all = ins.to_vec();
        all.push(&b.h);
        call(op, &all)
    }
}

/// LU factorisation with partial pivoting of `a [..., n, n]` (LAPACK getrf): the packed factors
/// `lu [..., n, n]` (the unit lower L below the diagonal, U on and above it) and the 0-based
/// row interchanges `pivots [..., n]` (row `k` was swapped with row `pivots[k] >= k`, in order),
/// so that `A = P L U` with P from [`lu_unpack`]. A singular matrix is not an error (U has a zero
/// on its diagonal). Both results are views of one packed `[..., n, n + 1]` array.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let a = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]);
/// let (lu, piv) = linalg::lu(&a);
/// assert_eq!(piv.to_vec()?, vec![1, 1]); // row 0 swapped with row 1 (|3| > |1|)
/// assert_eq!(lu.to_vec()?, vec![3.0, 4.0, 1.0 / 3.0, 2.0 - 4.0 / 3.0]);
/// let (p, l, u) = linalg::lu_unpack(&lu, &piv);
/// assert_eq!(p.matmul(&l).matmul(&u).to_vec()?, a.to_vec()?);
/// let b = Array::from_vec(vec![5.0f64, 6.0], &[2]);
/// let x = linalg::lu_solve(&lu, &piv, &b).to_vec()?; // [-4, 4.5]
/// assert!((x[0] + 4.0).abs() < 1e-12 && (x[1] - 4.5).abs() < 1e-12);
/// assert!((linalg::det(&a).item()? + 2.0).abs() < 1e-12);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn lu<T: Float>(a: &Array<T>) -> (Array<T>, Array<i32>) {
    ok2(try_lu(a))
}

/// Like [`lu`], returning an error for a shape or type that does not fit.
#[track_caller]
pub fn try_lu<T: Float>(a: &Array<T>) -> Result<(Array<T>, Array<i32>)> {
    let packed: Array<T> = call(Intrinsic::Lu, &[&a.h])?;
    let n = packed.shape()[packed.ndim() - 2];
    let f = block(&packed, Slice::all(), range(0, n))?;
    let p = last_at(&packed, n)?.cast::<i32>();
    Ok((f, p))
}

/// The permutation `P`, unit lower `L` and upper `U` of [`lu`]'s results (`A = P L U`), each
/// `[..., n, n]`: views of one packed array.
#[track_caller]
pub fn lu_unpack<T: Float>(lu: &Array<T>, pivots: &Array<i32>) -> (Array<T>, Array<T>, Array<T>) {
    ok3(try_lu_unpack(lu, pivots))
}

/// Like [`lu_unpack`], returning an error when the shapes do not fit.
#[track_caller]
pub fn try_lu_unpack<T: Float>(
    lu: &Array<T>,
    pivots: &Array<i32>,
) -> Result<(Array<T>, Array<T>, Array<T>)> {
    let packed: Array<T> = call(Intrinsic::LuUnpack, &[&lu.h, &pivots.h])?;
    let n = packed.shape()[packed.ndim() - 2];
    Ok((
        block(&packed, Slice::all(), range(0, n))?,
        block(&packed, Slice::all(), range(n, 2 * n))?,
        block(&packed, Slice::all(), range(2 * n, 3 * n))?,
    ))
}

/// Solves `A x = b` from [`lu`]'s results: `b` is `[n]` or `[..., n, r]` (batch axes broadcast
/// against the factors'). An exact zero on U's diagonal fails the computation (reading `x`
/// returns the error, naming the matrix of the batch and the pivot).
#[track_caller]
pub fn lu_solve<T: Float>(lu: &Array<T>, pivots: &Array<i32>, b: &Array<T>) -> Array<T> {
    ok(try_lu_solve(lu, pivots, b))
}

/// Like [`lu_solve`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_lu_solve<T: Float>(
    lu: &Array<T>,
    pivots: &Array<i32>,
    b: &Array<T>,
) -> Result<Array<T>> {
    with_rhs(Intrinsic::LuSolve, &[&lu.h, &pivots.h], b)
}

/// The reciprocal condition number of `A` in the 1-norm, estimated from [`lu`]'s results as
/// LAPACK's gecon does (Higham's estimate of `|A^-1|_1`, usually exact and never more than a
/// small factor off): `1 / (anorm * |A^-1|_1)`, `anorm` the 1-norm of the original `A` (the
/// largest column sum of `|A|`, one per matrix: shape `[...]`). 0 for a singular matrix.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let a = Array::from_vec(vec![4.0f64, 0.0, 0.0, 0.5], &[2, 2]);
/// let (lu, piv) = linalg::lu(&a);
/// let anorm = Array::from_vec(vec![4.0f64], &[]);
/// let rc = linalg::lu_cond(&lu, &piv, &anorm).item()?; // |A| = 4, |A^-1| = 2
/// assert!((rc - 1.0 / 8.0).abs() < 1e-12);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn lu_cond<T: Float>(lu: &Array<T>, pivots: &Array<i32>, anorm: &Array<T>) -> Array<T> {
    ok(try_lu_cond(lu, pivots, anorm))
}

/// Like [`lu_cond`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_lu_cond<T: Float>(
    lu: &Array<T>,
    pivots: &Array<i32>,
    anorm: &Array<T>,
) -> Result<Array<T>> {
    call(Intrinsic::LuCond, &[&lu.h, &pivots.h, &anorm.h])
}

/// Solves `a x = b` for square `a [..., n, n]` and `b [n]` or `[..., n, r]` (NumPy's
/// `linalg.solve`; batch axes broadcast). A singular matrix (an exact zero pivot) fails the
/// computation: reading `x` returns an error naming the matrix of the batch, the pivot and this
/// line.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let a = Array::from_vec(vec![3.0f64, 1.0, 1.0, 2.0], &[2, 2]);
/// let b = Array::from_vec(vec![9.0f64, 8.0], &[2]);
/// let x = linalg::solve(&a, &b).to_vec()?;
/// assert!((x[0] - 2.0).abs() < 1e-12 && (x[1] - 3.0).abs() < 1e-12);
/// assert_eq!(a.solve(&b).shape(), &[2]);
/// let singular = Array::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], &[2, 2]);
/// let err = linalg::solve(&singular, &b).to_vec().unwrap_err();
/// assert!(err.to_string().contains("singular"));
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn solve<T: Float>(a: &Array<T>, b: &Array<T>) -> Array<T> {
    ok(try_solve(a, b))
}

/// Like [`solve`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_solve<T: Float>(a: &Array<T>, b: &Array<T>) -> Result<Array<T>> {
    with_rhs(Intrinsic::Solve, &[&a.h], b)
}

/// The inverse of each matrix of `a [..., n, n]`; a singular matrix fails the computation.
#[track_caller]
pub fn inv<T: Float>(a: &Array<T>) -> Array<T> {
    ok(try_inv(a))
}

/// Like [`inv`], returning an error when `a` is not a batch of square matrices.
#[track_caller]
pub fn try_inv<T: Float>(a: &Array<T>) -> Result<Array<T>> {
    call(Intrinsic::Inv, &[&a.h])
}

/// The determinant of each matrix of `a [..., n, n]` (shape `[...]`), from its LU factors (the
/// pivots multiplied in f64). 0 for a singular matrix.
#[track_caller]
pub fn det<T: Float>(a: &Array<T>) -> Array<T> {
    ok(try_det(a))
}

/// Like [`det`], returning an error when `a` is not a batch of square matrices.
#[track_caller]
pub fn try_det<T: Float>(a: &Array<T>) -> Result<Array<T>> {
    call(Intrinsic::Det, &[&a.h])
}

/// The sign (1, -1, or 0 for a singular matrix) and the natural log of the absolute value of
/// the determinant of each matrix of `a [..., n, n]` (NumPy's `slogdet`; no overflow for large
/// `n`): two `[...]` views of one packed array.
#[track_caller]
pub fn slogdet<T: Float>(a: &Array<T>) -> (Array<T>, Array<T>) {
    ok2(try_slogdet(a))
}

/// Like [`slogdet`], returning an error when `a` is not a batch of square matrices.
#[track_caller]
pub fn try_slogdet<T: Float>(a: &Array<T>) -> Result<(Array<T>, Array<T>)> {
    let packed: Array<T> = call(Intrinsic::Slogdet, &[&a.h])?;
    Ok((last_at(&packed, 0)?, last_at(&packed, 1)?))
}

/// The lower Cholesky factor `L` of each symmetric positive-definite matrix of `a [..., n, n]`
/// (`A = L L^T`; only the lower triangle of `a` is read; L's upper triangle is 0). A matrix that
/// is not positive definite fails the computation: reading `L` returns an error naming the
/// matrix of the batch, the pivot and this line. NaN in the lower triangle gives a NaN factor.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let a = Array::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], &[2, 2]);
/// assert_eq!(a.cholesky().to_vec()?, vec![2.0, 0.0, 1.0, 2.0]);
/// let b = Array::from_vec(vec![8.0f64, 13.0], &[2]);
/// let x = linalg::cholesky_solve(&a.cholesky(), &b).to_vec()?; // 4x + 2y = 8, 2x + 5y = 13
/// assert!((x[0] - 0.875).abs() < 1e-12 && (x[1] - 2.25).abs() < 1e-12);
/// let indefinite = Array::from_vec(vec![1.0f64, 2.0, 2.0, 1.0], &[2, 2]);
/// assert!(linalg::cholesky(&indefinite).to_vec().is_err());
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn cholesky<T: Float>(a: &Array<T>) -> Array<T> {
    ok(try_cholesky(a))
}

/// Like [`cholesky`], returning an error when `a` is not a batch of square matrices.
#[track_caller]
pub fn try_cholesky<T: Float>(a: &Array<T>) -> Result<Array<T>> {
    call(Intrinsic::Cholesky, &[&a.h])
}

/// Solves `L L^T x = b` from the Cholesky factor `l [..., n, n]` (its lower triangle is read):
/// `b` is `[n]` or `[..., n, r]`, batch axes broadcast.
#[track_caller]
pub fn cholesky_solve<T: Float>(l: &Array<T>, b: &Array<T>) -> Array<T> {
    ok(try_cholesky_solve(l, b))
}

/// Like [`cholesky_solve`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_cholesky_solve<T: Float>(l: &Array<T>, b: &Array<T>) -> Result<Array<T>> {
    with_rhs(Intrinsic::CholeskySolve, &[&l.h], b)
}

/// Solves `a x = b` for triangular `a [..., n, n]`: only its `upper` (or lower) triangle is
/// read; with `unit_diagonal` its diagonal is taken as 1 and not read. `b` is `[n]` or
/// `[..., n, r]`, batch axes broadcast. An exact zero on the diagonal fails the computation.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let u = Array::from_vec(vec![2.0f64, 1.0, 99.0, 4.0], &[2, 2]); // 99 is below: not read
/// let b = Array::from_vec(vec![4.0f64, 8.0], &[2]);
/// assert_eq!(linalg::triangular_solve(&u, &b, true, false).to_vec()?, vec![1.0, 2.0]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn triangular_solve<T: Float>(
    a: &Array<T>,
    b: &Array<T>,
    upper: bool,
    unit_diagonal: bool,
) -> Array<T> {
    ok(try_triangular_solve(a, b, upper, unit_diagonal))
}

/// Like [`triangular_solve`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_triangular_solve<T: Float>(
    a: &Array<T>,
    b: &Array<T>,
    upper: bool,
    unit_diagonal: bool,
) -> Result<Array<T>> {
    let op = Intrinsic::TriangularSolve {
        upper,
        unit_diagonal,
    };
    with_rhs(op, &[&a.h], b)
}

/// The reduced QR factorisation of each matrix of `a [..., m, n]` (NumPy's
/// `qr(mode="reduced")`, by Householder reflections): `q [..., m, k]` with orthonormal columns
/// and upper-triangular `r [..., k, n]`, `k = min(m, n)`, `A = Q R`. R's diagonal is made
/// non-negative (a sign per column of Q and row of R), so the factors are unique for full-rank
/// input. Both results are views of one packed `[..., m + k, n]` array. NaN in a matrix makes
/// both factors all NaN.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// let a = Array::from_vec(vec![3.0f64, 1.0, 4.0, 2.0], &[2, 2]);
/// let (q, r) = linalg::qr(&a);
/// let (q, r) = (q.to_vec()?, r.to_vec()?);
/// // Column 0 of A is [3, 4]: |.| = 5, so Q's first column is [0.6, 0.8] and R[0, 0] = 5.
/// assert!((q[0] - 0.6).abs() < 1e-12 && (q[2] - 0.8).abs() < 1e-12);
/// assert!((r[0] - 5.0).abs() < 1e-12 && (r[1] - 2.2).abs() < 1e-12 && r[2] == 0.0);
/// assert!((r[3] - 0.4).abs() < 1e-12);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn qr<T: Float>(a: &Array<T>) -> (Array<T>, Array<T>) {
    ok2(try_qr(a))
}

/// Like [`qr`], returning an error when `a` is not a batch of matrices or not float.
#[track_caller]
pub fn try_qr<T: Float>(a: &Array<T>) -> Result<(Array<T>, Array<T>)> {
    let packed: Array<T> = call(Intrinsic::Qr, &[&a.h])?;
    let s = a.shape();
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    let k = m.min(n);
    Ok((
        block(&packed, range(0, m), range(0, k))?,
        block(&packed, range(m, m + k), range(0, n))?,
    ))
}

/// The least-squares solution `x` minimising `|a x - b|_2` for each matrix of `a [..., m, n]`
/// with `m >= n` (NumPy's `lstsq(a, b)[0]` for full-rank `a`; LAPACK gels): by the QR
/// factorisation, `x = R^-1 Q^T b`. `b` is `[m]` (then `x` is `[n]`) or `[..., m, r]` (then
/// `x` is `[..., n, r]`), batch axes broadcast. A matrix with fewer rows than columns is a shape
/// error at this line (no minimum-norm solution). A rank-deficient matrix (a column whose part
/// orthogonal to the columns before it is at most `16 m eps` times its norm) fails the
/// computation: reading `x` returns an error naming the matrix of the batch, the column and this
/// line (NumPy would return the minimum-norm solution instead). NaN in gives NaN out.
///
/// ```
/// use arrayflow::{Array, linalg};
///
/// // The line y = c0 + c1 t through (0, 1), (1, 3), (2, 4): c = [7/6, 3/2].
/// let a = Array::from_vec(vec![1.0f64, 0.0, 1.0, 1.0, 1.0, 2.0], &[3, 2]);
/// let y = Array::from_vec(vec![1.0f64, 3.0, 4.0], &[3]);
/// let c = linalg::lstsq(&a, &y).to_vec()?;
/// assert!((c[0] - 7.0 / 6.0).abs() < 1e-12 && (c[1] - 1.5).abs() < 1e-12);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn lstsq<T: Float>(a: &Array<T>, b: &Array<T>) -> Array<T> {
    ok(try_lstsq(a, b))
}

/// Like [`lstsq`], returning an error when the shapes or types do not fit.
#[track_caller]
pub fn try_lstsq<T: Float>(a: &Array<T>, b: &Array<T>) -> Result<Array<T>> {
    with_rhs(Intrinsic::Lstsq, &[&a.h], b)
}

impl<T: Float> Array<T> {
    /// [`linalg::solve`](solve): `x` with `self x = b`.
    #[track_caller]
    pub fn solve(&self, b: &Array<T>) -> Array<T> {
        ok(try_solve(self, b))
    }
    /// [`linalg::inv`](inv): the inverse of each matrix.
    #[track_caller]
    pub fn inv(&self) -> Array<T> {
        ok(try_inv(self))
    }
    /// [`linalg::det`](det): the determinant of each matrix.
    #[track_caller]
    pub fn det(&self) -> Array<T> {
        ok(try_det(self))
    }
    /// [`linalg::cholesky`](cholesky): the lower Cholesky factor of each matrix.
    #[track_caller]
    pub fn cholesky(&self) -> Array<T> {
        ok(try_cholesky(self))
    }
}
