//! Reductions on the CPU: the first stage reduces each tile's segments to partials (fused with the
//! kernel's producers); the final stage combines the partials of all tiles, in tile order, so the
//! result does not depend on thread timing. Float sums and products accumulate in f64.
//!
//! Grouping rule (the rounding of float sums and products): output element `o` reduces domain
//! elements `o * inner .. (o + 1) * inner`, cut into pieces at multiples of [`BLOCK`] of the
//! domain's linear index; each piece is summed in eight f64 lanes (chunks of 8 from the piece's
//! start, lanes added in order, the rest one by one) and pieces combine in order from the
//! identity. It depends neither on the tile size nor on the tier. Reductions over axes that are
//! not their input's innermost are walked in the input's row order instead (`rows`), with the
//! same rule, bit for bit.

use super::slices::{OutPtr, Src};
use crate::exec::TypedVec;
use crate::ir::ReduceOp;

/// A partial result of one output element over one tile segment.
#[derive(Debug, Clone, Copy)]
pub enum Partial {
    /// Sum, product, max or min of numbers (integer sums wrap at the final cast).
    F(f64),
    /// Wrapping integer sum or product, modulo 2^64 (truncated to the element type at the end).
    W(u64),
    B(bool),
    /// Value and index within the reduced extent (argmax, argmin).
    Arg(f64, u64),
}

trait AsF64: Copy {
    fn f(self) -> f64;
    fn w(self) -> u64;
}
impl AsF64 for f32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for f64 {
    fn f(self) -> f64 {
        self
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for i32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as i64 as u64
    }
}
impl AsF64 for u32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn w(self) -> u64 {
        self as u64
    }
}

pub(super) fn identity(op: ReduceOp, int: bool) -> Partial {
    match op {
        ReduceOp::Sum if int => Partial::W(0),
        ReduceOp::Prod if int => Partial::W(1),
        ReduceOp::Sum => Partial::F(0.0),
        ReduceOp::Prod => Partial::F(1.0),
        ReduceOp::Max => Partial::F(f64::NEG_INFINITY),
        ReduceOp::Min => Partial::F(f64::INFINITY),
        ReduceOp::ArgMax => Partial::Arg(f64::NEG_INFINITY, u64::MAX),
        ReduceOp::ArgMin => Partial::Arg(f64::INFINITY, u64::MAX),
        ReduceOp::Any => Partial::B(false),
        ReduceOp::All => Partial::B(true),
    }
}

/// Combines two partials; `a` comes first in element order.
pub(super) fn combine(op: ReduceOp, a: Partial, b: Partial) -> Partial {
    match (a, b) {
        (Partial::F(x), Partial::F(y)) => Partial::F(match op {
            ReduceOp::Sum => x + y,
            ReduceOp::Prod => x * y,
            ReduceOp::Max => crate::primitives::cpu::fmax_nan(x, y),
            _ => crate::primitives::cpu::fmin_nan(x, y),
        }),
        (Partial::W(x), Partial::W(y)) => Partial::W(match op {
            ReduceOp::Sum => x.wrapping_add(y),
            _ => x.wrapping_mul(y),
        }),
        (Partial::B(x), Partial::B(y)) => {
            Partial::B(if op == ReduceOp::Any { x | y } else { x & y })
        }
        (Partial::Arg(xv, xi), Partial::Arg(yv, yi)) => {
            // The first NaN wins (NumPy); otherwise the strictly better value, ties to the first index.
            let better = if xi == u64::MAX || (!xv.is_nan() && yv.is_nan()) {
                yi != u64::MAX
            } else if xv.is_nan() {
                false
            } else if op == ReduceOp::ArgMax {
                yv > xv
            } else {
                yv < xv
            };
            if better {
                Partial::Arg(yv, yi)
            } else {
                Partial::Arg(xv, xi)
            }
        }
        _ => unreachable!("partials of different kinds"),
    }
}

