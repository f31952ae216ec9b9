//! `Runtime`: start-up configuration, execution control (`execute`, blocks) and statistics.

use crate::error::{Error, ErrorKind, Result};
pub use crate::exec::cpu::native::NativeMode;
pub use crate::exec::device::{Backend, DeviceChoice, DeviceInfo, DeviceKind};
pub use crate::exec::gpu::Limits as DeviceLimits;
pub use crate::runtime::ErrorHandling;
pub use crate::runtime::stats::{CacheStats, ExecutorStats, FlushCounts, KernelTime, Stats};
use crate::runtime::{Config, Inner};

/// The process-wide runtime. It starts itself on first use; call [`Runtime::builder`] first to
/// change its settings.
///
/// ```
/// use arrayflow::{Array, Runtime};
///
/// // Before the first array operation (environment variables give the defaults).
/// Runtime::builder().queue_threshold(256).tile(4096).start()?;
/// assert_eq!(Runtime::config().queue_threshold, 256);
/// assert!(Runtime::builder().start().is_err()); // it runs now
///
/// // Blocks compile a loop body as one unit; `execute` runs what was recorded and waits.
/// let before = Runtime::stats();
/// let acc = Runtime::block(|| (0..10).fold(Array::<f32>::zeros(&[3]), |acc, k| acc + k as f32));
/// Runtime::execute();
/// assert_eq!(acc.to_vec()?, vec![45.0; 3]);
/// let stats = Runtime::stats().since(&before);
/// assert!(stats.ops_recorded > 0);
/// println!("{} kernels launched on {}", stats.kernels_launched, Runtime::executor());
/// # Ok::<(), arrayflow::Error>(())
/// ```
pub struct Runtime;

/// Settings for [`Runtime`], applied by [`RuntimeBuilder::start`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    config: Config,
}

impl RuntimeBuilder {
    /// Compute entries the work queue holds before it flushes on its own.
    pub fn queue_threshold(mut self, n: usize) -> Self {
        self.config.queue_threshold = n.max(1);
        self
    }
    /// Programs in flight before the application thread waits (flow control).
    pub fn max_outstanding(mut self, n: usize) -> Self {
        self.config.max_outstanding = n.max(1);
        self
    }
    /// Elements per tile of the CPU tile VM, rounded up to a multiple of 1024.
    pub fn tile(mut self, n: usize) -> Self {
        self.config.tile = crate::runtime::tile_size(n);
        self
    }
    /// Code reuse sections the macro cache keeps (least recently used evicted first).
    pub fn macro_cache_entries(mut self, n: usize) -> Self {
        self.config.macro_entries = n.max(1);
        self
    }
    /// Trace-cache limits: entries per bucket (a call site) and in all.
    pub fn trace_cache_limits(mut self, per_bucket: usize, total: usize) -> Self {
        self.config.trace_bucket_entries = per_bucket.max(1);
        self.config.trace_entries = total.max(1);
        self
    }
    /// The device programs go to first (the CPU executor always runs beside it, for work the
    /// device cannot do). Overrides `ARRAYFLOW_DEVICE`.
    pub fn device(mut self, choice: DeviceChoice) -> Self {
        self.config.device = choice;
        self
    }
    /// Limits for the device executor: the device memory it may hold, and (for testing the
    /// split-and-retry path) the instructions a kernel may have before its compile fails.
    /// Override `ARRAYFLOW_DEVICE_MEMORY` and `ARRAYFLOW_DEVICE_KERNEL_LIMIT`.
    pub fn device_limits(mut self, limits: DeviceLimits) -> Self {
        self.config.device_limits = limits;
        self
    }
    /// The code reuse replay check's period (0: off); overrides `ARRAYFLOW_REUSE_CHECK`. See
    /// [`Runtime::set_reuse_check`].
    pub fn reuse_check(mut self, every: u32) -> Self {
        self.config.reuse_check = every;
        self
    }
    /// Size limit of each kind of on-disk program cache (compiled native kernels, OpenCL binaries,
    /// the wgpu pipeline cache) in MB; least recently used entries are evicted first. Overrides
    /// `ARRAYFLOW_CACHE_LIMIT_MB` (default 1024 for each kind).
    pub fn cache_limit_mb(mut self, mb: u64) -> Self {
        self.config.cache_limit_mb = mb;
        self
    }
    /// Starts the runtime; an error if it already runs (an array operation started it).
    #[track_caller]
    pub fn start(self) -> Result<()> {
        if Inner::init(self.config) {
            Ok(())
        } else {
            Err(
                Error::new(ErrorKind::Runtime, "the runtime is already running")
                    .at(std::panic::Location::caller())
                    .hint("call Runtime::builder()...start() before the first array operation"),
            )
        }
    }
}

