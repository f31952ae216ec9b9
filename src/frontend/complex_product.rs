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
//! Several axes are reduced one after another, the last first (a product is associative). As
//! for real products (`record::float_product`), a zero factor makes the product exactly
//! `0 + 0i` even where the other factors' partial products overflow (the tree meets the zero
//! late, after the overflow, where a sequential product keeps 0 from the start), or NaN parts
//! beside a NaN or infinite factor: the zero and bad-factor flags are reductions of `bool`s that
//! fuse into the first level's pass. The fuzzer found the overflow case (`tests/fuzz/corpus.txt`).

use super::Handle;
use super::record::{SliceSpec, binary, cast, constant, reduce, select, slice, unary};
use crate::compile::Inner;
use crate::error::Result;
use crate::ir::{BinaryOp, DType, ReduceOp, Scalar, Shape, Site, UnaryOp};

/// The product of complex `a` over `axes` (the axes removed), in `a`'s element type.
pub(super) fn complex_product(a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    let axes = super::record::reduced_axes(a, axes, site)?;
    if axes.iter().any(|&x| a.shape[x] == 0) {
        // The empty product, as a constant (no kernel reduces an empty axis).
        let shape: Shape = (0..a.shape.len())
            .filter(|i| !axes.contains(i))
            .map(|i| a.shape[i])
            .collect();
        let part = |v: f64| constant(Scalar::F64(v).cast(a.dtype.real()), shape.clone(), site);
        return binary(BinaryOp::Complex, &part(1.0), &part(0.0), site);
    }
    let wide = Inner::get().sched.fp64_everywhere();
    let acc = if a.dtype == DType::C64 && wide {
        DType::C128
    } else {
        a.dtype
    };
    let c = |re: f64, im: f64| -> Result<Handle> {
        let part = |v: f64| constant(Scalar::F64(v).cast(a.dtype.real()), Shape::new(), site);
        binary(BinaryOp::Complex, &part(re), &part(im), site)
    };
    let zero = binary(BinaryOp::Eq, a, &c(0.0, 0.0)?, site)?;
    let modulus = unary(UnaryOp::Abs, a, site)?;
    let bad = binary(
        BinaryOp::Or,
        &unary(UnaryOp::IsNan, &modulus, site)?,
        &unary(UnaryOp::IsInf, &modulus, site)?,
        site,
    )?;
    let nonzero = select(&zero, &c(1.0, 0.0)?, a, site)?;
    let mut x = cast(&nonzero, acc, site);
    for &axis in axes.iter().rev() {
        x = along(&x, axis, site)?;
    }
    let product = cast(&x, a.dtype, site);
    if axes.is_empty() {
        return Ok(product);
    }
    let any_zero = reduce(ReduceOp::Any, &zero, &axes, site)?;
    let any_bad = reduce(ReduceOp::Any, &bad, &axes, site)?;
    let zero_result = select(&any_bad, &c(f64::NAN, f64::NAN)?, &c(0.0, 0.0)?, site)?;
    select(&any_zero, &zero_result, &product, site)
}

/// The product along one axis (removed): halves of the axis multiplied until one is left.
fn along(x: &Handle, axis: usize, site: Site) -> Result<Handle> {
    let mut len = x.shape[axis];
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
