//! Matrix products: `matmul` with NumPy's `@` rules (batches, 1-D operands, transposed operands
//! read without a copy), `inner`, `outer` and `vdot`.

use super::array::{Array, ok, site};
use super::element::Numeric;
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::ir::{BinaryOp, Shape};

impl<T: Numeric> Array<T> {
    /// Matrix product with NumPy's `matmul` (`@`) rules, an intrinsic (a tuned GEMM, not fused):
    ///
    /// - `[.., m, k] @ [.., k, n] -> [.., m, n]`; leading (batch) axes broadcast, so
    ///   `[2, 1, m, k] @ [3, k, n]` is `[2, 3, m, n]` (a broadcast operand is never copied);
    /// - a 1-D left operand is a row `[k]` and a 1-D right operand a column `[k]`: that axis is
    ///   dropped from the result (`[k] @ [k, n] -> [n]`, `[m, k] @ [k] -> [m]`, `[k] @ [k]` is the
    ///   0-D inner product);
    /// - a transpose of the last two axes (`x.transpose()` of a matrix, `x.permute(&[0, 2, 1])`)
    ///   is read from `x` as it is stored: no copy of the transpose is made.
    ///
    /// Floats accumulate in their own type (f32 in f32, with GPU and CPU GEMMs summing `k` in
    /// different orders); integers (i32, u32) wrap modulo 2^32, exactly as a loop of
    /// `wrapping_mul` and `wrapping_add` would.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let a = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let b = Array::from_vec(vec![1.0f64, 0.0, -1.0, 2.0, 0.5, 1.0], &[3, 2]);
    /// // row i of a times column j of b
    /// let oracle = vec![
    ///     1.0 * 1.0 + 2.0 * -1.0 + 3.0 * 0.5,
    ///     1.0 * 0.0 + 2.0 * 2.0 + 3.0 * 1.0,
    ///     4.0 * 1.0 + 5.0 * -1.0 + 6.0 * 0.5,
    ///     4.0 * 0.0 + 5.0 * 2.0 + 6.0 * 1.0,
    /// ];
    /// assert_eq!(a.matmul(&b).to_vec()?, oracle);
    /// // a^T a, reading a in place; a matrix times a vector
    /// assert_eq!(a.transpose().matmul(&a).shape(), &[3, 3]);
    /// let v = Array::from_vec(vec![1.0f64, 1.0, 1.0], &[3]);
    /// assert_eq!(a.matmul(&v).to_vec()?, vec![6.0, 15.0]);
    /// // a batch of 4 products with one shared right operand
    /// let batch = Array::<i32>::ones(&[4, 2, 3]);
    /// let w = Array::from_vec(vec![1i32, 2, 3], &[3, 1]);
    /// assert_eq!(batch.matmul(&w).to_vec()?, vec![6; 8]);
    /// assert!(a.try_matmul(&a).is_err()); // [2, 3] x [2, 3]
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn matmul(&self, other: &Array<T>) -> Array<T> {
        ok(self.try_matmul(other))
    }
    /// Like [`Array::matmul`], returning an error naming your line and both shapes when they do
    /// not fit (inner extents differ, batch axes do not broadcast, a 0-D operand).
    #[track_caller]
    pub fn try_matmul(&self, other: &Array<T>) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::matmul(&self.h, &other.h, site())?))
    }

    /// The outer product of two arrays, flattened: `[m] x [n] -> [m, n]` with element `(i, j)`
    /// `a[i] * b[j]` (NumPy `outer`), a broadcast multiply that fuses with what follows.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let a = Array::from_vec(vec![1, 2], &[2]);
    /// let b = Array::from_vec(vec![10, 20, 30], &[3]);
    /// assert_eq!(a.outer(&b).to_vec()?, vec![10, 20, 30, 20, 40, 60]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn outer(&self, other: &Array<T>) -> Array<T> {
        ok(self.try_outer(other))
    }
    /// Like [`Array::outer`], returning an error instead of panicking.
    #[track_caller]
    pub fn try_outer(&self, other: &Array<T>) -> Result<Array<T>> {
        let s = site();
        let col = frontend::reshape(&self.h, Shape::from_slice(&[self.len(), 1]), s)?;
        let row = frontend::reshape(&other.h, Shape::from_slice(&[1, other.len()]), s)?;
        Ok(Array::wrap(frontend::binary(BinaryOp::Mul, &col, &row, s)?))
    }

    /// NumPy `inner`: products summed along the last axis of both arrays, `[.., k]` and `[.., k]`
    /// giving `a.shape[..-1] ++ b.shape[..-1]` (two 1-D arrays: their 0-D inner product). Runs
    /// as one matrix product reading `b` transposed in place.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let a = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Array::from_vec(vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]);
    /// assert_eq!(a.inner(&b).shape(), &[2, 3]);
    /// assert_eq!(a.inner(&b).to_vec()?, vec![1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn inner(&self, other: &Array<T>) -> Array<T> {
        ok(self.try_inner(other))
    }
    /// Like [`Array::inner`], returning an error naming your line when the last axes differ or
    /// an operand is 0-D.
    #[track_caller]
    pub fn try_inner(&self, other: &Array<T>) -> Result<Array<T>> {
        let s = site();
        let (sa, sb) = (self.shape(), other.shape());
        if sa.is_empty() || sb.is_empty() || sa[sa.len() - 1] != sb[sb.len() - 1] {
            return Err(Error::new(
                ErrorKind::Shape,
                format!("inner of shapes {sa:?} and {sb:?}"),
            )
            .at(s)
            .hint("inner takes [.., k] and [.., k]: the last axes must agree"));
        }
        let k = sa[sa.len() - 1];
        let lead = |sh: &[usize]| sh[..sh.len() - 1].iter().product::<usize>();
        let a = match sa.len() {
            1 | 2 => self.h.clone(),
            _ => frontend::reshape(&self.h, Shape::from_slice(&[lead(sa), k]), s)?,
        };
        let c = if sb.len() == 1 {
            frontend::matmul(&a, &other.h, s)?
        } else {
            let b = match sb.len() {
                2 => other.h.clone(),
                _ => frontend::reshape(&other.h, Shape::from_slice(&[lead(sb), k]), s)?,
            };
            frontend::matmul_transposed_b(&a, &b, s)?
        };
        let shape: Shape = sa[..sa.len() - 1]
            .iter()
            .chain(&sb[..sb.len() - 1])
            .copied()
            .collect();
        Ok(Array::wrap(frontend::reshape(&c, shape, s)?))
    }

    /// NumPy `vdot`: both arrays flattened, their products summed (a 0-D array; floats sum as
    /// [`Array::sum`] does); for complex numbers the first array is conjugated, `sum(conj(a) b)`.
    /// The arrays must have the same number of elements.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let a = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Array::from_vec(vec![1.0f64, 1.0, 0.5, 0.5], &[4]);
    /// assert_eq!(a.vdot(&b).item()?, 6.5);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn vdot(&self, other: &Array<T>) -> Array<T> {
        ok(self.try_vdot(other))
    }
    /// Like [`Array::vdot`], returning an error naming your line when the element counts differ.
    #[track_caller]
    pub fn try_vdot(&self, other: &Array<T>) -> Result<Array<T>> {
        let s = site();
        if self.len() != other.len() {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "vdot of shapes {:?} and {:?}: the element counts differ",
                    self.shape(),
                    other.shape()
                ),
            )
            .at(s));
        }
        let flat = |h: &frontend::Handle| frontend::reshape(h, Shape::from_slice(&[h_len(h)]), s);
        let mut a = flat(&self.h)?;
        if T::DTYPE.is_complex() {
            a = frontend::unary(crate::ir::UnaryOp::Conj, &a, s)?;
        }
        let prod = frontend::binary(BinaryOp::Mul, &a, &flat(&other.h)?, s)?;
        Ok(Array::wrap(frontend::reduce(
            crate::ir::ReduceOp::Sum,
            &prod,
            &[0],
            s,
        )?))
    }
}

fn h_len(h: &frontend::Handle) -> usize {
    h.shape.iter().product()
}
