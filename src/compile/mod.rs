//! The compilation scheduler (the seed's C-Scheduler 300): the runtime's shared state
//! (`state.rs`, `config.rs`), handles and releases (`handle.rs`), the work queue, when to flush
//! (`triggers.rs`), the flush itself (`flush.rs`), section replays (`replay.rs`), and the one
//! hand-off of program sequences to the execution scheduler (`handoff.rs`, with comparison
//! mode's checks, `checks.rs`) — the hook point for a profiler or a debugger; the stepper keeps
//! fused kernels there when stepping is on (`captures.rs`), and tests may keep every sequence
//! (`observe.rs`).

mod captures;
mod checks;
pub mod config;
mod flush;
mod handle;
mod handoff;
pub mod macro_cache;
pub mod observe;
mod replay;
pub mod state;
pub mod trace_cache;
pub mod trace_key;
mod triggers;
mod work_queue;

pub use flush::{flush, flush_into, remove_unused};
pub use handle::{Handle, NodeHandle};
pub use handoff::{Origin, Submission};
pub use state::{FrontEnd, Inner};
pub use work_queue::{Entry, FlushReason, WorkQueue};
