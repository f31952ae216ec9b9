//! One part of a fused kernel's launch split along domain dimension 0 (issue 25, seed 002): which
//! kernels split ([`rows`]), the rows of each part at work-group-aligned points
//! ([`cut_points`]), the contiguous range of each input a part reads ([`read_ranges`], from the
//! access analysis of `access.rs`) and the part's own kernel ([`part_kernel`]): the same
//! instructions over rows `lo..hi` of the domain (each map shifted by `lo` rows, the part's global
//! offset), reading each sliced input from the slice's start and writing its outputs contiguously
//! from 0. The parts' outputs, joined in order along dimension 0, are the kernel's outputs.

use super::access::{self, Span};
use super::kernel::{FusedKernel, IndexMap, Instr};
use std::ops::Range;

/// Work items a split point is aligned to (a work-group size of the device executors).
pub const GROUP: usize = 64;

/// The number of domain rows (dimension 0) of a kernel that may be split: a kernel without trap
/// checks, over a domain of rank >= 1 with at least two rows, whose reductions (if any) keep
/// dimension 0 (each part then computes whole reductions); `None` otherwise.
pub fn rows(k: &FusedKernel) -> Option<usize> {
    let shape = &k.domain.shape;
    if shape.is_empty() || shape[0] < 2 || !k.traps.is_empty() || k.domain.is_empty() {
        return None;
    }
    if !k.reductions.is_empty() && access::kept_axes(shape, k.domain.inner.max(1)) == 0 {
        return None;
    }
    Some(shape[0])
}

/// Elements of one domain row (the domain's length over its rows).
pub fn row_len(k: &FusedKernel) -> usize {
    k.domain.shape[1..].iter().product()
}

/// Rows `0..n` cut into consecutive parts by `shares` (any non-negative weights), each cut a
/// multiple of `align` rows where it can be (the last part takes the rest). Parts may be empty.
pub fn cut_points(n: usize, align: usize, shares: &[f64]) -> Vec<Range<usize>> {
    let align = align.max(1);
    let total: f64 = shares.iter().sum();
    let mut parts = Vec::with_capacity(shares.len());
    let (mut acc, mut lo) = (0.0, 0usize);
    for (i, &s) in shares.iter().enumerate() {
        acc += s;
        let hi = if i + 1 == shares.len() || total <= 0.0 {
            n
        } else {
            let want = n as f64 * acc / total;
            let groups = (want / align as f64).round() as usize;
            (groups * align).clamp(lo, n)
        };
        parts.push(lo..hi);
        lo = hi;
    }
    parts
}

/// Rows a cut is aligned to so that it falls on a multiple of [`GROUP`] work items when a row has
/// `row_len` of them.
pub fn align_rows(row_len: usize) -> usize {
    let g = gcd(GROUP, row_len.max(1));
    GROUP / g
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// For each input of `k`, the contiguous range of elements the part over `part` rows reads, when
/// that range is smaller than the input (`lens`: the inputs' lengths): the hull of the access
/// analysis's read set. `None`: the input moves whole (read whole, read through a folded map,
/// data-dependent, or not read at all).
pub fn read_ranges(
    k: &FusedKernel,
    part: Range<usize>,
    lens: &[usize],
) -> Vec<Option<Range<usize>>> {
    let folded: Vec<bool> = (0..k.inputs.len())
        .map(|i| {
            k.instrs.iter().any(|ins| {
                matches!(ins, Instr::Load { input, map: IndexMap::Folded { .. }, .. }
                    if *input as usize == i)
            })
        })
        .collect();
    access::of_kernel(k, part)
        .into_iter()
        .take(k.inputs.len())
        .zip(lens)
        .zip(folded)
        .map(|((a, &len), folded)| match a.reads.within(len) {
            Span::Intervals(v) if !folded => {
                let r = v[0].start..v[v.len() - 1].end;
                (r.len() < len).then_some(r)
            }
            _ => None,
        })
        .collect()
}

/// The kernel of the part over rows `part` of `k`'s domain: each map reads at the element the
/// whole launch reads at row `lo + r` (the part's global offset), input `i` from element
/// `bases[i]` on (the start of its slice; 0 for a whole input); outputs are the part's own,
/// contiguous from 0 (element-wise: `rows x row_len`; reductions: the part's results).
pub fn part_kernel(k: &FusedKernel, part: Range<usize>, bases: &[usize]) -> FusedKernel {
    let full = k.domain.shape.clone();
    let lo = part.start as isize;
    let mut p = k.clone();
    p.domain.shape[0] = part.len();
    p.domain.outer = k.domain.outer / full[0] * part.len();
    let contiguous: smallvec::SmallVec<[isize; 6]> = crate::ir::contiguous_strides(&full)
        .iter()
        .map(|&s| s as isize)
        .collect();
    let shift = |map: &mut IndexMap, base: usize| {
        let base = base as isize;
        match map {
            IndexMap::Contiguous if lo == 0 && base == 0 => {}
            IndexMap::Contiguous => {
                *map = IndexMap::Strided {
                    offset: lo * contiguous[0] - base,
                    strides: contiguous.clone(),
                }
            }
            IndexMap::Strided { offset, strides } => {
                *offset += strides.first().copied().unwrap_or(0) * lo - base;
            }
            IndexMap::Folded { dims } => {
                debug_assert_eq!(base, 0, "a folded map reads a whole input");
                for d in dims {
                    d.offset += d.coef.first().copied().unwrap_or(0) * lo;
                }
            }
        }
    };
    for ins in &mut p.instrs {
        match ins {
            Instr::Load { input, map, .. } => shift(map, bases[*input as usize]),
            Instr::Gen { map, .. } | Instr::Random { map, .. } => shift(map, 0),
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_group_multiples_and_cover_the_rows() {
        let p = cut_points(1000, 64, &[0.3, 0.7]);
        assert_eq!(p, vec![0..320, 320..1000]);
        let p = cut_points(1000, 1, &[1.0, 1.0, 1.0]);
        assert_eq!(p, vec![0..333, 333..667, 667..1000]);
        assert_eq!(cut_points(10, 4, &[0.0, 1.0]), vec![0..0, 0..10]);
        assert_eq!(cut_points(10, 4, &[1.0, 0.0]), vec![0..10, 10..10]);
        assert_eq!(align_rows(1), 64);
        assert_eq!(align_rows(48), 4);
        assert_eq!(align_rows(256), 1);
    }
}
