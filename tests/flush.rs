//! The flush policy: each reason (read, queue threshold, non-fusible op into an empty queue, hint,
//! execute, block end) triggers a flush and is counted; results stay correct.
//! Stats are process-wide, so the tests in this file run one at a time.

mod common;

use arrayflow::{Array, Runtime};
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn data(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 / 250.0 - 2.0)
        .collect()
}

#[test]
fn a_read_flushes_once_and_nothing_runs_before_it() {
    let _g = SERIAL.lock();
    Runtime::execute();
    let v = data(1000);
    let a = Array::from_slice(&v, &[1000]);
    let before = Runtime::stats();
    let y = (&a * 2.0).sin();
    let mid = Runtime::stats().since(&before);
    assert_eq!(mid.flushes.total(), 0, "recording runs nothing");
    assert_eq!(mid.kernels_launched, 0);
    let out = y.to_vec().unwrap();
    let s = Runtime::stats().since(&before);
    assert_eq!(s.flushes.read, 1);
    for (o, x) in out.iter().zip(&v) {
        // Exact on the CPU (one libm); within the device bound on a GPU executor.
        let want = (x * 2.0).sin();
        assert!(common::same_on_executor(*o, want, false), "{o} vs {want}");
    }
}

#[test]
fn the_queue_threshold_flushes_long_loops() {
    let _g = SERIAL.lock();
    Runtime::execute();
    let threshold = Runtime::config().queue_threshold;
    let v = data(64);
    let mut x = Array::from_slice(&v, &[64]);
    let before = Runtime::stats();
    let steps = 3 * threshold;
    for _ in 0..steps {
        x = &x * 0.999 + 0.001;
    }
    let s = Runtime::stats().since(&before);
    assert!(s.flushes.threshold >= 2, "{s:?}");
    let out = x.to_vec().unwrap();
    for (o, x0) in out.iter().zip(&v) {
        let mut want = *x0;
        for _ in 0..steps {
            want = want * 0.999 + 0.001;
        }
        assert!((o - want).abs() <= 1e-12, "{o} vs {want}");
    }
}

#[test]
fn a_block_defers_the_threshold_until_its_end() {
    let _g = SERIAL.lock();
    Runtime::execute();
    let threshold = Runtime::config().queue_threshold;
    let mut x = Array::from_slice(&data(16), &[16]);
    let before = Runtime::stats();
    Runtime::begin_block();
    for _ in 0..(threshold + 10) {
        x = &x + 1.0;
    }
    assert_eq!(Runtime::stats().since(&before).flushes.threshold, 0);
    Runtime::end_block().unwrap();
    let s = Runtime::stats().since(&before);
    assert_eq!(s.flushes.block_end, 1, "{s:?}");
    assert_eq!(
        s.kernels_generated, 1,
        "the whole block fused into one kernel: {s:?}"
    );
    let out = x.to_vec().unwrap();
    for (o, x0) in out.iter().zip(data(16)) {
        let want = (0..threshold + 10).fold(x0, |x, _| x + 1.0);
        assert_eq!(*o, want);
    }
    let err = Runtime::end_block().unwrap_err();
    assert!(err.to_string().contains("tests/flush.rs"), "{err}");
}

#[test]
fn non_fusible_into_empty_queue_hint_and_execute_each_flush() {
    let _g = SERIAL.lock();
    Runtime::execute();
    let a = Array::from_slice(&data(36), &[6, 6]);
    let before = Runtime::stats();
    let p = a.matmul(&a);
    assert_eq!(Runtime::stats().since(&before).flushes.non_fusible, 1);
    let q = &p + 1.0;
    q.hint_read();
    assert_eq!(Runtime::stats().since(&before).flushes.hint, 1);
    let r = &q * 2.0;
    Runtime::execute();
    let s = Runtime::stats().since(&before);
    assert_eq!(s.flushes.execute, 1);
    assert_eq!(s.flushes.read, 0);
    assert_eq!(s.kernels_launched + s.intrinsics_launched, 3);
    let av = data(36);
    let out = r.to_vec().unwrap();
    for i in 0..6 {
        for j in 0..6 {
            let dot: f64 = (0..6).map(|k| av[i * 6 + k] * av[k * 6 + j]).sum();
            assert!((out[i * 6 + j] - (dot + 1.0) * 2.0).abs() < 1e-12);
        }
    }
}
