//! The WGSL code generator (`proggen::codegen::wgsl`, `intrinsics::wgsl`) on its own, without the
//! wgpu executor: the library names every op the tables accept, every generated program passes
//! naga's validation with exactly the bindings its passes list, and plans run on a Vulkan adapter
//! (lavapipe in CI) give the CPU's results: bit for bit for integers, Philox words and uniform
//! numbers; within the test suite's f32 tolerances (relative 2e-6, absolute 1e-6) for the math
//! library against f64.
//!
//! Without a Vulkan adapter the run tests print a skip message, unless `ARRAYFLOW_REQUIRE_BACKENDS`
//! names `wgpu`, in which case they fail.
//!
//! The adapter, running plans, naga validation, the kernel builders, the CPU oracles and the cases
//! the OpenCL tests share are the conformance harness `tests/common/conformance.rs`; this file
//! keeps the WGSL library's checks, validation, immediates, the quad form, fused `fma` and the
//! math library's accuracy.

use arrayflow::exec::TypedVec;
use arrayflow::intrinsics::wgsl as intrinsics;
use arrayflow::ir::{
    BinaryOp, DType, GenKind, Intrinsic, RandomDist, ReduceOp, RngAlgorithm, UnaryOp,
};
use arrayflow::proggen::codegen::gpu::{self, GpuPlan, Target};
use arrayflow::proggen::codegen::wgsl::{self, LIBRARY};
use arrayflow::proggen::kernel::{FusedKernel, IndexMap, Instr};
use arrayflow::proggen::sequence::IntrinsicCall;

#[path = "common/conformance.rs"]
mod conformance;

use conformance::*;

/// An op and its Rust reference.
type UnaryCase<T> = (UnaryOp, fn(T) -> T);
type BinaryCase<T, R> = (BinaryOp, fn(T, T) -> R);

const TYPES: [DType; 4] = [DType::F32, DType::I32, DType::U32, DType::Bool];

/// The WGSL target of the test adapter (see [`wgsl_target`]).
fn target() -> Target {
    wgsl_target()
}

fn tn(d: DType) -> &'static str {
    wgsl::tname(d)
}

/// An intrinsic call producing its first input's type.
fn intrinsic_call(
    op: Intrinsic,
    in_shapes: &[&[usize]],
    in_dtypes: &[DType],
    out: &[usize],
) -> IntrinsicCall {
    call(op, in_shapes, in_dtypes, out, in_dtypes[0])
}

// ---------------------------------------------------------------------------------------------
// (a) The library names every op and element type the tables accept.

fn has_fn(name: &str) -> bool {
    LIBRARY.contains(&format!("fn {name}("))
}

