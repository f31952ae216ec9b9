//! Counting: `bincount` (how often each value `0..length` occurs in an i32/u32 array) and
//! `histogram` (how many floats fall in each of `bins` bins between `bins + 1` edges). Their
//! checks, reference, conditioning and cost, and their kernels (`cpu.rs`: per-chunk counts added
//! together; `opencl.rs`, `wgsl.rs`: a pass that zeroes the counts, then one where each
//! work-group counts into local (workgroup) atomic counters, or with at most 16 bins each thread
//! into its own registers (added by a tree), and adds them to the global counts with one atomic
//! add per non-zero bin; past 4096 bins the threads add to the global counts).
//!
//! Both count over all elements of the input, whatever its shape, into a `u32` array.
//!
//! - `bincount`: a value out of range (negative, or `>= length`) fails the program (NumPy's
//!   `bincount` grows the result instead; here the length is part of the call); with index traps
//!   on it is an index trap naming the first bad position (the device kernels keep the lowest
//!   bad position in the fault buffer's second word, `debug::trap::device`).
//! - `histogram`: input 1 holds the edges `e[0] <= ... <= e[bins]` in the data's type (the API
//!   computes them as NumPy's `linspace` does: `lo + k * ((hi - lo) / bins)` in f64, the last
//!   exactly `hi`, rounded to the element type). Element `x` counts in bin `k`, the largest
//!   `k < bins` with `e[k] <= x`, when `e[0] <= x <= e[bins]` (the last bin is closed on the
//!   right); values outside and NaN are not counted. Every executor first guesses `k` from
//!   `(x - e[0]) * bins / (e[bins] - e[0])` and then settles it by comparing `x` with the edges
//!   themselves (a binary search when the guess is off), so the bin depends only on comparisons
//!   with the same edge values and agrees on every executor, values exactly on an edge included.

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, MagInput, Operand, Output, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, Intrinsic, Site, TypedVec};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// `bincount`'s definition.
pub struct Bincount;
/// `histogram`'s definition.
pub struct Histogram;

/// Bins of `op` (bincount's length, histogram's bins).
pub(crate) fn bins_of(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Bincount { length } => *length,
        Intrinsic::Histogram { bins } => *bins,
        _ => unreachable!("counting's definition called for {op:?}"),
    }
}

/// The bin of `x` among `edges` (`bins + 1` of them, sorted), `None` when `x` is outside
/// `[edges[0], edges[bins]]` or NaN: the largest `k < bins` with `edges[k] <= x`, found by a
/// binary search (the reference's rule; the kernels reach the same bin from a guess).
pub fn bin_by_search(x: f64, edges: &[f64]) -> Option<usize> {
    let bins = edges.len() - 1;
    if !(x >= edges[0] && x <= edges[bins]) {
        return None;
    }
    Some(edges[..bins].partition_point(|&e| e <= x) - 1)
}

fn counts_of(bins: usize) -> Output {
    Output {
        shape: smallvec::smallvec![bins],
        dtype: DType::U32,
    }
}

impl IntrinsicDef for Bincount {
    fn name(&self) -> &'static str {
        "bincount"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], _: &[&[usize]]) -> Option<String> {
        match op {
            Intrinsic::Bincount { length } => Some(format!("{}.bincount({length})", args[0])),
            _ => None,
        }
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let x = inputs[0];
        if !x.dtype.is_int() {
            return Err(Error::new(
                ErrorKind::DType,
                format!("bincount counts i32 or u32 values, not {}", x.dtype),
            )
            .at(site));
        }
        let length = bins_of(op);
        if length > u32::MAX as usize {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("bincount length {length} exceeds the u32 range of the values"),
            )
            .at(site));
        }
        Ok(vec![counts_of(length)])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(bins_of(op) as u64);
    }

    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let length = bins_of(op);
        let (x, _) = inputs[0];
        let mut counts = vec![0u32; length];
        for pos in 0..x.len() {
            let v = x.get(pos).as_f64();
            if v < 0.0 || v >= length as f64 {
                return Err(cpu::bincount_range(&v.to_string(), pos, length));
            }
            counts[v as usize] = counts[v as usize].wrapping_add(1);
        }
        Ok(vec![TypedVec::U32(counts)])
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.in_shapes[0]);
        Cost {
            flops: n,
            bytes: n * 4 + 2 * numel(&call.out_shape) * 4,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::bincount(
            bins_of(&call.op),
            inputs[0],
            &call.in_shapes[0],
            &mut outputs[0],
        )
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(call)
    }
}