/// The limit [`Runtime::set_small_matmul`] takes when turned on (`ARRAYFLOW_SMALL_MATMUL=on`):
/// matrix products of at most this many result elements per batch item over a long inner
/// extent are recorded as fused reductions.
pub const SMALL_MATMUL_LIMIT: usize = crate::frontend::small_product::MAX_RESULT;

impl Runtime {
    /// Settings for the runtime, applied by [`RuntimeBuilder::start`] before the first array
    /// operation (the runtime otherwise starts itself with the environment's settings).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }
    /// Counters since start-up: ops recorded, kernels generated and launched, flushes by reason,
    /// buffers and bytes allocated, bytes moved.
    pub fn stats() -> Stats {
        Inner::get().counters.snapshot()
    }
    /// The device time of each GPU kernel since the last call, longest total first, when the
    /// process runs with `ARRAYFLOW_KERNEL_TIMES=1` (OpenCL profiling events, wgpu timestamp
    /// queries; a diagnostic mode that waits for each submission); empty otherwise. Runs what is
    /// recorded first. A kernel is named by its entry point, a hash of its source and its
    /// work-groups (`af_kernel [3fa2c1] x4096`: a fused kernel; intrinsics name their passes).
    pub fn take_kernel_times() -> Vec<KernelTime> {
        let inner = Inner::get();
        inner.execute();
        let mut v: Vec<KernelTime> = std::mem::take(&mut *inner.counters.kernel_times.lock())
            .into_iter()
            .map(|(name, (launches, ns))| KernelTime {
                name,
                launches,
                device_ns: ns,
            })
            .collect();
        v.sort_by(|a, b| b.device_ns.cmp(&a.device_ns).then(a.name.cmp(&b.name)));
        v
    }
    /// Profiles until the returned guard is dropped (or [`crate::ProfileGuard::finish`]ed), then
    /// writes the run's records to a new folder `dir/run-<unix-ms>-<pid>/`; read it with
    /// `cargo run --bin arrayflow-prof -- report <dir>`. What was recorded before runs first (it
    /// is not part of the profile). GPU kernels are timed on the device when the process started
    /// with `ARRAYFLOW_PROFILE` or `ARRAYFLOW_KERNEL_TIMES` set, on the host's clock otherwise.
    /// An error if the profiler already runs.
    ///
    /// ```no_run
    /// use arrayflow::{Array, Runtime};
    /// let guard = Runtime::profile("target/profile")?;
    /// let a = Array::<f32>::from_vec1(vec![1.0; 1 << 20]);
    /// let b = (a.sqrt() + 1.0f32).to_vec()?;
    /// let run = guard.finish().map_err(|e| arrayflow::Error::new(arrayflow::ErrorKind::Runtime, e))?;
    /// println!("profile in {}", run.display());
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn profile(dir: impl AsRef<std::path::Path>) -> Result<crate::ProfileGuard> {
        let site = std::panic::Location::caller();
        let inner = Inner::get();
        inner.execute();
        crate::profile::start(dir.as_ref(), Inner::profile_info(&inner.sched)).map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("cannot start the profiler: {e}"),
            )
            .at(site)
            .hint("drop the running profile's guard first, or unset ARRAYFLOW_PROFILE")
        })?;
        Ok(crate::ProfileGuard {
            finish: Some(Box::new(|| Inner::get().execute())),
            written: None,
        })
    }
    /// Attaches `debugger` until the returned guard is dropped (replacing one attached before):
    /// breakpoints by call site, watchpoints, and a callback or the console at each stop. See
    /// [`crate::Debugger`] for an example and README's "Debugging" for the modes.
    pub fn debug(debugger: crate::Debugger) -> crate::DebugGuard {
        Inner::get();
        debugger.attach()
    }
    /// Runs everything recorded so far and waits for it.
    pub fn execute() {
        Inner::get().execute();
    }
    /// Marks the start of a block (for example a loop body): the queue is not flushed for its
    /// length until the matching `end_block`, so the whole block is compiled together.
    pub fn begin_block() {
        Inner::get().begin_block();
    }
    /// Ends a block; the outermost one flushes the queue.
    #[track_caller]
    pub fn end_block() -> Result<()> {
        Inner::get().end_block(std::panic::Location::caller())
    }
    /// Runs `f` inside a block.
    #[track_caller]
    pub fn block<R>(f: impl FnOnce() -> R) -> R {
        /// Closes the block if `f` panics, so a caught panic leaves no block open.
        struct Unwind;
        impl Drop for Unwind {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    Inner::get().unwind_block();
                }
            }
        }
        let site = std::panic::Location::caller();
        Self::begin_block();
        let guard = Unwind;
        let r = f();
        std::mem::forget(guard);
        Inner::get()
            .end_block(site)
            .expect("blocks are balanced inside Runtime::block");
        r
    }
    /// The executors that run kernels, devices first, for example
    /// `opencl:0 NVIDIA H100 80GB HBM3 (Discrete, NVIDIA CUDA, 81008 MiB, f64 yes) + cpu (16 threads;
    /// native C tier: Auto)`.
    pub fn executor() -> String {
        let cpu = format!(
            "cpu ({} threads; native C tier: {:?})",
            rayon::current_num_threads(),
            crate::exec::cpu::native::mode()
        );
        let devices = Inner::get().sched.devices();
        devices
            .iter()
            .map(|d| d.to_string())
            .chain(std::iter::once(cpu))
            .collect::<Vec<_>>()
            .join(" + ")
    }
    /// The device executor's backend (`Backend::Cpu` when kernels run on the CPU only).
    pub fn backend() -> Backend {
        Inner::get()
            .sched
            .device()
            .map(|d| d.backend)
            .unwrap_or(Backend::Cpu)
    }
    /// Every OpenCL device and wgpu adapter on this machine, found once per process.
    pub fn devices() -> &'static [DeviceInfo] {
        crate::exec::device::inventory()
    }
    /// When fused kernels are compiled to native code (`ARRAYFLOW_NATIVE=auto|always|require|off`
    /// sets the starting mode). Takes effect for kernels launched from now on.
    pub fn set_native(mode: NativeMode) {
        crate::exec::cpu::native::set_mode(mode);
    }
    /// The native tier's current mode (see [`Runtime::set_native`]), for code that changes it
    /// for a while and puts it back.
    pub fn native() -> NativeMode {
        crate::exec::cpu::native::mode()
    }
    /// The largest result (elements per batch item, `m * n`) of a matrix product over a long
    /// inner extent (4096 or more) that is recorded as a fused multiply and sum, so the operands'
    /// producers fuse into it and nothing is stored. 0 (the default, unless `ARRAYFLOW_SMALL_MATMUL`
    /// says `on` ([`SMALL_MATMUL_LIMIT`]) or a number) runs every product on the GEMM intrinsic. Takes effect for
    /// products recorded from now on.
    pub fn set_small_matmul(max_result: usize) {
        crate::frontend::small_product::set_limit(max_result);
    }
    /// Turns the trace cache on or off (it starts on unless `ARRAYFLOW_TRACE_CACHE=0`). With it on,
    /// a flush whose work queue matches one seen before reuses that program sequence instead of
    /// generating it again.
    pub fn set_trace_cache(on: bool) {
        Inner::get()
            .trace_cache_on
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
    /// Empties the trace cache.
    pub fn clear_trace_cache() {
        Inner::get().front().traces.clear();
    }
    /// Entries the trace cache holds now, in all and for the bucket of the call site `site`
    /// (the site of a key's first entry).
    pub fn trace_cache_len(site: Option<&'static std::panic::Location<'static>>) -> usize {
        let fe = Inner::get().front();
        match site {
            None => fe.traces.len(),
            Some(s) => fe
                .traces
                .bucket_len(s as *const _ as *const () as usize as u64),
        }
    }
    /// Pushes an error handler. When an operator or other non-`try_` call fails (bad shapes,
    /// types, arguments), handlers are asked newest first: `Continue` makes the call return an
    /// invalid array (reading it, or anything computed from it, returns the error with the failing
    /// call's site); `Pass` asks the next older one. The default, after all, panics.
    pub fn push_error_handler(f: impl Fn(&crate::Error) -> ErrorHandling + Send + Sync + 'static) {
        Inner::get()
            .error_handlers
            .lock()
            .push(std::sync::Arc::new(f));
    }
    /// Removes the newest error handler; `false` if there was none.
    pub fn pop_error_handler() -> bool {
        Inner::get().error_handlers.lock().pop().is_some()
    }
    /// Switches comparison mode on (with its settings) or off, from the next recorded op on.
    /// Off costs nothing. `ARRAYFLOW_COMPARE=after|copyout[:abort|error|log][:narrow|nonarrow]`
    /// sets it at start-up. With [`crate::debug::CompareConfig::narrow`] (the default), the last
    /// fused kernels are kept, and a mismatch a read reports names the first diverging op.
    ///
    /// ```
    /// use arrayflow::{Array, CompareConfig, CompareMode, DType, MismatchAction, Runtime, Tolerance};
    ///
    /// let config = CompareConfig::new(CompareMode::AfterComputation)
    ///     .action(MismatchAction::Error) // the next read returns ErrorKind::Mismatch
    ///     .tolerance(DType::F32, Tolerance { scale: 1e-6, floor: 1e-7 });
    /// Runtime::set_compare(Some(config));
    /// let x = Array::from_vec(vec![0.5f32, 1.5, 2.5], &[3]);
    /// let y = (x.exp() * &x).sum();
    /// let v = y.item()?;
    /// let oracle: f64 = [0.5f64, 1.5, 2.5].iter().map(|x| x.exp() * x).sum();
    /// assert!((v as f64 - oracle).abs() < 1e-5 * oracle);
    /// // Every op also got a reference value from the sequential interpreter.
    /// assert!((y.reference()?[0] - v).abs() <= 1e-6 * v.abs());
    /// assert!(Runtime::mismatches().is_empty());
    /// assert!(Runtime::comparison_summary().iter().any(|s| s.op == "exp"));
    /// Runtime::set_compare(None);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    pub fn set_compare(config: Option<crate::debug::CompareConfig>) {
        let inner = Inner::get();
        let on = config.is_some();
        let narrow = config.as_ref().map_or(0, |c| c.narrow);
        inner.keep_kernels(|c| c.set_narrowing(narrow));
        *inner.compare.write() = config;
        inner
            .compare_on
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
    /// Every mismatch comparison mode found so far, earliest-recorded op first. Runs what is
    /// queued and waits for pending checks first.
    pub fn mismatches() -> Vec<crate::debug::Mismatch> {
        let inner = Inner::get();
        inner.execute();
        inner.report.wait();
        let mut v = inner.report.mismatches.lock().clone();
        v.sort_by_key(|m| m.order);
        v
    }
    /// Forgets the mismatches and the per-op summary gathered so far.
    pub fn clear_mismatches() {
        let inner = Inner::get();
        inner.report.wait();
        inner.report.mismatches.lock().clear();
        inner.report.summary.lock().clear();
        *inner.report.surfaced.lock() = 0;
    }
    /// What comparison mode checked, per op and call site: elements checked, largest relative
    /// error, mismatches. Runs what is queued and waits for pending checks first.
    pub fn comparison_summary() -> Vec<crate::debug::OpSummary> {
        let inner = Inner::get();
        inner.execute();
        inner.report.wait();
        inner.report.summary.lock().clone()
    }
    /// Where compiled native kernels are cached (`ARRAYFLOW_CACHE_DIR` moves it; the OpenCL and
    /// wgpu caches are its siblings `opencl` and `wgpu`).
    pub fn cache_dir() -> std::path::PathBuf {
        crate::exec::cpu::native::cache_dir()
    }
    /// A readable listing of the programs the most recent flush generated: each fused kernel's
    /// domain, inputs, outputs, helpers and instructions with the call site each came from. Use it
    /// to see why code ran as more kernels than expected.
    pub fn last_flush_listing() -> String {
        match &*Inner::get().last_sequence.lock() {
            Some(seq) => seq.describe(),
            None => "no flush yet".into(),
        }
    }
    /// The settings the runtime runs with.
    pub fn config() -> Config {
        Inner::get().config.clone()
    }
}
