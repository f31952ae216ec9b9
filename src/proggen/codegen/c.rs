//! C renderer: one fused kernel becomes `af_kernel(in, out, red, t0, n)`, a loop over domain
//! elements `t0 .. t0 + n` that evaluates the register program in scalar locals (the C compiler
//! vectorises it), stores element-wise results to `out`, and writes each reduction's input to
//! `red` (the Rust side reduces those tiles exactly as the tile VM does). A kernel whose reduced
//! segments are short powers of two ([`segmented`]: `argmin_axis(1)` of `[n, 8]`, row sums of
//! 1024) reduces each segment itself, with the tile VM's arithmetic, and writes the results;
//! segments up to 16 long run one per trip of a loop vectorised across segments. It returns 0,
//! or 1 + the index of an instruction that faulted (integer division by zero).

use crate::ir::{
    BinaryOp, DType, GenKind, RandomDist, ReduceOp, RngAlgorithm, Scalar, UnaryOp,
    contiguous_strides,
};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, ParamKind};
use std::fmt::Write;

/// The primitive library's C sources, included in every generated file.
pub const HEADER: &str = include_str!("../../../primitives/c/arrayflow.h");

/// C type name of an element type (as the header spells it).
pub fn ctype(d: DType) -> &'static str {
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

fn literal(v: Scalar) -> String {
    let float = |x: f64, suffix: &str| {
        if x.is_nan() {
            "NAN".to_string()
        } else if x.is_infinite() {
            if x > 0.0 {
                "INFINITY".into()
            } else {
                "(-INFINITY)".into()
            }
        } else {
            format!("{x:?}{suffix}")
        }
    };
    match v {
        Scalar::F32(x) => {
            // f32's shortest round-trip decimal, parsed by C as f32.
            if x.is_finite() {
                format!("{x:?}f")
            } else {
                float(x as f64, "f")
            }
        }
        Scalar::F64(x) => float(x, ""),
        Scalar::I32(x) => format!("((i32){x}LL)"),
        Scalar::U32(x) => format!("{x}u"),
        Scalar::Bool(b) => format!("{}", b as u8),
        Scalar::C64(_) | Scalar::C128(_) => {
            unreachable!("complex values are never constants (`frontend::constant`)")
        }
    }
}

/// One row-independent bound on the last axis's position `x`: the fast body of a row is valid
/// where `0 <= base + coef * x < n` for every such bound (each fold's input already lies in its
/// range, so the fold is the identity and the load is affine in `x`).
struct Bound {
    base: String,
    coef: i64,
    n: usize,
}

/// What a row's fast body needs beyond its statements: the bounds of its interval and the
/// row-invariant parts of its positions (`o<j>`, computed once per row).
struct Fast {
    last: usize,
    bounds: Vec<Bound>,
    hoisted: Vec<String>,
}

impl Fast {
    /// `o<j> + step * d<last>`, with `o<j>` the row-invariant `base` (shared when repeated).
    fn affine(&mut self, base: String, step: i64) -> String {
        let j = match self.hoisted.iter().position(|h| *h == base) {
            Some(j) => j,
            None => {
                self.hoisted.push(base);
                self.hoisted.len() - 1
            }
        };
        format!(
            "(uint64_t)(o{j} + (int64_t){step} * (int64_t)d{})",
            self.last
        )
    }
}

/// The index expression a map selects for the current element. With `fast`, each fold whose
/// input moves along the last axis is written as the identity (its range pushed to the bounds)
/// and the position as a row-invariant offset plus a step along that axis.
fn index(map: &IndexMap, domain: &[usize], fast: Option<&mut Fast>) -> String {
    let last = fast.as_ref().map(|f| f.last);
    match map {
        IndexMap::Contiguous => "lin".into(),
        IndexMap::Strided { offset, strides } => {
            let mut s = format!("(int64_t){offset}");
            let mut step = 0;
            for (k, st) in strides.iter().enumerate() {
                if Some(k) == last {
                    step = *st as i64;
                } else if *st != 0 {
                    let _ = write!(s, " + (int64_t){st} * (int64_t)d{k}");
                }
            }
            match fast {
                Some(f) => f.affine(s, step),
                None => format!("(uint64_t)({s})"),
            }
        }
        IndexMap::Folded { dims } => {
            let mut s = String::from("0");
            let mut step = 0i64;
            let mut bounds = Vec::new();
            for d in dims {
                // The position as `base + coef * d_last` (coef 0 without a fast body).
                let mut base = format!("(int64_t){}", d.offset);
                let mut coef = 0i64;
                for (k, c) in d.coef.iter().enumerate() {
                    if Some(k) == last {
                        coef = *c as i64;
                    } else if *c != 0 {
                        let _ = write!(base, " + (int64_t){c} * (int64_t)d{k}");
                    }
                }
                for (f, near) in d.folds.iter().zip(d.near(domain)) {
                    if coef == 0 {
                        base = super::fold_expr(f, near, &base, &|x| format!("(int64_t){x}"));
                    } else if f.n <= 1 {
                        (base, coef) = (format!("(int64_t){}", f.a), 0);
                    } else {
                        bounds.push(Bound {
                            base: base.clone(),
                            coef,
                            n: f.n,
                        });
                        base = format!("((int64_t){} + (int64_t){} * ({base}))", f.a, f.b);
                        coef *= f.b as i64;
                    }
                }
                let _ = write!(s, " + ({base}) * {}", d.stride);
                step += coef * d.stride as i64;
            }
            match fast {
                Some(f) => {
                    f.bounds.extend(bounds);
                    f.affine(s, step)
                }
                None => format!("(uint64_t)({s})"),
            }
        }
    }
}

