//! The front end (the seed's FE 200): turns API calls into IR nodes. It checks shapes and element
//! types at record time (errors name the user's call site), folds constants and reduces strength,
//! and hands nodes to the work queue. Handles are reference-counted; the last one dropped queues a
//! release entry.

mod fold;
mod record;
pub mod section;

pub use crate::ir::{NodeInfo, NodeState, NodeTable};
pub use record::*;

use crate::ir::{DType, NodeId, Scalar, Shape};
use std::sync::Arc;

/// What the API holds for an array: the node's id and the facts it needs without a lock.
#[derive(Debug)]
pub struct NodeHandle {
    pub id: NodeId,
    pub shape: Shape,
    pub dtype: DType,
    /// The value, when every element is this known constant.
    pub konst: Option<Scalar>,
}

impl Drop for NodeHandle {
    fn drop(&mut self) {
        crate::runtime::Inner::get().release(self.id);
    }
}

/// A shared handle to a node (cloning shares the node).
pub type Handle = Arc<NodeHandle>;
