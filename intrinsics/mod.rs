//! The intrinsic library (the seed's 700) and its registry: hand-written, non-fusible kernels, one
//! folder per intrinsic (`matmul/`, `gather/`, `concat/`, `transpose/`, `scan/`, `scatter/`:
//! scatter, scatter_add and put_along_axis; `histogram/`: bincount and histogram; `sort/`: sort,
//! argsort, take_along_axis, searchsorted, unique_runs and topk; `linalg/`; `fft/`: fft, rfft
//! and irfft along one axis; `conv/`: the direct convolution). Each folder's `mod.rs`
//! implements [`IntrinsicDef`], the one description of the intrinsic that every stage dispatches
//! through: the front end's checks (`src/frontend/record.rs`), the trace key's words
//! (`src/compile/trace_key.rs`), the reference interpreter and its conditioning (`src/debug/`),
//! the cost estimate, the CPU executor's entry and the GPU executors' plans (`src/exec/`), and the
//! fused-kernel patterns a GPU runs as an intrinsic instead (`IntrinsicDef::recognise`). Beside
//! it lie its kernels per target (`cpu.rs`, `opencl.rs`, `wgsl.rs`). [`cpu`], [`opencl`] and
//! [`wgsl`] hold what every intrinsic shares on a target (type and size limits) and dispatch
//! through the registry. The program generator schedules intrinsics between fused kernels.
//!
//! # Adding an intrinsic
//!
//! A variant of [`Intrinsic`] (`src/ir/op.rs`) with the data that specialises its code, a folder
//! here with the [`IntrinsicDef`] and its kernels, its line in [`REGISTRY`] and [`lookup`], one API
//! method (`src/api/`) that calls `frontend::intrinsic`, and its tests.
//!
//! # Rules for what comes next
//!
//! The intrinsics here have one output and a shape known when they are recorded; some run a few
//! passes (matmul's split `k`, scan's reduce-then-scan, the radix sort's digit passes), and
//! `unique_runs` follows the data-dependent-length rule below with its count in element 0 of its
//! one padded output. The trait is shaped for the others as follows.
//!
//! - **Several outputs** (`lu`, `topk`): [`IntrinsicDef::check`] and [`IntrinsicDef::reference`]
//!   already return one [`Output`] / value per output, [`IntrinsicDef::cpu`] writes `outputs[k]`
//!   and a GPU plan writes `BufArg::Output(k)`. What grows is the IR around them: the front end
//!   records the call as one node (its value is output 0) and one projection node per further
//!   output that reads it; the program generator gives the call one formal per output
//!   (`Program::outputs` is already a list; `IntrinsicCall` grows `out_shapes`/`out_dtypes`), and
//!   [`IntrinsicDef::magnitudes`] is asked per output. Until then the front end refuses a
//!   definition whose check returns more than one output (an internal error).
//!   Meanwhile, results of one element type whose shapes fit side by side are **packed** into
//!   the one output and the API method returns views of it (slices, a cast), which fuse into
//!   what follows: `linalg::lu` records `[.., n, n + 1]` (the factors, then the pivot rows as
//!   values of the float type, exact below 2^24), `lu_unpack` `[.., n, 3n]` (P, L, U),
//!   `slogdet` `[.., 2]` (sign, log |det|), `qr` `[.., m + k, n]` (Q's `k` columns beside
//!   zeros, then R). A packed intrinsic's reference returns the same
//!   packing, so comparison mode checks every part.
//! - **Several passes of generated kernels** (FFT stages, radix-sort digits): one [`GpuPlan`]
//!   with its passes in order and scratch buffers between them (`Pass`, `BufArg::Scratch`), as
//!   matmul's split `k` does; a pass's source is generated from the call's shapes, which are
//!   literals (the trace key holds them, so a plan is rendered once per shape). Passes that
//!   differ only in a constant are separate entries of one source. Nothing in the trait changes.
//! - **Steps on the host** (a factorisation's panel, a pivot search): a GPU plan is device work
//!   only. An intrinsic that needs the host between device passes gets a defaulted method
//!   `gpu_steps(call, target) -> Vec<GpuStep>` (`GpuStep::Device(GpuPlan)` or
//!   `GpuStep::Host(fn)` over host copies of named buffers; the default is one device step from
//!   `opencl`/`wgsl`), and the GPU executor's `DevicePlan` (already a list of steps) runs a host
//!   step on its own thread between Move_Data_Out and Move_Data_In. Until that exists such an
//!   intrinsic returns `Unsupported` from its GPU entries, and the GPU executor's CPU fallback
//!   runs its [`IntrinsicDef::cpu`] entry from host copies: correct, only slower.
//! - **Outputs whose length depends on the data** (`unique`, `nonzero`): every array's shape is
//!   known when it is recorded (fusion, buffer sizes and the trace key depend on it), so `check`
//!   never sees data. Such an intrinsic has two outputs: the values, padded to a bound that
//!   `check` computes from the input shapes (`unique` of `n` elements: `n`), and a `u32` count.
//!   Its API method reads the count (a flush and a wait, like `item()`) and returns the slice
//!   `[..count]` of the values, a view that fuses into what follows. The count read is the API
//!   method's, never the registry's; the padding past the count is unspecified and never read.