fn unary_fn(op: UnaryOp, input: DType) -> String {
    format!("af_{}_{}", op.name(), ctype(input))
}

/// Whether the op's C source takes a fault flag (integer division by zero).
fn faults(op: BinaryOp, input: DType) -> bool {
    input.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod)
}

fn binary_call(op: BinaryOp, input: DType, a: &str, b: &str) -> String {
    let f = format!("af_{}_{}", op.name(), ctype(input));
    if faults(op, input) {
        format!("{f}({a}, {b}, &bad)")
    } else {
        format!("{f}({a}, {b})")
    }
}

fn generator(kind: &GenKind, shape: &[usize], g: &str, t: DType) -> String {
    let ct = ctype(t);
    match kind {
        GenKind::Iota { axis } => {
            let cs = contiguous_strides(shape);
            iota_value(
                &format!("(({g} / {}u) % {}u)", cs[*axis], shape[*axis]),
                shape[*axis],
                t,
            )
        }
        GenKind::Identity => format!(
            "af_cast_f64_{ct}((f64)(({g} / {n}u) == ({g} % {n}u)))",
            n = shape[1]
        ),
        GenKind::Linspace {
            start,
            step,
            end,
            n,
        } => {
            format!(
                "af_cast_f64_{ct}(({g} + 1 == {n}u) ? {} : {} + {} * (f64){g})",
                literal(Scalar::F64(*end)),
                literal(Scalar::F64(*start)),
                literal(Scalar::F64(*step))
            )
        }
        GenKind::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => format!(
            "af_{}_{ct}({}u, {}u, {counter}ull + {g}{})",
            random_name(*alg, *dist),
            key[0],
            key[1],
            range_arg(*dist, &format!("{range}u"))
        ),
    }
}

/// An iota's value `pos` (a position below `extent`) as `t`: a plain C conversion where it is
/// exact (every position fits `t`, as `af_cast_f64_<t>` would give it), else through that cast.
fn iota_value(pos: &str, extent: usize, t: DType) -> String {
    let exact = match t {
        DType::F32 | DType::F64 | DType::I32 | DType::U32 => extent <= i32::MAX as usize,
        DType::Bool | DType::C64 | DType::C128 => false,
    };
    if exact {
        format!("({})({pos})", ctype(t))
    } else {
        format!("af_cast_f64_{}((f64){pos})", ctype(t))
    }
}

/// The library's name for a draw of `dist` from `alg` (`af_<name>_<type>`, `af_fill_<name>_<type>`).
pub(crate) fn random_name(alg: RngAlgorithm, dist: RandomDist) -> String {
    match alg {
        RngAlgorithm::Philox => dist.name().to_string(),
        RngAlgorithm::Hash32 => format!("h_{}", dist.name()),
    }
}

/// The extra argument of an integer draw (its range), empty for other distributions.
pub(crate) fn range_arg(dist: RandomDist, range: &str) -> String {
    if dist == RandomDist::Integers {
        format!(", {range}")
    } else {
        String::new()
    }
}

/// An integer draw's range: its parameter slot's low word.
fn range_param(slot: Option<u32>) -> String {
    slot.map_or("0u".into(), |r| format!("(u32)params[{r}]"))
}

/// Elements per sub-block whose random values are generated ahead of the element loop.
const SUB: usize = 256;

/// The longest reduced segment the C code reduces itself. The executor's grouping block and its
/// calls' element counts are multiples of it, so such segments never straddle either, and the
/// tile VM reduces each of them whole, with the arithmetic the C loop repeats.
pub const SEGMENT_MAX: usize = 1024;

/// Whether `k`'s C code (rendered with `segments`) reduces its segments itself: it has
/// reductions, its reduced extent is a power of two up to [`SEGMENT_MAX`], and it draws no
/// batched random numbers.
pub fn segmented(k: &FusedKernel) -> bool {
    let l = k.domain.inner;
    !k.reductions.is_empty()
        && l.is_power_of_two()
        && l <= SEGMENT_MAX
        && k.domain.first_reduced_axis().is_some()
        && batched_randoms(k).is_empty()
}

