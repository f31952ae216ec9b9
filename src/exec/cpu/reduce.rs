//! Reductions on the CPU: the first stage reduces each tile's segments to partials (fused with the
//! kernel's producers); the final stage combines the partials of all tiles, in tile order, so the
//! result does not depend on thread timing. Float sums and products accumulate in f64.

use super::slices::Src;
use crate::exec::TypedVec;
use crate::ir::ReduceOp;

/// A partial result of one output element over one tile segment.
#[derive(Debug, Clone, Copy)]
pub enum Partial {
    /// Sum, product, max or min of numbers (integer sums wrap at the final cast).
    F(f64),
    /// Wrapping integer sum or product, modulo 2^64 (truncated to the element type at the end).
    W(u64),
    B(bool),
    /// Value and index within the reduced extent (argmax, argmin).
    Arg(f64, u64),
}

trait AsF64: Copy {
    fn f(self) -> f64;
    fn w(self) -> u64;
}
impl AsF64 for f32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for f64 {
    fn f(self) -> f64 {
        self
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for i32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for u32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as u64
    }
}

fn identity(op: ReduceOp, int: bool) -> Partial {
    match op {
        ReduceOp::Sum if int => Partial::W(0),
        ReduceOp::Prod if int => Partial::W(1),
        ReduceOp::Sum => Partial::F(0.0),
        ReduceOp::Prod => Partial::F(1.0),
        ReduceOp::Max => Partial::F(f64::NEG_INFINITY),
        ReduceOp::Min => Partial::F(f64::INFINITY),
        ReduceOp::ArgMax => Partial::Arg(f64::NEG_INFINITY, u64::MAX),
        ReduceOp::ArgMin => Partial::Arg(f64::INFINITY, u64::MAX),
        ReduceOp::Any => Partial::B(false),
        ReduceOp::All => Partial::B(true),
    }
}

/// Combines two partials; `a` comes first in element order.
fn combine(op: ReduceOp, a: Partial, b: Partial) -> Partial {
    match (a, b) {
        (Partial::F(x), Partial::F(y)) => Partial::F(match op {
            ReduceOp::Sum => x + y,
            ReduceOp::Prod => x * y,
            ReduceOp::Max => crate::primitives::cpu::fmax_nan(x, y),
            _ => crate::primitives::cpu::fmin_nan(x, y),
        }),
        (Partial::W(x), Partial::W(y)) => Partial::W(match op {
            ReduceOp::Sum => x.wrapping_add(y),
            _ => x.wrapping_mul(y),
        }),
        (Partial::B(x), Partial::B(y)) => {
            Partial::B(if op == ReduceOp::Any { x | y } else { x & y })
        }
        (Partial::Arg(xv, xi), Partial::Arg(yv, yi)) => {
            // The first NaN wins (NumPy); otherwise the strictly better value, ties to the first index.
            let better = if xi == u64::MAX || (!xv.is_nan() && yv.is_nan()) {
                yi != u64::MAX
            } else if xv.is_nan() {
                false
            } else if op == ReduceOp::ArgMax {
                yv > xv
            } else {
                yv < xv
            };
            if better {
                Partial::Arg(yv, yi)
            } else {
                Partial::Arg(xv, xi)
            }
        }
        _ => unreachable!("partials of different kinds"),
    }
}

fn reduce_slice<T: AsF64>(op: ReduceOp, v: &[T], first_index: u64) -> Partial {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => {
            // Eight independent accumulators: vectorisable and more accurate than one running sum.
            let mut acc = [if op == ReduceOp::Sum { 0.0 } else { 1.0 }; 8];
            let chunks = v.chunks_exact(8);
            let rest = chunks.remainder();
            for c in chunks {
                for l in 0..8 {
                    acc[l] = if op == ReduceOp::Sum {
                        acc[l] + c[l].f()
                    } else {
                        acc[l] * c[l].f()
                    };
                }
            }
            let mut total = if op == ReduceOp::Sum {
                acc.iter().sum::<f64>()
            } else {
                acc.iter().product::<f64>()
            };
            for &x in rest {
                total = if op == ReduceOp::Sum {
                    total + x.f()
                } else {
                    total * x.f()
                };
            }
            Partial::F(total)
        }
        ReduceOp::Max | ReduceOp::Min => {
            let mut acc = identity(op, false);
            for &x in v {
                acc = combine(op, acc, Partial::F(x.f()));
            }
            acc
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let mut acc = identity(op, false);
            for (i, &x) in v.iter().enumerate() {
                acc = combine(op, acc, Partial::Arg(x.f(), first_index + i as u64));
            }
            acc
        }
        ReduceOp::Any | ReduceOp::All => unreachable!("any/all take bools"),
    }
}

