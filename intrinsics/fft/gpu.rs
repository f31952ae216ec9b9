//! The FFT's GPU plan, lowered once for both dialects (`kernel.rs` prints it as OpenCL C or
//! WGSL): a call becomes a chain of passes over the input, scratch buffers and the output.
//!
//! - A **line pass** transforms lines of `len <= lmax` points in local (workgroup) memory,
//!   `batch` lines per work-group, by Stockham radix stages (8, 4, 2, 3, 5, 7): it loads each
//!   line (cropped or zero-padded, a real input promoted or read as pairs, a Hermitian spectrum
//!   extended; optionally times a twiddle), runs the stages, and stores (times the norm's scale).
//! - Contiguous lines that fit local memory take one pass. Longer lines, and lines along a
//!   strided axis longer than [`STRIDED_ONE`] points, are **global Stockham passes** of radices
//!   `R_1 R_2 .. = n`, each at most [`STRIDED_MAX`]: pass `p` (span `s = R_1 .. R_{p-1}`) takes
//!   line `m < n / R` as the points `m + t n / R`, multiplies point `t` by
//!   `exp(-+2 pi i (m mod s) t / (s R))`, transforms them, and stores point `k` at
//!   `(m / s) s R + m mod s + k s`. Its lines `m` are neighbours in memory, and a work-group
//!   holds at least 8 (mostly 16) of them, its threads walking the block line-fastest
//!   (`across`): every load and store reads runs of neighbouring elements. The scratch arrays
//!   between passes alternate.
//! - `rfft` of even `n`: a transform of `n / 2` points of the pairs `x[2j] + i x[2j+1]`, its
//!   store untangling the `n / 2 + 1` coefficients (one pass), or an element-wise pass doing so
//!   after global passes; `irfft` of even `n` the reverse (the load tangles the coefficients,
//!   an inverse transform of `n / 2` points stores pairs of reals). Odd `n`
//!   runs the complex transform of `n` points (real input promoted; a Hermitian spectrum
//!   extended while loading).
//!
//! Every array of the chain has the call's lines geometry: `pre` blocks of an axis of `len`
//! elements times `post`; element `n` of the axis of line `(o, i)` lies at
//! `(o * len + n) * post + i`. A line pass's line `L` is `(o, m, i)` (`i` fastest, then `m`,
//! the global pass's line), and reads axis element `m * mk + j * jk` for its point `j`.

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
const ADJACENT: usize = 16;
/// Longest line along a strided axis that takes one pass (a work-group then holds at least 8
/// neighbouring lines where local memory holds 4096 points; fewer where it holds less).
pub const STRIDED_ONE: usize = 512;
/// Longest radix of a global Stockham pass.
pub const STRIDED_MAX: usize = 256;
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
    /// Point `k` of the `nf / 2`-point line whose inverse transform gives the reals of an even
    /// `irfft` of `nf` points as pairs: `(X[k] + conj X[h - k]) + i w (X[k] - conj X[h - k])`
    /// with `w = exp(2 pi i k / nf)`, from the first `h + 1` coefficients (the imaginary parts
    /// of `X[0]` and `X[h]` ignored).
    Tangle { nf: usize },
    /// Nothing read: point `n` of Bluestein's filter of `nf` points zero-padded to `len`,
    /// `w_n` for `n < nf`, `w_(len - n)` for `len - n < nf`, else zero, with `w` the
    /// [`Chirp`] of `nf` points in direction `inverse` (`bluestein.rs`).
    Chirp {
        nf: usize,
        len: usize,
        inverse: bool,
    },
}

/// Bluestein's chirp of `nf` points: `w_k = exp(-+ pi i k^2 / nf)` (`+` for `inverse`), the
/// angle from the exact integer `k^2 mod 2 nf` (`kernel.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chirp {
    pub nf: usize,
    pub inverse: bool,
}

