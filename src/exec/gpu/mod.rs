//! The GPU executors (the seed's 900-1) on their own threads: one loop, `GpuLoop`, written once
//! over a small device API (`DeviceApi`) that `opencl.rs` and `wgpu.rs` implement.
//!
//! The loop owns the device's buffers (`store.rs`: allocation with a pool, the host backing store
//! and swap when memory runs out), turns each task's kernel into a [`GpuPlan`] once per kernel
//! (`plans.rs`), and runs the seed's Move_Data_In / Compute_Data / Move_Data_Out requests. A
//! plan's constant table (`GpuPlan::kept`: Bluestein's FFT filter) is computed by its first
//! launch and kept for the later ones of any plan with the same key (`kept.rs`).
//! Completion is asynchronous: the device API calls back when work is done and the callback tells
//! the scheduler. When the runtime's threads spin, the loop itself polls for finished work between
//! messages and while it waits (`DeviceApi::poll`), so the driver sees one thread; before it
//! blocks, and after every submission when the threads do not spin, it hands what is left to the
//! API's completion thread (`DeviceApi::park`). A kernel the device cannot run — unsupported,
//! failing to compile even split, or out of memory after swapping — runs on the CPU from the
//! executor's host copies (`fallback.rs`), so no computed value is lost.

mod clocks;
mod device_trap;
mod fallback;
mod kept;
pub mod opencl;
mod opencl_staging;
mod passes;
mod plans;
mod staging;
mod store;
pub mod timing;
pub mod wgpu;
pub mod wgpu_probe;
mod wgpu_staging;

use super::scheduler::{ExecMsg, SchedMsg, Task};
use super::wait::Spin;
use super::{BufferId, Caps, ExecHandle, TypedVec};
use crate::counters::Counters;
use crate::error::{Error, ErrorKind};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Target};
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use store::Store;

/// A callback run on a completion thread when device work finishes.
pub type Completion = Box<dyn FnOnce(Result<(), String>) + Send>;

/// What a GPU executor needs from a device API. Everything is enqueued in order on one queue;
/// `on_done` and downloads call back once all work enqueued before them has finished.
pub(crate) trait DeviceApi: Send + 'static {
    type Buf: Send + 'static;
    type Program: Send + Sync + 'static;
    fn target(&self) -> Target;
    /// The runtime's counters (the executor adds to them; passed in when the API was opened).
    fn counters(&self) -> &Counters;
    /// The code generator this device takes.
    fn dialect(&self) -> plans::Dialect;
    /// A device buffer of `bytes`; an error means the device is out of memory.
    fn alloc(&mut self, bytes: u64) -> Result<Self::Buf, String>;
    /// Writes host data (converted to the device's element layout) into `buf`, in order with the
    /// work enqueued before. The API may keep `data` (shared) until the write is done, rather than wait for it.
    fn upload(&mut self, buf: &mut Self::Buf, data: &Arc<TypedVec>) -> Result<(), String>;
    fn zero(&mut self, buf: &mut Self::Buf, bytes: u64) -> Result<(), String>;
    /// Compiles (or finds in the program cache) the plan's source.
    fn compile(&mut self, plan: &GpuPlan) -> Result<Arc<Self::Program>, String>;
    /// Enqueues pass `pass` of `plan` with `bufs` bound in the pass's order, in `groups`
    /// work-groups (the pass's own count, or fewer for a range of a ranged pass,
    /// `plans::Step::range`).
    fn dispatch(
        &mut self,
        prog: &Self::Program,
        plan: &GpuPlan,
        pass: usize,
        bufs: &[&Self::Buf],
        params: &[u64],
        groups: u32,
    ) -> Result<(), String>;
    /// Reads `out.len()` elements of `buf` into `out`'s memory, then calls `done`. `out` must stay
    /// valid until then (the caller keeps it alive in `done`). The executor calls
    /// [`DeviceApi::submit`] after it, as after [`DeviceApi::on_done`].
    fn download(&mut self, buf: &Self::Buf, out: HostSlice, done: Completion);
    /// Calls `done` once all work enqueued so far has finished.
    fn on_done(&mut self, done: Completion);
    /// How the dispatches enqueued from now on are timed (the default, after a task's: not).
    fn set_timing(&mut self, _timing: timing::Timing) {}
    /// Whether this device has armed timers ([`timing::armed`], and for wgpu an adapter with
    /// timestamp queries).
    fn timers(&self) -> bool {
        false
    }
    /// Submits what was enqueued (wgpu batches dispatches into one submission until then, and
    /// may hold them back to go with later work while the device is busy: until the next
    /// [`DeviceApi::poll`] finds it less busy, or [`DeviceApi::park`]). Counts each submission
    /// handed to the device in `stats().device.submissions`.
    fn submit(&mut self);
    /// Drops what the API keeps for reuse and could hold device memory (wgpu's bind groups);
    /// called when an allocation fails.
    fn trim(&mut self) {}
    /// Runs the completions of submitted work that has finished, without blocking; returns
    /// whether submitted work is still watched here. A submission's completions stay with the
    /// executor until [`DeviceApi::park`]; while the runtime's threads spin, the executor polls
    /// them between messages, so every driver call comes from its thread.
    fn poll(&mut self) -> bool;
    /// Submits held work, and hands the completions watched here to the API's completion
    /// thread, which blocks on them; called before the executor blocks, and after each
    /// submission when the threads do not spin (so nothing is held back then).
    fn park(&mut self);
}

