//! Fourier transform benchmark (`intrinsics/fft/`) on the CPU executor: arrayflow's `fft` and
//! `rfft` against rustfft and realfft called directly on the same data (issue 22's target: at
//! least 0.9x on the CPU). Every result is checked against the peer's before it is timed; each
//! figure is the median of `FFT_REPEATS` (default 7) timed runs after one untimed warm-up.
//!
//! - one long line: `Complex<f32>` `fft` of 2^`FFT_LOG2` (default 22) points, and f32 `rfft` of
//!   the same length, against one rustfft / realfft plan run on one thread (a transform of one
//!   line runs on one thread in both);
//! - a batch: `Complex<f32>` `fft` and f32 `rfft` of 4096 rows of 1024 along the last axis,
//!   against the same plans run over the rows with rayon (arrayflow runs the batch over rayon).
//!
//! arrayflow is timed as `fft::fft(&a, ..).eval()` (computed into the runtime's buffer, not
//! copied out); the peers copy the input into a buffer (rustfft transforms in place, realfft
//! overwrites its input) and transform it, with plans and scratch made before the clock starts.
//! Ratio = peer time / arrayflow time (above 1: arrayflow is faster).
//!
//! **GPU** (`ARRAYFLOW_DEVICE=opencl[:N]` or `wgpu[:N]`): the generated Stockham kernels
//! (`intrinsics/fft/gpu.rs`) on `Complex<f32>` `fft` of 2^`FFT_GPU_LOG2` points (default 22;
//! OpenCL takes up to 2^24, WGSL 2^22 on the device), `fft` of `FFT_GPU_BATCH` x `FFT_ROW` rows
//! (default 16384 x 1024) and f32 `rfft` of the same rows, each evaluated on the device per
//! iteration (checked against rustfft / realfft first, and that no CPU fallback ran), against a
//! **device copy** of the same bytes (`&x + 0.0` on an f32 array as large as the complex input,
//! one kernel reading and writing every byte once): ratio = copy time / FFT time, the share of
//! the copy's bandwidth the transform reaches (a one-pass FFT's ideal is 1; a four-step one's
//! 0.5). Then issue 22's target shapes (`FFT_TARGETS=0` skips them): `fft` of
//! 2^`FFT_TARGET_LOG2` (24), `fft2` of `FFT_TARGET_2D`² (4096²) and `rfft` of
//! `FFT_GPU_BATCH` x `FFT_TARGET_ROW` (16384 x 4096), each checked the same way (the `fft2`
//! on 8 sampled columns of the host's row transforms). Then a prime length (Bluestein's
//! algorithm, `intrinsics/fft/bluestein.rs`; `FFT_PRIME=0` skips it): `fft` of
//! `FFT_PRIME_BATCH` x `FFT_PRIME` rows (default 64 x 100003) along the last axis.
//! `benches/peers/fft.py` times `torch.fft` on all these sizes (cuFFT).
//!
//! `ARRAYFLOW_KERNEL_TIMES=1` prints each GPU case's kernels by device time.
//!
//! ```sh
//! cargo bench --bench fft
//! ARRAYFLOW_DEVICE=opencl cargo bench --bench fft
//! ```

mod common;
use common::{
    PeerRow, cpu_model, env_usize, median_prepared, print_kernel_times, print_peer_rows, random_vec,
};

use arrayflow::fft::{self, Norm};
use arrayflow::{Array, Backend, Complex, Runtime};
use rayon::prelude::*;

type C32 = Complex<f32>;

/// arrayflow's result within `1e-5` of the peer's (relative to the largest modulus).
#[track_caller]
fn check(what: &str, got: &[C32], want: &[C32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let big = want.iter().map(|z| z.norm()).fold(0.0f32, f32::max);
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0f32, f32::max);
    assert!(
        worst <= 1e-5 * big,
        "{what}: differs by {worst} (largest |X| {big})"
    );
}

fn complex_data(n: usize, seed: u64) -> Vec<C32> {
    let v = random_vec(2 * n, seed, -1.0, 1.0);
    v.chunks_exact(2).map(|p| C32::new(p[0], p[1])).collect()
}

