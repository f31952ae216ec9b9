//! Scalar helpers for the CPU target's primitive sources: the integer element trait and the
//! Philox4x32-10 counter-based generator (the same stream every executor produces).

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
}
// The platform C library's error functions (std links it already): the native tier's generated C
// calls the same ones, so both CPU tiers agree bit for bit.
unsafe extern "C" {
    safe fn erff(x: f32) -> f32;
    safe fn erfcf(x: f32) -> f32;
    #[link_name = "erf"]
    safe fn erf_f64(x: f64) -> f64;
    #[link_name = "erfc"]
    safe fn erfc_f64(x: f64) -> f64;
}
impl Real for f32 {
    #[inline]
    fn erf(self) -> Self {
        erff(self)
    }
    #[inline]
    fn erfc(self) -> Self {
        erfcf(self)
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
}

/// Inverse hyperbolic cosine, accurate near 1 (std's `ln(x + sqrt(x^2 - 1))` loses the digits
/// of `x - 1` there): `ln1p(t + sqrt(t * (t + 2)))` with `t = x - 1` below 2. NaN below 1.
#[inline]
pub fn acosh_accurate<F: num_traits::Float>(x: F) -> F {
    let two = F::one() + F::one();
    if x < two {
        let t = x - F::one();
        (t + (t * (t + two)).sqrt()).ln_1p()
    } else {
        x.acosh()
    }
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
#[inline]
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
pub fn random_run<T>(key: [u32; 2], g0: u64, w: usize, out: &mut [T], conv: impl Fn(&[u32]) -> T) {
    let per = 4 / w;
    let n = out.len();
    let mut cache = (u64::MAX, [0u32; 4]);
    let mut i = 0;
    while i < n && !(g0 + i as u64).is_multiple_of(per as u64) {
        out[i] = conv(&stream_words(key, g0 + i as u64, w, &mut cache)[..w]);
        i += 1;
    }
    let mut words = [0u32; 4];
    while i + 8 * per <= n {
        let lanes = philox_x8(key, (g0 + i as u64) / per as u64);
        for b in 0..8 {
            for v in 0..per {
                for k in 0..w {
                    words[k] = lanes[v * w + k][b];
                }
                out[i + b * per + v] = conv(&words[..w]);
            }
        }
        i += 8 * per;
    }
    while i < n {
        out[i] = conv(&stream_words(key, g0 + i as u64, w, &mut cache)[..w]);
        i += 1;
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
    ((((hi as u64) << 32) | lo as u64) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}
/// Standard normal f32 by Box-Muller from two words.
#[inline]
pub fn normal_f32(w0: u32, w1: u32) -> f32 {
    let u1 = ((w0 >> 8) as f32 + 1.0) * (1.0 / 16_777_216.0); // (0, 1]
    let u2 = uniform_f32(w1);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
/// Standard normal f64 by Box-Muller from four words.
#[inline]
pub fn normal_f64(w: [u32; 4]) -> f64 {
    let u1 = 1.0 - uniform_f64(w[0], w[1]); // (0, 1]
    let u2 = uniform_f64(w[2], w[3]);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
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
