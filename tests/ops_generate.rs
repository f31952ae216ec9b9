//! Generators: zeros, ones, full, iota, identity, linspace, and the `Rng` (uniform, normal) with
//! reproducibility and statistical checks on 10^5 samples.
//!
//! Tolerances: zeros/ones/full/iota/identity are exact. linspace: first and last elements exact,
//! the rest within 4 eps_T max(|start|, |end|) of start + i (end - start) / (n - 1) in f64.
//! Random statistics use 5-sigma bounds (a false failure has probability < 1e-6 per check) on seeded
//! draws, so they are deterministic: mean, variance, bin frequencies, lag correlation.

mod common;

use arrayflow::{Array, Element, Rng};
use common::*;

fn check_full<T: Element + std::fmt::Debug>(shape: &[usize], v: T) {
    let a = Array::full(shape, v);
    assert_eq!(a.shape(), shape);
    assert_same(
        &read(&a),
        &vec![v; numel(shape)],
        &format!("full({shape:?}, {v:?})"),
    );
}

#[test]
fn zeros_ones_full_all_types() {
    let shapes: &[&[usize]] = &[
        &[],
        &[1],
        &[7],
        &[3, 4],
        &[2, 3, 5],
        &[0],
        &[2, 0, 3],
        &[70, 90],
    ];
    for &shape in shapes {
        let n = numel(shape);
        assert_same(
            &read(&Array::<f32>::zeros(shape)),
            &vec![0.0; n],
            "f32 zeros",
        );
        assert_same(&read(&Array::<f64>::ones(shape)), &vec![1.0; n], "f64 ones");
        assert_same(&read(&Array::<i32>::zeros(shape)), &vec![0; n], "i32 zeros");
        assert_same(&read(&Array::<u32>::ones(shape)), &vec![1; n], "u32 ones");
        check_full(shape, -3.25f32);
        check_full(shape, 1e300f64);
        check_full(shape, i32::MIN);
        check_full(shape, u32::MAX);
        check_full(shape, true);
        check_full(shape, false);
    }
    let nan = read(&Array::full(&[3], f32::NAN));
    assert!(nan.iter().all(|v| v.is_nan()), "full NaN");
    let z = read(&Array::full(&[2], -0.0f64));
    assert!(
        z.iter().all(|v| *v == 0.0 && v.is_sign_negative()),
        "full -0.0 keeps its sign"
    );
    // Generated constants inside kernels with data.
    let mut r = rng(501);
    let x = rand_f32(&mut r, 5000, -5.0, 5.0);
    let a = Array::from_slice(&x, &[50, 100]);
    let got = read(
        &(&a * Array::full(&[50, 100], 3.0f32) + Array::ones(&[100]) - Array::zeros(&[50, 1])),
    );
    let want: Vec<f32> = x.iter().map(|v| v * 3.0 + 1.0 - 0.0).collect();
    assert_exact_f(&got, &want, "data * full + ones - zeros");
}

fn iota_of<T: arrayflow::Numeric + std::fmt::Debug>(conv: fn(usize) -> T) {
    let shape = [3usize, 4, 5];
    for axis in 0..3 {
        let want: Vec<T> = (0..60).map(|l| conv(unravel(l, &shape)[axis])).collect();
        let a = Array::<T>::iota(&shape, axis);
        assert_eq!(a.shape(), &shape);
        assert_same(&read(&a), &want, &format!("iota axis {axis}"));
    }
    assert_same(
        &read(&Array::<T>::iota(&[9], 0)),
        &(0..9).map(conv).collect::<Vec<_>>(),
        "1-D iota",
    );
    let big = read(&Array::<T>::iota(&[3, 5000], 1));
    assert_same(
        &big,
        &(0..15_000).map(|l| conv(l % 5000)).collect::<Vec<_>>(),
        "iota over tiles",
    );
}

