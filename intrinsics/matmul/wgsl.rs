//! The matrix product in WGSL (f32, i32 and u32: WGSL integers wrap): pass `af_matmul`, one
//! work-group of 256 threads per output tile of one matrix of the batch ([`Tile`]: 128 x 128 in
//! steps of 8 for large products, 64 x 64 in steps of 16 otherwise), a grid-stride loop over
//! (range of `k`, batch item, tile). Each step loads a `bk`-slice of `a` and of `b` into
//! registers (4 elements per thread and operand; unguarded inside the matrix, guarded at its
//! edges) while the threads multiply the previous slices from workgroup memory (`vec4` rows,
//! `a` k-major, double buffered: one barrier per step; 16 KiB, WebGPU's default limit). Thread
//! `(tx, ty)` accumulates rows `64 rb + 4 ty + i` and columns `64 cb + 4 tx + j` of the tile in
//! named registers (the code is unrolled as it is rendered), summing `k` in order. Operands are
//! read through the call's strides (a transposed operand in place, a broadcast batch axis with
//! stride 0). With few tiles and a long `k` ([`super::matmul_split`]) each item writes one range's
//! partial products to a scratch buffer and pass `af_matmul_sum` adds the ranges in order.

use super::{Geometry, Tile};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Unsupported};
use crate::proggen::codegen::wgsl::{LOCAL, groups_for};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    let el = match call.dtype {
        DType::F32 => "f32",
        DType::I32 => "i32",
        DType::U32 => "u32",
        d => {
            return Err(Unsupported(format!(
                "wgsl matmul takes f32, i32 or u32 matrices, not {d}"
            )));
        }
    };
    let g = Geometry::of_call(call);
    let tile = Tile::choose(&g, call.dtype.size());
    let (parts, split) = super::gpu_split(&g);
    let items = tile.tiles(&g) * g.batches() * parts;
    let groups = groups_for(items * LOCAL as usize);
    let mut source = kernel(el, &g, tile, split, groups.max(1));
    if split.is_none() {
        return Ok(GpuPlan::single_pass(
            source,
            "af_matmul",
            2,
            false,
            groups,
            LOCAL,
        ));
    }
    let mn = g.batches() * g.m * g.n;
    let sum_groups = groups_for(mn);
    source.push_str(&format!(
        "
@group(0) @binding(0) var<storage, read> spart: array<{el}>;
@group(0) @binding(1) var<storage, read_write> sc: array<{el}>;

@compute @workgroup_size({LOCAL})
fn af_matmul_sum(@builtin(global_invocation_id) gid: vec3<u32>) {{
  for (var e = gid.x; e < {mn}u; e += {stride}u) {{
    var t = spart[e];
    for (var s = 1u; s < {parts}u; s++) {{ t += spart[s * {mn}u + e]; }}
    sc[e] = t;
  }}
}}
",
        stride = sum_groups.max(1) * LOCAL,
    ));
    Ok(GpuPlan {
        source,
        scratch: vec![(parts * mn * 4) as u64],
        passes: vec![
            Pass {
                entry: "af_matmul".into(),
                buffers: vec![BufArg::Input(0), BufArg::Input(1), BufArg::Scratch(0)],
                params: false,
                groups,
                local: LOCAL,
            },
            Pass {
                entry: "af_matmul_sum".into(),
                buffers: vec![BufArg::Scratch(0), BufArg::Output(0)],
                params: false,
                groups: sum_groups,
                local: LOCAL,
            },
        ],
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    })
}

