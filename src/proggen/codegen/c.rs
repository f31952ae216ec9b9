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
    }
}

/// The index expression a map selects for the current element.
fn index(map: &IndexMap, domain: &[usize]) -> String {
    match map {
        IndexMap::Contiguous => "lin".into(),
        IndexMap::Strided { offset, strides } => {
            let mut s = format!("(uint64_t)((int64_t){offset}");
            for (k, st) in strides.iter().enumerate() {
                if *st != 0 {
                    let _ = write!(s, " + (int64_t){st} * (int64_t)d{k}");
                }
            }
            s.push(')');
            s
        }
        IndexMap::Folded { dims } => {
            let mut s = String::from("(uint64_t)(0");
            for d in dims {
                let mut v = format!("(int64_t){}", d.offset);
                for (k, c) in d.coef.iter().enumerate() {
                    if *c != 0 {
                        let _ = write!(v, " + (int64_t){c} * (int64_t)d{k}");
                    }
                }
                for (f, near) in d.folds.iter().zip(d.near(domain)) {
                    v = super::fold_expr(f, near, &v, &|x| format!("(int64_t){x}"));
                }
                let _ = write!(s, " + ({v}) * {}", d.stride);
            }
            s.push(')');
            s
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
            format!(
                "af_cast_f64_{ct}((f64)(({g} / {}u) % {}u))",
                cs[*axis], shape[*axis]
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
        let nd = shape.len();
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
            "    uint64_t first = lin0 % {last}u;\n    uint64_t m = {last}u - first < n - i0 ? {last}u - first : n - i0;"
        );
        let _ = writeln!(
            s,
            "  for (uint64_t i = i0; i < i0 + m; i++) {{\n    uint64_t d{} = first + (i - i0);",
            nd - 1
        );
    } else if batched.is_empty() {
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
    s.push_str("    uint64_t lin = t0 + i;\n    u32 bad = 0; (void)bad;\n");
    if needs_index && !rows {
        for (d, (&c, &n)) in cs.iter().zip(shape.iter()).enumerate() {
            let _ = writeln!(s, "    uint64_t d{d} = (lin / {c}u) % {}u;", n.max(1));
        }
    }
    for (r, d) in k.reg_dtypes.iter().enumerate() {
        let _ = writeln!(s, "    {} r{r};", ctype(*d));
    }
    // Register types before allocation, to know each operand's element type.
    for (i, ins) in k.instrs.iter().enumerate() {
        let dst = ins.dst();
        let t = |r: u32| k.reg_dtypes[r as usize];
        let rhs = match ins {
            Instr::Load { input, map, .. } => format!("in{input}[{}]", index(map, &k.domain.shape)),
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
                g = index(map, &k.domain.shape),
                range = range_arg(*dist, &range_param(*range_slot))
            ),
            Instr::Gen {
                kind, shape, map, ..
            } => generator(kind, shape, &index(map, &k.domain.shape), t(dst)),
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
    s.push_str(if rows {
        "  }\n  i0 += m;\n  }\n"
    } else if batched.is_empty() {
        "  }\n"
    } else {
        "  }\n  }\n"
    });
    s.push_str("  return fault;\n}\n");
    s
}
