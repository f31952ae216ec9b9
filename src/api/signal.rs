//! Convolution and correlation (`arrayflow::signal`, SciPy's `scipy.signal.convolve` /
//! `correlate` and `convolve2d` / `correlate2d`): over the last axis or the last two, batched
//! over the leading axes, real (`f32`, `f64`) and complex, in SciPy's three modes ([`Mode`]).
//!
//! Two methods ([`Method`]): **direct**, the `convolve` intrinsic (`intrinsics/conv/`: one
//! kernel on every executor; a complex convolution is four real ones), and **FFT**: both
//! operands transformed at a 2·3·5·7-smooth length of at least `n + m - 1` per axis, multiplied,
//! transformed back and cropped. [`Method::Auto`] takes ArrayFire's switch-over: direct for
//! filters of at most 128 taps in 1-D and at most 17 per side in 2-D, FFT beyond. Direct results
//! round like a sum of the filter's terms; FFT results by about `log2(n) eps` of the input's
//! norm, so entries far below the largest ones carry that absolute error.

use super::array::{Array, ok, site};
use super::element::{ComplexFloat, Float, Inexact};
use super::fft::{FftInput, Norm, try_fftn, try_ifftn, try_irfftn, try_rfftn};
use super::view::Slice;
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::intrinsics::conv::Geom;
use crate::ir::Intrinsic;
use num_complex::Complex;

pub use crate::ir::ConvMode as Mode;

/// How a convolution is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Direct for filters of at most 128 taps (1-D) or 17 per side (2-D), FFT beyond.
    #[default]
    Auto,
    /// Every output as the sum of its terms (the `convolve` intrinsic).
    Direct,
    /// Through Fourier transforms of both operands.
    Fft,
}

impl Method {
    /// The method [`Method::Auto`] picks for a filter with these convolved lengths.
    pub fn auto_for(filter: &[usize]) -> Method {
        let direct = match filter {
            [m] => *m <= 128,
            sides => sides.iter().all(|&m| m <= 17),
        };
        if direct { Method::Direct } else { Method::Fft }
    }
}

/// Element types the convolutions take: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub trait Convolvable: Inexact + Conj {
    #[doc(hidden)]
    fn convolve_with(x: &Array<Self>, k: &Array<Self>, s: Spec) -> Result<Array<Self>>;
}

/// One convolution call (not public API).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    rank: usize,
    mode: Mode,
    method: Method,
}

/// The convolution of `x` with the filter `k` over the last axis (SciPy's `convolve` of 1-D
/// operands, batched): `y[i] = sum_p k[p] x[i + off - p]`, with the length and offset `mode`
/// gives ([`Mode`]: `Full` is `n + m - 1` long, `Same` `n`, `Valid` `n - m + 1`). `x` may have
/// leading axes (a batch of signals); `k` is one filter for all of them (`[m]`) or one per
/// signal (the same leading axes). Bad shapes (an empty operand, a `Valid` filter longer than
/// the signal, a filter whose leading axes differ) panic with an error naming your line; see
/// [`try_convolve`].
///
/// ```
/// use arrayflow::Array;
/// use arrayflow::signal::{self, Method, Mode};
///
/// let x = Array::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
/// let k = Array::from_vec(vec![0.0f64, 1.0, 0.5], &[3]);
/// let full = signal::convolve(&x, &k, Mode::Full, Method::Auto);
/// assert_eq!(full.to_vec()?, [0.0, 1.0, 2.5, 4.0, 1.5]);
/// assert_eq!(signal::convolve(&x, &k, Mode::Same, Method::Direct).to_vec()?, [1.0, 2.5, 4.0]);
/// let v = signal::convolve(&x, &k, Mode::Valid, Method::Fft).to_vec()?;
/// assert!((v[0] - 2.5).abs() < 1e-12);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn convolve<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Array<T> {
    ok(try_convolve(x, k, mode, method))
}
/// Like [`convolve`], returning an error (naming your line) instead of panicking.
#[track_caller]
pub fn try_convolve<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Result<Array<T>> {
    T::convolve_with(
        x,
        k,
        Spec {
            rank: 1,
            mode,
            method,
        },
    )
}