/// Enqueues the download of `buf` into `out`; the receiver hears its result once it has
/// arrived. A checked launch's fault words and a resumed launch's reads into caller memory wait
/// on it with `wait_download` (a buffer's host copy goes through `export` and `host_copy`).
fn enqueue_download<A: DeviceApi>(
    api: &mut A,
    buf: &A::Buf,
    out: HostSlice,
) -> Receiver<Result<(), String>> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    api.download(
        buf,
        out,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    rx
}

/// Host memory a download writes: `len` elements of `dtype` at `ptr`.
#[derive(Clone, Copy)]
pub struct HostSlice {
    pub ptr: *mut u8,
    pub dtype: DType,
    pub len: usize,
}
// SAFETY: the owner keeps the memory alive and untouched until the download's completion runs.
unsafe impl Send for HostSlice {}

impl HostSlice {
    fn of(v: &mut TypedVec) -> HostSlice {
        let (ptr, len) = crate::with_typed_vec!(v, v => (v.as_mut_ptr() as *mut u8, v.len()));
        HostSlice {
            ptr,
            dtype: v.dtype(),
            len,
        }
    }
}

/// Limits a device executor works within (the defaults are the device's own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Device memory the executor may hold, in bytes (default: 90% of the device's).
    pub memory: Option<u64>,
    /// Instructions a fused kernel may have before its compile is made to fail, standing in for a
    /// driver that rejects big kernels (to exercise the split-and-retry path; default: none).
    pub kernel_instructions: Option<usize>,
    /// How long the runtime's threads spin before blocking while they wait for this executor
    /// (`ARRAYFLOW_SPIN_US`, µs; default: 2 ms on a GPU with at least 4
    /// hardware threads on the host, else none; see `exec/wait.rs`).
    pub spin: Option<std::time::Duration>,
    /// OpenCL: pieces of work one completion marker covers at most while the device is busy
    /// (`ARRAYFLOW_OPENCL_DEFER`; default 8, `1`: a marker after each; see `opencl.rs`).
    pub opencl_defer: Option<usize>,
    /// wgpu: submissions in flight at which new work is held back and submitted with what
    /// follows (`ARRAYFLOW_WGPU_HOLD`; default 0: never; see `wgpu.rs`).
    pub wgpu_hold: Option<usize>,
}

impl Limits {
    /// `ARRAYFLOW_DEVICE_MEMORY` (bytes, or with a K, M or G suffix),
    /// `ARRAYFLOW_DEVICE_KERNEL_LIMIT`, `ARRAYFLOW_SPIN_US`, `ARRAYFLOW_OPENCL_DEFER` and
    /// `ARRAYFLOW_WGPU_HOLD`.
    pub fn from_env() -> Limits {
        use crate::settings::number as num;
        Limits {
            memory: std::env::var("ARRAYFLOW_DEVICE_MEMORY")
                .ok()
                .and_then(|v| store::parse_size(&v)),
            kernel_instructions: num("ARRAYFLOW_DEVICE_KERNEL_LIMIT"),
            spin: num("ARRAYFLOW_SPIN_US").map(std::time::Duration::from_micros),
            opencl_defer: num("ARRAYFLOW_OPENCL_DEFER"),
            wgpu_hold: num("ARRAYFLOW_WGPU_HOLD"),
        }
    }
}

/// Starts the executor thread for `device`. The device API is opened on that thread, which then
/// makes every launch (the thread that creates the context is the one that uses it).
pub(crate) fn start(
    device: &super::DeviceInfo,
    limits: Limits,
    spin: Spin,
    sched: Sender<SchedMsg>,
    counters: Arc<Counters>,
) -> Result<ExecHandle, String> {
    let index = device.index;
    let c = counters.clone();
    match device.backend {
        super::Backend::OpenCl => spawn(
            move || opencl::OpenClApi::new(index, spin, limits.opencl_defer, c),
            device,
            limits,
            spin,
            sched,
            counters,
        ),
        super::Backend::Wgpu => spawn(
            move || wgpu::WgpuApi::new(index, spin, limits.wgpu_hold, c),
            device,
            limits,
            spin,
            sched,
            counters,
        ),
        super::Backend::Cpu => Err("the CPU is not a device executor".into()),
    }
}

