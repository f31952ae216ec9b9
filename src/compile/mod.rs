//! The compilation scheduler (the seed's C-Scheduler 300): the work queue, the flush policy, and the
//! hand-off of generated program sequences to the execution scheduler (with flow control).

mod flush;
mod handoff;
pub mod macro_cache;
mod replay;
pub mod trace_cache;
pub mod trace_key;
mod triggers;
mod work_queue;

pub use flush::{flush, flush_into, remove_unused};
pub use work_queue::{Entry, FlushReason, WorkQueue};
