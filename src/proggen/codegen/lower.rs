//! The target-neutral GPU lowering of a fused kernel, computed once for both GPU printers
//! (`opencl.rs`, `wgsl.rs`): the register program with its index maps, generators and fault
//! codes in neutral form ([`Step`]), the element-wise domain and its vectorisation or the
//! reduction's work split ([`Layout`]), the reductions' accumulators and partials
//! ([`Reduction`]), the scratch buffers and fault slot, and the passes with their buffers
//! ([`PassPlan`]). The printers add only syntax: type names, declarations, the loops that walk
//! the [`Layout`], and their library (OpenCL's prelude, WGSL's item selection).
//!
//! What differs between targets is data, not code: a printer passes its [`Policy`] (work-group
//! size, unrolling, when quads are taken, how reductions are split, which buffers a pass binds).

use super::gpu::{BufArg, GpuPlan, Pass, Ranged, Target, elem_bytes};
use crate::ir::{
    BinaryOp, DType, GenKind, RandomDist, ReduceOp, RngAlgorithm, UnaryOp, contiguous_strides,
};
use crate::proggen::kernel::{Fold, FusedKernel, IndexMap, Instr, Reg};

/// How a target lays kernels out (the printer's constants and tuning).
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Work-group size of every pass.
    pub local: u64,
    /// Most work-groups a pass launches (grid-stride loops cover the rest).
    pub max_groups: u64,
    /// Elements a thread takes per loop trip (scalar element-wise loops, reduction lanes).
    pub unroll: u64,
    /// The element-wise quad form, when the target takes it (`None`: always the scalar form).
    pub quads: Option<QuadPolicy>,
    /// How reductions are split.
    pub reduce: ReducePolicy,
    /// Which buffers each pass binds, in which order.
    pub binding: Binding,
    /// Bools are stored as one 32-bit word (WGSL) rather than one byte (sizes of scratch).
    pub word_bools: bool,
}

/// When and how element-wise kernels take quads (four consecutive elements per vector access).
#[derive(Debug, Clone, Copy)]
pub struct QuadPolicy {
    /// Quads per thread and main-loop trip.
    pub per_trip: u64,
    /// Most work-groups of a quad pass.
    pub max_groups: u64,
    /// The printer mixes quads with other accesses: the last `len % 4` elements take the scalar
    /// body, loads through other maps stay scalar, and reductions read quads too. Without it a
    /// kernel takes quads only when its length is a positive multiple of 4 and every load reads
    /// a 4-byte input in place (and it has no reduction).
    pub mixed: bool,
}

/// How a reduction's extent is split over threads and work-groups.
#[derive(Debug, Clone, Copy)]
pub struct ReducePolicy {
    /// Extents of at most this many elements run one thread per result ([`Layout::Rows`]).
    pub row_max: Option<usize>,
    /// About how many elements each thread of a result takes (threads per result a power of
    /// two, at most a work-group); `None`: a whole work-group per result.
    pub elements_per_thread: Option<u64>,
    /// About how many work-groups a large reduction aims for (when there are few results).
    pub target_groups: u64,
    /// Fewest elements a work-group reduces before the extent is cut into more chunks.
    pub min_chunk: u64,
    /// Chunks of an extent that is a multiple of 4 are multiples of 4 (quads stay whole), and the
    /// chunks are recounted from their length.
    pub quad_chunks: bool,
}

/// Which buffers a pass binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// The first pass binds every input, output and scratch buffer (and the parameters when the
    /// kernel has any); the final pass each reduction's output, then its partials.
    Every,
    /// Only the buffers a pass touches: loaded inputs, stored outputs, then the reductions'
    /// outputs or partials, then the fault word (the parameters when an instruction reads them);
    /// the final pass each reduction's partials, then its output.
    Used,
}

/// How the domain is spread over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Element-wise over quads: quad `q` is elements `4q .. 4q + 3`; the last `len % 4` elements
    /// (only with [`QuadPolicy::mixed`]) take the scalar body.
    Quads {
        /// Whole quads of the domain.
        quads: u64,
        /// Quads per thread and main-loop trip.
        per_trip: u64,
        /// Work-groups of the pass.
        groups: u32,
        /// One quad per thread and a thread per quad: no loop is needed.
        one_trip: bool,
    },
    /// Element-wise, [`Policy::unroll`] elements a global size apart per loop trip.
    Scalar {
        /// Work-groups of the pass.
        groups: u32,
    },
    /// Reductions: one thread per result walks its whole row.
    Rows {
        /// Work-groups of the pass.
        groups: u32,
    },
    /// Reductions over threads and work-groups.
    Reduce(ReduceLayout),
}