/// The random draws read contiguously: generated a sub-block at a time before the element loop
/// (eight Philox blocks at once, every word used), not one Philox block per element.
fn batched_randoms(k: &FusedKernel) -> Vec<usize> {
    k.instrs
        .iter()
        .enumerate()
        .filter(|(_, i)| {
            matches!(
                i,
                Instr::Random {
                    map: IndexMap::Contiguous,
                    ..
                }
            )
        })
        .map(|(n, _)| n)
        .collect()
}

/// The C source of one fused kernel's function; compile it after [`HEADER`]. `whole`: the kernel
/// runs over its domain in domain order (not a row-order form, whose `red` tiles the executor
/// accumulates), so a [`segmented`] kernel finishes its reductions itself.
pub fn render(k: &FusedKernel, whole: bool) -> String {
    let segments = whole && segmented(k);
    let mut s = String::with_capacity(4096);
    s.push_str("u32 af_kernel(const void *const *in_, void *const *out_, void *const *red_, const uint64_t *restrict params, uint64_t t0, uint64_t n) {\n");
    for (p, d) in k.inputs.iter().enumerate() {
        let _ = writeln!(
            s,
            "  const {t} *restrict in{p} = (const {t} *)in_[{p}];",
            t = ctype(*d)
        );
    }
    for st in &k.stores {
        let t = ctype(k.outputs[st.output as usize]);
        let _ = writeln!(
            s,
            "  {t} *restrict out{o} = ({t} *)out_[{o}];",
            o = st.output
        );
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {t} *restrict red{ri} = ({t} *)red_[{ri}];",
            t = ctype(k.reg_dtypes[r.reg as usize])
        );
    }
    for (slot, kind) in k.params.iter().enumerate() {
        if let ParamKind::Const(d) = kind {
            let _ = writeln!(
                s,
                "  const {t} p{slot} = af_bits_{t}(params[{slot}]);",
                t = ctype(*d)
            );
        }
    }
    let batched = batched_randoms(k);
    s.push_str("  u32 fault = 0;\n");
    let needs_index = k.instrs.iter().any(|i| match i {
        Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
            *map != IndexMap::Contiguous
        }
        _ => false,
    });
    let shape = &k.domain.shape;
    let cs = contiguous_strides(shape);
    // Index maps: the element loop runs along the domain's last axis in rows, so each element's
    // position costs an increment, not a division per axis (and the compiler can vectorise the
    // row: its loads are contiguous, broadcast or strided in `i`).
    let rows = needs_index && batched.is_empty() && !shape.is_empty();
    if segments {
        render_segments(k, &mut s);
    } else if rows {
        render_rows(k, &mut s);
    } else {
        if batched.is_empty() {
            s.push_str("  for (uint64_t i = 0; i < n; i++) {\n");
        } else {
            let _ = writeln!(
                s,
                "  for (uint64_t i0 = 0; i0 < n; i0 += {SUB}) {{\n  uint64_t m = n - i0 < {SUB} ? n - i0 : {SUB};"
            );
            for &n in &batched {
                let Instr::Random {
                    dst,
                    alg,
                    dist,
                    key_slot,
                    counter_slot,
                    range_slot,
                    ..
                } = &k.instrs[n]
                else {
                    unreachable!()
                };
                let f = random_name(*alg, *dist);
                let t = ctype(k.reg_dtypes[*dst as usize]);
                let range = range_arg(*dist, &range_param(*range_slot));
                let _ = writeln!(
                    s,
                    "  {t} rnd{n}[{SUB}]; af_fill_{f}_{t}((u32)params[{key_slot}], (u32)(params[{key_slot}] >> 32), params[{counter_slot}] + t0 + i0, rnd{n}, m{range});"
                );
            }
            s.push_str("  for (uint64_t i = i0; i < i0 + m; i++) {\n");
        }
        s.push_str("    uint64_t lin = t0 + i;\n");
        if needs_index {
            for (d, (&c, &n)) in cs.iter().zip(shape.iter()).enumerate() {
                let _ = writeln!(s, "    uint64_t d{d} = (lin / {c}u) % {}u;", n.max(1));
            }
        }
        s.push_str(&body(k, None, false));
        s.push_str(if batched.is_empty() {
            "  }\n"
        } else {
            "  }\n  }\n"
        });
    }
    s.push_str("  return fault;\n}\n");
    s
}

