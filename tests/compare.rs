//! Comparison mode: reference results from the sequential interpreter agree with every op on both
//! CPU tiers within the documented tolerances; a deliberately wrong kernel (test-only fault
//! injection, planted by the tile VM and by the OpenCL and WGSL renderers, so these tests run on
//! every executor) is caught in both modes, naming the faulty op and this file's line, and the
//! mismatch a read reports names the first diverging op with no set-up beyond comparison mode
//! (on a device, whose counters show the faulty kernel ran there, not on the CPU); switching the
//! mode on mid-run starts checking there, and off stops it. Tests run one at a time.

mod common;

use arrayflow::debug::inject_fault;
use arrayflow::ir::BinaryOp;
use arrayflow::{
    Array, CompareConfig, CompareMode, ErrorKind, MismatchAction, NativeMode, Rng, Runtime,
};
use common::kernels_ran_on_the_device;
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// A workload touching every kind of op: element-wise, broadcasting, views, reductions along
/// axes, random numbers, matmul, gather, concat, casts.
fn workload(n: usize) -> Vec<f64> {
    let a = Array::from_slice(&data(n * 8, 1), &[n, 8]);
    let b = Array::from_slice(&data(8, 2), &[8]);
    let mut rng = Rng::new(3);
    let u = rng.uniform::<f32>(&[n, 8]);
    let t = ((&a * &b + 1.0).abs().sqrt() - u.exp()).tanh() * 3.0;
    let s = t.sum_axis(1);
    let m = t.transpose().slice(&[(0..4).into()]).max_axis(1);
    let p = a
        .slice(&[(0..8).into()])
        .matmul(&t.slice(&[(0..8).into()]).transpose());
    let idx = Array::from_vec(vec![3u32, 0, 1], &[3]);
    let g = t.gather(&idx, 0).cast::<f64>().mean();
    let c = Array::concat(&[&b, &b.sin()], 0).norm_l2();
    let k = t.gt(0.5).count();
    let mut out: Vec<f64> = s.to_vec().unwrap().iter().map(|&x| x as f64).collect();
    out.extend(m.to_vec().unwrap().iter().map(|&x| x as f64));
    out.extend(p.to_vec().unwrap().iter().map(|&x| x as f64));
    out.push(g.item().unwrap());
    out.push(c.item().unwrap() as f64);
    out.push(k.item().unwrap() as f64);
    out
}

/// Whether the kernels run on the CPU: the tile VM plants the fault in the first element of each
/// tile, the OpenCL and WGSL renderers in every element.
fn on_cpu() -> bool {
    arrayflow::Runtime::backend() == arrayflow::Backend::Cpu
}

/// A test with fault injection: it holds the test lock with the native tier off (the CPU's hook
/// reaches tile-VM kernels only) and no mismatches recorded; when it ends, also by a failed
/// assertion, the fault, comparison mode and native tier are reset for the next test.
struct FaultScope {
    _lock: parking_lot::MutexGuard<'static, ()>,
    native: NativeMode,
}

/// The scope (always `Some`: every executor plants faults).
fn fault_scope() -> Option<FaultScope> {
    let lock = SERIAL.lock();
    let native = Runtime::native();
    Runtime::set_native(NativeMode::Off);
    Runtime::clear_mismatches();
    Some(FaultScope {
        _lock: lock,
        native,
    })
}

impl Drop for FaultScope {
    fn drop(&mut self) {
        inject_fault(None);
        Runtime::set_compare(None);
        Runtime::set_native(self.native);
    }
}

/// `faulty_chain`'s inputs: `a` non-negative (its sqrt is defined) from `seed`, `b` from
/// `seed + 1`, `n` elements each.
fn chain_inputs(n: usize, seed: u64) -> (Array<f32>, Array<f32>) {
    let a: Vec<f32> = data(n, seed).iter().map(|x| x.abs()).collect();
    (
        Array::from_slice(&a, &[n]),
        Array::from_slice(&data(n, seed + 1), &[n]),
    )
}

