//! Host values: a typed vector of elements (the storage of one buffer in host memory, a reference
//! value in comparison mode, an intrinsic's input on the CPU).

use super::{DType, Scalar, contiguous_strides};

/// A typed vector of elements: the storage of one buffer in host memory.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedVec {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    Bool(Vec<bool>),
    C64(Vec<num_complex::Complex<f32>>),
    C128(Vec<num_complex::Complex<f64>>),
}

/// Runs `$body` with `$v` bound to the inner `Vec` whatever its element type.
#[macro_export]
#[doc(hidden)]
macro_rules! with_typed_vec {
    ($tv:expr, $v:ident => $body:expr) => {
        match $tv {
            $crate::ir::TypedVec::F32($v) => $body,
            $crate::ir::TypedVec::F64($v) => $body,
            $crate::ir::TypedVec::I32($v) => $body,
            $crate::ir::TypedVec::U32($v) => $body,
            $crate::ir::TypedVec::Bool($v) => $body,
            $crate::ir::TypedVec::C64($v) => $body,
            $crate::ir::TypedVec::C128($v) => $body,
        }
    };
}

impl TypedVec {
    pub fn dtype(&self) -> DType {
        match self {
            TypedVec::F32(_) => DType::F32,
            TypedVec::F64(_) => DType::F64,
            TypedVec::I32(_) => DType::I32,
            TypedVec::U32(_) => DType::U32,
            TypedVec::Bool(_) => DType::Bool,
            TypedVec::C64(_) => DType::C64,
            TypedVec::C128(_) => DType::C128,
        }
    }
    pub fn len(&self) -> usize {
        with_typed_vec!(self, v => v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype().size()
    }
    /// Element `i` as a scalar.
    pub fn get(&self, i: usize) -> Scalar {
        match self {
            TypedVec::F32(v) => Scalar::F32(v[i]),
            TypedVec::F64(v) => Scalar::F64(v[i]),
            TypedVec::I32(v) => Scalar::I32(v[i]),
            TypedVec::U32(v) => Scalar::U32(v[i]),
            TypedVec::Bool(v) => Scalar::Bool(v[i]),
            TypedVec::C64(v) => Scalar::C64(v[i]),
            TypedVec::C128(v) => Scalar::C128(v[i]),
        }
    }
}

/// The multi-index of `lin` in `shape`.
pub fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        if shape[k] > 0 {
            idx[k] = lin % shape[k];
            lin /= shape[k];
        }
    }
    idx
}

/// For each element of `shape` in row-major order, the linear index in a `from`-shaped buffer of
/// the multi-index `map` writes into its second argument from the element's multi-index (the
/// first). One pass with a running multi-index, no allocation per element: the reference
/// interpreter's views and reductions gather through it.
pub fn source_indices(
    shape: &[usize],
    from: &[usize],
    mut map: impl FnMut(&[usize], &mut [usize]),
) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let strides = contiguous_strides(from);
    let mut idx = vec![0usize; shape.len()];
    let mut src = vec![0usize; from.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        map(&idx, &mut src);
        out.push(src.iter().zip(strides.iter()).map(|(i, s)| i * s).sum());
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// The linear index of multi-index `idx` in `shape` (row-major).
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter()
        .zip(contiguous_strides(shape).iter())
        .map(|(i, s)| i * s)
        .sum()
}

/// Builds a vector of `dtype` from scalars (converted with the cast rules).
pub fn collect(dtype: DType, n: usize, f: impl Fn(usize) -> Scalar) -> TypedVec {
    macro_rules! go {
        ($v:ident, $t:ty) => {
            TypedVec::$v(
                (0..n)
                    .map(|i| match f(i).cast(DType::$v) {
                        Scalar::$v(x) => x,
                        _ => unreachable!(),
                    })
                    .collect::<Vec<$t>>(),
            )
        };
    }
    match dtype {
        DType::F32 => go!(F32, f32),
        DType::F64 => go!(F64, f64),
        DType::I32 => go!(I32, i32),
        DType::U32 => go!(U32, u32),
        DType::Bool => go!(Bool, bool),
        DType::C64 => go!(C64, num_complex::Complex<f32>),
        DType::C128 => go!(C128, num_complex::Complex<f64>),
    }
}
