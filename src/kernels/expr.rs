//! Size expressions of kernel specs (seed 002): integers, `dataset`, `+ - * /` (integer
//! division, which must be exact: a size that does not divide is a spec error) and parentheses.
//! Parsed once into a tree, evaluated per launch with the dataset size.

/// A parsed size expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// An integer literal.
    Int(i64),
    /// The launch's dataset size.
    Dataset,
    /// `a op b` with `op` one of `+ - * /`.
    Bin(char, Box<Expr>, Box<Expr>),
    /// `-a`.
    Neg(Box<Expr>),
}

impl Expr {
    /// Parses `s`; the error says what was expected where.
    pub fn parse(s: &str) -> Result<Expr, String> {
        let toks = lex(s)?;
        let mut p = Parser { toks, at: 0 };
        let e = p.sum()?;
        if p.at != p.toks.len() {
            return Err(format!("unexpected {} in \"{s}\"", p.toks[p.at].show()));
        }
        Ok(e)
    }

    /// The value for a dataset size, or why there is none (division by zero or not exact,
    /// overflow).
    pub fn eval(&self, dataset: i64) -> Result<i64, String> {
        Ok(match self {
            Expr::Int(v) => *v,
            Expr::Dataset => dataset,
            Expr::Neg(a) => a.eval(dataset)?.checked_neg().ok_or("overflow")?,
            Expr::Bin(op, a, b) => {
                let (x, y) = (a.eval(dataset)?, b.eval(dataset)?);
                match op {
                    '+' => x.checked_add(y).ok_or("overflow")?,
                    '-' => x.checked_sub(y).ok_or("overflow")?,
                    '*' => x.checked_mul(y).ok_or("overflow")?,
                    _ => {
                        if y == 0 {
                            return Err("division by zero".into());
                        }
                        if x % y != 0 {
                            return Err(format!("{x} / {y} is not a whole number"));
                        }
                        x / y
                    }
                }
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Dataset,
    Op(char),
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Tok::Int(v) => format!("`{v}`"),
            Tok::Dataset => "`dataset`".into(),
            Tok::Op(c) => format!("`{c}`"),
        }
    }
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let v = s[st..i]
                .parse()
                .map_err(|_| format!("`{}` is too large", &s[st..i]))?;
            out.push(Tok::Int(v));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if &s[st..i] != "dataset" {
                return Err(format!(
                    "unknown name `{}` in \"{s}\" (only `dataset`)",
                    &s[st..i]
                ));
            }
            out.push(Tok::Dataset);
        } else if "+-*/()".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("unexpected `{c}` in \"{s}\""));
        }
    }
    if out.is_empty() {
        return Err("empty expression".into());
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek_op(&self, ops: &str) -> Option<char> {
        match self.toks.get(self.at) {
            Some(Tok::Op(c)) if ops.contains(*c) => Some(*c),
            _ => None,
        }
    }
    fn sum(&mut self) -> Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op) = self.peek_op("+-") {
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.product()?));
        }
        Ok(e)
    }
    fn product(&mut self) -> Result<Expr, String> {
        let mut e = self.atom()?;
        while let Some(op) = self.peek_op("*/") {
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.atom()?));
        }
        Ok(e)
    }
    fn atom(&mut self) -> Result<Expr, String> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        match t {
            Some(Tok::Int(v)) => Ok(Expr::Int(v)),
            Some(Tok::Dataset) => Ok(Expr::Dataset),
            Some(Tok::Op('-')) => Ok(Expr::Neg(Box::new(self.atom()?))),
            Some(Tok::Op('(')) => {
                let e = self.sum()?;
                if self.peek_op(")").is_none() {
                    return Err("missing `)`".into());
                }
                self.at += 1;
                Ok(e)
            }
            Some(t) => Err(format!(
                "expected a number, `dataset` or `(`, found {}",
                t.show()
            )),
            None => Err("the expression ends early".into()),
        }
    }
}
