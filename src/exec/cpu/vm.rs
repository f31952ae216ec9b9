//! The CPU tile VM: runs a fused kernel as a register program over tiles of the domain, each
//! instruction a tight monomorphic loop over one tile (which the compiler vectorises), tiles in
//! parallel with rayon. Reductions leave per-tile partials that `reduce` combines.

use super::index::for_each_index;
use super::reduce::{self, Partial};
use crate::error::{Error, ErrorKind};
use crate::exec::TypedVec;
use crate::ir::{GenKind, RandomDist, Scalar};
use crate::primitives::cpu as prim;
use crate::primitives::{
    binary_bool, binary_cmp, binary_float, binary_int, unary_bool, unary_float, unary_int,
    unary_pred,
};
use crate::proggen::kernel::{FusedKernel, IndexMap, Instr};
use crate::with_typed_vec;
use rayon::prelude::*;

/// Raw output pointers, written at disjoint ranges by different tiles.
#[derive(Clone, Copy)]
enum OutPtr {
    F32(*mut f32),
    F64(*mut f64),
    I32(*mut i32),
    U32(*mut u32),
    Bool(*mut bool),
}
// SAFETY: tiles write disjoint index ranges of each output, and the outputs outlive the parallel loop.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

fn out_ptr(v: &mut TypedVec) -> OutPtr {
    match v {
        TypedVec::F32(v) => OutPtr::F32(v.as_mut_ptr()),
        TypedVec::F64(v) => OutPtr::F64(v.as_mut_ptr()),
        TypedVec::I32(v) => OutPtr::I32(v.as_mut_ptr()),
        TypedVec::U32(v) => OutPtr::U32(v.as_mut_ptr()),
        TypedVec::Bool(v) => OutPtr::Bool(v.as_mut_ptr()),
    }
}

/// A failure inside a kernel: which instruction and why.
pub struct Fault {
    pub instr: usize,
    pub message: &'static str,
}

/// Runs `k` over its whole domain. `outputs` are allocated with the right type and length.
pub fn run_fused(
    k: &FusedKernel,
    tile: usize,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
) -> Result<(), Error> {
    let len = k.domain.len();
    let tiles = len.div_ceil(tile);
    let ptrs: Vec<OutPtr> = outputs.iter_mut().map(out_ptr).collect();
    let run = |regs: &mut Vec<TypedVec>, t: usize| -> Result<Vec<Vec<(usize, Partial)>>, Fault> {
        let t0 = t * tile;
        let n = tile.min(len - t0);
        run_tile(k, inputs, regs, t0, n)?;
        for s in &k.stores {
            // SAFETY: tile `t` owns output elements t0..t0+n; the buffer has `len` elements.
            unsafe { store(&regs[s.reg as usize], ptrs[s.output as usize], t0, n) };
        }
        Ok(k.reductions
            .iter()
            .map(|r| reduce::partials(r.op, &regs[r.reg as usize], t0, n, k.domain.inner))
            .collect())
    };
    let results: Result<Vec<_>, Fault> = if tiles <= 1 {
        let mut regs = scratch(k, tile);
        (0..tiles).map(|t| run(&mut regs, t)).collect()
    } else {
        (0..tiles)
            .into_par_iter()
            .map_init(|| scratch(k, tile), |regs, t| run(regs, t))
            .collect()
    };
    let partials = results.map_err(|f| {
        Error::new(
            ErrorKind::Execution,
            format!("{} in this operation", f.message),
        )
        .origin(k.instr_sites[f.instr])
    })?;
    for (ri, r) in k.reductions.iter().enumerate() {
        reduce::finish(
            r.op,
            partials.iter().map(|p| &p[ri]),
            &mut outputs[r.output as usize],
            k.domain.outer,
        );
    }
    Ok(())
}

/// One worker's registers: a tile-sized vector per register, constants filled once.
fn scratch(k: &FusedKernel, tile: usize) -> Vec<TypedVec> {
    let mut regs: Vec<TypedVec> = k
        .reg_dtypes
        .iter()
        .map(|&d| TypedVec::zeros(d, tile))
        .collect();
    for ins in &k.instrs {
        if let Instr::Const { dst, value } = ins {
            fill(&mut regs[*dst as usize], *value);
        }
    }
    regs
}

