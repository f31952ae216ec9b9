/* arrayflow primitive library, C target (CPU native tier; the OpenCL C target shares the names).
 * One inline function per op and element type, named af_<op>_<type>, with the same semantics as
 * the CPU sources in primitives/table.rs: integers wrap, integer division by zero reports a fault,
 * float min/max propagate NaN, mod is floored, casts saturate like Rust's `as`.
 * Types: f32 float, f64 double, i32 int32_t, u32 uint32_t, bool uint8_t (0 or 1); Complex<f32> c64
 * and Complex<f64> c128, structs of two components, real part first (num-complex's layout). */
#include <math.h>
#include <stdint.h>

typedef float f32; typedef double f64; typedef int32_t i32; typedef uint32_t u32; typedef uint8_t b8;

/* ---- kernel parameters: 64 raw bits per slot (primitives: ParamKind) ---- */
static inline f32 af_bits_f32(uint64_t b) { union { uint32_t u; f32 f; } v; v.u = (uint32_t)b; return v.f; }
static inline f64 af_bits_f64(uint64_t b) { union { uint64_t u; f64 f; } v; v.u = b; return v.f; }
static inline i32 af_bits_i32(uint64_t b) { return (i32)(uint32_t)b; }
static inline u32 af_bits_u32(uint64_t b) { return (u32)b; }
static inline b8 af_bits_b8(uint64_t b) { return b != 0; }

/* ---- index folds (roll, pad): IndexMap::Folded, n >= 2; `_near` for -n <= v < 2n ---- */
static inline int64_t af_fold_mod(int64_t v, int64_t p) { int64_t m = v % p; return m < 0 ? m + p : m; }
static inline int64_t af_fold_wrap(int64_t v, int64_t n) { return af_fold_mod(v, n); }
static inline int64_t af_fold_wrap_near(int64_t v, int64_t n) { return v < 0 ? v + n : (v >= n ? v - n : v); }
static inline int64_t af_fold_clamp(int64_t v, int64_t n) { return v < 0 ? 0 : (v >= n ? n - 1 : v); }
static inline int64_t af_fold_reflect(int64_t v, int64_t n) { int64_t m = af_fold_mod(v, 2 * (n - 1)); return m >= n ? 2 * (n - 1) - m : m; }
static inline int64_t af_fold_reflect_near(int64_t v, int64_t n) { return v < 0 ? -v : (v >= n ? 2 * (n - 1) - v : v); }
static inline int64_t af_fold_symmetric(int64_t v, int64_t n) { int64_t m = af_fold_mod(v, 2 * n); return m >= n ? 2 * n - 1 - m : m; }
static inline int64_t af_fold_symmetric_near(int64_t v, int64_t n) { return v < 0 ? -v - 1 : (v >= n ? 2 * n - 1 - v : v); }
/* Fast row bodies (codegen/c.rs render_rows): narrow [*lo, *hi) to the x with 0 <= base + c x < n
 * (c != 0), where every fold is the identity; af_within clamps a bound into [from, to]. */
static inline int64_t af_floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static inline void af_narrow(int64_t *lo, int64_t *hi, int64_t base, int64_t c, int64_t n) {
  int64_t l, h;
  if (c > 0) { l = -af_floor_div(base, c); h = af_floor_div(n - 1 - base, c); }
  else { l = -af_floor_div(n - 1 - base, -c); h = af_floor_div(base, -c); }
  if (l > *lo) *lo = l;
  if (h + 1 < *hi) *hi = h + 1;
}
static inline uint64_t af_within(int64_t v, uint64_t from, uint64_t to) { return v < (int64_t)from ? from : (v > (int64_t)to ? to : (uint64_t)v); }

/* ---- float unary ---- */
#define AF_FU(name, e32, e64) \
  static inline f32 af_##name##_f32(f32 x) { return e32; } \
  static inline f64 af_##name##_f64(f64 x) { return e64; }
