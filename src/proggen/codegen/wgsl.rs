//! WGSL renderer (the wgpu executor): one fused kernel becomes a [`GpuPlan`] whose source is the
//! part of the primitive library (`primitives/wgsl/arrayflow.wgsl`) the kernel calls, directly or
//! not, followed by the kernel's entry points.
//!
//! Shapes of plan (work-group size [`LOCAL`], at most [`MAX_GROUPS`] groups, grid-stride loops):
//! - no reduction, quad form (`render_quads`): when every load reads its input in place
//!   (`IndexMap::Contiguous`), every buffer loaded or stored holds 4-byte elements (all do but
//!   f64, which is not rendered) and the domain's length is a positive multiple of 4, one pass
//!   `af_kernel` whose loaded inputs and stored outputs are bound as `array<vec4<T>>` (T the
//!   storage type). Each of the `G` threads takes Q = [`super::gpu::Tuning::wgpu_quads`] quads
//!   (quad `q` is elements `4q .. 4q + 3`) per trip of its main loop, a work-group's Q × [`LOCAL`]
//!   consecutive quads, `q` stepping by `Q * G`, then its quads of the last, partial trip in a
//!   second loop: one 16-byte load per input and quad
//!   (`vin{p} = in{p}[q]`, all of a trip's issued first), the element code once per lane `u`
//!   with `lin = 4u * q + u` (reading
//!   `vin{p}.x`, `.y`, ..., writing `vout{o}.x`, ...; generators, random draws and fault checks
//!   work per lane as in the scalar form), then one 16-byte store per output
//!   (`out{o}[q] = vout{o}`). An input also read through another map would need scalar access,
//!   so such a kernel (and any other that does not qualify) takes the scalar form.
//!   `ARRAYFLOW_WGPU_VECTOR=0` forces the scalar form, for comparison;
//! - no reduction, scalar form: one pass `af_kernel`; each of the `G` threads handles [`UNROLL`]
//!   elements per loop trip, `base + u * G` for `u` in `0..UNROLL` (`base` from the thread's
//!   index, stepping by `UNROLL * G`), each copy of the element code in a block of its own (its
//!   own registers), so the copies' loads are independent and each is coalesced;
//! - reductions over at most [`THREAD_ROW`] elements: one pass `af_kernel`, one thread per result
//!   (it evaluates the kernel over its row and writes the reduced values itself);
//! - longer reductions: pass `af_kernel` runs one work-group per chunk `c` of result `o` (`C`
//!   chunks per result, `chunks`); each thread folds its strided share of the chunk into
//!   [`UNROLL`] independent accumulators (elements `i0 + u * LOCAL`, `i0` stepping by
//!   `UNROLL * LOCAL`, the remainder into the first), folds them into the first in order, then a
//!   tree in workgroup memory combines the threads. With `C == 1` the group writes the outputs;
//!   with more it writes one partial per reduction to scratch at `o * C + c` (argmax/argmin: a
//!   value and an index scratch), and pass `af_final`, one work-group per result, reduces the `C`
//!   partials the same way and writes the outputs.
//!
//! The order in which a reduction combines elements is fixed by the plan, so results do not vary
//! between runs; float sums accumulate in f32 (the CPU accumulates in f64).
//!
//! Parameters (constants, random keys and counters; two u32 words per slot, low word first) are
//! immediate data, `var<immediate> params: array<u32, N>`, when the target takes immediates and
//! the kernel's slots fit in [`IMMEDIATE_BYTES`] (no binding; the executor sets them per
//! dispatch); otherwise they are read from a storage buffer bound after the pass's buffers, as
//! `gpu.rs` describes. `GpuPlan::immediate_words` says which form a program has.
//!
//! Registers live in WGSL locals: f32/i32/u32, and bool as `bool` (stored as one u32 per element).
//! Index arithmetic is u32 (wrapping, exact for any index inside a bindable buffer), so a domain of
//! 2^31 elements or more is not rendered; neither is anything touching f64.

use super::gpu::{BufArg, GpuPlan, Pass, Target, Unsupported, tuning};
use crate::ir::{BinaryOp, DType, GenKind, RandomDist, ReduceOp, contiguous_strides};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, ParamKind, ReduceStore};
use std::fmt::Write;
use std::sync::OnceLock;

/// The primitive library's WGSL source, at the head of every generated program.
pub const LIBRARY: &str = include_str!("../../../primitives/wgsl/arrayflow.wgsl");
/// Work-group size of every pass.
pub const LOCAL: u32 = 256;
/// Most work-groups one pass dispatches (WebGPU's default per-dimension limit).
pub const MAX_GROUPS: u32 = 65535;
/// Reductions over at most this many elements per result run one thread per result.
pub const THREAD_ROW: usize = 64;
/// Work-groups the chunked reduction aims for when there are few results.
const TARGET_GROUPS: usize = 2048;
/// Workgroup memory a pass may use (WebGPU's default `maxComputeWorkgroupStorageSize`).
const MAX_WORKGROUP_BYTES: usize = 16384;
/// Parameter bytes a kernel takes as immediate data (push constants): Vulkan's guaranteed
/// `maxPushConstantsSize`. A kernel with more parameter slots (8 bytes each) than fit reads them
/// from a storage buffer instead.
pub const IMMEDIATE_BYTES: u32 = 128;
/// Elements each thread of a scalar-form element-wise pass, and each thread's accumulators of a
/// chunked reduction, handle per loop trip (independent loads in flight); a quad-form thread
/// takes one quad of four elements per trip instead.
pub const UNROLL: u32 = 4;
/// Largest domain rendered (indices are u32, signed offsets i32).
const MAX_LEN: usize = 1 << 31;

/// One top-level item of the library (a `fn`, `const` or `var<private>` with the comment lines
/// above it).
struct Item {
    name: &'static str,
    text: &'static str,
    /// Indices of the items its code names.
    deps: Vec<usize>,
}

