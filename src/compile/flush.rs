//! A flush: the whole work queue goes to the program generator; the sequence it returns is
//! instantiated on fresh buffers, the port table is updated (every processed node ends stored,
//! lazy or gone), and the instance goes to the hand-off (`handoff.rs`). Each flush is logged with
//! its reason and counted. When a flush happens is decided in `triggers.rs`.

use super::handoff::{Origin, Submission};
use super::state::{FrontEnd, Inner};
use super::work_queue::FlushReason;
use crate::counters::Counters;
use crate::exec::BufferId;
use crate::exec::HostDest;
use crate::ir::NodeId;
use crate::ir::NodeState;
use crate::proggen::liveness::StorePolicy;
use crate::proggen::{self, sequence::FormalRole, sequence::Kernel};
use ahash::AHashSet;
use std::sync::Arc;

/// Flushes the queue. `target` is the node a read or hint needs.
pub fn flush(rt: &Inner, fe: &mut FrontEnd, reason: FlushReason, target: Option<NodeId>) {
    flush_into(rt, fe, reason, target, None);
}

/// Flushes the queue for a read of `target` straight into the application's memory at `dest`.
/// Returns the buffer standing for that memory when the target's kernel writes it in place (wait
/// for it, then release it); `None` when the target had to be stored as usual.
pub fn flush_into(
    rt: &Inner,
    fe: &mut FrontEnd,
    reason: FlushReason,
    target: Option<NodeId>,
    dest: Option<HostDest>,
) -> Option<BufferId> {
    let entries = fe.queue.take();
    let start = std::time::Instant::now();
    Counters::add(&rt.counters.flushes[reason.index()], 1);
    let compare = rt.after_computation();
    let policy = StorePolicy {
        target,
        all_live: matches!(reason, FlushReason::Execute | FlushReason::Section),
        all_nodes: compare.is_some(),
    };
    let generated = generate_or_reuse(rt, fe, &entries, target, policy);
    let seq = generated.sequence.clone();

    // Instantiate: bind formals to buffers.
    let bindings = rt.bind_formals(
        &seq,
        generated
            .inputs
            .iter()
            .map(|&(f, id)| (f, fe.nodes[&id].buffer().expect("input node has a buffer"))),
    );
    // A read into the application's memory: the target's kernel writes there directly, unless
    // another program of this sequence reads the target (then it is stored as usual).
    let external = dest.and_then(|ptr| {
        let (f, id) = *generated
            .stored
            .iter()
            .find(|(_, id)| Some(*id) == target)?;
        let read_here = seq.programs.iter().any(|p| p.inputs.contains(&f));
        let element_wise = seq
            .programs
            .iter()
            .any(|p| p.outputs.contains(&f) && matches!(&*p.kernel, Kernel::Fused(_)));
        (!read_here && element_wise).then(|| {
            rt.sched.bind_external(bindings[f as usize], ptr);
            (id, bindings[f as usize])
        })
    });
    let external_node = external.map(|(id, _)| id);
    let params: Vec<Arc<[u64]>> = param_values(&generated, &fe.nodes)
        .into_iter()
        .map(Arc::from)
        .collect();
    // Stepping: keep the fused kernels with the nodes they compute, before the port table below
    // drops the intermediates.
    if rt.stepping() {
        rt.capture_kernels(fe, &generated, &bindings, &params);
    }
    // Comparison after computation: each stored result with a reference is checked once its
    // program has run (the read below keeps its buffer alive until then).
    let checks = match &compare {
        None => Vec::new(),
        Some(cfg) => rt.flush_checks(
            fe,
            cfg,
            generated
                .stored
                .iter()
                .filter(|(_, id)| Some(*id) != external_node)
                .map(|&(f, id)| (bindings[f as usize], id)),
        ),
    };
    let stored: AHashSet<NodeId> = generated
        .stored
        .iter()
        .map(|&(_, id)| id)
        .filter(|id| Some(*id) != external_node)
        .collect();
    for &(f, id) in &generated.stored {
        if Some(id) == external_node {
            continue;
        }
        if let Some(n) = fe.nodes.get_mut(&id) {
            n.state = NodeState::Stored(bindings[f as usize]);
        }
    }

    // Update the port table, last node first so each node's users are final when it is decided:
    // stored nodes and dropped nodes stop holding their inputs; a node the application holds, or
    // that a lazy node reads, stays lazy (pending, unqueued) and keeps holding its inputs.
    let mut gone = Vec::new();
    let mut outside = Vec::new();
    let processed: AHashSet<NodeId> = generated.processed.iter().copied().collect();
    for &id in generated.processed.iter().rev() {
        let n = &fe.nodes[&id];
        let lazy = !stored.contains(&id) && (!n.released || n.users > 0);
        if lazy {
            fe.nodes.get_mut(&id).unwrap().queued = false;
            continue;
        }
        let inputs = n.inputs.clone();
        for i in inputs {
            if let Some(input) = fe.nodes.get_mut(&i) {
                input.users -= 1;
                if !processed.contains(&i) {
                    outside.push(i);
                }
            }
        }
        let n = fe.nodes.get_mut(&id).unwrap();
        n.queued = false;
        n.lazy_cost = 0;
        if n.released && n.users == 0 {
            gone.push(id);
        }
    }
    for id in &generated.recomputed {
        if let Some(n) = fe.nodes.get_mut(id) {
            n.recomputed = true;
        }
    }
    let mut freed = Vec::new();
    for id in gone {
        if let Some(b) = fe.nodes.remove(&id).and_then(|n| n.buffer()) {
            freed.push(b);
        }
    }
    freed.extend(remove_unused(fe, outside));

    let kernels = seq
        .programs
        .iter()
        .filter(|p| matches!(&*p.kernel, Kernel::Fused(_)))
        .count();
    let intrinsics = seq.programs.len() - kernels;
    let instructions: usize = seq
        .programs
        .iter()
        .map(|p| match &*p.kernel {
            Kernel::Fused(k) => k.instrs.len(),
            Kernel::Intrinsic(_) => 0,
        })
        .sum();
    let random_values: usize = seq
        .programs
        .iter()
        .map(|p| match &*p.kernel {
            Kernel::Fused(k) => {
                let draws = k
                    .instrs
                    .iter()
                    .filter(|i| matches!(i, crate::proggen::kernel::Instr::Random { .. }))
                    .count();
                draws * k.domain.len()
            }
            Kernel::Intrinsic(_) => 0,
        })
        .sum();
    Counters::add(&rt.counters.random_values, random_values as u64);
    let temps = seq
        .formals
        .iter()
        .filter(|f| f.role == FormalRole::Temp)
        .count();
    Counters::add(&rt.counters.kernel_instructions, instructions as u64);
    Counters::add(&rt.counters.kernels_generated, kernels as u64);
    Counters::add(&rt.counters.intrinsics_generated, intrinsics as u64);
    Counters::add(&rt.counters.ops_eliminated, generated.eliminated as u64);
    Counters::add(&rt.counters.temporaries, temps as u64);
    tracing::debug!(
        target: "arrayflow::jit",
        %reason,
        entries = entries.len(),
        kernels,
        intrinsics,
        eliminated = generated.eliminated,
        temporaries = temps,
        micros = start.elapsed().as_micros() as u64,
        "flush"
    );

    if tracing::enabled!(target: "arrayflow::jit", tracing::Level::TRACE) {
        tracing::trace!(target: "arrayflow::jit", "{}", seq.describe());
    }
    *rt.last_sequence.lock() = Some(seq.clone());
    let flush_ns = start.elapsed().as_nanos() as u64;
    Counters::add(&rt.counters.flush_ns, flush_ns);
    if crate::profile::active() {
        crate::profile::runtime_took("flush", reason.name(), start, flush_ns);
    }
    rt.hand_off(Submission {
        origin: Origin::Flush(reason),
        seq,
        bindings,
        params,
        checks,
        release: freed,
        started: start,
        pin: None,
    });
    // Watchpoints on the arrays this flush computes, stored or not (the debugger's hook, when
    // registered).
    if super::observe::hooked() {
        let computed: Vec<NodeId> = generated
            .stored
            .iter()
            .map(|&(_, id)| id)
            .chain(generated.recomputed.iter().copied())
            .collect();
        super::observe::computed(&computed);
    }
    external.map(|(_, b)| b)
}

