//! Test-only fault injection into the intrinsic library (`proggen::fault::inject_intrinsic_fault`,
//! feature `fault-injection`): a planted intrinsic's first output comes out `2x + 1` wherever it
//! runs, so the debugger's tests can check that its divergence is found and named. On the CPU the
//! output is changed after the intrinsic's code ran ([`corrupt`]); on a GPU a pass appended to
//! the call's plan changes it on the device ([`plant`]).

use crate::ir::{DType, TypedVec};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass};
use crate::proggen::fault::intrinsic_faulty;
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// Work-group size of the planted pass.
const LOCAL: u32 = 64;

/// Makes `outputs[0]` of `call` wrong (`2x + 1`, floats only) when the call's intrinsic is the
/// injected fault.
pub fn corrupt(call: &IntrinsicCall, outputs: &mut [TypedVec]) {
    if !intrinsic_faulty(call.op.name()) {
        return;
    }
    match outputs.first_mut() {
        Some(TypedVec::F32(v)) => v.iter_mut().for_each(|x| *x = *x * 2.0 + 1.0),
        Some(TypedVec::F64(v)) => v.iter_mut().for_each(|x| *x = *x * 2.0 + 1.0),
        _ => {}
    }
}

/// Appends to `plan` (of `call`, in OpenCL C when `opencl`, else WGSL) a pass that makes its
/// output 0 wrong (`2x + 1`, floats only) when the call's intrinsic is the injected fault.
pub fn plant(call: &IntrinsicCall, plan: &mut GpuPlan, opencl: bool) {
    if !intrinsic_faulty(call.op.name()) {
        return;
    }
    let n: usize = call.out_shape.iter().product();
    let ty = match (call.dtype, opencl) {
        (DType::F32, true) => "float",
        (DType::F64, true) => "double",
        (DType::F32, false) => "f32",
        _ => return,
    };
    if opencl {
        let _ = write!(
            plan.source,
            "\n__kernel void af_planted(__global {ty} *out) {{\n  const ulong i = get_global_id(0);\n  if (i < {n}UL) out[i] = out[i] * 2 + 1;\n}}\n"
        );
    } else {
        let _ = write!(
            plan.source,
            "\n@group(0) @binding(0) var<storage, read_write> af_planted_out: array<{ty}>;\n@compute @workgroup_size({LOCAL})\nfn af_planted(@builtin(global_invocation_id) gid: vec3<u32>) {{\n  if (gid.x < {n}u) {{ af_planted_out[gid.x] = af_planted_out[gid.x] * 2.0 + 1.0; }}\n}}\n"
        );
    }
    plan.passes.push(Pass {
        entry: "af_planted".into(),
        buffers: vec![BufArg::Output(0)],
        params: false,
        groups: (n as u32).div_ceil(LOCAL),
        local: LOCAL,
    });
}
