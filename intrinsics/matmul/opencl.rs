//! The matrix product in OpenCL C (f32, f64 where the device computes it, i32 and u32 as
//! wrapping `uint` arithmetic): pass `af_matmul`, one work-group of 256 threads per output tile of
//! one matrix of the batch ([`Tile`]: 128 x 128 in steps of 8 for large f32 products, 64 x 64 in
//! steps of 16 otherwise), a grid-stride loop over (range of `k`, batch item, tile). Each step
//! loads a `bk`-slice of `a` and of `b` from global memory into registers (4 elements per thread
//! and operand, one 4-wide load when the operand's contiguous extent is a multiple of 4 and the
//! tile lies inside the matrix; guarded scalar loads at the edges), while the threads multiply
//! the previous slices from local memory (`a` k-major, double buffered: one barrier per step).
//! Thread `(tx, ty)` accumulates rows `64 rb + 4 ty + i` and columns `64 cb + 4 tx + j` of the
//! tile with `fma`, summing `k` in order. Operands are read through the call's strides, so a
//! transposed operand is read in place and a broadcast batch axis has stride 0 (never copied).
//! Buffers: `a`, `b` (inputs 0 and 1), `c` (output 0). With few tiles and a long `k`
//! ([`super::matmul_split`]) pass `af_matmul` writes each range's partial products to scratch
//! and pass `af_matmul_sum` adds the ranges in order.

use super::{Geometry, Tile};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::codegen::opencl::{ENTRY_ATTR, LOCAL, groups_for, prelude};
use crate::proggen::sequence::IntrinsicCall;

/// Local-memory padding of each k-row of a staged slice (elements; a multiple of 4 keeps the
/// 4-wide reads aligned and puts the two halves of a warp's k-major stores in different banks).
const PAD: usize = 4;

/// The plan for `call` (a, then b).
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let el = match call.dtype {
        DType::F32 => "float",
        DType::F64 => "double",
        // Wrapping arithmetic: signed overflow is undefined in OpenCL C, so i32 computes as uint
        // (the same bits).
        DType::I32 | DType::U32 => "uint",
        d => return Err(Unsupported(format!("matmul of {d} matrices"))),
    };
    let g = Geometry::of_call(call);
    let tile = Tile::choose(&g, call.dtype.size());
    let (parts, split) = super::gpu_split(&g);
    let items = (tile.tiles(&g) * g.batches() * parts) as u64;
    let mut source = prelude(t);
    source.push_str(&kernel(el, call.dtype.is_float(), &g, tile, split));
    let Some((parts, _)) = split else {
        return Ok(GpuPlan::single_pass(
            source,
            "af_matmul",
            2,
            false,
            groups_for(items, 1),
            LOCAL,
        ));
    };
    let mn = (g.batches() * g.m * g.n) as u64;
    source.push_str(&format!(
        r#"
{ENTRY_ATTR}
void af_matmul_sum(__global const {el} *part, __global {el} *c) {{
  for (ulong e = get_global_id(0); e < {mn}UL; e += get_global_size(0)) {{
    {el} t = part[e];
    for (ulong s = 1; s < {parts}UL; s++) t += part[s * {mn}UL + e];
    c[e] = t;
  }}
}}
"#
    ));
    let bytes = parts as u64 * mn * call.dtype.size() as u64;
    Ok(GpuPlan {
        source,
        scratch: vec![bytes],
        passes: vec![
            Pass {
                entry: "af_matmul".into(),
                buffers: vec![BufArg::Input(0), BufArg::Input(1), BufArg::Scratch(0)],
                params: false,
                groups: groups_for(items, 1),
                local: LOCAL,
            },
            Pass {
                entry: "af_matmul_sum".into(),
                buffers: vec![BufArg::Scratch(0), BufArg::Output(0)],
                params: false,
                groups: groups_for(mn, LOCAL as u64),
                local: LOCAL,
            },
        ],
        fault: None,
        immediate_words: None,
        kept: None,
        range: None,
    })
}

/// One operand's staging: the global loads of a step into registers `r` (from step `kx`) and
/// the stores of those registers into local buffer `buf`.
struct Staging {
    load: String,
    store: String,
}

