//! Splitting a fused kernel in two (`proggen::split`, the recovery path for kernels a driver
//! fails to compile): random and recorded kernels, split recursively at every depth, give the
//! whole kernel's outputs bit for bit on the CPU tile VM; the cut carries few values, binds only
//! the inputs each half loads, and tiny kernels are not split.

use arrayflow::exec::TypedVec;
use arrayflow::exec::cpu::slices::OutPtr;
use arrayflow::exec::cpu::vm;
use arrayflow::ir::{
    BinaryOp, DType, FoldMode, GenKind, RandomDist, ReduceOp, Scalar, Site, UnaryOp,
};
use arrayflow::proggen::kernel::{
    Domain, Fold, FoldedDim, FusedKernel, IndexMap, Instr, ParamKind, ReduceStore, Reg, Store,
};
use arrayflow::proggen::regalloc;
use arrayflow::proggen::split::{Split, split};
use smallvec::SmallVec;

/// The element types of the random kernels (complex arithmetic is tested in `tests/complex.rs`).
const REAL_TYPES: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::U32, DType::Bool];

/// SplitMix64: the tests' own random numbers.
struct Rand(u64);
impl Rand {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

fn site() -> Site {
    std::panic::Location::caller()
}

/// A random value of `d` (floats in [-4, 4), integers small, a few special values).
fn scalar(rng: &mut Rand, d: DType) -> Scalar {
    let x = rng.unit() * 8.0 - 4.0;
    match d {
        DType::F32 => Scalar::F32(if rng.chance(0.02) { 0.0 } else { x as f32 }),
        DType::F64 => Scalar::F64(if rng.chance(0.02) { -0.0 } else { x }),
        DType::I32 => Scalar::I32((x * 300.0) as i32),
        DType::U32 => Scalar::U32(rng.below(2000) as u32),
        DType::Bool => Scalar::Bool(rng.chance(0.5)),
        DType::C64 | DType::C128 => unreachable!("the random kernels are real (REAL_TYPES)"),
    }
}

fn buffer(rng: &mut Rand, d: DType, len: usize) -> TypedVec {
    let mut v = TypedVec::zeros(d, len);
    for i in 0..len {
        match (&mut v, scalar(rng, d)) {
            (TypedVec::F32(v), Scalar::F32(x)) => v[i] = x,
            (TypedVec::F64(v), Scalar::F64(x)) => v[i] = x,
            (TypedVec::I32(v), Scalar::I32(x)) => v[i] = x,
            (TypedVec::U32(v), Scalar::U32(x)) => v[i] = x,
            (TypedVec::Bool(v), Scalar::Bool(x)) => v[i] = x,
            _ => unreachable!(),
        }
    }
    v
}

/// Parameter values for `k`'s slots.
fn param_values(rng: &mut Rand, k: &FusedKernel) -> Vec<u64> {
    k.params
        .iter()
        .map(|p| match p {
            ParamKind::Const(d) => scalar(rng, *d).bits(),
            ParamKind::RandomKey => rng.next(),
            ParamKind::RandomCounter => rng.next() >> 24,
            ParamKind::RandomRange => rng.next() >> 40,
        })
        .collect()
}

/// Length of output `o` of `k`: the reduction results, or the domain.
fn output_len(k: &FusedKernel, o: usize) -> usize {
    if k.reductions.iter().any(|r| r.output as usize == o) {
        k.domain.outer
    } else {
        k.domain.len()
    }
}

const TILE: usize = 256;

fn run(k: &FusedKernel, inputs: &[&TypedVec], params: &[u64]) -> Vec<TypedVec> {
    let mut outs: Vec<TypedVec> = k
        .outputs
        .iter()
        .enumerate()
        .map(|(o, &d)| TypedVec::zeros(d, output_len(k, o)))
        .collect();
    let external: Vec<Option<OutPtr>> = outs.iter().map(|_| None).collect();
    if let Err(e) = vm::run_fused(k, TILE, inputs, &mut outs, &external, params) {
        panic!("kernel failed: {e}\n{}", k.describe());
    }
    outs
}

/// Every register is defined before it is read, a constant's register is its own, every input
/// is loaded and every output written once, and sites line up with instructions.
fn check_well_formed(k: &FusedKernel, all_inputs_loaded: bool) {
    let listing = || k.describe();
    assert_eq!(k.instrs.len(), k.instr_sites.len());
    let mut defined = vec![false; k.reg_dtypes.len()];
    let mut konst = vec![false; k.reg_dtypes.len()];
    let mut loaded = vec![false; k.inputs.len()];
    for ins in &k.instrs {
        for s in ins.srcs() {
            assert!(defined[s as usize], "r{s} read before set\n{}", listing());
        }
        let d = ins.dst() as usize;
        if matches!(ins, Instr::Const { .. }) {
            assert!(!defined[d] || konst[d], "r{d} shared\n{}", listing());
            konst[d] = true;
        } else {
            assert!(!konst[d], "constant register r{d} reused\n{}", listing());
        }
        defined[d] = true;
        if let Instr::Load { input, .. } = ins {
            loaded[*input as usize] = true;
        }
    }
    assert!(
        !all_inputs_loaded || loaded.iter().all(|&l| l),
        "unused input\n{}",
        listing()
    );
    let mut written = vec![0; k.outputs.len()];
    for s in &k.stores {
        assert!(defined[s.reg as usize], "stored r{} unset", s.reg);
        written[s.output as usize] += 1;
    }
    for r in &k.reductions {
        assert!(defined[r.reg as usize], "reduced r{} unset", r.reg);
        written[r.output as usize] += 1;
    }
    assert!(
        written.iter().all(|&w| w == 1),
        "{written:?}\n{}",
        listing()
    );
    if k.reductions.is_empty() {
        assert_eq!((k.domain.inner, k.domain.outer), (1, k.domain.len()));
    }
}

/// The maps of `s` are consistent with `k` and both halves are smaller.
fn check_split(k: &FusedKernel, s: &Split) {
    check_well_formed(&s.first, true);
    check_well_formed(&s.second, true);
    assert!(s.first.instrs.len() < k.instrs.len());
    assert!(s.second.instrs.len() < k.instrs.len());
    assert!(s.first.reductions.is_empty());
    assert_eq!(s.second.reductions.len(), k.reductions.len());
    assert_eq!(s.first.domain.shape, k.domain.shape);
    assert_eq!(s.second.domain, k.domain);
    assert_eq!(s.first.params, k.params);
    assert_eq!(s.second.params, k.params);
    assert_eq!(s.first.inputs.len(), s.first_inputs.len());
    assert_eq!(s.second.inputs.len(), s.second_inputs.len() + s.temps.len());
    assert_eq!(s.first.outputs.len(), s.first_outputs.len() + s.temps.len());
    assert_eq!(s.second.outputs.len(), s.second_outputs.len());
    assert_eq!(&s.first.outputs[s.first_outputs.len()..], &s.temps[..]);
    assert_eq!(&s.second.inputs[s.second_inputs.len()..], &s.temps[..]);
    for (j, &i) in s.first_inputs.iter().enumerate() {
        assert_eq!(s.first.inputs[j], k.inputs[i as usize]);
    }
    for (j, &i) in s.second_inputs.iter().enumerate() {
        assert_eq!(s.second.inputs[j], k.inputs[i as usize]);
    }
    let mut all: Vec<u32> = s
        .first_outputs
        .iter()
        .chain(&s.second_outputs)
        .copied()
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..k.outputs.len() as u32).collect::<Vec<_>>());
    for (j, &o) in s.first_outputs.iter().enumerate() {
        assert_eq!(s.first.outputs[j], k.outputs[o as usize]);
    }
    for (j, &o) in s.second_outputs.iter().enumerate() {
        assert_eq!(s.second.outputs[j], k.outputs[o as usize]);
    }
}

