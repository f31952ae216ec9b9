//! Runs a fuzzer program through arrayflow's public API and checks every read (the reads in
//! the middle and, at the end, every variable still held) against the oracle.

use super::oracle::{self, OArr};
use super::program::{Bin, Expr, Opd, Program, Red, Scan, Section, Stmt, Ty, Un, section_name};
use arrayflow::{Array, Element, Float, Logical, Numeric, Pad, Rng, Runtime, Slice, select};

/// An array of any element type.
pub enum V {
    F32(Array<f32>),
    F64(Array<f64>),
    I32(Array<i32>),
    U32(Array<u32>),
    B(Array<bool>),
}

/// What a run found.
#[derive(Debug)]
pub enum Outcome {
    Pass,
    /// A mismatch, a failed read or a panic.
    Fail(String),
    /// The program itself is not valid (a generator or shrinker bug, not the crate's).
    Invalid(String),
}

/// Element types the runner moves in and out of [`V`].
pub trait Pick: Element {
    fn pick(v: &V) -> &Array<Self>;
    fn of(x: f64) -> Self;
    fn to(self) -> f64;
    fn wrap(a: Array<Self>) -> V;
    /// `s op y` with the scalar on the left (operators are defined per concrete type).
    fn lhs(op: Bin, s: Self, y: &Array<Self>) -> Array<Self>;
}

macro_rules! pick {
    ($t:ty, $var:ident, $of:expr, $lhs:expr) => {
        impl Pick for $t {
            fn pick(v: &V) -> &Array<Self> {
                match v {
                    V::$var(a) => a,
                    _ => panic!("fuzzer: expected {}", stringify!($t)),
                }
            }
            fn of(x: f64) -> Self {
                let f: fn(f64) -> $t = $of;
                f(x)
            }
            fn to(self) -> f64 {
                to_f64(self)
            }
            fn wrap(a: Array<Self>) -> V {
                V::$var(a)
            }
            fn lhs(op: Bin, s: Self, y: &Array<Self>) -> Array<Self> {
                let f: fn(Bin, $t, &Array<$t>) -> Array<$t> = $lhs;
                f(op, s, y)
            }
        }
    };
}

fn to_f64<T: Element>(x: T) -> f64 {
    let any: &dyn std::any::Any = &x;
    if let Some(v) = any.downcast_ref::<f32>() {
        *v as f64
    } else if let Some(v) = any.downcast_ref::<f64>() {
        *v
    } else if let Some(v) = any.downcast_ref::<i32>() {
        *v as f64
    } else if let Some(v) = any.downcast_ref::<u32>() {
        *v as f64
    } else if let Some(v) = any.downcast_ref::<bool>() {
        *v as u8 as f64
    } else {
        unreachable!()
    }
}

macro_rules! num_lhs {
    ($t:ty) => {
        |op, s, y| match op {
            Bin::Add => s + y,
            Bin::Sub => s - y,
            Bin::Mul => s * y,
            Bin::Div => s / y,
            Bin::Rem => s % y,
            _ => panic!("fuzzer: {op:?} with a scalar on the left"),
        }
    };
}
pick!(f32, F32, |x| x as f32, num_lhs!(f32));
pick!(f64, F64, |x| x, num_lhs!(f64));
pick!(i32, I32, |x| x as i32, num_lhs!(i32));
pick!(u32, U32, |x| x as u32, num_lhs!(u32));
pick!(bool, B, |x| x != 0.0, |op, _, _| panic!(
    "fuzzer: {op:?} with a bool on the left"
));

/// Runs `body` with `$x` the array of `$v` and `$T` its element type, for the listed types.
macro_rules! dispatch {
    ($v:expr; $($var:ident $t:ty),*; $x:ident, $T:ident => $body:expr) => {
        match $v {
            $(V::$var($x) => {
                #[allow(dead_code)]
                type $T = $t;
                $body
            })*
            #[allow(unreachable_patterns)]
            _ => panic!("fuzzer: an op on the wrong element type"),
        }
    };
}

type Env = Vec<Option<V>>;

