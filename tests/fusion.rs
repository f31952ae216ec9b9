//! Fusion and buffer behaviour, checked through `Runtime::stats()` and against plain-Rust oracles.
//! Stats are process-wide, so the tests in this file run one at a time.

use arrayflow::{Array, Rng, Runtime, Stats};
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn random(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    // A small LCG keeps this file independent of the runtime's own generator.
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

fn measure<R>(f: impl FnOnce() -> R) -> (R, Stats) {
    Runtime::execute();
    let before = Runtime::stats();
    let r = f();
    Runtime::execute();
    (r, Runtime::stats().since(&before))
}

fn chain_oracle(a: f32, b: f32) -> f32 {
    let (a, b) = (a as f64, b as f64);
    (((((a * b + 1.0).sqrt()) * a - b).abs()) * 0.5 + a) as f32
}

#[test]
fn eight_op_chain_is_one_kernel_without_temporaries() {
    let _g = SERIAL.lock();
    let n = 10_000;
    let (av, bv) = (random(n, 1, 0.1, 2.0), random(n, 2, 0.1, 2.0));
    let a = Array::from_slice(&av, &[n]);
    let b = Array::from_slice(&bv, &[n]);
    // Bound with `let` so every temporary of the expression is dropped before the read.
    let (y, s) = measure(|| {
        let y = ((((&a * &b + 1.0).sqrt()) * &a - &b).abs()) * 0.5 + &a;
        y.to_vec().unwrap()
    });
    assert_eq!(s.kernels_launched, 1, "{s:?}");
    assert_eq!(s.kernels_generated, 1);
    assert_eq!(s.temporaries, 0);
    assert_eq!(
        s.buffers_allocated + s.buffers_reused,
        1,
        "only the result gets a buffer: {s:?}"
    );
    assert_eq!(s.flushes.read, 1);
    for i in 0..n {
        let want = chain_oracle(av[i], bv[i]);
        assert!(
            (y[i] - want).abs() <= 2e-6 * want.abs().max(1.0),
            "{i}: {} vs {want}",
            y[i]
        );
    }
}

#[test]
fn chain_ending_in_a_reduction_is_one_kernel_plus_final_stage() {
    let _g = SERIAL.lock();
    let n = 50_000;
    let (av, bv) = (random(n, 3, -1.0, 1.0), random(n, 4, -1.0, 1.0));
    let a = Array::from_slice(&av, &[n]);
    let b = Array::from_slice(&bv, &[n]);
    let (total, s) = measure(|| {
        let total = ((&a * &b).exp() - 1.0).abs().sum();
        total.item().unwrap()
    });
    assert_eq!(s.kernels_launched, 1, "{s:?}");
    assert_eq!(s.final_stages_launched, 1);
    assert_eq!(s.temporaries, 0);
    let want: f64 = av
        .iter()
        .zip(&bv)
        .map(|(&x, &y)| ((x as f64 * y as f64).exp() - 1.0).abs())
        .sum();
    assert!(
        ((total as f64) - want).abs() <= 1e-5 * want,
        "{total} vs {want}"
    );
}

#[test]
fn dropped_intermediate_gets_no_buffer_and_a_kept_one_does() {
    let _g = SERIAL.lock();
    let n = 4096;
    let av = random(n, 5, 0.0, 1.0);
    let a = Array::from_slice(&av, &[n]);
    // Dropped before the read: fused away.
    let (u, dropped) = measure(|| {
        let t = &a * 3.0;
        let u = &t + 1.0;
        drop(t);
        u.to_vec().unwrap()
    });
    assert_eq!(dropped.kernels_launched, 1);
    assert_eq!(
        dropped.buffers_allocated + dropped.buffers_reused,
        1,
        "{dropped:?}"
    );
    // Still held at the read but not read: it stays lazy (no buffer); reading it later computes it.
    let (tv, kept) = measure(|| {
        let t = &a * 3.0;
        let u = &t + 1.0;
        let before = Runtime::stats();
        let _ = u.to_vec().unwrap();
        let at_first_read = Runtime::stats().since(&before);
        assert_eq!(at_first_read.kernels_generated, 1);
        assert_eq!(at_first_read.temporaries, 0);
        t.to_vec().unwrap()
    });
    assert_eq!(kept.kernels_generated, 2, "{kept:?}");
    assert_eq!(
        kept.buffers_allocated + kept.buffers_reused,
        2,
        "one buffer per read: {kept:?}"
    );
    for i in 0..n {
        assert_eq!(u[i], av[i] * 3.0 + 1.0);
        assert_eq!(tv[i], av[i] * 3.0);
    }
}

#[test]
fn common_subexpressions_are_computed_once() {
    let _g = SERIAL.lock();
    let n = 1000;
    let av = random(n, 6, -2.0, 2.0);
    let a = Array::from_slice(&av, &[n]);
    // exp(a) recorded twice and used three times: one load, one exp, one mul, one add.
    let (y, s) = measure(|| {
        let t = a.exp();
        let y = &t * &a.exp() + &t;
        drop(t);
        y.to_vec().unwrap()
    });
    assert_eq!(s.kernels_launched, 1);
    assert_eq!(s.kernel_instructions, 4, "{s:?}");
    for i in 0..n {
        let e = (av[i] as f64).exp();
        assert!(((y[i] as f64) - (e * e + e)).abs() <= 1e-6 * (e * e + e));
    }
}

#[test]
fn broadcasts_and_views_fuse_into_the_consumer() {
    let _g = SERIAL.lock();
    let (r, c) = (300, 200);
    let mv = random(r * c, 7, -1.0, 1.0);
    let rowv = random(c, 8, -1.0, 1.0);
    let m = Array::from_slice(&mv, &[r, c]);
    let row = Array::from_slice(&rowv, &[c]);
    let (y, s) = measure(|| {
        let y = (&m - &row).transpose().slice(&[(10..110).into()]) * 2.0;
        y.to_vec().unwrap()
    });
    assert_eq!(s.kernels_launched, 1, "{s:?}");
    assert_eq!(s.buffers_allocated + s.buffers_reused, 1);
    // y[i][j] = 2 * (m[j][10 + i] - row[10 + i]), shape [100, 300].
    for i in 0..100 {
        for j in 0..r {
            let want = 2.0 * (mv[j * c + 10 + i] - rowv[10 + i]);
            assert_eq!(y[i * r + j], want);
        }
    }
}

#[test]
fn matmul_runs_between_fused_kernels() {
    let _g = SERIAL.lock();
    let (m, k, n) = (40, 30, 20);
    let av = random(m * k, 9, -1.0, 1.0);
    let bv = random(k * n, 10, -1.0, 1.0);
    let a = Array::from_slice(&av, &[m, k]);
    let b = Array::from_slice(&bv, &[k, n]);
    let (y, s) = measure(|| {
        let y = (&a * 2.0).matmul(&(&b + 1.0)).exp();
        y.to_vec().unwrap()
    });
    assert_eq!(s.intrinsics_launched, 1);
    assert_eq!(
        s.kernels_launched, 3,
        "producer kernels for each operand and one consumer: {s:?}"
    );
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|p| 2.0 * av[i * k + p] as f64 * (bv[p * n + j] as f64 + 1.0))
                .sum();
            let want = dot.exp();
            assert!(
                ((y[i * n + j] as f64) - want).abs() <= 1e-4 * want,
                "{i},{j}"
            );
        }
    }
}

