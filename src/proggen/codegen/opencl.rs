//! OpenCL C renderer for the GPU executors: one fused kernel becomes a [`GpuPlan`] whose source is
//! the primitive library (`primitives/opencl/arrayflow.cl`) followed by the kernel's entry points.
//! The domain's shape and length are literals in the source; constants and random streams arrive
//! as parameters (one `ulong` argument per slot), so the source does not depend on their values.
//! The layout, register program, reductions, scratch buffers and passes come from
//! [`super::lower`] under this target's [`Policy`]; this file prints them as OpenCL C.
//!
//! Every entry runs work-groups of [`LOCAL`] threads, in grid-stride loops (at most
//! [`MAX_GROUPS`] groups; element-wise kernels up to 2^20). A kernel with trap checks runs the
//! units `af_lo .. af_hi` of two arguments after the parameter slots (`lower::Lowered::range`: a
//! launch in resumable passes dispatches one range per pass): an element-wise one takes the
//! scalar loop over those elements, a reduction's `af_kernel` loops over those work-group slots.
//! Without reductions the plan is one
//! pass `af_kernel` looping over the domain's quads (four consecutive elements, vector loads and
//! stores), by default one quad per thread, a work-group per 256 quads (`vector_loop`; the scalar
//! alternative takes `UNROLL` elements a global size apart).
//! With reductions (O results, each over I elements of the reduced extent):
//! - `af_kernel` gives each result T threads (a power of two, about I / 8, at most 256), so a
//!   work-group serves 256 / T results; when T = 256 and there are few results, the extent is also
//!   cut into C chunks, a work-group per (result, chunk) pair. The T threads of a result stride
//!   through its chunk, `UNROLL` elements per trip into as many running values (lanes) that are
//!   folded together at the end, then combine in a tree in local memory; the first writes one
//!   partial per reduction: with C = 1 it is the result and goes to the output, with C > 1 it goes
//!   to scratch at `o * C + c`;
//! - column reductions (`lower::columns`: the loads read adjacent results at adjacent addresses,
//!   as a column sum does) take T = 1: a thread per result, a work-group's 256 threads on 256
//!   adjacent results (each step of their walks one coalesced row segment), the extent cut into
//!   C chunks so that the groups of all chunks fill the device; each thread writes its result or
//!   its partial at `o * C + c` itself (no tree), as does any reduction with T = 1;
//! - for C > 1, a second pass `af_final` combines the C partials, a work-group per result (the
//!   column layout: about C / 8 threads per result, `lower::COLUMN_FINAL_PARTIALS`), its threads
//!   striding through them, then a tree (argmax/argmin ties go to the smaller index
//!   whatever the order of combination, so results match the CPU's).
//!
//! Reductions accumulate in the element type (integers wrap), except f32 sums and products, which
//! accumulate in f64 on devices that compute f64, as the CPU does.
//!
//! Scratch buffers, in order: for C > 1, per reduction its value partials (`O * C` elements of the
//! reduced register's type) and, for argmax/argmin, its index partials (`O * C` u32); then, when
//! the kernel divides integers or has trap checks, the fault word (with trap checks, a second
//! word: the first failing element and check, `debug::trap::device`). Arguments of `af_kernel`: inputs (`__global const`),
//! outputs, scratch buffers, then the parameter slots. Arguments of `af_final`: per reduction its
//! output, its value partials and (argmax/argmin) its index partials.

use super::c::ctype;
use super::c::{random_name, range_arg};
use super::gpu::{BufArg, GpuPlan, Target, Unsupported, tuning};
use super::lower::{
    Affine, Binding, CoordOf, Generator, Index, Layout, Lowered, Policy, QuadPolicy, ReduceLayout,
    ReducePolicy, Reduction, Step, StepOp, lower,
};
use crate::ir::{DType, ReduceOp};
use crate::proggen::kernel::{FusedKernel, ParamKind};
use std::fmt::Write;

/// The primitive library's OpenCL C source, included in every generated program.
pub const LIBRARY: &str = include_str!("../../../primitives/opencl/arrayflow.cl");

/// Work-group size of every entry.
pub const LOCAL: u32 = 256;

/// Most work-groups a pass launches; grid-stride loops cover the rest.
pub const MAX_GROUPS: u64 = 65535;

/// Elements a thread takes per loop trip, in element-wise kernels and in the loops of reductions
/// (independent loads in flight: bandwidth-bound kernels need several per thread on GPUs).
const UNROLL: u64 = 4;

/// About how many elements of the reduced extent each thread of a reduction takes.
const ELEMENTS_PER_THREAD: u64 = 8;

/// About how many work-groups a large reduction aims for (when there are few results).
const TARGET_GROUPS: u64 = 2048;

/// Fewest elements a work-group reduces before the extent is cut into more chunks.
const MIN_CHUNK: u64 = 1024;

/// Bytes of kernel arguments every OpenCL device accepts (`CL_DEVICE_MAX_PARAMETER_SIZE`).
const MAX_ARG_BYTES: usize = 1024;

