// arrayflow primitive library, WGSL target (the wgpu executor). The same names and semantics as
// primitives/c/arrayflow.h: af_<op>_<type> for f32, i32, u32 and b8; integers wrap, integer division
// by zero reports a fault, float min/max propagate NaN, mod is floored, casts saturate like Rust's
// `as`, Philox4x32-10 streams are bit-identical to the CPU.
// Types: f32, i32, u32 as in WGSL; b8 is `bool` in registers and one u32 (0 or 1) in storage.
// WGSL has no f64 (kernels touching f64 are not rendered) and no 64-bit integers: a u64 is a
// vec2<u32> (low word, high word).
// The transcendental functions are written here from +, -, *, / and sqrt (Cephes and FreeBSD msun
// algorithms, single precision) because WGSL's built-ins are only required to be accurate to a few
// thousand ulp on some drivers; they are within a few ulp of the C library. Edge cases (NaN, +-inf,
// +-0, out-of-domain arguments) are handled explicitly, not left to the driver.
// Complex<f32> is c64, a vec2<f32> (.x the real part, .y the imaginary part), so a buffer of them
// is interleaved, real part first, as num-complex stores it; there is no Complex<f64>.
alias c64 = vec2<f32>;

// ---- special values and bits ----
// A function call is never a constant expression, so NaN and infinity can be built from bits here.
fn af_bits_f32(lo: u32, hi: u32) -> f32 { return bitcast<f32>(lo); }
fn af_bits_i32(lo: u32, hi: u32) -> i32 { return bitcast<i32>(lo); }
fn af_bits_u32(lo: u32, hi: u32) -> u32 { return lo; }
fn af_bits_b8(lo: u32, hi: u32) -> bool { return (lo | hi) != 0u; }
fn af_nan() -> f32 { return af_bits_f32(0x7fc00000u, 0u); }
fn af_inf() -> f32 { return af_bits_f32(0x7f800000u, 0u); }
fn af_signbit(x: f32) -> bool { return (bitcast<u32>(x) >> 31u) != 0u; }
fn af_copysign(x: f32, s: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}
fn af_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
// x with the low 12 bits of its significand cleared: a product of two such values is exact.
fn af_mask12(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0xfffff000u); }

const AF_PI: f32 = 3.14159265358979f;
const AF_PI_LO: f32 = -8.742278e-8f; // pi - AF_PI
const AF_PIO2: f32 = 1.57079632679490f;
const AF_PIO2_LO: f32 = -4.371139e-8f; // pi/2 - AF_PIO2
const AF_PIO4: f32 = 0.785398163397448f;

// 2^n for n in [-126, 127].
fn af_pow2i(n: i32) -> f32 { return bitcast<f32>(u32(n + 127) << 23u); }
// x * 2^n without intermediate overflow (n is clamped to +-360, far beyond any finite result).
fn af_ldexp(x: f32, n: i32) -> f32 {
  let c = clamp(n, -360, 360);
  let a = c / 3;
  let b = (c - a) / 2;
  return x * af_pow2i(a) * af_pow2i(b) * af_pow2i(c - a - b);
}

// ---- exponentials and logarithms (Cephes expf, exp2f, logf, log2f, log10f) ----
// 2^f for |f| <= 0.5.
fn af_exp2_core(f: f32) -> f32 {
  return 1.0f + f * (((((1.535336188319500e-4f * f + 1.339887440266574e-3f) * f
    + 9.618437357674640e-3f) * f + 5.550332471162809e-2f) * f + 2.402264791363012e-1f) * f
    + 6.931472028550421e-1f);
}
fn af_exp_f32(x: f32) -> f32 {
  if (af_is_nan_f32(x)) { return x; }
  if (x > 88.72283905206835f) { return af_inf(); }
  if (x < -103.97208f) { return 0.0f; }
  let n = floor(1.44269504088896341f * x + 0.5f);
  let r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  let z = r * r;
  let p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
    + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * z + r + 1.0f;
  return af_ldexp(p, i32(n));
}
fn af_exp2_f32(x: f32) -> f32 {
  if (af_is_nan_f32(x)) { return x; }
  let c = clamp(x, -200.0f, 200.0f);
  let n = floor(c + 0.5f);
  return af_ldexp(af_exp2_core(c - n), i32(n));
}
// x > 0 finite: (m, k) with x = m * 2^k and m in [sqrt(1/2), sqrt(2)). Subnormal x is normalised
// with integer shifts (float arithmetic flushes subnormals to zero on some GPUs; af_unpack_f32).
fn af_logsplit(x: f32) -> vec2<f32> {
  let u = af_unpack_f32(bitcast<u32>(x));
  var k = u.y;
  var m = bitcast<f32>(u.x);
  if (m > 1.41421356237f) {
    m = m * 0.5f;
    k += 1;
  }
  return vec2<f32>(m, f32(k));
}
// ln(1 + t) - t + t^2 / 2 (about t^3 / 3) for t = m - 1, m in [sqrt(1/2), sqrt(2)).
fn af_log_tail3(t: f32) -> f32 {
  let z = t * t;
  return ((((((((7.0376836292e-2f * t - 1.1514610310e-1f) * t + 1.1676998740e-1f) * t
    - 1.2420140846e-1f) * t + 1.4249322787e-1f) * t - 1.6668057665e-1f) * t
    + 2.0000714765e-1f) * t - 2.4999993993e-1f) * t + 3.3333331174e-1f) * t * z;
}
// ln(1 + t) - t for t = m - 1, m in [sqrt(1/2), sqrt(2)).
fn af_log_tail(t: f32) -> f32 { return af_log_tail3(t) - 0.5f * (t * t); }
// The result of a logarithm for x <= 0, +inf or NaN (the others are ordinary).
fn af_log_special(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) == 0u) { return -af_inf(); }
  if (b > 0x7f800000u) { return af_nan(); } // negative or NaN
  return x; // +inf
}
// Positive and finite, subnormals included (tested on the bits, which no flush touches).
fn af_log_ordinary(x: f32) -> bool { return bitcast<u32>(x) - 1u < 0x7f7fffffu; }
fn af_ln_f32(x: f32) -> f32 {
  if (!af_log_ordinary(x)) { return af_log_special(x); }
  let s = af_logsplit(x);
  let t = s.x - 1.0f;
  let y = af_log_tail(t) + s.y * -2.12194440e-4f;
  return (t + y) + s.y * 0.693359375f;
}
// log2 of m in [sqrt(1/2), sqrt(2)).
fn af_log2_mant(m: f32) -> f32 {
  let t = m - 1.0f;
  let y = af_log_tail(t);
  return ((y * 0.44269504088896340736f + t * 0.44269504088896340736f) + y) + t;
}
fn af_log2_f32(x: f32) -> f32 {
  if (!af_log_ordinary(x)) { return af_log_special(x); }
  let s = af_logsplit(x);
  return af_log2_mant(s.x) + s.y;
}
fn af_log10_f32(x: f32) -> f32 {
  if (!af_log_ordinary(x)) { return af_log_special(x); }
  let s = af_logsplit(x);
  let t = s.x - 1.0f;
  let l = t + af_log_tail(t);
  return ((l * 7.00731903251827651129e-4f + l * 4.3359375e-1f) + s.y * 2.48745663981195213739e-4f)
    + s.y * 3.0078125e-1f;
}
// ln(1 + x), accurate near 0 (Goldberg's correction of the rounding of 1 + x).
fn af_log1p(x: f32) -> f32 {
  // Near 0: log1p(x) = 2 atanh(s), s = x / (2 + x), by its series (|s| < 0.143 for |x| < 0.25;
  // the first omitted term is below 1e-10 relative). Shader compilers may fold the `u - 1`
  // correction below into x, so it is kept for larger x only, where it matters less.
  if (abs(x) < 0.25f) {
    let s = x / (2.0f + x);
    let s2 = s * s;
    let p = 0.33333334f + s2 * (0.2f + s2 * (0.14285715f + s2 * (0.11111111f + s2 * 0.09090909f)));
    return 2.0f * s + 2.0f * s * s2 * p;
  }
  let u = 1.0f + x;
  if (u == 1.0f) { return x; }
  if (!af_log_ordinary(u)) { return af_log_special(u); }
  return af_ln_f32(u) * (x / (u - 1.0f));
}

