//! The small-step fast path (issue 17): a small program sequence with nothing else outstanding
//! runs on the application's thread (`Stats::inline_runs`) when the runtime has no device
//! executor and comparison mode is off; a large one goes to the executor's thread. Either way the
//! values, the counters and the errors are the same.
//! Stats are process-wide, so the tests in this file run one at a time.

mod common;

use arrayflow::{Array, ErrorKind, Runtime, Stats};
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// Whether this process may run sequences inline (CPU executor only, comparison mode off).
fn inline_possible() -> bool {
    !common::any_device() && !common::comparison_mode()
}

/// Steps of the loops (few in comparison mode, which interprets every op again).
fn steps() -> usize {
    if common::comparison_mode() { 3 } else { 30 }
}
const SMALL: usize = 3000;
/// More elements than the fast path takes (`INLINE_MAX_ELEMENTS` is 2^16).
const LARGE: usize = (1 << 17) + 5;

/// Damped oscillators, with a sum read every step (the `particles` workload's shape).
fn particles(x0: &[f64], v0: &[f64]) -> (Vec<f64>, Vec<f64>, Stats) {
    let n = x0.len();
    let mut x = Array::from_slice(x0, &[n]);
    let mut v = Array::from_slice(v0, &[n]);
    Runtime::execute();
    let before = Runtime::stats();
    let mut energies = Vec::with_capacity(steps());
    for _ in 0..steps() {
        let a = &x * -0.5 - &v * 0.01;
        v = &v + a * 0.01;
        x = &x + &v * 0.01;
        energies.push(((&v * &v + &x * &x * 0.5) * 0.5).sum().item().unwrap());
    }
    let stats = Runtime::stats().since(&before);
    (energies, x.to_vec().unwrap(), stats)
}

/// The same steps in plain Rust, sums accumulated in f64 (the values are f64).
fn particles_oracle(x0: &[f64], v0: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (mut x, mut v) = (x0.to_vec(), v0.to_vec());
    let mut energies = Vec::with_capacity(steps());
    for _ in 0..steps() {
        let mut e = 0.0;
        for i in 0..x.len() {
            let a = x[i] * -0.5 - v[i] * 0.01;
            v[i] += a * 0.01;
            x[i] += v[i] * 0.01;
            e += (v[i] * v[i] + x[i] * x[i] * 0.5) * 0.5;
        }
        energies.push(e);
    }
    (energies, x)
}

fn check_particles(n: usize, seed: u64) -> Stats {
    let mut r = common::rng(seed);
    let x0 = common::rand_f64(&mut r, n, -1.0, 1.0);
    let v0 = common::rand_f64(&mut r, n, -1.0, 1.0);
    let (energies, x, stats) = particles(&x0, &v0);
    let (want_e, want_x) = particles_oracle(&x0, &v0);
    common::assert_close(&energies, &want_e, 1e-12, 1e-9, "energies");
    common::assert_close(&x, &want_x, 1e-12, 1e-12, "positions");
    stats
}

#[test]
fn a_small_step_loop_runs_inline_and_a_large_one_does_not_with_the_same_counts() {
    let _g = SERIAL.lock();
    let small = check_particles(SMALL, 1);
    let large = check_particles(LARGE, 2);
    assert_eq!(large.inline_runs, 0, "{large:?}");
    if inline_possible() {
        // Every step's flush (at its read) runs inline.
        assert!(small.inline_runs >= steps() as u64, "{small:?}");
    } else {
        assert_eq!(small.inline_runs, 0, "{small:?}");
    }
    // The same sequences ran, counted alike, whichever thread ran them.
    assert_eq!(small.flushes, large.flushes);
    assert_eq!(small.kernels_launched, large.kernels_launched);
    assert_eq!(small.final_stages_launched, large.final_stages_launched);
    assert_eq!(small.intrinsics_launched, large.intrinsics_launched);
    assert_eq!(
        small.buffers_allocated + small.buffers_reused,
        large.buffers_allocated + large.buffers_reused
    );
    assert_eq!(small.failed_programs, 0);
    assert!(small.kernels_launched >= steps() as u64, "{small:?}");
}

