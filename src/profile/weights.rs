//! The seed's CK weights (833): how a kernel's cost is shared among the call sites fused into it,
//! estimated from the op table's instruction costs (`Instr::cost`, reductions' `ReduceOp::cost`).

use crate::ir::Site;
use crate::proggen::kernel::FusedKernel;
use crate::proggen::sequence::Kernel;

/// `file:line` of a call site (the profiler's key: columns are left out).
pub fn site_key(s: Site) -> String {
    format!("{}:{}", s.file(), s.line())
}

/// Each call site's share of `kernel`'s estimated cost, summing to 1 (largest first, then by
/// site). `sites` are the program's call sites (an intrinsic's cost is shared equally among them).
pub fn kernel_weights(kernel: &Kernel, sites: &[Site]) -> Vec<(String, f64)> {
    let mut costs: Vec<(String, f64)> = Vec::new();
    let mut add = |site: String, c: f64| match costs.iter_mut().find(|(s, _)| *s == site) {
        Some(e) => e.1 += c,
        None => costs.push((site, c)),
    };
    match kernel {
        Kernel::Fused(k) => fused_costs(k, &mut add),
        Kernel::Intrinsic(_) => sites.iter().for_each(|&s| add(site_key(s), 1.0)),
    }
    let total: f64 = costs.iter().map(|c| c.1).sum();
    if total <= 0.0 {
        return match sites.first() {
            Some(&s) => vec![(site_key(s), 1.0)],
            None => vec![("unknown:0".into(), 1.0)],
        };
    }
    for c in &mut costs {
        c.1 /= total;
    }
    costs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    costs
}

/// Adds each instruction's cost to its call site; a reduction's to the site of the value it
/// reduces.
fn fused_costs(k: &FusedKernel, add: &mut impl FnMut(String, f64)) {
    for (i, ins) in k.instrs.iter().enumerate() {
        add(site_key(k.instr_sites[i]), ins.cost() as f64);
    }
    for r in &k.reductions {
        let at = k
            .instrs
            .iter()
            .rposition(|i| i.dst() == r.reg)
            .or_else(|| k.instrs.len().checked_sub(1));
        if let Some(i) = at {
            add(site_key(k.instr_sites[i]), r.op.cost() as f64);
        }
    }
}
