//! Batched transpose of the last two axes (`out[b, j, i] = in[offset + (b, i, j)]`, the fused
//! kernels [`as_transpose`](crate::intrinsics::transpose::as_transpose) recognises), every stored
//! element type: one pass `af_transpose` over 32 x 32 tiles (a grid-stride loop over the tiles of
//! every matrix of the batch). A work-group of 256 threads reads a tile row by row into local
//! memory padded to 33 columns (so the column-wise reads that follow hit distinct banks) and writes
//! it back row by row of the output: both global accesses are coalesced. Edge tiles are masked.
//! Buffers: `src` (input 0), `dst` (output 0).

use super::TransposeShape;
use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};

/// Edge of the tile one work-group moves at a time.
const TILE: usize = 32;

pub fn render(s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported> {
    if s.dtype == DType::F64 && !t.fp64 {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let tiles = s.batch * s.rows.div_ceil(TILE) * s.cols.div_ceil(TILE);
    let mut source = prelude(t);
    source.push_str(&kernel(ctype(s.dtype), s));
    Ok(GpuPlan::single_pass(
        source,
        "af_transpose",
        1,
        false,
        groups_for(tiles as u64, 1),
        LOCAL,
    ))
}

/// The kernel for element type `el` (its OpenCL C name; bool is `b8`, one byte) and the shape.
fn kernel(el: &str, s: &TransposeShape) -> String {
    let (rows, cols, offset) = (s.rows, s.cols, s.offset);
    let tiles_c = cols.div_ceil(TILE).max(1);
    let per_matrix = rows.div_ceil(TILE) * tiles_c;
    let tiles = s.batch * per_matrix;
    let rc = rows * cols;
    format!(
        r#"
{ENTRY_ATTR}
void af_transpose(__global const {el} *src, __global {el} *dst) {{
  __local {el} tile[32][33]; /* padded against bank conflicts on the column-wise reads */
  const u32 lid = get_local_id(0), tx = lid % 32u, ty = lid / 32u;
  for (ulong t = get_group_id(0); t < {tiles}UL; t += get_num_groups(0)) {{
    const ulong b = t / {per_matrix}UL, rest = t % {per_matrix}UL;
    const ulong r0 = (rest / {tiles_c}UL) * 32UL, c0 = (rest % {tiles_c}UL) * 32UL;
    const ulong in0 = {offset}UL + b * {rc}UL, out0 = b * {rc}UL;
    for (u32 k = 0u; k < 32u; k += 8u) {{
      const ulong r = r0 + ty + k, c = c0 + tx;
      if (r < {rows}UL && c < {cols}UL) tile[ty + k][tx] = src[in0 + r * {cols}UL + c];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (u32 k = 0u; k < 32u; k += 8u) {{
      const ulong c = c0 + ty + k, r = r0 + tx;
      if (c < {cols}UL && r < {rows}UL) dst[out0 + c * {rows}UL + r] = tile[tx][ty + k];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
}}
"#,
        per_matrix = per_matrix.max(1),
    )
}
