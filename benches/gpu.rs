//! GPU benchmark: the element-wise chain of `benches/chain.rs`,
//!
//!     y = |sqrt(a * b + 1) * a - b| * 0.5 + a
//!
//! (8 f32 ops, read a and b, write y: 12 n bytes) on the device executor `ARRAYFLOW_DEVICE`
//! selects (`opencl[:N]`, `wgpu[:N]`, `cpu` or `auto`), one executor per process. Measured:
//!
//! - **chain**: for n = 2^20, 2^24, 2^27 (`GPU_SIZES=20,24` overrides), a loop of K iterations that
//!   each record the chain and `eval()` it (computes on the device and waits, no copy to the host;
//!   the trace cache makes the recording cheap). K is chosen so one loop takes ~0.2 s
//!   (`GPU_LOOP_SECONDS`); 7 loops; the median time per iteration. GB/s = 12 n / time.
//! - **sum**: `a.sum()` evaluated the same way on the largest array (4 n bytes read), each waited
//!   for and back to back (stream).
//! - **axis sums**: `a.sum_axis(0)` (column sums) and `a.sum_axis(1)` (row sums) of an N x N f32
//!   array, N = 8192 (`GPU_AXIS_N` overrides, 0 skips them), each checked against f64 sums on
//!   the host, then timed as the sum (sync and stream); GB/s = 4 N^2 / time. Rows `sum_axis0`,
//!   `sum_axis1` (n = N^2) of the JSON lines; `benches/peers/chain.py` times `a.sum(0)` and
//!   `a.sum(1)` alike.
//! - **launch latency**: `Stats::device.launch_ns / launches` (host time from the call that triggers
//!   the flush to the submission that hands the kernel to the device: OpenCL `clFlush`, wgpu
//!   `queue.submit`) over the timed, trace-hit iterations of a 2^10 chain. Next to it, the **launch
//!   floor**: the same hand-over through the bare API in the copy peer's own context (a small
//!   three-buffer kernel: OpenCL four `clSetKernelArg`, `clEnqueueNDRangeKernel` with an event and
//!   `clFlush`; wgpu encoder, compute pass, `finish` and `queue.submit`, with one bind group and
//!   with a bind group made per launch), each launch waited for, untimed, before the next.
//!   `FLOOR_MODES=other,own,waiter` (OpenCL) also prints the floor with other thread arrangements:
//!   the context made on the main thread and the launches on another one, everything made and
//!   launched on another thread, and the main thread launching while another waits on the events.
//! - **copy peer** (same process, same device, not through arrayflow): a device-to-device copy of
//!   1.5 n f32 (6 n bytes read + 6 n written = the chain's 12 n), timed the same way (K copies, each
//!   enqueued and waited for). OpenCL: an own opencl3 context and queue on the same device,
//!   `enqueue_copy_buffer` + `finish()`; wgpu: an own device on the same adapter,
//!   `copy_buffer_to_buffer` + `queue.submit` + `device.poll(Wait)`, and the same bytes copied by a
//!   WGSL compute kernel (`dst[i] = src[i]`; on NVIDIA's Vulkan driver the buffer copy reaches only
//!   ~0.7-0.8 TB/s where a kernel copy reaches ~3 TB/s, so "af / copy" uses the faster of the two).
//!   Also "stream": K copies enqueued back to back and one wait (the device's copy throughput
//!   without the per-copy sync); for the wgpu kernel copy both one submission per copy (as
//!   arrayflow submits each flush) and 64 copies per submission, whose difference is what a
//!   submission costs the device. Measured after all of arrayflow's figures; skipped with
//!   `ARRAYFLOW_DEVICE=cpu` or `GPU_PEER=0`.
//! - **hand-written chain** (same peer context): the chain as a kernel written by hand for the
//!   API (one quad of `a` and `b` per thread through vector pointers, one quad of `y` written; the
//!   OpenCL build options arrayflow uses), checked against the host, then launched back to back
//!   with one wait, in each launch mode the peer offers. OpenCL: an event per launch, no event,
//!   no event with a marker and its event after each launch, and that with the kernel's arguments
//!   set before each launch (as arrayflow launches), `clFlush` after each; wgpu: one submission
//!   per launch (as arrayflow submits each flush) and 64 per submission. It tells apart what the generated kernel costs from what the API costs.
//!   `GPU_DUMP_DIR=dir` saves the OpenCL driver's binary of it (PTX on NVIDIA) as `hand_chain.bin`.
//!
//! The results end with a table, and one `JSON {...}` line per row that `benches/peers/merge.py`
//! merges with the other executor's run and the PyTorch peer (`benches/peers/chain.py`).
//! `RUST_LOG` sets the level of arrayflow's log on stderr (default `warn`: a missing device shows).
//!
//! Run (one process per executor). The list of devices printed first gives the indices: with a CPU
//! OpenCL platform (pocl) installed, the GPU can be `opencl:1`, and plain `opencl` measures the CPU
//! (the benchmark warns).
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-bench cargo build --release --bench gpu
//! B=$(ls -t /tmp/target-bench/release/deps/gpu-* | grep -v '\.d$' | head -1)
//! ARRAYFLOW_DEVICE=opencl:1 $B > ocl.txt      # or: ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench gpu
//! ARRAYFLOW_DEVICE=wgpu:0 $B > wgpu.txt
//! python3 benches/peers/chain.py > torch.txt
//! python3 benches/peers/merge.py ocl.txt wgpu.txt torch.txt
//! ```

mod common;
use common::{chain_af, chain_scalar, cpu_model, fmt_time, gbs, random_vec};

use arrayflow::{Array, Backend, DeviceInfo, DeviceKind, Runtime, Stats};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Timed loops per measurement; the median is reported.
const REPEATS: usize = 7;

/// The result of [`time_loop`].
struct Timing {
    /// Median over the timed loops of the time per iteration.
    per_iter: Duration,
    /// Fastest and slowest loop, per iteration.
    min: Duration,
    max: Duration,
    /// Iterations per timed loop.
    k: usize,
    /// `Runtime::stats()` accumulated over the timed loops only (not the warm-up).
    stats: Stats,
    /// Iterations in the timed loops (REPEATS * k).
    timed_iters: usize,
}

/// Times `run(k)`, which performs `k` iterations and waits for them: a warm-up (at least 3 single
/// iterations and ~`target`/4), K estimated from the median warm-up iteration (so a slow first
/// call, a kernel compile, does not count) and corrected by one untimed loop of K, then
/// [`REPEATS`] timed loops of K; the median per iteration.
fn time_loop(target: Duration, max_k: usize, mut run: impl FnMut(usize)) -> Timing {
    let start = Instant::now();
    let mut warm = Vec::new();
    while warm.len() < 3 || start.elapsed() < target / 4 {
        let t = Instant::now();
        run(1);
        warm.push(t.elapsed().as_secs_f64());
    }
    warm.sort_by(f64::total_cmp);
    let per = warm[warm.len() / 2];
    let mut k = ((target.as_secs_f64() / per.max(1e-9)) as usize).clamp(1, max_k);
    // One loop of k to correct the estimate (a loop can run faster than single iterations).
    let t = Instant::now();
    run(k);
    let el = t.elapsed().as_secs_f64();
    k = ((k as f64 * target.as_secs_f64() / el.max(1e-9)) as usize).clamp(1, max_k);
    let before = Runtime::stats();
    let mut per_iter: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            run(k);
            t.elapsed() / k as u32
        })
        .collect();
    let stats = Runtime::stats().since(&before);
    per_iter.sort_unstable();
    Timing {
        per_iter: per_iter[REPEATS / 2],
        min: per_iter[0],
        max: per_iter[REPEATS - 1],
        k,
        stats,
        timed_iters: REPEATS * k,
    }
}

