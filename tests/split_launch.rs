//! One launch split by ratio (issue 25, seed 002): this process starts with
//! `DeviceChoice::All` (PoCL's device, lavapipe's adapter and the CPU on CI), whatever
//! `ARRAYFLOW_DEVICE` says, and splits fused kernels with `Runtime::split`. Checks that split
//! element-wise chains (broadcasts, slices and rolls that read across the split point) and
//! reductions along dimension 0 and along other dimensions equal the one-device result and an f64
//! oracle for ratios 0.3, 0.5 and 0.7, partitions 0 and 10 (one side), the cost-model and forced
//! modes; that each part moves exactly the rows the access analysis says it reads; and that small
//! kernels split only when forced.

mod common;

use arrayflow::{Array, Device, Runtime, SplitMode, Stats, s};
use common::*;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Starts the runtime on every device (once per process) and takes the statistics lock; `None`
/// when fewer than two devices run (nothing to split between two devices).
fn start() -> Option<parking_lot::MutexGuard<'static, ()>> {
    start_on_every_device();
    let g = SERIAL.lock();
    if Runtime::live_devices().len() < 3 {
        let required = std::env::var("ARRAYFLOW_REQUIRE_BACKENDS").is_ok_and(|v| v.contains(','));
        assert!(
            !required,
            "two backends required: {:?}",
            Runtime::live_devices()
        );
        return None;
    }
    Some(g)
}

/// The first device (a ratio's first side) and the second (its other side).
fn sides() -> (Device, Device) {
    let live = Runtime::live_devices();
    (live[1].clone(), live[2].clone())
}

const MODES: [SplitMode; 7] = [
    SplitMode::Ratio(0.3),
    SplitMode::Ratio(0.5),
    SplitMode::Ratio(0.7),
    SplitMode::Ratio(0.0),
    SplitMode::Ratio(1.0),
    SplitMode::Cost,
    SplitMode::Force,
];

/// `f`'s result under `mode`, with the statistics of the run.
fn run_split(mode: SplitMode, f: &dyn Fn() -> Array<f32>) -> (Vec<f32>, Stats) {
    let before = Runtime::stats();
    let y = {
        let _s = Runtime::split(mode);
        f()
    };
    let got = read(&y);
    (got, Runtime::stats().since(&before))
}

/// `f`'s result on the first device alone, unsplit.
fn one_device(f: &dyn Fn() -> Array<f32>) -> Vec<f32> {
    let _s = Runtime::place_on(&sides().0);
    let y = f();
    read(&y)
}

/// Checks `f` split by every mode against one device and the oracle `want`, and that ratios
/// strictly between 0 and 1 split (the parts on the two sides), 0 and 1 do not.
fn check_modes(what: &str, f: &dyn Fn() -> Array<f32>, want: &[f64], rel: f64) {
    let one = one_device(f);
    assert_close(
        &one,
        want,
        rel,
        rel,
        &format!("{what}: one device vs oracle"),
    );
    let (a, b) = sides();
    for mode in MODES {
        let (got, s) = run_split(mode, f);
        let ctx = format!("{what} {mode:?}");
        assert_close(&got, want, rel, rel, &format!("{ctx}: split vs oracle"));
        let one64: Vec<f64> = one.iter().map(|&v| v as f64).collect();
        assert_close(
            &got,
            &one64,
            rel,
            rel,
            &format!("{ctx}: split vs one device"),
        );
        let (pa, pb) = (s.executors[a.index()].parts, s.executors[b.index()].parts);
        match mode {
            SplitMode::Ratio(0.0) => {
                assert_eq!((s.split_launches, pa), (0, 0), "{ctx}: {s:?}");
                assert!(pb >= 1, "{ctx}: all on {b}");
            }
            SplitMode::Ratio(1.0) => {
                assert_eq!((s.split_launches, pb), (0, 0), "{ctx}");
                assert!(pa >= 1, "{ctx}: all on {a}");
            }
            SplitMode::Cost => {
                // The cost model picks the executors by their nominal speeds: which two (or
                // more) depends on the machine (on two GPUs beside PoCL, the GPUs).
                let parts: u64 = s.executors.iter().map(|e| e.parts).sum();
                assert!(s.split_launches >= 1, "{ctx}: split");
                assert!(parts >= 2 * s.split_launches, "{ctx}: {s:?}");
            }
            _ => {
                assert!(s.split_launches >= 1, "{ctx}: split");
                assert!(pa >= 1 && pb >= 1, "{ctx}: parts on both: {pa} {pb}");
                assert!(s.split_launches <= pa.min(pb), "{ctx}");
            }
        }
    }
}