#[test]
fn every_op_agrees_with_its_reference_on_both_tiers() {
    let _g = SERIAL.lock();
    let mode_before = Runtime::native();
    for native in [NativeMode::Off, NativeMode::Always] {
        Runtime::set_native(native);
        for mode in [CompareMode::AfterComputation, CompareMode::OnCopyOut] {
            Runtime::clear_mismatches();
            Runtime::set_compare(Some(CompareConfig::new(mode).action(MismatchAction::Error)));
            let out = workload(64);
            let ms = Runtime::mismatches();
            Runtime::set_compare(None);
            assert!(
                ms.is_empty(),
                "{native:?} {mode:?}: {:?}",
                ms.first().map(|m| m.to_string())
            );
            assert_eq!(out.len(), 64 + 4 + 64 + 3);
        }
    }
    Runtime::set_native(mode_before);
}

#[test]
fn the_reference_is_the_sequential_interpreters_value() {
    let _g = SERIAL.lock();
    Runtime::set_compare(Some(CompareConfig::new(CompareMode::OnCopyOut)));
    let v = data(100, 5);
    let a = Array::from_slice(&v, &[100]);
    let y = (&a * 2.0 + 1.0).exp().sum();
    let r = y.reference().unwrap();
    let want: f64 = v.iter().map(|&x| (x * 2.0 + 1.0).exp() as f64).sum();
    assert!(
        (r[0] as f64 - want).abs() <= 1e-5 * want,
        "{} vs {want}",
        r[0]
    );
    assert!((y.item().unwrap() as f64 - want).abs() <= 1e-5 * want);
    Runtime::set_compare(None);
    let z = &a + 1.0;
    assert_eq!(
        z.reference().unwrap_err().kind(),
        ErrorKind::Argument,
        "no reference when off"
    );
}

/// The faulty op is recorded between `l0` and `l1` in the caller.
fn faulty_chain(a: &Array<f32>, b: &Array<f32>) -> (Array<f32>, u32, u32) {
    let t = (a * 2.0).sqrt();
    let l0 = line!();
    let u = &t + b; // the injected fault: `add`
    let l1 = line!();
    ((u.abs() * 0.5), l0, l1)
}

fn line_of(msg: &str) -> u32 {
    msg.split("tests/compare.rs:")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|l| l.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_wrong_kernel_is_caught_after_computation_naming_the_op() {
    let Some(_scope) = fault_scope() else { return };
    let (a, b) = chain_inputs(3000, 6);
    Runtime::set_compare(Some(CompareConfig::new(CompareMode::AfterComputation)));
    inject_fault(Some(BinaryOp::Add));
    let (y, l0, l1) = faulty_chain(&a, &b);
    let _ = y.to_vec().unwrap(); // action Log: the read succeeds
    let ms = Runtime::mismatches();
    let first = ms.first().expect("the fault is caught");
    assert_eq!(first.op, "add", "the first op that diverged: {first}");
    let line = first.site.line();
    assert!(l0 < line && line < l1, "{first}");
    assert_eq!(first.element, 0);
    assert!(first.error > first.allowed);
    // Everything computed from it diverges too, reported after it.
    assert!(ms.iter().skip(1).all(|m| m.order > first.order));
}

#[test]
fn a_wrong_kernel_is_caught_on_copy_out_before_the_data_is_handed_over() {
    let Some(_scope) = fault_scope() else { return };
    let (a, b) = chain_inputs(3000, 8);
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Error),
    ));
    inject_fault(Some(BinaryOp::Add));
    let (y, _, _) = faulty_chain(&a, &b);
    let r0 = line!();
    let err = y.to_vec().unwrap_err();
    let r1 = line!();
    assert_eq!(err.kind(), ErrorKind::Mismatch);
    let msg = err.to_string();
    let read_line = line_of(&msg);
    assert!(
        r0 < read_line && read_line < r1,
        "the error names the read: {msg}"
    );
    assert!(
        msg.contains("`mul`") || msg.contains("`abs`"),
        "names the array's op: {msg}"
    );
    assert!(Runtime::mismatches().len() == 1);
}