fn label(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A JSON number (`null` for NaN and infinities).
fn jn(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

/// The executor this process measures.
struct Selected {
    backend: Backend,
    /// The device's index among its backend's devices (`opencl:N`, `wgpu:N`).
    index: Option<usize>,
    /// The device's name (the CPU model for the CPU executor).
    name: String,
    info: Option<&'static DeviceInfo>,
}

/// Reads the running executor: `Runtime::executor()` starts with `opencl:N ...` or `wgpu:N ...`
/// when a device executor runs.
fn selected() -> Selected {
    let backend = Runtime::backend();
    let exec = Runtime::executor();
    let index = exec
        .split_whitespace()
        .next()
        .and_then(|t| t.split_once(':'))
        .filter(|(b, _)| *b == backend.to_string())
        .and_then(|(_, i)| i.parse::<usize>().ok())
        .or_else(|| {
            // Fall back on ARRAYFLOW_DEVICE=backend:N (default 0).
            (backend != Backend::Cpu).then(|| {
                std::env::var("ARRAYFLOW_DEVICE")
                    .ok()
                    .and_then(|v| v.split_once(':').and_then(|(_, i)| i.trim().parse().ok()))
                    .unwrap_or(0)
            })
        });
    let info = index.and_then(|i| {
        Runtime::devices()
            .iter()
            .find(|d| d.backend == backend && d.index == i)
    });
    let name = match info {
        Some(d) => d.name.clone(),
        None => cpu_model(),
    };
    Selected {
        backend,
        index,
        name,
        info,
    }
}

/// A device-to-device copy outside arrayflow, on the device arrayflow runs on.
trait CopyPeer {
    /// The device's name as this API reports it.
    fn device_name(&self) -> String;
    /// Allocates source and destination buffers of `floats` f32 each (dropping earlier ones).
    fn alloc(&mut self, floats: usize) -> Result<(), String>;
    /// Enqueues one copy of the whole source into the destination.
    fn enqueue(&mut self);
    /// Waits for everything enqueued.
    fn wait(&mut self);
    /// Drops the buffers.
    fn free(&mut self);
    /// Enqueues the same copy as a compute kernel (`dst[i] = src[i]`), where the peer has one
    /// for the current buffers; `false` otherwise.
    fn enqueue_kernel(&mut self) -> bool {
        false
    }
    /// Enqueues `k` such kernel copies recorded into one submission (one command buffer), where
    /// the peer submits work in batches; `false` otherwise.
    fn enqueue_kernels(&mut self, _k: usize) -> bool {
        false
    }
    /// The launch floor: host time per launch of a small three-buffer kernel through the bare
    /// API, from its first call to the submission that hands the kernel to the device, each
    /// launch waited for (untimed) before the next. OpenCL: four `clSetKernelArg`,
    /// `clEnqueueNDRangeKernel` with an event, `clFlush`. wgpu: command encoder, compute pass,
    /// `finish`, `queue.submit`; with the bind group made once, and made per launch as arrayflow
    /// does (`None` where the API has no bind groups).
    fn launch_floor(&mut self) -> Option<(Duration, Option<Duration>)> {
        None
    }
    /// The chain itself as a kernel written by hand for this API (the same math; each thread
    /// reads one quad of `a` and `b` through vector pointers and writes one of `y`): allocates
    /// the three buffers, fills `a` and `b`, and returns the names of its launch modes
    /// ([`CopyPeer::chain_enqueue`]); `None` where the peer has no such kernel.
    fn chain_alloc(&mut self, _a: &[f32], _b: &[f32]) -> Result<Option<Vec<&'static str>>, String> {
        Ok(None)
    }
    /// Enqueues `k` launches of the hand-written chain in launch mode `mode` (an index into
    /// the modes `chain_alloc` named).
    fn chain_enqueue(&mut self, _k: usize, _mode: usize) {}
    /// The hand-written chain's `y`, read back after everything enqueued.
    fn chain_read(&mut self) -> Vec<f32> {
        Vec::new()
    }
}

/// Launches per timed loop of a launch floor.
const FLOOR_LAUNCHES: usize = 2000;

/// The median over [`REPEATS`] loops of the mean of `launch`'s returned time, each launch followed
/// by `wait` (untimed).
fn floor_loop(mut launch: impl FnMut() -> Duration, mut wait: impl FnMut()) -> Duration {
    for _ in 0..200 {
        launch();
        wait();
    }
    let mut loops: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let mut t = Duration::ZERO;
            for _ in 0..FLOOR_LAUNCHES {
                t += launch();
                wait();
            }
            t / FLOOR_LAUNCHES as u32
        })
        .collect();
    loops.sort();
    loops[REPEATS / 2]
}

mod ocl_peer {
    use opencl3::command_queue::CommandQueue;
    use opencl3::context::Context;
    use opencl3::device::{CL_DEVICE_TYPE_ALL, Device};
    use opencl3::kernel::Kernel;
    use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
    use opencl3::program::Program;
    use std::time::{Duration, Instant};

    /// The launch floor's kernel: three buffers and a length, as arrayflow's chain kernel binds.
    const FLOOR_CL: &str = "__kernel void floor_k(__global const float* a, __global const float* b, \
        __global float* y, ulong n) { size_t i = get_global_id(0); if (i < n) y[i] = a[i] * b[i] + a[i]; }";
    const FLOOR_N: usize = 1024;

    /// The chain written by hand: one quad per thread, products rounded as arrayflow's are.
    const CHAIN_CL: &str = "#pragma OPENCL FP_CONTRACT OFF
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void chain_k(__global const float4 *restrict a, __global const float4 *restrict b,
             __global float4 *restrict y, uint quads) {
  uint i = get_global_id(0);
  if (i < quads) {
    float4 x = a[i], z = b[i];
    y[i] = fabs(sqrt(x * z + 1.0f) * x - z) * 0.5f + x;
  }
}";

    /// The hand-written chain's program and buffers.
    struct HandChain {
        kernel: Kernel,
        _program: Program,
        y: Buffer<f32>,
        a: Buffer<f32>,
        b: Buffer<f32>,
        quads: usize,
    }

    impl HandChain {
        /// Sets `chain_k`'s four arguments.
        fn set_args(&self) -> Result<(), String> {
            // SAFETY: the arguments match `chain_k`'s signature.
            unsafe {
                self.kernel.set_arg(0, &self.a.get())?;
                self.kernel.set_arg(1, &self.b.get())?;
                self.kernel.set_arg(2, &self.y.get())?;
                self.kernel.set_arg(3, &(self.quads as u32))?;
            }
            Ok(())
        }
    }

    pub struct OclCopy {
        device: Device,
        // Field order: buffers and queue are released before the context.
        bufs: Option<(Buffer<f32>, Buffer<f32>, usize)>,
        chain: Option<HandChain>,
        queue: CommandQueue,
        context: Context,
    }