#[test]
fn element_wise_chains_with_broadcasts_split_equal_one_device_and_the_oracle() {
    let Some(_g) = start() else { return };
    let mut r = rng(1);
    let (m, n) = (1000, 300);
    let x = rand_f32(&mut r, m * n, -1.0, 1.0);
    let row = rand_f32(&mut r, n, 0.5, 1.5);
    let col = rand_f32(&mut r, m, -0.5, 0.5);
    let f = || {
        let xa = Array::from_slice(&x, &[m, n]);
        let ra = Array::from_slice(&row, &[n]);
        let ca = Array::from_slice(&col, &[m, 1]);
        ((&xa * &ra + &ca).sin() * 2.0f32 + (&xa * 0.5f32).exp()) - &ca * &ca
    };
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (v, c) = (x[i * n + j] as f64, col[i] as f64);
            want[i * n + j] = (v * row[j] as f64 + c).sin() * 2.0 + (v * 0.5).exp() - c * c;
        }
    }
    check_modes("chain", &f, &want, 1e-5);
}

#[test]
fn slices_and_rolls_that_read_across_the_split_point_split_right() {
    let Some(_g) = start() else { return };
    let mut r = rng(2);
    let (m, n) = (1024, 320);
    let x = rand_f32(&mut r, m * n, -2.0, 2.0);
    // Rows shifted by one (a halo across the cut), a roll along dimension 0 (wraps around the
    // array), a roll along dimension 1 and a column slice (strided reads).
    let f = || {
        let xa = Array::from_slice(&x, &[m, n]);
        let up = xa.slice(s![1.., ..]);
        let down = xa.slice(s![..-1, ..]);
        let rolled = xa.roll(5, 0).slice(s![1.., ..]);
        let side = xa.roll(-3, 1).slice(s![..-1, ..]);
        &up * 0.5f32 - &down + &rolled * &side
    };
    let at = |i: usize, j: usize| x[i * n + j] as f64;
    let mut want = vec![0.0; (m - 1) * n];
    for i in 0..m - 1 {
        for j in 0..n {
            let rolled = at((i + 1 + m - 5) % m, j);
            let side = at(i, (j + 3) % n);
            want[i * n + j] = at(i + 1, j) * 0.5 - at(i, j) + rolled * side;
        }
    }
    check_modes("shifted", &f, &want, 1e-5);
}

#[test]
fn reductions_along_dimension_0_and_along_other_dimensions_split() {
    let Some(_g) = start() else { return };
    let mut r = rng(3);
    let (m, n) = (768, 512);
    let x = rand_f32(&mut r, m * n, -1.0, 1.0);
    let along1 = || (Array::from_slice(&x, &[m, n]) * 2.0f32 + 1.0f32).sum_axis(1);
    let along0 = || (Array::from_slice(&x, &[m, n]).abs() - 0.25f32).sum_axis(0);
    let w1: Vec<f64> = (0..m)
        .map(|i| (0..n).map(|j| x[i * n + j] as f64 * 2.0 + 1.0).sum())
        .collect();
    let w0: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| (x[i * n + j] as f64).abs() - 0.25).sum())
        .collect();
    check_modes("sum along 1", &along1, &w1, 2e-4);
    check_modes("sum along 0", &along0, &w0, 2e-4);
}

