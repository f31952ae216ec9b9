//! Proof of the WGSL library's correctly rounded f32 `af_sqrt_f32` and `af_div_f32`
//! (primitives/wgsl/arrayflow.wgsl) on plain CPU f32: each algorithm is emulated line by line (the
//! WGSL line in a comment above its Rust twin), with the driver's
//! approximate first step (`inverseSqrt`, `1.0f / my`; Vulkan allows a few ulp) replaced by the
//! correctly rounded value moved by every offset in -3..=3 ulp, and its result is compared bit for
//! bit with Rust's `f32::sqrt` and `/`: exhaustively for sqrt over the binades [1, 2) and [2, 4)
//! (and the two pairs at the ends of the range sqrt takes unscaled),
//! and over samples of every exponent, subnormals, special values and near-midpoint quotients.
//! Every remainder `af_residual` computes is also checked equal to a fused `fma(-a, b, x)`, so the
//! proof covers `af_residual_fused`, the variant taken on devices whose `fma` rounds once. A last
//! test checks that the emulations still mirror the library: every line of each WGSL function
//! appears, in order, as a comment in its Rust twin.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// Offsets (ulp) of the approximate first step.
const OFFSETS: std::ops::RangeInclusive<i32> = -3..=3;

/// `x` moved by `k` ulp (x positive and finite).
fn moved(x: f32, k: i32) -> f32 {
    f32::from_bits((x.to_bits() as i32 + k) as u32)
}

/// af_residual (`| af_zero` is the identity at run time).
fn residual(x: f32, a: f32, b: f32) -> f32 {
    // let p = bitcast<f32>(bitcast<u32>(a * b) | af_zero);
    let p = a * b;
    // let ah = af_mask12(a);
    let ah = f32::from_bits(a.to_bits() & 0xffff_f000);
    // let al = a - ah;
    let al = a - ah;
    // let bh = af_mask12(b);
    let bh = f32::from_bits(b.to_bits() & 0xffff_f000);
    // let bl = b - bh;
    let bl = b - bh;
    // let err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    let err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    // return (x - p) - err;
    let r = (x - p) - err;
    // af_residual_fused, the variant on a device whose fma rounds once, gives the same value.
    assert_eq!(r.to_bits(), (-a).mul_add(b, x).to_bits(), "{x} - {a} * {b}");
    r
}

/// af_sqrt_f32 with `inverse_sqrt` for WGSL's `inverseSqrt`.
fn sqrt_emul(x: f32, inverse_sqrt: impl Fn(f32) -> f32) -> f32 {
    // let b = bitcast<u32>(x);
    let b = x.to_bits();
    // if (b - 0x1f800000u < 0x40000000u) { return af_sqrt_core(x); }
    if b.wrapping_sub(0x1f80_0000) < 0x4000_0000 {
        return sqrt_core(x, inverse_sqrt);
    }
    // if ((b << 1u) == 0u || af_is_nan_f32(x)) { return x; }
    if (b << 1) == 0 || x.is_nan() {
        return x;
    }
    // if ((b >> 31u) != 0u) { return af_nan(); }
    if (b >> 31) != 0 {
        return f32::NAN;
    }
    // if (b == 0x7f800000u) { return x; }
    if b == 0x7f80_0000 {
        return x;
    }
    // let u = af_unpack_f32(b);
    let u = unpack(b);
    // let odd = (u.y & 1) != 0;
    let odd = (u.1 & 1) != 0;
    // let m = bitcast<f32>(u.x) * select(1.0f, 2.0f, odd);
    let m = f32::from_bits(u.0) * if odd { 2.0 } else { 1.0 };
    // let k = (u.y - select(0, 1, odd)) / 2;
    let k = (u.1 - if odd { 1 } else { 0 }) / 2;
    // return af_sqrt_core(m) * af_pow2i(k);
    sqrt_core(m, inverse_sqrt) * pow2i(k)
}

/// af_sqrt_core with `inverse_sqrt` for WGSL's `inverseSqrt`.
fn sqrt_core(m: f32, inverse_sqrt: impl Fn(f32) -> f32) -> f32 {
    // let y = inverseSqrt(m);
    let y = inverse_sqrt(m);
    // let r0 = af_mul_f32(m, y);
    let r0 = m * y;
    // let r1 = r0 + af_mul_f32(af_residual(m, r0, r0), 0.5f * y);
    let r1 = r0 + residual(m, r0, r0) * (0.5 * y);
    // let rp = bitcast<f32>(bitcast<u32>(r1) + 1u);
    let rp = f32::from_bits(r1.to_bits() + 1);
    // let rm = bitcast<f32>(bitcast<u32>(r1) - 1u);
    let rm = f32::from_bits(r1.to_bits() - 1);
    // var r = r1;
    let mut r = r1;
    // if (af_residual(m, r1, rp) > 0.0f) { r = rp; }
    if residual(m, r1, rp) > 0.0 {
        r = rp;
    }
    // if (af_residual(m, rm, r1) <= 0.0f) { r = rm; }
    if residual(m, rm, r1) <= 0.0 {
        r = rm;
    }
    // return r;
    r
}

