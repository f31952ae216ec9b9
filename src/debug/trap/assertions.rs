//! The assertions recorded on arrays (`assert.rs` records them through the API): a registry from
//! node to its checks, which the program generator reads when it builds the kernel that computes
//! the node.

use super::check::TrapPred;
use crate::ir::NodeId;
use ahash::AHashMap;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One assertion attached to a node.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// The test.
    pub pred: TrapPred,
    /// What the user said (or what the predicate is, for the built-in assertions).
    pub message: Arc<str>,
}

static ASSERTS: Mutex<Option<AHashMap<NodeId, Vec<Assertion>>>> = Mutex::new(None);
static ANY: AtomicBool = AtomicBool::new(false);

/// Whether any assertion was ever recorded (the program generator looks them up only then, and
/// flushes skip the trace cache: an assertion's bounds and message are not in its key).
#[inline]
pub fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

/// The assertions attached to node `id`.
pub fn of(id: NodeId) -> Vec<Assertion> {
    ASSERTS
        .lock()
        .as_ref()
        .and_then(|m| m.get(&id).cloned())
        .unwrap_or_default()
}

/// Attaches `a` to node `id`.
pub(crate) fn register(id: NodeId, a: Assertion) {
    ASSERTS
        .lock()
        .get_or_insert_with(AHashMap::new)
        .entry(id)
        .or_default()
        .push(a);
    ANY.store(true, Ordering::Relaxed);
}
