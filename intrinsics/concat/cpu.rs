//! Concatenation along an axis: block copies of each part into its slot of the output.

use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;

pub fn run(call: &IntrinsicCall, axis: usize, inputs: &[&TypedVec], out: &mut TypedVec) {
    let pre: usize = call.out_shape[..axis].iter().product();
    let post: usize = call.out_shape[axis + 1..].iter().product();
    let out_row = call.out_shape[axis] * post;
    let mut at = 0;
    for (part, shape) in inputs.iter().zip(&call.in_shapes) {
        let row = shape[axis] * post;
        macro_rules! go {
            ($s:expr, $d:expr) => {
                for p in 0..pre {
                    $d[p * out_row + at..p * out_row + at + row]
                        .copy_from_slice(&$s[p * row..(p + 1) * row]);
                }
            };
        }
        match (part, &mut *out) {
            (TypedVec::F32(s), TypedVec::F32(d)) => go!(s, d),
            (TypedVec::F64(s), TypedVec::F64(d)) => go!(s, d),
            (TypedVec::I32(s), TypedVec::I32(d)) => go!(s, d),
            (TypedVec::U32(s), TypedVec::U32(d)) => go!(s, d),
            (TypedVec::Bool(s), TypedVec::Bool(d)) => go!(s, d),
            _ => unreachable!("concat parts share the output's type"),
        }
        at += row;
    }
}
