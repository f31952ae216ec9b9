//! Discrete Fourier transforms along one axis (issue 22), batched over the other axes: `fft`
//! (complex, forward or inverse; a real input is read as complex), `rfft` (real to the
//! `n / 2 + 1` coefficients of its Hermitian spectrum) and `irfft` (back to `n` reals), each
//! cropping or zero-padding its input axis to the transform length `n` and scaled as NumPy's
//! `norm` says ([`FftNorm`]). Every length: rustfft picks radix-2/3/4/5/6/7/8/9/11/12/16/32
//! butterflies, mixed-radix and Good–Thomas for composite lengths, Rader or Bluestein for primes.
//! The API's `fft2`, `fftn`, `rfftn` and their inverses are one call per axis
//! (`src/api/fft.rs`).
//!
//! - `cpu.rs`: the CPU entries, rustfft and realfft over rayon tasks of lines;
//! - `planner.rs`: the shared plans, one planner per element type;
//! - `spare.rs`: large buffers kept between calls that run on one thread;
//! - `reference.rs`: comparison mode's reference, a direct f64 DFT or rustfft in f64;
//! - `gpu.rs`: the GPU plan, lowered once: a chain of Stockham line passes in local memory
//!   (radices 8, 4, 2, 3, 5, 7; one pass up to 4096 contiguous points on OpenCL f32, 2048 for
//!   f64 and on WGSL, 512 along a strided axis; beyond, two to four global Stockham passes of
//!   at most 256 points, each reading and writing runs of neighbouring lines), the real
//!   transforms as half-length complex ones untangled in the same pass (even `n`) or promoted
//!   (odd `n`); `bluestein.rs`: lengths with a prime factor above 7 as a convolution of a
//!   2-3-5-7 length (Bluestein's algorithm);
//! - `kernel.rs`: the passes' bodies over a small dialect; `butterfly.rs`: the radix
//!   butterflies; `twiddle.rs`: the twiddle functions (exact integer angles, polynomials,
//!   about an ulp on every device; one per butterfly, its powers by products); `opencl.rs`,
//!   `wgsl.rs`: the entry points.
//!
//! **On the GPU**: `Complex<f32>` on OpenCL and WGSL, `Complex<f64>` on OpenCL devices with
//! fp64 (WGSL has none: the scheduler gives those calls to the CPU executor), any axis (lines
//! read at their stride, several neighbouring lines per work-group), any batch; lengths with
//! factors 2, 3, 5, 7 up to what four global passes take (2^32), others up to 2^23 points by
//! Bluestein's algorithm. Longer ones keep `Unsupported`: the GPU executor runs the CPU entry
//! from host copies (its CPU fallback).
//! `ARRAYFLOW_FFT_GPU=off` keeps every transform on the fallback.
//!
//! **Comparison tolerance** ([`FftDef::magnitudes`]): a transform of length `n` rounds by about
//! `log2(n) * eps` relative to the 2-norm of its input line, so each output element's
//! magnitude is `scale * max(1, log2 n) * sum_j max(|x_j|, m_j)` over its input line (the
//! 1-norm bounds the 2-norm, and carries the inputs' own magnitudes `m_j` as a sum does);
//! an `irfft` line counts its coefficients twice (the mirrored half of the spectrum).

mod bluestein;
mod butterfly;
mod cpu;
mod gpu;
mod kernel;
mod opencl;
mod planner;
mod reference;
mod spare;
mod twiddle;
mod wgsl;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, Rows, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, FftNorm, Intrinsic, Shape, Site, TypedVec};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Whether the GPU executors run the generated kernels (yes unless `ARRAYFLOW_FFT_GPU=off`,
/// which keeps every transform on the CPU fallback).
pub fn gpu_enabled() -> bool {
    std::env::var("ARRAYFLOW_FFT_GPU").map_or(true, |v| v != "off" && v != "0")
}

fn gate() -> std::result::Result<(), Unsupported> {
    if gpu_enabled() {
        Ok(())
    } else {
        Err(Unsupported(
            "GPU FFT kernels are turned off (ARRAYFLOW_FFT_GPU=off)".into(),
        ))
    }
}

/// The definition of `fft` (both directions), `rfft` and `irfft`, told apart by name.
pub struct FftDef(pub &'static str);

/// Which transform a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Complex to complex (forward, or inverse).
    C2c { inverse: bool },
    /// Real to the first `n / 2 + 1` complex coefficients.
    R2c,
    /// The first `n / 2 + 1` coefficients of a Hermitian spectrum to `n` reals.
    C2r,
}

/// The parts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spec {
    pub kind: Kind,
    pub axis: usize,
    /// The transform's length (of the complex line, or of the real one).
    pub n: usize,
    pub norm: FftNorm,
}

