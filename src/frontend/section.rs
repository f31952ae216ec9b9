//! Code reuse sections (the seed's code macros, FIGS. 3C and 5A-5C): the first call of a section
//! records it (its closure runs, its ops are compiled into a program sequence kept in the macro
//! cache); later calls with the same key replay that sequence (`compile/replay.rs`) in one
//! hand-off to the execution scheduler without calling the closure. Sections nest (inner ones are recorded into the
//! outermost); entering a section that is already being recorded, reading or writing data inside a
//! section, and using an array that is neither an input nor computed in the section are errors.

use super::Handle;
use crate::compile::macro_cache::{
    MacroEntry, ParamSource, Recording, RefInput, RefProgram, RefStep,
};
use crate::compile::{FrontEnd, Inner};
use crate::counters::Counters;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::RngState;
use crate::ir::{NodeId, Op, Site};
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use parking_lot::Mutex;
use std::sync::Arc;

/// Pops the section state `Inner::reuse` pushed when the closure returns or panics, so a panic
/// caught by the application (`catch_unwind`, a `#[should_panic]` test) does not leave the
/// runtime inside a section forever (GitHub issue 18).
struct SectionGuard<'a> {
    inner: &'a Inner,
    /// The outermost section also holds a block level.
    outermost: bool,
}

impl SectionGuard<'_> {
    /// The outermost section's closure returned: the section ends in `fe`, but the thread keeps
    /// the front end (its [`OwnerGuard`] gives it back) until the section's final flush is done,
    /// so no other thread's operations reach the queue between the closure and that flush.
    fn end(self, fe: &mut FrontEnd) {
        fe.sections.pop();
        fe.block_depth -= 1;
        std::mem::forget(self);
    }
}

/// Pops the section when the closure panicked (or, nested, returned). The outermost section's
/// thread gives the front end back through its [`OwnerGuard`], dropped after this guard.
impl Drop for SectionGuard<'_> {
    fn drop(&mut self) {
        let mut fe = self.inner.fe.lock();
        fe.sections.pop();
        if self.outermost {
            fe.block_depth -= 1;
            if std::thread::panicking() {
                // The section's ops stay queued and run with the next flush as ordinary work;
                // the trace-cache key never saw them, so that flush must not use the cache.
                fe.key.disabled = true;
            }
        }
    }
}

/// Gives the front end back to other threads when an outermost section's recording is over
/// (its final flush done, or a panic), after the caller's lock on it is released.
struct OwnerGuard<'a>(&'a Inner);

impl Drop for OwnerGuard<'_> {
    fn drop(&mut self) {
        let mut fe = self.0.fe.lock();
        if fe.section_owner == Some(std::thread::current().id()) {
            fe.section_owner = None;
            self.0.section_done.notify_all();
        }
    }
}

/// Creates the nodes of a section's declared parameters: 0-dimensional constants whose handles
/// carry no known value, so nothing folds them into the code and each becomes a kernel parameter.
fn parameters(params: &[crate::ir::Scalar], site: Site) -> Vec<Handle> {
    params
        .iter()
        .map(|&v| {
            let h = super::constant(v, crate::ir::Shape::new(), site);
            let mut nh = Arc::try_unwrap(h).expect("a new constant has one handle");
            nh.konst = None;
            Arc::new(nh)
        })
        .collect()
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
        let param = rec.params.iter().position(|&p| p == id);
        index.insert(id, steps.len());
        steps.push(RefStep {
            node: n.clone(),
            inputs: ins,
            random,
            param,
        });
    }
    let outputs = outputs
        .iter()
        .map(|id| index.get(id).copied())
        .collect::<Option<Vec<_>>>()?;
    Some(RefProgram { steps, outputs })
}

