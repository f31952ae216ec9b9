//! Scatter on the CPU: every index checked first (the first one out of range fails the program),
//! then data copied and the sources applied in source order, so the last duplicate wins
//! (replace). Rows of data (the axes before `axis`) never share a target and run in parallel.
//! `scatter_add` accumulates floats in f64; a row with many more sources than targets is cut
//! into at most 16 fixed chunks of sources, each adding into its own partial row in the element
//! type, and the partials are added onto data in f64 in chunk order: the result does not depend
//! on thread timing.

use super::{Geom, Kind, out_of_range, parts};
use crate::error::Error;
use crate::intrinsics::cpu::exec_error;
use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;
use rayon::prelude::*;

/// An index element: its position along the axis (`usize::MAX` for a negative i32).
trait Idx: Copy + Send + Sync + std::fmt::Display {
    fn at(self) -> usize;
}
impl Idx for i32 {
    #[inline]
    fn at(self) -> usize {
        if self < 0 { usize::MAX } else { self as usize }
    }
}
impl Idx for u32 {
    #[inline]
    fn at(self) -> usize {
        self as usize
    }
}

/// An element `scatter_add` accumulates: `W` the wide sum (f64 for floats, wrapping integers),
/// `P` a chunk's partial sums (the element type itself: an f32 partial row takes half the cache
/// of an f64 one, which made the chunked path twice as fast).
trait Acc: Copy + Send + Sync {
    type W: Copy + Send + Sync;
    type P: Copy + Send + Sync;
    /// The empty partial sum: `-0.0` for floats (the identity of `+`, so a target no source of
    /// a chunk names keeps its data's sign of zero), 0 for integers.
    const ZERO: Self::P;
    fn wide(self) -> Self::W;
    fn part(self) -> Self::P;
    fn add(a: Self::W, b: Self::W) -> Self::W;
    fn add_part(a: Self::P, b: Self::P) -> Self::P;
    fn widen_part(p: Self::P) -> Self::W;
    fn narrow(a: Self::W) -> Self;
}
macro_rules! acc {
    ($t:ty, $w:ty, $zero:expr, $add:expr) => {
        impl Acc for $t {
            type W = $w;
            type P = $t;
            const ZERO: $t = $zero;
            fn wide(self) -> $w {
                self as $w
            }
            fn part(self) -> $t {
                self
            }
            fn add(a: $w, b: $w) -> $w {
                $add(a, b)
            }
            fn add_part(a: $t, b: $t) -> $t {
                $add(a as $w, b as $w) as $t
            }
            fn widen_part(p: $t) -> $w {
                p as $w
            }
            fn narrow(a: $w) -> $t {
                a as $t
            }
        }
    };
}
acc!(f32, f64, -0.0, |a: f64, b: f64| a + b);
acc!(f64, f64, -0.0, |a: f64, b: f64| a + b);
acc!(i32, i32, 0, |a: i32, b: i32| a.wrapping_add(b));
acc!(u32, u32, 0, |a: u32, b: u32| a.wrapping_add(b));

/// Most source chunks one row of `scatter_add` is cut into (fixed, so results do not depend on
/// the machine).
const MAX_CHUNKS: usize = 16;
/// Fewest sources a row needs before it is cut into chunks.
const CHUNK_MIN: usize = 1 << 15;
/// Index elements checked in parallel past this many.
const PARALLEL_CHECK: usize = 1 << 16;

pub fn run(call: &IntrinsicCall, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    let (kind, axis) = parts(&call.op);
    let g = Geom::of(call);
    match inputs[1] {
        TypedVec::I32(idx) => typed(kind, axis, &g, idx, inputs, out),
        TypedVec::U32(idx) => typed(kind, axis, &g, idx, inputs, out),
        _ => Err(exec_error(format!(
            "{} indices must be i32 or u32",
            call.op.name()
        ))),
    }
}