// ---- trigonometric functions (Cephes sinf, cosf, tanf, atanf, asinf, acosf) ----
// Below 2 the reduction by multiples of pi/4 is Cephes' three-part one (within half an ulp of the
// remainder there); above, af_trig_reduce_large. Cephes' reduction loses the remainder's low bits
// near multiples of pi/4 further out (up to 975 ulp below 8192, an exhaustive sweep found on an
// H200), where the Payne-Hanek one stays within 2.5.
fn af_sin_poly(x: f32) -> f32 {
  let z = x * x;
  return ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
}
fn af_cos_poly(x: f32) -> f32 {
  let z = x * x;
  return ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z
    - 0.5f * z + 1.0f;
}
// |x| <= 2: (x - j pi/4, j) with j even.
fn af_trig_reduce(ax: f32) -> vec2<f32> {
  var j = u32(ax * 1.27323954473516f);
  j += j & 1u;
  let y = f32(j);
  let r = ((ax - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
  return vec2<f32>(r, f32(j & 7u));
}
// The 32 x 32 -> 64-bit product (lo, hi) from 16-bit halves.
fn af_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let t = a1 * b0 + (p00 >> 16u);
  let w1 = (t & 0xffffu) + a0 * b1;
  return vec2<u32>((w1 << 16u) | (p00 & 0xffffu), a1 * b1 + (t >> 16u) + (w1 >> 16u));
}
// |x| > 2 (its bits in xi): (x - j pi/4, j) with j even, as af_trig_reduce returns, exact for
// every f32 from 2 (exponents from 128: the window index below starts at 0 there) (Payne-Hanek: the 24-bit significand times a 96-bit window of 4/pi, chosen by the
// exponent, gives the 2.62-bit fixed-point remainder; the GPU's own sin/cos lose all accuracy
// there). The table holds 4/pi to 192 bits, 8 new bits per entry.
fn af_trig_reduce_large(xi: u32) -> vec2<f32> {
  let k = (xi >> 26u) & 15u;
  let m = ((xi & 0xffffffu) | 0x800000u) << ((xi >> 23u) & 7u);
  // Below 512 (exponents 128 to 135) the window is the table's first: constants, no array (a
  // function-local array indexed at run time is written to the GPU's local memory on every call).
  if (k == 0u) { return af_trig_reduce_window(m, 0xa2u, 0xf9836e4eu, 0x441529fcu); }
  var tbl = array<u32, 24>(
    0xa2u, 0xa2f9u, 0xa2f983u, 0xa2f9836eu, 0xf9836e4eu, 0x836e4e44u, 0x6e4e4415u, 0x4e441529u,
    0x441529fcu, 0x1529fc27u, 0x29fc2757u, 0xfc2757d1u, 0x2757d1f5u, 0x57d1f534u, 0xd1f534ddu,
    0xf534ddc0u, 0x34ddc0dbu, 0xddc0db62u, 0xc0db6295u, 0xdb629599u, 0x6295993cu, 0x95993c43u,
    0x993c4390u, 0x3c439041u);
  return af_trig_reduce_window(m, tbl[k], tbl[k + 4u], tbl[k + 8u]);
}
// af_trig_reduce_large's arithmetic for the significand m (shifted by the exponent's low bits)
// and the window's words t0 = tbl[k], t4 = tbl[k + 4], t8 = tbl[k + 8].
fn af_trig_reduce_window(m: u32, t0: u32, t4: u32, t8: u32) -> vec2<f32> {
  let r1 = af_mul_wide(m, t4);
  let r2 = af_mul_wide(m, t8);
  // (m * t0 << 32 | (m * t8) >> 32) + m * t4, modulo 2^64.
  let lo = r2.y + r1.x;
  var hi = m * t0 + r1.y + select(0u, 1u, lo < r2.y);
  let n = (hi + 0x20000000u) >> 30u;
  hi -= n << 30u;
  let v = f32(bitcast<i32>(hi)) * 4294967296.0f + f32(lo);
  return vec2<f32>(v * 3.4061215800865545e-19f, f32((2u * n) & 7u));
}
fn af_trig_reduce_any(ax: f32) -> vec2<f32> {
  if (ax > 2.0f) { return af_trig_reduce_large(bitcast<u32>(ax)); }
  return af_trig_reduce(ax);
}
fn af_sin_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (!af_finite(x)) { return af_nan(); }
  let q = af_trig_reduce_any(ax);
  var j = u32(q.y);
  var neg = af_signbit(x);
  if (j > 3u) {
    neg = !neg;
    j -= 4u;
  }
  let v = select(af_sin_poly(q.x), af_cos_poly(q.x), j == 2u);
  return select(v, -v, neg);
}
fn af_cos_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (!af_finite(x)) { return af_nan(); }
  let q = af_trig_reduce_any(ax);
  var j = u32(q.y);
  var neg = false;
  if (j > 3u) {
    neg = true;
    j -= 4u;
  }
  if (j > 1u) { neg = !neg; }
  let v = select(af_cos_poly(q.x), af_sin_poly(q.x), j == 2u);
  return select(v, -v, neg);
}
fn af_tan_f32(x: f32) -> f32 {
  let ax = abs(x);
  if (!af_finite(x)) { return af_nan(); }
  let q = af_trig_reduce_any(ax);
  let z = q.x;
  let zz = z * z;
  var y = (((((9.38540185543e-3f * zz + 3.11992232697e-3f) * zz + 2.44301354525e-2f) * zz
    + 5.34112807005e-2f) * zz + 1.33387994085e-1f) * zz + 3.33331568548e-1f) * zz * z + z;
  if ((u32(q.y) & 2u) != 0u) { y = -1.0f / y; }
  return select(y, -y, af_signbit(x));
}
fn af_sec_f32(x: f32) -> f32 { return 1.0f / af_cos_f32(x); }
fn af_csc_f32(x: f32) -> f32 { return 1.0f / af_sin_f32(x); }
fn af_cot_f32(x: f32) -> f32 { return 1.0f / af_tan_f32(x); }
// atan of a >= 0 (NaN stays NaN, +inf gives pi/2).
fn af_atan_pos(a: f32) -> f32 {
  var t = a;
  var base = 0.0f;
  if (a > 2.414213562373095f) {
    base = AF_PIO2;
    t = -1.0f / a;
  } else if (a > 0.4142135623730950f) {
    base = AF_PIO4;
    t = (a - 1.0f) / (a + 1.0f);
  }
  let z = t * t;
  return base + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z
    - 3.33329491539e-1f) * z * t + t);
}
fn af_atan_f32(x: f32) -> f32 { return af_copysign(af_atan_pos(abs(x)), x); }
// asin of 0 <= a <= 1.
fn af_asin_pos(a: f32) -> f32 {
  if (a < 1.0e-4f) { return a; }
  var t = a;
  var z = a * a;
  let big = a > 0.5f;
  if (big) {
    z = 0.5f * (1.0f - a);
    t = sqrt(z);
  }
  let p = ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z
    + 7.4953002686e-2f) * z + 1.6666752422e-1f) * z * t + t;
  return select(p, (AF_PIO2 - 2.0f * p) + AF_PIO2_LO, big);
}
fn af_asin_f32(x: f32) -> f32 {
  let a = abs(x);
  if (!(a <= 1.0f)) { return af_nan(); }
  return af_copysign(af_asin_pos(a), x);
}
fn af_acos_f32(x: f32) -> f32 {
  if (!(abs(x) <= 1.0f)) { return af_nan(); }
  if (x < -0.5f) { return (AF_PI - 2.0f * af_asin_pos(sqrt(0.5f * (1.0f + x)))) + AF_PI_LO; }
  if (x > 0.5f) { return 2.0f * af_asin_pos(sqrt(0.5f * (1.0f - x))); }
  return (AF_PIO2 - af_copysign(af_asin_pos(abs(x)), x)) + AF_PIO2_LO;
}
fn af_atan2_f32(y: f32, x: f32) -> f32 {
  if (af_is_nan_f32(y) || af_is_nan_f32(x)) { return af_nan(); }
  let ay = abs(y);
  let ax = abs(x);
  let west = af_signbit(x);
  var r: f32;
  if (ay == 0.0f) {
    r = select(0.0f, AF_PI, west);
  } else if (ax == 0.0f) {
    r = AF_PIO2;
  } else if (!af_finite(ax)) {
    if (!af_finite(ay)) {
      r = select(AF_PIO4, 2.35619449019234f, west);
    } else {
      r = select(0.0f, AF_PI, west);
    }
  } else if (!af_finite(ay)) {
    r = AF_PIO2;
  } else {
    // The exact quotient: WGSL's `/` may be a product with 1 / ax, which a device that flushes
    // subnormal values (NVIDIA) makes 0 for ax past 2^126.
    let t = af_atan_pos(af_div_f32(ay, ax));
    r = select(t, (AF_PI - t) + AF_PI_LO, west);
  }
  return select(r, -r, af_signbit(y));
}
// Accurate near +-1 (primitives/cpu.rs asec_accurate).
fn af_asec_f32(x: f32) -> f32 {
  let r = af_atan_f32(af_sqrt_f32((x - 1.0f) * (x + 1.0f)));
  return select(r, AF_PI - r, x < 0.0f);
}
fn af_acsc_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a < 2.0f) { return af_copysign(af_atan_f32(1.0f / af_sqrt_f32((a - 1.0f) * (a + 1.0f))), x); }
  return af_copysign(af_asin_f32(1.0f / a), x);
}
fn af_acot_f32(x: f32) -> f32 { return af_atan_f32(1.0f / x); }

