//! Vectorisable elementary functions for both CPU tiers: `exp` and `ln` (f32 and f64), `erf` and
//! `erfc` (f32) written from basic arithmetic (no library call, no branch in the main path, so the C compiler vectorises a fused
//! loop that uses them). The C header (`primitives/c/arrayflow.h`: `af_exp_f32`, `af_ln_f32`,
//! `af_erf_f32`, `af_erfc_f32`, ...)
//! has the same operations in the same order (no FMA: the native tier compiles with
//! `-ffp-contract=off`, and Rust never fuses `*` and `+`), so the tile VM and the native tier agree
//! bit for bit. Special values are chosen by selects at the end (NaN, infinities, zero, overflow,
//! subnormal results and inputs). f64 `erf`/`erfc` still call the C library.
//!
//! Accuracy (`tests/vmath.rs`), against the exact value: over every f32 input, `exp_f32` within
//! 0.96 ulp, `ln_f32` within 0.84, `erf_f32` within 1.32 and `erfc_f32` within 0.52; on
//! 2 * 10^7 f64 inputs (random bits, and the range where results are finite), `exp_f64` within 0.9
//! ulp and `ln_f64` within 0.82 (the README promises 32).

/// `c ? a : b` (the C side selects by a bit mask: GCC keeps `?:` of a computed float as a branch,
/// which stops the loop from vectorising; the value is the same).
#[inline(always)]
fn select_f32(c: bool, a: f32, b: f32) -> f32 {
    if c { a } else { b }
}

/// `e^x` in f32 (SLEEF's `expf` polynomial): `n = round(x / ln 2)` by adding 1.5 * 2^23, `r = x - n
/// ln 2` with a Cody-Waite split (`n * LN2_HI` is exact), a degree-7 polynomial for `e^r`, then
/// `2^n` as two factors built from exponent bits (so results down to the subnormals round once).
/// `x` is clamped to [-104, 89] first: below, the result rounds to 0; above, it overflows to inf.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let x = select_f32(x > 89.0, 89.0, x);
    let x = select_f32(x < -104.0, -104.0, x);
    let t = x * std::f32::consts::LOG2_E + 12_582_912.0;
    let n = t - 12_582_912.0;
    // n as an integer, from the bits of t (a NaN gives garbage here and NaN below).
    let k = t.to_bits().wrapping_sub(0x4b40_0000) as i32;
    let r = x - n * 0.693_145_75; // 0x3f317200: 15 significant bits, so n * it is exact
    let r = r - n * 1.428_606_8e-6;
    let mut u = 0.000_198_527_62_f32;
    u = u * r + 0.001_393_043_6;
    u = u * r + 0.008_333_361;
    u = u * r + 0.041_666_485;
    u = u * r + 0.166_666_67;
    u = u * r + 0.5;
    let u = 1.0 + (r * r * u + r);
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    u * s1 * s2
}

/// Natural logarithm in f32 (fdlibm's `logf` as FreeBSD and musl write it): `x = 2^k (1 + f)` with
/// `1 + f` in [sqrt(2)/2, sqrt(2)) from the bits (a subnormal `x` scaled by 2^25 first), `s = f /
/// (2 + f)`, `ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))`, plus `k ln 2` split in two. Then 0 gives
/// -inf, a negative number NaN, +inf and NaN themselves.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let sub = x.to_bits() < 0x0080_0000;
    let xs = select_f32(sub, x * 33_554_432.0, x);
    let k0: i32 = if sub { -25 } else { 0 };
    let ix = xs.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = k0 + (ix >> 23) as i32 - 0x7f;
    let f = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (0.400_009_72 + w * 0.242_790_79);
    let t2 = z * (0.666_666_6 + w * 0.284_987_87);
    let big_r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    let r = s * (hfsq + big_r) + dk * 9.058_001e-6 - hfsq + f + dk * 0.693_138_1;
    let r = select_f32(x < f32::INFINITY, r, x);
    let r = select_f32(x < 0.0, f32::NAN, r);
    select_f32(x == 0.0, f32::NEG_INFINITY, r)
}

/// `c ? a : b` for f64 (see [`select_f32`]).
#[inline(always)]
fn select_f64(c: bool, a: f64, b: f64) -> f64 {
    if c { a } else { b }
}

