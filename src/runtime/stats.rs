//! What `Runtime::stats()` returns: snapshots of the counters (`crate::counters`) every stage
//! updates: what was recorded, generated, launched, allocated and moved, and why each flush happened.

use crate::compile::FlushReason;
use std::sync::atomic::Ordering::Relaxed;

pub use crate::counters::{Counters, DeviceCounters, DeviceStats};

/// The device time of one GPU kernel (`Runtime::take_kernel_times`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelTime {
    /// Entry point, a hash of the source, and work-groups.
    pub name: String,
    /// Timed launches.
    pub launches: u64,
    /// Their device time in all, in nanoseconds.
    pub device_ns: u64,
}

/// What one executor did (`Stats::executors`, indexed as `Runtime::live_devices()`: 0 the CPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorStats {
    /// Programs the scheduler routed to it (counted whenever a device executor runs; 0 when the
    /// CPU runs alone).
    pub tasks: u64,
    /// Parts of split launches it ran (`Runtime::split`, `ARRAYFLOW_SPLIT`).
    pub parts: u64,
    /// Bytes moved into it from another executor.
    pub bytes_in: u64,
    /// Bytes moved out of it to another executor.
    pub bytes_out: u64,
}

/// A snapshot of the runtime's counters. Counts are totals since start-up; subtract two snapshots
/// (`after.since(&before)`) to measure a piece of code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations the application recorded (after folding).
    pub ops_recorded: u64,
    /// Operations the front end folded away (constant folding, strength reduction).
    pub ops_folded: u64,
    /// Recorded operations the program generator dropped as dead.
    pub ops_eliminated: u64,
    /// Flushes of the work queue, by reason.
    pub flushes: FlushCounts,
    /// Program sequences the program generator built (a trace-cache hit builds none).
    pub sequences_generated: u64,
    /// Fused kernels the program generator built.
    pub kernels_generated: u64,
    /// Instructions in the fused kernels generated (loads, constants and operations, after
    /// common-subexpression elimination).
    pub kernel_instructions: u64,
    /// Random numbers the flushed kernels draw: each random generator a kernel evaluates counts
    /// its elements (a lazy draw recomputed by two kernels counts twice).
    pub random_values: u64,
    /// Elements the micro-kernels of stepped kernels computed (each step's domain, summed;
    /// `Runtime::step_kernel` runs them over the box its scope needs).
    pub stepped_elements: u64,
    /// Intrinsic programs the program generator scheduled.
    pub intrinsics_generated: u64,
    /// Fused kernels the executors ran.
    pub kernels_launched: u64,
    /// Intrinsic programs the executors ran.
    pub intrinsics_launched: u64,
    /// Final reduction stages run (one per fused kernel with reductions).
    /// Launches split between executors, each part on its own (`Runtime::split`,
    /// `ARRAYFLOW_SPLIT`; the parts per executor are `executors[i].parts`).
    pub split_launches: u64,
    pub final_stages_launched: u64,
    /// Buffers newly allocated (not taken from the pool).
    pub buffers_allocated: u64,
    /// Bytes of the buffers newly allocated.
    pub bytes_allocated: u64,
    /// Buffers taken from the pool of released ones.
    pub buffers_reused: u64,
    /// Buffers the program generator needed that the application never sees.
    pub temporaries: u64,
    /// Bytes written into the runtime by the application.
    pub bytes_uploaded: u64,
    /// Bytes read out of the runtime by the application.
    pub bytes_downloaded: u64,
    /// Programs that failed (their results are invalid).
    pub failed_programs: u64,
    /// Program sequences run on the application's thread (the small-step fast path: a small
    /// sequence with nothing else outstanding, on a runtime without a device executor).
    pub inline_runs: u64,
    /// Fused kernels compiled to native code by the CPU's C compiler (not found in the disk cache).
    pub native_compiles: u64,
    /// Fused kernels run as native code rather than on the tile VM.
    pub native_launches: u64,
    /// Trace cache: flushes whose program sequence was found, or generated and inserted; entries
    /// evicted (per bucket or by the global limit); time spent looking keys up.
    pub trace: CacheStats,
    /// Program cache (compiled native kernels, keyed by their C source): `hits` found loaded in
    /// memory, `insertions` loaded from the disk cache, `misses` compiled, `evictions` removed from
    /// the disk cache, `lookup_ns` rendering and hashing sources.
    pub programs: CacheStats,
    /// Macro cache (code reuse sections): replays (hits), recordings (misses), insertions,
    /// evictions, lookup time.
    pub macros: CacheStats,
    /// Host time the application threads spent in flushes (lookup or generation, instantiation,
    /// hand-off), in nanoseconds.
    pub flush_ns: u64,
    /// Time application threads waited for the executors to catch up (flow control), in
    /// nanoseconds.
    pub flow_wait_ns: u64,
    /// The device executor's work.
    pub device: DeviceStats,
    /// Per executor (index 0 the CPU, then the devices in `Runtime::live_devices()` order): what
    /// ran there and what moved in and out.
    pub executors: [ExecutorStats; crate::counters::MAX_EXECUTORS],
}

