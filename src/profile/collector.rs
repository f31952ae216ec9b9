//! The collector (the seed's 811): a thread that receives the runtime's profiling events over a
//! channel and aggregates them into one run's records: PC records by call site, CK records by
//! kernel and executor (a launch's device time paired with its launch by task id), launches and
//! runtime events; at the run's end it writes them (`db.rs`).

use super::RunInfo;
use super::schema::{CkRecord, Launch, Meta, PcRecord, Run, RuntimeEvent, SCHEMA_VERSION};
use super::weights::{kernel_weights, site_key};
use crate::ir::Site;
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Launches and runtime events kept per run (the records themselves are never capped).
const MAX_EVENTS: usize = 1 << 20;

/// A profiling event from one of the runtime's components.
pub(crate) enum Event {
    /// An array operation recorded at `site` in `ns` of host time.
    Api { site: Site, ns: u64 },
    /// The application wrote `bytes` into the runtime at `site`.
    Write {
        site: Site,
        bytes: u64,
        at: Instant,
        ns: u64,
    },
    /// The application read `bytes` at `site`, `wait_ns` of `ns` waiting for the executors.
    Read {
        site: Site,
        bytes: u64,
        at: Instant,
        ns: u64,
        wait_ns: u64,
    },
    /// An error reported at `site`.
    Error { site: Site },
    /// A task's kernel finished on executor `exec`; `host_ns` on the host's clock, ending at
    /// `end`. `device_timed`: a [`Event::DeviceTime`] for the task follows (or came first).
    Launch {
        task: u64,
        kernel: Arc<Kernel>,
        sites: Vec<Site>,
        exec: u32,
        elements: u64,
        bytes: [u64; 2],
        host_ns: u64,
        end: Instant,
        device_timed: bool,
    },
    /// The device's own time for task `task`'s kernels.
    DeviceTime { task: u64, ns: u64 },
    /// Anything else the runtime did (see [`super::schema::RuntimeEvent`]).
    Runtime {
        kind: &'static str,
        detail: String,
        hit: Option<bool>,
        at: Instant,
        dur_ns: u64,
        bytes: u64,
        thread: String,
        site: Option<Site>,
    },
}

pub(crate) enum Msg {
    Begin {
        dir: PathBuf,
        info: RunInfo,
        at: Instant,
    },
    Event(Event),
    End(Sender<Result<PathBuf, String>>),
}

/// Starts the collector thread (once per process).
pub(crate) fn spawn() -> Sender<Msg> {
    let (tx, rx) = unbounded();
    std::thread::Builder::new()
        .name("arrayflow-profile".into())
        .spawn(move || run(rx))
        .expect("spawn the profiler's collector thread");
    tx
}

fn run(rx: Receiver<Msg>) {
    let mut cur: Option<RunState> = None;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Begin { dir, info, at } => cur = Some(RunState::new(dir, info, at)),
            Msg::Event(e) => {
                if let Some(r) = cur.as_mut() {
                    r.add(e);
                }
            }
            Msg::End(reply) => {
                let Some(mut r) = cur.take() else {
                    let _ = reply.send(Err("the profiler was not running".into()));
                    continue;
                };
                let wall_ns = r.started.elapsed().as_nanos() as u64;
                // Device times are read on the executors' threads as their submissions finish:
                // take what is still on its way before pairing the rest with host times.
                // (Begin and End are serialised by `super::SWITCH`: only events come here.)
                while let Ok(m) = rx.recv_timeout(Duration::from_millis(30)) {
                    if let Msg::Event(e) = m {
                        r.add(e);
                    }
                }
                let _ = reply.send(r.finish(wall_ns));
            }
        }
    }
}

/// What the collector knows of one kernel.
struct KernelInfo {
    id: String,
    kind: String,
    listing: String,
    instructions: u64,
    weights: Vec<(String, f64)>,
    /// Keeps the kernel alive so its address stays its identity.
    _kernel: Arc<Kernel>,
}

struct Pending {
    kernel: usize,
    exec: u32,
    elements: u64,
    bytes: [u64; 2],
    host_ns: u64,
    end: Instant,
}