/// The program generator, timed for the profiler.
fn generate(
    nodes: &crate::ir::NodeTable,
    entries: &[super::Entry],
    config: &proggen::GenConfig,
    policy: StorePolicy,
) -> proggen::Generated {
    let t0 = crate::profile::now();
    let g = proggen::generate(nodes, entries, config, policy);
    if let Some(t0) = t0 {
        crate::profile::runtime("generate", "", None, t0, 0, None);
    }
    g
}

/// The program sequence for the queue: from the trace cache when its key is there, else from the
/// program generator (and then inserted). Clears the key.
fn generate_or_reuse(
    rt: &Inner,
    fe: &mut FrontEnd,
    entries: &[super::Entry],
    target: Option<NodeId>,
    policy: StorePolicy,
) -> proggen::Generated {
    use super::trace_cache::CachedTrace;
    use std::sync::atomic::Ordering::Relaxed;
    if fe.capture.is_some() {
        // A code reuse section's final flush: generate, and keep the result for the macro cache.
        Counters::add(&rt.counters.sequences_generated, 1);
        let g = generate(&fe.nodes, entries, &rt.gen_config, policy);
        let values = param_values(&g, &fe.nodes);
        let kernels = super::macro_cache::SectionKernels::of(fe, &g);
        fe.capture = Some(Some((g.clone(), values, kernels)));
        fe.key.clear();
        return g;
    }
    fe.traces.tick();
    // An assertion's bounds and message are not in the key: flushes skip the trace cache once
    // assertions exist (`crate::debug::trap`).
    let enabled = rt.trace_cache_on.load(Relaxed)
        && fe.key.first_site.is_some()
        && !fe.key.disabled
        && !crate::debug::trap::assertions::any();
    let generated = if enabled {
        // Trap checks change kernels: the configuration's fingerprint (0 when off) is in the key.
        let key = fe.key.finish(
            &fe.nodes,
            target,
            (policy.all_live as u64 | (policy.all_nodes as u64) << 1)
                ^ (crate::debug::trap::fingerprint() & !3),
        );
        let site = fe
            .key
            .first_site
            .map_or(0, |s| s as *const _ as *const () as usize as u64);
        let before = fe.traces.counts;
        let generated = match fe.traces.lookup(site, &key) {
            Some(trace) => trace.instantiate(&fe.key),
            None => {
                Counters::add(&rt.counters.sequences_generated, 1);
                let g = generate(&fe.nodes, entries, &rt.gen_config, policy);
                if let Some(t) = CachedTrace::from_generated(&g, &fe.key) {
                    fe.traces.insert(site, key, Arc::new(t));
                }
                g
            }
        };
        let after = fe.traces.counts;
        if crate::profile::active() {
            // The look-up's own time, ending now.
            let took = std::time::Duration::from_nanos(after.lookup_ns - before.lookup_ns);
            let at = std::time::Instant::now() - took;
            let hit = Some(after.hits > before.hits);
            crate::profile::runtime("trace_lookup", "", hit, at, 0, fe.key.first_site);
        }
        let c = &rt.counters;
        Counters::add(&c.trace_hits, after.hits - before.hits);
        Counters::add(&c.trace_misses, after.misses - before.misses);
        Counters::add(&c.trace_insertions, after.insertions - before.insertions);
        Counters::add(&c.trace_evictions, after.evictions - before.evictions);
        Counters::add(&c.trace_lookup_ns, after.lookup_ns - before.lookup_ns);
        generated
    } else {
        Counters::add(&rt.counters.sequences_generated, 1);
        generate(&fe.nodes, entries, &rt.gen_config, policy)
    };
    fe.key.clear();
    generated
}

