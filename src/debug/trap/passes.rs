//! Resumable launches in passes (the secondary seed 001's re-launch loop): [`Geometry`] is how a
//! launch is cut (whole tiles per pass, the same elements on every executor); on the CPU tile
//! VM, [`TrapSink`] collects the first failing element of a launch as its tiles run, and
//! [`Progress`] is where a launch cut into passes stands: the next tile, and the reduction
//! partials of the tiles that ran. A launch whose pass trapped stays suspended in the executor
//! that ran it (`exec/cpu/suspend.rs`; on a device, `exec/gpu/passes.rs`, which dispatches each
//! pass over its range of elements, or of a reduction's work-group slots): its results read as the trap's
//! error, tasks that read them wait, other work goes on, and `Runtime::resume` runs the passes
//! left. [`first_failing`] is the tile VM's test of one check over a tile.

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

/// How a launch of `len` elements in tiles of `tile` is cut into passes of about `pass_elements`
/// elements: whole tiles per pass, as the tile VM cuts it (`exec/cpu/vm.rs`, `run_checked`), so
/// the device executors, which dispatch each pass of an element-wise kernel over its range of
/// elements, cut at the same elements and a trap names the same pass on every executor. (A
/// device cuts a reduction's launch into runs of its work-group slots instead, with the same
/// type over those units: `exec/gpu/passes.rs`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// The launch's elements.
    pub len: usize,
    /// Elements per pass (the last may have fewer).
    pub per_pass: usize,
    /// How many passes.
    pub passes: usize,
}

impl Geometry {
    /// The passes of a launch of `len` elements in tiles of `tile` (a launch shorter than the
    /// tile is one tile), about `pass_elements` each.
    pub fn new(len: usize, tile: usize, pass_elements: usize) -> Geometry {
        let tile = tile.min(len).max(1);
        let per_pass = pass_elements.max(1).div_ceil(tile) * tile;
        Geometry {
            len,
            per_pass,
            passes: len.div_ceil(per_pass),
        }
    }
    /// Pass `p`'s elements, `first .. end`.
    pub fn range(&self, p: usize) -> (usize, usize) {
        let first = (p * self.per_pass).min(self.len);
        (first, (first + self.per_pass).min(self.len))
    }
}

/// Where a launch in passes stands.
#[derive(Default)]
pub struct Progress {
    /// The first tile not run yet.
    pub next_tile: usize,
    /// The reduction partials of the tiles run, in tile order (as one launch makes them).
    pub partials: Vec<crate::exec::cpu::vm::TaskPartials>,
    /// The host's time in the passes run so far (the profiler records the launch with their sum
    /// when its last pass ends, however often it was suspended).
    pub host_ns: u64,
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

#[cfg(test)]
mod tests {
    use super::Geometry;

    #[test]
    fn passes_are_whole_tiles_and_cover_the_launch() {
        let g = Geometry::new(20_000, 1024, 3000);
        assert_eq!((g.per_pass, g.passes), (3072, 7));
        assert_eq!((g.range(0), g.range(6)), ((0, 3072), (18_432, 20_000)));
        // Longer than the launch, or a launch shorter than a tile: one pass.
        assert_eq!(Geometry::new(20_000, 1024, 1 << 20).passes, 1);
        assert_eq!(Geometry::new(100, 1024, 10).passes, 1);
        assert_eq!(Geometry::new(0, 1024, 10).passes, 0);
    }
}
