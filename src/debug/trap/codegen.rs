//! A trap check as device code: the predicate of a [`TrapCheck`] over a register, in OpenCL C or
//! WGSL, and the statement that raises the kernel's fault word when it fails. The GPU printers
//! call [`statement`] after the step that writes the checked register; a failure raises the
//! kernel's fault word and, where the keys fit, the first-failing word (`device.rs`), from which
//! the device executor takes the first failing element and check; the CPU tile VM then runs that
//! element's tile for its value (`exec/gpu/mod.rs`, the fault path). Floats are tested through their
//! bits, so fast-math assumptions of a shader compiler cannot drop the test.

use super::check::{TrapCheck, TrapPred};
use crate::ir::DType;

/// The device language a check is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenCL C (`fault` is the kernel's local fault code).
    OpenCl,
    /// WGSL (`fault` is the storage fault word, set atomically).
    Wgsl,
}

/// The fault code a failed trap check writes (any non-zero code sends the task to the CPU).
pub const TRAP_FAULT: u32 = u32::MAX;

/// Where a failing check also records its key (`super::device`): check number `check` of
/// `checks`, at the element whose linear index is `lin` in the printed code.
#[derive(Debug, Clone, Copy)]
pub struct FirstKey<'a> {
    /// The element's linear index (an expression of the printed code).
    pub lin: &'a str,
    /// The check's number in the kernel's checks.
    pub check: u32,
    /// How many checks the kernel has.
    pub checks: u32,
}

/// The statements of every check on one step's result (`traps`: each check's number and the
/// check), in `d`; with `checks` (the kernel's check count, when its keys fit), each also raises
/// the first-failing word at element `lin`.
pub fn step_statements(
    traps: &[(u32, TrapCheck)],
    reg: u32,
    ty: DType,
    operands: &[(u32, DType)],
    checks: Option<u32>,
    d: Dialect,
) -> Vec<String> {
    traps
        .iter()
        .map(|(c, check)| {
            let first = checks.map(|checks| FirstKey {
                lin: "lin",
                check: *c,
                checks,
            });
            statement(check, reg, ty, operands, d, first)
        })
        .collect()
}

/// The statement testing register `r{reg}` of type `ty` against check `c`; `operands` are the
/// instruction's operand registers and types (a NaN/Inf trap fires only where the op created the
/// value: no operand NaN for a NaN, all operands finite for an infinity). With `first`, a failure
/// also raises the first-failing word: OpenCL keeps the thread's greatest word in the local
/// `af_first` (the kernel's end raises the buffer's word with one atomic max), WGSL raises
/// `fault[1]` at once.
pub fn statement(
    c: &TrapCheck,
    reg: u32,
    ty: DType,
    operands: &[(u32, DType)],
    d: Dialect,
    first: Option<FirstKey>,
) -> String {
    let x = format!("r{reg}");
    let c = if c.on_created() {
        created(c.pred, &x, ty, operands, d)
    } else {
        condition(c.pred, &x, ty, d)
    };
    let key = first.map(|f| match d {
        Dialect::OpenCl => format!(
            " af_first = max(af_first, 0xffffffffu - (u32)({} * {}UL + {}UL));",
            f.lin, f.checks, f.check
        ),
        Dialect::Wgsl => format!(
            " atomicMax(&fault[1], 0xffffffffu - ({} * {}u + {}u));",
            f.lin, f.checks, f.check
        ),
    });
    let key = key.unwrap_or_default();
    match d {
        Dialect::OpenCl => format!("if ({c}) {{ fault = {TRAP_FAULT}u;{key} }}"),
        Dialect::Wgsl => format!("if ({c}) {{ atomicStore(&fault[0], {TRAP_FAULT}u);{key} }}"),
    }
}

