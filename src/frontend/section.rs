//! Code reuse sections (the seed's code macros, FIGS. 3C and 5A-5C): the first call of a section
//! records it (its closure runs, its ops are compiled into a program sequence kept in the macro
//! cache); later calls with the same key replay that sequence in one message to the execution
//! scheduler without calling the closure. Sections nest (inner ones are recorded into the
//! outermost); entering a section that is already being recorded, reading or writing data inside a
//! section, and using an array that is neither an input nor computed in the section are errors.

use super::{Handle, NodeHandle, NodeInfo, NodeState};
use crate::api::RngState;
use crate::compile::macro_cache::{MacroEntry, ParamSource, RefInput, RefProgram, RefStep};
use crate::compile::{FlushReason, flush};
use crate::error::{Error, ErrorKind, Result};
use crate::exec::{BufferId, Instance};
use crate::ir::{NodeId, Op, Site};
use crate::proggen::sequence::{FormalRole, Kernel};
use crate::runtime::stats::Counters;
use crate::runtime::{FrontEnd, Inner};
use ahash::AHashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::Arc;

/// A section being recorded (the outermost) or entered inside one (inlined into it).
pub struct Recording {
    pub key: Vec<u64>,
    pub site: Site,
    /// Generators drawn from while recording, with their position at the first draw.
    pub rngs: Vec<(Arc<Mutex<RngState>>, u64)>,
    /// Random nodes: which generator and the counter they start at.
    pub draws: AHashMap<NodeId, (usize, u64)>,
    /// The first forbidden operation (read, write) attempted inside the section.
    pub violation: Option<Error>,
}