#[test]
fn released_buffers_are_reused() {
    let _g = SERIAL.lock();
    let n = 1 << 14;
    let a = Array::from_slice(&random(n, 11, 0.0, 1.0), &[n]);
    Runtime::execute();
    // Warm the pool with one result of this size, then drop it.
    drop((&a + 1.0).to_vec().unwrap());
    let (_, s) = measure(|| {
        for _ in 0..10 {
            let y = &a * 2.0;
            y.to_vec().unwrap();
        }
    });
    assert_eq!(s.kernels_launched, 10);
    assert!(s.buffers_reused >= 9, "{s:?}");
    assert!(s.buffers_allocated <= 1, "{s:?}");
}

#[test]
fn temporaries_alive_at_the_read_stay_lazy() {
    let _g = SERIAL.lock();
    let n = 3000;
    let av = random(n, 12, 0.5, 1.5);
    let a = Array::from_slice(&av, &[n]);
    // In one statement, the borrowed temporaries `&a + 1.0` (before `.sqrt()`) and `.sqrt() * 2.0`
    // (before `.ln()`) live until the statement ends, so at the read they are still held; they
    // stay lazy and get no buffer.
    let (y, s) = measure(|| ((&a + 1.0).sqrt() * 2.0).ln().to_vec().unwrap());
    assert_eq!(s.kernels_launched, 1);
    assert_eq!(s.buffers_allocated + s.buffers_reused, 1, "{s:?}");
    for i in 0..n {
        let want = (((av[i] as f64) + 1.0).sqrt() * 2.0).ln();
        assert!(((y[i] as f64) - want).abs() <= 1e-6);
    }
}