/// af_unpack_f32.
fn unpack(b: u32) -> (u32, i32) {
    // var m = b;
    let mut m = b;
    // var k = -127;
    let mut k = -127;
    // if (m < 0x00800000u) {
    if m < 0x0080_0000 {
        // let s = countLeadingZeros(m) - 8u;
        let s = m.leading_zeros() - 8;
        // m = m << s;
        m <<= s;
        // k -= i32(s);
        k -= s as i32;
    }
    // k += i32(m >> 23u);
    k += (m >> 23) as i32;
    // return vec2<i32>(i32((m & 0x007fffffu) | 0x3f800000u), k);
    ((m & 0x007f_ffff) | 0x3f80_0000, k)
}

/// af_pow2i.
fn pow2i(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// af_ldexp.
fn ldexp(x: f32, n: i32) -> f32 {
    let c = n.clamp(-360, 360);
    let a = c / 3;
    let b = (c - a) / 2;
    x * pow2i(a) * pow2i(b) * pow2i(c - a - b)
}

/// af_div_round with `recip` for WGSL's `1.0f / b`.
fn div_round(a: f32, b: f32, recip: &impl Fn(f32) -> f32) -> f32 {
    // let r = 1.0f / b;
    let r = recip(b);
    // let q0 = af_mul_f32(a, r);
    let q0 = a * r;
    // let q1 = q0 + af_mul_f32(af_residual(a, q0, b), r);
    let q1 = q0 + residual(a, q0, b) * r;
    // let qp = bitcast<f32>(bitcast<u32>(q1) + 1u);
    let qp = f32::from_bits(q1.to_bits().wrapping_add(1));
    // let qm = bitcast<f32>(bitcast<u32>(q1) - 1u);
    let qm = f32::from_bits(q1.to_bits().wrapping_sub(1));
    // let e = af_residual(a, q1, b);
    let e = residual(a, q1, b);
    // var q = q1;
    let mut q = q1;
    // if (e + e > (qp - q1) * b) { q = qp; }
    if e + e > (qp - q1) * b {
        q = qp;
    }
    // if (e + e < (qm - q1) * b) { q = qm; }
    if e + e < (qm - q1) * b {
        q = qm;
    }
    // return q;
    q
}

/// af_div_f32 with `recip` for WGSL's `1.0f / b` in af_div_round.
fn div_emul(x: f32, y: f32, recip: impl Fn(f32) -> f32) -> f32 {
    // let s = (bitcast<u32>(x) ^ bitcast<u32>(y)) & 0x80000000u;
    let s = (x.to_bits() ^ y.to_bits()) & 0x8000_0000;
    // let bx = bitcast<u32>(x) & 0x7fffffffu;
    let bx = x.to_bits() & 0x7fff_ffff;
    // let by = bitcast<u32>(y) & 0x7fffffffu;
    let by = y.to_bits() & 0x7fff_ffff;
    // if (bx - 0x21800000u < 0x3c800000u && by - 0x21800000u < 0x3c800000u) {
    if bx.wrapping_sub(0x2180_0000) < 0x3c80_0000 && by.wrapping_sub(0x2180_0000) < 0x3c80_0000 {
        // return bitcast<f32>(s | bitcast<u32>(af_div_round(bitcast<f32>(bx), bitcast<f32>(by))));
        return f32::from_bits(
            s | div_round(f32::from_bits(bx), f32::from_bits(by), &recip).to_bits(),
        );
    }
    // if (bx > 0x7f800000u || by > 0x7f800000u || (bx == by && (bx == 0u || bx == 0x7f800000u))) {
    if bx > 0x7f80_0000 || by > 0x7f80_0000 || (bx == by && (bx == 0 || bx == 0x7f80_0000)) {
        // return af_nan();
        return f32::NAN;
    }
    // if (bx == 0x7f800000u || by == 0u) { return bitcast<f32>(s | 0x7f800000u); }
    if bx == 0x7f80_0000 || by == 0 {
        return f32::from_bits(s | 0x7f80_0000);
    }
    // if (bx == 0u || by == 0x7f800000u) { return bitcast<f32>(s); }
    if bx == 0 || by == 0x7f80_0000 {
        return f32::from_bits(s);
    }
    // let ux = af_unpack_f32(bx);
    let ux = unpack(bx);
    // let uy = af_unpack_f32(by);
    let uy = unpack(by);
    // let mx = bitcast<f32>(ux.x);
    let mx = f32::from_bits(ux.0);
    // let my = bitcast<f32>(uy.x);
    let my = f32::from_bits(uy.0);
    // let k = ux.y - uy.y;
    let k = ux.1 - uy.1;
    // let q = af_div_round(mx, my);
    let q = div_round(mx, my, &recip);
    // let bq = bitcast<u32>(q);
    let bq = q.to_bits();
    // let sh = 1 - i32(bq >> 23u) - k;
    let sh = 1 - (bq >> 23) as i32 - k;
    // if (sh <= 0) { return bitcast<f32>(s | bitcast<u32>(af_ldexp(q, k))); }
    if sh <= 0 {
        return f32::from_bits(s | ldexp(q, k).to_bits());
    }
    // if (sh > 25) { return bitcast<f32>(s); }
    if sh > 25 {
        return f32::from_bits(s);
    }
    // let n = (bq & 0x007fffffu) | 0x00800000u;
    let n = (bq & 0x007f_ffff) | 0x0080_0000;
    // let rest = n & ((1u << u32(sh)) - 1u);
    let rest = n & ((1u32 << sh as u32) - 1);
    // let half = 1u << u32(sh - 1);
    let half = 1u32 << (sh - 1) as u32;
    // var t = n >> u32(sh);
    let mut t = n >> sh as u32;
    // let d = af_residual(mx, q, my);
    let d = residual(mx, q, my);
    // if (rest > half || (rest == half && (d > 0.0f || (d == 0.0f && (t & 1u) == 1u)))) { t += 1u; }
    if rest > half || (rest == half && (d > 0.0 || (d == 0.0 && (t & 1) == 1))) {
        t += 1;
    }
    // return bitcast<f32>(s | t);
    f32::from_bits(s | t)
}

fn same(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// Checks sqrt of `x` for every offset; the number of checks.
fn check_sqrt(x: f32) -> u64 {
    let want = x.sqrt();
    for k in OFFSETS {
        let got = sqrt_emul(x, |v| moved((1.0 / (v as f64).sqrt()) as f32, k));
        assert!(
            same(got, want),
            "sqrt({x:e} = {:#x}) with inverseSqrt {k:+} ulp: {got:e}, want {want:e}",
            x.to_bits()
        );
    }
    OFFSETS.count() as u64
}

/// Checks x / y for every offset; the number of checks.
fn check_div(x: f32, y: f32) -> u64 {
    let want = x / y;
    for k in OFFSETS {
        let got = div_emul(x, y, |v| moved((1.0 / v as f64) as f32, k));
        assert!(
            same(got, want),
            "{x:e} / {y:e} ({:#x} / {:#x}) with 1/y {k:+} ulp: {got:e}, want {want:e}",
            x.to_bits(),
            y.to_bits()
        );
    }
    OFFSETS.count() as u64
}

/// Fewer samples in debug builds (the suite runs with --release).
const SCALE: u64 = if cfg!(debug_assertions) { 64 } else { 1 };

/// af_sqrt_core over [1, 4), where every other argument is scaled to, and over the two binade
/// pairs at the ends of the range af_sqrt_f32 gives it unscaled, [2^-64, 2^-62) and [2^62, 2^64)
/// (scaling by a power of 4 scales every step exactly while the remainders stay normal).
#[test]
fn sqrt_is_correctly_rounded_for_every_f32_of_six_binades() {
    let mut n = 0;
    for lo in [1.0f32, 2f32.powi(-64), 2f32.powi(62)] {
        let (lo, hi) = (lo.to_bits(), (lo * 4.0).to_bits());
        for b in (lo..hi).step_by(SCALE as usize) {
            n += check_sqrt(f32::from_bits(b));
        }
    }
    println!("sqrt: {n} checks over [1, 4), [2^-64, 2^-62), [2^62, 2^64)");
}

#[test]
fn sqrt_is_correctly_rounded_over_every_exponent() {
    let mut n = 0;
    // Every 61st positive finite f32 (all binades, subnormals included), plus each binade's ends.
    for b in (1..0x7f80_0000u32).step_by(61 * SCALE as usize) {
        n += check_sqrt(f32::from_bits(b));
    }
    for e in 0..255u32 {
        for m in [0, 1, 2, 0x7f_fffe, 0x7f_ffff] {
            let b = (e << 23) | m;
            if b != 0 {
                n += check_sqrt(f32::from_bits(b));
            }
        }
    }
    for x in [
        0.0,
        -0.0,
        -1.0,
        -1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ] {
        n += check_sqrt(x);
    }
    println!("sqrt: {n} checks over every exponent");
}

#[test]
fn division_is_correctly_rounded() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut n = 0;
    // Random bit patterns: every exponent pair, subnormals, signs.
    for _ in 0..4_000_000 / SCALE {
        let (x, y) = (
            f32::from_bits(rng.random::<u32>()),
            f32::from_bits(rng.random::<u32>()),
        );
        n += check_div(x, y);
    }
    // Random significands at exponent differences around overflow, underflow and the subnormal
    // range.
    for _ in 0..4_000_000 / SCALE {
        let ex = rng.random::<u32>() % 254 + 1;
        let d = (rng.random::<u32>() % 60) as i32 - 30;
        let base: i32 = if rng.random::<u32>().is_multiple_of(2) {
            127 + 128
        } else {
            127 - 126 - 24
        };
        let ey = ex as i32 - base + 127 + d;
        if !(1..=254).contains(&ey) {
            continue;
        }
        let x = f32::from_bits((ex << 23) | (rng.random::<u32>() & 0x807f_ffff));
        let y = f32::from_bits(((ey as u32) << 23) | (rng.random::<u32>() & 0x807f_ffff));
        n += check_div(x, y);
    }
    // Quotients next to a midpoint: M * Y = X * 2^25 + delta for an odd 25-bit M, so X / Y is
    // within |delta| / (Y 2^25) of the midpoint M / 2^25 (and exact quotients, delta = 0).
    for _ in 0..2_000_000 / SCALE {
        let y = (rng.random::<u32>() & 0x00ff_ffff) | 0x0080_0001;
        let inv = (0..5).fold(y, |i, _| {
            i.wrapping_mul(2u32.wrapping_sub(y.wrapping_mul(i)))
        });
        let delta = (rng.random::<u32>() % 31) as i32 - 15;
        let m = ((delta as u32).wrapping_mul(inv)) & 0x01ff_ffff;
        let m = if delta == 0 {
            rng.random::<u32>() & 0x01ff_ffff
        } else {
            m
        };
        let prod = m as i64 * y as i64 - delta as i64;
        if m < 0x0100_0000 || prod % (1 << 25) != 0 {
            continue;
        }
        let x = (prod >> 25) as u32;
        // The same significands at random exponents.
        let at = |v: u32, e: u32| f32::from_bits(((v as f32).to_bits() & 0x007f_ffff) | (e << 23));
        let (xf, yf) = (
            at(x, rng.random::<u32>() % 254 + 1),
            at(y, rng.random::<u32>() % 254 + 1),
        );
        n += check_div(xf, yf);
        n += check_div(yf, xf);
    }
    // Operands at the edges of the unscaled path's exponents ([-60, 60]) and just outside them.
    for _ in 0..1_000_000 / SCALE {
        let edge = [65u32, 66, 67, 68, 186, 187, 188, 189];
        let pick = |r: u32| edge[(r % 8) as usize];
        let x = f32::from_bits((pick(rng.random()) << 23) | (rng.random::<u32>() & 0x807f_ffff));
        let y = f32::from_bits((pick(rng.random()) << 23) | (rng.random::<u32>() & 0x807f_ffff));
        n += check_div(x, y);
    }
    // Special values and extremes.
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        3.0,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
    ];
    for &x in &special {
        for &y in &special {
            n += check_div(x, y);
        }
    }
    println!("division: {n} checks");
}

