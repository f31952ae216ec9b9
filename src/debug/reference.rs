//! The reference interpreter (the seed's CPU interpreter for reference results, FIG. 9A): evaluates
//! one IR node at a time over whole arrays, sequentially, with its own index arithmetic; nothing is
//! fused, no cache is used, no kernel is generated. It shares only the primitive library's scalar
//! sources with the optimised path, so it checks fusion, index maps, code generation, the native
//! tier, the caches and the executors. Reductions and matmul accumulate in f64, in element order.

use crate::exec::TypedVec;
use crate::ir::NodeInfo;
use crate::ir::{DType, GenKind, Op, ReduceOp, Scalar};
use crate::primitives::cpu as prim;
use crate::primitives::{
    binary_bool, binary_ceq, binary_cmp, binary_complex, binary_float, binary_int, binary_mkc,
    unary_bool, unary_complex, unary_cpart, unary_float, unary_int, unary_pred,
};

pub(crate) use crate::ir::{collect, source_indices, unravel};

/// `v` (of `from` shape) broadcast NumPy-style to `to`.
pub(crate) fn broadcast(v: &TypedVec, from: &[usize], to: &[usize]) -> TypedVec {
    let n: usize = to.iter().product();
    let lead = to.len() - from.len();
    let at = source_indices(to, from, |idx, src| {
        for j in 0..from.len() {
            src[j] = if from[j] == 1 { 0 } else { idx[j + lead] };
        }
    });
    collect(v.dtype(), n, |i| v.get(at[i]))
}