/// The split of a reduction: `threads` per result (a power of two dividing the work-group, so a
/// group serves `local / threads` results), and per result `chunks` chunks of `chunk` elements,
/// a work-group slot per (results, chunk): slot `g` serves results `(g / chunks) * (local /
/// threads) ..` over chunk `g % chunks`. With `chunks > 1` the first pass writes partials at
/// `o * chunks + c` and a final pass (a work-group per result) combines them.
///
/// The column layout is `threads == 1` with `chunks >= 1` (see [`columns`]): a thread per result,
/// adjacent threads on adjacent results, each walking its chunk of the reduced extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReduceLayout {
    /// Threads per result (1: the column layout, or an OpenCL reduction over a short extent).
    pub threads: u64,
    /// Chunks per result.
    pub chunks: u64,
    /// Elements per chunk (the last may be shorter).
    pub chunk: u64,
    /// Work-group slots of the first pass.
    pub slots: u64,
    /// Work-groups of the first pass.
    pub groups: u32,
    /// Threads per result of the final pass (a power of two dividing the work-group, so a group
    /// combines the partials of `local / final_threads` results): the work-group for the row
    /// layouts, about one per [`COLUMN_FINAL_PARTIALS`] partials for the column layout.
    pub final_threads: u64,
    /// Work-groups of the final pass.
    pub final_groups: u32,
    /// The threads read quads of the inputs read in place (the extent and chunks are multiples
    /// of 4).
    pub quads: bool,
}

/// An index a buffer or generator is read at, for the current element (`lin`, its linear
/// index, and `d{k}`, its coordinates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Index {
    /// `lin`.
    Lin,
    /// An affine function of the coordinates.
    Affine(Affine),
    /// `sum (fold(affine) * stride)`: positions folded back into an axis (tile, roll, pad).
    Folded(Vec<FoldedTerm>),
}

/// `offset + sum coef * d{axis}` over the terms (coefficients non-zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affine {
    /// The constant term.
    pub offset: isize,
    /// `(axis, coef)` pairs, by axis.
    pub terms: Vec<(usize, isize)>,
}

/// One term of a folded index: `folds(at) * stride`, the folds applied in order (each
/// `a + b * mode(v)` into `0..n`: [`Fold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedTerm {
    /// The affine position before the folds.
    pub at: Affine,
    /// The folds, innermost first.
    pub folds: Vec<Fold>,
    /// For each fold, whether its input stays within a period of its range (`FoldedDim::near`).
    pub near: Vec<bool>,
    /// The factor of the folded position in the index.
    pub stride: usize,
}

/// A position-dependent generator's value at an index of its own shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// `(g / div) % extent` (the extent as the shape has it, possibly 0).
    Iota { div: usize, extent: usize },
    /// `(g / n) == (g % n)` (`n` the matrix's columns, possibly 0).
    Identity { n: usize },
    /// `start + step * g`, exactly `end` at `g = n - 1`.
    Linspace {
        start: f64,
        step: f64,
        end: f64,
        n: usize,
    },
    /// Random draws with the key, first counter and range baked in.
    Random {
        alg: RngAlgorithm,
        key: [u32; 2],
        counter: u64,
        dist: RandomDist,
        range: u32,
    },
}

/// How a domain coordinate is computed: `d{k} = (of / div) % extent`, without the modulus when
/// `extent` is `None` (the quotient is below the axis's extent already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coord {
    /// The index it is taken from.
    pub of: CoordOf,
    /// The divisor (at least 1).
    pub div: usize,
    /// The axis's extent (at least 1), when the modulus is needed.
    pub extent: Option<usize>,
}

/// The index a [`Coord`] is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordOf {
    /// The element's linear index in the domain (`lin`): element-wise kernels.
    Lin,
    /// The result's index (`o`): a kept axis of a reduction (constant along a result's walk, so
    /// the compiler computes it once per result).
    Result,
    /// The element's index in the reduced extent (OpenCL `jj`, WGSL `i`): a reduced axis of a
    /// reduction (with one reduced axis, the index itself).
    Element,
}

/// The number of leading domain axes a reduction keeps: the reduced axes are the shortest tail of
/// the domain whose extents multiply to `inner` (axes of extent 1 may fall on either side), or
/// `None` when no tail does (an empty extent).
fn kept_axes(shape: &[usize], inner: usize) -> Option<usize> {
    let (mut m, mut p) = (shape.len(), 1usize);
    while m > 0 && p < inner {
        m -= 1;
        p *= shape[m];
    }
    (p == inner).then_some(m)
}

/// How each domain coordinate of `k` is computed: from `lin` for element-wise kernels (and
/// reductions whose axes cannot be told apart), from the result's index for a reduction's kept
/// axes and from the element's index within the reduced extent for its reduced axes.
fn coords(k: &FusedKernel) -> Vec<Coord> {
    let (shape, inner) = (&k.domain.shape, k.domain.inner);
    let cs = contiguous_strides(shape);
    let split = if k.reductions.is_empty() {
        None
    } else {
        kept_axes(shape, inner)
    };
    (0..shape.len())
        .map(|a| {
            // The axes before `a` within the index it is taken from.
            let (of, div, from) = match split {
                Some(m) if a < m => (CoordOf::Result, cs[a] / inner, 0),
                Some(m) => (CoordOf::Element, cs[a], m),
                None => (CoordOf::Lin, cs[a], 0),
            };
            let first = shape[from..a].iter().all(|&n| n == 1);
            Coord {
                of,
                div: div.max(1),
                extent: (!first).then_some(shape[a].max(1)),
            }
        })
        .collect()
}

