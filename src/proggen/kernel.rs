//! The fused kernel the program generator produces: a register program over an iteration domain,
//! target-neutral. The CPU executor runs it tile by tile; GPU targets render it to source.

use crate::ir::{
    BinaryOp, DType, FoldMode, GenKind, RandomDist, ReduceOp, RngAlgorithm, Scalar, Shape, Site,
    UnaryOp,
};
use smallvec::SmallVec;

/// A virtual register (SSA value) of a kernel.
pub type Reg = u32;

/// The iteration space of a kernel: `shape` in row-major order. A kernel with reductions has its
/// reduced axes last; `inner` is their element count (1 when the kernel has no reduction).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Domain {
    pub shape: Shape,
    pub inner: usize,
    /// Number of reduction results (the kept extent); the domain's length without reductions.
    pub outer: usize,
    /// For a reduction over axes that are not its input's innermost: domain axis `k` is input axis
    /// `perm[k]` (the CPU may then walk the domain in the input's row order); `None` otherwise.
    pub perm: Option<SmallVec<[usize; 4]>>,
}

impl Domain {
    /// The first reduced axis: the trailing axes from it on multiply to the reduced extent
    /// `inner`. `None` when no run of trailing axes does, or when nothing is reduced.
    pub fn first_reduced_axis(&self) -> Option<usize> {
        let (mut first, mut inner) = (self.shape.len(), 1);
        while first > 0 && inner < self.inner {
            first -= 1;
            inner *= self.shape[first];
        }
        (inner == self.inner && first < self.shape.len()).then_some(first)
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a kernel finds, for each domain element, the linear index it reads in a buffer (or, for a
/// generator, the linear index in its own shape).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IndexMap {
    /// The domain's own linear index.
    Contiguous,
    /// `offset + sum_k strides[k] * d_k` over the domain index `d`.
    Strided {
        offset: isize,
        strides: SmallVec<[isize; 6]>,
    },
    /// `sum_j fold_j(offset_j + sum_k coef_jk * d_k) * stride_j`: a position folded back into an
    /// axis along some of the node's axes (periodic copy, roll, pad), see [`FoldedDim`].
    Folded { dims: Vec<FoldedDim> },
}

/// One axis of a [`IndexMap::Folded`] map: the affine position `offset + coef . d` passed through
/// `folds` in order, times `stride` (the axis's stride in the buffer).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FoldedDim {
    pub offset: isize,
    pub coef: SmallVec<[isize; 6]>,
    pub folds: SmallVec<[Fold; 1]>,
    pub stride: usize,
}

/// `a + b * mode(v, n)`: a position `v` folded into `0..n` by `mode`, then placed by the views
/// above the fold (`a`, `b`: a slice of the folded value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fold {
    pub mode: FoldMode,
    pub n: usize,
    pub a: isize,
    pub b: isize,
}

impl Fold {
    /// A fold into `0..n` with nothing above it.
    pub fn new(mode: FoldMode, n: usize) -> Fold {
        Fold {
            mode,
            n,
            a: 0,
            b: 1,
        }
    }
    /// The folded, placed position.
    pub fn apply(&self, v: isize) -> isize {
        self.a + self.b * self.mode.apply(v, self.n)
    }
}

impl FoldedDim {
    /// For each fold, whether its input stays within one period of `0..n` on either side over a
    /// domain of `shape` (a compare and an add fold it then, without a division).
    pub fn near(&self, shape: &[usize]) -> SmallVec<[bool; 1]> {
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&c, &n) in self.coef.iter().zip(shape) {
            let r = c as i128 * (n.max(1) as i128 - 1);
            if r < 0 {
                lo += r;
            } else {
                hi += r;
            }
        }
        self.folds
            .iter()
            .map(|f| {
                let n = f.n as i128;
                let near = match f.mode {
                    FoldMode::Wrap | FoldMode::Symmetric => lo >= -n && hi < 2 * n,
                    FoldMode::Reflect => lo >= -(n - 1) && hi <= 2 * (n - 1),
                    FoldMode::Clamp => true,
                };
                let (x, y) = (f.a as i128, f.a as i128 + f.b as i128 * (n - 1).max(0));
                (lo, hi) = (x.min(y), x.max(y));
                near
            })
            .collect()
    }

    /// The position along this axis (before `stride`) at domain index `d`.
    pub fn at(&self, d: &[usize]) -> isize {
        let mut v = self.offset;
        for (c, &x) in self.coef.iter().zip(d) {
            v += c * x as isize;
        }
        self.folds.iter().fold(v, |v, f| f.apply(v))
    }
}

