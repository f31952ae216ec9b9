//! NumPy's slice notation: the [`s!`](crate::s) macro and what its entries accept (integers,
//! exclusive ranges of any integer type, steps), and the range conversions into [`Slice`].

use super::view::Slice;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo};

/// The slices of NumPy's basic indexing, one entry per leading axis: `s![1..-1, .., ..;2, -1, 3..;-1]`
/// is NumPy's `a[1:-1, :, ::2, -1, 3::-1]`, for [`Array::slice`](crate::Array::slice).
///
/// Each entry is a range (`a..b`, `a..`, `..b`, `..`) with an optional step after `;`, or an
/// integer, which selects that element and drops the axis. Bounds and indices may be negative
/// (counted from the end); a negative step walks backwards and its omitted bounds are NumPy's
/// (from the last element down to the first). A step larger than the axis takes one element.
/// Bounds outside the axis are errors naming your line (NumPy clamps them; `&v[2..10]` panics).
/// Inclusive ranges (`a..=b`) are not accepted (NumPy has none). Unlisted trailing axes are whole.
///
/// ```
/// use arrayflow::{Array, s};
/// let a = Array::<i32>::iota(&[3, 4], 1); // [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
/// let a = a + Array::<i32>::iota(&[3, 4], 0) * 10; // element [i, j] is 10 i + j
/// assert_eq!(a.slice(s![.., ..;-1]).to_vec()?, [3, 2, 1, 0, 13, 12, 11, 10, 23, 22, 21, 20]);
/// assert_eq!(a.slice(s![-1, 1..-1]).to_vec()?, [21, 22]); // a[-1, 1:-1]: shape [2]
/// assert_eq!(a.slice(s![..;-2, 3]).shape(), &[2]); // a[::-2, 3] = [23, 3]
/// assert_eq!(a.slice(s![..;-2, 3]).to_vec()?, [23, 3]);
/// assert_eq!(a.slice(s![1..;5, -3..;2]).to_vec()?, [11, 13]);
/// assert!(a.try_slice(s![4]).is_err()); // index 4 out of range for axis 0 of length 3
/// # Ok::<(), arrayflow::Error>(())
/// ```
#[macro_export]
macro_rules! s {
    ($($r:expr $(; $st:expr)?),* $(,)?) => {
        &[$($crate::__s_axis!($r $(; $st)?)),*]
    };
}

/// One entry of [`s!`](crate::s) (not public API).
#[doc(hidden)]
#[macro_export]
macro_rules! __s_axis {
    // `1..-1` is NumPy's `1:-1`, not an empty Rust range: clippy's lint on it is off here.
    ($r:expr) => {{
        #[allow(clippy::reversed_empty_ranges)]
        let r = $r;
        $crate::AxisArg::axis(r)
    }};
    ($r:expr ; $st:expr) => {{
        #[allow(clippy::reversed_empty_ranges)]
        let r = $r;
        $crate::RangeArg::stepped(r, $crate::SliceInt::to_isize($st))
    }};
}

/// Integer types accepted as slice bounds, indices and steps.
pub trait SliceInt: Copy {
    /// The value as an `isize` (saturating: a value beyond `isize` is out of range anyway).
    fn to_isize(self) -> isize;
}

/// What an entry of [`s!`](crate::s) without a step accepts: an integer (an index that drops the
/// axis), an exclusive range, `..`, or a [`Slice`].
pub trait AxisArg {
    /// The entry as a [`Slice`].
    fn axis(self) -> Slice;
}

/// What an entry of [`s!`](crate::s) with a step (`range;step`) accepts: an exclusive range or `..`.
pub trait RangeArg {
    /// The range taking every `step`-th element (negative: backwards).
    fn stepped(self, step: isize) -> Slice;
}

impl AxisArg for Slice {
    fn axis(self) -> Slice {
        self
    }
}
impl AxisArg for RangeFull {
    fn axis(self) -> Slice {
        Slice::all()
    }
}
impl RangeArg for RangeFull {
    fn stepped(self, step: isize) -> Slice {
        Slice::new(None, None, step)
    }
}
impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Slice {
        Slice::all()
    }
}

macro_rules! int_impls {
    ($($t:ty),*) => {$(
        impl SliceInt for $t {
            #[allow(clippy::unnecessary_fallible_conversions)]
            fn to_isize(self) -> isize {
                isize::try_from(self).unwrap_or(if self > 0 as $t { isize::MAX } else { isize::MIN })
            }
        }
        impl AxisArg for $t {
            fn axis(self) -> Slice {
                Slice::index(self.to_isize())
            }
        }
        impl AxisArg for Range<$t> {
            fn axis(self) -> Slice {
                self.stepped(1)
            }
        }
        impl AxisArg for RangeFrom<$t> {
            fn axis(self) -> Slice {
                self.stepped(1)
            }
        }
        impl AxisArg for RangeTo<$t> {
            fn axis(self) -> Slice {
                self.stepped(1)
            }
        }
        impl RangeArg for Range<$t> {
            fn stepped(self, step: isize) -> Slice {
                Slice::new(Some(self.start.to_isize()), Some(self.end.to_isize()), step)
            }
        }
        impl RangeArg for RangeFrom<$t> {
            fn stepped(self, step: isize) -> Slice {
                Slice::new(Some(self.start.to_isize()), None, step)
            }
        }
        impl RangeArg for RangeTo<$t> {
            fn stepped(self, step: isize) -> Slice {
                Slice::new(None, Some(self.end.to_isize()), step)
            }
        }
        impl From<Range<$t>> for Slice {
            fn from(r: Range<$t>) -> Slice {
                r.axis()
            }
        }
        impl From<RangeFrom<$t>> for Slice {
            fn from(r: RangeFrom<$t>) -> Slice {
                r.axis()
            }
        }
        impl From<RangeTo<$t>> for Slice {
            fn from(r: RangeTo<$t>) -> Slice {
                r.axis()
            }
        }
        /// `start..=end` (an end of -1 is the last element).
        impl From<RangeInclusive<$t>> for Slice {
            fn from(r: RangeInclusive<$t>) -> Slice {
                let end = r.end().to_isize();
                let end = if end == -1 { None } else { Some(end.saturating_add(1)) };
                Slice::new(Some(r.start().to_isize()), end, 1)
            }
        }
    )*};
}
int_impls!(i32, i64, isize, u32, u64, usize);
