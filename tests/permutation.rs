//! Random permutations and shuffles (`src/api/permute.rs`) on the executor `ARRAYFLOW_DEVICE`
//! picks (CI runs this file on each: the CPU, OpenCL on PoCL, wgpu on lavapipe, and in
//! comparison mode). Oracles written here: the permutation recomputed in plain Rust from the
//! generator's words (read through `bits` at the same state: the positions sorted by the 64-bit
//! keys `(high word, low word)`, ties by position), a check that every value occurs once, and
//! `shuffle` against the permutation applied with plain index arithmetic. Uniformity: chi-square
//! statistics of 2400 permutations of 4 (each of the 24 orders, and each value at each
//! position) against bounds the statistic exceeds with probability about 1e-6. Lengths cross
//! the GPU sorts' one-work-group limit (2048) and repeat across tests, so each device program is
//! built once per process. On a device executor the work must run there (no CPU fallback).

mod common;

use arrayflow::{Array, Backend, ErrorKind, Rng, Runtime};
use common::*;
use rand::RngExt;

/// Tests that read the process-wide statistics run one at a time.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// On a device executor, the work of `f` ran on the device: no program fell back to the CPU.
fn on_the_device<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let _g = SERIAL.lock();
    let before = Runtime::stats();
    let r = f();
    let st = Runtime::stats().since(&before);
    println!(
        "{what}: {} device compiles, {:.2} s",
        st.device.compiles,
        st.device.compile_ns as f64 * 1e-9
    );
    if common::the_device() != Backend::Cpu {
        assert_eq!(st.device.fallbacks, 0, "{what}: {:?}", st.device);
        assert!(st.device.tasks > 0, "{what}: nothing ran on the device");
    }
    r
}

/// The oracle: the permutations `rng.permutations(count, n)` draws, from the words the generator
/// gives at its current state (the high halves, then the low halves), sorted in plain Rust.
fn oracle(rng: &Rng, count: usize, n: usize) -> Vec<Vec<u32>> {
    let mut r = rng.clone();
    let high = read(&r.bits(&[count, n]));
    let low = read(&r.bits(&[count, n]));
    (0..count)
        .map(|row| {
            let key = |i: usize| ((high[row * n + i] as u64) << 32) | low[row * n + i] as u64;
            let mut p: Vec<u32> = (0..n as u32).collect();
            p.sort_by_key(|&i| (key(i as usize), i));
            p
        })
        .collect()
}

/// Every value of `0..p.len()` exactly once.
#[track_caller]
fn assert_permutation(p: &[u32], what: &str) {
    let mut seen = vec![false; p.len()];
    for &v in p {
        assert!((v as usize) < p.len(), "{what}: {v} out of range");
        assert!(!seen[v as usize], "{what}: {v} twice");
        seen[v as usize] = true;
    }
}

#[test]
fn permutation_matches_the_oracle() {
    on_the_device("permutation", || {
        // Both generators at one length (the sort programs are shared), Philox at the others.
        let cases = [(1u64, 0usize), (2, 1), (4, 1000), (5, 3000)];
        for (seed, n) in cases {
            let gens = match n {
                1000 => vec![Rng::new(seed), Rng::fast(seed)],
                _ => vec![Rng::new(seed)],
            };
            for mut rng in gens {
                rng.skip(seed * 17); // not at the stream's start
                let want = oracle(&rng, 1, n).remove(0);
                let start = rng.position();
                let p = rng.permutation(n);
                assert_eq!(p.shape(), &[n]);
                assert_eq!(rng.position(), start + 2 * n as u64, "n = {n}");
                let got = read(&p);
                assert_permutation(&got, &format!("n = {n}"));
                assert_eq!(got, want, "seed {seed}, n = {n}, {:?}", rng.algorithm());
            }
        }
    });
}

#[test]
fn permutations_rows_match_the_oracle() {
    on_the_device("permutations", || {
        for (count, n) in [(2usize, 3000usize), (4, 0), (0, 5)] {
            let mut rng = Rng::new(99 + n as u64);
            let want = oracle(&rng, count, n);
            let p = rng.permutations(count, n);
            assert_eq!(p.shape(), &[count, n]);
            assert_eq!(rng.position(), 2 * (count * n) as u64);
            let got = read(&p);
            for (row, w) in want.iter().enumerate() {
                let g = &got[row * n..(row + 1) * n];
                assert_permutation(g, &format!("row {row} of {count} x {n}"));
                assert_eq!(g, &w[..], "row {row} of {count} x {n}");
            }
        }
        // One row is `permutation`.
        let mut a = Rng::new(5);
        let mut b = a.clone();
        assert_eq!(read(&a.permutations(1, 3000)), read(&b.permutation(3000)));
    });
}

#[test]
fn seeds_give_their_own_permutations() {
    on_the_device("seeds", || {
        let n = 1000;
        let a = read(&Rng::new(11).permutation(n));
        let b = read(&Rng::new(11).permutation(n));
        let c = read(&Rng::new(12).permutation(n));
        assert_eq!(a, b, "the same seed, the same permutation");
        // Two independent permutations of 1000 agree at about one position (a Poisson(1) count).
        let same = a.iter().zip(&c).filter(|(x, y)| x == y).count();
        assert!(
            same < 12,
            "seeds 11 and 12 agree at {same} of {n} positions"
        );
        // Consecutive draws of one generator differ too.
        let mut r = Rng::fast(3);
        let (d, e) = (read(&r.permutation(n)), read(&r.permutation(n)));
        let same = d.iter().zip(&e).filter(|(x, y)| x == y).count();
        assert!(
            same < 12,
            "consecutive draws agree at {same} of {n} positions"
        );
    });
}

