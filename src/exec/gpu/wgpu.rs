//! The wgpu device API (Vulkan): one device and queue; generated WGSL built into compute pipelines
//! (one per pass, layouts derived from the shader), kept in memory by source, with the driver's
//! pipeline cache saved on disk where the adapter offers `PIPELINE_CACHE` (one entry of the program
//! cache per adapter and driver, `exec/program_cache.rs`, kind `wgpu`); every dispatch of a
//! batch recorded into one command encoder and submitted once; with `ARRAYFLOW_WGPU_HOLD=N`,
//! while N submissions are in flight, later batches are recorded into the same encoder and
//! submitted together (off by default, see `WgpuApi::hold_at`; an upload after recorded work is
//! a copy recorded in the encoder, so it stays in order with it); completion through
//! `on_submitted_work_done` and `map_async`, fired by `device.poll`: from the executor's own
//! thread between messages when the runtime's threads spin (`DeviceApi::poll`, so one thread
//! makes every call into wgpu), else and before the executor blocks by a polling thread (which
//! polls without blocking for the spin budget first, `exec/wait.rs`). bool is stored as one u32
//! per element (WGSL has no 8-bit storage).
//!
//! Bind groups are kept in a small LRU cache keyed by layout and buffers, so a program run again
//! on the same buffers (a trace-cache hit whose outputs come back from the pool) binds without
//! creating one; the cache is emptied when an allocation fails, so it never holds memory the
//! executor needs.
//!
//! Timed dispatches (`timing.rs`) write timestamps at the beginning and end of their compute
//! pass into a query set of the encoder's; the submission resolves them into a buffer that is
//! mapped with `map_async` and read in its callback (fired by the same polls as the submission's
//! other completions), so timing adds no wait. Query sets are reused once read.
//!
//! Kernel parameters travel as immediate data (push constants, `set_immediates`) when the adapter
//! offers `IMMEDIATES` with at least [`IMMEDIATE_BYTES`] (the target says so, and the WGSL renderer
//! declares them so when they fit): a dispatch then allocates nothing but its bind group.
//! Otherwise a program reads them from a storage buffer, made per dispatch and bound after its
//! buffers (the plan contract).

use super::plans::Dialect;
use super::wgpu_staging::StagingPool;
use super::{Completion, DeviceApi, HostSlice};
use crate::counters::Counters;
use crate::exec::TypedVec;
use crate::exec::program_cache::{Key, Layout, ProgramCache, Store};
use crate::exec::wait::Spin;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Target, elem_bytes};
use crate::proggen::codegen::wgsl::IMMEDIATE_BYTES;
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use wgpu::util::DeviceExt;

/// The process's wgpu instance (Vulkan only).
pub fn instance() -> &'static wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE.get_or_init(|| {
        wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        })
    })
}

