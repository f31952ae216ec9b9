//! Scatter on OpenCL, rendered per call's shapes (see `mod.rs` for where a source lands).
//!
//! Replace (`scatter`, `put_along_axis`), three passes over one program:
//! 1. `af_scatter_init`: `out = data` and the claim array (scratch 1, a u32 per output element)
//!    set to 0;
//! 2. `af_scatter_claim`: each source `s` with a valid index does `atomic_max(claim[t], s + 1)`;
//!    an index out of range sets the fault word (scratch 0) to 1 and keeps the lowest bad
//!    position in its second word (`debug::trap::device`, as gather does; every pass that checks
//!    the indices does both). Every index element is checked, even when there are no sources;
//! 3. `af_scatter_write`: the source whose `s + 1` is its target's claim writes its value, so the
//!    last duplicate in source order wins whatever the threads' timing.
//!
//! Add (`scatter_add`) into few targets (`AddPlan` `Private` or `Local`), two passes:
//! `af_scatter_part` sums each work-group's sources per target (in registers, or in copies of
//! the targets in `__local` memory) and writes one partial per group and target to scratch 1;
//! `af_scatter_sum` adds each target's partials with a tree over a few lanes
//! ([`super::sum_lanes`]) and writes `out = data + sum`. Into many targets (`Atomic`), two
//! passes: `af_scatter_copy` (`out = data`), then `af_scatter_add`: integer atomic adds, or a
//! compare-and-swap loop on the bits of the element for f32 (`atomic_cmpxchg`) and f64
//! (`atom_cmpxchg` of `cl_khr_int64_base_atomics`, also the local plan's; a device without it
//! fails the build, and the call runs on the CPU).

use super::{AddPlan, Geom, Kind, PART_LOCAL, parts, sum_lanes};
use crate::ir::DType;
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for};
use crate::proggen::sequence::IntrinsicCall;

const _: () = assert!(PART_LOCAL == LOCAL as usize);

