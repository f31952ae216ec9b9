//! Replaying a recorded code reuse section (the seed's macro playback, FIG. 5C): its cached program
//! sequence is bound to this call's inputs, parameter values and random-number positions and goes
//! to the hand-off as one submission, without calling the closure or the program generator.

use super::handoff::{Origin, Submission};
use super::macro_cache::{MacroEntry, ParamSource};
use crate::error::{Error, ErrorKind, Result};
use crate::exec::BufferId;
use crate::frontend::{Handle, NodeHandle, NodeInfo, NodeState};
use crate::ir::{NodeId, Op, Site};
use crate::proggen::sequence::FormalRole;
use crate::runtime::{FrontEnd, Inner};
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
        let params = entry
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
        let mut outputs = Vec::new();
        for (f, dtype, shape) in &entry.outputs {
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
        self.hand_off(Submission {
            origin: Origin::Replay,
            seq: seq.clone(),
            bindings,
            params,
            checks,
            release: temps,
            started,
        });
        Ok(outputs)
    }
}