pub struct WgpuApi {
    /// The runtime's counters (the device executor adds to `device`).
    counters: Arc<Counters>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    limits: wgpu::Limits,
    /// The device takes immediate data (`Features::IMMEDIATES`, at least [`IMMEDIATE_BYTES`]).
    immediates: bool,
    /// The device's WGSL `fma` rounds once (`wgpu_probe.rs`; `Target::fused_fma`).
    fused_fma: bool,
    /// A compute context held on the same NVIDIA GPU for its clocks (`clocks.rs`).
    _clocks: super::clocks::ClockHold,
    /// Staging buffers of large transfers, reused (`wgpu_staging.rs`).
    staging: StagingPool,
    encoder: Option<wgpu::CommandEncoder>,
    /// Registered once the current encoder is submitted (map_async, work-done callbacks).
    after_submit: Vec<AfterSubmit>,
    /// Pipelines by source in memory; on disk, the driver's pipeline cache (`cache`).
    programs: ProgramCache<Arc<WgpuProgram>>,
    /// The driver's pipeline cache and its key in `programs`' store (adapter and driver).
    cache: Option<(wgpu::PipelineCache, Key)>,
    /// Wakes the polling thread after a submission.
    poll: Sender<()>,
    /// Completions registered and not yet run.
    outstanding: Arc<AtomicUsize>,
    /// Submissions handed to the device and not yet finished (counted while `hold_at > 0`).
    in_flight: Arc<AtomicUsize>,
    /// Submissions in flight at which new work is held back, recorded into the same command
    /// encoder as what follows (`submit`; `ARRAYFLOW_WGPU_HOLD`, default 0: never; 2 keeps one
    /// submission running and the next queued). Each submission costs NVIDIA's Vulkan driver
    /// about 16 µs of device time at 2^27 (the hand-written chain of `benches/gpu.rs`: 392.7 µs
    /// per launch with a submission each, 378.5 µs with 64 per submission), and holding at 2
    /// took arrayflow's chain from 393 to 387 µs there; but at 2^20 it held back only some
    /// batches in some processes, which then ran slower (24 against 19 µs), so it is off by
    /// default (runs B and C of session 10 in BENCHMARKS.md).
    hold_at: usize,
    /// Recorded work held back: it goes with later work, once fewer submissions are in flight
    /// ([`DeviceApi::poll`]), or before the executor blocks ([`DeviceApi::park`]).
    held: bool,
    /// Bind groups of dispatches without a parameter buffer, by layout and bound buffers.
    groups: lru::LruCache<GroupKey, wgpu::BindGroup>,
    /// Timestamp queries of the dispatches of the current encoder, when the timers are armed
    /// (`timing.rs`) and the adapter has `TIMESTAMP_QUERY`.
    timer: Option<Timer>,
}

/// Timestamps of timed dispatches: the current encoder's (in one query set), and query sets
/// free for the next. A submission's timestamps are resolved into a buffer that is mapped with
/// `map_async` once the submission has run, read in that callback, and the set goes back to
/// the free ones: nothing waits for them.
struct Timer {
    /// The query set the current encoder's timed dispatches write, with each dispatch's label
    /// (`ARRAYFLOW_KERNEL_TIMES`) and profiler task (queries `2i`, `2i + 1`).
    current: Option<(TimerSet, Vec<super::timing::Pending>)>,
    /// Query sets whose timestamps have been read (shared with the map callbacks).
    free: Arc<parking_lot::Mutex<Vec<TimerSet>>>,
    /// How the dispatches being enqueued are timed.
    timing: super::timing::Timing,
    /// Nanoseconds per timestamp tick.
    period: f64,
}

/// A query set for up to [`Timer::CAP`] dispatches, the buffer its queries resolve into and
/// that buffer's host-readable copy.
struct TimerSet {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

impl Timer {
    const CAP: u32 = 512;

    fn new(queue: &wgpu::Queue) -> Timer {
        Timer {
            current: None,
            free: Arc::new(parking_lot::Mutex::new(Vec::new())),
            timing: Default::default(),
            period: queue.get_timestamp_period() as f64,
        }
    }

    /// The query index pair of a new timed dispatch in the current encoder (a set taken from
    /// the free ones, or made, for the first).
    fn slot(&mut self, device: &wgpu::Device, label: Option<String>) -> u32 {
        let task = self.timing.task;
        let free = &self.free;
        let (_, labels) = self.current.get_or_insert_with(|| {
            let set = free.lock().pop().unwrap_or_else(|| TimerSet::new(device));
            (set, Vec::new())
        });
        labels.push((label, task));
        labels.len() as u32 - 1
    }

