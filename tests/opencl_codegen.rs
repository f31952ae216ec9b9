//! OpenCL code generation (`proggen::codegen::opencl`, `intrinsics::opencl` and the primitive
//! library `primitives/opencl/arrayflow.cl`): the library covers the op tables; every rendered
//! program builds on the installed OpenCL platform (PoCL); rendered plans run there agree with the
//! CPU tile VM and with plain loops (bit for bit where the CPU promises it: integers, casts,
//! Philox uniforms). Programs build with `-cl-fp32-correctly-rounded-divide-sqrt` where the device
//! offers it (f32 division and square root then round as on the CPU). Without an OpenCL platform
//! the device tests print a skip message, unless `ARRAYFLOW_REQUIRE_BACKENDS` names `opencl`, where
//! they fail.
//!
//! The device, running plans, the kernel builders, the CPU oracles and the cases the WGSL tests
//! share are the conformance harness `tests/common/conformance.rs`; this file keeps the OpenCL
//! library's checks and the OpenCL cases.

use arrayflow::exec::TypedVec;
use arrayflow::ir::{
    BinaryOp, DType, FoldMode, GenKind, Intrinsic, RandomDist, ReduceOp, RngAlgorithm, Shape,
    UnaryOp,
};
use arrayflow::proggen::codegen::c::ctype;
use arrayflow::proggen::codegen::gpu::Target;
use arrayflow::proggen::codegen::opencl::{self, LIBRARY};
use arrayflow::proggen::kernel::{Fold, FoldedDim, IndexMap, Instr, ParamKind};
use arrayflow::proggen::sequence::Kernel;
use smallvec::smallvec;

#[path = "common/conformance.rs"]
mod conformance;

use conformance::*;

const FP64: Target = CL_FP64;
const FP32: Target = CL_FP32;

// ---------------------------------------------------------------------------------------------
// (a) The primitive library against the op tables.

/// The library's complex section as the preprocessor expands it: the body of `AF_COMPLEX(C, F,
/// V, Z)` with `C` and `F` substituted, once per instantiation (`c64`/`f32`, `c128`/`f64`).
fn complex_expansions() -> String {
    let start = LIBRARY
        .find("#define AF_COMPLEX(C, F, V, Z)")
        .expect("the AF_COMPLEX macro");
    let body: String = LIBRARY[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("typedef") && !l.starts_with("AF_COMPLEX("))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    for (c, f) in [("c64", "f32"), ("c128", "f64")] {
        assert!(LIBRARY.contains(&format!("AF_COMPLEX({c}, {f}, ")));
        out.push_str(
            &body
                .replace("##C##", c)
                .replace("##F##", f)
                .replace("##C", c)
                .replace("##F", f)
                .replace("(C ", &format!("({c} "))
                .replace("inline C ", &format!("inline {c} ")),
        );
    }
    out
}

/// Every op of the tables, for every element type it accepts, has its `af_<op>_<type>` function,
/// as do the casts, parameter decoders and random conversions; f64 appears only under AF_FP64.
#[test]
fn library_defines_every_table_op() {
    let complex = complex_expansions();
    let defines = |f: &str| {
        let call = format!(" {f}(");
        LIBRARY.contains(&call) || complex.contains(&call)
    };
    let mut missing = Vec::new();
    for d in ALL_TYPES {
        let t = ctype(d);
        for op in UnaryOp::ALL {
            if gpu_renders(op.out_dtype(d)) && !defines(&format!("af_{}_{t}", op.name())) {
                missing.push(format!("af_{}_{t}", op.name()));
            }
        }
        for op in BinaryOp::ALL {
            if gpu_renders(op.out_dtype(d)) && !defines(&format!("af_{}_{t}", op.name())) {
                missing.push(format!("af_{}_{t}", op.name()));
            }
        }
        // Complex values are never kernel parameters (a complex constant is two real ones).
        let mut more = vec![format!("af_index_{t}")];
        if !d.is_complex() {
            more.push(format!("af_bits_{t}"));
        }
        more.extend(
            ALL_TYPES
                .iter()
                .map(|&to| format!("af_cast_{t}_{}", ctype(to))),
        );
        if d.is_float() {
            more.extend([format!("af_uniform_{t}"), format!("af_normal_{t}")]);
        }
        if d.is_numeric() {
            more.extend([
                format!("af_argmax_takes_{t}"),
                format!("af_argmin_takes_{t}"),
            ]);
        }
        missing.extend(more.into_iter().filter(|f| !defines(f)));
    }
    assert!(missing.is_empty(), "the OpenCL library lacks {missing:?}");

    let (f32_part, f64_part) = LIBRARY.split_once("#ifdef AF_FP64").unwrap();
    let code: String = f32_part
        .split("/*")
        .map(|chunk| chunk.split_once("*/").map_or(chunk, |(_, code)| code))
        .collect();
    assert!(!code.contains("f64") && !code.contains("double"));
    assert!(
        f64_part.trim_end().ends_with("#endif")
            && !f64_part[..f64_part.len() - 7].contains("#endif")
    );
}

