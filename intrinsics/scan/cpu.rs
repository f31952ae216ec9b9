//! Scans on the CPU, with rayon. A line is the elements of one scan (`n` of them, `post` apart).
//!
//! - **Contiguous axis, short rows** (`post == 1`, `n` below [`LONG_ROW`]): rows in parallel
//!   (tasks of at least [`TASK`] elements); inside a task [`LANES`] rows are scanned in one loop,
//!   so the core overlaps their dependency chains.
//! - **Contiguous axis, long rows**: fixed chunks of [`CHUNK`] elements of every row, in groups
//!   of a few per thread: the group's chunk totals in parallel, its carries in order, then its
//!   chunks rescanned from their carries in parallel while the group is in the caches (the input
//!   is read from memory about once; see [`long_rows`]).
//! - **Other axes** (`post > 1`): a task walks the axis for up to [`COLS`] neighbouring lines at
//!   once (row `k` of the task combined with row `k - 1`: contiguous, vectorisable); with few such
//!   tasks the axis is cut into blocks of rows and scanned in the same two passes.
//!
//! Chunk and block sizes depend on the shape only, so results do not depend on the number of
//! threads. Float sums and products accumulate in f64 (rounded once per output); integer sums and
//! products wrap; max and min propagate NaN and keep the earlier of equal values, as the
//! reference does.

use super::Rows;
use crate::error::Error;
use crate::ir::{ReduceOp, TypedVec};
use crate::primitives::cpu::{fmax_nan, fmin_nan};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Scans of at most this many elements run on the calling thread alone.
const SERIAL: usize = 1 << 15;
/// Elements a parallel task takes at least.
const TASK: usize = 1 << 15;
/// Elements of one chunk of a long row (the unit of the two-pass scan).
pub const CHUNK: usize = 1 << 14;
/// Rows at least this long are scanned in chunks.
pub const LONG_ROW: usize = 4 * CHUNK;
/// Dependency chains one loop advances together.
const LANES: usize = 4;
/// Neighbouring lines one column task walks together.
const COLS: usize = 1024;
/// Column tasks below which a column scan is cut along the axis too.
const FEW_TASKS: usize = 16;

/// One scan operation on element type `T` with accumulator type `A`.
trait Op: Copy + Send + Sync {
    type T: Copy + Send + Sync;
    type A: Copy + Send + Sync;
    /// Whether totals must combine in element order (float max/min keep the earlier of equal
    /// values, so `-0.0` and `0.0` are told apart as the reference does).
    const ORDERED: bool;
    fn lift(self, x: Self::T) -> Self::A;
    fn comb(self, a: Self::A, b: Self::A) -> Self::A;
    fn down(self, a: Self::A) -> Self::T;
}

/// An [`Op`] made of three functions.
struct F<T, A, L, C, D, const ORD: bool> {
    lift: L,
    comb: C,
    down: D,
    _t: PhantomData<fn(T) -> A>,
}

impl<T, A, L: Copy, C: Copy, D: Copy, const ORD: bool> Clone for F<T, A, L, C, D, ORD> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, A, L: Copy, C: Copy, D: Copy, const ORD: bool> Copy for F<T, A, L, C, D, ORD> {}

impl<T, A, L, C, D, const ORD: bool> Op for F<T, A, L, C, D, ORD>
where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync,
    L: Fn(T) -> A + Copy + Send + Sync,
    C: Fn(A, A) -> A + Copy + Send + Sync,
    D: Fn(A) -> T + Copy + Send + Sync,
{
    type T = T;
    type A = A;
    const ORDERED: bool = ORD;
    #[inline(always)]
    fn lift(self, x: T) -> A {
        (self.lift)(x)
    }
    #[inline(always)]
    fn comb(self, a: A, b: A) -> A {
        (self.comb)(a, b)
    }
    #[inline(always)]
    fn down(self, a: A) -> T {
        (self.down)(a)
    }
}

fn op<T, A, const ORD: bool>(
    lift: impl Fn(T) -> A + Copy + Send + Sync,
    comb: impl Fn(A, A) -> A + Copy + Send + Sync,
    down: impl Fn(A) -> T + Copy + Send + Sync,
) -> impl Op<T = T, A = A>
where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync,
{
    F::<T, A, _, _, _, ORD> {
        lift,
        comb,
        down,
        _t: PhantomData,
    }
}

