//! Positions: which element of a node a kernel needs at each point of its domain, as an affine map
//! from the domain's multi-index to the node's multi-index, folded back into an axis where a roll
//! or pad lies between (see [`Fold`]). Views (broadcast, permute, slice, fold) compose into these
//! maps, which is what lets them fuse without copies.

use super::kernel::{Fold, FoldedDim, IndexMap};
use crate::ir::{FoldMode, contiguous_strides};
use smallvec::SmallVec;

/// `node_index[j] = off[j] + sum_k coef[j * rank_d + k] * domain_index[k]`, then passed through
/// the folds of axis `j` in `folds` (in order).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pos {
    rank_d: usize,
    off: SmallVec<[isize; 4]>,
    coef: SmallVec<[isize; 16]>,
    /// `(axis, fold)`, in the order they apply; empty for affine positions (the common case).
    folds: Vec<(usize, Fold)>,
}

impl Pos {
    /// Node and domain have the same shape.
    pub fn identity(rank: usize) -> Self {
        let mut coef = SmallVec::from_elem(0, rank * rank);
        for j in 0..rank {
            coef[j * rank + j] = 1;
        }
        Pos {
            rank_d: rank,
            off: SmallVec::from_elem(0, rank),
            coef,
            folds: Vec::new(),
        }
    }

    /// The domain is the node's axes reordered: domain axis `k` is node axis `perm[k]`.
    pub fn permuted(perm: &[usize]) -> Self {
        let rank = perm.len();
        let mut coef = SmallVec::from_elem(0, rank * rank);
        for (k, &j) in perm.iter().enumerate() {
            coef[j * rank + k] = 1;
        }
        Pos {
            rank_d: rank,
            off: SmallVec::from_elem(0, rank),
            coef,
            folds: Vec::new(),
        }
    }

    fn rank(&self) -> usize {
        self.off.len()
    }
    fn row(&self, j: usize) -> &[isize] {
        &self.coef[j * self.rank_d..(j + 1) * self.rank_d]
    }

    /// The folds of axis `j`, in order.
    fn folds_of(&self, j: usize) -> impl Iterator<Item = &Fold> {
        self.folds
            .iter()
            .filter(move |(a, _)| *a == j)
            .map(|(_, f)| f)
    }

    /// The position in an input of shape `in_shape` broadcast (right-aligned) to `out_shape`.
    pub fn broadcast_input(&self, out_shape: &[usize], in_shape: &[usize]) -> Pos {
        let lead = out_shape.len() - in_shape.len();
        let mut off = SmallVec::with_capacity(in_shape.len());
        let mut coef = SmallVec::with_capacity(in_shape.len() * self.rank_d);
        let mut folds = Vec::new();
        for (j, &d) in in_shape.iter().enumerate() {
            if d == 1 && out_shape[j + lead] != 1 {
                off.push(0);
                coef.extend(std::iter::repeat_n(0, self.rank_d));
            } else {
                off.push(self.off[j + lead]);
                coef.extend_from_slice(self.row(j + lead));
                folds.extend(self.folds_of(j + lead).map(|f| (j, *f)));
            }
        }
        Pos {
            rank_d: self.rank_d,
            off,
            coef,
            folds,
        }
    }

