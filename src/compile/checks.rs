//! Comparison after computation: which results of a flush or a replay are checked against their
//! reference, and the checks themselves, scheduled on the checker thread once each result's
//! program has run (the hand-off attaches them, `compile/handoff.rs`).

use super::Handle;
use super::macro_cache::MacroEntry;
use super::state::{FrontEnd, Inner};
use crate::debug::checker::{Check, CheckJob};
use crate::debug::{CompareConfig, CompareMode};
use crate::exec::{BufferId, SchedMsg};
use crate::ir::NodeId;

impl Inner {
    /// The comparison configuration when results are checked after computation, else `None`.
    pub(crate) fn after_computation(&self) -> Option<CompareConfig> {
        if !self.compare_on.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        self.compare
            .read()
            .clone()
            .filter(|c| c.mode == CompareMode::AfterComputation)
    }

    /// The checks of a flush's stored results (buffer, node) that have a reference value.
    pub(crate) fn flush_checks(
        &self,
        fe: &FrontEnd,
        cfg: &CompareConfig,
        stored: impl Iterator<Item = (BufferId, NodeId)>,
    ) -> Vec<(BufferId, Check)> {
        stored
            .filter_map(|(buf, id)| {
                let n = fe.nodes.get(&id)?;
                let reference = n.reference.clone()?;
                Some((
                    buf,
                    Check {
                        reference,
                        magnitude: n.magnitude.clone(),
                        op: n.op.name(),
                        site: n.site,
                        order: id.0,
                        tolerance: cfg.tolerance_for(n.tolerance_op, n.tolerance_dtype),
                        config: cfg.clone(),
                    },
                ))
            })
            .collect()
    }

    /// The checks of a replayed section's outputs: each is named by the recorded op that
    /// computes it.
    pub(crate) fn replay_checks(
        &self,
        fe: &FrontEnd,
        entry: &MacroEntry,
        outputs: &[Handle],
    ) -> Vec<(BufferId, Check)> {
        let Some(cfg) = self
            .compare
            .read()
            .clone()
            .filter(|c| c.mode == CompareMode::AfterComputation)
        else {
            return Vec::new();
        };
        outputs
            .iter()
            .filter_map(|h| {
                let n = fe.nodes.get(&h.id)?;
                let prog = entry.reference.as_ref()?;
                let step = &prog.steps[prog.outputs[outputs.iter().position(|o| o.id == h.id)?]];
                let check = Check {
                    reference: n.reference.clone()?,
                    magnitude: n.magnitude.clone(),
                    op: step.node.op.name(),
                    site: step.node.site,
                    order: h.id.0,
                    tolerance: cfg.tolerance_for(step.node.tolerance_op, step.node.tolerance_dtype),
                    config: cfg.clone(),
                };
                Some((n.buffer()?, check))
            })
            .collect()
    }

    /// Checks `buf` against `check` once its program has run (the read keeps the buffer alive
    /// until then).
    pub fn schedule_check(&self, buf: BufferId, check: Check) {
        let (reply, data) = crossbeam_channel::bounded(1);
        self.sched.send(SchedMsg::Read { buf, reply });
        self.report.begin();
        let _ = self.checker().send(CheckJob { data, check });
    }
}
