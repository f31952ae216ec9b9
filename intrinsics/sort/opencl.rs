//! The sorting intrinsics in OpenCL C, rendered per call's shapes (no primitive library: the
//! kernels move bits and compare integer keys). Elements are bound as their raw bits (`uint`,
//! `ulong` for f64, `uchar` for a bool take); `af_key` maps them to canonical keys
//! (`super`'s module comment), so f64 sorts with 64-bit keys in 8 digits. Kernels that work on
//! tiles or blocks launch one work-group per tile or block (no grid-stride loop around
//! barriers: PoCL builds such kernels several times faster).
//!
//! - **Sort / argsort, rows up to [`SMALL`]**: one pass `af_bitonic`; a work-group loads up to
//!   2048 (key, position) pairs of one or more rows into local memory (rows padded to a power of
//!   two with the largest key and position), sorts each row with a bitonic network (every row
//!   ascending: a flip step, then half-cleaners), and writes the positions or the elements they
//!   name (read again from the input, so bits are kept).
//! - **Longer rows**: an LSD radix sort of 8-bit digits over tiles of [`TILE`] elements of one
//!   row. Per digit: `af_hist` (each tile's digit counts, stored digit-major per row:
//!   `hist[(row * 256 + digit) * tiles_per_row + tile]`), an exclusive scan of that array
//!   (`af_scan_top` alone, or `af_scan_reduce`, `af_scan_top`, `af_scan_down` in blocks: see
//!   `plan::ONE_SCAN`), which makes each entry the global position of the tile's first element
//!   with that digit (rows follow each other, so one scan serves every row), and `af_scatter`
//!   (the tile sorted by the digit in local memory with four stable 2-bit splits, each a
//!   work-group scan of per-thread counts packed two to a word, then each element written to
//!   its position). The same entries serve every digit: the digit's shift is a scratch word that
//!   `af_init` (or `af_in`) zeroes and `af_scan_top` advances, so a program has few kernels to
//!   build. Rows along an inner axis are first copied out to contiguous rows (`af_in`) and
//!   written back at the end (`af_out`); between digits the raw elements (and positions)
//!   ping-pong between scratch buffers (`plan::radix_passes`). Argsort's positions are made by
//!   the first digit's scatter (shift 0: `base + li`), and its last scatter writes positions
//!   only.
//! - **take_along_axis**: `af_take`, a grid-stride loop; an index out of range writes 0 and sets
//!   the fault word (scratch 0), and the CPU reruns the call for the error.
//! - **searchsorted**: `af_searchsorted`, a binary search per value (`super::search`'s
//!   midpoints).
//! - **unique_runs**: `af_runs_count` (run starts per block of 2048), `af_runs_top` (their
//!   exclusive scan; writes the count and the closing `n`), `af_runs_scatter` (each start's
//!   position, then zeros past the runs).

use super::plan::{BLOCK, Bitonic, LOCAL, Radix, fill, radix_passes, sort_limits};
use super::{Rows, SMALL, Take};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, MAX_GROUPS};
use crate::proggen::sequence::IntrinsicCall;

/// Elements of one radix tile (256 threads, 8 each).
const TILE: usize = 2048;

/// Work-groups of a grid-stride pass over `items` work-group items.
fn groups(items: usize) -> u32 {
    items.clamp(1, MAX_GROUPS as usize) as u32
}

/// One work-group per item (tiles, blocks, groups of rows).
pub(super) fn exact(items: usize) -> u32 {
    u32::try_from(items.max(1)).expect("a sort's work-groups fit in 32 bits")
}

