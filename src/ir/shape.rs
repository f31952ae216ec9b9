//! Shapes: row-major dimension lists, NumPy broadcasting, contiguous strides.

use smallvec::SmallVec;

/// Dimensions of an array, outermost first (row-major). A scalar has no dimensions.
pub type Shape = SmallVec<[usize; 4]>;

/// Number of elements of a shape (1 for a scalar).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major element strides of a contiguous array of this shape.
pub fn contiguous_strides(shape: &[usize]) -> SmallVec<[usize; 4]> {
    let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(1, shape.len());
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// Whether reshaping `from` to `to` only inserts or removes axes of length 1 (the other axes keep
/// their order): every element keeps its multi-index, so kernels read such a reshape as a view.
pub fn unit_reshape(from: &[usize], to: &[usize]) -> bool {
    from.iter()
        .filter(|&&d| d != 1)
        .eq(to.iter().filter(|&&d| d != 1))
}

/// The NumPy broadcast of two shapes, or `None` when a pair of dimensions differs and neither is 1.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Shape> {
    let n = a.len().max(b.len());
    let mut out = Shape::from_elem(1, n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}
