//! Scatter in WGSL, the same passes as OpenCL's (`opencl.rs`): replace as init (copy, claims to
//! 0), claim (`atomicMax` of `s + 1` per target) and write (the claiming source writes); add as a
//! copy and a pass of atomic adds, f32 through `atomicCompareExchangeWeak` on the bits
//! (`atomic<u32>` and `bitcast`, WGSL has no float atomics). Indices are read as u32, so a
//! negative i32 is out of range; an index out of range sets the fault word to 1. Each pass
//! declares its own bindings (a buffer is atomic in one pass and plain in another).

use super::{Geom, Kind, parts};
use crate::intrinsics::wgsl::stride;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for, storage_type};
use crate::proggen::sequence::IntrinsicCall;

/// The plan for `call` (data, indices, values).
pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    let (kind, _) = parts(&call.op);
    let g = Geom::of(call);
    let ity = match call.in_dtypes[1] {
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("scatter indices of type {d}"))),
    };
    let t = storage_type(call.dtype);
    let (n_out, n_src, n_idx) = (g.n_out(), g.n_src(), g.n_idx);
    if n_src >= u32::MAX as usize || n_out >= u32::MAX as usize {
        return Err(Unsupported(
            "wgsl: scatter of 2^32 - 1 or more elements".into(),
        ));
    }
    let n_check = n_src.max(n_idx);
    let post = g.post.max(1);
    let pos = if g.along {
        "s".to_string()
    } else {
        format!("(s / {post}u) % {}u", g.ni.max(1))
    };
    let target = format!(
        "((s / {row}u) * {dim}u + i) * {post}u + s % {post}u",
        row = (g.ni * post).max(1),
        dim = g.dim,
    );
    let dim = g.dim;
    let (out_groups, src_groups, check_groups) =
        (groups_for(n_out), groups_for(n_src), groups_for(n_check));
    let (so, ss, sc) = (stride(out_groups), stride(src_groups), stride(check_groups));
    let mut source = String::new();
    if kind == Kind::Add {
        let (atom, add) = match call.dtype {
            DType::F32 => (
                "atomic<u32>",
                "var old = atomicLoad(&a_out[t]);
        loop {
          let r = atomicCompareExchangeWeak(&a_out[t], old, bitcast<u32>(bitcast<f32>(old) + v));
          if (r.exchanged) { break; }
          old = r.old_value;
        }",
            ),
            DType::I32 => ("atomic<i32>", "atomicAdd(&a_out[t], v);"),
            DType::U32 => ("atomic<u32>", "atomicAdd(&a_out[t], v);"),
            d => return Err(Unsupported(format!("wgsl: scatter_add of {d}"))),
        };
        source.push_str(&format!(
            "@group(0) @binding(0) var<storage, read> c_data: array<{t}>;
@group(0) @binding(1) var<storage, read_write> c_out: array<{t}>;

@compute @workgroup_size({LOCAL})
fn af_scatter_copy(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var t = gid.x; t < {n_out}u; t += {so}u) {{ c_out[t] = c_data[t]; }}
}}

@group(0) @binding(0) var<storage, read> a_idx: array<{ity}>;
@group(0) @binding(1) var<storage, read> a_vals: array<{t}>;
@group(0) @binding(2) var<storage, read_write> a_out: array<{atom}>;
@group(0) @binding(3) var<storage, read_write> a_fault: array<atomic<u32>>;

@compute @workgroup_size({LOCAL})
fn af_scatter_add(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var s = gid.x; s < {n_check}u; s += {sc}u) {{
    if (s < {n_idx}u && u32(a_idx[s]) >= {dim}u) {{ atomicStore(&a_fault[0], 1u); }}
    if (s < {n_src}u) {{
      let i = u32(a_idx[{pos}]);
      if (i < {dim}u) {{
        let t = {target};
        let v = a_vals[s];
        {add}
      }}
    }}
  }}
}}
"
        ));
        return Ok(GpuPlan {
            source,
            scratch: vec![4],
            passes: vec![
                pass(
                    "af_scatter_copy",
                    vec![BufArg::Input(0), BufArg::Output(0)],
                    out_groups,
                ),
                pass(
                    "af_scatter_add",
                    vec![
                        BufArg::Input(1),
                        BufArg::Input(2),
                        BufArg::Output(0),
                        BufArg::Scratch(0),
                    ],
                    check_groups,
                ),
            ],
            fault: Some(0),
            immediate_words: None,
        });
    }
    source.push_str(&format!(
        "@group(0) @binding(0) var<storage, read> i_data: array<{t}>;
@group(0) @binding(1) var<storage, read_write> i_out: array<{t}>;
@group(0) @binding(2) var<storage, read_write> i_claim: array<u32>;

@compute @workgroup_size({LOCAL})
fn af_scatter_init(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var t = gid.x; t < {n_out}u; t += {so}u) {{
    i_out[t] = i_data[t];
    i_claim[t] = 0u;
  }}
}}

@group(0) @binding(0) var<storage, read> c_idx: array<{ity}>;
@group(0) @binding(1) var<storage, read_write> c_claim: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> c_fault: array<atomic<u32>>;

@compute @workgroup_size({LOCAL})
fn af_scatter_claim(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var s = gid.x; s < {n_check}u; s += {sc}u) {{
    if (s < {n_idx}u && u32(c_idx[s]) >= {dim}u) {{ atomicStore(&c_fault[0], 1u); }}
    if (s < {n_src}u) {{
      let i = u32(c_idx[{pos}]);
      if (i < {dim}u) {{ atomicMax(&c_claim[{target}], s + 1u); }}
    }}
  }}
}}

@group(0) @binding(0) var<storage, read> w_idx: array<{ity}>;
@group(0) @binding(1) var<storage, read> w_vals: array<{t}>;
@group(0) @binding(2) var<storage, read> w_claim: array<u32>;
@group(0) @binding(3) var<storage, read_write> w_out: array<{t}>;

@compute @workgroup_size({LOCAL})
fn af_scatter_write(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var s = gid.x; s < {n_src}u; s += {ss}u) {{
    let i = u32(w_idx[{pos}]);
    if (i < {dim}u) {{
      let t = {target};
      if (w_claim[t] == s + 1u) {{ w_out[t] = w_vals[s]; }}
    }}
  }}
}}
"
    ));
    Ok(GpuPlan {
        source,
        scratch: vec![4, (n_out as u64 * 4).max(4)],
        passes: vec![
            pass(
                "af_scatter_init",
                vec![BufArg::Input(0), BufArg::Output(0), BufArg::Scratch(1)],
                out_groups,
            ),
            pass(
                "af_scatter_claim",
                vec![BufArg::Input(1), BufArg::Scratch(1), BufArg::Scratch(0)],
                check_groups,
            ),
            pass(
                "af_scatter_write",
                vec![
                    BufArg::Input(1),
                    BufArg::Input(2),
                    BufArg::Scratch(1),
                    BufArg::Output(0),
                ],
                src_groups,
            ),
        ],
        fault: Some(0),
        immediate_words: None,
    })
}

fn pass(entry: &str, buffers: Vec<BufArg>, groups: u32) -> Pass {
    Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups,
        local: LOCAL,
    }
}
