//! The trace cache: a repeated work queue reuses its program sequence (the program generator is
//! not called), scalars are parameters (a hit with new values computes with the new values), and
//! no two different programs share an entry (sizes, element types, input kinds, release
//! patterns). Bucket and global LRU limits hold. Random programs give bit-identical results with
//! the cache on and off. The runtime is started with small limits; tests run one at a time.

use arrayflow::{Array, Rng, Runtime};
use parking_lot::Mutex;
use proptest::prelude::*;
use std::sync::Once;

static SERIAL: Mutex<()> = Mutex::new(());
const PER_BUCKET: usize = 16;
const TOTAL: usize = 40;

/// Starts the runtime (once), takes the lock that runs these tests one at a time, and turns the
/// cache on (whatever ARRAYFLOW_TRACE_CACHE says) and empty.
fn init() -> parking_lot::MutexGuard<'static, ()> {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        Runtime::builder()
            .trace_cache_limits(PER_BUCKET, TOTAL)
            .start()
            .expect("the runtime starts here");
    });
    let guard = SERIAL.lock();
    Runtime::set_trace_cache(true);
    Runtime::clear_trace_cache();
    guard
}

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            0.25 + ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// The same code for every caller, so every call has the same call sites.
fn chain<T: arrayflow::Float>(a: &Array<T>, b: &Array<T>, s: T) -> Array<T> {
    ((a * b + s).sqrt() - b) * s
}

fn oracle(a: f32, b: f32, s: f32) -> f32 {
    ((a * b + s).sqrt() - b) * s
}

#[test]
fn a_loop_hits_from_its_second_iteration_with_new_scalars() {
    let _g = init();
    let n = 1000;
    let (av, bv) = (data(n, 1), data(n, 2));
    let (a, b) = (Array::from_slice(&av, &[n]), Array::from_slice(&bv, &[n]));
    Runtime::execute();
    let before = Runtime::stats();
    for it in 0..6 {
        let s = 0.5 + it as f32;
        let y = chain(&a, &b, s).to_vec().unwrap();
        for i in 0..n {
            assert_eq!(y[i], oracle(av[i], bv[i], s), "iteration {it}, element {i}");
        }
    }
    let st = Runtime::stats().since(&before);
    assert_eq!(st.trace.misses, 1, "{:?}", st.trace);
    assert_eq!(st.trace.hits, 5, "{:?}", st.trace);
    assert_eq!(
        st.sequences_generated, 1,
        "hits do not call the program generator"
    );
    assert_eq!(st.kernels_launched, 6);
}

#[test]
fn different_sizes_types_input_kinds_and_releases_never_share_an_entry() {
    let _g = init();
    Runtime::clear_trace_cache();
    let before = Runtime::stats();
    // Sizes.
    let y1 = chain(
        &Array::from_slice(&data(100, 3), &[100]),
        &Array::from_slice(&data(100, 4), &[100]),
        2.0f32,
    )
    .to_vec()
    .unwrap();
    let y2 = chain(
        &Array::from_slice(&data(200, 3), &[200]),
        &Array::from_slice(&data(200, 4), &[200]),
        2.0f32,
    )
    .to_vec()
    .unwrap();
    assert_eq!((y1.len(), y2.len()), (100, 200));
    // Element types.
    let d: Vec<f64> = data(100, 3).iter().map(|&x| x as f64).collect();
    let y3 = chain(
        &Array::from_slice(&d, &[100]),
        &Array::from_slice(&d, &[100]),
        2.0f64,
    )
    .to_vec()
    .unwrap();
    assert_eq!(y3[7], ((d[7] * d[7] + 2.0).sqrt() - d[7]) * 2.0);
    // Input kinds: a constant where data was.
    let bv = data(100, 4);
    let y4 = chain(
        &Array::full(&[100], 3.0f32),
        &Array::from_slice(&bv, &[100]),
        2.0f32,
    )
    .to_vec()
    .unwrap();
    assert_eq!(y4[9], oracle(3.0, bv[9], 2.0));
    let st = Runtime::stats().since(&before);
    assert_eq!(st.trace.hits, 0, "{:?}", st.trace);
    assert_eq!(st.trace.misses, 4);

    // Release patterns: the same ops, with an intermediate held or dropped before the read.
    let a = Array::from_slice(&data(100, 5), &[100]);
    let run = |keep: bool| {
        let t = &a * 3.0f32;
        let u = &t + 1.0f32;
        let held = if keep {
            Some(t)
        } else {
            drop(t);
            None
        };
        let v = u.to_vec().unwrap();
        (v, held.map(|t| t.to_vec().unwrap()))
    };
    let before = Runtime::stats();
    let (dropped, none) = run(false);
    let (kept, t) = run(true);
    let (dropped2, _) = run(false);
    let st = Runtime::stats().since(&before);
    assert!(none.is_none());
    assert_eq!(dropped, kept);
    assert_eq!(dropped, dropped2);
    assert_eq!(t.unwrap()[5], data(100, 5)[5] * 3.0);
    // The two patterns differ; the third run matches the first.
    assert_eq!(st.trace.hits, 1, "{:?}", st.trace);
}