/// The raw type of `d`'s bits and `af_key` (ascending keys XOR the descending mask).
pub(super) fn key_of(d: DType, descending: bool) -> Result<(&'static str, String), Unsupported> {
    let (kt, body, mask) = match d {
        DType::F32 => (
            "uint",
            "(b & 0x7fffffffu) > 0x7f800000u ? 0xffffffffu : b == 0x80000000u ? 0x80000000u : (b >> 31) != 0u ? ~b : (b | 0x80000000u)",
            "0xffffffffu",
        ),
        DType::F64 => (
            "ulong",
            "(b & 0x7fffffffffffffffUL) > 0x7ff0000000000000UL ? 0xffffffffffffffffUL : b == 0x8000000000000000UL ? 0x8000000000000000UL : (b >> 63) != 0UL ? ~b : (b | 0x8000000000000000UL)",
            "0xffffffffffffffffUL",
        ),
        DType::I32 => ("uint", "b ^ 0x80000000u", "0xffffffffu"),
        DType::U32 => ("uint", "b", "0xffffffffu"),
        DType::Bool => return Err(Unsupported("sorting bool elements".into())),
        DType::C64 | DType::C128 => return Err(Unsupported("sorting complex elements".into())),
    };
    let mask = if descending { mask } else { "0" };
    Ok((
        kt,
        format!(
            "typedef {kt} kt;\ninline kt af_key(kt b) {{ return ({body}) ^ ({kt}){mask}; }}\n\
             inline uint af_digit(kt v, uint sh) {{ return (uint)(af_key(v) >> sh) & 255u; }}\n"
        ),
    ))
}

/// Sizes every sort kernel knows.
pub(super) fn geometry(r: Rows) -> String {
    format!(
        "#define ROWS {}UL\n#define DIM {}UL\n#define POST {}UL\n\
         inline ulong af_at(ulong row, ulong j) {{ return ((row / POST) * DIM + j) * POST + row % POST; }}\n",
        r.count(),
        r.dim,
        r.post
    )
}

/// Exclusive prefix sums of one `uint` or `uint2` per thread over the 256 threads of a
/// work-group (`*tot`: the total), in `s[0 .. 273)`: 16 threads scan 16 values each, one thread
/// the 16 totals (four barriers, none in a loop).
pub(super) const SCANS: &str = r#"
inline uint af_scan1(__local uint *s, uint v, uint lid, uint *tot) {
  s[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 16u) {
    uint acc = 0u;
    for (uint k = lid * 16u; k < lid * 16u + 16u; k++) { const uint x = s[k]; s[k] = acc; acc += x; }
    s[256u + lid] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0u) {
    uint acc = 0u;
    for (uint k = 256u; k < 272u; k++) { const uint x = s[k]; s[k] = acc; acc += x; }
    s[272] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint ex = s[lid] + s[256u + lid / 16u];
  *tot = s[272];
  barrier(CLK_LOCAL_MEM_FENCE);
  return ex;
}

inline uint2 af_scan2(__local uint2 *s, uint2 v, uint lid, uint2 *tot) {
  s[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 16u) {
    uint2 acc = (uint2)(0u, 0u);
    for (uint k = lid * 16u; k < lid * 16u + 16u; k++) { const uint2 x = s[k]; s[k] = acc; acc += x; }
    s[256u + lid] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0u) {
    uint2 acc = (uint2)(0u, 0u);
    for (uint k = 256u; k < 272u; k++) { const uint2 x = s[k]; s[k] = acc; acc += x; }
    s[272] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint2 ex = s[lid] + s[256u + lid / 16u];
  *tot = s[272];
  barrier(CLK_LOCAL_MEM_FENCE);
  return ex;
}
"#;

/// The histograms' exclusive scan: `af_scan_top` scans `TOPLEN` entries of its first buffer in
/// chunks of 2048 with one work-group (and advances the shift word); with blocks, the block
/// sums of `af_scan_reduce` and, after, `af_scan_down` adding each block's offset.
const SCAN_PASSES: &str = r#"
@ENTRY@
void af_scan_top(__global uint *part, __global uint *meta) {
  __local uint s[273];
  const uint lid = get_local_id(0);
  uint carry = 0u;
  for (ulong c = 0; c < TOPLEN; c += 2048UL) {
    uint v[8];
    uint sum = 0u;
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      v[i] = e < TOPLEN ? part[e] : 0u;
      sum += v[i];
    }
    uint tot;
    uint ex = af_scan1(s, sum, lid, &tot) + carry;
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      if (e < TOPLEN) part[e] = ex;
      ex += v[i];
    }
    carry += tot;
  }
  /* The next digit's shift: the scatter of this one reads it less 8. */
  if (lid == 0u) meta[0] += 8u;
}
"#;

