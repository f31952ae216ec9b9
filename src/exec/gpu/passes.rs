//! Launches in resumable passes on a device executor (issue 24, `TrapConfig::passes`; the CPU
//! executor's are in `exec/cpu/suspend.rs`). An element-wise kernel with trap checks whose device
//! plan is one ranged step keeping the first-failing word ([`GpuPlan::range`],
//! [`GpuPlan::first_word`]) runs on the device pass by pass: each pass is one dispatch of the same
//! compiled program over its range of elements (the CPU's cut, [`Geometry`]), after which the
//! executor waits for the fault words. A pass that traps stops the launch: the CPU tile VM runs
//! the device's element's tile for its value (`device_trap.rs`), the trap is recorded with its
//! pass and `suspended`, and the launch stays suspended here with its output and scratch buffers
//! ([`Suspensions`]): its results read as the trap, tasks sent here that read them wait (in
//! order), the frees of buffers they need are held back, other work goes on, and
//! `Runtime::resume` ([`GpuLoop::resume`]) runs the passes left into the same buffers, so the
//! results equal one launch's bit for bit.
//!
//! A kernel with reductions runs in passes the same way over its first pass's work-group slots
//! ([`GpuPlan::range`]): each slot's partials or results are its own, whichever dispatch runs
//! it, so the passes give one launch's bits; its final pass (combining chunk partials) runs once,
//! after the last. Its passes are cut at whole slots (or results, or blocks of results), about
//! the pass size's elements each, each a run of elements in order, so the first failing element
//! is the same as on the CPU, though the pass numbers are the device's own.
//!
//! What passes cannot cut simply on the device runs in passes on the CPU tile VM here instead,
//! from host copies, and suspends the same way: a split kernel (its halves number their checks
//! apart), a kernel the device does not run, one whose keys do not fit the first-failing word,
//! and a pass whose fault is not a trap the CPU confirms (integer division by zero: the CPU's run
//! gives the exact error).

use super::plans::DevicePlan;
use super::{DeviceApi, GpuLoop, Held, HostSlice, device_error, enqueue_download, fallback};
use crate::counters::Counters;
use crate::debug::trap::passes::{Geometry, Progress};
use crate::debug::trap::{codegen::TRAP_FAULT, device, report};
use crate::error::{Error, ErrorKind};
use crate::exec::cpu::vm;
use crate::exec::scheduler::{SchedMsg, Task};
use crate::exec::{BufferId, TypedVec};
use crate::ir::DType;
use crate::proggen::codegen::gpu::GpuPlan;
use crate::proggen::sequence::Kernel;
use std::sync::Arc;

/// Where a suspended launch's work is.
pub(super) enum Work<B, P> {
    /// On the device: its plan, its buffers (outputs written up to the pass that trapped), its
    /// passes (cut when it started, whatever the pass size when it resumes), the next one and
    /// the host's time in those run.
    Device {
        plan: Arc<DevicePlan<P>>,
        held: Held<B>,
        geo: Geometry,
        next: usize,
        ns: u64,
    },
    /// On the CPU tile VM, from host copies of its inputs.
    Host {
        inputs: Vec<Arc<TypedVec>>,
        outputs: Vec<TypedVec>,
        progress: Progress,
    },
}

/// One suspended launch.
pub(super) struct Suspended<B, P> {
    task: Task,
    work: Work<B, P>,
}

/// The executor's suspended launches and what waits for them.
pub(super) struct Suspensions<B, P> {
    launches: Vec<Suspended<B, P>>,
    /// Tasks that read a suspended (or waiting) task's results, in arrival order.
    waiting: Vec<Task>,
    /// Frees of buffers a suspended or waiting task still needs.
    frees: Vec<BufferId>,
}

impl<B, P> Default for Suspensions<B, P> {
    fn default() -> Self {
        Suspensions {
            launches: Vec::new(),
            waiting: Vec::new(),
            frees: Vec::new(),
        }
    }
}