impl Spec {
    pub fn of(op: &Intrinsic) -> Spec {
        match *op {
            Intrinsic::Fft {
                axis,
                n,
                inverse,
                norm,
            } => Spec {
                kind: Kind::C2c { inverse },
                axis,
                n,
                norm,
            },
            Intrinsic::Rfft { axis, n, norm } => Spec {
                kind: Kind::R2c,
                axis,
                n,
                norm,
            },
            Intrinsic::Irfft { axis, n, norm } => Spec {
                kind: Kind::C2r,
                axis,
                n,
                norm,
            },
            _ => unreachable!("the FFT definition called for {op:?}"),
        }
    }
    /// The user-facing name.
    pub fn name(self) -> &'static str {
        match self.kind {
            Kind::C2c { inverse: false } => "fft",
            Kind::C2c { inverse: true } => "ifft",
            Kind::R2c => "rfft",
            Kind::C2r => "irfft",
        }
    }
    pub fn inverse(self) -> bool {
        matches!(self.kind, Kind::C2c { inverse: true } | Kind::C2r)
    }
    /// The factor the transform is multiplied by.
    pub fn scale(self) -> f64 {
        self.norm.scale(self.n, self.inverse())
    }
    /// Coefficients on the complex side of a real transform.
    pub fn half(self) -> usize {
        self.n / 2 + 1
    }
    /// Elements of an input line the transform reads (the input axis is cropped or padded to it).
    pub fn in_len(self) -> usize {
        match self.kind {
            Kind::C2r => self.half(),
            _ => self.n,
        }
    }
    /// Elements of an output line.
    pub fn out_len(self) -> usize {
        match self.kind {
            Kind::R2c => self.half(),
            _ => self.n,
        }
    }
    /// Arithmetic of one line: `5 n log2 n` for a complex transform, half that for a real one.
    fn line_flops(self) -> f64 {
        let n = self.n as f64;
        let full = 5.0 * n * n.log2().max(1.0);
        match self.kind {
            Kind::C2c { .. } => full,
            _ => full / 2.0,
        }
    }
}

/// The geometry of a call's lines: `pre * post` lines along the axis, input lines `m` long.
pub(crate) fn lines(spec: Spec, in_shape: &[usize]) -> cpu::Lines {
    let r = Rows::of(in_shape, spec.axis);
    cpu::Lines {
        pre: r.pre,
        post: r.post,
        m: r.dim,
        copy: r.dim.min(spec.in_len()),
        lin: spec.in_len(),
        lout: spec.out_len(),
    }
}

fn dtype_error(spec: Spec, d: DType, site: Site) -> Error {
    let (takes, hint) = match spec.kind {
        Kind::C2c { .. } => (
            "f32, f64, Complex<f32> or Complex<f64>",
            "cast integers first: `a.cast::<f64>()`",
        ),
        Kind::R2c => (
            "f32 or f64",
            "rfft takes real arrays: use `fft` for complex ones",
        ),
        Kind::C2r => (
            "Complex<f32> or Complex<f64>",
            "irfft takes the coefficients `rfft` returns: use `ifft` for a real array's inverse",
        ),
    };
    Error::new(
        ErrorKind::DType,
        format!("`{}` takes {takes} arrays, not {d}", spec.name()),
    )
    .at(site)
    .hint(hint)
}

