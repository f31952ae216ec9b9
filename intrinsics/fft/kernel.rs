//! The bodies of the FFT's GPU passes (`gpu.rs`'s [`Plan`]), written once over a [`Dialect`]:
//! the statements of one work-group's block of lines (line passes) or of one element (the real
//! transforms' untangling passes). `opencl.rs` and `wgsl.rs` wrap them in their entry points and
//! give the helpers every body calls: `cx(re, im)`, `cmul(a, b)`, `cconj(a)` and
//! `af_tw(e, n) = exp(-2 pi i e / n)` for `e < n`, computed from the exact integers (see
//! [`twiddle_poly`]).

use super::gpu::{Arr, LinePass, Load, PAD, Plan, Step, Store};
use std::fmt::Write;

/// What differs between OpenCL C and WGSL in the bodies.
pub struct Dialect {
    pub wgsl: bool,
    /// OpenCL's index type (`uint` or `ulong`); WGSL always `u32`.
    pub wide: bool,
    /// f64 (OpenCL `double`).
    pub f64: bool,
}

impl Dialect {
    /// An index literal.
    pub fn u(&self, x: usize) -> String {
        if self.wide && !self.wgsl {
            format!("{x}UL")
        } else {
            format!("{x}u")
        }
    }
    /// A float literal.
    pub fn f(&self, v: f64) -> String {
        if self.f64 {
            format!("{v:e}")
        } else {
            format!("{:e}f", v as f32)
        }
    }
    fn let_u(&self, name: &str, e: &str) -> String {
        if self.wgsl {
            format!("let {name} = {e};")
        } else {
            format!("const IX {name} = {e};")
        }
    }
    fn var_u(&self, name: &str, e: &str) -> String {
        if self.wgsl {
            format!("var {name} = {e};")
        } else {
            format!("IX {name} = {e};")
        }
    }
    fn let_c(&self, name: &str, e: &str) -> String {
        if self.wgsl {
            format!("let {name} = {e};")
        } else {
            format!("const T2 {name} = {e};")
        }
    }
    fn var_c(&self, name: &str, e: &str) -> String {
        if self.wgsl {
            format!("var {name} = {e};")
        } else {
            format!("T2 {name} = {e};")
        }
    }
    fn decl_c(&self, name: &str) -> String {
        if self.wgsl {
            format!("var {name}: vec2<f32>;")
        } else {
            format!("T2 {name};")
        }
    }
    /// A loop header `for (e = start; e < end; e += step)` over indices.
    fn for_u(&self, name: &str, start: &str, end: usize, step: usize) -> String {
        let (end, step) = (self.u(end), self.u(step));
        if self.wgsl {
            format!("for (var {name} = {start}; {name} < {end}; {name} += {step})")
        } else {
            format!("for (IX {name} = {start}; {name} < {end}; {name} += {step})")
        }
    }
    fn barrier(&self) -> &'static str {
        if self.wgsl {
            "workgroupBarrier();"
        } else {
            "barrier(CLK_LOCAL_MEM_FENCE);"
        }
    }
    fn zero(&self) -> String {
        format!("cx({0}, {0})", self.f(0.0))
    }
}

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

/// The address of axis element `n` of line `(o, i)` of an array of axis `len`.
fn addr(d: &Dialect, g: &Plan, len: usize, n: &str) -> String {
    format!("(o * {} + {n}) * {} + i", d.u(len), d.u(g.post))
}

/// Statements splitting line `ln` into `(o, m, i)` (`i` fastest).
fn split_line(d: &Dialect, g: &Plan, mc: usize, ln: &str) -> String {
    format!(
        "{} {} {} {}",
        d.let_u("i", &format!("{ln} % {}", d.u(g.post))),
        d.let_u("t", &format!("{ln} / {}", d.u(g.post))),
        d.let_u("m", &format!("t % {}", d.u(mc))),
        d.let_u("o", &format!("t / {}", d.u(mc))),
    )
}

