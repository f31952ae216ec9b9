//! The FFT's GPU plan, lowered once for both dialects (`kernel.rs` prints it as OpenCL C or
//! WGSL): a call becomes a chain of passes over the input, scratch buffers and the output.
//!
//! - A **line pass** transforms lines of `len <= lmax` points in local (workgroup) memory,
//!   `batch` lines per work-group, by Stockham radix stages (8, 4, 2, 3, 5, 7): it loads each
//!   line (cropped or zero-padded, a real input promoted or read as pairs, a Hermitian spectrum
//!   extended), runs the stages, and stores (optionally times a four-step twiddle and the norm's
//!   scale).
//! - A longer line (`len = N1 * N2`, both `<= lmax`) is two line passes (the four-step
//!   algorithm): `N2` transforms of `N1` points at stride `N2`, twiddled by
//!   `exp(-+2 pi i n2 k1 / N)` into a scratch array laid out as the axis, then `N1` transforms of
//!   `N2` points at stride `N1` into the output.
//! - `rfft` of even `n`: a transform of `n / 2` points of the pairs `x[2j] + i x[2j+1]`, then an
//!   element-wise pass untangling the `n / 2 + 1` coefficients; `irfft` of even `n` the reverse
//!   (a pre-pass, then an inverse transform of `n / 2` points stored as pairs of reals). Odd `n`
//!   runs the complex transform of `n` points (real input promoted; a Hermitian spectrum
//!   extended while loading).
//!
//! Every array of the chain has the call's lines geometry: `pre` blocks of an axis of `len`
//! elements times `post`; element `n` of the axis of line `(o, i)` lies at
//! `(o * len + n) * post + i`. A line pass's line `L` is `(o, m, i)` (`i` fastest, then `m`,
//! the four-step index), and reads axis element `m * mk + j * jk` for its point `j`.

use super::{Kind, Spec};
use crate::intrinsics::Rows;
use crate::ir::DType;
use crate::proggen::codegen::gpu::{BufArg, Unsupported};
use crate::proggen::sequence::IntrinsicCall;

/// Local memory an OpenCL plan may use (OpenCL's guaranteed minimum).
pub const OPENCL_LOCAL_BYTES: usize = 32768;
/// Workgroup memory a WGSL plan may use (WebGPU's default `maxComputeWorkgroupStorageSize`).
pub const WGSL_LOCAL_BYTES: usize = 16384;
/// Points a work-group of short lines aims to hold.
const GROUP_POINTS: usize = 1024;
/// Neighbouring lines a work-group of strided lines aims to hold.
const ADJACENT: usize = 8;
/// Most threads of a work-group.
const MAX_LOCAL: usize = 256;
/// Most work-groups of a pass (grid-stride loops cover the rest).
pub const MAX_GROUPS: usize = 65535;
/// Threads of a work-group of the element-wise passes.
pub const ELEM_LOCAL: usize = 256;
/// The radices, tried in this order.
const RADICES: [usize; 6] = [8, 4, 2, 3, 5, 7];

/// How a line pass reads a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// A complex element.
    Complex,
    /// A real element, promoted.
    Real,
    /// Reals `2n` and `2n + 1` as one complex point (an even `rfft`).
    RealPairs,
    /// Point `n` of the full spectrum of `nf` points (odd) from its first half: `X[n]` or
    /// `conj(X[nf - n])`; the imaginary part of `X[0]` is ignored (NumPy).
    Hermitian { nf: usize },
}

/// How a line pass writes a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Complex,
    /// The real part.
    Real,
    /// As the reals `2n`, `2n + 1` (an even `irfft`).
    RealPairs,
}

/// One array a pass reads or writes: its buffer and axis length (in its own elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arr {
    pub buf: BufArg,
    pub len: usize,
}

/// A pass of Stockham radix stages over lines held in local memory.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePass {
    pub len: usize,
    pub radices: Vec<usize>,
    pub inverse: bool,
    /// Lines per `(o, i)`: the four-step index `m` runs over `0 .. mc`.
    pub mc: usize,
    pub src: Arr,
    pub load: Load,
    /// Axis elements of the source that hold data (the rest reads as zero): in its own
    /// elements (reals for `RealPairs`; coefficients for `Hermitian`).
    pub copy: usize,
    pub mk: usize,
    pub jk: usize,
    pub dst: Arr,
    pub store: Store,
    /// Output axis index of point `k`: `m * ok + k * kk`, written where below `limit`.
    pub ok: usize,
    pub kk: usize,
    pub limit: usize,
    /// The four-step twiddle `exp(-+2 pi i m k / N)` applied at the store.
    pub twiddle: Option<usize>,
    pub scale: f64,
    /// Lines per work-group, threads per work-group, work-groups.
    pub batch: usize,
    pub local: usize,
    pub groups: usize,
    /// Whether local memory is padded by one point after every [`PAD`].
    pub pad: bool,
}

