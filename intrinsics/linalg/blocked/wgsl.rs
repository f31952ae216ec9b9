//! The blocked LU's kernels in WGSL, f32 only (see `mod.rs` for the algorithm and the passes).
//! Each entry declares its own bindings (`{entry}_w`, ...), in the order of
//! [`Blocked::buffers`]; indices are `u32` ([`Blocked::of`] keeps larger calls on the CPU).
//! Kernels with barriers read the step word through `workgroupUniformLoad`, so every loop around
//! a barrier is uniform by WGSL's rules; pivot keys are the bits of `|a|` (NaN tested on the bits,
//! never chosen), as the batched kernels.

use super::super::batched::source_index;
use super::{Blocked, Consts, Entry, LOCAL, Routine, TILE, TK, leaf};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan of a blocked `lu`, `solve`, `inv`, `det` or `slogdet` call.
pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    if call.dtype != DType::F32 {
        return Err(Unsupported(format!("blocked LU of {} on WGSL", call.dtype)));
    }
    let b = Blocked::of(call, i32::MAX as u64)?;
    let mut s = String::from(
        "var<workgroup> lu_step: u32;
var<workgroup> lu_bk: array<u32, 256>;
var<workgroup> lu_bi: array<u32, 256>;
var<workgroup> lu_as: array<f32, 1024>;
var<workgroup> lu_bs: array<f32, 1024>;
var<workgroup> lu_pr: array<f32, 8>;
var<workgroup> lu_cr: array<f32, 8>;
",
    );
    for e in b.entries() {
        s.push_str(&entry(&b, e));
    }
    Ok(b.plan(s))
}

/// The step read uniformly, then `k0` and `kw` (as the OpenCL kernels' `panel`).
fn panel(c: &Consts, st: &str, back: bool) -> String {
    let (p, nb) = if back {
        (
            format!("({}u - s)", c.panels + c.back_panels - 1),
            c.back_nb,
        )
    } else {
        ("s".into(), c.nb)
    };
    format!(
        "if (lid == 0u) {{ lu_step = {st}[0]; }}
  let s = workgroupUniformLoad(&lu_step);
  let k0 = {p} * {nb}u;
  let kw = min({nb}u, {n}u - k0);
",
        n = c.n
    )
}

const HEAD: &str = "@builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>";

/// Binding declarations `name: (access, element)` for an entry, numbered in order.
fn binds(list: &[(&str, &str, &str)]) -> String {
    let mut s = String::new();
    for (i, (name, access, el)) in list.iter().enumerate() {
        let _ = writeln!(
            s,
            "@group(0) @binding({i}) var<storage, {access}> {name}: array<{el}>;"
        );
    }
    s
}

