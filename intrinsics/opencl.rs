//! The OpenCL executor's entry into the intrinsic library: hand-written kernels for the
//! non-fusible operations (matrix product, gather, concat) and for the fused kernels an
//! intrinsic recognises (the materialised transpose), each rendered for one call's shapes and
//! element types as a [`GpuPlan`] in the same contract as the fused kernels
//! (`src/proggen/codegen/gpu.rs`). Shapes are literals in the source; intrinsics take no
//! parameters. Every entry runs work-groups of 256 threads. The kernels lie in each intrinsic's
//! folder (`<name>/opencl.rs`); this module checks what every intrinsic shares on OpenCL and
//! dispatches through the registry.

use crate::intrinsics::transpose::TransposeShape;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Renders one intrinsic call for an OpenCL device.
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    if !t.fp64 && (call.dtype == DType::F64 || call.in_dtypes.contains(&DType::F64)) {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let mut plan = super::def(&call.op).opencl(call, t)?;
    super::fault::plant(call, &mut plan, true);
    Ok(plan)
}

/// Renders the tiled transpose of a fused kernel that
/// [`as_transpose`](crate::intrinsics::transpose::as_transpose) recognised (its input 0 and output 0).
pub fn render_transpose(s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported> {
    render(&s.call(), t)
}
