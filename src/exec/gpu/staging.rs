//! Host staging for the GPU executors' large transfers: a shelf of reusable staging buffers
//! under a byte limit, and host copies split over rayon (one thread's copy into or out of
//! pinned or write-combined memory falls well short of the bus). `wgpu_staging.rs` and
//! `opencl_staging.rs` hold the API-specific buffers.

use rayon::prelude::*;

/// Transfers from this size go through staging buffers; smaller ones take the API's own path.
pub const MIN_BYTES: u64 = 1 << 20;
/// Staging buffer sizes are rounded up to a multiple of this (arrays of similar sizes share).
pub const GRAIN: u64 = 1 << 16;
/// Host copies from this size are split over the rayon pool, in pieces of [`PIECE`] bytes.
const PARALLEL_BYTES: usize = 4 << 20;
const PIECE: usize = 1 << 20;

/// A staging buffer's size in bytes.
pub trait Sized64 {
    fn bytes(&self) -> u64;
}

/// The bytes of staging each direction may keep: `var` in MiB (`0`: no staging), else
/// `default_mb`.
pub fn limit(var: &str, default_mb: u64) -> u64 {
    let mb: u64 = crate::settings::number(var).unwrap_or(default_mb);
    mb << 20
}

/// Ready staging buffers of one direction and the bytes they hold, at most `limit`.
pub struct Shelf<B> {
    ready: Vec<B>,
    bytes: u64,
    limit: u64,
}

impl<B: Sized64> Shelf<B> {
    pub fn new(limit: u64) -> Shelf<B> {
        Shelf {
            ready: Vec::new(),
            bytes: 0,
            limit,
        }
    }

    /// The smallest ready buffer of at least `bytes` and at most a quarter more. (On an H200,
    /// wgpu uploads of 32 MiB through the 64 MiB buffers an earlier program left took 40 ms
    /// longer per call than through buffers of their own size.)
    pub fn take(&mut self, bytes: u64) -> Option<B> {
        let most = bytes.next_multiple_of(GRAIN) + bytes / 4;
        let (i, _) = self
            .ready
            .iter()
            .enumerate()
            .filter(|(_, b)| b.bytes() >= bytes && b.bytes() <= most)
            .min_by_key(|(_, b)| b.bytes())?;
        let b = self.ready.swap_remove(i);
        self.bytes -= b.bytes();
        Some(b)
    }

    /// Keeps `b` unless that takes the shelf past its limit (then `b` is dropped).
    pub fn put(&mut self, b: B) {
        if self.bytes + b.bytes() <= self.limit {
            self.bytes += b.bytes();
            self.ready.push(b);
        }
    }
}

/// `dst[..src.len()] = src`.
pub fn copy(src: &[u8], dst: &mut [u8]) {
    let dst = &mut dst[..src.len()];
    if src.len() < PARALLEL_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Copies `src` to `dst` (mapped memory that Rust may not read, so not a slice).
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes, not overlap `src`, and not be accessed
/// otherwise until this returns.
pub unsafe fn copy_to(src: &[u8], dst: *mut u8) {
    let base = Dst(dst);
    if src.len() < PARALLEL_BYTES {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), base.at(0), src.len()) };
        return;
    }
    src.par_chunks(PIECE).enumerate().for_each(|(i, s)| {
        // SAFETY: piece `i` of the caller's range, written by this task alone.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), base.at(i * PIECE), s.len()) }
    });
}

/// A destination's base, shared by the tasks that write its disjoint pieces.
struct Dst(*mut u8);

impl Dst {
    /// The address `offset` bytes in (within the range: the caller's contract).
    unsafe fn at(&self, offset: usize) -> *mut u8 {
        // SAFETY: the caller keeps `offset` within the range.
        unsafe { self.0.add(offset) }
    }
}

// SAFETY: each task writes a piece no other task touches (see `copy_to`).
unsafe impl Send for Dst {}
unsafe impl Sync for Dst {}

#[cfg(test)]
mod tests {
    use super::*;

    struct B(u64);
    impl Sized64 for B {
        fn bytes(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn a_shelf_gives_the_smallest_fitting_buffer_and_keeps_to_its_limit() {
        let mut s = Shelf::new(10 << 20);
        s.put(B(4 << 20));
        s.put(B(2 << 20));
        s.put(B(8 << 20)); // over the limit with the others: dropped
        assert_eq!(
            s.take(1 << 20).map(|b| b.0),
            None,
            "twice the size: not taken"
        );
        assert_eq!(s.take((7 << 20) / 2).map(|b| b.0), Some(4 << 20));
        assert_eq!(s.take(5 << 20).map(|b| b.0), None);
        assert_eq!(s.take(2 << 20).map(|b| b.0), Some(2 << 20));
        assert!(s.take(1).is_none());
    }

    #[test]
    fn copies_large_and_small_ranges_whole() {
        for n in [1000, (9 << 20) + 3] {
            let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            let mut a = vec![0u8; n + 5];
            copy(&src, &mut a);
            assert_eq!(&a[..n], &src[..]);
            let mut b = vec![0u8; n];
            // SAFETY: `b` has `n` bytes.
            unsafe { copy_to(&src, b.as_mut_ptr()) };
            assert_eq!(b, src);
        }
    }
}