#[test]
fn iota_all_numeric_types() {
    iota_of::<f32>(|i| i as f32);
    iota_of::<f64>(|i| i as f64);
    iota_of::<i32>(|i| i as i32);
    iota_of::<u32>(|i| i as u32);
    // In expressions: 2 * iota + 1 on axis 1 of [4, 6], and comparisons of two iotas (a diagonal).
    let got = read(&(Array::<i32>::iota(&[4, 6], 1) * 2 + 1));
    assert_same(
        &got,
        &(0..24).map(|l| (l % 6) * 2 + 1).collect::<Vec<_>>(),
        "2 iota + 1",
    );
    let diag = read(&Array::<u32>::iota(&[5, 5], 0).eq(Array::<u32>::iota(&[5, 5], 1)));
    assert_same(
        &diag,
        &(0..25).map(|l| l / 5 == l % 5).collect::<Vec<_>>(),
        "iota0 == iota1",
    );
    assert!(
        std::panic::catch_unwind(|| Array::<f32>::iota(&[3], 1)).is_err(),
        "iota axis out of range"
    );
}

fn eye<T: Copy>(n: usize, one: T, zero: T) -> Vec<T> {
    (0..n * n)
        .map(|l| if l / n == l % n { one } else { zero })
        .collect()
}

#[test]
fn identity_all_numeric_types() {
    for n in [1usize, 4, 7, 100] {
        assert_same(
            &read(&Array::<f32>::identity(n)),
            &eye(n, 1.0f32, 0.0),
            &format!("f32 identity({n})"),
        );
        assert_same(
            &read(&Array::<f64>::identity(n)),
            &eye(n, 1.0f64, 0.0),
            &format!("f64 identity({n})"),
        );
        assert_same(
            &read(&Array::<i32>::identity(n)),
            &eye(n, 1i32, 0),
            &format!("i32 identity({n})"),
        );
        assert_same(
            &read(&Array::<u32>::identity(n)),
            &eye(n, 1u32, 0),
            &format!("u32 identity({n})"),
        );
        assert_eq!(Array::<f32>::identity(n).shape(), &[n, n]);
    }
    // identity * data keeps the diagonal; its sum is the trace.
    let mut r = rng(502);
    let x = rand_f64(&mut r, 36, -3.0, 3.0);
    let a = Array::from_slice(&x, &[6, 6]);
    let trace: f64 = (0..6).map(|i| x[i * 7]).sum();
    assert_close(
        &[item(&(&a * Array::<f64>::identity(6)).sum())],
        &[trace],
        1e-15,
        1e-15,
        "trace via identity",
    );
}

fn linspace_check<T: TestFloat>(start: f64, end: f64, n: usize) {
    let a = Array::<T>::linspace(start, end, n);
    assert_eq!(a.shape(), &[n]);
    let got = read(&a);
    let ctx = format!("{} linspace({start}, {end}, {n})", T::name());
    if n == 0 {
        assert!(got.is_empty(), "{ctx}");
        return;
    }
    assert_eq!(
        got[0].to(),
        T::of(start).to(),
        "{ctx}: first element is start"
    );
    if n > 1 {
        assert_eq!(
            got[n - 1].to(),
            T::of(end).to(),
            "{ctx}: last element is end"
        );
    }
    let tol = 4.0 * T::EPS * start.abs().max(end.abs());
    for (i, g) in got.iter().enumerate() {
        let w = if n == 1 {
            start
        } else {
            start + i as f64 * (end - start) / (n - 1) as f64
        };
        assert!((g.to() - w).abs() <= tol, "{ctx}: [{i}] got {g:?} want {w}");
    }
    // Monotone in the direction of end.
    for w in got.windows(2) {
        if end > start {
            assert!(w[1].to() >= w[0].to(), "{ctx}: not increasing");
        } else if end < start {
            assert!(w[1].to() <= w[0].to(), "{ctx}: not decreasing");
        }
    }
}

#[test]
fn linspace_f32_f64() {
    for (s, e, n) in [
        (0.0, 1.0, 11),
        (-3.0, 7.5, 1000),
        (5.0, -5.0, 101),
        (2.0, 2.0, 4),
        (1.0, 9.0, 2),
        (4.0, 8.0, 1),
        (0.0, 1.0, 0),
        (-1e6, 1e6, 9999),
        (0.1, 0.7, 7),
        (0.3, 1.9, 13),
        (-0.7, 0.11, 37),
    ] {
        linspace_check::<f32>(s, e, n);
        linspace_check::<f64>(s, e, n);
    }
    // linspace in an expression: sum of 0..=100 step 1 is 5050.
    assert_eq!(item(&Array::<f64>::linspace(0.0, 100.0, 101).sum()), 5050.0);
}

// ---------------------------------------------------------------------------------------------
// Random numbers.

const NS: usize = 100_000;

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

