//! Running a kept fused kernel one operation at a time: its micro-kernels (`micro.rs`) go
//! through the one hand-off as a program sequence of their own, pinned to the executor that ran
//! the fused kernel (the scheduler says which), so every executor runs them by its normal path,
//! over the box of the domain the scope needs (`window.rs`); their spill buffers are read back,
//! then released. A kept intrinsic's launch is one step: its result read at the scope.

use super::capture::KernelCapture;
use super::micro::{self, MicroPlan};
use super::report::{StepRecord, StepScope};
use super::window::Window;
use super::window::map_at;
use crate::compile::{Inner, Origin, Submission};
use crate::error::{Error, ErrorKind, Result};
use crate::exec::TypedVec;
use crate::ir::{NodeId, Site};
use crate::proggen::kernel::Instr;
use crate::proggen::sequence::FormalRole;
use std::ops::Range;
use std::sync::Arc;

/// A kept kernel run micro-kernel by micro-kernel: the plan and each step's spilled values.
pub struct Stepped {
    pub capture: Arc<KernelCapture>,
    pub plan: MicroPlan,
    /// The part of the domain the element-wise steps ran over (their values are its elements).
    pub window: Window,
    pub values: Vec<Arc<TypedVec>>,
}

/// The domain elements `scope` picks in a kernel of `len` elements launched in tiles of `tile`
/// (`Group(g)` is launch tile `g` whichever executor ran the kernel, see [`StepScope::Group`]),
/// checked against the domain; an error names `site`.
fn scope_range(scope: &StepScope, len: usize, tile: usize, site: Site) -> Result<Range<usize>> {
    let tile = tile.max(1);
    let range = match scope {
        StepScope::All => 0..len,
        StepScope::Element(e) => *e..e + 1,
        StepScope::Group(g) => g * tile..((g + 1) * tile).min(len),
        StepScope::Range(r) => r.clone(),
    };
    if range.start >= range.end || range.end > len {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("step scope {scope:?} is outside the kernel's domain of {len} elements"),
        )
        .at(site)
        .hint(format!(
            "elements are 0..{len} (row-major over the domain), groups 0..{} of {tile} elements \
             (the launch tile on every executor, not a GPU's work-group)",
            len.div_ceil(tile)
        )));
    }
    Ok(range)
}

impl Inner {
    /// The steps of the kept kernel that computed node `id` (computed first if it is pending) at
    /// `scope`'s elements: a fused kernel's micro-kernels, re-run on the executor that ran it
    /// over the part of the domain `scope` needs, or an intrinsic's launch as one step, its
    /// result read at those elements of its output.
    pub fn step_records(
        &self,
        id: NodeId,
        site: Site,
        scope: &StepScope,
    ) -> Result<Vec<StepRecord>> {
        let capture = self.kept_kernel(id, site)?;
        match capture.intrinsic() {
            Some(_) => self.intrinsic_step(&capture, id, site, scope),
            None => self.step_kernel(capture, site, scope)?.records(scope, site),
        }
    }

    /// The kept kernel that computed node `id`, after computing it if it is pending.
    fn kept_kernel(&self, id: NodeId, site: Site) -> Result<Arc<KernelCapture>> {
        if self.front().nodes.get(&id).is_some_and(|n| n.is_pending()) {
            self.read_node(id, site)?;
        }
        self.captures.lock().find(id).ok_or_else(|| {
            let why = if self.stepping() {
                "no kept kernel computed this array (it was computed before stepping was switched on, or longer ago than the kept kernels)"
            } else {
                "stepping is off, so no kernel was kept"
            };
            Error::new(ErrorKind::Argument, why.to_string())
                .at(site)
                .hint("call Runtime::set_stepping(n) before the flush that computes the array; it keeps the last n kernels")
        })
    }