impl<B, P> Suspensions<B, P> {
    /// Whether `b` is a result not yet computed because of a suspension.
    fn pending(&self, b: BufferId) -> bool {
        self.launches.iter().any(|s| s.task.outputs.contains(&b))
            || self.waiting.iter().any(|t| t.outputs.contains(&b))
    }
    /// Whether a suspended or waiting task still needs `b`.
    fn needs(&self, b: BufferId) -> bool {
        self.pending(b)
            || self.waiting.iter().any(|t| t.inputs.contains(&b))
            || self.launches.iter().any(|s| s.task.inputs.contains(&b))
    }
    /// Whether anything is suspended.
    pub fn any(&self) -> bool {
        !self.launches.is_empty() || !self.waiting.is_empty()
    }
}

/// Whether a device plan runs in passes on the device: one ranged step keeping the first-failing
/// word, not a hand-written intrinsic.
fn on_device<P>(plan: &DevicePlan<P>) -> bool {
    matches!(&plan.steps[..], [s] if s.plan.range.is_some() && s.plan.first_word())
        && !plan.intrinsic
}

/// The passes of `task`'s launch under the configured pass size, in the units of its plan's range
/// (`plan`): an element-wise kernel's elements, cut as the CPU cuts them (whole tiles per pass),
/// so a trap names the same pass on every executor; a reduction's work-group slots (or results),
/// whole aligned runs of them of about the pass size's elements each, so its passes are the
/// device's own (each a run of elements in order: the trap's element is the CPU's).
fn geometry(task: &Task, plan: &GpuPlan, pass_elements: usize) -> Geometry {
    let r = plan.range.expect("a plan run in passes is ranged");
    // An element-wise kernel's units are its elements (`r.elements` is 1): whole CPU tiles.
    let align = match &*task.program.kernel {
        Kernel::Fused(k) if k.reductions.is_empty() => task.program.launch.tile,
        _ => r.align as usize,
    };
    Geometry::new(
        r.units as usize,
        align,
        pass_elements.div_ceil(r.elements as usize),
    )
}

/// The configured pass size (on the tile VM, a launch suspended when passes were on resumes in
/// passes of the size in force now, or one pass when they were turned off).
fn pass_elements() -> usize {
    crate::debug::trap::current()
        .and_then(|c| c.pass_elements)
        .unwrap_or(usize::MAX / 2)
}

impl<A: DeviceApi> GpuLoop<A> {
    /// Whether `task` must wait for a suspended launch; if so it waits (its results reading as
    /// the suspension's error) and the scheduler is told.
    pub(super) fn waits_for_suspended(&mut self, task: &Task) -> bool {
        let Some(&b) = (self.suspend.any())
            .then(|| task.inputs.iter().find(|&&b| self.suspend.pending(b)))
            .flatten()
        else {
            return false;
        };
        let e =
            self.failed.get(&b).cloned().unwrap_or_else(|| {
                Error::new(ErrorKind::Trap, "waits for a launch a trap suspended")
            });
        for &o in &task.outputs {
            self.failed.insert(o, e.clone());
        }
        self.suspend.waiting.push(task.clone());
        let _ = self.sched.send(SchedMsg::Suspended {
            task: task.id,
            error: Some(e),
        });
        true
    }

    /// Whether a free of `buf` waits until a suspended launch no longer needs it (then it is
    /// held back).
    pub(super) fn free_held_back(&mut self, buf: BufferId) -> bool {
        if self.suspend.any() && self.suspend.needs(buf) {
            self.suspend.frees.push(buf);
            return true;
        }
        false
    }