    /// Dispatches timed in the current encoder.
    fn pending(&self) -> u32 {
        self.current.as_ref().map_or(0, |(_, l)| l.len() as u32)
    }
}

impl TimerSet {
    fn new(device: &wgpu::Device) -> TimerSet {
        let bytes = 2 * Timer::CAP as u64 * wgpu::QUERY_SIZE as u64;
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("arrayflow timestamps"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        TimerSet {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("arrayflow timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * Timer::CAP,
            }),
            resolve: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            read: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
        }
    }
}

/// Bind groups kept (each keeps its buffers alive until evicted or [`DeviceApi::trim`]).
const BIND_GROUPS: usize = 16;

/// A bind group's layout and buffers (wgpu compares them by identity; the key's clones keep
/// them alive, so an identity is never reused while its entry lives).
#[derive(PartialEq, Eq, Hash)]
struct GroupKey {
    layout: wgpu::BindGroupLayout,
    bufs: smallvec::SmallVec<[wgpu::Buffer; 6]>,
}

/// Work to register with the queue once the current encoder is submitted.
type AfterSubmit = Box<dyn FnOnce(&wgpu::Queue) + Send>;

/// One compute pipeline per pass of a plan.
pub struct WgpuProgram {
    pipelines: Vec<wgpu::ComputePipeline>,
    /// Each pipeline's bind-group layout, looked up once rather than per dispatch.
    layouts: Vec<wgpu::BindGroupLayout>,
}

impl WgpuApi {
    /// `done`, counted in [`WgpuApi::outstanding`] until it runs.
    fn counted(&self, done: Completion) -> Completion {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
        let left = self.outstanding.clone();
        Box::new(move |r| {
            left.fetch_sub(1, Ordering::AcqRel);
            done(r)
        })
    }

