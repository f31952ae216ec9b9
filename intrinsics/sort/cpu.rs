//! The sorting intrinsics on the CPU, with rayon. Sorts compare canonical keys ([`SortKey`]: the
//! element's bits mapped to an unsigned integer in the order of `super::canonical_cmp`, inverted
//! when descending). A row of [`PAR_MIN`] elements or more, when there are fewer rows than
//! threads, takes a parallel LSD radix sort ([`radix`]: 8-bit digits, per-chunk digit
//! histograms, an offset scan, a stable scatter per chunk into the other buffer; digits that are
//! the same for every element are skipped); other rows are sorted one per task in parallel,
//! each with a sequential radix sort, or with the standard library's stable sort when shorter
//! than [`RADIX_MIN`]. A value sort moves the elements themselves (so -0.0 and +0.0, and NaN
//! payloads, keep their input order); argsort moves (key, position) pairs, packed in one `u64`
//! for 32-bit keys. Rows along an inner axis are copied out to contiguous rows and back.

use super::{Rows, Take, search};
use crate::error::Error;
use crate::intrinsics::cpu::exec_error;
use crate::ir::TypedVec;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Rows at least this long take the parallel radix sort when there are fewer rows than threads.
const PAR_MIN: usize = 1 << 16;
/// Rows shorter than this take the standard library's stable sort instead of a radix sort.
const RADIX_MIN: usize = 512;
/// Elements per chunk of the parallel radix sort (at least; at most 4 chunks per thread).
const CHUNK_MIN: usize = 1 << 14;

/// An element type the sorts order, by a canonical key.
pub trait SortKey: Copy + Default + Send + Sync + 'static {
    /// Bytes of the key (8-bit radix passes).
    const BYTES: u32;
    /// The key: unsigned, in the order of `canonical_cmp` (NaN largest, -0.0 = +0.0).
    fn key(self) -> u64;
}

impl SortKey for f32 {
    const BYTES: u32 = 4;
    fn key(self) -> u64 {
        // NaN as the largest positive NaN and -0.0 as +0.0 (rare, predictable branches), then
        // negative bits inverted and positive ones with the sign bit set, without a branch.
        let mut b = self.to_bits();
        if b & 0x7fff_ffff > 0x7f80_0000 {
            b = 0x7fff_ffff;
        } else if b == 0x8000_0000 {
            b = 0;
        }
        (b ^ (((b as i32) >> 31) as u32 | 0x8000_0000)) as u64
    }
}

impl SortKey for f64 {
    const BYTES: u32 = 8;
    fn key(self) -> u64 {
        let mut b = self.to_bits();
        if b & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000 {
            b = 0x7fff_ffff_ffff_ffff;
        } else if b == 0x8000_0000_0000_0000 {
            b = 0;
        }
        b ^ (((b as i64) >> 63) as u64 | 0x8000_0000_0000_0000)
    }
}

impl SortKey for i32 {
    const BYTES: u32 = 4;
    fn key(self) -> u64 {
        (self as u32 ^ 0x8000_0000) as u64
    }
}

impl SortKey for u32 {
    const BYTES: u32 = 4;
    fn key(self) -> u64 {
        self as u64
    }
}

/// The mask a key is XORed with: all key bits when descending.
fn mask<T: SortKey>(descending: bool) -> u64 {
    match (descending, T::BYTES) {
        (false, _) => 0,
        (true, 8) => u64::MAX,
        (true, _) => u32::MAX as u64,
    }
}

/// A pointer the scatter's tasks share; each writes its own positions.
struct Shared<I>(*mut I);
// SAFETY: the tasks holding it write disjoint elements (see `radix`).
unsafe impl<I: Send> Send for Shared<I> {}
unsafe impl<I: Send> Sync for Shared<I> {}
impl<I> Shared<I> {
    fn get(&self) -> *mut I {
        self.0
    }
}

/// `f(c)` for each of `chunks` chunks, in parallel when there are several.
fn per_chunk<R: Send>(chunks: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if chunks == 1 {
        vec![f(0)]
    } else {
        (0..chunks).into_par_iter().map(f).collect()
    }
}

