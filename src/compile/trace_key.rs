//! The trace-cache key accumulator (the seed's FIG. 2I): one key entry appended per work-queue
//! entry as it is recorded. An entry holds the call site, the operation (with the data that
//! specialises code: shapes, types, axes; not the user's scalars, which are kernel parameters) and
//! its input ports renumbered relative to the key: an input computed in this key is named by its
//! entry, stored data by its order of first use with its kind, type and shape. Lazy nodes from an
//! earlier flush that the queue reads are pulled into the key with their structure, so two keys are
//! equal exactly when the program generator would produce the same program sequence for them.

use crate::ir::NodeTable;
use crate::ir::{GenKind, NodeId, Op, Site};
use ahash::AHashMap;

const COMPUTE: u64 = 1;
const LAZY: u64 = 2;
const EXTERNAL: u64 = 3;
const RELEASE: u64 = 4;
const HINT: u64 = 5;
const BLOCK_BEGIN: u64 = 6;
const BLOCK_END: u64 = 7;
const ENQUEUE: u64 = 8;
const POLICY: u64 = 9;

/// A reference to a port inside a key: an entry (computed in this key) or an external input.
const EXT_BIT: u64 = 1 << 63;

/// The key of the work queue's current contents, and the nodes its entries and externals stand for.
/// `finish` hands the key's words over (the accumulator is cleared after every flush).
#[derive(Default)]
pub struct TraceKey {
    pub words: Vec<u64>,
    /// Key entry → node: queued computes and the lazy nodes and leaves they pulled in.
    pub entries: Vec<NodeId>,
    index: AHashMap<NodeId, u32>,
    /// External inputs (stored data) in order of first use.
    pub externals: Vec<NodeId>,
    ext_index: AHashMap<NodeId, u32>,
    /// The call site of the first entry: the trace cache's bucket.
    pub first_site: Option<Site>,
    /// Nothing is accumulated for this queue (its first call site is cold in the trace cache).
    pub disabled: bool,
}

impl TraceKey {
    pub fn clear(&mut self) {
        self.words.clear();
        self.entries.clear();
        self.index.clear();
        self.externals.clear();
        self.ext_index.clear();
        self.first_site = None;
        self.disabled = false;
    }

    pub fn entry_of(&self, id: NodeId) -> Option<u32> {
        self.index.get(&id).copied()
    }
    pub fn external_of(&self, id: NodeId) -> Option<u32> {
        self.ext_index.get(&id).copied()
    }

    /// A queued compute entry.
    pub fn push_compute(&mut self, nodes: &NodeTable, id: NodeId, cold: impl FnOnce(Site) -> bool) {
        if self.disabled {
            return;
        }
        let site = nodes[&id].site;
        if self.first_site.is_none() {
            if cold(site) {
                self.disabled = true;
                return;
            }
            self.first_site = Some(site);
        }
        if let Some(e) = self.entry_of(id) {
            // A lazy node pulled in earlier, now queued because it is read.
            self.words.extend([ENQUEUE, e as u64]);
            return;
        }
        self.push_node(nodes, id, COMPUTE);
    }

    pub fn push_release(&mut self, nodes: &NodeTable, id: NodeId) {
        if self.disabled {
            return;
        }
        let r = self.reference(nodes, id);
        self.words.extend([RELEASE, r]);
    }
    pub fn push_hint(&mut self, nodes: &NodeTable, id: NodeId) {
        if self.disabled {
            return;
        }
        let r = self.reference(nodes, id);
        self.words.extend([HINT, r]);
    }
    pub fn push_block(&mut self, begin: bool) {
        if self.disabled {
            return;
        }
        self.words.push(if begin { BLOCK_BEGIN } else { BLOCK_END });
    }

    /// The complete key at flush time: the entries, then which of their nodes the application has
    /// released, then the flush's storing policy.
    pub fn finish(&mut self, nodes: &NodeTable, target: Option<NodeId>, policy: u64) -> Vec<u64> {
        let t = target.map_or(u64::MAX, |t| self.reference(nodes, t));
        let mut key = std::mem::take(&mut self.words);
        key.reserve(3 + self.entries.len() / 64);
        key.push(POLICY);
        for chunk in self.entries.chunks(64) {
            let mut bits = 0u64;
            for (i, id) in chunk.iter().enumerate() {
                if nodes.get(id).is_none_or(|n| n.released) {
                    bits |= 1 << i;
                }
            }
            key.push(bits);
        }
        key.extend([t, policy]);
        key
    }