/// The section's ops from its inputs to its outputs, in dependency order (before the final flush
/// drops the fused ones from the port table); `None` if an output depends on a foreign array.
fn reference_program(
    fe: &FrontEnd,
    inputs: &[Handle],
    outputs: &[NodeId],
    rec: &Recording,
) -> Option<RefProgram> {
    let mut steps: Vec<RefStep> = Vec::new();
    let mut index: AHashMap<NodeId, usize> = AHashMap::new();
    let mut stack: Vec<(NodeId, bool)> = outputs.iter().rev().map(|&id| (id, false)).collect();
    let input_pos = |id: NodeId| inputs.iter().position(|h| h.id == id);
    while let Some((id, expanded)) = stack.pop() {
        if index.contains_key(&id) || input_pos(id).is_some() {
            continue;
        }
        let n = fe.nodes.get(&id)?;
        if !n.is_pending() {
            return None; // stored data that is not an input: a foreign array
        }
        if !expanded {
            stack.push((id, true));
            stack.extend(n.inputs.iter().rev().map(|&i| (i, false)));
            continue;
        }
        let ins = n
            .inputs
            .iter()
            .map(|&i| match (input_pos(i), index.get(&i)) {
                (Some(p), _) => Some(RefInput::Input(p)),
                (None, Some(&s)) => Some(RefInput::Step(s)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let random = rec.draws.get(&id).map(|&(r, c)| (r, c - rec.rngs[r].1));
        index.insert(id, steps.len());
        steps.push(RefStep {
            node: n.clone(),
            inputs: ins,
            random,
        });
    }
    let outputs = outputs
        .iter()
        .map(|id| index.get(id).copied())
        .collect::<Option<Vec<_>>>()?;
    Some(RefProgram { steps, outputs })
}

/// The macro cache key: call site, name, inputs' types, shapes and kinds, control values.
fn section_key(
    site: Site,
    name: &str,
    inputs: &[Handle],
    nodes: &super::NodeTable,
    controls: &[u64],
) -> Vec<u64> {
    let mut k = vec![
        site as *const _ as *const () as usize as u64,
        name.len() as u64,
    ];
    k.extend(name.bytes().map(|b| b as u64));
    k.push(inputs.len() as u64);
    for h in inputs {
        let kind = nodes
            .get(&h.id)
            .map_or(0, |n| matches!(n.op, Op::Source) as u64);
        k.extend([h.dtype as u64, kind, h.shape.len() as u64]);
        k.extend(h.shape.iter().map(|&d| d as u64));
    }
    k.push(controls.len() as u64);
    k.extend_from_slice(controls);
    k
}

impl Inner {
    /// A forbidden operation inside a section: remembered (the section ends with it) and returned.
    pub fn section_violation(&self, fe: &mut FrontEnd, what: &str, site: Site) -> Option<Error> {
        let outer = fe.sections.first_mut()?;
        let e = Error::new(ErrorKind::Argument, format!("{what} inside a code reuse section (entered at {})", outer.site))
            .at(site)
            .hint("sections record array operations only: read results after the section returns, and pass data in as inputs");
        outer.violation.get_or_insert_with(|| e.clone());
        Some(e)
    }

    /// Registers a random draw made while a section records.
    pub fn section_draw(&self, id: NodeId, state: &Arc<Mutex<RngState>>, counter: u64) {
        let mut fe = self.fe.lock();
        let Some(rec) = fe.sections.first_mut() else {
            return;
        };
        let r = match rec.rngs.iter().position(|(s, _)| Arc::ptr_eq(s, state)) {
            Some(r) => r,
            None => {
                rec.rngs.push((state.clone(), counter));
                rec.rngs.len() - 1
            }
        };
        rec.draws.insert(id, (r, counter));
    }

    /// Runs a code reuse section: replays it when its key is cached, else records it.
    pub fn reuse(
        &self,
        site: Site,
        name: &str,
        inputs: &[Handle],
        controls: &[u64],
        f: &mut dyn FnMut(&[Handle]) -> Vec<Handle>,
    ) -> Result<Vec<Handle>> {
        let key = {
            let mut fe = self.fe.lock();
            let key = section_key(site, name, inputs, &fe.nodes, controls);
            if let Some(outer) = fe.sections.iter().find(|s| s.key == key) {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("this code reuse section is entered again while it is being recorded (first entered at {})", outer.site),
                )
                .at(site)
                .hint("sections may nest, but not recurse into themselves"));
            }
            if !fe.sections.is_empty() {
                // Nested: recorded into the outermost section.
                fe.sections.push(Recording {
                    key,
                    site,
                    rngs: Vec::new(),
                    draws: AHashMap::new(),
                    violation: None,
                });
                drop(fe);
                let out = f(inputs);
                self.fe.lock().sections.pop();
                return Ok(out);
            }
            // Inputs must be stored, and earlier work flushed, before the section.
            for h in inputs {
                super::record::enqueue_pending(&mut fe, h.id);
            }
            if !fe.queue.is_empty() {
                flush(self, &mut fe, FlushReason::Section, None);
            }
            let before = fe.macros.counts;
            let found = fe.macros.lookup(&key);
            let after = fe.macros.counts;
            self.add_macro_counts(&before, &after);
            if let Some(entry) = found {
                return self.replay(&mut fe, &entry, inputs, site);
            }
            fe.sections.push(Recording {
                key: key.clone(),
                site,
                rngs: Vec::new(),
                draws: AHashMap::new(),
                violation: None,
            });
            fe.block_depth += 1;
            key
        };
        let outputs = f(inputs);
        let mut fe = self.fe.lock();
        fe.block_depth -= 1;
        let rec = fe.sections.pop().expect("the section being recorded");
        fe.capture = Some(None);
        let out_ids: Vec<NodeId> = outputs.iter().map(|h| h.id).collect();
        let reference = reference_program(&fe, inputs, &out_ids, &rec);
        // Store every output (and anything else still held): the section's results.
        for &id in &out_ids {
            super::record::enqueue_pending(&mut fe, id);
        }
        if !fe.queue.is_empty() {
            flush(self, &mut fe, FlushReason::Section, None);
        }
        let generated = fe.capture.take().flatten();
        if let Some(e) = rec.violation {
            return Err(e);
        }
        let Some((g, values)) = generated else {
            return Ok(outputs);
        };
        // Every external the sequence reads must be one of the inputs.
        let mut inputs_of = Vec::new();
        for &(f, id) in &g.inputs {
            match inputs.iter().position(|h| h.id == id) {
                Some(pos) => inputs_of.push((f, pos)),
                None => {
                    let user = g
                        .processed
                        .iter()
                        .find(|p| fe.nodes.get(p).is_some_and(|n| n.inputs.contains(&id)));
                    let at = user.and_then(|p| fe.nodes.get(p)).map_or(site, |n| n.site);
                    return Err(Error::new(ErrorKind::Argument, "this operation inside a code reuse section uses an array that is neither an input of the section nor computed in it")
                        .at(at)
                        .hint(format!("pass the array in the section's inputs (section entered at {site})")));
                }
            }
        }
        let mut outs = Vec::new();
        for h in &outputs {
            match g.stored.iter().find(|(_, id)| *id == h.id) {
                Some(&(f, _)) => outs.push((f, h.dtype, h.shape.clone())),
                None => return Ok(outputs), // an output not computed here (an input, a constant): not cached
            }
        }
        let mut params = Vec::new();
        for ((p, nodes), vals) in g.sequence.programs.iter().zip(&g.params).zip(&values) {
            let kinds = match &*p.kernel {
                Kernel::Fused(k) => k.params.clone(),
                Kernel::Intrinsic(_) => Vec::new(),
            };
            let mut srcs = Vec::new();
            for ((kind, id), &v) in kinds.iter().zip(nodes).zip(vals) {
                srcs.push(match (kind.is_random(), rec.draws.get(id)) {
                    (true, Some(&(r, _))) if kind.is_key() => ParamSource::RandomKey(r),
                    (true, Some(&(r, c))) => ParamSource::RandomCounter(r, c - rec.rngs[r].1),
                    // Constants, and draws made before the section, are part of its code.
                    _ => ParamSource::Fixed(v),
                });
            }
            params.push(srcs);
        }
        let rngs = rec
            .rngs
            .iter()
            .map(|(s, first)| (s.clone(), s.lock().counter - first))
            .collect();
        let entry = MacroEntry {
            reference,
            seq: g.sequence.clone(),
            inputs: inputs_of,
            outputs: outs,
            params,
            rngs,
        };
        let before = fe.macros.counts;
        fe.macros.insert(key, Arc::new(entry));
        self.add_macro_counts(&before, &fe.macros.counts);
        Ok(outputs)
    }

    fn add_macro_counts(
        &self,
        before: &crate::compile::trace_cache::CacheCounts,
        after: &crate::compile::trace_cache::CacheCounts,
    ) {
        let c = &self.counters;
        Counters::add(&c.macro_hits, after.hits - before.hits);
        Counters::add(&c.macro_misses, after.misses - before.misses);
        Counters::add(&c.macro_insertions, after.insertions - before.insertions);
        Counters::add(&c.macro_evictions, after.evictions - before.evictions);
        Counters::add(&c.macro_lookup_ns, after.lookup_ns - before.lookup_ns);
    }

    /// Sends a recorded section's sequence to the execution scheduler bound to new inputs.
    fn replay(
        &self,
        fe: &mut FrontEnd,
        entry: &MacroEntry,
        inputs: &[Handle],
        site: Site,
    ) -> Result<Vec<Handle>> {
        let started = std::time::Instant::now();
        let seq = &entry.seq;
        let mut bindings = vec![BufferId(0); seq.formals.len()];
        let mut temps = Vec::new();
        for (f, formal) in seq.formals.iter().enumerate() {
            if formal.role != FormalRole::Input {
                bindings[f] = self.sched.new_buffer();
                temps.push(bindings[f]);
            }
        }
        for &(f, pos) in &entry.inputs {
            let b = fe.nodes.get(&inputs[pos].id).and_then(NodeInfo::buffer);
            bindings[f as usize] = b.ok_or_else(|| {
                Error::new(ErrorKind::Runtime, "a section input has no buffer").at(site)
            })?;
        }
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
        if self.compare_on.load(std::sync::atomic::Ordering::Relaxed)
            && let Some(prog) = &entry.reference
        {
            let read = |b: BufferId| self.sched.read(b).ok();
            let refs = reference_replay(fe, prog, inputs, &entry.rngs, &bases, &read);
            for (h, r) in outputs.iter().zip(refs) {
                if let Some(n) = fe.nodes.get_mut(&h.id) {
                    n.reference = r;
                }
            }
        }
        let checks: Vec<_> = match self.compare.read().clone() {
            Some(cfg) if cfg.mode == crate::debug::CompareMode::AfterComputation => outputs
                .iter()
                .filter_map(|h| {
                    let n = fe.nodes.get(&h.id)?;
                    let prog = entry.reference.as_ref()?;
                    let step =
                        &prog.steps[prog.outputs[outputs.iter().position(|o| o.id == h.id)?]];
                    let check = crate::debug::checker::Check {
                        reference: n.reference.clone()?,
                        op: step.node.op.name(),
                        site: step.node.site,
                        order: h.id.0,
                        tolerance: cfg
                            .tolerance_for(step.node.tolerance_op, step.node.tolerance_dtype),
                        config: cfg.clone(),
                    };
                    Some((n.buffer()?, check))
                })
                .collect(),
            _ => Vec::new(),
        };
        self.flow.acquire(seq.programs.len());
        self.sched.submit(Instance {
            seq: seq.clone(),
            bindings,
            params,
            started,
        });
        for (buf, check) in checks {
            self.schedule_check(buf, check);
        }
        for t in temps {
            self.sched.release(t);
        }
        Ok(outputs)
    }
}

type Value = Arc<crate::exec::TypedVec>;

/// Evaluates a recorded section's ops with the reference interpreter on the new inputs' reference
/// values (or their data, where they have none), with random draws at this replay's positions.
fn reference_replay(
    fe: &FrontEnd,
    prog: &RefProgram,
    inputs: &[Handle],
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
