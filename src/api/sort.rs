//! Sorting: `sort`/`sort_axis`, `argsort`/`argsort_axis` (stable; also descending),
//! `take_along_axis`, `topk`, `searchsorted` and `unique`, over the intrinsics of
//! `intrinsics/sort/` (whose module comment gives the order and the kernels).
//!
//! The order is NumPy's on every executor, bit for bit: numbers ascend, NaN comes last whatever
//! its sign, -0.0 equals +0.0, and equal elements keep their input order (so -0.0 and +0.0 come
//! out as they went in). Descending reverses the order (NaN first, as `torch.sort`), equal
//! elements still in input order.

use super::array::{Array, ok, site};
use super::element::{Element, Index, Numeric};
use super::view::Slice;
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::ir::{Intrinsic, Shape};
use crate::runtime::Inner;

/// Which insertion point [`Array::searchsorted`] returns for a value equal to elements of the
/// sorted array (NumPy's `side`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Before the equal elements: the first `i` with `a[i] >= v`.
    Left,
    /// After the equal elements: the first `i` with `a[i] > v`.
    Right,
}

/// Like `ok`, for a pair of arrays: an error goes through the error-handler stack (both arrays
/// invalid when a handler continues).
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

impl<T: Numeric> Array<T> {
    #[track_caller]
    fn sorted(&self, axis: usize, descending: bool) -> Result<Array<T>> {
        let op = Intrinsic::Sort { axis, descending };
        Ok(Array::wrap(frontend::intrinsic(op, &[&self.h], site())?))
    }

    #[track_caller]
    fn sorting(&self, axis: usize, descending: bool) -> Result<Array<u32>> {
        let op = Intrinsic::Argsort { axis, descending };
        Ok(Array::wrap(frontend::intrinsic(op, &[&self.h], site())?))
    }

    /// The elements flattened (row-major) and sorted ascending: a 1-D array (NumPy's
    /// `np.sort(a, axis=None)`). NaN sorts last whatever its sign; -0.0 and +0.0 are equal and
    /// keep their input order (the sort is stable).
    ///
    /// ```
    /// use arrayflow::{Array, Side};
    ///
    /// let a = Array::from_vec(vec![3.0f32, f32::NAN, -1.0, 0.0, -0.0, 2.0], &[2, 3]);
    /// let s = a.sort().to_vec()?;
    /// assert_eq!(&s[..3], &[-1.0, 0.0, -0.0]); // +0.0 came first in the input
    /// assert!(s[1].is_sign_positive() && s[2].is_sign_negative());
    /// assert_eq!(&s[3..5], &[2.0, 3.0]);
    /// assert!(s[5].is_nan());
    /// assert_eq!(a.argsort().to_vec()?, vec![2, 3, 4, 5, 0, 1]);
    ///
    /// let m = Array::from_vec(vec![5i32, 1, 4, 2, 8, 0], &[2, 3]);
    /// assert_eq!(m.sort_axis(1).to_vec()?, vec![1, 4, 5, 0, 2, 8]);
    /// assert_eq!(m.argsort_axis(0).to_vec()?, vec![1, 0, 1, 0, 1, 0]);
    /// let (top, at) = m.topk(2, 1);
    /// assert_eq!((top.to_vec()?, at.to_vec()?), (vec![5, 4, 8, 2], vec![0, 2, 1, 0]));
    /// assert_eq!(m.take_along_axis(&at, 1).to_vec()?, top.to_vec()?);
    ///
    /// let sorted = Array::from_vec(vec![1u32, 2, 2, 7], &[4]);
    /// let v = Array::from_vec(vec![2u32, 0, 9], &[3]);
    /// assert_eq!(sorted.searchsorted(&v, Side::Left).to_vec()?, vec![1, 0, 4]);
    /// assert_eq!(sorted.searchsorted(&v, Side::Right).to_vec()?, vec![3, 0, 4]);
    /// let (values, counts) = sorted.unique()?;
    /// assert_eq!((values.to_vec()?, counts.to_vec()?), (vec![1, 2, 7], vec![1, 2, 1]));
    /// assert!(m.try_sort_axis(2).is_err()); // axis out of range: an error naming this line
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn sort(&self) -> Array<T> {
        // Not `and_then`: a closure would lose the caller's line for errors.
        ok(match self.flat() {
            Ok(f) => f.sorted(0, false),
            Err(e) => Err(e),
        })
    }

