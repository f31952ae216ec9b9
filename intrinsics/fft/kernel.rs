//! The bodies of the FFT's GPU passes (`gpu.rs`'s [`Plan`]), written once over a [`Dialect`]:
//! the statements of one work-group's block of lines (line passes) or of one element (the real
//! transforms' untangling passes). `opencl.rs` and `wgsl.rs` wrap them in their entry points and
//! give the helpers every body calls: `cx(re, im)`, `cmul(a, b)`, `cconj(a)`, and
//! `twiddle.rs` the functions `af_tw{n}(e) = exp(-2 pi i e / n)` the bodies asked for
//! ([`Dialect::tw`]). A radix stage computes one twiddle per butterfly and its powers by
//! products (`w^2 = w w`, `w^3 = w w^2`, .., depth `log2 r`); the butterflies are
//! `butterfly.rs`'s.

use super::butterfly;
use super::gpu::{Arr, Chirp, LinePass, Load, Plan, Step, Store};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt::Write;

/// What differs between OpenCL C and WGSL in the bodies.
pub struct Dialect {
    pub wgsl: bool,
    /// OpenCL's index type (`uint` or `ulong`); WGSL always `u32`.
    pub wide: bool,
    /// f64 (OpenCL `double`).
    pub f64: bool,
    /// The twiddle denominators the bodies called for (`twiddle.rs` defines their functions).
    pub tw: RefCell<BTreeSet<usize>>,
}

impl Dialect {
    /// A dialect with no twiddle functions asked for yet.
    pub fn new(wgsl: bool, wide: bool, f64: bool) -> Dialect {
        Dialect {
            wgsl,
            wide,
            f64,
            tw: RefCell::new(BTreeSet::new()),
        }
    }
    /// The twiddle `exp(-2 pi i e / n)` (`e < n`), or its conjugate for an inverse transform.
    pub fn tw(&self, e: &str, n: usize, inverse: bool) -> String {
        self.tw.borrow_mut().insert(n);
        if inverse {
            format!("cconj(af_tw{n}({e}))")
        } else {
            format!("af_tw{n}({e})")
        }
    }
    /// The denominators [`Dialect::tw`] was called with.
    pub fn tw_sizes(&self) -> Vec<usize> {
        self.tw.borrow().iter().copied().collect()
    }
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
    pub(super) fn let_c(&self, name: &str, e: &str) -> String {
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
        Load::Tangle { nf } => {
            let h = nf / 2;
            format!(
                "{{ {} {} {} if (n < {cp}) {{ a = {src}[{}]; }} if (n == 0u) {{ a.y = {zero}; }} if (kb < {cp}) {{ b = {src}[{}]; }} if (kb == {}) {{ b.y = {zero}; }} {} {} v = ev + cx(-od.y, od.x); }}",
                d.let_u("kb", &format!("{} - n", d.u(h))),
                d.var_c("a", &d.zero()),
                d.var_c("b", &d.zero()),
                addr(d, g, a.len, "n"),
                addr(d, g, a.len, "kb"),
                d.u(h),
                d.let_c("ev", "a + cconj(b)"),
                d.let_c(
                    "od",
                    &format!("cmul(a - cconj(b), {})", d.tw("n", nf, true))
                ),
            )
        }
        Load::Chirp { nf, len, inverse } => format!(
            "{{ {} if (n > {}) {{ ck = {} - n; }} if (ck < {}) {{ {} v = {}; }} }}",
            d.var_u("ck", "n"),
            d.u(len - nf),
            d.u(len),
            d.u(nf),
            chirp_angle(d, "ck", nf),
            d.tw("ce", 2 * nf, inverse)
        ),
    }
}

/// Statements setting `ce` to `k^2 mod 2 nf` for the index expression `k < nf <= 2^23`,
/// exactly in 32-bit integers: `k * k` where it fits, else Horner over the bytes of the second
/// factor, every product and sum below `2^32` (`ce < 2 nf <= 2^24`).
fn chirp_angle(d: &Dialect, k: &str, nf: usize) -> String {
    let m2 = d.u(2 * nf);
    if nf <= 1 << 15 {
        return d.let_u("ce", &format!("({k} * {k}) % {m2}"));
    }
    let byte = |shift: u32| {
        format!(
            "(({k}) * ((({k}) >> {}) & {})) % {m2}",
            d.u(shift as usize),
            d.u(255)
        )
    };
    format!(
        "{} ce = ((ce * {b}) % {m2} + {}) % {m2}; ce = ((ce * {b}) % {m2} + {}) % {m2};",
        d.var_u("ce", &format!("(({k}) * (({k}) >> {})) % {m2}", d.u(16))),
        byte(8),
        byte(0),
        b = d.u(256),
    )
}