/// How a line pass writes a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Complex,
    /// The real part.
    Real,
    /// As the reals `2n`, `2n + 1` (an even `irfft`).
    RealPairs,
    /// The `h + 1` coefficients of the real transform of `nf = 2h` points, untangled from the
    /// line's `h`-point transform of the pairs: `X[k] = (Z[k] + conj Z[h - k]) / 2 - i w (Z[k]
    /// - conj Z[h - k]) / 2`, `w = exp(-2 pi i k / nf)` (one-pass even `rfft`s).
    Untangle {
        nf: usize,
    },
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
    /// Twiddle at the load for a global pass of span `s`: point `j` of line `m` times
    /// `exp(-+2 pi i (m mod s) j / (s len))`.
    pub twiddle: Option<usize>,
    /// Bluestein's premultiply at the load: axis element `n` times the chirp's `w_n`, zero
    /// from `n = nf` on.
    pub chirp_in: Option<Chirp>,
    /// Bluestein's filter at the load: axis element `n` times element `n` of this one-line
    /// array (a third buffer the pass binds).
    pub table: Option<Arr>,
    pub dst: Arr,
    pub store: Store,
    /// Output axis index of point `k` of line `m`: `(m / os) * ok + m mod os + k * kk`,
    /// written where below `limit`.
    pub os: usize,
    pub ok: usize,
    pub kk: usize,
    pub limit: usize,
    /// Bluestein's postmultiply at the store: output element `n` times the chirp's `w_n`.
    pub chirp_out: Option<Chirp>,
    pub scale: f64,
    /// Lines per work-group, threads per work-group, work-groups.
    pub batch: usize,
    pub local: usize,
    pub groups: usize,
    /// Threads walk a block's points line-fastest (its lines are neighbours in memory).
    pub across: bool,
    /// The pass transforms one line, whatever the call's batch (Bluestein's filter): it runs
    /// over [`Plan::one_line`]'s geometry.
    pub single: bool,
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
    /// Points of local memory the pass declares (whole groups of [`SWIZZLE`] points).
    pub fn shared(&self) -> usize {
        (self.batch * self.len).next_multiple_of(SWIZZLE)
    }
}

/// Local memory is swizzled in groups of `SWIZZLE` points (`kernel.rs`'s `slot`): point `x`
/// lies at `x ^ ((x >> 4) & 15)`, or `x ^ (((x >> 4) ^ (x >> 8)) & 15)` in `across` passes.
/// A radix stage's stores step `r` points apart, and a line-fastest load steps a line apart,
/// which unswizzled fall on a few of the banks (a 16-way conflict for `r = 8`); swizzled they
/// spread over all of them, with no memory spent.
pub const SWIZZLE: usize = 16;

/// One pass of the chain.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Lines(LinePass),
    /// An even `rfft`'s untangling where the transform takes several passes: `src` holds the
    /// `h`-point transforms of the pairs, `dst` the `h + 1` coefficients of the `n`-point real
    /// transform, times `scale`.
    R2cPost {
        src: Arr,
        dst: Arr,
        h: usize,
        n: usize,
        scale: f64,
    },
}

