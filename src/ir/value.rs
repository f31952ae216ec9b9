//! Host values: a typed vector of elements (the storage of one buffer in host memory, a reference
//! value in comparison mode, an intrinsic's input on the CPU).

use super::{DType, Scalar};

/// A typed vector of elements: the storage of one buffer in host memory.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedVec {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    Bool(Vec<bool>),
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
        }
    }
}
