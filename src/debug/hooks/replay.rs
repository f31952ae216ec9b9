//! Comparison mode on a replayed code reuse section: the closure is not called, so the outputs'
//! reference values come from the recorded ops (`RefProgram`), evaluated by the reference
//! interpreter on this call's inputs, parameters and random-number positions.

use crate::compile::macro_cache::{MacroEntry, RefInput, RefProgram};
use crate::exec::BufferId;
use crate::frontend::Handle;
use crate::ir::Op;
use crate::ir::RngState;
use crate::runtime::{FrontEnd, Inner};
use parking_lot::Mutex;
use std::sync::Arc;

impl Inner {
    /// Sets the reference value of each output of a replay of `entry` (comparison mode).
    pub(crate) fn replay_references(
        &self,
        fe: &mut FrontEnd,
        entry: &MacroEntry,
        inputs: &[Handle],
        values: &[crate::ir::Scalar],
        bases: &[u64],
        outputs: &[Handle],
    ) {
        let Some(prog) = &entry.reference else {
            return;
        };
        let read = |b: BufferId| self.sched.read(b).ok();
        let refs = reference_replay(fe, prog, inputs, values, &entry.rngs, bases, &read);
        for (h, r) in outputs.iter().zip(refs) {
            if let Some(n) = fe.nodes.get_mut(&h.id) {
                n.reference = r;
                n.magnitude = None;
            }
        }
    }
}

type Value = Arc<crate::exec::TypedVec>;

/// Evaluates a recorded section's ops with the reference interpreter on the new inputs' reference
/// values (or their data, where they have none), with random draws at this replay's positions.
fn reference_replay(
    fe: &FrontEnd,
    prog: &RefProgram,
    inputs: &[Handle],
    values: &[crate::ir::Scalar],
    rngs: &[(Arc<Mutex<RngState>>, u64)],
    bases: &[u64],
    read: &dyn Fn(BufferId) -> Option<Arc<crate::exec::TypedVec>>,
) -> Vec<Option<Arc<crate::exec::TypedVec>>> {
    // Inputs recorded before comparison was on have no reference: their data stands in.
    let input_vals: Vec<Option<Arc<crate::exec::TypedVec>>> = inputs
        .iter()
        .map(|h| {
            let n = fe.nodes.get(&h.id)?;
            n.reference.clone().or_else(|| read(n.buffer()?))
        })
        .collect();
    let mut vals: Vec<Option<Arc<crate::exec::TypedVec>>> = Vec::with_capacity(prog.steps.len());
    for step in &prog.steps {
        let mut node = step.node.clone();
        if let (Some((r, off)), Op::Generate(crate::ir::GenKind::Random { key, counter, .. })) =
            (step.random, &mut node.op)
        {
            *key = rngs[r].0.lock().key;
            *counter = bases[r] + off;
        }
        if let Some(i) = step.param {
            node.op = Op::Const(values[i]);
        }
        let ins: Option<Vec<(Value, crate::ir::Shape)>> = step
            .inputs
            .iter()
            .map(|i| match *i {
                RefInput::Input(p) => input_vals[p].clone().map(|v| (v, inputs[p].shape.clone())),
                RefInput::Step(s) => vals[s]
                    .clone()
                    .map(|v| (v, prog.steps[s].node.shape.clone())),
            })
            .collect();
        let v = ins.and_then(|ins| {
            let refs: Vec<(&crate::exec::TypedVec, &[usize])> =
                ins.iter().map(|(v, s)| (&**v, &s[..])).collect();
            crate::debug::reference::eval(&node, &refs)
                .ok()
                .map(Arc::new)
        });
        vals.push(v);
    }
    prog.outputs.iter().map(|&o| vals[o].clone()).collect()
}
