//! The backward pass (liveness from release entries; dead operations dropped) and the forward pass
//! (which nodes get a buffer: the scheduling roots, the program sequence's outputs and temporaries).
//!
//! Storing policy. A node gets a buffer when it must: reductions and intrinsics always; inputs of
//! reshape, tile and intrinsics; the node being read or hinted; every live node on `execute()`.
//! Any other element-wise value stays *lazy* (no buffer; kernels that use it recompute it, as
//! ArrayFire's JIT nodes do), which is what lets `(&a + 1.0).sqrt().sum().item()` fuse fully even
//! though Rust keeps the statement's temporaries alive until it ends. Three rules bound what
//! recomputation can waste, decided from the program, not from a fixed depth:
//!
//! 1. **Second flush.** A value the application held when an earlier flush computed it inside a
//!    kernel without storing it is stored by the next flush that needs it (unless it is only a
//!    view of stored data or a constant). A statement's temporaries are part of the value they
//!    build and never count. So a named value read twice is computed at most twice, and a loop-carried value
//!    is stored one step after it is made: the work per step stays flat.
//! 2. **Several kernels in one flush.** A value that kernels of one flush would compute more than
//!    once (read by kernels that cannot fuse, such as a reduction and the kernel that uses its
//!    result, or read at several positions through views, as a stencil does) is stored when
//!    the extra computations (one per use after the first) cost more than [`RECOMPUTE_BUDGET`]
//!    instructions per element in all; a random draw always does. Cheaper values are recomputed
//!    (a load and a store cost more).
//! 3. **Held chains.** A value the application holds is stored once its recompute cost
//!    ([`NodeInfo::lazy_cost`]) passes [`LAZY_BUDGET`].
//!
//! Reductions of the same value requested before a read fuse into one kernel and count as one use.

use crate::ir::Entry;
use crate::ir::{NodeId, Op};
use crate::ir::{NodeInfo, NodeTable};
use ahash::{AHashMap, AHashSet};

/// Largest recompute cost (instructions per element) of a held value that stays lazy.
pub const LAZY_BUDGET: u32 = 64;

/// Largest cost of the extra computations (instructions per element, summed over the uses after
/// the first) of a value that several kernels (or positions) of one flush recompute rather than
/// read from a buffer. A random draw costs more.
pub const RECOMPUTE_BUDGET: u32 = 24;

/// Smallest recompute cost of a value that the second flush needing it stores (below it: views of
/// stored data, constants).
pub const REUSE_MIN_COST: u32 = 1;

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
    lazy_kind(n) && n.lazy_cost <= LAZY_BUDGET
}

/// Whether the node's kind of operation may stay unstored (element-wise values and views).
fn lazy_kind(n: &NodeInfo) -> bool {
    matches!(
        n.op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Select
            | Op::Cast(_)
            | Op::Broadcast
            | Op::Permute(_)
            | Op::Slice { .. }
            | Op::Fold { .. }
            | Op::Reshape
            | Op::Tile
    )
}

/// Whether the node reads its input through a stored buffer: reshapes (but not those that only
/// insert or remove axes of length 1, which kernels read as views), tiles and intrinsics.
fn needs_stored_input(nodes: &NodeTable, n: &NodeInfo) -> bool {
    match n.op {
        Op::Reshape => !crate::ir::unit_reshape(&nodes[&n.inputs[0]].shape, &n.shape),
        _ => n.op.needs_stored_input(),
    }
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
    /// Pending nodes the application holds that the kernels compute without storing them.
    pub recomputed: Vec<NodeId>,
}

/// Whether a node only changes where its input's elements are read (its kernel reads the input at
/// another position than its own).
fn is_view(op: &Op) -> bool {
    matches!(
        op,
        Op::Permute(_)
            | Op::Slice { .. }
            | Op::Fold { .. }
            | Op::Broadcast
            | Op::Reshape
            | Op::Tile
    )
}

