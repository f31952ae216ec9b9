//! Reductions over axes that are not their input's innermost (`x.sum_axis(0)` of a matrix), on
//! both CPU tiers: the kernel's domain (kept axes first, reduced axes last, read through a permuted
//! strided map) is walked in the input's row order instead, so memory is read contiguously, and
//! each task keeps one accumulator per output element of the rows it walks.
//!
//! This module owns the row-order form of such a kernel ([`RowPlan`]: the same instructions over
//! the input's axes), the split of its domain into tasks, the accumulators and the final stage.
//!
//! Grouping (the rounding of sums and products): the input is `[A, R, B]` (kept axes before the
//! reduced ones, the reduced extent, kept axes after). For output element `o = a * B + b`, the
//! reduced index `r` is cut into blocks `[0, BLOCK)`, `[BLOCK, 2 BLOCK)`, ...; each block is
//! accumulated one `r` after another (in f64 for float sums and products, wrapping u64 for integer
//! ones) starting from the identity, and the block partials are combined in order starting from
//! the identity. A block never crosses a task, so the result depends neither on the tile size nor
//! on the thread count, and both tiers share this code (they only differ in how the kernel's
//! values are computed), so they agree bit for bit.

use super::reduce::{BLOCK, Partial, Partials, combine, identity, write};
use super::slices::{OutPtr, Src, copy};
use super::vm::{Fault, TaskPartials};
use crate::exec::TypedVec;
use crate::primitives::cpu::{fmax_nan, fmin_nan};
use crate::proggen::kernel::{FusedKernel, IndexMap};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Domains up to this many elements run on the executor thread alone.
const INLINE_MAX: usize = 1 << 16;

/// Elements each task covers at least (whole blocks of rows).
const MIN_TASK_ELEMENTS: usize = 1 << 15;

/// A permuted-reduction kernel in the input's row order.
pub struct RowPlan {
    /// The same kernel over the input's axes (its maps rewritten; contiguous ones found again).
    pub kernel: FusedKernel,
    /// The input as `[a, r, b]`: kept extent before the reduced axes, reduced extent, kept after.
    pub a: usize,
    pub r: usize,
    pub b: usize,
}

impl RowPlan {
    /// The row-order form of `k`, when its reduced axes are one run of its input's axes that is
    /// not the innermost and it stores nothing element-wise.
    pub fn of(k: &FusedKernel) -> Option<RowPlan> {
        let perm = k.domain.perm.as_ref()?;
        if k.reductions.is_empty() || !k.stores.is_empty() || k.domain.is_empty() {
            return None;
        }
        let rank = perm.len();
        let shape = &k.domain.shape;
        // The number of kept axes: those before the reduced extent in the domain.
        let mut nk = rank;
        let mut inner = 1;
        while nk > 0 && inner < k.domain.inner {
            nk -= 1;
            inner *= shape[nk];
        }
        if inner != k.domain.inner || nk == rank {
            return None;
        }
        let first = perm[nk];
        if (nk..rank).any(|j| perm[j] != first + (j - nk)) {
            return None;
        }
        let mut in_shape: SmallVec<[usize; 6]> = SmallVec::from_elem(0, rank);
        for (j, &p) in perm.iter().enumerate() {
            in_shape[p] = shape[j];
        }
        let a: usize = in_shape[..first].iter().product();
        let b: usize = in_shape[first + (rank - nk)..].iter().product();
        if b == 1 {
            return None;
        }
        let dcs = crate::ir::contiguous_strides(shape);
        let ics = crate::ir::contiguous_strides(&in_shape);
        let remap = |m: &IndexMap| -> IndexMap {
            let permute = |v: &[isize]| -> SmallVec<[isize; 6]> {
                let mut o: SmallVec<[isize; 6]> = SmallVec::from_elem(0, rank);
                for (j, &p) in perm.iter().enumerate() {
                    o[p] = v[j];
                }
                o
            };
            let strided = |offset: isize, strides: SmallVec<[isize; 6]>| {
                let contiguous = offset == 0
                    && (0..rank).all(|j| in_shape[j] == 1 || strides[j] == ics[j] as isize);
                if contiguous {
                    IndexMap::Contiguous
                } else {
                    IndexMap::Strided { offset, strides }
                }
            };
            match m {
                IndexMap::Contiguous => {
                    let d: SmallVec<[isize; 6]> = dcs.iter().map(|&c| c as isize).collect();
                    strided(0, permute(&d))
                }
                IndexMap::Strided { offset, strides } => strided(*offset, permute(strides)),
                IndexMap::Periodic { dims } => IndexMap::Periodic {
                    dims: dims
                        .iter()
                        .map(|d| {
                            let mut d = d.clone();
                            d.coef = permute(&d.coef);
                            d
                        })
                        .collect(),
                },
            }
        };
        let mut kernel = k.clone();
        kernel.domain.shape = in_shape.iter().copied().collect();
        kernel.domain.perm = None;
        for ins in &mut kernel.instrs {
            use crate::proggen::kernel::Instr;
            match ins {
                Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
                    *map = remap(map)
                }
                _ => {}
            }
        }
        Some(RowPlan {
            kernel,
            a,
            r: k.domain.inner,
            b,
        })
    }

    fn blocks(&self) -> usize {
        self.r.div_ceil(BLOCK)
    }

    /// Element range of unit `u` (one block of rows of one `a`).
    fn unit(&self, u: usize) -> (usize, usize) {
        let nb = self.blocks();
        let (a, k) = (u / nb, u % nb);
        let r0 = a * self.r + k * BLOCK;
        let r1 = a * self.r + ((k + 1) * BLOCK).min(self.r);
        (r0 * self.b, r1 * self.b)
    }

    /// Tasks: element ranges of whole units, in order.
    fn tasks(&self) -> Vec<(usize, usize)> {
        let units = self.a * self.blocks();
        let mut tasks = Vec::new();
        let mut start = 0;
        for u in 0..units {
            let (_, e) = self.unit(u);
            if e - start >= MIN_TASK_ELEMENTS || u + 1 == units {
                tasks.push((start, e));
                start = e;
            }
        }
        tasks
    }
}

