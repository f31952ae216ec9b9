//! What an IR node computes. Element-wise operator lists live in the primitive tables
//! (`primitives/table.rs`); this file holds the structural kinds around them.

use super::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};
use smallvec::SmallVec;

/// The operation of an IR node. Inputs are held by the node, not here.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Data written by the application; has a buffer from the moment it is created.
    Source,
    /// Every element the same value (a scalar operand is a 0-d `Const`).
    Const(Scalar),
    /// Values computed from the element's position.
    Generate(GenKind),
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `select(cond, a, b)`: the seed's Cond. Inputs: cond, a, b.
    Select,
    Cast(DType),
    /// Same elements, new shape. Fused as a reinterpretation of a stored input.
    Reshape,
    /// Output axis `i` is input axis `perm[i]`.
    Permute(SmallVec<[usize; 4]>),
    /// Output index `i` along axis `d` reads input index `start[d] + step[d] * i`.
    Slice {
        start: SmallVec<[isize; 4]>,
        step: SmallVec<[isize; 4]>,
    },
    /// NumPy broadcast to the node's shape (the seed's spread).
    Broadcast,
    /// Periodic copy to the node's shape (the seed's periodic copy, NumPy `tile`).
    Tile,
    /// Along `axis`, output index `i` reads input index `mode(i - shift)` folded into the input's
    /// length (`roll`, `pad`'s edge, wrap and reflect modes, the parts of a fused `concat`); the
    /// node's length along `axis` may differ from the input's. Fused as a view.
    Fold {
        axis: usize,
        mode: FoldMode,
        shift: isize,
    },
    /// Reduction over `axes` of the input (sorted, unique). The result drops those axes.
    Reduce {
        op: ReduceOp,
        axes: SmallVec<[usize; 4]>,
    },
    /// A non-fusible operation implemented by hand-written kernels.
    Intrinsic(Intrinsic),
}

/// How a [`Op::Fold`] brings an index outside `0..n` back into it (NumPy's pad modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FoldMode {
    /// Periodically: `i mod n` (`roll`, pad mode `wrap`).
    Wrap,
    /// To the nearest end: `clamp(i, 0, n - 1)` (pad mode `edge`).
    Clamp,
    /// Mirrored about the end elements, which are not repeated: `.. 2 1 | 0 1 2 .. n-1 | n-2 ..`
    /// (pad mode `reflect`, period `2 (n - 1)`).
    Reflect,
    /// Mirrored with the end elements repeated: `.. 1 0 | 0 1 .. n-1 | n-1 n-2 ..` (pad mode
    /// `symmetric`, period `2 n`).
    Symmetric,
}

impl FoldMode {
    /// Index `i` folded into `0..n` (`n` at least 1).
    pub fn apply(self, i: isize, n: usize) -> isize {
        let n = n as isize;
        if n <= 1 {
            return 0;
        }
        match self {
            FoldMode::Wrap => i.rem_euclid(n),
            FoldMode::Clamp => i.clamp(0, n - 1),
            FoldMode::Reflect => {
                let m = i.rem_euclid(2 * (n - 1));
                (n - 1) - ((n - 1) - m).abs()
            }
            FoldMode::Symmetric => {
                let m = i.rem_euclid(2 * n);
                ((2 * n - 1) - ((2 * n - 1) - 2 * m).abs()) / 2
            }
        }
    }
    /// The mode's name in logs and trace keys.
    pub fn name(self) -> &'static str {
        match self {
            FoldMode::Wrap => "wrap",
            FoldMode::Clamp => "edge",
            FoldMode::Reflect => "reflect",
            FoldMode::Symmetric => "symmetric",
        }
    }
}

/// Position-dependent generators.
#[derive(Debug, Clone, PartialEq)]
pub enum GenKind {
    /// The index along `axis`.
    Iota { axis: usize },
    /// 1 on the diagonal of a square matrix, else 0.
    Identity,
    /// `start + i * step`, the last element exactly `end`.
    Linspace {
        start: f64,
        step: f64,
        end: f64,
        n: usize,
    },
    /// Counter-based random numbers: element `i` is value `counter + i` of the stream of `alg`
    /// with `key` (`primitives/cpu.rs`: `random_words` says which words each value takes).
    Random {
        alg: RngAlgorithm,
        key: [u32; 2],
        counter: u64,
        dist: RandomDist,
        /// [`RandomDist::Integers`]: how many values (`0` for 2^32: the raw word); `0` for the
        /// other distributions. A kernel parameter, like key and counter.
        range: u32,
    },
}

