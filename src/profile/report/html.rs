//! A self-contained HTML report: inline SVG plots (estimated time per call site, a timeline of
//! kernels and runtime events, cache hit rates), a call-site table that sorts by any column when
//! its header is clicked, and the four text reports. One small inline script (the sorting), no
//! external resources. The script marks the page `data-ready` once it has run and records any
//! script error in `data-errors`, which the headless-browser test (`tests/profile_html.rs`) reads.

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

/// The call-site table: one row per site with a cost, each cell carrying its sort key.
fn site_table(run: &Run) -> String {
    let mut s = String::from(
        "<table id='sites'><thead><tr><th data-num='0'>call site</th><th data-num='1'>est. device time</th>\
         <th data-num='1'>elements/s</th><th data-num='1'>kernels</th><th data-num='1'>API calls</th>\
         <th data-num='1'>reads</th><th data-num='1'>writes</th><th data-num='1'>host time</th></tr></thead><tbody>",
    );
    for c in site_costs(run) {
        let _ = write!(
            s,
            "<tr><td>{}</td><td data-v='{}'>{}</td><td data-v='{}'>{:.3e}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-v='{}'>{}</td></tr>",
            esc(&c.site),
            c.est_ns,
            esc(&fmt_ns(c.est_ns)),
            c.rate(),
            c.rate(),
            c.kernels,
            c.api_calls,
            c.reads,
            c.writes,
            c.host_ns,
            esc(&fmt_ns(c.host_ns as f64)),
        );
    }
    s + "</tbody></table>"
}

/// Sorting for the call-site table (click a header; again to reverse), the error record and the
/// ready mark.
const SCRIPT: &str = "<script>\
window.addEventListener('error',function(e){var b=document.body;b.dataset.errors=(b.dataset.errors||'')+e.message+';';});\
(function(){var t=document.getElementById('sites');if(!t)return;var hs=t.tHead.rows[0].cells;\
for(var i=0;i<hs.length;i++){(function(col,h){h.style.cursor='pointer';h.title='sort';h.addEventListener('click',function(){\
var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),num=h.dataset.num==='1',asc=h.dataset.asc!=='1';\
function key(r){var c=r.cells[col];var v=c.dataset.v!==undefined?c.dataset.v:c.textContent;return num?parseFloat(v):v;}\
rows.sort(function(x,y){var a=key(x),c=key(y);var r=a<c?-1:a>c?1:0;return asc?r:-r;});\
rows.forEach(function(r){b.appendChild(r);});h.dataset.asc=asc?'1':'0';});})(i,hs[i]);}})();\
document.body.dataset.ready='1';</script>";

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
         <style>body{font-family:sans-serif;margin:20px}pre{background:#f6f6f6;padding:8px}\
         table{border-collapse:collapse;font-family:monospace;font-size:12px}\
         td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child{text-align:left}\
         th{background:#eee}</style>\
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
    let _ = write!(
        s,
        "<h2>Call sites</h2><p>Click a column to sort.</p>{}",
        site_table(run)
    );
    let _ = write!(s, "<h2>Timeline</h2>{}", timeline(run));
    let _ = write!(s, "<h2>Cache hit rates</h2>{}", bars(&caches, "#5cb85c"));
    let _ = write!(
        s,
        "<h2>Reports</h2><pre>{}</pre>{SCRIPT}</body></html>",
        esc(&super::full_report(run))
    );
    s
}
