//! 2-D matrix product on the CPU: one call of `matrixmultiply`'s GEMM, which packs each operand
//! once and splits the work over its own threads (the crate's `threading` feature).

use crate::error::Error;
use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;

pub fn run(call: &IntrinsicCall, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    let (m, k) = (call.in_shapes[0][0], call.in_shapes[0][1]);
    let n = call.in_shapes[1][1];
    if n == 0 || m == 0 {
        return Ok(());
    }
    macro_rules! gemm {
        ($a:expr, $b:expr, $c:expr, $f:path) => {{
            let (a, b, c) = ($a, $b, $c);
            // SAFETY: a is m x k, b is k x n, c is m x n, all row-major and in bounds.
            unsafe {
                $f(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    k as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
        }};
    }
    match (inputs[0], inputs[1], out) {
        (TypedVec::F32(a), TypedVec::F32(b), TypedVec::F32(c)) => {
            gemm!(a, b, c, matrixmultiply::sgemm)
        }
        (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(c)) => {
            gemm!(a, b, c, matrixmultiply::dgemm)
        }
        _ => {
            return Err(crate::intrinsics::cpu::exec_error(
                "matmul takes f32 or f64 matrices".into(),
            ));
        }
    }
    Ok(())
}
