//! Device time per kernel (`ARRAYFLOW_KERNEL_TIMES=1`): the GPU executors time every dispatch
//! (OpenCL profiling events, wgpu timestamp queries) and add it to the runtime's counters under
//! the kernel's label, which `Runtime::take_kernel_times` reads. A diagnostic mode: the executor
//! waits for each submission's work to read its times, so kernels of one batch no longer overlap
//! the host's next steps. Off, nothing is asked of the device.

use crate::proggen::codegen::gpu::GpuPlan;
use std::sync::OnceLock;

/// Whether every kernel is timed (`ARRAYFLOW_KERNEL_TIMES` set and not `0`), read once.
pub fn kernel_times() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("ARRAYFLOW_KERNEL_TIMES").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

/// Whether the device timers are armed (OpenCL queues made with profiling, wgpu timestamp
/// queries): `ARRAYFLOW_KERNEL_TIMES` or `ARRAYFLOW_PROFILE` set at start-up.
pub fn armed() -> bool {
    kernel_times() || crate::profile::env_dir().is_some()
}

/// Whether the kernel being enqueued is timed: always with `ARRAYFLOW_KERNEL_TIMES`, while the
/// profiler runs when the timers are armed.
pub fn enabled() -> bool {
    kernel_times() || (crate::profile::active() && armed())
}

/// The label a dispatch's time is kept under: the pass's entry point and a short hash of the
/// plan's source (fused kernels share the entry `af_kernel`), and its work-groups.
pub fn label(plan: &GpuPlan, pass: usize) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = ahash::AHasher::default();
    plan.source.hash(&mut h);
    let p = &plan.passes[pass];
    format!("{} [{:06x}] x{}", p.entry, h.finish() & 0xff_ffff, p.groups)
}

/// One submission's device time per task (its kernels' times summed, in launch order), for the
/// profiler ([`PerTask::report`]).
#[derive(Default)]
pub(super) struct PerTask(Vec<(u64, u64)>);

impl PerTask {
    /// Adds a kernel's `ns` to its task (`None`: a kernel of no task).
    pub(super) fn add(&mut self, task: Option<u64>, ns: u64) {
        match (task, self.0.last_mut()) {
            (Some(t), Some(last)) if last.0 == t => last.1 += ns,
            (Some(t), _) => self.0.push((t, ns)),
            (None, _) => {}
        }
    }

    /// Hands every task's time to the profiler.
    pub(super) fn report(self) {
        for (task, ns) in self.0 {
            crate::profile::device_time(task, ns);
        }
    }
}
