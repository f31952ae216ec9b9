//! The process-wide runtime: configuration, the front end's state behind one lock, the execution
//! scheduler, flow control and counters. The application's threads share it.

pub mod stats;

use crate::compile::WorkQueue;
use crate::exec::Scheduler;
use crate::frontend::NodeTable;
use crate::proggen::GenConfig;
use parking_lot::Mutex;
use stats::Counters;
use std::sync::{Arc, OnceLock};

/// Settings of the runtime. Set them with `Runtime::builder()...start()` before the first array operation,
/// or through environment variables (`ARRAYFLOW_QUEUE_THRESHOLD`, `ARRAYFLOW_TILE`,
/// `ARRAYFLOW_MAX_OUTSTANDING`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Compute entries the work queue holds before it is flushed (outside blocks).
    pub queue_threshold: usize,
    /// Programs submitted but not completed before the application thread waits.
    pub max_outstanding: usize,
    /// Elements per tile of the CPU tile VM (a multiple of 1024).
    pub tile: usize,
    /// Whether flushes look up and fill the trace cache (`ARRAYFLOW_TRACE_CACHE=0` turns it off).
    pub trace_cache: bool,
    /// Trace-cache entries per bucket (call site of a key's first entry).
    pub trace_bucket_entries: usize,
    /// Trace-cache entries in all.
    pub trace_entries: usize,
    /// Code reuse sections the macro cache keeps (least recently used evicted first).
    pub macro_entries: usize,
    /// The device programs go to first (`ARRAYFLOW_DEVICE`); the CPU executor always runs too.
    pub device: crate::exec::device::DeviceChoice,
    /// Limits of the device executor (`ARRAYFLOW_DEVICE_MEMORY`, `ARRAYFLOW_DEVICE_KERNEL_LIMIT`).
    pub device_limits: crate::exec::gpu::Limits,
    /// The code reuse replay check: a section's first replay and every `reuse_check`th one are
    /// recorded again and compared with the cached recording (0: off). `ARRAYFLOW_REUSE_CHECK`
    /// (`0`/`off`, `on`, or N); default 16 in debug builds, off in release builds.
    pub reuse_check: u32,
    /// Size limit of each kind of on-disk program cache (`cpu`, `opencl`, `wgpu`) in MB, least
    /// recently used entries evicted first (`ARRAYFLOW_CACHE_LIMIT_MB`, default 1024).
    pub cache_limit_mb: u64,
}

/// The replay check's default period when it is on.
pub const REUSE_CHECK_EVERY: u32 = 16;

fn reuse_check_from_env() -> u32 {
    let default = if cfg!(debug_assertions) {
        REUSE_CHECK_EVERY
    } else {
        0
    };
    match std::env::var("ARRAYFLOW_REUSE_CHECK").as_deref() {
        Ok("off") | Ok("false") => 0,
        Ok("on") | Ok("true") => REUSE_CHECK_EVERY,
        Ok(v) => v.trim().parse().unwrap_or(default),
        Err(_) => default,
    }
}

impl Default for Config {
    fn default() -> Self {
        let env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        Config {
            queue_threshold: env("ARRAYFLOW_QUEUE_THRESHOLD", 512),
            max_outstanding: env("ARRAYFLOW_MAX_OUTSTANDING", 256),
            tile: tile_size(env("ARRAYFLOW_TILE", 1024)),
            trace_cache: !matches!(
                std::env::var("ARRAYFLOW_TRACE_CACHE").as_deref(),
                Ok("0") | Ok("off")
            ),
            trace_bucket_entries: env("ARRAYFLOW_TRACE_BUCKET_ENTRIES", 16).max(1),
            trace_entries: env("ARRAYFLOW_TRACE_ENTRIES", 4096).max(1),
            macro_entries: env("ARRAYFLOW_MACRO_ENTRIES", 256).max(1),
            device: crate::exec::device::DeviceChoice::from_env(),
            device_limits: crate::exec::gpu::Limits::from_env(),
            reuse_check: reuse_check_from_env(),
            cache_limit_mb: crate::exec::program_cache::limit_mb_from_env(),
        }
    }
}

