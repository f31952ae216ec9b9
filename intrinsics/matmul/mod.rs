//! The matrix product with NumPy's `matmul` rules (f32, f64, i32, u32): `c[.., m, n] = a[.., m, k]
//! b[.., k, n]` over leading batch axes that broadcast, a 1-D `a` a row `[k]` and a 1-D `b` a
//! column `[k]` (the result loses that axis). An operand can be the transpose of its last two
//! axes, read from the untransposed buffer (`trans_a`/`trans_b`, which the front end sets for
//! `x.t().matmul(..)`): no copy. [`Geometry`] turns a call's shapes and flags into extents,
//! strides and batch offsets that every kernel uses: `cpu.rs` (`matrixmultiply`'s GEMM per
//! matrix, rayon over many small matrices; integers in a blocked loop, wrapping), `opencl.rs` and
//! `wgsl.rs` (register- and local-memory-tiled kernels, the tile chosen per call; a long `k` with
//! few tiles split by [`matmul_split`]).

mod cpu;
mod opencl;
mod wgsl;

use super::MagInput;
use super::{Cost, IntrinsicDef, Operand, Output, numel};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::collect;
use crate::ir::{DType, Intrinsic, Scalar, Shape, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// The matrix product's definition.
pub struct Matmul;

/// How one call's operands are laid out: the extents of each product, the batch, and the
/// element strides of each operand as a logical `[m, k]` / `[k, n]` matrix. The output is
/// contiguous `[batch.., m, n]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// The output's batch shape (broadcast from both operands' leading axes).
    pub batch: Vec<usize>,
    /// Per output batch axis, the element stride of `a` (0 where `a` broadcasts along it).
    pub a_batch: Vec<usize>,
    /// As `a_batch`, for `b`.
    pub b_batch: Vec<usize>,
    /// Strides of `a[i, p]` along `i` and `p`.
    pub a_rs: usize,
    pub a_cs: usize,
    /// Strides of `b[p, j]` along `p` and `j`.
    pub b_rs: usize,
    pub b_cs: usize,
    /// The output's shape (NumPy's: the batch, then `m` unless `a` is 1-D, `n` unless `b` is).
    pub out_shape: Shape,
}

/// The shape the user sees for a stored operand (`trans`: its last two axes swapped).
pub fn logical_shape(stored: &[usize], trans: bool) -> Vec<usize> {
    let mut s = stored.to_vec();
    let r = s.len();
    if trans && r >= 2 {
        s.swap(r - 1, r - 2);
    }
    s
}

impl Geometry {
    /// The geometry of `a @ b` for stored shapes `a` and `b` and the transpose flags; `Err` with
    /// the message when the shapes do not fit (naming the shapes as the user sees them).
    pub fn of(
        a: &[usize],
        b: &[usize],
        trans_a: bool,
        trans_b: bool,
    ) -> std::result::Result<Geometry, String> {
        let (la, lb) = (logical_shape(a, trans_a), logical_shape(b, trans_b));
        let bad = || format!("matmul of shapes {la:?} and {lb:?}");
        if la.is_empty() || lb.is_empty() {
            return Err(bad());
        }
        let (m, k) = if la.len() == 1 {
            (1, la[0])
        } else {
            (la[la.len() - 2], la[la.len() - 1])
        };
        let (kb, n) = if lb.len() == 1 {
            (lb[0], 1)
        } else {
            (lb[lb.len() - 2], lb[lb.len() - 1])
        };
        if k != kb {
            return Err(bad());
        }
        let ba = &la[..la.len().saturating_sub(2)];
        let bb = &lb[..lb.len().saturating_sub(2)];
        let nb = ba.len().max(bb.len());
        let mut batch = vec![0; nb];
        for (d, slot) in batch.iter_mut().enumerate() {
            let x = (d + ba.len()).checked_sub(nb).map_or(1, |i| ba[i]);
            let y = (d + bb.len()).checked_sub(nb).map_or(1, |i| bb[i]);
            *slot = match (x, y) {
                _ if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => return Err(bad()),
            };
        }
        // Element strides of each operand's batch axes (contiguous storage), 0 where it broadcasts.
        let strides = |own: &[usize], mat: usize| -> Vec<usize> {
            let mut s = vec![0; nb];
            let mut step = mat;
            for (i, &d) in own.iter().enumerate().rev() {
                let o = nb - own.len() + i;
                s[o] = if d == 1 && batch[o] != 1 { 0 } else { step };
                step *= d;
            }
            s
        };
        let a_batch = strides(ba, m * k);
        let b_batch = strides(bb, k * n);
        // a[i, p] lies at i * k + p (stored [m, k]) or p * m + i (stored [k, m]).
        let (a_rs, a_cs) = if trans_a { (1, m) } else { (k, 1) };
        let (b_rs, b_cs) = if trans_b { (1, k) } else { (n, 1) };
        let mut out_shape: Shape = batch.iter().copied().collect();
        if la.len() >= 2 {
            out_shape.push(m);
        }
        if lb.len() >= 2 {
            out_shape.push(n);
        }
        Ok(Geometry {
            m,
            k,
            n,
            batch,
            a_batch,
            b_batch,
            a_rs,
            a_cs,
            b_rs,
            b_cs,
            out_shape,
        })
    }