/// One instruction of the register program.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The register written.
    pub dst: Reg,
    /// The type of `dst`.
    pub ty: DType,
    /// What it computes.
    pub op: StepOp,
    /// For an instruction that may fault (integer division): the fault word's value, `1 + i`
    /// for instruction `i`.
    pub fault: Option<u32>,
    /// Trap checks on `dst` (`crate::debug::trap`), each with its number in the kernel's
    /// checks: a failing value raises the fault word (and, with [`Lowered::first`], the
    /// first-failing word, `crate::debug::trap::device`).
    pub traps: Vec<(u32, crate::debug::trap::TrapCheck)>,
    /// The instruction's operand registers and types (what a NaN/Inf trap looks at).
    pub operands: Vec<(Reg, DType)>,
}

/// What a [`Step`] computes.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOp {
    /// Input `input` at index `at`.
    Load { input: u32, at: Index },
    /// The constant in parameter `slot`.
    Param { slot: u32 },
    /// Random draws, key, counter and an integer draw's range in parameters.
    Random {
        alg: RngAlgorithm,
        dist: RandomDist,
        key_slot: u32,
        counter_slot: u32,
        range_slot: Option<u32>,
        at: Index,
    },
    /// A generator's value at index `at` of its own shape.
    Gen { generator: Generator, at: Index },
    /// `op` on `a` of type `ty`.
    Unary { op: UnaryOp, a: Reg, ty: DType },
    /// `op` on `a`, `b` of type `ty`.
    Binary {
        op: BinaryOp,
        a: Reg,
        b: Reg,
        ty: DType,
    },
    /// `cond ? a : b`.
    Select { cond: Reg, a: Reg, b: Reg },
    /// `a` of type `from` converted to `to`.
    Cast { a: Reg, from: DType, to: DType },
}

/// One reduction of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reduction {
    /// The reduction.
    pub op: ReduceOp,
    /// The register reduced over the extent.
    pub reg: Reg,
    /// The reduced register's type.
    pub value: DType,
    /// The type it accumulates in: the register's, except f32 sums and products, which
    /// accumulate in f64 where the target computes f64 (as the CPU does).
    pub acc: DType,
    /// The output it writes (one element per result).
    pub output: u32,
    /// The output's element type.
    pub out: DType,
    /// With `chunks > 1`: its value partials' scratch buffer and, for argmax/argmin, its index
    /// partials'.
    pub partials: Option<(u32, Option<u32>)>,
}

impl Reduction {
    /// argmax/argmin (they carry an index).
    pub fn is_arg(&self) -> bool {
        matches!(self.op, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

/// A pass to dispatch: as [`super::gpu::Pass`], without the source's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassPlan {
    /// The entry point's name (`af_kernel`, `af_final`).
    pub entry: &'static str,
    /// The buffers it binds, in binding order.
    pub buffers: Vec<BufArg>,
    /// Whether it takes the kernel's parameters.
    pub params: bool,
    /// Work-groups (1-D).
    pub groups: u32,
}

/// A fused kernel lowered for a GPU target.
#[derive(Debug, Clone)]
pub struct Lowered<'k> {
    /// The kernel (its types, stores and parameters, as the printers need them).
    pub k: &'k FusedKernel,
    /// How the domain is spread over threads.
    pub layout: Layout,
    /// The register program, in order.
    pub steps: Vec<Step>,
    /// Per domain axis, how its coordinate `d{k}` is computed, when some map reads coordinates.
    pub coords: Option<Vec<Coord>>,
    /// Inputs some load reads, each once, in order.
    pub loaded: Vec<u32>,
    /// Inputs some load reads in place (contiguously), each once, in order (vector-loaded in the
    /// quad forms).
    pub in_place: Vec<u32>,
    /// Outputs the element-wise stores write, each once, in order.
    pub stored: Vec<u32>,
    /// The reductions, in the kernel's order.
    pub reductions: Vec<Reduction>,
    /// Parameter slots the constants read, each once, in instruction order, with their types.
    pub const_slots: Vec<(u32, DType)>,
    /// Some instruction reads parameters.
    pub reads_params: bool,
    /// Bytes of each scratch buffer.
    pub scratch: Vec<u64>,
    /// The fault word's scratch buffer, when an instruction may fault.
    pub fault: Option<u32>,
    /// With trap checks whose keys fit (`crate::debug::trap::device`): the number of checks;
    /// the fault buffer then has a second word, the first failing element and check.
    pub first: Option<u32>,
    /// The passes to dispatch, in order: `af_kernel`, then `af_final` for chunked reductions.
    pub passes: Vec<PassPlan>,
    /// A kernel with trap checks ([`ranged`]): `af_kernel` runs a range of its units only (an
    /// element-wise kernel's elements, a reduction's work-group slots or, in the rows layout,
    /// results; [`GpuPlan::range`]), two parameter slots after the kernel's own (`k.params.len()`
    /// and the next), so a launch in resumable passes (`crate::debug::trap::passes`) dispatches
    /// the same program once per pass; a whole launch binds `0 .. units`. Element-wise, such
    /// kernels take the scalar layout, whose grid-stride loop takes any range and any number of
    /// work-groups; a reduction's slot loop takes any range as it is.
    pub range: bool,
}

/// Whether `k` is lowered with a unit range ([`Lowered::range`]): it has trap checks.
pub fn ranged(k: &FusedKernel) -> bool {
    !k.traps.is_empty()
}

/// The units of a ranged kernel (`l.range`) under layout `layout` with work-groups of `local`:
/// elements; results of the rows layout (a thread walks a result's row); the work-group slots of
/// the reduction layouts, slot `g` serving results block `g / chunks` over chunk `g % chunks`,
/// so consecutive slots cover consecutive elements when a block is one result, and whole blocks
/// (`chunks` slots) do otherwise.
fn range_of(k: &FusedKernel, layout: &Layout, local: u64) -> Ranged {
    let (outer, inner) = (k.domain.outer as u64, k.domain.inner as u64);
    let (units, elements, align) = match *layout {
        Layout::Quads { .. } | Layout::Scalar { .. } => (k.domain.len() as u64, 1, 1),
        Layout::Rows { .. } => (outer, inner, 1),
        Layout::Reduce(r) => {
            let per = local / r.threads;
            if per == 1 {
                (r.slots, r.chunk, 1)
            } else {
                (r.slots, (per * inner).div_ceil(r.chunks), r.chunks)
            }
        }
    };
    Ranged {
        slot: k.params.len() as u32,
        units,
        elements: elements.max(1),
        align: align.max(1),
    }
}

impl Lowered<'_> {
    /// Whether any instruction may fault.
    pub fn faults(&self) -> bool {
        self.fault.is_some()
    }
    /// The reduction whose partials scratch buffer `s` holds, and whether they are its indices
    /// (argmax/argmin) rather than its values.
    pub fn partials_in(&self, s: u32) -> Option<(usize, bool)> {
        self.reductions
            .iter()
            .enumerate()
            .find_map(|(ri, r)| match r.partials {
                Some((v, _)) if v == s => Some((ri, false)),
                Some((_, Some(i))) if i == s => Some((ri, true)),
                _ => None,
            })
    }
}