fn fill(r: &mut TypedVec, v: Scalar) {
    match (r, v) {
        (TypedVec::F32(r), Scalar::F32(v)) => r.fill(v),
        (TypedVec::F64(r), Scalar::F64(v)) => r.fill(v),
        (TypedVec::I32(r), Scalar::I32(v)) => r.fill(v),
        (TypedVec::U32(r), Scalar::U32(v)) => r.fill(v),
        (TypedVec::Bool(r), Scalar::Bool(v)) => r.fill(v),
        (r, v) => unreachable!("constant {v:?} in a {} register", r.dtype()),
    }
}

unsafe fn store(r: &TypedVec, p: OutPtr, t0: usize, n: usize) {
    // SAFETY (caller): p points at a buffer of at least t0 + n elements of the register's type.
    unsafe {
        match (r, p) {
            (TypedVec::F32(r), OutPtr::F32(p)) => {
                std::ptr::copy_nonoverlapping(r.as_ptr(), p.add(t0), n)
            }
            (TypedVec::F64(r), OutPtr::F64(p)) => {
                std::ptr::copy_nonoverlapping(r.as_ptr(), p.add(t0), n)
            }
            (TypedVec::I32(r), OutPtr::I32(p)) => {
                std::ptr::copy_nonoverlapping(r.as_ptr(), p.add(t0), n)
            }
            (TypedVec::U32(r), OutPtr::U32(p)) => {
                std::ptr::copy_nonoverlapping(r.as_ptr(), p.add(t0), n)
            }
            (TypedVec::Bool(r), OutPtr::Bool(p)) => {
                std::ptr::copy_nonoverlapping(r.as_ptr(), p.add(t0), n)
            }
            _ => unreachable!("store type mismatch"),
        }
    }
}

/// Runs every instruction of `k` for domain elements `t0 .. t0 + n`.
fn run_tile(
    k: &FusedKernel,
    inputs: &[&TypedVec],
    regs: &mut [TypedVec],
    t0: usize,
    n: usize,
) -> Result<(), Fault> {
    let shape = &k.domain.shape;
    for (i, ins) in k.instrs.iter().enumerate() {
        let dst = ins.dst() as usize;
        let mut out = std::mem::replace(&mut regs[dst], TypedVec::Bool(Vec::new()));
        let r = match ins {
            Instr::Const { .. } => Ok(()),
            Instr::Load { input, map, .. } => {
                load(inputs[*input as usize], map, shape, t0, n, &mut out);
                Ok(())
            }
            Instr::Gen {
                kind,
                shape: gshape,
                map,
                ..
            } => {
                generate(kind, gshape, map, shape, t0, n, &mut out);
                Ok(())
            }
            Instr::Unary { op, a, .. } => {
                unary(*op, &regs[*a as usize], &mut out, n);
                Ok(())
            }
            Instr::Binary { op, a, b, .. } => {
                binary(*op, &regs[*a as usize], &regs[*b as usize], &mut out, n)
            }
            Instr::Select { cond, a, b, .. } => {
                select(
                    &regs[*cond as usize],
                    &regs[*a as usize],
                    &regs[*b as usize],
                    &mut out,
                    n,
                );
                Ok(())
            }
            Instr::Cast { a, .. } => {
                cast(&regs[*a as usize], &mut out, n);
                Ok(())
            }
        };
        regs[dst] = out;
        r.map_err(|message| Fault { instr: i, message })?;
    }
    Ok(())
}

fn load(src: &TypedVec, map: &IndexMap, shape: &[usize], t0: usize, n: usize, out: &mut TypedVec) {
    macro_rules! go {
        ($s:expr, $o:expr) => {{
            let (s, o) = ($s, &mut $o[..n]);
            match map {
                IndexMap::Contiguous => o.copy_from_slice(&s[t0..t0 + n]),
                _ => for_each_index(map, shape, t0, n, |i, j| o[i] = s[j]),
            }
        }};
    }
    match (src, out) {
        (TypedVec::F32(s), TypedVec::F32(o)) => go!(s, o),
        (TypedVec::F64(s), TypedVec::F64(o)) => go!(s, o),
        (TypedVec::I32(s), TypedVec::I32(o)) => go!(s, o),
        (TypedVec::U32(s), TypedVec::U32(o)) => go!(s, o),
        (TypedVec::Bool(s), TypedVec::Bool(o)) => go!(s, o),
        _ => unreachable!("load type mismatch"),
    }
}