#[test]
fn switching_on_mid_run_checks_from_there_and_off_stops() {
    let Some(_scope) = fault_scope() else { return };
    let (a, b) = chain_inputs(2000, 10);
    inject_fault(Some(BinaryOp::Add));
    // Off: nothing is checked, the wrong result goes through.
    let (y, _, _) = faulty_chain(&a, &b);
    let _ = y.to_vec().unwrap();
    assert!(Runtime::mismatches().is_empty());
    // On mid-run: the next ops are checked, from the off-mode result `y` as input.
    Runtime::set_compare(Some(CompareConfig::new(CompareMode::AfterComputation)));
    let z = &y + 1.0;
    let _ = z.to_vec().unwrap();
    let on = Runtime::mismatches();
    // Off again: nothing more.
    Runtime::set_compare(None);
    let w = &y + 2.0;
    let _ = w.to_vec().unwrap();
    let after = Runtime::mismatches();
    assert_eq!(on.len(), 1, "{on:?}");
    assert_eq!(on[0].op, "add");
    assert_eq!(after.len(), 1);
}

#[test]
fn abort_panics_at_the_read_and_log_writes_the_file() {
    let Some(_scope) = fault_scope() else { return };
    let (a, b) = chain_inputs(500, 12);
    inject_fault(Some(BinaryOp::Add));
    // Abort: the read panics with the report.
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Abort),
    ));
    let (y, _, _) = faulty_chain(&a, &b);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| y.to_vec()));
    let msg = r
        .unwrap_err()
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        msg.contains("comparison mode") && msg.contains("tests/compare.rs:"),
        "{msg}"
    );
    // Log: the read goes through; the mismatch is in the file and the summary.
    let log = std::env::temp_dir().join(format!("arrayflow-compare-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    Runtime::clear_mismatches();
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::AfterComputation).log_file(&log),
    ));
    let (y, l0, l1) = faulty_chain(&a, &b);
    assert_eq!(y.to_vec().unwrap().len(), 500);
    let summary = Runtime::comparison_summary();
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(
        text.contains("`add` differs from its reference at element 0"),
        "{text}"
    );
    let add = summary
        .iter()
        .find(|s| s.op == "add")
        .expect("add was checked");
    assert!(l0 < add.site.line() && add.site.line() < l1);
    assert_eq!((add.checked, add.mismatches), (500, 1));
    assert!(add.max_relative_error > 0.1);
    let sqrt = summary
        .iter()
        .find(|s| s.op == "sqrt")
        .expect("sqrt was checked");
    assert_eq!(sqrt.mismatches, 0);
    if on_cpu() {
        assert!(
            sqrt.max_relative_error == 0.0,
            "the tile VM and the interpreter share primitives: {sqrt:?}"
        );
    } else {
        // A device's sqrt: within OpenCL's 3 ulp of f32.
        assert!(sqrt.max_relative_error <= 4e-7, "{sqrt:?}");
    }
}

#[test]
fn a_replayed_code_reuse_section_is_checked_too() {
    let Some(_scope) = fault_scope() else { return };
    let (a, b) = chain_inputs(800, 14);
    let run = || {
        Runtime::reuse(&[&a, &b], &[], |ins| {
            let (y, _, _) = faulty_chain(&ins[0], &ins[1]);
            vec![y]
        })
        .unwrap()
        .remove(0)
    };
    // The replay check would record the second call again (debug builds): this test is about a
    // true replay.
    Runtime::set_reuse_check(0);
    Runtime::clear_mismatches();
    Runtime::set_compare(Some(CompareConfig::new(CompareMode::AfterComputation)));
    let first = run().to_vec().unwrap(); // recorded: closure runs, every op has a reference
    let before = Runtime::stats();
    inject_fault(Some(BinaryOp::Add));
    let replayed = run(); // replayed: the closure does not run
    let _ = replayed.to_vec().unwrap();
    let ms = Runtime::mismatches();
    assert_eq!(
        Runtime::stats().since(&before).macros.hits,
        1,
        "the second call replays"
    );
    // The replayed output (the section's last op, `mul`) differs from the reference that the
    // recorded ops give for these inputs.
    let m = ms.first().expect("the faulty replay is caught");
    assert_eq!(m.op, "mul", "{m}");
    assert!(m.to_string().contains("tests/compare.rs:"), "{m}");
    // The reference of the replayed output equals the correct (recorded, fault-free) result.
    assert_eq!(replayed.reference().unwrap(), first);
}

/// Comparison on copy-out with errors, for the conditioning tests.
fn copy_out_errors() {
    Runtime::clear_mismatches();
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Error),
    ));
}

