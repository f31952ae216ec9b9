//! The collector (the seed's 811): a thread that receives the runtime's profiling events over a
//! channel, in per-thread batches (`batch.rs`), and aggregates them into one run's records: PC records by call site, CK records by
//! kernel and executor (a launch's device time paired with its launch by task id; launches that
//! sampling left untimed estimated at the mean of the kernel's launches timed before them), launches and runtime
//! events; at the run's end it writes them (`db.rs`). It keeps call sites and kernels by
//! address and strings as they came until then, so an event costs it no allocation and no string
//! hashing (sites of one `file:line` are merged at the end), and it hands each batch's emptied
//! vectors back to the threads (`batch.rs`); a kernel's identity (a hash of its listing), weights
//! and element count are worked out here once, the first time it is seen. Array operations come
//! counted, and timed one in `Sampling::every` (the rest marked untimed): a site's recording time
//! is its timed operations' mean times its count.

use super::RunInfo;
use super::schema::{CkRecord, Launch, Meta, PcRecord, Run, RuntimeEvent, SCHEMA_VERSION};
use super::weights::{kernel_weights, site_key};
use crate::ir::Site;
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Launches and runtime events kept per run (the records themselves are never capped).
const MAX_EVENTS: usize = 1 << 20;

/// How a launch was timed, as its executor reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaunchTiming {
    /// On the host's clock (the CPU executor, a device without timers).
    Host,
    /// By the device: a [`Event::DeviceTime`] for the task follows (or came first).
    Device,
    /// Not timed (sampling, `super::Sampling`): estimated from the kernel's timed launches.
    Estimated,
}

/// A profiling event from one of the runtime's components.
pub(crate) enum Event {
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
    /// `end` (`None`: an untimed CPU launch, placed after the executor's previous launch).
    Launch {
        task: u64,
        kernel: Arc<Kernel>,
        sites: Arc<[Site]>,
        exec: u32,
        bytes: [u64; 2],
        host_ns: u64,
        end: Option<Instant>,
        timing: LaunchTiming,
    },
    /// The device's own time for task `task`'s kernels.
    DeviceTime { task: u64, ns: u64 },
    /// Anything else the runtime did (see [`super::schema::RuntimeEvent`]).
    Runtime {
        kind: &'static str,
        detail: Cow<'static, str>,
        hit: Option<bool>,
        at: Instant,
        dur_ns: u64,
        bytes: u64,
        site: Option<Site>,
    },
}

pub(crate) enum Msg {
    Begin {
        dir: PathBuf,
        info: RunInfo,
        at: Instant,
    },
    /// One thread's records: array operations (call site, host time) and other events.
    Batch {
        thread: Arc<str>,
        calls: Vec<(Site, u64)>,
        events: Vec<Event>,
    },
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
            Msg::Batch {
                thread,
                calls,
                events,
            } => {
                if let Some(r) = cur.as_mut() {
                    r.batch(&thread, calls, events);
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
                let mut take = |m: Msg| {
                    if let Msg::Batch {
                        thread,
                        calls,
                        events,
                    } = m
                    {
                        r.batch(&thread, calls, events);
                    }
                };
                while let Ok(m) = rx.recv_timeout(Duration::from_millis(30)) {
                    take(m);
                }
                // What completed since the stop sent every thread's batch.
                super::batch::take_all().into_iter().for_each(&mut take);
                let _ = reply.send(r.finish(wall_ns));
            }
        }
    }
}

/// What the collector knows of one kernel.
struct KernelInfo {
    /// A hash of the listing, and its hex form (the records' kernel id).
    hash: u64,
    id: String,
    kind: String,
    listing: String,
    instructions: u64,
    /// Elements of its domain (a fused kernel) or output (an intrinsic).
    elements: u64,
    weights: Vec<(String, f64)>,
    /// Keeps the kernel alive so its address stays its identity.
    _kernel: Arc<Kernel>,
}

struct Pending {
    kernel: usize,
    exec: u32,
    bytes: [u64; 2],
    host_ns: u64,
    end: Option<Instant>,
}