/// Each part moves exactly the rows it reads (seed 004): the input sits on the CPU, a ratio
/// splits between the two devices, the second part's result moves to the first (the join's
/// home, the larger part) and nothing else moves.
#[test]
fn bytes_moved_per_part_equal_the_access_analysis() {
    let Some(_g) = start() else { return };
    let (a, b) = sides();
    let mut r = rng(4);
    let (m, n) = (1000, 512);
    let x = rand_f32(&mut r, m * n, -1.0, 1.0);
    for ratio in [0.5, 0.7] {
        // Rows of 512 elements: every row is a multiple of a work group, the cut is the nearest
        // row to ratio x rows.
        let rows = m - 1;
        let cut = (rows as f64 * ratio).round() as usize;
        let xa = Array::from_slice(&x, &[m, n]);
        xa.eval().expect("uploaded");
        let before = Runtime::stats();
        let y = {
            let _s = Runtime::split(SplitMode::Ratio(ratio));
            xa.slice(s![1.., ..]) * 3.0f32 + xa.slice(s![..-1, ..])
        };
        y.eval().expect("computed");
        let st = Runtime::stats().since(&before);
        assert_eq!(st.split_launches, 1);
        // Part 0 computes rows 0..cut and reads x's rows 0..cut+1; part 1 rows cut..rows, reading
        // x's rows cut..m. Each part's result is `4 n` bytes a row; the join runs on `a`.
        let row = 4 * n as u64;
        let (p0, p1) = (cut as u64, (rows - cut) as u64);
        let e = &st.executors;
        assert_eq!(
            e[a.index()].bytes_in,
            (p0 + 1) * row + p1 * row,
            "{ratio}: {e:?}"
        );
        assert_eq!(e[b.index()].bytes_in, (p1 + 1) * row, "{ratio}: {e:?}");
        assert_eq!(e[b.index()].bytes_out, p1 * row, "{ratio}: {e:?}");
        assert_eq!(e[0].bytes_out, (p0 + 1 + p1 + 1) * row, "{ratio}: {e:?}");
        assert_eq!(
            (e[0].bytes_in, e[a.index()].bytes_out),
            (0, 0),
            "{ratio}: {e:?}"
        );
        let got = read(&y);
        for i in 0..rows {
            for j in 0..n {
                let w = x[(i + 1) * n + j] as f64 * 3.0 + x[i * n + j] as f64;
                assert!(close(got[i * n + j] as f64, w, 1e-6, 1e-6), "({i}, {j})");
            }
        }
    }
}

#[test]
fn small_kernels_split_only_when_forced() {
    let Some(_g) = start() else { return };
    let mut r = rng(5);
    let (m, n) = (100, 30);
    let x = rand_f32(&mut r, m * n, 0.0, 1.0);
    let want: Vec<f64> = x.iter().map(|&v| (v as f64).sqrt() + 1.0).collect();
    for (mode, splits) in [(SplitMode::Ratio(0.5), false), (SplitMode::Force, true)] {
        let (got, s) = run_split(mode, &|| Array::from_slice(&x, &[m, n]).sqrt() + 1.0f32);
        assert_close(&got, &want, 1e-6, 1e-6, &format!("{mode:?}"));
        assert_eq!(s.split_launches > 0, splits, "{mode:?}");
    }
}

/// A result read straight into the caller's memory (a large read binds it before the kernel
/// runs) is computed whole, with the right values, also when every kernel splits.
#[test]
fn a_large_read_into_the_callers_memory_runs_whole_and_right() {
    let Some(_g) = start() else { return };
    let mut r = rng(6);
    let (m, n) = (512, 256);
    let x = rand_f32(&mut r, m * n, -1.0, 1.0);
    let mut out = vec![0.0f32; m * n];
    {
        let _s = Runtime::split(SplitMode::Force);
        let y = (Array::from_slice(&x, &[m, n]) * 4.0f32).cos();
        y.read_into(&mut out)
            .expect("read into the caller's memory");
    }
    let want: Vec<f64> = x.iter().map(|&v| (v as f64 * 4.0).cos()).collect();
    assert_close(&out, &want, 1e-5, 1e-5, "read_into");
}
