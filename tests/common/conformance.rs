//! The conformance harness of the GPU code generators, shared by `tests/opencl_codegen.rs` and
//! `tests/wgsl_codegen.rs`: fused kernels built by hand ([`Kb`] and the one-op builders), seeded
//! test data, the CPU oracles (the tile VM and the CPU intrinsics, beside the plain-Rust loops the
//! tests write), comparisons with explicit tolerances, and the [`Device`] trait — render a kernel
//! to a plan, run a plan on given inputs, read its outputs and fault word — implemented once for
//! OpenCL ([`Cl`], opencl3 on PoCL in CI) and once for WGSL ([`Gpu`], wgpu on lavapipe in CI,
//! with [`validate`] checking sources with naga). Cases both targets run ([`transpose_matches`],
//! [`matmul_matches`], [`scan_matches`]) are here; each test file keeps what is particular to its target.
//!
//! Both devices keep the programs they compiled by source text, so a test that runs one plan
//! several times (a fault after a clean run, another grid size) compiles it once.
#![allow(dead_code)]

use arrayflow::exec::TypedVec;
use arrayflow::intrinsics::transpose::TransposeShape;
use arrayflow::ir::{BinaryOp, contiguous_strides};
use arrayflow::ir::{DType, FoldMode, GenKind, Intrinsic, RandomDist, ReduceOp, Shape, UnaryOp};
use arrayflow::proggen::codegen::gpu::{self, BufArg, GpuPlan, Target, Unsupported, elem_bytes};
use arrayflow::proggen::codegen::{opencl, wgsl};
use arrayflow::proggen::kernel::{
    Domain, Fold, FoldedDim, FusedKernel, IndexMap, Instr, ParamKind, ReduceStore, Reg, Store,
};
use arrayflow::proggen::sequence::IntrinsicCall;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

// ---------------------------------------------------------------------------------------------
// Kernels built by hand.

/// A fused kernel under construction over a domain `shape`: element-wise unless it has
/// reductions, which reduce the last axis.
pub struct Kb(pub FusedKernel);

impl Kb {
    /// An empty kernel over `shape` with no inputs.
    pub fn new(shape: &[usize]) -> Kb {
        let len: usize = shape.iter().product();
        Kb(FusedKernel {
            domain: Domain {
                shape: Shape::from_slice(shape),
                inner: 1,
                outer: len,
                perm: None,
            },
            inputs: Vec::new(),
            outputs: Vec::new(),
            instrs: Vec::new(),
            instr_sites: Vec::new(),
            stores: Vec::new(),
            reductions: Vec::new(),
            reg_dtypes: Vec::new(),
            params: Vec::new(),
            traps: Vec::new(),
        })
    }
    /// Appends the instruction `f(dst)` writing a new register of type `d`.
    #[track_caller]
    pub fn push(&mut self, d: DType, f: impl FnOnce(Reg) -> Instr) -> Reg {
        let r = self.0.reg_dtypes.len() as Reg;
        self.0.reg_dtypes.push(d);
        self.0.instrs.push(f(r));
        self.0.instr_sites.push(std::panic::Location::caller());
        r
    }
    /// A new input of type `d`, loaded through `map`.
    #[track_caller]
    pub fn load(&mut self, d: DType, map: IndexMap) -> Reg {
        let input = self.0.inputs.len() as u32;
        self.0.inputs.push(d);
        self.load_from(input, map)
    }
    /// Input `input` (already declared) loaded again through `map`.
    #[track_caller]
    pub fn load_from(&mut self, input: u32, map: IndexMap) -> Reg {
        let d = self.0.inputs[input as usize];
        self.push(d, |dst| Instr::Load { dst, input, map })
    }
    /// A new parameter slot holding a constant of type `d`.
    #[track_caller]
    pub fn konst(&mut self, d: DType) -> Reg {
        let slot = self.0.params.len() as u32;
        self.0.params.push(ParamKind::Const(d));
        self.push(d, |dst| Instr::Const {
            dst,
            slot,
            dtype: d,
        })
    }
    #[track_caller]
    pub fn unary(&mut self, op: UnaryOp, a: Reg) -> Reg {
        let d = op.out_dtype(self.0.reg_dtypes[a as usize]).unwrap();
        self.push(d, |dst| Instr::Unary { dst, op, a })
    }
    #[track_caller]
    pub fn binary(&mut self, op: BinaryOp, a: Reg, b: Reg) -> Reg {
        let d = op.out_dtype(self.0.reg_dtypes[a as usize]).unwrap();
        self.push(d, |dst| Instr::Binary { dst, op, a, b })
    }
    #[track_caller]
    pub fn cast(&mut self, to: DType, a: Reg) -> Reg {
        self.push(to, |dst| Instr::Cast { dst, to, a })
    }
    /// `cond ? a : b`.
    #[track_caller]
    pub fn select(&mut self, cond: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg_dtypes[a as usize];
        self.push(d, |dst| Instr::Select { dst, cond, a, b })
    }
    /// Generator `kind` of type `d` over `shape`, read through `map`.
    #[track_caller]
    pub fn generate(&mut self, kind: GenKind, d: DType, shape: &[usize], map: IndexMap) -> Reg {
        let shape = Shape::from_slice(shape);
        self.push(d, |dst| Instr::Gen {
            dst,
            kind,
            shape,
            map,
        })
    }
    /// An f32 random draw with a key and counter slot of its own.
    #[track_caller]
    pub fn random(&mut self, dist: RandomDist, map: IndexMap) -> Reg {
        let key_slot = self.0.params.len() as u32;
        self.0
            .params
            .extend([ParamKind::RandomKey, ParamKind::RandomCounter]);
        self.random_from(dist, DType::F32, key_slot, map)
    }
    /// A random draw of type `d` from the stream of existing slots `key_slot`, `key_slot + 1`.
    #[track_caller]
    pub fn random_from(&mut self, dist: RandomDist, d: DType, key_slot: u32, map: IndexMap) -> Reg {
        self.push(d, |dst| Instr::Random {
            dst,
            alg: arrayflow::ir::RngAlgorithm::Philox,
            dist,
            key_slot,
            counter_slot: key_slot + 1,
            range_slot: None,
            map,
        })
    }
    /// Stores `reg` element-wise to a new output; returns its index.
    pub fn store(&mut self, reg: Reg) -> u32 {
        let output = self.0.outputs.len() as u32;
        self.0.outputs.push(self.0.reg_dtypes[reg as usize]);
        self.0.stores.push(Store { reg, output });
        output
    }
    /// Reduces `reg` over the domain's last axis to a new output; returns its index.
    pub fn reduce(&mut self, op: ReduceOp, reg: Reg) -> u32 {
        self.reduce_tail(op, reg, 1)
    }
    /// Reduces `reg` over the domain's last `axes` axes to a new output; returns its index.
    pub fn reduce_tail(&mut self, op: ReduceOp, reg: Reg, axes: usize) -> u32 {
        let shape = &self.0.domain.shape;
        let split = shape.len() - axes;
        self.0.domain.inner = shape[split..].iter().product();
        self.0.domain.outer = shape[..split].iter().product();
        let output = self.0.outputs.len() as u32;
        let d = op.out_dtype(self.0.reg_dtypes[reg as usize]).unwrap();
        self.0.outputs.push(d);
        self.0.reductions.push(ReduceStore { reg, op, output });
        output
    }
    /// The finished kernel.
    pub fn build(self) -> FusedKernel {
        self.0
    }
}

/// `out = op(in0)` over `[n]`.
pub fn unary_kernel(op: UnaryOp, d: DType, n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let a = k.load(d, IndexMap::Contiguous);
    let r = k.unary(op, a);
    k.store(r);
    k.build()
}

/// `out = op(in0, in1)` over `[n]`.
pub fn binary_kernel(op: BinaryOp, d: DType, n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let a = k.load(d, IndexMap::Contiguous);
    let b = k.load(d, IndexMap::Contiguous);
    let r = k.binary(op, a, b);
    k.store(r);
    k.build()
}

/// `out = (to) in0` over `[n]`.
pub fn cast_kernel(from: DType, to: DType, n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let a = k.load(from, IndexMap::Contiguous);
    let r = k.cast(to, a);
    k.store(r);
    k.build()
}

/// `out = kind` of type `d` over `shape`, read in place.
pub fn gen_kernel(kind: GenKind, shape: &[usize], d: DType) -> FusedKernel {
    let mut k = Kb::new(shape);
    let r = k.generate(kind, d, shape, IndexMap::Contiguous);
    k.store(r);
    k.build()
}