pub mod concat;
pub mod conv;
pub mod cpu;
pub mod fault;
pub mod fft;
pub mod gather;
pub mod histogram;
pub mod linalg;
pub mod matmul;
pub mod opencl;
pub mod scan;
pub mod scatter;
pub mod sort;
pub mod transpose;
pub mod wgsl;

use crate::error::{Error, Result};
use crate::ir::TypedVec;
use crate::ir::{DType, Intrinsic, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::kernel::FusedKernel;
use crate::proggen::sequence::IntrinsicCall;

pub use matmul::matmul_split;

/// One input of a call as the front end checks it: its shape and element type.
#[derive(Debug, Clone, Copy)]
pub struct Operand<'a> {
    pub shape: &'a [usize],
    pub dtype: DType,
}

pub use crate::ir::IntrinsicOutput as Output;

/// One input of a call as comparison mode's conditioning sees it: its reference value, shape,
/// and the magnitude each element's allowance scales with (`debug::conditioning`).
pub struct MagInput<'a> {
    pub value: &'a TypedVec,
    pub shape: &'a [usize],
    pub magnitude: &'a [f64],
    /// The input op's allowance as `(scale, floor)`: element `i` may differ by
    /// `scale * magnitude[i] + floor` (infinite where the magnitude is).
    pub tolerance: (f64, f64),
}

/// Work of one call, for the profiler and cost-based choices: arithmetic operations and bytes
/// moved to and from memory (each input read once, each output written once, unless the
/// algorithm says otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    pub flops: u64,
    pub bytes: u64,
}

impl Cost {
    /// A call that only copies: each output element read once and written once.
    pub fn copy(call: &IntrinsicCall) -> Cost {
        Cost {
            flops: 0,
            bytes: 2 * numel(&call.out_shape) * call.dtype.size() as u64,
        }
    }
}

/// Everything about one intrinsic that the stages outside this folder need. `op` is always a
/// variant this definition claims in [`lookup`].
pub trait IntrinsicDef: Sync {
    /// The name in logs, error messages and comparison tolerances.
    fn name(&self) -> &'static str;

    /// Checks a call's inputs (shapes, types, the op's own data such as an axis) and returns its
    /// outputs. Errors are reported at `site`, the user's call site.
    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>>;

    /// Appends the op's data that specialises its code to the trace key (not its name: the key
    /// holds the registry index before these words; not shapes: the key holds them already).
    fn key_words(&self, _op: &Intrinsic, _w: &mut Vec<u64>) {}

    /// The reference result (comparison mode), written independently of the kernels: sequential,
    /// whole arrays, f64 accumulation. `inputs` are the values with their shapes; an error names
    /// what is wrong with the data (an index out of range).
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String>;

    /// The per-element magnitudes of a reference result (`src/debug/conditioning.rs`): how large
    /// a difference of the optimised result the inputs' allowances explain. Default: the
    /// result's own size (no input error carried).
    fn magnitudes(
        &self,
        _op: &Intrinsic,
        _out: &Output,
        _inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        (0..result.len())
            .map(|i| result.get(i).as_f64().abs())
            .collect()
    }

