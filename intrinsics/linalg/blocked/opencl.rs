//! The blocked LU's kernels in OpenCL C (see `mod.rs` for the algorithm and the passes): f32,
//! and f64 where the device computes it. Offsets are `ulong`; the step word is read at each
//! kernel's start. A small prelude of its own, as the batched kernels.

use super::super::batched::source_index;
use super::{Blocked, Consts, Entry, LEAF_NB, LOCAL, Routine, TILE, TK, leaf};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan of a blocked `lu`, `solve`, `inv`, `det` or `slogdet` call.
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let b = Blocked::of(call, u64::MAX)?;
    let (ty, prelude) = match b.dtype {
        DType::F32 => ("float", ""),
        DType::F64 if t.fp64 => ("double", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"),
        d => return Err(Unsupported(format!("blocked LU of {d} on this device"))),
    };
    let mut s = format!("{prelude}#pragma OPENCL FP_CONTRACT OFF\ntypedef {ty} T;\n");
    for e in b.entries() {
        s.push_str(&entry(&b, e));
    }
    Ok(b.plan(s))
}

/// `k0` and `kw` of the current panel from the step word `s` (the factorisation's steps count
/// panels up; the back substitution's steps, after them, count panels down).
fn panel(c: &Consts, back: bool) -> String {
    let (p, nb) = if back {
        (format!("({} - s)", c.panels + c.back_panels - 1), c.back_nb)
    } else {
        ("s".into(), c.nb)
    };
    format!(
        "const uint s = st[0];
  const uint k0 = {p} * {nb}u, kw = min({nb}u, {n}u - k0);
",
        n = c.n
    )
}

const ATTR: &str = "__kernel __attribute__((reqd_work_group_size(256, 1, 1)))";