/// The library cut into items, in file order, after its header comment.
fn library_items() -> &'static (String, Vec<Item>) {
    static ITEMS: OnceLock<(String, Vec<Item>)> = OnceLock::new();
    ITEMS.get_or_init(|| {
        let lines: Vec<&'static str> = LIBRARY.split_inclusive('\n').collect();
        let name_of = |l: &'static str| {
            let rest = l
                .strip_prefix("fn ")
                .or_else(|| l.strip_prefix("const "))
                .or_else(|| l.strip_prefix("var<private> "))?;
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
        };
        // An item starts at its comment block (or its first line when it has none).
        let mut starts = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if name_of(l).is_some() {
                let mut s = i;
                while s > 0 && lines[s - 1].starts_with("//") {
                    s -= 1;
                }
                starts.push((s, i));
            }
        }
        let offset = |i: usize| lines[..i].iter().map(|l| l.len()).sum::<usize>();
        let header = LIBRARY[..offset(starts[0].0)].to_string();
        let mut items: Vec<Item> = starts
            .iter()
            .enumerate()
            .map(|(n, &(s, first))| {
                let end = starts.get(n + 1).map_or(lines.len(), |next| next.0);
                Item {
                    name: name_of(lines[first]).unwrap_or_default(),
                    text: &LIBRARY[offset(s)..offset(end)],
                    deps: Vec::new(),
                }
            })
            .collect();
        let deps: Vec<Vec<usize>> = items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let mut d = named_items(&items, code_of(it.text));
                d.retain(|&j| j != i);
                d
            })
            .collect();
        for (it, d) in items.iter_mut().zip(deps) {
            it.deps = d;
        }
        (header, items)
    })
}

/// `text` without its comments.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Indices of the items whose names occur as identifiers in `code`.
fn named_items(items: &[Item], code: String) -> Vec<usize> {
    let mut found: Vec<usize> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("af_") || w.starts_with("AF_"))
        .filter_map(|w| items.iter().position(|it| it.name == w))
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Library items with a variant for a device whose `fma` rounds once (`Target::fused_fma`): the
/// variant (second) gives the same values as the item (first) and replaces it, renamed.
const FUSED_FMA_VARIANTS: &[(&str, &str)] = &[("af_residual", "af_residual_fused")];

/// The index of the item that stands for item `i` on target `t` (its variant, or itself).
fn item_for(items: &[Item], i: usize, t: Target) -> usize {
    FUSED_FMA_VARIANTS
        .iter()
        .find(|(name, _)| t.fused_fma && *name == items[i].name)
        .and_then(|(_, variant)| items.iter().position(|it| it.name == *variant))
        .unwrap_or(i)
}

/// The library's header and every item `code` needs, directly or through other items, in
/// library order (so the text is the same for the same kernel), each as target `t` takes it.
fn library_for(code: &str, t: Target) -> String {
    let (header, items) = library_items();
    let mut need = vec![false; items.len()];
    let mut stack = named_items(items, code.to_string());
    while let Some(i) = stack.pop() {
        if !need[i] {
            need[i] = true;
            stack.extend(&items[item_for(items, i, t)].deps);
        }
    }
    let mut s = header.clone();
    for (i, it) in items.iter().enumerate().filter(|(i, _)| need[*i]) {
        let taken = &items[item_for(items, i, t)];
        if taken.name == it.name {
            s.push_str(it.text);
        } else {
            let (from, to) = (format!("fn {}(", taken.name), format!("fn {}(", it.name));
            s.push_str(&taken.text.replacen(&from, &to, 1));
        }
    }
    s
}

/// The library items `kernel` needs on target `t`, then `kernel`.
fn with_library(kernel: String, t: Target) -> String {
    library_for(&kernel, t) + &kernel
}

/// The first statement of every entry point: sets the library's opaque zero (`af_zero`, which
/// `af_mul_f32` and the exact `sqrt` and `/` use so the driver cannot fuse a product into an add)
/// from `id`, the entry's `workgroup_id` or `global_invocation_id`. Every dispatch is
/// one-dimensional, so `id.z` is 0 at run time, but the dispatch size is not known when the
/// driver compiles the pipeline. Naming `af_zero` also pulls its declaration into the program.
fn set_zero(id: &str) -> String {
    format!("  af_zero = {id}.z;\n")
}

/// Type name of an element type in the library's function names (as `arrayflow.h` spells it).
pub fn tname(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
        DType::U32 => "u32",
        DType::Bool => "b8",
    }
}

/// WGSL type of a register of element type `d`.
fn reg_type(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        d => tname(d),
    }
}

/// WGSL type of a storage element of type `d` (bool is one u32, 0 or 1).
pub fn storage_type(d: DType) -> &'static str {
    match d {
        DType::Bool => "u32",
        d => tname(d),
    }
}

/// An exact f32 literal (a bit pattern; NaN and infinities through a call, since a constant
/// expression must be finite).
fn f32_lit(x: f32) -> String {
    if x.is_finite() {
        format!("bitcast<f32>(0x{:08x}u)", x.to_bits())
    } else {
        format!("af_bits_f32(0x{:08x}u, 0u)", x.to_bits())
    }
}

/// A u32 literal of `v` modulo 2^32 (index arithmetic wraps, so negative offsets work too).
fn u32_lit(v: isize) -> String {
    format!("{}u", v as i64 as u32)
}

fn unsupported(what: impl Into<String>) -> Unsupported {
    Unsupported(what.into())
}

