//! The OpenCL device API (through `opencl3`, loading `libOpenCL` at run time): one context and one
//! in-order command queue per device; programs built from the generated OpenCL C, kept by the
//! program cache (`exec/program_cache.rs`, kind `opencl`) in memory and on disk as driver binaries,
//! keyed by device identity and source (so a second process skips the driver's compile).
//! Kernels are enqueued without events; on the in-order queue a marker's event completes after
//! everything enqueued before it, so each piece of work is waited on through a marker enqueued
//! after it. On NVIDIA's driver a kernel that carries an event costs the device about 1.5 µs
//! more per launch than one without, and 0.9 µs more than one followed by a marker (the
//! hand-written chain of `benches/gpu.rs`, run A of session 10 in BENCHMARKS.md). While the
//! device is busy (at least `BUSY` markers not yet seen complete), one marker covers up to
//! `ARRAYFLOW_OPENCL_DEFER` pieces of work (default 8): it goes in once that many wait, or as soon
//! as the device is less busy, or before the executor blocks or reads. A marker still costs the
//! device about 0.5 µs: sharing them took the chain at 2^27, launched back to back, from
//! 369.1-369.3 to 368.7-368.8 µs (run A of session 11). Work waited on behind a busy device may
//! so be reported up to that many pieces of work later; an idle device gets a marker after each.
//!
//! Uploads are written without a wait: the host data is kept alive until the marker after the
//! write completes, so an upload never stalls the executor behind the work already queued.
//!
//! Timed kernels (`timing.rs`: `ARRAYFLOW_KERNEL_TIMES`, or the launches the profiler samples)
//! are enqueued with an event, kept until the next marker, and read in that marker's completion:
//! the marker completes after them, so their profiling start and end are there to read, and the
//! executor never waits for them.
//!
//! Completion: when the runtime's threads spin (a GPU on a host with spare cores, `exec/wait.rs`)
//! the executor's own thread polls the submitted events between messages and runs their
//! completions (`DeviceApi::poll`), so every driver call comes from that one thread: on NVIDIA's
//! driver a launch takes about 3 µs longer when another thread has just waited on an event (run C
//! of session 9 in BENCHMARKS.md). Before the executor blocks, and always when the threads do not
//! spin, a completion thread waits for the events instead (polling an event's status for the
//! spin budget, then blocking on it). Events are handed over only after the submission's
//! `clFlush`, and in order.

use super::opencl_staging::{Lease, PinnedPool};
use super::plans::Dialect;
use super::{Completion, DeviceApi, HostSlice};
use crate::counters::Counters;
use crate::exec::TypedVec;
use crate::exec::program_cache::{Found, Key, Layout, ProgramCache, Store};
use crate::exec::wait::Spin;
use crate::proggen::codegen::gpu::{GpuPlan, Target, elem_bytes};
use crossbeam_channel::Sender;
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::CL_COMPLETE;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::{CL_NON_BLOCKING, cl_ulong};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub struct OpenClApi {
    /// The runtime's counters (the device executor adds to `device`).
    counters: Arc<Counters>,
    context: Context,
    queue: CommandQueue,
    target: Target,
    /// Build options for every program.
    options: &'static str,
    /// Device, driver and options, part of each disk-cache key.
    identity: String,
    /// Programs built in this executor's context, by key; their driver binaries on disk.
    programs: ProgramCache<Arc<ClProgram>>,
    completions: Sender<(Event, Completion)>,
    /// Events and their completions enqueued since the last flush; [`DeviceApi::submit`] moves
    /// them to `watched` (or, while the completion thread has some, to it).
    pending: Vec<(Event, Completion)>,
    /// The OpenCL library, for `clEnqueueNDRangeKernel` without an event (opencl3 always asks
    /// for one).
    cl: &'static cl3::OpenClRuntime,
    /// Submitted events whose completions the executor's thread runs as it polls them
    /// ([`DeviceApi::poll`]), oldest first, until [`DeviceApi::park`].
    watched: VecDeque<(Event, Completion)>,
    /// Completions handed to the completion thread and not yet run.
    parked: Arc<AtomicUsize>,
    /// Completions of work enqueued after the last marker, waiting for one ([`OpenClApi::mark`]).
    unmarked: Vec<Completion>,
    /// Host data (or the pinned staging holding it) of writes enqueued after the last marker,
    /// kept until one completes.
    uploading: Vec<Uploading>,
    /// Pinned staging buffers of large transfers (`opencl_staging.rs`).
    pinned: PinnedPool,
    /// Completions one marker covers at most while the device is busy (`ARRAYFLOW_OPENCL_DEFER`).
    defer: usize,
    /// Timed kernels enqueued since the last marker, with their events, labels and tasks
    /// (`timing.rs`): the next marker's completion reads their times.
    timed: Vec<(Event, Option<String>, Option<u64>)>,
    /// How the kernels being enqueued are timed.
    timing: super::timing::Timing,
}

