//! The part of a fused kernel's domain its micro-kernels run over when stepping a scope
//! ([`Window`]): the least box of the domain that covers the scope's elements, so that stepping
//! one element, one group or a range computes about that many elements, not the whole kernel.
//! The micro-kernels' loads, generators and random draws read through the kernel's own index
//! maps moved to the box's origin ([`Window::shift`]).

use crate::ir::contiguous_strides;
use crate::proggen::kernel::{IndexMap, Instr};
use std::ops::Range;

/// A box of a kernel's domain: its first element's coordinates and its extents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The box's first element, per domain axis.
    pub origin: Vec<usize>,
    /// Its extent per domain axis.
    pub shape: Vec<usize>,
}

impl Window {
    /// The whole domain of `shape`.
    pub fn all(shape: &[usize]) -> Window {
        Window {
            origin: vec![0; shape.len()],
            shape: shape.to_vec(),
        }
    }

    /// The least box covering elements `range` (non-empty, inside the domain) of a domain of
    /// `shape`: the axes before the outermost one on which the first and last element differ
    /// are fixed, that axis spans both, and the axes after it are whole.
    pub fn covering(shape: &[usize], range: Range<usize>) -> Window {
        let lo = crate::ir::unravel(range.start, shape);
        let hi = crate::ir::unravel(range.end - 1, shape);
        let Some(a) = (0..shape.len()).find(|&k| lo[k] != hi[k]) else {
            return Window {
                origin: lo.to_vec(),
                shape: vec![1; shape.len()],
            };
        };
        Window {
            origin: (0..shape.len())
                .map(|k| if k <= a { lo[k] } else { 0 })
                .collect(),
            shape: (0..shape.len())
                .map(|k| match k.cmp(&a) {
                    std::cmp::Ordering::Less => 1,
                    std::cmp::Ordering::Equal => hi[a] - lo[a] + 1,
                    std::cmp::Ordering::Greater => shape[k],
                })
                .collect(),
        }
    }

    /// Its number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it is the whole domain (its maps need no moving).
    pub fn is_all(&self, domain: &[usize]) -> bool {
        self.origin.iter().all(|&o| o == 0) && self.shape == domain
    }

    /// The box's element that is domain element `d` (which the box covers).
    pub fn index_of(&self, d: usize, domain: &[usize]) -> usize {
        let idx = crate::ir::unravel(d, domain);
        idx.iter()
            .zip(&self.origin)
            .zip(&self.shape)
            .fold(0, |acc, ((&i, &o), &n)| acc * n + (i - o))
    }

    /// Map `map` of a domain of `domain`, read over the box instead: the same index at box
    /// element `b` as at the domain element it stands for.
    pub fn shift(&self, map: &IndexMap, domain: &[usize]) -> IndexMap {
        let moved = |coef: &[isize]| -> isize {
            coef.iter()
                .zip(&self.origin)
                .map(|(&c, &o)| c * o as isize)
                .sum()
        };
        match map {
            IndexMap::Contiguous => {
                let strides: Vec<isize> = contiguous_strides(domain)
                    .iter()
                    .map(|&s| s as isize)
                    .collect();
                IndexMap::Strided {
                    offset: moved(&strides),
                    strides: strides.into_iter().collect(),
                }
            }
            IndexMap::Strided { offset, strides } => IndexMap::Strided {
                offset: offset + moved(strides),
                strides: strides.clone(),
            },
            IndexMap::Folded { dims } => IndexMap::Folded {
                dims: dims
                    .iter()
                    .map(|d| {
                        let mut d = d.clone();
                        d.offset += moved(&d.coef);
                        d
                    })
                    .collect(),
            },
        }
    }

    /// Instruction `i` of a kernel over `domain`, reading over the box instead (its index map
    /// moved, for a load, a generator or a random draw).
    pub fn shift_instr(&self, i: &mut Instr, domain: &[usize]) {
        match i {
            Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
                *map = self.shift(map, domain)
            }
            _ => {}
        }
    }
}

/// The linear index `map` selects at domain element `d` of a domain of `shape`.
pub fn map_at(map: &IndexMap, shape: &[usize], d: usize) -> usize {
    let idx = crate::ir::unravel(d, shape);
    match map {
        IndexMap::Contiguous => d,
        IndexMap::Strided { offset, strides } => {
            (offset
                + strides
                    .iter()
                    .zip(&idx)
                    .map(|(s, &i)| s * i as isize)
                    .sum::<isize>()) as usize
        }
        IndexMap::Folded { dims } => dims
            .iter()
            .map(|f| f.at(&idx) * f.stride as isize)
            .sum::<isize>() as usize,
    }
}

#[cfg(test)]
mod tests {
    // (Named in full: the layer test reads `super` as this file's parent, `debug::step`.)
    use crate::debug::step::window::*;

    #[test]
    fn a_box_covers_its_range_and_no_more_than_whole_rows() {
        let shape = [6, 5, 7];
        for (lo, hi) in [(0, 1), (13, 14), (8, 12), (30, 75), (0, 210), (69, 71)] {
            let w = Window::covering(&shape, lo..hi);
            let inside: Vec<usize> = (0..210)
                .filter(|&d| {
                    let idx = crate::ir::unravel(d, &shape);
                    (0..3).all(|k| idx[k] >= w.origin[k] && idx[k] < w.origin[k] + w.shape[k])
                })
                .collect();
            assert_eq!(inside.len(), w.len());
            assert!((lo..hi).all(|d| inside.contains(&d)), "{lo}..{hi}: {w:?}");
            for (b, &d) in inside.iter().enumerate() {
                assert_eq!(w.index_of(d, &shape), b);
                // A contiguous load over the box reads domain element d at box element b.
                let m = w.shift(&IndexMap::Contiguous, &shape);
                assert_eq!(map_at(&m, &w.shape, b), d);
            }
        }
        assert_eq!(Window::covering(&shape, 13..14).len(), 1);
    }
}