/// Statements setting the complex `v` (zero) to point `n` of the line `(o, i)` as `load` reads it.
fn load(d: &Dialect, g: &Plan, src: &str, a: Arr, how: Load, copy: usize) -> String {
    let (cp, zero) = (d.u(copy), d.f(0.0));
    match how {
        Load::Complex => format!("if (n < {cp}) {{ v = {src}[{}]; }}", addr(d, g, a.len, "n")),
        Load::Real => format!(
            "if (n < {cp}) {{ v = cx({src}[{}], {zero}); }}",
            addr(d, g, a.len, "n")
        ),
        Load::RealPairs => format!(
            "{} if (2u * n < {cp}) {{ v.x = {src}[ra]; }} if (2u * n + 1u < {cp}) {{ v.y = {src}[ra + {}]; }}",
            d.let_u("ra", &addr(d, g, a.len, "2u * n")),
            d.u(g.post)
        ),
        Load::Hermitian { nf } => format!(
            "{} if (n > {}) {{ s = {} - n; }} if (s < {cp}) {{ v = {src}[{}]; if (n > {}) {{ v.y = -v.y; }} if (n == 0u) {{ v.y = {zero}; }} }}",
            d.var_u("s", "n"),
            d.u(nf / 2),
            d.u(nf),
            addr(d, g, a.len, "s"),
            d.u(nf / 2),
        ),
    }
}

/// Statements writing the complex `v` as point `n` of line `(o, i)`.
fn store(d: &Dialect, g: &Plan, dst: &str, a: Arr, how: Store) -> String {
    match how {
        Store::Complex => format!("{dst}[{}] = v;", addr(d, g, a.len, "n")),
        Store::Real => format!("{dst}[{}] = v.x;", addr(d, g, a.len, "n")),
        Store::RealPairs => format!(
            "{} {dst}[ra] = v.x; {dst}[ra + {}] = v.y;",
            d.let_u("ra", &addr(d, g, a.len, "2u * n")),
            d.u(g.post)
        ),
    }
}

/// `x * w` for the constant `w = (c, s)`, trivial values without a product.
fn times_const(d: &Dialect, x: &str, c: f64, s: f64) -> String {
    let near = |a: f64, b: f64| (a - b).abs() < 1e-15;
    if near(c, 1.0) && near(s, 0.0) {
        x.to_string()
    } else if near(c, -1.0) && near(s, 0.0) {
        format!("(-{x})")
    } else if near(c, 0.0) && near(s, 1.0) {
        format!("cx(-{x}.y, {x}.x)")
    } else if near(c, 0.0) && near(s, -1.0) {
        format!("cx({x}.y, -{x}.x)")
    } else {
        format!("cmul({x}, cx({}, {}))", d.f(c), d.f(s))
    }
}

/// Statements replacing `x[0..r]` by their `r`-point DFT (`sign` -1 forward, +1 inverse).
fn dft(d: &Dialect, x: &[String], sign: f64) -> String {
    let r = x.len();
    let mut s = String::from("{ ");
    for k in 0..r {
        let mut terms = Vec::new();
        for (j, xj) in x.iter().enumerate() {
            let e = (j * k) % r;
            let (c, sn) = if (4 * e).is_multiple_of(r) {
                // Exact quarter turns.
                match 4 * e / r {
                    0 => (1.0, 0.0),
                    1 => (0.0, sign),
                    2 => (-1.0, 0.0),
                    _ => (0.0, -sign),
                }
            } else {
                let a = 2.0 * std::f64::consts::PI * e as f64 / r as f64;
                (a.cos(), sign * a.sin())
            };
            terms.push(times_const(d, xj, c, sn));
        }
        let _ = write!(s, "{} ", d.let_c(&format!("y{k}"), &terms.join(" + ")));
    }
    for (k, xk) in x.iter().enumerate() {
        let _ = write!(s, "{xk} = y{k}; ");
    }
    s.push('}');
    s
}

/// A twiddle `exp(sign 2 pi i e / n)`.
fn tw(e: &str, n: &str, inverse: bool) -> String {
    if inverse {
        format!("cconj(af_tw({e}, {n}))")
    } else {
        format!("af_tw({e}, {n})")
    }
}

