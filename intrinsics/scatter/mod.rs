//! Scatter, the inverse of gather, in three forms: `scatter` (replace), `scatter_add`
//! (`index_add`: duplicates accumulate) and NumPy's `put_along_axis` (replace, one index per
//! value). Their checks, reference, conditioning and cost, and their kernels (`cpu.rs`: checked
//! loops, parallel over independent rows or over fixed chunks of sources; `opencl.rs`, `wgsl.rs`:
//! a copy pass, then a claim pass and a write pass for the replacing forms; for `scatter_add`
//! privatised sums into few targets or atomic adds into many, see `AddPlan`).
//!
//! Every form reads data, indices (i32 or u32) and values, and writes a copy of data in which
//! each value lands at its index. A source element is `(p, j, q)`: `p` runs over the axes of data
//! before `axis`, `q` over those after it and `j` over the indices (flattened) for `scatter`, or
//! over the indices' own `axis` for `put_along_axis`. Its index is `idx[j]` (`scatter`) or the
//! index element at the source's own position (`put_along_axis`); it lands on data element
//! `(p, idx, q)`.
//!
//! Duplicates: the replacing forms keep the value of the **last** source in source order (the
//! largest `j`, or the last in the indices' row-major order) on every executor: the GPU kernels
//! first compute, per target, the largest source position that names it (an atomic max) and
//! then let only that source write. `scatter_add` adds every duplicate: integers wrap (exact on
//! every executor); floats accumulate in f64 on the CPU, in a fixed order (a long row's fixed
//! chunks of sources first add in the element type), and in the element type on a GPU: into
//! at most `PRIVATE_TARGETS` targets in a fixed order (per thread, then trees over a
//! work-group and over the work-groups: the same bits on every run), into more in an unspecified
//! order (local or global atomic adds). So float sums with duplicates may differ in the last
//! bits between executors (and between runs on a GPU with many targets). An index out of range (negative, or past the axis) fails the program, as
//! gather's does (no negative indices from the end); with index traps on it is an index trap
//! naming the first bad position in the flattened indices (the device kernels keep the lowest bad
//! position in the fault buffer's second word, `debug::trap::device`).

mod cpu;
mod opencl;
mod wgsl;

pub(crate) use opencl::head as opencl_head;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, moved_by, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, Intrinsic, Scalar, Shape, Site, TypedVec, collect};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Which form of scatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `scatter`: replace, indices shared along the other axes.
    Replace,
    /// `scatter_add`: accumulate, indices shared along the other axes.
    Add,
    /// `put_along_axis`: replace, one index per value.
    Along,
}

/// The definition of one form (the registry holds one per form).
pub struct ScatterDef(pub Kind);

/// `(form, axis)` of an op this folder defines.
pub(crate) fn parts(op: &Intrinsic) -> (Kind, usize) {
    match op {
        Intrinsic::Scatter { axis } => (Kind::Replace, *axis),
        Intrinsic::ScatterAdd { axis } => (Kind::Add, *axis),
        Intrinsic::PutAlongAxis { axis } => (Kind::Along, *axis),
        _ => unreachable!("scatter's definition called for {op:?}"),
    }
}

fn name_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Replace => "scatter",
        Kind::Add => "scatter_add",
        Kind::Along => "put_along_axis",
    }
}

/// Where each source element of a call lands (see the module comment).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geom {
    /// Elements of data before `axis` (rows).
    pub pre: usize,
    /// Data's extent along `axis` (the range of a valid index).
    pub dim: usize,
    /// Elements of data after `axis`.
    pub post: usize,
    /// Sources per row and column: the indices' length (scatter) or their extent along `axis`.
    pub ni: usize,
    /// Index elements.
    pub n_idx: usize,
    /// Whether each source has its own index (`put_along_axis`).
    pub along: bool,
}

