//! The seeded program generator. It evaluates the oracle as it goes and keeps only statements
//! whose values stay in the checked domain (finite, not huge, not subnormal, mostly decidable),
//! so every generated program is valid and a failure is the crate's (or the oracle's).
//!
//! Versions: a seed names a program only together with the generator version that expands it,
//! so a new op never changes what an old seed means (`corpus.txt` keeps its seeds' programs).
//! Version 1 is issue 18's op mix (bare seeds); version 2 (seeds written `v2:N`)
//! adds issue 20's ordering and data-movement ops ([`Gen::ordering`]); version 3 ([`VERSION`],
//! `v3:N`) adds issue 22's complex arithmetic, transforms and convolutions (`complex.rs`). Every draw a later version
//! adds sits behind a version test, so an earlier version's draws are exactly as they were.

use super::oracle::{self, OArr};
use super::program::{Bin, Expr, Opd, Program, Red, Scan, Section, SliceAxis, Stmt, Ty, Un};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// Where statements go and which variables they may use.
pub(super) struct Ctx {
    env: oracle::Env,
    pub(super) live: Vec<usize>,
    stmts: Vec<Stmt>,
    next: usize,
    /// Inside a code reuse section: no data uploads, no reads.
    section: bool,
    /// Inside a block: no reads, evals or drops.
    block: bool,
}

impl Ctx {
    pub(super) fn ty(&self, id: usize) -> Ty {
        self.env[id].as_ref().unwrap().ty
    }
    pub(super) fn arr(&self, id: usize) -> &OArr {
        self.env[id].as_ref().unwrap()
    }
    fn bind(&mut self, ty: Ty, expr: Expr, o: OArr) -> usize {
        let id = self.next;
        self.next += 1;
        if self.env.len() <= id {
            self.env.resize(id + 1, None);
        }
        self.env[id] = Some(o);
        self.live.push(id);
        self.stmts.push(Stmt::Let { id, ty, expr });
        id
    }
}

/// The newest generator version (what fresh seeds use).
pub const VERSION: u32 = 3;

/// Version 2: the share of `let`s (outside sections) that draw an ordering or data-movement op.
const ORDERING_SHARE: f64 = 0.25;

/// Version 3: the share of `let`s (outside sections) that draw a complex or spectral expression
/// (`complex.rs`).
const COMPLEX_SHARE: f64 = 0.2;

pub struct Gen {
    pub(super) rng: StdRng,
    /// The generator version (module comment).
    version: u32,
    /// Whether this program has large arrays (the native tier and device vector paths).
    large: bool,
    /// Elements the program has allocated so far (kept modest for device executors).
    elements: usize,
}

/// Largest magnitude kept, by type (errors stay meaningful below it).
fn limit(ty: Ty) -> f64 {
    match ty {
        Ty::F32 => 1e6,
        Ty::F64 => 1e12,
        _ => f64::INFINITY,
    }
}

/// Whether an oracle result is worth keeping.
fn acceptable(o: &OArr) -> bool {
    let mut dc = 0;
    for (&v, &e) in o.v.iter().zip(&o.e) {
        if !v.is_finite() {
            return false;
        }
        if e.is_infinite() {
            dc += 1;
            continue;
        }
        let huge = v.abs() > limit(o.ty);
        let tiny = v != 0.0 && v.abs() < 1e-20;
        if o.ty.is_float() && (huge || tiny || e > 0.51 * v.abs().max(1.0)) {
            return false;
        }
    }
    dc * 2 <= o.v.len()
}

const DIMS: [usize; 14] = [1, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 6];

