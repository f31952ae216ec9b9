//! The CPU executor's entry into the intrinsic library: dispatch through the registry. Each
//! intrinsic's CPU code lies in its own folder (`matmul/cpu.rs`: `matrixmultiply`'s GEMM;
//! `gather/cpu.rs`, `concat/cpu.rs`, `transpose/cpu.rs`: block copies).

use crate::error::{Error, ErrorKind};
use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;

/// Runs one intrinsic call with one output: `inputs` as the call lists them, `out` allocated with
/// its type and length (the CPU executor and the codegen tests call it).
pub fn run(call: &IntrinsicCall, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    run_all(call, inputs, std::slice::from_mut(out))
}

/// Runs one intrinsic call into all its `outputs`.
pub fn run_all(
    call: &IntrinsicCall,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
) -> Result<(), Error> {
    super::def(&call.op).cpu(call, inputs, outputs)?;
    super::fault::corrupt(call, outputs);
    Ok(())
}

/// An execution error of an intrinsic (the program fails; its results become invalid).
pub(crate) fn exec_error(msg: String) -> Error {
    Error::new(ErrorKind::Execution, msg)
}