const SCAN_BLOCKS: &str = r#"
@ENTRY@
void af_scan_reduce(__global const uint *hist, __global uint *part) {
  __local uint s[273];
  const uint lid = get_local_id(0);
  const ulong b = get_group_id(0);
  uint sum = 0u;
  for (uint i = 0u; i < 8u; i++) {
    const ulong e = b * 2048UL + lid * 8u + i;
    if (e < HLEN) sum += hist[e];
  }
  uint tot;
  af_scan1(s, sum, lid, &tot);
  if (lid == 0u) part[b] = tot;
}

@ENTRY@
void af_scan_down(__global uint *hist, __global const uint *part) {
  __local uint s[273];
  const uint lid = get_local_id(0);
  const ulong b = get_group_id(0);
  uint v[8];
  uint sum = 0u;
  for (uint i = 0u; i < 8u; i++) {
    const ulong e = b * 2048UL + lid * 8u + i;
    v[i] = e < HLEN ? hist[e] : 0u;
    sum += v[i];
  }
  uint tot;
  uint ex = af_scan1(s, sum, lid, &tot) + part[b];
  for (uint i = 0u; i < 8u; i++) {
    const ulong e = b * 2048UL + lid * 8u + i;
    if (e < HLEN) hist[e] = ex;
    ex += v[i];
  }
}
"#;

