//! Looking at arrays: `Display` and `Debug` with the values (NumPy style, summarised past
//! [`SUMMARY_THRESHOLD`] elements), a shape-only [`Array::describe`], element access
//! ([`Array::get`]), [`allclose`] and the [`assert_allclose`] check for tests.

use super::array::{Array, site};
use super::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Site;
use crate::runtime::Inner;
use std::fmt;

/// Arrays with more elements than this print summarised: the first and last three entries of
/// each axis, with `...` between them (as NumPy's default `threshold`).
pub const SUMMARY_THRESHOLD: usize = 1000;
/// Entries kept at each end of an axis in a summarised print.
const EDGE: usize = 3;

/// The entries of an axis of length `n` that are printed (`None` marks the `...`).
fn shown(n: usize, summarise: bool) -> Vec<Option<usize>> {
    if summarise && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// Renders `data` of `shape` NumPy style: nested brackets, elements right-aligned to one width,
/// rows on their own lines (a blank line between blocks of higher rank), continuation lines
/// indented by `indent` more spaces. `precision` formats floats with that many decimals.
pub(crate) fn render<T: Element>(
    data: &[T],
    shape: &[usize],
    precision: Option<usize>,
    indent: usize,
) -> String {
    let fmt_one = |v: T| match precision {
        Some(p) => format!("{v:.p$?}"),
        None => format!("{v:?}"),
    };
    if shape.is_empty() {
        return data.first().map_or_else(String::new, |&v| fmt_one(v));
    }
    let summarise = data.len() > SUMMARY_THRESHOLD;
    let axes: Vec<Vec<Option<usize>>> = shape.iter().map(|&n| shown(n, summarise)).collect();
    let strides: Vec<usize> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    // The width of the widest printed element.
    let mut width = 0;
    let mut stack = vec![(0usize, 0usize)];
    while let Some((axis, offset)) = stack.pop() {
        for i in axes[axis].iter().flatten() {
            let at = offset + i * strides[axis];
            if axis + 1 == shape.len() {
                width = width.max(fmt_one(data[at]).chars().count());
            } else {
                stack.push((axis + 1, at));
            }
        }
    }
    let mut out = String::new();
    write_block(
        &mut out, data, shape, &axes, &strides, 0, 0, width, indent, &fmt_one,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn write_block<T: Copy>(
    out: &mut String,
    data: &[T],
    shape: &[usize],
    axes: &[Vec<Option<usize>>],
    strides: &[usize],
    axis: usize,
    offset: usize,
    width: usize,
    indent: usize,
    fmt_one: &dyn Fn(T) -> String,
) {
    out.push('[');
    let last = axis + 1 == shape.len();
    for (k, i) in axes[axis].iter().enumerate() {
        if k > 0 {
            if last {
                out.push_str(", ");
            } else {
                out.push(',');
                for _ in 0..shape.len() - axis - 1 {
                    out.push('\n');
                }
                out.extend(std::iter::repeat_n(' ', indent + axis + 1));
            }
        }
        match i {
            None => out.push_str("..."),
            Some(i) if last => {
                let s = fmt_one(data[offset + i]);
                out.extend(std::iter::repeat_n(' ', width - s.chars().count()));
                out.push_str(&s);
            }
            Some(i) => write_block(
                out,
                data,
                shape,
                axes,
                strides,
                axis + 1,
                offset + i * strides[axis],
                width,
                indent,
                fmt_one,
            ),
        }
    }
    out.push(']');
}

impl<T: Element> Array<T> {
    /// The element type and shape, without reading the values: `Array<f32>[2, 3]`.
    pub fn describe(&self) -> String {
        format!("Array<{}>{:?}", T::DTYPE, self.shape())
    }

    /// The values rendered for `Display`/`Debug`, or why they cannot be shown.
    #[track_caller]
    fn values_text(
        &self,
        precision: Option<usize>,
        indent: usize,
    ) -> std::result::Result<String, String> {
        if !Inner::get().front().sections.is_empty() {
            // A read would end the section with an error.
            return Err(format!(
                "{} (values are not read inside a code reuse section)",
                self.describe()
            ));
        }
        match self.to_vec() {
            Ok(v) => Ok(render(&v, self.shape(), precision, indent)),
            Err(e) => Err(format!("<error: {e}>")),
        }
    }

    /// The element at `index` (one index per axis), computing the array if needed. An index of
    /// the wrong length or out of range is an error naming your line.
    #[track_caller]
    pub fn get(&self, index: &[usize]) -> Result<T> {
        let site = site();
        let shape = self.shape();
        if index.len() != shape.len() || index.iter().zip(shape).any(|(&i, &n)| i >= n) {
            let what = if index.len() != shape.len() {
                format!(
                    "{} indices for an array of {} dimensions",
                    index.len(),
                    shape.len()
                )
            } else {
                format!("index {index:?} is out of range for shape {shape:?}")
            };
            return Err(Error::new(ErrorKind::Argument, what)
                .at(site)
                .hint("give one index per axis, each below that axis's length"));
        }
        let flat = index
            .iter()
            .zip(shape)
            .fold(0usize, |acc, (&i, &n)| acc * n + i);
        let data = Inner::get().read(&self.h, site)?;
        let values = T::slice(&data);
        Inner::get().check_read(&self.h, values.iter().map(|x| x.scalar()), site)?;
        Ok(values[flat])
    }
}

/// `{}`: the values, NumPy style (`[[1.0, 2.0],\n [3.0, 4.0]]`); arrays of more than
/// [`SUMMARY_THRESHOLD`] elements show the first and last three entries of each axis around `...`.
/// `{:.3}` prints floats with 3 decimals. Printing reads the array (computing it if needed); if the
/// read fails the error's message is printed instead. Inside a code reuse section, where reads are
/// not allowed, it prints [`Array::describe`].
impl<T: Element> fmt::Display for Array<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.values_text(f.precision(), 0) {
            Ok(s) | Err(s) => f.write_str(&s),
        }
    }
}

/// `{:?}`: the values with their shape and type, NumPy `repr` style:
/// `array([[1.0, 2.0],\n       [3.0, 4.0]], shape=[2, 2], dtype=f32)`. Reads as `Display` does; use
/// [`Array::describe`] for the shape alone.
impl<T: Element> fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PREFIX: &str = "array(";
        match self.values_text(f.precision(), PREFIX.len()) {
            Ok(s) => write!(
                f,
                "{PREFIX}{s}, shape={:?}, dtype={})",
                self.shape(),
                T::DTYPE
            ),
            Err(s) => f.write_str(&s),
        }
    }
}

