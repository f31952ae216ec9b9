//! The sorting intrinsics in WGSL: the kernels of `opencl.rs` (read its module comment for the
//! algorithms), written for WGSL. Elements of 32 bits and bools are bound as `array<u32>` (their
//! bits; no float is loaded, so NaN payloads survive); f64 never reaches here (WGSL has none: the
//! scheduler runs such calls on the CPU). Differences from OpenCL: 32-bit indices (the shared
//! check keeps arrays under 2^31 elements), module-scope workgroup arrays shared by the entries
//! that use them (WebGPU's default 16 KiB: an argsort's radix tiles hold 1024 elements, a sort's
//! 2048), grid strides as literals of the dispatched group count, and one set of bindings per
//! entry (entries of one source may reuse binding numbers).

use super::opencl::{Bitonic, Radix, fill, sort_limits};
use super::{Rows, SMALL, Take};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, MAX_GROUPS};
use crate::proggen::sequence::IntrinsicCall;

/// Entries per block of the scans (256 threads, 8 each).
const BLOCK: usize = 2048;

fn groups(items: usize) -> u32 {
    items.clamp(1, MAX_GROUPS as usize) as u32
}

/// `af_key` (canonical keys of 32-bit elements, XOR the descending mask) and `af_digit`.
fn key_of(d: DType, descending: bool) -> Result<String, Unsupported> {
    let body = match d {
        DType::F32 => {
            "select(select(select(b | 0x80000000u, ~b, (b >> 31u) != 0u), 0x80000000u, b == 0x80000000u), 0xffffffffu, (b & 0x7fffffffu) > 0x7f800000u)"
        }
        DType::I32 => "b ^ 0x80000000u",
        DType::U32 => "b",
        d => return Err(Unsupported(format!("a WGSL sort of {d} elements"))),
    };
    let mask = if descending { "0xffffffffu" } else { "0u" };
    Ok(format!(
        "fn af_key(b: u32) -> u32 {{ return ({body}) ^ {mask}; }}\n\
         fn af_digit(v: u32, sh: u32) -> u32 {{ return (af_key(v) >> sh) & 255u; }}\n"
    ))
}

fn consts(r: Rows) -> String {
    format!(
        "const ROWS: u32 = {}u;\nconst DIM: u32 = {}u;\nconst POST: u32 = {}u;\n\
         fn af_at(row: u32, j: u32) -> u32 {{ return ((row / POST) * DIM + j) * POST + row % POST; }}\n",
        r.count(),
        r.dim,
        r.post
    )
}

const SCANS: &str = r#"
var<workgroup> af_s1: array<u32, 256>;
var<workgroup> af_s2: array<vec2<u32>, 256>;
var<private> af_tot1: u32;
var<private> af_tot2: vec2<u32>;

// Exclusive prefix sum of one value per thread over the work-group; the total in af_tot1.
fn af_scan1(v: u32, lid: u32) -> u32 {
  af_s1[lid] = v;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off <<= 1u) {
    var t = 0u;
    if (lid >= off) { t = af_s1[lid - off]; }
    workgroupBarrier();
    af_s1[lid] += t;
    workgroupBarrier();
  }
  let incl = af_s1[lid];
  af_tot1 = af_s1[255];
  workgroupBarrier();
  return incl - v;
}

fn af_scan2(v: vec2<u32>, lid: u32) -> vec2<u32> {
  af_s2[lid] = v;
  workgroupBarrier();
  for (var off = 1u; off < 256u; off <<= 1u) {
    var t = vec2<u32>(0u, 0u);
    if (lid >= off) { t = af_s2[lid - off]; }
    workgroupBarrier();
    af_s2[lid] += t;
    workgroupBarrier();
  }
  let incl = af_s2[lid];
  af_tot2 = af_s2[255];
  workgroupBarrier();
  return incl - v;
}
"#;

const SCAN_PASSES: &str = r#"
@group(0) @binding(0) var<storage, read> sr_hist: array<u32>;
@group(0) @binding(1) var<storage, read_write> sr_part: array<u32>;