/// Stable LSD radix sort of `src` by `key` (`bytes` bytes, 8-bit digits) into `out`, with `tmp`
/// (as long) as the other buffer; `parallel` splits each pass into chunks over rayon's threads.
fn radix<I, K>(src: &[I], out: &mut [I], tmp: &mut [I], bytes: u32, key: K, parallel: bool)
where
    I: Copy + Send + Sync,
    K: Fn(I) -> u64 + Sync + Send,
{
    let n = src.len();
    let chunks = if parallel {
        (n / CHUNK_MIN).clamp(1, 4 * rayon::current_num_threads())
    } else {
        1
    };
    let cs = n.div_ceil(chunks).max(1);
    let range = |c: usize| (c * cs).min(n)..((c + 1) * cs).min(n);
    // Every digit's counts per chunk of `src` in one read; a digit one value holds is skipped.
    let first: Vec<Vec<[u32; 256]>> = per_chunk(chunks, |c| {
        let mut h = vec![[0u32; 256]; bytes as usize];
        for &x in &src[range(c)] {
            let k = key(x);
            for (b, hb) in h.iter_mut().enumerate() {
                hb[((k >> (8 * b)) & 255) as usize] += 1;
            }
        }
        h
    });
    let passes: Vec<u32> = (0..bytes)
        .filter(|&b| {
            let mut total = [0usize; 256];
            for h in &first {
                for (t, &v) in total.iter_mut().zip(&h[b as usize]) {
                    *t += v as usize;
                }
            }
            !total.contains(&n)
        })
        .collect();
    if passes.is_empty() {
        out.copy_from_slice(src);
        return;
    }
    // The last pass writes `out`: with an even number of passes the first writes `tmp`.
    let mut into_out = passes.len() % 2 == 1;
    for (i, &b) in passes.iter().enumerate() {
        let shift = 8 * b;
        let digit = |x: I| ((key(x) >> shift) & 255) as usize;
        let (from, to): (&[I], &mut [I]) = match (i, into_out) {
            (0, true) => (src, &mut *out),
            (0, false) => (src, &mut *tmp),
            (_, true) => (&*tmp, &mut *out),
            (_, false) => (&*out, &mut *tmp),
        };
        let hists: Vec<[u32; 256]> = if i == 0 {
            first.iter().map(|h| h[b as usize]).collect()
        } else {
            per_chunk(chunks, |c| {
                let mut h = [0u32; 256];
                for &x in &from[range(c)] {
                    h[digit(x)] += 1;
                }
                h
            })
        };
        // Chunk c's first position for digit d: every smaller digit, then earlier chunks' d.
        let mut starts = vec![[0usize; 256]; chunks];
        let mut at = 0usize;
        for d in 0..256 {
            for (s, h) in starts.iter_mut().zip(&hists) {
                s[d] = at;
                at += h[d] as usize;
            }
        }
        let dst = Shared(to.as_mut_ptr());
        per_chunk(chunks, |c| {
            let mut next = starts[c];
            let p = dst.get();
            for &x in &from[range(c)] {
                let d = digit(x);
                // SAFETY: the positions of chunk c's digit d are next[d] .. the start of the
                // next chunk's (or digit's), a range no other chunk writes; all are below n.
                unsafe { *p.add(next[d]) = x };
                next[d] += 1;
            }
        });
        into_out = !into_out;
    }
}

/// Sorts each row of `src` (rows of `dim`, contiguous) into the same row of `dst` by `key`.
fn sort_rows<I, K>(src: &[I], dst: &mut [I], dim: usize, bytes: u32, key: K)
where
    I: Copy + Default + Send + Sync,
    K: Fn(I) -> u64 + Sync + Send + Copy,
{
    let rows = src.len() / dim;
    if dim >= PAR_MIN && rows < rayon::current_num_threads() {
        let mut tmp = vec![I::default(); dim];
        for (s, d) in src.chunks(dim).zip(dst.chunks_mut(dim)) {
            radix(s, d, &mut tmp, bytes, key, true);
        }
        return;
    }
    dst.par_chunks_mut(dim)
        .zip(src.par_chunks(dim))
        .for_each_init(Vec::new, |tmp, (d, s)| {
            if dim < RADIX_MIN {
                d.copy_from_slice(s);
                d.sort_by_key(|&x| key(x));
            } else {
                tmp.resize(dim, I::default());
                radix(s, d, tmp, bytes, key, false);
            }
        });
}

/// The rows of `src` along `r` as contiguous rows (row `p * post + q`, element `j`).
fn to_rows<T: Copy + Default + Send + Sync>(src: &[T], r: Rows) -> Vec<T> {
    let mut rows = vec![T::default(); src.len()];
    rows.par_chunks_mut(r.dim * r.post)
        .zip(src.par_chunks(r.dim * r.post))
        .for_each(|(d, s)| {
            for q in 0..r.post {
                for j in 0..r.dim {
                    d[q * r.dim + j] = s[j * r.post + q];
                }
            }
        });
    rows
}

