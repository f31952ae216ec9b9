//! Access patterns (seed 004): which elements of each buffer a launch part reads and writes.
//!
//! A *part* is a range `lo..hi` of the kernel domain's dimension 0 (the launch split at
//! work-group-aligned points, see [`split_by_ratio`]); every other axis runs whole. For each kernel
//! argument (inputs, then outputs, in the kernel's order) [`of_kernel`] derives from the index
//! maps the set of element indices the part loads and stores, as sorted, disjoint intervals
//! ([`Span`]). Affine maps (slices, steps, transposes, broadcasts) are handled exactly; folded
//! maps (roll, pad, tile) exactly while a part's positions along an axis number at most
//! [`VALUES_LIMIT`]; a set that would need more than [`INTERVALS_LIMIT`] intervals is replaced by
//! its hull (a cover: transferring it is always safe). Data-dependent indices (the table of a
//! gather) are [`Span::Unknown`] and move whole. [`of_program`] adds the buffers' lengths (a set
//! covering the buffer is [`Span::Whole`]) and intrinsic calls. Never-read buffers need no upload,
//! never-written ones no copy-back: [`Transfer`] counts the bytes.

// Sets of indices are lists of intervals here: a list of one interval is the point.
#![allow(clippy::single_range_in_vec_init)]

use super::kernel::{FoldedDim, FusedKernel, IndexMap, Instr};
use super::sequence::{Formal, IntrinsicCall, Kernel, Program};
use crate::ir::{DType, Intrinsic};
use std::ops::Range;

/// Most intervals a set keeps before it is replaced by its hull.
pub const INTERVALS_LIMIT: usize = 4096;
/// Most positions along one folded axis enumerated exactly (beyond, the fold's whole image).
pub const VALUES_LIMIT: usize = 1 << 16;

/// A set of element indices of one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// No element.
    Empty,
    /// These elements: sorted, disjoint, non-adjacent, non-empty intervals.
    Intervals(Vec<Range<usize>>),
    /// Every element of the buffer.
    Whole,
    /// Not known before running (data-dependent indices): treated as the whole buffer.
    Unknown,
}

impl Span {
    /// The span of `intervals` (any order, may overlap).
    pub fn from_intervals(mut v: Vec<Range<usize>>) -> Span {
        v.retain(|r| r.start < r.end);
        if v.is_empty() {
            return Span::Empty;
        }
        v.sort_by_key(|r| r.start);
        let mut out: Vec<Range<usize>> = Vec::with_capacity(v.len());
        for r in v {
            match out.last_mut() {
                Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
                _ => out.push(r),
            }
        }
        Span::Intervals(out)
    }

    /// The span of one interval.
    pub fn interval(r: Range<usize>) -> Span {
        Span::from_intervals(vec![r])
    }

    /// Whether no element is in the span.
    pub fn is_empty(&self) -> bool {
        matches!(self, Span::Empty)
    }

    /// Elements in the span of a buffer of `len` elements (`Whole` and `Unknown` count `len`).
    pub fn elements(&self, len: usize) -> usize {
        match self {
            Span::Empty => 0,
            Span::Intervals(v) => v.iter().map(|r| r.end.min(len) - r.start.min(len)).sum(),
            Span::Whole | Span::Unknown => len,
        }
    }

    /// Whether element `i` of a buffer is in the span (`Unknown`: yes).
    pub fn contains(&self, i: usize) -> bool {
        match self {
            Span::Empty => false,
            Span::Intervals(v) => {
                let k = v.partition_point(|r| r.end <= i);
                k < v.len() && v[k].start <= i
            }
            Span::Whole | Span::Unknown => true,
        }
    }

    /// The union of two spans.
    pub fn union(self, other: Span) -> Span {
        match (self, other) {
            (Span::Unknown, _) | (_, Span::Unknown) => Span::Unknown,
            (Span::Whole, _) | (_, Span::Whole) => Span::Whole,
            (Span::Empty, s) | (s, Span::Empty) => s,
            (Span::Intervals(mut a), Span::Intervals(b)) => {
                a.extend(b);
                Span::from_intervals(a)
            }
        }
    }

