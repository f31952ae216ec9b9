//! Random numbers (`Rng`): both generators (Philox4x32-10 and the fast Hash32) and every
//! distribution (uniform on [0, 1) and [lo, hi), normal, exponential, integers, Bernoulli, raw
//! words) against plain-Rust oracles written in this file: each generator's words and each
//! distribution's mapping from them.
//!
//! Tolerances: words, uniforms, `uniform_in`, integers and Bernoulli masks are exact on every
//! executor (bit for bit). Normal and exponential values go through `ln` and `cos`: within 2e-5
//! relative (f32) or 1e-12 (f64) of the oracle's f64 `ln`/`cos` of the same words; the two CPU
//! tiers agree bit for bit. Statistics use fixed seeds and bounds a correct generator passes
//! with probability above 1 - 1e-6 (chi-square at p = 1e-6, means and variances within 5
//! standard errors), so they never flake.

mod common;

use arrayflow::{Array, NativeMode, Rng, RngAlgorithm, Runtime, s};
use common::read;
use parking_lot::Mutex;

const ALGS: [RngAlgorithm; 2] = [RngAlgorithm::Philox, RngAlgorithm::Hash32];

// ---- oracles: the generators' words ----

/// Philox4x32-10 of one block (Salmon et al., SC'11), written from the paper.
fn philox(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let (hi0, lo0) = mul_hi_lo(0xD251_1F53, c[0]);
        let (hi1, lo1) = mul_hi_lo(0xCD9E_8D57, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}
fn mul_hi_lo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// Wellons' lowbias32 and the Hash32 word `c`: `lowbias32(lowbias32(c + k0) ^ k1)`.
fn lowbias32(mut x: u32) -> u32 {
    x = (x ^ (x >> 16)).wrapping_mul(0x7feb_352d);
    x = (x ^ (x >> 15)).wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}
fn hash32(k: [u32; 2], c: u32) -> u32 {
    lowbias32(lowbias32(c.wrapping_add(k[0])) ^ k[1])
}
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `w` words of stream element `g`. Philox: words `(g % (4 / w)) * w ..` of block
/// `g / (4 / w)`; Hash32: words `g * w + j` (mod 2^32).
fn words(alg: RngAlgorithm, key: [u32; 2], g: u64, w: usize) -> Vec<u32> {
    match alg {
        RngAlgorithm::Philox => {
            let per = (4 / w) as u64;
            let b = g / per;
            let block = philox([b as u32, (b >> 32) as u32, 0, 0], key);
            let first = (g % per) as usize * w;
            block[first..first + w].to_vec()
        }
        RngAlgorithm::Hash32 => (0..w)
            .map(|j| {
                hash32(
                    key,
                    (g as u32).wrapping_mul(w as u32).wrapping_add(j as u32),
                )
            })
            .collect(),
    }
}

// ---- oracles: the distributions, from words ----

fn u24(w: u32) -> f64 {
    (w >> 8) as f64 / 16_777_216.0
}
fn u53(hi: u32, lo: u32) -> f64 {
    ((((hi as u64) << 32) | lo as u64) >> 11) as f64 / 9_007_199_254_740_992.0
}
/// `u1` in (0, 1] of an f32 normal or exponential.
fn u1_f32(w: u32) -> f64 {
    ((w >> 8) as f64 + 1.0) / 16_777_216.0
}
fn normal_f32(r: &[u32]) -> f64 {
    let u2 = (u24(r[1]) as f32 * std::f32::consts::TAU) as f64;
    (-2.0 * u1_f32(r[0]).ln()).sqrt() * u2.cos()
}
fn normal_f64(r: &[u32]) -> f64 {
    (-2.0 * (1.0 - u53(r[0], r[1])).ln()).sqrt() * (std::f64::consts::TAU * u53(r[2], r[3])).cos()
}
fn exponential_f32(r: &[u32]) -> f64 {
    -u1_f32(r[0]).ln()
}
fn exponential_f64(r: &[u32]) -> f64 {
    -(1.0 - u53(r[0], r[1])).ln()
}
/// Lemire's multiply-shift.
fn integer(w: u32, range: u64) -> u32 {
    ((w as u64 * range) >> 32) as u32
}

/// A stream position walked by the oracle alongside a generator.
struct Walk {
    alg: RngAlgorithm,
    key: [u32; 2],
    g: u64,
}
impl Walk {
    /// The words of the next `n` elements of `w` words each.
    fn next(&mut self, n: usize, w: usize) -> Vec<Vec<u32>> {
        let v = (0..n as u64)
            .map(|i| words(self.alg, self.key, self.g.wrapping_add(i), w))
            .collect();
        self.g = self.g.wrapping_add(n as u64);
        v
    }
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], rel: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs().max(1e-3),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}
fn f64s<T: Into<f64> + Copy>(v: &[T]) -> Vec<f64> {
    v.iter().map(|&x| x.into()).collect()
}

