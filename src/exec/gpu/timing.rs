//! Device timers: which dispatches are timed on the device (OpenCL profiling events, wgpu
//! timestamp queries), and where their times go. With `ARRAYFLOW_KERNEL_TIMES=1` every dispatch
//! is timed and its time added to the runtime's counters under the kernel's label
//! (`Runtime::take_kernel_times`); while the profiler runs, the launches its sampling picks
//! (`crate::profile::Sampling`) are timed and their time reported per task. Either way the
//! executor does not wait for the times: they are read when the work's completion is seen
//! (`opencl.rs`, `wgpu.rs`). The timers exist only when armed at start-up ([`armed`]); off,
//! nothing is asked of the device.

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
/// queries): `ARRAYFLOW_KERNEL_TIMES`, `ARRAYFLOW_PROFILE` or `ARRAYFLOW_PROFILE_SAMPLE` set at
/// start-up.
pub fn armed() -> bool {
    kernel_times() || crate::profile::env_dir().is_some() || crate::profile::sample_env_set()
}

/// How the dispatches of one task are timed (the executor sets it before it enqueues them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// Whether the dispatches carry device timers.
    pub on: bool,
    /// The profiler's task their time is reported under (`None`: not reported to the profiler).
    pub task: Option<u64>,
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

/// A timed dispatch's [`label`], made only with `ARRAYFLOW_KERNEL_TIMES` (it hashes the source;
/// the profiler needs none).
pub fn kept_label(plan: &GpuPlan, pass: usize) -> Option<String> {
    kernel_times().then(|| label(plan, pass))
}

/// A timed dispatch waiting for its time: its [`kept_label`] and the profiler's task.
pub(super) type Pending = (Option<String>, Option<u64>);

/// The device time of the timed dispatches read together, per task (its kernels' times summed,
/// in launch order), for the profiler ([`PerTask::report`]).
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

/// Adds one timed dispatch: to the kernel times under `label` (`ARRAYFLOW_KERNEL_TIMES`) and to
/// its task's time for the profiler.
pub(super) fn record(
    counters: Option<&crate::counters::Counters>,
    per_task: &mut PerTask,
    label: Option<String>,
    task: Option<u64>,
    ns: u64,
) {
    if let (Some(c), Some(l)) = (counters, label) {
        c.time_kernel(l, ns);
    }
    per_task.add(task, ns);
}