@compute @workgroup_size(256)
fn af_scan_reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var b = wid.x; b < NB; b += @GB@u) {
    var sum = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = b * 2048u + lid * 8u + i;
      if (e < HLEN) { sum += sr_hist[e]; }
    }
    af_scan1(sum, lid);
    if (lid == 0u) { sr_part[b] = af_tot1; }
  }
}

@group(0) @binding(0) var<storage, read_write> st_part: array<u32>;

@compute @workgroup_size(256)
fn af_scan_top(@builtin(local_invocation_index) lid: u32) {
  var carry = 0u;
  for (var c = 0u; c < NB; c += 2048u) {
    var v: array<u32, 8>;
    var sum = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      v[i] = 0u;
      if (e < NB) { v[i] = st_part[e]; }
      sum += v[i];
    }
    var ex = af_scan1(sum, lid) + carry;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      if (e < NB) { st_part[e] = ex; }
      ex += v[i];
    }
    carry += af_tot1;
  }
}

@group(0) @binding(0) var<storage, read_write> sd_hist: array<u32>;
@group(0) @binding(1) var<storage, read> sd_part: array<u32>;

@compute @workgroup_size(256)
fn af_scan_down(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var b = wid.x; b < NB; b += @GB@u) {
    var v: array<u32, 8>;
    var sum = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = b * 2048u + lid * 8u + i;
      v[i] = 0u;
      if (e < HLEN) { v[i] = sd_hist[e]; }
      sum += v[i];
    }
    var ex = af_scan1(sum, lid) + sd_part[b];
    for (var i = 0u; i < 8u; i++) {
      let e = b * 2048u + lid * 8u + i;
      if (e < HLEN) { sd_hist[e] = ex; }
      ex += v[i];
    }
  }
}
"#;

const HIST: &str = r#"
@group(0) @binding(0) var<storage, read> h@P@_src: array<u32>;
@group(0) @binding(1) var<storage, read_write> h@P@_hist: array<u32>;

@compute @workgroup_size(256)
fn af_hist@P@(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let t = tile % TPR;
    let base = t * TILE;
    let cnt = min(TILE, DIM - base);
    atomicStore(&af_h[lid], 0u);
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) { atomicAdd(&af_h[af_digit(h@P@_src[@SRC@], @SH@u)], 1u); }
    }
    workgroupBarrier();
    h@P@_hist[(row * 256u + lid) * TPR + t] = atomicLoad(&af_h[lid]);
    workgroupBarrier();
  }
}
"#;

const SCATTER: &str = r#"
@BINDINGS@
@compute @workgroup_size(256)
fn af_scatter@P@(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let t = tile % TPR;
    let base = t * TILE;
    let cnt = min(TILE, DIM - base);
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        af_lk[li] = s@P@_src[@SRC@];
        @LXLOAD@
      }
    }
    workgroupBarrier();
    // The tile sorted by the digit in workgroup memory: four stable splits of two bits.
    for (var sh = @SH@u; sh < @SH@u + 8u; sh += 2u) {
      var rk: array<u32, ITEMS>;
      @RXDECL@
      var c = vec4<u32>(0u);
      for (var i = 0u; i < ITEMS; i++) {
        let li = lid * ITEMS + i;
        if (li < cnt) {
          rk[i] = af_lk[li];
          @RXLOAD@
          let b = (af_key(rk[i]) >> sh) & 3u;
          c += select(vec4<u32>(0u), vec4<u32>(1u), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(b));
        }
      }
      let ex = af_scan2(vec2<u32>(c.x | (c.y << 16u), c.z | (c.w << 16u)), lid);
      let tot = af_tot2;
      let t0 = tot.x & 0xffffu;
      let t1 = tot.x >> 16u;
      let t2 = tot.y & 0xffffu;
      var p = vec4<u32>(ex.x & 0xffffu, t0 + (ex.x >> 16u), t0 + t1 + (ex.y & 0xffffu), t0 + t1 + t2 + (ex.y >> 16u));
      for (var i = 0u; i < ITEMS; i++) {
        let li = lid * ITEMS + i;
        if (li < cnt) {
          let b = (af_key(rk[i]) >> sh) & 3u;
          let pos = p[b];
          p[b] = pos + 1u;
          af_lk[pos] = rk[i];
          @LXSTORE@
        }
      }
      workgroupBarrier();
    }
    // Where each digit's run starts in the tile, then its global position less that start.
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let d = af_digit(af_lk[li], @SH@u);
        if (li == 0u || af_digit(af_lk[li - 1u], @SH@u) != d) { af_off[d] = li; }
      }
    }
    workgroupBarrier();
    af_off[lid] = s@P@_hist[(row * 256u + lid) * TPR + t] - af_off[lid];
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let v = af_lk[li];
        let pos = af_off[af_digit(v, @SH@u)] + li;
        @STORE@
      }
    }
    workgroupBarrier();
  }
}
"#;

