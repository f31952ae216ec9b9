//! Code reuse sections (the macro cache): the first call records, later calls replay without
//! calling the closure and compute with the new inputs; control values select entries; random
//! generators advance on replays exactly as without the cache; sections nest; recursion, reads,
//! writes and foreign arrays inside a section are errors naming the caller's line; the cache's
//! LRU limit holds; declared scalar parameters take each call's values; the replay check reports a
//! section whose captured scalar changed; a panic inside a recording section leaves the runtime
//! usable; another thread's calls wait while a section records. The runtime starts with a small macro cache and the replay check off (tests that count
//! closure calls), tests that need the check switch it on; tests run one at a time.

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
            .reuse_check(0)
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

/// Switches the replay check on for one test and off again, even if the test fails.
struct CheckEvery;
impl CheckEvery {
    fn on(every: u32) -> CheckEvery {
        Runtime::set_reuse_check(every);
        CheckEvery
    }
}
impl Drop for CheckEvery {
    fn drop(&mut self) {
        Runtime::set_reuse_check(0);
    }
}

#[test]
fn declared_parameters_take_each_calls_values() {
    init();
    let _g = SERIAL.lock();
    let v = data(40, 11);
    let x = Array::from_slice(&v, &[40]);
    let calls = Cell::new(0);
    // 0 and 1 would fold away as literals (x * 1 is x): as parameters they must not.
    for (k, c) in [3.5, 0.0, 1.0, -2.25, 10.0, 1e-3].into_iter().enumerate() {
        let d = k as f64 - 1.0;
        let out = Runtime::reuse_with(&[&x], &[c, d], &[], |ins, ps| {
            calls.set(calls.get() + 1);
            let y = &ins[0] * &ps[0] + &ps[1];
            let s = (&y * &ps[0]).sum();
            vec![y, s]
        })
        .unwrap();
        let want: Vec<f64> = v.iter().map(|x| x * c + d).collect();
        assert_eq!(out[0].to_vec().unwrap(), want, "call {k}: c {c}, d {d}");
        let sum: f64 = want.iter().map(|y| y * c).sum();
        let got = out[1].item().unwrap();
        assert!(
            (got - sum).abs() <= 1e-12 * sum.abs().max(1.0),
            "call {k}: {got} vs {sum}"
        );
    }
    assert_eq!(
        calls.get(),
        1,
        "one recording; the others replay with new values"
    );

    // The loop, with the scalar declared: x + c, not x + 0, every time.
    let xf = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]);
    for k in 0..3 {
        let c = k as f32 * 10.0;
        let out = Runtime::reuse_with(&[&xf], &[c], &[], |ins, ps| vec![&ins[0] + &ps[0]]).unwrap();
        assert_eq!(out[0].to_vec().unwrap(), vec![1.0 + c, 2.0 + c, 3.0 + c]);
    }
    // Integer parameters, and a parameter next to a literal of the same value.
    let xi = Array::from_slice(&[5i32, -7, 9], &[3]);
    for p in [2i32, 3, -4] {
        let out =
            Runtime::reuse_with(&[&xi], &[p], &[], |ins, ps| vec![(&ins[0] + &ps[0]) * 2]).unwrap();
        assert_eq!(
            out[0].to_vec().unwrap(),
            [5i32, -7, 9]
                .iter()
                .map(|x| (x + p) * 2)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_replay_check_reports_a_captured_scalar_that_changed() {
    init();
    let _g = SERIAL.lock();
    let _check = CheckEvery::on(16);
    let x = Array::from_slice(&[1.0f64, 2.0, 3.0], &[3]);
    let mut lines = Vec::new();
    let mut results = Vec::new();
    for k in 0..3 {
        let c = k as f64 * 10.0;
        lines.push(line!() + 1);
        results.push(Runtime::reuse(&[&x], &[], |ins| vec![&ins[0] + c]));
    }
    assert_eq!(
        results[0].as_ref().unwrap()[0].to_vec().unwrap(),
        vec![1.0, 2.0, 3.0]
    );
    // The second call is the first replay: re-recorded and compared.
    let err = results[1].as_ref().unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Argument);
    assert_eq!(reported_line(&msg), lines[1], "{msg}");
    assert!(
        msg.contains("captured") && msg.contains("reuse_with"),
        "{msg}"
    );
    assert!(msg.contains("10.0") && msg.contains("0.0"), "{msg}");
    // The third call replays unchecked (the check runs on replay 1 and every 16th).
    assert_eq!(
        results[2].as_ref().unwrap()[0].to_vec().unwrap(),
        vec![1.0, 2.0, 3.0],
        "an unchecked replay computes with the first recording's value"
    );
    // A changed branch without a control value is reported too.
    let results: Vec<_> = (0..2)
        .map(|k| {
            Runtime::reuse(&[&x], &[], |ins| {
                vec![if k == 0 { &ins[0] * 2.0 } else { ins[0].sqrt() }]
            })
        })
        .collect();
    assert!(results[0].is_ok());
    let err = results[1].as_ref().unwrap_err();
    assert!(err.to_string().contains("first recording"), "{err}");
}

#[test]
fn the_replay_check_passes_unchanged_sections_and_keeps_their_results() {
    init();
    let _g = SERIAL.lock();
    let _check = CheckEvery::on(4);
    let calls = Cell::new(0);
    let mut rng = Rng::new(5);
    let mut plain = Rng::new(5);
    let n = 64;
    for it in 0..20u64 {
        let v = data(n, 40 + it);
        let a = Array::from_slice(&v, &[n]);
        let out = Runtime::reuse_with(&[&a], &[it as f64], &[], |ins, ps| {
            calls.set(calls.get() + 1);
            vec![&ins[0] * 3.0 + &ps[0] + rng.uniform::<f64>(&[n])]
        })
        .unwrap();
        let u = plain.uniform::<f64>(&[n]).to_vec().unwrap();
        let want: Vec<f64> = v
            .iter()
            .zip(&u)
            .map(|(x, u)| x * 3.0 + it as f64 + u)
            .collect();
        assert_eq!(out[0].to_vec().unwrap(), want, "call {it}");
    }
    // Recorded once, re-recorded on replays 1, 4, 8, 12 and 16.
    assert_eq!(calls.get(), 6);
    assert_eq!(rng.position(), plain.position());
}

#[test]
fn a_panic_while_a_section_records_leaves_the_runtime_usable() {
    init();
    let _g = SERIAL.lock();
    let a = Array::from_slice(&data(4, 21), &[4]);
    let three = Array::<f64>::zeros(&[3]);
    for nested in [false, true] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let body = |ins: &[Array<f64>]| {
                let y = &ins[0] * 2.0;
                vec![&y + &three] // shapes [4] and [3]: panics
            };
            if nested {
                Runtime::reuse_named("outer-panics", &[&a], &[], |ins| {
                    Runtime::reuse_named("inner-panics", &[&ins[0]], &[], body).unwrap()
                })
            } else {
                Runtime::reuse_named("panics", &[&a], &[], body)
            }
        }));
        let msg = r.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("do not broadcast"), "{msg}");
        // Reads work again, on this thread and on another.
        let v = data(4, 21);
        assert_eq!(
            (&a + 1.0).to_vec().unwrap(),
            v.iter().map(|x| x + 1.0).collect::<Vec<_>>(),
            "nested {nested}"
        );
        let b = Array::from_slice(&[1.0f64, 2.0], &[2]);
        assert_eq!(
            std::thread::spawn(move || b.sum().item().unwrap())
                .join()
                .unwrap(),
            3.0
        );
        // Sections record and replay as before.
        let calls = Cell::new(0);
        for _ in 0..3 {
            let name = if nested {
                "after-nested-panic"
            } else {
                "after-panic"
            };
            let out = Runtime::reuse_named(name, &[&a], &[], |ins| {
                calls.set(calls.get() + 1);
                vec![&ins[0] * 4.0]
            })
            .unwrap();
            assert_eq!(
                out[0].to_vec().unwrap(),
                v.iter().map(|x| x * 4.0).collect::<Vec<_>>()
            );
        }
        assert_eq!(calls.get(), 1);
    }
    // A panic inside Runtime::block leaves no block open: results still compute.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Runtime::block(|| {
            let _y = &a * 5.0;
            let _z = &a + &three;
        })
    }));
    assert!(r.is_err());
    assert_eq!((&a * 0.0).sum().item().unwrap(), 0.0);
}