/// Spawns the executor thread, which opens the device API with `open` and reports whether it
/// could before it runs the loop.
fn spawn<A: DeviceApi>(
    open: impl FnOnce() -> Result<A, String> + Send + 'static,
    device: &super::DeviceInfo,
    limits: Limits,
    spin: Spin,
    sched: Sender<SchedMsg>,
    counters: Arc<Counters>,
) -> Result<ExecHandle, String> {
    let name = device.to_string();
    let memory = device.memory;
    let (tx, rx) = unbounded();
    let me = tx.clone();
    let (opened_tx, opened_rx) = crossbeam_channel::bounded(1);
    let thread_name = format!("arrayflow-{}", name.split(' ').next().unwrap_or("gpu"));
    let limit = limits
        .memory
        .unwrap_or_else(|| memory.map(|m| m / 10 * 9).unwrap_or(u64::MAX));
    super::lifetime::spawn(&thread_name, move || {
        let api = match open() {
            Ok(api) => api,
            Err(e) => {
                let _ = opened_tx.send(Err(e));
                return;
            }
        };
        // f64 work goes to this executor only when its code generator renders f64 for the
        // device.
        let _ = opened_tx.send(Ok(api.target().fp64));
        GpuLoop {
            watch: spin != Spin::OFF,
            store: Store::new(limit),
            plans: plans::Plans::new(limits.kernel_instructions),
            kept: kept::KeptTables::new(),
            api,
            sched,
            me,
            counters,
            failed: AHashMap::new(),
            external: AHashMap::new(),
            launched: Vec::new(),
            suspend: Default::default(),
        }
        .run(rx, spin)
    })
    .map_err(|e| format!("cannot start a GPU executor thread: {e}"))?;
    let fp64 = opened_rx
        .recv()
        .map_err(|_| "the GPU executor thread stopped while opening the device".to_string())??;
    tracing::info!(target: "arrayflow::exec", "device executor: {name}");
    Ok(ExecHandle {
        tx,
        caps: Caps { fp64 },
        name,
    })
}

struct GpuLoop<A: DeviceApi> {
    /// Whether this thread watches its submissions' completions ([`DeviceApi::poll`]): when the
    /// runtime's threads spin. Otherwise each submission's go to the completion thread at once.
    watch: bool,
    api: A,
    store: Store<A::Buf>,
    plans: plans::Plans<A::Program>,
    /// Tables kept between launches (`GpuPlan::kept`).
    kept: kept::KeptTables<A::Buf>,
    sched: Sender<SchedMsg>,
    /// This executor's own queue (a faulted task is queued again to run on the CPU).
    me: Sender<ExecMsg>,
    counters: Arc<Counters>,
    /// Outputs of failed tasks, with the error a task reading them fails with.
    failed: AHashMap<BufferId, Error>,
    /// Outputs that are the application's memory: downloaded there once computed.
    external: AHashMap<BufferId, super::HostDest>,
    /// Flush start times of the programs enqueued since the last submission: their launch time
    /// (`stats().device.launch_ns`) ends when the submission hands them to the device.
    launched: Vec<std::time::Instant>,
    /// Launches in passes a trap suspended, and the tasks waiting for them (`passes.rs`).
    suspend: passes::Suspensions<A::Buf, A::Program>,
}

impl<A: DeviceApi> GpuLoop<A> {
    fn run(mut self, rx: Receiver<ExecMsg>, spin: Spin) {
        while let Some(msg) = self.next(&rx, spin) {
            if super::lifetime::stopping() && !matches!(msg, ExecMsg::Shutdown) {
                // The process is exiting: queued work is dropped, not run.
                continue;
            }
            match msg {
                ExecMsg::MoveDataIn { buf, data } => self.move_in(buf, data),
                ExecMsg::ComputeData(task) => {
                    self.compute_then_free(task);
                    self.submit();
                }
                ExecMsg::ComputeSequential(tasks) => {
                    for t in tasks {
                        self.compute_then_free(t);
                    }
                    self.submit();
                }
                ExecMsg::MoveDataOut { buf, reply } => {
                    let counters = self.counters.clone();
                    self.export(buf, move |r| {
                        if let Ok(v) = &r {
                            Counters::add(&counters.bytes_downloaded, v.bytes() as u64);
                        }
                        let _ = reply.send(r);
                    });
                }
                ExecMsg::Export { buf, to } => {
                    let sched = self.sched.clone();
                    self.export(buf, move |data| {
                        let _ = sched.send(SchedMsg::Exported { buf, to, data });
                    });
                }
                ExecMsg::BindExternal { buf, ptr } => {
                    self.external.insert(buf, ptr);
                }
                ExecMsg::RerunOnCpu(task, first) => {
                    // Outputs the application released while the task was in flight are gone
                    // from the store (stream-ordered release); the rerun must not bring them back.
                    let released: Vec<BufferId> = task
                        .outputs
                        .iter()
                        .copied()
                        .filter(|&b| self.store.shape(b).is_none())
                        .collect();
                    let result = match device_trap::from_device(&mut self, &task, first) {
                        Some(r) => r,
                        None => {
                            let r = self.run_on_cpu(&task);
                            device_trap::confirm_index_trap(&task, first, &r);
                            r
                        }
                    };
                    self.finish_now(&task, result);
                    for b in released {
                        self.failed.remove(&b);
                        self.store.free(b);
                    }
                    self.submit();
                }
                ExecMsg::Free(buf) => self.free(buf),
                ExecMsg::Resume(reply) => {
                    let n = self.resume();
                    let _ = reply.send(n);
                }
                ExecMsg::Shutdown => break,
            }
        }
        self.api.park();
    }

