//! The CPU executor (the seed's 900-2) on its own thread: holds buffers in host memory, allocates
//! outputs from a pool of released buffers, runs fused kernels on the tile VM and intrinsics from the
//! intrinsic library, and reports each task's completion to the scheduler. Its state is shared
//! (`CpuShared`): the scheduler's synchronous calls on the application's thread run the same
//! message handling when the executor is idle (the small-step fast path).

pub mod fault;
mod index;
pub mod native;
pub(crate) mod reduce;
mod rows;
mod suspend;
pub use reduce::BLOCK as REDUCE_BLOCK;
pub mod slices;
pub mod vm;

use super::scheduler::{ExecMsg, SchedMsg, Task};
use super::{BufferId, BufferPool, Caps, ExecHandle, TypedVec};
use crate::counters::Counters;
use crate::error::{Error, ErrorKind};
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;
use std::sync::Arc;

/// Bytes of released buffers the pool keeps for reuse.
const POOL_LIMIT: usize = 1 << 30;

pub struct CpuExecutor;

/// Kernels the executor keeps a launch count of for the profiler's sampling before it starts
/// the counts over (a program generating kernels without end).
const SAMPLERS_PRUNE: usize = 4096;

/// The CPU executor's state and its message queue, shared by its thread and the scheduler's
/// synchronous calls (`scheduler.rs`, "Synchronous calls"): whoever holds `state` takes the
/// messages from `rx` and handles them in order, so the application's thread can run a small
/// program (or serve a read) with the very code the executor's thread runs.
pub(crate) struct CpuShared {
    pub(crate) rx: Receiver<ExecMsg>,
    pub(crate) state: Mutex<CpuLoop>,
}

impl CpuShared {
    /// Handles every queued message (the caller holds `state`); `done` receives each finished
    /// task's result. Returns `false` once the executor is told to stop.
    pub(crate) fn drain(
        &self,
        st: &mut CpuLoop,
        done: &mut dyn FnMut(u64, Result<(), Error>),
    ) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(msg) => {
                    if !st.handle(msg, done) {
                        return false;
                    }
                }
                Err(crossbeam_channel::TryRecvError::Empty) => return true,
                Err(crossbeam_channel::TryRecvError::Disconnected) => return false,
            }
        }
    }
}

impl CpuExecutor {
    /// Starts the executor's thread; returns the scheduler's handle and the shared state.
    pub(crate) fn start(
        sched: Sender<SchedMsg>,
        counters: Arc<Counters>,
    ) -> (ExecHandle, Arc<CpuShared>) {
        let (tx, rx) = unbounded();
        let shared = Arc::new(CpuShared {
            rx,
            state: Mutex::new(CpuLoop {
                sched: sched.clone(),
                counters,
                store: AHashMap::new(),
                failed: AHashMap::new(),
                external: AHashMap::new(),
                foreign: Default::default(),
                pool: BufferPool::new(POOL_LIMIT),
                suspend: Default::default(),
                samplers: AHashMap::new(),
            }),
        });
        let thread_shared = shared.clone();
        super::lifetime::spawn("arrayflow-cpu", move || run(&thread_shared, &sched))
            .expect("arrayflow: cannot start the CPU executor thread");
        let handle = ExecHandle {
            tx,
            caps: Caps { fp64: true },
            name: format!("cpu ({} threads)", rayon::current_num_threads()),
        };
        (handle, shared)
    }
}

/// The executor's thread: waits for a message (without taking it), then takes the state and
/// handles everything queued, reporting each finished task to the scheduler.
fn run(shared: &CpuShared, sched: &Sender<SchedMsg>) {
    let mut done = |task, result| {
        let _ = sched.send(SchedMsg::Done { task, result });
    };
    loop {
        super::wait::ready(&shared.rx);
        let mut st = shared.state.lock();
        if !shared.drain(&mut st, &mut done) {
            break;
        }
    }
}

/// The CPU executor's state: its buffers, failures and pool.
pub(crate) struct CpuLoop {
    sched: Sender<SchedMsg>,
    counters: Arc<Counters>,
    store: AHashMap<BufferId, Arc<TypedVec>>,
    /// Outputs of failed tasks, with the error a task reading them fails with.
    failed: AHashMap<BufferId, Error>,
    /// Buffers that are the application's memory (a read without a copy): written, never stored.
    external: AHashMap<BufferId, slices::OutPtr>,
    /// Buffers whose data came in from outside (uploads, copies from a device). The pool only
    /// takes back vectors it handed out: nothing ever takes an upload's size back out of it, so
    /// pooling them kept every upload's data until the pool's limit (GitHub issue 18).
    foreign: ahash::AHashSet<BufferId>,
    pool: BufferPool,
    /// Launches a trap suspended, and the tasks waiting for them (`suspend.rs`).
    suspend: suspend::Suspensions,
    /// Each kernel's launches while profiling (by the kernel's address), for the profiler's
    /// sampling of launch timings (`crate::profile::Sampling`).
    samplers: AHashMap<usize, crate::profile::Sampler>,
}

