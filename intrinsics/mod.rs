//! The intrinsic library (the seed's 700): hand-written, non-fusible kernels and the host code that
//! launches them, one folder per target. The program generator schedules them between fused kernels.

pub mod cpu;
pub mod opencl;
pub mod wgsl;
