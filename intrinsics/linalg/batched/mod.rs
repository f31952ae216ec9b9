//! Batched small-matrix LU on the GPU (issue 21): `lu`, `solve` and `inv` for `n <= 64`, one
//! work-group per matrix of the batch (a grid-stride loop over the batch when it has more than
//! 65535 matrices). The matrix lives in local (workgroup) memory; each column's pivot is the
//! first largest `|a|` on or below the diagonal, NaN never chosen, as LAPACK's getf2 (row `k`
//! itself when the column below is all zero; see "Pivot search" below); the row swap, the scaling and the trailing
//! update are spread over the work-group with a barrier between steps. An exact zero pivot skips
//! its column's elimination, as getf2 (the factors stay finite). `solve` and `inv` then load
//! the right-hand sides (`b` or the identity) row-permuted into local memory, a chunk of columns
//! at a time, and run the unit-lower and the upper triangular solves column-oriented (one
//! barrier per step), writing each chunk out.
//!
//! **Singular matrices**: `solve` and `inv` set the plan's fault word; the GPU executor then
//! runs the call again on the CPU (`exec/gpu/mod.rs`, as for an index out of range), which fails
//! the program with its usual error naming the batch index, the pivot and the user's line. `lu`
//! is not an error at a zero pivot (LAPACK's `info > 0`) and sets no fault. NaN in gives NaN out.
//!
//! **Faults reach every consumer.** The GPU executor reads a fault word only after the programs
//! enqueued behind the faulting one have run, so a consumer in the same flush (`solve(a, b) * 2`,
//! or the reshape of a vector `b`'s solution) runs on the unchecked output; the scheduler holds
//! such a consumer's completion until the faulting program's CPU rerun reports its error
//! (`exec/scheduler.rs`, `fault_deps`), so it fails with the same error. `solve` and `inv` run
//! here by default since session 20 (every test that calls them passed with the kernels on, on
//! PoCL and lavapipe); `ARRAYFLOW_LINALG_GPU_SOLVE=off` keeps them on the CPU ([`solve_enabled`]).
//! `lu` cannot fault and always runs here.
//!
//! **Pivot search**: on WGSL a tree reduction over the rows' keys; on OpenCL one thread scans
//! the column (at most 64 local reads, about the cost of the tree's barriers at these sizes):
//! PoCL with optimisation on ran the tree version with wrong pivots (not the largest; cause not
//! found), unoptimised it was right.
//!
//! **What runs here**: f32 on both targets, f64 on OpenCL devices with `cl_khr_fp64` (WGSL has
//! no f64: such calls keep the CPU path). A call whose matrix does not fit the local memory
//! budget ([`OPENCL_LOCAL_BYTES`], [`WGSL_LOCAL_BYTES`]: the guaranteed minimum of each API; f64
//! up to `n = 62` on OpenCL, f32 up to `n = 61` on WGSL) or `n > 64` goes to the blocked LU
//! (`../blocked/`), which also takes `det` and `slogdet` of every size; an empty matrix or no
//! right-hand side stays on the CPU. The other routines of the family (`lu_solve`, `lu_unpack`, `lu_cond`) keep
//! the CPU path.
//!
//! The kernels (`opencl.rs`, `wgsl.rs`) are rendered from one [`Layout`]: shapes and chunk sizes
//! are literals (a plan is rendered once per shape).

pub mod opencl;
pub mod wgsl;

use super::batch_of;
use crate::ir::{DType, Intrinsic};
use crate::proggen::codegen::gpu::Unsupported;
use crate::proggen::sequence::IntrinsicCall;

/// Largest matrix the batched kernels take.
pub const MAX_N: usize = 64;
/// Local memory an OpenCL plan may use (OpenCL's guaranteed minimum of `CL_DEVICE_LOCAL_MEM_SIZE`).
pub const OPENCL_LOCAL_BYTES: usize = 32768;
/// Workgroup memory a WGSL plan may use (WebGPU's default `maxComputeWorkgroupStorageSize`).
pub const WGSL_LOCAL_BYTES: usize = 16384;
/// Most work-groups a pass dispatches (WebGPU's per-dimension limit; OpenCL uses the same).
pub const MAX_GROUPS: usize = 65535;

/// Whether `solve` and `inv` run the batched kernels on a GPU executor (yes unless
/// `ARRAYFLOW_LINALG_GPU_SOLVE=off`).
pub fn solve_enabled() -> bool {
    std::env::var("ARRAYFLOW_LINALG_GPU_SOLVE").map_or(true, |v| v != "off" && v != "0")
}

/// `Unsupported` for `solve` and `inv` where [`solve_enabled`] says no.
pub fn gate(call: &IntrinsicCall) -> Result<(), Unsupported> {
    if matches!(call.op, Intrinsic::Solve | Intrinsic::Inv) && !solve_enabled() {
        return Err(Unsupported(format!(
            "batched GPU {} is turned off (ARRAYFLOW_LINALG_GPU_SOLVE=off)",
            call.op.name()
        )));
    }
    Ok(())
}

/// What a batched call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    /// The packed factors and pivots (`[.., n, n + 1]`).
    Lu,
    /// `A x = b` for `b` (input 1) with `r` columns.
    Solve,
    /// `A x = I`.
    Inv,
}

