//! Products of complex arrays (`prod` of `Complex<f32>` / `Complex<f64>`), recorded as a pairwise
//! tree of element-wise complex multiplications.
//!
//! A complex sum splits into two real sums (`record::complex_sum`), so no reduction ever holds a
//! complex accumulator; a product does not split: its real part mixes both parts of every factor.
//! A product of moduli times `exp(i Σ arg)` would split it, but the argument sum loses the phase's
//! low bits (`n` angles of size `pi`, each rounded) and `exp`/`cos`/`sin` add their own error.
//! Giving every executor's reduction a complex accumulator (the tile VM's partials, the native C,
//! OpenCL C and WGSL renderers' work-group trees and identities) would touch every reduction path
//! for one op. Instead each reduced axis of length `L` is halved until one element is left:
//! `x[.., :L/2] * x[.., L/2..2(L/2)]` (the complex multiply every executor already has, exactly
//! num-complex's `*`), with the last element of an odd length multiplied into a carry. That is a
//! real complex-multiply reduction in pairwise order, so its rounding error grows like
//! `log2(L)` ulps rather than `L`. It runs on every executor unchanged, comparison mode replays
//! the same graph, and the liveness pass decides which levels to store (a level read through two
//! slices is recomputed while that is cheap, so a few levels fuse into each kernel:
//! `proggen/liveness.rs`, rule 2). `Complex<f32>` products multiply in `Complex<f64>` where the
//! executor has f64 (the CPU, OpenCL with fp64), as real f32 products accumulate in f64.
//!
//! Several axes are reduced one after another, the last first (a product is associative). A
//! zero factor is not special-cased: factors multiply as IEEE complex numbers in this order, so
//! a zero beside an overflowed partial product gives NaN parts, as num-complex does.

use super::Handle;
use super::record::{SliceSpec, binary, cast, constant, shape_str, slice};
use crate::compile::Inner;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{BinaryOp, DType, Scalar, Shape, Site};

/// The product of complex `a` over `axes` (the axes removed), in `a`'s element type.
pub(super) fn complex_product(a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    let mut axes: Vec<usize> = axes.to_vec();
    axes.sort_unstable();
    axes.dedup();
    if let Some(&bad) = axes.iter().find(|&&x| x >= a.shape.len()) {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "axis {bad} is out of range for shape {}",
                shape_str(&a.shape)
            ),
        )
        .at(site));
    }
    let wide = Inner::get().sched.device().is_none_or(|d| d.fp64);
    let acc = if a.dtype == DType::C64 && wide {
        DType::C128
    } else {
        a.dtype
    };
    let mut x = cast(a, acc, site);
    for &axis in axes.iter().rev() {
        x = along(&x, axis, site)?;
    }
    Ok(cast(&x, a.dtype, site))
}

/// The product along one axis (removed): halves of the axis multiplied until one is left.
fn along(x: &Handle, axis: usize, site: Site) -> Result<Handle> {
    let mut len = x.shape[axis];
    if len == 0 {
        return one(x, axis, site);
    }
    let mut x = x.clone();
    let mut carry: Option<Handle> = None;
    while len > 1 {
        let half = len / 2;
        if len % 2 == 1 {
            let last = part(&x, axis, len - 1, len, site)?;
            carry = Some(match carry {
                Some(c) => binary(BinaryOp::Mul, &c, &last, site)?,
                None => last,
            });
        }
        let lo = part(&x, axis, 0, half, site)?;
        let hi = part(&x, axis, half, 2 * half, site)?;
        x = binary(BinaryOp::Mul, &lo, &hi, site)?;
        len = half;
    }
    if let Some(c) = carry {
        x = binary(BinaryOp::Mul, &x, &c, site)?;
    }
    let mut spec = vec![SliceSpec::ALL; axis];
    spec.push(SliceSpec::index(0));
    slice(&x, &spec, site)
}

/// Elements `start..end` of `x` along `axis` (the axis kept).
fn part(x: &Handle, axis: usize, start: usize, end: usize, site: Site) -> Result<Handle> {
    let mut spec = vec![SliceSpec::ALL; axis];
    spec.push(SliceSpec {
        start: Some(start as isize),
        end: Some(end as isize),
        step: 1,
        index: false,
    });
    slice(x, &spec, site)
}

/// The empty product `1 + 0i`, shaped as `x` without `axis` (complex constants are recorded as
/// their two real parts joined, `Scalar::C64`).
fn one(x: &Handle, axis: usize, site: Site) -> Result<Handle> {
    let shape: Shape = (0..x.shape.len())
        .filter(|&i| i != axis)
        .map(|i| x.shape[i])
        .collect();
    let part = |v: f64| constant(Scalar::F64(v).cast(x.dtype.real()), shape.clone(), site);
    binary(BinaryOp::Complex, &part(1.0), &part(0.0), site)
}