const BITONIC: &str = r#"
@group(0) @binding(0) var<storage, read> b_src: array<u32>;
@group(0) @binding(1) var<storage, read_write> b_dst: array<u32>;
var<workgroup> af_bk: array<u32, LS>;
var<workgroup> af_bx: array<u32, LS>;

fn af_cx(a: u32, c: u32) {
  let ka = af_bk[a];
  let kc = af_bk[c];
  let xa = af_bx[a];
  let xc = af_bx[c];
  if (ka > kc || (ka == kc && xa > xc)) {
    af_bk[a] = kc;
    af_bk[c] = ka;
    af_bx[a] = xc;
    af_bx[c] = xa;
  }
}

@compute @workgroup_size(256)
fn af_bitonic(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var g = wid.x; g < NG; g += @GG@u) {
    for (var e = lid; e < LS; e += 256u) {
      let row = g * (LS / SEG) + e / SEG;
      let j = e % SEG;
      if (row < ROWS && j < DIM) {
        af_bk[e] = af_key(b_src[@AT_J@]);
        af_bx[e] = j;
      } else {
        af_bk[e] = 0xffffffffu;
        af_bx[e] = 0xffffffffu;
      }
    }
    workgroupBarrier();
    for (var k = 2u; k <= SEG; k <<= 1u) {
      let h = k >> 1u;
      for (var q = lid; q < LS / 2u; q += 256u) {
        let a = (q / h) * k + q % h;
        af_cx(a, a + k - 1u - 2u * (q % h));
      }
      workgroupBarrier();
      for (var s = k >> 2u; s > 0u; s >>= 1u) {
        for (var q = lid; q < LS / 2u; q += 256u) {
          let a = (q / s) * 2u * s + q % s;
          af_cx(a, a + s);
        }
        workgroupBarrier();
      }
    }
    for (var e = lid; e < LS; e += 256u) {
      let row = g * (LS / SEG) + e / SEG;
      let j = e % SEG;
      if (row < ROWS && j < DIM) {
        let x = af_bx[e];
        @OUT@
      }
    }
    workgroupBarrier();
  }
}
"#;

