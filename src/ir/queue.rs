//! The work queue's vocabulary, shared by the C-Scheduler (`compile/`) that fills and flushes the
//! queue, the program generator that reads it and the counters: its entries and why it is flushed.

use super::NodeId;
use std::fmt;

/// Why the queue was flushed. Counted in `Runtime::stats()` and logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlushReason {
    /// The application read a pending result.
    Read,
    /// The queue grew past its threshold.
    Threshold,
    /// A non-fusible operation entered an empty queue.
    NonFusible,
    /// A `hint_read` on a pending array.
    Hint,
    /// `Runtime::execute()`.
    Execute,
    /// The outermost `end_block()`.
    BlockEnd,
    /// Entering or ending a code reuse section.
    Section,
}

impl FlushReason {
    /// Every reason, in declaration order.
    pub const ALL: [FlushReason; 7] = [
        FlushReason::Read,
        FlushReason::Threshold,
        FlushReason::NonFusible,
        FlushReason::Hint,
        FlushReason::Execute,
        FlushReason::BlockEnd,
        FlushReason::Section,
    ];
    /// The reason's position in [`FlushReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
    /// How logs and the profiler name the reason.
    pub fn name(self) -> &'static str {
        match self {
            FlushReason::Read => "read",
            FlushReason::Threshold => "threshold",
            FlushReason::NonFusible => "non-fusible",
            FlushReason::Hint => "hint",
            FlushReason::Execute => "execute",
            FlushReason::BlockEnd => "block-end",
            FlushReason::Section => "section",
        }
    }
}

impl fmt::Display for FlushReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One work-queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A node to compute.
    Compute(NodeId),
    /// The application dropped its last handle to a pending node.
    Release(NodeId),
    /// The application will read this node soon.
    HintRead(NodeId),
    BlockBegin,
    BlockEnd,
}
