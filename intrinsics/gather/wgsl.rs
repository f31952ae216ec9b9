//! Gather (NumPy `take` along an axis): output index (pre, j, post) reads data (pre, idx[j], post).
//! One pass `af_gather`, one thread per output element; threads below the index count also check
//! one index each, so an index out of range faults even when the output is empty, and keeps the
//! lowest bad position in the fault buffer's second word (`debug::trap::device`).

use crate::intrinsics::wgsl::stride;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for, storage_type};
use crate::proggen::sequence::IntrinsicCall;

pub fn render(call: &IntrinsicCall, axis: usize) -> Result<GpuPlan, Unsupported> {
    let shape = &call.in_shapes[0];
    let dim = shape[axis];
    let post: usize = shape[axis + 1..].iter().product();
    let ni: usize = call.in_shapes[1].iter().product();
    let total: usize = call.out_shape.iter().product();
    // The index as u32; a negative i32 becomes huge and so out of range.
    let ity = match call.in_dtypes[1] {
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => {
            return Err(Unsupported(format!(
                "gather indices must be i32 or u32, not {d}"
            )));
        }
    };
    let t = storage_type(call.dtype);
    let n = total.max(ni);
    let groups = groups_for(n);
    // The lowest bad position, as the first-failing word (`debug::trap::device`), where it fits.
    let first = crate::debug::trap::device::fits(ni, 1);
    let raise = if first {
        format!(
            "\n      {}",
            crate::debug::trap::device::wgsl_raise("fault", "lin")
        )
    } else {
        String::new()
    };
    let source = format!(
        "@group(0) @binding(0) var<storage, read> data: array<{t}>;
@group(0) @binding(1) var<storage, read> idx: array<{ity}>;
@group(0) @binding(2) var<storage, read_write> out: array<{t}>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>>;

@compute @workgroup_size({LOCAL})
fn af_gather(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var lin = gid.x; lin < {n}u; lin += {s}u) {{
    if (lin < {ni}u && u32(idx[lin]) >= {dim}u) {{
      atomicStore(&fault[0], 1u);{raise}
    }}
    if (lin < {total}u) {{
      let q = lin % {post}u;
      let j = (lin / {post}u) % {ni_mod}u;
      let i = u32(idx[j]);
      var v = {t}(0);
      if (i < {dim}u) {{
        v = data[((lin / {post}u / {ni_mod}u) * {dim}u + i) * {post}u + q];
      }}
      out[lin] = v;
    }}
  }}
}}
",
        s = stride(groups),
        post = post.max(1),
        ni_mod = ni.max(1),
    );
    let mut plan = GpuPlan::single_pass(source, "af_gather", 2, true, groups, LOCAL);
    if first {
        plan.scratch[0] = 8;
    }
    Ok(plan)
}