AF_FU(neg, -x, -x)
AF_FU(abs, fabsf(x), fabs(x))
AF_FU(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x), x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x))
AF_FU(sqrt, sqrtf(x), sqrt(x))
AF_FU(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
AF_FU(cbrt, cbrtf(x), cbrt(x))
/* exp and ln from basic arithmetic, branch-free, so loops calling them vectorise; the same
 * operations in the same order as primitives/vmath.rs (exp_f32, ln_f32, exp_f64, ln_f64), so
 * both CPU tiers agree bit for bit. Bits of a float through a union; selects by bit masks pick
 * the special values. */
static inline u32 af_f32_bits(f32 x) { union { f32 f; u32 u; } v; v.f = x; return v.u; }
static inline f32 af_f32_from(u32 b) { union { f32 f; u32 u; } v; v.u = b; return v.f; }
/* c ? a : b by a bit mask: GCC keeps `?:` of a computed float as a branch (the operation might
 * trap), and a branch stops the loop from vectorising. */
static inline f32 af_sel_f32(int c, f32 a, f32 b) { u32 m = (u32)0 - (u32)(c != 0); return af_f32_from((af_f32_bits(a) & m) | (af_f32_bits(b) & ~m)); }
static inline f32 af_exp_f32(f32 x) {
  x = af_sel_f32(x > 89.0f, 89.0f, x);
  x = af_sel_f32(x < -104.0f, -104.0f, x);
  f32 t = x * 1.442695f + 12582912.0f;
  f32 n = t - 12582912.0f;
  i32 k = (i32)(af_f32_bits(t) - 0x4b400000u);
  f32 r = x - n * 0.693145751953125f;
  r = r - n * 1.4286068e-6f;
  f32 u = 0.00019852762f;
  u = u * r + 0.0013930436f;
  u = u * r + 0.008333361f;
  u = u * r + 0.041666485f;
  u = u * r + 0.16666667f;
  u = u * r + 0.5f;
  u = 1.0f + (r * r * u + r);
  i32 k1 = k >> 1, k2 = k - k1;
  return u * af_f32_from((u32)(k1 + 127) << 23) * af_f32_from((u32)(k2 + 127) << 23);
}
static inline uint64_t af_f64_bits(f64 x) { union { f64 f; uint64_t u; } v; v.f = x; return v.u; }
static inline f64 af_f64_from(uint64_t b) { union { f64 f; uint64_t u; } v; v.u = b; return v.f; }
static inline f64 af_sel_f64(int c, f64 a, f64 b) { uint64_t m = (uint64_t)0 - (uint64_t)(c != 0); return af_f64_from((af_f64_bits(a) & m) | (af_f64_bits(b) & ~m)); }
static inline f64 af_exp_f64(f64 x) {
  x = af_sel_f64(x > 710.0, 710.0, x);
  x = af_sel_f64(x < -746.0, -746.0, x);
  f64 t = x * 1.4426950408889634 + 6755399441055744.0;
  f64 n = t - 6755399441055744.0;
  i32 k = (i32)(u32)af_f64_bits(t);
  f64 hi = x - n * 0.6931471803691238;
  f64 lo = n * 1.9082149292705877e-10;
  f64 r = hi - lo;
  f64 z = r * r;
  f64 c = r - z * (0.16666666666666602 + z * (-0.0027777777777015593 + z * (6.613756321437934e-05 + z * (-1.6533902205465252e-06 + z * 4.1381367970572385e-08))));
  f64 y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  i32 k1 = k >> 1, k2 = k - k1;
  return y * af_f64_from((uint64_t)(k1 + 1023) << 52) * af_f64_from((uint64_t)(k2 + 1023) << 52);
}
AF_FU(exp2, exp2f(x), exp2(x))
static inline f32 af_ln_f32(f32 x) {
  int sub = af_f32_bits(x) < 0x00800000u;
  f32 xs = af_sel_f32(sub, x * 33554432.0f, x);
  i32 k0 = sub ? -25 : 0;
  u32 ix = af_f32_bits(xs) + (0x3f800000u - 0x3f3504f3u);
  i32 k = k0 + (i32)(ix >> 23) - 0x7f;
  f32 f = af_f32_from((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  f32 s = f / (2.0f + f);
  f32 z = s * s;
  f32 w = z * z;
  f32 t1 = w * (0.40000972f + w * 0.24279079f);
  f32 t2 = z * (0.6666666f + w * 0.28498787f);
  f32 big_r = t2 + t1;
  f32 hfsq = 0.5f * f * f;
  f32 dk = (f32)k;
  f32 r = s * (hfsq + big_r) + dk * 9.058001e-6f - hfsq + f + dk * 0.6931381f;
  r = af_sel_f32(x < INFINITY, r, x);
  r = af_sel_f32(x < 0.0f, NAN, r);
  return af_sel_f32(x == 0.0f, -INFINITY, r);
}
static inline f64 af_ln_f64(f64 x) {
  int sub = af_f64_bits(x) < 0x0010000000000000ull;
  f64 xs = af_sel_f64(sub, x * 18014398509481984.0, x);
  i32 k0 = sub ? -54 : 0;
  uint64_t bits = af_f64_bits(xs);
  u32 hx = (u32)(bits >> 32) + (0x3ff00000u - 0x3fe6a09eu);
  i32 k = k0 + (i32)(hx >> 20) - 0x3ff;
  hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
  f64 f = af_f64_from(((uint64_t)hx << 32) | (bits & 0xffffffffu)) - 1.0;
  f64 hfsq = 0.5 * f * f;
  f64 s = f / (2.0 + f);
  f64 z = s * s;
  f64 w = z * z;
  f64 t1 = w * (0.3999999999940942 + w * (0.22222198432149784 + w * 0.15313837699209373));
  f64 t2 = z * (0.6666666666666735 + w * (0.2857142874366239 + w * (0.1818357216161805 + w * 0.14798198605116586)));
  f64 R = t2 + t1;
  f64 dk = (f64)k;
  f64 r = ((((s * (hfsq + R)) + dk * 1.9082149292705877e-10) - hfsq) + f) + dk * 0.6931471803691238;
  r = af_sel_f64(x < INFINITY, r, x);
  r = af_sel_f64(x < 0.0, NAN, r);
  return af_sel_f64(x == 0.0, -INFINITY, r);
}
AF_FU(log10, log10f(x), log10(x))
AF_FU(log2, log2f(x), log2(x))
AF_FU(sin, sinf(x), sin(x))
AF_FU(cos, cosf(x), cos(x))
AF_FU(tan, tanf(x), tan(x))
AF_FU(sec, 1.0f / cosf(x), 1.0 / cos(x))
AF_FU(csc, 1.0f / sinf(x), 1.0 / sin(x))
AF_FU(cot, 1.0f / tanf(x), 1.0 / tan(x))
AF_FU(asin, asinf(x), asin(x))
AF_FU(acos, acosf(x), acos(x))
AF_FU(atan, atanf(x), atan(x))
AF_FU(acot, atanf(1.0f / x), atan(1.0 / x))
AF_FU(sinh, sinhf(x), sinh(x))
AF_FU(cosh, coshf(x), cosh(x))
AF_FU(tanh, tanhf(x), tanh(x))
/* sech and csch as primitives/cpu.rs writes them (sech_accurate, csch_accurate): 2 e^-|x| past
 * 88 (f32) or 709 (f64), where 1 / cosh gave 0 instead of a subnormal value. */
AF_FU(sech, fabsf(x) > 88.0f ? 2.0f * expf(-fabsf(x)) : 1.0f / coshf(x), fabs(x) > 709.0 ? 2.0 * exp(-fabs(x)) : 1.0 / cosh(x))
AF_FU(csch, fabsf(x) > 88.0f ? copysignf(2.0f * expf(-fabsf(x)), x) : 1.0f / sinhf(x), fabs(x) > 709.0 ? copysign(2.0 * exp(-fabs(x)), x) : 1.0 / sinh(x))
AF_FU(coth, 1.0f / tanhf(x), 1.0 / tanh(x))
/* erf and erfc in f32 as primitives/vmath.rs writes them (erf_f32, erfc_f32): the same operations
 * in the same order, branch-free; f64 calls the C library. */
static inline f32 af_erf_f32(f32 x) {
  f32 a = fabsf(x);
  f32 z = x * x;
  f32 y = 7.853841e-05f;
  y = y * z - 8.0101873e-04f;
  y = y * z + 5.188327e-03f;
  y = y * z - 2.6853811e-02f;
  y = y * z + 1.12835854e-01f;
  y = y * z - 3.7612626e-01f;
  y = y * z + 1.2837917e-01f;
  f32 small = x + x * y;
  f32 t = af_sel_f32(a > 3.93f, 3.93f, a);
  f32 s = t - 2.5f;
  f32 l = 1.8556345e-04f;
  l = l * s - 1.5604527e-04f;
  l = l * s + 2.4577125e-03f;
  l = l * s - 1.0717812e-02f;
  l = l * s + 5.6114625e-02f;
  l = l * s - 3.5269397e-01f;
  l = l * s - 1.5568178e+00f;
  f32 big = 1.0f - af_exp_f32(l - t * t);
  big = af_f32_from(af_f32_bits(big) | (af_f32_bits(x) & 0x80000000u));
  return af_sel_f32(a < 1.0f, small, big);
}
static inline f64 af_erf_f64(f64 x) { return erf(x); }
static inline f32 af_erfc_f32(f32 x) {
  f64 xd = (f64)x;
  f64 a = fabs(xd);
  a = af_sel_f64(a > 10.5, 10.5, a);
  f64 q = (a - 2.0) / (a + 2.0);
  f64 p = 7.988422041458758e-05;
  p = p * q + 1.7050610571711042e-04;
  p = p * q - 4.0035011554077134e-04;
  p = p * q - 1.4216741500234983e-03;
  p = p * q + 1.2520684615273704e-03;
  p = p * q + 8.709290181636178e-03;
  p = p * q - 8.0306473679035e-03;
  p = p * q - 5.42178342954811e-02;
  p = p * q + 1.640510135002954e-01;
  p = p * q - 1.6603052264346765e-01;
  p = p * q - 9.276381983174066e-02;
  p = p * q + 1.2769783826996197;
  f64 r = af_exp_f64(-(a * a)) * p / (1.0 + 2.0 * a);
  r = af_sel_f64(xd < 0.0, 2.0 - r, r);
  return (f32)r;
}
static inline f64 af_erfc_f64(f64 x) { return erfc(x); }
AF_FU(floor, floorf(x), floor(x))
AF_FU(ceil, ceilf(x), ceil(x))
AF_FU(trunc, truncf(x), trunc(x))
AF_FU(round, roundf(x), round(x))
/* Rust std's formulas, so both CPU tiers agree bit for bit. */
/* Inverse hyperbolics and acsc as primitives/cpu.rs writes them (asinh_accurate, atanh_accurate,
 * acsc_accurate): ln(2|x|) past 1/sqrt(eps) (no overflow near the maximum), atanh of |x| (no
 * cancellation near -1), acsc through atan near |x| = 1. */
static inline f32 af_asinh_f32(f32 x) { f32 ax = fabsf(x), ix = 1.0f / ax; return copysignf(ax > 4096.0f ? logf(ax) + 0.693147180559945309f : log1pf(ax + ax / (hypotf(1.0f, ix) + ix)), x); }
static inline f64 af_asinh_f64(f64 x) { f64 ax = fabs(x), ix = 1.0 / ax; return copysign(ax > 67108864.0 ? log(ax) + 0.693147180559945309 : log1p(ax + ax / (hypot(1.0, ix) + ix)), x); }
static inline f32 af_atanh_f32(f32 x) { f32 t = fabsf(x); return copysignf(t < 0.5f ? 0.5f * log1pf(2.0f * t + 2.0f * t * t / (1.0f - t)) : 0.5f * log1pf((2.0f * t) / (1.0f - t)), x); }
static inline f64 af_atanh_f64(f64 x) { f64 t = fabs(x); return copysign(t < 0.5 ? 0.5 * log1p(2.0 * t + 2.0 * t * t / (1.0 - t)) : 0.5 * log1p((2.0 * t) / (1.0 - t)), x); }
static inline f32 af_acsc_f32(f32 x) { f32 a = fabsf(x); return copysignf(a < 2.0f ? atanf(1.0f / sqrtf((a - 1.0f) * (a + 1.0f))) : asinf(1.0f / a), x); }
static inline f64 af_acsc_f64(f64 x) { f64 a = fabs(x); return copysign(a < 2.0 ? atan(1.0 / sqrt((a - 1.0) * (a + 1.0))) : asin(1.0 / a), x); }
/* acosh accurate near 1 (primitives/cpu.rs acosh_accurate), Rust's formula from 2 up. */
static inline f32 af_acosh_f32(f32 x) { if (x < 1.0f) return NAN; if (x < 2.0f) { f32 t = x - 1.0f; return log1pf(t + sqrtf(t * (t + 2.0f))); } return x > 4096.0f ? logf(x) + 0.693147180559945309f : logf(x + sqrtf(x - 1.0f) * sqrtf(x + 1.0f)); }
static inline f64 af_acosh_f64(f64 x) { if (x < 1.0) return NAN; if (x < 2.0) { f64 t = x - 1.0; return log1p(t + sqrt(t * (t + 2.0))); } return x > 67108864.0 ? log(x) + 0.693147180559945309 : log(x + sqrt(x - 1.0) * sqrt(x + 1.0)); }
/* asec accurate near +-1 (primitives/cpu.rs asec_accurate). */
static inline f32 af_asec_f32(f32 x) { f32 r = atanf(sqrtf((x - 1.0f) * (x + 1.0f))); return x < 0.0f ? (f32)M_PI - r : r; }
static inline f64 af_asec_f64(f64 x) { f64 r = atan(sqrt((x - 1.0) * (x + 1.0))); return x < 0.0 ? M_PI - r : r; }
static inline b8 af_is_nan_f32(f32 x) { return isnan(x) != 0; }
static inline b8 af_is_nan_f64(f64 x) { return isnan(x) != 0; }
static inline b8 af_is_inf_f32(f32 x) { return isinf(x) != 0; }
static inline b8 af_is_inf_f64(f64 x) { return isinf(x) != 0; }

/* ---- float binary ---- */
#define AF_FB(name, e32, e64) \
  static inline f32 af_##name##_f32(f32 x, f32 y) { return e32; } \
  static inline f64 af_##name##_f64(f64 x, f64 y) { return e64; }
AF_FB(add, x + y, x + y)
AF_FB(sub, x - y, x - y)
AF_FB(mul, x * y, x * y)
AF_FB(div, x / y, x / y)
AF_FB(rem, fmodf(x, y), fmod(x, y))
AF_FB(pow, powf(x, y), pow(x, y))
AF_FB(atan2, atan2f(x, y), atan2(x, y))
AF_FB(min, (isnan(x) || isnan(y)) ? NAN : (y < x ? y : x), (isnan(x) || isnan(y)) ? NAN : (y < x ? y : x))
AF_FB(max, (isnan(x) || isnan(y)) ? NAN : (y > x ? y : x), (isnan(x) || isnan(y)) ? NAN : (y > x ? y : x))
static inline f32 af_mod_f32(f32 x, f32 y) { f32 r = fmodf(x, y); return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r; }
static inline f64 af_mod_f64(f64 x, f64 y) { f64 r = fmod(x, y); return (r != 0.0 && ((r < 0.0) != (y < 0.0))) ? r + y : r; }

/* ---- comparisons (any number type) ---- */
#define AF_CMP(T) \
  static inline b8 af_lt_##T(T x, T y) { return x < y; } \
  static inline b8 af_le_##T(T x, T y) { return x <= y; } \
  static inline b8 af_gt_##T(T x, T y) { return x > y; } \
  static inline b8 af_ge_##T(T x, T y) { return x >= y; } \
  static inline b8 af_eq_##T(T x, T y) { return x == y; } \
  static inline b8 af_ne_##T(T x, T y) { return x != y; }
AF_CMP(f32) AF_CMP(f64) AF_CMP(i32) AF_CMP(u32)

/* ---- integers: wrapping arithmetic through unsigned, faults on a zero divisor ---- */
#define AF_INT(T, U, SIGNED) \
  static inline T af_neg_##T(T x) { return (T)(0u - (U)x); } \
  static inline T af_abs_##T(T x) { return (SIGNED && x < 0) ? (T)(0u - (U)x) : x; } \
  static inline T af_sign_##T(T x) { return x > 0 ? (T)1 : ((SIGNED && x < 0) ? (T)(0u - 1u) : (T)0); } \
  static inline T af_not_##T(T x) { return (T)~(U)x; } \
  static inline T af_add_##T(T x, T y) { return (T)((U)x + (U)y); } \
  static inline T af_sub_##T(T x, T y) { return (T)((U)x - (U)y); } \
  static inline T af_mul_##T(T x, T y) { return (T)((U)x * (U)y); } \
  static inline T af_and_##T(T x, T y) { return x & y; } \
  static inline T af_or_##T(T x, T y) { return x | y; } \
  static inline T af_xor_##T(T x, T y) { return x ^ y; } \
  static inline T af_min_##T(T x, T y) { return y < x ? y : x; } \
  static inline T af_max_##T(T x, T y) { return y > x ? y : x; } \
  static inline T af_div_##T(T x, T y, u32 *bad) { if (y == 0) { *bad = 1; return 0; } if (SIGNED && y == (T)(0u - 1u)) return (T)(0u - (U)x); return x / y; } \
  static inline T af_rem_##T(T x, T y, u32 *bad) { if (y == 0) { *bad = 1; return 0; } if (SIGNED && y == (T)(0u - 1u)) return 0; return x % y; } \
  static inline T af_mod_##T(T x, T y, u32 *bad) { T r = af_rem_##T(x, y, bad); return (r != 0 && ((r < 0) != (y < 0))) ? (T)((U)r + (U)y) : r; }
AF_INT(i32, uint32_t, 1)
AF_INT(u32, uint32_t, 0)

/* ---- bool ---- */
static inline b8 af_not_b8(b8 x) { return !x; }
static inline b8 af_and_b8(b8 x, b8 y) { return x & y; }
static inline b8 af_or_b8(b8 x, b8 y) { return x | y; }
static inline b8 af_xor_b8(b8 x, b8 y) { return x ^ y; }
static inline b8 af_nand_b8(b8 x, b8 y) { return !(x & y); }
static inline b8 af_nor_b8(b8 x, b8 y) { return !(x | y); }
static inline b8 af_eq_b8(b8 x, b8 y) { return x == y; }
static inline b8 af_ne_b8(b8 x, b8 y) { return x != y; }

/* ---- casts with Rust `as` semantics (float to int saturates, NaN to 0) ---- */
static inline i32 af_f2i32(f64 x) { return isnan(x) ? 0 : (x <= -2147483648.0 ? INT32_MIN : (x >= 2147483647.0 ? INT32_MAX : (i32)x)); }
static inline u32 af_f2u32(f64 x) { return isnan(x) ? 0u : (x <= 0.0 ? 0u : (x >= 4294967295.0 ? UINT32_MAX : (u32)x)); }
#define AF_CAST_FROM_FLOAT(F) \
  static inline f32 af_cast_##F##_f32(F x) { return (f32)x; } \
  static inline f64 af_cast_##F##_f64(F x) { return (f64)x; } \
  static inline i32 af_cast_##F##_i32(F x) { return af_f2i32((f64)x); } \
  static inline u32 af_cast_##F##_u32(F x) { return af_f2u32((f64)x); } \
  static inline b8 af_cast_##F##_b8(F x) { return x != 0; }
AF_CAST_FROM_FLOAT(f32) AF_CAST_FROM_FLOAT(f64)
#define AF_CAST_FROM_INT(I) \
  static inline f32 af_cast_##I##_f32(I x) { return (f32)x; } \
  static inline f64 af_cast_##I##_f64(I x) { return (f64)x; } \
  static inline i32 af_cast_##I##_i32(I x) { return (i32)x; } \
  static inline u32 af_cast_##I##_u32(I x) { return (u32)x; } \
  static inline b8 af_cast_##I##_b8(I x) { return x != 0; }
AF_CAST_FROM_INT(i32) AF_CAST_FROM_INT(u32) AF_CAST_FROM_INT(b8)

/* ---- complex numbers: one definition for both widths (C the complex type, F its component
 * type, S the C library's suffix for F: f or nothing). The formulas are primitives/complex.rs's
 * (schoolbook products, unfused; Smith's division; hypot for the modulus; the principal branches
 * of ln and sqrt), through the same C library functions Rust's f32/f64 methods call, so both CPU
 * tiers agree bit for bit. Complex to real keeps the real part; real to complex has im = +0. ---- */
typedef struct { f32 re, im; } c64;
typedef struct { f64 re, im; } c128;
#define AF_COMPLEX(C, F, S) \
  static inline C af_mk_##C(F re, F im) { C z; z.re = re; z.im = im; return z; } \
  static inline C af_neg_##C(C z) { return af_mk_##C(-z.re, -z.im); } \
  static inline C af_conj_##C(C z) { return af_mk_##C(z.re, -z.im); } \
  static inline F af_re_##C(C z) { return z.re; } \
  static inline F af_im_##C(C z) { return z.im; } \
  static inline F af_abs_##C(C z) { return hypot##S(z.re, z.im); } \
  static inline F af_arg_##C(C z) { return atan2##S(z.im, z.re); } \
  static inline C af_add_##C(C a, C b) { return af_mk_##C(a.re + b.re, a.im + b.im); } \
  static inline C af_sub_##C(C a, C b) { return af_mk_##C(a.re - b.re, a.im - b.im); } \
  static inline C af_mul_##C(C a, C b) { return af_mk_##C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); } \
  static inline C af_div_##C(C a, C b) { \
    if (fabs##S(b.re) >= fabs##S(b.im)) { F r = b.im / b.re, d = b.re + b.im * r; return af_mk_##C((a.re + a.im * r) / d, (a.im - a.re * r) / d); } \
    F r = b.re / b.im, d = b.re * r + b.im; return af_mk_##C((a.re * r + a.im) / d, (a.im * r - a.re) / d); } \
  static inline b8 af_eq_##C(C a, C b) { return a.re == b.re && a.im == b.im; } \
  static inline b8 af_ne_##C(C a, C b) { return a.re != b.re || a.im != b.im; } \
  static inline C af_exp_##C(C z) { F m = exp##S(z.re); if (z.im == 0) return af_mk_##C(m, z.im); return af_mk_##C(m * cos##S(z.im), m * sin##S(z.im)); } \
  static inline C af_ln_##C(C z) { return af_mk_##C(log##S(hypot##S(z.re, z.im)), atan2##S(z.im, z.re)); } \
  static inline C af_sqrt_##C(C z) { \
    if (z.re == 0 && z.im == 0) return af_mk_##C(0, z.im); \
    if (isinf(z.im)) return af_mk_##C((F)INFINITY, z.im); \
    F h = (F)0.5, t = sqrt##S(h * fabs##S(z.re) + h * hypot##S(z.re, z.im)); \
    return z.re >= 0 ? af_mk_##C(t, h * z.im / t) : af_mk_##C(h * fabs##S(z.im) / t, copysign##S(t, z.im)); } \
  static inline C af_complex_##F(F re, F im) { return af_mk_##C(re, im); } \
  static inline C af_cast_f32_##C(f32 x) { return af_mk_##C((F)x, 0); } \
  static inline C af_cast_f64_##C(f64 x) { return af_mk_##C((F)x, 0); } \
  static inline C af_cast_i32_##C(i32 x) { return af_mk_##C((F)x, 0); } \
  static inline C af_cast_u32_##C(u32 x) { return af_mk_##C((F)x, 0); } \
  static inline C af_cast_b8_##C(b8 x) { return af_mk_##C((F)x, 0); } \
  static inline f32 af_cast_##C##_f32(C z) { return af_cast_##F##_f32(z.re); } \
  static inline f64 af_cast_##C##_f64(C z) { return af_cast_##F##_f64(z.re); } \
  static inline i32 af_cast_##C##_i32(C z) { return af_cast_##F##_i32(z.re); } \
  static inline u32 af_cast_##C##_u32(C z) { return af_cast_##F##_u32(z.re); } \
  static inline b8 af_cast_##C##_b8(C z) { return af_cast_##F##_b8(z.re); }
AF_COMPLEX(c64, f32, f) AF_COMPLEX(c128, f64, )
static inline c64 af_cast_c64_c64(c64 z) { return z; }
static inline c128 af_cast_c128_c128(c128 z) { return z; }
static inline c128 af_cast_c64_c128(c64 z) { return af_mk_c128((f64)z.re, (f64)z.im); }
static inline c64 af_cast_c128_c64(c128 z) { return af_mk_c64((f32)z.re, (f32)z.im); }

/* ---- Philox4x32-10 stream (primitives/cpu.rs: words_per_value, stream_words) ---- */
static inline void af_philox(uint64_t block, u32 k0, u32 k1, u32 out[4]) {
  u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = 0, c3 = 0;
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n1 = (u32)p1, n2 = (u32)(p0 >> 32) ^ c3 ^ k1, n3 = (u32)p0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
/* The w words of stream element g. */
static inline void af_stream(u32 k0, u32 k1, uint64_t g, int w, u32 r[4]) {
  uint64_t per = 4 / w; u32 b[4];
  af_philox(g / per, k0, k1, b);
  int first = (int)(g % per) * w;
  for (int k = 0; k < w; k++) r[k] = b[first + k];
}
static inline f32 af_uniform_f32(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 1, r); return (f32)(r[0] >> 8) * (1.0f / 16777216.0f); }
/* ((hi << 32 | lo) >> 11) / 2^53 as an exact sum of its high 32 and low 21 bits (vectorises). */
static inline f64 af_u53(u32 hi, u32 lo) { return (f64)hi * (1.0 / 4294967296.0) + (f64)(lo >> 11) * (1.0 / 9007199254740992.0); }
static inline f64 af_uniform_f64(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 2, r); return af_u53(r[0], r[1]); }
/* The generators' ln and cos (primitives/cpu.rs: rng_ln, rng_cos, the same operations in the
 * same order, so both CPU tiers produce the same bits): fdlibm's log, and cos for 0 <= x <= 2 pi. */
static inline f64 af_rng_ln(f64 x) {
  union { f64 f; uint64_t u; } v; v.f = x;
  uint64_t bits = v.u;
  u32 hx = (u32)(bits >> 32) + (0x3ff00000u - 0x3fe6a09eu);
  int k = (int)(hx >> 20) - 0x3ff;
  hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
  v.u = ((uint64_t)hx << 32) | (bits & 0xffffffffu);
  f64 f = v.f - 1.0;
  f64 hfsq = 0.5 * f * f;
  f64 s = f / (2.0 + f);
  f64 z = s * s;
  f64 w = z * z;
  f64 t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  f64 t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  f64 r = t2 + t1;
  f64 dk = (f64)k;
  return ((((s * (hfsq + r)) + dk * 1.90821492927058770002e-10) - hfsq) + f) + dk * 6.93147180369123816490e-01;
}
static inline f64 af_rng_cos(f64 x) {
  int n = (int)(x * 6.36619772367581382433e-01 + 0.5);
  f64 fnk = (f64)n;
  f64 t = x - fnk * 1.57079632673412561417e+00;
  f64 a = fnk * 6.07710050630396597660e-11;
  f64 r = t - a;
  f64 bb = r - t;
  f64 e = (t - (r - bb)) + (-a - bb);
  f64 lo = (e - fnk * 2.02226624871116645580e-21) - fnk * 8.47842766036889956997e-32;
  f64 y0 = r + lo;
  f64 y1 = (r - y0) + lo;
  f64 z = y0 * y0;
  f64 ww = z * z;
  f64 rc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * 2.48015872894767294178e-05)) + (ww * ww) * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11));
  f64 hz = 0.5 * z;
  f64 one_hz = 1.0 - hz;
  f64 c = one_hz + (((1.0 - one_hz) - hz) + (z * rc - y0 * y1));
  f64 vv = z * y0;
  f64 rs = (8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * 2.75573137070700676789e-06)) + (z * ww) * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10);
  f64 sn = y0 - ((z * (0.5 * y1 - vv * rs) - y1) - vv * -1.66666666666666324348e-01);
  /* The quadrant's choice and sign by bit masks, not branches, so loops over lanes vectorise
   * (the same values as `(n & 1) == 0 ? c : sn` and `((n + 1) & 2) != 0 ? -m : m`). */
  union { f64 f; uint64_t u; } vc, vs;
  vc.f = c; vs.f = sn;
  uint64_t pick = (uint64_t)0 - (uint64_t)(n & 1);
  vc.u = (vc.u & ~pick) | (vs.u & pick);
  vc.u ^= (uint64_t)(((n + 1) >> 1) & 1) << 63;
  return vc.f;
}
/* Values from their words (primitives/cpu.rs: uniform_f32, uniform_f64, normal_f32, normal_f64). */
static inline f32 af_w_uniform_f32(const u32 *r) { return (f32)(r[0] >> 8) * (1.0f / 16777216.0f); }
static inline f64 af_w_uniform_f64(const u32 *r) { return af_u53(r[0], r[1]); }
static inline f32 af_w_normal_f32(const u32 *r) {
  f32 u1 = ((f32)(r[0] >> 8) + 1.0f) * (1.0f / 16777216.0f), u2 = (f32)(r[1] >> 8) * (1.0f / 16777216.0f);
  f32 l = (f32)af_rng_ln((f64)u1);
  f32 c = (f32)af_rng_cos((f64)(6.28318530717958647692f * u2));
  return sqrtf(-2.0f * l) * c;
}
static inline f64 af_w_normal_f64(const u32 *r) {
  f64 u1 = 1.0 - af_u53(r[0], r[1]), u2 = af_u53(r[2], r[3]);
  return sqrt(-2.0 * af_rng_ln(u1)) * af_rng_cos(6.283185307179586476925 * u2);
}
static inline f32 af_normal_f32(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 2, r); return af_w_normal_f32(r); }
static inline f64 af_normal_f64(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 4, r); return af_w_normal_f64(r); }

