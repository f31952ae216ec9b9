//! The debugger's stepping hook in the flush: with stepping on (`Runtime::set_stepping`), each
//! kernel of the sequence is kept (`debug::step::capture`) with its parameter values, its input
//! buffers (pinned in the scheduler until the capture is evicted; an intrinsic's outputs too) and
//! the flush's nodes, so a fused kernel can be re-run one operation at a time later and an
//! intrinsic's launch shown as one step; a replayed code reuse section's kernels are kept the same
//! way, with the section's recorded nodes. Off, this costs one atomic load per flush.

use super::macro_cache::MacroEntry;
use super::state::{FrontEnd, Inner};
use crate::debug::step::capture::KernelCapture;
use crate::exec::BufferId;
use crate::ir::{NodeId, NodeInfo};
use crate::proggen::Generated;
use crate::proggen::sequence::{Program, ProgramSequence};
use ahash::AHashMap;
use std::sync::Arc;

impl Inner {
    /// Whether fused kernels are kept for stepping.
    pub(crate) fn stepping(&self) -> bool {
        self.stepping_on.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Changes how many kernels are kept (`f` on the kept ones returns the buffers of those it
    /// dropped): flushes keep kernels while any are kept.
    pub(crate) fn keep_kernels(
        &self,
        f: impl FnOnce(&mut crate::debug::step::capture::Captures) -> Vec<BufferId>,
    ) {
        let unpin = {
            let mut c = self.captures.lock();
            let unpin = f(&mut c);
            self.stepping_on
                .store(c.keep > 0, std::sync::atomic::Ordering::Relaxed);
            unpin
        };
        for b in unpin {
            self.sched.pin(b, false);
        }
    }

    /// Keeps the kernels of a flush about to be handed off (stepping on).
    pub(crate) fn capture_kernels(
        &self,
        fe: &FrontEnd,
        g: &Generated,
        bindings: &[BufferId],
        params: &[Arc<[u64]>],
    ) {
        let node_of: AHashMap<u32, NodeId> = g.inputs.iter().chain(&g.stored).copied().collect();
        let kept = Kept {
            seq: &g.sequence,
            bindings,
            params,
            members: &g.members,
            nodes: Arc::new(recorded_nodes(fe, g)),
        };
        self.keep_programs(&kept, |f| node_of[&f], |_| None);
    }

    /// Keeps the kernels of a replay of `entry` about to be handed off (stepping on),
    /// bound to this call's buffers and parameter values; `outputs`: the node of each of the
    /// section's outputs in this call. Their nodes are the recording's (ops, call sites); the
    /// arrays the replay returns find them.
    pub(crate) fn capture_replay(
        &self,
        entry: &MacroEntry,
        bindings: &[BufferId],
        params: &[Arc<[u64]>],
        outputs: &[NodeId],
    ) {
        let sk = &entry.kernels;
        let replay_node = |f: u32| {
            entry
                .outputs
                .iter()
                .zip(outputs)
                .find(|((g, _, _), _)| *g == f)
                .map_or(NO_NODE, |(_, &id)| id)
        };
        let kept = Kept {
            seq: &entry.seq,
            bindings,
            params,
            members: &sk.members,
            nodes: sk.nodes.clone(),
        };
        self.keep_programs(
            &kept,
            |f| sk.node_of.get(&f).copied().unwrap_or(NO_NODE),
            |p| Some(p.outputs.iter().map(|&f| replay_node(f)).collect()),
        );
    }

    /// Keeps each kernel of `k.seq` with its buffers pinned ([`KernelCapture::pinned`]);
    /// `node`: the node of a formal, `replayed`: a replay's nodes of a program's outputs.
    fn keep_programs(
        &self,
        k: &Kept,
        node: impl Fn(u32) -> NodeId,
        replayed: impl Fn(&Program) -> Option<Vec<NodeId>>,
    ) {
        let mut unpin = Vec::new();
        for (pi, p) in k.seq.programs.iter().enumerate() {
            let inputs: Vec<BufferId> = p.inputs.iter().map(|&f| k.bindings[f as usize]).collect();
            let cap = KernelCapture {
                kernel: p.kernel.clone(),
                launch: p.launch.clone(),
                params: k.params[pi].clone(),
                input_nodes: p.inputs.iter().map(|&f| node(f)).collect(),
                outputs: p.outputs.iter().map(|&f| node(f)).collect(),
                output_buffers: p.outputs.iter().map(|&f| k.bindings[f as usize]).collect(),
                inputs,
                members: k.members.get(pi).cloned().unwrap_or_default(),
                nodes: k.nodes.clone(),
                replayed: replayed(p),
            };
            for b in cap.pinned() {
                self.sched.pin(b, true);
            }
            unpin.extend(self.captures.lock().push(cap));
        }
        for b in unpin {
            self.sched.pin(b, false);
        }
    }
}

/// A program sequence about to be handed off, as [`Inner::keep_programs`] keeps its kernels.
struct Kept<'a> {
    seq: &'a ProgramSequence,
    bindings: &'a [BufferId],
    params: &'a [Arc<[u64]>],
    members: &'a [Vec<crate::proggen::builder::Member>],
    nodes: Arc<AHashMap<NodeId, NodeInfo>>,
}

/// A node no array has (a replayed kernel's result that is not one of the section's outputs).
const NO_NODE: NodeId = NodeId(u64::MAX);

/// The nodes a flush of `g` processed and the inputs they read, as recorded (taken before the
/// port table drops the intermediates).
pub(crate) fn recorded_nodes(fe: &FrontEnd, g: &Generated) -> AHashMap<NodeId, NodeInfo> {
    let mut nodes = AHashMap::new();
    for id in &g.processed {
        if let Some(n) = fe.nodes.get(id) {
            for i in &n.inputs {
                if let Some(input) = fe.nodes.get(i) {
                    nodes.entry(*i).or_insert_with(|| input.clone());
                }
            }
            nodes.insert(*id, n.clone());
        }
    }
    for &(_, id) in &g.inputs {
        if let Some(n) = fe.nodes.get(&id) {
            nodes.entry(id).or_insert_with(|| n.clone());
        }
    }
    nodes
}