fn typed<I: Idx>(
    kind: Kind,
    axis: usize,
    g: &Geom,
    idx: &[I],
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> Result<(), Error> {
    let dim = g.dim;
    let bad = if idx.len() >= PARALLEL_CHECK {
        idx.par_chunks(PARALLEL_CHECK)
            .enumerate()
            .filter_map(|(c, part)| {
                let at = part.iter().position(|i| i.at() >= dim)?;
                Some(c * PARALLEL_CHECK + at)
            })
            .min()
    } else {
        idx.iter().position(|i| i.at() >= dim)
    };
    if let Some(pos) = bad {
        let shown = idx[pos].to_string();
        // With index traps on, a trap naming the position in the (flattened) index array.
        return Err(crate::debug::trap::report::index_fault(
            super::name_of(kind),
            out_of_range(kind, &shown, pos, axis, dim),
            pos,
            &[idx.len()],
            shown.parse().unwrap_or(f64::NAN),
        ));
    }
    macro_rules! replace {
        ($d:expr, $v:expr, $o:expr) => {
            replace(g, idx, $d, $v, $o)
        };
    }
    macro_rules! add {
        ($d:expr, $v:expr, $o:expr) => {
            add(g, idx, $d, $v, $o)
        };
    }
    match (kind, inputs[0], inputs[2], out) {
        (Kind::Add, TypedVec::F32(d), TypedVec::F32(v), TypedVec::F32(o)) => add!(d, v, o),
        (Kind::Add, TypedVec::F64(d), TypedVec::F64(v), TypedVec::F64(o)) => add!(d, v, o),
        (Kind::Add, TypedVec::I32(d), TypedVec::I32(v), TypedVec::I32(o)) => add!(d, v, o),
        (Kind::Add, TypedVec::U32(d), TypedVec::U32(v), TypedVec::U32(o)) => add!(d, v, o),
        (Kind::Add, ..) => unreachable!("scatter_add: unexpected element types"),
        (_, TypedVec::F32(d), TypedVec::F32(v), TypedVec::F32(o)) => replace!(d, v, o),
        (_, TypedVec::F64(d), TypedVec::F64(v), TypedVec::F64(o)) => replace!(d, v, o),
        (_, TypedVec::I32(d), TypedVec::I32(v), TypedVec::I32(o)) => replace!(d, v, o),
        (_, TypedVec::U32(d), TypedVec::U32(v), TypedVec::U32(o)) => replace!(d, v, o),
        (_, TypedVec::Bool(d), TypedVec::Bool(v), TypedVec::Bool(o)) => replace!(d, v, o),
        _ => unreachable!("scatter: data, values and output types differ"),
    }
    Ok(())
}

/// Runs `f(p, row)` for every row `p` of `out` (rows of `row_len` elements), in parallel when
/// there are several rows with work in them.
fn rows<T: Send>(out: &mut [T], row_len: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if row_len == 0 {
        return;
    }
    if out.len() / row_len > 1 && work >= 1 << 12 {
        out.par_chunks_mut(row_len)
            .enumerate()
            .for_each(|(p, r)| f(p, r));
    } else {
        out.chunks_mut(row_len)
            .enumerate()
            .for_each(|(p, r)| f(p, r));
    }
}

/// The sources of row `p` in order, as (source position, index element position, column).
fn row_sources(g: &Geom, p: usize, mut f: impl FnMut(usize, usize, usize)) {
    let post = g.post;
    for j in 0..g.ni {
        for q in 0..post {
            let s = (p * g.ni + j) * post + q;
            f(s, if g.along { s } else { j }, q);
        }
    }
}

fn replace<T: Copy + Send + Sync, I: Idx>(
    g: &Geom,
    idx: &[I],
    data: &[T],
    vals: &[T],
    out: &mut [T],
) {
    out.copy_from_slice(data);
    let post = g.post;
    rows(out, g.dim * post, g.n_src(), |p, row| {
        row_sources(g, p, |s, ip, q| row[idx[ip].at() * post + q] = vals[s]);
    });
}

fn add<T: Acc, I: Idx>(g: &Geom, idx: &[I], data: &[T], vals: &[T], out: &mut [T]) {
    let post = g.post;
    let row_len = g.dim * post;
    let row_src = g.ni * post;
    let chunks = (row_src / (4 * row_len.max(1))).clamp(1, MAX_CHUNKS);
    if chunks == 1 || row_src < CHUNK_MIN {
        // Each row in source order, rows in parallel.
        rows(out, row_len, g.n_src(), |p, row| {
            let base = p * row_len;
            let mut acc: Vec<T::W> = data[base..base + row_len]
                .iter()
                .map(|x| x.wide())
                .collect();
            row_sources(g, p, |s, ip, q| {
                let t = idx[ip].at() * post + q;
                acc[t] = T::add(acc[t], vals[s].wide());
            });
            for (o, a) in row.iter_mut().zip(acc) {
                *o = T::narrow(a);
            }
        });
        return;
    }
    // Few long rows: fixed chunks of each row's sources add into partial rows in parallel,
    // then the partials are added onto data in chunk order.
    // Chunks of whole index positions `j` (each `post` sources).
    let per = g.ni.div_ceil(chunks);
    for p in 0..g.pre {
        let partials: Vec<Vec<T::P>> = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let mut acc = vec![T::ZERO; row_len];
                let (lo, hi) = (c * per, ((c + 1) * per).min(g.ni));
                if post == 1 && lo < hi {
                    // One value per index: walk both slices together.
                    let s0 = p * g.ni;
                    let ii = if g.along {
                        &idx[s0 + lo..s0 + hi]
                    } else {
                        &idx[lo..hi]
                    };
                    for (&i, &v) in ii.iter().zip(&vals[s0 + lo..s0 + hi]) {
                        let t = i.at();
                        acc[t] = T::add_part(acc[t], v.part());
                    }
                    return acc;
                }
                for j in lo..hi {
                    let s0 = (p * g.ni + j) * post;
                    if g.along {
                        for q in 0..post {
                            let t = idx[s0 + q].at() * post + q;
                            acc[t] = T::add_part(acc[t], vals[s0 + q].part());
                        }
                    } else {
                        // One index for the `post` sources: a row of the target.
                        let t = idx[j].at() * post;
                        for (a, v) in acc[t..t + post].iter_mut().zip(&vals[s0..s0 + post]) {
                            *a = T::add_part(*a, v.part());
                        }
                    }
                }
                acc
            })
            .collect();
        let base = p * row_len;
        out[base..base + row_len]
            .par_iter_mut()
            .enumerate()
            .with_min_len(1 << 12)
            .for_each(|(t, o)| {
                let a = partials.iter().fold(data[base + t].wide(), |a, part| {
                    T::add(a, T::widen_part(part[t]))
                });
                *o = T::narrow(a);
            });
    }
}