/// `a / b` with a zero divisor at `zero`, then a dependent result read, then a later read of a
/// result that depends on it, and independent work: the errors' texts and the values.
fn faulting_steps(n: usize, zero: usize) -> (String, String, Vec<i32>, Stats) {
    let mut r = common::rng(7);
    let a_data = common::rand_i32(&mut r, n, -1000, 1000);
    let mut b_data = common::rand_i32(&mut r, n, 1, 50);
    b_data[zero] = 0;
    let a = Array::from_vec(a_data.clone(), &[n]);
    let b = Array::from_vec(b_data.clone(), &[n]);
    Runtime::execute();
    let before = Runtime::stats();
    let q = &a / &b;
    let y = &q + 1;
    let first = y.to_vec().unwrap_err();
    assert_eq!(first.kind(), ErrorKind::InvalidResult);
    let z = (&y * 2).sum();
    let later = z.item().unwrap_err();
    assert_eq!(later.kind(), ErrorKind::InvalidResult);
    let ok = (&a * 3 + &b).to_vec().unwrap();
    let want: Vec<i32> = a_data.iter().zip(&b_data).map(|(x, y)| x * 3 + y).collect();
    assert_eq!(ok, want);
    let stats = Runtime::stats().since(&before);
    (first.to_string(), later.to_string(), ok, stats)
}

#[test]
fn a_fault_in_an_inline_program_reads_as_the_same_error() {
    let _g = SERIAL.lock();
    let (small_first, small_later, _, small) = faulting_steps(SMALL, 100);
    let (large_first, large_later, _, large) = faulting_steps(LARGE, 100);
    for msg in [&small_first, &small_later] {
        assert!(msg.contains("division by zero"), "{msg}");
        assert!(msg.contains(file!()), "{msg}");
    }
    // Same sites, same messages, whichever thread ran the failing program.
    assert_eq!(small_first, large_first);
    assert_eq!(small_later, large_later);
    if !common::comparison_mode() {
        // (Comparison mode's checks plan the two sizes' reads differently.)
        assert_eq!(small.failed_programs, large.failed_programs);
    }
    assert!(small.failed_programs >= 1, "{small:?}");
    assert_eq!(large.inline_runs, 0, "{large:?}");
    if inline_possible() {
        assert!(small.inline_runs >= 3, "{small:?}");
    } else {
        assert_eq!(small.inline_runs, 0, "{small:?}");
    }
}

#[test]
fn a_queue_flushed_at_its_threshold_runs_in_the_background() {
    let _g = SERIAL.lock();
    let threshold = Runtime::config().queue_threshold;
    let mut r = common::rng(3);
    let x0 = common::rand_f64(&mut r, 64, -1.0, 1.0);
    let mut x = Array::from_slice(&x0, &[64]);
    Runtime::execute();
    let before = Runtime::stats();
    let steps = 2 * threshold + 3;
    for _ in 0..steps {
        x = &x * 0.999 + 0.001;
    }
    let s = Runtime::stats().since(&before);
    assert!(s.flushes.threshold >= 2, "{s:?}");
    assert_eq!(s.inline_runs, 0, "{s:?}");
    // Once that work is done, the next step's read is small and runs inline.
    Runtime::execute();
    let before = Runtime::stats();
    x = &x * 0.999 + 0.001;
    let out = x.to_vec().unwrap();
    let s = Runtime::stats().since(&before);
    assert_eq!(s.inline_runs, u64::from(inline_possible()), "{s:?}");
    for (o, x0) in out.iter().zip(&x0) {
        let mut want = *x0;
        for _ in 0..steps + 1 {
            want = want * 0.999 + 0.001;
        }
        assert!((o - want).abs() <= 1e-12, "{o} vs {want}");
    }
}
