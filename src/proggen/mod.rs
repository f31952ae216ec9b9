//! The program generator (the seed's ProgGen 600): turns one flush's work-queue entries into a
//! program sequence. Backward and forward passes in `liveness`, the scheduling pass (FIG. 6E: ready
//! lists of non-fusible and fusible roots, one fused kernel at a time) here, kernel emission in
//! `builder`; which elements a launch part reads and writes in `access` (seed 004).

pub mod access;
pub mod builder;
pub mod codegen;
pub mod fault;
pub mod kernel;
pub mod liveness;
pub mod part;
pub mod pos;
pub mod regalloc;
pub mod sequence;
pub mod split;

use crate::ir::Entry;
use crate::ir::NodeTable;
use crate::ir::{NodeId, Op};
use ahash::{AHashMap, AHashSet};
use builder::{KernelBuilder, RootDomain};
use sequence::{
    ExecutorKind, Formal, FormalId, FormalRole, IntrinsicCall, Kernel, LaunchSpec, Program,
    ProgramSequence,
};
use std::sync::Arc;

/// Limits the program generator works within.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Elements per CPU work unit.
    pub tile: usize,
    /// Largest instruction estimate of one fused kernel before it is closed.
    pub max_kernel_cost: u32,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            tile: 1024,
            max_kernel_cost: 4000,
        }
    }
}

/// A generated sequence and how its formal buffers relate to IR nodes.
#[derive(Clone)]
pub struct Generated {
    pub sequence: Arc<ProgramSequence>,
    /// Formals bound to buffers that exist before the sequence runs.
    pub inputs: Vec<(FormalId, NodeId)>,
    /// Formals whose buffers become the stored value of a node (outputs and temporaries).
    pub stored: Vec<(FormalId, NodeId)>,
    /// Pending nodes the flush processed (stored, fused or dropped), in order.
    pub processed: Vec<NodeId>,
    /// For each program, the nodes whose values fill its parameter slots.
    pub params: Vec<Vec<NodeId>>,
    /// How many pending nodes were dead (released and unused) and dropped.
    pub eliminated: usize,
    /// Pending nodes the kernels compute without storing (see `liveness`: a later flush that
    /// needs one again stores it).
    pub recomputed: Vec<NodeId>,
    /// For each program, the node each instruction of its fused kernel computes (empty for an
    /// intrinsic), for the debugger's stepper (`debug::step`).
    pub members: Vec<Vec<builder::Member>>,
}