struct RunState {
    dir: PathBuf,
    info: RunInfo,
    started: Instant,
    started_unix_ms: u64,
    pcs: AHashMap<(&'static str, u32), PcRecord>,
    kernels: AHashMap<usize, KernelInfo>,
    cks: AHashMap<(String, u32), CkRecord>,
    pending: AHashMap<u64, Pending>,
    device_times: AHashMap<u64, u64>,
    launches: Vec<Launch>,
    runtime: Vec<RuntimeEvent>,
}

impl RunState {
    fn new(dir: PathBuf, info: RunInfo, at: Instant) -> RunState {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        RunState {
            dir,
            info,
            started: at,
            started_unix_ms: unix_ms,
            pcs: AHashMap::new(),
            kernels: AHashMap::new(),
            cks: AHashMap::new(),
            pending: AHashMap::new(),
            device_times: AHashMap::new(),
            launches: Vec::new(),
            runtime: Vec::new(),
        }
    }

    fn pc(&mut self, site: Site) -> &mut PcRecord {
        self.pcs
            .entry((site.file(), site.line()))
            .or_insert_with(|| PcRecord {
                site: site_key(site),
                file: site.file().to_string(),
                line: site.line(),
                ..PcRecord::default()
            })
    }

    fn t(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_nanos() as u64
    }

    fn add(&mut self, e: Event) {
        match e {
            Event::Api { site, ns } => {
                let p = self.pc(site);
                p.api_calls += 1;
                p.record_ns += ns;
            }
            Event::Write {
                site,
                bytes,
                at,
                ns,
            } => {
                let p = self.pc(site);
                p.writes += 1;
                p.write_bytes += bytes;
                p.write_ns += ns;
                self.push_runtime("write", String::new(), at, ns, bytes, site);
            }
            Event::Read {
                site,
                bytes,
                at,
                ns,
                wait_ns,
            } => {
                let p = self.pc(site);
                p.reads += 1;
                p.read_bytes += bytes;
                p.read_ns += ns;
                p.read_wait_ns += wait_ns;
                self.push_runtime("read", String::new(), at, ns, bytes, site);
            }
            Event::Error { site } => self.pc(site).errors += 1,
            Event::Launch {
                task,
                kernel,
                sites,
                exec,
                elements,
                bytes,
                host_ns,
                end,
                device_timed,
            } => {
                let key = Arc::as_ptr(&kernel) as usize;
                self.kernels
                    .entry(key)
                    .or_insert_with(|| kernel_info(kernel, &sites));
                let p = Pending {
                    kernel: key,
                    exec,
                    elements,
                    bytes,
                    host_ns,
                    end,
                };
                if !device_timed {
                    self.finish_launch(p, None);
                } else if let Some(ns) = self.device_times.remove(&task) {
                    self.finish_launch(p, Some(ns));
                } else {
                    self.pending.insert(task, p);
                }
            }
            Event::DeviceTime { task, ns } => match self.pending.remove(&task) {
                Some(p) => self.finish_launch(p, Some(ns)),
                None => *self.device_times.entry(task).or_default() += ns,
            },
            Event::Runtime {
                kind,
                detail,
                hit,
                at,
                dur_ns,
                bytes,
                thread,
                site,
            } => {
                if self.runtime.len() < MAX_EVENTS {
                    let t_ns = self.t(at);
                    self.runtime.push(RuntimeEvent {
                        kind: kind.into(),
                        detail,
                        hit,
                        t_ns,
                        dur_ns,
                        bytes,
                        thread,
                        site: site.map(site_key),
                    });
                }
            }
        }
    }

    fn push_runtime(
        &mut self,
        kind: &str,
        detail: String,
        at: Instant,
        ns: u64,
        bytes: u64,
        site: Site,
    ) {
        if self.runtime.len() < MAX_EVENTS {
            let t_ns = self.t(at);
            self.runtime.push(RuntimeEvent {
                kind: kind.into(),
                detail,
                hit: None,
                t_ns,
                dur_ns: ns,
                bytes,
                thread: "app".into(),
                site: Some(site_key(site)),
            });
        }
    }

