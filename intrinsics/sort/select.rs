//! `topk` on the GPUs as a radix select (OpenCL C and WGSL, rendered per call's shapes): the
//! positions of each row's `k` largest elements without sorting the row. Keys are the sorts'
//! canonical keys inverted (a descending key: `af_key` of a descending sort), so the result is
//! the first `k` of a stable descending argsort: the `k` smallest (key, position) pairs, in
//! that order (NaN first, -0.0 equal to +0.0, equal keys by position).
//!
//! The passes ([`passes`]; rows cut into tiles of [`TILE`] elements, one work-group per tile or
//! per row):
//! - `tk_init` (per row): zeroes the row's digit histogram, the threshold prefix, and sets the
//!   count still wanted to `k` and the shift to the top digit's.
//! - Per 8-bit digit from the top (4 for 32-bit keys, 8 for f64's): `tk_hist` (per tile: the
//!   digit counts of the keys whose higher digits equal the prefix, in local atomics, added to
//!   the row's 256 counters with global atomics) and `tk_find` (per row: a scan of the 256
//!   counts finds the digit where the wanted-th key falls; appends it to the prefix, takes the
//!   counts below it off the wanted count, zeroes the histogram, moves the shift down). After
//!   the last digit the prefix is the threshold key `T`, the `k`-th smallest, and `want` is how
//!   many keys equal to `T` belong to the result (the first `want` of them in the row).
//! - `tk_count` (per tile: how many keys are below `T` and equal to it), `tk_scan` (per row:
//!   exclusive sums of those over the row's tiles, in position order), `tk_compact` (per tile
//!   with something to give: each key below `T` and each of the first `want` equal ones written
//!   to the row's `k` candidate slots, in position order; tiles with nothing skip the read).
//! - `tk_sort` (per row): the `k` candidates (keys read again from the input) sorted by a
//!   bitonic network in local memory by (key, position), positions written to the output.
//!
//! Bytes read per element: 4 (8 for f64) per digit and two more reads for the count and the
//! compaction (only tiles holding candidates are read there): 6 reads of the keys for f32, and
//! nothing written per element. Rows whose `k` exceeds [`super::TOPK_MAX`] never get here (the
//! API sorts them).

use super::opencl;
use super::plan::{LOCAL, fill, sort_limits};
use super::{Rows, TOPK_MAX};
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::ENTRY_ATTR;
use crate::proggen::sequence::IntrinsicCall;

/// Elements per tile (256 threads, 16 each).
pub const TILE: usize = 4096;

/// Tiles per row and in all.
struct Tiles {
    tpr: usize,
    ntiles: usize,
}

fn tiles(r: Rows) -> Tiles {
    let tpr = r.dim.div_ceil(TILE);
    Tiles {
        tpr,
        ntiles: tpr * r.count(),
    }
}

/// Why a topk of `k` along `r` has no GPU plan.
fn limits(r: Rows, k: usize) -> Result<(), Unsupported> {
    sort_limits(r)?;
    if k == 0 || k > TOPK_MAX {
        return Err(Unsupported(format!(
            "a GPU topk keeps 1 to {TOPK_MAX} per row, not {k}"
        )));
    }
    Ok(())
}

