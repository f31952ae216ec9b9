//! What the stepper keeps of a kernel when stepping is on (`Runtime::set_stepping`): the kernel,
//! its launch and parameter values, its input buffers (pinned in the scheduler, so they outlive
//! their release), the IR node each instruction computes, and the nodes of the flush that ran it.
//! An intrinsic's launch is kept too, as one step (its output buffers pinned as well, so the
//! divergence search can compare its result after the flush released it). The last few kernels
//! are kept, most recent last; evicting one unpins its buffers.

use super::report::Divergence;
use crate::exec::BufferId;
use crate::ir::{NodeId, NodeInfo};
use crate::proggen::builder::Member;
use crate::proggen::kernel::FusedKernel;
use crate::proggen::sequence::{IntrinsicCall, Kernel, LaunchSpec};
use ahash::AHashMap;
use std::collections::VecDeque;
use std::sync::Arc;

/// One kernel as it ran, kept for stepping.
pub struct KernelCapture {
    /// The program's kernel: fused, or an intrinsic's call.
    pub kernel: Arc<Kernel>,
    pub launch: LaunchSpec,
    /// Its parameter values (constants, random streams), by slot.
    pub params: Arc<[u64]>,
    /// The buffer bound to each kernel input (pinned while the capture is kept).
    pub inputs: Vec<BufferId>,
    /// The IR node of each kernel input.
    pub input_nodes: Vec<NodeId>,
    /// The IR node of each kernel output.
    pub outputs: Vec<NodeId>,
    /// The buffer bound to each kernel output (where the kernel ran is asked of the scheduler
    /// through these, so its micro-kernels run there too).
    pub output_buffers: Vec<BufferId>,
    /// The node each instruction computes (`None` for loads; empty for an intrinsic).
    pub members: Vec<Member>,
    /// The flush's nodes as they were recorded (ops, inputs, shapes, call sites, references):
    /// the processed nodes and the kernel's inputs, for the reference values and the
    /// reproducing program.
    pub nodes: Arc<AHashMap<NodeId, NodeInfo>>,
    /// For a kernel of a replayed code reuse section: the node each output has in the replaying
    /// call (`NodeId(u64::MAX)` for one that is not a section output). Its other node ids
    /// (`outputs`, `members`, `input_nodes`, `nodes`) are the recording's, so it is found by
    /// these alone.
    pub replayed: Option<Vec<NodeId>>,
}

impl KernelCapture {
    /// The fused kernel (the callers have checked it is one: [`KernelCapture::intrinsic`]).
    pub fn fused(&self) -> &FusedKernel {
        match &*self.kernel {
            Kernel::Fused(k) => k,
            Kernel::Intrinsic(_) => unreachable!("an intrinsic's capture is not stepped inside"),
        }
    }
    /// The intrinsic's call, when the kept kernel is one.
    pub fn intrinsic(&self) -> Option<&IntrinsicCall> {
        match &*self.kernel {
            Kernel::Intrinsic(c) => Some(c),
            Kernel::Fused(_) => None,
        }
    }
    /// The buffers pinned while it is kept: its inputs, and an intrinsic's outputs.
    pub fn pinned(&self) -> impl Iterator<Item = BufferId> + '_ {
        let outputs = if self.intrinsic().is_some() {
            &self.output_buffers[..]
        } else {
            &[]
        };
        self.inputs.iter().chain(outputs).copied()
    }
    /// Which of its outputs array `id` is (a replayed kernel's by the replaying call's nodes).
    pub fn output_of(&self, id: NodeId) -> Option<usize> {
        self.replayed
            .as_ref()
            .unwrap_or(&self.outputs)
            .iter()
            .position(|&o| o == id)
    }
}

/// The kernels kept for stepping, and the divergences found so far.
#[derive(Default)]
pub struct Captures {
    /// Kernels kept at most (0: stepping is off): the larger of what stepping asks for
    /// (`Runtime::set_stepping`) and what comparison mode keeps to narrow its mismatches
    /// ([`crate::debug::CompareConfig::narrow`]).
    pub keep: usize,
    /// Kernels `Runtime::set_stepping` asked for.
    requested: usize,
    /// Kernels comparison mode keeps for narrowing.
    narrowing: usize,
    kernels: VecDeque<Arc<KernelCapture>>,
    /// First diverging ops found for comparison mode's mismatches, by the mismatch's order.
    pub divergences: Vec<(u64, Option<Divergence>)>,
}

impl Captures {
    /// Keeps `c`; returns the input buffers of the kernels it evicts, to unpin.
    pub fn push(&mut self, c: KernelCapture) -> Vec<BufferId> {
        self.kernels.push_back(Arc::new(c));
        self.trim()
    }

    /// Stepping keeps at least `keep` kernels from now on; returns the buffers to unpin.
    pub fn set_keep(&mut self, keep: usize) -> Vec<BufferId> {
        self.requested = keep;
        self.keep = self.requested.max(self.narrowing);
        self.trim()
    }

    /// Comparison mode keeps at least `keep` kernels to narrow mismatches (0: none); returns
    /// the buffers to unpin.
    pub fn set_narrowing(&mut self, keep: usize) -> Vec<BufferId> {
        self.narrowing = keep;
        self.keep = self.requested.max(self.narrowing);
        self.trim()
    }

    fn trim(&mut self) -> Vec<BufferId> {
        let mut unpin = Vec::new();
        while self.kernels.len() > self.keep {
            if let Some(c) = self.kernels.pop_front() {
                unpin.extend(c.pinned());
            }
        }
        unpin
    }

    /// The most recent kernel that stored `id`, else the most recent that computed it inside (a
    /// replayed kernel is found by its replaying call's outputs only).
    pub fn find(&self, id: NodeId) -> Option<Arc<KernelCapture>> {
        let newest = || self.kernels.iter().rev();
        newest()
            .find(|c| c.replayed.as_ref().unwrap_or(&c.outputs).contains(&id))
            .or_else(|| {
                newest().find(|c| {
                    c.replayed.is_none() && c.members.iter().flatten().any(|(n, _)| *n == id)
                })
            })
            .cloned()
    }
}