/// The counter-based generators (every executor computes the same words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RngAlgorithm {
    /// Philox4x32-10 (Salmon et al., SC'11): 64-bit key, 64-bit counter of 128-bit blocks of four
    /// words; period 2^66 words per key. The slower, long-period generator.
    #[default]
    Philox,
    /// Two keyed rounds of Wellons' `lowbias32` integer hash over a 32-bit word counter
    /// (`primitives::cpu::hash32`): about 18 32-bit operations per word, no wide multiplies, so
    /// it vectorises everywhere (WGSL included); period 2^32 words per key. The fast,
    /// short-period generator.
    Hash32,
}

/// What a random draw's values are, from uniform words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RandomDist {
    /// Uniform on [0, 1) (24 random bits for f32, 53 for f64).
    Uniform,
    /// Standard normal (Box-Muller).
    Normal,
    /// Standard exponential (rate 1): `-ln(u)` with `u` uniform on (0, 1].
    Exponential,
    /// `u32` in `[0, range)` by Lemire's multiply-shift: `(word * range) >> 32` (bias below
    /// `range / 2^32`); the raw word when `range` is 0.
    Integers,
}

impl RandomDist {
    /// The distribution's name in op names and generated code.
    pub fn name(self) -> &'static str {
        match self {
            RandomDist::Uniform => "uniform",
            RandomDist::Normal => "normal",
            RandomDist::Exponential => "exponential",
            RandomDist::Integers => "integers",
        }
    }
    /// Estimated instructions per element of a Philox draw (the op's recompute cost).
    pub fn cost(self) -> u32 {
        match self {
            RandomDist::Uniform | RandomDist::Integers => 16,
            RandomDist::Exponential => 32,
            RandomDist::Normal => 48,
        }
    }
}

