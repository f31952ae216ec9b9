//! Element types and typed scalar values.

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
}

impl DType {
    /// Every element type, in declaration order (`DType as usize` indexes it).
    pub const ALL: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::U32, DType::Bool];

    /// Bytes per element in memory.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 => 8,
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
    /// Whether arithmetic applies (every type but `bool`).
    pub fn is_numeric(self) -> bool {
        self != DType::Bool
    }
    /// The Rust name of the type (`"f32"`, `"bool"`, ...), as `Display` prints it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::Bool => "bool",
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
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
            Scalar::Bool(_) => DType::Bool,
        }
    }

    /// The value as f64 (bools as 0/1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v as f64,
            Scalar::F64(v) => v,
            Scalar::I32(v) => v as f64,
            Scalar::U32(v) => v as f64,
            Scalar::Bool(v) => v as u8 as f64,
        }
    }

    /// Converts with the same rules as the `cast` operation (Rust `as`, numbers to bool by `!= 0`).
    pub fn cast(self, to: DType) -> Scalar {
        macro_rules! conv {
            ($v:expr) => {
                match to {
                    DType::F32 => Scalar::F32($v as f32),
                    DType::F64 => Scalar::F64($v as f64),
                    DType::I32 => Scalar::I32($v as i32),
                    DType::U32 => Scalar::U32($v as u32),
                    DType::Bool => Scalar::Bool($v != Default::default()),
                }
            };
        }
        match self {
            Scalar::F32(v) => conv!(v),
            Scalar::F64(v) => conv!(v),
            Scalar::I32(v) => conv!(v),
            Scalar::U32(v) => conv!(v),
            Scalar::Bool(v) => Scalar::U32(v as u32).cast(to),
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