/// A block multiplying `v` by the chirp's `w_k` (`gpu.rs`'s [`Chirp`]) for the index
/// expression `k < nf`.
fn chirp_mul(d: &Dialect, k: &str, c: Chirp) -> String {
    format!(
        "{{ {} v = cmul(v, {}); }}",
        chirp_angle(d, k, c.nf),
        d.tw("ce", 2 * c.nf, c.inverse)
    )
}

/// Statements writing the complex `v` as point `n` of line `(o, i)`.
fn store(d: &Dialect, g: &Plan, dst: &str, a: Arr, how: Store) -> String {
    match how {
        Store::Complex | Store::Untangle { .. } => {
            format!("{dst}[{}] = v;", addr(d, g, a.len, "n"))
        }
        Store::Real => format!("{dst}[{}] = v.x;", addr(d, g, a.len, "n")),
        Store::RealPairs => format!(
            "{} {dst}[ra] = v.x; {dst}[ra + {}] = v.y;",
            d.let_u("ra", &addr(d, g, a.len, "2u * n")),
            d.u(g.post)
        ),
    }
}

/// Statements setting `bl` and `j` (line of the block, point) of the block's point `e` (lines
/// of `len` points):
/// line-fastest where the block's lines are neighbours in memory.
fn point(d: &Dialect, p: &LinePass, len: usize) -> String {
    let (bl, j) = if p.across {
        (
            format!("e % {}", d.u(p.batch)),
            format!("e / {}", d.u(p.batch)),
        )
    } else {
        (format!("e / {}", d.u(len)), format!("e % {}", d.u(len)))
    };
    format!("{} {}", d.let_u("bl", &bl), d.let_u("j", &j))
}

/// The body of a line pass for block `gb` of lines, with local array `sh`, source `src`,
/// destination `dst` and (for a [`LinePass::table`]) the one-line array `tab`, run by thread
/// `lid`. `g` is the pass's geometry ([`Step::geometry`]).
pub fn line_body(
    d: &Dialect,
    g: &Plan,
    p: &LinePass,
    src: &str,
    dst: &str,
    tab: &str,
    sh: &str,
) -> String {
    let (len, batch, local) = (p.len, p.batch, p.local);
    let total = batch * len;
    let lines = p.lines(g);
    let sign = if p.inverse { 1.0 } else { -1.0 };
    let at = format!("bl * {} + j", d.u(len));
    let mut s = String::new();
    // Load. A global pass's twiddle `w^(k j)` (`k = m mod span`): where each thread keeps one
    // line of the block (`local` a multiple of `batch`), its points `j` step by
    // `local / batch` and the twiddle by a product with `w^(k local / batch)` (rounding depth
    // `total / local`, at most 16); else one twiddle a point.
    let (mut open, mut twiddle, mut next, mut close) = Default::default();
    if let Some(span) = p.twiddle {
        let n = span * len;
        if p.across && local.is_multiple_of(batch) && local <= total {
            let k = format!(
                "((gb * {b} + lid % {b}) / {}) % {} % {}",
                d.u(g.post),
                d.u(p.mc),
                d.u(span),
                b = d.u(batch)
            );
            open = format!(
                "    {{ {} {} {}\n",
                d.let_u("tk", &k),
                d.var_c(
                    "wt",
                    &d.tw(&format!("tk * (lid / {})", d.u(batch)), n, p.inverse)
                ),
                d.let_c(
                    "ws",
                    &d.tw(&format!("tk * {}", d.u(local / batch)), n, p.inverse)
                ),
            );
            twiddle = " v = cmul(v, wt);".to_string();
            next = " wt = cmul(wt, ws);".to_string();
            close = "    }\n".to_string();
        } else {
            twiddle = format!(
                " v = cmul(v, {});",
                d.tw(&format!("(m % {}) * j", d.u(span)), n, p.inverse)
            );
        }
    }
    // Bluestein's factors at the load (`gpu.rs`'s `LinePass`): by the axis element `n`.
    let mut factors = String::new();
    if let Some(c) = p.chirp_in {
        let _ = write!(
            factors,
            " if (n < {}) {} else {{ v = {}; }}",
            d.u(c.nf),
            chirp_mul(d, "n", c),
            d.zero()
        );
    }
    if p.table.is_some() {
        let _ = write!(factors, " v = cmul(v, {tab}[n]);");
    }
    s.push_str(&open);
    let _ = writeln!(
        s,
        "    {} {{ {} {} {} if (ln < {}) {{ {} {} {}{factors}{twiddle} }} {sh}[{}] = v;{next} }}",
        d.for_u("e", "lid", total, local),
        point(d, p, len),
        d.let_u("ln", &format!("gb * {} + bl", d.u(batch))),
        d.var_c("v", &d.zero()),
        d.u(lines),
        split_line(d, g, p.mc, "ln"),
        d.let_u("n", &format!("m * {} + j * {}", d.u(p.mk), d.u(p.jk))),
        load(d, g, src, p.src, p.load, p.copy),
        slot(&at, p.across),
    );
    s.push_str(&close);
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
                    slot(&format!("base + j + {}", d.u(k * q)), p.across)
                );
            }
            if span > 1 {
                let _ = write!(s, " {}", powers(d, r, &d.tw("k", span * r, p.inverse)));
                for (k, v) in names.iter().enumerate().skip(1) {
                    let _ = write!(s, " {v} = cmul({v}, w{k});");
                }
            }
            let _ = writeln!(s, " {} }} }}", butterfly::dft(d, &names, sign));
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
                    slot(&format!("ob + {}", d.u(k * span)), p.across)
                );
            }
            let _ = writeln!(s, " }} }}");
        }
        let _ = writeln!(s, "    {}\n    }}", d.barrier());
        span *= r;
    }
    // Store.
    let mut post = String::new();
    if let Some(c) = p.chirp_out {
        let _ = write!(post, " {}", chirp_mul(d, "n", c));
    }
    if p.scale != 1.0 {
        let _ = write!(post, " v = v * {};", d.f(p.scale));
    }
    let out = if p.os == 1 {
        format!("m * {} + j * {}", d.u(p.ok), d.u(p.kk))
    } else {
        format!(
            "(m / {os}) * {} + m % {os} + j * {}",
            d.u(p.ok),
            d.u(p.kk),
            os = d.u(p.os)
        )
    };
    // An untangling store writes `len + 1` points of each line.
    let (outs, value) = match p.store {
        Store::Untangle { nf } => (len + 1, untangle(d, sh, len, nf, p.across)),
        _ => (len, d.var_c("v", &format!("{sh}[{}]", slot(&at, p.across)))),
    };
    let _ = writeln!(
        s,
        "    {} {{ {} {} if (ln < {}) {{ {} {} if (n < {}) {{ {} {post} {} }} }} }}",
        d.for_u("e", "lid", batch * outs, local),
        point(d, p, outs),
        d.let_u("ln", &format!("gb * {} + bl", d.u(batch))),
        d.u(lines),
        split_line(d, g, p.mc, "ln"),
        d.let_u("n", &out),
        d.u(p.limit),
        value,
        store(d, g, dst, p.dst, p.store),
    );
    let _ = writeln!(s, "    {}", d.barrier());
    s
}

