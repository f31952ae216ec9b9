//! The intermediate representation and the vocabulary shared by every stage (layer 0): element
//! types, scalars, shapes, call sites, the operations an IR node can hold, the port table's nodes
//! (`node.rs`), host values (`value.rs`), the work queue's entries and flush reasons (`queue.rs`)
//! and a random generator's state (`rng.rs`).

mod dtype;
mod node;
mod op;
mod queue;
mod rng;
mod shape;
mod value;

pub use crate::primitives::{BinaryOp, ReduceOp, UnaryOp};
pub use dtype::{DType, Scalar};
pub use node::{NodeInfo, NodeState, NodeTable};
pub use op::{
    ConvMode, FftNorm, FoldMode, GenKind, Intrinsic, IntrinsicOutput, Op, RandomDist, RngAlgorithm,
};
pub use queue::{Entry, FlushReason};
pub use rng::RngState;
pub use shape::{Shape, broadcast_shapes, contiguous_strides, numel, unit_reshape};
pub use value::{TypedVec, collect, ravel, source_indices, unravel};

/// A call site in the user's program: the seed's "program counter". Every public API function is
/// `#[track_caller]` and records one.
pub type Site = &'static std::panic::Location<'static>;

/// Identifies an IR node (the seed's port) for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u64);

/// Identifies a buffer for the life of the process (never reused; its memory may be).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u64);