/// The neutral form of an index map.
fn index(map: &IndexMap, domain: &[usize]) -> Index {
    let affine = |offset: isize, coef: &[isize]| Affine {
        offset,
        terms: coef
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(k, c)| (k, *c))
            .collect(),
    };
    match map {
        IndexMap::Contiguous => Index::Lin,
        IndexMap::Strided { offset, strides } => Index::Affine(affine(*offset, strides)),
        IndexMap::Folded { dims } => Index::Folded(
            dims.iter()
                .map(|d| FoldedTerm {
                    at: affine(d.offset, &d.coef),
                    folds: d.folds.to_vec(),
                    near: d.near(domain).to_vec(),
                    stride: d.stride,
                })
                .collect(),
        ),
    }
}

fn generator(kind: &GenKind, shape: &[usize]) -> Generator {
    match *kind {
        GenKind::Iota { axis } => Generator::Iota {
            div: contiguous_strides(shape)[axis],
            extent: shape[axis],
        },
        GenKind::Identity => Generator::Identity { n: shape[1] },
        GenKind::Linspace {
            start,
            step,
            end,
            n,
        } => Generator::Linspace {
            start,
            step,
            end,
            n,
        },
        GenKind::Random {
            alg,
            key,
            counter,
            dist,
            range,
        } => Generator::Random {
            alg,
            key,
            counter,
            dist,
            range,
        },
    }
}

/// Whether `op` on `ty` may fault (integer division by zero).
pub fn may_fault(op: BinaryOp, ty: DType) -> bool {
    ty.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod)
}

fn steps(k: &FusedKernel) -> Vec<Step> {
    let ty = |r: Reg| k.reg_dtypes[r as usize];
    k.instrs
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            let mut fault = None;
            let op = match ins {
                Instr::Load { input, map, .. } => StepOp::Load {
                    input: *input,
                    at: index(map, &k.domain.shape),
                },
                Instr::Const { slot, .. } => StepOp::Param { slot: *slot },
                Instr::Random {
                    alg,
                    dist,
                    key_slot,
                    counter_slot,
                    range_slot,
                    map,
                    ..
                } => StepOp::Random {
                    alg: *alg,
                    dist: *dist,
                    key_slot: *key_slot,
                    counter_slot: *counter_slot,
                    range_slot: *range_slot,
                    at: index(map, &k.domain.shape),
                },
                Instr::Gen {
                    kind, shape, map, ..
                } => StepOp::Gen {
                    generator: generator(kind, shape),
                    at: index(map, &k.domain.shape),
                },
                Instr::Unary { op, a, .. } => StepOp::Unary {
                    op: *op,
                    a: *a,
                    ty: ty(*a),
                },
                Instr::Binary { op, a, b, .. } => {
                    if may_fault(*op, ty(*a)) {
                        fault = Some(i as u32 + 1);
                    }
                    StepOp::Binary {
                        op: *op,
                        a: *a,
                        b: *b,
                        ty: ty(*a),
                    }
                }
                Instr::Select { cond, a, b, .. } => StepOp::Select {
                    cond: *cond,
                    a: *a,
                    b: *b,
                },
                Instr::Cast { to, a, .. } => StepOp::Cast {
                    a: *a,
                    from: ty(*a),
                    to: *to,
                },
            };
            Step {
                dst: ins.dst(),
                ty: ty(ins.dst()),
                op,
                fault,
                traps: k
                    .traps
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.instr as usize == i)
                    .map(|(c, t)| (c as u32, t.clone()))
                    .collect(),
                operands: ins.srcs().iter().map(|&r| (r, ty(r))).collect(),
            }
        })
        .collect()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether an element-wise kernel takes quads under `q`.