/// Contiguous rows back to the layout of `r` (the inverse of [`to_rows`]), through `f`.
fn from_rows<I: Copy + Send + Sync, T: Send>(
    rows: &[I],
    out: &mut [T],
    r: Rows,
    f: impl Fn(I) -> T + Sync,
) {
    out.par_chunks_mut(r.dim * r.post)
        .zip(rows.par_chunks(r.dim * r.post))
        .for_each(|(d, s)| {
            for q in 0..r.post {
                for j in 0..r.dim {
                    d[j * r.post + q] = f(s[q * r.dim + j]);
                }
            }
        });
}

fn sort_typed<T: SortKey>(src: &[T], out: &mut [T], r: Rows, descending: bool) {
    if src.is_empty() {
        return;
    }
    let m = mask::<T>(descending);
    let key = move |x: T| x.key() ^ m;
    if r.post == 1 {
        sort_rows(src, out, r.dim, T::BYTES, key);
    } else {
        let rows = to_rows(src, r);
        let mut sorted = vec![T::default(); rows.len()];
        sort_rows(&rows, &mut sorted, r.dim, T::BYTES, key);
        from_rows(&sorted, out, r, |x| x);
    }
}

fn argsort_typed<T: SortKey>(src: &[T], out: &mut [u32], r: Rows, descending: bool) {
    if src.is_empty() {
        return;
    }
    let m = mask::<T>(descending);
    let rows = if r.post == 1 {
        std::borrow::Cow::Borrowed(src)
    } else {
        std::borrow::Cow::Owned(to_rows(src, r))
    };
    let dim = r.dim;
    macro_rules! go {
        ($item:expr, $key:expr, $pos:expr) => {{
            let items: Vec<_> = rows
                .par_iter()
                .enumerate()
                .map(|(i, &x)| $item(x, i % dim))
                .collect();
            let mut sorted = vec![Default::default(); items.len()];
            sort_rows(&items, &mut sorted, dim, T::BYTES, $key);
            if r.post == 1 {
                out.par_iter_mut()
                    .zip(&sorted)
                    .for_each(|(o, &s)| *o = $pos(s));
            } else {
                from_rows(&sorted, out, r, $pos);
            }
        }};
    }
    if T::BYTES == 4 {
        // (key, position) packed in one u64: the key's 4 bytes are the upper half.
        go!(
            |x: T, j: usize| ((x.key() ^ m) << 32) | j as u64,
            |s: u64| s >> 32,
            |s: u64| s as u32
        );
    } else {
        go!(
            |x: T, j: usize| (x.key() ^ m, j as u32),
            |s: (u64, u32)| s.0,
            |s: (u64, u32)| s.1
        );
    }
}

fn bad_type(what: &str) -> Error {
    exec_error(format!("{what}: unsupported element types"))
}

/// Sorts `input` along the rows `r` into `out`.
pub fn sort(r: Rows, descending: bool, input: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    match (input, out) {
        (TypedVec::F32(s), TypedVec::F32(d)) => sort_typed(s, d, r, descending),
        (TypedVec::F64(s), TypedVec::F64(d)) => sort_typed(s, d, r, descending),
        (TypedVec::I32(s), TypedVec::I32(d)) => sort_typed(s, d, r, descending),
        (TypedVec::U32(s), TypedVec::U32(d)) => sort_typed(s, d, r, descending),
        _ => return Err(bad_type("sort")),
    }
    Ok(())
}

/// The positions that sort `input` along the rows `r`, into `out` (u32).
pub fn argsort(
    r: Rows,
    descending: bool,
    input: &TypedVec,
    out: &mut TypedVec,
) -> Result<(), Error> {
    let TypedVec::U32(d) = out else {
        return Err(bad_type("argsort"));
    };
    match input {
        TypedVec::F32(s) => argsort_typed(s, d, r, descending),
        TypedVec::F64(s) => argsort_typed(s, d, r, descending),
        TypedVec::I32(s) => argsort_typed(s, d, r, descending),
        TypedVec::U32(s) => argsort_typed(s, d, r, descending),
        TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => {
            return Err(bad_type("argsort"));
        }
    }
    Ok(())
}

