//! The op tables. One row per op: variant, name, instruction estimate, then one CPU source per class
//! of element type it accepts:
//! - `float: |x| ..` for f32/f64, `int: |x| ..` for i32/u32 (wrapping), `boolean: |x| ..` for bool;
//! - `pred: |x| ..` float in, bool out; `cmp: |x, y| ..` any number in, bool out;
//! - `intz: |x, y| ..` integer division-like ops: the kernel fails on a zero divisor.
//! - `complex: |x| ..` complex in and out; `cpart: |x| ..` complex in, its component type out
//!   (`re`, `abs`); `ceq: |x, y| ..` complex in, bool out; `mkc: |x, y| ..` two floats in, the
//!   complex type of their type out (`x + iy`). Complex values are `Complex<F>`.
//!
//! A class a row does not name is an element type the op rejects at record time.
//! GPU targets add their source columns here (issue: GPU executors).

use super::complex::{cabs, cdiv, cexp, cln, cmul, csqrt};
use super::cpu::{
    IntElem, Real, acosh_accurate, acsc_accurate, asec_accurate, asinh_accurate, atanh_accurate,
    csch_accurate, fmax_nan, fmin_nan, fmod_floor, fsign, sech_accurate,
};
use crate::ir::DType;
use num_complex::Complex;

macro_rules! kind_dtype {
    (float, $d:expr) => {
        if $d.is_float() { Some($d) } else { None }
    };
    (int, $d:expr) => {
        if $d.is_int() { Some($d) } else { None }
    };
    (intz, $d:expr) => {
        if $d.is_int() { Some($d) } else { None }
    };
    (boolean, $d:expr) => {
        if $d == DType::Bool { Some($d) } else { None }
    };
    (pred, $d:expr) => {
        if $d.is_float() {
            Some(DType::Bool)
        } else {
            None
        }
    };
    (complex, $d:expr) => {
        if $d.is_complex() { Some($d) } else { None }
    };
    (cpart, $d:expr) => {
        if $d.is_complex() {
            Some($d.real())
        } else {
            None
        }
    };
    (ceq, $d:expr) => {
        if $d.is_complex() {
            Some(DType::Bool)
        } else {
            None
        }
    };
    (mkc, $d:expr) => {
        $d.complex()
    };
    (cmp, $d:expr) => {
        if $d.is_numeric() {
            Some(DType::Bool)
        } else {
            None
        }
    };
}

