//! OpenCL C renderer for the GPU executors: one fused kernel becomes a [`GpuPlan`] whose source is
//! the primitive library (`primitives/opencl/arrayflow.cl`) followed by the kernel's entry points.
//! The domain's shape and length are literals in the source; constants and random streams arrive
//! as parameters (one `ulong` argument per slot), so the source does not depend on their values.
//!
//! Every entry runs work-groups of [`LOCAL`] threads, in grid-stride loops (at most
//! [`MAX_GROUPS`] groups; element-wise kernels up to 2^20). Without reductions the plan is one
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
//! - for C > 1, a second pass `af_final` (a work-group per result) combines the C partials, its
//!   threads striding through them, then a tree (argmax/argmin ties go to the smaller index
//!   whatever the order of combination, so results match the CPU's).
//!
//! Reductions accumulate in the element type (integers wrap), except f32 sums and products, which
//! accumulate in f64 on devices that compute f64, as the CPU does.
//!
//! Scratch buffers, in order: for C > 1, per reduction its value partials (`O * C` elements of the
//! reduced register's type) and, for argmax/argmin, its index partials (`O * C` u32); then, when
//! the kernel divides integers, the fault word. Arguments of `af_kernel`: inputs (`__global const`),
//! outputs, scratch buffers, then the parameter slots. Arguments of `af_final`: per reduction its
//! output, its value partials and (argmax/argmin) its index partials.

use super::c::ctype;
use super::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported, elem_bytes, tuning};
use crate::ir::{BinaryOp, DType, GenKind, RandomDist, ReduceOp, contiguous_strides};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, ParamKind};
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

/// Whether the kernel touches f64 values anywhere.
fn uses_f64(k: &FusedKernel) -> bool {
    k.inputs
        .iter()
        .chain(&k.outputs)
        .chain(&k.reg_dtypes)
        .any(|&d| d == DType::F64)
        || k.params.contains(&ParamKind::Const(DType::F64))
}

/// How a kernel's domain is spread over work-groups (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Elementwise,
    /// `threads` (T) threads per result; `chunks` (C) work-groups per result, each reducing
    /// `chunk` elements of the reduced extent (C > 1 only with T = [`LOCAL`]).
    Reduce {
        threads: u64,
        chunks: u64,
        chunk: u64,
    },
}

/// Work-group slots a reduction's first pass loops over: (result, chunk) pairs, with results
/// packed `LOCAL / threads` to a group.
fn slots(outer: u64, threads: u64, chunks: u64) -> u64 {
    outer.div_ceil(LOCAL as u64 / threads) * chunks
}

fn layout(k: &FusedKernel) -> Layout {
    let (outer, inner) = (k.domain.outer as u64, k.domain.inner as u64);
    if k.reductions.is_empty() {
        return Layout::Elementwise;
    }
    let threads = inner
        .div_ceil(ELEMENTS_PER_THREAD)
        .next_power_of_two()
        .min(LOCAL as u64);
    let wanted = if threads == LOCAL as u64 {
        TARGET_GROUPS
            .div_ceil(outer.max(1))
            .min(inner.div_ceil(MIN_CHUNK))
            .max(1)
    } else {
        1
    };
    let chunk = inner.div_ceil(wanted);
    // Quads of a contiguous extent stay whole within a chunk (see `reduction_loop`).
    let chunk = if inner % 4 == 0 {
        chunk.next_multiple_of(4)
    } else {
        chunk
    };
    Layout::Reduce {
        threads,
        chunks: inner.div_ceil(chunk.max(1)).max(1),
        chunk,
    }
}

/// Decisions shared by the entries of one rendered kernel.
struct Frame {
    lay: Layout,
    /// Per reduction, the type it accumulates in: its register's, except f32 sums and products,
    /// which accumulate in f64 on devices that compute it (as the CPU does).
    acc: Vec<DType>,
    /// Bytes of each scratch buffer ([`GpuPlan::scratch`]).
    scratch: Vec<u64>,
    /// Per reduction (C > 1): its value partials and, for argmax/argmin, its index partials.
    partials: Vec<(u32, Option<u32>)>,
    fault: Option<u32>,
}

