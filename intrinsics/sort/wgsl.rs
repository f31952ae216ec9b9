//! The sorting intrinsics in WGSL: the kernels of `opencl.rs` (read its module comment for the
//! algorithms), written for WGSL. Elements of 32 bits and bools are bound as `array<u32>` (their
//! bits; no float is loaded, so NaN payloads survive); f64 never reaches here (WGSL has none: the
//! scheduler runs such calls on the CPU). Differences from OpenCL: 32-bit indices (the shared
//! check keeps arrays under 2^31 elements), module-scope workgroup arrays shared by the entries
//! that use them (WebGPU's default 16 KiB: an argsort's radix tiles hold 1024 elements, a sort's
//! 2048), grid strides as literals of the dispatched group count, and one set of bindings per
//! entry (entries of one source may reuse binding numbers).

use super::plan::{BLOCK, Bitonic, LOCAL, Radix, fill, radix_passes, sort_limits};
use super::{Rows, SMALL, Take};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::MAX_GROUPS;
use crate::proggen::sequence::IntrinsicCall;

pub(super) fn groups(items: usize) -> u32 {
    items.clamp(1, MAX_GROUPS as usize) as u32
}

/// `af_key` (canonical keys of 32-bit elements, XOR the descending mask) and `af_digit`.
pub(super) fn key_of(d: DType, descending: bool) -> Result<String, Unsupported> {
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

pub(super) fn consts(r: Rows) -> String {
    format!(
        "const ROWS: u32 = {}u;\nconst DIM: u32 = {}u;\nconst POST: u32 = {}u;\n\
         fn af_at(row: u32, j: u32) -> u32 {{ return ((row / POST) * DIM + j) * POST + row % POST; }}\n",
        r.count(),
        r.dim,
        r.post
    )
}

pub(super) const SCANS: &str = r#"
var<workgroup> af_s1: array<u32, 273>;
var<workgroup> af_s2: array<vec2<u32>, 273>;
var<private> af_tot1: u32;
var<private> af_tot2: vec2<u32>;

// Exclusive prefix sum of one value per thread over the work-group (the total in af_tot1):
// 16 threads scan 16 values each, one thread the 16 totals.
fn af_scan1(v: u32, lid: u32) -> u32 {
  af_s1[lid] = v;
  workgroupBarrier();
  if (lid < 16u) {
    var acc = 0u;
    for (var k = lid * 16u; k < lid * 16u + 16u; k++) { let x = af_s1[k]; af_s1[k] = acc; acc += x; }
    af_s1[256u + lid] = acc;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var acc = 0u;
    for (var k = 256u; k < 272u; k++) { let x = af_s1[k]; af_s1[k] = acc; acc += x; }
    af_s1[272] = acc;
  }
  workgroupBarrier();
  let ex = af_s1[lid] + af_s1[256u + lid / 16u];
  af_tot1 = af_s1[272];
  workgroupBarrier();
  return ex;
}

fn af_scan2(v: vec2<u32>, lid: u32) -> vec2<u32> {
  af_s2[lid] = v;
  workgroupBarrier();
  if (lid < 16u) {
    var acc = vec2<u32>(0u, 0u);
    for (var k = lid * 16u; k < lid * 16u + 16u; k++) { let x = af_s2[k]; af_s2[k] = acc; acc += x; }
    af_s2[256u + lid] = acc;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var acc = vec2<u32>(0u, 0u);
    for (var k = 256u; k < 272u; k++) { let x = af_s2[k]; af_s2[k] = acc; acc += x; }
    af_s2[272] = acc;
  }
  workgroupBarrier();
  let ex = af_s2[lid] + af_s2[256u + lid / 16u];
  af_tot2 = af_s2[272];
  workgroupBarrier();
  return ex;
}
"#;

const SCAN_PASSES: &str = r#"
@group(0) @binding(0) var<storage, read_write> st_part: array<u32>;
@group(0) @binding(1) var<storage, read_write> st_meta: array<u32>;

@compute @workgroup_size(256)
fn af_scan_top(@builtin(local_invocation_index) lid: u32) {
  var carry = 0u;
  for (var c = 0u; c < TOPLEN; c += 2048u) {
    var v: array<u32, 8>;
    var sum = 0u;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      v[i] = 0u;
      if (e < TOPLEN) { v[i] = st_part[e]; }
      sum += v[i];
    }
    var ex = af_scan1(sum, lid) + carry;
    for (var i = 0u; i < 8u; i++) {
      let e = c + lid * 8u + i;
      if (e < TOPLEN) { st_part[e] = ex; }
      ex += v[i];
    }
    carry += af_tot1;
  }
  // The next digit's shift: the scatter of this one reads it less 8.
  if (lid == 0u) { st_meta[0] = st_meta[0] + 8u; }
}
"#;

const SCAN_BLOCKS: &str = r#"
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
@group(0) @binding(0) var<storage, read> h_src: array<u32>;
@group(0) @binding(1) var<storage, read_write> h_hist: array<u32>;
@group(0) @binding(2) var<storage, read> h_meta: array<u32>;

