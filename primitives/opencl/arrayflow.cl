/* arrayflow primitive library, OpenCL C target (GPU executors through OpenCL).
 * The same functions as primitives/c/arrayflow.h, named af_<op>_<type>, with the same semantics:
 * integers wrap, integer division by zero reports a fault through `bad`, float min/max propagate
 * NaN, mod is floored, casts saturate like Rust's `as`, Philox4x32-10 streams are bit-identical.
 * Types: f32 float, f64 double, i32 int, u32 uint, bool uchar (0 or 1); 64-bit values are ulong.
 * Everything f64 sits under AF_FP64, which the renderer defines (with cl_khr_fp64 enabled) only
 * for devices that compute f64; nothing outside that section uses double.
 * Complex values (primitives/complex.rs): c64 is float2 and c128 double2 (.x the real part, .y the
 * imaginary part), so a buffer of them is interleaved, real part first, as num-complex stores it.
 * Each complex section is written once, for a component type F, by AF_COMPLEX below and expanded
 * for (c64, f32) and, under AF_FP64, (c128, f64). */

typedef float f32; typedef int i32; typedef uint u32; typedef uchar b8;

/* ---- kernel parameters: 64 raw bits per slot (proggen::kernel::ParamKind) ---- */
static inline f32 af_bits_f32(ulong b) { return as_float((uint)b); }
static inline i32 af_bits_i32(ulong b) { return as_int((uint)b); }
static inline u32 af_bits_u32(ulong b) { return (uint)b; }
static inline b8 af_bits_b8(ulong b) { return b != 0; }

