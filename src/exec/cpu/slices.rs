//! Typed slices the tile VM's instructions read and write: a tile of a register, of an input
//! buffer (contiguous loads read inputs in place) or of an output buffer (results are written
//! where they are stored).

use crate::exec::TypedVec;

/// A tile of values to read.
#[derive(Clone, Copy)]
pub enum Src<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    Bool(&'a [bool]),
    C64(&'a [num_complex::Complex<f32>]),
    C128(&'a [num_complex::Complex<f64>]),
}

/// A tile of values to write.
pub enum Dst<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    I32(&'a mut [i32]),
    U32(&'a mut [u32]),
    Bool(&'a mut [bool]),
    C64(&'a mut [num_complex::Complex<f32>]),
    C128(&'a mut [num_complex::Complex<f64>]),
}

impl<'a> Src<'a> {
    /// Elements `from .. from + n` of a buffer.
    pub fn of(v: &'a TypedVec, from: usize, n: usize) -> Src<'a> {
        match v {
            TypedVec::F32(v) => Src::F32(&v[from..from + n]),
            TypedVec::F64(v) => Src::F64(&v[from..from + n]),
            TypedVec::I32(v) => Src::I32(&v[from..from + n]),
            TypedVec::U32(v) => Src::U32(&v[from..from + n]),
            TypedVec::Bool(v) => Src::Bool(&v[from..from + n]),
            TypedVec::C64(v) => Src::C64(&v[from..from + n]),
            TypedVec::C128(v) => Src::C128(&v[from..from + n]),
        }
    }
}

impl<'a> Dst<'a> {
    /// The same tile, borrowed again for a shorter time.
    pub fn reborrow<'b>(d: &'b mut Dst<'a>) -> Dst<'b> {
        match d {
            Dst::F32(v) => Dst::F32(v),
            Dst::F64(v) => Dst::F64(v),
            Dst::I32(v) => Dst::I32(v),
            Dst::U32(v) => Dst::U32(v),
            Dst::Bool(v) => Dst::Bool(v),
            Dst::C64(v) => Dst::C64(v),
            Dst::C128(v) => Dst::C128(v),
        }
    }
    /// The first `n` elements of a register.
    pub fn of(v: &'a mut TypedVec, n: usize) -> Dst<'a> {
        match v {
            TypedVec::F32(v) => Dst::F32(&mut v[..n]),
            TypedVec::F64(v) => Dst::F64(&mut v[..n]),
            TypedVec::I32(v) => Dst::I32(&mut v[..n]),
            TypedVec::U32(v) => Dst::U32(&mut v[..n]),
            TypedVec::Bool(v) => Dst::Bool(&mut v[..n]),
            TypedVec::C64(v) => Dst::C64(&mut v[..n]),
            TypedVec::C128(v) => Dst::C128(&mut v[..n]),
        }
    }
}

/// Raw pointer to an output buffer; tiles write disjoint ranges of it.
#[derive(Clone, Copy)]
pub enum OutPtr {
    F32(*mut f32),
    F64(*mut f64),
    I32(*mut i32),
    U32(*mut u32),
    Bool(*mut bool),
    C64(*mut num_complex::Complex<f32>),
    C128(*mut num_complex::Complex<f64>),
}
// SAFETY: tiles touch disjoint index ranges of each output, and the outputs outlive the parallel
// loop that uses the pointers.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// A pointer to `dtype` elements at `p` (the caller's memory, for reads without a copy).
    pub fn from_raw(dtype: crate::ir::DType, p: *mut u8) -> OutPtr {
        match dtype {
            crate::ir::DType::F32 => OutPtr::F32(p as *mut f32),
            crate::ir::DType::F64 => OutPtr::F64(p as *mut f64),
            crate::ir::DType::I32 => OutPtr::I32(p as *mut i32),
            crate::ir::DType::U32 => OutPtr::U32(p as *mut u32),
            crate::ir::DType::Bool => OutPtr::Bool(p as *mut bool),
            crate::ir::DType::C64 => OutPtr::C64(p as *mut num_complex::Complex<f32>),
            crate::ir::DType::C128 => OutPtr::C128(p as *mut num_complex::Complex<f64>),
        }
    }

    pub fn of(v: &mut TypedVec) -> OutPtr {
        match v {
            TypedVec::F32(v) => OutPtr::F32(v.as_mut_ptr()),
            TypedVec::F64(v) => OutPtr::F64(v.as_mut_ptr()),
            TypedVec::I32(v) => OutPtr::I32(v.as_mut_ptr()),
            TypedVec::U32(v) => OutPtr::U32(v.as_mut_ptr()),
            TypedVec::Bool(v) => OutPtr::Bool(v.as_mut_ptr()),
            TypedVec::C64(v) => OutPtr::C64(v.as_mut_ptr()),
            TypedVec::C128(v) => OutPtr::C128(v.as_mut_ptr()),
        }
    }

    /// Elements `t0 .. t0 + n`, to write.
    ///
    /// # Safety
    /// The buffer has at least `t0 + n` elements, and no other live slice overlaps this range.
    pub unsafe fn dst<'a>(self, t0: usize, n: usize) -> Dst<'a> {
        unsafe {
            match self {
                OutPtr::F32(p) => Dst::F32(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::F64(p) => Dst::F64(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::I32(p) => Dst::I32(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::U32(p) => Dst::U32(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::Bool(p) => Dst::Bool(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::C64(p) => Dst::C64(std::slice::from_raw_parts_mut(p.add(t0), n)),
                OutPtr::C128(p) => Dst::C128(std::slice::from_raw_parts_mut(p.add(t0), n)),
            }
        }
    }

    /// Elements `t0 .. t0 + n`, to read back after this tile wrote them.
    ///
    /// # Safety
    /// As for [`OutPtr::dst`], and no live `Dst` covers the range.
    pub unsafe fn src<'a>(self, t0: usize, n: usize) -> Src<'a> {
        unsafe {
            match self {
                OutPtr::F32(p) => Src::F32(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::F64(p) => Src::F64(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::I32(p) => Src::I32(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::U32(p) => Src::U32(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::Bool(p) => Src::Bool(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::C64(p) => Src::C64(std::slice::from_raw_parts(p.add(t0), n)),
                OutPtr::C128(p) => Src::C128(std::slice::from_raw_parts(p.add(t0), n)),
            }
        }
    }
}

/// Copies a tile.
pub fn copy(s: Src, d: Dst) {
    match (s, d) {
        (Src::F32(s), Dst::F32(d)) => d.copy_from_slice(s),
        (Src::F64(s), Dst::F64(d)) => d.copy_from_slice(s),
        (Src::I32(s), Dst::I32(d)) => d.copy_from_slice(s),
        (Src::U32(s), Dst::U32(d)) => d.copy_from_slice(s),
        (Src::Bool(s), Dst::Bool(d)) => d.copy_from_slice(s),
        (Src::C64(s), Dst::C64(d)) => d.copy_from_slice(s),
        (Src::C128(s), Dst::C128(d)) => d.copy_from_slice(s),
        _ => unreachable!("copy between tiles of different types"),
    }
}
