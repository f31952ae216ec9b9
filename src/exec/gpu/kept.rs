//! Tables a device executor keeps between launches (`GpuPlan::kept`: Bluestein's transformed
//! chirp filter): the device buffer holding each, by its key, least recently used dropped first,
//! and which scratch buffers a launch that finds its table kept need not allocate.

use crate::proggen::codegen::gpu::{BufArg, GpuPlan, Kept};

/// Tables kept at most.
const MAX_TABLES: usize = 16;
/// Bytes of tables kept at most (the least recently used go first beyond).
const MAX_BYTES: u64 = 256 << 20;

/// The kept tables of one executor (so of one device), each a buffer and its bytes.
pub struct KeptTables<B> {
    tables: lru::LruCache<String, (B, u64)>,
    bytes: u64,
}

impl<B> KeptTables<B> {
    pub fn new() -> Self {
        KeptTables {
            tables: lru::LruCache::unbounded(),
            bytes: 0,
        }
    }

    /// Takes the table kept under `key` (the launch binding it holds it until [`Self::put`]).
    pub fn take(&mut self, key: &str) -> Option<(B, u64)> {
        let t = self.tables.pop(key)?;
        self.bytes -= t.1;
        Some(t)
    }

    /// Keeps `buf` as the table of `key`; returns the tables dropped to make room (the caller
    /// pools their buffers: work enqueued before still reads them in queue order).
    pub fn put(&mut self, key: &str, buf: B, bytes: u64) -> Vec<(B, u64)> {
        let mut dropped = Vec::new();
        if let Some(old) = self.tables.put(key.to_string(), (buf, bytes)) {
            self.bytes -= old.1;
            dropped.push(old);
        }
        self.bytes += bytes;
        while (self.tables.len() > MAX_TABLES || self.bytes > MAX_BYTES) && self.tables.len() > 1 {
            let Some((_, t)) = self.tables.pop_lru() else {
                break;
            };
            self.bytes -= t.1;
            dropped.push(t);
        }
        dropped
    }

    /// Drops every table (device memory runs short); their buffers.
    pub fn drain(&mut self) -> Vec<(B, u64)> {
        self.bytes = 0;
        std::iter::from_fn(|| self.tables.pop_lru().map(|(_, t)| t)).collect()
    }
}

/// The scratch buffers of `plan` a launch that binds its kept table does not allocate: the
/// table's own (it binds the kept one) and those only the table's passes use.
pub fn spared(plan: &GpuPlan, k: &Kept) -> Vec<bool> {
    let uses = |passes: &[crate::proggen::codegen::gpu::Pass], i: u32| {
        passes
            .iter()
            .any(|p| p.buffers.contains(&BufArg::Scratch(i)))
    };
    let (table, rest) = plan
        .passes
        .split_at((k.passes as usize).min(plan.passes.len()));
    (0..plan.scratch.len() as u32)
        .map(|i| i == k.scratch || (uses(table, i) && !uses(rest, i)))
        .collect()
}
