//! The runtime's shared state: the front end's state behind one lock (the port table, the work
//! queue, the trace and macro caches, sections being recorded), the execution scheduler, flow
//! control, counters, comparison mode's settings and the error handlers, in one process-wide
//! [`Inner`]. It is defined here, at the C-Scheduler's layer, because the flush and the hand-off
//! (this folder) and the front end and debugger hooks above it all work on it; the API reaches it
//! through `Inner::get()`.

use super::config::Config;
use super::macro_cache::{MacroCache, Recording};
use super::trace_cache::TraceCache;
use super::trace_key::TraceKey;
use super::work_queue::WorkQueue;
use crate::counters::Counters;
use crate::exec::{FlowControl, Scheduler};
use crate::ir::NodeTable;
use crate::proggen::GenConfig;
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

/// The front end's state: the port table, the work queue with its trace-cache key, and the
/// trace cache.
pub struct FrontEnd {
    pub nodes: NodeTable,
    pub queue: WorkQueue,
    pub key: TraceKey,
    pub traces: TraceCache,
    pub macros: MacroCache,
    /// Code reuse sections entered and not yet ended, outermost first.
    pub sections: Vec<Recording>,
    /// Set before a section's final flush: that flush keeps its generated sequence here.
    /// The sequence, with each program's parameter values at generation time and the nodes it
    /// was generated from (for stepping replays: `compile/captures.rs`).
    #[allow(clippy::type_complexity)]
    pub capture: Option<
        Option<(
            crate::proggen::Generated,
            Vec<Vec<u64>>,
            crate::compile::macro_cache::SectionKernels,
        )>,
    >,
    pub next_id: u64,
    pub block_depth: u32,
    /// The thread recording the outermost code reuse section: other threads' calls wait until it
    /// ends (`Inner::front`), so their operations are neither recorded into it nor refused by it.
    pub section_owner: Option<std::thread::ThreadId>,
}

impl FrontEnd {
    /// An empty front end sized by `config`.
    pub fn new(config: &Config) -> FrontEnd {
        FrontEnd {
            nodes: NodeTable::default(),
            queue: WorkQueue::default(),
            key: Default::default(),
            traces: TraceCache::new(config.trace_bucket_entries, config.trace_entries),
            macros: MacroCache::new(config.macro_entries),
            sections: Vec::new(),
            capture: None,
            next_id: 0,
            block_depth: 0,
            section_owner: None,
        }
    }
}

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
    /// Whether flushes keep their fused kernels for stepping (`Runtime::set_stepping`).
    pub stepping_on: std::sync::atomic::AtomicBool,
    /// The kernels kept for stepping and the divergences found (`debug::step`).
    pub captures: Mutex<crate::debug::step::capture::Captures>,
    checker: OnceLock<crossbeam_channel::Sender<crate::debug::checker::CheckJob>>,
    /// The user's error handlers, oldest first (the seed's error-handler stack).
    pub error_handlers: Mutex<Vec<ErrorHandler>>,
    /// The executor a placement scope pins flushed work to (`Runtime::place_on`); `usize::MAX`
    /// when none.
    pub pin: std::sync::atomic::AtomicUsize,
    /// The split mode of a `Runtime::split` scope (`SplitMode::encode`); `u64::MAX` when none.
    pub split: std::sync::atomic::AtomicU64,
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
            // `ARRAYFLOW_PROFILE`: what was submitted finishes, then the run is written.
            if crate::profile::active() {
                rt.sched.barrier();
                if let Some(Err(e)) = crate::profile::stop() {
                    eprintln!("arrayflow: profile not written: {e}");
                }
            }
            rt.sched.stop();
        }
    });
}