/// Evaluates node `n` from its inputs' values and shapes.
pub fn eval(n: &NodeInfo, inputs: &[(&TypedVec, &[usize])]) -> Result<TypedVec, String> {
    let len = n.len();
    let shape = &n.shape[..];
    Ok(match &n.op {
        Op::Source => return Err("a source node has no reference to compute".into()),
        Op::Const(v) => collect(n.dtype, len, |_| *v),
        Op::Generate(g) => generate(g, shape, n.dtype),
        Op::Unary(op) => {
            let a = inputs[0].0;
            let mut out = TypedVec::zeros(n.dtype, len);
            match (a, &mut out) {
                (TypedVec::F32(a), TypedVec::F32(o)) => unary_float(*op, a, o),
                (TypedVec::F64(a), TypedVec::F64(o)) => unary_float(*op, a, o),
                (TypedVec::I32(a), TypedVec::I32(o)) => unary_int(*op, a, o),
                (TypedVec::U32(a), TypedVec::U32(o)) => unary_int(*op, a, o),
                (TypedVec::Bool(a), TypedVec::Bool(o)) => unary_bool(*op, a, o),
                (TypedVec::F32(a), TypedVec::Bool(o)) => unary_pred(*op, a, o),
                (TypedVec::F64(a), TypedVec::Bool(o)) => unary_pred(*op, a, o),
                (TypedVec::C64(a), TypedVec::C64(o)) => unary_complex(*op, a, o),
                (TypedVec::C128(a), TypedVec::C128(o)) => unary_complex(*op, a, o),
                (TypedVec::C64(a), TypedVec::F32(o)) => unary_cpart(*op, a, o),
                (TypedVec::C128(a), TypedVec::F64(o)) => unary_cpart(*op, a, o),
                _ => return Err(format!("{} on {}", op.name(), a.dtype())),
            }
            out
        }
        Op::Binary(op) => {
            let a = broadcast(inputs[0].0, inputs[0].1, shape);
            let b = broadcast(inputs[1].0, inputs[1].1, shape);
            let mut out = TypedVec::zeros(n.dtype, len);
            let r = match (&a, &b, &mut out) {
                (TypedVec::F32(a), TypedVec::F32(b), TypedVec::F32(o)) => {
                    binary_float(*op, a, b, o)
                }
                (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(o)) => {
                    binary_float(*op, a, b, o)
                }
                (TypedVec::I32(a), TypedVec::I32(b), TypedVec::I32(o)) => binary_int(*op, a, b, o),
                (TypedVec::U32(a), TypedVec::U32(b), TypedVec::U32(o)) => binary_int(*op, a, b, o),
                (TypedVec::Bool(a), TypedVec::Bool(b), TypedVec::Bool(o)) => {
                    binary_bool(*op, a, b, o)
                }
                (TypedVec::F32(a), TypedVec::F32(b), TypedVec::Bool(o)) => binary_cmp(*op, a, b, o),
                (TypedVec::F64(a), TypedVec::F64(b), TypedVec::Bool(o)) => binary_cmp(*op, a, b, o),
                (TypedVec::I32(a), TypedVec::I32(b), TypedVec::Bool(o)) => binary_cmp(*op, a, b, o),
                (TypedVec::U32(a), TypedVec::U32(b), TypedVec::Bool(o)) => binary_cmp(*op, a, b, o),
                (TypedVec::C64(a), TypedVec::C64(b), TypedVec::C64(o)) => {
                    binary_complex(*op, a, b, o)
                }
                (TypedVec::C128(a), TypedVec::C128(b), TypedVec::C128(o)) => {
                    binary_complex(*op, a, b, o)
                }
                (TypedVec::C64(a), TypedVec::C64(b), TypedVec::Bool(o)) => binary_ceq(*op, a, b, o),
                (TypedVec::C128(a), TypedVec::C128(b), TypedVec::Bool(o)) => {
                    binary_ceq(*op, a, b, o)
                }
                (TypedVec::F32(a), TypedVec::F32(b), TypedVec::C64(o)) => binary_mkc(*op, a, b, o),
                (TypedVec::F64(a), TypedVec::F64(b), TypedVec::C128(o)) => binary_mkc(*op, a, b, o),
                _ => return Err(format!("{} on {}", op.name(), a.dtype())),
            };
            r.map_err(|e| e.to_string())?;
            out
        }
        Op::Select => {
            let c = broadcast(inputs[0].0, inputs[0].1, shape);
            let a = broadcast(inputs[1].0, inputs[1].1, shape);
            let b = broadcast(inputs[2].0, inputs[2].1, shape);
            collect(n.dtype, len, |i| {
                if c.get(i) == Scalar::Bool(true) {
                    a.get(i)
                } else {
                    b.get(i)
                }
            })
        }
        Op::Cast(to) => collect(*to, len, |i| inputs[0].0.get(i)),
        Op::Reshape => collect(n.dtype, len, |i| inputs[0].0.get(i)),
        Op::Broadcast => broadcast(inputs[0].0, inputs[0].1, shape),
        Op::Permute(perm) => {
            let (v, from) = inputs[0];
            let at = source_indices(shape, from, |idx, src| {
                for (k, &p) in perm.iter().enumerate() {
                    src[p] = idx[k];
                }
            });
            collect(n.dtype, len, |i| v.get(at[i]))
        }
        Op::Slice { start, step } => {
            let (v, from) = inputs[0];
            let at = source_indices(shape, from, |idx, src| {
                for d in 0..from.len() {
                    src[d] = (start[d] + step[d] * idx[d] as isize) as usize;
                }
            });
            collect(n.dtype, len, |i| v.get(at[i]))
        }
        Op::Tile => {
            let (v, from) = inputs[0];
            let lead = shape.len() - from.len();
            let at = source_indices(shape, from, |idx, src| {
                for d in 0..from.len() {
                    src[d] = idx[d + lead] % from[d];
                }
            });
            collect(n.dtype, len, |i| v.get(at[i]))
        }
        Op::Fold { axis, mode, shift } => {
            let (v, from) = inputs[0];
            let at = source_indices(shape, from, |idx, src| {
                src.copy_from_slice(idx);
                src[*axis] = fold_index(idx[*axis] as isize - *shift, from[*axis], *mode);
            });
            collect(n.dtype, len, |i| v.get(at[i]))
        }
        Op::Reduce { op, axes } => reduce(*op, axes, inputs[0].0, inputs[0].1, n),
        Op::Intrinsic(i) => {
            let out = crate::ir::IntrinsicOutput {
                shape: n.shape.clone(),
                dtype: n.dtype,
            };
            let mut values = i.def().reference(i, inputs, &[out])?;
            values.swap_remove(0)
        }
    })
}

