//! The fuzzer's program representation: straight-line statements over numbered variables, and
//! their printing as Rust source a user can paste into a `main` to reproduce a failure.

use std::fmt::Write;

/// An element type of the public API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    F32,
    F64,
    I32,
    U32,
    Bool,
}

impl Ty {
    /// The Rust type name.
    pub fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::Bool => "bool",
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
    pub fn is_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::U32)
    }
    pub fn is_numeric(self) -> bool {
        self != Ty::Bool
    }
    /// Rounds an f64 to a value of this type (Rust `as` rules; bool: `!= 0`).
    pub fn round(self, x: f64) -> f64 {
        match self {
            Ty::F32 => x as f32 as f64,
            Ty::F64 => x,
            Ty::I32 => x as i32 as f64,
            Ty::U32 => x as u32 as f64,
            Ty::Bool => (x != 0.0) as u8 as f64,
        }
    }
    /// A scalar of this type as a Rust literal.
    pub fn lit(self, x: f64) -> String {
        match self {
            Ty::F32 => format!("{:?}f32", x as f32),
            Ty::F64 => format!("{x:?}f64"),
            Ty::I32 => format!("{}i32", x as i32),
            Ty::U32 => format!("{}u32", x as u32),
            Ty::Bool => format!("{}", x != 0.0),
        }
    }
}

/// Element-wise functions of one array (scalar arguments included).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Un {
    Neg,
    Abs,
    Sign,
    Not,
    Exp,
    Exp2,
    Sqrt,
    Rsqrt,
    Cbrt,
    Ln,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Erf,
    Erfc,
    Asinh,
    Acosh,
    Atanh,
    Floor,
    Ceil,
    Trunc,
    Round,
    IsNan,
    IsInf,
    Powi(i32),
    Pow(f64),
    Clamp(f64, f64),
    Cast(Ty),
}

impl Un {
    /// The float functions the generator draws from.
    pub const FLOAT_FNS: [Un; 26] = [
        Un::Exp,
        Un::Exp2,
        Un::Sqrt,
        Un::Rsqrt,
        Un::Cbrt,
        Un::Ln,
        Un::Log2,
        Un::Log10,
        Un::Sin,
        Un::Cos,
        Un::Tan,
        Un::Asin,
        Un::Acos,
        Un::Atan,
        Un::Sinh,
        Un::Cosh,
        Un::Tanh,
        Un::Erf,
        Un::Erfc,
        Un::Asinh,
        Un::Acosh,
        Un::Atanh,
        Un::Floor,
        Un::Ceil,
        Un::Trunc,
        Un::Round,
    ];
    fn method(self) -> String {
        match self {
            Un::Powi(n) => format!("powi({n})"),
            Un::Cast(t) => format!("cast::<{}>()", t.name()),
            other => {
                format!("{other:?}")
                    .to_lowercase()
                    .replace("isnan", "is_nan")
                    .replace("isinf", "is_inf")
                    + "()"
            }
        }
    }
}

/// Element-wise functions of two operands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Modulo,
    Min,
    Max,
    And,
    Or,
    Xor,
    Nand,
    Nor,
    Atan2,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Bin {
    pub fn is_cmp(self) -> bool {
        matches!(
            self,
            Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge | Bin::Eq | Bin::Ne
        )
    }
    /// The operator, for the forms printed as `a op b`.
    fn operator(self) -> Option<&'static str> {
        Some(match self {
            Bin::Add => "+",
            Bin::Sub => "-",
            Bin::Mul => "*",
            Bin::Div => "/",
            Bin::Rem => "%",
            _ => return None,
        })
    }
}

/// Reductions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Red {
    Sum,
    Prod,
    Min,
    Max,
    ArgMin,
    ArgMax,
    Any,
    All,
    Count,
    Mean,
    Variance,
    Stddev,
    NormL1,
    NormL2,
    NormInf,
}