    /// The next message (`None` once the runtime is gone). It first runs the completions of
    /// device work that has finished (once per message, so a busy queue does not hold them up);
    /// while it waits with work on the device, it runs them as they finish (for the spin budget;
    /// then it hands them to the completion thread and blocks).
    fn next(&mut self, rx: &Receiver<ExecMsg>, spin: Spin) -> Option<ExecMsg> {
        loop {
            let watching = self.watch && self.api.poll();
            match rx.try_recv() {
                Ok(msg) => return Some(msg),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            if !watching {
                return spin.recv(rx).ok();
            }
            let mut msg = None;
            let api = &mut self.api;
            let idle = spin.until(|| match rx.try_recv() {
                Ok(m) => {
                    msg = Some(Some(m));
                    true
                }
                Err(TryRecvError::Disconnected) => {
                    msg = Some(None);
                    true
                }
                Err(TryRecvError::Empty) => !api.poll(),
            });
            if let Some(msg) = msg {
                return msg;
            }
            if !idle {
                self.api.park();
                return rx.recv().ok();
            }
        }
    }

    /// Submits what was enqueued and blocks until the download behind `arrived`
    /// ([`enqueue_download`]) has written its host memory.
    fn wait_download(&mut self, arrived: Receiver<Result<(), String>>) -> Result<(), String> {
        self.submit();
        self.api.park();
        arrived.recv().map_err(|_| "download lost".to_string())?
    }

    /// Hands what was enqueued to the device API's submission; the programs enqueued since the
    /// last one count as launched now.
    fn submit(&mut self) {
        let t0 = std::time::Instant::now();
        self.api.submit();
        Counters::add(
            &self.counters.device.submit_ns,
            t0.elapsed().as_nanos() as u64,
        );
        if !self.watch {
            self.api.park();
        }
        let d = &self.counters.device;
        for started in self.launched.drain(..) {
            Counters::add(&d.launch_ns, started.elapsed().as_nanos() as u64);
            Counters::add(&d.launches, 1);
        }
    }

    /// Move_Data_In: the data goes to the device now; if it cannot get memory it stays in the
    /// host backing store until a kernel needs it.
    fn move_in(&mut self, buf: BufferId, data: Arc<TypedVec>) {
        let bytes = self.dev_bytes(data.dtype(), data.len());
        self.store.insert_host(buf, data.clone());
        if let Ok(mut b) = self.alloc(bytes, &[], false) {
            match self.api.upload(&mut b, &data) {
                Ok(()) => self
                    .store
                    .set_device(buf, b, bytes, data.dtype(), data.len()),
                Err(e) => tracing::warn!(target: "arrayflow::exec", "upload failed: {e}"),
            }
        }
    }

    /// Move_Data_Out: the buffer's value as host data, from the backing store or downloaded.
    fn export(
        &mut self,
        buf: BufferId,
        reply: impl FnOnce(crate::Result<Arc<TypedVec>>) + Send + 'static,
    ) {
        if let Some(e) = self.failed.get(&buf) {
            return reply(Err(e.clone()));
        }
        if let Some(h) = self.store.host(buf) {
            return reply(Ok(h));
        }
        let Some((dtype, len)) = self.store.shape(buf) else {
            return reply(Err(Error::new(
                ErrorKind::Runtime,
                "the device executor has no such buffer",
            )));
        };
        let mut out = Box::new(TypedVec::zeros(dtype, len));
        let slice = HostSlice::of(&mut out);
        let dev = self
            .store
            .device(buf)
            .expect("a buffer without host data is on the device");
        self.api.download(
            dev,
            slice,
            Box::new(move |r| {
                reply(
                    r.map(|()| Arc::new(*out))
                        .map_err(|e| device_error(format!("download failed: {e}"))),
                )
            }),
        );
        self.submit();
    }

    fn dev_bytes(&self, dtype: DType, len: usize) -> u64 {
        let wgsl = self.api.dialect() == plans::Dialect::Wgsl;
        crate::proggen::codegen::gpu::elem_bytes(dtype, wgsl) * len as u64
    }

    /// A device buffer: from the pool, newly allocated, or after moving idle buffers to the host
    /// backing store. `keep` are the buffers the current task uses (never swapped out). Only
    /// programs' results count in the buffer statistics (`result`), as on the CPU executor, not
    /// uploads, scratch space or the temporaries of split kernels.
    fn alloc(&mut self, bytes: u64, keep: &[BufferId], result: bool) -> Result<A::Buf, String> {
        let bytes = bytes.max(4);
        let count = |c: &std::sync::atomic::AtomicU64, n| {
            if result {
                Counters::add(c, n)
            }
        };
        if let Some(b) = self.store.take_pooled(bytes) {
            count(&self.counters.buffers_reused, 1);
            return Ok(b);
        }
        loop {
            if self.store.fits(bytes) {
                match self.api.alloc(bytes) {
                    Ok(b) => {
                        self.store.allocated(bytes);
                        count(&self.counters.buffers_allocated, 1);
                        count(&self.counters.bytes_allocated, bytes);
                        return Ok(b);
                    }
                    Err(e) => {
                        tracing::debug!(target: "arrayflow::exec", "device allocation of {bytes} bytes failed: {e}")
                    }
                }
            }
            Counters::add(&self.counters.device.alloc_failures, 1);
            self.api.trim();
            if self.store.drop_pool() {
                continue;
            }
            let tables = self.kept.drain();
            if !tables.is_empty() {
                for (b, bytes) in tables {
                    self.store.pool(b, bytes);
                }
                continue;
            }
            // Swap the least recently used idle buffer to the host backing store.
            let Some(victim) = self.store.victim(keep) else {
                return Err(format!("out of device memory for {bytes} bytes"));
            };
            self.swap_out(victim)?;
        }
    }

    fn swap_out(&mut self, buf: BufferId) -> Result<(), String> {
        let t0 = crate::profile::now();
        // A failed buffer's data is never read (reads report its error): it is dropped, not kept.
        if !self.failed.contains_key(&buf) {
            self.host_copy(buf).map_err(|e| e.to_string())?;
        }
        self.store.drop_device(buf);
        Counters::add(&self.counters.device.swapped_out, 1);
        if let Some(t0) = t0 {
            // The download, waited for (nothing when the host copy was still there).
            let bytes = self.store.host(buf).map_or(0, |h| h.bytes() as u64);
            crate::profile::runtime("swap", "out", None, t0, bytes, None);
        }
        Ok(())
    }

    /// The buffer on the device, brought back from the backing store if needed.
    fn resident(&mut self, buf: BufferId, keep: &[BufferId]) -> Result<(), String> {
        if self.store.device(buf).is_some() {
            self.store.touch(buf);
            return Ok(());
        }
        let data = self
            .store
            .host(buf)
            .ok_or("input buffer missing on the device executor")?;
        let bytes = self.dev_bytes(data.dtype(), data.len());
        let mut b = self.alloc(bytes, keep, false)?;
        // The profiler times the staging and enqueueing of the upload (not a swap-out that made
        // room for it, which has its own record); the copy then overlaps the device's work.
        let t0 = crate::profile::now();
        self.api.upload(&mut b, &data)?;
        self.store
            .set_device(buf, b, bytes, data.dtype(), data.len());
        Counters::add(&self.counters.device.swapped_in, 1);
        if let Some(t0) = t0 {
            crate::profile::runtime("swap", "in", None, t0, data.bytes() as u64, None);
        }
        Ok(())
    }

    /// Runs (enqueues) `task`, then frees the buffers it was the last to use: the queue runs in
    /// order, so what is enqueued later may reuse their memory.
    fn compute_then_free(&mut self, mut task: Task) {
        let frees = std::mem::take(&mut task.free_after);
        self.compute(task);
        for b in frees {
            self.free(b);
        }
    }

    /// Forgets buffer `buf`: its device memory goes to the pool.
    fn free(&mut self, buf: BufferId) {
        if self.free_held_back(buf) {
            return;
        }
        self.failed.remove(&buf);
        self.external.remove(&buf);
        self.store.free(buf);
    }

    fn compute(&mut self, task: Task) {
        Counters::add(
            &self.counters.device.received_ns,
            task.started.elapsed().as_nanos() as u64,
        );
        // Tasks that read a suspended launch's results wait for it (`passes.rs`).
        if self.waits_for_suspended(&task) {
            return;
        }
        if let Some(e) = task.inputs.iter().find_map(|b| self.failed.get(b)) {
            let e = e.clone();
            return self.finish_now(&task, Err(e));
        }
        let plan = self.plans.get(&task.program.kernel, &mut self.api);
        if super::cpu::passes(&task).is_some() {
            let plan = match plan {
                plans::Runnable::Device(p) => Some(p),
                plans::Runnable::Cpu(_) => None,
            };
            return self.run_in_passes(task, plan);
        }
        let t0 = crate::profile::now();
        let result = match plan {
            plans::Runnable::Device(plan) => match self.run_on_device(&task, &plan) {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(target: "arrayflow::exec",
                        "device could not run a program ({e}); it runs on the CPU");
                    self.run_on_cpu(&task)
                }
            },
            plans::Runnable::Cpu(reason) => {
                tracing::debug!(target: "arrayflow::exec", "program runs on the CPU: {reason}");
                self.run_on_cpu(&task)
            }
        };
        if let Some(t0) = t0
            && result.is_ok()
        {
            // The fallback ran on the CPU, on this thread: host time, the CPU's record.
            let end = std::time::Instant::now();
            let ns = (end - t0).as_nanos() as u64;
            crate::exec::scheduler::profile_launch(
                &task,
                0,
                ns,
                Some(end),
                crate::profile::LaunchTiming::Host,
            );
            crate::profile::runtime(
                "fallback",
                "device -> cpu",
                None,
                t0,
                0,
                task.program.sites.first().copied(),
            );
        }
        self.finish_now(&task, result);
    }