/// The WGSL library and this file's own text.
const WGSL: &str = include_str!("../primitives/wgsl/arrayflow.wgsl");
const THIS: &str = include_str!("exact_f32.rs");

/// The lines of the top-level function that starts with `head` in `text`, up to its closing `}`.
fn function_lines<'a>(text: &'a str, head: &str) -> Vec<&'a str> {
    let start = text
        .find(head)
        .unwrap_or_else(|| panic!("`{head}` not found"));
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| *l != "}")
        .collect()
}

#[test]
fn the_emulations_mirror_the_library_line_by_line() {
    for (wgsl, rust) in [
        ("fn af_residual(", "fn residual("),
        ("fn af_unpack_f32(", "fn unpack("),
        ("fn af_sqrt_f32(", "fn sqrt_emul("),
        ("fn af_sqrt_core(", "fn sqrt_core("),
        ("fn af_div_round(", "fn div_round("),
        ("fn af_div_f32(", "fn div_emul("),
    ] {
        let comments: Vec<&str> = function_lines(THIS, rust)
            .iter()
            .filter_map(|l| l.trim().strip_prefix("// "))
            .collect();
        let mut next = 0;
        for line in function_lines(WGSL, wgsl) {
            let line = line.trim();
            if line.is_empty() || line == "}" || line.starts_with("//") {
                continue;
            }
            let at = comments[next..]
                .iter()
                .position(|c| *c == line)
                .unwrap_or_else(|| panic!("{rust}: no comment `// {line}` after line {next}"));
            next += at + 1;
        }
    }
}
