//! Recording: one function per kind of operation. Each checks its inputs, folds what it can, and
//! records an IR node in the work queue. All return `Result`; the API turns `Err` into a panic at
//! the user's call site for operators and into `Err` for `try_` methods.

use super::fold;
use super::{Handle, NodeHandle, NodeInfo, NodeState};
use crate::compile::Entry;
use crate::compile::Inner;
use crate::counters::Counters;
use crate::error::{Error, ErrorKind, Result};
use crate::exec::TypedVec;
use crate::ir::{
    BinaryOp, DType, GenKind, Intrinsic, NodeId, Op, ReduceOp, Scalar, Shape, Site, UnaryOp,
    broadcast_shapes, numel,
};
use smallvec::SmallVec;
use std::sync::Arc;

pub(crate) fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

impl Inner {
    /// Records a node computed from `inputs`.
    pub fn record(
        &self,
        op: Op,
        inputs: &[&Handle],
        shape: Shape,
        dtype: DType,
        site: Site,
    ) -> Handle {
        let ins: SmallVec<[(NodeId, &[usize]); 3]> =
            inputs.iter().map(|h| (h.id, &h.shape[..])).collect();
        self.record_nodes(op, &ins, shape, dtype, site)
    }

    /// Records a node computed from the nodes `inputs` (id and shape): [`Inner::record`] for an
    /// input the application holds no handle of (matmul reading the array under a transpose
    /// view). Each input must be in the port table (a handle or a user keeps it there).
    pub fn record_nodes(
        &self,
        op: Op,
        inputs: &[(NodeId, &[usize])],
        shape: Shape,
        dtype: DType,
        site: Site,
    ) -> Handle {
        let t0 = crate::profile::call_start();
        let h = self.record_untimed(op, inputs, shape, dtype, site);
        crate::profile::api_call(site, t0);
        h
    }

    fn record_untimed(
        &self,
        op: Op,
        inputs: &[(NodeId, &[usize])],
        shape: Shape,
        dtype: DType,
        site: Site,
    ) -> Handle {
        let konst = match op {
            Op::Const(v) => Some(v),
            _ => None,
        };
        // Comparison mode: the reference value, before the node can be flushed.
        let (reference, magnitude) = if self.compare_on.load(std::sync::atomic::Ordering::Relaxed) {
            self.reference_of(&op, inputs, &shape, dtype, site)
                .map_or((None, None), |(r, m)| (Some(r), m))
        } else {
            (None, None)
        };
        let fusible = op.is_fusible();
        let queued = !matches!(op, Op::Const(_) | Op::Generate(_));
        let id = {
            let mut fe = self.front();
            fe.next_id += 1;
            let id = NodeId(fe.next_id);
            let mut lazy_cost = 0u32;
            let mut tolerance_op = op.base_name();
            let mut tolerance_dtype = dtype;
            for (k, (in_id, _)) in inputs.iter().enumerate() {
                if let Some(n) = fe.nodes.get_mut(in_id) {
                    n.users += 1;
                    lazy_cost = lazy_cost.saturating_add(n.lazy_cost);
                    if k == 0 && op.moves_data() {
                        tolerance_op = n.tolerance_op;
                        tolerance_dtype = n.tolerance_dtype;
                    }
                    // An f64 result computed from values with f32's rounding carries f32's.
                    if dtype == DType::F64 && n.tolerance_dtype == DType::F32 {
                        tolerance_dtype = DType::F32;
                    }
                }
            }
            let lazy_cost = match op {
                Op::Reduce { .. } | Op::Intrinsic(_) | Op::Const(_) => 0,
                _ => lazy_cost.saturating_add(op.recompute_cost()),
            };
            let info = NodeInfo {
                queued,
                lazy_cost,
                reference,
                magnitude,
                tolerance_op,
                tolerance_dtype,
                ..NodeInfo::new(
                    op,
                    inputs.iter().map(|(i, _)| *i).collect(),
                    shape.clone(),
                    dtype,
                    site,
                    NodeState::Pending,
                )
            };
            fe.nodes.insert(id, info);
            Counters::add(&self.counters.ops_recorded, 1);
            if !queued {
                return Arc::new(NodeHandle {
                    id,
                    shape,
                    dtype,
                    konst,
                });
            }
            fe.queue.push(Entry::Compute(id));
            {
                let f = &mut *fe;
                if f.sections.is_empty() {
                    let traces = &f.traces;
                    f.key.push_compute(&f.nodes, id, |s| {
                        traces.is_cold(s as *const _ as *const () as usize as u64)
                    });
                }
            }
            self.after_record(&mut fe, fusible);
            id
        };
        Arc::new(NodeHandle {
            id,
            shape,
            dtype,
            konst,
        })
    }

