//! Hooks on the flush. A test hook at the hand-off: with keeping on ([`keep_sequences`]), every
//! program sequence handed off is kept (the last [`KEPT_MAX`]), so a test can analyse the
//! kernels its flushes made (the access-pattern tests, `proggen::access`). Off, this costs one
//! atomic load per hand-off. And the debugger's watchpoints ([`FlushHooks`]): which nodes a
//! flush computed, and where the call that flushed is done.

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

/// The debugger's watchpoint hooks (`debug::breakpoints`, a layer above, registers them when a
/// debugger first attaches): `computed` sees the nodes each flush computed, under the front
/// end's lock; `settled` runs on the same thread once the call that flushed has released the
/// lock, where a stop may run the application's callback. Unregistered, each costs one atomic
/// load per flush or trigger.
#[derive(Clone, Copy)]
pub struct FlushHooks {
    /// The nodes one flush computes: those it stores and those its kernels compute without
    /// storing (`proggen::Generated::stored`, `recomputed`).
    pub computed: fn(&[crate::ir::NodeId]),
    /// The call that flushed released the front end's lock.
    pub settled: fn(),
}

/// The registered hooks (set once).
pub static FLUSH_HOOKS: std::sync::OnceLock<FlushHooks> = std::sync::OnceLock::new();

/// Whether the hooks are registered (a debugger attached once).
#[inline]
pub(crate) fn hooked() -> bool {
    FLUSH_HOOKS.get().is_some()
}

/// Tells the hooks which nodes a flush computed.
#[inline]
pub(crate) fn computed(ids: &[crate::ir::NodeId]) {
    if let Some(h) = FLUSH_HOOKS.get() {
        (h.computed)(ids)
    }
}

/// Tells the hooks that a trigger released the front end's lock.
#[inline]
pub(crate) fn settled() {
    if let Some(h) = FLUSH_HOOKS.get() {
        (h.settled)()
    }
}
