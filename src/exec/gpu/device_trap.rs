//! A trap the device found: the kernel's first-failing word (`crate::debug::trap::device`) names
//! the first failing element and check, and the CPU tile VM runs only that element's tile for
//! the value (and to confirm the element: where the CPU names another, it searches the whole
//! launch as before, and the disagreement is logged). For an intrinsic's index trap the CPU re-runs
//! the intrinsic and the device's position is checked against the one it names.

use super::{DeviceApi, GpuLoop};
use crate::debug::trap::{device, report};
use crate::error::{Error, ErrorKind};
use crate::exec::scheduler::Task;
use crate::proggen::sequence::Kernel;

/// The trap of a fused kernel whose device kept its first failing element in `first`, as the
/// task's result; `None` when the CPU must search the launch (no word, or the CPU disagrees).
pub(super) fn from_device<A: DeviceApi>(
    lp: &mut GpuLoop<A>,
    task: &Task,
    first: u32,
) -> Option<crate::Result<()>> {
    let Kernel::Fused(k) = &*task.program.kernel else {
        return None;
    };
    let (element, check) = device::decode(first, k.traps.len())?;
    if check >= k.traps.len() {
        return None;
    }
    let mut inputs = Vec::with_capacity(task.inputs.len());
    for &b in &task.inputs {
        match lp.host_copy(b) {
            Ok(v) => inputs.push(v),
            Err(e) => return Some(Err(e)),
        }
    }
    let refs: Vec<_> = inputs.iter().map(|a| &**a).collect();
    let tile = task.program.launch.tile;
    match crate::exec::cpu::vm::first_failing_near(k, tile, &refs, &task.params, element) {
        Ok(Some((lin, c, value))) if (lin, c) == (element, check) => {
            let mut t = report::Trap::of_check(&k.traps[c], element, value);
            t.device = true;
            Some(Err(report::record(t)))
        }
        found => {
            tracing::warn!(target: "arrayflow::debug",
                "the device's first failing element {element} (check {check}) is not the CPU's \
                 ({found:?}); the CPU searches the whole launch");
            None
        }
    }
}

/// After the CPU re-ran an intrinsic whose device kept a first-failing word: marks the index
/// trap the CPU recorded as found by the device when both name the same position.
pub(super) fn confirm_index_trap(task: &Task, first: u32, result: &Result<(), Error>) {
    let Kernel::Intrinsic(_) = &*task.program.kernel else {
        return;
    };
    let Some((element, _)) = device::decode(first, 1) else {
        return;
    };
    if matches!(result, Err(e) if e.kind == ErrorKind::Trap) && !report::found_on_device(element) {
        tracing::warn!(target: "arrayflow::debug",
            "the device's first bad index position {element} is not the CPU's");
    }
}
