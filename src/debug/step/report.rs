//! What stepping and the divergence search hand to the application: the scope a step covers
//! ([`StepScope`]), each micro-kernel's values ([`StepRecord`]) and the first diverging op of a
//! mismatch ([`Divergence`]).

use crate::debug::Mismatch;
use crate::ir::{DType, Site};

/// Which elements of a fused kernel's domain a step reports.
///
/// The micro-kernels of an element-wise kernel run over the least box of the domain that covers
/// the scope's elements (`step::window::Window::covering`: one element computes one element per
/// step), and the scope picks the elements of that box whose values are read back into each
/// [`StepRecord`]. A kernel with reductions is stepped over its whole domain; for a reduction
/// step the scope picks the results whose reduced elements meet it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepScope {
    /// One element of the domain (a work item): its row-major linear index.
    Element(usize),
    /// One launch tile: elements `g * tile .. min((g + 1) * tile, len)` of the domain (of an
    /// intrinsic's output), `tile` the kernel's launch tile ([`crate::Runtime::config`]`().tile`
    /// by default), on every executor. On the CPU (tile VM or native code) that is the unit one
    /// worker runs. A GPU executor cuts the same domain into work-groups of 256 threads
    /// differently, so on OpenCL or wgpu `Group(g)` is still the launch tile, not work-group `g`.
    /// There an element-wise kernel in the scalar form (WGSL kernels that do not qualify for
    /// quads, kernels with trap checks, `ARRAYFLOW_OPENCL_VECTOR=0` / `ARRAYFLOW_WGPU_VECTOR=0`)
    /// gives thread `t` of `T` dispatched threads elements `t + u * T` (`u` in `0..4`) per loop
    /// trip, so work-group `g`'s first trip is four runs of 256 elements, `256 * g + u * T ..`;
    /// OpenCL's quad form gives thread `t` elements `4t .. 4t + 4` (with
    /// `ARRAYFLOW_OPENCL_QUADS=Q > 1`, `Q` quads a global size apart per trip), so by default
    /// work-group `g` computes elements `1024 * g .. 1024 * (g + 1)` in its first trip (the last
    /// `len % 4` elements go to the first threads); WGSL's quad form (`ARRAYFLOW_WGPU_QUADS=Q`,
    /// default 2) gives work-group `g` elements `1024 * Q * g .. 1024 * Q * (g + 1)` in its first
    /// trip, the next trips `1024 * Q` times the work-groups further on. Kernels with reductions
    /// spread their rows over work-groups in other ways again.
    Group(usize),
    /// The domain elements in this range.
    Range(std::ops::Range<usize>),
    /// Every element.
    All,
}

/// One micro-kernel's result: one instruction of the fused kernel (or its final reduction) run
/// alone, its value spilled to a typed buffer and read back at the scope's elements.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The step's position: the instruction's index in the fused kernel, then its reductions.
    pub step: usize,
    /// The operation (`load`, `const`, `random`, a generator's name, an element-wise op's name
    /// such as `add` or `exp`, `select`, `cast`, or a reduction such as `sum`).
    pub op: String,
    /// The user's call site of the IR node the step computes (for a load, of the loaded array).
    pub site: Site,
    /// The element type of the step's value.
    pub dtype: DType,
    /// The shape of the IR node the step computes (for a load, of the loaded array).
    pub shape: Vec<usize>,
    /// The kernel output it is stored to, if the fused kernel stores it.
    pub stored: Option<usize>,
    /// The domain elements reported (for a reduction step: the result indices).
    pub elements: Vec<usize>,
    /// The element of the node (its row-major linear index) each value belongs to.
    pub at: Vec<usize>,
    /// The values, as f64 (bools 0/1, complex numbers their real part).
    pub values: Vec<f64>,
    /// The values' exact bits (`f32` bits zero-extended, as kernel parameters carry them).
    pub bits: Vec<u64>,
    /// The node's reference values at `at`, when comparison mode recorded them.
    pub reference: Option<Vec<f64>>,
}

/// The first IR node of a fused kernel whose value differs from its reference, found by
/// stepping the kernel's micro-kernels on the executor that ran it (`Runtime::divergences`).
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// The mismatch comparison mode reported (on the kernel's result).
    pub mismatch: Mismatch,
    /// The diverging op's name (`load` when the kernel's input already differed and the kernel
    /// that computed it is no longer kept).
    pub op: String,
    /// Where the diverging op was recorded.
    pub site: Site,
    /// The first differing element of the op's result (row-major linear index).
    pub element: usize,
    /// The micro-kernel's value there.
    pub optimised: f64,
    /// The reference value there.
    pub reference: f64,
    /// Its step in the fused kernel (see [`StepRecord::step`]).
    pub step: usize,
    /// A minimal reproducing program: the ops that feed the diverging op, as Rust code on the
    /// public API, its inputs written out as `Array::from_slice` of their values.
    pub program: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: `{}` is the first op that differs from its reference (step {} of the fused kernel) at element {}: optimised {}, reference {}",
            self.site, self.op, self.step, self.element, self.optimised, self.reference
        )
    }
}