fn var(env: &Env, id: usize) -> &V {
    env[id].as_ref().expect("fuzzer: variable not bound")
}

fn ty_of(v: &V) -> Ty {
    match v {
        V::F32(_) => Ty::F32,
        V::F64(_) => Ty::F64,
        V::I32(_) => Ty::I32,
        V::U32(_) => Ty::U32,
        V::B(_) => Ty::Bool,
    }
}

/// `a op b` for arrays or scalars of type `T`, through the op's API form.
fn binary<T: Pick>(op: Bin, a: &Opd, b: &Opd, env: &Env) -> V {
    let arr = |o: &Opd| match o {
        Opd::Var(v) => Some(T::pick(var(env, *v))),
        Opd::Scalar(_) => None,
    };
    let sc = |o: &Opd| match o {
        Opd::Scalar(s) => T::of(*s),
        Opd::Var(_) => unreachable!(),
    };
    match (arr(a), arr(b)) {
        (Some(x), Some(y)) => bin_arrays::<T>(op, x, Operand2::A(y)),
        (Some(x), None) => bin_arrays::<T>(op, x, Operand2::S(sc(b))),
        (None, Some(y)) => T::wrap(T::lhs(op, sc(a), y)),
        (None, None) => unreachable!(),
    }
}

/// The right-hand side of a method.
enum Operand2<'a, T: Element> {
    A(&'a Array<T>),
    S(T),
}

macro_rules! with_rhs {
    ($o:expr, $r:ident => $body:expr) => {
        match $o {
            Operand2::A($r) => $body,
            Operand2::S($r) => $body,
        }
    };
}

fn bin_arrays<T: Pick>(op: Bin, x: &Array<T>, y: Operand2<'_, T>) -> V {
    // Dispatch to the concrete type so each op's trait bounds are met.
    let any: &dyn std::any::Any = x;
    macro_rules! go {
        ($t:ty, $f:ident) => {
            if let Some(x) = any.downcast_ref::<Array<$t>>() {
                let y: Operand2<'_, $t> = match y {
                    Operand2::A(a) => Operand2::A(
                        (a as &dyn std::any::Any)
                            .downcast_ref::<Array<$t>>()
                            .unwrap(),
                    ),
                    Operand2::S(s) => Operand2::S(<$t as Pick>::of(s.to())),
                };
                return $f(op, x, y);
            }
        };
    }
    go!(f32, bin_float);
    go!(f64, bin_float);
    go!(i32, bin_int);
    go!(u32, bin_int);
    go!(bool, bin_bool);
    unreachable!()
}

fn cmp<T: Numeric + Pick>(op: Bin, x: &Array<T>, y: Operand2<'_, T>) -> Option<Array<bool>> {
    Some(match op {
        Bin::Lt => with_rhs!(y, r => x.lt(r)),
        Bin::Le => with_rhs!(y, r => x.le(r)),
        Bin::Gt => with_rhs!(y, r => x.gt(r)),
        Bin::Ge => with_rhs!(y, r => x.ge(r)),
        Bin::Eq => with_rhs!(y, r => x.eq(r)),
        Bin::Ne => with_rhs!(y, r => x.ne(r)),
        _ => return None,
    })
}

fn arith<T: Numeric + Pick>(op: Bin, x: &Array<T>, y: &Operand2<'_, T>) -> Option<Array<T>> {
    let y = match y {
        Operand2::A(a) => Operand2::A(*a),
        Operand2::S(s) => Operand2::S(*s),
    };
    Some(match op {
        Bin::Add => with_rhs!(y, r => x + r),
        Bin::Sub => with_rhs!(y, r => x - r),
        Bin::Mul => with_rhs!(y, r => x * r),
        Bin::Div => with_rhs!(y, r => x / r),
        Bin::Rem => with_rhs!(y, r => x % r),
        Bin::Modulo => with_rhs!(y, r => x.modulo(r)),
        Bin::Min => with_rhs!(y, r => x.minimum(r)),
        Bin::Max => with_rhs!(y, r => x.maximum(r)),
        _ => return None,
    })
}

