//! Counting on OpenCL, two passes of one program: `af_count_zero` zeroes the counts, then
//! `af_count` walks the input with a grid-stride loop. With at most [`PRIVATE_BINS`] bins each
//! thread counts in registers and a tree in `__local` memory adds the threads' counts; with at
//! most [`LOCAL_BINS`] each work-group counts into `__local` counters (`atomic_inc`). Either
//! adds each non-zero count to the global counts (`atomic_add`) at its end, with a bounded number
//! of work-groups so that the global adds stay few; with more bins the threads add to the global
//! counts directly.
//! `bincount` sets the fault word (scratch 0) for a value out of range and keeps the lowest bad
//! position in its second word (`debug::trap::device`, as gather does); `histogram` bins as
//! `mod.rs` says (a guess, settled by comparisons with the edges, input 1).

use crate::ir::{DType, Intrinsic};
use crate::proggen::codegen::c::ctype;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for};
use crate::proggen::sequence::IntrinsicCall;

/// Most bins counted in local memory (16 KiB of u32 counters).
pub const LOCAL_BINS: usize = 4096;
/// Most work-groups of a locally counting pass (each adds up to `bins` global atomics).
pub const MAX_COUNT_GROUPS: u64 = 1024;
/// Elements a thread of a locally counting pass takes at least.
pub const PER_THREAD: u64 = 16;
/// Most bins a thread counts in its own registers (a tree in local memory then adds the threads'
/// counts: no local atomics, which collide when 256 threads count into a handful of bins).
pub const PRIVATE_BINS: usize = 16;