    impl OclCopy {
        /// OpenCL device `index` in arrayflow's order: every platform's devices, platforms in order.
        pub fn open(index: usize) -> Result<OclCopy, String> {
            let ids: Vec<_> = opencl3::platform::get_platforms()
                .map_err(|e| e.to_string())?
                .iter()
                .flat_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default())
                .collect();
            let id = *ids
                .get(index)
                .ok_or_else(|| format!("no OpenCL device {index}"))?;
            let device = Device::new(id);
            let (context, queue) = context_and_queue(&device)?;
            Ok(OclCopy {
                device,
                bufs: None,
                chain: None,
                queue,
                context,
            })
        }
    }

    impl super::CopyPeer for OclCopy {
        fn device_name(&self) -> String {
            self.device.name().unwrap_or_default().trim().to_string()
        }
        fn alloc(&mut self, floats: usize) -> Result<(), String> {
            self.bufs = None;
            let mk = || {
                // SAFETY: no host pointer; the buffer is only used by the copies below.
                unsafe {
                    Buffer::<f32>::create(
                        &self.context,
                        CL_MEM_READ_WRITE,
                        floats,
                        std::ptr::null_mut(),
                    )
                }
                .map_err(|e| format!("OpenCL buffer of {floats} f32: {e}"))
            };
            let mut src = mk()?;
            let dst = mk()?;
            // SAFETY: the pattern outlives the call (it is copied at enqueue); in-order queue.
            unsafe {
                self.queue
                    .enqueue_fill_buffer(&mut src, &[1.0f32], 0, floats * 4, &[])
                    .map_err(|e| e.to_string())?;
            }
            self.queue.finish().map_err(|e| e.to_string())?;
            self.bufs = Some((src, dst, floats));
            Ok(())
        }
        fn enqueue(&mut self) {
            let (src, dst, floats) = self.bufs.as_mut().expect("alloc first");
            // SAFETY: both buffers hold `floats` f32 and stay alive until `wait`/`free`.
            unsafe {
                self.queue
                    .enqueue_copy_buffer(src, dst, 0, 0, *floats * 4, &[])
                    .expect("clEnqueueCopyBuffer");
            }
        }
        fn wait(&mut self) {
            self.queue.finish().expect("clFinish");
        }
        fn free(&mut self) {
            let _ = self.queue.finish();
            self.bufs = None;
            self.chain = None;
        }
        fn chain_alloc(
            &mut self,
            a: &[f32],
            b: &[f32],
        ) -> Result<Option<Vec<&'static str>>, String> {
            self.chain = None;
            if !a.len().is_multiple_of(4) {
                return Ok(None);
            }
            // The build options arrayflow's executor uses (correctly rounded sqrt where offered).
            let options = if self.device.single_fp_config().unwrap_or(0)
                & opencl3::device::CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
                != 0
            {
                "-cl-fp32-correctly-rounded-divide-sqrt"
            } else {
                ""
            };
            let program = Program::create_and_build_from_source(&self.context, CHAIN_CL, options)?;
            let kernel = Kernel::create(&program, "chain_k").map_err(|e| e.to_string())?;
            // `GPU_DUMP_DIR`: the driver's binary of the program (PTX on NVIDIA) goes there.
            if let Ok(dir) = std::env::var("GPU_DUMP_DIR")
                && let Ok(bins) = program.get_binaries()
                && let Some(bin) = bins.first()
            {
                let _ = std::fs::write(std::path::Path::new(&dir).join("hand_chain.bin"), bin);
            }
            let mk = |data: Option<&[f32]>| {
                // SAFETY: no host pointer; only the hand-written chain uses the buffer.
                let mut buf = unsafe {
                    Buffer::<f32>::create(
                        &self.context,
                        CL_MEM_READ_WRITE,
                        a.len(),
                        std::ptr::null_mut(),
                    )
                }
                .map_err(|e| e.to_string())?;
                if let Some(d) = data {
                    // SAFETY: a blocking write from a slice that outlives the call.
                    unsafe {
                        self.queue.enqueue_write_buffer(
                            &mut buf,
                            opencl3::types::CL_BLOCKING,
                            0,
                            d,
                            &[],
                        )
                    }
                    .map_err(|e| e.to_string())?;
                }
                Ok::<_, String>(buf)
            };
            let (a_buf, b_buf, y) = (mk(Some(a))?, mk(Some(b))?, mk(None)?);
            let h = HandChain {
                kernel,
                _program: program,
                y,
                a: a_buf,
                b: b_buf,
                quads: a.len() / 4,
            };
            h.set_args()?;
            self.chain = Some(h);
            Ok(Some(vec![
                "an event per launch, clFlush each",
                "no event, clFlush each",
                "no event, a marker with an event after each, clFlush each",
                "arguments set before each launch, no event, a marker after each (as arrayflow \
                 with an idle device)",
                "arguments set before each launch, no event, a marker after every 8th (as \
                 arrayflow with a busy device)",
            ]))
        }
        fn chain_enqueue(&mut self, k: usize, mode: usize) {
            let h = self.chain.as_ref().expect("chain_alloc first");
            let (global, local) = (h.quads.next_multiple_of(256), 256usize);
            let cl = cl3::load_library().as_ref().expect("libOpenCL is loaded");
            for i in 0..k {
                if mode >= 3 {
                    h.set_args().expect("clSetKernelArg");
                }
                if mode == 0 {
                    // SAFETY: the kernel's arguments are set; its buffers outlive the launch.
                    let ev = unsafe {
                        self.queue.enqueue_nd_range_kernel(
                            h.kernel.get(),
                            1,
                            std::ptr::null(),
                            &global,
                            &local,
                            &[],
                        )
                    }
                    .expect("clEnqueueNDRangeKernel");
                    drop(ev);
                } else {
                    // The same launch asking for no event (opencl3 always asks for one).
                    let status = cl.clEnqueueNDRangeKernel(
                        self.queue.get(),
                        h.kernel.get(),
                        1,
                        std::ptr::null(),
                        &global,
                        &local,
                        0,
                        std::ptr::null(),
                        std::ptr::null_mut(),
                    );
                    assert_eq!(status, Some(0), "clEnqueueNDRangeKernel without an event");
                    if mode == 2 || mode == 3 || (mode == 4 && (i % 8 == 7 || i + 1 == k)) {
                        // SAFETY: a marker with no wait list.
                        let marker = unsafe { self.queue.enqueue_marker_with_wait_list(&[]) };
                        drop(marker.expect("clEnqueueMarkerWithWaitList"));
                    }
                }
                self.queue.flush().expect("clFlush");
            }
        }
        fn chain_read(&mut self) -> Vec<f32> {
            let h = self.chain.as_ref().expect("chain_alloc first");
            let mut y = vec![0f32; h.quads * 4];
            // SAFETY: a blocking read into a vector of the buffer's length.
            unsafe {
                self.queue
                    .enqueue_read_buffer(&h.y, opencl3::types::CL_BLOCKING, 0, &mut y, &[])
            }
            .expect("clEnqueueReadBuffer");
            y
        }
        fn launch_floor(&mut self) -> Option<(Duration, Option<Duration>)> {
            let t = floor_in(&self.context, &self.queue, false)?;
            // `FLOOR_MODES=other,own,waiter`: the same loop with other thread arrangements (see
            // `floor_modes`), printed after the main figure.
            for mode in std::env::var("FLOOR_MODES").unwrap_or_default().split(',') {
                let (ctx, queue, dev) = (&self.context, &self.queue, &self.device);
                let t = match mode.trim() {
                    "other" => std::thread::scope(|s| {
                        s.spawn(|| floor_in(ctx, queue, false)).join().ok()?
                    }),
                    "own" => std::thread::scope(|s| {
                        s.spawn(|| {
                            let (ctx, queue) = context_and_queue(dev).ok()?;
                            floor_in(&ctx, &queue, false)
                        })
                        .join()
                        .ok()?
                    }),
                    "waiter" => floor_in(ctx, queue, true),
                    _ => continue,
                };
                if let Some(t) = t {
                    println!("launch floor, {mode}: {:.1} µs", super::us(t));
                }
            }
            Some((t, None))
        }
    }

    /// A context on `device` and an in-order queue in it.
    fn context_and_queue(device: &Device) -> Result<(Context, CommandQueue), String> {
        let context = Context::from_device(device).map_err(|e| e.to_string())?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, 0).map_err(|e| e.to_string())?;
        Ok((context, queue))
    }

    /// The OpenCL launch floor on the calling thread: program, kernel and buffers made here in
    /// `context`, launches on `queue`. With `waiter`, another thread waits for each launch's
    /// event (polling its status, as arrayflow's completion thread does) and tells this one.
    /// Arrangements (`FLOOR_MODES`): `other`, the context made on the main thread and everything
    /// else on a new one; `own`, everything on a new thread; `waiter`, the main thread with a
    /// waiting thread.
    fn floor_in(context: &Context, queue: &CommandQueue, waiter: bool) -> Option<Duration> {
        let program = Program::create_and_build_from_source(context, FLOOR_CL, "")
            .map_err(|e| println!("launch floor: {e}"))
            .ok()?;
        let kernel = Kernel::create(&program, "floor_k").ok()?;
        let mk = || {
            // SAFETY: no host pointer; only the floor kernel uses the buffer.
            unsafe {
                Buffer::<f32>::create(context, CL_MEM_READ_WRITE, FLOOR_N, std::ptr::null_mut())
            }
            .ok()
        };
        let (a, b, y) = (mk()?, mk()?, mk()?);
        let n = FLOOR_N as u64;
        let (ev_tx, ev_rx) = crossbeam_channel::unbounded::<opencl3::event::Event>();
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<()>();
        let last = std::cell::RefCell::new(None);
        std::thread::scope(|s| {
            if waiter {
                s.spawn(move || {
                    while let Ok(ev) = ev_rx.recv() {
                        while ev.command_execution_status().map_or(-1, |st| st.0)
                            > opencl3::event::CL_COMPLETE
                        {
                            std::hint::spin_loop();
                        }
                        ev.wait().expect("clWaitForEvents");
                        drop(ev);
                        let _ = done_tx.send(());
                    }
                });
            }
            let t = super::floor_loop(
                || {
                    let t0 = Instant::now();
                    // SAFETY: the arguments match `floor_k`'s signature; the buffers outlive
                    // the loop (each launch is waited for).
                    unsafe {
                        kernel.set_arg(0, &a.get()).expect("clSetKernelArg");
                        kernel.set_arg(1, &b.get()).expect("clSetKernelArg");
                        kernel.set_arg(2, &y.get()).expect("clSetKernelArg");
                        kernel.set_arg(3, &n).expect("clSetKernelArg");
                        let ev = queue
                            .enqueue_nd_range_kernel(
                                kernel.get(),
                                1,
                                std::ptr::null(),
                                &FLOOR_N,
                                &256,
                                &[],
                            )
                            .expect("clEnqueueNDRangeKernel");
                        queue.flush().expect("clFlush");
                        *last.borrow_mut() = Some(ev);
                    }
                    t0.elapsed()
                },
                || {
                    if let Some(ev) = last.borrow_mut().take() {
                        if waiter {
                            ev_tx.send(ev).expect("waiter");
                            done_rx.recv().expect("waiter");
                        } else {
                            ev.wait().expect("clWaitForEvents");
                        }
                    }
                },
            );
            drop(ev_tx);
            Some(t)
        })
    }
}