/// Element-wise comparison of two arrays as NumPy's `isclose`: `|a - b| <= atol + rtol * |b|`;
/// NaN is close to nothing, an infinity only to the same infinity. Shapes broadcast.
struct Closeness {
    shape: Vec<usize>,
    mismatches: usize,
    /// The worst element: flat index, both values, the difference and what was allowed.
    worst: Option<(usize, f64, f64, f64, f64)>,
}

fn closeness<T: Element>(
    a: &Array<T>,
    b: &Array<T>,
    rtol: f64,
    atol: f64,
    site: Site,
) -> Result<Closeness> {
    let shape = crate::ir::broadcast_shapes(a.shape(), b.shape()).ok_or_else(|| {
        Error::new(
            ErrorKind::Shape,
            format!(
                "allclose of shapes {:?} and {:?}: they do not broadcast",
                a.shape(),
                b.shape()
            ),
        )
        .at(site)
    })?;
    let read = |x: &Array<T>| -> Result<Vec<T>> {
        let h = crate::frontend::broadcast_to(&x.h, shape.clone(), site)?;
        let x = Array::<T>::wrap(h);
        let data = Inner::get().read(&x.h, site)?;
        Ok(T::slice(&data).to_vec())
    };
    let (va, vb) = (read(a)?, read(b)?);
    let mut c = Closeness {
        shape: shape.to_vec(),
        mismatches: 0,
        worst: None,
    };
    let mut worst_excess = f64::NEG_INFINITY;
    for (i, (x, y)) in va.iter().zip(&vb).enumerate() {
        let (x, y) = (x.scalar().as_f64(), y.scalar().as_f64());
        let allowed = atol + rtol * y.abs();
        let close = if x.is_infinite() || y.is_infinite() {
            x == y
        } else {
            (x - y).abs() <= allowed
        };
        if close {
            continue;
        }
        c.mismatches += 1;
        let diff = (x - y).abs();
        let excess = if diff.is_nan() || diff.is_infinite() {
            f64::INFINITY
        } else {
            diff - allowed
        };
        if c.worst.is_none() || excess > worst_excess {
            worst_excess = excess;
            c.worst = Some((i, x, y, diff, allowed));
        }
    }
    Ok(c)
}