    /// Runs a checked element-wise task in passes: on the device where its plan allows
    /// (`plan`), else on the CPU tile VM here.
    pub(super) fn run_in_passes(&mut self, task: Task, plan: Option<Arc<DevicePlan<A::Program>>>) {
        let Some(plan) = plan.filter(|p| on_device(p)) else {
            return self.host_passes(task, None);
        };
        let keep: Vec<BufferId> = task.inputs.iter().chain(&task.outputs).copied().collect();
        let mut held = Held::default();
        let ready = task
            .inputs
            .iter()
            .try_for_each(|&b| self.resident(b, &keep))
            .and_then(|()| self.allocate(&task, &plan, &keep, &mut held));
        if let Err(e) = ready {
            self.give_back(held);
            tracing::warn!(target: "arrayflow::exec",
                "device could not run a launch in passes ({e}); it runs on the CPU");
            return self.host_passes(task, None);
        }
        // One kernel, however many passes (`dispatches` counts those).
        Counters::add(&self.counters.device.kernels, 1);
        let geo = geometry(&task, &plan.steps[0].plan, pass_elements());
        self.device_passes(task, plan, held, geo, 0, 0);
    }

    /// Runs the passes of a device launch from pass `next` on (the host's time in those before:
    /// `ns`): to the end, or to the pass that traps (the launch is then suspended). Each pass is
    /// timed by the host from its enqueue to its fault words' arrival.
    fn device_passes(
        &mut self,
        task: Task,
        plan: Arc<DevicePlan<A::Program>>,
        held: Held<A::Buf>,
        geo: Geometry,
        next: usize,
        mut ns: u64,
    ) {
        for p in next..geo.passes {
            let (first, end) = geo.range(p);
            let t0 = std::time::Instant::now();
            let words = self
                .enqueue(&task, &plan, &held, Some((first as u64, end as u64)))
                .and_then(|()| self.fault_words(&plan.steps[0].plan, &held));
            let pass_ns = t0.elapsed().as_nanos() as u64;
            ns += pass_ns;
            if crate::profile::active() {
                crate::profile::runtime_took("pass", "device", t0, pass_ns);
            }
            let words = match words {
                Ok(w) => w,
                Err(e) => {
                    self.give_back(held);
                    let e = device_error(format!("a launch in passes failed: {e}"));
                    return self.finish_now(&task, Err(e));
                }
            };
            if words[0] == 0 {
                continue;
            }
            match self.pass_trap(&task, words, p, geo.passes) {
                Some(Ok(e)) => {
                    let work = Work::Device {
                        plan,
                        held,
                        geo,
                        next: p + 1,
                        ns,
                    };
                    return self.suspend_launch(task, work, e);
                }
                Some(Err(e)) => {
                    self.give_back(held);
                    return self.finish_now(&task, Err(e));
                }
                // Not a trap the CPU confirms: the CPU runs the launch for the exact error.
                None => {
                    self.give_back(held);
                    return self.host_passes(task, None);
                }
            }
        }
        self.finish_device_passes(task, held, ns);
    }

    /// Waits for the fault buffer's words after a pass (and zeroes them for the next).
    fn fault_words(&mut self, plan: &GpuPlan, held: &Held<A::Buf>) -> Result<[u32; 2], String> {
        let f = plan.fault.expect("a checked kernel has a fault word") as usize;
        let (buf, _) = held.scratch[0][f]
            .as_ref()
            .expect("the fault word is allocated");
        let mut cell = Box::new([0u32; 2]);
        let slice = HostSlice {
            ptr: cell.as_mut_ptr() as *mut u8,
            dtype: DType::U32,
            len: 2,
        };
        let arrived = enqueue_download(&mut self.api, buf, slice);
        self.wait_download(arrived)?;
        Ok(*cell)
    }

