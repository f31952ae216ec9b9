//! Launches a trap suspended on the CPU executor (`crate::debug::trap`, passes): the launch's
//! partial outputs and where it resumes, the tasks that read its results and wait for it (in
//! order), and the frees held back for them. Other tasks keep running; `Runtime::resume` runs
//! the passes left, then the waiting tasks.

use super::{CpuLoop, vm};
use crate::debug::trap::passes::Progress;
use crate::error::Error;
use crate::exec::scheduler::Task;
use crate::exec::{BufferId, TypedVec};
use std::sync::Arc;

/// One suspended launch.
pub(crate) struct Suspended {
    pub task: Task,
    pub inputs: Vec<Arc<TypedVec>>,
    pub outputs: Vec<TypedVec>,
    pub progress: Progress,
}

/// The CPU executor's suspended launches and what waits for them.
#[derive(Default)]
pub(crate) struct Suspensions {
    pub launches: Vec<Suspended>,
    /// Tasks that read a suspended (or waiting) task's results, in arrival order.
    pub waiting: Vec<Task>,
    /// Frees of buffers a suspended or waiting task still needs.
    pub frees: Vec<BufferId>,
}

impl Suspensions {
    /// Whether `b` is a result not yet computed because of a suspension.
    pub fn pending(&self, b: BufferId) -> bool {
        self.launches.iter().any(|s| s.task.outputs.contains(&b))
            || self.waiting.iter().any(|t| t.outputs.contains(&b))
    }
    /// Whether a suspended or waiting task still needs `b`.
    pub fn needs(&self, b: BufferId) -> bool {
        self.pending(b) || self.waiting.iter().any(|t| t.inputs.contains(&b))
    }
    /// Whether anything is suspended.
    pub fn any(&self) -> bool {
        !self.launches.is_empty() || !self.waiting.is_empty()
    }
}

impl CpuLoop {
    /// Runs the passes left of every suspended launch, then the tasks that waited; returns how
    /// many launches were resumed.
    pub(crate) fn resume(&mut self, done: &mut dyn FnMut(u64, Result<(), Error>)) -> usize {
        let launches = std::mem::take(&mut self.suspend.launches);
        let n = launches.len();
        // Running again: a barrier waits for them (one suspended anew says so again).
        for id in launches
            .iter()
            .map(|s| s.task.id)
            .chain(self.suspend.waiting.iter().map(|t| t.id))
        {
            self.suspended(id, None);
        }
        crate::debug::trap::report::resumed();
        for mut s in launches {
            let crate::proggen::sequence::Kernel::Fused(k) = &*s.task.program.kernel else {
                unreachable!("only fused kernels run in passes")
            };
            let refs: Vec<&TypedVec> = s.inputs.iter().map(|a| &**a).collect();
            let external: Vec<_> = s
                .task
                .outputs
                .iter()
                .map(|b| self.external.get(b).copied())
                .collect();
            let r = vm::run_checked(
                k,
                s.task.program.launch.tile,
                &refs,
                &mut s.outputs,
                &external,
                &s.task.params,
                std::mem::take(&mut s.progress),
                crate::debug::trap::current().and_then(|c| c.pass_elements),
            );
            match r {
                Ok(vm::Checked::Trapped(e, Some(progress))) => {
                    s.progress = progress;
                    for &b in &s.task.outputs {
                        self.failed.insert(b, e.clone());
                    }
                    self.suspended(s.task.id, Some(e.clone()));
                    self.suspend.launches.push(s);
                }
                other => {
                    let result = match other {
                        Ok(vm::Checked::Done { host_ns }) => {
                            super::profile_passes(&s.task, 0, host_ns);
                            Ok(())
                        }
                        Ok(vm::Checked::Trapped(e, None)) | Err(e) => Err(e),
                        Ok(vm::Checked::Trapped(_, Some(_))) => unreachable!(),
                    };
                    self.finish_outputs(&s.task, s.outputs, result.is_ok());
                    if let Err(e) = &result {
                        for &b in &s.task.outputs {
                            self.failed.insert(b, e.clone());
                        }
                    }
                    let frees = s.task.free_after.clone();
                    done(s.task.id, result);
                    for b in frees {
                        self.free(b);
                    }
                }
            }
        }
        // The tasks that waited, in order (one may wait again for a launch suspended anew).
        for t in std::mem::take(&mut self.suspend.waiting) {
            self.compute_then_free(t, done);
        }
        for b in std::mem::take(&mut self.suspend.frees) {
            self.free(b);
        }
        n
    }
}
