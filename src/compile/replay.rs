//! Replaying a recorded code reuse section (the seed's macro playback, FIG. 5C): its cached program
//! sequence is bound to this call's inputs, parameter values and random-number positions and goes
//! to the hand-off as one submission, without calling the closure or the program generator. In
//! comparison mode the outputs' reference values come from the recorded ops (`RefProgram`), since
//! the closure is not called: the reference interpreter evaluates them on this call's inputs,
//! parameters and random-number positions.

use super::handoff::{Origin, Submission};
use super::macro_cache::{MacroEntry, ParamSource, RefInput, RefProgram};
use super::state::{FrontEnd, Inner};
use super::{Handle, NodeHandle};
use crate::error::{Error, ErrorKind, Result};
use crate::exec::BufferId;
use crate::ir::{NodeId, Op, Site};
use crate::ir::{NodeInfo, NodeState, RngState};
use crate::proggen::sequence::FormalRole;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::Arc;

impl Inner {
    /// Sends a recorded section's sequence to the execution scheduler bound to new inputs.
    pub(crate) fn replay(
        &self,
        fe: &mut FrontEnd,
        entry: &MacroEntry,
        inputs: &[Handle],
        values: &[crate::ir::Scalar],
        site: Site,
    ) -> Result<Vec<Handle>> {
        let started = std::time::Instant::now();
        let seq = &entry.seq;
        let mut ins = Vec::with_capacity(entry.inputs.len());
        for &(f, pos) in &entry.inputs {
            let b = fe.nodes.get(&inputs[pos].id).and_then(NodeInfo::buffer);
            ins.push((
                f,
                b.ok_or_else(|| {
                    Error::new(ErrorKind::Runtime, "a section input has no buffer").at(site)
                })?,
            ));
        }
        let bindings = self.bind_formals(seq, ins);
        let mut temps: Vec<BufferId> = seq
            .formals
            .iter()
            .enumerate()
            .filter(|(_, f)| f.role != FormalRole::Input)
            .map(|(f, _)| bindings[f])
            .collect();
        // Generators advance as a normal run would have advanced them.
        let bases: Vec<u64> = entry
            .rngs
            .iter()
            .map(|(s, advance)| {
                let mut s = s.lock();
                let base = s.counter;
                s.counter += advance;
                base
            })
            .collect();
        let params: Vec<Arc<[u64]>> = entry
            .params
            .iter()
            .map(|srcs| {
                srcs.iter()
                    .map(|p| match *p {
                        ParamSource::Fixed(v) => v,
                        ParamSource::RandomKey(r) => {
                            let k = entry.rngs[r].0.lock().key;
                            ((k[1] as u64) << 32) | k[0] as u64
                        }
                        ParamSource::RandomCounter(r, off) => bases[r] + off,
                        ParamSource::Param(i) => values[i].bits(),
                    })
                    .collect()
            })
            .collect();
        let mut outputs: Vec<Handle> = Vec::new();
        for (k, (f, dtype, shape)) in entry.outputs.iter().enumerate() {
            // The same result returned twice (`vec![t.clone(), t]`): one node, two handles, as
            // when the section was recorded; two nodes would each free the one buffer.
            if let Some(j) = entry.outputs[..k].iter().position(|(g, _, _)| g == f) {
                outputs.push(outputs[j].clone());
                continue;
            }
            let b = bindings[*f as usize];
            temps.retain(|t| *t != b);
            fe.next_id += 1;
            let id = NodeId(fe.next_id);
            fe.nodes.insert(
                id,
                NodeInfo::new(
                    Op::Source,
                    SmallVec::new(),
                    shape.clone(),
                    *dtype,
                    site,
                    NodeState::Stored(b),
                ),
            );
            outputs.push(Arc::new(NodeHandle {
                id,
                shape: shape.clone(),
                dtype: *dtype,
                konst: None,
            }));
        }
        // Comparison mode: the outputs' reference values from the recorded ops (the closure is not
        // called on a replay), and, after computation, their checks.
        if self.compare_on.load(std::sync::atomic::Ordering::Relaxed) {
            self.replay_references(fe, entry, inputs, values, &bases, &outputs);
        }
        let checks = self.replay_checks(fe, entry, &outputs);
        if self.stepping() {
            let ids: Vec<NodeId> = outputs.iter().map(|h| h.id).collect();
            self.capture_replay(entry, &bindings, &params, &ids);
        }
        self.hand_off(Submission {
            origin: Origin::Replay,
            seq: seq.clone(),
            bindings,
            params,
            checks,
            release: temps,
            started,
            pin: None,
        });
        Ok(outputs)
    }
}

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