/* Eight consecutive Philox blocks at once, as four lanes of words (primitives/cpu.rs: philox_x8). */
static inline void af_philox_x8(uint64_t first, u32 k0, u32 k1, u32 c0[8], u32 c1[8], u32 c2[8], u32 c3[8]) {
  for (int l = 0; l < 8; l++) { uint64_t b = first + (uint64_t)l; c0[l] = (u32)b; c1[l] = (u32)(b >> 32); c2[l] = 0; c3[l] = 0; }
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    for (int l = 0; l < 8; l++) {
      uint64_t p0 = (uint64_t)0xD2511F53u * c0[l], p1 = (uint64_t)0xCD9E8D57u * c2[l];
      u32 n0 = (u32)(p1 >> 32) ^ c1[l] ^ k0, n1 = (u32)p1, n2 = (u32)(p0 >> 32) ^ c3[l] ^ k1, n3 = (u32)p0;
      c0[l] = n0; c1[l] = n1; c2[l] = n2; c3[l] = n3;
    }
  }
}
/* out[i] = value of stream element g0 + i for i < m (primitives/cpu.rs: random_run): element by
 * element up to a block boundary, then eight blocks at a time, then element by element. */
#define AF_FILL(dist, T, W) \
  static void af_fill_##dist##_##T(u32 k0, u32 k1, uint64_t g0, T *out, uint64_t m) { \
    const uint64_t per = 4 / W; uint64_t i = 0; u32 r[4]; \
    while (i < m && (g0 + i) % per != 0) { af_stream(k0, k1, g0 + i, W, r); out[i] = af_w_##dist##_##T(r); i++; } \
    while (i + 8 * per <= m) { \
      u32 c[4][8]; af_philox_x8((g0 + i) / per, k0, k1, c[0], c[1], c[2], c[3]); \
      for (uint64_t v = 0; v < per; v++) { \
        T vals[8]; /* one value per lane, in a loop over lanes the compiler vectorises */ \
        const u32 *w0 = c[(v * W) % 4], *w1 = c[(v * W + 1) % 4], *w2 = c[(v * W + 2) % 4], *w3 = c[(v * W + 3) % 4]; \
        for (int b = 0; b < 8; b++) { \
          u32 w[4] = { w0[b], w1[b], w2[b], w3[b] }; \
          vals[b] = af_w_##dist##_##T(w); } \
        for (int b = 0; b < 8; b++) out[i + b * per + v] = vals[b]; } \
      i += 8 * per; } \
    while (i < m) { af_stream(k0, k1, g0 + i, W, r); out[i] = af_w_##dist##_##T(r); i++; } \
  }
AF_FILL(uniform, f32, 1) AF_FILL(uniform, f64, 2) AF_FILL(normal, f32, 2) AF_FILL(normal, f64, 4)
/* More distributions (primitives/cpu.rs: exponential_f32, exponential_f64, integer_u32). */
static inline f32 af_w_exponential_f32(const u32 *r) {
  f32 u1 = ((f32)(r[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);
  return (f32)(0.0 - af_rng_ln((f64)u1));
}
static inline f64 af_w_exponential_f64(const u32 *r) { return 0.0 - af_rng_ln(1.0 - af_u53(r[0], r[1])); }
/* Lemire's multiply-shift; range 0 stands for 2^32 (the word itself). */
static inline uint64_t af_int_mul(u32 range) { return range ? (uint64_t)range : (uint64_t)1 << 32; }
static inline u32 af_w_integers_u32(const u32 *r, uint64_t m) { return (u32)(((uint64_t)r[0] * m) >> 32); }
static inline f32 af_exponential_f32(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 1, r); return af_w_exponential_f32(r); }
static inline f64 af_exponential_f64(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_stream(k0, k1, g, 2, r); return af_w_exponential_f64(r); }
static inline u32 af_integers_u32(u32 k0, u32 k1, uint64_t g, u32 range) { u32 r[4]; af_stream(k0, k1, g, 1, r); return af_w_integers_u32(r, af_int_mul(range)); }
AF_FILL(exponential, f32, 1) AF_FILL(exponential, f64, 2)
static void af_fill_integers_u32(u32 k0, u32 k1, uint64_t g0, u32 *out, uint64_t m, u32 range) {
  const uint64_t mul = af_int_mul(range); uint64_t i = 0; u32 r[4];
  while (i < m && (g0 + i) % 4 != 0) { af_stream(k0, k1, g0 + i, 1, r); out[i] = af_w_integers_u32(r, mul); i++; }
  while (i + 32 <= m) {
    u32 c[4][8]; af_philox_x8((g0 + i) / 4, k0, k1, c[0], c[1], c[2], c[3]);
    for (int v = 0; v < 4; v++) for (int b = 0; b < 8; b++) out[i + b * 4 + v] = (u32)(((uint64_t)c[v][b] * mul) >> 32);
    i += 32; }
  while (i < m) { af_stream(k0, k1, g0 + i, 1, r); out[i] = af_w_integers_u32(r, mul); i++; }
}

/* ---- Hash32: two keyed rounds of Wellons' lowbias32 over a 32-bit word counter (primitives/cpu.rs:
 * hash32, random_words, hash_run_w): element g of a draw of w words per value takes words g * w + j. */
static inline u32 af_lowbias32(u32 x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; return x ^ (x >> 16);
}
static inline u32 af_hash32(u32 k0, u32 k1, u32 c) { return af_lowbias32(af_lowbias32(c + k0) ^ k1); }
static inline void af_hstream(u32 k0, u32 k1, uint64_t g, int w, u32 r[4]) {
  u32 c = (u32)g * (u32)w;
  for (int k = 0; k < w; k++) r[k] = af_hash32(k0, k1, c + (u32)k);
}
#define AF_HONE(dist, T, W) \
  static inline T af_h_##dist##_##T(u32 k0, u32 k1, uint64_t g) { u32 r[4]; af_hstream(k0, k1, g, W, r); return af_w_##dist##_##T(r); }
AF_HONE(uniform, f32, 1) AF_HONE(uniform, f64, 2) AF_HONE(normal, f32, 2) AF_HONE(normal, f64, 4)
AF_HONE(exponential, f32, 1) AF_HONE(exponential, f64, 2)
static inline u32 af_h_integers_u32(u32 k0, u32 k1, uint64_t g, u32 range) { return (u32)(((uint64_t)af_hash32(k0, k1, (u32)g) * af_int_mul(range)) >> 32); }
/* out[i] = value of element g0 + i for i < m, eight elements at a time as lanes (loops over lanes
 * the compiler vectorises), then the rest one by one. */
#define AF_HFILL(dist, T, W) \
  static void af_fill_h_##dist##_##T(u32 k0, u32 k1, uint64_t g0, T *out, uint64_t m) { \
    u32 c0 = (u32)g0 * (u32)W; uint64_t i = 0; \
    for (; i + 8 <= m; i += 8, c0 += 8u * W) { \
      u32 w[W][8]; T vals[8]; \
      for (int j = 0; j < W; j++) for (int l = 0; l < 8; l++) w[j][l] = af_hash32(k0, k1, c0 + (u32)(l * W + j)); \
      for (int l = 0; l < 8; l++) { u32 r[4] = { w[0][l], w[(1 % W)][l], w[(2 % W)][l], w[(3 % W)][l] }; vals[l] = af_w_##dist##_##T(r); } \
      for (int l = 0; l < 8; l++) out[i + l] = vals[l]; } \
    for (; i < m; i++) out[i] = af_h_##dist##_##T(k0, k1, g0 + i); \
  }
AF_HFILL(uniform, f32, 1) AF_HFILL(uniform, f64, 2) AF_HFILL(normal, f32, 2) AF_HFILL(normal, f64, 4)
AF_HFILL(exponential, f32, 1) AF_HFILL(exponential, f64, 2)
static void af_fill_h_integers_u32(u32 k0, u32 k1, uint64_t g0, u32 *out, uint64_t m, u32 range) {
  const uint64_t mul = af_int_mul(range); u32 c0 = (u32)g0;
  for (uint64_t i = 0; i < m; i++) out[i] = (u32)(((uint64_t)af_hash32(k0, k1, c0 + (u32)i) * mul) >> 32);
}