impl Gen {
    pub(super) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }
    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn shape(&mut self) -> Vec<usize> {
        if self.large && self.chance(0.3) {
            self.large = self.chance(0.3);
            return self
                .pick(&[
                    &[4099][..],
                    &[64, 67],
                    &[5003],
                    &[3, 1500],
                    &[8, 9, 65],
                    &[65600],
                ])
                .to_vec();
        }
        let rank = self.pick(&[0, 1, 1, 2, 2, 2, 3, 3, 4]);
        let mut s: Vec<usize> = (0..rank).map(|_| self.pick(&DIMS)).collect();
        while s.iter().product::<usize>() > 2048 {
            let i = self.rng.random_range(0..s.len());
            s[i] = s[i].div_ceil(2);
        }
        s
    }

    fn scalar(&mut self, ty: Ty) -> f64 {
        let v = match ty {
            Ty::F32 | Ty::F64 => {
                self.pick(&[0.5, 1.5, 2.0, -3.25, 0.1, 7.0, -0.75, 1e-3, 100.0, 0.0])
            }
            Ty::I32 => self.pick(&[
                0.0,
                1.0,
                2.0,
                3.0,
                -1.0,
                -7.0,
                100.0,
                65535.0,
                i32::MAX as f64,
                i32::MIN as f64,
            ]),
            Ty::U32 => self.pick(&[
                0.0,
                1.0,
                2.0,
                3.0,
                7.0,
                100.0,
                u32::MAX as f64,
                2147483648.0,
            ]),
            Ty::Bool => self.pick(&[0.0, 1.0]),
        };
        ty.round(v)
    }

    fn range(&mut self, ty: Ty) -> (f64, f64) {
        match ty {
            Ty::F32 | Ty::F64 => self.pick(&[
                (-1.0, 1.0),
                (-10.0, 10.0),
                (0.0, 1.0),
                (1.0, 5.0),
                (-100.0, 100.0),
                (0.5, 2.0),
            ]),
            Ty::I32 => self.pick(&[(-20.0, 20.0), (-2147483648.0, 2147483648.0), (1.0, 9.0)]),
            Ty::U32 => self.pick(&[(0.0, 50.0), (0.0, 4294967296.0), (1.0, 9.0)]),
            Ty::Bool => (0.0, 1.0),
        }
    }

    /// Evaluates `expr` and binds it when acceptable.
    pub(super) fn try_bind(&mut self, cx: &mut Ctx, expr: Expr) -> Option<usize> {
        let o = oracle::eval(&expr, &cx.env).ok()?;
        if !acceptable(&o) || o.v.is_empty() {
            return None;
        }
        self.elements += o.v.len();
        let ty = o.ty;
        Some(cx.bind(ty, expr, o))
    }

    pub(super) fn leaf(&mut self, cx: &mut Ctx, ty: Ty, shape: Vec<usize>) -> Option<usize> {
        let seed = self.rng.random::<u32>() as u64;
        let k = if cx.section {
            self.rng.random_range(1..3)
        } else {
            self.rng.random_range(0..6)
        };
        let expr = match k {
            0 | 3 | 4 => {
                let (lo, hi) = self.range(ty);
                Expr::Input {
                    ty,
                    shape,
                    seed,
                    lo,
                    hi,
                }
            }
            1 => Expr::Full {
                ty,
                shape,
                value: self.scalar(ty),
            },
            2 if ty.is_numeric() && !shape.is_empty() => {
                let axis = self.rng.random_range(0..shape.len());
                Expr::Iota { ty, shape, axis }
            }
            5 if ty.is_float() => Expr::Uniform { ty, shape, seed },
            _ => {
                let (lo, hi) = self.range(ty);
                if cx.section {
                    return None;
                }
                Expr::Input {
                    ty,
                    shape,
                    seed,
                    lo,
                    hi,
                }
            }
        };
        self.try_bind(cx, expr)
    }

    fn any_ty(&mut self) -> Ty {
        self.pick(&[Ty::F32, Ty::F32, Ty::F64, Ty::I32, Ty::U32, Ty::Bool])
    }

    /// A live variable, optionally of a given type.
    fn var(&mut self, cx: &Ctx, ty: Option<Ty>) -> Option<usize> {
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| ty.is_none_or(|t| cx.ty(v) == t))
            .collect();
        if c.is_empty() {
            None
        } else {
            Some(self.pick(&c))
        }
    }

    /// A shape `b` that broadcasts with `a` to `a`.
    fn sub_shape(&mut self, a: &[usize]) -> Vec<usize> {
        let drop = if a.is_empty() {
            0
        } else {
            self.rng.random_range(0..=a.len())
        };
        a[drop..]
            .iter()
            .map(|&d| if self.chance(0.3) { 1 } else { d })
            .collect()
    }

    /// A second operand for `x`: a scalar, a live variable that broadcasts with it, or a new leaf.
    fn operand(&mut self, cx: &mut Ctx, x: usize) -> Option<Opd> {
        let (ty, shape) = (cx.ty(x), cx.arr(x).shape.clone());
        let r = self.rng.random_range(0..10);
        if r < 3 {
            return Some(Opd::Scalar(self.scalar(ty)));
        }
        if r < 7 {
            let c: Vec<usize> = cx
                .live
                .iter()
                .copied()
                .filter(|&v| {
                    cx.ty(v) == ty
                        && oracle::broadcast_shape(&cx.arr(v).shape, &shape)
                            .is_some_and(|s| s.iter().product::<usize>() <= 70000)
                })
                .collect();
            if !c.is_empty() {
                return Some(Opd::Var(self.pick(&c)));
            }
        }
        let s = self.sub_shape(&shape);
        self.leaf(cx, ty, s).map(Opd::Var)
    }

    fn unary(&mut self, cx: &mut Ctx) -> Option<usize> {
        let x = self.var(cx, None)?;
        let ty = cx.ty(x);
        let op = match ty {
            Ty::F32 | Ty::F64 => match self.rng.random_range(0..10) {
                0 => self.pick(&[Un::Neg, Un::Abs, Un::Sign, Un::IsNan, Un::IsInf]),
                1 => Un::Powi(self.pick(&[-2, -1, 0, 2, 3, 4])),
                2 => Un::Pow(ty.round(self.pick(&[0.5, 1.5, 2.0, -0.5, 3.0, 0.3]))),
                3 => {
                    let (a, b) = (self.scalar(ty), self.scalar(ty));
                    Un::Clamp(a.min(b), a.max(b))
                }
                4 => Un::Cast(self.any_ty()),
                _ => self.pick(&Un::FLOAT_FNS),
            },
            Ty::I32 | Ty::U32 => match self.rng.random_range(0..6) {
                0 => {
                    let (a, b) = (self.scalar(ty), self.scalar(ty));
                    Un::Clamp(a.min(b), a.max(b))
                }
                1 | 2 => Un::Cast(self.any_ty()),
                _ => self.pick(&[Un::Neg, Un::Abs, Un::Sign, Un::Not]),
            },
            Ty::Bool => {
                if self.chance(0.5) {
                    Un::Not
                } else {
                    Un::Cast(self.any_ty())
                }
            }
        };
        self.try_bind(cx, Expr::Unary { op, a: x })
    }

    fn binary(&mut self, cx: &mut Ctx) -> Option<usize> {
        let x = self.var(cx, None)?;
        let ty = cx.ty(x);
        let cmp = [Bin::Lt, Bin::Le, Bin::Gt, Bin::Ge, Bin::Eq, Bin::Ne];
        let op = match ty {
            Ty::F32 | Ty::F64 => {
                if self.chance(0.25) {
                    self.pick(&cmp)
                } else {
                    self.pick(&[
                        Bin::Add,
                        Bin::Sub,
                        Bin::Mul,
                        Bin::Div,
                        Bin::Rem,
                        Bin::Modulo,
                        Bin::Min,
                        Bin::Max,
                        Bin::Atan2,
                        Bin::Add,
                        Bin::Mul,
                    ])
                }
            }
            Ty::I32 | Ty::U32 => {
                if self.chance(0.25) {
                    self.pick(&cmp)
                } else {
                    self.pick(&[
                        Bin::Add,
                        Bin::Sub,
                        Bin::Mul,
                        Bin::Div,
                        Bin::Rem,
                        Bin::Modulo,
                        Bin::Min,
                        Bin::Max,
                        Bin::And,
                        Bin::Or,
                        Bin::Xor,
                    ])
                }
            }
            Ty::Bool => self.pick(&[
                Bin::And,
                Bin::Or,
                Bin::Xor,
                Bin::Nand,
                Bin::Nor,
                Bin::Eq,
                Bin::Ne,
            ]),
        };
        let y = self.operand(cx, x)?;
        let (a, b) = match y {
            Opd::Scalar(_)
                if matches!(op, Bin::Add | Bin::Sub | Bin::Mul | Bin::Div | Bin::Rem)
                    && ty.is_numeric()
                    && self.chance(0.4) =>
            {
                (y, Opd::Var(x))
            }
            Opd::Var(_) if self.chance(0.3) && !matches!(op, Bin::Rem | Bin::Modulo) => {
                (y, Opd::Var(x))
            }
            _ => (Opd::Var(x), y),
        };
        if op == Bin::Atan2 && matches!(a, Opd::Scalar(_)) {
            return None;
        }
        self.try_bind(cx, Expr::Binary { op, a, b })
    }

    fn select(&mut self, cx: &mut Ctx) -> Option<usize> {
        let c = match self.var(cx, Some(Ty::Bool)) {
            Some(c) => c,
            None => {
                let s = self.shape();
                self.leaf(cx, Ty::Bool, s)?
            }
        };
        let x = self.var(cx, None)?;
        let s = oracle::broadcast_shape(&cx.arr(c).shape, &cx.arr(x).shape)?;
        // A condition of shape [n, 1] and an operand of shape [m] make [n, m]: since version 2
        // held to `operand`'s size (version 2's ops make more extents of 1; v2:10100709 spent
        // 90 s in the oracle).
        if self.version >= 2 && s.iter().product::<usize>() > 70000 {
            return None;
        }
        let y = self.operand(cx, x)?;
        let (a, b) = if self.chance(0.5) {
            (Opd::Var(x), y)
        } else {
            (y, Opd::Var(x))
        };
        self.try_bind(cx, Expr::Select { c, a, b })
    }

    fn reduce(&mut self, cx: &mut Ctx) -> Option<usize> {
        let x = self.var(cx, None)?;
        let (ty, rank) = (cx.ty(x), cx.arr(x).shape.len());
        let op = match ty {
            Ty::Bool => self.pick(&[Red::Any, Red::All, Red::Count]),
            Ty::I32 | Ty::U32 => self.pick(&[
                Red::Sum,
                Red::Prod,
                Red::Min,
                Red::Max,
                Red::ArgMin,
                Red::ArgMax,
            ]),
            _ => self.pick(&[
                Red::Sum,
                Red::Sum,
                Red::Prod,
                Red::Min,
                Red::Max,
                Red::ArgMin,
                Red::ArgMax,
                Red::Mean,
                Red::Variance,
                Red::Stddev,
                Red::NormL1,
                Red::NormL2,
                Red::NormInf,
            ]),
        };
        let axes = if rank == 0 || op == Red::Count || self.chance(0.35) {
            None
        } else if op.has_axes() && rank >= 2 && self.chance(0.4) {
            let mut ax: Vec<usize> = (0..rank).filter(|_| self.chance(0.5)).collect();
            if ax.is_empty() {
                ax.push(0);
            }
            if ax.len() > 1 && self.chance(0.3) {
                ax.reverse();
            }
            Some(ax)
        } else {
            Some(vec![self.rng.random_range(0..rank)])
        };
        self.try_bind(cx, Expr::Reduce { op, a: x, axes })
    }

    fn view(&mut self, cx: &mut Ctx) -> Option<usize> {
        let x = self.var(cx, None)?;
        let shape = cx.arr(x).shape.clone();
        let n: usize = shape.iter().product();
        let rank = shape.len();
        let expr = match self.rng.random_range(0..7) {
            5 if rank >= 1 => {
                let axis = self.rng.random_range(0..rank);
                let reach = 2 * n as i64 + 3;
                let shift = self.rng.random_range(-reach..=reach) as isize;
                Expr::Roll { a: x, shift, axis }
            }
            6 if rank >= 1 => {
                let k = self.rng.random_range(1..=rank);
                let widths: Vec<(usize, usize)> = shape[..k]
                    .iter()
                    .map(|&d| {
                        let w = [0, 1, 2, d, 2 * d + 1];
                        (self.pick(&w), self.pick(&w))
                    })
                    .collect();
                let empty = shape[..k].contains(&0);
                let mode = if empty {
                    0
                } else {
                    self.rng.random_range(0..5u8)
                };
                let c = self.pick(&[0.0, 1.0, -2.5, 7.0]);
                Expr::Pad {
                    a: x,
                    widths,
                    mode,
                    c,
                }
            }
            0 => {
                // Split n's factors over a random rank.
                let mut f = vec![];
                let mut m = n;
                let mut p = 2;
                while m > 1 {
                    while m.is_multiple_of(p) {
                        f.push(p);
                        m /= p;
                    }
                    p += 1;
                }
                let r = self
                    .rng
                    .random_range(0..=4usize)
                    .max(if n > 1 { 1 } else { 0 });
                let mut s = vec![1; r];
                for q in f {
                    let i = self.rng.random_range(0..r);
                    s[i] *= q;
                }
                Expr::Reshape { a: x, shape: s }
            }
            1 if rank >= 1 => {
                let mut perm: Vec<usize> = (0..rank).collect();
                for i in (1..rank).rev() {
                    let j = self.rng.random_range(0..=i);
                    perm.swap(i, j);
                }
                Expr::Permute { a: x, perm }
            }
            2 if rank >= 1 => {
                let k = self.rng.random_range(1..=rank);
                let axes: Vec<SliceAxis> = shape[..k].iter().map(|&d| self.slice_axis(d)).collect();
                Expr::Slice { a: x, axes }
            }
            3 => {
                let lead = self
                    .rng
                    .random_range(0..=(4usize.saturating_sub(rank)).min(2));
                let mut s: Vec<usize> = (0..lead).map(|_| self.pick(&[1, 2, 3, 5])).collect();
                s.extend(
                    shape
                        .iter()
                        .map(|&d| if d == 1 { self.pick(&[1, 2, 4, 7]) } else { d }),
                );
                Expr::Broadcast { a: x, shape: s }
            }
            _ => {
                let extra = self.rng.random_range(0..=1usize);
                let reps: Vec<usize> = (0..rank + extra)
                    .map(|_| self.pick(&[1, 1, 2, 3]))
                    .collect();
                Expr::Tile { a: x, reps }
            }
        };
        if let Expr::Broadcast { shape, .. } | Expr::Reshape { shape, .. } = &expr
            && shape.iter().product::<usize>() > 70000
        {
            return None;
        }
        self.try_bind(cx, expr)
    }

    fn slice_axis(&mut self, d: usize) -> SliceAxis {
        let di = d as isize;
        let step = self.pick(&[1, 1, 2, 3, -1, -2]);
        if step > 0 {
            let s = self.rng.random_range(0..d) as isize;
            let e = self.rng.random_range(s as i64 + 1..=di as i64) as isize;
            let start = if self.chance(0.2) {
                Some(s - di)
            } else if s == 0 && self.chance(0.5) {
                None
            } else {
                Some(s)
            };
            let end = if e == di && self.chance(0.5) {
                None
            } else {
                Some(e)
            };
            (start, end, step)
        } else {
            let s = self.rng.random_range(0..d) as isize;
            let start = if s == di - 1 && self.chance(0.5) {
                None
            } else if self.chance(0.2) {
                Some(s - di)
            } else {
                Some(s)
            };
            let end = if s == 0 || self.chance(0.5) {
                None
            } else {
                Some(self.rng.random_range(0..s as i64) as isize)
            };
            (start, end, step)
        }
    }

    fn intrinsic(&mut self, cx: &mut Ctx) -> Option<usize> {
        match self.rng.random_range(0..3) {
            0 => {
                let ty = self.pick(&[Ty::F32, Ty::F32, Ty::F64]);
                let c: Vec<usize> = cx
                    .live
                    .iter()
                    .copied()
                    .filter(|&v| cx.ty(v) == ty && cx.arr(v).shape.len() == 2)
                    .collect();
                let a = if !c.is_empty() && self.chance(0.7) {
                    self.pick(&c)
                } else {
                    let s = vec![self.pick(&DIMS), self.pick(&DIMS)];
                    self.leaf(cx, ty, s)?
                };
                let k = cx.arr(a).shape[1];
                let c: Vec<usize> = cx
                    .live
                    .iter()
                    .copied()
                    .filter(|&v| {
                        cx.ty(v) == ty && cx.arr(v).shape.len() == 2 && cx.arr(v).shape[0] == k
                    })
                    .collect();
                let b = if !c.is_empty() && self.chance(0.5) {
                    self.pick(&c)
                } else {
                    let n = if self.large {
                        self.pick(&[64, 100])
                    } else {
                        self.pick(&DIMS)
                    };
                    self.leaf(cx, ty, vec![k, n])?
                };
                self.try_bind(cx, Expr::Matmul { a, b })
            }
            1 => {
                let a = self.var(cx, None)?;
                let shape = cx.arr(a).shape.clone();
                if shape.is_empty() {
                    return None;
                }
                let axis = self.rng.random_range(0..shape.len());
                let ity = self.pick(&[Ty::I32, Ty::U32]);
                let ishape: Vec<usize> = (0..self.pick(&[0, 1, 1, 2]))
                    .map(|_| self.pick(&[1, 2, 3, 5, 8]))
                    .collect();
                let seed = self.rng.random::<u32>() as u64;
                let idx = self.try_bind(
                    cx,
                    Expr::Input {
                        ty: ity,
                        shape: ishape,
                        seed,
                        lo: 0.0,
                        hi: shape[axis] as f64,
                    },
                )?;
                self.try_bind(cx, Expr::Gather { a, idx, axis })
            }
            _ => {
                let a = self.var(cx, None)?;
                let (ty, shape) = (cx.ty(a), cx.arr(a).shape.clone());
                if shape.is_empty() {
                    return None;
                }
                let axis = self.rng.random_range(0..shape.len());
                let mut parts = vec![a];
                for _ in 0..self.rng.random_range(1..=2) {
                    let c: Vec<usize> = cx
                        .live
                        .iter()
                        .copied()
                        .filter(|&v| {
                            let s = &cx.arr(v).shape;
                            cx.ty(v) == ty
                                && s.len() == shape.len()
                                && (0..s.len()).all(|d| d == axis || s[d] == shape[d])
                        })
                        .collect();
                    let p = if !c.is_empty() && self.chance(0.5) {
                        self.pick(&c)
                    } else {
                        let mut s = shape.clone();
                        s[axis] = self.pick(&[1, 2, 3, 7]);
                        self.leaf(cx, ty, s)?
                    };
                    parts.push(p);
                }
                self.try_bind(cx, Expr::Concat { parts, axis })
            }
        }
    }

    /// Whether every element of `v` is exact (error 0).
    fn exact(cx: &Ctx, v: usize) -> bool {
        cx.arr(v).e.iter().all(|&e| e == 0.0)
    }

    /// A shape of rank 1 or more (from [`Gen::shape`]).
    pub(super) fn shape_r1(&mut self) -> Vec<usize> {
        let mut s = self.shape();
        if s.is_empty() {
            s.push(self.pick(&DIMS));
        }
        s
    }

    /// Version 2's ops (issue 20): scans, sorts, `take_along_axis` and scatters. All of them
    /// intrinsics, so (as matmul, gather and concat) never inside a code reuse section.
    fn ordering(&mut self, cx: &mut Ctx) -> Option<usize> {
        match self.rng.random_range(0..10) {
            0..=2 => self.scan(cx),
            3..=5 => self.sort(cx),
            6 | 7 => self.take_along(cx),
            _ => self.scatter(cx),
        }
    }

    /// A live variable of a number type and rank 1 or more that `ok` accepts.
    fn numeric_var(&mut self, cx: &Ctx, ok: impl Fn(usize) -> bool) -> Option<usize> {
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| cx.ty(v).is_numeric() && !cx.arr(v).shape.is_empty() && ok(v))
            .collect();
        (!c.is_empty()).then(|| self.pick(&c))
    }

    fn scan(&mut self, cx: &mut Ctx) -> Option<usize> {
        let op = self.pick(&[Scan::Sum, Scan::Sum, Scan::Prod, Scan::Max, Scan::Min]);
        let a = if op == Scan::Prod && self.chance(0.5) {
            // A fresh input whose running products stay in range (the oracle refuses a float
            // cumprod that could overflow in any partial product).
            let ty = self.pick(&[Ty::F32, Ty::F32, Ty::F64, Ty::I32, Ty::U32]);
            let (lo, hi) = if ty.is_float() {
                self.pick(&[(0.5, 2.0), (-1.5, 1.5), (0.9, 1.1)])
            } else {
                (-3.0, 4.0)
            };
            let (shape, seed) = (self.shape_r1(), self.rng.random::<u32>() as u64);
            self.try_bind(
                cx,
                Expr::Input {
                    ty,
                    shape,
                    seed,
                    lo,
                    hi,
                },
            )?
        } else {
            self.numeric_var(cx, |_| true)?
        };
        let axis = self.rng.random_range(0..cx.arr(a).shape.len());
        self.try_bind(cx, Expr::Scan { op, a, axis })
    }

    /// Data with many ties and both zeros, written out (at most a few hundred elements).
    fn tie_literal(&mut self, cx: &mut Ctx) -> Option<usize> {
        let ty = self.pick(&[Ty::F32, Ty::F32, Ty::F64, Ty::I32, Ty::U32]);
        let rank = self.pick(&[1, 1, 2, 2, 3]);
        let mut shape: Vec<usize> = (0..rank)
            .map(|_| self.pick(&[1, 2, 3, 5, 7, 8, 9, 16, 17, 33]))
            .collect();
        while shape.iter().product::<usize>() > 300 {
            let i = self.rng.random_range(0..rank);
            shape[i] = shape[i].div_ceil(2);
        }
        let pool: &[f64] = match ty {
            Ty::F32 | Ty::F64 => &[-0.0, 0.0, 0.0, 1.0, -1.0, 2.5, -3.0, 7.0, 1e-3],
            Ty::I32 => &[-2.0, -1.0, 0.0, 1.0, 3.0, 2147483647.0, -2147483648.0],
            _ => &[0.0, 1.0, 2.0, 7.0, 4294967295.0, 2147483648.0],
        };
        let values = (0..shape.iter().product::<usize>())
            .map(|_| self.pick(pool))
            .collect();
        self.try_bind(cx, Expr::Literal { ty, shape, values })
    }

    /// Sorted values, argsort (plain or with NaNs through a mask) and topk. Positions are
    /// checked exactly, so they are taken only of exact values (inputs, integers, views of them,
    /// ...): two inexact values within their errors of each other may legitimately come out in
    /// either order, and an oracle with tolerances cannot say which. Sorted values are sound
    /// for any input (the oracle bounds the `k`-th value by the `k`-th of the interval ends).
    fn sort(&mut self, cx: &mut Ctx) -> Option<usize> {
        // 0, 1: sort; 2, 3: argsort; 4: topk values; 5: topk positions.
        let kind = self.rng.random_range(0..6);
        let positions = matches!(kind, 2 | 3 | 5);
        let a = if self.chance(0.3) {
            self.tie_literal(cx)?
        } else {
            let ok = |v: usize| {
                let e = &cx.arr(v).e;
                if positions {
                    e.iter().all(|&e| e == 0.0)
                } else {
                    e.iter().all(|e| e.is_finite())
                }
            };
            match self.numeric_var(cx, ok) {
                Some(v) => v,
                None => {
                    let (ty, s) = (
                        self.pick(&[Ty::F32, Ty::F64, Ty::I32, Ty::U32]),
                        self.shape_r1(),
                    );
                    self.leaf(cx, ty, s)?
                }
            }
        };
        let (ty, shape) = (cx.ty(a), cx.arr(a).shape.clone());
        let rank = shape.len();
        let axis = if kind >= 4 || self.chance(0.8) {
            Some(self.rng.random_range(0..rank))
        } else {
            None
        };
        let desc = axis.is_some() && self.chance(0.5);
        let expr = match kind {
            0 | 1 => Expr::Sort { a, axis, desc },
            2 | 3 => {
                let nan = if ty.is_float() && self.chance(0.3) {
                    let c: Vec<usize> = cx
                        .live
                        .iter()
                        .copied()
                        .filter(|&m| {
                            cx.ty(m) == Ty::Bool
                                && Self::exact(cx, m)
                                && oracle::broadcast_shape(&cx.arr(m).shape, &shape).as_ref()
                                    == Some(&shape)
                        })
                        .collect();
                    let m = if !c.is_empty() && self.chance(0.5) {
                        self.pick(&c)
                    } else {
                        let s = self.sub_shape(&shape);
                        self.leaf(cx, Ty::Bool, s)?
                    };
                    Some((m, self.chance(0.5)))
                } else {
                    None
                };
                Expr::Argsort { a, axis, desc, nan }
            }
            _ => {
                let (axis, dim) = (axis.unwrap(), shape[axis.unwrap()]);
                let k = if self.chance(0.5) {
                    dim.min(self.pick(&[1, 2, 3]))
                } else {
                    self.rng.random_range(1..=dim)
                };
                Expr::TopK {
                    a,
                    k,
                    axis,
                    indices: kind == 5,
                }
            }
        };
        self.try_bind(cx, expr)
    }

    fn take_along(&mut self, cx: &mut Ctx) -> Option<usize> {
        let a = self.var(cx, None)?;
        let sa = cx.arr(a).shape.clone();
        let rank = sa.len();
        if rank == 0 {
            return None;
        }
        let axis = self.rng.random_range(0..rank);
        let n = sa[axis];
        // An exact integer variable that fits (argsort's positions often do), or a fresh input.
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| {
                let (x, si) = (cx.arr(v), &cx.arr(v).shape);
                x.ty.is_int()
                    && si.len() == rank
                    && (0..rank).all(|d| d == axis || si[d] == sa[d] || si[d] == 1 || sa[d] == 1)
                    && x.v
                        .iter()
                        .zip(&x.e)
                        .all(|(&v, &e)| e == 0.0 && v >= 0.0 && v < n as f64)
            })
            .collect();
        let idx = if !c.is_empty() && self.chance(0.6) {
            self.pick(&c)
        } else {
            let shape: Vec<usize> = (0..rank)
                .map(|d| {
                    if d == axis {
                        self.pick(&[1, 2, 3, 5, n, n + 1])
                    } else if sa[d] == 1 && self.chance(0.3) {
                        self.pick(&[2, 3])
                    } else if self.chance(0.2) {
                        1
                    } else {
                        sa[d]
                    }
                })
                .collect();
            let (ty, seed) = (
                self.pick(&[Ty::I32, Ty::U32]),
                self.rng.random::<u32>() as u64,
            );
            self.try_bind(
                cx,
                Expr::Input {
                    ty,
                    shape,
                    seed,
                    lo: 0.0,
                    hi: n as f64,
                },
            )?
        };
        let si = &cx.arr(idx).shape;
        let out: usize = (0..rank).map(|d| si[d].max(sa[d])).product();
        if out > 70000 {
            return None;
        }
        self.try_bind(cx, Expr::TakeAlong { a, idx, axis })
    }

    /// `scatter_add` with duplicate indices (some forced), `scatter` with distinct indices and
    /// now and then duplicates (the last wins, as documented).
    fn scatter(&mut self, cx: &mut Ctx) -> Option<usize> {
        let add = self.chance(0.5);
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| !cx.arr(v).shape.is_empty() && (!add || cx.ty(v).is_numeric()))
            .collect();
        if c.is_empty() {
            return None;
        }
        let a = self.pick(&c);
        let (ty, sa) = (cx.ty(a), cx.arr(a).shape.clone());
        let axis = self.rng.random_range(0..sa.len());
        let n = sa[axis];
        let mut ishape = self
            .pick(&[&[][..], &[1], &[2], &[3], &[5], &[8], &[2, 3]])
            .to_vec();
        let distinct = !add && self.chance(0.75);
        if distinct && ishape.iter().product::<usize>() > n {
            ishape = vec![n];
        }
        let m: usize = ishape.iter().product();
        let mut values: Vec<f64> = vec![];
        while values.len() < m {
            let k = self.rng.random_range(0..n) as f64;
            if !distinct || !values.contains(&k) {
                values.push(k);
            }
        }
        if !distinct && m >= 2 && self.chance(0.5) {
            let (i, j) = (self.rng.random_range(0..m), self.rng.random_range(0..m));
            values[j] = values[i];
        }
        let ity = self.pick(&[Ty::I32, Ty::U32]);
        let idx = self.try_bind(
            cx,
            Expr::Literal {
                ty: ity,
                shape: ishape.clone(),
                values,
            },
        )?;
        let gshape: Vec<usize> = sa[..axis]
            .iter()
            .chain(&ishape)
            .chain(&sa[axis + 1..])
            .copied()
            .collect();
        if gshape.iter().product::<usize>() > 70000 {
            return None;
        }
        let c: Vec<usize> = cx
            .live
            .iter()
            .copied()
            .filter(|&v| cx.ty(v) == ty && cx.arr(v).shape == gshape)
            .collect();
        let values = if !c.is_empty() && self.chance(0.4) {
            self.pick(&c)
        } else {
            let s = self.sub_shape(&gshape);
            self.leaf(cx, ty, s)?
        };
        self.try_bind(
            cx,
            Expr::Scatter {
                a,
                idx,
                values,
                axis,
                add,
            },
        )
    }

    /// One `let` of any kind.
    fn let_stmt(&mut self, cx: &mut Ctx) -> Option<usize> {
        if cx.live.len() < 2 || self.chance(0.08) {
            let (ty, s) = (self.any_ty(), self.shape());
            return self.leaf(cx, ty, s);
        }
        if self.version >= 3 && !cx.section && self.chance(COMPLEX_SHARE) {
            return self.complex(cx);
        }
        if self.version >= 2 && !cx.section && self.chance(ORDERING_SHARE) {
            return self.ordering(cx);
        }
        match self.rng.random_range(0..20) {
            0..=4 => self.unary(cx),
            5..=10 => self.binary(cx),
            11 | 12 => self.select(cx),
            13..=15 => self.reduce(cx),
            16 | 17 => self.view(cx),
            _ if cx.section => self.view(cx),
            _ => self.intrinsic(cx),
        }
    }

    fn section(&mut self, cx: &mut Ctx) -> Option<()> {
        let first = self.var(cx, None)?;
        let ty = cx.ty(first);
        let mut inputs = vec![first];
        for _ in 0..self.rng.random_range(0..=2) {
            inputs.push(self.var(cx, Some(ty))?);
        }
        let n_params = self.rng.random_range(0..=2);
        let params: Vec<f64> = (0..n_params).map(|_| self.scalar(ty)).collect();
        let mut sx = Ctx {
            env: vec![],
            live: vec![],
            stmts: vec![],
            next: 0,
            section: true,
            block: false,
        };
        for &i in &inputs {
            sx.env.push(cx.env[i].clone());
        }
        for &p in &params {
            sx.env.push(Some(OArr {
                ty,
                shape: vec![],
                v: vec![p],
                e: vec![0.0],
            }));
        }
        sx.next = sx.env.len();
        sx.live = (0..sx.next).collect();
        let body_len = self.rng.random_range(2..=5);
        for _ in 0..body_len * 4 {
            if sx.stmts.len() >= body_len {
                break;
            }
            self.let_stmt(&mut sx);
        }
        let made: Vec<usize> = (inputs.len() + n_params..sx.next)
            .filter(|&v| sx.ty(v) == ty)
            .collect();
        if made.is_empty() {
            return None;
        }
        let mut outputs = vec![*made.last().unwrap()];
        if made.len() > 1 && self.chance(0.4) {
            outputs.push(made[0]);
        }
        let mut sec = Section {
            ty,
            n_inputs: inputs.len(),
            n_params,
            body: sx.stmts,
            outputs: outputs.clone(),
            calls: vec![],
        };
        let ncalls = self.pick(&[1, 2, 2, 3]);
        let mut ins = inputs.clone();
        let mut ps = params.clone();
        for k in 0..ncalls {
            if k > 0 {
                // Other inputs of the same types and shapes where there are any, and new params.
                ins = ins
                    .iter()
                    .map(|&i| {
                        let s = cx.arr(i).shape.clone();
                        let c: Vec<usize> = cx
                            .live
                            .iter()
                            .copied()
                            .filter(|&v| cx.ty(v) == ty && cx.arr(v).shape == s)
                            .collect();
                        self.pick(&c)
                    })
                    .collect();
                ps = (0..n_params).map(|_| self.scalar(ty)).collect();
            }
            // The oracle for this call; fall back to the first call's arguments.
            let mut local: oracle::Env = ins.iter().map(|&i| cx.env[i].clone()).collect();
            local.extend(ps.iter().map(|&p| {
                Some(OArr {
                    ty,
                    shape: vec![],
                    v: vec![p],
                    e: vec![0.0],
                })
            }));
            let mut ok = true;
            for s in &sec.body {
                if let Stmt::Let { id, expr, .. } = s {
                    match oracle::eval(expr, &local) {
                        Ok(o) if acceptable(&o) => {
                            if local.len() <= *id {
                                local.resize(id + 1, None);
                            }
                            local[*id] = Some(o);
                        }
                        _ => {
                            ok = false;
                            break;
                        }
                    }
                }
            }
            if !ok {
                if k == 0 {
                    return None;
                }
                break;
            }
            let mut res = vec![];
            for &o in &outputs {
                let id = cx.next;
                cx.next += 1;
                if cx.env.len() <= id {
                    cx.env.resize(id + 1, None);
                }
                cx.env[id] = local[o].clone();
                cx.live.push(id);
                res.push(id);
            }
            sec.calls.push((ins.clone(), ps.clone(), res));
        }
        cx.stmts.push(Stmt::Reuse(sec));
        Some(())
    }

    fn stmt(&mut self, cx: &mut Ctx) {
        let r = self.rng.random_range(0..24);
        let quiet = cx.block;
        match r {
            0 | 1 if !quiet && !cx.live.is_empty() => {
                let v = self.var(cx, None).unwrap();
                let item = cx.arr(v).v.len() == 1 && self.chance(0.5);
                cx.stmts.push(Stmt::Read { id: v, item });
            }
            2 if !quiet && !cx.live.is_empty() => {
                let v = self.var(cx, None).unwrap();
                cx.stmts.push(Stmt::Eval(v));
            }
            3 if !cx.live.is_empty() => {
                let v = self.var(cx, None).unwrap();
                cx.stmts.push(Stmt::Hint(v));
            }
            4 if !quiet && cx.live.len() > 3 => {
                let v = self.var(cx, None).unwrap();
                cx.live.retain(|&x| x != v);
                cx.env[v] = None;
                cx.stmts.push(Stmt::Drop(v));
            }
            5 if !quiet => cx.stmts.push(Stmt::Execute),
            6 if !quiet => {
                let outer = std::mem::take(&mut cx.stmts);
                cx.block = true;
                for _ in 0..self.rng.random_range(2..=5) {
                    self.stmt(cx);
                }
                cx.block = false;
                let body = std::mem::replace(&mut cx.stmts, outer);
                let b = Stmt::Block(body);
                if b.binds().is_empty() {
                    cx.stmts.extend(match b {
                        Stmt::Block(body) => body,
                        _ => unreachable!(),
                    });
                } else {
                    cx.stmts.push(b);
                }
            }
            7 if !quiet => {
                let _ = self.section(cx);
            }
            _ => {
                for _ in 0..30 {
                    if self.let_stmt(cx).is_some() {
                        break;
                    }
                }
            }
        }
    }
}

/// The program of `seed` under generator `version` (1 or 2).
pub fn generate(seed: u64, version: u32) -> Program {
    assert!(
        (1..=VERSION).contains(&version),
        "no generator version {version}"
    );
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        version,
        large: false,
        elements: 0,
    };
    g.large = g.chance(0.3);
    let mut cx = Ctx {
        env: vec![],
        live: vec![],
        stmts: vec![],
        next: 0,
        section: false,
        block: false,
    };
    let n = g.rng.random_range(8..=22);
    while cx.stmts.len() < n && g.elements < 400_000 {
        g.stmt(&mut cx);
    }
    Program {
        seed,
        version,
        stmts: cx.stmts,
    }
}
