//! Comparison mode's hooks on reads: on copy-out, the data handed to the application is compared
//! with the array's reference first; after computation, mismatches the checker found since the
//! last read are surfaced by the chosen action.

use crate::compile::Handle;
use crate::compile::Inner;
use crate::debug::step::Divergence;
use crate::debug::{CompareMode, Mismatch, MismatchAction, check};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Site;

fn mismatch_error(m: &Mismatch, d: Option<&Divergence>, site: Site) -> Error {
    let msg = match d {
        Some(d) => format!("comparison mode: {m}; first diverging op: {d}"),
        None => format!("comparison mode: {m}"),
    };
    let hint = if d.is_some() {
        "Runtime::divergences() gives the first diverging op with a reproducing program; see Runtime::mismatches() for every op that differed; a tolerance can be set with CompareConfig::tolerance"
    } else {
        "see Runtime::mismatches() for every op that differed; a tolerance can be set with CompareConfig::tolerance"
    };
    Error::new(ErrorKind::Mismatch, msg)
        .at(site)
        .origin(m.site)
        .hint(hint)
}

impl Inner {
    /// Checks data about to be handed to the application (comparison mode).
    pub fn check_read(
        &self,
        h: &Handle,
        values: impl Iterator<Item = crate::ir::Scalar>,
        site: Site,
    ) -> Result<()> {
        if !self.compare_on.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let Some(cfg) = self.compare.read().clone() else {
            return Ok(());
        };
        let found = match cfg.mode {
            CompareMode::AfterComputation => {
                if cfg.action == MismatchAction::Log {
                    return Ok(());
                }
                let ms = self.report.mismatches.lock();
                let mut surfaced = self.report.surfaced.lock();
                let first_new = ms[(*surfaced).min(ms.len())..]
                    .iter()
                    .min_by_key(|m| m.order)
                    .cloned();
                *surfaced = ms.len();
                first_new
            }
            CompareMode::OnCopyOut => {
                let (reference, magnitude, op, op_site, order, tol) = {
                    let fe = self.front();
                    let Some(n) = fe.nodes.get(&h.id) else {
                        return Ok(());
                    };
                    let Some(r) = n.reference.clone() else {
                        return Ok(());
                    };
                    (
                        r,
                        n.magnitude.clone(),
                        n.op.name(),
                        n.site,
                        h.id.0,
                        cfg.tolerance_for(n.tolerance_op, n.tolerance_dtype),
                    )
                };
                let (m, checked, max_rel) = check(
                    &op,
                    op_site,
                    order,
                    values,
                    &reference,
                    magnitude.as_deref().map(|m| &m[..]),
                    tol,
                );
                self.report
                    .summarise(&op, op_site, checked, max_rel, m.is_some());
                if let Some(m) = &m {
                    self.report.record(m.clone(), &cfg);
                    if cfg.action == MismatchAction::Log {
                        // Found on this thread: narrowed (and logged) now.
                        self.first_diverging(m, &cfg);
                    }
                }
                m.filter(|_| cfg.action != MismatchAction::Log)
            }
        };
        match (found, cfg.action) {
            (None, _) | (Some(_), MismatchAction::Log) => Ok(()),
            (Some(m), MismatchAction::Error) => Err(mismatch_error(
                &m,
                self.first_diverging(&m, &cfg).as_ref(),
                site,
            )),
            (Some(m), MismatchAction::Abort) => {
                let d = self.first_diverging(&m, &cfg);
                panic!("{}", mismatch_error(&m, d.as_ref(), site))
            }
        }
    }

    /// The first diverging op of `m` when comparison mode narrows its mismatches
    /// ([`crate::debug::CompareConfig::narrow`]) and the kernel is kept (logged as found).
    fn first_diverging(
        &self,
        m: &Mismatch,
        cfg: &crate::debug::CompareConfig,
    ) -> Option<Divergence> {
        if cfg.narrow == 0 {
            return None;
        }
        let d = self.divergences(std::slice::from_ref(m)).ok()?.pop()?;
        tracing::warn!(target: "arrayflow::compare", "first diverging op: {d}");
        Some(d)
    }

    /// The reference value of an array, if comparison mode was on when it was recorded.
    pub fn reference_value(
        &self,
        h: &Handle,
        site: Site,
    ) -> Result<std::sync::Arc<crate::exec::TypedVec>> {
        self.front().nodes.get(&h.id).and_then(|n| n.reference.clone()).ok_or_else(|| {
            Error::new(ErrorKind::Argument, "this array has no reference value")
                .at(site)
                .hint("switch comparison mode on (Runtime::set_compare or ARRAYFLOW_COMPARE) before recording it")
        })
    }
}
