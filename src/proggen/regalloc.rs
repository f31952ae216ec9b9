//! Register allocation for fused kernels: SSA values are packed onto as few tile registers as
//! liveness allows, so a long chain keeps its working set in cache. Constants keep registers of
//! their own (filled once per worker).

use super::kernel::{Instr, Reg};
use crate::ir::DType;

/// Rewrites `instrs`, `stores` and `reductions` registers in place; returns each register's type.
pub fn allocate(
    instrs: &mut [Instr],
    value_dtypes: &[DType],
    outputs: &mut [&mut Reg],
) -> Vec<DType> {
    let n = value_dtypes.len();
    let end = instrs.len();
    let mut last_use = vec![None::<usize>; n];
    for (i, ins) in instrs.iter().enumerate() {
        for s in ins.srcs() {
            last_use[s as usize] = Some(i);
        }
    }
    for r in outputs.iter() {
        last_use[**r as usize] = Some(end);
    }
    let mut is_const = vec![false; n];
    for ins in instrs.iter() {
        if matches!(ins, Instr::Const { .. }) {
            is_const[ins.dst() as usize] = true;
        }
    }
    let mut map = vec![u32::MAX; n];
    let mut reg_dtypes: Vec<DType> = Vec::new();
    let mut free: Vec<Vec<Reg>> = vec![Vec::new(); DType::ALL.len()];
    let slot = |d: DType| DType::ALL.iter().position(|&x| x == d).unwrap_or(0);
    for (i, ins) in instrs.iter().enumerate() {
        let v = ins.dst() as usize;
        let d = value_dtypes[v];
        let konst = is_const[v];
        let reuse = if konst { None } else { free[slot(d)].pop() };
        let r = match reuse {
            Some(r) => r,
            None => {
                reg_dtypes.push(d);
                (reg_dtypes.len() - 1) as Reg
            }
        };
        map[v] = r;
        if last_use[v].is_none() && !konst {
            free[slot(d)].push(r);
        }
        let mut srcs = ins.srcs();
        srcs.sort_unstable();
        srcs.dedup();
        for s in srcs {
            let s = s as usize;
            if last_use[s] == Some(i) && !is_const[s] {
                free[slot(value_dtypes[s])].push(map[s]);
            }
        }
    }
    for ins in instrs.iter_mut() {
        ins.set_regs(&|r| map[r as usize]);
    }
    for r in outputs.iter_mut() {
        **r = map[**r as usize];
    }
    reg_dtypes
}
