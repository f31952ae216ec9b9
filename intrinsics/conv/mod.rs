//! Direct convolution over the last one or two axes (issue 22; `Intrinsic::Convolve`): its
//! checks, reference, conditioning and cost, and its kernels (`cpu.rs`: each output row as a
//! sum of shifted rows scaled by one filter tap, over rayon; `opencl.rs`, `wgsl.rs`: one work
//! item per output element walking the filter, with an unchecked path for windows inside the
//! input). The API (`src/api/signal.rs`) builds `convolve`/`correlate`, complex inputs (four real
//! convolutions) and the FFT method on top; this intrinsic is the direct method for real f32
//! and f64.
//!
//! **Geometry.** A one-axis call is a two-axis call with a unit first axis, so every kernel
//! walks `[batch, o0, o1]` outputs: output `(b, i0, i1)` is the sum over taps `(p0, p1)` in
//! row-major order of `k[b?, p0, p1] * x[b, i0 + off0 - p0, i1 + off1 - p1]`, terms outside `x`
//! left out. Every executor adds the terms in that order in the element type (OpenCL kernels
//! are built with `FP_CONTRACT OFF`), so the CPU and OpenCL give the same bits.
//!
//! **Comparison tolerance** ([`ConvDef::magnitudes`]): an output of `T` terms rounds by at most
//! about `T eps` times the sum of its terms' sizes; the magnitude is that sum (with the inputs'
//! own magnitudes) times `max(1, T / 64)`, so the per-type allowance (f32: 1e-5, about 84 eps)
//! covers `T` up to 64 and grows with it beyond.

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{ConvMode, DType, Intrinsic, Shape, Site, TypedVec, collect};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// The definition of the direct convolution.
pub struct ConvDef;

/// The shape of one call, a one-axis call seen as two axes (`n[0] = m[0] = o[0] = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geom {
    /// Batch entries (the product of x's leading axes).
    pub batch: usize,
    /// Whether the filter has the batch axes (one filter per entry) or not (one for all).
    pub per_batch: bool,
    /// Input, filter and output lengths and offsets into the full result, per convolved axis.
    pub n: [usize; 2],
    pub m: [usize; 2],
    pub o: [usize; 2],
    pub off: [usize; 2],
}

impl Geom {
    /// Checks the shapes of a call of `rank` axes in `mode` and returns its geometry.
    pub fn of(
        rank: usize,
        mode: ConvMode,
        x: &[usize],
        k: &[usize],
    ) -> std::result::Result<Geom, String> {
        if rank != 1 && rank != 2 {
            return Err(format!(
                "convolution over {rank} axes: 1 or 2 are supported"
            ));
        }
        if x.len() < rank {
            return Err(format!(
                "a convolution over {rank} axes needs an input of at least {rank} axes, not shape {x:?}"
            ));
        }
        let lead = &x[..x.len() - rank];
        let per_batch = match k.len() {
            l if l == rank => false,
            l if l == x.len() && &k[..l - rank] == lead => true,
            _ => {
                return Err(format!(
                    "the filter's shape {k:?} must be its {rank} convolved axes, or the input's leading axes {lead:?} followed by them"
                ));
            }
        };
        let (xs, ks) = (&x[x.len() - rank..], &k[k.len() - rank..]);
        if xs.contains(&0) || ks.contains(&0) {
            return Err(format!(
                "convolution of an empty input or filter (shapes {x:?} and {k:?})"
            ));
        }
        if mode == ConvMode::Valid && xs.iter().zip(ks).any(|(n, m)| n < m) {
            return Err(format!(
                "mode `valid` needs the input at least as long as the filter on every convolved axis (shapes {x:?} and {k:?})"
            ));
        }
        let mut g = Geom {
            batch: lead.iter().product(),
            per_batch,
            n: [1, 1],
            m: [1, 1],
            o: [1, 1],
            off: [0, 0],
        };
        for d in 0..rank {
            let a = 2 - rank + d;
            g.n[a] = xs[d];
            g.m[a] = ks[d];
            (g.o[a], g.off[a]) = mode.extent(xs[d], ks[d]);
        }
        Ok(g)
    }

    /// The geometry of a recorded call (checked when it was recorded).
    pub fn of_call(call: &IntrinsicCall) -> Geom {
        let (rank, mode) = parts(&call.op);
        Geom::of(rank, mode, &call.in_shapes[0], &call.in_shapes[1])
            .expect("a convolution checked when recorded")
    }

    /// Terms of one output at most (the filter's size).
    pub fn taps(&self) -> usize {
        self.m[0] * self.m[1]
    }

    /// Output elements.
    pub fn outputs(&self) -> usize {
        self.batch * self.o[0] * self.o[1]
    }

