//! The direct convolution in WGSL: one pass `af_conv`, as the OpenCL kernel (`opencl.rs`):
//! output tiles of `TR x TC` (8 x 32, or 1 x 256 for one-row outputs), one invocation per
//! output, a loop over the tiles; a tile whose input window lies inside the input loads it into
//! workgroup memory once, a border tile reads the input directly and leaves out the terms
//! outside it. f32 only (WGSL has no f64; such calls run on the CPU). Indices are i32: the
//! registry's WGSL entry refuses arrays of 2^31 elements or more.

use super::Geom;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};

/// Workgroup memory a tile's input window may take (WGSL's default limit is 16 KiB).
const TILE_BYTES: usize = 16 << 10;

pub fn render(g: &Geom, dtype: DType) -> Result<GpuPlan, Unsupported> {
    if dtype != DType::F32 {
        return Err(Unsupported(format!("wgsl convolution of {dtype}")));
    }
    let (tr, tc) = if g.o[0] == 1 { (1, 256) } else { (8, 32) };
    let (hr, hc) = (tr + g.m[0] - 1, tc + g.m[1] - 1);
    let local = hr * hc * 4 <= TILE_BYTES;
    let (tiles_r, tiles_c) = (g.o[0].div_ceil(tr), g.o[1].div_ceil(tc));
    let tiles = g.batch * tiles_r * tiles_c;
    let groups = groups_for(tiles * LOCAL as usize);
    let k_base = if g.per_batch {
        format!("b * {}", g.taps())
    } else {
        "0".into()
    };
    let (m0, m1, n0, n1) = (g.m[0], g.m[1], g.n[0], g.n[1]);
    let (off0, off1, o0, o1) = (g.off[0], g.off[1], g.o[0], g.o[1]);
    let (m0m1, m1m1) = (m0 - 1, m1 - 1);
    // The window's load and sum; `inside` is the same for every invocation of a workgroup, so
    // its barriers are in uniform control flow (they run for every tile, used or not).
    let (decl, tiled) = if local {
        (
            format!("var<workgroup> win: array<f32, {}>;\n", hr * hc),
            format!(
                "    let xr0 = r0 + {off0} - {m0m1};
    let xc0 = c0 + {off1} - {m1m1};
    let inside = xr0 >= 0 && xc0 >= 0 && xr0 + {hr} <= {n0} && xc0 + {hc} <= {n1};
    workgroupBarrier();
    if (inside) {{
      for (var e = i32(lid.x); e < {hr} * {hc}; e += {LOCAL}) {{
        win[e] = x[(b * {n0} + xr0 + e / {hc}) * {n1} + xc0 + e % {hc}];
      }}
    }}
    workgroupBarrier();
    if (inside) {{
      if (i0 < {o0} && i1 < {o1}) {{
        var acc = 0.0;
        for (var p0 = 0; p0 < {m0}; p0++) {{
          let wr = (lr + {m0m1} - p0) * {hc} + lc + {m1m1};
          let kr = kb + p0 * {m1};
          for (var p1 = 0; p1 < {m1}; p1++) {{
            acc += k[kr + p1] * win[wr - p1];
          }}
        }}
        out[(b * {o0} + i0) * {o1} + i1] = acc;
      }}
      continue;
    }}
"
            ),
        )
    } else {
        (String::new(), String::new())
    };
    let source = format!(
        "@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
{decl}
@compute @workgroup_size({LOCAL})
fn af_conv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{
  let lr = i32(lid.x) / {tc};
  let lc = i32(lid.x) % {tc};
  for (var t = i32(wid.x); t < {tiles}; t += {groups}) {{
    let b = t / {per_b};
    let r0 = ((t / {tiles_c}) % {tiles_r}) * {tr};
    let c0 = (t % {tiles_c}) * {tc};
    let i0 = r0 + lr;
    let i1 = c0 + lc;
    let kb = {k_base};
{tiled}    if (i0 < {o0} && i1 < {o1}) {{
      var acc = 0.0;
      let c = i1 + {off1};
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
      out[(b * {o0} + i0) * {o1} + i1] = acc;
    }}
  }}
}}
",
        groups = groups.max(1),
        per_b = (tiles_r * tiles_c).max(1),
        tiles_c = tiles_c.max(1),
        tiles_r = tiles_r.max(1),
    );
    Ok(GpuPlan::single_pass(
        source, "af_conv", 2, false, groups, LOCAL,
    ))
}