impl Geom {
    pub fn new(data: &[usize], idx: &[usize], axis: usize, kind: Kind) -> Geom {
        let along = kind == Kind::Along;
        let n_idx = idx.iter().product();
        Geom {
            pre: data[..axis].iter().product(),
            dim: data[axis],
            post: data[axis + 1..].iter().product(),
            ni: if along { idx[axis] } else { n_idx },
            n_idx,
            along,
        }
    }
    pub fn of(call: &IntrinsicCall) -> Geom {
        let (kind, axis) = parts(&call.op);
        Geom::new(&call.in_shapes[0], &call.in_shapes[1], axis, kind)
    }
    /// Source (value) elements.
    pub fn n_src(&self) -> usize {
        self.pre * self.ni * self.post
    }
    /// Output (data) elements.
    pub fn n_out(&self) -> usize {
        self.pre * self.dim * self.post
    }
    /// The index element source `s` uses.
    pub fn index_pos(&self, s: usize) -> usize {
        if self.along {
            s
        } else {
            (s / self.post.max(1)) % self.ni.max(1)
        }
    }
    /// The output element source `s` lands on with index `i` (in range).
    pub fn target(&self, s: usize, i: usize) -> usize {
        let post = self.post.max(1);
        let p = s / (self.ni * post).max(1);
        (p * self.dim + i) * post + s % post
    }
}

/// Most output elements (targets) a `scatter_add` keeps per thread in registers on a GPU.
pub(crate) const PRIVATE_TARGETS: usize = 32;
/// Local (workgroup) memory the privatised `scatter_add` passes use, in 4-byte words (16 KiB,
/// WebGPU's default limit).
pub(crate) const LOCAL_WORDS: usize = 4096;
/// Most copies of the targets one work-group keeps in local memory (lanes use copy `lane % C`,
/// so neighbouring threads seldom update the same word).
const MAX_COPIES: usize = 8;
/// Most work-groups of a privatised `scatter_add` pass.
const MAX_PART_GROUPS: usize = 1024;
/// Fewest sources a thread of a privatised pass takes (fewer groups, fewer partials).
const PART_PER_THREAD: usize = 16;
/// Most partial sums (work-groups x targets) a privatised pass writes.
const PART_BUDGET: usize = 1 << 20;

/// How a GPU runs `scatter_add`, chosen by the number of targets (data elements) `n_out`.
/// Few targets make atomic adds into the output collide (every thread retries a
/// compare-and-swap on one of a handful of words), so those calls are privatised: each
/// work-group sums its sources per target on its own, writes one partial per target to a scratch
/// buffer, and a second pass adds the partials (in a fixed tree order) onto data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddPlan {
    /// Each thread keeps a sum per target in registers (at most `PRIVATE_TARGETS`), the
    /// work-group adds them with a tree in local memory, `chunk` targets at a time: no atomics,
    /// and the result is the same on every run.
    Private { groups: u32, chunk: usize },
    /// Each work-group adds into `copies` copies of the targets in local memory (local atomics:
    /// integer adds, a compare-and-swap on the bits for floats), then sums the copies.
    Local { groups: u32, copies: usize },
    /// Atomic adds into the output (many targets: collisions are rare).
    Atomic,
}

/// Threads per work-group of the privatised passes (the targets' `LOCAL`, 256 on both).
pub(crate) const PART_LOCAL: usize = 256;

/// Threads that add one target's `groups` partials in the second pass (a power of two, at most
/// a work-group: a work-group sums `PART_LOCAL / lanes` targets, each with a tree over its
/// lanes, so few partials cost few barriers).
pub(crate) fn sum_lanes(groups: u32) -> usize {
    (groups.max(1) as usize).next_power_of_two().min(PART_LOCAL)
}

impl AddPlan {
    /// The plan for `g` with elements of `el` bytes (the scratch partials have that size).
    pub(crate) fn of(g: &Geom, el: usize) -> AddPlan {
        let (t, n_check) = (g.n_out(), g.n_src().max(g.n_idx));
        let words = el.div_ceil(4);
        let part_groups = |cap: usize| {
            n_check
                .div_ceil(PART_LOCAL * PART_PER_THREAD)
                .clamp(1, cap.max(1)) as u32
        };
        // The loop index of a pass (u32 on WGSL) must not overflow past the last source.
        let fits = n_check + MAX_PART_GROUPS * PART_LOCAL < u32::MAX as usize;
        if t == 0 || !fits {
            AddPlan::Atomic
        } else if t <= PRIVATE_TARGETS {
            AddPlan::Private {
                groups: part_groups(MAX_PART_GROUPS),
                chunk: t.min(LOCAL_WORDS / PART_LOCAL / words),
            }
        } else if t * words <= LOCAL_WORDS {
            AddPlan::Local {
                groups: part_groups(MAX_PART_GROUPS.min(PART_BUDGET / t)),
                copies: (LOCAL_WORDS / (t * words)).min(MAX_COPIES),
            }
        } else {
            AddPlan::Atomic
        }
    }
}