/// The cross-correlation of `x` with `k` over the last axis (SciPy's `correlate`):
/// `y[i] = sum_p conj(k[p]) x[i + off' + p]`, which is [`convolve`] with `k` reversed (and
/// conjugated), in the same modes. See [`convolve`] for shapes and errors.
///
/// ```
/// use arrayflow::Array;
/// use arrayflow::signal::{self, Method, Mode};
///
/// let x = Array::from_vec(vec![0.0f32, 0.0, 1.0, 2.0, 0.0], &[5]);
/// let k = Array::from_vec(vec![1.0f32, 2.0], &[2]);
/// // The best match of k in x starts at position 2 (valid lag 2).
/// assert_eq!(signal::correlate(&x, &k, Mode::Valid, Method::Direct).to_vec()?, [0.0, 2.0, 5.0, 2.0]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn correlate<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Array<T> {
    ok(try_correlate(x, k, mode, method))
}
/// Like [`correlate`], returning an error instead of panicking.
#[track_caller]
pub fn try_correlate<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Result<Array<T>> {
    let k = reversed(k, 1)?;
    T::convolve_with(
        x,
        &k,
        Spec {
            rank: 1,
            mode,
            method,
        },
    )
}

/// The 2-D convolution of `x` with `k` over the last two axes (SciPy's `convolve2d` with zero
/// boundaries), batched over leading axes as [`convolve`] is: an image `[h, w]` or a stack
/// `[.., h, w]`, a filter `[mh, mw]` or one per image.
///
/// ```
/// use arrayflow::Array;
/// use arrayflow::signal::{self, Method, Mode};
///
/// let img = Array::from_vec((0..16).map(|v| v as f32).collect(), &[4, 4]);
/// let box3 = Array::full(&[3, 3], 1.0f32 / 9.0);
/// let blur = signal::convolve2d(&img, &box3, Mode::Valid, Method::Auto);
/// assert_eq!(blur.shape(), &[2, 2]);
/// assert!((blur.to_vec()?[0] - 5.0).abs() < 1e-5); // the mean of the top-left 3 x 3 block
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn convolve2d<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Array<T> {
    ok(try_convolve2d(x, k, mode, method))
}
/// Like [`convolve2d`], returning an error instead of panicking.
#[track_caller]
pub fn try_convolve2d<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Result<Array<T>> {
    T::convolve_with(
        x,
        k,
        Spec {
            rank: 2,
            mode,
            method,
        },
    )
}

/// The 2-D cross-correlation (SciPy's `correlate2d`): [`convolve2d`] with `k` reversed along
/// both axes (and conjugated).
#[track_caller]
pub fn correlate2d<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Array<T> {
    ok(try_correlate2d(x, k, mode, method))
}
/// Like [`correlate2d`], returning an error instead of panicking.
#[track_caller]
pub fn try_correlate2d<T: Convolvable>(
    x: &Array<T>,
    k: &Array<T>,
    mode: Mode,
    method: Method,
) -> Result<Array<T>> {
    let k = reversed(k, 2)?;
    T::convolve_with(
        x,
        &k,
        Spec {
            rank: 2,
            mode,
            method,
        },
    )
}

/// `k` reversed along its last `rank` axes and conjugated (a view and a fused op).
#[track_caller]
fn reversed<T: Convolvable>(k: &Array<T>, rank: usize) -> Result<Array<T>> {
    let nd = k.shape().len();
    if nd < rank {
        return Err(shape_error(format!(
            "a filter over {rank} axes needs at least {rank} axes, not shape {:?}",
            k.shape()
        )));
    }
    let s: Vec<Slice> = (0..nd)
        .map(|a| {
            if a >= nd - rank {
                Slice::new(None, None, -1)
            } else {
                Slice::new(None, None, 1)
            }
        })
        .collect();
    Ok(T::conj_of(&k.try_slice(&s)?))
}

#[track_caller]
fn shape_error(msg: String) -> Error {
    Error::new(ErrorKind::Shape, msg).at(site())
}

/// The call's geometry: the shape checks every method shares (the intrinsic's).
#[track_caller]
fn geometry(x: &[usize], k: &[usize], s: Spec) -> Result<Geom> {
    match Geom::of(s.rank, s.mode, x, k) {
        Ok(g) => Ok(g),
        Err(e) => Err(shape_error(e)),
    }
}

/// Conjugation where it applies (not public API).
#[doc(hidden)]
pub trait Conj: Sized {
    #[doc(hidden)]
    fn conj_of(a: &Array<Self>) -> Array<Self>
    where
        Self: super::element::Element;
}

/// The real convolution: the intrinsic, or real transforms.
#[track_caller]
fn real<F>(x: &Array<F>, k: &Array<F>, s: Spec) -> Result<Array<F>>
where
    F: Float + FftInput,
    F::Complex: ComplexFloat<Part = F>,
{
    let g = geometry(x.shape(), k.shape(), s)?;
    match method_of(&g, s) {
        Method::Direct => Ok(Array::wrap(frontend::intrinsic(
            Intrinsic::Convolve {
                rank: s.rank,
                mode: s.mode,
            },
            &[&x.h, &k.h],
            site(),
        )?)),
        _ => {
            let (len, xa, ka) = fft_plan(&g, x.shape(), k.shape(), s.rank);
            let fx = try_rfftn(x, Some(&len), Some(&xa), Norm::Backward)?;
            let fk = try_rfftn(k, Some(&len), Some(&ka), Norm::Backward)?;
            let full = try_irfftn(&(&fx * &fk), Some(&len), Some(&xa), Norm::Backward)?;
            crop(&full, &g, s.rank)
        }
    }
}