    /// Where filter entry `(p0, p1)` of batch entry `b` lies.
    pub fn k_at(&self, b: usize, p0: usize, p1: usize) -> usize {
        (if self.per_batch { b * self.taps() } else { 0 }) + p0 * self.m[1] + p1
    }

    /// The input element term `(p0, p1)` of output `(b, i0, i1)` reads, if inside the input.
    pub fn x_at(&self, b: usize, i: [usize; 2], p: [usize; 2]) -> Option<usize> {
        let s0 = (i[0] + self.off[0])
            .checked_sub(p[0])
            .filter(|&s| s < self.n[0])?;
        let s1 = (i[1] + self.off[1])
            .checked_sub(p[1])
            .filter(|&s| s < self.n[1])?;
        Some((b * self.n[0] + s0) * self.n[1] + s1)
    }
}

fn parts(op: &Intrinsic) -> (usize, ConvMode) {
    match *op {
        Intrinsic::Convolve { rank, mode } => (rank, mode),
        _ => unreachable!("the convolution's definition called for {op:?}"),
    }
}

impl IntrinsicDef for ConvDef {
    fn name(&self) -> &'static str {
        "convolve"
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (rank, mode) = parts(op);
        let (x, k) = (inputs[0], inputs[1]);
        if !matches!(x.dtype, DType::F32 | DType::F64) || k.dtype != x.dtype {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "the direct convolution takes an f32 or f64 input and a filter of the same type, not {} and {}",
                    x.dtype, k.dtype
                ),
            )
            .at(site)
            .hint("cast integers first: `a.cast::<f32>()`"));
        }
        let g = Geom::of(rank, mode, x.shape, k.shape)
            .map_err(|e| Error::new(ErrorKind::Shape, e).at(site))?;
        let mut shape = Shape::from_slice(x.shape);
        let r = shape.len();
        for d in 0..rank {
            shape[r - rank + d] = g.o[2 - rank + d];
        }
        Ok(vec![Output {
            shape,
            dtype: x.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (rank, mode) = parts(op);
        w.push(rank as u64);
        w.push(mode.index());
    }

    /// Every output as its sum in f64, terms in the kernels' order.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (rank, mode) = parts(op);
        let ((x, xs), (k, ks)) = (inputs[0], inputs[1]);
        let g = Geom::of(rank, mode, xs, ks)?;
        let sums = terms(&g, |b, xi, p0, p1| {
            x.get(xi).as_f64() * k.get(g.k_at(b, p0, p1)).as_f64()
        });
        Ok(vec![collect(outputs[0].dtype, sums.len(), |i| {
            crate::ir::Scalar::F64(sums[i]).cast(outputs[0].dtype)
        })])
    }

    /// The sum of each output's terms' sizes (with the inputs' own magnitudes), times
    /// `max(1, taps / 64)`: see the module's notes.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        _result: &TypedVec,
    ) -> Vec<f64> {
        let (rank, mode) = parts(op);
        let (x, k) = (&inputs[0], &inputs[1]);
        let g = Geom::of(rank, mode, x.shape, k.shape).expect("a checked call");
        let size = |v: &MagInput, i: usize| v.value.get(i).as_f64().abs().max(v.magnitude[i]);
        let factor = (g.taps() as f64 / 64.0).max(1.0);
        terms(&g, |b, xi, p0, p1| size(x, xi) * size(k, g.k_at(b, p0, p1)))
            .into_iter()
            .map(|s| s * factor)
            .collect()
    }

    /// Two operations per term; the input, the filter and the output once each.
    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let g = Geom::of_call(call);
        let el = call.dtype.size() as u64;
        Cost {
            flops: 2 * (g.outputs() * g.taps()) as u64,
            bytes: (numel(&call.in_shapes[0]) + numel(&call.in_shapes[1]) + numel(&call.out_shape))
                * el,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(&Geom::of_call(call), inputs, &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(&Geom::of_call(call), call.dtype, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(&Geom::of_call(call), call.dtype)
    }
}

/// Each output's sum in f64 of `term(b, x index, p0, p1)` over its taps inside the input, in
/// the kernels' order.
fn terms(g: &Geom, term: impl Fn(usize, usize, usize, usize) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(g.outputs());
    for b in 0..g.batch {
        for i0 in 0..g.o[0] {
            for i1 in 0..g.o[1] {
                let mut s = 0.0;
                for p0 in 0..g.m[0] {
                    for p1 in 0..g.m[1] {
                        if let Some(xi) = g.x_at(b, [i0, i1], [p0, p1]) {
                            s += term(b, xi, p0, p1);
                        }
                    }
                }
                out.push(s);
            }
        }
    }
    out
}
