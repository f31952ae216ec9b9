//! Pinned host buffers for the OpenCL executor's large transfers, kept and reused.
//!
//! A write or read of pageable host memory makes the driver stage it through pinned memory of
//! its own, one thread copying. Here an upload copies the data (in parallel, `staging.rs`) into a
//! pinned buffer (`CL_MEM_ALLOC_HOST_PTR`, mapped once for its whole life: NVIDIA's recommended
//! way to get pinned memory) and enqueues the write from it; a download reads into a pinned buffer
//! and copies out once the read is done. A buffer is leased ([`Lease`]) until the transfer that
//! uses it has completed, then goes back to its shelf. At most `ARRAYFLOW_OPENCL_STAGING_MB`
//! (default 1024 for each direction; `0` turns staging off) are kept.

use super::staging::{MIN_BYTES, Shelf, Sized64};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::CL_BLOCKING;
use parking_lot::Mutex;
use std::sync::Arc;

/// A pinned buffer mapped for the host at `ptr`, `size` bytes.
pub struct Pinned {
    // Kept alive (and mapped) for as long as `ptr` is used.
    _mem: Buffer<u8>,
    ptr: *mut u8,
    size: u64,
}

// SAFETY: the mapping stays valid wherever the buffer object lives; only the holder of a lease
// touches the memory.
unsafe impl Send for Pinned {}

impl Sized64 for Pinned {
    fn bytes(&self) -> u64 {
        self.size
    }
}

type SharedShelf = Arc<Mutex<Shelf<Pinned>>>;

/// A pinned buffer in use by one transfer; back to its shelf when dropped.
pub struct Lease {
    pinned: Option<Pinned>,
    shelf: SharedShelf,
}

impl Lease {
    /// The mapped memory's start.
    pub fn ptr(&self) -> *mut u8 {
        self.pinned.as_ref().expect("held until dropped").ptr
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(p) = self.pinned.take() {
            self.shelf.lock().put(p);
        }
    }
}

/// The upload and download shelves of one executor.
pub struct PinnedPool {
    limit: u64,
    up: SharedShelf,
    down: SharedShelf,
}

impl PinnedPool {
    pub fn new() -> PinnedPool {
        let limit = super::staging::limit("ARRAYFLOW_OPENCL_STAGING_MB", 1024);
        PinnedPool {
            limit,
            up: Arc::new(Mutex::new(Shelf::new(limit))),
            down: Arc::new(Mutex::new(Shelf::new(limit))),
        }
    }

    /// Whether a transfer of `bytes` goes through pinned staging.
    pub fn takes(&self, bytes: u64) -> bool {
        self.limit > 0 && bytes >= MIN_BYTES
    }

    /// A pinned buffer of at least `bytes` for an upload (`up`) or a download.
    pub fn lease(
        &self,
        context: &Context,
        queue: &CommandQueue,
        bytes: u64,
        up: bool,
    ) -> Result<Lease, String> {
        let shelf = if up { &self.up } else { &self.down };
        let found = shelf.lock().take(bytes);
        let pinned = match found {
            Some(p) => p,
            None => create(
                context,
                queue,
                bytes.next_multiple_of(super::staging::GRAIN),
            )?,
        };
        Ok(Lease {
            pinned: Some(pinned),
            shelf: shelf.clone(),
        })
    }
}

/// A new pinned buffer of `size` bytes, mapped.
fn create(context: &Context, queue: &CommandQueue, size: u64) -> Result<Pinned, String> {
    // SAFETY: no host pointer is passed; the driver allocates (and pins) the memory.
    let mem = unsafe {
        Buffer::<u8>::create(
            context,
            CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
            size as usize,
            std::ptr::null_mut(),
        )
    }
    .map_err(|e| e.to_string())?;
    let mut ptr: opencl3::types::cl_mem = std::ptr::null_mut();
    // SAFETY: a blocking map of the whole buffer; the mapping lives as long as `mem` (never
    // unmapped: the memory is only ever used through `ptr`).
    unsafe {
        queue.enqueue_map_buffer(
            &mem,
            CL_BLOCKING,
            CL_MAP_READ | CL_MAP_WRITE,
            0,
            size as usize,
            &mut ptr,
            &[],
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(Pinned {
        _mem: mem,
        ptr: ptr as *mut u8,
        size,
    })
}
