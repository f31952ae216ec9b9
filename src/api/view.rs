//! Views and data movement: reshape, transpose/permute, slices with steps, broadcast (the seed's
//! spread), tile (periodic copy), gather (by an index array) and concat.

use super::array::{Array, ok, site};
use super::element::{Element, Index};
use crate::error::Result;
use crate::frontend::{self, SliceSpec};
use crate::ir::Shape;

/// One axis of a slice. Negative indices count from the end; a negative step walks backwards.
/// Indices outside the axis (beyond `-len..=len`, or a reversed slice starting past the last
/// element) are errors naming your line, as `&v[2..10]` panics for a `Vec` of 5.
/// [`Slice::index`] (an integer in [`s!`](crate::s)) selects one element and drops the axis.
///
/// Views (slices, transposes, broadcasts) fuse into the kernels that use them without copies.
///
/// ```
/// use arrayflow::{Array, Slice};
///
/// let a = Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]); // [[0, 1, 2, 3], [4, 5, ...
/// let rows = a.slice(&[(1..3).into()]); // rows 1 and 2, every column
/// assert_eq!(rows.to_vec()?, vec![4, 5, 6, 7, 8, 9, 10, 11]);
/// let s = a.slice(&[Slice::all(), Slice::step(.., 2)]); // every other column
/// assert_eq!(s.to_vec()?, vec![0, 2, 4, 6, 8, 10]);
/// let last = a.slice(&[Slice::at(-1), Slice::step(.., -1)]); // last row, reversed
/// assert_eq!((last.shape(), last.to_vec()?), (&[1, 4][..], vec![11, 10, 9, 8]));
///
/// let t = a.transpose(); // shape [4, 3]
/// assert_eq!(t.get(&[3, 1])?, 7);
/// assert_eq!(a.reshape(&[2, 6]).get(&[1, 0])?, 6);
/// let b = Array::from_vec(vec![100, 200, 300], &[3, 1]).broadcast_to(&[3, 4]);
/// assert_eq!((&a + &b).get(&[2, 3])?, 311);
/// let idx = Array::from_vec(vec![2u32, 0], &[2]);
/// assert_eq!(a.gather(&idx, 0).to_vec()?, vec![8, 9, 10, 11, 0, 1, 2, 3]);
/// assert_eq!(Array::concat(&[&a, &a], 0).shape(), &[6, 4]);
/// assert!(a.try_slice(&[(2..10).into()]).is_err()); // out of range: an error naming this line
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice(pub(crate) SliceSpec);

impl Slice {
    /// `start..end` with `step` (`None` = to the end in the step's direction).
    pub fn new(start: Option<isize>, end: Option<isize>, step: isize) -> Slice {
        Slice(SliceSpec {
            start,
            end,
            step,
            index: false,
        })
    }
    /// The whole axis.
    pub fn all() -> Slice {
        Slice::new(None, None, 1)
    }
    /// `range` taking every `step`-th element.
    pub fn step(range: impl Into<Slice>, step: isize) -> Slice {
        let mut s = range.into();
        s.0.step = step;
        s
    }
    /// A single index, keeping the axis with length 1 (negative counts from the end).
    pub fn at(i: isize) -> Slice {
        Slice::new(Some(i), if i == -1 { None } else { Some(i + 1) }, 1)
    }
    /// A single index that drops the axis, as NumPy's `a[i]` (negative counts from the end; an
    /// index outside `-len..len` is an error naming your line).
    pub fn index(i: isize) -> Slice {
        Slice(SliceSpec::index(i))
    }
}

impl<T: Element> Array<T> {
    /// The same elements in a new shape (row-major order is kept).
    #[track_caller]
    pub fn reshape(&self, shape: &[usize]) -> Array<T> {
        ok(self.try_reshape(shape))
    }
    /// Like [`Array::reshape`], returning an error when the element counts differ.
    #[track_caller]
    pub fn try_reshape(&self, shape: &[usize]) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::reshape(
            &self.h,
            Shape::from_slice(shape),
            site(),
        )?))
    }
    /// Axes reversed (a matrix transpose for 2-D arrays).
    #[track_caller]
    pub fn transpose(&self) -> Array<T> {
        let perm: Vec<usize> = (0..self.ndim()).rev().collect();
        self.permute(&perm)
    }
    /// Output axis `i` is input axis `perm[i]`.
    #[track_caller]
    pub fn permute(&self, perm: &[usize]) -> Array<T> {
        ok(frontend::permute(&self.h, perm, site()).map(Array::wrap))
    }
    /// A sub-array: one [`Slice`] per leading axis (`(2..10).into()`, `Slice::step(.., 2)`, ...,
    /// or NumPy's notation with [`s!`](crate::s): `a.slice(s![1..-1, ..;2, -1])` is NumPy's
    /// `a[1:-1, ::2, -1]`). An index out of range panics with the error (through the error-handler stack); see
    /// [`Array::try_slice`].
    #[track_caller]
    pub fn slice(&self, ranges: &[Slice]) -> Array<T> {
        ok(self.try_slice(ranges))
    }
    /// Like [`Array::slice`], returning an error for a slice out of range (`slice 2..10 out of
    /// range for axis 0 of length 5`) or a step of 0.
    #[track_caller]
    pub fn try_slice(&self, ranges: &[Slice]) -> Result<Array<T>> {
        let spec: Vec<SliceSpec> = ranges.iter().map(|s| s.0).collect();
        Ok(Array::wrap(frontend::slice(&self.h, &spec, site())?))
    }
    /// NumPy broadcast to `shape` (the seed's spread).
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Array<T> {
        ok(self.try_broadcast_to(shape))
    }
    /// Like [`Array::broadcast_to`], returning an error when the shapes do not broadcast.
    #[track_caller]
    pub fn try_broadcast_to(&self, shape: &[usize]) -> Result<Array<T>> {
        Ok(Array::wrap(frontend::broadcast_to(
            &self.h,
            Shape::from_slice(shape),
            site(),
        )?))
    }
    /// Periodic copy: `reps[i]` copies along axis `i` (NumPy `tile`).
    #[track_caller]
    pub fn tile(&self, reps: &[usize]) -> Array<T> {
        Array::wrap(frontend::tile(&self.h, reps, site()))
    }
    /// Elements at `indices` along `axis` (NumPy `take`). An index out of range makes the result
    /// invalid; reading it returns the error.
    #[track_caller]
    pub fn gather<I: Index>(&self, indices: &Array<I>, axis: usize) -> Array<T> {
        ok(frontend::gather(&self.h, &indices.h, axis, site()).map(Array::wrap))
    }
    /// Joins arrays along `axis`; all other dimensions must match.
    #[track_caller]
    pub fn concat(parts: &[&Array<T>], axis: usize) -> Array<T> {
        ok(Self::try_concat(parts, axis))
    }
    /// Like [`Array::concat`], returning an error when the other dimensions differ or `axis` is out
    /// of range.
    #[track_caller]
    pub fn try_concat(parts: &[&Array<T>], axis: usize) -> Result<Array<T>> {
        let hs: Vec<&frontend::Handle> = parts.iter().map(|p| &p.h).collect();
        Ok(Array::wrap(frontend::concat(&hs, axis, site())?))
    }
}
