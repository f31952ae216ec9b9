//! CPU kernel benchmark: reductions along a short inner axis, tall-skinny column sums, and the
//! random generators, each against peers in the same run (plain single-threaded Rust, rayon,
//! ndarray where it applies). Every arrayflow result is first checked against an f64 plain-Rust
//! oracle. Both CPU tiers are measured: the tile VM (`NativeMode::Off`) and the native tier
//! (`NativeMode::Always`).
//!
//! Run with `cargo bench --bench cpu_kernels`. Each cell is the median of timed repetitions after a
//! warm-up; `CPU_KERNELS_SECONDS` (default 0.5) sets the time aimed at per cell. With
//! `CPU_KERNELS_MICRO=1` it instead prints where a generator's time goes (Philox, ln, cos; one thread).

mod common;
use common::{cpu_model, fmt_time, random_vec};

use arrayflow::primitives::cpu as prim;
use arrayflow::{Array, NativeMode, Rng, Runtime};
use ndarray::{Array2, Axis};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROWS: usize = 200_000;
const RNG_N: usize = 10_000_000;

fn seconds() -> f64 {
    std::env::var("CPU_KERNELS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.5)
}

/// Median of repeated runs of `f` after a warm-up.
fn time<R>(mut f: impl FnMut() -> R) -> Duration {
    for _ in 0..2 {
        black_box(f());
    }
    let budget = Duration::from_secs_f64(seconds());
    let start = Instant::now();
    let mut v = Vec::new();
    while v.len() < 5 || (start.elapsed() < budget && v.len() < 200) {
        let t = Instant::now();
        black_box(f());
        v.push(t.elapsed());
    }
    v.sort();
    v[v.len() / 2]
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

struct Row {
    case: String,
    vm: Duration,
    native: Duration,
    peers: Vec<(&'static str, Duration)>,
}

/// Times `af` on both tiers (checking its result against `want` each time).
fn both_tiers(
    af: &mut dyn FnMut() -> Vec<f64>,
    want: &[f64],
    tol: f64,
    what: &str,
) -> [Duration; 2] {
    let mut out = [Duration::ZERO; 2];
    for (slot, mode) in [(0, NativeMode::Off), (1, NativeMode::Always)] {
        Runtime::set_native(mode);
        check(what, &af(), want, tol);
        out[slot] = time(&mut *af);
    }
    Runtime::set_native(NativeMode::Auto);
    out
}

fn f64s<T: Copy + Into<f64>>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(Into::into).collect()
}

fn argmin_row(r: &[f32]) -> usize {
    let mut best = 0;
    for (j, &v) in r.iter().enumerate() {
        if v < r[best] {
            best = j;
        }
    }
    best
}

fn reductions_8(rows: &mut Vec<Row>) {
    let cols = 8;
    let x = random_vec(ROWS * cols, 7, -1.0, 1.0);
    let a = Array::from_slice(&x, &[ROWS, cols]);
    a.eval().unwrap();
    let nd = Array2::from_shape_vec((ROWS, cols), x.clone()).unwrap();
    let chunk = 4096 * cols;

    // argmin_axis(1)
    let want: Vec<f64> = x.chunks(cols).map(|r| argmin_row(r) as f64).collect();
    let [vm, native] = both_tiers(
        &mut || f64s(a.argmin_axis(1).to_vec().unwrap()),
        &want,
        0.0,
        "argmin_axis(1)",
    );
    let plain = time(|| {
        x.chunks(cols)
            .map(|r| argmin_row(r) as u32)
            .collect::<Vec<_>>()
    });
    let ray = time(|| {
        x.par_chunks(chunk)
            .flat_map_iter(|c| c.chunks(cols).map(|r| argmin_row(r) as u32))
            .collect::<Vec<_>>()
    });
    rows.push(Row {
        case: "argmin_axis(1) [200000,8] f32".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray)],
    });

    // sum_axis(1)
    let want: Vec<f64> = x
        .chunks(cols)
        .map(|r| r.iter().map(|&v| v as f64).sum())
        .collect();
    let [vm, native] = both_tiers(
        &mut || f64s(a.sum_axis(1).to_vec().unwrap()),
        &want,
        1e-6,
        "sum_axis(1)",
    );
    let row_sum = |r: &[f32]| r.iter().sum::<f32>();
    let plain = time(|| x.chunks(cols).map(row_sum).collect::<Vec<_>>());
    let ray = time(|| {
        x.par_chunks(chunk)
            .flat_map_iter(|c| c.chunks(cols).map(row_sum))
            .collect::<Vec<_>>()
    });
    let ndt = time(|| nd.sum_axis(Axis(1)));
    rows.push(Row {
        case: "sum_axis(1) [200000,8] f32".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray), ("ndarray", ndt)],
    });

    // max_axis(1)
    let want: Vec<f64> = x
        .chunks(cols)
        .map(|r| r.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64)))
        .collect();
    let [vm, native] = both_tiers(
        &mut || f64s(a.max_axis(1).to_vec().unwrap()),
        &want,
        0.0,
        "max_axis(1)",
    );
    let row_max = |r: &[f32]| r.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let plain = time(|| x.chunks(cols).map(row_max).collect::<Vec<_>>());
    let ray = time(|| {
        x.par_chunks(chunk)
            .flat_map_iter(|c| c.chunks(cols).map(row_max))
            .collect::<Vec<_>>()
    });
    let ndt = time(|| nd.fold_axis(Axis(1), f32::NEG_INFINITY, |&m, &v| m.max(v)));
    rows.push(Row {
        case: "max_axis(1) [200000,8] f32".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray), ("ndarray", ndt)],
    });

    // sum() of the same data
    let want = [x.iter().map(|&v| v as f64).sum::<f64>()];
    let [vm, native] = both_tiers(
        &mut || vec![a.sum().item().unwrap() as f64],
        &want,
        1e-5,
        "sum()",
    );
    let plain = time(|| x.iter().sum::<f32>());
    let ray = time(|| {
        x.par_chunks(chunk)
            .map(|c| c.iter().sum::<f32>())
            .sum::<f32>()
    });
    let ndt = time(|| nd.sum());
    rows.push(Row {
        case: "sum() [200000,8] f32".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray), ("ndarray", ndt)],
    });
}