    /// Runs a task's plan (or the plans of its split halves, in order) on the device; completion
    /// is reported asynchronously.
    fn run_on_device(
        &mut self,
        task: &Task,
        dplan: &plans::DevicePlan<A::Program>,
    ) -> Result<(), String> {
        let steps = &dplan.steps;
        let keep: Vec<BufferId> = task.inputs.iter().chain(&task.outputs).copied().collect();
        for &b in &task.inputs {
            self.resident(b, &keep)?;
        }
        // Every buffer the steps bind is allocated before anything is enqueued, so a failure
        // (out of memory, a driver error) gives all of them back and the task can run elsewhere.
        let mut held = Held::default();
        if let Err(e) = self.allocate(task, dplan, &keep, &mut held) {
            self.give_back(held);
            return Err(e);
        }
        // The profiler: the host's clock from the enqueue to the report, and the device's own
        // time where its timers are armed and sampling picks this launch (else it is estimated).
        let profiled = crate::profile::now();
        let timing = if self.api.timers() {
            let sampled = profiled.is_some() && dplan.sampler.take();
            timing::Timing {
                on: sampled || timing::kernel_times(),
                task: (profiled.is_some() && (sampled || timing::kernel_times()))
                    .then_some(task.id),
            }
        } else {
            timing::Timing::default()
        };
        let profiled = profiled.map(|t| {
            use crate::profile::LaunchTiming as L;
            let how = match (timing.task, self.api.timers()) {
                (Some(_), _) => L::Device,
                (None, true) => L::Estimated,
                (None, false) => L::Host,
            };
            (t, how)
        });
        if timing.on {
            self.api.set_timing(timing);
        }
        let enqueued = self.enqueue(task, dplan, &held, None);
        if timing.on {
            self.api.set_timing(timing::Timing::default());
        }
        if let Err(e) = enqueued {
            self.give_back(held);
            return Err(e);
        }
        let Held {
            outputs,
            temps,
            scratch,
            ..
        } = held;
        let mut faults = Vec::new();
        for (step, mut bufs) in steps.iter().zip(scratch) {
            // A kept table (found or just computed) stays for the launches after this one.
            if let Some(k) = &step.plan.kept
                && let Some((t, bytes)) = bufs[k.scratch as usize].take()
            {
                for (b, bytes) in self.kept.put(&k.key, t, bytes) {
                    self.store.pool(b, bytes);
                }
            }
            if let Some(f) = step.plan.fault {
                let words = if step.plan.first_word() { 2 } else { 1 };
                let fault = bufs.swap_remove(f as usize);
                faults.push((fault.expect("the fault word is allocated"), words));
            }
            for (s, bytes) in bufs.into_iter().flatten() {
                self.store.pool(s, bytes);
            }
        }
        for (t, bytes) in temps {
            self.store.pool(t, bytes);
        }
        // The outputs now belong to the store; external ones are also downloaded to the
        // application's memory.
        let mut external = Vec::new();
        for (b, buf, bytes, dtype, len) in outputs {
            self.store.set_device(b, buf, bytes, dtype, len);
            if let Some(ptr) = self.external.get(&b) {
                let slice = HostSlice {
                    ptr: ptr.ptr,
                    dtype,
                    len,
                };
                external.push((b, slice));
            }
        }
        // One report when every fault word is read and every external download is done. Each
        // fault buffer's fault code and, where it keeps one, its first-failing word.
        let fault_words: Vec<Arc<[AtomicU32; 2]>> = faults
            .iter()
            .map(|_| Arc::new([AtomicU32::new(0), AtomicU32::new(0)]))
            .collect();
        // The first failing element a one-step kernel's device found (a split kernel's halves
        // number their checks apart: the CPU searches the launch).
        let one_step = steps.len() == 1;
        let report = {
            let (sched, me) = (self.sched.clone(), self.me.clone());
            let (id, site) = (task.id, task.program.sites.first().copied());
            let words = fault_words.clone();
            let task = task.clone();
            let counters = self.counters.clone();
            move |err: Option<String>| {
                let ns = task.started.elapsed().as_nanos() as u64;
                Counters::add(&counters.device.done_ns, ns);
                if let Some((t0, how)) = profiled
                    && err.is_none()
                {
                    let end = std::time::Instant::now();
                    let host_ns = (end - t0).as_nanos() as u64;
                    crate::exec::scheduler::profile_launch(
                        &task,
                        task.exec as u32,
                        host_ns,
                        Some(end),
                        how,
                    );
                }
                if err.is_none() && words.iter().any(|w| w[0].load(Ordering::Relaxed) != 0) {
                    // A kernel faulted (integer division by zero, an index out of range, a trap):
                    // the CPU runs the task again (for a trap with the device's first failing
                    // element, only that element's tile) and reports the exact error, with its
                    // call site.
                    let first = match &words[..] {
                        [w] if one_step => w[1].load(Ordering::Relaxed),
                        _ => 0,
                    };
                    let _ = me.send(ExecMsg::RerunOnCpu(task, first));
                    return;
                }
                let result = match err {
                    Some(e) => Err(with_site(device_error(e), site)),
                    None => Ok(()),
                };
                let _ = sched.send(SchedMsg::Done { task: id, result });
            }
        };
        let countdown = Countdown::new(1 + faults.len() + external.len(), report);
        for (((s, bytes), n), word) in faults.into_iter().zip(fault_words) {
            let mut cell = Box::new([0u32; 2]);
            let slice = HostSlice {
                ptr: cell.as_mut_ptr() as *mut u8,
                dtype: DType::U32,
                len: n,
            };
            let c = countdown.completion();
            self.api.download(
                &s,
                slice,
                Box::new(move |r| {
                    word[0].store(cell[0], Ordering::Relaxed);
                    word[1].store(cell[1], Ordering::Relaxed);
                    c(r)
                }),
            );
            self.store.pool(s, bytes);
        }
        for (b, slice) in external {
            let dev = self.store.device(b).expect("just stored");
            self.api.download(dev, slice, countdown.completion());
        }
        self.api.on_done(countdown.completion());
        let d = &self.counters.device;
        Counters::add(&d.kernels, steps.len() as u64);
        if dplan.intrinsic {
            Counters::add(&d.intrinsics, 1);
        }
        self.launched.push(task.started);
        Ok(())
    }

