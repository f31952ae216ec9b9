//! Code reuse sections (the macro cache): the first call records, later calls replay without
//! calling the closure and compute with the new inputs; control values select entries; random
//! generators advance on replays exactly as without the cache; sections nest; recursion, reads,
//! writes and foreign arrays inside a section are errors naming the caller's line; the cache's
//! LRU limit holds. The runtime starts with a small macro cache; tests run one at a time.

use arrayflow::{Array, ErrorKind, Rng, Runtime};
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::Once;

static SERIAL: Mutex<()> = Mutex::new(());
const LIMIT: usize = 4;

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        Runtime::builder()
            .macro_cache_entries(LIMIT)
            .start()
            .expect("the runtime starts here")
    });
}

/// The line of `tests/reuse.rs` an error message names.
fn reported_line(msg: &str) -> u32 {
    msg.split("tests/reuse.rs:")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("no line of tests/reuse.rs in: {msg}"))
}

fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 + 0.5
        })
        .collect()
}

/// y = sqrt(a * b + 1) - b, z = sum(y): the section used by most tests (one call site).
fn section(a: &Array<f64>, b: &Array<f64>, calls: &Cell<u32>) -> (Vec<f64>, f64) {
    let out = Runtime::reuse(&[a, b], &[], |ins| {
        calls.set(calls.get() + 1);
        let y = (&ins[0] * &ins[1] + 1.0).sqrt() - &ins[1];
        let z = y.sum();
        vec![y, z]
    })
    .unwrap();
    (out[0].to_vec().unwrap(), out[1].item().unwrap())
}

#[test]
fn replays_skip_the_closure_and_compute_with_new_inputs() {
    init();
    let _g = SERIAL.lock();
    let calls = Cell::new(0);
    let before = Runtime::stats();
    for it in 0..5 {
        let n = 300;
        let (av, bv) = (data(n, it), data(n, it + 100));
        let (a, b) = (Array::from_slice(&av, &[n]), Array::from_slice(&bv, &[n]));
        let (y, z) = section(&a, &b, &calls);
        let want: Vec<f64> = av
            .iter()
            .zip(&bv)
            .map(|(x, y)| (x * y + 1.0).sqrt() - y)
            .collect();
        assert_eq!(y, want, "iteration {it}");
        assert!((z - want.iter().sum::<f64>()).abs() < 1e-12);
    }
    assert_eq!(calls.get(), 1, "the closure runs only when recording");
    let st = Runtime::stats().since(&before);
    assert_eq!(
        (st.macros.misses, st.macros.hits, st.macros.insertions),
        (1, 4, 1),
        "{:?}",
        st.macros
    );
    assert_eq!(
        st.sequences_generated, 1,
        "replays call no program generator"
    );
    // Another size is another entry.
    let (a, b) = (
        Array::from_slice(&data(10, 1), &[10]),
        Array::from_slice(&data(10, 2), &[10]),
    );
    let _ = section(&a, &b, &calls);
    assert_eq!(calls.get(), 2);
}

#[test]
fn control_values_select_different_entries() {
    init();
    let _g = SERIAL.lock();
    let calls = Cell::new(0);
    let v = data(64, 9);
    let a = Array::from_slice(&v, &[64]);
    let run = |double: bool| {
        Runtime::reuse(&[&a], &[double as u64], |ins| {
            calls.set(calls.get() + 1);
            vec![if double {
                &ins[0] * 2.0
            } else {
                &ins[0] + 10.0
            }]
        })
        .unwrap()[0]
            .to_vec()
            .unwrap()
    };
    for _ in 0..3 {
        assert_eq!(run(true), v.iter().map(|x| x * 2.0).collect::<Vec<_>>());
        assert_eq!(run(false), v.iter().map(|x| x + 10.0).collect::<Vec<_>>());
    }
    assert_eq!(calls.get(), 2, "one recording per control value");
}

#[test]
fn random_numbers_in_a_replayed_section_match_an_uncached_run() {
    init();
    let _g = SERIAL.lock();
    let n = 200;
    let x = Array::from_slice(&data(n, 3), &[n]);
    let noisy = |rng: &mut Rng, cached: bool| -> Vec<f64> {
        let body =
            |ins: &[Array<f64>], rng: &mut Rng| vec![&ins[0] + rng.normal::<f64>(&[n]) * 0.1];
        if cached {
            Runtime::reuse(&[&x], &[], |ins| body(ins, rng)).unwrap()[0]
                .to_vec()
                .unwrap()
        } else {
            body(std::slice::from_ref(&x), rng)[0].to_vec().unwrap()
        }
    };
    let mut plain = Rng::new(11);
    let uncached: Vec<Vec<f64>> = (0..4).map(|_| noisy(&mut plain, false)).collect();
    let mut rng = Rng::new(11);
    let before = Runtime::stats();
    let cached: Vec<Vec<f64>> = (0..4).map(|_| noisy(&mut rng, true)).collect();
    assert_eq!(Runtime::stats().since(&before).macros.hits, 3);
    assert_eq!(
        cached, uncached,
        "replays draw exactly the values a normal run draws"
    );
    assert_ne!(cached[1], cached[2], "two replays give different values");
    assert_eq!(rng.position(), plain.position());
}

