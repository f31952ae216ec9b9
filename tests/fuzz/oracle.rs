//! The fuzzer's oracle: an interpreter over plain `Vec<f64>` (every element type's values are
//! exact in f64) with shapes and strides of its own, written for the fuzzer from the API's
//! documented semantics. Each element carries an error bound (`tol.rs`). An `Err` means the
//! expression leaves the domain the fuzzer checks (a logarithm of a value near 0, a division by
//! a divisor within its error of 0, a result too large): the generator draws another.

use super::program::{Bin, Expr, Opd, Red, Scan, SliceAxis, Ty, Un, convert, data};
use super::tol::{self, DC};
use std::cmp::Ordering;

/// An array's ideal values and their error bounds.
#[derive(Clone, Debug)]
pub struct OArr {
    pub ty: Ty,
    pub shape: Vec<usize>,
    pub v: Vec<f64>,
    pub e: Vec<f64>,
}

/// Variables by id (`None`: never bound or dropped).
pub type Env = Vec<Option<OArr>>;

pub type R<T> = Result<T, String>;

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = lin % shape[d];
        lin /= shape[d];
    }
    idx
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// The element of an array of `shape` that output index `out` of a broadcast reads.
fn bsrc(out: &[usize], shape: &[usize]) -> usize {
    let st = strides(shape);
    let off = out.len() - shape.len();
    (0..shape.len())
        .map(|d| {
            if shape[d] == 1 {
                0
            } else {
                out[off + d] * st[d]
            }
        })
        .sum()
}

impl OArr {
    fn map_idx(&self, ty: Ty, shape: Vec<usize>, src: impl Fn(&[usize]) -> usize) -> OArr {
        let n = numel(&shape);
        let (mut v, mut e) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let j = src(&unravel(i, &shape));
            v.push(self.v[j]);
            e.push(self.e[j]);
        }
        OArr { ty, shape, v, e }
    }
    fn lo(&self, i: usize) -> f64 {
        self.v[i] - self.e[i]
    }
    fn hi(&self, i: usize) -> f64 {
        self.v[i] + self.e[i]
    }
}

fn get(env: &Env, id: usize) -> R<&OArr> {
    env.get(id)
        .and_then(|x| x.as_ref())
        .ok_or_else(|| format!("variable {id} is not bound"))
}

/// An operand as an array (a scalar becomes a 0-D array of `ty`).
fn operand(env: &Env, o: &Opd, ty: Ty) -> R<OArr> {
    match o {
        Opd::Var(v) => get(env, *v).cloned(),
        Opd::Scalar(s) => Ok(OArr {
            ty,
            shape: vec![],
            v: vec![ty.round(*s)],
            e: vec![0.0],
        }),
    }
}

fn wrap(ty: Ty, x: i64) -> f64 {
    match ty {
        Ty::I32 => x as i32 as f64,
        Ty::U32 => x as u32 as f64,
        _ => unreachable!(),
    }
}

/// Evaluates `expr` over `env`.
pub fn eval(expr: &Expr, env: &Env) -> R<OArr> {
    if let Expr::Complex { ty, e } = expr {
        return super::complex::eval(e, *ty, &|id| get(env, id).cloned());
    }
    match expr {
        Expr::Input {
            ty,
            shape,
            seed,
            lo,
            hi,
        } => {
            let v: Vec<f64> = data(*seed, numel(shape), *lo, *hi)
                .into_iter()
                .map(|x| convert(*ty, x))
                .collect();
            let e = vec![0.0; v.len()];
            Ok(OArr {
                ty: *ty,
                shape: shape.clone(),
                v,
                e,
            })
        }
        Expr::Full { ty, shape, value } => {
            let n = numel(shape);
            Ok(OArr {
                ty: *ty,
                shape: shape.clone(),
                v: vec![ty.round(*value); n],
                e: vec![0.0; n],
            })
        }
        Expr::Iota { ty, shape, axis } => {
            let n = numel(shape);
            let v = (0..n)
                .map(|i| ty.round(unravel(i, shape)[*axis] as f64))
                .collect();
            Ok(OArr {
                ty: *ty,
                shape: shape.clone(),
                v,
                e: vec![0.0; n],
            })
        }
        Expr::Uniform { ty, shape, .. } => {
            // Values in [0, 1 - 2^-24] (f32) or [0, 1 - 2^-53] (f64): an interval centred at c
            // of radius c, just inside [0, 1).
            let c = if *ty == Ty::F32 {
                0.5 - 2f64.powi(-26)
            } else {
                0.5 - 2f64.powi(-55)
            };
            let n = numel(shape);
            Ok(OArr {
                ty: *ty,
                shape: shape.clone(),
                v: vec![c; n],
                e: vec![c; n],
            })
        }
        Expr::Unary { op, a } => unary(*op, get(env, *a)?),
        Expr::Binary { op, a, b } => {
            let ty = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => get(env, *v)?.ty,
                _ => return Err("two scalars".into()),
            };
            binary(*op, &operand(env, a, ty)?, &operand(env, b, ty)?)
        }
        Expr::Select { c, a, b } => {
            let ty = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => get(env, *v)?.ty,
                _ => return Err("two scalars".into()),
            };
            select(get(env, *c)?, &operand(env, a, ty)?, &operand(env, b, ty)?)
        }
        Expr::Reduce { op, a, axes } => reduce(*op, get(env, *a)?, axes.as_deref()),
        Expr::Matmul { a, b } => matmul(get(env, *a)?, get(env, *b)?),
        Expr::Gather { a, idx, axis } => gather(get(env, *a)?, get(env, *idx)?, *axis),
        Expr::Concat { parts, axis } => {
            let ps: Vec<&OArr> = parts.iter().map(|p| get(env, *p)).collect::<R<_>>()?;
            concat(&ps, *axis)
        }
        Expr::Reshape { a, shape } => {
            let x = get(env, *a)?;
            if numel(shape) != x.v.len() {
                return Err("reshape size".into());
            }
            Ok(OArr {
                ty: x.ty,
                shape: shape.clone(),
                v: x.v.clone(),
                e: x.e.clone(),
            })
        }
        Expr::Permute { a, perm } => {
            let x = get(env, *a)?;
            let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
            let st = strides(&x.shape);
            Ok(x.map_idx(x.ty, shape, |o| {
                perm.iter().enumerate().map(|(i, &p)| o[i] * st[p]).sum()
            }))
        }
        Expr::Slice { a, axes } => slice(get(env, *a)?, axes),
        Expr::Broadcast { a, shape } => {
            let x = get(env, *a)?;
            if broadcast_shape(&x.shape, shape).as_deref() != Some(shape) {
                return Err("broadcast".into());
            }
            Ok(x.map_idx(x.ty, shape.clone(), |o| bsrc(o, &x.shape)))
        }
        Expr::Roll { a, shift, axis } => {
            let x = get(env, *a)?;
            let st = strides(&x.shape);
            let n = x.shape[*axis] as isize;
            Ok(x.map_idx(x.ty, x.shape.clone(), |o| {
                (0..o.len())
                    .map(|d| {
                        let i = if d == *axis {
                            (o[d] as isize - shift).rem_euclid(n) as usize
                        } else {
                            o[d]
                        };
                        i * st[d]
                    })
                    .sum()
            }))
        }
        Expr::Pad { a, widths, mode, c } => pad(get(env, *a)?, widths, *mode, *c),
        Expr::Literal { ty, shape, values } => {
            if numel(shape) != values.len() {
                return Err("literal size".into());
            }
            Ok(OArr {
                ty: *ty,
                shape: shape.clone(),
                v: values.iter().map(|&x| ty.round(x)).collect(),
                e: vec![0.0; values.len()],
            })
        }
        Expr::Scan { op, a, axis } => scan(*op, get(env, *a)?, *axis),
        Expr::Sort { a, axis, desc } => {
            let x = get(env, *a)?;
            match axis {
                Some(ax) => sort_values(x, *ax, *desc),
                None => sort_values(&flat(x), 0, false),
            }
        }
        Expr::Argsort { a, axis, desc, nan } => {
            let mut x = get(env, *a)?.clone();
            if let Some((m, _)) = nan {
                let m = get(env, *m)?;
                if !x.ty.is_float()
                    || m.ty != Ty::Bool
                    || broadcast_shape(&m.shape, &x.shape).as_ref() != Some(&x.shape)
                    || m.e.iter().any(|&e| e != 0.0)
                {
                    return Err("argsort's NaN mask".into());
                }
                for i in 0..x.v.len() {
                    if m.v[bsrc(&unravel(i, &x.shape), &m.shape)] != 0.0 {
                        (x.v[i], x.e[i]) = (f64::NAN, 0.0);
                    }
                }
            }
            match axis {
                Some(ax) => argsort(&x, *ax, *desc),
                None => argsort(&flat(&x), 0, false),
            }
        }
        Expr::TopK {
            a,
            k,
            axis,
            indices,
        } => {
            let x = get(env, *a)?;
            let full = if *indices {
                argsort(x, *axis, true)?
            } else {
                sort_values(x, *axis, true)?
            };
            if *k == 0 || *k > x.shape[*axis] {
                return Err("topk's k".into());
            }
            let mut s: Vec<SliceAxis> = vec![(None, None, 1); *axis];
            s.push((Some(0), Some(*k as isize), 1));
            slice(&full, &s)
        }
        Expr::TakeAlong { a, idx, axis } => take_along(get(env, *a)?, get(env, *idx)?, *axis),
        Expr::Scatter {
            a,
            idx,
            values,
            axis,
            add,
        } => scatter(
            get(env, *a)?,
            get(env, *idx)?,
            get(env, *values)?,
            *axis,
            *add,
        ),
        Expr::Tile { a, reps } => {
            let x = get(env, *a)?;
            let rank = reps.len().max(x.shape.len());
            let pad = |v: &[usize]| -> Vec<usize> {
                std::iter::repeat_n(1, rank - v.len())
                    .chain(v.iter().copied())
                    .collect()
            };
            let (s, r) = (pad(&x.shape), pad(reps));
            let shape: Vec<usize> = s.iter().zip(&r).map(|(a, b)| a * b).collect();
            let st = strides(&s);
            Ok(x.map_idx(x.ty, shape, |o| {
                (0..rank).map(|d| (o[d] % s[d]) * st[d]).sum()
            }))
        }
        Expr::Complex { .. } => unreachable!("handled above"),
    }
}