fn entry(b: &Blocked, e: Entry) -> String {
    let c = b.consts();
    let (n, ld, ncols, count, mat, r) = (c.n, c.ld, c.ncols, c.count, c.mat, c.r);
    let lu = b.routine == Routine::Lu;
    let stride = format!("(nwg.x * {LOCAL}u)");
    let gid = format!("(wid.x * {LOCAL}u + lid)");
    let mut s = String::new();
    match e {
        Entry::Init => {
            let a_src = source_index(&b.batch, &b.a_batch, "g", "u");
            let mut list = vec![("ini_a", "read", "f32")];
            let rhs = match b.routine {
                Routine::Solve => {
                    list.push(("ini_b", "read", "f32"));
                    format!(
                        "v = ini_b[({}) * {}u + i * {r}u + (j - {n}u)];",
                        source_index(&b.batch, &b.b_batch, "g", "u"),
                        n * r
                    )
                }
                Routine::Inv => format!("v = select(0.0, 1.0, i == j - {n}u);"),
                _ => String::new(),
            };
            list.extend([
                ("ini_w", "read_write", "f32"),
                ("ini_st", "read_write", "u32"),
            ]);
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_init({HEAD}) {{
  for (var e = {gid}; e < {items}u; e += {stride}) {{
    let g = e / {per}u;
    let rem = e % {per}u;
    let i = rem / {ncols}u;
    let j = rem % {ncols}u;
    var v = 0.0;
    if (j < {n}u) {{ v = ini_a[({a_src}) * {nn}u + i * {n}u + j]; }} else {{ {rhs} }}
    ini_w[g * {mat}u + i * {ld}u + j] = v;
  }}
  if ({gid} == 0u) {{ ini_st[0] = 0u; }}
}}
",
                binds = binds(&list),
                items = count * n * ncols,
                per = n * ncols,
                nn = n * n,
            );
        }
        Entry::Panel => {
            let mut list = vec![
                ("pan_w", "read_write", "f32"),
                ("pan_piv", "read_write", "u32"),
                ("pan_st", "read", "u32"),
            ];
            let on_zero = if b.solves() {
                list.push(("pan_fault", "read_write", "atomic<u32>"));
                "if (lid == 0u) { atomicStore(&pan_fault[0], 1u); }"
            } else {
                ""
            };
            let piv_store = if lu {
                format!("pan_w[m + c * {ld}u + {n}u] = f32(p);")
            } else {
                String::new()
            };
            if b.leaf() {
                let names = leaf::Names {
                    w: "pan_w",
                    keys: "lu_bk",
                    idx: "lu_bi",
                    prow: "lu_pr",
                    crow: "lu_cr",
                    on_pivot: format!("pan_piv[g * {n}u + c] = p; {piv_store}"),
                    on_zero,
                };
                let _ = write!(
                    s,
                    "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_panel({HEAD}) {{
  {panel}  for (var g = wid.x; g < {count}u; g += nwg.x) {{
    let m = g * {mat}u;
{body}  }}
}}
",
                    binds = binds(&list),
                    panel = panel(&c, "pan_st", false),
                    body = leaf::body(b, true, &names),
                );
                return s;
            }
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_panel({HEAD}) {{
  {panel}  for (var g = wid.x; g < {count}u; g += nwg.x) {{
    let m = g * {mat}u;
    for (var j = 0u; j < kw; j++) {{
      let c = k0 + j;
      var best = 0u;
      var q = c;
      for (var i = c + lid; i < {n}u; i += {LOCAL}u) {{
        let bits = bitcast<u32>(pan_w[m + i * {ld}u + c]) & 0x7fffffffu;
        let key = select(bits, 0u, bits > 0x7f800000u);
        if (key > best) {{ best = key; q = i; }}
      }}
      lu_bk[lid] = best;
      lu_bi[lid] = q;
      workgroupBarrier();
      for (var h = {half}u; h > 0u; h >>= 1u) {{
        if (lid < h) {{
          let o = lu_bk[lid + h];
          let oi = lu_bi[lid + h];
          if (o > lu_bk[lid] || (o == lu_bk[lid] && oi < lu_bi[lid])) {{ lu_bk[lid] = o; lu_bi[lid] = oi; }}
        }}
        workgroupBarrier();
      }}
      let p = lu_bi[0];
      if (lid == 0u) {{
        pan_piv[g * {n}u + c] = p;
        {piv_store}
      }}
      if (p != c) {{
        for (var cc = k0 + lid; cc < k0 + kw; cc += {LOCAL}u) {{
          let v = pan_w[m + c * {ld}u + cc];
          pan_w[m + c * {ld}u + cc] = pan_w[m + p * {ld}u + cc];
          pan_w[m + p * {ld}u + cc] = v;
        }}
      }}
      storageBarrier();
      workgroupBarrier();
      let d = pan_w[m + c * {ld}u + c];
      if (d == 0.0) {{
        {on_zero}
      }} else {{
        for (var i = c + 1u + lid; i < {n}u; i += {LOCAL}u) {{
          let row = m + i * {ld}u;
          let l = pan_w[row + c] / d;
          pan_w[row + c] = l;
          for (var cc = c + 1u; cc < k0 + kw; cc++) {{
            pan_w[row + cc] = pan_w[row + cc] - l * pan_w[m + c * {ld}u + cc];
          }}
        }}
      }}
      storageBarrier();
      workgroupBarrier();
    }}
  }}
}}
",
                binds = binds(&list),
                panel = panel(&c, "pan_st", false),
                half = LOCAL / 2,
            );
        }
        Entry::Rows => {
            let (cols, first, skip) = if lu {
                (
                    format!("{ncols}u"),
                    "0u",
                    "if (j >= k0 && j < k0 + kw) { continue; }",
                )
            } else {
                (format!("({ncols}u - k0 - kw)"), "k0 + kw", "")
            };
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_rows({HEAD}) {{
  {panel}  let cols = {cols};
  for (var e = {gid}; e < {count}u * cols; e += {stride}) {{
    let g = e / cols;
    let j = {first} + e % cols;
    {skip}
    let m = g * {mat}u;
    for (var c = k0; c < k0 + kw; c++) {{
      let p = row_piv[g * {n}u + c];
      if (p != c) {{
        let v = row_w[m + c * {ld}u + j];
        row_w[m + c * {ld}u + j] = row_w[m + p * {ld}u + j];
        row_w[m + p * {ld}u + j] = v;
      }}
    }}
    if (j >= k0 + kw) {{
      for (var i = 1u; i < kw; i++) {{
        let row = m + (k0 + i) * {ld}u;
        var x = row_w[row + j];
        for (var t = 0u; t < i; t++) {{ x = x - row_w[row + k0 + t] * row_w[m + (k0 + t) * {ld}u + j]; }}
        row_w[row + j] = x;
      }}
    }}
  }}
}}
",
                binds = binds(&[
                    ("row_w", "read_write", "f32"),
                    ("row_piv", "read", "u32"),
                    ("row_st", "read", "u32"),
                ]),
                panel = panel(&c, "row_st", false),
            );
        }
        Entry::Update | Entry::Bupdate => {
            let back = e == Entry::Bupdate;
            let pre = if back { "bup" } else { "upd" };
            let (r0, r1, c0, c1) = if back {
                (
                    "0u".to_string(),
                    "k0".to_string(),
                    format!("{n}u"),
                    format!("{ncols}u"),
                )
            } else {
                (
                    "k0 + kw".into(),
                    format!("{n}u"),
                    "k0 + kw".into(),
                    format!("{ncols}u"),
                )
            };
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn {name}({HEAD}) {{
  let tx = lid % 16u;
  let ty = lid / 16u;
  {panel}  let r0 = {r0};
  let r1 = {r1};
  let c0 = {c0};
  let c1 = {c1};
  if (r1 <= r0 || c1 <= c0) {{ return; }}
  let tr = (r1 - r0 + {tm}u) / {TILE}u;
  let tc = (c1 - c0 + {tm}u) / {TILE}u;
  let items = {count}u * tr * tc;
  for (var item = wid.x; item < items; item += nwg.x) {{
    let g = item / (tr * tc);
    let t = item % (tr * tc);
    let row0 = r0 + (t / tc) * {TILE}u;
    let col0 = c0 + (t % tc) * {TILE}u;
    let m = g * {mat}u;
    var acc: array<array<f32, 4>, 4>;
    for (var i = 0u; i < 4u; i++) {{ for (var jj = 0u; jj < 4u; jj++) {{ acc[i][jj] = 0.0; }} }}
    for (var kk = 0u; kk < kw; kk += {TK}u) {{
      for (var e = lid; e < {TILE}u * {TK}u; e += {LOCAL}u) {{
        let i = e / {TK}u;
        let q = e % {TK}u;
        var av = 0.0;
        if (row0 + i < r1 && kk + q < kw) {{ av = {pre}_w[m + (row0 + i) * {ld}u + k0 + kk + q]; }}
        lu_as[q * {TILE}u + i] = av;
        let q2 = e / {TILE}u;
        let jj = e % {TILE}u;
        var bv = 0.0;
        if (col0 + jj < c1 && kk + q2 < kw) {{ bv = {pre}_w[m + (k0 + kk + q2) * {ld}u + col0 + jj]; }}
        lu_bs[q2 * {TILE}u + jj] = bv;
      }}
      workgroupBarrier();
      for (var q = 0u; q < {TK}u; q++) {{
        var a4: array<f32, 4>;
        var b4: array<f32, 4>;
        for (var i = 0u; i < 4u; i++) {{
          a4[i] = lu_as[q * {TILE}u + ty * 4u + i];
          b4[i] = lu_bs[q * {TILE}u + tx * 4u + i];
        }}
        for (var i = 0u; i < 4u; i++) {{
          for (var jj = 0u; jj < 4u; jj++) {{ acc[i][jj] = fma(a4[i], b4[jj], acc[i][jj]); }}
        }}
      }}
      workgroupBarrier();
    }}
    for (var i = 0u; i < 4u; i++) {{
      let row = row0 + ty * 4u + i;
      if (row < r1) {{
        for (var jj = 0u; jj < 4u; jj++) {{
          let col = col0 + tx * 4u + jj;
          if (col < c1) {{
            let at = m + row * {ld}u + col;
            {pre}_w[at] = {pre}_w[at] - acc[i][jj];
          }}
        }}
      }}
    }}
  }}
}}
",
                binds = binds(&[
                    (&format!("{pre}_w"), "read_write", "f32"),
                    (&format!("{pre}_st"), "read", "u32"),
                ]),
                name = e.name(),
                panel = panel(&c, &format!("{pre}_st"), back),
                tm = TILE - 1,
            );
        }
        Entry::Next => {
            s.push_str(
                "
@group(0) @binding(0) var<storage, read_write> nxt_st: array<u32>;
@compute @workgroup_size(1)
fn af_lu_next() {
  nxt_st[0] = nxt_st[0] + 1u;
}
",
            );
        }
        Entry::Btrsm => {
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_btrsm({HEAD}) {{
  {panel}  for (var e = {gid}; e < {items}u; e += {stride}) {{
    let g = e / {r}u;
    let j = {n}u + e % {r}u;
    let m = g * {mat}u;
    for (var ii = kw; ii > 0u; ii--) {{
      let i = k0 + ii - 1u;
      let row = m + i * {ld}u;
      var x = bt_w[row + j];
      for (var t = ii; t < kw; t++) {{ x = x - bt_w[row + k0 + t] * bt_w[m + (k0 + t) * {ld}u + j]; }}
      bt_w[row + j] = x / bt_w[row + i];
    }}
  }}
}}
",
                binds = binds(&[("bt_w", "read_write", "f32"), ("bt_st", "read", "u32")]),
                panel = panel(&c, "bt_st", true),
                items = count * r,
            );
        }
        Entry::Out => {
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_out({HEAD}) {{
  for (var e = {gid}; e < {items}u; e += {stride}) {{
    let g = e / {nr}u;
    let rem = e % {nr}u;
    let i = rem / {r}u;
    let j = rem % {r}u;
    out_x[e] = out_w[g * {mat}u + i * {ld}u + {n}u + j];
  }}
}}
",
                binds = binds(&[("out_w", "read", "f32"), ("out_x", "read_write", "f32")]),
                items = count * n * r,
                nr = n * r,
            );
        }
        Entry::Det => {
            let store = if b.routine == Routine::Det {
                "var v = ldexp(mant, ex);
    // Infinity from the bits at run time (a constant one is not WGSL).
    if (ex > 128 && mant != 0.0) { v = mant * bitcast<f32>(0x7f800000u | (u32(ex) & 0u)); }
    if (ex < -200) { v = 0.0 * mant; }
    det_out[g] = par * v;"
            } else {
                "var sg = par * sign(mant);
    var lg = log(abs(mant)) + f32(ex) * 0.6931471805599453;
    if (mant == 0.0) { sg = 0.0; lg = bitcast<f32>(0xff800000u | (u32(ex) & 0u)); }
    if ((bitcast<u32>(mant) & 0x7fffffffu) > 0x7f800000u) { sg = mant; lg = mant; }
    det_out[2u * g] = sg;
    det_out[2u * g + 1u] = lg;"
            };
            let _ = write!(
                s,
                "
{binds}
@compute @workgroup_size({LOCAL})
fn af_lu_det({HEAD}) {{
  for (var g = {gid}; g < {count}u; g += {stride}) {{
    let m = g * {mat}u;
    var par = 1.0;
    var mant = 1.0;
    var ex = 0i;
    for (var k = 0u; k < {n}u; k++) {{
      if (det_piv[g * {n}u + k] != k) {{ par = -par; }}
      let f1 = frexp(det_w[m + k * {ld}u + k]);
      let f2 = frexp(mant * f1.fract);
      mant = f2.fract;
      ex += f1.exp + f2.exp;
    }}
    {store}
  }}
}}
",
                binds = binds(&[
                    ("det_w", "read", "f32"),
                    ("det_piv", "read", "u32"),
                    ("det_out", "read_write", "f32"),
                ]),
            );
        }
    }
    s
}