fn bin_float<T: Float + Pick>(op: Bin, x: &Array<T>, y: Operand2<'_, T>) -> V {
    if let Some(r) = arith(op, x, &y) {
        return T::wrap(r);
    }
    if op == Bin::Atan2 {
        return T::wrap(with_rhs!(y, r => x.atan2(r)));
    }
    V::B(cmp(op, x, y).expect("fuzzer: a float op"))
}

fn logic<T: Logical + Pick>(op: Bin, x: &Array<T>, y: &Operand2<'_, T>) -> Option<Array<T>> {
    let y = match y {
        Operand2::A(a) => Operand2::A(*a),
        Operand2::S(s) => Operand2::S(*s),
    };
    Some(match op {
        Bin::And => with_rhs!(y, r => x.and(r)),
        Bin::Or => with_rhs!(y, r => x.or(r)),
        Bin::Xor => with_rhs!(y, r => x.xor(r)),
        _ => return None,
    })
}

fn bin_int<T: Numeric + Logical + Pick>(op: Bin, x: &Array<T>, y: Operand2<'_, T>) -> V {
    if let Some(r) = arith(op, x, &y) {
        return T::wrap(r);
    }
    if let Some(r) = logic(op, x, &y) {
        return T::wrap(r);
    }
    V::B(cmp(op, x, y).expect("fuzzer: an integer op"))
}

fn bin_bool(op: Bin, x: &Array<bool>, y: Operand2<'_, bool>) -> V {
    if let Some(r) = logic(op, x, &y) {
        return V::B(r);
    }
    V::B(match (op, y) {
        (Bin::Nand, Operand2::A(r)) => x.nand(r),
        (Bin::Nand, Operand2::S(r)) => x.nand(r),
        (Bin::Nor, Operand2::A(r)) => x.nor(r),
        (Bin::Nor, Operand2::S(r)) => x.nor(r),
        (Bin::Eq, Operand2::A(r)) => x.eq(r),
        (Bin::Eq, Operand2::S(r)) => x.eq(r),
        (Bin::Ne, Operand2::A(r)) => x.ne(r),
        (Bin::Ne, Operand2::S(r)) => x.ne(r),
        _ => panic!("fuzzer: {op:?} of bools"),
    })
}

fn cast<T: Element>(x: &Array<T>, to: Ty) -> V {
    match to {
        Ty::F32 => V::F32(x.cast()),
        Ty::F64 => V::F64(x.cast()),
        Ty::I32 => V::I32(x.cast()),
        Ty::U32 => V::U32(x.cast()),
        Ty::Bool => V::B(x.cast()),
    }
}

fn unary_float<T: Float + Pick>(op: Un, x: &Array<T>) -> V {
    T::wrap(match op {
        Un::Neg => -x,
        Un::Abs => x.abs(),
        Un::Sign => x.sign(),
        Un::Exp => x.exp(),
        Un::Exp2 => x.exp2(),
        Un::Sqrt => x.sqrt(),
        Un::Rsqrt => x.rsqrt(),
        Un::Cbrt => x.cbrt(),
        Un::Ln => x.ln(),
        Un::Log2 => x.log2(),
        Un::Log10 => x.log10(),
        Un::Sin => x.sin(),
        Un::Cos => x.cos(),
        Un::Tan => x.tan(),
        Un::Asin => x.asin(),
        Un::Acos => x.acos(),
        Un::Atan => x.atan(),
        Un::Sinh => x.sinh(),
        Un::Cosh => x.cosh(),
        Un::Tanh => x.tanh(),
        Un::Erf => x.erf(),
        Un::Erfc => x.erfc(),
        Un::Asinh => x.asinh(),
        Un::Acosh => x.acosh(),
        Un::Atanh => x.atanh(),
        Un::Floor => x.floor(),
        Un::Ceil => x.ceil(),
        Un::Trunc => x.trunc(),
        Un::Round => x.round(),
        Un::Powi(n) => x.powi(n),
        Un::Pow(y) => x.pow(T::of(y)),
        Un::Clamp(lo, hi) => x.clamp(T::of(lo), T::of(hi)),
        Un::IsNan => return V::B(x.is_nan()),
        Un::IsInf => return V::B(x.is_inf()),
        Un::Cast(t) => return cast(x, t),
        Un::Not => panic!("fuzzer: not of a float"),
    })
}