/// Hand-written, non-fusible operations (the seed's intrinsic library) with the data that
/// specialises their code. Everything else about each one is its definition in the registry
/// (`intrinsics/mod.rs`, [`Intrinsic::def`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Intrinsic {
    /// Matrix product with NumPy's `matmul` rules (`intrinsics/matmul/`): inputs a `[.., m, k]`
    /// and b `[.., k, n]` (leading axes broadcast; a 1-D operand is a row or a column). With
    /// `trans_a` input 0 is stored `[.., k, m]` and read transposed (no copy); `trans_b` likewise.
    Matmul { trans_a: bool, trans_b: bool },
    /// NumPy `take`: inputs: data, indices (i32 or u32).
    Gather { axis: usize },
    /// Join along `axis`. Inputs: the parts.
    Concat { axis: usize },
    /// Batched transpose `[batch, rows, cols]` -> `[batch, cols, rows]` of input 0 read from
    /// element `offset` on. Never recorded: GPU executors run fused kernels that only copy a
    /// transpose as this intrinsic (`intrinsics/transpose/`).
    Transpose { offset: usize },
    /// Scatter, replacing (`intrinsics/scatter/`): inputs: data, indices (i32 or u32), values of
    /// gather's output shape; output `(p, idx[j], q)` = values `(p, j, q)`, the largest `j` winning
    /// among duplicates, else data.
    Scatter { axis: usize },
    /// Scatter-add (`index_add`): as `Scatter`, duplicates accumulate onto data.
    ScatterAdd { axis: usize },
    /// NumPy `put_along_axis`, replacing: inputs: data, indices of data's rank, values of the
    /// indices' shape; the last source in row-major order wins among duplicates.
    PutAlongAxis { axis: usize },
    /// Counts of each value `0..length` over all elements of an i32/u32 input (`intrinsics/
    /// histogram/`); a value out of range fails the program.
    Bincount { length: usize },
    /// Counts of a float input's elements in `bins` bins. Inputs: the data, the `bins + 1` edges.
    Histogram { bins: usize },
    /// Inclusive scan along `axis` (`cumsum`, `cumprod`, `cummax`, `cummin`): `op` is one of
    /// `Sum`, `Prod`, `Max`, `Min`. Input: the data; the output has its shape and type.
    Scan { op: ReduceOp, axis: usize },
    /// Stable sort along `axis` (NaN last ascending, first descending; -0.0 equals +0.0):
    /// `intrinsics/sort/`. Input: data (f32, f64, i32 or u32).
    Sort { axis: usize, descending: bool },
    /// The `u32` positions along `axis` that sort the data stably (as [`Intrinsic::Sort`]).
    Argsort { axis: usize, descending: bool },
    /// The `u32` positions of the `k` largest elements of each row along `axis`, largest first
    /// (equal elements in input order, NaN largest): the first `k` of a descending
    /// [`Intrinsic::Argsort`], found by a radix select (`intrinsics/sort/select.rs`).
    Topk { axis: usize, k: usize },
    /// NumPy `take_along_axis`: inputs data, indices (i32 or u32) of the data's rank whose other
    /// axes match the data's.
    TakeAlongAxis { axis: usize },
    /// NumPy `searchsorted` on a sorted 1-D array: inputs sorted, values; `u32` insertion points
    /// (`right`: after equal elements).
    SearchSorted { right: bool },
    /// The runs of equal elements of a sorted 1-D array of `n`: `u32 [n + 2]` holding the run
    /// count `r`, the `r` run starts and `n` (the rest unspecified); `unique` reads `r`.
    UniqueRuns,
    /// LU factorisation with partial pivoting of `[..., n, n]` (f32/f64, `intrinsics/linalg/`):
    /// output `[..., n, n + 1]`, columns `0..n` the packed L\U (unit L below the diagonal),
    /// column `n` LAPACK's 0-based `ipiv` as values of the float type.
    Lu,
    /// P, L, U of packed factors and pivots (inputs lu `[..., n, n]`, pivots i32 `[..., n]`):
    /// output `[..., n, 3n]` holding P, L, U side by side (`A = P L U`).
    LuUnpack,
    /// Solves `A x = b` from `lu` and `ipiv` (i32): inputs lu `[..., n, n]`, pivots `[..., n]`,
    /// b `[..., n, r]` (batch axes broadcast).
    LuSolve,
    /// LAPACK gecon's reciprocal 1-norm condition estimate: inputs lu, pivots (i32), anorm
    /// `[...]`; output `[...]`.
    LuCond,
    /// `A x = b` by LU: inputs a `[..., n, n]`, b `[..., n, r]`; a singular `a` fails the program.
    Solve,
    /// The inverse of `[..., n, n]`; a singular matrix fails the program.
    Inv,
    /// The determinant of `[..., n, n]`: output `[...]`.
    Det,
    /// Sign and log of the absolute determinant: output `[..., 2]`.
    Slogdet,
    /// The lower Cholesky factor of a symmetric positive-definite `[..., n, n]` (only the lower
    /// triangle is read); a matrix that is not positive definite fails the program.
    Cholesky,
    /// Solves `L L^T x = b`: inputs l `[..., n, n]` (lower), b `[..., n, r]`.
    CholeskySolve,
    /// Solves `A x = b` for triangular `a` (`upper`, or lower; `unit_diagonal`: the diagonal is
    /// taken as 1 and not read).
    TriangularSolve { upper: bool, unit_diagonal: bool },
    /// Reduced QR of `[..., m, n]` (`k = min(m, n)`, R's diagonal non-negative): output
    /// `[..., m + k, n]`, rows `0..m` columns `0..k` Q (the rest 0), rows `m..` R `[k, n]`.
    Qr,
    /// Least squares `min |a x - b|` for `m >= n`: inputs a `[..., m, n]`, b `[..., m, r]`
    /// (batch axes broadcast); output `[..., n, r]`; a rank-deficient `a` fails the program.
    Lstsq,
    /// The discrete Fourier transform of length `n` along `axis` (`intrinsics/fft/`), forward
    /// (`exp(-2 pi i jk / n)`) or `inverse`, scaled as `norm` says. Input: f32, f64 (read as
    /// complex with zero imaginary parts), `Complex<f32>` or `Complex<f64>`, its axis cropped or
    /// zero-padded to `n`; output: the complex type of the input's precision, the axis `n` long.
    Fft {
        axis: usize,
        n: usize,
        inverse: bool,
        norm: FftNorm,
    },
    /// The forward transform of a real f32/f64 input of length `n` along `axis` (cropped or
    /// zero-padded to `n`): its first `n / 2 + 1` complex coefficients.
    Rfft {
        axis: usize,
        n: usize,
        norm: FftNorm,
    },
    /// The inverse of [`Intrinsic::Rfft`]: a complex input whose axis holds the first
    /// `n / 2 + 1` coefficients of a Hermitian spectrum (cropped or zero-padded to that; the
    /// imaginary parts of coefficient 0, and of `n / 2` for even `n`, are ignored) to the real
    /// signal of length `n` along `axis`.
    Irfft {
        axis: usize,
        n: usize,
        norm: FftNorm,
    },
    /// Direct convolution over the last `rank` axes (1 or 2; `intrinsics/conv/`): inputs x
    /// `[.., n_1 .. n_rank]` and a filter k `[m_1 .. m_rank]` (one for the whole batch) or
    /// `[.., m_1 .. m_rank]` (one per batch entry, the same leading axes as x); output
    /// element `i` is `sum_p k[p] x[i + off - p]` (x zero outside), with the output lengths and
    /// offsets `off` that `mode` gives (SciPy's `convolve`). f32 or f64.
    Convolve { rank: usize, mode: ConvMode },
}

