//! Discrete Fourier transforms (`arrayflow::fft`), NumPy's `numpy.fft`: [`fft`]/[`ifft`] along
//! one axis, [`fft2`]/[`ifft2`] over the last two, [`fftn`]/[`ifftn`] over chosen axes, the
//! real transforms [`rfft`]/[`irfft`], [`rfft2`]/[`irfft2`], [`rfftn`]/[`irfftn`], NumPy's
//! normalisation modes ([`Norm`]), and the helpers [`fftfreq`], [`rfftfreq`], [`fftshift`] and
//! [`ifftshift`].
//!
//! Each one-axis transform is an intrinsic (`intrinsics/fft/`): rustfft and realfft on the CPU,
//! batched over the other axes and run in parallel over the batch; every length (powers of two,
//! mixed radices, primes). The GPU executors run it on the CPU for now (their CPU fallback).
//! The n-dimensional forms are one transform per axis.
//!
//! Conventions are NumPy's: the forward transform is `X_k = sum_j x_j exp(-2 pi i jk / n)`; `n`
//! crops the input axis or pads it with zeros; a real array given to `fft`/`ifft` is read as
//! complex with zero imaginary parts; the result is `Complex<f32>` for f32 and `Complex<f32>`
//! inputs, `Complex<f64>` for f64 ones. Bad arguments (an axis out of range, a zero length, an
//! integer array) panic with an error naming your line; the `try_` forms return it.
//!
//! Accuracy: a transform of length `n` rounds by about `log2(n) * eps` relative to the 2-norm of
//! its input line (`tests/fft.rs` holds every length class to `4 log2(n) eps` of it in the
//! 2-norm of each output line).
//!
//! ```
//! use arrayflow::{Array, Complex, fft};
//! use fft::Norm;
//!
//! let x = Array::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]);
//! let y = fft::fft(&x, None, 0, Norm::Backward); // real input, complex output
//! let c = |re, im| Complex::new(re, im);
//! assert_eq!(y.to_vec()?, [c(10.0, 0.0), c(-2.0, 2.0), c(-2.0, 0.0), c(-2.0, -2.0)]);
//! assert_eq!(fft::ifft(&y, None, 0, Norm::Backward).re().to_vec()?, [1.0, 2.0, 3.0, 4.0]);
//!
//! // The real transform keeps the n / 2 + 1 coefficients that determine the rest.
//! let r = fft::rfft(&x, None, 0, Norm::Backward);
//! assert_eq!(r.to_vec()?, [c(10.0, 0.0), c(-2.0, 2.0), c(-2.0, 0.0)]);
//! assert_eq!(fft::irfft(&r, Some(4), 0, Norm::Backward).to_vec()?, [1.0, 2.0, 3.0, 4.0]);
//!
//! // Frequencies of the bins (cycles per unit of the sample spacing d = 0.5) and the shift
//! // that puts frequency 0 in the middle.
//! assert_eq!(fft::fftfreq::<f64>(4, 0.5).to_vec()?, [0.0, 0.5, -1.0, -0.5]);
//! assert_eq!(fft::fftshift(&fft::fftfreq::<f64>(4, 0.5), None).to_vec()?, [-1.0, -0.5, 0.0, 0.5]);
//! # Ok::<(), arrayflow::Error>(())
//! ```