impl Red {
    /// Whether the API has an `_axes` form (several axes at once).
    pub fn has_axes(self) -> bool {
        matches!(
            self,
            Red::Sum
                | Red::Prod
                | Red::Min
                | Red::Max
                | Red::ArgMin
                | Red::ArgMax
                | Red::Any
                | Red::All
        )
    }
    fn base(self) -> &'static str {
        match self {
            Red::Sum => "sum",
            Red::Prod => "prod",
            Red::Min => "min",
            Red::Max => "max",
            Red::ArgMin => "argmin",
            Red::ArgMax => "argmax",
            Red::Any => "any",
            Red::All => "all",
            Red::Count => "count",
            Red::Mean => "mean",
            Red::Variance => "variance",
            Red::Stddev => "stddev",
            Red::NormL1 => "norm_l1",
            Red::NormL2 => "norm_l2",
            Red::NormInf => "norm_inf",
        }
    }
}

/// Scans along an axis (`cumsum`, `cumprod`, `cummax`, `cummin`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scan {
    Sum,
    Prod,
    Max,
    Min,
}

impl Scan {
    fn method(self) -> &'static str {
        match self {
            Scan::Sum => "cumsum",
            Scan::Prod => "cumprod",
            Scan::Max => "cummax",
            Scan::Min => "cummin",
        }
    }
}

/// An operand: a variable or a scalar literal of the other operand's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Opd {
    Var(usize),
    Scalar(f64),
}

/// One slice axis: start, end, step (the API's `Slice::new`).
pub type SliceAxis = (Option<isize>, Option<isize>, isize);

/// The value a `let` binds.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Host data from [`data`] with `seed` over `[lo, hi)`, converted to `ty`.
    Input {
        ty: Ty,
        shape: Vec<usize>,
        seed: u64,
        lo: f64,
        hi: f64,
    },
    Full {
        ty: Ty,
        shape: Vec<usize>,
        value: f64,
    },
    Iota {
        ty: Ty,
        shape: Vec<usize>,
        axis: usize,
    },
    Uniform {
        ty: Ty,
        shape: Vec<usize>,
        seed: u64,
    },
    Unary {
        op: Un,
        a: usize,
    },
    /// `a op b`; at most one side a scalar (of the other side's type).
    Binary {
        op: Bin,
        a: Opd,
        b: Opd,
    },
    Select {
        c: usize,
        a: Opd,
        b: Opd,
    },
    Reduce {
        op: Red,
        a: usize,
        axes: Option<Vec<usize>>,
    },
    Matmul {
        a: usize,
        b: usize,
    },
    Gather {
        a: usize,
        idx: usize,
        axis: usize,
    },
    Concat {
        parts: Vec<usize>,
        axis: usize,
    },
    Reshape {
        a: usize,
        shape: Vec<usize>,
    },
    Permute {
        a: usize,
        perm: Vec<usize>,
    },
    Slice {
        a: usize,
        axes: Vec<SliceAxis>,
    },
    Broadcast {
        a: usize,
        shape: Vec<usize>,
    },
    Tile {
        a: usize,
        reps: Vec<usize>,
    },
    Roll {
        a: usize,
        shift: isize,
        axis: usize,
    },
    /// `pad` with mode 0 constant `c`, 1 edge, 2 wrap, 3 reflect, 4 symmetric.
    Pad {
        a: usize,
        widths: Vec<(usize, usize)>,
        mode: u8,
        c: f64,
    },
    /// Host data written out element by element (index lists, data with ties and signed zeros).
    Literal {
        ty: Ty,
        shape: Vec<usize>,
        values: Vec<f64>,
    },
    /// `cumsum` and the other scans along `axis`.
    Scan {
        op: Scan,
        a: usize,
        axis: usize,
    },
    /// `sort_axis` / `sort_axis_descending`; `axis: None` is `sort()` (flattened, ascending).
    Sort {
        a: usize,
        axis: Option<usize>,
        desc: bool,
    },
    /// `argsort_axis` / `argsort_axis_descending` (`None`: `argsort()`). With `nan: Some((m,
    /// neg))` it sorts `select(&m, NAN, &a)` (`-NAN` when `neg`): NaN where the bool `m` holds.
    /// The program's variables stay finite (the generator's domain), so NaN lives only inside
    /// this expression, whose result (positions) is NaN-free: that is how the fuzzer checks
    /// where NaN of either sign sorts.
    Argsort {
        a: usize,
        axis: Option<usize>,
        desc: bool,
        nan: Option<(usize, bool)>,
    },
    /// `topk(k, axis).0` (values) or `.1` (positions, when `indices`).
    TopK {
        a: usize,
        k: usize,
        axis: usize,
        indices: bool,
    },
    TakeAlong {
        a: usize,
        idx: usize,
        axis: usize,
    },
    /// `scatter` (replace; the last duplicate wins) or `scatter_add` (when `add`).
    Scatter {
        a: usize,
        idx: usize,
        values: usize,
        axis: usize,
        add: bool,
    },
    /// Version 3: a real array of `ty` computed through complex values (`fuzz/complex.rs`).
    Complex {
        ty: Ty,
        e: Box<super::complex::CxExpr>,
    },
}