@compute @workgroup_size(256)
fn af_hist(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sh = h_meta[0];
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let t = tile % TPR;
    let base = t * TILE;
    let cnt = min(TILE, DIM - base);
    atomicStore(&af_h[lid], 0u);
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) { atomicAdd(&af_h[af_digit(h_src[row * DIM + base + li], sh)], 1u); }
    }
    workgroupBarrier();
    h_hist[(row * 256u + lid) * TPR + t] = atomicLoad(&af_h[lid]);
    workgroupBarrier();
  }
}

@group(0) @binding(0) var<storage, read_write> i_meta: array<u32>;

@compute @workgroup_size(256)
fn af_init(@builtin(local_invocation_index) lid: u32) {
  if (lid == 0u) { i_meta[0] = 0u; }
}
"#;

const SCATTER: &str = r#"
@BINDINGS@
@compute @workgroup_size(256)
fn af_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sh0 = s_meta[0] - 8u;
  for (var tile = wid.x; tile < NTILES; tile += @GT@u) {
    let row = tile / TPR;
    let t = tile % TPR;
    let base = t * TILE;
    let cnt = min(TILE, DIM - base);
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        af_lk[li] = s_src[row * DIM + base + li];
        @LXLOAD@
      }
    }
    workgroupBarrier();
    // The tile sorted by the digit in workgroup memory: four stable splits of two bits, each
    // thread's items unrolled into scalars (bin 4: past the tile's end).
    for (var s2 = 0u; s2 < 8u; s2 += 2u) {
      let sh = sh0 + s2;
      let first = lid * ITEMS;
      var c0 = 0u;
      var c1 = 0u;
      var c2 = 0u;
      var c3 = 0u;
@SPLIT_COUNT@
      let ex = af_scan2(vec2<u32>(c0 | (c1 << 16u), c2 | (c3 << 16u)), lid);
      let tot = af_tot2;
      let t0 = tot.x & 0xffffu;
      let t1 = tot.x >> 16u;
      let t2 = tot.y & 0xffffu;
      var p0 = ex.x & 0xffffu;
      var p1 = t0 + (ex.x >> 16u);
      var p2 = t0 + t1 + (ex.y & 0xffffu);
      var p3 = t0 + t1 + t2 + (ex.y >> 16u);
@SPLIT_MOVE@
      workgroupBarrier();
    }
    // Where each digit's run starts in the tile, then its global position less that start.
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let d = af_digit(af_lk[li], sh0);
        if (li == 0u || af_digit(af_lk[li - 1u], sh0) != d) { af_off[d] = li; }
      }
    }
    workgroupBarrier();
    af_off[lid] = s_hist[(row * 256u + lid) * TPR + t] - af_off[lid];
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
      let li = i * 256u + lid;
      if (li < cnt) {
        let v = af_lk[li];
        let pos = af_off[af_digit(v, sh0)] + li;
        @KSTORE@
        @STORE@
      }
    }
    workgroupBarrier();
  }
}
"#;

const COPY_IN: &str = r#"
@BINDINGS@
@compute @workgroup_size(256)
fn af_in(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x == 0u) { in_meta[0] = 0u; }
  for (var e = gid.x; e < ROWS * DIM; e += @GE@u * 256u) {
    let row = e / DIM;
    let j = e % DIM;
    in_keys[e] = in_src[@AT@];
  }
}
"#;

const COPY_OUT: &str = r#"
@group(0) @binding(0) var<storage, read> o_src: array<u32>;
@group(0) @binding(1) var<storage, read_write> o_out: array<u32>;

