//! Gather (NumPy `take` along an axis): output element (p, j, q) reads data (p, idx[j], q), where
//! `p` runs over the axes before `axis`, `q` over those after it and `j` over the indices (i32 or
//! u32, flattened). One pass `af_gather`, a grid-stride loop over the output. An index out of range
//! writes 0 and sets the fault word to 1 (the CPU fails the program the same way); the second
//! word keeps the lowest bad position (`debug::trap::device`).
//! Buffers: data, indices (inputs 0 and 1), the output, the fault word (scratch 0).

use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};
use crate::proggen::sequence::IntrinsicCall;

/// The plan for `call` (data, then indices) along `axis`.
pub fn render(call: &IntrinsicCall, axis: usize, t: Target) -> Result<GpuPlan, Unsupported> {
    let shape = &call.in_shapes[0];
    let dim = shape[axis];
    let index_type = call.in_dtypes[1];
    let in_range = match index_type {
        DType::I32 => format!("i >= 0 && (ulong)i < {dim}UL"),
        DType::U32 => format!("(ulong)i < {dim}UL"),
        d => return Err(Unsupported(format!("gather indices of type {d}"))),
    };
    let post: usize = shape[axis + 1..].iter().product();
    let ni: usize = call.in_shapes[1].iter().product();
    let len: usize = call.out_shape.iter().product();
    let (ty, it) = (ctype(call.dtype), ctype(index_type));
    // The lowest bad position, as the first-failing word (`debug::trap::device`), where it fits.
    let first = crate::debug::trap::device::fits(ni, 1);
    let (keep, raise) = if first {
        (
            crate::debug::trap::device::opencl_keep("j"),
            crate::debug::trap::device::OPENCL_RAISE,
        )
    } else {
        (String::new(), "")
    };
    let mut source = prelude(t);
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_gather(__global const {ty} *data, __global const {it} *idx, __global {ty} *out, __global u32 *af_fault) {{
  u32 fault = 0u, af_first = 0u;
  for (ulong lin = get_global_id(0); lin < {len}UL; lin += get_global_size(0)) {{
    const ulong p = lin / {row}UL, j = (lin / {post}UL) % {ni}UL, q = lin % {post}UL;
    const {it} i = idx[j];
    if ({in_range}) {{
      out[lin] = data[(p * {dim}UL + (ulong)i) * {post}UL + q];
    }} else {{
      out[lin] = 0;
      fault = 1u;
      {keep}
    }}
  }}
  if (fault != 0u) af_fault[0] = fault;
  {raise}
}}
"#,
        row = (ni * post).max(1),
        post = post.max(1),
        ni = ni.max(1),
    ));
    let mut plan = GpuPlan::single_pass(
        source,
        "af_gather",
        2,
        true,
        groups_for(len as u64, LOCAL as u64),
        LOCAL,
    );
    if first {
        plan.scratch[0] = 8;
    }
    Ok(plan)
}
