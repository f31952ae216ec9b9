//! Views that move elements along an axis by a rule rather than an affine map: `roll`, `pad` in
//! every mode, a fused `concat`, and slice assignment (`with_slice`). Each becomes index folds
//! (`Op::Fold`, fused like a slice) and, where elements come from elsewhere, a `select` on a
//! mask built from the position (`iota` compared with the region's bounds), so none of them is a
//! copy of its own.

use super::record::{binary, constant, generate, intrinsic, select, shape_str};
use super::{Handle, SliceSpec};
use crate::compile::Inner;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{BinaryOp, DType, FoldMode, GenKind, Intrinsic, Op, Scalar, Shape, Site};

/// Parts a `concat` fuses at most: each element of the result computes every part (and keeps
/// one), so many parts cost more than the intrinsic's copies.
pub const FUSED_CONCAT_PARTS: usize = 4;

/// Along `axis`, element `i` of the result is `a`'s element `mode(i - shift)` folded into `a`'s
/// length; the result is `len` long there.
pub fn fold(
    a: &Handle,
    axis: usize,
    mode: FoldMode,
    shift: isize,
    len: usize,
    site: Site,
) -> Handle {
    let mut shape = a.shape.clone();
    shape[axis] = len;
    if let Some(v) = a.konst {
        return constant(v, shape, site);
    }
    if shape == a.shape && (shift == 0 || (mode == FoldMode::Wrap && shift % len as isize == 0)) {
        return a.clone();
    }
    Inner::get().record(Op::Fold { axis, mode, shift }, &[a], shape, a.dtype, site)
}

fn check_axis(a: &Handle, axis: usize, what: &str, site: Site) -> Result<()> {
    if axis >= a.shape.len() {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "{what} axis {axis} is out of range for shape {}",
                shape_str(&a.shape)
            ),
        )
        .at(site));
    }
    Ok(())
}

/// NumPy's `roll`: element `i` along `axis` moves to `i + shift` (modulo the length).
pub fn roll(a: &Handle, shift: isize, axis: usize, site: Site) -> Result<Handle> {
    check_axis(a, axis, "roll", site)?;
    let n = a.shape[axis];
    if n == 0 {
        return Ok(a.clone());
    }
    // The shift nearest zero: the fold is then the identity over most of the axis, which is
    // where the CPU's native tier runs its fast, affine body (`codegen/c.rs`, `render_rows`).
    let n = n as isize;
    let shift = shift.rem_euclid(n);
    let shift = if shift > n / 2 { shift - n } else { shift };
    Ok(fold(a, axis, FoldMode::Wrap, shift, n as usize, site))
}

/// How `pad` fills the new elements (NumPy's modes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PadFill {
    /// A constant.
    Constant(Scalar),
    /// Another rule: the edge element, the periodic continuation or a reflection.
    Fold(FoldMode),
}

/// A bool mask over `shape`: `lo <= i < hi` along `axis` (`i` the element's index there).
fn in_range(shape: &Shape, axis: usize, lo: usize, hi: usize, site: Site) -> Result<Handle> {
    let i = generate(GenKind::Iota { axis }, shape.clone(), DType::U32, site);
    let bound = |v: usize| constant(Scalar::U32(v as u32), Shape::new(), site);
    let below = binary(BinaryOp::Lt, &i, &bound(hi), site)?;
    if lo == 0 {
        return Ok(below);
    }
    let above = binary(BinaryOp::Ge, &i, &bound(lo), site)?;
    binary(BinaryOp::And, &above, &below, site)
}

/// Whether the index along `axis` is `lo` plus a multiple of `step` (compared in `u32`).
fn on_stride(shape: &Shape, axis: usize, lo: usize, step: usize, site: Site) -> Result<Handle> {
    let i = generate(GenKind::Iota { axis }, shape.clone(), DType::U32, site);
    let k = |v: usize| constant(Scalar::U32(v as u32), Shape::new(), site);
    let r = binary(BinaryOp::Mod, &i, &k(step), site)?;
    binary(BinaryOp::Eq, &r, &k(lo % step), site)
}