    /// An intrinsic's launch as one step: its output `id` as the executor computed it, at the
    /// scope's elements (of the output, row-major; a group is the launch's tile of them), with
    /// comparison mode's reference there when it recorded one.
    fn intrinsic_step(
        &self,
        capture: &KernelCapture,
        id: NodeId,
        site: Site,
        scope: &StepScope,
    ) -> Result<Vec<StepRecord>> {
        let call = capture.intrinsic().expect("an intrinsic's capture");
        let o = capture.output_of(id).unwrap_or(0);
        let values = self.sched.read(capture.output_buffers[o])?;
        let range = scope_range(scope, values.len(), capture.launch.tile, site)?;
        let elements: Vec<usize> = range.collect();
        let info = capture.nodes.get(&capture.outputs[o]);
        let reference = reference_at(info, &elements);
        Ok(vec![StepRecord {
            step: 0,
            op: info.map_or_else(|| call.op.name().to_string(), |n| n.op.name()),
            site: info.map_or(site, |n| n.site),
            dtype: values.dtype(),
            shape: info.map_or_else(|| vec![values.len()], |n| n.shape.to_vec()),
            stored: Some(o),
            values: elements.iter().map(|&e| values.get(e).as_f64()).collect(),
            bits: elements.iter().map(|&e| values.get(e).bits()).collect(),
            at: elements.clone(),
            elements,
            reference,
        }])
    }

    /// Re-runs kept fused kernel `capture` as micro-kernels over the part of its domain `scope`
    /// needs.
    fn step_kernel(
        &self,
        capture: Arc<KernelCapture>,
        site: Site,
        scope: &StepScope,
    ) -> Result<Stepped> {
        let k = capture.fused();
        let range = scope_range(scope, k.domain.len(), capture.launch.tile, site)?;
        let window = Window::covering(&k.domain.shape, range);
        self.run_micro(capture, window)
    }

    /// Runs the micro-kernels of a kept kernel over `window` of its domain and reads their spill
    /// buffers.
    pub fn run_micro(&self, capture: Arc<KernelCapture>, window: Window) -> Result<Stepped> {
        let k = capture.fused();
        let lens: Vec<usize> = capture
            .input_nodes
            .iter()
            .zip(&k.inputs)
            .map(|(n, _)| capture.nodes.get(n).map_or(0, |n| n.len()))
            .collect();
        let window = if k.reductions.is_empty() {
            window
        } else {
            Window::all(&k.domain.shape)
        };
        let plan = micro::plan(k, &lens, capture.launch.tile, &window);
        let computed: usize = plan.seq.programs.iter().map(|p| p.launch.domain_len).sum();
        crate::counters::Counters::add(&self.counters.stepped_elements, computed as u64);
        let mut bindings = capture.inputs.clone();
        for f in &plan.seq.formals[bindings.len()..] {
            debug_assert_eq!(f.role, FormalRole::Output);
            bindings.push(self.sched.new_buffer());
        }
        let spills: Vec<_> = plan
            .steps
            .iter()
            .map(|s| bindings[s.spill as usize])
            .collect();
        let params = plan
            .steps
            .iter()
            .map(|s| {
                s.params
                    .iter()
                    .map(|&p| capture.params[p as usize])
                    .collect()
            })
            .collect();
        self.hand_off(Submission {
            origin: Origin::Debug,
            seq: Arc::new(plan.seq.clone()),
            bindings,
            params,
            checks: Vec::new(),
            release: Vec::new(),
            started: std::time::Instant::now(),
            // Where the kernel ran (several executors may be live): the same arithmetic.
            pin: capture
                .output_buffers
                .iter()
                .find_map(|&b| self.sched.computed_on(b)),
        });
        let values: Result<Vec<_>> = spills.iter().map(|&b| self.sched.read(b)).collect();
        for b in spills {
            self.sched.release(b);
        }
        Ok(Stepped {
            capture,
            plan,
            window,
            values: values?,
        })
    }
}