    /// The geometry of a call the front end checked.
    pub fn of_call(call: &IntrinsicCall) -> Geometry {
        let (ta, tb) = flags(&call.op);
        Geometry::of(&call.in_shapes[0], &call.in_shapes[1], ta, tb)
            .expect("a matmul call the front end checked")
    }

    /// Products in the batch.
    pub fn batches(&self) -> usize {
        self.batch.iter().product()
    }

    /// Element offsets of `a`'s and `b`'s matrices of batch item `t` (row-major over the batch).
    pub fn offsets(&self, mut t: usize) -> (usize, usize) {
        let (mut oa, mut ob) = (0, 0);
        for d in (0..self.batch.len()).rev() {
            let i = t % self.batch[d];
            t /= self.batch[d];
            oa += i * self.a_batch[d];
            ob += i * self.b_batch[d];
        }
        (oa, ob)
    }

    /// Element index of `a[i, p]` and `b[p, j]` of batch item `t`'s offsets.
    fn a_at(&self, oa: usize, i: usize, p: usize) -> usize {
        oa + i * self.a_rs + p * self.a_cs
    }
    fn b_at(&self, ob: usize, p: usize, j: usize) -> usize {
        ob + p * self.b_rs + j * self.b_cs
    }

    /// For each output element (row-major), `f(a index, b index)` summed over `p`.
    fn each<R>(&self, mut f: impl FnMut(&mut dyn Iterator<Item = (usize, usize)>) -> R) -> Vec<R> {
        let mut out = Vec::with_capacity(self.batches() * self.m * self.n);
        for t in 0..self.batches() {
            let (oa, ob) = self.offsets(t);
            for i in 0..self.m {
                for j in 0..self.n {
                    let mut it = (0..self.k).map(|p| (self.a_at(oa, i, p), self.b_at(ob, p, j)));
                    out.push(f(&mut it));
                }
            }
        }
        out
    }
}

/// The output tile one GPU work-group of 256 threads computes and the step along `k`: each
/// thread accumulates a `(bm / 16) x (bn / 16)` block of the tile in registers, as `4 x 4`
/// blocks 64 rows / columns apart (so local-memory reads are 4-wide and conflict-free), and the
/// work-group stages `bk x bm` of `a` (k-major) and `bk x bn` of `b` in local memory, twice
/// (double buffered: the next step's slices are loaded while this one's are used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub bm: usize,
    pub bn: usize,
    pub bk: usize,
}

/// The tile of large products: 128 x 128, steps of 8 (an 8 x 8 block per thread).
pub const LARGE_TILE: Tile = Tile {
    bm: 128,
    bn: 128,
    bk: 8,
};
/// The tile of small, skinny or batched-small products (and f64): 64 x 64, steps of 16.
pub const SMALL_TILE: Tile = Tile {
    bm: 64,
    bn: 64,
    bk: 16,
};
/// Large tiles only when the product has at least this many of them (fewer leave a large GPU's
/// compute units idle: there the 64 x 64 tile's four times as many work-groups run faster).
const LARGE_MIN_GROUPS: usize = 96;

impl Tile {
    /// The tile for a call of `g` on elements of `size` bytes.
    pub fn choose(g: &Geometry, size: usize) -> Tile {
        let large = g.batches() * g.m.div_ceil(128) * g.n.div_ceil(128);
        if size <= 4 && g.m >= 128 && g.n >= 128 && large >= LARGE_MIN_GROUPS {
            LARGE_TILE
        } else {
            SMALL_TILE
        }
    }
    /// Output tiles of one matrix.
    pub fn tiles(&self, g: &Geometry) -> usize {
        g.m.div_ceil(self.bm) * g.n.div_ceil(self.bn)
    }
}

/// A GPU call's split of `k` (see [`matmul_split`]): `(parts, chunk)`, one part when unsplit. The
/// whole batch counts towards the tiles that keep the device busy.
pub fn gpu_split(g: &Geometry) -> (usize, Option<(usize, usize)>) {
    let split = matmul_split(g.batches() * g.m, g.n, g.k);
    (split.map_or(1, |s| s.0), split)
}

/// The call's transpose flags `(trans_a, trans_b)`.
pub fn flags(op: &Intrinsic) -> (bool, bool) {
    match op {
        Intrinsic::Matmul { trans_a, trans_b } => (*trans_a, *trans_b),
        _ => (false, false),
    }
}

