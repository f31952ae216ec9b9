//! Inclusive scans along one axis (`cumsum`, `cumprod`, `cummax`, `cummin` of f32, f64, i32 and
//! u32): their checks, reference, conditioning and cost, and their kernels (`cpu.rs`: rayon over
//! rows, columns or fixed blocks of a long row, two passes where a line is cut; `opencl.rs`,
//! `wgsl.rs`: reduce-then-scan in up to three passes with a scratch buffer of block totals, see
//! [`GpuLayout`]).
//!
//! Semantics, on every executor: element `k` along the axis combines elements `0..=k` in order.
//! Integer sums and products wrap (as `sum` and `prod` do); `cummax`/`cummin` propagate NaN (once
//! a NaN is seen the rest of the line is NaN, NumPy's `np.maximum.accumulate`), and of two equal
//! values keep the earlier one. Float sums and products accumulate in f64 on the CPU and in the
//! element type on GPUs (f32 in f32: a GPU scan is bandwidth-bound and its block totals live in
//! local memory); comparison mode's allowance for element `k` of a `cumsum` scales with the
//! running sum of `|x|` (see [`Scan::magnitudes`]), so either rounding matches.

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::{Intrinsic, ReduceOp, Shape, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// The scans' definition.
pub struct Scan;

/// The op and axis of a scan call.
fn parts(op: &Intrinsic) -> (ReduceOp, usize) {
    match op {
        Intrinsic::Scan { op, axis } => (*op, *axis),
        _ => unreachable!("scan's definition called for {op:?}"),
    }
}

/// The user-facing name of a scan op.
pub fn scan_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "cumsum",
        ReduceOp::Prod => "cumprod",
        ReduceOp::Max => "cummax",
        ReduceOp::Min => "cummin",
        _ => "scan",
    }
}

pub use super::Rows;

/// How a GPU plan cuts a scan (both targets; the elements a thread takes differ per target and
/// element type).
///
/// - **Rows** (`post == 1`, the axis is contiguous, rows longer than [`SHORT_ROW`]): the array
///   is one sequence of `pre` segments of `n` elements, cut into blocks of `block` elements (256
///   threads times `per_thread`) regardless of where segments start, so rows share a block and
///   long rows span many. A block is scanned by one work-group as a segmented scan (a segment
///   starts at every multiple of `n`). With more than one block: pass `af_scan_reduce` writes
///   each block's total since its last segment start, pass `af_scan_carry` (one work-group)
///   turns the totals into each block's carry in place (an exclusive segmented scan over
///   blocks), and pass `af_scan_block` scans each block starting from its carry.
/// - **Columns** (`post > 1`, or rows of at most [`SHORT_ROW`]): a thread walks `chunk`
///   consecutive elements of one line (threads of neighbouring lines read neighbouring
///   addresses; for short rows, neighbouring short runs that the cache serves). With few lines
///   the axis is cut into `chunks` chunks: pass `af_scan_cols_reduce` writes each chunk's total,
///   pass `af_scan_cols_carry` (a thread per line) turns them into carries, pass `af_scan_cols`
///   scans each chunk from its carry; otherwise only `af_scan_cols` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuLayout {
    Rows {
        block: usize,
        per_thread: usize,
        blocks: usize,
    },
    Columns {
        chunks: usize,
        chunk: usize,
    },
}

/// Rows of at most this many elements are scanned a thread per row (the columns layout): a
/// block scan's local memory and barriers buy nothing there, and the kernel is far simpler.
pub const SHORT_ROW: usize = 32;
/// Threads of a work-group in every scan pass.
pub const GPU_LOCAL: usize = 256;
/// Lines of a column scan from which each thread walks a whole line (enough threads to fill a
/// GPU).
const COLUMN_LINES: usize = 1 << 15;
/// Threads a column scan with few lines aims for.
const COLUMN_THREADS: usize = 1 << 16;
/// Fewest elements a column-scan thread walks.
const MIN_CHUNK: usize = 64;
/// Most chunks per line (the carry pass walks them one thread per line).
const MAX_CHUNKS: usize = 1024;

impl GpuLayout {
    /// The layout of a scan of geometry `g` with `per_thread` elements per thread in a row block.
    pub fn of(g: Rows, per_thread: usize) -> GpuLayout {
        if g.post == 1 && g.dim > SHORT_ROW {
            let block = GPU_LOCAL * per_thread;
            GpuLayout::Rows {
                block,
                per_thread,
                blocks: g.numel().div_ceil(block),
            }
        } else {
            let lines = g.pre * g.post;
            let chunks = if lines >= COLUMN_LINES {
                1
            } else {
                COLUMN_THREADS
                    .div_ceil(lines.max(1))
                    .min(g.dim.div_ceil(MIN_CHUNK))
                    .clamp(1, MAX_CHUNKS)
            };
            let chunk = g.dim.div_ceil(chunks).max(1);
            GpuLayout::Columns {
                chunks: g.dim.div_ceil(chunk).max(1),
                chunk,
            }
        }
    }
}