/// Largest `|f'|` over `[lo, hi]` for the functions here: `|f'|` is largest at an end or at 0.
fn dmax(df: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    let mut m = df(lo).abs().max(df(hi).abs());
    if lo < 0.0 && hi > 0.0 {
        m = m.max(df(0.0).abs());
    }
    m
}

/// A float function with its derivative; `ok` says whether the interval is in the domain.
fn float_fn(
    x: &OArr,
    f: impl Fn(f64) -> f64,
    df: impl Fn(f64) -> f64,
    ok: impl Fn(f64, f64, f64) -> bool,
    k: f64,
) -> R<OArr> {
    let mut out = x.clone();
    for i in 0..x.v.len() {
        let (v, e) = (x.v[i], x.e[i]);
        if e.is_infinite() {
            out.e[i] = DC;
            out.v[i] = 0.0;
            continue;
        }
        let (lo, hi) = (v - e, v + e);
        if !ok(lo, v, hi) {
            return Err(format!("domain at {v} ± {e}"));
        }
        let r = f(v);
        let d = if e == 0.0 { 0.0 } else { dmax(&df, lo, hi) };
        out.v[i] = r;
        out.e[i] = tol::rounded(x.ty, d * e, k, r);
    }
    Ok(out)
}

/// A step function (floor, ...): exact where the interval maps to one value, else DC.
fn step_fn(x: &OArr, f: impl Fn(f64) -> f64) -> OArr {
    let mut out = x.clone();
    for i in 0..x.v.len() {
        out.v[i] = f(x.v[i]);
        out.e[i] = if x.e[i] == 0.0 || f(x.lo(i)) == f(x.hi(i)) && x.e[i].is_finite() {
            0.0
        } else {
            DC
        };
    }
    out
}

fn int_map(x: &OArr, f: impl Fn(i64) -> i64) -> OArr {
    let mut out = x.clone();
    for i in 0..x.v.len() {
        out.v[i] = wrap(x.ty, f(x.v[i] as i64));
    }
    out
}

