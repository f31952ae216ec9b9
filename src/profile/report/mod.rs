//! The analyzer (the seed's 815) and viewers (817): turns a run's records into per-call-site
//! figures (`analysis` here: each kernel's time divided among its call sites by weight), and
//! prints them as the seed's four text reports (`text.rs`), compares two runs (`compare.rs`),
//! exports a Chrome trace (`trace.rs`) and writes a self-contained HTML report (`html.rs`).

mod compare;
mod html;
mod text;
mod trace;

pub use compare::{Change, compare, compare_text};
pub use html::html;
pub use text::{compute_report, full_report, io_report, runtime_report, summary_report};
pub use trace::chrome_trace;

use super::schema::Run;
use ahash::AHashMap;

/// One call site's figures, with the kernel time attributed to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteCost {
    /// `file:line`.
    pub site: String,
    /// Estimated device time: Σ over the kernels holding the site of kernel time × weight.
    pub est_ns: f64,
    /// Elements the kernels holding the site computed (domain elements × launches).
    pub elements: u64,
    /// Distinct kernels the site ended up in (the seed's specialisations): kernels of different
    /// code or shape, whatever their executors and launches.
    pub kernels: usize,
    /// Operations recorded, reads and writes at the site.
    pub api_calls: u64,
    /// Reads of results at the site.
    pub reads: u64,
    /// Writes of data at the site.
    pub writes: u64,
    /// Errors reported.
    pub errors: u64,
    /// Host time recording, reading and writing at the site.
    pub host_ns: u64,
}

impl SiteCost {
    /// Elements per second of estimated device time (0 when none).
    pub fn rate(&self) -> f64 {
        if self.est_ns > 0.0 {
            self.elements as f64 / (self.est_ns * 1e-9)
        } else {
            0.0
        }
    }
}

/// Every call site's figures, costliest (estimated device time, then host time) first.
pub fn site_costs(run: &Run) -> Vec<SiteCost> {
    let mut by: AHashMap<String, SiteCost> = AHashMap::new();
    let mut kernels: AHashMap<String, ahash::AHashSet<&str>> = AHashMap::new();
    for ck in &run.cks {
        for sw in &ck.sites {
            let s = by.entry(sw.site.clone()).or_insert_with(|| SiteCost {
                site: sw.site.clone(),
                ..SiteCost::default()
            });
            s.est_ns += ck.device_ns as f64 * sw.weight;
            s.elements += ck.elements * ck.launches;
            kernels
                .entry(sw.site.clone())
                .or_default()
                .insert(&ck.kernel);
        }
    }
    for pc in &run.pcs {
        let s = by.entry(pc.site.clone()).or_insert_with(|| SiteCost {
            site: pc.site.clone(),
            ..SiteCost::default()
        });
        s.api_calls += pc.api_calls;
        s.reads += pc.reads;
        s.writes += pc.writes;
        s.errors += pc.errors;
        s.host_ns += pc.record_ns + pc.read_ns + pc.write_ns;
    }
    let mut v: Vec<SiteCost> = by
        .into_values()
        .map(|mut s| {
            s.kernels = kernels.get(&s.site).map_or(0, |k| k.len());
            s
        })
        .collect();
    v.sort_by(|a, b| {
        b.est_ns
            .total_cmp(&a.est_ns)
            .then(b.host_ns.cmp(&a.host_ns))
            .then(a.site.cmp(&b.site))
    });
    v
}

/// Totals of a run (the summary report's figures).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Host time from the start of profiling to its end.
    pub wall_ns: u64,
    /// Array operations recorded.
    pub api_calls: u64,
    /// Kernel launches.
    pub kernel_launches: u64,
    /// Kernel time summed over every CK record.
    pub kernel_ns: u64,
    /// Reads of results at the site.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Host time reading.
    pub read_ns: u64,
    /// Writes of data at the site.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Host time writing.
    pub write_ns: u64,
    /// Data moved between executors and swapped between a device and its backing store.
    pub moved_bytes: u64,
    /// The time of those moves and swaps.
    pub moved_ns: u64,
    /// Runtime overheads: flushes (host), compiles, cache look-ups, flow-control waits.
    pub flush_ns: u64,
    /// C and device compiles.
    pub compile_ns: u64,
    /// Trace, macro and program cache look-ups.
    pub lookup_ns: u64,
    /// Flow-control waits.
    pub flow_wait_ns: u64,
    /// Errors reported.
    pub errors: u64,
}

/// The run's totals.
pub fn totals(run: &Run) -> Totals {
    let mut t = Totals {
        wall_ns: run.meta.wall_ns,
        ..Totals::default()
    };
    for pc in &run.pcs {
        t.api_calls += pc.api_calls;
        t.reads += pc.reads;
        t.read_bytes += pc.read_bytes;
        t.read_ns += pc.read_ns;
        t.writes += pc.writes;
        t.write_bytes += pc.write_bytes;
        t.write_ns += pc.write_ns;
        t.errors += pc.errors;
    }
    for ck in &run.cks {
        t.kernel_launches += ck.launches;
        t.kernel_ns += ck.device_ns;
    }
    for e in &run.runtime {
        match e.kind.as_str() {
            "flush" => t.flush_ns += e.dur_ns,
            "compile" => t.compile_ns += e.dur_ns,
            "trace_lookup" | "macro_lookup" | "program_cache" => t.lookup_ns += e.dur_ns,
            "flow_wait" => t.flow_wait_ns += e.dur_ns,
            "move" | "swap" => {
                t.moved_bytes += e.bytes;
                t.moved_ns += e.dur_ns;
            }
            _ => {}
        }
    }
    t
}

/// Look-ups of one cache (or one kind of runtime event): count, hits, time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindStats {
    /// The event kind (`schema::RuntimeEvent::kind`).
    pub kind: String,
    /// Its detail.
    pub detail: String,
    /// Events.
    pub count: u64,
    /// Look-ups that found their entry.
    pub hits: u64,
    /// Look-ups that did not.
    pub misses: u64,
    /// Their time in all.
    pub dur_ns: u64,
    /// Bytes moved.
    pub bytes: u64,
}

/// Runtime events grouped by (kind, detail), longest total first.
pub fn runtime_stats(run: &Run) -> Vec<KindStats> {
    let mut by: AHashMap<(String, String), KindStats> = AHashMap::new();
    for e in &run.runtime {
        if e.kind == "read" || e.kind == "write" {
            continue;
        }
        let k = by
            .entry((e.kind.clone(), e.detail.clone()))
            .or_insert_with(|| KindStats {
                kind: e.kind.clone(),
                detail: e.detail.clone(),
                ..KindStats::default()
            });
        k.count += 1;
        k.dur_ns += e.dur_ns;
        k.bytes += e.bytes;
        match e.hit {
            Some(true) => k.hits += 1,
            Some(false) => k.misses += 1,
            None => {}
        }
    }
    let mut v: Vec<KindStats> = by.into_values().collect();
    v.sort_by(|a, b| {
        b.dur_ns
            .cmp(&a.dur_ns)
            .then(a.kind.cmp(&b.kind))
            .then(a.detail.cmp(&b.detail))
    });
    v
}

/// `ns` as a short human figure (ns, µs, ms, s).
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `b` bytes as a short human figure.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}