/// The staging code of operand `x` (`a` or `b`) whose tile extent is `ext` (rows of `a`,
/// columns of `b`), starting at `base` (`row0` / `col0`) and bounded by `bound` (`m` / `n`):
/// element `(e, p)` (tile row or column `e`, inner index `p`) lies at `off + e * es + p * ps`.
/// `vec`: the contiguous extent allows 4-wide loads.
#[allow(clippy::too_many_arguments)]
fn staging(
    el: &str,
    x: &str,
    off: &str,
    base: &str,
    bound: usize,
    ext: usize,
    bk: usize,
    es: usize,
    ps: usize,
    vec: bool,
) -> Staging {
    let loc = if x == "a" { "As" } else { "Bs" };
    let r = format!("r{x}");
    let fast = if vec { "fast" } else { "0" };
    if ps == 1 {
        // Contiguous along k: each thread loads 4 consecutive k of one row/column.
        let q = bk / 4;
        let load = format!(
            "{{ const uint el_ = lid / {q}u, kq_ = (lid % {q}u) * 4u;
        const ulong e_ = {base} + el_, p_ = kx + kq_;
        if ({fast}) {{ const {el}4 v_ = vload4(0, {x} + {off} + e_ * {es}UL + p_); {r}[0] = v_.s0; {r}[1] = v_.s1; {r}[2] = v_.s2; {r}[3] = v_.s3; }}
        else for (uint q = 0u; q < 4u; q++) {r}[q] = (e_ < {bound}UL && p_ + q < ke) ? {x}[{off} + e_ * {es}UL + p_ + q] : ({el})0; }}"
        );
        let store = format!(
            "{{ const uint el_ = lid / {q}u, kq_ = (lid % {q}u) * 4u;
        for (uint q = 0u; q < 4u; q++) {loc}[buf][kq_ + q][el_] = {r}[q]; }}"
        );
        Staging { load, store }
    } else {
        // Contiguous along the tile's extent (es == 1): 4 consecutive rows/columns at one k.
        let q = ext / 4;
        let load = format!(
            "{{ const uint c_ = (lid % {q}u) * 4u, kk_ = lid / {q}u;
        const ulong e_ = {base} + c_, p_ = kx + kk_;
        if ({fast}) {{ const {el}4 v_ = vload4(0, {x} + {off} + p_ * {ps}UL + e_); {r}[0] = v_.s0; {r}[1] = v_.s1; {r}[2] = v_.s2; {r}[3] = v_.s3; }}
        else for (uint q = 0u; q < 4u; q++) {r}[q] = (e_ + q < {bound}UL && p_ < ke) ? {x}[{off} + p_ * {ps}UL + e_ + q] : ({el})0; }}"
        );
        let store = format!(
            "{{ const uint c_ = (lid % {q}u) * 4u, kk_ = lid / {q}u;
        vstore4(({el}4)({r}[0], {r}[1], {r}[2], {r}[3]), 0, &{loc}[buf][kk_][c_]); }}"
        );
        Staging { load, store }
    }
}

