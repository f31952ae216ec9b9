//! The batched small-matrix LU in OpenCL C (see `mod.rs` for the algorithm): one pass
//! `af_lu_batched`, work-groups of [`Layout::local`] threads. Buffers: `a`, (`b` for `solve`), the
//! output, the fault word (`solve`, `inv`). A small prelude of its own instead of the primitive
//! library: a plan builds per shape, and PoCL builds a short program much faster.

use super::{Layout, OPENCL_LOCAL_BYTES, Routine, source_index};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan of a batched `lu`, `solve` or `inv` call.
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let l = Layout::of(call, OPENCL_LOCAL_BYTES)?;
    let (ty, uty, mask, inf, prelude) = match l.dtype {
        DType::F32 => ("float", "uint", "0x7fffffffu", "0x7f800000u", ""),
        DType::F64 if t.fp64 => (
            "double",
            "ulong",
            "0x7fffffffffffffffUL",
            "0x7ff0000000000000UL",
            "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
        ),
        d => return Err(Unsupported(format!("batched LU of {d} on this device"))),
    };
    let fault = l.routine != Routine::Lu;
    let source = kernel(&l, ty, uty, mask, inf, prelude);
    let inputs = if l.routine == Routine::Solve { 2 } else { 1 };
    Ok(GpuPlan::single_pass(
        source,
        "af_lu_batched",
        inputs,
        fault,
        l.groups(),
        l.local,
    ))
}

fn kernel(l: &Layout, ty: &str, uty: &str, mask: &str, inf: &str, prelude: &str) -> String {
    let (n, c, red, local, count) = (l.n, l.chunk.max(1), l.red, l.local, l.count);
    let nn = n * n;
    let a_src = source_index(&l.batch, &l.a_batch, "g", "UL");
    let mut s = String::new();
    let _ = write!(
        s,
        "{prelude}#pragma OPENCL FP_CONTRACT OFF
typedef {ty} T;
typedef {uty} K;
__kernel __attribute__((reqd_work_group_size({local}, 1, 1)))
void af_lu_batched(__global const T *a, {b_arg}__global T *out{fault_arg}) {{
  __local T A[{nn}];
  {x_decl}
  __local K rk[{red}];
  __local int ri[{red}];
  __local int piv[{n}];
  __local int perm[{n}];
  const int lid = (int)get_local_id(0);
  uint fault = 0u;
  for (ulong g = get_group_id(0); g < {count}UL; g += get_num_groups(0)) {{
    const ulong ao = ({a_src}) * {nn}UL;
    for (int e = lid; e < {nn}; e += {local}) A[e] = a[ao + (ulong)e];
    if (lid < {n}) perm[lid] = lid;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < {n}; k++) {{
      if (lid < {red}) {{
        K key = 0;
        if (lid >= k && lid < {n}) {{
          const K bits = as_{uty}(A[lid * {n} + k]) & {mask};
          key = bits > {inf} ? (K)0 : bits + 1;
        }}
        rk[lid] = key;
        ri[lid] = lid;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int h = {half}; h > 0; h >>= 1) {{
        if (lid < h) {{
          const K kr = rk[lid + h], kl = rk[lid];
          const int ir = ri[lid + h];
          if (kr > kl || (kr == kl && ir < ri[lid])) {{ rk[lid] = kr; ri[lid] = ir; }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
      }}
      const int p = rk[0] > 1 ? ri[0] : k;
      if (p != k) {{
        for (int j = lid; j < {n}; j += {local}) {{
          const T v = A[k * {n} + j];
          A[k * {n} + j] = A[p * {n} + j];
          A[p * {n} + j] = v;
        }}
      }}
      if (lid == 0) {{
        piv[k] = p;
        const int q = perm[k];
        perm[k] = perm[p];
        perm[p] = q;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      const T d = A[k * {n} + k];
      if (d == (T)0) {{
        fault = 1u;
      }} else {{
        for (int i = k + 1 + lid; i < {n}; i += {local}) A[i * {n} + k] /= d;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      if (d != (T)0) {{
        const int m = {n} - 1 - k;
        for (int e = lid; e < m * m; e += {local}) {{
          const int i = k + 1 + e / m, j = k + 1 + e % m;
          A[i * {n} + j] -= A[i * {n} + k] * A[k * {n} + j];
        }}
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
{tail}  }}
{fault_store}}}
",
        b_arg = if l.routine == Routine::Solve {
            "__global const T *b, "
        } else {
            ""
        },
        fault_arg = if l.routine == Routine::Lu {
            ""
        } else {
            ", __global uint *af_fault"
        },
        x_decl = if l.routine == Routine::Lu {
            String::new()
        } else {
            format!("__local T X[{}];", n * c)
        },
        half = red / 2,
        tail = tail(l),
        fault_store = if l.routine == Routine::Lu {
            "  (void)fault;\n"
        } else {
            "  if (fault != 0u && get_local_id(0) == 0) af_fault[0] = 1u;\n"
        },
    );
    s
}

/// What follows the factorisation of matrix `g`: the packed factors and pivots (`lu`), or the
/// chunks of right-hand sides solved and written out (`solve`, `inv`).
fn tail(l: &Layout) -> String {
    let (n, r, c, local) = (l.n, l.r, l.chunk.max(1), l.local);
    match l.routine {
        Routine::Lu => format!(
            "    for (int e = lid; e < {len}; e += {local}) {{
      const int row = e / {w}, col = e % {w};
      out[g * {len}UL + (ulong)e] = col < {n} ? A[row * {n} + col] : (T)piv[row];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
",
            len = n * (n + 1),
            w = n + 1,
        ),
        Routine::Solve | Routine::Inv => {
            let load = if l.routine == Routine::Solve {
                let b_src = source_index(&l.batch, &l.b_batch, "g", "UL");
                format!(
                    "col < {r} ? b[({b_src}) * {nr}UL + (ulong)(perm[i] * {r} + col)] : (T)0",
                    nr = n * r
                )
            } else {
                "perm[i] == col ? (T)1 : (T)0".to_string()
            };
            format!(
                "    for (int c0 = 0; c0 < {r}; c0 += {c}) {{
      for (int e = lid; e < {nc}; e += {local}) {{
        const int i = e / {c}, col = c0 + e % {c};
        X[e] = {load};
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int k = 0; k < {n} - 1; k++) {{
        const int m = ({n} - 1 - k) * {c};
        for (int e = lid; e < m; e += {local}) {{
          const int i = k + 1 + e / {c}, q = e % {c};
          X[i * {c} + q] -= A[i * {n} + k] * X[k * {c} + q];
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
      }}
      for (int k = {n} - 1; k >= 0; k--) {{
        for (int q = lid; q < {c}; q += {local}) X[k * {c} + q] /= A[k * {n} + k];
        barrier(CLK_LOCAL_MEM_FENCE);
        const int m = k * {c};
        for (int e = lid; e < m; e += {local}) {{
          const int i = e / {c}, q = e % {c};
          X[i * {c} + q] -= A[i * {n} + k] * X[k * {c} + q];
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
      }}
      for (int e = lid; e < {nc}; e += {local}) {{
        const int i = e / {c}, col = c0 + e % {c};
        if (col < {r}) out[g * {nr}UL + (ulong)(i * {r} + col)] = X[e];
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
",
                nc = n * c,
                nr = n * r,
            )
        }
    }
}
