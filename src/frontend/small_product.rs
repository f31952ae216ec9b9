//! Matrix products with a small result and a long inner extent, recorded as a fused reduction.
//!
//! k-means' `onehot.transpose().matmul(p)` (`[8, n] @ [n, 2]`) or a Gram matrix of a few columns
//! gives a handful of numbers over a long `k`. The GEMM intrinsic would store both operands (the
//! one-hot matrix of `n x 8` floats included) and run a tiled kernel made for large results. Here
//! such a product is recorded as what it is: the broadcast multiply of the operands laid out as
//! `[.., k, m, n]` and a sum over the `k` axis. The transposes and reshapes are positions
//! (views), so the operands' producers fuse into the reduction's first stage and nothing of size
//! `k` is stored; the CPU tiers walk the input in row order (`exec/cpu/rows.rs`: one pass over
//! `k`, an accumulator per result element) and the GPU renderers split the long reduction.
//!
//! Same values as the intrinsic: integers wrap modulo 2^32 (wrapping products, a wrapping sum);
//! floats are the same dot products, summed as `sum_axis` sums (f32 in f64 where the executor
//! has f64), at least as accurate as the GEMM's f32 accumulation.
//!
//! On by default where a device executor runs, off on the CPU alone. On an NVIDIA H200 (session
//! 19) k-means' product went from the split-`k` GEMM's ~690 µs per iteration to a fused
//! reduction: the workload took 6.4 ms instead of 25.4 ms on OpenCL (19.8 against 24.0 ms on
//! wgpu). On the CPU's `auto` native mode the row-order kernel of least squares' `aᵀ b`
//! (`[200000, 16] f64`) ran 3-4x slower than the GEMM in the workload suite, though 0.6-0.8x its
//! time with `ARRAYFLOW_NATIVE=always` or `ARRAYFLOW_ROW_ORDER=off` (to be understood first).
//! `ARRAYFLOW_SMALL_MATMUL=on|off` (or a number, the limit on `m * n`) or
//! [`crate::Runtime::set_small_matmul`] chooses.

use super::{Handle, binary, permute, reduce, reshape};
use crate::error::Result;
use crate::intrinsics::matmul::Geometry;
use crate::ir::{BinaryOp, ReduceOp, Shape, Site};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Result elements per product (`m * n`, each batch item) up to which the reduction is used when
/// it is on (`ARRAYFLOW_SMALL_MATMUL=on`; `=N` or [`crate::Runtime::set_small_matmul`] set
/// another limit).
pub const MAX_RESULT: usize = 16;
/// Inner extents (`k`) from which the reduction is used.
///
/// Both limits come from `benches/small_matmul.rs` (GEMM and reduction in one run, 2-core AMD
/// EPYC shared with other builds, native tier): at `k = 256` the reduction took 1.6-3x the
/// GEMM's time, at `k = 4096` 0.35-0.8x (1.1-1.35x for `16 x 1`), at `k = 200000` 0.02x (`1 x 1`)
/// to 0.95x for `m * n <= 32`, but 1.5-2.3x at `8 x 8` and 4-5x at `16 x 16`: the row-order walk
/// (`exec/cpu/rows.rs`) costs about 4 ns per product there. The tile VM alone is 3-4x slower
/// than the GEMM at every size; it runs kernels under 65536 elements, which `m * n * k` passes
/// from `m * n = 16` at this `k`.
pub const MIN_INNER: usize = 4096;

/// The current limit on `m * n` (0: off); `usize::MAX` until first read.
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The largest `m * n` recorded as a reduction: [`MAX_RESULT`] where a device executor runs, 0
/// (off) on the CPU alone, unless `ARRAYFLOW_SMALL_MATMUL` says `on` ([`MAX_RESULT`]), `off` or a
/// number.
pub fn limit() -> usize {
    let v = LIMIT.load(Ordering::Relaxed);
    if v != usize::MAX {
        return v;
    }
    let from_env = match std::env::var("ARRAYFLOW_SMALL_MATMUL").as_deref() {
        Ok("on") => MAX_RESULT,
        Ok(s) => s.trim().parse().unwrap_or(0),
        Err(_) if crate::compile::Inner::get().sched.device().is_some() => MAX_RESULT,
        Err(_) => 0,
    };
    // A `set_limit` that raced this read wins.
    let _ = LIMIT.compare_exchange(usize::MAX, from_env, Ordering::Relaxed, Ordering::Relaxed);
    LIMIT.load(Ordering::Relaxed)
}

/// Sets the largest `m * n` recorded as a reduction (0: none) for products recorded from now on.
pub fn set_limit(max_result: usize) {
    LIMIT.store(max_result.min(usize::MAX - 1), Ordering::Relaxed);
}

/// The shortest inner extent recorded as a reduction: [`MIN_INNER`] unless
/// `ARRAYFLOW_SMALL_MATMUL_MIN_K` says another (for measuring shorter ones), read once.
pub fn min_inner() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| {
        crate::settings::number("ARRAYFLOW_SMALL_MATMUL_MIN_K").unwrap_or(MIN_INNER)
    })
}

/// Whether the product of geometry `g` is recorded as a reduction: a non-empty result of at most
/// [`limit`] elements per batch item and an inner extent of at least [`min_inner`].
pub fn wanted(g: &Geometry) -> bool {
    let mn = g.m * g.n;
    mn >= 1 && g.k >= min_inner() && mn <= limit()
}

/// Records `a @ b` for logical operands `a` (`[.., m, k]` or `[k]`) and `b` (`[.., k, n]` or
/// `[k]`) of checked geometry `g` as `sum_k a[.., k, m, 1] * b[.., k, 1, n]`, reshaped to the
/// matmul's result shape.
pub fn record(a: &Handle, b: &Handle, g: &Geometry, site: Site) -> Result<Handle> {
    let (m, k, n) = (g.m, g.k, g.n);
    // a as [.., k, m, 1]: its last two axes swapped (a view), then a unit axis.
    let a3 = if a.shape.len() == 1 {
        reshape(a, Shape::from_slice(&[k, 1, 1]), site)?
    } else {
        let at = permute(a, &swap_last_two(a.shape.len()), site)?;
        let mut s = at.shape.clone();
        s.push(1);
        reshape(&at, s, site)?
    };
    // b as [.., k, 1, n].
    let b3 = if b.shape.len() == 1 {
        reshape(b, Shape::from_slice(&[k, 1, 1]), site)?
    } else {
        let mut s = b.shape.clone();
        s.insert(s.len() - 1, 1);
        reshape(b, s, site)?
    };
    let product = binary(BinaryOp::Mul, &a3, &b3, site)?;
    let r = product.shape.len();
    debug_assert_eq!(&product.shape[r - 3..], &[k, m, n]);
    let sum = reduce(ReduceOp::Sum, &product, &[r - 3], site)?;
    reshape(&sum, g.out_shape.clone(), site)
}

/// The permutation that swaps the last two of `rank` axes.
fn swap_last_two(rank: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..rank).collect();
    p.swap(rank - 1, rank - 2);
    p
}