/// The element loop one reduced segment at a time (a kernel that is [`segmented`]; its calls
/// cover whole segments): the kept axes' positions once per segment, each reduction accumulated
/// in locals with the tile VM's arithmetic for a segment inside one block (`exec::cpu::reduce`:
/// float sums and products in eight f64 lanes by position modulo 8, lanes added in order, then
/// the identity; extrema folded from the identity; arg-extrema keep the first NaN, else the first
/// strictly best), and the result written to the reduction's output. Nothing goes to `red`.
fn render_segments(k: &FusedKernel, s: &mut String) {
    let shape = &k.domain.shape;
    let l = k.domain.inner;
    let first = k.domain.first_reduced_axis().expect("a segmented kernel");
    let cs = contiguous_strides(shape);
    for (ri, r) in k.reductions.iter().enumerate() {
        let t = ctype(k.outputs[r.output as usize]);
        let _ = writeln!(s, "  {t} *restrict rout{ri} = ({t} *)out_[{}];", r.output);
    }
    let mut reduced_positions = String::new();
    for d in first..shape.len() {
        let _ = writeln!(
            reduced_positions,
            "    uint64_t d{d} = (c / {}u) % {}u;",
            cs[d],
            shape[d].max(1)
        );
    }
    // Work that depends on the position within the segment only (a broadcast operand along the
    // reduced axes: k-means' centroids) runs once per call into tables `h<j>[c]`.
    let statements = instr_statements(k, None, true);
    let hoist = hoisting(k, first);
    let tabled: Vec<usize> = (0..hoist.len())
        .filter(|&j| hoist[j] == Hoist::Table)
        .collect();
    if !tabled.is_empty() {
        for &j in &tabled {
            let t = ctype(k.reg_dtypes[k.instrs[j].dst() as usize]);
            let _ = writeln!(s, "  {t} h{j}[{l}];");
        }
        let _ = writeln!(s, "  for (uint64_t c = 0; c < {l}u; c++) {{");
        s.push_str(&reduced_positions);
        s.push_str(&declarations(k));
        for (j, st) in statements.iter().enumerate() {
            if hoist[j] != Hoist::No || matches!(k.instrs[j], Instr::Const { .. }) {
                s.push_str(st);
            }
        }
        for &j in &tabled {
            let _ = writeln!(s, "    h{j}[c] = r{};", k.instrs[j].dst());
        }
        s.push_str("  }\n");
    }
    let seg = Segment {
        first,
        reduced_positions: &reduced_positions,
        statements: &statements,
        hoist: &hoist,
    };
    if l <= ACROSS_MAX && k.instrs.len() * l <= ACROSS_BUDGET {
        render_across(k, &seg, s);
        return;
    }
    let _ = writeln!(
        s,
        "  for (uint64_t i0 = 0; i0 < n; i0 += {l}u) {{\n    uint64_t lin0 = t0 + i0;\n    uint64_t o = lin0 / {l}u;"
    );
    for d in 0..first {
        let _ = writeln!(
            s,
            "    uint64_t d{d} = (lin0 / {}u) % {}u;",
            cs[d],
            shape[d].max(1)
        );
    }
    let lanes = l >= 8;
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    {}", accumulator(k, ri, r.op, lanes));
    }
    if lanes {
        let _ = writeln!(
            s,
            "    for (uint64_t c8 = 0; c8 < {l}u; c8 += 8) {{\n    for (uint64_t l = 0; l < 8; l++) {{\n    uint64_t c = c8 + l;"
        );
    } else {
        let _ = writeln!(s, "    for (uint64_t c = 0; c < {l}u; c++) {{");
    }
    s.push_str("    uint64_t i = i0 + c; (void)i;\n    uint64_t lin = lin0 + c;\n");
    s.push_str(&reduced_positions);
    s.push_str(&declarations(k));
    element_statements(k, &seg, s);
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    {}", accumulate(k, ri, r.op, r.reg, lanes));
    }
    s.push_str("    }\n");
    if lanes {
        for (ri, r) in k.reductions.iter().enumerate() {
            if let Some(fold) = chunk_fold(k, ri, r.op) {
                let _ = writeln!(s, "    {fold}");
            }
        }
        s.push_str("    }\n");
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    {}", finish(k, ri, r.op, lanes));
    }
    s.push_str("  }\n");
}

/// Longest reduced segment [`render_across`] writes out position by position.
const ACROSS_MAX: usize = 16;
/// Most instructions times segment length [`render_across`] writes (its code grows with both).
const ACROSS_BUDGET: usize = 4096;

/// What [`render_segments`] has worked out for a segmented kernel's element code.
struct Segment<'a> {
    /// The first reduced domain axis.
    first: usize,
    /// Statements setting the reduced axes' positions `d<first>..` from `c`.
    reduced_positions: &'a str,
    /// Each instruction's statements.
    statements: &'a [String],
    /// What the segment loop does with each instruction.
    hoist: &'a [Hoist],
}

