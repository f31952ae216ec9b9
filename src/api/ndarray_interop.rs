//! Conversions between [`Array`] and `ndarray` arrays (the cargo feature `ndarray`).
//!
//! Which directions copy:
//!
//! | conversion | copies |
//! | --- | --- |
//! | `Array::from(ndarray::Array<T, D>)` in standard (row-major) layout with no offset | no: the `Vec` becomes the runtime's buffer (on a GPU executor it is uploaded when first used, as `Array::from_vec`) |
//! | `Array::from(ndarray::Array<T, D>)` in another layout (transposed, sliced in place) | once, in row-major order |
//! | `Array::from(ArrayView)`, `Array::from(&ndarray_array)` | once |
//! | `array.to_ndarray()`, `ArrayD::try_from(&array)` | only the read itself (`to_vec`); `from_shape_vec` takes that `Vec` |

use super::array::Array;
use super::element::Element;
use crate::error::Result;
use ndarray::{ArrayBase, ArrayD, ArrayView, Data, Dimension, IxDyn};

/// The elements of an `ndarray` array in row-major order (one copy).
fn row_major<T: Element, S: Data<Elem = T>, D: Dimension>(a: &ArrayBase<S, D>) -> Vec<T> {
    match a.as_slice() {
        Some(s) => s.to_vec(),
        None => a.iter().copied().collect(),
    }
}

impl<T: Element, D: Dimension> From<ndarray::Array<T, D>> for Array<T> {
    /// Takes the `Vec` of a standard-layout array without copying; other layouts are copied once.
    #[track_caller]
    fn from(a: ndarray::Array<T, D>) -> Array<T> {
        let shape = a.shape().to_vec();
        let data = if a.is_standard_layout() {
            let n = a.len();
            match a.into_raw_vec_and_offset() {
                (v, Some(0)) if v.len() == n => v,
                (v, None) if n == 0 => {
                    drop(v);
                    Vec::new()
                }
                (v, off) => {
                    // A standard-layout window into a larger allocation: keep the window.
                    let o = off.unwrap_or(0);
                    v[o..o + n].to_vec()
                }
            }
        } else {
            row_major(&a)
        };
        Array::from_vec(data, &shape)
    }
}

impl<T: Element, D: Dimension> From<ArrayView<'_, T, D>> for Array<T> {
    /// Copies the view's elements once, in row-major order (any strides).
    #[track_caller]
    fn from(a: ArrayView<'_, T, D>) -> Array<T> {
        Array::from_vec(row_major(&a), a.shape())
    }
}

impl<T: Element, S: Data<Elem = T>, D: Dimension> From<&ArrayBase<S, D>> for Array<T> {
    /// Copies the elements once, in row-major order (any strides).
    #[track_caller]
    fn from(a: &ArrayBase<S, D>) -> Array<T> {
        Array::from_vec(row_major(a), a.shape())
    }
}

impl<T: Element> TryFrom<&Array<T>> for ArrayD<T> {
    type Error = crate::error::Error;
    /// Reads the array ([`Array::to_vec`]) and wraps the `Vec` without another copy.
    #[track_caller]
    fn try_from(a: &Array<T>) -> Result<ArrayD<T>> {
        a.to_ndarray()
    }
}

impl<T: Element> Array<T> {
    /// Reads the array into an `ndarray::ArrayD` (computing it if needed): the read's `Vec`
    /// becomes the `ndarray` array's storage, no copy beyond the read.
    #[track_caller]
    pub fn to_ndarray(&self) -> Result<ArrayD<T>> {
        let v = self.to_vec()?;
        Ok(ArrayD::from_shape_vec(IxDyn(self.shape()), v)
            .expect("arrayflow: a read's length matches its shape"))
    }
}
