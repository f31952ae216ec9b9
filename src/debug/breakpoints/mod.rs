//! The debugger's breakpoints (the seed's section 4.7 and FIG. 9B): the attached session
//! ([`Debugger`], [`DebugGuard`]), its breakpoints and watchpoints, the hooks the API calls, and
//! the stop handed to the application's callback or to the console.
//!
//! **Where it stops.** An API call stops once it has recorded its result and before it returns it
//! to the application (the hook is where a result becomes an [`crate::Array`]): a breakpoint at a
//! line stops after each call at that line, with the value it recorded; a watchpoint stops when
//! an in-place operation (`+=`, `*=`, ... the compound assignment operators) gives the watched
//! array a new value, and follows the array through those updates. (`x = f(&x)` makes a new array
//! the runtime cannot tell from any other: watch that with a breakpoint at its line.)
//!
//! A watchpoint also stops when the runtime computes the watched array's current value
//! ([`StopReason::Computed`]): the flush that computes it (stored, or computed inside a fused
//! kernel without being stored) tells this module through the compile layer's hooks
//! (`compile::observe::FlushHooks`, registered when a debugger first attaches), under the front
//! end's lock; the stop itself waits on that thread until the call that flushed (a read, `eval`,
//! `execute`, a hint, the end of a block, or the next recorded result for a flush a record
//! triggered) has released the lock. Each value stops once, however often a later flush computes
//! it again. The stop changes nothing in the flush: in the default mode its values come from the
//! clone as a breakpoint's do.
//!
//! **Off costs nothing measurable.** With no debugger attached each hook is one relaxed atomic
//! load (`STATE`); everything else is behind it. The first hook of the process (state `UNKNOWN`)
//! attaches the console if `ARRAYFLOW_DEBUG` asks for it. The module sits in the API's layer: it
//! shows and edits arrays, and the API calls its hooks.

mod breakpoint;
mod console;
mod print;
mod stop;
mod values;

pub use breakpoint::{Breakpoint, BreakpointId, BreakpointInfo};
pub use stop::{ArrayId, LiveArray, Stop, StopReason};
pub use values::Values;

use crate::compile::Handle;
use crate::ir::{NodeId, Site};
use crate::runtime::Inner;
use breakpoint::{Armed, Location};
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// How the debugger obtains values at a stop, and what it does to the real work queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugMode {
    /// The default (the seed's non-intrusive mode): values at a stop are evaluated on a clone of
    /// the pending work (the reference interpreter, unfused and uncached); the real queue fuses
    /// and runs exactly as with no debugger attached, and its results are bit-identical.
    #[default]
    NonIntrusive,
    /// The seed's intrusive mode: the result at each stop is computed by the runtime there (its
    /// kernel is split at the breakpoint), so the value shown is the optimised one; later results
    /// may round differently from an undebugged run.
    Intrusive,
    /// The seed's reproducible (synchronous) mode: every API call's result is computed and waited
    /// for as it is recorded, in recording order; step one call at a time.
    Reproducible,
}

type Callback = Box<dyn FnMut(&mut Stop) + Send>;

/// The attached debugger's state.
pub(crate) struct Session {
    generation: u64,
    mode: DebugMode,
    bps: Vec<Armed>,
    next_id: u32,
    pub(crate) names: ahash::AHashMap<NodeId, String>,
    on_stop: Option<Callback>,
    step: bool,
    last_stop: Option<NodeId>,
}

/// `STATE`: the environment was not read yet (the first hook reads `ARRAYFLOW_DEBUG`).
const UNKNOWN: u8 = 0;
/// `STATE`: no debugger attached.
const OFF: u8 = 1;
/// `STATE`: a debugger is attached.
const ON: u8 = 2;
/// Whether a debugger is attached: the hooks' one check.
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether a debugger is attached (reading `ARRAYFLOW_DEBUG` the first time).
#[cold]
fn attached() -> bool {
    if STATE.load(Ordering::Relaxed) == UNKNOWN {
        // The first hook: attach what the environment asks for, once.
        static ENV: std::sync::Once = std::sync::Once::new();
        ENV.call_once(|| {
            let _ = STATE.compare_exchange(UNKNOWN, OFF, Ordering::Relaxed, Ordering::Relaxed);
            if let Some(d) = Debugger::from_env() {
                std::mem::forget(d.attach());
            }
        });
    }
    STATE.load(Ordering::Relaxed) == ON
}
static SESSION: Mutex<Option<Session>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread runs a stop's callback: its own API calls do not stop.
    static IN_STOP: Cell<bool> = const { Cell::new(false) };
    /// Watchpoints whose array a flush on this thread computed, waiting for the flush's call to
    /// release the front end's lock: the node and why it stops.
    static COMPUTED: std::cell::RefCell<Vec<(NodeId, StopReason)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

