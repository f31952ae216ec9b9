//! `Array<T>`: the application's handle to data and pending results. Construction from host data,
//! shape queries, reads (which are the only calls that wait), hints and casts.

use super::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::exec::HostDest;
use crate::frontend::{self, Handle};
use crate::ir::{Shape, Site};
use crate::runtime::Inner;
use std::marker::PhantomData;
use std::panic::Location;

/// An n-dimensional, row-major array of `T` managed by the runtime. Operations on it are recorded,
/// not run; a read (`to_vec`, `item`, `read_into`, `get`) computes what it needs. `Clone` shares
/// the data. `{}` and `{:?}` print the values (NumPy style; reading the array), `describe()` the
/// element type and shape only.
///
/// ```
/// use arrayflow::Array;
///
/// // From host data (row-major), or from a generator.
/// let a = Array::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]);
/// let z = Array::<f64>::zeros(&[2, 3]);
/// let i = Array::<f32>::iota(&[2, 3], 1); // each element's index along axis 1
/// let x = Array::<f64>::linspace(0.0, 1.0, 5);
/// assert_eq!((a.shape(), a.ndim(), a.len()), (&[2, 3][..], 2, 6));
///
/// // Reads compute what they need and wait; they are the calls that return `Result`.
/// assert_eq!(a.to_vec()?, vec![1, 2, 3, 4, 5, 6]);
/// assert_eq!(a.get(&[1, 0])?, 4);
/// assert_eq!(z.sum().item()?, 0.0);
/// assert_eq!(i.to_vec()?, vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
/// assert_eq!(x.to_vec()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
/// let mut out = vec![0i32; 6];
/// (&a * 10).read_into(&mut out)?;
/// assert_eq!(out, vec![10, 20, 30, 40, 50, 60]);
/// assert_eq!(a.describe(), "Array<i32>[2, 3]");
/// assert_eq!(format!("{a}"), "[[1, 2, 3],\n [4, 5, 6]]");
/// # Ok::<(), arrayflow::Error>(())
/// ```
pub struct Array<T: Element> {
    pub(crate) h: Handle,
    _t: PhantomData<T>,
}

impl<T: Element> Clone for Array<T> {
    fn clone(&self) -> Self {
        Array {
            h: self.h.clone(),
            _t: PhantomData,
        }
    }
}

#[track_caller]
pub(crate) fn site() -> Site {
    Location::caller()
}

/// Reads larger than this many elements are copied out by several threads.
const PARALLEL_COPY: usize = 1 << 18;