/// A CK record in the making: its launches' times, measured and estimated.
#[derive(Default)]
struct CkAcc {
    kernel: usize,
    exec: u32,
    elements: u64,
    bytes: [u64; 2],
    /// Launches timed (by the device or the host) and their time.
    measured: u64,
    measured_ns: u64,
    /// Of the measured time, what the device timed.
    device_measured: u64,
    device_ns: u64,
    /// Launches not timed (sampling), and their estimated time: each the mean of the kernel's
    /// launches timed before it, capped at the host's view of that launch.
    estimated: u64,
    estimated_ns: u64,
    /// Which clocks timed the measured launches (bit 0: device, bit 1: host).
    sources: u8,
}

impl CkAcc {
    /// The mean time of a timed launch (the device's where it timed some), if any.
    fn mean(&self) -> Option<f64> {
        if self.device_measured > 0 {
            Some(self.device_ns as f64 / self.device_measured as f64)
        } else if self.measured > 0 {
            Some(self.measured_ns as f64 / self.measured as f64)
        } else {
            None
        }
    }
}

/// A launch for the timeline: the kernel (its address), executor, end, duration and source.
struct LaunchAcc {
    kernel: usize,
    exec: u32,
    end_ns: u64,
    dur_ns: u64,
    source: &'static str,
}

/// A runtime event as it came (converted to the schema's strings when the run is written).
struct RuntimeAcc {
    kind: &'static str,
    detail: Cow<'static, str>,
    hit: Option<bool>,
    t_ns: u64,
    dur_ns: u64,
    bytes: u64,
    thread: Arc<str>,
    site: Option<Site>,
}