    /// Opens wgpu adapter `index` of the inventory; `hold` is [`super::Limits::wgpu_hold`].
    pub fn new(
        index: usize,
        spin: Spin,
        hold: Option<usize>,
        counters: Arc<Counters>,
    ) -> Result<WgpuApi, String> {
        let adapter = crate::exec::device::wgpu_adapters()
            .into_iter()
            .nth(index)
            .ok_or_else(|| format!("no wgpu adapter {index}"))?;
        let info = adapter.get_info();
        let mut limits = adapter.limits();
        // Parameters travel as immediate data (push constants) where the adapter offers enough;
        // otherwise the renderer reads them from a storage buffer (`Target::immediates`).
        // `ARRAYFLOW_WGPU_IMMEDIATES=0` takes that path on any adapter (to test it).
        let immediates = adapter.features().contains(wgpu::Features::IMMEDIATES)
            && limits.max_immediate_size >= IMMEDIATE_BYTES
            && std::env::var_os("ARRAYFLOW_WGPU_IMMEDIATES").is_none_or(|v| v != "0");
        if !immediates {
            limits.max_immediate_size = 0;
        }
        let timed =
            super::timing::armed() && adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let features = adapter.features()
            & (wgpu::Features::PIPELINE_CACHE
                | if timed {
                    wgpu::Features::TIMESTAMP_QUERY
                } else {
                    wgpu::Features::empty()
                }
                | if immediates {
                    wgpu::Features::IMMEDIATES
                } else {
                    wgpu::Features::empty()
                });
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("arrayflow"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| e.to_string())?;
        device.on_uncaptured_error(Arc::new(|e| {
            tracing::error!(target: "arrayflow::exec", "wgpu: {e}");
        }));
        let fused_fma = crate::proggen::codegen::gpu::tuning().wgpu_fma
            && super::wgpu_probe::fused_fma(&device, &queue);
        tracing::info!(target: "arrayflow::exec", "wgpu {}: fma {}", info.name, if fused_fma { "fused" } else { "not fused (or ARRAYFLOW_WGPU_FMA=0): Dekker products" });
        let programs = ProgramCache::new(Store::new("wgpu", "pipelines", Layout::Header));
        let cache = features.contains(wgpu::Features::PIPELINE_CACHE).then(|| {
            let key = Key::of_str(&[&info.name, &info.driver, &info.driver_info]);
            let data = programs.store().load(key).ok().map(|e| e.payload);
            // SAFETY: the data was written by `get_data` for this adapter and driver (the key),
            // and the program cache checked it is whole; wgpu validates its header too and falls
            // back to an empty cache otherwise.
            let cache = unsafe {
                device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                    label: Some("arrayflow"),
                    data: data.as_deref(),
                    fallback: true,
                })
            };
            (cache, key)
        });
        let (poll, rx) = crossbeam_channel::unbounded::<()>();
        let dev = device.clone();
        crate::exec::lifetime::spawn("arrayflow-wgpu-poll", move || {
            while spin.recv(&rx).is_ok() {
                while rx.try_recv().is_ok() {}
                // Poll without blocking for the spin budget (a blocking wait sleeps, and the
                // wake-up after a long kernel is slow), then wait for what is left.
                spin.until(|| {
                    matches!(
                        dev.poll(wgpu::PollType::Poll),
                        Ok(wgpu::PollStatus::QueueEmpty)
                    )
                });
                let _ = dev.poll(wgpu::PollType::Wait {
                    submission_index: None,
                    timeout: None,
                });
            }
        })
        .map_err(|e| e.to_string())?;
        Ok(WgpuApi {
            _clocks: super::clocks::hold(&info),
            staging: StagingPool::new(&device),
            counters,
            limits,
            immediates,
            fused_fma,
            encoder: None,
            after_submit: Vec::new(),
            programs,
            cache,
            poll,
            outstanding: Arc::new(AtomicUsize::new(0)),
            in_flight: Arc::new(AtomicUsize::new(0)),
            hold_at: hold.unwrap_or(0),
            held: false,
            groups: lru::LruCache::new(std::num::NonZeroUsize::new(BIND_GROUPS).expect("non-zero")),
            timer: timed.then(|| Timer::new(&queue)),
            device,
            queue,
        })
    }

    /// Hands the recorded work to the device (one submission), then registers what waits for it.
    fn flush(&mut self) {
        self.held = false;
        let timed = self.timer.as_mut().and_then(|t| t.current.take());
        if let (Some((t, labels)), Some(enc)) = (&timed, self.encoder.as_mut()) {
            let n = labels.len() as u64;
            enc.resolve_query_set(&t.set, 0..2 * n as u32, &t.resolve, 0);
            enc.copy_buffer_to_buffer(&t.resolve, 0, &t.read, 0, 16 * n);
        }
        let cmd = self.encoder.take().map(|e| e.finish());
        self.queue.submit(cmd);
        Counters::add(&self.counters.device.submissions, 1);
        if let Some((set, labels)) = timed {
            self.read_times(set, labels);
        }
        // Submissions in flight are counted only when work may be held back for them.
        if self.hold_at > 0 {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            let in_flight = self.in_flight.clone();
            let ran = self.counted(Box::new(move |_| {
                in_flight.fetch_sub(1, Ordering::AcqRel);
            }));
            self.queue.on_submitted_work_done(move || ran(Ok(())));
        }
        for f in self.after_submit.drain(..) {
            f(&self.queue);
        }
    }

    /// Reads the times of a submitted encoder's timed dispatches once it has run: its query
    /// set's read buffer is mapped with `map_async` (registered now, ahead of the submission's
    /// other completions, so a task's time is in before it is reported done), and the callback
    /// hands the times on and frees the set.
    fn read_times(&mut self, set: TimerSet, labels: Vec<super::timing::Pending>) {
        let Some(t) = self.timer.as_ref() else {
            return;
        };
        let (free, period) = (t.free.clone(), t.period);
        let counters = super::timing::kernel_times().then(|| self.counters.clone());
        let bytes = 16 * labels.len() as u64;
        let read = set.read.clone();
        let mapped = set.read.clone();
        let done = self.counted(Box::new(move |r: Result<(), String>| {
            if r.is_ok() {
                if let Ok(data) = read.get_mapped_range(..bytes) {
                    let ticks: &[u64] = bytemuck::cast_slice(&data);
                    dispatch_times(ticks, labels, period, counters.as_deref());
                }
                read.unmap();
            }
            free.lock().push(set);
        }));
        mapped
            .slice(..bytes)
            .map_async(wgpu::MapMode::Read, move |r| {
                done(r.map_err(|e| e.to_string()))
            });
    }

    fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
        })
    }

    /// Runs `f` and returns the validation or memory error wgpu reports for it.
    fn checked<T>(&self, filter: wgpu::ErrorFilter, f: impl FnOnce() -> T) -> Result<T, String> {
        let scope = self.device.push_error_scope(filter);
        let v = f();
        match pollster::block_on(scope.pop()) {
            None => Ok(v),
            Some(e) => Err(e.to_string()),
        }
    }

    /// A storage buffer holding `params`, each slot as two u32, low word first (at least two
    /// words).
    fn param_buffer(&self, params: &[u64]) -> wgpu::Buffer {
        let mut words: Vec<u32> = param_words(params).collect();
        if words.is_empty() {
            words = vec![0, 0];
        }
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::STORAGE,
            })
    }

    /// The bind group of `bufs` (then `param_buf`, where the parameters travel in a buffer) for
    /// `layout`: from the cache, or made (and kept when it has no parameter buffer, which is new
    /// for every dispatch).
    fn bind_group(
        &mut self,
        layout: &wgpu::BindGroupLayout,
        bufs: &[&wgpu::Buffer],
        param_buf: Option<&wgpu::Buffer>,
    ) -> wgpu::BindGroup {
        let key = param_buf.is_none().then(|| GroupKey {
            layout: layout.clone(),
            bufs: bufs.iter().map(|&b| b.clone()).collect(),
        });
        if let Some(g) = key.as_ref().and_then(|k| self.groups.get(k)) {
            return g.clone();
        }
        let entries: smallvec::SmallVec<[wgpu::BindGroupEntry; 8]> = bufs
            .iter()
            .copied()
            .chain(param_buf)
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout,
            entries: &entries,
        });
        if let Some(k) = key {
            self.groups.put(k, group.clone());
        }
        group
    }

    fn save_pipeline_cache(&self) {
        if let Some((cache, key)) = &self.cache
            && let Some(data) = cache.get_data()
        {
            // A failure only costs the next start the driver's compiles.
            let _ = self.programs.store().write(*key, &data);
        }
    }
}