/// The scratch buffers (0 the histograms, 1 the prefixes, 2 each row's wanted count and shift,
/// 3 per tile its counts below and equal to the threshold and their offsets, 4 the candidates)
/// and the passes. `groups(items)`: the work-groups for `items` tiles or rows.
fn passes(
    r: Rows,
    k: usize,
    key_bytes: u64,
    groups: impl Fn(usize) -> u32,
) -> (Vec<u64>, Vec<Pass>) {
    let t = tiles(r);
    let rows = r.count() as u64;
    let scratch = vec![
        rows * 256 * 4,
        rows * key_bytes,
        rows * 8,
        t.ntiles as u64 * 16,
        rows * k as u64 * 4,
    ];
    let s = BufArg::Scratch;
    let pass = |entry: &str, buffers: Vec<BufArg>, groups: u32| Pass {
        entry: entry.into(),
        buffers,
        params: false,
        groups,
        local: LOCAL,
    };
    let (gr, gt) = (groups(r.count()), groups(t.ntiles));
    let mut p = vec![pass("tk_init", vec![s(0), s(1), s(2)], gr)];
    for _ in 0..key_bytes {
        p.push(pass(
            "tk_hist",
            vec![BufArg::Input(0), s(0), s(1), s(2)],
            gt,
        ));
        p.push(pass("tk_find", vec![s(0), s(1), s(2)], gr));
    }
    p.push(pass("tk_count", vec![BufArg::Input(0), s(1), s(3)], gt));
    p.push(pass("tk_scan", vec![s(3)], gr));
    p.push(pass(
        "tk_compact",
        vec![BufArg::Input(0), s(1), s(2), s(3), s(4)],
        gt,
    ));
    p.push(pass(
        "tk_sort",
        vec![BufArg::Input(0), s(4), BufArg::Output(0)],
        gr,
    ));
    (scratch, p)
}

const OPENCL: &str = r#"
inline ulong tk_out(ulong row, ulong j) { return ((row / POST) * KK + j) * POST + row % POST; }

@ENTRY@
void tk_init(__global uint *hist, __global kt *prefix, __global uint *info) {
  const uint lid = get_local_id(0);
  const ulong row = get_group_id(0);
  hist[row * 256UL + lid] = 0u;
  if (lid == 0u) { prefix[row] = (kt)0; info[row * 2UL] = (uint)KK; info[row * 2UL + 1UL] = BITS - 8u; }
}

@ENTRY@
void tk_hist(__global const kt *src, __global uint *hist, __global const kt *prefix, __global const uint *info) {
  __local uint h[256];
  const uint lid = get_local_id(0);
  const ulong tile = get_group_id(0);
  const ulong row = tile / TPR, base = (tile % TPR) * TILE;
  const uint cnt = (uint)min((ulong)TILE, DIM - base);
  const uint sh = info[row * 2UL + 1UL];
  const kt pre = prefix[row];
  const kt hm = sh + 8u >= BITS ? (kt)0 : (~(kt)0) << (sh + 8u);
  h[lid] = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) {
      const kt k = af_key(src[@AT@]);
      if (((k ^ pre) & hm) == (kt)0) atomic_inc(&h[(uint)(k >> sh) & 255u]);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint c = h[lid];
  if (c != 0u) atomic_add(&hist[row * 256UL + lid], c);
}

@ENTRY@
void tk_find(__global uint *hist, __global kt *prefix, __global uint *info) {
  __local uint s[273];
  const uint lid = get_local_id(0);
  const ulong row = get_group_id(0);
  const uint c = hist[row * 256UL + lid];
  const uint want = info[row * 2UL], sh = info[row * 2UL + 1UL];
  hist[row * 256UL + lid] = 0u;
  uint tot;
  const uint ex = af_scan1(s, c, lid, &tot);
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (ex < want && want <= ex + c) {
    prefix[row] |= ((kt)lid) << sh;
    info[row * 2UL] = want - ex;
    info[row * 2UL + 1UL] = sh - 8u;
  }
}

@ENTRY@
void tk_count(__global const kt *src, __global const kt *prefix, __global uint *tiles) {
  __local uint2 s[273];
  const uint lid = get_local_id(0);
  const ulong tile = get_group_id(0);
  const ulong row = tile / TPR, base = (tile % TPR) * TILE;
  const uint cnt = (uint)min((ulong)TILE, DIM - base);
  const kt th = prefix[row];
  uint l = 0u, e = 0u;
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    if (li < cnt) {
      const kt k = af_key(src[@AT@]);
      l += k < th ? 1u : 0u;
      e += k == th ? 1u : 0u;
    }
  }
  uint2 tot;
  af_scan2(s, (uint2)(l, e), lid, &tot);
  if (lid == 0u) { tiles[tile * 4UL] = tot.x; tiles[tile * 4UL + 1UL] = tot.y; }
}

