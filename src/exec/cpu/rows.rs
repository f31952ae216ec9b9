//! Reductions over axes that are not their input's innermost (`x.sum_axis(0)` of a matrix), on
//! both CPU tiers: the kernel's domain (kept axes first, reduced axes last, read through a permuted
//! strided map) is walked in the input's row order instead, so memory is read contiguously, and
//! each task keeps one accumulator per output element of the rows it walks.
//!
//! This module owns the row-order form of such a kernel ([`RowPlan`]: the same instructions over
//! the input's axes), the split of its domain into tasks, the accumulators and the final stage.
//!
//! Grouping (the rounding of float sums and products) is exactly the one of the domain order
//! (see `reduce`): the input is `[A, R, B]` (kept axes before the reduced ones, the reduced
//! extent `R`, kept axes after); output element `o = a * B + b` reduces domain elements
//! `o * R .. (o + 1) * R`, cut into pieces at multiples of [`BLOCK`] of the domain's linear index;
//! each piece is summed in eight lanes (lane `(r - start) % 8` over whole chunks of 8, lanes added
//! in order, the rest one by one, in f64) and pieces combine in order from the identity. Walking
//! rows, each output element keeps its eight lanes (indexed by `r % 8`, so one row updates the same
//! lane of every element, vectorised) and its own piece boundaries and tails are handled as events.
//! A task covers rows `r0 .. r1` of one `a` (or whole `a`s) and computes every piece that *starts*
//! there, reading on past `r1` to finish them, so no piece is split between tasks. Other
//! reductions (extrema, arg-extrema, integer sums, any/all) are exact whatever the order; the final
//! stage combines the tasks' partials per output element in task order. Results depend neither on
//! the tile size nor on the thread count, and both tiers share this code, so they agree bit for bit.

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

/// Row elements (kept extent after the reduced axes) up to which row order is used.
const MAX_ROW: usize = 4096;
/// Reduced extents from which row order is used.
const MIN_REDUCED: usize = 16;