pub(crate) fn with_session<R>(f: impl FnOnce(&mut Session) -> R) -> Option<R> {
    SESSION.lock().as_mut().map(f)
}

/// The hook where an API call hands a result to the application.
#[inline]
pub(crate) fn on_result(h: &Handle) {
    if STATE.load(Ordering::Relaxed) != OFF && attached() {
        result_hit(h);
    }
}

/// The hook where an in-place operation rebinds an array from node `old` to `new`.
#[inline]
pub(crate) fn on_rebind(old: &Handle, new: &Handle) {
    if STATE.load(Ordering::Relaxed) != OFF && attached() {
        rebind_hit(old.id, new);
    }
}

/// Nanoseconds per hook with no debugger attached, over `iters` runs of the hooks' own check
/// (`benches/debug_hooks.rs`: the check compiled as the library is, not as the bench is).
#[doc(hidden)]
pub fn off_hook_ns(iters: u64) -> f64 {
    let t0 = std::time::Instant::now();
    let mut hits = 0u64;
    for i in 0..iters {
        if std::hint::black_box(&STATE).load(Ordering::Relaxed) != OFF && attached() {
            hits += i;
        }
    }
    std::hint::black_box(hits);
    t0.elapsed().as_secs_f64() * 1e9 / iters.max(1) as f64
}

fn node_site(id: NodeId) -> Option<Site> {
    Inner::get().fe.lock().nodes.get(&id).map(|n| n.site)
}

fn in_section() -> bool {
    !Inner::get().fe.lock().sections.is_empty()
}

/// The flush hook: `ids` were computed by a flush on this thread (the front end's lock is
/// held). Watchpoints on them count a hit, and those that stop wait in `COMPUTED`.
fn computed_hit(ids: &[NodeId]) {
    if STATE.load(Ordering::Relaxed) != ON || IN_STOP.get() {
        return;
    }
    let hits = with_session(|s| {
        let mut hits = Vec::new();
        for b in &mut s.bps {
            let Location::Watch(n) = b.bp.location else {
                continue;
            };
            if b.computed == Some(n) || !ids.contains(&n) {
                continue;
            }
            b.computed = Some(n);
            if b.bp.enabled {
                b.hits += 1;
                if b.hits > b.bp.ignore {
                    let reason = StopReason::Computed {
                        id: b.id,
                        hits: b.hits,
                    };
                    hits.push((n, reason));
                }
            }
        }
        hits
    });
    if let Some(hits) = hits.filter(|h| !h.is_empty()) {
        COMPUTED.with(|c| c.borrow_mut().extend(hits));
    }
}

/// The flush hook after the call that flushed released the front end's lock: the watchpoints
/// waiting in `COMPUTED` stop, each at its array's call site.
fn settled_hit() {
    if IN_STOP.get() {
        return;
    }
    let waiting = COMPUTED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    if waiting.is_empty() {
        return;
    }
    let Some(mode) = with_session(|s| s.mode) else {
        return;
    };
    for (node, reason) in waiting {
        if let Some(site) = node_site(node) {
            stop(node, None, site, mode, reason);
        }
    }
}

