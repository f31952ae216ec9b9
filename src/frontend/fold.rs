//! Constant folding and strength reduction at record time: an op on constants becomes a constant;
//! `x * 1`, `x / 1`, `x - 0` (and `x + 0` for integers) become `x`. Every fold is counted.

use super::{Handle, constant};
use crate::compile::Inner;
use crate::counters::Counters;
use crate::ir::{BinaryOp, DType, Scalar, Shape, Site, UnaryOp};
use crate::primitives::{
    binary_bool, binary_cmp, binary_float, binary_int, unary_bool, unary_float, unary_int,
    unary_pred,
};

fn folded() {
    Counters::add(&Inner::get().counters.ops_folded, 1);
}

/// The op applied to one scalar, with the same CPU source the kernels use.
pub fn eval_unary(op: UnaryOp, v: Scalar) -> Scalar {
    match v {
        Scalar::F32(x) if op.out_dtype(DType::F32) == Some(DType::Bool) => {
            let mut o = [false];
            unary_pred(op, &[x], &mut o);
            Scalar::Bool(o[0])
        }
        Scalar::F64(x) if op.out_dtype(DType::F64) == Some(DType::Bool) => {
            let mut o = [false];
            unary_pred(op, &[x], &mut o);
            Scalar::Bool(o[0])
        }
        Scalar::F32(x) => {
            let mut o = [0.0];
            unary_float(op, &[x], &mut o);
            Scalar::F32(o[0])
        }
        Scalar::F64(x) => {
            let mut o = [0.0];
            unary_float(op, &[x], &mut o);
            Scalar::F64(o[0])
        }
        Scalar::I32(x) => {
            let mut o = [0];
            unary_int(op, &[x], &mut o);
            Scalar::I32(o[0])
        }
        Scalar::U32(x) => {
            let mut o = [0];
            unary_int(op, &[x], &mut o);
            Scalar::U32(o[0])
        }
        Scalar::Bool(x) => {
            let mut o = [false];
            unary_bool(op, &[x], &mut o);
            Scalar::Bool(o[0])
        }
        Scalar::C64(_) | Scalar::C128(_) => unreachable!("complex values are never constants"),
    }
}

/// The op applied to two scalars of one type; `None` where the kernel would fail (division by zero).
pub fn eval_binary(op: BinaryOp, x: Scalar, y: Scalar, out: DType) -> Option<Scalar> {
    // Complex values are never constants (`frontend::constant`): nothing to fold.
    if out.is_complex() || x.dtype().is_complex() {
        return None;
    }
    macro_rules! go {
        ($f:ident, $a:expr, $b:expr, $zero:expr, $wrap:path) => {{
            let mut o = [$zero];
            $f(op, &[$a], &[$b], &mut o).ok()?;
            Some($wrap(o[0]))
        }};
    }
    if out == DType::Bool && x.dtype() != DType::Bool {
        return match (x, y) {
            (Scalar::F32(a), Scalar::F32(b)) => go!(binary_cmp, a, b, false, Scalar::Bool),
            (Scalar::F64(a), Scalar::F64(b)) => go!(binary_cmp, a, b, false, Scalar::Bool),
            (Scalar::I32(a), Scalar::I32(b)) => go!(binary_cmp, a, b, false, Scalar::Bool),
            (Scalar::U32(a), Scalar::U32(b)) => go!(binary_cmp, a, b, false, Scalar::Bool),
            _ => None,
        };
    }
    match (x, y) {
        (Scalar::F32(a), Scalar::F32(b)) => go!(binary_float, a, b, 0.0, Scalar::F32),
        (Scalar::F64(a), Scalar::F64(b)) => go!(binary_float, a, b, 0.0, Scalar::F64),
        (Scalar::I32(a), Scalar::I32(b)) => go!(binary_int, a, b, 0, Scalar::I32),
        (Scalar::U32(a), Scalar::U32(b)) => go!(binary_int, a, b, 0, Scalar::U32),
        (Scalar::Bool(a), Scalar::Bool(b)) => go!(binary_bool, a, b, false, Scalar::Bool),
        _ => None,
    }
}

pub fn unary(op: UnaryOp, a: &Handle, out: DType, site: Site) -> Option<Handle> {
    let v = a.konst?;
    if out.is_complex() || v.dtype().is_complex() {
        return None;
    }
    folded();
    Some(constant(eval_unary(op, v), a.shape.clone(), site))
}

pub fn binary(
    op: BinaryOp,
    a: &Handle,
    b: &Handle,
    shape: &Shape,
    out: DType,
    site: Site,
) -> Option<Handle> {
    if let (Some(x), Some(y)) = (a.konst, b.konst)
        && let Some(v) = eval_binary(op, x, y, out)
    {
        folded();
        return Some(constant(v, shape.clone(), site));
    }
    let is = |h: &Handle, f: fn(Scalar) -> bool| h.konst.is_some_and(f);
    let keep = |h: &Handle| (h.shape == *shape).then(|| h.clone());
    let r = match op {
        BinaryOp::Mul if is(b, Scalar::is_one) => keep(a),
        BinaryOp::Mul if is(a, Scalar::is_one) => keep(b),
        BinaryOp::Div if is(b, Scalar::is_one) => keep(a),
        // x - (+0) is x; x - (-0) is not (it turns -0.0 into +0.0).
        BinaryOp::Sub if b.konst.is_some_and(|v| v.is_zero() && v.bits() == 0) => keep(a),
        // x + 0.0 is not x when x is -0.0, so only integers fold here.
        BinaryOp::Add if out.is_int() && is(b, Scalar::is_zero) => keep(a),
        BinaryOp::Add if out.is_int() && is(a, Scalar::is_zero) => keep(b),
        _ => None,
    };
    if r.is_some() {
        folded();
    }
    r
}