#[test]
fn library_has_every_op_of_the_tables() {
    let mut missing = Vec::new();
    for &op in UnaryOp::ALL {
        for d in TYPES {
            if gpu_renders(op.out_dtype(d)) && !has_fn(&format!("af_{}_{}", op.name(), tn(d))) {
                missing.push(format!("af_{}_{}", op.name(), tn(d)));
            }
        }
    }
    for &op in BinaryOp::ALL {
        for d in TYPES {
            if gpu_renders(op.out_dtype(d)) && !has_fn(&format!("af_{}_{}", op.name(), tn(d))) {
                missing.push(format!("af_{}_{}", op.name(), tn(d)));
            }
        }
    }
    for a in TYPES {
        for b in TYPES {
            if !has_fn(&format!("af_cast_{}_{}", tn(a), tn(b))) {
                missing.push(format!("af_cast_{}_{}", tn(a), tn(b)));
            }
            let _ = b;
        }
        if !has_fn(&format!("af_bits_{}", tn(a))) {
            missing.push(format!("af_bits_{}", tn(a)));
        }
    }
    for f in ["af_uniform_f32", "af_normal_f32", "af_philox", "af_stream"] {
        if !has_fn(f) {
            missing.push(f.into());
        }
    }
    assert!(
        missing.is_empty(),
        "missing from arrayflow.wgsl: {missing:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// (b) naga validation.

fn validate_kernel(k: &FusedKernel, what: &str) -> GpuPlan {
    let plan = wgsl::render(k, target()).unwrap_or_else(|e| panic!("{what}: {e}"));
    validate(&plan, what);
    plan
}

/// Whether element-wise kernels that qualify render in the quad form (`ARRAYFLOW_WGPU_VECTOR=0`
/// turns it off, as the renderer reads it).
fn quads_on() -> bool {
    gpu::tuning().wgpu_vector
}

/// Whether `plan` is the quad form of an element-wise kernel: every buffer of its pass is bound as
/// an array of `vec4`s (and none is in the scalar form).
fn is_quads(plan: &GpuPlan) -> bool {
    let tail = kernel_tail(&plan.source);
    let quads = tail.contains("// ---- kernel: quads ----");
    if quads {
        let bindings = tail.matches("@binding(").count();
        let params = (plan.immediate_words.is_none() && plan.passes[0].params) as usize;
        let faults = plan.fault.is_some() as usize;
        assert_eq!(
            tail.matches(": array<vec4<").count(),
            bindings - params - faults,
            "quad form with a scalar binding:\n{tail}"
        );
    } else {
        assert!(
            !tail.contains("array<vec4<"),
            "scalar form with vec4 bindings:\n{tail}"
        );
    }
    quads
}

#[test]
fn every_unary_and_binary_op_validates() {
    for &op in UnaryOp::ALL {
        for d in TYPES {
            if gpu_renders(op.out_dtype(d)) {
                validate_kernel(&unary_kernel(op, d, 100), &format!("{} {d}", op.name()));
            }
        }
    }
    for &op in BinaryOp::ALL {
        for d in TYPES {
            if gpu_renders(op.out_dtype(d)) {
                let k = binary_kernel(op, d, 100);
                let plan = validate_kernel(&k, &format!("{} {d}", op.name()));
                let faults =
                    d.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod);
                assert_eq!(
                    plan.fault.is_some(),
                    faults,
                    "{} {d}: fault scratch",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn casts_select_consts_and_generators_validate() {
    for a in TYPES {
        for b in TYPES {
            validate_kernel(&cast_kernel(a, b, 10), &format!("cast {a} -> {b}"));
        }
    }
    for d in TYPES {
        let mut k = Kb::new(&[5, 3]);
        let c = k.load(DType::Bool, IndexMap::Contiguous);
        let x = k.load(d, IndexMap::Contiguous);
        let y = k.konst(d);
        let dst = k.select(c, x, y);
        k.store(dst);
        // A second use of the same parameter slot.
        let dst2 = k.push(d, |dst| Instr::Const {
            dst,
            slot: 0,
            dtype: d,
        });
        k.store(dst2);
        let plan = validate_kernel(&k.build(), &format!("select {d}"));
        assert!(plan.passes[0].params);
    }
    for d in TYPES {
        validate_kernel(&gen_kernel(GenKind::Iota { axis: 1 }, &[4, 5], d), "iota");
        validate_kernel(&gen_kernel(GenKind::Identity, &[4, 4], d), "identity");
    }
    let lin = GenKind::Linspace {
        start: -3.0,
        step: 0.1,
        end: 7.0,
        n: 101,
    };
    validate_kernel(&gen_kernel(lin, &[101], DType::F32), "linspace");
    for dist in [RandomDist::Uniform, RandomDist::Normal] {
        validate_kernel(&random_kernel(dist, 1000), "random");
    }
    // Every generator and distribution in the generator form (key, counter, range in the source).
    for alg in [RngAlgorithm::Philox, RngAlgorithm::Hash32] {
        for (dist, d) in [
            (RandomDist::Uniform, DType::F32),
            (RandomDist::Normal, DType::F32),
            (RandomDist::Exponential, DType::F32),
            (RandomDist::Integers, DType::U32),
        ] {
            let g = GenKind::Random {
                alg,
                key: [1, 2],
                counter: 5 << 32 | 7,
                dist,
                range: 10,
            };
            validate_kernel(&gen_kernel(g, &[1000], d), "random generator");
        }
    }
    // f64 anywhere is unsupported.
    assert!(wgsl::render(&unary_kernel(UnaryOp::Sin, DType::F64, 4), target()).is_err());
}

#[test]
fn maps_reductions_and_faults_validate() {
    validate_kernel(&map_kernel(&[3, 4], strided(11, &[-4, -1])), "strided");
    validate_kernel(
        &map_kernel(&[6, 8], periodic(&[2, 3], &[-1, 5])),
        "periodic",
    );
    for &op in ReduceOp::ALL {
        for d in TYPES {
            if op.out_dtype(d).is_none() {
                continue;
            }
            // Rows of at most THREAD_ROW: one thread per result; longer rows: one work-group
            // per chunk, plus `af_final` when a result has several chunks.
            let cases = [
                (3, 10, 1),
                (5, 1000, 2),
                (1, 100_000, 2),
                (0, 500, 2),
                (4, 0, 1),
                (3000, 300, 1),
            ];
            for (outer, inner, passes) in cases {
                let k = reduce_kernel(op, d, outer, inner);
                let plan = validate_kernel(&k, &format!("{} {d} {outer}x{inner}", op.name()));
                assert_eq!(plan.passes.len(), passes, "{outer}x{inner}");
            }
        }
    }
    // Several reductions at once, with a faulting division and a random draw in the same kernel.
    let mut k = Kb::new(&[7, 300]);
    let a = k.load(DType::I32, IndexMap::Contiguous);
    let b = k.load(DType::I32, strided(0, &[0, 1]));
    let q = k.binary(BinaryOp::Div, a, b);
    let u = k.random(RandomDist::Uniform, IndexMap::Contiguous);
    k.store(q);
    k.reduce(ReduceOp::Sum, q);
    k.reduce(ReduceOp::ArgMin, u);
    k.reduce(ReduceOp::Max, u);
    let plan = validate_kernel(&k.build(), "multi-reduction");
    assert!(plan.fault.is_some() && plan.passes[0].params);
    // Each chunked reduction takes workgroup memory (argmax/argmin twice): 16 words per thread fit
    // in WebGPU's default 16 KiB, more do not.
    for (sums, ok) in [(16, true), (17, false)] {
        let mut k = Kb::new(&[2, 1000]);
        let a = k.load(DType::F32, IndexMap::Contiguous);
        for _ in 0..sums {
            k.reduce(ReduceOp::Sum, a);
        }
        assert_eq!(
            wgsl::render(&k.build(), target()).is_ok(),
            ok,
            "{sums} sums"
        );
    }
    // Empty domains: passes skipped.
    let plan = validate_kernel(&unary_kernel(UnaryOp::Neg, DType::F32, 0), "empty");
    assert_eq!(plan.passes[0].groups, 0);
    // Too large for u32 indices.
    assert!(wgsl::render(&unary_kernel(UnaryOp::Neg, DType::F32, 1 << 31), target()).is_err());
}

#[test]
fn intrinsics_validate() {
    for (m, k, n) in [(1, 1, 1), (70, 33, 130), (64, 64, 64), (0, 5, 3), (3, 0, 2)] {
        let c = intrinsic_call(
            Intrinsic::Matmul {
                trans_a: false,
                trans_b: false,
            },
            &[&[m, k], &[k, n]],
            &[DType::F32, DType::F32],
            &[m, n],
        );
        let plan = intrinsics::render(&c, target()).unwrap();
        validate(&plan, &format!("matmul {m}x{k}x{n}"));
    }
    let c64 = intrinsic_call(
        Intrinsic::Matmul {
            trans_a: false,
            trans_b: false,
        },
        &[&[2, 2], &[2, 2]],
        &[DType::F64, DType::F64],
        &[2, 2],
    );
    assert!(intrinsics::render(&c64, target()).is_err());
    for d in TYPES {
        for it in [DType::I32, DType::U32] {
            let c = intrinsic_call(
                Intrinsic::Gather { axis: 1 },
                &[&[3, 4, 5], &[6]],
                &[d, it],
                &[3, 6, 5],
            );
            let plan = intrinsics::render(&c, target()).unwrap();
            validate(&plan, &format!("gather {d} {it}"));
            assert_eq!(plan.fault, Some(0));
        }
        let c = intrinsic_call(
            Intrinsic::Concat { axis: 1 },
            &[&[2, 3], &[2, 0], &[2, 5]],
            &[d, d, d],
            &[2, 8],
        );
        let plan = intrinsics::render(&c, target()).unwrap();
        validate(&plan, &format!("concat {d}"));
        assert_eq!(plan.passes.len(), 2, "empty parts get no pass");
    }
}

/// `out0 = a + f32(iota)` (the generator read in place) and `out1 = n - 1 - iota` (an i32 iota
/// through a reversing strided map) over `[n]`: values that depend on each element's `lin`.
fn lanes_kernel(n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let a = k.load(DType::F32, IndexMap::Contiguous);
    let gen_reg =
        |k: &mut Kb, d: DType, map: IndexMap| k.generate(GenKind::Iota { axis: 0 }, d, &[n], map);
    let i = gen_reg(&mut k, DType::F32, IndexMap::Contiguous);
    let s = k.binary(BinaryOp::Add, a, i);
    k.store(s);
    let rev = gen_reg(&mut k, DType::I32, strided(n as isize - 1, &[-1]));
    k.store(rev);
    k.build()
}

/// The quad form is taken exactly when every load reads in place, every buffer holds 4-byte
/// elements and the length is a positive multiple of 4 (and the form is on); both forms
/// validate.
#[test]
fn map_kernels_take_quads_when_every_load_is_contiguous() {
    let on = quads_on();
    let plan = validate_kernel(&chain_kernel(&[50, 100]), "chain");
    assert_eq!(is_quads(&plan), on, "chain");
    if on {
        let tail = kernel_tail(&plan.source);
        for decl in [
            "in0: array<vec4<f32>>",
            "in1: array<vec4<f32>>",
            "out0: array<vec4<f32>>",
            "out1: array<vec4<i32>>",
            "out2: array<vec4<u32>>",
            "let vin0 = in0[q];",
            "let vin1 = in1[q];",
            "out2[q] = vout2;",
            "q < 1250u",
        ] {
            assert!(tail.contains(decl), "chain: no `{decl}` in\n{tail}");
        }
        assert_eq!(
            plan.passes[0].groups,
            1250u32.div_ceil(wgsl::LOCAL * gpu::tuning().wgpu_quads)
        );
    }
    let n = 1 << 20;
    let mut quads: Vec<(String, FusedKernel)> = vec![
        ("chain 4".into(), chain_kernel(&[4])),
        ("chain 2^20".into(), chain_kernel(&[n])),
        ("lanes".into(), lanes_kernel(1024)),
        (
            "int div".into(),
            binary_kernel(BinaryOp::Div, DType::I32, 100),
        ),
        (
            "iota".into(),
            gen_kernel(GenKind::Iota { axis: 1 }, &[4, 5], DType::U32),
        ),
        (
            "identity".into(),
            gen_kernel(GenKind::Identity, &[4, 4], DType::Bool),
        ),
        ("random".into(), random_kernel(RandomDist::Normal, 1000)),
    ];
    for a in TYPES {
        for b in TYPES {
            quads.push((format!("cast {a} -> {b}"), cast_kernel(a, b, 12)));
        }
        quads.push((format!("eq {a}"), binary_kernel(BinaryOp::Eq, a, 8)));
    }
    for (what, k) in &quads {
        let plan = validate_kernel(k, what);
        assert_eq!(is_quads(&plan), on, "{what}");
        let quads = k.domain.len() / 4;
        let want = quads
            .div_ceil((wgsl::LOCAL * gpu::tuning().wgpu_quads) as usize)
            .min(wgsl::MAX_GROUPS as usize) as u32;
        if on {
            assert_eq!(plan.passes[0].groups, want, "{what}: groups");
        }
        assert_eq!(
            wgsl::render(k, target()),
            wgsl::render(k, target()),
            "{what}"
        );
    }
    // An input read both in place and through a transposing map.
    let mut both = Kb::new(&[8, 8]);
    let a = both.load(DType::F32, IndexMap::Contiguous);
    let at = both.load_from(0, strided(0, &[1, 8]));
    let s = both.binary(BinaryOp::Add, a, at);
    both.store(s);
    let scalar: Vec<(&str, FusedKernel)> = vec![
        ("strided", map_kernel(&[4, 8], strided(31, &[-8, -1]))),
        ("periodic", map_kernel(&[6, 8], periodic(&[2, 3], &[-1, 5]))),
        ("in place and strided", both.build()),
        ("length 4998", chain_kernel(&[2, 2499])),
        ("length 2", unary_kernel(UnaryOp::Neg, DType::F32, 2)),
        ("length 0", unary_kernel(UnaryOp::Neg, DType::F32, 0)),
        (
            "reduction",
            reduce_kernel(ReduceOp::Sum, DType::F32, 4, 1000),
        ),
        (
            "short reduction",
            reduce_kernel(ReduceOp::Max, DType::I32, 40, 8),
        ),
    ];
    for (what, k) in &scalar {
        let plan = validate_kernel(k, what);
        assert!(!is_quads(&plan), "{what}");
    }
}

#[test]
fn sources_are_deterministic() {
    let k = reduce_kernel(ReduceOp::ArgMax, DType::F32, 3, 5000);
    assert_eq!(wgsl::render(&k, target()), wgsl::render(&k, target()));
}

// ---------------------------------------------------------------------------------------------
// (c) Running plans on a Vulkan adapter.

/// `r = max(a * b + sin(a), a) / exp(b); i = (cast_i32(a * 100) % 7) - 3; c = r > 0` over
/// `shape` for f32 inputs `a`, `b`, with parameters 100.0, 7, 3, 0.0 (outputs r, i, c).
fn chain_kernel(shape: &[usize]) -> FusedKernel {
    let mut k = Kb::new(shape);
    let ra = k.load(DType::F32, IndexMap::Contiguous);
    let rb = k.load(DType::F32, IndexMap::Contiguous);
    let m = k.binary(BinaryOp::Mul, ra, rb);
    let s = k.unary(UnaryOp::Sin, ra);
    let t = k.binary(BinaryOp::Add, m, s);
    let mx = k.binary(BinaryOp::Max, t, ra);
    let e = k.unary(UnaryOp::Exp, rb);
    let r = k.binary(BinaryOp::Div, mx, e);
    let hundred = k.konst(DType::F32);
    let h = k.binary(BinaryOp::Mul, ra, hundred);
    let hi = k.cast(DType::I32, h);
    let seven = k.konst(DType::I32);
    let md = k.binary(BinaryOp::Mod, hi, seven);
    let three = k.konst(DType::I32);
    let i = k.binary(BinaryOp::Sub, md, three);
    let zero = k.konst(DType::F32);
    let c = k.binary(BinaryOp::Gt, r, zero);
    k.store(r);
    k.store(i);
    k.store(c);
    k.build()
}

#[test]
fn elementwise_chain_matches_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    let n = 5000;
    let a: Vec<f32> = sample(n, 1, -3.0, 3.0).iter().map(|&x| x as f32).collect();
    let b: Vec<f32> = sample(n, 2, 0.5, 2.0).iter().map(|&x| x as f32).collect();
    let k = chain_kernel(&[50, 100]);
    let params = [100f32.to_bits() as u64, 7, 3, 0f32.to_bits() as u64];
    let (out, fault) = g
        .run(
            &k,
            &[&TypedVec::F32(a.clone()), &TypedVec::F32(b.clone())],
            &params,
        )
        .into_parts();
    assert_eq!(fault, 0);
    for j in 0..n {
        let (x, y) = (a[j] as f64, b[j] as f64);
        let t = (x * y + x.sin()).max(x);
        let want = t / y.exp();
        assert!(
            close_rel(out[0].f32()[j], want, 1e-5, 1e-6),
            "r[{j}]: {} vs {want}",
            out[0].f32()[j]
        );
        let hi = (a[j] * 100.0) as i32;
        assert_eq!(out[1].i32()[j], hi.rem_euclid(7) - 3, "i[{j}]");
        assert_eq!(out[2].words()[j], (out[0].f32()[j] > 0.0) as u32, "c[{j}]");
    }
}

/// `a + c0 + c1 + ... ` in i32 over `n` elements with `slots` constants, run with the parameters
/// as the renderer declares them and, for a plan with immediates, rewritten to a storage buffer
/// (the path of a device without immediates).
#[test]
fn parameters_reach_the_kernel_as_immediates_or_buffers() {
    let Some(g) = wgpu_device() else { return };
    let n = 3000;
    let a: Vec<i32> = (0..n as i32).map(|i| i * 31 - 40_000).collect();
    let fit = wgsl::IMMEDIATE_BYTES as usize / 8;
    for slots in [1, 3, fit, fit + 1, 3 * fit] {
        let mut k = Kb::new(&[n]);
        let mut acc = k.load(DType::I32, IndexMap::Contiguous);
        for _ in 0..slots {
            let c = k.konst(DType::I32);
            acc = k.binary(BinaryOp::Add, acc, c);
        }
        k.store(acc);
        let k = k.build();
        let plan = validate_kernel(&k, &format!("{slots} parameters"));
        let words = plan.immediate_words;
        assert_eq!(
            words.is_some(),
            slots <= fit && g.immediates,
            "{slots} parameters"
        );
        // The same kernel for a target without immediates: a storage buffer after the buffers.
        let no_imm = Target {
            fp64: false,
            immediates: false,
            fused_fma: false,
        };
        let storage_plan = wgsl::render(&k, no_imm).unwrap();
        validate(&storage_plan, &format!("{slots} parameters, storage"));
        assert_eq!(storage_plan.immediate_words, None);
        assert_eq!(declared_immediate_words(&storage_plan.source), None);
        let consts: Vec<i32> = (0..slots as i32).map(|i| i * 1_000_003 - 7).collect();
        let params: Vec<u64> = consts.iter().map(|&c| c as u32 as u64).collect();
        let want: Vec<i32> = a
            .iter()
            .map(|&x| consts.iter().fold(x, |s, &c| s.wrapping_add(c)))
            .collect();
        for (as_storage, plan) in [(false, &plan), (true, &storage_plan)] {
            let (out, fault) = g
                .run_plan(
                    plan,
                    &[&TypedVec::I32(a.clone())],
                    &[(DType::I32, n)],
                    &params,
                )
                .into_parts();
            assert_eq!(fault, 0);
            assert_eq!(
                out[0].i32(),
                &want[..],
                "{slots} parameters, as storage: {as_storage}"
            );
        }
    }
}

#[test]
fn integer_division_by_zero_faults() {
    let Some(g) = wgpu_device() else { return };
    let a: Vec<i32> = (0..1000).map(|i| i * 7 - 3000).collect();
    let mut b: Vec<i32> = (0..1000).map(|i| (i % 13) - 6).collect();
    for v in b.iter_mut() {
        if *v == 0 {
            *v = 5;
        }
    }
    let mut k = Kb::new(&[1000]);
    let ra = k.load(DType::I32, IndexMap::Contiguous);
    let rb = k.load(DType::I32, IndexMap::Contiguous);
    let q = k.binary(BinaryOp::Div, ra, rb);
    let r = k.binary(BinaryOp::Rem, ra, rb);
    k.store(q);
    k.store(r);
    let k = k.build();
    // Instruction 2 (the division) or 3 (the remainder) may win; both fault on element 567.
    let (ta, tb) = (TypedVec::I32(a.clone()), TypedVec::I32(b.clone()));
    let out = division_faults(g, &k, &[&ta, &tb], 1, &[567], &[3, 4], "i32 div, rem");
    for j in 0..1000 {
        assert_eq!(out[0].i32()[j], a[j].wrapping_div(b[j]));
        assert_eq!(out[1].i32()[j], a[j].wrapping_rem(b[j]));
    }
}

/// Renders and validates element-wise kernel `k` (which loads only in place), checks that it
/// takes the quad form exactly when that is on and its length a positive multiple of 4, and
/// runs it.
fn run_map(g: &Gpu, k: &FusedKernel, inputs: &[&TypedVec], params: &[u64], what: &str) -> Ran {
    let plan = validate_kernel(k, what);
    let len = k.domain.len();
    let want = quads_on() && len >= 4 && len.is_multiple_of(4);
    assert_eq!(is_quads(&plan), want, "{what}: quad form");
    let outs: Vec<(DType, usize)> = k.outputs.iter().map(|&d| (d, len)).collect();
    g.run_plan(&plan, inputs, &outs, params)
}

/// Lengths of the quad tests: one quad, a partial work-group, 2^20 elements; and two that are not
/// multiples of 4 (the scalar form, same oracles).
const QUAD_LENGTHS: [usize; 5] = [4, 1028, 1 << 20, 6, 1022];

/// `y = |sqrt(a * b + 1) * a - b| * 0.5 + a` in f32 (the constants as parameters).
fn quad_chain_kernel(n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let a = k.load(DType::F32, IndexMap::Contiguous);
    let b = k.load(DType::F32, IndexMap::Contiguous);
    let m = k.binary(BinaryOp::Mul, a, b);
    let one = k.konst(DType::F32);
    let m1 = k.binary(BinaryOp::Add, m, one);
    let s = k.unary(UnaryOp::Sqrt, m1);
    let sa = k.binary(BinaryOp::Mul, s, a);
    let d = k.binary(BinaryOp::Sub, sa, b);
    let ad = k.unary(UnaryOp::Abs, d);
    let half = k.konst(DType::F32);
    let h = k.binary(BinaryOp::Mul, ad, half);
    let y = k.binary(BinaryOp::Add, h, a);
    k.store(y);
    k.build()
}

#[test]
fn quad_f32_chain_matches_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    for n in QUAD_LENGTHS {
        let a: Vec<f32> = sample(n, 21, 0.0, 3.0).iter().map(|&x| x as f32).collect();
        let b: Vec<f32> = sample(n, 22, 0.5, 2.0).iter().map(|&x| x as f32).collect();
        let params = [1f32.to_bits() as u64, 0.5f32.to_bits() as u64];
        let what = format!("chain {n}");
        let (out, fault) = run_map(
            g,
            &quad_chain_kernel(n),
            &[&TypedVec::F32(a.clone()), &TypedVec::F32(b.clone())],
            &params,
            &what,
        )
        .into_parts();
        assert_eq!(fault, 0);
        for j in 0..n {
            let (x, y) = (a[j] as f64, b[j] as f64);
            let want = ((x * y + 1.0).sqrt() * x - y).abs() * 0.5 + x;
            let got = out[0].f32()[j];
            assert!(
                close_rel(got, want, 1e-5, 1e-6),
                "{what} [{j}]: {got} vs {want}"
            );
        }
    }
}

/// Quad kernels of every 4-byte type in and out against plain Rust, element by element: a
/// comparison and a bool input to a bool output, an i32 to f32 cast, a u32 binary op, values
/// computed from each lane's `lin`, and an integer division whose fault is reported from a lane.
#[test]
fn quad_kernels_of_every_type_match_plain_rust() {
    let Some(g) = wgpu_device() else { return };
    for n in QUAD_LENGTHS {
        let fa: Vec<f32> = sample(n, 31, -2.0, 2.0).iter().map(|&x| x as f32).collect();
        let mut fb: Vec<f32> = sample(n, 32, -2.0, 2.0).iter().map(|&x| x as f32).collect();
        fb[n / 2] = fa[n / 2];
        let flags: Vec<u32> = (0..n).map(|i| ((i * 7) % 5 < 2) as u32).collect();
        let ia: Vec<i32> = (0..n)
            .map(|i| (i as i32).wrapping_mul(-1_640_531_535) >> (i % 9))
            .collect();
        let ua: Vec<u32> = ia.iter().map(|&x| x as u32).collect();
        let ub: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0xdead_beef)
            .collect();

        // c = (a < b) ^ flag
        let mut k = Kb::new(&[n]);
        let a = k.load(DType::F32, IndexMap::Contiguous);
        let b = k.load(DType::F32, IndexMap::Contiguous);
        let f = k.load(DType::Bool, IndexMap::Contiguous);
        let lt = k.binary(BinaryOp::Lt, a, b);
        let c = k.binary(BinaryOp::Xor, lt, f);
        k.store(c);
        let (out, _) = run_map(
            g,
            &k.build(),
            &[
                &TypedVec::F32(fa.clone()),
                &TypedVec::F32(fb.clone()),
                &bools_of(&flags),
            ],
            &[],
            &format!("bool {n}"),
        )
        .into_parts();
        let want: Vec<u32> = (0..n)
            .map(|j| ((fa[j] < fb[j]) ^ (flags[j] != 0)) as u32)
            .collect();
        assert_eq!(out[0].words(), &want[..], "bool {n}");

        let (out, _) = run_map(
            g,
            &cast_kernel(DType::I32, DType::F32, n),
            &[&TypedVec::I32(ia.clone())],
            &[],
            &format!("cast {n}"),
        )
        .into_parts();
        for (j, (x, y)) in ia.iter().zip(out[0].f32()).enumerate() {
            assert_eq!(y.to_bits(), (*x as f32).to_bits(), "cast {n} [{j}]: {x}");
        }

        // (a * b) ^ b in u32
        let mut k = Kb::new(&[n]);
        let a = k.load(DType::U32, IndexMap::Contiguous);
        let b = k.load(DType::U32, IndexMap::Contiguous);
        let m = k.binary(BinaryOp::Mul, a, b);
        let x = k.binary(BinaryOp::Xor, m, b);
        k.store(x);
        let (out, _) = run_map(
            g,
            &k.build(),
            &[&TypedVec::U32(ua.clone()), &TypedVec::U32(ub.clone())],
            &[],
            &format!("u32 {n}"),
        )
        .into_parts();
        let want: Vec<u32> = (0..n).map(|j| ua[j].wrapping_mul(ub[j]) ^ ub[j]).collect();
        assert_eq!(out[0].u32(), &want[..], "u32 {n}");

        let (out, _) = run_map(
            g,
            &lanes_kernel(n),
            &[&TypedVec::F32(fa.clone())],
            &[],
            &format!("lanes {n}"),
        )
        .into_parts();
        for (j, &x) in fa.iter().enumerate() {
            let want = x + j as f32;
            assert_eq!(out[0].f32()[j].to_bits(), want.to_bits(), "lanes {n} [{j}]");
            assert_eq!(out[1].i32()[j], (n - 1 - j) as i32, "reversed {n} [{j}]");
        }

        // q = a / b, r = a % b in i32: no zero divisor, then zeros in lanes 3 and 1.
        let mut k = Kb::new(&[n]);
        let a = k.load(DType::I32, IndexMap::Contiguous);
        let b = k.load(DType::I32, IndexMap::Contiguous);
        let q = k.binary(BinaryOp::Div, a, b);
        let r = k.binary(BinaryOp::Rem, a, b);
        k.store(q);
        k.store(r);
        let k = k.build();
        let mut ib: Vec<i32> = (0..n as i32).map(|i| (i % 13) - 6).collect();
        for v in ib.iter_mut().filter(|v| **v == 0) {
            *v = -1;
        }
        let mut ia = ia.clone();
        ia[0] = i32::MIN;
        ib[0] = -1;
        let (out, fault) = run_map(
            g,
            &k,
            &[&TypedVec::I32(ia.clone()), &TypedVec::I32(ib.clone())],
            &[],
            &format!("div {n}"),
        )
        .into_parts();
        assert_eq!(fault, 0, "div {n}");
        let wq: Vec<i32> = (0..n).map(|j| ia[j].wrapping_div(ib[j])).collect();
        let wr: Vec<i32> = (0..n).map(|j| ia[j].wrapping_rem(ib[j])).collect();
        assert_eq!(out[0].i32(), &wq[..], "div {n}");
        assert_eq!(out[1].i32(), &wr[..], "rem {n}");
        let zeros = [3, n - 3];
        for &z in &zeros {
            ib[z] = 0;
        }
        let (out, fault) = run_map(
            g,
            &k,
            &[&TypedVec::I32(ia.clone()), &TypedVec::I32(ib.clone())],
            &[],
            &format!("div by zero {n}"),
        )
        .into_parts();
        // Instruction 2 (the division) or 3 (the remainder) may win.
        assert!(
            fault == 3 || fault == 4,
            "div by zero {n}: fault word {fault}"
        );
        for j in 0..n {
            if zeros.contains(&j) {
                assert_eq!((out[0].i32()[j], out[1].i32()[j]), (0, 0), "zero {n} [{j}]");
            } else {
                assert_eq!(
                    (out[0].i32()[j], out[1].i32()[j]),
                    (wq[j], wr[j]),
                    "{n} [{j}]"
                );
            }
        }
    }
}

/// `(a + b) ^ b` in u32 over `[n]`.
fn grid_kernel(n: usize) -> FusedKernel {
    let mut k = Kb::new(&[n]);
    let ra = k.load(DType::U32, IndexMap::Contiguous);
    let rb = k.load(DType::U32, IndexMap::Contiguous);
    let s = k.binary(BinaryOp::Add, ra, rb);
    let x = k.binary(BinaryOp::Xor, s, rb);
    k.store(x);
    k.build()
}

/// Runs `plan` (of [`grid_kernel`]`(n)`) and compares with plain Rust.
fn grid_case(g: &Gpu, plan: &GpuPlan, n: usize, what: &str) {
    let a: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let b: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5bd1_e995).collect();
    let (out, _) = g
        .run_plan(
            plan,
            &[&TypedVec::U32(a.clone()), &TypedVec::U32(b.clone())],
            &[(DType::U32, n)],
            &[],
        )
        .into_parts();
    let got = out[0].u32();
    for j in 0..n {
        let want = a[j].wrapping_add(b[j]) ^ b[j];
        assert_eq!(got[j], want, "{what} [{j}] of {n}");
    }
}

/// Quad kernels whose threads take several trips of the grid-stride loops: the plan's grid of 3
/// work-groups instead of the 513 it has (its strides rewritten to match), so each thread takes
/// about 170 trips of the main loop and the rest in the remainder loop; and, where the adapter binds buffers that large, a
/// kernel with more quads than the largest grid has threads (lavapipe binds at most 128 MiB).
#[test]
fn quad_kernels_loop_over_the_grid() {
    let Some(g) = wgpu_device() else { return };
    let n = (1 << 20) + 4 * 37;
    let k = grid_kernel(n);
    let mut plan = validate_kernel(&k, "grid");
    let quads = quads_on();
    assert_eq!(is_quads(&plan), quads);
    if quads {
        let groups = (n / 4).div_ceil((wgsl::LOCAL * gpu::tuning().wgpu_quads) as usize) as u32;
        assert_eq!(plan.passes[0].groups, groups);
        // The grid's size in threads appears only in the main loop's step, Q times it (a
        // group's quads and the last trip's loop depend on the group size alone).
        let threads = groups * wgsl::LOCAL;
        let strides = [(
            gpu::tuning().wgpu_quads * threads,
            gpu::tuning().wgpu_quads * 3 * wgsl::LOCAL,
        )];
        for (old, new) in strides {
            let step = format!("q += {old}u)");
            assert!(plan.source.contains(&step), "no `{step}`");
            plan.source = plan.source.replace(&format!("{old}u"), &format!("{new}u"));
        }
        plan.passes[0].groups = 3;
        validate(&plan, "grid of 3 groups");
    }
    grid_case(g, &plan, n, "grid of 3 groups");

    let grid = (wgsl::LOCAL * wgsl::MAX_GROUPS) as usize;
    let n = 4 * gpu::tuning().wgpu_quads as usize * grid + 4 * 37;
    let k = grid_kernel(n);
    let plan = validate_kernel(&k, "largest grid");
    assert_eq!(is_quads(&plan), quads);
    assert_eq!(plan.passes[0].groups, wgsl::MAX_GROUPS);
    let limit = g.device.limits().max_storage_buffer_binding_size;
    if (n as u64) * 4 > limit {
        eprintln!(
            "skipped: {n} u32 elements ({} bytes) exceed the adapter's binding limit of {limit} bytes",
            n * 4
        );
        return;
    }
    grid_case(g, &plan, n, "largest grid");
}

fn sum_case(g: &Gpu, outer: usize, inner: usize) {
    let x: Vec<f32> = sample(outer * inner, 3, -1.0, 1.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let xi: Vec<i32> = (0..outer * inner)
        .map(|i| (i as i32).wrapping_mul(2_654_435_761u32 as i32))
        .collect();
    let mut k = Kb::new(&[outer, inner]);
    let a = k.load(DType::F32, IndexMap::Contiguous);
    let b = k.load(DType::I32, IndexMap::Contiguous);
    k.reduce(ReduceOp::Sum, a);
    k.reduce(ReduceOp::Sum, b);
    k.reduce(ReduceOp::Prod, b);
    let k = k.build();
    let (out, _) = g
        .run(
            &k,
            &[&TypedVec::F32(x.clone()), &TypedVec::I32(xi.clone())],
            &[],
        )
        .into_parts();
    for o in 0..outer {
        let row = &x[o * inner..(o + 1) * inner];
        let want: f64 = row.iter().map(|&v| v as f64).sum();
        let scale: f64 = row.iter().map(|&v| (v as f64).abs()).sum::<f64>();
        let got = out[0].f32()[o] as f64;
        assert!(
            (got - want).abs() <= 1e-6 * scale + 1e-6,
            "sum {outer}x{inner} [{o}]: {got} vs {want}"
        );
        let rowi = &xi[o * inner..(o + 1) * inner];
        let wi = rowi.iter().fold(0i32, |s, &v| s.wrapping_add(v));
        let wp = rowi.iter().fold(1i32, |s, &v| s.wrapping_mul(v));
        assert_eq!(out[1].i32()[o], wi, "int sum {outer}x{inner} [{o}]");
        assert_eq!(out[2].i32()[o], wp, "int prod {outer}x{inner} [{o}]");
    }
}

#[test]
fn sums_match_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    sum_case(g, 1, 1_000_000);
    // Chunks long enough for the unrolled loop (and its remainder), with and without a final pass.
    sum_case(g, 1, 4_000_000);
    sum_case(g, 600, 5000);
    sum_case(g, 3000, 2900);
    sum_case(g, 37, 5000);
    sum_case(g, 3000, 300);
    sum_case(g, 1000, 10);
    sum_case(g, 5, 0);
}

#[test]
fn argmax_argmin_any_all_match_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    for (outer, inner) in [(4, 50_000), (300, 40), (2, 700), (600, 5000)] {
        let n = outer * inner;
        // Few distinct values (ties), some NaNs in row 1, a row of equal values.
        let mut x: Vec<f32> = sample(n, 9, 0.0, 8.0)
            .iter()
            .map(|&v| v.floor() as f32)
            .collect();
        if outer > 1 {
            x[inner + inner / 3] = f32::NAN;
            x[inner + inner / 2] = f32::NAN;
        }
        for v in &mut x[(outer - 1) * inner..] {
            *v = 2.0;
        }
        let flags: Vec<u32> = (0..n).map(|i| ((i % 977) == 5) as u32).collect();
        let mut k = Kb::new(&[outer, inner]);
        let a = k.load(DType::F32, IndexMap::Contiguous);
        let b = k.load(DType::Bool, IndexMap::Contiguous);
        let c = k.cast(DType::I32, a);
        k.reduce(ReduceOp::ArgMax, a);
        k.reduce(ReduceOp::ArgMin, a);
        k.reduce(ReduceOp::Max, a);
        k.reduce(ReduceOp::Min, a);
        k.reduce(ReduceOp::Any, b);
        k.reduce(ReduceOp::All, b);
        k.reduce(ReduceOp::ArgMin, c);
        let k = k.build();
        let out = g
            .run(&k, &[&TypedVec::F32(x.clone()), &bools_of(&flags)], &[])
            .outputs;
        for o in 0..outer {
            let row = &x[o * inner..(o + 1) * inner];
            let first_nan = row.iter().position(|v| v.is_nan());
            let best = |better: fn(f32, f32) -> bool| {
                first_nan.unwrap_or_else(|| {
                    (1..row.len()).fold(0, |b, i| if better(row[i], row[b]) { i } else { b })
                }) as u32
            };
            let ctx = format!("{outer}x{inner} row {o}");
            assert_eq!(out[0].u32()[o], best(|a, b| a > b), "argmax {ctx}");
            assert_eq!(out[1].u32()[o], best(|a, b| a < b), "argmin {ctx}");
            let mx = out[2].f32()[o];
            let mn = out[3].f32()[o];
            if first_nan.is_some() {
                assert!(mx.is_nan() && mn.is_nan(), "max/min NaN {ctx}");
            } else {
                assert_eq!(
                    mx,
                    row.iter().cloned().fold(f32::MIN, f32::max),
                    "max {ctx}"
                );
                assert_eq!(
                    mn,
                    row.iter().cloned().fold(f32::MAX, f32::min),
                    "min {ctx}"
                );
            }
            let fl = &flags[o * inner..(o + 1) * inner];
            assert_eq!(out[4].words()[o], fl.contains(&1) as u32, "any {ctx}");
            assert_eq!(
                out[5].words()[o],
                fl.iter().all(|&f| f == 1) as u32,
                "all {ctx}"
            );
            let ci: Vec<i32> = row.iter().map(|&v| v as i32).collect();
            let want = (1..ci.len()).fold(0, |b, i| if ci[i] < ci[b] { i } else { b });
            assert_eq!(out[6].u32()[o], want as u32, "int argmin {ctx}");
        }
    }
}

/// Column reductions (`sum_axis(0)` and kin: a thread per result, chunked, with partials) and
/// their neighbours, every op and type, against the CPU tile VM and plain loops.
#[test]
fn column_reductions_match_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    column_reductions_match(g, &TYPES);
}

