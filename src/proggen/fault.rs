//! Test-only fault injection (feature `fault-injection`): comparison mode's and the debugger's tests
//! make one binary operation compute wrongly and check that the mismatch is found and named. The
//! switch lives here, below the executors, because the tile VM (`exec/cpu/vm.rs`) and the OpenCL
//! and WGSL renderers (`codegen/opencl.rs`, `codegen/wgsl.rs`, through [`planted`]) all read it.
//! Re-exported by `debug`, which owns the tests' view of it.

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

/// Which fault is injected (0: none), for caches of rendered kernels: a kernel rendered with a
/// fault is another program than the same kernel rendered without.
#[inline]
pub fn fault_code() -> u8 {
    #[cfg(feature = "fault-injection")]
    {
        FAULT.load(std::sync::atomic::Ordering::Relaxed)
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