/// A constant array passed as a section input is folded into the recording, so a later call
/// with another constant must not replay the first call's code (found by the fuzzer: with the
/// replay check off, `full(k) * 10` returned 10 for every k; with it on, the second call was an
/// error naming a constant the caller never captured).
#[test]
fn constant_inputs_with_other_values_do_not_replay_the_first_calls_code() {
    init();
    let _g = SERIAL.lock();
    for k in [1.0f64, 2.0, -3.5, 1.0] {
        let x = Array::<f64>::full(&[4], k);
        let y = Array::from_vec(data(4, 3), &[4]);
        let out = Runtime::reuse(&[&x, &y], &[], |ins| {
            vec![&ins[0] * 10.0, &ins[0] + &ins[1]]
        })
        .unwrap();
        let want: Vec<f64> = data(4, 3).iter().map(|v| k + v).collect();
        assert_eq!(
            out[0].to_vec().unwrap(),
            vec![k * 10.0; 4],
            "full({k}) * 10"
        );
        assert_eq!(out[1].to_vec().unwrap(), want, "full({k}) + data");
    }
}

/// The same array passed as two inputs is one node in the recording; a later call with two
/// different arrays must not replay it (found by the fuzzer: with the replay check off, `(a, b)`
/// after `(a, a)` computed `a * a`).
#[test]
fn an_input_passed_twice_does_not_replay_for_distinct_inputs() {
    init();
    let _g = SERIAL.lock();
    let (va, vb) = (data(5, 21), data(5, 22));
    let a = Array::from_vec(va.clone(), &[5]);
    let b = Array::from_vec(vb.clone(), &[5]);
    for (x, y, vx, vy) in [
        (&a, &a, &va, &va),
        (&a, &b, &va, &vb),
        (&b, &a, &vb, &va),
        (&b, &b, &vb, &vb),
    ] {
        let out = Runtime::reuse(&[x, y], &[], |ins| vec![&ins[0] * &ins[1] - &ins[1]]).unwrap();
        let want: Vec<f64> = vx.iter().zip(vy).map(|(p, q)| p * q - q).collect();
        assert_eq!(out[0].to_vec().unwrap(), want);
    }
}

