//! The direct convolution on the CPU: each output row is built as a sum of input rows shifted
//! and scaled by one filter tap (`out[j] += k * x[j + shift]` over the columns both cover), taps
//! in row-major order, in the element type. Rows run as rayon tasks; a long row is cut into
//! column blocks so a single 1-D signal uses every core too.

use super::Geom;
use crate::error::Error;
use crate::ir::TypedVec;
use rayon::prelude::*;

/// Columns per task of one output row.
const BLOCK: usize = 8192;

pub fn run(g: &Geom, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    match (inputs[0], inputs[1], out) {
        (TypedVec::F32(x), TypedVec::F32(k), TypedVec::F32(o)) => rows(g, x, k, o),
        (TypedVec::F64(x), TypedVec::F64(k), TypedVec::F64(o)) => rows(g, x, k, o),
        _ => {
            return Err(crate::intrinsics::cpu::exec_error(
                "convolve: input, filter and output must be all f32 or all f64".into(),
            ));
        }
    }
    Ok(())
}

fn rows<T>(g: &Geom, x: &[T], k: &[T], out: &mut [T])
where
    T: Copy + Send + Sync + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let width = g.o[1];
    if width == 0 {
        return;
    }
    out.par_chunks_mut(width).enumerate().for_each(|(r, row)| {
        let (b, i0) = (r / g.o[0], r % g.o[0]);
        row.par_chunks_mut(BLOCK).enumerate().for_each(|(c, cols)| {
            block(g, x, k, b, i0, c * BLOCK, cols);
        });
    });
}

/// Output columns `j0 .. j0 + out.len()` of row `i0` of batch entry `b`.
fn block<T>(g: &Geom, x: &[T], k: &[T], b: usize, i0: usize, j0: usize, out: &mut [T])
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    out.fill(T::default());
    let (n1, off1) = (g.n[1] as isize, g.off[1] as isize);
    let j_end = (j0 + out.len()) as isize;
    for p0 in 0..g.m[0] {
        let Some(s0) = (i0 + g.off[0]).checked_sub(p0).filter(|&s| s < g.n[0]) else {
            continue;
        };
        let xrow = &x[(b * g.n[0] + s0) * g.n[1]..][..g.n[1]];
        for p1 in 0..g.m[1] {
            let tap = k[g.k_at(b, p0, p1)];
            // Output column j reads input column j + shift, which must lie in 0 .. n1.
            let shift = off1 - p1 as isize;
            let lo = (j0 as isize).max(-shift);
            let hi = j_end.min(n1 - shift);
            if lo >= hi {
                continue;
            }
            let dst = &mut out[(lo - j0 as isize) as usize..(hi - j0 as isize) as usize];
            let src = &xrow[(lo + shift) as usize..(hi + shift) as usize];
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = *d + tap * s;
            }
        }
    }
}