macro_rules! unary_arm {
    (float, float, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    (int, int, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    (boolean, boolean, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    (pred, pred, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    (complex, complex, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    (cpart, cpart, $f:expr, $a:ident, $o:ident) => {{
        let f = $f;
        for (o, &x) in $o.iter_mut().zip($a) {
            *o = f(x);
        }
        return;
    }};
    ($want:ident, $kind:ident, $f:expr, $a:ident, $o:ident) => {};
}

macro_rules! binary_arm {
    (float, float, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (int, int, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (int, intz, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        if $b.iter().any(|&y| y == IntElem::ZERO) {
            return Err("integer division by zero");
        }
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (boolean, boolean, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (cmp, cmp, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (complex, complex, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (ceq, ceq, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    (mkc, mkc, $f:expr, $a:ident, $b:ident, $o:ident) => {{
        let f = $f;
        for ((o, &x), &y) in $o.iter_mut().zip($a).zip($b) {
            *o = f(x, y);
        }
        return Ok(());
    }};
    ($want:ident, $kind:ident, $f:expr, $a:ident, $b:ident, $o:ident) => {};
}

macro_rules! unary_table {
    ($( $v:ident $name:literal $cost:literal $(needs [$($h:ident),*])? { $($kind:ident : $imp:expr),* } )*) => {
        /// Element-wise operations of one input (the seed's section 4.2 list).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UnaryOp { $($v),* }
        impl UnaryOp {
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$v),*];
            pub fn name(self) -> &'static str { match self { $(UnaryOp::$v => $name),* } }
            /// Estimated instructions per element.
            pub fn cost(self) -> u32 { match self { $(UnaryOp::$v => $cost),* } }
            /// Helper functions a generated kernel using this op must include.
            pub fn helpers(self) -> &'static [Helper] { match self { $(UnaryOp::$v => &[$($(Helper::$h),*)?]),* } }
            /// The result's element type for an input of `input`, or `None` if the op rejects it.
            pub fn out_dtype(self, input: DType) -> Option<DType> {
                match self { $(UnaryOp::$v => { $( if let Some(d) = kind_dtype!($kind, input) { return Some(d); } )* None }),* }
            }
        }
        /// CPU source, floats in and out.
        pub(crate) fn unary_float<F: Real>(op: UnaryOp, a: &[F], out: &mut [F]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(float, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no float source; rejected at record time", op.name())
        }
        /// CPU source, integers in and out.
        pub(crate) fn unary_int<I: IntElem>(op: UnaryOp, a: &[I], out: &mut [I]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(int, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no integer source; rejected at record time", op.name())
        }
        /// CPU source, bools in and out.
        pub(crate) fn unary_bool(op: UnaryOp, a: &[bool], out: &mut [bool]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(boolean, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no bool source; rejected at record time", op.name())
        }
        /// CPU source, float predicates.
        pub(crate) fn unary_pred<F: Real>(op: UnaryOp, a: &[F], out: &mut [bool]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(pred, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no predicate source; rejected at record time", op.name())
        }
        /// CPU source, complex in and out.
        pub(crate) fn unary_complex<F: Real>(op: UnaryOp, a: &[Complex<F>], out: &mut [Complex<F>]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(complex, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no complex source; rejected at record time", op.name())
        }
        /// CPU source, complex in, component type out.
        pub(crate) fn unary_cpart<F: Real>(op: UnaryOp, a: &[Complex<F>], out: &mut [F]) {
            match op { $(UnaryOp::$v => { $( unary_arm!(cpart, $kind, $imp, a, out); )* }),* }
            unreachable!("{} has no complex-to-real source; rejected at record time", op.name())
        }
    };
}

macro_rules! binary_table {
    ($( $v:ident $name:literal $cost:literal $(needs [$($h:ident),*])? { $($kind:ident : $imp:expr),* } )*) => {
        /// Element-wise operations of two inputs (broadcast NumPy-style).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BinaryOp { $($v),* }
        impl BinaryOp {
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$v),*];
            pub fn name(self) -> &'static str { match self { $(BinaryOp::$v => $name),* } }
            /// Estimated instructions per element.
            pub fn cost(self) -> u32 { match self { $(BinaryOp::$v => $cost),* } }
            /// Helper functions a generated kernel using this op must include.
            pub fn helpers(self) -> &'static [Helper] { match self { $(BinaryOp::$v => &[$($(Helper::$h),*)?]),* } }
            /// The result's element type for inputs of `input`, or `None` if the op rejects it.
            pub fn out_dtype(self, input: DType) -> Option<DType> {
                match self { $(BinaryOp::$v => { $( if let Some(d) = kind_dtype!($kind, input) { return Some(d); } )* None }),* }
            }
        }
        /// CPU source, floats in and out.
        pub(crate) fn binary_float<F: Real>(op: BinaryOp, a: &[F], b: &[F], out: &mut [F]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(float, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no float source; rejected at record time", op.name())
        }
        /// CPU source, integers in and out; fails on a zero divisor.
        pub(crate) fn binary_int<I: IntElem>(op: BinaryOp, a: &[I], b: &[I], out: &mut [I]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(int, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no integer source; rejected at record time", op.name())
        }
        /// CPU source, bools in and out.
        pub(crate) fn binary_bool(op: BinaryOp, a: &[bool], b: &[bool], out: &mut [bool]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(boolean, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no bool source; rejected at record time", op.name())
        }
        /// CPU source, complex in and out.
        pub(crate) fn binary_complex<F: Real>(op: BinaryOp, a: &[Complex<F>], b: &[Complex<F>], out: &mut [Complex<F>]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(complex, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no complex source; rejected at record time", op.name())
        }
        /// CPU source, complex equality.
        pub(crate) fn binary_ceq<F: Real>(op: BinaryOp, a: &[Complex<F>], b: &[Complex<F>], out: &mut [bool]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(ceq, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no complex comparison source; rejected at record time", op.name())
        }
        /// CPU source, two floats in, complex out.
        pub(crate) fn binary_mkc<F: Real>(op: BinaryOp, a: &[F], b: &[F], out: &mut [Complex<F>]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(mkc, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no float-to-complex source; rejected at record time", op.name())
        }
        /// CPU source, comparisons of any number type.
        pub(crate) fn binary_cmp<T: PartialOrd + Copy>(op: BinaryOp, a: &[T], b: &[T], out: &mut [bool]) -> Result<(), &'static str> {
            match op { $(BinaryOp::$v => { $( binary_arm!(cmp, $kind, $imp, a, b, out); )* }),* }
            unreachable!("{} has no comparison source; rejected at record time", op.name())
        }
    };
}

unary_table! {
    Neg   "neg"   1  { float: |x: F| -x, int: |x: I| x.wneg(), complex: |x: Complex<F>| -x }
    Abs   "abs"   1  { float: |x: F| x.abs(), int: |x: I| x.wabs(), cpart: cabs::<F> }
    Sign  "sign"  2  needs [Sign] { float: fsign::<F>, int: |x: I| x.sign() }
    Sqrt  "sqrt"  4  { float: |x: F| x.sqrt(), complex: csqrt::<F> }
    Rsqrt "rsqrt" 5  { float: |x: F| x.sqrt().recip() }
    Cbrt  "cbrt"  20 { float: |x: F| x.cbrt() }
    Exp   "exp"   20 { float: |x: F| x.exp_cpu(), complex: cexp::<F> }
    Exp2  "exp2"  20 { float: |x: F| x.exp2() }
    Ln    "ln"    20 { float: |x: F| x.ln_cpu(), complex: cln::<F> }
    Log10 "log10" 20 { float: |x: F| x.log10() }
    Log2  "log2"  20 { float: |x: F| x.log2() }
    Sin   "sin"   20 { float: |x: F| x.sin() }
    Cos   "cos"   20 { float: |x: F| x.cos() }
    Tan   "tan"   25 { float: |x: F| x.tan() }
    Sec   "sec"   22 { float: |x: F| x.cos().recip() }
    Csc   "csc"   22 { float: |x: F| x.sin().recip() }
    Cot   "cot"   27 { float: |x: F| x.tan().recip() }
    Asin  "asin"  25 { float: |x: F| x.asin() }
    Acos  "acos"  25 { float: |x: F| x.acos() }
    Atan  "atan"  25 { float: |x: F| x.atan() }
    Asec  "asec"  27 needs [Asec] { float: asec_accurate::<F> }
    Acsc  "acsc"  27 { float: acsc_accurate::<F> }
    Acot  "acot"  27 { float: |x: F| x.recip().atan() }
    Sinh  "sinh"  25 { float: |x: F| x.sinh() }
    Cosh  "cosh"  25 { float: |x: F| x.cosh() }
    Tanh  "tanh"  25 { float: |x: F| x.tanh() }
    Sech  "sech"  27 { float: sech_accurate::<F> }
    Csch  "csch"  27 { float: csch_accurate::<F> }
    Coth  "coth"  27 { float: |x: F| x.tanh().recip() }
    Asinh "asinh" 30 { float: asinh_accurate::<F> }
    Acosh "acosh" 30 needs [Acosh] { float: acosh_accurate::<F> }
    Atanh "atanh" 30 { float: atanh_accurate::<F> }
    Erf "erf" 30 { float: |x: F| x.erf() }
    Erfc "erfc" 30 { float: |x: F| x.erfc() }
    Floor "floor" 1  { float: |x: F| x.floor() }
    Ceil  "ceil"  1  { float: |x: F| x.ceil() }
    Trunc "trunc" 1  { float: |x: F| x.trunc() }
    Round "round" 2  { float: |x: F| x.round() }
    Not   "not"   1  { boolean: |x: bool| !x, int: |x: I| x.not() }
    IsNan "is_nan" 1 { pred: |x: F| x.is_nan() }
    IsInf "is_inf" 1 { pred: |x: F| x.is_infinite() }
    Conj  "conj"  1  { complex: |x: Complex<F>| x.conj() }
    Re    "re"    1  { cpart: |x: Complex<F>| x.re }
    Im    "im"    1  { cpart: |x: Complex<F>| x.im }
    Arg   "arg"   30 { cpart: |x: Complex<F>| x.im.atan2(x.re) }
}

binary_table! {
    Add   "add"   1  { float: |x: F, y: F| x + y, int: |x: I, y: I| x.wadd(y), complex: |x: Complex<F>, y: Complex<F>| x + y }
    Sub   "sub"   1  { float: |x: F, y: F| x - y, int: |x: I, y: I| x.wsub(y), complex: |x: Complex<F>, y: Complex<F>| x - y }
    Mul   "mul"   1  { float: |x: F, y: F| x * y, int: |x: I, y: I| x.wmul(y), complex: cmul::<F> }
    Div   "div"   4  { float: |x: F, y: F| x / y, intz: |x: I, y: I| x.wdiv(y), complex: cdiv::<F> }
    Rem   "rem"   8  { float: |x: F, y: F| x % y, intz: |x: I, y: I| x.wrem(y) }
    Mod   "mod"   9  needs [FloorMod] { float: fmod_floor::<F>, intz: |x: I, y: I| x.wmod(y) }
    Pow   "pow"   40 { float: |x: F, y: F| x.powf(y) }
    Atan2 "atan2" 30 { float: |x: F, y: F| x.atan2(y) }
    Min   "min"   1  needs [NanMinMax] { float: fmin_nan::<F>, int: |x: I, y: I| if y < x { y } else { x } }
    Max   "max"   1  needs [NanMinMax] { float: fmax_nan::<F>, int: |x: I, y: I| if y > x { y } else { x } }
    Lt    "lt"    1  { cmp: |x: T, y: T| x < y }
    Le    "le"    1  { cmp: |x: T, y: T| x <= y }
    Gt    "gt"    1  { cmp: |x: T, y: T| x > y }
    Ge    "ge"    1  { cmp: |x: T, y: T| x >= y }
    Eq    "eq"    1  { cmp: |x: T, y: T| x == y, boolean: |x: bool, y: bool| x == y, ceq: |x: Complex<F>, y: Complex<F>| x.re == y.re && x.im == y.im }
    Ne    "ne"    1  { cmp: |x: T, y: T| x != y, boolean: |x: bool, y: bool| x != y, ceq: |x: Complex<F>, y: Complex<F>| x.re != y.re || x.im != y.im }
    And   "and"   1  { boolean: |x: bool, y: bool| x & y, int: |x: I, y: I| x.and(y) }
    Or    "or"    1  { boolean: |x: bool, y: bool| x | y, int: |x: I, y: I| x.or(y) }
    Xor   "xor"   1  { boolean: |x: bool, y: bool| x ^ y, int: |x: I, y: I| x.xor(y) }
    Nand  "nand"  2  { boolean: |x: bool, y: bool| !(x & y) }
    Nor   "nor"   2  { boolean: |x: bool, y: bool| !(x | y) }
    Complex "complex" 2 { mkc: |x: F, y: F| Complex::new(x, y) }
}

/// Helper functions that op sources call. A kernel includes each one it needs once; generated
/// source targets emit their definitions ahead of the kernel body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Helper {
    /// -1/0/1 keeping NaN and signed zero (`cpu::fsign`).
    Sign,
    /// Floored modulo (`cpu::fmod_floor`, `IntElem::wmod`).
    FloorMod,
    /// NaN-propagating min and max (`cpu::fmin_nan`, `cpu::fmax_nan`).
    NanMinMax,
    /// The random generators (`cpu::philox4x32_10`, `cpu::hash32`) and their distributions.
    Philox,
    /// Inverse hyperbolic cosine accurate near 1 (`cpu::acosh_accurate`).
    Acosh,
    /// Inverse secant accurate near +-1 (`cpu::asec_accurate`).
    Asec,
}

/// Reductions (the first stage fuses with producers; the final stage combines tile partials).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
    Any,
    All,
}

impl ReduceOp {
    pub const ALL: &'static [ReduceOp] = &[
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Any,
        ReduceOp::All,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }
    /// Estimated instructions per input element.
    pub fn cost(self) -> u32 {
        match self {
            ReduceOp::ArgMax | ReduceOp::ArgMin => 3,
            _ => 1,
        }
    }
    /// The result's element type for an input of `input`, or `None` if the op rejects it.
    pub fn out_dtype(self, input: DType) -> Option<DType> {
        match self {
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => {
                input.is_numeric().then_some(input)
            }
            ReduceOp::ArgMax | ReduceOp::ArgMin => input.is_numeric().then_some(DType::U32),
            ReduceOp::Any | ReduceOp::All => (input == DType::Bool).then_some(DType::Bool),
        }
    }
    /// Whether the reduction of zero elements has a value.
    pub fn has_identity(self) -> bool {
        matches!(
            self,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Any | ReduceOp::All
        )
    }
}