pub fn analyse(nodes: &NodeTable, entries: &[Entry], policy: StorePolicy) -> Analysis {
    let queued: Vec<NodeId> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Compute(id) => Some(*id),
            _ => None,
        })
        .collect();
    let is_queued: AHashSet<NodeId> = queued.iter().copied().collect();

    // Unqueued pending nodes the queue reads (lazy values of earlier flushes, lazy leaves), found
    // through pending inputs. With the queued nodes, in id order (inputs before their users).
    let mut lazy_in = Vec::new();
    let mut seen = AHashSet::new();
    let mut stack: Vec<NodeId> = queued
        .iter()
        .flat_map(|id| nodes[id].inputs.iter().copied())
        .collect();
    while let Some(id) = stack.pop() {
        let Some(n) = nodes.get(&id) else { continue };
        if !n.is_pending() || n.queued || !seen.insert(id) {
            continue;
        }
        lazy_in.push(id);
        stack.extend(n.inputs.iter().copied());
    }
    let mut all: Vec<NodeId> = lazy_in.iter().chain(&queued).copied().collect();
    all.sort_unstable();

    // Lazy inputs that an op of this flush reads through a buffer: they are computed first.
    let mut forced_by_input = AHashSet::new();
    for id in &queued {
        let n = &nodes[id];
        if needs_stored_input(nodes, n) {
            for i in &n.inputs {
                if !is_queued.contains(i) && seen.contains(i) {
                    forced_by_input.insert(*i);
                }
            }
        }
    }

    // Backward pass: a queued node is needed if the application still holds it; any node if a
    // needed node reads it.
    let mut needed = AHashSet::new();
    for &id in all.iter().rev() {
        let n = &nodes[&id];
        let held = is_queued.contains(&id) && !n.released;
        if held || needed.contains(&id) || forced_by_input.contains(&id) {
            needed.insert(id);
            for &i in &n.inputs {
                if nodes[&i].is_pending() {
                    needed.insert(i);
                }
            }
        }
    }

    // Forward pass: the nodes that must get a buffer.
    let mut stored = AHashSet::new();
    // Lazy values of earlier flushes read directly by this flush's new work (rule 1 applies to
    // these, not to what they are computed from).
    let mut read_by_queue = AHashSet::new();
    for &id in &queued {
        if needed.contains(&id) {
            read_by_queue.extend(nodes[&id].inputs.iter().copied());
        }
    }
    // What each node costs a kernel that recomputes it, given what this flush stores (inputs come
    // first in `all`, so their decisions are made).
    let mut cost: AHashMap<NodeId, u32> = AHashMap::new();
    for &id in &all {
        let n = &nodes[&id];
        let own = match n.op {
            Op::Reduce { .. } | Op::Intrinsic(_) | Op::Const(_) => 0,
            _ => n.inputs.iter().fold(n.op.recompute_cost(), |c, i| {
                let lazy = nodes[i].is_pending() && !stored.contains(i);
                let ci = if lazy {
                    cost.get(i).copied().unwrap_or(nodes[i].lazy_cost)
                } else {
                    0
                };
                c.saturating_add(ci)
            }),
        };
        cost.insert(id, own);
        if !needed.contains(&id) {
            continue;
        }
        let must = if is_queued.contains(&id) {
            matches!(
                n.op,
                Op::Reduce { .. } | Op::Intrinsic(_) | Op::Const(_) | Op::Generate(_)
            ) || policy.target == Some(id)
                || policy.all_nodes
                // Rule 3: a held value whose chain got too long.
                || (!n.released
                    && (policy.all_live || !lazy_kind(n) || own > LAZY_BUDGET))
        } else {
            forced_by_input.contains(&id)
                // Rule 1: computed lazily by an earlier flush while held, needed again.
                || (n.recomputed && own >= REUSE_MIN_COST && read_by_queue.contains(&id))
        };
        if must {
            stored.insert(id);
            if !is_queued.contains(&id) && !forced_by_input.contains(&id) {
                log_decision(
                    n,
                    "stored: an earlier flush recomputed it and it is needed again",
                );
            } else if is_queued.contains(&id) && !n.released && own > LAZY_BUDGET {
                log_decision(
                    n,
                    "stored: the held chain's recompute cost passed the budget",
                );
            }
        } else if lazy_kind(n) {
            log_decision(n, "lazy: recomputed where it is used");
        }
        if needs_stored_input(nodes, n) {
            for &i in &n.inputs {
                if nodes[&i].is_pending() {
                    stored.insert(i);
                }
            }
        }
    }

    // Rule 2: values several kernels (or positions) of this flush would recompute. A kernel is
    // approximated by its roots' level (1 + the deepest stored producer's) and domain: roots that
    // agree on both usually fuse.
    let mut level: AHashMap<NodeId, u32> = AHashMap::new();
    let mut kernels: Vec<(u32, super::builder::RootDomain)> = Vec::new();
    let mut kernel_of: AHashMap<NodeId, u32> = AHashMap::new();
    for &id in &all {
        if !stored.contains(&id) {
            continue;
        }
        let l = 1 + producers(nodes, &stored, id)
            .iter()
            .map(|p| level.get(p).copied().unwrap_or(0))
            .max()
            .unwrap_or(0);
        level.insert(id, l);
        let d = super::builder::RootDomain::of(nodes, &nodes[&id]);
        let k = match kernels.iter().position(|(kl, kd)| *kl == l && *kd == d) {
            Some(k) => k,
            None => {
                kernels.push((l, d));
                kernels.len() - 1
            }
        };
        kernel_of.insert(id, k as u32);
    }
    let mut next_kernel = kernels.len() as u32;
    let mut users: AHashMap<NodeId, (smallvec::SmallVec<[u32; 4]>, u32, bool)> = AHashMap::new();
    for &id in all.iter().rev() {
        if !needed.contains(&id) {
            continue;
        }
        let n = &nodes[&id];
        let mine: smallvec::SmallVec<[u32; 4]> = if let Some(&k) = kernel_of.get(&id) {
            smallvec::smallvec![k]
        } else {
            let (ks, views, direct) = users.remove(&id).unwrap_or_default();
            let positions = views + direct as u32;
            let uses = ks.len() as u32 + positions.saturating_sub(1);
            // The extra computations cost `(uses - 1) * cost` per element.
            if uses >= 2 && (uses - 1).saturating_mul(cost[&id]) > RECOMPUTE_BUDGET && may_store(n)
            {
                stored.insert(id);
                log_decision(
                    n,
                    "stored: several kernels or positions of this flush read it",
                );
                next_kernel += 1;
                smallvec::smallvec![next_kernel]
            } else {
                ks
            }
        };
        for &i in &n.inputs {
            if !nodes[&i].is_pending() || stored.contains(&i) && kernel_of.contains_key(&i) {
                continue;
            }
            let e = users.entry(i).or_default();
            for k in &mine {
                if !e.0.contains(k) {
                    e.0.push(*k);
                }
            }
            if is_view(&n.op) {
                e.1 += 1;
            } else {
                e.2 = true;
            }
        }
    }

    let mut forced: Vec<NodeId> = lazy_in
        .iter()
        .copied()
        .filter(|id| stored.contains(id))
        .collect();
    forced.sort_unstable();
    let order: Vec<NodeId> = forced.iter().chain(&queued).copied().collect();
    let roots: Vec<NodeId> = order
        .iter()
        .copied()
        .filter(|id| stored.contains(id))
        .collect();

    // Producer sets: the stored nodes each root's expression reaches through unstored nodes; the
    // unstored pending nodes on the way are recomputed by the root's kernel.
    let mut deps = AHashMap::new();
    let mut recomputed = AHashSet::new();
    for &r in &roots {
        deps.insert(r, producers_and(nodes, &stored, r, &mut recomputed));
    }
    let mut recomputed: Vec<NodeId> = recomputed.into_iter().collect();
    recomputed.sort_unstable();
    Analysis {
        order,
        needed,
        roots,
        stored,
        deps,
        recomputed,
    }
}