/* ---- f32: unary ---- */
static inline f32 af_neg_f32(f32 x) { return -x; }
static inline f32 af_abs_f32(f32 x) { return fabs(x); }
static inline f32 af_sign_f32(f32 x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
static inline f32 af_sqrt_f32(f32 x) { return sqrt(x); }
static inline f32 af_rsqrt_f32(f32 x) { return 1.0f / sqrt(x); }
static inline f32 af_cbrt_f32(f32 x) { return cbrt(x); }
static inline f32 af_exp_f32(f32 x) { return exp(x); }
static inline f32 af_exp2_f32(f32 x) { return exp2(x); }
static inline f32 af_ln_f32(f32 x) { return log(x); }
static inline f32 af_log10_f32(f32 x) { return log10(x); }
static inline f32 af_log2_f32(f32 x) { return log2(x); }
static inline f32 af_sin_f32(f32 x) { return sin(x); }
static inline f32 af_cos_f32(f32 x) { return cos(x); }
static inline f32 af_tan_f32(f32 x) { return tan(x); }
static inline f32 af_sec_f32(f32 x) { return 1.0f / cos(x); }
static inline f32 af_csc_f32(f32 x) { return 1.0f / sin(x); }
static inline f32 af_cot_f32(f32 x) { return 1.0f / tan(x); }
static inline f32 af_asin_f32(f32 x) { return asin(x); }
static inline f32 af_acos_f32(f32 x) { return acos(x); }
static inline f32 af_atan_f32(f32 x) { return atan(x); }
static inline f32 af_acsc_f32(f32 x) { f32 a = fabs(x); return copysign(a < 2.0f ? atan(1.0f / sqrt((a - 1.0f) * (a + 1.0f))) : asin(1.0f / a), x); }
static inline f32 af_acot_f32(f32 x) { return atan(1.0f / x); }
static inline f32 af_sinh_f32(f32 x) { return sinh(x); }
static inline f32 af_cosh_f32(f32 x) { return cosh(x); }
static inline f32 af_tanh_f32(f32 x) { return tanh(x); }
/* 2 e^-|x| past 88 (f32) or 709 (f64), where 1 / cosh gives 0 instead of a subnormal value
 * (primitives/cpu.rs sech_accurate, csch_accurate). */
static inline f32 af_sech_f32(f32 x) { f32 a = fabs(x); return a > 88.0f ? 2.0f * exp(-a) : 1.0f / cosh(x); }
static inline f32 af_csch_f32(f32 x) { f32 a = fabs(x); return a > 88.0f ? copysign(2.0f * exp(-a), x) : 1.0f / sinh(x); }
static inline f32 af_coth_f32(f32 x) { return 1.0f / tanh(x); }
static inline f32 af_erf_f32(f32 x) { return erf(x); }
static inline f32 af_erfc_f32(f32 x) { return erfc(x); }
static inline f32 af_floor_f32(f32 x) { return floor(x); }
static inline f32 af_ceil_f32(f32 x) { return ceil(x); }
static inline f32 af_trunc_f32(f32 x) { return trunc(x); }
static inline f32 af_round_f32(f32 x) { return round(x); }
static inline f32 af_asinh_f32(f32 x) { f32 ax = fabs(x), ix = 1.0f / ax; return copysign(ax > 4096.0f ? log(ax) + 0.693147180559945309f : log1p(ax + ax / (hypot(1.0f, ix) + ix)), x); }
static inline f32 af_atanh_f32(f32 x) { f32 t = fabs(x); return copysign(t < 0.5f ? 0.5f * log1p(2.0f * t + 2.0f * t * t / (1.0f - t)) : 0.5f * log1p((2.0f * t) / (1.0f - t)), x); }
static inline f32 af_acosh_f32(f32 x) { if (x < 1.0f) return (f32)NAN; if (x < 2.0f) { f32 t = x - 1.0f; return log1p(t + sqrt(t * (t + 2.0f))); } return x > 4096.0f ? log(x) + 0.693147180559945309f : log(x + sqrt(x - 1.0f) * sqrt(x + 1.0f)); }
static inline f32 af_asec_f32(f32 x) { f32 r = atan(sqrt((x - 1.0f) * (x + 1.0f))); return x < 0.0f ? M_PI_F - r : r; }
static inline b8 af_is_nan_f32(f32 x) { return isnan(x) != 0; }
static inline b8 af_is_inf_f32(f32 x) { return isinf(x) != 0; }
/* ---- f32: binary ---- */
static inline f32 af_add_f32(f32 x, f32 y) { return x + y; }
static inline f32 af_sub_f32(f32 x, f32 y) { return x - y; }
static inline f32 af_mul_f32(f32 x, f32 y) { return x * y; }
static inline f32 af_div_f32(f32 x, f32 y) { return x / y; }
static inline f32 af_rem_f32(f32 x, f32 y) { return fmod(x, y); }
static inline f32 af_pow_f32(f32 x, f32 y) { return pow(x, y); }
static inline f32 af_atan2_f32(f32 x, f32 y) { return atan2(x, y); }
static inline f32 af_min_f32(f32 x, f32 y) { return (isnan(x) || isnan(y)) ? (f32)NAN : (y < x ? y : x); }
static inline f32 af_max_f32(f32 x, f32 y) { return (isnan(x) || isnan(y)) ? (f32)NAN : (y > x ? y : x); }
static inline f32 af_mod_f32(f32 x, f32 y) { f32 r = fmod(x, y); return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r; }
/* ---- f32: comparisons ---- */
static inline b8 af_lt_f32(f32 x, f32 y) { return x < y; }
static inline b8 af_le_f32(f32 x, f32 y) { return x <= y; }
static inline b8 af_gt_f32(f32 x, f32 y) { return x > y; }
static inline b8 af_ge_f32(f32 x, f32 y) { return x >= y; }
static inline b8 af_eq_f32(f32 x, f32 y) { return x == y; }
static inline b8 af_ne_f32(f32 x, f32 y) { return x != y; }

/* ---- integers: comparisons ---- */
static inline b8 af_lt_i32(i32 x, i32 y) { return x < y; }
static inline b8 af_le_i32(i32 x, i32 y) { return x <= y; }
static inline b8 af_gt_i32(i32 x, i32 y) { return x > y; }
static inline b8 af_ge_i32(i32 x, i32 y) { return x >= y; }
static inline b8 af_eq_i32(i32 x, i32 y) { return x == y; }
static inline b8 af_ne_i32(i32 x, i32 y) { return x != y; }
static inline b8 af_lt_u32(u32 x, u32 y) { return x < y; }
static inline b8 af_le_u32(u32 x, u32 y) { return x <= y; }
static inline b8 af_gt_u32(u32 x, u32 y) { return x > y; }
static inline b8 af_ge_u32(u32 x, u32 y) { return x >= y; }
static inline b8 af_eq_u32(u32 x, u32 y) { return x == y; }
static inline b8 af_ne_u32(u32 x, u32 y) { return x != y; }

/* ---- integers: wrapping arithmetic through uint, faults on a zero divisor ---- */
static inline i32 af_neg_i32(i32 x) { return as_int(0u - as_uint(x)); }
static inline i32 af_abs_i32(i32 x) { return x < 0 ? as_int(0u - as_uint(x)) : x; }
static inline i32 af_sign_i32(i32 x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
static inline i32 af_not_i32(i32 x) { return ~x; }
static inline i32 af_add_i32(i32 x, i32 y) { return as_int(as_uint(x) + as_uint(y)); }
static inline i32 af_sub_i32(i32 x, i32 y) { return as_int(as_uint(x) - as_uint(y)); }
static inline i32 af_mul_i32(i32 x, i32 y) { return as_int(as_uint(x) * as_uint(y)); }
static inline i32 af_and_i32(i32 x, i32 y) { return x & y; }
static inline i32 af_or_i32(i32 x, i32 y) { return x | y; }
static inline i32 af_xor_i32(i32 x, i32 y) { return x ^ y; }
static inline i32 af_min_i32(i32 x, i32 y) { return y < x ? y : x; }
static inline i32 af_max_i32(i32 x, i32 y) { return y > x ? y : x; }
static inline i32 af_div_i32(i32 x, i32 y, __private u32 *bad) { if (y == 0) { *bad = 1; return 0; } if (y == -1) return as_int(0u - as_uint(x)); return x / y; }
static inline i32 af_rem_i32(i32 x, i32 y, __private u32 *bad) { if (y == 0) { *bad = 1; return 0; } if (y == -1) return 0; return x % y; }
static inline i32 af_mod_i32(i32 x, i32 y, __private u32 *bad) { i32 r = af_rem_i32(x, y, bad); return (r != 0 && ((r < 0) != (y < 0))) ? as_int(as_uint(r) + as_uint(y)) : r; }

static inline u32 af_neg_u32(u32 x) { return 0u - x; }
static inline u32 af_abs_u32(u32 x) { return x; }
static inline u32 af_sign_u32(u32 x) { return x > 0u ? 1u : 0u; }
static inline u32 af_not_u32(u32 x) { return ~x; }
static inline u32 af_add_u32(u32 x, u32 y) { return x + y; }
static inline u32 af_sub_u32(u32 x, u32 y) { return x - y; }
static inline u32 af_mul_u32(u32 x, u32 y) { return x * y; }
static inline u32 af_and_u32(u32 x, u32 y) { return x & y; }
static inline u32 af_or_u32(u32 x, u32 y) { return x | y; }
static inline u32 af_xor_u32(u32 x, u32 y) { return x ^ y; }
static inline u32 af_min_u32(u32 x, u32 y) { return y < x ? y : x; }
static inline u32 af_max_u32(u32 x, u32 y) { return y > x ? y : x; }
static inline u32 af_div_u32(u32 x, u32 y, __private u32 *bad) { if (y == 0u) { *bad = 1; return 0u; } return x / y; }
static inline u32 af_rem_u32(u32 x, u32 y, __private u32 *bad) { if (y == 0u) { *bad = 1; return 0u; } return x % y; }
static inline u32 af_mod_u32(u32 x, u32 y, __private u32 *bad) { return af_rem_u32(x, y, bad); }

/* ---- bool ---- */
static inline b8 af_not_b8(b8 x) { return x == 0; }
static inline b8 af_and_b8(b8 x, b8 y) { return x & y; }
static inline b8 af_or_b8(b8 x, b8 y) { return x | y; }
static inline b8 af_xor_b8(b8 x, b8 y) { return x ^ y; }
static inline b8 af_nand_b8(b8 x, b8 y) { return (x & y) == 0; }
static inline b8 af_nor_b8(b8 x, b8 y) { return (x | y) == 0; }
static inline b8 af_eq_b8(b8 x, b8 y) { return x == y; }
static inline b8 af_ne_b8(b8 x, b8 y) { return x != y; }

/* ---- casts with Rust `as` semantics (float to int saturates, NaN to 0), computed in float ---- */
static inline f32 af_cast_f32_f32(f32 x) { return x; }
static inline i32 af_cast_f32_i32(f32 x) { return isnan(x) ? 0 : (x <= -2147483648.0f ? INT_MIN : (x >= 2147483648.0f ? INT_MAX : (i32)x)); }
static inline u32 af_cast_f32_u32(f32 x) { return isnan(x) ? 0u : (x <= 0.0f ? 0u : (x >= 4294967296.0f ? UINT_MAX : (u32)x)); }
static inline b8 af_cast_f32_b8(f32 x) { return x != 0.0f; }
static inline f32 af_cast_i32_f32(i32 x) { return (f32)x; }
static inline i32 af_cast_i32_i32(i32 x) { return x; }
static inline u32 af_cast_i32_u32(i32 x) { return as_uint(x); }
static inline b8 af_cast_i32_b8(i32 x) { return x != 0; }
static inline f32 af_cast_u32_f32(u32 x) { return (f32)x; }
static inline i32 af_cast_u32_i32(u32 x) { return as_int(x); }
static inline u32 af_cast_u32_u32(u32 x) { return x; }
static inline b8 af_cast_u32_b8(u32 x) { return x != 0u; }
static inline f32 af_cast_b8_f32(b8 x) { return (f32)x; }
static inline i32 af_cast_b8_i32(b8 x) { return (i32)x; }
static inline u32 af_cast_b8_u32(b8 x) { return (u32)x; }
static inline b8 af_cast_b8_b8(b8 x) { return x != 0; }

/* ---- argmax/argmin partials (value, index within the reduced extent): whether (yv, yi) replaces
 * (xv, xi). The first NaN wins, then the better value, ties to the smaller index (src/exec/cpu/reduce.rs). */
static inline bool af_argmax_takes_f32(f32 xv, u32 xi, f32 yv, u32 yi) { if (isnan(xv) || isnan(yv)) return isnan(yv) && (!isnan(xv) || yi < xi); return yv > xv || (yv == xv && yi < xi); }
static inline bool af_argmin_takes_f32(f32 xv, u32 xi, f32 yv, u32 yi) { if (isnan(xv) || isnan(yv)) return isnan(yv) && (!isnan(xv) || yi < xi); return yv < xv || (yv == xv && yi < xi); }
static inline bool af_argmax_takes_i32(i32 xv, u32 xi, i32 yv, u32 yi) { return yv > xv || (yv == xv && yi < xi); }
static inline bool af_argmin_takes_i32(i32 xv, u32 xi, i32 yv, u32 yi) { return yv < xv || (yv == xv && yi < xi); }
static inline bool af_argmax_takes_u32(u32 xv, u32 xi, u32 yv, u32 yi) { return yv > xv || (yv == xv && yi < xi); }
static inline bool af_argmin_takes_u32(u32 xv, u32 xi, u32 yv, u32 yi) { return yv < xv || (yv == xv && yi < xi); }

/* ---- index folds (roll, pad): IndexMap::Folded, n >= 2; `_near` for -n <= v < 2n ---- */
static inline long af_fold_mod(long v, long p) { long m = v % p; return m < 0 ? m + p : m; }
static inline long af_fold_wrap(long v, long n) { return af_fold_mod(v, n); }
static inline long af_fold_wrap_near(long v, long n) { return v < 0 ? v + n : (v >= n ? v - n : v); }
static inline long af_fold_clamp(long v, long n) { return v < 0 ? 0 : (v >= n ? n - 1 : v); }
static inline long af_fold_reflect(long v, long n) { long m = af_fold_mod(v, 2 * (n - 1)); return m >= n ? 2 * (n - 1) - m : m; }
static inline long af_fold_reflect_near(long v, long n) { return v < 0 ? -v : (v >= n ? 2 * (n - 1) - v : v); }
static inline long af_fold_symmetric(long v, long n) { long m = af_fold_mod(v, 2 * n); return m >= n ? 2 * n - 1 - m : m; }
static inline long af_fold_symmetric_near(long v, long n) { return v < 0 ? -v - 1 : (v >= n ? 2 * n - 1 - v : v); }

/* ---- generators: an index (iota, identity) as an element, saturating like Rust `as` ---- */
static inline f32 af_index_f32(ulong v) { return (f32)v; }
static inline i32 af_index_i32(ulong v) { return v > (ulong)INT_MAX ? INT_MAX : (i32)v; }
static inline u32 af_index_u32(ulong v) { return v > (ulong)UINT_MAX ? UINT_MAX : (u32)v; }
static inline b8 af_index_b8(ulong v) { return v != 0; }

/* ---- Philox4x32-10 stream (primitives/cpu.rs: words_per_value, stream_words) ---- */
static inline uint4 af_philox(ulong block, u32 k0, u32 k1) {
  u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = 0u, c3 = 0u;
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    u32 h0 = mul_hi(0xD2511F53u, c0), l0 = 0xD2511F53u * c0;
    u32 h1 = mul_hi(0xCD9E8D57u, c2), l1 = 0xCD9E8D57u * c2;
    c0 = h1 ^ c1 ^ k0; c1 = l1; c2 = h0 ^ c3 ^ k1; c3 = l0;
  }
  return (uint4)(c0, c1, c2, c3);
}
/* Stream element g taking one word: word g % 4 of block g / 4. */
static inline u32 af_word1(u32 k0, u32 k1, ulong g) {
  uint4 b = af_philox(g >> 2, k0, k1);
  u32 i = (u32)(g & 3);
  return i == 0u ? b.x : (i == 1u ? b.y : (i == 2u ? b.z : b.w));
}
/* Stream element g taking two words: words 2 * (g % 2) .. of block g / 2. */
static inline uint2 af_word2(u32 k0, u32 k1, ulong g) {
  uint4 b = af_philox(g >> 1, k0, k1);
  return (g & 1) ? b.zw : b.xy;
}
static inline f32 af_uniform_f32(u32 k0, u32 k1, ulong g) { return (f32)(af_word1(k0, k1, g) >> 8) * (1.0f / 16777216.0f); }
static inline f32 af_normal_f32(u32 k0, u32 k1, ulong g) {
  uint2 r = af_word2(k0, k1, g);
  f32 u1 = ((f32)(r.x >> 8) + 1.0f) * (1.0f / 16777216.0f), u2 = (f32)(r.y >> 8) * (1.0f / 16777216.0f);
  return sqrt(-2.0f * log(u1)) * cos(6.28318530717958647692f * u2);
}
/* More distributions (primitives/cpu.rs: exponential_f32, integer_u32; range 0 stands for 2^32). */
static inline f32 af_w_exponential_f32(u32 w) {
  f32 u1 = ((f32)(w >> 8) + 1.0f) * (1.0f / 16777216.0f);
  return 0.0f - log(u1);
}
static inline u32 af_w_integers_u32(u32 w, u32 range) { return range == 0u ? w : mul_hi(w, range); }
static inline f32 af_exponential_f32(u32 k0, u32 k1, ulong g) { return af_w_exponential_f32(af_word1(k0, k1, g)); }
static inline u32 af_integers_u32(u32 k0, u32 k1, ulong g, u32 range) { return af_w_integers_u32(af_word1(k0, k1, g), range); }
/* ---- Hash32 (primitives/cpu.rs: hash32, random_words): element g of w words per value takes
 * words g * w + j of two keyed rounds of Wellons' lowbias32 over a 32-bit counter. ---- */
static inline u32 af_lowbias32(u32 x) { x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; return x ^ (x >> 16); }
static inline u32 af_hash32(u32 k0, u32 k1, u32 c) { return af_lowbias32(af_lowbias32(c + k0) ^ k1); }
static inline f32 af_h_uniform_f32(u32 k0, u32 k1, ulong g) { return (f32)(af_hash32(k0, k1, (u32)g) >> 8) * (1.0f / 16777216.0f); }
static inline f32 af_h_normal_f32(u32 k0, u32 k1, ulong g) {
  u32 c = (u32)g * 2u, w0 = af_hash32(k0, k1, c), w1 = af_hash32(k0, k1, c + 1u);
  f32 u1 = ((f32)(w0 >> 8) + 1.0f) * (1.0f / 16777216.0f), u2 = (f32)(w1 >> 8) * (1.0f / 16777216.0f);
  return sqrt(-2.0f * log(u1)) * cos(6.28318530717958647692f * u2);
}
static inline f32 af_h_exponential_f32(u32 k0, u32 k1, ulong g) { return af_w_exponential_f32(af_hash32(k0, k1, (u32)g)); }
static inline u32 af_h_integers_u32(u32 k0, u32 k1, ulong g, u32 range) { return af_w_integers_u32(af_hash32(k0, k1, (u32)g), range); }

/* ---- complex numbers: one definition for both widths (C the complex type, F its component
 * type, V its OpenCL vector type, Z a zero of F). The formulas are primitives/complex.rs's:
 * schoolbook products (FP_CONTRACT is off), Smith's division, hypot for the modulus, the principal
 * branches of ln and sqrt. Complex to real keeps the real part; real to complex has im = +0. ---- */
#define AF_COMPLEX(C, F, V, Z) \
static inline C af_neg_##C(C z) { return -z; } \
static inline C af_conj_##C(C z) { return (V)(z.x, -z.y); } \
static inline F af_re_##C(C z) { return z.x; } \
static inline F af_im_##C(C z) { return z.y; } \
static inline F af_abs_##C(C z) { return hypot(z.x, z.y); } \
static inline F af_arg_##C(C z) { return atan2(z.y, z.x); } \
static inline C af_add_##C(C a, C b) { return a + b; } \
static inline C af_sub_##C(C a, C b) { return a - b; } \
static inline C af_mul_##C(C a, C b) { return (V)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); } \
static inline C af_div_##C(C a, C b) { \
  if (fabs(b.x) >= fabs(b.y)) { F r = b.y / b.x, d = b.x + b.y * r; return (V)((a.x + a.y * r) / d, (a.y - a.x * r) / d); } \
  F r = b.x / b.y, d = b.x * r + b.y; return (V)((a.x * r + a.y) / d, (a.y * r - a.x) / d); } \
