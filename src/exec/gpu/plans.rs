//! What a device executor runs for each kernel, worked out once per kernel and kept: the rendered
//! [`GpuPlan`] with its compiled program, or — when the driver fails to compile it — the plans of
//! the kernel split in two (recursively, as the seed's recovery section says), or the reason it
//! runs on the CPU instead.

use super::DeviceApi;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::kernel::FusedKernel;
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use std::sync::Arc;

/// Splits allowed on the way down from one kernel (at most 2^4 pieces).
const MAX_SPLIT_DEPTH: u32 = 4;

/// Which code generator a device takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    OpenCl,
    Wgsl,
}

/// Where a step's buffer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The task's input (for inputs) or output (for outputs) of that index.
    Task(usize),
    /// A temporary passed between split halves.
    Temp(usize),
}

/// One compiled plan and how its buffers bind.
pub struct Step<P> {
    pub plan: Arc<GpuPlan>,
    pub program: Arc<P>,
    pub inputs: Vec<Slot>,
    pub outputs: Vec<Slot>,
}

pub struct DevicePlan<P> {
    pub steps: Vec<Step<P>>,
    /// Element type and length of each temporary.
    pub temps: Vec<(DType, usize)>,
    /// The fused kernel runs as a hand-written intrinsic a pattern recognised (see
    /// `IntrinsicDef::recognise`); counted in `DeviceStats::intrinsics`.
    pub intrinsic: bool,
    /// The profiler's launch count of this kernel here, which picks the launches it times.
    pub sampler: crate::profile::Sampler,
}

pub enum Runnable<P> {
    Device(Arc<DevicePlan<P>>),
    Cpu(Arc<str>),
}

impl<P> Clone for Runnable<P> {
    fn clone(&self) -> Self {
        match self {
            Runnable::Device(p) => Runnable::Device(p.clone()),
            Runnable::Cpu(r) => Runnable::Cpu(r.clone()),
        }
    }
}

/// Kernels seen, keyed by the kernel's address (the entry holds the `Arc`, so it stays valid)
/// and the injected fault, if any:
/// a trace-cache hit reuses the same kernels, so it finds its plans here without rendering.
pub struct Plans<P> {
    by_kernel: AHashMap<usize, (Arc<Kernel>, Runnable<P>)>,
    /// See [`super::Limits::kernel_instructions`].
    kernel_limit: usize,
}

/// Entries kept before the oldest half is dropped.
const MAX_KERNELS: usize = 4096;

impl<P: Send + Sync + 'static> Plans<P> {
    pub fn new(kernel_limit: Option<usize>) -> Self {
        Plans {
            by_kernel: AHashMap::new(),
            kernel_limit: kernel_limit.unwrap_or(usize::MAX),
        }
    }

    pub fn get<A: DeviceApi<Program = P>>(
        &mut self,
        kernel: &Arc<Kernel>,
        api: &mut A,
    ) -> Runnable<P> {
        // The injected fault (test-only, `proggen::fault`) is rendered into the kernel: a
        // kernel seen with another fault (or none) is planned again. Addresses stay below 2^48.
        let key =
            Arc::as_ptr(kernel) as usize | (crate::proggen::fault::fault_code() as usize) << 48;
        if let Some((_, r)) = self.by_kernel.get(&key) {
            return r.clone();
        }
        let r = match build(kernel, api, self.kernel_limit) {
            Ok(p) => Runnable::Device(Arc::new(p)),
            Err(reason) => Runnable::Cpu(reason.into()),
        };
        // A build may have loaded the driver's compiler: keep the exit handler ahead of it.
        crate::exec::lifetime::after_driver_load();
        if self.by_kernel.len() >= MAX_KERNELS {
            self.by_kernel.clear();
        }
        self.by_kernel.insert(key, (kernel.clone(), r.clone()));
        r
    }
}

fn build<A: DeviceApi>(
    kernel: &Kernel,
    api: &mut A,
    limit: usize,
) -> Result<DevicePlan<A::Program>, String> {
    let mut plan = DevicePlan {
        steps: Vec::new(),
        temps: Vec::new(),
        intrinsic: false,
        sampler: Default::default(),
    };
    match kernel {
        Kernel::Fused(k) => {
            if let Some(step) = pattern_step(k, api) {
                plan.steps.push(step);
                plan.intrinsic = true;
                return Ok(plan);
            }
            let ins = (0..k.inputs.len()).map(Slot::Task).collect();
            let outs = (0..k.outputs.len()).map(Slot::Task).collect();
            build_fused(k, ins, outs, api, &mut plan, limit, 0)?;
        }
        Kernel::Intrinsic(c) => {
            let rendered = render_intrinsic(c, api).map_err(|Unsupported(r)| r)?;
            let program = api.compile(&rendered)?;
            plan.steps.push(Step {
                plan: Arc::new(rendered),
                program,
                inputs: (0..c.in_shapes.len()).map(Slot::Task).collect(),
                outputs: vec![Slot::Task(0)],
            });
        }
    }
    Ok(plan)
}