/// Every reason this target cannot run `k`, first one found.
fn check(k: &FusedKernel) -> Result<(), Unsupported> {
    if k.domain.len() >= MAX_LEN {
        return Err(unsupported(format!(
            "wgsl: domain of {} elements needs 64-bit indices",
            k.domain.len()
        )));
    }
    let f64_used = k.reg_dtypes.contains(&DType::F64)
        || k.inputs.contains(&DType::F64)
        || k.outputs.contains(&DType::F64)
        || k.params.contains(&ParamKind::Const(DType::F64));
    if f64_used {
        return Err(unsupported("f64 is not available on WGSL targets"));
    }
    for ins in &k.instrs {
        if let Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } = ins {
            check_map(map, &k.domain.shape)?;
        }
    }
    Ok(())
}

/// A periodic map computes `offset + coef . d` in i32 and reduces it with an i32 modulus.
fn check_map(map: &IndexMap, shape: &[usize]) -> Result<(), Unsupported> {
    let IndexMap::Periodic { dims } = map else {
        return Ok(());
    };
    for d in dims {
        let reach = d.offset.unsigned_abs() as u128
            + d.coef
                .iter()
                .zip(shape)
                .map(|(c, n)| c.unsigned_abs() as u128 * n.saturating_sub(1) as u128)
                .sum::<u128>();
        if reach >= 1 << 31 || d.modulus == 0 || d.modulus >= 1 << 30 {
            return Err(unsupported(
                "wgsl: periodic index exceeds 32-bit arithmetic",
            ));
        }
    }
    Ok(())
}

/// The u32 index expression a map selects for the current element.
fn index(map: &IndexMap) -> String {
    match map {
        IndexMap::Contiguous => "lin".into(),
        IndexMap::Strided { offset, strides } => {
            let mut s = format!("({}", u32_lit(*offset));
            for (k, st) in strides.iter().enumerate() {
                if *st != 0 {
                    let _ = write!(s, " + {} * d{k}", u32_lit(*st));
                }
            }
            s.push(')');
            s
        }
        IndexMap::Periodic { dims } => {
            let mut s = String::from("(0u");
            for d in dims {
                let mut v = format!("({}i", d.offset);
                for (k, c) in d.coef.iter().enumerate() {
                    if *c != 0 {
                        let _ = write!(v, " + ({c}i) * i32(d{k})");
                    }
                }
                v.push(')');
                let m = d.modulus;
                let _ = write!(s, " + u32(({v} % {m}i + {m}i) % {m}i) * {}u", d.stride);
            }
            s.push(')');
            s
        }
    }
}

/// Whether the op's library function takes a fault flag (integer division by zero).
fn faults(op: BinaryOp, input: DType) -> bool {
    input.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod)
}

fn random_fn(dist: RandomDist, t: DType) -> String {
    let f = match dist {
        RandomDist::Uniform => "uniform",
        RandomDist::Normal => "normal",
    };
    format!("af_{f}_{}", tname(t))
}

/// A position-dependent generator's value at generator index `g` (an u32 expression).
fn generator(kind: &GenKind, shape: &[usize], g: &str, t: DType) -> String {
    let tn = tname(t);
    match kind {
        GenKind::Iota { axis } => {
            let cs = contiguous_strides(shape);
            format!(
                "af_cast_u32_{tn}(({g} / {}u) % {}u)",
                cs[*axis], shape[*axis]
            )
        }
        GenKind::Identity => format!(
            "af_cast_b8_{tn}(({g} / {n}u) == ({g} % {n}u))",
            n = shape[1]
        ),
        GenKind::Linspace {
            start,
            step,
            end,
            n,
        } => {
            // start + step * g with start and step each split into two f32 (about 48 bits).
            let (s_hi, t_hi) = (*start as f32, *step as f32);
            let (s_lo, t_lo) = ((start - s_hi as f64) as f32, (step - t_hi as f64) as f32);
            let gf = format!("af_cast_u32_f32({g})");
            let v = format!(
                "select({} + ({} * {gf} + ({} * {gf} + {})), {}, {g} + 1u == {n}u)",
                f32_lit(s_hi),
                f32_lit(t_hi),
                f32_lit(t_lo),
                f32_lit(s_lo),
                f32_lit(*end as f32)
            );
            format!("af_cast_f32_{tn}({v})")
        }
        GenKind::Random { key, counter, dist } => format!(
            "{}({}u, {}u, af_add64(vec2<u32>({}u, {}u), {g}))",
            random_fn(*dist, t),
            key[0],
            key[1],
            *counter as u32,
            (*counter >> 32) as u32
        ),
    }
}

/// Buffers of one entry point: their declarations and the pass's `buffers` list, in binding order.
#[derive(Default)]
struct Bindings {
    decls: String,
    buffers: Vec<BufArg>,
}

impl Bindings {
    fn add(&mut self, name: &str, read_only: bool, elem: &str, arg: BufArg) {
        let access = if read_only { "read" } else { "read_write" };
        let _ = writeln!(
            self.decls,
            "@group(0) @binding({}) var<storage, {access}> {name}: array<{elem}>;",
            self.buffers.len()
        );
        self.buffers.push(arg);
    }
    /// Declares the parameter words of `slots` parameter slots: immediates when the target takes
    /// them and they fit in [`IMMEDIATE_BYTES`], else a storage buffer after the buffers (see
    /// `gpu.rs`); the immediate words declared (`GpuPlan::immediate_words`).
    fn add_params(&mut self, slots: usize, immediates: bool) -> Option<u32> {
        let words = immediate_words_for(slots).filter(|_| immediates);
        match words {
            Some(words) => {
                let _ = writeln!(self.decls, "var<immediate> params: array<u32, {words}>;");
            }
            None => {
                let _ = writeln!(
                    self.decls,
                    "@group(0) @binding({}) var<storage, read> params: array<u32>;",
                    self.buffers.len()
                );
            }
        }
        words
    }
}

/// Words of immediate data a kernel with `slots` parameter slots declares, or `None` when they
/// do not fit in [`IMMEDIATE_BYTES`] (the kernel then reads a storage buffer).
fn immediate_words_for(slots: usize) -> Option<u32> {
    let words = 2 * slots.max(1);
    (words * 4 <= IMMEDIATE_BYTES as usize).then_some(words as u32)
}

