//! A self-contained HTML report: inline SVG plots (estimated time per call site, a timeline of
//! kernels and runtime events, cache hit rates) above the four text reports. No scripts, no
//! external resources.

use super::{fmt_ns, runtime_stats, site_costs};
use crate::profile::schema::Run;
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Horizontal bars: `(label, value, text)` rows scaled to the largest value.
fn bars(rows: &[(String, f64, String)], color: &str) -> String {
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1e-12);
    let (w, h) = (900.0, 22.0);
    let mut s = format!(
        "<svg width='{w}' height='{}' font-family='monospace' font-size='12'>",
        rows.len() as f64 * h + 4.0
    );
    for (i, (label, v, text)) in rows.iter().enumerate() {
        let y = i as f64 * h + 2.0;
        let bw = (v / max * 420.0).max(1.0);
        let _ = write!(
            s,
            "<text x='0' y='{}'>{}</text><rect x='330' y='{y}' width='{bw:.1}' height='{}' fill='{color}'/><text x='{:.1}' y='{}'>{}</text>",
            y + 14.0,
            esc(label),
            h - 6.0,
            336.0 + bw,
            y + 14.0,
            esc(text)
        );
    }
    s + "</svg>"
}

/// Kernels (one lane per executor) and runtime events (one lane per kind) over the run's time.
fn timeline(run: &Run) -> String {
    let end = run
        .launches
        .iter()
        .map(|l| l.t_ns + l.dur_ns)
        .chain(run.runtime.iter().map(|e| e.t_ns + e.dur_ns))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut lanes: Vec<String> = (0..run.meta.executors.len())
        .map(|x| format!("executor {x} kernels"))
        .collect();
    let mut kinds: Vec<&str> = run.runtime.iter().map(|e| e.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    lanes.extend(kinds.iter().map(|k| k.to_string()));
    let (x0, w, h) = (170.0, 720.0, 20.0);
    let mut s = format!(
        "<svg width='900' height='{}' font-family='monospace' font-size='12'>",
        lanes.len() as f64 * h + 20.0
    );
    for (i, l) in lanes.iter().enumerate() {
        let _ = write!(
            s,
            "<text x='0' y='{}'>{}</text>",
            i as f64 * h + 14.0,
            esc(l)
        );
    }
    let rect = |s: &mut String, lane: usize, t: u64, d: u64, color: &str, title: &str| {
        let _ = write!(
            s,
            "<rect x='{:.2}' y='{}' width='{:.2}' height='{}' fill='{color}'><title>{}</title></rect>",
            x0 + t as f64 / end * w,
            lane as f64 * h + 3.0,
            (d as f64 / end * w).max(0.5),
            h - 6.0,
            esc(title)
        );
    };
    for l in &run.launches {
        let title = format!("kernel {} {}", l.kernel, fmt_ns(l.dur_ns as f64));
        rect(
            &mut s,
            l.executor as usize,
            l.t_ns,
            l.dur_ns,
            "#d9534f",
            &title,
        );
    }
    for e in &run.runtime {
        let lane = run.meta.executors.len() + kinds.iter().position(|k| *k == e.kind).unwrap_or(0);
        let title = format!("{} {} {}", e.kind, e.detail, fmt_ns(e.dur_ns as f64));
        rect(&mut s, lane, e.t_ns, e.dur_ns, "#5b8def", &title);
    }
    let _ = write!(
        s,
        "<text x='{x0}' y='{}'>0</text><text x='{}' y='{}'>{}</text></svg>",
        lanes.len() as f64 * h + 16.0,
        x0 + w - 80.0,
        lanes.len() as f64 * h + 16.0,
        esc(&fmt_ns(end))
    );
    s
}

/// The HTML report of `run`.
pub fn html(run: &Run) -> String {
    let sites: Vec<(String, f64, String)> = site_costs(run)
        .into_iter()
        .filter(|c| c.est_ns > 0.0)
        .take(30)
        .map(|c| (c.site.clone(), c.est_ns, fmt_ns(c.est_ns)))
        .collect();
    let caches: Vec<(String, f64, String)> = runtime_stats(run)
        .into_iter()
        .filter(|k| k.hits + k.misses > 0)
        .map(|k| {
            let rate = k.hits as f64 / (k.hits + k.misses) as f64;
            (
                format!("{} {}", k.kind, k.detail),
                rate,
                format!("{:.0}% of {}", rate * 100.0, k.hits + k.misses),
            )
        })
        .collect();
    let mut s = String::from(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>arrayflow profile</title>\
         <style>body{font-family:sans-serif;margin:20px}pre{background:#f6f6f6;padding:8px}</style>\
         </head><body><h1>arrayflow profile</h1>",
    );
    let m = &run.meta;
    let _ = write!(
        s,
        "<p>run {} &middot; pid {} &middot; {} &middot; wall {} &middot; device timing: {}</p>",
        m.started_unix_ms,
        m.pid,
        esc(&m.platform),
        esc(&fmt_ns(m.wall_ns as f64)),
        esc(&m.device_timing)
    );
    let _ = write!(
        s,
        "<h2>Estimated device time per call site</h2>{}",
        bars(&sites, "#d9534f")
    );
    let _ = write!(s, "<h2>Timeline</h2>{}", timeline(run));
    let _ = write!(s, "<h2>Cache hit rates</h2>{}", bars(&caches, "#5cb85c"));
    let _ = write!(
        s,
        "<h2>Reports</h2><pre>{}</pre></body></html>",
        esc(&super::full_report(run))
    );
    s
}
