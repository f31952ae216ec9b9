//! Builds one fused kernel: emits the expression of each scheduling root added to it, sharing common
//! subexpressions (a value per node and position), loading stored inputs, and rolling back a root
//! that turns out not to fit.

use super::kernel::{Domain, FusedKernel, Instr, ReduceStore, Reg, Store};
use super::pos::Pos;
use super::regalloc;
use crate::frontend::{NodeInfo, NodeTable};
use crate::ir::{DType, NodeId, Op, Shape, Site};
use ahash::{AHashMap, AHashSet};
use smallvec::SmallVec;

/// The iteration domain a scheduling root asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootDomain {
    /// Domain axes: the root's axes, or for a reduction its input's kept axes then reduced axes.
    pub shape: Shape,
    pub inner: usize,
    /// For a reduction: domain axis `k` is input axis `perm[k]`; `None` when that is the identity.
    pub perm: Option<SmallVec<[usize; 4]>>,
    pub is_reduction: bool,
}

impl RootDomain {
    pub fn of(nodes: &NodeTable, n: &NodeInfo) -> RootDomain {
        match &n.op {
            Op::Reduce { axes, .. } => {
                let input = &nodes[&n.inputs[0]];
                let kept = (0..input.shape.len()).filter(|a| !axes.contains(a));
                let perm: SmallVec<[usize; 4]> = kept.chain(axes.iter().copied()).collect();
                let shape = perm.iter().map(|&a| input.shape[a]).collect();
                let inner = axes.iter().map(|&a| input.shape[a]).product();
                let identity = perm.iter().enumerate().all(|(k, &a)| k == a);
                RootDomain { shape, inner, perm: (!identity).then_some(perm), is_reduction: true }
            }
            _ => RootDomain { shape: n.shape.clone(), inner: 1, perm: None, is_reduction: false },
        }
    }
}

/// Why a root could not be added.
#[derive(Debug)]
pub struct DoesNotFit;

pub struct KernelBuilder<'a> {
    nodes: &'a NodeTable,
    /// Pending nodes that get a buffer in this flush.
    stored: &'a AHashSet<NodeId>,
    /// Stored pending nodes computed by earlier programs of the sequence.
    done: &'a AHashSet<NodeId>,
    pub shape: Shape,
    inner: usize,
    perm: Option<SmallVec<[usize; 4]>>,
    has_reduction: bool,
    instrs: Vec<Instr>,
    sites: Vec<Site>,
    value_dtypes: Vec<DType>,
    memo: AHashMap<(NodeId, Pos), Reg>,
    journal: Vec<(NodeId, Pos)>,
    /// Nodes read through a buffer, in parameter order.
    pub inputs: Vec<NodeId>,
    input_index: AHashMap<NodeId, u32>,
    /// Roots this kernel stores, in output order.
    pub outputs: Vec<NodeId>,
    stores: Vec<Store>,
    reductions: Vec<ReduceStore>,
    current_root: Option<NodeId>,
    cost: u32,
}

impl<'a> KernelBuilder<'a> {
    pub fn new(nodes: &'a NodeTable, stored: &'a AHashSet<NodeId>, done: &'a AHashSet<NodeId>, d: &RootDomain) -> Self {
        KernelBuilder {
            nodes,
            stored,
            done,
            shape: d.shape.clone(),
            inner: 1,
            perm: None,
            has_reduction: false,
            instrs: Vec::new(),
            sites: Vec::new(),
            value_dtypes: Vec::new(),
            memo: AHashMap::new(),
            journal: Vec::new(),
            inputs: Vec::new(),
            input_index: AHashMap::new(),
            outputs: Vec::new(),
            stores: Vec::new(),
            reductions: Vec::new(),
            current_root: None,
            cost: 0,
        }
    }