/// How the element code reads the inputs it loads in place (`IndexMap::Contiguous`) and writes
/// its element-wise stores.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// `in{p}[lin]`, `out{o}[lin] = v`.
    Scalar,
    /// Lane `u` (0..4) of quad `vin{p}` loaded before the lanes, and of `vout{o}`, stored after
    /// them; loads through other maps are not rendered in this form.
    Lane(usize),
}

/// Component names of a `vec4`, by lane.
const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// The per-element code, run with the element's linear index `lin` in scope: evaluates the
/// register program, reports faults and writes the element-wise stores.
struct Body {
    /// Declarations at the top of the entry (parameter values, fault flag).
    prelude: String,
    /// Statements run for each element (they declare the registers).
    element: String,
    uses_params: bool,
    /// Inputs the kernel loads, in order.
    inputs: Vec<u32>,
    faults: bool,
}

fn body(k: &FusedKernel, pad: &str, access: Access) -> Body {
    let t = |r: u32| k.reg_dtypes[r as usize];
    let mut prelude = String::new();
    let mut e = String::new();
    let mut uses_params = false;
    let mut inputs = Vec::new();
    let mut any_fault = false;
    let mut decoded = Vec::new();
    for ins in &k.instrs {
        if let Instr::Const { slot, dtype, .. } = ins
            && !decoded.contains(slot)
        {
            decoded.push(*slot);
            let _ = writeln!(
                prelude,
                "  let p{slot} = af_bits_{}(params[{}u], params[{}u]);",
                tname(*dtype),
                2 * slot,
                2 * slot + 1
            );
        }
    }
    // Registers are declared with each element's code, so that the copies of it an unrolled loop
    // runs share no state and their loads are independent.
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(e, "{pad}var r{r}: {};", reg_type(*d));
    }
    let needs_coords = k.instrs.iter().any(|i| match i {
        Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
            *map != IndexMap::Contiguous
        }
        _ => false,
    });
    if needs_coords {
        let shape = &k.domain.shape;
        for (d, (&c, &n)) in contiguous_strides(shape).iter().zip(shape).enumerate() {
            let _ = writeln!(e, "{pad}let d{d} = (lin / {c}u) % {}u;", n.max(1));
        }
    }
    for (i, ins) in k.instrs.iter().enumerate() {
        let dst = ins.dst();
        let rhs = match ins {
            Instr::Load { input, map, .. } => {
                if !inputs.contains(input) {
                    inputs.push(*input);
                }
                let v = match (access, map) {
                    (Access::Lane(u), IndexMap::Contiguous) => format!("vin{input}.{}", LANES[u]),
                    (Access::Lane(_), _) => unreachable!("quad form with a load through {map:?}"),
                    (Access::Scalar, _) => format!("in{input}[{}]", index(map)),
                };
                if t(dst) == DType::Bool {
                    format!("({v} != 0u)")
                } else {
                    v
                }
            }
            Instr::Const { slot, .. } => {
                uses_params = true;
                format!("p{slot}")
            }
            Instr::Random {
                dist,
                key_slot,
                counter_slot,
                map,
                ..
            } => {
                uses_params = true;
                format!(
                    "{}(params[{}u], params[{}u], af_add64(vec2<u32>(params[{}u], params[{}u]), {}))",
                    random_fn(*dist, t(dst)),
                    2 * key_slot,
                    2 * key_slot + 1,
                    2 * counter_slot,
                    2 * counter_slot + 1,
                    index(map)
                )
            }
            Instr::Gen {
                kind, shape, map, ..
            } => generator(kind, shape, &index(map), t(dst)),
            Instr::Unary { op, a, .. } => format!("af_{}_{}(r{a})", op.name(), tname(t(*a))),
            Instr::Binary { op, a, b, .. } => {
                let f = format!("af_{}_{}", op.name(), tname(t(*a)));
                if faults(*op, t(*a)) {
                    format!("{f}(r{a}, r{b}, &bad)")
                } else {
                    format!("{f}(r{a}, r{b})")
                }
            }
            Instr::Select { cond, a, b, .. } => format!("select(r{b}, r{a}, r{cond})"),
            Instr::Cast { to, a, .. } => {
                format!("af_cast_{}_{}(r{a})", tname(t(*a)), tname(*to))
            }
        };
        let _ = writeln!(e, "{pad}r{dst} = {rhs};");
        if let Instr::Binary { op, a, .. } = ins
            && faults(*op, t(*a))
        {
            any_fault = true;
            let _ = writeln!(
                e,
                "{pad}if (bad != 0u) {{ atomicStore(&fault[0], {}u); bad = 0u; }}",
                i + 1
            );
        }
    }
    if any_fault {
        prelude.push_str("  var bad = 0u;\n");
    }
    for st in &k.stores {
        let v = if t(st.reg) == DType::Bool {
            format!("select(0u, 1u, r{})", st.reg)
        } else {
            format!("r{}", st.reg)
        };
        let _ = match access {
            Access::Scalar => writeln!(e, "{pad}out{}[lin] = {v};", st.output),
            Access::Lane(u) => writeln!(e, "{pad}vout{}.{} = {v};", st.output, LANES[u]),
        };
    }
    inputs.sort_unstable();
    Body {
        prelude,
        element: e,
        uses_params,
        inputs,
        faults: any_fault,
    }
}

/// How one reduction accumulates: in a value of `ty` (bools as u32 0/1), plus an u32 index for
/// argmax/argmin.
struct Red {
    op: ReduceOp,
    /// Library type name of the accumulated values (`b8` reductions accumulate u32).
    tn: &'static str,
    ty: &'static str,
}