/// Every distribution of one generator from `start`, element for element against the oracle
/// (lengths across a tile of 1024, the native tier's sub-blocks of 256 and Philox blocks).
fn check_stream(alg: RngAlgorithm, key: [u32; 2], start: u64) {
    let ctx = |what: &str| format!("{alg:?} from {start}: {what}");
    let mut rng = Rng::from_key(alg, key, start);
    let mut o = Walk { alg, key, g: start };
    let n = 2501;

    let got = read(&rng.uniform::<f32>(&[n]));
    let want: Vec<f32> = o.next(n, 1).iter().map(|r| u24(r[0]) as f32).collect();
    assert_eq!(got, want, "{}", ctx("uniform f32"));

    let got = read(&rng.bits(&[n]));
    let want: Vec<u32> = o.next(n, 1).iter().map(|r| r[0]).collect();
    assert_eq!(got, want, "{}", ctx("bits"));

    let got = read(&rng.integers::<i32>(&[n], -7, 1000));
    let want: Vec<i32> = o
        .next(n, 1)
        .iter()
        .map(|r| integer(r[0], 1007) as i32 - 7)
        .collect();
    assert_eq!(got, want, "{}", ctx("integers i32 [-7, 1000)"));

    let got = read(&rng.integers::<i32>(&[600], i32::MIN, i32::MAX));
    let want: Vec<i32> = o
        .next(600, 1)
        .iter()
        .map(|r| (integer(r[0], u32::MAX as u64) as i32).wrapping_add(i32::MIN))
        .collect();
    assert_eq!(got, want, "{}", ctx("integers i32 full range"));

    let got = read(&rng.integers::<u32>(&[600], 5, 42));
    let want: Vec<u32> = o
        .next(600, 1)
        .iter()
        .map(|r| integer(r[0], 37) + 5)
        .collect();
    assert_eq!(got, want, "{}", ctx("integers u32 [5, 42)"));

    let got = read(&rng.bernoulli(&[n], 0.3));
    let t = (0.3f64 * 4_294_967_296.0).round() as u32;
    let want: Vec<bool> = o.next(n, 1).iter().map(|r| r[0] < t).collect();
    assert_eq!(got, want, "{}", ctx("bernoulli 0.3"));

    let got = read(&rng.uniform_in::<f32>(&[1500], -3.0, 5.0));
    let want: Vec<f32> = o
        .next(1500, 1)
        .iter()
        .map(|r| (u24(r[0]) as f32 * 8.0 - 3.0).min(5f32.next_down()))
        .collect();
    assert_eq!(got, want, "{}", ctx("uniform_in f32 [-3, 5)"));

    let got = read(&rng.normal::<f32>(&[1300]));
    let want: Vec<f64> = o.next(1300, 2).iter().map(|r| normal_f32(r)).collect();
    assert_close(&f64s(&got), &want, 2e-5, &ctx("normal f32"));

    let got = read(&rng.exponential::<f32>(&[1300], 1.0));
    let want: Vec<f64> = o.next(1300, 1).iter().map(|r| exponential_f32(r)).collect();
    assert_close(&f64s(&got), &want, 2e-5, &ctx("exponential f32"));

    let got = read(&rng.uniform::<f64>(&[1300]));
    let want: Vec<f64> = o.next(1300, 2).iter().map(|r| u53(r[0], r[1])).collect();
    assert_eq!(got, want, "{}", ctx("uniform f64"));

    let got = read(&rng.normal::<f64>(&[700]));
    let want: Vec<f64> = o.next(700, 4).iter().map(|r| normal_f64(r)).collect();
    assert_close(&got, &want, 1e-12, &ctx("normal f64"));

    let got = read(&rng.exponential::<f64>(&[700], 1.0));
    let want: Vec<f64> = o.next(700, 2).iter().map(|r| exponential_f64(r)).collect();
    assert_close(&got, &want, 1e-12, &ctx("exponential f64"));

    // Through views: a transposed draw and a strided slice of one (index maps, not runs).
    let got = read(&rng.bits(&[37, 41]).transpose());
    let all = o.next(37 * 41, 1);
    let want: Vec<u32> = (0..37 * 41)
        .map(|i| all[(i % 37) * 41 + i / 37][0])
        .collect();
    assert_eq!(got, want, "{}", ctx("bits transposed"));
    let got = read(&rng.uniform::<f32>(&[23, 29]).slice(s![1..;2, ..;3]));
    let all = o.next(23 * 29, 1);
    let want: Vec<f32> = (1..23)
        .step_by(2)
        .flat_map(|r| (0..29).step_by(3).map(move |c| r * 29 + c))
        .map(|i| u24(all[i][0]) as f32)
        .collect();
    assert_eq!(got, want, "{}", ctx("uniform f32 sliced"));
    assert_eq!(rng.position(), o.g, "{}", ctx("position after the draws"));
}