fn main() {
    let repeats = env_usize("FFT_REPEATS", 7).max(1);
    if Runtime::backend() != Backend::Cpu {
        gpu_main(repeats);
        return;
    }
    println!(
        "FFT benchmark: executor {}, host {} ({} rayon threads)",
        Runtime::executor(),
        cpu_model(),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let mut real_planner = realfft::RealFftPlanner::<f32>::new();
    let b = Norm::Backward;

    // One long line.
    let n = 1usize << env_usize("FFT_LOG2", 22);
    {
        let x = complex_data(n, 3);
        let a = Array::from_slice(&x, &[n]);
        let plan = planner.plan_fft_forward(n);
        let mut scratch = vec![C32::default(); plan.get_inplace_scratch_len()];
        let mut buf = x.clone();
        plan.process_with_scratch(&mut buf, &mut scratch);
        check(
            "fft",
            &fft::fft(&a, None, 0, b).to_vec().expect("fft"),
            &buf,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft(&a, None, 0, b).eval().expect("fft"),
        );
        let peer = median_prepared(
            repeats,
            || (),
            |()| {
                buf.copy_from_slice(&x);
                plan.process_with_scratch(&mut buf, &mut scratch);
            },
        );
        rows.push(PeerRow {
            name: "fft c64".into(),
            size: format!("[{n}]"),
            af,
            peer,
            peer_name: "rustfft, one plan, 1 thread",
        });
    }
    {
        let x = random_vec(n, 5, -1.0, 1.0);
        let a = Array::from_slice(&x, &[n]);
        let plan = real_planner.plan_fft_forward(n);
        let mut scratch = plan.make_scratch_vec();
        let mut input = x.clone();
        let mut out = plan.make_output_vec();
        plan.process_with_scratch(&mut input, &mut out, &mut scratch)
            .expect("realfft");
        check(
            "rfft",
            &fft::rfft(&a, None, 0, b).to_vec().expect("rfft"),
            &out,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::rfft(&a, None, 0, b).eval().expect("rfft"),
        );
        let peer = median_prepared(
            repeats,
            || (),
            |()| {
                input.copy_from_slice(&x);
                plan.process_with_scratch(&mut input, &mut out, &mut scratch)
                    .expect("realfft");
            },
        );
        rows.push(PeerRow {
            name: "rfft f32".into(),
            size: format!("[{n}]"),
            af,
            peer,
            peer_name: "realfft, one plan, 1 thread",
        });
    }

    // A batch of rows.
    let (rows_n, len) = (env_usize("FFT_BATCH", 4096), env_usize("FFT_ROW", 1024));
    {
        let x = complex_data(rows_n * len, 9);
        let a = Array::from_slice(&x, &[rows_n, len]);
        let plan = planner.plan_fft_forward(len);
        let scratch_len = plan.get_inplace_scratch_len();
        let mut buf = x.clone();
        let run_peer = |buf: &mut Vec<C32>| {
            buf.par_chunks_mut(64 * len)
                .zip(x.par_chunks(64 * len))
                .for_each_init(
                    || vec![C32::default(); scratch_len],
                    |scratch, (b, xs)| {
                        b.copy_from_slice(xs);
                        plan.process_with_scratch(b, scratch);
                    },
                );
        };
        run_peer(&mut buf);
        check(
            "batched fft",
            &fft::fft(&a, None, 1, b).to_vec().expect("fft"),
            &buf,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft(&a, None, 1, b).eval().expect("fft"),
        );
        let peer = median_prepared(repeats, || (), |()| run_peer(&mut buf));
        rows.push(PeerRow {
            name: "fft c64".into(),
            size: format!("[{rows_n}, {len}]"),
            af,
            peer,
            peer_name: "rustfft over rayon (64 rows a task)",
        });
    }
    {
        let x = random_vec(rows_n * len, 13, -1.0, 1.0);
        let a = Array::from_slice(&x, &[rows_n, len]);
        let plan = real_planner.plan_fft_forward(len);
        let h = len / 2 + 1;
        let mut out = vec![C32::default(); rows_n * h];
        let run_peer = |out: &mut Vec<C32>| {
            out.par_chunks_mut(64 * h)
                .zip(x.par_chunks(64 * len))
                .for_each_init(
                    || (plan.make_input_vec(), plan.make_scratch_vec()),
                    |(input, scratch), (o, xs)| {
                        for (ol, xl) in o.chunks_exact_mut(h).zip(xs.chunks_exact(len)) {
                            input.copy_from_slice(xl);
                            plan.process_with_scratch(input, ol, scratch)
                                .expect("realfft");
                        }
                    },
                );
        };
        run_peer(&mut out);
        check(
            "batched rfft",
            &fft::rfft(&a, None, 1, b).to_vec().expect("rfft"),
            &out,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::rfft(&a, None, 1, b).eval().expect("rfft"),
        );
        let peer = median_prepared(repeats, || (), |()| run_peer(&mut out));
        rows.push(PeerRow {
            name: "rfft f32".into(),
            size: format!("[{rows_n}, {len}]"),
            af,
            peer,
            peer_name: "realfft over rayon (64 rows a task)",
        });
    }

    print_peer_rows("fft", "", &rows);
}

/// The device copy of `bytes` bytes: `&x + 0.0` on `bytes / 4` f32 (not folded: `-0.0 + 0.0`
/// is `0.0`), evaluated on the device.
fn device_copy(repeats: usize, bytes: usize) -> std::time::Duration {
    let x = Array::from_slice(&random_vec(bytes / 4, 17, -1.0, 1.0), &[bytes / 4]);
    median_prepared(repeats, || (), |()| (&x + 0.0f32).eval().expect("copy"))
}

/// The GPU executors: the transforms on the device against a device copy of the same bytes.
fn gpu_main(repeats: usize) {
    println!(
        "FFT benchmark (GPU kernels): executor {}, host {}",
        Runtime::executor(),
        cpu_model()
    );
    let before = Runtime::stats().device;
    let mut rows = Vec::new();
    let b = Norm::Backward;
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let mut real_planner = realfft::RealFftPlanner::<f32>::new();
    let copy_name = "device copy of the input's bytes";

    let n = 1usize << env_usize("FFT_GPU_LOG2", 22);
    {
        let x = complex_data(n, 3);
        let a = Array::from_slice(&x, &[n]);
        let mut want = x.clone();
        planner.plan_fft_forward(n).process(&mut want);
        check(
            "fft",
            &fft::fft(&a, None, 0, b).to_vec().expect("fft"),
            &want,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft(&a, None, 0, b).eval().expect("fft"),
        );
        print_kernel_times("fft c64 line");
        rows.push(PeerRow {
            name: "fft c64".into(),
            size: format!("[{n}]"),
            af,
            peer: device_copy(repeats, 8 * n),
            peer_name: copy_name,
        });
    }
    let (rows_n, len) = (
        env_usize("FFT_GPU_BATCH", 16384),
        env_usize("FFT_ROW", 1024),
    );
    {
        let x = complex_data(rows_n * len, 9);
        let a = Array::from_slice(&x, &[rows_n, len]);
        let plan = planner.plan_fft_forward(len);
        let mut want = x.clone();
        want.chunks_exact_mut(len).for_each(|l| plan.process(l));
        check(
            "batched fft",
            &fft::fft(&a, None, 1, b).to_vec().expect("fft"),
            &want,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft(&a, None, 1, b).eval().expect("fft"),
        );
        print_kernel_times("fft c64 batch");
        rows.push(PeerRow {
            name: "fft c64".into(),
            size: format!("[{rows_n}, {len}]"),
            af,
            peer: device_copy(repeats, 8 * rows_n * len),
            peer_name: copy_name,
        });
    }
    {
        let x = random_vec(rows_n * len, 13, -1.0, 1.0);
        let a = Array::from_slice(&x, &[rows_n, len]);
        let plan = real_planner.plan_fft_forward(len);
        let h = len / 2 + 1;
        let mut want = vec![C32::default(); rows_n * h];
        for (o, xl) in want.chunks_exact_mut(h).zip(x.chunks_exact(len)) {
            let mut input = xl.to_vec();
            plan.process(&mut input, o).expect("realfft");
        }
        check(
            "batched rfft",
            &fft::rfft(&a, None, 1, b).to_vec().expect("rfft"),
            &want,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::rfft(&a, None, 1, b).eval().expect("rfft"),
        );
        print_kernel_times("rfft f32 batch");
        rows.push(PeerRow {
            name: "rfft f32".into(),
            size: format!("[{rows_n}, {len}]"),
            af,
            peer: device_copy(repeats, 4 * rows_n * len),
            peer_name: copy_name,
        });
    }
    if env_usize("FFT_TARGETS", 1) != 0 {
        target_rows(repeats, &mut rows, rows_n);
    }
    let prime = env_usize("FFT_PRIME", 100_003);
    if prime != 0 {
        prime_rows(repeats, &mut rows, env_usize("FFT_PRIME_BATCH", 64), prime);
    }
    let d = Runtime::stats().device.since(&before);
    assert_eq!(d.fallbacks, 0, "an FFT ran on the CPU fallback: {d:?}");
    print_peer_rows("fft", "\"gpu\":true,", &rows);
}

/// Issue 22's target shapes on the device: `fft` of one long line, `fft2` of a square and a
/// batch of long `rfft` rows, against a device copy of each input's bytes.
fn target_rows(repeats: usize, rows: &mut Vec<PeerRow>, rows_n: usize) {
    let b = Norm::Backward;
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let copy_name = "device copy of the input's bytes";
    let n = 1usize << env_usize("FFT_TARGET_LOG2", 24);
    {
        let x = complex_data(n, 19);
        let a = Array::from_slice(&x, &[n]);
        let mut want = x.clone();
        planner.plan_fft_forward(n).process(&mut want);
        check(
            "fft target",
            &fft::fft(&a, None, 0, b).to_vec().expect("fft"),
            &want,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft(&a, None, 0, b).eval().expect("fft"),
        );
        print_kernel_times("fft c64 target line");
        rows.push(PeerRow {
            name: "fft c64".into(),
            size: format!("[{n}]"),
            af,
            peer: device_copy(repeats, 8 * n),
            peer_name: copy_name,
        });
    }
    let side = env_usize("FFT_TARGET_2D", 4096);
    {
        let x = complex_data(side * side, 23);
        let a = Array::from_slice(&x, &[side, side]);
        let got = fft::fft2(&a, None, b).to_vec().expect("fft2");
        // The rows on the host, then 8 sampled columns.
        let row = planner.plan_fft_forward(side);
        let mut rows_done = x.clone();
        rows_done
            .chunks_exact_mut(side)
            .for_each(|l| row.process(l));
        for c in (0..8).map(|k| k * (side - 1) / 7) {
            let mut col: Vec<C32> = (0..side).map(|r| rows_done[r * side + c]).collect();
            row.process(&mut col);
            let mine: Vec<C32> = (0..side).map(|r| got[r * side + c]).collect();
            check(&format!("fft2 column {c}"), &mine, &col);
        }
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::fft2(&a, None, b).eval().expect("fft2"),
        );
        print_kernel_times("fft2 c64 target");
        rows.push(PeerRow {
            name: "fft2 c64".into(),
            size: format!("[{side}, {side}]"),
            af,
            peer: device_copy(repeats, 8 * side * side),
            peer_name: copy_name,
        });
    }
    let len = env_usize("FFT_TARGET_ROW", 4096);
    {
        let x = random_vec(rows_n * len, 25, -1.0, 1.0);
        let a = Array::from_slice(&x, &[rows_n, len]);
        let plan = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(len);
        let h = len / 2 + 1;
        let mut want = vec![C32::default(); rows_n * h];
        for (o, xl) in want.chunks_exact_mut(h).zip(x.chunks_exact(len)) {
            let mut input = xl.to_vec();
            plan.process(&mut input, o).expect("realfft");
        }
        check(
            "rfft target",
            &fft::rfft(&a, None, 1, b).to_vec().expect("rfft"),
            &want,
        );
        let af = median_prepared(
            repeats,
            || (),
            |()| fft::rfft(&a, None, 1, b).eval().expect("rfft"),
        );
        print_kernel_times("rfft f32 target batch");
        rows.push(PeerRow {
            name: "rfft f32".into(),
            size: format!("[{rows_n}, {len}]"),
            af,
            peer: device_copy(repeats, 4 * rows_n * len),
            peer_name: copy_name,
        });
    }
}

/// `fft` of `batch` rows of a prime length `n` (Bluestein's algorithm on the device), checked
/// against rustfft on every row, against a device copy of the input's bytes.
fn prime_rows(repeats: usize, rows: &mut Vec<PeerRow>, batch: usize, n: usize) {
    let b = Norm::Backward;
    let x = complex_data(batch * n, 29);
    let a = Array::from_slice(&x, &[batch, n]);
    let plan = rustfft::FftPlanner::<f32>::new().plan_fft_forward(n);
    let mut want = x.clone();
    want.chunks_exact_mut(n).for_each(|l| plan.process(l));
    check(
        "prime fft",
        &fft::fft(&a, None, 1, b).to_vec().expect("fft"),
        &want,
    );
    let af = median_prepared(
        repeats,
        || (),
        |()| fft::fft(&a, None, 1, b).eval().expect("fft"),
    );
    print_kernel_times("fft c64 prime batch");
    rows.push(PeerRow {
        name: "fft c64".into(),
        size: format!("[{batch}, {n}]"),
        af,
        peer: device_copy(repeats, 8 * batch * n),
        peer_name: "device copy of the input's bytes",
    });
}