fn unary(op: Un, x: &OArr) -> R<OArr> {
    use std::f64::consts::{LN_2, LN_10, PI};
    let ty = x.ty;
    let fk = tol::FN_UNITS;
    let any = |_: f64, _: f64, _: f64| true;
    let pos = |lo: f64, _: f64, _: f64| lo > 0.0;
    let unit_open = |lo: f64, _: f64, hi: f64| lo > -0.999 && hi < 0.999;
    if ty.is_float() {
        return match op {
            Un::Neg => Ok(OArr {
                v: x.v.iter().map(|v| -v).collect(),
                ..x.clone()
            }),
            Un::Abs => Ok(OArr {
                v: x.v.iter().map(|v| v.abs()).collect(),
                ..x.clone()
            }),
            Un::Sign => Ok(step_fn(x, |v| {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            })),
            Un::Exp => float_fn(x, f64::exp, f64::exp, any, fk),
            Un::Exp2 => float_fn(x, f64::exp2, |v| LN_2 * v.exp2(), any, fk),
            Un::Sqrt => {
                let mut out = float_fn(
                    x,
                    f64::sqrt,
                    |v| 0.5 / v.sqrt(),
                    |lo, v, hi| lo > 0.0 || (lo == hi && v >= 0.0),
                    fk,
                )?;
                // Hölder: |sqrt(a') - sqrt(a)| <= sqrt(|a' - a|).
                for i in 0..x.v.len() {
                    let h = tol::rounded(ty, x.e[i].sqrt(), fk, out.v[i]);
                    out.e[i] = out.e[i].min(h);
                }
                Ok(out)
            }
            Un::Rsqrt => float_fn(x, |v| 1.0 / v.sqrt(), |v| 0.5 * v.powf(-1.5), pos, fk),
            Un::Cbrt => float_fn(
                x,
                f64::cbrt,
                |v| 1.0 / (3.0 * v.cbrt().powi(2)),
                |lo, _, hi| lo > 0.0 || hi < 0.0 || lo == hi,
                fk,
            ),
            Un::Ln => float_fn(x, f64::ln, |v| 1.0 / v, pos, fk),
            Un::Log2 => float_fn(x, f64::log2, |v| 1.0 / (v * LN_2), pos, fk),
            Un::Log10 => float_fn(x, f64::log10, |v| 1.0 / (v * LN_10), pos, fk),
            Un::Sin => float_fn(x, f64::sin, |_| 1.0, any, fk),
            Un::Cos => float_fn(x, f64::cos, |_| 1.0, any, fk),
            Un::Tan => float_fn(
                x,
                f64::tan,
                |v| 1.0 / v.cos().powi(2),
                |lo, _, hi| {
                    ((lo + PI / 2.0) / PI).floor() == ((hi + PI / 2.0) / PI).floor()
                        && lo.cos().abs() > 0.01
                        && hi.cos().abs() > 0.01
                },
                fk,
            ),
            Un::Asin => float_fn(x, f64::asin, |v| 1.0 / (1.0 - v * v).sqrt(), unit_open, fk),
            Un::Acos => float_fn(x, f64::acos, |v| 1.0 / (1.0 - v * v).sqrt(), unit_open, fk),
            Un::Atan => float_fn(x, f64::atan, |v| 1.0 / (1.0 + v * v), any, fk),
            Un::Sinh => float_fn(x, f64::sinh, f64::cosh, any, fk),
            Un::Cosh => float_fn(x, f64::cosh, f64::sinh, any, fk),
            Un::Tanh => float_fn(x, f64::tanh, |v| 1.0 - v.tanh().powi(2), any, fk),
            Un::Erf => float_fn(x, libm::erf, |v| 2.0 / PI.sqrt() * (-v * v).exp(), any, fk),
            Un::Erfc => float_fn(x, libm::erfc, |v| 2.0 / PI.sqrt() * (-v * v).exp(), any, fk),
            Un::Asinh => float_fn(x, f64::asinh, |v| 1.0 / (v * v + 1.0).sqrt(), any, fk),
            Un::Acosh => float_fn(
                x,
                f64::acosh,
                |v| 1.0 / (v * v - 1.0).sqrt(),
                |lo, _, _| lo > 1.001,
                fk,
            ),
            Un::Atanh => float_fn(x, f64::atanh, |v| 1.0 / (1.0 - v * v), unit_open, fk),
            Un::Floor => Ok(step_fn(x, f64::floor)),
            Un::Ceil => Ok(step_fn(x, f64::ceil)),
            Un::Trunc => Ok(step_fn(x, f64::trunc)),
            Un::Round => Ok(step_fn(x, f64::round)),
            Un::IsNan | Un::IsInf => Ok(OArr {
                ty: Ty::Bool,
                shape: x.shape.clone(),
                v: vec![0.0; x.v.len()],
                e: vec![0.0; x.v.len()],
            }),
            Un::Powi(n) => float_fn(
                x,
                |v| v.powi(n),
                |v| n as f64 * v.powi(n - 1),
                |lo, _, hi| n >= 0 || lo > 0.0 || hi < 0.0,
                fk + n.abs() as f64,
            ),
            Un::Pow(y) => float_fn(
                x,
                |v| v.powf(ty.round(y)),
                |v| ty.round(y) * v.powf(ty.round(y) - 1.0),
                pos,
                fk,
            ),
            Un::Clamp(lo, hi) => {
                let (lo, hi) = (ty.round(lo), ty.round(hi));
                Ok(OArr {
                    v: x.v.iter().map(|v| v.max(lo).min(hi)).collect(),
                    ..x.clone()
                })
            }
            Un::Cast(t) => cast(x, t),
            Un::Not => Err("not of a float".into()),
        };
    }
    if ty == Ty::Bool {
        return match op {
            Un::Not => Ok(OArr {
                v: x.v.iter().map(|v| 1.0 - v).collect(),
                ..x.clone()
            }),
            Un::Cast(t) => cast(x, t),
            _ => Err(format!("{op:?} of bool")),
        };
    }
    // i32 and u32: exact, wrapping.
    let signed = ty == Ty::I32;
    Ok(match op {
        Un::Neg => int_map(x, |v| -v),
        Un::Abs => int_map(x, |v| v.abs()),
        Un::Sign => int_map(x, |v| v.signum()),
        Un::Not => int_map(x, |v| {
            if signed {
                !(v as i32) as i64
            } else {
                !(v as u32) as i64
            }
        }),
        Un::Clamp(lo, hi) => {
            let (lo, hi) = (ty.round(lo), ty.round(hi));
            OArr {
                v: x.v.iter().map(|v| v.max(lo).min(hi)).collect(),
                ..x.clone()
            }
        }
        Un::Cast(t) => cast(x, t)?,
        _ => return Err(format!("{op:?} of an integer")),
    })
}

fn cast(x: &OArr, to: Ty) -> R<OArr> {
    let mut out = OArr {
        ty: to,
        ..x.clone()
    };
    for i in 0..x.v.len() {
        let (v, e) = (x.v[i], x.e[i]);
        let (r, re) = if e.is_infinite() {
            (0.0, DC)
        } else if to == Ty::Bool {
            let r = (v != 0.0) as u8 as f64;
            (
                r,
                if e > 0.0 && x.lo(i) <= 0.0 && x.hi(i) >= 0.0 {
                    DC
                } else {
                    0.0
                },
            )
        } else if to.is_float() {
            // From a float: its error plus the rounding; from an integer or bool: the rounding.
            (
                v,
                tol::rounded(to, e, if x.ty == to { 0.0 } else { 1.0 }, v),
            )
        } else if x.ty.is_float() {
            let r = to.round(v);
            (
                r,
                if e > 0.0 && to.round(x.lo(i)) != to.round(x.hi(i)) {
                    DC
                } else {
                    0.0
                },
            )
        } else {
            (
                to.round(if x.ty == Ty::I32 && to == Ty::U32 {
                    v as i32 as u32 as f64
                } else if x.ty == Ty::U32 && to == Ty::I32 {
                    v as u32 as i32 as f64
                } else {
                    v
                }),
                0.0,
            )
        };
        out.v[i] = r;
        out.e[i] = re;
    }
    Ok(out)
}