impl CpuLoop {
    /// Handles one message; `done` receives a finished task's result. `false` on `Shutdown`.
    pub(crate) fn handle(
        &mut self,
        msg: ExecMsg,
        done: &mut dyn FnMut(u64, Result<(), Error>),
    ) -> bool {
        if super::lifetime::stopping() && !matches!(msg, ExecMsg::Shutdown) {
            // The process is exiting: queued work is dropped, not run.
            return true;
        }
        match msg {
            ExecMsg::MoveDataIn { buf, data } => {
                // Data from outside (an upload, a copy from a device): freed, not pooled.
                self.foreign.insert(buf);
                self.store.insert(buf, data);
            }
            ExecMsg::Export { buf, to } => {
                let data = match (self.store.get(&buf), self.failed.get(&buf)) {
                    (_, Some(e)) => Err(e.clone()),
                    (Some(v), None) => Ok(v.clone()),
                    (None, None) => Err(Error::new(
                        ErrorKind::Runtime,
                        "the CPU executor has no such buffer",
                    )),
                };
                let _ = self.sched.send(SchedMsg::Exported { buf, to, data });
            }
            ExecMsg::ComputeData(task) | ExecMsg::RerunOnCpu(task, _) => {
                self.compute_then_free(task, done)
            }
            ExecMsg::ComputeSequential(tasks) => tasks
                .into_iter()
                .for_each(|t| self.compute_then_free(t, done)),
            ExecMsg::MoveDataOut { buf, reply } => {
                let r = match (self.store.get(&buf), self.failed.get(&buf)) {
                    (_, Some(e)) => Err(e.clone()),
                    (Some(v), None) => {
                        Counters::add(&self.counters.bytes_downloaded, v.bytes() as u64);
                        Ok(v.clone())
                    }
                    (None, None) => Err(Error::new(
                        ErrorKind::Runtime,
                        "the CPU executor has no such buffer",
                    )),
                };
                let _ = reply.send(r);
            }
            ExecMsg::BindExternal { buf, ptr } => {
                self.external
                    .insert(buf, slices::OutPtr::from_raw(ptr.dtype, ptr.ptr));
            }
            ExecMsg::Free(buf) => self.free(buf),
            ExecMsg::Resume(reply) => {
                let n = self.resume(done);
                let _ = reply.send(n);
            }
            ExecMsg::Shutdown => return false,
        }
        true
    }

    /// Runs `task`, then frees the buffers it was the last to use (tasks run in order here).
    fn compute_then_free(&mut self, mut task: Task, done: &mut dyn FnMut(u64, Result<(), Error>)) {
        let frees = std::mem::take(&mut task.free_after);
        self.compute(task, done);
        for b in frees {
            self.free(b);
        }
    }

    /// Forgets buffer `buf`; its memory goes to the pool unless someone else still holds it.
    fn free(&mut self, buf: BufferId) {
        if self.suspend.any() && self.suspend.needs(buf) {
            self.suspend.frees.push(buf);
            return;
        }
        self.failed.remove(&buf);
        self.external.remove(&buf);
        let foreign = self.foreign.remove(&buf);
        if let Some(v) = self.store.remove(&buf)
            && !foreign
            && let Ok(v) = Arc::try_unwrap(v)
        {
            self.pool.give(v);
        }
    }