#[test]
fn another_threads_work_while_a_section_records_is_neither_refused_nor_recorded() {
    init();
    let _g = SERIAL.lock();
    let (inside_tx, inside_rx) = std::sync::mpsc::channel::<()>();
    let n = 64;
    let (av, bv) = (data(n, 31), data(n, 32));
    let other = std::thread::spawn(move || {
        inside_rx.recv().unwrap();
        // The section on the main thread is recording now: this thread's read waits for it to
        // end, then computes its own values.
        let x = Array::from_slice(&bv, &[n]);
        let got = (&x * 3.0).to_vec().unwrap();
        let want: Vec<f64> = bv.iter().map(|v| v * 3.0).collect();
        assert_eq!(got, want);
    });
    let a = Array::from_slice(&av, &[n]);
    let calls = Cell::new(0);
    let run = |a: &Array<f64>, signal: bool| {
        Runtime::reuse(&[a], &[], |ins| {
            calls.set(calls.get() + 1);
            if signal {
                inside_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            // Correctly rounded on every executor: the results compare exactly.
            vec![(&ins[0] + 1.0).sqrt()]
        })
        .unwrap()
        .remove(0)
        .to_vec()
        .unwrap()
    };
    let want: Vec<f64> = av.iter().map(|v| (v + 1.0).sqrt()).collect();
    assert_eq!(run(&a, true), want);
    other.join().expect("the other thread's read succeeds");
    // The recording holds only the section's own operation: a replay computes the same.
    let before = Runtime::stats();
    assert_eq!(run(&a, false), want);
    assert_eq!(Runtime::stats().since(&before).macros.hits, 1);
    assert_eq!(calls.get(), 1);
}

/// Other threads recording and reading in a loop while sections record and replay: none of
/// their operations lands in a section's final flush (the thread keeps the front end from its
/// closure's return until that flush), and every result matches its oracle (a section's: the
/// same operations run without the section, from a generator with the same seed).
#[test]
fn sections_stay_whole_while_other_threads_record_between_them() {
    init();
    let _g = SERIAL.lock();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = std::sync::Arc::new(std::sync::Barrier::new(4));
    let others: Vec<_> = (0..3)
        .map(|t| {
            let (stop, started) = (stop.clone(), started.clone());
            std::thread::spawn(move || {
                let v = data(50, 40 + t);
                let want: Vec<f64> = v.iter().map(|x| (x * 2.0 + 1.0).sqrt()).collect();
                let mut rounds = 0u32;
                started.wait();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let a = Array::from_slice(&v, &[50]);
                    assert_eq!((&a * 2.0 + 1.0).sqrt().to_vec().unwrap(), want);
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let n = 300;
    let x = Array::from_slice(&data(n, 39), &[n]);
    let body = |x: &Array<f64>, rng: &mut Rng| {
        (x + 1.0).sqrt() * 0.5
            + rng.integers::<i32>(&[n], -4, 9).cast::<f64>()
            + rng.exponential::<f64>(&[n], 2.0)
    };
    started.wait();
    for round in 0..100 {
        let mut plain = Rng::new(round);
        let want: Vec<Vec<f64>> = (0..2)
            .map(|_| body(&x, &mut plain).to_vec().unwrap())
            .collect();
        // A section of its own each round (a section replays with the generator it recorded):
        // the first call records, the second replays.
        let mut rng = Rng::new(round);
        for want in &want {
            let out = Runtime::reuse_named(&format!("r{round}"), &[&x], &[], |ins| {
                vec![body(&ins[0], &mut rng)]
            })
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(&out[0].to_vec().unwrap(), want, "round {round}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for o in others {
        assert!(o.join().expect("the other threads' results are right") > 0);
    }
}

#[test]
fn a_result_returned_twice_stays_one_array_on_replay() {
    init();
    let _g = SERIAL.lock();
    let x = Array::from_vec(vec![1.0f64, 4.0, 9.0], &[3]);
    for (call, p) in [2.0f64, 3.0, 5.0].into_iter().enumerate() {
        let out = Runtime::reuse_named_with("twice", &[&x], &[p], &[], |ins, ps| {
            let t = (&ins[0] * &ps[0]).sqrt();
            vec![t.clone(), t]
        })
        .unwrap();
        let mut it = out.into_iter();
        let (a, b) = (it.next().unwrap(), it.next().unwrap());
        // Dropping one of the two must not free the other's data (the fuzzer found a replay that
        // did).
        drop(b);
        let want: Vec<f64> = [1.0f64, 4.0, 9.0].iter().map(|v| (v * p).sqrt()).collect();
        assert_eq!(a.to_vec().unwrap(), want, "call {call}");
    }
}