    /// Records data written by the application; it gets a buffer at once.
    pub fn upload(&self, data: TypedVec, shape: Shape, site: Site) -> Result<Handle> {
        let t0 = crate::profile::now();
        let bytes = data.bytes() as u64;
        let h = self.upload_untimed(data, shape, site);
        if let Some(at) = t0 {
            crate::profile::emit(crate::profile::Event::Write {
                site,
                bytes,
                at,
                ns: at.elapsed().as_nanos() as u64,
            });
        }
        h
    }

    fn upload_untimed(&self, data: TypedVec, shape: Shape, site: Site) -> Result<Handle> {
        let dtype = data.dtype();
        let reference = self
            .compare_on
            .load(std::sync::atomic::Ordering::Relaxed)
            .then(|| Arc::new(data.clone()));
        let buf = self.sched.new_buffer();
        let id = {
            let mut fe = self.front();
            if let Some(e) = self.section_violation(&mut fe, "writing data into the runtime", site)
            {
                return Err(e);
            }
            fe.next_id += 1;
            let id = NodeId(fe.next_id);
            let info = NodeInfo {
                reference,
                ..NodeInfo::new(
                    Op::Source,
                    SmallVec::new(),
                    shape.clone(),
                    dtype,
                    site,
                    NodeState::Stored(buf),
                )
            };
            fe.nodes.insert(id, info);
            // Sent under the lock so no later program can reach the scheduler before the data.
            self.sched.upload(buf, data);
            id
        };
        Ok(Arc::new(NodeHandle {
            id,
            shape,
            dtype,
            konst: None,
        }))
    }
}

/// A constant of `shape` (every element `v`). A complex constant is recorded as its two real
/// parts joined by `BinaryOp::Complex` (kernel parameters are 64-bit words; see `Scalar::C64`).
pub fn constant(v: Scalar, shape: Shape, site: Site) -> Handle {
    let parts = match v {
        Scalar::C64(z) => Some((Scalar::F32(z.re), Scalar::F32(z.im))),
        Scalar::C128(z) => Some((Scalar::F64(z.re), Scalar::F64(z.im))),
        _ => None,
    };
    if let Some((re, im)) = parts {
        let (re, im) = (
            constant(re, Shape::new(), site),
            constant(im, Shape::new(), site),
        );
        let z = Inner::get().record(
            Op::Binary(BinaryOp::Complex),
            &[&re, &im],
            Shape::new(),
            v.dtype(),
            site,
        );
        return if shape.is_empty() {
            z
        } else {
            Inner::get().record(Op::Broadcast, &[&z], shape, v.dtype(), site)
        };
    }
    Inner::get().record(Op::Const(v), &[], shape, v.dtype(), site)
}

/// A random draw from the generator whose state is `state` (registered with a section that is
/// recording, so its replays advance the generator).
pub fn generate_random(
    kind: GenKind,
    shape: Shape,
    dtype: DType,
    site: Site,
    state: &Arc<parking_lot::Mutex<crate::ir::RngState>>,
) -> Handle {
    let counter = match kind {
        GenKind::Random { counter, .. } => counter,
        _ => 0,
    };
    let h = Inner::get().record(Op::Generate(kind), &[], shape, dtype, site);
    Inner::get().section_draw(h.id, state, counter);
    h
}

/// A generator node.
pub fn generate(kind: GenKind, shape: Shape, dtype: DType, site: Site) -> Handle {
    Inner::get().record(Op::Generate(kind), &[], shape, dtype, site)
}

fn unsupported(op: &str, d: DType, site: Site) -> Error {
    let e = Error::new(
        ErrorKind::DType,
        format!("`{op}` does not accept {d} elements"),
    )
    .at(site);
    if d.is_complex() {
        e.hint("complex numbers are not ordered and have no rounding: apply it to `abs()`, `re()` or `im()`")
    } else {
        e.hint("cast the array first, for example `.cast::<f32>()`")
    }
}