#[cold]
fn result_hit(h: &Handle) {
    if IN_STOP.get() {
        return;
    }
    // Watchpoints on arrays a flush that this record triggered computed stop first.
    settled_hit();
    let Some(site) = node_site(h.id) else { return };
    let Some(mode) = with_session(|s| s.mode) else {
        return;
    };
    if mode == DebugMode::Reproducible && !in_section() {
        // Synchronous: this call's result is computed and waited for now (an error shows at
        // the read, as without the debugger).
        let _ = Inner::get().eval(h, site);
    }
    // Candidate breakpoints (their conditions are evaluated without the session's lock).
    let Some((step, candidates)) = with_session(|s| {
        if s.last_stop == Some(h.id) {
            return (false, Vec::new());
        }
        let c: Vec<(BreakpointId, Option<breakpoint::Condition>)> = s
            .bps
            .iter()
            .filter(|b| b.bp.enabled && b.matches_site(site))
            .map(|b| (b.id, b.bp.condition.clone()))
            .collect();
        (s.step, c)
    }) else {
        return;
    };
    let mut value: Option<Option<Values>> = None;
    let mut reason = None;
    for (id, cond) in candidates {
        let holds = match &cond {
            None => true,
            Some(c) => {
                let v = value.get_or_insert_with(|| {
                    let src = match mode {
                        DebugMode::NonIntrusive => values::Source::Clone,
                        _ => values::Source::Materialise,
                    };
                    values::value_of(h.id, src, site).ok()
                });
                v.as_ref().is_some_and(|v| c.holds(v))
            }
        };
        if !holds {
            continue;
        }
        let hit = with_session(|s| {
            let b = s.bps.iter_mut().find(|b| b.id == id)?;
            b.hits += 1;
            (b.hits > b.bp.ignore).then_some(b.hits)
        })
        .flatten();
        if let (Some(hits), None) = (hit, &reason) {
            reason = Some(StopReason::Breakpoint { id, hits });
        }
    }
    let reason = match (reason, step) {
        (Some(r), _) => r,
        (None, true) => StopReason::Step,
        (None, false) => return,
    };
    stop(h.id, Some(h), site, mode, reason);
}

#[cold]
fn rebind_hit(old: NodeId, new: &Handle) {
    if IN_STOP.get() {
        return;
    }
    let Some((mode, hit)) = with_session(|s| {
        if let Some(name) = s.names.get(&old).cloned() {
            s.names.insert(new.id, name);
        }
        let mut hit = None;
        for b in &mut s.bps {
            if b.bp.location == Location::Watch(old) {
                b.bp.location = Location::Watch(new.id);
                if b.bp.enabled {
                    b.hits += 1;
                    if b.hits > b.bp.ignore && hit.is_none() {
                        hit = Some(StopReason::Watch {
                            id: b.id,
                            hits: b.hits,
                        });
                    }
                }
            }
        }
        (s.mode, hit)
    }) else {
        return;
    };
    if let (Some(reason), Some(site)) = (hit, node_site(new.id)) {
        stop(new.id, Some(new), site, mode, reason);
    }
}

/// Runs the callback for a stop at `node` (recorded at `site`); `recorded`: its handle, when
/// the stop is at the API call that recorded it (intrusive mode computes it there).
fn stop(node: NodeId, recorded: Option<&Handle>, site: Site, mode: DebugMode, reason: StopReason) {
    if let Some(h) = recorded
        && mode == DebugMode::Intrusive
        && !in_section()
    {
        // The kernel is split here: this result is computed and stored by the runtime.
        let _ = Inner::get().eval(h, site);
    }
    let Some((generation, callback)) = with_session(|s| {
        s.last_stop = Some(node);
        s.step = false;
        (s.generation, s.on_stop.take())
    }) else {
        return;
    };
    let mut stop = Stop {
        reason,
        node,
        site,
        mode,
        step: false,
    };
    if let Some(mut f) = callback {
        IN_STOP.set(true);
        /// Restores the thread's state even if the callback panics.
        struct Leave;
        impl Drop for Leave {
            fn drop(&mut self) {
                IN_STOP.set(false);
            }
        }
        let leave = Leave;
        f(&mut stop);
        drop(leave);
        with_session(|s| {
            if s.generation == generation && s.on_stop.is_none() {
                s.on_stop = Some(f);
            }
        });
    }
    if stop.step {
        with_session(|s| s.step = true);
    }
}

pub(crate) fn add(bp: Breakpoint) -> BreakpointId {
    with_session(|s| {
        s.next_id += 1;
        let id = BreakpointId(s.next_id);
        s.bps.push(Armed {
            id,
            bp,
            hits: 0,
            computed: None,
        });
        id
    })
    .unwrap_or(BreakpointId(0))
}

pub(crate) fn delete(id: BreakpointId) -> bool {
    with_session(|s| {
        let n = s.bps.len();
        s.bps.retain(|b| b.id != id);
        s.bps.len() != n
    })
    .unwrap_or(false)
}

pub(crate) fn enable(id: BreakpointId, on: bool) -> bool {
    with_session(|s| {
        s.bps
            .iter_mut()
            .find(|b| b.id == id)
            .map(|b| b.bp.enabled = on)
            .is_some()
    })
    .unwrap_or(false)
}