/// The `k` smallest of `v` (unique items), ascending, in `v`.
fn smallest<I: Ord + Copy>(v: &mut Vec<I>, k: usize) {
    if k < v.len() {
        v.select_nth_unstable(k);
        v.truncate(k);
    }
    v.sort_unstable();
}

/// The `k` smallest items of one row (`item(j)` of its element `j`, unique), ascending: in
/// chunks over rayon's threads when `parallel`, each chunk's `k` smallest, then theirs.
fn select_row<I, F>(dim: usize, k: usize, item: F, parallel: bool) -> Vec<I>
where
    I: Ord + Copy + Send,
    F: Fn(usize) -> I + Sync + Send,
{
    if !parallel {
        let mut v: Vec<I> = (0..dim).map(&item).collect();
        smallest(&mut v, k);
        return v;
    }
    let chunks = (dim / CHUNK_MIN).clamp(1, 4 * rayon::current_num_threads());
    let cs = dim.div_ceil(chunks);
    let mut v: Vec<I> = (0..chunks)
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut v: Vec<I> = (c * cs..((c + 1) * cs).min(dim)).map(&item).collect();
            smallest(&mut v, k);
            v
        })
        .collect();
    smallest(&mut v, k);
    v
}

fn topk_typed<T: SortKey>(src: &[T], out: &mut [u32], r: Rows, k: usize) {
    if src.is_empty() || k == 0 {
        return;
    }
    let m = mask::<T>(true);
    let o = Rows { dim: k, ..r };
    let parallel = r.dim >= PAR_MIN && r.count() < rayon::current_num_threads();
    // Each row's `k` positions, largest first (descending keys ascending, then positions).
    let rows: Vec<Vec<u32>> = if T::BYTES == 4 {
        // (key, position) packed in one u64: the key's 4 bytes are the upper half.
        let row = |row: usize| -> Vec<u32> {
            let item = |j: usize| ((src[r.at(row, j)].key() ^ m) << 32) | j as u64;
            let v = select_row(r.dim, k, item, parallel);
            v.iter().map(|&s| s as u32).collect()
        };
        (0..r.count()).into_par_iter().map(row).collect()
    } else {
        let row = |row: usize| -> Vec<u32> {
            let item = |j: usize| (src[r.at(row, j)].key() ^ m, j as u32);
            let v = select_row(r.dim, k, item, parallel);
            v.iter().map(|s| s.1).collect()
        };
        (0..r.count()).into_par_iter().map(row).collect()
    };
    for (row, pos) in rows.iter().enumerate() {
        for (j, &p) in pos.iter().enumerate() {
            out[o.at(row, j)] = p;
        }
    }
}

/// The positions of the `k` largest elements of each row of `input` along `r`, largest first
/// (equal elements in input order, NaN largest: the first `k` of a stable descending
/// argsort), into `out` (u32, the rows of `k`): a selection, not a sort.
pub fn topk(r: Rows, k: usize, input: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    let TypedVec::U32(d) = out else {
        return Err(bad_type("topk"));
    };
    match input {
        TypedVec::F32(s) => topk_typed(s, d, r, k),
        TypedVec::F64(s) => topk_typed(s, d, r, k),
        TypedVec::I32(s) => topk_typed(s, d, r, k),
        TypedVec::U32(s) => topk_typed(s, d, r, k),
        TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => return Err(bad_type("topk")),
    }
    Ok(())
}

/// NumPy's `take_along_axis`: output element `i` (of `[pre, m, post]`) reads data
/// `(p, idx[i], q)`. Every index is checked first; one out of range fails the program.
pub fn take_along_axis(
    t: Take,
    axis: usize,
    data: &TypedVec,
    idx: &TypedVec,
    out: &mut TypedVec,
) -> Result<(), Error> {
    let ks: Vec<usize> = match idx {
        TypedVec::I32(v) => v
            .iter()
            .map(|&i| if i < 0 { usize::MAX } else { i as usize })
            .collect(),
        TypedVec::U32(v) => v.iter().map(|&i| i as usize).collect(),
        _ => return Err(bad_type("take_along_axis indices")),
    };
    if let Some(pos) = ks.iter().position(|&k| k >= t.dim) {
        let shown = match idx {
            TypedVec::I32(v) => v[pos].to_string(),
            TypedVec::U32(v) => v[pos].to_string(),
            _ => unreachable!(),
        };
        return Err(exec_error(format!(
            "take_along_axis index {shown} (at position {pos}) is out of bounds for axis {axis} of length {}",
            t.dim
        )));
    }
    macro_rules! go {
        ($s:expr, $d:expr) => {
            $d.par_iter_mut()
                .enumerate()
                .for_each(|(i, o)| *o = $s[t.source(i, ks[i])])
        };
    }
    match (data, out) {
        (TypedVec::F32(s), TypedVec::F32(d)) => go!(s, d),
        (TypedVec::F64(s), TypedVec::F64(d)) => go!(s, d),
        (TypedVec::I32(s), TypedVec::I32(d)) => go!(s, d),
        (TypedVec::U32(s), TypedVec::U32(d)) => go!(s, d),
        (TypedVec::Bool(s), TypedVec::Bool(d)) => go!(s, d),
        _ => return Err(bad_type("take_along_axis")),
    }
    Ok(())
}