impl Red {
    fn of(r: &ReduceStore, k: &FusedKernel) -> Red {
        let d = k.reg_dtypes[r.reg as usize];
        let d = if d == DType::Bool { DType::U32 } else { d };
        Red {
            op: r.op,
            tn: tname(d),
            ty: storage_type(d),
        }
    }
    fn is_arg(&self) -> bool {
        matches!(self.op, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
    fn identity(&self) -> String {
        let (lo, hi) = match self.tn {
            "f32" => ("-af_inf()", "af_inf()"),
            "i32" => ("(-2147483647 - 1)", "2147483647"),
            _ => ("0u", "4294967295u"),
        };
        match self.op {
            ReduceOp::Sum | ReduceOp::Any => format!("{}(0)", self.ty),
            ReduceOp::Prod | ReduceOp::All => format!("{}(1)", self.ty),
            ReduceOp::Max => format!("{}({lo})", self.ty),
            ReduceOp::Min => format!("{}({hi})", self.ty),
            ReduceOp::ArgMax | ReduceOp::ArgMin => format!("{}(0)", self.ty),
        }
    }
    /// Statement folding value `v` (with index `vi` for arg reductions) into `a` (`ai`).
    fn fold(&self, a: &str, ai: &str, v: &str, vi: &str) -> String {
        let f = match self.op {
            ReduceOp::Sum => "add",
            ReduceOp::Prod => "mul",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Any => return format!("{a} = {a} | {v};"),
            ReduceOp::All => return format!("{a} = {a} & {v};"),
            ReduceOp::ArgMax | ReduceOp::ArgMin => {
                let max = self.op == ReduceOp::ArgMax;
                return format!(
                    "if (af_arg_better_{}({a}, {ai}, {v}, {vi}, {max})) {{ {a} = {v}; {ai} = {vi}; }}",
                    self.tn
                );
            }
        };
        format!("{a} = af_{f}_{}({a}, {v});", self.tn)
    }
}

/// A register's value as the reduction accumulates it.
fn red_value(k: &FusedKernel, r: &ReduceStore) -> String {
    if k.reg_dtypes[r.reg as usize] == DType::Bool {
        format!("select(0u, 1u, r{})", r.reg)
    } else {
        format!("r{}", r.reg)
    }
}

/// Work-groups for one thread per item of `threads` (grid-stride loops cover the rest).
pub fn groups_for(threads: usize) -> u32 {
    threads.div_ceil(LOCAL as usize).min(MAX_GROUPS as usize) as u32
}

/// Renders fused kernel `k` for a WGSL target (see the module comment for the passes).
pub fn render(k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
    check(k)?;
    if k.reductions.is_empty() {
        Ok(render_map(k, t))
    } else if k.domain.inner <= THREAD_ROW {
        Ok(render_thread_rows(k, t))
    } else {
        render_chunked(k, t)
    }
}

/// Declarations every form of pass 1 shares: loaded inputs, element-wise outputs, and (after
/// `extra` declares its own buffers) the fault scratch and parameters.
struct Pass1 {
    b: Bindings,
    body: Body,
    /// The kernel's parameter slots.
    slots: usize,
    /// The target takes parameters as immediates.
    immediates: bool,
    scratch: Vec<u64>,
    fault: Option<u32>,
    immediate_words: Option<u32>,
}

impl Pass1 {
    /// Binds the loaded inputs and the element-wise outputs: arrays of their storage type, or
    /// with `quads` of `vec4`s of it (the quad form's bindings).
    fn new(k: &FusedKernel, t: Target, pad: &str, quads: bool) -> Pass1 {
        let body = body(k, pad, Access::Scalar);
        let elem = |d: DType| {
            if quads {
                format!("vec4<{}>", storage_type(d))
            } else {
                storage_type(d).to_string()
            }
        };
        let mut b = Bindings::default();
        for &i in &body.inputs {
            let d = k.inputs[i as usize];
            b.add(&format!("in{i}"), true, &elem(d), BufArg::Input(i));
        }
        for o in stored_outputs(k) {
            let d = k.outputs[o as usize];
            b.add(&format!("out{o}"), false, &elem(d), BufArg::Output(o));
        }
        Pass1 {
            b,
            body,
            slots: k.params.len(),
            immediates: t.immediates,
            scratch: Vec::new(),
            fault: None,
            immediate_words: None,
        }
    }
    /// Adds the fault scratch and the parameters; returns the declarations and buffers.
    fn finish(&mut self) -> (String, Vec<BufArg>, bool) {
        if self.body.faults {
            let s = self.scratch.len() as u32;
            self.scratch.push(4);
            self.fault = Some(s);
            let _ = writeln!(
                self.b.decls,
                "@group(0) @binding({}) var<storage, read_write> fault: array<atomic<u32>>;",
                self.b.buffers.len()
            );
            self.b.buffers.push(BufArg::Scratch(s));
        }
        if self.body.uses_params {
            self.immediate_words = self.b.add_params(self.slots, self.immediates);
        }
        (
            std::mem::take(&mut self.b.decls),
            std::mem::take(&mut self.b.buffers),
            self.body.uses_params,
        )
    }
    /// The plan of `kernel` (its entry points' text, declarations included) and `passes`, with
    /// the library items it needs on target `t`.
    fn plan(self, kernel: String, t: Target, passes: Vec<Pass>) -> GpuPlan {
        GpuPlan {
            source: with_library(kernel, t),
            scratch: self.scratch,
            passes,
            fault: self.fault,
            immediate_words: self.immediate_words,
        }
    }
}

/// The outputs the kernel's element-wise stores write, each once, in order.
fn stored_outputs(k: &FusedKernel) -> Vec<u32> {
    let mut outs: Vec<u32> = k.stores.iter().map(|s| s.output).collect();
    outs.sort_unstable();
    outs.dedup();
    outs
}

fn pass(entry: &str, buffers: Vec<BufArg>, params: bool, groups: u32) -> Pass {
    Pass {
        entry: entry.into(),
        buffers,
        params,
        groups,
        local: LOCAL,
    }
}

/// Whether element-wise kernel `k` can take the quad form: its length is a positive multiple of
/// 4, every load reads its input in place, and every buffer it loads or stores holds 4-byte
/// elements (so quad `q` of a buffer is its `vec4` element `q`).
fn quads_fit(k: &FusedKernel) -> bool {
    let four = |d: DType| matches!(d, DType::F32 | DType::I32 | DType::U32 | DType::Bool);
    let len = k.domain.len();
    len >= 4
        && len.is_multiple_of(4)
        && k.stores.iter().all(|s| four(k.outputs[s.output as usize]))
        && k.instrs.iter().all(|ins| match ins {
            Instr::Load { input, map, .. } => {
                *map == IndexMap::Contiguous && four(k.inputs[*input as usize])
            }
            _ => true,
        })
}

/// No reduction: the quad form when the kernel qualifies ([`quads_fit`]) and it is on, else the
/// scalar form.
fn render_map(k: &FusedKernel, t: Target) -> GpuPlan {
    if tuning().wgpu_vector && quads_fit(k) {
        render_quads(k, t)
    } else {
        render_scalar(k, t)
    }
}

/// Quad form: each thread takes Q = [`super::gpu::Tuning::wgpu_quads`] quads per trip of the main
/// loop (their `vec4` loads first): a work-group's Q × [`LOCAL`] consecutive quads, its threads'
/// quads [`LOCAL`] apart (one contiguous span per load instruction of the group), trips a grid of
/// Q quads apart; a second loop takes the thread's quads of the last, partial trip. Per quad the
/// element code once per lane and one `vec4` store per output.
fn render_quads(k: &FusedKernel, t: Target) -> GpuPlan {
    let quads = k.domain.len() / 4;
    let q_trip = tuning().wgpu_quads;
    let groups = groups_for(quads.div_ceil(q_trip as usize));
    let threads = groups.max(1) * LOCAL;
    let pad = "        ";
    let mut p = Pass1::new(k, t, pad, true);
    let (decls, buffers, params) = p.finish();
    let outs = stored_outputs(k);
    let element: Vec<String> = (0..4)
        .map(|u| body(k, pad, Access::Lane(u)).element)
        .collect();
    // Quad `at` in a block of its own: its input vectors (`loaded`: from `vin{i}_{j}`, loaded
    // before), the element code per lane, the output vectors' stores.
    let quad = |at: &str, loaded: Option<u32>| {
        let mut b = String::from("    {\n");
        for &i in &p.body.inputs {
            match loaded {
                Some(j) => writeln!(b, "      let vin{i} = vin{i}_{j};"),
                None => writeln!(b, "      let vin{i} = in{i}[{at}];"),
            }
            .expect("write to a String");
        }
        for &o in &outs {
            let d = k.outputs[o as usize];
            let _ = writeln!(b, "      var vout{o}: vec4<{}>;", storage_type(d));
        }
        for (u, e) in element.iter().enumerate() {
            let _ = write!(
                b,
                "      {{\n        let lin = 4u * ({at}) + {u}u;\n{e}      }}\n"
            );
        }
        for &o in &outs {
            let _ = writeln!(b, "      out{o}[{at}] = vout{o};");
        }
        b.push_str("    }\n");
        b
    };
    let at = |j: u32| {
        if j == 0 {
            "q".to_string()
        } else {
            format!("q + {}u", j * LOCAL)
        }
    };
    let mut main = String::new();
    for j in 0..q_trip {
        for &i in &p.body.inputs {
            let _ = writeln!(main, "    let vin{i}_{j} = in{i}[{}];", at(j));
        }
    }
    for j in 0..q_trip {
        main.push_str(&quad(&at(j), Some(j)));
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel: quads ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{\n{}{}  var q = wid.x * {}u + lid;\n  for (; {} < {quads}u; q += {}u) {{\n{main}  }}\n  for (; q < {quads}u; q += {LOCAL}u) {{\n{}  }}\n}}\n",
        set_zero("wid"),
        p.body.prelude,
        q_trip * LOCAL,
        at(q_trip - 1),
        q_trip * threads,
        quad("q", None),
    );
    p.plan(s, t, vec![pass("af_kernel", buffers, params, groups)])
}

/// Scalar form: each thread handles [`UNROLL`] elements per loop trip, `base + u * G` for `u` in
/// `0..UNROLL` (`G` threads in all, `base` stepping by `UNROLL * G`), each in a block of its own, so
/// the loads of the copies are independent and each one coalesced across the threads.
fn render_scalar(k: &FusedKernel, t: Target) -> GpuPlan {
    let len = k.domain.len();
    let groups = groups_for(len.div_ceil(UNROLL as usize));
    let threads = groups.max(1) * LOCAL;
    let mut p = Pass1::new(k, t, "        ", false);
    let (decls, buffers, params) = p.finish();
    let mut copies = String::new();
    for u in 0..UNROLL {
        let lin = if u == 0 {
            "base".to_string()
        } else {
            format!("base + {}u", u * threads)
        };
        let _ = write!(
            copies,
            "    {{\n      let lin = {lin};\n      if (lin < {len}u) {{\n{}      }}\n    }}\n",
            p.body.element
        );
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(global_invocation_id) gid: vec3<u32>) {{\n{}{}  for (var base = gid.x; base < {len}u; base += {}u) {{\n{copies}  }}\n}}\n",
        set_zero("gid"),
        p.body.prelude,
        UNROLL * threads,
    );
    p.plan(s, t, vec![pass("af_kernel", buffers, params, groups)])
}

