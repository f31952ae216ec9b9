//! The profiler (the seed's 809, FIG. 8A-8C and section 4.9): the switch, the hooks the runtime's
//! components call, the collector thread that turns their events into call-site (PC) and
//! compute-kernel (CK) records and runtime events (`collector.rs`), the run database
//! (`db.rs`, record types in `schema.rs`) and the analyzer's reports (`report/`).
//!
//! **The switch.** `ARRAYFLOW_PROFILE=<dir>` profiles the whole process (written at exit), or
//! [`crate::Runtime::profile`] returns a [`ProfileGuard`] that profiles until it is dropped. Each
//! hook first loads one relaxed atomic ([`active`]); off, nothing is allocated or sent. On, hooks
//! send events down a crossbeam channel (no locks on the application's or executors' paths) to
//! the collector thread, which aggregates them and writes one folder per run,
//! `<dir>/run-<unix-ms>-<pid>/`.
//!
//! **Device time.** GPU kernels are timed on the device (OpenCL profiling events, wgpu timestamp
//! queries where the adapter has them) when the device timers were armed at start-up
//! (`ARRAYFLOW_PROFILE` or `ARRAYFLOW_KERNEL_TIMES` set: `exec/gpu/timing.rs`); otherwise, and
//! on the CPU executor, the host's clock measures them. Each record says which.

mod collector;
pub mod db;
pub mod report;
pub mod schema;
mod weights;

use crate::ir::Site;
pub(crate) use collector::Event;
use crossbeam_channel::Sender;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Sends an event to the collector (call only when [`active`]).
pub(crate) fn emit(e: Event) {
    if let Some(tx) = COLLECTOR.get() {
        let _ = tx.send(collector::Msg::Event(e));
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

/// Hook: an array operation recorded at `site`, taking `ns` of host time.
#[inline]
pub(crate) fn api_call(site: Site, since: Option<Instant>) {
    if let Some(t) = since {
        emit(Event::Api {
            site,
            ns: t.elapsed().as_nanos() as u64,
        });
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
    detail: impl Into<String>,
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
        thread: std::thread::current().name().unwrap_or("app").to_string(),
        site,
    });
}

/// Hook: the device's own time for `task`'s kernels (call only when [`active`]).
pub(crate) fn device_time(task: u64, ns: u64) {
    emit(Event::DeviceTime { task, ns });
}

thread_local! {
    /// Host time this thread spent compiling while it ran a kernel (left out of the kernel's time).
    static EXCLUDED_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Hook: `ns` of this thread's time was a compile, not the kernel it was about to run.
pub(crate) fn exclude(ns: u64) {
    EXCLUDED_NS.with(|c| c.set(c.get() + ns));
}

/// This thread's compile time so far ([`exclude`]).
pub(crate) fn excluded() -> u64 {
    EXCLUDED_NS.with(|c| c.get())
}