// ---- hyperbolic functions ----
// sinh(x) for |x| < 0.5 (Taylor series to x^9).
fn af_sinh_small(x: f32) -> f32 {
  let z = x * x;
  return x + x * z * (1.6666666666666667e-1f + z * (8.3333333333333333e-3f
    + z * (1.9841269841269841e-4f + z * 2.7557319223985891e-6f)));
}
fn af_sinh_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.5f) { return af_sinh_small(x); }
  if (a >= 9.0f) { return af_copysign(af_exp_half(a), x); }
  let e = af_exp_f32(a);
  return af_copysign(0.5f * (e - 1.0f / e), x);
}
// e^a / 2 for a >= 9, finite up to sinh's and cosh's overflow: e^(a - c) e^(c - ln 2), where
// c = 0.693359375 has so few bits that a - c is exact (one product: no order to rearrange).
fn af_exp_half(a: f32) -> f32 { return af_exp_f32(a - 0.693359375f) * 1.0002122169548875f; }
fn af_cosh_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a >= 9.0f) { return af_exp_half(a); }
  let e = af_exp_f32(a);
  return 0.5f * (e + 1.0f / e);
}
fn af_tanh_f32(x: f32) -> f32 {
  let a = abs(x);
  if (af_is_nan_f32(x)) { return x; }
  // Below 0.5, x + x^3 P(x^2) with P of degree 4 fitted for this library (a Chebyshev fit of
  // (tanh(x) - x) / x^3 in 40-digit arithmetic, coefficients rounded to f32; within 0.73 ulp in
  // f32 arithmetic on a sample of 132,000 points) instead of sinh / cosh: an exp and two
  // divisions, which a warp ran beside the other branch's.
  if (a < 0.5f) {
    let z = x * x;
    let p = (((-0.006942941807210445f * z + 0.021470682695508003f) * z - 0.05393346771597862f) * z
      + 0.1333322525024414f) * z - 0.3333333134651184f;
    return af_copysign(a + a * z * p, x);
  }
  if (a > 9.1f) { return af_copysign(1.0f, x); }
  return af_copysign(1.0f - 2.0f / (af_exp_f32(2.0f * a) + 1.0f), x);
}
// 2 e^-|x| past 88, where 1 / cosh gives 0 instead of a subnormal value (primitives/cpu.rs
// sech_accurate, csch_accurate), written e^(1 - |x|) (2 / e): e^-|x| itself is subnormal there,
// which a device that flushes subnormal values (NVIDIA) makes 0 although 2 e^-|x| is normal up to
// 88.7. 1 - |x| is exact (it stays in |x|'s binade, [64, 128), below 128; past it the result is 0).
fn af_two_exp_neg(a: f32) -> f32 { return af_exp_f32(1.0f - a) * 7.357588823428847e-1f; }
fn af_sech_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a > 88.0f) { return af_two_exp_neg(a); }
  return 1.0f / af_cosh_f32(x);
}
fn af_csch_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a > 88.0f) { return af_copysign(af_two_exp_neg(a), x); }
  return 1.0f / af_sinh_f32(x);
}
fn af_coth_f32(x: f32) -> f32 { return 1.0f / af_tanh_f32(x); }
// Rust std's formulas (as arrayflow.h).
fn af_asinh_f32(x: f32) -> f32 {
  let ax = abs(x);
  // asinh(x) = x (1 - x^2 / 6 + ...): x itself below 2^-12. The formula below passes through
  // 1 / x^2, which overflows there, and a device that flushes subnormal values (NVIDIA) then
  // gives 0 for the smallest normal x.
  if (ax < 2.44140625e-4f) { return x; }
  let ix = 1.0f / ax;
  if (ax > 4096.0f) { return af_copysign(af_ln_f32(ax) + 0.6931471805599453f, x); }
  return af_copysign(af_log1p(ax + ax / (af_sqrt_f32(1.0f + ix * ix) + ix)), x);
}
fn af_acosh_f32(x: f32) -> f32 {
  if (x < 1.0f) { return af_nan(); }
  if (x > 4096.0f) { return af_ln_f32(x) + 0.6931471805599453f; }
  if (x < 2.0f) {
    let t = x - 1.0f;
    return af_log1p(t + af_sqrt_f32(t * (t + 2.0f)));
  }
  return af_ln_f32(x + af_sqrt_f32(x - 1.0f) * af_sqrt_f32(x + 1.0f));
}
fn af_atanh_f32(x: f32) -> f32 {
  let t = abs(x);
  // NaN past 1 explicitly: (2t) / (1 - t) there is a product with a subnormal 1 / (1 - t) for
  // huge t, which a device that flushes subnormal values (NVIDIA) makes 0 (atanh would give -0).
  if (!(t <= 1.0f)) { return af_nan(); }
  if (t < 0.5f) { return af_copysign(0.5f * af_log1p(2.0f * t + 2.0f * t * t / (1.0f - t)), x); }
  return af_copysign(0.5f * af_log1p((2.0f * t) / (1.0f - t)), x);
}

