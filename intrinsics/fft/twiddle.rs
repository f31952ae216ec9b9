//! The FFT kernels' twiddle functions: one per denominator `n` a plan uses,
//! `af_tw{n}(e) = exp(-2 pi i e / n)` for `e < n < 2^30`, in OpenCL C or WGSL. The angle
//! `(pi / 2)(q + r / n)` is reduced from the exact integers `4e = q n + r` with `n` a literal
//! (a shift and a mask for powers of two, a division by a constant otherwise: no runtime
//! division), folded to `[0, pi / 4]`, and its sine and cosine are polynomials (f32; about an
//! ulp on every device) or the builtins (f64). The line passes call it once per butterfly and
//! take the other powers by products (`kernel.rs`).

use super::kernel::Dialect;
use std::fmt::Write;

/// The coefficients of the polynomials of `sin a` and `cos a` on `[0, pi / 4]` (Taylor terms,
/// the first omitted one below half an f32 ulp there): `(sin: a^1, a^3, ..), (cos: a^0, a^2, ..)`.
pub fn twiddle_poly() -> (Vec<f64>, Vec<f64>) {
    let mut s = Vec::new();
    let mut c = Vec::new();
    let mut fact = 1.0f64;
    for k in 0..12usize {
        if k > 0 {
            fact *= k as f64;
        }
        let sign = if (k / 2) % 2 == 0 { 1.0 } else { -1.0 };
        if k % 2 == 0 {
            c.push(sign / fact);
        } else {
            s.push(sign / fact);
        }
    }
    (s, c)
}

/// `a0 + a2 * (c1 + a2 * (c2 + ..))` in Horner form over `a2`, the coefficients as literals.
pub fn horner(d: &Dialect, coef: &[f64], a2: &str) -> String {
    let mut e = d.f(*coef.last().expect("coefficients"));
    for &c in coef.iter().rev().skip(1) {
        e = format!("{} + {a2} * ({e})", d.f(c));
    }
    e
}

/// The definitions of `af_tw{n}` for every `n` the bodies called for (`Dialect::tw`).
pub fn functions(d: &Dialect) -> String {
    let sizes = d.tw_sizes();
    let mut s = String::new();
    for n in sizes {
        s.push_str(&function(d, n));
    }
    s
}

fn function(d: &Dialect, n: usize) -> String {
    assert!(n < 1 << 30, "a twiddle denominator over 2^30");
    let pow2 = n.is_power_of_two();
    let (qe, re) = if pow2 {
        (
            format!("e4 >> {}u", n.trailing_zeros()),
            format!("e4 & {}u", n - 1),
        )
    } else {
        (format!("e4 / {n}u"), format!("e4 - q * {n}u"))
    };
    let scale = d.f(std::f64::consts::FRAC_PI_2 / n as f64);
    let mut s = String::new();
    if d.wgsl {
        let (ps, pc) = twiddle_poly();
        let _ = write!(
            s,
            "fn af_tw{n}(e: u32) -> vec2<f32> {{
  let e4 = 4u * e;
  let q = {qe};
  var r = {re};
  let flip = 2u * r > {n}u;
  if (flip) {{ r = {n}u - r; }}
  let a = f32(r) * {scale};
  let a2 = a * a;
  let s = a * ({ss});
  let c = {cs};
  let cs = select(c, s, flip);
  let sn = select(s, c, flip);
  var w = vec2<f32>(sn, -cs);
  if (q == 0u) {{ w = vec2<f32>(cs, sn); }} else if (q == 1u) {{ w = vec2<f32>(-sn, cs); }} else if (q == 2u) {{ w = vec2<f32>(-cs, -sn); }}
  return vec2<f32>(w.x, -w.y);
}}
",
            ss = horner(d, &ps, "a2"),
            cs = horner(d, &pc, "a2"),
        );
    } else {
        let sc = if d.f64 {
            "  const T s = sin(a);\n  const T c = cos(a);\n".to_string()
        } else {
            let (ps, pc) = twiddle_poly();
            format!(
                "  const T a2 = a * a;\n  const T s = a * ({});\n  const T c = {};\n",
                horner(d, &ps, "a2"),
                horner(d, &pc, "a2")
            )
        };
        let _ = write!(
            s,
            "static inline T2 af_tw{n}(uint e) {{
  const uint e4 = 4u * e;
  const uint q = {qe};
  uint r = {re};
  const int flip = 2u * r > {n}u;
  if (flip) r = {n}u - r;
  const T a = (T)r * {scale};
{sc}  const T cs = flip ? s : c;
  const T sn = flip ? c : s;
  T2 w;
  if (q == 0u) w = (T2)(cs, sn);
  else if (q == 1u) w = (T2)(-sn, cs);
  else if (q == 2u) w = (T2)(-cs, -sn);
  else w = (T2)(sn, -cs);
  return (T2)(w.x, -w.y);
}}
"
        );
    }
    s
}