/// Runs the scan `rop` over geometry `g` of `input` into `out` (same type and length).
pub fn run(rop: ReduceOp, g: Rows, input: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    if g.is_empty() {
        return Ok(());
    }
    macro_rules! float {
        ($x:expr, $y:expr, $t:ty) => {
            match rop {
                ReduceOp::Sum => scan(
                    op::<$t, f64, false>(|x| x as f64, |a, b| a + b, |a| a as $t),
                    g,
                    $x,
                    $y,
                ),
                ReduceOp::Prod => scan(
                    op::<$t, f64, false>(|x| x as f64, |a, b| a * b, |a| a as $t),
                    g,
                    $x,
                    $y,
                ),
                ReduceOp::Max => scan(op::<$t, $t, true>(|x| x, fmax_nan, |a| a), g, $x, $y),
                _ => scan(op::<$t, $t, true>(|x| x, fmin_nan, |a| a), g, $x, $y),
            }
        };
    }
    macro_rules! int {
        ($x:expr, $y:expr, $t:ty) => {
            match rop {
                ReduceOp::Sum => scan(
                    op::<$t, u32, false>(|x| x as u32, u32::wrapping_add, |a| a as $t),
                    g,
                    $x,
                    $y,
                ),
                ReduceOp::Prod => scan(
                    op::<$t, u32, false>(|x| x as u32, u32::wrapping_mul, |a| a as $t),
                    g,
                    $x,
                    $y,
                ),
                ReduceOp::Max => scan(op::<$t, $t, false>(|x| x, <$t>::max, |a| a), g, $x, $y),
                _ => scan(op::<$t, $t, false>(|x| x, <$t>::min, |a| a), g, $x, $y),
            }
        };
    }
    match (input, out) {
        (TypedVec::F32(x), TypedVec::F32(y)) => float!(x, y, f32),
        (TypedVec::F64(x), TypedVec::F64(y)) => float!(x, y, f64),
        (TypedVec::I32(x), TypedVec::I32(y)) => int!(x, y, i32),
        (TypedVec::U32(x), TypedVec::U32(y)) => int!(x, y, u32),
        _ => {
            return Err(crate::intrinsics::cpu::exec_error(format!(
                "{} takes f32, f64, i32 or u32 arrays",
                super::scan_name(rop)
            )));
        }
    }
    Ok(())
}

fn scan<O: Op>(o: O, g: Rows, x: &[O::T], y: &mut [O::T]) {
    let (x, y) = (&x[..g.numel()], &mut y[..g.numel()]);
    if g.post == 1 && g.dim >= LONG_ROW {
        long_rows(o, g, x, y);
    } else if g.post == 1 {
        let rows = (TASK / g.dim).max(1).next_multiple_of(LANES);
        if g.numel() <= SERIAL {
            rows_of(o, g.dim, x, y);
        } else {
            x.par_chunks(rows * g.dim)
                .zip(y.par_chunks_mut(rows * g.dim))
                .for_each(|(x, y)| rows_of(o, g.dim, x, y));
        }
    } else {
        columns(o, g, x, y);
    }
}

/// Scans one line `x` into `y` from `carry` (from its first element when `None`).
#[inline(always)]
fn scan_one<O: Op>(o: O, x: &[O::T], y: &mut [O::T], carry: Option<O::A>) {
    let mut acc = match carry {
        Some(c) => c,
        None => {
            let Some(&x0) = x.first() else { return };
            let a = o.lift(x0);
            y[0] = o.down(a);
            return scan_one(o, &x[1..], &mut y[1..], Some(a));
        }
    };
    for (yv, &xv) in y.iter_mut().zip(x) {
        acc = o.comb(acc, o.lift(xv));
        *yv = o.down(acc);
    }
}