// ---- error functions (erfc: FreeBSD msun s_erff.c, as in musl; erf: below) ----
// Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
// Developed at SunPro, a Sun Microsystems, Inc. business. Permission to use, copy, modify, and
// distribute this software is freely granted, provided that this notice is preserved.
// Conversion to float by Ian Lance Taylor, Cygnus Support, ian@cygnus.com.
const AF_ERX: f32 = 8.4506291151e-01f;
// erf(x)/x - 1 for |x| < 0.84375, as y with erf(x) = x + x * y.
fn af_erf_small(x: f32) -> f32 {
  let z = x * x;
  let r = 1.2837916613e-01f + z * (-3.2504209876e-01f + z * (-2.8481749818e-02f
    + z * (-5.7702702470e-03f + z * -2.3763017452e-05f)));
  let s = 1.0f + z * (3.9791721106e-01f + z * (6.5022252500e-02f + z * (5.0813062117e-03f
    + z * (1.3249473704e-04f + z * -3.9602282413e-06f))));
  return r / s;
}
// erf(|x|) - erx for 0.84375 <= |x| < 1.25.
fn af_erf_mid(a: f32) -> f32 {
  let s = a - 1.0f;
  let p = -2.3621185683e-03f + s * (4.1485610604e-01f + s * (-3.7220788002e-01f
    + s * (3.1834661961e-01f + s * (-1.1089469492e-01f + s * (3.5478305072e-02f
    + s * -2.1663755178e-03f)))));
  let q = 1.0f + s * (1.0642088205e-01f + s * (5.4039794207e-01f + s * (7.1828655899e-02f
    + s * (1.2617121637e-01f + s * (1.3637083583e-02f + s * 1.1984500103e-02f)))));
  return p / q;
}
// erfc(a) for 1.25 <= a < 28.
fn af_erfc_tail(a: f32) -> f32 {
  let s = 1.0f / (a * a);
  var r: f32;
  var q: f32;
  if (a < 2.85714285714f) {
    r = -9.8649440333e-03f + s * (-6.9385856390e-01f + s * (-1.0558626175e+01f
      + s * (-6.2375331879e+01f + s * (-1.6239666748e+02f + s * (-1.8460508728e+02f
      + s * (-8.1287437439e+01f + s * -9.8143291473e+00f))))));
    q = 1.0f + s * (1.9651271820e+01f + s * (1.3765776062e+02f + s * (4.3456588745e+02f
      + s * (6.4538726807e+02f + s * (4.2900814819e+02f + s * (1.0863500214e+02f
      + s * (6.5702495575e+00f + s * -6.0424413532e-02f)))))));
  } else {
    r = -9.8649431020e-03f + s * (-7.9928326607e-01f + s * (-1.7757955551e+01f
      + s * (-1.6063638306e+02f + s * (-6.3756646729e+02f + s * (-1.0250950928e+03f
      + s * -4.8351919556e+02f)))));
    q = 1.0f + s * (3.0338060379e+01f + s * (3.2579251099e+02f + s * (1.5367296143e+03f
      + s * (3.1998581543e+03f + s * (2.5530502930e+03f + s * (4.7452853394e+02f
      + s * -2.2440952301e+01f))))));
  }
  // z keeps 11 significant bits (s_erff.c's mask), so z * z + 0.5625 is exact below 28; with 12
  // bits the sum rounded from a = 8 up (63 ulp there, issue 18's sweep).
  let z = bitcast<f32>(bitcast<u32>(a) & 0xffffe000u);
  return af_exp_f32(-z * z - 0.5625f) * af_exp_f32((z - a) * (z + a) + r / q) / a;
}
// e^q for q in [-87, 0] (no special values): af_exp_f32 without its checks, scaled by a power of two
// directly (the result stays normal).
fn af_exp_neg(q: f32) -> f32 {
  let n = floor(1.44269504088896341f * q + 0.5f);
  let r = (q - n * 0.693359375f) - n * -2.12194440e-4f;
  let p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
    + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * (r * r) + r + 1.0f;
  return p * af_pow2i(i32(n));
}
// erf is not msun's (four branches with rational functions, three divisions and two exps: 3.6x a
// copy's time on an H200 under Vulkan) but two polynomials fitted for this library (Chebyshev fits
// in 40-digit arithmetic, coefficients rounded to f32): below 0.921875, x + x P(x^2) with P of
// degree 5 fitting erf(x) / x - 1; above, 1 - e^Q(t) with Q of degree 8 fitting ln(erfc(t)) for
// t = min(|x|, 3.93) (past 3.93 erf rounds to 1). Within 1.13 ulp in f32 arithmetic (a sample of
// 174,000 points with every f32 near 0.921875); tests/float_sweep.rs checks it on every executor.
fn af_erf_f32(x: f32) -> f32 {
  let a = abs(x);
  if (af_is_nan_f32(x)) { return x; }
  if (a < 0.921875f) {
    let s = x * x;
    let p = ((((-0.0006004081224091351f * s + 0.004996020346879959f) * s
      - 0.02676875703036785f) * s + 0.11281882226467133f) * s - 0.3761250078678131f) * s
      + 0.12837915122509003f;
    return x + x * p;
  }
  let t = min(a, 3.93f);
  let q = (((((((1.667112996983633e-06f * t - 4.661363345803693e-05f) * t
    + 0.0006011687801219523f) * t - 0.004778482019901276f) * t + 0.02647021785378456f) * t
    - 0.11015815287828445f) * t - 0.6317521929740906f) * t - 1.1302711963653564f) * t
    + 0.0003280586388427764f;
  return af_copysign(1.0f - af_exp_neg(q), x);
}
fn af_erfc_f32(x: f32) -> f32 {
  let a = abs(x);
  if (af_is_nan_f32(x)) { return x; }
  if (a < 0.84375f) {
    if (a < 1.3877788e-17f) { return 1.0f - x; }
    let y = af_erf_small(x);
    if (x < 0.25f) { return 1.0f - (x + x * y); }
    return 0.5f - (x * y + (x - 0.5f));
  }
  if (a < 1.25f) {
    let pq = af_erf_mid(a);
    if (x > 0.0f) { return (1.0f - AF_ERX) - pq; }
    return 1.0f + (AF_ERX + pq);
  }
  if (a < 28.0f) {
    if (x < -6.0f) { return 2.0f; }
    let r = af_erfc_tail(a);
    return select(2.0f - r, r, x > 0.0f);
  }
  return select(2.0f, 0.0f, x > 0.0f);
}

// ---- other float unary ops ----
fn af_neg_f32(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ 0x80000000u); }
fn af_abs_f32(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu); }
fn af_sign_f32(x: f32) -> f32 {
  if (x > 0.0f) { return 1.0f; }
  if (x < 0.0f) { return -1.0f; }
  return x;
}
// Correctly rounded sqrt (Vulkan's sqrt and inverseSqrt are only within a few ulp). x in
// [2^-64, 2^64) goes straight to af_sqrt_core; any other positive finite x (subnormals normalised
// with integer shifts) is m * 4^k with m in [1, 4), and sqrt(x) = af_sqrt_core(m) * 2^k exactly.
fn af_sqrt_f32(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  if (b - 0x1f800000u < 0x40000000u) { return af_sqrt_core(x); }
  if ((b << 1u) == 0u || af_is_nan_f32(x)) { return x; }
  if ((b >> 31u) != 0u) { return af_nan(); }
  if (b == 0x7f800000u) { return x; }
  let u = af_unpack_f32(b);
  let odd = (u.y & 1) != 0;
  let m = bitcast<f32>(u.x) * select(1.0f, 2.0f, odd);
  let k = (u.y - select(0, 1, odd)) / 2;
  return af_sqrt_core(m) * af_pow2i(k);
}
// Correctly rounded sqrt(m) for m in [2^-64, 2^64) (every step's remainder stays a normal
// number): r1, one Newton step from inverseSqrt(m), is within 1 ulp of sqrt(m); of r1 and its
// neighbours the one whose midpoints bracket sqrt(m) is picked by the sign of the residuals
// m - r1 * rp and m - rm * r1 (m is never a midpoint's square). Products that feed a sum are
// opaque (af_mul_f32), so no driver contracts them and every step rounds as the proof assumes.
// The proof is tests/exact_f32.rs, which mirrors this text line by line.
fn af_sqrt_core(m: f32) -> f32 {
  let y = inverseSqrt(m);
  let r0 = af_mul_f32(m, y);
  let r1 = r0 + af_mul_f32(af_residual(m, r0, r0), 0.5f * y);
  let rp = bitcast<f32>(bitcast<u32>(r1) + 1u);
  let rm = bitcast<f32>(bitcast<u32>(r1) - 1u);
  var r = r1;
  if (af_residual(m, r1, rp) > 0.0f) { r = rp; }
  if (af_residual(m, rm, r1) <= 0.0f) { r = rm; }
  return r;
}
fn af_rsqrt_f32(x: f32) -> f32 { return af_div_f32(1.0f, af_sqrt_f32(x)); }
// sign * 2^(log2|x| / 3), refined by one Newton step.
fn af_cbrt_f32(x: f32) -> f32 {
  let a = abs(x);
  if (!(a > 0.0f) || !af_finite(a)) { return x; }
  let y = af_exp2_f32(af_log2_f32(a) * (1.0f / 3.0f));
  return af_copysign(y - (y - a / (y * y)) * (1.0f / 3.0f), x);
}
// Rounding keeps the sign of zero: the result always has x's sign.
fn af_keep_sign(r: f32, x: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(x) & 0x80000000u));
}
fn af_floor_f32(x: f32) -> f32 { return af_keep_sign(floor(x), x); }
fn af_ceil_f32(x: f32) -> f32 { return af_keep_sign(ceil(x), x); }
fn af_trunc_f32(x: f32) -> f32 { return af_keep_sign(trunc(x), x); }
// Half away from zero (C roundf), not WGSL's half to even.
fn af_round_f32(x: f32) -> f32 {
  let t = trunc(x);
  let r = select(t, t + select(1.0f, -1.0f, af_signbit(x)), abs(x - t) >= 0.5f);
  return af_keep_sign(r, x);
}
fn af_is_nan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn af_is_inf_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }

