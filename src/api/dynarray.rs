//! `DynArray`: an array whose element type is known only at run time (for heterogeneous
//! collections and generic plumbing). Its operations check types when called.

use super::array::{Array, site};
use super::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::frontend::{self, Handle};
use crate::ir::{BinaryOp, DType};

/// An array of any element type.
#[derive(Clone, Debug)]
pub struct DynArray {
    pub(crate) h: Handle,
}

impl DynArray {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.h.dtype
    }
    /// Dimensions, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.h.shape
    }
    /// The typed array, or an error naming both types when `T` is not its element type.
    #[track_caller]
    pub fn downcast<T: Element>(self) -> Result<Array<T>> {
        if self.h.dtype != T::DTYPE {
            return Err(Error::new(
                ErrorKind::DType,
                format!(
                    "this array holds {} elements, not {}",
                    self.h.dtype,
                    T::DTYPE
                ),
            )
            .at(site())
            .hint(format!(
                "downcast::<{}>() or cast the typed array first",
                self.h.dtype
            )));
        }
        Ok(Array::wrap(self.h))
    }
    #[track_caller]
    fn op(&self, op: BinaryOp, other: &DynArray) -> Result<DynArray> {
        Ok(DynArray {
            h: frontend::binary(op, &self.h, &other.h, site())?,
        })
    }
    /// Element-wise `self + other` (broadcasting); an error when the element types differ or the
    /// shapes do not broadcast.
    #[track_caller]
    pub fn try_add(&self, other: &DynArray) -> Result<DynArray> {
        self.op(BinaryOp::Add, other)
    }
    /// Element-wise `self - other`, checked as [`DynArray::try_add`].
    #[track_caller]
    pub fn try_sub(&self, other: &DynArray) -> Result<DynArray> {
        self.op(BinaryOp::Sub, other)
    }
    /// Element-wise `self * other`, checked as [`DynArray::try_add`].
    #[track_caller]
    pub fn try_mul(&self, other: &DynArray) -> Result<DynArray> {
        self.op(BinaryOp::Mul, other)
    }
    /// Element-wise `self / other`, checked as [`DynArray::try_add`].
    #[track_caller]
    pub fn try_div(&self, other: &DynArray) -> Result<DynArray> {
        self.op(BinaryOp::Div, other)
    }
}
