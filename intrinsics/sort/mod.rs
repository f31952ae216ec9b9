//! Sorting and what builds on it: six intrinsics sharing one order and one folder. [`Sort`] and
//! [`Argsort`] (stable, along an axis, ascending or descending), [`TakeAlongAxis`] (NumPy's
//! `take_along_axis`, for `topk` and argsort results), [`SearchSorted`] (insertion points into a
//! sorted 1-D array), [`UniqueRuns`] (the runs of equal elements of a sorted 1-D array, for
//! `unique`) and [`Topk`] (the positions of each row's `k` largest, by selection): their checks,
//! references, conditioning and costs here, their kernels in `cpu.rs` (rayon: parallel LSD radix
//! sorts, comparison sorts for short rows, `select_nth_unstable` for topk), `opencl.rs` and
//! `wgsl.rs` (LSD radix sorts of 8-bit digits as multi-pass plans with scratch buffers, a bitonic
//! sort in one work-group for rows of up to [`SMALL`] elements) and `select.rs` (topk's radix
//! select, both GPU targets). `Array::topk` takes [`Topk`] for rows longer than [`SMALL`] with
//! `k` up to [`TOPK_MAX`], a descending argsort's first `k` otherwise: the same result.
//!
//! **The order** (every executor and the reference agree bit for bit): numbers ascend; NaN comes
//! after everything whatever its sign bit or payload, and all NaNs are equal; -0.0 equals +0.0.
//! Equal elements keep their input order (the sorts are stable), also descending (which reverses
//! the order, so NaN comes first, as `torch.sort(descending=True)`). Kernels compare canonical
//! keys: the element's bits mapped to an unsigned integer whose order is this order (floats: NaN
//! to the largest key, -0.0 to +0.0's key, negative numbers' bits inverted, positive numbers' sign
//! bit set; i32: the sign bit flipped), inverted for a descending sort. The reference compares
//! values with [`canonical_cmp`] instead, so it does not share the kernels' mapping.

mod cpu;
mod opencl;
mod plan;
mod select;
mod wgsl;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, moved_by, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, Intrinsic, Shape, Site, TypedVec};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;
use std::cmp::Ordering;

/// Rows of at most this many elements sort in one GPU work-group (a bitonic network over
/// (key, position) pairs in local memory); longer rows take the radix passes.
pub const SMALL: usize = 2048;

pub use super::Rows;

/// The order every executor sorts by: NaN after every number and equal to every NaN, -0.0 equal
/// to +0.0 (values of any element type, exactly as `f64`).
pub fn canonical_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("numbers compare"),
    }
}

/// Sort's definition (output: the sorted values).
pub struct Sort;
/// Argsort's definition (output: `u32` positions along the axis).
pub struct Argsort;
/// take_along_axis's definition.
pub struct TakeAlongAxis;
/// searchsorted's definition.
pub struct SearchSorted;
/// unique_runs' definition.
pub struct UniqueRuns;
/// topk's definition (output: the `u32` positions of each row's `k` largest, largest first).
pub struct Topk;

/// The most elements [`Topk`] keeps per row on a GPU: its candidates sort in one work-group.
pub const TOPK_MAX: usize = SMALL;

fn sort_op(op: &Intrinsic) -> (usize, bool) {
    match op {
        Intrinsic::Sort { axis, descending } | Intrinsic::Argsort { axis, descending } => {
            (*axis, *descending)
        }
        _ => unreachable!("a sort's definition called for {op:?}"),
    }
}

fn err(kind: ErrorKind, msg: String, site: Site) -> Error {
    Error::new(kind, msg).at(site)
}

/// The element types the sorts order: f32, f64, i32, u32.
fn check_sortable(what: &str, d: DType, site: Site) -> Result<()> {
    if d.is_numeric() {
        return Ok(());
    }
    Err(err(
        ErrorKind::DType,
        format!("{what} of {d} elements: sorting takes f32, f64, i32 or u32"),
        site,
    ))
}

fn check_axis(what: &str, shape: &[usize], axis: usize, site: Site) -> Result<()> {
    if axis < shape.len() {
        return Ok(());
    }
    Err(err(
        ErrorKind::Argument,
        format!("{what} axis {axis} is out of range for shape {shape:?}"),
        site,
    ))
}

