//! Scatter in WGSL, the same passes as OpenCL's (`opencl.rs`): replace as init (copy, claims to
//! 0), claim (`atomicMax` of `s + 1` per target) and write (the claiming source writes); add into
//! few targets as partial sums per work-group and a pass adding them onto data (`AddPlan`),
//! into many as a copy and a pass of atomic adds; f32 atomics are `atomicCompareExchangeWeak` on
//! the bits (`atomic<u32>` and `bitcast`, WGSL has no float atomics), in workgroup memory
//! (`Local`) or in the output. Indices are read as u32, so a
//! negative i32 is out of range; an index out of range sets the fault word to 1 and keeps the
//! lowest bad position in its second word (`debug::trap::device`, as gather does). Each pass
//! declares its own bindings (a buffer is atomic in one pass and plain in another).

use super::{AddPlan, Geom, Kind, PART_LOCAL, parts, sum_lanes};
use crate::intrinsics::wgsl::stride;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for, storage_type};
use crate::proggen::sequence::IntrinsicCall;

const _: () = assert!(PART_LOCAL == LOCAL as usize);

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
    // The lowest bad index position is kept as the first-failing word (`debug::trap::device`),
    // where it fits.
    let first = crate::debug::trap::device::fits(n_idx, 1);
    let fault_bytes = if first { 8 } else { 4 };
    let (ra, rc) = (raise("a_fault", first), raise("c_fault", first));
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
        let plan = AddPlan::of(&g, call.dtype.size());
        if plan != AddPlan::Atomic {
            let w = Walk {
                ity,
                pos: &pos,
                target: &target,
                dim,
                n_idx,
                n_src,
                n_check,
                first,
            };
            return privatised(call.dtype, &w, n_out, plan);
        }
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
    if (s < {n_idx}u && u32(a_idx[s]) >= {dim}u) {{ {ra} }}
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
            scratch: vec![fault_bytes],
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
            kept: None,
            range: None,
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
    if (s < {n_idx}u && u32(c_idx[s]) >= {dim}u) {{ {rc} }}
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
        scratch: vec![fault_bytes, (n_out as u64 * 4).max(4)],
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
        kept: None,
        range: None,
    })
}

/// What a pass over the sources of a `scatter_add` needs (as in `opencl.rs`): the index type,
/// the index position and target of source `s` (with `i` its index), the axis length, counts,
/// and whether the fault buffer keeps the lowest bad position.
struct Walk<'a> {
    ity: &'a str,
    pos: &'a str,
    target: &'a str,
    dim: usize,
    n_idx: usize,
    n_src: usize,
    n_check: usize,
    /// Whether the lowest bad index position is kept in the fault buffer's second word.
    first: bool,
}

impl Walk<'_> {
    /// The loop of a privatised pass over `groups` work-groups: every index element checked (the
    /// fault word set for one out of range), and for each source with a valid index `add` run
    /// with its target `t` and value `v`. Every thread makes the same number of trips.
    fn walk(&self, groups: u32, add: &str) -> String {
        let threads = groups as usize * PART_LOCAL;
        let trips = self.n_check.div_ceil(threads);
        let Walk {
            pos,
            target,
            dim,
            n_idx,
            n_src,
            first,
            ..
        } = self;
        let rp = raise("p_fault", *first);
        format!(
            "for (var k = 0u; k < {trips}u; k++) {{
    let s = gid.x + k * {threads}u;
    if (s < {n_idx}u && u32(p_idx[s]) >= {dim}u) {{ {rp} }}
    if (s < {n_src}u) {{
      let i = u32(p_idx[{pos}]);
      if (i < {dim}u) {{
        let t = {target};
        let v = p_vals[s];
{add}
      }}
    }}
  }}"
        )
    }
}

/// The privatised `scatter_add` (see `AddPlan` and `opencl.rs`): `af_scatter_part` writes one
/// partial sum per work-group and target to scratch 1, `af_scatter_sum` adds them with a tree
/// over each target's lanes onto data. f32 sums start from `-0.0` (the identity of `+`);
/// the local plan adds f32 with a compare-and-swap on the bits in workgroup memory.
fn privatised(dtype: DType, w: &Walk, t: usize, plan: AddPlan) -> Result<GpuPlan, Unsupported> {
    let ty = match dtype {
        DType::F32 => "f32",
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("wgsl: scatter_add of {d}"))),
    };
    let zero = if dtype == DType::F32 {
        "bitcast<f32>(0x80000000u)"
    } else {
        "0"
    };
    let l = PART_LOCAL;
    let ity = w.ity;
    let head = format!(
        "@group(0) @binding(0) var<storage, read> p_idx: array<{ity}>;
@group(0) @binding(1) var<storage, read> p_vals: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> p_part: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> p_fault: array<atomic<u32>>;
"
    );
    let entry = "@compute @workgroup_size(256)
