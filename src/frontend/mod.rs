//! The front end (the seed's FE 200): turns API calls into IR nodes. It checks shapes and element
//! types at record time (errors name the user's call site), folds constants and reduces strength,
//! and hands nodes to the work queue; when the queue is compiled is the C-Scheduler's decision
//! (`compile/triggers.rs`). Handles (`compile/handle.rs`) are reference-counted; the last one
//! dropped queues a release entry.

mod complex_product;
mod fold;
mod record;
mod reindex;
pub mod section;
pub mod small_product;

pub use crate::ir::{NodeInfo, NodeState, NodeTable};
pub use record::*;
pub use reindex::{FUSED_CONCAT_PARTS, PadFill, pad, roll, with_slice};

pub use crate::compile::{Handle, NodeHandle};