impl Expr {
    /// The variables this expression reads.
    pub fn uses(&self) -> Vec<usize> {
        let o = |x: &Opd| match x {
            Opd::Var(v) => Some(*v),
            Opd::Scalar(_) => None,
        };
        match self {
            Expr::Input { .. }
            | Expr::Full { .. }
            | Expr::Iota { .. }
            | Expr::Uniform { .. }
            | Expr::Literal { .. } => vec![],
            Expr::Unary { a, .. }
            | Expr::Reduce { a, .. }
            | Expr::Reshape { a, .. }
            | Expr::Permute { a, .. }
            | Expr::Slice { a, .. }
            | Expr::Broadcast { a, .. }
            | Expr::Tile { a, .. }
            | Expr::Roll { a, .. }
            | Expr::Pad { a, .. }
            | Expr::Scan { a, .. }
            | Expr::Sort { a, .. }
            | Expr::TopK { a, .. } => vec![*a],
            Expr::Argsort { a, nan, .. } => std::iter::once(*a).chain(nan.map(|n| n.0)).collect(),
            Expr::TakeAlong { a, idx, .. } => vec![*a, *idx],
            Expr::Scatter { a, idx, values, .. } => vec![*a, *idx, *values],
            Expr::Binary { a, b, .. } => o(a).into_iter().chain(o(b)).collect(),
            Expr::Select { c, a, b } => std::iter::once(*c).chain(o(a)).chain(o(b)).collect(),
            Expr::Matmul { a, b } => vec![*a, *b],
            Expr::Gather { a, idx, .. } => vec![*a, *idx],
            Expr::Concat { parts, .. } => parts.clone(),
            Expr::Complex { e, .. } => e.uses(),
        }
    }
}

/// A code reuse section: a body over `ins[..]` and `ps[..]` (ids `0..inputs` and then
/// `inputs..inputs + params` of the body's own numbering) called once or more.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Element type of inputs, parameters and outputs.
    pub ty: Ty,
    pub n_inputs: usize,
    pub n_params: usize,
    /// `let`s only, numbered after the inputs and parameters.
    pub body: Vec<Stmt>,
    /// Body variables returned.
    pub outputs: Vec<usize>,
    /// Each call: input variables, parameter values, and the variables bound to the outputs.
    pub calls: Vec<(Vec<usize>, Vec<f64>, Vec<usize>)>,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let {
        id: usize,
        ty: Ty,
        expr: Expr,
    },
    /// A read in the middle, checked against the oracle: `to_vec`, or `item` when `item`.
    Read {
        id: usize,
        item: bool,
    },
    Eval(usize),
    Hint(usize),
    Drop(usize),
    Execute,
    Block(Vec<Stmt>),
    Reuse(Section),
}

