//! The batched small-matrix LU in OpenCL C (see `mod.rs` for the algorithm; thread 0 finds each
//! column's pivot with IEEE comparisons, so NaN is never chosen): one pass
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
    let (ty, prelude) = match l.dtype {
        DType::F32 => ("float", ""),
        DType::F64 if t.fp64 => ("double", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"),
        d => return Err(Unsupported(format!("batched LU of {d} on this device"))),
    };
    let fault = l.routine != Routine::Lu;
    let source = kernel(&l, ty, prelude);
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

fn kernel(l: &Layout, ty: &str, prelude: &str) -> String {
    let (n, c, local, count) = (l.n, l.chunk.max(1), l.local, l.count);
    let nn = n * n;
    let a_src = source_index(&l.batch, &l.a_batch, "g", "UL");
    let mut s = String::new();
    let _ = write!(
        s,
        "{prelude}#pragma OPENCL FP_CONTRACT OFF
typedef {ty} T;
__kernel __attribute__((reqd_work_group_size({local}, 1, 1)))
void af_lu_batched(__global const T *a, {b_arg}__global T *out{fault_arg}) {{
  __local T A[{nn}];
  {x_decl}
  __local int piv[{n}];
  __local int perm[{n}];
  const int lid = (int)get_local_id(0);
  for (ulong g = get_group_id(0); g < {count}UL; g += get_num_groups(0)) {{
    const ulong ao = ({a_src}) * {nn}UL;
    for (int e = lid; e < {nn}; e += {local}) A[e] = a[ao + (ulong)e];
    if (lid < {n}) perm[lid] = lid;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < {n}; k++) {{
      if (lid == 0) {{
        T best = (T)0;
        int q = k;
        for (int i = k; i < {n}; i++) {{
          const T v = fabs(A[i * {n} + k]);
          if (v > best) {{ best = v; q = i; }}
        }}
        piv[k] = q;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      const int p = piv[k];
      if (p != k) {{
        for (int j = lid; j < {n}; j += {local}) {{
          const T v = A[k * {n} + j];
          A[k * {n} + j] = A[p * {n} + j];
          A[p * {n} + j] = v;
        }}
      }}
      if (lid == 0) {{
        const int q = perm[k];
        perm[k] = perm[p];
        perm[p] = q;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      const T d = A[k * {n} + k];
      if (d == (T)0) {{
        {on_zero}
      }} else {{
        for (int i = k + 1 + lid; i < {n}; i += {local}) A[i * {n} + k] /= d;
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
      if (A[k * {n} + k] != (T)0) {{
        const int m = {n} - 1 - k;
        for (int e = lid; e < m * m; e += {local}) {{
          const int i = k + 1 + e / m, j = k + 1 + e % m;
          A[i * {n} + j] -= A[i * {n} + k] * A[k * {n} + j];
        }}
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
{tail}  }}
}}
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
        tail = tail(l),
        on_zero = if l.routine == Routine::Lu {
            ""
        } else {
            "if (lid == 0) af_fault[0] = 1u;"
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
