//! The seed's four text reports (section "Profiler"): summary, compute, I/O and runtime, each
//! sorted by cost and naming call sites by file:line.

use super::{fmt_bytes, fmt_ns, runtime_stats, site_costs, totals};
use crate::profile::schema::Run;
use std::fmt::Write;

/// All four reports, one after the other.
pub fn full_report(run: &Run) -> String {
    [
        summary_report(run),
        compute_report(run),
        io_report(run),
        runtime_report(run),
    ]
    .join("\n")
}

fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:5.1}%", 100.0 * part / whole)
    } else {
        "    -".into()
    }
}

/// High-level figures: API calls, kernel launches, and the time in computation, I/O and the
/// runtime's own work.
pub fn summary_report(run: &Run) -> String {
    let t = totals(run);
    let m = &run.meta;
    let mut s = String::new();
    let _ = writeln!(s, "== summary ==");
    let _ = writeln!(
        s,
        "run {} (pid {}, {}), arrayflow {}, schema {}",
        m.started_unix_ms, m.pid, m.platform, m.arrayflow_version, m.schema_version
    );
    for (i, e) in m.executors.iter().enumerate() {
        let _ = writeln!(s, "executor {i}: {e}");
    }
    let _ = writeln!(s, "device kernel timing: {}", m.device_timing);
    let w = t.wall_ns as f64;
    let _ = writeln!(s, "wall time             {:>12}", fmt_ns(w));
    let _ = writeln!(s, "API calls             {:>12}", t.api_calls);
    let _ = writeln!(s, "kernel launches       {:>12}", t.kernel_launches);
    let rows = [
        ("compute (kernels)", t.kernel_ns),
        ("I/O: reads", t.read_ns),
        ("I/O: writes", t.write_ns),
        ("I/O: moves and swaps", t.moved_ns),
        ("runtime: flushes", t.flush_ns),
        ("runtime: compiles", t.compile_ns),
        ("runtime: cache look-ups", t.lookup_ns),
        ("runtime: flow-control waits", t.flow_wait_ns),
    ];
    for (name, ns) in rows {
        let _ = writeln!(
            s,
            "{name:<28} {:>12} {} of wall",
            fmt_ns(ns as f64),
            pct(ns as f64, w)
        );
    }
    let _ = writeln!(
        s,
        "bytes read {} / written {} / moved between executors {}; errors {}",
        fmt_bytes(t.read_bytes),
        fmt_bytes(t.write_bytes),
        fmt_bytes(t.moved_bytes),
        t.errors
    );
    s
}

/// Per call site: estimated device time, its share, rate, arrays read and written,
/// specialisations; then per kernel.
pub fn compute_report(run: &Run) -> String {
    let sites = site_costs(run);
    let total: f64 = sites.iter().map(|s| s.est_ns).sum();
    let mut s = String::new();
    let _ = writeln!(s, "== compute (per call site, by estimated device time) ==");
    let _ = writeln!(
        s,
        "(kernels: the distinct kernels the call site ended up in, its specialisations)"
    );
    let _ = writeln!(
        s,
        "{:>12} {:>6} {:>12} {:>6} {:>6} {:>7} {:>7}  call site",
        "est. time", "share", "Melem/s", "reads", "writes", "calls", "kernels"
    );
    for c in sites.iter().filter(|c| c.est_ns > 0.0) {
        let _ = writeln!(
            s,
            "{:>12} {} {:>12.1} {:>6} {:>6} {:>7} {:>7}  {}",
            fmt_ns(c.est_ns),
            pct(c.est_ns, total),
            c.rate() / 1e6,
            c.reads,
            c.writes,
            c.api_calls,
            c.kernels,
            c.site
        );
    }
    let _ = writeln!(s, "-- per kernel --");
    let _ = writeln!(
        s,
        "{:>12} {:>8} {:>8} {:>10} {:>10} {:>10} {:>6}  kernel (exec, timing): call sites",
        "time", "launches", "timed", "elements", "read", "written", "instr"
    );
    for ck in &run.cks {
        let sites: Vec<String> = ck
            .sites
            .iter()
            .map(|w| format!("{} {:.2}", w.site, w.weight))
            .collect();
        let _ = writeln!(
            s,
            "{:>12} {:>8} {:>8} {:>10} {:>10} {:>10} {:>6}  {} {} ({}, {}): {}",
            fmt_ns(ck.device_ns as f64),
            ck.launches,
            ck.measured,
            ck.elements,
            fmt_bytes(ck.bytes_read),
            fmt_bytes(ck.bytes_written),
            ck.instructions,
            ck.kind,
            ck.kernel,
            ck.executor,
            ck.time_source,
            sites.join(", ")
        );
    }
    s
}

