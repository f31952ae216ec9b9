//! The profiler's sampling on every executor (`src/profile/mod.rs`, "Sampling"): with the first
//! 2 launches of each kernel timed, then 1 in 3, and 1 array operation in 3 timed per thread
//! (`Sampling::set`; the binary arms the device timers with `ARRAYFLOW_PROFILE_SAMPLE=all`),
//! the compute report still ranks three call sites of known, different cost in their order,
//! every operation and launch is still counted, the sites' estimated times still add up to the
//! kernels' time, and the sampled per-site times agree with an unsampled run of the same
//! program: shares of the estimated time within 0.2, times within a factor of 3 (of 5 runs
//! each, alternating). CI machines are shared and lavapipe's times varied 2.5x between
//! runs under load, so the tolerance covers run-to-run noise, not a bias: sampling estimates
//! each untimed launch at the mean of its kernel's timed ones and each site's recording time at
//! the mean of its timed operations. Results are an f64 oracle's either way.

mod common;

use arrayflow::profile::{Sampling, db, report, schema::Run};
use arrayflow::{Array, Runtime};

/// Steps of the loop: each launches the two kernels once.
const STEPS: usize = 24;

/// Three call sites of known, different cost, each step: `cheap` (one add) feeding `heavy` (a
/// chain of square roots and exponentials) in one kernel, and `large`, a multiply on an array
/// 2048 times as large, in a kernel of its own. Returns the sites' `file:line`.
fn program(x: &[f32], xb: &[f32], want: &[Vec<f64>; 2]) -> [String; 3] {
    let a = Array::from_slice(x, &[x.len()]);
    let b = Array::from_slice(xb, &[xb.len()]);
    let l0 = line!();
    for _ in 0..STEPS {
        let cheap = &a + 1.0f32;
        let heavy = (((cheap.sqrt() + 1.0f32).exp().sqrt() + 1.0f32).exp().sqrt() + 1.0f32).exp();
        let large = &b * 3.0f32;
        let got = [
            heavy.to_vec().expect("heavy"),
            large.to_vec().expect("large"),
        ];
        for (g, w) in got.iter().zip(want) {
            for (i, (&g, &w)) in g.iter().zip(w).enumerate() {
                assert!(((g as f64) - w).abs() <= 1e-5 * w.abs(), "{i}: {g} vs {w}");
            }
        }
    }
    [l0 + 2, l0 + 3, l0 + 4].map(|l| format!("{}:{l}", file!()))
}

fn oracle(x: &[f32], xb: &[f32]) -> [Vec<f64>; 2] {
    let h = x
        .iter()
        .map(|&v| {
            let c = v as f64 + 1.0;
            (((c.sqrt() + 1.0).exp().sqrt() + 1.0).exp().sqrt() + 1.0).exp()
        })
        .collect();
    [h, xb.iter().map(|&v| v as f64 * 3.0).collect()]
}

