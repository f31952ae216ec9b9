//! Scans along an axis in WGSL: the passes of `opencl.rs` (reduce-then-scan over a scratch
//! buffer of block totals, no single-pass look-back: Vulkan promises no forward progress between
//! work-groups), with blocks of 256 x 8 elements (a block and its pads fit WebGPU's 16 KiB of
//! workgroup memory) and u32 indices. Row passes bind the data as `array<vec4<T>>` and move
//! 16-byte quads when the length is a multiple of 4. Grid-stride loops step by
//! `num_workgroups`. f32, i32 and u32 (WGSL has no f64); sums and products in the element type,
//! integers wrapping; max and min propagate NaN (tested on the bits: drivers may assume NaN away
//! in comparisons) and keep the first of two zeros.

use super::{GPU_LOCAL, GpuLayout, Rows};
use crate::ir::{DType, ReduceOp};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};

/// Elements a thread takes in a row block.
const PER_THREAD: usize = 8;
/// Totals one thread of a carry pass takes per step: a chunk is 256 x 4 block totals.
const CARRY_PER_THREAD: usize = 4;
/// Block totals per chunk (one work-group of the first carry pass each).
const CHUNK: usize = GPU_LOCAL * CARRY_PER_THREAD;

/// The helper functions: `af_scan_comb(a, b)` (a first), `af_scan_id()`.
fn helpers(op: ReduceOp, d: DType) -> Result<String, Unsupported> {
    let t = match d {
        DType::F32 => "f32",
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("wgsl scan of {d}"))),
    };
    let comb = match (op, d) {
        (ReduceOp::Sum, DType::I32) => "return bitcast<i32>(bitcast<u32>(a) + bitcast<u32>(b));",
        (ReduceOp::Prod, DType::I32) => "return bitcast<i32>(bitcast<u32>(a) * bitcast<u32>(b));",
        (ReduceOp::Sum, _) => "return a + b;",
        (ReduceOp::Prod, _) => "return a * b;",
        (ReduceOp::Max, DType::F32) => {
            "if (af_scan_nan(a) || af_scan_nan(b)) { return af_scan_bits(0x7fc00000u); }
  if (((bitcast<u32>(a) | bitcast<u32>(b)) << 1u) == 0u) { return a; }
  return select(a, b, b > a);"
        }
        (ReduceOp::Min, DType::F32) => {
            "if (af_scan_nan(a) || af_scan_nan(b)) { return af_scan_bits(0x7fc00000u); }
  if (((bitcast<u32>(a) | bitcast<u32>(b)) << 1u) == 0u) { return a; }
  return select(a, b, b < a);"
        }
        (ReduceOp::Max, _) => "return select(a, b, b > a);",
        (ReduceOp::Min, _) => "return select(a, b, b < a);",
        (o, _) => return Err(Unsupported(format!("no scan for {}", o.name()))),
    };
    let id = match (op, d) {
        (ReduceOp::Sum, _) => format!("{t}(0)"),
        (ReduceOp::Prod, _) => format!("{t}(1)"),
        (ReduceOp::Max, DType::F32) => "af_scan_bits(0xff800000u)".into(),
        (ReduceOp::Min, DType::F32) => "af_scan_bits(0x7f800000u)".into(),
        (ReduceOp::Max, DType::I32) => "i32(-2147483647 - 1)".into(),
        (ReduceOp::Min, DType::I32) => "i32(2147483647)".into(),
        (ReduceOp::Max, _) => "0u".into(),
        _ => "4294967295u".into(),
    };
    Ok(format!(
        "// A function call is never a constant expression, so infinities and NaN come from bits.
fn af_scan_bits(b: u32) -> f32 {{ return bitcast<f32>(b); }}
fn af_scan_nan(x: f32) -> bool {{ return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }}
fn af_scan_comb(a: {t}, b: {t}) -> {t} {{
  {comb}
}}
fn af_scan_id() -> {t} {{ return {id}; }}
"
    ))
}