mod wgpu_peer {
    use std::time::{Duration, Instant};
    /// The copy as a compute kernel: a grid-stride loop over `vec4<f32>`.
    const COPY_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    let n = arrayLength(&dst);
    for (var i = gid.x; i < n; i = i + stride) {
        dst[i] = src[i];
    }
}
"#;

    /// The launch floor's kernel: three buffers, as arrayflow's chain kernel binds.
    const FLOOR_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i < arrayLength(&y)) {
        y[i] = a[i] * b[i] + a[i];
    }
}
"#;
    const FLOOR_N: u64 = 1024;

    /// Other shapes of the hand-written WGSL chain, each timed 64 dispatches per submission as a
    /// diagnostic (is the Vulkan kernel's shape what keeps it from the CUDA and OpenCL rates?):
    /// threads per work-group, quads per thread (grid-stride; 0: one f32 per thread), mode name.
    const SHAPES: [(u32, u32, &str); 5] = [
        (64, 1, "diagnostic: 64 per submission, work-groups of 64"),
        (128, 1, "diagnostic: 64 per submission, work-groups of 128"),
        (256, 2, "diagnostic: 64 per submission, 2 quads per thread"),
        (256, 4, "diagnostic: 64 per submission, 4 quads per thread"),
        (256, 0, "diagnostic: 64 per submission, one f32 per thread"),
    ];

    /// The chain written by hand in WGSL, over a two-dimensional grid of work-groups (a dimension
    /// holds at most 65535): `wg` threads per work-group, `quads` quads per thread a grid apart
    /// (0: one f32 per thread). `chain_wgsl(256, 1)` is the hand-written chain proper.
    fn chain_wgsl(wg: u32, quads: u32) -> String {
        let (ty, one) = match quads {
            0 => ("f32", "1.0"),
            _ => ("vec4<f32>", "vec4<f32>(1.0)"),
        };
        let body = format!(
            "let x = a[j];\n        let z = b[j];\n        \
             y[j] = abs(sqrt(x * z + {one}) * x - z) * 0.5 + x;"
        );
        // One quad per thread: no loop.
        let work = if quads <= 1 {
            format!("let j = i;\n    if (j < arrayLength(&y)) {{\n        {body}\n    }}")
        } else {
            format!(
                "let t = groups.x * groups.y * {wg}u;\n    \
                 for (var q = 0u; q < {quads}u; q++) {{\n        let j = i + q * t;\n        \
                 if (j < arrayLength(&y)) {{\n            {}\n        }}\n    }}",
                body.replace("\n        ", "\n            ")
            )
        };
        format!(
            r#"
@group(0) @binding(0) var<storage, read> a: array<{ty}>;
@group(0) @binding(1) var<storage, read> b: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> y: array<{ty}>;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let i = g.y * groups.x * {wg}u + g.x;
    {work}
}}
"#
        )
    }

    /// A pipeline of the hand-written chain, its bind group and its grid.
    struct ChainShape {
        pipeline: wgpu::ComputePipeline,
        group: wgpu::BindGroup,
        grid: (u32, u32),
    }

    /// The hand-written chain's pipeline, buffers and grid.
    struct HandChain {
        pipeline: wgpu::ComputePipeline,
        group: wgpu::BindGroup,
        /// [`SHAPES`], in order.
        shapes: Vec<ChainShape>,
        y: wgpu::Buffer,
        _inputs: [wgpu::Buffer; 2],
        /// The same inputs with [`ROTATE`] outputs in turn (`y` first): a diagnostic launch mode
        /// in which consecutive dispatches write different buffers, so wgpu needs no barrier
        /// between most of them.
        rotating: Vec<wgpu::BindGroup>,
        _outputs: Vec<wgpu::Buffer>,
        grid: (u32, u32),
    }

    /// Outputs the hand-written chain's diagnostic launch mode writes in turn.
    const ROTATE: usize = 4;

    pub struct WgpuCopy {
        name: String,
        device: wgpu::Device,
        queue: wgpu::Queue,
        limits: wgpu::Limits,
        pipeline: wgpu::ComputePipeline,
        bufs: Option<Bufs>,
        chain: Option<HandChain>,
        last: Option<wgpu::SubmissionIndex>,
    }

    /// A compute pipeline from WGSL created without naga's bounds checks, as arrayflow creates
    /// its own.
    ///
    /// # Safety
    /// The kernel indexes only below each array's length.
    unsafe fn trusted_pipeline(
        device: &wgpu::Device,
        label: &str,
        wgsl: &str,
    ) -> wgpu::ComputePipeline {
        // SAFETY: the caller's contract.
        let module = unsafe {
            device.create_shader_module_trusted(
                wgpu::ShaderModuleDescriptor {
                    label: Some(label),
                    source: wgpu::ShaderSource::Wgsl(wgsl.into()),
                },
                wgpu::ShaderRuntimeChecks::unchecked(),
            )
        };
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        })
    }

    /// `k` dispatches of `pipeline` with `group` over `grid` work-groups, one compute pass each
    /// (as arrayflow's executor records its dispatches), in one submission.
    /// Records `k` dispatches of `pipeline`, one compute pass each, binding `groups` in turn.
    fn submit_dispatches(
        (device, queue): (&wgpu::Device, &wgpu::Queue),
        (pipeline, groups): (&wgpu::ComputePipeline, &[&wgpu::BindGroup]),
        grid: (u32, u32),
        k: usize,
    ) -> wgpu::SubmissionIndex {
        let mut enc =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for i in 0..k {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: None,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, groups[i % groups.len()], &[]);
            pass.dispatch_workgroups(grid.0, grid.1, 1);
        }
        queue.submit([enc.finish()])
    }

    /// A bind group of `bufs` in binding order.
    fn bind_all(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        bufs: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout,
            entries: &entries,
        })
    }

    struct Bufs {
        src: wgpu::Buffer,
        dst: wgpu::Buffer,
        size: u64,
        /// Bind group and workgroup count of the kernel copy (`None` where the buffers are too
        /// large to bind or not a whole number of vec4).
        kernel: Option<(wgpu::BindGroup, u32)>,
    }

    impl WgpuCopy {
        /// wgpu adapter `index` in arrayflow's order (Vulkan adapters as the instance lists them).
        pub fn open(index: usize) -> Result<WgpuCopy, String> {
            let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
                backends: wgpu::Backends::VULKAN,
                ..wgpu::InstanceDescriptor::new_without_display_handle()
            });
            let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
            let adapter = adapters
                .into_iter()
                .nth(index)
                .ok_or_else(|| format!("no wgpu adapter {index}"))?;
            let limits = adapter.limits();
            let (device, queue) =
                pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                    label: Some("gpu bench copy peer"),
                    required_limits: limits.clone(),
                    ..Default::default()
                }))
                .map_err(|e| e.to_string())?;
            // SAFETY: the copy kernel indexes only below `arrayLength` (its loop's bound).
            let pipeline = unsafe { trusted_pipeline(&device, "copy kernel", COPY_WGSL) };
            Ok(WgpuCopy {
                name: adapter.get_info().name,
                device,
                queue,
                limits,
                pipeline,
                bufs: None,
                chain: None,
                last: None,
            })
        }
    }

    impl super::CopyPeer for WgpuCopy {
        fn device_name(&self) -> String {
            self.name.clone()
        }
        fn alloc(&mut self, floats: usize) -> Result<(), String> {
            self.bufs = None;
            let size = floats as u64 * 4;
            if size > self.limits.max_buffer_size {
                return Err(format!(
                    "{size} bytes is over the adapter's max_buffer_size {}",
                    self.limits.max_buffer_size
                ));
            }
            let bindable =
                size <= self.limits.max_storage_buffer_binding_size && size.is_multiple_of(16);
            let mut usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            if bindable {
                usage |= wgpu::BufferUsages::STORAGE;
            }
            let mk = |label| {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            };
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let (src, dst) = (mk("copy src"), mk("copy dst"));
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(e.to_string());
            }
            let kernel = bindable.then(|| {
                let layout = self.pipeline.get_bind_group_layout(0);
                let group = bind_all(&self.device, &layout, &[&src, &dst]);
                let vec4s = size / 16;
                let groups = vec4s
                    .div_ceil(256)
                    .min(self.limits.max_compute_workgroups_per_dimension as u64)
                    .max(1) as u32;
                (group, groups)
            });
            // Fill the source (and let wgpu do its zero-initialisation before the timing).
            self.queue
                .write_buffer(&src, 0, bytemuck::cast_slice(&vec![1.0f32; floats]));
            self.bufs = Some(Bufs {
                src,
                dst,
                size,
                kernel,
            });
            self.enqueue();
            self.wait();
            Ok(())
        }
        fn enqueue(&mut self) {
            let b = self.bufs.as_ref().expect("alloc first");
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(&b.src, 0, &b.dst, 0, Some(b.size));
            self.last = Some(self.queue.submit([enc.finish()]));
        }
        fn enqueue_kernel(&mut self) -> bool {
            self.enqueue_kernels(1)
        }
        fn enqueue_kernels(&mut self, k: usize) -> bool {
            let Some(b) = self.bufs.as_ref() else {
                return false;
            };
            let Some((group, groups)) = &b.kernel else {
                return false;
            };
            self.last = Some(submit_dispatches(
                (&self.device, &self.queue),
                (&self.pipeline, &[group]),
                (*groups, 1),
                k,
            ));
            true
        }
        fn wait(&mut self) {
            self.device
                .poll(wgpu::PollType::Wait {
                    submission_index: self.last.take(),
                    timeout: None,
                })
                .expect("wgpu poll");
        }
        fn free(&mut self) {
            self.wait();
            self.bufs = None;
            self.chain = None;
        }
        fn chain_alloc(
            &mut self,
            a: &[f32],
            b: &[f32],
        ) -> Result<Option<Vec<&'static str>>, String> {
            self.chain = None;
            let size = a.len() as u64 * 4;
            if !a.len().is_multiple_of(4) || size > self.limits.max_storage_buffer_binding_size {
                return Ok(None);
            }
            // SAFETY: the chain kernel indexes only below `arrayLength(&y)`, the length of all
            // three arrays.
            let pipeline = unsafe {
                trusted_pipeline(&self.device, "hand-written chain", &chain_wgsl(256, 1))
            };
            let mk = |data: Option<&[f32]>| {
                let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("hand-written chain"),
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                if let Some(d) = data {
                    self.queue.write_buffer(&buf, 0, bytemuck::cast_slice(d));
                }
                buf
            };
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let (a_buf, b_buf, y) = (mk(Some(a)), mk(Some(b)), mk(None));
            let outputs: Vec<wgpu::Buffer> = (1..ROTATE).map(|_| mk(None)).collect();
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(e.to_string());
            }
            let layout = pipeline.get_bind_group_layout(0);
            let group = bind_all(&self.device, &layout, &[&a_buf, &b_buf, &y]);
            let rotating = std::iter::once(&y)
                .chain(&outputs)
                .map(|o| bind_all(&self.device, &layout, &[&a_buf, &b_buf, o]))
                .collect();
            let max_dim = self.limits.max_compute_workgroups_per_dimension as u64;
            let grid_of = |units: u64, per_group: u64| {
                let groups = units.div_ceil(per_group);
                let rows = groups.div_ceil(max_dim);
                (groups.div_ceil(rows) as u32, rows as u32)
            };
            let grid = grid_of(a.len() as u64 / 4, 256);
            let shapes = SHAPES
                .iter()
                .map(|&(wg, quads, _)| {
                    // SAFETY: every shape indexes only below `arrayLength(&y)`, the length of all
                    // three arrays in its element type.
                    let pipeline = unsafe {
                        trusted_pipeline(
                            &self.device,
                            "hand-written chain shape",
                            &chain_wgsl(wg, quads),
                        )
                    };
                    let layout = pipeline.get_bind_group_layout(0);
                    let group = bind_all(&self.device, &layout, &[&a_buf, &b_buf, &y]);
                    let grid = match quads {
                        0 => grid_of(a.len() as u64, wg as u64),
                        q => grid_of(a.len() as u64 / 4, (wg * q) as u64),
                    };
                    ChainShape {
                        pipeline,
                        group,
                        grid,
                    }
                })
                .collect();
            self.chain = Some(HandChain {
                pipeline,
                group,
                shapes,
                y,
                _inputs: [a_buf, b_buf],
                rotating,
                _outputs: outputs,
                grid,
            });
            let mut modes = vec![
                "one submission each (as arrayflow submits each flush)",
                "64 per submission",
                "diagnostic: 64 per submission, 4 outputs in turn",
            ];
            modes.extend(SHAPES.iter().map(|&(_, _, name)| name));
            // Each shape is checked against the host before it is timed.
            for (m, &(_, _, name)) in SHAPES.iter().enumerate() {
                let h = self.chain.as_ref().expect("set above");
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                enc.clear_buffer(&h.y, 0, None);
                self.queue.submit([enc.finish()]);
                self.chain_enqueue(1, 3 + m);
                let err = super::max_rel_err(&self.chain_read(), a, b);
                if err.is_nan() || err > 1e-5 {
                    return Err(format!("{name}: max rel. diff vs host {err:e}"));
                }
            }
            Ok(Some(modes))
        }
        fn chain_enqueue(&mut self, k: usize, mode: usize) {
            let h = self.chain.as_ref().expect("chain_alloc first");
            let per = if mode == 0 { 1 } else { super::BATCH };
            let (pipeline, groups, grid): (_, Vec<&wgpu::BindGroup>, _) = match mode {
                0 | 1 => (&h.pipeline, vec![&h.group], h.grid),
                2 => (&h.pipeline, h.rotating.iter().collect(), h.grid),
                m => {
                    let sh = &h.shapes[m - 3];
                    (&sh.pipeline, vec![&sh.group], sh.grid)
                }
            };
            let mut left = k;
            while left > 0 {
                let m = per.min(left);
                self.last = Some(submit_dispatches(
                    (&self.device, &self.queue),
                    (pipeline, &groups),
                    grid,
                    m,
                ));
                left -= m;
            }
        }
        fn chain_read(&mut self) -> Vec<f32> {
            let h = self.chain.as_ref().expect("chain_alloc first");
            let size = h.y.size();
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("hand-written chain read-back"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(&h.y, 0, &staging, 0, Some(size));
            self.queue.submit([enc.finish()]);
            staging
                .slice(..)
                .map_async(wgpu::MapMode::Read, |r| r.expect("map_async"));
            self.device
                .poll(wgpu::PollType::Wait {
                    submission_index: None,
                    timeout: None,
                })
                .expect("wgpu poll");
            let y = bytemuck::cast_slice::<u8, f32>(
                &staging.get_mapped_range(..).expect("mapped range"),
            )
            .to_vec();
            staging.unmap();
            y
        }
        fn launch_floor(&mut self) -> Option<(Duration, Option<Duration>)> {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("launch floor"),
                    source: wgpu::ShaderSource::Wgsl(FLOOR_WGSL.into()),
                });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("launch floor"),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
            let layout = pipeline.get_bind_group_layout(0);
            let bufs: Vec<wgpu::Buffer> = (0..3)
                .map(|_| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: None,
                        size: FLOOR_N * 4,
                        usage: wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    })
                })
                .collect();
            let group = || bind_all(&self.device, &layout, &bufs.iter().collect::<Vec<_>>());
            let made_once = group();
            let last = std::cell::RefCell::new(None);
            let launch = |fresh: bool| {
                let t0 = Instant::now();
                let fresh_group = fresh.then(group);
                let g = fresh_group.as_ref().unwrap_or(&made_once);
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes: None,
                    });
                    pass.set_pipeline(&pipeline);
                    pass.set_bind_group(0, g, &[]);
                    pass.dispatch_workgroups((FLOOR_N / 256) as u32, 1, 1);
                }
                *last.borrow_mut() = Some(self.queue.submit([enc.finish()]));
                t0.elapsed()
            };
            let wait = || {
                self.device
                    .poll(wgpu::PollType::Wait {
                        submission_index: last.borrow_mut().take(),
                        timeout: None,
                    })
                    .expect("wgpu poll");
            };
            let once = super::floor_loop(|| launch(false), wait);
            let fresh = super::floor_loop(|| launch(true), wait);
            Some((once, Some(fresh)))
        }
    }
}

