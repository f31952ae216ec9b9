//! The vectorisable `exp`, `ln`, `erf` and `erfc` of both CPU tiers (`primitives/vmath.rs`, and
//! the same operations in `primitives/c/arrayflow.h`): accuracy (f32 against the f64 functions,
//! in ulps of the exact value: `exp`/`ln` within 1, `erf`/`erfc` within 2; f64 within 1 ulp of the
//! C library's, itself within about half an ulp; the README promises 32), the special values, and
//! the tile VM and the native C tier agreeing bit for bit through the public API.
//!
//! `exhaustive_f32` walks all 2^32 f32 inputs of each function (a minute or two per function in
//! a release build): `cargo test --release --test vmath -- --ignored --nocapture`.

use arrayflow::primitives::vmath::{erf_f32, erfc_f32, exp_f32, exp_f64, ln_f32, ln_f64};
use arrayflow::{Array, Backend, NativeMode, Runtime};
use parking_lot::Mutex;
use rayon::prelude::*;

static SERIAL: Mutex<()> = Mutex::new(());

/// Distance of `got` from the exact value `want` in ulps of f32 at `want` (fractional); 0 where
/// both are the same NaN-ness or the same infinity, infinite where they differ in kind. An f32
/// infinity for an exact value past the largest finite f32 (by at least half an ulp) is 0.
fn ulps(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got.is_infinite() {
        let edge = f32::MAX as f64 + 2f64.powi(103);
        return if want.abs() >= edge && (got > 0.0) == (want > 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() {
        return f64::INFINITY;
    }
    // The ulp of f32 at |want|: 2^(e - 23) with 2^e <= |want|, and 2^-149 for subnormals.
    let e = if want == 0.0 {
        -126
    } else {
        (want.abs().log2().floor() as i32).max(-126)
    };
    ((got as f64) - want).abs() / 2f64.powi(e - 23)
}

/// The largest error of `f` against `reference` over `xs`, with the input where it is.
fn worst(xs: &[f32], f: fn(f32) -> f32, reference: fn(f64) -> f64) -> (f64, f32) {
    xs.par_iter()
        .map(|&x| (ulps(f(x), reference(x as f64)), x))
        .reduce(|| (0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

/// Every 997th bit pattern (both signs, every exponent, subnormals, infinities, NaNs) plus
/// special values and their neighbours.
fn sample() -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=u32::MAX / 997)
        .map(|i| f32::from_bits(i * 997))
        .collect();
    for v in [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(1),
        88.72283,
        -87.33655,
        -103.97208,
        -104.0,
        89.0,
        std::f32::consts::LN_2,
        std::f32::consts::SQRT_2,
        3.92,
        3.93,
        10.05,
        10.5,
        -10.5,
    ] {
        xs.extend([
            v,
            f32::from_bits(v.to_bits().wrapping_add(1)),
            f32::from_bits(v.to_bits().wrapping_sub(1)),
        ]);
    }
    xs
}

#[test]
fn exp_and_ln_within_one_ulp_on_a_sample() {
    let xs = sample();
    let (e, at) = worst(&xs, exp_f32, f64::exp);
    assert!(e <= 1.0, "exp: {e} ulp at {at:e}");
    let (e, at) = worst(&xs, ln_f32, f64::ln);
    assert!(e <= 1.0, "ln: {e} ulp at {at:e}");
}

/// `erf` and `erfc` on the sample and on a dense sweep of [-11, 11] (every input where either
/// function is not constant in f32, at a spacing of 2^-17, plus the region boundaries 1, 3.93 and
/// 10.5 and their neighbours), against the C library's f64 functions (within an ulp of f64).
#[test]
fn erf_and_erfc_within_two_ulp() {
    let mut xs = sample();
    xs.extend((-(11 << 17)..=(11 << 17)).map(|i| i as f32 / 131_072.0));
    for v in [1.0f32, 3.93, 10.5, 0.5, 2.0] {
        for s in [v, -v] {
            xs.extend((0..64).map(|d| f32::from_bits(s.to_bits() - 32 + d)));
        }
    }
    let (e, at) = worst(&xs, erf_f32, libm::erf);
    assert!(e <= 2.0, "erf: {e} ulp at {at:e}");
    let (e, at) = worst(&xs, erfc_f32, libm::erfc);
    assert!(e <= 2.0, "erfc: {e} ulp at {at:e}");
    let bits = |a: f32, b: f32| assert_eq!(a.to_bits(), b.to_bits(), "{a:e} vs {b:e}");
    for f in [erf_f32, erfc_f32] {
        assert!(f(f32::NAN).is_nan() && f(-f32::NAN).is_nan());
    }
    bits(erf_f32(0.0), 0.0);
    bits(erf_f32(-0.0), -0.0);
    bits(erf_f32(f32::INFINITY), 1.0);
    bits(erf_f32(f32::NEG_INFINITY), -1.0);
    bits(erf_f32(3.92), 1.0);
    bits(
        erf_f32(f32::from_bits(1)),
        f32::from_bits(1) + f32::from_bits(1) * 0.128_379_17,
    );
    bits(erfc_f32(0.0), 1.0);
    bits(erfc_f32(-0.0), 1.0);
    bits(erfc_f32(f32::INFINITY), 0.0);
    bits(erfc_f32(f32::NEG_INFINITY), 2.0);
    bits(erfc_f32(10.06), libm::erfc(10.06f32 as f64) as f32); // subnormal
    bits(erfc_f32(10.5), 0.0);
}

#[test]
fn special_values() {
    let bits = |a: f32, b: f32| assert_eq!(a.to_bits(), b.to_bits(), "{a:e} vs {b:e}");
    assert!(exp_f32(f32::NAN).is_nan() && exp_f32(-f32::NAN).is_nan());
    bits(exp_f32(f32::INFINITY), f32::INFINITY);
    bits(exp_f32(f32::NEG_INFINITY), 0.0);
    bits(exp_f32(0.0), 1.0);
    bits(exp_f32(-0.0), 1.0);
    // The largest input below the overflow: finite, within an ulp.
    let top = exp_f32(88.72283);
    assert!(
        top.is_finite() && ulps(top, (88.72283f32 as f64).exp()) <= 1.0,
        "{top:e}"
    );
    bits(exp_f32(88.72284), f32::INFINITY);
    bits(exp_f32(f32::MAX), f32::INFINITY);
    bits(exp_f32(-103.0), (-103f64).exp() as f32); // subnormal, correctly rounded
    bits(exp_f32(-103.97207), f32::from_bits(1)); // the smallest subnormal
    bits(exp_f32(-103.97209), 0.0);
    bits(exp_f32(-f32::MAX), 0.0);
    assert!(ln_f32(f32::NAN).is_nan() && ln_f32(-f32::NAN).is_nan());
    bits(ln_f32(f32::INFINITY), f32::INFINITY);
    assert!(ln_f32(f32::NEG_INFINITY).is_nan());
    assert!(ln_f32(-1.0).is_nan() && ln_f32(-f32::from_bits(1)).is_nan());
    bits(ln_f32(0.0), f32::NEG_INFINITY);
    bits(ln_f32(-0.0), f32::NEG_INFINITY);
    bits(ln_f32(1.0), 0.0);
    // Subnormal inputs: ln(2^-149) = -149 ln 2.
    bits(
        ln_f32(f32::from_bits(1)),
        (-149.0 * std::f64::consts::LN_2) as f32,
    );
    for b in [1u32, 2, 3, 0x1234, 0x7f_ffff] {
        let x = f32::from_bits(b);
        assert!(ulps(ln_f32(x), (x as f64).ln()) <= 1.0, "ln({x:e})");
    }
}

/// Floats between `a` and `b` (0 for the same value or both NaN).
fn steps64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| {
        let b = x.to_bits() as i64;
        if b < 0 { i64::MIN - b } else { b }
    };
    key(a).abs_diff(key(b))
}

/// Random bit patterns (every exponent, both signs, NaNs) and values where `f` is finite.
fn sample64(n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s
    };
    let mut xs: Vec<f64> = (0..n / 2).map(|_| f64::from_bits(next())).collect();
    xs.extend((0..n / 2).map(|_| lo + (next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)));
    xs
}

#[test]
fn f64_within_one_step_of_the_c_library() {
    for (name, f, lib, lo, hi) in [
        (
            "exp",
            exp_f64 as fn(f64) -> f64,
            f64::exp as fn(f64) -> f64,
            -746.0,
            710.0,
        ),
        ("ln", ln_f64, f64::ln, 0.0, 4.0),
    ] {
        let xs = sample64(400_000, lo, hi);
        let (d, at) = xs
            .par_iter()
            .map(|&x| (steps64(f(x), lib(x)), x))
            .reduce(|| (0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
        assert!(d <= 1, "{name}_f64: {d} ulp from the C library at {at:e}");
    }
    let bits = |a: f64, b: f64| assert_eq!(a.to_bits(), b.to_bits(), "{a:e} vs {b:e}");
    assert!(exp_f64(f64::NAN).is_nan());
    bits(exp_f64(f64::INFINITY), f64::INFINITY);
    bits(exp_f64(f64::NEG_INFINITY), 0.0);
    bits(exp_f64(0.0), 1.0);
    bits(exp_f64(709.782712893384), 1.7976931348622732e308);
    bits(exp_f64(709.7827128933841), f64::INFINITY);
    bits(exp_f64(-745.1332191019411), f64::from_bits(1));
    bits(exp_f64(-745.1332191019412), 0.0);
    bits(exp_f64(-740.0), (-740f64).exp());
    assert!(
        ln_f64(f64::NAN).is_nan() && ln_f64(-1.0).is_nan() && ln_f64(f64::NEG_INFINITY).is_nan()
    );
    bits(ln_f64(f64::INFINITY), f64::INFINITY);
    bits(ln_f64(0.0), f64::NEG_INFINITY);
    bits(ln_f64(-0.0), f64::NEG_INFINITY);
    bits(ln_f64(1.0), 0.0);
    for x in [f64::from_bits(1), 1e-310, f64::MIN_POSITIVE, f64::MAX] {
        assert!(steps64(ln_f64(x), x.ln()) <= 1, "ln({x:e})");
    }
}

/// `f` through the public API on the tile VM and on the native tier.
fn both_tiers<T: arrayflow::Float>(xs: &[T], f: fn(&Array<T>) -> Array<T>) -> (Vec<T>, Vec<T>) {
    let a = Array::from_slice(xs, &[xs.len()]);
    let mode_before = Runtime::native();
    Runtime::set_native(NativeMode::Off);
    let vm = f(&a).to_vec().unwrap();
    Runtime::set_native(NativeMode::Require);
    let before = Runtime::stats();
    let native = f(&a).to_vec().unwrap();
    let s = Runtime::stats().since(&before);
    Runtime::set_native(mode_before);
    assert!(
        s.native_launches >= 1 && s.native_launches == s.kernels_launched,
        "{s:?}"
    );
    (vm, native)
}

/// Asserts that both tiers give `scalar(x)` for every `x`, bit for bit (any NaN for a NaN: `key`
/// gives the bits, `None` for a NaN).
fn check_tiers<T: arrayflow::Float + std::fmt::LowerExp>(
    name: &str,
    xs: &[T],
    scalar: fn(T) -> T,
    api: fn(&Array<T>) -> Array<T>,
    key: fn(T) -> Option<u64>,
) {
    let (vm, native) = both_tiers(xs, api);
    for (i, &x) in xs.iter().enumerate() {
        let want = scalar(x);
        let same = |g: T| key(g) == key(want);
        assert!(
            same(vm[i]),
            "{name}({x:e}): tile VM {:e}, want {want:e}",
            vm[i]
        );
        assert!(
            same(native[i]),
            "{name}({x:e}): native {:e}, want {want:e}",
            native[i]
        );
    }
}

#[test]
fn tile_vm_and_native_tier_agree_bit_for_bit() {
    if Runtime::backend() != Backend::Cpu {
        println!("skipped on a device executor: kernels run on the device, not the CPU tiers");
        return;
    }
    let _g = SERIAL.lock();
    // Every 65521st bit pattern, specials, and a dense run of typical arguments.
    let mut xs: Vec<f32> = (0..=u32::MAX / 65521)
        .map(|i| f32::from_bits(i * 65521))
        .collect();
    xs.extend(sample().into_iter().rev().take(60));
    xs.extend((0..20_000).map(|i| (i as f32 - 10_000.0) * 0.0125));
    let b32 = |x: f32| (!x.is_nan()).then_some(x.to_bits() as u64);
    check_tiers("exp", &xs, exp_f32, |a| a.exp(), b32);
    check_tiers("ln", &xs, ln_f32, |a| a.ln(), b32);
    check_tiers("erf", &xs, erf_f32, |a| a.erf(), b32);
    check_tiers("erfc", &xs, erfc_f32, |a| a.erfc(), b32);
    // Fused with other work, as in softmax and Black-Scholes.
    check_tiers(
        "exp(x / 2) + ln|x|",
        &xs,
        |x| exp_f32(x / 2.0) + ln_f32(x.abs()),
        |a| (a / 2.0).exp() + a.abs().ln(),
        b32,
    );
    check_tiers(
        "erf(x * 0.7) * erfc(x)",
        &xs,
        |x| erf_f32(x * 0.7) * erfc_f32(x),
        |a| (a * 0.7).erf() * a.erfc(),
        b32,
    );
    let mut xs = sample64(60_000, -750.0, 750.0);
    xs.extend([
        0.0,
        -0.0,
        1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::from_bits(1),
    ]);
    xs.extend([
        709.782712893384,
        709.7827128933841,
        -745.1332191019411,
        f64::MAX,
    ]);
    let b64 = |x: f64| (!x.is_nan()).then_some(x.to_bits());
    check_tiers("exp", &xs, exp_f64, |a| a.exp(), b64);
    check_tiers("ln", &xs, ln_f64, |a| a.ln(), b64);
}

#[test]
#[ignore = "all 2^32 inputs: cargo test --release --test vmath -- --ignored --nocapture"]
fn exhaustive_f32() {
    let all = |f: fn(f32) -> f32, reference: fn(f64) -> f64| {
        (0..=u32::MAX)
            .into_par_iter()
            .map(|b| {
                let x = f32::from_bits(b);
                (ulps(f(x), reference(x as f64)), x)
            })
            .reduce(|| (0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    };
    let (e, at) = all(exp_f32, f64::exp);
    println!("exp_f32: worst {e:.4} ulp at {at:e}");
    assert!(e <= 1.0, "exp: {e} ulp at {at:e}");
    let (e, at) = all(ln_f32, f64::ln);
    println!("ln_f32: worst {e:.4} ulp at {at:e}");
    assert!(e <= 1.0, "ln: {e} ulp at {at:e}");
    let (e, at) = all(erf_f32, libm::erf);
    println!("erf_f32: worst {e:.4} ulp at {at:e}");
    assert!(e <= 2.0, "erf: {e} ulp at {at:e}");
    let (e, at) = all(erfc_f32, libm::erfc);
    println!("erfc_f32: worst {e:.4} ulp at {at:e}");
    assert!(e <= 2.0, "erfc: {e} ulp at {at:e}");
}
