//! The transforms' CPU entries: a call's lines along its axis cut into rayon tasks (consecutive
//! rows of a contiguous axis; blocks of neighbouring lines of a strided axis, gathered side by
//! side so each read touches consecutive addresses), each line copied into the task's buffer
//! (cropped or zero-padded to the transform's length, scaled, a real input read as complex) and
//! transformed by the shared plans (`planner.rs`) into the output. A complex transform of a
//! contiguous axis copies its lines into the output's rows and transforms them there in place,
//! as a caller of rustfft would. Calls that run on one thread (a long line) take their large
//! buffers from `spare.rs`.

use super::planner::FftFloat;
use super::spare;
use super::{Kind, Spec};
use crate::error::Error;
use crate::intrinsics::cpu::exec_error;
use crate::ir::TypedVec;
use num_complex::Complex;
use rayon::prelude::*;
use realfft::FftError;

/// Elements a task aims to transform: enough to amortise a task, small enough to keep its
/// buffers in cache and give every core several tasks.
const TASK: usize = 1 << 15;
/// Calls of fewer elements run on the calling thread.
const PARALLEL: usize = 1 << 15;
/// Fewest lines of a strided axis a task gathers side by side.
const COLS: usize = 16;

/// The lines of a call: `pre * post` lines, input line `p * post + q` holding `m` elements at
/// stride `post`, of which the first `copy` are used; a task's buffer line is `lin` long (zero
/// past `copy`), an output line `lout` long (at stride `post`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lines {
    pub pre: usize,
    pub post: usize,
    pub m: usize,
    pub copy: usize,
    pub lin: usize,
    pub lout: usize,
}

/// The output's base pointer, shared by tasks that write disjoint elements.
struct OutBase<T>(*mut T);
// SAFETY: tasks write disjoint elements of one output that outlives the parallel loop.
unsafe impl<T> Send for OutBase<T> {}
unsafe impl<T> Sync for OutBase<T> {}
impl<T> OutBase<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

/// How a task reads its lines: `fill(dst, i)` writes `dst.len()` consecutive input elements
/// from element `i` on as the transform reads them (a contiguous axis: a copy that vectorises),
/// `load(i)` one element (a strided axis).
struct Reader<F, L> {
    fill: F,
    load: L,
}

/// The buffers of a task that runs on the calling thread: from the spares (`spare.rs`, their
/// values unspecified: every use writes before it reads), given back after the call.
fn seq_buf<X: Default + Clone + Send + 'static>(len: usize) -> Vec<X> {
    spare::buffer(len, X::default())
}