    fn allocate(
        &mut self,
        task: &Task,
        dplan: &plans::DevicePlan<A::Program>,
        keep: &[BufferId],
        held: &mut Held<A::Buf>,
    ) -> Result<(), String> {
        let shapes = super::cpu::output_shapes(&task.program.kernel);
        for (&b, &(dtype, len)) in task.outputs.iter().zip(&shapes) {
            let bytes = self.dev_bytes(dtype, len);
            let buf = self.alloc(bytes, keep, true)?;
            held.outputs.push((b, buf, bytes, dtype, len));
        }
        for &(dtype, len) in &dplan.temps {
            let bytes = self.dev_bytes(dtype, len);
            held.temps.push((self.alloc(bytes, keep, false)?, bytes));
        }
        for step in &dplan.steps {
            // A table kept from an earlier launch: bound instead of computed, and the scratch
            // buffers only its passes use are not allocated.
            let found = step.plan.kept.as_ref().and_then(|k| {
                let t = self.kept.take(&k.key)?;
                Some((kept::spared(&step.plan, k), k.scratch, t))
            });
            held.kept_hit.push(found.is_some());
            let (spared, table_at, mut table) = match found {
                Some((s, at, t)) => (s, at as usize, Some(t)),
                None => (Vec::new(), usize::MAX, None),
            };
            held.scratch.push(Vec::new());
            for (i, &bytes) in step.plan.scratch.iter().enumerate() {
                if spared.get(i).copied().unwrap_or(false) {
                    let t = if i == table_at { table.take() } else { None };
                    held.scratch.last_mut().expect("pushed").push(t);
                    continue;
                }
                let mut s = self.alloc(bytes, keep, false)?;
                // Only the fault word must start at zero: the first pass writes every partial
                // slot before the final pass reads it.
                let zeroed = if step.plan.fault == Some(i as u32) {
                    self.api.zero(&mut s, bytes)
                } else {
                    Ok(())
                };
                held.scratch
                    .last_mut()
                    .expect("pushed")
                    .push(Some((s, bytes)));
                zeroed?;
            }
        }
        Ok(())
    }