fn is_arg(op: ReduceOp) -> bool {
    matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin)
}

/// Whether an instruction divides integers (and so may fault).
fn faults(k: &FusedKernel, ins: &Instr) -> bool {
    matches!(ins, Instr::Binary { op: BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod, a, .. }
        if k.reg_dtypes[*a as usize].is_int())
}

fn frame(k: &FusedKernel, t: Target) -> Frame {
    let lay = layout(k);
    let acc = k
        .reductions
        .iter()
        .map(|r| match (r.op, k.reg_dtypes[r.reg as usize]) {
            (ReduceOp::Sum | ReduceOp::Prod, DType::F32) if t.fp64 => DType::F64,
            (_, d) => d,
        })
        .collect();
    let mut f = Frame {
        lay,
        acc,
        scratch: Vec::new(),
        partials: Vec::new(),
        fault: None,
    };
    if let Layout::Reduce { chunks, .. } = lay
        && chunks > 1
    {
        let n = k.domain.outer as u64 * chunks;
        for (r, &d) in k.reductions.iter().zip(&f.acc) {
            f.scratch.push(n * elem_bytes(d, false));
            let value = f.scratch.len() as u32 - 1;
            let index = is_arg(r.op).then(|| {
                f.scratch.push(n * 4);
                f.scratch.len() as u32 - 1
            });
            f.partials.push((value, index));
        }
    }
    if k.instrs.iter().any(|i| faults(k, i)) {
        f.scratch.push(4);
        f.fault = Some(f.scratch.len() as u32 - 1);
    }
    f
}

/// Renders `k` for an OpenCL device.
pub fn render(k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
    if !t.fp64 && uses_f64(k) {
        return Err(Unsupported("the device does not compute f64".into()));
    }
    let f = frame(k, t);
    let mut kernel_bufs: Vec<BufArg> = (0..k.inputs.len() as u32).map(BufArg::Input).collect();
    kernel_bufs.extend((0..k.outputs.len() as u32).map(BufArg::Output));
    kernel_bufs.extend((0..f.scratch.len() as u32).map(BufArg::Scratch));
    if (kernel_bufs.len() + k.params.len()) * 8 > MAX_ARG_BYTES {
        return Err(Unsupported(format!(
            "{} buffers and {} parameters exceed OpenCL's kernel argument space",
            kernel_bufs.len(),
            k.params.len()
        )));
    }
    let mut source = prelude(t);
    source.push_str(&kernel_entry(k, t, &f));
    let (outer, len) = (k.domain.outer as u64, k.domain.len() as u64);
    let groups = match f.lay {
        Layout::Elementwise if tuning().opencl_vector => vector_groups(len) as u32,
        Layout::Elementwise => groups_for(len, LOCAL as u64 * UNROLL),
        Layout::Reduce {
            threads, chunks, ..
        } => groups_for(slots(outer, threads, chunks), 1),
    };
    let mut passes = vec![Pass {
        entry: "af_kernel".into(),
        buffers: kernel_bufs,
        params: !k.params.is_empty(),
        groups,
        local: LOCAL,
    }];
    if !f.partials.is_empty() {
        let (src, buffers) = final_entry(k, &f);
        source.push_str(&src);
        passes.push(Pass {
            entry: "af_final".into(),
            buffers,
            params: false,
            groups: groups_for(outer, 1),
            local: LOCAL,
        });
    }
    Ok(GpuPlan {
        source,
        fault: f.fault,
        scratch: f.scratch,
        passes,
        immediate_words: None,
    })
}

