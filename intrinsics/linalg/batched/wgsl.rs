//! The batched small-matrix LU in WGSL (see `mod.rs` for the algorithm), f32 only: one pass
//! `af_lu_batched`, workgroups of [`Layout::local`] invocations. Bindings: `a`, (`b` for
//! `solve`), the output, the fault word (`solve`, `inv`). Every barrier sits in control flow
//! that is uniform by WGSL's rules (loops over literal bounds, the workgroup's id); values read
//! from workgroup memory only steer branches without barriers. Pivot keys are the bits of `|a|`
//! (NaN tested on the bits: WGSL may assume NaN absent from float comparisons).

use super::{Layout, Routine, WGSL_LOCAL_BYTES, source_index};
use crate::ir::DType;
use crate::proggen::codegen::gpu::{GpuPlan, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// The plan of a batched `lu`, `solve` or `inv` call.
pub fn render(call: &IntrinsicCall) -> Result<GpuPlan, Unsupported> {
    if call.dtype != DType::F32 {
        return Err(Unsupported(format!("batched LU of {} on WGSL", call.dtype)));
    }
    let l = Layout::of(call, WGSL_LOCAL_BYTES)?;
    let inputs = if l.routine == Routine::Solve { 2 } else { 1 };
    Ok(GpuPlan::single_pass(
        kernel(&l),
        "af_lu_batched",
        inputs,
        l.routine != Routine::Lu,
        l.groups(),
        l.local,
    ))
}

fn kernel(l: &Layout) -> String {
    let (n, c, red, local, count) = (l.n, l.chunk.max(1), l.red, l.local, l.count);
    let nn = n * n;
    let a_src = source_index(&l.batch, &l.a_batch, "g", "u");
    let solve = l.routine == Routine::Solve;
    let mut bindings = String::from("@group(0) @binding(0) var<storage, read> a: array<f32>;\n");
    let mut next = 1;
    if solve {
        bindings.push_str("@group(0) @binding(1) var<storage, read> b: array<f32>;\n");
        next = 2;
    }
    bindings.push_str(&format!(
        "@group(0) @binding({next}) var<storage, read_write> out: array<f32>;\n"
    ));
    if l.routine != Routine::Lu {
        bindings.push_str(&format!(
            "@group(0) @binding({}) var<storage, read_write> af_fault: array<atomic<u32>>;\n",
            next + 1
        ));
        bindings.push_str(&format!("var<workgroup> X: array<f32, {}>;\n", n * c));
    }
    let fault_store = if l.routine == Routine::Lu {
        ""
    } else {
        "  if (fault != 0u && lid == 0u) { atomicStore(&af_fault[0], 1u); }\n"
    };
    format!(
        "{bindings}var<workgroup> A: array<f32, {nn}>;
var<workgroup> rk: array<u32, {red}>;
var<workgroup> ri: array<u32, {red}>;
var<workgroup> piv: array<u32, {n}>;
var<workgroup> perm: array<u32, {n}>;

@compute @workgroup_size({local})
fn af_lu_batched(@builtin(local_invocation_index) lid: u32,
                 @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {{
  var fault = 0u;
  for (var g = wid.x; g < {count}u; g += nwg.x) {{
    let ao = ({a_src}) * {nn}u;
    for (var e = lid; e < {nn}u; e += {local}u) {{ A[e] = a[ao + e]; }}
    if (lid < {n}u) {{ perm[lid] = lid; }}
    workgroupBarrier();
    for (var k = 0u; k < {n}u; k++) {{
      if (lid < {red}u) {{
        var key = 0u;
        if (lid >= k && lid < {n}u) {{
          let bits = bitcast<u32>(A[lid * {n}u + k]) & 0x7fffffffu;
          key = select(bits + 1u, 0u, bits > 0x7f800000u);
        }}
        rk[lid] = key;
        ri[lid] = lid;
      }}
      workgroupBarrier();
      for (var h = {half}u; h > 0u; h >>= 1u) {{
        if (lid < h) {{
          let kr = rk[lid + h];
          let kl = rk[lid];
          let ir = ri[lid + h];
          if (kr > kl || (kr == kl && ir < ri[lid])) {{ rk[lid] = kr; ri[lid] = ir; }}
        }}
        workgroupBarrier();
      }}
      let p = select(k, ri[0], rk[0] > 1u);
      if (p != k) {{
        for (var j = lid; j < {n}u; j += {local}u) {{
          let v = A[k * {n}u + j];
          A[k * {n}u + j] = A[p * {n}u + j];
          A[p * {n}u + j] = v;
        }}
      }}
      if (lid == 0u) {{
        piv[k] = p;
        let q = perm[k];
        perm[k] = perm[p];
        perm[p] = q;
      }}
      workgroupBarrier();
      let d = A[k * {n}u + k];
      if (d == 0.0) {{
        fault = 1u;
      }} else {{
        for (var i = k + 1u + lid; i < {n}u; i += {local}u) {{ A[i * {n}u + k] = A[i * {n}u + k] / d; }}
      }}
      workgroupBarrier();
      if (d != 0.0) {{
        let m = {n}u - 1u - k;
        for (var e = lid; e < m * m; e += {local}u) {{
          let i = k + 1u + e / m;
          let j = k + 1u + e % m;
          A[i * {n}u + j] = A[i * {n}u + j] - A[i * {n}u + k] * A[k * {n}u + j];
        }}
      }}
      workgroupBarrier();
    }}
{tail}  }}
{fault_store}}}
",
        half = red / 2,
        tail = tail(l),
    )
}

/// What follows the factorisation of matrix `g` (as in `opencl.rs`).
fn tail(l: &Layout) -> String {
    let (n, r, c, local) = (l.n, l.r, l.chunk.max(1), l.local);
    match l.routine {
        Routine::Lu => format!(
            "    for (var e = lid; e < {len}u; e += {local}u) {{
      let row = e / {w}u;
      let col = e % {w}u;
      var v = f32(piv[row]);
      if (col < {n}u) {{ v = A[row * {n}u + col]; }}
      out[g * {len}u + e] = v;
    }}
    workgroupBarrier();
",
            len = n * (n + 1),
            w = n + 1,
        ),
        Routine::Solve | Routine::Inv => {
            let load = if l.routine == Routine::Solve {
                let b_src = source_index(&l.batch, &l.b_batch, "g", "u");
                format!(
                    "if (col < {r}u) {{ v = b[({b_src}) * {nr}u + perm[i] * {r}u + col]; }}",
                    nr = n * r
                )
            } else {
                "if (perm[i] == col) { v = 1.0; }".to_string()
            };
            format!(
                "    for (var c0 = 0u; c0 < {r}u; c0 += {c}u) {{
      for (var e = lid; e < {nc}u; e += {local}u) {{
        let i = e / {c}u;
        let col = c0 + e % {c}u;
        var v = 0.0;
        {load}
        X[e] = v;
      }}
      workgroupBarrier();
      for (var k = 0u; k + 1u < {n}u; k++) {{
        let m = ({n}u - 1u - k) * {c}u;
        for (var e = lid; e < m; e += {local}u) {{
          let i = k + 1u + e / {c}u;
          let q = e % {c}u;
          X[i * {c}u + q] = X[i * {c}u + q] - A[i * {n}u + k] * X[k * {c}u + q];
        }}
        workgroupBarrier();
      }}
      for (var kk = 0u; kk < {n}u; kk++) {{
        let k = {n}u - 1u - kk;
        for (var q = lid; q < {c}u; q += {local}u) {{ X[k * {c}u + q] = X[k * {c}u + q] / A[k * {n}u + k]; }}
        workgroupBarrier();
        let m = k * {c}u;
        for (var e = lid; e < m; e += {local}u) {{
          let i = e / {c}u;
          let q = e % {c}u;
          X[i * {c}u + q] = X[i * {c}u + q] - A[i * {n}u + k] * X[k * {c}u + q];
        }}
        workgroupBarrier();
      }}
      for (var e = lid; e < {nc}u; e += {local}u) {{
        let i = e / {c}u;
        let col = c0 + e % {c}u;
        if (col < {r}u) {{ out[g * {nr}u + i * {r}u + col] = X[e]; }}
      }}
      workgroupBarrier();
    }}
",
                nc = n * c,
                nr = n * r,
            )
        }
    }
}
