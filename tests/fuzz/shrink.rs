//! Delta debugging: drops statements (and everything that depends on them), flattens blocks and
//! cuts section calls while the program still fails, so a failure prints as a short reproducer.

use super::program::{Program, Stmt};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Removes statements that use a variable in `gone`, adding what they bind to `gone`.
fn cascade(stmts: Vec<Stmt>, gone: &mut HashSet<usize>) -> Vec<Stmt> {
    let mut out = vec![];
    for s in stmts {
        match s {
            Stmt::Block(body) => {
                let body = cascade(body, gone);
                let b = Stmt::Block(body);
                if !b.binds().is_empty() {
                    out.push(b);
                } else if let Stmt::Block(body) = b {
                    out.extend(body);
                }
            }
            Stmt::Reuse(mut sec) => {
                sec.calls.retain(|c| {
                    let dead = c.0.iter().any(|i| gone.contains(i));
                    if dead {
                        gone.extend(c.2.iter().copied());
                    }
                    !dead
                });
                if !sec.calls.is_empty() {
                    out.push(Stmt::Reuse(sec));
                }
            }
            s => {
                if s.uses().iter().any(|u| gone.contains(u)) {
                    gone.extend(s.binds());
                } else {
                    out.push(s);
                }
            }
        }
    }
    out
}

/// The program without top-level statements `from..to`.
fn without(p: &Program, from: usize, to: usize) -> Program {
    let mut gone = HashSet::new();
    let mut kept = vec![];
    for (i, s) in p.stmts.iter().enumerate() {
        if (from..to).contains(&i) {
            gone.extend(s.binds());
        } else {
            kept.push(s.clone());
        }
    }
    Program {
        seed: p.seed,
        stmts: cascade(kept, &mut gone),
    }
}

/// Simpler forms of statement `i`: a block's body inline, a section with fewer calls.
fn simpler(p: &Program, i: usize) -> Vec<Program> {
    let mut out = vec![];
    match &p.stmts[i] {
        Stmt::Block(body) => {
            let mut q = p.clone();
            q.stmts.splice(i..=i, body.iter().cloned());
            out.push(q);
        }
        Stmt::Reuse(sec) if sec.calls.len() > 1 => {
            for k in 0..sec.calls.len() {
                let mut s = sec.clone();
                let c = s.calls.remove(k);
                let mut q = p.clone();
                q.stmts[i] = Stmt::Reuse(s);
                let mut gone: HashSet<usize> = c.2.into_iter().collect();
                q.stmts = cascade(q.stmts, &mut gone);
                out.push(q);
            }
        }
        _ => {}
    }
    out
}

/// Shrinks `p` while `fails` holds, for at most `budget`.
pub fn shrink(p: &Program, fails: &dyn Fn(&Program) -> bool, budget: Duration) -> Program {
    let start = Instant::now();
    let mut best = p.clone();
    let mut changed = true;
    while changed && start.elapsed() < budget {
        changed = false;
        let mut chunk = best.stmts.len().div_ceil(2).max(1);
        while chunk >= 1 && start.elapsed() < budget {
            let mut i = 0;
            while i < best.stmts.len() && start.elapsed() < budget {
                let q = without(&best, i, (i + chunk).min(best.stmts.len()));
                if q.stmts.len() < best.stmts.len() && fails(&q) {
                    best = q;
                    changed = true;
                } else {
                    i += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
        for i in 0..best.stmts.len() {
            if start.elapsed() >= budget {
                break;
            }
            if let Some(q) = simpler(&best, i).into_iter().find(|q| fails(q)) {
                best = q;
                changed = true;
                break;
            }
        }
    }
    best
}