impl IntrinsicDef for Scan {
    fn name(&self) -> &'static str {
        "scan"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        let (rop, axis) = parts(op);
        Some(format!("{}.{}({axis})", args[0], scan_name(rop)))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (rop, axis) = parts(op);
        let a = inputs[0];
        if !matches!(
            rop,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min
        ) {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!("internal error: no scan for {}", rop.name()),
            )
            .at(site));
        }
        if axis >= a.shape.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "{} axis {axis} is out of range for shape {:?}",
                    scan_name(rop),
                    a.shape
                ),
            )
            .at(site));
        }
        if !a.dtype.is_numeric() {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "{} takes f32, f64, i32 or u32 arrays, not {}",
                    scan_name(rop),
                    a.dtype
                ),
            )
            .at(site));
        }
        Ok(vec![Output {
            shape: Shape::from_slice(a.shape),
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (rop, axis) = parts(op);
        let k = ReduceOp::ALL.iter().position(|&o| o == rop).unwrap_or(0);
        w.push(k as u64);
        w.push(axis as u64);
    }

    /// Each line sequentially from its first element: floats in f64 (rounded to the element type
    /// once per output), integers in wrapping u32 arithmetic (sum, product) or exactly (max, min).
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (rop, axis) = parts(op);
        let (v, shape) = inputs[0];
        let g = Rows::of(shape, axis);
        let nan_max = |a: f64, b: f64| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if b > a {
                b
            } else {
                a
            }
        };
        let nan_min = |a: f64, b: f64| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if b < a {
                b
            } else {
                a
            }
        };
        let fop = |a: f64, b: f64| match rop {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Max => nan_max(a, b),
            _ => nan_min(a, b),
        };
        macro_rules! lines {
            ($x:expr, $acc:ty, $lift:expr, $comb:expr, $down:expr) => {{
                let x = $x;
                let mut out = x.clone();
                for p in 0..g.pre {
                    for q in 0..g.post {
                        let mut acc: Option<$acc> = None;
                        for k in 0..g.dim {
                            let i = (p * g.dim + k) * g.post + q;
                            let y: $acc = $lift(x[i]);
                            let a = match acc {
                                None => y,
                                Some(a) => $comb(a, y),
                            };
                            acc = Some(a);
                            out[i] = $down(a);
                        }
                    }
                }
                out
            }};
        }
        let iop = |a: u32, b: u32| match rop {
            ReduceOp::Sum => a.wrapping_add(b),
            _ => a.wrapping_mul(b),
        };
        let wraps = matches!(rop, ReduceOp::Sum | ReduceOp::Prod);
        let out = match v {
            TypedVec::F32(x) => {
                TypedVec::F32(lines!(x, f64, |x: f32| x as f64, fop, |a: f64| a as f32))
            }
            TypedVec::F64(x) => TypedVec::F64(lines!(x, f64, |x: f64| x, fop, |a: f64| a)),
            TypedVec::I32(x) if wraps => {
                TypedVec::I32(lines!(x, u32, |x: i32| x as u32, iop, |a: u32| a as i32))
            }
            TypedVec::U32(x) if wraps => TypedVec::U32(lines!(x, u32, |x: u32| x, iop, |a: u32| a)),
            TypedVec::I32(x) => {
                let m = |a: i32, b: i32| {
                    if rop == ReduceOp::Max {
                        a.max(b)
                    } else {
                        a.min(b)
                    }
                };
                TypedVec::I32(lines!(x, i32, |x: i32| x, m, |a: i32| a))
            }
            TypedVec::U32(x) => {
                let m = |a: u32, b: u32| {
                    if rop == ReduceOp::Max {
                        a.max(b)
                    } else {
                        a.min(b)
                    }
                };
                TypedVec::U32(lines!(x, u32, |x: u32| x, m, |a: u32| a))
            }
            TypedVec::Bool(_) => return Err(format!("{} of bool", scan_name(rop))),
            TypedVec::C64(_) | TypedVec::C128(_) => {
                return Err(format!("{} of complex values", scan_name(rop)));
            }
        };
        Ok(vec![out])
    }

    /// Per element `k` of a line, over its elements `0..=k` with sizes `s_j = max(|x_j|, m_j)`:
    /// `cumsum` the running `sum s_j` (a cancelling running sum may round far from the reference,
    /// within its terms' rounding), `cumprod` `(k + 1) * prod s_j`, `cummax`/`cummin`
    /// `|result| + max m_j`, as the reductions' magnitudes.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let (rop, axis) = parts(op);
        let input = &inputs[0];
        let g = Rows::of(input.shape, axis);
        let size = |i: usize| input.value.get(i).as_f64().abs().max(input.magnitude[i]);
        let mut m = vec![0.0; result.len()];
        for p in 0..g.pre {
            for q in 0..g.post {
                let mut acc = 0.0f64;
                for k in 0..g.dim {
                    let i = (p * g.dim + k) * g.post + q;
                    m[i] = match rop {
                        ReduceOp::Sum => {
                            acc += size(i);
                            acc
                        }
                        ReduceOp::Prod => {
                            acc = if k == 0 { size(i) } else { acc * size(i) };
                            (k + 1) as f64 * acc
                        }
                        _ => {
                            acc = acc.max(input.magnitude[i]);
                            result.get(i).as_f64().abs() + acc
                        }
                    };
                }
            }
        }
        m
    }

    /// One operation per element; the GPU plans read the input twice (reduce, then scan).
    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.out_shape);
        Cost {
            flops: n,
            bytes: 3 * n * call.dtype.size() as u64,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        let (rop, axis) = parts(&call.op);
        cpu::run(
            rop,
            Rows::of(&call.in_shapes[0], axis),
            inputs[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (rop, axis) = parts(&call.op);
        opencl::render(rop, Rows::of(&call.in_shapes[0], axis), call.dtype, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        let (rop, axis) = parts(&call.op);
        wgsl::render(rop, Rows::of(&call.in_shapes[0], axis), call.dtype)
    }
}
