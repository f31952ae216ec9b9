//! The execution side (the seed's E-Scheduler 800 and Executors 900): the scheduler thread with its
//! pending-operation table, the messages it exchanges with executors, buffers, hardware discovery,
//! the CPU executor and the GPU executors (OpenCL, wgpu).

mod flow;
mod buffer;
pub mod cpu;
pub mod device;
pub mod gpu;
pub mod host_memory;
pub(crate) mod lifetime;
mod scheduler;
pub(crate) mod wait;

pub use crate::ir::{BufferId, TypedVec};
pub use flow::FlowControl;
pub use buffer::BufferPool;
pub use device::{Backend, DeviceInfo, DeviceKind};
pub(crate) use scheduler::SchedMsg;
pub use scheduler::{Instance, Scheduler};


/// What the scheduler knows about an executor when it routes programs.
#[derive(Debug, Clone)]
pub struct Caps {
    /// It computes f64.
    pub fp64: bool,
}

/// The scheduler's end of an executor thread.
pub(crate) struct ExecHandle {
    tx: crossbeam_channel::Sender<scheduler::ExecMsg>,
    pub caps: Caps,
    /// For `Runtime::executor()` and logs, e.g. `opencl:0 NVIDIA H100 (discrete)`.
    pub name: String,
}

impl ExecHandle {
    pub(crate) fn send(&self, msg: scheduler::ExecMsg) {
        // An executor thread only stops at shutdown; a send error then is harmless.
        let _ = self.tx.send(msg);
    }
}

/// The root of arrayflow's on-disk caches (compiled CPU kernels, OpenCL program binaries, wgpu
/// pipeline caches): `ARRAYFLOW_CACHE_DIR`, else the user's cache directory.
pub fn cache_root() -> std::path::PathBuf {
    use std::path::PathBuf;
    if let Ok(d) = std::env::var("ARRAYFLOW_CACHE_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|_| std::env::temp_dir());
    base.join("arrayflow")
}

/// FNV-1a over the parts (stable across processes, unlike the hash maps' seeds): names files in
/// the on-disk caches.
pub(crate) fn checksum(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