/// Which part of the full convolution a [`Intrinsic::Convolve`] returns (SciPy's `mode`), per
/// convolved axis with input length `n` and filter length `m`.
///
/// | mode | output length | offset into the full result |
/// | --- | --- | --- |
/// | `Full` (the default) | `n + m - 1` | 0 |
/// | `Same` | `n` | `(m - 1) / 2` |
/// | `Valid` (`n >= m`) | `n - m + 1` | `m - 1` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ConvMode {
    /// Every output the two overlap in.
    #[default]
    Full,
    /// The input's length, centred on the full result.
    Same,
    /// Only outputs computed from the whole filter.
    Valid,
}

impl ConvMode {
    /// The output length and offset into the full result of one axis (`n >= m` for `Valid`).
    pub fn extent(self, n: usize, m: usize) -> (usize, usize) {
        match self {
            ConvMode::Full => (n + m - 1, 0),
            ConvMode::Same => (n, (m - 1) / 2),
            ConvMode::Valid => (n + 1 - m, m - 1),
        }
    }
    /// The mode's name (as SciPy spells it).
    pub fn name(self) -> &'static str {
        match self {
            ConvMode::Full => "full",
            ConvMode::Same => "same",
            ConvMode::Valid => "valid",
        }
    }
    /// A small number for trace keys.
    pub fn index(self) -> u64 {
        self as u64
    }
}

/// How a Fourier transform is scaled (NumPy's `norm`): a transform of length `n` and its inverse
/// are multiplied by these factors.
///
/// | mode | forward | inverse |
/// | --- | --- | --- |
/// | `Backward` (the default) | 1 | 1/n |
/// | `Ortho` | 1/sqrt(n) | 1/sqrt(n) |
/// | `Forward` | 1/n | 1 |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FftNorm {
    /// The inverse divides by `n` (NumPy's default, `norm="backward"`).
    #[default]
    Backward,
    /// Both directions divide by `sqrt(n)`: the transform is unitary.
    Ortho,
    /// The forward transform divides by `n`.
    Forward,
}