use super::array::{Array, ok, site};
use super::element::{ComplexFloat, Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::frontend;
use crate::ir::Intrinsic;
use num_complex::Complex;

pub use crate::ir::FftNorm as Norm;

/// Element types [`fft`] and [`ifft`] take: `Complex<f32>`, `Complex<f64>`, and the real `f32`
/// and `f64` (read as complex with zero imaginary parts, as NumPy does).
pub trait FftInput: Element {
    /// The complex type of the result: `Complex<f32>` for f32 and `Complex<f32>` inputs,
    /// `Complex<f64>` for f64 ones.
    type Complex: ComplexFloat;
}
impl FftInput for f32 {
    type Complex = Complex<f32>;
}
impl FftInput for f64 {
    type Complex = Complex<f64>;
}
impl FftInput for Complex<f32> {
    type Complex = Complex<f32>;
}
impl FftInput for Complex<f64> {
    type Complex = Complex<f64>;
}

/// An argument error at the caller's line.
#[track_caller]
fn bad(msg: String) -> Error {
    Error::new(ErrorKind::Argument, msg).at(site())
}

/// Records one intrinsic call on `x`.
#[track_caller]
fn call<T: Element, U: Element>(op: Intrinsic, x: &Array<T>) -> Result<Array<U>> {
    Ok(Array::wrap(frontend::intrinsic(op, &[&x.h], site())?))
}

/// The length along `axis` (0 when the axis is out of range: the intrinsic's check reports it).
fn len_along<T: Element>(x: &Array<T>, axis: usize) -> usize {
    x.shape().get(axis).copied().unwrap_or(0)
}

/// The discrete Fourier transform along `axis` (NumPy's `fft.fft`), batched over the other
/// axes: `X_k = sum_j x_j exp(-2 pi i jk / n)` for `k < n`, times `norm`'s forward factor. `n`
/// is the transform's length: the axis is cropped to it or padded with zeros (`None`: the
/// axis's length). A real array is read as complex with zero imaginary parts.
///
/// ```
/// use arrayflow::{Array, Complex, fft};
///
/// // Two signals of 4 points along axis 1; one impulse, one constant.
/// let x = Array::from_vec(vec![0.0f32, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0], &[2, 4]);
/// let y = fft::fft(&x, None, 1, fft::Norm::Backward);
/// let c = |re, im| Complex::new(re, im);
/// assert_eq!(y.shape(), &[2, 4]);
/// assert_eq!(y.to_vec()?, [c(1.0, 0.0), c(0.0, -1.0), c(-1.0, 0.0), c(0.0, 1.0),
///                          c(4.0, 0.0), c(0.0, 0.0), c(0.0, 0.0), c(0.0, 0.0)]);
/// // n = 8: each signal padded with zeros to 8 points.
/// assert_eq!(fft::fft(&x, Some(8), 1, fft::Norm::Backward).shape(), &[2, 8]);
/// assert!(fft::try_fft(&x, None, 2, fft::Norm::Backward).is_err()); // no axis 2
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn fft<T: FftInput>(
    x: &Array<T>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Array<T::Complex> {
    ok(try_fft(x, n, axis, norm))
}
/// Like [`fft`], returning an error (naming your line) for an axis out of range, a length of 0
/// or an integer array.
#[track_caller]
pub fn try_fft<T: FftInput>(
    x: &Array<T>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    one_axis(x, n, axis, norm, false)
}

/// The inverse transform along `axis` (NumPy's `fft.ifft`): `x_j = sum_k X_k exp(2 pi i jk / n)`
/// times `norm`'s inverse factor (`1 / n` by default), so `ifft(fft(x)) == x` up to rounding.
/// `n` crops or zero-pads the axis as in [`fft`].
#[track_caller]
pub fn ifft<T: FftInput>(
    x: &Array<T>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Array<T::Complex> {
    ok(try_ifft(x, n, axis, norm))
}
/// Like [`ifft`], returning an error instead of panicking.
#[track_caller]
pub fn try_ifft<T: FftInput>(
    x: &Array<T>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    one_axis(x, n, axis, norm, true)
}

#[track_caller]
fn one_axis<T: FftInput>(
    x: &Array<T>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
    inverse: bool,
) -> Result<Array<T::Complex>> {
    let n = n.unwrap_or_else(|| len_along(x, axis));
    call(
        Intrinsic::Fft {
            axis,
            n,
            inverse,
            norm,
        },
        x,
    )
}

/// The last two axes, or an error naming `what`.
#[track_caller]
fn last_two<T: Element>(x: &Array<T>, what: &str) -> Result<[usize; 2]> {
    let r = x.ndim();
    if r < 2 {
        return Err(bad(format!(
            "`{what}` of an array of shape {:?}: it transforms the last two axes",
            x.shape()
        )));
    }
    Ok([r - 2, r - 1])
}

/// The 2-D transform over the last two axes (NumPy's `fft.fft2`), batched over the leading
/// ones: [`fft`] along each. `s` gives the two transform lengths (cropping or zero-padding
/// each axis; `None`: the axes' lengths).
///
/// ```
/// use arrayflow::{Array, Complex, fft};
///
/// let x = Array::<f64>::ones(&[3, 2, 4]); // three 2 x 4 images
/// let y = fft::fft2(&x, None, fft::Norm::Backward).to_vec()?;
/// assert_eq!(y[0], Complex::new(8.0, 0.0)); // the sum of the image
/// assert!(y[1..8].iter().all(|z| z.norm() == 0.0));
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn fft2<T: FftInput>(x: &Array<T>, s: Option<[usize; 2]>, norm: Norm) -> Array<T::Complex> {
    ok(try_fft2(x, s, norm))
}
/// Like [`fft2`], returning an error (an array of fewer than two axes, a zero length).
#[track_caller]
pub fn try_fft2<T: FftInput>(
    x: &Array<T>,
    s: Option<[usize; 2]>,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    let axes = last_two(x, "fft2")?;
    try_fftn(x, s.as_ref().map(|s| &s[..]), Some(&axes), norm)
}
/// The inverse of [`fft2`] (NumPy's `fft.ifft2`).
#[track_caller]
pub fn ifft2<T: FftInput>(x: &Array<T>, s: Option<[usize; 2]>, norm: Norm) -> Array<T::Complex> {
    ok(try_ifft2(x, s, norm))
}
/// Like [`ifft2`], returning an error instead of panicking.
#[track_caller]
pub fn try_ifft2<T: FftInput>(
    x: &Array<T>,
    s: Option<[usize; 2]>,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    let axes = last_two(x, "ifft2")?;
    try_ifftn(x, s.as_ref().map(|s| &s[..]), Some(&axes), norm)
}

/// NumPy's rules for `s` and `axes` of the n-dimensional transforms: `axes` default to every
/// axis, or to the last `s.len()` when only `s` is given; `s` defaults to the axes' lengths
/// (`real_inverse`: the last one `2 (m - 1)`, as `irfftn`).
#[track_caller]
fn nd_args<T: Element>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    what: &str,
    real_inverse: bool,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let r = x.ndim();
    let axes: Vec<usize> = match (axes, s) {
        (Some(a), _) => a.to_vec(),
        (None, Some(s)) if s.len() > r => {
            return Err(bad(format!(
                "`{what}`: {} lengths for an array of shape {:?}",
                s.len(),
                x.shape()
            )));
        }
        (None, Some(s)) => (r - s.len()..r).collect(),
        (None, None) => (0..r).collect(),
    };
    if let Some(&a) = axes.iter().find(|&&a| a >= r) {
        return Err(bad(format!(
            "`{what}` axis {a} is out of range for shape {:?}",
            x.shape()
        )));
    }
    let s = match s {
        Some(s) if s.len() != axes.len() => {
            return Err(bad(format!(
                "`{what}`: {} lengths for {} axes; give one length per axis",
                s.len(),
                axes.len()
            )));
        }
        Some(s) => s.to_vec(),
        None => {
            let mut s: Vec<usize> = axes.iter().map(|&a| x.shape()[a]).collect();
            if real_inverse && let Some(last) = s.last_mut() {
                *last = 2 * last.saturating_sub(1);
            }
            s
        }
    };
    Ok((s, axes))
}

/// The n-dimensional transform over `axes` (NumPy's `fft.fftn`): [`fft`] along each, with the
/// lengths `s` (cropping or zero-padding). `axes: None` is every axis, or the last `s.len()`
/// when `s` is given; `s: None` keeps the axes' lengths.
///
/// ```
/// use arrayflow::{Array, Complex, fft};
/// use fft::Norm;
///
/// let x = Array::<f32>::iota(&[2, 3, 4], 2); // x[i, j, k] = k
/// let all = fft::fftn(&x, None, None, Norm::Backward).to_vec()?;
/// assert_eq!(all[0], Complex::new(36.0, 0.0)); // 6 lines of 0 + 1 + 2 + 3
/// let two = fft::fftn(&x, Some(&[3, 8]), None, Norm::Backward); // the last two, k padded to 8
/// assert_eq!(two.shape(), &[2, 3, 8]);
/// assert_eq!(fft::fftn(&x, None, Some(&[0]), Norm::Backward).shape(), &[2, 3, 4]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn fftn<T: FftInput>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Array<T::Complex> {
    ok(try_fftn(x, s, axes, norm))
}
/// Like [`fftn`], returning an error (an axis out of range, `s` and `axes` of different
/// lengths, a zero length).
#[track_caller]
pub fn try_fftn<T: FftInput>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    nd(x, s, axes, norm, false)
}
/// The inverse of [`fftn`] (NumPy's `fft.ifftn`).
#[track_caller]
pub fn ifftn<T: FftInput>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Array<T::Complex> {
    ok(try_ifftn(x, s, axes, norm))
}
/// Like [`ifftn`], returning an error instead of panicking.
#[track_caller]
pub fn try_ifftn<T: FftInput>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Result<Array<T::Complex>> {
    nd(x, s, axes, norm, true)
}