/// The attribute line every entry carries (its size is [`LOCAL`]).
pub const ENTRY_ATTR: &str = "__kernel __attribute__((reqd_work_group_size(256, 1, 1)))";

/// The program's first lines: f64 support when the target has it, then the primitive library.
pub fn prelude(t: Target) -> String {
    let mut s = String::with_capacity(LIBRARY.len() + 128);
    if t.fp64 {
        s.push_str("#define AF_FP64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    s.push_str("#pragma OPENCL FP_CONTRACT OFF\n");
    s.push_str(LIBRARY);
    s
}

/// Work-groups for `n` items handled by `per_group` threads' worth each, capped at [`MAX_GROUPS`].
pub fn groups_for(n: u64, per_group: u64) -> u32 {
    n.div_ceil(per_group).min(MAX_GROUPS) as u32
}

/// Whether the kernel touches f64 values anywhere (`Complex<f64>` included).
fn uses_f64(k: &FusedKernel) -> bool {
    k.inputs
        .iter()
        .chain(&k.outputs)
        .chain(&k.reg_dtypes)
        .any(|&d| matches!(d, DType::F64 | DType::C128))
        || k.params.contains(&ParamKind::Const(DType::F64))
}

/// How this target lays kernels out (see the module comment).
fn policy() -> Policy {
    let tune = tuning();
    Policy {
        local: LOCAL as u64,
        max_groups: MAX_GROUPS,
        unroll: UNROLL,
        quads: tune.opencl_vector.then_some(QuadPolicy {
            per_trip: tune.opencl_quads,
            max_groups: tune.opencl_groups,
            mixed: true,
        }),
        reduce: ReducePolicy {
            row_max: None,
            elements_per_thread: Some(ELEMENTS_PER_THREAD),
            target_groups: TARGET_GROUPS,
            min_chunk: MIN_CHUNK,
            quad_chunks: true,
        },
        binding: Binding::Every,
        word_bools: false,
    }
}

/// Renders `k` for an OpenCL device.
pub fn render(k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
    if !t.fp64 && uses_f64(k) {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let l = lower(k, t, &policy());
    let nbufs = l.passes[0].buffers.len();
    if (nbufs + k.params.len()) * 8 > MAX_ARG_BYTES {
        return Err(Unsupported(format!(
            "{} buffers and {} parameters exceed OpenCL's kernel argument space",
            nbufs,
            k.params.len()
        )));
    }
    let mut source = prelude(t);
    source.push_str(&kernel_entry(&l, t));
    if l.passes.len() > 1 {
        source.push_str(&final_entry(&l));
    }
    Ok(l.plan(source, LOCAL, None))
}

/// The parameters of `af_kernel`, in `Pass::buffers` order, then the parameter slots.
fn kernel_args(l: &Lowered) -> Vec<String> {
    let k = l.k;
    // Every buffer argument is a distinct device buffer (inputs may repeat, but are only read),
    // so `restrict` holds and lets the compiler schedule the loads of unrolled elements early.
    let mut args: Vec<String> = l.passes[0]
        .buffers
        .iter()
        .map(|b| match *b {
            BufArg::Input(p) => {
                format!(
                    "__global const {} *restrict in{p}",
                    ctype(k.inputs[p as usize])
                )
            }
            BufArg::Output(o) => {
                format!("__global {} *restrict out{o}", ctype(k.outputs[o as usize]))
            }
            BufArg::Scratch(f) if Some(f) == l.fault => "__global u32 *restrict af_fault".into(),
            BufArg::Scratch(s) => format!("__global {} *restrict af_s{s}", partial_type(l, s)),
        })
        .collect();
    for slot in 0..k.params.len() {
        args.push(format!("ulong p{slot}"));
    }
    if l.range {
        // The elements this dispatch runs (`Lowered::range`).
        args.push("ulong af_lo".into());
        args.push("ulong af_hi".into());
    }
    args
}

/// The C type of scratch buffer `s`, a reduction's value partials or index partials.
fn partial_type(l: &Lowered, s: u32) -> &'static str {
    match l.partials_in(s) {
        Some((ri, false)) => ctype(l.reductions[ri].acc),
        Some((_, true)) => "u32",
        None => unreachable!("a scratch buffer is the fault word or a reduction's partials"),
    }
}

/// `af_kernel`: its signature, constants, and the layout's loops around the element body.
fn kernel_entry(l: &Lowered, t: Target) -> String {
    let k = l.k;
    let mut s = String::with_capacity(4096);
    let _ = writeln!(
        s,
        "\n{ENTRY_ATTR}\nvoid af_kernel({}) {{",
        kernel_args(l).join(", ")
    );
    if let Layout::Reduce(r) = l.layout {
        s.push_str(&local_decls(l, r.threads > 1));
    }
    for (slot, kind) in k.params.iter().enumerate() {
        if let ParamKind::Const(d) = kind {
            let _ = writeln!(
                s,
                "  const {t} k{slot} = af_bits_{t}(p{slot});",
                t = ctype(*d)
            );
        }
    }
    if l.faults() {
        s.push_str("  u32 fault = 0u;\n");
    }
    if l.first.is_some() {
        s.push_str("  u32 af_first = 0u;\n");
    }
    let len = k.domain.len();
    match l.layout {
        Layout::Quads { .. } => s.push_str(&vector_loop(l, t, len as u64)),
        Layout::Scalar { .. } => {
            // UNROLL elements per trip, a global size apart: each is coalesced across the
            // work-group and their loads are independent, so more bytes are in flight per thread.
            // A 32-bit loop counter where the domain allows (64-bit compares and adds take two
            // instructions each on GPUs); `lin` stays 64-bit for the index arithmetic.
            // A ranged kernel runs the elements `af_lo .. af_hi` (`Lowered::range`).
            let (ty, sfx) = if len < 1 << 31 && !l.range {
                ("uint", "u")
            } else {
                ("ulong", "UL")
            };
            let (first, end) = if l.range {
                ("af_lo + get_global_id(0)".to_string(), "af_hi".to_string())
            } else {
                ("get_global_id(0)".to_string(), format!("{len}{sfx}"))
            };
            let _ = writeln!(
                s,
                "  const {ty} gs = get_global_size(0);\n  \
                 for ({ty} i = {first}; i < {end}; i += {UNROLL}{sfx} * gs) {{"
            );
            let body = element_body(l, t, Access::Scalar);
            for u in 0..UNROLL {
                let guard = if u == 0 {
                    String::new()
                } else if l.range {
                    "if (lin < af_hi) ".to_string()
                } else {
                    format!("if (lin < {len}UL) ")
                };
                let _ = writeln!(
                    s,
                    "    {{\n      const ulong lin = (ulong)i + {u}UL * gs;\n      {guard}{{"
                );
                s.push_str(&indent(&body, 4));
                s.push_str("      }\n    }\n");
            }
            s.push_str("  }\n");
        }
        Layout::Reduce(r) => s.push_str(&reduction_loop(l, t, r)),
        Layout::Rows { .. } => unreachable!("OpenCL reductions run on work-groups"),
    }
    if l.faults() {
        s.push_str("  if (fault != 0u) af_fault[0] = fault;\n");
    }
    if l.first.is_some() {
        // The lowest failing key of the launch: the greatest word (`debug::trap::device`).
        s.push_str("  if (af_first != 0u) atomic_max(&af_fault[1], af_first);\n");
    }
    s.push_str("}\n");
    s
}

/// The first pass of a reduction: each work-group slot's results (or chunk of one result), their
/// threads running `body` over their share of the elements and folding them into the running
/// values, then a tree per reduction writing the partials or results.
fn reduction_loop(l: &Lowered, t: Target, r: ReduceLayout) -> String {
    let k = l.k;
    let (outer, inner) = (k.domain.outer, k.domain.inner);
    let ReduceLayout {
        threads,
        chunks,
        chunk,
        ..
    } = r;
    let mut s = String::new();
    // A ranged kernel runs the slots `af_lo .. af_hi` (`Lowered::range`).
    let (first, end) = if l.range {
        ("af_lo + get_group_id(0)".to_string(), "af_hi".to_string())
    } else {
        ("get_group_id(0)".to_string(), format!("{}UL", r.slots))
    };
    let _ = writeln!(
        s,
        "  for (ulong g = {first}; g < {end}; g += get_num_groups(0)) {{\n    \
         const ulong o = (g / {chunks}UL) * {per}UL + lid / {threads}u, \
         j0 = (g % {chunks}UL) * {chunk}UL, j1 = min(j0 + {chunk}UL, {inner}UL);",
        per = LOCAL as u64 / threads,
    );
    if chunks > 1 {
        // The slot's partial of result `o`.
        let _ = writeln!(s, "    const ulong po = o * {chunks}UL + g % {chunks}UL;");
    }
    s.push_str(&indent(&acc_init(l, 0), 2));
    // UNROLL elements per trip, `threads` apart, each folded into its own running values (lanes),
    // so their loads and folds are independent; then the rest one at a time, and the lanes folded
    // together. 32-bit counters when the extent allows.
    let ty = if (inner as u64) + UNROLL * threads < 1 << 32 {
        "uint"
    } else {
        "ulong"
    };
    for u in 1..UNROLL {
        s.push_str(&indent(&acc_init(l, u), 2));
    }
    // Element `jj` of the extent (an expression), read as `access` says, folded into lane `u`.
    let lane = |jj: String, access: Access, u: u64| -> String {
        let mut b =
            format!("{{\n  const {ty} jj = {jj};\n  const ulong lin = o * {inner}UL + jj;\n");
        b.push_str(&indent(&element_body(l, t, access), 1));
        b.push_str(&indent(&acc_steps(l, u), 1));
        b.push_str("}\n");
        b
    };
    if r.quads {
        // Quads: each thread loads four consecutive elements of every input read in place and
        // folds lane u into running values u (the chunk bounds are multiples of four).
        let _ = writeln!(
            s,
            "    if (o < {outer}UL) {{\n      \
             for ({ty} q = ({ty})(j0 / 4UL) + lid % {threads}u; q < ({ty})(j1 / 4UL); q += {threads}u) {{\n        \
             const ulong lq = o * {}UL + q;",
            inner / 4
        );
        s.push_str(&indent(&vector_io(l, "lq", false), 4));
        for u in 0..4 {
            s.push_str(&indent(
                &lane(format!("4u * q + {u}u"), Access::Lane(u), u),
                4,
            ));
        }
        s.push_str(&indent(&vector_io(l, "lq", true), 4));
        s.push_str("      }\n");
    } else {
        let _ = writeln!(
            s,
            "    if (o < {outer}UL) {{\n      \
             {ty} j = ({ty})j0 + lid % {threads}u;\n      \
             for (; j + {last}u < ({ty})j1; j += {step}u) {{",
            last = (UNROLL - 1) * threads,
            step = UNROLL * threads,
        );
        for u in 0..UNROLL {
            let jj = format!("j + {}u", u * threads);
            s.push_str(&indent(&lane(jj, Access::Scalar, u), 4));
        }
        let _ = writeln!(
            s,
            "      }}\n      for (; j < ({ty})j1; j += {threads}u) {{"
        );
        s.push_str(&indent(&lane("j".into(), Access::Scalar, 0), 4));
        s.push_str("      }\n");
    }
    for u in 1..UNROLL {
        s.push_str(&indent(&fold_lane(l, u), 3));
    }
    s.push_str("    }\n");
    for (ri, red) in l.reductions.iter().enumerate() {
        let dest = match red.partials {
            Some((v, i)) => Dest::Partial(v, i),
            None => Dest::Output(red.output),
        };
        let code = if threads == 1 {
            // A thread per result: its running values are the result (or partial).
            format!(
                "if (o < {outer}UL) {{ {} }}\n",
                write_result(red, &dest, &format!("acc{ri}"), &format!("idx{ri}"))
            )
        } else {
            tree(l, ri, threads, dest)
        };
        s.push_str(&indent(&code, 2));
    }
    s.push_str("  }\n");
    s
}

/// `af_final`: combines each result's C partials (in a tree over the work-group) into the outputs.
fn final_entry(l: &Lowered) -> String {
    let Layout::Reduce(ReduceLayout {
        chunks,
        final_threads: threads,
        ..
    }) = l.layout
    else {
        unreachable!("a final pass follows chunked reductions only")
    };
    let outer = l.k.domain.outer as u64;
    let per = LOCAL as u64 / threads;
    let k = l.k;
    let args: Vec<String> = l.passes[1]
        .buffers
        .iter()
        .map(|b| match *b {
            BufArg::Output(o) => format!("__global {} *out{o}", ctype(k.outputs[o as usize])),
            BufArg::Scratch(s) => format!("__global const {} *af_s{s}", partial_type(l, s)),
            BufArg::Input(_) => unreachable!("the final pass reads partials"),
        })
        .collect();
    let mut s = String::new();
    let _ = writeln!(s, "\n{ENTRY_ATTR}\nvoid af_final({}) {{", args.join(", "));
    s.push_str(&local_decls(l, true));
    let _ = writeln!(
        s,
        "  for (ulong g = get_group_id(0); g < {}UL; g += get_num_groups(0)) {{\n    \
         const ulong o = g * {per}UL + lid / {threads}u;",
        outer.div_ceil(per)
    );
    s.push_str(&indent(&acc_init(l, 0), 2));
    let _ = writeln!(
        s,
        "    for (ulong c = lid % {threads}u; o < {outer}UL && c < {chunks}UL; c += {threads}UL) {{"
    );
    for (ri, r) in l.reductions.iter().enumerate() {
        let (v, i) = r.partials.expect("partials of a chunked reduction");
        let at = format!("o * {chunks}UL + c");
        let idx = i.map(|i| format!("af_s{i}[{at}]"));
        let step = combine(
            r.op,
            r.acc,
            (&format!("acc{ri}"), &format!("idx{ri}")),
            (&format!("af_s{v}[{at}]"), idx.as_deref().unwrap_or("")),
        );
        let _ = writeln!(s, "      {step}");
    }
    s.push_str("    }\n");
    for (ri, r) in l.reductions.iter().enumerate() {
        s.push_str(&indent(&tree(l, ri, threads, Dest::Output(r.output)), 2));
    }
    s.push_str("  }\n}\n");
    s
}

/// The thread's index and, with `tree`, local memory for the tree reductions (reused by each
/// reduction in turn).
fn local_decls(l: &Lowered, tree: bool) -> String {
    let mut s = String::new();
    if tree {
        let _ = writeln!(s, "  __local ulong af_lv[{LOCAL}];");
        if l.reductions.iter().any(|r| r.is_arg()) {
            let _ = writeln!(s, "  __local u32 af_li[{LOCAL}];");
        }
    }
    s.push_str("  const u32 lid = get_local_id(0);\n");
    s
}

/// Where a result's reduced value goes.
enum Dest {
    /// The output buffer, at the result's index `o`.
    Output(u32),
    /// Value (and index) partial buffers, at the result's and chunk's index `po`.
    Partial(u32, Option<u32>),
}

/// The statement writing reduction `r`'s reduced value `v` (index `i` for argmax/argmin, of type
/// `r.acc`) to `dest`.
fn write_result(r: &Reduction, dest: &Dest, v: &str, i: &str) -> String {
    match *dest {
        Dest::Output(o) if r.is_arg() => format!("out{o}[o] = {i};"),
        Dest::Output(o) if r.out == r.acc => format!("out{o}[o] = {v};"),
        Dest::Output(o) => format!(
            "out{o}[o] = af_cast_{}_{}({v});",
            ctype(r.acc),
            ctype(r.out)
        ),
        Dest::Partial(pv, Some(pi)) => format!("af_s{pv}[po] = {v}; af_s{pi}[po] = {i};"),
        Dest::Partial(pv, None) => format!("af_s{pv}[po] = {v};"),
    }
}

/// Combines the running `acc{ri}` (and `idx{ri}`) of each result's `threads` threads (adjacent
/// local ids) in a tree in local memory; the first thread of each result in range writes it to
/// `dest` (a partial at `po`, or the output at `o`).
fn tree(l: &Lowered, ri: usize, threads: u64, dest: Dest) -> String {
    let r = &l.reductions[ri];
    let d = r.acc;
    let t = ctype(d);
    let step = combine(
        r.op,
        d,
        ("lv[lid]", "af_li[lid]"),
        ("lv[lid + s]", "af_li[lid + s]"),
    );
    let write = write_result(r, &dest, "lv[lid]", "af_li[lid]");
    let keep_index = if r.is_arg() {
        format!(" af_li[lid] = idx{ri};")
    } else {
        String::new()
    };
    format!(
        "{{\n  __local {t} *lv = (__local {t} *)af_lv;\n  lv[lid] = acc{ri};{keep_index}\n  \
         barrier(CLK_LOCAL_MEM_FENCE);\n  \
         for (u32 s = {half}u; s > 0u; s >>= 1) {{\n    \
         if (lid % {threads}u < s) {{ {step} }}\n    \
         barrier(CLK_LOCAL_MEM_FENCE);\n  }}\n  \
         if (lid % {threads}u == 0u && o < {outer}UL) {{ {write} }}\n  \
         barrier(CLK_LOCAL_MEM_FENCE);\n}}\n",
        half = threads / 2,
        outer = l.k.domain.outer,
    )
}

/// The names of reduction `ri`'s running value and index in lane `u` (lane 0 is `acc{ri}`, which
/// the tree reads).
fn lane_names(ri: usize, u: u64) -> (String, String) {
    if u == 0 {
        (format!("acc{ri}"), format!("idx{ri}"))
    } else {
        (format!("acc{ri}_{u}"), format!("idx{ri}_{u}"))
    }
}

/// Declarations of each reduction's running value (and index) in lane `u`, at its identity.
fn acc_init(l: &Lowered, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in l.reductions.iter().enumerate() {
        let d = r.acc;
        let (acc, idx) = lane_names(ri, u);
        let _ = write!(s, "{} {acc} = {};", ctype(d), identity(r.op, d));
        if r.is_arg() {
            let _ = write!(s, " u32 {idx} = UINT_MAX;");
        }
        s.push('\n');
    }
    s
}

/// Folds lane `u`'s running values into lane 0's (argmax/argmin ties go to the smaller index
/// whatever the order, as in the tree).
fn fold_lane(l: &Lowered, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in l.reductions.iter().enumerate() {
        let (a, ai) = lane_names(ri, 0);
        let (b, bi) = lane_names(ri, u);
        let _ = writeln!(s, "{}", combine(r.op, r.acc, (&a, &ai), (&b, &bi)));
    }
    s
}

/// Folds the current element (index `jj` within the reduced extent) into each reduction's lane
/// `u`.
fn acc_steps(l: &Lowered, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in l.reductions.iter().enumerate() {
        let value = if r.value == r.acc {
            format!("r{}", r.reg)
        } else {
            format!("af_cast_{}_{}(r{})", ctype(r.value), ctype(r.acc), r.reg)
        };
        let (a, ai) = lane_names(ri, u);
        let step = combine(r.op, r.acc, (&a, &ai), (&value, "(u32)jj"));
        let _ = writeln!(s, "{step}");
    }
    s
}

/// The statement folding `(v, i)` into the running `(acc_v, acc_i)` (indices for argmax/argmin).
fn combine(op: ReduceOp, d: DType, acc: (&str, &str), x: (&str, &str)) -> String {
    let t = ctype(d);
    let (av, ai) = acc;
    let (v, i) = x;
    let f = match op {
        ReduceOp::Sum => "add",
        ReduceOp::Prod => "mul",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
        ReduceOp::Any => "or",
        ReduceOp::All => "and",
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            return format!(
                "if (af_{}_takes_{t}({av}, {ai}, {v}, {i})) {{ {av} = {v}; {ai} = {i}; }}",
                op.name()
            );
        }
    };
    format!("{av} = af_{f}_{t}({av}, {v});")
}

/// A reduction's starting value (the CPU's identities after its final cast).
fn identity(op: ReduceOp, d: DType) -> &'static str {
    use DType::*;
    match (op, d) {
        (ReduceOp::Sum, _) | (ReduceOp::Any, _) => "0",
        (ReduceOp::Prod, _) | (ReduceOp::All, _) => "1",
        (ReduceOp::Max | ReduceOp::ArgMax, F32 | F64) => "-INFINITY",
        (ReduceOp::Max | ReduceOp::ArgMax, I32) => "INT_MIN",
        (ReduceOp::Max | ReduceOp::ArgMax, _) => "0u",
        (ReduceOp::Min | ReduceOp::ArgMin, F32 | F64) => "INFINITY",
        (ReduceOp::Min | ReduceOp::ArgMin, I32) => "INT_MAX",
        (ReduceOp::Min | ReduceOp::ArgMin, _) => "UINT_MAX",
    }
}

