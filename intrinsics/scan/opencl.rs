//! Scans along an axis on OpenCL: reduce-then-scan in up to five passes over scratch buffers
//! of block (or chunk) totals, laid out by [`GpuLayout`]. No pass waits on another work-group
//! (no single-pass look-back), so the plan needs no forward-progress guarantee.
//!
//! Rows (`post == 1`; blocks of 256 x 16 elements, 256 x 8 for f64; blocks wholly inside the
//! array move 4-byte elements as 16-byte quads through vector pointers):
//! - `af_scan_reduce(x, part)`: per block, its total since its last segment start (a segment
//!   starts at every multiple of `n`), coalesced loads, a tree in local memory;
//! - `af_scan_carry(part)`: up to [`CHUNK`] blocks, one work-group turns the totals into each
//!   block's carry in place (an exclusive segmented scan over blocks); beyond, a work-group per
//!   chunk of [`CHUNK`] totals scans its chunk (`af_scan_carry(part, chunk)`) and one more
//!   work-group scans the chunks' totals (`af_scan_carry_chunks(chunk)`), and
//!   `af_scan_carry_add(part, chunk)` adds each chunk's carry to its blocks' (a single
//!   work-group walking 32768 totals in turn took 47 µs of a 2^27 scan's 500 on an H200; the
//!   block pass combining the two carries itself ran 48 µs slower);
//! - `af_scan_block(x, [part,] y)`: per block, coalesced loads into local memory, each thread a
//!   segmented scan of its consecutive elements, a segmented Hillis-Steele scan of the threads'
//!   totals, the carry added to the elements before the first segment start, coalesced stores.
//!
//! Columns (`post > 1`): `af_scan_cols_reduce`, `af_scan_cols_carry`, `af_scan_cols` (a thread
//! per chunk of a line), or only `af_scan_cols` when each thread takes a whole line.
//! Sums and products accumulate in the element type (integers wrap, through unsigned
//! arithmetic); max and min propagate NaN and keep the earlier of equal values, as the primitive
//! library's `af_max_*`/`af_min_*` do.

use super::{GPU_LOCAL, GpuLayout, Rows};
use crate::ir::{DType, ReduceOp};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for};

/// Totals one thread of a carry pass takes per step: a chunk is 256 x 4 block totals.
const CARRY_PER_THREAD: usize = 4;
/// Block totals per chunk (one work-group of the first carry pass each).
const CHUNK: usize = GPU_LOCAL * CARRY_PER_THREAD;

/// The program's first lines: f64 support where needed, the element type's name `T`, the
/// combining function `af_scan_comb(a, b)` (`a` first) and the identity `AF_ID`. Written here
/// rather than taken from the primitive library: a scan needs four of its functions, and a program
/// of a few hundred lines builds several times faster on PoCL than one with the whole library
/// (shapes are literals, so a program builds per shape).
pub(super) fn prelude(op: ReduceOp, d: DType) -> Result<String, Unsupported> {
    let t = match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I32 => "int",
        DType::U32 => "uint",
        d => return Err(Unsupported(format!("scan of {d}"))),
    };
    let float = d.is_float();
    let comb = match (op, d) {
        (ReduceOp::Sum, DType::I32) => "as_int(as_uint(a) + as_uint(b))",
        (ReduceOp::Prod, DType::I32) => "as_int(as_uint(a) * as_uint(b))",
        (ReduceOp::Sum, _) => "a + b",
        (ReduceOp::Prod, _) => "a * b",
        (ReduceOp::Max, _) if float => "(isnan(a) || isnan(b)) ? (T)NAN : (b > a ? b : a)",
        (ReduceOp::Min, _) if float => "(isnan(a) || isnan(b)) ? (T)NAN : (b < a ? b : a)",
        (ReduceOp::Max, _) => "b > a ? b : a",
        (ReduceOp::Min, _) => "b < a ? b : a",
        (o, _) => return Err(Unsupported(format!("no scan for {}", o.name()))),
    };
    let id = match (op, d) {
        (ReduceOp::Sum, _) => "0",
        (ReduceOp::Prod, _) => "1",
        (ReduceOp::Max, _) if float => "-INFINITY",
        (ReduceOp::Min, _) if float => "INFINITY",
        (ReduceOp::Max, DType::I32) => "INT_MIN",
        (ReduceOp::Min, DType::I32) => "INT_MAX",
        (ReduceOp::Max, _) => "0u",
        _ => "UINT_MAX",
    };
    let fp64 = if d == DType::F64 {
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    } else {
        ""
    };
    Ok(format!(
        "{fp64}#pragma OPENCL FP_CONTRACT OFF
typedef {t} T;
typedef {t}4 T4;
#define AF_ID ((T)({id}))
static inline T af_scan_comb(T a, T b) {{ return {comb}; }}
#define AF_COMB(a, b) af_scan_comb(a, b)
"
    ))
}