@ENTRY@
void tk_scan(__global uint *tiles) {
  __local uint2 s[273];
  const uint lid = get_local_id(0);
  const ulong row = get_group_id(0);
  __global uint *t = tiles + row * TPR * 4UL;
  uint2 carry = (uint2)(0u, 0u);
  for (ulong c = 0; c < TPR; c += 2048UL) {
    uint2 v[8];
    uint2 sum = (uint2)(0u, 0u);
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      v[i] = e < TPR ? (uint2)(t[e * 4UL], t[e * 4UL + 1UL]) : (uint2)(0u, 0u);
      sum += v[i];
    }
    uint2 tot;
    uint2 ex = af_scan2(s, sum, lid, &tot) + carry;
    for (uint i = 0u; i < 8u; i++) {
      const ulong e = c + lid * 8u + i;
      if (e < TPR) { t[e * 4UL + 2UL] = ex.x; t[e * 4UL + 3UL] = ex.y; }
      ex += v[i];
    }
    carry += tot;
  }
}

@ENTRY@
void tk_compact(__global const kt *src, __global const kt *prefix, __global const uint *info, __global const uint *tiles, __global uint *cand) {
  __local uint2 s[273];
  const uint lid = get_local_id(0);
  const ulong tile = get_group_id(0);
  const ulong row = tile / TPR, base = (tile % TPR) * TILE;
  const uint cnt = (uint)min((ulong)TILE, DIM - base);
  const kt th = prefix[row];
  const uint want = info[row * 2UL];
  const uint lc = tiles[tile * 4UL], ec = tiles[tile * 4UL + 1UL];
  uint lo = tiles[tile * 4UL + 2UL], eo = tiles[tile * 4UL + 3UL];
  if (lc == 0u && (ec == 0u || eo >= want)) return;
  __global uint *out = cand + row * KK;
  const uint below = (uint)KK - want;
  for (uint i = 0u; i < ITEMS; i++) {
    const uint li = i * 256u + lid;
    uint fl = 0u, fe = 0u;
    if (li < cnt) {
      const kt k = af_key(src[@AT@]);
      fl = k < th ? 1u : 0u;
      fe = k == th ? 1u : 0u;
    }
    uint2 tot;
    const uint2 ex = af_scan2(s, (uint2)(fl, fe), lid, &tot);
    if (fl != 0u) out[lo + ex.x] = (uint)(base + li);
    if (fe != 0u && eo + ex.y < want) out[below + eo + ex.y] = (uint)(base + li);
    lo += tot.x;
    eo += tot.y;
  }
}

inline void tk_cx(__local kt *lk, __local uint *lx, uint a, uint c) {
  const kt ka = lk[a], kc = lk[c];
  const uint xa = lx[a], xc = lx[c];
  if (ka > kc || (ka == kc && xa > xc)) {
    lk[a] = kc; lk[c] = ka; lx[a] = xc; lx[c] = xa;
  }
}