    /// Whether the op only moves data (comparison mode gives its result the allowance of the op
    /// that produced input 0).
    fn moves_data(&self) -> bool {
        false
    }

    /// The public API call that records `op`, as a Rust expression on the inputs' variables
    /// `args` (shapes `shapes`), for the debugger's reproducing programs
    /// (`src/debug/step/repro.rs`); `None` where none is written (the program then says so).
    fn spelling(&self, _op: &Intrinsic, _args: &[String], _shapes: &[&[usize]]) -> Option<String> {
        None
    }

    /// Whether the intrinsic takes complex inputs (`Complex<f32>`, `Complex<f64>`); the front end
    /// refuses complex arrays for the others before their check.
    fn accepts_complex(&self) -> bool {
        false
    }

    /// The work of one call.
    fn cost(&self, call: &IntrinsicCall) -> Cost;

    /// Runs the call on the CPU: `inputs` as the call lists them, `outputs` allocated with their
    /// types and lengths.
    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error>;

    /// The OpenCL plan of the call (the target's shared limits are checked by [`opencl::render`]
    /// first). `Unsupported` runs the call on the CPU instead.
    fn opencl(
        &self,
        call: &IntrinsicCall,
        _t: Target,
    ) -> std::result::Result<GpuPlan, Unsupported> {
        Err(Unsupported(format!(
            "{} has no OpenCL kernel",
            call.op.name()
        )))
    }

    /// The WGSL plan of the call (the target's shared limits are checked by [`wgsl::render`]
    /// first). `Unsupported` runs the call on the CPU instead.
    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        Err(Unsupported(format!(
            "{} has no WGSL kernel",
            call.op.name()
        )))
    }

    /// A fused kernel this intrinsic computes better on a GPU (the call that replaces it, with the
    /// kernel's input 0.. and output 0.. as its inputs and outputs). The front end never records
    /// such an intrinsic; the GPU executors ask every definition before rendering a fused kernel.
    fn recognise(&self, _k: &FusedKernel) -> Option<IntrinsicCall> {
        None
    }
}

/// The rows a call along `axis` of `shape` walks (sorts, scans): row `r = p * post + q` holds the `dim` elements
/// `(p * dim + j) * post + q`, `j = 0 .. dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub pre: usize,
    pub dim: usize,
    pub post: usize,
}

impl Rows {
    /// The rows of `shape` along `axis` (which the caller checked).
    pub fn of(shape: &[usize], axis: usize) -> Rows {
        Rows {
            pre: shape[..axis].iter().product(),
            dim: shape[axis],
            post: shape[axis + 1..].iter().product(),
        }
    }
    /// How many rows.
    pub fn count(&self) -> usize {
        self.pre * self.post
    }
    /// Elements in all rows.
    pub fn numel(&self) -> usize {
        self.pre * self.dim * self.post
    }
    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.numel() == 0
    }
    /// The linear index of element `j` of row `r`.
    pub fn at(&self, r: usize, j: usize) -> usize {
        ((r / self.post) * self.dim + j) * self.post + r % self.post
    }
}

/// Every intrinsic, in the order of [`lookup`]'s indices (the trace key holds the index).
pub static REGISTRY: [&dyn IntrinsicDef; 33] = [
    &matmul::Matmul,
    &gather::Gather,
    &concat::Concat,
    &transpose::Transpose,
    &scatter::ScatterDef(scatter::Kind::Replace),
    &scatter::ScatterDef(scatter::Kind::Add),
    &scatter::ScatterDef(scatter::Kind::Along),
    &histogram::Bincount,
    &histogram::Histogram,
    &scan::Scan,
    &sort::Sort,
    &sort::Argsort,
    &sort::TakeAlongAxis,
    &sort::SearchSorted,
    &sort::UniqueRuns,
    &sort::Topk,
    &linalg::lu::LuDef("lu"),
    &linalg::lu::LuDef("lu_unpack"),
    &linalg::lu::LuDef("lu_solve"),
    &linalg::lu::LuDef("lu_cond"),
    &linalg::lu::LuDef("solve"),
    &linalg::lu::LuDef("inv"),
    &linalg::lu::LuDef("det"),
    &linalg::lu::LuDef("slogdet"),
    &linalg::cholesky::CholeskyDef("cholesky"),
    &linalg::cholesky::CholeskyDef("cholesky_solve"),
    &linalg::triangular::TriangularSolveDef,
    &linalg::qr::QrDef("qr"),
    &linalg::qr::QrDef("lstsq"),
    &fft::FftDef("fft"),
    &fft::FftDef("rfft"),
    &fft::FftDef("irfft"),
    &conv::ConvDef,
];