// ---- float binary ----
// Set to a zero the driver cannot know (a 1-D dispatch's workgroup or invocation id .z) as the
// first statement of every entry point. Vulkan drivers may fuse a product feeding an add into an fma
// (naga never emits NoContraction); the product passed through `| af_zero` is opaque, so every
// product is rounded on its own as on the CPU.
var<private> af_zero: u32;
fn af_add_f32(x: f32, y: f32) -> f32 { return x + y; }
fn af_sub_f32(x: f32, y: f32) -> f32 { return x - y; }
fn af_mul_f32(x: f32, y: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x * y) | af_zero); }
// x - a * b rounded once, as fma(-a, b, x) would be if Vulkan's fma were fused (it need not be;
// lavapipe's is not), for a, b > 0, x within a factor 2 of a * b (so x - p is exact) and no
// over- or underflow: Dekker's exact product p + err from 12-bit halves. Every partial product is
// exact, so a driver fusing one into an add changes nothing; p is opaque so it cannot be fused.
fn af_residual(x: f32, a: f32, b: f32) -> f32 {
  let p = bitcast<f32>(bitcast<u32>(a * b) | af_zero);
  let ah = af_mask12(a);
  let al = a - ah;
  let bh = af_mask12(b);
  let bl = b - bh;
  let err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  return (x - p) - err;
}
// af_residual where the device's `fma` rounds once (`Target::fused_fma`, probed when the wgpu
// executor starts): the same value, x - a * b rounded once, in one instruction. The renderer
// substitutes it for af_residual under that name.
fn af_residual_fused(x: f32, a: f32, b: f32) -> f32 { return fma(-a, b, x); }
// (bits of m, k) with b = m * 2^k, m in [1, 2), for the bits b of a finite nonzero |x| (subnormals
// normalised with integer shifts).
fn af_unpack_f32(b: u32) -> vec2<i32> {
  var m = b;
  var k = -127;
  if (m < 0x00800000u) {
    let s = countLeadingZeros(m) - 8u;
    m = m << s;
    k -= i32(s);
  }
  k += i32(m >> 23u);
  return vec2<i32>(i32((m & 0x007fffffu) | 0x3f800000u), k);
}
// a / b correctly rounded for positive a and b whose steps all stay normal (af_div_f32 hands it
// the significands, or the operands themselves where their exponents are in [-60, 60]).
fn af_div_round(a: f32, b: f32) -> f32 {
  let r = 1.0f / b;
  let q0 = af_mul_f32(a, r);
  let q1 = q0 + af_mul_f32(af_residual(a, q0, b), r);
  let qp = bitcast<f32>(bitcast<u32>(q1) + 1u);
  let qm = bitcast<f32>(bitcast<u32>(q1) - 1u);
  let e = af_residual(a, q1, b);
  var q = q1;
  if (e + e > (qp - q1) * b) { q = qp; }
  if (e + e < (qm - q1) * b) { q = qm; }
  return q;
}
// Correctly rounded x / y (Vulkan's division is only within 2.5 ulp). The significands' quotient
// Q = mx / my in (1/2, 2): q1, one Newton step from 1 / my, is within 1 ulp of Q; of q1 and its
// neighbours the one whose midpoints bracket Q is picked by the exact remainder e = mx - q1 * my
// (Q is never a midpoint). q times 2^k is exact unless it is subnormal; then the significand is
// rounded to the subnormal grid with the integer bits of q and the sign of its remainder. Operands
// of exponents in [-60, 60] take the same steps without the unpacking (the steps are invariant
// under scaling while nothing leaves the normal range). Products that feed a sum are opaque
// (af_mul_f32) as in af_sqrt_f32. The proof is tests/exact_f32.rs, which mirrors this text line
// by line.
fn af_div_f32(x: f32, y: f32) -> f32 {
  let s = (bitcast<u32>(x) ^ bitcast<u32>(y)) & 0x80000000u;
  let bx = bitcast<u32>(x) & 0x7fffffffu;
  let by = bitcast<u32>(y) & 0x7fffffffu;
  // Both exponents in [-60, 60] (the common case): the same steps on |x| and |y| themselves, with
  // no unpacking or scaling (every product and remainder stays normal, the quotient is normal).
  if (bx - 0x21800000u < 0x3c800000u && by - 0x21800000u < 0x3c800000u) {
    return bitcast<f32>(s | bitcast<u32>(af_div_round(bitcast<f32>(bx), bitcast<f32>(by))));
  }
  if (bx > 0x7f800000u || by > 0x7f800000u || (bx == by && (bx == 0u || bx == 0x7f800000u))) {
    return af_nan();
  }
  if (bx == 0x7f800000u || by == 0u) { return bitcast<f32>(s | 0x7f800000u); }
  if (bx == 0u || by == 0x7f800000u) { return bitcast<f32>(s); }
  let ux = af_unpack_f32(bx);
  let uy = af_unpack_f32(by);
  let mx = bitcast<f32>(ux.x);
  let my = bitcast<f32>(uy.x);
  let k = ux.y - uy.y;
  let q = af_div_round(mx, my);
  let bq = bitcast<u32>(q);
  let sh = 1 - i32(bq >> 23u) - k;
  if (sh <= 0) { return bitcast<f32>(s | bitcast<u32>(af_ldexp(q, k))); }
  if (sh > 25) { return bitcast<f32>(s); }
  let n = (bq & 0x007fffffu) | 0x00800000u;
  let rest = n & ((1u << u32(sh)) - 1u);
  let half = 1u << u32(sh - 1);
  var t = n >> u32(sh);
  let d = af_residual(mx, q, my);
  if (rest > half || (rest == half && (d > 0.0f || (d == 0.0f && (t & 1u) == 1u)))) { t += 1u; }
  return bitcast<f32>(s | t);
}
// Exact C fmodf (musl's bit-level long division; WGSL's % is x - y * trunc(x / y), inexact).
fn af_rem_f32(x: f32, y: f32) -> f32 {
  var ux = bitcast<u32>(x);
  var uy = bitcast<u32>(y);
  var ex = i32((ux >> 23u) & 0xffu);
  var ey = i32((uy >> 23u) & 0xffu);
  let sx = ux & 0x80000000u;
  if ((uy << 1u) == 0u || af_is_nan_f32(y) || ex == 0xff) { return af_nan(); }
  if ((ux << 1u) <= (uy << 1u)) {
    if ((ux << 1u) == (uy << 1u)) { return bitcast<f32>(sx); }
    return x;
  }
  if (ex == 0) {
    var i = ux << 9u;
    while ((i >> 31u) == 0u) {
      ex -= 1;
      i = i << 1u;
    }
    ux = ux << u32(1 - ex);
  } else {
    ux = (ux & 0x007fffffu) | 0x00800000u;
  }
  if (ey == 0) {
    var i = uy << 9u;
    while ((i >> 31u) == 0u) {
      ey -= 1;
      i = i << 1u;
    }
    uy = uy << u32(1 - ey);
  } else {
    uy = (uy & 0x007fffffu) | 0x00800000u;
  }
  loop {
    let i = ux - uy;
    if ((i >> 31u) == 0u) {
      if (i == 0u) { return bitcast<f32>(sx); }
      ux = i;
    }
    if (ex <= ey) { break; }
    ux = ux << 1u;
    ex -= 1;
  }
  while ((ux >> 23u) == 0u) {
    ux = ux << 1u;
    ex -= 1;
  }
  if (ex > 0) {
    ux = (ux - 0x00800000u) | (u32(ex) << 23u);
  } else {
    ux = ux >> u32(1 - ex);
  }
  return bitcast<f32>(ux | sx);
}
fn af_mod_f32(x: f32, y: f32) -> f32 {
  let r = af_rem_f32(x, y);
  if (!(r == 0.0f) && ((r < 0.0f) != (y < 0.0f))) { return r + y; }
  return r;
}
// a * b as p + e exactly (Dekker's product from 12-bit halves, as in af_residual; p is opaque).
fn af_two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = bitcast<f32>(bitcast<u32>(a * b) | af_zero);
  let ah = af_mask12(a);
  let al = a - ah;
  let bh = af_mask12(b);
  let bl = b - bh;
  return vec2<f32>(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}