fn copy_parallel<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    use rayon::prelude::*;
    if src.len() < PARALLEL_COPY {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(1 << 16)
            .zip(src.par_chunks(1 << 16))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// The operator form of a fallible call: on an error, the error-handler stack decides. A handler
/// that continues gets an invalid array (reading it, or anything computed from it, returns the
/// error); without one, the default handler panics with the error's message.
#[track_caller]
pub(crate) fn ok<T: Element>(r: Result<Array<T>>) -> Array<T> {
    match r {
        Ok(v) => v,
        Err(e) => match Inner::get().handle_error(&e) {
            true => Array::wrap(Inner::get().invalid_array(e, T::DTYPE)),
            false => panic!("{e}"),
        },
    }
}

impl<T: Element> Array<T> {
    /// A result handed to the application (the debugger's hook: one relaxed load when off).
    pub(crate) fn wrap(h: Handle) -> Self {
        debug_assert_eq!(h.dtype, T::DTYPE);
        crate::debug::breakpoints::on_result(&h);
        Array { h, _t: PhantomData }
    }

    /// Dimensions, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.h.shape
    }
    /// Number of dimensions (0 for a scalar).
    pub fn ndim(&self) -> usize {
        self.h.shape.len()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.h.shape.iter().product()
    }
    /// Whether the array has no elements (some dimension is 0).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The element type, as a run-time value.
    pub fn dtype(&self) -> crate::ir::DType {
        T::DTYPE
    }

    /// An array of `shape` holding a copy of `data` (row-major).
    #[track_caller]
    pub fn from_slice(data: &[T], shape: &[usize]) -> Self {
        ok(Self::from_vec_at(
            crate::exec::host_memory::copied(data),
            shape,
            site(),
        ))
    }
    /// An array of `shape` that takes ownership of `data` without copying it.
    #[track_caller]
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Self {
        ok(Self::from_vec_at(data, shape, site()))
    }
    /// Like [`Array::from_vec`], returning an error when the length does not match the shape.
    #[track_caller]
    pub fn try_from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self> {
        Self::from_vec_at(data, shape, site())
    }
    fn from_vec_at(data: Vec<T>, shape: &[usize], site: Site) -> Result<Self> {
        let n: usize = shape.iter().product();
        if data.len() != n {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "{} elements given for shape {shape:?}, which holds {n}",
                    data.len()
                ),
            )
            .at(site)
            .hint("pass as many elements as the shape's dimensions multiply to"));
        }
        Ok(Array::wrap(Inner::get().upload(
            T::typed_vec(data),
            Shape::from_slice(shape),
            site,
        )?))
    }
    /// A 1-D array holding a copy of `data`.
    #[track_caller]
    pub fn from_vec1(data: Vec<T>) -> Self {
        let n = data.len();
        ok(Self::from_vec_at(data, &[n], site()))
    }

    /// A 0-dimensional array (a scalar).
    #[track_caller]
    pub fn scalar(v: T) -> Self {
        Array::wrap(frontend::constant(v.scalar(), Shape::new(), site()))
    }
    /// Every element `v`.
    #[track_caller]
    pub fn full(shape: &[usize], v: T) -> Self {
        Array::wrap(frontend::constant(
            v.scalar(),
            Shape::from_slice(shape),
            site(),
        ))
    }

    /// Computes the array if needed and copies its elements out (row-major).
    #[track_caller]
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let site = site();
        // Zeroed (in huge pages when large: first touches of fresh memory cost more than the
        // copy), then filled: by the kernel itself when the array is a large pending result, else
        // by a copy.
        let zero = T::from_scalar(crate::ir::Scalar::Bool(false));
        let mut out: Vec<T> = crate::exec::host_memory::filled(self.len(), zero);
        let dest = HostDest {
            dtype: T::DTYPE,
            ptr: out.as_mut_ptr() as *mut u8,
        };
        if !Inner::get().read_external(&self.h, dest, site)? {
            let data = Inner::get().read(&self.h, site)?;
            copy_parallel(T::slice(&data), &mut out);
        }
        Inner::get().check_read(&self.h, out.iter().map(|x| x.scalar()), site)?;
        Ok(out)
    }
    /// The single element of an array of one element.
    #[track_caller]
    pub fn item(&self) -> Result<T> {
        let site = site();
        if self.len() != 1 {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "item() of an array of shape {:?} ({} elements)",
                    self.shape(),
                    self.len()
                ),
            )
            .at(site)
            .hint("item() reads arrays of exactly one element; use to_vec() for more"));
        }
        let data = Inner::get().read(&self.h, site)?;
        let v = T::slice(&data)[0];
        Inner::get().check_read(&self.h, std::iter::once(v.scalar()), site)?;
        Ok(v)
    }
    /// Copies the elements into `out`, which must have `len()` elements.
    #[track_caller]
    pub fn read_into(&self, out: &mut [T]) -> Result<()> {
        let site = site();
        if out.len() != self.len() {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "read_into a slice of {} elements from an array of {}",
                    out.len(),
                    self.len()
                ),
            )
            .at(site));
        }
        let dest = HostDest {
            dtype: T::DTYPE,
            ptr: out.as_mut_ptr() as *mut u8,
        };
        if !Inner::get().read_external(&self.h, dest, site)? {
            let data = Inner::get().read(&self.h, site)?;
            copy_parallel(T::slice(&data), out);
        }
        Inner::get().check_read(&self.h, out.iter().map(|x| x.scalar()), site)?;
        Ok(())
    }

    /// The reference value computed by comparison mode's sequential interpreter (an error if
    /// comparison mode was off when this array was recorded).
    #[track_caller]
    pub fn reference(&self) -> Result<Vec<T>> {
        let r = Inner::get().reference_value(&self.h, site())?;
        Ok(T::slice(&r).to_vec())
    }

    /// Computes this array now and waits for it, keeping the result where it was computed (on the
    /// GPU when a device executor runs): for timing, or to hold a value computed once.
    #[track_caller]
    pub fn eval(&self) -> Result<()> {
        Inner::get().eval(&self.h, site())
    }

    /// Tells the runtime this array will be read soon: its computation starts now.
    pub fn hint_read(&self) {
        Inner::get().hint_read(&self.h);
    }

    /// Converts every element to `U` (Rust `as` rules; numbers to bool by `!= 0`; a real value
    /// becomes a complex one with imaginary part 0; complex to complex per component). Complex to
    /// real is refused: say which part with `re()`, `im()` or `abs()`.
    #[track_caller]
    pub fn cast<U: Element>(&self) -> Array<U> {
        let s = site();
        if T::DTYPE.is_complex() && !U::DTYPE.is_complex() {
            return ok(Err(Error::new(
                ErrorKind::DType,
                format!(
                    "cast of {} elements to {}: it would drop the imaginary part",
                    T::DTYPE,
                    U::DTYPE
                ),
            )
            .at(s)
            .hint(
                "take the part you mean with `re()`, `im()` or `abs()` first, then cast that",
            )));
        }
        Array::wrap(frontend::cast(&self.h, U::DTYPE, s))
    }

    /// This array with its element type known only at run time.
    pub fn into_dyn(self) -> super::DynArray {
        super::DynArray { h: self.h }
    }
}