/// Sort (`argsort` false) or argsort of `call` along `axis`.
pub fn render_sort(
    call: &IntrinsicCall,
    axis: usize,
    descending: bool,
    argsort: bool,
) -> Result<GpuPlan, Unsupported> {
    let r = Rows::of(&call.in_shapes[0], axis);
    sort_limits(r)?;
    let mut source = key_of(call.in_dtypes[0], descending)?;
    source.push_str(&consts(r));
    let at = |row: &str, j: &str| {
        if r.post == 1 {
            format!("{row} * DIM + {j}")
        } else {
            format!("af_at({row}, {j})")
        }
    };
    if r.dim <= SMALL {
        let b = Bitonic::of(r);
        let out = if argsort {
            format!("b_dst[{}] = x;", at("row", "j"))
        } else {
            format!("b_dst[{}] = b_src[{}];", at("row", "j"), at("row", "x"))
        };
        source.push_str(&format!(
            "const LS: u32 = {}u;\nconst SEG: u32 = {}u;\nconst NG: u32 = {}u;\n",
            b.ls, b.seg, b.ng
        ));
        source.push_str(&fill(
            BITONIC,
            &[
                ("GG", groups(b.ng).to_string()),
                ("AT_J", at("row", "j")),
                ("OUT", out),
            ],
        ));
        return Ok(GpuPlan::single_pass(
            source,
            "af_bitonic",
            1,
            false,
            groups(b.ng),
            LOCAL,
        ));
    }
    // 16 KiB of workgroup memory: elements and positions of 1024, or elements of 2048.
    let tile = if argsort { 1024 } else { 2048 };
    let x = Radix::of(r, tile);
    let (gt, gb) = (groups(x.ntiles), groups(x.nb));
    source.push_str(&format!(
        "const TILE: u32 = {tile}u;\nconst ITEMS: u32 = {}u;\nconst TPR: u32 = {}u;\n\
         const NTILES: u32 = {}u;\nconst HLEN: u32 = {}u;\nconst NB: u32 = {}u;\n\
         var<workgroup> af_h: array<atomic<u32>, 256>;\nvar<workgroup> af_lk: array<u32, TILE>;\n\
         var<workgroup> af_off: array<u32, 256>;\n",
        tile / LOCAL as usize,
        x.tpr,
        x.ntiles,
        x.hlen,
        x.nb
    ));
    if argsort {
        source.push_str("var<workgroup> af_lx: array<u32, TILE>;\n");
    }
    source.push_str(SCANS);
    source.push_str(&fill(SCAN_PASSES, &[("GB", gb.to_string())]));
    let n = r.len() as u64;
    let mut scratch = vec![x.hlen as u64 * 4, x.nb as u64 * 4, n * 4, n * 4];
    if argsort {
        scratch.extend([n * 4, n * 4]);
    }
    let keys = |p: usize| BufArg::Scratch(2 + (p % 2) as u32);
    let idx = |p: usize| BufArg::Scratch(4 + (p % 2) as u32);
    let pass = |entry: String, buffers: Vec<BufArg>, groups: u32| Pass {
        entry,
        buffers,
        params: false,
        groups,
        local: LOCAL,
    };
    let mut passes = Vec::new();
    for p in 0..4usize {
        let (first, last) = (p == 0, p == 3);
        let src_arg = if first { BufArg::Input(0) } else { keys(p - 1) };
        let src = if first {
            at("row", "base + li")
        } else {
            "row * DIM + base + li".into()
        };
        let sh = (8 * p).to_string();
        source.push_str(&fill(
            HIST,
            &[
                ("P", p.to_string()),
                ("GT", gt.to_string()),
                ("SRC", src.clone()),
                ("SH", sh.clone()),
            ],
        ));
        // Bindings in the pass's buffer order.
        let mut names = vec![("src", "read")];
        if argsort && !first {
            names.push(("sidx", "read"));
        }
        names.push(("hist", "read"));
        names.push(("dst", "read_write"));
        if argsort && !last {
            names.push(("didx", "read_write"));
        }
        let bindings: String = names
            .iter()
            .enumerate()
            .map(|(i, (name, access))| {
                format!("@group(0) @binding({i}) var<storage, {access}> s{p}_{name}: array<u32>;\n")
            })
            .collect();
        let out_at = if r.post == 1 {
            "pos".to_string()
        } else {
            "af_at(pos / DIM, pos % DIM)".to_string()
        };
        let store = match (last, argsort) {
            (false, false) => format!("s{p}_dst[pos] = v;"),
            (false, true) => format!("s{p}_dst[pos] = v; s{p}_didx[pos] = af_lx[li];"),
            (true, false) => format!("s{p}_dst[{out_at}] = v;"),
            (true, true) => format!("s{p}_dst[{out_at}] = af_lx[li];"),
        };
        let lxload = match (first, argsort) {
            (_, false) => String::new(),
            (true, true) => "af_lx[li] = base + li;".into(),
            (false, true) => format!("af_lx[li] = s{p}_sidx[row * DIM + base + li];"),
        };
        let on = |s: &str| if argsort { s.to_string() } else { String::new() };
        source.push_str(&fill(
            SCATTER,
            &[
                ("BINDINGS", bindings),
                ("P", p.to_string()),
                ("GT", gt.to_string()),
                ("SRC", src),
                ("LXLOAD", lxload),
                ("SH", sh),
                ("RXDECL", on("var rx: array<u32, ITEMS>;")),
                ("RXLOAD", on("rx[i] = af_lx[li];")),
                ("LXSTORE", on("af_lx[pos] = rx[i];")),
                ("STORE", store),
            ],
        ));
        passes.push(pass(
            format!("af_hist{p}"),
            vec![src_arg, BufArg::Scratch(0)],
            gt,
        ));
        passes.push(pass(
            "af_scan_reduce".into(),
            vec![BufArg::Scratch(0), BufArg::Scratch(1)],
            gb,
        ));
        passes.push(pass("af_scan_top".into(), vec![BufArg::Scratch(1)], 1));
        passes.push(pass(
            "af_scan_down".into(),
            vec![BufArg::Scratch(0), BufArg::Scratch(1)],
            gb,
        ));
        let mut bufs = vec![src_arg];
        if argsort && !first {
            bufs.push(idx(p - 1));
        }
        bufs.push(BufArg::Scratch(0));
        if last {
            bufs.push(BufArg::Output(0));
        } else {
            bufs.push(keys(p));
            if argsort {
                bufs.push(idx(p));
            }
        }
        passes.push(pass(format!("af_scatter{p}"), bufs, gt));
    }
    Ok(GpuPlan {
        source,
        scratch,
        passes,
        fault: None,
        immediate_words: None,
    })
}