// x through an opaque bit operation (as af_mul_f32's product): a driver's algebraic rewrites
// (Mesa's turn (s - t) - s into -t) cannot see through it, so error-free sums keep their error.
fn af_opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | af_zero); }
// log2(m) for m in [sqrt(1/2), sqrt(2)) as hi + lo to about 2^-28 relative: ln m = t - t^2 / 2 + p
// with t = m - 1 exact, t^2 an exact pair and p = af_log_tail3(t) (about t^3 / 3) the only rounded
// term, times log2(e) as a pair. pow needs it: y log2(m) reaches 150 in magnitude, and a rounded
// f32 log2(m) put 116 ulp into x^y there (issue 18's sweep).
fn af_log2_mant_pair(m: f32) -> vec2<f32> {
  let t = m - 1.0f;
  let z = af_two_prod(t, t);
  let h = -0.5f * z.x;
  let s = af_opaque(t + h);
  let bb = af_opaque(s - t);
  let e = (t - (s - bb)) + (h - bb);
  let lo = e + (af_log_tail3(t) - 0.5f * z.y);
  let lnh = af_opaque(s + lo);
  let lnl = lo - (lnh - s);
  let q = af_two_prod(lnh, 1.4426950216293335f);
  return vec2<f32>(q.x, q.y + (lnh * 1.925963033500011e-8f + lnl * 1.4426950216293335f));
}
// C powf, including its special cases and negative bases with integral exponents.
// |x|^y = 2^(y log2|x|) with log2|x| = k + log2(m): y k is formed exactly (split products), and
// y log2(m) as an exact product of y and the pair of af_log2_mant_pair, whose integer part is split
// off before the fractions are summed, so the error stays a few ulp where |y log2|x|| nears 150.
fn af_pow_f32(x: f32, y: f32) -> f32 {
  if (y == 0.0f || x == 1.0f) { return 1.0f; }
  if (af_is_nan_f32(x) || af_is_nan_f32(y)) { return af_nan(); }
  let ax = abs(x);
  let ay = abs(y);
  let yint = trunc(y) == y;
  let yodd = yint && ay < 16777216.0f && (u32(ay) & 1u) == 1u;
  let flip = yodd && af_signbit(x);
  if (!af_finite(y)) {
    if (ax == 1.0f) { return 1.0f; }
    return select(af_inf(), 0.0f, (ax < 1.0f) == (y > 0.0f));
  }
  if (ax == 0.0f || !af_finite(ax)) {
    let m = select(0.0f, af_inf(), (ax == 0.0f) == (y < 0.0f));
    return select(m, -m, flip);
  }
  if (x < 0.0f && !yint) { return af_nan(); }
  let s = af_logsplit(ax);
  let k = s.y;
  if (ay > 1073741824.0f && k != 0.0f) {
    return select(0.0f, af_inf(), (k > 0.0f) == (y > 0.0f));
  }
  let yh = af_mask12(y);
  let a = yh * k;
  let n = floor(a + 0.5f);
  let l = af_log2_mant_pair(s.x);
  let q = af_two_prod(y, l.x);
  let n3 = floor(q.x + 0.5f);
  let f = ((a - n) + (q.x - n3)) + ((y - yh) * k + (q.y + y * l.y));
  let n2 = floor(f + 0.5f);
  let m = af_ldexp(af_exp2_core(f - n2), i32(clamp(n + n3 + n2, -400.0f, 400.0f)));
  return select(m, -m, flip);
}
// Two zeros give the first, tested on the bits: drivers may compile the select to a min/max
// instruction, which picks either zero.
fn af_both_zero(x: f32, y: f32) -> bool { return ((bitcast<u32>(x) | bitcast<u32>(y)) << 1u) == 0u; }
fn af_min_f32(x: f32, y: f32) -> f32 {
  if (af_is_nan_f32(x) || af_is_nan_f32(y)) { return af_nan(); }
  if (af_both_zero(x, y)) { return x; }
  return select(x, y, y < x);
}
fn af_max_f32(x: f32, y: f32) -> f32 {
  if (af_is_nan_f32(x) || af_is_nan_f32(y)) { return af_nan(); }
  if (af_both_zero(x, y)) { return x; }
  return select(x, y, y > x);
}

// ---- comparisons ----
fn af_lt_f32(x: f32, y: f32) -> bool { return x < y; }
fn af_le_f32(x: f32, y: f32) -> bool { return x <= y; }
fn af_gt_f32(x: f32, y: f32) -> bool { return x > y; }
fn af_ge_f32(x: f32, y: f32) -> bool { return x >= y; }
fn af_eq_f32(x: f32, y: f32) -> bool { return x == y; }
// Float `!=` is written !(x == y): some drivers compile it as an ordered comparison (false on NaN).
fn af_ne_f32(x: f32, y: f32) -> bool { return !(x == y); }
fn af_lt_i32(x: i32, y: i32) -> bool { return x < y; }
fn af_le_i32(x: i32, y: i32) -> bool { return x <= y; }
fn af_gt_i32(x: i32, y: i32) -> bool { return x > y; }
fn af_ge_i32(x: i32, y: i32) -> bool { return x >= y; }
fn af_eq_i32(x: i32, y: i32) -> bool { return x == y; }
fn af_ne_i32(x: i32, y: i32) -> bool { return x != y; }
fn af_lt_u32(x: u32, y: u32) -> bool { return x < y; }
fn af_le_u32(x: u32, y: u32) -> bool { return x <= y; }
fn af_gt_u32(x: u32, y: u32) -> bool { return x > y; }
fn af_ge_u32(x: u32, y: u32) -> bool { return x >= y; }
fn af_eq_u32(x: u32, y: u32) -> bool { return x == y; }
fn af_ne_u32(x: u32, y: u32) -> bool { return x != y; }

// ---- integers: WGSL's runtime i32/u32 arithmetic wraps; a zero divisor sets *bad and gives 0 ----
fn af_neg_i32(x: i32) -> i32 { return bitcast<i32>(0u - bitcast<u32>(x)); }
fn af_abs_i32(x: i32) -> i32 { return select(x, af_neg_i32(x), x < 0); }
fn af_sign_i32(x: i32) -> i32 { return select(select(0, -1, x < 0), 1, x > 0); }
fn af_not_i32(x: i32) -> i32 { return ~x; }
fn af_add_i32(x: i32, y: i32) -> i32 { return bitcast<i32>(bitcast<u32>(x) + bitcast<u32>(y)); }
fn af_sub_i32(x: i32, y: i32) -> i32 { return bitcast<i32>(bitcast<u32>(x) - bitcast<u32>(y)); }
fn af_mul_i32(x: i32, y: i32) -> i32 { return bitcast<i32>(bitcast<u32>(x) * bitcast<u32>(y)); }
fn af_and_i32(x: i32, y: i32) -> i32 { return x & y; }
fn af_or_i32(x: i32, y: i32) -> i32 { return x | y; }
fn af_xor_i32(x: i32, y: i32) -> i32 { return x ^ y; }
fn af_min_i32(x: i32, y: i32) -> i32 { return select(x, y, y < x); }
fn af_max_i32(x: i32, y: i32) -> i32 { return select(x, y, y > x); }
fn af_div_i32(x: i32, y: i32, bad: ptr<function, u32>) -> i32 {
  if (y == 0) {
    *bad = 1u;
    return 0;
  }
  if (y == -1) { return af_neg_i32(x); }
  return x / y;
}
fn af_rem_i32(x: i32, y: i32, bad: ptr<function, u32>) -> i32 {
  if (y == 0) {
    *bad = 1u;
    return 0;
  }
  if (y == -1) { return 0; }
  return x % y;
}
fn af_mod_i32(x: i32, y: i32, bad: ptr<function, u32>) -> i32 {
  let r = af_rem_i32(x, y, bad);
  if (r != 0 && ((r < 0) != (y < 0))) { return af_add_i32(r, y); }
  return r;
}
fn af_neg_u32(x: u32) -> u32 { return 0u - x; }
fn af_abs_u32(x: u32) -> u32 { return x; }
fn af_sign_u32(x: u32) -> u32 { return select(0u, 1u, x > 0u); }
fn af_not_u32(x: u32) -> u32 { return ~x; }
fn af_add_u32(x: u32, y: u32) -> u32 { return x + y; }
fn af_sub_u32(x: u32, y: u32) -> u32 { return x - y; }
fn af_mul_u32(x: u32, y: u32) -> u32 { return x * y; }
fn af_and_u32(x: u32, y: u32) -> u32 { return x & y; }
fn af_or_u32(x: u32, y: u32) -> u32 { return x | y; }
fn af_xor_u32(x: u32, y: u32) -> u32 { return x ^ y; }
fn af_min_u32(x: u32, y: u32) -> u32 { return select(x, y, y < x); }
fn af_max_u32(x: u32, y: u32) -> u32 { return select(x, y, y > x); }
fn af_div_u32(x: u32, y: u32, bad: ptr<function, u32>) -> u32 {
  if (y == 0u) {
    *bad = 1u;
    return 0u;
  }
  return x / y;
}
fn af_rem_u32(x: u32, y: u32, bad: ptr<function, u32>) -> u32 {
  if (y == 0u) {
    *bad = 1u;
    return 0u;
  }
  return x % y;
}
fn af_mod_u32(x: u32, y: u32, bad: ptr<function, u32>) -> u32 { return af_rem_u32(x, y, bad); }