/// Reductions over axis 0 of [200000, 8] f32 (k-means' cluster counts and friends), each checked
/// against a plain-Rust oracle.
fn axis0_8(rows: &mut Vec<Row>) {
    let cols = 8;
    let x = random_vec(ROWS * cols, 13, -1.0, 1.0);
    let a = Array::from_slice(&x, &[ROWS, cols]);
    a.eval().unwrap();
    let nd = Array2::from_shape_vec((ROWS, cols), x.clone()).unwrap();
    // One-hot rows: a comparison with a column index, cast to f32 (fused into the reduction).
    let labels: Vec<f32> = (0..ROWS).map(|i| ((i * 7919) % cols) as f32).collect();
    let l = Array::from_slice(&labels, &[ROWS, 1]);
    l.eval().unwrap();
    let ks = Array::from_slice(&(0..cols).map(|k| k as f32).collect::<Vec<_>>(), &[1, cols]);
    ks.eval().unwrap();
    let onehot_nd =
        Array2::from_shape_fn((ROWS, cols), |(i, k)| (labels[i] == k as f32) as u8 as f32);
    let col = |f: &dyn Fn(&[f32]) -> f64| -> Vec<f64> {
        (0..cols)
            .map(|c| f(&x.iter().skip(c).step_by(cols).copied().collect::<Vec<_>>()))
            .collect()
    };
    type Case<'a> = (
        &'static str,
        Box<dyn FnMut() -> Vec<f64> + 'a>,
        Vec<f64>,
        f64,
        Box<dyn FnMut() + 'a>,
    );
    let cases: Vec<Case> = vec![
        (
            "sum_axis(0) [200000,8] f32",
            Box::new(|| f64s(a.sum_axis(0).to_vec().unwrap())),
            col(&|c| c.iter().map(|&v| v as f64).sum()),
            1e-6,
            Box::new(|| {
                black_box(nd.sum_axis(Axis(0)));
            }),
        ),
        (
            "mean_axis(0) [200000,8] f32",
            Box::new(|| f64s(a.mean_axis(0).to_vec().unwrap())),
            col(&|c| c.iter().map(|&v| v as f64).sum::<f64>() / ROWS as f64),
            1e-6,
            Box::new(|| {
                black_box(nd.mean_axis(Axis(0)));
            }),
        ),
        (
            "max_axis(0) [200000,8] f32",
            Box::new(|| f64s(a.max_axis(0).to_vec().unwrap())),
            col(&|c| c.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)) as f64),
            0.0,
            Box::new(|| {
                black_box(nd.fold_axis(Axis(0), f32::NEG_INFINITY, |&m, &v| m.max(v)));
            }),
        ),
        (
            "argmax_axis(0) [200000,8] f32",
            Box::new(|| f64s(a.argmax_axis(0).to_vec().unwrap())),
            col(&|c| {
                let mut best = 0;
                for (j, &v) in c.iter().enumerate() {
                    if v > c[best] {
                        best = j;
                    }
                }
                best as f64
            }),
            0.0,
            Box::new(|| {}),
        ),
        (
            "onehot sum_axis(0) [200000,8] f32",
            Box::new(|| f64s(l.eq(&ks).cast::<f32>().sum_axis(0).to_vec().unwrap())),
            (0..cols)
                .map(|k| labels.iter().filter(|&&v| v == k as f32).count() as f64)
                .collect(),
            0.0,
            Box::new(|| {
                black_box(onehot_nd.sum_axis(Axis(0)));
            }),
        ),
    ];
    for (case, mut af, want, tol, mut peer) in cases {
        let [vm, native] = both_tiers(&mut *af, &want, tol, case);
        let peers = if case.starts_with("argmax") {
            vec![]
        } else {
            vec![("ndarray", time(&mut *peer))]
        };
        rows.push(Row {
            case: case.into(),
            vm,
            native,
            peers,
        });
    }
}

