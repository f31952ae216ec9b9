//! Test-only fault injection (feature `fault-injection`): comparison mode's and the debugger's tests
//! make one binary operation, or one intrinsic, compute wrongly and check that the mismatch is
//! found and named. The switch lives here, below the executors, because the tile VM
//! (`exec/cpu/vm.rs`), the OpenCL and WGSL renderers (`codegen/opencl.rs`, `codegen/wgsl.rs`,
//! through [`planted`]) and the intrinsic library's entries (`intrinsics/cpu.rs`, `opencl.rs`,
//! `wgsl.rs`, through [`intrinsic_faulty`]) all read it. Re-exported by `debug`, which owns the
//! tests' view of it.

/// Test-only fault injection: while set, `op` computes wrongly on a float result. The tile VM
/// makes the first element of every tile off (`2x + 1`); the OpenCL and WGSL renderers make every
/// element off (`2x + 1`, printed into the kernel's source, so a kernel rendered with the fault
/// is a different program in the program cache); the native tier stands aside.
#[cfg(feature = "fault-injection")]
pub fn inject_fault(op: Option<crate::ir::BinaryOp>) {
    FAULT.store(
        op.map_or(0, |o| o as u8 + 1),
        std::sync::atomic::Ordering::SeqCst,
    );
}

#[cfg(feature = "fault-injection")]
static FAULT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether `op` is the injected fault.
#[inline]
pub fn faulty(_op: crate::ir::BinaryOp) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        let f = FAULT.load(std::sync::atomic::Ordering::Relaxed);
        f != 0 && f - 1 == _op as u8
    }
    #[cfg(not(feature = "fault-injection"))]
    false
}

/// Test-only fault injection: while set, the intrinsic named `name` (its registry name: `scan`,
/// `matmul`, `sort`, ...) computes wrongly: every element of its first output, when it is f32 or
/// f64, comes out `2x + 1`. On the CPU after the intrinsic's own code ran
/// (`intrinsics/cpu.rs`); on a GPU by a pass appended to its plan (`intrinsics/fault.rs`,
/// `plant`), so the plan is another program in the program cache.
#[cfg(feature = "fault-injection")]
pub fn inject_intrinsic_fault(name: Option<&'static str>) {
    let mut f = INTRINSIC_FAULT.write();
    *f = name;
    // A tag of the name (1..=255; 0: none) for `fault_code`, read without the lock.
    let tag = name.map_or(0, |n| {
        1 + n
            .bytes()
            .fold(0u16, |h, b| h.wrapping_mul(31).wrapping_add(b as u16))
            % 255
    });
    INTRINSIC_TAG.store(tag as u8, std::sync::atomic::Ordering::SeqCst);
}

#[cfg(feature = "fault-injection")]
static INTRINSIC_FAULT: parking_lot::RwLock<Option<&'static str>> = parking_lot::RwLock::new(None);

#[cfg(feature = "fault-injection")]
static INTRINSIC_TAG: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether the intrinsic named `name` is the injected fault (one atomic load when none is).
#[inline]
pub fn intrinsic_faulty(_name: &str) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        INTRINSIC_TAG.load(std::sync::atomic::Ordering::Relaxed) != 0
            && *INTRINSIC_FAULT.read() == Some(_name)
    }
    #[cfg(not(feature = "fault-injection"))]
    false
}

/// Which faults are injected (0: none), for caches of rendered kernels: a kernel rendered with a
/// fault is another program than the same kernel rendered without. The low byte is the binary
/// op's, the high byte a tag of the intrinsic's name.
#[inline]
pub fn fault_code() -> u16 {
    #[cfg(feature = "fault-injection")]
    {
        use std::sync::atomic::Ordering::Relaxed;
        FAULT.load(Relaxed) as u16 | (INTRINSIC_TAG.load(Relaxed) as u16) << 8
    }
    #[cfg(not(feature = "fault-injection"))]
    0
}

/// Whether any fault is injected (the native tier stands aside then).
#[inline]
pub fn any_fault() -> bool {
    #[cfg(feature = "fault-injection")]
    {
        FAULT.load(std::sync::atomic::Ordering::Relaxed) != 0
    }
    #[cfg(not(feature = "fault-injection"))]
    false
}

/// The statement that plants the fault into a rendered kernel after register `dst` (of element
/// type `ty`) was assigned `op`'s result: `None` unless `op` is the injected fault on a float type.
/// Both GPU dialects spell it the same way (`2.0` is an f32 literal in WGSL; OpenCL C takes the
/// `f` suffix for f32).
pub fn planted(
    op: crate::ir::BinaryOp,
    ty: crate::ir::DType,
    dst: u32,
    opencl: bool,
) -> Option<String> {
    use crate::ir::DType;
    if !faulty(op) {
        return None;
    }
    let suffix = match ty {
        DType::F32 if opencl => "f",
        DType::F32 | DType::F64 => "",
        _ => return None,
    };
    Some(format!("r{dst} = r{dst} * 2.0{suffix} + 1.0{suffix};"))
}
