//! The wgpu executor's entry into the intrinsic library's WGSL kernels: each call becomes a
//! [`GpuPlan`] with a self-contained source (no primitive library). Matmul is tiled in workgroup
//! memory, gather checks its indices (an index out of range sets the plan's fault word to 1 and
//! writes 0), concat copies each part with its own pass; the materialised transpose (a fused
//! kernel the transpose intrinsic recognises) moves 32 x 32 tiles through workgroup memory.
//! Element types as in the fused kernels: bool is one u32 per element, f64 is not available
//! (such calls are `Unsupported`), and indices are u32. The kernels lie in each intrinsic's folder
//! (`<name>/wgsl.rs`); this module checks what every intrinsic shares on WGSL and dispatches
//! through the registry.

use crate::intrinsics::transpose::TransposeShape;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::codegen::wgsl::LOCAL;
use crate::proggen::sequence::IntrinsicCall;

/// Renders an intrinsic call for a WGSL target.
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    if call.dtype == DType::F64 || call.in_dtypes.contains(&DType::F64) {
        return Err(Unsupported(format!(
            "f64 {} is not available on WGSL targets",
            call.op.name()
        )));
    }
    let too_big = call
        .in_shapes
        .iter()
        .chain(std::iter::once(&call.out_shape))
        .any(|s| s.iter().product::<usize>() >= 1 << 31);
    if too_big {
        return Err(Unsupported(format!(
            "wgsl: {} over 2^31 elements needs 64-bit indices",
            call.op.name()
        )));
    }
    let mut plan = super::def(&call.op).wgsl(call, t)?;
    super::fault::plant(call, &mut plan, false);
    Ok(plan)
}

/// Renders the tiled transpose of a fused kernel that
/// [`as_transpose`](crate::intrinsics::transpose::as_transpose) recognised (its input 0 and output 0).
pub fn render_transpose(s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported> {
    render(&s.call(), t)
}

/// The grid stride of a pass of `groups` work-groups (at least one group's worth, so that a pass
/// of zero groups still has a valid source).
pub(crate) fn stride(groups: u32) -> u32 {
    groups.max(1) * LOCAL
}