/// GitHub issue 18 item 7: an f32 `a.matmul(&a.transpose())` whose products (about ±6.6e15)
/// cancel rounds far from the f64 reference (within f32's accumulation error); the allowance
/// scales with the sum of the products' magnitudes, so it is no mismatch.
#[test]
fn a_cancelling_matmul_is_not_a_mismatch() {
    let _g = SERIAL.lock();
    copy_out_errors();
    // s^2 (6.6e15) is exact in f64 and below 2^53, so the f64 reference is exact; f32 loses the 3.
    let s = 81_234_568.0f32;
    let a = Array::from_slice(&[s, 1.0, s, s, 3.0, -s], &[2, 3]);
    let p = a.matmul(&a.transpose());
    let got = p.to_vec();
    let reference = p.reference().unwrap();
    Runtime::set_compare(None);
    let got = got.expect("a correct ill-conditioned matmul is no mismatch");
    assert!(
        Runtime::mismatches().is_empty(),
        "{:?}",
        Runtime::mismatches()
    );
    // The f64 oracle: element [0, 1] is s^2 + 3 - s^2 = 3 exactly.
    let (sd, want01) = (s as f64, 3.0f64);
    assert_eq!(reference[1] as f64, want01);
    // The optimised f32 result may be off by the products' rounding, but no more.
    let bound = 3.0 * f32::EPSILON as f64 * (2.0 * sd * sd + 3.0);
    assert!(
        (got[1] as f64 - want01).abs() <= bound,
        "{} vs {want01}",
        got[1]
    );
    println!(
        "matmul [0, 1]: optimised {}, reference {}",
        got[1], reference[1]
    );
}

/// GitHub issue 18 item 7: `x % d` amplifies a difference within `x`'s allowance (here `x` is a
/// dot product accumulated in f32 by the optimised path and in f64 by the reference: 2^24 + 1 - 1
/// rounds to 2^24 - 1 in f32 and is 2^24 in f64); the result steps by `d` and is no mismatch.
#[test]
fn mod_of_values_within_their_allowance_is_not_a_mismatch() {
    let _g = SERIAL.lock();
    copy_out_errors();
    let a = Array::from_slice(&[16_777_216.0f32, 1.0, -1.0], &[1, 3]);
    let ones = Array::<f32>::ones(&[3, 1]);
    let x = a.matmul(&ones);
    let m = &x % 2.0;
    let (gx, gm) = (x.to_vec(), m.to_vec());
    let (rx, rm) = (x.reference().unwrap(), m.reference().unwrap());
    Runtime::set_compare(None);
    let (gx, gm) = (
        gx.unwrap(),
        gm.expect("mod of an ill-conditioned input is no mismatch"),
    );
    assert!(
        Runtime::mismatches().is_empty(),
        "{:?}",
        Runtime::mismatches()
    );
    // The oracle: exactly 2^24 in f64, so 0 after `% 2`.
    assert_eq!((rx[0], rm[0]), (16_777_216.0, 0.0));
    // Whichever way the optimised path rounded, `% 2` is consistent with it.
    assert_eq!(gm[0], gx[0] % 2.0, "optimised x {}", gx[0]);
    println!(
        "x: optimised {}, reference {}; x % 2: {} vs {}",
        gx[0], rx[0], gm[0], rm[0]
    );
}

/// A wrong value in an ill-conditioned sum is still caught when its error is beyond the sum's
/// conditioned allowance (1e-5 of the terms' magnitudes): the injected fault doubles one term of
/// 1e8 in a sum that cancels to a few units.
///
/// The CPU's tile VM only: it corrupts one element per tile (the term of 1e8), where the device
/// renderers corrupt every term alike (`2x + 1`), which cancels in this sum as the terms do.
#[test]
fn a_wrong_ill_conditioned_sum_is_still_caught() {
    if !on_cpu() {
        println!("CPU only: the device renderers corrupt every term, and the corruption cancels");
        return;
    }
    let Some(_scope) = fault_scope() else {
        return;
    };
    let n = 64;
    let mut v: Vec<f32> = data(n, 9);
    v[0] = 1e8;
    v[1] = -1e8;
    let a = Array::from_slice(&v, &[n]);
    let z = Array::<f32>::zeros(&[n]);
    copy_out_errors();
    // Correct first: the cancelling sum matches its reference.
    let ok = (&a + &z).sum().item();
    assert!(ok.is_ok(), "a correct cancelling sum: {ok:?}");
    inject_fault(Some(BinaryOp::Add));
    let l0 = line!();
    let s = (&a + &z).sum();
    let e = s.item().expect_err("a sum off by 1e8 is a mismatch");
    inject_fault(None);
    Runtime::set_compare(None);
    assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
    let ms = Runtime::mismatches();
    assert_eq!(ms.len(), 1, "{ms:?}");
    assert_eq!(ms[0].op, "sum", "{}", ms[0]);
    assert_eq!(ms[0].site.line(), l0 + 1, "{}", ms[0]);
    // The allowance is the conditioned one: 1e-5 of the terms' magnitudes (about 2e8), far
    // above the old 1e-5 of the result, and the error far above it.
    let mags: f64 = v.iter().map(|&x| (x as f64).abs()).sum();
    assert!(
        (ms[0].allowed - (1e-5 * mags + 1e-6)).abs() <= 1e-9 * mags,
        "{}",
        ms[0]
    );
    assert!(ms[0].error > 1e7, "{}", ms[0]);
}