fn reduce_int_slice<T: AsF64>(op: ReduceOp, v: &[T]) -> Partial {
    let mut acc = identity(op, true);
    for &x in v {
        acc = combine(op, acc, Partial::W(x.w()));
    }
    acc
}

/// Partials never span a multiple of this many domain elements, so the grouping of a sum (and so
/// its rounding) is the same whatever the tile or chunk size, on either CPU tier.
pub const BLOCK: usize = 1024;

/// First stage: one partial per output element touched by domain elements `t0 .. t0 + v.len()`.
pub fn partials(op: ReduceOp, v: Src, t0: usize, inner: usize) -> Vec<(usize, Partial)> {
    let n = match v {
        Src::F32(v) => v.len(),
        Src::F64(v) => v.len(),
        Src::I32(v) => v.len(),
        Src::U32(v) => v.len(),
        Src::Bool(v) => v.len(),
    };
    let int_acc = matches!(op, ReduceOp::Sum | ReduceOp::Prod);
    let mut out = Vec::with_capacity(1 + n / inner.max(1));
    let mut i = 0;
    while i < n {
        let lin = t0 + i;
        let o = lin / inner;
        let seg = (inner - lin % inner).min(n - i).min(BLOCK - lin % BLOCK);
        let first = (lin % inner) as u64;
        let r = i..i + seg;
        let p = match v {
            Src::F32(v) => reduce_slice(op, &v[r], first),
            Src::F64(v) => reduce_slice(op, &v[r], first),
            Src::I32(v) if int_acc => reduce_int_slice(op, &v[r]),
            Src::U32(v) if int_acc => reduce_int_slice(op, &v[r]),
            Src::I32(v) => reduce_slice(op, &v[r], first),
            Src::U32(v) => reduce_slice(op, &v[r], first),
            Src::Bool(v) => {
                let s = &v[r];
                Partial::B(if op == ReduceOp::Any {
                    s.iter().any(|&b| b)
                } else {
                    s.iter().all(|&b| b)
                })
            }
        };
        out.push((o, p));
        i += seg;
    }
    out
}

/// Final stage: combines every tile's partials (in tile order) into `out`, which has `outer` elements.
pub fn finish<'a>(
    op: ReduceOp,
    tiles: impl Iterator<Item = &'a Vec<(usize, Partial)>>,
    out: &mut TypedVec,
    outer: usize,
) {
    let int = matches!(out, TypedVec::I32(_) | TypedVec::U32(_))
        && matches!(op, ReduceOp::Sum | ReduceOp::Prod);
    let mut acc = vec![identity(op, int); outer];
    for tile in tiles {
        for &(o, p) in tile {
            acc[o] = combine(op, acc[o], p);
        }
    }
    for (i, p) in acc.into_iter().enumerate() {
        match (out.dtype(), p) {
            (_, Partial::Arg(_, idx)) => {
                let TypedVec::U32(o) = out else {
                    unreachable!()
                };
                o[i] = idx as u32;
            }
            (_, Partial::B(b)) => {
                let TypedVec::Bool(o) = out else {
                    unreachable!()
                };
                o[i] = b;
            }
            (_, Partial::W(w)) => match out {
                TypedVec::I32(o) => o[i] = w as u32 as i32,
                TypedVec::U32(o) => o[i] = w as u32,
                _ => unreachable!(),
            },
            (_, Partial::F(f)) => match out {
                TypedVec::F32(o) => o[i] = f as f32,
                TypedVec::F64(o) => o[i] = f,
                TypedVec::I32(o) => o[i] = f as i32,
                TypedVec::U32(o) => o[i] = f as u32,
                TypedVec::Bool(_) => unreachable!(),
            },
        }
    }
}