impl IntrinsicDef for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn spelling(&self, op: &Intrinsic, args: &[String], shapes: &[&[usize]]) -> Option<String> {
        let (ta, tb) = flags(op);
        // A transposed operand is stored with its last two axes swapped.
        let operand = |v: &String, shape: &[usize], trans: bool| {
            let r = shape.len();
            if trans && r >= 2 {
                let mut perm: Vec<usize> = (0..r).collect();
                perm.swap(r - 1, r - 2);
                format!("{v}.permute(&{perm:?})")
            } else {
                v.clone()
            }
        };
        Some(format!(
            "{}.matmul(&{})",
            operand(&args[0], shapes[0], ta),
            operand(&args[1], shapes[1], tb)
        ))
    }

    fn check(&self, op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let (a, b) = (inputs[0], inputs[1]);
        let (ta, tb) = flags(op);
        if a.dtype != b.dtype || a.dtype == DType::Bool {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "matmul of {} and {}: both must be the same number type (f32, f64, i32 or u32)",
                    a.dtype, b.dtype
                ),
            )
            .at(site));
        }
        let g = Geometry::of(a.shape, b.shape, ta, tb).map_err(|msg| {
            Error::new(ErrorKind::Shape, msg).at(site).hint(
                "matmul takes [.., m, k] and [.., k, n] (a 1-D operand is a row or a column of k; \
                 leading axes broadcast)",
            )
        })?;
        Ok(vec![Output {
            shape: g.out_shape,
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        let (ta, tb) = flags(op);
        w.push(ta as u64 | (tb as u64) << 1);
    }

    /// Each element a dot product in order of `k`: floats accumulated in f64, integers exactly
    /// (wrapping to 32 bits).
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let ((a, sa), (b, sb)) = (inputs[0], inputs[1]);
        let (ta, tb) = flags(op);
        let g = Geometry::of(sa, sb, ta, tb)?;
        let dtype = outputs[0].dtype;
        let vals: Vec<Scalar> = if dtype.is_float() {
            g.each(|it| Scalar::F64(it.map(|(x, y)| a.get(x).as_f64() * b.get(y).as_f64()).sum()))
        } else {
            g.each(|it| {
                let s = it.fold(0i64, |s, (x, y)| {
                    s.wrapping_add(
                        (a.get(x).as_f64() as i64).wrapping_mul(b.get(y).as_f64() as i64),
                    )
                });
                match dtype {
                    DType::I32 => Scalar::I32(s as i32),
                    _ => Scalar::U32(s as u32),
                }
            })
        };
        Ok(vec![collect(dtype, vals.len(), |i| vals[i])])
    }

    /// `sum_p max(|a_ip|, m_ip) * max(|b_pj|, m_pj)`: the matrix product's rounding scales with
    /// its products' sizes.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        _out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let (ta, tb) = flags(op);
        let Ok(g) = Geometry::of(a.shape, b.shape, ta, tb) else {
            return (0..result.len())
                .map(|i| result.get(i).as_f64().abs())
                .collect();
        };
        let size = |x: &MagInput, i: usize| x.value.get(i).as_f64().abs().max(x.magnitude[i]);
        g.each(|it| it.map(|(x, y)| size(a, x) * size(b, y)).sum())
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        let g = Geometry::of_call(call);
        let el = call.dtype.size() as u64;
        let (m, k, n) = (g.m as u64, g.k as u64, g.n as u64);
        Cost {
            flops: 2 * g.batches() as u64 * m * n * k,
            bytes: (numel(&call.in_shapes[0]) + numel(&call.in_shapes[1]) + numel(&call.out_shape))
                * el,
        }
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(call, inputs, &mut outputs[0])
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(call, t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(call)
    }
}

/// How a GPU matrix product `c[m, n] = a[m, k] b[k, n]` splits its inner extent: a product with
/// few 64 x 64 output tiles and a long `k` (k-means' one-hot sums, the normal equations of a tall
/// matrix: 8 x 2,000,000 x 2) would leave all but a few compute units idle while one work-group
/// walks `k`. Split into `parts` ranges of `chunk` (a multiple of 16), each tile of each range is
/// a work-group writing partial sums; a second pass adds the parts in order. `None`: one pass.
pub fn matmul_split(m: usize, n: usize, k: usize) -> Option<(usize, usize)> {
    /// Work-groups worth filling a large GPU.
    const TARGET_GROUPS: usize = 512;
    /// Shortest range of `k` one work-group takes.
    const MIN_CHUNK: usize = 512;
    /// Longest range of `k` one work-group walks: lavapipe dropped every term past 58,255 of one
    /// long walk (issue 18), so no work-group walks more than this whatever the tiles.
    const MAX_CHUNK: usize = 16384;
    let tiles = m.div_ceil(64) * n.div_ceil(64);
    let few_tiles = tiles < TARGET_GROUPS / 4 && k >= 2 * MIN_CHUNK;
    if !few_tiles && k <= MAX_CHUNK {
        return None;
    }
    let wanted = if few_tiles {
        TARGET_GROUPS.div_ceil(tiles).min(k / MIN_CHUNK)
    } else {
        1
    };
    let parts = wanted.max(k.div_ceil(MAX_CHUNK)).max(2);
    let chunk = k.div_ceil(parts).next_multiple_of(16);
    Some((k.div_ceil(chunk), chunk))
}
