//! Reductions, whole-array and along axes: sums, products, extrema and their positions, logical
//! any/all, mean/variance/stddev, dot and the l1, l2 and infinity norms (the seed's p1/p2/pinf).
//! A whole-array reduction returns a 0-dimensional array; read it with `item()`.

use super::array::{Array, ok, site};
use super::element::{Element, Float, Inexact, Numeric};
use crate::frontend;
use crate::ir::{ReduceOp, Shape};

impl<T: Element> Array<T> {
    #[track_caller]
    pub(crate) fn red<U: Element>(&self, op: ReduceOp, axes: Option<&[usize]>) -> Array<U> {
        let all: Vec<usize> = (0..self.ndim()).collect();
        ok(frontend::reduce(op, &self.h, axes.unwrap_or(&all), site()).map(Array::wrap))
    }
    /// The shape with `axes` kept as length 1 (for broadcasting a reduction back).
    fn keepdims(&self, axes: Option<&[usize]>) -> Shape {
        self.shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                if axes.is_none_or(|a| a.contains(&i)) {
                    1
                } else {
                    d
                }
            })
            .collect()
    }
}

macro_rules! reductions {
    ($bound:ident => $($name:ident $axis:ident $axes:ident $op:ident $out:ty, $doc:literal;)*) => {
        impl<T: $bound> Array<T> {$(
            #[doc = $doc]
            #[track_caller]
            pub fn $name(&self) -> Array<$out> { self.red(ReduceOp::$op, None) }
            #[doc = $doc]
            #[doc = " Along one axis."]
            #[track_caller]
            pub fn $axis(&self, axis: usize) -> Array<$out> { self.red(ReduceOp::$op, Some(&[axis])) }
            #[doc = $doc]
            #[doc = " Along several axes."]
            #[track_caller]
            pub fn $axes(&self, axes: &[usize]) -> Array<$out> { self.red(ReduceOp::$op, Some(axes)) }
        )*}
    };
}
reductions! { Numeric =>
    sum sum_axis sum_axes Sum T, "Sum of the elements (integers wrap).";
    prod prod_axis prod_axes Prod T, "Product of the elements (integers wrap; a zero factor makes a float product 0 even where the other factors overflow, or NaN beside a NaN or infinite factor).";
    max max_axis max_axes Max T, "Largest element (NaN if any is NaN).";
    min min_axis min_axes Min T, "Smallest element (NaN if any is NaN).";
    argmax argmax_axis argmax_axes ArgMax u32, "Index of the first largest element (of the first NaN, if any).";
    argmin argmin_axis argmin_axes ArgMin u32, "Index of the first smallest element (of the first NaN, if any).";
}
reductions! { Bool =>
    any any_axis any_axes Any bool, "Whether any element is true.";
    all all_axis all_axes All bool, "Whether every element is true.";
}

/// Marker for `bool` arrays' reductions.
pub trait Bool: Element {}
impl Bool for bool {}

impl<T: Numeric> Array<T> {
    /// Inner product of two 1-D arrays: `sum(a * b)` in one fused kernel.
    #[track_caller]
    pub fn dot(&self, other: &Array<T>) -> Array<T> {
        (self * other).sum()
    }
    /// Inner products along one axis: `sum(a * b, axis)` (broadcasting `a` and `b`).
    #[track_caller]
    pub fn dot_axis(&self, other: &Array<T>, axis: usize) -> Array<T> {
        (self * other).sum_axis(axis)
    }
}