fn unary_int<T: Numeric<Real = T> + Logical + Pick>(op: Un, x: &Array<T>) -> V {
    T::wrap(match op {
        Un::Neg => -x,
        Un::Abs => x.abs(),
        Un::Sign => x.sign(),
        Un::Not => !x,
        Un::Clamp(lo, hi) => x.clamp(T::of(lo), T::of(hi)),
        Un::Cast(t) => return cast(x, t),
        _ => panic!("fuzzer: {op:?} of an integer"),
    })
}

fn reduce_num<T: Numeric + Pick>(op: Red, x: &Array<T>, axes: Option<&[usize]>) -> V {
    macro_rules! r {
        ($all:ident, $axis:ident, $axes:ident) => {
            match axes {
                None => x.$all(),
                Some([k]) => x.$axis(*k),
                Some(ks) => x.$axes(ks),
            }
        };
    }
    match op {
        Red::Sum => T::wrap(r!(sum, sum_axis, sum_axes)),
        Red::Prod => T::wrap(r!(prod, prod_axis, prod_axes)),
        Red::Min => T::wrap(r!(min, min_axis, min_axes)),
        Red::Max => T::wrap(r!(max, max_axis, max_axes)),
        Red::ArgMin => V::U32(r!(argmin, argmin_axis, argmin_axes)),
        Red::ArgMax => V::U32(r!(argmax, argmax_axis, argmax_axes)),
        _ => panic!("fuzzer: {op:?} of a number type"),
    }
}

fn reduce_float<T: Float + Pick>(op: Red, x: &Array<T>, axes: Option<&[usize]>) -> V {
    macro_rules! r {
        ($all:ident, $axis:ident) => {
            match axes {
                None => x.$all(),
                Some([k]) => x.$axis(*k),
                Some(_) => panic!("fuzzer: {op:?} has no _axes form"),
            }
        };
    }
    T::wrap(match op {
        Red::Mean => r!(mean, mean_axis),
        Red::Variance => r!(variance, variance_axis),
        Red::Stddev => r!(stddev, stddev_axis),
        Red::NormL1 => r!(norm_l1, norm_l1_axis),
        Red::NormL2 => r!(norm_l2, norm_l2_axis),
        Red::NormInf => r!(norm_inf, norm_inf_axis),
        _ => return reduce_num(op, x, axes),
    })
}

fn reduce_bool(op: Red, x: &Array<bool>, axes: Option<&[usize]>) -> V {
    macro_rules! r {
        ($all:ident, $axis:ident, $axes:ident) => {
            match axes {
                None => x.$all(),
                Some([k]) => x.$axis(*k),
                Some(ks) => x.$axes(ks),
            }
        };
    }
    match op {
        Red::Any => V::B(r!(any, any_axis, any_axes)),
        Red::All => V::B(r!(all, all_axis, all_axes)),
        Red::Count => V::U32(x.count()),
        _ => panic!("fuzzer: {op:?} of bools"),
    }
}

fn input<T: Pick>(o: &OArr) -> V {
    T::wrap(Array::from_vec(
        o.v.iter().map(|&x| T::of(x)).collect(),
        &o.shape,
    ))
}

