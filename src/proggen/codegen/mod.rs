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

use crate::ir::FoldMode;
use crate::proggen::kernel::Fold;

/// `f.a + f.b * mode(v)` folded into `0..f.n`, as a call of the primitive library's
/// `af_fold_<mode>[_near]` (each target's library has the same functions: a mathematical modulus,
/// or with `near` a compare and an add), with integer literals written by `lit`.
pub fn fold_expr(f: &Fold, near: bool, v: &str, lit: &dyn Fn(i64) -> String) -> String {
    let folded = if f.n <= 1 {
        lit(0)
    } else {
        let mode = match f.mode {
            FoldMode::Wrap => "wrap",
            FoldMode::Clamp => "clamp",
            FoldMode::Reflect => "reflect",
            FoldMode::Symmetric => "symmetric",
        };
        let near = if near && f.mode != FoldMode::Clamp {
            "_near"
        } else {
            ""
        };
        format!("af_fold_{mode}{near}({v}, {})", lit(f.n as i64))
    };
    if f.a == 0 && f.b == 1 {
        folded
    } else {
        format!("({} + {} * {folded})", lit(f.a as i64), lit(f.b as i64))
    }
}
