//! The direct convolution in WGSL: one pass `af_conv`, as the OpenCL kernel (`opencl.rs`): a
//! grid-stride loop over the outputs `[batch, o0, o1]`, each walking the filter rows inside the
//! input, unchecked where a filter row's whole window lies inside its input row. f32 only (WGSL
//! has no f64; such calls run on the CPU). Indices are i32: the registry's WGSL entry refuses
//! arrays of 2^31 elements or more.

use super::Geom;
use crate::intrinsics::wgsl::stride;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};

pub fn render(g: &Geom, dtype: DType) -> Result<GpuPlan, Unsupported> {
    if dtype != DType::F32 {
        return Err(Unsupported(format!("wgsl convolution of {dtype}")));
    }
    let total = g.outputs();
    let groups = groups_for(total);
    let k_base = if g.per_batch {
        format!("b * {}", g.taps())
    } else {
        "0".into()
    };
    let source = format!(
        "@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({LOCAL})
fn af_conv(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var lin = gid.x; lin < {total}u; lin += {s}u) {{
    let i1 = i32(lin % {o1}u);
    let r = lin / {o1}u;
    let i0 = i32(r % {o0}u);
    let b = i32(r / {o0}u);
    let kb = {k_base};
    let c = i1 + {off1};
    var acc = 0.0;
    for (var p0 = 0; p0 < {m0}; p0++) {{
      let s0 = i0 + {off0} - p0;
      if (s0 < 0 || s0 >= {n0}) {{ continue; }}
      let xr = (b * {n0} + s0) * {n1};
      let kr = kb + p0 * {m1};
      if (c >= {m1} - 1 && c < {n1}) {{
        for (var p1 = 0; p1 < {m1}; p1++) {{
          acc += k[kr + p1] * x[xr + c - p1];
        }}
      }} else {{
        for (var p1 = 0; p1 < {m1}; p1++) {{
          let s1 = c - p1;
          if (s1 >= 0 && s1 < {n1}) {{
            acc += k[kr + p1] * x[xr + s1];
          }}
        }}
      }}
    }}
    out[lin] = acc;
  }}
}}
",
        s = stride(groups),
        o0 = g.o[0],
        o1 = g.o[1].max(1),
        n0 = g.n[0],
        n1 = g.n[1],
        m0 = g.m[0],
        m1 = g.m[1],
        off0 = g.off[0],
        off1 = g.off[1],
    );
    Ok(GpuPlan::single_pass(
        source, "af_conv", 2, false, groups, LOCAL,
    ))
}
