//! A device executor's CPU fallback: runs a task's kernel with the CPU executor's code (native tier,
//! tile VM, CPU intrinsics) on host copies of its inputs, for kernels the device cannot run.

use super::super::HostDest;
use super::super::TypedVec;
use super::super::cpu::slices::OutPtr;
use super::super::scheduler::Task;
use crate::error::Error;

/// The task's outputs computed on the CPU.
pub fn run(task: &Task, inputs: &[std::sync::Arc<TypedVec>]) -> Result<Vec<TypedVec>, Error> {
    let refs: Vec<&TypedVec> = inputs.iter().map(|a| &**a).collect();
    let mut outputs: Vec<TypedVec> = super::super::cpu::output_shapes(&task.program.kernel)
        .into_iter()
        .map(|(d, len)| TypedVec::zeros(d, len))
        .collect();
    let external = vec![None; outputs.len()];
    super::super::cpu::run_program(task, &refs, &mut outputs, &external)?;
    Ok(outputs)
}

/// Copies a result into the application's memory (an output bound for a read without a copy).
pub fn write_external(v: &TypedVec, dest: HostDest) {
    let ptr = OutPtr::from_raw(dest.dtype, dest.ptr);
    // SAFETY: the application's slice has room for every element and nothing else writes it
    // while its read waits for this task.
    unsafe {
        match (v, ptr) {
            (TypedVec::F32(v), OutPtr::F32(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::F64(v), OutPtr::F64(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::I32(v), OutPtr::I32(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::U32(v), OutPtr::U32(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::Bool(v), OutPtr::Bool(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::C64(v), OutPtr::C64(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            (TypedVec::C128(v), OutPtr::C128(p)) => p.copy_from_nonoverlapping(v.as_ptr(), v.len()),
            _ => unreachable!("an external output has its kernel's element type"),
        }
    }
}