/// The body of a line pass for block `gb` of lines, with local array `sh`, source `src` and
/// destination `dst`, run by thread `lid`.
pub fn line_body(d: &Dialect, g: &Plan, p: &LinePass, src: &str, dst: &str, sh: &str) -> String {
    let (len, batch, local) = (p.len, p.batch, p.local);
    let total = batch * len;
    let lines = p.lines(g);
    let sign = if p.inverse { 1.0 } else { -1.0 };
    let mut s = String::new();
    // Load.
    let _ = writeln!(
        s,
        "    {} {{ {} {} {} {} if (ln < {}) {{ {} {} {} }} {sh}[{}] = v; }}",
        d.for_u("e", "lid", total, local),
        d.let_u("bl", &format!("e / {}", d.u(len))),
        d.let_u("j", &format!("e % {}", d.u(len))),
        d.let_u("ln", &format!("gb * {} + bl", d.u(batch))),
        d.var_c("v", &d.zero()),
        d.u(lines),
        split_line(d, g, p.mc, "ln"),
        d.let_u("n", &format!("m * {} + j * {}", d.u(p.mk), d.u(p.jk))),
        load(d, g, src, p.src, p.load, p.copy),
        slot(d, p, "e"),
    );
    let _ = writeln!(s, "    {}", d.barrier());
    // Stages.
    let mut span = 1usize;
    for &r in &p.radices {
        let q = len / r;
        let nb = batch * q;
        let per = nb.div_ceil(local);
        let _ = writeln!(s, "    {{");
        for t in 0..per {
            for k in 0..r {
                let _ = write!(s, " {}", d.decl_c(&format!("v{t}_{k}")));
            }
        }
        s.push('\n');
        let head = |t: usize| {
            format!(
                "{} if (b < {}) {{ {} {} {} {}",
                d.let_u("b", &format!("lid + {}", d.u(t * local))),
                d.u(nb),
                d.let_u("bl", &format!("b / {}", d.u(q))),
                d.let_u("j", &format!("b % {}", d.u(q))),
                d.let_u("k", &format!("j % {}", d.u(span))),
                d.let_u("base", &format!("bl * {}", d.u(len))),
            )
        };
        for t in 0..per {
            let names: Vec<String> = (0..r).map(|k| format!("v{t}_{k}")).collect();
            let _ = write!(s, "    {{ {}", head(t));
            for (k, v) in names.iter().enumerate() {
                let _ = write!(
                    s,
                    " {v} = {sh}[{}];",
                    slot(d, p, &format!("base + j + {}", d.u(k * q)))
                );
                if k > 0 && span > 1 {
                    let e = format!("{} * k", d.u(k));
                    let _ = write!(
                        s,
                        " {v} = cmul({v}, {});",
                        tw(&e, &d.u(span * r), p.inverse)
                    );
                }
            }
            let _ = writeln!(s, " {} }} }}", dft(d, &names, sign));
        }
        let _ = writeln!(s, "    {}", d.barrier());
        for t in 0..per {
            let _ = write!(
                s,
                "    {{ {} {}",
                head(t),
                d.let_u(
                    "ob",
                    &format!("base + (j / {}) * {} + k", d.u(span), d.u(span * r))
                )
            );
            for k in 0..r {
                let _ = write!(
                    s,
                    " {sh}[{}] = v{t}_{k};",
                    slot(d, p, &format!("ob + {}", d.u(k * span)))
                );
            }
            let _ = writeln!(s, " }} }}");
        }
        let _ = writeln!(s, "    {}\n    }}", d.barrier());
        span *= r;
    }
    // Store.
    let mut post = String::new();
    if let Some(nt) = p.twiddle {
        let _ = write!(post, " v = cmul(v, {});", tw("m * j", &d.u(nt), p.inverse));
    }
    if p.scale != 1.0 {
        let _ = write!(post, " v = v * {};", d.f(p.scale));
    }
    let _ = writeln!(
        s,
        "    {} {{ {} {} {} if (ln < {}) {{ {} {} if (n < {}) {{ {} {post} {} }} }} }}",
        d.for_u("e", "lid", total, local),
        d.let_u("bl", &format!("e / {}", d.u(len))),
        d.let_u("j", &format!("e % {}", d.u(len))),
        d.let_u("ln", &format!("gb * {} + bl", d.u(batch))),
        d.u(lines),
        split_line(d, g, p.mc, "ln"),
        d.let_u("n", &format!("m * {} + j * {}", d.u(p.ok), d.u(p.kk))),
        d.u(p.limit),
        d.var_c("v", &format!("{sh}[{}]", slot(d, p, "e"))),
        store(d, g, dst, p.dst, p.store),
    );
    let _ = writeln!(s, "    {}", d.barrier());
    s
}

