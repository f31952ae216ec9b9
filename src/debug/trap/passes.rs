//! Resumable launches in passes (the secondary seed 001's re-launch loop, on the CPU tile VM):
//! [`TrapSink`] collects the first failing element of a launch as its tiles run, and
//! [`Progress`] is where a launch cut into passes stands: the next tile, and the reduction
//! partials of the tiles that ran. A launch whose pass trapped stays suspended in the CPU
//! executor (`exec/cpu/suspend.rs`): its results read as the trap's error, tasks that read them
//! wait, other work goes on, and `Runtime::resume` runs the passes left. [`first_failing`] is the
//! tile VM's test of one check over a tile.

use super::check::TrapCheck;
use crate::exec::cpu::slices::Src;
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

/// Element `i` of a tile as f64 (complex values as 0).
fn at(s: &Src, i: usize) -> f64 {
    match s {
        Src::F32(v) => v[i] as f64,
        Src::F64(v) => v[i],
        Src::I32(v) => v[i] as f64,
        Src::U32(v) => v[i] as f64,
        Src::Bool(v) => v[i] as u8 as f64,
        Src::C64(_) | Src::C128(_) => 0.0,
    }
}

fn tile_len(s: &Src) -> usize {
    match s {
        Src::F32(v) => v.len(),
        Src::F64(v) => v.len(),
        Src::I32(v) => v.len(),
        Src::U32(v) => v.len(),
        Src::Bool(v) => v.len(),
        Src::C64(_) | Src::C128(_) => 0,
    }
}

/// The first element of a tile `v` that fails check `c`, with its value as f64; `operands` are
/// the instruction's operand tiles (a NaN/Inf trap fires only where the op created the value).
/// Complex values are not checked.
pub fn first_failing(c: &TrapCheck, v: Src, operands: &[Src]) -> Option<(usize, f64)> {
    (0..tile_len(&v)).find_map(|i| {
        let x = at(&v, i);
        let fails = if c.on_created() {
            c.pred.created(x, operands.iter().map(|o| at(o, i)))
        } else {
            c.pred.fails(x)
        };
        fails.then_some((i, x))
    })
}