// ---------------------------------------------------------------------------------------------
// (b) + (c): every op of every type builds and agrees with the CPU tile VM.

/// One kernel per element type computing every unary and binary op the tables accept for it,
/// each stored to its own output; compared with the CPU tile VM.
#[test]
fn every_op_matches_the_cpu() {
    let Some(cl) = opencl_device("every_op_matches_the_cpu") else {
        return;
    };
    let n = 3000;
    for d in ALL_TYPES {
        if matches!(d, DType::F64 | DType::C128) && !cl.fp64 {
            continue;
        }
        let mut k = Kb::new(&[n]);
        let (x, y) = (
            k.load(d, IndexMap::Contiguous),
            k.load(d, IndexMap::Contiguous),
        );
        for &op in UnaryOp::ALL
            .iter()
            .filter(|op| gpu_renders(op.out_dtype(d)))
        {
            let r = k.unary(op, x);
            k.store(r);
        }
        for &op in BinaryOp::ALL
            .iter()
            .filter(|op| gpu_renders(op.out_dtype(d)))
        {
            let r = k.binary(op, x, y);
            k.store(r);
        }
        let (a, b) = (data(d, n, 1), divisors(d, n, 2));
        let want = cpu(&k.0, &[&a, &b], &[]).unwrap();
        for target in cl.targets(d) {
            let got = cl.run_as(&k.0, target, &[&a, &b], &[]);
            assert_eq!(got.fault, 0);
            assert_outputs(&format!("{d} ops, {target:?}"), &got.outputs, &want, 16);
        }
    }
}

