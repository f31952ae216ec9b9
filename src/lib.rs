//! arrayflow: array code that runs fast on multi-core CPUs and GPUs without writing a kernel.
//!
//! Array operations are recorded, not run: each call becomes an IR node in a work queue. When a result
//! is needed the queued operations are fused into as few kernels as possible and run by an execution
//! scheduler on its own thread, which dispatches to executors (CPU; GPU backends to come).
//! See `README.md` for a tour and `ARCHITECTURE.md` for the map of the pipeline.

pub mod error;
pub mod ir;
#[path = "../primitives/mod.rs"]
pub mod primitives;

pub mod api;
pub mod compile;
pub mod debug;
pub mod exec;
pub mod frontend;
#[path = "../intrinsics/mod.rs"]
pub mod intrinsics;
pub mod proggen;
pub mod runtime;

pub use api::*;
pub use error::{Error, ErrorKind, Result};
