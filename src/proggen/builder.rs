//! Builds one fused kernel: emits the expression of each scheduling root added to it, sharing common
//! subexpressions (a value per node and position), loading stored inputs, and rolling back a root
//! that turns out not to fit.

use super::kernel::{Domain, FusedKernel, Instr, ParamKind, ReduceStore, Reg, Store};
use super::pos::Pos;
use super::regalloc;
use crate::ir::{DType, GenKind, NodeId, Op, Shape, Site, unit_reshape};
use crate::ir::{NodeInfo, NodeTable};
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
                RootDomain {
                    shape,
                    inner,
                    perm: (!identity).then_some(perm),
                    is_reduction: true,
                }
            }
            _ => RootDomain {
                shape: n.shape.clone(),
                inner: 1,
                perm: None,
                is_reduction: false,
            },
        }
    }
}

/// An instruction without its destination, for value numbering (common subexpressions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ValueKey {
    Load(u32, super::kernel::IndexMap),
    Const(u64, DType),
    Unary(crate::ir::UnaryOp, Reg),
    Binary(crate::ir::BinaryOp, Reg, Reg),
    Select(Reg, Reg, Reg),
    Cast(DType, Reg),
}

impl ValueKey {
    fn of(i: &Instr) -> Option<ValueKey> {
        Some(match i {
            Instr::Load { input, map, .. } => ValueKey::Load(*input, map.clone()),
            Instr::Const { slot, .. } => ValueKey::Const(*slot as u64, DType::Bool),
            Instr::Random { .. } => return None,
            Instr::Unary { op, a, .. } => ValueKey::Unary(*op, *a),
            Instr::Binary { op, a, b, .. } => ValueKey::Binary(*op, *a, *b),
            Instr::Select { cond, a, b, .. } => ValueKey::Select(*cond, *a, *b),
            Instr::Cast { to, a, .. } => ValueKey::Cast(*to, *a),
            Instr::Gen { .. } => return None,
        })
    }
}

/// The IR node an instruction of a fused kernel computes and where: the node's linear index at
/// each domain element (`None` for a load of an input). The debugger's stepper compares each
/// instruction's values with its node's reference through this map.
pub type Member = Option<(NodeId, super::kernel::IndexMap)>;

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
    /// The node (and its position in the domain) each instruction computes; `None` for loads.
    members: Vec<Option<(NodeId, Pos)>>,
    value_dtypes: Vec<DType>,
    memo: AHashMap<(NodeId, Pos), Reg>,
    journal: Vec<(NodeId, Pos)>,
    /// Value numbering: an instruction already emitted with the same operation and operands.
    values: AHashMap<ValueKey, Reg>,
    value_journal: Vec<ValueKey>,
    /// Parameter slots: the node whose value fills each, and what it holds.
    pub params: Vec<(NodeId, ParamKind)>,
    /// Nodes read through a buffer, in parameter order.
    pub inputs: Vec<NodeId>,
    input_index: AHashMap<NodeId, u32>,
    /// Roots this kernel stores, in output order.
    pub outputs: Vec<NodeId>,
    stores: Vec<Store>,
    reductions: Vec<ReduceStore>,
    current_root: Option<NodeId>,
    cost: u32,
    /// Traps are on or assertions exist (`crate::debug::trap`): element-wise nodes computed at
    /// the kernel's own positions are marked for checks.
    traps_on: bool,
    /// `(instruction, node)` of each value to check.
    trap_marks: Vec<(usize, NodeId)>,
}

