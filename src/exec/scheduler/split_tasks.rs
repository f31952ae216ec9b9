//! The scheduler's side of a split launch (issue 25, seed 002): a fused kernel the split mode
//! splits becomes one part task per executor of the plan (`exec::split`), each running
//! `proggen::part`'s kernel over its rows into outputs of its own, and one `Concat` task per
//! output that joins the parts, in order along dimension 0, into the kernel's output buffer on
//! the executor of the largest part (its *home*). Every other part's outputs move there.
//!
//! **Slices.** A part that reads a contiguous range of an input smaller than the input, on an
//! executor that does not hold it, reads a *slice*: a buffer of its own holding just that range
//! (the hull of the access analysis's read set, `proggen::access`), filled once the input is
//! written: the input's holder exports it and the slice alone moves (and is counted, per
//! executor, in `bytes_in` / `bytes_out`). Inputs read through folded maps (roll, pad), read whole
//! or data-dependently move whole, as for an unsplit task. A slice holds its input until it is
//! filled (a use), and is released from the start: it is freed after its part.
//!
//! A kernel whose output is bound to the application's memory (a large read into the caller's
//! slice) runs whole: the kernel writes there itself, a join could not.

use super::{BufState, SchedulerLoop, Status, Task, bit};
use crate::counters::Counters;
use crate::error::Error;
use crate::exec::split::SplitMode;
use crate::ir::{BufferId, Intrinsic, TypedVec};
use crate::proggen::part;
use crate::proggen::sequence::{IntrinsicCall, Kernel, LaunchSpec, Program};
use std::ops::Range;
use std::sync::Arc;

/// A slice buffer: the range of `src` it holds, and whether its export was asked for.
pub(super) struct Slice {
    pub src: BufferId,
    pub range: Range<usize>,
    pub started: bool,
}

/// What [`SchedulerLoop::submit_split`] did with a program.
pub(super) enum Outcome {
    /// Not split: route it as usual.
    Whole,
    /// The plan gives every row to one executor (a ratio of 0 or 1): run it whole there.
    On(usize),
    /// Split: its part and join tasks are submitted.
    Split,
}

/// `v[range]` as a vector of its own.
fn slice_of(v: &TypedVec, r: Range<usize>) -> TypedVec {
    match v {
        TypedVec::F32(x) => TypedVec::F32(x[r].to_vec()),
        TypedVec::F64(x) => TypedVec::F64(x[r].to_vec()),
        TypedVec::I32(x) => TypedVec::I32(x[r].to_vec()),
        TypedVec::U32(x) => TypedVec::U32(x[r].to_vec()),
        TypedVec::Bool(x) => TypedVec::Bool(x[r].to_vec()),
        TypedVec::C64(x) => TypedVec::C64(x[r].to_vec()),
        TypedVec::C128(x) => TypedVec::C128(x[r].to_vec()),
    }
}

