//! Concatenation along an axis: one pass per non-empty part, `af_concat_<i>`, copying part `i`
//! (a grid-stride loop over its elements) into its slot of the output: part element `lin` of row
//! `lin / row` (the axes before `axis`) lands at `row * out_row + at + lin % row`, where `at` is
//! the extent of the parts before it along the axis times the trailing extent.
//! Buffers of pass `i`: part `i` (input `i`), the output.

use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan for `call` (the parts, in order) along `axis`.
pub fn render(call: &IntrinsicCall, axis: usize, t: Target) -> Result<GpuPlan, Unsupported> {
    let ty = ctype(call.dtype);
    let post: usize = call.out_shape[axis + 1..].iter().product();
    let out_row = call.out_shape[axis] * post;
    let mut source = prelude(t);
    let mut passes = Vec::new();
    let mut at = 0;
    for (i, shape) in call.in_shapes.iter().enumerate() {
        let row = shape[axis] * post;
        let len: usize = shape.iter().product();
        if len > 0 {
            let _ = write!(
                source,
                r#"
{ENTRY_ATTR}
void af_concat_{i}(__global const {ty} *part, __global {ty} *out) {{
  for (ulong lin = get_global_id(0); lin < {len}UL; lin += get_global_size(0)) {{
    out[(lin / {row}UL) * {out_row}UL + {at}UL + lin % {row}UL] = part[lin];
  }}
}}
"#
            );
            passes.push(Pass {
                entry: format!("af_concat_{i}"),
                buffers: vec![BufArg::Input(i as u32), BufArg::Output(0)],
                params: false,
                groups: groups_for(len as u64, LOCAL as u64),
                local: LOCAL,
            });
        }
        at += row;
    }
    Ok(GpuPlan {
        source,
        scratch: Vec::new(),
        passes,
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    })
}
