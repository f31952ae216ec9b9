//! The FFT's OpenCL plan: `gpu.rs`'s chain printed as one program with an entry per pass
//! (`af_fft_p0`, `af_fft_p1`, ..; arguments `src`, `dst`), the bodies from `kernel.rs`.
//! `Complex<f32>` as `float2`; `Complex<f64>` as `double2` on devices with `cl_khr_fp64`.

use super::gpu::{self, Plan, Step, Store};
use super::kernel::{Dialect, elem_body, elem_count, line_body};
use super::twiddle;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan of an FFT call on an OpenCL device.
pub fn render(call: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
    let plan = gpu::plan(call, gpu::opencl_local_bytes())?;
    if plan.f64 && !t.fp64 {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let d = Dialect::new(
        false,
        2 * plan.max_elems as u64 + 2 * plan.post as u64 >= 1 << 32,
        plan.f64,
    );
    let mut entries = String::new();
    let mut passes = Vec::new();
    for (k, step) in plan.steps.iter().enumerate() {
        let (src, dst) = ends(step);
        let (groups, local) = step.launch(&plan);
        entries.push_str(&entry(&d, &step.geometry(&plan), step, k, src, dst, call));
        passes.push(Pass {
            entry: format!("af_fft_p{k}"),
            buffers: step.buffers(),
            params: false,
            groups: groups as u32,
            local: local as u32,
        });
    }
    let elem = if plan.f64 { 16 } else { 8 };
    Ok(GpuPlan {
        source: prelude(&d) + &twiddle::functions(&d) + &entries,
        scratch: plan
            .scratch
            .iter()
            .map(|&n| (n.max(1) * elem) as u64)
            .collect(),
        passes,
        fault: None,
        immediate_words: None,
        kept: plan.kept(),
        range: None,
    })
}

/// The buffers a pass reads and writes (a line pass's filter table aside).
pub(super) fn ends(step: &Step) -> (BufArg, BufArg) {
    match step {
        Step::Lines(p) => (p.src.buf, p.dst.buf),
        Step::R2cPost { src, dst, .. } => (src.buf, dst.buf),
    }
}

/// Whether a buffer holds reals (the call's real input or output) rather than complex values.
pub(super) fn is_real(b: BufArg, call: &IntrinsicCall) -> bool {
    match b {
        BufArg::Input(_) => !call.in_dtypes[0].is_complex(),
        BufArg::Output(_) => !call.dtype.is_complex(),
        BufArg::Scratch(_) => false,
    }
}

fn prelude(d: &Dialect) -> String {
    let (t, fp64) = if d.f64 {
        ("double", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
    } else {
        ("float", "")
    };
    let ix = if d.wide { "ulong" } else { "uint" };
    format!(
        "{fp64}#pragma OPENCL FP_CONTRACT OFF
typedef {t} T;
typedef {t}2 T2;
typedef {ix} IX;
static inline T2 cx(T a, T b) {{ return (T2)(a, b); }}
static inline T2 cmul(T2 a, T2 b) {{ return (T2)(fma(a.x, b.x, -a.y * b.y), fma(a.x, b.y, a.y * b.x)); }}
static inline T2 cconj(T2 a) {{ return (T2)(a.x, -a.y); }}
"
    )
}

fn entry(
    d: &Dialect,
    g: &Plan,
    step: &Step,
    k: usize,
    src: BufArg,
    dst: BufArg,
    call: &IntrinsicCall,
) -> String {
    let ty = |b: BufArg| if is_real(b, call) { "T" } else { "T2" };
    let (_, local) = step.launch(g);
    let tab = match step {
        Step::Lines(p) if p.table.is_some() => ", __global const T2 *tab",
        _ => "",
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "__kernel __attribute__((reqd_work_group_size({local}, 1, 1)))
void af_fft_p{k}(__global const {} *src, __global {} *dst{tab}) {{
  const IX lid = (IX)get_local_id(0);",
        ty(src),
        ty(dst)
    );
    match step {
        Step::Lines(p) => {
            debug_assert!(p.store != Store::Complex || !is_real(dst, call));
            let _ = writeln!(
                s,
                "  __local T2 sh[{}];
  for (IX gb = (IX)get_group_id(0); gb < {}; gb += (IX)get_num_groups(0)) {{
{}  }}",
                p.shared(),
                d.u(p.blocks(g)),
                line_body(d, g, p, "src", "dst", "tab", "sh")
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "  for (IX e = (IX)get_global_id(0); e < {}; e += (IX)get_global_size(0)) {{
    {}
  }}",
                d.u(elem_count(g, step)),
                elem_body(d, g, step, "src", "dst")
            );
        }
    }
    s.push_str("}\n");
    s
}