    fn compute(&mut self, task: Task, done: &mut dyn FnMut(u64, Result<(), Error>)) {
        // The profiler: every launch counted, the sampled ones timed from where their kernel
        // starts (`crate::profile::kernel_starts`, after the native tier's look-up or compile
        // and the outputs' allocation) to their end; the others estimated by the collector.
        let timed = crate::profile::active().then(|| {
            if self.samplers.len() >= SAMPLERS_PRUNE {
                self.samplers.clear();
            }
            let key = Arc::as_ptr(&task.program.kernel) as *const () as usize;
            let timed = self.samplers.entry(key).or_default().take();
            if timed {
                crate::profile::arm_kernel_clock();
            }
            timed
        });
        // Read once: whether the launch runs in passes decides how it runs and how it is
        // recorded (a launch in passes makes its own record when its last pass ends,
        // `profile_passes`).
        let pass = passes(&task);
        let ran = self.run_task(&task, pass);
        // Read (and disarmed) whatever happened to the task.
        let clock = if timed == Some(true) {
            crate::profile::kernel_clock()
        } else {
            None
        };
        let result = match ran {
            // Suspended by a trap, or waiting for a suspended launch: reported when resumed
            // (barriers do not wait for it meanwhile).
            Ok(false) => {
                let e = task
                    .outputs
                    .iter()
                    .find_map(|b| self.failed.get(b))
                    .cloned();
                self.suspended(
                    task.id,
                    Some(e.unwrap_or_else(|| {
                        Error::new(ErrorKind::Trap, "waits for a launch a trap suspended")
                    })),
                );
                return;
            }
            r => r.map(|_| ()),
        };
        if let Some(timed) = timed
            && result.is_ok()
            && pass.is_none()
        {
            use crate::profile::LaunchTiming as L;
            let (ns, end, how) = match clock {
                Some((ns, end)) if timed => (ns, Some(end), L::Host),
                // Untimed (sampling): the collector estimates it and places it after the
                // executor's previous launch.
                _ => (u64::MAX, None, L::Estimated),
            };
            crate::exec::scheduler::profile_launch(&task, 0, ns, end, how);
        }
        if let Err(e) = &result {
            for &b in &task.outputs {
                self.failed.insert(b, e.clone());
            }
        }
        done(task.id, result);
    }

    /// Tells the scheduler that `task` is suspended, its results reading as `error` meanwhile
    /// (`Some`), or is resuming (`None`).
    fn suspended(&self, task: u64, error: Option<Error>) {
        let _ = self.sched.send(SchedMsg::Suspended { task, error });
    }

    /// Runs a task (in passes of `pass` elements when set: [`passes`]); `Ok(false)` when it did
    /// not finish: a trap suspended it, or it waits for a suspended launch's results.
    fn run_task(&mut self, task: &Task, pass: Option<usize>) -> Result<bool, Error> {
        if self.suspend.any()
            && let Some(&b) = task.inputs.iter().find(|&&b| self.suspend.pending(b))
        {
            // Reads of its results return the suspension's error until it runs.
            if let Some(e) = self.failed.get(&b).cloned() {
                for &o in &task.outputs {
                    self.failed.insert(o, e.clone());
                }
            }
            self.suspend.waiting.push(task.clone());
            return Ok(false);
        }
        let mut inputs = Vec::with_capacity(task.inputs.len());
        for b in &task.inputs {
            if let Some(e) = self.failed.get(b) {
                return Err(e.clone());
            }
            inputs.push(self.store.get(b).cloned().ok_or_else(|| {
                Error::new(
                    ErrorKind::Runtime,
                    "input buffer missing on the CPU executor",
                )
            })?);
        }
        let shapes = output_shapes(&task.program.kernel);
        let external: Vec<Option<slices::OutPtr>> = task
            .outputs
            .iter()
            .map(|b| self.external.get(b).copied())
            .collect();
        let mut outputs: Vec<TypedVec> = shapes
            .into_iter()
            .zip(&external)
            .map(|((d, len), ext)| {
                if ext.is_some() {
                    return TypedVec::zeros(d, 0);
                }
                let (v, reused) = self.pool.take(d, len);
                if reused {
                    Counters::add(&self.counters.buffers_reused, 1);
                } else {
                    Counters::add(&self.counters.buffers_allocated, 1);
                    Counters::add(&self.counters.bytes_allocated, v.bytes() as u64);
                }
                v
            })
            .collect();
        let refs: Vec<&TypedVec> = inputs.iter().map(|a| &**a).collect();
        let result = match pass {
            Some(pass) => {
                let Kernel::Fused(k) = &*task.program.kernel else {
                    unreachable!("passes are for fused kernels")
                };
                let r = vm::run_checked(
                    k,
                    task.program.launch.tile,
                    &refs,
                    &mut outputs,
                    &external,
                    &task.params,
                    Default::default(),
                    Some(pass),
                );
                match r {
                    Ok(vm::Checked::Done { host_ns }) => {
                        profile_passes(task, 0, host_ns);
                        Ok(())
                    }
                    Ok(vm::Checked::Trapped(e, Some(progress))) => {
                        drop(refs);
                        for &b in &task.outputs {
                            self.failed.insert(b, e.clone());
                        }
                        self.suspend.launches.push(suspend::Suspended {
                            task: task.clone(),
                            inputs,
                            outputs,
                            progress,
                        });
                        return Ok(false);
                    }
                    Ok(vm::Checked::Trapped(e, None)) | Err(e) => Err(e),
                }
            }
            None => run_program(task, &refs, &mut outputs, &external),
        };
        self.finish_outputs(task, outputs, result.is_ok());
        result.map(|()| true)
    }