#[test]
fn buckets_and_the_whole_cache_stay_within_their_limits() {
    let _g = init();
    Runtime::clear_trace_cache();
    let before = Runtime::stats();
    // One call site (the first op inside `chain`), 24 distinct sizes: at most 16 kept.
    for k in 0..24 {
        let n = 50 + k;
        let y = chain(
            &Array::from_slice(&data(n, 6), &[n]),
            &Array::from_slice(&data(n, 7), &[n]),
            1.5f32,
        );
        assert_eq!(y.to_vec().unwrap().len(), n);
    }
    assert!(
        Runtime::trace_cache_len(None) <= PER_BUCKET,
        "{}",
        Runtime::trace_cache_len(None)
    );
    let st = Runtime::stats().since(&before);
    assert_eq!(st.trace.insertions, 24);
    assert!(
        st.trace.evictions >= 24 - PER_BUCKET as u64,
        "{:?}",
        st.trace
    );
    // Three more call sites (closures with their own first op), 20 sizes each: at most 40 in all.
    type Site<'a> = &'a dyn Fn(&Array<f32>) -> Array<f32>;
    let sites: [Site; 3] = [&|x| x * 2.0f32 + 1.0f32, &|x| x.exp() - 1.0f32, &|x| {
        x.abs().sqrt()
    }];
    for f in sites {
        for k in 0..20 {
            let n = 30 + k;
            assert_eq!(
                f(&Array::from_slice(&data(n, 8), &[n]))
                    .to_vec()
                    .unwrap()
                    .len(),
                n
            );
        }
    }
    assert!(
        Runtime::trace_cache_len(None) <= TOTAL,
        "{}",
        Runtime::trace_cache_len(None)
    );
    // The most recent entry is still there: a repeat hits.
    let before = Runtime::stats();
    let x = Array::from_slice(&data(49, 8), &[49]);
    let _ = sites_again(&x);
    assert_eq!(
        Runtime::stats().since(&before).trace.misses,
        1,
        "a new call site misses"
    );
}

fn sites_again(x: &Array<f32>) -> Vec<f32> {
    (x * 4.0f32).to_vec().unwrap()
}

#[test]
fn random_numbers_advance_on_every_hit() {
    let _g = init();
    let n = 500;
    let draw = |rng: &mut Rng| (rng.uniform::<f32>(&[n]) * 2.0f32).to_vec().unwrap();
    Runtime::set_trace_cache(false);
    let mut r = Rng::new(77);
    let uncached: Vec<Vec<f32>> = (0..4).map(|_| draw(&mut r)).collect();
    Runtime::set_trace_cache(true);
    let before = Runtime::stats();
    let mut r = Rng::new(77);
    let cached: Vec<Vec<f32>> = (0..4).map(|_| draw(&mut r)).collect();
    assert_eq!(Runtime::stats().since(&before).trace.hits, 3);
    assert_eq!(cached, uncached);
    assert_ne!(cached[0], cached[1]);
}