impl LinePass {
    /// Lines of the pass.
    pub fn lines(&self, g: &Plan) -> usize {
        g.pre * self.mc * g.post
    }
    /// Line blocks (of `batch` lines) the work-groups walk.
    pub fn blocks(&self, g: &Plan) -> usize {
        self.lines(g).div_ceil(self.batch)
    }
    /// Points of local memory the pass declares.
    pub fn shared(&self) -> usize {
        let total = self.batch * self.len;
        if self.pad {
            total + total / PAD + 1
        } else {
            total
        }
    }
}

/// Local memory holds one unused point after every `PAD` (where it fits): a radix stage's
/// stores step `r` points apart, which without it fall on two of the 32 banks (a 16-way
/// conflict for `r = 8`); with it they spread over all of them.
pub const PAD: usize = 16;

/// One pass of the chain.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Lines(LinePass),
    /// An even `rfft`'s untangling: `src` holds the `h`-point transforms of the pairs, `dst` the
    /// `h + 1` coefficients of the `n`-point real transform, times `scale`.
    R2cPost {
        src: Arr,
        dst: Arr,
        h: usize,
        n: usize,
        scale: f64,
    },
    /// An even `irfft`'s tangling: `src` the coefficients (`copy` of them used, the imaginary
    /// parts of `X[0]` and `X[h]` ignored), `dst` the `h` points an inverse transform turns into
    /// the pairs of reals.
    C2rPre {
        src: Arr,
        dst: Arr,
        h: usize,
        n: usize,
        copy: usize,
    },
}

impl Step {
    /// Work-groups and threads of the pass.
    pub fn launch(&self, g: &Plan) -> (usize, usize) {
        match self {
            Step::Lines(p) => (p.groups, p.local),
            Step::R2cPost { h, .. } => (elem_groups(g.pre * (h + 1) * g.post), ELEM_LOCAL),
            Step::C2rPre { h, .. } => (elem_groups(g.pre * h * g.post), ELEM_LOCAL),
        }
    }
}

fn elem_groups(n: usize) -> usize {
    n.div_ceil(ELEM_LOCAL).clamp(1, MAX_GROUPS)
}

/// A call's chain of passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub pre: usize,
    pub post: usize,
    pub steps: Vec<Step>,
    /// Complex elements of each scratch buffer.
    pub scratch: Vec<usize>,
    /// f64 (`Complex<f64>`) rather than f32.
    pub f64: bool,
    /// Most elements of any buffer the passes index (for the index type).
    pub max_elems: usize,
}

/// The radices of a line of `len` points; `None` if it has a prime factor above 7.
pub fn radices(len: usize) -> Option<Vec<usize>> {
    let mut r = Vec::new();
    let mut left = len;
    for &x in &RADICES {
        // Powers of two: eights while eight divide, then one four or two.
        while left.is_multiple_of(x) && left > 1 {
            r.push(x);
            left /= x;
        }
    }
    (left == 1).then_some(r)
}

/// Builds the chain of passes.
struct Builder {
    pre: usize,
    post: usize,
    lmax: usize,
    scratch: Vec<usize>,
    steps: Vec<Step>,
}

/// Where the transform of a chain reads and writes.
struct Ends {
    src: Arr,
    load: Load,
    copy: usize,
    dst: Arr,
    store: Store,
    limit: usize,
    scale: f64,
}

