//! CPU intrinsics: matrix product (through `matrixmultiply`), gather and concat.

mod concat;
mod gather;
mod matmul;

use crate::error::{Error, ErrorKind};
use crate::ir::TypedVec;
use crate::ir::Intrinsic;
use crate::proggen::sequence::IntrinsicCall;

/// Runs one intrinsic call: `inputs` as the call lists them, `out` allocated with its type and length.
pub fn run(call: &IntrinsicCall, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    match &call.op {
        Intrinsic::Matmul => matmul::run(call, inputs, out),
        Intrinsic::Gather { axis } => gather::run(call, *axis, inputs, out),
        Intrinsic::Concat { axis } => {
            concat::run(call, *axis, inputs, out);
            Ok(())
        }
    }
}

fn exec_error(msg: String) -> Error {
    Error::new(ErrorKind::Execution, msg)
}