// ---- index folds (roll, pad): IndexMap::Folded, n >= 2; `_near` for -n <= v < 2n ----
fn af_fold_mod(v: i32, p: i32) -> i32 { let m = v % p; return select(m, m + p, m < 0); }
fn af_fold_wrap(v: i32, n: i32) -> i32 { return af_fold_mod(v, n); }
fn af_fold_wrap_near(v: i32, n: i32) -> i32 { return select(select(v, v - n, v >= n), v + n, v < 0); }
fn af_fold_clamp(v: i32, n: i32) -> i32 { return clamp(v, 0, n - 1); }
fn af_fold_reflect(v: i32, n: i32) -> i32 { let m = af_fold_mod(v, 2 * (n - 1)); return select(m, 2 * (n - 1) - m, m >= n); }
fn af_fold_reflect_near(v: i32, n: i32) -> i32 { return select(select(v, 2 * (n - 1) - v, v >= n), -v, v < 0); }
fn af_fold_symmetric(v: i32, n: i32) -> i32 { let m = af_fold_mod(v, 2 * n); return select(m, 2 * n - 1 - m, m >= n); }
fn af_fold_symmetric_near(v: i32, n: i32) -> i32 { return select(select(v, 2 * n - 1 - v, v >= n), -v - 1, v < 0); }

// ---- bool ----
fn af_not_b8(x: bool) -> bool { return !x; }
fn af_and_b8(x: bool, y: bool) -> bool { return x && y; }
fn af_or_b8(x: bool, y: bool) -> bool { return x || y; }
fn af_xor_b8(x: bool, y: bool) -> bool { return x != y; }
fn af_nand_b8(x: bool, y: bool) -> bool { return !(x && y); }
fn af_nor_b8(x: bool, y: bool) -> bool { return !(x || y); }
fn af_eq_b8(x: bool, y: bool) -> bool { return x == y; }
fn af_ne_b8(x: bool, y: bool) -> bool { return x != y; }

// ---- casts with Rust `as` semantics (float to int saturates, NaN to 0; int to float rounds to
// nearest even, which WGSL's conversions leave to the driver) ----
fn af_cast_u32_f32(x: u32) -> f32 {
  if (x < 0x01000000u) { return f32(x); }
  let s = firstLeadingBit(x) - 23u;
  var m = x >> s;
  let rest = x & ((1u << s) - 1u);
  let half = 1u << (s - 1u);
  if (rest > half || (rest == half && (m & 1u) == 1u)) { m += 1u; }
  return af_ldexp(f32(m), i32(s));
}
fn af_cast_i32_f32(x: i32) -> f32 {
  let m = af_cast_u32_f32(bitcast<u32>(af_abs_i32(x)));
  return select(m, -m, x < 0);
}
fn af_cast_b8_f32(x: bool) -> f32 { return select(0.0f, 1.0f, x); }
fn af_cast_f32_f32(x: f32) -> f32 { return x; }
fn af_cast_f32_i32(x: f32) -> i32 {
  if (af_is_nan_f32(x)) { return 0; }
  if (x <= -2147483648.0f) { return -2147483647 - 1; }
  if (x >= 2147483648.0f) { return 2147483647; }
  return i32(x);
}
fn af_cast_f32_u32(x: f32) -> u32 {
  if (!(x > 0.0f)) { return 0u; }
  if (x >= 4294967296.0f) { return 4294967295u; }
  return u32(x);
}
// On the bits: subnormals are not zero, even where float compares flush them.
fn af_cast_f32_b8(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }
fn af_cast_i32_i32(x: i32) -> i32 { return x; }
fn af_cast_i32_u32(x: i32) -> u32 { return bitcast<u32>(x); }
fn af_cast_i32_b8(x: i32) -> bool { return x != 0; }
fn af_cast_u32_i32(x: u32) -> i32 { return bitcast<i32>(x); }
fn af_cast_u32_u32(x: u32) -> u32 { return x; }
fn af_cast_u32_b8(x: u32) -> bool { return x != 0u; }
fn af_cast_b8_i32(x: bool) -> i32 { return select(0, 1, x); }
fn af_cast_b8_u32(x: bool) -> u32 { return select(0u, 1u, x); }
fn af_cast_b8_b8(x: bool) -> bool { return x; }

// ---- Philox4x32-10 stream (primitives/cpu.rs: words_per_value, stream_words) ----
// a + b for a u64 a.
fn af_add64(a: vec2<u32>, b: u32) -> vec2<u32> {
  let lo = a.x + b;
  return vec2<u32>(lo, a.y + select(0u, 1u, lo < b));
}
// The 64-bit product of a and b as (low word, high word), from 16-bit halves.
fn af_mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a * b, a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn af_philox(block: vec2<u32>, key0: u32, key1: u32) -> vec4<u32> {
  var c = vec4<u32>(block.x, block.y, 0u, 0u);
  var k0 = key0;
  var k1 = key1;
  for (var r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    let p0 = af_mul_wide(0xD2511F53u, c.x);
    let p1 = af_mul_wide(0xCD9E8D57u, c.z);
    c = vec4<u32>(p1.y ^ c.y ^ k0, p1.x, p0.y ^ c.w ^ k1, p0.x);
  }
  return c;
}
// The words of stream element g that take w words each (w is 1 or 2 on this target): the first w
// components of the result.
fn af_stream(k0: u32, k1: u32, g: vec2<u32>, w: u32) -> vec4<u32> {
  let shift = select(1u, 2u, w == 1u);
  let block = vec2<u32>((g.x >> shift) | (g.y << (32u - shift)), g.y >> shift);
  let b = af_philox(block, k0, k1);
  let first = (g.x & ((1u << shift) - 1u)) * w;
  // Words first and first + 1 (w = 2: first is 0 or 2) by selects, not a local array.
  let half = select(b.xy, b.zw, first >= 2u);
  return vec4<u32>(select(half.x, half.y, (first & 1u) == 1u), half.y, 0u, 0u);
}
// The words of stream elements g .. g + 3 of one word each (lane u: element g + u), for a quad of
// elements: one Philox block where g is a multiple of 4 (a quad of a draw that starts on a
// block), else the two blocks the quad straddles; af_stream takes a block per element.
fn af_stream_quad1(k0: u32, k1: u32, g: vec2<u32>) -> vec4<u32> {
  let s = g.x & 3u;
  let blk = vec2<u32>((g.x >> 2u) | (g.y << 30u), g.y >> 2u);
  let b0 = af_philox(blk, k0, k1);
  if (s == 0u) { return b0; }
  let b1 = af_philox(af_add64(blk, 1u), k0, k1);
  var v = array<u32, 8>(b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
  return vec4<u32>(v[s], v[s + 1u], v[s + 2u], v[s + 3u]);
}
// The same for elements of two words each: [0] the first words of the four elements, [1] the
// second; two blocks where g is even, else three.
fn af_stream_quad2(k0: u32, k1: u32, g: vec2<u32>) -> array<vec4<u32>, 2> {
  let blk = vec2<u32>((g.x >> 1u) | (g.y << 31u), g.y >> 1u);
  let b0 = af_philox(blk, k0, k1);
  let b1 = af_philox(af_add64(blk, 1u), k0, k1);
  if ((g.x & 1u) == 0u) {
    return array<vec4<u32>, 2>(vec4<u32>(b0.x, b0.z, b1.x, b1.z), vec4<u32>(b0.y, b0.w, b1.y, b1.w));
  }
  let b2 = af_philox(af_add64(blk, 2u), k0, k1);
  return array<vec4<u32>, 2>(vec4<u32>(b0.z, b1.x, b1.z, b2.x), vec4<u32>(b0.w, b1.y, b1.w, b2.y));
}
// Distributions of stream words (af_stream's, or a quad's from af_stream_quad1/2).
fn af_w_uniform_f32(w: u32) -> f32 { return f32(w >> 8u) * (1.0f / 16777216.0f); }
fn af_w_normal_f32(w0: u32, w1: u32) -> f32 {
  let u1 = (f32(w0 >> 8u) + 1.0f) * (1.0f / 16777216.0f);
  let u2 = f32(w1 >> 8u) * (1.0f / 16777216.0f);
  return af_sqrt_f32(-2.0f * af_ln_f32(u1)) * af_cos_f32(6.28318530717958647692f * u2);
}
fn af_uniform_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  return af_w_uniform_f32(af_stream(k0, k1, g, 1u).x);
}
fn af_normal_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  let r = af_stream(k0, k1, g, 2u);
  return af_w_normal_f32(r.x, r.y);
}