/// Decides `a < b` (and the other comparisons) over intervals: `Some` when certain.
fn compare(op: Bin, a: f64, ea: f64, b: f64, eb: f64) -> Option<bool> {
    if ea.is_infinite() || eb.is_infinite() {
        return None;
    }
    let exact = |x: f64, y: f64| match op {
        Bin::Lt => x < y,
        Bin::Le => x <= y,
        Bin::Gt => x > y,
        Bin::Ge => x >= y,
        Bin::Eq => x == y,
        Bin::Ne => x != y,
        _ => unreachable!(),
    };
    if ea == 0.0 && eb == 0.0 {
        return Some(exact(a, b));
    }
    let (alo, ahi, blo, bhi) = (a - ea, a + ea, b - eb, b + eb);
    // Certain when the comparison gives the same answer at the extreme pairs.
    let r = exact(a, b);
    let certain = match op {
        Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge => exact(alo, bhi) == r && exact(ahi, blo) == r,
        Bin::Eq | Bin::Ne => ahi < blo || bhi < alo,
        _ => unreachable!(),
    };
    certain.then_some(r)
}

fn binary(op: Bin, a: &OArr, b: &OArr) -> R<OArr> {
    let shape = broadcast_shape(&a.shape, &b.shape).ok_or("broadcast")?;
    let ty = a.ty;
    let n = numel(&shape);
    let out_ty = if op.is_cmp() { Ty::Bool } else { ty };
    let mut out = OArr {
        ty: out_ty,
        shape: shape.clone(),
        v: vec![0.0; n],
        e: vec![0.0; n],
    };
    for i in 0..n {
        let o = unravel(i, &shape);
        let (ia, ib) = (bsrc(&o, &a.shape), bsrc(&o, &b.shape));
        let (x, ex, y, ey) = (a.v[ia], a.e[ia], b.v[ib], b.e[ib]);
        let (r, er) = elem(op, ty, x, ex, y, ey)?;
        out.v[i] = r;
        out.e[i] = er;
    }
    Ok(out)
}

fn elem(op: Bin, ty: Ty, x: f64, ex: f64, y: f64, ey: f64) -> R<(f64, f64)> {
    if op.is_cmp() {
        if ty == Ty::Bool && !matches!(op, Bin::Eq | Bin::Ne) {
            return Err("order of bools".into());
        }
        return Ok(match compare(op, x, ex, y, ey) {
            Some(r) => (r as u8 as f64, 0.0),
            None => (0.0, DC),
        });
    }
    let dc = ex.is_infinite() || ey.is_infinite();
    if ty == Ty::Bool {
        let (p, q) = (x != 0.0, y != 0.0);
        let r = match op {
            Bin::And => p & q,
            Bin::Or => p | q,
            Bin::Xor => p ^ q,
            Bin::Nand => !(p & q),
            Bin::Nor => !(p | q),
            _ => return Err(format!("{op:?} of bools")),
        };
        return Ok((r as u8 as f64, if dc { DC } else { 0.0 }));
    }
    if ty.is_int() {
        let (p, q) = (x as i64, y as i64);
        let signed = ty == Ty::I32;
        let bits = |v: i64| v as u32;
        let r = match op {
            Bin::Add => p + q,
            Bin::Sub => p - q,
            Bin::Mul => p.wrapping_mul(q),
            Bin::Div | Bin::Rem | Bin::Modulo => {
                if q == 0 {
                    return Err("integer division by zero".into());
                }
                let (d, m) = if signed {
                    (
                        (p as i32).wrapping_div(q as i32) as i64,
                        (p as i32).wrapping_rem(q as i32) as i64,
                    )
                } else {
                    (p / q, p % q)
                };
                match op {
                    Bin::Div => d,
                    Bin::Rem => m,
                    _ => {
                        if m != 0 && ((m < 0) != (q < 0)) {
                            m + q
                        } else {
                            m
                        }
                    }
                }
            }
            Bin::Min => p.min(q),
            Bin::Max => p.max(q),
            Bin::And => (bits(p) & bits(q)) as i64,
            Bin::Or => (bits(p) | bits(q)) as i64,
            Bin::Xor => (bits(p) ^ bits(q)) as i64,
            _ => return Err(format!("{op:?} of integers")),
        };
        let r = if matches!(op, Bin::And | Bin::Or | Bin::Xor) && signed {
            r as u32 as i32 as i64
        } else {
            r
        };
        return Ok((wrap(ty, r), if dc { DC } else { 0.0 }));
    }
    if dc {
        return Ok((0.0, DC));
    }
    Ok(match op {
        Bin::Add => (x + y, tol::add(ty, ex, ey, x + y)),
        Bin::Sub => (x - y, tol::add(ty, ex, ey, x - y)),
        Bin::Mul => (x * y, tol::mul(ty, x, ex, y, ey, x * y)),
        Bin::Div => {
            if y.abs() <= 2.0 * ey || y == 0.0 {
                return Err("divisor near 0".into());
            }
            (x / y, tol::div(ty, x, ex, y, ey, x / y))
        }
        Bin::Rem | Bin::Modulo => {
            if ey != 0.0 || y == 0.0 {
                return Err("float remainder by an inexact divisor".into());
            }
            let q = |v: f64| {
                if op == Bin::Rem {
                    (v / y).trunc()
                } else {
                    (v / y).floor()
                }
            };
            if ex > 0.0 && q(x - ex) != q(x + ex) {
                (0.0, DC)
            } else {
                let r = x % y;
                let r = if op == Bin::Modulo && r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                    r + y
                } else {
                    r
                };
                let k = if op == Bin::Modulo { 1.0 } else { 0.0 };
                (r, tol::rounded(ty, ex, k, r))
            }
        }
        Bin::Min => (x.min(y), ex.max(ey)),
        Bin::Max => (x.max(y), ex.max(ey)),
        Bin::Atan2 => {
            // atan2(x, y) (the API's self is the numerator); away from the origin and the cut.
            let (ylo, yhi) = (y - ey, y + ey);
            let (xlo, xhi) = (x - ex, x + ex);
            let dist_x = if xlo > 0.0 {
                xlo
            } else if xhi < 0.0 {
                -xhi
            } else {
                0.0
            };
            let dist_y = if ylo > 0.0 {
                ylo
            } else if yhi < 0.0 {
                -yhi
            } else {
                0.0
            };
            if ylo <= 0.0 && dist_x == 0.0 || dist_x.max(dist_y) < 1e-3 {
                return Err("atan2 near the cut or the origin".into());
            }
            let rmin = dist_x.hypot(dist_y);
            let r = x.atan2(y);
            (r, tol::rounded(ty, (ex + ey) / rmin, tol::FN_UNITS, r))
        }
        _ => return Err(format!("{op:?} of floats")),
    })
}

