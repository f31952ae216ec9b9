//! Batched transpose of the last two axes (`out[b, j, i] = in[offset + (b, i, j)]`, the fused
//! kernels [`as_transpose`](crate::intrinsics::transpose::as_transpose) recognises) for f32, i32, u32
//! and bool (one u32 per element): pass `af_transpose`, one work-group per 32 x 32 tile, striding
//! by the dispatched group count over the tiles of every matrix of the batch beyond the group
//! limit. The 256 threads read a tile row by row into workgroup memory padded to 33 columns and
//! write it back row by row of the output, so both global accesses are coalesced; edge tiles are
//! masked.

use super::TransposeShape;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, MAX_GROUPS, storage_type};

/// Edge of the tile one work-group moves at a time.
const TILE: usize = 32;

pub fn render(s: &TransposeShape) -> Result<GpuPlan, Unsupported> {
    if s.dtype == DType::F64 {
        return Err(Unsupported(
            "f64 transpose is not available on WGSL targets".into(),
        ));
    }
    if s.offset + s.len() >= 1 << 31 {
        return Err(Unsupported(
            "wgsl: transpose over 2^31 elements needs 64-bit indices".into(),
        ));
    }
    let (rows, cols, offset) = (s.rows, s.cols, s.offset);
    let tiles_c = cols.div_ceil(TILE).max(1);
    let per_matrix = (rows.div_ceil(TILE) * tiles_c).max(1);
    let tiles = s.batch * per_matrix;
    let groups = tiles.min(MAX_GROUPS as usize) as u32;
    let rc = rows * cols;
    let t = storage_type(s.dtype);
    let source = format!(
        "@group(0) @binding(0) var<storage, read> a: array<{t}>;
@group(0) @binding(1) var<storage, read_write> out: array<{t}>;
// One 32 x 32 tile, rows padded to 33 elements against bank conflicts.
var<workgroup> tile: array<{t}, 1056>;

@compute @workgroup_size({LOCAL})
fn af_transpose(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {{
  let tx = lid % 32u;
  let ty = lid / 32u;
  for (var t = wid.x; t < {tiles}u; t += groups.x) {{
    let b = t / {per_matrix}u;
    let rest = t % {per_matrix}u;
    let r0 = (rest / {tiles_c}u) * 32u;
    let c0 = (rest % {tiles_c}u) * 32u;
    let in0 = {offset}u + b * {rc}u;
    let out0 = b * {rc}u;
    for (var k = 0u; k < 32u; k += 8u) {{
      let r = r0 + ty + k;
      let c = c0 + tx;
      if (r < {rows}u && c < {cols}u) {{ tile[(ty + k) * 33u + tx] = a[in0 + r * {cols}u + c]; }}
    }}
    workgroupBarrier();
    for (var k = 0u; k < 32u; k += 8u) {{
      let c = c0 + ty + k;
      let r = r0 + tx;
      if (c < {cols}u && r < {rows}u) {{ out[out0 + c * {rows}u + r] = tile[tx * 33u + ty + k]; }}
    }}
    workgroupBarrier();
  }}
}}
",
    );
    Ok(GpuPlan::single_pass(
        source,
        "af_transpose",
        1,
        false,
        groups,
        LOCAL,
    ))
}
