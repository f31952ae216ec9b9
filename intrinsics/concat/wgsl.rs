//! Concatenation along an axis: pass `af_part{j}` copies part `j` (one thread per element) into its
//! slot of the output. Empty parts get no pass.

use crate::intrinsics::wgsl::stride;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for, storage_type};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

pub fn render(call: &IntrinsicCall, axis: usize) -> GpuPlan {
    let pre: usize = call.out_shape[..axis].iter().product();
    let post: usize = call.out_shape[axis + 1..].iter().product();
    let out_row = call.out_shape[axis] * post;
    let t = storage_type(call.dtype);
    let mut source = String::new();
    let mut passes = Vec::new();
    let mut at = 0;
    for (j, shape) in call.in_shapes.iter().enumerate() {
        let row = shape[axis] * post;
        let n = pre * row;
        if n > 0 {
            let groups = groups_for(n);
            let _ = write!(
                source,
                "@group(0) @binding(0) var<storage, read> in{j}: array<{t}>;
@group(0) @binding(1) var<storage, read_write> out{j}: array<{t}>;

@compute @workgroup_size({LOCAL})
fn af_part{j}(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var lin = gid.x; lin < {n}u; lin += {s}u) {{
    out{j}[(lin / {row}u) * {out_row}u + {at}u + lin % {row}u] = in{j}[lin];
  }}
}}

",
                s = stride(groups)
            );
            passes.push(Pass {
                entry: format!("af_part{j}"),
                buffers: vec![BufArg::Input(j as u32), BufArg::Output(0)],
                params: false,
                groups,
                local: LOCAL,
            });
        }
        at += row;
    }
    GpuPlan {
        source,
        scratch: Vec::new(),
        passes,
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    }
}