    #[track_caller]
    fn flat(&self) -> Result<Array<T>> {
        self.try_reshape(&[self.len()])
    }

    /// Sorted ascending along `axis` (stable; NaN last, -0.0 equal to +0.0).
    #[track_caller]
    pub fn sort_axis(&self, axis: usize) -> Array<T> {
        ok(self.try_sort_axis(axis))
    }
    /// Like [`Array::sort_axis`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_sort_axis(&self, axis: usize) -> Result<Array<T>> {
        self.sorted(axis, false)
    }
    /// Sorted descending along `axis` (stable: equal elements keep their input order; NaN first).
    #[track_caller]
    pub fn sort_axis_descending(&self, axis: usize) -> Array<T> {
        ok(self.try_sort_axis_descending(axis))
    }
    /// Like [`Array::sort_axis_descending`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_sort_axis_descending(&self, axis: usize) -> Result<Array<T>> {
        self.sorted(axis, true)
    }

    /// The positions (row-major, `u32`) that sort the flattened elements ascending, stably: the
    /// first of equal elements first.
    #[track_caller]
    pub fn argsort(&self) -> Array<u32> {
        ok(self.flat().and_then(|f| f.sorting(0, false)))
    }
    /// The positions along `axis` (`u32`) that sort each row ascending, stably
    /// (`take_along_axis` of them gives [`Array::sort_axis`]).
    #[track_caller]
    pub fn argsort_axis(&self, axis: usize) -> Array<u32> {
        ok(self.try_argsort_axis(axis))
    }
    /// Like [`Array::argsort_axis`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_argsort_axis(&self, axis: usize) -> Result<Array<u32>> {
        self.sorting(axis, false)
    }
    /// The positions along `axis` that sort each row descending, stably (equal elements in
    /// input order; NaN first).
    #[track_caller]
    pub fn argsort_axis_descending(&self, axis: usize) -> Array<u32> {
        ok(self.try_argsort_axis_descending(axis))
    }
    /// Like [`Array::argsort_axis_descending`], returning an error when `axis` is out of range.
    #[track_caller]
    pub fn try_argsort_axis_descending(&self, axis: usize) -> Result<Array<u32>> {
        self.sorting(axis, true)
    }

    /// The `k` largest elements along `axis`, largest first, and their positions (`u32`): the
    /// axis shrinks to `k`. Equal elements come in input order; NaN counts as the largest (as
    /// `torch.topk`): the first `k` of a stable descending argsort. Rows longer than one GPU
    /// work-group sorts (2048) with `k` up to 2048 take the `topk` intrinsic, a selection
    /// (a radix select on GPUs, `select_nth_unstable` on the CPU) rather than a sort; other
    /// calls take a descending argsort's first `k` positions. The values are
    /// [`Array::take_along_axis`] of the positions.
    #[track_caller]
    pub fn topk(&self, k: usize, axis: usize) -> (Array<T>, Array<u32>) {
        ok2(self.try_topk(k, axis))
    }
    /// Like [`Array::topk`], returning an error when `axis` is out of range or `k` is larger
    /// than the axis.
    #[track_caller]
    pub fn try_topk(&self, k: usize, axis: usize) -> Result<(Array<T>, Array<u32>)> {
        use crate::intrinsics::sort::{SMALL, TOPK_MAX};
        let select =
            (1..=TOPK_MAX).contains(&k) && self.shape().get(axis).is_some_and(|&l| l > SMALL);
        if select {
            let op = Intrinsic::Topk { axis, k };
            let idx: Array<u32> = Array::wrap(frontend::intrinsic(op, &[&self.h], site())?);
            return Ok((self.try_take_along_axis(&idx, axis)?, idx));
        }
        let order = self.sorting(axis, true)?;
        let len = self.shape()[axis];
        if k > len {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("topk of {k} along axis {axis} of length {len}"),
            )
            .at(site()));
        }
        let idx = if k == len {
            order
        } else {
            let mut s = vec![Slice::all(); self.ndim()];
            s[axis] = Slice::new(Some(0), Some(k as isize), 1);
            order.try_slice(&s)?
        };
        Ok((self.try_take_along_axis(&idx, axis)?, idx))
    }

    /// Insertion points (`u32`) of `values` (any shape) into this sorted 1-D array, NumPy's
    /// `searchsorted`: [`Side::Left`] gives the first `i` with `self[i] >= v`, [`Side::Right`]
    /// the first with `self[i] > v`, in the sort order (NaN last, -0.0 equal to +0.0). Every
    /// executor runs the same binary search, so an unsorted array gives the same (meaningless)
    /// answer everywhere.
    #[track_caller]
    pub fn searchsorted(&self, values: &Array<T>, side: Side) -> Array<u32> {
        ok(self.try_searchsorted(values, side))
    }
    /// Like [`Array::searchsorted`], returning an error when this array is not 1-D.
    #[track_caller]
    pub fn try_searchsorted(&self, values: &Array<T>, side: Side) -> Result<Array<u32>> {
        let op = Intrinsic::SearchSorted {
            right: side == Side::Right,
        };
        Ok(Array::wrap(frontend::intrinsic(
            op,
            &[&self.h, &values.h],
            site(),
        )?))
    }

    /// The distinct elements, flattened and ascending, and how many times each occurs (`u32`),
    /// NumPy's `np.unique(a, return_counts=True)` with all NaNs one value (`equal_nan`); -0.0 and
    /// +0.0 are one value, shown as the first of them in the input.
    ///
    /// **Blocking**: how many distinct elements there are depends on the data, and an array's
    /// shape is known when it is recorded, so this call computes and reads that count (a flush
    /// and a wait, like [`Array::item`]). The elements are sorted on the executor; the
    /// `unique_runs` intrinsic writes the count and the start of each run of equal elements
    /// into one padded `u32` buffer; the returned arrays are views and a gather of it, still
    /// lazy.
    #[track_caller]
    pub fn unique(&self) -> Result<(Array<T>, Array<u32>)> {
        let sorted = self.flat()?.sorted(0, false)?;
        let runs: Array<u32> = Array::wrap(frontend::intrinsic(
            Intrinsic::UniqueRuns,
            &[&sorted.h],
            site(),
        )?);
        let r = runs.try_slice(&[Slice::new(Some(0), Some(1), 1)])?.item()? as isize;
        let starts = runs.try_slice(&[Slice::new(Some(1), Some(1 + r), 1)])?;
        let ends = runs.try_slice(&[Slice::new(Some(2), Some(2 + r), 1)])?;
        let counts = &ends - &starts;
        Ok((sorted.gather(&starts, 0), counts))
    }
}

