//! One breakpoint or watchpoint: where it stops (a call site's file and line, or a watched
//! array), its condition on the values, its ignore count and how often it was hit.

use super::values::Values;
use crate::ir::{NodeId, Site};
use std::sync::Arc;

/// The number of a breakpoint or watchpoint in its debugger (`info breakpoints` shows it; the
/// console's `delete <n>` takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BreakpointId(pub u32);

impl std::fmt::Display for BreakpointId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0.to_string())
    }
}

/// A predicate on the host copy of the value recorded at a breakpoint.
#[derive(Clone)]
pub(crate) enum Condition {
    AnyNan,
    AnyInf,
    User(Arc<dyn Fn(&Values) -> bool + Send + Sync>),
}

impl Condition {
    pub(crate) fn holds(&self, v: &Values) -> bool {
        match self {
            Condition::AnyNan => v.any_nan(),
            Condition::AnyInf => v.any_inf(),
            Condition::User(f) => f(v),
        }
    }
    fn describe(&self) -> &'static str {
        match self {
            Condition::AnyNan => "any NaN",
            Condition::AnyInf => "any infinity",
            Condition::User(_) => "user predicate",
        }
    }
}

/// Where a breakpoint stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A result recorded at this file (suffix match) and line.
    Line { file: String, line: u32 },
    /// The array whose current node this is: its in-place updates, and its computation.
    Watch(NodeId),
}

/// A breakpoint at a call site (`file:line`), built with [`Breakpoint::at`] and refined with a
/// condition and an ignore count; pass it to [`crate::Debugger::breakpoint`] or
/// [`crate::DebugGuard::add`].
///
/// `file` matches the recorded call site's file by suffix at a path boundary: `"heat.rs"`,
/// `"examples/heat.rs"` and the full path all match `examples/heat.rs`.
#[derive(Clone)]
pub struct Breakpoint {
    pub(crate) location: Location,
    pub(crate) condition: Option<Condition>,
    pub(crate) ignore: u64,
    pub(crate) enabled: bool,
}

impl Breakpoint {
    /// Stops after each API call at `file:line` records its result.
    pub fn at(file: &str, line: u32) -> Breakpoint {
        Breakpoint {
            location: Location::Line {
                file: file.replace('\\', "/"),
                line,
            },
            condition: None,
            ignore: 0,
            enabled: true,
        }
    }
    /// Only stops when the value recorded there has a NaN element.
    pub fn if_nan(mut self) -> Breakpoint {
        self.condition = Some(Condition::AnyNan);
        self
    }
    /// Only stops when the value recorded there has an infinite element.
    pub fn if_inf(mut self) -> Breakpoint {
        self.condition = Some(Condition::AnyInf);
        self
    }
    /// Only stops when `f` returns `true` for the host copy of the value recorded there (computed
    /// without disturbing the real queue, as [`crate::Stop::values`]).
    pub fn when(mut self, f: impl Fn(&Values) -> bool + Send + Sync + 'static) -> Breakpoint {
        self.condition = Some(Condition::User(Arc::new(f)));
        self
    }
    /// Passes the first `n` hits without stopping (hits are counted only when the condition
    /// holds, as in gdb).
    pub fn ignore(mut self, n: u64) -> Breakpoint {
        self.ignore = n;
        self
    }
    /// Starts disabled (counted as never hit until enabled).
    pub fn disabled(mut self) -> Breakpoint {
        self.enabled = false;
        self
    }
}

/// A breakpoint as the debugger holds it: its number and how often it was hit.
#[derive(Clone)]
pub(crate) struct Armed {
    pub id: BreakpointId,
    pub bp: Breakpoint,
    pub hits: u64,
    /// A watchpoint: the node whose computation it last stopped at (a node computed again by a
    /// later flush, as unstored element-wise values are, stops once).
    pub computed: Option<NodeId>,
}

impl Armed {
    /// Whether a result recorded at `site` is at this breakpoint's line.
    pub(crate) fn matches_site(&self, site: Site) -> bool {
        match &self.bp.location {
            Location::Line { file, line } => {
                *line == site.line() && file_matches(file, site.file())
            }
            Location::Watch(_) => false,
        }
    }
    pub(crate) fn info(&self) -> BreakpointInfo {
        BreakpointInfo {
            id: self.id,
            what: match &self.bp.location {
                Location::Line { file, line } => format!("{file}:{line}"),
                Location::Watch(n) => format!("watch #{}", n.0),
            },
            condition: self.bp.condition.as_ref().map(|c| c.describe().to_string()),
            ignore: self.bp.ignore,
            hits: self.hits,
            enabled: self.bp.enabled,
        }
    }
}

/// `pattern` names `file`: equal, or a suffix of it starting at a path boundary.
pub(crate) fn file_matches(pattern: &str, file: &str) -> bool {
    let file = file.replace('\\', "/");
    let p = pattern.trim_start_matches("./");
    file == p || (file.ends_with(p) && file[..file.len() - p.len()].ends_with('/'))
}

/// What `info breakpoints` shows of one breakpoint or watchpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakpointInfo {
    /// Its number.
    pub id: BreakpointId,
    /// `file:line`, or `watch #<array>`.
    pub what: String,
    /// Its condition, described (`any NaN`, `any infinity`, `user predicate`).
    pub condition: Option<String>,
    /// Hits passed without stopping.
    pub ignore: u64,
    /// How often it was reached (with its condition holding).
    pub hits: u64,
    /// Whether it stops.
    pub enabled: bool,
}

impl std::fmt::Display for BreakpointInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<3} {:<8} {:<30} hits {}",
            self.id,
            if self.enabled { "enabled" } else { "disabled" },
            self.what,
            self.hits
        )?;
        if let Some(c) = &self.condition {
            write!(f, ", if {c}")?;
        }
        if self.ignore > 0 {
            write!(f, ", ignore first {}", self.ignore)?;
        }
        Ok(())
    }
}