impl IntrinsicDef for FftDef {
    fn name(&self) -> &'static str {
        self.0
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let (f, axis, n, norm) = match *op {
            Intrinsic::Fft {
                axis,
                n,
                inverse,
                norm,
            } => (if inverse { "ifft" } else { "fft" }, axis, n, norm),
            Intrinsic::Rfft { axis, n, norm } => ("rfft", axis, n, norm),
            Intrinsic::Irfft { axis, n, norm } => ("irfft", axis, n, norm),
            _ => return None,
        };
        Some(format!(
            "arrayflow::fft::{f}(&{}, Some({n}), {axis}, arrayflow::fft::Norm::{norm:?})",
            args[0]
        ))
    }

    fn accepts_complex(&self) -> bool {
        true
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let spec = Spec::of(op);
        let a = inputs[0];
        if spec.axis >= a.shape.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "`{}` axis {} is out of range for shape {:?}",
                    spec.name(),
                    spec.axis,
                    a.shape
                ),
            )
            .at(site));
        }
        if spec.n == 0 {
            let e = Error::new(
                ErrorKind::Argument,
                format!("`{}` of length 0 along axis {}", spec.name(), spec.axis),
            )
            .at(site);
            return Err(if spec.kind == Kind::C2r {
                e.hint("irfft's default length 2 (m - 1) is 0 for one coefficient: pass `n`")
            } else {
                e.hint("a transform needs at least one point: pass `n` to zero-pad an empty axis")
            });
        }
        let out = match (spec.kind, a.dtype) {
            (Kind::C2c { .. }, DType::F32 | DType::C64) => DType::C64,
            (Kind::C2c { .. }, DType::F64 | DType::C128) => DType::C128,
            (Kind::R2c, DType::F32 | DType::F64) => a.dtype.complex().expect("a float type"),
            (Kind::C2r, DType::C64 | DType::C128) => a.dtype.real(),
            (_, d) => return Err(dtype_error(spec, d, site)),
        };
        let mut shape = Shape::from_slice(a.shape);
        shape[spec.axis] = spec.out_len();
        Ok(vec![Output { shape, dtype: out }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let spec = Spec::of(op);
        w.push(spec.axis as u64);
        w.push(spec.n as u64);
        w.push(spec.inverse() as u64);
        w.push(spec.norm.index());
    }

    /// Each line in f64: a direct DFT of short lines, rustfft's f64 plans for long ones
    /// (`reference.rs`).
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (x, shape) = inputs[0];
        Ok(vec![reference::run(
            Spec::of(op),
            x,
            shape,
            outputs[0].dtype,
        )?])
    }

    /// `scale * max(1, log2 n) * sum_j max(|x_j|, m_j)` over each output's input line (twice
    /// that for `irfft`): see the module's notes.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let spec = Spec::of(op);
        let input = &inputs[0];
        let g = lines(spec, input.shape);
        let mirror = if spec.kind == Kind::C2r { 2.0 } else { 1.0 };
        let factor = spec.scale() * (spec.n as f64).log2().max(1.0) * mirror;
        let mut m = vec![0.0; result.len()];
        for p in 0..g.pre {
            for q in 0..g.post {
                let s: f64 = (0..g.copy)
                    .map(|j| {
                        let i = (p * g.m + j) * g.post + q;
                        reference::value(input.value, i)
                            .norm()
                            .max(input.magnitude[i])
                    })
                    .sum();
                for k in 0..g.lout {
                    m[(p * g.lout + k) * g.post + q] = factor * s;
                }
            }
        }
        m
    }

    /// `5 n log2 n` operations per complex line (half for real transforms); the input read and
    /// the output written once.
    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let spec = Spec::of(&call.op);
        let g = lines(spec, &call.in_shapes[0]);
        let in_bytes = numel(&call.in_shapes[0]) * call.in_dtypes[0].size() as u64;
        Cost {
            flops: ((g.pre * g.post) as f64 * spec.line_flops()) as u64,
            bytes: in_bytes + numel(&call.out_shape) * call.dtype.size() as u64,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let spec = Spec::of(&call.op);
        cpu::run(
            spec,
            lines(spec, &call.in_shapes[0]),
            inputs[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        gate()?;
        opencl::render(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        gate()?;
        wgsl::render(call, t)
    }
}
