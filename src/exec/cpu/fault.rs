//! Test-only fault injection (feature `fault-injection`): comparison mode's tests make the tile VM
//! compute one operation wrongly and check that the mismatch is found and named. Re-exported by
//! `debug`, which owns the tests' view of it.

/// Test-only fault injection: while set, the tile VM computes `op` wrongly (the first element of
/// every tile of a float result is off) and the native tier stands aside.
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