/// The complex convolution: four real direct ones, or complex transforms.
#[track_caller]
fn complex<C>(x: &Array<C>, k: &Array<C>, s: Spec) -> Result<Array<C>>
where
    C: ComplexFloat + FftInput<Complex = C>,
    C::Part: Float + FftInput,
    <C::Part as FftInput>::Complex: ComplexFloat<Part = C::Part>,
{
    let g = geometry(x.shape(), k.shape(), s)?;
    match method_of(&g, s) {
        Method::Direct => {
            let (xr, xi, kr, ki) = (x.re(), x.im(), k.re(), k.im());
            let re = &real(&xr, &kr, s)? - &real(&xi, &ki, s)?;
            let im = &real(&xr, &ki, s)? + &real(&xi, &kr, s)?;
            Ok(re.complex(&im))
        }
        _ => {
            let (len, xa, ka) = fft_plan(&g, x.shape(), k.shape(), s.rank);
            let fx = try_fftn(x, Some(&len), Some(&xa), Norm::Backward)?;
            let fk = try_fftn(k, Some(&len), Some(&ka), Norm::Backward)?;
            let full = try_ifftn(&(&fx * &fk), Some(&len), Some(&xa), Norm::Backward)?;
            crop(&full, &g, s.rank)
        }
    }
}

fn method_of(g: &Geom, s: Spec) -> Method {
    match s.method {
        Method::Auto => Method::auto_for(&g.m[2 - s.rank..]),
        m => m,
    }
}

/// Transform lengths (a 2·3·5·7-smooth length of at least `n + m - 1` per convolved axis) and
/// the convolved axes of `x` and of `k`.
fn fft_plan(
    g: &Geom,
    x: &[usize],
    k: &[usize],
    rank: usize,
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let len = (2 - rank..2).map(|a| smooth(g.n[a] + g.m[a] - 1)).collect();
    let xa = (x.len() - rank..x.len()).collect();
    let ka = (k.len() - rank..k.len()).collect();
    (len, xa, ka)
}

/// The smallest 2·3·5·7-smooth number at least `n`.
fn smooth(n: usize) -> usize {
    (n.max(1)..)
        .find(|&c| {
            let mut v = c;
            for p in [2, 3, 5, 7] {
                while v % p == 0 {
                    v /= p;
                }
            }
            v == 1
        })
        .expect("smooth numbers are unbounded")
}

/// The mode's part of a full result (computed at transform lengths at least as long).
#[track_caller]
fn crop<T: super::element::Element>(full: &Array<T>, g: &Geom, rank: usize) -> Result<Array<T>> {
    let nd = full.shape().len();
    let s: Vec<Slice> = (0..nd)
        .map(|a| match (a + rank).checked_sub(nd) {
            Some(d) => {
                let ax = 2 - rank + d;
                let (o, off) = (g.o[ax] as isize, g.off[ax] as isize);
                Slice::new(Some(off), Some(off + o), 1)
            }
            None => Slice::new(None, None, 1),
        })
        .collect();
    full.try_slice(&s)
}

macro_rules! real_impl {
    ($f:ty) => {
        impl Convolvable for $f {
            #[track_caller]
            fn convolve_with(x: &Array<$f>, k: &Array<$f>, s: Spec) -> Result<Array<$f>> {
                real(x, k, s)
            }
        }
        impl Conj for $f {
            fn conj_of(a: &Array<$f>) -> Array<$f> {
                a.clone()
            }
        }
    };
}
macro_rules! complex_impl {
    ($f:ty) => {
        impl Convolvable for Complex<$f> {
            #[track_caller]
            fn convolve_with(
                x: &Array<Complex<$f>>,
                k: &Array<Complex<$f>>,
                s: Spec,
            ) -> Result<Array<Complex<$f>>> {
                complex(x, k, s)
            }
        }
        impl Conj for Complex<$f> {
            #[track_caller]
            fn conj_of(a: &Array<Complex<$f>>) -> Array<Complex<$f>> {
                a.conj()
            }
        }
    };
}
real_impl!(f32);
real_impl!(f64);
complex_impl!(f32);
complex_impl!(f64);
