//! Recognising fused kernels that a hand-written GPU intrinsic does better than the generic
//! renderer. Each intrinsic of the registry (`intrinsics/mod.rs`) may claim such kernels
//! (`IntrinsicDef::recognise`); today one does, the materialised transpose of the last two axes
//! (`intrinsics/transpose/`), which the GPU executors run as a tiled transpose through local
//! memory instead of the fused kernel's strided load.

use super::kernel::FusedKernel;
use super::sequence::IntrinsicCall;

pub use crate::intrinsics::transpose::{TransposeShape, as_transpose};

/// The intrinsic call that replaces `k` on a GPU executor, when an intrinsic recognises it (its
/// inputs and outputs are the kernel's, in order).
pub fn recognise(k: &FusedKernel) -> Option<IntrinsicCall> {
    crate::intrinsics::recognise(k)
}
