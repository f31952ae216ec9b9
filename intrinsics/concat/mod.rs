//! Concatenation along an axis: its checks, reference, conditioning and cost, and its kernels
//! (`cpu.rs`: block copies; `opencl.rs`, `wgsl.rs`: one copy pass per non-empty part).

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, Operand, Output};
use super::{MagInput, moved_by};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::{Intrinsic, Site};
use crate::ir::{collect, ravel, unravel};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Concat's definition.
pub struct Concat;

fn axis_of(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Concat { axis } => *axis,
        _ => unreachable!("concat's definition called for {op:?}"),
    }
}

impl IntrinsicDef for Concat {
    fn name(&self) -> &'static str {
        "concat"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let parts: Vec<String> = args.iter().map(|a| format!("&{a}")).collect();
        Some(format!(
            "Array::concat(&[{}], {})",
            parts.join(", "),
            axis_of(op)
        ))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let axis = axis_of(op);
        let first = inputs
            .first()
            .ok_or_else(|| Error::new(ErrorKind::Argument, "concat of no arrays").at(site))?;
        if axis >= first.shape.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "concat axis {axis} is out of range for shape {:?}",
                    first.shape
                ),
            )
            .at(site));
        }
        let mut shape: crate::ir::Shape = first.shape.into();
        shape[axis] = 0;
        for p in inputs {
            let same = p.shape.len() == first.shape.len()
                && (0..p.shape.len()).all(|d| d == axis || p.shape[d] == first.shape[d]);
            if !same {
                return Err(Error::new(
                    ErrorKind::Shape,
                    format!(
                        "concat along axis {axis} of shapes {:?} and {:?}",
                        first.shape, p.shape
                    ),
                )
                .at(site)
                .hint("all dimensions but the concat axis must match"));
            }
            if p.dtype != first.dtype {
                return Err(Error::new(
                    ErrorKind::DType,
                    format!("concat of {} and {} arrays", first.dtype, p.dtype),
                )
                .at(site));
            }
            shape[axis] += p.shape[axis];
        }
        Ok(vec![Output {
            shape,
            dtype: first.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(axis_of(op) as u64);
    }

    /// Each output element finds its part by walking the parts' extents along the axis.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let axis = &axis_of(op);
        let shape = &outputs[0].shape[..];
        let len = shape.iter().product();
        Ok(vec![collect(outputs[0].dtype, len, |i| {
            let idx = unravel(i, shape);
            let mut at = idx[*axis];
            for (v, s) in inputs {
                if at < s[*axis] {
                    let mut src = idx.clone();
                    src[*axis] = at;
                    return v.get(ravel(&src, s));
                }
                at -= s[*axis];
            }
            unreachable!("concat index within the parts")
        })])
    }

    /// The parts' magnitudes move with the data.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let ms: Vec<TypedVec> = inputs
            .iter()
            .map(|i| TypedVec::F64(i.magnitude.to_vec()))
            .collect();
        let parts: Vec<(&TypedVec, &[usize])> =
            ms.iter().zip(inputs).map(|(m, i)| (m, i.shape)).collect();
        moved_by(op, out, &parts, result)
    }

    fn moves_data(&self) -> bool {
        true
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        Cost::copy(call)
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(call, axis_of(&call.op), inputs, &mut outputs[0]);
        Ok(())
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, axis_of(&call.op), t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        Ok(wgsl::render(call, axis_of(&call.op)))
    }
}