/// One operand's staging code: global loads of a step (from `kx`) into `r{x}0..3`, and stores
/// of those registers into workgroup buffer `buf` (`vec4` rows of `ext` elements, k-major).
/// Element `(e, p)` (tile row/column `e`, inner index `p`) lies at `off + e * es + p * ps`.
#[allow(clippy::too_many_arguments)]
fn staging(
    x: &str,
    off: &str,
    base: &str,
    bound: usize,
    ext: usize,
    bk: usize,
    es: usize,
    ps: usize,
) -> (String, String) {
    let loc = if x == "a" { "As" } else { "Bs" };
    let row = ext / 4; // vec4s per k-row
    let mut load = String::new();
    let store = if ps == 1 {
        let q = bk / 4;
        let _ = write!(
            load,
            "{{ let el_ = lid / {q}u; let p_ = kx + (lid % {q}u) * 4u; let e_ = {base} + el_;
        let i_ = {off} + e_ * {es}u + p_;
        if (fast) {{ r{x}0 = {x}[i_]; r{x}1 = {x}[i_ + 1u]; r{x}2 = {x}[i_ + 2u]; r{x}3 = {x}[i_ + 3u]; }}
        else {{
          r{x}0 = {x}z; r{x}1 = {x}z; r{x}2 = {x}z; r{x}3 = {x}z;
          if (e_ < {bound}u) {{
            if (p_ < ke) {{ r{x}0 = {x}[i_]; }}
            if (p_ + 1u < ke) {{ r{x}1 = {x}[i_ + 1u]; }}
            if (p_ + 2u < ke) {{ r{x}2 = {x}[i_ + 2u]; }}
            if (p_ + 3u < ke) {{ r{x}3 = {x}[i_ + 3u]; }}
          }}
        }} }}"
        );
        format!(
            "{{ let el_ = lid / {q}u; let kq_ = (lid % {q}u) * 4u;
        let b_ = buf * {bk}u * {row}u + el_ / 4u; let c_ = el_ % 4u;
        {loc}[b_ + kq_ * {row}u][c_] = r{x}0; {loc}[b_ + (kq_ + 1u) * {row}u][c_] = r{x}1;
        {loc}[b_ + (kq_ + 2u) * {row}u][c_] = r{x}2; {loc}[b_ + (kq_ + 3u) * {row}u][c_] = r{x}3; }}"
        )
    } else {
        let _ = write!(
            load,
            "{{ let c_ = (lid % {row}u) * 4u; let p_ = kx + lid / {row}u; let e_ = {base} + c_;
        let i_ = {off} + p_ * {ps}u + e_;
        if (fast) {{ r{x}0 = {x}[i_]; r{x}1 = {x}[i_ + 1u]; r{x}2 = {x}[i_ + 2u]; r{x}3 = {x}[i_ + 3u]; }}
        else {{
          r{x}0 = {x}z; r{x}1 = {x}z; r{x}2 = {x}z; r{x}3 = {x}z;
          if (p_ < ke) {{
            if (e_ < {bound}u) {{ r{x}0 = {x}[i_]; }}
            if (e_ + 1u < {bound}u) {{ r{x}1 = {x}[i_ + 1u]; }}
            if (e_ + 2u < {bound}u) {{ r{x}2 = {x}[i_ + 2u]; }}
            if (e_ + 3u < {bound}u) {{ r{x}3 = {x}[i_ + 3u]; }}
          }}
        }} }}"
        );
        format!(
            "{{ {loc}[buf * {bk}u * {row}u + (lid / {row}u) * {row}u + lid % {row}u] = vec4<{{el}}>(r{x}0, r{x}1, r{x}2, r{x}3); }}"
        )
    };
    (load, store)
}