    /// The trap of pass `pass` (of `passes`) whose fault words are `words`, recorded, confirmed by
    /// the CPU tile VM running the device's element's tile; `None` when the words are not a
    /// trap the CPU confirms; `Some(Err)` when the inputs could not be read.
    fn pass_trap(
        &mut self,
        task: &Task,
        words: [u32; 2],
        pass: usize,
        passes: usize,
    ) -> Option<crate::Result<Error>> {
        let Kernel::Fused(k) = &*task.program.kernel else {
            return None;
        };
        if words[0] != TRAP_FAULT {
            return None;
        }
        let (element, check) = device::decode(words[1], k.traps.len())?;
        let mut inputs = Vec::with_capacity(task.inputs.len());
        for &b in &task.inputs {
            match self.host_copy(b) {
                Ok(v) => inputs.push(v),
                Err(e) => return Some(Err(e)),
            }
        }
        let refs: Vec<&TypedVec> = inputs.iter().map(|a| &**a).collect();
        let tile = task.program.launch.tile;
        match vm::first_failing_near(k, tile, &refs, &task.params, element) {
            Ok(Some((lin, c, value))) if (lin, c) == (element, check) => {
                let mut t = report::Trap::of_check(&k.traps[c], element, value);
                t.device = true;
                t.pass = Some((pass, passes));
                t.suspended = true;
                Some(Ok(report::record(t)))
            }
            found => {
                tracing::warn!(target: "arrayflow::debug",
                    "the device's first failing element {element} (check {check}) is not the \
                     CPU's ({found:?}); the CPU runs the launch in passes");
                None
            }
        }
    }

    /// A launch that ran all its passes on the device (the host's time in them: `ns`): its
    /// outputs join the store (external ones are downloaded to the application's memory), its
    /// scratch goes back to the pool, the profiler records it, and it is reported done once that
    /// is.
    fn finish_device_passes(&mut self, task: Task, held: Held<A::Buf>, ns: u64) {
        let Held {
            outputs,
            temps,
            scratch,
            ..
        } = held;
        for (b, bytes) in temps
            .into_iter()
            .chain(scratch.into_iter().flatten().flatten())
        {
            self.store.pool(b, bytes);
        }
        let mut external = Vec::new();
        for (b, buf, bytes, dtype, len) in outputs {
            self.failed.remove(&b);
            self.store.set_device(b, buf, bytes, dtype, len);
            if let Some(ptr) = self.external.get(&b) {
                external.push((
                    b,
                    HostSlice {
                        ptr: ptr.ptr,
                        dtype,
                        len,
                    },
                ));
            }
        }
        for (b, slice) in external {
            let dev = self.store.device(b).expect("just stored");
            let arrived = enqueue_download(&mut self.api, dev, slice);
            if let Err(e) = self.wait_download(arrived) {
                let e = device_error(format!("download failed: {e}"));
                return self.finish_now(&task, Err(e));
            }
        }
        self.launched.push(task.started);
        crate::exec::cpu::profile_passes(&task, task.exec as u32, ns);
        self.finish_now(&task, Ok(()));
    }

    /// Runs a checked task in passes on the CPU tile VM (from `state`, or from the start with
    /// host copies of its inputs): to the end, or to the pass that traps (then suspended).
    fn host_passes(
        &mut self,
        task: Task,
        state: Option<(Vec<Arc<TypedVec>>, Vec<TypedVec>, Progress)>,
    ) {
        let Kernel::Fused(k) = &*task.program.kernel else {
            unreachable!("only fused kernels run in passes")
        };
        let (inputs, mut outputs, progress) = match state {
            Some(s) => s,
            None => {
                Counters::add(&self.counters.device.fallbacks, 1);
                let mut inputs = Vec::with_capacity(task.inputs.len());
                for &b in &task.inputs {
                    match self.host_copy(b) {
                        Ok(v) => inputs.push(v),
                        Err(e) => return self.finish_now(&task, Err(e)),
                    }
                }
                let outputs = crate::exec::cpu::output_shapes(&task.program.kernel)
                    .into_iter()
                    .map(|(d, len)| TypedVec::zeros(d, len))
                    .collect();
                (inputs, outputs, Progress::default())
            }
        };
        let refs: Vec<&TypedVec> = inputs.iter().map(|a| &**a).collect();
        let external = vec![None; outputs.len()];
        let r = vm::run_checked(
            k,
            task.program.launch.tile,
            &refs,
            &mut outputs,
            &external,
            &task.params,
            progress,
            Some(pass_elements()),
        );
        drop(refs);
        let result = match r {
            Ok(vm::Checked::Trapped(e, Some(progress))) => {
                let work = Work::Host {
                    inputs,
                    outputs,
                    progress,
                };
                return self.suspend_launch(task, work, e);
            }
            Ok(vm::Checked::Done { host_ns }) => {
                // The tile VM ran it, on this thread: the CPU's record, as other fallbacks.
                crate::exec::cpu::profile_passes(&task, 0, host_ns);
                Ok(())
            }
            Ok(vm::Checked::Trapped(e, None)) | Err(e) => Err(e),
        };
        if result.is_ok() {
            for (&b, v) in task.outputs.iter().zip(outputs) {
                self.failed.remove(&b);
                if let Some(ptr) = self.external.get(&b) {
                    fallback::write_external(&v, *ptr);
                }
                self.store.insert_host(b, Arc::new(v));
            }
        }
        self.finish_now(&task, result);
    }