/// Positions along one axis are `u32`.
fn check_u32_extent(what: &str, len: usize, site: Site) -> Result<()> {
    if len <= u32::MAX as usize {
        return Ok(());
    }
    Err(err(
        ErrorKind::Shape,
        format!("{what} of {len} elements along one axis: positions are u32"),
        site,
    ))
}

/// Per output element of a sort along `axis`, the input element it takes: each row's positions
/// sorted stably by [`canonical_cmp`] (reversed when descending).
fn reference_order(v: &TypedVec, shape: &[usize], axis: usize, descending: bool) -> Vec<usize> {
    let r = Rows::of(shape, axis);
    let mut src = vec![0usize; r.numel()];
    let mut js: Vec<usize> = Vec::with_capacity(r.dim);
    for row in 0..r.count() {
        js.clear();
        js.extend(0..r.dim);
        js.sort_by(|&a, &b| {
            let o = canonical_cmp(v.get(r.at(row, a)).as_f64(), v.get(r.at(row, b)).as_f64());
            if descending { o.reverse() } else { o }
        });
        for (j, &from) in js.iter().enumerate() {
            src[r.at(row, j)] = from;
        }
    }
    src
}

/// `out[i] = v[row of i, src[i]]`: elements moved bit for bit.
fn pick_along(v: &TypedVec, shape: &[usize], axis: usize, src: &[usize]) -> TypedVec {
    let r = Rows::of(shape, axis);
    let from = |i: usize| {
        let (p, q) = (i / (r.dim * r.post), i % r.post);
        (p * r.dim + src[i]) * r.post + q
    };
    macro_rules! go {
        ($x:expr, $k:ident) => {
            TypedVec::$k((0..src.len()).map(|i| $x[from(i)]).collect())
        };
    }
    match v {
        TypedVec::F32(x) => go!(x, F32),
        TypedVec::F64(x) => go!(x, F64),
        TypedVec::I32(x) => go!(x, I32),
        TypedVec::U32(x) => go!(x, U32),
        TypedVec::Bool(x) => go!(x, Bool),
        TypedVec::C64(x) => go!(x, C64),
        TypedVec::C128(x) => go!(x, C128),
    }
}

/// Key bytes of a sort of `d` (the number of 8-bit radix passes).
fn key_bytes(d: DType) -> u64 {
    if d == DType::F64 { 8 } else { 4 }
}