impl Stmt {
    /// The variables this statement reads (not those it binds).
    pub fn uses(&self) -> Vec<usize> {
        match self {
            Stmt::Let { expr, .. } => expr.uses(),
            Stmt::Read { id, .. } | Stmt::Eval(id) | Stmt::Hint(id) | Stmt::Drop(id) => vec![*id],
            Stmt::Execute => vec![],
            Stmt::Block(b) => b.iter().flat_map(|s| s.uses()).collect(),
            Stmt::Reuse(s) => s.calls.iter().flat_map(|c| c.0.clone()).collect(),
        }
    }
    /// The variables this statement binds.
    pub fn binds(&self) -> Vec<usize> {
        match self {
            Stmt::Let { id, .. } => vec![*id],
            Stmt::Block(b) => b.iter().flat_map(|s| s.binds()).collect(),
            Stmt::Reuse(s) => s.calls.iter().flat_map(|c| c.2.clone()).collect(),
            _ => vec![],
        }
    }
}

/// A whole program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub seed: u64,
    /// The generator version that made it (`generator::VERSION`).
    pub version: u32,
    pub stmts: Vec<Stmt>,
}

/// How a seed is written (reports, `corpus.txt`, `FUZZ_ONE`): `1234` for generator version 1
/// (the corpus's first seeds, written before there were versions), `v2:1234` for later ones.
pub fn seed_name(version: u32, seed: u64) -> String {
    if version == 1 {
        seed.to_string()
    } else {
        format!("v{version}:{seed}")
    }
}

/// Reads [`seed_name`]'s form back: `(version, seed)`.
pub fn parse_seed(s: &str) -> Option<(u32, u64)> {
    match s.trim().strip_prefix('v') {
        Some(rest) => {
            let (v, seed) = rest.split_once(':')?;
            Some((v.parse().ok()?, seed.parse().ok()?))
        }
        None => Some((1, s.trim().parse().ok()?)),
    }
}