impl<T: super::Numeric> Array<T> {
    /// An array of `shape` filled with 0.
    #[track_caller]
    pub fn zeros(shape: &[usize]) -> Self {
        Self::full(shape, T::ZERO)
    }
    /// An array of `shape` filled with 1.
    #[track_caller]
    pub fn ones(shape: &[usize]) -> Self {
        Self::full(shape, T::ONE)
    }
    /// Each element's index along `axis` (the seed's index generator).
    #[track_caller]
    pub fn iota(shape: &[usize], axis: usize) -> Self {
        let site = site();
        if axis >= shape.len() {
            panic!(
                "{}",
                Error::new(
                    ErrorKind::Argument,
                    format!("iota axis {axis} is out of range for shape {shape:?}")
                )
                .at(site)
            );
        }
        Array::wrap(frontend::generate(
            crate::ir::GenKind::Iota { axis },
            Shape::from_slice(shape),
            T::DTYPE,
            site,
        ))
    }
    /// The `n` x `n` identity matrix.
    #[track_caller]
    pub fn identity(n: usize) -> Self {
        Array::wrap(frontend::generate(
            crate::ir::GenKind::Identity,
            smallvec::smallvec![n, n],
            T::DTYPE,
            site(),
        ))
    }
}

impl<T: super::Float> Array<T> {
    /// `n` evenly spaced values from `start` to `end`, both included.
    #[track_caller]
    pub fn linspace(start: f64, end: f64, n: usize) -> Self {
        let step = if n > 1 {
            (end - start) / (n - 1) as f64
        } else {
            0.0
        };
        let end = if n > 1 { end } else { start };
        let kind = crate::ir::GenKind::Linspace {
            start,
            step,
            end,
            n,
        };
        Array::wrap(frontend::generate(
            kind,
            smallvec::smallvec![n],
            T::DTYPE,
            site(),
        ))
    }
}