@ENTRY@
void tk_sort(__global const kt *src, __global const uint *cand, __global uint *out) {
  __local kt lk[KP];
  __local uint lx[KP];
  const uint lid = get_local_id(0);
  const ulong row = get_group_id(0);
  for (uint e = lid; e < KP; e += 256u) {
    if (e < KK) {
      const uint p = cand[row * KK + e];
      lk[e] = af_key(src[@AT_P@]);
      lx[e] = p;
    } else { lk[e] = (kt)@KMAX@; lx[e] = 0xffffffffu; }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2u; k <= KP; k <<= 1) {
    const uint h = k >> 1;
    for (uint q = lid; q < KP / 2u; q += 256u) {
      const uint a = (q / h) * k + q % h;
      tk_cx(lk, lx, a, a + k - 1u - 2u * (q % h));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = k >> 2; s > 0u; s >>= 1) {
      for (uint q = lid; q < KP / 2u; q += 256u) {
        const uint a = (q / s) * 2u * s + q % s;
        tk_cx(lk, lx, a, a + s);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (uint e = lid; e < KK; e += 256u) out[tk_out(row, e)] = lx[e];
}
"#;

/// The OpenCL plan of a topk of `k` along the rows `r`.
pub fn render_opencl(
    call: &IntrinsicCall,
    r: Rows,
    k: usize,
    _t: Target,
) -> Result<GpuPlan, Unsupported> {
    limits(r, k)?;
    let (kt, key) = opencl::key_of(call.in_dtypes[0], true)?;
    let key_bytes: u64 = if kt == "ulong" { 8 } else { 4 };
    let t = tiles(r);
    let mut source = format!("{key}{}", opencl::geometry(r));
    source.push_str(&format!(
        "#define TILE {TILE}UL\n#define ITEMS {}u\n#define TPR {}UL\n#define KK {k}UL\n\
         #define KP {}u\n#define BITS {}u\n",
        TILE / LOCAL as usize,
        t.tpr,
        k.next_power_of_two(),
        key_bytes * 8
    ));
    source.push_str(opencl::SCANS);
    let at = |j: &str| {
        if r.post == 1 {
            format!("row * DIM + {j}")
        } else {
            format!("af_at(row, {j})")
        }
    };
    let kmax = if kt == "uint" {
        "0xffffffffu"
    } else {
        "0xffffffffffffffffUL"
    };
    source.push_str(&fill(
        OPENCL,
        &[
            ("ENTRY", ENTRY_ATTR.into()),
            ("AT", at("base + li")),
            ("AT_P", at("(ulong)p")),
            ("KMAX", kmax.into()),
        ],
    ));
    let (scratch, passes) = passes(r, k, key_bytes, opencl::exact);
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

const WGSL: &str = r#"
var<workgroup> tk_h: array<atomic<u32>, 256>;
var<workgroup> tk_flag: u32;
var<workgroup> tk_lk: array<u32, KP>;
var<workgroup> tk_lx: array<u32, KP>;

fn tk_out(row: u32, j: u32) -> u32 { return ((row / POST) * KK + j) * POST + row % POST; }

@group(0) @binding(0) var<storage, read_write> ti_hist: array<u32>;
@group(0) @binding(1) var<storage, read_write> ti_prefix: array<u32>;
@group(0) @binding(2) var<storage, read_write> ti_info: array<u32>;

@compute @workgroup_size(256)
fn tk_init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var row = wid.x; row < ROWS; row += @GR@u) {
    ti_hist[row * 256u + lid] = 0u;
    if (lid == 0u) {
      ti_prefix[row] = 0u;
      ti_info[row * 2u] = KK;
      ti_info[row * 2u + 1u] = 24u;
    }
  }
}

@group(0) @binding(0) var<storage, read> th_src: array<u32>;
@group(0) @binding(1) var<storage, read_write> th_hist: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> th_prefix: array<u32>;
@group(0) @binding(3) var<storage, read> th_info: array<u32>;

@compute @workgroup_size(256)
fn tk_hist(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let base = (tile % TPR) * TILE;
    let cnt = min(TILE, DIM - base);
    let sh = th_info[row * 2u + 1u];
    let pre = th_prefix[row];
    let hm = select((~0u) << (sh + 8u), 0u, sh + 8u >= 32u);
    atomicStore(&tk_h[lid], 0u);
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let k = af_key(th_src[@AT@]);
        if (((k ^ pre) & hm) == 0u) { atomicAdd(&tk_h[(k >> sh) & 255u], 1u); }
      }
    }
    workgroupBarrier();
    let c = atomicLoad(&tk_h[lid]);
    if (c != 0u) { atomicAdd(&th_hist[row * 256u + lid], c); }
    workgroupBarrier();
  }
}

