//! The work queue (the seed's 304): compute, release, hint and block-marker entries recorded in
//! program order, waiting for a flush.

pub use crate::ir::{Entry, FlushReason};

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
