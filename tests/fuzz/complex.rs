//! Generator version 3's complex and spectral expressions (issue 22): one `let` builds complex
//! arrays from real variables (`complex`, a cast, `from_polar`), applies complex arithmetic
//! (`+ - * /` with arrays and complex scalars, `conj`, `-`, `exp`, `ln`, `sqrt`, `powi`), maybe
//! one operation that changes the shape (`sum`/`mean`/`prod`, `fft`/`ifft`, `convolve`/
//! `correlate`), and ends in a real array (`re`, `im`, `abs`, `arg`, or `irfft`), so the rest of
//! the fuzzer (variables, reads, the shrinker) sees only real values. `rfft` and real
//! convolutions start from real variables. This file holds the expression type, its printing as
//! Rust, its oracle (num-complex in f64: a direct DFT and direct convolution sums, each element
//! with an error bound by the rules below) and its run through the API.
//!
//! Error rules (`u` the result type's unit roundoff, `e` the bound on `|implementation -
//! oracle|` of a complex element, inputs' real bounds added part by part):
//!
//! | op | bound |
//! | --- | --- |
//! | `a ± b` | `ea + eb + 2u(|r| + ...)` |
//! | `a · b` | `|a| eb + |b| ea + ea eb + 6u (|a| + ea)(|b| + eb)` |
//! | `a / b` (`|b| > 2 eb`) | `(|b| ea + |a| eb) / (|b| (|b| - eb)) + 10u (|a| + ea) / (|b| - eb)` |
//! | `exp` | `|r| (e^ea - 1) + 140u |r|` |
//! | `ln` (`|z| > 2 ea`) | `ea / (|z| - ea) + 140u (|r| + 1)` |
//! | `sqrt` | `min(ea / (2 sqrt(|z| - ea)), sqrt(ea)) + 140u |r|` |
//! | `powi(n)` | `(|z| ± ea)^n - |z|^n` (the side that grows) `+ (30 + 5|n|) u |r|` |
//! | `ln`, `sqrt`, `arg` within `ea` of the branch cut (negative reals) | don't care |
//! | `Σ` over `n` | `Σ e + 2(n + 1) u Σ(|z| + e)`; `mean` divides, plus `6u |r|` |
//! | `Π` over `n` | `Π(|z| + e) - Π|z| + 6(n + 1) u Π(|z| + e)` |
//! | DFT of length `n`, scale `s` | `s (Σ e + 8 (log2 n + 2) u sqrt(n) ‖|x| + e‖₂) + 2u |r|` |
//! | convolution, `m` taps, padded length `L` | `Σ (|k| ex + |x| ek + ek ex) + 4(m + 1) u Σ(|k| + ek)(|x| + ex) + 16 (log2 L + 2) u sqrt(L) ‖x‖₂ ‖k‖₂` (direct or FFT) |
//!
//! plus the oracle's own rounding (`tol::ORACLE_U` times the values' sizes).

use super::oracle::{OArr, R};
use super::program::{Names, Ty};
use super::tol::{DC, FN_UNITS, ORACLE_U, unit};
use arrayflow::Complex;

type C = Complex<f64>;

/// Element-wise functions of one complex array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CUn {
    Neg,
    Conj,
    Exp,
    Ln,
    Sqrt,
    Powi(i32),
}

/// `+ - * /`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CBin {
    Add,
    Sub,
    Mul,
    Div,
}

impl CBin {
    fn sym(self) -> &'static str {
        match self {
            CBin::Add => "+",
            CBin::Sub => "-",
            CBin::Mul => "*",
            CBin::Div => "/",
        }
    }
}

/// Reductions of complex arrays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CRed {
    Sum,
    Mean,
    Prod,
}

/// A convolution's options: SciPy's mode (0 full, 1 same, 2 valid), correlation instead of
/// convolution, and the method (0 auto, 1 direct, 2 FFT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvOpts {
    pub mode: u8,
    pub corr: bool,
    pub method: u8,
}

/// A complex-valued expression over real variables (all of the `let`'s type).
#[derive(Clone, Debug, PartialEq)]
pub enum Cz {
    /// `re.complex(&im)` (same shapes).
    Join {
        re: usize,
        im: usize,
    },
    /// `a.cast::<Complex<_>>()`.
    Cast {
        a: usize,
    },
    /// `Array::from_polar(&r, &t)`.
    Polar {
        r: usize,
        t: usize,
    },
    Un {
        op: CUn,
        a: Box<Cz>,
    },
    /// `a op b` (same shapes).
    Bin {
        op: CBin,
        a: Box<Cz>,
        b: Box<Cz>,
    },
    /// `a op Complex::new(re, im)`.
    Scalar {
        op: CBin,
        a: Box<Cz>,
        re: f64,
        im: f64,
    },
    /// Along `axis`, or the whole array (`None`).
    Red {
        op: CRed,
        a: Box<Cz>,
        axis: Option<usize>,
    },
    /// `fft::fft` / `fft::ifft` with `n`, `axis`, norm (0 backward, 1 ortho, 2 forward).
    Fft {
        a: Box<Cz>,
        n: Option<usize>,
        axis: usize,
        inverse: bool,
        norm: u8,
    },
    /// `fft::rfft` of a real variable.
    Rfft {
        x: usize,
        n: Option<usize>,
        axis: usize,
        norm: u8,
    },
    /// `signal::convolve` / `correlate` over the last axis with a 1-D filter.
    Conv {
        a: Box<Cz>,
        k: Box<Cz>,
        o: ConvOpts,
    },
}

