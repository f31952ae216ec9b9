//! Scatter, gather's inverse: `scatter` (replace), `scatter_add` (`index_add`: duplicates
//! accumulate) and NumPy's `put_along_axis`. Each returns a new array (the data is not changed)
//! and runs as an intrinsic (`intrinsics/scatter/`).

use super::array::{Array, ok, site};
use super::element::{Element, Index, Numeric};
use crate::error::{Error, ErrorKind, Result};
use crate::frontend::{self, Handle};
use crate::ir::{Intrinsic, Shape, Site};

/// `values` broadcast to `shape` (NumPy's assignment broadcasting), or a shape error that says
/// which call wanted which shape.
fn values_as(values: &Handle, shape: &[usize], name: &str, site: Site) -> Result<Handle> {
    if values.shape[..] == *shape {
        return Ok(values.clone());
    }
    frontend::broadcast_to(values, Shape::from_slice(shape), site).map_err(|_| {
        Error::new(
            ErrorKind::Shape,
            format!(
                "{name} values of shape {:?} do not fit: expected shape {shape:?} (or one that \
                 broadcasts to it)",
                &values.shape[..]
            ),
        )
        .at(site)
    })
}

/// The values' shape a scatter along `axis` expects (gather's output shape), `None` when the
/// axis is out of range (the intrinsic's check reports it).
fn gather_shape(data: &[usize], idx: &[usize], axis: usize) -> Option<Vec<usize>> {
    (axis < data.len()).then(|| [&data[..axis], idx, &data[axis + 1..]].concat())
}

fn scatter_call<T: Element, I: Index>(
    data: &Array<T>,
    indices: &Array<I>,
    values: &Array<T>,
    op: Intrinsic,
    want: Option<Vec<usize>>,
    site: Site,
) -> Result<Array<T>> {
    let v = match want {
        Some(shape) => values_as(&values.h, &shape, op.name(), site)?,
        None => values.h.clone(),
    };
    Ok(Array::wrap(frontend::intrinsic(
        op,
        &[&data.h, &indices.h, &v],
        site,
    )?))
}

impl<T: Element> Array<T> {
    /// A copy of this array with `values` written at `indices` along `axis`: for `x` of shape
    /// `[a, n, b]`, `axis = 1` and indices `idx` (any shape, flattened), element
    /// `[p, idx[j], q]` becomes `values[p, j, q]`. `values` has the shape
    /// `x.gather(idx, axis)` would have, or one that broadcasts to it. The inverse of
    /// [`Array::gather`].
    ///
    /// Duplicate indices: the **last** one wins (largest `j`), on every executor. An index out
    /// of range (negative, or not below the axis' length: negative indices do not count from the
    /// end, as in `gather`) makes the result invalid; reading it returns the error.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let x = Array::from_vec(vec![0.0f32; 5], &[5]);
    /// let idx = Array::from_vec(vec![3u32, 0, 3], &[3]);
    /// let v = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    /// assert_eq!(x.scatter(&idx, &v, 0).to_vec()?, vec![2.0, 0.0, 0.0, 3.0, 0.0]);
    /// assert_eq!(x.scatter_add(&idx, &v, 0).to_vec()?, vec![2.0, 0.0, 0.0, 4.0, 0.0]);
    /// let m = Array::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]);
    /// let cols = Array::from_vec(vec![2i32, 0], &[2, 1]); // one column per row
    /// let put = m.put_along_axis(&cols, &Array::scalar(-1), 1);
    /// assert_eq!(put.to_vec()?, vec![0, 1, -1, -1, 4, 5]);
    /// let past_the_end = Array::from_vec(vec![5u32], &[1]);
    /// assert!(x.scatter(&past_the_end, &Array::scalar(1.0), 0).to_vec().is_err());
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn scatter<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Array<T> {
        ok(self.try_scatter(indices, values, axis))
    }

    /// Like [`Array::scatter`], returning an error for an axis out of range or values whose
    /// shape does not fit.
    #[track_caller]
    pub fn try_scatter<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Result<Array<T>> {
        let want = gather_shape(self.shape(), indices.shape(), axis);
        scatter_call(
            self,
            indices,
            values,
            Intrinsic::Scatter { axis },
            want,
            site(),
        )
    }

    /// NumPy's `put_along_axis` as a new array: `indices` has this array's rank and its extents
    /// on every axis but `axis`; element `[.., indices[.., k, ..], ..]` along `axis` becomes
    /// `values[.., k, ..]` (`values` of the indices' shape, or one that broadcasts to it). The
    /// inverse of taking elements along an axis (`take_along_axis`).
    ///
    /// Duplicates: the last in the indices' row-major order wins, on every executor. Indices
    /// out of range make the result invalid, as in [`Array::scatter`].
    #[track_caller]
    pub fn put_along_axis<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Array<T> {
        ok(self.try_put_along_axis(indices, values, axis))
    }

    /// Like [`Array::put_along_axis`], returning an error for an axis out of range, indices of
    /// another rank or extent, or values whose shape does not fit.
    #[track_caller]
    pub fn try_put_along_axis<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Result<Array<T>> {
        let want = Some(indices.shape().to_vec());
        scatter_call(
            self,
            indices,
            values,
            Intrinsic::PutAlongAxis { axis },
            want,
            site(),
        )
    }
}

impl<T: Numeric> Array<T> {
    /// A copy of this array with `values` added at `indices` along `axis` (PyTorch's
    /// `index_add`, NumPy's `np.add.at`); shapes as in [`Array::scatter`]. Duplicate indices
    /// accumulate. Integers wrap. Floats add in f64 in a fixed order on the CPU (many sources per
    /// target: fixed chunks of them first add in the element type) and with atomic adds in the
    /// element type in an unspecified order on a GPU, so sums with duplicates may differ in the
    /// last bits between executors (and between runs on a GPU).
    #[doc(alias = "index_add")]
    #[track_caller]
    pub fn scatter_add<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Array<T> {
        ok(self.try_scatter_add(indices, values, axis))
    }

    /// Like [`Array::scatter_add`], returning an error for an axis out of range or values whose
    /// shape does not fit.
    #[track_caller]
    pub fn try_scatter_add<I: Index>(
        &self,
        indices: &Array<I>,
        values: &Array<T>,
        axis: usize,
    ) -> Result<Array<T>> {
        let want = gather_shape(self.shape(), indices.shape(), axis);
        scatter_call(
            self,
            indices,
            values,
            Intrinsic::ScatterAdd { axis },
            want,
            site(),
        )
    }
}