fn entry(b: &Blocked, e: Entry) -> String {
    let c = b.consts();
    let (n, ld, ncols, count, mat, r, nb) = (c.n, c.ld, c.ncols, c.count, c.mat, c.r, c.nb);
    let lu = b.routine == Routine::Lu;
    let mut s = String::new();
    match e {
        Entry::Init => {
            let a_src = source_index(&b.batch, &b.a_batch, "g", "UL");
            let (b_arg, rhs) = match b.routine {
                Routine::Solve => (
                    "__global const T *b, ",
                    format!(
                        "b[({}) * {}UL + i * {r}UL + (j - {n}UL)]",
                        source_index(&b.batch, &b.b_batch, "g", "UL"),
                        n * r
                    ),
                ),
                Routine::Inv => (
                    "",
                    "(i == j - {n}UL) ? (T)1 : (T)0".replace("{n}", &n.to_string()),
                ),
                _ => ("", "(T)0".into()),
            };
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_init(__global const T *a, {b_arg}__global T *w, __global uint *st) {{
  const ulong items = {items}UL;
  for (ulong e = get_global_id(0); e < items; e += get_global_size(0)) {{
    const ulong g = e / {per}UL, rem = e % {per}UL, i = rem / {ncols}UL, j = rem % {ncols}UL;
    w[g * {mat}UL + i * {ld}UL + j] = j < {n}UL ? a[({a_src}) * {nn}UL + i * {n}UL + j] : {rhs};
  }}
  if (get_global_id(0) == 0) st[0] = 0u;
}}
",
                items = count * n * ncols,
                per = n * ncols,
                nn = n * n,
            );
        }
        Entry::Panel => {
            let (fault_arg, on_zero) = if b.solves() {
                (
                    ", __global uint *af_fault",
                    "if (lid == 0u) af_fault[0] = 1u;",
                )
            } else {
                ("", "")
            };
            let piv_store = if lu {
                format!("m[(ulong)c * {ld}UL + {n}UL] = (T)p;")
            } else {
                String::new()
            };
            if b.leaf() {
                let names = leaf::Names {
                    w: "w",
                    keys: "lbv",
                    idx: "lbi",
                    prow: "lpr",
                    crow: "lcr",
                    on_pivot: format!("piv[g * {n}UL + c] = (int)p; {piv_store}"),
                    on_zero,
                };
                let _ = write!(
                    s,
                    "
{ATTR}
void af_lu_panel(__global T *w, __global int *piv, __global const uint *st{fault_arg}) {{
  __local T lbv[{LOCAL}];
  __local uint lbi[{LOCAL}];
  __local T lpr[{LEAF_NB}];
  __local T lcr[{LEAF_NB}];
  const uint lid = get_local_id(0);
  {panel}  for (ulong g = get_group_id(0); g < {count}UL; g += get_num_groups(0)) {{
    __global T *m = w + g * {mat}UL;
{body}  }}
}}
",
                    panel = panel(&c, false),
                    body = leaf::body(b, false, &names),
                );
                return s;
            }
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_panel(__global T *w, __global int *piv, __global const uint *st{fault_arg}) {{
  __local T bv[{LOCAL}];
  __local int bi[{LOCAL}];
  const uint lid = get_local_id(0);
  {panel}  for (ulong g = get_group_id(0); g < {count}UL; g += get_num_groups(0)) {{
    __global T *m = w + g * {mat}UL;
    for (uint j = 0u; j < kw; j++) {{
      const uint c = k0 + j;
      T best = (T)0;
      int q = (int)c;
      for (uint i = c + lid; i < {n}u; i += {LOCAL}u) {{
        const T v = fabs(m[(ulong)i * {ld}UL + c]);
        if (v > best) {{ best = v; q = (int)i; }}
      }}
      bv[lid] = best;
      bi[lid] = q;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint h = {half}u; h > 0u; h >>= 1) {{
        if (lid < h) {{
          const T o = bv[lid + h];
          const int oi = bi[lid + h];
          if (o > bv[lid] || (o == bv[lid] && oi < bi[lid])) {{ bv[lid] = o; bi[lid] = oi; }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
      }}
      const int p = bi[0];
      if (lid == 0u) {{
        piv[g * {n}UL + c] = p;
        {piv_store}
      }}
      if (p != (int)c) {{
        for (uint cc = k0 + lid; cc < k0 + kw; cc += {LOCAL}u) {{
          const T v = m[(ulong)c * {ld}UL + cc];
          m[(ulong)c * {ld}UL + cc] = m[(ulong)p * {ld}UL + cc];
          m[(ulong)p * {ld}UL + cc] = v;
        }}
      }}
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
      const T d = m[(ulong)c * {ld}UL + c];
      if (d == (T)0) {{
        {on_zero}
      }} else {{
        for (uint i = c + 1u + lid; i < {n}u; i += {LOCAL}u) {{
          __global T *row = m + (ulong)i * {ld}UL;
          const T l = row[c] / d;
          row[c] = l;
          for (uint cc = c + 1u; cc < k0 + kw; cc++) row[cc] -= l * m[(ulong)c * {ld}UL + cc];
        }}
      }}
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }}
  }}
}}
",
                panel = panel(&c, false),
                half = LOCAL / 2,
            );
        }
        Entry::Rows => {
            let (cols, first, skip) = if lu {
                (
                    format!("{ncols}u"),
                    "0u",
                    "if (j >= k0 && j < k0 + kw) continue;",
                )
            } else {
                (format!("({ncols}u - k0 - kw)"), "k0 + kw", "")
            };
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_rows(__global T *w, __global const int *piv, __global const uint *st) {{
  {panel}  const ulong cols = {cols};
  for (ulong e = get_global_id(0); e < {count}UL * cols; e += get_global_size(0)) {{
    const ulong g = e / cols;
    const uint j = {first} + (uint)(e % cols);
    {skip}
    __global T *m = w + g * {mat}UL;
    for (uint c = k0; c < k0 + kw; c++) {{
      const int p = piv[g * {n}UL + c];
      if (p != (int)c) {{
        const T v = m[(ulong)c * {ld}UL + j];
        m[(ulong)c * {ld}UL + j] = m[(ulong)p * {ld}UL + j];
        m[(ulong)p * {ld}UL + j] = v;
      }}
    }}
    if (j >= k0 + kw) {{
      for (uint i = 1u; i < kw; i++) {{
        __global T *row = m + (ulong)(k0 + i) * {ld}UL;
        T x = row[j];
        for (uint t = 0u; t < i; t++) x -= row[k0 + t] * m[(ulong)(k0 + t) * {ld}UL + j];
        row[j] = x;
      }}
    }}
  }}
}}
",
                panel = panel(&c, false),
            );
        }
        Entry::Update | Entry::Bupdate => {
            let back = e == Entry::Bupdate;
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
{ATTR}
void {name}(__global T *w, __global const uint *st) {{
  __local T As[{TK}][{TILE}];
  __local T Bs[{TK}][{TILE}];
  const uint lid = get_local_id(0), tx = lid % 16u, ty = lid / 16u;
  {panel}  const uint r0 = {r0}, r1 = {r1}, c0 = {c0}, c1 = {c1};
  if (r1 <= r0 || c1 <= c0) return;
  const uint tr = (r1 - r0 + {tm}u) / {TILE}u, tc = (c1 - c0 + {tm}u) / {TILE}u;
  const ulong items = {count}UL * tr * tc;
  for (ulong item = get_group_id(0); item < items; item += get_num_groups(0)) {{
    const ulong g = item / ((ulong)tr * tc);
    const uint t = (uint)(item % ((ulong)tr * tc));
    const uint row0 = r0 + (t / tc) * {TILE}u, col0 = c0 + (t % tc) * {TILE}u;
    __global T *m = w + g * {mat}UL;
    T acc[4][4];
    for (uint i = 0u; i < 4u; i++) for (uint jj = 0u; jj < 4u; jj++) acc[i][jj] = (T)0;
    for (uint kk = 0u; kk < kw; kk += {TK}u) {{
      for (uint e = lid; e < {TILE}u * {TK}u; e += {LOCAL}u) {{
        const uint i = e / {TK}u, q = e % {TK}u;
        As[q][i] = (row0 + i < r1 && kk + q < kw) ? m[(ulong)(row0 + i) * {ld}UL + k0 + kk + q] : (T)0;
        const uint q2 = e / {TILE}u, jj = e % {TILE}u;
        Bs[q2][jj] = (col0 + jj < c1 && kk + q2 < kw) ? m[(ulong)(k0 + kk + q2) * {ld}UL + col0 + jj] : (T)0;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint q = 0u; q < {TK}u; q++) {{
        T av[4], bw[4];
        for (uint i = 0u; i < 4u; i++) {{ av[i] = As[q][ty * 4u + i]; bw[i] = Bs[q][tx * 4u + i]; }}
        for (uint i = 0u; i < 4u; i++) for (uint jj = 0u; jj < 4u; jj++) acc[i][jj] = fma(av[i], bw[jj], acc[i][jj]);
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    for (uint i = 0u; i < 4u; i++) {{
      const uint row = row0 + ty * 4u + i;
      if (row >= r1) continue;
      for (uint jj = 0u; jj < 4u; jj++) {{
        const uint col = col0 + tx * 4u + jj;
        if (col < c1) m[(ulong)row * {ld}UL + col] -= acc[i][jj];
      }}
    }}
  }}
}}
",
                name = e.name(),
                panel = panel(&c, back),
                tm = TILE - 1,
            );
        }
        Entry::Next => {
            s.push_str(
                "
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void af_lu_next(__global uint *st) {
  st[0] += 1u;
}
",
            );
        }
        Entry::Btrsm => {
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_btrsm(__global T *w, __global const uint *st) {{
  {panel}  for (ulong e = get_global_id(0); e < {items}UL; e += get_global_size(0)) {{
    const ulong g = e / {r}UL;
    const uint j = {n}u + (uint)(e % {r}UL);
    __global T *m = w + g * {mat}UL;
    for (uint ii = kw; ii > 0u; ii--) {{
      const uint i = k0 + ii - 1u;
      __global T *row = m + (ulong)i * {ld}UL;
      T x = row[j];
      for (uint t = ii; t < kw; t++) x -= row[k0 + t] * m[(ulong)(k0 + t) * {ld}UL + j];
      row[j] = x / row[i];
    }}
  }}
}}
",
                panel = panel(&c, true),
                items = count * r,
            );
        }
        Entry::Out => {
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_out(__global const T *w, __global T *out) {{
  for (ulong e = get_global_id(0); e < {items}UL; e += get_global_size(0)) {{
    const ulong g = e / {nr}UL, rem = e % {nr}UL, i = rem / {r}UL, j = rem % {r}UL;
    out[e] = w[g * {mat}UL + i * {ld}UL + {n}UL + j];
  }}
}}
",
                items = count * n * r,
                nr = n * r,
            );
        }
        Entry::Det => {
            let store = if b.routine == Routine::Det {
                "out[g] = sign * ldexp(mant, ex);"
            } else {
                "const T sg = mant > (T)0 ? sign : (mant < (T)0 ? -sign : (mant == (T)0 ? (T)0 : mant));
    out[2 * g] = sg;
    out[2 * g + 1] = log(fabs(mant)) + (T)ex * (T)0.693147180559945309417232121458176568;"
            };
            let _ = write!(
                s,
                "
{ATTR}
void af_lu_det(__global const T *w, __global const int *piv, __global T *out) {{
  for (ulong g = get_global_id(0); g < {count}UL; g += get_global_size(0)) {{
    __global const T *m = w + g * {mat}UL;
    T sign = (T)1, mant = (T)1;
    int ex = 0;
    for (uint k = 0u; k < {n}u; k++) {{
      if (piv[g * {n}UL + k] != (int)k) sign = -sign;
      int e1, e2;
      const T um = frexp(m[(ulong)k * {ld}UL + k], &e1);
      mant = frexp(mant * um, &e2);
      ex += e1 + e2;
    }}
    {store}
  }}
}}
"
            );
        }
    }
    let _ = nb;
    s
}
