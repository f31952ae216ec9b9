//! The execution side (the seed's E-Scheduler 800 and Executors 900): the scheduler thread with its
//! pending-operation table, the messages it exchanges with executors, buffers, hardware discovery,
//! the CPU executor and the GPU executors (OpenCL, wgpu), and the program cache they share.

mod buffer;
pub mod cpu;
pub mod device;
mod flow;
pub mod gpu;
pub mod host_memory;
pub(crate) mod lifetime;
pub mod placement;
pub mod program_cache;
mod scheduler;
pub mod split;
pub(crate) mod wait;

pub use crate::counters::MAX_EXECUTORS;
pub use crate::ir::{BufferId, TypedVec};
pub use buffer::BufferPool;
pub use device::{Backend, DeviceInfo, DeviceKind};
pub use flow::FlowControl;
pub use host_memory::HostDest;
pub(crate) use scheduler::SchedMsg;
pub use scheduler::{Instance, Scheduler, Task};

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