/// The intrinsic that replaces `k` (one that `IntrinsicDef::recognise` claims, today the tiled transpose), as a step,
/// when an intrinsic recognises `k`, the dialect renders it and the device compiles it (else the
/// fused kernel runs as generated).
fn pattern_step<A: DeviceApi>(k: &FusedKernel, api: &mut A) -> Option<Step<A::Program>> {
    let call = crate::intrinsics::recognise(k)?;
    let name = call.op.name();
    let rendered = match render_intrinsic(&call, api) {
        Ok(p) => p,
        Err(Unsupported(r)) => {
            tracing::debug!(target: "arrayflow::exec", "{name} {:?} runs as a fused kernel: {r}", call.in_shapes);
            return None;
        }
    };
    tracing::trace!(target: "arrayflow::exec::source", "generated {:?} {name} program {}:\n{}", api.dialect(), super::timing::label(&rendered, 0), rendered.source);
    let program = match api.compile(&rendered) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(target: "arrayflow::exec",
                "the {name} intrinsic failed to compile ({e}); the fused kernel runs instead");
            return None;
        }
    };
    Some(Step {
        plan: Arc::new(rendered),
        program,
        inputs: (0..call.in_shapes.len()).map(Slot::Task).collect(),
        outputs: vec![Slot::Task(0)],
    })
}

/// An intrinsic call rendered for the device's dialect through the registry.
fn render_intrinsic<A: DeviceApi>(
    call: &crate::proggen::sequence::IntrinsicCall,
    api: &A,
) -> Result<GpuPlan, Unsupported> {
    match api.dialect() {
        Dialect::OpenCl => crate::intrinsics::opencl::render(call, api.target()),
        Dialect::Wgsl => crate::intrinsics::wgsl::render(call, api.target()),
    }
}

fn render<A: DeviceApi>(k: &FusedKernel, api: &A) -> Result<GpuPlan, String> {
    match api.dialect() {
        Dialect::OpenCl => crate::proggen::codegen::opencl::render(k, api.target()),
        Dialect::Wgsl => crate::proggen::codegen::wgsl::render(k, api.target()),
    }
    .map_err(|Unsupported(r)| r)
    .inspect(|p| {
        tracing::trace!(target: "arrayflow::exec::source", "generated {:?} program {}:\n{}", api.dialect(), super::timing::label(p, 0), p.source)
    })
}

fn build_fused<A: DeviceApi>(
    k: &FusedKernel,
    ins: Vec<Slot>,
    outs: Vec<Slot>,
    api: &mut A,
    plan: &mut DevicePlan<A::Program>,
    limit: usize,
    depth: u32,
) -> Result<(), String> {
    let rendered = render(k, api)?;
    let compiled = if k.instrs.len() > limit {
        Err(format!(
            "kernel of {} instructions is over the kernel limit of {limit}",
            k.instrs.len()
        ))
    } else {
        api.compile(&rendered)
    };
    let err = match compiled {
        Ok(program) => {
            plan.steps.push(Step {
                plan: Arc::new(rendered),
                program,
                inputs: ins,
                outputs: outs,
            });
            return Ok(());
        }
        Err(e) => e,
    };
    let split = (depth < MAX_SPLIT_DEPTH)
        .then(|| crate::proggen::split::split(k))
        .flatten();
    let Some(sp) = split else {
        return Err(format!("the device compiler failed: {err}"));
    };
    tracing::info!(target: "arrayflow::exec",
        "a kernel of {} instructions failed to compile ({err}); retrying it in two halves",
        k.instrs.len());
    crate::counters::Counters::add(&api.counters().device.splits, 1);
    let first_temp = plan.temps.len();
    let len = k.domain.len();
    plan.temps.extend(sp.temps.iter().map(|&d| (d, len)));
    let temps = (first_temp..plan.temps.len()).map(Slot::Temp);
    let first_ins = sp.first_inputs.iter().map(|&i| ins[i as usize]).collect();
    let first_outs = sp
        .first_outputs
        .iter()
        .map(|&o| outs[o as usize])
        .chain(temps.clone())
        .collect();
    let second_ins = sp
        .second_inputs
        .iter()
        .map(|&i| ins[i as usize])
        .chain(temps)
        .collect();
    let second_outs = sp
        .second_outputs
        .iter()
        .map(|&o| outs[o as usize])
        .collect();
    build_fused(
        &sp.first,
        first_ins,
        first_outs,
        api,
        plan,
        limit,
        depth + 1,
    )?;
    build_fused(
        &sp.second,
        second_ins,
        second_outs,
        api,
        plan,
        limit,
        depth + 1,
    )
}
