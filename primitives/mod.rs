//! The primitive library (the seed's 660): one table per list of element-wise operations, giving each
//! op its name, the element types it accepts, its instruction estimate and its source for each target.
//! `table.rs` is the only place an op is defined; `cpu.rs` holds scalar helpers the CPU sources use, `complex.rs` their complex arithmetic, `vmath.rs` the
//! vectorisable `exp` and `ln` both CPU tiers compute.
//! Compiled into the crate as `arrayflow::primitives` (the loader lives in `src/proggen/`).

pub mod complex;
pub mod cpu;
mod table;
pub mod vmath;

pub use table::{BinaryOp, Helper, ReduceOp, UnaryOp};
pub(crate) use table::{
    binary_bool, binary_ceq, binary_cmp, binary_complex, binary_float, binary_int, binary_mkc,
    unary_bool, unary_complex, unary_cpart, unary_float, unary_int, unary_pred,
};