/// The plan of scan `op` over `g` of element type `d`.
pub fn render(op: ReduceOp, g: Rows, d: DType, t: Target) -> Result<GpuPlan, Unsupported> {
    if d == DType::F64 && !t.fp64 {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let mut source = prelude(op, d)?;
    let el = "T";
    let per_thread = if d == DType::F64 { 8 } else { 16 };
    let layout = GpuLayout::of(g, per_thread);
    let len = g.numel();
    let bytes = d.size() as u64;
    let pass = |entry: &str, buffers: Vec<BufArg>, groups: u32| Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups: if len == 0 { 0 } else { groups },
        local: LOCAL,
    };
    let (x, y, part) = (BufArg::Input(0), BufArg::Output(0), BufArg::Scratch(0));
    match layout {
        GpuLayout::Rows {
            block,
            per_thread,
            blocks,
        } => {
            // Index arithmetic in 32 bits where every index (and the segment tests) fits.
            let wide = 2 * (len as u64) + 2 * block as u64 >= 1 << 32;
            let ix = if wide { "ulong" } else { "uint" };
            let n = g.dim.max(1);
            let groups = blocks.min(u32::MAX as usize) as u64;
            let split = blocks > 1;
            let quads = d.size() == 4;
            source.push_str(&rows_source(
                ix, el, len, n, block, per_thread, blocks, split, quads,
            ));
            let mut passes = Vec::new();
            let chunks = blocks.div_ceil(CHUNK);
            let chunk = BufArg::Scratch(1);
            let mut scratch = Vec::new();
            if split {
                scratch.push(blocks as u64 * bytes);
                passes.push(pass("af_scan_reduce", vec![x, part], groups_for(groups, 1)));
                if chunks > 1 {
                    scratch.push(chunks as u64 * bytes);
                    passes.push(pass(
                        "af_scan_carry",
                        vec![part, chunk],
                        groups_for(chunks as u64, 1),
                    ));
                    passes.push(pass("af_scan_carry_chunks", vec![chunk], 1));
                    passes.push(pass(
                        "af_scan_carry_add",
                        vec![part, chunk],
                        groups_for(blocks as u64, LOCAL as u64),
                    ));
                } else {
                    passes.push(pass("af_scan_carry", vec![part], 1));
                }
                passes.push(pass(
                    "af_scan_block",
                    vec![x, part, y],
                    groups_for(groups, 1),
                ));
            } else {
                passes.push(pass("af_scan_block", vec![x, y], groups_for(groups, 1)));
            }
            Ok(GpuPlan {
                source,
                scratch,
                passes,
                fault: None,
                immediate_words: None,
                kept: None,
                range: None,
            })
        }
        GpuLayout::Columns { chunks, chunk } => {
            let wide = 2 * (len as u64) + (g.pre * chunks * g.post) as u64 >= 1 << 32;
            let ix = if wide { "ulong" } else { "uint" };
            source.push_str(&columns_source(ix, el, g, chunks, chunk));
            let threads = (g.pre * chunks * g.post) as u64;
            let lines = (g.pre * g.post) as u64;
            let groups = groups_for(threads, LOCAL as u64);
            let passes = if chunks > 1 {
                vec![
                    pass("af_scan_cols_reduce", vec![x, part], groups),
                    pass(
                        "af_scan_cols_carry",
                        vec![part],
                        groups_for(lines, LOCAL as u64),
                    ),
                    pass("af_scan_cols", vec![x, part, y], groups),
                ]
            } else {
                vec![pass("af_scan_cols", vec![x, y], groups)]
            };
            Ok(GpuPlan {
                source,
                scratch: if chunks > 1 {
                    vec![threads * bytes]
                } else {
                    Vec::new()
                },
                passes,
                fault: None,
                immediate_words: None,
                kept: None,
                range: None,
            })
        }
    }
}