/// One instruction. Every instruction writes register `dst` for all elements of a tile.
#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    Load {
        dst: Reg,
        input: u32,
        map: IndexMap,
    },
    /// A constant: the value of parameter `slot` (filled per launch, so the code does not depend
    /// on the user's scalars).
    Const {
        dst: Reg,
        slot: u32,
        dtype: DType,
    },
    /// Counter-based random numbers of generator `alg`; the stream's key and counter are
    /// parameters `key_slot`, `counter_slot`, an integer draw's range parameter `range_slot`.
    Random {
        dst: Reg,
        alg: RngAlgorithm,
        dist: RandomDist,
        key_slot: u32,
        counter_slot: u32,
        range_slot: Option<u32>,
        map: IndexMap,
    },
    Gen {
        dst: Reg,
        kind: GenKind,
        shape: Shape,
        map: IndexMap,
    },
    Unary {
        dst: Reg,
        op: UnaryOp,
        a: Reg,
    },
    Binary {
        dst: Reg,
        op: BinaryOp,
        a: Reg,
        b: Reg,
    },
    Select {
        dst: Reg,
        cond: Reg,
        a: Reg,
        b: Reg,
    },
    Cast {
        dst: Reg,
        to: DType,
        a: Reg,
    },
}

impl Instr {
    /// Estimated instructions per element (the primitive table's estimate for an operation).
    pub fn cost(&self) -> u32 {
        match self {
            Instr::Unary { op, .. } => op.cost(),
            Instr::Binary { op, .. } => op.cost(),
            Instr::Gen { .. } => 10,
            _ => 1,
        }
    }

    /// The destination register, to change (what the stepper's micro-kernels renumber).
    pub fn dst_mut(&mut self) -> &mut Reg {
        match self {
            Instr::Load { dst, .. }
            | Instr::Const { dst, .. }
            | Instr::Gen { dst, .. }
            | Instr::Random { dst, .. }
            | Instr::Unary { dst, .. }
            | Instr::Binary { dst, .. }
            | Instr::Select { dst, .. }
            | Instr::Cast { dst, .. } => dst,
        }
    }

    pub fn dst(&self) -> Reg {
        match self {
            Instr::Load { dst, .. }
            | Instr::Const { dst, .. }
            | Instr::Gen { dst, .. }
            | Instr::Random { dst, .. }
            | Instr::Unary { dst, .. }
            | Instr::Binary { dst, .. }
            | Instr::Select { dst, .. }
            | Instr::Cast { dst, .. } => *dst,
        }
    }
    /// Registers this instruction reads.
    pub fn srcs(&self) -> SmallVec<[Reg; 3]> {
        match self {
            Instr::Load { .. } | Instr::Const { .. } | Instr::Gen { .. } | Instr::Random { .. } => {
                SmallVec::new()
            }
            Instr::Unary { a, .. } | Instr::Cast { a, .. } => smallvec::smallvec![*a],
            Instr::Binary { a, b, .. } => smallvec::smallvec![*a, *b],
            Instr::Select { cond, a, b, .. } => smallvec::smallvec![*cond, *a, *b],
        }
    }
    pub fn set_regs(&mut self, f: &impl Fn(Reg) -> Reg) {
        match self {
            Instr::Load { dst, .. }
            | Instr::Const { dst, .. }
            | Instr::Gen { dst, .. }
            | Instr::Random { dst, .. } => *dst = f(*dst),
            Instr::Unary { dst, a, .. } | Instr::Cast { dst, a, .. } => {
                *dst = f(*dst);
                *a = f(*a);
            }
            Instr::Binary { dst, a, b, .. } => {
                *dst = f(*dst);
                *a = f(*a);
                *b = f(*b);
            }
            Instr::Select { dst, cond, a, b } => {
                *dst = f(*dst);
                *cond = f(*cond);
                *a = f(*a);
                *b = f(*b);
            }
        }
    }
}

/// An element-wise result written to an output buffer at the domain's linear index.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    pub reg: Reg,
    pub output: u32,
}

/// A reduction result: register `reg` reduced over the domain's `inner` trailing elements.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceStore {
    pub reg: Reg,
    pub op: ReduceOp,
    pub output: u32,
}

/// A fused kernel: loads, element-wise work, stores, and the first stage of reductions.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedKernel {
    pub domain: Domain,
    /// Element type of each input parameter (bound to the program's inputs in order).
    pub inputs: Vec<DType>,
    /// Element type of each output parameter (bound to the program's outputs in order).
    pub outputs: Vec<DType>,
    pub instrs: Vec<Instr>,
    /// The user's call site of the IR node each instruction came from.
    pub instr_sites: Vec<Site>,
    pub stores: Vec<Store>,
    pub reductions: Vec<ReduceStore>,
    /// Element type of each register after allocation; constants keep registers of their own.
    pub reg_dtypes: Vec<DType>,
    /// What each parameter slot holds (values come with each launch).
    pub params: Vec<ParamKind>,
    /// Trap checks on instruction results (`crate::debug::trap`); empty unless traps are on or
    /// an assertion was recorded, so kernels and their code are unchanged otherwise.
    pub traps: Vec<crate::debug::trap::TrapCheck>,
}

