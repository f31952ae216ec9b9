//! Chrome trace-event JSON (the format Perfetto and `chrome://tracing` open): one process for
//! the host with a track per thread (flushes, compiles, reads, writes, waits), one per executor
//! with its kernels' track (its device queue).

use crate::profile::schema::Run;
use serde_json::{Value, json};

/// The trace of `run` as a JSON document (`{"traceEvents": [...]}`); times in microseconds.
pub fn chrome_trace(run: &Run) -> Value {
    let us = |ns: u64| ns as f64 / 1e3;
    let mut ev: Vec<Value> = Vec::new();
    let meta = |pid: u64, tid: u64, what: &str, name: &str| json!({"ph": "M", "pid": pid, "tid": tid, "ts": 0, "name": what, "args": {"name": name}});
    ev.push(meta(1, 0, "process_name", "host"));
    let mut threads: Vec<&str> = run.runtime.iter().map(|e| e.thread.as_str()).collect();
    threads.sort();
    threads.dedup();
    for (i, t) in threads.iter().enumerate() {
        ev.push(meta(1, i as u64 + 1, "thread_name", t));
    }
    for e in &run.runtime {
        let tid = threads.iter().position(|t| *t == e.thread).unwrap_or(0) as u64 + 1;
        let name = if e.detail.is_empty() {
            e.kind.clone()
        } else {
            format!("{} {}", e.kind, e.detail)
        };
        ev.push(json!({
            "ph": "X", "pid": 1, "tid": tid, "ts": us(e.t_ns), "dur": us(e.dur_ns.max(1)),
            "name": name, "cat": e.kind,
            "args": {"bytes": e.bytes, "hit": e.hit, "site": e.site},
        }));
    }
    for (x, name) in run.meta.executors.iter().enumerate() {
        let pid = 2 + x as u64;
        ev.push(meta(
            pid,
            0,
            "process_name",
            &format!("executor {x}: {name}"),
        ));
        ev.push(meta(pid, 1, "thread_name", "kernels (queue)"));
    }
    for l in &run.launches {
        let sites = run
            .cks
            .iter()
            .find(|c| c.kernel == l.kernel && c.executor == l.executor)
            .map(|c| {
                c.sites
                    .iter()
                    .map(|w| format!("{} {:.2}", w.site, w.weight))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        ev.push(json!({
            "ph": "X", "pid": 2 + l.executor as u64, "tid": 1, "ts": us(l.t_ns),
            "dur": us(l.dur_ns.max(1)), "name": format!("kernel {}", l.kernel), "cat": "kernel",
            "args": {"timing": l.time_source, "sites": sites},
        }));
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns"})
}