/// Runs `k` split recursively up to `depth` levels, each half through the maps; returns the
/// outputs and how many kernels ran.
fn run_split(
    k: &FusedKernel,
    inputs: &[&TypedVec],
    params: &[u64],
    depth: usize,
) -> (Vec<TypedVec>, usize) {
    let Some(s) = (depth > 0).then(|| split(k)).flatten() else {
        return (run(k, inputs, params), 1);
    };
    check_split(k, &s);
    let ins1: Vec<&TypedVec> = s.first_inputs.iter().map(|&i| inputs[i as usize]).collect();
    let (outs1, n1) = run_split(&s.first, &ins1, params, depth - 1);
    let (orig1, temps) = outs1.split_at(s.first_outputs.len());
    for (t, v) in temps.iter().enumerate() {
        assert_eq!((v.dtype(), v.len()), (s.temps[t], k.domain.len()));
    }
    let mut ins2: Vec<&TypedVec> = s
        .second_inputs
        .iter()
        .map(|&i| inputs[i as usize])
        .collect();
    ins2.extend(temps);
    let (outs2, n2) = run_split(&s.second, &ins2, params, depth - 1);
    let mut outs: Vec<Option<TypedVec>> = vec![None; k.outputs.len()];
    for (j, &o) in s.first_outputs.iter().enumerate() {
        outs[o as usize] = Some(orig1[j].clone());
    }
    for (v, &o) in outs2.into_iter().zip(&s.second_outputs) {
        outs[o as usize] = Some(v);
    }
    (outs.into_iter().map(Option::unwrap).collect(), n1 + n2)
}