pub fn unary(op: UnaryOp, a: &Handle, site: Site) -> Result<Handle> {
    let out = op
        .out_dtype(a.dtype)
        .ok_or_else(|| unsupported(op.name(), a.dtype, site))?;
    if let Some(h) = fold::unary(op, a, out, site) {
        return Ok(h);
    }
    Ok(Inner::get().record(Op::Unary(op), &[a], a.shape.clone(), out, site))
}

pub fn binary(op: BinaryOp, a: &Handle, b: &Handle, site: Site) -> Result<Handle> {
    if a.dtype != b.dtype {
        return Err(Error::new(
            ErrorKind::DType,
            format!(
                "`{}` of {} and {} elements: the element types differ",
                op.name(),
                a.dtype,
                b.dtype
            ),
        )
        .at(site)
        .hint("cast one side with `.cast::<T>()` so both have the same element type"));
    }
    let out = op
        .out_dtype(a.dtype)
        .ok_or_else(|| unsupported(op.name(), a.dtype, site))?;
    let shape = broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| {
        Error::new(
            ErrorKind::Shape,
            format!(
                "`{}` of shapes {} and {}: they do not broadcast",
                op.name(),
                shape_str(&a.shape),
                shape_str(&b.shape)
            ),
        )
        .at(site)
        .hint("trailing dimensions must be equal or 1; reshape or broadcast_to one side")
    })?;
    if let Some(h) = fold::binary(op, a, b, &shape, out, site) {
        return Ok(h);
    }
    Ok(Inner::get().record(Op::Binary(op), &[a, b], shape, out, site))
}

pub fn select(c: &Handle, a: &Handle, b: &Handle, site: Site) -> Result<Handle> {
    if c.dtype != DType::Bool {
        return Err(Error::new(
            ErrorKind::DType,
            format!("select condition must be bool, not {}", c.dtype),
        )
        .at(site));
    }
    if a.dtype != b.dtype {
        return Err(Error::new(
            ErrorKind::DType,
            format!(
                "select of {} and {} elements: the types differ",
                a.dtype, b.dtype
            ),
        )
        .at(site));
    }
    let err = || {
        Error::new(
            ErrorKind::Shape,
            format!(
                "select of shapes {}, {} and {}: they do not broadcast",
                shape_str(&c.shape),
                shape_str(&a.shape),
                shape_str(&b.shape)
            ),
        )
        .at(site)
    };
    let ab = broadcast_shapes(&a.shape, &b.shape).ok_or_else(err)?;
    let shape = broadcast_shapes(&c.shape, &ab).ok_or_else(err)?;
    if let Some(v) = c.konst {
        let chosen = if v == Scalar::Bool(true) { a } else { b };
        if chosen.shape == shape {
            Counters::add(&Inner::get().counters.ops_folded, 1);
            return Ok(chosen.clone());
        }
    }
    Ok(Inner::get().record(Op::Select, &[c, a, b], shape, a.dtype, site))
}

pub fn cast(a: &Handle, to: DType, site: Site) -> Handle {
    if a.dtype == to {
        return a.clone();
    }
    if let Some(v) = a.konst {
        Counters::add(&Inner::get().counters.ops_folded, 1);
        return constant(v.cast(to), a.shape.clone(), site);
    }
    Inner::get().record(Op::Cast(to), &[a], a.shape.clone(), to, site)
}

pub fn reshape(a: &Handle, shape: Shape, site: Site) -> Result<Handle> {
    if numel(&shape) != numel(&a.shape) {
        return Err(Error::new(
            ErrorKind::Shape,
            format!(
                "cannot reshape {} ({} elements) to {} ({} elements)",
                shape_str(&a.shape),
                numel(&a.shape),
                shape_str(&shape),
                numel(&shape)
            ),
        )
        .at(site)
        .hint("the new shape must have the same number of elements"));
    }
    if shape == a.shape {
        return Ok(a.clone());
    }
    if let Some(v) = a.konst {
        return Ok(constant(v, shape, site));
    }
    Ok(Inner::get().record(Op::Reshape, &[a], shape, a.dtype, site))
}

pub fn permute(a: &Handle, perm: &[usize], site: Site) -> Result<Handle> {
    let r = a.shape.len();
    let mut seen = vec![false; r];
    if perm.len() != r
        || perm
            .iter()
            .any(|&p| p >= r || std::mem::replace(&mut seen[p], true))
    {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "{perm:?} is not a permutation of the {r} axes of {}",
                shape_str(&a.shape)
            ),
        )
        .at(site));
    }
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(a.clone());
    }
    let shape: Shape = perm.iter().map(|&p| a.shape[p]).collect();
    if let Some(v) = a.konst {
        return Ok(constant(v, shape, site));
    }
    Ok(Inner::get().record(
        Op::Permute(perm.iter().copied().collect()),
        &[a],
        shape,
        a.dtype,
        site,
    ))
}