/// The macro cache key: call site, name, inputs' types, shapes and kinds (a constant's value,
/// which inputs are the same array), control values.
fn section_key(
    site: Site,
    name: &str,
    inputs: &[Handle],
    nodes: &super::NodeTable,
    params: &[crate::ir::Scalar],
    controls: &[u64],
) -> Vec<u64> {
    let mut k = vec![
        site as *const _ as *const () as usize as u64,
        name.len() as u64,
    ];
    k.extend(name.bytes().map(|b| b as u64));
    k.push(inputs.len() as u64);
    for (i, h) in inputs.iter().enumerate() {
        // The same array passed twice is one node in the recording: which earlier input each
        // input repeats (if any) is part of the key, so `(a, a)` and `(a, b)` record apart.
        let alias = inputs[..i].iter().position(|g| g.id == h.id);
        k.push(alias.map_or(u64::MAX, |p| p as u64));
        // A constant input is folded into the recording, so its value is part of the key: a
        // call with another constant records its own entry instead of replaying the first's.
        let node = nodes.get(&h.id);
        let kind = node.map_or(0, |n| match n.op {
            Op::Source => 1,
            Op::Const(_) => 2,
            _ => 0,
        });
        k.extend([h.dtype as u64, kind, h.shape.len() as u64]);
        if let Some(Op::Const(c)) = node.map(|n| &n.op) {
            k.push(c.bits());
        }
        k.extend(h.shape.iter().map(|&d| d as u64));
    }
    k.push(params.len() as u64);
    k.extend(params.iter().map(|p| p.dtype() as u64));
    k.push(controls.len() as u64);
    k.extend_from_slice(controls);
    k
}

/// Whether the replay numbered `replay` (1 for the section's second call) is re-recorded and
/// checked, with a check every `every` replays (0: never).
fn check_due(replay: u64, every: u32) -> bool {
    every > 0 && (replay == 1 || replay.is_multiple_of(every as u64))
}