fn assert_bit_identical(want: &[TypedVec], got: &[TypedVec], what: &str) {
    assert_eq!(want.len(), got.len());
    for (o, (w, g)) in want.iter().zip(got).enumerate() {
        assert_eq!(
            (w.dtype(), w.len()),
            (g.dtype(), g.len()),
            "{what}: output {o}"
        );
        for i in 0..w.len() {
            assert_eq!(
                w.get(i).bits(),
                g.get(i).bits(),
                "{what}: output {o} element {i}: {:?} vs {:?}",
                w.get(i),
                g.get(i)
            );
        }
    }
}

/// Runs `k` whole and split at every depth up to `max_depth` on random data; all agree bit for
/// bit. Returns the number of kernels the deepest run used.
fn check_kernel(rng: &mut Rand, k: &FusedKernel, input_lens: &[usize], max_depth: usize) -> usize {
    check_well_formed(k, false);
    let data: Vec<TypedVec> = k
        .inputs
        .iter()
        .zip(input_lens)
        .map(|(&d, &n)| buffer(rng, d, n))
        .collect();
    let inputs: Vec<&TypedVec> = data.iter().collect();
    let params = param_values(rng, k);
    let want = run(k, &inputs, &params);
    let mut kernels = 1;
    for depth in 1..=max_depth {
        let (got, n) = run_split(k, &inputs, &params, depth);
        assert_bit_identical(&want, &got, &format!("depth {depth}\n{}", k.describe()));
        kernels = n;
    }
    kernels
}

/// A random index map over `shape` and the input length it needs.
fn random_map(rng: &mut Rand, shape: &[usize]) -> (IndexMap, usize) {
    let len: usize = shape.iter().product();
    match rng.below(3) {
        0 => (IndexMap::Contiguous, len),
        1 => {
            let strides: SmallVec<[isize; 6]> =
                shape.iter().map(|_| rng.below(7) as isize - 3).collect();
            let lo: isize = shape
                .iter()
                .zip(&strides)
                .map(|(&n, &s)| (s * (n as isize - 1)).min(0))
                .sum();
            let hi: isize = shape
                .iter()
                .zip(&strides)
                .map(|(&n, &s)| (s * (n as isize - 1)).max(0))
                .sum();
            let offset = -lo + rng.below(4) as isize;
            (
                IndexMap::Strided { offset, strides },
                (offset + hi) as usize + 1,
            )
        }
        _ => {
            let dims: Vec<FoldedDim> = (0..1 + rng.below(2))
                .map(|j| FoldedDim {
                    offset: rng.below(9) as isize - 4,
                    coef: shape.iter().map(|_| rng.below(5) as isize - 2).collect(),
                    folds: smallvec::smallvec![Fold::new(
                        [
                            FoldMode::Wrap,
                            FoldMode::Clamp,
                            FoldMode::Reflect,
                            FoldMode::Symmetric
                        ][rng.below(4)],
                        1 + rng.below(9),
                    )],
                    stride: if j == 0 { 1 } else { 9 },
                })
                .collect();
            let need = dims
                .iter()
                .map(|d| (d.folds[0].n - 1) * d.stride)
                .sum::<usize>()
                + 1;
            (IndexMap::Folded { dims }, need)
        }
    }
}

