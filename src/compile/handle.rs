//! What the API holds for an array: a reference-counted handle to an IR node. Dropping the last
//! one releases the node: a release entry in the work queue while the node is queued, else the
//! node (and the lazy inputs only it held) leaves the port table and its buffer is freed.

use super::Entry;
use super::state::Inner;
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
        Inner::get().release(self.id);
    }
}

/// A shared handle to a node (cloning shares the node).
pub type Handle = Arc<NodeHandle>;

impl Inner {
    /// The application dropped its last handle to `id`.
    pub fn release(&self, id: NodeId) {
        // Not `front()`: a drop on another thread never waits for a section (it records nothing).
        let mut fe = self.fe.lock();
        let Some(n) = fe.nodes.get_mut(&id) else {
            return;
        };
        n.released = true;
        if n.queued {
            fe.queue.push(Entry::Release(id));
            if fe.sections.is_empty() {
                let f = &mut *fe;
                f.key.push_release(&f.nodes, id);
            }
        } else if n.users == 0 {
            for b in crate::compile::remove_unused(&mut fe, vec![id]) {
                self.sched.release(b);
            }
        }
    }
}