    /// Suspends a launch a pass trapped with `e`: its results read as `e` until it resumes.
    fn suspend_launch(&mut self, task: Task, work: Work<A::Buf, A::Program>, e: Error) {
        for &b in &task.outputs {
            self.failed.insert(b, e.clone());
        }
        let _ = self.sched.send(SchedMsg::Suspended {
            task: task.id,
            error: Some(e),
        });
        self.suspend.launches.push(Suspended { task, work });
    }

    /// Runs the passes left of every suspended launch, then the tasks that waited, then the frees
    /// held back; returns how many launches were resumed.
    pub(super) fn resume(&mut self) -> usize {
        let launches = std::mem::take(&mut self.suspend.launches);
        let waiting = std::mem::take(&mut self.suspend.waiting);
        let n = launches.len();
        // Running again: a barrier waits for them (one suspended anew says so again).
        for t in launches.iter().map(|s| &s.task).chain(&waiting) {
            let _ = self.sched.send(SchedMsg::Suspended {
                task: t.id,
                error: None,
            });
            for b in &t.outputs {
                self.failed.remove(b);
            }
        }
        if n > 0 {
            report::resumed();
        }
        for s in launches {
            match s.work {
                Work::Device {
                    plan,
                    mut held,
                    geo,
                    next,
                    ns,
                } => {
                    // The fault words start at zero again; inputs another task swapped out
                    // come back.
                    let keep: Vec<BufferId> = s
                        .task
                        .inputs
                        .iter()
                        .chain(&s.task.outputs)
                        .copied()
                        .collect();
                    let ready = self
                        .zero_fault(&plan.steps[0].plan, &mut held)
                        .and_then(|()| {
                            s.task
                                .inputs
                                .iter()
                                .try_for_each(|&b| self.resident(b, &keep))
                        });
                    match ready {
                        Ok(()) => self.device_passes(s.task, plan, held, geo, next, ns),
                        Err(e) => {
                            self.give_back(held);
                            let e = device_error(format!("cannot resume a launch: {e}"));
                            self.finish_now(&s.task, Err(e));
                        }
                    }
                }
                Work::Host {
                    inputs,
                    outputs,
                    progress,
                } => self.host_passes(s.task, Some((inputs, outputs, progress))),
            }
        }
        // The tasks that waited, in order (one may wait again for a launch suspended anew).
        for t in waiting {
            self.compute_then_free(t);
        }
        self.submit();
        for b in std::mem::take(&mut self.suspend.frees) {
            self.free(b);
        }
        n
    }

    /// Zeroes a suspended launch's fault words.
    fn zero_fault(&mut self, plan: &GpuPlan, held: &mut Held<A::Buf>) -> Result<(), String> {
        let f = plan.fault.expect("a checked kernel has a fault word") as usize;
        let (buf, bytes) = held.scratch[0][f]
            .as_mut()
            .expect("the fault word is allocated");
        self.api.zero(buf, *bytes)
    }
}