fn sums_16(rows: &mut Vec<Row>) {
    let cols = 16;
    let x: Vec<f64> = random_vec(ROWS * cols, 11, -1.0, 1.0)
        .into_iter()
        .map(f64::from)
        .collect();
    let a = Array::from_slice(&x, &[ROWS, cols]);
    a.eval().unwrap();
    let nd = Array2::from_shape_vec((ROWS, cols), x.clone()).unwrap();

    // sum_axis(0): column sums
    let mut want = vec![0.0; cols];
    for r in x.chunks(cols) {
        for (w, &v) in want.iter_mut().zip(r) {
            *w += v;
        }
    }
    let [vm, native] = both_tiers(
        &mut || a.sum_axis(0).to_vec().unwrap(),
        &want,
        1e-9,
        "sum_axis(0)",
    );
    let col_sums = |c: &[f64]| {
        let mut acc = vec![0.0; cols];
        for r in c.chunks(cols) {
            for (w, &v) in acc.iter_mut().zip(r) {
                *w += v;
            }
        }
        acc
    };
    let plain = time(|| col_sums(&x));
    let ray = time(|| {
        x.par_chunks(4096 * cols).map(col_sums).reduce(
            || vec![0.0; cols],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        )
    });
    let ndt = time(|| nd.sum_axis(Axis(0)));
    rows.push(Row {
        case: "sum_axis(0) [200000,16] f64".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray), ("ndarray", ndt)],
    });

    // sum_axis(1): row sums
    let want: Vec<f64> = x.chunks(cols).map(|r| r.iter().sum()).collect();
    let [vm, native] = both_tiers(
        &mut || a.sum_axis(1).to_vec().unwrap(),
        &want,
        1e-12,
        "sum_axis(1) f64",
    );
    let plain = time(|| {
        x.chunks(cols)
            .map(|r| r.iter().sum::<f64>())
            .collect::<Vec<_>>()
    });
    let ray = time(|| {
        x.par_chunks(4096 * cols)
            .flat_map_iter(|c| c.chunks(cols).map(|r| r.iter().sum::<f64>()))
            .collect::<Vec<_>>()
    });
    let ndt = time(|| nd.sum_axis(Axis(1)));
    rows.push(Row {
        case: "sum_axis(1) [200000,16] f64".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray), ("ndarray", ndt)],
    });
}