#[test]
fn philox_uniform_is_bit_identical_to_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    let n = 10_000;
    let key = [0x1234_5678u32, 0x9abc_def0];
    // A counter just below 2^32, so element indices carry into the high word.
    let counter: u64 = (3u64 << 32) | 0xffff_f000;
    let mut k = Kb::new(&[n]);
    let u = k.random(RandomDist::Uniform, IndexMap::Contiguous);
    let z = k.random(RandomDist::Normal, IndexMap::Contiguous);
    k.store(u);
    k.store(z);
    let k = k.build();
    let params = [key_param(key), counter, key_param(key), counter + 17];
    let (out, _) = g.run(&k, &[], &params).into_parts();
    for i in 0..n {
        let want = philox_reference(key, counter + i as u64, RandomDist::Uniform, DType::F32);
        assert_eq!(
            (out[0].f32()[i] as f64).to_bits(),
            want.to_bits(),
            "uniform [{i}]"
        );
    }
    for i in 0..n {
        let want = philox_reference(key, counter + 17 + i as u64, RandomDist::Normal, DType::F32);
        assert!(
            close_rel(out[1].f32()[i], want, 2e-6, 2e-6),
            "normal [{i}]: {} vs {want}",
            out[1].f32()[i]
        );
    }
    // The generator form (key and counter in the source) gives the same stream.
    let gk = gen_kernel(
        GenKind::Random {
            alg: RngAlgorithm::Philox,
            key,
            counter,
            dist: RandomDist::Uniform,
            range: 0,
        },
        &[n],
        DType::F32,
    );
    let (out2, _) = g.run(&gk, &[], &[]).into_parts();
    assert_eq!(out2[0], out[0]);
}