/// The program's input data: `n` values in `[lo, hi)` from a SplitMix64 stream of `seed`.
/// Printed into every reproducer so it stands alone.
pub fn data(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            lo + (hi - lo) * ((z >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// Converts [`data`]'s values to `ty` (the printed `map`).
pub fn convert(ty: Ty, x: f64) -> f64 {
    match ty {
        Ty::Bool => (x < 0.5) as u8 as f64,
        Ty::I32 => x.floor() as i32 as f64,
        Ty::U32 => x.floor() as u32 as f64,
        t => t.round(x),
    }
}

fn convert_src(ty: Ty) -> String {
    match ty {
        Ty::Bool => "x < 0.5".into(),
        Ty::I32 | Ty::U32 => format!("x.floor() as {}", ty.name()),
        t => format!("x as {}", t.name()),
    }
}

const DATA_SRC: &str = r#"// The fuzzer's input data (SplitMix64), as tests/fuzz/program.rs writes it.
fn data(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            lo + (hi - lo) * ((z >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}
"#;

/// How variables are spelled: `v3` at top level; `ins[k]`, `ps[k]`, `t5` in a section body.
#[derive(Clone, Copy)]
pub enum Names {
    Top,
    Section { inputs: usize, params: usize },
}

impl Names {
    pub fn var(self, id: usize) -> String {
        match self {
            Names::Top => format!("v{id}"),
            Names::Section { inputs, params } => {
                if id < inputs {
                    format!("ins[{id}]")
                } else if id < inputs + params {
                    format!("ps[{}]", id - inputs)
                } else {
                    format!("t{id}")
                }
            }
        }
    }
}

fn opd(names: Names, ty: Ty, o: &Opd) -> String {
    match o {
        Opd::Var(v) => format!("&{}", names.var(*v)),
        Opd::Scalar(s) => ty.lit(*s),
    }
}

fn list<T: std::fmt::Debug>(v: &[T]) -> String {
    format!("{v:?}")
}

/// The Rust expression for `expr`, whose operands have type `ty_of(var)`.
pub fn expr_src(names: Names, expr: &Expr, ty_of: &dyn Fn(usize) -> Ty) -> String {
    let n = |v: &usize| names.var(*v);
    match expr {
        Expr::Input {
            ty,
            shape,
            seed,
            lo,
            hi,
        } => {
            let len: usize = shape.iter().product();
            format!(
                "Array::from_vec(data({seed}, {len}, {lo:?}, {hi:?}).iter().map(|&x| {}).collect(), &{})",
                convert_src(*ty),
                list(shape)
            )
        }
        Expr::Full { ty, shape, value } => {
            format!(
                "Array::<{}>::full(&{}, {})",
                ty.name(),
                list(shape),
                ty.lit(*value)
            )
        }
        Expr::Iota { ty, shape, axis } => {
            format!("Array::<{}>::iota(&{}, {axis})", ty.name(), list(shape))
        }
        Expr::Uniform { ty, shape, seed } => {
            format!(
                "Rng::new({seed}).uniform::<{}>(&{})",
                ty.name(),
                list(shape)
            )
        }
        Expr::Unary { op: Un::Neg, a } => format!("-&{}", n(a)),
        Expr::Unary { op: Un::Pow(y), a } => format!("{}.pow({})", n(a), ty_of(*a).lit(*y)),
        Expr::Unary {
            op: Un::Clamp(lo, hi),
            a,
        } => {
            let t = ty_of(*a);
            format!("{}.clamp({}, {})", n(a), t.lit(*lo), t.lit(*hi))
        }
        Expr::Unary { op, a } => format!("{}.{}", n(a), op.method()),
        Expr::Binary { op, a, b } => {
            let ty = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => ty_of(*v),
                _ => unreachable!("a binary op of two scalars"),
            };
            match (op.operator(), a) {
                (Some(o), _) => format!("{} {o} {}", opd(names, ty, a), opd(names, ty, b)),
                (None, Opd::Var(v)) => {
                    let m = format!("{op:?}").to_lowercase();
                    let m = match m.as_str() {
                        "min" => "minimum".to_string(),
                        "max" => "maximum".to_string(),
                        _ => m,
                    };
                    format!("{}.{m}({})", n(v), opd(names, ty, b))
                }
                (None, Opd::Scalar(_)) => unreachable!("scalar on the left of a method"),
            }
        }
        Expr::Select { c, a, b } => {
            let ty = match (a, b) {
                (Opd::Var(v), _) | (_, Opd::Var(v)) => ty_of(*v),
                _ => unreachable!("select of two scalars"),
            };
            format!(
                "select(&{}, {}, {})",
                n(c),
                opd(names, ty, a),
                opd(names, ty, b)
            )
        }
        Expr::Reduce { op, a, axes } => match axes {
            None => format!("{}.{}()", n(a), op.base()),
            Some(ax) if ax.len() == 1 => {
                format!("{}.{}_axis({})", n(a), op.base(), ax[0])
            }
            Some(ax) => format!("{}.{}_axes(&{})", n(a), op.base(), list(ax)),
        },
        Expr::Matmul { a, b } => format!("{}.matmul(&{})", n(a), n(b)),
        Expr::Gather { a, idx, axis } => format!("{}.gather(&{}, {axis})", n(a), n(idx)),
        Expr::Concat { parts, axis } => {
            let ps: Vec<String> = parts.iter().map(|p| format!("&{}", n(p))).collect();
            format!("Array::concat(&[{}], {axis})", ps.join(", "))
        }
        Expr::Reshape { a, shape } => format!("{}.reshape(&{})", n(a), list(shape)),
        Expr::Permute { a, perm } => format!("{}.permute(&{})", n(a), list(perm)),
        Expr::Slice { a, axes } => {
            let s: Vec<String> = axes
                .iter()
                .map(|(b, e, st)| format!("Slice::new({b:?}, {e:?}, {st})"))
                .collect();
            format!("{}.slice(&[{}])", n(a), s.join(", "))
        }
        Expr::Broadcast { a, shape } => format!("{}.broadcast_to(&{})", n(a), list(shape)),
        Expr::Tile { a, reps } => format!("{}.tile(&{})", n(a), list(reps)),
        Expr::Roll { a, shift, axis } => format!("{}.roll({shift}, {axis})", n(a)),
        Expr::Pad { a, widths, mode, c } => {
            let m = match mode {
                0 => format!("Pad::Constant({c:?} as _)"),
                1 => "Pad::Edge".into(),
                2 => "Pad::Wrap".into(),
                3 => "Pad::Reflect".into(),
                _ => "Pad::Symmetric".into(),
            };
            format!("{}.pad(&{widths:?}, {m})", n(a))
        }
        Expr::Literal { ty, shape, values } => {
            let vs: Vec<String> = values.iter().map(|&x| ty.lit(x)).collect();
            format!("Array::from_vec(vec![{}], &{})", vs.join(", "), list(shape))
        }
        Expr::Scan { op, a, axis } => format!("{}.{}({axis})", n(a), op.method()),
        Expr::Sort { a, axis, desc } => match (axis, desc) {
            (None, _) => format!("{}.sort()", n(a)),
            (Some(ax), false) => format!("{}.sort_axis({ax})", n(a)),
            (Some(ax), true) => format!("{}.sort_axis_descending({ax})", n(a)),
        },
        Expr::Argsort { a, axis, desc, nan } => {
            let x = match nan {
                None => n(a),
                Some((m, neg)) => format!(
                    "select(&{}, {}{}::NAN, &{})",
                    n(m),
                    if *neg { "-" } else { "" },
                    ty_of(*a).name(),
                    n(a)
                ),
            };
            match (axis, desc) {
                (None, _) => format!("{x}.argsort()"),
                (Some(ax), false) => format!("{x}.argsort_axis({ax})"),
                (Some(ax), true) => format!("{x}.argsort_axis_descending({ax})"),
            }
        }
        Expr::TopK {
            a,
            k,
            axis,
            indices,
        } => format!("{}.topk({k}, {axis}).{}", n(a), *indices as u8),
        Expr::TakeAlong { a, idx, axis } => {
            format!("{}.take_along_axis(&{}, {axis})", n(a), n(idx))
        }
        Expr::Scatter {
            a,
            idx,
            values,
            axis,
            add,
        } => format!(
            "{}.{}(&{}, &{}, {axis})",
            n(a),
            if *add { "scatter_add" } else { "scatter" },
            n(idx),
            n(values)
        ),
        Expr::Complex { ty, e } => super::complex::src(names, *ty, e),
    }
}

/// Types of every variable a program binds, top level (`None` inside sections).
pub fn top_types(stmts: &[Stmt], out: &mut std::collections::HashMap<usize, Ty>) {
    for s in stmts {
        match s {
            Stmt::Let { id, ty, .. } => {
                out.insert(*id, *ty);
            }
            Stmt::Block(b) => top_types(b, out),
            Stmt::Reuse(sec) => {
                for c in &sec.calls {
                    for r in &c.2 {
                        out.insert(*r, sec.ty);
                    }
                }
            }
            _ => {}
        }
    }
}

fn stmts_src(
    out: &mut String,
    stmts: &[Stmt],
    names: Names,
    ind: usize,
    types: &std::collections::HashMap<usize, Ty>,
    sec_no: &mut usize,
) {
    let pad = " ".repeat(ind);
    let ty_of = |v: usize| types[&v];
    for s in stmts {
        match s {
            Stmt::Let { id, ty, expr } => {
                let _ = writeln!(
                    out,
                    "{pad}let {}: Array<{}> = {};",
                    names.var(*id),
                    ty.name(),
                    expr_src(names, expr, &ty_of)
                );
            }
            Stmt::Read { id, item } => {
                let m = if *item { "item" } else { "to_vec" };
                let _ = writeln!(out, "{pad}println!(\"{{:?}}\", {}.{m}()?);", names.var(*id));
            }
            Stmt::Eval(id) => {
                let _ = writeln!(out, "{pad}{}.eval()?;", names.var(*id));
            }
            Stmt::Hint(id) => {
                let _ = writeln!(out, "{pad}{}.hint_read();", names.var(*id));
            }
            Stmt::Drop(id) => {
                let _ = writeln!(out, "{pad}drop({});", names.var(*id));
            }
            Stmt::Execute => {
                let _ = writeln!(out, "{pad}Runtime::execute();");
            }
            Stmt::Block(b) => {
                let binds = s.binds();
                let vars: Vec<String> = binds.iter().map(|v| names.var(*v)).collect();
                let _ = writeln!(
                    out,
                    "{pad}let ({},) = Runtime::block(|| {{",
                    vars.join(", ")
                );
                stmts_src(out, b, names, ind + 4, types, sec_no);
                let _ = writeln!(out, "{pad}    ({},)", vars.join(", "));
                let _ = writeln!(out, "{pad}}});");
            }
            Stmt::Reuse(sec) => {
                let k = *sec_no;
                *sec_no += 1;
                let t = sec.ty.name();
                let inner = Names::Section {
                    inputs: sec.n_inputs,
                    params: sec.n_params,
                };
                let mut itypes = types.clone();
                for i in 0..sec.n_inputs + sec.n_params {
                    itypes.insert(i, sec.ty);
                }
                top_types(&sec.body, &mut itypes);
                let _ = writeln!(
                    out,
                    "{pad}let section{k} = |ins: &[&Array<{t}>], ps: &[{t}]| Runtime::reuse_named_with(\"{}\", ins, ps, &[], |ins, ps| {{",
                    section_name(sec)
                );
                let _ = writeln!(out, "{pad}    let _ = (&ins, &ps);");
                stmts_src(out, &sec.body, inner, ind + 4, &itypes, sec_no);
                let outs: Vec<String> = sec
                    .outputs
                    .iter()
                    .map(|o| format!("{}.clone()", inner.var(*o)))
                    .collect();
                let _ = writeln!(out, "{pad}    vec![{}]", outs.join(", "));
                let _ = writeln!(out, "{pad}}});");
                for (ins, ps, res) in &sec.calls {
                    let i: Vec<String> =
                        ins.iter().map(|v| format!("&{}", names.var(*v))).collect();
                    let p: Vec<String> = ps.iter().map(|v| sec.ty.lit(*v)).collect();
                    let r: Vec<String> = res.iter().map(|v| names.var(*v)).collect();
                    let _ = writeln!(
                        out,
                        "{pad}let [{}] = <[Array<{t}>; {}]>::try_from(section{k}(&[{}], &[{}])?).unwrap();",
                        r.join(", "),
                        res.len(),
                        i.join(", "),
                        p.join(", ")
                    );
                }
            }
        }
    }
}

/// A section's name in the macro cache: a hash of its body, so two different bodies (a shrunk
/// program beside its original in one process) never share an entry.
pub fn section_name(sec: &Section) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!(
        "{:?}{:?}{}{}{:?}",
        sec.ty, sec.body, sec.n_inputs, sec.n_params, sec.outputs
    )
    .hash(&mut h);
    format!("fuzz{:016x}", h.finish())
}

/// The program as a Rust `main` a user could paste.
pub fn to_rust(p: &Program) -> String {
    let mut types = std::collections::HashMap::new();
    top_types(&p.stmts, &mut types);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// arrayflow fuzzer program, seed {}",
        seed_name(p.version, p.seed)
    );
    let _ = writeln!(out, "#![allow(unused)]");
    let _ = writeln!(
        out,
        "use arrayflow::{{select, Array, Complex, Pad, Rng, Runtime, Slice}};\n\
         use arrayflow::fft::{{self, Norm}};\n\
         use arrayflow::signal::{{self, Method, Mode}};\n"
    );
    out.push_str(DATA_SRC);
    let _ = writeln!(out, "\nfn main() -> arrayflow::Result<()> {{");
    let mut k = 0;
    stmts_src(&mut out, &p.stmts, Names::Top, 4, &types, &mut k);
    let _ = writeln!(out, "    Ok(())\n}}");
    out
}