/// Each timed dispatch's time from its pair of timestamps, handed on (`timing.rs`). A pass's
/// beginning timestamp may be written before the work recorded ahead of it has finished (no
/// barrier orders it), so a dispatch's time starts no earlier than the previous dispatch's end:
/// consecutive dependent kernels are not counted twice.
fn dispatch_times(
    ticks: &[u64],
    labels: Vec<super::timing::Pending>,
    period: f64,
    counters: Option<&Counters>,
) {
    let mut prev_end = 0u64;
    let mut per_task = super::timing::PerTask::default();
    for (i, (label, task)) in labels.into_iter().enumerate() {
        let (begin, end) = (ticks[2 * i], ticks[2 * i + 1]);
        let start = if i > 0 { begin.max(prev_end) } else { begin };
        prev_end = end;
        let ns = (end.saturating_sub(start) as f64 * period) as u64;
        super::timing::record(counters, &mut per_task, label, task, ns);
    }
    per_task.report();
}

/// A diagnostic switch, on unless the variable is `0` (`ARRAYFLOW_WGPU_DIV_CHECKS`: naga's
/// checks around integer division; `ARRAYFLOW_WGPU_ZERO_WORKGROUP`: workgroup memory zeroed
/// before each work-group runs). Off, a kernel that reads workgroup memory it did not write
/// reads garbage: for measuring what the checks cost, not for use.
fn diagnostic_knob(name: &str) -> bool {
    std::env::var(name).map_or(true, |v| v.trim() != "0")
}

/// Parameter slots as the kernels read them: each u64 as two u32 words, low word first.
fn param_words(params: &[u64]) -> impl Iterator<Item = u32> + '_ {
    params.iter().flat_map(|&v| [v as u32, (v >> 32) as u32])
}

