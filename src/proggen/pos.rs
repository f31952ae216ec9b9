//! Positions: which element of a node a kernel needs at each point of its domain, as an affine map
//! from the domain's multi-index to the node's multi-index. Views (broadcast, permute, slice) compose
//! into these maps, which is what lets them fuse without copies.

use super::kernel::{IndexMap, PeriodicDim};
use crate::ir::contiguous_strides;
use smallvec::SmallVec;

/// `node_index[j] = off[j] + sum_k coef[j * rank_d + k] * domain_index[k]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pos {
    rank_d: usize,
    off: SmallVec<[isize; 4]>,
    coef: SmallVec<[isize; 16]>,
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
        }
    }

    fn rank(&self) -> usize {
        self.off.len()
    }
    fn row(&self, j: usize) -> &[isize] {
        &self.coef[j * self.rank_d..(j + 1) * self.rank_d]
    }

    /// The position in an input of shape `in_shape` broadcast (right-aligned) to `out_shape`.
    pub fn broadcast_input(&self, out_shape: &[usize], in_shape: &[usize]) -> Pos {
        let lead = out_shape.len() - in_shape.len();
        let mut off = SmallVec::with_capacity(in_shape.len());
        let mut coef = SmallVec::with_capacity(in_shape.len() * self.rank_d);
        for (j, &d) in in_shape.iter().enumerate() {
            if d == 1 && out_shape[j + lead] != 1 {
                off.push(0);
                coef.extend(std::iter::repeat_n(0, self.rank_d));
            } else {
                off.push(self.off[j + lead]);
                coef.extend_from_slice(self.row(j + lead));
            }
        }
        Pos {
            rank_d: self.rank_d,
            off,
            coef,
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
        Pos {
            rank_d: self.rank_d,
            off,
            coef,
        }
    }

    /// The position in the input of a slice: input index `start + step * i`.
    pub fn slice_input(&self, start: &[isize], step: &[isize]) -> Pos {
        let mut p = self.clone();
        for j in 0..self.rank() {
            p.off[j] = start[j] + step[j] * self.off[j];
            for k in 0..self.rank_d {
                p.coef[j * self.rank_d + k] *= step[j];
            }
        }
        p
    }

    /// The linear index in a contiguous buffer of `shape`, over a domain of `domain_shape`.
    pub fn to_linear(&self, shape: &[usize], domain_shape: &[usize]) -> IndexMap {
        let cs = contiguous_strides(shape);
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
        let cs = contiguous_strides(in_shape);
        let mut dims = Vec::new();
        for (j, &m) in in_shape.iter().enumerate() {
            if m == 1 {
                continue;
            }
            dims.push(PeriodicDim {
                offset: self.off[j + lead],
                coef: SmallVec::from_slice(self.row(j + lead)),
                modulus: m,
                stride: cs[j],
            });
        }
        IndexMap::Periodic { dims }
    }
}