/// `out = random(dist)` in f32 over `[n]` (key and counter as parameters).
pub fn random_kernel(dist: RandomDist, n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let r = k.random(dist, IndexMap::Contiguous);
    k.store(r);
    k.build()
}

/// `reduce(op, load(in0))` over [outer, inner], plus an element-wise copy of the input.
pub fn reduce_kernel(op: ReduceOp, d: DType, outer: usize, inner: usize) -> FusedKernel {
    let mut k = Kb::new(&[outer, inner]);
    let a = k.load(d, IndexMap::Contiguous);
    k.store(a);
    k.reduce(op, a);
    k.build()
}

/// `out = in[map]` over `shape` for an f32 input.
pub fn map_kernel(shape: &[usize], map: IndexMap) -> FusedKernel {
    let mut k = Kb::new(shape);
    let a = k.load(DType::F32, map);
    k.store(a);
    k.build()
}

/// A strided index map.
pub fn strided(offset: isize, strides: &[isize]) -> IndexMap {
    IndexMap::Strided {
        offset,
        strides: strides.iter().copied().collect(),
    }
}

/// Tiles an input of `shape_in` over the domain: dim j reads `(offset_j + d_j) mod shape_in[j]`.
pub fn periodic(shape_in: &[usize], offset: &[isize]) -> IndexMap {
    folded(shape_in, offset, &vec![FoldMode::Wrap; shape_in.len()])
}

/// Reads an input of `shape_in` over the domain with dim j at `modes[j](offset_j + d_j)` folded
/// into `shape_in[j]` (roll, pad's modes).
pub fn folded(shape_in: &[usize], offset: &[isize], modes: &[FoldMode]) -> IndexMap {
    let cs = contiguous_strides(shape_in);
    IndexMap::Folded {
        dims: (0..shape_in.len())
            .map(|j| FoldedDim {
                offset: offset[j],
                coef: (0..shape_in.len()).map(|k| (k == j) as isize).collect(),
                folds: smallvec::smallvec![Fold::new(modes[j], shape_in[j])],
                stride: cs[j],
            })
            .collect(),
    }
}

/// An intrinsic call producing `out` of type `d`.
pub fn call(
    op: Intrinsic,
    in_shapes: &[&[usize]],
    in_dtypes: &[DType],
    out: &[usize],
    d: DType,
) -> IntrinsicCall {
    IntrinsicCall {
        op,
        in_shapes: in_shapes.iter().map(|s| Shape::from_slice(s)).collect(),
        in_dtypes: in_dtypes.to_vec(),
        out_shape: Shape::from_slice(out),
        dtype: d,
    }
}

// ---------------------------------------------------------------------------------------------
// Test data.

/// Deterministic pseudo-random u64s (53 bits).
pub fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 11
    }
}

/// Floats in [-4, 4) after a prefix of special values.
pub fn floats(n: usize, seed: u64) -> Vec<f64> {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        1.0000001,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e30,
        -1e30,
        3e9,
        -3e9,
        5e9,
        1e-30,
        100.0,
        -100.0,
        0.999,
    ];
    let mut r = lcg(seed);
    special
        .iter()
        .copied()
        .chain(std::iter::repeat_with(move || {
            (r() as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
        }))
        .take(n)
        .collect()
}

/// The real element types.
pub const REAL_TYPES: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::U32, DType::Bool];

/// Every element type, the complex ones last (OpenCL renders them all; WGSL all but f64 and
/// `Complex<f64>`).
pub const ALL_TYPES: [DType; 7] = [
    DType::F32,
    DType::F64,
    DType::I32,
    DType::U32,
    DType::Bool,
    DType::C64,
    DType::C128,
];

/// Whether an op of the tables accepts its input type (`out` is its result type).
pub fn gpu_renders(out: Option<DType>) -> bool {
    out.is_some()
}

/// `n` values of type `d`: [`floats`], integers with their extremes first, random bools.
pub fn data(d: DType, n: usize, seed: u64) -> TypedVec {
    let mut r = lcg(seed);
    match d {
        DType::F32 => TypedVec::F32(floats(n, seed).iter().map(|&x| x as f32).collect()),
        DType::F64 => TypedVec::F64(floats(n, seed)),
        DType::I32 => TypedVec::I32(
            [0, 1, -1, i32::MIN, i32::MAX, 7, -7, i32::MIN, 100]
                .into_iter()
                .chain(std::iter::repeat_with(move || match r() % 3 {
                    0 => r() as i32,
                    _ => (r() % 41) as i32 - 20,
                }))
                .take(n)
                .collect(),
        ),
        DType::U32 => TypedVec::U32(
            [0, 1, u32::MAX, 7, 1 << 31, 100]
                .into_iter()
                .chain(std::iter::repeat_with(move || match r() % 3 {
                    0 => r() as u32,
                    _ => (r() % 41) as u32,
                }))
                .take(n)
                .collect(),
        ),
        DType::Bool => TypedVec::Bool((0..n).map(|_| r() % 2 == 1).collect()),
        DType::C64 | DType::C128 => {
            let f = floats(2 * n, seed);
            let z = (0..n).map(|i| arrayflow::Complex::new(f[2 * i], f[2 * i + 1]));
            if d == DType::C64 {
                TypedVec::C64(
                    z.map(|z| arrayflow::Complex::new(z.re as f32, z.im as f32))
                        .collect(),
                )
            } else {
                TypedVec::C128(z.collect())
            }
        }
    }
}

/// Divisors for integer division tests: `data` without zeros, -1 against i32::MIN at the start.
pub fn divisors(d: DType, n: usize, seed: u64) -> TypedVec {
    match data(d, n, seed) {
        TypedVec::I32(mut v) => {
            v[..4].copy_from_slice(&[3, -1, 5, -1]);
            v.iter_mut().filter(|x| **x == 0).for_each(|x| *x = 3);
            TypedVec::I32(v)
        }
        TypedVec::U32(v) => TypedVec::U32(v.into_iter().map(|x| x.max(1)).collect()),
        v => v,
    }
}

