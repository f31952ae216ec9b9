//! Splitting a fused kernel in two, for the recovery path where a driver fails to compile a big
//! kernel ("a kernel that fails to compile is split smaller and retried"). This module owns the
//! choice of the cut (near the middle by estimated cost, few values live across it), the
//! temporaries that carry those values from the first half to the second, and the maps that bind
//! each half's buffers to the original kernel's inputs and outputs. Loads and constants live across
//! the cut are re-emitted in the second half rather than carried.

use super::kernel::{Domain, FusedKernel, IndexMap, Instr, ReduceStore, Reg, Store};
use crate::ir::{DType, Site};

/// Estimated cost of one temporary carried across the cut (a full-domain write and read), in the
/// units of [`FusedKernel::cost`].
const TEMP_COST: u64 = 4;

/// A kernel cut in two: `first` computes a prefix of the instructions and stores the registers live
/// across the cut to new temporary outputs; `second` loads them (contiguously) and runs the rest.
/// Running `first`, then `second`, over the same domain with the same parameter values and buffers
/// bound by these maps writes exactly the original kernel's outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub first: FusedKernel,
    pub second: FusedKernel,
    /// Element type of each temporary (first's extra outputs, in order = second's extra inputs, in
    /// order). Each has the domain's length.
    pub temps: Vec<DType>,
    /// For each of `first`'s inputs, the original input index; same for `second` (whose temporaries
    /// come after these).
    pub first_inputs: Vec<u32>,
    pub second_inputs: Vec<u32>,
    /// For each of `first`'s outputs that is an original output, the original output index
    /// (temporaries come after); same for `second`. Together they name every original output once.
    pub first_outputs: Vec<u32>,
    pub second_outputs: Vec<u32>,
}

/// Cuts `k` in two, or `None` when no cut makes both halves smaller (fewer than 2 instructions, or
/// every cut would carry as many values as it saves). Both halves keep `k`'s parameter list and run
/// over `k`'s domain; reductions stay in `second`, element-wise stores whose value is ready before
/// the cut go to `first`.
pub fn split(k: &FusedKernel) -> Option<Split> {
    if k.instrs.len() < 2 {
        return None;
    }
    let c = choose_cut(k)?;
    Some(build(k, c))
}

/// Instructions per domain element of one instruction, as [`FusedKernel::cost`] counts them.
fn instr_cost(i: &Instr) -> u64 {
    u64::from(match i {
        Instr::Unary { op, .. } => op.cost(),
        Instr::Binary { op, .. } => op.cost(),
        Instr::Gen { .. } => 10,
        _ => 1,
    })
}

/// Whether a value defined by `def` is re-emitted in the second half instead of carried by a
/// temporary (loads and constants cost no more there than a temporary's load).
fn rematerialised(k: &FusedKernel, def: Option<usize>) -> bool {
    matches!(
        def.map(|d| &k.instrs[d]),
        Some(Instr::Const { .. } | Instr::Load { .. })
    )
}

/// Index just after the last definition of each register (0: never defined): a store of that
/// register can run in a first half cut at or after it.
fn ready_at(k: &FusedKernel) -> Vec<usize> {
    let mut ready = vec![0; k.reg_dtypes.len()];
    for (i, ins) in k.instrs.iter().enumerate() {
        ready[ins.dst() as usize] = i + 1;
    }
    ready
}

/// The cut `c` (first = `instrs[..c]`) with the lowest score: the larger half's estimated cost plus
/// the temporaries' cost, nearest the middle among equals. Only cuts where both halves have outputs
/// and both have fewer instructions than `k` qualify.
fn choose_cut(k: &FusedKernel) -> Option<usize> {
    let n = k.instrs.len();
    let nregs = k.reg_dtypes.len();
    // prev_def[i]: the previous definition of instruction i's register; last_def[r]: r's last.
    let mut prev_def = vec![None; n];
    let mut last_def: Vec<Option<usize>> = vec![None; nregs];
    for (i, ins) in k.instrs.iter().enumerate() {
        let d = ins.dst() as usize;
        prev_def[i] = last_def[d];
        last_def[d] = Some(i);
    }
    let mut prefix = vec![0u64; n + 1];
    for (i, ins) in k.instrs.iter().enumerate() {
        prefix[i + 1] = prefix[i] + instr_cost(ins);
    }
    let total = prefix[n];
    // stores_first[c]: stores whose value is ready at a cut at c.
    let ready = ready_at(k);
    let mut stores_first = vec![0usize; n + 1];
    for s in &k.stores {
        stores_first[ready[s.reg as usize]] += 1;
    }
    for c in 1..=n {
        stores_first[c] += stores_first[c - 1];
    }

    // Backward liveness, cut by cut. `next_def[r]`: r's first definition at or after the cut, so
    // the definition reaching the cut is the one before it.
    let mut live = Live {
        live: vec![false; nregs],
        carried: vec![false; nregs],
        n_live: 0,
        n_temp: 0,
    };
    let mut next_def: Vec<Option<usize>> = vec![None; nregs];
    let reaching = |r: Reg, next_def: &[Option<usize>]| match next_def[r as usize] {
        Some(j) => prev_def[j],
        None => last_def[r as usize],
    };
    for r in &k.reductions {
        live.add(r.reg, !rematerialised(k, reaching(r.reg, &next_def)));
    }
    let mut best: Option<(u64, usize, usize)> = None;
    for c in (1..n).rev() {
        // Live before instruction c = live at cut c.
        let ins = &k.instrs[c];
        live.remove(ins.dst());
        next_def[ins.dst() as usize] = Some(c);
        for s in ins.srcs() {
            live.add(s, !rematerialised(k, reaching(s, &next_def)));
        }
        let (n_live, n_temp) = (live.n_live, live.n_temp);
        let first_has_outputs = n_temp + stores_first[c] > 0;
        let second_has_outputs = k.stores.len() - stores_first[c] + k.reductions.len() > 0;
        // The second half re-emits or loads every live value: it must still be shorter.
        if !first_has_outputs || !second_has_outputs || n_live >= c {
            continue;
        }
        let size1 = prefix[c];
        let size2 = total - prefix[c] + n_live as u64;
        let score = size1.max(size2) + TEMP_COST * n_temp as u64;
        let key = (score, (2 * c).abs_diff(n), c);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, c)| c)
}