fn af_scatter_part(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) l: u32) {";
    let (groups, part) = match plan {
        AddPlan::Private { groups, chunk } => {
            let regs: String = (0..t).map(|b| format!("  var a{b}: {ty} = z;\n")).collect();
            let adds: String = (0..t)
                .map(|b| format!("        a{b} += select(z, v, t == {b}u);\n"))
                .collect();
            let mut reduce = String::new();
            for c in (0..t).step_by(chunk) {
                let n = chunk.min(t - c);
                for j in 0..n {
                    reduce.push_str(&format!("  p_sh[{}u + l] = a{};\n", j * l, c + j));
                }
                reduce.push_str(&format!(
                    "  workgroupBarrier();
  for (var h = {half}u; h > 0u; h >>= 1u) {{
    for (var w = l; w < {n}u * h; w += {l}u) {{
      let b = w / h;
      let x = w - b * h;
      p_sh[b * {l}u + x] += p_sh[b * {l}u + x + h];
    }}
    workgroupBarrier();
  }}
  if (l < {n}u) {{ p_part[wid.x * {t}u + {c}u + l] = p_sh[l * {l}u]; }}
  workgroupBarrier();
",
                    half = l / 2
                ));
            }
            let walk = w.walk(groups, adds.trim_end());
            let part = format!(
                "{head}var<workgroup> p_sh: array<{ty}, {shn}>;

{entry}
  let z: {ty} = {zero};
{regs}  {walk}
{reduce}}}
",
                shn = chunk * l,
            );
            (groups, part)
        }
        AddPlan::Local { groups, copies } => {
            let (atom, init, add, load) = if dtype == DType::F32 {
                (
                    "u32",
                    "0x80000000u",
                    "        var old = atomicLoad(&p_lh[m + t]);
        loop {
          let r = atomicCompareExchangeWeak(&p_lh[m + t], old, bitcast<u32>(bitcast<f32>(old) + v));
          if (r.exchanged) { break; }
          old = r.old_value;
        }",
                    "bitcast<f32>(atomicLoad(&p_lh[{i}]))",
                )
            } else {
                (
                    ty,
                    "0",
                    "        atomicAdd(&p_lh[m + t], v);",
                    "atomicLoad(&p_lh[{i}])",
                )
            };
            let sum: String = (0..copies)
                .map(|c| {
                    let x = load.replace("{i}", &format!("{}u + t", c * t));
                    if c == 0 {
                        format!("var a = {x};")
                    } else {
                        format!(" a += {x};")
                    }
                })
                .collect();
            let walk = w.walk(groups, add);
            let part = format!(
                "{head}var<workgroup> p_lh: array<atomic<{atom}>, {n}>;

{entry}
  for (var b = l; b < {n}u; b += {l}u) {{ atomicStore(&p_lh[b], {init}); }}
  workgroupBarrier();
  let m = (l % {copies}u) * {t}u;
  {walk}
  workgroupBarrier();
  for (var t = l; t < {t}u; t += {l}u) {{
    {sum}
    p_part[wid.x * {t}u + t] = a;
  }}
}}
",
                n = copies * t,
            );
            (groups, part)
        }
        AddPlan::Atomic => unreachable!("the atomic plan is not privatised"),
    };
    let lanes = sum_lanes(groups);
    let per = l / lanes;
    let source = format!(
        "{part}
@group(0) @binding(0) var<storage, read> q_data: array<{ty}>;
@group(0) @binding(1) var<storage, read> q_part: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> q_out: array<{ty}>;
var<workgroup> q_sh: array<{ty}, {l}>;

@compute @workgroup_size(256)
fn af_scatter_sum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) l: u32) {{
  let r = l % {lanes}u;
  let t = wid.x * {per}u + l / {lanes}u;
  var a: {ty} = {zero};
  if (t < {t}u) {{
    for (var g = r; g < {groups}u; g += {lanes}u) {{ a += q_part[g * {t}u + t]; }}
  }}
  q_sh[l] = a;
  workgroupBarrier();
  for (var h = {half}u; h > 0u; h >>= 1u) {{
    if (r < h) {{ q_sh[l] += q_sh[l + h]; }}
    workgroupBarrier();
  }}
  if (r == 0u && t < {t}u) {{ q_out[t] = q_data[t] + q_sh[l]; }}
}}
",
        half = lanes / 2
    );
    Ok(GpuPlan {
        source,
        scratch: vec![if w.first { 8 } else { 4 }, groups as u64 * t as u64 * 4],
        passes: vec![
            pass(
                "af_scatter_part",
                vec![
                    BufArg::Input(1),
                    BufArg::Input(2),
                    BufArg::Scratch(1),
                    BufArg::Scratch(0),
                ],
                groups,
            ),
            pass(
                "af_scatter_sum",
                vec![BufArg::Input(0), BufArg::Scratch(1), BufArg::Output(0)],
                t.div_ceil(per) as u32,
            ),
        ],
        fault: Some(0),
        immediate_words: None,
        kept: None,
        range: None,
    })
}

/// What a checking pass runs for a bad index at position `s`: the fault word (of the atomic
/// buffer `fault`) set, and where `first` its second word raised to the position's first-failing
/// word (`debug::trap::device`).
fn raise(fault: &str, first: bool) -> String {
    if first {
        format!(
            "atomicStore(&{fault}[0], 1u); {}",
            crate::debug::trap::device::wgsl_raise(fault, "s")
        )
    } else {
        format!("atomicStore(&{fault}[0], 1u);")
    }
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