static inline b8 af_eq_##C(C a, C b) { return a.x == b.x && a.y == b.y; } \
static inline b8 af_ne_##C(C a, C b) { return a.x != b.x || a.y != b.y; } \
static inline C af_exp_##C(C z) { F m = af_exp_##F(z.x); if (z.y == Z) return (V)(m, z.y); return (V)(m * cos(z.y), m * sin(z.y)); } \
static inline C af_ln_##C(C z) { return (V)(log(hypot(z.x, z.y)), atan2(z.y, z.x)); } \
static inline C af_sqrt_##C(C z) { \
  if (z.x == Z && z.y == Z) return (V)(Z, z.y); \
  if (isinf(z.y)) return (V)((F)INFINITY, z.y); \
  F h = (F)0.5, t = sqrt(h * fabs(z.x) + h * hypot(z.x, z.y)); \
  return z.x >= Z ? (V)(t, h * z.y / t) : (V)(h * fabs(z.y) / t, copysign(t, z.y)); } \
static inline C af_complex_##F(F re, F im) { return (V)(re, im); } \
static inline C af_cast_##C##_##C(C z) { return z; } \
static inline C af_cast_##F##_##C(F x) { return (V)(x, Z); } \
static inline C af_cast_i32_##C(i32 x) { return (V)(af_cast_i32_##F(x), Z); } \
static inline C af_cast_u32_##C(u32 x) { return (V)(af_cast_u32_##F(x), Z); } \
static inline C af_cast_b8_##C(b8 x) { return (V)(af_cast_b8_##F(x), Z); } \
static inline F af_cast_##C##_##F(C z) { return z.x; } \
static inline i32 af_cast_##C##_i32(C z) { return af_cast_##F##_i32(z.x); } \
static inline u32 af_cast_##C##_u32(C z) { return af_cast_##F##_u32(z.x); } \
static inline b8 af_cast_##C##_b8(C z) { return af_cast_##F##_b8(z.x); } \
static inline C af_index_##C(ulong v) { return (V)(af_index_##F(v), Z); }
typedef float2 c64;
AF_COMPLEX(c64, f32, float2, 0.0f)