/// What a kernel parameter holds; its value travels with the launch as 64 raw bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A constant's bits (f32 bits, f64 bits, integers zero-extended, bool 0/1).
    Const(DType),
    /// A random stream's key: `key[1] << 32 | key[0]`.
    RandomKey,
    /// A random stream's first counter.
    RandomCounter,
    /// An integer draw's range (`GenKind::Random::range`; part of the recorded op, so a code
    /// reuse section keeps it as recorded).
    RandomRange,
}

impl ParamKind {
    pub fn is_random(self) -> bool {
        matches!(self, ParamKind::RandomKey | ParamKind::RandomCounter)
    }
    pub fn is_key(self) -> bool {
        self == ParamKind::RandomKey
    }
    /// The parameter's value taken from the IR node it stands for.
    pub fn value(self, op: &crate::ir::Op) -> u64 {
        match (self, op) {
            (ParamKind::Const(_), crate::ir::Op::Const(v)) => v.bits(),
            (ParamKind::RandomKey, crate::ir::Op::Generate(GenKind::Random { key, .. })) => {
                ((key[1] as u64) << 32) | key[0] as u64
            }
            (
                ParamKind::RandomCounter,
                crate::ir::Op::Generate(GenKind::Random { counter, .. }),
            ) => *counter,
            (ParamKind::RandomRange, crate::ir::Op::Generate(GenKind::Random { range, .. })) => {
                *range as u64
            }
            _ => unreachable!("parameter {self:?} of a {op:?} node"),
        }
    }
}

impl Scalar {
    /// The scalar of type `dtype` whose [`Scalar::bits`] are `bits`.
    pub fn from_bits(dtype: DType, bits: u64) -> Scalar {
        match dtype {
            DType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
            DType::F64 => Scalar::F64(f64::from_bits(bits)),
            DType::I32 => Scalar::I32(bits as u32 as i32),
            DType::U32 => Scalar::U32(bits as u32),
            DType::Bool => Scalar::Bool(bits != 0),
            DType::C64 => Scalar::C64(num_complex::Complex::new(
                f32::from_bits(bits as u32),
                f32::from_bits((bits >> 32) as u32),
            )),
            DType::C128 => unreachable!("complex constants are recorded as two real constants"),
        }
    }
}

impl FusedKernel {
    /// Whether any input, output, register or constant of the kernel is complex (renderers
    /// without complex arithmetic leave such kernels to the tile VM).
    pub fn uses_complex(&self) -> bool {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .chain(&self.reg_dtypes)
            .any(|d| d.is_complex())
    }
    /// The helper functions this kernel's ops need, each once, in a fixed order.
    pub fn helpers(&self) -> Vec<crate::primitives::Helper> {
        let mut h: Vec<_> = self
            .instrs
            .iter()
            .flat_map(|i| match i {
                Instr::Unary { op, .. } => op.helpers().to_vec(),
                Instr::Binary { op, .. } => op.helpers().to_vec(),
                Instr::Random { .. } => vec![crate::primitives::Helper::Philox],
                _ => Vec::new(),
            })
            .collect();
        h.sort();
        h.dedup();
        h
    }

    /// A readable listing of the kernel: domain, parameters, helpers and instructions with the
    /// call site each came from.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "kernel over {:?} ({} elements{}), {} inputs {:?}, {} outputs {:?}, helpers {:?}",
            self.domain.shape,
            self.domain.len(),
            if self.reductions.is_empty() {
                String::new()
            } else {
                format!(", reducing {} per result", self.domain.inner)
            },
            self.inputs.len(),
            self.inputs,
            self.outputs.len(),
            self.outputs,
            self.helpers()
        );
        for (i, ins) in self.instrs.iter().enumerate() {
            let _ = writeln!(
                s,
                "  r{} <- {:?}    // {}",
                ins.dst(),
                ins,
                self.instr_sites[i]
            );
        }
        for st in &self.stores {
            let _ = writeln!(s, "  out{} <- r{}", st.output, st.reg);
        }
        for r in &self.reductions {
            let _ = writeln!(s, "  out{} <- {}(r{})", r.output, r.op.name(), r.reg);
        }
        for t in &self.traps {
            let _ = writeln!(
                s,
                "  trap if {:?}(r{})",
                t.pred,
                self.instrs[t.instr as usize].dst()
            );
        }
        s
    }

    /// Estimated instructions per domain element (the primitive table's estimates summed).
    pub fn cost(&self) -> u32 {
        self.instrs.iter().map(Instr::cost).sum::<u32>()
            + self.reductions.iter().map(|r| r.op.cost()).sum::<u32>()
    }
}
