//! The CPU entries' shared FFT plans: one planner per element type (f32, f64) behind a lock,
//! holding rustfft's planner (which caches its complex plans by length and direction) and
//! realfft's real-to-complex and complex-to-real plans, built over that same planner and cached
//! by length here. A plan is an `Arc`: tasks on every thread share it and run it with their own
//! scratch.

use crate::ir::TypedVec;
use ahash::AHashMap;
use num_complex::Complex;
use parking_lot::Mutex;
use realfft::{
    ComplexToReal, ComplexToRealEven, ComplexToRealOdd, RealToComplex, RealToComplexEven,
    RealToComplexOdd,
};
use rustfft::{Fft, FftDirection, FftNum, FftPlanner};
use std::sync::{Arc, LazyLock};

/// The plans of one element type.
pub(crate) struct Planner<T: FftNum> {
    complex: FftPlanner<T>,
    r2c: AHashMap<usize, Arc<dyn RealToComplex<T>>>,
    c2r: AHashMap<usize, Arc<dyn ComplexToReal<T>>>,
}

impl<T: FftNum> Planner<T> {
    fn new() -> Self {
        Planner {
            complex: FftPlanner::new(),
            r2c: AHashMap::new(),
            c2r: AHashMap::new(),
        }
    }

    /// The complex transform of length `n` (forward, or `inverse`: unscaled `exp(+2 pi i jk/n)`).
    pub fn complex(&mut self, n: usize, inverse: bool) -> Arc<dyn Fft<T>> {
        let dir = if inverse {
            FftDirection::Inverse
        } else {
            FftDirection::Forward
        };
        self.complex.plan_fft(n, dir)
    }

    /// The forward real-to-complex transform of `n` real values.
    pub fn r2c(&mut self, n: usize) -> Arc<dyn RealToComplex<T>> {
        let planner = &mut self.complex;
        self.r2c
            .entry(n)
            .or_insert_with(|| {
                if n.is_multiple_of(2) {
                    Arc::new(RealToComplexEven::new(n, planner))
                } else {
                    Arc::new(RealToComplexOdd::new(n, planner))
                }
            })
            .clone()
    }

    /// The inverse (unscaled) complex-to-real transform to `n` real values.
    pub fn c2r(&mut self, n: usize) -> Arc<dyn ComplexToReal<T>> {
        let planner = &mut self.complex;
        self.c2r
            .entry(n)
            .or_insert_with(|| {
                if n.is_multiple_of(2) {
                    Arc::new(ComplexToRealEven::new(n, planner))
                } else {
                    Arc::new(ComplexToRealOdd::new(n, planner))
                }
            })
            .clone()
    }
}

static F32: LazyLock<Mutex<Planner<f32>>> = LazyLock::new(|| Mutex::new(Planner::new()));
static F64: LazyLock<Mutex<Planner<f64>>> = LazyLock::new(|| Mutex::new(Planner::new()));

/// The element types the CPU entries transform (f32, f64): their shared planner and their
/// buffers in a [`TypedVec`].
pub(crate) trait FftFloat: FftNum + num_traits::Float + Default {
    /// The shared planner of this type.
    fn planner() -> &'static Mutex<Planner<Self>>;
    /// The values of a real buffer of this type.
    fn real(v: &TypedVec) -> Option<&[Self]>;
    /// The values of a complex buffer of this precision.
    fn complex(v: &TypedVec) -> Option<&[Complex<Self>]>;
    /// A real output buffer.
    fn real_mut(v: &mut TypedVec) -> Option<&mut [Self]>;
    /// A complex output buffer.
    fn complex_mut(v: &mut TypedVec) -> Option<&mut [Complex<Self>]>;
    /// `x` rounded to this type.
    fn of(x: f64) -> Self;
}

macro_rules! fft_float {
    ($t:ty, $planner:ident, $real:ident, $complex:ident) => {
        impl FftFloat for $t {
            fn planner() -> &'static Mutex<Planner<Self>> {
                &$planner
            }
            fn real(v: &TypedVec) -> Option<&[Self]> {
                match v {
                    TypedVec::$real(v) => Some(v),
                    _ => None,
                }
            }
            fn complex(v: &TypedVec) -> Option<&[Complex<Self>]> {
                match v {
                    TypedVec::$complex(v) => Some(v),
                    _ => None,
                }
            }
            fn real_mut(v: &mut TypedVec) -> Option<&mut [Self]> {
                match v {
                    TypedVec::$real(v) => Some(v),
                    _ => None,
                }
            }
            fn complex_mut(v: &mut TypedVec) -> Option<&mut [Complex<Self>]> {
                match v {
                    TypedVec::$complex(v) => Some(v),
                    _ => None,
                }
            }
            fn of(x: f64) -> Self {
                x as $t
            }
        }
    };
}
fft_float!(f32, F32, F32, C64);
fft_float!(f64, F64, F64, C128);