/// The parameters of `af_kernel`, in `Pass::buffers` order, then the parameter slots.
fn kernel_args(k: &FusedKernel, f: &Frame) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    // Every buffer argument is a distinct device buffer (inputs may repeat, but are only read),
    // so `restrict` holds and lets the compiler schedule the loads of unrolled elements early.
    for (p, d) in k.inputs.iter().enumerate() {
        args.push(format!("__global const {} *restrict in{p}", ctype(*d)));
    }
    for (o, d) in k.outputs.iter().enumerate() {
        args.push(format!("__global {} *restrict out{o}", ctype(*d)));
    }
    for (&(v, i), &d) in f.partials.iter().zip(&f.acc) {
        args.push(format!("__global {} *restrict af_s{v}", ctype(d)));
        if let Some(i) = i {
            args.push(format!("__global u32 *restrict af_s{i}"));
        }
    }
    if f.fault.is_some() {
        args.push("__global u32 *restrict af_fault".into());
    }
    for slot in 0..k.params.len() {
        args.push(format!("ulong p{slot}"));
    }
    args
}

/// `af_kernel`: its signature, constants, and the layout's loops around the element body.
fn kernel_entry(k: &FusedKernel, t: Target, f: &Frame) -> String {
    let mut s = String::with_capacity(4096);
    let _ = writeln!(
        s,
        "\n{ENTRY_ATTR}\nvoid af_kernel({}) {{",
        kernel_args(k, f).join(", ")
    );
    if let Layout::Reduce { .. } = f.lay {
        s.push_str(&local_decls(k));
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
    if f.fault.is_some() {
        s.push_str("  u32 fault = 0u;\n");
    }
    let len = k.domain.len();
    match f.lay {
        Layout::Elementwise if tuning().opencl_vector => s.push_str(&vector_loop(k, t, len as u64)),
        Layout::Elementwise => {
            // UNROLL elements per trip, a global size apart: each is coalesced across the
            // work-group and their loads are independent, so more bytes are in flight per thread.
            // A 32-bit loop counter where the domain allows (64-bit compares and adds take two
            // instructions each on GPUs); `lin` stays 64-bit for the index arithmetic.
            let (ty, sfx) = if len < 1 << 31 {
                ("uint", "u")
            } else {
                ("ulong", "UL")
            };
            let _ = writeln!(
                s,
                "  const {ty} gs = get_global_size(0);\n  \
                 for ({ty} i = get_global_id(0); i < {len}{sfx}; i += {UNROLL}{sfx} * gs) {{"
            );
            let body = element_body(k, t, Access::Scalar);
            for u in 0..UNROLL {
                let guard = if u == 0 {
                    String::new()
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
        Layout::Reduce {
            threads,
            chunks,
            chunk,
        } => s.push_str(&reduction_loop(k, t, f, (threads, chunks, chunk))),
    }
    if f.fault.is_some() {
        s.push_str("  if (fault != 0u) af_fault[0] = fault;\n");
    }
    s.push_str("}\n");
    s
}

/// The first pass of a reduction: each work-group slot's results (or chunk of one result), their
/// threads running `body` over their share of the elements and folding them into the running
/// values, then a tree per reduction writing the partials or results.
fn reduction_loop(
    k: &FusedKernel,
    t: Target,
    f: &Frame,
    (threads, chunks, chunk): (u64, u64, u64),
) -> String {
    let (outer, inner) = (k.domain.outer, k.domain.inner);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  for (ulong g = get_group_id(0); g < {n}UL; g += get_num_groups(0)) {{\n    \
         const ulong o = (g / {chunks}UL) * {per}UL + lid / {threads}u, \
         j0 = (g % {chunks}UL) * {chunk}UL, j1 = min(j0 + {chunk}UL, {inner}UL);",
        n = slots(outer as u64, threads, chunks),
        per = LOCAL as u64 / threads,
    );
    s.push_str(&indent(&acc_init(k, f, 0), 2));
    // UNROLL elements per trip, `threads` apart, each folded into its own running values (lanes),
    // so their loads and folds are independent; then the rest one at a time, and the lanes folded
    // together. 32-bit counters when the extent allows.
    let ty = if (inner as u64) + UNROLL * threads < 1 << 32 {
        "uint"
    } else {
        "ulong"
    };
    for u in 1..UNROLL {
        s.push_str(&indent(&acc_init(k, f, u), 2));
    }
    // Element `jj` of the extent (an expression), read as `access` says, folded into lane `u`.
    let lane = |jj: String, access: Access, u: u64| -> String {
        let mut b =
            format!("{{\n  const {ty} jj = {jj};\n  const ulong lin = o * {inner}UL + jj;\n");
        b.push_str(&indent(&element_body(k, t, access), 1));
        b.push_str(&indent(&acc_steps(k, f, u), 1));
        b.push_str("}\n");
        b
    };
    if tuning().opencl_vector && inner % 4 == 0 && chunk % 4 == 0 {
        // Quads: each thread loads four consecutive elements of every input read in place and
        // folds lane u into running values u (the chunk bounds are multiples of four).
        let _ = writeln!(
            s,
            "    if (o < {outer}UL) {{\n      \
             for ({ty} q = ({ty})(j0 / 4UL) + lid % {threads}u; q < ({ty})(j1 / 4UL); q += {threads}u) {{\n        \
             const ulong lq = o * {}UL + q;",
            inner / 4
        );
        s.push_str(&indent(&vector_io(k, "lq", false), 4));
        for u in 0..4 {
            s.push_str(&indent(
                &lane(format!("4u * q + {u}u"), Access::Lane(u), u),
                4,
            ));
        }
        s.push_str(&indent(&vector_io(k, "lq", true), 4));
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
        s.push_str(&indent(&fold_lane(k, f, u), 3));
    }
    s.push_str("    }\n");
    for (ri, r) in k.reductions.iter().enumerate() {
        let dest = if chunks > 1 {
            let (v, i) = f.partials[ri];
            Dest::Partial(v, i)
        } else {
            Dest::Output(r.output)
        };
        s.push_str(&indent(&tree(k, f, ri, threads, dest), 2));
    }
    s.push_str("  }\n");
    s
}

/// `af_final`: combines each result's C partials (in a tree over the work-group) into the outputs.
fn final_entry(k: &FusedKernel, f: &Frame) -> (String, Vec<BufArg>) {
    let Layout::Reduce { chunks, .. } = f.lay else {
        unreachable!("a final pass follows chunked reductions only")
    };
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    for (ri, r) in k.reductions.iter().enumerate() {
        let (d, (v, i)) = (f.acc[ri], f.partials[ri]);
        args.push(format!(
            "__global {} *out{}",
            ctype(k.outputs[r.output as usize]),
            r.output
        ));
        args.push(format!("__global const {} *af_s{v}", ctype(d)));
        bufs.extend([BufArg::Output(r.output), BufArg::Scratch(v)]);
        if let Some(i) = i {
            args.push(format!("__global const u32 *af_s{i}"));
            bufs.push(BufArg::Scratch(i));
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "\n{ENTRY_ATTR}\nvoid af_final({}) {{", args.join(", "));
    s.push_str(&local_decls(k));
    let _ = writeln!(
        s,
        "  for (ulong o = get_group_id(0); o < {}UL; o += get_num_groups(0)) {{",
        k.domain.outer
    );
    s.push_str(&indent(&acc_init(k, f, 0), 2));
    let _ = writeln!(
        s,
        "    for (ulong c = lid; c < {chunks}UL; c += {LOCAL}UL) {{"
    );
    for (ri, r) in k.reductions.iter().enumerate() {
        let (d, (v, i)) = (f.acc[ri], f.partials[ri]);
        let at = format!("o * {chunks}UL + c");
        let idx = i.map(|i| format!("af_s{i}[{at}]"));
        let step = combine(
            r.op,
            d,
            (&format!("acc{ri}"), &format!("idx{ri}")),
            (&format!("af_s{v}[{at}]"), idx.as_deref().unwrap_or("")),
        );
        let _ = writeln!(s, "      {step}");
    }
    s.push_str("    }\n");
    for (ri, r) in k.reductions.iter().enumerate() {
        s.push_str(&indent(
            &tree(k, f, ri, LOCAL as u64, Dest::Output(r.output)),
            2,
        ));
    }
    s.push_str("  }\n}\n");
    (s, bufs)
}

/// Local memory for the tree reductions (reused by each reduction in turn) and the thread's index.
fn local_decls(k: &FusedKernel) -> String {
    let mut s = format!("  __local ulong af_lv[{LOCAL}];\n");
    if k.reductions.iter().any(|r| is_arg(r.op)) {
        let _ = writeln!(s, "  __local u32 af_li[{LOCAL}];");
    }
    s.push_str("  const u32 lid = get_local_id(0);\n");
    s
}

/// Where a work-group's reduced value goes.
enum Dest {
    /// The output buffer, at the result's index `o`.
    Output(u32),
    /// Value (and index) partial buffers, at the group's pair index.
    Partial(u32, Option<u32>),
}

/// Combines the running `acc{ri}` (and `idx{ri}`) of each result's `threads` threads (adjacent
/// local ids) in a tree in local memory; the first thread of each result in range writes it to
/// `dest` (a partial at the slot `g`, or the output at `o`).
fn tree(k: &FusedKernel, f: &Frame, ri: usize, threads: u64, dest: Dest) -> String {
    let r = &k.reductions[ri];
    let d = f.acc[ri];
    let t = ctype(d);
    let out = k.outputs[r.output as usize];
    let result = if out == d {
        "lv[lid]".to_string()
    } else {
        format!("af_cast_{t}_{}(lv[lid])", ctype(out))
    };
    let step = combine(
        r.op,
        d,
        ("lv[lid]", "af_li[lid]"),
        ("lv[lid + s]", "af_li[lid + s]"),
    );
    let write = match dest {
        Dest::Output(o) if is_arg(r.op) => format!("out{o}[o] = af_li[lid];"),
        Dest::Output(o) => format!("out{o}[o] = {result};"),
        Dest::Partial(v, Some(i)) => format!("af_s{v}[g] = lv[lid]; af_s{i}[g] = af_li[lid];"),
        Dest::Partial(v, None) => format!("af_s{v}[g] = lv[lid];"),
    };
    let keep_index = if is_arg(r.op) {
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
        outer = k.domain.outer,
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
fn acc_init(k: &FusedKernel, f: &Frame, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in k.reductions.iter().enumerate() {
        let d = f.acc[ri];
        let (acc, idx) = lane_names(ri, u);
        let _ = write!(s, "{} {acc} = {};", ctype(d), identity(r.op, d));
        if is_arg(r.op) {
            let _ = write!(s, " u32 {idx} = UINT_MAX;");
        }
        s.push('\n');
    }
    s
}

/// Folds lane `u`'s running values into lane 0's (argmax/argmin ties go to the smaller index
/// whatever the order, as in the tree).
fn fold_lane(k: &FusedKernel, f: &Frame, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in k.reductions.iter().enumerate() {
        let (a, ai) = lane_names(ri, 0);
        let (b, bi) = lane_names(ri, u);
        let _ = writeln!(s, "{}", combine(r.op, f.acc[ri], (&a, &ai), (&b, &bi)));
    }
    s
}

/// Folds the current element (index `jj` within the reduced extent) into each reduction's lane
/// `u`.
fn acc_steps(k: &FusedKernel, f: &Frame, u: u64) -> String {
    let mut s = String::new();
    for (ri, r) in k.reductions.iter().enumerate() {
        let (reg, acc) = (k.reg_dtypes[r.reg as usize], f.acc[ri]);
        let value = if reg == acc {
            format!("r{}", r.reg)
        } else {
            format!("af_cast_{}_{}(r{})", ctype(reg), ctype(acc), r.reg)
        };
        let (a, ai) = lane_names(ri, u);
        let step = combine(r.op, acc, (&a, &ai), (&value, "(u32)jj"));
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

/// The OpenCL vector type of four `d` elements.
fn vec4(d: DType) -> &'static str {
    match d {
        DType::F32 => "float4",
        DType::F64 => "double4",
        DType::I32 => "int4",
        DType::U32 => "uint4",
        DType::Bool => "uchar4",
    }
}

/// The element-wise loop over quads: each thread loads four consecutive elements of every input
/// read in place (`vin{p}`), runs the element body once per lane, and stores the four results of
/// each output at once (`vout{o}`). With one quad per thread and a thread per quad (the default
/// up to 2^28 quads) there is no loop; with Q = [`super::gpu::Tuning::opencl_quads`] > 1 a main
/// loop takes Q quads a global size apart per trip (their loads issued first, so more bytes are in
/// flight per thread) and a second loop the quads left; the last `len % 4` elements take the
/// scalar body.
fn vector_loop(k: &FusedKernel, t: Target, len: u64) -> String {
    let quads = len / 4;
    let ty = if quads < 1 << 31 { "uint" } else { "ulong" };
    let q_trip = tuning().opencl_quads;
    // The global size, for the loops and the scalar tail.
    let gs = format!("  const {ty} gs = get_global_size(0);\n");
    if q_trip == 1 && vector_groups(len) * LOCAL as u64 >= quads {
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
        s.push_str(&indent(&quad_block(k, t, "i", None), 2));
        s.push_str("  }\n");
        return s + &scalar_tail(k, t, len);
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
            s.push_str(&indent(&vector_loads(k, &at(j), &format!("_{j}")), 2));
        }
        for j in 0..q_trip {
            s.push_str(&indent(&quad_block(k, t, &at(j), Some(j)), 2));
        }
        s.push_str("  }\n");
    }
    let _ = writeln!(s, "  for (; i < ({ty}){quads}UL; i += gs) {{");
    s.push_str(&indent(&quad_block(k, t, "i", None), 2));
    s.push_str("  }\n");
    s + &scalar_tail(k, t, len)
}

/// Work-groups of a vector element-wise kernel over `len` elements: enough for
/// [`super::gpu::Tuning::opencl_quads`] quads per thread, at most
/// [`super::gpu::Tuning::opencl_groups`].
fn vector_groups(len: u64) -> u64 {
    (len / 4)
        .max(1)
        .div_ceil(LOCAL as u64 * tuning().opencl_quads)
        .min(tuning().opencl_groups)
}

/// The scalar loop over the last `len % 4` elements of a vector element-wise kernel (`gs` is
/// the global size).
fn scalar_tail(k: &FusedKernel, t: Target, len: u64) -> String {
    if len.is_multiple_of(4) {
        return String::new();
    }
    let mut s = format!(
        "  for (ulong lin = {}UL + get_global_id(0); lin < {len}UL; lin += gs) {{\n",
        len / 4 * 4
    );
    s.push_str(&indent(&element_body(k, t, Access::Scalar), 2));
    s.push_str("  }\n");
    s
}

/// One quad `q` of an element-wise kernel in a block of its own: its input vectors (loaded here,
/// or with `loaded = Some(j)` taken from `vin{p}_{j}` loaded before), the element body per lane,
/// and the output vectors' stores.
fn quad_block(k: &FusedKernel, t: Target, q: &str, loaded: Option<u64>) -> String {
    let mut s = String::from("{\n");
    let mut inputs = match loaded {
        None => vector_loads(k, q, ""),
        Some(j) => vector_inputs(k)
            .into_iter()
            .map(|p| {
                format!(
                    "const {} vin{p} = vin{p}_{j};\n",
                    vec4(k.inputs[p as usize])
                )
            })
            .collect(),
    };
    inputs.push_str(&vector_outputs(k));
    s.push_str(&indent(&inputs, 1));
    for u in 0..4 {
        let _ = writeln!(s, "  {{\n    const ulong lin = 4UL * ({q}) + {u}UL;");
        s.push_str(&indent(&element_body(k, t, Access::Lane(u)), 2));
        s.push_str("  }\n");
    }
    s.push_str(&indent(&vector_io(k, q, true), 1));
    s.push_str("}\n");
    s
}

/// `const T4 vin{p}{suffix} = ((__global const T4 *)in{p})[q];` for every input some load reads
/// in place. Quads are read and written through vector pointers, not `vload4`/`vstore4`: a buffer
/// starts 16-byte aligned and quad `q` lies at `16 q` bytes, and only through a vector pointer
/// does NVIDIA's compiler know it (its PTX for `vstore4` on a `float *` is four scalar stores).
fn vector_loads(k: &FusedKernel, q: &str, suffix: &str) -> String {
    let mut s = String::new();
    for p in vector_inputs(k) {
        let d = k.inputs[p as usize];
        let _ = writeln!(
            s,
            "const {v} vin{p}{suffix} = ((__global const {v} *)in{p})[{q}];",
            v = vec4(d)
        );
    }
    s
}

/// Inputs some load reads in place (contiguously), in order.
fn vector_inputs(k: &FusedKernel) -> Vec<u32> {
    let mut read: Vec<u32> = k
        .instrs
        .iter()
        .filter_map(|ins| match ins {
            Instr::Load {
                input,
                map: IndexMap::Contiguous,
                ..
            } => Some(*input),
            _ => None,
        })
        .collect();
    read.sort_unstable();
    read.dedup();
    read
}

/// The vector loads of quad `q` (`vin{p}`, for every input some load reads in place) and the
/// declarations of the output vectors (`vout{o}`, for every element-wise store), or with `store`
/// the stores of those vectors.
fn vector_io(k: &FusedKernel, q: &str, store: bool) -> String {
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
    vector_loads(k, q, "") + &vector_outputs(k)
}

/// Declarations of the output vectors (`vout{o}`, for every element-wise store).
fn vector_outputs(k: &FusedKernel) -> String {
    let mut s = String::new();
    for st in &k.stores {
        let d = k.outputs[st.output as usize];
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
fn element_body(k: &FusedKernel, t: Target, access: Access) -> String {
    let mut s = String::new();
    let may_fault = k.instrs.iter().any(|i| faults(k, i));
    if may_fault {
        s.push_str("u32 bad = 0u;\n");
    }
    let needs_coords = k.instrs.iter().any(|i| match i {
        Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
            *map != IndexMap::Contiguous
        }
        _ => false,
    });
    if needs_coords {
        // Divisions in 32 bits where the domain allows (much cheaper on GPUs).
        let (lin, suffix) = if k.domain.len() <= u32::MAX as usize {
            ("(u32)lin", "u")
        } else {
            ("lin", "UL")
        };
        let shape = &k.domain.shape;
        for (d, (c, n)) in contiguous_strides(shape).iter().zip(shape).enumerate() {
            let _ = writeln!(
                s,
                "const ulong d{d} = ({lin} / {c}{suffix}) % {}{suffix};",
                n.max(&1)
            );
        }
    }
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(s, "{} r{r};", ctype(*d));
    }
    for (i, ins) in k.instrs.iter().enumerate() {
        let value = match (ins, access) {
            (
                Instr::Load {
                    input,
                    map: IndexMap::Contiguous,
                    ..
                },
                Access::Lane(u),
            ) => format!("vin{input}.s{u}"),
            _ => rhs(k, ins, t),
        };
        let _ = writeln!(s, "r{} = {value};", ins.dst());
        if faults(k, ins) {
            let _ = writeln!(s, "if (bad != 0u) {{ fault = {}u; bad = 0u; }}", i + 1);
        }
    }
    for st in &k.stores {
        let _ = match access {
            Access::Scalar => writeln!(s, "out{}[lin] = r{};", st.output, st.reg),
            Access::Lane(u) => writeln!(s, "vout{}.s{u} = r{};", st.output, st.reg),
        };
    }
    s
}

/// The expression an instruction assigns to its register.
fn rhs(k: &FusedKernel, ins: &Instr, t: Target) -> String {
    let ty = |r: u32| k.reg_dtypes[r as usize];
    match ins {
        Instr::Load { input, map, .. } => format!("in{input}[{}]", index(map)),
        Instr::Const { slot, .. } => format!("k{slot}"),
        Instr::Random {
            dst,
            dist,
            key_slot,
            counter_slot,
            map,
        } => format!(
            "af_{}_{}((u32)p{key_slot}, (u32)(p{key_slot} >> 32), p{counter_slot} + {})",
            dist_name(*dist),
            ctype(ty(*dst)),
            index(map)
        ),
        Instr::Gen {
            dst,
            kind,
            shape,
            map,
        } => generator(kind, shape, &index(map), ty(*dst), t),
        Instr::Unary { op, a, .. } => format!("af_{}_{}(r{a})", op.name(), ctype(ty(*a))),
        Instr::Binary { op, a, b, .. } => {
            let f = format!("af_{}_{}", op.name(), ctype(ty(*a)));
            if faults(k, ins) {
                format!("{f}(r{a}, r{b}, &bad)")
            } else {
                format!("{f}(r{a}, r{b})")
            }
        }
        Instr::Select { cond, a, b, .. } => format!("(r{cond} ? r{a} : r{b})"),
        Instr::Cast { to, a, .. } => format!("af_cast_{}_{}(r{a})", ctype(ty(*a)), ctype(*to)),
    }
}

fn dist_name(d: RandomDist) -> &'static str {
    match d {
        RandomDist::Uniform => "uniform",
        RandomDist::Normal => "normal",
    }
}

/// The `ulong` index expression a map selects for the current element.
fn index(map: &IndexMap) -> String {
    let terms = |offset: isize, coef: &[isize]| {
        let mut v = format!("{offset}L");
        for (k, c) in coef.iter().enumerate() {
            if *c != 0 {
                let _ = write!(v, " + {c}L * (long)d{k}");
            }
        }
        v
    };
    match map {
        IndexMap::Contiguous => "lin".into(),
        IndexMap::Strided { offset, strides } => format!("(ulong)({})", terms(*offset, strides)),
        IndexMap::Periodic { dims } => {
            let mut s = String::from("(ulong)(0L");
            for d in dims {
                let m = d.modulus;
                let _ = write!(
                    s,
                    " + ((({}) % {m}L + {m}L) % {m}L) * {}L",
                    terms(d.offset, &d.coef),
                    d.stride
                );
            }
            s.push(')');
            s
        }
    }
}

/// A position-dependent generator's value at index `g` of its own shape, as element type `d`.
fn generator(kind: &GenKind, shape: &[usize], g: &str, d: DType, t: Target) -> String {
    let ct = ctype(d);
    match kind {
        GenKind::Iota { axis } => {
            let cs = contiguous_strides(shape);
            format!(
                "af_index_{ct}(({g} / {}UL) % {}UL)",
                cs[*axis],
                shape[*axis].max(1)
            )
        }
        GenKind::Identity => format!(
            "af_index_{ct}((ulong)(({g} / {n}UL) == ({g} % {n}UL)))",
            n = shape[1].max(1)
        ),
        GenKind::Linspace {
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
        GenKind::Linspace {
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
        GenKind::Random { key, counter, dist } => format!(
            "af_{}_{ct}({}u, {}u, {counter}UL + {g})",
            dist_name(*dist),
            key[0],
            key[1]
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
