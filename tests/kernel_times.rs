//! Kernel timing mode (`ARRAYFLOW_KERNEL_TIMES=1`, `exec/gpu/timing.rs`): on a device executor
//! every kernel launch is timed and reported by `Runtime::take_kernel_times` under its label,
//! with the values unchanged; on the CPU executor the list is empty. This binary turns the mode
//! on for its own process before the runtime starts (one test, so nothing else races it).

mod common;

use arrayflow::{Array, Runtime};

#[test]
fn every_device_launch_is_timed_and_values_are_unchanged() {
    // SAFETY: the only test of this binary, before any thread of the runtime exists.
    unsafe { std::env::set_var("ARRAYFLOW_KERNEL_TIMES", "1") };
    let n = 5000;
    let x = common::rand_f32(&mut common::rng(3), n, -10.0, 10.0);
    let a = Array::from_slice(&x, &[n]);
    let _ = Runtime::take_kernel_times();
    let before = Runtime::stats();
    // Exact in f32 on every executor (the product is exact, one rounding).
    let y = (&a * 2.0 + 1.0).abs().sort_axis(0);
    let got = y.to_vec().expect("read");
    let mut want: Vec<f32> = x.iter().map(|v| (v * 2.0 + 1.0).abs()).collect();
    want.sort_by(f32::total_cmp);
    assert_eq!(got, want);
    let launched = Runtime::stats().since(&before).device.kernels;
    let times = Runtime::take_kernel_times();
    if !common::any_device() {
        assert!(times.is_empty(), "no device, no kernel times: {times:?}");
        return;
    }
    if !common::on_device() {
        return; // several devices: the launches below are spread over them
    }
    // One fused kernel, then the radix sort's passes: init, and per key byte (4) a histogram,
    // its scan and a scatter.
    let launches = |entry: &str| -> u64 {
        times
            .iter()
            .filter(|t| t.name.split(' ').next() == Some(entry))
            .map(|t| t.launches)
            .sum()
    };
    assert_eq!(launches("af_kernel"), 1, "{times:?}");
    assert_eq!(launches("af_init"), 1, "{times:?}");
    for pass in ["af_hist", "af_scan_top", "af_scatter"] {
        assert_eq!(launches(pass), 4, "{pass}: {times:?}");
    }
    let timed: u64 = times.iter().map(|t| t.launches).sum();
    assert_eq!(timed, 14, "nothing else timed: {times:?}");
    assert!(launched >= 2, "{launched} programs");
    assert!(times.windows(2).all(|w| w[0].device_ns >= w[1].device_ns));
    assert!(Runtime::take_kernel_times().is_empty(), "taken once");
}
