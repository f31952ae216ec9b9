//! The backward pass (liveness from release entries; dead operations dropped) and the forward pass
//! (which nodes get a buffer: the scheduling roots, the program sequence's outputs and temporaries).
//!
//! Storing policy. A node gets a buffer when it must: reductions and intrinsics always; inputs of
//! reshape, tile and intrinsics; the node being read or hinted; every live node on `execute()`.
//! A live element-wise node that nobody reads yet stays *lazy* when its chain of unstored producers
//! is at most [`MAX_LAZY_DEPTH`] deep: later kernels recompute it where they use it (ArrayFire's
//! JIT nodes work the same way). That is what lets `(&a + 1.0).sqrt().sum().item()` fuse fully even
//! though Rust keeps the expression's temporaries alive until the statement ends.

use crate::compile::Entry;
use crate::frontend::{NodeInfo, NodeTable};
use crate::ir::{NodeId, Op};
use ahash::{AHashMap, AHashSet};

/// Longest chain of unstored element-wise producers a live node may keep without a buffer.
pub const MAX_LAZY_DEPTH: u32 = 16;

/// What the flush asks for beyond liveness.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorePolicy {
    /// The node a read or hint needs.
    pub target: Option<NodeId>,
    /// Store every live node (`Runtime::execute()`).
    pub all_live: bool,
    /// Store every needed node (comparison after computation checks each op's result).
    pub all_nodes: bool,
}

/// Whether a node may stay unstored while the application holds it.
pub fn may_stay_lazy(n: &NodeInfo) -> bool {
    matches!(
        n.op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Select
            | Op::Cast(_)
            | Op::Broadcast
            | Op::Permute(_)
            | Op::Slice { .. }
            | Op::Reshape
            | Op::Tile
    ) && n.depth <= MAX_LAZY_DEPTH
}

/// What the two passes found about one flush's pending nodes.
pub struct Analysis {
    /// Pending nodes this flush processes, in queue order (lazy nodes that must now be stored first).
    pub order: Vec<NodeId>,
    /// Nodes whose value someone needs (the application, or a needed consumer).
    pub needed: AHashSet<NodeId>,
    /// Nodes that get a buffer, in order: the scheduling roots.
    pub roots: Vec<NodeId>,
    pub stored: AHashSet<NodeId>,
    /// For each root, the roots its expression reads (its producer count is their number).
    pub deps: AHashMap<NodeId, Vec<NodeId>>,
}

pub fn analyse(nodes: &NodeTable, entries: &[Entry], policy: StorePolicy) -> Analysis {
    let queued: Vec<NodeId> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Compute(id) => Some(*id),
            _ => None,
        })
        .collect();

    // Unqueued pending nodes (lazy leaves and lazy intermediates of earlier flushes) that an op of
    // this flush reads through a buffer: they are computed first.
    let mut forced = Vec::new();
    let mut seen = AHashSet::new();
    for id in &queued {
        let n = &nodes[id];
        if n.op.needs_stored_input() {
            for i in &n.inputs {
                let input = &nodes[i];
                if input.is_pending() && !input.queued && seen.insert(*i) {
                    forced.push(*i);
                }
            }
        }
    }
    let order: Vec<NodeId> = forced.iter().chain(&queued).copied().collect();

    // Backward pass: a node is needed if the application still holds it or a needed node reads it.
    let mut needed = AHashSet::new();
    for &id in order.iter().rev() {
        let n = &nodes[&id];
        if !n.released || needed.contains(&id) || seen.contains(&id) {
            needed.insert(id);
            for &i in &n.inputs {
                if nodes[&i].is_pending() {
                    needed.insert(i);
                }
            }
        }
    }

    // Forward pass: which needed nodes get a buffer.
    let mut stored = AHashSet::new();
    for &id in &order {
        if !needed.contains(&id) {
            continue;
        }
        let n = &nodes[&id];
        let must = matches!(
            n.op,
            Op::Reduce { .. } | Op::Intrinsic(_) | Op::Const(_) | Op::Generate(_)
        ) || seen.contains(&id)
            || policy.target == Some(id)
            || policy.all_nodes
            || (!n.released && (policy.all_live || !may_stay_lazy(n)));
        if must {
            stored.insert(id);
        }
        if n.op.needs_stored_input() {
            for &i in &n.inputs {
                if nodes[&i].is_pending() {
                    stored.insert(i);
                }
            }
        }
    }
    let roots: Vec<NodeId> = order
        .iter()
        .copied()
        .filter(|id| stored.contains(id))
        .collect();

    // Producer sets: the stored nodes each root's expression reaches through unstored nodes.
    let mut deps = AHashMap::new();
    for &r in &roots {
        let mut found = Vec::new();
        let mut seen = AHashSet::new();
        let mut stack: Vec<NodeId> = nodes[&r].inputs.to_vec();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let n = &nodes[&id];
            if !n.is_pending() {
                continue;
            }
            if stored.contains(&id) {
                found.push(id);
            } else {
                stack.extend(n.inputs.iter().copied());
            }
        }
        deps.insert(r, found);
    }
    Analysis {
        order,
        needed,
        roots,
        stored,
        deps,
    }
}
