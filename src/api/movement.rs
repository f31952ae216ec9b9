//! Moving elements along axes without a copy of their own: `roll`, `pad` in NumPy's modes, and
//! slice and masked assignment. Each is recorded as index folds and masks that fuse into the
//! kernel that reads the result (`frontend/reindex.rs`), so a periodic stencil written with rolls
//! is one kernel per step.

use super::array::{Array, ok, site};
use super::element::Element;
use super::ops::Operand;
use super::view::Slice;
use crate::error::Result;
use crate::frontend::{self, PadFill, SliceSpec};
use crate::ir::FoldMode;

/// How [`Array::pad`] fills the new elements (NumPy's `pad` modes), shown for `[1, 2, 3]` padded
/// by 3 before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pad<T> {
    /// A constant: `c c c | 1 2 3`.
    Constant(T),
    /// The edge element repeated: `1 1 1 | 1 2 3`.
    Edge,
    /// The periodic continuation: `1 2 3 | 1 2 3`.
    Wrap,
    /// A mirror image without the edge element: `2 3 2 | 1 2 3` (period `2 (n - 1)`).
    Reflect,
    /// A mirror image with the edge element: `3 2 1 | 1 2 3` (period `2 n`).
    Symmetric,
}

impl<T: Element> Pad<T> {
    fn fill(self) -> PadFill {
        match self {
            Pad::Constant(c) => PadFill::Constant(c.scalar()),
            Pad::Edge => PadFill::Fold(FoldMode::Clamp),
            Pad::Wrap => PadFill::Fold(FoldMode::Wrap),
            Pad::Reflect => PadFill::Fold(FoldMode::Reflect),
            Pad::Symmetric => PadFill::Fold(FoldMode::Symmetric),
        }
    }
}

impl<T: Element> Array<T> {
    /// NumPy's `roll`: element `i` along `axis` moves to `i + shift`, the ones pushed off the end
    /// coming back at the start (`shift` may be negative or longer than the axis). A view: it
    /// fuses into whatever reads it.
    ///
    /// ```
    /// use arrayflow::Array;
    /// let a = Array::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
    /// assert_eq!(a.roll(1, 1).to_vec()?, [3, 1, 2, 6, 4, 5]);
    /// assert_eq!(a.roll(-1, 0).to_vec()?, [4, 5, 6, 1, 2, 3]);
    /// // A periodic Laplacian, one fused kernel:
    /// let u = Array::from_vec(vec![0.0f32, 1.0, 4.0, 9.0], &[4]);
    /// let lap = u.roll(1, 0) + u.roll(-1, 0) - &u * 2.0;
    /// assert_eq!(lap.to_vec()?, [10.0, 2.0, 2.0, -14.0]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn roll(&self, shift: isize, axis: usize) -> Array<T> {
        ok(self.try_roll(shift, axis))
    }
    /// Like [`Array::roll`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_roll(&self, shift: isize, axis: usize) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::roll(&self.h, shift, axis, site())?))
    }

    /// NumPy's `pad`: `widths[d] = (before, after)` new elements along axis `d` (fewer pairs than
    /// axes pad the leading axes only), filled as `mode` says. Widths may exceed the axis's
    /// length in every mode (the wrap and mirror images repeat). A view: it fuses into whatever
    /// reads it.
    ///
    /// ```
    /// use arrayflow::{Array, Pad};
    /// let a = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    /// assert_eq!(a.pad(&[(2, 1)], Pad::Constant(0.0)).to_vec()?, [0.0, 0.0, 1.0, 2.0, 3.0, 0.0]);
    /// assert_eq!(a.pad(&[(2, 1)], Pad::Edge).to_vec()?, [1.0, 1.0, 1.0, 2.0, 3.0, 3.0]);
    /// assert_eq!(a.pad(&[(2, 1)], Pad::Wrap).to_vec()?, [2.0, 3.0, 1.0, 2.0, 3.0, 1.0]);
    /// assert_eq!(a.pad(&[(2, 1)], Pad::Reflect).to_vec()?, [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]);
    /// assert_eq!(a.pad(&[(2, 1)], Pad::Symmetric).to_vec()?, [2.0, 1.0, 1.0, 2.0, 3.0, 3.0]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn pad(&self, widths: &[(usize, usize)], mode: Pad<T>) -> Array<T> {
        ok(self.try_pad(widths, mode))
    }
    /// Like [`Array::pad`], returning an error for more width pairs than axes, or a mode other
    /// than a constant on an empty axis.
    #[track_caller]
    pub fn try_pad(&self, widths: &[(usize, usize)], mode: Pad<T>) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::pad(
            &self.h,
            widths,
            mode.fill(),
            site(),
        )?))
    }

    /// NumPy's `a[ranges] = values` as a new array: this array with the region `ranges` selects
    /// (as [`Array::slice`] reads it) replaced by `values`, an array or a scalar broadcast to the
    /// region's shape. Any step works (`s![1..5;2]`; a negative one takes the values reversed).
    /// Recorded and fused like any operation; see [`Array::assign_slice`] for the statement form.
    ///
    /// ```
    /// use arrayflow::{Array, s};
    /// let a = Array::<f32>::zeros(&[3, 4]);
    /// let row = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    /// let b = a.with_slice(s![1, 1..3], &row).with_slice(s![.., -1], 9.0);
    /// assert_eq!(b.to_vec()?, [0., 0., 0., 9., 0., 1., 2., 9., 0., 0., 0., 9.]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn with_slice(&self, ranges: &[Slice], values: impl Operand<T>) -> Array<T> {
        ok(self.try_with_slice(ranges, values))
    }
    /// Like [`Array::with_slice`], returning an error for a region out of range or values that
    /// do not broadcast to it.
    #[track_caller]
    pub fn try_with_slice(&self, ranges: &[Slice], values: impl Operand<T>) -> Result<Array<T>> {
        let s = site();
        let spec: Vec<SliceSpec> = ranges.iter().map(|r| r.0).collect();
        let v = values.into_handle(s);
        Ok(Array::wrap(frontend::with_slice(&self.h, &spec, &v, s)?))
    }

    /// `a[ranges] = values`: rebinds this variable to [`Array::with_slice`]'s result. Clones
    /// taken before keep the old values (arrays are values, not buffers).
    ///
    /// ```
    /// use arrayflow::{Array, s};
    /// let mut u = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]);
    /// let before = u.clone();
    /// u.assign_slice(s![1..3], 0.0);
    /// assert_eq!(u.to_vec()?, [1.0, 0.0, 0.0, 4.0]);
    /// assert_eq!(before.to_vec()?, [1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn assign_slice(&mut self, ranges: &[Slice], values: impl Operand<T>) {
        *self = self.with_slice(ranges, values);
    }

    /// NumPy's `a[mask] = values` (`putmask` with broadcasting): rebinds this variable to
    /// `select(mask, values, self)`. Clones taken before keep the old values.
    ///
    /// ```
    /// use arrayflow::Array;
    /// let mut a = Array::from_vec(vec![-1.0f32, 2.0, -3.0], &[3]);
    /// let negative = a.lt(0.0);
    /// a.assign_where(&negative, 0.0);
    /// assert_eq!(a.to_vec()?, [0.0, 2.0, 0.0]);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn assign_where(&mut self, mask: &Array<bool>, values: impl Operand<T>) {
        *self = mask.select(values, &*self);
    }
}