pub(crate) fn breakpoints() -> Vec<BreakpointInfo> {
    with_session(|s| s.bps.iter().map(Armed::info).collect()).unwrap_or_default()
}

/// A debugger to attach with [`crate::Runtime::debug`]: breakpoints by call site, watchpoints,
/// the mode, and what happens at a stop (a callback on the thread that recorded the op, or the
/// console on the terminal).
///
/// ```
/// use arrayflow::{Array, Debugger, Runtime, StopReason};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let a = Array::from_vec1(vec![1.0f32, 4.0, 9.0]);
/// let line = line!() + 4; // the line of `sqrt` below
/// let d = Runtime::debug(Debugger::new().break_at(file!(), line).on_stop(move |stop| {
///     log.lock().unwrap().push((stop.reason().clone(), stop.values().unwrap().to_f64()));
/// }));
/// let b = a.sqrt();
/// let c = (&b + 1.0f32).to_vec()?; // fused with `sqrt` as if no debugger were attached
/// drop(d);
/// assert_eq!(c, vec![2.0, 3.0, 4.0]);
/// let seen = seen.lock().unwrap();
/// assert!(matches!(seen[0].0, StopReason::Breakpoint { hits: 1, .. }));
/// assert_eq!(seen[0].1, vec![1.0, 2.0, 3.0]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[must_use = "attach it with Runtime::debug"]
pub struct Debugger {
    bps: Vec<Breakpoint>,
    mode: DebugMode,
    names: Vec<(NodeId, String)>,
    on_stop: Option<Callback>,
    /// Fused kernels to keep for stepping while attached (0: leave the setting as it is).
    keep_kernels: usize,
}

impl Default for Debugger {
    fn default() -> Self {
        Debugger::new()
    }
}

impl Debugger {
    /// No breakpoints, non-intrusive, no callback (stops are only counted).
    pub fn new() -> Debugger {
        Debugger {
            bps: Vec::new(),
            mode: DebugMode::NonIntrusive,
            names: Vec::new(),
            on_stop: None,
            keep_kernels: 0,
        }
    }
    /// The console front end: at a stop it prompts on the terminal (stdin/stdout); `help` lists
    /// its commands. It keeps the last 8 kernels for `stepi`
    /// ([`crate::Runtime::set_stepping`]) unless more are kept already.
    pub fn console() -> Debugger {
        let mut d = Debugger::new().on_stop(console::Console::new().into_callback());
        d.keep_kernels = 8;
        d
    }
    /// What `ARRAYFLOW_DEBUG` asks for (`console`, `console:intrusive`, `console:reproducible`),
    /// with the breakpoints of `ARRAYFLOW_BREAK=file:line,...`; `None` if it is unset.
    pub fn from_env() -> Option<Debugger> {
        let v = std::env::var("ARRAYFLOW_DEBUG").ok()?;
        let mut parts = v.split(':');
        let mut d = match parts.next()? {
            "console" => Debugger::console(),
            "" | "0" | "off" => return None,
            other => {
                eprintln!("arrayflow: ARRAYFLOW_DEBUG={other}: unknown front end (try `console`)");
                return None;
            }
        };
        match parts.next() {
            Some("intrusive") => d = d.mode(DebugMode::Intrusive),
            Some("reproducible" | "sync") => d = d.mode(DebugMode::Reproducible),
            _ => {}
        }
        for spec in std::env::var("ARRAYFLOW_BREAK")
            .unwrap_or_default()
            .split(',')
        {
            match console::parse_location(spec.trim()) {
                Some((file, line)) => d = d.break_at(&file, line),
                None if spec.trim().is_empty() => {}
                None => eprintln!("arrayflow: ARRAYFLOW_BREAK: `{spec}` is not file:line"),
            }
        }
        Some(d)
    }
    /// Adds a breakpoint at `file:line` (the file matches by suffix: `"heat.rs"` is enough).
    pub fn break_at(self, file: &str, line: u32) -> Debugger {
        self.breakpoint(Breakpoint::at(file, line))
    }
    /// Adds a breakpoint (with a condition or an ignore count).
    pub fn breakpoint(mut self, bp: Breakpoint) -> Debugger {
        self.bps.push(bp);
        self
    }
    /// Watches `a`: stops each time an in-place operation gives it a new value
    /// ([`StopReason::Watch`]), and when the runtime computes its current value
    /// ([`StopReason::Computed`]: the flush that computes it, once per value; not at recording).
    pub fn watch<T: crate::Element>(mut self, a: &crate::Array<T>) -> Debugger {
        self.bps.push(watchpoint(a.h.id));
        self
    }
    /// The mode (non-intrusive by default).
    pub fn mode(mut self, mode: DebugMode) -> Debugger {
        self.mode = mode;
        self
    }
    /// Calls `f` at every stop, on the thread that recorded the op; the application continues
    /// when it returns ([`Stop::step`] to stop again at the next call).
    pub fn on_stop(mut self, f: impl FnMut(&mut Stop) + Send + 'static) -> Debugger {
        self.on_stop = Some(Box::new(f));
        self
    }
    /// Attaches it (what [`crate::Runtime::debug`] does): it replaces a debugger attached before.
    pub(crate) fn attach(self) -> DebugGuard {
        // Watchpoints hear which arrays each flush computes (a no-op while detached).
        let _ = crate::compile::observe::FLUSH_HOOKS.set(crate::compile::observe::FlushHooks {
            computed: computed_hit,
            settled: settled_hit,
        });
        if self.keep_kernels > crate::compile::Inner::get().captures.lock().keep {
            crate::Runtime::set_stepping(self.keep_kernels);
        }
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
        let mut s = Session {
            generation,
            mode: self.mode,
            bps: Vec::new(),
            next_id: 0,
            names: self.names.into_iter().collect(),
            on_stop: self.on_stop,
            step: false,
            last_stop: None,
        };
        for bp in self.bps {
            s.next_id += 1;
            s.bps.push(Armed {
                id: BreakpointId(s.next_id),
                bp,
                hits: 0,
                computed: None,
            });
        }
        *SESSION.lock() = Some(s);
        STATE.store(ON, Ordering::Relaxed);
        DebugGuard { generation }
    }
}