    pub fn cost(&self) -> u32 {
        self.cost
    }
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Whether a root with this domain may join the kernel.
    pub fn accepts(&self, d: &RootDomain) -> bool {
        if d.shape != self.shape {
            return false;
        }
        if d.is_reduction {
            if self.has_reduction {
                d.perm == self.perm && d.inner == self.inner
            } else {
                // Element-wise stores so far are in row-major order: only an identity-order reduction joins.
                self.outputs.is_empty() || d.perm.is_none()
            }
        } else {
            self.perm.is_none()
        }
    }

    /// Adds a scheduling root; on `Err` the kernel is as before.
    pub fn add_root(&mut self, id: NodeId) -> Result<(), DoesNotFit> {
        let n = &self.nodes[&id];
        let d = RootDomain::of(self.nodes, n);
        let mark = (self.instrs.len(), self.journal.len(), self.inputs.len(), self.cost);
        self.current_root = Some(id);
        let result = match &n.op {
            Op::Reduce { op, .. } => {
                let pos = match &d.perm {
                    Some(p) => Pos::permuted(p),
                    None => Pos::identity(d.shape.len()),
                };
                self.emit(n.inputs[0], pos).map(|reg| {
                    self.reductions.push(ReduceStore { reg, op: *op, output: self.outputs.len() as u32 });
                    self.cost += op.cost();
                    self.has_reduction = true;
                    self.inner = d.inner;
                    self.perm = d.perm.clone();
                })
            }
            _ => {
                let pos = Pos::identity(n.shape.len());
                self.compute(id, pos.clone()).map(|reg| {
                    self.remember(id, pos, reg);
                    self.stores.push(Store { reg, output: self.outputs.len() as u32 });
                })
            }
        };
        self.current_root = None;
        match result {
            Ok(()) => {
                self.outputs.push(id);
                Ok(())
            }
            Err(e) => {
                self.instrs.truncate(mark.0);
                self.sites.truncate(mark.0);
                self.value_dtypes.truncate(mark.0);
                for key in self.journal.drain(mark.1..) {
                    self.memo.remove(&key);
                }
                for node in self.inputs.drain(mark.2..) {
                    self.input_index.remove(&node);
                }
                self.cost = mark.3;
                Err(e)
            }
        }
    }

    fn remember(&mut self, id: NodeId, pos: Pos, reg: Reg) {
        self.journal.push((id, pos.clone()));
        self.memo.insert((id, pos), reg);
    }

    fn push(&mut self, site: Site, dtype: DType, make: impl FnOnce(Reg) -> Instr) -> Reg {
        let reg = self.instrs.len() as Reg;
        self.instrs.push(make(reg));
        self.sites.push(site);
        self.value_dtypes.push(dtype);
        reg
    }

    /// The value of node `id` at `pos`: from the memo, a load, or computed here.
    fn emit(&mut self, id: NodeId, pos: Pos) -> Result<Reg, DoesNotFit> {
        if let Some(&r) = self.memo.get(&(id, pos.clone())) {
            return Ok(r);
        }
        let n = &self.nodes[&id];
        let reg = if !n.is_pending() || self.stored.contains(&id) {
            if n.is_pending() && !self.done.contains(&id) {
                // Stored by this kernel at another position, or not computed yet.
                return Err(DoesNotFit);
            }
            let map = pos.to_linear(&n.shape, &self.shape);
            self.load(id, n, map)
        } else {
            self.compute(id, pos.clone())?
        };
        self.remember(id, pos, reg);
        Ok(reg)
    }

    fn load(&mut self, id: NodeId, n: &NodeInfo, map: super::kernel::IndexMap) -> Reg {
        let input = match self.input_index.get(&id) {
            Some(&i) => i,
            None => {
                let i = self.inputs.len() as u32;
                self.inputs.push(id);
                self.input_index.insert(id, i);
                i
            }
        };
        self.cost += 1;
        self.push(n.site, n.dtype, |dst| Instr::Load { dst, input, map })
    }