/// What a write reads from until its marker completes.
enum Uploading {
    /// The host data itself.
    Data(#[allow(dead_code)] Arc<TypedVec>),
    /// A pinned copy of it.
    Pinned(#[allow(dead_code)] Lease),
}

/// Pieces of work one marker covers at most while the device is busy, by default.
const DEFER: usize = 8;

/// Markers not yet seen complete from which the device counts as busy: work enqueued then waits
/// for a later marker (see the module comment).
const BUSY: usize = 2;

/// A built program and one kernel object per pass.
pub struct ClProgram {
    kernels: parking_lot::Mutex<Vec<Kernel>>,
    _program: Program,
}

impl OpenClApi {
    /// Opens OpenCL device `index` of the inventory's order (platforms, then their devices);
    /// `defer` is [`super::Limits::opencl_defer`].
    pub fn new(
        index: usize,
        spin: Spin,
        defer: Option<usize>,
        counters: Arc<Counters>,
    ) -> Result<OpenClApi, String> {
        let (_, id) = *crate::exec::device::opencl_device_ids()
            .get(index)
            .ok_or_else(|| format!("no OpenCL device {index}"))?;
        let device = Device::new(id);
        let context = Context::from_device(&device).map_err(|e| e.to_string())?;
        #[allow(deprecated)]
        let props = if super::timing::armed() {
            opencl3::command_queue::CL_QUEUE_PROFILING_ENABLE
        } else {
            0
        };
        let queue = CommandQueue::create_default(&context, props).map_err(|e| e.to_string())?;
        let fp64 = device.double_fp_config().unwrap_or(0) != 0;
        // f32 division and sqrt correctly rounded, as on the CPU, where the device offers it
        // (NVIDIA's default is a few ulp off, which compounds in formulas like atanh).
        let mut options = String::from(
            if device.single_fp_config().unwrap_or(0)
                & opencl3::device::CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
                != 0
            {
                "-cl-fp32-correctly-rounded-divide-sqrt"
            } else {
                ""
            },
        );
        // Extra options for every program (`ARRAYFLOW_OPENCL_BUILD_OPTIONS`, a test knob: CI runs
        // the API suite on PoCL with `-cl-opt-disable`, as its optimiser takes most of that run).
        if let Ok(extra) = std::env::var("ARRAYFLOW_OPENCL_BUILD_OPTIONS") {
            options = format!("{options} {}", extra.trim()).trim().to_string();
        }
        // One executor per device and process: the options live as long as the program cache.
        let options: &'static str = Box::leak(options.into_boxed_str());
        let identity = format!(
            "{} | {} | {} | {options}",
            device.name().unwrap_or_default(),
            device.version().unwrap_or_default(),
            device.driver_version().unwrap_or_default()
        );
        let (tx, rx) = crossbeam_channel::unbounded::<(Event, Completion)>();
        let parked = Arc::new(AtomicUsize::new(0));
        let left = parked.clone();
        crate::exec::lifetime::spawn("arrayflow-opencl-done", move || {
            while let Ok((event, done)) = spin.recv(&rx) {
                // Poll the event's status for the spin budget (a blocking wait sleeps, and
                // the wake-up after a long kernel is slow), then block on it.
                let status = || event.command_execution_status().map_or(-1, |s| s.0);
                spin.until(|| status() <= CL_COMPLETE);
                done(event.wait().map_err(|e| e.to_string()));
                left.fetch_sub(1, Ordering::AcqRel);
            }
        })
        .map_err(|e| e.to_string())?;
        Ok(OpenClApi {
            counters,
            context,
            queue,
            target: Target {
                fp64,
                immediates: false,
                fused_fma: true,
            },
            options,
            identity,
            programs: ProgramCache::new(Store::new("opencl", "bin", Layout::Header)),
            completions: tx,
            pending: Vec::new(),
            cl: library()?,
            watched: VecDeque::new(),
            parked,
            unmarked: Vec::new(),
            uploading: Vec::new(),
            pinned: PinnedPool::new(),
            defer: defer.unwrap_or(DEFER).max(1),
            timed: Vec::new(),
            timing: Default::default(),
        })
    }

    /// Enqueues one marker for the completions, upload data and timed kernels waiting for one.
    /// On the in-order queue the marker completes after them, so its completion reads the
    /// kernels' times (before it runs the others: a task's time is in before it is reported
    /// done) without any wait of its own.
    fn mark(&mut self) {
        if self.unmarked.is_empty() && self.uploading.is_empty() && self.timed.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.unmarked);
        let keep = std::mem::take(&mut self.uploading);
        let timed = std::mem::take(&mut self.timed);
        let counters =
            (!timed.is_empty() && super::timing::kernel_times()).then(|| self.counters.clone());
        let all: Completion = Box::new(move |r: Result<(), String>| {
            drop(keep);
            if r.is_ok() && !timed.is_empty() {
                read_times(timed, counters.as_deref());
            }
            for d in done {
                d(r.clone());
            }
        });
        // SAFETY: a marker with no wait list.
        match unsafe { self.queue.enqueue_marker_with_wait_list(&[]) } {
            Ok(ev) => self.pending.push((ev, all)),
            Err(e) => all(Err(e.to_string())),
        }
    }

    /// Whether enough markers are outstanding that new work may wait for a later one.
    fn busy(&self) -> bool {
        self.watched.len() + self.parked.load(Ordering::Acquire) >= BUSY
    }

    /// Flushes the queue and moves what was enqueued since to the watched events (or, while the
    /// completion thread has some, to it: completions stay in order).
    fn hand_over(&mut self) {
        let _ = self.queue.flush();
        let here = self.parked.load(Ordering::Acquire) == 0;
        for p in self.pending.drain(..) {
            if here {
                self.watched.push_back(p);
            } else {
                self.parked.fetch_add(1, Ordering::AcqRel);
                let _ = self.completions.send(p);
            }
        }
    }
}

/// Reads finished kernels' start and end (their events are complete: a marker after them has
/// completed) and hands the times on (`timing.rs`).
fn read_times(timed: Vec<(Event, Option<String>, Option<u64>)>, counters: Option<&Counters>) {
    let mut per_task = super::timing::PerTask::default();
    for (event, label, task) in timed {
        if let (Ok(a), Ok(b)) = (
            event.profiling_command_start(),
            event.profiling_command_end(),
        ) {
            super::timing::record(counters, &mut per_task, label, task, b.saturating_sub(a));
        }
    }
    per_task.report();
}

/// Copies a download's bytes (the device's layout: bool as one byte) into `out`.
fn copy_out(src: &[u8], out: HostSlice) {
    // SAFETY: `out` has `src.len()` bytes and stays valid until the download's completion (its
    // owner's contract).
    let dst = unsafe { std::slice::from_raw_parts_mut(out.ptr, src.len()) };
    super::staging::copy(src, dst);
}

/// A built program with one kernel object per pass of `plan`.
fn with_kernels(program: Program, plan: &GpuPlan) -> Result<Arc<ClProgram>, String> {
    let kernels = plan
        .passes
        .iter()
        .map(|p| Kernel::create(&program, &p.entry).map_err(|e| format!("{}: {e}", p.entry)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(ClProgram {
        kernels: parking_lot::Mutex::new(kernels),
        _program: program,
    }))
}

/// The OpenCL library opencl3 loaded, to call its functions directly.
fn library() -> Result<&'static cl3::OpenClRuntime, String> {
    cl3::load_library()
        .as_ref()
        .map_err(|e| format!("the OpenCL library: {e}"))
}

fn bytes_of(data: &TypedVec) -> &[u8] {
    crate::with_typed_vec!(data, v => {
        // SAFETY: plain element types without padding; the slice covers exactly the vector.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(&v[..])) }
    })
}

impl DeviceApi for OpenClApi {
    fn set_timing(&mut self, timing: super::timing::Timing) {
        self.timing = timing;
    }

