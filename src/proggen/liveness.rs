//! The backward pass (liveness from release entries; dead operations dropped) and the forward pass
//! (which nodes need a buffer: the scheduling roots, the program sequence's outputs and temporaries).

use crate::compile::Entry;
use crate::frontend::NodeTable;
use crate::ir::{NodeId, Op};
use ahash::{AHashMap, AHashSet};

/// What the two passes found about one flush's pending nodes.
pub struct Analysis {
    /// Pending compute nodes in queue order.
    pub order: Vec<NodeId>,
    /// Nodes whose value someone needs (the application, or a needed consumer).
    pub needed: AHashSet<NodeId>,
    /// Needed nodes that get a buffer, in queue order: the scheduling roots.
    pub roots: Vec<NodeId>,
    pub stored: AHashSet<NodeId>,
    /// For each root, the roots its expression reads (its producer count is their number).
    pub deps: AHashMap<NodeId, Vec<NodeId>>,
}

pub fn analyse(nodes: &NodeTable, entries: &[Entry]) -> Analysis {
    let order: Vec<NodeId> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Compute(id) => Some(*id),
            _ => None,
        })
        .collect();

    // Backward pass: a node is needed if the application still holds it or a needed node reads it.
    let mut needed = AHashSet::new();
    for &id in order.iter().rev() {
        let n = &nodes[&id];
        if !n.released || needed.contains(&id) {
            needed.insert(id);
            for &i in &n.inputs {
                if nodes[&i].is_pending() {
                    needed.insert(i);
                }
            }
        }
    }

    // Forward pass: which needed nodes must be stored.
    let mut stored = AHashSet::new();
    for &id in &order {
        if !needed.contains(&id) {
            continue;
        }
        let n = &nodes[&id];
        if !n.released || matches!(n.op, Op::Reduce { .. } | Op::Intrinsic(_)) {
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
    let roots: Vec<NodeId> = order.iter().copied().filter(|id| stored.contains(id)).collect();

    // Producer sets: the stored nodes each root's expression reaches through fused (unstored) nodes.
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
    Analysis { order, needed, roots, stored, deps }
}