/// `e^x` in f64 (fdlibm's `exp`): `n = round(x / ln 2)` by adding 1.5 * 2^52, `r = hi - lo` with
/// `hi = x - n LN2_HI` (exact) and `lo = n LN2_LO`, `c = r - r^2 P(r^2)`, `e^r = 1 - ((lo - r c /
/// (2 - c)) - hi)`, then `2^n` as two factors built from exponent bits. `x` is clamped to
/// [-746, 710] first.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    let x = select_f64(x > 710.0, 710.0, x);
    let x = select_f64(x < -746.0, -746.0, x);
    let t = x * std::f64::consts::LOG2_E + 6_755_399_441_055_744.0;
    let n = t - 6_755_399_441_055_744.0;
    // n as an integer: the low word of t's bits (two's complement).
    let k = t.to_bits() as u32 as i32;
    let hi = x - n * 0.693_147_180_369_123_8;
    let lo = n * 1.908_214_929_270_587_7e-10;
    let r = hi - lo;
    let z = r * r;
    let c = r - z
        * (0.166_666_666_666_666_02
            + z * (-0.002_777_777_777_701_559_3
                + z * (6.613_756_321_437_934e-5
                    + z * (-1.653_390_220_546_525_2e-6 + z * 4.138_136_797_057_238_5e-8))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f64::from_bits((k1.wrapping_add(1023) as i64 as u64) << 52);
    let s2 = f64::from_bits((k2.wrapping_add(1023) as i64 as u64) << 52);
    y * s1 * s2
}

/// Natural logarithm in f64 (fdlibm's `log`, as `cpu::rng_ln` without the special values): `x =
/// 2^k (1 + f)` with `1 + f` in [sqrt(2)/2, sqrt(2)) from the bits (a subnormal `x` scaled by
/// 2^54 first), `ln(1 + f)` from `s = f / (2 + f)`, plus `k ln 2` split in two; then 0 gives -inf,
/// a negative number NaN, +inf and NaN themselves.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    let sub = x.to_bits() < 0x0010_0000_0000_0000;
    let xs = select_f64(sub, x * 18_014_398_509_481_984.0, x);
    let k0: i32 = if sub { -54 } else { 0 };
    let bits = xs.to_bits();
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = k0 + (hx >> 20) as i32 - 0x3ff;
    let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let f = f64::from_bits(((hx as u64) << 32) | (bits & 0xffff_ffff)) - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w
        * (0.399_999_999_994_094_2 + w * (0.222_221_984_321_497_84 + w * 0.153_138_376_992_093_73));
    let t2 = z
        * (0.666_666_666_666_673_5
            + w * (0.285_714_287_436_623_9
                + w * (0.181_835_721_616_180_5 + w * 0.147_981_986_051_165_86)));
    let big_r = t2 + t1;
    let dk = k as f64;
    let r = ((((s * (hfsq + big_r)) + dk * 1.908_214_929_270_587_7e-10) - hfsq) + f)
        + dk * 0.693_147_180_369_123_8;
    let r = select_f64(x < f64::INFINITY, r, x);
    let r = select_f64(x < 0.0, f64::NAN, r);
    select_f64(x == 0.0, f64::NEG_INFINITY, r)
}

/// The error function in f32. `|x| < 1`: `x + x P(x^2)`, `P` a degree-6 fit of `erf(x) / x - 1`
/// (relative error 1.2e-9). `|x| >= 1`: `1 - e^(L(t - 2.5) - t^2)` with the sign of `x`, `t =
/// min(|x|, 3.93)` (past 3.92 the result rounds to 1), `L` a degree-6 fit of `ln(e^(t^2)
/// erfc(t))` (error 1.0e-9 weighted by `erfc(t)`). Both are computed and one is selected; `t^2`'s
/// rounding moves the result by at most a few 10^-9. NaN gives NaN, `±inf` gives `±1`.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let mut y = 7.853_841e-5_f32;
    y = y * z - 8.010_187_3e-4;
    y = y * z + 5.188_327e-3;
    y = y * z - 2.685_381_1e-2;
    y = y * z + 1.128_358_54e-1;
    y = y * z - 3.761_262_6e-1;
    y = y * z + 1.283_791_7e-1;
    let small = x + x * y;
    let t = select_f32(a > 3.93, 3.93, a);
    let s = t - 2.5;
    let mut l = 1.855_634_5e-4_f32;
    l = l * s - 1.560_452_7e-4;
    l = l * s + 2.457_712_5e-3;
    l = l * s - 1.071_781_2e-2;
    l = l * s + 5.611_462_5e-2;
    l = l * s - 3.526_939_7e-1;
    l = l * s - 1.556_817_8;
    let big = 1.0 - exp_f32(l - t * t);
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & 0x8000_0000));
    select_f32(a < 1.0, small, big)
}

/// The complementary error function in f32, computed in f64 (Juffa's form): `a = min(|x|, 10.5)`
/// (past 10.06 the result rounds to 0), `q = (a - 2) / (a + 2)` in [-1, 0.68], `S(q)` a degree-11
/// fit of `(1 + 2a) e^(a^2) erfc(a)` (relative error 1.0e-9), `erfc(a) = e^(-a^2) S / (1 + 2a)`
/// (`a^2` is exact in f64), and `2 - erfc(|x|)` for negative `x`; one rounding to f32 at the end.
#[inline(always)]
pub fn erfc_f32(x: f32) -> f32 {
    let xd = x as f64;
    let a = xd.abs();
    let a = select_f64(a > 10.5, 10.5, a);
    let q = (a - 2.0) / (a + 2.0);
    let mut p = 7.988_422_041_458_758e-5_f64;
    p = p * q + 1.705_061_057_171_104_2e-4;
    p = p * q - 4.003_501_155_407_713_4e-4;
    p = p * q - 1.421_674_150_023_498_3e-3;
    p = p * q + 1.252_068_461_527_370_4e-3;
    p = p * q + 8.709_290_181_636_178e-3;
    p = p * q - 8.030_647_367_903_5e-3;
    p = p * q - 5.421_783_429_548_11e-2;
    p = p * q + 1.640_510_135_002_954e-1;
    p = p * q - 1.660_305_226_434_676_5e-1;
    p = p * q - 9.276_381_983_174_066e-2;
    p = p * q + 1.276_978_382_699_619_7;
    let r = exp_f64(-(a * a)) * p / (1.0 + 2.0 * a);
    let r = select_f64(xd < 0.0, 2.0 - r, r);
    r as f32
}
