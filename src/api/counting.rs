//! Counting: `bincount` of integer values, `histogram` of floats in equal-width bins (both
//! intrinsics, `intrinsics/histogram/`), and `count_nonzero` (a comparison, a cast and a sum,
//! which fuse with what produces the array).

use super::array::{Array, ok, site};
use super::element::{Float, Index, Numeric};
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::ir::{Intrinsic, ReduceOp};

impl<T: Index> Array<T> {
    /// How often each value `0..length` occurs among all elements (NumPy `bincount` with a fixed
    /// length): a `[length]` array of `u32` counts. A value out of range (negative, or
    /// `>= length`) makes the result invalid; reading it returns the error.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let x = Array::from_vec(vec![1u32, 3, 1, 0, 1], &[5]);
    /// assert_eq!(x.bincount(4).to_vec()?, vec![1, 3, 0, 1]);
    /// assert!(x.bincount(3).to_vec().is_err()); // 3 is not below 3
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn bincount(&self, length: usize) -> Array<u32> {
        ok(self.try_bincount(length))
    }

    /// Like [`Array::bincount`], returning an error for a length past the `u32` range.
    #[track_caller]
    pub fn try_bincount(&self, length: usize) -> Result<Array<u32>> {
        let op = Intrinsic::Bincount { length };
        Ok(Array::wrap(frontend::intrinsic(op, &[&self.h], site())?))
    }
}

/// The `bins + 1` edges of `bins` equal-width bins from `lo` to `hi` as NumPy's `histogram`
/// makes them (`linspace`: `lo + k * ((hi - lo) / bins)` in f64, the last exactly `hi`), rounded
/// to `T`.
fn edges<T: Float>(bins: usize, lo: f64, hi: f64) -> Vec<T> {
    let step = (hi - lo) / bins as f64;
    (0..=bins)
        .map(|k| T::from_f64(if k == bins { hi } else { k as f64 * step + lo }))
        .collect()
}

impl<T: Float> Array<T> {
    /// Counts of all elements in `bins` equal-width bins from `lo` to `hi` (NumPy
    /// `histogram(x, bins, range=(lo, hi))`): a `[bins]` array of `u32`. The edges are
    /// `lo + k * (hi - lo) / bins`, computed as NumPy does and rounded to `T`; bin `k` holds
    /// `edge[k] <= x < edge[k + 1]`, the last bin also `x == hi`. Values outside `[lo, hi]` and
    /// NaN are not counted. Every executor bins by comparing with the same edge values, so a
    /// value exactly on an edge lands in the same bin everywhere.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let x = Array::from_vec(vec![0.0f32, 0.5, 1.0, 1.5, 2.0, -1.0, f32::NAN], &[7]);
    /// // bins [0, 0.5), [0.5, 1), [1, 1.5), [1.5, 2]
    /// assert_eq!(x.histogram(4, 0.0, 2.0).to_vec()?, vec![1, 1, 1, 2]);
    /// assert!(x.try_histogram(0, 0.0, 2.0).is_err());
    /// assert!(x.try_histogram(4, 2.0, 2.0).is_err());
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn histogram(&self, bins: usize, lo: f64, hi: f64) -> Array<u32> {
        ok(self.try_histogram(bins, lo, hi))
    }

    /// Like [`Array::histogram`], returning an error for no bins, a range that is not finite or
    /// not increasing (`lo >= hi`), or one the element type cannot tell apart.
    #[track_caller]
    pub fn try_histogram(&self, bins: usize, lo: f64, hi: f64) -> Result<Array<u32>> {
        let s = site();
        let bad = |msg: String| Err(Error::new(ErrorKind::Argument, msg).at(s));
        if bins == 0 {
            return bad("histogram needs at least one bin, not 0".into());
        }
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return bad(format!(
                "histogram range ({lo}, {hi}) must be finite with lo < hi"
            ));
        }
        let e = edges::<T>(bins, lo, hi);
        if e[0] == e[bins] {
            return bad(format!(
                "histogram range ({lo}, {hi}) is empty in {}",
                T::DTYPE
            ));
        }
        let e = Array::from_vec(e, &[bins + 1]);
        let op = Intrinsic::Histogram { bins };
        Ok(Array::wrap(frontend::intrinsic(op, &[&self.h, &e.h], s)?))
    }
}

impl<T: Numeric> Array<T> {
    /// Number of elements that are not zero (NaN counts; `-0.0` is zero), as a 0-d `u32`
    /// array: `x != 0` cast to `u32` and summed, which fuses with what produces `x`.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let x = Array::from_vec(vec![0.0f64, 1.5, -0.0, f64::NAN, 0.0, -2.0], &[2, 3]);
    /// assert_eq!(x.count_nonzero().item()?, 3);
    /// assert_eq!(x.count_nonzero_axis(0).to_vec()?, vec![1, 1, 1]);
    /// assert_eq!(x.count_nonzero_axis(1).to_vec()?, vec![1, 2]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn count_nonzero(&self) -> Array<u32> {
        let all: Vec<usize> = (0..self.ndim()).collect();
        ok(self.try_count_nonzero_axes(&all))
    }

    /// Number of non-zero elements along `axis` (`u32`; the axis is dropped).
    #[track_caller]
    pub fn count_nonzero_axis(&self, axis: usize) -> Array<u32> {
        ok(self.try_count_nonzero_axes(&[axis]))
    }

    /// Number of non-zero elements along `axes`, returning an error for an axis out of range.
    #[track_caller]
    pub fn try_count_nonzero_axes(&self, axes: &[usize]) -> Result<Array<u32>> {
        let s = site();
        let nonzero = self.ne(T::ZERO).cast::<u32>();
        Ok(Array::wrap(frontend::reduce(
            ReduceOp::Sum,
            &nonzero.h,
            axes,
            s,
        )?))
    }
}