/// Logs why a value was stored or left lazy (`RUST_LOG=arrayflow::store=debug`).
fn log_decision(n: &NodeInfo, why: &str) {
    tracing::debug!(target: "arrayflow::store", site = %n.site, op = n.op.name(), "{why}");
}

/// Whether rule 2 may store a node: an element-wise value or a random draw (constants and other
/// generators are cheaper to recompute than to load).
fn may_store(n: &NodeInfo) -> bool {
    !matches!(n.op, Op::Const(_)) && n.op.is_fusible()
}

/// The stored pending nodes `root`'s expression reaches through unstored pending nodes.
fn producers(nodes: &NodeTable, stored: &AHashSet<NodeId>, root: NodeId) -> Vec<NodeId> {
    producers_and(nodes, stored, root, &mut AHashSet::new())
}

/// [`producers`], also collecting into `lazy` the unstored pending nodes on the way that the
/// application holds (values it named, as opposed to a statement's temporaries).
fn producers_and(
    nodes: &NodeTable,
    stored: &AHashSet<NodeId>,
    root: NodeId,
    lazy: &mut AHashSet<NodeId>,
) -> Vec<NodeId> {
    let mut found = Vec::new();
    let mut seen = AHashSet::new();
    let mut stack: Vec<NodeId> = nodes[&root].inputs.to_vec();
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
            if !n.released {
                lazy.insert(id);
            }
            stack.extend(n.inputs.iter().copied());
        }
    }
    found
}
