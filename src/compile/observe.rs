//! A test hook at the hand-off: with keeping on ([`keep_sequences`]), every program sequence
//! handed off is kept (the last [`KEPT_MAX`]), so a test can analyse the kernels its flushes made
//! (the access-pattern tests, `proggen::access`). Off, this costs one atomic load per hand-off.

use crate::proggen::sequence::ProgramSequence;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sequences kept at most (the oldest leave first).
pub const KEPT_MAX: usize = 64;

static KEEP: AtomicBool = AtomicBool::new(false);
static KEPT: Mutex<Vec<Arc<ProgramSequence>>> = Mutex::new(Vec::new());

/// Turns keeping on or off (off also drops what was kept). Process-wide.
pub fn keep_sequences(on: bool) {
    KEEP.store(on, Ordering::Relaxed);
    if !on {
        KEPT.lock().clear();
    }
}

/// The sequences kept since the last call, oldest first.
pub fn take_sequences() -> Vec<Arc<ProgramSequence>> {
    std::mem::take(&mut *KEPT.lock())
}

/// Called by the hand-off for each sequence.
pub(crate) fn observe(seq: &Arc<ProgramSequence>) {
    if !KEEP.load(Ordering::Relaxed) {
        return;
    }
    let mut k = KEPT.lock();
    if k.len() >= KEPT_MAX {
        k.remove(0);
    }
    k.push(seq.clone());
}
