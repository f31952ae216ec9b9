//! The transforms' CPU entries: a call's lines along its axis cut into rayon tasks (consecutive
//! rows of a contiguous axis; blocks of neighbouring lines of a strided axis, gathered side by
//! side so each read touches consecutive addresses), each line copied into the task's buffer
//! (cropped or zero-padded to the transform's length, scaled, a real input read as complex) and
//! transformed by the shared plans (`planner.rs`) into the output. A complex input whose lines
//! are contiguous, of the transform's length and unscaled is transformed straight from the
//! input, without the copy.

use super::planner::FftFloat;
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

/// Runs the call's lines: `load(i)` is input element `i` as the transform reads it (scaled),
/// `transform(ibuf, obuf, scratch)` transforms the whole lines in `ibuf` (`lin` each) into
/// `obuf` (`lout` each) with the task's scratch from `init`.
fn drive<I, O, S>(
    g: Lines,
    load: impl Fn(usize) -> I + Sync,
    out: &mut [O],
    init: impl Fn() -> S + Sync + Send,
    transform: impl Fn(&mut [I], &mut [O], &mut S) + Sync,
) where
    I: Copy + Default + Send,
    O: Copy + Default + Send,
    S: Send,
{
    let lines = g.pre * g.post;
    let width = g.lin.max(g.lout);
    if lines == 0 || g.lout == 0 {
        return;
    }
    let parallel = lines > 1 && lines * width >= PARALLEL;
    if g.post == 1 {
        let rows = (TASK / width).clamp(1, lines);
        let body = |st: &mut (Vec<I>, S), (t, chunk): (usize, &mut [O])| {
            let count = chunk.len() / g.lout;
            let ibuf = &mut st.0;
            ibuf.resize(count * g.lin, I::default());
            for (r, line) in ibuf.chunks_exact_mut(g.lin).enumerate() {
                let src = (t * rows + r) * g.m;
                for (j, v) in line[..g.copy].iter_mut().enumerate() {
                    *v = load(src + j);
                }
                line[g.copy..].fill(I::default());
            }
            transform(ibuf, chunk, &mut st.1);
        };
        if parallel {
            out.par_chunks_mut(rows * g.lout)
                .enumerate()
                .for_each_init(|| (Vec::new(), init()), body);
        } else {
            let mut st = (Vec::new(), init());
            for x in out.chunks_mut(rows * g.lout).enumerate() {
                body(&mut st, x);
            }
        }
    } else {
        let cols = (TASK / width).clamp(COLS, COLS.max(g.post)).min(g.post);
        let per = g.post.div_ceil(cols);
        let base = OutBase(out.as_mut_ptr());
        let body = |st: &mut (Vec<I>, Vec<O>, S), t: usize| {
            let (p, q0) = (t / per, (t % per) * cols);
            let count = cols.min(g.post - q0);
            let (ibuf, obuf, scratch) = (&mut st.0, &mut st.1, &mut st.2);
            ibuf.resize(count * g.lin, I::default());
            obuf.resize(count * g.lout, O::default());
            for j in 0..g.copy {
                let src = (p * g.m + j) * g.post + q0;
                for b in 0..count {
                    ibuf[b * g.lin + j] = load(src + b);
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
            (0..tasks)
                .into_par_iter()
                .for_each_init(|| (Vec::new(), Vec::new(), init()), body);
        } else {
            let mut st = (Vec::new(), Vec::new(), init());
            for t in 0..tasks {
                body(&mut st, t);
            }
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
    let fft = T::planner().lock().complex(spec.n, inverse);
    let scale = spec.scale();
    let s = T::of(scale);
    let zero = Complex::new(T::zero(), T::zero());
    if let Some(x) = T::complex(input) {
        if g.post == 1 && g.m == g.lin && scale == 1.0 {
            // Straight from the input: rustfft reads it and writes the output.
            let rows = (TASK / g.lin).max(1) * g.lin;
            let scratch = || vec![zero; fft.get_immutable_scratch_len()];
            let run = |sc: &mut Vec<Complex<T>>, (i, o): (&[Complex<T>], &mut [Complex<T>])| {
                fft.process_immutable_with_scratch(i, o, sc)
            };
            if g.pre > 1 && out.len() >= PARALLEL {
                out.par_chunks_mut(rows)
                    .zip(x.par_chunks(rows))
                    .for_each_init(scratch, |sc, (o, i)| run(sc, (i, o)));
            } else if !out.is_empty() {
                let mut sc = scratch();
                for (o, i) in out.chunks_mut(rows).zip(x.chunks(rows)) {
                    run(&mut sc, (i, o));
                }
            }
            return Some(());
        }
        let init = || vec![zero; fft.get_outofplace_scratch_len()];
        let run = |i: &mut [Complex<T>], o: &mut [Complex<T>], sc: &mut Vec<Complex<T>>| {
            fft.process_outofplace_with_scratch(i, o, sc)
        };
        drive(g, |i| x[i] * s, out, init, run);
    } else {
        let x = T::real(input)?;
        let init = || vec![zero; fft.get_outofplace_scratch_len()];
        let run = |i: &mut [Complex<T>], o: &mut [Complex<T>], sc: &mut Vec<Complex<T>>| {
            fft.process_outofplace_with_scratch(i, o, sc)
        };
        drive(g, |i| Complex::new(x[i] * s, T::zero()), out, init, run);
    }
    Some(())
}

fn r2c<T: FftFloat>(spec: Spec, g: Lines, x: &[T], out: &mut [Complex<T>]) -> Option<()> {
    let plan = T::planner().lock().r2c(spec.n);
    let s = T::of(spec.scale());
    let (n, h) = (spec.n, spec.half());
    let init = || vec![Complex::new(T::zero(), T::zero()); plan.get_scratch_len()];
    let run = |i: &mut [T], o: &mut [Complex<T>], sc: &mut Vec<Complex<T>>| {
        for (il, ol) in i.chunks_exact_mut(n).zip(o.chunks_exact_mut(h)) {
            // The buffers have the plan's lengths: realfft reports nothing else.
            if let Err(e) = plan.process_with_scratch(il, ol, sc) {
                unreachable!("rfft of {n}: {e}");
            }
        }
    };
    drive(g, |i| x[i] * s, out, init, run);
    Some(())
}

fn c2r<T: FftFloat>(spec: Spec, g: Lines, x: &[Complex<T>], out: &mut [T]) -> Option<()> {
    let plan = T::planner().lock().c2r(spec.n);
    let s = T::of(spec.scale());
    let (n, h) = (spec.n, spec.half());
    let init = || vec![Complex::new(T::zero(), T::zero()); plan.get_scratch_len()];
    let run = |i: &mut [Complex<T>], o: &mut [T], sc: &mut Vec<Complex<T>>| {
        for (il, ol) in i.chunks_exact_mut(h).zip(o.chunks_exact_mut(n)) {
            // realfft computes without the imaginary parts of coefficient 0 (and n / 2 for even
            // n), as NumPy does, and reports that they were not zero: not an error here.
            match plan.process_with_scratch(il, ol, sc) {
                Ok(()) | Err(FftError::InputValues(..)) => {}
                Err(e) => unreachable!("irfft of {n}: {e}"),
            }
        }
    };
    drive(g, |i| x[i] * s, out, init, run);
    Some(())
}