/// Short segments (up to [`ACROSS_MAX`]: k-means' `argmin_axis(1)` over 8 centroids) one segment
/// per trip of a loop the C compiler vectorises across segments, each segment's positions
/// written out one after another (`c` a constant in each), its accumulators in locals. Loads
/// that depend on the segment only (a point's coordinates) are then the same expression in
/// every position, which the compiler loads once. Same arithmetic as the loop of
/// [`render_segments`]: float sums and products in f64 lanes by position modulo 8, arg-extrema
/// by the sequential rule that its chunks of 8 reproduce.
fn render_across(k: &FusedKernel, seg: &Segment, s: &mut String) {
    let shape = &k.domain.shape;
    let l = k.domain.inner;
    let cs = contiguous_strides(shape);
    // Lanes for float sums and products over whole chunks of 8; arg-extrema scan sequentially.
    let lanes = |op: ReduceOp| l >= 8 && !matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
    let can_fault = k.instrs.iter().any(|i| match i {
        Instr::Binary { op, a, .. } => faults(*op, k.reg_dtypes[*a as usize]),
        _ => false,
    });
    // Segments are independent; a kernel that can fault keeps its `fault` word in order.
    if !can_fault {
        s.push_str("  _Pragma(\"omp simd\")\n");
    }
    let _ = writeln!(
        s,
        "  for (uint64_t o = t0 / {l}u; o < (t0 + n) / {l}u; o++) {{\n    uint64_t lin0 = o * {l}u;\n    uint64_t i0 = lin0 - t0; (void)i0;"
    );
    // The kept axes' positions from the segment's index (their strides are multiples of `l`;
    // the outermost needs no modulo).
    for d in 0..seg.first {
        let q = cs[d] / l;
        let pos = if q == 1 {
            "o".to_string()
        } else {
            format!("(o / {q}u)")
        };
        if d == 0 {
            let _ = writeln!(s, "    uint64_t d0 = {pos};");
        } else {
            let _ = writeln!(s, "    uint64_t d{d} = {pos} % {}u;", shape[d].max(1));
        }
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    {}", accumulator(k, ri, r.op, lanes(r.op)));
    }
    for c in 0..l {
        let _ = writeln!(
            s,
            "    {{\n    const uint64_t c = {c}u, l = {}u; (void)l;\n    uint64_t i = i0 + c; (void)i;\n    uint64_t lin = lin0 + c;",
            c % 8
        );
        s.push_str(seg.reduced_positions);
        s.push_str(&declarations(k));
        element_statements(k, seg, s);
        for (ri, r) in k.reductions.iter().enumerate() {
            let _ = writeln!(s, "    {}", accumulate(k, ri, r.op, r.reg, lanes(r.op)));
        }
        s.push_str("    }\n");
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    {}", finish(k, ri, r.op, lanes(r.op)));
    }
    s.push_str("  }\n");
}

/// One element's statements in a segment loop: the instructions not hoisted (tabled ones read
/// from their table) and the element-wise stores.
fn element_statements(k: &FusedKernel, seg: &Segment, s: &mut String) {
    for (j, st) in seg.statements.iter().enumerate() {
        match seg.hoist[j] {
            Hoist::No => s.push_str(st),
            Hoist::Unused => {}
            Hoist::Table => {
                let _ = writeln!(s, "    r{} = h{j}[c];", k.instrs[j].dst());
            }
        }
    }
    for st in &k.stores {
        let _ = writeln!(s, "    out{}[lin] = r{};", st.output, st.reg);
    }
}

/// What a segmented kernel does with an instruction inside its segment loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hoist {
    /// It depends on the segment: computed for every element.
    No,
    /// It depends on the position within the segment only, and only such work reads it: computed
    /// once per call, before the loop.
    Unused,
    /// As `Unused`, but the per-element work reads it: computed once per call into a table.
    Table,
}

