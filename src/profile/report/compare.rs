//! Comparing two runs (the seed's "examined for performance anomalies between different
//! application execution runs"): per call site, the estimated device time before and after, with
//! large changes flagged.

use super::{fmt_ns, site_costs, totals};
use crate::profile::schema::Run;
use std::fmt::Write;

/// A call site's (or a total's) time in two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `file:line`, or `total: <what>` for a run total.
    pub what: String,
    /// Time in the first run.
    pub before_ns: f64,
    /// Time in the second run.
    pub after_ns: f64,
    /// `after / before` (infinite when it was zero before).
    pub ratio: f64,
    /// Slower by at least the threshold's factor (and by at least 10 µs).
    pub slower: bool,
    /// Faster by at least the threshold's factor (and by at least 10 µs).
    pub faster: bool,
}

/// Every call site's estimated device time in `a` and `b`, and the run totals, largest change
/// first; `factor` (e.g. 1.5) is the ratio from which a change is flagged.
pub fn compare(a: &Run, b: &Run, factor: f64) -> Vec<Change> {
    let sa = site_costs(a);
    let sb = site_costs(b);
    let mut sites: Vec<&str> = sa.iter().chain(&sb).map(|s| s.site.as_str()).collect();
    sites.sort();
    sites.dedup();
    let get =
        |v: &[super::SiteCost], s: &str| v.iter().find(|c| c.site == s).map_or(0.0, |c| c.est_ns);
    let (ta, tb) = (totals(a), totals(b));
    let mut out: Vec<Change> = sites
        .into_iter()
        .map(|s| change(s.to_string(), get(&sa, s), get(&sb, s), factor))
        .filter(|c| c.before_ns > 0.0 || c.after_ns > 0.0)
        .collect();
    for (what, x, y) in [
        ("total: kernels", ta.kernel_ns, tb.kernel_ns),
        ("total: wall", ta.wall_ns, tb.wall_ns),
        ("total: compiles", ta.compile_ns, tb.compile_ns),
        ("total: reads", ta.read_ns, tb.read_ns),
    ] {
        out.push(change(what.into(), x as f64, y as f64, factor));
    }
    out.sort_by(|x, y| {
        (y.after_ns - y.before_ns)
            .abs()
            .total_cmp(&(x.after_ns - x.before_ns).abs())
            .then(x.what.cmp(&y.what))
    });
    out
}

fn change(what: String, before_ns: f64, after_ns: f64, factor: f64) -> Change {
    let ratio = if before_ns > 0.0 {
        after_ns / before_ns
    } else if after_ns > 0.0 {
        f64::INFINITY
    } else {
        1.0
    };
    let big = (after_ns - before_ns).abs() >= 10_000.0;
    Change {
        what,
        before_ns,
        after_ns,
        ratio,
        slower: big && ratio >= factor,
        faster: big && ratio <= 1.0 / factor,
    }
}

/// [`compare`] as text, flagged lines marked `SLOWER` / `faster`.
pub fn compare_text(a: &Run, b: &Run, factor: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "== compare: run {} -> run {} (flagged at x{factor}) ==",
        a.meta.started_unix_ms, b.meta.started_unix_ms
    );
    let _ = writeln!(
        s,
        "{:>12} {:>12} {:>8}  flag    call site",
        "before", "after", "ratio"
    );
    for c in compare(a, b, factor) {
        let _ = writeln!(
            s,
            "{:>12} {:>12} {:>8.2}  {:<7} {}",
            fmt_ns(c.before_ns),
            fmt_ns(c.after_ns),
            c.ratio,
            if c.slower {
                "SLOWER"
            } else if c.faster {
                "faster"
            } else {
                ""
            },
            c.what
        );
    }
    s
}
