//! The first diverging op (issue 24): a comparison-mode mismatch on a kept fused kernel's result
//! is narrowed by stepping the kernel's micro-kernels on the executor that ran it and comparing
//! each step's values, element by element, with the reference of the IR node it computes (by the
//! comparison rule and the node's allowance). The first step that fails names the op; when the
//! failing step is a load, the kernel's input already differed and the kernel that computed it is
//! searched in turn, while it is kept. A kept intrinsic's launch is one step: an input that
//! differs is traced upstream the same way; with its inputs equal to their references, the
//! intrinsic is the diverging op, at the first element of its result that differs.

use super::capture::KernelCapture;
use super::report::Divergence;
use super::repro;
use super::window::map_at;
use crate::compile::Inner;
use crate::debug::{CompareConfig, CompareMode, Mismatch, check};
use crate::error::Result;
use crate::exec::TypedVec;
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
        if capture.intrinsic().is_some() {
            return self.narrow_intrinsic(capture, m, depth, &cfg);
        }
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
            let Some(f) = first_difference(&cfg, &capture, node, &step.op, values, &at) else {
                continue;
            };
            // A load that differs: the input already differed, so search the kernel that
            // computed it.
            let load = step
                .instr
                .is_some_and(|i| matches!(k.instrs[i], Instr::Load { .. }));
            if load && let Some(d) = self.upstream(&capture, node, m, depth)? {
                return Ok(Some(d));
            }
            let op = if load {
                "load".into()
            } else {
                capture.nodes[&node].op.name()
            };
            return Ok(Some(self.divergence(
                &capture,
                m,
                op,
                target(node, at[f.0], f),
                n,
            )));
        }
        Ok(None)
    }

    /// The first diverging op of a kept intrinsic's launch: the first input that differs from
    /// its reference, traced to the kept kernel that computed it (or named as a `load` when that
    /// is no longer kept); else the intrinsic itself, at the first differing element of its
    /// results.
    fn narrow_intrinsic(
        &self,
        capture: Arc<KernelCapture>,
        m: &Mismatch,
        depth: usize,
        cfg: &CompareConfig,
    ) -> Result<Option<Divergence>> {
        for (&node, &buf) in capture.input_nodes.iter().zip(&capture.inputs) {
            let values = self.sched.read(buf)?;
            let at: Vec<usize> = (0..values.len()).collect();
            let Some(f) = first_difference(cfg, &capture, node, "load", &values, &at) else {
                continue;
            };
            if let Some(d) = self.upstream(&capture, node, m, depth)? {
                return Ok(Some(d));
            }
            let d = self.divergence(&capture, m, "load".into(), target(node, f.0, f), 0);
            return Ok(Some(d));
        }
        for (&node, &buf) in capture.outputs.iter().zip(&capture.output_buffers) {
            let values = self.sched.read(buf)?;
            let at: Vec<usize> = (0..values.len()).collect();
            let Some(info) = capture.nodes.get(&node) else {
                continue;
            };
            let op = info.op.name();
            if let Some(f) = first_difference(cfg, &capture, node, &op, &values, &at) {
                return Ok(Some(self.divergence(
                    &capture,
                    m,
                    op,
                    target(node, f.0, f),
                    0,
                )));
            }
        }
        Ok(None)
    }

    /// The first diverging op upstream of `capture`'s input `node`, which differed from its
    /// reference: in the kept kernel that computed it, if any (looked up first: the lock is not
    /// held while stepping).
    fn upstream(
        &self,
        capture: &Arc<KernelCapture>,
        node: NodeId,
        m: &Mismatch,
        depth: usize,
    ) -> Result<Option<Divergence>> {
        let up = if depth < MAX_UPSTREAM {
            self.captures.lock().find(node)
        } else {
            None
        };
        match up {
            Some(up) if !Arc::ptr_eq(&up, capture) => self.narrow_in(up, m, depth + 1),
            _ => Ok(None),
        }
    }

    /// The divergence of mismatch `m` at `target` (op `op`, step `step` of `capture`), with its
    /// reproducing program.
    fn divergence(
        &self,
        capture: &KernelCapture,
        m: &Mismatch,
        op: String,
        target: repro::Target,
        step: usize,
    ) -> Divergence {
        let inputs: AHashSet<NodeId> = capture.input_nodes.iter().copied().collect();
        // A kernel input's data (pinned while the kernel is kept), else the node's reference
        // (comparison mode computed one for every node recorded while it was on).
        let value = |id: NodeId| {
            let data = capture
                .input_nodes
                .iter()
                .position(|&x| x == id)
                .and_then(|p| self.sched.read(capture.inputs[p]).ok());
            data.or_else(|| capture.nodes.get(&id).and_then(|n| n.reference.clone()))
        };
        let program = repro::program(&target, &capture.nodes, &inputs, &value);
        Divergence {
            mismatch: m.clone(),
            op,
            site: capture.nodes[&target.node].site,
            element: target.element,
            optimised: target.optimised,
            reference: target.reference,
            step,
            program,
        }
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

/// Where a step's values first differ from their node's reference: the position among the
/// step's elements, the optimised value and the reference value.
type Difference = (usize, f64, f64);

/// The first of `values` (node `node`'s values at its elements `at`, computed by step `op`) that
/// differs from the node's reference by comparison mode's rule and the node's allowance; `None`
/// when it agrees or has no reference.
fn first_difference(
    cfg: &CompareConfig,
    capture: &KernelCapture,
    node: NodeId,
    op: &str,
    values: &TypedVec,
    at: &[usize],
) -> Option<Difference> {
    let info = capture.nodes.get(&node)?;
    let reference = info.reference.as_ref()?;
    if at.iter().any(|&j| j >= reference.len()) {
        return None;
    }
    let gathered = collect(reference.dtype(), at.len(), |d| reference.get(at[d]));
    let magnitude: Option<Vec<f64>> = info.magnitude.as_ref().map(|mg| {
        at.iter()
            .map(|&j| mg.get(j).copied().unwrap_or(0.0))
            .collect()
    });
    let tol = cfg.tolerance_for(info.tolerance_op, info.tolerance_dtype);
    let (fail, _, _) = check(
        op,
        info.site,
        node.0,
        (0..at.len()).map(|d| values.get(d)),
        &gathered,
        magnitude.as_deref(),
        tol,
    );
    fail.map(|f| (f.element, f.optimised, f.reference))
}

/// The diverging element `element` of `node`, with difference `f`'s values.
fn target(node: NodeId, element: usize, f: Difference) -> repro::Target {
    repro::Target {
        node,
        element,
        optimised: f.1,
        reference: f.2,
    }
}