fn reduce_slice<T: AsF64>(op: ReduceOp, v: &[T], first_index: u64) -> Partial {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => {
            // Eight independent accumulators: vectorisable and more accurate than one running sum.
            let mut acc = [if op == ReduceOp::Sum { 0.0 } else { 1.0 }; 8];
            let chunks = v.chunks_exact(8);
            let rest = chunks.remainder();
            for c in chunks {
                for l in 0..8 {
                    acc[l] = if op == ReduceOp::Sum {
                        acc[l] + c[l].f()
                    } else {
                        acc[l] * c[l].f()
                    };
                }
            }
            let mut total = if op == ReduceOp::Sum {
                acc.iter().sum::<f64>()
            } else {
                acc.iter().product::<f64>()
            };
            for &x in rest {
                total = if op == ReduceOp::Sum {
                    total + x.f()
                } else {
                    total * x.f()
                };
            }
            Partial::F(total)
        }
        ReduceOp::Max | ReduceOp::Min => {
            let mut acc = identity(op, false);
            for &x in v {
                acc = combine(op, acc, Partial::F(x.f()));
            }
            acc
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let mut acc = identity(op, false);
            for (i, &x) in v.iter().enumerate() {
                acc = combine(op, acc, Partial::Arg(x.f(), first_index + i as u64));
            }
            acc
        }
        ReduceOp::Any | ReduceOp::All => unreachable!("any/all take bools"),
    }
}

fn reduce_int_slice<T: AsF64>(op: ReduceOp, v: &[T]) -> Partial {
    let mut acc = identity(op, true);
    for &x in v {
        acc = combine(op, acc, Partial::W(x.w()));
    }
    acc
}

/// Partials never span a multiple of this many domain elements, so the grouping of a sum (and so
/// its rounding) is the same whatever the tile or chunk size, on either CPU tier.
pub const BLOCK: usize = 1024;

/// The partials one tile leaves for the final stage: (output element, partial) for each piece of a
/// segment that crosses a tile or block boundary. Output elements whose whole segment lies inside
/// one block are written straight into the output by the first stage and leave nothing here.
pub type Partials = Vec<(usize, Partial)>;

fn src_len(v: &Src) -> usize {
    match v {
        Src::F32(v) => v.len(),
        Src::F64(v) => v.len(),
        Src::I32(v) => v.len(),
        Src::U32(v) => v.len(),
        Src::Bool(v) => v.len(),
        Src::C64(v) => v.len(),
        Src::C128(v) => v.len(),
    }
}

/// The partial of one piece of a segment (`first`: its offset within the segment).
fn piece(op: ReduceOp, v: Src, r: std::ops::Range<usize>, first: u64) -> Partial {
    let int_acc = matches!(op, ReduceOp::Sum | ReduceOp::Prod);
    match v {
        Src::F32(v) => reduce_slice(op, &v[r], first),
        Src::F64(v) => reduce_slice(op, &v[r], first),
        Src::I32(v) if int_acc => reduce_int_slice(op, &v[r]),
        Src::U32(v) if int_acc => reduce_int_slice(op, &v[r]),
        Src::I32(v) => reduce_slice(op, &v[r], first),
        Src::U32(v) => reduce_slice(op, &v[r], first),
        Src::Bool(v) => {
            let s = &v[r];
            Partial::B(if op == ReduceOp::Any {
                s.iter().any(|&b| b)
            } else {
                s.iter().all(|&b| b)
            })
        }
        Src::C64(_) | Src::C128(_) => {
            unreachable!("complex reductions are recorded as reductions of their parts")
        }
    }
}

/// First stage for domain elements `t0 .. t0 + v.len()` (segments of `inner` elements, one per
/// output element): writes the value of every output element whose segment lies inside one
/// [`BLOCK`] straight into `out` (typed, with the same arithmetic as a lone partial), and returns
/// partials for the pieces of the other segments (cut at segment, block and tile boundaries).
pub fn partials(op: ReduceOp, v: Src, t0: usize, inner: usize, out: OutPtr) -> Partials {
    let n = src_len(&v);
    let mut edges = Vec::new();
    let mut i = 0;
    while i < n {
        let lin = t0 + i;
        let o = lin / inner;
        let pos = lin % inner;
        let block_end = ((lin / BLOCK + 1) * BLOCK).min(t0 + n);
        if pos == 0 && lin + inner <= block_end {
            // A run of whole segments inside this block (and tile): final values, typed.
            let k = (block_end - lin) / inner;
            direct::run(op, v, i, inner, k, out, o);
            i += k * inner;
        } else {
            let seg = (inner - pos).min(block_end - lin);
            edges.push((o, piece(op, v, i..i + seg, pos as u64)));
            i += seg;
        }
    }
    edges
}

