//! The runtime's counters: atomics that every layer (executors, scheduler, C-Scheduler, front end)
//! adds to, passed to each as an `Arc<Counters>`. `Runtime::stats()` snapshots them
//! (`runtime/stats.rs`).

use crate::ir::FlushReason;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Most executors one runtime runs (the CPU and up to fifteen devices).
pub const MAX_EXECUTORS: usize = 16;

/// Live counters (atomics, updated from every thread).
#[derive(Debug, Default)]
pub struct Counters {
    pub ops_recorded: AtomicU64,
    pub ops_folded: AtomicU64,
    pub ops_eliminated: AtomicU64,
    pub flushes: [AtomicU64; FlushReason::ALL.len()],
    pub sequences_generated: AtomicU64,
    pub kernels_generated: AtomicU64,
    pub kernel_instructions: AtomicU64,
    pub random_values: AtomicU64,
    pub stepped_elements: AtomicU64,
    pub intrinsics_generated: AtomicU64,
    pub kernels_launched: AtomicU64,
    pub intrinsics_launched: AtomicU64,
    pub final_stages_launched: AtomicU64,
    pub buffers_allocated: AtomicU64,
    pub bytes_allocated: AtomicU64,
    pub buffers_reused: AtomicU64,
    pub temporaries: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    pub bytes_downloaded: AtomicU64,
    pub failed_programs: AtomicU64,
    pub inline_runs: AtomicU64,
    pub trace_hits: AtomicU64,
    pub trace_misses: AtomicU64,
    pub trace_insertions: AtomicU64,
    pub trace_evictions: AtomicU64,
    pub trace_lookup_ns: AtomicU64,
    pub macro_hits: AtomicU64,
    pub macro_misses: AtomicU64,
    pub macro_insertions: AtomicU64,
    pub macro_evictions: AtomicU64,
    pub macro_lookup_ns: AtomicU64,
    pub flush_ns: AtomicU64,
    pub device: DeviceCounters,
    /// Programs the scheduler routed to each executor (index 0 the CPU).
    pub exec_tasks: [AtomicU64; MAX_EXECUTORS],
    /// Parts of split launches each executor ran (`exec::split`).
    pub exec_parts: [AtomicU64; MAX_EXECUTORS],
    /// Launches split between executors.
    pub split_launches: AtomicU64,
    /// Bytes moved into each executor from another.
    pub exec_bytes_in: [AtomicU64; MAX_EXECUTORS],
    /// Bytes moved out of each executor to another.
    pub exec_bytes_out: [AtomicU64; MAX_EXECUTORS],
    /// Device time per kernel label (`ARRAYFLOW_KERNEL_TIMES=1`, `exec/gpu/timing.rs`):
    /// launches and nanoseconds.
    pub kernel_times: parking_lot::Mutex<ahash::AHashMap<String, (u64, u64)>>,
}

impl Counters {
    /// Adds one timed launch of the kernel `label`.
    pub fn time_kernel(&self, label: String, ns: u64) {
        let mut t = self.kernel_times.lock();
        let e = t.entry(label).or_default();
        e.0 += 1;
        e.1 += ns;
    }
}

/// Declares the device executor's counters once: the atomic struct, the snapshot and `since`.
macro_rules! device_counters {
    ($($(#[$doc:meta])* $f:ident),* $(,)?) => {
        /// The device executor's counters, updated as it works.
        #[derive(Debug, Default)]
        pub struct DeviceCounters { $(pub $f: AtomicU64),* }
        /// What the device executor (OpenCL or wgpu) did.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct DeviceStats { $($(#[$doc])* pub $f: u64),* }
        impl DeviceCounters {
            /// The counters' values now.
            pub fn snapshot(&self) -> DeviceStats { DeviceStats { $($f: self.$f.load(Relaxed)),* } }
        }
        impl DeviceStats {
            /// What happened between the snapshot `e` and this one.
            pub fn since(&self, e: &DeviceStats) -> DeviceStats { DeviceStats { $($f: self.$f - e.$f),* } }
        }
    };
}

device_counters! {
    /// Programs the scheduler sent to the device executor.
    tasks,
    /// Device kernels enqueued (a split kernel counts each half).
    kernels,
    /// Programs sent to the CPU because they use f64 and the device has none.
    f64_to_cpu,
    /// Programs the device executor ran on the CPU (unsupported, failed to compile, out of memory).
    fallbacks,
    /// Passes dispatched (a plan of several passes counts each it runs; the passes of a kept
    /// table an earlier launch computed are not run again).
    dispatches,
    /// Launches that bound a table kept from an earlier launch (`GpuPlan::kept`: Bluestein's
    /// FFT filter) instead of computing it.
    kept_hits,
    /// Kernels split in two after the device compiler rejected them.
    splits,
    /// Batches of enqueued work handed to the device: OpenCL `clFlush`, wgpu `queue.submit`
    /// (each holding every dispatch recorded since the last).
    submissions,
    /// Programs whose fused kernel the device ran as a hand-written intrinsic a pattern of
    /// registry recognised (`IntrinsicDef::recognise`: the tiled transpose), counted when its kernel is enqueued.
    intrinsics,
    /// Device allocations that failed (or would pass the memory budget).
    alloc_failures,
    /// Buffers moved to the host backing store to free device memory.
    swapped_out,
    /// Buffers brought back from the host backing store.
    swapped_in,
    /// Bytes moved from the CPU executor to the device.
    bytes_to_device,
    /// Bytes moved from the device to the CPU executor.
    bytes_from_device,
    /// Device programs compiled from source.
    compiles,
    /// Device programs loaded from the on-disk binary cache (OpenCL binaries, the wgpu pipeline
    /// cache).
    disk_hits,
    /// Device programs found compiled in memory.
    memory_hits,
    /// Nanoseconds spent compiling or loading device programs.
    compile_ns,
    /// Host time from the start of the flush (or section replay) that made a device program to
    /// the submission that hands its kernels to the device (OpenCL `clFlush`, wgpu
    /// `queue.submit`), summed in nanoseconds over `launches`.
    launch_ns,
    /// The number of programs `launch_ns` sums.
    launches,
    /// Of `launch_ns`: the time until the scheduler took the flush's programs (from the same
    /// start, summed over `launches`).
    scheduled_ns,
    /// Of `launch_ns`: the time until the device executor took each program (from the same
    /// start, summed over `launches`).
    received_ns,
    /// Of `launch_ns`: host time inside the device API's submission (OpenCL: the markers and
    /// `clFlush`; wgpu: finishing the command buffer and `queue.submit`), summed in nanoseconds
    /// over every submission.
    submit_ns,
    /// Host time from the same start to the device's report that the program's work is done
    /// (the completion callback), summed in nanoseconds over the same `launches`.
    done_ns,
}

impl Counters {
    /// Adds `n` to the counter `c`.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}