/// `v` with each element along `axis` repeated `step` times, cut to `span` elements: element
/// `j * step` is `v[j]` (the others are masked off by the caller).
fn spread(v: &Handle, axis: usize, step: usize, span: usize, site: Site) -> Result<Handle> {
    let mut tall = v.shape.clone();
    tall.insert(axis + 1, 1);
    let mut wide = tall.clone();
    wide[axis + 1] = step;
    let mut flat = v.shape.clone();
    flat[axis] *= step;
    let up = super::record::reshape(v, tall, site)?;
    let up = super::record::broadcast_to(&up, wide, site)?;
    let up = super::record::reshape(&up, flat, site)?;
    let cut: Vec<SliceSpec> = (0..up.shape.len())
        .map(|d| SliceSpec {
            start: (d == axis).then_some(0),
            end: (d == axis).then_some(span as isize),
            step: 1,
            index: false,
        })
        .collect();
    super::record::slice(&up, &cut, site)
}

/// The index bound the masks compare in `u32`.
fn check_u32(len: usize, what: &str, site: Site) -> Result<()> {
    if len > u32::MAX as usize {
        return Err(Error::new(
            ErrorKind::Shape,
            format!("{what}: an axis of {len} elements is longer than 2^32 - 1"),
        )
        .at(site));
    }
    Ok(())
}

/// NumPy's `pad`: `widths[d]` elements before and after along axis `d` (missing axes: none).
pub fn pad(a: &Handle, widths: &[(usize, usize)], fill: PadFill, site: Site) -> Result<Handle> {
    if widths.len() > a.shape.len() {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "{} pad widths for an array of shape {}",
                widths.len(),
                shape_str(&a.shape)
            ),
        )
        .at(site)
        .hint("give one (before, after) pair per axis, or fewer for the leading axes only"));
    }
    let mut out = a.clone();
    let mut mask: Option<Handle> = None;
    let mut shape = a.shape.clone();
    // The original elements' range along each padded axis.
    let mut kept = Vec::new();
    for (axis, &(lo, hi)) in widths.iter().enumerate() {
        if lo == 0 && hi == 0 {
            continue;
        }
        let n = a.shape[axis];
        let len = n + lo + hi;
        check_u32(len, "pad", site)?;
        let mode = match fill {
            PadFill::Constant(_) => FoldMode::Clamp,
            PadFill::Fold(m) => m,
        };
        if n == 0 && !matches!(fill, PadFill::Constant(_)) {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "pad mode `{}` of an empty axis {axis} has no element to repeat",
                    mode.name()
                ),
            )
            .at(site)
            .hint("pad an empty axis with a constant"));
        }
        shape[axis] = len;
        out = if n == 0 {
            constant(Scalar::F64(0.0).cast(a.dtype), shape.clone(), site)
        } else {
            fold(&out, axis, mode, lo as isize, len, site)
        };
        kept.push((axis, lo, lo + n));
    }
    if let PadFill::Constant(_) = fill {
        for &(axis, lo, hi) in &kept {
            let m = in_range(&shape, axis, lo, hi, site)?;
            mask = Some(match mask {
                None => m,
                Some(prev) => binary(BinaryOp::And, &prev, &m, site)?,
            });
        }
    }
    match (fill, mask) {
        (PadFill::Constant(v), Some(mask)) => {
            let c = constant(v.cast(a.dtype), Shape::new(), site);
            select(&mask, &out, &c, site)
        }
        _ => Ok(out),
    }
}

/// `concat` of a few parts as one fused expression: part `k` read at `i - offset_k` (clamped into
/// it) where the position lies in its range. More parts run the intrinsic.
pub fn concat(parts: &[&Handle], axis: usize, site: Site) -> Result<Handle> {
    let op = Intrinsic::Concat { axis };
    if parts.len() > FUSED_CONCAT_PARTS || parts.is_empty() {
        return intrinsic(op, parts, site);
    }
    let operands: Vec<crate::intrinsics::Operand> = parts
        .iter()
        .map(|h| crate::intrinsics::Operand {
            shape: &h.shape,
            dtype: h.dtype,
        })
        .collect();
    let outs = op.def().check(&op, &operands, site)?;
    let out = crate::intrinsics::single(&op, outs, site)?;
    let len = out.shape[axis];
    check_u32(len, "concat", site)?;
    let parts: Vec<&Handle> = parts
        .iter()
        .copied()
        .filter(|p| p.shape[axis] > 0)
        .collect();
    let Some((last, firsts)) = parts.split_last() else {
        return Ok(constant(Scalar::F64(0.0).cast(out.dtype), out.shape, site));
    };
    let offsets: Vec<usize> = parts
        .iter()
        .scan(0, |o, p| {
            let at = *o;
            *o += p.shape[axis];
            Some(at)
        })
        .collect();
    let placed =
        |k: usize, p: &Handle| fold(p, axis, FoldMode::Clamp, offsets[k] as isize, len, site);
    // From the last part backwards: select(i < end_k, part_k, rest).
    let mut acc = placed(parts.len() - 1, last);
    for (k, p) in firsts.iter().enumerate().rev() {
        let end = offsets[k] + p.shape[axis];
        let mask = in_range(&out.shape, axis, 0, end, site)?;
        acc = select(&mask, &placed(k, p), &acc, site)?;
    }
    Ok(acc)
}