#[test]
fn sections_nest_and_may_not_recurse() {
    init();
    let _g = SERIAL.lock();
    let v = data(50, 4);
    let a = Array::from_slice(&v, &[50]);
    let inner_calls = Cell::new(0);
    let inner = |x: &Array<f64>| {
        Runtime::reuse_named("inner", &[x], &[], |ins| {
            inner_calls.set(inner_calls.get() + 1);
            vec![&ins[0] * 3.0]
        })
        .unwrap()
        .remove(0)
    };
    for _ in 0..3 {
        let out =
            Runtime::reuse_named("outer", &[&a], &[], |ins| vec![inner(&ins[0]) + 1.0]).unwrap();
        assert_eq!(
            out[0].to_vec().unwrap(),
            v.iter().map(|x| x * 3.0 + 1.0).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        inner_calls.get(),
        1,
        "the inner section is part of the outer recording"
    );

    // Recursion: a section entered again (same key) while it records.
    fn recursive(a: &Array<f64>, depth: u32) -> arrayflow::Result<Vec<Array<f64>>> {
        Runtime::reuse_named("rec", &[a], &[], |ins| {
            if depth == 0 {
                let err = recursive(&ins[0], 1).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Argument);
                assert!(err.to_string().contains("tests/reuse.rs:"), "{err}");
                assert!(
                    err.to_string().contains("recorded")
                        || err.to_string().contains("recursion")
                        || err.to_string().contains("entered again"),
                    "{err}"
                );
            }
            vec![&ins[0] + 1.0]
        })
    }
    let b = Array::from_slice(&data(8, 5), &[8]);
    assert_eq!(recursive(&b, 0).unwrap()[0].to_vec().unwrap().len(), 8);
}

#[test]
fn reads_writes_and_foreign_arrays_inside_a_section_are_errors() {
    init();
    let _g = SERIAL.lock();
    let a = Array::from_slice(&data(20, 6), &[20]);
    let outside = Array::from_slice(&data(20, 7), &[20]);
    // A read inside.
    let l0 = line!();
    let err = Runtime::reuse(&[&a], &[], |ins| {
        let _ = ins[0].to_vec();
        vec![&ins[0] + 1.0]
    })
    .unwrap_err();
    let l1 = line!();
    let msg = err.to_string();
    assert!(msg.contains("a read inside a code reuse section"), "{msg}");
    let line = reported_line(&msg);
    assert!(l0 < line && line < l1, "{msg}");
    // A write inside.
    let err = Runtime::reuse(&[&a], &[1], |ins| {
        let w = Array::try_from_vec(vec![1.0; 20], &[20]);
        assert!(w.is_err());
        vec![&ins[0] + 1.0]
    })
    .unwrap_err();
    assert!(err.to_string().contains("writing data"), "{err}");
    // An array neither passed in nor computed inside.
    let l0 = line!();
    let err = Runtime::reuse(&[&a], &[2], |ins| vec![&ins[0] + &outside]).unwrap_err();
    let l1 = line!();
    let msg = err.to_string();
    assert!(msg.contains("neither an input"), "{msg}");
    let line = reported_line(&msg);
    assert!(l0 < line && line < l1, "{msg}");
    // The runtime is fine afterwards.
    assert_eq!((&a * 0.0).sum().item().unwrap(), 0.0);
}

#[test]
fn the_macro_cache_keeps_at_most_its_limit() {
    init();
    let _g = SERIAL.lock();
    Runtime::clear_macro_cache();
    let before = Runtime::stats();
    for k in 0..(LIMIT as u64 + 3) {
        let a = Array::from_slice(&data(16, k), &[16]);
        // (Not `* 1.0`, which the front end folds away: an output that is an input is not cached.)
        let f = k as f64 + 2.0;
        let out = Runtime::reuse(&[&a], &[k], |ins| vec![&ins[0] * f]).unwrap();
        assert_eq!(out[0].to_vec().unwrap()[3], data(16, k)[3] * f);
    }
    assert!(Runtime::macro_cache_len() <= LIMIT);
    let st = Runtime::stats().since(&before);
    assert_eq!(
        (st.macros.insertions, st.macros.evictions),
        (LIMIT as u64 + 3, 3),
        "{:?}",
        st.macros
    );
}