/// Statements setting `v` to coefficient `j <= len` of the real transform of `nf = 2 len`
/// points from the block's line `bl` of `sh` (the transform of its pairs).
fn untangle(d: &Dialect, sh: &str, len: usize, nf: usize, across: bool) -> String {
    let half = d.f(0.5);
    let at = |k: &str| {
        format!(
            "{sh}[{}]",
            slot(&format!("bl * {} + {k}", d.u(len)), across)
        )
    };
    format!(
        "{} {} {} {} {} {} {}",
        d.let_u("ka", &format!("j % {}", d.u(len))),
        d.let_u("kb", &format!("({} - j) % {}", d.u(len), d.u(len))),
        d.let_c("a", &at("ka")),
        d.let_c("b", &format!("cconj({})", at("kb"))),
        d.let_c("ev", &format!("(a + b) * {half}")),
        d.let_c("od", &format!("(a - b) * {half}")),
        d.var_c(
            "v",
            &format!("ev + cmul(cx(od.y, -od.x), {})", d.tw("j", nf, false))
        ),
    )
}

/// Statements naming `w1 = w` (an expression) and its powers `w2 .. w{r-1}`, each a product
/// of two lower ones (`w^k = w^(k/2) w^(k - k/2)`: rounding depth `log2 k`).
fn powers(d: &Dialect, r: usize, w: &str) -> String {
    let mut s = d.let_c("w1", w);
    for k in 2..r {
        let _ = write!(
            s,
            " {}",
            d.let_c(
                &format!("w{k}"),
                &format!("cmul(w{}, w{})", k / 2, k - k / 2)
            )
        );
    }
    s
}

/// The local-memory slot of point `x` of a line pass's block: swizzled within groups of 16
/// points (see [`super::gpu::SWIZZLE`]); by bits 4..8 of `x` where threads walk lines, also
/// by bits 8..12 where they walk `across` them.
fn slot(x: &str, across: bool) -> String {
    if across {
        format!("(({x}) ^ (((({x}) >> 4u) ^ (({x}) >> 8u)) & 15u))")
    } else {
        format!("(({x}) ^ ((({x}) >> 4u) & 15u))")
    }
}

/// The body of an element-wise pass (`R2cPost`) for element `e`.
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
                    &format!("ev + cmul(cx(od.y, -od.x), {})", d.tw("k", n, false))
                ),
                addr(d, g, da.len, "k"),
            )
        }
        Step::Lines(_) => unreachable!("a line pass is not element-wise"),
    }
}

/// Elements an element-wise pass covers.
pub fn elem_count(g: &Plan, step: &Step) -> usize {
    match *step {
        Step::R2cPost { h, .. } => g.pre * (h + 1) * g.post,
        Step::Lines(_) => 0,
    }
}