/// Counters of one cache ([`Stats::trace`], [`Stats::programs`], [`Stats::macros`]; each field of
/// [`Stats`] says what the counters mean for its cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
    /// Entries added.
    pub insertions: u64,
    /// Entries removed to make room.
    pub evictions: u64,
    /// Time spent looking entries up, in nanoseconds.
    pub lookup_ns: u64,
}

impl CacheStats {
    /// What happened between the snapshot `e` and this one.
    pub fn since(&self, e: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits - e.hits,
            misses: self.misses - e.misses,
            insertions: self.insertions - e.insertions,
            evictions: self.evictions - e.evictions,
            lookup_ns: self.lookup_ns - e.lookup_ns,
        }
    }
}

/// Flush counts by [`FlushReason`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushCounts {
    /// The application read a pending result.
    pub read: u64,
    /// The queue grew past its threshold (`ARRAYFLOW_QUEUE_THRESHOLD`).
    pub threshold: u64,
    /// A non-fusible operation (an intrinsic) entered an empty queue.
    pub non_fusible: u64,
    /// `hint_read` on a pending array.
    pub hint: u64,
    /// `Runtime::execute()`.
    pub execute: u64,
    /// The end of the outermost block.
    pub block_end: u64,
    /// Entering or ending a code reuse section.
    pub section: u64,
}

impl FlushCounts {
    /// Flushes for every reason.
    pub fn total(&self) -> u64 {
        self.read
            + self.threshold
            + self.non_fusible
            + self.hint
            + self.execute
            + self.block_end
            + self.section
    }
    /// Flushes for reason `r`.
    pub fn get(&self, r: FlushReason) -> u64 {
        match r {
            FlushReason::Read => self.read,
            FlushReason::Threshold => self.threshold,
            FlushReason::NonFusible => self.non_fusible,
            FlushReason::Hint => self.hint,
            FlushReason::Execute => self.execute,
            FlushReason::BlockEnd => self.block_end,
            FlushReason::Section => self.section,
        }
    }
}

impl Counters {
    /// The counters' values now.
    pub fn snapshot(&self) -> Stats {
        let f = |r: FlushReason| self.flushes[r.index()].load(Relaxed);
        Stats {
            ops_recorded: self.ops_recorded.load(Relaxed),
            ops_folded: self.ops_folded.load(Relaxed),
            ops_eliminated: self.ops_eliminated.load(Relaxed),
            flushes: FlushCounts {
                read: f(FlushReason::Read),
                threshold: f(FlushReason::Threshold),
                non_fusible: f(FlushReason::NonFusible),
                hint: f(FlushReason::Hint),
                execute: f(FlushReason::Execute),
                block_end: f(FlushReason::BlockEnd),
                section: f(FlushReason::Section),
            },
            sequences_generated: self.sequences_generated.load(Relaxed),
            kernels_generated: self.kernels_generated.load(Relaxed),
            kernel_instructions: self.kernel_instructions.load(Relaxed),
            random_values: self.random_values.load(Relaxed),
            stepped_elements: self.stepped_elements.load(Relaxed),
            intrinsics_generated: self.intrinsics_generated.load(Relaxed),
            kernels_launched: self.kernels_launched.load(Relaxed),
            intrinsics_launched: self.intrinsics_launched.load(Relaxed),
            final_stages_launched: self.final_stages_launched.load(Relaxed),
            split_launches: self.split_launches.load(Relaxed),
            buffers_allocated: self.buffers_allocated.load(Relaxed),
            bytes_allocated: self.bytes_allocated.load(Relaxed),
            buffers_reused: self.buffers_reused.load(Relaxed),
            temporaries: self.temporaries.load(Relaxed),
            bytes_uploaded: self.bytes_uploaded.load(Relaxed),
            bytes_downloaded: self.bytes_downloaded.load(Relaxed),
            failed_programs: self.failed_programs.load(Relaxed),
            inline_runs: self.inline_runs.load(Relaxed),
            native_compiles: crate::exec::cpu::native::COMPILED.load(Relaxed),
            native_launches: crate::exec::cpu::native::LAUNCHES.load(Relaxed),
            trace: CacheStats {
                hits: self.trace_hits.load(Relaxed),
                misses: self.trace_misses.load(Relaxed),
                insertions: self.trace_insertions.load(Relaxed),
                evictions: self.trace_evictions.load(Relaxed),
                lookup_ns: self.trace_lookup_ns.load(Relaxed),
            },
            programs: {
                use crate::exec::cpu::native as n;
                CacheStats {
                    hits: n::MEMORY_HITS.load(Relaxed),
                    misses: n::COMPILED.load(Relaxed),
                    insertions: n::DISK_HITS.load(Relaxed),
                    evictions: n::evictions(),
                    lookup_ns: n::LOOKUP_NS.load(Relaxed),
                }
            },
            macros: CacheStats {
                hits: self.macro_hits.load(Relaxed),
                misses: self.macro_misses.load(Relaxed),
                insertions: self.macro_insertions.load(Relaxed),
                evictions: self.macro_evictions.load(Relaxed),
                lookup_ns: self.macro_lookup_ns.load(Relaxed),
            },
            flush_ns: self.flush_ns.load(Relaxed),
            flow_wait_ns: crate::runtime::Inner::get().flow.waited_ns.load(Relaxed),
            device: self.device.snapshot(),
            executors: std::array::from_fn(|i| ExecutorStats {
                tasks: self.exec_tasks[i].load(Relaxed),
                parts: self.exec_parts[i].load(Relaxed),
                bytes_in: self.exec_bytes_in[i].load(Relaxed),
                bytes_out: self.exec_bytes_out[i].load(Relaxed),
            }),
        }
    }
}