/// A deterministic pseudo-random sequence in [lo, hi) (xorshift).
pub fn sample(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// [`sample`] rounded to f32.
pub fn sample_f32(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f32> {
    sample(n, seed, lo, hi).iter().map(|&x| x as f32).collect()
}

/// Typed views of host data, panicking on another element type.
pub trait Host {
    fn f32(&self) -> &[f32];
    fn f64(&self) -> &[f64];
    fn i32(&self) -> &[i32];
    fn u32(&self) -> &[u32];
    fn bools(&self) -> &[bool];
    /// Bools as the 0/1 words a WGSL buffer holds.
    fn words(&self) -> Vec<u32> {
        self.bools().iter().map(|&b| b as u32).collect()
    }
}

impl Host for TypedVec {
    fn f32(&self) -> &[f32] {
        match self {
            TypedVec::F32(v) => v,
            _ => panic!("not f32: {self:?}"),
        }
    }
    fn f64(&self) -> &[f64] {
        match self {
            TypedVec::F64(v) => v,
            _ => panic!("not f64: {self:?}"),
        }
    }
    fn i32(&self) -> &[i32] {
        match self {
            TypedVec::I32(v) => v,
            _ => panic!("not i32: {self:?}"),
        }
    }
    fn u32(&self) -> &[u32] {
        match self {
            TypedVec::U32(v) => v,
            _ => panic!("not u32: {self:?}"),
        }
    }
    fn bools(&self) -> &[bool] {
        match self {
            TypedVec::Bool(v) => v,
            _ => panic!("not bool: {self:?}"),
        }
    }
}

/// Bool host data from 0/1 words.
pub fn bools_of(words: &[u32]) -> TypedVec {
    TypedVec::Bool(words.iter().map(|&w| w != 0).collect())
}

/// The bytes of host data as OpenCL stores them (bools as bytes).
pub fn bytes_of(v: &TypedVec) -> Vec<u8> {
    match v {
        TypedVec::F32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::F64(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::I32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::U32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        TypedVec::C64(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::C128(v) => bytemuck::cast_slice(v).to_vec(),
    }
}

/// Host data of type `d` from `bytes` in which a bool takes `bool_bytes` bytes (1 for OpenCL, 4
/// for WGSL); a bool must be 0 or 1.
pub fn from_bytes(d: DType, b: &[u8], bool_bytes: usize) -> TypedVec {
    match d {
        DType::F32 => TypedVec::F32(bytemuck::pod_collect_to_vec(b)),
        DType::F64 => TypedVec::F64(bytemuck::pod_collect_to_vec(b)),
        DType::I32 => TypedVec::I32(bytemuck::pod_collect_to_vec(b)),
        DType::U32 => TypedVec::U32(bytemuck::pod_collect_to_vec(b)),
        DType::C64 => TypedVec::C64(bytemuck::pod_collect_to_vec(b)),
        DType::C128 => TypedVec::C128(bytemuck::pod_collect_to_vec(b)),
        DType::Bool => {
            let words: Vec<u32> = if bool_bytes == 1 {
                b.iter().map(|&x| x as u32).collect()
            } else {
                bytemuck::pod_collect_to_vec(b)
            };
            assert!(
                words.iter().all(|&x| x <= 1),
                "a bool output holds {words:?}"
            );
            bools_of(&words)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The CPU oracles.

/// Each output's type and length (the reduction results, or the domain).
pub fn output_specs(k: &FusedKernel) -> Vec<(DType, usize)> {
    k.outputs
        .iter()
        .enumerate()
        .map(|(o, &d)| {
            let reduced = k.reductions.iter().any(|r| r.output == o as u32);
            (
                d,
                if reduced {
                    k.domain.outer
                } else {
                    k.domain.len()
                },
            )
        })
        .collect()
}

/// The CPU tile VM's outputs for `k`, or its error message.
pub fn cpu(k: &FusedKernel, inputs: &[&TypedVec], params: &[u64]) -> Result<Vec<TypedVec>, String> {
    let mut outs: Vec<TypedVec> = output_specs(k)
        .iter()
        .map(|&(d, n)| TypedVec::zeros(d, n))
        .collect();
    let external = vec![None; outs.len()];
    arrayflow::exec::cpu::vm::run_fused(k, 1024, inputs, &mut outs, &external, params)
        .map_err(|e| e.to_string())?;
    Ok(outs)
}

/// The CPU intrinsic's output, or its error.
pub fn cpu_intrinsic(c: &IntrinsicCall, inputs: &[&TypedVec]) -> Result<TypedVec, String> {
    let mut out = TypedVec::zeros(c.dtype, c.out_shape.iter().product());
    arrayflow::intrinsics::cpu::run(c, inputs, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// Whether `got` is `want` up to `ulps` units in the last place (of f32 when `f32`) or `abs`
/// absolutely (NaN = NaN).
pub fn close_ulps(got: f64, want: f64, ulps: u64, abs: f64, f32: bool) -> bool {
    let bits = |x: f64| {
        if f32 {
            (x as f32).to_bits() as i32 as i64
        } else {
            x.to_bits() as i64
        }
    };
    (got.is_nan() && want.is_nan())
        || got == want
        || (got - want).abs() <= abs
        || (got.signum() == want.signum() && bits(got).abs_diff(bits(want)) <= ulps)
}

/// Whether f32 `got` is within `max(rel * |want|, abs)` of `want`; NaN must match NaN and
/// infinities exactly.
pub fn close_rel(got: f32, want: f64, rel: f64, abs: f64) -> bool {
    let g = got as f64;
    if want.is_nan() || g.is_nan() {
        return want.is_nan() && g.is_nan();
    }
    if want.is_infinite() || g.is_infinite() {
        return g == want;
    }
    (g - want).abs() <= (rel * want.abs()).max(abs)
}

/// Compares outputs: integers and bools exactly, floats within `ulps` (or a tiny absolute error:
/// 1e-6 for f32, 1e-14 for f64).
#[track_caller]
pub fn assert_outputs(what: &str, got: &[TypedVec], want: &[TypedVec], ulps: u64) {
    assert_eq!(got.len(), want.len());
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        match (g, w) {
            (TypedVec::F32(g), TypedVec::F32(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close_ulps(a as f64, b as f64, ulps, 1e-6, true),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            (TypedVec::F64(g), TypedVec::F64(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close_ulps(a, b, ulps, 1e-14, false),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            (TypedVec::C64(g), TypedVec::C64(w)) => {
                for (i, (a, b)) in g.iter().zip(w).enumerate() {
                    let (a, b) = (
                        arrayflow::Complex::new(a.re as f64, a.im as f64),
                        arrayflow::Complex::new(b.re as f64, b.im as f64),
                    );
                    assert!(
                        close_complex(a, b, ulps, true),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            (TypedVec::C128(g), TypedVec::C128(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close_complex(a, b, ulps, false),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            _ => assert_eq!(g, w, "{what}: output {o}"),
        }
    }
}

/// Whether each part of complex `got` is its part of `want` up to `ulps` units in the last place
/// (of f32 when `f32`), or within `ulps` units of the type's epsilon times `|want|` (a part
/// much smaller than the modulus, after cancellation, is only as accurate as the modulus).
pub fn close_complex(
    got: arrayflow::Complex<f64>,
    want: arrayflow::Complex<f64>,
    ulps: u64,
    f32: bool,
) -> bool {
    let (eps, abs) = if f32 {
        (f32::EPSILON as f64, 1e-6)
    } else {
        (f64::EPSILON, 1e-14)
    };
    let m = want.norm();
    [(got.re, want.re), (got.im, want.im)]
        .into_iter()
        .all(|(g, w)| {
            close_ulps(g, w, ulps, abs, f32)
                || (m.is_finite() && (g - w).abs() <= ulps as f64 * eps * m)
        })
}

/// Subnormal f32 (GPUs may flush them; the suite ignores such elements on GPUs).
pub fn subnormal(x: f32) -> bool {
    x != 0.0 && x.abs() < f32::MIN_POSITIVE
}

/// Indices where `got` and `want` differ in bits (NaNs equal), skipping subnormal inputs/results.
pub fn bit_misses(ins: &[&[f32]], got: &[f32], want: &[f32]) -> Vec<String> {
    (0..want.len())
        .filter(|&j| {
            let (g, w) = (got[j], want[j]);
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            let skipped = subnormal(w) || ins.iter().any(|x| subnormal(x[j]));
            !same && !skipped
        })
        .take(10)
        .map(|j| {
            let xs: Vec<String> = ins.iter().map(|x| format!("{:e}", x[j])).collect();
            format!("[{j}] {xs:?}: {:e} vs {:e}", got[j], want[j])
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A target: render, run, read back.

/// What a plan computed: the outputs and the fault word (0 without one).
pub struct Ran {
    pub outputs: Vec<TypedVec>,
    pub fault: u32,
}

impl Ran {
    /// The outputs and the fault word.
    pub fn into_parts(self) -> (Vec<TypedVec>, u32) {
        (self.outputs, self.fault)
    }
}

/// A code generator and the device that runs its programs.
pub trait Device: Sync {
    /// The target kernels are rendered for by default (what the device offers).
    fn target(&self) -> Target;
    /// Renders fused kernel `k` for `t`.
    fn render(&self, k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported>;
    /// Renders an intrinsic call for `t`.
    fn render_intrinsic(&self, c: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported>;
    /// Renders the tiled transpose of `s` for `t`.
    fn render_transpose(&self, s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported>;
    /// Checks the program statically: OpenCL builds it on the device, WGSL validates it with naga.
    fn check(&self, plan: &GpuPlan, what: &str);
    /// Runs `plan` as an executor would — zero-filled outputs (type, length) and scratch, passes
    /// in order, parameter slots `params` — and reads the outputs and the fault word.
    fn run_plan(
        &self,
        plan: &GpuPlan,
        inputs: &[&TypedVec],
        outputs: &[(DType, usize)],
        params: &[u64],
    ) -> Ran;
    /// Whether the device runs f64 kernels.
    fn fp64(&self) -> bool {
        self.target().fp64
    }
    /// Renders `k` for the default target and runs it.
    fn run(&self, k: &FusedKernel, inputs: &[&TypedVec], params: &[u64]) -> Ran {
        self.run_as(k, self.target(), inputs, params)
    }
    /// Renders `k` for `t` and runs it.
    fn run_as(&self, k: &FusedKernel, t: Target, inputs: &[&TypedVec], params: &[u64]) -> Ran {
        let plan = self.render(k, t).unwrap();
        self.run_plan(&plan, inputs, &output_specs(k), params)
    }
    /// Renders intrinsic call `c` for the default target and runs it.
    fn run_intrinsic(&self, c: &IntrinsicCall, inputs: &[&TypedVec]) -> Ran {
        let plan = self.render_intrinsic(c, self.target()).unwrap();
        self.run_plan(
            &plan,
            inputs,
            &[(c.dtype, c.out_shape.iter().product())],
            &[],
        )
    }
}

/// Whether `ARRAYFLOW_REQUIRE_BACKENDS` names `backend` (then a missing device fails the test).
pub fn required(backend: &str) -> bool {
    std::env::var("ARRAYFLOW_REQUIRE_BACKENDS")
        .is_ok_and(|v| v.split(',').any(|b| b.trim() == backend))
}

/// Source lines numbered, for build errors.
pub fn numbered(src: &str) -> String {
    src.lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} {l}\n", i + 1))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// OpenCL (opencl3; PoCL in CI).

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{
    CL_DEVICE_TYPE_ALL, CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, Device as ClDevice,
};
use opencl3::kernel::{ExecuteKernel, Kernel as ClKernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_ulong};

/// The OpenCL target with f64.
pub const CL_FP64: Target = Target {
    fp64: true,
    immediates: false,
    fused_fma: true,
};
/// The OpenCL target without f64.
pub const CL_FP32: Target = Target {
    fp64: false,
    immediates: false,
    fused_fma: true,
};

/// The first OpenCL device, its queue and the programs built on it.
pub struct Cl {
    pub context: Context,
    pub queue: CommandQueue,
    pub fp64: bool,
    /// Build options: correctly rounded f32 division and square root where the device has them,
    /// as the CPU computes them (the executor builds with the same options).
    pub options: &'static str,
    programs: Mutex<HashMap<String, Arc<Program>>>,
}

fn open_cl() -> Result<Cl, String> {
    let platforms = opencl3::platform::get_platforms().map_err(|e| e.to_string())?;
    let id = platforms
        .iter()
        .flat_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default())
        .next()
        .ok_or("no OpenCL device")?;
    let device = ClDevice::new(id);
    let context = Context::from_device(&device).map_err(|e| e.to_string())?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0).map_err(|e| e.to_string())?;
    let rounded = device.single_fp_config().unwrap_or(0) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
    Ok(Cl {
        context,
        queue,
        fp64: device.double_fp_config().unwrap_or(0) != 0,
        options: if rounded != 0 {
            "-cl-fp32-correctly-rounded-divide-sqrt"
        } else {
            ""
        },
        programs: Mutex::new(HashMap::new()),
    })
}

/// The OpenCL device, or `None` (after a skip message) when there is none and
/// `ARRAYFLOW_REQUIRE_BACKENDS` does not name `opencl` (it panics then).
pub fn opencl_device(test: &str) -> Option<&'static Cl> {
    static DEVICE: OnceLock<Result<Cl, String>> = OnceLock::new();
    match DEVICE.get_or_init(open_cl) {
        Ok(cl) => Some(cl),
        Err(e) => {
            assert!(
                !required("opencl"),
                "ARRAYFLOW_REQUIRE_BACKENDS names opencl but OpenCL is unavailable: {e}"
            );
            eprintln!("skipping {test}: no OpenCL platform ({e})");
            None
        }
    }
}

impl Cl {
    /// The program of `plan` built on the device (once per source text).
    pub fn build(&self, plan: &GpuPlan) -> Arc<Program> {
        if let Some(p) = self.programs.lock().unwrap().get(&plan.source) {
            return p.clone();
        }
        let program =
            Program::create_and_build_from_source(&self.context, &plan.source, self.options)
                .unwrap_or_else(|log| {
                    panic!(
                        "build failed:\n{log}\n--- kernel part of the source ---\n{}",
                        numbered(&plan.source[opencl::LIBRARY.len().min(plan.source.len())..])
                    )
                });
        let program = Arc::new(program);
        self.programs
            .lock()
            .unwrap()
            .insert(plan.source.clone(), program.clone());
        program
    }

    /// The targets the device can take for kernels of element type `d`: with and without f64.
    pub fn targets(&self, d: DType) -> Vec<Target> {
        [CL_FP64, CL_FP32]
            .into_iter()
            .filter(|t| {
                if t.fp64 {
                    self.fp64
                } else {
                    !matches!(d, DType::F64 | DType::C128)
                }
            })
            .collect()
    }

    /// A device buffer holding `data` (at least 4 bytes: OpenCL has no empty buffers).
    fn buffer(&self, data: &[u8]) -> Buffer<u8> {
        let mut data = data.to_vec();
        data.resize(data.len().max(4), 0);
        // SAFETY: no host pointer; the size is non-zero.
        let mut b = unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                data.len(),
                std::ptr::null_mut(),
            )
        }
        .unwrap();
        // SAFETY: a blocking write of the buffer's own size.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut b, CL_BLOCKING, 0, &data, &[])
        }
        .unwrap();
        b
    }
}

impl Device for Cl {
    fn target(&self) -> Target {
        Target {
            fp64: self.fp64,
            immediates: false,
            fused_fma: true,
        }
    }
    fn render(&self, k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
        opencl::render(k, t)
    }
    fn render_intrinsic(&self, c: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
        arrayflow::intrinsics::opencl::render(c, t)
    }
    fn render_transpose(&self, s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported> {
        arrayflow::intrinsics::opencl::render_transpose(s, t)
    }
    fn check(&self, plan: &GpuPlan, _what: &str) {
        let program = self.build(plan);
        for pass in &plan.passes {
            ClKernel::create(&program, &pass.entry).unwrap();
        }
    }
    fn run_plan(
        &self,
        plan: &GpuPlan,
        inputs: &[&TypedVec],
        outputs: &[(DType, usize)],
        params: &[u64],
    ) -> Ran {
        let program = self.build(plan);
        let ins: Vec<_> = inputs.iter().map(|v| self.buffer(&bytes_of(v))).collect();
        let outs: Vec<_> = outputs
            .iter()
            .map(|&(d, n)| self.buffer(&vec![0; elem_bytes(d, false) as usize * n]))
            .collect();
        let scratch: Vec<_> = plan
            .scratch
            .iter()
            .map(|&b| self.buffer(&vec![0; b as usize]))
            .collect();
        for pass in plan.passes.iter().filter(|p| p.groups > 0) {
            let kernel = ClKernel::create(&program, &pass.entry).unwrap();
            let mut exec = ExecuteKernel::new(&kernel);
            for b in &pass.buffers {
                let buf = match *b {
                    BufArg::Input(i) => &ins[i as usize],
                    BufArg::Output(o) => &outs[o as usize],
                    BufArg::Scratch(s) => &scratch[s as usize],
                };
                // SAFETY: a buffer argument, as the entry's signature declares (the plan's
                // contract).
                unsafe { exec.set_arg(&buf.get()) };
            }
            if pass.params {
                for &p in params {
                    // SAFETY: one ulong per parameter slot.
                    unsafe { exec.set_arg(&(p as cl_ulong)) };
                }
            }
            exec.set_global_work_size(pass.groups as usize * pass.local as usize)
                .set_local_work_size(pass.local as usize);
            // SAFETY: every argument is set; the buffers outlive the queue's work (finish below).
            unsafe { exec.enqueue_nd_range(&self.queue) }.unwrap();
        }
        self.queue.finish().unwrap();
        let read = |b: &Buffer<u8>, n: usize| {
            let mut v = vec![0u8; n.max(4)];
            // SAFETY: a blocking read of at most the buffer's size.
            unsafe {
                self.queue
                    .enqueue_read_buffer(b, CL_BLOCKING, 0, &mut v, &[])
            }
            .unwrap();
            v.truncate(n);
            v
        };
        Ran {
            outputs: outputs
                .iter()
                .zip(&outs)
                .map(|(&(d, n), b)| from_bytes(d, &read(b, elem_bytes(d, false) as usize * n), 1))
                .collect(),
            fault: plan.fault.map_or(0, |f| {
                u32::from_ne_bytes(read(&scratch[f as usize], 4).try_into().unwrap())
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// WGSL (wgpu on a Vulkan adapter; lavapipe in CI) and naga validation.

use wgpu::naga;

/// A Vulkan adapter's device and queue, and the pipelines built on it.
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// The device was given immediate data (the adapter offers at least `IMMEDIATE_BYTES`).
    pub immediates: bool,
    /// The device's `fma` rounds once (the executor's probe).
    pub fused_fma: bool,
    /// Compiled pipelines by source text and entry point.
    pipelines: Mutex<HashMap<(String, String), wgpu::ComputePipeline>>,
}

/// The Vulkan adapter, or `None` (after a skip message) when there is none and
/// `ARRAYFLOW_REQUIRE_BACKENDS` does not name `wgpu` (it panics then).
pub fn wgpu_device() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    let g = GPU.get_or_init(|| {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter =
            pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
                .ok()?;
        let immediates = adapter.features().contains(wgpu::Features::IMMEDIATES)
            && adapter.limits().max_immediate_size >= wgsl::IMMEDIATE_BYTES;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            required_features: if immediates {
                wgpu::Features::IMMEDIATES
            } else {
                wgpu::Features::empty()
            },
            required_limits: wgpu::Limits {
                max_immediate_size: if immediates { wgsl::IMMEDIATE_BYTES } else { 0 },
                ..adapter.limits()
            },
            ..Default::default()
        }))
        .ok()?;
        let info = adapter.get_info();
        let fused_fma =
            gpu::tuning().wgpu_fma && arrayflow::exec::gpu::wgpu_probe::fused_fma(&device, &queue);
        eprintln!(
            "wgpu adapter: {} ({:?}), immediates: {immediates}, fused fma: {fused_fma}",
            info.name, info.driver_info
        );
        Some(Gpu {
            device,
            queue,
            immediates,
            fused_fma,
            pipelines: Mutex::new(HashMap::new()),
        })
    });
    if g.is_none() {
        let required = std::env::var("ARRAYFLOW_REQUIRE_BACKENDS").unwrap_or_default();
        assert!(
            !required.contains("wgpu"),
            "ARRAYFLOW_REQUIRE_BACKENDS={required} but no Vulkan adapter is available"
        );
        eprintln!("skipped: no Vulkan adapter for wgpu");
    }
    g.as_ref()
}

/// The WGSL target of the test adapter: immediates where it offers them (and where there is no
/// adapter, for the validation-only tests).
pub fn wgsl_target() -> Target {
    Target {
        fp64: false,
        immediates: wgpu_device().is_none_or(|g| g.immediates),
        fused_fma: wgpu_device().is_some_and(|g| g.fused_fma),
    }
}

/// The `N` of the `var<immediate> params: array<u32, N>` that `source` declares, if any.
pub fn declared_immediate_words(source: &str) -> Option<u32> {
    let decl = "var<immediate> params: array<u32, ";
    let rest = &source[source.find(decl)? + decl.len()..];
    rest[..rest.find('>')?].parse().ok()
}

/// The generated part of a WGSL source (after the library), for error messages.
pub fn kernel_tail(s: &str) -> &str {
    s.find("// ---- kernel").map_or(s, |i| &s[i..])
}

/// Parses and validates `plan.source` with naga, and checks that each pass's entry point
/// statically uses exactly bindings `0 .. buffers.len()` (plus the parameters after them when
/// `params` is set and they are not immediates), all in group 0.
pub fn validate(plan: &GpuPlan, what: &str) {
    let module = naga::front::wgsl::parse_str(&plan.source).unwrap_or_else(|e| {
        panic!(
            "{what}: WGSL parse error:\n{}",
            e.emit_to_string(&plan.source)
        )
    });
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default() | naga::valid::Capabilities::IMMEDIATES,
    )
    .validate(&module)
    .unwrap_or_else(|e| {
        panic!(
            "{what}: WGSL validation error:\n{}\n{}",
            e.emit_to_string(&plan.source),
            kernel_tail(&plan.source)
        )
    });
    for p in &plan.passes {
        let (ei, _) = module
            .entry_points
            .iter()
            .enumerate()
            .find(|(_, e)| e.name == p.entry)
            .unwrap_or_else(|| panic!("{what}: no entry point {}", p.entry));
        let ep = info.get_entry_point(ei);
        let mut used: Vec<u32> = module
            .global_variables
            .iter()
            .filter(|(h, _)| !ep[*h].is_empty())
            .filter_map(|(_, v)| v.binding.as_ref())
            .map(|b| {
                assert_eq!(b.group, 0, "{what}: group");
                b.binding
            })
            .collect();
        used.sort_unstable();
        // Parameters are immediates (no binding) when the kernel's slots fit, else a binding;
        // the plan says which, as the program declares.
        let immediates = plan.immediate_words;
        assert_eq!(
            declared_immediate_words(&plan.source),
            immediates,
            "{what}: the plan's immediate words"
        );
        if let Some(words) = immediates {
            assert!(
                plan.passes.iter().any(|q| q.params),
                "{what}: immediates unused"
            );
            assert!(
                words * 4 <= wgsl::IMMEDIATE_BYTES,
                "{what}: {words} immediate words"
            );
        }
        let n = p.buffers.len() as u32 + (p.params && immediates.is_none()) as u32;
        assert_eq!(
            used,
            (0..n).collect::<Vec<_>>(),
            "{what}: entry {} uses bindings {used:?}, its pass lists {n}",
            p.entry
        );
        assert_eq!(p.local, wgsl::LOCAL, "{what}");
        assert!(p.groups <= wgsl::MAX_GROUPS, "{what}");
    }
    for (i, s) in plan.scratch.iter().enumerate() {
        assert!(*s > 0, "{what}: scratch {i} is empty");
    }
}

impl Gpu {
    /// The pipeline of `entry` in `source` (compiled once per source and entry).
    fn pipeline(&self, source: &str, entry: &str) -> wgpu::ComputePipeline {
        let key = (source.to_string(), entry.to_string());
        if let Some(p) = self.pipelines.lock().unwrap().get(&key) {
            return p.clone();
        }
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: None,
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipe = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
        self.pipelines.lock().unwrap().insert(key, pipe.clone());
        pipe
    }
}

impl Device for Gpu {
    fn target(&self) -> Target {
        wgsl_target()
    }
    fn render(&self, k: &FusedKernel, t: Target) -> Result<GpuPlan, Unsupported> {
        wgsl::render(k, t)
    }
    fn render_intrinsic(&self, c: &IntrinsicCall, t: Target) -> Result<GpuPlan, Unsupported> {
        arrayflow::intrinsics::wgsl::render(c, t)
    }
    fn render_transpose(&self, s: &TransposeShape, t: Target) -> Result<GpuPlan, Unsupported> {
        arrayflow::intrinsics::wgsl::render_transpose(s, t)
    }
    fn check(&self, plan: &GpuPlan, what: &str) {
        validate(plan, what);
    }
    fn run_plan(
        &self,
        plan: &GpuPlan,
        inputs: &[&TypedVec],
        outputs: &[(DType, usize)],
        params: &[u64],
    ) -> Ran {
        use wgpu::BufferUsages as U;
        let dev = &self.device;
        let buffer = |bytes: u64, usage: U| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: bytes.max(4).next_multiple_of(4),
                usage,
                mapped_at_creation: false,
            })
        };
        let ins: Vec<wgpu::Buffer> = inputs
            .iter()
            .map(|d| {
                // Bools are u32 words on the device.
                let bytes = match d {
                    TypedVec::Bool(_) => bytemuck::cast_slice(&d.words()).to_vec(),
                    _ => bytes_of(d),
                };
                let b = buffer(bytes.len() as u64, U::STORAGE | U::COPY_DST);
                self.queue.write_buffer(&b, 0, &bytes);
                b
            })
            .collect();
        let outs: Vec<wgpu::Buffer> = outputs
            .iter()
            .map(|&(d, n)| buffer(elem_bytes(d, true) * n as u64, U::STORAGE | U::COPY_SRC))
            .collect();
        let scratch: Vec<wgpu::Buffer> = plan
            .scratch
            .iter()
            .map(|&s| buffer(s, U::STORAGE | U::COPY_SRC))
            .collect();
        let mut words: Vec<u32> = params
            .iter()
            .flat_map(|&p| [p as u32, (p >> 32) as u32])
            .collect();
        words.resize(words.len().max(2), 0);
        let pbuf = buffer(words.len() as u64 * 4, U::STORAGE | U::COPY_DST);
        self.queue
            .write_buffer(&pbuf, 0, bytemuck::cast_slice(&words));

        let immediates = plan.immediate_words;
        assert!(
            immediates.is_none() || self.immediates,
            "a plan with immediates on an adapter without them (render with `wgsl_target()`)"
        );
        let mut enc = dev.create_command_encoder(&Default::default());
        for p in plan.passes.iter().filter(|p| p.groups > 0) {
            let pipe = self.pipeline(&plan.source, &p.entry);
            let mut entries: Vec<&wgpu::Buffer> = p
                .buffers
                .iter()
                .map(|b| match *b {
                    BufArg::Input(i) => &ins[i as usize],
                    BufArg::Output(i) => &outs[i as usize],
                    BufArg::Scratch(i) => &scratch[i as usize],
                })
                .collect();
            if p.params && immediates.is_none() {
                entries.push(&pbuf);
            }
            let entries: Vec<wgpu::BindGroupEntry> = entries
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.as_entire_binding(),
                })
                .collect();
            let bg = dev.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipe.get_bind_group_layout(0),
                entries: &entries,
            });
            let mut cp = enc.begin_compute_pass(&Default::default());
            cp.set_pipeline(&pipe);
            cp.set_bind_group(0, &bg, &[]);
            if let Some(n) = immediates.filter(|_| p.params) {
                let mut imm = words.clone();
                imm.resize(n as usize, 0);
                cp.set_immediates(0, bytemuck::cast_slice(&imm));
            }
            cp.dispatch_workgroups(p.groups, 1, 1);
        }
        let mut read: Vec<&wgpu::Buffer> = outs.iter().collect();
        if let Some(f) = plan.fault {
            read.push(&scratch[f as usize]);
        }
        let staging: Vec<wgpu::Buffer> = read
            .iter()
            .map(|b| {
                let s = buffer(b.size(), U::MAP_READ | U::COPY_DST);
                enc.copy_buffer_to_buffer(b, 0, &s, 0, b.size());
                s
            })
            .collect();
        self.queue.submit([enc.finish()]);
        for s in &staging {
            s.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
        }
        dev.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let mut bytes: Vec<Vec<u8>> = staging
            .iter()
            .map(|s| s.slice(..).get_mapped_range().unwrap().to_vec())
            .collect();
        let fault = if plan.fault.is_some() {
            bytemuck::cast_slice::<u8, u32>(&bytes.pop().unwrap())[0]
        } else {
            0
        };
        Ran {
            outputs: outputs
                .iter()
                .zip(&bytes)
                .map(|(&(d, n), b)| from_bytes(d, &b[..elem_bytes(d, true) as usize * n], 4))
                .collect(),
            fault,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cases both targets run.

/// The tiled transpose (`render_transpose`) of fused kernels that
/// `intrinsics::transpose::as_transpose` recognises, for element types `types`, with edges, batches
/// and an input offset: every element moved as a plain loop moves it (and as the CPU tile VM
/// does), also with 3 work-groups (the grid-stride loop over tiles).
pub fn transpose_matches<D: Device>(dev: &D, types: &[DType]) {
    for &d in types {
        if d == DType::F64 && !dev.fp64() {
            continue;
        }
        for (batch, rows, cols, offset) in [(1, 31, 33, 0), (3, 70, 45, 5), (2, 64, 96, 0)] {
            let what = format!("{d} transpose of {batch} x {rows} x {cols} from {offset}");
            let rc = (rows * cols) as isize;
            let mut kb = Kb::new(&[batch, cols, rows]);
            let r = kb.load(d, strided(offset as isize, &[rc, 1, cols as isize]));
            kb.store(r);
            let k = kb.build();
            let shape = arrayflow::intrinsics::transpose::as_transpose(&k)
                .unwrap_or_else(|| panic!("{what}: not recognised"));
            assert_eq!((shape.batch, shape.rows, shape.cols), (batch, rows, cols));
            // Distinct integers, so a misplaced element shows.
            let len = offset + batch * rows * cols + 7;
            let distinct = (0..len as u32).map(|i| i.wrapping_mul(2654435761));
            let input = match d {
                DType::U32 => TypedVec::U32(distinct.collect()),
                DType::I32 => TypedVec::I32(distinct.map(|x| x as i32).collect()),
                _ => data(d, len, 11),
            };
            // The plain loop: output (b, j, i) is input (b, i, j) after the offset.
            let mut order = Vec::with_capacity(batch * rows * cols);
            for b in 0..batch {
                for j in 0..cols {
                    for i in 0..rows {
                        order.push(offset + (b * rows + i) * cols + j);
                    }
                }
            }
            let all = bytes_of(&input);
            let w = all.len() / input.len();
            let want: Vec<u8> = order
                .iter()
                .flat_map(|&s| all[s * w..(s + 1) * w].iter().copied())
                .collect();
            let vm = cpu(&k, &[&input], &[]).unwrap();
            assert_eq!(bytes_of(&vm[0]), want, "{what}: the CPU tile VM");
            let mut plan = dev.render_transpose(&shape, dev.target()).unwrap();
            dev.check(&plan, &what);
            for groups in [plan.passes[0].groups, 3] {
                plan.passes[0].groups = groups;
                let got = dev.run_plan(&plan, &[&input], &output_specs(&k), &[]);
                assert_eq!(bytes_of(&got.outputs[0]), want, "{what}, {groups} groups");
            }
        }
    }
}

/// A kernel reducing an input of `shape` over `axes` (increasing) as the scheduler builds one:
/// the domain is the kept axes, then the reduced ones (`Domain::perm`), and the input is loaded
/// through its row-major strides permuted alike. Returns the builder and the loaded register;
/// reduce it with [`Kb::reduce_tail`]`(op, reg, axes.len())`.
pub fn axis_kernel(d: DType, shape: &[usize], axes: &[usize]) -> (Kb, Reg) {
    let perm: Vec<usize> = (0..shape.len())
        .filter(|a| !axes.contains(a))
        .chain(axes.iter().copied())
        .collect();
    let cs = contiguous_strides(shape);
    let dom: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
    let strides: Vec<isize> = perm.iter().map(|&a| cs[a] as isize).collect();
    let mut k = Kb::new(&dom);
    k.0.domain.perm = Some(perm.iter().copied().collect());
    let x = k.load(d, strided(0, &strides));
    (k, x)
}

/// The elements of a row-major input of `shape` by result and position: entry `o` lists the flat
/// indices of result `o`'s elements (results row-major over the kept axes) in the order of their
/// position in the reduced extent (row-major over `axes`). Walks the input, not the kernel's maps.
pub fn axis_groups(shape: &[usize], axes: &[usize]) -> Vec<Vec<usize>> {
    let inner: usize = axes.iter().map(|&a| shape[a]).product();
    let len: usize = shape.iter().product();
    let mut groups = vec![vec![usize::MAX; inner]; len / inner.max(1)];
    let mut coord = vec![0usize; shape.len()];
    for flat in 0..len {
        let (mut o, mut j) = (0, 0);
        for (a, &c) in coord.iter().enumerate() {
            if axes.contains(&a) {
                j = j * shape[a] + c;
            } else {
                o = o * shape[a] + c;
            }
        }
        groups[o][j] = flat;
        for a in (0..shape.len()).rev() {
            coord[a] += 1;
            if coord[a] < shape[a] {
                break;
            }
            coord[a] = 0;
        }
    }
    groups
}

/// Column reductions and their neighbours: inputs of several shapes reduced along axis 0 of a
/// 2-D array, axis 0 or 1 of a 3-D one (the column layout, `lower::columns`: a thread per result,
/// with and without chunks, a partial last chunk, results not a multiple of the work-group, a
/// final pass of 1, 2 and 4 threads per result) and
/// axes 0 and 2 (innermost axis reduced: the row layouts). Every reduction op of every type in
/// `types` at once against the CPU tile VM (floats from {-1, -0.5, 0, 0.5, 1} with a NaN and
/// infinities, so sums are exact in any order; integers wrap), and against plain loops over the
/// input: integer and exact float sums, argmin (ties and NaN to the first), and f32/f64 sums of
/// random data within rounding.
pub fn column_reductions_match<D: Device>(dev: &D, types: &[DType]) {
    use arrayflow::proggen::codegen::lower::columns;
    // (input shape, reduced axes, column layout, passes when known for every target).
    type Case = (&'static [usize], &'static [usize], bool, Option<usize>);
    let cases: [Case; 8] = [
        (&[3, 5], &[0], false, Some(1)),
        (&[40, 300], &[0], true, Some(1)),
        (&[700, 33], &[0], true, Some(2)),
        // 31 chunks: the final pass gives each result 4 threads and a tree.
        (&[2000, 40], &[0], true, Some(2)),
        (&[1000, 257], &[0], true, Some(2)),
        (&[300, 4, 40], &[0], true, Some(2)),
        (&[3, 200, 40], &[1], true, Some(2)),
        (&[50, 6, 40], &[0, 2], false, None),
    ];
    for &d in types {
        if d == DType::F64 && !dev.fp64() {
            continue;
        }
        for (shape, axes, column, passes) in cases {
            let what = format!("{d} reductions of {shape:?} over {axes:?}");
            let n: usize = shape.iter().product();
            let groups = axis_groups(shape, axes);
            let (mut kb, x) = axis_kernel(d, shape, axes);
            let ops: Vec<ReduceOp> = ReduceOp::ALL
                .iter()
                .copied()
                .filter(|op| op.out_dtype(d).is_some())
                .collect();
            for &op in &ops {
                kb.reduce_tail(op, x, axes.len());
            }
            let k = kb.build();
            assert_eq!(columns(&k), column, "{what}: column layout");
            let plan = dev.render(&k, dev.target()).unwrap();
            dev.check(&plan, &what);
            if let Some(p) = passes {
                assert_eq!(plan.passes.len(), p, "{what}: {:?}", plan.passes);
            }
            let mut r = lcg(21);
            let exact = |i: usize, r: &mut dyn FnMut() -> u64| match i {
                7 => f64::NAN,
                20 => f64::INFINITY,
                401 => f64::NEG_INFINITY,
                _ => [-1.0, -0.5, 0.0, 0.5, 1.0][(r() % 5) as usize],
            };
            let a = match d {
                DType::F32 => TypedVec::F32((0..n).map(|i| exact(i, &mut r) as f32).collect()),
                DType::F64 => TypedVec::F64((0..n).map(|i| exact(i, &mut r)).collect()),
                _ => data(d, n, 22),
            };
            let want = cpu(&k, &[&a], &[]).unwrap();
            let got = dev.run_plan(&plan, &[&a], &output_specs(&k), &[]).outputs;
            assert_outputs(&format!("{what}, against the CPU"), &got, &want, 0);
            // Plain loops: sums and argmin over each result's elements in position order.
            let values: Vec<f64> = match &a {
                TypedVec::F32(v) => v.iter().map(|&x| x as f64).collect(),
                TypedVec::F64(v) => v.clone(),
                TypedVec::I32(v) => v.iter().map(|&x| x as f64).collect(),
                TypedVec::U32(v) => v.iter().map(|&x| x as f64).collect(),
                TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => continue,
            };
            let out = |op: ReduceOp| ops.iter().position(|&o| o == op).unwrap();
            for (o, g) in groups.iter().enumerate() {
                let argmin = g
                    .iter()
                    .enumerate()
                    .fold(None, |best: Option<usize>, (j, &i)| {
                        let take = best.is_none_or(|b| {
                            let (v, w) = (values[i], values[g[b]]);
                            !w.is_nan() && (v.is_nan() || v < w)
                        });
                        if take { Some(j) } else { best }
                    });
                assert_eq!(
                    got[out(ReduceOp::ArgMin)].u32()[o],
                    argmin.map_or(u32::MAX, |j| j as u32),
                    "{what}: argmin of result {o}"
                );
                let sum = &got[out(ReduceOp::Sum)];
                match (sum, &a) {
                    (TypedVec::I32(s), TypedVec::I32(v)) => {
                        let w = g.iter().fold(0i32, |t, &i| t.wrapping_add(v[i]));
                        assert_eq!(s[o], w, "{what}: sum of result {o}");
                    }
                    (TypedVec::U32(s), TypedVec::U32(v)) => {
                        let w = g.iter().fold(0u32, |t, &i| t.wrapping_add(v[i]));
                        assert_eq!(s[o], w, "{what}: sum of result {o}");
                    }
                    _ => {
                        let w: f64 = g.iter().map(|&i| values[i]).sum();
                        let s = match sum {
                            TypedVec::F32(s) => s[o] as f64,
                            TypedVec::F64(s) => s[o],
                            _ => unreachable!("a float sum"),
                        };
                        assert!(
                            s == w || (s.is_nan() && w.is_nan()),
                            "{what}: sum of result {o}: {s} vs {w}"
                        );
                    }
                }
            }
            if !d.is_float() {
                continue;
            }
            // Random floats: a sum only, within rounding of the f64 loop.
            let (mut kb, x) = axis_kernel(d, shape, axes);
            kb.reduce_tail(ReduceOp::Sum, x, axes.len());
            let k = kb.build();
            let xs = sample(n, 23, -1.0, 1.0);
            let a = match d {
                DType::F32 => TypedVec::F32(xs.iter().map(|&x| x as f32).collect()),
                _ => TypedVec::F64(xs.clone()),
            };
            let xs: Vec<f64> = match &a {
                TypedVec::F32(v) => v.iter().map(|&x| x as f64).collect(),
                _ => xs,
            };
            let got = dev.run(&k, &[&a], &[]).outputs;
            for (o, g) in groups.iter().enumerate() {
                let w: f64 = g.iter().map(|&i| xs[i]).sum();
                let scale: f64 = g.iter().map(|&i| xs[i].abs()).sum();
                let s = match &got[0] {
                    TypedVec::F32(s) => s[o] as f64,
                    TypedVec::F64(s) => s[o],
                    _ => unreachable!("a float sum"),
                };
                assert!(
                    (s - w).abs() <= 1e-5 * scale + 1e-6,
                    "{what}: random sum of result {o}: {s} vs {w}"
                );
            }
        }
    }
}

/// Matrix products of `cases` (element type, m, k, n) against a plain loop in f64, on inputs
/// `a(len, seed)`, `b(len, seed)`; an element may be `tol(type, k)` from the loop's.
pub fn matmul_matches<D: Device>(
    dev: &D,
    cases: &[(DType, usize, usize, usize)],
    input: impl Fn(usize, u64) -> Vec<f64>,
    seeds: (u64, u64),
    tol: impl Fn(DType, usize) -> f64,
) {
    for &(d, m, k, n) in cases {
        if d == DType::F64 && !dev.fp64() {
            continue;
        }
        let c = call(
            Intrinsic::Matmul {
                trans_a: false,
                trans_b: false,
            },
            &[&[m, k], &[k, n]],
            &[d, d],
            &[m, n],
            d,
        );
        let a = input(m * k, seeds.0);
        let b = input(k * n, seeds.1);
        let (ta, tb) = if d == DType::F32 {
            let f = |v: &[f64]| TypedVec::F32(v.iter().map(|&x| x as f32).collect());
            (f(&a), f(&b))
        } else {
            (TypedVec::F64(a), TypedVec::F64(b))
        };
        // The loop runs on the inputs as the device sees them (rounded to f32 for f32).
        let (ea, eb): (Vec<f64>, Vec<f64>) = (
            (0..m * k).map(|i| ta.get(i).as_f64()).collect(),
            (0..k * n).map(|i| tb.get(i).as_f64()).collect(),
        );
        let got = dev.run_intrinsic(&c, &[&ta, &tb]);
        let tol = tol(d, k);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k).map(|l| ea[i * k + l] * eb[l * n + j]).sum();
                let g = got.outputs[0].get(i * n + j).as_f64();
                assert!(
                    (g - want).abs() <= tol,
                    "matmul {m}x{k}x{n} {d} [{i},{j}]: {g} vs {want}"
                );
            }
        }
    }
}

/// Scans (`Intrinsic::Scan`) against a plain loop, checked (an OpenCL build, naga) and run as
/// the executors run plans: i32/u32 exactly (sums wrap), f32 sums within `1e-5 * sum |x|` of an
/// f64 loop, NaN-propagating max and min exactly. Row scans with segments that start inside
/// blocks, with more block totals than the carry pass takes in one step (its loop), and with 3
/// work-groups in the block passes (their grid-stride loops); column scans whole and cut into
/// chunks, also on 3 work-groups.
pub fn scan_matches<D: Device>(dev: &D) {
    // More block totals than the carry pass takes in one step (4096 blocks of 2048 f64 on
    // OpenCL, 2048 blocks of 2048 u32 on WGSL): two carry steps or more.
    let long = if dev.fp64() { DType::F64 } else { DType::U32 };
    let cases: [(ReduceOp, DType, &[usize], usize, bool); 7] = [
        (ReduceOp::Sum, long, &[3, 2_800_001], 1, false),
        (ReduceOp::Sum, DType::F32, &[5, 30_001], 1, true),
        (ReduceOp::Max, DType::F32, &[3, 9_000], 1, true),
        (ReduceOp::Min, DType::I32, &[20_000, 5], 0, true),
        (ReduceOp::Prod, DType::I32, &[4, 3, 1000], 1, false),
        (ReduceOp::Min, DType::F32, &[700, 60], 0, false),
        (ReduceOp::Sum, DType::I32, &[300, 7], 1, true),
    ];
    for (op, d, shape, axis, few_groups) in cases {
        let what = format!("{op:?} scan of {d} {shape:?} along {axis}");
        let len: usize = shape.iter().product();
        let c = call(Intrinsic::Scan { op, axis }, &[shape], &[d], shape, d);
        let mut plan = dev.render_intrinsic(&c, dev.target()).unwrap();
        dev.check(&plan, &what);
        let input = match d {
            DType::F32 => {
                let mut v: Vec<f32> = sample(len, 21, -1.0, 1.0)
                    .iter()
                    .map(|&x| x as f32)
                    .collect();
                if op == ReduceOp::Max {
                    v[len / 3 + 17] = f32::NAN;
                }
                TypedVec::F32(v)
            }
            DType::I32 => TypedVec::I32(
                (0..len as u32)
                    .map(|i| i.wrapping_mul(2654435761) as i32 | 1)
                    .collect(),
            ),
            // Small integers: every order of summation gives the same f64 sum.
            DType::F64 => TypedVec::F64(
                (0..len as u32)
                    .map(|i| (i.wrapping_mul(2654435761) % 1000) as f64 - 500.0)
                    .collect(),
            ),
            _ => TypedVec::U32(
                (0..len as u32)
                    .map(|i| i.wrapping_mul(2654435761))
                    .collect(),
            ),
        };
        // The plain loop: every line (p, q) from its first element.
        let pre: usize = shape[..axis].iter().product();
        let (n, post) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        let x = |i: usize| input.get(i).as_f64();
        let mut want = vec![0.0f64; len];
        let mut mag = vec![0.0f64; len];
        for p in 0..pre {
            for q in 0..post {
                let (mut acc, mut m) = (0.0f64, 0.0f64);
                let mut w: u32 = 0;
                for k in 0..n {
                    let i = (p * n + k) * post + q;
                    let v = x(i);
                    m += v.abs();
                    let bits = match &input {
                        TypedVec::I32(a) => a[i] as u32,
                        TypedVec::U32(a) => a[i],
                        _ => 0,
                    };
                    w = if k == 0 {
                        bits
                    } else if op == ReduceOp::Sum {
                        w.wrapping_add(bits)
                    } else {
                        w.wrapping_mul(bits)
                    };
                    acc = if k == 0 {
                        v
                    } else {
                        match op {
                            ReduceOp::Sum => acc + v,
                            ReduceOp::Max if acc.is_nan() || v.is_nan() => f64::NAN,
                            ReduceOp::Max => acc.max(v),
                            ReduceOp::Min if acc.is_nan() || v.is_nan() => f64::NAN,
                            _ => acc.min(v),
                        }
                    };
                    want[i] = match (d, op) {
                        (DType::I32, ReduceOp::Sum | ReduceOp::Prod) => w as i32 as f64,
                        (DType::U32, ReduceOp::Sum | ReduceOp::Prod) => w as f64,
                        _ => acc,
                    };
                    mag[i] = m;
                }
            }
        }
        let mut grids = vec![None];
        if few_groups {
            grids.push(Some(3));
        }
        for groups in grids {
            if let Some(g) = groups {
                // Every pass but a carry pass of one work-group.
                for pass in plan.passes.iter_mut().filter(|p| p.groups > 1) {
                    pass.groups = g;
                }
            }
            let got = dev.run_plan(&plan, &[&input], &[(d, len)], &[]).outputs;
            let bad: Vec<String> = (0..len)
                .filter(|&i| {
                    let (g, w) = (got[0].get(i).as_f64(), want[i]);
                    let ok = if d == DType::F32 && op == ReduceOp::Sum {
                        (g - w).abs() <= 1e-5 * mag[i]
                    } else {
                        g == w || (g.is_nan() && w.is_nan())
                    };
                    !ok
                })
                .take(5)
                .map(|i| format!("[{i}] {} vs {}", got[0].get(i).as_f64(), want[i]))
                .collect();
            assert!(bad.is_empty(), "{what}, groups {groups:?}: {bad:?}");
        }
    }
}

/// Integer division by zero in kernel `k`, whose input `divisor` holds no zero: a clean run has
/// fault word 0 and the CPU tile VM's outputs (its outputs are returned); with a zero divisor at each of `zeros`
/// the CPU tile VM fails, the fault word is one of `faults` (1 + a dividing instruction's index),
/// and every output is 0 at those elements and as in the clean run elsewhere.
pub fn division_faults<D: Device>(
    dev: &D,
    k: &FusedKernel,
    inputs: &[&TypedVec],
    divisor: usize,
    zeros: &[usize],
    faults: &[u32],
    what: &str,
) -> Vec<TypedVec> {
    let want = cpu(k, inputs, &[]).unwrap();
    let clean = dev.run(k, inputs, &[]);
    assert_eq!(clean.fault, 0, "{what}: a clean run's fault word");
    assert_outputs(what, &clean.outputs, &want, 0);
    let mut bad_divisor = inputs[divisor].clone();
    for &z in zeros {
        match &mut bad_divisor {
            TypedVec::I32(v) => v[z] = 0,
            TypedVec::U32(v) => v[z] = 0,
            v => panic!("{what}: an integer divisor, not {:?}", v.dtype()),
        }
    }
    let mut bad_inputs = inputs.to_vec();
    bad_inputs[divisor] = &bad_divisor;
    assert!(cpu(k, &bad_inputs, &[]).is_err(), "{what}: the CPU faults");
    let bad = dev.run(k, &bad_inputs, &[]);
    assert!(
        faults.contains(&bad.fault),
        "{what}: fault word {}, want one of {faults:?} (1 + the dividing instruction's index)",
        bad.fault
    );
    for (o, (got, clean)) in bad.outputs.iter().zip(&clean.outputs).enumerate() {
        for i in 0..got.len() {
            let (g, c) = (got.get(i).bits(), clean.get(i).bits());
            if zeros.contains(&i) {
                assert_eq!(g, 0, "{what}: output {o}[{i}] of a zero divisor");
            } else {
                assert_eq!(g, c, "{what}: output {o}[{i}] beside a fault");
            }
        }
    }
    clean.outputs
}

/// The CPU's draw (`primitives::cpu`) of `dist` in type `d` (f32 or f64) at stream position
/// `position` of `key`: the value a device must give bit for bit (uniforms) or within rounding
/// (normals).
pub fn philox_reference(key: [u32; 2], position: u64, dist: RandomDist, d: DType) -> f64 {
    use arrayflow::primitives::cpu as prim;
    let words = |w: usize| prim::stream_words(key, position, w, &mut (u64::MAX, [0; 4]));
    match (dist, d) {
        (RandomDist::Uniform, DType::F32) => prim::uniform_f32(words(1)[0]) as f64,
        (RandomDist::Uniform, DType::F64) => {
            let r = words(2);
            prim::uniform_f64(r[0], r[1])
        }
        (RandomDist::Normal, DType::F32) => {
            let r = words(2);
            prim::normal_f32(r[0], r[1]) as f64
        }
        (RandomDist::Normal, DType::F64) => prim::normal_f64(words(4)),
        _ => panic!("no {d} random draws"),
    }
}

/// The random key as its parameter slot holds it.
pub fn key_param(key: [u32; 2]) -> u64 {
    ((key[1] as u64) << 32) | key[0] as u64
}

/// Folded maps in every mode (roll, pad), also nested and placed by a reversed slice, against a
/// walk written here: the element read at each domain position of a [9, 11] domain over a
/// [3, 4] input of distinct values.
pub fn folded_maps_match<D: Device>(dev: &D) {
    use FoldMode::*;
    // Bounce off the ends one step at a time (repeating the end element when `repeat`).
    fn bounce(mut v: isize, n: isize, repeat: bool) -> isize {
        if n == 1 {
            return 0;
        }
        while v < 0 || v >= n {
            v = if v < 0 {
                -v - repeat as isize
            } else {
                2 * (n - 1) - v + repeat as isize
            };
        }
        v
    }
    fn walk(mode: FoldMode, v: isize, n: usize) -> isize {
        let n = n as isize;
        match mode {
            Wrap => ((v % n) + n) % n,
            Clamp => v.max(0).min(n - 1),
            Reflect => bounce(v, n, false),
            Symmetric => bounce(v, n, true),
        }
    }
    let input: Vec<f32> = (0..12).map(|v| (v * 7 % 12) as f32 + 0.5).collect();
    let x = TypedVec::F32(input.clone());
    let modes = [Wrap, Clamp, Reflect, Symmetric];
    for (i, &m0) in modes.iter().enumerate() {
        let m1 = modes[(i + 1) % 4];
        let offset = [-5isize, -7];
        let mut map = folded(&[3, 4], &offset, &[m0, m1]);
        // Nest a second fold on axis 1 (a pad of a roll) placed by a reversed slice: axis 1
        // reads 3 - reflect(wrap(v, 4) - 1, 4)... as `a + b * mode`.
        let IndexMap::Folded { dims } = &mut map else {
            unreachable!()
        };
        dims[1].folds[0].a = -1;
        dims[1].folds.push(Fold {
            mode: m0,
            n: 4,
            a: 3,
            b: -1,
        });
        let (out, fault) = dev.run(&map_kernel(&[9, 11], map), &[&x], &[]).into_parts();
        assert_eq!(fault, 0);
        let mut want = Vec::new();
        for d0 in 0..9isize {
            for d1 in 0..11isize {
                let r = walk(m0, d0 + offset[0], 3);
                let c = 3 - walk(m0, walk(m1, d1 + offset[1], 4) - 1, 4);
                want.push(input[(r * 4 + c) as usize]);
            }
        }
        assert_eq!(out[0].f32(), &want[..], "modes {m0:?}, {m1:?}");
    }
}