fn uniform_stats<T: TestFloat>(seed: u64) {
    let mut g = Rng::new(seed);
    let v: Vec<f64> = read(&g.uniform::<T>(&[NS]))
        .iter()
        .map(|x| x.to())
        .collect();
    let ctx = format!("{} uniform seed {seed}", T::name());
    assert!(
        v.iter().all(|&x| (0.0..1.0).contains(&x)),
        "{ctx}: values in [0, 1)"
    );
    let (m, var) = mean_var(&v);
    let n = NS as f64;
    // 5 sigma: sd(mean) = sqrt(1/12 / n); sd(var) ~ sqrt((1/80 - 1/144) / n).
    assert!(
        (m - 0.5).abs() < 5.0 * (1.0 / 12.0 / n).sqrt(),
        "{ctx}: mean {m}"
    );
    assert!(
        (var - 1.0 / 12.0).abs() < 5.0 * ((1.0 / 80.0 - 1.0 / 144.0) / n).sqrt(),
        "{ctx}: variance {var}"
    );
    // Ten equal bins, each with probability 0.1.
    let mut bins = [0usize; 10];
    for &x in &v {
        bins[(x * 10.0) as usize] += 1;
    }
    let sd = (0.1 * 0.9 / n).sqrt();
    for (b, &c) in bins.iter().enumerate() {
        let f = c as f64 / n;
        assert!((f - 0.1).abs() < 5.0 * sd, "{ctx}: bin {b} frequency {f}");
    }
    // Neighbouring values are uncorrelated: lag-1 correlation within 5 / sqrt(n).
    let c: f64 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (n - 1.0) / var;
    assert!(c.abs() < 5.0 / n.sqrt(), "{ctx}: lag-1 correlation {c}");
    // Not a constant or a short cycle: many distinct values.
    let mut s = v.clone();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s.dedup();
    assert!(
        s.len() > NS * 9 / 10,
        "{ctx}: only {} distinct values",
        s.len()
    );
}

