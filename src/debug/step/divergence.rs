//! The first diverging op (issue 24): a comparison-mode mismatch on a kept fused kernel's result
//! is narrowed by stepping the kernel's micro-kernels on the executor that ran it and comparing
//! each step's values, element by element, with the reference of the IR node it computes (by the
//! comparison rule and the node's allowance). The first step that fails names the op; when the
//! failing step is a load, the kernel's input already differed and the kernel that computed it is
//! searched in turn, while it is kept.

use super::capture::KernelCapture;
use super::report::Divergence;
use super::repro;
use super::window::map_at;
use crate::compile::Inner;
use crate::debug::{CompareConfig, CompareMode, Mismatch, check};
use crate::error::Result;
use crate::ir::{NodeId, collect};
use crate::proggen::kernel::Instr;
use ahash::AHashSet;
use std::sync::Arc;

/// Kernels searched upstream at most, from a load that differed to the kernel computing it.
const MAX_UPSTREAM: usize = 8;

impl Inner {
    /// The first diverging op of mismatch `m`, if the kernel that computed its result is kept
    /// and one of its steps differs from its reference.
    pub fn narrow(&self, m: &Mismatch) -> Result<Option<Divergence>> {
        let Some(capture) = self.captures.lock().find(NodeId(m.order)) else {
            return Ok(None);
        };
        self.narrow_in(capture, m, 0)
    }

    fn narrow_in(
        &self,
        capture: Arc<KernelCapture>,
        m: &Mismatch,
        depth: usize,
    ) -> Result<Option<Divergence>> {
        let cfg = self
            .compare
            .read()
            .clone()
            .unwrap_or_else(|| CompareConfig::new(CompareMode::OnCopyOut));
        let whole = super::window::Window::all(&capture.fused().domain.shape);
        let stepped = self.run_micro(capture.clone(), whole)?;
        let k = capture.fused();
        let shape = &k.domain.shape;
        let len = k.domain.len();
        for (n, (step, values)) in stepped.plan.steps.iter().zip(&stepped.values).enumerate() {
            // The node the step computes and its element at each domain element.
            let (node, at): (NodeId, Vec<usize>) = match (step.instr, step.reduction) {
                (Some(i), _) => match (&k.instrs[i], &capture.members[i]) {
                    (_, Some((id, map))) => {
                        (*id, (0..len).map(|d| map_at(map, shape, d)).collect())
                    }
                    (Instr::Load { input, map, .. }, None) => (
                        capture.input_nodes[*input as usize],
                        (0..len).map(|d| map_at(map, shape, d)).collect(),
                    ),
                    _ => continue,
                },
                (None, Some(r)) => (
                    capture.outputs[k.reductions[r].output as usize],
                    (0..values.len()).collect(),
                ),
                _ => continue,
            };
            let Some(info) = capture.nodes.get(&node) else {
                continue;
            };
            let Some(reference) = &info.reference else {
                continue;
            };
            if at.iter().any(|&j| j >= reference.len()) {
                continue;
            }
            let gathered = collect(reference.dtype(), at.len(), |d| reference.get(at[d]));
            let magnitude: Option<Vec<f64>> = info.magnitude.as_ref().map(|mg| {
                at.iter()
                    .map(|&j| mg.get(j).copied().unwrap_or(0.0))
                    .collect()
            });
            let tol = cfg.tolerance_for(info.tolerance_op, info.tolerance_dtype);
            let (fail, _, _) = check(
                &step.op,
                info.site,
                node.0,
                (0..at.len()).map(|d| values.get(d)),
                &gathered,
                magnitude.as_deref(),
                tol,
            );
            let Some(f) = fail else { continue };
            // A load that differs: the input already differed, so search the kernel that
            // computed it (looked up first: the lock is not held while stepping).
            let load = step
                .instr
                .is_some_and(|i| matches!(k.instrs[i], Instr::Load { .. }));
            let upstream = if load && depth < MAX_UPSTREAM {
                self.captures.lock().find(node)
            } else {
                None
            };
            if let Some(up) = upstream
                && !Arc::ptr_eq(&up, &capture)
            {
                return self.narrow_in(up, m, depth + 1);
            }
            let element = at[f.element];
            let inputs: AHashSet<NodeId> = capture.input_nodes.iter().copied().collect();
            // A kernel input's data (pinned while the kernel is kept), else the node's
            // reference (comparison mode computed one for every node recorded while it was on).
            let value = |id: NodeId| {
                let data = capture
                    .input_nodes
                    .iter()
                    .position(|&x| x == id)
                    .and_then(|p| self.sched.read(capture.inputs[p]).ok());
                data.or_else(|| capture.nodes.get(&id).and_then(|n| n.reference.clone()))
            };
            let target = repro::Target {
                node,
                element,
                optimised: f.optimised,
                reference: f.reference,
            };
            let program = repro::program(&target, &capture.nodes, &inputs, &value);
            return Ok(Some(Divergence {
                mismatch: m.clone(),
                op: if step.op == "load" {
                    "load".into()
                } else {
                    info.op.name()
                },
                site: info.site,
                element,
                optimised: f.optimised,
                reference: f.reference,
                step: n,
                program,
            }));
        }
        Ok(None)
    }

    /// The first diverging op of every mismatch comparison mode found so far (computed once per
    /// mismatch, while its kernel is kept).
    pub fn divergences(&self, mismatches: &[Mismatch]) -> Result<Vec<Divergence>> {
        let mut out = Vec::new();
        for m in mismatches {
            let known = self
                .captures
                .lock()
                .divergences
                .iter()
                .find(|(o, _)| *o == m.order)
                .map(|(_, d)| d.clone());
            let d = match known {
                Some(d) => d,
                None => {
                    let d = self.narrow(m)?;
                    self.captures.lock().divergences.push((m.order, d.clone()));
                    d
                }
            };
            out.extend(d);
        }
        Ok(out)
    }
}
