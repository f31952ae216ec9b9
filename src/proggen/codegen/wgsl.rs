//! WGSL renderer (the wgpu executor): one fused kernel becomes a [`GpuPlan`] whose source is the
//! part of the primitive library (`primitives/wgsl/arrayflow.wgsl`) the kernel calls, directly or
//! not, followed by the kernel's entry points. The layout, register program, reductions, scratch
//! buffers and passes come from [`super::lower`] under this target's [`Policy`]; this file prints
//! them as WGSL and picks the library items the text names.
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
//!   work per lane as in the scalar form, but for Philox draws at the element's own position,
//!   whose words the quad draws before its lanes, one or two Philox blocks for the four elements
//!   where each would take one: `quad_streams`), then one 16-byte store per output
//!   (`out{o}[q] = vout{o}`). An input also read through another map would need scalar access,
//!   so such a kernel (and any other that does not qualify) takes the scalar form, as does a
//!   kernel with trap checks (`lower::Lowered::range`: it runs the elements `af_lo .. af_hi` of
//!   two parameter slots after its own, striding by the dispatched threads, so a launch in
//!   resumable passes dispatches one range per pass; a reduction with trap checks runs the
//!   results, or work-group slots, `af_lo .. af_hi` the same way).
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
//!   partials the same way and writes the outputs;
//! - column reductions (`lower::columns`: the loads read adjacent results at adjacent addresses,
//!   as a column sum does; `ReduceLayout::threads == 1`): pass `af_kernel` runs a thread per
//!   result, a work-group's threads on [`LOCAL`] adjacent results, over chunk `c` of the reduced
//!   extent (`C` chunks, enough for the groups of all chunks to fill the device), [`UNROLL`]
//!   accumulators per thread; with `C == 1` each thread writes its outputs, with more its
//!   partials at `o * C + c`, which `af_final` reduces as above but with about `C / 8` threads
//!   per result (`ReduceLayout::final_threads`; a work-group serves several results).
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
//! Registers live in WGSL locals: f32/i32/u32, bool as `bool` (stored as one u32 per element),
//! `Complex<f32>` as the library's `c64` (a `vec2<f32>`, stored as such: those kernels take the
//! scalar form). Index arithmetic is u32 (wrapping, exact for any index inside a bindable buffer),
//! so a domain of 2^31 elements or more is not rendered; neither is anything touching f64 or
//! `Complex<f64>`.

use super::c::{random_name, range_arg};
use super::gpu::{BufArg, GpuPlan, Target, Unsupported, tuning};
use super::lower::{
    Binding, CoordOf, Generator, Index, Layout, Lowered, Policy, QuadPolicy, ReduceLayout,
    ReducePolicy, Reduction, StepOp, lower,
};
use crate::ir::{DType, RandomDist, ReduceOp, RngAlgorithm};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, ParamKind};
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
const TARGET_GROUPS: u64 = 2048;
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
        DType::C64 => "c64",
        DType::C128 => "c128",
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
    let wide = |d: &DType| matches!(d, DType::F64 | DType::C128);
    let f64_used = k.reg_dtypes.iter().any(wide)
        || k.inputs.iter().any(wide)
        || k.outputs.iter().any(wide)
        || k.params.contains(&ParamKind::Const(DType::F64));
    if f64_used {
        return Err(unsupported(
            "f64 (and Complex<f64>) is not available on WGSL targets",
        ));
    }
    for ins in &k.instrs {
        if let Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } = ins {
            check_map(map, &k.domain.shape)?;
        }
    }
    Ok(())
}

/// A folded map computes `offset + coef . d` and its folds in i32.
fn check_map(map: &IndexMap, shape: &[usize]) -> Result<(), Unsupported> {
    let IndexMap::Folded { dims } = map else {
        return Ok(());
    };
    for d in dims {
        let mut reach = d.offset.unsigned_abs() as u128
            + d.coef
                .iter()
                .zip(shape)
                .map(|(c, n)| c.unsigned_abs() as u128 * n.saturating_sub(1) as u128)
                .sum::<u128>();
        for f in &d.folds {
            // The modulus's operand, twice the period, and the placed result.
            let inner = reach + 4 * f.n as u128;
            reach = f.a.unsigned_abs() as u128 + f.b.unsigned_abs() as u128 * f.n as u128;
            if inner >= 1 << 31 || reach >= 1 << 31 || f.n >= 1 << 29 {
                return Err(unsupported("wgsl: folded index exceeds 32-bit arithmetic"));
            }
        }
        if reach * d.stride.max(1) as u128 >= 1 << 31 {
            return Err(unsupported("wgsl: folded index exceeds 32-bit arithmetic"));
        }
    }
    Ok(())
}