fn quads_fit(k: &FusedKernel, q: &QuadPolicy, p: &Policy) -> bool {
    if q.mixed {
        return true;
    }
    let four = |d: DType| elem_bytes(d, p.word_bools) == 4;
    let len = k.domain.len();
    len >= 4
        && len.is_multiple_of(4)
        && k.stores.iter().all(|s| four(k.outputs[s.output as usize]))
        && k.instrs.iter().all(|ins| match ins {
            Instr::Load { input, map, .. } => {
                *map == IndexMap::Contiguous && four(k.inputs[*input as usize])
            }
            _ => true,
        })
}

/// Work-groups for `n` threads of `local` each, at most `max`.
fn groups(n: u64, local: u64, max: u64) -> u32 {
    n.div_ceil(local).min(max) as u32
}

/// Fewest adjacent results for the column layout: the extent of the domain's last kept axis (a
/// warp's 32 loads of a step then fall in one 128-byte line of f32).
pub const COLUMN_MIN_RUN: usize = 32;

/// Fewest elements of the reduced extent per chunk of the column layout (each chunk costs a
/// partial per result, written and read again: 4 / chunk of the input's bytes for f32 into f64).
pub const COLUMN_MIN_CHUNK: u64 = 64;

/// About how many partials each thread of a column layout's final pass combines (its results
/// are many, their chunks few: a work-group per result would mostly wait at its tree).
pub const COLUMN_FINAL_PARTIALS: u64 = 8;

/// Whether reduction kernel `k` takes the column layout: a thread per result, adjacent threads on
/// adjacent results. The rule, from the loads' index maps: take the domain's last kept axis and
/// its innermost reduced axis (each the last of its part with extent > 1; the reduced axes are
/// the shortest tail of the domain whose extents multiply to `inner`). Every buffer load reads
/// that kept axis with stride 0 or ±1 (adjacent results read adjacent addresses, or one address),
/// and at least one reads it with stride ±1 and the reduced axis with a stride other than ±1 (a
/// thread walking its row would skip through memory: a column sum, `sum_axis(0)`). Also: the kept
/// axis has at least [`COLUMN_MIN_RUN`] elements, the kernel stores nothing element-wise (stores
/// are at the domain's own index, which the walk would scatter) and no load is folded.
pub fn columns(k: &FusedKernel) -> bool {
    let (shape, inner) = (&k.domain.shape, k.domain.inner);
    if k.reductions.is_empty() || !k.stores.is_empty() || inner <= 1 || k.domain.outer == 0 {
        return false;
    }
    let Some(m) = kept_axes(shape, inner) else {
        return false;
    };
    let (Some(kept), Some(reduced)) = (
        (0..m).rev().find(|&a| shape[a] > 1),
        (m..shape.len()).rev().find(|&a| shape[a] > 1),
    ) else {
        return false;
    };
    if shape[kept] < COLUMN_MIN_RUN {
        return false;
    }
    let cs = contiguous_strides(shape);
    let mut across = false;
    for ins in &k.instrs {
        let Instr::Load { map, .. } = ins else {
            continue;
        };
        let (sk, sr) = match map {
            IndexMap::Contiguous => (cs[kept] as isize, cs[reduced] as isize),
            IndexMap::Strided { strides, .. } => {
                let at = |a: usize| strides.get(a).copied().unwrap_or(0);
                (at(kept), at(reduced))
            }
            IndexMap::Folded { .. } => return false,
        };
        if sk.unsigned_abs() > 1 {
            return false;
        }
        across |= sk.unsigned_abs() == 1 && sr.unsigned_abs() != 1;
    }
    across
}