/// The plan of scan `op` over `g` of element type `d`.
pub fn render(op: ReduceOp, g: Rows, d: DType) -> Result<GpuPlan, Unsupported> {
    let t = match d {
        DType::F32 => "f32",
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("wgsl scan of {d}"))),
    };
    let len = g.numel();
    if 2 * len as u64 + 2 * (GPU_LOCAL * PER_THREAD) as u64 >= 1 << 32 {
        return Err(Unsupported("wgsl scan over 2^31 elements".into()));
    }
    let mut source = helpers(op, d)?;
    let pass = |entry: &str, buffers: Vec<BufArg>, groups: u32| Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups: if len == 0 { 0 } else { groups },
        local: LOCAL,
    };
    let (x, y, part) = (BufArg::Input(0), BufArg::Output(0), BufArg::Scratch(0));
    let bytes = d.size() as u64;
    let (passes, scratch) = match GpuLayout::of(g, PER_THREAD) {
        GpuLayout::Rows {
            block,
            per_thread,
            blocks,
        } => {
            let split = blocks > 1;
            let groups = blocks.min(crate::proggen::codegen::wgsl::MAX_GROUPS as usize) as u32;
            source.push_str(&rows_source(
                t,
                len,
                g.dim.max(1),
                block,
                per_thread,
                blocks,
                split,
                len.is_multiple_of(4),
            ));
            let chunks = blocks.div_ceil(CHUNK);
            if chunks > 1 {
                let chunk = BufArg::Scratch(1);
                (
                    vec![
                        pass("af_scan_reduce", vec![x, part], groups),
                        pass("af_scan_carry", vec![part, chunk], chunks as u32),
                        pass("af_scan_carry_chunks", vec![chunk], 1),
                        pass("af_scan_carry_add", vec![part, chunk], groups_for(blocks)),
                        pass("af_scan_block", vec![x, part, y], groups),
                    ],
                    vec![blocks as u64 * bytes, chunks as u64 * bytes],
                )
            } else if split {
                (
                    vec![
                        pass("af_scan_reduce", vec![x, part], groups),
                        pass("af_scan_carry", vec![part], 1),
                        pass("af_scan_block", vec![x, part, y], groups),
                    ],
                    vec![blocks as u64 * bytes],
                )
            } else {
                (vec![pass("af_scan_block", vec![x, y], groups)], Vec::new())
            }
        }
        GpuLayout::Columns { chunks, chunk } => {
            let threads = g.pre * chunks * g.post;
            let groups = groups_for(threads);
            let line_groups = groups_for(g.pre * g.post);
            source.push_str(&columns_source(t, g, chunks, chunk));
            if chunks > 1 {
                (
                    vec![
                        pass("af_scan_cols_reduce", vec![x, part], groups),
                        pass("af_scan_cols_carry", vec![part], line_groups),
                        pass("af_scan_cols", vec![x, part, y], groups),
                    ],
                    vec![threads as u64 * bytes],
                )
            } else {
                (vec![pass("af_scan_cols", vec![x, y], groups)], Vec::new())
            }
        }
    };
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

/// The segmented Hillis-Steele scan of `sv`/`sf` (inclusive), then the thread's exclusive prefix
/// `pre` from `carry`.
fn hillis_steele(t: &str) -> String {
    let local = GPU_LOCAL;
    format!(
        "    sv[lid] = acc;
    sf[lid] = fl;
    workgroupBarrier();
    for (var d = 1u; d < {local}u; d = d << 1u) {{
      var pv = af_scan_id();
      var pf = 0u;
      if (lid >= d) {{ pv = sv[lid - d]; pf = sf[lid - d]; }}
      workgroupBarrier();
      if (lid >= d && sf[lid] == 0u) {{ sv[lid] = af_scan_comb(pv, sv[lid]); sf[lid] = pf; }}
      workgroupBarrier();
    }}
    var pre: {t} = carry;
    if (lid > 0u) {{
      pre = sv[lid - 1u];
      if (sf[lid - 1u] == 0u) {{ pre = af_scan_comb(carry, pre); }}
    }}
"
    )
}

/// One step of an exclusive segmented scan over `buf[c0 ..]` (`count` totals, `starts(i)`
/// saying whether total `i` holds a segment start): 256 x [`CARRY_PER_THREAD`] totals become
/// their carries from `carry`, and `carry` becomes the combination through the step's last.
fn carry_step(t: &str, count: usize, starts: &str, buf: &str, hs: &str) -> String {
    let e2 = CARRY_PER_THREAD;
    let local = GPU_LOCAL;
    format!(
        "    var loc: array<{t}, {e2}>;
    var bits = 0u;
    var acc = af_scan_id();
    var fl = 0u;
    for (var j = 0u; j < {e2}u; j++) {{
      let b = c0 + lid * {e2}u + j;
      var v = af_scan_id();
      if (b < {count}u) {{ v = {buf}[b]; }}
      if (b < {count}u && {starts}(b)) {{
        acc = v;
        fl = 1u;
        bits |= 1u << j;
      }} else {{
        acc = af_scan_comb(acc, v);
      }}
      loc[j] = acc;
    }}
{hs}    var run = pre;
    var seen = 0u;
    for (var j = 0u; j < {e2}u; j++) {{
      let b = c0 + lid * {e2}u + j;
      if (b < {count}u) {{ {buf}[b] = run; }}
      seen |= (bits >> j) & 1u;
      run = loc[j];
      if (seen == 0u) {{ run = af_scan_comb(pre, run); }}
    }}
    let last = sv[{local}u - 1u];
    if (sf[{local}u - 1u] != 0u) {{ carry = last; }} else {{ carry = af_scan_comb(carry, last); }}
    workgroupBarrier();
"
    )
}