/// Scans [`LANES`] lines of equal length together, each from its carry (or its first element).
#[inline(always)]
fn scan_lanes<O: Op>(
    o: O,
    x: [&[O::T]; LANES],
    y: [&mut [O::T]; LANES],
    carry: [Option<O::A>; LANES],
) {
    let len = x[0].len();
    if len == 0 {
        return;
    }
    let [y0, y1, y2, y3] = y;
    let ys = [
        &mut y0[..len],
        &mut y1[..len],
        &mut y2[..len],
        &mut y3[..len],
    ];
    let xs = x.map(|x| &x[..len]);
    let mut acc = [0; LANES].map(|_| o.lift(xs[0][0]));
    for l in 0..LANES {
        acc[l] = match carry[l] {
            Some(c) => o.comb(c, o.lift(xs[l][0])),
            None => o.lift(xs[l][0]),
        };
    }
    let [y0, y1, y2, y3] = ys;
    y0[0] = o.down(acc[0]);
    y1[0] = o.down(acc[1]);
    y2[0] = o.down(acc[2]);
    y3[0] = o.down(acc[3]);
    let [x0, x1, x2, x3] = xs;
    let it = x0[1..]
        .iter()
        .zip(&x1[1..])
        .zip(&x2[1..])
        .zip(&x3[1..])
        .zip(y0[1..].iter_mut())
        .zip(y1[1..].iter_mut())
        .zip(y2[1..].iter_mut())
        .zip(y3[1..].iter_mut());
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    for (((((((&v0, &v1), &v2), &v3), w0), w1), w2), w3) in it {
        a0 = o.comb(a0, o.lift(v0));
        a1 = o.comb(a1, o.lift(v1));
        a2 = o.comb(a2, o.lift(v2));
        a3 = o.comb(a3, o.lift(v3));
        *w0 = o.down(a0);
        *w1 = o.down(a1);
        *w2 = o.down(a2);
        *w3 = o.down(a3);
    }
}

/// Whole rows of `n` elements, [`LANES`] at a time.
fn rows_of<O: Op>(o: O, n: usize, x: &[O::T], y: &mut [O::T]) {
    let mut xs = x.chunks_exact(LANES * n);
    let mut ys = y.chunks_exact_mut(LANES * n);
    for (xg, yg) in (&mut xs).zip(&mut ys) {
        let (x0, r) = xg.split_at(n);
        let (x1, r) = r.split_at(n);
        let (x2, x3) = r.split_at(n);
        let (y0, r) = yg.split_at_mut(n);
        let (y1, r) = r.split_at_mut(n);
        let (y2, y3) = r.split_at_mut(n);
        scan_lanes(o, [x0, x1, x2, x3], [y0, y1, y2, y3], [None; LANES]);
    }
    for (xr, yr) in xs
        .remainder()
        .chunks(n)
        .zip(ys.into_remainder().chunks_mut(n))
    {
        scan_one(o, xr, yr, None);
    }
}

/// The combination of all of `x` (not empty), in eight interleaved lanes unless the op needs
/// element order.
fn total<O: Op>(o: O, x: &[O::T]) -> O::A {
    let first = o.lift(x[0]);
    if O::ORDERED || x.len() < 16 {
        return x[1..].iter().fold(first, |a, &v| o.comb(a, o.lift(v)));
    }
    let mut lanes = [first; 8];
    for (l, &v) in lanes.iter_mut().zip(&x[..8]) {
        *l = o.lift(v);
    }
    let mut chunks = x[8..].chunks_exact(8);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = o.comb(*l, o.lift(v));
        }
    }
    let t = lanes[1..].iter().fold(lanes[0], |a, &l| o.comb(a, l));
    chunks
        .remainder()
        .iter()
        .fold(t, |a, &v| o.comb(a, o.lift(v)))
}

/// Input bytes of one group of [`long_rows`]: small enough to stay in the last-level cache
/// between the group's two passes, large enough that the two fork-joins per group cost little.
const GROUP_BYTES: usize = 8 << 20;