/// The words of stream element `g` (w per value), one Philox block at a time.
fn words(key: [u32; 2], g: u64, w: usize) -> [u32; 4] {
    let per = (4 / w) as u64;
    let b = prim::philox_at(key, g / per);
    let first = (g % per) as usize * w;
    let mut out = [0; 4];
    out[..w].copy_from_slice(&b[first..first + w]);
    out
}

/// Plain-Rust peer of a generator: Philox (8 blocks at a time) and std's `ln`/`cos`, summed.
fn peer_sum(n: usize, w: usize, conv: fn(&[u32]) -> f64, threads: bool) -> f64 {
    let key = [1, 2];
    let part = |start: usize, len: usize| {
        let mut buf = vec![0.0f64; len];
        prim::random_run(key, start as u64, w, &mut buf, conv);
        buf.iter().sum::<f64>()
    };
    let step = 1 << 16;
    if threads {
        (0..n.div_ceil(step))
            .into_par_iter()
            .map(|c| part(c * step, step.min(n - c * step)))
            .sum()
    } else {
        (0..n.div_ceil(step))
            .map(|c| part(c * step, step.min(n - c * step)))
            .sum()
    }
}

fn unif_f32(r: &[u32]) -> f64 {
    ((r[0] >> 8) as f32 * (1.0 / 16_777_216.0)) as f64
}
fn norm_f32_std(r: &[u32]) -> f64 {
    let u1 = ((r[0] >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0);
    let u2 = (r[1] >> 8) as f32 * (1.0 / 16_777_216.0);
    ((-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()) as f64
}
fn norm_f64_std(r: &[u32]) -> f64 {
    let u53 = |hi: u32, lo: u32| {
        ((((hi as u64) << 32) | lo as u64) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    };
    let u1 = 1.0 - u53(r[0], r[1]);
    let u2 = u53(r[2], r[3]);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn norm_f32_oracle(r: &[u32]) -> f64 {
    // The f32 inputs of the mapping, then the mapping in f64.
    let u1 = (((r[0] >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0)) as f64;
    let u2 = ((r[1] >> 8) as f32 * (1.0 / 16_777_216.0)) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn random(rows: &mut Vec<Row>) {
    type Conv = fn(&[u32]) -> f64;
    let cases: [(&str, usize, Conv, Conv); 3] = [
        ("10M uniform f32 sum", 1, unif_f32, unif_f32),
        ("10M normal f32 mean", 2, norm_f32_std, norm_f32_oracle),
        ("10M normal f64 mean", 4, norm_f64_std, norm_f64_std),
    ];
    for (ci, (name, w, conv, oracle)) in cases.into_iter().enumerate() {
        let seed = 0x5eed_0000_0042 + ci as u64;
        let key = [seed as u32, (seed >> 32) as u32];
        // The f64 oracle: the stream a fresh `Rng::new(seed)` draws, element by element.
        let total: f64 = (0..RNG_N as u64)
            .map(|g| oracle(&words(key, g, w)[..w]))
            .sum();
        let want = [if ci == 0 { total } else { total / RNG_N as f64 }];
        let tol = 1e-6;
        let [vm, native] = both_tiers(
            &mut || {
                let mut rng = Rng::new(seed);
                vec![match ci {
                    0 => rng.uniform::<f32>(&[RNG_N]).sum().item().unwrap() as f64,
                    1 => rng.normal::<f32>(&[RNG_N]).mean().item().unwrap() as f64,
                    _ => rng.normal::<f64>(&[RNG_N]).mean().item().unwrap(),
                }]
            },
            &want,
            tol,
            name,
        );
        let plain = time(|| peer_sum(RNG_N, w, conv, false));
        let ray = time(|| peer_sum(RNG_N, w, conv, true));
        rows.push(Row {
            case: name.into(),
            vm,
            native,
            peers: vec![("plain", plain), ("rayon", ray)],
        });
    }
    // `to_vec` of 10M normals (no reduction: the kernel writes straight into the result).
    let want: Vec<f64> = (0..1000u64)
        .map(|g| norm_f32_oracle(&words([7, 0], g, 2)[..2]))
        .collect();
    let [vm, native] = both_tiers(
        &mut || {
            let v = Rng::new(7).normal::<f32>(&[RNG_N]).to_vec().unwrap();
            v[..1000].iter().map(|&x| x as f64).collect()
        },
        &want,
        // Absolute: the f32 mapping's argument 2 pi u2 is rounded, so values near 0 differ
        // from the f64 oracle by a few 1e-7.
        1e-5,
        "normal to_vec",
    );
    let ray = time(|| {
        let mut out = vec![0.0f32; RNG_N];
        out.par_chunks_mut(1 << 16).enumerate().for_each(|(c, o)| {
            prim::random_run([7, 0], (c << 16) as u64, 2, o, |r| norm_f32_std(r) as f32)
        });
        out
    });
    let plain = time(|| {
        let mut out = vec![0.0f32; RNG_N];
        prim::random_run([7, 0], 0, 2, &mut out, |r| norm_f32_std(r) as f32);
        out
    });
    rows.push(Row {
        case: "10M normal f32 to_vec".into(),
        vm,
        native,
        peers: vec![("plain", plain), ("rayon", ray)],
    });
}

fn main() {
    println!(
        "cpu_kernels: {} ({} threads); median of repeats after a warm-up\n",
        cpu_model(),
        rayon::current_num_threads()
    );
    if std::env::var_os("CPU_KERNELS_MICRO").is_some() {
        // Where a generator's time goes, one thread: Philox alone, then each value mapping.
        let mut o32 = vec![0.0f32; 1 << 20];
        let mut o64 = vec![0.0f64; 1 << 20];
        let per_el = |d: Duration| d.as_secs_f64() * 1e9 / (1 << 20) as f64;
        let t = time(|| prim::random_run_w::<_, 1>([1, 2], 0, &mut o32, |r| r[0] as f32));
        println!("philox words (w 1): {:.2} ns/element", per_el(t));
        let t =
            time(|| prim::random_run_w::<_, 1>([1, 2], 0, &mut o32, |r| prim::uniform_f32(r[0])));
        println!("uniform f32: {:.2} ns/element", per_el(t));
        let t = time(|| {
            prim::random_run_w::<_, 2>([1, 2], 0, &mut o32, |r| prim::normal_f32(r[0], r[1]))
        });
        println!("normal f32: {:.2} ns/element", per_el(t));
        let t = time(|| prim::random_run_w::<_, 4>([1, 2], 0, &mut o64, |r| prim::normal_f64(*r)));
        println!("normal f64: {:.2} ns/element", per_el(t));
        let t = time(|| {
            for (i, o) in o64.iter_mut().enumerate() {
                *o = prim::rng_ln(1.0 - i as f64 * 1e-7);
            }
        });
        println!("rng_ln: {:.2} ns/element", per_el(t));
        let t = time(|| {
            for (i, o) in o64.iter_mut().enumerate() {
                *o = prim::rng_cos(i as f64 * 1e-6);
            }
        });
        println!("rng_cos: {:.2} ns/element", per_el(t));
        return;
    }
    let mut rows = Vec::new();
    // `CPU_KERNELS_AXIS0=1`: only the reductions over axis 0.
    let axis0_only = std::env::var_os("CPU_KERNELS_AXIS0").is_some();
    if !axis0_only {
        reductions_8(&mut rows);
    }
    axis0_8(&mut rows);
    sums_16(&mut rows);
    if !axis0_only {
        random(&mut rows);
    }
    println!(
        "| case | arrayflow tile VM | arrayflow native | plain Rust (1 thread) | rayon | ndarray |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        let peer = |n: &str| {
            r.peers
                .iter()
                .find(|p| p.0 == n)
                .map(|p| fmt_time(p.1))
                .unwrap_or_else(|| "-".into())
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.case,
            fmt_time(r.vm),
            fmt_time(r.native),
            peer("plain"),
            peer("rayon"),
            peer("ndarray")
        );
    }
}