#[test]
fn a_loop_carried_value_is_stored_one_step_after_it_is_made() {
    let _g = SERIAL.lock();
    let n = 256;
    let v = random(n, 14, 0.0, 1.0);
    let mut x = Array::from_slice(&v, &[n]);
    let mut want: Vec<f64> = v.iter().map(|&a| a as f64).collect();
    let mut per_step = Vec::new();
    for _ in 0..100 {
        let before = Runtime::stats();
        x = &x * 0.5 + 0.25;
        let total = x.sum().item().unwrap() as f64;
        per_step.push(Runtime::stats().since(&before));
        want.iter_mut().for_each(|w| *w = *w * 0.5 + 0.25);
        let expect: f64 = want.iter().sum();
        assert!(
            (total - expect).abs() <= 1e-4 * expect.abs().max(1.0),
            "{total} vs {expect}"
        );
    }
    // Each step's read computes the new x inside the sum's kernel; the next step, which needs
    // that x again, stores it (rule 1 of the storing policy). So from the second step on every
    // step runs the same one kernel: the work per step does not grow with the step count.
    for (k, s) in per_step.iter().enumerate().skip(1) {
        assert_eq!(s.kernels_launched, 1, "step {k}: {s:?}");
        assert_eq!(
            s.kernel_instructions, per_step[1].kernel_instructions,
            "step {k}: {s:?}"
        );
        assert!(
            s.buffers_allocated + s.buffers_reused <= 2,
            "step {k}: {s:?}"
        );
    }
    assert!(per_step[1].kernel_instructions <= 12, "{:?}", per_step[1]);
}

#[test]
fn constants_and_generators_stay_lazy_until_read() {
    let _g = SERIAL.lock();
    let n = 5000;
    let mut rng = Rng::new(42);
    let (v, s) = measure(|| {
        let c = Array::<f32>::full(&[n], 3.0);
        let u = rng.uniform::<f32>(&[n]);
        let i = Array::<f32>::iota(&[n], 0);
        let y = &u * &c + &i;
        let v = y.to_vec().unwrap();
        (v, u.to_vec().unwrap())
    });
    // y and u are the only buffers; the constant and iota are computed inside the kernels.
    assert_eq!(s.buffers_allocated + s.buffers_reused, 2, "{s:?}");
    let (y, u) = v;
    for k in 0..n {
        assert!((0.0..1.0).contains(&u[k]));
        assert!((y[k] - (u[k] * 3.0 + k as f32)).abs() <= 1e-6 * (k as f32 + 3.0));
    }
}

#[test]
fn the_listing_names_kernels_helpers_and_call_sites() {
    let _g = SERIAL.lock();
    let a = Array::from_slice(&random(100, 13, -3.0, 3.0), &[100]);
    let mut rng = Rng::new(5);
    let noise = rng.normal::<f32>(&[100]);
    let line = line!() + 1;
    let y = a.sign() * &noise + a.modulo(2.0).maximum(0.5);
    y.hint_read();
    let listing = Runtime::last_flush_listing();
    assert_eq!(listing.matches("kernel over").count(), 1, "{listing}");
    for helper in ["Sign", "FloorMod", "NanMinMax", "Philox"] {
        assert!(listing.contains(helper), "{helper} missing from\n{listing}");
    }
    assert!(
        listing.contains(&format!("tests/fusion.rs:{line}")),
        "{listing}"
    );
    let (av, yv, nv) = (
        a.to_vec().unwrap(),
        y.to_vec().unwrap(),
        noise.to_vec().unwrap(),
    );
    for i in 0..100 {
        let x = av[i] as f64;
        let m = x - 2.0 * (x / 2.0).floor();
        let want = x.signum() * nv[i] as f64 + m.max(0.5);
        assert!(
            (yv[i] as f64 - want).abs() <= 1e-5,
            "{i}: {} vs {want}",
            yv[i]
        );
    }
}

