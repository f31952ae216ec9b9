//! Gather (NumPy `take` along an axis; indices i32 or u32): its checks, reference, conditioning
//! and cost, and its kernels (`cpu.rs`: checked block copies; `opencl.rs`, `wgsl.rs`: one pass
//! whose out-of-range indices set the plan's fault word).

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, Operand, Output, numel};
use super::{MagInput, moved_by};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::collect;
use crate::ir::{DType, Intrinsic, Shape, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Gather's definition.
pub struct Gather;

fn axis_of(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Gather { axis } => *axis,
        _ => unreachable!("gather's definition called for {op:?}"),
    }
}

impl IntrinsicDef for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        Some(format!("{}.gather(&{}, {})", args[0], args[1], axis_of(op)))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let axis = axis_of(op);
        let (a, idx) = (inputs[0], inputs[1]);
        if axis >= a.shape.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("gather axis {axis} is out of range for shape {:?}", a.shape),
            )
            .at(site));
        }
        if !idx.dtype.is_int() {
            return Err(Error::new(
                ErrorKind::DType,
                format!("gather indices must be i32 or u32, not {}", idx.dtype),
            )
            .at(site));
        }
        let shape: Shape = a.shape[..axis]
            .iter()
            .chain(idx.shape.iter())
            .chain(a.shape[axis + 1..].iter())
            .copied()
            .collect();
        Ok(vec![Output {
            shape,
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(axis_of(op) as u64);
    }

    /// Every index is checked first (one out of range is an error), then each output element
    /// reads its source through its own index arithmetic.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let axis = &axis_of(op);
        let len = outputs[0].shape.iter().product();
        let (v, from) = inputs[0];
        let (idx, ishape) = inputs[1];
        let ni = ishape.iter().product::<usize>();
        let post: usize = from[axis + 1..].iter().product();
        for j in 0..ni {
            let x = idx.get(j).as_f64();
            if x < 0.0 || x as usize >= from[*axis] {
                return Err(format!(
                    "gather index {x} is out of bounds for axis {axis} of length {}",
                    from[*axis]
                ));
            }
        }
        Ok(vec![collect(outputs[0].dtype, len, |i| {
            let (p, rest) = (i / (ni * post), i % (ni * post));
            let (j, q) = (rest / post.max(1), rest % post.max(1));
            let src = idx.get(j).as_f64() as usize;
            v.get((p * from[*axis] + src) * post + q)
        })])
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
        let out = numel(&call.out_shape) * call.dtype.size() as u64;
        Cost {
            flops: 0,
            bytes: 2 * out + numel(&call.in_shapes[1]) * DType::U32.size() as u64,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(call, axis_of(&call.op), inputs, &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, axis_of(&call.op), t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(call, axis_of(&call.op))
    }
}