/// The OpenCL vector type of four `d` elements (four complex numbers are eight components,
/// interleaved as in memory).
fn vec4(d: DType) -> &'static str {
    match d {
        DType::F32 => "float4",
        DType::F64 => "double4",
        DType::I32 => "int4",
        DType::U32 => "uint4",
        DType::Bool => "uchar4",
        DType::C64 => "float8",
        DType::C128 => "double8",
    }
}

/// Lane `u` (0..4) of a vector of four `d` elements: one component, or for a complex type the
/// pair of components `2u, 2u + 1` (a `float2`/`double2`, which is how a register holds it).
fn lane(d: DType, u: u64) -> String {
    if d.is_complex() {
        format!("s{}{}", 2 * u, 2 * u + 1)
    } else {
        format!("s{u}")
    }
}

/// The element-wise loop over quads: each thread loads four consecutive elements of every input
/// read in place (`vin{p}`), runs the element body once per lane, and stores the four results of
/// each output at once (`vout{o}`). With one quad per thread and a thread per quad (the default
/// up to 2^28 quads) there is no loop; with Q = [`super::gpu::Tuning::opencl_quads`] > 1 a main
/// loop takes Q quads a global size apart per trip (their loads issued first, so more bytes are in
/// flight per thread) and a second loop the quads left; the last `len % 4` elements take the
/// scalar body.
fn vector_loop(l: &Lowered, t: Target, len: u64) -> String {
    let Layout::Quads {
        quads,
        per_trip: q_trip,
        one_trip,
        ..
    } = l.layout
    else {
        unreachable!("the quad loop of a quad layout")
    };
    let ty = if quads < 1 << 31 { "uint" } else { "ulong" };
    // The global size, for the loops and the scalar tail.
    let gs = format!("  const {ty} gs = get_global_size(0);\n");
    if one_trip {
        // A thread per quad: no loop (on the H200 the one-trip loop cost about 1 µs of a 370 µs
        // kernel against the hand-written chain of `benches/gpu.rs`).
        let mut s = if len.is_multiple_of(4) {
            String::new()
        } else {
            gs
        };
        let _ = writeln!(
            s,
            "  const {ty} i = get_global_id(0);\n  if (i < ({ty}){quads}UL) {{"
        );
        s.push_str(&indent(&quad_block(l, t, "i", None), 2));
        s.push_str("  }\n");
        return s + &scalar_tail(l, t, len);
    }
    let mut s = format!("{gs}  {ty} i = get_global_id(0);\n");
    if q_trip > 1 {
        let at = |j: u64| {
            if j == 0 {
                "i".to_string()
            } else {
                format!("i + {j}u * gs")
            }
        };
        let _ = writeln!(
            s,
            "  for (; {} < ({ty}){quads}UL; i += {q_trip}u * gs) {{",
            at(q_trip - 1)
        );
        for j in 0..q_trip {
            s.push_str(&indent(&vector_loads(l, &at(j), &format!("_{j}")), 2));
        }
        for j in 0..q_trip {
            s.push_str(&indent(&quad_block(l, t, &at(j), Some(j)), 2));
        }
        s.push_str("  }\n");
    }
    let _ = writeln!(s, "  for (; i < ({ty}){quads}UL; i += gs) {{");
    s.push_str(&indent(&quad_block(l, t, "i", None), 2));
    s.push_str("  }\n");
    s + &scalar_tail(l, t, len)
}