#[test]
fn large_reads_write_straight_into_the_callers_memory() {
    let _g = SERIAL.lock();
    let n = 1 << 17;
    let (av, bv) = (random(n, 15, 0.1, 2.0), random(n, 16, 0.1, 2.0));
    let a = Array::from_slice(&av, &[n]);
    let b = Array::from_slice(&bv, &[n]);
    let y = ((((&a * &b + 1.0).sqrt()) * &a - &b).abs()) * 0.5 + &a;
    let mut out = vec![0.0f32; n];
    // Warm the native tier (if it compiles this kernel) so both reads below take the same path.
    y.read_into(&mut out).unwrap();
    let (v, s) = measure(|| {
        y.read_into(&mut out).unwrap();
        y.to_vec().unwrap()
    });
    assert_eq!(s.kernels_launched, 2, "{s:?}");
    // On the CPU the kernel writes the caller's memory itself: no runtime buffer at all. A
    // device executor computes into device memory and downloads straight into the caller's
    // memory: one device buffer per read and no host-side copy.
    // (With several devices live the program goes where placement says: no single device to ask.)
    if Runtime::live_devices().len() <= 2 {
        let device = Runtime::backend() != arrayflow::Backend::Cpu;
        assert_eq!(
            s.buffers_allocated + s.buffers_reused,
            if device { 2 } else { 0 },
            "no runtime buffer for the result: {s:?}"
        );
    }
    for i in 0..n {
        let want = chain_oracle(av[i], bv[i]);
        assert!((out[i] - want).abs() <= 2e-6 * want.abs().max(1.0), "{i}");
        assert_eq!(v[i], out[i]);
    }
    // The array stays usable: it is recomputed where it is used.
    let total = y.sum().item().unwrap() as f64;
    let want: f64 = out.iter().map(|&x| x as f64).sum();
    assert!((total - want).abs() <= 1e-6 * want);
}

#[test]
fn a_failed_computation_read_into_caller_memory_is_an_error() {
    let _g = SERIAL.lock();
    let n = 1 << 17;
    let a = Array::from_vec((0..n as i32).collect(), &[n]);
    let d = Array::from_vec(
        (0..n as i32)
            .map(|i| if i == 777 { 0 } else { 3 })
            .collect(),
        &[n],
    );
    let q = &a / &d + 1;
    let mut out = vec![0i32; n];
    let err = q.read_into(&mut out).unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");
    assert!(q.to_vec().is_err());
}

/// A sum along a short axis is element-wise (`short_sum`) and a reshape that only drops a unit
/// axis is a view, so k-means' assignment step (distances over 2 coordinates, then the nearest of
/// 8 centroids) is one kernel with no stored distance matrix; checked against a plain loop.
#[test]
fn kmeans_distances_fuse_into_their_argmin() {
    let _g = SERIAL.lock();
    let (n, k) = (3000usize, 8usize);
    let p: Vec<f64> = random(n * 2, 3, -5.0, 5.0)
        .iter()
        .map(|&x| x as f64)
        .collect();
    let c: Vec<f64> = random(k * 2, 4, -5.0, 5.0)
        .iter()
        .map(|&x| x as f64)
        .collect();
    let pa = Array::from_vec(
        p.iter().map(|&x| x as f32).collect::<Vec<f32>>(),
        &[n, 1, 2],
    );
    let ca = Array::from_vec(
        c.iter().map(|&x| x as f32).collect::<Vec<f32>>(),
        &[1, k, 2],
    );
    pa.eval().unwrap();
    ca.eval().unwrap();
    let before = arrayflow::Runtime::stats();
    let assign = (&pa - &ca)
        .powi(2)
        .sum_axis(2)
        .argmin_axis(1)
        .to_vec()
        .unwrap();
    let s = arrayflow::Runtime::stats().since(&before);
    assert_eq!(s.kernels_launched, 1, "one fused kernel: {s:?}");
    for i in 0..n {
        let d = |j: usize| {
            let (dx, dy) = (
                p[2 * i] as f32 - c[2 * j] as f32,
                p[2 * i + 1] as f32 - c[2 * j + 1] as f32,
            );
            (dx * dx) as f64 + (dy * dy) as f64
        };
        let best = (0..k).fold(0, |b, j| if d(j) < d(b) { j } else { b });
        assert!(
            assign[i] as usize == best || d(assign[i] as usize) <= d(best) * (1.0 + 1e-6),
            "point {i}: {} vs {best}",
            assign[i]
        );
    }
}