/// Host data as the device stores it (bool widened to u32).
fn device_bytes(data: &TypedVec) -> std::borrow::Cow<'_, [u8]> {
    match data {
        TypedVec::Bool(v) => {
            let w: Vec<u32> = v.iter().map(|&b| b as u32).collect();
            std::borrow::Cow::Owned(bytemuck::cast_slice(&w).to_vec())
        }
        TypedVec::F32(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        TypedVec::F64(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        TypedVec::I32(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        TypedVec::U32(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        TypedVec::C64(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
        TypedVec::C128(v) => std::borrow::Cow::Borrowed(bytemuck::cast_slice(v)),
    }
}

/// Copies mapped device bytes into host memory (bool narrowed from u32).
fn copy_out(src: &[u8], out: HostSlice) {
    // SAFETY: `out` has `len` elements and stays valid until the download's completion (its
    // owner's contract); `src` holds `len` device elements.
    unsafe {
        if out.dtype == DType::Bool {
            let words: &[u32] = bytemuck::cast_slice(src);
            for (i, &w) in words.iter().take(out.len).enumerate() {
                *out.ptr.add(i) = (w != 0) as u8;
            }
        } else {
            let n = out.len * out.dtype.size();
            super::staging::copy(&src[..n], std::slice::from_raw_parts_mut(out.ptr, n));
        }
    }
}

impl DeviceApi for WgpuApi {
    fn set_timing(&mut self, timing: super::timing::Timing) {
        if let Some(t) = self.timer.as_mut() {
            t.timing = timing;
        }
    }

    fn timers(&self) -> bool {
        self.timer.is_some()
    }

    type Buf = wgpu::Buffer;
    type Program = WgpuProgram;

    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn target(&self) -> Target {
        Target {
            fp64: false,
            immediates: self.immediates,
            fused_fma: self.fused_fma,
        }
    }
    fn dialect(&self) -> Dialect {
        Dialect::Wgsl
    }

    fn alloc(&mut self, bytes: u64) -> Result<wgpu::Buffer, String> {
        let bytes = bytes.next_multiple_of(4);
        let max = self
            .limits
            .max_buffer_size
            .min(self.limits.max_storage_buffer_binding_size);
        if bytes > max {
            return Err(format!(
                "{bytes} bytes is over the adapter's buffer limit of {max}"
            ));
        }
        self.checked(wgpu::ErrorFilter::OutOfMemory, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    fn upload(&mut self, buf: &mut wgpu::Buffer, data: &Arc<TypedVec>) -> Result<(), String> {
        let bytes = device_bytes(data);
        if bytes.is_empty() {
            return Ok(());
        }
        // A queue write runs before the next submission's commands, so it keeps its place only
        // while nothing is recorded. Otherwise (held work, or earlier dispatches of this batch
        // that may still read a pooled buffer's previous contents) the data goes through a
        // host-visible staging buffer copied in the encoder, in order.
        let len = bytes.len() as u64;
        // Large arrays go through the staging pool (outside `ARRAYFLOW_KERNEL_TIMES`, where
        // uploads run apart): a copy recorded in order, from a buffer kept for the next upload.
        let apart = super::timing::kernel_times() && self.timer.is_some();
        if self.staging.takes(len) && !apart {
            let staging = self.staging.upload(&bytes)?;
            self.encoder()
                .copy_buffer_to_buffer(&staging, 0, buf, 0, len);
            let pool = self.staging.clone();
            self.after_submit
                .push(Box::new(move |_| pool.recycle_write(staging)));
            return Ok(());
        }
        if self.encoder.is_none() {
            self.queue.write_buffer(buf, 0, &bytes);
            // `ARRAYFLOW_KERNEL_TIMES`: the copy runs and finishes in a submission of its own,
            // so the next dispatch's timestamps do not take it in (a diagnostic mode, which may
            // wait; the profiler's sampled timings do not: the first timed dispatch after an
            // upload may take in part of its copy, and the collector caps every device time at
            // the host's view of the same work).
            if apart {
                let index = self.queue.submit([]);
                let _ = self.device.poll(wgpu::PollType::Wait {
                    submission_index: Some(index),
                    timeout: None,
                });
            }
            return Ok(());
        }
        let staging = self.checked(wgpu::ErrorFilter::OutOfMemory, || {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("arrayflow upload"),
                    contents: &bytes,
                    usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                })
        })?;
        self.encoder()
            .copy_buffer_to_buffer(&staging, 0, buf, 0, bytes.len() as u64);
        Ok(())
    }

    fn zero(&mut self, buf: &mut wgpu::Buffer, _bytes: u64) -> Result<(), String> {
        self.encoder().clear_buffer(buf, 0, None);
        Ok(())
    }

    fn compile(&mut self, plan: &GpuPlan) -> Result<Arc<WgpuProgram>, String> {
        let dc = self.counters.clone();
        let key = Key::of_str(&[&plan.source]);
        if let Some(p) = self.programs.get(key) {
            Counters::add(&dc.device.memory_hits, 1);
            return Ok(p);
        }
        let t0 = Instant::now();
        // Every index a generated kernel computes is in range by construction (the WGSL renderer
        // derives them from the shapes it was given), so naga's bounds clamps and loop guards
        // are left out: they cost a compare and a select per access in bandwidth-bound loops.
        // Integer division keeps its checks (the library handles zero divisors itself anyway).
        let mut checks = wgpu::ShaderRuntimeChecks::unchecked();
        checks.int_div_checks = diagnostic_knob("ARRAYFLOW_WGPU_DIV_CHECKS");
        let module = self.checked(wgpu::ErrorFilter::Validation, || {
            // SAFETY: see above; the source is generated by arrayflow, never the user's.
            unsafe {
                self.device.create_shader_module_trusted(
                    wgpu::ShaderModuleDescriptor {
                        label: None,
                        source: wgpu::ShaderSource::Wgsl(plan.source.as_str().into()),
                    },
                    checks,
                )
            }
        })?;
        // One pipeline per entry: a multi-pass plan (the blocked LU) dispatches the same entry
        // many times, and each pipeline is a driver compile.
        let mut pipelines: Vec<wgpu::ComputePipeline> = Vec::with_capacity(plan.passes.len());
        for (i, pass) in plan.passes.iter().enumerate() {
            if let Some(j) = plan.passes[..i].iter().position(|q| q.entry == pass.entry) {
                let same = pipelines[j].clone();
                pipelines.push(same);
                continue;
            }
            let p = self.checked(wgpu::ErrorFilter::Validation, || {
                self.device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(&pass.entry),
                        layout: None,
                        module: &module,
                        entry_point: Some(&pass.entry),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            zero_initialize_workgroup_memory: diagnostic_knob(
                                "ARRAYFLOW_WGPU_ZERO_WORKGROUP",
                            ),
                            ..Default::default()
                        },
                        cache: self.cache.as_ref().map(|c| &c.0),
                    })
            })?;
            pipelines.push(p);
        }
        Counters::add(&dc.device.compiles, 1);
        Counters::add(&dc.device.compile_ns, t0.elapsed().as_nanos() as u64);
        if crate::profile::active() {
            crate::profile::runtime("compile", "wgpu", None, t0, 0, None);
        }
        self.save_pipeline_cache();
        let layouts = pipelines
            .iter()
            .map(|p| p.get_bind_group_layout(0))
            .collect();
        let p = Arc::new(WgpuProgram { pipelines, layouts });
        self.programs.insert(key, p.clone());
        Ok(p)
    }

    fn dispatch(
        &mut self,
        prog: &WgpuProgram,
        plan: &GpuPlan,
        pass: usize,
        bufs: &[&wgpu::Buffer],
        params: &[u64],
        groups: u32,
    ) -> Result<(), String> {
        let p = &plan.passes[pass];
        // Parameters: immediates, set on the pass below; or a storage buffer made for this
        // dispatch, bound after the buffers.
        let mut immediates = [0u32; IMMEDIATE_BYTES as usize / 4];
        let mut immediate_words = 0;
        let mut param_buf = None;
        if p.params {
            match plan.immediate_words {
                Some(words) => {
                    immediate_words = (words as usize).min(immediates.len());
                    for (w, v) in immediates[..immediate_words]
                        .iter_mut()
                        .zip(param_words(params))
                    {
                        *w = v;
                    }
                }
                None => param_buf = Some(self.param_buffer(params)),
            }
        }
        let group = self.bind_group(&prog.layouts[pass], bufs, param_buf.as_ref());
        let timed = self.timer.as_ref().is_some_and(|t| t.timing.on);
        if timed
            && self
                .timer
                .as_ref()
                .is_some_and(|t| t.pending() == Timer::CAP)
        {
            self.flush();
        }
        let slot = match self.timer.as_mut() {
            Some(t) if timed => Some(t.slot(&self.device, super::timing::kept_label(plan, pass))),
            _ => None,
        };
        self.encoder();
        let enc = self.encoder.as_mut().expect("made above");
        let writes = slot
            .zip(self.timer.as_ref().and_then(|t| t.current.as_ref()))
            .map(|(i, (t, _))| wgpu::ComputePassTimestampWrites {
                query_set: &t.set,
                beginning_of_pass_write_index: Some(2 * i),
                end_of_pass_write_index: Some(2 * i + 1),
            });
        let mut cp = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: writes,
        });
        cp.set_pipeline(&prog.pipelines[pass]);
        cp.set_bind_group(0, &group, &[]);
        if immediate_words > 0 {
            cp.set_immediates(0, bytemuck::cast_slice(&immediates[..immediate_words]));
        }
        cp.dispatch_workgroups(groups, 1, 1);
        Ok(())
    }

    fn download(&mut self, buf: &wgpu::Buffer, out: HostSlice, done: Completion) {
        let bytes = elem_bytes(out.dtype, true) * out.len as u64;
        if bytes == 0 {
            return self.on_done(done);
        }
        let done = self.counted(done);
        let pool = self.staging.clone();
        let staging = pool.download(bytes);
        self.encoder()
            .copy_buffer_to_buffer(buf, 0, &staging, 0, bytes);
        self.after_submit.push(Box::new(move |_| {
            let s = staging.clone();
            staging
                .slice(..bytes)
                .map_async(wgpu::MapMode::Read, move |r| {
                    let result = r.map_err(|e| e.to_string()).and_then(|()| {
                        let view = s.get_mapped_range(..bytes).map_err(|e| e.to_string())?;
                        copy_out(&view, out);
                        Ok(())
                    });
                    s.unmap();
                    pool.recycle_read(s);
                    done(result);
                });
        }));
    }

    fn on_done(&mut self, done: Completion) {
        let done = self.counted(done);
        self.after_submit.push(Box::new(move |q| {
            q.on_submitted_work_done(move || done(Ok(())));
        }));
    }

    fn trim(&mut self) {
        // Held work keeps the buffers it uses alive until it has run.
        if self.held {
            self.flush();
        }
        self.groups.clear();
    }

    fn submit(&mut self) {
        if self.hold_at > 0 && self.in_flight.load(Ordering::Acquire) >= self.hold_at {
            self.held = true;
        } else {
            self.flush();
        }
    }

    fn poll(&mut self) -> bool {
        if self.outstanding.load(Ordering::Acquire) > 0 {
            let _ = self.device.poll(wgpu::PollType::Poll);
        }
        if self.held && self.in_flight.load(Ordering::Acquire) < self.hold_at {
            self.flush();
        }
        // Held work counts as watched: the executor keeps polling until it goes, or parks
        // (which submits it) before it blocks.
        self.held || self.outstanding.load(Ordering::Acquire) > 0
    }

    fn park(&mut self) {
        if self.held {
            self.flush();
        }
        if self.outstanding.load(Ordering::Acquire) > 0 {
            let _ = self.poll.send(());
        }
    }
}
