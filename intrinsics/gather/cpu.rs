//! Gather (NumPy `take` along an axis): output index (pre, i, post) reads data (pre, idx[i], post).
//! Indices are checked; one out of range fails the program.

use crate::error::Error;
use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;

pub fn run(
    call: &IntrinsicCall,
    axis: usize,
    inputs: &[&TypedVec],
    out: &mut TypedVec,
) -> Result<(), Error> {
    let shape = &call.in_shapes[0];
    let dim = shape[axis];
    let pre: usize = shape[..axis].iter().product();
    let post: usize = shape[axis + 1..].iter().product();
    let idx: Vec<usize> = match inputs[1] {
        TypedVec::I32(v) => v
            .iter()
            .map(|&i| if i < 0 { usize::MAX } else { i as usize })
            .collect(),
        TypedVec::U32(v) => v.iter().map(|&i| i as usize).collect(),
        _ => {
            return Err(crate::intrinsics::cpu::exec_error(
                "gather indices must be i32 or u32".into(),
            ));
        }
    };
    if let Some(pos) = idx.iter().position(|&i| i >= dim) {
        let shown = match inputs[1] {
            TypedVec::I32(v) => v[pos].to_string(),
            TypedVec::U32(v) => v[pos].to_string(),
            _ => unreachable!(),
        };
        let value: f64 = shown.parse().unwrap_or(f64::NAN);
        // With index traps on, a trap naming the position in the index array.
        return Err(crate::debug::trap::report::index_fault(
            "gather",
            format!(
                "gather index {shown} (at position {pos}) is out of bounds for axis {axis} of length {dim}"
            ),
            pos,
            &call.in_shapes[1],
            value,
        ));
    }
    let ni = idx.len();
    macro_rules! go {
        ($src:expr, $dst:expr) => {{
            for p in 0..pre {
                for (j, &i) in idx.iter().enumerate() {
                    let s = (p * dim + i) * post;
                    let d = (p * ni + j) * post;
                    $dst[d..d + post].copy_from_slice(&$src[s..s + post]);
                }
            }
        }};
    }
    match (inputs[0], out) {
        (TypedVec::F32(s), TypedVec::F32(d)) => go!(s, d),
        (TypedVec::F64(s), TypedVec::F64(d)) => go!(s, d),
        (TypedVec::I32(s), TypedVec::I32(d)) => go!(s, d),
        (TypedVec::U32(s), TypedVec::U32(d)) => go!(s, d),
        (TypedVec::Bool(s), TypedVec::Bool(d)) => go!(s, d),
        _ => unreachable!("gather: data and output types differ"),
    }
    Ok(())
}
