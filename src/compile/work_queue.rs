//! The work queue (the seed's 304): compute, release, hint and block-marker entries recorded in
//! program order, waiting for a flush.

use crate::ir::NodeId;
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
}

impl fmt::Display for FlushReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlushReason::Read => "read",
            FlushReason::Threshold => "threshold",
            FlushReason::NonFusible => "non-fusible",
            FlushReason::Hint => "hint",
            FlushReason::Execute => "execute",
            FlushReason::BlockEnd => "block-end",
            FlushReason::Section => "section",
        })
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

/// The queue itself, with the count of compute entries the flush threshold looks at.
#[derive(Debug, Default)]
pub struct WorkQueue {
    entries: Vec<Entry>,
    computes: usize,
}

impl WorkQueue {
    pub fn push(&mut self, e: Entry) {
        if matches!(e, Entry::Compute(_)) {
            self.computes += 1;
        }
        self.entries.push(e);
    }
    pub fn computes(&self) -> usize {
        self.computes
    }
    pub fn is_empty(&self) -> bool {
        self.computes == 0
    }
    /// Takes every entry, leaving the queue empty.
    pub fn take(&mut self) -> Vec<Entry> {
        self.computes = 0;
        std::mem::take(&mut self.entries)
    }
}