#[test]
fn streams_match_the_oracle_bit_for_bit() {
    let key = [0x0123_4567, 0x89ab_cdef];
    for alg in ALGS {
        // From the start, across 2^32 (Hash32's counter wraps there), and far into the stream.
        for start in [0, (1u64 << 32) - 1700, (1u64 << 45) + 3] {
            check_stream(alg, key, start);
        }
    }
}

/// Draws whose length is a multiple of 4 from every position modulo 4 (and across a 2^32 boundary of
/// the block counter): the GPU kernels' quad form draws a quad's four elements together (one or
/// two Philox blocks for elements of one word, two or three for a normal's two), so every
/// alignment of a quad against the Philox blocks is checked against the oracle, bit for bit where
/// the oracle is exact.
#[test]
fn quads_of_draws_at_every_alignment_match_the_oracle() {
    let key = [0x7654_3210, 0xfedc_ba98];
    for alg in ALGS {
        for start in [0, 1, 2, 3, (1u64 << 34) - 5, (1u64 << 34) - 2] {
            let ctx = |what: &str| format!("{alg:?} from {start}: {what}");
            let mut rng = Rng::from_key(alg, key, start);
            let mut o = Walk { alg, key, g: start };
            let got = read(&rng.uniform::<f32>(&[1024]));
            let want: Vec<f32> = o.next(1024, 1).iter().map(|r| u24(r[0]) as f32).collect();
            assert_eq!(got, want, "{}", ctx("uniform f32"));
            let got = read(&rng.integers::<u32>(&[1024], 3, 1000));
            let want: Vec<u32> = o
                .next(1024, 1)
                .iter()
                .map(|r| integer(r[0], 997) + 3)
                .collect();
            assert_eq!(got, want, "{}", ctx("integers u32 [3, 1000)"));
            let got = read(&rng.normal::<f32>(&[1024]));
            let want: Vec<f64> = o.next(1024, 2).iter().map(|r| normal_f32(r)).collect();
            assert_close(&f64s(&got), &want, 2e-5, &ctx("normal f32"));
            let got = read(&rng.exponential::<f32>(&[1024], 1.0));
            let want: Vec<f64> = o.next(1024, 1).iter().map(|r| exponential_f32(r)).collect();
            assert_close(&f64s(&got), &want, 2e-5, &ctx("exponential f32"));
            // A draw fused with arithmetic (one kernel: the quads' draw feeds the lanes' math).
            let got = read(&(rng.uniform::<f32>(&[1024]) * 2.0 + 1.0));
            let want: Vec<f32> = o
                .next(1024, 1)
                .iter()
                .map(|r| u24(r[0]) as f32 * 2.0 + 1.0)
                .collect();
            assert_eq!(got, want, "{}", ctx("uniform f32 * 2 + 1"));
            assert_eq!(rng.position(), o.g, "{}", ctx("position after the draws"));
        }
    }
}

