//! The profiler's sampling of device timings (`ARRAYFLOW_PROFILE_SAMPLE`, `src/profile/mod.rs`):
//! this binary asks for the first 2 launches of each kernel, then one in 4, which also arms the
//! device timers. One kernel launched 20 times: on the CPU executor and on a device executor with
//! timers 7 launches are timed (0, 1, then 2, 6, 10, 14, 18) and 13 estimated at the mean of those
//! timed before; on a device without timers every launch is timed on the host. Values are those
//! of an f64 oracle either way.

mod common;

use arrayflow::profile::{db, report};
use arrayflow::{Array, Runtime};
use std::time::Instant;

#[test]
fn untimed_launches_are_estimated_from_the_sampled_ones() {
    // SAFETY: the only test of this binary, before any thread of the runtime exists.
    unsafe { std::env::set_var("ARRAYFLOW_PROFILE_SAMPLE", "2/4") };
    let n = 1 << 16;
    let x = common::rand_f32(&mut common::rng(8), n, 0.5, 4.0);
    let a = Array::from_slice(&x, &[n]);
    let dir = std::env::temp_dir().join(format!("af-profile-sampling-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let guard = Runtime::profile(&dir).expect("start");
    let wall = Instant::now();
    let l = line!();
    for k in 0..20 {
        let y = (&a * 3.0f32).sqrt().to_vec().expect("read");
        for (i, (&g, &v)) in y.iter().zip(&x).enumerate() {
            let w = (v as f64 * 3.0).sqrt();
            assert!(((g as f64) - w).abs() <= 1e-6 * w, "{k}/{i}: {g} vs {w}");
        }
    }
    let wall_ns = wall.elapsed().as_nanos() as u64;
    let folder = guard.finish().expect("written");
    let run = db::read(&folder).expect("read");
    let site = format!("{}:{}", file!(), l + 2);
    let cks: Vec<_> = run
        .cks
        .iter()
        .filter(|c| c.sites.iter().any(|s| s.site == site))
        .collect();
    let listing = report::compute_report(&run);
    assert_eq!(cks.len(), 1, "one kernel:\n{listing}");
    let ck = cks[0];
    assert_eq!(ck.launches, 20, "{listing}");
    assert_eq!(ck.measured + ck.estimated, 20, "{ck:?}");
    assert!(ck.device_ns > 0 && ck.device_ns <= wall_ns, "{ck:?}");
    let device = common::on_device() && ck.executor > 0 && ck.time_source == "device";
    let sampled = device || ck.executor == 0;
    let (timed, estimated) = if sampled { (7, 13) } else { (20, 0) };
    assert_eq!((ck.measured, ck.estimated), (timed, estimated), "{ck:?}");
    let of = |src: &str| {
        run.launches
            .iter()
            .filter(|l| l.kernel == ck.kernel && l.time_source == src)
            .count() as u64
    };
    assert_eq!(of("estimated"), estimated, "{:?}", run.launches);
    assert!(
        run.launches
            .iter()
            .all(|l| l.dur_ns > 0 && l.dur_ns <= wall_ns)
    );
    if sampled {
        assert_eq!(of(if device { "device" } else { "host" }), timed);
        // A kernel's time is its launches' (each estimated one at the mean of the launches
        // timed before it, no longer than the host's view of it).
        let sum: u64 = run
            .launches
            .iter()
            .filter(|l| l.kernel == ck.kernel)
            .map(|l| l.dur_ns)
            .sum();
        assert_eq!(ck.device_ns, sum);
        assert!(
            run.meta.sampling.contains("then 1 in 4"),
            "{}",
            run.meta.sampling
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