/// The carry passes of a row scan over `blocks` blocks, as in `opencl.rs`: one work-group up to
/// [`CHUNK`] blocks (`af_scan_carry`); beyond, a work-group per chunk (`af_scan_carry`, which
/// also keeps each chunk's total), one over the chunks' totals (`af_scan_carry_chunks`), and
/// the chunks' carries added to their blocks' (`af_scan_carry_add`).
fn carry_source(t: &str, len: usize, block: usize, blocks: usize, hs: &str) -> String {
    let chunks = blocks.div_ceil(CHUNK);
    let by_block = carry_step(t, blocks, "af_scan_starts", "cpart", hs);
    if chunks == 1 {
        return format!(
            "@group(0) @binding(0) var<storage, read_write> cpart: array<{t}>;

// One work-group: cpart[b] becomes block b's carry (an exclusive segmented scan of the totals).
@compute @workgroup_size({GPU_LOCAL})
fn af_scan_carry(@builtin(local_invocation_index) lid: u32) {{
  var carry = af_scan_id();
  for (var c0 = 0u; c0 < {blocks}u; c0 += {CHUNK}u) {{
{by_block}  }}
}}
"
        );
    }
    let span = CHUNK * block;
    let by_chunk = carry_step(t, chunks, "af_scan_chunk_starts", "kchunk", hs);
    format!(
        "@group(0) @binding(0) var<storage, read_write> cpart: array<{t}>;
@group(0) @binding(1) var<storage, read_write> cchunk: array<{t}>;

// Whether chunk c (its {CHUNK} blocks) holds a segment start.
fn af_scan_chunk_starts(c: u32) -> bool {{
  return af_scan_start_in(c * {span}u, min(c * {span}u + {span}u, {len}u));
}}

// A work-group per chunk: cpart[b] becomes block b's carry within its chunk (from the identity),
// cchunk[c] the chunk's combination since its last segment start.
@compute @workgroup_size({GPU_LOCAL})
fn af_scan_carry(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  for (var c = wid.x; c < {chunks}u; c += nwg.x) {{
    let c0 = c * {CHUNK}u;
    var carry = af_scan_id();
{by_block}    if (lid == 0u) {{ cchunk[c] = carry; }}
  }}
}}

@group(0) @binding(0) var<storage, read_write> kchunk: array<{t}>;

// One work-group: kchunk[c] becomes the carry into chunk c (an exclusive segmented scan).
@compute @workgroup_size({GPU_LOCAL})
fn af_scan_carry_chunks(@builtin(local_invocation_index) lid: u32) {{
  var carry = af_scan_id();
  for (var c0 = 0u; c0 < {chunks}u; c0 += {CHUNK}u) {{
{by_chunk}  }}
}}

@group(0) @binding(0) var<storage, read_write> apart: array<{t}>;
@group(0) @binding(1) var<storage, read> achunk: array<{t}>;

// apart[b] becomes block b's carry: the carry into its chunk, then its carry within the chunk
// (which alone counts when a segment starts between the chunk's first element and the block's).
@compute @workgroup_size({GPU_LOCAL})
fn af_scan_carry_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
  for (var b = gid.x; b < {blocks}u; b += nwg.x * {GPU_LOCAL}u) {{
    if (!af_scan_start_in((b / {CHUNK}u) * {span}u, b * {block}u)) {{
      apart[b] = af_scan_comb(achunk[b / {CHUNK}u], apart[b]);
    }}
  }}
}}
"
    )
}