fn generate(
    kind: &GenKind,
    gshape: &[usize],
    map: &IndexMap,
    shape: &[usize],
    t0: usize,
    n: usize,
    out: &mut TypedVec,
) {
    match kind {
        GenKind::Random { key, counter, dist } => {
            let (key, counter, dist) = (*key, *counter, *dist);
            let normal = dist == RandomDist::Normal;
            let mut cache = (u64::MAX, [0u32; 4]);
            let g0 = counter + t0 as u64;
            match out {
                TypedVec::F32(o) if *map == IndexMap::Contiguous => {
                    let w = prim::words_per_value(normal, false);
                    if normal {
                        prim::random_run(key, g0, w, &mut o[..n], |r| prim::normal_f32(r[0], r[1]));
                    } else {
                        prim::random_run(key, g0, w, &mut o[..n], |r| prim::uniform_f32(r[0]));
                    }
                }
                TypedVec::F64(o) if *map == IndexMap::Contiguous => {
                    let w = prim::words_per_value(normal, true);
                    if normal {
                        prim::random_run(key, g0, w, &mut o[..n], |r| prim::normal_f64([r[0], r[1], r[2], r[3]]));
                    } else {
                        prim::random_run(key, g0, w, &mut o[..n], |r| prim::uniform_f64(r[0], r[1]));
                    }
                }
                TypedVec::F32(o) => {
                    let w = prim::words_per_value(normal, false);
                    for_each_index(map, shape, t0, n, |i, lin| {
                        let r = prim::stream_words(key, counter + lin as u64, w, &mut cache);
                        o[i] = if normal { prim::normal_f32(r[0], r[1]) } else { prim::uniform_f32(r[0]) };
                    })
                }
                TypedVec::F64(o) => {
                    let w = prim::words_per_value(normal, true);
                    for_each_index(map, shape, t0, n, |i, lin| {
                        let r = prim::stream_words(key, counter + lin as u64, w, &mut cache);
                        o[i] = if normal { prim::normal_f64(r) } else { prim::uniform_f64(r[0], r[1]) };
                    })
                }
                _ => unreachable!("random numbers are floats"),
            }
        }
        _ => {
            let cs = crate::ir::contiguous_strides(gshape);
            let value = |lin: usize| -> f64 {
                match kind {
                    GenKind::Iota { axis } => ((lin / cs[*axis]) % gshape[*axis]) as f64,
                    GenKind::Identity => (lin / gshape[1] == lin % gshape[1]) as u8 as f64,
                    GenKind::Linspace {
                        start,
                        step,
                        end,
                        n,
                    } => {
                        if lin + 1 == *n {
                            *end
                        } else {
                            start + step * lin as f64
                        }
                    }
                    GenKind::Random { .. } => unreachable!(),
                }
            };
            with_typed_vec!(out, o => for_each_index(map, shape, t0, n, |i, lin| {
                o[i] = FromF64::from_f64(value(lin));
            }));
        }
    }
}

/// Conversion used by generators (values are small integers or linspace points).
trait FromF64 {
    fn from_f64(v: f64) -> Self;
}
impl FromF64 for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl FromF64 for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}
impl FromF64 for i32 {
    fn from_f64(v: f64) -> Self {
        v as i32
    }
}
impl FromF64 for u32 {
    fn from_f64(v: f64) -> Self {
        v as u32
    }
}
impl FromF64 for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}

fn unary(op: crate::ir::UnaryOp, a: &TypedVec, out: &mut TypedVec, n: usize) {
    match (a, out) {
        (TypedVec::F32(a), TypedVec::F32(o)) => unary_float(op, &a[..n], &mut o[..n]),
        (TypedVec::F64(a), TypedVec::F64(o)) => unary_float(op, &a[..n], &mut o[..n]),
        (TypedVec::I32(a), TypedVec::I32(o)) => unary_int(op, &a[..n], &mut o[..n]),
        (TypedVec::U32(a), TypedVec::U32(o)) => unary_int(op, &a[..n], &mut o[..n]),
        (TypedVec::Bool(a), TypedVec::Bool(o)) => unary_bool(op, &a[..n], &mut o[..n]),
        (TypedVec::F32(a), TypedVec::Bool(o)) => unary_pred(op, &a[..n], &mut o[..n]),
        (TypedVec::F64(a), TypedVec::Bool(o)) => unary_pred(op, &a[..n], &mut o[..n]),
        _ => unreachable!("unary {op:?}: type mismatch"),
    }
}