impl IntrinsicDef for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (x, edges) = (inputs[0], inputs[1]);
        let bins = bins_of(op);
        if !x.dtype.is_float() {
            return Err(Error::new(
                ErrorKind::DType,
                format!("histogram counts f32 or f64 values, not {}", x.dtype),
            )
            .at(site));
        }
        if bins == 0 || bins > u32::MAX as usize - 1 {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("histogram of {bins} bins: the bin count must be 1 to 2^32 - 2"),
            )
            .at(site));
        }
        if edges.dtype != x.dtype || edges.shape != [bins + 1] {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "histogram of {bins} bins takes {} edges of {}, not {:?} of {}",
                    bins + 1,
                    x.dtype,
                    edges.shape,
                    edges.dtype
                ),
            )
            .at(site));
        }
        Ok(vec![counts_of(bins)])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(bins_of(op) as u64);
    }

    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        _outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let (x, _) = inputs[0];
        let (e, _) = inputs[1];
        let edges: Vec<f64> = (0..e.len()).map(|k| e.get(k).as_f64()).collect();
        let mut counts = vec![0u32; bins_of(op)];
        for i in 0..x.len() {
            if let Some(b) = bin_by_search(x.get(i).as_f64(), &edges) {
                counts[b] = counts[b].wrapping_add(1);
            }
        }
        Ok(vec![TypedVec::U32(counts)])
    }

    /// A count is uncertain (infinite magnitude: any value matches) when an element whose value
    /// may differ by its allowance could fall in another bin, or in none; other counts are exact.
    fn magnitudes(
        &self,
        _op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let x = &inputs[0];
        let e = inputs[1].value;
        let edges: Vec<f64> = (0..e.len()).map(|k| e.get(k).as_f64()).collect();
        let bins = edges.len() - 1;
        let (scale, floor) = x.tolerance;
        let mut m: Vec<f64> = (0..result.len()).map(|b| result.get(b).as_f64()).collect();
        for i in 0..x.value.len() {
            let (v, mag) = (x.value.get(i).as_f64(), x.magnitude[i]);
            if mag == 0.0 && floor == 0.0 {
                continue;
            }
            let a = scale * mag + floor;
            if v.is_nan() {
                continue;
            }
            if !a.is_finite() {
                m.iter_mut().for_each(|c| *c = f64::INFINITY);
                break;
            }
            let (lo, hi) = (v - a, v + a);
            let (lo_c, hi_c) = (lo.max(edges[0]), hi.min(edges[bins]));
            if lo_c > hi_c {
                continue; // outside the edges whatever the difference
            }
            let (Some(first), Some(last)) =
                (bin_by_search(lo_c, &edges), bin_by_search(hi_c, &edges))
            else {
                continue;
            };
            if first == last && lo >= edges[0] && hi <= edges[bins] {
                continue;
            }
            // Every bin [lo, hi] touches may gain or lose this element.
            for c in &mut m[first..=last] {
                *c = f64::INFINITY;
            }
        }
        m
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let n = numel(&call.in_shapes[0]);
        let el = call.in_dtypes[0].size() as u64;
        Cost {
            flops: 4 * n,
            bytes: n * el + 2 * numel(&call.out_shape) * 4,
        }
    }

    fn cpu(
        &self,
        _call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::histogram(inputs[0], inputs[1], &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(call)
    }
}