/// The entries of a row scan (see `opencl.rs`; `af_scan_block` alone without `split`).
#[allow(clippy::too_many_arguments)]
fn rows_source(
    t: &str,
    len: usize,
    n: usize,
    block: usize,
    per: usize,
    blocks: usize,
    split: bool,
    quads: bool,
) -> String {
    let local = GPU_LOCAL;
    let tile = block + block / 32;
    // Global memory moves in coalesced runs: thread `lid` takes elements (or, with `quads`, the
    // 16-byte quads: the input and output bound as `array<vec4<T>>`, the length a multiple of 4)
    // `lid + 256 i` of the block.
    let per_q = per / 4;
    let data = if quads {
        format!("vec4<{t}>")
    } else {
        t.to_string()
    };
    let (reduce_loads, block_loads, block_stores) = if quads {
        (
            format!(
                "    for (var i = 0u; i < {per_q}u; i++) {{
      let g = start + 4u * (lid + {local}u * i);
      if (g < end) {{
        let v = rx[g / 4u];
        if (g >= lo) {{ acc = af_scan_comb(acc, v.x); }}
        if (g + 1u >= lo) {{ acc = af_scan_comb(acc, v.y); }}
        if (g + 2u >= lo) {{ acc = af_scan_comb(acc, v.z); }}
        if (g + 3u >= lo) {{ acc = af_scan_comb(acc, v.w); }}
      }}
    }}
"
            ),
            format!(
                "    for (var i = 0u; i < {per_q}u; i++) {{
      let q = lid + {local}u * i;
      let o = 4u * q + q / 8u;
      var v = vec4<{t}>(af_scan_id());
      if (start + 4u * q < {len}u) {{ v = bx[start / 4u + q]; }}
      tile[o] = v.x;
      tile[o + 1u] = v.y;
      tile[o + 2u] = v.z;
      tile[o + 3u] = v.w;
    }}
"
            ),
            format!(
                "    for (var i = 0u; i < {per_q}u; i++) {{
      let q = lid + {local}u * i;
      let o = 4u * q + q / 8u;
      if (start + 4u * q < {len}u) {{
        by[start / 4u + q] = vec4<{t}>(tile[o], tile[o + 1u], tile[o + 2u], tile[o + 3u]);
      }}
    }}
"
            ),
        )
    } else {
        (
            format!(
                "    for (var i = 0u; i < {per}u; i++) {{
      let k = start + lid + {local}u * i;
      if (k >= lo && k < end) {{ acc = af_scan_comb(acc, rx[k]); }}
    }}
"
            ),
            format!(
                "    for (var i = 0u; i < {per}u; i++) {{
      let k = lid + {local}u * i;
      var v = af_scan_id();
      if (start + k < {len}u) {{ v = bx[start + k]; }}
      tile[k + k / 32u] = v;
    }}
"
            ),
            format!(
                "    for (var i = 0u; i < {per}u; i++) {{
      let k = lid + {local}u * i;
      if (start + k < {len}u) {{ by[start + k] = tile[k + k / 32u]; }}
    }}
"
            ),
        )
    };
    let hs = hillis_steele(t);
    let carry_kernels = carry_source(t, len, block, blocks, &hs);
    let mut s = String::new();
    if split {
        s.push_str(&format!(
            "
@group(0) @binding(0) var<storage, read> rx: array<{data}>;
@group(0) @binding(1) var<storage, read_write> rpart: array<{t}>;
var<workgroup> sv: array<{t}, {local}>;
var<workgroup> sf: array<u32, {local}>;

// Block b's total since its last segment start (its start when none lies inside).
@compute @workgroup_size({local})
fn af_scan_reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  for (var b = wid.x; b < {blocks}u; b += nwg.x) {{
    let start = b * {block}u;
    let end = min(start + {block}u, {len}u);
    let lo = max(start, ((end - 1u) / {n}u) * {n}u);
    var acc = af_scan_id();
{reduce_loads}    sv[lid] = acc;
    workgroupBarrier();
    for (var h = {local}u / 2u; h > 0u; h = h >> 1u) {{
      if (lid < h) {{ sv[lid] = af_scan_comb(sv[lid], sv[lid + h]); }}
      workgroupBarrier();
    }}
    if (lid == 0u) {{ rpart[b] = sv[0]; }}
    workgroupBarrier();
  }}
}}

// Whether a segment starts at an element of [lo, hi) (segments start at multiples of {n}).
fn af_scan_start_in(lo: u32, hi: u32) -> bool {{
  return ((lo + {n}u - 1u) / {n}u) * {n}u < hi;
}}

fn af_scan_starts(b: u32) -> bool {{
  return af_scan_start_in(b * {block}u, min(b * {block}u + {block}u, {len}u));
}}

{carry_kernels}"
        ));
    } else {
        s.push_str(&format!(
            "
var<workgroup> sv: array<{t}, {local}>;
var<workgroup> sf: array<u32, {local}>;
"
        ));
    }
    let (part_decl, carry, out_binding) = if split {
        (
            format!("@group(0) @binding(1) var<storage, read> bpart: array<{t}>;\n"),
            "bpart[b]",
            2,
        )
    } else {
        (String::new(), "af_scan_id()", 1)
    };
    s.push_str(&format!(
        "
@group(0) @binding(0) var<storage, read> bx: array<{data}>;
{part_decl}@group(0) @binding({out_binding}) var<storage, read_write> by: array<{data}>;
var<workgroup> tile: array<{t}, {tile}>;

// Block b scanned: segments start at multiples of {n}; elements before the block's first start
// continue from its carry.
@compute @workgroup_size({local})
fn af_scan_block(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  for (var b = wid.x; b < {blocks}u; b += nwg.x) {{
    let start = b * {block}u;
{block_loads}    workgroupBarrier();
    var acc = af_scan_id();
    var fl = 0u;
    for (var j = 0u; j < {per}u; j++) {{
      let k = lid * {per}u + j;
      let v = tile[k + k / 32u];
      if ((start + k) % {n}u == 0u) {{
        acc = v;
        fl = 1u;
      }} else {{
        acc = af_scan_comb(acc, v);
      }}
      tile[k + k / 32u] = acc;
    }}
    let carry = {carry};
{hs}    var seen = 0u;
    for (var j = 0u; j < {per}u; j++) {{
      let k = lid * {per}u + j;
      if ((start + k) % {n}u == 0u) {{ seen = 1u; }}
      if (seen == 0u) {{ tile[k + k / 32u] = af_scan_comb(pre, tile[k + k / 32u]); }}
    }}
    workgroupBarrier();
{block_stores}    workgroupBarrier();
  }}
}}
"
    ));
    s
}