/// One axis of a slice: Python semantics (negative indices count from the end; `end: None` is the
/// end in the step's direction). With `index` set, `start` is a single index (NumPy's `a[i]`): the
/// axis keeps that element and is dropped from the result's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceSpec {
    pub start: Option<isize>,
    pub end: Option<isize>,
    pub step: isize,
    pub index: bool,
}

impl SliceSpec {
    /// The whole axis.
    pub const ALL: SliceSpec = SliceSpec {
        start: None,
        end: None,
        step: 1,
        index: false,
    };
    /// Element `i`, dropping the axis (NumPy's `a[i]`).
    pub fn index(i: isize) -> SliceSpec {
        SliceSpec {
            start: Some(i),
            end: None,
            step: 1,
            index: true,
        }
    }
}

/// One axis of a resolved slice: `len` elements from `start`, `step` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisRange {
    pub start: usize,
    pub step: isize,
    pub len: usize,
}

/// The region `spec` selects in an array of `shape`, one range per axis (an indexed axis is one
/// element long), or the error naming what is out of range.
pub fn slice_bounds(shape: &[usize], spec: &[SliceSpec], site: Site) -> Result<Vec<AxisRange>> {
    if spec.len() > shape.len() {
        return Err(Error::new(
            ErrorKind::Argument,
            format!(
                "{} slice ranges for an array of shape {}",
                spec.len(),
                shape_str(shape)
            ),
        )
        .at(site));
    }
    let mut out = Vec::with_capacity(shape.len());
    for (d, &n) in shape.iter().enumerate() {
        let s = spec.get(d).copied().unwrap_or(SliceSpec::ALL);
        let n = n as isize;
        if s.index {
            let i = s.start.unwrap_or(0);
            if i < -n || i >= n {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("index {i} out of range for axis {d} of length {n}"),
                )
                .at(site)
                .hint(format!(
                    "an index runs from -{n} to {} (negative ones count from the end)",
                    n - 1
                )));
            }
            out.push(AxisRange {
                start: (if i < 0 { i + n } else { i }) as usize,
                step: 1,
                len: 1,
            });
            continue;
        }
        if s.step == 0 {
            return Err(
                Error::new(ErrorKind::Argument, format!("slice step 0 on axis {d}"))
                    .at(site)
                    .hint("use a step of 1 or more, or negative to reverse"),
            );
        }
        // Indices run from -n to n (negative ones count from the end); a reversed slice starts at
        // an element (-n to n - 1). Out-of-range indices are errors, as `&v[2..10]` panics.
        let start_hi = if s.step > 0 { n } else { n - 1 };
        let bad_start = s.start.is_some_and(|v| v < -n || v > start_hi);
        let bad_end = s.end.is_some_and(|v| v < -n || v > n);
        if bad_start || bad_end {
            let show = |v: Option<isize>| v.map_or(String::new(), |v| v.to_string());
            let step = if s.step == 1 {
                String::new()
            } else {
                format!(" step {}", s.step)
            };
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "slice {}..{}{step} out of range for axis {d} of length {n}",
                    show(s.start),
                    show(s.end)
                ),
            )
            .at(site)
            .hint(format!(
                "slice bounds run from -{n} to {n} (negative ones count from the end); a slice with \
                 a negative step starts at an element, -{n} to {}",
                n - 1
            )));
        }
        let norm = |v: isize| if v < 0 { v + n } else { v };
        let (b, e) = if s.step > 0 {
            (s.start.map_or(0, norm), s.end.map_or(n, norm))
        } else {
            // An end of n (or -n.. counted from the end) stops before the start: empty.
            (
                s.start.map_or(n - 1, norm),
                s.end.map_or(-1, |v| norm(v).min(n - 1)),
            )
        };
        let len = if s.step > 0 {
            (e - b + s.step - 1).div_euclid(s.step).max(0)
        } else {
            (b - e + (-s.step) - 1).div_euclid(-s.step).max(0)
        };
        out.push(AxisRange {
            start: if len == 0 { 0 } else { b as usize },
            step: s.step,
            len: len as usize,
        });
    }
    Ok(out)
}