/// The u32 index expression for the current element.
fn index(at: &Index) -> String {
    match at {
        Index::Lin => "lin".into(),
        Index::Affine(a) => {
            let mut s = format!("({}", u32_lit(a.offset));
            for (k, st) in &a.terms {
                let _ = write!(s, " + {} * d{k}", u32_lit(*st));
            }
            s.push(')');
            s
        }
        Index::Folded(dims) => {
            let mut s = String::from("(0u");
            for d in dims {
                let mut v = format!("({}i", d.at.offset);
                for (k, c) in &d.at.terms {
                    let _ = write!(v, " + ({c}i) * i32(d{k})");
                }
                v.push(')');
                for (f, &near) in d.folds.iter().zip(&d.near) {
                    v = super::fold_expr(f, near, &v, &|x| format!("{x}i"));
                }
                let _ = write!(s, " + u32({v}) * {}u", d.stride);
            }
            s.push(')');
            s
        }
    }
}

fn random_fn(alg: RngAlgorithm, dist: RandomDist, t: DType) -> String {
    format!("af_{}_{}", random_name(alg, dist), tname(t))
}

/// A position-dependent generator's value at generator index `g` (an u32 expression).
fn generator(kind: &Generator, g: &str, t: DType) -> String {
    let tn = tname(t);
    match kind {
        Generator::Iota { div, extent } => format!("af_cast_u32_{tn}(({g} / {div}u) % {extent}u)"),
        Generator::Identity { n } => format!("af_cast_b8_{tn}(({g} / {n}u) == ({g} % {n}u))"),
        Generator::Linspace {
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
        Generator::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => format!(
            "{}({}u, {}u, af_add64(vec2<u32>({}u, {}u), {g}){})",
            random_fn(*alg, *dist, t),
            key[0],
            key[1],
            *counter as u32,
            (*counter >> 32) as u32,
            range_arg(*dist, &format!("{range}u"))
        ),
    }
}

/// Buffers of one entry point: their declarations, in binding order.
#[derive(Default)]
struct Bindings {
    decls: String,
    count: usize,
}

impl Bindings {
    fn add(&mut self, name: &str, read_only: bool, elem: &str) {
        let access = if read_only { "read" } else { "read_write" };
        let _ = writeln!(
            self.decls,
            "@group(0) @binding({}) var<storage, {access}> {name}: array<{elem}>;",
            self.count
        );
        self.count += 1;
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
                    self.count
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

/// The declarations of pass `pass`'s buffers (in `Pass::buffers` order) and, when it takes them,
/// the parameters; with the immediate words declared. The first pass names its buffers `in{p}`,
/// `out{o}`, `part{r}`/`parti{r}` and `fault` (inputs and outputs as `vec4`s with `quads`), the
/// final pass `fpart{r}`/`fparti{r}` and `fout{o}`.
fn bindings(l: &Lowered, pass: usize, quads: bool, t: Target) -> (String, Option<u32>) {
    let k = l.k;
    let pre = if pass == 0 { "" } else { "f" };
    let elem = |d: DType| {
        if quads {
            format!("vec4<{}>", storage_type(d))
        } else {
            storage_type(d).to_string()
        }
    };
    let mut b = Bindings::default();
    for buf in &l.passes[pass].buffers {
        match *buf {
            BufArg::Input(i) => b.add(&format!("in{i}"), true, &elem(k.inputs[i as usize])),
            BufArg::Output(o) => {
                b.add(&format!("{pre}out{o}"), false, &elem(k.outputs[o as usize]))
            }
            BufArg::Scratch(f) if Some(f) == l.fault => {
                let _ = writeln!(
                    b.decls,
                    "@group(0) @binding({}) var<storage, read_write> fault: array<atomic<u32>>;",
                    b.count
                );
                b.count += 1;
            }
            BufArg::Scratch(s) => match l.partials_in(s) {
                Some((ri, false)) => b.add(
                    &format!("{pre}part{ri}"),
                    false,
                    Red::of(&l.reductions[ri]).ty,
                ),
                Some((ri, true)) => b.add(&format!("{pre}parti{ri}"), false, "u32"),
                None => unreachable!("a scratch buffer is the fault word or partials"),
            },
        }
    }
    let words = if l.passes[pass].params {
        // A ranged kernel's two range slots follow the kernel's own (`Lowered::range`).
        let slots = k.params.len() + if l.range && pass == 0 { 2 } else { 0 };
        b.add_params(slots, t.immediates)
    } else {
        None
    };
    (b.decls, words)
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

/// Declarations at the top of an entry that runs the element code: parameter values, fault flag.
fn body_prelude(l: &Lowered) -> String {
    let mut prelude = String::new();
    for &(slot, d) in &l.const_slots {
        let _ = writeln!(
            prelude,
            "  let p{slot} = af_bits_{}(params[{}u], params[{}u]);",
            tname(d),
            2 * slot,
            2 * slot + 1
        );
    }
    if l.faults() {
        prelude.push_str("  var bad = 0u;\n");
    }
    prelude
}

/// The per-element code, run with the element's linear index `lin` in scope: declares the
/// registers, evaluates the register program, reports faults and writes the element-wise stores.
fn body(l: &Lowered, pad: &str, access: Access) -> String {
    let k = l.k;
    let t = |r: u32| k.reg_dtypes[r as usize];
    let mut e = String::new();
    // Registers are declared with each element's code, so that the copies of it an unrolled loop
    // runs share no state and their loads are independent.
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(e, "{pad}var r{r}: {};", reg_type(*d));
    }
    for (d, c) in l.coords.iter().flatten().enumerate() {
        let mut v = match c.of {
            CoordOf::Lin => "lin",
            CoordOf::Result => "o",
            CoordOf::Element => "i",
        }
        .to_string();
        if c.div > 1 {
            v = format!("({v} / {}u)", c.div);
        }
        if let Some(n) = c.extent {
            v = format!("({v} % {n}u)");
        }
        let _ = writeln!(e, "{pad}let d{d} = {v};");
    }
    for (si, step) in l.steps.iter().enumerate() {
        let rhs = match &step.op {
            StepOp::Load { input, at } => {
                let v = match (access, at) {
                    (Access::Lane(u), Index::Lin) => format!("vin{input}.{}", LANES[u]),
                    (Access::Lane(_), _) => unreachable!("quad form with a load through {at:?}"),
                    (Access::Scalar, _) => format!("in{input}[{}]", index(at)),
                };
                if step.ty == DType::Bool {
                    format!("({v} != 0u)")
                } else {
                    v
                }
            }
            StepOp::Param { slot } => format!("p{slot}"),
            StepOp::Random {
                dist, range_slot, ..
            } if quad_stream(&step.op).is_some() && matches!(access, Access::Lane(_)) => {
                let Access::Lane(u) = access else {
                    unreachable!("quad streams are drawn in the quad form only")
                };
                let lane = LANES[u];
                let range = range_slot.map_or("0u".into(), |r| format!("params[{}u]", 2 * r));
                match dist {
                    RandomDist::Normal => {
                        format!("af_w_normal_f32(rw{si}[0].{lane}, rw{si}[1].{lane})")
                    }
                    _ => format!(
                        "af_w_{}_{}(rw{si}.{lane}{})",
                        dist.name(),
                        tname(step.ty),
                        range_arg(*dist, &range)
                    ),
                }
            }
            StepOp::Random {
                alg,
                dist,
                key_slot,
                counter_slot,
                range_slot,
                at,
            } => format!(
                "{}(params[{}u], params[{}u], af_add64(vec2<u32>(params[{}u], params[{}u]), {}){})",
                random_fn(*alg, *dist, step.ty),
                2 * key_slot,
                2 * key_slot + 1,
                2 * counter_slot,
                2 * counter_slot + 1,
                index(at),
                range_arg(
                    *dist,
                    &range_slot.map_or("0u".into(), |r| format!("params[{}u]", 2 * r))
                )
            ),
            StepOp::Gen { generator: g, at } => generator(g, &index(at), step.ty),
            StepOp::Unary { op, a, ty } => format!("af_{}_{}(r{a})", op.name(), tname(*ty)),
            StepOp::Binary { op, a, b, ty } => {
                let f = format!("af_{}_{}", op.name(), tname(*ty));
                if step.fault.is_some() {
                    format!("{f}(r{a}, r{b}, &bad)")
                } else {
                    format!("{f}(r{a}, r{b})")
                }
            }
            StepOp::Select { cond, a, b } => format!("select(r{b}, r{a}, r{cond})"),
            StepOp::Cast { a, from, to } => {
                format!("af_cast_{}_{}(r{a})", tname(*from), tname(*to))
            }
        };
        let _ = writeln!(e, "{pad}r{} = {rhs};", step.dst);
        if let StepOp::Binary { op, .. } = step.op
            && let Some(plant) = crate::proggen::fault::planted(op, step.ty, step.dst, false)
        {
            let _ = writeln!(e, "{pad}{plant}");
        }
        if let Some(code) = step.fault {
            let _ = writeln!(
                e,
                "{pad}if (bad != 0u) {{ atomicStore(&fault[0], {code}u); bad = 0u; }}"
            );
        }
        for code in crate::debug::trap::codegen::step_statements(
            &step.traps,
            step.dst,
            step.ty,
            &step.operands,
            l.first,
            crate::debug::trap::codegen::Dialect::Wgsl,
        ) {
            let _ = writeln!(e, "{pad}{code}");
        }
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
    e
}

/// How one reduction accumulates: in a value of `ty` (bools as u32 0/1), plus an u32 index for
/// argmax/argmin.
struct Red {
    op: ReduceOp,
    /// Library type name of the accumulated values (`b8` reductions accumulate u32).
    tn: &'static str,
    ty: &'static str,
    /// The reduced register and whether it is a bool.
    reg: u32,
    bool_reg: bool,
}

impl Red {
    fn of(r: &Reduction) -> Red {
        let d = if r.acc == DType::Bool {
            DType::U32
        } else {
            r.acc
        };
        Red {
            op: r.op,
            tn: tname(d),
            ty: storage_type(d),
            reg: r.reg,
            bool_reg: r.value == DType::Bool,
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
    /// The register's value as the reduction accumulates it.
    fn value(&self) -> String {
        if self.bool_reg {
            format!("select(0u, 1u, r{})", self.reg)
        } else {
            format!("r{}", self.reg)
        }
    }
}

/// Work-groups for one thread per item of `threads` (grid-stride loops cover the rest).
pub fn groups_for(threads: usize) -> u32 {
    threads.div_ceil(LOCAL as usize).min(MAX_GROUPS as usize) as u32
}

/// How this target lays kernels out (see the module comment).
fn policy() -> Policy {
    let tune = tuning();
    Policy {
        local: LOCAL as u64,
        max_groups: MAX_GROUPS as u64,
        unroll: UNROLL as u64,
        quads: tune.wgpu_vector.then_some(QuadPolicy {
            per_trip: tune.wgpu_quads as u64,
            max_groups: MAX_GROUPS as u64,
            mixed: false,
        }),
        reduce: ReducePolicy {
            row_max: Some(THREAD_ROW),
            elements_per_thread: None,
            target_groups: TARGET_GROUPS,
            min_chunk: LOCAL as u64,
            quad_chunks: false,
        },
        binding: Binding::Used,
        word_bools: true,
    }
}

/// Renders fused kernel `k` for a WGSL target (see the module comment for the passes).
pub fn render(k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
    check(k)?;
    let l = lower(k, t, &policy());
    let (source, immediate_words) = match l.layout {
        Layout::Quads {
            quads, per_trip, ..
        } => render_quads(&l, t, quads as u32, per_trip as u32),
        Layout::Scalar { .. } => render_scalar(&l, t),
        Layout::Rows { .. } => render_thread_rows(&l, t),
        Layout::Reduce(r) if r.threads == 1 => render_columns(&l, t, r)?,
        Layout::Reduce(r) => render_chunked(&l, t, r)?,
    };
    Ok(l.plan(with_library(source, t), LOCAL, immediate_words))
}

/// Words per value of a Philox draw at the element's own position (`Index::Lin`), whose quad
/// draws its four elements' words together (`af_stream_quad1` / `af_stream_quad2`: one or two
/// Philox blocks per quad where each element alone takes one), or `None` for every other step.
fn quad_stream(op: &StepOp) -> Option<u32> {
    match op {
        StepOp::Random {
            alg: RngAlgorithm::Philox,
            dist,
            at: Index::Lin,
            ..
        } => Some(if *dist == RandomDist::Normal { 2 } else { 1 }),
        _ => None,
    }
}

/// The quad's stream words of each [`quad_stream`] step (`rw{step}`), drawn before its lanes.
fn quad_streams(l: &Lowered, at: &str) -> String {
    let mut s = String::new();
    for (si, step) in l.steps.iter().enumerate() {
        let (
            Some(w),
            StepOp::Random {
                key_slot,
                counter_slot,
                ..
            },
        ) = (quad_stream(&step.op), &step.op)
        else {
            continue;
        };
        let _ = writeln!(
            s,
            "      let rw{si} = af_stream_quad{w}(params[{}u], params[{}u], af_add64(vec2<u32>(params[{}u], params[{}u]), 4u * ({at})));",
            2 * key_slot,
            2 * key_slot + 1,
            2 * counter_slot,
            2 * counter_slot + 1,
        );
    }
    s
}

/// Quad form: each thread takes Q = [`super::gpu::Tuning::wgpu_quads`] quads per trip of the main
/// loop (their `vec4` loads first): a work-group's Q × [`LOCAL`] consecutive quads, its threads'
/// quads [`LOCAL`] apart (one contiguous span per load instruction of the group), trips a grid of
/// Q quads apart; a second loop takes the thread's quads of the last, partial trip. Per quad the
/// element code once per lane and one `vec4` store per output.
fn render_quads(l: &Lowered, t: Target, quads: u32, q_trip: u32) -> (String, Option<u32>) {
    let k = l.k;
    let threads = l.passes[0].groups.max(1) * LOCAL;
    let pad = "        ";
    let (decls, words) = bindings(l, 0, true, t);
    let element: Vec<String> = (0..4).map(|u| body(l, pad, Access::Lane(u))).collect();
    // Quad `at` in a block of its own: its input vectors (`loaded`: from `vin{i}_{j}`, loaded
    // before), the element code per lane, the output vectors' stores.
    let quad = |at: &str, loaded: Option<u32>| {
        let mut b = String::from("    {\n");
        for &i in &l.loaded {
            match loaded {
                Some(j) => writeln!(b, "      let vin{i} = vin{i}_{j};"),
                None => writeln!(b, "      let vin{i} = in{i}[{at}];"),
            }
            .expect("write to a String");
        }
        for &o in &l.stored {
            let d = k.outputs[o as usize];
            let _ = writeln!(b, "      var vout{o}: vec4<{}>;", storage_type(d));
        }
        b.push_str(&quad_streams(l, at));
        for (u, e) in element.iter().enumerate() {
            let _ = write!(
                b,
                "      {{\n        let lin = 4u * ({at}) + {u}u;\n{e}      }}\n"
            );
        }
        for &o in &l.stored {
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
        for &i in &l.loaded {
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
        body_prelude(l),
        q_trip * LOCAL,
        at(q_trip - 1),
        q_trip * threads,
        quad("q", None),
    );
    (s, words)
}

/// Scalar form: each thread handles [`UNROLL`] elements per loop trip, `base + u * G` for `u` in
/// `0..UNROLL` (`G` threads in all, `base` stepping by `UNROLL * G`), each in a block of its own, so
/// the loads of the copies are independent and each one coalesced across the threads.
///
/// A ranged kernel (`Lowered::range`) runs the elements `af_lo .. af_hi` of its two range slots,
/// its stride the dispatched threads (`num_workgroups`), so a pass may dispatch fewer groups.
fn render_scalar(l: &Lowered, t: Target) -> (String, Option<u32>) {
    let len = l.k.domain.len();
    let threads = l.passes[0].groups.max(1) * LOCAL;
    let (decls, words) = bindings(l, 0, false, t);
    let element = body(l, "        ", Access::Scalar);
    let end = if l.range {
        "af_hi".to_string()
    } else {
        format!("{len}u")
    };
    let mut copies = String::new();
    for u in 0..UNROLL {
        let lin = match u {
            0 => "base".to_string(),
            _ if l.range => format!("base + {u}u * af_threads"),
            _ => format!("base + {}u", u * threads),
        };
        let _ = write!(
            copies,
            "    {{\n      let lin = {lin};\n      if (lin < {end}) {{\n{element}      }}\n    }}\n",
        );
    }
    let (args, range, first, step) = if l.range {
        (
            RANGE_ARG,
            format!("{}  let af_threads = nwg.x * {LOCAL}u;\n", range_prelude(l)),
            "af_lo + gid.x",
            format!("{UNROLL}u * af_threads"),
        )
    } else {
        ("", String::new(), "gid.x", format!("{}u", UNROLL * threads))
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(global_invocation_id) gid: vec3<u32>{args}) {{\n{}{}{range}  for (var base = {first}; base < {end}; base += {step}) {{\n{copies}  }}\n}}\n",
        set_zero("gid"),
        body_prelude(l),
    );
    (s, words)
}

/// The entry argument a ranged kernel (`Lowered::range`) takes: the dispatched work-groups.
const RANGE_ARG: &str = ", @builtin(num_workgroups) nwg: vec3<u32>";

/// A ranged kernel's first and end unit, `af_lo` and `af_hi`, from its two range slots (the low
/// words of the slots after the kernel's own).
fn range_prelude(l: &Lowered) -> String {
    let slot = 2 * l.k.params.len();
    format!(
        "  let af_lo = params[{slot}u];\n  let af_hi = params[{}u];\n",
        slot + 2
    )
}

/// The head of the first pass's grid-stride loop over its units, `var` starting at `id`: up to
/// `units`, striding by the `groups` dispatched work-groups of `per_group` units each; for a
/// ranged kernel over `af_lo .. af_hi`, striding by the work-groups actually dispatched.
fn unit_loop(l: &Lowered, var: &str, id: &str, units: u64, groups: u32, per_group: u32) -> String {
    if l.range {
        format!(
            "{}  for (var {var} = af_lo + {id}; {var} < af_hi; {var} += nwg.x * {per_group}u) {{\n",
            range_prelude(l)
        )
    } else {
        format!(
            "  for (var {var} = {id}; {var} < {units}u; {var} += {}u) {{\n",
            groups.max(1) * per_group
        )
    }
}

/// The entry arguments after the ids (the dispatched work-groups for a ranged kernel).
fn range_args(l: &Lowered) -> &'static str {
    if l.range { RANGE_ARG } else { "" }
}

/// Short reductions: one thread per result evaluates its row and writes the results.
fn render_thread_rows(l: &Lowered, t: Target) -> (String, Option<u32>) {
    let (outer, inner) = (l.k.domain.outer, l.k.domain.inner);
    let groups = l.passes[0].groups;
    let reds: Vec<Red> = l.reductions.iter().map(Red::of).collect();
    let (decls, words) = bindings(l, 0, false, t);
    let acc = Accumulators::new(&reds);
    let mut write_out = String::new();
    for (ri, (r, red)) in l.reductions.iter().zip(&reds).enumerate() {
        let v = if red.is_arg() { "ai" } else { "a" };
        let _ = writeln!(write_out, "    out{}[o] = {v}{ri};", r.output);
    }
    let (init, fold) = (&acc.init, &acc.fold);
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(global_invocation_id) gid: vec3<u32>{}) {{\n{}{}{}{init}    for (var i = 0u; i < {inner}u; i++) {{\n      let lin = o * {inner}u + i;\n{}{fold}    }}\n{write_out}  }}\n}}\n",
        range_args(l),
        set_zero("gid"),
        body_prelude(l),
        unit_loop(l, "o", "gid.x", outer as u64, groups, LOCAL),
        body(l, "      ", Access::Scalar)
    );
    (s, words)
}

/// Statements of a work-group tree reduction of the `wv`/`wi` arrays into element 0, unrolled so
/// that every barrier stays in uniform control flow.
fn tree(reds: &[Red], threads: u32) -> String {
    let mut t = String::new();
    let mut half = threads / 2;
    while half > 0 {
        if threads == LOCAL {
            let _ = writeln!(t, "    if (tid < {half}u) {{");
        } else {
            let _ = writeln!(t, "    if (tid % {threads}u < {half}u) {{");
        }
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
    fn new(reds: &[Red]) -> Accumulators {
        Accumulators::named(reds, "", "      ")
    }
    /// Accumulators `a{r}{sfx}` (`ai{r}{sfx}`), their fold statements indented by `pad`.
    fn named(reds: &[Red], sfx: &str, pad: &str) -> Accumulators {
        let mut a = Accumulators {
            init: String::new(),
            fold: String::new(),
            to_wg: String::new(),
        };
        for (ri, red) in reds.iter().enumerate() {
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
                    &red.value(),
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
fn render_chunked(
    l: &Lowered,
    t: Target,
    r: ReduceLayout,
) -> Result<(String, Option<u32>), Unsupported> {
    let inner = l.k.domain.inner;
    let reds: Vec<Red> = l.reductions.iter().map(Red::of).collect();
    let wg = workgroup_arrays(&reds)?;
    let (c, chunk, jobs, groups) = (r.chunks, r.chunk, r.slots, r.groups);
    // Where each work-group's results go: the outputs, or per-reduction partials (values, and
    // indices for argmax/argmin) in scratch.
    let mut results = String::new();
    for (ri, (r, red)) in l.reductions.iter().zip(&reds).enumerate() {
        if r.partials.is_none() {
            let v = if red.is_arg() { "wi" } else { "wv" };
            let _ = writeln!(results, "      out{}[o] = {v}{ri}[0];", r.output);
            continue;
        }
        let _ = writeln!(results, "      part{ri}[job] = wv{ri}[0];");
        if red.is_arg() {
            let _ = writeln!(results, "      parti{ri}[job] = wi{ri}[0];");
        }
    }
    let (decls, immediate_words) = bindings(l, 0, false, t);
    let element = body(l, "        ", Access::Scalar);
    // Accumulators `a{r}_{u}`: copy `u` of the unrolled loop folds elements `i0 + u * LOCAL`; the
    // remainder loop folds into copy 0; then copies 1.. fold into copy 0, in order.
    let accs: Vec<Accumulators> = (0..UNROLL)
        .map(|u| Accumulators::named(&reds, &format!("_{u}"), "        "))
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
            "      {{\n        let i = {i};\n        let lin = o * {inner}u + i;\n{element}{}      }}\n",
            acc.fold
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
    let tree = tree(&reds, LOCAL);
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel: chunks ----\n{decls}{wg}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32{}) {{\n{}{}{}    let o = job / {c}u;\n    let first = (job % {c}u) * {chunk}u;\n    let end = min(first + {chunk}u, {inner}u);\n{init}    var i0 = first + tid;\n    for (; i0 + {}u < end; i0 += {}u) {{\n{unrolled}    }}\n    for (; i0 < end; i0 += {LOCAL}u) {{\n      {{\n        let i = i0;\n        let lin = o * {inner}u + i;\n{element}{}      }}\n    }}\n{combine}{}    workgroupBarrier();\n{tree}    if (tid == 0u) {{\n{results}    }}\n    workgroupBarrier();\n  }}\n}}\n",
        range_args(l),
        set_zero("wid"),
        body_prelude(l),
        unit_loop(l, "job", "wid.x", jobs, groups, 1),
        (UNROLL - 1) * LOCAL,
        UNROLL * LOCAL,
        accs[0].fold,
        accs[0].to_wg
    );
    if c > 1 {
        s.push_str(&render_final(l, &reds, r, t));
    }
    Ok((s, immediate_words))
}

/// The workgroup arrays of the trees (`wv{r}`, and `wi{r}` for argmax/argmin), or an error when
/// they exceed [`MAX_WORKGROUP_BYTES`].
fn workgroup_arrays(reds: &[Red]) -> Result<String, Unsupported> {
    let words: usize = reds.iter().map(|r| 1 + r.is_arg() as usize).sum();
    if words * LOCAL as usize * 4 > MAX_WORKGROUP_BYTES {
        return Err(unsupported(format!(
            "wgsl: {} reductions in one kernel exceed the workgroup memory limit",
            reds.len()
        )));
    }
    let mut wg = String::new();
    for (ri, red) in reds.iter().enumerate() {
        let _ = writeln!(wg, "var<workgroup> wv{ri}: array<{}, {LOCAL}>;", red.ty);
        if red.is_arg() {
            let _ = writeln!(wg, "var<workgroup> wi{ri}: array<u32, {LOCAL}>;");
        }
    }
    Ok(wg)
}

/// Column reductions (`lower::columns`): work-group `(b, c)` runs a thread per result `o` of
/// block `b` (adjacent threads on adjacent results, so each step of their walks reads one
/// coalesced row segment) over chunk `c` of the reduced extent, [`UNROLL`] independent
/// accumulators per thread (elements `i0 + u`, `i0` stepping by `UNROLL`, the remainder into the
/// first, then folded into the first in order). With one chunk the thread writes the outputs;
/// with several its partials at `o * C + c`, which `af_final` reduces.
fn render_columns(
    l: &Lowered,
    t: Target,
    r: ReduceLayout,
) -> Result<(String, Option<u32>), Unsupported> {
    let (outer, inner) = (l.k.domain.outer, l.k.domain.inner);
    let reds: Vec<Red> = l.reductions.iter().map(Red::of).collect();
    let (c, chunk, jobs, groups) = (r.chunks, r.chunk, r.slots, r.groups);
    let mut results = String::new();
    for (ri, (r, red)) in l.reductions.iter().zip(&reds).enumerate() {
        if r.partials.is_none() {
            let v = if red.is_arg() { "ai" } else { "a" };
            let _ = writeln!(results, "      out{}[o] = {v}{ri}_0;", r.output);
            continue;
        }
        let _ = writeln!(results, "      part{ri}[o * {c}u + job % {c}u] = a{ri}_0;");
        if red.is_arg() {
            let _ = writeln!(
                results,
                "      parti{ri}[o * {c}u + job % {c}u] = ai{ri}_0;"
            );
        }
    }
    let (decls, immediate_words) = bindings(l, 0, false, t);
    let element = body(l, "          ", Access::Scalar);
    let accs: Vec<Accumulators> = (0..UNROLL)
        .map(|u| Accumulators::named(&reds, &format!("_{u}"), "          "))
        .collect();
    let mut init = String::new();
    let mut unrolled = String::new();
    for (u, acc) in accs.iter().enumerate() {
        for line in acc.init.lines() {
            let _ = writeln!(init, "  {line}");
        }
        let _ = write!(
            unrolled,
            "        {{\n          let i = i0 + {u}u;\n          let lin = o * {inner}u + i;\n{element}{}        }}\n",
            acc.fold
        );
    }
    let mut combine = String::new();
    for (ri, red) in reds.iter().enumerate() {
        for u in 1..UNROLL {
            let _ = writeln!(
                combine,
                "      {}",
                red.fold(
                    &format!("a{ri}_0"),
                    &format!("ai{ri}_0"),
                    &format!("a{ri}_{u}"),
                    &format!("ai{ri}_{u}")
                )
            );
        }
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "\n// ---- kernel: columns ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_kernel(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32{}) {{\n{}{}{}    let o = (job / {c}u) * {LOCAL}u + tid;\n    let first = (job % {c}u) * {chunk}u;\n    let end = min(first + {chunk}u, {inner}u);\n    if (o < {outer}u) {{\n{init}      var i0 = first;\n      for (; i0 + {}u < end; i0 += {UNROLL}u) {{\n{unrolled}      }}\n      for (; i0 < end; i0++) {{\n        {{\n          let i = i0;\n          let lin = o * {inner}u + i;\n{element}{}        }}\n      }}\n{combine}{results}    }}\n  }}\n}}\n",
        range_args(l),
        set_zero("wid"),
        body_prelude(l),
        unit_loop(l, "job", "wid.x", jobs, groups, 1),
        UNROLL - 1,
        accs[0].fold,
    );
    if c > 1 {
        s.push_str(&workgroup_arrays(&reds)?);
        s.push_str(&render_final(l, &reds, r, t));
    }
    Ok((s, immediate_words))
}

/// Pass `af_final`: each result's `C` partials are reduced by `final_threads` threads of a
/// work-group (the whole group for the row layouts), striding over them, then a tree over those
/// threads; the first writes the outputs.
fn render_final(l: &Lowered, reds: &[Red], r: ReduceLayout, t: Target) -> String {
    let outer = l.k.domain.outer as u64;
    let (c, threads) = (r.chunks, r.final_threads as u32);
    let per = (LOCAL / threads) as u64;
    let tree = tree(reds, threads);
    let acc = Accumulators::new(reds);
    let mut fold = String::new();
    let mut results = String::new();
    for (ri, (r, red)) in l.reductions.iter().zip(reds).enumerate() {
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
        let _ = writeln!(results, "      fout{}[o] = {v}{ri}[tid];", r.output);
    }
    let (decls, _) = bindings(l, 1, false, t);
    // Work-group `g` combines the partials of results `g * per ..`, `threads` threads each.
    format!(
        "\n// ---- kernel: partials ----\n{decls}\n@compute @workgroup_size({LOCAL})\nfn af_final(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {{\n{}  for (var g = wid.x; g < {}u; g += {}u) {{\n    let o = g * {per}u + tid / {threads}u;\n{}    for (var j = tid % {threads}u; o < {outer}u && j < {c}u; j += {threads}u) {{\n{fold}    }}\n{}    workgroupBarrier();\n{tree}    if (tid % {threads}u == 0u && o < {outer}u) {{\n{results}    }}\n    workgroupBarrier();\n  }}\n}}\n",
        set_zero("wid"),
        outer.div_ceil(per),
        l.passes[1].groups.max(1),
        acc.init,
        acc.to_wg
    )
}
