//! The matrix product on the CPU. f32 and f64: `matrixmultiply`'s GEMM per matrix, reading each
//! operand through its strides (a transposed operand costs nothing); one large product lets
//! `matrixmultiply` split the work over its own threads (the crate's `threading` feature), a batch
//! of small products runs one GEMM per matrix on rayon's threads. A product with a handful of
//! results over a long inner extent (k-means' one-hot product `[8, n] @ [n, 2]`, `aᵀ b` of a tall
//! matrix and a vector) is a few long dot products instead: one pass over the inner extent in
//! fixed blocks on rayon's threads, accumulating in f64 (`short_long`). i32 and u32: a loop over
//! blocks of rows with rayon, wrapping arithmetic (exact modulo 2^32).

use super::Geometry;
use crate::error::Error;
use crate::ir::TypedVec;
use crate::proggen::sequence::IntrinsicCall;
use rayon::prelude::*;

/// Products at most this many multiply-adds each run one per rayon task when there are several;
/// larger ones run one after another, each threaded by `matrixmultiply`.
const SMALL: usize = 128 * 128 * 128;

/// Rows of `c` one integer task computes (each row of `b` is read once per block).
const INT_ROWS: usize = 8;

pub fn run(call: &IntrinsicCall, inputs: &[&TypedVec], out: &mut TypedVec) -> Result<(), Error> {
    let g = Geometry::of_call(call);
    let mn = g.m * g.n;
    if mn == 0 || g.batches() == 0 {
        return Ok(());
    }
    macro_rules! gemm {
        ($a:expr, $b:expr, $c:expr, $f:path) => {{
            let (a, b, c): (&[_], &[_], &mut [_]) = ($a, $b, $c);
            if g.k == 0 {
                c.fill(0.0);
                return Ok(());
            }
            if mn <= SHORT_RESULT && g.k >= LONG_K {
                for (t, c) in c.chunks_mut(mn).enumerate() {
                    short_long(&g, t, a, b, c);
                }
                return Ok(());
            }
            let one = |t: usize, c: &mut [_]| {
                let (oa, ob) = g.offsets(t);
                // SAFETY: the geometry keeps every element of a, b (from their offsets, through
                // their strides) and c ([m, n], row-major) in bounds of the checked shapes.
                unsafe {
                    $f(
                        g.m,
                        g.k,
                        g.n,
                        1.0,
                        a.as_ptr().add(oa),
                        g.a_rs as isize,
                        g.a_cs as isize,
                        b.as_ptr().add(ob),
                        g.b_rs as isize,
                        g.b_cs as isize,
                        0.0,
                        c.as_mut_ptr(),
                        g.n as isize,
                        1,
                    );
                }
            };
            if g.batches() > 1 && g.m * g.n * g.k <= SMALL {
                c.par_chunks_mut(mn)
                    .enumerate()
                    .for_each(|(t, c)| one(t, c));
            } else {
                for (t, c) in c.chunks_mut(mn).enumerate() {
                    one(t, c);
                }
            }
        }};
    }
    match (inputs[0], inputs[1], out) {
        (TypedVec::F32(a), TypedVec::F32(b), TypedVec::F32(c)) => {
            gemm!(a, b, c, matrixmultiply::sgemm)
        }
        (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(c)) => {
            gemm!(a, b, c, matrixmultiply::dgemm)
        }
        (TypedVec::I32(a), TypedVec::I32(b), TypedVec::I32(c)) => integer(&g, a, b, c),
        (TypedVec::U32(a), TypedVec::U32(b), TypedVec::U32(c)) => integer(&g, a, b, c),
        _ => {
            return Err(crate::intrinsics::cpu::exec_error(
                "matmul takes two f32, f64, i32 or u32 operands".into(),
            ));
        }
    }
    Ok(())
}

/// Results per product (`m * n`) up to which a long product runs as dot products.
const SHORT_RESULT: usize = 64;
/// Inner extents from which it does. The GEMM packs both operands in panels made for large
/// results: k-means' `[8, 200000] @ [200000, 2]` took 2.3 ms of a 7 ms step there (2-core AMD EPYC,
/// `benches/workloads.rs`), where one pass over the 1.6 million products is memory-bound.
const LONG_K: usize = 4096;
/// Inner positions per task of a dot-product pass; the blocks' sums are added in block order, so
/// the result does not depend on the number of threads.
const K_BLOCK: usize = 8192;

