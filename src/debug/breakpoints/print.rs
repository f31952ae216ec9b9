//! Showing values at a stop: a slice of a host copy (`[0:3, 1]`, Python/NumPy rules, checked by
//! the front end's own slice arithmetic) and NumPy-style text through the API's renderer.

use super::values::Values;
use crate::error::{Error, ErrorKind, Result};
use crate::exec::TypedVec;
use crate::frontend::SliceSpec;
use crate::ir::Site;
use std::sync::Arc;

/// Parses `[a:b:s, i, :]` (brackets optional, empty: everything).
pub(crate) fn parse_slice(text: &str, site: Site) -> Result<Vec<SliceSpec>> {
    let t = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim();
    if t.is_empty() {
        return Ok(Vec::new());
    }
    let bad = |what: &str| {
        Error::new(
            ErrorKind::Argument,
            format!("cannot read the slice `{text}`: {what}"),
        )
        .at(site)
        .hint("write it as in NumPy: `[1:4, 2]`, `[::2]`, `[-1]`")
    };
    let num = |s: &str| -> Result<Option<isize>> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        s.parse::<isize>()
            .map(Some)
            .map_err(|_| bad(&format!("`{s}` is not an integer")))
    };
    t.split(',')
        .map(|axis| {
            let parts: Vec<&str> = axis.split(':').collect();
            match parts[..] {
                [i] => Ok(SliceSpec::index(num(i)?.ok_or_else(|| bad("empty index"))?)),
                [a, b] => Ok(SliceSpec {
                    start: num(a)?,
                    end: num(b)?,
                    step: 1,
                    index: false,
                }),
                [a, b, s] => Ok(SliceSpec {
                    start: num(a)?,
                    end: num(b)?,
                    step: num(s)?.unwrap_or(1),
                    index: false,
                }),
                _ => Err(bad("too many `:`")),
            }
        })
        .collect()
}

/// The part of `v` that `spec` selects (indexed axes dropped).
pub(crate) fn slice(v: &Values, spec: &[SliceSpec], site: Site) -> Result<Values> {
    if spec.is_empty() {
        return Ok(v.clone());
    }
    let region = crate::frontend::slice_bounds(&v.shape, spec, site)?;
    let out_shape: Vec<usize> = region.iter().map(|r| r.len).collect();
    let n: usize = out_shape.iter().product();
    let strides: Vec<usize> = (0..v.shape.len())
        .map(|d| v.shape[d + 1..].iter().product())
        .collect();
    let data = crate::ir::collect(v.dtype(), n, |i| {
        let idx = crate::ir::unravel(i, &out_shape);
        let at: usize = region
            .iter()
            .zip(&idx)
            .zip(&strides)
            .map(|((r, &k), &s)| (r.start as isize + r.step * k as isize) as usize * s)
            .sum();
        v.data.get(at)
    });
    let shape = (0..out_shape.len())
        .filter(|&d| !spec.get(d).is_some_and(|s| s.index))
        .map(|d| out_shape[d])
        .collect();
    Ok(Values {
        shape,
        data: Arc::new(data),
    })
}

/// NumPy-style text of `v`.
pub(crate) fn render(v: &Values) -> String {
    use crate::api::inspect::render as r;
    match &*v.data {
        TypedVec::F32(d) => r(d, &v.shape, None, 0),
        TypedVec::F64(d) => r(d, &v.shape, None, 0),
        TypedVec::I32(d) => r(d, &v.shape, None, 0),
        TypedVec::U32(d) => r(d, &v.shape, None, 0),
        TypedVec::Bool(d) => r(d, &v.shape, None, 0),
        TypedVec::C64(d) => r(d, &v.shape, None, 0),
        TypedVec::C128(d) => r(d, &v.shape, None, 0),
    }
}
