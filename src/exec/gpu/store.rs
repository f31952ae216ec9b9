//! A device executor's buffers: which buffers have a device copy, a host copy (the backing store:
//! uploaded data, values swapped out when memory ran short, results of programs that ran on the
//! CPU) or both; a pool of released device buffers (reused by exact size, the least recently
//! released dropped first when it outgrows its limit); and the memory budget. Values are never
//! lost: a buffer leaves the device only after its host copy exists.

use super::super::{BufferId, TypedVec};
use crate::ir::DType;
use ahash::AHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Bytes of released device buffers kept for reuse.
const POOL_LIMIT: u64 = 1 << 30;

/// A size in bytes, with an optional K, M or G suffix.
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.chars().last() {
        Some('K' | 'k') => (&v[..v.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&v[..v.len() - 1], 1 << 20),
        Some('G' | 'g') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

struct Slot<B> {
    dev: Option<(B, u64)>,
    host: Option<Arc<TypedVec>>,
    dtype: DType,
    len: usize,
    last_use: u64,
}

pub struct Store<B> {
    slots: AHashMap<BufferId, Slot<B>>,
    /// Released buffers by size, each with its release number, least recently released first.
    pool: AHashMap<u64, VecDeque<(u64, B)>>,
    /// Release number → size of every pooled buffer: the order in which they are dropped.
    released: BTreeMap<u64, u64>,
    releases: u64,
    pool_bytes: u64,
    /// Device bytes held (buffers and pool).
    used: u64,
    limit: u64,
    clock: u64,
}

impl<B> Store<B> {
    pub fn new(limit: u64) -> Self {
        Store {
            slots: AHashMap::new(),
            pool: AHashMap::new(),
            released: BTreeMap::new(),
            releases: 0,
            pool_bytes: 0,
            used: 0,
            limit,
            clock: 0,
        }
    }

    fn slot(&mut self, buf: BufferId, dtype: DType, len: usize) -> &mut Slot<B> {
        self.clock += 1;
        let clock = self.clock;
        let s = self.slots.entry(buf).or_insert_with(|| Slot {
            dev: None,
            host: None,
            dtype,
            len,
            last_use: clock,
        });
        s.last_use = clock;
        s
    }

    /// `buf`'s value as host data (kept; the device copy, if any, holds the same value).
    pub fn insert_host(&mut self, buf: BufferId, data: Arc<TypedVec>) {
        let s = self.slot(buf, data.dtype(), data.len());
        s.host = Some(data);
    }

    /// `buf`'s value is in device buffer `b` of `bytes`.
    pub fn set_device(&mut self, buf: BufferId, b: B, bytes: u64, dtype: DType, len: usize) {
        let old = self.slot(buf, dtype, len).dev.replace((b, bytes));
        if let Some((old, bytes)) = old {
            self.pool(old, bytes);
        }
    }

    pub fn host(&self, buf: BufferId) -> Option<Arc<TypedVec>> {
        self.slots.get(&buf).and_then(|s| s.host.clone())
    }
    pub fn device(&self, buf: BufferId) -> Option<&B> {
        self.slots
            .get(&buf)
            .and_then(|s| s.dev.as_ref().map(|d| &d.0))
    }
    pub fn shape(&self, buf: BufferId) -> Option<(DType, usize)> {
        self.slots.get(&buf).map(|s| (s.dtype, s.len))
    }
    pub fn touch(&mut self, buf: BufferId) {
        self.clock += 1;
        if let Some(s) = self.slots.get_mut(&buf) {
            s.last_use = self.clock;
        }
    }

    /// The buffer is released: its device memory goes to the pool.
    pub fn free(&mut self, buf: BufferId) {
        if let Some(Slot {
            dev: Some((b, bytes)),
            ..
        }) = self.slots.remove(&buf)
        {
            self.pool(b, bytes);
        }
    }

    /// Keeps released buffer `b` of `bytes` for reuse; the least recently released buffers are
    /// dropped while the pool holds more than its limit (a buffer over the limit is dropped).
    pub fn pool(&mut self, b: B, bytes: u64) {
        if bytes > POOL_LIMIT {
            self.used -= bytes;
            return;
        }
        self.releases += 1;
        self.pool
            .entry(bytes)
            .or_default()
            .push_back((self.releases, b));
        self.released.insert(self.releases, bytes);
        self.pool_bytes += bytes;
        while self.pool_bytes > POOL_LIMIT {
            let (release, old) = self
                .released
                .pop_first()
                .expect("pool_bytes counts the pool");
            // The oldest release overall is the oldest of its size.
            let dropped = self.pool.get_mut(&old).and_then(VecDeque::pop_front);
            debug_assert_eq!(dropped.map(|d| d.0), Some(release));
            self.pool_bytes -= old;
            self.used -= old;
        }
    }

    /// The most recently released buffer of exactly `bytes`.
    pub fn take_pooled(&mut self, bytes: u64) -> Option<B> {
        let (release, b) = self.pool.get_mut(&bytes)?.pop_back()?;
        self.released.remove(&release);
        self.pool_bytes -= bytes;
        Some(b)
    }

    pub fn fits(&self, bytes: u64) -> bool {
        self.used.saturating_add(bytes) <= self.limit
    }
    pub fn allocated(&mut self, bytes: u64) {
        self.used += bytes;
    }

    /// Releases every pooled buffer; whether there were any.
    pub fn drop_pool(&mut self) -> bool {
        if self.pool_bytes == 0 {
            return false;
        }
        self.used -= self.pool_bytes;
        self.pool_bytes = 0;
        self.pool.clear();
        self.released.clear();
        true
    }

    /// The least recently used buffer with a device copy, not in `keep`.
    pub fn victim(&self, keep: &[BufferId]) -> Option<BufferId> {
        self.slots
            .iter()
            .filter(|(b, s)| s.dev.is_some() && !keep.contains(b))
            .min_by_key(|(_, s)| s.last_use)
            .map(|(b, _)| *b)
    }

    /// Drops the device copy (the caller made sure a host copy exists).
    pub fn drop_device(&mut self, buf: BufferId) {
        if let Some(s) = self.slots.get_mut(&buf)
            && let Some((_, bytes)) = s.dev.take()
        {
            self.used -= bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store holding `bufs` (name, bytes) allocated in order and then released in order.
    fn released(bufs: &[(u32, u64)]) -> Store<u32> {
        let mut st = Store::new(u64::MAX);
        for &(b, n) in bufs {
            st.allocated(n);
            st.pool(b, n);
        }
        st
    }

    #[test]
    fn the_pool_reuses_by_exact_size_most_recent_first() {
        let mut st = released(&[(1, 100), (2, 200), (3, 100)]);
        assert_eq!(st.take_pooled(100), Some(3));
        assert_eq!(st.take_pooled(100), Some(1));
        assert_eq!(st.take_pooled(100), None);
        assert_eq!(st.take_pooled(150), None);
        assert_eq!(st.take_pooled(200), Some(2));
        assert_eq!(st.pool_bytes, 0);
        // Taken buffers are still held.
        assert_eq!(st.used, 400);
    }

    /// Buffers of a size no longer used do not keep newer ones out: the least recently
    /// released go first, and their bytes leave the budget.
    #[test]
    fn a_full_pool_drops_its_least_recently_released_buffers() {
        let big = POOL_LIMIT / 2;
        let mut st = released(&[(1, big), (2, big)]);
        assert_eq!(st.pool_bytes, POOL_LIMIT);
        st.allocated(4096);
        st.pool(3, 4096);
        assert_eq!(st.take_pooled(big), Some(2));
        assert_eq!(st.take_pooled(big), None);
        assert_eq!(st.take_pooled(4096), Some(3));
        assert_eq!(st.used, big + 4096);
        // One buffer over the limit is not kept at all.
        st.allocated(POOL_LIMIT + 1);
        st.pool(4, POOL_LIMIT + 1);
        assert_eq!(st.take_pooled(POOL_LIMIT + 1), None);
        assert_eq!(st.used, big + 4096);
        assert!(!st.drop_pool(), "the pool is empty");
    }
}