/// Opens the copy peer for the executor in use (`None` for the CPU, with the reason printed).
fn open_peer(sel: &Selected) -> Option<Box<dyn CopyPeer>> {
    let index = sel.index?;
    let peer: Result<Box<dyn CopyPeer>, String> = match sel.backend {
        Backend::OpenCl => ocl_peer::OclCopy::open(index).map(|p| Box::new(p) as _),
        Backend::Wgpu => wgpu_peer::WgpuCopy::open(index).map(|p| Box::new(p) as _),
        Backend::Cpu => return None,
    };
    match peer {
        Ok(p) => {
            if p.device_name() != sel.name {
                println!(
                    "warning: the copy peer's device is `{}`, arrayflow's is `{}`",
                    p.device_name(),
                    sel.name
                );
            }
            Some(p)
        }
        Err(e) => {
            println!("copy peer: cannot open {}:{index}: {e}", sel.backend);
            None
        }
    }
}

/// One size's results.
struct Row {
    n: usize,
    chain: Timing,
    /// Iterations back to back, one wait at the end.
    chain_stream: Timing,
    copy: Option<CopyTiming>,
    max_err: f32,
}

struct CopyTiming {
    /// K copies, each enqueued and waited for (the chain loop's structure).
    sync: Timing,
    /// K copies enqueued back to back, one wait; per copy.
    stream: Timing,
    /// The copy as a compute kernel, timed like `sync` (wgpu only).
    kernel: Option<Timing>,
    /// Kernel copies back to back, one submission each, one wait; per copy.
    kernel_stream: Option<Timing>,
    /// Kernel copies back to back, [`BATCH`] to a submission, one wait; per copy (the device's
    /// pace with a fraction of the submissions).
    kernel_batched: Option<Timing>,
    /// The hand-written chain kernel on the same API.
    hand: Option<Hand>,
}

/// The chain as a kernel written by hand on the peer's API ([`CopyPeer::chain_alloc`]):
/// launches back to back in each of its launch modes, one wait; per launch.
struct Hand {
    modes: Vec<&'static str>,
    stream: Vec<Timing>,
    max_err: f32,
}

impl CopyTiming {
    /// The reference copy time: the faster of the API copy and the kernel copy (both waited for).
    fn reference(&self) -> Duration {
        self.kernel
            .as_ref()
            .map_or(self.sync.per_iter, |k| k.per_iter.min(self.sync.per_iter))
    }

    /// The same back to back: the faster of the API copies and the kernel copies with one
    /// submission each, as arrayflow submits each flush.
    fn stream_reference(&self) -> Duration {
        self.kernel_stream
            .as_ref()
            .map_or(self.stream.per_iter, |k| {
                k.per_iter.min(self.stream.per_iter)
            })
    }
}

