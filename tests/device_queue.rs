//! The device's queue kept full: flushes enqueued back to back without a wait, on whatever
//! executor `ARRAYFLOW_DEVICE` picks (CI runs this file once per executor), with the runtime's
//! threads spinning as they do on a GPU host, so the device executor watches its own completions,
//! and with the wgpu executor holding new work back while a submission runs
//! (`DeviceLimits::wgpu_hold` 1 unless `ARRAYFLOW_WGPU_HOLD` says otherwise), to submit it together with what follows. Each checked flush reads a
//! fresh input, uploaded into the memory of a result dropped while its flush was queued: every
//! result must still come from its own input. (A build whose wgpu uploads went ahead of held work
//! failed here in 5 runs of 5 on lavapipe; the upload path is `WgpuApi::upload`.)

mod common;

use arrayflow::{Array, Backend, DeviceLimits, Runtime};
use common::*;

/// Rounds of three functions in the long flush (each round shrinks the errors before it).
const ROUNDS: usize = 8;

/// Flush `k` on input `x`, started without a wait. Transcendental functions make its kernel long
/// on a CPU-backed device too, so the queue holds several flushes while the next ones are
/// recorded. (The tolerances below cover their 32 ulp, compounded through the chain.)
fn short(x: &Array<f32>, k: usize) -> Array<f32> {
    let t = x.sin() * x.exp() + x.cos() * x.ln();
    let y = ((t.sin() * t.cos().exp() + (k as f32 + 3.0)).sqrt() - x).abs();
    y.hint_read();
    y
}

#[test]
fn back_to_back_flushes_keep_their_inputs() {
    // The wgpu executor holds work back from one submission in flight (on a CPU-backed device
    // this host seldom gets two ahead). `ARRAYFLOW_WGPU_HOLD` set by the caller wins.
    let env = DeviceLimits::from_env();
    let wgpu_hold = env.wgpu_hold.or(Some(1));
    Runtime::builder()
        .device_limits(DeviceLimits {
            spin: Some(std::time::Duration::from_millis(2)),
            wgpu_hold,
            ..env
        })
        .start()
        .expect("the runtime starts");
    println!("executor: {}", Runtime::executor());
    // Smaller under comparison mode, which interprets every op again (with its conditioning
    // probes) and took six minutes over the full sizes; the queue's behaviour is the same.
    let small = comparison_mode();
    let (n, flushes) = (if small { 1 << 12 } else { 1 << 17 }, 32u32);
    let long_n = if small { 1 << 14 } else { 1 << 21 };
    let inputs: Vec<Vec<f32>> = (0..flushes)
        .map(|k| rand_f32(&mut rng(k as u64), n, 0.5, 1.5))
        .collect();
    // The flushes' program, compiled before the timing matters (a trace-cache hit from then on).
    short(&Array::from_vec(inputs[0].clone(), &[n]), 0)
        .eval()
        .unwrap();
    let before = Runtime::stats();
    // A long first flush keeps the device busy while the others are recorded.
    let long_input = rand_f32(&mut rng(99), long_n, 0.5, 1.5);
    let mut long = Array::from_vec(long_input.clone(), &[long_n]);
    for _ in 0..ROUNDS {
        long = ((long.sin() + long.cos()) * 0.5 + 1.0).ln() + 1.0;
    }
    long.hint_read();
    // Before each flush, a flush on a device-resident array runs and its result is dropped at
    // once: the device has its program, so the result goes straight back to the device's pool
    // while that flush is queued (held back, while the long one runs), and the next flush's input
    // is uploaded into it. An upload that overtook the queued flush would have its data
    // overwritten by the dropped result, and the next result would show it.
    let w = Array::from_vec(inputs[0].clone(), &[n]) * 2.0;
    w.eval().unwrap();
    let mut results = Vec::new();
    for (k, v) in inputs.iter().enumerate() {
        drop(short(&w, k));
        let x = Array::from_vec(v.clone(), &[n]);
        results.push((k, short(&x, k)));
    }
    for (k, y) in results {
        let v = &inputs[k];
        let got = y.to_vec().unwrap();
        for (i, (&g, &x)) in got.iter().zip(v).enumerate() {
            let x = x as f64;
            let t = x.sin() * x.exp() + x.cos() * x.ln();
            let w = ((t.sin() * t.cos().exp() + (k as f64 + 3.0)).sqrt() - x).abs();
            assert!(
                (g as f64 - w).abs() <= 1e-4 * w.max(1.0),
                "flush {k} [{i}]: {g}, expected {w}"
            );
        }
    }
    let got = long.to_vec().unwrap();
    for (i, (&g, &x)) in got.iter().zip(&long_input).enumerate() {
        let w = (0..ROUNDS).fold(x as f64, |z, _| {
            ((z.sin() + z.cos()) * 0.5 + 1.0).ln() + 1.0
        });
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.max(1.0),
            "the long flush [{i}]: {g}, expected {w}"
        );
    }
    let st = Runtime::stats().since(&before);
    println!(
        "{} flushes: {} device tasks, {} submissions",
        2 * flushes + 1,
        st.device.tasks,
        st.device.submissions
    );
    // Each flush's task, then each read's download, is a submission unless held back (as the
    // short flushes are, recorded while the long one runs).
    let hold = wgpu_hold.is_some_and(|h| h > 0);
    let reads = u64::from(flushes) + 1;
    if Runtime::backend() == Backend::Wgpu && hold {
        assert!(
            st.device.submissions < st.device.tasks + reads,
            "the wgpu executor submitted each of {} flushes and {reads} reads on its own ({} \
             submissions): it should hold work back while submissions run",
            st.device.tasks,
            st.device.submissions
        );
    }
}