fn key_cmp<T: SortKey>(a: T, b: T) -> Ordering {
    a.key().cmp(&b.key())
}

/// Insertion points of `values` into the sorted `sorted` (`super::search` on canonical keys).
pub fn searchsorted(
    right: bool,
    sorted: &TypedVec,
    values: &TypedVec,
    out: &mut TypedVec,
) -> Result<(), Error> {
    let TypedVec::U32(o) = out else {
        return Err(bad_type("searchsorted"));
    };
    macro_rules! go {
        ($a:expr, $v:expr) => {
            o.par_iter_mut()
                .zip($v.par_iter())
                .for_each(|(o, &x)| *o = search($a, x, right, key_cmp) as u32)
        };
    }
    match (sorted, values) {
        (TypedVec::F32(a), TypedVec::F32(v)) => go!(a, v),
        (TypedVec::F64(a), TypedVec::F64(v)) => go!(a, v),
        (TypedVec::I32(a), TypedVec::I32(v)) => go!(a, v),
        (TypedVec::U32(a), TypedVec::U32(v)) => go!(a, v),
        _ => return Err(bad_type("searchsorted")),
    }
    Ok(())
}

/// The runs of equal keys of `sorted`: `out = [r, start_0 .. start_{r-1}, n, 0 ...]`.
pub fn unique_runs(sorted: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    let TypedVec::U32(o) = out else {
        return Err(bad_type("unique_runs"));
    };
    fn runs<T: SortKey>(a: &[T], o: &mut [u32]) {
        let mut r = 0usize;
        for (i, &x) in a.iter().enumerate() {
            if i == 0 || x.key() != a[i - 1].key() {
                r += 1;
                o[r] = i as u32;
            }
        }
        o[0] = r as u32;
        o[r + 1] = a.len() as u32;
        o[r + 2..].fill(0);
    }
    match sorted {
        TypedVec::F32(a) => runs(a, o),
        TypedVec::F64(a) => runs(a, o),
        TypedVec::I32(a) => runs(a, o),
        TypedVec::U32(a) => runs(a, o),
        TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => {
            return Err(bad_type("unique_runs"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_canonical_order() {
        let xs = [
            f32::NEG_INFINITY,
            -3.5,
            -f32::MIN_POSITIVE / 2.0,
            -0.0,
            0.0,
            f32::MIN_POSITIVE / 2.0,
            1.0,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0xffff_ffff),
        ];
        for &a in &xs {
            for &b in &xs {
                let want = super::super::canonical_cmp(a as f64, b as f64);
                assert_eq!(a.key().cmp(&b.key()), want, "{a:?} vs {b:?}");
                let want64 = super::super::canonical_cmp(a as f64, b as f64);
                assert_eq!((a as f64).key().cmp(&(b as f64).key()), want64);
            }
        }
        assert!((-1i32).key() < 0i32.key() && i32::MIN.key() == 0);
    }

    #[test]
    fn radix_is_stable_and_skips_constant_digits() {
        // Keys with only byte 1 varying: passes 0, 2, 3 are skipped (an odd count).
        let src: Vec<u64> = (0..5000u64)
            .map(|i| (((i * 7919) % 13) << 40) | i)
            .collect();
        for parallel in [false, true] {
            let mut out = vec![0u64; src.len()];
            let mut tmp = vec![0u64; src.len()];
            radix(&src, &mut out, &mut tmp, 4, |x| x >> 32, parallel);
            let mut want = src.clone();
            want.sort_by_key(|x| x >> 32);
            assert_eq!(out, want);
        }
    }
}
