//! The debugger's reference results and result comparison (the seed's FIGS. 9A and 9C). With
//! comparison on, every recorded op also gets a reference value from the sequential interpreter
//! (`reference`), computed from its inputs' reference values; optimised results are compared with
//! them by the rule in `compare`, either asynchronously after each program runs (every op's result
//! is then stored, so every op is checked) or synchronously when a read copies data out.
//! Mismatches are reported with the op, its call site, the element and both values.
//! Breakpoints, watchpoints, the debugger's modes and its console are in `breakpoints`.
//! Stepping inside fused kernels and the first diverging op of a mismatch are in `step`; traps
//! (predicate checks compiled into kernels) and resumable passes in `trap`.

pub mod breakpoints;
pub mod checker;
pub mod compare;
pub mod conditioning;
mod hooks;
pub mod reference;
pub mod step;
pub mod trap;

pub use compare::{Tolerance, Verdict};

use crate::ir::{DType, Site};
use std::path::PathBuf;

/// When results are compared with their references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareMode {
    /// Every op's result, asynchronously, as programs complete (all results are stored).
    AfterComputation,
    /// Synchronously, when a read hands data to the application.
    OnCopyOut,
}

/// What a mismatch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchAction {
    /// Panic (on copy-out at the read; after computation at the next read).
    Abort,
    /// Return an error from the read (after computation: from the next read).
    Error,
    /// Record it, log it (and append it to the log file, if set) and continue.
    Log,
}

/// Settings of comparison mode.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// When results are compared: after each computation or when a read copies data out.
    pub mode: CompareMode,
    /// What a mismatch does (default [`MismatchAction::Log`]).
    pub action: MismatchAction,
    /// Allowed error per element type (index by `DType as usize`).
    pub tolerances: [Tolerance; DType::ALL.len()],
    /// Allowed error for particular ops (by name and element type), over the per-type one.
    /// By default `matmul`: its rounding grows with the inner dimension and the size of the
    /// products, not of the result (f32: 1e-4 relative + 1e-4; f64: 1e-10 + 1e-12).
    pub op_tolerances: Vec<(String, DType, Tolerance)>,
    /// Also append each mismatch to this file.
    pub log_file: Option<PathBuf>,
    /// Kernels (fused ones and intrinsics' launches) kept to narrow a mismatch to its first
    /// diverging op (0: none). While comparison mode is on, the last `narrow` kernels are kept as
    /// with `Runtime::set_stepping` (their inputs held until they are dropped from the kept ones),
    /// and a mismatch a read reports ([`MismatchAction::Error`], [`MismatchAction::Abort`], and
    /// [`MismatchAction::Log`] on copy-out) names the first IR node whose value differs from its
    /// reference; `Runtime::divergences` gives it with a reproducing program. Default
    /// [`DEFAULT_NARROW_KERNELS`]: keeping them costs little beside the reference interpreter
    /// (BENCHMARKS.md, "Comparison mode: narrowing").
    pub narrow: usize,
}

/// The kernels comparison mode keeps for narrowing by default ([`CompareConfig::narrow`]).
pub const DEFAULT_NARROW_KERNELS: usize = 8;

impl CompareConfig {
    /// Comparison in `mode` with the default action ([`MismatchAction::Log`]), the default
    /// tolerances ([`Tolerance::default_for`] for each type, wider ones for `matmul`) and no log
    /// file.
    pub fn new(mode: CompareMode) -> CompareConfig {
        CompareConfig {
            mode,
            action: MismatchAction::Log,
            tolerances: DType::ALL.map(Tolerance::default_for),
            op_tolerances: vec![
                (
                    "matmul".into(),
                    DType::F32,
                    Tolerance {
                        scale: 1e-4,
                        floor: 1e-4,
                    },
                ),
                (
                    "matmul".into(),
                    DType::F64,
                    Tolerance {
                        scale: 1e-10,
                        floor: 1e-12,
                    },
                ),
            ],
            log_file: None,
            narrow: DEFAULT_NARROW_KERNELS,
        }
    }
    /// Keep the last `kernels` kernels to narrow mismatches to their first diverging op
    /// (0: do not narrow); see [`CompareConfig::narrow`].
    pub fn narrow(mut self, kernels: usize) -> Self {
        self.narrow = kernels;
        self
    }
    /// The allowance for one op (by name) on one element type.
    pub fn op_tolerance(mut self, op: &str, dtype: DType, tol: Tolerance) -> Self {
        self.op_tolerances
            .retain(|(o, d, _)| !(o == op && *d == dtype));
        self.op_tolerances.push((op.into(), dtype, tol));
        self
    }
    /// The allowance that applies to `op` on `dtype`.
    pub fn tolerance_for(&self, op: &str, dtype: DType) -> Tolerance {
        self.op_tolerances
            .iter()
            .find(|(o, d, _)| o == op && *d == dtype)
            .map_or(self.tolerances[dtype as usize], |&(_, _, t)| t)
    }
    /// What a mismatch does.
    pub fn action(mut self, action: MismatchAction) -> Self {
        self.action = action;
        self
    }
    /// The allowance for one element type.
    pub fn tolerance(mut self, dtype: DType, tol: Tolerance) -> Self {
        self.tolerances[dtype as usize] = tol;
        self
    }
    /// The same allowance for every floating-point type (integers and bools stay exact).
    pub fn float_tolerance(mut self, tol: Tolerance) -> Self {
        self.tolerances[DType::F32 as usize] = tol;
        self.tolerances[DType::F64 as usize] = tol;
        self.tolerances[DType::C64 as usize] = tol;
        self.tolerances[DType::C128 as usize] = tol;
        self
    }
    /// Also append each mismatch to the file at `path`.
    pub fn log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_file = Some(path.into());
        self
    }
    /// From `ARRAYFLOW_COMPARE=after|copyout[:abort|error|log][:narrow[=N]|nonarrow]`.
    pub fn from_env() -> Option<CompareConfig> {
        CompareConfig::parse(&std::env::var("ARRAYFLOW_COMPARE").ok()?)
    }
    /// Parses `ARRAYFLOW_COMPARE`'s syntax: the mode (`after`, `copyout`), then, after colons,
    /// the action (`abort`, `error`, `log`, the default) and narrowing (`narrow`: the default
    /// count of kernels, `narrow=N`, `nonarrow`: off).
    ///
    /// ```
    /// use arrayflow::{CompareConfig, CompareMode, MismatchAction};
    /// let c = CompareConfig::parse("copyout:error:nonarrow").unwrap();
    /// assert_eq!((c.mode, c.action, c.narrow), (CompareMode::OnCopyOut, MismatchAction::Error, 0));
    /// assert_eq!(CompareConfig::parse("after:narrow=3").unwrap().narrow, 3);
    /// assert_eq!(CompareConfig::parse("after").unwrap().narrow, arrayflow::debug::DEFAULT_NARROW_KERNELS);
    /// ```
    pub fn parse(v: &str) -> Option<CompareConfig> {
        let mut parts = v.split(':');
        let mode = match parts.next()? {
            "after" => CompareMode::AfterComputation,
            "copyout" | "copy-out" => CompareMode::OnCopyOut,
            _ => return None,
        };
        let mut c = CompareConfig::new(mode);
        for w in parts {
            match w {
                "abort" => c.action = MismatchAction::Abort,
                "error" => c.action = MismatchAction::Error,
                "nonarrow" | "no-narrow" => c.narrow = 0,
                "narrow" => c.narrow = DEFAULT_NARROW_KERNELS,
                // `log`, and words not known: the defaults.
                _ => {
                    if let Some(Ok(n)) = w.strip_prefix("narrow=").map(str::parse::<usize>) {
                        c.narrow = n;
                    }
                }
            }
        }
        Some(c)
    }
}

