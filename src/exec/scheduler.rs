//! The execution scheduler (the seed's E-Scheduler 800) on its own thread. It turns instantiated
//! program sequences into executor messages, keeps the pending-operation table keyed by buffer
//! (FIG. 7C), tracks each buffer's state, users and which executors hold a copy of it, routes each
//! program to an executor (the chosen device, or the CPU where the device cannot run it), moves data
//! between executors when a program needs it elsewhere, serves reads, frees released buffers, and
//! propagates failures so every result of a failed program reads as invalid.
//!
//! **Split launches** (issue 25, seed 002): with a device live and a split mode set
//! (`ARRAYFLOW_SPLIT`, `Runtime::split`; `exec::split`), a fused kernel may become one part task
//! per executor plus the tasks joining their outputs (`scheduler/split_tasks.rs`); the parts read
//! slices of their inputs. Without a device, or with the mode off, `submit` checks one `Option`
//! per sequence and `launch` and `forget` one empty map per task and buffer: nothing else.
//!
//! **Synchronous calls.** The scheduler's state ([`SchedulerLoop`]) sits behind a mutex with its
//! message queue. The thread waits until a message is queued, takes the state, and handles every
//! queued message in order. When the runtime has no device executor, the application's own
//! messages (submissions, reads, releases, uploads, waits) are handled on the calling thread
//! instead ([`Scheduler::send`]): it takes the state, handles what is queued before its message,
//! then its message, so the order is the queue's either way and there is one implementation of
//! each. Messages for the CPU executor made during such a call are held back, and run on the
//! calling thread (under the CPU executor's own state lock, its queue first) when the CPU
//! executor's thread has no task of its own; otherwise they are queued to it in order.
//!
//! **The small-step fast path** (issue 17) is a branch of this: [`Scheduler::submit_small`] runs
//! a sequence of at most [`INLINE_MAX_ELEMENTS`] elements entirely on the calling thread when
//! nothing else is outstanding, with the very code the threads run (launch, the CPU executor's
//! compute, completion), so buffer states, failures, counters and flow control end as they would
//! have; the read that follows finds its buffer ready and is served on the same thread.

mod split_tasks;

use super::FlowControl;
use super::wait::Spin;
use super::{BufferId, ExecHandle, TypedVec};
use crate::counters::Counters;
use crate::error::{Error, ErrorKind, Result};
use crate::proggen::sequence::{Kernel, Program, ProgramSequence};
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A program sequence bound to actual buffers: `bindings[formal]` is the buffer of each formal.
#[derive(Debug, Clone)]
pub struct Instance {
    pub seq: Arc<ProgramSequence>,
    pub bindings: Vec<BufferId>,
    /// Each program's parameter values (constants, random streams), in slot order.
    pub params: Vec<Arc<[u64]>>,
    /// When the flush (or replay) that made it began: the device executor measures the host time
    /// from there to the kernel's launch.
    pub started: std::time::Instant,
    /// Buffers the application has released as of this sequence (dropped arrays, temporaries):
    /// each is freed as soon as nothing needs it, a temporary right after its last reader.
    pub release: Vec<BufferId>,
    /// The executor a placement scope pins this sequence's programs to (`Runtime::place_on`),
    /// where it can run them.
    pub pin: Option<usize>,
    /// How a `Runtime::split` scope splits this sequence's launches (`None`: `ARRAYFLOW_SPLIT`).
    pub split: Option<super::split::SplitMode>,
}

/// Messages to the scheduler thread.
pub(crate) enum SchedMsg {
    /// The application wrote data into a new buffer (seed: data movement request from the FE).
    Upload {
        buf: BufferId,
        data: TypedVec,
    },
    Submit(Instance),
    Read {
        buf: BufferId,
        reply: Sender<Result<Arc<TypedVec>>>,
    },
    /// The buffer is the application's memory; programs write it in place.
    BindExternal {
        buf: BufferId,
        ptr: super::HostDest,
    },
    /// A buffer whose value is an error (an invalid result the application chose to continue with).
    Poison {
        buf: BufferId,
        error: Error,
    },
    /// Reply once the buffer is written (or its program failed).
    Wait {
        buf: BufferId,
        reply: Sender<Result<()>>,
    },
    Release(BufferId),
    /// Keep (`true`) or stop keeping (`false`) a buffer past its release: a pin counts as a use,
    /// so a released, pinned buffer is freed at its unpin (the debugger's stepper re-reads a
    /// fused kernel's inputs after the flush that ran it).
    Pin {
        buf: BufferId,
        pin: bool,
    },
    /// Reply once everything submitted before has completed.
    Barrier(Sender<()>),
    /// An executor finished a task.
    Done {
        task: u64,
        result: Result<()>,
    },
    /// Resume the launches a trap suspended (`Runtime::resume`): every executor replies with
    /// how many it resumed.
    Resume(Sender<usize>),
    /// Move `buf` to executor `exec` once it is written (`Array::to_device`).
    Place {
        buf: BufferId,
        exec: usize,
    },
    /// Reply with the executors that hold `buf`'s value once it is written (bit `i` for executor
    /// `i`; where its program runs, while it is computed).
    Where {
        buf: BufferId,
        reply: Sender<u32>,
    },
    /// Reply with the executor whose program wrote `buf` (`None`: an upload, or not yet placed).
    ComputedOn {
        buf: BufferId,
        reply: Sender<Option<usize>>,
    },
    /// An executor suspended a task (`Some`: a trap stopped its launch after a pass, or it
    /// waits for such a launch's results; reads of its results return this error meanwhile)
    /// or is resuming it (`None`). A suspended task finishes at `Runtime::resume`: barriers do
    /// not wait for it, and waits for its results (or results computed from them) return the
    /// error.
    Suspended {
        task: u64,
        error: Option<Error>,
    },
    /// An executor answered [`ExecMsg::Export`]: `buf`'s data, for executor `to`.
    Exported {
        buf: BufferId,
        to: usize,
        data: Result<Arc<TypedVec>>,
    },
    Shutdown,
}

/// One program bound to buffers, as sent to an executor.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: u64,
    /// The executor it runs on.
    pub exec: usize,
    pub program: Program,
    pub params: Arc<[u64]>,
    pub inputs: Vec<BufferId>,
    pub outputs: Vec<BufferId>,
    pub started: std::time::Instant,
    /// Buffers the executor frees once it has run (or, on a device, enqueued) this task: released
    /// buffers that only this sequence's tasks on this executor use, this task being the last.
    /// The executor runs its tasks in order, so later tasks may reuse their memory at once.
    pub free_after: Vec<BufferId>,
    /// Bytes the task reads and writes, for the profiler (zero when it is off).
    pub bytes: [u64; 2],
}

/// Messages from the scheduler to an executor (the seed's FIG. 7D).
pub(crate) enum ExecMsg {
    MoveDataIn {
        buf: BufferId,
        data: Arc<TypedVec>,
    },
    /// Send `buf`'s data back to the scheduler ([`SchedMsg::Exported`]) for executor `to`.
    Export {
        buf: BufferId,
        to: usize,
    },
    ComputeData(Task),
    /// Several tasks to run in this order.
    ComputeSequential(Vec<Task>),
    MoveDataOut {
        buf: BufferId,
        reply: Sender<Result<Arc<TypedVec>>>,
    },
    BindExternal {
        buf: BufferId,
        ptr: super::HostDest,
    },
    Free(BufferId),
    /// A device kernel of this task faulted: run it on the CPU for the exact error (device
    /// executors send this to themselves), with the first-failing word the device read
    /// (`crate::debug::trap::device`; 0 when the kernel keeps none or none failed).
    RerunOnCpu(Task, u32),
    /// Run the passes left of the launches a trap suspended (`crate::debug::trap`), then the
    /// tasks that waited for them; reply how many launches were resumed.
    Resume(Sender<usize>),
    Shutdown,
}