/// One step of a random program.
#[derive(Debug, Clone)]
enum Step {
    AddScalar(f32),
    MulArray,
    SqrtAbs,
    ExpClamp,
    Transpose,
    SliceHalf,
    SumRows,
    MaxWith(f32),
    Keep,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (-2.0f32..2.0).prop_map(Step::AddScalar),
        Just(Step::MulArray),
        Just(Step::SqrtAbs),
        Just(Step::ExpClamp),
        Just(Step::Transpose),
        Just(Step::SliceHalf),
        Just(Step::SumRows),
        (-1.0f32..1.0).prop_map(Step::MaxWith),
        Just(Step::Keep),
    ]
}

/// Runs the program; returns the result's bits and those of every array it kept alive.
fn run_program(steps: &[Step], rows: usize, cols: usize) -> Vec<Vec<u32>> {
    let m = Array::from_slice(&data(rows * cols, 9), &[rows, cols]);
    let mut x = m.clone();
    let mut kept = Vec::new();
    for s in steps {
        x = match s {
            Step::AddScalar(v) => &x + *v,
            Step::MulArray => {
                let other = m.slice(&[
                    (0..x.shape()[0].min(rows)).into(),
                    (0..x.shape().get(1).copied().unwrap_or(1).min(cols)).into(),
                ]);
                if other.shape() == x.shape() {
                    &x * &other
                } else {
                    &x * 1.5f32
                }
            }
            Step::SqrtAbs => x.abs().sqrt(),
            Step::ExpClamp => x.minimum(3.0f32).exp(),
            Step::Transpose => x.transpose(),
            Step::SliceHalf if x.shape()[0] > 1 => x.slice(&[arrayflow::Slice::step(.., 2)]),
            Step::SliceHalf => x,
            Step::SumRows if x.ndim() == 2 => x.sum_axis(0),
            Step::SumRows => x,
            Step::MaxWith(v) => x.maximum(*v),
            Step::Keep => {
                kept.push(x.clone());
                x
            }
        };
    }
    let mut out = vec![
        x.to_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<u32>>(),
    ];
    out.extend(
        kept.iter()
            .map(|k| k.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()),
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_programs_are_bit_identical_with_the_cache_on_and_off(
        steps in prop::collection::vec(step(), 1..10),
        rows in 1usize..6,
        cols in 1usize..70,
    ) {
        let _g = init();
        Runtime::set_trace_cache(false);
        let off = run_program(&steps, rows, cols);
        Runtime::set_trace_cache(true);
        let first = run_program(&steps, rows, cols);
        let before = Runtime::stats();
        let second = run_program(&steps, rows, cols);
        let st = Runtime::stats().since(&before);
        // The repeat runs entirely from the cache (a program of no operation flushes nothing).
        prop_assert_eq!(st.trace.misses, 0, "{:?}", st.trace);
        prop_assert_eq!(st.trace.hits, st.flushes.total());
        prop_assert_eq!(st.sequences_generated, 0);
        prop_assert_eq!(&off, &first);
        prop_assert_eq!(&off, &second);
    }
}

#[test]
fn a_call_site_that_only_misses_stops_paying_for_the_cache() {
    let _g = init();
    Runtime::clear_trace_cache();
    let before = Runtime::stats();
    for k in 0..100 {
        let n = 300 + k;
        let (av, bv) = (data(n, 21), data(n, 22));
        let y = chain(
            &Array::from_slice(&av, &[n]),
            &Array::from_slice(&bv, &[n]),
            0.75f32,
        );
        let y = y.to_vec().unwrap();
        assert_eq!(y[n - 1], oracle(av[n - 1], bv[n - 1], 0.75));
    }
    let st = Runtime::stats().since(&before);
    // After 64 misses in a row the site is cold: no lookups, no insertions for a while.
    assert_eq!(
        (st.trace.misses, st.trace.insertions),
        (64, 64),
        "{:?}",
        st.trace
    );
    assert_eq!(st.flushes.read, 100);
}