/// The registry index of `op`'s definition.
pub fn lookup(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Matmul { .. } => 0,
        Intrinsic::Gather { .. } => 1,
        Intrinsic::Concat { .. } => 2,
        Intrinsic::Transpose { .. } => 3,
        Intrinsic::Scatter { .. } => 4,
        Intrinsic::ScatterAdd { .. } => 5,
        Intrinsic::PutAlongAxis { .. } => 6,
        Intrinsic::Bincount { .. } => 7,
        Intrinsic::Histogram { .. } => 8,
        Intrinsic::Scan { .. } => 9,
        Intrinsic::Sort { .. } => 10,
        Intrinsic::Argsort { .. } => 11,
        Intrinsic::TakeAlongAxis { .. } => 12,
        Intrinsic::SearchSorted { .. } => 13,
        Intrinsic::UniqueRuns => 14,
        Intrinsic::Topk { .. } => 15,
        Intrinsic::Lu => 16,
        Intrinsic::LuUnpack => 17,
        Intrinsic::LuSolve => 18,
        Intrinsic::LuCond => 19,
        Intrinsic::Solve => 20,
        Intrinsic::Inv => 21,
        Intrinsic::Det => 22,
        Intrinsic::Slogdet => 23,
        Intrinsic::Cholesky => 24,
        Intrinsic::CholeskySolve => 25,
        Intrinsic::TriangularSolve { .. } => 26,
        Intrinsic::Qr => 27,
        Intrinsic::Lstsq => 28,
        Intrinsic::Fft { .. } => 29,
        Intrinsic::Rfft { .. } => 30,
        Intrinsic::Irfft { .. } => 31,
        Intrinsic::Convolve { .. } => 32,
    }
}

/// The definition of `op`.
pub fn def(op: &Intrinsic) -> &'static dyn IntrinsicDef {
    REGISTRY[lookup(op)]
}

/// The call that replaces fused kernel `k` on a GPU, when an intrinsic recognises it.
pub fn recognise(k: &FusedKernel) -> Option<IntrinsicCall> {
    REGISTRY.iter().find_map(|d| d.recognise(k))
}

/// The one output of a definition's check (several outputs are not recorded yet: see the rules
/// above).
pub(crate) fn single(op: &Intrinsic, mut outs: Vec<Output>, site: Site) -> Result<Output> {
    if outs.len() != 1 {
        return Err(Error::new(
            crate::error::ErrorKind::Runtime,
            format!(
                "internal error: {} has {} outputs; the front end records one",
                op.name(),
                outs.len()
            ),
        )
        .at(site));
    }
    Ok(outs.pop().expect("one output"))
}

/// Elements of a shape.
pub(crate) fn numel(shape: &[usize]) -> u64 {
    shape.iter().product::<usize>() as u64
}

/// The registry implements what `ir` only names: each intrinsic's definition, its name and
/// whether it moves data. Lower layers (the IR, the reference interpreter, conditioning) reach a
/// definition through the op (`op.def()`) without importing the registry.
impl Intrinsic {
    /// The intrinsic's definition in the registry.
    pub fn def(&self) -> &'static dyn IntrinsicDef {
        def(self)
    }
    /// The name in logs, error messages and comparison tolerances.
    pub fn name(&self) -> &'static str {
        self.def().name()
    }
    /// Whether the intrinsic only moves data (its result's elements are input elements).
    pub fn moves_data(&self) -> bool {
        self.def().moves_data()
    }
}

