//! Code generation: renders a scheduled fused kernel as source for a compiled target. `c` emits C
//! for the CPU's native tier, calling the primitive library's C sources (`primitives/c/`); `opencl`
//! and `wgsl` render the same kernels for the GPU executors as a [`gpu::GpuPlan`] (source plus the
//! passes to dispatch), calling `primitives/opencl/` and `primitives/wgsl/`. Both GPU renderers
//! print over one target-neutral lowering (`lower`: layout, register program, index maps,
//! generators, reductions, scratch, fault slot and passes).

pub mod c;
pub mod gpu;
pub mod lower;
pub mod opencl;
pub mod wgsl;