/// Rows of at least [`LONG_ROW`] elements: fixed chunks of [`CHUNK`] (every row cut alike),
/// taken in groups of [`GROUP_BYTES`] (at least four chunks per thread). Per group: the chunks' totals in parallel
/// (each in [`LANES`] quarters), then the carries in order (a row's running prefix goes on from
/// group to group), then every chunk rescanned from its carry in parallel, its quarters in one
/// loop, while the group's input is still in the caches: the input is read from memory about
/// once. The carries combine the chunk totals in order, so the result depends on the shape
/// only, not on the threads or the groups.
fn long_rows<O: Op>(o: O, g: Rows, x: &[O::T], y: &mut [O::T]) {
    let n = g.dim;
    let per_row = n.div_ceil(CHUNK);
    let chunks = g.pre * per_row;
    let range = |c: usize| {
        let (r, j) = (c / per_row, c % per_row);
        r * n + j * CHUNK..r * n + n.min((j + 1) * CHUNK)
    };
    let quarter = |c: usize| range(c).len().div_ceil(LANES);
    let out = Out(y.as_mut_ptr());
    let group =
        (GROUP_BYTES / (CHUNK * std::mem::size_of::<O::T>())).max(4 * rayon::current_num_threads());
    // The running prefix of the current row before the current chunk.
    let mut running: Option<O::A> = None;
    for first in (0..chunks).step_by(group) {
        let last = chunks.min(first + group);
        let totals: Vec<[Option<O::A>; LANES]> = (first..last)
            .into_par_iter()
            .map(|c| {
                let mut t = [None; LANES];
                for (l, p) in x[range(c)].chunks(quarter(c)).enumerate() {
                    t[l] = Some(total(o, p));
                }
                t
            })
            .collect();
        let mut into: Vec<[Option<O::A>; LANES]> = Vec::with_capacity(totals.len());
        for (c, t) in (first..last).zip(&totals) {
            if c % per_row == 0 {
                running = None;
            }
            let mut carry = [None; LANES];
            for (l, t) in t.iter().enumerate() {
                carry[l] = running;
                if let Some(t) = *t {
                    running = Some(running.map_or(t, |a| o.comb(a, t)));
                }
            }
            into.push(carry);
        }
        (first..last).into_par_iter().for_each(|c| {
            let r = range(c);
            let q = quarter(c);
            let xc = &x[r.clone()];
            // SAFETY: the elements of chunk c belong to this task alone, within the output.
            let yc = unsafe { std::slice::from_raw_parts_mut(out.ptr().add(r.start), r.len()) };
            let carry = into[c - first];
            if xc.len() == LANES * q {
                let (x0, rest) = xc.split_at(q);
                let (x1, rest) = rest.split_at(q);
                let (x2, x3) = rest.split_at(q);
                let (y0, rest) = yc.split_at_mut(q);
                let (y1, rest) = rest.split_at_mut(q);
                let (y2, y3) = rest.split_at_mut(q);
                scan_lanes(o, [x0, x1, x2, x3], [y0, y1, y2, y3], carry);
            } else {
                for ((xp, yp), &cy) in xc.chunks(q).zip(yc.chunks_mut(q)).zip(&carry) {
                    scan_one(o, xp, yp, cy);
                }
            }
        });
    }
}

/// The output as a pointer that parallel tasks writing disjoint elements share.
#[derive(Clone, Copy)]
struct Out<T>(*mut T);
// SAFETY: tasks write disjoint elements of one live output slice and the scope outlives them.
unsafe impl<T: Send> Send for Out<T> {}
unsafe impl<T: Send> Sync for Out<T> {}

impl<T> Out<T> {
    /// The pointer (a method, so closures capture the whole `Out`, which is `Sync`).
    fn ptr(&self) -> *mut T {
        self.0
    }
}