/// A random kernel of about `size` SSA values over a random domain, registers allocated by
/// the program generator's allocator (so they are reused); with `reduce`, one or two
/// reductions over the domain's trailing axes. Returns it with its inputs' lengths.
fn random_kernel(rng: &mut Rand, size: usize, reduce: bool) -> (FusedKernel, Vec<usize>) {
    let rank = 1 + rng.below(3);
    let shape: Vec<usize> = (0..rank)
        .map(|_| 1 + rng.below([1500, 60, 17][rank - 1]))
        .collect();
    let len: usize = shape.iter().product();
    let reduced = if reduce { 1 + rng.below(rank) } else { 0 };
    let inner: usize = shape[rank - reduced..].iter().product();
    let domain = Domain {
        shape: shape.iter().copied().collect(),
        inner,
        outer: len / inner,
        perm: None,
    };
    let n_inputs = 1 + rng.below(4);
    let inputs: Vec<DType> = (0..n_inputs).map(|_| rng.pick(&REAL_TYPES)).collect();
    let mut input_lens = vec![1usize; n_inputs];
    let mut instrs: Vec<Instr> = Vec::new();
    let mut dtypes: Vec<DType> = Vec::new();
    let mut params: Vec<ParamKind> = Vec::new();
    let floats = [DType::F32, DType::F64];
    // An operand: mostly a recent value, sometimes any, so lifetimes vary.
    let operand = |rng: &mut Rand, dtypes: &[DType], want: Option<DType>| -> Option<Reg> {
        let ok: Vec<usize> = (0..dtypes.len())
            .filter(|&v| want.is_none_or(|d| dtypes[v] == d))
            .collect();
        if ok.is_empty() {
            return None;
        }
        let i = if rng.chance(0.6) {
            ok.len() - 1 - rng.below(ok.len().min(4))
        } else {
            rng.below(ok.len())
        };
        Some(ok[i] as Reg)
    };
    while instrs.len() < size {
        let dst = instrs.len() as Reg;
        let kind = if instrs.len() < 2 {
            rng.below(3)
        } else {
            rng.below(10)
        };
        let made: Option<(Instr, DType)> = match kind {
            0 => {
                let input = rng.below(n_inputs);
                let (map, need) = random_map(rng, &shape);
                input_lens[input] = input_lens[input].max(need);
                Some((
                    Instr::Load {
                        dst,
                        input: input as u32,
                        map,
                    },
                    inputs[input],
                ))
            }
            1 => {
                let dtype = rng.pick(&REAL_TYPES);
                params.push(ParamKind::Const(dtype));
                let slot = params.len() as u32 - 1;
                Some((Instr::Const { dst, slot, dtype }, dtype))
            }
            2 => {
                params.push(ParamKind::RandomKey);
                params.push(ParamKind::RandomCounter);
                let (map, _) = random_map(rng, &shape);
                Some((
                    Instr::Random {
                        dst,
                        alg: arrayflow::ir::RngAlgorithm::Philox,
                        dist: rng.pick(&[RandomDist::Uniform, RandomDist::Normal]),
                        key_slot: params.len() as u32 - 2,
                        counter_slot: params.len() as u32 - 1,
                        range_slot: None,
                        map,
                    },
                    rng.pick(&floats),
                ))
            }
            3 => {
                let axis = rng.below(rank);
                Some((
                    Instr::Gen {
                        dst,
                        kind: GenKind::Iota { axis },
                        shape: shape.iter().copied().collect(),
                        map: IndexMap::Contiguous,
                    },
                    rng.pick(&REAL_TYPES),
                ))
            }
            4 | 5 => operand(rng, &dtypes, None).and_then(|a| {
                let ops: Vec<UnaryOp> = UnaryOp::ALL
                    .iter()
                    .copied()
                    .filter(|op| {
                        op.out_dtype(dtypes[a as usize])
                            .is_some_and(|o| !o.is_complex())
                    })
                    .collect();
                (!ops.is_empty()).then(|| {
                    let op = rng.pick(&ops);
                    let out = op.out_dtype(dtypes[a as usize]).unwrap();
                    (Instr::Unary { dst, op, a }, out)
                })
            }),
            6 | 7 => operand(rng, &dtypes, None).and_then(|a| {
                let d = dtypes[a as usize];
                let b = operand(rng, &dtypes, Some(d)).unwrap();
                let ops: Vec<BinaryOp> = BinaryOp::ALL
                    .iter()
                    .copied()
                    .filter(|op| {
                        op.out_dtype(d).is_some_and(|o| !o.is_complex())
                            && !(d.is_int()
                                && matches!(op, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod))
                    })
                    .collect();
                (!ops.is_empty()).then(|| {
                    let op = rng.pick(&ops);
                    (Instr::Binary { dst, op, a, b }, op.out_dtype(d).unwrap())
                })
            }),
            8 => operand(rng, &dtypes, Some(DType::Bool)).and_then(|cond| {
                let a = operand(rng, &dtypes, None)?;
                let d = dtypes[a as usize];
                let b = operand(rng, &dtypes, Some(d))?;
                Some((Instr::Select { dst, cond, a, b }, d))
            }),
            _ => operand(rng, &dtypes, None).map(|a| {
                let to = rng.pick(&REAL_TYPES);
                (Instr::Cast { dst, to, a }, to)
            }),
        };
        if let Some((ins, d)) = made {
            instrs.push(ins);
            dtypes.push(d);
        }
    }
    // Stores: the last value and a few others; reductions of numeric or bool values.
    let n = instrs.len() as Reg;
    let mut stores = vec![Store {
        reg: n - 1,
        output: 0,
    }];
    for _ in 0..rng.below(3) {
        stores.push(Store {
            reg: rng.below(n as usize) as Reg,
            output: stores.len() as u32,
        });
    }
    let mut outputs: Vec<DType> = stores.iter().map(|s| dtypes[s.reg as usize]).collect();
    let mut reductions = Vec::new();
    if reduce {
        for _ in 0..1 + rng.below(2) {
            let reg = if reductions.is_empty() {
                n - 1 - rng.below(3.min(n as usize)) as Reg
            } else {
                rng.below(n as usize) as Reg
            };
            let d = dtypes[reg as usize];
            let ops: Vec<ReduceOp> = ReduceOp::ALL
                .iter()
                .copied()
                .filter(|op| op.out_dtype(d).is_some())
                .collect();
            let op = rng.pick(&ops);
            reductions.push(ReduceStore {
                reg,
                op,
                output: outputs.len() as u32,
            });
            outputs.push(op.out_dtype(d).unwrap());
        }
    }
    // Element-wise stores of a reducing kernel cover the domain; keep the outputs shaped so.
    let mut out_regs: Vec<&mut Reg> = stores
        .iter_mut()
        .map(|s| &mut s.reg)
        .chain(reductions.iter_mut().map(|r| &mut r.reg))
        .collect();
    let reg_dtypes = regalloc::allocate(&mut instrs, &dtypes, &mut out_regs);
    let k = FusedKernel {
        domain: if reduce {
            domain
        } else {
            Domain {
                shape: shape.iter().copied().collect(),
                inner: 1,
                outer: len,
                perm: None,
            }
        },
        inputs,
        outputs,
        instr_sites: vec![site(); instrs.len()],
        instrs,
        stores,
        reductions,
        reg_dtypes,
        params,
        traps: Vec::new(),
    };
    (k, input_lens)
}