    /// Enqueues every pass of every step with its buffers bound. A ranged plan
    /// ([`GpuPlan::range`]) runs its first pass over the units `range` (`None`: all of them) in as
    /// many of its work-groups as that range needs, and its later passes only with the range that
    /// ends the launch.
    fn enqueue(
        &mut self,
        task: &Task,
        dplan: &plans::DevicePlan<A::Program>,
        held: &Held<A::Buf>,
        range: Option<(u64, u64)>,
    ) -> Result<(), String> {
        let steps = dplan.steps.iter().zip(&held.scratch).zip(&held.kept_hit);
        for ((step, scratch), &hit) in steps {
            let bind = |a: &BufArg| -> &A::Buf {
                let slot = match *a {
                    BufArg::Scratch(i) => {
                        return &scratch[i as usize]
                            .as_ref()
                            .expect("only skipped passes bind spared scratch buffers")
                            .0;
                    }
                    BufArg::Input(i) => step.inputs[i as usize],
                    BufArg::Output(i) => step.outputs[i as usize],
                };
                match (slot, a) {
                    (plans::Slot::Temp(t), _) => &held.temps[t].0,
                    (plans::Slot::Task(t), BufArg::Input(_)) => self
                        .store
                        .device(task.inputs[t])
                        .expect("inputs are resident"),
                    (plans::Slot::Task(t), _) => &held.outputs[t].1,
                }
            };
            // The passes of a table kept from an earlier launch are not run again.
            let skip = match &step.plan.kept {
                Some(k) if hit => {
                    Counters::add(&self.counters.device.kept_hits, 1);
                    k.passes as usize
                }
                _ => 0,
            };
            let ranged = step.plan.range.map(|r| (r, range.unwrap_or((0, r.units))));
            for (pi, pass) in step.plan.passes.iter().enumerate().skip(skip) {
                // A later pass (a reduction's `af_final`) runs after the range that ends the launch.
                if matches!(ranged, Some((r, (_, end))) if pi > 0 && end < r.units) {
                    continue;
                }
                if pass.groups > 0 {
                    Counters::add(&self.counters.device.dispatches, 1);
                    let bufs: Vec<&A::Buf> = pass.buffers.iter().map(bind).collect();
                    let (params, groups) = match ranged {
                        Some((r, (first, end))) if pi == 0 => {
                            let mut p = task.params.to_vec();
                            p.resize(r.slot as usize, 0);
                            p.extend([first, end]);
                            let groups = range_groups(pass.groups, r.units, end - first);
                            (std::borrow::Cow::Owned(p), groups)
                        }
                        _ => (std::borrow::Cow::Borrowed(&task.params[..]), pass.groups),
                    };
                    tracing::trace!(target: "arrayflow::exec::dispatch", "{} params {:?}", timing::label(&step.plan, pi), params);
                    self.api
                        .dispatch(&step.program, &step.plan, pi, &bufs, &params, groups)?;
                }
            }
        }
        Ok(())
    }