#[derive(Debug, Clone)]
enum Status {
    /// Its producing task waits in the pending-operation table.
    Unwritten,
    /// Its producing task is queued on executor `.0` (which runs its queue in order).
    InFlight(usize),
    Ready,
    Invalid(Error),
}

struct BufState {
    status: Status,
    /// Tasks not yet completed that read or write it.
    uses: u32,
    released: bool,
    /// Executors holding the current value (bit `i` for executor `i`).
    on: u32,
    /// Executors the value is being moved to.
    moving: u32,
    /// The application's memory the value is written to (a read without a copy).
    external: Option<super::HostDest>,
    reads: Vec<Sender<Result<Arc<TypedVec>>>>,
    waits: Vec<Sender<Result<()>>>,
    /// The task that writes it, once launched.
    producer: Option<u64>,
    /// The executor that task runs on.
    computed_on: Option<usize>,
}

impl BufState {
    fn new(status: Status, on: u32) -> Self {
        BufState {
            status,
            uses: 0,
            released: false,
            on,
            moving: 0,
            external: None,
            reads: Vec::new(),
            waits: Vec::new(),
            producer: None,
            computed_on: None,
        }
    }
}

const fn bit(exec: usize) -> u32 {
    1 << exec
}

/// The executor to take a buffer's data from: the CPU when it holds a copy (shared without a
/// copy, and what an external buffer with no holder falls back to), else the first holder.
fn holder(on: u32) -> usize {
    if on & bit(0) != 0 || on == 0 {
        0
    } else {
        on.trailing_zeros() as usize
    }
}

/// Most elements (summed over a sequence's kernels: each fused kernel's domain, each intrinsic's
/// inputs and output) that [`Scheduler::submit_small`] runs on the calling thread. Below this a
/// kernel takes a few µs, less than a hand-off between threads.
pub const INLINE_MAX_ELEMENTS: usize = 1 << 16;

/// The scheduler's state and message queue, shared by its thread and synchronous calls.
struct Shared {
    rx: Receiver<SchedMsg>,
    state: parking_lot::Mutex<SchedulerLoop>,
    cpu: Arc<super::cpu::CpuShared>,
}

/// Handle the application side uses to talk to the scheduler thread.
pub struct Scheduler {
    tx: Sender<SchedMsg>,
    shared: Arc<Shared>,
    /// The application's messages are handled on the calling thread (no device executor).
    sync: bool,
    /// The next buffer id (shared with the scheduler's state, which makes buffers of split
    /// launches).
    next_buffer: Arc<AtomicU64>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The live devices, executor 1 first.
    devices: Vec<super::device::DeviceInfo>,
    /// Every executor's short name (`cpu`, `opencl:0`, ...), by index.
    names: Vec<String>,
    /// How long the application's waits spin before blocking (`exec/wait.rs`).
    spin: Spin,
}

impl Scheduler {
    /// Starts the scheduler thread with the CPU executor (executor 0) and an executor for each of
    /// `devices` (executors 1, 2, ...). With one device, programs go to it first; with several,
    /// or with the CPU among the candidates (`cpu_candidate`), where `exec::placement` says.
    pub(crate) fn start(
        counters: Arc<Counters>,
        flow: Arc<FlowControl>,
        devices: &[&super::device::DeviceInfo],
        cpu_candidate: bool,
        limits: super::gpu::Limits,
    ) -> Scheduler {
        let (tx, rx) = unbounded();
        let (cpu_handle, cpu) = super::cpu::CpuExecutor::start(tx.clone(), counters.clone());
        let mut executors = vec![cpu_handle];
        let mut started = Vec::new();
        // The device executor's threads, the scheduler and the application's waits spin before
        // blocking only while a device executor runs.
        let mut spin = Spin::OFF;
        for d in devices {
            if executors.len() >= super::MAX_EXECUTORS {
                tracing::warn!(target: "arrayflow::exec",
                    "{} left out: at most {} executors", d.name, super::MAX_EXECUTORS);
                break;
            }
            let device_spin = Spin::for_device(Some(d.kind), limits.spin);
            match super::gpu::start(d, limits, device_spin, tx.clone(), counters.clone()) {
                Ok(h) => {
                    // The runtime's view of the device is what its executor computes: a wgpu
                    // adapter may offer f64 (`SHADER_F64`) where the WGSL renderer has none, and
                    // the front end chooses f64 accumulation (`short_sum`) by this.
                    let mut info = (*d).clone();
                    info.fp64 = h.caps.fp64;
                    executors.push(h);
                    started.push(info);
                    if spin == Spin::OFF {
                        spin = device_spin;
                    }
                }
                Err(e) => {
                    super::device::missing_backend(&format!(
                        "cannot start the {} executor on {}: {e}; using the CPU",
                        d.backend, d.name
                    ));
                }
            }
        }
        let sync = executors.len() == 1;
        let placement = (started.len() >= 2 || (cpu_candidate && !started.is_empty())).then(|| {
            let mut profiles = vec![super::placement::Profile::cpu(rayon::current_num_threads())];
            profiles.extend(started.iter().map(super::placement::Profile::device));
            super::placement::Placement::new(
                super::placement::Policy::from_env(),
                profiles,
                cpu_candidate,
            )
        });
        let names = std::iter::once("cpu".to_string())
            .chain(started.iter().map(|d| format!("{}:{}", d.backend, d.index)))
            .collect::<Vec<_>>();
        // Launches split only where a device runs beside another executor, and a mode asks.
        let splitter = (!started.is_empty()).then(|| super::split::Splitter {
            default: super::split::SplitMode::from_env(),
            throughput: std::iter::once(
                super::placement::Profile::cpu(rayon::current_num_threads()).throughput,
            )
            .chain(
                started
                    .iter()
                    .map(|d| super::placement::Profile::device(d).throughput),
            )
            .collect(),
            cpu_candidate,
        });
        let next_buffer = Arc::new(AtomicU64::new(1));
        let shared = Arc::new(Shared {
            rx,
            state: parking_lot::Mutex::new(SchedulerLoop::new(
                executors,
                counters,
                flow,
                placement,
                names.clone(),
                splitter,
                next_buffer.clone(),
            )),
            cpu,
        });
        let thread_shared = shared.clone();
        let thread =
            super::lifetime::spawn("arrayflow-scheduler", move || run(&thread_shared, spin))
                .expect("arrayflow: cannot start the scheduler thread");
        Scheduler {
            tx,
            shared,
            sync,
            spin,
            next_buffer,
            thread: parking_lot::Mutex::new(Some(thread)),
            devices: started,
            names,
        }
    }

    /// The first device executor's device, when one runs.
    pub fn device(&self) -> Option<&super::device::DeviceInfo> {
        self.devices.first()
    }

    /// Every live device, executor 1 first.
    pub fn devices(&self) -> &[super::device::DeviceInfo] {
        &self.devices
    }

    /// Every executor's short name (`cpu`, `opencl:0`, `wgpu:0`), by executor index.
    pub fn executor_names(&self) -> &[String] {
        &self.names
    }