/// The scalar loop over the last `len % 4` elements of a vector element-wise kernel (`gs` is
/// the global size).
fn scalar_tail(l: &Lowered, t: Target, len: u64) -> String {
    if len.is_multiple_of(4) {
        return String::new();
    }
    let mut s = format!(
        "  for (ulong lin = {}UL + get_global_id(0); lin < {len}UL; lin += gs) {{\n",
        len / 4 * 4
    );
    s.push_str(&indent(&element_body(l, t, Access::Scalar), 2));
    s.push_str("  }\n");
    s
}

/// One quad `q` of an element-wise kernel in a block of its own: its input vectors (loaded here,
/// or with `loaded = Some(j)` taken from `vin{p}_{j}` loaded before), the element body per lane,
/// and the output vectors' stores.
fn quad_block(l: &Lowered, t: Target, q: &str, loaded: Option<u64>) -> String {
    let mut s = String::from("{\n");
    let mut inputs = match loaded {
        None => vector_loads(l, q, ""),
        Some(j) => l
            .in_place
            .iter()
            .map(|&p| {
                format!(
                    "const {} vin{p} = vin{p}_{j};\n",
                    vec4(l.k.inputs[p as usize])
                )
            })
            .collect(),
    };
    inputs.push_str(&vector_outputs(l));
    s.push_str(&indent(&inputs, 1));
    for u in 0..4 {
        let _ = writeln!(s, "  {{\n    const ulong lin = 4UL * ({q}) + {u}UL;");
        s.push_str(&indent(&element_body(l, t, Access::Lane(u)), 2));
        s.push_str("  }\n");
    }
    s.push_str(&indent(&vector_io(l, q, true), 1));
    s.push_str("}\n");
    s
}