fn normal_stats<T: TestFloat>(seed: u64) {
    let mut g = Rng::new(seed);
    let v: Vec<f64> = read(&g.normal::<T>(&[NS])).iter().map(|x| x.to()).collect();
    let ctx = format!("{} normal seed {seed}", T::name());
    assert!(v.iter().all(|x| x.is_finite()), "{ctx}: finite values");
    let n = NS as f64;
    let (m, var) = mean_var(&v);
    assert!(m.abs() < 5.0 / n.sqrt(), "{ctx}: mean {m}");
    assert!(
        (var - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
        "{ctx}: variance {var}"
    );
    // Skewness 0 (sd sqrt(6/n)) and kurtosis 3 (sd sqrt(24/n)).
    let sk = v
        .iter()
        .map(|x| ((x - m) / var.sqrt()).powi(3))
        .sum::<f64>()
        / n;
    let ku = v
        .iter()
        .map(|x| ((x - m) / var.sqrt()).powi(4))
        .sum::<f64>()
        / n;
    assert!(sk.abs() < 5.0 * (6.0 / n).sqrt(), "{ctx}: skewness {sk}");
    assert!(
        (ku - 3.0).abs() < 5.0 * (24.0 / n).sqrt(),
        "{ctx}: kurtosis {ku}"
    );
    // The standard normal CDF at -2, -1, 0, 1, 2.
    for (x, p) in [
        (-2.0, 0.022750131948179),
        (-1.0, 0.158655253931457),
        (0.0, 0.5),
        (1.0, 0.841344746068543),
        (2.0, 0.977249868051821),
    ] {
        let f = v.iter().filter(|&&y| y < x).count() as f64 / n;
        assert!(
            (f - p).abs() < 5.0 * (p * (1.0 - p) / n).sqrt(),
            "{ctx}: P(x < {x}) = {f}, want {p}"
        );
    }
    let c: f64 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (n - 1.0) / var;
    assert!(c.abs() < 5.0 / n.sqrt(), "{ctx}: lag-1 correlation {c}");
}

#[test]
fn uniform_statistics() {
    uniform_stats::<f32>(1);
    uniform_stats::<f64>(2);
    uniform_stats::<f32>(0xDEAD_BEEF_1234_5678);
}

#[test]
fn normal_statistics() {
    normal_stats::<f32>(3);
    normal_stats::<f64>(4);
    normal_stats::<f64>(u64::MAX);
}

fn reproducibility<T: TestFloat>() {
    let ctx = T::name();
    let mut g1 = Rng::new(42);
    let mut g2 = Rng::new(42);
    let a1 = read(&g1.uniform::<T>(&[1000]));
    let a2 = read(&g2.uniform::<T>(&[1000]));
    assert_exact_f(&a1, &a2, &format!("{ctx}: same seed, same values"));
    assert_eq!(
        g1.position(),
        1000,
        "{ctx}: position advances by the element count"
    );
    let b1 = read(&g1.uniform::<T>(&[1000]));
    assert!(
        a1.iter().zip(&b1).filter(|(p, q)| p == q).count() < 10,
        "{ctx}: two draws differ"
    );
    assert_eq!(g1.position(), 2000);
    // seek replays; a clone continues identically.
    let mut g3 = g1.clone();
    assert_eq!(g3, g1);
    g1.seek(1000);
    assert_exact_f(
        &read(&g1.uniform::<T>(&[1000])),
        &b1,
        &format!("{ctx}: seek replays"),
    );
    let n1 = read(&g3.normal::<T>(&[500]));
    g1.seek(2000);
    assert_exact_f(
        &read(&g1.normal::<T>(&[500])),
        &n1,
        &format!("{ctx}: clone continues the same stream"),
    );
    // Other seeds differ, including seeds differing only in the high 32 bits.
    for seed in [43u64, 42 + (1 << 32)] {
        let c = read(&Rng::new(seed).uniform::<T>(&[1000]));
        assert!(
            a1.iter().zip(&c).filter(|(p, q)| p == q).count() < 10,
            "{ctx}: seed {seed} differs from 42"
        );
    }
    // Element i depends only on the seed and position: the shape and tiling do not matter.
    let big = read(&Rng::new(9).uniform::<T>(&[250, 400]));
    let flat = read(&Rng::new(9).uniform::<T>(&[NS]));
    assert_exact_f(
        &big,
        &flat,
        &format!("{ctx}: [250, 400] equals [100000] flattened"),
    );
    let prefix = read(&Rng::new(9).uniform::<T>(&[1000]));
    assert_exact_f(
        &prefix,
        &flat[..1000],
        &format!("{ctx}: a short draw is a prefix of a long one"),
    );
    let mut g = Rng::new(9);
    g.seek(50_000);
    assert_exact_f(
        &read(&g.uniform::<T>(&[777])),
        &flat[50_000..50_777],
        &format!("{ctx}: seek into the middle"),
    );
    // A 0-d draw takes one counter.
    let mut g = Rng::new(9);
    let s = item(&g.uniform::<T>(&[]));
    assert_eq!(g.position(), 1);
    assert_eq!(s.to(), flat[0].to(), "{ctx}: 0-d draw is element 0");
}

#[test]
fn rng_reproducibility_f32() {
    reproducibility::<f32>();
}

#[test]
fn rng_reproducibility_f64() {
    reproducibility::<f64>();
}

/// Random arrays inside expressions give the values the generator gives on its own.
#[test]
fn random_in_expressions() {
    let mut g = Rng::new(77);
    let u = g.uniform::<f64>(&[3, 4000]);
    let z = g.normal::<f32>(&[3, 4000]);
    let uv = read(&u);
    let zv = read(&z);
    let e = read(&(&u * 2.0 - 1.0));
    assert_exact_f(
        &e,
        &uv.iter().map(|v| v * 2.0 - 1.0).collect::<Vec<_>>(),
        "2u - 1",
    );
    assert!(
        e.iter().all(|v| (-1.0..1.0).contains(v)),
        "2u - 1 in [-1, 1)"
    );
    let s = read(&(&z * 3.0f32 + 10.0f32).sum_axis(1));
    for (row, got) in s.iter().enumerate() {
        let want: f64 = zv[row * 4000..(row + 1) * 4000]
            .iter()
            .map(|&v| (v * 3.0 + 10.0) as f64)
            .sum();
        assert_close(&[*got], &[want], 1e-6, 1e-3, "sum of 3z + 10 per row");
    }
    let m = read(&z.gt(0.0f32).cast::<f32>().mean());
    assert!(
        (m[0] - 0.5).abs() < 0.02,
        "about half of normals are positive: {}",
        m[0]
    );
}
