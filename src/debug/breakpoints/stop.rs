//! A stop: why the application stopped, where, and what can be done there (inspect the live
//! arrays, read or print any of them, edit values, manage breakpoints, step).

use super::breakpoint::{Breakpoint, BreakpointId, BreakpointInfo};
use super::values::{self, Source, Values};
use super::{DebugMode, with_session};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, NodeId, Op, Site};
use crate::runtime::Inner;

/// An array the debugger can name: `#<id>` in the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayId(pub(crate) NodeId);

impl ArrayId {
    /// The array `a` currently is.
    pub fn of<T: crate::Element>(a: &crate::Array<T>) -> ArrayId {
        ArrayId(a.h.id)
    }
    /// Its number (as `#n` prints it).
    pub fn number(self) -> u64 {
        self.0.0
    }
}

impl std::fmt::Display for ArrayId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&format!("#{}", self.0.0))
    }
}

/// Why the application stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A breakpoint was hit (`hits` times so far, this one included).
    Breakpoint {
        /// Its number.
        id: BreakpointId,
        /// Hits so far.
        hits: u64,
    },
    /// A watched array got a new value from an in-place operation (recorded, not yet computed).
    Watch {
        /// The watchpoint's number.
        id: BreakpointId,
        /// Hits so far.
        hits: u64,
    },
    /// The runtime computed a watched array: the flush that computes its value (its first read
    /// or `eval`, `Runtime::execute`, or a flush of work that needs it) was handed to the
    /// executors. The stop is at the array's own call site.
    Computed {
        /// The watchpoint's number.
        id: BreakpointId,
        /// Hits so far.
        hits: u64,
    },
    /// A step asked to stop at the next API call.
    Step,
}

/// An array the application holds at a stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveArray {
    /// How to name it to the debugger.
    pub id: ArrayId,
    /// The name given with [`crate::Array::named`], if any.
    pub name: Option<String>,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// The op that computes it (`add`, `sum`, `source` for written data, ...).
    pub op: String,
    /// Where it was recorded.
    pub site: Site,
    /// Whether it is still pending (recorded, not yet computed by the runtime).
    pub pending: bool,
    /// The executors that hold its value (`cpu`, `opencl:0`, ...; where its program runs while
    /// it is computed); empty while pending or for a constant.
    pub devices: Vec<String>,
}

impl std::fmt::Display for LiveArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<6} {:<8} {:<5} {:<14} {:<10} {}",
            self.id.to_string(),
            self.name.as_deref().unwrap_or("-"),
            self.dtype.to_string(),
            format!("{:?}", self.shape),
            self.op,
            self.site
        )?;
        if self.pending {
            write!(f, " (pending)")?;
        }
        if !self.devices.is_empty() && self.devices != ["cpu"] {
            write!(f, " on {}", self.devices.join(","))?;
        }
        Ok(())
    }
}

/// The application stopped: passed to the callback of [`crate::Debugger::on_stop`], on the
/// thread that recorded the op. Values are read as the debugger's mode says (non-intrusive by
/// default: evaluated on a clone of the pending work, see [`DebugMode`]).
pub struct Stop {
    pub(crate) reason: StopReason,
    pub(crate) node: NodeId,
    pub(crate) site: Site,
    pub(crate) mode: DebugMode,
    pub(crate) step: bool,
}

