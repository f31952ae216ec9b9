//! Scans along an axis: running sums, products, maxima and minima (`cumsum`, `cumprod`,
//! `cummax`, `cummin`, NumPy's `cumsum` and `np.maximum.accumulate`), each an intrinsic
//! (`intrinsics/scan/`), not fused with the operations around it.

use super::array::{Array, ok, site};
use super::element::Numeric;
use crate::error::Result;
use crate::frontend;
use crate::ir::{Intrinsic, ReduceOp};

impl<T: Numeric> Array<T> {
    #[track_caller]
    fn scan(&self, op: ReduceOp, axis: usize) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::intrinsic(
            Intrinsic::Scan { op, axis },
            &[&self.h],
            site(),
        )?))
    }

    /// Running sum along `axis` (inclusive: element `k` is the sum of elements `0..=k` of its
    /// line); the result has the array's shape. Integer sums wrap, as [`Array::sum`] does. Float
    /// sums accumulate in f64 on the CPU and in the element type on GPU executors, so f32 results
    /// from a GPU may differ in the last bits, by about `n * eps` times the running sum of `|x|`
    /// for a line of `n` elements at most, and usually far less. Not fused: an intrinsic that
    /// reads a stored input. An axis out of range panics with the error naming your line (see
    /// [`Array::try_cumsum`]).
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let a = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(a.cumsum(1).to_vec()?, vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
    /// assert_eq!(a.cumsum(0).to_vec()?, vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
    /// assert_eq!(a.cumprod(1).to_vec()?, vec![1.0, 2.0, 6.0, 4.0, 20.0, 120.0]);
    ///
    /// let b = Array::from_vec(vec![3.0f32, 1.0, f32::NAN, 7.0], &[4]);
    /// let m = b.cummax(0).to_vec()?; // NaN propagates, as np.maximum.accumulate
    /// assert_eq!(&m[..2], &[3.0, 3.0]);
    /// assert!(m[2].is_nan() && m[3].is_nan());
    ///
    /// let i = Array::from_vec(vec![i32::MAX, 1, -5], &[3]);
    /// assert_eq!(i.cumsum(0).to_vec()?, vec![i32::MAX, i32::MIN, i32::MIN.wrapping_add(-5)]);
    /// assert_eq!(i.cummin(0).to_vec()?, vec![i32::MAX, 1, -5]);
    /// assert!(a.try_cumsum(2).is_err()); // axis 2 of a 2-D array
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn cumsum(&self, axis: usize) -> Array<T> {
        ok(self.scan(ReduceOp::Sum, axis))
    }
    /// Like [`Array::cumsum`], returning an error (naming your line) when `axis` is out of
    /// range.
    #[track_caller]
    pub fn try_cumsum(&self, axis: usize) -> Result<Array<T>> {
        self.scan(ReduceOp::Sum, axis)
    }
    /// Running product along `axis` (inclusive; integer products wrap, as [`Array::prod`] does;
    /// float products accumulate in f64 on the CPU and in the element type on GPU executors).
    /// See [`Array::cumsum`].
    #[track_caller]
    pub fn cumprod(&self, axis: usize) -> Array<T> {
        ok(self.scan(ReduceOp::Prod, axis))
    }
    /// Like [`Array::cumprod`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_cumprod(&self, axis: usize) -> Result<Array<T>> {
        self.scan(ReduceOp::Prod, axis)
    }
    /// Running maximum along `axis` (inclusive). NaN propagates: once a line has seen a NaN, the
    /// rest of it is NaN (NumPy's `np.maximum.accumulate`). See [`Array::cumsum`].
    #[track_caller]
    pub fn cummax(&self, axis: usize) -> Array<T> {
        ok(self.scan(ReduceOp::Max, axis))
    }
    /// Like [`Array::cummax`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_cummax(&self, axis: usize) -> Result<Array<T>> {
        self.scan(ReduceOp::Max, axis)
    }
    /// Running minimum along `axis` (inclusive; NaN propagates as in [`Array::cummax`]).
    #[track_caller]
    pub fn cummin(&self, axis: usize) -> Array<T> {
        ok(self.scan(ReduceOp::Min, axis))
    }
    /// Like [`Array::cummin`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_cummin(&self, axis: usize) -> Result<Array<T>> {
        self.scan(ReduceOp::Min, axis)
    }
}