#[test]
fn random_kernels_split_bit_identically_at_every_depth() {
    let mut rng = Rand(0x5eed);
    let mut reused = 0;
    let mut split_ok = 0;
    for case in 0..120 {
        let reduce = case % 3 == 0;
        let size = 4 + rng.below(if case % 4 == 0 { 300 } else { 60 });
        let (k, lens) = random_kernel(&mut rng, size, reduce);
        if k.reg_dtypes.len() < k.instrs.len() {
            reused += 1;
        }
        let kernels = check_kernel(&mut rng, &k, &lens, 8);
        split_ok += (kernels > 1) as usize;
    }
    assert!(
        reused > 100,
        "the allocator reused registers in {reused} kernels"
    );
    assert!(split_ok > 100, "{split_ok} kernels were split");
}

/// A hand-built kernel with a long chain whose registers the allocator reuses, a value live
/// across the middle, a strided load and a reduction: the cut carries one temporary.
#[test]
fn a_chain_with_a_reduction_splits_into_a_short_handover() {
    let s = site();
    let shape = [33usize, 41];
    let len = shape.iter().product::<usize>();
    // Values: v0 = load in0 (contiguous), v1 = load in1 transposed, v2 = const, then a chain.
    let mut instrs = vec![
        Instr::Load {
            dst: 0,
            input: 0,
            map: IndexMap::Contiguous,
        },
        Instr::Load {
            dst: 1,
            input: 1,
            map: IndexMap::Strided {
                offset: 0,
                strides: smallvec::smallvec![1, 33],
            },
        },
        Instr::Const {
            dst: 2,
            slot: 0,
            dtype: DType::F64,
        },
    ];
    let mut dtypes = vec![DType::F64; 3];
    let mut prev = 0;
    for i in 0..40u32 {
        let dst = instrs.len() as Reg;
        instrs.push(match i % 4 {
            0 => Instr::Binary {
                dst,
                op: BinaryOp::Mul,
                a: prev,
                b: 2,
            },
            1 => Instr::Unary {
                dst,
                op: UnaryOp::Sin,
                a: prev,
            },
            2 => Instr::Binary {
                dst,
                op: BinaryOp::Add,
                a: prev,
                b: 1,
            },
            _ => Instr::Unary {
                dst,
                op: UnaryOp::Tanh,
                a: prev,
            },
        });
        dtypes.push(DType::F64);
        prev = dst;
    }
    let mut stores = vec![Store { reg: 20, output: 0 }];
    let mut reductions = vec![ReduceStore {
        reg: prev,
        op: ReduceOp::Sum,
        output: 1,
    }];
    let mut out_regs: Vec<&mut Reg> = stores
        .iter_mut()
        .map(|s| &mut s.reg)
        .chain(reductions.iter_mut().map(|r| &mut r.reg))
        .collect();
    let reg_dtypes = regalloc::allocate(&mut instrs, &dtypes, &mut out_regs);
    assert!(
        reg_dtypes.len() < 8,
        "registers reused: {}",
        reg_dtypes.len()
    );
    let k = FusedKernel {
        domain: Domain {
            shape: shape.iter().copied().collect(),
            inner: 41,
            outer: 33,
            perm: None,
        },
        inputs: vec![DType::F64, DType::F64],
        outputs: vec![DType::F64, DType::F64],
        instr_sites: vec![s; instrs.len()],
        instrs,
        stores,
        reductions,
        reg_dtypes,
        params: vec![ParamKind::Const(DType::F64)],
        traps: Vec::new(),
    };
    let sp = split(&k).expect("a 43-instruction kernel splits");
    check_split(&k, &sp);
    // One value (the chain) crosses; the loads and the constant are re-emitted, not carried.
    assert_eq!(sp.temps, vec![DType::F64]);
    assert!(sp.first.reductions.is_empty() && sp.second.reductions.len() == 1);
    assert_eq!((sp.first.domain.inner, sp.first.domain.outer), (1, len));
    let cut = sp.first.instrs.len();
    assert!((15..=28).contains(&cut), "cut near the middle: {cut}");
    // The store of v20 is ready before the cut, so the first half writes it.
    assert_eq!(sp.first_outputs, vec![0]);
    assert_eq!(sp.second_outputs, vec![1]);
    let mut rng = Rand(7);
    let kernels = check_kernel(&mut rng, &k, &[len, len], 10);
    assert!(kernels >= 8, "split repeatedly: {kernels} kernels");
}

