//! The FFT's WGSL plan: `gpu.rs`'s chain printed as one module with an entry per pass
//! (`af_fft_p0`, ..; bindings 0 `src{k}` and 1 `dst{k}`, workgroup array `sh{k}`), the bodies
//! from `kernel.rs`. `Complex<f32>` only (`vec2<f32>`): WGSL has no f64, so `Complex<f64>`
//! calls run on the CPU executor.

use super::gpu::{self, Load, Plan, Step, WGSL_LOCAL_BYTES};
use super::kernel::{Dialect, elem_body, elem_count, line_body};
use super::opencl::{ends, is_real};
use super::twiddle;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::fmt::Write;

/// The plan of an FFT call on a WGSL target.
pub fn render(call: &IntrinsicCall, _t: Target) -> Result<GpuPlan, Unsupported> {
    if call.dtype.real() == DType::F64 {
        return Err(Unsupported(
            "WGSL has no f64: Complex<f64> FFTs run on the CPU".into(),
        ));
    }
    let plan = gpu::plan(call, WGSL_LOCAL_BYTES)?;
    if plan.scratch.iter().any(|&n| n >= 1 << 31) {
        return Err(Unsupported(
            "wgsl: an FFT scratch over 2^31 elements".into(),
        ));
    }
    let d = Dialect::new(true, false, false);
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
    Ok(GpuPlan {
        source: PRELUDE.to_string() + &twiddle::functions(&d) + &entries,
        scratch: plan
            .scratch
            .iter()
            .map(|&n| (n.max(1) * 8) as u64)
            .collect(),
        passes,
        fault: None,
        immediate_words: None,
        kept: plan.kept(),
        range: None,
    })
}

/// The complex helpers every body calls.
const PRELUDE: &str = "fn cx(a: f32, b: f32) -> vec2<f32> { return vec2<f32>(a, b); }
fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return vec2<f32>(fma(a.x, b.x, -a.y * b.y), fma(a.x, b.y, a.y * b.x)); }
fn cconj(a: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x, -a.y); }
";

fn entry(
    d: &Dialect,
    g: &Plan,
    step: &Step,
    k: usize,
    src: BufArg,
    dst: BufArg,
    call: &IntrinsicCall,
) -> String {
    let ty = |b: BufArg| if is_real(b, call) { "f32" } else { "vec2<f32>" };
    let (_, local) = step.launch(g);
    let (sv, dv, shv) = (format!("src{k}"), format!("dst{k}"), format!("sh{k}"));
    let tv = format!("tab{k}");
    let mut s = format!(
        "@group(0) @binding(0) var<storage, read> {sv}: array<{}>;
@group(0) @binding(1) var<storage, read_write> {dv}: array<{}>;
",
        ty(src),
        ty(dst)
    );
    if let Step::Lines(p) = step
        && p.table.is_some()
    {
        let _ = writeln!(
            s,
            "@group(0) @binding(2) var<storage, read> {tv}: array<vec2<f32>>;"
        );
    }
    match step {
        Step::Lines(p) => {
            // A pass that reads nothing (Bluestein's filter) still binds its source: the
            // layout derived from the shader keeps only the bindings an entry uses.
            let used = if matches!(p.load, Load::Chirp { .. }) {
                format!("  _ = arrayLength(&{sv});\n")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "var<workgroup> {shv}: array<vec2<f32>, {}>;
@compute @workgroup_size({local})
fn af_fft_p{k}(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
{used}  for (var gb = wid.x; gb < {}; gb += nwg.x) {{
{}  }}
}}",
                p.shared(),
                d.u(p.blocks(g)),
                line_body(d, g, p, &sv, &dv, &tv, &shv)
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "@compute @workgroup_size({local})
fn af_fft_p{k}(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
  for (var e = gid.x; e < {}; e += nwg.x * {local}u) {{
    {}
  }}
}}",
                d.u(elem_count(g, step)),
                elem_body(d, g, step, &sv, &dv)
            );
        }
    }
    s
}