fn watchpoint(id: NodeId) -> Breakpoint {
    Breakpoint {
        location: Location::Watch(id),
        condition: None,
        ignore: 0,
        enabled: true,
    }
}

/// The attached debugger; dropping it detaches it. Breakpoints can be added and removed through
/// it while the application runs.
#[must_use = "the debugger detaches when this is dropped"]
pub struct DebugGuard {
    generation: u64,
}

impl DebugGuard {
    fn current(&self) -> bool {
        with_session(|s| s.generation == self.generation).unwrap_or(false)
    }
    /// Adds a breakpoint at `file:line`.
    pub fn break_at(&self, file: &str, line: u32) -> BreakpointId {
        self.add(Breakpoint::at(file, line))
    }
    /// Adds a breakpoint.
    pub fn add(&self, bp: Breakpoint) -> BreakpointId {
        if self.current() {
            add(bp)
        } else {
            BreakpointId(0)
        }
    }
    /// Watches `a` (see [`Debugger::watch`]).
    pub fn watch<T: crate::Element>(&self, a: &crate::Array<T>) -> BreakpointId {
        self.add(watchpoint(a.h.id))
    }
    /// Deletes breakpoint `id`; `false` if there is none.
    pub fn delete(&self, id: BreakpointId) -> bool {
        self.current() && delete(id)
    }
    /// Enables or disables breakpoint `id`; `false` if there is none.
    pub fn enable(&self, id: BreakpointId, on: bool) -> bool {
        self.current() && enable(id, on)
    }
    /// Every breakpoint and watchpoint, with its hits.
    pub fn breakpoints(&self) -> Vec<BreakpointInfo> {
        if self.current() {
            breakpoints()
        } else {
            Vec::new()
        }
    }
    /// Changes the mode from the next stop on.
    pub fn set_mode(&self, mode: DebugMode) {
        if self.current() {
            with_session(|s| s.mode = mode);
        }
    }
}

impl Drop for DebugGuard {
    fn drop(&mut self) {
        let mut s = SESSION.lock();
        if s.as_ref().is_some_and(|s| s.generation == self.generation) {
            *s = None;
            STATE.store(OFF, Ordering::Relaxed);
        }
    }
}

impl<T: crate::Element> crate::Array<T> {
    /// Gives the array a name the debugger shows and accepts (`print u` in the console,
    /// [`Stop::find`]); the name follows it through in-place updates. Free when no debugger is
    /// attached.
    pub fn named(self, name: &str) -> Self {
        if STATE.load(Ordering::Relaxed) != OFF && attached() {
            with_session(|s| s.names.insert(self.h.id, name.to_string()));
        }
        self
    }
}
