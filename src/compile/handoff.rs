//! The hand-off (the seed's C-Scheduler passing an instantiated program sequence to the
//! E-Scheduler, FIG. 1): the one place that submits work to the execution scheduler. A flush
//! (`flush.rs`) and a replayed code reuse section (`replay.rs`) both bind their sequence's formals
//! with [`Inner::bind_formals`] and end in [`Inner::hand_off`].
//!
//! **The hook point.** Every program sequence that runs passes through `hand_off` exactly once,
//! with its buffers, parameter values, why it runs ([`Origin`]) and when its generation started:
//! comparison mode's after-computation checks are attached here, and this is where a profiler or a
//! debugger observes (or holds) the work of the application.
//!
//! **The small-step fast path** (issue 17) is a branch of the hand-off: a small sequence, with
//! nothing else outstanding and no device executor, runs to completion on this thread
//! (`Scheduler::submit_small`, counted in `Stats::inline_runs`), through the scheduler's and the
//! CPU executor's own code, so the read that follows is served here without a thread hand-off.

use super::FlushReason;
use super::state::Inner;
use crate::debug::checker::Check;
use crate::exec::{BufferId, Instance};
use crate::proggen::sequence::{FormalRole, ProgramSequence};
use std::sync::Arc;
use std::time::Instant;

/// Why a sequence runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A flush of the work queue, for this reason.
    Flush(FlushReason),
    /// A replay of a recorded code reuse section.
    Replay,
    /// The debugger's micro-kernels (`debug::step`): a fused kernel re-run one op at a time.
    Debug,
}

/// An instantiated program sequence, ready to run.
pub struct Submission {
    pub origin: Origin,
    pub seq: Arc<ProgramSequence>,
    /// The buffer bound to each formal.
    pub bindings: Vec<BufferId>,
    /// Each program's parameter values (raw bits per slot).
    pub params: Vec<Arc<[u64]>>,
    /// Comparison after computation: buffers to check against their reference once computed.
    pub checks: Vec<(BufferId, Check)>,
    /// Buffers to release once the sequence is submitted (dropped arrays, unused temporaries).
    pub release: Vec<BufferId>,
    /// When the flush or replay began (the scheduler times the sequence from here).
    pub started: Instant,
    /// The executor the sequence must run on (the debugger's micro-kernels run where the kernel
    /// they step ran); `None`: the placement scope's pin, if any, else the scheduler's choice.
    pub pin: Option<usize>,
}

impl Inner {
    /// The bindings of `seq`'s formals: a fresh buffer for every output and temporary, `inputs`'
    /// buffers (formal, buffer) for its inputs.
    pub(crate) fn bind_formals(
        &self,
        seq: &ProgramSequence,
        inputs: impl IntoIterator<Item = (u32, BufferId)>,
    ) -> Vec<BufferId> {
        let mut bindings = vec![BufferId(0); seq.formals.len()];
        for (f, formal) in seq.formals.iter().enumerate() {
            if formal.role != FormalRole::Input {
                bindings[f] = self.sched.new_buffer();
            }
        }
        for (f, b) in inputs {
            bindings[f as usize] = b;
        }
        bindings
    }

    /// Submits `s` to the execution scheduler (waiting for capacity first: flow control), then
    /// schedules its comparison checks and releases its dropped buffers. The only caller of
    /// `Scheduler::submit_small`, whose branch for small sequences (the small-step fast path)
    /// runs them on this thread.
    pub(crate) fn hand_off(&self, s: Submission) {
        tracing::trace!(target: "arrayflow::jit", origin = ?s.origin, programs = s.seq.programs.len(), "hand-off");
        super::observe::observe(&s.seq);
        // Released buffers travel with the sequence (a temporary is freed right after its last
        // reader), except under comparison checks, which read results after the sequence.
        let (with_seq, after) = if s.seq.programs.is_empty() || !s.checks.is_empty() {
            (Vec::new(), s.release)
        } else {
            (s.release, Vec::new())
        };
        if !s.seq.programs.is_empty() {
            self.flow.acquire(s.seq.programs.len());
            // The small-step fast path: a small sequence runs on this thread when nothing else is
            // outstanding and no device executor runs (`Scheduler::submit_small` decides the
            // rest). Not for a long queue flushed at its threshold (the application records on
            // while the executor runs it: its kernels are long, whatever their size) or a hint
            // (asked to start in the background); not in comparison mode, whose checks read the
            // results on the checker thread.
            let background = matches!(
                s.origin,
                Origin::Flush(FlushReason::Threshold | FlushReason::Hint)
            );
            let inline = !background
                && s.checks.is_empty()
                && !self.compare_on.load(std::sync::atomic::Ordering::Relaxed);
            let inst = Instance {
                seq: s.seq,
                bindings: s.bindings,
                params: s.params,
                started: s.started,
                release: with_seq,
                pin: s
                    .pin
                    .or(match self.pin.load(std::sync::atomic::Ordering::Relaxed) {
                        usize::MAX => None,
                        e => Some(e),
                    }),
                split: crate::exec::split::SplitMode::decode(
                    self.split.load(std::sync::atomic::Ordering::Relaxed),
                ),
            };
            self.sched.submit_small(inst, inline);
        }
        for (buf, check) in s.checks {
            self.schedule_check(buf, check);
        }
        for b in after {
            self.sched.release(b);
        }
    }
}