/// One reduction's accumulators for the unit being walked: one per element of a row.
enum Acc {
    F(Vec<f64>),
    W(Vec<u64>),
    B(Vec<bool>),
    Arg(Vec<(f64, u64)>),
}

struct RowAcc {
    op: crate::ir::ReduceOp,
    /// The unit being accumulated (`usize::MAX`: none).
    unit: usize,
    acc: Acc,
    out: Partials,
}

/// Applies `f(acc, value, row)` to values starting at element `b` of row `row`.
#[inline(always)]
fn walk<T: Copy, A>(
    acc: &mut [A],
    vals: &[T],
    mut b: usize,
    mut row: usize,
    f: impl Fn(&mut A, T, u64),
) {
    let bw = acc.len();
    let mut i = 0;
    if b != 0 {
        let seg = (bw - b).min(vals.len());
        for (a, &x) in acc[b..b + seg].iter_mut().zip(&vals[..seg]) {
            f(a, x, row as u64);
        }
        i = seg;
        b += seg;
        if b == bw {
            row += 1;
        }
    }
    let whole = (vals.len() - i) / bw;
    for r in vals[i..i + whole * bw].chunks_exact(bw) {
        for (a, &x) in acc.iter_mut().zip(r) {
            f(a, x, row as u64);
        }
        row += 1;
    }
    i += whole * bw;
    for (a, &x) in acc.iter_mut().zip(&vals[i..]) {
        f(a, x, row as u64);
    }
}

/// `walk` with the row width known at compile time for common widths.
#[inline(always)]
fn walk_w<T: Copy, A>(
    acc: &mut [A],
    vals: &[T],
    b: usize,
    row: usize,
    f: impl Fn(&mut A, T, u64),
) {
    macro_rules! fixed {
        ($n:literal) => {{
            let acc: &mut [A; $n] = acc.try_into().unwrap();
            walk(acc, vals, b, row, f)
        }};
    }
    match acc.len() {
        2 => fixed!(2),
        3 => fixed!(3),
        4 => fixed!(4),
        8 => fixed!(8),
        16 => fixed!(16),
        _ => walk(acc, vals, b, row, f),
    }
}