/// The plan for `call` (data, indices, values).
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let (kind, _) = parts(&call.op);
    let g = Geom::of(call);
    let it = call.in_dtypes[1];
    let in_range = match it {
        DType::I32 => format!("i >= 0 && (ulong)i < {}UL", g.dim),
        DType::U32 => format!("(ulong)i < {}UL", g.dim),
        d => return Err(Unsupported(format!("scatter indices of type {d}"))),
    };
    let (n_out, n_src) = (g.n_out() as u64, g.n_src() as u64);
    if n_src >= u32::MAX as u64 {
        return Err(Unsupported(
            "scatter of 2^32 - 1 or more sources (claims are u32)".into(),
        ));
    }
    let (ty, it) = (ctype(call.dtype), ctype(it));
    // Source `s`: its index element, and the target of index `i`.
    let post = g.post.max(1);
    let pos = if g.along {
        "s".to_string()
    } else {
        format!("(s / {post}UL) % {}UL", g.ni.max(1))
    };
    let target = format!(
        "((s / {row}UL) * {dim}UL + (ulong)i) * {post}UL + s % {post}UL",
        row = (g.ni * post).max(1),
        dim = g.dim,
    );
    let n_check = n_src.max(g.n_idx as u64);
    // The lowest bad index position is kept as the first-failing word (`debug::trap::device`),
    // where it fits.
    let first = crate::debug::trap::device::fits(g.n_idx, 1);
    let (keep, tail) = first_parts(first);
    let fault_bytes = if first { 8 } else { 4 };
    let mut source = head(t);
    if kind == Kind::Add && call.dtype == DType::F64 {
        source.push_str("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n");
    }
    let out_groups = groups_for(n_out, LOCAL as u64);
    let src_groups = groups_for(n_src, LOCAL as u64);
    let check_groups = groups_for(n_check, LOCAL as u64);
    if kind == Kind::Add {
        let plan = AddPlan::of(&g, call.dtype.size());
        if plan != AddPlan::Atomic {
            // The plan keeps every source position below 2^32: 32-bit arithmetic.
            let pos = if g.along {
                "s".to_string()
            } else {
                format!("(s / {post}u) % {}u", g.ni.max(1))
            };
            let target = format!(
                "((s / {row}u) * {dim}u + (uint)i) * {post}u + s % {post}u",
                row = (g.ni * post).max(1),
                dim = g.dim,
            );
            let w = Walk {
                it,
                in_range: &in_range,
                pos: &pos,
                target: &target,
                n_idx: g.n_idx as u64,
                n_src,
                n_check,
                first,
            };
            return privatised(call.dtype, source, &w, n_out as usize, plan);
        }
        let add = match call.dtype {
            DType::F32 => "  volatile __global uint *u = (volatile __global uint *)p;
  uint old = *u;
  for (;;) {
    const uint seen = old;
    old = atomic_cmpxchg(u, seen, as_uint(as_float(seen) + v));
    if (old == seen) break;
  }"
            .to_string(),
            DType::F64 => "  volatile __global ulong *u = (volatile __global ulong *)p;
  ulong old = *u;
  for (;;) {
    const ulong seen = old;
    old = atom_cmpxchg(u, seen, as_ulong(as_double(seen) + v));
    if (old == seen) break;
  }"
            .to_string(),
            DType::I32 => "  atomic_add((volatile __global int *)p, v);".to_string(),
            DType::U32 => "  atomic_add((volatile __global uint *)p, v);".to_string(),
            d => return Err(Unsupported(format!("scatter_add of {d}"))),
        };
        source.push_str(&format!(
            r#"
{ENTRY_ATTR}
void af_scatter_copy(__global const {ty} *data, __global {ty} *out) {{
  for (ulong t = get_global_id(0); t < {n_out}UL; t += get_global_size(0)) out[t] = data[t];
}}

static void af_add_at(__global {ty} *p, const {ty} v) {{
{add}
}}

{ENTRY_ATTR}
void af_scatter_add(__global const {it} *idx, __global const {ty} *vals, __global {ty} *out, __global u32 *af_fault) {{
  u32 fault = 0u, af_first = 0u;
  for (ulong s = get_global_id(0); s < {n_check}UL; s += get_global_size(0)) {{
    if (s < {n_idx}UL) {{ const {it} i = idx[s]; if (!({in_range})) {{ fault = 1u;{keep} }} }}
    if (s < {n_src}UL) {{
      const {it} i = idx[{pos}];
      if ({in_range}) af_add_at(out + ({target}), vals[s]);
    }}
  }}
  {tail}
}}
"#,
            n_idx = g.n_idx,
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
        r#"
{ENTRY_ATTR}
void af_scatter_init(__global const {ty} *data, __global {ty} *out, __global uint *claim) {{
  for (ulong t = get_global_id(0); t < {n_out}UL; t += get_global_size(0)) {{
    out[t] = data[t];
    claim[t] = 0u;
  }}
}}

{ENTRY_ATTR}
void af_scatter_claim(__global const {it} *idx, __global uint *claim, __global u32 *af_fault) {{
  u32 fault = 0u, af_first = 0u;
  for (ulong s = get_global_id(0); s < {n_check}UL; s += get_global_size(0)) {{
    if (s < {n_idx}UL) {{ const {it} i = idx[s]; if (!({in_range})) {{ fault = 1u;{keep} }} }}
    if (s < {n_src}UL) {{
      const {it} i = idx[{pos}];
      if ({in_range}) atomic_max((volatile __global uint *)(claim + ({target})), (uint)(s + 1UL));
    }}
  }}
  {tail}
}}

{ENTRY_ATTR}
void af_scatter_write(__global const {it} *idx, __global const {ty} *vals, __global const uint *claim, __global {ty} *out) {{
  for (ulong s = get_global_id(0); s < {n_src}UL; s += get_global_size(0)) {{
    const {it} i = idx[{pos}];
    if ({in_range}) {{
      const ulong t = {target};
      if (claim[t] == (uint)(s + 1UL)) out[t] = vals[s];
    }}
  }}
}}
"#,
        n_idx = g.n_idx,
    ));
    Ok(GpuPlan {
        source,
        scratch: vec![fault_bytes, (n_out * 4).max(4)],
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

/// What a pass over the sources of a `scatter_add` needs: the index type, the test of an index
/// `i`, the index position and target of source `s` (a `uint`: the privatised plans keep every
/// source position below 2^32), the counts, and whether the fault buffer keeps the lowest bad
/// position.
struct Walk<'a> {
    it: &'a str,
    in_range: &'a str,
    pos: &'a str,
    target: &'a str,
    n_idx: u64,
    n_src: u64,
    n_check: u64,
    /// Whether the lowest bad index position is kept in the fault buffer's second word.
    first: bool,
}

impl Walk<'_> {
    /// The loop of a privatised pass over `groups` work-groups: every index element checked
    /// (`fault` set for one out of range, and `af_first` raised to its word where kept), and for each source with a valid index `add` run with
    /// its target `t` (a `uint`) and value `v` (of type `acc`). Every thread makes the same
    /// number of trips (barriers follow).
    fn walk(&self, groups: u32, acc: &str, add: &str) -> String {
        let threads = groups as u64 * PART_LOCAL as u64;
        let trips = self.n_check.div_ceil(threads);
        let Walk {
            it,
            in_range,
            pos,
            target,
            n_idx,
            n_src,
            first,
            ..
        } = self;
        let (keep, _) = first_parts(*first);
        format!(
            "u32 fault = 0u, af_first = 0u;
  for (uint k = 0u; k < {trips}u; k++) {{
    const uint s = (uint)get_global_id(0) + k * {threads}u;
    if (s < {n_idx}u) {{ const {it} i = idx[s]; if (!({in_range})) {{ fault = 1u;{keep} }} }}
    if (s < {n_src}u) {{
      const {it} i = idx[{pos}];
      if ({in_range}) {{
        const uint t = (uint)({target});
        const {acc} v = ({acc})vals[s];
{add}
      }}
    }}
  }}"
        )
    }
}

/// The privatised `scatter_add` (see `AddPlan`): `af_scatter_part` writes one partial sum per
/// work-group and target to scratch 1 (`[group][target]`), `af_scatter_sum` adds a target's
/// partials with a tree over its lanes and writes `data + sum`. Integers add as `uint`
/// (wrapping); float sums start from `-0.0`, the identity of `+`, so a target no source names
/// keeps its data bit for bit.
fn privatised(
    dtype: DType,
    mut source: String,
    w: &Walk,
    t: usize,
    plan: AddPlan,
) -> Result<GpuPlan, Unsupported> {
    let ty = ctype(dtype);
    let (_, tail) = first_parts(w.first);
    let (acc, zero) = match dtype {
        DType::F32 => ("float", "-0.0f"),
        DType::F64 => ("double", "-0.0"),
        DType::I32 | DType::U32 => ("uint", "0u"),
        d => return Err(Unsupported(format!("scatter_add of {d}"))),
    };
    let l = PART_LOCAL;
    let (groups, part) = match plan {
        AddPlan::Private { groups, chunk } => {
            let regs: Vec<String> = (0..t).map(|b| format!("a{b} = {zero}")).collect();
            let adds: String = (0..t)
                .map(|b| format!("        a{b} += t == {b}u ? v : {zero};\n"))
                .collect();
            let mut reduce = String::new();
            for c in (0..t).step_by(chunk) {
                let n = chunk.min(t - c);
                for j in 0..n {
                    reduce.push_str(&format!("  sh[{}u + l] = a{};\n", j * l, c + j));
                }
                reduce.push_str(&format!(
                    "  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = {half}u; h > 0u; h >>= 1) {{
    for (uint w = l; w < {n}u * h; w += {l}u) {{
      const uint b = w / h, x = w - b * h;
      sh[b * {l}u + x] += sh[b * {l}u + x + h];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (l < {n}u) part[(ulong)get_group_id(0) * {t}UL + {c}UL + l] = sh[l * {l}u];
  barrier(CLK_LOCAL_MEM_FENCE);
",
                    half = l / 2
                ));
            }
            let walk = w.walk(groups, acc, adds.trim_end());
            let part = format!(
                r#"
{ENTRY_ATTR}
void af_scatter_part(__global const {it} *idx, __global const {ty} *vals, __global {acc} *part, __global u32 *af_fault) {{
  __local {acc} sh[{shn}];
  const uint l = get_local_id(0);
  {acc} {regs};
  {walk}
{reduce}  {tail}
}}
"#,
                it = w.it,
                shn = chunk * l,
                regs = regs.join(", "),
            );
            (groups, part)
        }
        AddPlan::Local { groups, copies } => {
            let add = match dtype {
                DType::F32 => {
                    "  volatile __local uint *u = (volatile __local uint *)p;
  uint old = *u;
  for (;;) {
    const uint seen = old;
    old = atomic_cmpxchg(u, seen, as_uint(as_float(seen) + v));
    if (old == seen) break;
  }"
                }
                DType::F64 => {
                    "  volatile __local ulong *u = (volatile __local ulong *)p;
  ulong old = *u;
  for (;;) {
    const ulong seen = old;
    old = atom_cmpxchg(u, seen, as_ulong(as_double(seen) + v));
    if (old == seen) break;
  }"
                }
                _ => "  atomic_add((volatile __local uint *)p, v);",
            };
            let sum: String = (1..copies)
                .map(|c| format!(" a += lh[{}u + t];", c * t))
                .collect();
            let walk = w.walk(groups, acc, "        af_local_add(mine + t, v);");
            let part = format!(
                r#"
static void af_local_add(__local {acc} *p, const {acc} v) {{
{add}
}}

{ENTRY_ATTR}
void af_scatter_part(__global const {it} *idx, __global const {ty} *vals, __global {acc} *part, __global u32 *af_fault) {{
  __local {acc} lh[{n}];
  const uint l = get_local_id(0);
  for (uint b = l; b < {n}u; b += {l}u) lh[b] = {zero};
  barrier(CLK_LOCAL_MEM_FENCE);
  __local {acc} *mine = lh + (l % {copies}u) * {t}u;
  {walk}
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint t = l; t < {t}u; t += {l}u) {{
    {acc} a = lh[t];{sum}
    part[(ulong)get_group_id(0) * {t}UL + t] = a;
  }}
  {tail}
}}
"#,
                it = w.it,
                n = copies * t,
            );
            (groups, part)
        }
        AddPlan::Atomic => unreachable!("the atomic plan is not privatised"),
    };
    source.push_str(&part);
    let lanes = sum_lanes(groups);
    let per = l / lanes;
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_scatter_sum(__global const {ty} *data, __global const {acc} *part, __global {ty} *out) {{
  __local {acc} sh[{l}];
  const uint l = get_local_id(0), r = l % {lanes}u;
  const uint t = get_group_id(0) * {per}u + l / {lanes}u;
  {acc} a = {zero};
  if (t < {t}u) for (uint g = r; g < {groups}u; g += {lanes}u) a += part[(ulong)g * {t}UL + t];
  sh[l] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = {half}u; h > 0u; h >>= 1) {{
    if (r < h) sh[l] += sh[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (r == 0u && t < {t}u) out[t] = {store}(({acc})data[t] + sh[l]);
}}
"#,
        half = lanes / 2,
        store = if dtype == DType::I32 { "as_int" } else { "" },
    ));
    let el = dtype.size() as u64;
    Ok(GpuPlan {
        source,
        scratch: vec![if w.first { 8 } else { 4 }, groups as u64 * t as u64 * el],
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

/// What a checking pass adds for a bad index at position `s` (`af_first` raised to its
/// first-failing word, `debug::trap::device`), and its last line (the fault word set, and the
/// second word raised where `first`).
fn first_parts(first: bool) -> (String, String) {
    use crate::debug::trap::device::{OPENCL_RAISE, opencl_keep};
    let set = "if (fault != 0u) af_fault[0] = fault;";
    if first {
        (
            format!(" {}", opencl_keep("s")),
            format!("{set}\n  {OPENCL_RAISE}"),
        )
    } else {
        (String::new(), set.to_string())
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

/// The program's first lines: the element type names of the primitive library and f64 where the
/// device has it (the library itself is not needed: a smaller source builds faster).
pub fn head(t: Target) -> String {
    let mut s = String::from("#pragma OPENCL FP_CONTRACT OFF\n");
    s.push_str("typedef float f32; typedef int i32; typedef uint u32; typedef uchar b8;\n");
    if t.fp64 {
        s.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double f64;\n");
    }
    s
}