pub fn slice(a: &Handle, spec: &[SliceSpec], site: Site) -> Result<Handle> {
    let region = slice_bounds(&a.shape, spec, site)?;
    let start: SmallVec<[isize; 4]> = region.iter().map(|r| r.start as isize).collect();
    let step: SmallVec<[isize; 4]> = region.iter().map(|r| r.step).collect();
    let shape: Shape = region.iter().map(|r| r.len).collect();
    let sliced = Inner::get().record(
        Op::Slice { start, step },
        &[a],
        shape.clone(),
        a.dtype,
        site,
    );
    if !spec.iter().any(|s| s.index) {
        return Ok(sliced);
    }
    // Indexed axes are dropped (a reshape: the sliced elements are stored once and reinterpreted).
    let kept: Shape = (0..shape.len())
        .filter(|&d| !spec.get(d).is_some_and(|s| s.index))
        .map(|d| shape[d])
        .collect();
    reshape(&sliced, kept, site)
}

pub fn broadcast_to(a: &Handle, shape: Shape, site: Site) -> Result<Handle> {
    match broadcast_shapes(&a.shape, &shape) {
        Some(s) if s == shape => {}
        _ => {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "cannot broadcast {} to {}",
                    shape_str(&a.shape),
                    shape_str(&shape)
                ),
            )
            .at(site)
            .hint("each dimension must be equal to the target's or 1"));
        }
    }
    if shape == a.shape {
        return Ok(a.clone());
    }
    if let Some(v) = a.konst {
        return Ok(constant(v, shape, site));
    }
    Ok(Inner::get().record(Op::Broadcast, &[a], shape, a.dtype, site))
}

pub fn tile(a: &Handle, reps: &[usize], site: Site) -> Handle {
    let rank = reps.len().max(a.shape.len());
    let pad = |v: &[usize]| -> Shape {
        std::iter::repeat_n(1, rank - v.len())
            .chain(v.iter().copied())
            .collect()
    };
    let (s, r) = (pad(&a.shape), pad(reps));
    let shape: Shape = s.iter().zip(&r).map(|(a, b)| a * b).collect();
    if let Some(v) = a.konst {
        return constant(v, shape, site);
    }
    Inner::get().record(Op::Tile, &[a], shape, a.dtype, site)
}

pub fn reduce(op: ReduceOp, a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    if op == ReduceOp::Sum && a.dtype.is_complex() {
        return complex_sum(a, axes, site);
    }
    if op == ReduceOp::Prod && a.dtype.is_complex() {
        return super::complex_product::complex_product(a, axes, site);
    }
    if op == ReduceOp::Prod && a.dtype.is_float() {
        return float_product(a, axes, site);
    }
    if let [axis] = axes
        && op == ReduceOp::Sum
        && a.dtype.is_float()
        && a.konst.is_none()
        && a.shape.len() > 1
        && (2..=SHORT_SUM).contains(&a.shape.get(*axis).copied().unwrap_or(0))
    {
        return short_sum(a, *axis, site);
    }
    reduce_node(op, a, axes, site)
}

/// A complex sum as the complex number of the sums of its real and imaginary parts: the same
/// value (complex addition is per component) through the real reductions every executor has,
/// fused into one pass over the data.
fn complex_sum(a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    let re = reduce(ReduceOp::Sum, &unary(UnaryOp::Re, a, site)?, axes, site)?;
    let im = reduce(ReduceOp::Sum, &unary(UnaryOp::Im, a, site)?, axes, site)?;
    binary(BinaryOp::Complex, &re, &im, site)
}

/// Longest axis whose float sum is recorded as element-wise adds of its slices (`short_sum`).
pub const SHORT_SUM: usize = 4;