/// The registers live at a cut, and which of them a temporary carries.
struct Live {
    live: Vec<bool>,
    carried: Vec<bool>,
    n_live: usize,
    n_temp: usize,
}

impl Live {
    fn add(&mut self, r: Reg, carried: bool) {
        let r = r as usize;
        if !self.live[r] {
            self.live[r] = true;
            self.carried[r] = carried;
            self.n_live += 1;
            self.n_temp += carried as usize;
        }
    }
    fn remove(&mut self, r: Reg) {
        let r = r as usize;
        if self.live[r] {
            self.live[r] = false;
            self.n_live -= 1;
            self.n_temp -= self.carried[r] as usize;
        }
    }
}

/// Cuts `k` at `c`.
fn build(k: &FusedKernel, c: usize) -> Split {
    let n = k.instrs.len();
    let nregs = k.reg_dtypes.len();
    let mut def_before: Vec<Option<usize>> = vec![None; nregs];
    for (i, ins) in k.instrs[..c].iter().enumerate() {
        def_before[ins.dst() as usize] = Some(i);
    }
    let mut live = vec![false; nregs];
    for r in &k.reductions {
        live[r.reg as usize] = true;
    }
    for ins in k.instrs[c..].iter().rev() {
        live[ins.dst() as usize] = false;
        for s in ins.srcs() {
            live[s as usize] = true;
        }
    }
    let ready = ready_at(k);
    let in_first = |s: &Store| ready[s.reg as usize] <= c;
    // Values live across the cut, by register; the carried ones become temporaries in this order.
    let crossing: Vec<(Reg, Option<usize>)> = (0..nregs)
        .filter(|&r| live[r])
        .map(|r| (r as Reg, def_before[r]))
        .collect();
    let temp_regs: Vec<Reg> = crossing
        .iter()
        .filter(|&&(_, def)| !rematerialised(k, def))
        .map(|&(r, _)| r)
        .collect();
    let temps: Vec<DType> = temp_regs
        .iter()
        .map(|&r| k.reg_dtypes[r as usize])
        .collect();

    // First half: the stores ready before the cut and the temporaries; dead code dropped.
    let mut first_outputs: Vec<u32> = k
        .stores
        .iter()
        .filter(|s| in_first(s))
        .map(|s| s.output)
        .collect();
    first_outputs.sort_unstable();
    first_outputs.dedup();
    let mut stores1: Vec<Store> = k
        .stores
        .iter()
        .filter(|s| in_first(s))
        .map(|s| Store {
            reg: s.reg,
            output: first_outputs.binary_search(&s.output).unwrap() as u32,
        })
        .collect();
    stores1.extend(temp_regs.iter().enumerate().map(|(t, &reg)| Store {
        reg,
        output: (first_outputs.len() + t) as u32,
    }));
    let mut needed = vec![false; nregs];
    for s in &stores1 {
        needed[s.reg as usize] = true;
    }
    let mut keep = vec![false; c];
    for i in (0..c).rev() {
        let ins = &k.instrs[i];
        let d = ins.dst() as usize;
        if needed[d] {
            keep[i] = true;
            needed[d] = false;
            for s in ins.srcs() {
                needed[s as usize] = true;
            }
        }
    }
    let body1: Vec<(Instr, Site)> = (0..c)
        .filter(|&i| keep[i])
        .map(|i| (k.instrs[i].clone(), k.instr_sites[i]))
        .collect();
    let (first_inputs, body1) = bind_inputs(body1, k.inputs.len());
    let mut outputs1: Vec<DType> = first_outputs
        .iter()
        .map(|&o| k.outputs[o as usize])
        .collect();
    outputs1.extend(&temps);
    let first = assemble(
        k,
        Domain {
            shape: k.domain.shape.clone(),
            inner: 1,
            outer: k.domain.len(),
            perm: None,
        },
        first_inputs.iter().map(|&i| k.inputs[i as usize]).collect(),
        outputs1,
        body1,
        stores1,
        Vec::new(),
    );

    // Second half: values live across the cut (re-emitted, or loaded from their temporary), the
    // rest of the instructions, the other stores and every reduction. Temporaries are numbered
    // after the original inputs until `bind_inputs` renumbers.
    let mut body2: Vec<(Instr, Site)> = Vec::with_capacity(crossing.len() + n - c);
    let mut t = 0;
    for &(r, def) in &crossing {
        match def {
            Some(d) if rematerialised(k, def) => {
                body2.push((k.instrs[d].clone(), k.instr_sites[d]));
            }
            _ => {
                let site = def.map_or(k.instr_sites[c], |d| k.instr_sites[d]);
                let input = (k.inputs.len() + t) as u32;
                body2.push((
                    Instr::Load {
                        dst: r,
                        input,
                        map: IndexMap::Contiguous,
                    },
                    site,
                ));
                t += 1;
            }
        }
    }
    body2.extend(
        k.instrs[c..]
            .iter()
            .cloned()
            .zip(k.instr_sites[c..].iter().copied()),
    );
    let (second_inputs, body2) = bind_inputs(body2, k.inputs.len());
    let second_outputs: Vec<u32> = (0..k.outputs.len() as u32)
        .filter(|o| first_outputs.binary_search(o).is_err())
        .collect();
    let out2 = |o: u32| second_outputs.binary_search(&o).unwrap() as u32;
    let stores2: Vec<Store> = k
        .stores
        .iter()
        .filter(|s| !in_first(s))
        .map(|s| Store {
            reg: s.reg,
            output: out2(s.output),
        })
        .collect();
    let reductions2: Vec<ReduceStore> = k
        .reductions
        .iter()
        .map(|r| ReduceStore {
            reg: r.reg,
            op: r.op,
            output: out2(r.output),
        })
        .collect();
    let mut inputs2: Vec<DType> = second_inputs
        .iter()
        .map(|&i| k.inputs[i as usize])
        .collect();
    inputs2.extend(&temps);
    let second = assemble(
        k,
        k.domain.clone(),
        inputs2,
        second_outputs
            .iter()
            .map(|&o| k.outputs[o as usize])
            .collect(),
        body2,
        stores2,
        reductions2,
    );
    Split {
        first,
        second,
        temps,
        first_inputs,
        second_inputs,
        first_outputs,
        second_outputs,
    }
}