impl Stop {
    /// Why it stopped.
    pub fn reason(&self) -> &StopReason {
        &self.reason
    }
    /// The call site of the API call that stopped (at a [`StopReason::Computed`] stop: where the
    /// watched array was recorded).
    pub fn site(&self) -> Site {
        self.site
    }
    /// The debugger's mode.
    pub fn mode(&self) -> DebugMode {
        self.mode
    }
    /// The array that API call recorded (at a [`StopReason::Computed`] stop: the watched array).
    pub fn array(&self) -> ArrayId {
        ArrayId(self.node)
    }
    fn source(&self) -> Source {
        match self.mode {
            DebugMode::NonIntrusive => Source::Clone,
            DebugMode::Intrusive | DebugMode::Reproducible => Source::Materialise,
        }
    }
    /// The value of the array recorded at the stop.
    pub fn values(&self) -> Result<Values> {
        self.values_of(self.array())
    }
    /// The value of any array the runtime knows (see [`Stop::live`]).
    pub fn values_of(&self, id: ArrayId) -> Result<Values> {
        values::value_of(id.0, self.source(), self.site)
    }
    /// The value of array `id` as a vector of `T` (an error naming the type if it is not `T`).
    pub fn read<T: crate::Element>(&self, id: ArrayId) -> Result<Vec<T>> {
        let v = self.values_of(id)?;
        v.as_slice::<T>().map(<[T]>::to_vec).ok_or_else(|| {
            Error::new(
                ErrorKind::DType,
                format!("array {id} holds {} elements, not {}", v.dtype(), T::DTYPE),
            )
            .at(self.site)
        })
    }
    /// NumPy-style text of array `id`, or of the part `slice` selects (`"[0:3, 1]"`; `""` for
    /// all of it).
    pub fn print(&self, id: ArrayId, slice: &str) -> Result<String> {
        let v = self.values_of(id)?;
        let spec = super::print::parse_slice(slice, self.site)?;
        Ok(super::print::render(&super::print::slice(
            &v, &spec, self.site,
        )?))
    }
    /// The arrays the application holds now (not dropped), oldest first. Scalar constants that
    /// are operands of the call being recorded are left out.
    pub fn live(&self) -> Vec<LiveArray> {
        let names = with_session(|s| s.names.clone()).unwrap_or_default();
        let inner = Inner::get();
        let fe = inner.fe.lock();
        let mut buffers = Vec::new();
        let mut v: Vec<LiveArray> = fe
            .nodes
            .iter()
            .filter(|(id, n)| {
                let operand = matches!(n.op, Op::Const(_)) && n.shape.is_empty();
                !n.released && (!operand || names.contains_key(id))
            })
            .map(|(&id, n)| {
                buffers.push(n.buffer());
                LiveArray {
                    id: ArrayId(id),
                    name: names.get(&id).cloned(),
                    shape: n.shape.to_vec(),
                    dtype: n.dtype,
                    op: n.op.name(),
                    site: n.site,
                    pending: n.is_pending(),
                    devices: Vec::new(),
                }
            })
            .collect();
        drop(fe);
        // Where each value lives, asked of the scheduler outside the front end's lock.
        let exec_names = inner.sched.executor_names();
        for (a, b) in v.iter_mut().zip(buffers) {
            if let Some(b) = b {
                let on = inner.sched.holders(b);
                a.devices = (0..exec_names.len())
                    .filter(|&i| on & (1 << i) != 0)
                    .map(|i| exec_names[i].clone())
                    .collect();
            }
        }
        v.sort_by_key(|a| a.id);
        v
    }
    /// The array named `name` ([`crate::Array::named`]), or `#n`.
    pub fn find(&self, name: &str) -> Option<ArrayId> {
        if let Some(n) = name.strip_prefix('#') {
            let id = NodeId(n.parse().ok()?);
            return Inner::get()
                .fe
                .lock()
                .nodes
                .contains_key(&id)
                .then_some(ArrayId(id));
        }
        with_session(|s| {
            s.names
                .iter()
                .filter(|(_, n)| *n == name)
                .map(|(&id, _)| ArrayId(id))
                .max()
        })
        .flatten()
    }
    /// Replaces the whole value of array `id` (same type and length): what is recorded after the
    /// stop reads the new value, what was recorded before keeps the old one. Runs what is
    /// pending first (editing is intrusive whatever the mode).
    pub fn set<T: crate::Element>(&self, id: ArrayId, data: &[T]) -> Result<()> {
        values::set_value(id.0, T::typed_vec(data.to_vec()), self.site)
    }
    /// Sets one element (`index` per axis) of array `id`, as [`Stop::set`].
    pub fn set_element<T: crate::Element>(&self, id: ArrayId, index: &[usize], v: T) -> Result<()> {
        let mut data = self.read::<T>(id)?;
        let shape = self.values_of(id)?.shape;
        if index.len() != shape.len() || index.iter().zip(&shape).any(|(&i, &n)| i >= n) {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("index {index:?} is out of range for array {id} of shape {shape:?}"),
            )
            .at(self.site));
        }
        data[crate::ir::ravel(index, &shape)] = v;
        self.set(id, &data)
    }
    /// Steps inside the fused kernel that computed array `id` (the seed's micro-kernels, see
    /// [`crate::Runtime::step_kernel`]): one record per IR node of the kernel with its values at
    /// `scope` (an intrinsic's result: one step, its own). A pending array is computed first
    /// (intrusive whatever the mode); the kernel must have been kept
    /// ([`crate::Runtime::set_stepping`]; the console keeps the last 8).
    pub fn step_kernel(
        &self,
        id: ArrayId,
        scope: crate::StepScope,
    ) -> Result<Vec<crate::StepRecord>> {
        Inner::get().step_records(id.0, self.site, &scope)
    }
    /// Stops again at the next API call that records a result.
    pub fn step(&mut self) {
        self.step = true;
    }
    /// Adds a breakpoint at `file:line`.
    pub fn break_at(&self, file: &str, line: u32) -> BreakpointId {
        super::add(Breakpoint::at(file, line))
    }
    /// Adds a breakpoint.
    pub fn add(&self, bp: Breakpoint) -> BreakpointId {
        super::add(bp)
    }
    /// Deletes breakpoint `id`; `false` if there is none.
    pub fn delete(&self, id: BreakpointId) -> bool {
        super::delete(id)
    }
    /// Enables or disables breakpoint `id`; `false` if there is none.
    pub fn enable(&self, id: BreakpointId, on: bool) -> bool {
        super::enable(id, on)
    }
    /// Every breakpoint and watchpoint, with its hits.
    pub fn breakpoints(&self) -> Vec<BreakpointInfo> {
        super::breakpoints()
    }
}