    fn timers(&self) -> bool {
        super::timing::armed()
    }

    type Buf = Buffer<u8>;
    type Program = ClProgram;

    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn target(&self) -> Target {
        self.target
    }
    fn dialect(&self) -> Dialect {
        Dialect::OpenCl
    }

    fn alloc(&mut self, bytes: u64) -> Result<Buffer<u8>, String> {
        // SAFETY: no host pointer; the size is non-zero.
        unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes as usize,
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| e.to_string())
    }

    fn upload(&mut self, buf: &mut Buffer<u8>, data: &Arc<TypedVec>) -> Result<(), String> {
        let bytes = bytes_of(data);
        if bytes.is_empty() {
            return Ok(());
        }
        // A large array is copied into pinned staging first (in parallel), and the write reads
        // from there.
        let (src, keep) = if self.pinned.takes(bytes.len() as u64) {
            let lease = self
                .pinned
                .lease(&self.context, &self.queue, bytes.len() as u64, true)?;
            // SAFETY: the lease holds at least `bytes.len()` bytes, used by nobody else.
            unsafe { super::staging::copy_to(bytes, lease.ptr()) };
            (lease.ptr() as *const u8, Uploading::Pinned(lease))
        } else {
            (bytes.as_ptr(), Uploading::Data(data.clone()))
        };
        // A write without a wait: the driver reads `src` later, so what holds it is kept (in
        // `uploading`) until the marker after the write completes. The buffer holds `bytes`.
        let status = self.cl.clEnqueueWriteBuffer(
            self.queue.get(),
            buf.get(),
            CL_NON_BLOCKING,
            0,
            bytes.len(),
            src as *const std::ffi::c_void,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        match status {
            Some(opencl3::error_codes::CL_SUCCESS) => {
                self.uploading.push(keep);
                Ok(())
            }
            Some(e) => Err(opencl3::error_codes::ClError(e).to_string()),
            None => Err("no clEnqueueWriteBuffer".into()),
        }
    }

    fn zero(&mut self, buf: &mut Buffer<u8>, bytes: u64) -> Result<(), String> {
        // SAFETY: the fill covers the buffer's own bytes.
        unsafe {
            self.queue
                .enqueue_fill_buffer(buf, &[0u8], 0, bytes as usize, &[])
        }
        .map(|_| ())
        .map_err(|e| e.to_string())
    }

    fn compile(&mut self, plan: &GpuPlan) -> Result<Arc<ClProgram>, String> {
        let dc = self.counters.clone();
        let key = Key::of_str(&[&self.identity, &plan.source]);
        if let Some(p) = self.programs.get(key) {
            Counters::add(&dc.device.memory_hits, 1);
            return Ok(p);
        }
        let t0 = Instant::now();
        // From the driver binary on disk, else built from source (its binary then saved).
        let (context, options) = (&self.context, self.options);
        let (p, found) = self.programs.get_or_build(
            key,
            |entry| {
                let p = Program::create_and_build_from_binary(context, &[&entry.payload], options)?;
                with_kernels(p, plan)
            },
            || {
                let p = Program::create_and_build_from_source(context, &plan.source, options)?;
                Counters::add(&dc.device.compiles, 1);
                let bin = p
                    .get_binaries()
                    .ok()
                    .and_then(|b| b.into_iter().next())
                    .filter(|b| !b.is_empty());
                Ok::<_, String>((with_kernels(p, plan)?, bin))
            },
        )?;
        match found {
            Found::Disk => Counters::add(&dc.device.disk_hits, 1),
            Found::Memory => Counters::add(&dc.device.memory_hits, 1),
            Found::Built => {}
        }
        if crate::profile::active() {
            let (kind, hit) = match found {
                Found::Built => ("compile", None),
                _ => ("program_cache", Some(true)),
            };
            crate::profile::runtime(kind, "opencl", hit, t0, 0, None);
        }
        Counters::add(&dc.device.compile_ns, t0.elapsed().as_nanos() as u64);
        Ok(p)
    }

    fn dispatch(
        &mut self,
        prog: &ClProgram,
        plan: &GpuPlan,
        pass: usize,
        bufs: &[&Buffer<u8>],
        params: &[u64],
        groups: u32,
    ) -> Result<(), String> {
        let p = &plan.passes[pass];
        let kernels = prog.kernels.lock();
        let k = &kernels[pass];
        let err = |e: opencl3::error_codes::ClError| format!("{}: {e}", p.entry);
        // SAFETY: arguments match the generated kernel's signature (the plan's contract): buffers
        // first, then one ulong per parameter slot.
        unsafe {
            for (i, b) in bufs.iter().enumerate() {
                k.set_arg(i as u32, &b.get()).map_err(err)?;
            }
            if p.params {
                for (j, v) in params.iter().enumerate() {
                    k.set_arg((bufs.len() + j) as u32, &(*v as cl_ulong))
                        .map_err(err)?;
                }
            }
            let global = groups as usize * p.local as usize;
            let local = p.local as usize;
            let mut event: opencl3::types::cl_event = std::ptr::null_mut();
            let timed = self.timing.on;
            let status = self.cl.clEnqueueNDRangeKernel(
                self.queue.get(),
                k.get(),
                1,
                std::ptr::null(),
                &global,
                &local,
                0,
                std::ptr::null(),
                if timed {
                    &mut event
                } else {
                    std::ptr::null_mut()
                },
            );
            match status {
                Some(opencl3::error_codes::CL_SUCCESS) if timed && !event.is_null() => {
                    self.timed.push((
                        Event::new(event),
                        super::timing::kept_label(plan, pass),
                        self.timing.task,
                    ));
                }
                Some(opencl3::error_codes::CL_SUCCESS) => {}
                Some(e) => return Err(err(opencl3::error_codes::ClError(e))),
                None => return Err(format!("{}: no clEnqueueNDRangeKernel", p.entry)),
            }
        }
        Ok(())
    }

    fn download(&mut self, buf: &Buffer<u8>, out: HostSlice, done: Completion) {
        let bytes = (elem_bytes(out.dtype, false) * out.len as u64) as usize;
        if bytes == 0 {
            return self.on_done(done);
        }
        // What waits for a marker is reported before the read, in order.
        self.mark();
        // A large array is read into pinned staging and copied out (in parallel) once there.
        if self.pinned.takes(bytes as u64) {
            let lease = match self
                .pinned
                .lease(&self.context, &self.queue, bytes as u64, false)
            {
                Ok(l) => l,
                Err(e) => return done(Err(e)),
            };
            // SAFETY: the lease holds at least `bytes` bytes, used by this read alone until the
            // completion below drops it.
            let staged = unsafe { std::slice::from_raw_parts_mut(lease.ptr(), bytes) };
            // SAFETY: a non-blocking read into the lease, which the completion keeps.
            match unsafe {
                self.queue
                    .enqueue_read_buffer(buf, CL_NON_BLOCKING, 0, staged, &[])
            } {
                Ok(ev) => {
                    let finish: Completion = Box::new(move |r| {
                        if r.is_ok() {
                            // SAFETY: the read has completed into the lease.
                            let staged = unsafe { std::slice::from_raw_parts(lease.ptr(), bytes) };
                            copy_out(staged, out);
                        }
                        drop(lease);
                        done(r)
                    });
                    self.pending.push((ev, finish));
                }
                Err(e) => done(Err(e.to_string())),
            }
            return;
        }
        // SAFETY: `out` stays valid until `done` runs (the caller's contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(out.ptr, bytes) };
        // SAFETY: a non-blocking read whose destination outlives the event (see above).
        match unsafe {
            self.queue
                .enqueue_read_buffer(buf, CL_NON_BLOCKING, 0, dst, &[])
        } {
            Ok(ev) => self.pending.push((ev, done)),
            Err(e) => done(Err(e.to_string())),
        }
    }

    fn on_done(&mut self, done: Completion) {
        self.unmarked.push(done);
    }

    fn submit(&mut self) {
        if self.unmarked.len() >= self.defer || !self.busy() {
            self.mark();
        }
        self.hand_over();
        Counters::add(&self.counters.device.submissions, 1);
    }

    fn poll(&mut self) -> bool {
        while let Some((event, _)) = self.watched.front() {
            let status = event.command_execution_status().map_or(-1, |s| s.0);
            if status > CL_COMPLETE {
                break;
            }
            let (_, done) = self.watched.pop_front().expect("front exists");
            done(if status < 0 {
                Err(format!("the command failed (status {status})"))
            } else {
                Ok(())
            });
        }
        // The device has caught up: what waits for a marker gets one now.
        if !self.unmarked.is_empty() && !self.busy() {
            self.mark();
            self.hand_over();
        }
        !self.watched.is_empty() || !self.unmarked.is_empty()
    }

    fn park(&mut self) {
        self.mark();
        self.hand_over();
        for p in self.watched.drain(..) {
            self.parked.fetch_add(1, Ordering::AcqRel);
            let _ = self.completions.send(p);
        }
    }
}