/// Which instructions of `k` depend on the position within the segment only (reduced axes from
/// `first` on): constants, loads whose maps move along reduced axes only, and operations on
/// those. A constant read per element stays in place (it costs nothing); other values read per
/// element come from a table.
fn hoisting(k: &FusedKernel, first: usize) -> Vec<Hoist> {
    let segment_only = |map: &IndexMap| match map {
        IndexMap::Contiguous => false,
        IndexMap::Strided { strides, .. } => strides[..first].iter().all(|&s| s == 0),
        IndexMap::Folded { dims } => dims
            .iter()
            .all(|d| d.coef[..first.min(d.coef.len())].iter().all(|&c| c == 0)),
    };
    let n = k.instrs.len();
    let mut inv = vec![false; n];
    let mut needed = vec![false; n];
    let mut writer: Vec<Option<usize>> = vec![None; k.reg_dtypes.len()];
    for (j, ins) in k.instrs.iter().enumerate() {
        let reads: &[u32] = match ins {
            Instr::Unary { a, .. } | Instr::Cast { a, .. } => std::slice::from_ref(a),
            Instr::Binary { a, b, .. } => &[*a, *b],
            Instr::Select { cond, a, b, .. } => &[*cond, *a, *b],
            _ => &[],
        };
        let producers: Vec<Option<usize>> = reads.iter().map(|&r| writer[r as usize]).collect();
        inv[j] = match ins {
            Instr::Const { .. } => true,
            Instr::Load { map, .. } => segment_only(map),
            Instr::Random { .. } | Instr::Gen { .. } => false,
            _ => producers.iter().all(|p| p.is_some_and(|p| inv[p])),
        };
        if !inv[j] {
            for p in producers.into_iter().flatten() {
                needed[p] = true;
            }
        }
        writer[ins.dst() as usize] = Some(j);
    }
    let finals = k
        .stores
        .iter()
        .map(|st| st.reg)
        .chain(k.reductions.iter().map(|r| r.reg));
    for r in finals {
        if let Some(p) = writer[r as usize] {
            needed[p] = true;
        }
    }
    (0..n)
        .map(|j| match (inv[j], needed[j], &k.instrs[j]) {
            (false, _, _) | (true, true, Instr::Const { .. }) => Hoist::No,
            (true, false, _) => Hoist::Unused,
            (true, true, _) => Hoist::Table,
        })
        .collect()
}

