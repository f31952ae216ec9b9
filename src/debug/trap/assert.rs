//! User assertions, recorded lazily: `a.assert_finite()`, `a.assert_in_range(lo, hi)` and
//! `mask.assert_true("message")` record a same-type cast of the array (an identity the front end
//! keeps) and attach the predicate to that node. The check is compiled into whichever kernel
//! computes the returned array, on whichever executor runs it; a failing element traps like a NaN
//! trap does (`ErrorKind::Trap`, the assertion's call site, element, value and message).

use super::assertions::Assertion;
use super::check::TrapPred;
use crate::api::{Array, Element};
use crate::ir::{DType, Op};
use crate::runtime::Inner;
use std::sync::Arc;

#[track_caller]
fn attach<T: Element>(a: &Array<T>, pred: TrapPred, message: Arc<str>) -> Array<T> {
    let site = std::panic::Location::caller();
    let h = Inner::get().record(
        Op::Cast(T::DTYPE),
        &[&a.h],
        a.h.shape.clone(),
        T::DTYPE,
        site,
    );
    super::assertions::register(h.id, Assertion { pred, message });
    Array::wrap(h)
}

impl<T: Element> Array<T> {
    /// This array, checked: when it is computed, an element that is NaN or infinite traps
    /// (`ErrorKind::Trap` from reading it, naming this line, the element and its value). Use the
    /// returned array in place of `self`; the check runs where it is computed.
    ///
    /// ```
    /// use arrayflow::{Array, ErrorKind};
    /// let x = Array::from_slice(&[1.0f32, 0.0, 4.0], &[3]);
    /// let y = (Array::full(&[3], 1.0f32) / &x).assert_finite();
    /// let e = y.to_vec().unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Trap);
    /// assert!(e.to_string().contains("element 1"));
    /// ```
    #[track_caller]
    #[must_use = "the check runs when the returned array is computed"]
    pub fn assert_finite(&self) -> Array<T> {
        attach(self, TrapPred::NonFinite, "assert_finite".into())
    }
    /// This array, checked: an element outside `lo ..= hi` (or NaN) traps. Bounds of an f32 array
    /// are rounded to f32 (the device compares in f32).
    #[track_caller]
    #[must_use = "the check runs when the returned array is computed"]
    pub fn assert_in_range(&self, lo: f64, hi: f64) -> Array<T> {
        let (lo, hi) = match T::DTYPE {
            DType::F32 => (lo as f32 as f64, hi as f32 as f64),
            _ => (lo, hi),
        };
        attach(
            self,
            TrapPred::OutOfRange { lo, hi },
            format!("assert_in_range({lo}, {hi})").into(),
        )
    }
}

impl Array<bool> {
    /// This mask, checked: an element that is `false` traps with `message`.
    ///
    /// ```
    /// use arrayflow::{Array, ErrorKind};
    /// let x = Array::from_slice(&[1.0f32, -2.0, 3.0], &[3]);
    /// let ok = x.gt(0.0f32).assert_true("x must be positive");
    /// let e = ok.to_vec().unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Trap);
    /// assert!(e.to_string().contains("x must be positive"));
    /// ```
    #[track_caller]
    #[must_use = "the check runs when the returned array is computed"]
    pub fn assert_true(&self, message: &str) -> Array<bool> {
        attach(self, TrapPred::False, message.into())
    }
}
