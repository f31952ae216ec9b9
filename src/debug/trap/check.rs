//! The predicate checks a fused kernel carries when traps are on ([`TrapCheck`]): which
//! instruction's result is tested, by which predicate ([`TrapPred`]), and for whom (op name,
//! assertion message, the checked array's shape). The CPU tile VM tests a tile at a time
//! ([`super::passes::first_failing`]); the GPU printers compile the same predicate into the kernel
//! (`codegen.rs`). A leaf module: it needs only `ir`.

use crate::ir::{DType, NodeInfo, Shape};
use std::sync::Arc;

/// What a check tests. A value *fails* the check when the predicate says so.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrapPred {
    /// Fails on NaN.
    Nan,
    /// Fails on an infinity.
    Inf,
    /// Fails on NaN or an infinity.
    NonFinite,
    /// Fails outside `lo ..= hi` (NaN fails too).
    OutOfRange {
        /// Least allowed value.
        lo: f64,
        /// Greatest allowed value.
        hi: f64,
    },
    /// Fails on `false` (a bool array asserted true).
    False,
}

impl TrapPred {
    /// Whether `v` fails the predicate.
    #[inline]
    pub fn fails(self, v: f64) -> bool {
        match self {
            TrapPred::Nan => v.is_nan(),
            TrapPred::Inf => v.is_infinite(),
            TrapPred::NonFinite => !v.is_finite(),
            TrapPred::OutOfRange { lo, hi } => !(v >= lo && v <= hi),
            TrapPred::False => v == 0.0,
        }
    }
    /// A short description of what failed, for messages (`NaN`, `infinity`, ...).
    pub fn describe(self, v: f64) -> String {
        match self {
            TrapPred::Nan | TrapPred::Inf | TrapPred::NonFinite if v.is_nan() => "NaN".into(),
            TrapPred::Nan | TrapPred::Inf | TrapPred::NonFinite => "an infinity".into(),
            TrapPred::OutOfRange { lo, hi } => format!("a value outside {lo} ..= {hi}"),
            TrapPred::False => "false".into(),
        }
    }
}

/// One check compiled into a fused kernel: the result of instruction `instr` (at the kernel's
/// own positions: the checked array's element `lin` is domain element `lin`) must pass `pred`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrapCheck {
    /// The instruction whose result is tested, right after it runs.
    pub instr: u32,
    /// The test.
    pub pred: TrapPred,
    /// The op's name (`div`, `log`, ...; `assert` for an assertion).
    pub op: &'static str,
    /// Where the op (or the assertion) was recorded.
    pub site: crate::ir::Site,
    /// For a user assertion: its message (`None` for NaN/Inf traps).
    pub message: Option<Arc<str>>,
    /// The checked array's shape (the kernel's domain), for the multi-dimensional index.
    pub shape: Shape,
}

impl TrapPred {
    /// For NaN/Inf traps: whether a failing result `v` was *created* by the op, not passed on
    /// from an operand (IEEE's invalid-operation, overflow and division-by-zero conditions): a
    /// NaN from operands none of which is NaN, an infinity from finite operands.
    pub fn created(self, v: f64, mut operands: impl Iterator<Item = f64>) -> bool {
        let nan = v.is_nan() && matches!(self, TrapPred::Nan | TrapPred::NonFinite);
        let inf = v.is_infinite() && matches!(self, TrapPred::Inf | TrapPred::NonFinite);
        (nan || inf) && operands.all(|o| if nan { !o.is_nan() } else { o.is_finite() })
    }
}

impl TrapCheck {
    /// Whether the check is a NaN/Inf trap (it then fires only where the op created the bad
    /// value, see [`TrapPred::created`]) rather than an assertion.
    pub fn on_created(&self) -> bool {
        self.message.is_none()
    }
}

/// Row-major coordinates of linear index `lin` in `shape`.
pub fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &n) in shape.iter().enumerate().rev() {
        let n = n.max(1);
        idx[k] = lin % n;
        lin /= n;
    }
    idx
}

/// The checks on the result of instruction `instr`, computed for node `n` at the kernel's own
/// positions: NaN/Inf traps under `cfg` for a float result of an element-wise op, and the
/// node's assertions.
pub fn checks_for(
    instr: u32,
    n: &NodeInfo,
    asserts: &[super::assertions::Assertion],
    cfg: Option<&super::TrapConfig>,
    shape: &Shape,
) -> Vec<TrapCheck> {
    let mut out = Vec::new();
    if let Some(cfg) = cfg
        && matches!(n.dtype, DType::F32 | DType::F64)
        && asserts.is_empty()
        && cfg.checks_op(n.op.base_name())
    {
        let pred = match (cfg.nan, cfg.inf) {
            (true, true) => TrapPred::NonFinite,
            (true, false) => TrapPred::Nan,
            _ => TrapPred::Inf,
        };
        out.push(TrapCheck {
            instr,
            pred,
            op: n.op.base_name(),
            site: n.site,
            message: None,
            shape: shape.clone(),
        });
    }
    for a in asserts {
        out.push(TrapCheck {
            instr,
            pred: a.pred,
            op: "assert",
            site: n.site,
            message: Some(a.message.clone()),
            shape: shape.clone(),
        });
    }
    out
}
