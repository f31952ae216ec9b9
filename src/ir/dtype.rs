//! Element types and typed scalar values.

use num_complex::Complex;
use std::fmt;

/// The element types an array can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `f32`: 32-bit IEEE float.
    F32,
    /// `f64`: 64-bit IEEE float.
    F64,
    /// `i32`: 32-bit signed integer.
    I32,
    /// `u32`: 32-bit unsigned integer.
    U32,
    /// `bool`: one byte per element in memory.
    Bool,
    /// `Complex<f32>` (num-complex): two f32, real part first (8 bytes).
    C64,
    /// `Complex<f64>` (num-complex): two f64, real part first (16 bytes).
    C128,
}

impl DType {
    /// Every element type, in declaration order (`DType as usize` indexes it).
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::U32,
        DType::Bool,
        DType::C64,
        DType::C128,
    ];

    /// Bytes per element in memory.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
            DType::Bool => 1,
        }
    }
    /// Whether this is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    /// Whether this is `i32` or `u32`.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::U32)
    }
    /// Whether this is a real number type (`f32`, `f64`, `i32`, `u32`): ordered, so comparisons,
    /// min/max and every reduction apply. Complex types do arithmetic but are not ordered.
    pub fn is_numeric(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::I32 | DType::U32)
    }
    /// Whether this is `Complex<f32>` or `Complex<f64>`.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }
    /// The type of one component: `f32` for `Complex<f32>`, `f64` for `Complex<f64>`, the type
    /// itself otherwise.
    pub fn real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }
    /// The complex type with components of this float type (`None` for the others).
    pub fn complex(self) -> Option<DType> {
        match self {
            DType::F32 => Some(DType::C64),
            DType::F64 => Some(DType::C128),
            _ => None,
        }
    }
    /// The Rust name of the type (`"f32"`, `"bool"`, ...), as `Display` prints it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::Bool => "bool",
            DType::C64 => "Complex<f32>",
            DType::C128 => "Complex<f64>",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One typed value: a constant in the IR, or a value read back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    Bool(bool),
    /// Never the value of a `Const` node: the front end records a complex constant as its two
    /// real parts joined by `BinaryOp::Complex` (kernel parameters are 64 bits wide).
    C64(Complex<f32>),
    /// As [`Scalar::C64`].
    C128(Complex<f64>),
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
            Scalar::Bool(_) => DType::Bool,
            Scalar::C64(_) => DType::C64,
            Scalar::C128(_) => DType::C128,
        }
    }

    /// The value as f64 (bools as 0/1, complex numbers by their real part).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v as f64,
            Scalar::F64(v) => v,
            Scalar::I32(v) => v as f64,
            Scalar::U32(v) => v as f64,
            Scalar::Bool(v) => v as u8 as f64,
            Scalar::C64(v) => v.re as f64,
            Scalar::C128(v) => v.re,
        }
    }

    /// Converts with the same rules as the `cast` operation (Rust `as`, numbers to bool by `!= 0`,
    /// real to complex with a zero imaginary part, complex to complex per component). Complex to
    /// real keeps the real part (the front end refuses that cast; `re()` says it explicitly).
    pub fn cast(self, to: DType) -> Scalar {
        macro_rules! conv {
            ($v:expr) => {
                match to {
                    DType::F32 => Scalar::F32($v as f32),
                    DType::F64 => Scalar::F64($v as f64),
                    DType::I32 => Scalar::I32($v as i32),
                    DType::U32 => Scalar::U32($v as u32),
                    DType::Bool => Scalar::Bool(($v as f64) != 0.0),
                    DType::C64 => Scalar::C64(Complex::new($v as f32, 0.0)),
                    DType::C128 => Scalar::C128(Complex::new($v as f64, 0.0)),
                }
            };
        }
        match (self, to) {
            (Scalar::C64(v), DType::C128) => Scalar::C128(Complex::new(v.re as f64, v.im as f64)),
            (Scalar::C128(v), DType::C64) => Scalar::C64(Complex::new(v.re as f32, v.im as f32)),
            (Scalar::C64(_), DType::C64) | (Scalar::C128(_), DType::C128) => self,
            (Scalar::C64(v), _) => Scalar::F32(v.re).cast(to),
            (Scalar::C128(v), _) => Scalar::F64(v.re).cast(to),
            (Scalar::F32(v), _) => conv!(v),
            (Scalar::F64(v), _) => conv!(v),
            (Scalar::I32(v), _) => conv!(v),
            (Scalar::U32(v), _) => conv!(v),
            (Scalar::Bool(v), _) => Scalar::U32(v as u32).cast(to),
        }
    }

    /// Bit pattern for hashing and exact comparison (distinguishes -0.0 and NaN payloads).
    pub fn bits(self) -> u64 {
        match self {
            Scalar::F32(v) => v.to_bits() as u64,
            Scalar::F64(v) => v.to_bits(),
            Scalar::I32(v) => v as u32 as u64,
            Scalar::U32(v) => v as u64,
            Scalar::Bool(v) => v as u64,
            Scalar::C64(v) => v.re.to_bits() as u64 | (v.im.to_bits() as u64) << 32,
            // 128 bits do not fit: a hash of both parts (complex values are never kernel
            // parameters, see `Scalar::C64`).
            Scalar::C128(v) => v.re.to_bits() ^ v.im.to_bits().rotate_left(29),
        }
    }

    pub fn is_one(self) -> bool {
        self == Scalar::F32(1.0)
            || self == Scalar::F64(1.0)
            || self == Scalar::I32(1)
            || self == Scalar::U32(1)
    }
    pub fn is_zero(self) -> bool {
        self == Scalar::F32(0.0)
            || self == Scalar::F64(0.0)
            || self == Scalar::I32(0)
            || self == Scalar::U32(0)
    }
}