/// Evaluates an expression through the API. Inputs take the oracle's values (the same numbers
/// the printed program computes with `data`).
fn eval(expr: &Expr, env: &Env, oenv: &oracle::Env) -> Result<V, String> {
    let sl = |axes: &[(Option<isize>, Option<isize>, isize)]| -> Vec<Slice> {
        axes.iter().map(|&(b, e, s)| Slice::new(b, e, s)).collect()
    };
    if let Expr::Complex { ty, e } = expr {
        return Ok(super::complex::run::eval(e, *ty == Ty::F64, &|id| {
            var(env, id)
        }));
    }
    Ok(match expr {
        Expr::Input { ty, .. } | Expr::Literal { ty, .. } => {
            let o = oracle::eval(expr, oenv)?;
            match ty {
                Ty::F32 => input::<f32>(&o),
                Ty::F64 => input::<f64>(&o),
                Ty::I32 => input::<i32>(&o),
                Ty::U32 => input::<u32>(&o),
                Ty::Bool => input::<bool>(&o),
            }
        }
        Expr::Full { ty, shape, value } => match ty {
            Ty::F32 => V::F32(Array::full(shape, *value as f32)),
            Ty::F64 => V::F64(Array::full(shape, *value)),
            Ty::I32 => V::I32(Array::full(shape, *value as i32)),
            Ty::U32 => V::U32(Array::full(shape, *value as u32)),
            Ty::Bool => V::B(Array::full(shape, *value != 0.0)),
        },
        Expr::Iota { ty, shape, axis } => match ty {
            Ty::F32 => V::F32(Array::iota(shape, *axis)),
            Ty::F64 => V::F64(Array::iota(shape, *axis)),
            Ty::I32 => V::I32(Array::iota(shape, *axis)),
            Ty::U32 => V::U32(Array::iota(shape, *axis)),
            Ty::Bool => return Err("iota of bool".into()),
        },
        Expr::Uniform { ty, shape, seed } => match ty {
            Ty::F32 => V::F32(Rng::new(*seed).uniform(shape)),
            Ty::F64 => V::F64(Rng::new(*seed).uniform(shape)),
            _ => return Err("uniform of a non-float".into()),
        },
        Expr::Unary { op, a } => match var(env, *a) {
            V::F32(x) => unary_float(*op, x),
            V::F64(x) => unary_float(*op, x),
            V::I32(x) => unary_int(*op, x),
            V::U32(x) => unary_int(*op, x),
            V::B(x) => match op {
                Un::Not => V::B(!x),
                Un::Cast(t) => cast(x, *t),
                _ => return Err(format!("{op:?} of bool")),
            },
        },
        Expr::Binary { op, a, b } => {
            let ty = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => ty_of(var(env, *v)),
                _ => return Err("two scalars".into()),
            };
            match ty {
                Ty::F32 => binary::<f32>(*op, a, b, env),
                Ty::F64 => binary::<f64>(*op, a, b, env),
                Ty::I32 => binary::<i32>(*op, a, b, env),
                Ty::U32 => binary::<u32>(*op, a, b, env),
                Ty::Bool => binary::<bool>(*op, a, b, env),
            }
        }
        Expr::Select { c, a, b } => {
            let V::B(c) = var(env, *c) else {
                return Err("select condition".into());
            };
            let v = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => var(env, *v),
                _ => return Err("two scalars".into()),
            };
            macro_rules! sel {
                ($t:ty) => {{
                    let arr = |o: &Opd| match o {
                        Opd::Var(v) => Some(<$t>::pick(var(env, *v))),
                        Opd::Scalar(_) => None,
                    };
                    let sc = |o: &Opd| match o {
                        Opd::Scalar(s) => <$t>::of(*s),
                        Opd::Var(_) => unreachable!(),
                    };
                    <$t>::wrap(match (arr(a), arr(b)) {
                        (Some(x), Some(y)) => select(c, x, y),
                        (Some(x), None) => select(c, x, sc(b)),
                        (None, Some(y)) => select(c, sc(a), y),
                        (None, None) => unreachable!(),
                    })
                }};
            }
            match v {
                V::F32(_) => sel!(f32),
                V::F64(_) => sel!(f64),
                V::I32(_) => sel!(i32),
                V::U32(_) => sel!(u32),
                V::B(_) => sel!(bool),
            }
        }
        Expr::Reduce { op, a, axes } => {
            let axes = axes.as_deref();
            match var(env, *a) {
                V::F32(x) => reduce_float(*op, x, axes),
                V::F64(x) => reduce_float(*op, x, axes),
                V::I32(x) => reduce_num(*op, x, axes),
                V::U32(x) => reduce_num(*op, x, axes),
                V::B(x) => reduce_bool(*op, x, axes),
            }
        }
        Expr::Matmul { a, b } => match (var(env, *a), var(env, *b)) {
            (V::F32(x), V::F32(y)) => V::F32(x.matmul(y)),
            (V::F64(x), V::F64(y)) => V::F64(x.matmul(y)),
            _ => return Err("matmul types".into()),
        },
        Expr::Gather { a, idx, axis } => {
            let g = |i: &V| -> Result<V, String> {
                Ok(match i {
                    V::I32(i) => {
                        dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.gather(i, *axis)))
                    }
                    V::U32(i) => {
                        dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.gather(i, *axis)))
                    }
                    _ => return Err("gather index type".into()),
                })
            };
            g(var(env, *idx))?
        }
        Expr::Concat { parts, axis } => {
            let ps: Vec<&V> = parts.iter().map(|p| var(env, *p)).collect();
            dispatch!(ps[0]; F32 f32, F64 f64, I32 i32, U32 u32, B bool; _x, T => {
                let arrs: Vec<&Array<T>> = ps.iter().map(|p| T::pick(p)).collect();
                T::wrap(Array::concat(&arrs, *axis))
            })
        }
        Expr::Reshape { a, shape } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.reshape(shape)))
        }
        Expr::Permute { a, perm } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.permute(perm)))
        }
        Expr::Slice { a, axes } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.slice(&sl(axes))))
        }
        Expr::Broadcast { a, shape } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.broadcast_to(shape)))
        }
        Expr::Tile { a, reps } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.tile(reps)))
        }
        Expr::Roll { a, shift, axis } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.roll(*shift, *axis)))
        }
        Expr::Pad { a, widths, mode, c } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => {
                let m = match mode {
                    0 => Pad::Constant(T::of(*c)),
                    1 => Pad::Edge,
                    2 => Pad::Wrap,
                    3 => Pad::Reflect,
                    _ => Pad::Symmetric,
                };
                T::wrap(x.pad(widths, m))
            })
        }
        Expr::Scan { op, a, axis } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32; x, T => T::wrap(match op {
                Scan::Sum => x.cumsum(*axis),
                Scan::Prod => x.cumprod(*axis),
                Scan::Max => x.cummax(*axis),
                Scan::Min => x.cummin(*axis),
            }))
        }
        Expr::Sort { a, axis, desc } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32; x, T => T::wrap(match (axis, desc) {
                (None, _) => x.sort(),
                (Some(ax), false) => x.sort_axis(*ax),
                (Some(ax), true) => x.sort_axis_descending(*ax),
            }))
        }
        Expr::Argsort { a, axis, desc, nan } => {
            fn go<T: Numeric>(x: &Array<T>, axis: Option<usize>, desc: bool) -> V {
                V::U32(match (axis, desc) {
                    (None, _) => x.argsort(),
                    (Some(ax), false) => x.argsort_axis(ax),
                    (Some(ax), true) => x.argsort_axis_descending(ax),
                })
            }
            match nan {
                None => {
                    dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32; x, T => go(x, *axis, *desc))
                }
                Some((m, neg)) => {
                    let V::B(m) = var(env, *m) else {
                        return Err("argsort's NaN mask".into());
                    };
                    // Negation sets the sign bit (a product's NaN sign is unspecified).
                    let (n32, n64) = if *neg {
                        (-f32::NAN, -f64::NAN)
                    } else {
                        (f32::NAN, f64::NAN)
                    };
                    match var(env, *a) {
                        V::F32(x) => go(&select(m, n32, x), *axis, *desc),
                        V::F64(x) => go(&select(m, n64, x), *axis, *desc),
                        _ => return Err("argsort with NaN of a non-float".into()),
                    }
                }
            }
        }
        Expr::TopK {
            a,
            k,
            axis,
            indices,
        } => {
            dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32; x, T => {
                let (v, i) = x.topk(*k, *axis);
                if *indices { V::U32(i) } else { T::wrap(v) }
            })
        }
        Expr::TakeAlong { a, idx, axis } => match var(env, *idx) {
            V::I32(i) => {
                dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.take_along_axis(i, *axis)))
            }
            V::U32(i) => {
                dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.take_along_axis(i, *axis)))
            }
            _ => return Err("take_along_axis index type".into()),
        },
        Expr::Scatter {
            a,
            idx,
            values,
            axis,
            add,
        } => {
            let w = var(env, *values);
            macro_rules! sc {
                ($i:expr) => {
                    if *add {
                        dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32; x, T => T::wrap(x.scatter_add($i, T::pick(w), *axis)))
                    } else {
                        dispatch!(var(env, *a); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => T::wrap(x.scatter($i, T::pick(w), *axis)))
                    }
                };
            }
            match var(env, *idx) {
                V::I32(i) => sc!(i),
                V::U32(i) => sc!(i),
                _ => return Err("scatter index type".into()),
            }
        }
        Expr::Complex { .. } => unreachable!("handled above"),
    })
}

