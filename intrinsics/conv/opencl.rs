//! The direct convolution in OpenCL C: one pass `af_conv` over output tiles of `TR x TC`
//! (8 x 32, or 1 x 256 for one-row outputs), one work item per output, a grid-stride loop over
//! the tiles. A tile whose input window (the tile grown by the filter) lies inside the input is
//! loaded into local memory once and every output reads its terms from there; a tile at the
//! border reads the input directly, leaving out the terms outside it (so an infinite filter tap
//! never meets a padding zero). Filters of at most 16 KiB are read through `__constant` memory.
//! Terms are added in the filter's row-major order in the element type on both paths, as the
//! CPU entry does. Sizes are literals, so the compiler unrolls short filter rows.
//! Buffers: x, k (inputs 0 and 1), the output.

use super::Geom;
use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};

/// Local memory a tile's input window may take.
const TILE_BYTES: usize = 32 << 10;
/// Filters up to this size are read through `__constant` memory.
const CONSTANT_BYTES: usize = 16 << 10;

/// Output rows and columns of a tile (their product is [`LOCAL`]).
fn tile(g: &Geom) -> (usize, usize) {
    if g.o[0] == 1 { (1, 256) } else { (8, 32) }
}

pub fn render(g: &Geom, dtype: DType, t: Target) -> Result<GpuPlan, Unsupported> {
    if dtype == DType::F64 && !t.fp64 {
        return Err(Unsupported("f64 convolution without fp64".into()));
    }
    let ty = ctype(dtype);
    let (tr, tc) = tile(g);
    let (hr, hc) = (tr + g.m[0] - 1, tc + g.m[1] - 1);
    let local = hr * hc * dtype.size() <= TILE_BYTES;
    let k_bytes = g.taps() * if g.per_batch { g.batch } else { 1 } * dtype.size();
    let kq = if k_bytes <= CONSTANT_BYTES {
        "__constant"
    } else {
        "__global const"
    };
    let tiles_r = g.o[0].div_ceil(tr);
    let tiles_c = g.o[1].div_ceil(tc);
    let tiles = g.batch * tiles_r * tiles_c;
    let k_base = if g.per_batch {
        format!("b * {}L", g.taps())
    } else {
        "0L".into()
    };
    // The terms of output (i0, i1) from the input directly, outside terms left out.
    let checked = format!(
        r#"      const long c = i1 + {off1}L;
      for (long p0 = 0; p0 < {m0}L; p0++) {{
        const long s0 = i0 + {off0}L - p0;
        if (s0 < 0 || s0 >= {n0}L) continue;
        const __global {ty} *xr = x + (b * {n0}L + s0) * {n1}L;
        {kq} {ty} *kr = kb + p0 * {m1}L;
        if (c >= {m1}L - 1 && c < {n1}L) {{
          for (long p1 = 0; p1 < {m1}L; p1++) acc += kr[p1] * xr[c - p1];
        }} else {{
          for (long p1 = 0; p1 < {m1}L; p1++) {{
            const long s1 = c - p1;
            if (s1 >= 0 && s1 < {n1}L) acc += kr[p1] * xr[s1];
          }}
        }}
      }}"#,
        m0 = g.m[0],
        m1 = g.m[1],
        n0 = g.n[0],
        n1 = g.n[1],
        off0 = g.off[0],
        off1 = g.off[1],
    );
    let tiled = if local {
        format!(
            r#"    const long xr0 = r0 + {off0}L - {m0m1}L, xc0 = c0 + {off1}L - {m1m1}L;
    if (xr0 >= 0 && xc0 >= 0 && xr0 + {hr}L <= {n0}L && xc0 + {hc}L <= {n1}L) {{
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int e = lid; e < {hr} * {hc}; e += {LOCAL})
        win[e] = x[(b * {n0}L + xr0 + e / {hc}) * {n1}L + xc0 + e % {hc}];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (i0 < {o0}L && i1 < {o1}L) {{
        {ty} acc = 0;
        for (int p0 = 0; p0 < {m0}; p0++) {{
          __local const {ty} *wr = win + (lr + {m0m1} - p0) * {hc} + lc + {m1m1};
          {kq} {ty} *kr = kb + p0 * {m1};
          for (int p1 = 0; p1 < {m1}; p1++) acc += kr[p1] * wr[-p1];
        }}
        out[(b * {o0}L + i0) * {o1}L + i1] = acc;
      }}
      continue;
    }}
"#,
            m0 = g.m[0],
            m1 = g.m[1],
            m0m1 = g.m[0] - 1,
            m1m1 = g.m[1] - 1,
            n0 = g.n[0],
            n1 = g.n[1],
            off0 = g.off[0],
            off1 = g.off[1],
            o0 = g.o[0],
            o1 = g.o[1],
        )
    } else {
        String::new()
    };
    let win = if local {
        format!("  __local {ty} win[{}];\n", hr * hc)
    } else {
        String::new()
    };
    let mut source = prelude(t);
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_conv(__global const {ty} *x, {kq} {ty} *k, __global {ty} *out) {{
{win}  const int lid = get_local_id(0), lr = lid / {tc}, lc = lid % {tc};
  for (long t = get_group_id(0); t < {tiles}L; t += get_num_groups(0)) {{
    const long b = t / {per_b}L, tr = (t / {tiles_c}L) % {tiles_r}L, tcol = t % {tiles_c}L;
    const long r0 = tr * {tr}L, c0 = tcol * {tc}L, i0 = r0 + lr, i1 = c0 + lc;
    {kq} {ty} *kb = k + {k_base};
{tiled}    if (i0 < {o0}L && i1 < {o1}L) {{
      {ty} acc = 0;
{checked}
      out[(b * {o0}L + i0) * {o1}L + i1] = acc;
    }}
  }}
}}
"#,
        per_b = (tiles_r * tiles_c).max(1),
        tiles_c = tiles_c.max(1),
        tiles_r = tiles_r.max(1),
        o0 = g.o[0],
        o1 = g.o[1],
    ));
    Ok(GpuPlan::single_pass(
        source,
        "af_conv",
        2,
        false,
        groups_for(tiles as u64 * LOCAL as u64, LOCAL as u64),
        LOCAL,
    ))
}
