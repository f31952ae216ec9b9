//! C renderer: one fused kernel becomes `af_kernel(in, out, red, t0, n)`, a loop over domain
//! elements `t0 .. t0 + n` that evaluates the register program in scalar locals (the C compiler
//! vectorises it), stores element-wise results to `out`, and writes each reduction's input to
//! `red` (the Rust side reduces those tiles exactly as the tile VM does). It returns 0, or 1 + the
//! index of an instruction that faulted (integer division by zero).

use crate::ir::{
    BinaryOp, DType, GenKind, RandomDist, RngAlgorithm, Scalar, UnaryOp, contiguous_strides,
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

/// The C source of one fused kernel's function; compile it after [`HEADER`].
pub fn render(k: &FusedKernel) -> String {
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
    // Random values read contiguously are generated a sub-block at a time before the element
    // loop (eight Philox blocks at once, every word used), not one Philox block per element.
    let batched: Vec<usize> = k
        .instrs
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
        .collect();
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
    if rows {
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
fn body(k: &FusedKernel, mut fast: Option<&mut Fast>, rows: bool) -> String {
    let mut s = String::from("    u32 bad = 0; (void)bad;\n");
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(s, "    {} r{r};", ctype(*d));
    }
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
        let _ = writeln!(s, "    r{dst} = {rhs};");
        if let Instr::Binary { op, a, .. } = ins
            && faults(*op, t(*a))
        {
            let _ = writeln!(s, "    if (bad) {{ fault = {}u; bad = 0; }}", i + 1);
        }
    }
    for st in &k.stores {
        let _ = writeln!(s, "    out{}[lin] = r{};", st.output, st.reg);
    }
    for (ri, r) in k.reductions.iter().enumerate() {
        let _ = writeln!(s, "    red{ri}[i] = r{};", r.reg);
    }
    s
}