/// The entries of a column scan: `chunks` chunks of `chunk` elements per line.
fn columns_source(t: &str, g: Rows, chunks: usize, chunk: usize) -> String {
    let local = GPU_LOCAL;
    let (n, post) = (g.dim.max(1), g.post.max(1));
    let threads = g.pre * chunks * g.post;
    let lines = g.pre * g.post;
    // Thread t takes chunk j of line (p, q), t = (p * chunks + j) * post + q.
    let head = |x: &str, what: &str| {
        format!(
            "  for (var t = gid.x; t < {threads}u; t += nwg.x * {local}u) {{
    let q = t % {post}u;
    let j = (t / {post}u) % {chunks}u;
    let p = t / ({post}u * {chunks}u);
    let k0 = j * {chunk}u;
    let k1 = min(k0 + {chunk}u, {n}u);
    var i = (p * {n}u + k0) * {post}u + q;
    var acc = {x}[i];
{what}"
        )
    };
    let mut s = String::new();
    if chunks > 1 {
        s.push_str(&format!(
            "
@group(0) @binding(0) var<storage, read> rx: array<{t}>;
@group(0) @binding(1) var<storage, read_write> rpart: array<{t}>;

@compute @workgroup_size({local})
fn af_scan_cols_reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
{}    for (var k = k0 + 1u; k < k1; k++) {{
      i += {post}u;
      acc = af_scan_comb(acc, rx[i]);
    }}
    rpart[t] = acc;
  }}
}}

@group(0) @binding(0) var<storage, read_write> cpart: array<{t}>;

// cpart[(p * chunks + j) * post + q] becomes the carry into chunk j of line (p, q).
@compute @workgroup_size({local})
fn af_scan_cols_carry(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
  for (var t = gid.x; t < {lines}u; t += nwg.x * {local}u) {{
    let p = t / {post}u;
    let q = t % {post}u;
    var i = p * {chunks}u * {post}u + q;
    var acc = cpart[i];
    for (var j = 1u; j < {chunks}u; j++) {{
      i += {post}u;
      let v = cpart[i];
      cpart[i] = acc;
      acc = af_scan_comb(acc, v);
    }}
  }}
}}
",
            head("rx", "")
        ));
    }
    let (part_decl, carry, out_binding) = if chunks > 1 {
        (
            format!("@group(0) @binding(1) var<storage, read> bpart: array<{t}>;\n"),
            "    if (j > 0u) { acc = af_scan_comb(bpart[t], acc); }\n",
            2,
        )
    } else {
        (String::new(), "", 1)
    };
    s.push_str(&format!(
        "
@group(0) @binding(0) var<storage, read> bx: array<{t}>;
{part_decl}@group(0) @binding({out_binding}) var<storage, read_write> by: array<{t}>;

@compute @workgroup_size({local})
fn af_scan_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
{}    by[i] = acc;
    for (var k = k0 + 1u; k < k1; k++) {{
      i += {post}u;
      acc = af_scan_comb(acc, bx[i]);
      by[i] = acc;
    }}
  }}
}}
",
        head("bx", carry)
    ));
    s
}
