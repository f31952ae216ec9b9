//! Scalar helpers for the CPU target's primitive sources: the integer element trait and the
//! counter-based generators, Philox4x32-10 and Hash32 (the same streams every executor
//! produces), with their distributions.

use crate::ir::{RandomDist, RngAlgorithm};

/// Integer element types (`i32`, `u32`) with the wrapping arithmetic the runtime promises.
pub trait IntElem: Copy + PartialOrd + PartialEq + Default + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    /// Division; the caller has checked that `o != 0`.
    fn wdiv(self, o: Self) -> Self;
    fn wrem(self, o: Self) -> Self;
    /// Floored modulo (sign of the divisor), as Python and NumPy `mod`.
    fn wmod(self, o: Self) -> Self;
    fn wneg(self) -> Self;
    fn wabs(self) -> Self;
    fn sign(self) -> Self;
    fn not(self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_elem {
    ($t:ty, $signed:expr) => {
        impl IntElem for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn wadd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn wsub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn wmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn wdiv(self, o: Self) -> Self {
                self.wrapping_div(o)
            }
            #[inline(always)]
            fn wrem(self, o: Self) -> Self {
                self.wrapping_rem(o)
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn wmod(self, o: Self) -> Self {
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
            #[inline(always)]
            fn wneg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self {
                if self < 0 { self.wrapping_neg() } else { self }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn sign(self) -> Self {
                if self > 0 {
                    1
                } else if $signed && self < 0 {
                    (0 as $t).wrapping_sub(1)
                } else {
                    0
                }
            }
            #[inline(always)]
            fn not(self) -> Self {
                !self
            }
            #[inline(always)]
            fn and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
        }
    };
}
int_elem!(i32, true);
int_elem!(u32, false);

/// Float element types with the special functions the primitive table uses beyond `num_traits`.
pub trait Real: num_traits::Float + num_traits::FloatConst + Send + Sync + 'static {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    /// `e^x` as both CPU tiers compute it ([`super::vmath`]).
    fn exp_cpu(self) -> Self;
    /// `ln x` as both CPU tiers compute it ([`super::vmath`]).
    fn ln_cpu(self) -> Self;
}
// The platform C library's f64 error functions (std links it already): the native tier's
// generated C calls the same ones, so both CPU tiers agree bit for bit. The f32 ones are
// `super::vmath`'s (vectorisable), as the C header's `af_erf_f32` / `af_erfc_f32`.
unsafe extern "C" {
    #[link_name = "erf"]
    safe fn erf_f64(x: f64) -> f64;
    #[link_name = "erfc"]
    safe fn erfc_f64(x: f64) -> f64;
}
impl Real for f32 {
    #[inline(always)]
    fn erf(self) -> Self {
        super::vmath::erf_f32(self)
    }
    #[inline(always)]
    fn erfc(self) -> Self {
        super::vmath::erfc_f32(self)
    }
    #[inline(always)]
    fn exp_cpu(self) -> Self {
        super::vmath::exp_f32(self)
    }
    #[inline(always)]
    fn ln_cpu(self) -> Self {
        super::vmath::ln_f32(self)
    }
}
impl Real for f64 {
    #[inline]
    fn erf(self) -> Self {
        erf_f64(self)
    }
    #[inline]
    fn erfc(self) -> Self {
        erfc_f64(self)
    }
    #[inline(always)]
    fn exp_cpu(self) -> Self {
        super::vmath::exp_f64(self)
    }
    #[inline(always)]
    fn ln_cpu(self) -> Self {
        super::vmath::ln_f64(self)
    }
}

/// Inverse hyperbolic cosine, accurate near 1 (std's `ln(x + sqrt(x^2 - 1))` loses the digits
/// of `x - 1` there): `ln1p(t + sqrt(t * (t + 2)))` with `t = x - 1` below 2, `ln(x) + ln 2` for
/// large `x` (no overflow near the maximum). NaN below 1, however far below.
#[inline]
pub fn acosh_accurate<F: num_traits::Float>(x: F) -> F {
    let two = F::one() + F::one();
    if x < F::one() {
        F::nan()
    } else if x < two {
        let t = x - F::one();
        (t + (t * (t + two)).sqrt()).ln_1p()
    } else if x > big_threshold::<F>() {
        x.ln() + F::from(std::f64::consts::LN_2).unwrap()
    } else {
        (x + (x - F::one()).sqrt() * (x + F::one()).sqrt()).ln()
    }
}

/// Past this, `asinh` and `acosh` are `ln(2x)` to the last bit (the next term, `1 / (4x^2)`, is
/// below half an ulp) while the usual formulas overflow near the type's maximum: 2^12 for f32,
/// 2^26 for f64 (about `1 / sqrt(eps)`), as the C and GPU sources write it.
#[inline]
fn big_threshold<F: num_traits::Float>() -> F {
    let f32_like = F::epsilon() > F::from(1e-10).unwrap();
    F::from(if f32_like { 4096.0 } else { 67_108_864.0 }).unwrap()
}

/// Inverse hyperbolic sine without overflow near the type's maximum (std's formula doubles `x`):
/// `ln(|x|) + ln 2` for large `|x|`, with the sign of `x`.
#[inline]
pub fn asinh_accurate<F: num_traits::Float>(x: F) -> F {
    let ax = x.abs();
    let r = if ax > big_threshold::<F>() {
        ax.ln() + F::from(std::f64::consts::LN_2).unwrap()
    } else {
        let ix = ax.recip();
        (ax + ax / (F::one().hypot(ix) + ix)).ln_1p()
    };
    r.copysign(x)
}

/// Past this `|x|`, `sech` and `csch` are `2 e^-|x|` (`e^-2|x|` is far below an ulp) and `1 / cosh`
/// would soon divide by an overflowed infinity and give 0 where the value is subnormal: 88 for
/// f32, 709 for f64 (just below where `cosh` overflows), as the C and GPU sources write it.
#[inline]
fn hyperbolic_tail<F: num_traits::Float>() -> F {
    let f32_like = F::epsilon() > F::from(1e-10).unwrap();
    F::from(if f32_like { 88.0 } else { 709.0 }).unwrap()
}

/// Hyperbolic secant: `1 / cosh(x)`, and `2 e^-|x|` past `hyperbolic_tail` (where `1 / cosh`
/// gave 0 instead of a subnormal value).
#[inline]
pub fn sech_accurate<F: num_traits::Float>(x: F) -> F {
    let a = x.abs();
    if a > hyperbolic_tail::<F>() {
        (F::one() + F::one()) * (-a).exp()
    } else {
        x.cosh().recip()
    }
}

/// Hyperbolic cosecant: `1 / sinh(x)`, and `2 e^-|x|` with the sign of `x` past
/// `hyperbolic_tail` (where `1 / sinh` gave 0 instead of a subnormal value).
#[inline]
pub fn csch_accurate<F: num_traits::Float>(x: F) -> F {
    let a = x.abs();
    if a > hyperbolic_tail::<F>() {
        ((F::one() + F::one()) * (-a).exp()).copysign(x)
    } else {
        x.sinh().recip()
    }
}

/// Inverse hyperbolic tangent of `|x|` with the sign of `x` (fdlibm's form): std's
/// `ln1p(2x / (1 - x)) / 2` cancels for `x` near -1 (6e5 ulp at -0.9999999).
#[inline]
pub fn atanh_accurate<F: num_traits::Float>(x: F) -> F {
    let t = x.abs();
    let (half, two) = (F::from(0.5).unwrap(), F::from(2.0).unwrap());
    let r = if t < half {
        half * (two * t + two * t * t / (F::one() - t)).ln_1p()
    } else {
        half * ((two * t) / (F::one() - t)).ln_1p()
    };
    r.copysign(x)
}

/// Inverse cosecant, accurate near +-1 (where `asin(1 / x)` amplifies the rounding of `1 / x`):
/// `atan(1 / sqrt((|x| - 1)(|x| + 1)))` below 2, `asin(1 / |x|)` beyond, with the sign of `x`.
#[inline]
pub fn acsc_accurate<F: num_traits::Float>(x: F) -> F {
    let a = x.abs();
    let two = F::one() + F::one();
    let r = if a < two {
        ((a - F::one()) * (a + F::one())).sqrt().recip().atan()
    } else {
        a.recip().asin()
    };
    r.copysign(x)
}

/// Inverse secant, accurate near +-1 (where `acos(1 / x)` amplifies the rounding of `1 / x`):
/// `atan(sqrt((x - 1)(x + 1)))`, mirrored to `pi - ..` for negative `x`. NaN for |x| < 1.
#[inline]
pub fn asec_accurate<F: num_traits::Float + num_traits::FloatConst>(x: F) -> F {
    let r = ((x - F::one()) * (x + F::one())).sqrt().atan();
    if x < F::zero() { F::PI() - r } else { r }
}

/// NaN-propagating minimum (NumPy `minimum`).
#[inline(always)]
pub fn fmin_nan<F: num_traits::Float>(x: F, y: F) -> F {
    if x.is_nan() || y.is_nan() {
        F::nan()
    } else if y < x {
        y
    } else {
        x
    }
}
/// NaN-propagating maximum (NumPy `maximum`).
#[inline(always)]
pub fn fmax_nan<F: num_traits::Float>(x: F, y: F) -> F {
    if x.is_nan() || y.is_nan() {
        F::nan()
    } else if y > x {
        y
    } else {
        x
    }
}
/// Floored float modulo (sign of the divisor), as NumPy `mod`.
#[inline(always)]
pub fn fmod_floor<F: num_traits::Float>(x: F, y: F) -> F {
    let r = x % y;
    if r != F::zero() && ((r < F::zero()) != (y < F::zero())) {
        r + y
    } else {
        r
    }
}
/// -1, 0 or 1 by sign; NaN stays NaN; zero keeps its sign bit.
#[inline(always)]
pub fn fsign<F: num_traits::Float>(x: F) -> F {
    if x > F::zero() {
        F::one()
    } else if x < F::zero() {
        -F::one()
    } else {
        x
    }
}

/// One Philox4x32-10 block: four 32-bit words from a 128-bit counter and a 64-bit key
/// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
#[inline]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        let p0 = M0 * c[0] as u64;
        let p1 = M1 * c[2] as u64;
        c = [
            ((p1 >> 32) as u32) ^ c[1] ^ k[0],
            p1 as u32,
            ((p0 >> 32) as u32) ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The four random words of Philox block `n` of a stream with `key`.
#[inline]
pub fn philox_at(key: [u32; 2], n: u64) -> [u32; 4] {
    philox4x32_10([n as u32, (n >> 32) as u32, 0, 0], key)
}

/// How many 32-bit words one random value of a distribution and width takes: 1 (uniform f32),
/// 2 (uniform f64, normal f32) or 4 (normal f64). Stream element `g` uses words
/// `(g % (4 / w)) * w ..` of Philox block `g / (4 / w)`, so every word of a block is used and the
/// value depends only on `g`, whichever executor or tile computes it.
pub fn words_per_value(normal: bool, f64: bool) -> usize {
    match (normal, f64) {
        (false, false) => 1,
        (true, true) => 4,
        _ => 2,
    }
}

/// The words of stream element `g`, reusing the previous block when it is the same one.
#[inline]
pub fn stream_words(key: [u32; 2], g: u64, w: usize, cache: &mut (u64, [u32; 4])) -> [u32; 4] {
    let per = (4 / w) as u64;
    let block = g / per;
    if cache.0 != block {
        *cache = (block, philox_at(key, block));
    }
    let first = (g % per) as usize * w;
    let mut out = [0; 4];
    out[..w].copy_from_slice(&cache.1[first..first + w]);
    out
}

/// Eight consecutive Philox blocks at once, as four lanes of words (structure of arrays, so the
/// compiler vectorises the rounds). Same bits as [`philox_at`] for each block.
#[inline(always)]
pub fn philox_x8(key: [u32; 2], first_block: u64) -> [[u32; 8]; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    let blocks: [u64; 8] = std::array::from_fn(|l| first_block + l as u64);
    let mut c = [
        blocks.map(|b| b as u32),
        blocks.map(|b| (b >> 32) as u32),
        [0; 8],
        [0; 8],
    ];
    let (mut k0, mut k1) = (key[0], key[1]);
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(0x9E37_79B9);
            k1 = k1.wrapping_add(0xBB67_AE85);
        }
        let mut n = [[0u32; 8]; 4];
        for l in 0..8 {
            let p0 = M0 * c[0][l] as u64;
            let p1 = M1 * c[2][l] as u64;
            n[0][l] = ((p1 >> 32) as u32) ^ c[1][l] ^ k0;
            n[1][l] = p1 as u32;
            n[2][l] = ((p0 >> 32) as u32) ^ c[3][l] ^ k1;
            n[3][l] = p0 as u32;
        }
        c = n;
    }
    c
}

/// Fills `out[i]` with `conv(words of stream element g0 + i)` (see [`words_per_value`]), eight
/// Philox blocks at a time in the middle of the run.
pub fn random_run<T: Copy + Default>(
    key: [u32; 2],
    g0: u64,
    w: usize,
    out: &mut [T],
    conv: impl Fn(&[u32]) -> T,
) {
    match w {
        1 => random_run_w::<T, 1>(key, g0, out, |r| conv(r)),
        2 => random_run_w::<T, 2>(key, g0, out, |r| conv(r)),
        _ => random_run_w::<T, 4>(key, g0, out, |r| conv(r)),
    }
}

/// [`random_run`] with the words per value known at compile time (the middle of the run has no
/// slices of run-time length, so the conversion inlines and vectorises).
#[inline(always)]
pub fn random_run_w<T: Copy + Default, const W: usize>(
    key: [u32; 2],
    g0: u64,
    out: &mut [T],
    conv: impl Fn(&[u32; W]) -> T,
) {
    let per = 4 / W;
    let n = out.len();
    let mut cache = (u64::MAX, [0u32; 4]);
    let one = |g: u64, cache: &mut (u64, [u32; 4])| {
        let r = stream_words(key, g, W, cache);
        conv(&std::array::from_fn(|k| r[k]))
    };
    let mut i = 0;
    while i < n && !(g0 + i as u64).is_multiple_of(per as u64) {
        out[i] = one(g0 + i as u64, &mut cache);
        i += 1;
    }
    while i + 8 * per <= n {
        let lanes = philox_x8(key, (g0 + i as u64) / per as u64);
        let dst = &mut out[i..i + 8 * per];
        for v in 0..per {
            // One value per lane in a loop over lanes (it vectorises), then stored in order.
            let mut vals = [T::default(); 8];
            for (b, x) in vals.iter_mut().enumerate() {
                let words: [u32; W] = std::array::from_fn(|k| lanes[v * W + k][b]);
                *x = conv(&words);
            }
            for (b, x) in vals.into_iter().enumerate() {
                dst[b * per + v] = x;
            }
        }
        i += 8 * per;
    }
    while i < n {
        out[i] = one(g0 + i as u64, &mut cache);
        i += 1;
    }
}

/// SplitMix64's output function (Steele, Lea and Flood, OOPSLA'14): the Hash32 generator's key
/// from a seed, so that nearby seeds give unrelated keys.
pub fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Chris Wellons' `lowbias32` integer hash (hash-prospector), a bijection of `u32`.
#[inline(always)]
pub fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// Word `c` of the Hash32 generator with `key`: `lowbias32(lowbias32(c + key[0]) ^ key[1])`,
/// 32-bit operations only (a keyed bijection of the 32-bit counter: period 2^32 words).
#[inline(always)]
pub fn hash32(key: [u32; 2], c: u32) -> u32 {
    lowbias32(lowbias32(c.wrapping_add(key[0])) ^ key[1])
}

/// How many 32-bit words one value of `dist` takes (see [`words_per_value`]); exponential takes
/// the words of a uniform, integers one.
pub fn dist_words(dist: RandomDist, f64: bool) -> usize {
    match dist {
        RandomDist::Uniform | RandomDist::Exponential => 1 + f64 as usize,
        RandomDist::Normal => words_per_value(true, f64),
        RandomDist::Integers => 1,
    }
}

/// The `w` words of stream element `g` (the rest zero). Philox: [`stream_words`] (words of a
/// 128-bit block, `cache` keeps the last block). Hash32: words `g * w + j` (mod 2^32) for `j < w`.
#[inline]
pub fn random_words(
    alg: RngAlgorithm,
    key: [u32; 2],
    g: u64,
    w: usize,
    cache: &mut (u64, [u32; 4]),
) -> [u32; 4] {
    match alg {
        RngAlgorithm::Philox => stream_words(key, g, w, cache),
        RngAlgorithm::Hash32 => {
            let c = (g as u32).wrapping_mul(w as u32);
            std::array::from_fn(|j| {
                if j < w {
                    hash32(key, c.wrapping_add(j as u32))
                } else {
                    0
                }
            })
        }
    }
}

/// Hash32's [`random_run_w`]: `out[i] = conv(words of element g0 + i)`, eight elements at a time
/// as lanes (the words of all eight first, then one value per lane: both loops vectorise).
#[inline(always)]
pub fn hash_run_w<T, const W: usize>(
    key: [u32; 2],
    g0: u64,
    out: &mut [T],
    conv: impl Fn(&[u32; W]) -> T,
) {
    const L: usize = 8;
    let mut c0 = (g0 as u32).wrapping_mul(W as u32);
    let mut chunks = out.chunks_exact_mut(L);
    for ch in &mut chunks {
        let mut words = [[0u32; L]; W];
        for (j, lane) in words.iter_mut().enumerate() {
            for (l, v) in lane.iter_mut().enumerate() {
                *v = hash32(key, c0.wrapping_add((l * W + j) as u32));
            }
        }
        for (l, o) in ch.iter_mut().enumerate() {
            let r: [u32; W] = std::array::from_fn(|j| words[j][l]);
            *o = conv(&r);
        }
        c0 = c0.wrapping_add((L * W) as u32);
    }
    for o in chunks.into_remainder() {
        *o = conv(&std::array::from_fn(|j| {
            hash32(key, c0.wrapping_add(j as u32))
        }));
        c0 = c0.wrapping_add(W as u32);
    }
}

/// `out[i] = conv(words of stream element g0 + i)` for either generator, `W` words per value.
/// On x86-64 CPUs with AVX2 the loops run in a copy compiled for AVX2 (eight u32 or four f64
/// lanes; the crate itself targets baseline x86-64, SSE2). Both copies compute the same bits:
/// no fused multiply-adds either way.
#[inline]
pub fn random_fill<T: Copy + Default, const W: usize>(
    alg: RngAlgorithm,
    key: [u32; 2],
    g0: u64,
    out: &mut [T],
    conv: impl Fn(&[u32; W]) -> T,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { random_fill_avx2::<T, W>(alg, key, g0, out, conv) };
    }
    random_fill_any::<T, W>(alg, key, g0, out, conv)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn random_fill_avx2<T: Copy + Default, const W: usize>(
    alg: RngAlgorithm,
    key: [u32; 2],
    g0: u64,
    out: &mut [T],
    conv: impl Fn(&[u32; W]) -> T,
) {
    random_fill_any::<T, W>(alg, key, g0, out, conv)
}

#[inline(always)]
fn random_fill_any<T: Copy + Default, const W: usize>(
    alg: RngAlgorithm,
    key: [u32; 2],
    g0: u64,
    out: &mut [T],
    conv: impl Fn(&[u32; W]) -> T,
) {
    match alg {
        RngAlgorithm::Philox => random_run_w::<T, W>(key, g0, out, conv),
        RngAlgorithm::Hash32 => hash_run_w::<T, W>(key, g0, out, conv),
    }
}

/// Standard exponential f32 from one word: `-ln(u1)` with `u1 = (w >> 8) + 1` over 2^24, in
/// (0, 1], through [`rng_ln`] in f64 and rounded once (`0 - ln`, so `u1 = 1` gives +0).
#[inline(always)]
pub fn exponential_f32(w: u32) -> f32 {
    let u1 = ((w >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0);
    (0.0 - rng_ln(u1 as f64)) as f32
}
/// Standard exponential f64 from two words: `-ln(1 - u53)` through [`rng_ln`].
#[inline(always)]
pub fn exponential_f64(hi: u32, lo: u32) -> f64 {
    0.0 - rng_ln(1.0 - uniform_f64(hi, lo))
}
/// [`RandomDist::Integers`]' multiplier for `range` (2^32 for 0: the word itself).
#[inline]
pub fn integers_multiplier(range: u32) -> u64 {
    if range == 0 { 1 << 32 } else { range as u64 }
}
/// An integer in `[0, m)` from one word by Lemire's multiply-shift, `m` from
/// [`integers_multiplier`].
#[inline(always)]
pub fn integer_u32(w: u32, m: u64) -> u32 {
    ((w as u64 * m) >> 32) as u32
}
/// The f32 value of `dist` (not integers) from its words.
#[inline(always)]
pub fn random_f32(dist: RandomDist, r: &[u32]) -> f32 {
    match dist {
        RandomDist::Uniform => uniform_f32(r[0]),
        RandomDist::Normal => normal_f32(r[0], r[1]),
        RandomDist::Exponential => exponential_f32(r[0]),
        RandomDist::Integers => unreachable!("integers are u32"),
    }
}
/// The f64 value of `dist` (not integers) from its words.
#[inline(always)]
pub fn random_f64(dist: RandomDist, r: &[u32]) -> f64 {
    match dist {
        RandomDist::Uniform => uniform_f64(r[0], r[1]),
        RandomDist::Normal => normal_f64([r[0], r[1], r[2], r[3]]),
        RandomDist::Exponential => exponential_f64(r[0], r[1]),
        RandomDist::Integers => unreachable!("integers are u32"),
    }
}

/// Uniform f32 in [0, 1) from one word (24 random bits).
#[inline]
pub fn uniform_f32(w: u32) -> f32 {
    (w >> 8) as f32 * (1.0 / 16_777_216.0)
}
/// Uniform f64 in [0, 1) from two words (53 random bits).
#[inline]
pub fn uniform_f64(hi: u32, lo: u32) -> f64 {
    // `((hi << 32 | lo) >> 11) / 2^53` as the sum of its 32 high and 21 low bits, each exact and
    // not overlapping, so the sum is exact: the same value, from u32 conversions (which vectorise;
    // AVX2 has no u64 to f64 conversion).
    hi as f64 * (1.0 / 4_294_967_296.0) + (lo >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}
/// Standard normal f32 by Box-Muller from two words: `sqrt(-2 ln u1) cos(2 pi u2)` in f32, with
/// `ln` and `cos` of [`rng_ln`] and [`rng_cos`] rounded to f32 (within 1 ulp of the correctly
/// rounded values; the native tier's C computes the same bits).
#[inline(always)]
pub fn normal_f32(w0: u32, w1: u32) -> f32 {
    let u1 = ((w0 >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0); // (0, 1]
    let u2 = uniform_f32(w1);
    let l = rng_ln(u1 as f64) as f32;
    let c = rng_cos((std::f32::consts::TAU * u2) as f64) as f32;
    (-2.0 * l).sqrt() * c
}
/// Standard normal f64 by Box-Muller from four words (`ln` and `cos` of [`rng_ln`], [`rng_cos`]).
#[inline(always)]
pub fn normal_f64(w: [u32; 4]) -> f64 {
    let u1 = 1.0 - uniform_f64(w[0], w[1]); // (0, 1]
    let u2 = uniform_f64(w[2], w[3]);
    (-2.0 * rng_ln(u1)).sqrt() * rng_cos(std::f64::consts::TAU * u2)
}

// The generators' `ln` and `cos`: fdlibm's algorithms (as in musl's log.c, __rem_pio2.c, __sin.c
// and __cos.c), without branches so that they vectorise, for the arguments the generators pass.
// primitives/c/arrayflow.h (af_rng_ln, af_rng_cos) performs the same operations in the same order,
// so both CPU tiers produce the same bits. Both are within 1 ulp of the correctly rounded value.
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG1: f64 = 6.666_666_666_666_735_130e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG2: f64 = 3.999_999_999_940_941_908e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG3: f64 = 2.857_142_874_366_239_149e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG4: f64 = 2.222_219_843_214_978_396e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG5: f64 = 1.818_357_216_161_805_012e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG6: f64 = 1.531_383_769_920_937_332e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const LG7: f64 = 1.479_819_860_511_658_591e-01;

/// Natural logarithm of a positive, normal, finite `x` (the generators pass (0, 1]).
#[inline(always)]
pub fn rng_ln(x: f64) -> f64 {
    let bits = x.to_bits();
    // x = 2^k * m with m in [sqrt(2)/2, sqrt(2)).
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (hx >> 20) as i32 - 0x3ff;
    let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits(((hx as u64) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = k as f64;
    ((((s * (hfsq + r)) + dk * LN2_LO) - hfsq) + f) + dk * LN2_HI
}

/// 2 / pi (fdlibm's invpio2 is the same double).
const INVPIO2: f64 = std::f64::consts::FRAC_2_PI;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const PIO2_1: f64 = 1.570_796_326_734_125_614_17e+00;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const PIO2_2: f64 = 6.077_100_506_303_965_976_60e-11;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const PIO2_3: f64 = 2.022_266_248_711_166_455_80e-21;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const PIO2_3T: f64 = 8.478_427_660_368_899_569_97e-32;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S1: f64 = -1.666_666_666_666_663_243_48e-01;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S2: f64 = 8.333_333_333_322_489_461_24e-03;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S3: f64 = -1.984_126_982_985_794_931_34e-04;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S4: f64 = 2.755_731_370_707_006_767_89e-06;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S5: f64 = -2.505_076_025_340_686_341_95e-08;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const S6: f64 = 1.589_690_995_211_550_102_21e-10;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C1: f64 = 4.166_666_666_666_660_190_37e-02;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C2: f64 = -1.388_888_888_887_410_957_49e-03;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C3: f64 = 2.480_158_728_947_672_941_78e-05;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C4: f64 = -2.755_731_435_139_066_330_35e-07;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C5: f64 = 2.087_572_321_298_174_827_90e-09;
#[allow(clippy::excessive_precision)] // fdlibm\'s decimal constants, as published
const C6: f64 = -1.135_964_755_778_819_482_65e-11;

/// Cosine of `x` in [0, 2 pi] (the generators pass 2 pi u2): `x - n pi/2` by Cody and Waite with
/// 151 bits of pi/2, then fdlibm's sine or cosine polynomial of the reduced argument.
#[inline(always)]
pub fn rng_cos(x: f64) -> f64 {
    // SAFETY: x is in [0, 2 pi], so the value is in [0.5, 4.5] (a plain `as` would clamp,
    // which kept the loops over lanes from vectorising).
    let n = unsafe { (x * INVPIO2 + 0.5).to_int_unchecked::<i32>() };
    let fnk = n as f64;
    // x - n pi/2 as y0 + y1, pi/2 = PIO2_1 + PIO2_2 + PIO2_3 + PIO2_3T (the first three have 33
    // bits, so their products with n <= 4 are exact, and so is x - n PIO2_1 by Sterbenz); the
    // rounding error of subtracting n PIO2_2 is kept exactly (TwoSum).
    let t = x - fnk * PIO2_1;
    let a = fnk * PIO2_2;
    let r = t - a;
    let bb = r - t;
    let e = (t - (r - bb)) + (-a - bb);
    let lo = (e - fnk * PIO2_3) - fnk * PIO2_3T;
    let y0 = r + lo;
    let y1 = (r - y0) + lo;
    // __cos(y0, y1) and __sin(y0, y1, 1).
    let z = y0 * y0;
    let ww = z * z;
    let rc = z * (C1 + z * (C2 + z * C3)) + (ww * ww) * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let one_hz = 1.0 - hz;
    let cos = one_hz + (((1.0 - one_hz) - hz) + (z * rc - y0 * y1));
    let v = z * y0;
    let rs = (S2 + z * (S3 + z * S4)) + (z * ww) * (S5 + z * S6);
    let sin = y0 - ((z * (0.5 * y1 - v * rs) - y1) - v * S1);
    // The quadrant's choice and sign by bit masks, not branches (a mispredicted branch per value
    // cost more than the polynomials); the same values as the C header's.
    let pick = 0u64.wrapping_sub((n & 1) as u64);
    let bits = (cos.to_bits() & !pick) | (sin.to_bits() & pick);
    f64::from_bits(bits ^ ((((n + 1) >> 1) & 1) as u64) << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors published with Random123 (kat_vectors, philox4x32_10).
    #[test]
    fn batched_stream_matches_element_by_element() {
        let key = [0x1234_5678, 0x9abc_def0];
        for w in [1usize, 2, 4] {
            for g0 in [0u64, 1, 3, 5, 1 << 33] {
                let mut out = vec![[0u32; 4]; 103];
                random_run(key, g0, w, &mut out, |r| {
                    let mut a = [0; 4];
                    a[..w].copy_from_slice(r);
                    a
                });
                let mut cache = (u64::MAX, [0; 4]);
                for (i, o) in out.iter().enumerate() {
                    assert_eq!(
                        *o,
                        stream_words(key, g0 + i as u64, w, &mut cache),
                        "w {w} g0 {g0} i {i}"
                    );
                }
            }
        }
    }

    /// Units in the last place between two f64 values of the same sign.
    fn ulps64(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        let k = |x: f64| {
            let i = x.to_bits() as i64;
            if i < 0 { i64::MIN - i } else { i }
        };
        k(a).abs_diff(k(b))
    }
    fn ulps32(a: f32, b: f32) -> u64 {
        let k = |x: f32| {
            let i = x.to_bits() as i32 as i64;
            if i < 0 { i32::MIN as i64 - i } else { i }
        };
        k(a).abs_diff(k(b))
    }

    /// xorshift64*: the test's own points.
    fn points(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn rng_ln_and_cos_f32_every_generator_input() {
        // Every u1 and every u2 an f32 normal can use (2^24 each), against std in f64 rounded.
        let (mut worst_ln, mut worst_cos) = (0, 0);
        for j in 0..1u32 << 24 {
            let u1 = (j as f32 + 1.0) * (1.0 / 16_777_216.0);
            let got = rng_ln(u1 as f64) as f32;
            worst_ln = worst_ln.max(ulps32(got, (u1 as f64).ln() as f32));
            let x = std::f32::consts::TAU * (j as f32 * (1.0 / 16_777_216.0));
            let got = rng_cos(x as f64) as f32;
            worst_cos = worst_cos.max(ulps32(got, (x as f64).cos() as f32));
        }
        assert!(worst_ln <= 1, "ln f32: {worst_ln} ulp");
        assert!(worst_cos <= 1, "cos f32: {worst_cos} ulp");
    }

    #[test]
    fn rng_ln_and_cos_f64_against_std() {
        let mut next = points(0x1e57);
        let (mut worst_ln, mut worst_cos) = (0, 0);
        for i in 0..3_000_000u64 {
            // u1 = 1 - u53 over (0, 1], also scaled into every binade down to 2^-60.
            let u = (next() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0);
            let x = if i % 3 == 0 {
                1.0 - u
            } else {
                (1.0 - u) * 2f64.powi(-((i % 61) as i32))
            };
            worst_ln = worst_ln.max(ulps64(rng_ln(x), x.ln()));
            let x =
                std::f64::consts::TAU * ((next() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0));
            worst_cos = worst_cos.max(ulps64(rng_cos(x), x.cos()));
        }
        // Next to the zeros and extrema (the doubles nearest k pi / 2), where the reduction
        // cancels: relative accuracy must hold there too.
        for k in 0..=4 {
            let c = k as f64 * std::f64::consts::FRAC_PI_2;
            let mut x = c;
            for _ in 0..2000 {
                worst_cos = worst_cos.max(ulps64(rng_cos(x), x.cos()));
                x = f64::from_bits(x.to_bits() + 1);
            }
            let mut x = c;
            for _ in 0..2000 {
                if x > 0.0 {
                    worst_cos = worst_cos.max(ulps64(rng_cos(x), x.cos()));
                    x = f64::from_bits(x.to_bits() - 1);
                }
            }
        }
        assert!(worst_ln <= 1, "ln f64: {worst_ln} ulp");
        assert!(worst_cos <= 1, "cos f64: {worst_cos} ulp");
    }

    #[test]
    fn philox_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }
}