fn binary(
    op: crate::ir::BinaryOp,
    a: &TypedVec,
    b: &TypedVec,
    out: &mut TypedVec,
    n: usize,
) -> Result<(), &'static str> {
    match (a, b, out) {
        (TypedVec::F32(a), TypedVec::F32(b), TypedVec::F32(o)) => {
            binary_float(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(o)) => {
            binary_float(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::I32(a), TypedVec::I32(b), TypedVec::I32(o)) => {
            binary_int(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::U32(a), TypedVec::U32(b), TypedVec::U32(o)) => {
            binary_int(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::Bool(a), TypedVec::Bool(b), TypedVec::Bool(o)) => {
            binary_bool(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::F32(a), TypedVec::F32(b), TypedVec::Bool(o)) => {
            binary_cmp(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::F64(a), TypedVec::F64(b), TypedVec::Bool(o)) => {
            binary_cmp(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::I32(a), TypedVec::I32(b), TypedVec::Bool(o)) => {
            binary_cmp(op, &a[..n], &b[..n], &mut o[..n])
        }
        (TypedVec::U32(a), TypedVec::U32(b), TypedVec::Bool(o)) => {
            binary_cmp(op, &a[..n], &b[..n], &mut o[..n])
        }
        _ => unreachable!("binary {op:?}: type mismatch"),
    }
}

fn select(c: &TypedVec, a: &TypedVec, b: &TypedVec, out: &mut TypedVec, n: usize) {
    let TypedVec::Bool(c) = c else {
        unreachable!("select condition is bool")
    };
    macro_rules! go {
        ($a:expr, $b:expr, $o:expr) => {
            for i in 0..n {
                $o[i] = if c[i] { $a[i] } else { $b[i] };
            }
        };
    }
    match (a, b, out) {
        (TypedVec::F32(a), TypedVec::F32(b), TypedVec::F32(o)) => go!(a, b, o),
        (TypedVec::F64(a), TypedVec::F64(b), TypedVec::F64(o)) => go!(a, b, o),
        (TypedVec::I32(a), TypedVec::I32(b), TypedVec::I32(o)) => go!(a, b, o),
        (TypedVec::U32(a), TypedVec::U32(b), TypedVec::U32(o)) => go!(a, b, o),
        (TypedVec::Bool(a), TypedVec::Bool(b), TypedVec::Bool(o)) => go!(a, b, o),
        _ => unreachable!("select: type mismatch"),
    }
}

/// Element conversion with Rust `as` semantics (numbers to bool by `!= 0`, bool to number 0/1).
pub trait CastTo<U> {
    fn cast_to(self) -> U;
}
macro_rules! cast_num {
    ($($from:ty),*) => {$(
        impl CastTo<f32> for $from { #[inline(always)] fn cast_to(self) -> f32 { self as f32 } }
        impl CastTo<f64> for $from { #[inline(always)] fn cast_to(self) -> f64 { self as f64 } }
        impl CastTo<i32> for $from { #[inline(always)] fn cast_to(self) -> i32 { self as i32 } }
        impl CastTo<u32> for $from { #[inline(always)] fn cast_to(self) -> u32 { self as u32 } }
        #[allow(clippy::float_cmp)]
        impl CastTo<bool> for $from { #[inline(always)] fn cast_to(self) -> bool { self != (0 as $from) } }
    )*};
}
cast_num!(f32, f64, i32, u32);
impl CastTo<f32> for bool {
    fn cast_to(self) -> f32 {
        self as u8 as f32
    }
}
impl CastTo<f64> for bool {
    fn cast_to(self) -> f64 {
        self as u8 as f64
    }
}
impl CastTo<i32> for bool {
    fn cast_to(self) -> i32 {
        self as i32
    }
}
impl CastTo<u32> for bool {
    fn cast_to(self) -> u32 {
        self as u32
    }
}
impl CastTo<bool> for bool {
    fn cast_to(self) -> bool {
        self
    }
}

fn cast(a: &TypedVec, out: &mut TypedVec, n: usize) {
    macro_rules! to {
        ($a:expr) => {
            match out {
                TypedVec::F32(o) => o[..n]
                    .iter_mut()
                    .zip(&$a[..n])
                    .for_each(|(o, &x)| *o = x.cast_to()),
                TypedVec::F64(o) => o[..n]
                    .iter_mut()
                    .zip(&$a[..n])
                    .for_each(|(o, &x)| *o = x.cast_to()),
                TypedVec::I32(o) => o[..n]
                    .iter_mut()
                    .zip(&$a[..n])
                    .for_each(|(o, &x)| *o = x.cast_to()),
                TypedVec::U32(o) => o[..n]
                    .iter_mut()
                    .zip(&$a[..n])
                    .for_each(|(o, &x)| *o = x.cast_to()),
                TypedVec::Bool(o) => o[..n]
                    .iter_mut()
                    .zip(&$a[..n])
                    .for_each(|(o, &x)| *o = x.cast_to()),
            }
        };
    }
    with_typed_vec!(a, v => to!(v))
}
