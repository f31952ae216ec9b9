//! OpenCL code generation (`proggen::codegen::opencl`, `intrinsics::opencl` and the primitive
//! library `primitives/opencl/arrayflow.cl`): the library covers the op tables; every rendered
//! program builds on the installed OpenCL platform (PoCL); rendered plans run there agree with the
//! CPU tile VM and with plain loops (bit for bit where the CPU promises it: integers, casts,
//! Philox uniforms). Programs build with `-cl-fp32-correctly-rounded-divide-sqrt` where the device
//! offers it (f32 division and square root then round as on the CPU). Without an OpenCL platform
//! the device tests print a skip message, unless `ARRAYFLOW_REQUIRE_BACKENDS` names `opencl`, where
//! they fail.

use arrayflow::exec::TypedVec;
use arrayflow::ir::{BinaryOp, DType, GenKind, Intrinsic, RandomDist, ReduceOp, Shape, UnaryOp};
use arrayflow::primitives::cpu as prim;
use arrayflow::proggen::codegen::c::ctype;
use arrayflow::proggen::codegen::gpu::{BufArg, GpuPlan, Target, elem_bytes};
use arrayflow::proggen::codegen::opencl::{self, LIBRARY};
use arrayflow::proggen::kernel::{
    Domain, FusedKernel, IndexMap, Instr, ParamKind, PeriodicDim, ReduceStore, Reg, Store,
};
use arrayflow::proggen::sequence::{IntrinsicCall, Kernel};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, Device};
use opencl3::kernel::{ExecuteKernel, Kernel as ClKernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_ulong};
use smallvec::smallvec;
use std::sync::OnceLock;

const FP64: Target = Target {
    fp64: true,
    immediates: false,
    fused_fma: true,
};
const FP32: Target = Target {
    fp64: false,
    immediates: false,
    fused_fma: true,
};

// ---------------------------------------------------------------------------------------------
// The OpenCL device (PoCL) and running a plan on it.

struct Cl {
    context: Context,
    queue: CommandQueue,
    fp64: bool,
    /// Build options: correctly rounded f32 division and square root where the device has them,
    /// as the CPU computes them (the executor should build with the same options).
    options: &'static str,
}

fn open_device() -> Result<Cl, String> {
    let platforms = opencl3::platform::get_platforms().map_err(|e| e.to_string())?;
    let id = platforms
        .iter()
        .flat_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default())
        .next()
        .ok_or("no OpenCL device")?;
    let device = Device::new(id);
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
    })
}

/// The OpenCL device, or `None` (after a skip message) when there is none and it is not required.
fn device(test: &str) -> Option<&'static Cl> {
    static DEVICE: OnceLock<Result<Cl, String>> = OnceLock::new();
    match DEVICE.get_or_init(open_device) {
        Ok(cl) => Some(cl),
        Err(e) => {
            let required = std::env::var("ARRAYFLOW_REQUIRE_BACKENDS")
                .is_ok_and(|v| v.split(',').any(|b| b.trim() == "opencl"));
            assert!(
                !required,
                "ARRAYFLOW_REQUIRE_BACKENDS names opencl but OpenCL is unavailable: {e}"
            );
            eprintln!("skipping {test}: no OpenCL platform ({e})");
            None
        }
    }
}

fn numbered(src: &str) -> String {
    src.lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} {l}\n", i + 1))
        .collect()
}

fn build(cl: &Cl, plan: &GpuPlan) -> Program {
    Program::create_and_build_from_source(&cl.context, &plan.source, cl.options).unwrap_or_else(
        |log| {
            panic!(
                "build failed:\n{log}\n--- kernel part of the source ---\n{}",
                numbered(&plan.source[LIBRARY.len()..])
            )
        },
    )
}