#ifdef AF_FP64
/* ======== f64: only on devices with cl_khr_fp64 ======== */
typedef double f64;
static inline f64 af_bits_f64(ulong b) { return as_double(b); }
/* ---- f64: unary ---- */
static inline f64 af_neg_f64(f64 x) { return -x; }
static inline f64 af_abs_f64(f64 x) { return fabs(x); }
static inline f64 af_sign_f64(f64 x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x); }
static inline f64 af_sqrt_f64(f64 x) { return sqrt(x); }
static inline f64 af_rsqrt_f64(f64 x) { return 1.0 / sqrt(x); }
static inline f64 af_cbrt_f64(f64 x) { return cbrt(x); }
/* e^x, e^|x| / 2 past 709 as e^(x - c) times a constant, where c = 0.693359375 has so few bits
 * that x - c is exact (the WGSL library's af_exp_half): PoCL's exp, sinh and cosh gave inf or
 * NaN for finite results just below the overflow edge (709.78, 710.47). */
static inline f64 af_exp_f64(f64 x) { return x > 709.0 ? exp(x - 0.693359375) * 2.0004244339097745 : exp(x); }
static inline f64 af_exp_half_f64(f64 a) { return exp(a - 0.693359375) * 1.0002122169548873; }
static inline f64 af_exp2_f64(f64 x) { return exp2(x); }
static inline f64 af_ln_f64(f64 x) { return log(x); }
static inline f64 af_log10_f64(f64 x) { return log10(x); }
static inline f64 af_log2_f64(f64 x) { return log2(x); }
static inline f64 af_sin_f64(f64 x) { return sin(x); }
static inline f64 af_cos_f64(f64 x) { return cos(x); }
static inline f64 af_tan_f64(f64 x) { return tan(x); }
static inline f64 af_sec_f64(f64 x) { return 1.0 / cos(x); }
static inline f64 af_csc_f64(f64 x) { return 1.0 / sin(x); }
static inline f64 af_cot_f64(f64 x) { return 1.0 / tan(x); }
static inline f64 af_asin_f64(f64 x) { return asin(x); }
static inline f64 af_acos_f64(f64 x) { return acos(x); }
static inline f64 af_atan_f64(f64 x) { return atan(x); }
static inline f64 af_acsc_f64(f64 x) { f64 a = fabs(x); return copysign(a < 2.0 ? atan(1.0 / sqrt((a - 1.0) * (a + 1.0))) : asin(1.0 / a), x); }
static inline f64 af_acot_f64(f64 x) { return atan(1.0 / x); }
static inline f64 af_sinh_f64(f64 x) { return fabs(x) > 709.0 ? copysign(af_exp_half_f64(fabs(x)), x) : sinh(x); }
static inline f64 af_cosh_f64(f64 x) { return fabs(x) > 709.0 ? af_exp_half_f64(fabs(x)) : cosh(x); }
static inline f64 af_tanh_f64(f64 x) { return tanh(x); }
static inline f64 af_sech_f64(f64 x) { f64 a = fabs(x); return a > 709.0 ? 2.0 * exp(-a) : 1.0 / cosh(x); }
static inline f64 af_csch_f64(f64 x) { f64 a = fabs(x); return a > 709.0 ? copysign(2.0 * exp(-a), x) : 1.0 / sinh(x); }
static inline f64 af_coth_f64(f64 x) { return 1.0 / tanh(x); }
static inline f64 af_erf_f64(f64 x) { return erf(x); }
static inline f64 af_erfc_f64(f64 x) { return erfc(x); }
static inline f64 af_floor_f64(f64 x) { return floor(x); }
static inline f64 af_ceil_f64(f64 x) { return ceil(x); }
static inline f64 af_trunc_f64(f64 x) { return trunc(x); }
static inline f64 af_round_f64(f64 x) { return round(x); }
static inline f64 af_asinh_f64(f64 x) { f64 ax = fabs(x), ix = 1.0 / ax; return copysign(ax > 67108864.0 ? log(ax) + 0.693147180559945309 : log1p(ax + ax / (hypot(1.0, ix) + ix)), x); }
static inline f64 af_atanh_f64(f64 x) { f64 t = fabs(x); return copysign(t < 0.5 ? 0.5 * log1p(2.0 * t + 2.0 * t * t / (1.0 - t)) : 0.5 * log1p((2.0 * t) / (1.0 - t)), x); }
static inline f64 af_acosh_f64(f64 x) { if (x < 1.0) return (f64)NAN; if (x < 2.0) { f64 t = x - 1.0; return log1p(t + sqrt(t * (t + 2.0))); } return x > 67108864.0 ? log(x) + 0.693147180559945309 : log(x + sqrt(x - 1.0) * sqrt(x + 1.0)); }
static inline f64 af_asec_f64(f64 x) { f64 r = atan(sqrt((x - 1.0) * (x + 1.0))); return x < 0.0 ? M_PI - r : r; }
static inline b8 af_is_nan_f64(f64 x) { return isnan(x) != 0; }
static inline b8 af_is_inf_f64(f64 x) { return isinf(x) != 0; }
/* ---- f64: binary ---- */
static inline f64 af_add_f64(f64 x, f64 y) { return x + y; }
static inline f64 af_sub_f64(f64 x, f64 y) { return x - y; }
static inline f64 af_mul_f64(f64 x, f64 y) { return x * y; }
static inline f64 af_div_f64(f64 x, f64 y) { return x / y; }
static inline f64 af_rem_f64(f64 x, f64 y) { return fmod(x, y); }
static inline f64 af_pow_f64(f64 x, f64 y) { return pow(x, y); }
static inline f64 af_atan2_f64(f64 x, f64 y) { return atan2(x, y); }
static inline f64 af_min_f64(f64 x, f64 y) { return (isnan(x) || isnan(y)) ? (f64)NAN : (y < x ? y : x); }
static inline f64 af_max_f64(f64 x, f64 y) { return (isnan(x) || isnan(y)) ? (f64)NAN : (y > x ? y : x); }
static inline f64 af_mod_f64(f64 x, f64 y) { f64 r = fmod(x, y); return (r != 0.0 && ((r < 0.0) != (y < 0.0))) ? r + y : r; }
/* ---- f64: comparisons ---- */
static inline b8 af_lt_f64(f64 x, f64 y) { return x < y; }
static inline b8 af_le_f64(f64 x, f64 y) { return x <= y; }
static inline b8 af_gt_f64(f64 x, f64 y) { return x > y; }
static inline b8 af_ge_f64(f64 x, f64 y) { return x >= y; }
static inline b8 af_eq_f64(f64 x, f64 y) { return x == y; }
static inline b8 af_ne_f64(f64 x, f64 y) { return x != y; }