/// The tree that adds `n` per-thread values `sh[j * 256 + l]` (`j < n`, `l` the thread) into
/// `sh[j * 256]`, ending with a barrier (OpenCL C; `local` threads, a power of two).
fn tree_c(n: usize, local: u32) -> String {
    format!(
        "barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = {half}u; h > 0u; h >>= 1) {{
    for (uint w = l; w < {n}u * h; w += {local}u) {{
      const uint j = w / h, x = w - j * h;
      sh[j * {local}u + x] += sh[j * {local}u + x + h];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}",
        half = local / 2
    )
}

/// The bin of `x` (in `b`, a `uint`) from `edges`, `bins`, `e0`, `e1` and `scale` in scope.
pub fn bin_code(bins: usize, ty: &str) -> String {
    format!(
        "const {ty} g = (x - e0) * scale;
      uint b = g >= ({ty}){bins} ? {last}u : (g > ({ty})0 ? (uint)g : 0u);
      if (x < edges[b] || (b + 1u < {bins}u && x >= edges[b + 1u])) {{
        uint lo = 0u, hi = {last}u;
        while (lo < hi) {{
          const uint mid = (lo + hi + 1u) >> 1;
          if (edges[mid] <= x) lo = mid; else hi = mid - 1u;
        }}
        b = lo;
      }}",
        last = bins - 1
    )
}

pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let n = call.in_shapes[0].iter().product::<usize>() as u64;
    let (hist, bins) = match call.op {
        Intrinsic::Histogram { bins } => (true, bins),
        Intrinsic::Bincount { length } => (false, length),
        _ => unreachable!(),
    };
    let xt = ctype(call.in_dtypes[0]);
    let local = bins > 0 && bins <= LOCAL_BINS;
    // bincount keeps the lowest bad position as the first-failing word
    // (`debug::trap::device`), where it fits.
    let first = !hist && crate::debug::trap::device::fits(n as usize, 1);
    let keep = if first {
        format!(" {}", crate::debug::trap::device::opencl_keep("i"))
    } else {
        String::new()
    };
    let (head, args, body) = if hist {
        (
            format!(
                "const {xt} e0 = edges[0], e1 = edges[{bins}];
  const {xt} scale = ({xt}){bins} / (e1 - e0);"
            ),
            format!("__global const {xt} *data, __global const {xt} *edges, __global uint *counts"),
            format!(
                "const {xt} x = data[i];
    if (x >= e0 && x <= e1) {{
      {}
      AF_COUNT(b);
    }}",
                bin_code(bins, xt)
            ),
        )
    } else {
        let check = match call.in_dtypes[0] {
            DType::I32 => format!("v >= 0 && (ulong)v < {bins}UL"),
            DType::U32 => format!("(ulong)v < {bins}UL"),
            d => return Err(Unsupported(format!("bincount of {d}"))),
        };
        (
            "u32 fault = 0u, af_first = 0u;".to_string(),
            format!("__global const {xt} *data, __global uint *counts, __global u32 *af_fault"),
            format!(
                "const {xt} v = data[i];
    if ({check}) {{ const uint b = (uint)v; AF_COUNT(b); }} else {{ fault = 1u;{keep} }}"
            ),
        )
    };
    let tail = match (hist, first) {
        (true, _) => String::new(),
        (false, false) => "if (fault != 0u) af_fault[0] = fault;".to_string(),
        (false, true) => format!(
            "if (fault != 0u) af_fault[0] = fault;\n  {}",
            crate::debug::trap::device::OPENCL_RAISE
        ),
    };
    let count_groups = if local {
        groups_for(n, LOCAL as u64 * PER_THREAD).min(MAX_COUNT_GROUPS as u32)
    } else {
        groups_for(n, LOCAL as u64)
    };
    // The locally counting loop has a trip count the same for every thread (PoCL miscompiled the
    // grid-stride form around the barriers when the input had one element: every thread, or
    // none, counted it).
    let threads = count_groups.max(1) as u64 * LOCAL as u64;
    let trips = n.div_ceil(threads);
    let mut source = crate::intrinsics::scatter::opencl_head(t);
    let private = bins > 0 && bins <= PRIVATE_BINS;
    let counting = if private {
        let regs: Vec<String> = (0..bins).map(|b| format!("c{b} = 0u")).collect();
        let incs: String = (0..bins)
            .map(|b| format!(" c{b} += (b) == {b}u ? 1u : 0u;"))
            .collect();
        let store: String = (0..bins)
            .map(|b| format!("  sh[{}u + l] = c{b};\n", b * LOCAL as usize))
            .collect();
        let tree = tree_c(bins, LOCAL);
        format!(
            r#"
#define AF_COUNT(b) {{{incs} }}
{ENTRY_ATTR}
void af_count({args}) {{
  __local uint sh[{shn}];
  const uint l = get_local_id(0);
  uint {regs};
  {head}
  for (uint k = 0u; k < {trips}u; k++) {{
    const ulong i = get_global_id(0) + (ulong)k * {threads}UL;
    if (i < {n}UL) {{
      {body}
    }}
  }}
{store}  {tree}
  if (l < {bins}u) {{
    const uint c = sh[l * {LOCAL}u];
    if (c != 0u) atomic_add(&counts[l], c);
  }}
  {tail}
}}
"#,
            shn = bins * LOCAL as usize,
            regs = regs.join(", "),
        )
    } else if local {
        format!(
            r#"
#define AF_COUNT(b) atomic_inc(&lh[b])
{ENTRY_ATTR}
void af_count({args}) {{
  __local uint lh[{bins}];
  for (uint b = get_local_id(0); b < {bins}u; b += {LOCAL}u) lh[b] = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  {head}
  for (uint k = 0u; k < {trips}u; k++) {{
    const ulong i = get_global_id(0) + (ulong)k * {threads}UL;
    if (i < {n}UL) {{
      {body}
    }}
  }}
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint b = get_local_id(0); b < {bins}u; b += {LOCAL}u) {{
    const uint c = lh[b];
    if (c != 0u) atomic_add(&counts[b], c);
  }}
  {tail}
}}
"#
        )
    } else {
        format!(
            r#"
#define AF_COUNT(b) atomic_inc(&counts[b])
{ENTRY_ATTR}
void af_count({args}) {{
  {head}
  for (ulong i = get_global_id(0); i < {n}UL; i += get_global_size(0)) {{
    {body}
  }}
  {tail}
}}
"#
        )
    };
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_count_zero(__global uint *counts) {{
  for (ulong b = get_global_id(0); b < {bins}UL; b += get_global_size(0)) counts[b] = 0u;
}}
{counting}"#
    ));
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
                groups: groups_for(bins as u64, LOCAL as u64),
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