fn layout(k: &FusedKernel, p: &Policy) -> Layout {
    let (outer, inner, len) = (
        k.domain.outer as u64,
        k.domain.inner as u64,
        k.domain.len() as u64,
    );
    if k.reductions.is_empty() {
        // A ranged kernel takes the scalar loop (any range, any number of work-groups).
        let quads = p.quads.filter(|q| !ranged(k) && quads_fit(k, q, p));
        return match quads {
            Some(q) => {
                let quads = len / 4;
                let groups = quads
                    .max(1)
                    .div_ceil(p.local * q.per_trip)
                    .min(q.max_groups);
                Layout::Quads {
                    quads,
                    per_trip: q.per_trip,
                    groups: groups as u32,
                    one_trip: q.per_trip == 1 && groups * p.local >= quads,
                }
            }
            None => Layout::Scalar {
                groups: groups(len, p.local * p.unroll, p.max_groups),
            },
        };
    }
    let r = &p.reduce;
    if columns(k) {
        // A thread per result; the extent cut into chunks so that the threads of all chunks
        // (`local` per work-group, results beyond `outer` idle) reach the target's groups' worth.
        let wanted = (r.target_groups * p.local)
            .div_ceil(outer)
            .min(inner / COLUMN_MIN_CHUNK)
            .max(1);
        let chunk = inner.div_ceil(wanted);
        let chunks = inner.div_ceil(chunk);
        let slots = outer.div_ceil(p.local) * chunks;
        let final_threads = chunks
            .div_ceil(COLUMN_FINAL_PARTIALS)
            .next_power_of_two()
            .min(p.local);
        return Layout::Reduce(ReduceLayout {
            threads: 1,
            chunks,
            chunk,
            slots,
            groups: slots.min(p.max_groups) as u32,
            final_threads,
            final_groups: outer.div_ceil(p.local / final_threads).min(p.max_groups) as u32,
            quads: false,
        });
    }
    if r.row_max.is_some_and(|m| inner as usize <= m) {
        return Layout::Rows {
            groups: groups(outer, p.local, p.max_groups),
        };
    }
    let threads = r.elements_per_thread.map_or(p.local, |e| {
        inner.div_ceil(e).next_power_of_two().min(p.local)
    });
    let wanted = if threads == p.local {
        r.target_groups
            .div_ceil(outer.max(1))
            .min(inner.div_ceil(r.min_chunk))
            .max(1)
    } else {
        1
    };
    let mut chunk = inner.div_ceil(wanted);
    let mut chunks = wanted;
    if r.quad_chunks {
        if inner.is_multiple_of(4) {
            chunk = chunk.next_multiple_of(4);
        }
        chunks = inner.div_ceil(chunk.max(1)).max(1);
    }
    let slots = outer.div_ceil(p.local / threads) * chunks;
    Layout::Reduce(ReduceLayout {
        threads,
        chunks,
        chunk,
        slots,
        groups: slots.min(p.max_groups) as u32,
        final_threads: p.local,
        final_groups: outer.min(p.max_groups) as u32,
        quads: p.quads.is_some_and(|q| q.mixed)
            && inner.is_multiple_of(4)
            && chunk.is_multiple_of(4),
    })
}

/// Lowers `k` for target `t` under the printer's policy `p`.
pub fn lower<'k>(k: &'k FusedKernel, t: Target, p: &Policy) -> Lowered<'k> {
    let layout = layout(k, p);
    let steps = steps(k);
    let needs_coords = k.instrs.iter().any(|i| match i {
        Instr::Load { map, .. } | Instr::Gen { map, .. } | Instr::Random { map, .. } => {
            *map != IndexMap::Contiguous
        }
        _ => false,
    });
    let coords = needs_coords.then(|| coords(k));
    let loads = |in_place: bool| {
        sorted(
            k.instrs
                .iter()
                .filter_map(|ins| match ins {
                    Instr::Load { input, map, .. } if !in_place || *map == IndexMap::Contiguous => {
                        Some(*input)
                    }
                    _ => None,
                })
                .collect(),
        )
    };
    let mut const_slots: Vec<(u32, DType)> = Vec::new();
    for ins in &k.instrs {
        if let Instr::Const { slot, dtype, .. } = ins
            && !const_slots.iter().any(|(s, _)| s == slot)
        {
            const_slots.push((*slot, *dtype));
        }
    }
    let reads_params = k
        .instrs
        .iter()
        .any(|i| matches!(i, Instr::Const { .. } | Instr::Random { .. }));
    let mut l = Lowered {
        k,
        layout,
        loaded: loads(false),
        in_place: loads(true),
        stored: sorted(k.stores.iter().map(|s| s.output).collect()),
        reductions: Vec::new(),
        const_slots,
        reads_params,
        scratch: Vec::new(),
        fault: None,
        first: None,
        passes: Vec::new(),
        coords,
        steps,
        range: ranged(k),
    };
    let chunked = match layout {
        // At least one element, so that no scratch buffer is empty (no results: no partials).
        Layout::Reduce(r) if r.chunks > 1 => Some((k.domain.outer as u64 * r.chunks).max(1)),
        _ => None,
    };
    for r in &k.reductions {
        let value = k.reg_dtypes[r.reg as usize];
        let acc = match (r.op, value) {
            (ReduceOp::Sum | ReduceOp::Prod, DType::F32) if t.fp64 => DType::F64,
            (_, d) => d,
        };
        let mut red = Reduction {
            op: r.op,
            reg: r.reg,
            value,
            acc,
            output: r.output,
            out: k.outputs[r.output as usize],
            partials: None,
        };
        if let Some(n) = chunked {
            l.scratch.push(n * elem_bytes(acc, p.word_bools));
            let v = l.scratch.len() as u32 - 1;
            let i = red.is_arg().then(|| {
                l.scratch.push(n * 4);
                l.scratch.len() as u32 - 1
            });
            red.partials = Some((v, i));
        }
        l.reductions.push(red);
    }
    if l.steps
        .iter()
        .any(|s| s.fault.is_some() || !s.traps.is_empty())
    {
        let checks = k.traps.len();
        let first = checks > 0 && crate::debug::trap::device::fits(k.domain.len(), checks);
        l.first = first.then_some(checks as u32);
        l.scratch.push(if first { 8 } else { 4 });
        l.fault = Some(l.scratch.len() as u32 - 1);
    }
    l.passes = passes(&l, p);
    l
}