/// Runs the call's lines: each task copies its lines into a buffer (`lin` a line, zero past
/// `copy`) and `transform(ibuf, obuf, scratch)` transforms them into `obuf` (`lout` a line),
/// with `scratch_len` elements of scratch: on a contiguous axis one line at a time into its
/// output row, on a strided one a block of lines gathered side by side, transformed into a
/// buffer and scattered to the output.
fn drive<I, O, Sc, F, L>(
    g: Lines,
    read: Reader<F, L>,
    out: &mut [O],
    scratch_len: usize,
    transform: impl Fn(&mut [I], &mut [O], &mut [Sc]) + Sync,
) where
    I: Copy + Default + Send + 'static,
    O: Copy + Default + Send + 'static,
    Sc: Copy + Default + Send + 'static,
    F: Fn(&mut [I], usize) + Sync,
    L: Fn(usize) -> I + Sync,
{
    let lines = g.pre * g.post;
    let width = g.lin.max(g.lout);
    if lines == 0 || g.lout == 0 {
        return;
    }
    let parallel = lines > 1 && lines * width >= PARALLEL;
    if g.post == 1 {
        let rows = (TASK / width).clamp(1, lines);
        // One line at a time through a buffer of one line (which stays in cache), straight
        // into its output row.
        let body = |st: &mut (Vec<I>, Vec<Sc>), (t, chunk): (usize, &mut [O])| {
            let (line, scratch) = (&mut st.0, &mut st.1);
            line.resize(g.lin, I::default());
            for (r, o) in chunk.chunks_exact_mut(g.lout).enumerate() {
                (read.fill)(&mut line[..g.copy], (t * rows + r) * g.m);
                line[g.copy..].fill(I::default());
                transform(line, o, scratch);
            }
        };
        if parallel {
            out.par_chunks_mut(rows * g.lout)
                .enumerate()
                .for_each_init(|| (Vec::new(), vec![Sc::default(); scratch_len]), body);
        } else {
            let mut st = (seq_buf(g.lin), seq_buf(scratch_len));
            for x in out.chunks_mut(rows * g.lout).enumerate() {
                body(&mut st, x);
            }
            spare::give(st.0);
            spare::give(st.1);
        }
    } else {
        let cols = (TASK / width).clamp(COLS, COLS.max(g.post)).min(g.post);
        let per = g.post.div_ceil(cols);
        let base = OutBase(out.as_mut_ptr());
        let body = |st: &mut (Vec<I>, Vec<O>, Vec<Sc>), t: usize| {
            let (p, q0) = (t / per, (t % per) * cols);
            let count = cols.min(g.post - q0);
            let (ibuf, obuf, scratch) = (&mut st.0, &mut st.1, &mut st.2);
            ibuf.resize(count * g.lin, I::default());
            obuf.resize(count * g.lout, O::default());
            for j in 0..g.copy {
                let src = (p * g.m + j) * g.post + q0;
                for b in 0..count {
                    ibuf[b * g.lin + j] = (read.load)(src + b);
                }
            }
            for line in ibuf.chunks_exact_mut(g.lin) {
                line[g.copy..].fill(I::default());
            }
            transform(ibuf, obuf, scratch);
            let out = base.get();
            for k in 0..g.lout {
                let dst = (p * g.lout + k) * g.post + q0;
                for b in 0..count {
                    // SAFETY: element (p, k, q0 + b) is in the output (`pre * lout * post`
                    // elements) and only this task writes lines q0 .. q0 + count of batch p.
                    unsafe { *out.add(dst + b) = obuf[b * g.lout + k] };
                }
            }
        };
        let tasks = g.pre * per;
        if parallel {
            (0..tasks).into_par_iter().for_each_init(
                || (Vec::new(), Vec::new(), vec![Sc::default(); scratch_len]),
                body,
            );
        } else {
            let mut st = (
                seq_buf(cols * g.lin),
                seq_buf(cols * g.lout),
                seq_buf(scratch_len),
            );
            for t in 0..tasks {
                body(&mut st, t);
            }
            spare::give(st.0);
            spare::give(st.1);
            spare::give(st.2);
        }
    }
}

/// Runs one call on the CPU into `out`.
pub(crate) fn run(spec: Spec, g: Lines, input: &TypedVec, out: &mut TypedVec) -> Result<(), Error> {
    let done = match out.dtype().real() {
        crate::ir::DType::F32 => typed::<f32>(spec, g, input, out),
        _ => typed::<f64>(spec, g, input, out),
    };
    done.ok_or_else(|| {
        exec_error(format!(
            "internal error: {} of {} into {}",
            spec.name(),
            input.dtype(),
            out.dtype()
        ))
    })
}

/// The call in precision `T`; `None` when the buffers are not of the types the check gave.
fn typed<T: FftFloat>(spec: Spec, g: Lines, input: &TypedVec, out: &mut TypedVec) -> Option<()> {
    match spec.kind {
        Kind::C2c { inverse } => c2c(spec, inverse, g, input, T::complex_mut(out)?),
        Kind::R2c => r2c(spec, g, T::real(input)?, T::complex_mut(out)?),
        Kind::C2r => c2r(spec, g, T::complex(input)?, T::real_mut(out)?),
    }
}

fn c2c<T: FftFloat>(
    spec: Spec,
    inverse: bool,
    g: Lines,
    input: &TypedVec,
    out: &mut [Complex<T>],
) -> Option<()> {
    let s = T::of(spec.scale());
    let unscaled = spec.scale() == 1.0;
    if let Some(x) = T::complex(input) {
        let fill = |d: &mut [Complex<T>], i: usize| {
            let src = &x[i..i + d.len()];
            if unscaled {
                d.copy_from_slice(src);
            } else {
                for (d, &v) in d.iter_mut().zip(src) {
                    *d = v * s;
                }
            }
        };
        c2c_lines(
            spec,
            inverse,
            g,
            Reader {
                fill,
                load: |i| x[i] * s,
            },
            out,
        );
    } else {
        let x = T::real(input)?;
        let fill = |d: &mut [Complex<T>], i: usize| {
            let src = &x[i..i + d.len()];
            for (d, &v) in d.iter_mut().zip(src) {
                *d = Complex::new(v * s, T::zero());
            }
        };
        let load = |i: usize| Complex::new(x[i] * s, T::zero());
        c2c_lines(spec, inverse, g, Reader { fill, load }, out);
    }
    Some(())
}