/// Comparison mode narrows a mismatch by itself (`CompareConfig::narrow`, on by default): the
/// error a read returns names the first diverging op and its line, with nothing else set up
/// (no `Runtime::set_stepping`), on whichever executor runs the kernel; with narrowing off it
/// names only the mismatch.
#[test]
fn a_mismatch_names_the_first_diverging_op_with_no_set_up() {
    let Some(_scope) = fault_scope() else { return };
    let n = 1500;
    let (xa, xb) = (data(n, 21), data(n, 22));
    let (a, b) = (Array::from_slice(&xa, &[n]), Array::from_slice(&xb, &[n]));
    let chain = |a: &Array<f32>, b: &Array<f32>| {
        let t = (a + b).tanh();
        let l_mul = line!() + 1;
        let u = &t * a; // the injected fault: `mul`, in the middle of one fused kernel
        let l_sub = line!() + 1;
        (u.exp() - b, l_mul, l_sub)
    };
    for narrow in [true, false] {
        Runtime::clear_mismatches();
        let config = CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Error);
        assert_eq!(config.narrow, arrayflow::debug::DEFAULT_NARROW_KERNELS);
        Runtime::set_compare(Some(if narrow { config } else { config.narrow(0) }));
        inject_fault(Some(BinaryOp::Mul));
        let (y, l_mul, l_sub) = chain(&a, &b);
        // On a device, the faulty kernel runs there (its renderer planted the fault): computed
        // first with `eval`, apart from the read's check and narrowing.
        let before = Runtime::stats();
        y.eval().unwrap();
        kernels_ran_on_the_device(&before);
        let e = y.to_vec().unwrap_err();
        inject_fault(None);
        assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("tests/compare.rs:{l_sub}:")), "{msg}");
        let ds = Runtime::divergences().unwrap();
        Runtime::set_compare(None);
        if !narrow {
            assert!(!msg.contains("first diverging op"), "{msg}");
            assert!(ds.is_empty(), "nothing kept, nothing narrowed: {ds:#?}");
            continue;
        }
        let (_, after) = msg
            .split_once("first diverging op: ")
            .unwrap_or_else(|| panic!("no diverging op in: {msg}"));
        assert!(
            after.starts_with(&format!("tests/compare.rs:{l_mul}:")),
            "{msg}"
        );
        assert!(
            after.contains("`mul` is the first op that differs"),
            "{msg}"
        );
        let d = ds.first().expect("the divergence is kept");
        assert_eq!((d.op.as_str(), d.site.line()), ("mul", l_mul), "{d}");
        // Both values against an f64 oracle: the reference tanh(a + b) * a, the optimised value
        // the planted `2x + 1` of it.
        let j = d.element;
        let oracle = (xa[j] as f64 + xb[j] as f64).tanh() * xa[j] as f64;
        assert!(
            (d.reference - oracle).abs() <= 1e-6 * (1.0 + oracle.abs()),
            "{d}"
        );
        assert!(
            (d.optimised - (2.0 * oracle + 1.0)).abs() <= 1e-5 * (1.0 + oracle.abs()),
            "{d}"
        );
        // The element is the first that differs: the tile VM plants the fault at the first
        // element of a tile, the renderers everywhere; element 0 is both.
        assert_eq!(j, 0, "{d}");
    }
}