/// Writes the final value of output element `i` from its combined partial.
pub(super) fn write(out: &mut TypedVec, i: usize, p: Partial) {
    match p {
        Partial::Arg(_, idx) => {
            let TypedVec::U32(o) = out else {
                unreachable!()
            };
            o[i] = idx as u32;
        }
        Partial::B(b) => {
            let TypedVec::Bool(o) = out else {
                unreachable!()
            };
            o[i] = b;
        }
        Partial::W(w) => match out {
            TypedVec::I32(o) => o[i] = w as u32 as i32,
            TypedVec::U32(o) => o[i] = w as u32,
            _ => unreachable!(),
        },
        Partial::F(f) => match out {
            TypedVec::F32(o) => o[i] = f as f32,
            TypedVec::F64(o) => o[i] = f,
            TypedVec::I32(o) => o[i] = f as i32,
            TypedVec::U32(o) => o[i] = f as u32,
            TypedVec::Bool(_) | TypedVec::C64(_) | TypedVec::C128(_) => unreachable!(),
        },
    }
}

/// Final stage: combines the partials every tile left (in tile order) into `out`, which has
/// `outer` elements of `inner`-element segments; the first stage wrote the others. Partials of one
/// output element are consecutive in tile order, so one pass suffices.
pub fn finish<'a>(
    op: ReduceOp,
    tiles: impl Iterator<Item = &'a Partials>,
    out: &mut TypedVec,
    outer: usize,
    inner: usize,
) {
    let int = matches!(out, TypedVec::I32(_) | TypedVec::U32(_))
        && matches!(op, ReduceOp::Sum | ReduceOp::Prod);
    let id = identity(op, int);
    if inner == 0 {
        // Empty segments: every output element is the identity.
        for i in 0..outer {
            write(out, i, id);
        }
        return;
    }
    let mut cur: Option<(usize, Partial)> = None;
    for tile in tiles {
        for &(o, p) in tile {
            cur = Some(match cur {
                Some((c, acc)) if c == o => (o, combine(op, acc, p)),
                prev => {
                    if let Some((c, acc)) = prev {
                        write(out, c, acc);
                    }
                    (o, combine(op, id, p))
                }
            });
        }
    }
    if let Some((c, acc)) = cur {
        write(out, c, acc);
    }
}

/// Typed first-stage loops for runs of whole segments, one output element each: the same
/// arithmetic as `reduce_slice` / `reduce_int_slice` followed by `combine` with the identity
/// and the final cast, so a value does not depend on which stage computed it. Common segment
/// lengths get loops specialised at compile time.
mod direct {
    use super::super::slices::{OutPtr, Src};
    use crate::ir::ReduceOp;
    use crate::primitives::cpu::{fmax_nan, fmin_nan};

    /// Output element types a float sum or product converts its f64 total to.
    pub(super) trait FromTotal: Copy {
        fn from_total(t: f64) -> Self;
    }
    impl FromTotal for f32 {
        #[inline(always)]
        fn from_total(t: f64) -> Self {
            t as f32
        }
    }
    impl FromTotal for f64 {
        #[inline(always)]
        fn from_total(t: f64) -> Self {
            t
        }
    }