/// Short reductions: one thread per result evaluates its row and writes the results.
fn render_thread_rows(k: &FusedKernel, t: Target) -> GpuPlan {
    let (outer, inner) = (k.domain.outer, k.domain.inner);
    let groups = groups_for(outer);
    let mut p = Pass1::new(k, t, "      ", false);
    let reds: Vec<Red> = k.reductions.iter().map(|r| Red::of(r, k)).collect();
    for r in &k.reductions {
        let d = k.outputs[r.output as usize];
        p.b.add(
            &format!("out{}", r.output),
            false,
            storage_type(d),
            BufArg::Output(r.output),
        );
    }
    let (decls, buffers, params) = p.finish();
    let acc = Accumulators::new(k, &reds);
    let mut write_out = String::new();
    for (ri, (r, red)) in k.reductions.iter().zip(&reds).enumerate() {
        let v = if red.is_arg() { "ai" } else { "a" };
        let _ = writeln!(write_out, "    out{}[o] = {v}{ri};", r.output);
    }
    let (init, fold) = (&acc.init, &acc.fold);
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(global_invocation_id) gid: vec3<u32>) {{\n{}{}  for (var o = gid.x; o < {outer}u; o += {}u) {{\n{init}    for (var i = 0u; i < {inner}u; i++) {{\n      let lin = o * {inner}u + i;\n{}{fold}    }}\n{write_out}  }}\n}}\n",
        set_zero("gid"),
        p.body.prelude,
        groups.max(1) * LOCAL,
        p.body.element
    );
    p.plan(s, t, vec![pass("af_kernel", buffers, params, groups)])
}