impl<'a> KernelBuilder<'a> {
    pub fn new(
        nodes: &'a NodeTable,
        stored: &'a AHashSet<NodeId>,
        done: &'a AHashSet<NodeId>,
        d: &RootDomain,
    ) -> Self {
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
            members: Vec::new(),
            value_dtypes: Vec::new(),
            memo: AHashMap::new(),
            journal: Vec::new(),
            values: AHashMap::new(),
            value_journal: Vec::new(),
            params: Vec::new(),
            inputs: Vec::new(),
            input_index: AHashMap::new(),
            outputs: Vec::new(),
            stores: Vec::new(),
            reductions: Vec::new(),
            current_root: None,
            cost: 0,
            traps_on: crate::debug::trap::fingerprint() != 0
                || crate::debug::trap::assertions::any(),
            trap_marks: Vec::new(),
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
        let mark = (
            self.instrs.len(),
            self.journal.len(),
            self.inputs.len(),
            self.cost,
            self.value_journal.len(),
            self.params.len(),
        );
        self.current_root = Some(id);
        let result = match &n.op {
            Op::Reduce { op, .. } => {
                let pos = match &d.perm {
                    Some(p) => Pos::permuted(p),
                    None => Pos::identity(d.shape.len()),
                };
                self.emit(n.inputs[0], pos).map(|reg| {
                    self.reductions.push(ReduceStore {
                        reg,
                        op: *op,
                        output: self.outputs.len() as u32,
                    });
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
                    self.stores.push(Store {
                        reg,
                        output: self.outputs.len() as u32,
                    });
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
                self.members.truncate(mark.0);
                self.value_dtypes.truncate(mark.0);
                for key in self.journal.drain(mark.1..) {
                    self.memo.remove(&key);
                }
                for node in self.inputs.drain(mark.2..) {
                    self.input_index.remove(&node);
                }
                for key in self.value_journal.drain(mark.4..) {
                    self.values.remove(&key);
                }
                self.params.truncate(mark.5);
                self.trap_marks.retain(|m| m.0 < mark.0);
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
        let instr = make(reg);
        let key = ValueKey::of(&instr);
        if let Some(k) = &key
            && let Some(&r) = self.values.get(k)
        {
            return r;
        }
        if let Some(k) = key {
            self.values.insert(k.clone(), reg);
            self.value_journal.push(k);
        }
        self.instrs.push(instr);
        self.sites.push(site);
        self.members.push(None);
        self.value_dtypes.push(dtype);
        reg
    }

    /// The value of node `id` at `pos`: from the memo, a load, or computed here.
    fn emit(&mut self, id: NodeId, pos: Pos) -> Result<Reg, DoesNotFit> {
        self.emit_iter(id, pos, false)
    }

    /// Emits the operation of a fused node at `pos` (its own value, even if it is stored).
    fn compute(&mut self, id: NodeId, pos: Pos) -> Result<Reg, DoesNotFit> {
        self.emit_iter(id, pos, true)
    }

    /// Post-order walk with an explicit stack (fused chains can be thousands of ops deep).
    fn emit_iter(&mut self, id: NodeId, pos: Pos, force: bool) -> Result<Reg, DoesNotFit> {
        struct Frame {
            id: NodeId,
            pos: Pos,
            force: bool,
            expanded: bool,
        }
        let mut stack = vec![Frame {
            id,
            pos: pos.clone(),
            force,
            expanded: false,
        }];
        let mut top = None;
        while let Some(f) = stack.pop() {
            if !f.force
                && let Some(&r) = self.memo.get(&(f.id, f.pos.clone()))
            {
                top = Some(r);
                continue;
            }
            let nodes = self.nodes;
            let n = &nodes[&f.id];
            if !f.force && (!n.is_pending() || self.stored.contains(&f.id)) {
                if n.is_pending() && !self.done.contains(&f.id) {
                    // Stored by this kernel at another position, or not computed yet.
                    return Err(DoesNotFit);
                }
                let map = f.pos.to_linear(&n.shape, &self.shape);
                let r = self.load(f.id, n, map);
                if !f.force {
                    self.remember(f.id, f.pos, r);
                }
                top = Some(r);
                continue;
            }
            let children = self.children(n, &f.pos);
            if !f.expanded && !children.is_empty() {
                stack.push(Frame {
                    expanded: true,
                    ..f
                });
                for (c, cpos) in children.into_iter().rev() {
                    stack.push(Frame {
                        id: c,
                        pos: cpos,
                        force: false,
                        expanded: false,
                    });
                }
                continue;
            }
            let ins: SmallVec<[Reg; 3]> = children
                .iter()
                .map(|(c, cpos)| self.memo[&(*c, cpos.clone())])
                .collect();
            let r = self.compute_op(f.id, n, &f.pos, &ins)?;
            if self.traps_on {
                self.mark_trap(f.id, n, &f.pos, r);
            }
            if !f.force {
                self.remember(f.id, f.pos, r);
            }
            top = Some(r);
        }
        top.ok_or(DoesNotFit)
    }

    /// Marks node `id`'s value in register `r` for trap checks when it is an element-wise result
    /// computed at its own positions (its element `lin` is the kernel's element `lin`).
    fn mark_trap(&mut self, id: NodeId, n: &NodeInfo, pos: &Pos, r: Reg) {
        let elementwise = matches!(
            n.op,
            Op::Unary(_) | Op::Binary(_) | Op::Select | Op::Cast(_)
        );
        if elementwise
            && (r as usize) < self.instrs.len()
            && n.shape == self.shape
            && *pos == Pos::identity(self.shape.len())
            && !self.trap_marks.contains(&(r as usize, id))
        {
            self.trap_marks.push((r as usize, id));
        }
    }

    /// The parameter slot holding `what` of node `id` (one per node and kind).
    fn param(&mut self, id: NodeId, what: ParamKind) -> u32 {
        match self.params.iter().position(|&p| p == (id, what)) {
            Some(i) => i as u32,
            None => {
                self.params.push((id, what));
                (self.params.len() - 1) as u32
            }
        }
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

    /// The inputs of a fused node and the positions it reads them at.
    fn children(&self, n: &NodeInfo, pos: &Pos) -> SmallVec<[(NodeId, Pos); 3]> {
        let shape_of = |i: usize| &self.nodes[&n.inputs[i]].shape;
        match &n.op {
            Op::Unary(_) | Op::Cast(_) => smallvec::smallvec![(n.inputs[0], pos.clone())],
            Op::Binary(_) | Op::Select | Op::Broadcast => (0..n.inputs.len())
                .map(|i| (n.inputs[i], pos.broadcast_input(&n.shape, shape_of(i))))
                .collect(),
            Op::Permute(perm) => smallvec::smallvec![(n.inputs[0], pos.permute_input(perm))],
            Op::Reshape if unit_reshape(shape_of(0), &n.shape) => {
                smallvec::smallvec![(n.inputs[0], pos.unit_reshape_input(&n.shape, shape_of(0)))]
            }
            Op::Slice { start, step } => {
                smallvec::smallvec![(n.inputs[0], pos.slice_input(start, step))]
            }
            Op::Fold { axis, mode, shift } => smallvec::smallvec![(
                n.inputs[0],
                pos.fold_input(*axis, *mode, *shift, shape_of(0)[*axis])
            )],
            _ => SmallVec::new(),
        }
    }

    /// Emits one fused node whose inputs' registers are `ins`.
    fn compute_op(
        &mut self,
        id: NodeId,
        n: &NodeInfo,
        pos: &Pos,
        ins: &[Reg],
    ) -> Result<Reg, DoesNotFit> {
        let (site, dtype) = (n.site, n.dtype);
        let reg = match &n.op {
            Op::Const(_) => {
                let slot = self.param(id, ParamKind::Const(dtype));
                self.push(site, dtype, |dst| Instr::Const { dst, slot, dtype })
            }
            Op::Generate(GenKind::Random { alg, dist, .. }) => {
                let map = pos.to_linear(&n.shape, &self.shape);
                let (alg, dist) = (*alg, *dist);
                let key_slot = self.param(id, ParamKind::RandomKey);
                let counter_slot = self.param(id, ParamKind::RandomCounter);
                let range_slot = (dist == crate::ir::RandomDist::Integers)
                    .then(|| self.param(id, ParamKind::RandomRange));
                self.cost += 10;
                self.push(site, dtype, |dst| Instr::Random {
                    dst,
                    alg,
                    dist,
                    key_slot,
                    counter_slot,
                    range_slot,
                    map,
                })
            }
            Op::Generate(kind) => {
                let map = pos.to_linear(&n.shape, &self.shape);
                let (kind, shape) = (kind.clone(), n.shape.clone());
                self.cost += 10;
                self.push(site, dtype, |dst| Instr::Gen {
                    dst,
                    kind,
                    shape,
                    map,
                })
            }
            Op::Unary(op) => {
                self.cost += op.cost();
                let (op, a) = (*op, ins[0]);
                self.push(site, dtype, |dst| Instr::Unary { dst, op, a })
            }
            Op::Cast(to) => {
                let (to, a) = (*to, ins[0]);
                self.push(site, dtype, |dst| Instr::Cast { dst, to, a })
            }
            Op::Binary(op) => {
                self.cost += op.cost();
                let (op, a, b) = (*op, ins[0], ins[1]);
                self.push(site, dtype, |dst| Instr::Binary { dst, op, a, b })
            }
            Op::Select => {
                self.cost += 1;
                let (cond, a, b) = (ins[0], ins[1], ins[2]);
                self.push(site, dtype, |dst| Instr::Select { dst, cond, a, b })
            }
            Op::Broadcast | Op::Permute(_) | Op::Slice { .. } | Op::Fold { .. } => ins[0],
            Op::Reshape if unit_reshape(&self.nodes[&n.inputs[0]].shape, &n.shape) => ins[0],
            Op::Reshape | Op::Tile => {
                let src_id = n.inputs[0];
                let nodes = self.nodes;
                let src = &nodes[&src_id];
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
        // The instruction just emitted for this node (not a view of its input, a load or a value
        // numbered onto an earlier instruction) computes it: the stepper's member.
        let computes = !matches!(
            n.op,
            Op::Broadcast
                | Op::Permute(_)
                | Op::Slice { .. }
                | Op::Fold { .. }
                | Op::Reshape
                | Op::Tile
        );
        if computes && reg as usize + 1 == self.instrs.len() && self.members[reg as usize].is_none()
        {
            self.members[reg as usize] = Some((id, pos.clone()));
        }
        Ok(reg)
    }

    /// Finishes the kernel: allocates registers and returns it with its input nodes, output
    /// nodes, parameter nodes and members (see [`Member`]).
    #[allow(clippy::type_complexity)]
    pub fn finish(
        self,
    ) -> (
        FusedKernel,
        Vec<NodeId>,
        Vec<NodeId>,
        Vec<NodeId>,
        Vec<Member>,
    ) {
        let KernelBuilder {
            mut instrs,
            sites,
            members,
            value_dtypes,
            mut stores,
            mut reductions,
            inputs,
            outputs,
            nodes,
            params,
            trap_marks,
            ..
        } = self;
        let mut out_regs: Vec<&mut Reg> = stores
            .iter_mut()
            .map(|s| &mut s.reg)
            .chain(reductions.iter_mut().map(|r| &mut r.reg))
            .collect();
        let reg_dtypes = regalloc::allocate(&mut instrs, &value_dtypes, &mut out_regs);
        let len: usize = self.shape.iter().product();
        let inner = if self.has_reduction { self.inner } else { 1 };
        let outer = if self.has_reduction {
            nodes[&outputs[reductions[0].output as usize]].len()
        } else {
            len
        };
        let kernel = FusedKernel {
            domain: Domain {
                shape: self.shape,
                inner,
                outer,
                perm: if self.has_reduction { self.perm } else { None },
            },
            inputs: inputs.iter().map(|i| nodes[i].dtype).collect(),
            outputs: outputs.iter().map(|o| nodes[o].dtype).collect(),
            instrs,
            instr_sites: sites,
            stores,
            reductions,
            reg_dtypes,
            params: params.iter().map(|&(_, k)| k).collect(),
            traps: Vec::new(),
        };
        let mut traps = Vec::new();
        if !trap_marks.is_empty() {
            let cfg = crate::debug::trap::current();
            for &(i, id) in &trap_marks {
                let asserts = crate::debug::trap::assertions::of(id);
                traps.extend(crate::debug::trap::check::checks_for(
                    i as u32,
                    &nodes[&id],
                    &asserts,
                    cfg.as_ref(),
                    &kernel.domain.shape,
                ));
            }
            traps.sort_by_key(|t| t.instr);
        }
        let kernel = FusedKernel { traps, ..kernel };
        let param_nodes = params.into_iter().map(|(id, _)| id).collect();
        let members = members
            .into_iter()
            .map(|m| {
                m.map(|(id, pos)| (id, pos.to_linear(&nodes[&id].shape, &kernel.domain.shape)))
            })
            .collect();
        (kernel, inputs, outputs, param_nodes, members)
    }
}
