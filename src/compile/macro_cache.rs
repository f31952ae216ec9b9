//! The macro cache (the seed's 500, FIGS. 5A-5C): program sequences recorded for code reuse
//! sections, keyed by the section's call site (and name), its inputs' types, shapes and kinds, and
//! its control values byte by byte. A replay sends the stored sequence to the execution scheduler
//! in one message without calling the section's closure. Constants recorded inside the section are
//! part of its code; declared parameters (`Runtime::reuse_with`) take each call's values; random
//! generators it drew from are advanced on every replay.

use super::trace_cache::CacheCounts;
use crate::error::Error;
use crate::ir::{DType, NodeId, RngState, Shape, Site};
use crate::proggen::sequence::{FormalId, ProgramSequence};
use ahash::AHashMap;
use lru::LruCache;
use parking_lot::Mutex;
use std::num::NonZeroUsize;
use std::sync::Arc;

/// Where a parameter's value comes from on replay.
#[derive(Debug, Clone, Copy)]
pub enum ParamSource {
    /// A constant recorded in the section.
    Fixed(u64),
    /// The key of the section's `n`th generator.
    RandomKey(usize),
    /// The `n`th generator's position at replay, plus an offset.
    RandomCounter(usize, u64),
    /// The section's `n`th declared parameter (`Runtime::reuse_with`): the value of this call.
    Param(usize),
}

/// A recorded section.
pub struct MacroEntry {
    pub seq: Arc<ProgramSequence>,
    /// Input formals and the section input each binds.
    pub inputs: Vec<(FormalId, usize)>,
    /// The formal of each of the section's outputs, with its type and shape.
    pub outputs: Vec<(FormalId, DType, Shape)>,
    /// Each program's parameter sources, in slot order.
    pub params: Vec<Vec<ParamSource>>,
    /// The generators the section drew from, and how far each advances per run.
    pub rngs: Vec<(Arc<Mutex<RngState>>, u64)>,
    /// The section's ops in order, for comparison mode's reference values on replay and for the
    /// replay check (a re-recording is compared with it).
    pub reference: Option<RefProgram>,
    /// Replays so far (the replay check re-records some of them).
    pub replays: std::sync::atomic::AtomicU64,
    /// What stepping a replay's fused kernels needs (`Runtime::set_stepping`).
    pub kernels: SectionKernels,
}

/// What the debugger's stepper needs to keep a replayed section's fused kernels
/// (`compile/captures.rs`): the recording's node of each formal, each program's members, and
/// the recorded nodes (ops, shapes, call sites; without reference values, which were the
/// recording call's).
pub struct SectionKernels {
    pub node_of: AHashMap<FormalId, NodeId>,
    pub members: Vec<Vec<crate::proggen::builder::Member>>,
    pub nodes: Arc<AHashMap<NodeId, crate::ir::NodeInfo>>,
}

impl SectionKernels {
    /// Those of the sequence `g` just generated from `fe`'s nodes.
    pub fn of(fe: &super::state::FrontEnd, g: &crate::proggen::Generated) -> SectionKernels {
        let mut nodes = super::captures::recorded_nodes(fe, g);
        for n in nodes.values_mut() {
            n.reference = None;
            n.magnitude = None;
        }
        SectionKernels {
            node_of: g.inputs.iter().chain(&g.stored).copied().collect(),
            members: g.members.clone(),
            nodes: Arc::new(nodes),
        }
    }
}

/// Where a step of a reference program takes an input from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefInput {
    /// The section's input at this position.
    Input(usize),
    /// An earlier step.
    Step(usize),
}

/// One op of a recorded section, for the reference interpreter.
#[derive(Debug, Clone)]
pub struct RefStep {
    pub node: crate::ir::NodeInfo,
    pub inputs: Vec<RefInput>,
    /// For a random draw: its generator (index into the entry's `rngs`) and counter offset.
    pub random: Option<(usize, u64)>,
    /// For a declared parameter of the section: its index (its value is the call's).
    pub param: Option<usize>,
}

/// A recorded section's ops in dependency order, and the step of each output.
#[derive(Debug, Clone)]
pub struct RefProgram {
    pub steps: Vec<RefStep>,
    pub outputs: Vec<usize>,
}

pub struct MacroCache {
    entries: LruCache<Vec<u64>, Arc<MacroEntry>>,
    pub counts: CacheCounts,
}

impl MacroCache {
    pub fn new(limit: usize) -> MacroCache {
        MacroCache {
            entries: LruCache::new(NonZeroUsize::new(limit.max(1)).unwrap()),
            counts: CacheCounts::default(),
        }
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn lookup(&mut self, key: &[u64]) -> Option<Arc<MacroEntry>> {
        let start = std::time::Instant::now();
        let r = self.entries.get(key).cloned();
        if r.is_some() {
            self.counts.hits += 1;
        } else {
            self.counts.misses += 1;
        }
        self.counts.lookup_ns += start.elapsed().as_nanos() as u64;
        if crate::profile::active() {
            crate::profile::runtime("macro_lookup", "", Some(r.is_some()), start, 0, None);
        }
        r
    }
    pub fn insert(&mut self, key: Vec<u64>, entry: Arc<MacroEntry>) {
        self.counts.insertions += 1;
        if let Some((old, _)) = self.entries.push(key.clone(), entry)
            && old != key
        {
            self.counts.evictions += 1;
        }
    }
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// A section being recorded (the outermost) or entered inside one (inlined into it).
pub struct Recording {
    pub key: Vec<u64>,
    pub site: Site,
    /// Generators drawn from while recording, with their position at the first draw.
    pub rngs: Vec<(Arc<Mutex<RngState>>, u64)>,
    /// Random nodes: which generator and the counter they start at.
    pub draws: AHashMap<NodeId, (usize, u64)>,
    /// The first forbidden operation (read, write) attempted inside the section.
    pub violation: Option<Error>,
    /// The nodes standing for the section's declared parameters, by index.
    pub params: Vec<NodeId>,
}

impl Recording {
    /// A section entered at `site` with the macro-cache key `key`.
    pub fn new(key: Vec<u64>, site: Site) -> Recording {
        Recording {
            key,
            site,
            rngs: Vec::new(),
            draws: AHashMap::new(),
            violation: None,
            params: Vec::new(),
        }
    }
}
