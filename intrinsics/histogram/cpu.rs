//! Counting on the CPU: the input cut into fixed chunks counted in parallel, each into its own
//! counts, added together at the end (counts are integers: the order does not matter).
//! `bincount` checks every value first (the first one out of range fails the program, or with
//! index traps on is an index trap naming its position, `debug::trap::report::index_fault`);
//! `histogram` bins each value as the GPU kernels do (a guess settled by comparisons with the
//! edges, see `mod.rs`).

use crate::error::Error;
use crate::intrinsics::cpu::exec_error;
use crate::ir::TypedVec;
use rayon::prelude::*;

/// Elements one chunk counts at least.
const CHUNK: usize = 1 << 16;
/// Most chunks (and so per-chunk count arrays) of one call.
const MAX_CHUNKS: usize = 64;

/// The message of a `bincount` value out of range (the CPU entry and the reference say the same).
pub(crate) fn bincount_range(shown: &str, pos: usize, length: usize) -> String {
    format!("bincount value {shown} (at position {pos}) is out of range for length {length}")
}

/// Counts `bin(x)` (where it is `Some`) over `xs` into `counts`, in parallel over chunks.
fn count<T: Copy + Sync>(xs: &[T], counts: &mut [u32], bin: impl Fn(T) -> Option<usize> + Sync) {
    let bins = counts.len();
    let chunks = (xs.len() / CHUNK.max(bins)).clamp(1, MAX_CHUNKS);
    let per = xs.len().div_ceil(chunks).max(1);
    let parts: Vec<Vec<u32>> = xs
        .par_chunks(per)
        .map(|c| {
            let mut k = vec![0u32; bins];
            for &x in c {
                if let Some(b) = bin(x) {
                    k[b] = k[b].wrapping_add(1);
                }
            }
            k
        })
        .collect();
    counts.iter_mut().for_each(|c| *c = 0);
    for p in parts {
        for (c, k) in counts.iter_mut().zip(p) {
            *c = c.wrapping_add(k);
        }
    }
}

/// Counts the values of `x` (of shape `shape`) below `length` into `out`; the first value out
/// of range (negative, or not below `length`) is an index fault instead.
pub fn bincount(
    length: usize,
    x: &TypedVec,
    shape: &[usize],
    out: &mut TypedVec,
) -> Result<(), Error> {
    let TypedVec::U32(counts) = out else {
        unreachable!("bincount writes u32 counts")
    };
    macro_rules! go {
        ($v:expr, $at:expr) => {{
            let at = $at;
            // Chunks in parallel, the first bad position of each (rayon's `position_first`
            // took 25 ns an element).
            let bad = if $v.len() >= CHUNK {
                $v.par_chunks(CHUNK)
                    .enumerate()
                    .filter_map(|(c, part)| {
                        let p = part.iter().position(|&v| at(v) >= length)?;
                        Some(c * CHUNK + p)
                    })
                    .min()
            } else {
                $v.iter().position(|&v| at(v) >= length)
            };
            if let Some(pos) = bad {
                let shown = $v[pos].to_string();
                // With index traps on, a trap naming the position in the (flattened) input.
                return Err(crate::debug::trap::report::index_fault(
                    "bincount",
                    bincount_range(&shown, pos, length),
                    pos,
                    shape,
                    shown.parse().unwrap_or(f64::NAN),
                ));
            }
            count($v, counts, |v| Some(at(v)));
        }};
    }
    match x {
        TypedVec::I32(v) => go!(v, |v: i32| if v < 0 { usize::MAX } else { v as usize }),
        TypedVec::U32(v) => go!(v, |v: u32| v as usize),
        other => {
            return Err(exec_error(format!(
                "bincount counts i32 or u32 values, not {}",
                other.dtype()
            )));
        }
    }
    Ok(())
}

/// A float the histogram bins.
trait Value: Copy + Sync + PartialOrd {
    /// `(x - e0) * scale` as a bin below `bins` (clamped; NaN gives 0), in the element type.
    fn guess(self, e0: Self, scale: Self, bins: usize) -> usize;
    /// `bins / (e1 - e0)` in the element type.
    fn scale(e0: Self, e1: Self, bins: usize) -> Self;
}
macro_rules! value {
    ($t:ty) => {
        impl Value for $t {
            #[inline]
            fn guess(self, e0: $t, scale: $t, bins: usize) -> usize {
                let g = (self - e0) * scale;
                if g >= bins as $t {
                    bins - 1
                } else if g > 0.0 {
                    g as usize
                } else {
                    0
                }
            }
            fn scale(e0: $t, e1: $t, bins: usize) -> $t {
                bins as $t / (e1 - e0)
            }
        }
    };
}
value!(f32);
value!(f64);

/// The bin of `x` (see `mod.rs`): a guess from the bin width, settled by the edges.
#[inline]
fn bin_of<T: Value>(x: T, edges: &[T], scale: T) -> Option<usize> {
    let bins = edges.len() - 1;
    if !(x >= edges[0] && x <= edges[bins]) {
        return None;
    }
    let mut b = x.guess(edges[0], scale, bins);
    if x < edges[b] || (b + 1 < bins && x >= edges[b + 1]) {
        let (mut lo, mut hi) = (0, bins - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if edges[mid] <= x {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        b = lo;
    }
    Some(b)
}

pub fn histogram(x: &TypedVec, edges: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    let TypedVec::U32(counts) = out else {
        unreachable!("histogram writes u32 counts")
    };
    macro_rules! go {
        ($x:expr, $e:expr) => {{
            let bins = $e.len() - 1;
            let scale = Value::scale($e[0], $e[bins], bins);
            count($x, counts, |v| bin_of(v, $e, scale));
        }};
    }
    match (x, edges) {
        (TypedVec::F32(x), TypedVec::F32(e)) => go!(x, e),
        (TypedVec::F64(x), TypedVec::F64(e)) => go!(x, e),
        _ => {
            return Err(exec_error(format!(
                "histogram of {} values with {} edges",
                x.dtype(),
                edges.dtype()
            )));
        }
    }
    Ok(())
}
