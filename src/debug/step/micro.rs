//! Micro-kernels (seed 000): a fused kernel cut into one kernel per instruction, each a
//! [`FusedKernel`] of one operation that loads its operands (the fused kernel's inputs through
//! the instruction's own index map, or earlier steps' spill buffers at the domain's linear
//! index), computes, and stores to a spill buffer of the operation's element type; then one
//! micro-kernel per reduction, reducing its register's spill over the fused kernel's domain.
//! Stepping a scope runs them over the least box of the domain that covers it
//! (`window.rs`), so one element computes one element per step.
//! They are ordinary kernels, so every executor runs them through its normal path (tile VM,
//! native tier, OpenCL and WGSL renderers): nothing here renders code.

use super::window::Window;
use crate::ir::{DType, Site};
use crate::proggen::kernel::{Domain, FusedKernel, IndexMap, Instr, ReduceStore, Reg, Store};
use crate::proggen::sequence::{
    ExecutorKind, Formal, FormalId, FormalRole, Kernel, LaunchSpec, Program, ProgramSequence,
};
use std::sync::Arc;

/// One micro-kernel: what it computes and where its result is spilled.
#[derive(Debug, Clone)]
pub struct MicroStep {
    /// The fused kernel's instruction it runs, or `None` for reduction `reduction`.
    pub instr: Option<usize>,
    /// For a reduction step: the reduction's index in the fused kernel.
    pub reduction: Option<usize>,
    /// The formal of its spill buffer.
    pub spill: FormalId,
    /// The fused kernel's parameter slots its own slots take their values from, in order.
    pub params: Vec<u32>,
    /// The operation's name.
    pub op: String,
    pub dtype: DType,
    pub site: Site,
}

/// A fused kernel's micro-kernels as one program sequence: formals `0..inputs` are the fused
/// kernel's inputs, then one spill buffer per step, in step order.
pub struct MicroPlan {
    pub seq: ProgramSequence,
    pub steps: Vec<MicroStep>,
}

/// The name of an instruction's operation.
pub fn op_name(i: &Instr) -> String {
    match i {
        Instr::Load { .. } => "load".into(),
        Instr::Const { .. } => "const".into(),
        Instr::Random { .. } => "random".into(),
        Instr::Gen { kind, .. } => format!("{kind:?}")
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("generate")
            .to_lowercase(),
        Instr::Unary { op, .. } => op.name().into(),
        Instr::Binary { op, .. } => op.name().into(),
        Instr::Select { .. } => "select".into(),
        Instr::Cast { .. } => "cast".into(),
    }
}