/// Index element `pos` as a position along the axis, `None` when out of range.
fn index_at(idx: &TypedVec, pos: usize, dim: usize) -> Option<usize> {
    let x = idx.get(pos).as_f64();
    (x >= 0.0 && x < dim as f64).then_some(x as usize)
}

/// The message of an index out of range (the CPU entry and the reference say the same).
pub(crate) fn out_of_range(kind: Kind, shown: &str, pos: usize, axis: usize, dim: usize) -> String {
    format!(
        "{} index {shown} (at position {pos}) is out of bounds for axis {axis} of length {dim}",
        name_of(kind)
    )
}

impl IntrinsicDef for ScatterDef {
    fn name(&self) -> &'static str {
        name_of(self.0)
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let (kind, axis) = parts(op);
        Some(format!(
            "{}.{}(&{}, &{}, {axis})",
            args[0],
            name_of(kind),
            args[1],
            args[2]
        ))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (kind, axis) = parts(op);
        let name = name_of(kind);
        let (data, idx, values) = (inputs[0], inputs[1], inputs[2]);
        if axis >= data.shape.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "{name} axis {axis} is out of range for shape {:?}",
                    data.shape
                ),
            )
            .at(site));
        }
        if !idx.dtype.is_int() {
            return Err(Error::new(
                ErrorKind::DType,
                format!("{name} indices must be i32 or u32, not {}", idx.dtype),
            )
            .at(site));
        }
        if values.dtype != data.dtype {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "{name} values of {} into data of {}: the types must match",
                    values.dtype, data.dtype
                ),
            )
            .at(site));
        }
        if kind == Kind::Add && data.dtype == DType::Bool {
            return Err(Error::new(
                ErrorKind::DType,
                "scatter_add adds numbers: f32, f64, i32 or u32, not bool".to_string(),
            )
            .at(site));
        }
        let expected: Shape = if kind == Kind::Along {
            let fits = idx.shape.len() == data.shape.len()
                && (0..data.shape.len()).all(|d| d == axis || idx.shape[d] == data.shape[d]);
            if !fits {
                return Err(Error::new(
                    ErrorKind::Shape,
                    format!(
                        "put_along_axis indices of shape {:?} do not fit data of shape {:?} \
                         along axis {axis}",
                        idx.shape, data.shape
                    ),
                )
                .at(site)
                .hint("the indices have the data's rank and its extents on every other axis"));
            }
            Shape::from_slice(idx.shape)
        } else {
            data.shape[..axis]
                .iter()
                .chain(idx.shape.iter())
                .chain(data.shape[axis + 1..].iter())
                .copied()
                .collect()
        };
        if values.shape != &expected[..] {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "{name} values of shape {:?} do not match indices of shape {:?} along \
                     axis {axis} of data of shape {:?}: expected values of shape {:?}",
                    values.shape,
                    idx.shape,
                    data.shape,
                    &expected[..]
                ),
            )
            .at(site));
        }
        Ok(vec![Output {
            shape: Shape::from_slice(data.shape),
            dtype: data.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(parts(op).1 as u64);
    }

    /// Every index is checked first (one out of range is an error), then the sources are applied
    /// one by one in source order onto a copy of data: the last one wins (replace) or each adds
    /// in f64 (floats) or with wrapping 64-bit integers (integers).
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (kind, axis) = parts(op);
        let (data, dshape) = inputs[0];
        let (idx, ishape) = inputs[1];
        let (values, _) = inputs[2];
        let g = Geom::new(dshape, ishape, axis, kind);
        for pos in 0..g.n_idx {
            if index_at(idx, pos, g.dim).is_none() {
                let shown = idx.get(pos).as_f64().to_string();
                return Err(out_of_range(kind, &shown, pos, axis, g.dim));
            }
        }
        let n = g.n_out();
        let land = |s: usize| {
            let i = index_at(idx, g.index_pos(s), g.dim).expect("checked");
            g.target(s, i)
        };
        let dtype = outputs[0].dtype;
        let out = match (kind, dtype) {
            (Kind::Add, DType::F32 | DType::F64) => {
                let mut acc: Vec<f64> = (0..n).map(|t| data.get(t).as_f64()).collect();
                for s in 0..g.n_src() {
                    acc[land(s)] += values.get(s).as_f64();
                }
                collect(dtype, n, |t| Scalar::F64(acc[t]))
            }
            (Kind::Add, _) => {
                let int = |v: Scalar| match v {
                    Scalar::I32(x) => x as i64,
                    Scalar::U32(x) => x as i64,
                    other => other.as_f64() as i64,
                };
                let mut acc: Vec<i64> = (0..n).map(|t| int(data.get(t))).collect();
                for s in 0..g.n_src() {
                    let t = land(s);
                    acc[t] = acc[t].wrapping_add(int(values.get(s)));
                }
                match dtype {
                    DType::I32 => TypedVec::I32(acc.iter().map(|&x| x as i32).collect()),
                    _ => TypedVec::U32(acc.iter().map(|&x| x as u32).collect()),
                }
            }
            _ => {
                let mut out: Vec<Scalar> = (0..n).map(|t| data.get(t)).collect();
                for s in 0..g.n_src() {
                    out[land(s)] = values.get(s);
                }
                collect(dtype, n, |t| out[t])
            }
        };
        Ok(vec![out])
    }

    /// Replacing forms move magnitudes with the data (the indices are exact); `scatter_add`'s
    /// element scales with the sum of its terms' sizes, as a sum's does.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let (kind, axis) = parts(op);
        if kind != Kind::Add {
            let m0 = TypedVec::F64(inputs[0].magnitude.to_vec());
            let m2 = TypedVec::F64(inputs[2].magnitude.to_vec());
            let parts = [
                (&m0, inputs[0].shape),
                (inputs[1].value, inputs[1].shape),
                (&m2, inputs[2].shape),
            ];
            return moved_by(op, out, &parts, result);
        }
        let g = Geom::new(inputs[0].shape, inputs[1].shape, axis, kind);
        let size = |x: &MagInput, i: usize| x.value.get(i).as_f64().abs().max(x.magnitude[i]);
        let mut m: Vec<f64> = (0..g.n_out()).map(|t| size(&inputs[0], t)).collect();
        for s in 0..g.n_src() {
            match index_at(inputs[1].value, g.index_pos(s), g.dim) {
                Some(i) => m[g.target(s, i)] += size(&inputs[2], s),
                None => return (0..result.len()).map(|_| f64::INFINITY).collect(),
            }
        }
        m
    }

    fn moves_data(&self) -> bool {
        self.0 != Kind::Add
    }

    /// Data copied once; each source reads its index and value and touches one output element
    /// (replace: also the claim array, 4 bytes per output element, written, claimed and read).
    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let g = Geom::of(call);
        let el = call.dtype.size() as u64;
        let src = numel(&call.in_shapes[2]);
        let copy = 2 * g.n_out() as u64 * el;
        let per_src = el + DType::U32.size() as u64 + el;
        match self.0 {
            Kind::Add => Cost {
                flops: src,
                bytes: copy + src * (per_src + el),
            },
            _ => Cost {
                flops: 0,
                bytes: copy + 4 * g.n_out() as u64 + src * (per_src + 8),
            },
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(call, inputs, &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(data: &[usize], idx: &[usize], el: usize) -> AddPlan {
        AddPlan::of(&Geom::new(data, idx, 0, Kind::Add), el)
    }

    #[test]
    fn add_plans_by_target_count() {
        // k-means' shape: 8 clusters of 2 coordinates, 2^23 points.
        assert_eq!(
            plan(&[8, 2], &[1 << 23], 4),
            AddPlan::Private {
                groups: 1024,
                chunk: 16
            }
        );
        // f64 reduces 8 targets at a time (16 KiB of local memory).
        assert_eq!(
            plan(&[32], &[100], 8),
            AddPlan::Private {
                groups: 1,
                chunk: 8
            }
        );
        assert_eq!(
            plan(&[1000], &[40_000], 4),
            AddPlan::Local {
                groups: 10,
                copies: 4
            }
        );
        assert_eq!(
            plan(&[4096], &[1 << 24], 4),
            AddPlan::Local {
                groups: 256,
                copies: 1
            }
        );
        assert_eq!(
            plan(&[2048], &[10], 8),
            AddPlan::Local {
                groups: 1,
                copies: 1
            }
        );
        assert_eq!(plan(&[4097], &[1 << 24], 4), AddPlan::Atomic);
        assert_eq!(plan(&[1 << 16], &[1 << 24], 4), AddPlan::Atomic);
        // No targets, or sources past 32-bit positions: atomic adds (today's plan).
        assert_eq!(plan(&[0], &[5], 4), AddPlan::Atomic);
        assert_eq!(plan(&[8], &[u32::MAX as usize - 8], 4), AddPlan::Atomic);
    }
}
