//! How the runtime's threads wait for one another while a GPU executor runs: spin for a bounded
//! time, then block.
//!
//! A program that waits on every result hands each iteration through several threads (the
//! application, the scheduler, the device executor, the device's completion thread), and each of
//! them sits idle for as long as the GPU kernel runs. A thread blocked for hundreds of µs lets its
//! core sleep, and waking it then costs tens of µs per hand-off (measured on an H200 host: 22 µs
//! and 63 µs for two hand-offs after a 400 µs kernel, against 4 µs and 3 µs after a short one).
//! Spinning for a bounded time — a short busy loop, then `yield_now` so a thread with work gets
//! the core — keeps the hand-offs at a few µs, as CUDA's default `cudaDeviceScheduleAuto` does.
//!
//! The budget ([`Spin`]) is zero unless a GPU executor runs on a host with spare cores: when the
//! CPU computes (the CPU executor, PoCL, lavapipe) a spinning thread would take cores from it.

use crossbeam_channel::{Receiver, RecvError, TryRecvError};
use std::time::{Duration, Instant};

/// Pure busy-waiting before the spin loop starts yielding its core.
const BUSY: Duration = Duration::from_micros(5);

/// Default budget with a GPU executor: longer than a typical bandwidth-bound kernel on a large
/// array (so the wake after it is cheap), short enough that an idle program stops spinning soon.
pub const DEFAULT_SPIN: Duration = Duration::from_millis(2);

/// Fewest hardware threads a host needs before the runtime's threads spin by default.
const MIN_THREADS: usize = 4;

/// How long a waiting thread spins before it blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spin(pub Duration);

impl Spin {
    /// Never spin: block at once.
    pub const OFF: Spin = Spin(Duration::ZERO);

    /// The budget for a runtime whose device executor runs on a device of `kind` (`None`: no
    /// device executor), unless `set` (from `ARRAYFLOW_SPIN_US` or the builder) says otherwise.
    pub fn for_device(kind: Option<super::DeviceKind>, set: Option<Duration>) -> Spin {
        if let Some(d) = set {
            return Spin(d);
        }
        let gpu = matches!(
            kind,
            Some(super::DeviceKind::Discrete | super::DeviceKind::Integrated)
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if gpu && cores >= MIN_THREADS {
            Spin(DEFAULT_SPIN)
        } else {
            Spin::OFF
        }
    }

    /// Polls `ready` until it returns `true` or the budget runs out; returns whether it did.
    pub fn until(self, mut ready: impl FnMut() -> bool) -> bool {
        if ready() {
            return true;
        }
        if self.0.is_zero() {
            return false;
        }
        let start = Instant::now();
        loop {
            let spent = start.elapsed();
            if spent >= self.0 {
                return ready();
            }
            if spent < BUSY {
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::yield_now();
            }
            if ready() {
                return true;
            }
        }
    }

    /// Waits until `rx` holds a message (or is disconnected) without taking it, spinning for the
    /// budget before blocking: the thread then takes the state the queue belongs to and handles
    /// the messages itself, or finds that a synchronous call already did (`scheduler.rs`,
    /// "Synchronous calls"). May return early; callers check the queue again.
    pub fn ready<T>(self, rx: &Receiver<T>) {
        if self.until(|| !rx.is_empty()) {
            return;
        }
        let mut sel = crossbeam_channel::Select::new();
        sel.recv(rx);
        sel.ready();
    }

    /// Receives from `rx`, spinning on it for the budget before blocking.
    pub fn recv<T>(self, rx: &Receiver<T>) -> Result<T, RecvError> {
        let mut got = None;
        self.until(|| match rx.try_recv() {
            Ok(v) => {
                got = Some(Ok(v));
                true
            }
            Err(TryRecvError::Disconnected) => {
                got = Some(Err(RecvError));
                true
            }
            Err(TryRecvError::Empty) => false,
        });
        got.unwrap_or_else(|| rx.recv())
    }
}

/// [`Spin::ready`] without spinning.
pub fn ready<T>(rx: &Receiver<T>) {
    Spin::OFF.ready(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recv_returns_messages_sent_before_during_and_after_the_spin() {
        let spin = Spin(Duration::from_millis(5));
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(1).unwrap();
        assert_eq!(spin.recv(&rx), Ok(1));
        // Sent while the receiver spins, then after it has given up and blocked.
        for delay in [Duration::from_millis(1), Duration::from_millis(20)] {
            let tx = tx.clone();
            let t = std::thread::spawn(move || {
                std::thread::sleep(delay);
                tx.send(2).unwrap();
            });
            assert_eq!(spin.recv(&rx), Ok(2));
            t.join().unwrap();
        }
        tx.send(3).unwrap();
        assert_eq!(Spin::OFF.recv(&rx), Ok(3));
    }

    #[test]
    fn recv_reports_a_closed_channel() {
        let (tx, rx) = crossbeam_channel::unbounded::<u8>();
        drop(tx);
        assert_eq!(Spin(Duration::from_millis(1)).recv(&rx), Err(RecvError));
        assert_eq!(Spin::OFF.recv(&rx), Err(RecvError));
    }

    #[test]
    fn until_stops_at_the_budget() {
        let start = Instant::now();
        assert!(!Spin(Duration::from_millis(2)).until(|| false));
        assert!(start.elapsed() >= Duration::from_millis(2));
        let mut n = 0;
        assert!(Spin(Duration::from_secs(10)).until(|| {
            n += 1;
            n == 100
        }));
        assert!(!Spin::OFF.until(|| false));
    }

    #[test]
    fn only_gpus_on_hosts_with_spare_cores_spin_by_default() {
        use super::super::DeviceKind;
        assert_eq!(Spin::for_device(None, None), Spin::OFF);
        assert_eq!(Spin::for_device(Some(DeviceKind::Cpu), None), Spin::OFF);
        let set = Some(Duration::from_micros(300));
        assert_eq!(
            Spin::for_device(Some(DeviceKind::Cpu), set),
            Spin(Duration::from_micros(300))
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let want = if cores >= MIN_THREADS {
            Spin(DEFAULT_SPIN)
        } else {
            Spin::OFF
        };
        assert_eq!(Spin::for_device(Some(DeviceKind::Discrete), None), want);
    }
}