@group(0) @binding(0) var<storage, read_write> tf_hist: array<u32>;
@group(0) @binding(1) var<storage, read_write> tf_prefix: array<u32>;
@group(0) @binding(2) var<storage, read_write> tf_info: array<u32>;

@compute @workgroup_size(256)
fn tk_find(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var row = wid.x; row < ROWS; row += @GR@u) {
    let c = tf_hist[row * 256u + lid];
    let want = tf_info[row * 2u];
    let sh = tf_info[row * 2u + 1u];
    tf_hist[row * 256u + lid] = 0u;
    let ex = af_scan1(c, lid);
    storageBarrier();
    if (ex < want && want <= ex + c) {
      tf_prefix[row] = tf_prefix[row] | (lid << sh);
      tf_info[row * 2u] = want - ex;
      tf_info[row * 2u + 1u] = sh - 8u;
    }
  }
}

@group(0) @binding(0) var<storage, read> tc_src: array<u32>;
@group(0) @binding(1) var<storage, read> tc_prefix: array<u32>;
@group(0) @binding(2) var<storage, read_write> tc_tiles: array<u32>;

@compute @workgroup_size(256)
fn tk_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let base = (tile % TPR) * TILE;
    let cnt = min(TILE, DIM - base);
    let th = tc_prefix[row];
    var l = 0u;
    var e = 0u;
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let k = af_key(tc_src[@AT@]);
        l += select(0u, 1u, k < th);
        e += select(0u, 1u, k == th);
      }
    }
    af_scan2(vec2<u32>(l, e), lid);
    if (lid == 0u) {
      tc_tiles[tile * 4u] = af_tot2.x;
      tc_tiles[tile * 4u + 1u] = af_tot2.y;
    }
  }
}

@group(0) @binding(0) var<storage, read_write> ts_tiles: array<u32>;

@compute @workgroup_size(256)
fn tk_scan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var row = wid.x; row < ROWS; row += @GR@u) {
    let t0 = row * TPR;
    var carry = vec2<u32>(0u, 0u);
    for (var c = 0u; c < TPR; c += 2048u) {
      var v: array<vec2<u32>, 8>;
      var sum = vec2<u32>(0u, 0u);
      for (var i = 0u; i < 8u; i++) {
        let e = c + lid * 8u + i;
        v[i] = vec2<u32>(0u, 0u);
        if (e < TPR) { v[i] = vec2<u32>(ts_tiles[(t0 + e) * 4u], ts_tiles[(t0 + e) * 4u + 1u]); }
        sum += v[i];
      }
      var ex = af_scan2(sum, lid) + carry;
      for (var i = 0u; i < 8u; i++) {
        let e = c + lid * 8u + i;
        if (e < TPR) {
          ts_tiles[(t0 + e) * 4u + 2u] = ex.x;
          ts_tiles[(t0 + e) * 4u + 3u] = ex.y;
        }
        ex += v[i];
      }
      carry += af_tot2;
    }
  }
}

@group(0) @binding(0) var<storage, read> tp_src: array<u32>;
@group(0) @binding(1) var<storage, read> tp_prefix: array<u32>;
@group(0) @binding(2) var<storage, read> tp_info: array<u32>;
@group(0) @binding(3) var<storage, read> tp_tiles: array<u32>;
@group(0) @binding(4) var<storage, read_write> tp_cand: array<u32>;

@compute @workgroup_size(256)
fn tk_compact(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let base = (tile % TPR) * TILE;
    let cnt = min(TILE, DIM - base);
    let th = tp_prefix[row];
    let want = tp_info[row * 2u];
    let lc = tp_tiles[tile * 4u];
    let ec = tp_tiles[tile * 4u + 1u];
    var lo = tp_tiles[tile * 4u + 2u];
    var eo = tp_tiles[tile * 4u + 3u];
    workgroupBarrier();
    if (lid == 0u) { tk_flag = select(1u, 0u, lc == 0u && (ec == 0u || eo >= want)); }
    if (workgroupUniformLoad(&tk_flag) == 0u) { continue; }
    let out0 = row * KK;
    let below = KK - want;
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      var fl = 0u;
      var fe = 0u;
      if (li < cnt) {
        let k = af_key(tp_src[@AT@]);
        fl = select(0u, 1u, k < th);
        fe = select(0u, 1u, k == th);
      }
      let ex = af_scan2(vec2<u32>(fl, fe), lid);
      let tot = af_tot2;
      if (fl != 0u) { tp_cand[out0 + lo + ex.x] = base + li; }
      if (fe != 0u && eo + ex.y < want) { tp_cand[out0 + below + eo + ex.y] = base + li; }
      lo += tot.x;
      eo += tot.y;
    }
  }
}