/// The micro-kernels of `k`, whose inputs are formals of `input_lens` elements, launched in
/// tiles of `tile` elements on the CPU, over `window` of the domain (element-wise kernels; a
/// kernel with reductions runs over its whole domain, whatever the window).
pub fn plan(k: &FusedKernel, input_lens: &[usize], tile: usize, window: &Window) -> MicroPlan {
    let domain = &k.domain.shape;
    let whole = Window::all(domain);
    let window = if k.reductions.is_empty() {
        window
    } else {
        &whole
    };
    let moved = !window.is_all(domain);
    let len = window.len();
    let mut seq = ProgramSequence {
        programs: Vec::new(),
        formals: k
            .inputs
            .iter()
            .zip(input_lens)
            .map(|(&dtype, &len)| Formal {
                dtype,
                len,
                role: FormalRole::Input,
            })
            .collect(),
    };
    let elementwise = Domain {
        shape: window.shape.iter().copied().collect(),
        inner: 1,
        outer: len,
        perm: None,
    };
    // The spill formal holding each register's current value.
    let mut spill_of: Vec<FormalId> = vec![FormalId::MAX; k.reg_dtypes.len()];
    let mut steps = Vec::new();
    let mut add = |seq: &mut ProgramSequence,
                   mk: FusedKernel,
                   inputs: Vec<FormalId>,
                   out_len: usize,
                   step: MicroStep|
     -> FormalId {
        let spill = seq.formals.len() as FormalId;
        seq.formals.push(Formal {
            dtype: step.dtype,
            len: out_len,
            role: FormalRole::Output,
        });
        let reduces = !mk.reductions.is_empty();
        seq.programs.push(Program {
            kernel: Arc::new(Kernel::Fused(mk)),
            inputs,
            outputs: vec![spill],
            launch: LaunchSpec {
                domain_len: len,
                tile,
                tiles: len.div_ceil(tile),
                final_stage: reduces,
            },
            executor: ExecutorKind::Cpu,
            sites: vec![step.site].into(),
        });
        steps.push(MicroStep { spill, ..step });
        spill
    };
    for (i, ins) in k.instrs.iter().enumerate() {
        let dtype = k.reg_dtypes[ins.dst() as usize];
        let site = k.instr_sites[i];
        let (instrs, inputs, in_dtypes, reg_dtypes) = match ins {
            Instr::Load { input, map, .. } => (
                vec![Instr::Load {
                    dst: 0,
                    input: 0,
                    map: map.clone(),
                }],
                vec![*input as FormalId],
                vec![k.inputs[*input as usize]],
                vec![dtype],
            ),
            _ => {
                // Each distinct operand loaded from its spill, then the operation.
                let mut srcs: Vec<Reg> = ins.srcs().to_vec();
                srcs.dedup();
                let mut distinct: Vec<Reg> = Vec::new();
                for s in srcs {
                    if !distinct.contains(&s) {
                        distinct.push(s);
                    }
                }
                let mut instrs: Vec<Instr> = distinct
                    .iter()
                    .enumerate()
                    .map(|(t, _)| Instr::Load {
                        dst: t as Reg,
                        input: t as u32,
                        map: IndexMap::Contiguous,
                    })
                    .collect();
                let n = distinct.len() as Reg;
                let mut op = ins.clone();
                op.set_regs(&|r| {
                    distinct
                        .iter()
                        .position(|&d| d == r)
                        .map_or(n, |p| p as Reg)
                });
                // The destination may reuse an operand's register: set it last.
                *op.dst_mut() = n;
                instrs.push(op);
                let in_dtypes: Vec<DType> =
                    distinct.iter().map(|&r| k.reg_dtypes[r as usize]).collect();
                let mut reg_dtypes = in_dtypes.clone();
                reg_dtypes.push(dtype);
                let inputs = distinct.iter().map(|&r| spill_of[r as usize]).collect();
                (instrs, inputs, in_dtypes, reg_dtypes)
            }
        };
        let dst = instrs.len() as Reg - 1;
        let mut instrs = instrs;
        if moved {
            // The fused kernel's own maps (a load of its input, a generator, a random draw),
            // read over the window; spills are the window's own elements.
            let last = instrs.last_mut().expect("a micro-kernel has an operation");
            window.shift_instr(last, domain);
        }
        let slots = own_params(instrs.last_mut().expect("a micro-kernel has an operation"));
        let mk = FusedKernel {
            // Micro-kernels show values; traps stay with the fused kernel.
            traps: Vec::new(),
            domain: elementwise.clone(),
            inputs: in_dtypes,
            outputs: vec![dtype],
            instr_sites: vec![site; instrs.len()],
            instrs,
            stores: vec![Store {
                reg: dst,
                output: 0,
            }],
            reductions: Vec::new(),
            reg_dtypes,
            params: slots.iter().map(|&s| k.params[s as usize]).collect(),
        };
        let step = MicroStep {
            instr: Some(i),
            reduction: None,
            spill: 0,
            params: slots,
            op: op_name(ins),
            dtype,
            site,
        };
        spill_of[ins.dst() as usize] = add(&mut seq, mk, inputs, len, step);
    }
    for (r, red) in k.reductions.iter().enumerate() {
        let value = k.reg_dtypes[red.reg as usize];
        let dtype = k.outputs[red.output as usize];
        let site = k
            .instrs
            .iter()
            .rposition(|i| i.dst() == red.reg)
            .map_or(k.instr_sites[0], |i| k.instr_sites[i]);
        let mk = FusedKernel {
            // Micro-kernels show values; traps stay with the fused kernel.
            traps: Vec::new(),
            domain: k.domain.clone(),
            inputs: vec![value],
            outputs: vec![dtype],
            instrs: vec![Instr::Load {
                dst: 0,
                input: 0,
                map: IndexMap::Contiguous,
            }],
            instr_sites: vec![site],
            stores: Vec::new(),
            reductions: vec![ReduceStore {
                reg: 0,
                op: red.op,
                output: 0,
            }],
            reg_dtypes: vec![value],
            params: Vec::new(),
        };
        let step = MicroStep {
            instr: None,
            reduction: Some(r),
            spill: 0,
            params: Vec::new(),
            op: red.op.name().into(),
            dtype,
            site,
        };
        let inputs = vec![spill_of[red.reg as usize]];
        add(&mut seq, mk, inputs, k.domain.outer, step);
    }
    MicroPlan { seq, steps }
}

/// Renumbers the parameter slots `i` reads from 0 in order of use; returns the fused kernel's
/// slots they stand for (a micro-kernel takes only its own operation's parameters, so its source
/// depends on nothing else of the fused kernel).
fn own_params(i: &mut Instr) -> Vec<u32> {
    let mut slots = Vec::new();
    let mut take = |s: &mut u32| {
        slots.push(*s);
        *s = slots.len() as u32 - 1;
    };
    match i {
        Instr::Const { slot, .. } => take(slot),
        Instr::Random {
            key_slot,
            counter_slot,
            range_slot,
            ..
        } => {
            take(key_slot);
            take(counter_slot);
            if let Some(r) = range_slot {
                take(r);
            }
        }
        _ => {}
    }
    slots
}