/// Inputs loaded only by one half are bound only there.
#[test]
fn each_half_binds_only_the_inputs_it_loads() {
    let s = site();
    let mut instrs = vec![
        Instr::Load {
            dst: 0,
            input: 0,
            map: IndexMap::Contiguous,
        },
        Instr::Unary {
            dst: 1,
            op: UnaryOp::Exp,
            a: 0,
        },
        Instr::Unary {
            dst: 2,
            op: UnaryOp::Sin,
            a: 1,
        },
        Instr::Unary {
            dst: 3,
            op: UnaryOp::Cos,
            a: 2,
        },
        Instr::Load {
            dst: 4,
            input: 1,
            map: IndexMap::Contiguous,
        },
        Instr::Binary {
            dst: 5,
            op: BinaryOp::Mul,
            a: 3,
            b: 4,
        },
        Instr::Unary {
            dst: 6,
            op: UnaryOp::Tanh,
            a: 5,
        },
        Instr::Unary {
            dst: 7,
            op: UnaryOp::Atan,
            a: 6,
        },
    ];
    let dtypes = vec![DType::F32; 8];
    let mut stores = vec![Store { reg: 7, output: 0 }];
    let mut out_regs: Vec<&mut Reg> = stores.iter_mut().map(|s| &mut s.reg).collect();
    let reg_dtypes = regalloc::allocate(&mut instrs, &dtypes, &mut out_regs);
    let k = FusedKernel {
        domain: Domain {
            shape: smallvec::smallvec![5000],
            inner: 1,
            outer: 5000,
            perm: None,
        },
        inputs: vec![DType::F32, DType::F32],
        outputs: vec![DType::F32],
        instr_sites: vec![s; instrs.len()],
        instrs,
        stores,
        reductions: Vec::new(),
        reg_dtypes,
        params: Vec::new(),
        traps: Vec::new(),
    };
    let sp = split(&k).unwrap();
    check_split(&k, &sp);
    assert_eq!(sp.first_inputs, vec![0]);
    assert_eq!(sp.second_inputs, vec![1]);
    assert_eq!(sp.temps, vec![DType::F32]);
    check_kernel(&mut Rand(3), &k, &[5000, 5000], 4);
}

