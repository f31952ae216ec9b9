//! What a trap reports ([`Trap`]) and where reports go: the process-wide list behind
//! `Runtime::trapped()`, and the [`crate::ErrorKind::Trap`] error the trapped launch fails (or
//! stays suspended) with, which every read of its results and of results computed from them
//! returns.

use super::check::{TrapCheck, TrapPred, unravel};
use crate::error::{Error, ErrorKind};
use crate::ir::Site;
use parking_lot::Mutex;

/// What kind of check fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapKind {
    /// A NaN result.
    Nan,
    /// An infinite result.
    Inf,
    /// A user assertion failed (`assert_true`, `assert_finite`, `assert_in_range`).
    Assertion,
    /// An index out of range (gather, scatter, bincount).
    Index,
}

/// One trap: the first failing element of one launch (lowest linear index; among checks failing
/// at the same element, the earliest op of the kernel, which is where a NaN started).
#[derive(Debug, Clone, PartialEq)]
pub struct Trap {
    /// What fired.
    pub kind: TrapKind,
    /// The op whose result failed (`div`, `log`, `gather`, ...).
    pub op: String,
    /// Where that op was recorded.
    pub site: Site,
    /// The failing element's row-major index in the op's result (for an index trap: the
    /// position in the index array).
    pub element: usize,
    /// The same element's coordinates.
    pub index: Vec<usize>,
    /// The failing value (for an index trap: the index).
    pub value: f64,
    /// An assertion's message.
    pub message: Option<String>,
    /// When the launch ran in passes: the pass that trapped and how many the launch has.
    pub pass: Option<(usize, usize)>,
    /// Whether the launch is suspended (`Runtime::resume` finishes it) rather than failed.
    pub suspended: bool,
    /// Whether the device that ran the kernel found the element itself (its first-failing
    /// word, [`super::device`]); the CPU, re-running it, found the same element and the value.
    /// `false` when the CPU ran the kernel or searched the whole launch.
    pub device: bool,
}

impl std::fmt::Display for Trap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            TrapKind::Nan => "NaN trap".to_string(),
            TrapKind::Inf => "infinity trap".to_string(),
            TrapKind::Assertion => format!(
                "assertion failed ({})",
                self.message.as_deref().unwrap_or("")
            ),
            TrapKind::Index => "index trap".to_string(),
        };
        write!(
            f,
            "{what}: `{}` at {} gave {} at element {} (index {:?})",
            self.op, self.site, self.value, self.element, self.index
        )?;
        if let Some((p, n)) = self.pass {
            write!(f, ", in pass {} of {n}", p + 1)?;
        }
        Ok(())
    }
}

impl Trap {
    /// The report of check `c` failing at element `lin` with `value`.
    pub fn of_check(c: &TrapCheck, lin: usize, value: f64) -> Trap {
        let kind = match c.pred {
            _ if c.message.is_some() => TrapKind::Assertion,
            TrapPred::Nan | TrapPred::Inf | TrapPred::NonFinite if value.is_nan() => TrapKind::Nan,
            TrapPred::Nan | TrapPred::Inf | TrapPred::NonFinite => TrapKind::Inf,
            _ => TrapKind::Assertion,
        };
        Trap {
            kind,
            op: c.op.to_string(),
            site: c.site,
            element: lin,
            index: unravel(lin, &c.shape),
            value,
            message: c.message.as_deref().map(str::to_string),
            pass: None,
            suspended: false,
            device: false,
        }
    }

    /// The error a read of the trapped launch's results returns.
    pub fn error(&self) -> Error {
        let hint = if self.suspended {
            "Runtime::trapped() lists traps; Runtime::resume() finishes the suspended launch"
        } else {
            "Runtime::trapped() lists traps; Runtime::traps(TrapConfig::off()) turns NaN/Inf/index traps off"
        };
        Error::new(ErrorKind::Trap, format!("trap: {self}"))
            .origin(self.site)
            .hint(hint)
    }
}

static LOG: Mutex<Vec<Trap>> = Mutex::new(Vec::new());

/// Records a trap (for `Runtime::trapped()`) and returns its error.
pub fn record(t: Trap) -> Error {
    tracing::debug!(target: "arrayflow::debug", "{t}");
    let e = t.error();
    LOG.lock().push(t);
    e
}

/// Every trap recorded since the last [`take`], oldest first.
pub fn all() -> Vec<Trap> {
    LOG.lock().clone()
}

/// Every trap recorded, oldest first; the list is emptied.
pub fn take() -> Vec<Trap> {
    std::mem::take(&mut *LOG.lock())
}

/// Marks the last trap recorded as found by the device at `element` (an index trap of an
/// intrinsic the CPU re-ran); `false`, marking nothing, when the CPU named another element.
pub(crate) fn found_on_device(element: usize) -> bool {
    match LOG.lock().last_mut() {
        Some(t) if t.element == element => {
            t.device = true;
            true
        }
        _ => false,
    }
}

/// Marks every suspended trap resumed (they stay in the list).
pub(crate) fn resumed() {
    for t in LOG.lock().iter_mut() {
        t.suspended = false;
    }
}

thread_local! {
    /// An index trap an intrinsic found on this thread, for the CPU executor to complete with the
    /// op's call site.
    static INDEX_TRAP: std::cell::RefCell<Option<Trap>> = const { std::cell::RefCell::new(None) };
}

/// An intrinsic's index out of range: with index traps on, a trap (completed with the call site
/// by [`finish_index_trap`]); otherwise the execution error `message`.
pub fn index_fault(
    op: &str,
    message: String,
    pos: usize,
    index_shape: &[usize],
    value: f64,
) -> Error {
    if !super::current().is_some_and(|c| c.index) {
        return crate::intrinsics::cpu::exec_error(message);
    }
    INDEX_TRAP.with(|t| {
        *t.borrow_mut() = Some(Trap {
            kind: TrapKind::Index,
            op: op.to_string(),
            site: std::panic::Location::caller(),
            element: pos,
            index: unravel(pos, index_shape),
            value,
            message: Some(message.clone()),
            pass: None,
            suspended: false,
            device: false,
        })
    });
    Error::new(ErrorKind::Trap, format!("trap: {message}"))
}

/// Completes an index trap raised on this thread by an intrinsic recorded at `site`: records
/// it and returns its error (`e` unchanged when there was none).
pub fn finish_index_trap(e: Error, site: Option<Site>) -> Error {
    match INDEX_TRAP.with(|t| t.borrow_mut().take()) {
        Some(mut t) if e.kind == ErrorKind::Trap => {
            if let Some(s) = site {
                t.site = s;
            }
            record(t)
        }
        _ => e,
    }
}