/// The native tier (C) and the tile VM give the same bits for every generator and
/// distribution, on draws long enough to be compiled (CPU executor only).
#[test]
fn both_cpu_tiers_agree_bit_for_bit() {
    if Runtime::backend() != arrayflow::Backend::Cpu {
        println!("skipped on a device executor: kernels run on the device");
        return;
    }
    static SERIAL: Mutex<()> = Mutex::new(());
    let _g = SERIAL.lock();
    type Draws = (
        Vec<f32>,
        Vec<f64>,
        Vec<f32>,
        Vec<f64>,
        Vec<i32>,
        Vec<f32>,
        f64,
    );
    let draw = |alg| -> Draws {
        let mut rng = Rng::from_key(alg, [5, 6], 3);
        (
            read(&rng.uniform::<f32>(&[70_001])),
            read(&rng.normal::<f64>(&[70_003])),
            read(&rng.exponential::<f32>(&[70_005], 2.5)),
            read(&rng.exponential::<f64>(&[70_007], 1.0)),
            read(&rng.integers::<i32>(&[70_009], -50, 50)),
            read(&rng.normal::<f32>(&[301, 233]).transpose()),
            rng.uniform::<f64>(&[100_003]).sum().item().unwrap(),
        )
    };
    for alg in ALGS {
        let mode_before = Runtime::native();
        Runtime::set_native(NativeMode::Off);
        let vm = draw(alg);
        Runtime::set_native(NativeMode::Require);
        let native = draw(alg);
        Runtime::set_native(mode_before);
        let b32 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let b64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(b32(&vm.0), b32(&native.0), "{alg:?} uniform f32");
        assert_eq!(b64(&vm.1), b64(&native.1), "{alg:?} normal f64");
        assert_eq!(b32(&vm.2), b32(&native.2), "{alg:?} exponential f32");
        assert_eq!(b64(&vm.3), b64(&native.3), "{alg:?} exponential f64");
        assert_eq!(vm.4, native.4, "{alg:?} integers");
        assert_eq!(b32(&vm.5), b32(&native.5), "{alg:?} normal f32 transposed");
        assert_eq!(
            vm.6.to_bits(),
            native.6.to_bits(),
            "{alg:?} sum of uniforms"
        );
        // And the oracle, for the exact ones.
        let mut o = Walk {
            alg,
            key: [5, 6],
            g: 3,
        };
        let want: Vec<f32> = o.next(70_001, 1).iter().map(|r| u24(r[0]) as f32).collect();
        assert_eq!(vm.0, want, "{alg:?} uniform f32 against the oracle");
        o.g += 70_003 + 70_005 + 70_007;
        let want: Vec<i32> = o
            .next(70_009, 1)
            .iter()
            .map(|r| integer(r[0], 100) as i32 - 50)
            .collect();
        assert_eq!(vm.4, want, "{alg:?} integers against the oracle");
    }
}

