//! Counting in WGSL, the passes of `opencl.rs`: `af_count_zero`, then `af_count` with counts in
//! each thread's registers added by a tree in workgroup memory (at most [`PRIVATE_BINS`] bins)
//! or workgroup `atomic<u32>` counters (at most [`LOCAL_BINS`]), on a bounded number of
//! work-groups, added to the global counts at the end, or global atomics past that. A NaN is
//! recognised from its bits (WGSL lets an implementation assume there are none), so it is never
//! counted whatever the device does with its comparisons. Values of i32 are read as u32, so a
//! negative one is out of range (`bincount` sets the fault word and keeps the lowest bad position
//! in its second word, `debug::trap::device`).

use super::opencl::{LOCAL_BINS, MAX_COUNT_GROUPS, PER_THREAD, PRIVATE_BINS};
use crate::intrinsics::wgsl::stride;
use crate::ir::{DType, Intrinsic};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};
use crate::proggen::sequence::IntrinsicCall;

pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    let n = call.in_shapes[0].iter().product::<usize>();
    let (hist, bins) = match call.op {
        Intrinsic::Histogram { bins } => (true, bins),
        Intrinsic::Bincount { length } => (false, length),
        _ => unreachable!(),
    };
    if bins >= u32::MAX as usize {
        return Err(Unsupported("wgsl: 2^32 - 1 or more bins".into()));
    }
    let xt = match call.in_dtypes[0] {
        DType::F32 => "f32",
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("wgsl: counting {d} values"))),
    };
    let local = bins > 0 && bins <= LOCAL_BINS;
    // bincount keeps the lowest bad position as the first-failing word
    // (`debug::trap::device`), where it fits.
    let first = !hist && crate::debug::trap::device::fits(n, 1);
    let raise = if first {
        format!(
            " {}",
            crate::debug::trap::device::wgsl_raise("k_fault", "i")
        )
    } else {
        String::new()
    };
    let count_groups = if local {
        (n.div_ceil(LOCAL as usize * PER_THREAD as usize)
            .min(MAX_COUNT_GROUPS as usize)) as u32
    } else {
        groups_for(n)
    };
    let private = bins > 0 && bins <= PRIVATE_BINS;
    let incs: String = (0..bins.min(PRIVATE_BINS))
        .map(|b| format!(" c{b} += select(0u, 1u, b == {b}u);"))
        .collect();
    let add = if private {
        incs.as_str()
    } else if local {
        "atomicAdd(&k_local[b], 1u);"
    } else {
        "atomicAdd(&k_counts[b], 1u);"
    };
    let (decls, head, body) = if hist {
        let last = bins - 1;
        (
            "@group(0) @binding(0) var<storage, read> k_x: array<f32>;
@group(0) @binding(1) var<storage, read> k_edges: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_counts: array<atomic<u32>>;"
                .to_string(),
            format!(
                "let e0 = k_edges[0];
  let e1 = k_edges[{bins}];
  let scale = f32({bins}) / (e1 - e0);"
            ),
            format!(
                "let x = k_x[i];
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    if (!nan && x >= e0 && x <= e1) {{
      let g = (x - e0) * scale;
      var b = 0u;
      if (g >= f32({bins})) {{ b = {last}u; }} else if (g > 0.0) {{ b = u32(g); }}
      if (x < k_edges[b] || (b + 1u < {bins}u && x >= k_edges[b + 1u])) {{
        var lo = 0u;
        var hi = {last}u;
        while (lo < hi) {{
          let mid = (lo + hi + 1u) >> 1u;
          if (k_edges[mid] <= x) {{ lo = mid; }} else {{ hi = mid - 1u; }}
        }}
        b = lo;
      }}
      {add}
    }}"
            ),
        )
    } else {
        (
            format!(
                "@group(0) @binding(0) var<storage, read> k_x: array<{xt}>;
@group(0) @binding(1) var<storage, read_write> k_counts: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> k_fault: array<atomic<u32>>;"
            ),
            String::new(),
            format!(
                "let b = u32(k_x[i]);
    if (b < {bins}u) {{ {add} }} else {{ atomicStore(&k_fault[0], 1u);{raise} }}"
            ),
        )
    };
    let s = stride(count_groups);
    // The same trip count for every thread (as on OpenCL, see `opencl.rs`).
    let trips = n.div_ceil(s as usize);
    let counting = if private {
        let regs: String = (0..bins).map(|b| format!("  var c{b} = 0u;\n")).collect();
        let store: String = (0..bins)
            .map(|b| format!("  k_sh[{}u + lid] = c{b};\n", b * LOCAL as usize))
            .collect();
        format!(
            "var<workgroup> k_sh: array<u32, {shn}>;

@compute @workgroup_size({LOCAL})
fn af_count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
{regs}  {head}
  for (var k = 0u; k < {trips}u; k++) {{
    let i = gid.x + k * {s}u;
    if (i < {n}u) {{
      {body}
    }}
  }}
{store}  workgroupBarrier();
  for (var h = {half}u; h > 0u; h >>= 1u) {{
    for (var w = lid; w < {bins}u * h; w += {LOCAL}u) {{
      let j = w / h;
      let x = w - j * h;
      k_sh[j * {LOCAL}u + x] += k_sh[j * {LOCAL}u + x + h];
    }}
    workgroupBarrier();
  }}
  if (lid < {bins}u) {{
    let c = k_sh[lid * {LOCAL}u];
    if (c != 0u) {{ atomicAdd(&k_counts[lid], c); }}
  }}
}}
",
            shn = bins * LOCAL as usize,
            half = LOCAL / 2,
        )
    } else if local {
        format!(
            "var<workgroup> k_local: array<atomic<u32>, {bins}>;

@compute @workgroup_size({LOCAL})
fn af_count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  for (var b = lid; b < {bins}u; b += {LOCAL}u) {{ atomicStore(&k_local[b], 0u); }}
  workgroupBarrier();
  {head}
  for (var k = 0u; k < {trips}u; k++) {{
    let i = gid.x + k * {s}u;
    if (i < {n}u) {{
      {body}
    }}
  }}
  workgroupBarrier();
  for (var b = lid; b < {bins}u; b += {LOCAL}u) {{
    let c = atomicLoad(&k_local[b]);
    if (c != 0u) {{ atomicAdd(&k_counts[b], c); }}
  }}
}}
"
        )
    } else {
        format!(
            "@compute @workgroup_size({LOCAL})
fn af_count(@builtin(global_invocation_id) gid: vec3<u32>) {{
  {head}
  for (var i = gid.x; i < {n}u; i += {s}u) {{
    {body}
  }}
}}
"
        )
    };
    let zero_groups = groups_for(bins);
    let source = format!(
        "@group(0) @binding(0) var<storage, read_write> z_counts: array<u32>;

@compute @workgroup_size({LOCAL})
fn af_count_zero(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var b = gid.x; b < {bins}u; b += {zs}u) {{ z_counts[b] = 0u; }}
}}

{decls}

{counting}",
        zs = stride(zero_groups),
    );
    let mut buffers = vec![BufArg::Input(0)];
    if hist {
        buffers.push(BufArg::Input(1));
    }
    buffers.push(BufArg::Output(0));
    if !hist {
        buffers.push(BufArg::Scratch(0));
    }
    Ok(GpuPlan {
        source,
        scratch: match (hist, first) {
            (true, _) => Vec::new(),
            (false, false) => vec![4],
            (false, true) => vec![8],
        },
        passes: vec![
            Pass {
                entry: "af_count_zero".into(),
                buffers: vec![BufArg::Output(0)],
                params: false,
                groups: zero_groups,
                local: LOCAL,
            },
            Pass {
                entry: "af_count".into(),
                buffers,
                params: false,
                groups: count_groups,
                local: LOCAL,
            },
        ],
        fault: (!hist).then_some(0),
        immediate_words: None,
        kept: None,
        range: None,
    })
}
