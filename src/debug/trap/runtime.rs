//! The runtime's trap controls: `Runtime::traps`, `Runtime::trapped`, `Runtime::take_traps` and
//! `Runtime::resume`.

use super::TrapConfig;
use super::report::Trap;
use crate::api::Runtime;
use crate::runtime::Inner;

impl Runtime {
    /// Turns traps on or off for the kernels generated from now on (process-wide; the default
    /// comes from `ARRAYFLOW_TRAP`). Arrays recorded but not yet computed are checked under
    /// the configuration in force when their kernel is generated.
    ///
    /// ```
    /// use arrayflow::{Array, ErrorKind, Runtime, debug::trap::TrapConfig};
    /// Runtime::traps(TrapConfig::nan().inf());
    /// let x = Array::from_slice(&[4.0f32, -1.0, 9.0], &[3]);
    /// let e = x.sqrt().to_vec().unwrap_err(); // sqrt(-1) is NaN
    /// assert_eq!(e.kind(), ErrorKind::Trap);
    /// let t = Runtime::take_traps().pop().unwrap();
    /// assert_eq!((t.op.as_str(), t.element), ("sqrt", 1));
    /// Runtime::traps(TrapConfig::off());
    /// ```
    pub fn traps(config: TrapConfig) {
        super::set(config);
    }
    /// The trap configuration in force (`TrapConfig::off()` when none).
    pub fn trap_config() -> TrapConfig {
        super::current().unwrap_or_default()
    }
    /// Every trap recorded since the last [`Runtime::take_traps`], oldest first.
    pub fn trapped() -> Vec<Trap> {
        super::report::all()
    }
    /// Every trap recorded, oldest first; the list is emptied.
    pub fn take_traps() -> Vec<Trap> {
        super::report::take()
    }
    /// Runs the passes left of every launch a trap suspended (see [`TrapConfig::passes`]), on
    /// every executor, then the work that waited for them; returns how many launches were
    /// resumed. A launch that traps
    /// again in a later pass is suspended again. Reads after this see the finished results.
    pub fn resume() -> crate::Result<usize> {
        Inner::get().sched.resume()
    }
}
