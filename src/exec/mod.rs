//! The execution side (the seed's E-Scheduler 800 and Executors 900): the scheduler thread with its
//! pending-operation table, the messages it exchanges with executors, buffers and the CPU executor.

mod buffer;
pub mod cpu;
mod scheduler;

pub use buffer::{BufferPool, TypedVec};
pub(crate) use scheduler::SchedMsg;
pub use scheduler::{Instance, Scheduler};

/// Identifies a buffer for the life of the process (never reused; its memory may be).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u64);