#[test]
fn seeds_keys_and_positions_reproduce_streams() {
    let seed = 0x1234_5678_9abc_def0u64;
    let p = Rng::new(seed);
    assert_eq!(p.algorithm(), RngAlgorithm::Philox);
    assert_eq!(p.key(), [0x9abc_def0, 0x1234_5678]);
    assert_eq!((p.seed(), p.position()), (Some(seed), 0));
    let f = Rng::fast(seed);
    let k = splitmix64(seed);
    assert_eq!(f.algorithm(), RngAlgorithm::Hash32);
    assert_eq!(f.key(), [k as u32, (k >> 32) as u32]);
    assert_eq!(Rng::with_algorithm(RngAlgorithm::Hash32, seed), f);
    for mut rng in [p, f] {
        let alg = rng.algorithm();
        let first = read(&rng.bits(&[500]));
        rng.skip(250);
        let later = read(&rng.bits(&[100]));
        assert_eq!(rng.position(), 850, "{alg:?}");
        // The same stream from the key alone, at a position.
        let again = Rng::from_key(alg, rng.key(), 0);
        assert_eq!(again.seed(), None);
        let whole = read(&again.clone().bits(&[850]));
        assert_eq!(&whole[..500], &first[..], "{alg:?}");
        assert_eq!(&whole[750..], &later[..], "{alg:?}");
        let mut mid = Rng::from_key(alg, rng.key(), 0);
        mid.seek(750);
        assert_eq!(read(&mid.bits(&[100])), later, "{alg:?} seek");
        // A clone is independent: drawing from it leaves the original where it was.
        let mut c = rng.clone();
        let _ = c.uniform::<f32>(&[10]);
        assert_eq!((rng.position(), c.position()), (850, 860), "{alg:?}");
    }
    // Hash32's period: 2^32 words (a one-word draw repeats after 2^32 elements).
    let mut a = Rng::from_key(RngAlgorithm::Hash32, [3, 4], 10);
    let mut b = Rng::from_key(RngAlgorithm::Hash32, [3, 4], (1 << 32) + 10);
    assert_eq!(read(&a.bits(&[64])), read(&b.bits(&[64])));
    // Nearby seeds give unrelated keys (and streams) for Hash32.
    assert_ne!(Rng::fast(1).key()[0], Rng::fast(2).key()[0]);
}

/// Chi-square statistic of `counts` against equal expected counts, and its bound at
/// p = 1e-6 (Wilson-Hilferty: z = 4.753 standard deviations of the cube root).
fn chi_square(counts: &[u64]) -> (f64, f64) {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    let chi = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    let k = (counts.len() - 1) as f64;
    let q = 2.0 / (9.0 * k);
    (chi, k * (1.0 - q + 4.753 * q.sqrt()).powi(3))
}

#[test]
fn uniform_and_integers_pass_chi_square() {
    let n = 100_000;
    for alg in ALGS {
        for seed in [1, 2] {
            let mut rng = Rng::with_algorithm(alg, seed);
            let mut bins = vec![0u64; 100];
            for u in read(&rng.uniform::<f64>(&[n])) {
                assert!((0.0..1.0).contains(&u));
                bins[(u * 100.0) as usize] += 1;
            }
            let (chi, bound) = chi_square(&bins);
            assert!(
                chi < bound,
                "{alg:?} seed {seed} uniform: chi2 {chi} >= {bound}"
            );
            let mut bins = vec![0u64; 10];
            for v in read(&rng.integers::<i32>(&[n], -3, 7)) {
                bins[(v + 3) as usize] += 1;
            }
            let (chi, bound) = chi_square(&bins);
            assert!(
                chi < bound,
                "{alg:?} seed {seed} integers: chi2 {chi} >= {bound}"
            );
            let mut bins = vec![0u64; 37];
            for v in read(&rng.integers::<u32>(&[n], 1000, 1037)) {
                bins[(v - 1000) as usize] += 1;
            }
            let (chi, bound) = chi_square(&bins);
            assert!(
                chi < bound,
                "{alg:?} seed {seed} integers u32: chi2 {chi} >= {bound}"
            );
            // Consecutive pairs of words, 16 x 16 bins of their top bits (serial correlation).
            let w = read(&rng.bits(&[2 * n]));
            let mut bins = vec![0u64; 256];
            for p in w.chunks(2) {
                bins[((p[0] >> 28) * 16 + (p[1] >> 28)) as usize] += 1;
            }
            let (chi, bound) = chi_square(&bins);
            assert!(
                chi < bound,
                "{alg:?} seed {seed} pairs: chi2 {chi} >= {bound}"
            );
            // Low bits too (a weak hash shows there first).
            let mut bins = vec![0u64; 256];
            for x in &w {
                bins[(x & 255) as usize] += 1;
            }
            let (chi, bound) = chi_square(&bins);
            assert!(
                chi < bound,
                "{alg:?} seed {seed} low bits: chi2 {chi} >= {bound}"
            );
        }
    }
}

/// Mean and variance of `v` in f64.
fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