/// Float elements as the dot-product pass reads and writes them.
trait Real: Copy + Send + Sync {
    fn f(self) -> f64;
    fn of(x: f64) -> Self;
}
impl Real for f32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn of(x: f64) -> Self {
        x as f32
    }
}
impl Real for f64 {
    fn f(self) -> f64 {
        self
    }
    fn of(x: f64) -> Self {
        x
    }
}

/// Batch item `t` of a product with at most [`SHORT_RESULT`] results and a long inner extent:
/// every result's dot product in one pass over `p`, blocks of [`K_BLOCK`] positions on rayon's
/// threads, each accumulating all `m * n` sums in f64, then the blocks added in order.
fn short_long<T: Real>(g: &Geometry, t: usize, a: &[T], b: &[T], c: &mut [T]) {
    let (oa, ob) = g.offsets(t);
    let (m, n) = (g.m, g.n);
    // Accumulators `acc[j * m + i]`: for each `p`, column `a[.., p]` times each `b[p, j]` is
    // added to a run of `m` sums, which vectorises when that column is contiguous (`a_rs == 1`:
    // a transposed tall operand, as `onehotᵀ`).
    let block = |k0: usize| -> [f64; SHORT_RESULT] {
        let mut acc = [0.0f64; SHORT_RESULT];
        let mut col = [0.0f64; SHORT_RESULT];
        for p in k0..(k0 + K_BLOCK).min(g.k) {
            let (ap, bp) = (oa + p * g.a_cs, ob + p * g.b_rs);
            if g.a_rs == 1 {
                for (c, x) in col[..m].iter_mut().zip(&a[ap..ap + m]) {
                    *c = x.f();
                }
            } else {
                for (i, c) in col[..m].iter_mut().enumerate() {
                    *c = a[ap + i * g.a_rs].f();
                }
            }
            for (j, run) in acc[..m * n].chunks_exact_mut(m).enumerate() {
                let bj = b[bp + j * g.b_cs].f();
                for (s, &c) in run.iter_mut().zip(&col[..m]) {
                    *s += c * bj;
                }
            }
        }
        acc
    };
    let blocks: Vec<[f64; SHORT_RESULT]> = (0..g.k.div_ceil(K_BLOCK))
        .into_par_iter()
        .map(|q| block(q * K_BLOCK))
        .collect();
    for (r, out) in c.iter_mut().enumerate() {
        let (i, j) = (r / n, r % n);
        *out = T::of(blocks.iter().fold(0.0, |s, acc| s + acc[j * m + i]));
    }
}

/// The integer product: blocks of [`INT_ROWS`] rows of one matrix per task; each row of `b`
/// (row-major, packed first when `b` is read transposed) is added into the block's rows of `c`.
fn integer<T: Wrapping>(g: &Geometry, a: &[T], b: &[T], c: &mut [T]) {
    let (m, k, n) = (g.m, g.k, g.n);
    // b with each matrix row-major ([k, n], contiguous rows), at the same batch strides.
    let packed: Vec<T>;
    let b: &[T] = if g.b_cs == 1 || k == 0 {
        b
    } else {
        packed = {
            let mut p = vec![T::default(); b.len()];
            for (s, d) in b.chunks(k * n).zip(p.chunks_mut(k * n)) {
                for pp in 0..k {
                    for j in 0..n {
                        d[pp * n + j] = s[pp * g.b_rs + j * g.b_cs];
                    }
                }
            }
            p
        };
        &packed
    };
    c.par_chunks_mut(m * n).enumerate().for_each(|(t, cm)| {
        let (oa, ob) = g.offsets(t);
        cm.par_chunks_mut(INT_ROWS * n)
            .enumerate()
            .for_each(|(blk, rows)| {
                rows.fill(T::default());
                let i0 = blk * INT_ROWS;
                for p in 0..k {
                    let brow = &b[ob + p * n..ob + p * n + n];
                    for (r, crow) in rows.chunks_mut(n).enumerate() {
                        let x = a[oa + (i0 + r) * g.a_rs + p * g.a_cs];
                        for (cj, &bj) in crow.iter_mut().zip(brow) {
                            *cj = cj.madd(x, bj);
                        }
                    }
                }
            });
    });
}

/// Wrapping multiply-add of the integer element types.
trait Wrapping: Copy + Default + Send + Sync {
    /// `self + x * y`, wrapping.
    fn madd(self, x: Self, y: Self) -> Self;
}

impl Wrapping for i32 {
    #[inline]
    fn madd(self, x: i32, y: i32) -> i32 {
        self.wrapping_add(x.wrapping_mul(y))
    }
}

impl Wrapping for u32 {
    #[inline]
    fn madd(self, x: u32, y: u32) -> u32 {
        self.wrapping_add(x.wrapping_mul(y))
    }
}