/// The three entries of a row scan (`af_scan_block` alone without `split`): `len` elements in
/// segments of `n`, blocks of `block` = 256 x `per` elements.
#[allow(clippy::too_many_arguments)]
fn rows_source(
    ix: &str,
    el: &str,
    len: usize,
    n: usize,
    block: usize,
    per: usize,
    blocks: usize,
    split: bool,
    quads: bool,
) -> String {
    let local = GPU_LOCAL;
    // Global memory moves in coalesced runs: thread `lid` takes elements (or, with `quads`, the
    // 16-byte quads of 4-byte elements) `lid + 256 i` of the block. A block wholly inside the
    // array moves quads; the last, partial one single elements.
    let per_q = per / 4;
    let scalar_reduce = format!(
        "      for (uint i = 0u; i < {per}u; i++) {{
        const {ix} g = start + lid + {local}u * i;
        if (g >= lo && g < end) acc = AF_COMB(acc, x[g]);
      }}
"
    );
    let scalar_loads = format!(
        "      for (uint i = 0u; i < {per}u; i++) {{
        const uint k = lid + {local}u * i;
        const {ix} g = start + k;
        tile[k + k / 32u] = g < {len} ? x[g] : AF_ID;
      }}
"
    );
    let scalar_stores = format!(
        "      for (uint i = 0u; i < {per}u; i++) {{
        const uint k = lid + {local}u * i;
        const {ix} g = start + k;
        if (g < {len}) y[g] = tile[k + k / 32u];
      }}