/// `const T4 vin{p}{suffix} = ((__global const T4 *)in{p})[q];` for every input some load reads
/// in place. Quads are read and written through vector pointers, not `vload4`/`vstore4`: a buffer
/// starts 16-byte aligned and quad `q` lies at `16 q` bytes, and only through a vector pointer
/// does NVIDIA's compiler know it (its PTX for `vstore4` on a `float *` is four scalar stores).
fn vector_loads(l: &Lowered, q: &str, suffix: &str) -> String {
    let mut s = String::new();
    for &p in &l.in_place {
        let d = l.k.inputs[p as usize];
        let _ = writeln!(
            s,
            "const {v} vin{p}{suffix} = ((__global const {v} *)in{p})[{q}];",
            v = vec4(d)
        );
    }
    s
}

/// The vector loads of quad `q` (`vin{p}`, for every input some load reads in place) and the
/// declarations of the output vectors (`vout{o}`, for every element-wise store), or with `store`
/// the stores of those vectors.
fn vector_io(l: &Lowered, q: &str, store: bool) -> String {
    let k = l.k;
    let mut s = String::new();
    if store {
        for st in &k.stores {
            let _ = writeln!(
                s,
                "((__global {} *)out{o})[{q}] = vout{o};",
                vec4(k.outputs[st.output as usize]),
                o = st.output
            );
        }
        return s;
    }
    vector_loads(l, q, "") + &vector_outputs(l)
}