/// Number of chunks each result's reduction is split into: about [`TARGET_GROUPS`] work-groups in
/// all when there are few results, at least one work-group's worth of elements per chunk.
fn chunks(outer: usize, inner: usize) -> usize {
    TARGET_GROUPS
        .div_ceil(outer.max(1))
        .min(inner.div_ceil(LOCAL as usize))
        .max(1)
}

/// Statements of a work-group tree reduction of the `wv`/`wi` arrays into element 0, unrolled so
/// that every barrier stays in uniform control flow.
fn tree(reds: &[Red]) -> String {
    let mut t = String::new();
    let mut half = LOCAL / 2;
    while half > 0 {
        let _ = writeln!(t, "    if (tid < {half}u) {{");
        for (ri, red) in reds.iter().enumerate() {
            let _ = writeln!(
                t,
                "      {}",
                red.fold(
                    &format!("wv{ri}[tid]"),
                    &format!("wi{ri}[tid]"),
                    &format!("wv{ri}[tid + {half}u]"),
                    &format!("wi{ri}[tid + {half}u]")
                )
            );
        }
        t.push_str("    }\n    workgroupBarrier();\n");
        half /= 2;
    }
    t
}

/// Per-thread accumulators `a{r}` (and `ai{r}` for argmax/argmin) of the kernel's reductions.
struct Accumulators {
    /// Their declarations, set to the identities.
    init: String,
    /// Folding the current element (index `i` within its row) into them.
    fold: String,
    /// Their hand-over to workgroup memory (`wv{r}`, `wi{r}`) before a tree.
    to_wg: String,
}

impl Accumulators {
    fn new(k: &FusedKernel, reds: &[Red]) -> Accumulators {
        Accumulators::named(k, reds, "", "      ")
    }
    /// Accumulators `a{r}{sfx}` (`ai{r}{sfx}`), their fold statements indented by `pad`.
    fn named(k: &FusedKernel, reds: &[Red], sfx: &str, pad: &str) -> Accumulators {
        let mut a = Accumulators {
            init: String::new(),
            fold: String::new(),
            to_wg: String::new(),
        };
        for (ri, (r, red)) in k.reductions.iter().zip(reds).enumerate() {
            let _ = writeln!(a.init, "    var a{ri}{sfx} = {};", red.identity());
            let _ = writeln!(a.to_wg, "    wv{ri}[tid] = a{ri}{sfx};");
            if red.is_arg() {
                let _ = writeln!(a.init, "    var ai{ri}{sfx} = 0xffffffffu;");
                let _ = writeln!(a.to_wg, "    wi{ri}[tid] = ai{ri}{sfx};");
            }
            let _ = writeln!(
                a.fold,
                "{pad}{}",
                red.fold(
                    &format!("a{ri}{sfx}"),
                    &format!("ai{ri}{sfx}"),
                    &red_value(k, r),
                    "i"
                )
            );
        }
        a
    }
}

