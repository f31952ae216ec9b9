//! Host-visible staging buffers for the wgpu executor's large transfers, kept and reused.
//!
//! wgpu's `Queue::write_buffer` and a fresh `MAP_READ` buffer each allocate host-visible memory
//! for every transfer (on Vulkan a dedicated allocation for anything over the allocator's block
//! size, which the driver pins page by page), and free it after the copy: for 64 MiB arrays that
//! costs more than the copy. This pool keeps buffers between transfers: an upload takes a mapped
//! `MAP_WRITE` buffer, writes the data into it (in parallel for large arrays) and records a copy;
//! once the submission has run, the buffer is mapped again and comes back. A download copies into
//! a `MAP_READ` buffer from the pool and returns it after its data has been read. Buffers that
//! would take the pool past its limit (`ARRAYFLOW_WGPU_STAGING_MB` for each direction) are
//! dropped instead.
//!
//! **Off by default** (`ARRAYFLOW_WGPU_STAGING_MB=1024` turns it on). On an H200 it made
//! softmax and layer norm 1.5x faster, but a program run after Black-Scholes (whose 320 MiB of
//! staging then stays in the pool) took 40 ms longer per call (the MLP: 54.5 against 12.9 ms),
//! also when it never took one of those buffers; the cause is not found (BENCHMARKS.md).

use super::staging::{GRAIN, MIN_BYTES, Shelf, Sized64};
use parking_lot::Mutex;
use std::sync::Arc;

impl Sized64 for wgpu::Buffer {
    fn bytes(&self) -> u64 {
        self.size()
    }
}

/// The pool (cheap to clone: the shelves are shared with the map callbacks).
#[derive(Clone)]
pub struct StagingPool {
    device: wgpu::Device,
    limit: u64,
    write: Arc<Mutex<Shelf<wgpu::Buffer>>>,
    read: Arc<Mutex<Shelf<wgpu::Buffer>>>,
}

impl StagingPool {
    pub fn new(device: &wgpu::Device) -> StagingPool {
        let limit = super::staging::limit("ARRAYFLOW_WGPU_STAGING_MB", 0);
        StagingPool {
            device: device.clone(),
            limit,
            write: Arc::new(Mutex::new(Shelf::new(limit))),
            read: Arc::new(Mutex::new(Shelf::new(limit))),
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
        let shelf = self.write.clone();
        let b = buf.clone();
        buf.slice(..).map_async(wgpu::MapMode::Write, move |r| {
            if r.is_ok() {
                shelf.lock().put(b);
            }
        });
    }

    /// A `MAP_READ | COPY_DST` buffer of at least `bytes`, unmapped: from the pool where it
    /// takes the transfer, else a new one of that size.
    pub fn download(&self, bytes: u64) -> wgpu::Buffer {
        let pooled = self.takes(bytes);
        pooled
            .then(|| self.read.lock().take(bytes))
            .flatten()
            .unwrap_or_else(|| {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("arrayflow staging (down)"),
                    size: if pooled {
                        bytes.next_multiple_of(GRAIN)
                    } else {
                        bytes
                    },
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
    }

    /// Shelves a download buffer after its data has been read and it was unmapped (one the pool
    /// does not take is dropped).
    pub fn recycle_read(&self, buf: wgpu::Buffer) {
        if self.takes(buf.size()) {
            self.read.lock().put(buf);
        }
    }
}

/// Writes `src` into mapped memory `dst` of the same length.
fn write(src: &[u8], mut dst: wgpu::WriteOnly<'_, [u8]>) {
    assert_eq!(dst.len(), src.len(), "staging view of the data's length");
    // SAFETY: `dst` is a mapped range of `src.len()` bytes, borrowed (so mapped) for this call.
    unsafe { super::staging::copy_to(src, dst.as_raw_ptr().cast::<u8>().as_ptr()) }
}
