//! Per-thread batches of profiling events: each thread that records something gets a slot of
//! its own (registered on its first record), appends its array operations and events there, and
//! sends them to the collector whole when the slot fills. Starting a run empties every slot and
//! stopping one sends what every slot holds, so no hook sends a message, allocates (but to grow
//! its slot) or wakes the collector. A slot's lock is taken by its own thread and otherwise only
//! by the profiler's start and stop (and the collector's last look at the end of a run): on the
//! hooks' path it is never contended.

use super::collector::{Event, Msg};
use crate::ir::Site;
use parking_lot::Mutex;
use std::sync::Arc;

/// Array operations a slot gathers before it sends them.
const CALLS: usize = 512;
/// Other events a slot gathers before it sends them.
const EVENTS: usize = 256;

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
        let calls = std::mem::replace(&mut r.calls, Vec::with_capacity(CALLS));
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
        let events = std::mem::replace(&mut r.events, Vec::with_capacity(EVENTS));
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