/// Largest relative difference between the device result and the host reference.
fn max_rel_err(out: &[f32], a: &[f32], b: &[f32]) -> f32 {
    out.par_iter()
        .zip(a.par_iter().zip(b.par_iter()))
        .map(|(&y, (&a, &b))| {
            let r = chain_scalar(a, b);
            ((y - r) / r).abs()
        })
        .reduce(|| 0.0f32, f32::max)
}

/// [`time_loop`] over iterations that each compute `make()` on the device and wait for it
/// (`eval()`: no copy to the host).
fn sync_loop<T: arrayflow::Element>(
    target: Duration,
    max_k: usize,
    make: impl Fn() -> Array<T>,
) -> Timing {
    time_loop(target, max_k, |k| {
        for _ in 0..k {
            let y = make();
            y.eval().expect("eval");
            black_box(&y);
        }
    })
}

/// [`time_loop`] over iterations enqueued back to back (`hint_read()` starts each one), only the
/// last waited for.
fn stream_loop<T: arrayflow::Element>(target: Duration, make: impl Fn() -> Array<T>) -> Timing {
    time_loop(target, 100_000, |k| {
        let mut last = None;
        for _ in 0..k {
            let y = make();
            y.hint_read();
            last = Some(y);
        }
        last.expect("k >= 1").eval().expect("eval");
    })
}

fn bench_chain(n: usize, target: Duration) -> Row {
    let av = random_vec(n, 1, 0.5, 1.5);
    let bv = random_vec(n, 2, 0.5, 1.5);
    let a = Array::from_vec(av.clone(), &[n]);
    let b = Array::from_vec(bv.clone(), &[n]);
    // Uploads a and b, compiles the kernel, and checks the result.
    let out = chain_af(&a, &b).to_vec().expect("chain result");
    let max_err = max_rel_err(&out, &av, &bv);
    drop((out, av, bv));

    let chain = sync_loop(target, 100_000, || chain_af(black_box(&a), black_box(&b)));
    // The same iterations without a wait between them: the device's queue stays full, as in a
    // program that reads results later.
    let chain_stream = stream_loop(target, || chain_af(black_box(&a), black_box(&b)));
    drop((a, b));
    Runtime::execute();
    Row {
        n,
        chain,
        chain_stream,
        copy: None,
        max_err,
    }
}

/// Kernel copies per submission in the batched copy loop.
const BATCH: usize = 64;

/// The copy peer on 1.5 n f32 (6 n bytes read + 6 n written = 12 n, the chain's bytes).
fn bench_copy(n: usize, target: Duration, p: &mut dyn CopyPeer) -> Option<CopyTiming> {
    let m = n * 3 / 2;
    if let Err(e) = p.alloc(m) {
        println!("copy peer at {}: {e}; skipped", label(n));
        return None;
    }
    let sync = time_loop(target, 100_000, |k| {
        for _ in 0..k {
            p.enqueue();
            p.wait();
        }
    });
    let stream = time_loop(target, 100_000, |k| {
        for _ in 0..k {
            p.enqueue();
        }
        p.wait();
    });
    let kernel = p.enqueue_kernel().then(|| {
        p.wait();
        time_loop(target, 100_000, |k| {
            for _ in 0..k {
                p.enqueue_kernel();
                p.wait();
            }
        })
    });
    let kernel_stream = kernel.is_some().then(|| {
        time_loop(target, 100_000, |k| {
            for _ in 0..k {
                p.enqueue_kernel();
            }
            p.wait();
        })
    });
    let kernel_batched = kernel.is_some().then(|| {
        time_loop(target, 100_000, |k| {
            for start in (0..k).step_by(BATCH) {
                p.enqueue_kernels(BATCH.min(k - start));
            }
            p.wait();
        })
    });
    p.free();
    Some(CopyTiming {
        sync,
        stream,
        kernel,
        kernel_stream,
        kernel_batched,
        hand: bench_hand(n, target, p),
    })
}

/// The peer's hand-written chain kernel on the chain's inputs: checked against the host, then
/// timed back to back in each launch mode.
fn bench_hand(n: usize, target: Duration, p: &mut dyn CopyPeer) -> Option<Hand> {
    let av = random_vec(n, 1, 0.5, 1.5);
    let bv = random_vec(n, 2, 0.5, 1.5);
    let modes = match p.chain_alloc(&av, &bv) {
        Ok(Some(m)) => m,
        Ok(None) => return None,
        Err(e) => {
            println!("hand-written chain at {}: {e}; skipped", label(n));
            return None;
        }
    };
    p.chain_enqueue(1, 0);
    let max_err = max_rel_err(&p.chain_read(), &av, &bv);
    drop((av, bv));
    let stream = (0..modes.len())
        .map(|mode| {
            time_loop(target, 100_000, |k| {
                p.chain_enqueue(k, mode);
                p.wait();
            })
        })
        .collect();
    p.free();
    Some(Hand {
        modes,
        stream,
        max_err,
    })
}

/// `a.sum()` on `n` elements, evaluated on the device: each sum waited for (sync), and sums
/// enqueued back to back with one wait (stream); with the relative error of the result against
/// an f64 sum on the host.
fn bench_sum(n: usize, target: Duration) -> (Timing, Timing, f64) {
    let av = random_vec(n, 1, 0.5, 1.5);
    let exact: f64 = av.par_iter().map(|&x| x as f64).sum();
    let a = Array::from_vec(av, &[n]);
    let got = a.sum().item().expect("sum result") as f64;
    let sync = sync_loop(target, 100_000, || black_box(&a).sum());
    let stream = stream_loop(target, || black_box(&a).sum());
    drop(a);
    Runtime::execute();
    (sync, stream, ((got - exact) / exact).abs())
}

/// `a.sum_axis(axis)` of an `n` x `n` f32 array (column sums for axis 0, row sums for axis 1),
/// evaluated on the device as [`bench_sum`] does: checked first against f64 sums on the host
/// (the largest relative difference), then timed each waited for (sync) and back to back
/// (stream).
fn bench_sum_axis(n: usize, axis: usize, target: Duration) -> (Timing, Timing, f64) {
    let av = random_vec(n * n, 3, 0.5, 1.5);
    let exact: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|o| {
            (0..n)
                .map(|j| av[if axis == 0 { j * n + o } else { o * n + j }] as f64)
                .sum()
        })
        .collect();
    let a = Array::from_vec(av, &[n, n]);
    let got = a.sum_axis(axis).to_vec().expect("sum_axis result");
    let err = got
        .iter()
        .zip(&exact)
        .map(|(&g, &e)| ((g as f64 - e) / e).abs())
        .fold(0.0, f64::max);
    assert!(
        err < 1e-4,
        "sum_axis({axis}) of {n} x {n}: rel. diff {err:e}"
    );
    let sync = sync_loop(target, 100_000, || black_box(&a).sum_axis(axis));
    let stream = stream_loop(target, || black_box(&a).sum_axis(axis));
    drop(a);
    Runtime::execute();
    (sync, stream, err)
}

/// A device counter's nanoseconds per launch, in µs.
fn per_launch_us(s: &Stats, ns: u64) -> f64 {
    ns as f64 / s.device.launches.max(1) as f64 / 1e3
}

/// Host launch latency from the device counters of a timed loop, µs per launch (`None` without
/// launches).
fn launch_us(s: &Stats) -> Option<f64> {
    (s.device.launches > 0).then(|| per_launch_us(s, s.device.launch_ns))
}