    /// Appends a node's entry (its inputs first) and records it.
    fn push_node(&mut self, nodes: &NodeTable, id: NodeId, tag: u64) -> u64 {
        let n = &nodes[&id];
        let refs: smallvec::SmallVec<[u64; 4]> =
            n.inputs.iter().map(|&i| self.reference(nodes, i)).collect();
        self.words.push(tag);
        if tag == COMPUTE {
            self.words
                .push(n.site as *const _ as *const () as usize as u64);
        }
        op_words(&n.op, &mut self.words);
        self.words.push(n.dtype as u64);
        self.words.push(n.shape.len() as u64);
        self.words.extend(n.shape.iter().map(|&d| d as u64));
        self.words.extend(refs);
        if tag == LAZY {
            // Whether an earlier flush computed it lazily: the next flush that needs it stores it.
            self.words.push(n.recomputed as u64);
        }
        let e = self.entries.len() as u32;
        self.entries.push(id);
        self.index.insert(id, e);
        e as u64
    }

    /// How an input is named in the key (appending what it needs on first use).
    fn reference(&mut self, nodes: &NodeTable, id: NodeId) -> u64 {
        if let Some(e) = self.entry_of(id) {
            return e as u64;
        }
        if let Some(x) = self.external_of(id) {
            return x as u64 | EXT_BIT;
        }
        let n = &nodes[&id];
        if n.is_pending() {
            // A lazy node or leaf of an earlier flush: its structure is part of this program.
            return self.push_node(nodes, id, LAZY);
        }
        let x = self.externals.len() as u32;
        self.words.extend([
            EXTERNAL,
            matches!(n.op, Op::Source) as u64,
            n.dtype as u64,
            n.shape.len() as u64,
        ]);
        self.words.extend(n.shape.iter().map(|&d| d as u64));
        self.externals.push(id);
        self.ext_index.insert(id, x);
        x as u64 | EXT_BIT
    }
}

/// The operation and the data that specialises its code.
fn op_words(op: &Op, w: &mut Vec<u64>) {
    match op {
        Op::Source => w.push(0),
        Op::Const(v) => w.extend([1, v.dtype() as u64]),
        Op::Generate(GenKind::Iota { axis }) => w.extend([2, *axis as u64]),
        Op::Generate(GenKind::Identity) => w.push(3),
        Op::Generate(GenKind::Linspace {
            start,
            step,
            end,
            n,
        }) => w.extend([4, start.to_bits(), step.to_bits(), end.to_bits(), *n as u64]),
        Op::Generate(GenKind::Random { alg, dist, .. }) => {
            w.extend([5, *dist as u64 | (*alg as u64) << 8])
        }
        Op::Unary(u) => w.extend([6, *u as u64]),
        Op::Binary(b) => w.extend([7, *b as u64]),
        Op::Select => w.push(8),
        Op::Cast(d) => w.extend([9, *d as u64]),
        Op::Reshape => w.push(10),
        Op::Permute(p) => {
            w.extend([11, p.len() as u64]);
            w.extend(p.iter().map(|&x| x as u64));
        }
        Op::Slice { start, step } => {
            w.extend([12, start.len() as u64]);
            w.extend(start.iter().chain(step.iter()).map(|&x| x as u64));
        }
        Op::Broadcast => w.push(13),
        Op::Tile => w.push(14),
        Op::Fold { axis, mode, shift } => w.extend([17, *axis as u64, *mode as u64, *shift as u64]),
        Op::Reduce { op, axes } => {
            w.extend([15, *op as u64, axes.len() as u64]);
            w.extend(axes.iter().map(|&x| x as u64));
        }
        // The registry's index names the intrinsic; its definition adds the data that
        // specialises its code.
        Op::Intrinsic(i) => {
            w.extend([16, crate::intrinsics::lookup(i) as u64]);
            i.def().key_words(i, w);
        }
    }
}