impl FftNorm {
    /// The factor a transform of length `n` (`inverse` or forward) is multiplied by.
    pub fn scale(self, n: usize, inverse: bool) -> f64 {
        match (self, inverse) {
            (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
            (FftNorm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            _ => 1.0 / n as f64,
        }
    }
    /// A small number for trace keys.
    pub fn index(self) -> u64 {
        self as u64
    }
}

/// One output of an intrinsic call: its shape and element type.
#[derive(Debug, Clone, PartialEq)]
pub struct IntrinsicOutput {
    pub shape: super::Shape,
    pub dtype: super::DType,
}

impl Op {
    /// Whether the program generator may fuse this node into a kernel with its producers.
    pub fn is_fusible(&self) -> bool {
        !matches!(self, Op::Intrinsic(_) | Op::Source)
    }
    /// Estimated instructions per element to recompute this op's value from its inputs' values:
    /// what a lazy (unstored) value costs each kernel that redoes it. The op table's estimate for
    /// arithmetic, a Philox draw for random numbers, nothing for views, constants and results that
    /// are always stored (data, reductions, intrinsics).
    pub fn recompute_cost(&self) -> u32 {
        match self {
            Op::Unary(u) => u.cost(),
            Op::Binary(b) => b.cost(),
            Op::Select | Op::Cast(_) => 1,
            Op::Generate(GenKind::Random { dist, .. }) => dist.cost(),
            Op::Generate(_) => 1,
            Op::Source
            | Op::Const(_)
            | Op::Reshape
            | Op::Permute(_)
            | Op::Slice { .. }
            | Op::Broadcast
            | Op::Tile
            | Op::Fold { .. }
            | Op::Reduce { .. }
            | Op::Intrinsic(_) => 0,
        }
    }
    /// Whether the node reads its input through a stored buffer (so the input must be stored).
    /// The op alone decides it, except a reshape that only inserts or removes unit axes, which
    /// kernels read as a view (the shape check is `proggen::liveness::needs_stored_input`).
    pub fn needs_stored_input(&self) -> bool {
        matches!(self, Op::Reshape | Op::Tile | Op::Intrinsic(_))
    }
    /// Whether the op only moves or converts data (a view, a copy, a gather, a cast): comparison
    /// mode gives its result the allowance of the op that produced its input.
    pub fn moves_data(&self) -> bool {
        matches!(
            self,
            Op::Reshape
                | Op::Permute(_)
                | Op::Slice { .. }
                | Op::Broadcast
                | Op::Tile
                | Op::Fold { .. }
                | Op::Cast(_)
        ) || matches!(self, Op::Intrinsic(i) if i.moves_data())
    }

    /// The op's name without parameters (`cast`, not `cast_f32`), as comparison tolerances name it.
    pub fn base_name(&self) -> &'static str {
        match self {
            Op::Source => "source",
            Op::Const(_) => "const",
            Op::Generate(GenKind::Iota { .. }) => "iota",
            Op::Generate(GenKind::Identity) => "identity",
            Op::Generate(GenKind::Linspace { .. }) => "linspace",
            Op::Generate(GenKind::Random { .. }) => "random",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Select => "select",
            Op::Cast(_) => "cast",
            Op::Reshape => "reshape",
            Op::Permute(_) => "permute",
            Op::Slice { .. } => "slice",
            Op::Broadcast => "broadcast",
            Op::Tile => "tile",
            Op::Fold { .. } => "fold",
            Op::Reduce { op, .. } => op.name(),
            Op::Intrinsic(i) => i.name(),
        }
    }

    /// A short name for logs, profiles and error messages.
    pub fn name(&self) -> String {
        match self {
            Op::Source => "source".into(),
            Op::Const(_) => "const".into(),
            Op::Generate(g) => match g {
                GenKind::Iota { .. } => "iota".into(),
                GenKind::Identity => "identity".into(),
                GenKind::Linspace { .. } => "linspace".into(),
                GenKind::Random { dist, .. } => format!("random_{}", dist.name()),
            },
            Op::Unary(u) => u.name().into(),
            Op::Binary(b) => b.name().into(),
            Op::Select => "select".into(),
            Op::Cast(d) => format!("cast_{d}"),
            Op::Reshape => "reshape".into(),
            Op::Permute(_) => "permute".into(),
            Op::Slice { .. } => "slice".into(),
            Op::Broadcast => "broadcast".into(),
            Op::Tile => "tile".into(),
            Op::Fold { mode, .. } => format!("fold_{}", mode.name()),
            Op::Reduce { op, .. } => op.name().into(),
            Op::Intrinsic(i) => i.name().into(),
        }
    }
}