/* ---- f64: casts ---- */
static inline f64 af_cast_f64_f64(f64 x) { return x; }
static inline f32 af_cast_f64_f32(f64 x) { return (f32)x; }
static inline i32 af_cast_f64_i32(f64 x) { return isnan(x) ? 0 : (x <= -2147483648.0 ? INT_MIN : (x >= 2147483647.0 ? INT_MAX : (i32)x)); }
static inline u32 af_cast_f64_u32(f64 x) { return isnan(x) ? 0u : (x <= 0.0 ? 0u : (x >= 4294967295.0 ? UINT_MAX : (u32)x)); }
static inline b8 af_cast_f64_b8(f64 x) { return x != 0.0; }
static inline f64 af_cast_f32_f64(f32 x) { return (f64)x; }
static inline f64 af_cast_i32_f64(i32 x) { return (f64)x; }
static inline f64 af_cast_u32_f64(u32 x) { return (f64)x; }
static inline f64 af_cast_b8_f64(b8 x) { return (f64)x; }
static inline f64 af_index_f64(ulong v) { return (f64)v; }

/* ---- f64: argmax/argmin partials ---- */
static inline bool af_argmax_takes_f64(f64 xv, u32 xi, f64 yv, u32 yi) { if (isnan(xv) || isnan(yv)) return isnan(yv) && (!isnan(xv) || yi < xi); return yv > xv || (yv == xv && yi < xi); }
static inline bool af_argmin_takes_f64(f64 xv, u32 xi, f64 yv, u32 yi) { if (isnan(xv) || isnan(yv)) return isnan(yv) && (!isnan(xv) || yi < xi); return yv < xv || (yv == xv && yi < xi); }

