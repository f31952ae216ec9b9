//! The language-specific interface (the seed's LSI 100) for Rust: `Array<T>` with operator
//! overloading, math functions, reductions, scans, generators, views, sorting, scatter
//! (`scatter.rs`) and counting (`counting.rs`), Fourier transforms (`fft.rs`), convolution (`signal.rs`), random numbers and permutations
//! (`permute.rs`), reads and writes, and the `Runtime` controls. Every public function is
//! `#[track_caller]` so errors, caches and profiles know the user's call site.

mod array;
mod complex;
mod counting;
mod dynarray;
mod element;
pub mod fft;
pub(crate) mod inspect;
pub mod linalg;
mod math;
mod matmul;
mod movement;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
mod ops;
mod permute;
mod placement;
mod random;
mod reduce;
mod reuse;
mod runtime;
mod scan;
mod scatter;
pub mod signal;
mod slicing;
mod sort;
mod step;
mod view;

pub use crate::debug::breakpoints::{
    ArrayId, Breakpoint, BreakpointId, BreakpointInfo, DebugGuard, DebugMode, Debugger, LiveArray,
    Stop, StopReason, Values,
};
pub use crate::debug::step::{Divergence, StepRecord, StepScope};
pub use crate::debug::trap::TrapConfig;
pub use crate::debug::trap::report::{Trap, TrapKind};
pub use crate::debug::{
    CompareConfig, CompareMode, Mismatch, MismatchAction, OpSummary, Tolerance,
};
pub use crate::ir::DType;
pub use array::Array;
pub use dynarray::DynArray;
pub use element::{ComplexFloat, Element, Float, Index, Inexact, Logical, Numeric};
pub use inspect::{SUMMARY_THRESHOLD, allclose, assert_allclose};
pub use math::{max, min, select};
pub use movement::Pad;
pub use num_complex::Complex;
pub use ops::Operand;
pub use placement::{Device, PlacementScope, SplitMode, SplitScope};
pub use random::{Rng, RngAlgorithm, RngState};
pub use reduce::Bool;
pub use runtime::{
    Backend, CacheStats, DeviceChoice, DeviceInfo, DeviceKind, DeviceLimits, ErrorHandling,
    ExecutorStats, FlushCounts, NativeMode, Runtime, RuntimeBuilder, SMALL_MATMUL_LIMIT, Stats,
};
pub use slicing::{AxisArg, RangeArg, SliceInt};
pub use sort::Side;
pub use view::Slice;