/// take_along_axis: data, indices (i32 or u32); fault word in scratch 0.
pub fn render_take(call: &IntrinsicCall, t: Take) -> Result<GpuPlan, Unsupported> {
    let len: usize = call.out_shape.iter().product();
    if len == 0 {
        return Err(Unsupported("an empty take_along_axis runs on the CPU".into()));
    }
    let it = match call.in_dtypes[1] {
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => return Err(Unsupported(format!("take_along_axis indices of type {d}"))),
    };
    let g = groups(len.div_ceil(LOCAL as usize));
    let source = format!(
        "@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> idx: array<{it}>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>>;

@compute @workgroup_size(256)
fn af_take(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var lin = gid.x; lin < {len}u; lin += {stride}u) {{
    let k = u32(idx[lin]);
    var v = 0u;
    if (k < {dim}u) {{
      v = data[((lin / {mp}u) * {dim}u + k) * {post}u + lin % {post}u];
    }} else {{
      atomicStore(&fault[0], 1u);
    }}
    out[lin] = v;
  }}
}}
",
        stride = g * LOCAL,
        mp = t.m * t.post,
        dim = t.dim,
        post = t.post,
    );
    Ok(GpuPlan::single_pass(source, "af_take", 2, true, g, LOCAL))
}

/// searchsorted: sorted, values.
pub fn render_search(call: &IntrinsicCall, right: bool) -> Result<GpuPlan, Unsupported> {
    let (na, nv): (usize, usize) = (
        call.in_shapes[0].iter().product(),
        call.in_shapes[1].iter().product(),
    );
    if nv == 0 {
        return Err(Unsupported("an empty searchsorted runs on the CPU".into()));
    }
    let key = key_of(call.in_dtypes[0], false)?;
    let g = groups(nv.div_ceil(LOCAL as usize));
    let eq = if right { " || km == kv" } else { "" };
    let source = format!(
        "{key}
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> v: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn af_searchsorted(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var i = gid.x; i < {nv}u; i += {stride}u) {{
    let kv = af_key(v[i]);
    var lo = 0u;
    var hi = {na}u;
    while (lo < hi) {{
      let mid = lo + (hi - lo) / 2u;
      let km = af_key(a[mid]);
      if (km < kv{eq}) {{ lo = mid + 1u; }} else {{ hi = mid; }}
    }}
    out[i] = lo;
  }}
}}
",
        stride = g * LOCAL,
    );
    Ok(GpuPlan::single_pass(
        source,
        "af_searchsorted",
        2,
        false,
        g,
        LOCAL,
    ))
}