/// The tile VM's tile: a multiple of the reduction block (1024 elements), so reductions group their
/// partials the same way whatever the tile, and the native tier agrees bit for bit.
pub fn tile_size(requested: usize) -> usize {
    let b = crate::exec::cpu::REDUCE_BLOCK;
    requested.max(1).div_ceil(b) * b
}

/// The front end's state: the port table, the work queue with its trace-cache key, and the
/// trace cache.
pub struct FrontEnd {
    pub nodes: NodeTable,
    pub queue: WorkQueue,
    pub key: crate::compile::trace_key::TraceKey,
    pub traces: crate::compile::trace_cache::TraceCache,
    pub macros: crate::compile::macro_cache::MacroCache,
    /// Code reuse sections entered and not yet ended, outermost first.
    pub sections: Vec<crate::frontend::section::Recording>,
    /// Set before a section's final flush: that flush keeps its generated sequence here.
    /// The sequence, with each program's parameter values at generation time.
    #[allow(clippy::type_complexity)]
    pub capture: Option<Option<(crate::proggen::Generated, Vec<Vec<u64>>)>>,
    pub next_id: u64,
    pub block_depth: u32,
    /// The thread recording the outermost code reuse section: other threads' calls wait until it
    /// ends (`Inner::front`), so their operations are neither recorded into it nor refused by it.
    pub section_owner: Option<std::thread::ThreadId>,
}

impl FrontEnd {
    fn new(config: &Config) -> FrontEnd {
        FrontEnd {
            nodes: NodeTable::default(),
            queue: WorkQueue::default(),
            key: Default::default(),
            traces: crate::compile::trace_cache::TraceCache::new(
                config.trace_bucket_entries,
                config.trace_entries,
            ),
            macros: crate::compile::macro_cache::MacroCache::new(config.macro_entries),
            sections: Vec::new(),
            capture: None,
            next_id: 0,
            block_depth: 0,
            section_owner: None,
        }
    }
}

pub use crate::exec::FlowControl;

/// Everything the runtime owns.
pub struct Inner {
    pub config: Config,
    pub gen_config: GenConfig,
    /// The front end; application calls lock it through [`Inner::front`].
    pub fe: Mutex<FrontEnd>,
    /// Signalled when a code reuse section's recording ends (threads in `front` wait on it).
    pub section_done: parking_lot::Condvar,
    pub sched: Scheduler,
    pub counters: Arc<Counters>,
    pub flow: Arc<FlowControl>,
    /// The program sequence of the most recent flush, for `Runtime::last_flush_listing()`.
    pub last_sequence: Mutex<Option<Arc<crate::proggen::sequence::ProgramSequence>>>,
    /// Whether flushes use the trace cache (starts as `config.trace_cache`).
    pub trace_cache_on: std::sync::atomic::AtomicBool,
    /// The code reuse replay check's period (starts as `config.reuse_check`; 0: off).
    pub reuse_check: std::sync::atomic::AtomicU32,
    /// Comparison mode's settings (`None`: off, at no cost).
    pub compare: parking_lot::RwLock<Option<crate::debug::CompareConfig>>,
    /// Whether comparison mode is on (the record path's cheap check).
    pub compare_on: std::sync::atomic::AtomicBool,
    pub report: Arc<crate::debug::checker::Report>,
    checker: OnceLock<crossbeam_channel::Sender<crate::debug::checker::CheckJob>>,
    /// The user's error handlers, oldest first (the seed's error-handler stack).
    pub error_handlers: Mutex<Vec<ErrorHandler>>,
}

/// What an error handler decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorHandling {
    /// Handled: the failing call returns an invalid array (reading it returns the error).
    Continue,
    /// Not handled here: the next older handler decides (the default one panics).
    Pass,
}

/// A user error handler.
pub type ErrorHandler = Arc<dyn Fn(&crate::Error) -> ErrorHandling + Send + Sync>;

static RUNTIME: OnceLock<Inner> = OnceLock::new();

/// The process is exiting: stop the scheduler and executors and wait for their threads.
extern "C" fn stop_at_exit() {
    crate::exec::lifetime::stop_at_exit(|| {
        if let Some(rt) = RUNTIME.get() {
            rt.sched.stop();
        }
    });
}