fn select(c: &OArr, a: &OArr, b: &OArr) -> R<OArr> {
    let s1 = broadcast_shape(&c.shape, &a.shape).ok_or("broadcast")?;
    let shape = broadcast_shape(&s1, &b.shape).ok_or("broadcast")?;
    let n = numel(&shape);
    let mut out = OArr {
        ty: a.ty,
        shape: shape.clone(),
        v: vec![0.0; n],
        e: vec![0.0; n],
    };
    for i in 0..n {
        let o = unravel(i, &shape);
        let (ic, ia, ib) = (bsrc(&o, &c.shape), bsrc(&o, &a.shape), bsrc(&o, &b.shape));
        let (r, e) = if c.e[ic].is_infinite() {
            // Either side: the hull of both intervals.
            let lo = (a.v[ia] - a.e[ia]).min(b.v[ib] - b.e[ib]);
            let hi = (a.v[ia] + a.e[ia]).max(b.v[ib] + b.e[ib]);
            if a.ty.is_float() {
                // The middle and half-width round: widen by the oracle's rounding, or an end
                // itself can fall an ulp outside (seed v2:10001432).
                let e = (hi - lo) / 2.0 + tol::ORACLE_U * (lo.abs() + hi.abs());
                ((lo + hi) / 2.0, e)
            } else if lo == hi {
                (lo, 0.0)
            } else {
                (0.0, DC)
            }
        } else if c.v[ic] != 0.0 {
            (a.v[ia], a.e[ia])
        } else {
            (b.v[ib], b.e[ib])
        };
        out.v[i] = r;
        out.e[i] = e;
    }
    Ok(out)
}

/// Groups of input elements per output element of a reduction over `axes` (row-major order
/// within each group), and the output shape.
fn groups(shape: &[usize], axes: &[usize]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let out_shape: Vec<usize> = keep.iter().map(|&d| shape[d]).collect();
    let red_shape: Vec<usize> = axes.iter().map(|&d| shape[d]).collect();
    let st = strides(shape);
    let mut gs = vec![];
    for o in 0..numel(&out_shape) {
        let oi = unravel(o, &out_shape);
        let base: usize = keep.iter().zip(&oi).map(|(&d, &i)| i * st[d]).sum();
        let g = (0..numel(&red_shape))
            .map(|r| {
                let ri = unravel(r, &red_shape);
                base + axes
                    .iter()
                    .zip(&ri)
                    .map(|(&d, &i)| i * st[d])
                    .sum::<usize>()
            })
            .collect();
        gs.push(g);
    }
    (out_shape, gs)
}

fn reduce(op: Red, x: &OArr, axes: Option<&[usize]>) -> R<OArr> {
    let all: Vec<usize> = (0..x.shape.len()).collect();
    let mut axes: Vec<usize> = axes.map(|a| a.to_vec()).unwrap_or(all);
    axes.sort_unstable();
    axes.dedup();
    let (shape, gs) = groups(&x.shape, &axes);
    let ty = x.ty;
    let out_ty = match op {
        Red::ArgMin | Red::ArgMax | Red::Count => Ty::U32,
        _ => ty,
    };
    let mut out = OArr {
        ty: out_ty,
        shape,
        v: vec![],
        e: vec![],
    };
    for g in gs {
        let n = g.len();
        let vs: Vec<f64> = g.iter().map(|&i| x.v[i]).collect();
        let es: Vec<f64> = g.iter().map(|&i| x.e[i]).collect();
        let any_dc = es.iter().any(|e| e.is_infinite());
        let sum_e: f64 = es.iter().sum();
        let (r, e) = match op {
            Red::Sum | Red::Mean | Red::NormL1 | Red::NormL2 => {
                let f = |v: f64, e: f64| -> (f64, f64) {
                    match op {
                        Red::NormL1 => (v.abs(), e),
                        Red::NormL2 => (v * v, tol::mul(ty, v, e, v, e, v * v)),
                        _ => (v, e),
                    }
                };
                let terms: Vec<(f64, f64)> = vs.iter().zip(&es).map(|(&v, &e)| f(v, e)).collect();
                if ty.is_int() {
                    let s = vs
                        .iter()
                        .fold(0i64, |acc, &v| wrap(ty, acc + v as i64) as i64);
                    (s as f64, if any_dc { DC } else { 0.0 })
                } else {
                    let s: f64 = terms.iter().map(|t| t.0).sum();
                    let te: f64 = terms.iter().map(|t| t.1).sum();
                    let sa: f64 = terms.iter().map(|t| t.0.abs() + t.1).sum();
                    let e = tol::sum(ty, n, te, sa, s);
                    match op {
                        Red::Mean => {
                            let m = s / n as f64;
                            (m, tol::rounded(ty, e / n as f64, 1.0, m))
                        }
                        Red::NormL2 => {
                            let r = s.sqrt();
                            let d = if s - e > 0.0 {
                                0.5 / (s - e).sqrt() * e
                            } else {
                                f64::INFINITY
                            };
                            (r, tol::rounded(ty, d.min(e.sqrt()), tol::FN_UNITS, r))
                        }
                        _ => (s, e),
                    }
                }
            }
            Red::Prod => {
                if ty.is_int() {
                    let p = vs
                        .iter()
                        .fold(1i64, |acc, &v| wrap(ty, acc.wrapping_mul(v as i64)) as i64);
                    (p as f64, if any_dc { DC } else { 0.0 })
                } else {
                    let p: f64 = vs.iter().product();
                    let pa: f64 = vs.iter().map(|v| v.abs()).product();
                    let ph: f64 = vs.iter().zip(&es).map(|(v, e)| v.abs() + e).product();
                    let e = (ph - pa)
                        + (n as f64 + 1.0) * tol::unit(ty) * ph
                        + tol::ORACLE_U * (n as f64) * ph;
                    (p, if any_dc { DC } else { e })
                }
            }
            Red::Min | Red::Max | Red::NormInf => {
                let vs: Vec<f64> = if op == Red::NormInf {
                    vs.iter().map(|v| v.abs()).collect()
                } else {
                    vs
                };
                let r = if op == Red::Min {
                    vs.iter().copied().fold(f64::INFINITY, f64::min)
                } else {
                    vs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                };
                (r, es.iter().copied().fold(0.0, f64::max))
            }
            Red::ArgMin | Red::ArgMax => {
                let better = |a: f64, b: f64| if op == Red::ArgMax { a > b } else { a < b };
                let mut best = 0;
                for j in 1..n {
                    if better(vs[j], vs[best]) {
                        best = j;
                    }
                }
                // Ambiguous when another element could win or tie within the errors.
                let amb = any_dc
                    || (0..n).any(|j| {
                        j != best
                            && es[j] + es[best] > 0.0
                            && if op == Red::ArgMax {
                                vs[j] + es[j] >= vs[best] - es[best]
                            } else {
                                vs[j] - es[j] <= vs[best] + es[best]
                            }
                    });
                (best as f64, if amb { DC } else { 0.0 })
            }
            Red::Any | Red::All => {
                let certain: Vec<Option<bool>> = vs
                    .iter()
                    .zip(&es)
                    .map(|(&v, &e)| {
                        if e.is_infinite() {
                            None
                        } else {
                            Some(v != 0.0)
                        }
                    })
                    .collect();
                let want = op == Red::Any;
                if certain.contains(&Some(want)) {
                    (want as u8 as f64, 0.0)
                } else if certain.contains(&None) {
                    (0.0, DC)
                } else {
                    (!want as u8 as f64, 0.0)
                }
            }
            Red::Count => {
                let c = vs.iter().filter(|&&v| v != 0.0).count();
                (c as f64, if any_dc { DC } else { 0.0 })
            }
            Red::Variance | Red::Stddev => {
                let s: f64 = vs.iter().sum();
                let nf = n as f64;
                let sa: f64 = vs.iter().zip(&es).map(|(v, e)| v.abs() + e).sum();
                let m = s / nf;
                let em = tol::rounded(ty, tol::sum(ty, n, sum_e, sa, s) / nf, 1.0, m);
                let u = tol::unit(ty);
                let (mut sq, mut esq, mut sqa) = (0.0, 0.0, 0.0);
                for (&v, &e) in vs.iter().zip(&es) {
                    let d = v - m;
                    let ed = e + em + u * (d.abs() + e + em);
                    let q = d * d;
                    let eq = 2.0 * d.abs() * ed + ed * ed + u * (q + 2.0 * d.abs() * ed + ed * ed);
                    sq += q;
                    esq += eq;
                    sqa += q + eq;
                }
                let var = sq / nf;
                let evar = tol::rounded(ty, tol::sum(ty, n, esq, sqa, sq) / nf, 1.0, var);
                if op == Red::Variance {
                    (var, if any_dc { DC } else { evar })
                } else {
                    let r = var.sqrt();
                    let d = if var - evar > 0.0 {
                        0.5 / (var - evar).sqrt() * evar
                    } else {
                        f64::INFINITY
                    };
                    (
                        r,
                        if any_dc {
                            DC
                        } else {
                            tol::rounded(ty, d.min(evar.sqrt()), tol::FN_UNITS, r)
                        },
                    )
                }
            }
        };
        out.v.push(r);
        out.e.push(e);
    }
    Ok(out)
}