fn passes(l: &Lowered, p: &Policy) -> Vec<PassPlan> {
    let k = l.k;
    let groups = match l.layout {
        Layout::Quads { groups, .. } | Layout::Scalar { groups } | Layout::Rows { groups } => {
            groups
        }
        Layout::Reduce(r) => r.groups,
    };
    let (buffers, params) = match p.binding {
        Binding::Every => {
            let mut b: Vec<BufArg> = (0..k.inputs.len() as u32).map(BufArg::Input).collect();
            b.extend((0..k.outputs.len() as u32).map(BufArg::Output));
            b.extend((0..l.scratch.len() as u32).map(BufArg::Scratch));
            (b, !k.params.is_empty() || l.range)
        }
        Binding::Used => {
            let mut b: Vec<BufArg> = l.loaded.iter().map(|&i| BufArg::Input(i)).collect();
            b.extend(l.stored.iter().map(|&o| BufArg::Output(o)));
            for r in &l.reductions {
                match r.partials {
                    None => b.push(BufArg::Output(r.output)),
                    Some((v, i)) => {
                        b.push(BufArg::Scratch(v));
                        b.extend(i.map(BufArg::Scratch));
                    }
                }
            }
            b.extend(l.fault.map(BufArg::Scratch));
            (b, l.reads_params || l.range)
        }
    };
    let mut passes = vec![PassPlan {
        entry: "af_kernel",
        buffers,
        params,
        groups,
    }];
    if let Layout::Reduce(r) = l.layout
        && r.chunks > 1
    {
        let mut b = Vec::new();
        for red in &l.reductions {
            let (v, i) = red.partials.expect("partials of a chunked reduction");
            if p.binding == Binding::Every {
                b.push(BufArg::Output(red.output));
            }
            b.push(BufArg::Scratch(v));
            b.extend(i.map(BufArg::Scratch));
            if p.binding == Binding::Used {
                b.push(BufArg::Output(red.output));
            }
        }
        passes.push(PassPlan {
            entry: "af_final",
            buffers: b,
            params: false,
            groups: r.final_groups,
        });
    }
    passes
}

