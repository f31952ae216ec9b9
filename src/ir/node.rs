//! The port table: every live IR node, what it computes, and where its data is.

use super::{BufferId, DType, NodeId, Op, Shape, Site, TypedVec};
use smallvec::SmallVec;

/// Where a node's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    /// Recorded in the work queue, not yet compiled.
    Pending,
    /// Has (or will have, once its program runs) a buffer.
    Stored(BufferId),
}

/// One IR node (the seed's port and its parse node).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub op: Op,
    pub inputs: SmallVec<[NodeId; 3]>,
    pub shape: Shape,
    pub dtype: DType,
    /// The user's call site that recorded it.
    pub site: Site,
    pub state: NodeState,
    /// The application dropped its last handle.
    pub released: bool,
    /// Pending nodes that read this one.
    pub users: u32,
    /// Whether the work queue holds a compute entry for it. Constants and generators are lazy
    /// leaves: recomputed inside each kernel that reads them, queued only when read themselves.
    pub queued: bool,
    /// Estimated instructions per element to compute this node from stored data: its op's
    /// [`Op::recompute_cost`] plus that of every unstored producer, counted once per use (0 once
    /// stored). What a kernel that reads this node while it is lazy has to redo.
    pub lazy_cost: u32,
    /// An earlier flush computed this node inside a kernel without storing it while the
    /// application held it: a flush that needs it again stores it (see `proggen::liveness`).
    pub recomputed: bool,
    /// The reference value (comparison mode), from the sequential interpreter.
    pub reference: Option<std::sync::Arc<TypedVec>>,
    /// The magnitude each reference element's allowance scales with (comparison mode, see
    /// `debug::conditioning`); `None`: the reference's own size.
    pub magnitude: Option<std::sync::Arc<Vec<f64>>>,
    /// The op whose allowance comparison mode applies to this result: its own, or for ops that
    /// only move data, their input's.
    pub tolerance_op: &'static str,
    /// The element type whose allowance applies: its own, or f32's for an f64 result computed from
    /// values with f32's rounding (a cast f32 value, and what is computed from it), or its input's
    /// for ops that only move data.
    pub tolerance_dtype: DType,
}

impl NodeInfo {
    /// A node nobody reads yet: not released, no users, not queued, no lazy cost, no reference.
    pub fn new(
        op: Op,
        inputs: SmallVec<[NodeId; 3]>,
        shape: Shape,
        dtype: DType,
        site: Site,
        state: NodeState,
    ) -> NodeInfo {
        let tolerance_op = op.base_name();
        NodeInfo {
            op,
            inputs,
            shape,
            dtype,
            site,
            state,
            released: false,
            users: 0,
            queued: false,
            lazy_cost: 0,
            recomputed: false,
            reference: None,
            magnitude: None,
            tolerance_op,
            tolerance_dtype: dtype,
        }
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn is_pending(&self) -> bool {
        self.state == NodeState::Pending
    }
    pub fn buffer(&self) -> Option<BufferId> {
        match self.state {
            NodeState::Stored(b) => Some(b),
            NodeState::Pending => None,
        }
    }
}

/// All nodes the runtime still knows, by id.
pub type NodeTable = ahash::AHashMap<NodeId, NodeInfo>;