fn generate(g: &GenKind, shape: &[usize], dtype: DType) -> TypedVec {
    let len: usize = shape.iter().product();
    match g {
        GenKind::Iota { axis } => {
            collect(dtype, len, |i| Scalar::F64(unravel(i, shape)[*axis] as f64))
        }
        GenKind::Identity => collect(dtype, len, |i| {
            let idx = unravel(i, shape);
            Scalar::F64((idx[0] == idx[1]) as u8 as f64)
        }),
        GenKind::Linspace {
            start,
            step,
            end,
            n,
        } => collect(dtype, len, |i| {
            Scalar::F64(if i + 1 == *n {
                *end
            } else {
                start + step * i as f64
            })
        }),
        GenKind::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => {
            // Element by element through the scalar stream functions (the executors run them
            // vectorised, a tile or sub-block at a time).
            let mut cache = (u64::MAX, [0u32; 4]);
            let f64 = dtype == DType::F64;
            let w = prim::dist_words(*dist, f64);
            let mut words =
                |i: usize| prim::random_words(*alg, *key, counter + i as u64, w, &mut cache);
            match dtype {
                DType::F32 => TypedVec::F32(
                    (0..len)
                        .map(|i| prim::random_f32(*dist, &words(i)))
                        .collect(),
                ),
                DType::F64 => TypedVec::F64(
                    (0..len)
                        .map(|i| prim::random_f64(*dist, &words(i)))
                        .collect(),
                ),
                _ => {
                    let m = prim::integers_multiplier(*range);
                    TypedVec::U32(
                        (0..len)
                            .map(|i| prim::integer_u32(words(i)[0], m))
                            .collect(),
                    )
                }
            }
        }
    }
}

/// Reductions combine per-block partials exactly as the executors do (blocks of 1024 elements of
/// the domain, kept axes first then reduced axes, combined in order), so legitimate rounding
/// differences of a different summation order do not show up as mismatches downstream. The
/// reference lays the input out in that order with its own index arithmetic.
fn reduce(op: ReduceOp, axes: &[usize], v: &TypedVec, from: &[usize], n: &NodeInfo) -> TypedVec {
    use crate::exec::cpu::reduce as r;
    let kept: Vec<usize> = (0..from.len()).filter(|a| !axes.contains(a)).collect();
    let order: Vec<usize> = kept.iter().chain(axes.iter()).copied().collect();
    let domain: Vec<usize> = order.iter().map(|&a| from[a]).collect();
    let inner: usize = axes.iter().map(|&a| from[a]).product();
    let len: usize = from.iter().product();
    let at = source_indices(&domain, from, |d, src| {
        for (k, &a) in order.iter().enumerate() {
            src[a] = d[k];
        }
    });
    let laid_out = collect(v.dtype(), len, |i| v.get(at[i]));
    let mut out = TypedVec::zeros(n.dtype, n.len());
    let partials = r::partials(
        op,
        crate::exec::cpu::slices::Src::of(&laid_out, 0, len),
        0,
        inner.max(1),
        crate::exec::cpu::slices::OutPtr::of(&mut out),
    );
    r::finish(op, std::iter::once(&partials), &mut out, n.len(), inner);
    out
}

/// Index `i` brought into `0..n` by reflecting or wrapping it step by step, as NumPy's `pad` and
/// `roll` describe it (written apart from the kernels' closed forms, `FoldMode::apply`).
fn fold_index(mut i: isize, n: usize, mode: crate::ir::FoldMode) -> usize {
    use crate::ir::FoldMode;
    let n = n as isize;
    if n <= 1 {
        return 0;
    }
    while i < 0 || i >= n {
        i = match mode {
            FoldMode::Wrap => i.rem_euclid(n),
            FoldMode::Clamp => i.clamp(0, n - 1),
            FoldMode::Reflect if i < 0 => -i,
            FoldMode::Reflect => 2 * (n - 1) - i,
            FoldMode::Symmetric if i < 0 => -i - 1,
            FoldMode::Symmetric => 2 * n - 1 - i,
        };
    }
    i as usize
}