    /// Input element types of sums, products and extrema.
    pub(super) trait Elem: Copy + PartialOrd {
        fn f(self) -> f64;
        fn is_nan(self) -> bool;
        /// Wrapping sum and product (integers only).
        fn wadd(self, o: Self) -> Self;
        fn wmul(self, o: Self) -> Self;
        const ZERO: Self;
        const ONE: Self;
        /// The identities of max and min (-inf and +inf, cast to the type).
        const LOWEST: Self;
        const HIGHEST: Self;
        /// NaN-propagating maximum and minimum (plain ones for integers).
        fn max_nan(self, o: Self) -> Self;
        fn min_nan(self, o: Self) -> Self;
    }
    macro_rules! float_elem {
        ($t:ty) => {
            impl Elem for $t {
                #[inline(always)]
                fn f(self) -> f64 {
                    self as f64
                }
                #[inline(always)]
                fn is_nan(self) -> bool {
                    <$t>::is_nan(self)
                }
                fn wadd(self, _: Self) -> Self {
                    unreachable!()
                }
                fn wmul(self, _: Self) -> Self {
                    unreachable!()
                }
                const ZERO: Self = 0.0;
                const ONE: Self = 1.0;
                const LOWEST: Self = <$t>::NEG_INFINITY;
                const HIGHEST: Self = <$t>::INFINITY;
                #[inline(always)]
                fn max_nan(self, o: Self) -> Self {
                    fmax_nan(self, o)
                }
                #[inline(always)]
                fn min_nan(self, o: Self) -> Self {
                    fmin_nan(self, o)
                }
            }
        };
    }
    macro_rules! int_elem {
        ($t:ty) => {
            impl Elem for $t {
                #[inline(always)]
                fn f(self) -> f64 {
                    self as f64
                }
                #[inline(always)]
                fn is_nan(self) -> bool {
                    false
                }
                #[inline(always)]
                fn wadd(self, o: Self) -> Self {
                    self.wrapping_add(o)
                }
                #[inline(always)]
                fn wmul(self, o: Self) -> Self {
                    self.wrapping_mul(o)
                }
                const ZERO: Self = 0;
                const ONE: Self = 1;
                const LOWEST: Self = <$t>::MIN;
                const HIGHEST: Self = <$t>::MAX;
                #[inline(always)]
                fn max_nan(self, o: Self) -> Self {
                    if o > self { o } else { self }
                }
                #[inline(always)]
                fn min_nan(self, o: Self) -> Self {
                    if o < self { o } else { self }
                }
            }
        };
    }
    float_elem!(f32);
    float_elem!(f64);
    int_elem!(i32);
    int_elem!(u32);