fn matmul(a: &OArr, b: &OArr) -> R<OArr> {
    if a.shape.len() != 2 || b.shape.len() != 2 || a.shape[1] != b.shape[0] {
        return Err("matmul shapes".into());
    }
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let u = tol::unit(a.ty);
    let mut out = OArr {
        ty: a.ty,
        shape: vec![m, n],
        v: vec![0.0; m * n],
        e: vec![0.0; m * n],
    };
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut prop, mut mag) = (0.0, 0.0, 0.0);
            for l in 0..k {
                let (x, ex, y, ey) = (
                    a.v[i * k + l],
                    a.e[i * k + l],
                    b.v[l * n + j],
                    b.e[l * n + j],
                );
                s += x * y;
                prop += x.abs() * ey + y.abs() * ex + ex * ey;
                mag += (x.abs() + ex) * (y.abs() + ey);
            }
            out.v[i * n + j] = s;
            out.e[i * n + j] = if prop.is_nan() || prop.is_infinite() {
                DC
            } else {
                prop + (k as f64 + 1.0) * u * mag + tol::ORACLE_U * (k as f64) * mag
            };
        }
    }
    Ok(out)
}

fn gather(a: &OArr, idx: &OArr, axis: usize) -> R<OArr> {
    if axis >= a.shape.len() {
        return Err("gather axis".into());
    }
    let dim = a.shape[axis];
    if idx
        .v
        .iter()
        .zip(&idx.e)
        .any(|(&v, &e)| e != 0.0 || v < 0.0 || v >= dim as f64)
    {
        return Err("gather index out of range or inexact".into());
    }
    let shape: Vec<usize> = a.shape[..axis]
        .iter()
        .chain(&idx.shape)
        .chain(&a.shape[axis + 1..])
        .copied()
        .collect();
    let st = strides(&a.shape);
    let ir = idx.shape.len();
    let ist = strides(&idx.shape);
    Ok(a.map_idx(a.ty, shape, |o| {
        let before: usize = (0..axis).map(|d| o[d] * st[d]).sum();
        let ii: usize = (0..ir).map(|d| o[axis + d] * ist[d]).sum();
        let k = idx.v[ii] as usize;
        let after: usize = (axis + 1..a.shape.len())
            .map(|d| o[ir + d - 1] * st[d])
            .sum();
        before + k * st[axis] + after
    }))
}

fn concat(parts: &[&OArr], axis: usize) -> R<OArr> {
    let first = parts[0];
    let mut shape = first.shape.clone();
    if axis >= shape.len() {
        return Err("concat axis".into());
    }
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let n = numel(&shape);
    let mut out = OArr {
        ty: first.ty,
        shape: shape.clone(),
        v: Vec::with_capacity(n),
        e: Vec::with_capacity(n),
    };
    for i in 0..n {
        let mut o = unravel(i, &shape);
        let mut p = 0;
        while o[axis] >= parts[p].shape[axis] {
            o[axis] -= parts[p].shape[axis];
            p += 1;
        }
        let st = strides(&parts[p].shape);
        let j: usize = o.iter().zip(&st).map(|(a, b)| a * b).sum();
        out.v.push(parts[p].v[j]);
        out.e.push(parts[p].e[j]);
    }
    Ok(out)
}