impl Stats {
    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &Stats) -> Stats {
        let fc = |a: &FlushCounts, b: &FlushCounts| FlushCounts {
            read: a.read - b.read,
            threshold: a.threshold - b.threshold,
            non_fusible: a.non_fusible - b.non_fusible,
            hint: a.hint - b.hint,
            execute: a.execute - b.execute,
            block_end: a.block_end - b.block_end,
            section: a.section - b.section,
        };
        Stats {
            ops_recorded: self.ops_recorded - earlier.ops_recorded,
            ops_folded: self.ops_folded - earlier.ops_folded,
            ops_eliminated: self.ops_eliminated - earlier.ops_eliminated,
            flushes: fc(&self.flushes, &earlier.flushes),
            sequences_generated: self.sequences_generated - earlier.sequences_generated,
            kernels_generated: self.kernels_generated - earlier.kernels_generated,
            kernel_instructions: self.kernel_instructions - earlier.kernel_instructions,
            random_values: self.random_values - earlier.random_values,
            stepped_elements: self.stepped_elements - earlier.stepped_elements,
            intrinsics_generated: self.intrinsics_generated - earlier.intrinsics_generated,
            kernels_launched: self.kernels_launched - earlier.kernels_launched,
            intrinsics_launched: self.intrinsics_launched - earlier.intrinsics_launched,
            final_stages_launched: self.final_stages_launched - earlier.final_stages_launched,
            split_launches: self.split_launches - earlier.split_launches,
            buffers_allocated: self.buffers_allocated - earlier.buffers_allocated,
            bytes_allocated: self.bytes_allocated - earlier.bytes_allocated,
            buffers_reused: self.buffers_reused - earlier.buffers_reused,
            temporaries: self.temporaries - earlier.temporaries,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
            failed_programs: self.failed_programs - earlier.failed_programs,
            inline_runs: self.inline_runs - earlier.inline_runs,
            native_compiles: self.native_compiles - earlier.native_compiles,
            native_launches: self.native_launches - earlier.native_launches,
            trace: self.trace.since(&earlier.trace),
            programs: self.programs.since(&earlier.programs),
            macros: self.macros.since(&earlier.macros),
            flush_ns: self.flush_ns - earlier.flush_ns,
            flow_wait_ns: self.flow_wait_ns - earlier.flow_wait_ns,
            device: self.device.since(&earlier.device),
            executors: std::array::from_fn(|i| {
                let (a, b) = (&self.executors[i], &earlier.executors[i]);
                ExecutorStats {
                    tasks: a.tasks - b.tasks,
                    parts: a.parts - b.parts,
                    bytes_in: a.bytes_in - b.bytes_in,
                    bytes_out: a.bytes_out - b.bytes_out,
                }
            }),
        }
    }
}