/// An intrinsic that moves data: the magnitudes in `parts` (in place of its data inputs) move
/// through its reference as the data does.
pub fn moved_by(
    op: &Intrinsic,
    out: &Output,
    parts: &[(&TypedVec, &[usize])],
    result: &TypedVec,
) -> Vec<f64> {
    let out = Output {
        shape: out.shape.clone(),
        dtype: DType::F64,
    };
    match op.def().reference(op, parts, &[out]) {
        Ok(mut m) => match m.swap_remove(0) {
            TypedVec::F64(m) => m,
            _ => (0..result.len())
                .map(|i| result.get(i).as_f64().abs())
                .collect(),
        },
        _ => (0..result.len())
            .map(|i| result.get(i).as_f64().abs())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_each_definition_once() {
        let ops = [
            (
                Intrinsic::Matmul {
                    trans_a: false,
                    trans_b: true,
                },
                "matmul",
            ),
            (Intrinsic::Gather { axis: 1 }, "gather"),
            (Intrinsic::Concat { axis: 0 }, "concat"),
            (Intrinsic::Transpose { offset: 3 }, "transpose"),
            (Intrinsic::Scatter { axis: 0 }, "scatter"),
            (Intrinsic::ScatterAdd { axis: 1 }, "scatter_add"),
            (Intrinsic::PutAlongAxis { axis: 0 }, "put_along_axis"),
            (Intrinsic::Bincount { length: 4 }, "bincount"),
            (Intrinsic::Histogram { bins: 4 }, "histogram"),
            (
                Intrinsic::Scan {
                    op: crate::ir::ReduceOp::Sum,
                    axis: 0,
                },
                "scan",
            ),
            (
                Intrinsic::Sort {
                    axis: 0,
                    descending: false,
                },
                "sort",
            ),
            (
                Intrinsic::Argsort {
                    axis: 1,
                    descending: true,
                },
                "argsort",
            ),
            (Intrinsic::TakeAlongAxis { axis: 0 }, "take_along_axis"),
            (Intrinsic::SearchSorted { right: true }, "searchsorted"),
            (Intrinsic::UniqueRuns, "unique_runs"),
            (Intrinsic::Topk { axis: 0, k: 3 }, "topk"),
            (Intrinsic::Lu, "lu"),
            (Intrinsic::LuUnpack, "lu_unpack"),
            (Intrinsic::LuSolve, "lu_solve"),
            (Intrinsic::LuCond, "lu_cond"),
            (Intrinsic::Solve, "solve"),
            (Intrinsic::Inv, "inv"),
            (Intrinsic::Det, "det"),
            (Intrinsic::Slogdet, "slogdet"),
            (Intrinsic::Cholesky, "cholesky"),
            (Intrinsic::CholeskySolve, "cholesky_solve"),
            (
                Intrinsic::TriangularSolve {
                    upper: true,
                    unit_diagonal: false,
                },
                "triangular_solve",
            ),
            (Intrinsic::Qr, "qr"),
            (Intrinsic::Lstsq, "lstsq"),
            (
                Intrinsic::Fft {
                    axis: 0,
                    n: 8,
                    inverse: true,
                    norm: crate::ir::FftNorm::Ortho,
                },
                "fft",
            ),
            (
                Intrinsic::Rfft {
                    axis: 1,
                    n: 5,
                    norm: crate::ir::FftNorm::Backward,
                },
                "rfft",
            ),
            (
                Intrinsic::Irfft {
                    axis: 0,
                    n: 6,
                    norm: crate::ir::FftNorm::Forward,
                },
                "irfft",
            ),
            (
                Intrinsic::Convolve {
                    rank: 2,
                    mode: crate::ir::ConvMode::Same,
                },
                "convolve",
            ),
        ];
        assert_eq!(ops.len(), REGISTRY.len());
        let mut seen = Vec::new();
        for (op, name) in &ops {
            assert_eq!(def(op).name(), *name);
            assert!(!seen.contains(&lookup(op)));
            seen.push(lookup(op));
        }
    }
}
