//! Flow control between the application threads and the executors (the seed's shared capacity
//! counters): the hand-off acquires capacity for each program it submits, the scheduler returns it
//! as programs finish.

use parking_lot::{Condvar, Mutex};

/// Bounds the programs in flight, so a fast application thread waits for the executors instead of
/// queueing without limit (the seed's shared capacity counters).
pub struct FlowControl {
    /// Time application threads spent waiting for capacity.
    pub waited_ns: std::sync::atomic::AtomicU64,
    outstanding: Mutex<usize>,
    cv: Condvar,
    limit: usize,
}

impl FlowControl {
    /// At most `limit` programs in flight.
    pub fn new(limit: usize) -> Self {
        FlowControl {
            waited_ns: std::sync::atomic::AtomicU64::new(0),
            outstanding: Mutex::new(0),
            cv: Condvar::new(),
            limit,
        }
    }
    /// Waits while more than the limit is outstanding, then adds `n`.
    pub fn acquire(&self, n: usize) {
        let mut g = self.outstanding.lock();
        if *g > self.limit {
            let start = std::time::Instant::now();
            while *g > self.limit {
                self.cv.wait(&mut g);
            }
            if crate::profile::active() {
                crate::profile::runtime("flow_wait", "", None, start, 0, None);
            }
            self.waited_ns.fetch_add(
                start.elapsed().as_nanos() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        *g += n;
    }
    /// `n` programs finished.
    pub fn complete(&self, n: usize) {
        let mut g = self.outstanding.lock();
        *g = g.saturating_sub(n);
        self.cv.notify_all();
    }
}
