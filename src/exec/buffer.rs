//! Host buffers: the pool that reuses released typed vectors.

use crate::ir::{DType, TypedVec};
use lru::LruCache;

/// Allocation of host vectors (huge-page-backed when large) belongs to the executors.
impl TypedVec {
    /// A zero-filled vector.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        match dtype {
            DType::F32 => TypedVec::F32(super::host_memory::filled(len, 0.0)),
            DType::F64 => TypedVec::F64(super::host_memory::filled(len, 0.0)),
            DType::I32 => TypedVec::I32(super::host_memory::filled(len, 0)),
            DType::U32 => TypedVec::U32(super::host_memory::filled(len, 0)),
            DType::Bool => TypedVec::Bool(super::host_memory::filled(len, false)),
            DType::C64 => TypedVec::C64(super::host_memory::filled(len, Default::default())),
            DType::C128 => TypedVec::C128(super::host_memory::filled(len, Default::default())),
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