/// A float sum along a short axis (the coordinates of points, say) as element-wise adds of the
/// axis's slices: it fuses with its producers and consumers, where a reduction would end the
/// kernel (k-means' distances then fuse into the `argmin` that reads them). The same value as the
/// reduction: added in order from `+0.0` (the final `+ 0.0` turns a sum of `-0.0`s into `+0.0`;
/// it changes nothing else), f32 accumulated in f64 where the executor has f64 (the CPU, OpenCL
/// with fp64), in f32 where its sums are f32 (wgpu). Two f32 terms are added in f32 everywhere:
/// the f64 sum rounded to f32 is the f32 sum, bit for bit (double rounding is harmless for one
/// addition when the wide format has at least 2p + 2 bits, 53 >= 2 * 24 + 2; Figueroa 1995), and
/// the conversions would cost k-means' distance kernel half its speed.
fn short_sum(a: &Handle, axis: usize, site: Site) -> Result<Handle> {
    let wide = a.shape[axis] > 2 && Inner::get().sched.fp64_everywhere();
    let acc = if a.dtype == DType::F32 && wide {
        DType::F64
    } else {
        a.dtype
    };
    // Axes after `axis` take their whole extent by default.
    let part = |i: usize| -> Result<Handle> {
        let mut spec = vec![SliceSpec::ALL; axis];
        spec.push(SliceSpec::index(i as isize));
        Ok(cast(&slice(a, &spec, site)?, acc, site))
    };
    let mut sum = part(0)?;
    for i in 1..a.shape[axis] {
        sum = binary(BinaryOp::Add, &sum, &part(i)?, site)?;
    }
    let zero = constant(Scalar::F64(0.0).cast(acc), Shape::new(), site);
    let sum = binary(BinaryOp::Add, &sum, &zero, site)?;
    Ok(cast(&sum, a.dtype, site))
}

/// The product of floats, exact where a factor is zero: a product of many factors overflows to
/// infinity long before the end, so a blocked or parallel product that met the zero in one block
/// and the overflow in another would give `0 * inf = NaN` where the sequential product (and the
/// mathematics) give 0. Recorded as the product of the non-zero factors and two flags that fuse
/// into the same pass: with a zero factor the result is 0, or NaN when a factor is NaN or
/// infinite (as IEEE arithmetic gives in any order).
fn float_product(a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    let d = a.dtype;
    let scalar = |v: f64| constant(Scalar::F64(v).cast(d), Shape::new(), site);
    let zero = binary(BinaryOp::Eq, a, &scalar(0.0), site)?;
    let nonzero = select(&zero, &scalar(1.0), a, site)?;
    let product = reduce_node(ReduceOp::Prod, &nonzero, axes, site)?;
    let bad = binary(
        BinaryOp::Or,
        &unary(UnaryOp::IsNan, a, site)?,
        &unary(UnaryOp::IsInf, a, site)?,
        site,
    )?;
    let any_zero = reduce_node(ReduceOp::Any, &zero, axes, site)?;
    let any_bad = reduce_node(ReduceOp::Any, &bad, axes, site)?;
    let zero_result = select(&any_bad, &scalar(f64::NAN), &scalar(0.0), site)?;
    select(&any_zero, &zero_result, &product, site)
}

/// `axes` sorted and deduplicated, each checked against `a`'s rank.
pub(super) fn reduced_axes(a: &Handle, axes: &[usize], site: Site) -> Result<SmallVec<[usize; 4]>> {
    let mut axes: SmallVec<[usize; 4]> = axes.iter().copied().collect();
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
    Ok(axes)
}

fn reduce_node(op: ReduceOp, a: &Handle, axes: &[usize], site: Site) -> Result<Handle> {
    let out = op
        .out_dtype(a.dtype)
        .ok_or_else(|| unsupported(op.name(), a.dtype, site))?;
    let axes = reduced_axes(a, axes, site)?;
    let n: usize = axes.iter().map(|&x| a.shape[x]).product();
    if n == 0 && !op.has_identity() {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("`{}` of zero elements has no value", op.name()),
        )
        .at(site)
        .hint("check the array is not empty before taking its max, min, argmax or argmin"));
    }
    let shape: Shape = (0..a.shape.len())
        .filter(|x| !axes.contains(x))
        .map(|x| a.shape[x])
        .collect();
    Ok(Inner::get().record(Op::Reduce { op, axes }, &[a], shape, out, site))
}

/// Records an intrinsic call: its definition in the registry (`intrinsics/`) checks the inputs
/// at `site` and gives the output's shape and type.
pub fn intrinsic(op: Intrinsic, inputs: &[&Handle], site: Site) -> Result<Handle> {
    if let Some(h) = inputs
        .iter()
        .find(|h| h.dtype.is_complex() && !op.def().accepts_complex())
    {
        return Err(Error::new(
            ErrorKind::DType,
            format!("`{}` does not accept {} elements yet", op.name(), h.dtype),
        )
        .at(site)
        .hint("work on the real and imaginary parts (`re()`, `im()`) and join them with `Array::complex`"));
    }
    let operands: Vec<crate::intrinsics::Operand> = inputs
        .iter()
        .map(|h| crate::intrinsics::Operand {
            shape: &h.shape,
            dtype: h.dtype,
        })
        .collect();
    let outs = op.def().check(&op, &operands, site)?;
    let out = crate::intrinsics::single(&op, outs, site)?;
    Ok(Inner::get().record(Op::Intrinsic(op), inputs, out.shape, out.dtype, site))
}

