//! The comparison checker thread: compares stored results with their references as programs
//! complete (comparison after computation), so the application thread goes on meanwhile.

use super::{CompareConfig, Mismatch, check};
use crate::error::Result;
use crate::exec::TypedVec;
use crate::ir::Site;
use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::{Condvar, Mutex};
use std::io::Write;
use std::sync::Arc;

/// What to check a result against.
pub struct Check {
    pub reference: Arc<TypedVec>,
    /// The magnitude each element's allowance scales with (`conditioning.rs`), if known.
    pub magnitude: Option<Arc<Vec<f64>>>,
    pub op: String,
    pub site: Site,
    pub order: u64,
    /// The allowance for this result (its op's, or its producer's for data movement).
    pub tolerance: super::Tolerance,
    pub config: CompareConfig,
}

/// One result to check once its program has run.
pub struct CheckJob {
    pub data: Receiver<Result<Arc<TypedVec>>>,
    pub check: Check,
}

/// Mismatches found so far, and the checks still running.
#[derive(Default)]
pub struct Report {
    pub mismatches: Mutex<Vec<Mismatch>>,
    /// Per op and call site: elements checked, largest relative error, mismatches.
    pub summary: Mutex<Vec<super::OpSummary>>,
    /// How many mismatches a read has already surfaced (actions `Error`, `Abort`).
    pub surfaced: Mutex<usize>,
    pending: Mutex<usize>,
    done: Condvar,
}

impl Report {
    /// Records a mismatch: logs it, and appends it to the log file if one is set.
    pub fn record(&self, m: Mismatch, config: &CompareConfig) {
        tracing::warn!(target: "arrayflow::compare", "{m}");
        if let Some(path) = &config.log_file
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(f, "{m}");
        }
        self.mismatches.lock().push(m);
    }

    /// Adds one checked result to the per-op summary.
    pub fn summarise(&self, op: &str, site: Site, checked: usize, max_rel: f64, mismatched: bool) {
        let mut s = self.summary.lock();
        match s
            .iter_mut()
            .find(|e| e.op == op && std::ptr::eq(e.site, site))
        {
            Some(e) => {
                e.checked += checked;
                e.max_relative_error = e.max_relative_error.max(max_rel);
                e.mismatches += mismatched as usize;
            }
            None => s.push(super::OpSummary {
                op: op.into(),
                site,
                checked,
                max_relative_error: max_rel,
                mismatches: mismatched as usize,
            }),
        }
    }

    pub fn begin(&self) {
        *self.pending.lock() += 1;
    }
    fn end(&self) {
        let mut p = self.pending.lock();
        *p -= 1;
        if *p == 0 {
            self.done.notify_all();
        }
    }
    /// Waits until every scheduled check has finished.
    pub fn wait(&self) {
        let mut p = self.pending.lock();
        while *p > 0 {
            self.done.wait(&mut p);
        }
    }
}

/// Starts the checker thread; send it jobs.
pub fn start(report: Arc<Report>) -> Sender<CheckJob> {
    let (tx, rx) = unbounded::<CheckJob>();
    std::thread::Builder::new()
        .name("arrayflow-checker".into())
        .spawn(move || {
            while let Ok(CheckJob { data, check: job }) = rx.recv() {
                // A failed program has no result to compare; its read reports the failure.
                if let Ok(Ok(data)) = data.recv() {
                    let tol = job.tolerance;
                    let values = (0..data.len()).map(|i| data.get(i));
                    let (m, checked, max_rel) = check(
                        &job.op,
                        job.site,
                        job.order,
                        values,
                        &job.reference,
                        job.magnitude.as_deref().map(|m| &m[..]),
                        tol,
                    );
                    report.summarise(&job.op, job.site, checked, max_rel, m.is_some());
                    if let Some(m) = m {
                        report.record(m, &job.config);
                    }
                }
                report.end();
            }
        })
        .expect("arrayflow: cannot start the comparison checker thread");
    tx
}