/// The kernel for element type `el` (its OpenCL C name; `float`: products with `fma`) and the
/// call's geometry; with `Some((parts, chunk))`, item `i` computes its tile over range
/// `i / (tiles * batches)` of `k` into partial buffer `c` (one output's worth per range).
fn kernel(
    el: &str,
    float: bool,
    g: &Geometry,
    tile: Tile,
    split: Option<(usize, usize)>,
) -> String {
    let Tile { bm, bn, bk } = tile;
    assert!(bm * bk == 4 * LOCAL as usize && bn * bk == 4 * LOCAL as usize);
    let (m, n, k) = (g.m, g.n, g.k);
    let tiles_n = n.div_ceil(bn).max(1);
    let tiles = tile.tiles(g).max(1);
    let batches = g.batches().max(1);
    let (parts, chunk) = split.unwrap_or((1, k.max(1)));
    let items = tile.tiles(g) * g.batches() * parts;
    let total = g.batches() * m * n;
    let (tm, tn) = (bm / 16, bn / 16);
    // Batch offsets of a and b from the batch item `bt`.
    let mut offsets = String::new();
    for d in (0..g.batch.len()).rev() {
        let (dim, sa, sb) = (g.batch[d], g.a_batch[d], g.b_batch[d]);
        offsets.push_str(&format!(
            "{{ const ulong i_ = t_ % {dim}UL; t_ /= {dim}UL; oa += i_ * {sa}UL; ob += i_ * {sb}UL; }}\n      "
        ));
    }
    // 4-wide global loads where the operand's contiguous extent is a multiple of 4.
    let (a_contig, b_contig) = (
        if g.a_cs == 1 { k } else { m },
        if g.b_rs == 1 { k } else { n },
    );
    let sa = staging(
        el,
        "a",
        "oa",
        "row0",
        m,
        bm,
        bk,
        if g.a_cs == 1 { g.a_rs } else { 1 },
        if g.a_cs == 1 { 1 } else { g.a_cs },
        a_contig % 4 == 0,
    );
    let sb = staging(
        el,
        "b",
        "ob",
        "col0",
        n,
        bn,
        bk,
        if g.b_rs == 1 { g.b_cs } else { 1 },
        if g.b_rs == 1 { 1 } else { g.b_rs },
        b_contig % 4 == 0,
    );
    let madd = if float {
        "acc[i][j] = fma(av[i], bv[j], acc[i][j]);"
    } else {
        "acc[i][j] += av[i] * bv[j];"
    };
    let vec_c = (n % 4 == 0) as u8;
    let (la, lb) = (bm + PAD, bn + PAD);
    let (rbs, cbs) = (tm / 4, tn / 4);
    format!(
        r#"
{ENTRY_ATTR}
void af_matmul(__global const {el} *a, __global const {el} *b, __global {el} *c) {{
  __local {el} As[2][{bk}][{la}];
  __local {el} Bs[2][{bk}][{lb}];
  const uint lid = get_local_id(0), tx = lid % 16u, ty = lid / 16u;
  for (ulong item = get_group_id(0); item < {items}UL; item += get_num_groups(0)) {{
    const ulong tile = item % {tiles}UL, bt = (item / {tiles}UL) % {batches}UL;
    const ulong part = item / {tb}UL;
    ulong oa = 0, ob = 0;
    {{ ulong t_ = bt;
      {offsets}}}
    const ulong kb = part * {chunk}UL, ke = min(kb + {chunk}UL, (ulong){k}UL);
    const ulong row0 = (tile / {tiles_n}UL) * {bm}UL, col0 = (tile % {tiles_n}UL) * {bn}UL;
    const bool inside = row0 + {bm}UL <= {m}UL && col0 + {bn}UL <= {n}UL;
    {el} acc[{tm}][{tn}];
    #pragma unroll
    for (uint i = 0u; i < {tm}u; i++) {{
      #pragma unroll
      for (uint j = 0u; j < {tn}u; j++) acc[i][j] = ({el})0;
    }}
    {el} ra[4], rb[4];
    uint buf = 0u;
    ulong kx = kb;
    if (kx < ke) {{
      const bool fast = inside && kx + {bk}UL <= ke;
      {la_load}
      {lb_load}
      {la_store}
      {lb_store}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong k0 = kb; k0 < ke; k0 += {bk}UL) {{
      const bool more = k0 + {bk}UL < ke;
      if (more) {{
        kx = k0 + {bk}UL;
        const bool fast = inside && kx + {bk}UL <= ke;
        {la_load}
        {lb_load}
      }}
      #pragma unroll
      for (uint kk = 0u; kk < {bk}u; kk++) {{
        {el} av[{tm}], bv[{tn}];
        #pragma unroll
        for (uint rb_ = 0u; rb_ < {rbs}u; rb_++) {{
          const {el}4 v = vload4(0, &As[buf][kk][rb_ * 64u + ty * 4u]);
          av[rb_ * 4u] = v.s0; av[rb_ * 4u + 1u] = v.s1; av[rb_ * 4u + 2u] = v.s2; av[rb_ * 4u + 3u] = v.s3;
        }}
        #pragma unroll
        for (uint cb_ = 0u; cb_ < {cbs}u; cb_++) {{
          const {el}4 v = vload4(0, &Bs[buf][kk][cb_ * 64u + tx * 4u]);
          bv[cb_ * 4u] = v.s0; bv[cb_ * 4u + 1u] = v.s1; bv[cb_ * 4u + 2u] = v.s2; bv[cb_ * 4u + 3u] = v.s3;
        }}
        #pragma unroll
        for (uint i = 0u; i < {tm}u; i++) {{
          #pragma unroll
          for (uint j = 0u; j < {tn}u; j++) {{ {madd} }}
        }}
      }}
      if (more) {{
        buf ^= 1u;
        {la_store}
        {lb_store}
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    __global {el} *cm = c + part * {total}UL + bt * {mn}UL;
    #pragma unroll
    for (uint i = 0u; i < {tm}u; i++) {{
      const ulong r = row0 + (i / 4u) * 64u + ty * 4u + i % 4u;
      #pragma unroll
      for (uint cb_ = 0u; cb_ < {cbs}u; cb_++) {{
        const ulong col = col0 + cb_ * 64u + tx * 4u;
        if ({vec_c} && inside) {{
          vstore4(({el}4)(acc[i][cb_ * 4u], acc[i][cb_ * 4u + 1u], acc[i][cb_ * 4u + 2u], acc[i][cb_ * 4u + 3u]), 0, cm + r * {n}UL + col);
        }} else {{
          #pragma unroll
          for (uint j = 0u; j < 4u; j++) {{
            if (r < {m}UL && col + j < {n}UL) cm[r * {n}UL + col + j] = acc[i][cb_ * 4u + j];
          }}
        }}
      }}
    }}
  }}
}}
"#,
        tb = tiles * batches,
        mn = m * n,
        la_load = sa.load,
        lb_load = sb.load,
        la_store = sa.store,
        lb_store = sb.store,
    )
}