/// Reads a value (`item` for one element) as f64s.
fn read(v: &V, item: bool) -> Result<Vec<f64>, String> {
    fn go<T: Pick>(a: &Array<T>, item: bool) -> Result<Vec<f64>, String> {
        let r = if item {
            a.item().map(|x| vec![x])
        } else {
            a.to_vec()
        };
        r.map(|v| v.into_iter().map(Pick::to).collect())
            .map_err(|e| e.to_string())
    }
    dispatch!(v; F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => go::<T>(x, item))
}

/// Compares read values with the oracle's.
pub fn check(got: &[f64], o: &OArr) -> Result<(), String> {
    if got.len() != o.v.len() {
        return Err(format!(
            "{} elements read, {} expected",
            got.len(),
            o.v.len()
        ));
    }
    let mut bad = vec![];
    for (i, &g) in got.iter().enumerate() {
        let (v, e) = (o.v[i], o.e[i]);
        if e.is_infinite() {
            continue;
        }
        let ok = if o.ty.is_float() {
            g == v || (g - v).abs() <= e
        } else {
            g == v
        };
        if !ok {
            bad.push(i);
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = bad
        .iter()
        .take(4)
        .map(|&i| {
            format!(
                "[{i}] got {:?}, expected {:?} ± {:e}",
                got[i], o.v[i], o.e[i]
            )
        })
        .collect();
    Err(format!(
        "{} of {} elements differ: {}",
        bad.len(),
        got.len(),
        shown.join("; ")
    ))
}

struct Runner {
    env: Env,
    oenv: oracle::Env,
    verbose: bool,
}

fn set<T>(v: &mut Vec<Option<T>>, id: usize, x: T) {
    if v.len() <= id {
        v.resize_with(id + 1, || None);
    }
    v[id] = Some(x);
}

impl Runner {
    fn stmt(&mut self, s: &Stmt) -> Result<(), Outcome> {
        let invalid = Outcome::Invalid;
        match s {
            Stmt::Let { id, expr, .. } => {
                let o = oracle::eval(expr, &self.oenv).map_err(invalid)?;
                let v = eval(expr, &self.env, &self.oenv).map_err(Outcome::Invalid)?;
                set(&mut self.env, *id, v);
                set(&mut self.oenv, *id, o);
            }
            Stmt::Read { id, item } => {
                let got = read(var(&self.env, *id), *item)
                    .map_err(|e| Outcome::Fail(format!("reading v{id}: {e}")))?;
                let o = self.oenv[*id].as_ref().unwrap();
                check(&got, o)
                    .map_err(|e| Outcome::Fail(format!("v{id} (read in the middle): {e}")))?;
                if self.verbose {
                    eprintln!("read v{id}: ok ({} elements)", got.len());
                }
            }
            Stmt::Eval(id) => {
                dispatch!(var(&self.env, *id); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => x.eval())
                    .map_err(|e| Outcome::Fail(format!("v{id}.eval(): {e}")))?;
            }
            Stmt::Hint(id) => {
                dispatch!(var(&self.env, *id); F32 f32, F64 f64, I32 i32, U32 u32, B bool; x, T => x.hint_read())
            }
            Stmt::Drop(id) => {
                self.env[*id] = None;
                self.oenv[*id] = None;
            }
            Stmt::Execute => Runtime::execute(),
            Stmt::Block(body) => {
                Runtime::block(|| -> Result<(), Outcome> {
                    for s in body {
                        self.stmt(s)?;
                    }
                    Ok(())
                })?;
            }
            Stmt::Reuse(sec) => match sec.ty {
                Ty::F32 => self.section::<f32>(sec)?,
                Ty::F64 => self.section::<f64>(sec)?,
                Ty::I32 => self.section::<i32>(sec)?,
                Ty::U32 => self.section::<u32>(sec)?,
                Ty::Bool => self.section::<bool>(sec)?,
            },
        }
        Ok(())
    }

    fn section<T: Pick>(&mut self, sec: &Section) -> Result<(), Outcome> {
        let name = section_name(sec);
        for (ins, ps, res) in &sec.calls {
            // The oracle: the body over this call's inputs and parameters.
            let mut local: oracle::Env = ins.iter().map(|i| self.oenv[*i].clone()).collect();
            for p in ps {
                local.push(Some(OArr {
                    ty: sec.ty,
                    shape: vec![],
                    v: vec![sec.ty.round(*p)],
                    e: vec![0.0],
                }));
            }
            for s in &sec.body {
                let Stmt::Let { id, expr, .. } = s else {
                    return Err(Outcome::Invalid("a section body holds lets only".into()));
                };
                let o = oracle::eval(expr, &local).map_err(Outcome::Invalid)?;
                set(&mut local, *id, o);
            }
            let arrays: Vec<&Array<T>> = ins.iter().map(|i| T::pick(var(&self.env, *i))).collect();
            let params: Vec<T> = ps.iter().map(|&p| T::of(p)).collect();
            let mut err = None;
            let out = Runtime::reuse_named_with(&name, &arrays, &params, &[], |ins, ps| {
                let mut env: Env = ins
                    .iter()
                    .chain(ps)
                    .map(|a| Some(T::wrap(a.clone())))
                    .collect();
                let oenv = local.clone();
                for s in &sec.body {
                    if let Stmt::Let { id, expr, .. } = s {
                        match eval(expr, &env, &oenv) {
                            Ok(v) => set(&mut env, *id, v),
                            Err(e) => {
                                err = Some(e);
                                return vec![];
                            }
                        }
                    }
                }
                sec.outputs
                    .iter()
                    .map(|o| T::pick(var(&env, *o)).clone())
                    .collect()
            })
            .map_err(|e| Outcome::Fail(format!("reuse section {name}: {e}")))?;
            if let Some(e) = err {
                return Err(Outcome::Invalid(e));
            }
            if out.len() != res.len() {
                return Err(Outcome::Fail(format!(
                    "section {name} returned {} arrays, {} expected",
                    out.len(),
                    res.len()
                )));
            }
            for ((a, r), o) in out.into_iter().zip(res).zip(&sec.outputs) {
                set(&mut self.env, *r, T::wrap(a));
                set(&mut self.oenv, *r, local[*o].clone().unwrap());
            }
        }
        Ok(())
    }
}

/// Runs a program and checks it; panics inside the API count as failures.
pub fn run(p: &Program, verbose: bool) -> Outcome {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut r = Runner {
            env: vec![],
            oenv: vec![],
            verbose,
        };
        for s in &p.stmts {
            if let Err(o) = r.stmt(s) {
                return o;
            }
        }
        // Every variable still held, read at the end.
        for id in 0..r.env.len() {
            let Some(v) = r.env[id].as_ref() else {
                continue;
            };
            let got = match read(v, false) {
                Ok(g) => g,
                Err(e) => return Outcome::Fail(format!("reading v{id}: {e}")),
            };
            if let Err(e) = check(&got, r.oenv[id].as_ref().unwrap()) {
                return Outcome::Fail(format!("v{id}: {e}"));
            }
        }
        Outcome::Pass
    }));
    match r {
        Ok(o) => o,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            if msg.starts_with("fuzzer:") {
                Outcome::Invalid(msg)
            } else {
                Outcome::Fail(format!("panic: {msg}"))
            }
        }
    }
}