struct RunState {
    dir: PathBuf,
    info: RunInfo,
    started: Instant,
    started_unix_ms: u64,
    /// By call site (the `Location`'s address: no string hashed per event; sites of one
    /// `file:line` are merged when the run is written).
    pcs: AHashMap<usize, PcAcc>,
    kernels: AHashMap<usize, KernelInfo>,
    /// By kernel identity ([`KernelInfo::hash`]: equal kernels of different generations are one
    /// record) and executor.
    cks: AHashMap<(u64, u32), CkAcc>,
    pending: AHashMap<u64, Pending>,
    device_times: AHashMap<u64, u64>,
    launches: Vec<LaunchAcc>,
    /// Each executor's last launch's end (where an untimed CPU launch is placed).
    last_end: AHashMap<u32, u64>,
    runtime: Vec<RuntimeAcc>,
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
            last_end: AHashMap::new(),
            runtime: Vec::new(),
        }
    }

    fn pc(&mut self, site: Site) -> &mut PcRecord {
        &mut self.acc(site).pc
    }

    fn acc(&mut self, site: Site) -> &mut PcAcc {
        self.pcs
            .entry(site as *const _ as usize)
            .or_insert_with(|| PcAcc {
                site,
                pc: PcRecord::default(),
                timed: 0,
                timed_ns: 0,
            })
    }

    fn t(&self, at: Instant) -> u64 {
        at_ns(self.started, at)
    }

    /// One thread's batch.
    fn batch(&mut self, thread: &Arc<str>, calls: Vec<(Site, u64)>, mut events: Vec<Event>) {
        for &(site, ns) in &calls {
            let a = self.acc(site);
            a.pc.api_calls += 1;
            if ns != super::batch::UNTIMED {
                a.timed += 1;
                a.timed_ns += ns;
            }
        }
        for e in events.drain(..) {
            self.add(e, thread);
        }
        super::batch::give_back(calls, events);
    }

    /// An event of `thread`.
    fn add(&mut self, e: Event, thread: &Arc<str>) {
        match e {
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
                self.push_runtime("write", at, ns, bytes, site, thread);
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
                self.push_runtime("read", at, ns, bytes, site, thread);
            }
            Event::Error { site } => self.pc(site).errors += 1,
            Event::Launch {
                task,
                kernel,
                sites,
                exec,
                bytes,
                host_ns,
                end,
                timing,
            } => {
                let key = Arc::as_ptr(&kernel) as usize;
                self.kernels
                    .entry(key)
                    .or_insert_with(|| kernel_info(kernel, &sites));
                let p = Pending {
                    kernel: key,
                    exec,
                    bytes,
                    host_ns,
                    end,
                };
                match timing {
                    LaunchTiming::Host => self.finish_launch(p, Timed::Host),
                    LaunchTiming::Estimated => self.finish_launch(p, Timed::Estimated),
                    LaunchTiming::Device => match self.device_times.remove(&task) {
                        Some(ns) => self.finish_launch(p, Timed::Device(ns)),
                        None => {
                            self.pending.insert(task, p);
                        }
                    },
                }
            }
            Event::DeviceTime { task, ns } => match self.pending.remove(&task) {
                Some(p) => self.finish_launch(p, Timed::Device(ns)),
                None => *self.device_times.entry(task).or_default() += ns,
            },
            Event::Runtime {
                kind,
                detail,
                hit,
                at,
                dur_ns,
                bytes,
                site,
            } => {
                if self.runtime.len() < MAX_EVENTS {
                    let t_ns = self.t(at);
                    self.runtime.push(RuntimeAcc {
                        kind,
                        detail,
                        hit,
                        t_ns,
                        dur_ns,
                        bytes,
                        thread: Arc::clone(thread),
                        site,
                    });
                }
            }
        }
    }

    /// A read's or write's runtime event.
    fn push_runtime(
        &mut self,
        kind: &'static str,
        at: Instant,
        ns: u64,
        bytes: u64,
        site: Site,
        thread: &Arc<str>,
    ) {
        if self.runtime.len() < MAX_EVENTS {
            let t_ns = self.t(at);
            self.runtime.push(RuntimeAcc {
                kind,
                detail: Cow::Borrowed(""),
                hit: None,
                t_ns,
                dur_ns: ns,
                bytes,
                thread: Arc::clone(thread),
                site: Some(site),
            });
        }
    }

    /// Adds a launch to its CK record: timed by the device, by the host, or estimated.
    fn finish_launch(&mut self, p: Pending, timed: Timed) {
        let k = &self.kernels[&p.kernel];
        let (hash, elements) = (k.hash, k.elements);
        let ck = self.cks.entry((hash, p.exec)).or_insert_with(|| CkAcc {
            kernel: p.kernel,
            exec: p.exec,
            elements,
            ..CkAcc::default()
        });
        let host = p.host_ns.max(1);
        let (ns, source) = match (timed, ck.mean()) {
            // A device time is never longer than the host's view of the same work.
            (Timed::Device(d), _) if d > 0 => (d.min(host), "device"),
            (Timed::Estimated, Some(mean)) => ((mean.round() as u64).clamp(1, host), "estimated"),
            // An untimed CPU launch (no host view either) before any timed one: nothing to go by.
            (Timed::Estimated, None) if p.host_ns == u64::MAX => (1, "estimated"),
            // No timed launch of the kernel yet to estimate from: the host's view.
            _ => (host, "host"),
        };
        match source {
            "device" => {
                ck.measured += 1;
                ck.measured_ns += ns;
                ck.device_measured += 1;
                ck.device_ns += ns;
                ck.sources |= 1;
            }
            "host" => {
                ck.measured += 1;
                ck.measured_ns += ns;
                ck.sources |= 2;
            }
            _ => {
                ck.estimated += 1;
                ck.estimated_ns += ns;
            }
        }
        ck.bytes[0] += p.bytes[0];
        ck.bytes[1] += p.bytes[1];
        let last = self.last_end.entry(p.exec).or_default();
        let end_ns = match p.end {
            Some(end) => at_ns(self.started, end),
            None => *last + ns,
        };
        *last = end_ns;
        if self.launches.len() < MAX_EVENTS {
            self.launches.push(LaunchAcc {
                kernel: p.kernel,
                exec: p.exec,
                end_ns,
                dur_ns: ns,
                source,
            });
        }
    }

    /// Pairs what is left and writes the run; returns its folder.
    fn finish(mut self, wall_ns: u64) -> Result<PathBuf, String> {
        let pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            self.finish_launch(p, Timed::Host);
        }
        let pid = std::process::id();
        let mut by_line: AHashMap<(&'static str, u32), PcAcc> = AHashMap::new();
        for a in self.pcs.into_values() {
            let key = (a.site.file(), a.site.line());
            match by_line.get_mut(&key) {
                Some(m) => m.merge(&a),
                None => {
                    by_line.insert(key, a);
                }
            }
        }
        let mut pcs: Vec<PcRecord> = by_line.into_values().map(PcAcc::record).collect();
        pcs.sort_by(|a, b| a.file.cmp(&b.file).then(a.line.cmp(&b.line)));
        let kernels = &self.kernels;
        let mut cks: Vec<CkRecord> = self
            .cks
            .into_values()
            .map(|a| ck_record(&kernels[&a.kernel], &a))
            .collect();
        cks.sort_by(|a, b| b.device_ns.cmp(&a.device_ns).then(a.kernel.cmp(&b.kernel)));
        let mut launches: Vec<Launch> = self
            .launches
            .iter()
            .map(|l| Launch {
                kernel: kernels[&l.kernel].id.clone(),
                executor: l.exec,
                t_ns: l.end_ns.saturating_sub(l.dur_ns),
                dur_ns: l.dur_ns,
                time_source: l.source.into(),
            })
            .collect();
        launches.sort_by_key(|l| l.t_ns);
        let mut runtime: Vec<RuntimeEvent> = self
            .runtime
            .into_iter()
            .map(|e| RuntimeEvent {
                kind: e.kind.into(),
                detail: e.detail.into_owned(),
                hit: e.hit,
                t_ns: e.t_ns,
                dur_ns: e.dur_ns,
                bytes: e.bytes,
                thread: e.thread.to_string(),
                site: e.site.map(site_key),
            })
            .collect();
        runtime.sort_by_key(|e| e.t_ns);
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
                sampling: self.info.sampling,
                command: std::env::args().collect(),
            },
            pcs,
            cks,
            launches,
            runtime,
        };
        let folder = self.dir.join(format!("run-{}-{pid}", self.started_unix_ms));
        super::db::write(&folder, &run).map_err(|e| format!("{}: {e}", folder.display()))?;
        Ok(folder)
    }
}