#[track_caller]
fn nd<T: FftInput>(
    x: &Array<T>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
    inverse: bool,
) -> Result<Array<T::Complex>> {
    let what = if inverse { "ifftn" } else { "fftn" };
    let (s, axes) = nd_args(x, s, axes, what, false)?;
    let (Some(&n), Some(&axis)) = (s.last(), axes.last()) else {
        return Ok(x.cast()); // no axes: NumPy returns the array
    };
    let y = one_axis(x, Some(n), axis, norm, inverse)?;
    let k = axes.len() - 1;
    complex_axes(y, &s[..k], &axes[..k], norm, inverse)
}

/// The transform of a real array along `axis` (NumPy's `fft.rfft`): the first `n / 2 + 1`
/// coefficients of [`fft`] (the others are their complex conjugates, `X_{n-k} = conj(X_k)`).
/// `n` crops or zero-pads the axis (`None`: its length).
///
/// ```
/// use arrayflow::{Array, fft};
///
/// let x = Array::<f64>::linspace(0.0, 1.0, 7);
/// let r = fft::rfft(&x, None, 0, fft::Norm::Backward);
/// assert_eq!(r.shape(), &[4]);
/// let full = fft::fft(&x, None, 0, fft::Norm::Backward).to_vec()?;
/// for (a, b) in r.to_vec()?.iter().zip(&full) {
///     assert!((a - b).norm() < 1e-12);
/// }
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn rfft<F: Float + FftInput>(
    x: &Array<F>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Array<F::Complex> {
    ok(try_rfft(x, n, axis, norm))
}
/// Like [`rfft`], returning an error (naming your line) for an axis out of range or a length
/// of 0.
#[track_caller]
pub fn try_rfft<F: Float + FftInput>(
    x: &Array<F>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Result<Array<F::Complex>> {
    let n = n.unwrap_or_else(|| len_along(x, axis));
    call(Intrinsic::Rfft { axis, n, norm }, x)
}

/// The inverse of [`rfft`] (NumPy's `fft.irfft`): the `n` real values whose transform's first
/// coefficients are `x` along `axis`. Of `x`'s axis the first `n / 2 + 1` coefficients are used
/// (cropped, or padded with zeros); the imaginary parts of coefficient 0, and of `n / 2` for
/// even `n`, are ignored. `n: None` is `2 (m - 1)` for an axis of `m` coefficients: pass the
/// length of the signal when it was odd.
///
/// ```
/// use arrayflow::{Array, fft};
/// use fft::Norm;
///
/// let x = Array::from_vec(vec![1.0f32, 5.0, -2.0, 0.5, 3.0], &[5]);
/// let r = fft::rfft(&x, None, 0, Norm::Ortho); // 3 coefficients
/// let back = fft::irfft(&r, Some(5), 0, Norm::Ortho).to_vec()?;
/// for (a, b) in back.iter().zip([1.0, 5.0, -2.0, 0.5, 3.0]) {
///     assert!((a - b).abs() < 1e-5);
/// }
/// assert_eq!(fft::irfft(&r, None, 0, Norm::Ortho).shape(), &[4]); // 2 (3 - 1)
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn irfft<C: ComplexFloat>(
    x: &Array<C>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Array<C::Part> {
    ok(try_irfft(x, n, axis, norm))
}
/// Like [`irfft`], returning an error (an axis out of range, a length of 0: one coefficient
/// and no `n`).
#[track_caller]
pub fn try_irfft<C: ComplexFloat>(
    x: &Array<C>,
    n: Option<usize>,
    axis: usize,
    norm: Norm,
) -> Result<Array<C::Part>> {
    let n = n.unwrap_or_else(|| 2 * len_along(x, axis).saturating_sub(1));
    call(Intrinsic::Irfft { axis, n, norm }, x)
}

/// [`rfftn`] over the last two axes (NumPy's `fft.rfft2`).
#[track_caller]
pub fn rfft2<F: Float + FftInput>(
    x: &Array<F>,
    s: Option<[usize; 2]>,
    norm: Norm,
) -> Array<F::Complex> {
    ok(try_rfft2(x, s, norm))
}
/// Like [`rfft2`], returning an error instead of panicking.
#[track_caller]
pub fn try_rfft2<F: Float + FftInput>(
    x: &Array<F>,
    s: Option<[usize; 2]>,
    norm: Norm,
) -> Result<Array<F::Complex>> {
    let axes = last_two(x, "rfft2")?;
    try_rfftn(x, s.as_ref().map(|s| &s[..]), Some(&axes), norm)
}
/// [`irfftn`] over the last two axes (NumPy's `fft.irfft2`).
#[track_caller]
pub fn irfft2<C: ComplexFloat>(x: &Array<C>, s: Option<[usize; 2]>, norm: Norm) -> Array<C::Part> {
    ok(try_irfft2(x, s, norm))
}
/// Like [`irfft2`], returning an error instead of panicking.
#[track_caller]
pub fn try_irfft2<C: ComplexFloat>(
    x: &Array<C>,
    s: Option<[usize; 2]>,
    norm: Norm,
) -> Result<Array<C::Part>> {
    let axes = last_two(x, "irfft2")?;
    try_irfftn(x, s.as_ref().map(|s| &s[..]), Some(&axes), norm)
}

/// The n-dimensional transform of a real array (NumPy's `fft.rfftn`): [`rfft`] along the last
/// of `axes`, then [`fft`] along the others; `s` and `axes` as in [`fftn`]. The last axis holds
/// `s[-1] / 2 + 1` coefficients.
///
/// ```
/// use arrayflow::{Array, fft};
/// use fft::Norm;
///
/// let mut rng = arrayflow::Rng::new(7);
/// let img = rng.normal::<f64>(&[6, 10]);
/// let r = fft::rfft2(&img, None, Norm::Backward); // [6, 6]
/// assert_eq!(r.shape(), &[6, 6]);
/// let back = fft::irfft2(&r, Some([6, 10]), Norm::Backward);
/// let err = (back - &img).abs().max().item()?;
/// assert!(err < 1e-13);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn rfftn<F: Float + FftInput>(
    x: &Array<F>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Array<F::Complex> {
    ok(try_rfftn(x, s, axes, norm))
}
/// Like [`rfftn`], returning an error instead of panicking.
#[track_caller]
pub fn try_rfftn<F: Float + FftInput>(
    x: &Array<F>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Result<Array<F::Complex>> {
    let (s, axes) = nd_args(x, s, axes, "rfftn", false)?;
    let (Some(&n), Some(&axis)) = (s.last(), axes.last()) else {
        return Err(bad("`rfftn` over no axes".into()));
    };
    let y: Array<F::Complex> = call(Intrinsic::Rfft { axis, n, norm }, x)?;
    let k = axes.len() - 1;
    complex_axes(y, &s[..k], &axes[..k], norm, false)
}

/// [`fft`] or [`ifft`] of the complex `y` along each of `axes` (the last first, as NumPy) with
/// lengths `s`.
#[track_caller]
fn complex_axes<C: ComplexFloat>(
    y: Array<C>,
    s: &[usize],
    axes: &[usize],
    norm: Norm,
    inverse: bool,
) -> Result<Array<C>> {
    let mut y = y;
    for (&n, &axis) in s.iter().zip(axes).rev() {
        y = call(
            Intrinsic::Fft {
                axis,
                n,
                inverse,
                norm,
            },
            &y,
        )?;
    }
    Ok(y)
}

/// The inverse of [`rfftn`] (NumPy's `fft.irfftn`): [`ifft`] along every axis of `axes` but the
/// last, then [`irfft`] along the last with length `s[-1]` (`None`: `2 (m - 1)`).
#[track_caller]
pub fn irfftn<C: ComplexFloat>(
    x: &Array<C>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Array<C::Part> {
    ok(try_irfftn(x, s, axes, norm))
}
/// Like [`irfftn`], returning an error instead of panicking.
#[track_caller]
pub fn try_irfftn<C: ComplexFloat>(
    x: &Array<C>,
    s: Option<&[usize]>,
    axes: Option<&[usize]>,
    norm: Norm,
) -> Result<Array<C::Part>> {
    let (s, axes) = nd_args(x, s, axes, "irfftn", true)?;
    let (Some(&n), Some(&axis)) = (s.last(), axes.last()) else {
        return Err(bad("`irfftn` over no axes".into()));
    };
    let k = axes.len() - 1;
    let y = complex_axes(x.clone(), &s[..k], &axes[..k], norm, true)?;
    call(Intrinsic::Irfft { axis, n, norm }, &y)
}

/// The frequencies of [`fft`]'s `n` bins for samples `d` apart (NumPy's `fft.fftfreq`), in
/// cycles per unit of `d`: `[0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] * (1 / (n d))`, computed
/// in f64 as NumPy does and rounded to `F`. `n` must be positive and `d` nonzero.
///
/// ```
/// use arrayflow::fft;
/// assert_eq!(fft::fftfreq::<f64>(5, 1.0).to_vec()?, [0.0, 0.2, 0.4, -0.4, -0.2]);
/// assert_eq!(fft::rfftfreq::<f64>(5, 1.0).to_vec()?, [0.0, 0.2, 0.4]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn fftfreq<F: Float>(n: usize, d: f64) -> Array<F> {
    ok(try_fftfreq(n, d))
}
/// Like [`fftfreq`], returning an error for `n == 0` or `d == 0`.
#[track_caller]
pub fn try_fftfreq<F: Float>(n: usize, d: f64) -> Result<Array<F>> {
    let val = freq_step(n, d, "fftfreq")?;
    let half = (n - 1) / 2 + 1;
    let v: Vec<F> = (0..n)
        .map(|i| {
            let k = if i < half {
                i as f64
            } else {
                i as f64 - n as f64
            };
            F::from_f64(k * val)
        })
        .collect();
    Array::try_from_vec(v, &[n])
}

/// The frequencies of [`rfft`]'s `n / 2 + 1` bins for `n` samples `d` apart (NumPy's
/// `fft.rfftfreq`): `[0, 1, ..., n / 2] * (1 / (n d))`.
#[track_caller]
pub fn rfftfreq<F: Float>(n: usize, d: f64) -> Array<F> {
    ok(try_rfftfreq(n, d))
}
/// Like [`rfftfreq`], returning an error for `n == 0` or `d == 0`.
#[track_caller]
pub fn try_rfftfreq<F: Float>(n: usize, d: f64) -> Result<Array<F>> {
    let val = freq_step(n, d, "rfftfreq")?;
    let v: Vec<F> = (0..n / 2 + 1)
        .map(|i| F::from_f64(i as f64 * val))
        .collect();
    Array::try_from_vec(v, &[n / 2 + 1])
}

/// NumPy's `1 / (n d)`.
#[track_caller]
fn freq_step(n: usize, d: f64, what: &str) -> Result<f64> {
    if n == 0 || d == 0.0 {
        return Err(bad(format!(
            "`{what}` of {n} samples {d} apart: n and d must be nonzero"
        )));
    }
    Ok(1.0 / (n as f64 * d))
}

/// Moves frequency 0 to the middle of each of `axes` (NumPy's `fft.fftshift`; `None`: every
/// axis): a [`roll`](Array::roll) by `len / 2` along each, a view that fuses into what reads
/// it.
///
/// ```
/// use arrayflow::{Array, fft};
/// let f = fft::fftfreq::<f64>(5, 1.0); // [0, 0.2, 0.4, -0.4, -0.2]
/// assert_eq!(fft::fftshift(&f, None).to_vec()?, [-0.4, -0.2, 0.0, 0.2, 0.4]);
/// assert_eq!(fft::ifftshift(&fft::fftshift(&f, None), None).to_vec()?, f.to_vec()?);
/// let a = Array::<i32>::iota(&[2, 3], 1); // [[0, 1, 2], [0, 1, 2]]
/// assert_eq!(fft::fftshift(&a, Some(&[1])).to_vec()?, [2, 0, 1, 2, 0, 1]);
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[track_caller]
pub fn fftshift<T: Element>(x: &Array<T>, axes: Option<&[usize]>) -> Array<T> {
    ok(try_fftshift(x, axes))
}
/// Like [`fftshift`], returning an error for an axis out of range.
#[track_caller]
pub fn try_fftshift<T: Element>(x: &Array<T>, axes: Option<&[usize]>) -> Result<Array<T>> {
    shift(x, axes, false)
}
/// The inverse of [`fftshift`] (NumPy's `fft.ifftshift`): a roll by `-(len / 2)` along each of
/// `axes` (`None`: every axis); it differs from `fftshift` for odd lengths.
#[track_caller]
pub fn ifftshift<T: Element>(x: &Array<T>, axes: Option<&[usize]>) -> Array<T> {
    ok(try_ifftshift(x, axes))
}
/// Like [`ifftshift`], returning an error for an axis out of range.
#[track_caller]
pub fn try_ifftshift<T: Element>(x: &Array<T>, axes: Option<&[usize]>) -> Result<Array<T>> {
    shift(x, axes, true)
}

#[track_caller]
fn shift<T: Element>(x: &Array<T>, axes: Option<&[usize]>, inverse: bool) -> Result<Array<T>> {
    let all: Vec<usize> = (0..x.ndim()).collect();
    let mut y = x.clone();
    for &axis in axes.unwrap_or(&all) {
        let half = (len_along(x, axis) / 2) as isize;
        y = y.try_roll(if inverse { -half } else { half }, axis)?;
    }
    Ok(y)
}