/// Casts between every pair of element types (saturating float to integer, NaN to 0) agree with
/// the CPU bit for bit.
#[test]
fn casts_match_the_cpu() {
    let Some(cl) = opencl_device("casts_match_the_cpu") else {
        return;
    };
    for from in ALL_TYPES {
        if matches!(from, DType::F64 | DType::C128) && !cl.fp64 {
            continue;
        }
        for target in cl.targets(from) {
            let mut k = Kb::new(&[500]);
            let x = k.load(from, IndexMap::Contiguous);
            for to in ALL_TYPES
                .into_iter()
                .filter(|&t| target.fp64 || !matches!(t, DType::F64 | DType::C128))
            {
                let r = k.cast(to, x);
                k.store(r);
            }
            let a = data(from, 500, 3);
            let want = cpu(&k.0, &[&a], &[]).unwrap();
            let got = cl.run_as(&k.0, target, &[&a], &[]);
            assert_outputs(
                &format!("casts from {from}, {target:?}"),
                &got.outputs,
                &want,
                0,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Rendered plans against plain loops.

/// `out0 = x > c ? sqrt(x * 2 + 1) : -x` with `x` read through a transposing strided map and a
/// row broadcast added, `out1 = (i32)out0` — against a loop.
#[test]
fn elementwise_chain() {
    let Some(cl) = opencl_device("elementwise_chain") else {
        return;
    };
    let (rows, cols) = (37, 300);
    let mut k = Kb::new(&[rows, cols]);
    // Input 0 is stored [cols, rows]: element (r, c) at c * rows + r.
    let x = k.load(
        DType::F32,
        IndexMap::Strided {
            offset: 0,
            strides: smallvec![1, rows as isize],
        },
    );
    let row = k.load(
        DType::F32,
        IndexMap::Strided {
            offset: 0,
            strides: smallvec![0, 1],
        },
    );
    let x = k.binary(BinaryOp::Add, x, row);
    let (c, two, one) = (
        k.konst(DType::F32),
        k.konst(DType::F32),
        k.konst(DType::F32),
    );
    let t = k.binary(BinaryOp::Mul, x, two);
    let t = k.binary(BinaryOp::Add, t, one);
    let t = k.unary(UnaryOp::Sqrt, t);
    let neg = k.unary(UnaryOp::Neg, x);
    let cond = k.binary(BinaryOp::Gt, x, c);
    let sel = k.push(DType::F32, |dst| Instr::Select {
        dst,
        cond,
        a: t,
        b: neg,
    });
    k.store(sel);
    let i = k.cast(DType::I32, sel);
    k.store(i);
    let TypedVec::F32(xs) = data(DType::F32, rows * cols, 4) else {
        unreachable!()
    };
    let xs: Vec<f32> = xs.iter().map(|v| v.clamp(-4.0, 4.0)).collect();
    let rv: Vec<f32> = (0..cols).map(|c| c as f32 * 0.01).collect();
    let params = [0.5f32, 2.0, 1.0].map(|v| v.to_bits() as u64);
    let ran = cl.run(
        &k.0,
        &[&TypedVec::F32(xs.clone()), &TypedVec::F32(rv.clone())],
        &params,
    );
    let (mut want0, mut want1) = (Vec::new(), Vec::new());
    for r in 0..rows {
        for c in 0..cols {
            let x = xs[c * rows + r] + rv[c];
            let v = if x > 0.5 { (x * 2.0 + 1.0).sqrt() } else { -x };
            want0.push(v);
            want1.push(v as i32);
        }
    }
    assert_outputs(
        "chain",
        &ran.outputs,
        &[TypedVec::F32(want0), TypedVec::I32(want1)],
        0,
    );
}

/// Periodic maps (tile), and the iota, identity and linspace generators, against the CPU.
#[test]
fn periodic_maps_and_generators_match_the_cpu() {
    let Some(cl) = opencl_device("periodic_maps_and_generators_match_the_cpu") else {
        return;
    };
    let (rows, cols) = (6, 10);
    let mut k = Kb::new(&[rows, cols]);
    // out0[r, c] = in[(r - 1) mod 3, (c + 2) mod 4] of a [3, 4] input.
    let t = k.load(
        DType::I32,
        IndexMap::Folded {
            dims: vec![
                FoldedDim {
                    offset: -1,
                    coef: smallvec![1, 0],
                    folds: smallvec![Fold::new(FoldMode::Wrap, 3)],
                    stride: 4,
                },
                FoldedDim {
                    offset: 2,
                    coef: smallvec![0, 1],
                    folds: smallvec![Fold::new(FoldMode::Wrap, 4)],
                    stride: 1,
                },
            ],
        },
    );
    k.store(t);
    let gens = [
        (GenKind::Iota { axis: 1 }, DType::F32, vec![rows, cols]),
        (GenKind::Iota { axis: 0 }, DType::I32, vec![rows, cols]),
        (GenKind::Identity, DType::Bool, vec![rows, cols]),
        (
            GenKind::Linspace {
                start: -1.0,
                step: 0.1,
                end: 5.0,
                n: rows * cols,
            },
            DType::F32,
            vec![rows * cols],
        ),
    ];
    for (kind, d, shape) in gens {
        let map = if shape.len() == 1 {
            IndexMap::Contiguous
        } else {
            IndexMap::Strided {
                offset: 0,
                strides: smallvec![cols as isize, 1],
            }
        };
        let r = k.push(d, |dst| Instr::Gen {
            dst,
            kind,
            shape: Shape::from_slice(&shape),
            map,
        });
        k.store(r);
    }
    let a = TypedVec::I32((0..12).collect());
    let want = cpu(&k.0, &[&a], &[]).unwrap();
    for target in [FP64, FP32] {
        if target.fp64 && !cl.fp64 {
            continue;
        }
        let plan = opencl::render(&k.0, target).unwrap();
        let got = cl.run_plan(&plan, &[&a], &output_specs(&k.0), &[]);
        assert_outputs(&format!("maps, {target:?}"), &got.outputs, &want, 4);
    }
}

/// Reduction layouts: one result over many elements (chunked, final pass), a few results (chunked),
/// many results with C = 1, one thread per result (small extent) and an empty extent — a sum, an
/// element-wise store alongside, against loops.
#[test]
fn sum_reductions_in_every_layout() {
    let Some(cl) = opencl_device("sum_reductions_in_every_layout") else {
        return;
    };
    // (results, reduced extent, passes): chunked with a final pass; a work-group, a few threads or
    // one thread per result; an empty extent.
    let cases = [
        (1, 200_000, 2),
        (3, 50_000, 2),
        (3000, 3000, 1),
        (3000, 100, 1),
        (1000, 10, 1),
        (333, 3, 1),
        (5, 0, 1),
        (1, 1, 1),
    ];
    for (outer, inner, passes) in cases {
        let mut k = Kb::new(&[outer, inner]);
        let x = k.load(DType::F32, IndexMap::Contiguous);
        let sq = k.binary(BinaryOp::Mul, x, x);
        k.store(sq);
        k.reduce(ReduceOp::Sum, x);
        let plan = opencl::render(&k.0, FP32).unwrap();
        assert_eq!(
            plan.passes.len(),
            passes,
            "{outer} x {inner}: {:?}",
            plan.passes
        );
        let TypedVec::F32(xs) = data(DType::F32, outer * inner, 5) else {
            unreachable!()
        };
        let xs: Vec<f32> = xs
            .iter()
            .map(|v| {
                if v.is_finite() {
                    v.clamp(-4.0, 4.0)
                } else {
                    1.0
                }
            })
            .collect();
        let ran = cl.run_plan(
            &plan,
            &[&TypedVec::F32(xs.clone())],
            &output_specs(&k.0),
            &[],
        );
        let TypedVec::F32(sums) = &ran.outputs[1] else {
            unreachable!()
        };
        for o in 0..outer {
            let row = &xs[o * inner..(o + 1) * inner];
            let want: f64 = row.iter().map(|&v| v as f64).sum();
            let scale: f64 = row.iter().map(|&v| v.abs() as f64).sum::<f64>().max(1.0);
            assert!(
                (sums[o] as f64 - want).abs() <= 1e-5 * scale,
                "sum of {outer} x {inner}, result {o}: {} vs {want} (passes {:?})",
                sums[o],
                plan.passes
            );
        }
        let sq: Vec<f32> = xs.iter().map(|v| v * v).collect();
        assert_eq!(ran.outputs[0], TypedVec::F32(sq), "{outer} x {inner}");
    }
}

/// Every reduction op of every type it accepts, with NaNs and ties, in each layout, against the
/// CPU tile VM (integers, bools and argmax/argmin exactly).
#[test]
fn every_reduction_matches_the_cpu() {
    let Some(cl) = opencl_device("every_reduction_matches_the_cpu") else {
        return;
    };
    for (outer, inner) in [
        (1, 100_000),
        (2, 3000),
        (300, 2500),
        (700, 70),
        (300, 7),
        (4, 0),
    ] {
        for d in REAL_TYPES {
            if d == DType::F64 && !cl.fp64 {
                continue;
            }
            let mut k = Kb::new(&[outer, inner]);
            let x = k.load(d, IndexMap::Contiguous);
            for &op in ReduceOp::ALL
                .iter()
                .filter(|op| gpu_renders(op.out_dtype(d)))
            {
                k.reduce(op, x);
            }
            let a = reduction_data(d, outer, inner);
            let want = cpu(&k.0, &[&a], &[]).unwrap();
            for target in cl.targets(d) {
                let got = cl.run_as(&k.0, target, &[&a], &[]);
                assert_outputs(
                    &format!("{d} reductions of {outer} x {inner}, {target:?}"),
                    &got.outputs,
                    &want,
                    0,
                );
            }
        }
    }
}

/// Column reductions (`sum_axis(0)` and kin: a thread per result, chunked, with partials) and
/// their neighbours, every op and type, against the CPU tile VM and plain loops.
#[test]
fn column_reductions_match_the_cpu() {
    let Some(cl) = opencl_device("column_reductions_match_the_cpu") else {
        return;
    };
    column_reductions_match(cl, &REAL_TYPES);
}

/// Data for reductions: floats from {-1, -0.5, 0, 0.5, 1} (exact sums and products in any
/// order, many ties), with a NaN and infinities in the first row when there are several rows;
/// integers small except a few extremes (so sums and products wrap); random bools.
fn reduction_data(d: DType, outer: usize, inner: usize) -> TypedVec {
    let n = outer * inner;
    let mut r = lcg(13);
    // In the first row: NaNs in two threads' elements and in a later chunk (the first wins).
    let specials = |i: usize| match i {
        8 | 12 | 2500 if outer > 1 && inner > i => Some(f64::NAN),
        9 if outer > 1 && inner > 10 => Some(f64::INFINITY),
        _ => None,
    };
    let mut floats =
        (0..n).map(|i| specials(i).unwrap_or([-1.0, -0.5, 0.0, 0.5, 1.0][(r() % 5) as usize]));
    match data(d, n, 14) {
        TypedVec::F32(_) => TypedVec::F32(floats.by_ref().map(|x| x as f32).collect()),
        TypedVec::F64(_) => TypedVec::F64(floats.collect()),
        TypedVec::I32(v) => TypedVec::I32(
            v.iter()
                .enumerate()
                .map(|(i, x)| if i < 9 { *x } else { x % 50 })
                .collect(),
        ),
        v => v,
    }
}

/// Philox random numbers: uniforms bit-identical to `primitives::cpu`, normals within rounding,
/// through a contiguous and a strided stream map, with a counter crossing 2^32.
#[test]
fn random_streams_match_the_cpu_philox() {
    let Some(cl) = opencl_device("random_streams_match_the_cpu_philox") else {
        return;
    };
    let n = 4099;
    let mut k = Kb::new(&[n]);
    k.0.params = vec![ParamKind::RandomKey, ParamKind::RandomCounter];
    let dists = [
        (RandomDist::Uniform, DType::F32),
        (RandomDist::Uniform, DType::F64),
        (RandomDist::Normal, DType::F32),
        (RandomDist::Normal, DType::F64),
    ];
    for (dist, d) in dists {
        for map in [
            IndexMap::Contiguous,
            IndexMap::Strided {
                offset: 7,
                strides: smallvec![3],
            },
        ] {
            let r = k.push(d, |dst| Instr::Random {
                dst,
                alg: RngAlgorithm::Philox,
                dist,
                key_slot: 0,
                counter_slot: 1,
                range_slot: None,
                map,
            });
            k.store(r);
        }
    }
    let key = [0x1234_5678u32, 0x9abc_def0];
    let counter = (1u64 << 32) - 1000;
    let params = [key_param(key), counter];
    let ran = cl.run(&k.0, &[], &params);
    for (o, out) in ran.outputs.iter().enumerate() {
        let (dist, d) = dists[o / 2];
        let g = |i: usize| {
            if o % 2 == 0 {
                i as u64
            } else {
                7 + 3 * i as u64
            }
        };
        for i in 0..out.len() {
            let x = out.get(i).as_f64();
            let want = philox_reference(key, counter + g(i), dist, d);
            let f32 = d == DType::F32;
            if dist == RandomDist::Uniform {
                assert_eq!(x.to_bits(), want.to_bits(), "uniform {d} [{i}]");
            } else {
                assert!(
                    close_ulps(x, want, 8, if f32 { 1e-6 } else { 1e-14 }, f32),
                    "normal {d} [{i}]: {x} vs {want}"
                );
            }
        }
    }
}

/// Integer division by zero: the fault word names the instruction (1 + its index), the faulting
/// element is 0, the others are right; kernels that cannot fault have no fault word.
#[test]
fn integer_division_by_zero_faults() {
    let Some(cl) = opencl_device("integer_division_by_zero_faults") else {
        return;
    };
    for d in [DType::I32, DType::U32] {
        for op in [BinaryOp::Div, BinaryOp::Rem, BinaryOp::Mod] {
            let mut k = Kb::new(&[1000]);
            let (x, y) = (
                k.load(d, IndexMap::Contiguous),
                k.load(d, IndexMap::Contiguous),
            );
            let s = k.binary(BinaryOp::Add, x, y);
            let q = k.binary(op, s, y);
            k.store(q);
            let (a, b) = (data(d, 1000, 7), divisors(d, 1000, 8));
            // The dividing instruction is the fourth (loads, the sum, then it).
            division_faults(cl, &k.0, &[&a, &b], 1, &[500], &[4], &format!("{d} {op:?}"));
        }
    }
    let mut k = Kb::new(&[10]);
    let (x, y) = (
        k.load(DType::F32, IndexMap::Contiguous),
        k.load(DType::F32, IndexMap::Contiguous),
    );
    let q = k.binary(BinaryOp::Div, x, y);
    k.store(q);
    let plan = opencl::render(&k.0, FP32).unwrap();
    assert!(plan.fault.is_none() && plan.scratch.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Intrinsics.

/// Matrix products of odd and tile-sized shapes (and an empty inner extent) against a plain loop.
#[test]
fn matmul_matches_a_loop() {
    let Some(cl) = opencl_device("matmul_matches_a_loop") else {
        return;
    };
    let cases = [
        (DType::F32, 70, 33, 130),
        (DType::F32, 64, 64, 64),
        (DType::F32, 1, 300, 1),
        (DType::F32, 5, 0, 7),
        (DType::F64, 65, 17, 129),
    ];
    // A sum of k products, each within rounding: 16 times the exact sum's scale.
    matmul_matches(
        cl,
        &cases,
        |len, seed| floats(len + 20, seed)[20..].to_vec(),
        (9, 10),
        |d, k| 16.0 * 8.0 * k as f64 * if d == DType::F32 { 1e-7 } else { 1e-16 },
    );
}

/// Gather along each axis with i32 and u32 indices, against the CPU intrinsic; an index out of
/// range sets the fault word to 1.
#[test]
fn gather_matches_the_cpu_and_faults_out_of_range() {
    let Some(cl) = opencl_device("gather_matches_the_cpu_and_faults_out_of_range") else {
        return;
    };
    let shape = [3usize, 5, 4];
    for (d, axis) in [
        (DType::F32, 1),
        (DType::Bool, 0),
        (DType::I32, 2),
        (DType::F64, 1),
    ] {
        if d == DType::F64 && !cl.fp64 {
            continue;
        }
        let data_v = data(d, 60, 11);
        for (it, idx) in [
            (DType::I32, TypedVec::I32(vec![2, 0, 2, 1, 0, 2])),
            (DType::U32, TypedVec::U32(vec![1, 1, 0])),
        ] {
            let mut out = shape.to_vec();
            out[axis] = idx.len();
            let c = call(
                Intrinsic::Gather { axis },
                &[&shape, &[idx.len()]],
                &[d, it],
                &out,
                d,
            );
            let want = cpu_intrinsic(&c, &[&data_v, &idx]).unwrap();
            let got = cl.run_intrinsic(&c, &[&data_v, &idx]);
            assert_eq!(got.fault, 0);
            assert_outputs(&format!("gather {d} axis {axis}"), &got.outputs, &[want], 0);
        }
        for bad in [
            TypedVec::I32(vec![0, -1, 1]),
            TypedVec::I32(vec![0, 1, shape[axis] as i32]),
        ] {
            let mut out = shape.to_vec();
            out[axis] = 3;
            let c = call(
                Intrinsic::Gather { axis },
                &[&shape, &[3]],
                &[d, DType::I32],
                &out,
                d,
            );
            assert!(cpu_intrinsic(&c, &[&data_v, &bad]).is_err());
            assert_eq!(cl.run_intrinsic(&c, &[&data_v, &bad]).fault, 1);
        }
    }
}

/// Concatenation along the first, middle and last axes, with an empty part, against the CPU.
#[test]
fn concat_matches_the_cpu() {
    let Some(cl) = opencl_device("concat_matches_the_cpu") else {
        return;
    };
    for (d, axis) in [
        (DType::I32, 1),
        (DType::Bool, 0),
        (DType::F32, 2),
        (DType::F64, 1),
        (DType::U32, 0),
    ] {
        if d == DType::F64 && !cl.fp64 {
            continue;
        }
        let mut shapes = [vec![2, 3, 4], vec![2, 3, 4], vec![2, 3, 4]];
        shapes[1][axis] = 5;
        shapes[2][axis] = 0;
        let parts: Vec<TypedVec> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| data(d, s.iter().product(), 12 + i as u64))
            .collect();
        let mut out = shapes[0].clone();
        out[axis] = shapes.iter().map(|s| s[axis]).sum();
        let in_shapes: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
        let c = call(Intrinsic::Concat { axis }, &in_shapes, &[d; 3], &out, d);
        let refs: Vec<&TypedVec> = parts.iter().collect();
        let want = cpu_intrinsic(&c, &refs).unwrap();
        let got = cl.run_intrinsic(&c, &refs);
        assert_outputs(&format!("concat {d} axis {axis}"), &got.outputs, &[want], 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering rules and kernels recorded through the public API.

/// The same kernel renders to the same text; f64 without fp64 is unsupported, f32 is not.
#[test]
fn rendering_is_deterministic_and_respects_fp64() {
    let mut k = Kb::new(&[100, 100]);
    let x = k.load(DType::F64, IndexMap::Contiguous);
    k.reduce(ReduceOp::ArgMax, x);
    assert_eq!(opencl::render(&k.0, FP64), opencl::render(&k.0, FP64));
    assert!(opencl::render(&k.0, FP32).is_err());
    let c = call(
        Intrinsic::Matmul {
            trans_a: false,
            trans_b: false,
        },
        &[&[2, 2], &[2, 2]],
        &[DType::F64; 2],
        &[2, 2],
        DType::F64,
    );
    assert!(arrayflow::intrinsics::opencl::render(&c, FP32).is_err());
    let mut k = Kb::new(&[10]);
    let x = k.load(DType::F32, IndexMap::Contiguous);
    k.store(x);
    let plan = opencl::render(&k.0, FP32).unwrap();
    assert!(
        !plan.source.contains("#define AF_FP64") && !plan.source.contains("EXTENSION cl_khr_fp64")
    );
    assert!(
        opencl::render(&k.0, FP64)
            .unwrap()
            .source
            .starts_with("#define AF_FP64\n")
    );
}

/// The kernels and intrinsic calls of a varied set of computations recorded through the public API
/// (views, broadcasts, tiles, generators, random draws, every reduction, casts, select, integer
/// division, matmul, gather, concat), rendered for both targets and built on the device.
#[test]
fn recorded_kernels_build() {
    use arrayflow::{Array, Rng};
    let Some(cl) = opencl_device("recorded_kernels_build") else {
        return;
    };
    let mut kernels: Vec<std::sync::Arc<Kernel>> = Vec::new();
    let grab = || {
        let seq = arrayflow::runtime::Inner::get()
            .last_sequence
            .lock()
            .clone();
        seq.map(|s| {
            s.programs
                .iter()
                .map(|p| p.kernel.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    };
    let a = Array::<f32>::from_vec(
        (0..600).map(|i| (i as f32 * 0.37).sin()).collect(),
        &[20, 30],
    );
    let b = Array::<f32>::from_vec((0..30).map(|i| i as f32 * 0.1 - 1.0).collect(), &[30]);
    let mut rng = Rng::new(3);
    let _ = ((&a + &b).exp() * 2.0 - a.transpose().transpose().abs())
        .to_vec()
        .unwrap();
    kernels.extend(grab());
    let _ = (
        a.sum_axis(1),
        a.argmax_axis(0),
        a.max(),
        a.gt(0.1).any_axis(1),
    )
        .0
        .to_vec()
        .unwrap();
    let _ = (
        a.argmin_axis(1).to_vec().unwrap(),
        a.gt(0.0).all().item().unwrap(),
        a.prod_axis(0).to_vec().unwrap(),
        a.min_axis(1).to_vec().unwrap(),
    );
    kernels.extend(grab());
    let s = a.slice(&[arrayflow::Slice::step(.., 2), arrayflow::Slice::all()]);
    let _ = (s.tile(&[2, 1]) + rng.normal::<f32>(&[20, 30]))
        .to_vec()
        .unwrap();
    kernels.extend(grab());
    let i = (&a * 100.0).cast::<i32>();
    let _ = ((&i / 7) % 3 + i.abs()).sum().item().unwrap();
    kernels.extend(grab());
    let _ = (Array::<f64>::iota(&[4, 5], 1)
        + Array::<f64>::identity(5).slice(&[
            arrayflow::Slice::new(Some(0), Some(4), 1),
            arrayflow::Slice::all(),
        ])
        + rng.uniform::<f64>(&[4, 5]))
    .to_vec()
    .unwrap();
    kernels.extend(grab());
    let _ = (Array::<f32>::linspace(0.0, 1.0, 50) * 3.0)
        .to_vec()
        .unwrap();
    kernels.extend(grab());
    let _ = a.matmul(&a.transpose()).to_vec().unwrap();
    kernels.extend(grab());
    let idx = Array::<u32>::from_vec(vec![3, 1, 4], &[3]);
    let _ = Array::concat(&[&a.gather(&idx, 0), &a], 0)
        .to_vec()
        .unwrap();
    kernels.extend(grab());
    let _ = a.gt(0.0).select(&a, 0.0).cast::<f64>().to_vec().unwrap();
    kernels.extend(grab());
    // Column sums of a recorded array take the column layout (a thread per result).
    let c = Array::<f32>::from_vec((0..6400).map(|i| (i % 7) as f32).collect(), &[100, 64]);
    let _ = c.sum_axis(0).to_vec().unwrap();
    let columns = grab();
    assert!(
        columns.iter().any(|k| matches!(&**k, Kernel::Fused(k)
            if arrayflow::proggen::codegen::lower::columns(k))),
        "sum_axis(0) of 100 x 64: {columns:?}"
    );
    kernels.extend(columns);

    let mut built = 0;
    for kernel in &kernels {
        for target in [FP64, FP32] {
            if target.fp64 && !cl.fp64 {
                continue;
            }
            let plan = match &**kernel {
                Kernel::Fused(k) => opencl::render(k, target),
                Kernel::Intrinsic(c) => arrayflow::intrinsics::opencl::render(c, target),
            };
            let Ok(plan) = plan else {
                assert!(!target.fp64, "{kernel:?} unsupported with fp64");
                continue;
            };
            // Builds the program and creates every pass's kernel.
            cl.check(&plan, "a recorded kernel");
            built += 1;
        }
    }
    assert!(built >= 15, "only {built} programs built");
}

/// The tiled transpose (`intrinsics::opencl::render_transpose`) of fused kernels that
/// `intrinsics::transpose::as_transpose` recognises, every element type, edges, batches and an input
/// offset: bit for bit a plain loop's (and the CPU tile VM's) result for the same kernel, also
/// with 3 work-groups (the grid-stride loop over tiles); no f64 transpose without fp64.
/// Row and column scans, their carry loops and grid-stride loops, against a plain loop.
#[test]
fn scan_matches_a_loop() {
    let Some(cl) = opencl_device("scan_matches_a_loop") else {
        return;
    };
    scan_matches(cl);
}

#[test]
fn folded_maps_match_a_walk() {
    let Some(cl) = opencl_device("folded_maps_match_a_walk") else {
        return;
    };
    folded_maps_match(cl);
}

#[test]
fn transpose_matches_the_cpu() {
    let Some(cl) = opencl_device("transpose_matches_the_cpu") else {
        return;
    };
    transpose_matches(cl, &REAL_TYPES);
    let f64_shape = arrayflow::intrinsics::transpose::TransposeShape {
        batch: 1,
        rows: 2,
        cols: 2,
        dtype: DType::F64,
        offset: 0,
    };
    assert!(arrayflow::intrinsics::opencl::render_transpose(&f64_shape, FP32).is_err());
}