/// The indices a slice axis takes from an axis of length `n` (Python's rules; the generator
/// keeps bounds in range).
pub fn slice_indices(n: usize, (start, end, step): SliceAxis) -> Vec<usize> {
    let n = n as isize;
    let norm = |v: isize| if v < 0 { v + n } else { v };
    let mut out = vec![];
    if step > 0 {
        let (mut i, e) = (start.map_or(0, norm), end.map_or(n, norm));
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else {
        let (mut i, e) = (start.map_or(n - 1, norm), end.map_or(-1, norm));
        while i > e {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

fn slice(x: &OArr, axes: &[SliceAxis]) -> R<OArr> {
    let idx: Vec<Vec<usize>> = (0..x.shape.len())
        .map(|d| slice_indices(x.shape[d], axes.get(d).copied().unwrap_or((None, None, 1))))
        .collect();
    let shape: Vec<usize> = idx.iter().map(|v| v.len()).collect();
    if shape.contains(&0) {
        return Err("empty slice".into());
    }
    let st = strides(&x.shape);
    Ok(x.map_idx(x.ty, shape, |o| {
        o.iter().enumerate().map(|(d, &i)| idx[d][i] * st[d]).sum()
    }))
}

/// NumPy's `pad` by walking: position `k` relative to the first element, bounced off the ends one
/// step at a time (mode 3 reflect: the end element once; 4 symmetric: twice), clamped (1), wrapped
/// (2), or `None` for the constant (0).
fn pad_src(k: isize, n: usize, mode: u8) -> Option<usize> {
    let n = n as isize;
    if (0..n).contains(&k) {
        return Some(k as usize);
    }
    match mode {
        0 => None,
        1 => Some(k.clamp(0, n - 1) as usize),
        2 => Some(k.rem_euclid(n) as usize),
        _ if n == 1 => Some(0),
        _ => {
            let repeat = (mode == 4) as isize;
            let mut v = k;
            while v < 0 || v >= n {
                v = if v < 0 {
                    -v - repeat
                } else {
                    2 * (n - 1) - v + repeat
                };
            }
            Some(v as usize)
        }
    }
}

fn pad(x: &OArr, widths: &[(usize, usize)], mode: u8, c: f64) -> R<OArr> {
    if widths.len() > x.shape.len() || (mode != 0 && x.v.is_empty()) {
        return Err("pad".into());
    }
    let w = |d: usize| widths.get(d).copied().unwrap_or((0, 0));
    let shape: Vec<usize> = (0..x.shape.len())
        .map(|d| x.shape[d] + w(d).0 + w(d).1)
        .collect();
    let st = strides(&x.shape);
    let c = match x.ty {
        Ty::Bool => (c != 0.0) as u8 as f64,
        Ty::I32 => c as i32 as f64,
        Ty::U32 => c as u32 as f64,
        Ty::F32 => c as f32 as f64,
        Ty::F64 => c,
    };
    let n = numel(&shape);
    let (mut v, mut e) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let o = unravel(i, &shape);
        let src: Option<usize> = (0..o.len())
            .map(|d| pad_src(o[d] as isize - w(d).0 as isize, x.shape[d], mode).map(|j| j * st[d]))
            .sum();
        match src {
            Some(j) => {
                v.push(x.v[j]);
                e.push(x.e[j]);
            }
            None => {
                v.push(c);
                e.push(0.0);
            }
        }
    }
    Ok(OArr {
        ty: x.ty,
        shape,
        v,
        e,
    })
}

/// The array flattened (row-major) to 1-D.
fn flat(x: &OArr) -> OArr {
    OArr {
        shape: vec![x.v.len()],
        ..x.clone()
    }
}

/// The lines along `axis` (flat element indices, in order along the axis).
fn lines(x: &OArr, axis: usize) -> R<Vec<Vec<usize>>> {
    if axis >= x.shape.len() {
        return Err("axis out of range".into());
    }
    Ok(groups(&x.shape, &[axis]).1)
}

/// Scans: each prefix of a line is a reduction of its own, with that reduction's bound (the sum
/// rule holds for any addition order, so also for a GPU's scan tree, whose prefix `k` adds the
/// `k + 1` elements in some tree; integers wrap, exactly). A float `cumprod` is kept (`Ok`) only
/// when no partial product over any part of a line can leave the range the generator accepts:
/// `Π max(|x| + e, 1) <= limit` per line bounds every sub-product a scan tree may form, so none
/// overflows (a `0 · inf` would be the implementation's business, as `prod`'s was), and with
/// every prefix `>= 1e-20` (the generator's check) none underflows either.
fn scan(op: Scan, x: &OArr, axis: usize) -> R<OArr> {
    let ty = x.ty;
    if ty == Ty::Bool {
        return Err("scan of bools".into());
    }
    let mut out = x.clone();
    for g in lines(x, axis)? {
        if op == Scan::Prod && ty.is_float() {
            let worst: f64 = g
                .iter()
                .map(|&i| (x.v[i].abs() + x.e[i]).max(1.0))
                .product();
            let limit = if ty == Ty::F32 { 1e6 } else { 1e12 }; // the generator's `limit`
            if worst > limit || worst.is_nan() {
                return Err("cumprod: a partial product could overflow".into());
            }
        }
        let (mut s, mut se, mut sa) = (0.0f64, 0.0f64, 0.0f64);
        let (mut p, mut pa, mut ph) = (1.0f64, 1.0f64, 1.0f64);
        let (mut m, mut me) = (0.0f64, 0.0f64);
        let mut acc = if op == Scan::Prod { 1i64 } else { 0i64 };
        let mut dc = false;
        for (k, &i) in g.iter().enumerate() {
            let (v, e) = (x.v[i], x.e[i]);
            dc |= e.is_infinite();
            let n = k + 1;
            let (r, re) = match op {
                Scan::Sum | Scan::Prod if ty.is_int() => {
                    acc = if op == Scan::Sum {
                        wrap(ty, acc + v as i64) as i64
                    } else {
                        wrap(ty, acc.wrapping_mul(v as i64)) as i64
                    };
                    (acc as f64, if dc { DC } else { 0.0 })
                }
                Scan::Sum => {
                    s += v;
                    se += e;
                    sa += v.abs() + e;
                    (s, tol::sum(ty, n, se, sa, s))
                }
                Scan::Prod => {
                    p *= v;
                    pa *= v.abs();
                    ph *= v.abs() + e;
                    let nf = n as f64;
                    let err = (ph - pa) + (nf + 1.0) * tol::unit(ty) * ph + tol::ORACLE_U * nf * ph;
                    (p, if dc { DC } else { err })
                }
                Scan::Max | Scan::Min => {
                    if k == 0 || (op == Scan::Max && v > m) || (op == Scan::Min && v < m) {
                        m = v;
                    }
                    me = me.max(e);
                    (m, me)
                }
            };
            out.v[i] = r;
            out.e[i] = re;
        }
    }
    Ok(out)
}

/// The sort order of `src/api/sort.rs`: NaN last whatever its sign, -0.0 equal to +0.0.
fn sort_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

/// The positions of `vals` in stable sorted order (descending: the order reversed, equal
/// elements still in input order, NaN first).
fn stable_order(vals: &[f64], desc: bool) -> Vec<usize> {
    let mut ix: Vec<usize> = (0..vals.len()).collect();
    if desc {
        ix.sort_by(|&a, &b| sort_order(vals[b], vals[a]));
    } else {
        ix.sort_by(|&a, &b| sort_order(vals[a], vals[b]));
    }
    ix
}

/// Sorted values along `axis`. Inexact input is fine: the `k`-th smallest element is
/// non-decreasing in every element, so with each input in `[v - e, v + e]` the `k`-th output
/// lies between the `k`-th smallest of the `v - e` and of the `v + e` (the oracle keeps the
/// middle and half the width). Any `DC` input: `Err` (its value may even be NaN, which would
/// move every other element).
fn sort_values(x: &OArr, axis: usize, desc: bool) -> R<OArr> {
    if x.ty == Ty::Bool || x.e.iter().any(|e| e.is_infinite()) {
        return Err("sort of bools or of don't-care values".into());
    }
    let mut out = x.clone();
    for g in lines(x, axis)? {
        let lo: Vec<f64> = g.iter().map(|&i| x.v[i] - x.e[i]).collect();
        let hi: Vec<f64> = g.iter().map(|&i| x.v[i] + x.e[i]).collect();
        let (ol, oh) = (stable_order(&lo, desc), stable_order(&hi, desc));
        for (k, &i) in g.iter().enumerate() {
            let (l, h) = (lo[ol[k]], hi[oh[k]]);
            if l == h {
                // Pinned (every input exact, or at least the ones that can land here).
                out.v[i] = l;
                out.e[i] = 0.0;
            } else {
                let mid = (l + h) / 2.0;
                out.v[i] = mid;
                out.e[i] = (h - l) / 2.0 + tol::ORACLE_U * (l.abs() + h.abs());
            }
        }
    }
    Ok(out)
}

/// Positions along `axis` in stable sorted order, `u32`. Only of exact input: two values within
/// their errors of each other may legitimately come out in either order, so the positions of
/// inexact values are not decided (the generator draws another statement).
fn argsort(x: &OArr, axis: usize, desc: bool) -> R<OArr> {
    if x.ty == Ty::Bool || x.e.iter().any(|&e| e != 0.0) {
        return Err("argsort of bools or of inexact values".into());
    }
    let mut out = OArr {
        ty: Ty::U32,
        ..x.clone()
    };
    for g in lines(x, axis)? {
        let vals: Vec<f64> = g.iter().map(|&i| x.v[i]).collect();
        for (k, j) in stable_order(&vals, desc).into_iter().enumerate() {
            out.v[g[k]] = j as f64;
        }
    }
    Ok(out)
}

/// Exact indices in `[0, n)`, or `Err`.
fn check_indices(idx: &OArr, n: usize) -> R<()> {
    if !idx.ty.is_int()
        || idx
            .v
            .iter()
            .zip(&idx.e)
            .any(|(&v, &e)| e != 0.0 || v < 0.0 || v >= n as f64)
    {
        return Err("indices out of range or inexact".into());
    }
    Ok(())
}

/// NumPy's `take_along_axis`, with the API's broadcasting of the other axes (extent 1 on
/// either side).
fn take_along(a: &OArr, idx: &OArr, axis: usize) -> R<OArr> {
    let rank = a.shape.len();
    if idx.shape.len() != rank || axis >= rank {
        return Err("take_along_axis ranks".into());
    }
    check_indices(idx, a.shape[axis])?;
    let (sa, si) = (&a.shape, &idx.shape);
    let mut shape = vec![0; rank];
    for d in 0..rank {
        shape[d] = if d == axis {
            si[d]
        } else if sa[d] == si[d] || si[d] == 1 {
            sa[d]
        } else if sa[d] == 1 {
            si[d]
        } else {
            return Err("take_along_axis shapes".into());
        };
    }
    let (sta, sti) = (strides(sa), strides(si));
    Ok(a.map_idx(a.ty, shape, |o| {
        let j: usize = (0..rank)
            .map(|d| if si[d] == 1 { 0 } else { o[d] * sti[d] })
            .sum();
        let k = idx.v[j] as usize;
        (0..rank)
            .map(|d| {
                if d == axis {
                    k * sta[d]
                } else if sa[d] == 1 {
                    0
                } else {
                    o[d] * sta[d]
                }
            })
            .sum()
    }))
}

/// `scatter` (the last duplicate wins: the largest position in the flattened indices) and
/// `scatter_add` (each target a sum of its data element and its sources, in any order).
fn scatter(a: &OArr, idx: &OArr, values: &OArr, axis: usize, add: bool) -> R<OArr> {
    let rank = a.shape.len();
    if axis >= rank || values.ty != a.ty || (add && a.ty == Ty::Bool) {
        return Err("scatter axis or types".into());
    }
    check_indices(idx, a.shape[axis])?;
    let gshape: Vec<usize> = a.shape[..axis]
        .iter()
        .chain(&idx.shape)
        .chain(&a.shape[axis + 1..])
        .copied()
        .collect();
    if broadcast_shape(&values.shape, &gshape).as_ref() != Some(&gshape) {
        return Err("scatter values' shape".into());
    }
    let st = strides(&a.shape);
    let ir = idx.shape.len();
    let ist = strides(&idx.shape);
    let mut out = a.clone();
    // Per target: the sum, its error sum, magnitude sum and term count (add).
    let mut acc: Vec<(f64, f64, f64, usize)> = vec![(0.0, 0.0, 0.0, 0); a.v.len()];
    for gi in 0..numel(&gshape) {
        let o = unravel(gi, &gshape);
        let j: usize = (0..ir).map(|d| o[axis + d] * ist[d]).sum();
        let k = idx.v[j] as usize;
        let t: usize = (0..axis).map(|d| o[d] * st[d]).sum::<usize>()
            + k * st[axis]
            + (axis + 1..rank)
                .map(|d| o[ir + d - 1] * st[d])
                .sum::<usize>();
        let src = bsrc(&o, &values.shape);
        let (v, e) = (values.v[src], values.e[src]);
        if !add {
            out.v[t] = v;
            out.e[t] = e;
            continue;
        }
        let c = &mut acc[t];
        if c.3 == 0 {
            *c = (a.v[t], a.e[t], a.v[t].abs() + a.e[t], 1);
        }
        if a.ty.is_int() {
            c.0 = wrap(a.ty, c.0 as i64 + v as i64);
        } else {
            c.0 += v;
        }
        c.1 += e;
        c.2 += v.abs() + e;
        c.3 += 1;
    }
    if add {
        for (t, &(s, se, sa, n)) in acc.iter().enumerate() {
            if n == 0 {
                continue;
            }
            out.v[t] = s;
            out.e[t] = if a.ty.is_int() {
                if se.is_infinite() { DC } else { 0.0 }
            } else {
                tol::sum(a.ty, n, se, sa, s)
            };
        }
    }
    Ok(out)
}