    fn give_back(&mut self, held: Held<A::Buf>) {
        let outputs = held
            .outputs
            .into_iter()
            .map(|(_, b, bytes, _, _)| (b, bytes));
        for (b, bytes) in outputs
            .chain(held.temps)
            .chain(held.scratch.into_iter().flatten().flatten())
        {
            self.store.pool(b, bytes);
        }
    }

    /// Runs a task on the CPU from host copies of its inputs; its outputs stay in the backing store.
    fn run_on_cpu(&mut self, task: &Task) -> crate::Result<()> {
        Counters::add(&self.counters.device.fallbacks, 1);
        let mut inputs = Vec::with_capacity(task.inputs.len());
        for &b in &task.inputs {
            inputs.push(self.host_copy(b)?);
        }
        let outputs = fallback::run(task, &inputs)?;
        for (&b, v) in task.outputs.iter().zip(outputs) {
            if let Some(ptr) = self.external.get(&b) {
                fallback::write_external(&v, *ptr);
            }
            self.store.insert_host(b, Arc::new(v));
        }
        Ok(())
    }

    /// A buffer's host data, downloaded (and kept in the backing store) when only the device has it.
    fn host_copy(&mut self, b: BufferId) -> crate::Result<Arc<TypedVec>> {
        if let Some(h) = self.store.host(b) {
            return Ok(h);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.export(b, move |r| {
            let _ = tx.send(r);
        });
        self.api.park();
        let v = rx
            .recv()
            .map_err(|_| device_error("download lost".into()))??;
        self.store.insert_host(b, v.clone());
        Ok(v)
    }

    /// Reports a task's end at once (after a CPU run or an early failure), in order after the
    /// device work enqueued before it.
    fn finish_now(&mut self, task: &Task, result: crate::Result<()>) {
        if let Err(e) = &result {
            for &b in &task.outputs {
                self.failed.insert(b, e.clone());
            }
        }
        let sched = self.sched.clone();
        let id = task.id;
        self.api.on_done(Box::new(move |_| {
            let _ = sched.send(SchedMsg::Done { task: id, result });
        }));
    }
}

/// The device buffers one task's steps bind: its outputs (buffer, device buffer, bytes, type,
/// length), the temporaries between split halves, and each step's scratch buffers (`None`:
/// spared, the step binding a kept table, [`kept`]); per step, whether its kept table was found.
struct Held<B> {
    outputs: Vec<(BufferId, B, u64, DType, usize)>,
    temps: Vec<(B, u64)>,
    scratch: Vec<Vec<Option<(B, u64)>>>,
    kept_hit: Vec<bool>,
}

impl<B> Default for Held<B> {
    fn default() -> Self {
        Held {
            outputs: Vec::new(),
            temps: Vec::new(),
            scratch: Vec::new(),
            kept_hit: Vec::new(),
        }
    }
}

/// Calls its report once `n` completions have run, with the first error any of them had.
struct Countdown {
    remaining: AtomicUsize,
    err: parking_lot::Mutex<Option<String>>,
    report: parking_lot::Mutex<Option<Report>>,
}

/// What a [`Countdown`] calls at the end, with the first error.
type Report = Box<dyn FnOnce(Option<String>) + Send>;

impl Countdown {
    fn new(n: usize, report: impl FnOnce(Option<String>) + Send + 'static) -> Arc<Countdown> {
        Arc::new(Countdown {
            remaining: AtomicUsize::new(n),
            err: Default::default(),
            report: parking_lot::Mutex::new(Some(Box::new(report))),
        })
    }
    fn completion(self: &Arc<Self>) -> Completion {
        let me = self.clone();
        Box::new(move |r| {
            if let Err(e) = r {
                me.err.lock().get_or_insert(e);
            }
            if me.remaining.fetch_sub(1, Ordering::AcqRel) == 1
                && let Some(report) = me.report.lock().take()
            {
                report(me.err.lock().take());
            }
        })
    }
}

/// Work-groups for `n` of a ranged pass's `len` elements: the pass's share of its `groups`, at
/// least one (its grid-stride loop covers any range with any count).
fn range_groups(groups: u32, len: u64, n: u64) -> u32 {
    if len == 0 {
        return groups;
    }
    ((groups as u64 * n).div_ceil(len)).clamp(1, groups.max(1) as u64) as u32
}

fn with_site(e: Error, site: Option<crate::ir::Site>) -> Error {
    match site {
        Some(s) => e.origin(s),
        None => e,
    }
}

fn device_error(msg: String) -> Error {
    Error::new(ErrorKind::Execution, format!("device executor: {msg}"))
}
