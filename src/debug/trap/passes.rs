//! Resumable launches in passes (the secondary seed 001's re-launch loop, on the CPU tile VM):
//! [`TrapSink`] collects the first failing element of a launch as its tiles run, and
//! [`Progress`] is where a launch cut into passes stands: the next tile, and the reduction
//! partials of the tiles that ran. A launch whose pass trapped stays suspended in the CPU
//! executor (`exec/cpu/suspend.rs`): its results read as the trap's error, tasks that read them
//! wait, other work goes on, and `Runtime::resume` runs the passes left.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first failing element of a launch: the lowest linear index, and among checks failing at
/// that element the first check of the kernel (the op nearest the inputs).
#[derive(Default)]
pub struct TrapSink {
    hit: AtomicBool,
    first: Mutex<Option<(usize, usize, f64)>>,
}

impl TrapSink {
    /// Check `check` failed at element `lin` with `value`.
    pub fn offer(&self, lin: usize, check: usize, value: f64) {
        let mut f = self.first.lock();
        if f.is_none_or(|(l, c, _)| (lin, check) < (l, c)) {
            *f = Some((lin, check, value));
        }
        self.hit.store(true, Ordering::Relaxed);
    }
    /// The first failure so far: `(element, check, value)`.
    pub fn first(&self) -> Option<(usize, usize, f64)> {
        if !self.hit.load(Ordering::Relaxed) {
            return None;
        }
        *self.first.lock()
    }
}

/// Where a launch in passes stands.
#[derive(Default)]
pub struct Progress {
    /// The first tile not run yet.
    pub next_tile: usize,
    /// The reduction partials of the tiles run, in tile order (as one launch makes them).
    pub partials: Vec<crate::exec::cpu::vm::TaskPartials>,
}