impl Builder {
    fn scratch(&mut self, len: usize) -> Arr {
        self.scratch.push(self.pre * len * self.post);
        Arr {
            buf: BufArg::Scratch(self.scratch.len() as u32 - 1),
            len,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        len: usize,
        inverse: bool,
        mc: usize,
        (src, load, copy, mk, jk): (Arr, Load, usize, usize, usize),
        (dst, store, ok, kk, limit): (Arr, Store, usize, usize, usize),
        twiddle: Option<usize>,
        scale: f64,
    ) {
        let radices = radices(len).expect("checked");
        let lines = self.pre * mc * self.post;
        // Lines next to each other in memory (a strided axis, or the four-step index) load
        // together: at least `ADJACENT` of them per work-group where local memory holds them,
        // so each point's loads from neighbouring lines share memory segments.
        let adjacent = if self.post > 1 || mc > 1 {
            ADJACENT.min(self.lmax / len)
        } else {
            1
        };
        let batch = (GROUP_POINTS / len).max(adjacent).clamp(1, lines.max(1));
        let min_r = radices.iter().copied().min().unwrap_or(1);
        let work = batch * len / min_r;
        let local = work.next_multiple_of(64).clamp(64, MAX_LOCAL);
        let groups = lines.div_ceil(batch).clamp(1, MAX_GROUPS);
        let total = batch * len;
        let pad = total + total / PAD < self.lmax;
        self.steps.push(Step::Lines(LinePass {
            len,
            radices,
            inverse,
            mc,
            src,
            load,
            copy,
            mk,
            jk,
            dst,
            store,
            ok,
            kk,
            limit,
            twiddle,
            scale,
            batch,
            local,
            groups,
            pad,
        }));
    }

    /// The transform of `n` points from `e.src` to `e.dst`: one line pass, or two (four-step).
    fn transform(&mut self, n: usize, inverse: bool, e: Ends) -> Result<(), Unsupported> {
        if radices(n).is_none() {
            return Err(Unsupported(format!(
                "fft of {n} points: a prime factor above 7 (the CPU runs it)"
            )));
        }
        if n <= self.lmax {
            self.line(
                n,
                inverse,
                1,
                (e.src, e.load, e.copy, 0, 1),
                (e.dst, e.store, 0, 1, e.limit),
                None,
                e.scale,
            );
            return Ok(());
        }
        // n = n1 * n2, both fitting local memory, n1 the divisor nearest sqrt(n) from above.
        let n1 = (1..=self.lmax)
            .rev()
            .filter(|&d| n.is_multiple_of(d) && n / d <= self.lmax)
            .min_by_key(|&d| d.abs_diff((n as f64).sqrt() as usize));
        let Some(n1) = n1 else {
            return Err(Unsupported(format!(
                "fft of {n} points: longer than two passes of {} (the CPU runs it)",
                self.lmax
            )));
        };
        let n2 = n / n1;
        let mid = self.scratch(n);
        self.line(
            n1,
            inverse,
            n2,
            (e.src, e.load, e.copy, 1, n2),
            (mid, Store::Complex, n1, 1, n),
            Some(n),
            1.0,
        );
        self.line(
            n2,
            inverse,
            n1,
            (mid, Load::Complex, n, 1, n1),
            (e.dst, e.store, 1, n1, e.limit),
            None,
            e.scale,
        );
        Ok(())
    }
}

/// The chain of a call whose line fits `local_bytes` of local memory per work-group.
pub fn plan(call: &IntrinsicCall, local_bytes: usize) -> Result<Plan, Unsupported> {
    let spec = Spec::of(&call.op);
    let f64 = call.dtype.real() == DType::F64;
    let elem = if f64 { 16 } else { 8 };
    let r = Rows::of(&call.in_shapes[0], spec.axis);
    let mut b = Builder {
        pre: r.pre,
        post: r.post,
        lmax: local_bytes / elem,
        scratch: Vec::new(),
        steps: Vec::new(),
    };
    let (n, m, s) = (spec.n, r.dim, spec.scale());
    let input = Arr {
        buf: BufArg::Input(0),
        len: m,
    };
    let output = Arr {
        buf: BufArg::Output(0),
        len: spec.out_len(),
    };
    let complex_in = call.in_dtypes[0].is_complex();
    match spec.kind {
        Kind::C2c { inverse } => b.transform(
            n,
            inverse,
            Ends {
                src: input,
                load: if complex_in {
                    Load::Complex
                } else {
                    Load::Real
                },
                copy: m.min(n),
                dst: output,
                store: Store::Complex,
                limit: n,
                scale: s,
            },
        )?,
        Kind::R2c if n % 2 == 0 => {
            let h = n / 2;
            let mid = b.scratch(h);
            b.transform(
                h,
                false,
                Ends {
                    src: input,
                    load: Load::RealPairs,
                    copy: m.min(n),
                    dst: mid,
                    store: Store::Complex,
                    limit: h,
                    scale: 1.0,
                },
            )?;
            b.steps.push(Step::R2cPost {
                src: mid,
                dst: output,
                h,
                n,
                scale: s,
            });
        }
        Kind::R2c => b.transform(
            n,
            false,
            Ends {
                src: input,
                load: Load::Real,
                copy: m.min(n),
                dst: output,
                store: Store::Complex,
                limit: spec.half(),
                scale: s,
            },
        )?,
        Kind::C2r if n % 2 == 0 => {
            let h = n / 2;
            let mid = b.scratch(h);
            b.steps.push(Step::C2rPre {
                src: input,
                dst: mid,
                h,
                n,
                copy: m.min(h + 1),
            });
            b.transform(
                h,
                true,
                Ends {
                    src: mid,
                    load: Load::Complex,
                    copy: h,
                    dst: output,
                    store: Store::RealPairs,
                    limit: h,
                    scale: s,
                },
            )?;
        }
        Kind::C2r => b.transform(
            n,
            true,
            Ends {
                src: input,
                load: Load::Hermitian { nf: n },
                copy: m.min(spec.half()),
                dst: output,
                store: Store::Real,
                limit: n,
                scale: s,
            },
        )?,
    }
    let in_elems = r.numel();
    let out_elems = call.out_shape.iter().product::<usize>();
    let max_elems = b
        .scratch
        .iter()
        .copied()
        .chain([in_elems, out_elems])
        .max()
        .unwrap_or(0);
    Ok(Plan {
        pre: b.pre,
        post: b.post,
        steps: b.steps,
        scratch: b.scratch,
        f64,
        max_elems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radices_cover_the_supported_lengths() {
        assert_eq!(radices(1), Some(vec![]));
        assert_eq!(radices(2), Some(vec![2]));
        assert_eq!(radices(16), Some(vec![8, 2]));
        assert_eq!(radices(64), Some(vec![8, 8]));
        assert_eq!(radices(32), Some(vec![8, 4]));
        assert_eq!(radices(840), Some(vec![8, 3, 5, 7]));
        assert_eq!(radices(11), None);
        assert_eq!(radices(997), None);
    }
}
