//! The trace cache (the seed's 400, FIGS. 4A-4D): program sequences generated for a work queue,
//! found again by the queue's key. Buckets are indexed by the call site of the key's first entry;
//! each bucket holds a bounded number of entries (default 16), most recently used first, and a
//! global limit evicts the least recently used entry of any bucket. An entry stores the sequence
//! with its ports named relative to the key, so a hit re-instantiates it on the new ports without
//! calling the program generator.

use super::trace_key::TraceKey;
use crate::ir::NodeId;
use crate::proggen::Generated;
use crate::proggen::sequence::{FormalId, ProgramSequence};
use ahash::AHashMap;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::Arc;

/// A port relative to a key: an entry, or an external input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    Entry(u32),
    External(u32),
}

/// A cached program sequence with its bindings relative to the key.
pub struct CachedTrace {
    seq: Arc<ProgramSequence>,
    inputs: Vec<(FormalId, Port)>,
    stored: Vec<(FormalId, u32)>,
    processed: Vec<u32>,
    params: Vec<Vec<u32>>,
    eliminated: usize,
    recomputed: Vec<u32>,
    /// Each program's members (`Generated::members`), the nodes as entries of the key.
    members: Vec<Vec<Option<(u32, crate::proggen::kernel::IndexMap)>>>,
}

impl CachedTrace {
    /// The key-relative form of a generated sequence; `None` if a node is not in the key.
    pub fn from_generated(g: &Generated, key: &TraceKey) -> Option<CachedTrace> {
        let entry = |id: &NodeId| key.entry_of(*id);
        let port = |id: &NodeId| match (key.entry_of(*id), key.external_of(*id)) {
            (Some(e), _) => Some(Port::Entry(e)),
            (None, Some(x)) => Some(Port::External(x)),
            _ => None,
        };
        Some(CachedTrace {
            seq: g.sequence.clone(),
            inputs: g
                .inputs
                .iter()
                .map(|(f, id)| Some((*f, port(id)?)))
                .collect::<Option<_>>()?,
            stored: g
                .stored
                .iter()
                .map(|(f, id)| Some((*f, entry(id)?)))
                .collect::<Option<_>>()?,
            processed: g.processed.iter().map(entry).collect::<Option<_>>()?,
            params: g
                .params
                .iter()
                .map(|p| p.iter().map(entry).collect::<Option<_>>())
                .collect::<Option<_>>()?,
            eliminated: g.eliminated,
            recomputed: g.recomputed.iter().map(entry).collect::<Option<_>>()?,
            members: g
                .members
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|m| match m {
                            None => Some(None),
                            Some((id, map)) => Some(Some((entry(id)?, map.clone()))),
                        })
                        .collect::<Option<_>>()
                })
                .collect::<Option<_>>()?,
        })
    }

    /// The sequence bound to the nodes of `key` (which equals the key it was cached under).
    pub fn instantiate(&self, key: &TraceKey) -> Generated {
        let node = |p: Port| match p {
            Port::Entry(e) => key.entries[e as usize],
            Port::External(x) => key.externals[x as usize],
        };
        Generated {
            sequence: self.seq.clone(),
            inputs: self.inputs.iter().map(|&(f, p)| (f, node(p))).collect(),
            stored: self
                .stored
                .iter()
                .map(|&(f, e)| (f, key.entries[e as usize]))
                .collect(),
            processed: self
                .processed
                .iter()
                .map(|&e| key.entries[e as usize])
                .collect(),
            params: self
                .params
                .iter()
                .map(|p| p.iter().map(|&e| key.entries[e as usize]).collect())
                .collect(),
            eliminated: self.eliminated,
            recomputed: self
                .recomputed
                .iter()
                .map(|&e| key.entries[e as usize])
                .collect(),
            members: self
                .members
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|m| {
                            m.as_ref()
                                .map(|(e, map)| (key.entries[*e as usize], map.clone()))
                        })
                        .collect()
                })
                .collect(),
        }
    }
}

/// Counters of one cache, read into `Runtime::stats()`.
#[derive(Debug, Default, Clone, Copy)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    pub insertions: u64,
    pub evictions: u64,
    pub lookup_ns: u64,
}

type Entries = Vec<(Vec<u64>, Arc<CachedTrace>)>;

