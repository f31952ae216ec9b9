//! The workload suite's programs (`benches/workloads/af.rs`, written as the README teaches) at
//! small sizes: each result against its oracle (the plain loop in f64, or the analytic price), and
//! the storing policy's promises checked through `Runtime::stats()`: the work per step of every
//! loop stays flat over 100 steps, and a named random draw read twice is drawn at most twice (once
//! when both statistics are requested before the read).

#[path = "../benches/workloads/af.rs"]
mod af;
#[path = "../benches/workloads/params.rs"]
mod params;
#[path = "../benches/workloads/peers.rs"]
mod peers;

use arrayflow::{Array, Rng, Runtime, Stats};
use params::*;
use parking_lot::Mutex;

/// Tests that read counters run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn wide(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn assert_close(name: &str, got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{name}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * w.abs().max(1.0),
            "{name}: element {i} is {g}, want {w}"
        );
    }
}

#[test]
fn every_workload_matches_its_oracle() {
    let _g = SERIAL.lock();
    let (n, steps) = (48, 30);
    let u0 = Data::new(1).vec_f32(n * n, 0.0, 1.0);
    let want = peers::heat_plain(&wide(&u0), n, steps);
    assert_close("heat_slices", &af::heat_slices(&u0, n, steps), &want, 1e-5);
    assert_close("heat_select", &af::heat_select(&u0, n, steps), &want, 1e-5);

    let (k, iters) = (8, 10);
    let (p, init) = kmeans_data(4000, k, 2);
    let want = peers::kmeans_plain(&wide(&p), &wide(&init), k, iters);
    let before = Runtime::stats();
    assert_close("kmeans", &af::kmeans(&p, &init, k, iters), &want, 1e-4);
    assert_close(
        "kmeans_scatter",
        &af::kmeans_scatter(&p, &init, k, iters),
        &want,
        1e-4,
    );
    // f32 programs stay on a device executor: a short float sum's f64 accumulation (where the
    // device computes f64) must not send the distances to the CPU on one that does not (wgpu).
    let moved = Runtime::stats().since(&before).device;
    assert_eq!(
        (moved.f64_to_cpu, moved.fallbacks),
        (0, 0),
        "k-means programs ran on the CPU on {}",
        Runtime::executor()
    );

    let (price, se) = af::monte_carlo(400_000, 7);
    let exact = mc_exact();
    assert!(
        ((price as f64 - exact) / se as f64).abs() < 4.0 && se > 0.0 && se < 0.1,
        "monte_carlo: {price} ± {se}, exact {exact}"
    );

    let mut d = Data::new(3);
    let m = 5000;
    let (s, x, t) = (
        d.vec_f32(m, 5.0, 30.0),
        d.vec_f32(m, 1.0, 100.0),
        d.vec_f32(m, 0.25, 10.0),
    );
    let (wc, wp) = peers::bs_plain(&wide(&s), &wide(&x), &wide(&t));
    let (c, pu) = af::black_scholes(&s, &x, &t);
    assert_close("black_scholes call", &c, &wc, 1e-4);
    assert_close("black_scholes put", &pu, &wp, 1e-4);

    let (rows, cols) = (37, 300);
    let xs = Data::new(4).vec_f32(rows * cols, -4.0, 4.0);
    let want = peers::softmax_plain(&wide(&xs), rows, cols);
    let got = af::softmax(&xs, rows, cols);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!((g as f64 - w).abs() <= 1e-5 * w, "softmax {i}: {g} vs {w}");
    }
    let (g, b) = (d.vec_f32(cols, 0.5, 1.5), d.vec_f32(cols, -0.5, 0.5));
    let want = peers::layer_norm_plain(&wide(&xs), &wide(&g), &wide(&b), rows, cols);
    let got = af::layer_norm(&xs, &g, &b, rows, cols);
    assert_close("layer_norm", &got, &want, 1e-4);

    let dims = (64, 48, 40, 10);
    let (nn, dd, h, o) = dims;
    let xs = d.vec_f32(nn * dd, -1.0, 1.0);
    let (w1, b1) = (d.vec_f32(dd * h, -0.1, 0.1), d.vec_f32(h, -0.1, 0.1));
    let (w2, b2) = (d.vec_f32(h * o, -0.1, 0.1), d.vec_f32(o, -0.1, 0.1));
    let want = peers::mlp_plain(
        &wide(&xs),
        &wide(&w1),
        &wide(&b1),
        &wide(&w2),
        &wide(&b2),
        dims,
    );
    assert_close("mlp", &af::mlp(&xs, &w1, &b1, &w2, &b2, dims), &want, 1e-4);

    let (rows, cols) = (3000, 16);
    let a = d.vec_f64(rows * cols, -1.0, 1.0);
    let bv = d.vec_f64(rows, -1.0, 1.0);
    let want = peers::lstsq_plain(&a, &bv, rows, cols);
    let got = af::least_squares(&a, &bv, rows, cols);
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs().max(1.0),
            "lstsq {g} vs {w}"
        );
    }

    let (x0, v0) = (d.vec_f32(1000, -1.0, 1.0), d.vec_f32(1000, -1.0, 1.0));
    let want = peers::particles_plain(&wide(&x0), &wide(&v0), 40);
    assert_close("particles", &af::particles(&x0, &v0, 40), &want, 1e-4);
}

/// Runs `steps` steps of a loop whose body returns the value read each step; returns each
/// step's statistics.
fn per_step(steps: usize, mut step: impl FnMut() -> f64) -> Vec<Stats> {
    (0..steps)
        .map(|_| {
            let before = Runtime::stats();
            let v = step();
            assert!(v.is_finite());
            Runtime::stats().since(&before)
        })
        .collect()
}