/// A PC record in the making: its array operations' timed share (sampling: one operation in
/// [`super::Sampling::every`] per thread is timed).
struct PcAcc {
    site: Site,
    pc: PcRecord,
    /// Array operations timed, and their host time.
    timed: u64,
    timed_ns: u64,
}

impl PcAcc {
    fn merge(&mut self, o: &PcAcc) {
        let (p, q) = (&mut self.pc, &o.pc);
        p.api_calls += q.api_calls;
        p.reads += q.reads;
        p.read_bytes += q.read_bytes;
        p.read_ns += q.read_ns;
        p.read_wait_ns += q.read_wait_ns;
        p.writes += q.writes;
        p.write_bytes += q.write_bytes;
        p.write_ns += q.write_ns;
        p.errors += q.errors;
        self.timed += o.timed;
        self.timed_ns += o.timed_ns;
    }

    /// The record, the site's recording time scaled from its timed operations to all of them
    /// (the timed ones' mean times the count; exact when every operation was timed).
    fn record(self) -> PcRecord {
        let site = self.site;
        let record_ns = if self.timed == 0 {
            0
        } else if self.timed == self.pc.api_calls {
            self.timed_ns
        } else {
            (self.timed_ns as f64 * self.pc.api_calls as f64 / self.timed as f64).round() as u64
        };
        PcRecord {
            site: site_key(site),
            file: site.file().to_string(),
            line: site.line(),
            record_ns,
            ..self.pc
        }
    }
}

/// `at` in nanoseconds since `started`.
fn at_ns(started: Instant, at: Instant) -> u64 {
    at.saturating_duration_since(started).as_nanos() as u64
}

/// How one launch's time is known.
enum Timed {
    Host,
    Device(u64),
    Estimated,
}

/// The CK record of a kernel on one executor: the timed launches' time plus the estimated
/// ones' (the sum of its launches' durations in `launches.jsonl`).
fn ck_record(k: &KernelInfo, a: &CkAcc) -> CkRecord {
    CkRecord {
        kernel: k.id.clone(),
        kind: k.kind.clone(),
        executor: a.exec,
        launches: a.measured + a.estimated,
        measured: a.measured,
        estimated: a.estimated,
        device_ns: a.measured_ns + a.estimated_ns,
        time_source: match a.sources {
            1 => "device",
            2 => "host",
            _ => "mixed",
        }
        .into(),
        elements: a.elements,
        bytes_read: a.bytes[0],
        bytes_written: a.bytes[1],
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
    let hash = h.finish();
    let elements = match &*kernel {
        Kernel::Fused(k) => k.domain.len(),
        Kernel::Intrinsic(c) => c.out_shape.iter().product(),
    } as u64;
    KernelInfo {
        hash,
        id: format!("{hash:016x}"),
        kind,
        listing,
        instructions,
        elements,
        weights: kernel_weights(&kernel, sites),
        _kernel: kernel,
    }
}