fn tk_cx(a: u32, c: u32) {
  let ka = tk_lk[a];
  let kc = tk_lk[c];
  let xa = tk_lx[a];
  let xc = tk_lx[c];
  if (ka > kc || (ka == kc && xa > xc)) {
    tk_lk[a] = kc;
    tk_lk[c] = ka;
    tk_lx[a] = xc;
    tk_lx[c] = xa;
  }
}

@group(0) @binding(0) var<storage, read> to_src: array<u32>;
@group(0) @binding(1) var<storage, read> to_cand: array<u32>;
@group(0) @binding(2) var<storage, read_write> to_out: array<u32>;

@compute @workgroup_size(256)
fn tk_sort(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var row = wid.x; row < ROWS; row += @GR@u) {
    for (var e = lid; e < KP; e += 256u) {
      if (e < KK) {
        let p = to_cand[row * KK + e];
        tk_lk[e] = af_key(to_src[@AT_P@]);
        tk_lx[e] = p;
      } else {
        tk_lk[e] = 0xffffffffu;
        tk_lx[e] = 0xffffffffu;
      }
    }
    workgroupBarrier();
    for (var k = 2u; k <= KP; k <<= 1u) {
      let h = k >> 1u;
      for (var q = lid; q < KP / 2u; q += 256u) {
        let a = (q / h) * k + q % h;
        tk_cx(a, a + k - 1u - 2u * (q % h));
      }
      workgroupBarrier();
      for (var s = k >> 2u; s > 0u; s >>= 1u) {
        for (var q = lid; q < KP / 2u; q += 256u) {
          let a = (q / s) * 2u * s + q % s;
          tk_cx(a, a + s);
        }
        workgroupBarrier();
      }
    }
    for (var e = lid; e < KK; e += 256u) { to_out[tk_out(row, e)] = tk_lx[e]; }
    workgroupBarrier();
  }
}
"#;

/// The WGSL plan of a topk of `k` along the rows `r` (32-bit elements).
pub fn render_wgsl(call: &IntrinsicCall, r: Rows, k: usize) -> Result<GpuPlan, Unsupported> {
    use super::wgsl::{consts, groups, key_of};
    limits(r, k)?;
    let mut source = key_of(call.in_dtypes[0], true)?;
    source.push_str(&consts(r));
    let t = tiles(r);
    source.push_str(&format!(
        "const TILE: u32 = {TILE}u;\nconst ITEMS: u32 = {}u;\nconst TPR: u32 = {}u;\n\
         const NTILES: u32 = {}u;\nconst KK: u32 = {k}u;\nconst KP: u32 = {}u;\n",
        TILE / LOCAL as usize,
        t.tpr,
        t.ntiles,
        k.next_power_of_two(),
    ));
    source.push_str(super::wgsl::SCANS);
    let at = |j: &str| {
        if r.post == 1 {
            format!("row * DIM + {j}")
        } else {
            format!("af_at(row, {j})")
        }
    };
    source.push_str(&fill(
        WGSL,
        &[
            ("GR", groups(r.count()).to_string()),
            ("GT", groups(t.ntiles).to_string()),
            ("AT", at("base + li")),
            ("AT_P", at("p")),
        ],
    ));
    let (scratch, passes) = passes(r, k, 4, groups);
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