impl<T: Inexact> Array<T> {
    fn count(&self, axes: Option<&[usize]>) -> f64 {
        match axes {
            None => self.len() as f64,
            Some(a) => a
                .iter()
                .map(|&i| self.shape().get(i).copied().unwrap_or(1))
                .product::<usize>() as f64,
        }
    }
    #[track_caller]
    fn mean_of(&self, axes: Option<&[usize]>) -> Array<T> {
        self.red::<T>(ReduceOp::Sum, axes) / T::from_f64(self.count(axes))
    }
    #[track_caller]
    fn variance_of(&self, axes: Option<&[usize]>) -> Array<T> {
        // Two passes (mean, then squared deviations) for accuracy.
        let s = site();
        let sum = self.red::<T>(ReduceOp::Sum, axes);
        let n = T::from_f64(self.count(axes));
        let mean: Array<T> = ok(frontend::reshape(&sum.h, self.keepdims(axes), s).map(Array::wrap));
        let mean = mean / n;
        let d = self - &mean;
        (&d * &d).red::<T>(ReduceOp::Sum, axes) / n
    }
    /// Arithmetic mean.
    ///
    /// Reductions of the whole array give a 0-D array (read it with [`Array::item`]); the
    /// `_axis` and `_axes` forms reduce along axes and remove them.
    ///
    /// ```
    /// use arrayflow::Array;
    ///
    /// let data: Vec<f64> = (0..12).map(|i| (i * i % 7) as f64).collect();
    /// let a = Array::from_vec(data.clone(), &[3, 4]);
    /// let n = data.len() as f64;
    /// let mean = data.iter().sum::<f64>() / n;
    /// let var = data.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    /// assert!((a.mean().item()? - mean).abs() < 1e-12);
    /// assert!((a.variance().item()? - var).abs() < 1e-12);
    /// assert!((a.stddev().item()? - var.sqrt()).abs() < 1e-12);
    /// assert_eq!(a.max().item()?, 4.0);
    /// assert_eq!(a.argmax().item()?, 2); // flat index of the first maximum
    ///
    /// let rows: Vec<f64> = data.chunks(4).map(|r| r.iter().sum()).collect();
    /// assert_eq!(a.sum_axis(1).to_vec()?, rows); // shape [3]
    /// assert_eq!(a.sum_axes(&[0, 1]).item()?, data.iter().sum::<f64>());
    /// assert_eq!(a.gt(2.0).count().item()?, data.iter().filter(|&&x| x > 2.0).count() as u32);
    /// assert!(a.ge(0.0).all().item()?);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn mean(&self) -> Array<T> {
        self.mean_of(None)
    }
    /// Arithmetic mean along `axis` (the axis is removed).
    #[track_caller]
    pub fn mean_axis(&self, axis: usize) -> Array<T> {
        self.mean_of(Some(&[axis]))
    }
}

impl<T: Float> Array<T> {
    /// Population variance (divides by n).
    #[track_caller]
    pub fn variance(&self) -> Array<T> {
        self.variance_of(None)
    }
    /// Population variance along `axis` (the axis is removed).
    #[track_caller]
    pub fn variance_axis(&self, axis: usize) -> Array<T> {
        self.variance_of(Some(&[axis]))
    }
    /// Population standard deviation.
    #[track_caller]
    pub fn stddev(&self) -> Array<T> {
        self.variance_of(None).sqrt()
    }
    /// Population standard deviation along `axis` (the axis is removed).
    #[track_caller]
    pub fn stddev_axis(&self, axis: usize) -> Array<T> {
        self.variance_of(Some(&[axis])).sqrt()
    }
    /// Sum of absolute values (p1 norm).
    #[track_caller]
    pub fn norm_l1(&self) -> Array<T> {
        self.abs().sum()
    }
    /// Euclidean norm (p2 norm).
    #[track_caller]
    pub fn norm_l2(&self) -> Array<T> {
        (self * self).sum().sqrt()
    }
    /// Largest absolute value (infinity norm).
    #[track_caller]
    pub fn norm_inf(&self) -> Array<T> {
        self.abs().max()
    }
    /// p1 norm along one axis.
    #[track_caller]
    pub fn norm_l1_axis(&self, axis: usize) -> Array<T> {
        self.abs().sum_axis(axis)
    }
    /// p2 norm along one axis.
    #[track_caller]
    pub fn norm_l2_axis(&self, axis: usize) -> Array<T> {
        (self * self).sum_axis(axis).sqrt()
    }
    /// Infinity norm along one axis.
    #[track_caller]
    pub fn norm_inf_axis(&self, axis: usize) -> Array<T> {
        self.abs().max_axis(axis)
    }
}