/// Generates the program sequence for `entries`, all of which are taken from the queue.
pub fn generate(
    nodes: &NodeTable,
    entries: &[Entry],
    cfg: &GenConfig,
    policy: liveness::StorePolicy,
) -> Generated {
    let a = liveness::analyse(nodes, entries, policy);
    let mut seq = ProgramSequence::default();
    let mut formal_of: AHashMap<NodeId, FormalId> = AHashMap::new();
    let mut inputs = Vec::new();
    let mut stored = Vec::new();
    let mut params: Vec<Vec<NodeId>> = Vec::new();
    let mut members: Vec<Vec<builder::Member>> = Vec::new();
    let mut done: AHashSet<NodeId> = AHashSet::new();

    let mut formal = |seq: &mut ProgramSequence, id: NodeId| -> FormalId {
        if let Some(&f) = formal_of.get(&id) {
            return f;
        }
        let n = &nodes[&id];
        let role = if !n.is_pending() {
            FormalRole::Input
        } else if n.released {
            FormalRole::Temp
        } else {
            FormalRole::Output
        };
        let f = seq.formals.len() as FormalId;
        seq.formals.push(Formal {
            dtype: n.dtype,
            len: n.len(),
            role,
        });
        formal_of.insert(id, f);
        match role {
            FormalRole::Input => inputs.push((f, id)),
            FormalRole::Output | FormalRole::Temp => stored.push((f, id)),
        }
        f
    };

    let fusible = |id: &NodeId| !matches!(nodes[id].op, Op::Intrinsic(_));
    let mut remaining: Vec<NodeId> = a.roots.clone();
    while !remaining.is_empty() {
        let ready =
            |id: &NodeId, done: &AHashSet<NodeId>| a.deps[id].iter().all(|d| done.contains(d));
        // Non-fusible ready list first, so their consumers become ready for fusion.
        let mut progressed = false;
        let mut i = 0;
        while i < remaining.len() {
            let id = remaining[i];
            if !fusible(&id) && ready(&id, &done) {
                let n = &nodes[&id];
                let Op::Intrinsic(op) = &n.op else {
                    unreachable!()
                };
                let ins: Vec<FormalId> = n.inputs.iter().map(|&i| formal(&mut seq, i)).collect();
                let out = formal(&mut seq, id);
                let call = IntrinsicCall {
                    op: op.clone(),
                    in_shapes: n.inputs.iter().map(|i| nodes[i].shape.clone()).collect(),
                    in_dtypes: n.inputs.iter().map(|i| nodes[i].dtype).collect(),
                    out_shape: n.shape.clone(),
                    dtype: n.dtype,
                };
                seq.programs.push(Program {
                    kernel: Arc::new(Kernel::Intrinsic(call)),
                    inputs: ins,
                    outputs: vec![out],
                    launch: LaunchSpec {
                        domain_len: n.len(),
                        tile: n.len().max(1),
                        tiles: 1,
                        final_stage: false,
                    },
                    executor: ExecutorKind::Cpu,
                    sites: Arc::from([n.site]),
                });
                params.push(Vec::new());
                members.push(Vec::new());
                done.insert(id);
                remaining.remove(i);
                progressed = true;
            } else {
                i += 1;
            }
        }
        // Then one fused kernel from the fusible ready list.
        let Some(first) = remaining
            .iter()
            .copied()
            .find(|id| fusible(id) && ready(id, &done))
        else {
            assert!(
                progressed || remaining.is_empty(),
                "program generator: no root is ready (cycle in the IR)"
            );
            continue;
        };
        let mut kb = KernelBuilder::new(
            nodes,
            &a.stored,
            &done,
            &RootDomain::of(nodes, &nodes[&first]),
        );
        let mut added: AHashSet<NodeId> = AHashSet::new();
        loop {
            let mut grew = false;
            for &id in &remaining {
                if added.contains(&id) || !fusible(&id) || kb.cost() > cfg.max_kernel_cost {
                    continue;
                }
                // Producers must be done, or element-wise stores of this kernel (checked when emitting).
                if !a.deps[&id]
                    .iter()
                    .all(|d| done.contains(d) || added.contains(d))
                {
                    continue;
                }
                if !kb.accepts(&RootDomain::of(nodes, &nodes[&id])) {
                    continue;
                }
                if kb.add_root(id).is_ok() {
                    added.insert(id);
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        assert!(
            !kb.is_empty(),
            "program generator: a ready root did not fit an empty kernel: {:?} {:?}",
            nodes[&first].op,
            nodes[&first]
                .inputs
                .iter()
                .map(|i| (nodes[i].op.clone(), nodes[i].state, nodes[i].queued))
                .collect::<Vec<_>>()
        );
        let (kernel, k_inputs, k_outputs, k_params, k_members) = kb.finish();
        params.push(k_params);
        members.push(k_members);
        let ins: Vec<FormalId> = k_inputs.iter().map(|&i| formal(&mut seq, i)).collect();
        let outs: Vec<FormalId> = k_outputs.iter().map(|&o| formal(&mut seq, o)).collect();
        let len = kernel.domain.len();
        let tiles = len.div_ceil(cfg.tile);
        let mut sites: Vec<_> = kernel.instr_sites.clone();
        sites.dedup();
        seq.programs.push(Program {
            launch: LaunchSpec {
                domain_len: len,
                tile: cfg.tile,
                tiles,
                final_stage: !kernel.reductions.is_empty(),
            },
            kernel: Arc::new(Kernel::Fused(kernel)),
            inputs: ins,
            outputs: outs,
            executor: ExecutorKind::Cpu,
            sites: sites.into(),
        });
        remaining.retain(|id| !added.contains(id));
        done.extend(added);
    }

    let eliminated = a.order.iter().filter(|id| !a.needed.contains(id)).count();
    Generated {
        sequence: Arc::new(seq),
        inputs,
        stored,
        processed: a.order,
        params,
        eliminated,
        recomputed: a.recomputed,
        members,
    }
}
