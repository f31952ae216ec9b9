//! The materialised transpose of the last two axes: never recorded by the front end (a
//! transpose is a view that fuses), but a fused kernel that only copies a batch of matrices
//! transposed ([`as_transpose`]) runs on a GPU as this intrinsic, a tiled transpose through local
//! memory (coalesced reads and writes) instead of the fused kernel's strided load. Its call reads
//! input 0 from element `offset` on (`Intrinsic::Transpose { offset }`; the buffer may be
//! longer, a view of whole rows) as `[batch, rows, cols]` and writes `[batch, cols, rows]`.
//! Kernels: `cpu.rs` (a plain copy, for the registry's tests and a future CPU pattern),
//! `opencl.rs`, `wgsl.rs` (32 x 32 tiles).

mod cpu;
mod opencl;
mod wgsl;

use super::{Cost, IntrinsicDef, Operand, Output};
use super::{MagInput, moved_by};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::TypedVec;
use crate::ir::collect;
use crate::ir::{DType, Intrinsic, Site};
use crate::proggen::codegen::gpu::{GpuPlan, Target, Unsupported};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr, Store};
use crate::proggen::sequence::IntrinsicCall;

/// The transpose's definition.
pub struct Transpose;

impl IntrinsicDef for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }

    fn check(&self, _op: &Intrinsic, inputs: &[Operand], site: Site) -> Result<Vec<Output>> {
        let a = inputs[0];
        if inputs.len() != 1 || a.shape.len() != 3 {
            return Err(Error::new(
                ErrorKind::Shape,
                format!("transpose of shape {:?}", a.shape),
            )
            .at(site)
            .hint("the transpose intrinsic takes one [batch, rows, cols] array"));
        }
        Ok(vec![Output {
            shape: smallvec::smallvec![a.shape[0], a.shape[2], a.shape[1]],
            dtype: a.dtype,
        }])
    }

    fn key_words(&self, op: &Intrinsic, w: &mut Vec<u64>) {
        w.push(offset_of(op) as u64);
    }

    /// `out[b, j, i] = in[offset + (b * rows + i) * cols + j]`, element by element.
    fn reference(
        &self,
        op: &Intrinsic,
        inputs: &[(&TypedVec, &[usize])],
        outputs: &[Output],
    ) -> std::result::Result<Vec<TypedVec>, String> {
        let offset = offset_of(op);
        let (v, from) = inputs[0];
        let (rows, cols) = (from[1], from[2]);
        let len = outputs[0].shape.iter().product();
        Ok(vec![collect(outputs[0].dtype, len, |o| {
            let (b, j, i) = (o / (rows * cols), (o / rows) % cols, o % rows);
            v.get(offset + (b * rows + i) * cols + j)
        })])
    }

    /// The magnitudes move with the data.
    fn magnitudes(
        &self,
        op: &Intrinsic,
        out: &Output,
        inputs: &[MagInput],
        result: &TypedVec,
    ) -> Vec<f64> {
        let m = TypedVec::F64(inputs[0].magnitude.to_vec());
        moved_by(op, out, &[(&m, inputs[0].shape)], result)
    }

    fn moves_data(&self) -> bool {
        true
    }

    fn cost(&self, call: &IntrinsicCall) -> Cost {
        Cost::copy(call)
    }

    fn cpu(
        &self,
        call: &IntrinsicCall,
        inputs: &[&TypedVec],
        outputs: &mut [TypedVec],
    ) -> std::result::Result<(), Error> {
        cpu::run(&TransposeShape::of_call(call), inputs[0], &mut outputs[0]);
        Ok(())
    }

    fn opencl(&self, call: &IntrinsicCall, t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        opencl::render(&TransposeShape::of_call(call), t)
    }

    fn wgsl(&self, call: &IntrinsicCall, _t: Target) -> std::result::Result<GpuPlan, Unsupported> {
        wgsl::render(&TransposeShape::of_call(call))
    }

    fn recognise(&self, k: &FusedKernel) -> Option<IntrinsicCall> {
        as_transpose(k).map(|s| s.call())
    }
}

fn offset_of(op: &Intrinsic) -> usize {
    match op {
        Intrinsic::Transpose { offset } => *offset,
        _ => unreachable!("transpose's definition called for {op:?}"),
    }
}

/// A batch of row-major matrices transposed: the input holds `batch` contiguous `rows x cols`
/// matrices starting at element `offset`; the output holds `batch` contiguous `cols x rows`
/// matrices from element 0, with `out[b, j, i] = in[offset + (b * rows + i) * cols + j]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransposeShape {
    /// Product of the leading (batch) axes; 1 for a plain 2-D transpose.
    pub batch: usize,
    /// Rows of each input matrix (columns of each output matrix).
    pub rows: usize,
    /// Columns of each input matrix (rows of each output matrix).
    pub cols: usize,
    pub dtype: DType,
    /// First element read in the input (a view into a larger buffer, e.g. a slice of whole rows).
    pub offset: usize,
}