/// Renumbers the loads' inputs densely: original inputs (`< originals`) that are loaded, in order,
/// then the temporaries (`originals + t`) in order. Returns the original indices kept.
fn bind_inputs(mut body: Vec<(Instr, Site)>, originals: usize) -> (Vec<u32>, Vec<(Instr, Site)>) {
    let mut used = vec![false; originals];
    for (ins, _) in &body {
        if let Instr::Load { input, .. } = ins
            && (*input as usize) < originals
        {
            used[*input as usize] = true;
        }
    }
    let kept: Vec<u32> = (0..originals as u32)
        .filter(|&i| used[i as usize])
        .collect();
    let mut index = vec![u32::MAX; originals];
    for (j, &i) in kept.iter().enumerate() {
        index[i as usize] = j as u32;
    }
    for (ins, _) in &mut body {
        if let Instr::Load { input, .. } = ins {
            *input = match index.get(*input as usize) {
                Some(&j) => j,
                None => kept.len() as u32 + (*input - originals as u32),
            };
        }
    }
    (kept, body)
}

/// One half as a kernel of its own: registers renumbered densely (in order of first mention, so a
/// constant's register stays its own), `k`'s parameter list kept.
fn assemble(
    k: &FusedKernel,
    domain: Domain,
    inputs: Vec<DType>,
    outputs: Vec<DType>,
    body: Vec<(Instr, Site)>,
    mut stores: Vec<Store>,
    mut reductions: Vec<ReduceStore>,
) -> FusedKernel {
    let mut map = vec![Reg::MAX; k.reg_dtypes.len()];
    let mut reg_dtypes = Vec::new();
    let mut see = |r: Reg| {
        if map[r as usize] == Reg::MAX {
            map[r as usize] = reg_dtypes.len() as Reg;
            reg_dtypes.push(k.reg_dtypes[r as usize]);
        }
    };
    for (ins, _) in &body {
        for s in ins.srcs() {
            see(s);
        }
        see(ins.dst());
    }
    for s in &stores {
        see(s.reg);
    }
    for r in &reductions {
        see(r.reg);
    }
    let (mut instrs, instr_sites): (Vec<Instr>, Vec<Site>) = body.into_iter().unzip();
    for ins in &mut instrs {
        ins.set_regs(&|r| map[r as usize]);
    }
    for s in &mut stores {
        s.reg = map[s.reg as usize];
    }
    for r in &mut reductions {
        r.reg = map[r.reg as usize];
    }
    FusedKernel {
        domain,
        inputs,
        outputs,
        instrs,
        instr_sites,
        stores,
        reductions,
        reg_dtypes,
        params: k.params.clone(),
        // A split kernel's halves run without the checks (their instructions are renumbered).
        traps: Vec::new(),
    }
}
