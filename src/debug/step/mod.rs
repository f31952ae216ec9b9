//! Stepping inside a fused kernel (seed 000) and the first diverging op (issue 24). With stepping
//! on, each flush keeps its kernels (`capture.rs`, through the flush's hook in
//! `compile/captures.rs`; an intrinsic's launch is one step, its result as the executor computed
//! it, and the divergence search goes through it); a kept fused kernel re-runs as one
//! micro-kernel per instruction (`micro.rs`), each loading its operands, doing one operation and
//! storing to a typed spill buffer, on the executor that ran it (`run.rs`), over the box of the
//! domain the scope needs (`window.rs`), and its values come back per step at a scope
//! (`report.rs`). In comparison mode a mismatch on a kept kernel's result is narrowed to the first
//! IR node whose stepped value differs from its reference (`divergence.rs`), with a reproducing
//! program (`repro.rs`). Comparison mode keeps kernels for this by itself
//! (`CompareConfig::narrow`, on by default), so the mismatch a read reports names that node.
//!
//! The micro-kernels are ordinary [`FusedKernel`](crate::proggen::kernel::FusedKernel)s handed
//! off as a program sequence of their own: the CPU runs them on the tile VM or the native tier,
//! a GPU executor renders them with its normal code generator (uncached by the fused kernel's
//! plan: each is a kernel of its own). Each op runs on the values the executor computed for its
//! operands, so a step's value equals the fused kernel's bit for bit wherever the executor
//! rounds an op the same way alone as fused (every executor here: contraction is off in the
//! native tier and OpenCL, and WGSL has no fused multiply-add the renderer asks for).

pub mod capture;
mod divergence;
pub mod micro;
pub mod report;
pub mod repro;
mod run;
pub mod window;

pub use report::{Divergence, StepRecord, StepScope};
pub use run::Stepped;
pub use window::map_at;