/// Reads and writes by call site, then data moved between executors and swapped.
pub fn io_report(run: &Run) -> String {
    let mut pcs: Vec<_> = run.pcs.iter().filter(|p| p.reads + p.writes > 0).collect();
    pcs.sort_by(|a, b| {
        (b.read_ns + b.write_ns)
            .cmp(&(a.read_ns + a.write_ns))
            .then(a.site.cmp(&b.site))
    });
    let mut s = String::new();
    let _ = writeln!(s, "== I/O (per call site, by time) ==");
    let _ = writeln!(
        s,
        "{:>6} {:>10} {:>12} {:>12} {:>6} {:>10} {:>12}  call site",
        "reads", "bytes", "time", "of it wait", "writes", "bytes", "time"
    );
    for p in pcs {
        let _ = writeln!(
            s,
            "{:>6} {:>10} {:>12} {:>12} {:>6} {:>10} {:>12}  {}",
            p.reads,
            fmt_bytes(p.read_bytes),
            fmt_ns(p.read_ns as f64),
            fmt_ns(p.read_wait_ns as f64),
            p.writes,
            fmt_bytes(p.write_bytes),
            fmt_ns(p.write_ns as f64),
            p.site
        );
    }
    let _ = writeln!(
        s,
        "-- transfers between executors (move) and paging to the host backing store (swap) --"
    );
    let _ = writeln!(
        s,
        "{:<6} {:<16} {:>7} {:>10} {:>12} {:>9}",
        "kind", "direction", "count", "bytes", "time", "GB/s"
    );
    for k in runtime_stats(run)
        .iter()
        .filter(|k| k.kind == "move" || k.kind == "swap")
    {
        let rate = if k.dur_ns > 0 {
            format!("{:.2}", k.bytes as f64 / k.dur_ns as f64)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "{:<6} {:<16} {:>7} {:>10} {:>12} {:>9}",
            k.kind,
            k.detail,
            k.count,
            fmt_bytes(k.bytes),
            fmt_ns(k.dur_ns as f64),
            rate
        );
    }
    let _ = writeln!(
        s,
        "(move: from the request to the data's arrival; swap out: the download, waited for; swap \
         in: staging and enqueueing the upload)"
    );
    s
}

/// Compiles, cache look-ups (hits, misses, look-up time), flushes by reason, waits, fallbacks.
pub fn runtime_report(run: &Run) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "== runtime (by time) ==");
    let _ = writeln!(
        s,
        "{:>12} {:>7} {:>7} {:>7} {:>7}  what",
        "time", "count", "hits", "misses", "hit %"
    );
    for k in runtime_stats(run)
        .iter()
        .filter(|k| k.kind != "move" && k.kind != "swap")
    {
        let looked = k.hits + k.misses;
        let _ = writeln!(
            s,
            "{:>12} {:>7} {:>7} {:>7} {:>7}  {}{}",
            fmt_ns(k.dur_ns as f64),
            k.count,
            k.hits,
            k.misses,
            if looked > 0 {
                format!("{:.0}", 100.0 * k.hits as f64 / looked as f64)
            } else {
                "-".into()
            },
            k.kind,
            if k.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", k.detail)
            }
        );
    }
    s
}