/// Each program's parameter values (constants, random streams), from the nodes that supply them.
fn param_values(g: &proggen::Generated, nodes: &crate::ir::NodeTable) -> Vec<Vec<u64>> {
    g.sequence
        .programs
        .iter()
        .zip(&g.params)
        .map(|(p, ids)| match &*p.kernel {
            Kernel::Fused(k) => k
                .params
                .iter()
                .zip(ids)
                .map(|(kind, id)| kind.value(&nodes[id].op))
                .collect(),
            Kernel::Intrinsic(_) => Vec::new(),
        })
        .collect()
}

/// Removes nodes the application dropped and nothing reads any more, and then, transitively, the
/// inputs only they were holding. Returns the buffers to release.
pub fn remove_unused(fe: &mut FrontEnd, candidates: Vec<NodeId>) -> Vec<BufferId> {
    let mut freed = Vec::new();
    let mut stack = candidates;
    while let Some(id) = stack.pop() {
        let Some(n) = fe.nodes.get(&id) else { continue };
        if !(n.released && n.users == 0 && !n.queued) {
            continue;
        }
        let n = fe.nodes.remove(&id).unwrap();
        if let Some(b) = n.buffer() {
            freed.push(b);
        }
        if n.is_pending() {
            // A lazy node held its inputs.
            for i in n.inputs {
                if let Some(input) = fe.nodes.get_mut(&i) {
                    input.users -= 1;
                    stack.push(i);
                }
            }
        }
    }
    freed
}
