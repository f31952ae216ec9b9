//! Traps (issue 24, the secondary seed 001's software traps): predicate checks compiled into the
//! kernel that computes the data, on the executor that runs it, stopping at the first failing
//! element with its index, value and call site.
//!
//! - **NaN and infinity traps** ([`TrapConfig`], `Runtime::traps`, `ARRAYFLOW_TRAP=nan,inf`):
//!   every float result of an element-wise op (or of the ops named with `ops=`) is tested, and
//!   a trap fires where an op *creates* a NaN (from operands none of which is NaN) or an infinity
//!   (from finite operands), as IEEE's invalid-operation, overflow and division-by-zero traps
//!   do: the op named is where the bad value started, not one it flowed through.
//! - **Index traps** (`index`): a gather, scatter or bincount index out of range is reported as
//!   a trap naming the first bad position (lowest linear index) and its multi-dimensional index.
//! - **Assertions** (`assert.rs`): `a.assert_finite()`, `a.assert_in_range(lo, hi)`,
//!   `mask.assert_true("message")`, recorded lazily and checked where the array is computed.
//! - **Passes** (`pass=N`, [`TrapConfig::passes`]): a checked launch runs in passes of about N
//!   elements, whole tiles ([`passes::Geometry`], the same cut on every executor); the pass that
//!   traps stops the launch, which stays suspended on its executor while other work goes on, and
//!   `Runtime::resume` finishes it (every executor's). Kernels run in passes where they are
//!   computed: the CPU tile VM (`exec/cpu/suspend.rs`), or a device, which dispatches the same
//!   compiled kernel once per pass over its range of elements (`codegen::lower`) and reads the
//!   trap words after each (`exec/gpu/passes.rs`; split kernels and kernels the device does not
//!   run take the tile VM there). A kernel with reductions runs its passes over runs of its
//!   work-group slots (each slot's partials its own, so the passes give one launch's bits; the
//!   final combining pass after the last): the trap names the same element as on the CPU, the
//!   pass in the device's own cut. The scheduler's barrier (`Runtime::execute`)
//!   does not wait for a suspended task or the work waiting for it, and waits for their results
//!   (`eval`) return the trap's error (`exec/scheduler.rs`).
//!
//! Where checks run: the program generator attaches [`check::TrapCheck`]s to a fused kernel
//! (`proggen/builder.rs`; a check tests the result of one instruction, at the kernel's own
//! positions, so only values computed at their array's own index are checked). The tile VM tests
//! each tile after the instruction runs and keeps the lowest failing element ([`passes::TrapSink`]);
//! the native tier stands aside for kernels with checks. The OpenCL and WGSL printers compile the
//! same predicates into the kernel (`codegen.rs`): a failure raises the kernel's fault word and a
//! second word, an atomic max of `u32::MAX - (element * checks + check)` (`device.rs`), so the
//! device itself keeps the lowest failing element and, at that element, the first check. The
//! device executor reads both after the launch and runs only that element's tile on the tile VM
//! for the value (`exec/gpu/device_trap.rs`): the trap names the device's element
//! ([`report::Trap::device`]). Where the CPU names another element (a device computing a value
//! differently), or the key does not fit 32 bits, or the kernel was split for the device, the
//! CPU searches the whole launch as before. Gather's, bincount's and scatter's (`scatter`,
//! `scatter_add`, `put_along_axis`) device kernels keep their lowest bad index position the same
//! way (the CPU re-runs the intrinsic for the message). A trap fails the launch with
//! an [`crate::ErrorKind::Trap`] error that every read of its results, and of results computed
//! from them, returns; [`report::Trap`] records are kept for `Runtime::trapped()`.
//!
//! Off, traps cost one relaxed atomic load per generated kernel, and kernels are unchanged: the
//! checks (and so the generated code and its caches' keys) exist only while traps are on or an
//! assertion was recorded. With traps on and nothing failing, results are bit-identical to a run
//! without them (the checks only read registers).

pub mod assert;
pub mod assertions;
pub mod check;
pub mod codegen;
mod config;
pub mod device;
pub mod passes;
pub mod report;
mod runtime;

pub use check::{TrapCheck, TrapPred};
pub use config::{TrapConfig, current, fingerprint, set};