const HIST: &str = r#"
@ENTRY@
void af_hist(__global const kt *src, __global uint *hist, __global const uint *meta) {
  __local uint h[256];
  const uint lid = get_local_id(0);
  const uint sh = meta[0];
  const ulong tile = get_group_id(0);
  const ulong row = tile / TPR, t = tile % TPR;
  const uint base = (uint)t * TILE;
  const uint cnt = (uint)min((ulong)TILE, DIM - base);
  h[lid] = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) atomic_inc(&h[af_digit(src[row * DIM + base + li], sh)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  hist[(row * 256UL + lid) * TPR + t] = h[lid];
}

@ENTRY@
void af_init(__global uint *meta) {
  if (get_global_id(0) == 0) meta[0] = 0u;
}
"#;

const SCATTER: &str = r#"
@ENTRY@
void af_scatter(__global const kt *src, @SIDX@__global const uint *hist, __global const uint *meta, __global kt *dst@DIDX@) {
  __local kt lk[TILE];
  @LXDECL@
  __local uint2 sc[273];
  __local uint off[256];
  const uint lid = get_local_id(0);
  const uint sh0 = meta[0] - 8u;
  const ulong tile = get_group_id(0);
  const ulong row = tile / TPR, t = tile % TPR;
  const uint base = (uint)t * TILE;
  const uint cnt = (uint)min((ulong)TILE, DIM - base);
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) {
      lk[li] = src[row * DIM + base + li];
      @LXLOAD@
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* The tile sorted by the digit in local memory: four stable splits of two bits. */
  for (uint s2 = 0u; s2 < 8u; s2 += 2u) {
    const uint sh = sh0 + s2;
    kt rk[ITEMS];
    @RXDECL@
    uint c0 = 0u, c1 = 0u, c2 = 0u, c3 = 0u;
    for (uint i = 0u; i < ITEMS; i++) {
      const uint li = lid * ITEMS + i;
      if (li < cnt) {
        rk[i] = lk[li];
        @RXLOAD@
        const uint b = (uint)(af_key(rk[i]) >> sh) & 3u;
        c0 += b == 0u; c1 += b == 1u; c2 += b == 2u; c3 += b == 3u;
      }
    }
    uint2 tot;
    const uint2 ex = af_scan2(sc, (uint2)(c0 | (c1 << 16), c2 | (c3 << 16)), lid, &tot);
    const uint t0 = tot.x & 0xffffu, t1 = tot.x >> 16, t2 = tot.y & 0xffffu;
    uint p0 = ex.x & 0xffffu, p1 = t0 + (ex.x >> 16);
    uint p2 = t0 + t1 + (ex.y & 0xffffu), p3 = t0 + t1 + t2 + (ex.y >> 16);
    for (uint i = 0u; i < ITEMS; i++) {
      const uint li = lid * ITEMS + i;
      if (li < cnt) {
        const uint b = (uint)(af_key(rk[i]) >> sh) & 3u;
        const uint pos = b == 0u ? p0 : b == 1u ? p1 : b == 2u ? p2 : p3;
        p0 += b == 0u; p1 += b == 1u; p2 += b == 2u; p3 += b == 3u;
        lk[pos] = rk[i];
        @LXSTORE@
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  /* Where each digit's run starts in the tile, then its global position less that start. */
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) {
      const uint d = af_digit(lk[li], sh0);
      if (li == 0u || af_digit(lk[li - 1u], sh0) != d) off[d] = li;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  off[lid] = hist[(row * 256UL + lid) * TPR + t] - off[lid];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) {
      const kt v = lk[li];
      const ulong pos = (ulong)(off[af_digit(v, sh0)] + li);
      @KSTORE@
      @STORE@
    }
  }
}
"#;

/// Rows into contiguous scratch (and for argsort each element's position), with the shift at 0.
const COPY_IN: &str = r#"
@ENTRY@
void af_in(__global const kt *src, __global kt *keys, __global uint *meta) {
  if (get_global_id(0) == 0) meta[0] = 0u;
  for (ulong e = get_global_id(0); e < ROWS * DIM; e += get_global_size(0)) {
    const ulong row = e / DIM, j = e % DIM;
    keys[e] = src[@AT@];
  }
}
"#;

/// Contiguous rows back to the output's layout.
const COPY_OUT: &str = r#"
@ENTRY@
void af_out(__global const @OT@ *s, __global @OT@ *out) {
  for (ulong e = get_global_id(0); e < ROWS * DIM; e += get_global_size(0)) {
    out[af_at(e / DIM, e % DIM)] = s[e];
  }
}
"#;

const BITONIC: &str = r#"
inline void af_cx(__local kt *lk, __local uint *lx, uint a, uint c) {
  const kt ka = lk[a], kc = lk[c];
  const uint xa = lx[a], xc = lx[c];
  if (ka > kc || (ka == kc && xa > xc)) {
    lk[a] = kc; lk[c] = ka; lx[a] = xc; lx[c] = xa;
  }
}

@ENTRY@
void af_bitonic(__global const kt *src, __global @DT@ *dst) {
  __local kt lk[LS];
  __local uint lx[LS];
  const uint lid = get_local_id(0);
  const ulong g = get_group_id(0);
  for (uint e = lid; e < LS; e += 256u) {
    const ulong row = g * (LS / SEG) + e / SEG;
    const uint j = e % SEG;
    if (row < ROWS && j < DIM) { lk[e] = af_key(src[@AT_J@]); lx[e] = j; }
    else { lk[e] = (kt)@KMAX@; lx[e] = 0xffffffffu; }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2u; k <= SEG; k <<= 1) {
    const uint h = k >> 1;
    for (uint q = lid; q < LS / 2u; q += 256u) {
      const uint a = (q / h) * k + q % h;
      af_cx(lk, lx, a, a + k - 1u - 2u * (q % h));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = k >> 2; s > 0u; s >>= 1) {
      for (uint q = lid; q < LS / 2u; q += 256u) {
        const uint a = (q / s) * 2u * s + q % s;
        af_cx(lk, lx, a, a + s);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (uint e = lid; e < LS; e += 256u) {
    const ulong row = g * (LS / SEG) + e / SEG;
    const uint j = e % SEG;
    if (row < ROWS && j < DIM) { const uint x = lx[e]; @OUT@ }
  }
}
"#;

/// Sort (`argsort` false) or argsort of `call` along `axis`.
pub fn render_sort(
    call: &IntrinsicCall,
    axis: usize,
    descending: bool,
    argsort: bool,
    _t: Target,
) -> Result<GpuPlan, Unsupported> {
    let r = Rows::of(&call.in_shapes[0], axis);
    sort_limits(r)?;
    let (kt, key) = key_of(call.in_dtypes[0], descending)?;
    let dt = if argsort { "uint" } else { kt };
    let mut source = format!("{key}{}", geometry(r));
    let at = |row: &str, j: &str| {
        if r.post == 1 {
            format!("{row} * DIM + {j}")
        } else {
            format!("af_at({row}, {j})")
        }
    };
    let entry = ("ENTRY", ENTRY_ATTR.to_string());
    if r.dim <= SMALL {
        let b = Bitonic::of(r);
        let out = if argsort {
            format!("dst[{}] = x;", at("row", "j"))
        } else {
            format!("dst[{}] = src[{}];", at("row", "j"), at("row", "x"))
        };
        let kmax = if kt == "uint" {
            "0xffffffffu"
        } else {
            "0xffffffffffffffffUL"
        };
        source.push_str(&format!("#define LS {}u\n#define SEG {}u\n", b.ls, b.seg));
        source.push_str(&fill(
            BITONIC,
            &[
                entry,
                ("DT", dt.into()),
                ("AT_J", at("row", "j")),
                ("KMAX", kmax.into()),
                ("OUT", out),
            ],
        ));
        return Ok(GpuPlan::single_pass(
            source,
            "af_bitonic",
            1,
            false,
            exact(b.ng),
            LOCAL,
        ));
    }
    let x = Radix::of(r, TILE);
    let key_bytes = if kt == "ulong" { 8 } else { 4 };
    source.push_str(&format!(
        "#define TILE {TILE}u\n#define ITEMS {}u\n#define TPR {}UL\n#define HLEN {}UL\n\
         #define TOPLEN {}UL\n",
        TILE / LOCAL as usize,
        x.tpr,
        x.hlen,
        x.top_len()
    ));
    source.push_str(SCANS);
    source.push_str(&fill(SCAN_PASSES, std::slice::from_ref(&entry)));
    if !x.one_scan() {
        source.push_str(&fill(SCAN_BLOCKS, std::slice::from_ref(&entry)));
    }
    source.push_str(&fill(HIST, std::slice::from_ref(&entry)));
    let on = |s: &str| {
        if argsort {
            s.to_string()
        } else {
            String::new()
        }
    };
    source.push_str(&fill(
        SCATTER,
        &[
            entry.clone(),
            ("SIDX", on("__global const uint *sidx, ")),
            ("DIDX", on(", __global uint *didx")),
            ("LXDECL", on("__local uint lx[TILE];")),
            (
                "LXLOAD",
                on("lx[li] = sh0 == 0u ? base + li : sidx[row * DIM + base + li];"),
            ),
            (
                "KSTORE",
                if argsort {
                    format!("if (sh0 != {}u) dst[pos] = v;", 8 * key_bytes - 8)
                } else {
                    "dst[pos] = v;".into()
                },
            ),
            ("RXDECL", on("uint rx[ITEMS];")),
            ("RXLOAD", on("rx[i] = lx[li];")),
            ("LXSTORE", on("lx[pos] = rx[i];")),
            ("STORE", on("didx[pos] = lx[li];")),
        ],
    ));
    let plan = radix_passes(r, &x, argsort, key_bytes, exact);
    if plan.copy_in {
        source.push_str(&fill(COPY_IN, &[entry.clone(), ("AT", at("row", "j"))]));
    }
    if plan.copy_out {
        source.push_str(&fill(COPY_OUT, &[entry, ("OT", dt.into())]));
    }
    Ok(GpuPlan {
        source,
        scratch: plan.scratch,
        passes: plan.passes,
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    })
}

/// The raw storage type of `d`'s elements.
fn raw(d: DType) -> &'static str {
    match d {
        DType::F64 => "ulong",
        DType::Bool => "uchar",
        _ => "uint",
    }
}

/// take_along_axis: data, indices (i32 or u32); fault word in scratch 0.
pub fn render_take(call: &IntrinsicCall, t: Take) -> Result<GpuPlan, Unsupported> {
    let len: usize = call.out_shape.iter().product();
    if len == 0 {
        return Err(Unsupported(
            "an empty take_along_axis runs on the CPU".into(),
        ));
    }
    let (it, in_range) = match call.in_dtypes[1] {
        DType::I32 => ("int", format!("k >= 0 && (ulong)k < {}UL", t.dim)),
        DType::U32 => ("uint", format!("(ulong)k < {}UL", t.dim)),
        d => return Err(Unsupported(format!("take_along_axis indices of type {d}"))),
    };
    let ty = raw(call.dtype);
    let source = format!(
        r#"
{ENTRY_ATTR}
void af_take(__global const {ty} *data, __global const {it} *idx, __global {ty} *out, __global uint *af_fault) {{
  uint fault = 0u;
  for (ulong lin = get_global_id(0); lin < {len}UL; lin += get_global_size(0)) {{
    const {it} k = idx[lin];
    if ({in_range}) {{
      out[lin] = data[((lin / {mp}UL) * {dim}UL + (ulong)k) * {post}UL + lin % {post}UL];
    }} else {{
      out[lin] = 0;
      fault = 1u;
    }}
  }}
  if (fault != 0u) af_fault[0] = fault;
}}
"#,
        mp = t.m * t.post,
        dim = t.dim,
        post = t.post,
    );
    Ok(GpuPlan::single_pass(
        source,
        "af_take",
        2,
        true,
        groups(len.div_ceil(LOCAL as usize)),
        LOCAL,
    ))
}

/// searchsorted: sorted, values.
pub fn render_search(
    call: &IntrinsicCall,
    right: bool,
    _t: Target,
) -> Result<GpuPlan, Unsupported> {
    let (na, nv): (usize, usize) = (
        call.in_shapes[0].iter().product(),
        call.in_shapes[1].iter().product(),
    );
    if nv == 0 {
        return Err(Unsupported("an empty searchsorted runs on the CPU".into()));
    }
    let (_, key) = key_of(call.in_dtypes[0], false)?;
    let eq = if right { " || km == kv" } else { "" };
    let source = format!(
        r#"{key}
{ENTRY_ATTR}
void af_searchsorted(__global const kt *a, __global const kt *v, __global uint *out) {{
  for (ulong i = get_global_id(0); i < {nv}UL; i += get_global_size(0)) {{
    const kt kv = af_key(v[i]);
    ulong lo = 0, hi = {na}UL;
    while (lo < hi) {{
      const ulong mid = lo + (hi - lo) / 2;
      const kt km = af_key(a[mid]);
      if (km < kv{eq}) lo = mid + 1; else hi = mid;
    }}
    out[i] = (uint)lo;
  }}
}}
"#
    );
    Ok(GpuPlan::single_pass(
        source,
        "af_searchsorted",
        2,
        false,
        groups(nv.div_ceil(LOCAL as usize)),
        LOCAL,
    ))
}

const RUNS: &str = r#"
inline uint af_flag(__global const kt *s, ulong i) {
  return (i == 0UL || af_key(s[i]) != af_key(s[i - 1])) ? 1u : 0u;
}

@ENTRY@
void af_runs_count(__global const kt *s, __global uint *part) {
  __local uint sc[273];
  const uint lid = get_local_id(0);
  const ulong b = get_group_id(0);
  uint c = 0u;
  for (uint i = 0u; i < 8u; i++) {
    const ulong e = b * 2048UL + lid * 8u + i;
    if (e < N) c += af_flag(s, e);
  }
  uint tot;
  af_scan1(sc, c, lid, &tot);
  if (lid == 0u) part[b] = tot;
}

@ENTRY@
void af_runs_top(__global uint *part, __global uint *out) {
  __local uint sc[273];
  const uint lid = get_local_id(0);
  uint carry = 0u;
  for (ulong c = 0; c < NB; c += 2048UL) {
    uint v[8];
    uint sum = 0u;
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      v[i] = e < NB ? part[e] : 0u;
      sum += v[i];
    }
    uint tot;
    uint ex = af_scan1(sc, sum, lid, &tot) + carry;
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      if (e < NB) part[e] = ex;
      ex += v[i];
    }
    carry += tot;
  }
  if (lid == 0u) { out[0] = carry; out[1UL + carry] = (uint)N; }
}

@ENTRY@
void af_runs_scatter(__global const kt *s, __global const uint *part, __global uint *out) {
  __local uint sc[273];
  const uint lid = get_local_id(0);
  const ulong b = get_group_id(0);
  uint f[8];
  uint c = 0u;
  for (uint i = 0u; i < 8u; i++) {
    const ulong e = b * 2048UL + lid * 8u + i;
    f[i] = e < N ? af_flag(s, e) : 0u;
    c += f[i];
  }
  uint tot;
  uint ex = af_scan1(sc, c, lid, &tot) + part[b];
  for (uint i = 0u; i < 8u; i++) {
    if (f[i] != 0u) { out[1UL + ex] = (uint)(b * 2048UL + lid * 8u + i); ex++; }
  }
  /* Zeros past the runs: this block's share of out[r + 2 .. N + 2). */
  const ulong r = out[0];
  for (ulong e = b * 2048UL + lid; e < (b + 1UL) * 2048UL; e += 256UL) {
    if (e >= r + 2UL && e < N + 2UL) out[e] = 0u;
  }
  if (b + 1UL == NB) {
    for (ulong e = NB * 2048UL + lid; e < N + 2UL; e += 256UL) {
      if (e >= r + 2UL) out[e] = 0u;
    }
  }
}
"#;

/// unique_runs of a sorted 1-D array: scratch 0 holds the block counts.
pub fn render_runs(call: &IntrinsicCall, _t: Target) -> Result<GpuPlan, Unsupported> {
    let n: usize = call.in_shapes[0].iter().product();
    if n == 0 {
        return Err(Unsupported("unique_runs of nothing runs on the CPU".into()));
    }
    let (_, key) = key_of(call.in_dtypes[0], false)?;
    let nb = n.div_ceil(BLOCK);
    let mut source = format!("{key}#define N {n}UL\n#define NB {nb}UL\n");
    source.push_str(SCANS);
    source.push_str(&fill(RUNS, &[("ENTRY", ENTRY_ATTR.into())]));
    let pass = |entry: &str, buffers: Vec<BufArg>, groups: u32| Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups,
        local: LOCAL,
    };
    Ok(GpuPlan {
        source,
        scratch: vec![nb as u64 * 4],
        passes: vec![
            pass(
                "af_runs_count",
                vec![BufArg::Input(0), BufArg::Scratch(0)],
                exact(nb),
            ),
            pass(
                "af_runs_top",
                vec![BufArg::Scratch(0), BufArg::Output(0)],
                1,
            ),
            pass(
                "af_runs_scatter",
                vec![BufArg::Input(0), BufArg::Scratch(0), BufArg::Output(0)],
                exact(nb),
            ),
        ],
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    })
}