/* ---- f64: random numbers ---- */
static inline f64 af_u53(u32 hi, u32 lo) { return (f64)(((((ulong)hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0); }
static inline f64 af_uniform_f64(u32 k0, u32 k1, ulong g) { uint2 r = af_word2(k0, k1, g); return af_u53(r.x, r.y); }
static inline f64 af_normal_f64(u32 k0, u32 k1, ulong g) {
  uint4 r = af_philox(g, k0, k1);
  f64 u1 = 1.0 - af_u53(r.x, r.y), u2 = af_u53(r.z, r.w);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
static inline f64 af_exponential_f64(u32 k0, u32 k1, ulong g) { uint2 r = af_word2(k0, k1, g); return 0.0 - log(1.0 - af_u53(r.x, r.y)); }
static inline f64 af_h_uniform_f64(u32 k0, u32 k1, ulong g) { u32 c = (u32)g * 2u; return af_u53(af_hash32(k0, k1, c), af_hash32(k0, k1, c + 1u)); }
static inline f64 af_h_exponential_f64(u32 k0, u32 k1, ulong g) { return 0.0 - log(1.0 - af_h_uniform_f64(k0, k1, g)); }
static inline f64 af_h_normal_f64(u32 k0, u32 k1, ulong g) {
  u32 c = (u32)g * 4u;
  f64 u1 = 1.0 - af_u53(af_hash32(k0, k1, c), af_hash32(k0, k1, c + 1u));
  f64 u2 = af_u53(af_hash32(k0, k1, c + 2u), af_hash32(k0, k1, c + 3u));
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

/* ---- c128 (complex f64) and the casts between the complex widths ---- */
typedef double2 c128;
AF_COMPLEX(c128, f64, double2, 0.0)
static inline c128 af_cast_c64_c128(c64 z) { return (double2)((f64)z.x, (f64)z.y); }
static inline c64 af_cast_c128_c64(c128 z) { return (float2)((f32)z.x, (f32)z.y); }
static inline c128 af_cast_f32_c128(f32 x) { return (double2)((f64)x, 0.0); }
static inline c64 af_cast_f64_c64(f64 x) { return (float2)((f32)x, 0.0f); }
static inline f32 af_cast_c128_f32(c128 z) { return (f32)z.x; }
static inline f64 af_cast_c64_f64(c64 z) { return (f64)z.x; }
#endif
