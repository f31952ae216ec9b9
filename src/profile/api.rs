//! The array-operation hook: each thread keeps its operations' call sites and host times in a
//! buffer of its own and sends the buffer to the collector whole (when it fills, when the thread
//! flushes the queue, when it stops the profiler), so recording an operation sends nothing.

use super::{Event, emit};
use crate::ir::Site;
use std::cell::RefCell;
use std::time::Instant;

/// Operations a thread gathers before it sends them.
const BATCH: usize = 512;

thread_local! {
    static CALLS: RefCell<Vec<(Site, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Hook: an array operation recorded at `site`, begun at `since` (`None`: profiling is off).
#[inline]
pub(crate) fn api_call(site: Site, since: Option<Instant>) {
    let Some(t) = since else { return };
    let ns = t.elapsed().as_nanos() as u64;
    CALLS.with(|c| {
        let mut c = c.borrow_mut();
        if c.capacity() == 0 {
            c.reserve_exact(BATCH);
        }
        c.push((site, ns));
        if c.len() >= BATCH {
            let full = std::mem::replace(&mut *c, Vec::with_capacity(BATCH));
            emit(Event::Api(full));
        }
    });
}

/// Sends this thread's gathered operations (a flush, the profiler's stop); nothing when there
/// are none.
pub(crate) fn send_api_calls() {
    let calls = CALLS.with(|c| {
        let mut c = c.borrow_mut();
        (!c.is_empty()).then(|| std::mem::take(&mut *c))
    });
    if let Some(calls) = calls {
        emit(Event::Api(calls));
    }
}

/// Forgets what this thread gathered and did not send (a run starting: they were the last one's).
pub(crate) fn drop_api_calls() {
    CALLS.with(|c| c.borrow_mut().clear());
}
