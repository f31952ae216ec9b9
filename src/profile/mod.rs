//! The profiler (the seed's 809, FIG. 8A-8C and section 4.9): the switch, the hooks the runtime's
//! components call, the collector thread that turns their events into call-site (PC) and
//! compute-kernel (CK) records and runtime events (`collector.rs`), the run database
//! (`db.rs`, record types in `schema.rs`) and the analyzer's reports (`report/`).
//!
//! **The switch.** `ARRAYFLOW_PROFILE=<dir>` profiles the whole process (written at exit), or
//! [`crate::Runtime::profile`] returns a [`ProfileGuard`] that profiles until it is dropped. Each
//! hook first loads one relaxed atomic ([`active`]); off, nothing is allocated or sent. On, hooks
//! append their records to a batch of their own thread's (`batch.rs`: array operations, reads
//! and writes, launches, device times, runtime events), which goes to the collector thread down
//! a crossbeam channel when it fills and when the profiler stops; no hook sends a message or
//! wakes another thread, and the executors' launch records are a few ids, counts and times (the
//! collector works out the kernel's identity, weights and strings once per kernel). The
//! collector aggregates them and writes one folder per run, `<dir>/run-<unix-ms>-<pid>/`.
//!
//! **Device time.** GPU kernels are timed on the device (OpenCL profiling events, wgpu timestamp
//! queries where the adapter has them) when the device timers were armed at start-up
//! (`ARRAYFLOW_PROFILE`, `ARRAYFLOW_PROFILE_SAMPLE` or `ARRAYFLOW_KERNEL_TIMES` set:
//! `exec/gpu/timing.rs`); otherwise, and on the CPU executor, the host's clock measures them. Each
//! record says which. The executor never waits for a timing: OpenCL reads each timed kernel's
//! start and end once the marker after it has completed (the completion it already watches),
//! and wgpu resolves a submission's timestamps into a buffer mapped with `map_async` alongside
//! the submission's other completions.
//!
//! **Sampling.** A device timer still costs the device and the host something per kernel (an
//! OpenCL event, about 1.5 µs of device time per launch on NVIDIA's driver; a wgpu query resolve
//! and map per submission), which is more than 3% of a small kernel. So the profiler times, for
//! each kernel and executor, the first [`Sampling::DEFAULT`]`.first` launches (8) and then one in
//! [`Sampling::DEFAULT`]`.every` (32); the other launches are *estimated* at the mean of the same
//! kernel's launches timed before them (capped at the host's view of the launch). A CK record says how many of its launches were measured and how many
//! estimated. `ARRAYFLOW_PROFILE_SAMPLE=all` times every launch; `ARRAYFLOW_PROFILE_SAMPLE=N/K`
//! the first N, then one in K. Setting it also arms the device timers at start-up (for a
//! profiler started later with [`crate::Runtime::profile`]). `ARRAYFLOW_KERNEL_TIMES` times every
//! launch too. The CPU executor samples the same way (its host timings cost two clock reads and
//! a record each): its untimed launches are estimated likewise and placed in the timeline after
//! the executor's previous launch. Array operations' host time of recording is sampled per thread:
//! one in `every`, drawn at random, each site's total scaled from its timed operations (their
//! mean times its count of operations, which are all counted); with `ARRAYFLOW_PROFILE_SAMPLE=all`
//! every one is timed. [`Sampling::set`] chooses the sampling for the next runs in the program.

mod batch;
mod collector;
pub mod db;
pub mod report;
pub mod schema;
mod weights;

use crate::ir::Site;
pub(crate) use collector::{Event, LaunchTiming};
use crossbeam_channel::Sender;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub use weights::kernel_weights;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static COLLECTOR: OnceLock<Sender<collector::Msg>> = OnceLock::new();
/// Serialises starting and stopping (never taken on a hook's path).
static SWITCH: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Whether profiling is on: the one relaxed load every hook makes first.
#[inline]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Records an event in this thread's batch (call only when [`active`], or for work a run
/// started: a launch or device time that completes after the stop still counts).
pub(crate) fn emit(e: Event) {
    batch::event(e);
}