/// The real part, imaginary part, modulus or argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Proj {
    Re,
    Im,
    Abs,
    Arg,
}

/// A `let` of version 3's kind: a real array computed through complex values.
#[derive(Clone, Debug, PartialEq)]
pub enum CxExpr {
    Proj {
        p: Proj,
        z: Cz,
    },
    /// `fft::irfft(&z, n, axis, norm)`.
    Irfft {
        z: Cz,
        n: Option<usize>,
        axis: usize,
        norm: u8,
    },
    /// A real convolution of real variables (`x` `[.., n]`, `k` `[m]`).
    RConv {
        x: usize,
        k: usize,
        o: ConvOpts,
    },
}

impl Cz {
    fn uses(&self, out: &mut Vec<usize>) {
        match self {
            Cz::Join { re, im } => out.extend([*re, *im]),
            Cz::Cast { a } => out.push(*a),
            Cz::Polar { r, t } => out.extend([*r, *t]),
            Cz::Rfft { x, .. } => out.push(*x),
            Cz::Un { a, .. } | Cz::Scalar { a, .. } | Cz::Red { a, .. } | Cz::Fft { a, .. } => {
                a.uses(out)
            }
            Cz::Bin { a, b, .. } | Cz::Conv { a, k: b, .. } => {
                a.uses(out);
                b.uses(out);
            }
        }
    }
}