/// Declarations of the output vectors (`vout{o}`, for every element-wise store).
fn vector_outputs(l: &Lowered) -> String {
    let mut s = String::new();
    for st in &l.k.stores {
        let d = l.k.outputs[st.output as usize];
        let _ = writeln!(s, "{} vout{};", vec4(d), st.output);
    }
    s
}

/// How an element body reads contiguous inputs and writes its outputs.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// `in{p}[lin]`, `out{o}[lin]`.
    Scalar,
    /// Lane `u` of the loaded vectors `vin{p}` and of the vectors stored after the lanes, `vout{o}`.
    Lane(u64),
}

/// One domain element `lin`: its coordinates when a map needs them, the register program, the
/// fault checks and the element-wise stores.
fn element_body(l: &Lowered, t: Target, access: Access) -> String {
    let k = l.k;
    let mut s = String::new();
    if l.faults() {
        s.push_str("u32 bad = 0u;\n");
    }
    if let Some(coords) = &l.coords {
        // Divisions in 32 bits where the domain allows (much cheaper on GPUs).
        let narrow = k.domain.len() <= u32::MAX as usize;
        let suffix = if narrow { "u" } else { "UL" };
        for (d, c) in coords.iter().enumerate() {
            let of = match c.of {
                CoordOf::Lin => "lin",
                CoordOf::Result => "o",
                CoordOf::Element => "jj",
            };
            let mut v = if narrow {
                format!("(u32){of}")
            } else {
                of.to_string()
            };
            if c.div > 1 {
                v = format!("({v} / {}{suffix})", c.div);
            }
            if let Some(n) = c.extent {
                v = format!("({v} % {n}{suffix})");
            }
            let _ = writeln!(s, "const ulong d{d} = {v};");
        }
    }
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(s, "{} r{r};", ctype(*d));
    }
    for step in &l.steps {
        let value = match (&step.op, access) {
            (
                StepOp::Load {
                    input,
                    at: Index::Lin,
                },
                Access::Lane(u),
            ) => format!("vin{input}.{}", lane(step.ty, u)),
            _ => rhs(step, t),
        };
        let _ = writeln!(s, "r{} = {value};", step.dst);
        if let StepOp::Binary { op, .. } = step.op
            && let Some(plant) = crate::proggen::fault::planted(op, step.ty, step.dst, true)
        {
            let _ = writeln!(s, "{plant}");
        }
        if let Some(code) = step.fault {
            let _ = writeln!(s, "if (bad != 0u) {{ fault = {code}u; bad = 0u; }}");
        }
        for code in crate::debug::trap::codegen::step_statements(
            &step.traps,
            step.dst,
            step.ty,
            &step.operands,
            l.first,
            crate::debug::trap::codegen::Dialect::OpenCl,
        ) {
            let _ = writeln!(s, "{code}");
        }
    }
    for st in &k.stores {
        let _ = match access {
            Access::Scalar => writeln!(s, "out{}[lin] = r{};", st.output, st.reg),
            Access::Lane(u) => writeln!(
                s,
                "vout{}.{} = r{};",
                st.output,
                lane(k.outputs[st.output as usize], u),
                st.reg
            ),
        };
    }
    s
}

