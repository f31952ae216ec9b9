//! Per-thread batches of profiling events: each thread that records something gets a slot of
//! its own (registered on its first record), appends its array operations and events there, and
//! sends them to the collector whole when the slot fills. Starting a run empties every slot and
//! stopping one sends what every slot holds, so no hook sends a message, allocates (but to grow
//! its slot) or wakes the collector. A slot's lock is taken by its own thread and otherwise only
//! by the profiler's start and stop (and the collector's last look at the end of a run): on the
//! hooks' path it is never contended. The collector hands the emptied vectors back (`SPARE`),
//! so a full slot takes a used vector rather than allocating one.
//!
//! It also draws which array operations are timed (`sample_call`): one in
//! [`super::Sampling::every`] per thread, at random (a per-thread xorshift generator), so a loop
//! whose length divides the period does not always time the same call site.

use super::collector::{Event, Msg};
use crate::ir::Site;
use parking_lot::Mutex;
use std::sync::Arc;

/// Array operations a slot gathers before it sends them.
const CALLS: usize = 4096;
/// Other events a slot gathers before it sends them.
const EVENTS: usize = 2048;

/// An array operation's host time when it was counted but not timed.
pub(super) const UNTIMED: u64 = u64::MAX;

/// Emptied vectors of each kind: array operations, other events.
type Spares = (Vec<Vec<(Site, u64)>>, Vec<Vec<Event>>);

/// Emptied vectors the collector handed back, for full slots to reuse.
static SPARE: Mutex<Spares> = Mutex::new((Vec::new(), Vec::new()));
/// Spare vectors kept of each kind.
const SPARES: usize = 8;

/// The collector is done with a batch's vectors: kept (emptied) for reuse.
pub(super) fn give_back(mut calls: Vec<(Site, u64)>, mut events: Vec<Event>) {
    calls.clear();
    events.clear();
    let mut spare = SPARE.lock();
    if calls.capacity() == CALLS && spare.0.len() < SPARES {
        spare.0.push(calls);
    }
    if events.capacity() == EVENTS && spare.1.len() < SPARES {
        spare.1.push(events);
    }
}

fn spare_calls() -> Vec<(Site, u64)> {
    SPARE
        .lock()
        .0
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(CALLS))
}

fn spare_events() -> Vec<Event> {
    SPARE
        .lock()
        .1
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(EVENTS))
}

thread_local! {
    /// This thread's generator for [`sample_call`] (0: not seeded yet).
    static DRAW: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether this thread's next array operation is timed: one in [`super::Sampling::every`], at
/// random.
#[inline]
pub(super) fn sample_call() -> bool {
    let every = super::Sampling::current().every;
    if every <= 1 {
        return true;
    }
    DRAW.try_with(|d| {
        let mut x = d.get();
        if x == 0 {
            // Seeded from a process-wide sequence: threads draw differently.
            static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = SEED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d.set(x);
        (x >> 11).is_multiple_of(every)
    })
    .unwrap_or(true)
}

/// One thread's gathered records.
#[derive(Default)]
struct Records {
    /// Array operations: call site and host time.
    calls: Vec<(Site, u64)>,
    events: Vec<Event>,
}

impl Records {
    /// What the slot holds, as a message (`None` when empty), leaving it empty.
    fn take(&mut self, thread: &Arc<str>) -> Option<Msg> {
        (!self.calls.is_empty() || !self.events.is_empty()).then(|| Msg::Batch {
            thread: Arc::clone(thread),
            calls: std::mem::take(&mut self.calls),
            events: std::mem::take(&mut self.events),
        })
    }
}

/// A thread's slot.
struct Slot {
    records: Mutex<Records>,
    /// The thread's name (`app` for an unnamed one), which its runtime events carry.
    thread: Arc<str>,
}

/// Every thread's slot (slots of threads that ended are dropped once empty, at a stop).
static SLOTS: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Arc<Slot> = {
        let slot = Arc::new(Slot {
            records: Mutex::new(Records::default()),
            thread: Arc::from(std::thread::current().name().unwrap_or("app")),
        });
        SLOTS.lock().push(Arc::clone(&slot));
        slot
    };
}

/// Sends a full batch (or a record of a thread that is ending) to the collector.
fn send(m: Msg) {
    if let Some(tx) = super::COLLECTOR.get() {
        let _ = tx.send(m);
    }
}

/// Hook: an array operation recorded at `site` that took `ns` of host time.
pub(super) fn call(site: Site, ns: u64) {
    let full = MINE.try_with(|s| {
        let mut r = s.records.lock();
        if r.calls.capacity() == 0 {
            r.calls.reserve_exact(CALLS);
        }
        r.calls.push((site, ns));
        if r.calls.len() < CALLS {
            return None;
        }
        let calls = std::mem::replace(&mut r.calls, spare_calls());
        Some(Msg::Batch {
            thread: Arc::clone(&s.thread),
            calls,
            events: Vec::new(),
        })
    });
    match full {
        Ok(Some(m)) => send(m),
        Ok(None) => {}
        // The thread is ending (its slot is gone): sent on its own.
        Err(_) => send(Msg::Batch {
            thread: Arc::from("app"),
            calls: vec![(site, ns)],
            events: Vec::new(),
        }),
    }
}

/// Hook: an event of this thread.
pub(super) fn event(e: Event) {
    let mut e = Some(e);
    let full = MINE.try_with(|s| {
        let mut r = s.records.lock();
        if r.events.capacity() == 0 {
            r.events.reserve_exact(EVENTS);
        }
        r.events.push(e.take().expect("pushed once"));
        if r.events.len() < EVENTS {
            return None;
        }
        let events = std::mem::replace(&mut r.events, spare_events());
        Some(Msg::Batch {
            thread: Arc::clone(&s.thread),
            calls: Vec::new(),
            events,
        })
    });
    match (full, e) {
        (Ok(Some(m)), _) => send(m),
        (Err(_), Some(e)) => send(Msg::Batch {
            thread: Arc::from("app"),
            calls: Vec::new(),
            events: vec![e],
        }),
        _ => {}
    }
}

/// Every slot's records, emptying them; slots of threads that ended are dropped.
pub(super) fn take_all() -> Vec<Msg> {
    let mut slots = SLOTS.lock();
    let msgs = slots
        .iter()
        .filter_map(|s| s.records.lock().take(&s.thread))
        .collect();
    slots.retain(|s| Arc::strong_count(s) > 1);
    msgs
}

/// Sends what every slot holds to the collector (the profiler stopping).
pub(super) fn send_all() {
    for m in take_all() {
        send(m);
    }
}

/// Forgets what every slot holds (a run starting: those were the last one's).
pub(super) fn clear_all() {
    drop(take_all());
}