#[test]
fn normal_and_exponential_moments_within_five_standard_errors() {
    let n = 100_000;
    let nf = n as f64;
    for alg in ALGS {
        let mut rng = Rng::with_algorithm(alg, 77);
        let (mean, std) = (3.0, 2.0);
        for (what, v) in [
            ("f64", read(&rng.normal_with::<f64>(&[n], mean, std))),
            ("f32", f64s(&read(&rng.normal_with::<f32>(&[n], 3.0, 2.0)))),
        ] {
            let (m, var) = moments(&v);
            // SE of the mean sigma/sqrt(n); of the variance sigma^2 sqrt(2/(n-1)).
            assert!(
                (m - mean).abs() < 5.0 * std / nf.sqrt(),
                "{alg:?} normal {what} mean {m}"
            );
            let se = std * std * (2.0 / (nf - 1.0)).sqrt();
            assert!(
                (var - std * std).abs() < 5.0 * se,
                "{alg:?} normal {what} var {var}"
            );
        }
        let lambda = 4.0;
        for (what, v) in [
            ("f64", read(&rng.exponential::<f64>(&[n], lambda))),
            ("f32", f64s(&read(&rng.exponential::<f32>(&[n], 4.0)))),
        ] {
            assert!(
                v.iter().all(|&x| x >= 0.0 && x.is_finite()),
                "{alg:?} {what}"
            );
            let (m, var) = moments(&v);
            // Mean 1/lambda (SE 1/(lambda sqrt n)); variance 1/lambda^2 with SE sqrt(8/n)/lambda^2
            // (fourth central moment 9/lambda^4).
            let mu = 1.0 / lambda;
            assert!(
                (m - mu).abs() < 5.0 * mu / nf.sqrt(),
                "{alg:?} exponential {what} mean {m}"
            );
            let se = (8.0 / nf).sqrt() * mu * mu;
            assert!(
                (var - mu * mu).abs() < 5.0 * se,
                "{alg:?} exponential {what} var {var}"
            );
        }
        let v = f64s(&read(&rng.uniform_in::<f32>(&[n], -2.0, 6.0)));
        let (m, var) = moments(&v);
        assert!(v.iter().all(|&x| (-2.0..6.0).contains(&x)));
        assert!(
            (m - 2.0).abs() < 5.0 * (64.0f64 / 12.0).sqrt() / nf.sqrt(),
            "{alg:?} {m}"
        );
        // Variance of a uniform's sample variance: (b-a)^4 / 180 / n (excess kurtosis -6/5).
        let se = (8f64.powi(4) / 180.0 / nf).sqrt();
        assert!(
            (var - 64.0 / 12.0).abs() < 5.0 * se,
            "{alg:?} uniform_in var {var}"
        );
    }
}

/// Pearson correlation of two equally long samples.
fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ma, va) = moments(a);
    let (mb, vb) = moments(b);
    let cov = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (a.len() as f64 - 1.0);
    cov / (va * vb).sqrt()
}

#[test]
fn streams_are_uncorrelated() {
    let n = 100_000;
    let bound = 5.0 / (n as f64).sqrt();
    for alg in ALGS {
        let mut a = Rng::with_algorithm(alg, 1);
        let mut b = Rng::with_algorithm(alg, 2);
        let (x, y) = (read(&a.uniform::<f64>(&[n])), read(&b.uniform::<f64>(&[n])));
        let next = read(&a.uniform::<f64>(&[n]));
        let r = correlation(&x, &y);
        assert!(r.abs() < bound, "{alg:?} seeds 1 and 2: r = {r}");
        let r = correlation(&x, &next);
        assert!(r.abs() < bound, "{alg:?} consecutive draws: r = {r}");
        let r = correlation(&x[..n - 1], &x[1..]);
        assert!(r.abs() < bound, "{alg:?} lag 1: r = {r}");
        // Normals of the two seeds, and the two halves of one draw.
        let (z, w) = (read(&a.normal::<f64>(&[n])), read(&b.normal::<f64>(&[n])));
        let r = correlation(&z, &w);
        assert!(r.abs() < bound, "{alg:?} normals of seeds 1 and 2: r = {r}");
    }
    // The two generators from one seed.
    let x = read(&Rng::new(9).uniform::<f64>(&[n]));
    let y = read(&Rng::fast(9).uniform::<f64>(&[n]));
    assert!(correlation(&x, &y).abs() < bound);
}