/// `a` with the region `spec` selects replaced by `values` (broadcast to the region's shape):
/// NumPy's `a[spec] = values` as a new array.
pub fn with_slice(a: &Handle, spec: &[SliceSpec], values: &Handle, site: Site) -> Result<Handle> {
    if values.dtype != a.dtype {
        return Err(Error::new(
            ErrorKind::DType,
            format!(
                "with_slice: {} values for an array of {} elements",
                values.dtype, a.dtype
            ),
        )
        .at(site)
        .hint("cast the values with `.cast::<T>()` first"));
    }
    let region = super::record::slice_bounds(&a.shape, spec, site)?;
    // The region's shape with indexed axes kept (length 1): the values broadcast to it.
    let kept: Shape = region
        .iter()
        .zip(spec.iter().map(Some).chain(std::iter::repeat(None)))
        .filter(|(_, s)| !s.is_some_and(|s| s.index))
        .map(|(r, _)| r.len)
        .collect();
    let full: Shape = region.iter().map(|r| r.len).collect();
    let vals = super::record::broadcast_to(values, kept.clone(), site).map_err(|e| {
        Error::new(
            ErrorKind::Shape,
            format!(
                "with_slice: values of shape {} do not fit the region's shape {}",
                shape_str(&values.shape),
                shape_str(&kept)
            ),
        )
        .at(site)
        .hint(e.to_string())
    })?;
    if region.iter().any(|r| r.len == 0) {
        return Ok(a.clone());
    }
    let mut v = if kept == full {
        vals
    } else {
        super::record::reshape(&vals, full, site)?
    };
    let mut mask: Option<Handle> = None;
    for (axis, r) in region.iter().enumerate() {
        let n = a.shape[axis];
        let step = if r.len > 1 { r.step.unsigned_abs() } else { 1 };
        // The region from its lowest element up: a descending one is the ascending one with the
        // values reversed.
        let lo = if r.step < 0 {
            r.start - (r.len - 1) * step
        } else {
            r.start
        };
        if r.step < 0 && r.len > 1 {
            let rev: Vec<SliceSpec> = (0..v.shape.len())
                .map(|d| SliceSpec {
                    start: None,
                    end: None,
                    step: if d == axis { -1 } else { 1 },
                    index: false,
                })
                .collect();
            v = super::record::slice(&v, &rev, site)?;
        }
        // The region spans `(len - 1) * step + 1` elements; with a step over 1 the values are
        // spread over it (each repeated `step` times: value `j` at `j * step .. (j + 1) * step`,
        // by a broadcast) and a mask keeps every `step`-th element.
        let span = (r.len - 1) * step + 1;
        if step > 1 {
            v = spread(&v, axis, step, span, site)?;
        }
        if lo == 0 && span == n && step == 1 {
            continue;
        }
        check_u32(n, "with_slice", site)?;
        v = fold(&v, axis, FoldMode::Clamp, lo as isize, n, site);
        let mut m = in_range(&a.shape, axis, lo, lo + span, site)?;
        if step > 1 {
            m = binary(
                BinaryOp::And,
                &m,
                &on_stride(&a.shape, axis, lo, step, site)?,
                site,
            )?;
        }
        mask = Some(match mask {
            None => m,
            Some(prev) => binary(BinaryOp::And, &prev, &m, site)?,
        });
    }
    match mask {
        None => Ok(v),
        Some(mask) => select(&mask, &v, a, site),
    }
}