/// The complex transform of every line. A contiguous axis is filled into the output's rows
/// and transformed there in place (no buffer of the task's own); a strided one goes through
/// [`drive`].
fn c2c_lines<T: FftFloat, F, L>(
    spec: Spec,
    inverse: bool,
    g: Lines,
    read: Reader<F, L>,
    out: &mut [Complex<T>],
) where
    F: Fn(&mut [Complex<T>], usize) + Sync,
    L: Fn(usize) -> Complex<T> + Sync,
{
    let fft = T::planner().lock().complex(spec.n, inverse);
    let zero = Complex::new(T::zero(), T::zero());
    if g.post != 1 {
        let run = |i: &mut [Complex<T>], o: &mut [Complex<T>], sc: &mut [Complex<T>]| {
            fft.process_outofplace_with_scratch(i, o, sc)
        };
        drive(g, read, out, fft.get_outofplace_scratch_len(), run);
        return;
    }
    let (n, lines) = (g.lout, g.pre);
    if lines == 0 {
        return;
    }
    let rows = (TASK / n).clamp(1, lines);
    let body = |sc: &mut Vec<Complex<T>>, (t, chunk): (usize, &mut [Complex<T>])| {
        for (r, line) in chunk.chunks_exact_mut(n).enumerate() {
            (read.fill)(&mut line[..g.copy], (t * rows + r) * g.m);
            line[g.copy..].fill(zero);
        }
        fft.process_with_scratch(chunk, sc);
    };
    let scratch_len = fft.get_inplace_scratch_len();
    if lines > 1 && lines * n >= PARALLEL {
        out.par_chunks_mut(rows * n)
            .enumerate()
            .for_each_init(|| vec![zero; scratch_len], body);
    } else {
        let mut sc = seq_buf(scratch_len);
        for x in out.chunks_mut(rows * n).enumerate() {
            body(&mut sc, x);
        }
        spare::give(sc);
    }
}

fn r2c<T: FftFloat>(spec: Spec, g: Lines, x: &[T], out: &mut [Complex<T>]) -> Option<()> {
    let plan = T::planner().lock().r2c(spec.n);
    let s = T::of(spec.scale());
    let (n, h) = (spec.n, spec.half());
    let run = |i: &mut [T], o: &mut [Complex<T>], sc: &mut [Complex<T>]| {
        for (il, ol) in i.chunks_exact_mut(n).zip(o.chunks_exact_mut(h)) {
            // The buffers have the plan's lengths: realfft reports nothing else.
            if let Err(e) = plan.process_with_scratch(il, ol, sc) {
                unreachable!("rfft of {n}: {e}");
            }
        }
    };
    drive(g, scaled(x, s), out, plan.get_scratch_len(), run);
    Some(())
}

fn c2r<T: FftFloat>(spec: Spec, g: Lines, x: &[Complex<T>], out: &mut [T]) -> Option<()> {
    let plan = T::planner().lock().c2r(spec.n);
    let s = T::of(spec.scale());
    let (n, h) = (spec.n, spec.half());
    let run = |i: &mut [Complex<T>], o: &mut [T], sc: &mut [Complex<T>]| {
        for (il, ol) in i.chunks_exact_mut(h).zip(o.chunks_exact_mut(n)) {
            // realfft computes without the imaginary parts of coefficient 0 (and n / 2 for even
            // n), as NumPy does, and reports that they were not zero: not an error here.
            match plan.process_with_scratch(il, ol, sc) {
                Ok(()) | Err(FftError::InputValues(..)) => {}
                Err(e) => unreachable!("irfft of {n}: {e}"),
            }
        }
    };
    drive(g, scaled(x, s), out, plan.get_scratch_len(), run);
    Some(())
}

/// Reads elements of `x` times `s` (`x` real or complex, the same type out).
#[allow(clippy::type_complexity)]
fn scaled<'a, X, T>(
    x: &'a [X],
    s: T,
) -> Reader<impl Fn(&mut [X], usize) + Sync + 'a, impl Fn(usize) -> X + Sync + 'a>
where
    X: Copy + Sync + std::ops::Mul<T, Output = X> + 'a,
    T: Copy + Sync + 'a,
{
    Reader {
        fill: move |d: &mut [X], i: usize| {
            let src = &x[i..i + d.len()];
            for (d, &v) in d.iter_mut().zip(src) {
                *d = v * s;
            }
        },
        load: move |i: usize| x[i] * s,
    }
}