/// The expression a step assigns to its register.
fn rhs(step: &Step, t: Target) -> String {
    match &step.op {
        StepOp::Load { input, at } => format!("in{input}[{}]", index(at)),
        StepOp::Param { slot } => format!("k{slot}"),
        StepOp::Random {
            alg,
            dist,
            key_slot,
            counter_slot,
            range_slot,
            at,
        } => format!(
            "af_{}_{}((u32)p{key_slot}, (u32)(p{key_slot} >> 32), p{counter_slot} + {}{})",
            random_name(*alg, *dist),
            ctype(step.ty),
            index(at),
            range_arg(
                *dist,
                &range_slot.map_or("0u".into(), |r| format!("(u32)p{r}"))
            )
        ),
        StepOp::Gen { generator: g, at } => generator(g, &index(at), step.ty, t),
        StepOp::Unary { op, a, ty } => format!("af_{}_{}(r{a})", op.name(), ctype(*ty)),
        StepOp::Binary { op, a, b, ty } => {
            let f = format!("af_{}_{}", op.name(), ctype(*ty));
            if step.fault.is_some() {
                format!("{f}(r{a}, r{b}, &bad)")
            } else {
                format!("{f}(r{a}, r{b})")
            }
        }
        StepOp::Select { cond, a, b } => format!("(r{cond} ? r{a} : r{b})"),
        StepOp::Cast { a, from, to } => format!("af_cast_{}_{}(r{a})", ctype(*from), ctype(*to)),
    }
}