/// One profiled run of [`program`] under `sampling`.
fn profiled(
    sampling: Sampling,
    x: &[f32],
    xb: &[f32],
    want: &[Vec<f64>; 2],
    k: usize,
) -> (Run, [String; 3]) {
    Sampling::set(Some(sampling));
    let dir = std::env::temp_dir().join(format!("af-call-sampling-{}-{k}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let guard = Runtime::profile(&dir).expect("start");
    let sites = program(x, xb, want);
    guard.finish().expect("written");
    let run = db::read(&dir).expect("read");
    let _ = std::fs::remove_dir_all(&dir);
    (run, sites)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn sampled_reports_rank_sites_and_agree_with_an_unsampled_run() {
    // Comparison mode interprets every op again and checks every read (here 168 reads of half a
    // million elements: 100 s of CI's tile VM stage), and the times it profiles are mostly its
    // own: the test measures the runtime as programs use it, in every other stage.
    if common::comparison_mode() {
        eprintln!("call sampling: not run under comparison mode");
        return;
    }
    // SAFETY: the only test of this binary, before any thread of the runtime exists.
    unsafe { std::env::set_var("ARRAYFLOW_PROFILE_SAMPLE", "all") };
    use arrayflow::exec::cpu::native::{self, NativeMode};
    // Kernels compiled before they first run (unless the tile VM is asked for): every run times
    // the same code.
    if native::mode() == NativeMode::Auto {
        native::set_mode(NativeMode::Always);
    }
    let mut r = common::rng(0x5a);
    let (n, big) = (1 << 8, 1 << 19);
    let x = common::rand_f32(&mut r, n, 0.5, 2.0);
    let xb = common::rand_f32(&mut r, big, -4.0, 4.0);
    let want = oracle(&x, &xb);
    // Warm: kernels compiled (natively where the mode says so) before any run is timed.
    program(&x, &xb, &want);
    let sampled = Sampling { first: 2, every: 3 };
    let (mut est, mut rec) = (vec![Vec::new(); 2], vec![Vec::new(); 2]);
    // Five runs of each mode, alternating (a loaded machine stalls some runs; see below).
    for k in 0..10 {
        let (mode, s) = if k % 2 == 0 {
            (0, Sampling::ALL)
        } else {
            (1, sampled)
        };
        let (run, sites) = profiled(s, &x, &xb, &want, k);
        let listing = report::compute_report(&run);
        let costs = report::site_costs(&run);
        let cost = |s: &str| {
            costs
                .iter()
                .find(|c| c.site == s)
                .unwrap_or_else(|| panic!("{s} missing from\n{listing}"))
                .clone()
        };
        let rank = |s: &str| costs.iter().position(|c| c.site == s).expect("ranked");
        let [cheap, heavy, large] = &sites;
        assert!(
            rank(large) < rank(heavy) && rank(heavy) < rank(cheap),
            "sampling {s:?}: ranking\n{listing}"
        );
        // Every operation and launch counted, sampled or not; the estimates add up.
        for site in &sites {
            assert_eq!(cost(site).api_calls % STEPS as u64, 0, "{site}\n{listing}");
            assert!(cost(site).api_calls >= STEPS as u64, "{site}\n{listing}");
        }
        let measured: u64 = run.cks.iter().map(|c| c.device_ns).sum();
        let total: f64 = costs.iter().map(|c| c.est_ns).sum();
        assert!((total - measured as f64).abs() <= 1e-6 * measured as f64 + 1.0);
        for ck in run
            .cks
            .iter()
            .filter(|c| c.sites.iter().any(|w| sites.contains(&w.site)))
        {
            assert_eq!(ck.launches, STEPS as u64, "{ck:?}");
            assert_eq!(ck.measured + ck.estimated, ck.launches, "{ck:?}");
            // Timed: the first 2, then launches 2, 5, 8, ... (1 in 3); a device without timers
            // times every launch on the host.
            let untimed_device = ck.executor > 0 && ck.time_source == "host";
            let timed = if mode == 0 || untimed_device {
                STEPS as u64
            } else {
                2 + (STEPS as u64 - 2).div_ceil(3)
            };
            assert_eq!(ck.measured, timed, "sampling {s:?}: {ck:?}");
            let of = |src: &str| {
                run.launches
                    .iter()
                    .filter(|l| l.kernel == ck.kernel && l.time_source == src)
                    .count() as u64
            };
            assert_eq!(of("estimated"), ck.estimated, "{ck:?}");
            let sum: u64 = run
                .launches
                .iter()
                .filter(|l| l.kernel == ck.kernel)
                .map(|l| l.dur_ns)
                .sum();
            assert_eq!(sum, ck.device_ns, "{ck:?}");
        }
        est[mode].push(sites.clone().map(|s| cost(&s).est_ns));
        rec[mode].push(sites.clone().map(|s| cost(&s).host_ns as f64));
    }
    Sampling::set(None);
    // Sampled against unsampled, per site: each site's share of the estimated time within 0.2
    // (medians of the runs' shares), its estimated time and its recording time within a factor
    // of 3 (the fastest run of each: other work on the machine stalls a run now and then, by
    // 10x in a loaded run of CI's queue, and the least disturbed run measures the code).
    let fastest = |m: usize, v: &[Vec<[f64; 3]>], i: usize| {
        v[m].iter().map(|e| e[i]).fold(f64::INFINITY, f64::min)
    };
    let share =
        |m: usize, i: usize| median(est[m].iter().map(|e| e[i] / (e[0] + e[1] + e[2])).collect());
    for i in 0..3 {
        let (full, part) = (share(0, i), share(1, i));
        assert!(
            (full - part).abs() <= 0.2,
            "site {i}: share sampled {part} vs unsampled {full} ({est:?})"
        );
        for (what, v) in [("estimated", &est), ("host", &rec)] {
            let (full, part) = (fastest(0, v, i), fastest(1, v, i));
            assert!(
                part > full / 3.0 && part < full * 3.0,
                "site {i}: sampled {what} time {part} ns vs unsampled {full} ns ({v:?})"
            );
        }
    }
}