/// One optimised result that disagreed with its reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The op's name (`add`, `sqrt`, `sum`, ...).
    pub op: String,
    /// Where the op was recorded.
    pub site: Site,
    /// The first element (row-major index) that differs, and how many differ.
    pub element: usize,
    /// How many elements of the result differ.
    pub count: usize,
    /// The optimised value of the first differing element (as f64).
    pub optimised: f64,
    /// The reference value of the first differing element (as f64).
    pub reference: f64,
    /// `|optimised - reference|` and the allowance it exceeded.
    pub error: f64,
    /// The allowance `error` exceeded: `|reference * scale| + floor`.
    pub allowed: f64,
    /// Creation order of the op (lower = recorded earlier).
    pub order: u64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: `{}` differs from its reference at element {} ({} elements differ): optimised {}, reference {}, error {:e} > allowed {:e}",
            self.site,
            self.op,
            self.element,
            self.count,
            self.optimised,
            self.reference,
            self.error,
            self.allowed
        )
    }
}

/// What comparison saw of one op (call site): how many elements were checked, the largest
/// relative error among finite values, and how many results mismatched.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSummary {
    /// The op's name (`add`, `sqrt`, `sum`, ...).
    pub op: String,
    /// Where the op was recorded.
    pub site: Site,
    /// Elements compared with their references.
    pub checked: usize,
    /// The largest `|optimised - reference| / |reference|` among finite values.
    pub max_relative_error: f64,
    /// Results of this op that mismatched.
    pub mismatches: usize,
}

/// Compares optimised values with reference values (allowances scaled by `magnitude` where
/// given, see [`Tolerance`]): the first failing element, if any, how many
/// elements were checked, and the largest relative error among finite values.
pub fn check(
    op: &str,
    site: Site,
    order: u64,
    optimised: impl Iterator<Item = crate::ir::Scalar>,
    reference: &crate::exec::TypedVec,
    magnitude: Option<&[f64]>,
    tol: Tolerance,
) -> (Option<Mismatch>, usize, f64) {
    let mut first: Option<Mismatch> = None;
    let (mut count, mut checked, mut max_rel) = (0, 0, 0.0f64);
    for (i, o) in optimised.enumerate() {
        let rz = reference.get(i);
        let m = magnitude.and_then(|m| m.get(i).copied()).unwrap_or(0.0);
        checked += 1;
        // Complex values: each part by the real rule, scaled by the reference's modulus.
        let (parts, m) = match compare::parts(o, rz) {
            Some((parts, modulus)) => (parts, m.max(modulus)),
            None => ([(o.as_f64(), rz.as_f64()), (0.0, 0.0)], m),
        };
        let n = if rz.dtype().is_complex() { 2 } else { 1 };
        let fail = parts[..n].iter().find_map(|&(o, r)| {
            if o.is_finite() && r.is_finite() && o != r {
                max_rel = max_rel.max((o - r).abs() / r.abs().max(f64::MIN_POSITIVE));
            }
            match compare::compare_conditioned(o, r, m, tol) {
                Verdict::Fail { error, allowed } => Some((o, r, error, allowed)),
                Verdict::Pass => None,
            }
        });
        if let Some((o, r, error, allowed)) = fail {
            count += 1;
            first.get_or_insert(Mismatch {
                op: op.into(),
                site,
                element: i,
                count: 0,
                optimised: o,
                reference: r,
                error,
                allowed,
                order,
            });
        }
    }
    (first.map(|m| Mismatch { count, ..m }), checked, max_rel)
}

pub use crate::exec::cpu::fault::*;