    /// Stores a finished task's outputs (`ok`), or gives them back to the pool.
    fn finish_outputs(&mut self, task: &Task, outputs: Vec<TypedVec>, ok: bool) {
        if ok {
            for (&b, v) in task.outputs.iter().zip(outputs) {
                if !self.external.contains_key(&b) {
                    self.foreign.remove(&b);
                    self.failed.remove(&b);
                    self.store.insert(b, Arc::new(v));
                }
            }
        } else {
            outputs.into_iter().for_each(|v| self.pool.give(v));
        }
    }
}

/// The pass size a task's launch runs in: for a fused kernel with trap checks while passes are
/// configured (`crate::debug::trap`); `None` for one launch. Device executors ask the same
/// (`exec/gpu/passes.rs`).
pub(crate) fn passes(task: &Task) -> Option<usize> {
    match &*task.program.kernel {
        Kernel::Fused(k) if !k.traps.is_empty() => {
            crate::debug::trap::current().and_then(|c| c.pass_elements)
        }
        _ => None,
    }
}

/// The profiler's record of a launch that ran in passes, made when its last pass ends (on
/// executor `exec`): one launch of its kernel timed by the host over all its passes, however
/// often a trap suspended it (each pass is a `pass` runtime event besides).
pub(crate) fn profile_passes(task: &Task, exec: u32, host_ns: u64) {
    if crate::profile::active() {
        let end = std::time::Instant::now();
        crate::exec::scheduler::profile_launch(
            task,
            exec,
            host_ns,
            Some(end),
            crate::profile::LaunchTiming::Host,
        );
    }
}

/// Element type and length of each output of a kernel.
pub(crate) fn output_shapes(kernel: &Kernel) -> Vec<(crate::ir::DType, usize)> {
    match kernel {
        Kernel::Fused(k) => fused_output_shapes(k),
        Kernel::Intrinsic(c) => vec![(c.dtype, c.out_shape.iter().product())],
    }
}

/// Element type and length of each output of a fused kernel (a reduction's output has the
/// domain's `outer` elements, an element-wise one the whole domain).
pub(crate) fn fused_output_shapes(
    k: &crate::proggen::kernel::FusedKernel,
) -> Vec<(crate::ir::DType, usize)> {
    (0..k.outputs.len())
        .map(|o| {
            let is_red = k.reductions.iter().any(|r| r.output as usize == o);
            let len = if is_red {
                k.domain.outer
            } else {
                k.domain.len()
            };
            (k.outputs[o], len)
        })
        .collect()
}

/// Runs a task's kernel on the CPU (native tier, tile VM or intrinsic) into `outputs` (or the
/// application's memory where `external` says); a panic becomes an error naming the call site.
pub(crate) fn run_program(
    task: &Task,
    refs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<slices::OutPtr>],
) -> Result<(), Error> {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match &*task.program.kernel {
            Kernel::Fused(k) => {
                // A reduction over outer axes runs in its input's row order.
                let rows = rows::RowPlan::of(k);
                let kr = rows.as_ref().map_or(k, |g| &g.kernel);
                let tile = task.program.launch.tile;
                let p = &task.params;
                if !k.traps.is_empty() {
                    // Trap checks run on the tile VM (the native tier stands aside).
                    crate::profile::kernel_starts();
                    return match vm::run_checked(
                        k,
                        tile,
                        refs,
                        outputs,
                        external,
                        p,
                        Default::default(),
                        None,
                    )? {
                        vm::Checked::Done { .. } => Ok(()),
                        vm::Checked::Trapped(e, _) => Err(e),
                    };
                }
                let native = native::lookup(&task.program.kernel, kr, rows.is_none());
                crate::profile::kernel_starts();
                match (native, &rows) {
                    (Ok(Some(nk)), Some(g)) => native::run_rows(&nk, g, refs, outputs, external, p),
                    (Ok(Some(nk)), None) => native::run(&nk, k, refs, outputs, external, p),
                    (Ok(None), Some(g)) => vm::run_rows(g, tile, refs, outputs, external, p),
                    (Ok(None), None) => vm::run_fused(k, tile, refs, outputs, external, p),
                    (Err(e), _) => Err(e),
                }
            }
            Kernel::Intrinsic(c) => {
                crate::profile::kernel_starts();
                crate::intrinsics::cpu::run_all(c, refs, outputs).map_err(|e| {
                    let site = task.program.sites.first().copied();
                    let e = crate::debug::trap::report::finish_index_trap(e, site);
                    match site {
                        Some(s) => e.origin(s),
                        None => e,
                    }
                })
            }
        }
    }));
    match run {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let mut e = Error::new(
                ErrorKind::Runtime,
                format!("internal error in the CPU executor: {what}"),
            )
            .hint("this is a bug in arrayflow; please report it with the program that triggers it");
            if let Some(&s) = task.program.sites.first() {
                e = e.origin(s);
            }
            Err(e)
        }
    }
}