impl<T: Element> Array<T> {
    /// NumPy's `take_along_axis`: element `(.., j, ..)` of the result (`j` along `axis`) is this
    /// array's element `(.., indices[.., j, ..], ..)`. `indices` (i32 or u32) has this array's
    /// rank; its other axes match this array's or broadcast with them (extent 1). An index out
    /// of range (or negative) makes the result invalid; reading it returns the error, as
    /// [`Array::gather`].
    #[track_caller]
    pub fn take_along_axis<I: Index>(&self, indices: &Array<I>, axis: usize) -> Array<T> {
        ok(self.try_take_along_axis(indices, axis))
    }
    /// Like [`Array::take_along_axis`], returning an error when the ranks differ, `axis` is out
    /// of range or the other axes do not broadcast.
    #[track_caller]
    pub fn try_take_along_axis<I: Index>(
        &self,
        indices: &Array<I>,
        axis: usize,
    ) -> Result<Array<T>> {
        let (a, i) = (self.shape(), indices.shape());
        let op = Intrinsic::TakeAlongAxis { axis };
        let broadcast = a.len() == i.len()
            && axis < a.len()
            && (0..a.len()).any(|d| d != axis && a[d] != i[d])
            && (0..a.len()).all(|d| d == axis || a[d] == i[d] || a[d] == 1 || i[d] == 1);
        if !broadcast {
            return Ok(Array::wrap(frontend::intrinsic(
                op,
                &[&self.h, &indices.h],
                site(),
            )?));
        }
        let to = |own: &[usize]| -> Shape {
            (0..a.len())
                .map(|d| {
                    if d == axis {
                        own[d]
                    } else if a[d] == 1 {
                        i[d]
                    } else {
                        a[d]
                    }
                })
                .collect()
        };
        let data = self.try_broadcast_to(&to(a))?;
        let idx = indices.try_broadcast_to(&to(i))?;
        Ok(Array::wrap(frontend::intrinsic(
            op,
            &[&data.h, &idx.h],
            site(),
        )?))
    }
}