fn bytes_of(v: &TypedVec) -> Vec<u8> {
    match v {
        TypedVec::F32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::F64(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::I32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::U32(v) => bytemuck::cast_slice(v).to_vec(),
        TypedVec::Bool(v) => v.iter().map(|&b| b as u8).collect(),
    }
}

fn from_bytes(d: DType, b: &[u8]) -> TypedVec {
    match d {
        DType::F32 => TypedVec::F32(bytemuck::pod_collect_to_vec(b)),
        DType::F64 => TypedVec::F64(bytemuck::pod_collect_to_vec(b)),
        DType::I32 => TypedVec::I32(bytemuck::pod_collect_to_vec(b)),
        DType::U32 => TypedVec::U32(bytemuck::pod_collect_to_vec(b)),
        DType::Bool => {
            assert!(b.iter().all(|&x| x <= 1), "a bool output holds {b:?}");
            TypedVec::Bool(b.iter().map(|&x| x != 0).collect())
        }
    }
}

/// A device buffer holding `data` (at least 4 bytes: OpenCL has no empty buffers).
fn buffer(cl: &Cl, data: &[u8]) -> Buffer<u8> {
    let mut data = data.to_vec();
    data.resize(data.len().max(4), 0);
    // SAFETY: no host pointer; the size is non-zero.
    let mut b = unsafe {
        Buffer::<u8>::create(
            &cl.context,
            CL_MEM_READ_WRITE,
            data.len(),
            std::ptr::null_mut(),
        )
    }
    .unwrap();
    // SAFETY: a blocking write of the buffer's own size.
    unsafe {
        cl.queue
            .enqueue_write_buffer(&mut b, CL_BLOCKING, 0, &data, &[])
    }
    .unwrap();
    b
}

/// What a plan computed: the outputs and the fault word (0 without one).
struct Ran {
    outputs: Vec<TypedVec>,
    fault: u32,
}

/// Runs `plan` as an executor would: zero-filled outputs and scratch, passes in order.
fn run_plan(
    cl: &Cl,
    plan: &GpuPlan,
    inputs: &[&TypedVec],
    outputs: &[(DType, usize)],
    params: &[u64],
) -> Ran {
    let program = build(cl, plan);
    let ins: Vec<_> = inputs.iter().map(|v| buffer(cl, &bytes_of(v))).collect();
    let outs: Vec<_> = outputs
        .iter()
        .map(|&(d, n)| buffer(cl, &vec![0; elem_bytes(d, false) as usize * n]))
        .collect();
    let scratch: Vec<_> = plan
        .scratch
        .iter()
        .map(|&b| buffer(cl, &vec![0; b as usize]))
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
            // SAFETY: a buffer argument, as the entry's signature declares (the plan's contract).
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
        unsafe { exec.enqueue_nd_range(&cl.queue) }.unwrap();
    }
    cl.queue.finish().unwrap();
    let read = |b: &Buffer<u8>, n: usize| {
        let mut v = vec![0u8; n.max(4)];
        // SAFETY: a blocking read of at most the buffer's size.
        unsafe { cl.queue.enqueue_read_buffer(b, CL_BLOCKING, 0, &mut v, &[]) }.unwrap();
        v.truncate(n);
        v
    };
    Ran {
        outputs: outputs
            .iter()
            .zip(&outs)
            .map(|(&(d, n), b)| from_bytes(d, &read(b, elem_bytes(d, false) as usize * n)))
            .collect(),
        fault: plan.fault.map_or(0, |f| {
            u32::from_ne_bytes(read(&scratch[f as usize], 4).try_into().unwrap())
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels by hand, the CPU tile VM as the oracle, and comparisons.

/// A fused kernel under construction.
struct Kb(FusedKernel);

impl Kb {
    /// A kernel over `shape` whose last axes (`inner` elements) reduce when it has reductions.
    fn new(shape: &[usize], inner: usize, inputs: &[DType]) -> Kb {
        let len: usize = shape.iter().product();
        Kb(FusedKernel {
            domain: Domain {
                shape: Shape::from_slice(shape),
                inner,
                // An empty reduced extent (the last axis) still has its results.
                outer: len
                    .checked_div(inner)
                    .unwrap_or_else(|| shape[..shape.len() - 1].iter().product()),
                perm: None,
            },
            inputs: inputs.to_vec(),
            outputs: Vec::new(),
            instrs: Vec::new(),
            instr_sites: Vec::new(),
            stores: Vec::new(),
            reductions: Vec::new(),
            reg_dtypes: Vec::new(),
            params: Vec::new(),
        })
    }
    /// Appends the instruction `f(dst)` writing a new register of type `d`.
    fn push(&mut self, d: DType, f: impl FnOnce(Reg) -> Instr) -> Reg {
        let r = self.0.reg_dtypes.len() as Reg;
        self.0.reg_dtypes.push(d);
        self.0.instrs.push(f(r));
        self.0.instr_sites.push(std::panic::Location::caller());
        r
    }
    fn load(&mut self, input: u32, map: IndexMap) -> Reg {
        let d = self.0.inputs[input as usize];
        self.push(d, |dst| Instr::Load { dst, input, map })
    }
    fn konst(&mut self, d: DType) -> Reg {
        let slot = self.0.params.len() as u32;
        self.0.params.push(ParamKind::Const(d));
        self.push(d, |dst| Instr::Const {
            dst,
            slot,
            dtype: d,
        })
    }
    fn unary(&mut self, op: UnaryOp, a: Reg) -> Reg {
        let d = op.out_dtype(self.0.reg_dtypes[a as usize]).unwrap();
        self.push(d, |dst| Instr::Unary { dst, op, a })
    }
    fn binary(&mut self, op: BinaryOp, a: Reg, b: Reg) -> Reg {
        let d = op.out_dtype(self.0.reg_dtypes[a as usize]).unwrap();
        self.push(d, |dst| Instr::Binary { dst, op, a, b })
    }
    fn cast(&mut self, to: DType, a: Reg) -> Reg {
        self.push(to, |dst| Instr::Cast { dst, to, a })
    }
    fn store(&mut self, reg: Reg) -> u32 {
        let output = self.0.outputs.len() as u32;
        self.0.outputs.push(self.0.reg_dtypes[reg as usize]);
        self.0.stores.push(Store { reg, output });
        output
    }
    fn reduce(&mut self, op: ReduceOp, reg: Reg) -> u32 {
        let output = self.0.outputs.len() as u32;
        let d = op.out_dtype(self.0.reg_dtypes[reg as usize]).unwrap();
        self.0.outputs.push(d);
        self.0.reductions.push(ReduceStore { reg, op, output });
        output
    }
}

/// Each output's type and length.
fn output_specs(k: &FusedKernel) -> Vec<(DType, usize)> {
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
fn cpu(k: &FusedKernel, inputs: &[&TypedVec], params: &[u64]) -> Result<Vec<TypedVec>, String> {
    let mut outs: Vec<TypedVec> = output_specs(k)
        .iter()
        .map(|&(d, n)| TypedVec::zeros(d, n))
        .collect();
    let external = vec![None; outs.len()];
    arrayflow::exec::cpu::vm::run_fused(k, 1024, inputs, &mut outs, &external, params)
        .map_err(|e| e.to_string())?;
    Ok(outs)
}

/// Renders `k` for the device and runs it.
fn gpu(cl: &Cl, k: &FusedKernel, inputs: &[&TypedVec], params: &[u64]) -> Ran {
    gpu_as(
        cl,
        k,
        Target {
            fp64: cl.fp64,
            immediates: false,
            fused_fma: true,
        },
        inputs,
        params,
    )
}

/// Renders `k` for `target` and runs it on the device.
fn gpu_as(cl: &Cl, k: &FusedKernel, target: Target, inputs: &[&TypedVec], params: &[u64]) -> Ran {
    let plan = opencl::render(k, target).unwrap();
    run_plan(cl, &plan, inputs, &output_specs(k), params)
}

/// The targets the device can take for kernels of element type `d`: with and without f64.
fn targets(cl: &Cl, d: DType) -> Vec<Target> {
    [FP64, FP32]
        .into_iter()
        .filter(|t| if t.fp64 { cl.fp64 } else { d != DType::F64 })
        .collect()
}

/// Whether `got` is `want` up to `ulps` units in the last place or `abs` absolutely (NaN = NaN).
fn close(got: f64, want: f64, ulps: u64, abs: f64, f32: bool) -> bool {
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

/// Compares outputs: integers and bools exactly, floats within `ulps` (or a tiny absolute error).
fn assert_outputs(what: &str, got: &[TypedVec], want: &[TypedVec], ulps: u64) {
    assert_eq!(got.len(), want.len());
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        match (g, w) {
            (TypedVec::F32(g), TypedVec::F32(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close(a as f64, b as f64, ulps, 1e-6, true),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            (TypedVec::F64(g), TypedVec::F64(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close(a, b, ulps, 1e-14, false),
                        "{what}: output {o}[{i}]: gpu {a:e} cpu {b:e}"
                    );
                }
            }
            _ => assert_eq!(g, w, "{what}: output {o}"),
        }
    }
}

/// Deterministic pseudo-random u64s.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 11
    }
}

/// Floats in [-4, 4) after a prefix of special values.
fn floats(n: usize, seed: u64) -> Vec<f64> {
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

fn data(d: DType, n: usize, seed: u64) -> TypedVec {
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
    }
}

/// Divisors for integer division tests: `data` without zeros, -1 against i32::MIN at the start.
fn divisors(d: DType, n: usize, seed: u64) -> TypedVec {
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

// ---------------------------------------------------------------------------------------------
// (a) The primitive library against the op tables.

/// Every op of the tables, for every element type it accepts, has its `af_<op>_<type>` function,
/// as do the casts, parameter decoders and random conversions; f64 appears only under AF_FP64.
#[test]
fn library_defines_every_table_op() {
    let defines = |f: &str| LIBRARY.contains(&format!(" {f}("));
    let mut missing = Vec::new();
    for d in DType::ALL {
        let t = ctype(d);
        for op in UnaryOp::ALL {
            if op.out_dtype(d).is_some() && !defines(&format!("af_{}_{t}", op.name())) {
                missing.push(format!("af_{}_{t}", op.name()));
            }
        }
        for op in BinaryOp::ALL {
            if op.out_dtype(d).is_some() && !defines(&format!("af_{}_{t}", op.name())) {
                missing.push(format!("af_{}_{t}", op.name()));
            }
        }
        let mut more = vec![format!("af_bits_{t}"), format!("af_index_{t}")];
        more.extend(
            DType::ALL
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
    let Some(cl) = device("every_op_matches_the_cpu") else {
        return;
    };
    let n = 3000;
    for d in DType::ALL {
        if d == DType::F64 && !cl.fp64 {
            continue;
        }
        let mut k = Kb::new(&[n], 1, &[d, d]);
        let (x, y) = (
            k.load(0, IndexMap::Contiguous),
            k.load(1, IndexMap::Contiguous),
        );
        for &op in UnaryOp::ALL.iter().filter(|op| op.out_dtype(d).is_some()) {
            let r = k.unary(op, x);
            k.store(r);
        }
        for &op in BinaryOp::ALL.iter().filter(|op| op.out_dtype(d).is_some()) {
            let r = k.binary(op, x, y);
            k.store(r);
        }
        let (a, b) = (data(d, n, 1), divisors(d, n, 2));
        let want = cpu(&k.0, &[&a, &b], &[]).unwrap();
        for target in targets(cl, d) {
            let got = gpu_as(cl, &k.0, target, &[&a, &b], &[]);
            assert_eq!(got.fault, 0);
            assert_outputs(&format!("{d} ops, {target:?}"), &got.outputs, &want, 16);
        }
    }
}

/// Casts between every pair of element types (saturating float to integer, NaN to 0) agree with
/// the CPU bit for bit.
#[test]
fn casts_match_the_cpu() {
    let Some(cl) = device("casts_match_the_cpu") else {
        return;
    };
    for from in DType::ALL {
        if from == DType::F64 && !cl.fp64 {
            continue;
        }
        for target in targets(cl, from) {
            let mut k = Kb::new(&[500], 1, &[from]);
            let x = k.load(0, IndexMap::Contiguous);
            for to in DType::ALL
                .into_iter()
                .filter(|&t| target.fp64 || t != DType::F64)
            {
                let r = k.cast(to, x);
                k.store(r);
            }
            let a = data(from, 500, 3);
            let want = cpu(&k.0, &[&a], &[]).unwrap();
            let got = gpu_as(cl, &k.0, target, &[&a], &[]);
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
    let Some(cl) = device("elementwise_chain") else {
        return;
    };
    let (rows, cols) = (37, 300);
    let mut k = Kb::new(&[rows, cols], 1, &[DType::F32, DType::F32]);
    // Input 0 is stored [cols, rows]: element (r, c) at c * rows + r.
    let x = k.load(
        0,
        IndexMap::Strided {
            offset: 0,
            strides: smallvec![1, rows as isize],
        },
    );
    let row = k.load(
        1,
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
    let ran = gpu(
        cl,
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
    let Some(cl) = device("periodic_maps_and_generators_match_the_cpu") else {
        return;
    };
    let (rows, cols) = (6, 10);
    let mut k = Kb::new(&[rows, cols], 1, &[DType::I32]);
    // out0[r, c] = in[(r - 1) mod 3, (c + 2) mod 4] of a [3, 4] input.
    let t = k.load(
        0,
        IndexMap::Periodic {
            dims: vec![
                PeriodicDim {
                    offset: -1,
                    coef: smallvec![1, 0],
                    modulus: 3,
                    stride: 4,
                },
                PeriodicDim {
                    offset: 2,
                    coef: smallvec![0, 1],
                    modulus: 4,
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
        let got = run_plan(cl, &plan, &[&a], &output_specs(&k.0), &[]);
        assert_outputs(&format!("maps, {target:?}"), &got.outputs, &want, 4);
    }
}

/// Reduction layouts: one result over many elements (chunked, final pass), a few results (chunked),
/// many results with C = 1, one thread per result (small extent) and an empty extent — a sum, an
/// element-wise store alongside, against loops.
#[test]
fn sum_reductions_in_every_layout() {
    let Some(cl) = device("sum_reductions_in_every_layout") else {
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
        let mut k = Kb::new(&[outer, inner], inner, &[DType::F32]);
        let x = k.load(0, IndexMap::Contiguous);
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
        let ran = run_plan(
            cl,
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
    let Some(cl) = device("every_reduction_matches_the_cpu") else {
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
        for d in DType::ALL {
            if d == DType::F64 && !cl.fp64 {
                continue;
            }
            let mut k = Kb::new(&[outer, inner], inner, &[d]);
            let x = k.load(0, IndexMap::Contiguous);
            for &op in ReduceOp::ALL.iter().filter(|op| op.out_dtype(d).is_some()) {
                k.reduce(op, x);
            }
            let a = reduction_data(d, outer, inner);
            let want = cpu(&k.0, &[&a], &[]).unwrap();
            for target in targets(cl, d) {
                let got = gpu_as(cl, &k.0, target, &[&a], &[]);
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
    let Some(cl) = device("random_streams_match_the_cpu_philox") else {
        return;
    };
    let n = 4099;
    let mut k = Kb::new(&[n], 1, &[]);
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
                dist,
                key_slot: 0,
                counter_slot: 1,
                map,
            });
            k.store(r);
        }
    }
    let key = [0x1234_5678u32, 0x9abc_def0];
    let counter = (1u64 << 32) - 1000;
    let params = [((key[1] as u64) << 32) | key[0] as u64, counter];
    let ran = gpu(cl, &k.0, &[], &params);
    let words = |g: u64, w: usize| prim::stream_words(key, counter + g, w, &mut (u64::MAX, [0; 4]));
    for (o, out) in ran.outputs.iter().enumerate() {
        let (dist, _) = dists[o / 2];
        let g = |i: usize| {
            if o % 2 == 0 {
                i as u64
            } else {
                7 + 3 * i as u64
            }
        };
        match out {
            TypedVec::F32(v) => {
                for (i, &x) in v.iter().enumerate() {
                    if dist == RandomDist::Uniform {
                        assert_eq!(
                            x.to_bits(),
                            prim::uniform_f32(words(g(i), 1)[0]).to_bits(),
                            "uniform f32 [{i}]"
                        );
                    } else {
                        let r = words(g(i), 2);
                        let want = prim::normal_f32(r[0], r[1]);
                        assert!(
                            close(x as f64, want as f64, 8, 1e-6, true),
                            "normal f32 [{i}]: {x} vs {want}"
                        );
                    }
                }
            }
            TypedVec::F64(v) => {
                for (i, &x) in v.iter().enumerate() {
                    if dist == RandomDist::Uniform {
                        let r = words(g(i), 2);
                        assert_eq!(
                            x.to_bits(),
                            prim::uniform_f64(r[0], r[1]).to_bits(),
                            "uniform f64 [{i}]"
                        );
                    } else {
                        let want = prim::normal_f64(words(g(i), 4));
                        assert!(
                            close(x, want, 8, 1e-14, false),
                            "normal f64 [{i}]: {x} vs {want}"
                        );
                    }
                }
            }
            _ => unreachable!(),
        }
    }
}

/// Integer division by zero: the fault word names the instruction (1 + its index), the faulting
/// element is 0, the others are right; kernels that cannot fault have no fault word.
#[test]
fn integer_division_by_zero_faults() {
    let Some(cl) = device("integer_division_by_zero_faults") else {
        return;
    };
    for d in [DType::I32, DType::U32] {
        for op in [BinaryOp::Div, BinaryOp::Rem, BinaryOp::Mod] {
            let mut k = Kb::new(&[1000], 1, &[d, d]);
            let (x, y) = (
                k.load(0, IndexMap::Contiguous),
                k.load(1, IndexMap::Contiguous),
            );
            let s = k.binary(BinaryOp::Add, x, y);
            let q = k.binary(op, s, y);
            k.store(q);
            let (a, mut b) = (data(d, 1000, 7), divisors(d, 1000, 8));
            let want = cpu(&k.0, &[&a, &b], &[]).unwrap();
            let clean = gpu(cl, &k.0, &[&a, &b], &[]);
            assert_eq!(clean.fault, 0);
            assert_outputs(&format!("{d} {op:?}"), &clean.outputs, &want, 0);
            match &mut b {
                TypedVec::I32(v) => v[500] = 0,
                TypedVec::U32(v) => v[500] = 0,
                _ => unreachable!(),
            }
            let bad = gpu(cl, &k.0, &[&a, &b], &[]);
            assert_eq!(
                bad.fault, 4,
                "{d} {op:?}: 1 + the dividing instruction's index"
            );
            assert!(cpu(&k.0, &[&a, &b], &[]).is_err());
            assert_eq!(bad.outputs[0].get(500).as_f64(), 0.0);
        }
    }
    let mut k = Kb::new(&[10], 1, &[DType::F32, DType::F32]);
    let (x, y) = (
        k.load(0, IndexMap::Contiguous),
        k.load(1, IndexMap::Contiguous),
    );
    let q = k.binary(BinaryOp::Div, x, y);
    k.store(q);
    let plan = opencl::render(&k.0, FP32).unwrap();
    assert!(plan.fault.is_none() && plan.scratch.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Intrinsics.

fn call(
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

/// The CPU intrinsic's output, or its error.
fn cpu_intrinsic(c: &IntrinsicCall, inputs: &[&TypedVec]) -> Result<TypedVec, String> {
    let mut out = TypedVec::zeros(c.dtype, c.out_shape.iter().product());
    arrayflow::intrinsics::cpu::run(c, inputs, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn gpu_intrinsic(cl: &Cl, c: &IntrinsicCall, inputs: &[&TypedVec]) -> Ran {
    let plan = arrayflow::intrinsics::opencl::render(
        c,
        Target {
            fp64: cl.fp64,
            immediates: false,
            fused_fma: true,
        },
    )
    .unwrap();
    run_plan(
        cl,
        &plan,
        inputs,
        &[(c.dtype, c.out_shape.iter().product())],
        &[],
    )
}

/// Matrix products of odd and tile-sized shapes (and an empty inner extent) against a plain loop.
#[test]
fn matmul_matches_a_loop() {
    let Some(cl) = device("matmul_matches_a_loop") else {
        return;
    };
    for (d, m, k, n) in [
        (DType::F32, 70, 33, 130),
        (DType::F32, 64, 64, 64),
        (DType::F32, 1, 300, 1),
        (DType::F32, 5, 0, 7),
        (DType::F64, 65, 17, 129),
    ] {
        if d == DType::F64 && !cl.fp64 {
            continue;
        }
        let c = call(Intrinsic::Matmul, &[&[m, k], &[k, n]], &[d, d], &[m, n], d);
        let a: Vec<f64> = floats(m * k + 20, 9)[20..].to_vec();
        let b: Vec<f64> = floats(k * n + 20, 10)[20..].to_vec();
        let mut want = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            }
        }
        let (ta, tb, tw) = if d == DType::F32 {
            let f = |v: &[f64]| TypedVec::F32(v.iter().map(|&x| x as f32).collect());
            (f(&a), f(&b), f(&want))
        } else {
            (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(want))
        };
        let got = gpu_intrinsic(cl, &c, &[&ta, &tb]);
        // A sum of k products, each within rounding: compare against the exact sum's scale.
        let scale = 8.0 * k as f64 * if d == DType::F32 { 1e-7 } else { 1e-16 };
        for i in 0..m * n {
            let (g, w) = (got.outputs[0].get(i).as_f64(), tw.get(i).as_f64());
            assert!(
                (g - w).abs() <= scale * 16.0,
                "{m}x{k}x{n} {d}: [{i}] {g} vs {w}"
            );
        }
    }
}

/// Gather along each axis with i32 and u32 indices, against the CPU intrinsic; an index out of
/// range sets the fault word to 1.
#[test]
fn gather_matches_the_cpu_and_faults_out_of_range() {
    let Some(cl) = device("gather_matches_the_cpu_and_faults_out_of_range") else {
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
            let got = gpu_intrinsic(cl, &c, &[&data_v, &idx]);
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
            assert_eq!(gpu_intrinsic(cl, &c, &[&data_v, &bad]).fault, 1);
        }
    }
}

/// Concatenation along the first, middle and last axes, with an empty part, against the CPU.
#[test]
fn concat_matches_the_cpu() {
    let Some(cl) = device("concat_matches_the_cpu") else {
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
        let got = gpu_intrinsic(cl, &c, &refs);
        assert_outputs(&format!("concat {d} axis {axis}"), &got.outputs, &[want], 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering rules and kernels recorded through the public API.

/// The same kernel renders to the same text; f64 without fp64 is unsupported, f32 is not.
#[test]
fn rendering_is_deterministic_and_respects_fp64() {
    let mut k = Kb::new(&[100, 100], 100, &[DType::F64]);
    let x = k.load(0, IndexMap::Contiguous);
    k.reduce(ReduceOp::ArgMax, x);
    assert_eq!(opencl::render(&k.0, FP64), opencl::render(&k.0, FP64));
    assert!(opencl::render(&k.0, FP32).is_err());
    let c = call(
        Intrinsic::Matmul,
        &[&[2, 2], &[2, 2]],
        &[DType::F64; 2],
        &[2, 2],
        DType::F64,
    );
    assert!(arrayflow::intrinsics::opencl::render(&c, FP32).is_err());
    let mut k = Kb::new(&[10], 1, &[DType::F32]);
    let x = k.load(0, IndexMap::Contiguous);
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
    let Some(cl) = device("recorded_kernels_build") else {
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
            let program = build(cl, &plan);
            for pass in &plan.passes {
                ClKernel::create(&program, &pass.entry).unwrap();
            }
            built += 1;
        }
    }
    assert!(built >= 15, "only {built} programs built");
}

/// The tiled transpose (`intrinsics::opencl::render_transpose`) of fused kernels that
/// `proggen::patterns::as_transpose` recognises, every element type, edges, batches and an input
/// offset: bit for bit the CPU tile VM's result for the same kernel, also with 3 work-groups (the
/// grid-stride loop over tiles).
#[test]
fn transpose_matches_the_cpu() {
    let Some(cl) = device("transpose_matches_the_cpu") else {
        return;
    };
    for d in [DType::F32, DType::F64, DType::I32, DType::U32, DType::Bool] {
        if d == DType::F64 && !cl.fp64 {
            continue;
        }
        for (batch, rows, cols, offset) in [(1, 31, 33, 0), (3, 70, 45, 5), (2, 64, 96, 0)] {
            let what = format!("{d} transpose of {batch} x {rows} x {cols} from {offset}");
            let rc = (rows * cols) as isize;
            let mut kb = Kb::new(&[batch, cols, rows], 1, &[d]);
            let r = kb.load(
                0,
                IndexMap::Strided {
                    offset: offset as isize,
                    strides: smallvec![rc, 1, cols as isize],
                },
            );
            kb.store(r);
            let k = kb.0;
            let shape = arrayflow::proggen::patterns::as_transpose(&k)
                .unwrap_or_else(|| panic!("{what}: not recognised"));
            assert_eq!((shape.batch, shape.rows, shape.cols), (batch, rows, cols));
            let input = data(d, offset + batch * rows * cols + 7, 11);
            let want = cpu(&k, &[&input], &[]).unwrap();
            let target = Target {
                fp64: cl.fp64,
                immediates: false,
                fused_fma: true,
            };
            let mut plan = arrayflow::intrinsics::opencl::render_transpose(&shape, target).unwrap();
            for groups in [plan.passes[0].groups, 3] {
                plan.passes[0].groups = groups;
                let got = run_plan(cl, &plan, &[&input], &output_specs(&k), &[]);
                assert_eq!(
                    bytes_of(&got.outputs[0]),
                    bytes_of(&want[0]),
                    "{what}, {groups} groups"
                );
            }
        }
    }
    let f64_shape = arrayflow::proggen::patterns::TransposeShape {
        batch: 1,
        rows: 2,
        cols: 2,
        dtype: DType::F64,
        offset: 0,
    };
    assert!(arrayflow::intrinsics::opencl::render_transpose(&f64_shape, FP32).is_err());
}