#[test]
fn matmul_matches_a_plain_loop() {
    let Some(g) = wgpu_device() else { return };
    let cases = [
        (DType::F32, 70, 33, 130),
        (DType::F32, 1, 200, 1),
        (DType::F32, 128, 64, 64),
        (DType::F32, 5, 0, 3),
    ];
    matmul_matches(
        g,
        &cases,
        |len, seed| sample(len, seed, -1.0, 1.0),
        (4, 5),
        |_, k| 1e-5 * k as f64,
    );
}

/// Row and column scans, their carry loops and grid-stride loops, against a plain loop.
#[test]
fn scan_matches_a_plain_loop() {
    let Some(g) = wgpu_device() else { return };
    scan_matches(g);
}

#[test]
fn gather_and_concat_match_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    let data: Vec<u32> = (0..60).collect();
    let idx = vec![3i32, 0, 3, 1, 2, 2];
    let c = intrinsic_call(
        Intrinsic::Gather { axis: 1 },
        &[&[3, 4, 5], &[6]],
        &[DType::U32, DType::I32],
        &[3, 6, 5],
    );
    let plan = intrinsics::render(&c, target()).unwrap();
    let (out, fault) = g
        .run_plan(
            &plan,
            &[&TypedVec::U32(data.clone()), &TypedVec::I32(idx.clone())],
            &[(DType::U32, 90)],
            &[],
        )
        .into_parts();
    assert_eq!(fault, 0);
    for p in 0..3 {
        for (j, &i) in idx.iter().enumerate() {
            for q in 0..5 {
                assert_eq!(
                    out[0].u32()[(p * 6 + j) * 5 + q],
                    data[(p * 4 + i as usize) * 5 + q]
                );
            }
        }
    }
    for bad in [-1, 4] {
        let mut idx = idx.clone();
        idx[4] = bad;
        let (_, fault) = g
            .run_plan(
                &plan,
                &[&TypedVec::U32(data.clone()), &TypedVec::I32(idx)],
                &[(DType::U32, 90)],
                &[],
            )
            .into_parts();
        assert_eq!(fault, 1, "index {bad}");
    }
    // Concat along axis 1 of [2,3], [2,0], [2,5] (f32).
    let p0: Vec<f32> = (0..6).map(|v| v as f32).collect();
    let p2: Vec<f32> = (0..10).map(|v| 100.0 + v as f32).collect();
    let c = intrinsic_call(
        Intrinsic::Concat { axis: 1 },
        &[&[2, 3], &[2, 0], &[2, 5]],
        &[DType::F32; 3],
        &[2, 8],
    );
    let plan = intrinsics::render(&c, target()).unwrap();
    let (out, _) = g
        .run_plan(
            &plan,
            &[
                &TypedVec::F32(p0),
                &TypedVec::F32(vec![]),
                &TypedVec::F32(p2),
            ],
            &[(DType::F32, 16)],
            &[],
        )
        .into_parts();
    let want: Vec<f32> = [
        0., 1., 2., 100., 101., 102., 103., 104., 3., 4., 5., 105., 106., 107., 108., 109.,
    ]
    .to_vec();
    assert_eq!(out[0].f32(), &want[..]);
}

