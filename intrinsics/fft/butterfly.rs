//! The radix butterflies of the FFT's line passes (`kernel.rs`): statements replacing complex
//! values `x[0..r]` by their `r`-point DFT with few operations. Radix 2 and 4 are adds and
//! swaps (the `+-i` rotations); radix 8 is two radix-4 butterflies joined by the eighth roots,
//! `(1 +- i) / sqrt 2` as two adds and two products by `sqrt(1/2)`; the odd radices 3, 5, 7 use
//! the symmetric form: with `a_j = x_j + x_{r-j}` and `b_j = x_j - x_{r-j}`,
//! `y_k, y_{r-k} = x_0 + sum_j cos(2 pi jk / r) a_j +- i sign sum_j sin(2 pi jk / r) b_j`.
//!
//! Real operations per butterfly (adds, products): radix 2: 4, 0; radix 4: 16, 0; radix 8:
//! 52, 4; radix 3: 12, 4; radix 5: 32, 16; radix 7: 60, 36.

use super::kernel::Dialect;
use std::fmt::Write;

/// Statements (one block) replacing `x[0..r]` by their `r`-point DFT, `sign` -1 forward
/// (`exp(-2 pi i jk / r)`) or +1 inverse.
pub fn dft(d: &Dialect, x: &[String], sign: f64) -> String {
    let mut b = Bf {
        d,
        s: String::from("{ "),
        n: 0,
    };
    let y = match x.len() {
        1 => return String::new(),
        2 => vec![b.add(&x[0], &x[1]), b.sub(&x[0], &x[1])],
        4 => b.radix4(x, sign),
        8 => b.radix8(x, sign),
        3 | 5 | 7 => b.odd(x, sign),
        r => unreachable!("no butterfly of radix {r}"),
    };
    for (xk, yk) in x.iter().zip(&y) {
        let _ = write!(b.s, "{xk} = {yk}; ");
    }
    b.s.push('}');
    b.s
}

/// A butterfly being written: its statements and the count of its temporaries.
struct Bf<'a> {
    d: &'a Dialect,
    s: String,
    n: usize,
}

impl Bf<'_> {
    /// A new complex temporary holding `e`.
    fn t(&mut self, e: String) -> String {
        let name = format!("f{}", self.n);
        self.n += 1;
        let _ = write!(self.s, "{} ", self.d.let_c(&name, &e));
        name
    }
    fn add(&mut self, a: &str, b: &str) -> String {
        self.t(format!("{a} + {b}"))
    }
    fn sub(&mut self, a: &str, b: &str) -> String {
        self.t(format!("{a} - {b}"))
    }
    /// `sign * i * z`: a swap and a negation.
    fn rot(&mut self, z: &str, sign: f64) -> String {
        self.t(if sign > 0.0 {
            format!("cx(-{z}.y, {z}.x)")
        } else {
            format!("cx({z}.y, -{z}.x)")
        })
    }

    fn radix4(&mut self, x: &[String], sign: f64) -> Vec<String> {
        let t0 = self.add(&x[0], &x[2]);
        let t1 = self.sub(&x[0], &x[2]);
        let t2 = self.add(&x[1], &x[3]);
        let t3 = self.sub(&x[1], &x[3]);
        let t3 = self.rot(&t3, sign);
        vec![
            self.add(&t0, &t2),
            self.add(&t1, &t3),
            self.sub(&t0, &t2),
            self.sub(&t1, &t3),
        ]
    }

    /// `z * exp(sign 2 pi i k / 8)` for odd `k` (1 or 3): `sqrt(1/2) (+-zx +- zy, ..)`.
    fn eighth(&mut self, z: &str, k: usize, sign: f64) -> String {
        let h = self.d.f(std::f64::consts::FRAC_1_SQRT_2);
        // exp(sign 2 pi i k / 8) = (c + i s) sqrt(1/2), c and s = +-1.
        let c = if k == 1 { 1.0 } else { -1.0 };
        let s = sign;
        // re = c zx - s zy, im = s zx + c zy.
        let term = |a: f64, v: &str| {
            if a > 0.0 {
                format!("+ {v}")
            } else {
                format!("- {v}")
            }
        };
        let lin = |a: f64, u: &str, b: f64, v: &str| {
            let first = if a > 0.0 {
                u.to_string()
            } else {
                format!("-{u}")
            };
            format!("({first} {})", term(b, v))
        };
        let (zx, zy) = (format!("{z}.x"), format!("{z}.y"));
        self.t(format!(
            "cx({} * {h}, {} * {h})",
            lin(c, &zx, -s, &zy),
            lin(s, &zx, c, &zy)
        ))
    }

    fn radix8(&mut self, x: &[String], sign: f64) -> Vec<String> {
        let ev: Vec<String> = [0, 2, 4, 6].iter().map(|&j| x[j].clone()).collect();
        let od: Vec<String> = [1, 3, 5, 7].iter().map(|&j| x[j].clone()).collect();
        let e = self.radix4(&ev, sign);
        let o = self.radix4(&od, sign);
        let o1 = self.eighth(&o[1], 1, sign);
        let o2 = self.rot(&o[2], sign);
        let o3 = self.eighth(&o[3], 3, sign);
        let o = [o[0].clone(), o1, o2, o3];
        let lo: Vec<String> = (0..4).map(|k| self.add(&e[k], &o[k])).collect();
        let hi: Vec<String> = (0..4).map(|k| self.sub(&e[k], &o[k])).collect();
        lo.into_iter().chain(hi).collect()
    }

    fn odd(&mut self, x: &[String], sign: f64) -> Vec<String> {
        let r = x.len();
        let h = r / 2;
        let a: Vec<String> = (1..=h).map(|j| self.add(&x[j], &x[r - j])).collect();
        let b: Vec<String> = (1..=h).map(|j| self.sub(&x[j], &x[r - j])).collect();
        let mut y = vec![String::new(); r];
        y[0] = self.t(format!("{} + {}", x[0], a.join(" + ")));
        for k in 1..=h {
            let angle = |j: usize| 2.0 * std::f64::consts::PI * ((j * k) % r) as f64 / r as f64;
            let re: Vec<String> = (1..=h)
                .map(|j| format!("{} * {}", a[j - 1], self.d.f(angle(j).cos())))
                .collect();
            let im: Vec<String> = (1..=h)
                .map(|j| format!("{} * {}", b[j - 1], self.d.f(angle(j).sin())))
                .collect();
            let ak = self.t(format!("{} + {}", x[0], re.join(" + ")));
            let bk = self.t(im.join(" + "));
            let bk = self.rot(&bk, sign);
            y[k] = self.add(&ak, &bk);
            y[r - k] = self.sub(&ak, &bk);
        }
        y
    }
}