impl Inner {
    /// The front end for an application call. While another thread records a code reuse section
    /// this waits for it to end: a section's queue holds only its own operations, and a read on
    /// another thread is not a read inside the section.
    pub fn front(&self) -> parking_lot::MutexGuard<'_, FrontEnd> {
        let me = std::thread::current().id();
        let mut fe = self.fe.lock();
        while fe.section_owner.is_some_and(|t| t != me) {
            self.section_done.wait(&mut fe);
        }
        fe
    }

    fn new(config: Config) -> Inner {
        crate::exec::program_cache::set_limit_mb(config.cache_limit_mb);
        let counters = Arc::new(Counters::default());
        let flow = Arc::new(FlowControl::new(config.max_outstanding));
        let sched = Scheduler::start(
            counters.clone(),
            flow.clone(),
            config.device.resolve(),
            config.device_limits,
        );
        let gen_config = GenConfig {
            tile: config.tile,
            ..GenConfig::default()
        };
        // Registered after the executors opened their devices, so it runs before the drivers'
        // own exit handlers: the runtime's threads leave the drivers before those tear down.
        // Opt-in for now (`ARRAYFLOW_ORDERLY_EXIT=1`): with it, a PoCL process segfaulted at exit
        // about once in two cold-cache runs (issue 18 item 9 is open until that is understood).
        if std::env::var("ARRAYFLOW_ORDERLY_EXIT").is_ok_and(|v| v == "1") {
            crate::exec::lifetime::register_exit(stop_at_exit);
        }
        tracing::debug!(target: "arrayflow::runtime", ?config, "runtime started");
        Inner {
            fe: Mutex::new(FrontEnd::new(&config)),
            section_done: parking_lot::Condvar::new(),
            trace_cache_on: std::sync::atomic::AtomicBool::new(config.trace_cache),
            reuse_check: std::sync::atomic::AtomicU32::new(config.reuse_check),
            config,
            gen_config,
            sched,
            counters,
            flow,
            last_sequence: Mutex::new(None),
            compare_on: std::sync::atomic::AtomicBool::new(
                crate::debug::CompareConfig::from_env().is_some(),
            ),
            compare: parking_lot::RwLock::new(crate::debug::CompareConfig::from_env()),
            report: Arc::new(Default::default()),
            checker: OnceLock::new(),
            error_handlers: Mutex::new(Vec::new()),
        }
    }

    /// Runs the error-handler stack, newest first; `true` if one handled the error.
    pub fn handle_error(&self, e: &crate::Error) -> bool {
        let handlers = self.error_handlers.lock().clone();
        handlers
            .iter()
            .rev()
            .any(|h| h(e) == ErrorHandling::Continue)
    }

    /// An array whose value is the error `e`: reading it, or anything computed from it, returns
    /// the error (0-dimensional; the failed call's shape may not exist).
    pub fn invalid_array(
        &self,
        e: crate::Error,
        dtype: crate::ir::DType,
    ) -> crate::frontend::Handle {
        let buf = self.sched.new_buffer();
        let mut fe = self.front();
        fe.next_id += 1;
        let id = crate::ir::NodeId(fe.next_id);
        let site = e.site.unwrap_or(std::panic::Location::caller());
        fe.nodes.insert(
            id,
            crate::frontend::NodeInfo::new(
                crate::ir::Op::Source,
                Default::default(),
                Default::default(),
                dtype,
                site,
                crate::frontend::NodeState::Stored(buf),
            ),
        );
        self.sched
            .send(crate::exec::SchedMsg::Poison { buf, error: e });
        Arc::new(crate::frontend::NodeHandle {
            id,
            shape: Default::default(),
            dtype,
            konst: None,
        })
    }

    /// The comparison checker thread (started on first use).
    pub fn checker(&self) -> &crossbeam_channel::Sender<crate::debug::checker::CheckJob> {
        self.checker
            .get_or_init(|| crate::debug::checker::start(self.report.clone()))
    }

    /// The runtime, started with the default configuration on first use.
    pub fn get() -> &'static Inner {
        RUNTIME.get_or_init(|| Inner::new(Config::default()))
    }

    /// Starts the runtime with `config`; `false` if it was already running.
    pub fn init(config: Config) -> bool {
        let mut fresh = false;
        RUNTIME.get_or_init(|| {
            fresh = true;
            Inner::new(config)
        });
        fresh
    }
}