impl SchedulerLoop {
    /// A new buffer the scheduler owns, released from the start (freed after its last use).
    fn scheduler_buffer(&mut self) -> BufferId {
        let b = BufferId(
            self.next_buffer
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let mut s = BufState::new(Status::Unwritten, 0);
        s.released = true;
        self.buffers.insert(b, s);
        b
    }

    /// Whether `exec` holds `b` (or will: its program runs there), so a part there reads it
    /// without a move.
    fn will_hold(&self, b: BufferId, exec: usize) -> bool {
        match self.buffers.get(&b) {
            None => true,
            Some(s) => match s.status {
                Status::Ready => s.on & bit(exec) != 0,
                Status::InFlight(e) => e == exec,
                Status::Unwritten => self.homes.get(&b) == Some(&exec),
                Status::Invalid(_) => true,
            },
        }
    }

    /// Splits program `pi` of `inst` by `mode` where it can (see the module comment).
    pub(super) fn submit_split(
        &mut self,
        inst: &super::Instance,
        pi: usize,
        mode: SplitMode,
        since: u64,
        batch: &mut Vec<Task>,
    ) -> Outcome {
        let program = &inst.seq.programs[pi];
        let Kernel::Fused(k) = &*program.kernel else {
            return Outcome::Whole;
        };
        let Some(rows) = part::rows(k) else {
            return Outcome::Whole;
        };
        let Some(splitter) = &self.splitter else {
            return Outcome::Whole;
        };
        let allowed = self.allowed(program);
        let plan = splitter.plan(mode, allowed, k.domain.len());
        if plan.len() < 2 {
            return Outcome::Whole;
        }
        let row_len = part::row_len(k);
        let shares: Vec<f64> = plan.iter().map(|p| p.1).collect();
        let parts: Vec<(usize, Range<usize>)> = plan
            .iter()
            .map(|p| p.0)
            .zip(part::cut_points(rows, part::align_rows(row_len), &shares))
            .filter(|(_, r)| !r.is_empty())
            .collect();
        if parts.len() == 1 {
            Counters::add(&self.counters.exec_parts[parts[0].0], 1);
            return Outcome::On(parts[0].0);
        }
        let formals = &inst.seq.formals;
        let buf = |f: &u32| inst.bindings[*f as usize];
        // An output bound to the application's memory (a large read) is written by the kernel
        // itself; a join (an intrinsic) cannot write there: run it whole.
        let external = |f: &u32| {
            self.buffers
                .get(&buf(f))
                .is_some_and(|s| s.external.is_some())
        };
        if program.outputs.iter().any(external) {
            return Outcome::Whole;
        }
        Counters::add(&self.counters.split_launches, 1);
        let in_bufs: Vec<BufferId> = program.inputs.iter().map(buf).collect();
        let in_lens: Vec<usize> = program
            .inputs
            .iter()
            .map(|&f| formals[f as usize].len)
            .collect();
        let out_bufs: Vec<BufferId> = program.outputs.iter().map(buf).collect();
        // Elements of one row of each output (a reduction's: its results per row).
        let out_row: Vec<usize> = (0..k.outputs.len())
            .map(|o| {
                if k.reductions.iter().any(|r| r.output as usize == o) {
                    k.domain.outer / rows
                } else {
                    row_len
                }
            })
            .collect();
        let profiling = crate::profile::active();
        let mut part_outs: Vec<Vec<BufferId>> = vec![Vec::new(); out_bufs.len()];
        for (n, (exec, range)) in parts.iter().enumerate() {
            let exec = *exec;
            let reads = part::read_ranges(k, range.clone(), &in_lens);
            let mut inputs = Vec::with_capacity(in_bufs.len());
            let mut bases = Vec::with_capacity(in_bufs.len());
            let mut in_bytes = 0u64;
            for (i, &src) in in_bufs.iter().enumerate() {
                let size = k.inputs[i].size() as u64;
                match &reads[i] {
                    Some(r) if !self.will_hold(src, exec) => {
                        let a = self.scheduler_buffer();
                        self.buffers
                            .entry(src)
                            .or_insert_with(|| BufState::new(Status::Unwritten, 0))
                            .uses += 1;
                        self.slices.insert(
                            a,
                            Slice {
                                src,
                                range: r.clone(),
                                started: false,
                            },
                        );
                        in_bytes += r.len() as u64 * size;
                        inputs.push(a);
                        bases.push(r.start);
                    }
                    _ => {
                        in_bytes += in_lens[i] as u64 * size;
                        inputs.push(src);
                        bases.push(0);
                    }
                }
            }
            let outputs: Vec<BufferId> = (0..out_bufs.len())
                .map(|o| {
                    let b = self.scheduler_buffer();
                    part_outs[o].push(b);
                    b
                })
                .collect();
            let pk = part::part_kernel(k, range.clone(), &bases);
            let len = pk.domain.len();
            let out_bytes: u64 = (0..out_bufs.len())
                .map(|o| (range.len() * out_row[o] * k.outputs[o].size()) as u64)
                .sum();
            let tile = program.launch.tile.max(1);
            let task = Task {
                id: 0,
                exec,
                program: Program {
                    kernel: Arc::new(Kernel::Fused(pk)),
                    inputs: program.inputs.clone(),
                    outputs: program.outputs.clone(),
                    launch: LaunchSpec {
                        domain_len: len,
                        tile,
                        tiles: len.div_ceil(tile),
                        final_stage: program.launch.final_stage,
                    },
                    executor: program.executor,
                    sites: program.sites.clone(),
                },
                params: inst.params[pi].clone(),
                inputs,
                outputs,
                started: inst.started,
                free_after: Vec::new(),
                bytes: if profiling {
                    [in_bytes, out_bytes]
                } else {
                    [0, 0]
                },
            };
            let fraction = |b: u64| b * range.len() as u64 / rows as u64;
            let counted = n == 0;
            self.submit_part(task, exec, since, counted, batch, |f| {
                fraction((formals[f as usize].len * formals[f as usize].dtype.size()) as u64)
            });
            Counters::add(&self.counters.exec_parts[exec], 1);
        }
        // The join, on the executor of the largest part (the first of equals).
        let home = parts
            .iter()
            .rev()
            .max_by_key(|(_, r)| r.len())
            .map(|p| p.0)
            .expect("two parts or more");
        for (o, &out) in out_bufs.iter().enumerate() {
            let dtype = k.outputs[o];
            let call = IntrinsicCall {
                op: Intrinsic::Concat { axis: 0 },
                in_shapes: parts
                    .iter()
                    .map(|(_, r)| smallvec::smallvec![r.len(), out_row[o]])
                    .collect(),
                in_dtypes: vec![dtype; parts.len()],
                out_shape: smallvec::smallvec![rows, out_row[o]],
                dtype,
            };
            let len = rows * out_row[o];
            let bytes = (len * dtype.size()) as u64;
            let task = Task {
                id: 0,
                exec: home,
                program: Program {
                    kernel: Arc::new(Kernel::Intrinsic(call)),
                    inputs: vec![program.outputs[o]; parts.len()],
                    outputs: vec![program.outputs[o]],
                    launch: LaunchSpec {
                        domain_len: len,
                        tile: len.max(1),
                        tiles: 1,
                        final_stage: false,
                    },
                    executor: program.executor,
                    sites: program.sites.clone(),
                },
                params: Arc::from([]),
                inputs: part_outs[o].clone(),
                outputs: vec![out],
                started: inst.started,
                free_after: Vec::new(),
                bytes: if profiling { [bytes, bytes] } else { [0, 0] },
            };
            self.homes.insert(out, home);
            let n = parts.len() as u64;
            self.submit_part(task, home, since, false, batch, |_| bytes / n);
        }
        Outcome::Split
    }

    /// Routes (pinned to `exec`), records and launches one task of a split. `counted`: it counts
    /// as the program's launch in the kernel counters (the first part; the others and the joins
    /// do not, so a split launch counts as one kernel).
    fn submit_part(
        &mut self,
        mut task: Task,
        exec: usize,
        since: u64,
        counted: bool,
        batch: &mut Vec<Task>,
        bytes_of: impl Fn(crate::proggen::sequence::FormalId) -> u64,
    ) {
        let id = self.next_task;
        self.next_task += 1;
        task.id = id;
        task.exec = self.route(&task, Some(exec), bytes_of);
        for &b in task.inputs.iter().chain(&task.outputs) {
            self.buffers
                .entry(b)
                .or_insert_with(|| BufState::new(Status::Unwritten, 0))
                .uses += 1;
        }
        if task.exec != 0 {
            Counters::add(&self.counters.device.scheduled_ns, since);
        }
        if !counted {
            self.uncounted.insert(id);
        }
        self.tasks.insert(id, task);
        self.launch(id, batch);
    }

    /// Before a task with slice inputs launches: starts the export of each slice whose input is
    /// written. `Err(b)`: the task waits for buffer `b` (an input of a slice not yet written);
    /// `Ok(Some(e))`: a slice's input failed with `e`.
    pub(super) fn fill_slices(&mut self, id: u64) -> Result<Option<Error>, BufferId> {
        let exec = self.tasks[&id].exec;
        let inputs = self.tasks[&id].inputs.clone();
        for a in inputs {
            let Some(sl) = self.slices.get(&a) else {
                continue;
            };
            if sl.started {
                continue;
            }
            let src = sl.src;
            let Some(s) = self.buffers.get(&src) else {
                continue;
            };
            match &s.status {
                Status::Invalid(e) => {
                    let e = e.clone();
                    self.drop_slice(a);
                    let mut batch = Vec::new();
                    self.set_status(a, Status::Invalid(e.clone()), &mut batch);
                    self.dispatch(batch);
                    return Ok(Some(e));
                }
                Status::Unwritten | Status::InFlight(_) => return Err(src),
                Status::Ready => {
                    let (on, moving) = (s.on, s.moving);
                    self.slices.get_mut(&a).expect("listed").started = true;
                    let key = (src, exec);
                    let waiting = self.slice_wait.contains_key(&key);
                    self.slice_wait.entry(key).or_default().push(a);
                    // One export serves every slice of `src` for `exec` and a whole move there.
                    if !waiting && moving & bit(exec) == 0 {
                        let from = super::holder(on);
                        self.slice_from.insert(key, from);
                        self.send_exec(from, super::ExecMsg::Export { buf: src, to: exec });
                    }
                }
            }
        }
        Ok(None)
    }

    /// A slice is no longer wanted (freed, or its input failed): its hold on the input ends.
    pub(super) fn drop_slice(&mut self, a: BufferId) {
        if let Some(sl) = self.slices.remove(&a)
            && let Some(s) = self.buffers.get_mut(&sl.src)
        {
            s.uses = s.uses.saturating_sub(1);
            self.maybe_free(sl.src);
        }
    }

    /// `src`'s data exported for executor `to` arrived: fills the slices waiting for it. Returns
    /// whether any did (the export was theirs).
    pub(super) fn serve_slices(
        &mut self,
        src: BufferId,
        to: usize,
        data: &crate::error::Result<Arc<TypedVec>>,
    ) -> bool {
        let Some(slices) = self.slice_wait.remove(&(src, to)) else {
            return false;
        };
        let from = self
            .slice_from
            .remove(&(src, to))
            .or_else(|| self.move_from.get(&(src, to)).copied())
            .unwrap_or(0);
        let mut batch = Vec::new();
        for a in slices {
            let Some(sl) = self.slices.get(&a) else {
                continue;
            };
            let range = sl.range.clone();
            match data {
                Ok(d) => {
                    let v = slice_of(d, range.start.min(d.len())..range.end.min(d.len()));
                    let bytes = v.bytes() as u64;
                    if from != to {
                        Counters::add(&self.counters.exec_bytes_out[from], bytes);
                        Counters::add(&self.counters.exec_bytes_in[to], bytes);
                        let dir = if to == 0 {
                            &self.counters.device.bytes_from_device
                        } else {
                            &self.counters.device.bytes_to_device
                        };
                        Counters::add(dir, bytes);
                    }
                    if let Some(s) = self.buffers.get_mut(&a) {
                        s.on = bit(to);
                    }
                    self.send_exec(
                        to,
                        super::ExecMsg::MoveDataIn {
                            buf: a,
                            data: Arc::new(v),
                        },
                    );
                    self.set_status(a, Status::Ready, &mut batch);
                }
                Err(e) => self.set_status(a, Status::Invalid(e.clone()), &mut batch),
            }
            self.drop_slice(a);
            self.maybe_free(a);
        }
        self.dispatch(batch);
        self.maybe_free(src);
        self.release_barriers();
        true
    }
}
