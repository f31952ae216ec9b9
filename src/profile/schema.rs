//! The profile database's record types (the seed's 813, FIG. 8B and 8C): what one run folder
//! holds, as plain serde types, so that one machine records and another analyses. Times are
//! nanoseconds; instants are nanoseconds since the run began. Bump [`SCHEMA_VERSION`] on any change
//! a reader of the previous version would misread.

use serde::{Deserialize, Serialize};

/// The version of the files' layout; readers refuse other versions.
pub const SCHEMA_VERSION: u32 = 2;

/// `meta.json`: the run as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The arrayflow version that recorded the run.
    pub arrayflow_version: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Host time from the start of profiling to its end.
    pub wall_ns: u64,
    /// The process id.
    pub pid: u32,
    /// Operating system and CPU architecture, e.g. `linux x86_64`.
    pub platform: String,
    /// The executors, by index (`CkRecord::executor`): `0` is the CPU executor.
    pub executors: Vec<String>,
    /// How device kernels were timed: `device` (OpenCL profiling events, wgpu timestamp queries)
    /// or `host` (the host's clock around the work: no device timers were armed at start-up).
    pub device_timing: String,
    /// How device timings were sampled, e.g. `first 8 launches of each kernel timed, then 1 in
    /// 32` (`ARRAYFLOW_PROFILE_SAMPLE`); the untimed launches are estimated.
    #[serde(default)]
    pub sampling: String,
    /// The program's command line.
    pub command: Vec<String>,
}

/// `pc.jsonl`: one record per call site (file:line) of the application (FIG. 8B).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PcRecord {
    /// `file:line`.
    pub site: String,
    /// The source file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// Array operations recorded at this site.
    pub api_calls: u64,
    /// Host time spent recording them.
    pub record_ns: u64,
    /// Reads of results into the application: count, bytes, host time, and of that time the time
    /// spent waiting for the executors to compute them.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Host time reading.
    pub read_ns: u64,
    /// Of the read time, waiting for the executors.
    pub read_wait_ns: u64,
    /// Writes of the application's data into the runtime: count, bytes, host time.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Host time writing.
    pub write_ns: u64,
    /// Errors reported at this site.
    pub errors: u64,
}

/// A call site's share of a compute kernel (the seed's 833).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteWeight {
    /// `file:line`.
    pub site: String,
    /// Estimated share of the kernel's cost, from the op table's instruction estimates; a
    /// kernel's weights sum to 1.
    pub weight: f64,
}

/// `ck.jsonl`: one record per compute kernel (fused kernel or intrinsic) and executor, summed
/// over its launches (FIG. 8C); single launches are in `launches.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CkRecord {
    /// A hash of the kernel's listing: equal kernels have equal ids, across runs.
    pub kernel: String,
    /// `fused` or the intrinsic's name.
    pub kind: String,
    /// Index into [`Meta::executors`].
    pub executor: u32,
    /// Launches.
    pub launches: u64,
    /// Of the launches, those timed (by the device or the host).
    #[serde(default)]
    pub measured: u64,
    /// Of the launches, those not timed (sampling): each counted at the mean of the kernel's
    /// launches timed before it.
    #[serde(default)]
    pub estimated: u64,
    /// Device time summed over the launches (the timed ones' time plus the estimated ones').
    pub device_ns: u64,
    /// How the timed launches were timed: `device` (the device's own timers), `host` (the host
    /// clock around the kernel) or `mixed`.
    pub time_source: String,
    /// Domain elements per launch.
    pub elements: u64,
    /// Bytes read and written, summed over the launches.
    pub bytes_read: u64,
    /// Bytes written, summed over the launches.
    pub bytes_written: u64,
    /// Estimated instructions per element.
    pub instructions: u64,
    /// The call sites fused into the kernel, with their weights.
    pub sites: Vec<SiteWeight>,
    /// The kernel's listing (instructions with their call sites).
    pub listing: String,
}

/// `launches.jsonl`: one kernel launch, for timelines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// The kernel (`CkRecord::kernel`).
    pub kernel: String,
    /// Index into `Meta::executors`.
    pub executor: u32,
    /// Start (the end minus the duration when the device timed it).
    pub t_ns: u64,
    /// Their time in all.
    pub dur_ns: u64,
    /// `device`, `host` or `estimated` (not timed: the mean of the kernel's timed launches so
    /// far).
    pub time_source: String,
}

/// `runtime.jsonl`: one event of the runtime itself: a flush, a cache look-up, a compile, a
/// transfer, a wait. Moves between executors (`move`: from the request to the data's arrival)
/// and swaps between a device and its host backing store (`swap`, detail `out`: the download,
/// waited for; `in`: staging and enqueueing the upload, which then overlaps the device's work)
/// carry their bytes and duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEvent {
    /// What happened: `flush`, `generate`, `trace_lookup`, `macro_lookup`, `program_cache`,
    /// `compile`, `flow_wait`, `fallback`, `move`, `swap`, `read`, `write`, `pass` (one pass of
    /// a launch in passes, detail `device` or `cpu`; the launch itself is one record when its
    /// last pass ends).
    pub kind: String,
    /// More about it (a flush's reason, a compile's executor, a move's direction).
    pub detail: String,
    /// For look-ups: whether the entry was found.
    pub hit: Option<bool>,
    /// When it began.
    pub t_ns: u64,
    /// Their time in all.
    pub dur_ns: u64,
    /// Bytes moved, where that applies.
    pub bytes: u64,
    /// The thread it happened on (`app`, `scheduler`, an executor's name).
    pub thread: String,
    /// The application's call site, where one caused it.
    pub site: Option<String>,
}

/// A whole run, as the reader returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// `meta.json`.
    pub meta: Meta,
    /// `pc.jsonl`.
    pub pcs: Vec<PcRecord>,
    /// `ck.jsonl`.
    pub cks: Vec<CkRecord>,
    /// `launches.jsonl`.
    pub launches: Vec<Launch>,
    /// `runtime.jsonl`.
    pub runtime: Vec<RuntimeEvent>,
}

/// The files of a run folder, in order: `meta.json`, then one JSON object per line in the others.
pub const FILES: [&str; 5] = [
    "meta.json",
    "pc.jsonl",
    "ck.jsonl",
    "launches.jsonl",
    "runtime.jsonl",
];
