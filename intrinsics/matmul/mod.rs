//! The 2-D matrix product `c[m, n] = a[m, k] b[k, n]` (f32 or f64): its checks, reference,
//! conditioning and cost, and its kernels (`cpu.rs`: `matrixmultiply`'s GEMM; `opencl.rs`,
//! `wgsl.rs`: 64 x 64 tiles through local memory, split along `k` by [`matmul_split`]).

mod cpu;
mod opencl;
mod wgsl;

use super::MagInput;
use super::{Cost, IntrinsicDef, Operand, Output, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::collect;
use crate::ir::{Intrinsic, Scalar, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// The matrix product's definition.
pub struct Matmul;

impl IntrinsicDef for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn check(&self, _op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (a, b) = (inputs[0], inputs[1]);
        if a.dtype != b.dtype || !a.dtype.is_float() {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "matmul of {} and {}: both must be f32 or both f64",
                    a.dtype, b.dtype
                ),
            )
            .at(site));
        }
        if a.shape.len() != 2 || b.shape.len() != 2 || a.shape[1] != b.shape[0] {
            return Err(Error::new(
                ErrorKind::Shape,
                format!("matmul of shapes {:?} and {:?}", a.shape, b.shape),
            )
            .at(site)
            .hint("matmul takes [m, k] and [k, n] matrices"));
        }
        Ok(vec![Output {
            shape: smallvec::smallvec![a.shape[0], b.shape[1]],
            dtype: a.dtype,
        }])
    }

    /// Each element a dot product accumulated in f64, in order of `k`.
    fn reference(
        &self,
        _op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (a, sa) = inputs[0];
        let (b, sb) = inputs[1];
        let (k, nn) = (sa[1], sb[1]);
        let len = outputs[0].shape.iter().product();
        Ok(vec![collect(outputs[0].dtype, len, |i| {
            let (r, c) = (i / nn.max(1), i % nn.max(1));
            let dot: f64 = (0..k)
                .map(|p| a.get(r * k + p).as_f64() * b.get(p * nn + c).as_f64())
                .sum();
            Scalar::F64(dot)
        })])
    }

    /// `sum_p max(|a_ip|, m_ip) * max(|b_pj|, m_pj)`: the matrix product's rounding scales with
    /// its products' sizes.
    fn magnitudes(
        &self,
        _op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let (k, nn) = (a.shape[1], b.shape[1]);
        let size = |x: &MagInput, i: usize| x.value.get(i).as_f64().abs().max(x.magnitude[i]);
        (0..result.len())
            .map(|i| {
                let (r, c) = (i / nn.max(1), i % nn.max(1));
                (0..k)
                    .map(|p| size(a, r * k + p) * size(b, p * nn + c))
                    .sum()
            })
            .collect()
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let (a, b) = (&call.in_shapes[0], &call.in_shapes[1]);
        let (m, k, n) = (a[0] as u64, a[1] as u64, b[1] as u64);
        let el = call.dtype.size() as u64;
        Cost {
            flops: 2 * m * n * k,
            bytes: (numel(a) + numel(b) + numel(&call.out_shape)) * el,
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

/// How a GPU matrix product `c[m, n] = a[m, k] b[k, n]` splits its inner extent: a product with
/// few 64 x 64 output tiles and a long `k` (k-means' one-hot sums, the normal equations of a tall
/// matrix: 8 x 2,000,000 x 2) would leave all but a few compute units idle while one work-group
/// walks `k`. Split into `parts` ranges of `chunk` (a multiple of 16), each tile of each range is
/// a work-group writing partial sums; a second pass adds the parts in order. `None`: one pass.
pub fn matmul_split(m: usize, n: usize, k: usize) -> Option<(usize, usize)> {
    /// Work-groups worth filling a large GPU.
    const TARGET_GROUPS: usize = 512;
    /// Shortest range of `k` one work-group takes.
    const MIN_CHUNK: usize = 512;
    /// Longest range of `k` one work-group walks: lavapipe dropped every term past 58,255 of one
    /// long walk (issue 18), so no work-group walks more than this whatever the tiles.
    const MAX_CHUNK: usize = 16384;
    let tiles = m.div_ceil(64) * n.div_ceil(64);
    let few_tiles = tiles < TARGET_GROUPS / 4 && k >= 2 * MIN_CHUNK;
    if !few_tiles && k <= MAX_CHUNK {
        return None;
    }
    let wanted = if few_tiles {
        TARGET_GROUPS.div_ceil(tiles).min(k / MIN_CHUNK)
    } else {
        1
    };
    let parts = wanted.max(k.div_ceil(MAX_CHUNK)).max(2);
    let chunk = k.div_ceil(parts).next_multiple_of(16);
    Some((k.div_ceil(chunk), chunk))
}