/// From the third step on, every step generates and launches the same work.
fn assert_flat(name: &str, s: &[Stats]) {
    let base = &s[2];
    for (k, st) in s.iter().enumerate().skip(2) {
        assert_eq!(
            (
                st.kernel_instructions,
                st.kernels_launched,
                st.intrinsics_launched
            ),
            (
                base.kernel_instructions,
                base.kernels_launched,
                base.intrinsics_launched
            ),
            "{name}: step {k} does other work than step 2:\n{st:?}\n{base:?}"
        );
    }
}

#[test]
fn every_loop_does_the_same_work_each_step() {
    let _g = SERIAL.lock();
    let n = 32;
    let u0 = Data::new(11).vec_f32(n * n, 0.0, 1.0);
    let interior = af::interior_mask(n);
    let mut u = Array::from_slice(&u0, &[n, n]);
    let s = per_step(100, || {
        u = af::heat_select_step(&u, &interior, n);
        u.sum().item().unwrap() as f64
    });
    assert_flat("heat_select", &s);

    let mut u = Array::from_slice(&u0, &[n, n]);
    let s = per_step(100, || {
        u = af::heat_slices_step(&u, n);
        u.sum().item().unwrap() as f64
    });
    assert_flat("heat_slices", &s);

    let k = 4;
    let (pts, init) = kmeans_data(1000, k, 12);
    let p = Array::from_slice(&pts, &[1000, 2]);
    let mut c = Array::from_slice(&init, &[k, 2]);
    let s = per_step(100, || {
        c = af::kmeans_step(&p, &c, 1000, k);
        c.sum().item().unwrap() as f64
    });
    assert_flat("kmeans", &s);

    let mut c = Array::from_slice(&init, &[k, 2]);
    let s = per_step(100, || {
        c = af::kmeans_scatter_step(&p, &c, 1000, k);
        c.sum().item().unwrap() as f64
    });
    assert_flat("kmeans_scatter", &s);

    let (pk, pc, dt) = PARTICLES;
    let mut d = Data::new(13);
    let mut x = Array::from_vec(d.vec_f32(1000, -1.0, 1.0), &[1000]);
    let mut v = Array::from_vec(d.vec_f32(1000, -1.0, 1.0), &[1000]);
    let s = per_step(100, || {
        let a = &x * -pk - &v * pc;
        v = &v + a * dt;
        x = &x + &v * dt;
        ((&v * &v + &x * &x * pk) * 0.5).sum().item().unwrap() as f64
    });
    assert_flat("particles", &s);
}

#[test]
fn loops_without_reads_cost_linear_time_in_their_steps() {
    let _g = SERIAL.lock();
    let n = 32;
    let u0 = Data::new(21).vec_f32(n * n, 0.0, 1.0);
    let want = |steps| peers::heat_plain(&wide(&u0), n, steps);
    let instructions = |steps: usize, select: bool| {
        let before = Runtime::stats();
        let got = if select {
            af::heat_select(&u0, n, steps)
        } else {
            af::heat_slices(&u0, n, steps)
        };
        assert_close("heat", &got, &want(steps), 1e-5);
        Runtime::stats().since(&before).kernel_instructions as f64
    };
    for select in [true, false] {
        let (i25, i50, i100) = (
            instructions(25, select),
            instructions(50, select),
            instructions(100, select),
        );
        assert!(
            i50 <= 2.2 * i25 && i100 <= 2.2 * i50,
            "select form {select}: kernel instructions for 25/50/100 steps {i25}/{i50}/{i100}"
        );
    }
}

#[test]
fn a_named_random_draw_is_drawn_at_most_twice_and_once_when_requested_together() {
    let _g = SERIAL.lock();
    let n = 100_000;
    let oracle = |v: &[f32]| {
        let m = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / n as f64;
        (m, var.sqrt())
    };
    let check = |(m, s): (f32, f32), v: &[f32]| {
        let (wm, ws) = oracle(v);
        assert!((m as f64 - wm).abs() <= 1e-5, "mean {m} vs {wm}");
        assert!((s as f64 - ws).abs() <= 1e-5 * ws, "stddev {s} vs {ws}");
    };

    // Two reads, one after the other.
    let mut rng = Rng::new(77);
    let x = rng.normal::<f32>(&[n]);
    let before = Runtime::stats();
    let m = x.mean().item().unwrap();
    let s = x.stddev().item().unwrap();
    let st = Runtime::stats().since(&before);
    assert!(st.random_values <= 2 * n as u64, "{st:?}");
    check((m, s), &x.to_vec().unwrap());

    // Both requested before the read: one draw.
    let x = rng.normal::<f32>(&[n]);
    let before = Runtime::stats();
    let (m, s) = (x.mean(), x.stddev());
    let (m, s) = (m.item().unwrap(), s.item().unwrap());
    let st = Runtime::stats().since(&before);
    assert_eq!(st.random_values, n as u64, "{st:?}");
    check((m, s), &x.to_vec().unwrap());

    // Reductions of one lazy value requested together fuse into one pass without storing it.
    let x = rng.uniform::<f32>(&[n]);
    let before = Runtime::stats();
    let (lo, hi, total) = (x.min(), x.max(), x.sum());
    let (lo, hi, total) = (
        lo.item().unwrap(),
        hi.item().unwrap(),
        total.item().unwrap(),
    );
    let st = Runtime::stats().since(&before);
    assert_eq!(
        (st.random_values, st.kernels_launched),
        (n as u64, 1),
        "{st:?}"
    );
    let v = x.to_vec().unwrap();
    let want_total: f64 = v.iter().map(|&x| x as f64).sum();
    assert_eq!(lo, v.iter().copied().fold(f32::INFINITY, f32::min));
    assert_eq!(hi, v.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    assert!((total as f64 - want_total).abs() <= 1e-6 * want_total);
}