    /// Every live device computes f64 (the front end then accumulates sums in f64).
    pub fn fp64_everywhere(&self) -> bool {
        self.devices.iter().all(|d| d.fp64)
    }

    /// Moves `buf` to executor `exec` once it is written.
    pub fn place(&self, buf: BufferId, exec: usize) {
        self.send(SchedMsg::Place { buf, exec });
    }

    /// The executors holding `buf` once it is written (bit `i` for executor `i`).
    pub fn holders(&self, buf: BufferId) -> u32 {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Where { buf, reply });
        self.spin.recv(&rx).unwrap_or(0)
    }

    /// The executor whose program wrote `buf` (`None` for an upload or a buffer not yet placed).
    pub fn computed_on(&self, buf: BufferId) -> Option<usize> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::ComputedOn { buf, reply });
        self.spin.recv(&rx).ok().flatten()
    }

    pub fn new_buffer(&self) -> BufferId {
        BufferId(self.next_buffer.fetch_add(1, Ordering::Relaxed))
    }
    /// Hands `msg` to the scheduler: handled on the calling thread when the runtime has no
    /// device executor (see "Synchronous calls"), else queued to the scheduler's thread.
    pub(crate) fn send(&self, msg: SchedMsg) {
        if self.sync {
            self.call(|st| (st.handle(msg), false));
        } else {
            // The scheduler thread only stops at process exit; a send error then is harmless.
            let _ = self.tx.send(msg);
        }
    }

    /// A synchronous call: takes the state, handles the queued messages, runs `f`, then settles
    /// the CPU executor's held-back messages (running its tasks here only if `f` says so).
    fn call<R>(&self, f: impl FnOnce(&mut SchedulerLoop) -> (R, bool)) -> R {
        let mut st = self.shared.state.lock();
        st.local = Some(Vec::new());
        let stopped = st.stopped;
        st.drain(&self.shared.rx);
        let (r, computes) = f(&mut st);
        st.settle(&self.shared.cpu, computes);
        st.local = None;
        if st.stopped && !stopped {
            // This call took the thread's stop message: queue it again for the thread.
            let _ = self.tx.send(SchedMsg::Shutdown);
        }
        r
    }

    /// Submits `inst`, running it to completion on the calling thread (the small-step fast path)
    /// when `inline` allows it, the runtime has no device executor, nothing submitted before is
    /// still outstanding, and its kernels cover at most [`INLINE_MAX_ELEMENTS`] elements.
    /// Returns whether it ran here.
    pub fn submit_small(&self, inst: Instance, inline: bool) -> bool {
        if !(inline && self.sync && inline_size(&inst.seq) <= INLINE_MAX_ELEMENTS) {
            self.submit(inst);
            return false;
        }
        self.call(|st| {
            let idle = st.tasks.is_empty();
            if idle {
                Counters::add(&st.counters.inline_runs, 1);
            }
            st.submit(inst);
            (idle, idle)
        })
    }
    pub fn upload(&self, buf: BufferId, data: TypedVec) {
        self.send(SchedMsg::Upload { buf, data });
    }
    pub fn submit(&self, inst: Instance) {
        self.send(SchedMsg::Submit(inst));
    }
    pub fn release(&self, buf: BufferId) {
        self.send(SchedMsg::Release(buf));
    }
    /// Keeps `buf` past its release until the matching `pin(buf, false)` (see [`SchedMsg::Pin`]).
    pub fn pin(&self, buf: BufferId, pin: bool) {
        self.send(SchedMsg::Pin { buf, pin });
    }
    /// Blocks until the buffer's value is computed, then returns it.
    pub fn read(&self, buf: BufferId) -> Result<Arc<TypedVec>> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Read { buf, reply });
        self.spin.recv(&rx).unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Runtime,
                "the execution scheduler stopped",
            ))
        })
    }
    /// Resumes the launches a trap suspended on every executor; returns how many.
    pub fn resume(&self) -> Result<usize> {
        let (reply, rx) = crossbeam_channel::unbounded();
        self.send(SchedMsg::Resume(reply));
        // One reply per executor.
        let mut n = 0;
        for _ in &self.names {
            n += self
                .spin
                .recv(&rx)
                .map_err(|_| Error::new(ErrorKind::Runtime, "the execution scheduler stopped"))?;
        }
        Ok(n)
    }
    /// Makes `buf` the application's memory at `ptr` (written in place, never stored).
    pub fn bind_external(&self, buf: BufferId, ptr: super::HostDest) {
        self.send(SchedMsg::BindExternal { buf, ptr });
    }
    /// Blocks until `buf` is written.
    pub fn wait(&self, buf: BufferId) -> Result<()> {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Wait { buf, reply });
        self.spin.recv(&rx).unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Runtime,
                "the execution scheduler stopped",
            ))
        })
    }
    /// Stops the scheduler thread (which stops the executors) and waits for it; at process exit.
    /// Queued to the thread, never handled by a synchronous call.
    pub(crate) fn stop(&self) {
        let _ = self.tx.send(SchedMsg::Shutdown);
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
    /// Blocks until all work submitted so far has completed, or is suspended by a trap (and
    /// finishes at `Runtime::resume`).
    pub fn barrier(&self) {
        let (reply, rx) = crossbeam_channel::bounded(1);
        self.send(SchedMsg::Barrier(reply));
        let _ = self.spin.recv(&rx);
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The scheduler's thread: waits for a message (without taking it), then takes the state and
/// handles everything queued; at the stop message, stops the executors.
fn run(shared: &Shared, spin: Spin) {
    loop {
        spin.ready(&shared.rx);
        let mut st = shared.state.lock();
        st.drain(&shared.rx);
        if st.stopped {
            for e in &st.execs {
                e.send(ExecMsg::Shutdown);
            }
            return;
        }
    }
}

/// Elements a sequence's kernels cover, for [`INLINE_MAX_ELEMENTS`].
fn inline_size(seq: &ProgramSequence) -> usize {
    seq.programs
        .iter()
        .map(|p| match &*p.kernel {
            Kernel::Fused(k) => k.domain.len(),
            Kernel::Intrinsic(c) => {
                c.out_shape.iter().product::<usize>()
                    + c.in_shapes
                        .iter()
                        .map(|s| s.iter().product::<usize>())
                        .sum::<usize>()
            }
        })
        .sum()
}

/// Whether an executor message runs tasks.
fn runs_tasks(msg: &ExecMsg) -> bool {
    matches!(
        msg,
        ExecMsg::ComputeData(_)
            | ExecMsg::ComputeSequential(_)
            | ExecMsg::RerunOnCpu(..)
            | ExecMsg::Resume(_)
    )
}

struct SchedulerLoop {
    /// Executor 0 is the CPU; executor 1, when present, the device programs go to first.
    execs: Vec<ExecHandle>,
    /// During a synchronous call: the CPU executor's messages, held back until the call settles.
    local: Option<Vec<ExecMsg>>,
    /// Tasks queued to the CPU executor's thread whose completion is not yet handled.
    cpu_thread_tasks: usize,
    /// The stop message was handled.
    stopped: bool,
    counters: Arc<Counters>,
    flow: Arc<FlowControl>,
    buffers: AHashMap<BufferId, BufState>,
    tasks: AHashMap<u64, Task>,
    /// The pending-operation table: tasks deferred until the keyed buffer is written (or has arrived
    /// on the task's executor).
    pending: AHashMap<BufferId, Vec<u64>>,
    /// Unfinished device tasks that may still report a fault, by the task that read their
    /// outputs: a device finds a fault after the kernels queued behind it ran, and reruns the
    /// faulting task on the CPU for its error; a reader that completes first waits for it
    /// (`finish`), so a result computed from a faulty one is never reported valid.
    fault_deps: AHashMap<u64, Vec<u64>>,
    /// Tasks whose completion waits for the keyed task to finish (see `fault_deps`).
    unsettled: AHashMap<u64, Vec<u64>>,
    /// Tasks in `fault_deps` lists, with how many unfinished tasks list them.
    dependents: AHashMap<u64, u32>,
    /// The errors of finished tasks that unfinished ones list in `fault_deps` (a fault reported
    /// before its readers completed).
    fault_errors: AHashMap<u64, Error>,
    next_task: u64,
    barriers: Vec<Sender<()>>,
    /// Tasks an executor holds suspended by a trap ([`SchedMsg::Suspended`]), with the
    /// error their results read as meanwhile.
    suspended: AHashMap<u64, Error>,
    /// When each move between executors began (only while profiling).
    move_started: AHashMap<(BufferId, usize), std::time::Instant>,
    /// The executor each move in flight takes its data from.
    move_from: AHashMap<(BufferId, usize), usize>,
    /// The cost model, with several executors to choose from.
    placement: Option<super::placement::Placement>,
    /// Moves asked for by `Array::to_device` of buffers not yet written.
    places: AHashMap<BufferId, u32>,
    /// Every executor's short name, by index.
    names: Vec<String>,
    /// Splits launches between executors (`exec::split`); `None` without a device.
    splitter: Option<super::split::Splitter>,
    /// The buffer ids (shared with [`Scheduler`]).
    next_buffer: Arc<AtomicU64>,
    /// Slice buffers of split launches (`split_tasks.rs`), by slice.
    slices: AHashMap<BufferId, split_tasks::Slice>,
    /// Slices waiting for an export of a buffer for an executor, by (buffer, executor).
    slice_wait: AHashMap<(BufferId, usize), Vec<BufferId>>,
    /// The executor each slice export in flight takes its data from.
    slice_from: AHashMap<(BufferId, usize), usize>,
    /// Where the join of a split launch writes its output (not yet launched).
    homes: AHashMap<BufferId, usize>,
    /// Tasks of split launches the kernel counters do not count (parts after the first, joins).
    uncounted: ahash::AHashSet<u64>,
}

impl SchedulerLoop {
    fn new(
        execs: Vec<ExecHandle>,
        counters: Arc<Counters>,
        flow: Arc<FlowControl>,
        placement: Option<super::placement::Placement>,
        names: Vec<String>,
        splitter: Option<super::split::Splitter>,
        next_buffer: Arc<AtomicU64>,
    ) -> Self {
        SchedulerLoop {
            splitter,
            next_buffer,
            slices: AHashMap::new(),
            slice_wait: AHashMap::new(),
            slice_from: AHashMap::new(),
            homes: AHashMap::new(),
            uncounted: Default::default(),
            move_from: AHashMap::new(),
            placement,
            places: AHashMap::new(),
            names,
            execs,
            local: None,
            cpu_thread_tasks: 0,
            stopped: false,
            counters,
            flow,
            buffers: AHashMap::new(),
            tasks: AHashMap::new(),
            pending: AHashMap::new(),
            fault_deps: AHashMap::new(),
            unsettled: AHashMap::new(),
            dependents: AHashMap::new(),
            fault_errors: AHashMap::new(),
            next_task: 1,
            barriers: Vec::new(),
            suspended: Default::default(),
            move_started: AHashMap::new(),
        }
    }

    /// Handles every queued message, in order, until the queue is empty or the stop message.
    fn drain(&mut self, rx: &Receiver<SchedMsg>) {
        while !self.stopped {
            match rx.try_recv() {
                Ok(msg) => self.handle(msg),
                Err(crossbeam_channel::TryRecvError::Empty) => return,
                Err(crossbeam_channel::TryRecvError::Disconnected) => self.stopped = true,
            }
        }
    }

    /// Sends `msg` to executor `e`; during a synchronous call the CPU executor's are held back.
    fn send_exec(&mut self, e: usize, msg: ExecMsg) {
        if e == 0 {
            if let Some(local) = &mut self.local {
                local.push(msg);
                return;
            }
            self.cpu_thread_tasks += match &msg {
                ExecMsg::ComputeData(_) | ExecMsg::RerunOnCpu(..) => 1,
                ExecMsg::ComputeSequential(v) => v.len(),
                _ => 0,
            };
        }
        self.execs[e].send(msg);
    }

    /// The end of a synchronous call: the CPU executor's held-back messages run here, after its
    /// queue, when its thread has no task (and `computes` allows tasks to run here); the tasks'
    /// completions are handled at once, and what they release or launch settles the same way.
    /// Otherwise the messages are queued to its thread in order.
    fn settle(&mut self, cpu: &super::cpu::CpuShared, computes: bool) {
        loop {
            let msgs = std::mem::take(self.local.as_mut().expect("inside a synchronous call"));
            if msgs.is_empty() {
                return;
            }
            let here = self.cpu_thread_tasks == 0 && (computes || !msgs.iter().any(runs_tasks));
            if !here {
                let local = self.local.take();
                for m in msgs {
                    self.send_exec(0, m);
                }
                self.local = local;
                return;
            }
            let mut results = Vec::new();
            {
                let mut done = |task, result| results.push((task, result));
                let mut c = cpu.state.lock();
                let mut live = cpu.drain(&mut c, &mut done);
                for m in msgs {
                    live = live && c.handle(m, &mut done);
                }
                if !live {
                    // This call took the executor's stop message: queue it again for its thread.
                    self.execs[0].send(ExecMsg::Shutdown);
                }
            }
            for (task, result) in results {
                self.done(task, result);
            }
        }
    }

    /// Handles one message (on the thread or in a synchronous call).
    fn handle(&mut self, msg: SchedMsg) {
        self.handle_one(msg);
        if !self.suspended.is_empty() {
            self.answer_suspended();
        }
    }

    fn handle_one(&mut self, msg: SchedMsg) {
        match msg {
            SchedMsg::Upload { buf, data } => {
                Counters::add(&self.counters.bytes_uploaded, data.bytes() as u64);
                self.buffers
                    .insert(buf, BufState::new(Status::Ready, bit(0)));
                if let Some(p) = &mut self.placement {
                    p.uploaded(buf);
                }
                self.send_exec(
                    0,
                    ExecMsg::MoveDataIn {
                        buf,
                        data: Arc::new(data),
                    },
                );
            }
            SchedMsg::Submit(inst) => self.submit(inst),
            SchedMsg::Pin { buf, pin: true } => {
                self.buffers
                    .entry(buf)
                    .or_insert_with(|| BufState::new(Status::Unwritten, 0))
                    .uses += 1;
            }
            SchedMsg::Pin { buf, pin: false } => {
                if let Some(s) = self.buffers.get_mut(&buf) {
                    s.uses = s.uses.saturating_sub(1);
                    self.maybe_free(buf);
                }
            }
            SchedMsg::Read { buf, reply } => {
                if let Some(p) = &mut self.placement {
                    p.read(buf);
                }
                self.read(buf, reply)
            }
            SchedMsg::Place { buf, exec } => self.place(buf, exec),
            SchedMsg::Where { buf, reply } => {
                let on = match self.buffers.get(&buf) {
                    Some(s) => match s.status {
                        Status::InFlight(e) => bit(e),
                        Status::Ready => s.on | s.moving,
                        _ => s.on,
                    },
                    None => 0,
                };
                let _ = reply.send(on | self.places.get(&buf).copied().unwrap_or(0));
            }
            SchedMsg::ComputedOn { buf, reply } => {
                let _ = reply.send(self.buffers.get(&buf).and_then(|s| s.computed_on));
            }
            SchedMsg::BindExternal { buf, ptr } => {
                let mut s = BufState::new(Status::Unwritten, 0);
                s.external = Some(ptr);
                self.buffers.insert(buf, s);
            }
            SchedMsg::Poison { buf, error } => {
                self.buffers
                    .insert(buf, BufState::new(Status::Invalid(error), 0));
            }
            SchedMsg::Wait { buf, reply } => match self.buffers.get_mut(&buf) {
                None => {
                    let _ = reply.send(Err(Error::new(
                        ErrorKind::Runtime,
                        "wait on a buffer the runtime does not know",
                    )));
                }
                Some(s) => match &s.status {
                    Status::Ready => {
                        let _ = reply.send(Ok(()));
                    }
                    Status::Invalid(e) => {
                        let _ = reply.send(Err(e.clone()));
                    }
                    _ => s.waits.push(reply),
                },
            },
            SchedMsg::Release(buf) => {
                if let Some(s) = self.buffers.get_mut(&buf) {
                    s.released = true;
                }
                self.maybe_free(buf);
            }
            SchedMsg::Barrier(reply) => {
                if self.quiescent() {
                    let _ = reply.send(());
                } else {
                    self.barriers.push(reply);
                }
            }
            SchedMsg::Done { task, result } => {
                if self.tasks.get(&task).is_some_and(|t| t.exec == 0) {
                    // Saturating: a task a trap suspended may have run on this thread (uncounted)
                    // and finish on the executor's thread when it is resumed.
                    self.cpu_thread_tasks = self.cpu_thread_tasks.saturating_sub(1);
                }
                self.done(task, result)
            }
            SchedMsg::Exported { buf, to, data } => {
                // An export for slices of a split launch, a whole move, or both.
                let whole = self.move_from.contains_key(&(buf, to));
                let sliced = !self.slice_wait.is_empty() && self.serve_slices(buf, to, &data);
                if whole || !sliced {
                    self.arrived(buf, to, data)
                }
            }
            SchedMsg::Resume(reply) => {
                for e in 0..self.execs.len() {
                    self.send_exec(e, ExecMsg::Resume(reply.clone()));
                }
            }
            SchedMsg::Suspended { task, error } => {
                // A task that already finished (its completion was handled on a synchronous
                // call before this message) is not held.
                match error {
                    Some(e) if self.tasks.contains_key(&task) => {
                        self.suspended.insert(task, e);
                    }
                    _ => {
                        self.suspended.remove(&task);
                    }
                }
                self.release_barriers();
            }
            SchedMsg::Shutdown => self.stopped = true,
        }
    }

    /// The executors that can run `program` (bit `i` for executor `i`): the CPU always, a device
    /// when it computes the program's element types. Launches in passes (trap checks with
    /// `TrapConfig::passes`) run on devices, which dispatch them pass by pass
    /// (`exec/gpu/passes.rs`), when the device's first-failing word can name any of their
    /// elements (`debug::trap::device::fits`); otherwise on the CPU tile VM alone, where a pass
    /// that traps can stay suspended.
    fn allowed(&self, program: &Program) -> u32 {
        if let Kernel::Fused(k) = &*program.kernel
            && !k.traps.is_empty()
            && crate::debug::trap::current().is_some_and(|c| c.pass_elements.is_some())
            && !crate::debug::trap::device::fits(k.domain.len(), k.traps.len())
        {
            return bit(0);
        }
        let f64s = uses_f64(&program.kernel);
        let mut allowed = bit(0);
        for (e, dev) in self.execs.iter().enumerate().skip(1) {
            if dev.caps.fp64 || !f64s {
                allowed |= bit(e);
            } else {
                Counters::add(&self.counters.device.f64_to_cpu, 1);
                tracing::debug!(target: "arrayflow::exec", device = %dev.name,
                    "an f64 program does not run on a device without f64: {:?}", program.kernel);
            }
        }
        allowed
    }

    /// The executor `task`'s program runs on: with one device, the device when it can run the
    /// program, else the CPU; with several executors to choose from, where the cost model (or a
    /// placement scope's pin) says.
    /// `bytes_of` gives a formal buffer's size; only the cost model asks.
    fn route(
        &mut self,
        task: &Task,
        pin: Option<usize>,
        bytes_of: impl Fn(crate::proggen::sequence::FormalId) -> u64,
    ) -> usize {
        if self.execs.len() < 2 {
            return 0;
        }
        let allowed = self.allowed(&task.program);
        let exec = match &mut self.placement {
            Some(p) => {
                let inputs: Vec<super::placement::Input> = task
                    .inputs
                    .iter()
                    .zip(&task.program.inputs)
                    .map(|(&buf, &f)| super::placement::Input {
                        buf,
                        bytes: bytes_of(f),
                    })
                    .collect();
                let bytes = inputs.iter().map(|i| i.bytes).sum::<u64>()
                    + task
                        .program
                        .outputs
                        .iter()
                        .map(|&f| bytes_of(f))
                        .sum::<u64>();
                p.choose(&task.program, &inputs, &task.outputs, bytes, allowed, pin)
            }
            None => match pin.filter(|&e| e < self.execs.len() && allowed & bit(e) != 0) {
                Some(e) => e,
                None if allowed & bit(1) != 0 => 1,
                None => 0,
            },
        };
        Counters::add(&self.counters.exec_tasks[exec], 1);
        exec
    }

    /// `Array::to_device`: moves `buf` to `exec` now if it is written, else once it is.
    fn place(&mut self, buf: BufferId, exec: usize) {
        if exec >= self.execs.len() {
            return;
        }
        if let Some(p) = &mut self.placement {
            p.placed(buf, exec);
        }
        let Some(s) = self.buffers.get(&buf) else {
            return;
        };
        match s.status {
            Status::Ready if s.on & bit(exec) == 0 && s.moving & bit(exec) == 0 => {
                self.start_move(buf, exec)
            }
            Status::Unwritten | Status::InFlight(_) => {
                *self.places.entry(buf).or_default() |= bit(exec);
            }
            _ => {}
        }
    }

    fn submit(&mut self, inst: Instance) {
        // The time until the scheduler took the flush's programs, for the device's counters
        // (read once, and only when a program goes to a device).
        let mut since = None;
        let mut batch = Vec::new();
        let profiling = crate::profile::active();
        let formal_bytes = |fs: &[u32]| -> u64 {
            fs.iter()
                .map(|&f| {
                    let formal = &inst.seq.formals[f as usize];
                    (formal.len * formal.dtype.size()) as u64
                })
                .sum()
        };
        // A pinned sequence (a placement scope, the debugger's micro-kernels) runs whole where
        // it is pinned.
        let split = match (&self.splitter, inst.split) {
            _ if inst.pin.is_some() => None,
            (None, _) => None,
            (Some(s), mode) => {
                Some(mode.unwrap_or(s.default)).filter(|m| *m != super::split::SplitMode::Off)
            }
        };
        for (pi, program) in inst.seq.programs.iter().enumerate() {
            let mut pin = inst.pin;
            if let Some(mode) = split {
                // A split launch has device parts: the sequence's start time is read now.
                let at = *since.get_or_insert_with(|| inst.started.elapsed().as_nanos() as u64);
                match self.submit_split(&inst, pi, mode, at, &mut batch) {
                    split_tasks::Outcome::Split => continue,
                    split_tasks::Outcome::On(e) => pin = Some(e),
                    split_tasks::Outcome::Whole => {}
                }
            }
            let id = self.next_task;
            self.next_task += 1;
            let mut task = Task {
                id,
                exec: 0,
                started: inst.started,
                program: program.clone(),
                params: inst.params[pi].clone(),
                inputs: program
                    .inputs
                    .iter()
                    .map(|&f| inst.bindings[f as usize])
                    .collect(),
                outputs: program
                    .outputs
                    .iter()
                    .map(|&f| inst.bindings[f as usize])
                    .collect(),
                free_after: Vec::new(),
                bytes: if profiling {
                    [
                        formal_bytes(&program.inputs),
                        formal_bytes(&program.outputs),
                    ]
                } else {
                    [0, 0]
                },
            };
            task.exec = self.route(&task, pin, |f| formal_bytes(&[f]));
            for &b in task.inputs.iter().chain(&task.outputs) {
                let s = self
                    .buffers
                    .entry(b)
                    .or_insert_with(|| BufState::new(Status::Unwritten, 0));
                s.uses += 1;
            }
            if task.exec != 0 {
                let since = *since.get_or_insert_with(|| inst.started.elapsed().as_nanos() as u64);
                Counters::add(&self.counters.device.scheduled_ns, since);
            }
            self.tasks.insert(id, task);
            self.launch(id, &mut batch);
        }
        // Released buffers: freed at once where the batch allows (`free_early`), else once
        // nothing needs them.
        for &b in &inst.release {
            if let Some(s) = self.buffers.get_mut(&b) {
                s.released = true;
            }
        }
        self.dispatch(batch);
        for b in inst.release {
            self.maybe_free(b);
        }
    }

    /// Frees released buffers right after the last task of `batch` that uses them, when every
    /// unfinished use is in `batch`, on one executor that alone holds the buffer, and nothing else
    /// wants it (reads, waits, moves): that executor runs its tasks in order, so the tasks after
    /// the last use may reuse its memory (a loop's temporaries cycle through a few buffers
    /// instead of one each).
    fn free_early(&mut self, batch: &mut [Task]) {
        // Uses in the batch and the last task using each released buffer (most batches have none:
        // nothing is counted for them).
        let mut count: Vec<(BufferId, u32, usize)> = Vec::new();
        for (i, t) in batch.iter().enumerate() {
            for &b in t.inputs.iter().chain(&t.outputs) {
                if !self.buffers.get(&b).is_some_and(|s| s.released) {
                    continue;
                }
                match count.iter_mut().find(|(x, ..)| *x == b) {
                    Some(e) => (e.1, e.2) = (e.1 + 1, i),
                    None => count.push((b, 1, i)),
                }
            }
        }
        for (b, uses, last) in count {
            let Some(s) = self.buffers.get(&b) else {
                continue;
            };
            let exec = batch[last].exec;
            let holders = s.on
                | match s.status {
                    Status::InFlight(e) => bit(e),
                    _ => 0,
                };
            let free = s.released
                && s.uses == uses
                && holders & !bit(exec) == 0
                && s.moving == 0
                && s.reads.is_empty()
                && s.waits.is_empty()
                && s.external.is_none()
                && batch.iter().all(|t| {
                    let reads = t.inputs.contains(&b);
                    let uses = reads || t.outputs.contains(&b);
                    // A device reruns a faulting task on the CPU later: it needs its inputs.
                    !uses || (t.exec == exec && !(reads && exec != 0 && may_fault(&t.program)))
                });
            if free {
                batch[last].free_after.push(b);
                self.forget(b);
            }
        }
    }

    /// The seed's "launch": run the task if its inputs allow, else defer it in the pending table.
    /// An input another executor holds is moved to the task's executor first.
    fn launch(&mut self, id: u64, batch: &mut Vec<Task>) {
        if !self.slices.is_empty() {
            match self.fill_slices(id) {
                Ok(None) => {}
                Ok(Some(e)) => return self.fail(id, e),
                Err(b) => return self.pending.entry(b).or_default().push(id),
            }
        }
        let task = &self.tasks[&id];
        let exec = task.exec;
        let mut blocked = None;
        let mut moves = Vec::new();
        for &b in &task.inputs {
            let s = &self.buffers[&b];
            match &s.status {
                Status::Invalid(e) => {
                    let e = e.clone();
                    self.fail(id, e);
                    return;
                }
                Status::InFlight(e) if *e == exec => {}
                Status::Ready if s.on & bit(exec) != 0 => {}
                Status::Ready => {
                    // Once per buffer, also when the task reads it twice (`aᵀ a`).
                    if s.moving & bit(exec) == 0 && !moves.contains(&b) {
                        moves.push(b);
                    }
                    blocked.get_or_insert(b);
                }
                Status::Unwritten | Status::InFlight(_) => {
                    blocked.get_or_insert(b);
                }
            }
        }
        for b in moves {
            self.start_move(b, exec);
        }
        if let Some(b) = blocked {
            self.pending.entry(b).or_default().push(id);
            return;
        }
        let task = self.tasks[&id].clone();
        let outputs = task.outputs.clone();
        // Unfinished device producers of its inputs that may still fault (or wait on one).
        let deps: Vec<u64> = task
            .inputs
            .iter()
            .filter_map(|b| self.buffers.get(b).and_then(|s| s.producer))
            .filter(|p| {
                self.fault_deps.contains_key(p)
                    || self
                        .tasks
                        .get(p)
                        .is_some_and(|t| t.exec != 0 && may_fault(&t.program))
            })
            .collect();
        if !deps.is_empty() {
            for &p in &deps {
                *self.dependents.entry(p).or_default() += 1;
            }
            self.fault_deps.insert(id, deps);
        }
        let counted = self.uncounted.is_empty() || !self.uncounted.remove(&id);
        match &*task.program.kernel {
            _ if !counted => {}
            Kernel::Fused(k) => {
                Counters::add(&self.counters.kernels_launched, 1);
                if !k.reductions.is_empty() {
                    Counters::add(&self.counters.final_stages_launched, 1);
                }
            }
            Kernel::Intrinsic(_) => Counters::add(&self.counters.intrinsics_launched, 1),
        }
        if exec != 0 {
            Counters::add(&self.counters.device.tasks, 1);
        }
        for &b in &outputs {
            if let Some(ptr) = self.buffers.get(&b).and_then(|s| s.external) {
                self.send_exec(exec, ExecMsg::BindExternal { buf: b, ptr });
            }
        }
        batch.push(task);
        for b in outputs {
            // Before the status: it launches the tasks waiting for `b`, which look it up.
            if let Some(s) = self.buffers.get_mut(&b) {
                s.producer = Some(id);
                s.computed_on = Some(exec);
            }
            self.set_status(b, Status::InFlight(exec), batch);
        }
    }

    /// Asks an executor holding `b` for its data, to be moved to executor `to`.
    fn start_move(&mut self, b: BufferId, to: usize) {
        let s = self.buffers.get_mut(&b).expect("moved buffers are known");
        s.moving |= bit(to);
        let from = holder(s.on);
        self.move_from.insert((b, to), from);
        if crate::profile::active() {
            self.move_started.insert((b, to), std::time::Instant::now());
        }
        // An export for slices of `b` there serves this move too (`split_tasks.rs`).
        if !self.slice_from.contains_key(&(b, to)) {
            self.send_exec(from, ExecMsg::Export { buf: b, to });
        }
    }

    /// Data moved for executor `to` arrived: hand it over, then retry the tasks waiting for it.
    fn arrived(&mut self, b: BufferId, to: usize, data: Result<Arc<TypedVec>>) {
        let from = self.move_from.remove(&(b, to)).unwrap_or(0);
        let Some(s) = self.buffers.get_mut(&b) else {
            self.release_barriers();
            return;
        };
        s.moving &= !bit(to);
        match data {
            Ok(data) => {
                let bytes = data.bytes() as u64;
                if let Some(at) = self.move_started.remove(&(b, to))
                    && crate::profile::active()
                {
                    let detail = format!("{} -> {}", self.names[from], self.names[to]);
                    crate::profile::runtime("move", detail, None, at, bytes, None);
                }
                Counters::add(&self.counters.exec_bytes_out[from], bytes);
                Counters::add(&self.counters.exec_bytes_in[to], bytes);
                if to == 0 {
                    Counters::add(&self.counters.device.bytes_from_device, bytes);
                } else {
                    Counters::add(&self.counters.device.bytes_to_device, bytes);
                }
                s.on |= bit(to);
                self.send_exec(to, ExecMsg::MoveDataIn { buf: b, data });
            }
            Err(e) => s.status = Status::Invalid(e),
        }
        let mut batch = Vec::new();
        if let Some(waiting) = self.pending.remove(&b) {
            for id in waiting {
                self.launch(id, &mut batch);
            }
        }
        self.dispatch(batch);
        self.maybe_free(b);
        self.release_barriers();
    }

    /// Sends launched tasks to their executors, consecutive tasks of one executor in one message.
    fn dispatch(&mut self, mut batch: Vec<Task>) {
        self.free_early(&mut batch);
        let mut run: Vec<Task> = Vec::new();
        for t in batch {
            if run.last().is_some_and(|l| l.exec != t.exec) {
                self.send_run(std::mem::take(&mut run));
            }
            run.push(t);
        }
        self.send_run(run);
    }

    fn send_run(&mut self, mut run: Vec<Task>) {
        let Some(exec) = run.first().map(|t| t.exec) else {
            return;
        };
        self.send_exec(
            exec,
            if run.len() == 1 {
                ExecMsg::ComputeData(run.pop().unwrap())
            } else {
                ExecMsg::ComputeSequential(run)
            },
        );
    }

    /// Changes a buffer's status and retries the tasks and reads waiting on it.
    fn set_status(&mut self, b: BufferId, status: Status, batch: &mut Vec<Task>) {
        let Some(s) = self.buffers.get_mut(&b) else {
            return;
        };
        s.status = status;
        if matches!(s.status, Status::Ready)
            && let Some(to) = self.places.remove(&b)
        {
            let missing = to & !s.on & !s.moving;
            for e in 0..self.execs.len() {
                if missing & bit(e) != 0 {
                    self.start_move(b, e);
                }
            }
        }
        let Some(s) = self.buffers.get_mut(&b) else {
            return;
        };
        if matches!(s.status, Status::Ready | Status::Invalid(_)) {
            let done = match &s.status {
                Status::Invalid(e) => Err(e.clone()),
                _ => Ok(()),
            };
            for w in std::mem::take(&mut s.waits) {
                let _ = w.send(done.clone());
            }
            for reply in std::mem::take(&mut s.reads) {
                self.serve_read(b, reply);
            }
        }
        if let Some(waiting) = self.pending.remove(&b) {
            for id in waiting {
                self.launch(id, batch);
            }
        }
    }

    fn fail(&mut self, id: u64, e: Error) {
        Counters::add(&self.counters.failed_programs, 1);
        self.finish(id, Err(e), &mut Vec::new());
    }

    fn done(&mut self, id: u64, result: Result<()>) {
        if result.is_err() {
            Counters::add(&self.counters.failed_programs, 1);
        }
        let mut batch = Vec::new();
        self.finish(id, result, &mut batch);
        self.dispatch(batch);
    }

    fn finish(&mut self, id: u64, result: Result<()>, batch: &mut Vec<Task>) {
        // A task that ran before a device producer it reads from has settled (that producer may
        // yet fault and be rerun on the CPU) finishes when the producer does, with its error.
        let mut result = result;
        if result.is_ok()
            && let Some(deps) = self.fault_deps.get(&id)
        {
            if let Some(p) = deps.iter().copied().find(|p| self.tasks.contains_key(p)) {
                self.unsettled.entry(p).or_default().push(id);
                return;
            }
            if let Some(e) = deps.iter().find_map(|p| self.fault_errors.get(p)) {
                result = Err(e.clone());
            }
        }
        for p in self.fault_deps.remove(&id).unwrap_or_default() {
            if let Some(n) = self.dependents.get_mut(&p) {
                *n -= 1;
                if *n == 0 {
                    self.dependents.remove(&p);
                    self.fault_errors.remove(&p);
                }
            }
        }
        let Some(task) = self.tasks.remove(&id) else {
            return;
        };
        self.suspended.remove(&id);
        self.flow.complete(1);
        // A device reports faults after later kernels that read the faulty result were queued:
        // those results are invalid too.
        let result = result.and_then(|()| {
            task.inputs
                .iter()
                .try_for_each(|b| match self.buffers.get(b).map(|s| &s.status) {
                    Some(Status::Invalid(e)) => Err(e.clone()),
                    _ => Ok(()),
                })
        });
        for &b in &task.outputs {
            let status = match &result {
                Ok(()) => Status::Ready,
                Err(e) => Status::Invalid(e.clone()),
            };
            if let Some(s) = self.buffers.get_mut(&b) {
                s.on = bit(task.exec);
            }
            self.set_status(b, status, batch);
        }
        for &b in task.inputs.iter().chain(&task.outputs) {
            if let Some(s) = self.buffers.get_mut(&b) {
                s.uses -= 1;
            }
            self.maybe_free(b);
        }
        if let Err(e) = &result
            && self.dependents.contains_key(&id)
        {
            self.fault_errors.insert(id, e.clone());
        }
        if let Some(waiting) = self.unsettled.remove(&id) {
            for w in waiting {
                self.finish(w, result.clone(), batch);
            }
        }
        self.release_barriers();
    }

    /// Whether nothing can progress until `Runtime::resume`: every unfinished task is suspended
    /// by a trap or waits in the pending-operation table, and no data is on its way (what waits
    /// then waits, directly or not, for a suspended task).
    fn quiescent(&self) -> bool {
        if !self.move_from.is_empty() || !self.slice_wait.is_empty() {
            return false;
        }
        if self.tasks.is_empty() {
            return true;
        }
        if self.suspended.is_empty() {
            return false;
        }
        let waiting: ahash::AHashSet<u64> = self.pending.values().flatten().copied().collect();
        self.tasks
            .keys()
            .all(|t| self.suspended.contains_key(t) || waiting.contains(t))
            && self.buffers.values().all(|s| s.moving == 0)
    }

    /// The error of the trap that holds `b` back: `b` is the result of a suspended task, or of
    /// a task that waits in the pending-operation table for one (directly or not).
    fn suspension(&self, mut b: BufferId) -> Option<Error> {
        for _ in 0..=self.tasks.len() {
            let s = self.buffers.get(&b)?;
            match s.status {
                Status::InFlight(_) => return self.suspended.get(&s.producer?).cloned(),
                Status::Unwritten => {
                    // The waiting task that writes `b`, and the buffer it waits for.
                    let writes =
                        |t: &u64| self.tasks.get(t).is_some_and(|t| t.outputs.contains(&b));
                    b = *self.pending.iter().find(|(_, ts)| ts.iter().any(writes))?.0;
                }
                _ => return None,
            }
        }
        None
    }

    /// While a trap holds tasks suspended: waits and reads of results it holds back are
    /// answered with its error now (reads after `Runtime::resume` see the finished values).
    fn answer_suspended(&mut self) {
        let held: Vec<(BufferId, Error)> = self
            .buffers
            .iter()
            .filter(|(_, s)| !s.waits.is_empty() || !s.reads.is_empty())
            .filter_map(|(&b, _)| Some((b, self.suspension(b)?)))
            .collect();
        for (b, e) in held {
            let s = self.buffers.get_mut(&b).expect("listed above");
            for w in std::mem::take(&mut s.waits) {
                let _ = w.send(Err(e.clone()));
            }
            for r in std::mem::take(&mut s.reads) {
                let _ = r.send(Err(e.clone()));
            }
        }
    }

    /// Answers the barriers once all work has completed or is suspended ([`Self::quiescent`]).
    fn release_barriers(&mut self) {
        if !self.barriers.is_empty() && self.quiescent() {
            for reply in self.barriers.drain(..) {
                let _ = reply.send(());
            }
        }
    }

    fn read(&mut self, b: BufferId, reply: Sender<Result<Arc<TypedVec>>>) {
        if let Some(e) = self.buffers.get(&b).and_then(|s| self.reads_in_order(s)) {
            self.send_exec(e, ExecMsg::MoveDataOut { buf: b, reply });
            return;
        }
        match self.buffers.get_mut(&b) {
            None => {
                let _ = reply.send(Err(Error::new(
                    ErrorKind::Runtime,
                    "read of a buffer the runtime does not know",
                )));
            }
            Some(s) if matches!(s.status, Status::Unwritten | Status::InFlight(_)) => {
                s.reads.push(reply)
            }
            Some(_) => self.serve_read(b, reply),
        }
    }

    /// The executor a read of `s` can go to now, before its producer finishes: the one it is
    /// queued on, which runs its messages in order, so the read is served right after the
    /// program (on a device, a download queued behind the kernel), saving the executor's round
    /// trip through this thread on every small read. On the CPU always; on a device only when the
    /// value is final when the kernel ends: its program cannot fault (a fault reruns it on the
    /// CPU after the kernels queued behind it), no producer upstream may still fault, and no
    /// split launch is in flight. `None`: the read waits for the producer's completion.
    fn reads_in_order(&self, s: &BufState) -> Option<usize> {
        let Status::InFlight(e) = s.status else {
            return None;
        };
        if s.external.is_some() {
            return None;
        }
        if e == 0 {
            return Some(0);
        }
        let p = s.producer?;
        let task = self.tasks.get(&p)?;
        let settled = task.exec == e
            && !may_fault(&task.program)
            && !self.fault_deps.contains_key(&p)
            && self.slices.is_empty()
            && self.homes.is_empty();
        settled.then_some(e)
    }

    fn serve_read(&mut self, b: BufferId, reply: Sender<Result<Arc<TypedVec>>>) {
        let s = &self.buffers[&b];
        match &s.status {
            Status::Invalid(e) => {
                let _ = reply.send(Err(e.clone()));
            }
            _ => {
                let from = holder(s.on);
                self.send_exec(from, ExecMsg::MoveDataOut { buf: b, reply });
            }
        }
    }

    /// Drops what the scheduler and the placement model know of a freed buffer.
    fn forget(&mut self, b: BufferId) {
        self.buffers.remove(&b);
        self.places.remove(&b);
        if !self.slices.is_empty() || !self.homes.is_empty() {
            self.homes.remove(&b);
            self.drop_slice(b);
        }
        if let Some(p) = &mut self.placement {
            p.freed(b);
        }
    }

    /// Frees a released buffer once nothing needs it. A result still being computed on a device
    /// can go at once when no other task uses it (stream-ordered release): the device runs its
    /// queue in order, so the next program that takes the buffer from the device's pool runs
    /// after its producer. Without this, a program that drops results it never reads keeps every
    /// result in flight allocated until its producer finishes.
    fn maybe_free(&mut self, b: BufferId) {
        let Some(s) = self.buffers.get(&b) else {
            return;
        };
        let idle = s.moving == 0 && s.reads.is_empty() && s.waits.is_empty();
        let done = s.uses == 0 && !matches!(s.status, Status::Unwritten | Status::InFlight(_));
        let in_order = match s.status {
            Status::InFlight(e) if e != 0 && s.uses == 1 => bit(e),
            _ => 0,
        };
        if s.released && idle && (done || in_order != 0) {
            let on = s.on | in_order;
            self.forget(b);
            for i in 0..self.execs.len() {
                if on & bit(i) != 0 {
                    self.send_exec(i, ExecMsg::Free(b));
                }
            }
        }
    }
}

/// Whether a program may report a fault (an integer division by zero, an index out of range):
/// a device then runs it again on the CPU, from its inputs. Intrinsics count as faulting.
fn may_fault(program: &Program) -> bool {
    match &*program.kernel {
        Kernel::Fused(k) if !k.traps.is_empty() => true,
        Kernel::Fused(k) => k.instrs.iter().any(|i| match i {
            crate::proggen::kernel::Instr::Binary { op, a, .. } => {
                crate::proggen::codegen::lower::may_fault(*op, k.reg_dtypes[*a as usize])
            }
            _ => false,
        }),
        Kernel::Intrinsic(_) => true,
    }
}

/// Whether a program computes or moves f64 values (`Complex<f64>` values are two f64).
fn uses_f64(kernel: &Kernel) -> bool {
    use crate::ir::DType::{C128, F64};
    let wide = |d: &crate::ir::DType| matches!(d, F64 | C128);
    match kernel {
        Kernel::Fused(k) => {
            k.inputs.iter().any(wide) || k.outputs.iter().any(wide) || k.reg_dtypes.iter().any(wide)
        }
        Kernel::Intrinsic(c) => wide(&c.dtype) || c.in_dtypes.iter().any(wide),
    }
}

/// Hook: executor `exec` finished `task`'s kernel at `end` (`None`: an untimed launch of the CPU,
/// which reads no clock), `host_ns` on the host's clock; `timing` says
/// whether the device's own time follows (`crate::profile::device_time`) or sampling left the
/// launch untimed. The profiler's record of a launch, made here, where tasks are known (the
/// profiler sits in a layer below this one).
pub(crate) fn profile_launch(
    task: &Task,
    exec: u32,
    host_ns: u64,
    end: Option<std::time::Instant>,
    timing: crate::profile::LaunchTiming,
) {
    crate::profile::emit(crate::profile::Event::Launch {
        task: task.id,
        kernel: task.program.kernel.clone(),
        sites: task.program.sites.clone(),
        exec,
        bytes: task.bytes,
        host_ns,
        end,
        timing,
    });
}
