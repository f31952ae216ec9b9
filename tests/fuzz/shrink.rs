//! Delta debugging: drops statements (and everything that depends on them), flattens blocks,
//! cuts section calls and simplifies single ops (an argsort without its NaN mask, a descending
//! sort or argsort ascending) while the program still fails, so a failure prints as a short
//! reproducer.

use super::program::{Expr, Program, Stmt};
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
        version: p.version,
        stmts: cascade(kept, &mut gone),
    }
}

/// A simpler form of one op, if it has one (same type and shape, so what reads it still fits;
/// a form the oracle refuses makes the program invalid, which does not count as failing).
fn simpler_expr(e: &Expr) -> Option<Expr> {
    Some(match e.clone() {
        Expr::Argsort {
            a,
            axis,
            desc,
            nan: Some(_),
        } => Expr::Argsort {
            a,
            axis,
            desc,
            nan: None,
        },
        Expr::Argsort {
            a,
            axis: axis @ Some(_),
            desc: true,
            nan: None,
        } => Expr::Argsort {
            a,
            axis,
            desc: false,
            nan: None,
        },
        Expr::Sort {
            a,
            axis: axis @ Some(_),
            desc: true,
        } => Expr::Sort {
            a,
            axis,
            desc: false,
        },
        _ => return None,
    })
}

/// Simpler forms of statement `i`: a block's body inline, a section with fewer calls, a simpler
/// op.
fn simpler(p: &Program, i: usize) -> Vec<Program> {
    let mut out = vec![];
    match &p.stmts[i] {
        Stmt::Let { id, ty, expr } => {
            if let Some(expr) = simpler_expr(expr) {
                let mut q = p.clone();
                q.stmts[i] = Stmt::Let {
                    id: *id,
                    ty: *ty,
                    expr,
                };
                // The mask's statement may now go (the next round drops it).
                out.push(q);
            }
        }
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
