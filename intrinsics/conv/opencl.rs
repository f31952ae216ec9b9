//! The direct convolution in OpenCL C: one pass `af_conv`, a grid-stride loop over the outputs
//! `[batch, o0, o1]` (adjacent work items on adjacent output columns, so input rows are read
//! coalesced and each filter tap is one broadcast load). Each work item walks the filter rows
//! inside the input; a filter row whose whole window lies inside its input row runs without
//! bounds checks. Sizes are literals, so the compiler unrolls short filter rows.
//! Buffers: x, k (inputs 0 and 1), the output.

use super::Geom;
use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};

pub fn render(g: &Geom, dtype: DType, t: Target) -> Result<GpuPlan, Unsupported> {
    if dtype == DType::F64 && !t.fp64 {
        return Err(Unsupported("f64 convolution without fp64".into()));
    }
    let ty = ctype(dtype);
    let total = g.outputs();
    let k_base = if g.per_batch {
        format!("b * {}L", g.taps())
    } else {
        "0L".into()
    };
    let mut source = prelude(t);
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_conv(__global const {ty} *x, __global const {ty} *k, __global {ty} *out) {{
  for (ulong lin = get_global_id(0); lin < {total}UL; lin += get_global_size(0)) {{
    const long i1 = (long)(lin % {o1}UL);
    const ulong r = lin / {o1}UL;
    const long i0 = (long)(r % {o0}UL), b = (long)(r / {o0}UL);
    const __global {ty} *kb = k + {k_base};
    const long c = i1 + {off1}L;
    {ty} acc = 0;
    for (long p0 = 0; p0 < {m0}L; p0++) {{
      const long s0 = i0 + {off0}L - p0;
      if (s0 < 0 || s0 >= {n0}L) continue;
      const __global {ty} *xr = x + (b * {n0}L + s0) * {n1}L;
      const __global {ty} *kr = kb + p0 * {m1}L;
      if (c >= {m1}L - 1 && c < {n1}L) {{
        for (long p1 = 0; p1 < {m1}L; p1++) acc += kr[p1] * xr[c - p1];
      }} else {{
        for (long p1 = 0; p1 < {m1}L; p1++) {{
          const long s1 = c - p1;
          if (s1 >= 0 && s1 < {n1}L) acc += kr[p1] * xr[s1];
        }}
      }}
    }}
    out[lin] = acc;
  }}
}}
"#,
        o0 = g.o[0],
        o1 = g.o[1].max(1),
        n0 = g.n[0],
        n1 = g.n[1],
        m0 = g.m[0],
        m1 = g.m[1],
        off0 = g.off[0],
        off1 = g.off[1],
    ));
    Ok(GpuPlan::single_pass(
        source,
        "af_conv",
        2,
        false,
        groups_for(total as u64, LOCAL as u64),
        LOCAL,
    ))
}
