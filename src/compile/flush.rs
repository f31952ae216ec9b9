//! A flush: the whole work queue goes to the program generator; the sequence it returns is
//! instantiated on fresh buffers, the port table is updated (stored, fused and dead nodes), and
//! the instance goes to the execution scheduler. Each flush is logged with its reason and counted.

use super::work_queue::FlushReason;
use crate::exec::{BufferId, Instance};
use crate::frontend::NodeState;
use crate::proggen::{self, sequence::FormalRole, sequence::Kernel};
use crate::runtime::stats::Counters;
use crate::runtime::{FrontEnd, Inner};
use std::sync::Arc;

pub fn flush(rt: &Inner, fe: &mut FrontEnd, reason: FlushReason) {
    let entries = fe.queue.take();
    let start = std::time::Instant::now();
    Counters::add(&rt.counters.flushes[reason.index()], 1);
    let generated = proggen::generate(&fe.nodes, &entries, &rt.gen_config);
    let seq = generated.sequence;

    // Instantiate: bind formals to buffers.
    let mut bindings = vec![BufferId(0); seq.formals.len()];
    let mut temps = Vec::new();
    for (f, formal) in seq.formals.iter().enumerate() {
        if formal.role != FormalRole::Input {
            bindings[f] = rt.sched.new_buffer();
        }
        if formal.role == FormalRole::Temp {
            temps.push(bindings[f]);
        }
    }
    for &(f, id) in &generated.inputs {
        bindings[f as usize] = fe.nodes[&id].buffer().expect("input node has a buffer");
    }
    for &(f, id) in &generated.outputs {
        if let Some(n) = fe.nodes.get_mut(&id) {
            n.state = NodeState::Stored(bindings[f as usize]);
        }
    }

    // Update the port table: processed nodes no longer read their inputs; fused, dead and
    // temporary nodes leave the table; inputs nobody holds any more free their buffers.
    let mut touched = Vec::new();
    for id in &generated.processed {
        let inputs = fe.nodes[id].inputs.clone();
        for i in inputs {
            if let Some(n) = fe.nodes.get_mut(&i) {
                n.users -= 1;
                touched.push(i);
            }
        }
    }
    for id in &generated.processed {
        if fe.nodes[id].released {
            fe.nodes.remove(id);
        } else if let Some(n) = fe.nodes.get_mut(id) {
            n.queued = false;
        }
    }
    let mut freed = Vec::new();
    for id in touched {
        let gone = fe.nodes.get(&id).is_some_and(|n| n.released && n.users == 0 && !n.queued);
        if gone && let Some(b) = fe.nodes.remove(&id).and_then(|n| n.buffer()) {
            freed.push(b);
        }
    }

    let kernels = seq.programs.iter().filter(|p| matches!(&*p.kernel, Kernel::Fused(_))).count();
    let intrinsics = seq.programs.len() - kernels;
    let instructions: usize = seq
        .programs
        .iter()
        .map(|p| match &*p.kernel {
            Kernel::Fused(k) => k.instrs.len(),
            Kernel::Intrinsic(_) => 0,
        })
        .sum();
    Counters::add(&rt.counters.kernel_instructions, instructions as u64);
    Counters::add(&rt.counters.sequences_generated, 1);
    Counters::add(&rt.counters.kernels_generated, kernels as u64);
    Counters::add(&rt.counters.intrinsics_generated, intrinsics as u64);
    Counters::add(&rt.counters.ops_eliminated, generated.eliminated as u64);
    Counters::add(&rt.counters.temporaries, temps.len() as u64);
    tracing::debug!(
        target: "arrayflow::jit",
        %reason,
        entries = entries.len(),
        kernels,
        intrinsics,
        eliminated = generated.eliminated,
        temporaries = temps.len(),
        micros = start.elapsed().as_micros() as u64,
        "flush"
    );

    let seq = Arc::new(seq);
    if tracing::enabled!(target: "arrayflow::jit", tracing::Level::TRACE) {
        tracing::trace!(target: "arrayflow::jit", "{}", seq.describe());
    }
    *rt.last_sequence.lock() = Some(seq.clone());
    if !seq.programs.is_empty() {
        rt.flow.acquire(seq.programs.len());
        rt.sched.submit(Instance { seq, bindings });
    }
    for b in temps.into_iter().chain(freed) {
        rt.sched.release(b);
    }
}