/// After this many misses in a row (no hit) at one call site, the site goes cold ...
const COLD_AFTER_MISSES: u32 = 64;
/// ... for this many flushes: no key is accumulated and nothing is looked up or inserted for
/// queues starting there. Then it is probed again.
const COLD_FLUSHES: u64 = 256;

#[derive(Default)]
struct SiteHistory {
    misses_in_row: u32,
    cold_until: u64,
}

pub struct TraceCache {
    buckets: AHashMap<u64, LruCache<u64, Entries>>,
    /// Per call site: recent misses, and until which flush it is cold.
    history: AHashMap<u64, SiteHistory>,
    /// Flushes seen (the clock of the cold periods).
    flushes: u64,
    /// Every cached entry by (bucket, key hash), least recently used first: the global limit.
    global: LruCache<(u64, u64), ()>,
    per_bucket: NonZeroUsize,
    hasher: ahash::RandomState,
    pub counts: CacheCounts,
}

impl TraceCache {
    pub fn new(per_bucket: usize, global: usize) -> TraceCache {
        TraceCache {
            buckets: AHashMap::new(),
            history: AHashMap::new(),
            flushes: 0,
            global: LruCache::new(NonZeroUsize::new(global.max(1)).unwrap()),
            per_bucket: NonZeroUsize::new(per_bucket.max(1)).unwrap(),
            hasher: ahash::RandomState::with_seeds(1, 2, 3, 4),
            counts: CacheCounts::default(),
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.global.len()
    }
    pub fn is_empty(&self) -> bool {
        self.global.is_empty()
    }
    /// Entries held now in the bucket of `site`.
    pub fn bucket_len(&self, site: u64) -> usize {
        self.buckets
            .get(&site)
            .map_or(0, |b| b.iter().map(|(_, v)| v.len()).sum())
    }

    /// Whether queues starting at `site` skip the cache for now (it has only missed lately).
    pub fn is_cold(&self, site: u64) -> bool {
        self.history
            .get(&site)
            .is_some_and(|h| self.flushes < h.cold_until)
    }

    /// Counts a flush (the clock of cold periods).
    pub fn tick(&mut self) {
        self.flushes += 1;
    }

    pub fn lookup(&mut self, site: u64, key: &[u64]) -> Option<Arc<CachedTrace>> {
        let start = std::time::Instant::now();
        let h = self.hasher.hash_one(key);
        let found = self
            .buckets
            .get_mut(&site)
            .and_then(|b| b.get(&h))
            .and_then(|list| {
                list.iter()
                    .find(|(k, _)| &**k == key)
                    .map(|(_, t)| t.clone())
            });
        let history = self.history.entry(site).or_default();
        if found.is_some() {
            self.global.get(&(site, h));
            self.counts.hits += 1;
            history.misses_in_row = 0;
        } else {
            self.counts.misses += 1;
            history.misses_in_row += 1;
            if history.misses_in_row >= COLD_AFTER_MISSES {
                history.misses_in_row = 0;
                history.cold_until = self.flushes + COLD_FLUSHES;
            }
        }
        self.counts.lookup_ns += start.elapsed().as_nanos() as u64;
        found
    }

    pub fn insert(&mut self, site: u64, key: Vec<u64>, trace: Arc<CachedTrace>) {
        let h = self.hasher.hash_one(&key[..]);
        let per_bucket = self.per_bucket;
        let bucket = self
            .buckets
            .entry(site)
            .or_insert_with(|| LruCache::new(per_bucket));
        if let Some(list) = bucket.get_mut(&h) {
            list.push((key, trace));
        } else if let Some((old, _)) = bucket.push(h, vec![(key, trace)])
            && old != h
        {
            // The bucket was full: its least recently used entry is gone.
            self.global.pop(&(site, old));
            self.counts.evictions += 1;
        }
        self.counts.insertions += 1;
        if let Some(((s, old), ())) = self.global.push((site, h), ())
            && (s, old) != (site, h)
        {
            if let Some(b) = self.buckets.get_mut(&s) {
                b.pop(&old);
            }
            self.counts.evictions += 1;
        }
    }

    pub fn clear(&mut self) {
        self.buckets.clear();
        self.global.clear();
        self.history.clear();
    }
}