impl TransposeShape {
    /// Elements read and written.
    pub fn len(&self) -> usize {
        self.batch * self.rows * self.cols
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The intrinsic call that computes this transpose.
    pub fn call(&self) -> IntrinsicCall {
        IntrinsicCall {
            op: Intrinsic::Transpose {
                offset: self.offset,
            },
            in_shapes: vec![smallvec::smallvec![self.batch, self.rows, self.cols]],
            in_dtypes: vec![self.dtype],
            out_shape: smallvec::smallvec![self.batch, self.cols, self.rows],
            dtype: self.dtype,
        }
    }
    /// The transpose a call of the intrinsic computes (the inverse of [`TransposeShape::call`]).
    pub fn of_call(call: &IntrinsicCall) -> TransposeShape {
        let s = &call.in_shapes[0];
        TransposeShape {
            batch: s[0],
            rows: s[1],
            cols: s[2],
            dtype: call.dtype,
            offset: offset_of(&call.op),
        }
    }
}

/// `Some` when `k` is exactly a copy of one input, transposed in its last two axes: element-wise
/// (no reductions), no parameters, one input and one output of the same type, a single
/// instruction — a `Load` whose map is `Strided` with a non-negative offset, stride 1 along the
/// domain's second-to-last axis, stride `cols` along its last axis and the contiguous strides of
/// `batch` stacked `rows x cols` matrices along the leading axes (any stride where such an axis
/// has extent 1) — and one store of that register to the output. Both transposed extents must be
/// at least 2 (with a unit extent the copy is already contiguous) and the domain non-empty.
/// Anything else (a cast, a second use of the value, a broadcast, a negative or other strides)
/// is `None`.
pub fn as_transpose(k: &FusedKernel) -> Option<TransposeShape> {
    if !k.reductions.is_empty()
        || k.domain.inner != 1
        || !k.params.is_empty()
        || k.inputs.len() != 1
        || k.outputs.len() != 1
        || k.instrs.len() != 1
        || k.inputs[0] != k.outputs[0]
    {
        return None;
    }
    let Instr::Load {
        dst,
        input: 0,
        map: IndexMap::Strided { offset, strides },
    } = &k.instrs[0]
    else {
        return None;
    };
    if k.stores.as_slice()
        != [Store {
            reg: *dst,
            output: 0,
        }]
        || k.reg_dtypes.get(*dst as usize) != Some(&k.inputs[0])
    {
        return None;
    }
    let shape = &k.domain.shape;
    let nd = shape.len();
    if nd < 2 || strides.len() != nd || *offset < 0 {
        return None;
    }
    // The domain is the output's shape: [..batch, cols, rows].
    let (cols, rows) = (shape[nd - 2], shape[nd - 1]);
    if rows < 2 || cols < 2 || strides[nd - 2] != 1 || strides[nd - 1] != cols as isize {
        return None;
    }
    let mut step = rows.checked_mul(cols)?;
    for d in (0..nd - 2).rev() {
        if shape[d] != 1 && strides[d] != isize::try_from(step).ok()? {
            return None;
        }
        step = step.checked_mul(shape[d])?;
    }
    let batch: usize = shape[..nd - 2].iter().product();
    if batch == 0 {
        return None;
    }
    Some(TransposeShape {
        batch,
        rows,
        cols,
        dtype: k.inputs[0],
        offset: *offset as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinaryOp, Shape};
    use crate::proggen::kernel::{Domain, ParamKind, ReduceStore};
    use smallvec::SmallVec;

    /// A kernel over `shape` loading input 0 through `map` and storing the value to output 0.
    fn copy(shape: &[usize], d: DType, map: IndexMap) -> FusedKernel {
        let len = shape.iter().product();
        FusedKernel {
            domain: Domain {
                shape: Shape::from_slice(shape),
                inner: 1,
                outer: len,
                perm: None,
            },
            inputs: vec![d],
            outputs: vec![d],
            instrs: vec![Instr::Load {
                dst: 0,
                input: 0,
                map,
            }],
            instr_sites: vec![std::panic::Location::caller()],
            stores: vec![Store { reg: 0, output: 0 }],
            reductions: Vec::new(),
            reg_dtypes: vec![d],
            params: Vec::new(),
            traps: Vec::new(),
        }
    }

    fn strided(offset: isize, strides: &[isize]) -> IndexMap {
        IndexMap::Strided {
            offset,
            strides: SmallVec::from_slice(strides),
        }
    }

    #[test]
    fn plain_transposes_are_recognised() {
        // A 31 x 33 input transposed: the domain is the 33 x 31 output.
        let k = copy(&[33, 31], DType::F32, strided(0, &[1, 33]));
        assert_eq!(
            as_transpose(&k),
            Some(TransposeShape {
                batch: 1,
                rows: 31,
                cols: 33,
                dtype: DType::F32,
                offset: 0
            })
        );
        for d in [DType::F64, DType::I32, DType::U32, DType::Bool] {
            let k = copy(&[2, 5], d, strided(0, &[1, 2]));
            let t = as_transpose(&k).unwrap();
            assert_eq!((t.rows, t.cols, t.dtype, t.len()), (5, 2, d, 10));
        }
    }

    #[test]
    fn batches_and_offsets_are_recognised() {
        // 3 x 70 x 45 permuted (0, 2, 1).
        let k = copy(&[3, 45, 70], DType::I32, strided(0, &[3150, 1, 45]));
        let t = as_transpose(&k).unwrap();
        assert_eq!((t.batch, t.rows, t.cols, t.offset), (3, 70, 45, 0));
        // Two batch axes, one of extent 1 with an arbitrary stride.
        let k = copy(&[2, 1, 4, 3], DType::U32, strided(0, &[12, 999, 1, 4]));
        let t = as_transpose(&k).unwrap();
        assert_eq!((t.batch, t.rows, t.cols), (2, 3, 4));
        // Rows 1..3 of a 3 x 4 matrix, transposed.
        let k = copy(&[4, 2], DType::F32, strided(4, &[1, 4]));
        let t = as_transpose(&k).unwrap();
        assert_eq!((t.batch, t.rows, t.cols, t.offset), (1, 2, 4, 4));
    }

    #[test]
    fn anything_else_is_rejected() {
        let none = |k: &FusedKernel| assert_eq!(as_transpose(k), None, "{}", k.describe());
        // Not a transpose: contiguous copies, other strides, other axes, unit extents.
        none(&copy(&[4, 5], DType::F32, IndexMap::Contiguous));
        none(&copy(&[4, 5], DType::F32, strided(0, &[5, 1])));
        none(&copy(&[4, 5], DType::F32, strided(0, &[1, 5])));
        none(&copy(&[4, 5], DType::F32, strided(0, &[2, 4])));
        none(&copy(&[4, 5], DType::F32, strided(0, &[1, 8])));
        none(&copy(&[4, 5], DType::F32, strided(-3, &[1, 4])));
        none(&copy(&[1, 5], DType::F32, strided(0, &[1, 1])));
        none(&copy(&[5, 1], DType::F32, strided(0, &[1, 5])));
        none(&copy(&[20], DType::F32, strided(0, &[1])));
        none(&copy(&[0, 4, 5], DType::F32, strided(0, &[20, 1, 4])));
        // Batch strides that are not the contiguous ones (a broadcast, a strided batch axis), and
        // permutations that move a batch axis.
        none(&copy(&[3, 4, 5], DType::F32, strided(0, &[0, 1, 4])));
        none(&copy(&[3, 4, 5], DType::F32, strided(0, &[40, 1, 4])));
        none(&copy(&[4, 3, 5], DType::F32, strided(0, &[1, 20, 4])));
        none(&copy(&[3, 4, 5], DType::F32, strided(0, &[1, 15, 3])));
        none(&copy(
            &[3, 4, 5],
            DType::F32,
            IndexMap::Folded { dims: Vec::new() },
        ));

        let base = copy(&[4, 5], DType::F32, strided(0, &[1, 4]));
        assert!(as_transpose(&base).is_some());
        // A cast on the way (a second instruction), or a converting store.
        let mut k = base.clone();
        k.instrs.push(Instr::Cast {
            dst: 1,
            to: DType::I32,
            a: 0,
        });
        k.instr_sites.push(k.instr_sites[0]);
        k.reg_dtypes.push(DType::I32);
        k.stores[0].reg = 1;
        k.outputs[0] = DType::I32;
        none(&k);
        let mut k = base.clone();
        k.outputs[0] = DType::I32;
        none(&k);
        // Arithmetic on the value.
        let mut k = base.clone();
        k.instrs.push(Instr::Binary {
            dst: 1,
            op: BinaryOp::Add,
            a: 0,
            b: 0,
        });
        k.instr_sites.push(k.instr_sites[0]);
        k.reg_dtypes.push(DType::F32);
        k.stores[0].reg = 1;
        none(&k);
        // Two stores, or a store of another register, or a second input.
        let mut k = base.clone();
        k.outputs.push(DType::F32);
        k.stores.push(Store { reg: 0, output: 1 });
        none(&k);
        let mut k = base.clone();
        k.stores[0].reg = 7;
        none(&k);
        let mut k = base.clone();
        k.inputs.push(DType::F32);
        none(&k);
        // A reduction or a parameter.
        let mut k = base.clone();
        k.stores.clear();
        k.reductions.push(ReduceStore {
            reg: 0,
            op: crate::ir::ReduceOp::Sum,
            output: 0,
        });
        none(&k);
        let mut k = base;
        k.params.push(ParamKind::Const(DType::F32));
        none(&k);
    }
}
