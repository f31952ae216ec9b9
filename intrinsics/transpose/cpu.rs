//! The batched transpose on the CPU: a plain element loop (the CPU executor runs the fused kernel
//! itself; this entry serves the registry's tests and any caller that names the intrinsic).

use super::TransposeShape;
use crate::ir::TypedVec;

/// `out[b, j, i] = input[offset + (b, i, j)]` for every matrix of the batch.
pub fn run(s: &TransposeShape, input: &TypedVec, out: &mut TypedVec) {
    let (rows, cols, offset) = (s.rows, s.cols, s.offset);
    macro_rules! go {
        ($src:expr, $dst:expr) => {
            for b in 0..s.batch {
                let (src, dst) = (offset + b * rows * cols, b * rows * cols);
                for i in 0..rows {
                    for j in 0..cols {
                        $dst[dst + j * rows + i] = $src[src + i * cols + j];
                    }
                }
            }
        };
    }
    match (input, out) {
        (TypedVec::F32(a), TypedVec::F32(o)) => go!(a, o),
        (TypedVec::F64(a), TypedVec::F64(o)) => go!(a, o),
        (TypedVec::I32(a), TypedVec::I32(o)) => go!(a, o),
        (TypedVec::U32(a), TypedVec::U32(o)) => go!(a, o),
        (TypedVec::Bool(a), TypedVec::Bool(o)) => go!(a, o),
        _ => unreachable!("transpose: input and output types differ"),
    }
}