    /// A float sum or product of one segment: eight lanes over whole chunks of 8, lanes combined
    /// in order, the rest one by one, then combined with the identity.
    #[inline(always)]
    fn total<T: Elem>(s: &[T], prod: bool) -> f64 {
        let id = if prod { 1.0 } else { 0.0 };
        let mut acc = [id; 8];
        let chunks = s.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..8 {
                acc[l] = if prod {
                    acc[l] * c[l].f()
                } else {
                    acc[l] + c[l].f()
                };
            }
        }
        // `reduce_slice` folds the lanes with `Iterator::sum`/`product`, whose start value (0.0,
        // -0.0 or 1.0) never changes the result: no lane is -0.0 after adding to 0.0.
        let mut t = acc[0];
        for &a in &acc[1..] {
            t = if prod { t * a } else { t + a };
        }
        for &x in rest {
            t = if prod { t * x.f() } else { t + x.f() };
        }
        if prod { id * t } else { id + t }
    }

    /// Argmin / argmax of one segment: the first NaN, else the first strictly best value.
    #[inline(always)]
    fn arg<T: Elem>(s: &[T], max: bool) -> u32 {
        let mut bv = s[0];
        let mut bi = 0u32;
        for (i, &x) in s.iter().enumerate().skip(1) {
            let better = if max { x > bv } else { x < bv };
            let take = (better | x.is_nan()) & !bv.is_nan();
            bv = if take { x } else { bv };
            bi = if take { i as u32 } else { bi };
        }
        bi
    }

    /// Applies `f` to each of `k` segments of `inner` elements from `v`, writing `out`.
    #[inline(always)]
    fn each<T: Copy, U, const N: usize>(
        v: &[T],
        inner: usize,
        out: &mut [U],
        f: impl Fn(&[T]) -> U,
    ) {
        if N > 0 {
            for (o, s) in out.iter_mut().zip(v.chunks_exact(N)) {
                *o = f(s);
            }
        } else {
            for (o, s) in out.iter_mut().zip(v.chunks_exact(inner)) {
                *o = f(s);
            }
        }
    }

    /// `each` with segment lengths 1, 2, 3, 4, 8 and 16 known at compile time.
    #[inline(always)]
    fn dispatch<T: Copy, U>(v: &[T], inner: usize, out: &mut [U], f: impl Fn(&[T]) -> U) {
        match inner {
            1 => each::<T, U, 1>(v, inner, out, f),
            2 => each::<T, U, 2>(v, inner, out, f),
            3 => each::<T, U, 3>(v, inner, out, f),
            4 => each::<T, U, 4>(v, inner, out, f),
            8 => each::<T, U, 8>(v, inner, out, f),
            16 => each::<T, U, 16>(v, inner, out, f),
            _ => each::<T, U, 0>(v, inner, out, f),
        }
    }

    fn typed<T: Elem, U: FromTotal>(op: ReduceOp, v: &[T], inner: usize, out: &mut [U]) {
        match op {
            ReduceOp::Sum => dispatch(v, inner, out, |s| U::from_total(total(s, false))),
            ReduceOp::Prod => dispatch(v, inner, out, |s| U::from_total(total(s, true))),
            _ => unreachable!(),
        }
    }

    fn extremum<T: Elem>(op: ReduceOp, v: &[T], inner: usize, out: &mut [T]) {
        // From the identity, as `reduce_slice` does (so a NaN result is the canonical NaN).
        match op {
            ReduceOp::Max => dispatch(v, inner, out, |s| {
                s.iter().fold(T::LOWEST, |m, &x| m.max_nan(x))
            }),
            _ => dispatch(v, inner, out, |s| {
                s.iter().fold(T::HIGHEST, |m, &x| m.min_nan(x))
            }),
        }
    }

    fn wrapping<T: Elem>(op: ReduceOp, v: &[T], inner: usize, out: &mut [T]) {
        match op {
            ReduceOp::Sum => dispatch(v, inner, out, |s| s.iter().fold(T::ZERO, |a, &x| a.wadd(x))),
            _ => dispatch(v, inner, out, |s| s.iter().fold(T::ONE, |a, &x| a.wmul(x))),
        }
    }

    /// Writes output elements `o .. o + k` from the `k` whole segments starting at `v[i]`.
    pub(super) fn run(
        op: ReduceOp,
        v: Src,
        i: usize,
        inner: usize,
        k: usize,
        out: OutPtr,
        o: usize,
    ) {
        let r = i..i + k * inner;
        // SAFETY: output elements o..o+k belong to segments wholly inside this tile, so no other
        // tile (and not the final stage) writes them; the output has `outer` > o + k - 1 elements.
        let dst = unsafe { out.dst(o, k) };
        use super::super::slices::Dst;
        match op {
            ReduceOp::ArgMax | ReduceOp::ArgMin => {
                let Dst::U32(d) = dst else { unreachable!() };
                let max = op == ReduceOp::ArgMax;
                match v {
                    Src::F32(v) => dispatch(&v[r], inner, d, |s| arg(s, max)),
                    Src::F64(v) => dispatch(&v[r], inner, d, |s| arg(s, max)),
                    Src::I32(v) => dispatch(&v[r], inner, d, |s| arg(s, max)),
                    Src::U32(v) => dispatch(&v[r], inner, d, |s| arg(s, max)),
                    Src::Bool(_) | Src::C64(_) | Src::C128(_) => unreachable!(),
                }
            }
            ReduceOp::Any | ReduceOp::All => {
                let (Src::Bool(v), Dst::Bool(d)) = (v, dst) else {
                    unreachable!()
                };
                if op == ReduceOp::Any {
                    dispatch(&v[r], inner, d, |s| s.iter().any(|&b| b))
                } else {
                    dispatch(&v[r], inner, d, |s| s.iter().all(|&b| b))
                }
            }
            ReduceOp::Max | ReduceOp::Min => match (v, dst) {
                (Src::F32(v), Dst::F32(d)) => extremum(op, &v[r], inner, d),
                (Src::F64(v), Dst::F64(d)) => extremum(op, &v[r], inner, d),
                (Src::I32(v), Dst::I32(d)) => extremum(op, &v[r], inner, d),
                (Src::U32(v), Dst::U32(d)) => extremum(op, &v[r], inner, d),
                _ => unreachable!("extremum types"),
            },
            ReduceOp::Sum | ReduceOp::Prod => match (v, dst) {
                (Src::F32(v), Dst::F32(d)) => typed(op, &v[r], inner, d),
                (Src::F64(v), Dst::F64(d)) => typed(op, &v[r], inner, d),
                (Src::F32(v), Dst::F64(d)) => typed(op, &v[r], inner, d),
                (Src::F64(v), Dst::F32(d)) => typed(op, &v[r], inner, d),
                (Src::I32(v), Dst::I32(d)) => wrapping(op, &v[r], inner, d),
                (Src::U32(v), Dst::U32(d)) => wrapping(op, &v[r], inner, d),
                _ => unreachable!("sum types"),
            },
        }
    }
}
