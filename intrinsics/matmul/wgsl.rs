//! 2-D f32 matrix product `c[m, n] = a[m, k] b[k, n]`: pass `af_matmul`, one work-group per 64 x 64
//! tile of `c` (grid-stride over tiles beyond the group limit). The 256 threads stage 64 x 16 of `a`
//! and 16 x 64 of `b` in workgroup memory per step of 16 along k; thread (tx, ty) accumulates the
//! 4 x 4 elements at rows `ty + 16 i`, columns `tx + 16 j` of the tile, summing k in order. With few
//! tiles and a long `k` ([`super::matmul_split`]) each work-group item takes one tile
//! over one range of `k` and writes partial sums to a scratch buffer; pass `af_matmul_sum` adds
//! the ranges in order.

use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};
use crate::proggen::sequence::IntrinsicCall;

/// Rows and columns of `c` one work-group computes.
const TILE: usize = 64;

pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
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
    if call.dtype != DType::F32 {
        return Err(Unsupported(format!(
            "wgsl matmul takes f32 matrices, not {}",
            call.dtype
        )));
    }
    let (m, k) = (call.in_shapes[0][0], call.in_shapes[0][1]);
    let n = call.in_shapes[1][1];
    let tiles_n = n.div_ceil(TILE);
    let tiles = m.div_ceil(TILE) * tiles_n;
    let split = super::matmul_split(m, n, k);
    let (parts, chunk) = split.unwrap_or((1, k.max(1)));
    let items = tiles * parts;
    let mn = m * n;
    let groups = groups_for(items * LOCAL as usize);
    let mut source = format!(
        "@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
var<workgroup> ta: array<f32, 1024>;
var<workgroup> tb: array<f32, 1024>;

@compute @workgroup_size({LOCAL})
fn af_matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {{
  let tx = tid % 16u;
  let ty = tid / 16u;
  for (var item = wid.x; item < {items}u; item += {g}u) {{
    let tile = item % {tiles_div}u;
    let part = item / {tiles_div}u;
    let kb = part * {chunk}u;
    let ke = min(kb + {chunk}u, {k}u);
    let row0 = (tile / {tiles_n}u) * 64u;
    let col0 = (tile % {tiles_n}u) * 64u;
    var acc: array<f32, 16>;
    for (var k0 = kb; k0 < ke; k0 += 16u) {{
      for (var l = 0u; l < 4u; l++) {{
        let e = tid + l * 256u;
        let ar = row0 + e / 16u;
        let ak = k0 + e % 16u;
        var av = 0.0f;
        if (ar < {m}u && ak < ke) {{ av = a[ar * {k}u + ak]; }}
        ta[e] = av;
        let bk = k0 + e / 64u;
        let bc = col0 + e % 64u;
        var bv = 0.0f;
        if (bk < ke && bc < {n}u) {{ bv = b[bk * {n}u + bc]; }}
        tb[e] = bv;
      }}
      workgroupBarrier();
      for (var kk = 0u; kk < 16u; kk++) {{
        var x: array<f32, 4>;
        var y: array<f32, 4>;
        for (var i = 0u; i < 4u; i++) {{
          x[i] = ta[(ty + 16u * i) * 16u + kk];
          y[i] = tb[kk * 64u + tx + 16u * i];
        }}
        for (var i = 0u; i < 4u; i++) {{
          for (var j = 0u; j < 4u; j++) {{
            acc[i * 4u + j] += x[i] * y[j];
          }}
        }}
      }}
      workgroupBarrier();
    }}
    for (var i = 0u; i < 4u; i++) {{
      for (var j = 0u; j < 4u; j++) {{
        let r = row0 + ty + 16u * i;
        let col = col0 + tx + 16u * j;
        if (r < {m}u && col < {n}u) {{ c[part * {mn}u + r * {n}u + col] = acc[i * 4u + j]; }}
      }}
    }}
  }}
}}
",
        g = groups.max(1),
        tiles_n = tiles_n.max(1),
        tiles_div = tiles.max(1),
    );
    if split.is_none() {
        return Ok(GpuPlan::single_pass(
            source,
            "af_matmul",
            2,
            false,
            groups,
            LOCAL,
        ));
    }
    let sum_groups = groups_for(mn);
    source.push_str(&format!(
        "
@group(0) @binding(0) var<storage, read> spart: array<f32>;
@group(0) @binding(1) var<storage, read_write> sc: array<f32>;

@compute @workgroup_size({LOCAL})
fn af_matmul_sum(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var e = gid.x; e < {mn}u; e += {stride}u) {{
    var t = spart[e];
    for (var s = 1u; s < {parts}u; s++) {{ t += spart[s * {mn}u + e]; }}
    sc[e] = t;
  }}
}}
",
        stride = sum_groups.max(1) * LOCAL,
    ));
    Ok(GpuPlan {
        source,
        scratch: vec![(parts * mn * 4) as u64],
        passes: vec![
            Pass {
                entry: "af_matmul".into(),
                buffers: vec![BufArg::Input(0), BufArg::Input(1), BufArg::Scratch(0)],
                params: false,
                groups,
                local: LOCAL,
            },
            Pass {
                entry: "af_matmul_sum".into(),
                buffers: vec![BufArg::Scratch(0), BufArg::Output(0)],
                params: false,
                groups: sum_groups,
                local: LOCAL,
            },
        ],
        fault: None,
        immediate_words: None,
    })
}