/// How an array operation is profiled ([`call_start`]): not at all (profiling off), counted
/// only, or counted and timed from the instant held.
#[derive(Clone, Copy)]
pub(crate) enum CallTimer {
    Off,
    Counted,
    Timed(Instant),
}

/// Hook, before an array operation is recorded: off, counted, or (one operation in
/// [`Sampling::every`] per thread, drawn at random) timed. Off, no clock is read.
#[inline]
pub(crate) fn call_start() -> CallTimer {
    if !active() {
        CallTimer::Off
    } else if batch::sample_call() {
        CallTimer::Timed(Instant::now())
    } else {
        CallTimer::Counted
    }
}

/// Hook: an array operation recorded at `site` ([`call_start`] said how to profile it).
#[inline]
pub(crate) fn api_call(site: Site, how: CallTimer) {
    match how {
        CallTimer::Off => {}
        CallTimer::Counted => batch::call(site, batch::UNTIMED),
        CallTimer::Timed(t) => batch::call(
            site,
            (t.elapsed().as_nanos() as u64).min(batch::UNTIMED - 1),
        ),
    }
}

/// The profiling directory `ARRAYFLOW_PROFILE` names, if set (read once).
pub fn env_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::var_os("ARRAYFLOW_PROFILE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .as_deref()
}

/// What the collector puts in a run's `meta.json` besides times.
#[derive(Debug, Clone)]
pub(crate) struct RunInfo {
    pub executors: Vec<String>,
    pub device_timing: &'static str,
    /// How device timings are sampled ([`Sampling::describe`]).
    pub sampling: String,
}