const RUNS: &str = r#"
@group(0) @binding(0) var<storage, read> rc_s: array<u32>;
@group(0) @binding(1) var<storage, read_write> rc_part: array<u32>;

fn af_flag_c(i: u32) -> u32 {
  if (i == 0u) { return 1u; }
  return select(0u, 1u, af_key(rc_s[i]) != af_key(rc_s[i - 1u]));
}

@compute @workgroup_size(256)
fn af_runs_count(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var b = wid.x; b < NB; b += @GB@u) {
    var c = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = b * 2048u + lid * 8u + i;
      if (e < N) { c += af_flag_c(e); }
    }
    af_scan1(c, lid);
    if (lid == 0u) { rc_part[b] = af_tot1; }
  }
}

@group(0) @binding(0) var<storage, read_write> rt_part: array<u32>;
@group(0) @binding(1) var<storage, read_write> rt_out: array<u32>;

@compute @workgroup_size(256)
fn af_runs_top(@builtin(local_invocation_index) lid: u32) {
  var carry = 0u;
  for (var c = 0u; c < NB; c += 2048u) {
    var v: array<u32, 8>;
    var sum = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      v[i] = 0u;
      if (e < NB) { v[i] = rt_part[e]; }
      sum += v[i];
    }
    var ex = af_scan1(sum, lid) + carry;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      if (e < NB) { rt_part[e] = ex; }
      ex += v[i];
    }
    carry += af_tot1;
  }
  if (lid == 0u) {
    rt_out[0] = carry;
    rt_out[1u + carry] = N;
  }
}

@group(0) @binding(0) var<storage, read> rs_s: array<u32>;
@group(0) @binding(1) var<storage, read> rs_part: array<u32>;
@group(0) @binding(2) var<storage, read_write> rs_out: array<u32>;

fn af_flag_s(i: u32) -> u32 {
  if (i == 0u) { return 1u; }
  return select(0u, 1u, af_key(rs_s[i]) != af_key(rs_s[i - 1u]));
}

@compute @workgroup_size(256)
fn af_runs_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  for (var b = wid.x; b < NB; b += @GB@u) {
    var f: array<u32, 8>;
    var c = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = b * 2048u + lid * 8u + i;
      f[i] = 0u;
      if (e < N) { f[i] = af_flag_s(e); }
      c += f[i];
    }
    var ex = af_scan1(c, lid) + rs_part[b];
    for (var i = 0u; i < 8u; i++) {
      if (f[i] != 0u) {
        rs_out[1u + ex] = b * 2048u + lid * 8u + i;
        ex += 1u;
      }
    }
  }
  let r = rs_out[0];
  for (var e = wid.x * 256u + lid; e < N + 2u; e += @GB@u * 256u) {
    if (e >= r + 2u) { rs_out[e] = 0u; }
  }
}
"#;

/// unique_runs of a sorted 1-D array: scratch 0 holds the block counts.
pub fn render_runs(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    let n: usize = call.in_shapes[0].iter().product();
    if n == 0 {
        return Err(Unsupported("unique_runs of nothing runs on the CPU".into()));
    }
    let nb = n.div_ceil(BLOCK);
    let gb = groups(nb);
    let mut source = key_of(call.in_dtypes[0], false)?;
    source.push_str(&format!("const N: u32 = {n}u;\nconst NB: u32 = {nb}u;\n"));
    source.push_str(SCANS);
    source.push_str(&fill(RUNS, &[("GB", gb.to_string())]));
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
                gb,
            ),
            pass(
                "af_runs_top",
                vec![BufArg::Scratch(0), BufArg::Output(0)],
                1,
            ),
            pass(
                "af_runs_scatter",
                vec![BufArg::Input(0), BufArg::Scratch(0), BufArg::Output(0)],
                gb,
            ),
        ],
        fault: None,
        immediate_words: None,
    })
}