#[test]
fn tiny_kernels_do_not_split() {
    let s = site();
    let load = Instr::Load {
        dst: 0,
        input: 0,
        map: IndexMap::Contiguous,
    };
    let mut k = FusedKernel {
        domain: Domain {
            shape: smallvec::smallvec![10],
            inner: 1,
            outer: 10,
            perm: None,
        },
        inputs: vec![DType::F32],
        outputs: vec![DType::F32],
        instrs: vec![load.clone()],
        instr_sites: vec![s],
        stores: vec![Store { reg: 0, output: 0 }],
        reductions: Vec::new(),
        reg_dtypes: vec![DType::F32],
        params: Vec::new(),
        traps: Vec::new(),
    };
    assert!(split(&k).is_none());
    // Load + one op: the second half would re-load, no smaller than the whole.
    k.instrs.push(Instr::Unary {
        dst: 1,
        op: UnaryOp::Neg,
        a: 0,
    });
    k.instr_sites.push(s);
    k.reg_dtypes.push(DType::F32);
    k.stores[0].reg = 1;
    assert!(split(&k).is_none());
}

/// The fused kernels of a real flush (recorded through the public API): each splits, and the
/// halves, split again and again, reproduce its outputs bit for bit.
#[test]
fn recorded_kernels_split_bit_identically() {
    use arrayflow::proggen::sequence::Kernel;
    use arrayflow::{Array, Rng, Runtime};
    let (m, n) = (37usize, 61usize);
    let mut rng = Rand(11);
    let mut data = |len: usize| -> Vec<f64> { (0..len).map(|_| rng.unit() * 4.0 - 2.0).collect() };
    let (av, bv, cv) = (data(m * n), data(n), data(n * m));
    // The runtime is process-wide: retry if another test's flush replaced ours.
    let mut kernels = Vec::new();
    for _ in 0..20 {
        let a = Array::from_slice(&av, &[m, n]);
        let b = Array::from_slice(&bv, &[n]);
        let c = Array::from_slice(&cv, &[n, m]).transpose();
        let noise = Rng::new(5).normal::<f64>(&[m, n]);
        let t = (&a * &b + 1.0).abs().sqrt() * a.sin() - b.exp() / (c.cos() + 3.0);
        let u = a.gt(&c).select(&t, &noise) + a.atan2(&b).tanh();
        let f = (&u * 0.5).cast::<f32>().erf() + (b.cast::<f32>() * 3.0).round();
        let i = (&u * 1000.0).cast::<i32>() % 7 - (&a * 10.0).cast::<i32>().abs();
        let rows = u.sum_axis(1);
        let cols = (&t * &u).max_axis(0);
        let all = f.cast::<f64>().sum();
        Runtime::execute();
        let seq = arrayflow::runtime::Inner::get()
            .last_sequence
            .lock()
            .clone();
        drop((t, u, f, i, rows, cols, all));
        let Some(seq) = seq else { continue };
        kernels = seq
            .programs
            .iter()
            .filter_map(|p| match &*p.kernel {
                Kernel::Fused(k) if k.domain.len() == m * n => Some((
                    k.clone(),
                    p.inputs
                        .iter()
                        .map(|&f| seq.formals[f as usize].len)
                        .collect::<Vec<_>>(),
                )),
                _ => None,
            })
            .collect();
        if kernels.len() >= 2 && kernels.iter().any(|(k, _)| !k.reductions.is_empty()) {
            break;
        }
    }
    assert!(kernels.len() >= 2, "the flush's kernels were found");
    let mut rng = Rand(12);
    let mut split_ok = 0;
    for (k, lens) in &kernels {
        let pieces = check_kernel(&mut rng, k, lens, 6);
        if k.instrs.len() >= 12 {
            assert!(pieces >= 4, "{pieces} pieces\n{}", k.describe());
            split_ok += 1;
        }
    }
    assert!(split_ok >= 1, "a big kernel was among them");
}