/// Whether register type `d` sums and multiplies in f64 (floats) rather than wrapping (integers).
fn float_acc(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

/// The declaration of reduction `ri`'s accumulator, set to its identity.
fn accumulator(k: &FusedKernel, ri: usize, op: ReduceOp, lanes: bool) -> String {
    let r = &k.reductions[ri];
    let t = k.reg_dtypes[r.reg as usize];
    let ct = ctype(t);
    match op {
        ReduceOp::Sum | ReduceOp::Prod if float_acc(t) => {
            let id = if op == ReduceOp::Sum { "0.0" } else { "1.0" };
            if lanes {
                format!("f64 a{ri}[8] = {{{id}, {id}, {id}, {id}, {id}, {id}, {id}, {id}}};")
            } else {
                // No whole chunk of 8: the eight identity lanes fold to the identity.
                format!("f64 a{ri} = {id};")
            }
        }
        ReduceOp::Sum => format!("u32 a{ri} = 0u;"),
        ReduceOp::Prod => format!("u32 a{ri} = 1u;"),
        ReduceOp::Max | ReduceOp::Min => {
            let max = op == ReduceOp::Max;
            let id = match (t, max) {
                (DType::F32 | DType::F64, true) => "-INFINITY".to_string(),
                (DType::F32 | DType::F64, false) => "INFINITY".to_string(),
                (DType::I32, true) => "INT32_MIN".to_string(),
                (DType::I32, false) => "INT32_MAX".to_string(),
                (_, true) => "0u".to_string(),
                (_, false) => "UINT32_MAX".to_string(),
            };
            format!("{ct} a{ri} = ({ct}){id};")
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin if lanes => {
            format!("{ct} a{ri} = 0; u32 b{ri} = 0u; {ct} v{ri}[8];")
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => format!("{ct} a{ri} = 0; u32 b{ri} = 0u;"),
        ReduceOp::Any => format!("b8 a{ri} = 0;"),
        ReduceOp::All => format!("b8 a{ri} = 1;"),
    }
}

/// One element's update of reduction `ri`'s accumulator from register `reg` (position `c` in
/// the segment, lane `l`).
fn accumulate(k: &FusedKernel, ri: usize, op: ReduceOp, reg: u32, lanes: bool) -> String {
    let t = k.reg_dtypes[reg as usize];
    let v = format!("r{reg}");
    let nan = |x: &str| {
        if float_acc(t) {
            format!("isnan({x})")
        } else {
            "0".into()
        }
    };
    match op {
        ReduceOp::Sum | ReduceOp::Prod if float_acc(t) => {
            let o = if op == ReduceOp::Sum { '+' } else { '*' };
            if lanes {
                format!("a{ri}[l] = a{ri}[l] {o} (f64){v};")
            } else {
                format!("a{ri} = a{ri} {o} (f64){v};")
            }
        }
        ReduceOp::Sum => format!("a{ri} = a{ri} + (u32){v};"),
        ReduceOp::Prod => format!("a{ri} = a{ri} * (u32){v};"),
        ReduceOp::Max => format!("a{ri} = af_max_{}(a{ri}, {v});", ctype(t)),
        ReduceOp::Min => format!("a{ri} = af_min_{}(a{ri}, {v});", ctype(t)),
        // Kept per chunk of 8 and folded by `chunk_fold`.
        ReduceOp::ArgMax | ReduceOp::ArgMin if lanes => format!("v{ri}[l] = {v};"),
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let cmp = if op == ReduceOp::ArgMax { '>' } else { '<' };
            // A float kept by a bit-mask select: GCC leaves `?:` of floats here a branch, which
            // stops the loop across segments from vectorising.
            let keep = if float_acc(t) {
                format!("af_sel_{}(take, {v}, a{ri})", ctype(t))
            } else {
                format!("take ? {v} : a{ri}")
            };
            format!(
                "{{ int take = (c == 0) | ((({v} {cmp} a{ri}) | {}) & !{}); a{ri} = {keep}; b{ri} = take ? (u32)c : b{ri}; }}",
                nan(&v),
                nan(&format!("a{ri}"))
            )
        }
        ReduceOp::Any => format!("a{ri} = a{ri} | {v};"),
        ReduceOp::All => format!("a{ri} = a{ri} & {v};"),
    }
}

/// An arg-extremum over a chunk of 8 values `v<ri>` (positions `c8 ..`), folded into the
/// segment's running best: the chunk's first NaN if it has one, else the first position holding
/// its extreme value (the first strictly best, as a sequential scan finds: an equal value
/// earlier would have been kept), then combined with the earlier chunks' best by the same rule.
/// Without branches on the values: finding the extreme and the matching mask vectorise.
fn chunk_fold(k: &FusedKernel, ri: usize, op: ReduceOp) -> Option<String> {
    if !matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
        return None;
    }
    let r = &k.reductions[ri];
    let t = k.reg_dtypes[r.reg as usize];
    let ct = ctype(t);
    let cmp = if op == ReduceOp::ArgMax { '>' } else { '<' };
    let v = format!("v{ri}");
    let (nan_mask, nan_m, nan_a) = if float_acc(t) {
        (
            format!(
                "u32 nm = 0; for (int j = 0; j < 8; j++) nm |= (u32)(isnan({v}[j]) != 0) << j;"
            ),
            "isnan(m)".to_string(),
            format!("isnan(a{ri})"),
        )
    } else {
        ("u32 nm = 0;".to_string(), "0".into(), "0".into())
    };
    Some(format!(
        "{{ {nan_mask} {ct} m; u32 bj; \
         if (nm) {{ bj = (u32)__builtin_ctz(nm); m = {v}[bj]; }} \
         else {{ m = {v}[0]; for (int j = 1; j < 8; j++) m = {v}[j] {cmp} m ? {v}[j] : m; \
         u32 em = 0; for (int j = 0; j < 8; j++) em |= (u32)({v}[j] == m) << j; bj = (u32)__builtin_ctz(em); }} \
         int take = (c8 == 0) | (((m {cmp} a{ri}) | {nan_m}) & !{nan_a}); \
         a{ri} = take ? m : a{ri}; b{ri} = take ? (u32)c8 + bj : b{ri}; }}"
    ))
}

/// Writes reduction `ri`'s result for segment `o`.
fn finish(k: &FusedKernel, ri: usize, op: ReduceOp, lanes: bool) -> String {
    let r = &k.reductions[ri];
    let t = k.reg_dtypes[r.reg as usize];
    let out = ctype(k.outputs[r.output as usize]);
    match op {
        ReduceOp::Sum | ReduceOp::Prod if float_acc(t) => {
            let (o, id) = if op == ReduceOp::Sum {
                ('+', "0.0")
            } else {
                ('*', "1.0")
            };
            let total = if lanes {
                let mut e = format!("a{ri}[0]");
                for j in 1..8 {
                    e = format!("({e} {o} a{ri}[{j}])");
                }
                e
            } else {
                format!("a{ri}")
            };
            format!("rout{ri}[o] = ({out})({id} {o} {total});")
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => format!("rout{ri}[o] = b{ri};"),
        _ => format!("rout{ri}[o] = ({out})a{ri};"),
    }
}

/// The element loop in rows along the domain's last axis: each element's position costs an
/// increment, not a division per axis. Where index maps fold along the last axis (roll, pad,
/// `concat` pieces clamped into range), each row runs a second, fast body over the interval where
/// every such fold is the identity: its loads are affine in the position, so the C compiler
/// vectorises them (a stencil's interior), and the general body runs only at the row's ends.
fn render_rows(k: &FusedKernel, s: &mut String) {
    let shape = &k.domain.shape;
    let nd = shape.len();
    let cs = contiguous_strides(shape);
    let last = shape[nd - 1].max(1);
    s.push_str("  for (uint64_t i0 = 0; i0 < n;) {\n    uint64_t lin0 = t0 + i0;\n");
    for d in 0..nd - 1 {
        let _ = writeln!(
            s,
            "    uint64_t d{d} = (lin0 / {}u) % {}u;",
            cs[d],
            shape[d].max(1)
        );
    }
    let _ = writeln!(
        s,
        "    uint64_t first = lin0 % {last}u;\n    uint64_t m = {last}u - first < n - i0 ? {last}u - first : n - i0;\n    uint64_t end = first + m;"
    );
    let element = |from: &str, to: &str, body: &str| {
        format!(
            "  for (uint64_t d{l} = {from}; d{l} < {to}; d{l}++) {{\n    uint64_t i = i0 + (d{l} - first);\n    uint64_t lin = t0 + i;\n{body}  }}\n",
            l = nd - 1
        )
    };
    let general = body(k, None, true);
    let mut f = Fast {
        last: nd - 1,
        bounds: Vec::new(),
        hoisted: Vec::new(),
    };
    let fast = body(k, Some(&mut f), true);
    if f.bounds.is_empty() {
        s.push_str(&element("first", "end", &general));
    } else {
        for (j, h) in f.hoisted.iter().enumerate() {
            let _ = writeln!(s, "    const int64_t o{j} = {h};");
        }
        let _ = writeln!(s, "    int64_t lo = 0, hi = {last};");
        let mut seen = Vec::new();
        for b in &f.bounds {
            let key = (&b.base, b.coef, b.n);
            if !seen.contains(&key) {
                seen.push(key);
                let _ = writeln!(
                    s,
                    "    af_narrow(&lo, &hi, {}, {}, {});",
                    b.base, b.coef, b.n
                );
            }
        }
        s.push_str("    uint64_t a = af_within(lo, first, end), b = af_within(hi, a, end);\n");
        s.push_str(&element("first", "a", &general));
        s.push_str(&element("a", "b", &fast));
        s.push_str(&element("b", "end", &general));
    }
    s.push_str("  i0 += m;\n  }\n");
}

/// One element's statements: the register program, its stores and reduction inputs. `fast` as in
/// [`index`]; `rows` when the loop keeps each axis's position in `d<k>` (an iota over the domain
/// is then that position).
fn body(k: &FusedKernel, fast: Option<&mut Fast>, rows: bool) -> String {
    let mut s = declarations(k);
    for st in instr_statements(k, fast, rows) {
        s.push_str(&st);
    }
    for st in &k.stores {
        let _ = writeln!(s, "    out{}[lin] = r{};", st.output, st.reg);
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    red{ri}[i] = r{};", r.reg);
    }
    s
}

/// The element's fault flag and registers.
fn declarations(k: &FusedKernel) -> String {
    let mut s = String::from("    u32 bad = 0; (void)bad;\n");
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(s, "    {} r{r};", ctype(*d));
    }
    s
}

/// Each instruction's statements (its assignment, and its fault check where it can fault).
fn instr_statements(k: &FusedKernel, mut fast: Option<&mut Fast>, rows: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(k.instrs.len());
    let shape = &k.domain.shape;
    let mut at = |map: &IndexMap| index(map, shape, fast.as_deref_mut());
    // Register types before allocation, to know each operand's element type.
    for (i, ins) in k.instrs.iter().enumerate() {
        let dst = ins.dst();
        let t = |r: u32| k.reg_dtypes[r as usize];
        let rhs = match ins {
            Instr::Load { input, map, .. } => format!("in{input}[{}]", at(map)),
            Instr::Const { slot, .. } => format!("p{slot}"),
            Instr::Random {
                map: IndexMap::Contiguous,
                ..
            } => format!("rnd{i}[i - i0]"),
            Instr::Random {
                alg,
                dist,
                key_slot,
                counter_slot,
                range_slot,
                map,
                ..
            } => format!(
                "af_{f}_{ct}((u32)params[{key_slot}], (u32)(params[{key_slot}] >> 32), params[{counter_slot}] + {g}{range})",
                f = random_name(*alg, *dist),
                ct = ctype(t(dst)),
                g = at(map),
                range = range_arg(*dist, &range_param(*range_slot))
            ),
            Instr::Gen {
                kind: GenKind::Iota { axis },
                shape: gs,
                map: IndexMap::Contiguous,
                ..
            } if rows && gs == shape => iota_value(&format!("d{axis}"), gs[*axis], t(dst)),
            Instr::Gen {
                kind,
                shape: gs,
                map,
                ..
            } => generator(kind, gs, &at(map), t(dst)),
            Instr::Unary { op, a, .. } => format!("{}(r{a})", unary_fn(*op, t(*a))),
            Instr::Binary { op, a, b, .. } => {
                binary_call(*op, t(*a), &format!("r{a}"), &format!("r{b}"))
            }
            Instr::Select { cond, a, b, .. } => format!("(r{cond} ? r{a} : r{b})"),
            Instr::Cast { to, a, .. } => format!("af_cast_{}_{}(r{a})", ctype(t(*a)), ctype(*to)),
        };
        let mut s = format!("    r{dst} = {rhs};\n");
        if let Instr::Binary { op, a, .. } = ins
            && faults(*op, t(*a))
        {
            let _ = writeln!(s, "    if (bad) {{ fault = {}u; bad = 0; }}", i + 1);
        }
        out.push(s);
    }
    out
}