    /// The position in the input of a reshape that only inserts or removes axes of length 1
    /// ([`crate::ir::unit_reshape`]): the other axes keep their order, an input axis of length 1
    /// is read at 0.
    pub fn unit_reshape_input(&self, out_shape: &[usize], in_shape: &[usize]) -> Pos {
        let outer: SmallVec<[usize; 4]> = (0..out_shape.len())
            .filter(|&i| out_shape[i] != 1)
            .collect();
        let mut off = SmallVec::from_elem(0, in_shape.len());
        let mut coef = SmallVec::from_elem(0, in_shape.len() * self.rank_d);
        let mut folds = Vec::new();
        let mut next = outer.iter();
        for (j, &d) in in_shape.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let &i = next.next().expect("a unit reshape keeps its other axes");
            off[j] = self.off[i];
            coef[j * self.rank_d..(j + 1) * self.rank_d].copy_from_slice(self.row(i));
            folds.extend(self.folds_of(i).map(|f| (j, *f)));
        }
        Pos {
            rank_d: self.rank_d,
            off,
            coef,
            folds,
        }
    }

    /// The position in the input of a permute whose output axis `i` is input axis `perm[i]`.
    pub fn permute_input(&self, perm: &[usize]) -> Pos {
        let mut off = SmallVec::from_elem(0, perm.len());
        let mut coef = SmallVec::from_elem(0, perm.len() * self.rank_d);
        for (i, &j) in perm.iter().enumerate() {
            off[j] = self.off[i];
            coef[j * self.rank_d..(j + 1) * self.rank_d].copy_from_slice(self.row(i));
        }
        let folds = self.folds.iter().map(|&(i, f)| (perm[i], f)).collect();
        Pos {
            rank_d: self.rank_d,
            off,
            coef,
            folds,
        }
    }

    /// The last fold of axis `j`, which the views above it place.
    fn last_fold(&mut self, j: usize) -> Option<&mut Fold> {
        self.folds
            .iter_mut()
            .rev()
            .find(|(a, _)| *a == j)
            .map(|(_, f)| f)
    }

    /// The position in the input of a slice: input index `start + step * i`.
    pub fn slice_input(&self, start: &[isize], step: &[isize]) -> Pos {
        let mut p = self.clone();
        for j in 0..self.rank() {
            if let Some(f) = p.last_fold(j) {
                f.a = start[j] + step[j] * f.a;
                f.b *= step[j];
                continue;
            }
            p.off[j] = start[j] + step[j] * self.off[j];
            for k in 0..self.rank_d {
                p.coef[j * self.rank_d + k] *= step[j];
            }
        }
        p
    }

    /// The position in the input of a fold along `axis`: input index `mode(i - shift)` folded into
    /// the input's length `n`.
    pub fn fold_input(&self, axis: usize, mode: FoldMode, shift: isize, n: usize) -> Pos {
        let mut p = self.clone();
        match p.last_fold(axis) {
            Some(f) => f.a -= shift,
            None => p.off[axis] -= shift,
        }
        p.folds.push((axis, Fold::new(mode, n)));
        p
    }

    /// Whether the position is affine (no folds).
    pub fn is_affine(&self) -> bool {
        self.folds.is_empty()
    }

    /// The folded form of the position in a buffer of `shape` (strides `cs`), each axis's folds
    /// followed by `extra(j)`; axes that contribute nothing are left out.
    fn folded(&self, cs: &[usize], extra: impl Fn(usize) -> Option<Fold>) -> IndexMap {
        let mut dims = Vec::new();
        for (j, &stride) in cs.iter().enumerate() {
            let mut folds: SmallVec<[Fold; 1]> = self.folds_of(j).copied().collect();
            folds.extend(extra(j));
            let row = self.row(j);
            if stride == 0 || folds.is_empty() && self.off[j] == 0 && row.iter().all(|&c| c == 0) {
                continue;
            }
            dims.push(FoldedDim {
                offset: self.off[j],
                coef: SmallVec::from_slice(row),
                folds,
                stride,
            });
        }
        IndexMap::Folded { dims }
    }

    /// The linear index in a contiguous buffer of `shape`, over a domain of `domain_shape`.
    pub fn to_linear(&self, shape: &[usize], domain_shape: &[usize]) -> IndexMap {
        let cs = contiguous_strides(shape);
        if !self.is_affine() {
            return self.folded(&cs, |_| None);
        }
        let mut offset = 0isize;
        let mut strides: SmallVec<[isize; 6]> = SmallVec::from_elem(0, self.rank_d);
        for j in 0..self.rank() {
            offset += cs[j] as isize * self.off[j];
            for (k, s) in strides.iter_mut().enumerate() {
                *s += cs[j] as isize * self.coef[j * self.rank_d + k];
            }
        }
        let dcs = contiguous_strides(domain_shape);
        let same = shape.iter().product::<usize>() == domain_shape.iter().product::<usize>()
            && offset == 0
            && (0..self.rank_d).all(|k| domain_shape[k] == 1 || strides[k] == dcs[k] as isize);
        if same {
            return IndexMap::Contiguous;
        }
        for k in 0..self.rank_d {
            if domain_shape[k] == 1 {
                strides[k] = 0;
            }
        }
        IndexMap::Strided { offset, strides }
    }

    /// The linear index in a buffer of `in_shape` read periodically by a tile node of `shape`.
    pub fn to_periodic(&self, shape: &[usize], in_shape: &[usize]) -> IndexMap {
        let lead = shape.len() - in_shape.len();
        // The input's axes are the tile's last ones; the leading axes repeat the whole input.
        let mut p = self.clone();
        p.off.drain(..lead);
        p.coef.drain(..lead * self.rank_d);
        p.folds = self
            .folds
            .iter()
            .filter(|(j, _)| *j >= lead)
            .map(|&(j, f)| (j - lead, f))
            .collect();
        let cs = contiguous_strides(in_shape);
        let cs: SmallVec<[usize; 6]> = cs
            .iter()
            .zip(in_shape)
            .map(|(&c, &m)| if m == 1 { 0 } else { c })
            .collect();
        p.folded(&cs, |j| {
            (in_shape[j] != 1).then(|| Fold::new(FoldMode::Wrap, in_shape[j]))
        })
    }
}