    /// Emits the operation of a fused node at `pos`.
    fn compute(&mut self, id: NodeId, pos: Pos) -> Result<Reg, DoesNotFit> {
        let nodes = self.nodes;
        let n = &nodes[&id];
        let input = |i: usize| &nodes[&n.inputs[i]];
        let (site, dtype) = (n.site, n.dtype);
        let reg = match &n.op {
            Op::Const(value) => {
                let value = *value;
                self.push(site, dtype, |dst| Instr::Const { dst, value })
            }
            Op::Generate(kind) => {
                let map = pos.to_linear(&n.shape, &self.shape);
                let (kind, shape) = (kind.clone(), n.shape.clone());
                self.cost += 10;
                self.push(site, dtype, |dst| Instr::Gen { dst, kind, shape, map })
            }
            Op::Unary(op) => {
                let a = self.emit(n.inputs[0], pos)?;
                self.cost += op.cost();
                let op = *op;
                self.push(site, dtype, |dst| Instr::Unary { dst, op, a })
            }
            Op::Cast(to) => {
                let a = self.emit(n.inputs[0], pos)?;
                let to = *to;
                self.push(site, dtype, |dst| Instr::Cast { dst, to, a })
            }
            Op::Binary(op) => {
                let a = self.emit(n.inputs[0], pos.broadcast_input(&n.shape, &input(0).shape))?;
                let b = self.emit(n.inputs[1], pos.broadcast_input(&n.shape, &input(1).shape))?;
                self.cost += op.cost();
                let op = *op;
                self.push(site, dtype, |dst| Instr::Binary { dst, op, a, b })
            }
            Op::Select => {
                let cond = self.emit(n.inputs[0], pos.broadcast_input(&n.shape, &input(0).shape))?;
                let a = self.emit(n.inputs[1], pos.broadcast_input(&n.shape, &input(1).shape))?;
                let b = self.emit(n.inputs[2], pos.broadcast_input(&n.shape, &input(2).shape))?;
                self.cost += 1;
                self.push(site, dtype, |dst| Instr::Select { dst, cond, a, b })
            }
            Op::Broadcast => self.emit(n.inputs[0], pos.broadcast_input(&n.shape, &input(0).shape))?,
            Op::Permute(perm) => self.emit(n.inputs[0], pos.permute_input(perm))?,
            Op::Slice { start, step } => self.emit(n.inputs[0], pos.slice_input(start, step))?,
            Op::Reshape | Op::Tile => {
                let src_id = n.inputs[0];
                let src = input(0);
                if src.is_pending() && !self.done.contains(&src_id) {
                    return Err(DoesNotFit);
                }
                let map = match n.op {
                    Op::Reshape => pos.to_linear(&n.shape, &self.shape),
                    _ => pos.to_periodic(&n.shape, &src.shape),
                };
                self.load(src_id, src, map)
            }
            Op::Reduce { .. } | Op::Intrinsic(_) | Op::Source => return Err(DoesNotFit),
        };
        Ok(reg)
    }

    /// Finishes the kernel: allocates registers and returns it with its input and output nodes.
    pub fn finish(self) -> (FusedKernel, Vec<NodeId>, Vec<NodeId>) {
        let KernelBuilder { mut instrs, sites, value_dtypes, mut stores, mut reductions, inputs, outputs, nodes, .. } = self;
        let mut out_regs: Vec<&mut Reg> = stores.iter_mut().map(|s| &mut s.reg).chain(reductions.iter_mut().map(|r| &mut r.reg)).collect();
        let reg_dtypes = regalloc::allocate(&mut instrs, &value_dtypes, &mut out_regs);
        let len: usize = self.shape.iter().product();
        let inner = if self.has_reduction { self.inner } else { 1 };
        let outer = if self.has_reduction { nodes[&outputs[reductions[0].output as usize]].len() } else { len };
        let kernel = FusedKernel {
            domain: Domain { shape: self.shape, inner, outer },
            inputs: inputs.iter().map(|i| nodes[i].dtype).collect(),
            outputs: outputs.iter().map(|o| nodes[o].dtype).collect(),
            instrs,
            instr_sites: sites,
            stores,
            reductions,
            reg_dtypes,
        };
        (kernel, inputs, outputs)
    }
}