#[test]
fn views_and_generators_match_the_cpu() {
    let Some(g) = wgpu_device() else { return };
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    // Reversed 3x4 view: in[11 - 4 d0 - d1].
    let (out, _) = g
        .run(
            &map_kernel(&[3, 4], strided(11, &[-4, -1])),
            &[&TypedVec::F32(x.clone())],
            &[],
        )
        .into_parts();
    let want: Vec<f32> = (0..12).rev().map(|v| v as f32).collect();
    assert_eq!(out[0].f32(), &want[..]);
    // Tile a [2, 3] input over [6, 8] starting at (-1, 5).
    let x6: Vec<f32> = (0..6).map(|v| v as f32).collect();
    let (out, _) = g
        .run(
            &map_kernel(&[6, 8], periodic(&[2, 3], &[-1, 5])),
            &[&TypedVec::F32(x6.clone())],
            &[],
        )
        .into_parts();
    for d0 in 0..6i64 {
        for d1 in 0..8i64 {
            let s = (d0 - 1).rem_euclid(2) * 3 + (d1 + 5).rem_euclid(3);
            assert_eq!(out[0].f32()[(d0 * 8 + d1) as usize], x6[s as usize]);
        }
    }
    let (out, _) = g
        .run(
            &gen_kernel(GenKind::Iota { axis: 0 }, &[3, 4], DType::I32),
            &[],
            &[],
        )
        .into_parts();
    assert_eq!(out[0].i32(), &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    let (out, _) = g
        .run(
            &gen_kernel(GenKind::Identity, &[3, 3], DType::Bool),
            &[],
            &[],
        )
        .into_parts();
    assert_eq!(out[0].words(), &[1, 0, 0, 0, 1, 0, 0, 0, 1]);
    for (s, e, n) in [(-3.0, 7.5, 1000usize), (0.1, 0.7, 7), (-1e6, 1e6, 9999)] {
        let step = (e - s) / (n - 1) as f64;
        let lin = GenKind::Linspace {
            start: s,
            step,
            end: e,
            n,
        };
        let (out, _) = g
            .run(&gen_kernel(lin, &[n], DType::F32), &[], &[])
            .into_parts();
        let v = out[0].f32();
        assert_eq!((v[0], v[n - 1]), (s as f32, e as f32));
        let tol = 4.0 * f32::EPSILON as f64 * s.abs().max(e.abs());
        for (i, &got) in v.iter().enumerate() {
            let want = s + i as f64 * step;
            assert!(
                (got as f64 - want).abs() <= tol,
                "linspace({s}, {e}, {n})[{i}]: {got} vs {want}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The math library against f64, with tests/ops_unary.rs's domains and f32 tolerances.

unsafe extern "C" {
    safe fn erf(x: f64) -> f64;
    safe fn erfc(x: f64) -> f64;
}

use std::f64::consts::{E, FRAC_PI_2, PI};

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

/// Runs a one-op kernel on f32 inputs.
fn run_unary(g: &Gpu, op: UnaryOp, xs: &[f32]) -> TypedVec {
    let (out, _) = g
        .run(
            &unary_kernel(op, DType::F32, xs.len()),
            &[&TypedVec::F32(xs.to_vec())],
            &[],
        )
        .into_parts();
    out.into_iter().next().unwrap()
}

fn run_binary(g: &Gpu, op: BinaryOp, xs: &[f32], ys: &[f32]) -> TypedVec {
    let k = binary_kernel(op, DType::F32, xs.len());
    let (out, _) = g
        .run(
            &k,
            &[&TypedVec::F32(xs.to_vec()), &TypedVec::F32(ys.to_vec())],
            &[],
        )
        .into_parts();
    out.into_iter().next().unwrap()
}

/// Elements where `got` is outside rel 2e-6 / abs 1e-6 of `oracle` on the f32 input (an oracle
/// beyond f32's range expects infinity).
fn misses(xs: &[f32], got: &[f32], oracle: impl Fn(f64) -> f64) -> Vec<String> {
    xs.iter()
        .zip(got)
        .filter_map(|(&x, &y)| {
            let w = oracle(x as f64);
            let w = if w.is_finite() && (w as f32).is_infinite() {
                w as f32 as f64
            } else {
                w
            };
            (!close_rel(y, w, 2e-6, 1e-6)).then(|| format!("f({x:e}) = {y:e}, want {w:e}"))
        })
        .take(6)
        .collect()
}

fn domain(lo: f64, hi: f64, signed: bool, extra: &[f64]) -> Vec<f32> {
    let mut v: Vec<f64> = sample(3000, (lo * 7.0 + hi) as u64 ^ 0x5eed, lo, hi);
    if signed {
        let signs = sample(3000, 77, -1.0, 1.0);
        for (x, s) in v.iter_mut().zip(signs) {
            *x = x.copysign(s);
        }
    }
    v.extend_from_slice(extra);
    v.iter().map(|&x| x as f32).collect()
}

#[test]
fn float_unary_ops_are_accurate() {
    let Some(g) = wgpu_device() else { return };
    type Row = (
        UnaryOp,
        fn(f64) -> f64,
        f64,
        f64,
        bool,
        &'static [f64],
        &'static [f64],
    );
    #[rustfmt::skip]
    let table: &[Row] = &[
        (UnaryOp::Exp, f64::exp, -80.0, 80.0, false, &[0.0, -0.0, 1.0, 100.0, -200.0, INF, -INF], &[NAN]),
        (UnaryOp::Exp2, f64::exp2, -120.0, 120.0, false, &[0.0, 1.0, 10.0, -1.0, 130.0, INF, -INF], &[NAN]),
        (UnaryOp::Sqrt, f64::sqrt, 0.0, 1e4, false, &[0.0, -0.0, 1.0, 4.0, 1e30, INF], &[-1.0, -1e-30, -INF, NAN]),
        (UnaryOp::Rsqrt, |x| 1.0 / x.sqrt(), 1e-3, 1e4, false, &[1.0, 4.0, 0.25, 0.0, -0.0, INF], &[-1.0, -INF, NAN]),
        (UnaryOp::Cbrt, f64::cbrt, -1e3, 1e3, false, &[0.0, -0.0, 8.0, -27.0, 1e-30, INF, -INF, 3e38, 1e-40], &[NAN]),
        (UnaryOp::Ln, f64::ln, 1e-3, 1e4, false, &[1.0, E, 0.0, 1e-30, INF, 1e-40, 3e38], &[-1.0, -1e-30, -INF, NAN]),
        (UnaryOp::Log10, f64::log10, 1e-3, 1e4, false, &[1.0, 10.0, 100.0, 1000.0, 0.0, INF], &[-1.0, -INF, NAN]),
        (UnaryOp::Log2, f64::log2, 1e-3, 1e4, false, &[1.0, 2.0, 1024.0, 0.5, 0.0, INF], &[-1.0, -INF, NAN]),
        (UnaryOp::Sin, f64::sin, -10.0, 10.0, false, &[0.0, -0.0, FRAC_PI_2, PI, 100.0, -1000.0, 8000.0], &[INF, -INF, NAN]),
        (UnaryOp::Cos, f64::cos, -10.0, 10.0, false, &[0.0, -0.0, FRAC_PI_2, PI, 100.0, -1000.0, 8000.0], &[INF, -INF, NAN]),
        (UnaryOp::Tan, f64::tan, -1.5, 1.5, false, &[0.0, -0.0, 1.0, -1.0, 3.0], &[INF, -INF, NAN]),
        (UnaryOp::Sec, |x| 1.0 / x.cos(), -1.5, 1.5, false, &[0.0, 3.0, -3.0], &[INF, NAN]),
        (UnaryOp::Csc, |x| 1.0 / x.sin(), 0.05, 3.1, true, &[1.0, -1.0, 2.0, 0.0, -0.0], &[INF, NAN]),
        (UnaryOp::Cot, |x| 1.0 / x.tan(), 0.05, 1.5, true, &[1.0, 0.0, -0.0], &[INF, NAN]),
        (UnaryOp::Asin, f64::asin, -1.0, 1.0, false, &[1.0, -1.0, 0.0, -0.0, 0.5], &[1.5, -1.0001, INF, NAN]),
        (UnaryOp::Acos, f64::acos, -1.0, 1.0, false, &[1.0, -1.0, 0.0, -0.0, 0.5], &[1.5, -1.0001, INF, NAN]),
        (UnaryOp::Atan, f64::atan, -50.0, 50.0, false, &[0.0, -0.0, 1.0, 1e10, INF, -INF], &[NAN]),
        (UnaryOp::Asec, |x| (1.0 / x).acos(), 1.05, 50.0, true, &[1.0, -1.0, 2.0, INF, -INF], &[0.5, -0.5, 0.0, NAN]),
        (UnaryOp::Acsc, |x| (1.0 / x).asin(), 1.05, 50.0, true, &[1.0, -1.0, 2.0, INF, -INF], &[0.5, -0.99, 0.0, NAN]),
        (UnaryOp::Acot, |x| (1.0 / x).atan(), 0.01, 50.0, true, &[1.0, -1.0, 0.0, -0.0, INF], &[NAN]),
        (UnaryOp::Sinh, f64::sinh, -10.0, 10.0, false, &[0.0, -0.0, 1e-10, 50.0, 100.0, INF, -INF, 0.49, 0.51, 89.0], &[NAN]),
        (UnaryOp::Cosh, f64::cosh, -10.0, 10.0, false, &[0.0, -0.0, 50.0, 100.0, INF, -INF, 89.0], &[NAN]),
        (UnaryOp::Tanh, f64::tanh, -10.0, 10.0, false, &[0.0, -0.0, 1e-10, 20.0, INF, -INF, 0.49, 0.51], &[NAN]),
        (UnaryOp::Sech, |x| 1.0 / x.cosh(), -10.0, 10.0, false, &[0.0, 100.0, INF, -INF], &[NAN]),
        (UnaryOp::Csch, |x| 1.0 / x.sinh(), 0.01, 10.0, true, &[0.0, -0.0, 100.0, INF], &[NAN]),
        (UnaryOp::Coth, |x| 1.0 / x.tanh(), 0.01, 10.0, true, &[0.0, -0.0, 30.0, INF, -INF], &[NAN]),
        (UnaryOp::Asinh, f64::asinh, -100.0, 100.0, false, &[0.0, -0.0, 1e-10, 1e10, -1e10, INF, -INF], &[NAN]),
        (UnaryOp::Acosh, f64::acosh, 1.0, 100.0, false, &[1.0, 2.0, 1e10, INF, 1.0000001], &[0.5, 0.0, -1.0, -INF, NAN]),
        (UnaryOp::Atanh, f64::atanh, -0.99, 0.99, false, &[0.0, -0.0, 0.5, 1.0, -1.0, 1e-10], &[2.0, -1.5, INF, NAN]),
        (UnaryOp::Erf, |x| erf(x), -6.0, 6.0, false, &[0.0, -0.0, 1e-10, 0.84375, 1.25, 2.857, 10.0, INF, -INF], &[NAN]),
        (UnaryOp::Erfc, |x| erfc(x), -6.0, 10.0, false, &[0.0, -0.0, 1e-20, 0.2, 0.84375, 1.25, 2.857, 27.0, 30.0, INF, -INF], &[NAN]),
    ];
    let mut failures = Vec::new();
    for &(op, oracle, lo, hi, signed, extra, nans) in table {
        let xs = domain(lo, hi, signed, extra);
        let nan_in: Vec<f32> = nans.iter().map(|&x| x as f32).collect();
        // One kernel runs the domain and, after it, the inputs whose result is NaN.
        let all: Vec<f32> = xs.iter().chain(&nan_in).copied().collect();
        let got = run_unary(g, op, &all);
        let (got, got_nan) = got.f32().split_at(xs.len());
        let bad = misses(&xs, got, oracle);
        if !bad.is_empty() {
            failures.push(format!("{}: {}", op.name(), bad.join("; ")));
        }
        for (x, y) in nan_in.iter().zip(got_nan) {
            if !y.is_nan() {
                failures.push(format!("{}({x}) = {y}, want NaN", op.name()));
            }
        }
    }
    assert!(failures.is_empty(), "inaccurate:\n{}", failures.join("\n"));
}

#[test]
fn rounding_and_sign_ops_are_exact() {
    let Some(g) = wgpu_device() else { return };
    let mut xs: Vec<f32> = sample(2000, 8, -100.0, 100.0)
        .iter()
        .map(|&x| x as f32)
        .collect();
    xs.extend((-6..6).map(|k| k as f32 + 0.5));
    xs.extend([
        0.0,
        -0.0,
        0.4,
        -0.4,
        0.6,
        -0.6,
        0.49999997,
        -0.49999997,
        1e20,
        -1e20,
    ]);
    xs.extend([
        8388607.5,
        -8388607.5,
        8388609.0,
        16777217.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]);
    let ops: [UnaryCase<f32>; 7] = [
        (UnaryOp::Floor, f32::floor),
        (UnaryOp::Ceil, f32::ceil),
        (UnaryOp::Trunc, f32::trunc),
        (UnaryOp::Round, f32::round),
        (UnaryOp::Abs, f32::abs),
        (UnaryOp::Neg, |x| -x),
        (UnaryOp::Sign, |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }),
    ];
    for (op, f) in ops {
        let got = run_unary(g, op, &xs);
        for (x, y) in xs.iter().zip(got.f32()) {
            let w = f(*x);
            assert!(
                y.to_bits() == w.to_bits() || (y.is_nan() && w.is_nan()),
                "{}({x:?}) = {y:?}, want {w:?}",
                op.name()
            );
        }
    }
    let got = run_unary(g, UnaryOp::IsNan, &xs);
    assert!(
        xs.iter()
            .zip(got.words())
            .all(|(x, y)| y == x.is_nan() as u32)
    );
    let got = run_unary(g, UnaryOp::IsInf, &xs);
    assert!(
        xs.iter()
            .zip(got.words())
            .all(|(x, y)| y == x.is_infinite() as u32)
    );
}

#[test]
fn float_binary_ops_are_accurate() {
    let Some(g) = wgpu_device() else { return };
    // pow: positive bases with real exponents, negative bases with integral ones, special values.
    let mut x: Vec<f32> = sample(3000, 11, 0.1, 10.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut y: Vec<f32> = sample(3000, 12, -5.0, 5.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    x.extend(sample(1000, 13, -4.0, -0.25).iter().map(|&v| v as f32));
    y.extend(
        sample(1000, 14, -6.0, 6.0)
            .iter()
            .map(|&v| v.round() as f32),
    );
    let sp = [
        (0.0, -1.0),
        (NAN, 0.0),
        (1.0, NAN),
        (NAN, 1.5),
        (0.0, 2.5),
        (INF, -1.0),
        (2.0, INF),
        (-0.0, -3.0),
        (-0.0, 3.0),
        (-INF, 3.0),
        (-INF, -2.0),
        (-1.0, INF),
        (0.5, -INF),
        (-2.0, 0.5),
        (10.0, 38.0),
        (2.0, -149.0),
        (2.0, 128.0),
        (1.0000001, 3e7),
        (1e-3, 12.5),
        (3.0, 80.5),
        (-2.0, 31.0),
        (0.99, -1e4),
    ];
    for (a, b) in sp {
        x.push(a as f32);
        y.push(b as f32);
    }
    let got = run_binary(g, BinaryOp::Pow, &x, &y);
    let bad: Vec<String> = x
        .iter()
        .zip(&y)
        .zip(got.f32())
        .filter_map(|((&a, &b), &r)| {
            let w = (a as f64).powf(b as f64);
            let w = if w.is_finite() && (w as f32).is_infinite() {
                w as f32 as f64
            } else {
                w
            };
            (!close_rel(r, w, 2e-6, 1e-6)).then(|| format!("pow({a:e}, {b:e}) = {r:e}, want {w:e}"))
        })
        .take(8)
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // atan2 in all quadrants with signed zeros and infinities (signs of zero/pi results exact).
    let mut ya: Vec<f32> = sample(3000, 15, -10.0, 10.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut xa: Vec<f32> = sample(3000, 16, -10.0, 10.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let sy = [
        0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, NAN, INF, -INF, 1.0, -1.0, 0.0, -0.0, 1e-30, 1e30,
    ];
    let sx = [
        1.0, 1.0, -1.0, -1.0, 0.0, 0.0, INF, 1.0, -INF, 3.0, -INF, INF, -0.0, 0.0, 1e30, 1e-30,
    ];
    ya.splice(0..0, sy.iter().map(|&v| v as f32));
    xa.splice(0..0, sx.iter().map(|&v| v as f32));
    let got = run_binary(g, BinaryOp::Atan2, &ya, &xa);
    for ((&a, &b), &r) in ya.iter().zip(&xa).zip(got.f32()) {
        let w = (a as f64).atan2(b as f64);
        assert!(
            close_rel(r, w, 2e-6, 1e-6),
            "atan2({a}, {b}) = {r}, want {w}"
        );
        assert!(
            w.is_nan() || r.is_sign_negative() == w.is_sign_negative(),
            "atan2({a}, {b}) sign"
        );
    }
    // rem (C fmodf, exact) and floored mod, including huge quotients and subnormal divisors.
    let mut a: Vec<f32> = sample(3000, 17, -1e6, 1e6)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut b: Vec<f32> = sample(3000, 18, -10.0, 10.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let sa = [
        5.5, -5.5, 3e38, 1e-40, 7.0, -0.0, 1.0, INF, NAN, 1.0, 6.0, -6.0,
    ];
    let sb = [
        2.0, 2.0, 1.1, 3e-41, -7.0, 3.0, 0.0, 1.0, 1.0, NAN, INF, 4.0,
    ];
    a.extend(sa.iter().map(|&v| v as f32));
    b.extend(sb.iter().map(|&v| v as f32));
    let rem = run_binary(g, BinaryOp::Rem, &a, &b);
    let md = run_binary(g, BinaryOp::Mod, &a, &b);
    for i in 0..a.len() {
        let w = a[i] % b[i];
        let wm = if w != 0.0 && ((w < 0.0) != (b[i] < 0.0)) {
            w + b[i]
        } else {
            w
        };
        let r = rem.f32()[i];
        let m = md.f32()[i];
        assert!(
            r.to_bits() == w.to_bits() || (r.is_nan() && w.is_nan()),
            "rem({}, {}) = {r:e}, want {w:e}",
            a[i],
            b[i]
        );
        assert!(
            m.to_bits() == wm.to_bits() || (m.is_nan() && wm.is_nan()),
            "mod({}, {}) = {m:e}, want {wm:e}",
            a[i],
            b[i]
        );
    }
    // NaN-propagating min/max (and -0/+0 kept in operand order).
    let a = [1.0, NAN, 2.0, -0.0, 0.0, -INF];
    let b = [NAN, 1.0, 3.0, 0.0, -0.0, 5.0];
    let a: Vec<f32> = a.iter().map(|&v| v as f32).collect();
    let b: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let mn = run_binary(g, BinaryOp::Min, &a, &b);
    let mx = run_binary(g, BinaryOp::Max, &a, &b);
    for i in 0..a.len() {
        let (x, y) = (a[i], b[i]);
        let wmin = if x.is_nan() || y.is_nan() {
            f32::NAN
        } else if y < x {
            y
        } else {
            x
        };
        let wmax = if x.is_nan() || y.is_nan() {
            f32::NAN
        } else if y > x {
            y
        } else {
            x
        };
        let (gmin, gmax) = (mn.f32()[i], mx.f32()[i]);
        assert!(
            gmin.to_bits() == wmin.to_bits() || (gmin.is_nan() && wmin.is_nan()),
            "min({x}, {y}) = {gmin}"
        );
        assert!(
            gmax.to_bits() == wmax.to_bits() || (gmax.is_nan() && wmax.is_nan()),
            "max({x}, {y}) = {gmax}"
        );
    }
}

#[test]
fn casts_follow_rust_as() {
    let Some(g) = wgpu_device() else { return };
    let fs: Vec<f32> = [
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        3e9,
        5e9,
        2147483520.0,
        -2147483648.0,
        4294967040.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-40,
        0.99999994,
    ]
    .to_vec();
    assert_eq!(
        cast(g, DType::I32, &TypedVec::F32(fs.clone())).i32(),
        &fs.iter().map(|&x| x as i32).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        cast(g, DType::U32, &TypedVec::F32(fs.clone())).u32(),
        &fs.iter().map(|&x| x as u32).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        cast(g, DType::Bool, &TypedVec::F32(fs.clone())).words(),
        &fs.iter().map(|&x| (x != 0.0) as u32).collect::<Vec<_>>()[..]
    );
    // Integers to f32 round to nearest even, ties included.
    let mut us: Vec<u32> = vec![
        0, 1, 16777216, 16777217, 16777218, 16777219, 33554434, 33554435, 2147483647, 2147483648,
        4294967295, 4294967168, 4294967169, 4294967040, 123456789,
    ];
    us.extend(
        sample(2000, 19, 0.0, 4294967295.0)
            .iter()
            .map(|&v| v as u32),
    );
    for (u, f) in us
        .iter()
        .zip(cast(g, DType::F32, &TypedVec::U32(us.clone())).f32())
    {
        assert_eq!(f.to_bits(), (*u as f32).to_bits(), "{u} as f32");
    }
    let is: Vec<i32> = us.iter().map(|&u| u as i32).collect();
    for (i, f) in is
        .iter()
        .zip(cast(g, DType::F32, &TypedVec::I32(is.clone())).f32())
    {
        assert_eq!(f.to_bits(), (*i as f32).to_bits(), "{i} as f32");
    }
    assert_eq!(
        cast(g, DType::U32, &TypedVec::I32(is.clone())).u32(),
        &us[..]
    );
}

/// `input` cast to `to` by a one-instruction kernel on the adapter.
fn cast(g: &Gpu, to: DType, input: &TypedVec) -> TypedVec {
    let (from, n) = (input.dtype(), input.len());
    let (mut out, _) = g.run(&cast_kernel(from, to, n), &[input], &[]).into_parts();
    out.remove(0)
}

#[test]
fn comparisons_follow_ieee() {
    let Some(g) = wgpu_device() else { return };
    let vals = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let (a, b): (Vec<f32>, Vec<f32>) = vals
        .iter()
        .flat_map(|&x| vals.iter().map(move |&y| (x, y)))
        .unzip();
    let ops: [BinaryCase<f32, bool>; 6] = [
        (BinaryOp::Lt, |x, y| x < y),
        (BinaryOp::Le, |x, y| x <= y),
        (BinaryOp::Gt, |x, y| x > y),
        (BinaryOp::Ge, |x, y| x >= y),
        (BinaryOp::Eq, |x, y| x == y),
        (BinaryOp::Ne, |x, y| x != y),
    ];
    for (op, f) in ops {
        let got = run_binary(g, op, &a, &b);
        for i in 0..a.len() {
            assert_eq!(
                got.words()[i],
                f(a[i], b[i]) as u32,
                "{}({}, {})",
                op.name(),
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn integer_and_bool_ops_wrap_like_rust() {
    let Some(g) = wgpu_device() else { return };
    let special = [
        0i32,
        1,
        -1,
        2,
        -2,
        7,
        -7,
        i32::MAX,
        i32::MIN,
        1 << 16,
        -(1 << 16) - 3,
    ];
    let (mut a, mut b): (Vec<i32>, Vec<i32>) = special
        .iter()
        .flat_map(|&x| special.iter().map(move |&y| (x, y)))
        .unzip();
    a.extend(sample(500, 20, -3e9, 3e9).iter().map(|&v| v as i64 as i32));
    b.extend(sample(500, 21, -100.0, 100.0).iter().map(|&v| v as i32));
    // Zero divisors fault (tested elsewhere); here they are replaced.
    let b: Vec<i32> = b.iter().map(|&v| if v == 0 { 3 } else { v }).collect();
    let ops: [BinaryCase<i32, i32>; 10] = [
        (BinaryOp::Add, i32::wrapping_add),
        (BinaryOp::Sub, i32::wrapping_sub),
        (BinaryOp::Mul, i32::wrapping_mul),
        (BinaryOp::Div, i32::wrapping_div),
        (BinaryOp::Rem, i32::wrapping_rem),
        (BinaryOp::Mod, |x, y| {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) {
                r.wrapping_add(y)
            } else {
                r
            }
        }),
        (BinaryOp::Min, std::cmp::min),
        (BinaryOp::Max, std::cmp::max),
        (BinaryOp::And, |x, y| x & y),
        (BinaryOp::Xor, |x, y| x ^ y),
    ];
    let ua: Vec<u32> = a.iter().map(|&v| v as u32).collect();
    let ub: Vec<u32> = b.iter().map(|&v| v as u32).collect();
    for (op, f) in ops {
        let k = binary_kernel(op, DType::I32, a.len());
        let (out, fault) = g
            .run(
                &k,
                &[&TypedVec::I32(a.clone()), &TypedVec::I32(b.clone())],
                &[],
            )
            .into_parts();
        assert_eq!(fault, 0);
        for i in 0..a.len() {
            assert_eq!(
                out[0].i32()[i],
                f(a[i], b[i]),
                "{} i32 ({}, {})",
                op.name(),
                a[i],
                b[i]
            );
        }
        let k = binary_kernel(op, DType::U32, a.len());
        let (out, _) = g
            .run(
                &k,
                &[&TypedVec::U32(ua.clone()), &TypedVec::U32(ub.clone())],
                &[],
            )
            .into_parts();
        for i in 0..a.len() {
            let (x, y) = (ua[i], ub[i]);
            let w = match op {
                BinaryOp::Add => x.wrapping_add(y),
                BinaryOp::Sub => x.wrapping_sub(y),
                BinaryOp::Mul => x.wrapping_mul(y),
                BinaryOp::Div => x / y,
                BinaryOp::Rem | BinaryOp::Mod => x % y,
                BinaryOp::Min => x.min(y),
                BinaryOp::Max => x.max(y),
                BinaryOp::And => x & y,
                _ => x ^ y,
            };
            assert_eq!(out[0].u32()[i], w, "{} u32 ({x}, {y})", op.name());
        }
    }
    let unary: [UnaryCase<i32>; 4] = [
        (UnaryOp::Neg, i32::wrapping_neg),
        (UnaryOp::Abs, i32::wrapping_abs),
        (UnaryOp::Sign, i32::signum),
        (UnaryOp::Not, |x| !x),
    ];
    for (op, f) in unary {
        let (out, _) = g
            .run(
                &unary_kernel(op, DType::I32, a.len()),
                &[&TypedVec::I32(a.clone())],
                &[],
            )
            .into_parts();
        for (&x, &y) in a.iter().zip(out[0].i32()) {
            assert_eq!(y, f(x), "{} i32 {x}", op.name());
        }
    }
    let bools = [0u32, 0, 1, 1];
    let other = [0u32, 1, 0, 1];
    let bops: [BinaryCase<bool, bool>; 7] = [
        (BinaryOp::And, |x, y| x & y),
        (BinaryOp::Or, |x, y| x | y),
        (BinaryOp::Xor, |x, y| x ^ y),
        (BinaryOp::Nand, |x, y| !(x & y)),
        (BinaryOp::Nor, |x, y| !(x | y)),
        (BinaryOp::Eq, |x, y| x == y),
        (BinaryOp::Ne, |x, y| x != y),
    ];
    for (op, f) in bops {
        let k = binary_kernel(op, DType::Bool, 4);
        let (out, _) = g
            .run(&k, &[&bools_of(&bools), &bools_of(&other)], &[])
            .into_parts();
        for i in 0..4 {
            assert_eq!(
                out[0].words()[i],
                f(bools[i] == 1, other[i] == 1) as u32,
                "{} bool",
                op.name()
            );
        }
    }
}

/// The tiled transpose (`intrinsics::wgsl::render_transpose`) of every stored element type
/// validates, and run with edges, batches and an input offset it moves every element (bools are
/// u32 words, so u32 data stands for them), also with 3 work-groups (the grid-stride loop): the
/// shared [`transpose_matches`].
#[test]
fn transpose_validates_and_matches_a_plain_loop() {
    use arrayflow::intrinsics::transpose::TransposeShape;
    let shape = |batch, rows, cols, dtype, offset| TransposeShape {
        batch,
        rows,
        cols,
        dtype,
        offset,
    };
    for d in TYPES {
        let plan = intrinsics::render_transpose(&shape(2, 40, 33, d, 3), target()).unwrap();
        validate(&plan, &format!("transpose {d}"));
    }
    assert!(intrinsics::render_transpose(&shape(1, 2, 2, DType::F64, 0), target()).is_err());
    assert!(
        intrinsics::render_transpose(&shape(2, 1 << 15, 1 << 15, DType::F32, 0), target()).is_err()
    );
    let Some(g) = wgpu_device() else { return };
    transpose_matches(g, &[DType::U32]);
}

/// Folded maps (roll, pad's modes, nested) validate and match a walk: the shared
/// [`folded_maps_match`].
#[test]
fn folded_maps_validate_and_match_a_walk() {
    use arrayflow::ir::FoldMode;
    validate_kernel(
        &map_kernel(
            &[9, 11],
            folded(&[3, 4], &[-5, 7], &[FoldMode::Reflect, FoldMode::Symmetric]),
        ),
        "folded",
    );
    let Some(g) = wgpu_device() else { return };
    folded_maps_match(g);
}

// ---------------------------------------------------------------------------------------------
// Correct rounding of f32 *, +, -, / and sqrt (tests/exact_f32.rs proves the algorithms).

/// f32 values worth dividing and rooting: random bit patterns, [1, 4) densely, specials.
fn hard_f32s(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 32) as u32
    };
    let mut v: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        2.0,
        3.0,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -1.0,
    ];
    while v.len() < n {
        let r = next();
        v.push(match v.len() % 3 {
            0 => f32::from_bits(r),
            1 => f32::from_bits(0x3f80_0000 + r % 0x0100_0000),
            _ => f32::from_bits((r & 0x807f_ffff) | ((next() % 60 + 97) << 23)),
        });
    }
    v
}

#[test]
fn sqrt_and_division_are_correctly_rounded() {
    let Some(g) = wgpu_device() else { return };
    let n = 1 << 18;
    let xs = hard_f32s(n, 1);
    let ys = hard_f32s(n, 2);
    let got = run_unary(g, UnaryOp::Sqrt, &xs);
    let want: Vec<f32> = xs.iter().map(|x| x.sqrt()).collect();
    let m = bit_misses(&[&xs], got.f32(), &want);
    assert!(m.is_empty(), "sqrt: {m:#?}");
    let got = run_unary(g, UnaryOp::Rsqrt, &xs);
    let want: Vec<f32> = xs.iter().map(|x| 1.0 / x.sqrt()).collect();
    let m = bit_misses(&[&xs], got.f32(), &want);
    assert!(m.is_empty(), "rsqrt: {m:#?}");
    let got = run_binary(g, BinaryOp::Div, &xs, &ys);
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x / y).collect();
    let m = bit_misses(&[&xs, &ys], got.f32(), &want);
    assert!(m.is_empty(), "div: {m:#?}");
    for (op, f) in [
        (BinaryOp::Mul, (|x, y| x * y) as fn(f32, f32) -> f32),
        (BinaryOp::Add, |x, y| x + y),
        (BinaryOp::Sub, |x, y| x - y),
    ] {
        let got = run_binary(g, op, &xs, &ys);
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(&x, &y)| f(x, y)).collect();
        let m = bit_misses(&[&xs, &ys], got.f32(), &want);
        assert!(m.is_empty(), "{op:?}: {m:#?}");
    }
}

/// `((a * b + s).sqrt() - b) * s`, `a * b - c * s`, `(a / b) * c + a` and `a * b + c`, summed:
/// products feeding sums are rounded on their own, as on the CPU.
#[test]
fn arithmetic_chains_are_bit_exact() {
    let Some(g) = wgpu_device() else { return };
    let n = 50_000;
    let a: Vec<f32> = sample(n, 3, 0.0, 10.0).iter().map(|&x| x as f32).collect();
    let b: Vec<f32> = sample(n, 4, 0.1, 3.0).iter().map(|&x| x as f32).collect();
    let c: Vec<f32> = sample(n, 5, -5.0, 5.0).iter().map(|&x| x as f32).collect();
    let s = 1.3f32;
    let mut k = Kb::new(&[n]);
    let (ra, rb, rc) = (
        k.load(DType::F32, IndexMap::Contiguous),
        k.load(DType::F32, IndexMap::Contiguous),
        k.load(DType::F32, IndexMap::Contiguous),
    );
    let rs = k.konst(DType::F32);
    let ab = k.binary(BinaryOp::Mul, ra, rb);
    let t = k.binary(BinaryOp::Add, ab, rs);
    let t = k.unary(UnaryOp::Sqrt, t);
    let t = k.binary(BinaryOp::Sub, t, rb);
    let r0 = k.binary(BinaryOp::Mul, t, rs);
    let cs = k.binary(BinaryOp::Mul, rc, rs);
    let r1 = k.binary(BinaryOp::Sub, ab, cs);
    let q = k.binary(BinaryOp::Div, ra, rb);
    let qc = k.binary(BinaryOp::Mul, q, rc);
    let r2 = k.binary(BinaryOp::Add, qc, ra);
    let r3 = k.binary(BinaryOp::Add, ab, rc);
    k.store(r0);
    k.store(r1);
    k.store(r2);
    k.store(r3);
    let k = k.build();
    let plan = validate_kernel(&k, "exact chain");
    assert!(
        plan.source.contains("af_zero = gid.z;") || plan.source.contains("af_zero = wid.z;"),
        "no af_zero set in\n{}",
        kernel_tail(&plan.source)
    );
    let ins = [
        &TypedVec::F32(a.clone()),
        &TypedVec::F32(b.clone()),
        &TypedVec::F32(c.clone()),
    ];
    let (out, _) = g.run(&k, &ins, &[s.to_bits() as u64]).into_parts();
    let wants: [Vec<f32>; 4] = [
        (0..n)
            .map(|j| ((a[j] * b[j] + s).sqrt() - b[j]) * s)
            .collect(),
        (0..n).map(|j| a[j] * b[j] - c[j] * s).collect(),
        (0..n).map(|j| (a[j] / b[j]) * c[j] + a[j]).collect(),
        (0..n).map(|j| a[j] * b[j] + c[j]).collect(),
    ];
    for (i, want) in wants.iter().enumerate() {
        let m = bit_misses(&[&a, &b, &c], out[i].f32(), want);
        assert!(m.is_empty(), "output {i}: {m:#?}");
    }
}

/// Every entry point sets the library's opaque zero as its first statement (from a builtin id
/// the driver cannot know), and every program declares it once.
#[test]
fn entry_points_set_the_opaque_zero() {
    let kernels = [
        ("mul", binary_kernel(BinaryOp::Mul, DType::F32, 1000)),
        (
            "prod",
            reduce_kernel(ReduceOp::Prod, DType::F32, 2, 1 << 20),
        ),
        (
            "prod rows",
            reduce_kernel(ReduceOp::Prod, DType::F32, 1000, 7),
        ),
        ("sqrt", unary_kernel(UnaryOp::Sqrt, DType::F32, 1000)),
        ("add", binary_kernel(BinaryOp::Add, DType::F32, 1000)),
        ("mul i32", binary_kernel(BinaryOp::Mul, DType::I32, 1000)),
        ("strided", map_kernel(&[4, 5], strided(0, &[1, 4]))),
        ("column sum", {
            let (mut k, x) = axis_kernel(DType::F32, &[1000, 257], &[0]);
            k.reduce_tail(ReduceOp::Sum, x, 1);
            k.build()
        }),
    ];
    for (what, k) in kernels {
        let plan = validate_kernel(&k, what);
        assert_eq!(
            plan.source.matches("var<private> af_zero: u32;").count(),
            1,
            "{what}: af_zero declared once"
        );
        let lines: Vec<&str> = plan.source.lines().collect();
        let mut entries = 0;
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("@compute") {
                entries += 1;
                let first = lines[i + 2].trim_start();
                assert!(
                    first == "af_zero = gid.z;" || first == "af_zero = wid.z;",
                    "{what}: entry `{}` starts with `{first}`",
                    lines[i + 1]
                );
            }
        }
        assert_eq!(entries, plan.passes.len(), "{what}");
    }
}

/// On a device whose `fma` rounds once the exact library's remainder is that `fma`
/// (`af_residual_fused` under `af_residual`'s name, without Dekker's splitting); elsewhere it is
/// Dekker's product. Both programs validate; the run tests above take the form the test
/// adapter's probe picks (CI also runs them with `ARRAYFLOW_WGPU_FMA=0`).
#[test]
fn remainders_take_the_fused_fma_where_the_device_has_one() {
    let k = binary_kernel(BinaryOp::Div, DType::F32, 1000);
    for fused_fma in [false, true] {
        let t = Target {
            fused_fma,
            ..target()
        };
        let plan = wgsl::render(&k, t).unwrap();
        validate(&plan, &format!("div, fused fma {fused_fma}"));
        let s = &plan.source;
        assert_eq!(s.matches("fn af_residual(").count(), 1, "{s}");
        assert!(!s.contains("af_residual_fused"), "{s}");
        assert_eq!(s.contains("return fma(-a, b, x);"), fused_fma, "{s}");
        assert_eq!(s.contains("fn af_mask12("), !fused_fma, "{s}");
    }
}

/// `Complex<f32>` (the library's `c64`, a `vec2<f32>`): the library has every op of the tables
/// that takes it and the casts to and from every type; each validates; one kernel computing them
/// all runs on the adapter and agrees with the CPU tile VM per component (within
/// `DEVICE_ULPS` of the component or of the modulus). `Complex<f64>` is refused (no f64).
#[test]
fn complex_ops_validate_and_match_the_cpu() {
    let c = DType::C64;
    let mut missing = Vec::new();
    let unary: Vec<UnaryOp> = UnaryOp::ALL
        .iter()
        .copied()
        .filter(|op| op.out_dtype(c).is_some())
        .collect();
    let binary: Vec<BinaryOp> = BinaryOp::ALL
        .iter()
        .copied()
        .filter(|op| op.out_dtype(c).is_some())
        .collect();
    assert!(unary.len() >= 9 && binary.len() >= 6);
    let names = unary
        .iter()
        .map(|op| op.name())
        .chain(binary.iter().map(|op| op.name()));
    for name in names {
        if !has_fn(&format!("af_{name}_c64")) {
            missing.push(format!("af_{name}_c64"));
        }
    }
    for d in TYPES.into_iter().chain([c]) {
        for f in [
            format!("af_cast_{}_c64", tn(d)),
            format!("af_cast_c64_{}", tn(d)),
        ] {
            if !has_fn(&f) {
                missing.push(f);
            }
        }
        validate_kernel(&cast_kernel(c, d, 10), &format!("cast c64 -> {d}"));
        validate_kernel(&cast_kernel(d, c, 10), &format!("cast {d} -> c64"));
    }
    assert!(
        missing.is_empty(),
        "missing from arrayflow.wgsl: {missing:?}"
    );
    for &op in &unary {
        validate_kernel(&unary_kernel(op, c, 100), &format!("{} c64", op.name()));
    }
    for &op in &binary {
        validate_kernel(&binary_kernel(op, c, 100), &format!("{} c64", op.name()));
    }
    assert!(wgsl::render(&unary_kernel(UnaryOp::Exp, DType::C128, 4), target()).is_err());

    let Some(g) = wgpu_device() else { return };
    let n = 3000;
    let mut k = Kb::new(&[n]);
    let (x, y) = (
        k.load(c, IndexMap::Contiguous),
        k.load(c, IndexMap::Contiguous),
    );
    for &op in &unary {
        let r = k.unary(op, x);
        k.store(r);
    }
    for &op in &binary {
        let r = k.binary(op, x, y);
        k.store(r);
    }
    // complex(re, im) from two reals, and a real cast to complex.
    let (re, im) = (k.unary(UnaryOp::Im, x), k.unary(UnaryOp::Re, y));
    let z = k.binary(BinaryOp::Complex, re, im);
    k.store(z);
    let w = k.cast(c, re);
    k.store(w);
    let k = k.build();
    validate_kernel(&k, "every c64 op");
    let (a, b) = (data(c, n, 1), data(c, n, 2));
    let want = cpu(&k, &[&a, &b], &[]).unwrap();
    let (got, fault) = g.run(&k, &[&a, &b], &[]).into_parts();
    assert_eq!(fault, 0);
    assert_outputs("c64 ops", &got, &want, 32);
}