/// Starts a run writing under `dir`; an error if one is already running.
pub(crate) fn start(dir: &Path, info: RunInfo) -> Result<(), String> {
    let _g = SWITCH.lock();
    if active() {
        return Err("the profiler is already running".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tx = COLLECTOR.get_or_init(collector::spawn);
    let _ = crate::error::ERROR_HOOK.set(error);
    RUN.fetch_add(1, Ordering::Relaxed);
    batch::clear_all();
    let _ = tx.send(collector::Msg::Begin {
        dir: dir.to_path_buf(),
        info,
        at: Instant::now(),
    });
    ACTIVE.store(true, Ordering::Release);
    Ok(())
}

/// Ends the running run and writes it; returns its folder (`None` when none was running).
pub(crate) fn stop() -> Option<Result<PathBuf, String>> {
    let _g = SWITCH.lock();
    if !active() {
        return None;
    }
    ACTIVE.store(false, Ordering::Release);
    batch::send_all();
    let tx = COLLECTOR.get()?;
    let (reply, rx) = crossbeam_channel::bounded(1);
    let _ = tx.send(collector::Msg::End(reply));
    rx.recv().ok()
}

/// Profiling from [`crate::Runtime::profile`] until dropped: the drop runs what is recorded,
/// waits for it, and writes the run folder.
#[must_use = "profiling stops when the guard is dropped"]
pub struct ProfileGuard {
    pub(crate) finish: Option<Box<dyn FnOnce() + Send>>,
    pub(crate) written: Option<PathBuf>,
}

impl ProfileGuard {
    /// Stops profiling now and returns the run's folder (what the drop would otherwise do).
    pub fn finish(mut self) -> Result<PathBuf, String> {
        self.stop()
    }

    fn stop(&mut self) -> Result<PathBuf, String> {
        if let Some(f) = self.finish.take() {
            f();
        }
        match stop() {
            Some(r) => {
                if let Ok(p) = &r {
                    self.written = Some(p.clone());
                }
                r
            }
            None => self
                .written
                .clone()
                .ok_or_else(|| "the profiler was not running".to_string()),
        }
    }
}

impl Drop for ProfileGuard {
    fn drop(&mut self) {
        if self.finish.is_some()
            && let Err(e) = self.stop()
        {
            tracing::warn!(target: "arrayflow::profile", "profile not written: {e}");
        }
    }
}

/// `Some(now)` when profiling (for hooks that time something), else `None` without reading the
/// clock.
#[inline]
pub(crate) fn now() -> Option<Instant> {
    active().then(Instant::now)
}

/// Hook: an error reported at `site` (registered as `crate::error::ERROR_HOOK`).
fn error(site: Site) {
    if active() {
        emit(Event::Error { site });
    }
}

/// Hook: a runtime event of `kind` that began at `at` (see [`schema::RuntimeEvent`]).
pub(crate) fn runtime(
    kind: &'static str,
    detail: impl Into<std::borrow::Cow<'static, str>>,
    hit: Option<bool>,
    at: Instant,
    bytes: u64,
    site: Option<Site>,
) {
    emit(Event::Runtime {
        kind,
        detail: detail.into(),
        hit,
        at,
        dur_ns: at.elapsed().as_nanos() as u64,
        bytes,
        site,
    });
}

/// Hook: a runtime event of `kind` that began at `at` and took `dur_ns` (measured already: no
/// clock read).
pub(crate) fn runtime_took(kind: &'static str, detail: &'static str, at: Instant, dur_ns: u64) {
    emit(Event::Runtime {
        kind,
        detail: detail.into(),
        hit: None,
        at,
        dur_ns,
        bytes: 0,
        site: None,
    });
}

/// Hook: the device's own time for `task`'s kernels (call only when [`active`]).
pub(crate) fn device_time(task: u64, ns: u64) {
    emit(Event::DeviceTime { task, ns });
}

/// The CPU executor's kernel clock, per thread (a CPU task may run on the application's thread
/// too): armed for a launch the sampling times, started where the kernel itself starts
/// ([`kernel_starts`]), so what the runtime does before it (the native tier's look-up, a compile
/// and the load of a fresh library, the first use of anything in the process, the outputs'
/// allocation) is never the kernel's time.
#[derive(Clone, Copy)]
enum KernelClock {
    Idle,
    Armed,
    Started(Instant),
}

thread_local! {
    static KERNEL_CLOCK: std::cell::Cell<KernelClock> = const { std::cell::Cell::new(KernelClock::Idle) };
}

/// Hook: this thread's next kernel is timed ([`kernel_starts`], [`kernel_clock`]).
pub(crate) fn arm_kernel_clock() {
    KERNEL_CLOCK.with(|c| c.set(KernelClock::Armed));
}

/// Hook: the kernel starts now (its inputs, outputs and code ready); reads the clock only when
/// armed.
#[inline]
pub(crate) fn kernel_starts() {
    let _ = KERNEL_CLOCK.try_with(|c| {
        if let KernelClock::Armed = c.get() {
            c.set(KernelClock::Started(Instant::now()));
        }
    });
}

/// The armed kernel's time and its end (`None` if it never started), disarming the clock.
pub(crate) fn kernel_clock() -> Option<(u64, Instant)> {
    match KERNEL_CLOCK.with(|c| c.replace(KernelClock::Idle)) {
        KernelClock::Started(t) => {
            let end = Instant::now();
            Some(((end - t).as_nanos() as u64, end))
        }
        _ => None,
    }
}

/// Profiling runs started in this process (a [`Sampler`] starts over in each).
static RUN: AtomicU64 = AtomicU64::new(0);

/// How device timings are sampled (`ARRAYFLOW_PROFILE_SAMPLE`): each kernel's first `first`
/// launches on an executor are timed, then one in `every`; the rest are estimated from the timed
/// ones' mean (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// Launches of each kernel timed from the start.
    pub first: u64,
    /// After those, one launch in this many is timed.
    pub every: u64,
}

impl Sampling {
    /// The default: the first 8 launches, then one in 32.
    pub const DEFAULT: Sampling = Sampling {
        first: 8,
        every: 32,
    };
    /// Every launch timed (`ARRAYFLOW_PROFILE_SAMPLE=all`).
    pub const ALL: Sampling = Sampling {
        first: u64::MAX,
        every: 1,
    };

    /// `all`, `N/K` (the first N, then one in K; K at least 1) or `default`; `None` otherwise.
    pub fn parse(s: &str) -> Option<Sampling> {
        match s.trim() {
            "all" => Some(Sampling::ALL),
            "default" | "" => Some(Sampling::DEFAULT),
            v => {
                let (n, k) = v.split_once('/')?;
                let (first, every) = (n.trim().parse().ok()?, k.trim().parse().ok()?);
                (every >= 1).then_some(Sampling { first, every })
            }
        }
    }

    /// The process's sampling: the last [`Sampling::set`], else `ARRAYFLOW_PROFILE_SAMPLE` (a
    /// value that does not parse is reported once and the default used), read once.
    pub fn current() -> Sampling {
        let every = SET_EVERY.load(Ordering::Relaxed);
        if every != 0 {
            return Sampling {
                first: SET_FIRST.load(Ordering::Relaxed),
                every,
            };
        }
        static S: std::sync::OnceLock<Sampling> = std::sync::OnceLock::new();
        *S.get_or_init(|| match sample_env() {
            None => Sampling::DEFAULT,
            Some(v) => Sampling::parse(v).unwrap_or_else(|| {
                tracing::warn!(target: "arrayflow::profile",
                    "ARRAYFLOW_PROFILE_SAMPLE={v:?} is not `all`, `default` or `N/K`: the default is used");
                Sampling::DEFAULT
            }),
        })
    }

    /// Sets the sampling of the profiling runs started from now on (`None`: back to
    /// `ARRAYFLOW_PROFILE_SAMPLE` or the default), in place of the environment's. It does not
    /// arm the device timers: GPU kernels are timed on the host unless the process started with
    /// `ARRAYFLOW_PROFILE`, `ARRAYFLOW_PROFILE_SAMPLE` or `ARRAYFLOW_KERNEL_TIMES` set.
    pub fn set(s: Option<Sampling>) {
        let _g = SWITCH.lock();
        let s = s.unwrap_or(Sampling { first: 0, every: 0 });
        SET_FIRST.store(s.first, Ordering::Relaxed);
        SET_EVERY.store(s.every.max(u64::from(s.every != 0)), Ordering::Relaxed);
    }

    /// Whether launch `n` (counting from 0) of a kernel is timed.
    pub fn takes(&self, n: u64) -> bool {
        n < self.first || (n - self.first).is_multiple_of(self.every)
    }

    /// How the run's records say it (`meta.json`'s `sampling`).
    pub fn describe(&self) -> String {
        if *self == Sampling::ALL || self.every == 1 {
            "every launch and array operation timed".into()
        } else {
            format!(
                "first {} launches of each kernel timed, then 1 in {}; 1 array operation in {} \
                 timed per thread, at random",
                self.first, self.every, self.every
            )
        }
    }
}

/// [`Sampling::set`]'s choice (`SET_EVERY` 0: none).
static SET_FIRST: AtomicU64 = AtomicU64::new(0);
static SET_EVERY: AtomicU64 = AtomicU64::new(0);

/// `ARRAYFLOW_PROFILE_SAMPLE`, if set (read once).
fn sample_env() -> Option<&'static str> {
    static V: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    V.get_or_init(|| std::env::var("ARRAYFLOW_PROFILE_SAMPLE").ok())
        .as_deref()
}

/// Whether `ARRAYFLOW_PROFILE_SAMPLE` is set (it arms the device timers).
pub fn sample_env_set() -> bool {
    sample_env().is_some()
}

/// One kernel's launch count on one executor, for [`Sampling`]: kept beside the kernel's
/// compiled plan, so deciding costs no look-up. Counts start over with each profiling run.
#[derive(Debug, Default)]
pub(crate) struct Sampler(AtomicU64);

impl Sampler {
    /// Counts a profiled launch; whether it is to be timed. Called from one executor thread.
    pub(crate) fn take(&self) -> bool {
        // The run in the top 24 bits, the launches in the rest.
        let run = RUN.load(Ordering::Relaxed) & 0xff_ffff;
        let v = self.0.load(Ordering::Relaxed);
        let n = if v >> 40 == run {
            v & ((1 << 40) - 1)
        } else {
            0
        };
        self.0.store(run << 40 | (n + 1), Ordering::Relaxed);
        Sampling::current().takes(n)
    }
}