// More distributions (primitives/cpu.rs: exponential_f32, integer_u32).
fn af_w_exponential_f32(w: u32) -> f32 {
  let u1 = (f32(w >> 8u) + 1.0f) * (1.0f / 16777216.0f);
  return 0.0f - af_ln_f32(u1);
}
// Lemire's multiply-shift; range 0 stands for 2^32 (the word itself).
fn af_w_integers_u32(w: u32, range: u32) -> u32 {
  return select(af_mul_wide(w, range).y, w, range == 0u);
}
fn af_exponential_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  return af_w_exponential_f32(af_stream(k0, k1, g, 1u).x);
}
fn af_integers_u32(k0: u32, k1: u32, g: vec2<u32>, range: u32) -> u32 {
  return af_w_integers_u32(af_stream(k0, k1, g, 1u).x, range);
}
// ---- Hash32 (primitives/cpu.rs: hash32, random_words): element g of w words per value takes
// words g * w + j of two keyed rounds of Wellons' lowbias32 over a 32-bit counter ----
fn af_lowbias32(v: u32) -> u32 {
  var x = v;
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  return x ^ (x >> 16u);
}
fn af_hash32(k0: u32, k1: u32, c: u32) -> u32 {
  return af_lowbias32(af_lowbias32(c + k0) ^ k1);
}
fn af_h_uniform_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  return af_w_uniform_f32(af_hash32(k0, k1, g.x));
}
fn af_h_normal_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  let c = g.x * 2u;
  return af_w_normal_f32(af_hash32(k0, k1, c), af_hash32(k0, k1, c + 1u));
}
fn af_h_exponential_f32(k0: u32, k1: u32, g: vec2<u32>) -> f32 {
  return af_w_exponential_f32(af_hash32(k0, k1, g.x));
}
fn af_h_integers_u32(k0: u32, k1: u32, g: vec2<u32>, range: u32) -> u32 {
  return af_w_integers_u32(af_hash32(k0, k1, g.x), range);
}

// ---- argmax / argmin (src/exec/cpu/reduce.rs) ----
// Whether candidate (vb, ib) replaces (va, ia): index 0xffffffff is "none"; the first NaN wins, then
// the strictly better value, ties to the lower index. The rule does not depend on the order in
// which partial results meet, so tree reductions give the CPU's answer.
fn af_arg_better_f32(va: f32, ia: u32, vb: f32, ib: u32, want_max: bool) -> bool {
  if (ib == 0xffffffffu) { return false; }
  if (ia == 0xffffffffu) { return true; }
  let na = af_is_nan_f32(va);
  let nb = af_is_nan_f32(vb);
  if (na || nb) { return select(nb, ib < ia, na && nb); }
  if (vb == va) { return ib < ia; }
  return select((vb < va), (vb > va), want_max);
}
fn af_arg_better_i32(va: i32, ia: u32, vb: i32, ib: u32, want_max: bool) -> bool {
  if (ib == 0xffffffffu) { return false; }
  if (ia == 0xffffffffu || vb == va) { return ib < ia; }
  return select((vb < va), (vb > va), want_max);
}
fn af_arg_better_u32(va: u32, ia: u32, vb: u32, ib: u32, want_max: bool) -> bool {
  if (ib == 0xffffffffu) { return false; }
  if (ia == 0xffffffffu || vb == va) { return ib < ia; }
  return select((vb < va), (vb > va), want_max);
}

// ---- complex numbers (c64): the formulas of primitives/complex.rs, products through af_mul_f32
// (no driver contracts them into an fma), division and sqrt correctly rounded as for f32. Complex
// to real keeps the real part; real to complex has a +0 imaginary part. ----
// sqrt(x^2 + y^2) without overflow or underflow: both scaled by the power of two that brings the
// larger into [1, 2) (exact), the squares summed unfused, the root scaled back (one rounding).
fn af_hypot_f32(x: f32, y: f32) -> f32 {
  let a = abs(x);
  let b = abs(y);
  if (af_is_inf_f32(a) || af_is_inf_f32(b)) { return af_inf(); }
  if (af_is_nan_f32(a) || af_is_nan_f32(b)) { return af_nan(); }
  let m = max(a, b);
  if (m == 0.0f) { return 0.0f; }
  let k = af_unpack_f32(bitcast<u32>(m)).y;
  let p = af_ldexp(a, -k);
  let q = af_ldexp(b, -k);
  return af_ldexp(af_sqrt_f32(af_mul_f32(p, p) + af_mul_f32(q, q)), k);
}
fn af_neg_c64(z: c64) -> c64 { return c64(af_neg_f32(z.x), af_neg_f32(z.y)); }
fn af_conj_c64(z: c64) -> c64 { return c64(z.x, af_neg_f32(z.y)); }
fn af_re_c64(z: c64) -> f32 { return z.x; }
fn af_im_c64(z: c64) -> f32 { return z.y; }
fn af_abs_c64(z: c64) -> f32 { return af_hypot_f32(z.x, z.y); }
fn af_arg_c64(z: c64) -> f32 { return af_atan2_f32(z.y, z.x); }
fn af_add_c64(a: c64, b: c64) -> c64 { return c64(a.x + b.x, a.y + b.y); }
fn af_sub_c64(a: c64, b: c64) -> c64 { return c64(a.x - b.x, a.y - b.y); }
// The schoolbook product: four products, each rounded on its own.
fn af_mul_c64(a: c64, b: c64) -> c64 {
  return c64(af_mul_f32(a.x, b.x) - af_mul_f32(a.y, b.y), af_mul_f32(a.x, b.y) + af_mul_f32(a.y, b.x));
}
// Smith's division, scaled by the larger part of b; the first branch when |b.x| >= |b.y| (false
// when either is NaN, as in Rust), compared on the bits so no driver assumes away NaN.
fn af_div_c64(a: c64, b: c64) -> c64 {
  let ux = bitcast<u32>(b.x) & 0x7fffffffu;
  let uy = bitcast<u32>(b.y) & 0x7fffffffu;
  if (ux >= uy && ux <= 0x7f800000u) {
    let r = af_div_f32(b.y, b.x);
    let d = b.x + af_mul_f32(b.y, r);
    return c64(af_div_f32(a.x + af_mul_f32(a.y, r), d), af_div_f32(a.y - af_mul_f32(a.x, r), d));
  }
  let r = af_div_f32(b.x, b.y);
  let d = af_mul_f32(b.x, r) + b.y;
  return c64(af_div_f32(af_mul_f32(a.x, r) + a.y, d), af_div_f32(af_mul_f32(a.y, r) - a.x, d));
}
fn af_eq_c64(a: c64, b: c64) -> bool { return af_eq_f32(a.x, b.x) && af_eq_f32(a.y, b.y); }
fn af_ne_c64(a: c64, b: c64) -> bool { return !af_eq_c64(a, b); }
fn af_exp_c64(z: c64) -> c64 {
  let m = af_exp_f32(z.x);
  if (z.y == 0.0f) { return c64(m, z.y); }
  return c64(af_mul_f32(m, af_cos_f32(z.y)), af_mul_f32(m, af_sin_f32(z.y)));
}
fn af_ln_c64(z: c64) -> c64 { return c64(af_ln_f32(af_hypot_f32(z.x, z.y)), af_atan2_f32(z.y, z.x)); }
// The principal root from t = sqrt(|re| / 2 + |z| / 2) (halves, so it does not overflow; opaque,
// so no driver folds them into (|re| + |z|) / 2, which does).
fn af_sqrt_c64(z: c64) -> c64 {
  if (z.x == 0.0f && z.y == 0.0f) { return c64(0.0f, z.y); }
  if (af_is_inf_f32(z.y)) { return c64(af_inf(), z.y); }
  let t = af_sqrt_f32(af_mul_f32(0.5f, abs(z.x)) + af_mul_f32(0.5f, af_hypot_f32(z.x, z.y)));
  if (z.x >= 0.0f) { return c64(t, af_div_f32(0.5f * z.y, t)); }
  return c64(af_div_f32(0.5f * abs(z.y), t), af_copysign(t, z.y));
}
fn af_complex_f32(x: f32, y: f32) -> c64 { return c64(x, y); }
fn af_cast_c64_c64(z: c64) -> c64 { return z; }
fn af_cast_f32_c64(x: f32) -> c64 { return c64(x, 0.0f); }
fn af_cast_i32_c64(x: i32) -> c64 { return c64(af_cast_i32_f32(x), 0.0f); }
fn af_cast_u32_c64(x: u32) -> c64 { return c64(af_cast_u32_f32(x), 0.0f); }
fn af_cast_b8_c64(x: bool) -> c64 { return c64(af_cast_b8_f32(x), 0.0f); }
fn af_cast_c64_f32(z: c64) -> f32 { return z.x; }
fn af_cast_c64_i32(z: c64) -> i32 { return af_cast_f32_i32(z.x); }
fn af_cast_c64_u32(z: c64) -> u32 { return af_cast_f32_u32(z.x); }
fn af_cast_c64_b8(z: c64) -> bool { return af_cast_f32_b8(z.x); }