#[test]
fn bernoulli_frequencies() {
    let n = 100_000;
    for alg in ALGS {
        let mut rng = Rng::with_algorithm(alg, 5);
        assert!(read(&rng.bernoulli(&[1000], 0.0)).iter().all(|&b| !b));
        assert!(read(&rng.bernoulli(&[1000], 1.0)).iter().all(|&b| b));
        for p in [0.001, 0.3, 0.5, 0.999] {
            let k = read(&rng.bernoulli(&[n], p)).iter().filter(|&&b| b).count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (k / n as f64 - p).abs() < 5.0 * se,
                "{alg:?} p {p}: {k} of {n}"
            );
        }
    }
}

/// Draws recorded in a code reuse section and replayed: a replay draws exactly what a normal
/// run draws (the generator, its key and an integer draw's range are part of the recording; a
/// section replays with the generators it recorded, so each generator gets its own section).
#[test]
fn replayed_sections_draw_the_same_values() {
    let x = Array::from_vec(vec![0.5f64; 300], &[300]);
    let body = |x: &Array<f64>, rng: &mut Rng| {
        x + &rng.integers::<i32>(&[300], -4, 9).cast::<f64>() + rng.exponential::<f64>(&[300], 2.0)
    };
    let check = |alg: RngAlgorithm, section: &dyn Fn(&mut Rng) -> Vec<f64>| {
        let mut plain = Rng::with_algorithm(alg, 21);
        let want: Vec<Vec<f64>> = (0..3).map(|_| read(&body(&x, &mut plain))).collect();
        let mut rng = Rng::with_algorithm(alg, 21);
        let got: Vec<Vec<f64>> = (0..3).map(|_| section(&mut rng)).collect();
        assert_eq!(got, want, "{alg:?}");
        assert_eq!(rng.position(), plain.position(), "{alg:?}");
    };
    check(RngAlgorithm::Philox, &|rng| {
        read(&Runtime::reuse(&[&x], &[], |ins| vec![body(&ins[0], rng)]).unwrap()[0])
    });
    check(RngAlgorithm::Hash32, &|rng| {
        read(&Runtime::reuse(&[&x], &[], |ins| vec![body(&ins[0], rng)]).unwrap()[0])
    });
}

#[test]
fn bad_arguments_are_errors_naming_the_call() {
    let mut rng = Rng::fast(3);
    let errs = [
        rng.try_uniform_in::<f32>(&[4], 1.0, 1.0).err(),
        rng.try_uniform_in::<f64>(&[4], 2.0, 1.0).err(),
        rng.try_uniform_in::<f64>(&[4], f64::NAN, 1.0).err(),
        rng.try_uniform_in::<f32>(&[4], -3e38, 3e38).err(),
        rng.try_integers::<i32>(&[4], 5, 5).err(),
        rng.try_integers::<u32>(&[4], 9, 2).err(),
        rng.try_bernoulli(&[4], 1.5).err(),
        rng.try_bernoulli(&[4], -0.1).err(),
        rng.try_bernoulli(&[4], f64::NAN).err(),
        rng.try_exponential::<f64>(&[4], 0.0).err(),
        rng.try_exponential::<f32>(&[4], -1.0).err(),
        rng.try_exponential::<f64>(&[4], f64::INFINITY).err(),
        rng.try_normal_with::<f64>(&[4], 0.0, -1.0).err(),
        rng.try_normal_with::<f64>(&[4], f64::INFINITY, 1.0).err(),
    ];
    for (i, e) in errs.into_iter().enumerate() {
        let e = e.unwrap_or_else(|| panic!("case {i} should be an error"));
        assert_eq!(e.kind(), arrayflow::ErrorKind::Argument, "case {i}");
        let msg = e.to_string();
        assert!(msg.contains("tests/random.rs"), "case {i}: {msg}");
    }
    // A refused draw does not move the generator; an accepted one does.
    assert_eq!(rng.position(), 0);
    assert!(rng.try_integers::<i32>(&[4], 5, 6).is_ok());
    assert_eq!(rng.position(), 4);
}