impl Stepped {
    /// The domain elements `scope` picks, checked against the domain; an error names `site`.
    pub fn elements(&self, scope: &StepScope, site: Site) -> Result<Vec<usize>> {
        let len = self.capture.fused().domain.len();
        let range = scope_range(scope, len, self.capture.launch.tile, site)?;
        let shape = &self.capture.fused().domain.shape;
        let w = &self.window;
        if let Some(e) = range.clone().find(|&e| {
            let idx = crate::ir::unravel(e, shape);
            (0..shape.len()).any(|k| idx[k] < w.origin[k] || idx[k] >= w.origin[k] + w.shape[k])
        }) {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("element {e} of step scope {scope:?} was not stepped (the kernel was stepped over {w:?})"),
            )
            .at(site)
            .hint("step the kernel again with this scope"));
        }
        Ok(range.collect())
    }

    /// One record per step at the scope's elements.
    pub fn records(&self, scope: &StepScope, site: Site) -> Result<Vec<StepRecord>> {
        let elements = self.elements(scope, site)?;
        let k = self.capture.fused();
        let shape = &k.domain.shape;
        let inner = k.domain.inner.max(1);
        let mut out = Vec::new();
        for (n, (step, values)) in self.plan.steps.iter().zip(&self.values).enumerate() {
            // The node the step computes, its elements, and whether the kernel stores it.
            let (node, at, elems, stored) = match (step.instr, step.reduction) {
                (Some(i), _) => {
                    let (node, at): (Option<NodeId>, Vec<usize>) =
                        match (&k.instrs[i], &self.capture.members[i]) {
                            (_, Some((id, map))) => (
                                Some(*id),
                                elements.iter().map(|&d| map_at(map, shape, d)).collect(),
                            ),
                            (Instr::Load { input, map, .. }, None) => (
                                Some(self.capture.input_nodes[*input as usize]),
                                elements.iter().map(|&d| map_at(map, shape, d)).collect(),
                            ),
                            _ => (None, elements.clone()),
                        };
                    let stored = k
                        .stores
                        .iter()
                        .find(|s| {
                            s.reg == k.instrs[i].dst()
                                && k.instrs.iter().rposition(|x| x.dst() == s.reg) == Some(i)
                        })
                        .map(|s| s.output as usize);
                    (node, at, elements.clone(), stored)
                }
                (None, Some(r)) => {
                    let red = &k.reductions[r];
                    let mut results: Vec<usize> = elements.iter().map(|&d| d / inner).collect();
                    results.dedup();
                    let node = self.capture.outputs[red.output as usize];
                    (
                        Some(node),
                        results.clone(),
                        results,
                        Some(red.output as usize),
                    )
                }
                _ => unreachable!("a step is an instruction or a reduction"),
            };
            // Where each element's value is in the step's spill: the window's element for an
            // element-wise step, the result for a reduction.
            let pos: Vec<usize> = match step.instr {
                Some(_) => elems
                    .iter()
                    .map(|&e| self.window.index_of(e, shape))
                    .collect(),
                None => elems.clone(),
            };
            let info = node.and_then(|id| self.capture.nodes.get(&id));
            let reference = reference_at(info, &at);
            out.push(StepRecord {
                step: n,
                op: step.op.clone(),
                site: info.map_or(step.site, |n| n.site),
                dtype: step.dtype,
                shape: info.map_or_else(|| shape.to_vec(), |n| n.shape.to_vec()),
                stored,
                values: pos.iter().map(|&e| values.get(e).as_f64()).collect(),
                bits: pos.iter().map(|&e| values.get(e).bits()).collect(),
                elements: elems,
                at,
                reference,
            });
        }
        Ok(out)
    }
}

/// A node's reference values (comparison mode's, when it recorded them) at its elements `at`
/// (NaN past its end).
fn reference_at(info: Option<&crate::ir::NodeInfo>, at: &[usize]) -> Option<Vec<f64>> {
    let r = info?.reference.as_ref()?;
    Some(
        at.iter()
            .map(|&j| {
                if j < r.len() {
                    r.get(j).as_f64()
                } else {
                    f64::NAN
                }
            })
            .collect(),
    )
}