    /// The span within a buffer of `len` elements: clipped, and `Whole` when it covers it.
    pub fn within(self, len: usize) -> Span {
        match self {
            Span::Intervals(v) => {
                let v: Vec<_> = v
                    .into_iter()
                    .map(|r| r.start.min(len)..r.end.min(len))
                    .collect();
                match Span::from_intervals(v) {
                    Span::Intervals(v) if v.len() == 1 && v[0] == (0..len) => Span::Whole,
                    s => s,
                }
            }
            s => s,
        }
    }
}

/// Which kernel argument an [`ArgAccess`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// Input `k` of the kernel.
    Input(usize),
    /// Output `k` of the kernel.
    Output(usize),
}

/// What one launch part does with one kernel argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgAccess {
    pub arg: Arg,
    pub dtype: DType,
    /// Elements the part reads (to upload before it runs).
    pub reads: Span,
    /// Elements the part writes (to copy back after it runs).
    pub writes: Span,
}

/// Bytes one part moves: uploads of what it reads, copy-backs of what it writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transfer {
    pub upload_bytes: usize,
    pub download_bytes: usize,
}

/// The bytes `args` move for buffers of `lens` elements (one per argument, in order).
pub fn transfer(args: &[ArgAccess], lens: &[usize]) -> Transfer {
    let mut t = Transfer::default();
    for (a, &len) in args.iter().zip(lens) {
        let size = a.dtype.size();
        t.upload_bytes += a.reads.elements(len) * size;
        t.download_bytes += a.writes.elements(len) * size;
    }
    t
}

/// Splits `0..n` work items into a first part of about `tenths / 10` of them and the rest, the
/// split point a multiple of `align` (a work-group size); `tenths` is 002's `partition` (0: all
/// in the second part, 10: all in the first).
pub fn split_by_ratio(n: usize, align: usize, tenths: u32) -> [Range<usize>; 2] {
    let align = align.max(1);
    let want = (n as u128 * tenths.min(10) as u128 + 5) / 10;
    let groups = (want as usize + align / 2) / align;
    let cut = if tenths >= 10 {
        n
    } else {
        (groups * align).min(n)
    };
    [0..cut, cut..n]
}

/// The accesses of `part` (a range of domain dimension 0) of fused kernel `k`: one per input, then
/// one per output, as intervals (never `Whole`: the kernel does not know its buffers' lengths).
pub fn of_kernel(k: &FusedKernel, part: Range<usize>) -> Vec<ArgAccess> {
    let shape: Vec<usize> = if k.domain.shape.is_empty() {
        vec![1]
    } else {
        k.domain.shape.to_vec()
    };
    let part = part.start.min(shape[0])..part.end.min(shape[0]).max(part.start.min(shape[0]));
    let mut reads: Vec<Span> = vec![Span::Empty; k.inputs.len()];
    if !part.is_empty() {
        for ins in &k.instrs {
            if let Instr::Load { input, map, .. } = ins {
                let s = map_span(map, &shape, part.clone());
                let r = &mut reads[*input as usize];
                *r = std::mem::replace(r, Span::Empty).union(s);
            }
        }
    }
    let rest: usize = shape[1..].iter().product();
    let mut writes: Vec<Span> = vec![Span::Empty; k.outputs.len()];
    if !part.is_empty() && rest > 0 {
        let elementwise = Span::from_intervals(vec![part.start * rest..part.end * rest]);
        for st in &k.stores {
            writes[st.output as usize] = elementwise.clone();
        }
        // Reduction results sit at the domain's linear index over `inner` (the reduced axes
        // last); a part of dimension 0 inside the reduced axes writes the one result's partial.
        let inner = k.domain.inner.max(1);
        let kept = kept_axes(&shape, inner);
        let red = if kept >= 1 {
            Span::from_intervals(vec![part.start * rest / inner..part.end * rest / inner])
        } else {
            Span::from_intervals(vec![0..1])
        };
        for r in &k.reductions {
            writes[r.output as usize] = red.clone();
        }
    }
    let ins = k.inputs.iter().enumerate().map(|(i, &dtype)| ArgAccess {
        arg: Arg::Input(i),
        dtype,
        reads: std::mem::replace(&mut reads[i], Span::Empty),
        writes: Span::Empty,
    });
    let outs = k.outputs.iter().enumerate().map(|(o, &dtype)| ArgAccess {
        arg: Arg::Output(o),
        dtype,
        reads: Span::Empty,
        writes: std::mem::replace(&mut writes[o], Span::Empty),
    });
    ins.chain(outs).collect()
}