impl Inner {
    /// The front end for an application call. While another thread records a code reuse section
    /// this waits for it to end: a section's queue holds only its own operations, and a read on
    /// another thread is not a read inside the section.
    pub fn front(&self) -> parking_lot::MutexGuard<'_, FrontEnd> {
        let mut fe = self.fe.lock();
        // Every recorded op passes here: the thread is looked up only while a section records.
        if fe.section_owner.is_some() {
            let me = std::thread::current().id();
            while fe.section_owner.is_some_and(|t| t != me) {
                self.section_done.wait(&mut fe);
            }
        }
        fe
    }

    fn new(config: Config) -> Inner {
        crate::exec::program_cache::set_limit_mb(config.cache_limit_mb);
        let compare_narrow = crate::debug::CompareConfig::from_env().map_or(0, |c| c.narrow);
        let counters = Arc::new(Counters::default());
        let flow = Arc::new(FlowControl::new(config.max_outstanding));
        let (devices, cpu_candidate) = config.device.resolve_all();
        let sched = Scheduler::start(
            counters.clone(),
            flow.clone(),
            &devices,
            cpu_candidate,
            config.device_limits,
        );
        let gen_config = GenConfig {
            tile: config.tile,
            ..GenConfig::default()
        };
        // Registered after the executors opened their devices, so it runs before the drivers'
        // own exit handlers (and again after a build loads a compiler, `after_driver_load`): the
        // runtime's threads leave the drivers before those tear down. `ARRAYFLOW_ORDERLY_EXIT=0`
        // turns it off.
        if !std::env::var("ARRAYFLOW_ORDERLY_EXIT").is_ok_and(|v| v == "0") {
            crate::exec::lifetime::register_exit(stop_at_exit);
        }
        tracing::debug!(target: "arrayflow::runtime", ?config, "runtime started");
        if let Some(dir) = crate::profile::env_dir()
            && let Err(e) = crate::profile::start(dir, Inner::profile_info(&sched))
        {
            tracing::warn!(target: "arrayflow::profile", "ARRAYFLOW_PROFILE: {e}");
        }
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
            // `ARRAYFLOW_COMPARE`'s narrowing keeps kernels from the start.
            stepping_on: std::sync::atomic::AtomicBool::new(compare_narrow > 0),
            captures: Mutex::new({
                let mut c = crate::debug::step::capture::Captures::default();
                c.set_narrowing(compare_narrow);
                c
            }),
            checker: OnceLock::new(),
            error_handlers: Mutex::new(Vec::new()),
            pin: std::sync::atomic::AtomicUsize::new(usize::MAX),
            split: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// The executors, as the profiler's runs name them (index 0: the CPU).
    pub(crate) fn profile_info(sched: &Scheduler) -> crate::profile::RunInfo {
        let mut executors = vec![format!(
            "cpu ({} threads; native C tier: {:?})",
            rayon::current_num_threads(),
            crate::exec::cpu::native::mode()
        )];
        executors.extend(sched.devices().iter().map(|d| d.to_string()));
        let device_timing = if crate::exec::gpu::timing::armed() && sched.device().is_some() {
            "device"
        } else {
            "host"
        };
        crate::profile::RunInfo {
            executors,
            device_timing,
            sampling: {
                let s = crate::profile::Sampling::current().describe();
                if device_timing == "device" && crate::exec::gpu::timing::kernel_times() {
                    format!("every device launch timed (ARRAYFLOW_KERNEL_TIMES); otherwise {s}")
                } else {
                    s
                }
            },
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
    pub fn invalid_array(&self, e: crate::Error, dtype: crate::ir::DType) -> super::Handle {
        let buf = self.sched.new_buffer();
        let mut fe = self.front();
        fe.next_id += 1;
        let id = crate::ir::NodeId(fe.next_id);
        let site = e.site.unwrap_or(std::panic::Location::caller());
        fe.nodes.insert(
            id,
            crate::ir::NodeInfo::new(
                crate::ir::Op::Source,
                Default::default(),
                Default::default(),
                dtype,
                site,
                crate::ir::NodeState::Stored(buf),
            ),
        );
        self.sched
            .send(crate::exec::SchedMsg::Poison { buf, error: e });
        Arc::new(super::NodeHandle {
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
