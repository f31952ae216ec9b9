//! Index walking for the CPU tile VM: for each element of a tile, the linear index an `IndexMap`
//! selects. Contiguous maps are plain ranges; strided maps walk rows of the innermost domain axis;
//! folded maps (tile, roll, pad) are computed per element.

use crate::proggen::kernel::IndexMap;

/// Calls `f(i, src)` for the `len` domain elements starting at linear index `t0`, where `src` is the
/// index `map` selects for element `t0 + i`.
#[inline]
pub fn for_each_index(
    map: &IndexMap,
    shape: &[usize],
    t0: usize,
    len: usize,
    mut f: impl FnMut(usize, usize),
) {
    match map {
        IndexMap::Contiguous => {
            for i in 0..len {
                f(i, t0 + i);
            }
        }
        IndexMap::Strided { offset, strides } => {
            if shape.is_empty() {
                for i in 0..len {
                    f(i, *offset as usize);
                }
                return;
            }
            for_each_row(*offset, strides, shape, t0, len, |i, base, step, seg| {
                for j in 0..seg {
                    f(i + j, (base + step * j as isize) as usize);
                }
            });
        }
        IndexMap::Folded { dims } => {
            let rank = shape.len();
            let mut idx = unravel(t0, shape);
            for i in 0..len {
                let src: isize = dims.iter().map(|d| d.at(&idx) * d.stride as isize).sum();
                f(i, src as usize);
                let mut k = rank;
                while k > 0 {
                    idx[k - 1] += 1;
                    if idx[k - 1] < shape[k - 1] {
                        break;
                    }
                    idx[k - 1] = 0;
                    k -= 1;
                }
            }
        }
    }
}

/// Calls `f(i, base, step, seg)` for each run of the `len` domain elements from `t0` along the
/// innermost axis: elements `t0 + i .. t0 + i + seg` read `base + step * j` of a strided map.
#[inline]
pub fn for_each_row(
    offset: isize,
    strides: &[isize],
    shape: &[usize],
    t0: usize,
    len: usize,
    mut f: impl FnMut(usize, isize, isize, usize),
) {
    let rank = shape.len();
    let mut idx = unravel(t0, shape);
    let inner = shape[rank - 1];
    let s_inner = strides[rank - 1];
    // The source index of the current row's first element, kept up to date as the multi-index
    // advances (short rows cost a few additions each).
    let mut base = offset;
    for k in 0..rank {
        base += strides[k] * idx[k] as isize;
    }
    let mut i = 0;
    while i < len {
        let seg = (inner - idx[rank - 1]).min(len - i);
        f(i, base, s_inner, seg);
        i += seg;
        // Advance the multi-index by `seg` (to the start of the next row).
        idx[rank - 1] += seg;
        base += s_inner * seg as isize;
        let mut k = rank - 1;
        while k > 0 && idx[k] >= shape[k] {
            base -= strides[k] * shape[k] as isize;
            idx[k] = 0;
            idx[k - 1] += 1;
            base += strides[k - 1];
            k -= 1;
        }
    }
}

/// The multi-index of linear index `lin` in a row-major `shape`.
pub fn unravel(mut lin: usize, shape: &[usize]) -> smallvec::SmallVec<[usize; 6]> {
    let mut idx = smallvec::SmallVec::from_elem(0, shape.len());
    for k in (0..shape.len()).rev() {
        if shape[k] > 0 {
            idx[k] = lin % shape[k];
            lin /= shape[k];
        }
    }
    idx
}