/// Records `a @ b` (NumPy's `matmul` rules, checked by `intrinsics/matmul/`). An operand that is
/// a pending transpose of the last two axes of another array is read from that array with the
/// call's transpose flag set: no copy of the transpose is made. A small result over a long inner
/// extent is recorded as a fused reduction instead (`small_product.rs`).
pub fn matmul(a: &Handle, b: &Handle, site: Site) -> Result<Handle> {
    matmul_nodes(under_transpose(a), under_transpose(b), site, || {
        Ok((a.clone(), b.clone()))
    })
}

/// Records the product of `a` and the transpose of the last two axes of `b` (stored `[.., n, k]`),
/// read without a copy: `inner`'s contraction along both last axes.
pub fn matmul_transposed_b(a: &Handle, b: &Handle, site: Site) -> Result<Handle> {
    let bt = (b.id, b.shape.clone(), b.dtype, b.shape.len() >= 2);
    matmul_nodes(under_transpose(a), bt, site, || {
        let r = b.shape.len();
        let logical_b = if r >= 2 {
            let mut p: Vec<usize> = (0..r).collect();
            p.swap(r - 1, r - 2);
            permute(b, &p, site)?
        } else {
            b.clone()
        };
        Ok((a.clone(), logical_b))
    })
}

/// A matmul operand: the node read, its shape, element type, and whether it is read transposed.
type MatmulOperand = (NodeId, Shape, DType, bool);

/// Checks `a @ b` and records it: as the intrinsic, or, for a small result over a long inner
/// extent, as a reduction of the operands as the user sees them (`logical`, built only then).
fn matmul_nodes(
    a: MatmulOperand,
    b: MatmulOperand,
    site: Site,
    logical: impl FnOnce() -> Result<(Handle, Handle)>,
) -> Result<Handle> {
    let op = Intrinsic::Matmul {
        trans_a: a.3,
        trans_b: b.3,
    };
    let operands = [
        crate::intrinsics::Operand {
            shape: &a.1,
            dtype: a.2,
        },
        crate::intrinsics::Operand {
            shape: &b.1,
            dtype: b.2,
        },
    ];
    let outs = op.def().check(&op, &operands, site)?;
    let out = crate::intrinsics::single(&op, outs, site)?;
    if let Ok(g) = crate::intrinsics::matmul::Geometry::of(&a.1, &b.1, a.3, b.3)
        && super::small_product::wanted(&g)
    {
        let (la, lb) = logical()?;
        return super::small_product::record(&la, &lb, &g, site);
    }
    Ok(Inner::get().record_nodes(
        Op::Intrinsic(op),
        &[(a.0, &a.1), (b.0, &b.1)],
        out.shape,
        out.dtype,
        site,
    ))
}

/// The node a matmul reads for operand `h`: for a pending permute that only swaps the last two
/// axes, its input, read transposed (a stored permute, or any other node, is read as it is).
fn under_transpose(h: &Handle) -> MatmulOperand {
    let fe = Inner::get().front();
    if let Some(n) = fe.nodes.get(&h.id)
        && n.is_pending()
        && let Op::Permute(p) = &n.op
    {
        let r = p.len();
        let swaps_last_two =
            r >= 2 && p[r - 1] == r - 2 && p[r - 2] == r - 1 && (0..r - 2).all(|i| p[i] == i);
        if swaps_last_two && let Some(src) = fe.nodes.get(&n.inputs[0]) {
            return (n.inputs[0], src.shape.clone(), h.dtype, true);
        }
    }
    (h.id, h.shape.clone(), h.dtype, false)
}

pub fn gather(a: &Handle, idx: &Handle, axis: usize, site: Site) -> Result<Handle> {
    intrinsic(Intrinsic::Gather { axis }, &[a, idx], site)
}

/// Joins `parts` along `axis`: a few parts fuse (`reindex.rs`), more run the intrinsic.
pub fn concat(parts: &[&Handle], axis: usize, site: Site) -> Result<Handle> {
    super::reindex::concat(parts, axis, site)
}