impl Lowered<'_> {
    /// The plan of the printed `source`: this lowering's passes, scratch and fault slot, each pass
    /// dispatched in work-groups of `local` threads.
    pub fn plan(self, source: String, local: u32, immediate_words: Option<u32>) -> GpuPlan {
        GpuPlan {
            source,
            fault: self.fault,
            scratch: self.scratch,
            passes: self
                .passes
                .into_iter()
                .map(|p| Pass {
                    entry: p.entry.into(),
                    buffers: p.buffers,
                    params: p.params,
                    groups: p.groups,
                    local,
                })
                .collect(),
            immediate_words,
            kept: None,
            range: self
                .range
                .then(|| range_of(self.k, &self.layout, local as u64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Shape;
    use crate::proggen::kernel::{Domain, FoldedDim, ReduceStore, Store};

    /// A policy like OpenCL's (a work-group of 256, 2048 target groups, threads about I / 8).
    const POLICY: Policy = Policy {
        local: 256,
        max_groups: 65535,
        unroll: 4,
        quads: Some(QuadPolicy {
            per_trip: 1,
            max_groups: 65535,
            mixed: true,
        }),
        reduce: ReducePolicy {
            row_max: None,
            elements_per_thread: Some(8),
            target_groups: 2048,
            min_chunk: 1024,
            quad_chunks: true,
        },
        binding: Binding::Every,
        word_bools: false,
    };

    /// `sum(load(in0, map))` over a domain `shape` whose last `reduced` axes are reduced.
    fn sum_kernel(shape: &[usize], reduced: usize, maps: &[IndexMap]) -> FusedKernel {
        let split = shape.len() - reduced;
        let mut instrs: Vec<Instr> = maps
            .iter()
            .enumerate()
            .map(|(i, map)| Instr::Load {
                dst: i as Reg,
                input: i as u32,
                map: map.clone(),
            })
            .collect();
        let mut reg = 0;
        for i in 1..maps.len() {
            instrs.push(Instr::Binary {
                dst: instrs.len() as Reg,
                op: BinaryOp::Mul,
                a: reg,
                b: i as Reg,
            });
            reg = instrs.len() as Reg - 1;
        }
        FusedKernel {
            domain: Domain {
                shape: Shape::from_slice(shape),
                inner: shape[split..].iter().product(),
                outer: shape[..split].iter().product(),
                perm: None,
            },
            inputs: vec![DType::F32; maps.len()],
            outputs: vec![DType::F32],
            instr_sites: vec![std::panic::Location::caller(); instrs.len()],
            reg_dtypes: vec![DType::F32; instrs.len()],
            instrs,
            stores: Vec::new(),
            reductions: vec![ReduceStore {
                reg,
                op: ReduceOp::Sum,
                output: 0,
            }],
            params: Vec::new(),
            traps: Vec::new(),
        }
    }

    const TARGET: Target = Target {
        fp64: true,
        immediates: false,
        fused_fma: true,
    };

    fn strided(strides: &[isize]) -> IndexMap {
        IndexMap::Strided {
            offset: 0,
            strides: strides.iter().copied().collect(),
        }
    }

    fn reduce_layout(k: &FusedKernel) -> ReduceLayout {
        match layout(k, &POLICY) {
            Layout::Reduce(r) => r,
            l => panic!("not a work-group reduction: {l:?}"),
        }
    }

    /// Column sums take a thread per result, chunked to fill the target's work-groups; row sums
    /// keep their split.
    #[test]
    fn column_reductions_take_a_thread_per_result() {
        // sum_axis(0) of [8192, 8192]: domain [columns, rows], the input's row stride on rows.
        let k = sum_kernel(&[8192, 8192], 1, &[strided(&[1, 8192])]);
        assert!(columns(&k));
        let r = reduce_layout(&k);
        assert_eq!(
            (r.threads, r.chunks, r.chunk, r.slots, r.quads),
            (1, 64, 128, 32 * 64, false)
        );
        // The final pass: 8 threads per result, 32 results per work-group.
        assert_eq!((r.final_threads, r.final_groups), (8, 256));
        assert_eq!(lower(&k, TARGET, &POLICY).passes.len(), 2);
        // [1000, 257]: two blocks of results, 15 chunks of 67 rows (the last 62).
        let k = sum_kernel(&[257, 1000], 1, &[strided(&[1, 257])]);
        let r = reduce_layout(&k);
        assert_eq!((r.threads, r.chunks, r.chunk, r.slots), (1, 15, 67, 30));
        assert_eq!((r.final_threads, r.final_groups), (2, 3));
        // Few rows: one chunk, results written directly (one pass).
        let k = sum_kernel(&[300, 40], 1, &[strided(&[1, 300])]);
        assert_eq!(reduce_layout(&k).chunks, 1);
        assert_eq!(lower(&k, TARGET, &POLICY).passes.len(), 1);
        // Axis 0 of [300, 4, 40]: kept [4, 40], and a broadcast factor along the rows.
        let k = sum_kernel(
            &[4, 40, 300],
            1,
            &[strided(&[40, 1, 160]), strided(&[0, 0, 1])],
        );
        assert!(columns(&k));
        assert_eq!(reduce_layout(&k).threads, 1);
        // Row sums keep T threads per result.
        for (shape, map) in [
            ([8192, 8192], IndexMap::Contiguous),
            ([8192, 8192], strided(&[8192, 1])),
        ] {
            let k = sum_kernel(&shape, 1, &[map]);
            assert!(!columns(&k));
            let r = reduce_layout(&k);
            assert_eq!((r.threads, r.final_threads), (256, 256));
        }
        // Axes 0 and 2 of [A, B, C]: the innermost reduced axis is contiguous.
        let k = sum_kernel(&[50, 30, 40], 2, &[strided(&[40, 2000, 1])]);
        assert!(!columns(&k));
    }

    /// A reduction's coordinates come from the result's index (kept axes) and the element's
    /// index in the reduced extent (reduced axes), without a modulus where the quotient is in
    /// range; an element-wise kernel's from `lin`.
    #[test]
    fn coordinates_come_from_the_result_and_the_element() {
        let c = |of, div, extent| Coord { of, div, extent };
        let (r, e) = (CoordOf::Result, CoordOf::Element);
        let k = sum_kernel(&[8192, 8192], 1, &[strided(&[1, 8192])]);
        assert_eq!(coords(&k), [c(r, 1, None), c(e, 1, None)]);
        let k = sum_kernel(&[4, 40, 300], 1, &[strided(&[40, 1, 160])]);
        assert_eq!(
            coords(&k),
            [c(r, 40, None), c(r, 1, Some(40)), c(e, 1, None)]
        );
        let k = sum_kernel(&[6, 50, 40], 2, &[strided(&[40, 240, 1])]);
        assert_eq!(
            coords(&k),
            [c(r, 1, None), c(e, 40, None), c(e, 1, Some(40))]
        );
        let mut k = sum_kernel(&[1, 6, 50], 1, &[strided(&[0, 50, 1])]);
        k.reductions.clear();
        let l = CoordOf::Lin;
        assert_eq!(
            coords(&k),
            [c(l, 300, None), c(l, 50, None), c(l, 1, Some(50))]
        );
    }

    /// What keeps a reduction off the column layout.
    #[test]
    fn the_column_rule_needs_every_load_across_results() {
        let column = strided(&[1, 500]);
        assert!(columns(&sum_kernel(
            &[500, 600],
            1,
            std::slice::from_ref(&column)
        )));
        // Fewer adjacent results than a warp.
        assert!(!columns(&sum_kernel(&[16, 600], 1, &[strided(&[1, 16])])));
        // A second load reading rows (stride 1 along the reduced axis, 600 across results).
        assert!(!columns(&sum_kernel(
            &[500, 600],
            1,
            &[column.clone(), strided(&[600, 1])]
        )));
        // Every other result (stride 2).
        assert!(!columns(&sum_kernel(
            &[500, 600],
            1,
            &[strided(&[2, 1000])]
        )));
        // A folded load.
        let folded = IndexMap::Folded {
            dims: vec![FoldedDim {
                offset: 0,
                coef: [1, 0].into_iter().collect(),
                folds: Default::default(),
                stride: 1,
            }],
        };
        assert!(!columns(&sum_kernel(&[500, 600], 1, &[folded])));
        // An element-wise store.
        let mut k = sum_kernel(&[500, 600], 1, &[column]);
        k.outputs.push(DType::F32);
        k.stores.push(Store { reg: 0, output: 1 });
        assert!(!columns(&k));
        // Extent-1 axes are skipped: [500, 1] kept, [600, 1] reduced.
        let k = sum_kernel(&[500, 1, 600, 1], 2, &[strided(&[1, 0, 500, 0])]);
        assert!(columns(&k));
    }
}