/// How a re-recording of a section differs from its first recording, if it does: the first step
/// whose op (constants by their bits), shape, element type or inputs differ. Random draws are
/// compared without their stream positions and declared parameters without their values.
fn recording_difference(old: &RefProgram, new: &RefProgram) -> Option<String> {
    use crate::ir::GenKind;
    let plain = |step: &RefStep| -> Op {
        let mut op = step.node.op.clone();
        if let Op::Generate(GenKind::Random { key, counter, .. }) = &mut op {
            (*key, *counter) = ([0; 2], 0);
        }
        if step.param.is_some() {
            op = Op::Const(crate::ir::Scalar::Bool(false));
        }
        op
    };
    for (i, (a, b)) in old.steps.iter().zip(&new.steps).enumerate() {
        let (oa, ob) = (plain(a), plain(b));
        let same_op = match (&oa, &ob) {
            (Op::Const(x), Op::Const(y)) => x.bits() == y.bits() && x.dtype() == y.dtype(),
            _ => oa == ob,
        };
        if same_op
            && a.node.shape == b.node.shape
            && a.node.dtype == b.node.dtype
            && a.inputs == b.inputs
            && a.param == b.param
        {
            continue;
        }
        return Some(match (&oa, &ob) {
            (Op::Const(x), Op::Const(y)) if a.node.shape == b.node.shape => format!(
                "the constant recorded at {} is {:?} now where the first recording had {:?}",
                b.node.site, y, x
            ),
            _ => format!(
                "operation {} is `{}` of shape {:?} recorded at {} now where the first recording \
                 had `{}` of shape {:?} recorded at {}",
                i + 1,
                b.node.op.name(),
                &b.node.shape[..],
                b.node.site,
                a.node.op.name(),
                &a.node.shape[..],
                a.node.site
            ),
        });
    }
    if old.steps.len() != new.steps.len() {
        return Some(format!(
            "it records {} operations now where the first recording had {}",
            new.steps.len(),
            old.steps.len()
        ));
    }
    (old.outputs != new.outputs)
        .then(|| "its outputs come from other operations than the first recording's".into())
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
        let mut fe = self.front();
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

    /// Runs a code reuse section: replays it when its key is cached, else records it. `params`
    /// are the section's declared scalar parameters: `f` gets them as 0-dimensional arrays whose
    /// values are kernel parameters, so a replay computes with the values of its own call.
    #[allow(clippy::type_complexity)]
    pub fn reuse(
        &self,
        site: Site,
        name: &str,
        inputs: &[Handle],
        params: &[crate::ir::Scalar],
        controls: &[u64],
        f: &mut dyn FnMut(&[Handle], &[Handle]) -> Vec<Handle>,
    ) -> Result<Vec<Handle>> {
        let mut verify: Option<Arc<MacroEntry>> = None;
        let key = {
            let mut fe = self.front();
            let key = section_key(site, name, inputs, &fe.nodes, params, controls);
            if let Some(outer) = fe.sections.iter().find(|s| s.key == key) {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("this code reuse section is entered again while it is being recorded (first entered at {})", outer.site),
                )
                .at(site)
                .hint("sections may nest, but not recurse into themselves"));
            }
            if !fe.sections.is_empty() {
                // Nested: recorded into the outermost section (its parameters are constants of
                // the outermost section's code).
                fe.sections.push(Recording::new(key, site));
                drop(fe);
                let _guard = SectionGuard {
                    inner: self,
                    outermost: false,
                };
                let ps = parameters(params, site);
                let out = f(inputs, &ps);
                return Ok(out);
            }
            // Inputs must be stored, and earlier work flushed, before the section.
            let ids: Vec<NodeId> = inputs.iter().map(|h| h.id).collect();
            self.flush_for_section(&mut fe, &ids);
            let before = fe.macros.counts;
            let found = fe.macros.lookup(&key);
            let after = fe.macros.counts;
            self.add_macro_counts(&before, &after);
            if let Some(entry) = found {
                let replay = entry
                    .replays
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    + 1;
                let every = self.reuse_check.load(std::sync::atomic::Ordering::Relaxed);
                if !check_due(replay, every) {
                    return self.replay(&mut fe, &entry, inputs, params, site);
                }
                // The replay check: record again (the closure runs) and compare.
                verify = Some(entry);
            }
            fe.sections.push(Recording::new(key.clone(), site));
            fe.block_depth += 1;
            fe.section_owner = Some(std::thread::current().id());
            key
        };
        // Declared before the front end's lock below, so it gives the front end back after
        // that lock is released, whichever way this function returns.
        let _owner = OwnerGuard(self);
        let (outputs, rec, mut fe) = {
            let guard = SectionGuard {
                inner: self,
                outermost: true,
            };
            let ps = parameters(params, site);
            {
                let mut fe = self.front();
                let rec = fe.sections.last_mut().expect("the section being recorded");
                rec.params = ps.iter().map(|h| h.id).collect();
            }
            let outputs = f(inputs, &ps);
            // Taken before the section ends.
            let rec = {
                let mut fe = self.front();
                let rec = fe.sections.last_mut().expect("the section being recorded");
                std::mem::replace(rec, Recording::new(Vec::new(), site))
            };
            drop(ps);
            let mut fe = self.front();
            guard.end(&mut fe);
            (outputs, rec, fe)
        };
        fe.capture = Some(None);
        let out_ids: Vec<NodeId> = outputs.iter().map(|h| h.id).collect();
        let reference = reference_program(&fe, inputs, &out_ids, &rec);
        let changed = match (&verify, &reference) {
            (Some(entry), Some(new)) => entry
                .reference
                .as_ref()
                .and_then(|old| recording_difference(old, new)),
            _ => None,
        };
        // Store every output (and anything else still held): the section's results.
        self.flush_for_section(&mut fe, &out_ids);
        let generated = fe.capture.take().flatten();
        if let Some(e) = rec.violation {
            return Err(e);
        }
        if let Some(diff) = changed {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("this code reuse section records different code than when it was first recorded: {diff}; a replay would have computed with the first recording's values"),
            )
            .at(site)
            .hint("a value the closure captured changed (or a condition inside it): pass scalars that change as parameters (`Runtime::reuse_with`) and values that change what the closure does as control values"));
        }
        let Some((g, values, kernels)) = generated else {
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
        if verify.is_some() {
            // The check found nothing: the cached entry stays, and this call's results stand.
            return Ok(outputs);
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
                if let Some(i) = rec.params.iter().position(|p| p == id) {
                    srcs.push(ParamSource::Param(i));
                    continue;
                }
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
            replays: Default::default(),
            kernels,
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
}
