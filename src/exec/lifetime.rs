//! The runtime threads' lifetime and an orderly process exit (GitHub issue 18, item 9: a wgpu
//! process crashed at exit on an H100). The runtime lives in a static that is never dropped, so
//! without this its threads would still be inside the driver (a queue submission, a fence wait)
//! while the C library's exit runs the drivers' destructors. Every runtime thread is started with
//! [`spawn`], which counts it while it runs; at exit an `atexit` handler ([`stop_at_exit`],
//! registered once the executors have opened their devices, so it runs before the drivers'
//! own exit handlers) sets [`stopping`] (executors then drop queued work instead of running it),
//! stops the scheduler, which stops the executors, and waits a bounded time for every counted
//! thread to finish: each drops its device objects, and the poll and completion threads end once
//! their executor is gone.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runtime threads still running.
static LIVE: Mutex<usize> = Mutex::new(0);
static ENDED: Condvar = Condvar::new();
static STOPPING: AtomicBool = AtomicBool::new(false);

/// How long exit waits for the runtime's threads (a kernel that is running finishes first).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Counts one runtime thread from before it starts until it has dropped everything it owned.
struct Live;

impl Live {
    fn new() -> Live {
        *LIVE.lock() += 1;
        Live
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let mut live = LIVE.lock();
        *live -= 1;
        if *live == 0 {
            ENDED.notify_all();
        }
    }
}

/// Starts a runtime thread named `name`, counted until `f` returns and its captures are dropped.
pub(crate) fn spawn(
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let live = Live::new();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // Dropped after `f` and everything it captured.
            let _live = live;
            f()
        })
}

/// Whether the process is exiting: executors drop the work still queued instead of running it.
pub(crate) fn stopping() -> bool {
    STOPPING.load(Ordering::Relaxed)
}

/// Waits until every runtime thread has ended, at most `timeout`; `true` if they all did.
pub(crate) fn wait_for_threads(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut live = LIVE.lock();
    while *live > 0 {
        if ENDED.wait_until(&mut live, deadline).timed_out() {
            return *live == 0;
        }
    }
    true
}

/// The exit handler, once registered (orderly exit is on).
static HANDLER: std::sync::OnceLock<extern "C" fn()> = std::sync::OnceLock::new();
/// Shared objects loaded when the handler was last registered.
static LOADED: AtomicUsize = AtomicUsize::new(0);

/// Registers `handler` to run at process exit.
pub(crate) fn register_exit(handler: extern "C" fn()) {
    if HANDLER.set(handler).is_ok() {
        register_now(handler);
    }
}

fn register_now(handler: extern "C" fn()) {
    LOADED.store(loaded_objects(), Ordering::Relaxed);
    // SAFETY: `handler` is a plain function that does not unwind (see `stop_at_exit`).
    unsafe {
        libc::atexit(handler);
    }
}

/// Program builds after which the handler is registered again whatever was loaded.
const EARLY_BUILDS: usize = 16;

/// Called after a program build. Exit runs the handlers registered with `atexit` and the
/// destructors of C++ libraries' statics in one list, last registered first: what a driver's
/// compiler sets up on its first builds (PoCL's clang and LLVM: libraries loaded then, and
/// function-local statics constructed on first use) registers its destructors after the
/// runtime's handler, so they would run first and a runtime thread still compiling would crash in
/// destroyed state (issue 18 item 9). So after each of the first builds, and after any later one
/// that loaded shared objects, the handler is registered again, to run before them (it runs once;
/// later calls return at once).
pub(crate) fn after_driver_load() {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let Some(&handler) = HANDLER.get() else {
        return;
    };
    let early = BUILDS.fetch_add(1, Ordering::Relaxed) < EARLY_BUILDS;
    if early || loaded_objects() > LOADED.load(Ordering::Relaxed) {
        register_now(handler);
    }
}

/// The number of shared objects loaded in the process.
fn loaded_objects() -> usize {
    unsafe extern "C" fn count(
        _info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `usize` passed below, alive for the call.
        unsafe { *(data as *mut usize) += 1 };
        0
    }
    let mut n = 0usize;
    // SAFETY: the callback only increments the counter it is given.
    unsafe {
        libc::dl_iterate_phdr(Some(count), &mut n as *mut usize as *mut libc::c_void);
    }
    n
}

/// The exit sequence: marks the runtime as stopping, runs `stop` (which tells the scheduler to
/// shut down) and waits for the runtime's threads. Never unwinds (it runs inside `exit`).
pub(crate) fn stop_at_exit(stop: impl FnOnce()) {
    static RAN: AtomicBool = AtomicBool::new(false);
    if RAN.swap(true, Ordering::AcqRel) {
        return; // registered more than once (`after_driver_load`): the first call did it all
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        STOPPING.store(true, Ordering::Release);
        stop();
        if wait_for_threads(EXIT_WAIT) {
            tracing::debug!(target: "arrayflow::exec", "exit: the runtime's threads have ended");
        } else {
            tracing::debug!(target: "arrayflow::exec", "exit: runtime threads still running");
        }
    }));
}
