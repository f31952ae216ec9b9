//! The process-wide runtime, as the API sees it: its state and settings (defined at the
//! C-Scheduler's layer, `compile/state.rs` and `compile/config.rs`, re-exported here) and the
//! statistics `Runtime::stats()` returns (`stats.rs`).

pub mod stats;

pub use crate::compile::config::{Config, REUSE_CHECK_EVERY, tile_size};
pub use crate::compile::state::{ErrorHandler, ErrorHandling, FrontEnd, Inner};
pub use crate::exec::FlowControl;
