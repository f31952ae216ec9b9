//! Host buffers: typed element vectors, and the pool that reuses released ones.

use crate::ir::{DType, Scalar};
use lru::LruCache;

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
            $crate::exec::TypedVec::F32($v) => $body,
            $crate::exec::TypedVec::F64($v) => $body,
            $crate::exec::TypedVec::I32($v) => $body,
            $crate::exec::TypedVec::U32($v) => $body,
            $crate::exec::TypedVec::Bool($v) => $body,
        }
    };
}

impl TypedVec {
    /// A zero-filled vector.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        match dtype {
            DType::F32 => TypedVec::F32(super::host_memory::filled(len, 0.0)),
            DType::F64 => TypedVec::F64(super::host_memory::filled(len, 0.0)),
            DType::I32 => TypedVec::I32(super::host_memory::filled(len, 0)),
            DType::U32 => TypedVec::U32(super::host_memory::filled(len, 0)),
            DType::Bool => TypedVec::Bool(super::host_memory::filled(len, false)),
        }
    }
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

/// Released buffers kept for reuse, keyed by element type and length, least recently used evicted
/// first when the pool holds more than its byte limit.
pub struct BufferPool {
    free: LruCache<(DType, usize), Vec<TypedVec>>,
    bytes: usize,
    limit: usize,
}

impl BufferPool {
    pub fn new(limit: usize) -> Self {
        BufferPool {
            free: LruCache::unbounded(),
            bytes: 0,
            limit,
        }
    }

    /// A buffer of `len` elements: reused when one is free (`true`), else newly allocated.
    pub fn take(&mut self, dtype: DType, len: usize) -> (TypedVec, bool) {
        if let Some(list) = self.free.get_mut(&(dtype, len))
            && let Some(v) = list.pop()
        {
            self.bytes -= v.bytes();
            return (v, true);
        }
        (TypedVec::zeros(dtype, len), false)
    }

    pub fn give(&mut self, v: TypedVec) {
        let bytes = v.bytes();
        if bytes == 0 || bytes > self.limit {
            return;
        }
        self.bytes += bytes;
        self.free
            .get_or_insert_mut((v.dtype(), v.len()), Vec::new)
            .push(v);
        while self.bytes > self.limit {
            let Some((_, list)) = self.free.pop_lru() else {
                break;
            };
            self.bytes -= list.iter().map(TypedVec::bytes).sum::<usize>();
        }
    }
}
