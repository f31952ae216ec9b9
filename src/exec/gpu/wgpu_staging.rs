//! Host-visible staging buffers for the wgpu executor's large transfers, kept and reused.
//!
//! wgpu's `Queue::write_buffer` and a fresh `MAP_READ` buffer each allocate host-visible memory
//! for every transfer (on Vulkan a dedicated allocation for anything over the allocator's block
//! size, which the driver pins page by page), and free it after the copy: for 64 MiB arrays that
//! costs more than the copy. This pool keeps buffers between transfers: an upload takes a mapped
//! `MAP_WRITE` buffer, writes the data into it (in parallel for large arrays) and records a copy;
//! once the submission has run, the buffer is mapped again and comes back. A download copies into
//! a `MAP_READ` buffer from the pool and returns it after its data has been read. Buffers that
//! would take the pool past its limit (`ARRAYFLOW_WGPU_STAGING_MB`, default 1024 for each
//! direction; `0` turns the pool off) are dropped instead.

use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::Arc;

/// Transfers from this size use the pool; smaller ones go through the queue's own staging.
pub const MIN_BYTES: u64 = 1 << 20;
/// Buffer sizes are rounded up to a multiple of this (so arrays of similar sizes share).
const GRAIN: u64 = 1 << 16;
/// Host copies from this size are split over the rayon pool.
const PARALLEL_BYTES: usize = 4 << 20;

/// Ready buffers of one direction and the bytes they hold.
#[derive(Default)]
struct Shelf {
    ready: Vec<wgpu::Buffer>,
    bytes: u64,
}

impl Shelf {
    /// The smallest ready buffer of at least `bytes` and at most twice that.
    fn take(&mut self, bytes: u64) -> Option<wgpu::Buffer> {
        let (i, _) = self
            .ready
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size() >= bytes && b.size() <= 2 * bytes.max(GRAIN))
            .min_by_key(|(_, b)| b.size())?;
        let b = self.ready.swap_remove(i);
        self.bytes -= b.size();
        Some(b)
    }

    /// Keeps `b` unless that takes the shelf past `limit` bytes.
    fn put(&mut self, b: wgpu::Buffer, limit: u64) {
        if self.bytes + b.size() <= limit {
            self.bytes += b.size();
            self.ready.push(b);
        }
    }
}

/// The pool (cheap to clone: the shelves are shared with the map callbacks).
#[derive(Clone)]
pub struct StagingPool {
    device: wgpu::Device,
    limit: u64,
    write: Arc<Mutex<Shelf>>,
    read: Arc<Mutex<Shelf>>,
}

impl StagingPool {
    pub fn new(device: &wgpu::Device) -> StagingPool {
        let mb: u64 = std::env::var("ARRAYFLOW_WGPU_STAGING_MB")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1024);
        StagingPool {
            device: device.clone(),
            limit: mb << 20,
            write: Arc::default(),
            read: Arc::default(),
        }
    }

    /// Whether a transfer of `bytes` goes through the pool.
    pub fn takes(&self, bytes: u64) -> bool {
        self.limit > 0 && bytes >= MIN_BYTES
    }

    /// A `MAP_WRITE | COPY_SRC` buffer of at least `bytes` holding `data` in its first bytes,
    /// unmapped and ready to be copied from; give it to [`StagingPool::recycle_write`] once the
    /// copy is submitted.
    pub fn upload(&self, data: &[u8]) -> Result<wgpu::Buffer, String> {
        let bytes = data.len() as u64;
        let buf = self.write.lock().take(bytes).unwrap_or_else(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("arrayflow staging (up)"),
                size: bytes.next_multiple_of(GRAIN),
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        });
        {
            let mut view = buf
                .slice(..bytes)
                .get_mapped_range_mut()
                .map_err(|e| e.to_string())?;
            write(data, view.slice(..));
        }
        buf.unmap();
        Ok(buf)
    }

    /// Maps `buf` again once the work submitted before has run, and shelves it.
    pub fn recycle_write(&self, buf: wgpu::Buffer) {
        let (shelf, limit) = (self.write.clone(), self.limit);
        let b = buf.clone();
        buf.slice(..).map_async(wgpu::MapMode::Write, move |r| {
            if r.is_ok() {
                shelf.lock().put(b, limit);
            }
        });
    }

    /// A `MAP_READ | COPY_DST` buffer of at least `bytes`, unmapped.
    pub fn download(&self, bytes: u64) -> wgpu::Buffer {
        self.read.lock().take(bytes).unwrap_or_else(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("arrayflow staging (down)"),
                size: bytes.next_multiple_of(GRAIN),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Shelves a download buffer after its data has been read and it was unmapped.
    pub fn recycle_read(&self, buf: wgpu::Buffer) {
        self.read.lock().put(buf, self.limit);
    }
}

/// Host copies are split into pieces of this size.
const PIECE: usize = 1 << 20;

/// Writes `src` into mapped memory `dst` (of the same length), split over the rayon pool for
/// large copies (one thread's stores into write-combined memory fall well short of the bus).
fn write(src: &[u8], mut dst: wgpu::WriteOnly<'_, [u8]>) {
    if src.len() < PARALLEL_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    assert_eq!(dst.len(), src.len(), "staging view of the data's length");
    let base = Mapped(dst.as_raw_ptr().cast::<u8>().as_ptr());
    src.par_chunks(PIECE).enumerate().for_each(|(i, s)| {
        // SAFETY: piece `i` of the mapped range (`dst`, borrowed for this call, so still mapped)
        // is written by this task alone, and stays within `src.len()` = the view's length.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), base.at(i * PIECE), s.len()) }
    });
}

/// A mapped range's base, shared by the tasks that write its disjoint pieces.
struct Mapped(*mut u8);

impl Mapped {
    /// The address `offset` bytes in (within the range: the caller's contract).
    unsafe fn at(&self, offset: usize) -> *mut u8 {
        // SAFETY: the caller keeps `offset` within the mapped range.
        unsafe { self.0.add(offset) }
    }
}
// SAFETY: each task writes a piece no other task touches (see `write`).
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

/// `dst[..src.len()] = src`, split over the rayon pool for large copies (one thread's stores
/// into write-combined memory fall well short of the bus).
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