trait Num: Copy {
    fn f(self) -> f64;
    fn w(self) -> u64;
}
macro_rules! num {
    ($t:ty, $w:expr) => {
        impl Num for $t {
            #[inline(always)]
            fn f(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn w(self) -> u64 {
                $w(self)
            }
        }
    };
}
num!(f32, |x: f32| x as i64 as u64);
num!(f64, |x: f64| x as i64 as u64);
num!(i32, |x: i32| x as i64 as u64);
num!(u32, |x: u32| x as u64);

/// Accumulates numbers `vals` starting at element `b` of row `row` (row within the reduced extent).
fn feed_num<T: Num>(op: crate::ir::ReduceOp, acc: &mut Acc, vals: &[T], b: usize, row: usize) {
    use crate::ir::ReduceOp as R;
    match (op, acc) {
        (R::Sum, Acc::F(a)) => walk_w(a, vals, b, row, |a, x, _| *a += x.f()),
        (R::Prod, Acc::F(a)) => walk_w(a, vals, b, row, |a, x, _| *a *= x.f()),
        (R::Sum, Acc::W(a)) => walk_w(a, vals, b, row, |a, x, _| *a = a.wrapping_add(x.w())),
        (R::Prod, Acc::W(a)) => walk_w(a, vals, b, row, |a, x, _| *a = a.wrapping_mul(x.w())),
        (R::Max, Acc::F(a)) => walk_w(a, vals, b, row, |a, x, _| *a = fmax_nan(*a, x.f())),
        (R::Min, Acc::F(a)) => walk_w(a, vals, b, row, |a, x, _| *a = fmin_nan(*a, x.f())),
        (R::ArgMax | R::ArgMin, Acc::Arg(a)) => {
            let max = op == R::ArgMax;
            // As `combine`: the first NaN wins, else the first strictly better value.
            walk_w(a, vals, b, row, |a, x, r| {
                let (bv, bi) = *a;
                let y = x.f();
                let better = if max { y > bv } else { y < bv };
                let take = bi == u64::MAX || ((better || y.is_nan()) && !bv.is_nan());
                if take {
                    *a = (y, r);
                }
            })
        }
        _ => unreachable!("row reduction {op:?}: accumulator kind"),
    }
}

impl RowAcc {
    fn new(op: crate::ir::ReduceOp, int: bool, b: usize) -> RowAcc {
        let acc = match identity(op, int) {
            Partial::F(x) => Acc::F(vec![x; b]),
            Partial::W(x) => Acc::W(vec![x; b]),
            Partial::B(x) => Acc::B(vec![x; b]),
            Partial::Arg(v, i) => Acc::Arg(vec![(v, i); b]),
        };
        RowAcc {
            op,
            unit: usize::MAX,
            acc,
            out: Vec::new(),
        }
    }

    fn reset(&mut self, int: bool) {
        match (&mut self.acc, identity(self.op, int)) {
            (Acc::F(a), Partial::F(x)) => a.fill(x),
            (Acc::W(a), Partial::W(x)) => a.fill(x),
            (Acc::B(a), Partial::B(x)) => a.fill(x),
            (Acc::Arg(a), Partial::Arg(v, i)) => a.fill((v, i)),
            _ => unreachable!(),
        }
    }

    /// Leaves the partials of the unit of `a` (output elements `a * B ..`).
    fn flush(&mut self, first_out: usize) {
        let o = first_out;
        match &self.acc {
            Acc::F(v) => self
                .out
                .extend(v.iter().enumerate().map(|(j, &x)| (o + j, Partial::F(x)))),
            Acc::W(v) => self
                .out
                .extend(v.iter().enumerate().map(|(j, &x)| (o + j, Partial::W(x)))),
            Acc::B(v) => self
                .out
                .extend(v.iter().enumerate().map(|(j, &x)| (o + j, Partial::B(x)))),
            Acc::Arg(v) => self.out.extend(
                v.iter()
                    .enumerate()
                    .map(|(j, &(x, i))| (o + j, Partial::Arg(x, i))),
            ),
        }
        self.unit = usize::MAX;
    }

    /// Accumulates the kernel's values for row-order elements `t0 .. t0 + v.len()`.
    fn feed(&mut self, g: &RowPlan, int: bool, v: Src, t0: usize) {
        let n = match v {
            Src::F32(v) => v.len(),
            Src::F64(v) => v.len(),
            Src::I32(v) => v.len(),
            Src::U32(v) => v.len(),
            Src::Bool(v) => v.len(),
        };
        let nb = g.blocks();
        let mut i = 0;
        while i < n {
            let pos = t0 + i;
            let (rowlin, b) = (pos / g.b, pos % g.b);
            let (a, row) = (rowlin / g.r, rowlin % g.r);
            let k = row / BLOCK;
            let unit = a * nb + k;
            if unit != self.unit {
                self.reset(int);
                self.unit = unit;
            }
            let end_row = ((k + 1) * BLOCK).min(g.r);
            let left = (end_row - row) * g.b - b;
            let m = left.min(n - i);
            let r = i..i + m;
            match v {
                Src::F32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::F64(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::I32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::U32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::Bool(v) => {
                    let Acc::B(acc) = &mut self.acc else {
                        unreachable!()
                    };
                    if self.op == crate::ir::ReduceOp::Any {
                        walk(acc, &v[r], b, row, |a, x, _| *a |= x)
                    } else {
                        walk(acc, &v[r], b, row, |a, x, _| *a &= x)
                    }
                }
            }
            i += m;
            if m == left {
                self.flush(a * g.b);
            }
        }
    }
}

/// Whether reduction `ri` of `k` accumulates wrapping integers.
fn is_int(k: &FusedKernel, ri: usize) -> bool {
    let r = &k.reductions[ri];
    k.outputs[r.output as usize].is_int()
        && matches!(
            r.op,
            crate::ir::ReduceOp::Sum | crate::ir::ReduceOp::Prod
        )
}

/// Runs a row plan: `eval(worker, t0, n, sink)` computes the kernel's values for row-order elements
/// `t0 .. t0 + n` (`n` at most `chunk`) and hands each reduction's values to `sink(ri, values)`.
pub fn drive<W>(
    g: &RowPlan,
    chunk: usize,
    init: impl Fn() -> W + Sync + Send,
    eval: impl Fn(&mut W, usize, usize, &mut dyn FnMut(usize, Src)) -> Result<(), Fault> + Sync + Send,
) -> Result<Vec<TaskPartials>, Fault> {
    let k = &g.kernel;
    let ints: Vec<bool> = (0..k.reductions.len()).map(|ri| is_int(k, ri)).collect();
    let task = |w: &mut W, (s, e): (usize, usize)| -> Result<TaskPartials, Fault> {
        let mut accs: Vec<RowAcc> = k
            .reductions
            .iter()
            .zip(&ints)
            .map(|(r, &int)| RowAcc::new(r.op, int, g.b))
            .collect();
        let mut t0 = s;
        while t0 < e {
            let n = chunk.min(e - t0);
            eval(w, t0, n, &mut |ri, v| accs[ri].feed(g, ints[ri], v, t0))?;
            t0 += n;
        }
        Ok(accs.into_iter().map(|a| a.out).collect())
    };
    let tasks = g.tasks();
    if k.domain.len() <= INLINE_MAX {
        let mut w = init();
        tasks.into_iter().map(|t| task(&mut w, t)).collect()
    } else {
        tasks.into_par_iter().map_init(init, task).collect()
    }
}

/// Final stage: combines every task's partials, in task order, per output element, and writes
/// the results through `outs` (one per kernel output).
pub fn finish(k: &FusedKernel, partials: &[TaskPartials], outs: &[OutPtr]) {
    for (ri, r) in k.reductions.iter().enumerate() {
        let int = is_int(k, ri);
        let id = identity(r.op, int);
        let mut acc = vec![id; k.domain.outer];
        for t in partials {
            for &(o, p) in &t[ri] {
                acc[o] = combine(r.op, acc[o], p);
            }
        }
        let n = k.domain.outer;
        let mut out = TypedVec::zeros(k.outputs[r.output as usize], n);
        for (o, p) in acc.into_iter().enumerate() {
            write(&mut out, o, p);
        }
        // SAFETY: the output has `outer` elements and nothing else refers to it now.
        copy(Src::of(&out, 0, n), unsafe { outs[r.output as usize].dst(0, n) });
    }
}