/// The shape of one batched call's kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub routine: Routine,
    pub dtype: DType,
    /// Matrix size.
    pub n: usize,
    /// Right-hand-side columns (0 for `lu`).
    pub r: usize,
    /// Columns of the right-hand side held in local memory at a time (1..=r; 0 for `lu`).
    pub chunk: usize,
    /// Matrices in the (broadcast) output batch.
    pub count: usize,
    /// The output's batch shape, and those of `a` and `b` (`b`'s empty for `lu`, `inv`).
    pub batch: Vec<usize>,
    pub a_batch: Vec<usize>,
    pub b_batch: Vec<usize>,
    /// Slots of the pivot reduction: `n` rounded up to a power of two.
    pub red: usize,
    /// Work-group size: `n * n` rounded up to a power of two, 64 to 256.
    pub local: u32,
}

impl Layout {
    /// The layout of `call` within `budget` bytes of local memory, or why it stays on the CPU.
    pub fn of(call: &IntrinsicCall, budget: usize) -> Result<Layout, Unsupported> {
        let routine = match call.op {
            Intrinsic::Lu => Routine::Lu,
            Intrinsic::Solve => Routine::Solve,
            Intrinsic::Inv => Routine::Inv,
            _ => {
                return Err(Unsupported(format!(
                    "{} has no batched GPU kernel",
                    call.op.name()
                )));
            }
        };
        let s0 = &call.in_shapes[0];
        let n = s0[s0.len() - 1];
        if n == 0 || n > MAX_N {
            return Err(Unsupported(format!(
                "batched {}: n = {n} is outside 1..={MAX_N}",
                call.op.name()
            )));
        }
        let (r, b_batch) = match routine {
            Routine::Lu => (0, Vec::new()),
            Routine::Inv => (n, Vec::new()),
            Routine::Solve => {
                let s1 = &call.in_shapes[1];
                (s1[s1.len() - 1], batch_of(s1, 2).to_vec())
            }
        };
        if routine != Routine::Lu && r == 0 {
            return Err(Unsupported("a solve with no right-hand side".into()));
        }
        let el = call.dtype.size();
        let red = n.next_power_of_two();
        // The matrix, the reduction's keys (8 bytes) and indices, the pivots and the permutation.
        let fixed = n * n * el + red * 12 + 2 * n * 4;
        let room = budget.saturating_sub(fixed) / (n * el);
        let chunk = r.min(room);
        if fixed > budget || (r > 0 && chunk == 0) {
            return Err(Unsupported(format!(
                "batched {} of {n} x {n} {} matrices needs more local memory than {budget} bytes",
                call.op.name(),
                call.dtype
            )));
        }
        let batch = batch_of(&call.out_shape, 2).to_vec();
        let count = batch.iter().product();
        Ok(Layout {
            routine,
            dtype: call.dtype,
            n,
            r,
            chunk,
            count,
            batch,
            a_batch: batch_of(s0, 2).to_vec(),
            b_batch,
            red,
            local: (n * n).next_power_of_two().clamp(64, 256) as u32,
        })
    }

    /// Work-groups of the pass.
    pub fn groups(&self) -> u32 {
        self.count.min(MAX_GROUPS) as u32
    }

    /// Bytes of local memory the kernel declares.
    pub fn local_bytes(&self) -> usize {
        let el = self.dtype.size();
        self.n * self.n * el + self.n * self.chunk * el + self.red * 12 + 2 * self.n * 4
    }
}

/// The index into batch shape `from` of matrix `g` (a variable of the kernel) of the broadcast
/// batch `out`, as an expression of integer literals with suffix `suf` (NumPy broadcasting: an
/// axis of extent 1 repeats).
pub(crate) fn source_index(out: &[usize], from: &[usize], g: &str, suf: &str) -> String {
    if from.iter().product::<usize>() == out.iter().product::<usize>() && from.len() == out.len() {
        return g.to_string();
    }
    let lead = out.len() - from.len();
    let (mut terms, mut stride, mut after) = (Vec::new(), 1usize, 1usize);
    for d in (0..out.len()).rev() {
        if d >= lead {
            let f = from[d - lead];
            if f != 1 {
                terms.push(format!(
                    "(({g} / {after}{suf}) % {}{suf}) * {stride}{suf}",
                    out[d]
                ));
            }
            stride *= f;
        }
        after *= out[d];
    }
    if terms.is_empty() {
        format!("0{suf}")
    } else {
        terms.join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendered index expression agrees with the CPU's `batch_source` on every matrix.
    #[test]
    fn source_index_follows_broadcasting() {
        let eval = |e: &str, g: usize| -> usize {
            // Terms "((g / A) % B) * C" joined by " + ".
            if e == "g" {
                return g;
            }
            e.split(" + ")
                .map(|t| {
                    let nums: Vec<usize> = t
                        .split(|c: char| !c.is_ascii_digit())
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse().unwrap())
                        .collect();
                    match nums.as_slice() {
                        [0] => 0,
                        [a, b, c] => ((g / a) % b) * c,
                        _ => panic!("{t}"),
                    }
                })
                .sum()
        };
        for (out, from) in [
            (vec![2, 3], vec![3]),
            (vec![2, 3], vec![2, 1]),
            (vec![2, 3], vec![]),
            (vec![4, 2, 3], vec![4, 1, 3]),
            (vec![5], vec![5]),
        ] {
            let e = source_index(&out, &from, "g", "");
            for g in 0..out.iter().product() {
                assert_eq!(
                    eval(&e, g),
                    super::super::batch_source(&out, &from, g),
                    "{out:?} from {from:?}: {e}"
                );
            }
        }
    }
}