    /// Adds a launch to its CK record, timed by the device (`device_ns`) or the host.
    fn finish_launch(&mut self, p: Pending, device_ns: Option<u64>) {
        let k = &self.kernels[&p.kernel];
        let (ns, source) = match device_ns {
            // A device time is never longer than the host's view of the same work.
            Some(d) if d > 0 => (d.min(p.host_ns.max(1)), "device"),
            _ => (p.host_ns.max(1), "host"),
        };
        let ck = self
            .cks
            .entry((k.id.clone(), p.exec))
            .or_insert_with(|| CkRecord {
                kernel: k.id.clone(),
                kind: k.kind.clone(),
                executor: p.exec,
                launches: 0,
                device_ns: 0,
                time_source: source.into(),
                elements: p.elements,
                bytes_read: 0,
                bytes_written: 0,
                instructions: k.instructions,
                sites: k
                    .weights
                    .iter()
                    .map(|(s, w)| super::schema::SiteWeight {
                        site: s.clone(),
                        weight: *w,
                    })
                    .collect(),
                listing: k.listing.clone(),
            });
        ck.launches += 1;
        ck.device_ns += ns;
        ck.bytes_read += p.bytes[0];
        ck.bytes_written += p.bytes[1];
        if ck.time_source != source {
            ck.time_source = "mixed".into();
        }
        if self.launches.len() < MAX_EVENTS {
            let end = self.t(p.end);
            self.launches.push(Launch {
                kernel: k.id.clone(),
                executor: p.exec,
                t_ns: end.saturating_sub(ns),
                dur_ns: ns,
                time_source: source.into(),
            });
        }
    }

    /// Pairs what is left and writes the run; returns its folder.
    fn finish(mut self, wall_ns: u64) -> Result<PathBuf, String> {
        let pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            self.finish_launch(p, None);
        }
        let pid = std::process::id();
        let mut pcs: Vec<PcRecord> = self.pcs.into_values().collect();
        pcs.sort_by(|a, b| a.file.cmp(&b.file).then(a.line.cmp(&b.line)));
        let mut cks: Vec<CkRecord> = self.cks.into_values().collect();
        cks.sort_by(|a, b| b.device_ns.cmp(&a.device_ns).then(a.kernel.cmp(&b.kernel)));
        self.launches.sort_by_key(|l| l.t_ns);
        self.runtime.sort_by_key(|e| e.t_ns);
        let run = Run {
            meta: Meta {
                schema_version: SCHEMA_VERSION,
                arrayflow_version: env!("CARGO_PKG_VERSION").into(),
                started_unix_ms: self.started_unix_ms,
                wall_ns,
                pid,
                platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                executors: self.info.executors,
                device_timing: self.info.device_timing.into(),
                command: std::env::args().collect(),
            },
            pcs,
            cks,
            launches: self.launches,
            runtime: self.runtime,
        };
        let folder = self.dir.join(format!("run-{}-{pid}", self.started_unix_ms));
        super::db::write(&folder, &run).map_err(|e| format!("{}: {e}", folder.display()))?;
        Ok(folder)
    }
}

/// A kernel's identity (a hash of its listing), kind, listing, cost and weights.
fn kernel_info(kernel: Arc<Kernel>, sites: &[Site]) -> KernelInfo {
    use std::hash::{Hash, Hasher};
    let (kind, listing, instructions) = match &*kernel {
        Kernel::Fused(k) => ("fused".to_string(), k.describe(), k.cost() as u64),
        Kernel::Intrinsic(c) => (
            c.op.name().to_string(),
            format!(
                "intrinsic {} {:?} -> {:?} {} ({})",
                c.op.name(),
                c.in_shapes,
                c.out_shape,
                c.dtype,
                sites
                    .iter()
                    .map(|&s| site_key(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            0,
        ),
    };
    // A stable hash (the listing names call sites by file:line:column, which stay put).
    let mut h = std::hash::DefaultHasher::new();
    listing.hash(&mut h);
    KernelInfo {
        id: format!("{:016x}", h.finish()),
        kind,
        listing,
        instructions,
        weights: kernel_weights(&kernel, sites),
        _kernel: kernel,
    }
}