/// Long reductions: work-group `(o, c)` reduces chunk `c` of result `o`. With one chunk per result
/// the group writes the outputs; with several it writes partials, and `af_final` (one work-group
/// per result) reduces them the same way.
fn render_chunked(k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
    let (outer, inner) = (k.domain.outer, k.domain.inner);
    let reds: Vec<Red> = k.reductions.iter().map(|r| Red::of(r, k)).collect();
    let words: usize = reds.iter().map(|r| 1 + r.is_arg() as usize).sum();
    if words * LOCAL as usize * 4 > MAX_WORKGROUP_BYTES {
        return Err(unsupported(format!(
            "wgsl: {} reductions in one kernel exceed the workgroup memory limit",
            k.reductions.len()
        )));
    }
    let c = chunks(outer, inner);
    let chunk = inner.div_ceil(c);
    let jobs = outer * c;
    let groups = groups_for(jobs * LOCAL as usize);
    let mut p = Pass1::new(k, t, "        ", false);
    let mut wg = String::new();
    for (ri, red) in reds.iter().enumerate() {
        let _ = writeln!(wg, "var<workgroup> wv{ri}: array<{}, {LOCAL}>;", red.ty);
        if red.is_arg() {
            let _ = writeln!(wg, "var<workgroup> wi{ri}: array<u32, {LOCAL}>;");
        }
    }
    // Where each work-group's results go: the outputs, or per-reduction partials (values, and
    // indices for argmax/argmin) in scratch, never empty.
    let mut results = String::new();
    let mut part = Vec::new();
    for (ri, (r, red)) in k.reductions.iter().zip(&reds).enumerate() {
        if c == 1 {
            let d = k.outputs[r.output as usize];
            let name = format!("out{}", r.output);
            p.b.add(&name, false, storage_type(d), BufArg::Output(r.output));
            let v = if red.is_arg() { "wi" } else { "wv" };
            let _ = writeln!(results, "      {name}[o] = {v}{ri}[0];");
            continue;
        }
        let bytes = jobs.max(1) as u64 * 4;
        let v = p.scratch.len() as u32;
        p.scratch.push(bytes);
        p.b.add(&format!("part{ri}"), false, red.ty, BufArg::Scratch(v));
        let _ = writeln!(results, "      part{ri}[job] = wv{ri}[0];");
        let i = red.is_arg().then(|| {
            let i = p.scratch.len() as u32;
            p.scratch.push(bytes);
            p.b.add(&format!("parti{ri}"), false, "u32", BufArg::Scratch(i));
            let _ = writeln!(results, "      parti{ri}[job] = wi{ri}[0];");
            i
        });
        part.push((v, i));
    }
    let (decls, buffers, params) = p.finish();
    // Accumulators `a{r}_{u}`: copy `u` of the unrolled loop folds elements `i0 + u * LOCAL`; the
    // remainder loop folds into copy 0; then copies 1.. fold into copy 0, in order.
    let accs: Vec<Accumulators> = (0..UNROLL)
        .map(|u| Accumulators::named(k, &reds, &format!("_{u}"), "        "))
        .collect();
    let mut init = String::new();
    let mut unrolled = String::new();
    for (u, acc) in accs.iter().enumerate() {
        init.push_str(&acc.init);
        let i = if u == 0 {
            "i0".to_string()
        } else {
            format!("i0 + {}u", u as u32 * LOCAL)
        };
        let _ = write!(
            unrolled,
            "      {{\n        let i = {i};\n        let lin = o * {inner}u + i;\n{}{}      }}\n",
            p.body.element, acc.fold
        );
    }
    let mut combine = String::new();
    for (ri, red) in reds.iter().enumerate() {
        for u in 1..UNROLL {
            let _ = writeln!(
                combine,
                "    {}",
                red.fold(
                    &format!("a{ri}_0"),
                    &format!("ai{ri}_0"),
                    &format!("a{ri}_{u}"),
                    &format!("ai{ri}_{u}")
                )
            );
        }
    }
    let tree = tree(&reds);
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel: chunks ----\n{decls}{wg}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {{\n{}{}  for (var job = wid.x; job < {jobs}u; job += {groups}u) {{\n    let o = job / {c}u;\n    let first = (job % {c}u) * {chunk}u;\n    let end = min(first + {chunk}u, {inner}u);\n{init}    var i0 = first + tid;\n    for (; i0 + {}u < end; i0 += {}u) {{\n{unrolled}    }}\n    for (; i0 < end; i0 += {LOCAL}u) {{\n      {{\n        let i = i0;\n        let lin = o * {inner}u + i;\n{}{}      }}\n    }}\n{combine}{}    workgroupBarrier();\n{tree}    if (tid == 0u) {{\n{results}    }}\n    workgroupBarrier();\n  }}\n}}\n",
        set_zero("wid"),
        p.body.prelude,
        (UNROLL - 1) * LOCAL,
        UNROLL * LOCAL,
        p.body.element,
        accs[0].fold,
        accs[0].to_wg
    );
    let mut passes = vec![pass("af_kernel", buffers, params, groups)];
    if c > 1 {
        let acc = Accumulators::new(k, &reds);
        let (final_src, final_pass) = render_final(k, &reds, &part, c, &acc, &tree);
        s.push_str(&final_src);
        passes.push(final_pass);
    }
    Ok(p.plan(s, t, passes))
}

/// Pass `af_final`: work-group `o` reduces the `c` partials of result `o` (threads stride over
/// them, then the tree) and writes the outputs.
fn render_final(
    k: &FusedKernel,
    reds: &[Red],
    part: &[(u32, Option<u32>)],
    c: usize,
    acc: &Accumulators,
    tree: &str,
) -> (String, Pass) {
    let outer = k.domain.outer;
    let mut b = Bindings::default();
    let mut fold = String::new();
    let mut results = String::new();
    for (ri, (r, red)) in k.reductions.iter().zip(reds).enumerate() {
        let (v, i) = part[ri];
        b.add(&format!("fpart{ri}"), false, red.ty, BufArg::Scratch(v));
        if let Some(i) = i {
            b.add(&format!("fparti{ri}"), false, "u32", BufArg::Scratch(i));
        }
        let d = k.outputs[r.output as usize];
        let name = format!("fout{}", r.output);
        b.add(&name, false, storage_type(d), BufArg::Output(r.output));
        let _ = writeln!(
            fold,
            "      {}",
            red.fold(
                &format!("a{ri}"),
                &format!("ai{ri}"),
                &format!("fpart{ri}[o * {c}u + j]"),
                &format!("fparti{ri}[o * {c}u + j]")
            )
        );
        let v = if red.is_arg() { "wi" } else { "wv" };
        let _ = writeln!(results, "      {name}[o] = {v}{ri}[0];");
    }
    let groups = groups_for(outer * LOCAL as usize);
    let src = format!(
        "\n// ---- kernel: partials ----\n{}\n@compute @workgroup_size({LOCAL})\nfn af_final(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {{\n{}  for (var o = wid.x; o < {outer}u; o += {}u) {{\n{}    for (var j = tid; j < {c}u; j += {LOCAL}u) {{\n{fold}    }}\n{}    workgroupBarrier();\n{tree}    if (tid == 0u) {{\n{results}    }}\n    workgroupBarrier();\n  }}\n}}\n",
        b.decls,
        set_zero("wid"),
        groups.max(1),
        acc.init,
        acc.to_wg
    );
    (src, pass("af_final", b.buffers, false, groups))
}