impl Step {
    /// The buffers the pass binds, in order: source, destination, and a line pass's
    /// [`LinePass::table`].
    pub fn buffers(&self) -> Vec<crate::proggen::codegen::gpu::BufArg> {
        match self {
            Step::Lines(p) => [p.src.buf, p.dst.buf]
                .into_iter()
                .chain(p.table.map(|t| t.buf))
                .collect(),
            Step::R2cPost { src, dst, .. } => vec![src.buf, dst.buf],
        }
    }
    /// The plan whose lines geometry the pass runs over: `g`, or one line for a
    /// [`LinePass::single`] pass.
    pub fn geometry(&self, g: &Plan) -> Plan {
        match self {
            Step::Lines(p) if p.single => Plan {
                pre: 1,
                post: 1,
                steps: Vec::new(),
                scratch: Vec::new(),
                ..*g
            },
            _ => Plan {
                steps: Vec::new(),
                scratch: Vec::new(),
                ..*g
            },
        }
    }
    /// Work-groups and threads of the pass.
    pub fn launch(&self, g: &Plan) -> (usize, usize) {
        match self {
            Step::Lines(p) => (p.groups, p.local),
            Step::R2cPost { h, .. } => (elem_groups(g.pre * (h + 1) * g.post), ELEM_LOCAL),
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
pub(super) struct Builder {
    pub(super) pre: usize,
    pub(super) post: usize,
    pub(super) lmax: usize,
    pub(super) scratch: Vec<usize>,
    pub(super) steps: Vec<Step>,
}

/// Where the transform of a chain reads and writes, and Bluestein's factors at its first
/// load and last store (see [`LinePass`]).
pub(super) struct Ends {
    pub(super) src: Arr,
    pub(super) load: Load,
    pub(super) copy: usize,
    pub(super) dst: Arr,
    pub(super) store: Store,
    pub(super) limit: usize,
    pub(super) scale: f64,
    pub(super) chirp_in: Option<Chirp>,
    pub(super) table: Option<Arr>,
    pub(super) chirp_out: Option<Chirp>,
}

impl Ends {
    /// A plain transform from `src` to `dst`, no Bluestein factors.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plain(
        src: Arr,
        load: Load,
        copy: usize,
        dst: Arr,
        store: Store,
        limit: usize,
        scale: f64,
    ) -> Ends {
        Ends {
            src,
            load,
            copy,
            dst,
            store,
            limit,
            scale,
            chirp_in: None,
            table: None,
            chirp_out: None,
        }
    }
}

impl Builder {
    pub(super) fn scratch(&mut self, len: usize) -> Arr {
        self.scratch.push(self.pre * len * self.post);
        Arr {
            buf: BufArg::Scratch(self.scratch.len() as u32 - 1),
            len,
        }
    }

    /// One line pass: `len`-point lines `(o, m, i)`, `m < mc`, read at `m * mk + j * jk` (times
    /// the load twiddle of span `twiddle`) and stored at `(m / os) * ok + m mod os + k * kk`.
    fn line(&mut self, len: usize, inverse: bool, mc: usize, from: From, to: To, scale: f64) {
        let radices = radices(len).expect("checked");
        let lines = self.pre * mc * self.post;
        // Lines next to each other in memory (a strided axis, or a global pass's lines) load
        // together, `ADJACENT` of them per work-group where local memory holds them, threads
        // walking them line-fastest so that each load and store reads neighbours.
        let across = self.post > 1 || mc > 1;
        let batch = if across {
            (GROUP_POINTS.max(ADJACENT * len) / len).min(self.lmax / len)
        } else {
            GROUP_POINTS / len
        }
        .clamp(1, lines.max(1));
        let min_r = radices.iter().copied().min().unwrap_or(1);
        let work = batch * len / min_r;
        let local = work.next_multiple_of(64).clamp(64, MAX_LOCAL);
        let groups = lines.div_ceil(batch).clamp(1, MAX_GROUPS);
        self.steps.push(Step::Lines(LinePass {
            len,
            radices,
            inverse,
            mc,
            src: from.arr,
            load: from.load,
            copy: from.copy,
            mk: from.mk,
            jk: from.jk,
            twiddle: from.twiddle,
            chirp_in: from.chirp_in,
            table: from.table,
            dst: to.arr,
            store: to.store,
            os: to.os,
            ok: to.ok,
            kk: to.kk,
            limit: to.limit,
            chirp_out: to.chirp_out,
            scale,
            batch,
            local,
            groups,
            across,
            single: false,
        }));
    }

    /// Whether a transform of `n` points takes one line pass.
    pub(super) fn one_pass(&self, n: usize) -> bool {
        n <= if self.post > 1 {
            STRIDED_ONE.min(self.lmax)
        } else {
            self.lmax
        }
    }

    /// The transform of `n` points from `e.src` to `e.dst`: one line pass, or global Stockham
    /// passes; Bluestein's algorithm (`bluestein.rs`) where `n` has a prime factor above 7.
    pub(super) fn transform(
        &mut self,
        n: usize,
        inverse: bool,
        e: Ends,
    ) -> Result<(), Unsupported> {
        if radices(n).is_none() {
            return self.bluestein(n, inverse, e);
        }
        if self.one_pass(n) {
            let from = From {
                arr: e.src,
                load: e.load,
                copy: e.copy,
                mk: 0,
                jk: 1,
                twiddle: None,
                chirp_in: e.chirp_in,
                table: e.table,
            };
            let to = To {
                arr: e.dst,
                store: e.store,
                os: 1,
                ok: 0,
                kk: 1,
                limit: e.limit,
                chirp_out: e.chirp_out,
            };
            self.line(n, inverse, 1, from, to, e.scale);
            return Ok(());
        }
        let cap = STRIDED_MAX.min(self.lmax);
        let Some(factors) = split(n, cap) else {
            return Err(Unsupported(format!(
                "fft of {n} points: more passes of {cap} than the plan takes (the CPU runs it)"
            )));
        };
        let mids = [
            self.scratch(n),
            if factors.len() > 2 {
                self.scratch(n)
            } else {
                e.dst
            },
        ];
        let (mut arr, mut load, mut copy) = (e.src, e.load, e.copy);
        let mut span = 1;
        for (p, &r) in factors.iter().enumerate() {
            let (first, last) = (p == 0, p + 1 == factors.len());
            let from = From {
                arr,
                load,
                copy,
                mk: 1,
                jk: n / r,
                twiddle: (span > 1).then_some(span),
                chirp_in: e.chirp_in.filter(|_| first),
                table: e.table.filter(|_| first),
            };
            let dst = if last { e.dst } else { mids[p % 2] };
            let to = To {
                arr: dst,
                store: if last { e.store } else { Store::Complex },
                os: span,
                ok: span * r,
                kk: span,
                limit: if last { e.limit } else { n },
                chirp_out: e.chirp_out.filter(|_| last),
            };
            self.line(
                r,
                inverse,
                n / r,
                from,
                to,
                if last { e.scale } else { 1.0 },
            );
            (arr, load, copy) = (dst, Load::Complex, n);
            span *= r;
        }
        Ok(())
    }
}

/// Where a line pass reads: the array, how, the elements holding data, the strides of line
/// and point, the load twiddle's span.
struct From {
    arr: Arr,
    load: Load,
    copy: usize,
    mk: usize,
    jk: usize,
    twiddle: Option<usize>,
    chirp_in: Option<Chirp>,
    table: Option<Arr>,
}

/// Where a line pass writes (see [`LinePass`]).
struct To {
    arr: Arr,
    store: Store,
    os: usize,
    ok: usize,
    kk: usize,
    limit: usize,
    chirp_out: Option<Chirp>,
}

/// `n` as the fewest factors of at most `cap` points (its prime factors dealt largest first to
/// the smallest product they fit), largest first; `None` beyond four.
pub fn split(n: usize, cap: usize) -> Option<Vec<usize>> {
    let mut primes = Vec::new();
    let mut left = n;
    for p in [7, 5, 3, 2] {
        while left.is_multiple_of(p) && left > 1 {
            primes.push(p);
            left /= p;
        }
    }
    'passes: for count in 2..=4 {
        let mut bins = vec![1usize; count];
        for &p in &primes {
            let Some(b) = bins
                .iter_mut()
                .filter(|b| **b * p <= cap)
                .min_by_key(|b| **b)
            else {
                continue 'passes;
            };
            *b *= p;
        }
        bins.sort_unstable_by(|a, b| b.cmp(a));
        return Some(bins);
    }
    None
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
    // Real transforms of a length with a prime factor above 7 run Bluestein's complex
    // transform of `n` points, as odd lengths do (real input promoted; a Hermitian spectrum
    // extended while loading).
    let halved = n % 2 == 0 && radices(n).is_some();
    match spec.kind {
        Kind::C2c { inverse } => b.transform(
            n,
            inverse,
            Ends::plain(
                input,
                if complex_in {
                    Load::Complex
                } else {
                    Load::Real
                },
                m.min(n),
                output,
                Store::Complex,
                n,
                s,
            ),
        )?,
        Kind::R2c if halved && b.one_pass(n / 2) => b.transform(
            n / 2,
            false,
            Ends::plain(
                input,
                Load::RealPairs,
                m.min(n),
                output,
                Store::Untangle { nf: n },
                n / 2 + 1,
                s,
            ),
        )?,
        Kind::R2c if halved => {
            let h = n / 2;
            let mid = b.scratch(h);
            b.transform(
                h,
                false,
                Ends::plain(
                    input,
                    Load::RealPairs,
                    m.min(n),
                    mid,
                    Store::Complex,
                    h,
                    1.0,
                ),
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
            Ends::plain(
                input,
                Load::Real,
                m.min(n),
                output,
                Store::Complex,
                spec.half(),
                s,
            ),
        )?,
        Kind::C2r if halved => b.transform(
            n / 2,
            true,
            Ends::plain(
                input,
                Load::Tangle { nf: n },
                m.min(n / 2 + 1),
                output,
                Store::RealPairs,
                n / 2,
                s,
            ),
        )?,
        Kind::C2r => b.transform(
            n,
            true,
            Ends::plain(
                input,
                Load::Hermitian { nf: n },
                m.min(spec.half()),
                output,
                Store::Real,
                n,
                s,
            ),
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

    #[test]
    fn global_passes_split_long_lines() {
        assert_eq!(split(1 << 24, 256), Some(vec![256, 256, 256]));
        assert_eq!(split(1 << 22, 256), Some(vec![256, 128, 128]));
        assert_eq!(split(4096, 256), Some(vec![64, 64]));
        for n in [4096, 61440, 6 * 2048, 1 << 16, 3 * 5 * 7 * 64] {
            let f = split(n, 256).unwrap();
            assert_eq!(f.iter().product::<usize>(), n);
            assert!(f.iter().all(|&r| r <= 256));
        }
    }
}