/// Whether every element of `a` is close to the matching element of `b` (shapes broadcast):
/// `|a - b| <= atol + rtol * |b|`, as NumPy's `allclose` (NaN is close to nothing, an infinity only
/// to the same infinity). Reads both arrays; a read error or shapes that do not broadcast are
/// errors naming your line.
#[track_caller]
pub fn allclose<T: Element>(a: &Array<T>, b: &Array<T>, rtol: f64, atol: f64) -> Result<bool> {
    Ok(closeness(a, b, rtol, atol, site())?.mismatches == 0)
}

/// Panics unless [`allclose`]`(actual, expected, rtol, atol)` holds, naming your line, how many
/// elements differ and the worst one: its index, both values, the difference and the allowance.
/// The [`assert_allclose!`](crate::assert_allclose!) macro calls it with NumPy's default
/// tolerances.
#[track_caller]
pub fn assert_allclose<T: Element>(actual: &Array<T>, expected: &Array<T>, rtol: f64, atol: f64) {
    let site = site();
    let c = match closeness(actual, expected, rtol, atol, site) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    if let Some((i, x, y, diff, allowed)) = c.worst {
        let mut index = vec![0; c.shape.len()];
        let mut rest = i;
        for d in (0..c.shape.len()).rev() {
            index[d] = rest % c.shape[d].max(1);
            rest /= c.shape[d].max(1);
        }
        let total: usize = c.shape.iter().product();
        panic!(
            "{site}: arrays are not close (rtol {rtol:e}, atol {atol:e}): {} of {total} elements differ; \
             the worst at {index:?}: actual {x:?}, expected {y:?} (|difference| {diff:e}, allowed {allowed:e})",
            c.mismatches
        );
    }
}

/// Asserts two arrays are element-wise close (see [`allclose`]), panicking with the worst
/// element's index and values otherwise. `assert_allclose!(actual, expected)` uses NumPy's
/// `allclose` tolerances (`rtol = 1e-5`, `atol = 1e-8`); `assert_allclose!(actual, expected, rtol,
/// atol)` sets them.
///
/// ```
/// use arrayflow::{Array, assert_allclose};
/// let a = Array::from_vec(vec![1.0f32, 2.0], &[2]);
/// assert_allclose!(&a * 3.0, Array::from_vec(vec![3.0, 6.0], &[2]));
/// assert_allclose!(a.sqrt(), Array::from_vec(vec![1.0, 1.4142], &[2]), 1e-4, 0.0);
/// ```
#[macro_export]
macro_rules! assert_allclose {
    ($actual:expr, $expected:expr $(,)?) => {
        $crate::assert_allclose(&$actual, &$expected, 1e-5, 1e-8)
    };
    ($actual:expr, $expected:expr, $rtol:expr, $atol:expr $(,)?) => {
        $crate::assert_allclose(&$actual, &$expected, $rtol, $atol)
    };
}