/// Axes other than the last: tasks over (line `p`, columns `q0..q1`, rows `k0..k1`), each row of
/// a task combined with the task's running row (or its carry).
fn columns<O: Op>(o: O, g: Rows, x: &[O::T], y: &mut [O::T]) {
    let (n, post) = (g.dim, g.post);
    let width = COLS.min(post);
    let strips = post.div_ceil(width);
    let tasks = g.pre * strips;
    // Rows per block along the axis: the whole axis unless there are few tasks.
    let rows = if tasks >= FEW_TASKS || g.numel() <= SERIAL {
        n
    } else {
        (TASK / width).max(16)
    };
    let blocks = n.div_ceil(rows);
    let out = Out(y.as_mut_ptr());
    let len = g.numel();
    // Scans block `b` of strip `s` of slab `p` from `carry` (one value per column); returns the
    // block's last row (its running values).
    let block = |p: usize, s: usize, b: usize, carry: Option<&[O::A]>, write: bool| {
        let (q0, q1) = (s * width, post.min((s + 1) * width));
        let (k0, k1) = (b * rows, n.min((b + 1) * rows));
        let at = |k: usize| (p * n + k) * post;
        let first = &x[at(k0) + q0..at(k0) + q1];
        let mut acc: Vec<O::A> = match carry {
            Some(c) => c
                .iter()
                .zip(first)
                .map(|(&a, &v)| o.comb(a, o.lift(v)))
                .collect(),
            None => first.iter().map(|&v| o.lift(v)).collect(),
        };
        let emit = |k: usize, acc: &[O::A]| {
            if write {
                debug_assert!(at(k) + q1 <= len);
                // SAFETY: columns q0..q1 of row k of slab p belong to this task alone, within
                // the output's length.
                let yr =
                    unsafe { std::slice::from_raw_parts_mut(out.ptr().add(at(k) + q0), q1 - q0) };
                for (w, &a) in yr.iter_mut().zip(acc) {
                    *w = o.down(a);
                }
            }
        };
        emit(k0, &acc);
        for k in k0 + 1..k1 {
            let xr = &x[at(k) + q0..at(k) + q1];
            for (a, &v) in acc.iter_mut().zip(xr) {
                *a = o.comb(*a, o.lift(v));
            }
            emit(k, &acc);
        }
        acc
    };
    let serial = len <= SERIAL;
    if blocks == 1 {
        let run = |t: usize| {
            block(t / strips, t % strips, 0, None, true);
        };
        if serial {
            (0..tasks).for_each(run);
        } else {
            (0..tasks).into_par_iter().for_each(run);
        }
        return;
    }
    // Two passes: every block's totals (its last running row), each strip's carries in order,
    // then every block again from its carry.
    let totals: Vec<Vec<O::A>> = (0..tasks * blocks)
        .into_par_iter()
        .map(|i| {
            let (t, b) = (i / blocks, i % blocks);
            block(t / strips, t % strips, b, None, false)
        })
        .collect();
    let mut carries: Vec<Option<Vec<O::A>>> = vec![None; tasks * blocks];
    for t in 0..tasks {
        let mut acc: Option<Vec<O::A>> = None;
        for b in 0..blocks {
            let i = t * blocks + b;
            carries[i] = acc.clone();
            acc = Some(match acc {
                None => totals[i].clone(),
                Some(a) => a
                    .iter()
                    .zip(&totals[i])
                    .map(|(&a, &v)| o.comb(a, v))
                    .collect(),
            });
        }
    }
    (0..tasks * blocks).into_par_iter().for_each(|i| {
        let (t, b) = (i / blocks, i % blocks);
        block(t / strips, t % strips, b, carries[i].as_deref(), true);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long rows give the same bits on one thread and on several (the chunks and their carries
    /// do not depend on the threads or their groups), close to an f64 loop.
    #[test]
    fn long_rows_do_not_depend_on_the_threads() {
        let g = Rows {
            pre: 3,
            dim: LONG_ROW + 3 * CHUNK / 2 + 5,
            post: 1,
        };
        let x = TypedVec::F32(
            (0..g.numel())
                .map(|i| ((i as u32).wrapping_mul(2654435761) >> 8) as f32 * 1e-6 - 8.0)
                .collect(),
        );
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut y = TypedVec::F32(vec![0.0; g.numel()]);
            pool.install(|| run(ReduceOp::Sum, g, &x, &mut y)).unwrap();
            y
        };
        let one = on(1);
        assert_eq!(one, on(3));
        let (TypedVec::F32(x), TypedVec::F32(y)) = (&x, &one) else {
            unreachable!()
        };
        let mut acc = 0.0f64;
        for (i, (&v, &w)) in x.iter().zip(y).enumerate() {
            acc = if i % g.dim == 0 {
                v as f64
            } else {
                acc + v as f64
            };
            let allowed = 1e-7 * (i % g.dim + 1) as f64 * 9.0;
            assert!((w as f64 - acc).abs() <= allowed, "[{i}] {w} vs {acc}");
        }
    }
}
