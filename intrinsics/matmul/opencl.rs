//! 2-D matrix product `c[m, n] = a[m, k] b[k, n]` (f32, or f64 on devices that compute it): one
//! pass `af_matmul` over 64 x 64 tiles of `c` (a grid-stride loop over tiles). Each work-group of
//! 256 threads walks `k` in steps of 16, staging a 64 x 16 slice of `a` and a 16 x 64 slice of `b`
//! in local memory; each thread accumulates a 4 x 4 block of the tile in registers (rows `ty + 16 i`,
//! columns `tx + 16 j`), summing over `k` in order with `fma`.
//! Buffers: `a`, `b` (inputs 0 and 1), `c` (output 0). With few tiles and a long `k`
//! ([`super::matmul_split`]) pass `af_matmul` computes each tile over one range of `k`
//! into a scratch buffer of partial products, and pass `af_matmul_sum` adds the ranges in order.

use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};
use crate::proggen::sequence::IntrinsicCall;

/// Edge of the output tile one work-group computes.
const TILE: usize = 64;

/// The plan for `call` (a, then b).
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let g = super::Geometry::of_call(call);
    let (ta, tb) = super::flags(&call.op);
    if !g.batch.is_empty()
        || ta
        || tb
        || call.in_shapes[0].len() != 2
        || call.in_shapes[1].len() != 2
    {
        return Err(Unsupported(
            "matmul: batched, 1-D or transposed operands".into(),
        ));
    }
    if !matches!(call.dtype, DType::F32 | DType::F64) {
        return Err(Unsupported(format!("matmul of {} matrices", call.dtype)));
    }
    let (a, b) = (&call.in_shapes[0], &call.in_shapes[1]);
    if a.len() != 2 || b.len() != 2 || a[1] != b[0] {
        return Err(Unsupported(format!("matmul of shapes {a:?} and {b:?}")));
    }
    let (m, k, n) = (a[0], a[1], b[1]);
    let el = ctype(call.dtype);
    let tiles = (m.div_ceil(TILE) * n.div_ceil(TILE)) as u64;
    let mut source = prelude(t);
    let Some((parts, chunk)) = super::matmul_split(m, n, k) else {
        source.push_str(&kernel(el, m, k, n, None));
        return Ok(GpuPlan::single_pass(
            source,
            "af_matmul",
            2,
            false,
            groups_for(tiles, 1),
            LOCAL,
        ));
    };
    source.push_str(&kernel(el, m, k, n, Some((parts, chunk))));
    let mn = (m * n) as u64;
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_matmul_sum(__global const {el} *part, __global {el} *c) {{
  for (ulong e = get_global_id(0); e < {mn}UL; e += get_global_size(0)) {{
    {el} t = part[e];
    for (ulong s = 1; s < {parts}UL; s++) t += part[s * {mn}UL + e];
    c[e] = t;
  }}
}}
"#
    ));
    let bytes = parts as u64 * mn * call.dtype.size() as u64;
    Ok(GpuPlan {
        source,
        scratch: vec![bytes],
        passes: vec![
            Pass {
                entry: "af_matmul".into(),
                buffers: vec![BufArg::Input(0), BufArg::Input(1), BufArg::Scratch(0)],
                params: false,
                groups: groups_for(tiles * parts as u64, 1),
                local: LOCAL,
            },
            Pass {
                entry: "af_matmul_sum".into(),
                buffers: vec![BufArg::Scratch(0), BufArg::Output(0)],
                params: false,
                groups: groups_for(mn, LOCAL as u64),
                local: LOCAL,
            },
        ],
        fault: None,
        immediate_words: None,
    })
}

/// The kernel for element type `el` (its OpenCL C name) and the call's extents; with
/// `Some((parts, chunk))`, work-group item `i` computes tile `i % tiles` over range `i / tiles` of
/// `k` into partial buffer `c` (one `m x n` block per range).
fn kernel(el: &str, m: usize, k: usize, n: usize, split: Option<(usize, usize)>) -> String {
    let tiles_n = n.div_ceil(TILE);
    let tiles = m.div_ceil(TILE) * tiles_n;
    let (parts, chunk) = split.unwrap_or((1, k.max(1)));
    let items = tiles * parts;
    let mn = m * n;
    let tiles_div = tiles.max(1);
    format!(
        r#"
{ENTRY_ATTR}
void af_matmul(__global const {el} *a, __global const {el} *b, __global {el} *c) {{
  __local {el} at[16][65]; /* a's slice, k-major (padded against bank conflicts) */
  __local {el} bt[16][64];
  const u32 lid = get_local_id(0), tx = lid % 16u, ty = lid / 16u;
  for (ulong item = get_group_id(0); item < {items}UL; item += get_num_groups(0)) {{
    const ulong tile = item % {tiles_div}UL, part = item / {tiles_div}UL;
    const ulong kb = part * {chunk}UL, ke = min(kb + {chunk}UL, (ulong){k}UL);
    const ulong row0 = (tile / {tiles_n}UL) * 64UL, col0 = (tile % {tiles_n}UL) * 64UL;
    {el} acc[4][4];
    for (u32 i = 0u; i < 4u; i++)
      for (u32 j = 0u; j < 4u; j++) acc[i][j] = 0;
    for (ulong k0 = kb; k0 < ke; k0 += 16UL) {{
      for (u32 l = 0u; l < 4u; l++) {{
        const u32 e = lid + 256u * l;
        const u32 ar = e / 16u, ak = e % 16u, bk = e / 64u, bc = e % 64u;
        const ulong gr = row0 + ar, gk = k0 + ak, hk = k0 + bk, hc = col0 + bc;
        at[ak][ar] = (gr < {m}UL && gk < ke) ? a[gr * {k}UL + gk] : ({el})0;
        bt[bk][bc] = (hk < ke && hc < {n}UL) ? b[hk * {n}UL + hc] : ({el})0;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      for (u32 kk = 0u; kk < 16u; kk++) {{
        {el} av[4], bv[4];
        for (u32 i = 0u; i < 4u; i++) av[i] = at[kk][ty + 16u * i];
        for (u32 j = 0u; j < 4u; j++) bv[j] = bt[kk][tx + 16u * j];
        for (u32 i = 0u; i < 4u; i++)
          for (u32 j = 0u; j < 4u; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    for (u32 i = 0u; i < 4u; i++) {{
      for (u32 j = 0u; j < 4u; j++) {{
        const ulong r = row0 + ty + 16u * i, col = col0 + tx + 16u * j;
        if (r < {m}UL && col < {n}UL) c[part * {mn}UL + r * {n}UL + col] = acc[i][j];
      }}
    }}
  }}
}}
"#
    )
}