/// The kernel for element type `el` and the call's geometry; with `Some((parts, chunk))`, item
/// `i` computes its tile over range `i / (tiles * batches)` of `k` into partial buffer `c`.
fn kernel(
    el: &str,
    g: &Geometry,
    tile: Tile,
    split: Option<(usize, usize)>,
    groups: u32,
) -> String {
    let Tile { bm, bn, bk } = tile;
    assert!(bm * bk == 4 * LOCAL as usize && bn * bk == 4 * LOCAL as usize);
    let (m, n, k) = (g.m, g.n, g.k);
    let tiles_n = n.div_ceil(bn).max(1);
    let tiles = tile.tiles(g).max(1);
    let batches = g.batches().max(1);
    let (parts, chunk) = split.unwrap_or((1, k.max(1)));
    let items = tile.tiles(g) * g.batches() * parts;
    let (tm, tn) = (bm / 16, bn / 16);
    let mut offsets = String::new();
    for d in (0..g.batch.len()).rev() {
        let (dim, sa, sb) = (g.batch[d], g.a_batch[d], g.b_batch[d]);
        let _ = write!(
            offsets,
            "{{ let i_ = t_ % {dim}u; t_ = t_ / {dim}u; oa += i_ * {sa}u; ob += i_ * {sb}u; }}\n    "
        );
    }
    let (a_load, a_store) = staging(
        "a",
        "oa",
        "row0",
        m,
        bm,
        bk,
        if g.a_cs == 1 { g.a_rs } else { 1 },
        if g.a_cs == 1 { 1 } else { g.a_cs },
    );
    let (b_load, b_store) = staging(
        "b",
        "ob",
        "col0",
        n,
        bn,
        bk,
        if g.b_rs == 1 { g.b_cs } else { 1 },
        if g.b_rs == 1 { 1 } else { g.b_rs },
    );
    let (a_store, b_store) = (a_store.replace("{el}", el), b_store.replace("{el}", el));
    let zero = if el == "f32" { "0.0" } else { "0" };
    // Accumulators, the inner step's products and the epilogue, unrolled.
    let mut decl = String::new();
    let mut step = String::new();
    let mut epi = String::new();
    for i in 0..tm {
        for j in 0..tn {
            let _ = write!(decl, "var c{i}_{j}: {el} = {el}({zero}); ");
        }
        decl.push_str("\n    ");
    }
    for rb in 0..tm / 4 {
        let _ = writeln!(
            step,
            "        let av{rb} = As[ab + kk * {ra}u + {rb}u * 16u + ty];",
            ra = bm / 4
        );
    }
    for cb in 0..tn / 4 {
        let _ = writeln!(
            step,
            "        let bv{cb} = Bs[bb + kk * {rbn}u + {cb}u * 16u + tx];",
            rbn = bn / 4
        );
    }
    for i in 0..tm {
        step.push_str("        ");
        for j in 0..tn {
            let _ = write!(
                step,
                "c{i}_{j} += av{}[{}] * bv{}[{}]; ",
                i / 4,
                i % 4,
                j / 4,
                j % 4
            );
        }
        step.push('\n');
    }
    for i in 0..tm {
        let _ = writeln!(
            epi,
            "    {{ let r = row0 + {}u + ty * 4u;",
            (i / 4) * 64 + i % 4
        );
        for j in 0..tn {
            let _ = writeln!(
                epi,
                "      {{ let col = col0 + {}u + tx * 4u; if (r < {m}u && col < {n}u) {{ c[co + r * {n}u + col] = c{i}_{j}; }} }}",
                (j / 4) * 64 + j % 4
            );
        }
        epi.push_str("    }\n");
    }
    let (va, vb) = (2 * bk * bm / 4, 2 * bk * bn / 4);
    format!(
        "@group(0) @binding(0) var<storage, read> a: array<{el}>;
@group(0) @binding(1) var<storage, read> b: array<{el}>;
@group(0) @binding(2) var<storage, read_write> c: array<{el}>;
var<workgroup> As: array<vec4<{el}>, {va}>;
var<workgroup> Bs: array<vec4<{el}>, {vb}>;

@compute @workgroup_size({LOCAL})
fn af_matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  let tx = lid % 16u;
  let ty = lid / 16u;
  let az = {el}({zero});
  let bz = az;
  for (var item = wid.x; item < {items}u; item += {groups}u) {{
    let tile = item % {tiles}u;
    let bt = (item / {tiles}u) % {batches}u;
    let part = item / {tb}u;
    var oa = 0u;
    var ob = 0u;
    var t_ = bt;
    {offsets}let kb = part * {chunk}u;
    let ke = min(kb + {chunk}u, {k}u);
    let row0 = (tile / {tiles_n}u) * {bm}u;
    let col0 = (tile % {tiles_n}u) * {bn}u;
    let inside = row0 + {bm}u <= {m}u && col0 + {bn}u <= {n}u;
    {decl}var ra0 = az; var ra1 = az; var ra2 = az; var ra3 = az;
    var rb0 = az; var rb1 = az; var rb2 = az; var rb3 = az;
    var buf = 0u;
    var kx = kb;
    if (kx < ke) {{
      let fast = inside && kx + {bk}u <= ke;
      {a_load}
      {b_load}
      {a_store}
      {b_store}
    }}
    workgroupBarrier();
    for (var k0 = kb; k0 < ke; k0 += {bk}u) {{
      let more = k0 + {bk}u < ke;
      if (more) {{
        kx = k0 + {bk}u;
        let fast = inside && kx + {bk}u <= ke;
        {a_load}
        {b_load}
      }}
      let ab = buf * {bk}u * {ra}u;
      let bb = buf * {bk}u * {rbn}u;
      for (var kk = 0u; kk < {bk}u; kk++) {{
{step}      }}
      if (more) {{
        buf ^= 1u;
        {a_store}
        {b_store}
      }}
      workgroupBarrier();
    }}
    let co = part * {total}u + bt * {mn}u;
{epi}  }}
}}
",
        tb = tiles * batches,
        mn = m * n,
        total = g.batches() * m * n,
        ra = bm / 4,
        rbn = bn / 4,
    )
}