impl IntrinsicDef for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let (axis, descending) = sort_op(op);
        let order = if descending { "_descending" } else { "" };
        Some(format!("{}.sort_axis{order}({axis})", args[0]))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (axis, _) = sort_op(op);
        let a = inputs[0];
        check_sortable("sort", a.dtype, site)?;
        check_axis("sort", a.shape, axis, site)?;
        Ok(vec![Output {
            shape: a.shape.into(),
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (axis, descending) = sort_op(op);
        w.extend([axis as u64, descending as u64]);
    }

    /// Each row's positions sorted with a stable comparison sort by [`canonical_cmp`].
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (axis, descending) = sort_op(op);
        let (v, shape) = inputs[0];
        let src = reference_order(v, shape, axis, descending);
        Ok(vec![pick_along(v, shape, axis, &src)])
    }

    /// The data's magnitudes move with the data (in the order the reference values sort).
    fn magnitudes(
        &self,
        op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        _result: &TypedVec,
    ) -> Vec<f64> {
        let (axis, descending) = sort_op(op);
        let src = reference_order(inputs[0].value, inputs[0].shape, axis, descending);
        let m = TypedVec::F64(inputs[0].magnitude.to_vec());
        match pick_along(&m, inputs[0].shape, axis, &src) {
            TypedVec::F64(m) => m,
            _ => unreachable!("magnitudes are f64"),
        }
    }

    fn moves_data(&self) -> bool {
        true
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.out_shape);
        let passes = key_bytes(call.dtype);
        Cost {
            flops: 8 * n * passes,
            bytes: 3 * n * call.dtype.size() as u64 * passes,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let (axis, descending) = sort_op(&call.op);
        cpu::sort(
            Rows::of(&call.in_shapes[0], axis),
            descending,
            inputs[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, descending) = sort_op(&call.op);
        opencl::render_sort(call, axis, descending, false, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, descending) = sort_op(&call.op);
        wgsl::render_sort(call, axis, descending, false)
    }
}

impl IntrinsicDef for Argsort {
    fn name(&self) -> &'static str {
        "argsort"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let (axis, descending) = sort_op(op);
        let order = if descending { "_descending" } else { "" };
        Some(format!("{}.argsort_axis{order}({axis})", args[0]))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (axis, _) = sort_op(op);
        let a = inputs[0];
        check_sortable("argsort", a.dtype, site)?;
        check_axis("argsort", a.shape, axis, site)?;
        check_u32_extent("argsort", a.shape[axis], site)?;
        Ok(vec![Output {
            shape: a.shape.into(),
            dtype: DType::U32,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (axis, descending) = sort_op(op);
        w.extend([axis as u64, descending as u64]);
    }

    /// The positions of [`Sort`]'s reference order.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (axis, descending) = sort_op(op);
        let (v, shape) = inputs[0];
        let src = reference_order(v, shape, axis, descending);
        Ok(vec![TypedVec::U32(src.iter().map(|&j| j as u32).collect())])
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.out_shape);
        let d = call.in_dtypes[0];
        let passes = key_bytes(d);
        Cost {
            flops: 8 * n * passes,
            bytes: 3 * n * (d.size() as u64 + 4) * passes,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let (axis, descending) = sort_op(&call.op);
        cpu::argsort(
            Rows::of(&call.in_shapes[0], axis),
            descending,
            inputs[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, descending) = sort_op(&call.op);
        opencl::render_sort(call, axis, descending, true, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, descending) = sort_op(&call.op);
        wgsl::render_sort(call, axis, descending, true)
    }
}

fn topk_op(op: &Intrinsic) -> (usize, usize) {
    match op {
        Intrinsic::Topk { axis, k } => (*axis, *k),
        _ => unreachable!("topk's definition called for {op:?}"),
    }
}

impl IntrinsicDef for Topk {
    fn name(&self) -> &'static str {
        "topk"
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (axis, k) = topk_op(op);
        let a = inputs[0];
        check_sortable("topk", a.dtype, site)?;
        check_axis("topk", a.shape, axis, site)?;
        check_u32_extent("topk", a.shape[axis], site)?;
        if k > a.shape[axis] {
            return Err(err(
                ErrorKind::Argument,
                format!("topk of {k} along axis {axis} of length {}", a.shape[axis]),
                site,
            ));
        }
        let mut shape: Shape = a.shape.into();
        shape[axis] = k;
        Ok(vec![Output {
            shape,
            dtype: DType::U32,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (axis, k) = topk_op(op);
        w.extend([axis as u64, k as u64]);
    }

    /// The first `k` positions of each row of [`Argsort`]'s descending reference order.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (axis, k) = topk_op(op);
        let (v, shape) = inputs[0];
        let src = reference_order(v, shape, axis, true);
        let r = Rows::of(shape, axis);
        let o = Rows { dim: k, ..r };
        let mut out = vec![0u32; o.numel()];
        for row in 0..r.count() {
            for j in 0..k {
                out[o.at(row, j)] = src[r.at(row, j)] as u32;
            }
        }
        Ok(vec![TypedVec::U32(out)])
    }

    /// A radix select: a read of the keys per digit, two more to gather the candidates.
    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.in_shapes[0]);
        let d = call.in_dtypes[0];
        let passes = key_bytes(d) + 2;
        Cost {
            flops: 4 * n * passes,
            bytes: n * d.size() as u64 * passes + numel(&call.out_shape) * 4,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let (axis, k) = topk_op(&call.op);
        cpu::topk(
            Rows::of(&call.in_shapes[0], axis),
            k,
            inputs[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, k) = topk_op(&call.op);
        select::render_opencl(call, Rows::of(&call.in_shapes[0], axis), k, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (axis, k) = topk_op(&call.op);
        select::render_wgsl(call, Rows::of(&call.in_shapes[0], axis), k)
    }
}

fn take_axis(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::TakeAlongAxis { axis } => *axis,
        _ => unreachable!("take_along_axis's definition called for {op:?}"),
    }
}

/// Data `[pre, dim, post]` and indices / output `[pre, m, post]` of a take along `axis`.
#[derive(Debug, Clone, Copy)]
pub struct Take {
    pub pre: usize,
    pub dim: usize,
    pub m: usize,
    pub post: usize,
}

impl Take {
    fn of(data: &[usize], idx: &[usize], axis: usize) -> Take {
        Take {
            pre: data[..axis].iter().product(),
            dim: data[axis],
            m: idx[axis],
            post: data[axis + 1..].iter().product(),
        }
    }
    /// The data element output element `i` reads, given its index value `k`.
    pub fn source(&self, i: usize, k: usize) -> usize {
        let (p, q) = (i / (self.m * self.post).max(1), i % self.post.max(1));
        (p * self.dim + k) * self.post + q
    }
}

impl IntrinsicDef for TakeAlongAxis {
    fn name(&self) -> &'static str {
        "take_along_axis"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        Some(format!(
            "{}.take_along_axis(&{}, {})",
            args[0],
            args[1],
            take_axis(op)
        ))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let axis = take_axis(op);
        let (a, idx) = (inputs[0], inputs[1]);
        check_axis("take_along_axis", a.shape, axis, site)?;
        if !idx.dtype.is_int() {
            return Err(err(
                ErrorKind::DType,
                format!(
                    "take_along_axis indices must be i32 or u32, not {}",
                    idx.dtype
                ),
                site,
            ));
        }
        let fits = idx.shape.len() == a.shape.len()
            && (0..a.shape.len()).all(|d| d == axis || idx.shape[d] == a.shape[d]);
        if !fits {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "take_along_axis of data {:?} with indices {:?} along axis {axis}",
                    a.shape, idx.shape
                ),
                site,
            )
            .hint("the indices have the data's rank and its extents except along the axis"));
        }
        Ok(vec![Output {
            shape: idx.shape.into(),
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(take_axis(op) as u64);
    }

    /// Every index is checked first (one out of range is an error), then each output element
    /// reads its source.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let axis = take_axis(op);
        let (v, shape) = inputs[0];
        let (idx, ishape) = inputs[1];
        let t = Take::of(shape, ishape, axis);
        let mut src = Vec::with_capacity(idx.len());
        for i in 0..idx.len() {
            let k = idx.get(i).as_f64();
            if k < 0.0 || k as usize >= t.dim {
                return Err(format!(
                    "take_along_axis index {k} is out of bounds for axis {axis} of length {}",
                    t.dim
                ));
            }
            src.push(t.source(i, k as usize));
        }
        macro_rules! go {
            ($x:expr, $k:ident) => {
                TypedVec::$k(src.iter().map(|&s| $x[s]).collect())
            };
        }
        Ok(vec![match v {
            TypedVec::F32(x) => go!(x, F32),
            TypedVec::F64(x) => go!(x, F64),
            TypedVec::I32(x) => go!(x, I32),
            TypedVec::U32(x) => go!(x, U32),
            TypedVec::Bool(x) => go!(x, Bool),
            TypedVec::C64(x) => go!(x, C64),
            TypedVec::C128(x) => go!(x, C128),
        }])
    }

    /// The data's magnitudes move with the data (the indices are exact).
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let m = TypedVec::F64(inputs[0].magnitude.to_vec());
        let parts = [(&m, inputs[0].shape), (inputs[1].value, inputs[1].shape)];
        moved_by(op, out, &parts, result)
    }

    fn moves_data(&self) -> bool {
        true
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let out = numel(&call.out_shape);
        Cost {
            flops: 0,
            bytes: out * (2 * call.dtype.size() as u64 + 4),
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let axis = take_axis(&call.op);
        let t = Take::of(&call.in_shapes[0], &call.in_shapes[1], axis);
        cpu::take_along_axis(t, axis, inputs[0], inputs[1], &mut outputs[0])
    }

    fn opencl(
        &self,
        call: &IntrinsicCall,
        _t: Target,
    ) -> std::result::Result<GpuPlan, Unsupported> {
        let axis = take_axis(&call.op);
        let t = Take::of(&call.in_shapes[0], &call.in_shapes[1], axis);
        opencl::render_take(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let axis = take_axis(&call.op);
        let t = Take::of(&call.in_shapes[0], &call.in_shapes[1], axis);
        wgsl::render_take(call, t)
    }
}

fn side_of(op: &Intrinsic) -> bool {
    match op {
        Intrinsic::SearchSorted { right } => *right,
        _ => unreachable!("searchsorted's definition called for {op:?}"),
    }
}

/// The insertion point of `v` in `a` (sorted by `cmp`): the binary search every executor runs,
/// midpoint for midpoint, so an unsorted `a` gives the same (meaningless) answer everywhere.
/// `right`: after the elements equal to `v`.
pub fn search<T: Copy>(a: &[T], v: T, right: bool, cmp: impl Fn(T, T) -> Ordering) -> usize {
    let (mut lo, mut hi) = (0usize, a.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let go_right = match cmp(a[mid], v) {
            Ordering::Less => true,
            Ordering::Equal => right,
            Ordering::Greater => false,
        };
        if go_right {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl IntrinsicDef for SearchSorted {
    fn name(&self) -> &'static str {
        "searchsorted"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let side = if side_of(op) { "Right" } else { "Left" };
        Some(format!(
            "{}.searchsorted(&{}, arrayflow::Side::{side})",
            args[0], args[1]
        ))
    }

    fn check(&self, _op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (a, v) = (inputs[0], inputs[1]);
        check_sortable("searchsorted", a.dtype, site)?;
        if a.shape.len() != 1 {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "searchsorted in an array of shape {:?}: it takes a sorted 1-D array",
                    a.shape
                ),
                site,
            ));
        }
        if v.dtype != a.dtype {
            return Err(err(
                ErrorKind::DType,
                format!(
                    "searchsorted of {} values in a {} array: the types must match",
                    v.dtype, a.dtype
                ),
                site,
            ));
        }
        check_u32_extent("searchsorted", a.shape[0], site)?;
        Ok(vec![Output {
            shape: v.shape.into(),
            dtype: DType::U32,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(side_of(op) as u64);
    }

    /// [`search`] with [`canonical_cmp`] on the values as `f64`.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let right = side_of(op);
        let a: Vec<f64> = (0..inputs[0].0.len())
            .map(|i| inputs[0].0.get(i).as_f64())
            .collect();
        let v = inputs[1].0;
        Ok(vec![TypedVec::U32(
            (0..v.len())
                .map(|i| search(&a, v.get(i).as_f64(), right, canonical_cmp) as u32)
                .collect(),
        )])
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let (n, nv) = (numel(&call.in_shapes[0]), numel(&call.in_shapes[1]));
        let steps = 64 - n.leading_zeros() as u64;
        let el = call.in_dtypes[0].size() as u64;
        Cost {
            flops: 4 * nv * steps,
            bytes: nv * (el * (1 + steps) + 4),
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::searchsorted(side_of(&call.op), inputs[0], inputs[1], &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render_search(call, side_of(&call.op), t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render_search(call, side_of(&call.op))
    }
}

impl IntrinsicDef for UniqueRuns {
    fn name(&self) -> &'static str {
        "unique_runs"
    }

    /// Output `u32 [n + 2]`: the padded-output-and-count design of the registry's rules in one
    /// buffer (the front end records one output): element 0 is the count `r`.
    fn check(&self, _op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let a = inputs[0];
        check_sortable("unique", a.dtype, site)?;
        if a.shape.len() != 1 {
            return Err(err(
                ErrorKind::Shape,
                format!("unique_runs of shape {:?}: it takes a 1-D array", a.shape),
                site,
            ));
        }
        check_u32_extent("unique", a.shape[0] + 2, site)?;
        Ok(vec![Output {
            shape: Shape::from_slice(&[a.shape[0] + 2]),
            dtype: DType::U32,
        }])
    }

    /// Element `i` starts a run when it is the first or differs from element `i - 1` by
    /// [`canonical_cmp`]; the padding is zeros.
    fn reference(
        &self,
        _op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let v = inputs[0].0;
        let n = v.len();
        let starts: Vec<u32> = (0..n)
            .filter(|&i| i == 0 || canonical_cmp(v.get(i).as_f64(), v.get(i - 1).as_f64()).is_ne())
            .map(|i| i as u32)
            .collect();
        let mut out = vec![0u32; n + 2];
        out[0] = starts.len() as u32;
        out[1..=starts.len()].copy_from_slice(&starts);
        out[starts.len() + 1] = n as u32;
        Ok(vec![TypedVec::U32(out)])
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.in_shapes[0]);
        Cost {
            flops: n,
            bytes: 2 * n * call.in_dtypes[0].size() as u64 + 4 * (n + 2),
        }
    }

    fn cpu(
        &self,
        _call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::unique_runs(inputs[0], &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render_runs(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render_runs(call)
    }
}