impl CxExpr {
    /// The variables the expression reads.
    pub fn uses(&self) -> Vec<usize> {
        let mut out = vec![];
        match self {
            CxExpr::Proj { z, .. } | CxExpr::Irfft { z, .. } => z.uses(&mut out),
            CxExpr::RConv { x, k, .. } => out.extend([*x, *k]),
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Printing as Rust.

fn norm_src(norm: u8) -> &'static str {
    ["Norm::Backward", "Norm::Ortho", "Norm::Forward"][norm as usize]
}

fn conv_src(o: ConvOpts, x: &str, k: &str) -> String {
    format!(
        "signal::{}(&{x}, &{k}, {}, {})",
        if o.corr { "correlate" } else { "convolve" },
        ["Mode::Full", "Mode::Same", "Mode::Valid"][o.mode as usize],
        ["Method::Auto", "Method::Direct", "Method::Fft"][o.method as usize]
    )
}

fn cz_src(names: Names, ty: Ty, z: &Cz) -> String {
    let v = |id: &usize| names.var(*id);
    let t = ty.name();
    match z {
        Cz::Join { re, im } => format!("{}.complex::<Complex<{t}>>(&{})", v(re), v(im)),
        Cz::Cast { a } => format!("{}.cast::<Complex<{t}>>()", v(a)),
        Cz::Polar { r, t: th } => {
            format!("Array::<Complex<{t}>>::from_polar(&{}, &{})", v(r), v(th))
        }
        Cz::Un { op, a } => {
            let a = cz_src(names, ty, a);
            match op {
                CUn::Neg => format!("(-&{a})"),
                CUn::Conj => format!("{a}.conj()"),
                CUn::Exp => format!("{a}.exp()"),
                CUn::Ln => format!("{a}.ln()"),
                CUn::Sqrt => format!("{a}.sqrt()"),
                CUn::Powi(n) => format!("{a}.powi({n})"),
            }
        }
        Cz::Bin { op, a, b } => format!(
            "(&{} {} &{})",
            cz_src(names, ty, a),
            op.sym(),
            cz_src(names, ty, b)
        ),
        Cz::Scalar { op, a, re, im } => format!(
            "(&{} {} Complex::new({}, {}))",
            cz_src(names, ty, a),
            op.sym(),
            ty.lit(*re),
            ty.lit(*im)
        ),
        Cz::Red { op, a, axis } => {
            let name = match op {
                CRed::Sum => "sum",
                CRed::Mean => "mean",
                CRed::Prod => "prod",
            };
            match axis {
                Some(ax) => format!("{}.{name}_axis({ax})", cz_src(names, ty, a)),
                None => format!("{}.{name}()", cz_src(names, ty, a)),
            }
        }
        Cz::Fft {
            a,
            n,
            axis,
            inverse,
            norm,
        } => format!(
            "fft::{}(&{}, {n:?}, {axis}, {})",
            if *inverse { "ifft" } else { "fft" },
            cz_src(names, ty, a),
            norm_src(*norm)
        ),
        Cz::Rfft { x, n, axis, norm } => {
            format!("fft::rfft(&{}, {n:?}, {axis}, {})", v(x), norm_src(*norm))
        }
        Cz::Conv { a, k, o } => conv_src(*o, &cz_src(names, ty, a), &cz_src(names, ty, k)),
    }
}

/// The Rust expression for a version-3 `let` of type `ty`.
pub fn src(names: Names, ty: Ty, e: &CxExpr) -> String {
    match e {
        CxExpr::Proj { p, z } => {
            let m = match p {
                Proj::Re => "re",
                Proj::Im => "im",
                Proj::Abs => "abs",
                Proj::Arg => "arg",
            };
            format!("{}.{m}()", cz_src(names, ty, z))
        }
        CxExpr::Irfft { z, n, axis, norm } => format!(
            "fft::irfft(&{}, {n:?}, {axis}, {})",
            cz_src(names, ty, z),
            norm_src(*norm)
        ),
        CxExpr::RConv { x, k, o } => conv_src(*o, &names.var(*x), &names.var(*k)),
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle.

/// A complex array's ideal values and error bounds.
#[derive(Clone, Debug)]
pub struct CArr {
    pub shape: Vec<usize>,
    pub v: Vec<C>,
    pub e: Vec<f64>,
}

/// Most `lines * n * n` multiply-adds of one DFT or `lines * n * m` of a convolution the
/// oracle computes (the generator draws another expression past it).
const WORK: usize = 20_000_000;

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// The lines of `shape` along `axis`: `(pre, n, post)`; line `(p, q)` holds elements
/// `(p * n + j) * post + q`.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        numel(&shape[..axis]),
        shape[axis],
        numel(&shape[axis + 1..]),
    )
}

/// `prop + k u (|r| + prop) + 4 ORACLE_U |r|` (infinite stays infinite).
fn rnd(u: f64, prop: f64, k: f64, r: f64) -> f64 {
    if prop.is_infinite() {
        return DC;
    }
    prop + k * u * (r + prop) + 4.0 * ORACLE_U * r
}

fn real_in(a: &OArr) -> CArr {
    CArr {
        shape: a.shape.clone(),
        v: a.v.iter().map(|&x| C::new(x, 0.0)).collect(),
        e: a.e.clone(),
    }
}

/// Near the negative real axis within the error: the branch cut of `ln`, `sqrt` and `arg`.
fn near_cut(z: C, e: f64, u: f64) -> bool {
    z.re < 0.0 && z.im.abs() <= e + 8.0 * u * z.norm()
}

fn map1(a: &CArr, f: impl Fn(C, f64) -> R<(C, f64)>) -> R<CArr> {
    let mut out = CArr {
        shape: a.shape.clone(),
        v: Vec::with_capacity(a.v.len()),
        e: Vec::with_capacity(a.v.len()),
    };
    for (&z, &e) in a.v.iter().zip(&a.e) {
        let (r, er) = f(z, e)?;
        out.v.push(r);
        out.e.push(er);
    }
    Ok(out)
}

fn unary(op: CUn, a: &CArr, u: f64) -> R<CArr> {
    let fu = 2.0 * FN_UNITS + 8.0;
    map1(a, |z, e| {
        let m = z.norm();
        Ok(match op {
            CUn::Neg => (-z, e),
            CUn::Conj => (z.conj(), e),
            CUn::Exp => {
                if z.re > 60.0 {
                    return Err("exp overflows".into());
                }
                let r = z.exp();
                (r, rnd(u, r.norm() * e.exp_m1(), fu, r.norm()))
            }
            CUn::Ln | CUn::Sqrt if near_cut(z, e, u) => {
                let r = if op == CUn::Ln { z.ln() } else { z.sqrt() };
                (r, DC)
            }
            CUn::Ln => {
                if m <= 2.0 * e || m < 1e-20 {
                    return Err("ln near 0".into());
                }
                let r = z.ln();
                (r, rnd(u, e / (m - e), fu, r.norm() + 1.0))
            }
            CUn::Sqrt => {
                let r = z.sqrt();
                let d = if e == 0.0 {
                    0.0
                } else if m > e {
                    e / (2.0 * (m - e).sqrt())
                } else {
                    f64::INFINITY
                };
                (r, rnd(u, d.min(e.sqrt()), fu, r.norm()))
            }
            CUn::Powi(n) => {
                let k = n.unsigned_abs() as i32;
                let r = z.powi(n);
                let prop = if n >= 0 {
                    (m + e).powi(k) - m.powi(k)
                } else {
                    if m <= 2.0 * e || m < 1e-10 {
                        return Err("powi of a negative power near 0".into());
                    }
                    ((m + e).powi(k) - m.powi(k)) / (m.powi(k) * (m - e).powi(k))
                };
                (r, rnd(u, prop, 30.0 + 5.0 * k as f64, r.norm()))
            }
        })
    })
}

fn bin_elem(op: CBin, a: C, ea: f64, b: C, eb: f64, u: f64) -> R<(C, f64)> {
    let (ma, mb) = (a.norm(), b.norm());
    if ea.is_infinite() || eb.is_infinite() {
        // A don't-care operand (0 times its infinite bound would be NaN).
        let r = match op {
            CBin::Add => a + b,
            CBin::Sub => a - b,
            CBin::Mul => a * b,
            CBin::Div => a / b,
        };
        return Ok((r, DC));
    }
    Ok(match op {
        CBin::Add | CBin::Sub => {
            let r = if op == CBin::Add { a + b } else { a - b };
            (r, rnd(u, ea + eb, 2.0, r.norm()))
        }
        CBin::Mul => {
            let r = a * b;
            let prop = ma * eb + mb * ea + ea * eb;
            (
                r,
                prop + 6.0 * u * (ma + ea) * (mb + eb) + 4.0 * ORACLE_U * r.norm(),
            )
        }
        CBin::Div => {
            if mb <= 2.0 * eb || mb < 1e-20 {
                return Err("division near 0".into());
            }
            let r = a / b;
            let prop = (mb * ea + ma * eb) / (mb * (mb - eb));
            (
                r,
                prop + 10.0 * u * (ma + ea) / (mb - eb) + 4.0 * ORACLE_U * r.norm(),
            )
        }
    })
}

fn reduce(op: CRed, a: &CArr, axis: Option<usize>, u: f64) -> CArr {
    let (pre, n, post, shape) = match axis {
        Some(ax) => {
            let (p, n, q) = split(&a.shape, ax);
            let mut s = a.shape.clone();
            s.remove(ax);
            (p, n, q, s)
        }
        None => (1, a.v.len(), 1, vec![]),
    };
    let mut out = CArr {
        shape,
        v: vec![],
        e: vec![],
    };
    for p in 0..pre {
        for q in 0..post {
            let idx = |j: usize| (p * n + j) * post + q;
            let (v, e) = match op {
                CRed::Sum | CRed::Mean => {
                    let (mut s, mut se, mut sa) = (C::new(0.0, 0.0), 0.0, 0.0);
                    for j in 0..n {
                        s += a.v[idx(j)];
                        se += a.e[idx(j)];
                        sa += a.v[idx(j)].norm() + a.e[idx(j)];
                    }
                    let e = se + 2.0 * (n as f64 + 1.0) * u * sa + 4.0 * ORACLE_U * sa;
                    if op == CRed::Mean {
                        let r = s / n as f64;
                        (r, e / n as f64 + 6.0 * u * r.norm())
                    } else {
                        (s, e)
                    }
                }
                CRed::Prod => {
                    let (mut p, mut hi, mut lo) = (C::new(1.0, 0.0), 1.0, 1.0);
                    for j in 0..n {
                        p *= a.v[idx(j)];
                        hi *= a.v[idx(j)].norm() + a.e[idx(j)];
                        lo *= a.v[idx(j)].norm();
                    }
                    let dc = (0..n).any(|j| a.e[idx(j)].is_infinite());
                    let e = hi - lo + 6.0 * (n as f64 + 1.0) * (u + ORACLE_U) * hi;
                    (p, if dc { DC } else { e })
                }
            };
            out.v.push(v);
            out.e.push(e);
        }
    }
    out
}

fn norm_scale(norm: u8, n: usize, inverse: bool) -> f64 {
    match (norm, inverse) {
        (0, false) | (2, true) => 1.0,
        (1, _) => 1.0 / (n as f64).sqrt(),
        _ => 1.0 / n as f64,
    }
}

/// The rounding allowance of a transform of length `n` of a line with `‖|x| + e‖₂ = l2`.
fn dft_round(n: usize, l2: f64, u: f64) -> f64 {
    let lg = (n.max(2) as f64).log2();
    8.0 * (lg + 2.0) * u * (n as f64).sqrt() * l2 + 4.0 * ORACLE_U * n as f64 * l2
}

/// `Σ_j y_j exp(∓2πi jk/n)` of each line of `a` along `axis` (cropped or zero-padded to `n`),
/// scaled; the first `keep` outputs of each line.
fn dft(a: &CArr, n: usize, axis: usize, inverse: bool, norm: u8, keep: usize, u: f64) -> R<CArr> {
    let (pre, m, post) = split(&a.shape, axis);
    if n == 0 {
        return Err("fft of length 0".into());
    }
    if pre * post * n * n > WORK {
        return Err("transform too large for the oracle".into());
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let tw: Vec<C> = (0..n)
        .map(|t| C::from_polar(1.0, sign * 2.0 * std::f64::consts::PI * t as f64 / n as f64))
        .collect();
    let s = norm_scale(norm, n, inverse);
    let mut shape = a.shape.clone();
    shape[axis] = keep;
    let mut out = CArr {
        v: vec![C::new(0.0, 0.0); numel(&shape)],
        e: vec![0.0; numel(&shape)],
        shape,
    };
    let used = m.min(n);
    for p in 0..pre {
        for q in 0..post {
            let line: Vec<(C, f64)> = (0..used)
                .map(|j| {
                    let i = (p * m + j) * post + q;
                    (a.v[i], a.e[i])
                })
                .collect();
            let se: f64 = line.iter().map(|x| x.1).sum();
            if !se.is_finite() {
                return Err("transform of a don't-care value".into());
            }
            let l2 = line
                .iter()
                .map(|(z, e)| (z.norm() + e).powi(2))
                .sum::<f64>()
                .sqrt();
            let round = dft_round(n, l2, u);
            for k in 0..keep {
                let mut acc = C::new(0.0, 0.0);
                for (j, (z, _)) in line.iter().enumerate() {
                    acc += z * tw[(j * k) % n];
                }
                let r = acc * s;
                let o = (p * keep + k) * post + q;
                out.v[o] = r;
                out.e[o] = s * (se + round) + 2.0 * u * r.norm();
            }
        }
    }
    Ok(out)
}

/// NumPy's `irfft`: the Hermitian spectrum of each line's first `n / 2 + 1` coefficients
/// (the imaginary parts of coefficient 0, and of `n / 2` for even `n`, dropped), transformed
/// back to `n` real values.
fn irfft(a: &CArr, n: Option<usize>, axis: usize, norm: u8, u: f64) -> R<CArr> {
    let (pre, m, post) = split(&a.shape, axis);
    let n = n.unwrap_or(2 * m.saturating_sub(1));
    if n == 0 {
        return Err("irfft of length 0".into());
    }
    let h = n / 2 + 1;
    let mut full = CArr {
        shape: {
            let mut s = a.shape.clone();
            s[axis] = n;
            s
        },
        v: vec![],
        e: vec![],
    };
    full.v = vec![C::new(0.0, 0.0); pre * n * post];
    full.e = vec![0.0; pre * n * post];
    for p in 0..pre {
        for q in 0..post {
            let coef = |k: usize| -> (C, f64) {
                if k < m {
                    let i = (p * m + k) * post + q;
                    let mut z = a.v[i];
                    if k == 0 || (n.is_multiple_of(2) && k == n / 2) {
                        z.im = 0.0;
                    }
                    (z, a.e[i])
                } else {
                    (C::new(0.0, 0.0), 0.0)
                }
            };
            for k in 0..n {
                let (z, e) = if k < h {
                    coef(k)
                } else {
                    let (z, e) = coef(n - k);
                    (z.conj(), e)
                };
                let o = (p * n + k) * post + q;
                full.v[o] = z;
                full.e[o] = e;
            }
        }
    }
    dft(&full, n, axis, true, norm, n, u)
}

/// `y[i] = Σ_p k[p] x[i + off - p]` over the last axis (SciPy's modes), `k` one 1-D filter;
/// correlation convolves with `k` reversed and conjugated.
fn conv(x: &CArr, k: &CArr, o: ConvOpts, u: f64) -> R<CArr> {
    if x.shape.is_empty() || k.shape.len() != 1 {
        return Err("convolution shapes".into());
    }
    let n = *x.shape.last().unwrap();
    let m = k.shape[0];
    let lines = x.v.len() / n.max(1);
    if n == 0 || m == 0 || (o.mode == 2 && m > n) {
        return Err("convolution lengths".into());
    }
    if lines * (n + m) * m > WORK {
        return Err("convolution too large for the oracle".into());
    }
    let (kv, ke): (Vec<C>, Vec<f64>) = if o.corr {
        (
            k.v.iter().rev().map(|z| z.conj()).collect(),
            k.e.iter().rev().copied().collect(),
        )
    } else {
        (k.v.clone(), k.e.clone())
    };
    let (len, off) = match o.mode {
        0 => (n + m - 1, 0),
        1 => (n, (m - 1) / 2),
        _ => (n + 1 - m, m - 1),
    };
    let big_l = n + m - 1;
    let lg = (big_l.max(2) as f64).log2();
    let k2 = kv
        .iter()
        .zip(&ke)
        .map(|(z, e)| (z.norm() + e).powi(2))
        .sum::<f64>()
        .sqrt();
    let mut shape = x.shape.clone();
    *shape.last_mut().unwrap() = len;
    let mut out = CArr {
        v: Vec::with_capacity(lines * len),
        e: Vec::with_capacity(lines * len),
        shape,
    };
    for l in 0..lines {
        let xs = &x.v[l * n..(l + 1) * n];
        let xe = &x.e[l * n..(l + 1) * n];
        let x2 = xs
            .iter()
            .zip(xe)
            .map(|(z, e)| (z.norm() + e).powi(2))
            .sum::<f64>()
            .sqrt();
        let fft_round = 16.0 * (lg + 2.0) * u * (big_l as f64).sqrt() * x2 * k2;
        for i in 0..len {
            let t = i + off;
            let (mut acc, mut prop, mut mag) = (C::new(0.0, 0.0), 0.0, 0.0);
            for p in 0..m {
                if t < p || t - p >= n {
                    continue;
                }
                let (a, ea, b, eb) = (kv[p], ke[p], xs[t - p], xe[t - p]);
                acc += a * b;
                if ea.is_infinite() || eb.is_infinite() {
                    prop = DC;
                    continue;
                }
                prop += a.norm() * eb + b.norm() * ea + ea * eb;
                mag += (a.norm() + ea) * (b.norm() + eb);
            }
            out.v.push(acc);
            // An FFT convolution spreads a don't-care input over the whole line.
            let e = if x2.is_infinite() || k2.is_infinite() {
                DC
            } else {
                prop + 4.0 * (m as f64 + 1.0) * (u + ORACLE_U) * mag + fft_round
            };
            out.e.push(e);
        }
    }
    Ok(out)
}

fn same_shape(a: &CArr, b: &CArr) -> R<()> {
    if a.shape == b.shape {
        Ok(())
    } else {
        Err("complex operands of different shapes".into())
    }
}

fn zip2(
    a: &OArr,
    b: &OArr,
    f: impl Fn(f64, f64) -> C,
    e: impl Fn(&OArr, &OArr, usize) -> f64,
) -> R<CArr> {
    if a.shape != b.shape {
        return Err("real operands of different shapes".into());
    }
    Ok(CArr {
        shape: a.shape.clone(),
        v: a.v.iter().zip(&b.v).map(|(&x, &y)| f(x, y)).collect(),
        e: (0..a.v.len()).map(|i| e(a, b, i)).collect(),
    })
}

/// Largest modulus of a complex value inside an expression (an `f32` result past it could
/// overflow in the type, where the oracle's f64 does not; the final real value must also pass the
/// generator's own, smaller limit), and the smallest non-zero one (GPUs flush subnormals).
fn inner_limits(ty: Ty) -> (f64, f64) {
    match ty {
        Ty::F32 => (1e30, 1e-30),
        _ => (1e200, 1e-200),
    }
}

/// The oracle of a complex expression of type `ty` (`get` reads a real variable); `Err` when a
/// value leaves the type's range ([`inner_limits`]).
pub fn cz_eval(z: &Cz, ty: Ty, get: &dyn Fn(usize) -> R<OArr>) -> R<CArr> {
    let c = cz_node(z, ty, get)?;
    let (hi, lo) = inner_limits(ty);
    for z in &c.v {
        let m = z.norm();
        if !m.is_finite() || m > hi || (m != 0.0 && m < lo) {
            return Err("a complex value out of the type's range".into());
        }
    }
    Ok(c)
}

fn cz_node(z: &Cz, ty: Ty, get: &dyn Fn(usize) -> R<OArr>) -> R<CArr> {
    let u = unit(ty);
    let fu = 2.0 * FN_UNITS + 4.0;
    let rec = |z: &Cz| cz_eval(z, ty, get);
    Ok(match z {
        Cz::Join { re, im } => zip2(&get(*re)?, &get(*im)?, C::new, |a, b, i| a.e[i] + b.e[i])?,
        Cz::Cast { a } => real_in(&get(*a)?),
        Cz::Polar { r, t } => zip2(&get(*r)?, &get(*t)?, C::from_polar, |a, b, i| {
            if a.e[i].is_infinite() || b.e[i].is_infinite() {
                // A don't-care operand (its infinite bound times a zero one would be NaN).
                return DC;
            }
            let m = a.v[i].abs();
            rnd(u, a.e[i] + (m + a.e[i]) * b.e[i], fu, m)
        })?,
        Cz::Un { op, a } => unary(*op, &rec(a)?, u)?,
        Cz::Bin { op, a, b } => {
            let (a, b) = (rec(a)?, rec(b)?);
            same_shape(&a, &b)?;
            let mut out = CArr {
                shape: a.shape.clone(),
                v: vec![],
                e: vec![],
            };
            for i in 0..a.v.len() {
                let (r, e) = bin_elem(*op, a.v[i], a.e[i], b.v[i], b.e[i], u)?;
                out.v.push(r);
                out.e.push(e);
            }
            out
        }
        Cz::Scalar { op, a, re, im } => {
            let s = C::new(ty.round(*re), ty.round(*im));
            map1(&rec(a)?, |z, e| bin_elem(*op, z, e, s, 0.0, u))?
        }
        Cz::Red { op, a, axis } => {
            let a = rec(a)?;
            if axis.is_some_and(|ax| ax >= a.shape.len()) {
                return Err("axis out of range".into());
            }
            reduce(*op, &a, *axis, u)
        }
        Cz::Fft {
            a,
            n,
            axis,
            inverse,
            norm,
        } => {
            let a = rec(a)?;
            if *axis >= a.shape.len() {
                return Err("axis out of range".into());
            }
            let n = n.unwrap_or(a.shape[*axis]);
            dft(&a, n, *axis, *inverse, *norm, n, u)?
        }
        Cz::Rfft { x, n, axis, norm } => {
            let a = real_in(&get(*x)?);
            if *axis >= a.shape.len() {
                return Err("axis out of range".into());
            }
            let n = n.unwrap_or(a.shape[*axis]);
            dft(&a, n, *axis, false, *norm, n / 2 + 1, u)?
        }
        Cz::Conv { a, k, o } => conv(&rec(a)?, &rec(k)?, *o, u)?,
    })
}

/// The oracle of a version-3 `let` of type `ty`.
pub fn eval(e: &CxExpr, ty: Ty, get: &dyn Fn(usize) -> R<OArr>) -> R<OArr> {
    let u = unit(ty);
    let real = |c: CArr, f: &dyn Fn(C, f64) -> (f64, f64)| -> OArr {
        let (v, e) = c.v.iter().zip(&c.e).map(|(&z, &e)| f(z, e)).unzip();
        OArr {
            ty,
            shape: c.shape,
            v,
            e,
        }
    };
    Ok(match e {
        CxExpr::Proj { p, z } => {
            let c = cz_eval(z, ty, get)?;
            match p {
                Proj::Re => real(c, &|z, e| (z.re, e)),
                Proj::Im => real(c, &|z, e| (z.im, e)),
                Proj::Abs => real(c, &|z, e| (z.norm(), rnd(u, e, 4.0, z.norm()))),
                Proj::Arg => real(c, &|z, e| {
                    let m = z.norm();
                    let ok = !near_cut(z, e, u) && m > 2.0 * e && m > 1e-20;
                    let err = if ok {
                        rnd(u, e / (m - e), FN_UNITS + 4.0, std::f64::consts::PI)
                    } else {
                        DC
                    };
                    (z.arg(), err)
                }),
            }
        }
        CxExpr::Irfft { z, n, axis, norm } => {
            let c = cz_eval(z, ty, get)?;
            if *axis >= c.shape.len() {
                return Err("axis out of range".into());
            }
            real(irfft(&c, *n, *axis, *norm, u)?, &|z, e| (z.re, e))
        }
        CxExpr::RConv { x, k, o } => {
            let c = conv(&real_in(&get(*x)?), &real_in(&get(*k)?), *o, u)?;
            real(c, &|z, e| (z.re, e))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Running through the API.

pub mod run {
    use super::super::run::{Pick, V};
    use super::{CBin, CRed, CUn, ConvOpts, CxExpr, Cz, Proj};
    use arrayflow::fft::{self, Norm};
    use arrayflow::signal::{self, Method, Mode};
    use arrayflow::{Array, Complex};

    fn norm(n: u8) -> Norm {
        [Norm::Backward, Norm::Ortho, Norm::Forward][n as usize]
    }
    fn mode(o: ConvOpts) -> (Mode, Method) {
        (
            [Mode::Full, Mode::Same, Mode::Valid][o.mode as usize],
            [Method::Auto, Method::Direct, Method::Fft][o.method as usize],
        )
    }

    macro_rules! typed {
        ($m:ident, $f:ty) => {
            mod $m {
                use super::*;
                type F = $f;
                type Z = Complex<F>;

                fn conv<T: signal::Convolvable>(
                    x: &Array<T>,
                    k: &Array<T>,
                    o: ConvOpts,
                ) -> Array<T> {
                    let (md, me) = mode(o);
                    if o.corr {
                        signal::correlate(x, k, md, me)
                    } else {
                        signal::convolve(x, k, md, me)
                    }
                }

                fn cz(z: &Cz, get: &dyn Fn(usize) -> Array<F>) -> Array<Z> {
                    let rec = |z: &Cz| cz(z, get);
                    match z {
                        Cz::Join { re, im } => get(*re).complex::<Z>(&get(*im)),
                        Cz::Cast { a } => get(*a).cast::<Z>(),
                        Cz::Polar { r, t } => Array::<Z>::from_polar(&get(*r), &get(*t)),
                        Cz::Un { op, a } => {
                            let a = rec(a);
                            match op {
                                CUn::Neg => -&a,
                                CUn::Conj => a.conj(),
                                CUn::Exp => a.exp(),
                                CUn::Ln => a.ln(),
                                CUn::Sqrt => a.sqrt(),
                                CUn::Powi(n) => a.powi(*n),
                            }
                        }
                        Cz::Bin { op, a, b } => {
                            let (a, b) = (rec(a), rec(b));
                            match op {
                                CBin::Add => &a + &b,
                                CBin::Sub => &a - &b,
                                CBin::Mul => &a * &b,
                                CBin::Div => &a / &b,
                            }
                        }
                        Cz::Scalar { op, a, re, im } => {
                            let (a, s) = (rec(a), Z::new(*re as F, *im as F));
                            match op {
                                CBin::Add => &a + s,
                                CBin::Sub => &a - s,
                                CBin::Mul => &a * s,
                                CBin::Div => &a / s,
                            }
                        }
                        Cz::Red { op, a, axis } => {
                            let a = rec(a);
                            match (op, axis) {
                                (CRed::Sum, None) => a.sum(),
                                (CRed::Sum, Some(x)) => a.sum_axis(*x),
                                (CRed::Mean, None) => a.mean(),
                                (CRed::Mean, Some(x)) => a.mean_axis(*x),
                                (CRed::Prod, None) => a.prod(),
                                (CRed::Prod, Some(x)) => a.prod_axis(*x),
                            }
                        }
                        Cz::Fft {
                            a,
                            n,
                            axis,
                            inverse,
                            norm: nm,
                        } => {
                            let a = rec(a);
                            if *inverse {
                                fft::ifft(&a, *n, *axis, norm(*nm))
                            } else {
                                fft::fft(&a, *n, *axis, norm(*nm))
                            }
                        }
                        Cz::Rfft {
                            x,
                            n,
                            axis,
                            norm: nm,
                        } => fft::rfft(&get(*x), *n, *axis, norm(*nm)),
                        Cz::Conv { a, k, o } => conv(&rec(a), &rec(k), *o),
                    }
                }

                pub fn eval(e: &CxExpr, get: &dyn Fn(usize) -> Array<F>) -> Array<F> {
                    match e {
                        CxExpr::Proj { p, z } => {
                            let z = cz(z, get);
                            match p {
                                Proj::Re => z.re(),
                                Proj::Im => z.im(),
                                Proj::Abs => z.abs(),
                                Proj::Arg => z.arg(),
                            }
                        }
                        CxExpr::Irfft {
                            z,
                            n,
                            axis,
                            norm: nm,
                        } => fft::irfft(&cz(z, get), *n, *axis, norm(*nm)),
                        CxExpr::RConv { x, k, o } => conv(&get(*x), &get(*k), *o),
                    }
                }
            }
        };
    }
    typed!(single, f32);
    typed!(double, f64);

    /// Runs a version-3 `let` whose variables hold arrays of `f32` (`wide`: `f64`).
    pub fn eval<'a>(e: &CxExpr, wide: bool, var: &dyn Fn(usize) -> &'a V) -> V {
        if wide {
            V::F64(double::eval(e, &|id| <f64 as Pick>::pick(var(id)).clone()))
        } else {
            V::F32(single::eval(e, &|id| <f32 as Pick>::pick(var(id)).clone()))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generation.

use super::generator::{Ctx, Gen};
use super::program::Expr;
use rand::RngExt;

/// Transform lengths `n` the generator passes (`None`: the axis's own length): powers of two,
/// mixed radices and primes.
const FFT_NS: [Option<usize>; 16] = [
    None,
    None,
    None,
    Some(1),
    Some(2),
    Some(3),
    Some(5),
    Some(6),
    Some(7),
    Some(8),
    Some(12),
    Some(13),
    Some(16),
    Some(30),
    Some(31),
    Some(97),
];

impl Gen {
    /// A real variable of `ty` and `shape`: a live one or a new leaf.
    fn real_var(&mut self, cx: &mut Ctx, ty: Ty, shape: &[usize]) -> Option<usize> {
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| cx.ty(v) == ty && cx.arr(v).shape == shape)
            .collect();
        if !c.is_empty() && self.chance(0.5) {
            return Some(self.pick(&c));
        }
        self.leaf(cx, ty, shape.to_vec())
    }

    /// A shape of rank 1 or more for a complex expression: a live variable's or a new one.
    fn cx_shape(&mut self, cx: &Ctx, ty: Ty) -> Vec<usize> {
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| cx.ty(v) == ty && !cx.arr(v).shape.is_empty())
            .collect();
        if !c.is_empty() && self.chance(0.5) {
            let v = self.pick(&c);
            return cx.arr(v).shape.clone();
        }
        self.shape_r1()
    }

    /// A complex element-wise expression of `shape`, at most `depth` ops deep.
    fn cz_ew(&mut self, cx: &mut Ctx, ty: Ty, shape: &[usize], depth: u32) -> Option<Cz> {
        if depth == 0 || self.chance(0.35) {
            return Some(match self.rng.random_range(0..4) {
                0 | 1 => Cz::Join {
                    re: self.real_var(cx, ty, shape)?,
                    im: self.real_var(cx, ty, shape)?,
                },
                2 => Cz::Cast {
                    a: self.real_var(cx, ty, shape)?,
                },
                _ => Cz::Polar {
                    r: self.real_var(cx, ty, shape)?,
                    t: self.real_var(cx, ty, shape)?,
                },
            });
        }
        Some(match self.rng.random_range(0..10) {
            0..=3 => {
                let op = match self.rng.random_range(0..6) {
                    0 => CUn::Neg,
                    1 => CUn::Conj,
                    2 => CUn::Exp,
                    3 => CUn::Ln,
                    4 => CUn::Sqrt,
                    _ => CUn::Powi(self.pick(&[-2, -1, 0, 2, 3, 4])),
                };
                Cz::Un {
                    op,
                    a: Box::new(self.cz_ew(cx, ty, shape, depth - 1)?),
                }
            }
            4..=7 => Cz::Bin {
                op: self.pick(&[CBin::Add, CBin::Sub, CBin::Mul, CBin::Div]),
                a: Box::new(self.cz_ew(cx, ty, shape, depth - 1)?),
                b: Box::new(self.cz_ew(cx, ty, shape, depth - 1)?),
            },
            _ => Cz::Scalar {
                op: self.pick(&[CBin::Add, CBin::Sub, CBin::Mul, CBin::Div]),
                a: Box::new(self.cz_ew(cx, ty, shape, depth - 1)?),
                re: ty.round(self.pick(&[0.5, -1.5, 2.0, 0.0, 3.25])),
                im: ty.round(self.pick(&[0.25, -2.0, 1.0, 0.0, -0.75])),
            },
        })
    }

    fn conv_opts(&mut self) -> ConvOpts {
        ConvOpts {
            mode: self.rng.random_range(0..3),
            corr: self.chance(0.5),
            method: self.rng.random_range(0..3),
        }
    }

    fn proj(&mut self) -> Proj {
        self.pick(&[Proj::Re, Proj::Re, Proj::Im, Proj::Im, Proj::Abs, Proj::Arg])
    }

    /// Version 3's `let`: a real array computed through complex values (module comment).
    pub(super) fn complex(&mut self, cx: &mut Ctx) -> Option<usize> {
        let ty = self.pick(&[Ty::F32, Ty::F64]);
        let s = self.cx_shape(cx, ty);
        let axis = self.rng.random_range(0..s.len());
        let norm = self.rng.random_range(0..3);
        let e = match self.rng.random_range(0..12) {
            0..=4 => {
                let mut z = self.cz_ew(cx, ty, &s, 2)?;
                if self.chance(0.4) {
                    z = Cz::Red {
                        op: self.pick(&[CRed::Sum, CRed::Mean, CRed::Prod]),
                        a: Box::new(z),
                        axis: if self.chance(0.6) { Some(axis) } else { None },
                    };
                }
                CxExpr::Proj { p: self.proj(), z }
            }
            5..=6 => {
                let z = Cz::Fft {
                    a: Box::new(self.cz_ew(cx, ty, &s, 1)?),
                    n: self.pick(&FFT_NS),
                    axis,
                    inverse: self.chance(0.4),
                    norm,
                };
                CxExpr::Proj { p: self.proj(), z }
            }
            7 => {
                let z = Cz::Rfft {
                    x: self.real_var(cx, ty, &s)?,
                    n: self.pick(&FFT_NS),
                    axis,
                    norm,
                };
                if self.chance(0.5) {
                    CxExpr::Irfft {
                        z,
                        n: self.pick(&FFT_NS),
                        axis,
                        norm,
                    }
                } else {
                    CxExpr::Proj { p: self.proj(), z }
                }
            }
            8 => CxExpr::Irfft {
                z: self.cz_ew(cx, ty, &s, 1)?,
                n: self.pick(&FFT_NS),
                axis,
                norm,
            },
            9 | 10 => {
                let m = self.pick(&[1usize, 2, 3, 4, 5, 7, 8, 16]);
                let z = Cz::Conv {
                    a: Box::new(self.cz_ew(cx, ty, &s, 1)?),
                    k: Box::new(self.cz_ew(cx, ty, &[m], 0)?),
                    o: self.conv_opts(),
                };
                CxExpr::Proj { p: self.proj(), z }
            }
            _ => {
                let m = self.pick(&[1usize, 2, 3, 5, 8, 16]);
                CxExpr::RConv {
                    x: self.real_var(cx, ty, &s)?,
                    k: self.real_var(cx, ty, &[m])?,
                    o: self.conv_opts(),
                }
            }
        };
        self.try_bind(cx, Expr::Complex { ty, e: Box::new(e) })
    }
}