/// The accesses of `part` of program `p` over its sequence's `formals`, clipped to the buffers'
/// lengths (`Whole` where a set covers its buffer). An intrinsic runs whole: it reads its inputs
/// whole (a gather's table [`Span::Unknown`]) and writes its output whole.
pub fn of_program(p: &Program, formals: &[Formal], part: Range<usize>) -> Vec<ArgAccess> {
    let lens: Vec<usize> = p
        .inputs
        .iter()
        .chain(&p.outputs)
        .map(|&f| formals[f as usize].len)
        .collect();
    let args = match &*p.kernel {
        Kernel::Fused(k) => of_kernel(k, part),
        Kernel::Intrinsic(c) => of_intrinsic(c),
    };
    args.into_iter()
        .zip(lens)
        .map(|(mut a, len)| {
            a.reads = a.reads.within(len);
            a.writes = a.writes.within(len);
            a
        })
        .collect()
}

/// An intrinsic call's accesses (not split): inputs read whole, data-dependent ones unknown.
fn of_intrinsic(c: &IntrinsicCall) -> Vec<ArgAccess> {
    let data_dependent = |i: usize| match c.op {
        Intrinsic::Gather { .. } => i == 0,
        _ => false,
    };
    let ins = c.in_dtypes.iter().enumerate().map(|(i, &dtype)| ArgAccess {
        arg: Arg::Input(i),
        dtype,
        reads: if data_dependent(i) {
            Span::Unknown
        } else {
            Span::Whole
        },
        writes: Span::Empty,
    });
    ins.chain(std::iter::once(ArgAccess {
        arg: Arg::Output(0),
        dtype: c.dtype,
        reads: Span::Empty,
        writes: Span::Whole,
    }))
    .collect()
}

/// How many leading axes of `shape` are kept when the trailing ones multiplying to `inner` are
/// reduced.
pub(crate) fn kept_axes(shape: &[usize], inner: usize) -> usize {
    let mut p = 1usize;
    for k in (0..shape.len()).rev() {
        if p == inner {
            return k + 1;
        }
        p = p.saturating_mul(shape[k]);
    }
    0
}

/// The box of the part: extents per domain axis, and dimension 0's start.
fn extents(shape: &[usize], part: &Range<usize>) -> Vec<usize> {
    let mut e = shape.to_vec();
    e[0] = part.end - part.start;
    e
}

/// The indices `map` reads over the part.
fn map_span(map: &IndexMap, shape: &[usize], part: Range<usize>) -> Span {
    let ext = extents(shape, &part);
    let set = match map {
        IndexMap::Contiguous => {
            let rest: usize = shape[1..].iter().product();
            vec![(part.start * rest) as isize..(part.end * rest) as isize]
        }
        IndexMap::Strided { offset, strides } => {
            let off = offset + strides.first().copied().unwrap_or(0) * part.start as isize;
            let terms: Vec<(isize, usize)> =
                strides.iter().copied().zip(ext.iter().copied()).collect();
            affine_set(off, &terms)
        }
        IndexMap::Folded { dims } => folded_set(dims, &ext, part.start),
    };
    Span::from_intervals(
        set.into_iter()
            .map(|r| r.start.max(0) as usize..r.end.max(0) as usize)
            .collect(),
    )
}

/// `{off + sum_k s_k * t_k : 0 <= t_k < n_k}` as sorted disjoint intervals (its hull past
/// [`INTERVALS_LIMIT`]).
pub fn affine_set(off: isize, terms: &[(isize, usize)]) -> Vec<Range<isize>> {
    if terms.iter().any(|&(_, n)| n == 0) {
        return Vec::new();
    }
    let mut off = off;
    let mut t: Vec<(isize, usize)> = Vec::new();
    for &(s, n) in terms {
        if s == 0 || n <= 1 {
            continue;
        }
        if s < 0 {
            off += s * (n as isize - 1);
        }
        t.push((s.abs(), n));
    }
    t.sort();
    let hull_end = off + t.iter().map(|&(s, n)| s * (n as isize - 1)).sum::<isize>() + 1;
    let mut set = vec![off..off + 1];
    for (s, n) in t {
        if set.len() == 1 && s <= set[0].end - set[0].start {
            let r = set[0].clone();
            set = vec![r.start..r.end + s * (n as isize - 1)];
            continue;
        }
        if set.len().saturating_mul(n) > INTERVALS_LIMIT {
            return vec![off..hull_end];
        }
        let shifts: Vec<isize> = (0..n as isize).map(|i| i * s).collect();
        set = shift_sum(&set, &shifts);
    }
    set
}