/// The `ulong` index expression for the current element.
fn index(at: &Index) -> String {
    let terms = |a: &Affine| {
        let mut v = format!("{}L", a.offset);
        for (k, c) in &a.terms {
            let _ = write!(v, " + {c}L * (long)d{k}");
        }
        v
    };
    match at {
        Index::Lin => "lin".into(),
        Index::Affine(a) => format!("(ulong)({})", terms(a)),
        Index::Folded(dims) => {
            let mut s = String::from("(ulong)(0L");
            for d in dims {
                let mut v = terms(&d.at);
                for (f, &near) in d.folds.iter().zip(&d.near) {
                    v = super::fold_expr(f, near, &v, &|x| format!("{x}L"));
                }
                let _ = write!(s, " + ({v}) * {}L", d.stride);
            }
            s.push(')');
            s
        }
    }
}

/// A position-dependent generator's value at index `g` of its own shape, as element type `d`.
fn generator(kind: &Generator, g: &str, d: DType, t: Target) -> String {
    let ct = ctype(d);
    match kind {
        Generator::Iota { div, extent } => {
            format!("af_index_{ct}(({g} / {div}UL) % {}UL)", extent.max(&1))
        }
        Generator::Identity { n } => format!(
            "af_index_{ct}((ulong)(({g} / {n}UL) == ({g} % {n}UL)))",
            n = n.max(&1)
        ),
        Generator::Linspace {
            start,
            step,
            end,
            n,
        } if t.fp64 => format!(
            "af_cast_f64_{ct}(({g} + 1 == {n}UL) ? {} : {} + {} * (f64)({g}))",
            f64_literal(*end),
            f64_literal(*start),
            f64_literal(*step)
        ),
        // Without f64 the points are computed in f32 (linspace makes floats only, so f32 here).
        Generator::Linspace {
            start,
            step,
            end,
            n,
        } => format!(
            "af_cast_f32_{ct}(({g} + 1 == {n}UL) ? {} : {} + {} * (f32)({g}))",
            f32_literal(*end as f32),
            f32_literal(*start as f32),
            f32_literal(*step as f32)
        ),
        Generator::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => format!(
            "af_{}_{ct}({}u, {}u, {counter}UL + {g}{})",
            random_name(*alg, *dist),
            key[0],
            key[1],
            range_arg(*dist, &format!("{range}u"))
        ),
    }
}

fn f64_literal(x: f64) -> String {
    if x.is_nan() {
        "(f64)NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "(f64)INFINITY"
        } else {
            "(-(f64)INFINITY)"
        }
        .into()
    } else {
        format!("{x:?}")
    }
}

fn f32_literal(x: f32) -> String {
    if x.is_nan() {
        "NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "INFINITY" } else { "(-INFINITY)" }.into()
    } else {
        // f32's shortest round-trip decimal, read by OpenCL C as a float.
        format!("{x:?}f")
    }
}

/// `code` with every line indented by `levels` two-space steps.
fn indent(code: &str, levels: usize) -> String {
    let pad = "  ".repeat(levels);
    code.lines().map(|l| format!("{pad}{l}\n")).collect()
}