"
    );
    let (reduce_loads, block_loads, block_stores) = if quads {
        (
            format!(
                "    if (end - start == {block}) {{
      for (uint i = 0u; i < {per_q}u; i++) {{
        const uint q = lid + {local}u * i;
        const {ix} g = start + 4u * q;
        const T4 v = ((__global const T4 *)x)[g / 4u];
        if (g >= lo) acc = AF_COMB(acc, v.x);
        if (g + 1u >= lo) acc = AF_COMB(acc, v.y);
        if (g + 2u >= lo) acc = AF_COMB(acc, v.z);
        if (g + 3u >= lo) acc = AF_COMB(acc, v.w);
      }}
    }} else {{
{scalar_reduce}    }}
"
            ),
            format!(
                "    if (start + {block} <= {len}) {{
      for (uint i = 0u; i < {per_q}u; i++) {{
        const uint q = lid + {local}u * i;
        const uint o = 4u * q + q / 8u;
        const T4 v = ((__global const T4 *)x)[start / 4u + q];
        tile[o] = v.x;
        tile[o + 1u] = v.y;
        tile[o + 2u] = v.z;
        tile[o + 3u] = v.w;
      }}
    }} else {{
{scalar_loads}    }}
"
            ),
            format!(
                "    if (start + {block} <= {len}) {{
      for (uint i = 0u; i < {per_q}u; i++) {{
        const uint q = lid + {local}u * i;
        const uint o = 4u * q + q / 8u;
        ((__global T4 *)y)[start / 4u + q] = (T4)(tile[o], tile[o + 1u], tile[o + 2u], tile[o + 3u]);
      }}
    }} else {{
{scalar_stores}    }}
"
            ),
        )
    } else {
        (
            format!("    {{\n{scalar_reduce}    }}\n"),
            format!("    {{\n{scalar_loads}    }}\n"),
            format!("    {{\n{scalar_stores}    }}\n"),
        )
    };
    // Local memory holds a block with one pad element per 32 (no bank conflicts when a thread
    // walks its consecutive elements).
    let tile = block + block / 32;
    // The segmented Hillis-Steele scan of `sv`/`sf` (one value and start flag per thread),
    // inclusive, then each thread's exclusive prefix `pre` from `carry`.
    let hs = format!(
        r#"    sv[lid] = acc;
    sf[lid] = fl;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = 1u; d < {local}u; d <<= 1) {{
      {el} pv = AF_ID;
      uint pf = 0u;
      if (lid >= d) {{ pv = sv[lid - d]; pf = sf[lid - d]; }}
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid >= d && sf[lid] == 0u) {{ sv[lid] = AF_COMB(pv, sv[lid]); sf[lid] = pf; }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    const {el} pre = lid == 0u ? carry : (sf[lid - 1u] != 0u ? sv[lid - 1u] : AF_COMB(carry, sv[lid - 1u]));
"#
    );
    let carry_kernels = carry_source(ix, el, len, block, blocks, &hs);
    let mut s = String::new();
    if split {
        s.push_str(&format!(
            r#"
/* Block b's total since its last segment start (its start when none lies inside). */
{ENTRY_ATTR}
void af_scan_reduce(__global const {el} *x, __global {el} *part) {{
  __local {el} sv[{local}];
  const uint lid = get_local_id(0);
  for ({ix} b = get_group_id(0); b < {blocks}; b += get_num_groups(0)) {{
    const {ix} start = b * {block}, end = min(start + {block}, ({ix}){len});
    const {ix} lo = max(start, ((end - 1) / {n}) * {n});
    {el} acc = AF_ID;
{reduce_loads}    sv[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = {local}u / 2u; h > 0u; h >>= 1) {{
      if (lid < h) sv[lid] = AF_COMB(sv[lid], sv[lid + h]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0u) part[b] = sv[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
}}

/* Whether a segment starts at an element of [lo, hi) (segments start at multiples of {n}). */
static inline uint af_scan_start_in({ix} lo, {ix} hi) {{
  return ((lo + {n} - 1) / {n}) * {n} < hi ? 1u : 0u;
}}

/* Whether block b holds a segment start. */
static inline uint af_scan_starts({ix} b) {{
  return af_scan_start_in(b * {block}, min(b * {block} + {block}, ({ix}){len}));
}}
{carry_kernels}"#
        ));
    }
    let (part_arg, carry) = if split {
        (format!("__global const {el} *part, "), "part[b]")
    } else {
        (String::new(), "AF_ID")
    };
    s.push_str(&format!(
        r#"
/* Block b scanned: segments start at multiples of {n}; elements before the block's first start
   continue from its carry. */
{ENTRY_ATTR}
void af_scan_block(__global const {el} *x, {part_arg}__global {el} *y) {{
  __local {el} tile[{tile}];
  __local {el} sv[{local}];
  __local uint sf[{local}];
  const uint lid = get_local_id(0);
  for ({ix} b = get_group_id(0); b < {blocks}; b += get_num_groups(0)) {{
    const {ix} start = b * {block};
{block_loads}    barrier(CLK_LOCAL_MEM_FENCE);
    {el} acc = AF_ID;
    uint fl = 0u;
    for (uint j = 0u; j < {per}u; j++) {{
      const uint k = lid * {per}u + j;
      const {el} v = tile[k + k / 32u];
      if ((start + k) % {n} == 0) {{ acc = v; fl = 1u; }} else acc = AF_COMB(acc, v);
      tile[k + k / 32u] = acc;
    }}
    const {el} carry = {carry};
{hs}    uint seen = 0u;
    for (uint j = 0u; j < {per}u; j++) {{
      const uint k = lid * {per}u + j;
      if ((start + k) % {n} == 0) seen = 1u;
      if (seen == 0u) tile[k + k / 32u] = AF_COMB(pre, tile[k + k / 32u]);
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
{block_stores}    barrier(CLK_LOCAL_MEM_FENCE);
  }}
}}
"#
    ));
    s
}

/// One step of an exclusive segmented scan over `buf[c0 ..]` (`count` totals, `starts(i)`
/// saying whether total `i` holds a segment start): 256 x [`CARRY_PER_THREAD`] totals become
/// their carries from `carry`, and `carry` becomes the combination through the step's last.
fn carry_step(ix: &str, el: &str, count: &str, starts: &str, buf: &str, hs: &str) -> String {
    let e2 = CARRY_PER_THREAD;
    let local = GPU_LOCAL;
    format!(
        r#"    {el} loc[{e2}];
    uint bits = 0u;
    {el} acc = AF_ID;
    uint fl = 0u;
    for (uint j = 0u; j < {e2}u; j++) {{
      const {ix} b = c0 + lid * {e2}u + j;
      const {el} t = b < {count} ? {buf}[b] : AF_ID;
      if (b < {count} && {starts}(b) != 0u) {{ acc = t; fl = 1u; bits |= 1u << j; }}
      else acc = AF_COMB(acc, t);
      loc[j] = acc;
    }}
{hs}    {el} run = pre;
    uint seen = 0u;
    for (uint j = 0u; j < {e2}u; j++) {{
      const {ix} b = c0 + lid * {e2}u + j;
      if (b < {count}) {buf}[b] = run;
      seen |= (bits >> j) & 1u;
      run = seen != 0u ? loc[j] : AF_COMB(pre, loc[j]);
    }}
    carry = sf[{local}u - 1u] != 0u ? sv[{local}u - 1u] : AF_COMB(carry, sv[{local}u - 1u]);
    barrier(CLK_LOCAL_MEM_FENCE);
"#
    )
}

/// The carry passes of a row scan over `blocks` blocks. Up to [`CHUNK`] blocks, one work-group
/// turns the block totals into carries (`af_scan_carry(part)`). Beyond, three passes:
/// `af_scan_carry(part, chunk)`, a work-group per chunk of [`CHUNK`] totals, scans each chunk
/// from the identity and keeps its total in `chunk`; `af_scan_carry_chunks(chunk)`, one
/// work-group, turns those into the carries into the chunks; `af_scan_carry_add(part, chunk)`
/// combines the two into each block's carry (so no work-group walks every block total in turn).
/// `af_scan_start_in` and `af_scan_starts` come before it in the program.
fn carry_source(ix: &str, el: &str, len: usize, block: usize, blocks: usize, hs: &str) -> String {
    let local = GPU_LOCAL;
    let chunks = blocks.div_ceil(CHUNK);
    let head = format!(
        "  __local {el} sv[{local}];
  __local uint sf[{local}];
  const uint lid = get_local_id(0);
"
    );
    let blocks_s = blocks.to_string();
    let by_block = carry_step(ix, el, &blocks_s, "af_scan_starts", "part", hs);
    if chunks == 1 {
        return format!(
            r#"
/* One work-group: part[b] becomes block b's carry, the combination since the last segment start
   before block b (an exclusive segmented scan of the totals). */
{ENTRY_ATTR}
void af_scan_carry(__global {el} *part) {{
{head}  {el} carry = AF_ID;
  for ({ix} c0 = 0; c0 < {blocks}; c0 += {CHUNK}u) {{
{by_block}  }}
}}
"#
        );
    }
    let span = CHUNK * block;
    let chunks_s = chunks.to_string();
    let by_chunk = carry_step(ix, el, &chunks_s, "af_scan_chunk_starts", "chunk", hs);
    format!(
        r#"
/* Whether chunk c (its {CHUNK} blocks) holds a segment start. */
static inline uint af_scan_chunk_starts({ix} c) {{
  return af_scan_start_in(c * {span}, min(c * {span} + {span}, ({ix}){len}));
}}

/* A work-group per chunk: part[b] becomes block b's carry within its chunk (from the identity),
   chunk[c] the chunk's combination since its last segment start. */
{ENTRY_ATTR}
void af_scan_carry(__global {el} *part, __global {el} *chunk) {{
{head}  for ({ix} c = get_group_id(0); c < {chunks}; c += get_num_groups(0)) {{
    const {ix} c0 = c * {CHUNK};
    {el} carry = AF_ID;
{by_block}    if (lid == 0u) chunk[c] = carry;
  }}
}}

/* One work-group: chunk[c] becomes the carry into chunk c (an exclusive segmented scan). */
{ENTRY_ATTR}
void af_scan_carry_chunks(__global {el} *chunk) {{
{head}  {el} carry = AF_ID;
  for ({ix} c0 = 0; c0 < {chunks}; c0 += {CHUNK}u) {{
{by_chunk}  }}
}}

/* part[b] becomes block b's carry: the carry into its chunk, then its carry within the chunk
   (which alone counts when a segment starts between the chunk's first element and the block's). */
{ENTRY_ATTR}
void af_scan_carry_add(__global {el} *part, __global const {el} *chunk) {{
  for ({ix} b = get_global_id(0); b < {blocks}; b += get_global_size(0)) {{
    if (af_scan_start_in((b / {CHUNK}) * {span}, b * {block}) == 0u)
      part[b] = AF_COMB(chunk[b / {CHUNK}], part[b]);
  }}
}}
"#
    )
}

/// The entries of a column scan: `chunks` chunks of `chunk` elements per line.
fn columns_source(ix: &str, el: &str, g: Rows, chunks: usize, chunk: usize) -> String {
    let (n, post) = (g.dim.max(1), g.post.max(1));
    let threads = g.pre * chunks * g.post;
    let lines = g.pre * g.post;
    // Thread t takes chunk j of line (p, q), t = (p * chunks + j) * post + q.
    let head = |what: &str| {
        format!(
            r#"  for ({ix} t = get_global_id(0); t < {threads}; t += get_global_size(0)) {{
    const {ix} q = t % {post}, j = (t / {post}) % {chunks}, p = t / ({post} * {chunks});
    const {ix} k0 = j * {chunk}, k1 = min(k0 + {chunk}, ({ix}){n});
    {ix} i = (p * {n} + k0) * {post} + q;
    {el} acc = x[i];
{what}"#
        )
    };
    let mut s = String::new();
    if chunks > 1 {
        s.push_str(&format!(
            r#"
{ENTRY_ATTR}
void af_scan_cols_reduce(__global const {el} *x, __global {el} *part) {{
{}    for ({ix} k = k0 + 1; k < k1; k++) {{ i += {post}; acc = AF_COMB(acc, x[i]); }}
    part[t] = acc;
  }}
}}

/* part[(p * chunks + j) * post + q] becomes the carry into chunk j of line (p, q) (chunk 0's
   slot is left alone: that chunk starts the line). */
{ENTRY_ATTR}
void af_scan_cols_carry(__global {el} *part) {{
  for ({ix} t = get_global_id(0); t < {lines}; t += get_global_size(0)) {{
    const {ix} p = t / {post}, q = t % {post};
    {ix} i = p * {chunks} * {post} + q;
    {el} acc = part[i];
    for ({ix} j = 1; j < {chunks}; j++) {{
      i += {post};
      const {el} v = part[i];
      part[i] = acc;
      acc = AF_COMB(acc, v);
    }}
  }}
}}
"#,
            head("")
        ));
    }
    let (part_arg, carry) = if chunks > 1 {
        (
            format!("__global const {el} *part, "),
            "    if (j > 0) acc = AF_COMB(part[t], acc);\n",
        )
    } else {
        (String::new(), "")
    };
    s.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_scan_cols(__global const {el} *x, {part_arg}__global {el} *y) {{
{}    y[i] = acc;
    for ({ix} k = k0 + 1; k < k1; k++) {{ i += {post}; acc = AF_COMB(acc, x[i]); y[i] = acc; }}
  }}
}}
"#,
        head(carry)
    ));
    s
}