@compute @workgroup_size(256)
fn af_out(@builtin(global_invocation_id) gid: vec3<u32>) {
  for (var e = gid.x; e < ROWS * DIM; e += @GE@u * 256u) {
    o_out[af_at(e / DIM, e % DIM)] = o_src[e];
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

/// The counting half of a split, unrolled over a thread's `items` (with positions: `argsort`):
/// each item's element (`rk<i>`), position (`rx<i>`) and bin (`bn<i>`, 4 past the tile's end).
fn split_count(items: usize, argsort: bool) -> String {
    (0..items)
        .map(|i| {
            let rx = if argsort {
                format!("\n      var rx{i} = 0u;")
            } else {
                String::new()
            };
            let rx_load = if argsort {
                format!(" rx{i} = af_lx[first + {i}u];")
            } else {
                String::new()
            };
            format!(
                "      var rk{i} = 0u;{rx}
      var bn{i} = 4u;
      if (first + {i}u < cnt) {{ rk{i} = af_lk[first + {i}u];{rx_load} bn{i} = (af_key(rk{i}) >> sh) & 3u; }}
      c0 += select(0u, 1u, bn{i} == 0u);
      c1 += select(0u, 1u, bn{i} == 1u);
      c2 += select(0u, 1u, bn{i} == 2u);
      c3 += select(0u, 1u, bn{i} == 3u);
"
            )
        })
        .collect()
}

/// The moving half of a split: each item to its bin's next position.
fn split_move(items: usize, argsort: bool) -> String {
    (0..items)
        .map(|i| {
            let rx = if argsort {
                format!(" af_lx[pos] = rx{i};")
            } else {
                String::new()
            };
            format!(
                "      if (bn{i} < 4u) {{
        let pos = select(select(select(p3, p2, bn{i} == 2u), p1, bn{i} == 1u), p0, bn{i} == 0u);
        p0 += select(0u, 1u, bn{i} == 0u);
        p1 += select(0u, 1u, bn{i} == 1u);
        p2 += select(0u, 1u, bn{i} == 2u);
        p3 += select(0u, 1u, bn{i} == 3u);
        af_lk[pos] = rk{i};{rx}
      }}
"
            )
        })
        .collect()
}

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
    // Tiles of 1024 (4 per thread): in 16 KiB of workgroup memory an argsort's elements and
    // positions fit; a sort's tiles of 2048 measured slower through Vulkan on an H200.
    let tile = 1024;
    let x = Radix::of(r, tile);
    let (gt, gb) = (groups(x.ntiles), groups(x.nb));
    let ge = groups(r.numel().div_ceil(LOCAL as usize));
    source.push_str(&format!(
        "const TILE: u32 = {tile}u;\nconst ITEMS: u32 = {}u;\nconst TPR: u32 = {}u;\n\
         const NTILES: u32 = {}u;\nconst HLEN: u32 = {}u;\nconst NB: u32 = {}u;\nconst TOPLEN: u32 = {}u;\n\
         var<workgroup> af_h: array<atomic<u32>, 256>;\nvar<workgroup> af_lk: array<u32, TILE>;\n\
         var<workgroup> af_off: array<u32, 256>;\n",
        tile / LOCAL as usize,
        x.tpr,
        x.ntiles,
        x.hlen,
        x.nb,
        x.top_len()
    ));
    if argsort {
        source.push_str("var<workgroup> af_lx: array<u32, TILE>;\n");
    }
    source.push_str(SCANS);
    source.push_str(SCAN_PASSES);
    if !x.one_scan() {
        source.push_str(&fill(SCAN_BLOCKS, &[("GB", gb.to_string())]));
    }
    source.push_str(&fill(HIST, &[("GT", gt.to_string())]));
    let on = |s: &str| {
        if argsort {
            s.to_string()
        } else {
            String::new()
        }
    };
    let bindings = |prefix: &str, names: &[(&str, &str, bool)]| -> String {
        names
            .iter()
            .filter(|(_, _, on)| *on)
            .enumerate()
            .map(|(i, (name, access, _))| {
                format!(
                    "@group(0) @binding({i}) var<storage, {access}> {prefix}_{name}: array<u32>;\n"
                )
            })
            .collect()
    };
    source.push_str(&fill(
        SCATTER,
        &[
            (
                "BINDINGS",
                bindings(
                    "s",
                    &[
                        ("src", "read", true),
                        ("sidx", "read", argsort),
                        ("hist", "read", true),
                        ("meta", "read", true),
                        ("dst", "read_write", true),
                        ("didx", "read_write", argsort),
                    ],
                ),
            ),
            ("GT", gt.to_string()),
            (
                "LXLOAD",
                on(
                    "if (sh0 == 0u) { af_lx[li] = base + li; } else { af_lx[li] = s_sidx[row * DIM + base + li]; }",
                ),
            ),
            (
                "KSTORE",
                if argsort {
                    "if (sh0 != 24u) { s_dst[pos] = v; }".into()
                } else {
                    "s_dst[pos] = v;".to_string()
                },
            ),
            ("SPLIT_COUNT", split_count(tile / LOCAL as usize, argsort)),
            ("SPLIT_MOVE", split_move(tile / LOCAL as usize, argsort)),
            ("STORE", on("s_didx[pos] = af_lx[li];")),
        ],
    ));
    let plan = radix_passes(r, &x, argsort, 4, groups);
    if plan.copy_in {
        source.push_str(&fill(
            COPY_IN,
            &[
                (
                    "BINDINGS",
                    bindings(
                        "in",
                        &[
                            ("src", "read", true),
                            ("keys", "read_write", true),
                            ("meta", "read_write", true),
                        ],
                    ),
                ),
                ("GE", ge.to_string()),
                ("AT", at("row", "j")),
            ],
        ));
    }
    if plan.copy_out {
        source.push_str(&fill(COPY_OUT, &[("GE", ge.to_string())]));
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

/// take_along_axis: data, indices (i32 or u32); fault word in scratch 0.
pub fn render_take(call: &IntrinsicCall, t: Take) -> Result<GpuPlan, Unsupported> {
    let len: usize = call.out_shape.iter().product();
    if len == 0 {
        return Err(Unsupported(
            "an empty take_along_axis runs on the CPU".into(),
        ));
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
        kept: None,
        range: None,
    })
}