#[test]
fn small_permutations_are_uniform() {
    on_the_device("uniformity", || {
        let (count, n) = (2400usize, 4usize);
        for mut rng in [Rng::new(2024), Rng::fast(2024)] {
            let p = read(&rng.permutations(count, n));
            let mut orders = std::collections::HashMap::new();
            let mut at = [[0usize; 4]; 4]; // at[position][value]
            for row in p.chunks(n) {
                assert_permutation(row, "row");
                *orders.entry(row.to_vec()).or_insert(0usize) += 1;
                for (pos, &v) in row.iter().enumerate() {
                    at[pos][v as usize] += 1;
                }
            }
            assert_eq!(
                orders.len(),
                24,
                "{:?}: every order appears",
                rng.algorithm()
            );
            let chi = |counts: &mut dyn Iterator<Item = usize>, expected: f64| -> f64 {
                counts
                    .map(|c| (c as f64 - expected).powi(2) / expected)
                    .sum()
            };
            // 23 degrees of freedom: P(chi2 > 71) is about 1e-6 (Wilson-Hilferty).
            let orders_chi = chi(&mut orders.values().copied(), count as f64 / 24.0);
            assert!(
                orders_chi < 71.0,
                "{:?}: chi2 of orders {orders_chi}",
                rng.algorithm()
            );
            // The 4 x 4 table of value per position: 9 degrees of freedom, P(chi2 > 46) ~ 1e-6.
            let pos_chi = chi(&mut at.iter().flatten().copied(), count as f64 / 4.0);
            assert!(
                pos_chi < 46.0,
                "{:?}: chi2 of positions {pos_chi}",
                rng.algorithm()
            );
            println!(
                "{:?}: chi2 orders {orders_chi:.1} (23 df), positions {pos_chi:.1} (9 df)",
                rng.algorithm()
            );
        }
    });
}

/// `a` (row-major, `shape`) with index `p[j]` along `axis` at `j`: the oracle of `shuffle`.
fn permuted<T: Copy>(a: &[T], shape: &[usize], axis: usize, p: &[u32]) -> Vec<T> {
    let pre: usize = shape[..axis].iter().product();
    let post: usize = shape[axis + 1..].iter().product();
    let dim = shape[axis];
    let mut out = Vec::with_capacity(a.len());
    for i in 0..pre {
        for &j in p {
            let from = (i * dim + j as usize) * post;
            out.extend_from_slice(&a[from..from + post]);
        }
    }
    out
}

#[test]
fn shuffle_matches_the_permutation() {
    on_the_device("shuffle", || {
        // Lengths 1000 (shared with the permutation tests' programs) and 7.
        let mut r = rng(7);
        let shape = [1000usize, 7];
        let x: Vec<f32> = rand_f32(&mut r, 7000, -5.0, 5.0);
        let xi: Vec<i32> = (0..7000).map(|_| r.random_range(-9..9)).collect();
        let (a, ai) = (
            Array::from_vec(x.clone(), &shape),
            Array::from_vec(xi.clone(), &shape),
        );
        for axis in 0..2 {
            let mut rng = Rng::new(40 + axis as u64);
            let p = read(&rng.clone().permutation(shape[axis]));
            let got = rng.shuffle(&a, axis);
            assert_eq!(got.shape(), &shape);
            assert_eq!(rng.position(), 2 * shape[axis] as u64);
            assert_eq!(
                read(&got),
                permuted(&x, &shape, axis, &p),
                "f32 axis {axis}"
            );
        }
        let mut rng = Rng::new(42);
        let p = read(&rng.clone().permutation(7));
        let got = read(&rng.shuffle(&ai, 1));
        assert_eq!(got, permuted(&xi, &shape, 1, &p), "i32 axis 1");
        // The middle axis of a 3-D array.
        let shape = [2usize, 1000, 3];
        let x: Vec<u32> = (0..6000).map(|_| r.random::<u32>()).collect();
        let a = Array::from_vec(x.clone(), &shape);
        let mut rng = Rng::fast(8);
        let p = read(&rng.clone().permutation(1000));
        assert_eq!(
            read(&rng.shuffle(&a, 1)),
            permuted(&x, &shape, 1, &p),
            "u32 axis 1 of 3"
        );
        // An empty axis: nothing drawn.
        let e = Array::<f32>::zeros(&[3, 0]);
        assert_eq!(rng.shuffle(&e, 1).shape(), &[3, 0]);
    });
}

#[test]
fn errors_name_the_call() {
    let _g = SERIAL.lock();
    let a = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let mut rng = Rng::new(1);
    let e = rng.try_shuffle(&a, 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Argument);
    let msg = e.to_string();
    assert!(msg.contains("tests/permutation.rs"), "{msg}");
    assert!(msg.contains("axis 2"), "{msg}");
    assert_eq!(rng.position(), 0, "the generator does not move on an error");
    // Positions are u32.
    let too_long = u32::MAX as usize + 1;
    let e = rng.try_permutation(too_long).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert!(e.to_string().contains("tests/permutation.rs"), "{e}");
    let e = rng.try_permutations(2, too_long).unwrap_err();
    assert!(e.to_string().contains("tests/permutation.rs"), "{e}");
    assert_eq!(rng.position(), 0);
    // The panicking form reports the same call site.
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Rng::new(1).shuffle(&a, 5);
    }))
    .unwrap_err();
    let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("tests/permutation.rs"), "{msg}");
}