/// Whether row order is used (`ARRAYFLOW_ROW_ORDER=off` keeps the domain order, for comparisons).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("ARRAYFLOW_ROW_ORDER").map_or(true, |v| v != "off"))
}

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
        if !enabled() {
            return None;
        }
        // Only worth it when some load gathers along the reduced axis (a stride over a cache
        // line); loads that run along it or broadcast already read memory in order.
        let gathers = k.instrs.iter().any(|i| match i {
            crate::proggen::kernel::Instr::Load { map, .. } => match map {
                IndexMap::Contiguous => false,
                IndexMap::Strided { strides, .. } => strides.last().is_some_and(|s| s.abs() > 1),
                IndexMap::Folded { .. } => true,
            },
            _ => false,
        });
        if !gathers {
            return None;
        }
        if k.reductions.is_empty() || !k.stores.is_empty() || k.domain.is_empty() {
            return None;
        }
        let rank = perm.len();
        let shape = &k.domain.shape;
        // The number of kept axes: those before the reduced extent in the domain.
        let nk = k.domain.first_reduced_axis()?;
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
        // Short reduced extents read memory locally in the domain order already (a tile spans
        // many output elements), and a task keeps accumulators for whole rows: wide rows keep
        // the domain order, which splits them between threads.
        if b == 1 || b > MAX_ROW || k.domain.inner < MIN_REDUCED {
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
                IndexMap::Folded { dims } => IndexMap::Folded {
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

    /// Whether every instruction is a contiguous load (the reductions read the input in place).
    pub fn reads_in_place(&self) -> bool {
        self.kernel.instrs.iter().all(|i| {
            matches!(
                i,
                crate::proggen::kernel::Instr::Load {
                    map: IndexMap::Contiguous,
                    ..
                }
            )
        })
    }

    /// Tasks, in order: whole `a`s together while an `a` is small, else row bands of one `a`.
    fn tasks(&self) -> Vec<Task> {
        let per_a = self.r * self.b;
        let mut tasks = Vec::new();
        if per_a >= 2 * TASK_ELEMENTS {
            let rows = (TASK_ELEMENTS / self.b).max(TASK_ROWS);
            for a in 0..self.a {
                let mut r0 = 0;
                while r0 < self.r {
                    let r1 = (r0 + rows).min(self.r);
                    tasks.push(Task {
                        a0: a,
                        a1: a + 1,
                        r0,
                        r1,
                    });
                    r0 = r1;
                }
            }
        } else {
            let group = TASK_ELEMENTS.div_ceil(per_a.max(1));
            let mut a0 = 0;
            while a0 < self.a {
                let a1 = (a0 + group).min(self.a);
                tasks.push(Task {
                    a0,
                    a1,
                    r0: 0,
                    r1: self.r,
                });
                a0 = a1;
            }
        }
        tasks
    }

    /// The last row (exclusive) of `a`'s rows that task `t` reads: past `r1` to finish the pieces
    /// of float sums that start before it.
    fn end_row(&self, t: &Task, lanes: bool) -> usize {
        if lanes {
            (t.r1 + BLOCK - 1).min(self.r)
        } else {
            t.r1
        }
    }
}

/// Rows `r0 .. r1` of `a0 .. a1` (whole rows when several `a`s).
#[derive(Debug, Clone, Copy)]
struct Task {
    a0: usize,
    a1: usize,
    r0: usize,
    r1: usize,
}

/// Elements a task covers at least.
const TASK_ELEMENTS: usize = 1 << 17;
/// Rows a row band covers at least (so reading on past it for float sums costs little).
const TASK_ROWS: usize = 16 * BLOCK;

/// One reduction's accumulators (extrema, arg-extrema, integer sums, any/all) for the `a` being
/// walked: one per element of a row.
enum Acc {
    F(Vec<f64>),
    W(Vec<u64>),
    B(Vec<bool>),
    Arg(Vec<(f64, u64)>),
}

struct RowAcc {
    op: crate::ir::ReduceOp,
    /// The `a` being accumulated (`usize::MAX`: none).
    cur: usize,
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
fn walk_w<T: Copy, A>(acc: &mut [A], vals: &[T], b: usize, row: usize, f: impl Fn(&mut A, T, u64)) {
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
            cur: usize::MAX,
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
        self.cur = usize::MAX;
    }

    /// Accumulates the kernel's values for row-order elements `t0 .. t0 + v.len()` of task `t`
    /// (rows of an `a` from `t.r1` on are ignored).
    fn feed(&mut self, g: &RowPlan, t: &Task, int: bool, v: Src, t0: usize) {
        let n = src_len(&v);
        let mut i = 0;
        while i < n {
            let pos = t0 + i;
            let (rowlin, b) = (pos / g.b, pos % g.b);
            let (a, row) = (rowlin / g.r, rowlin % g.r);
            if row >= t.r1 {
                i += (g.r - row) * g.b - b;
                continue;
            }
            if a != self.cur {
                self.reset(int);
                self.cur = a;
            }
            let left = (t.r1 - row) * g.b - b;
            let m = left.min(n - i);
            let r = i..i + m;
            match v {
                Src::F32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::F64(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::I32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::U32(v) => feed_num(self.op, &mut self.acc, &v[r], b, row),
                Src::C64(_) | Src::C128(_) => {
                    unreachable!("complex reductions are recorded as reductions of their parts")
                }
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

fn src_len(v: &Src) -> usize {
    match v {
        Src::F32(v) => v.len(),
        Src::F64(v) => v.len(),
        Src::I32(v) => v.len(),
        Src::U32(v) => v.len(),
        Src::Bool(v) => v.len(),
        Src::C64(v) => v.len(),
        Src::C128(v) => v.len(),
    }
}

/// Where an output element of a float sum or product stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Before its first piece in this task (at row `s`).
    Skip,
    Active,
    /// Past its last piece in this task.
    Done,
}

/// A float sum or product in the domain order's grouping (see the module comment), for the `a`
/// being walked.
struct LaneAcc {
    prod: bool,
    /// The `a` being accumulated (`usize::MAX`: none).
    cur: usize,
    /// Lane `l` of element `b` at `l * B + b` (lane of row `r`: `r % 8`).
    lanes: Vec<f64>,
    /// Per element: its piece's start, end and first tail row, the tail values, its mode, and the
    /// next row at which something happens to it.
    s: Vec<usize>,
    e: Vec<usize>,
    w: Vec<usize>,
    tails: Vec<[f64; 8]>,
    ntail: Vec<u8>,
    mode: Vec<Mode>,
    next: Vec<usize>,
    /// The least of `next`: rows before it are plain lane updates for every element.
    min_next: usize,
    out: Partials,
}

impl LaneAcc {
    fn new(prod: bool, b: usize) -> LaneAcc {
        LaneAcc {
            prod,
            cur: usize::MAX,
            lanes: vec![0.0; 8 * b],
            s: vec![0; b],
            e: vec![0; b],
            w: vec![0; b],
            tails: vec![[0.0; 8]; b],
            ntail: vec![0; b],
            mode: vec![Mode::Done; b],
            next: vec![usize::MAX; b],
            min_next: usize::MAX,
            out: Vec::new(),
        }
    }

    fn id(&self) -> f64 {
        if self.prod { 1.0 } else { 0.0 }
    }

    /// The cut offset of output element `o`: pieces start at 0 and at `c + k * BLOCK`.
    fn cut(g: &RowPlan, o: usize) -> usize {
        (BLOCK - (o * g.r) % BLOCK) % BLOCK
    }

    /// Starts walking `a` (task `t`): every element waits for its first piece starting at or
    /// after `t.r0`, before `t.r1`.
    fn begin(&mut self, g: &RowPlan, t: &Task, a: usize) {
        self.cur = a;
        let lim = t.r1.min(g.r);
        for b in 0..g.b {
            let c = Self::cut(g, a * g.b + b) as isize;
            let s = if t.r0 == 0 {
                0
            } else {
                t.r0 + (c - t.r0 as isize).rem_euclid(BLOCK as isize) as usize
            };
            if s < lim {
                self.mode[b] = Mode::Skip;
                self.s[b] = s;
                self.next[b] = s;
            } else {
                self.mode[b] = Mode::Done;
                self.next[b] = usize::MAX;
            }
        }
        self.min_next = self.next.iter().copied().min().unwrap_or(usize::MAX);
    }

    fn start(&mut self, g: &RowPlan, b: usize, s: usize) {
        let c = Self::cut(g, self.cur * g.b + b) as isize;
        let e = (s + (c - s as isize - 1).rem_euclid(BLOCK as isize) as usize + 1).min(g.r);
        self.s[b] = s;
        self.e[b] = e;
        self.w[b] = s + (e - s) / 8 * 8;
        self.ntail[b] = 0;
        let id = self.id();
        let bw = g.b;
        for l in 0..8 {
            self.lanes[l * bw + b] = id;
        }
        self.mode[b] = Mode::Active;
    }

    /// Leaves the partial of element `b`'s piece: lanes in order from its start, then the tail.
    fn complete(&mut self, g: &RowPlan, b: usize) {
        let (s, bw, prod) = (self.s[b], g.b, self.prod);
        let op = |x: f64, y: f64| if prod { x * y } else { x + y };
        let mut p = self.lanes[(s % 8) * bw + b];
        for j in 1..8 {
            p = op(p, self.lanes[((s + j) % 8) * bw + b]);
        }
        for &x in &self.tails[b][..self.ntail[b] as usize] {
            p = op(p, x);
        }
        self.out.push((self.cur * bw + b, Partial::F(p)));
    }

    /// Element `b` of row `row` when `row == next[b]`.
    fn step(&mut self, g: &RowPlan, t: &Task, b: usize, row: usize, x: f64) {
        if self.mode[b] == Mode::Active && row == self.e[b] {
            self.complete(g, b);
            if row < t.r1 {
                self.start(g, b, row);
            } else {
                self.mode[b] = Mode::Done;
                self.next[b] = usize::MAX;
                return;
            }
        }
        if self.mode[b] == Mode::Skip {
            self.start(g, b, row);
        }
        if row < self.w[b] {
            let l = &mut self.lanes[(row % 8) * g.b + b];
            *l = if self.prod { *l * x } else { *l + x };
        } else {
            self.tails[b][self.ntail[b] as usize] = x;
            self.ntail[b] += 1;
        }
        self.next[b] = if row + 1 < self.w[b] {
            self.w[b]
        } else {
            row + 1
        };
    }

    /// Ends walking the current `a`: pieces that reach its last row read are complete.
    fn end(&mut self, g: &RowPlan) {
        for b in 0..g.b {
            if self.mode[b] == Mode::Active {
                self.complete(g, b);
                self.mode[b] = Mode::Done;
            }
        }
        self.cur = usize::MAX;
    }

    fn feed(&mut self, g: &RowPlan, t: &Task, end_row: usize, v: Src, t0: usize) {
        match v {
            Src::F32(v) => self.feed_t(g, t, end_row, v, t0),
            Src::F64(v) => self.feed_t(g, t, end_row, v, t0),
            Src::I32(v) => self.feed_t(g, t, end_row, v, t0),
            Src::U32(v) => self.feed_t(g, t, end_row, v, t0),
            Src::Bool(_) | Src::C64(_) | Src::C128(_) => unreachable!("float sums of numbers"),
        }
    }

    fn feed_t<T: Num>(&mut self, g: &RowPlan, t: &Task, end_row: usize, v: &[T], t0: usize) {
        let n = v.len();
        let bw = g.b;
        let mut i = 0;
        while i < n {
            let pos = t0 + i;
            let (rowlin, mut b) = (pos / bw, pos % bw);
            let (a, mut row) = (rowlin / g.r, rowlin % g.r);
            if a != self.cur {
                self.begin(g, t, a);
            }
            let left = (end_row - row) * bw - b;
            let stop = i + left.min(n - i);
            while i < stop {
                if b == 0 && row + 8 <= self.min_next && stop - i >= 8 * bw {
                    // Whole groups of eight rows: row `row + j` goes to lane `(row + j) % 8`, so
                    // a group adds element-wise onto all the lanes (laid out alike), rotated by
                    // `row % 8`: its first rows onto lanes `q ..`, the others onto lanes `.. q`.
                    let groups = ((stop - i) / (8 * bw)).min((self.min_next - row) / 8);
                    let vals = &v[i..i + groups * 8 * bw];
                    let q = (row % 8) * bw;
                    let (low, high) = self.lanes.split_at_mut(q);
                    let prod = self.prod;
                    let add = |l: &mut [f64], c: &[T]| {
                        if prod {
                            l.iter_mut().zip(c).for_each(|(l, &x)| *l *= x.f());
                        } else {
                            l.iter_mut().zip(c).for_each(|(l, &x)| *l += x.f());
                        }
                    };
                    for c in vals.chunks_exact(8 * bw) {
                        let (first, second) = c.split_at(8 * bw - q);
                        add(high, first);
                        add(low, second);
                    }
                    i += groups * 8 * bw;
                    row += groups * 8;
                    continue;
                }
                if b == 0 && stop - i >= bw && row < self.min_next {
                    // A whole row without events: lane `row % 8` of every element.
                    let lanes = &mut self.lanes[(row % 8) * bw..(row % 8 + 1) * bw];
                    let vals = &v[i..i + bw];
                    if self.prod {
                        lanes.iter_mut().zip(vals).for_each(|(l, &x)| *l *= x.f());
                    } else {
                        lanes.iter_mut().zip(vals).for_each(|(l, &x)| *l += x.f());
                    }
                    i += bw;
                    row += 1;
                    continue;
                }
                let seg = (bw - b).min(stop - i);
                let mut event = false;
                for j in 0..seg {
                    let x = v[i + j].f();
                    let bb = b + j;
                    if row == self.next[bb] {
                        self.step(g, t, bb, row, x);
                        event = true;
                    } else {
                        let l = &mut self.lanes[(row % 8) * bw + bb];
                        *l = if self.prod { *l * x } else { *l + x };
                    }
                }
                if event {
                    self.min_next = self.next.iter().copied().min().unwrap_or(usize::MAX);
                }
                i += seg;
                b += seg;
                if b == bw {
                    b = 0;
                    row += 1;
                }
            }
            if row == end_row && b == 0 {
                self.end(g);
            }
        }
    }
}

/// Whether reduction `ri` of `k` accumulates wrapping integers.
fn is_int(k: &FusedKernel, ri: usize) -> bool {
    let r = &k.reductions[ri];
    k.outputs[r.output as usize].is_int()
        && matches!(r.op, crate::ir::ReduceOp::Sum | crate::ir::ReduceOp::Prod)
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
    // Float sums and products keep the domain order's grouping (`LaneAcc`).
    let lane: Vec<bool> = k
        .reductions
        .iter()
        .zip(&ints)
        .map(|(r, &int)| {
            !int && matches!(r.op, crate::ir::ReduceOp::Sum | crate::ir::ReduceOp::Prod)
        })
        .collect();
    let lanes = lane.iter().any(|&l| l);
    enum A {
        Row(RowAcc),
        Lane(LaneAcc),
    }
    let task = |w: &mut W, t: Task| -> Result<TaskPartials, Fault> {
        let mut accs: Vec<A> = k
            .reductions
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                if lane[ri] {
                    A::Lane(LaneAcc::new(r.op == crate::ir::ReduceOp::Prod, g.b))
                } else {
                    A::Row(RowAcc::new(r.op, ints[ri], g.b))
                }
            })
            .collect();
        let end_row = g.end_row(&t, lanes);
        let (s, e) = if t.a1 - t.a0 > 1 {
            (t.a0 * g.r * g.b, t.a1 * g.r * g.b)
        } else {
            ((t.a0 * g.r + t.r0) * g.b, (t.a0 * g.r + end_row) * g.b)
        };
        let mut t0 = s;
        while t0 < e {
            let n = chunk.min(e - t0);
            eval(w, t0, n, &mut |ri, v| match &mut accs[ri] {
                A::Row(a) => a.feed(g, &t, ints[ri], v, t0),
                A::Lane(a) => a.feed(g, &t, end_row, v, t0),
            })?;
            t0 += n;
        }
        Ok(accs
            .into_iter()
            .map(|a| match a {
                A::Row(a) => a.out,
                A::Lane(a) => a.out,
            })
            .collect())
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
        copy(Src::of(&out, 0, n), unsafe {
            outs[r.output as usize].dst(0, n)
        });
    }
}