/// `{a + d : a in set, d in shifts}` merged.
fn shift_sum(set: &[Range<isize>], shifts: &[isize]) -> Vec<Range<isize>> {
    let mut v: Vec<Range<isize>> = Vec::with_capacity(set.len() * shifts.len());
    for &d in shifts {
        v.extend(set.iter().map(|r| r.start + d..r.end + d));
    }
    merge(v)
}

/// Sorted, merged intervals.
fn merge(mut v: Vec<Range<isize>>) -> Vec<Range<isize>> {
    v.sort_by_key(|r| r.start);
    let mut out: Vec<Range<isize>> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// `{a + b : a in x, b in y}` for interval sets (hull past [`INTERVALS_LIMIT`]).
fn minkowski(x: &[Range<isize>], y: &[Range<isize>]) -> Vec<Range<isize>> {
    if x.is_empty() || y.is_empty() {
        return Vec::new();
    }
    if x.len().saturating_mul(y.len()) > INTERVALS_LIMIT {
        let lo = x[0].start + y[0].start;
        let hi = x[x.len() - 1].end + y[y.len() - 1].end - 1;
        return vec![lo..hi];
    }
    let mut v = Vec::with_capacity(x.len() * y.len());
    for a in x {
        for b in y {
            v.push(a.start + b.start..a.end + b.end - 1);
        }
    }
    merge(v)
}

/// The indices a folded map reads over the box `ext` (dimension 0 starting at `lo`): the sum over
/// its axes of each axis's folded positions times its stride. Exact when no domain axis feeds two
/// buffer axes; otherwise exact by enumeration for parts of at most [`VALUES_LIMIT`] items, else a
/// cover.
fn folded_set(dims: &[FoldedDim], ext: &[usize], lo: usize) -> Vec<Range<isize>> {
    if ext.contains(&0) {
        return Vec::new();
    }
    let coupled = (0..ext.len()).any(|k| {
        dims.iter()
            .filter(|d| d.coef.get(k).is_some_and(|&c| c != 0) && ext[k] > 1)
            .count()
            > 1
    });
    let items: usize = ext.iter().product();
    if coupled && items <= VALUES_LIMIT {
        return enumerate_folded(dims, ext, lo);
    }
    let mut set = vec![0isize..1];
    for d in dims {
        let off = d.offset + d.coef.first().copied().unwrap_or(0) * lo as isize;
        let terms: Vec<(isize, usize)> = d.coef.iter().copied().zip(ext.iter().copied()).collect();
        let pre = affine_set(off, &terms);
        let count: isize = pre.iter().map(|r| r.end - r.start).sum();
        let values: Vec<isize> = if count as usize <= VALUES_LIMIT {
            let mut v: Vec<isize> = pre
                .iter()
                .flat_map(|r| r.clone())
                .map(|v| d.folds.iter().fold(v, |v, f| f.apply(v)))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        } else if let Some(f) = d.folds.last() {
            (0..f.n as isize).map(|k| f.a + f.b * k).collect()
        } else {
            // No fold: the affine positions themselves (a cover by their hull).
            let (a, b) = (pre[0].start, pre[pre.len() - 1].end);
            (a..b).collect()
        };
        let s = d.stride as isize;
        let axis: Vec<Range<isize>> = if s == 1 {
            merge(values.iter().map(|&v| v..v + 1).collect())
        } else {
            values.iter().map(|&v| v * s..v * s + 1).collect()
        };
        set = minkowski(&set, &axis);
    }
    set
}

/// Every index a folded map reads over the box, one work item at a time.
fn enumerate_folded(dims: &[FoldedDim], ext: &[usize], lo: usize) -> Vec<Range<isize>> {
    let mut idx = vec![0usize; ext.len()];
    let mut v = Vec::new();
    loop {
        let mut d = idx.clone();
        d[0] += lo;
        let i: isize = dims.iter().map(|f| f.at(&d) * f.stride as isize).sum();
        v.push(i..i + 1);
        let mut k = ext.len();
        loop {
            if k == 0 {
                return merge(v);
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < ext[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}