/// The condition under which `x` is a NaN or infinity that the op created (see
/// [`TrapPred::created`]).
fn created(pred: TrapPred, x: &str, ty: DType, operands: &[(u32, DType)], d: Dialect) -> String {
    if !matches!(ty, DType::F32 | DType::F64) {
        return "false".into();
    }
    let floats: Vec<(String, DType)> = operands
        .iter()
        .filter(|(_, t)| matches!(t, DType::F32 | DType::F64))
        .map(|&(r, t)| (format!("r{r}"), t))
        .collect();
    let all = |op: &str| -> String {
        floats
            .iter()
            .map(|(r, t)| format!(" && !{}", float_bits(r, *t, d, op)))
            .collect()
    };
    let nan = format!("({}{})", float_bits(x, ty, d, ">"), all(">"));
    let inf = format!("({}{})", float_bits(x, ty, d, "=="), all(">="));
    match pred {
        TrapPred::Nan => nan,
        TrapPred::Inf => inf,
        _ => format!("({nan} || {inf})"),
    }
}

/// The bits test `bits & mask OP inf` of a float register.
fn float_bits(x: &str, ty: DType, d: Dialect, op: &str) -> String {
    match (ty, d) {
        (DType::F64, _) => {
            format!("((as_ulong({x}) & 0x7fffffffffffffffUL) {op} 0x7ff0000000000000UL)")
        }
        (_, Dialect::OpenCl) => format!("((as_uint({x}) & 0x7fffffffu) {op} 0x7f800000u)"),
        (_, Dialect::Wgsl) => format!("((bitcast<u32>({x}) & 0x7fffffffu) {op} 0x7f800000u)"),
    }
}

/// A float bound as a literal of `ty`.
fn float_literal(v: f64, ty: DType, d: Dialect) -> String {
    match (ty, d) {
        (DType::F64, _) => format!("{v:?}"),
        (_, Dialect::OpenCl) => format!("{:?}f", v as f32),
        (_, Dialect::Wgsl) => format!("{:?}f", v as f32),
    }
}

/// The condition under which `x` of type `ty` fails `pred`.
pub fn condition(pred: TrapPred, x: &str, ty: DType, d: Dialect) -> String {
    let float = matches!(ty, DType::F32 | DType::F64);
    match pred {
        TrapPred::Nan | TrapPred::Inf | TrapPred::NonFinite if !float => "false".into(),
        TrapPred::Nan => float_bits(x, ty, d, ">"),
        TrapPred::Inf => float_bits(x, ty, d, "=="),
        TrapPred::NonFinite => float_bits(x, ty, d, ">="),
        TrapPred::OutOfRange { lo, hi } if float => {
            let mut c = vec![float_bits(x, ty, d, ">")];
            if lo.is_finite() {
                c.push(format!("({x} < {})", float_literal(lo, ty, d)));
            }
            if hi.is_finite() {
                c.push(format!("({x} > {})", float_literal(hi, ty, d)));
            }
            format!("({})", c.join(" || "))
        }
        TrapPred::OutOfRange { lo, hi } => {
            let (min, max, sfx) = match ty {
                DType::I32 => (-(i32::MAX as f64), i32::MAX as f64, "i"),
                DType::U32 => (0.0, u32::MAX as f64, "u"),
                _ => (0.0, 1.0, "u"),
            };
            let (lo, hi) = (lo.ceil(), hi.floor());
            if lo > hi || lo > max || hi < min {
                return "true".into();
            }
            let sfx = if d == Dialect::OpenCl && sfx == "i" {
                ""
            } else {
                sfx
            };
            let v = if ty == DType::Bool {
                match d {
                    Dialect::OpenCl => format!("(uint){x}"),
                    Dialect::Wgsl => format!("select(0u, 1u, {x})"),
                }
            } else {
                x.to_string()
            };
            let mut c = Vec::new();
            if lo > min {
                c.push(format!("({v} < {}{sfx})", lo as i64));
            }
            if hi < max {
                c.push(format!("({v} > {}{sfx})", hi as i64));
            }
            if c.is_empty() {
                return "false".into();
            }
            format!("({})", c.join(" || "))
        }
        TrapPred::False => match (ty, d) {
            (DType::Bool, Dialect::Wgsl) => format!("(!{x})"),
            (DType::F32 | DType::F64, _) => format!("({x} == 0.0)"),
            _ => format!("({x} == 0)"),
        },
    }
}
