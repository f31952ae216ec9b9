//! The runtime's settings (`Runtime::builder()` or environment variables), read when it starts.

/// Settings of the runtime. Set them with `Runtime::builder()...start()` before the first array operation,
/// or through environment variables (`ARRAYFLOW_QUEUE_THRESHOLD`, `ARRAYFLOW_TILE`,
/// `ARRAYFLOW_MAX_OUTSTANDING`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Compute entries the work queue holds before it is flushed (outside blocks).
    pub queue_threshold: usize,
    /// Programs submitted but not completed before the application thread waits.
    pub max_outstanding: usize,
    /// Elements per tile of the CPU tile VM (a multiple of 1024).
    pub tile: usize,
    /// Whether flushes look up and fill the trace cache (`ARRAYFLOW_TRACE_CACHE=0` turns it off).
    pub trace_cache: bool,
    /// Trace-cache entries per bucket (call site of a key's first entry).
    pub trace_bucket_entries: usize,
    /// Trace-cache entries in all.
    pub trace_entries: usize,
    /// Code reuse sections the macro cache keeps (least recently used evicted first).
    pub macro_entries: usize,
    /// The device programs go to first (`ARRAYFLOW_DEVICE`); the CPU executor always runs too.
    pub device: crate::exec::device::DeviceChoice,
    /// Limits of the device executor (`ARRAYFLOW_DEVICE_MEMORY`, `ARRAYFLOW_DEVICE_KERNEL_LIMIT`).
    pub device_limits: crate::exec::gpu::Limits,
    /// The code reuse replay check: a section's first replay and every `reuse_check`th one are
    /// recorded again and compared with the cached recording (0: off). `ARRAYFLOW_REUSE_CHECK`
    /// (`0`/`off`, `on`, or N); default 16 in debug builds, off in release builds.
    pub reuse_check: u32,
    /// Size limit of each kind of on-disk program cache (`cpu`, `opencl`, `wgpu`) in MB, least
    /// recently used entries evicted first (`ARRAYFLOW_CACHE_LIMIT_MB`, default 1024).
    pub cache_limit_mb: u64,
}

/// The replay check's default period when it is on.
pub const REUSE_CHECK_EVERY: u32 = 16;

fn reuse_check_from_env() -> u32 {
    let default = if cfg!(debug_assertions) {
        REUSE_CHECK_EVERY
    } else {
        0
    };
    match std::env::var("ARRAYFLOW_REUSE_CHECK").as_deref() {
        Ok("off") | Ok("false") => 0,
        Ok("on") | Ok("true") => REUSE_CHECK_EVERY,
        Ok(v) => v.trim().parse().unwrap_or(default),
        Err(_) => default,
    }
}

impl Default for Config {
    fn default() -> Self {
        let env = |k: &str, d: usize| crate::settings::number(k).unwrap_or(d);
        Config {
            queue_threshold: env("ARRAYFLOW_QUEUE_THRESHOLD", 512),
            max_outstanding: env("ARRAYFLOW_MAX_OUTSTANDING", 256),
            tile: tile_size(env("ARRAYFLOW_TILE", 1024)),
            trace_cache: !matches!(
                std::env::var("ARRAYFLOW_TRACE_CACHE").as_deref(),
                Ok("0") | Ok("off")
            ),
            trace_bucket_entries: env("ARRAYFLOW_TRACE_BUCKET_ENTRIES", 16).max(1),
            trace_entries: env("ARRAYFLOW_TRACE_ENTRIES", 4096).max(1),
            macro_entries: env("ARRAYFLOW_MACRO_ENTRIES", 256).max(1),
            device: crate::exec::device::DeviceChoice::from_env(),
            device_limits: crate::exec::gpu::Limits::from_env(),
            reuse_check: reuse_check_from_env(),
            cache_limit_mb: crate::exec::program_cache::limit_mb_from_env(),
        }
    }
}

/// The tile VM's tile: a multiple of the reduction block (1024 elements), so reductions group their
/// partials the same way whatever the tile, and the native tier agrees bit for bit.
pub fn tile_size(requested: usize) -> usize {
    let b = crate::exec::cpu::REDUCE_BLOCK;
    requested.max(1).div_ceil(b) * b
}