fn main() {
    let target = Duration::from_secs_f64(
        std::env::var("GPU_LOOP_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.2),
    );
    let sizes: Vec<usize> = match std::env::var("GPU_SIZES") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .map(|p| {
                let p: u32 = p
                    .trim()
                    .parse()
                    .expect("GPU_SIZES: powers of two, e.g. 20,24");
                1usize << p
            })
            .collect(),
        _ => vec![1 << 20, 1 << 24, 1 << 27],
    };

    common::init_log();

    let sel = selected();
    let backend = sel.backend.to_string();
    println!(
        "arrayflow GPU benchmark: y = |sqrt(a*b + 1)*a - b| * 0.5 + a  (8 f32 ops, 2 inputs, 1 output)"
    );
    println!(
        "ARRAYFLOW_DEVICE={} | executor: {}",
        std::env::var("ARRAYFLOW_DEVICE").unwrap_or_else(|_| "(unset: auto)".into()),
        Runtime::executor()
    );
    println!("devices found (ARRAYFLOW_DEVICE=backend:index picks one):");
    for d in Runtime::devices() {
        println!("  {d}");
    }
    if let Some(d) = sel.info {
        println!("device: {d}");
        if d.kind == DeviceKind::Cpu {
            let gpu = Runtime::devices()
                .iter()
                .find(|g| g.backend == d.backend && g.kind != DeviceKind::Cpu);
            println!(
                "WARNING: the {} device measured is a CPU{}",
                d.backend,
                gpu.map(|g| format!(
                    "; for the GPU run with ARRAYFLOW_DEVICE={}:{}",
                    g.backend, g.index
                ))
                .unwrap_or_default()
            );
        }
    }
    if let Ok(want) = std::env::var("ARRAYFLOW_DEVICE") {
        let want = want
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if want != "auto" && !want.is_empty() && want != backend {
            println!(
                "WARNING: ARRAYFLOW_DEVICE asks for {want} but the executor is {backend}: \
                 the device was not found or failed to start"
            );
        }
    }
    println!("arrayflow config: {:?}", Runtime::config());
    println!(
        "each cell: K iterations per loop (~{:.2} s), {REPEATS} loops, median per iteration; \
         chain bytes = 12 n, copy = 1.5 n f32 (12 n bytes), sum bytes = 4 n",
        target.as_secs_f64()
    );
    println!();

    let mut rows = Vec::new();
    for &n in &sizes {
        let r = bench_chain(n, target);
        let s = &r.chain.stats;
        let it = r.chain.timed_iters as f64;
        println!(
            "{:>5}: chain {} (K {}, loops {}..{}), max rel. diff vs host {:.1e}; per iteration: \
             device tasks {:.2}, kernels {:.2}, fallbacks {:.2}, bytes to/from device {:.0}/{:.0}, \
             trace hits {:.2}, kernels launched {:.2}, buffers allocated/reused {:.2}/{:.2}, \
             flush to scheduler/executor/launch/done {:.1}/{:.1}/{:.1}/{:.1} µs",
            label(n),
            fmt_time(r.chain.per_iter),
            r.chain.k,
            fmt_time(r.chain.min),
            fmt_time(r.chain.max),
            r.max_err,
            s.device.tasks as f64 / it,
            s.device.kernels as f64 / it,
            s.device.fallbacks as f64 / it,
            s.device.bytes_to_device as f64 / it,
            s.device.bytes_from_device as f64 / it,
            s.trace.hits as f64 / it,
            s.kernels_launched as f64 / it,
            s.buffers_allocated as f64 / it,
            s.buffers_reused as f64 / it,
            per_launch_us(s, s.device.scheduled_ns),
            per_launch_us(s, s.device.received_ns),
            per_launch_us(s, s.device.launch_ns),
            per_launch_us(s, s.device.done_ns),
        );
        let ss = &r.chain_stream.stats;
        let it = r.chain_stream.timed_iters as f64;
        println!(
            "       stream {} per iteration (K {}); per iteration: device submissions {:.2}, \
             buffers allocated/reused {:.2}/{:.2}, alloc failures {:.2}, swapped out {:.2}, \
             fallbacks {:.2}",
            fmt_time(r.chain_stream.per_iter),
            r.chain_stream.k,
            ss.device.submissions as f64 / it,
            ss.buffers_allocated as f64 / it,
            ss.buffers_reused as f64 / it,
            ss.device.alloc_failures as f64 / it,
            ss.device.swapped_out as f64 / it,
            ss.device.fallbacks as f64 / it,
        );
        rows.push(r);
    }

    let n_sum = *sizes.iter().max().expect("at least one size");
    let (sum, sum_stream, sum_err) = bench_sum(n_sum, target);
    println!(
        "sum {}: {} (K {}, loops {}..{}), stream {} per sum (K {}), rel. diff vs f64 host sum \
         {:.1e}, device kernels per sum {:.2}, flush to scheduler/executor/launch/done \
         {:.1}/{:.1}/{:.1}/{:.1} µs",
        label(n_sum),
        fmt_time(sum.per_iter),
        sum.k,
        fmt_time(sum.min),
        fmt_time(sum.max),
        fmt_time(sum_stream.per_iter),
        sum_stream.k,
        sum_err,
        sum.stats.device.kernels as f64 / sum.timed_iters as f64,
        per_launch_us(&sum.stats, sum.stats.device.scheduled_ns),
        per_launch_us(&sum.stats, sum.stats.device.received_ns),
        per_launch_us(&sum.stats, sum.stats.device.launch_ns),
        per_launch_us(&sum.stats, sum.stats.device.done_ns),
    );

    // Axis sums of an N x N array (GPU_AXIS_N, default 8192; 0 skips them).
    let n_axis: usize = std::env::var("GPU_AXIS_N")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(8192);
    let axis_sums: Vec<(usize, Timing, Timing, f64)> = if n_axis == 0 {
        Vec::new()
    } else {
        [0, 1]
            .into_iter()
            .map(|axis| {
                let (sync, stream, err) = bench_sum_axis(n_axis, axis, target);
                println!(
                    "sum_axis({axis}) {n_axis}x{n_axis}: {} (K {}, loops {}..{}), stream {} (K {}), \
                     rel. diff vs f64 host sums {err:.1e}, device kernels per sum {:.2}",
                    fmt_time(sync.per_iter),
                    sync.k,
                    fmt_time(sync.min),
                    fmt_time(sync.max),
                    fmt_time(stream.per_iter),
                    stream.k,
                    sync.stats.device.kernels as f64 / sync.timed_iters as f64,
                );
                (axis, sync, stream, err)
            })
            .collect()
    };

    // Launch latency: a 2^10 chain (the kernel is negligible), trace-cache hits.
    let n_small = 1 << 10;
    let small = {
        let a = Array::from_vec(random_vec(n_small, 4, 0.5, 1.5), &[n_small]);
        let b = Array::from_vec(random_vec(n_small, 5, 0.5, 1.5), &[n_small]);
        sync_loop(target, 1_000_000, || chain_af(black_box(&a), black_box(&b)))
    };
    let small_hits = small.stats.trace.hits as f64 / small.timed_iters as f64;
    let latency = launch_us(&small.stats);
    println!(
        "launch {}: {} per iteration (record + flush + kernel + wait), device launches {} over {} \
         timed iterations, trace hits per iteration {:.2}",
        label(n_small),
        fmt_time(small.per_iter),
        small.stats.device.launches,
        small.timed_iters,
        small_hits,
    );

    // The copy peer runs after every arrayflow figure, on a device context of its own, so its
    // work cannot touch them. `GPU_PEER=0` skips it.
    let mut peer = if sel.backend == Backend::Cpu {
        println!("copy peer: skipped (CPU executor)");
        None
    } else if std::env::var("GPU_PEER").is_ok_and(|v| v.trim() == "0") {
        println!("copy peer: skipped (GPU_PEER=0)");
        None
    } else {
        open_peer(&sel)
    };
    let floor = peer.as_mut().and_then(|p| p.launch_floor());
    if let Some(p) = peer.as_mut() {
        for r in &mut rows {
            r.copy = bench_copy(r.n, target, p.as_mut());
            if let Some(c) = &r.copy {
                println!(
                    "copy {}: {} (K {}, loops {}..{}), stream {} per copy (K {})",
                    label(r.n),
                    fmt_time(c.sync.per_iter),
                    c.sync.k,
                    fmt_time(c.sync.min),
                    fmt_time(c.sync.max),
                    fmt_time(c.stream.per_iter),
                    c.stream.k,
                );
                if let Some(kt) = &c.kernel {
                    println!(
                        "       copy kernel (WGSL dst[i] = src[i]) {} (K {}, loops {}..{})",
                        fmt_time(kt.per_iter),
                        kt.k,
                        fmt_time(kt.min),
                        fmt_time(kt.max),
                    );
                }
                if let (Some(st), Some(bt)) = (&c.kernel_stream, &c.kernel_batched) {
                    println!(
                        "       copy kernel stream {} per copy (K {}, one submission each), \
                         {} per copy ({BATCH} per submission, K {})",
                        fmt_time(st.per_iter),
                        st.k,
                        fmt_time(bt.per_iter),
                        bt.k,
                    );
                }
                if let Some(h) = &c.hand {
                    let modes: Vec<String> = (h.modes.iter().zip(&h.stream))
                        .map(|(m, t)| format!("{} ({m}, K {})", fmt_time(t.per_iter), t.k))
                        .collect();
                    println!(
                        "       hand-written chain kernel stream, per launch: {}; max rel. diff \
                         vs host {:.1e}",
                        modes.join(", "),
                        h.max_err,
                    );
                }
            }
        }
    }
    drop(peer);
    println!();

    // JSON lines: one per row, for benches/peers/merge.py.
    let head = |imp: &str, be: &str, op: &str, n: usize, bytes: usize| {
        format!(
            "{{\"bench\":\"gpu\",\"impl\":{},\"backend\":{},\"device\":{},\"op\":{},\"n\":{n},\"bytes\":{bytes}",
            js(imp),
            js(be),
            js(&sel.name),
            js(op)
        )
    };
    let timing = |t: &Timing, bytes: usize| {
        format!(
            "\"time_s\":{},\"gbs\":{},\"min_s\":{},\"max_s\":{},\"k\":{},\"repeats\":{REPEATS}",
            jn(t.per_iter.as_secs_f64()),
            jn(gbs(bytes, t.per_iter)),
            jn(t.min.as_secs_f64()),
            jn(t.max.as_secs_f64()),
            t.k
        )
    };
    let mut json = Vec::new();
    for r in &rows {
        let bytes = 12 * r.n;
        json.push(format!(
            "{},{},\"launch_us\":{},\"max_rel_err\":{},\"stream_time_s\":{},\"stream_gbs\":{}}}",
            head("arrayflow", &backend, "chain", r.n, bytes),
            timing(&r.chain, bytes),
            jn(launch_us(&r.chain.stats).unwrap_or(f64::NAN)),
            jn(r.max_err as f64),
            jn(r.chain_stream.per_iter.as_secs_f64()),
            jn(gbs(bytes, r.chain_stream.per_iter))
        ));
        if let Some(c) = &r.copy {
            json.push(format!(
                "{},{},\"stream_time_s\":{},\"stream_gbs\":{}}}",
                head("copy", &backend, "copy", r.n, bytes),
                timing(&c.sync, bytes),
                jn(c.stream.per_iter.as_secs_f64()),
                jn(gbs(bytes, c.stream.per_iter))
            ));
            if let Some(kt) = &c.kernel {
                let stream = c.kernel_stream.as_ref().map_or(String::new(), |st| {
                    format!(
                        ",\"stream_time_s\":{},\"stream_gbs\":{}",
                        jn(st.per_iter.as_secs_f64()),
                        jn(gbs(bytes, st.per_iter))
                    )
                });
                json.push(format!(
                    "{},{}{stream}}}",
                    head("copy-kernel", &backend, "copy", r.n, bytes),
                    timing(kt, bytes)
                ));
            }
            if let Some(h) = &c.hand {
                // `time_s` and `stream_time_s`: launch mode 0; `modes`:
                // every mode's name and stream time.
                let modes: Vec<String> = (h.modes.iter().zip(&h.stream))
                    .map(|(m, t)| format!("[{},{}]", js(m), jn(t.per_iter.as_secs_f64())))
                    .collect();
                json.push(format!(
                    "{},{},\"max_rel_err\":{},\"stream_time_s\":{},\"stream_gbs\":{},\"modes\":[{}]}}",
                    head("hand", &backend, "chain", r.n, bytes),
                    timing(&h.stream[0], bytes),
                    jn(h.max_err as f64),
                    jn(h.stream[0].per_iter.as_secs_f64()),
                    jn(gbs(bytes, h.stream[0].per_iter)),
                    modes.join(","),
                ));
            }
        }
    }
    json.push(format!(
        "{},{},\"max_rel_err\":{},\"stream_time_s\":{},\"stream_gbs\":{}}}",
        head("arrayflow", &backend, "sum", n_sum, 4 * n_sum),
        timing(&sum, 4 * n_sum),
        jn(sum_err),
        jn(sum_stream.per_iter.as_secs_f64()),
        jn(gbs(4 * n_sum, sum_stream.per_iter))
    ));
    for (axis, sync, stream, err) in &axis_sums {
        let bytes = 4 * n_axis * n_axis;
        json.push(format!(
            "{},{},\"max_rel_err\":{},\"stream_time_s\":{},\"stream_gbs\":{}}}",
            head(
                "arrayflow",
                &backend,
                &format!("sum_axis{axis}"),
                n_axis * n_axis,
                bytes
            ),
            timing(sync, bytes),
            jn(*err),
            jn(stream.per_iter.as_secs_f64()),
            jn(gbs(bytes, stream.per_iter))
        ));
    }
    json.push(format!(
        "{},{},\"launch_us\":{},\"launches\":{},\"trace_hits_per_iter\":{},\"floor_us\":{},\"floor_fresh_group_us\":{}}}",
        head("arrayflow", &backend, "launch", n_small, 12 * n_small),
        timing(&small, 12 * n_small),
        jn(latency.unwrap_or(f64::NAN)),
        small.stats.device.launches,
        jn(small_hits),
        jn(floor.map_or(f64::NAN, |f| us(f.0))),
        jn(floor.and_then(|f| f.1).map_or(f64::NAN, us)),
    ));
    for j in &json {
        println!("JSON {j}");
    }
    println!();

    // The table.
    println!(
        "{:>7} | {:<32} | {:>6} | {:>10} | {:>14} | {:>10} | {:>9} | {:>16} | {:>16} | {:>9}",
        "backend",
        "device",
        "n",
        "arrayflow",
        "arrayflow GB/s",
        "copy",
        "copy GB/s",
        "copy stream GB/s",
        "copy kernel GB/s",
        "af / copy"
    );
    println!("{}", "-".repeat(157));
    let short: String = sel.name.chars().take(32).collect();
    for r in &rows {
        let bytes = 12 * r.n;
        let (copy_t, copy_g, stream_g, kernel_g, ratio) = match &r.copy {
            Some(c) => (
                fmt_time(c.sync.per_iter),
                format!("{:.1}", gbs(bytes, c.sync.per_iter)),
                format!("{:.1}", gbs(bytes, c.stream.per_iter)),
                c.kernel
                    .as_ref()
                    .map_or("-".into(), |k| format!("{:.1}", gbs(bytes, k.per_iter))),
                format!(
                    "{:.2}x",
                    c.reference().as_secs_f64() / r.chain.per_iter.as_secs_f64()
                ),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:>7} | {:<32} | {:>6} | {:>10} | {:>14.1} | {:>10} | {:>9} | {:>16} | {:>16} | {:>9}",
            backend,
            short,
            label(r.n),
            fmt_time(r.chain.per_iter),
            gbs(bytes, r.chain.per_iter),
            copy_t,
            copy_g,
            stream_g,
            kernel_g,
            ratio
        );
    }
    println!(
        "(copy: the API's buffer copy, each waited for, as arrayflow's loop waits for each iteration; \
         copy stream: copies back to back, one wait; copy kernel: the same bytes copied by a compute \
         kernel (wgpu). af / copy = the faster of copy and copy kernel, time / arrayflow's time, \
         at the same 12 n bytes.)"
    );
    let largest_copy = rows
        .iter()
        .find(|r| r.n == n_sum)
        .and_then(|r| r.copy.as_ref());
    for (mode, t, copy) in [
        ("sync", &sum, largest_copy.map(|c| c.reference())),
        (
            "stream",
            &sum_stream,
            largest_copy.map(|c| c.stream_reference()),
        ),
    ] {
        let sum_gbs = gbs(4 * n_sum, t.per_iter);
        println!(
            "sum {} {mode}: {} = {:.1} GB/s (4 n bytes read){}",
            label(n_sum),
            fmt_time(t.per_iter),
            sum_gbs,
            match copy {
                Some(c) => format!(
                    "; sum / copy {mode} bandwidth {:.2}x (target >= 0.8)",
                    sum_gbs / gbs(12 * n_sum, c)
                ),
                None => String::new(),
            }
        );
    }
    for (axis, sync, stream, _) in &axis_sums {
        let bytes = 4 * n_axis * n_axis;
        println!(
            "sum_axis({axis}) {n_axis}x{n_axis} f32: sync {} = {:.1} GB/s, stream {} = {:.1} GB/s \
             (4 N^2 bytes read; {})",
            fmt_time(sync.per_iter),
            gbs(bytes, sync.per_iter),
            fmt_time(stream.per_iter),
            gbs(bytes, stream.per_iter),
            if *axis == 0 {
                "column sums"
            } else {
                "row sums"
            }
        );
    }
    match latency {
        Some(l) => println!(
            "launch latency {}: {l:.1} µs per launch (host, flush call to the kernel's submission; target < 20 µs), \
             {} per iteration end to end, trace hits per iteration {small_hits:.2}, flush to \
             scheduler/executor/launch/done {:.1}/{:.1}/{l:.1}/{:.1} µs; of the launch, the flush \
             itself {:.1} µs and the API's submission {:.1} µs",
            label(n_small),
            fmt_time(small.per_iter),
            per_launch_us(&small.stats, small.stats.device.scheduled_ns),
            per_launch_us(&small.stats, small.stats.device.received_ns),
            per_launch_us(&small.stats, small.stats.device.done_ns),
            per_launch_us(&small.stats, small.stats.flush_ns),
            per_launch_us(&small.stats, small.stats.device.submit_ns),
        ),
        None => println!(
            "launch latency {}: n/a (no device launches; {} per iteration end to end on the {backend} executor)",
            label(n_small),
            fmt_time(small.per_iter)
        ),
    }
    if let Some((once, fresh)) = floor {
        println!(
            "launch floor (the bare API, host time from its first call to the submission, each launch \
             waited for): {:.1} µs{}{}",
            us(once),
            fresh.map_or(String::new(), |f| format!(
                " with one bind group; {:.1} µs making a bind group per launch, as arrayflow does",
                us(f)
            )),
            latency.map_or(String::new(), |l| format!(
                "; arrayflow's launch latency is the floor + {:.1} µs",
                l - us(fresh.unwrap_or(once))
            )),
        );
    }
}

/// A duration in µs.
fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