/// The local-memory slot of point `i` of a line pass (one unused point after every
/// [`PAD`] where the pass pads).
fn slot(d: &Dialect, p: &LinePass, i: &str) -> String {
    if p.pad {
        format!("({i}) + (({i}) >> {})", d.u(PAD.trailing_zeros() as usize))
    } else {
        i.to_string()
    }
}

/// The body of an element-wise pass (`R2cPost`, `C2rPre`) for element `e`.
pub fn elem_body(d: &Dialect, g: &Plan, step: &Step, src: &str, dst: &str) -> String {
    let half = d.f(0.5);
    match *step {
        Step::R2cPost {
            src: sa,
            dst: da,
            h,
            n,
            scale,
        } => {
            let scaled = if scale != 1.0 {
                format!(" * {}", d.f(scale))
            } else {
                String::new()
            };
            format!(
                "{} {} {} {} {} {} {} {} {} {} {} {dst}[{}] = x{scaled};",
                d.let_u("i", &format!("e % {}", d.u(g.post))),
                d.let_u("t", &format!("e / {}", d.u(g.post))),
                d.let_u("k", &format!("t % {}", d.u(h + 1))),
                d.let_u("o", &format!("t / {}", d.u(h + 1))),
                d.let_u("ka", &format!("k % {}", d.u(h))),
                d.let_u("kb", &format!("({} - k) % {}", d.u(h), d.u(h))),
                d.let_c("a", &format!("{src}[{}]", addr(d, g, sa.len, "ka"))),
                d.let_c("b", &format!("cconj({src}[{}])", addr(d, g, sa.len, "kb"))),
                d.let_c("ev", &format!("(a + b) * {half}")),
                d.let_c("od", &format!("(a - b) * {half}")),
                d.let_c(
                    "x",
                    &format!("ev + cmul(cx(od.y, -od.x), af_tw(k, {}))", d.u(n))
                ),
                addr(d, g, da.len, "k"),
            )
        }
        Step::C2rPre {
            src: sa,
            dst: da,
            h,
            n,
            copy,
        } => {
            let zero = d.f(0.0);
            format!(
                "{} {} {} {} {} {} if (k < {cp}) {{ a = {src}[{}]; }} if (k == 0u) {{ a.y = {zero}; }} {} if (kb < {cp}) {{ b = {src}[{}]; }} if (kb == {}) {{ b.y = {zero}; }} {} {} {dst}[{}] = ev + cx(-od.y, od.x);",
                d.let_u("i", &format!("e % {}", d.u(g.post))),
                d.let_u("t", &format!("e / {}", d.u(g.post))),
                d.let_u("k", &format!("t % {}", d.u(h))),
                d.let_u("o", &format!("t / {}", d.u(h))),
                d.let_u("kb", &format!("{} - k", d.u(h))),
                d.var_c("a", &d.zero()),
                addr(d, g, sa.len, "k"),
                d.var_c("b", &d.zero()),
                addr(d, g, sa.len, "kb"),
                d.u(h),
                d.let_c("ev", "a + cconj(b)"),
                d.let_c(
                    "od",
                    &format!("cmul(a - cconj(b), cconj(af_tw(k, {})))", d.u(n))
                ),
                addr(d, g, da.len, "k"),
                cp = d.u(copy),
            )
        }
        Step::Lines(_) => unreachable!("a line pass is not element-wise"),
    }
}

/// Elements an element-wise pass covers.
pub fn elem_count(g: &Plan, step: &Step) -> usize {
    match *step {
        Step::R2cPost { h, .. } => g.pre * (h + 1) * g.post,
        Step::C2rPre { h, .. } => g.pre * h * g.post,
        Step::Lines(_) => 0,
    }
}
