//! Placement a user can state (issue 25): the live executors ([`Runtime::live_devices`]), a
//! scope that pins work to one of them ([`Runtime::place_on`], as CuPy's `with Device(1)`),
//! [`Array::to_device`], where an array's value lives ([`Array::devices`]), and a scope that
//! splits each large fused kernel's launch between executors by a ratio ([`Runtime::split`],
//! seed 002; `ARRAYFLOW_SPLIT` without a scope, see `exec::split`).
//!
//! Without a scope, programs go where the scheduler's cost model places them
//! (`exec::placement`, when several executors are live: `ARRAYFLOW_DEVICE=all` or a list) or to
//! the one device first.

use super::array::{Array, site};
use super::element::Element;
use super::runtime::Runtime;
use crate::error::Result;
use crate::exec::device::{Backend, DeviceInfo};
pub use crate::exec::split::SplitMode;
use crate::runtime::Inner;
use std::sync::atomic::Ordering;

/// A live executor work can be placed on: the CPU executor (index 0) or a device the runtime
/// started (1, 2, ... in the order of `ARRAYFLOW_DEVICE`'s list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    index: usize,
    name: String,
    info: Option<DeviceInfo>,
}

impl Device {
    /// The CPU executor (always live).
    pub fn cpu() -> Device {
        Device {
            index: 0,
            name: "cpu".into(),
            info: None,
        }
    }
    /// The executor's index (0 the CPU).
    pub fn index(&self) -> usize {
        self.index
    }
    /// Its short name: `cpu`, `opencl:0`, `wgpu:1`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What the inventory says about the device (`None` for the CPU executor).
    pub fn info(&self) -> Option<&DeviceInfo> {
        self.info.as_ref()
    }
    /// The API its executor drives.
    pub fn backend(&self) -> Backend {
        self.info.as_ref().map_or(Backend::Cpu, |d| d.backend)
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.info {
            Some(d) => write!(f, "{d}"),
            None => f.write_str("cpu"),
        }
    }
}

/// Pins the work recorded while it lives to one executor ([`Runtime::place_on`]); dropping it
/// runs that work there and restores the previous placement.
#[must_use = "work is pinned only while the scope lives"]
pub struct PlacementScope {
    previous: usize,
}

impl Drop for PlacementScope {
    fn drop(&mut self) {
        let inner = Inner::get();
        inner.flush_now();
        inner.pin.store(self.previous, Ordering::Relaxed);
    }
}

/// Splits the launches of the work recorded while it lives by a [`SplitMode`]
/// ([`Runtime::split`]); dropping it runs that work and restores the previous mode.
#[must_use = "launches are split only while the scope lives"]
pub struct SplitScope {
    previous: u64,
}

impl Drop for SplitScope {
    fn drop(&mut self) {
        let inner = Inner::get();
        inner.flush_now();
        inner.split.store(self.previous, Ordering::Relaxed);
    }
}

fn devices_of(mask: u32) -> Vec<Device> {
    Runtime::live_devices()
        .into_iter()
        .filter(|d| mask & (1 << d.index) != 0)
        .collect()
}

impl Runtime {
    /// The executors running now, the CPU first, then each device the runtime started.
    pub fn live_devices() -> Vec<Device> {
        let sched = &Inner::get().sched;
        let names = sched.executor_names();
        std::iter::once(Device::cpu())
            .chain(sched.devices().iter().enumerate().map(|(i, d)| Device {
                index: i + 1,
                name: names[i + 1].clone(),
                info: Some(d.clone()),
            }))
            .collect()
    }

    /// Runs the work recorded while the returned scope lives on `device`, where it can (an f64
    /// program goes to the CPU on a device without f64). Entering and leaving the scope flush the
    /// work queue, so what was recorded before runs where it would have. Runtime-wide: work
    /// other threads record meanwhile is pinned too.
    pub fn place_on(device: &Device) -> PlacementScope {
        let inner = Inner::get();
        inner.flush_now();
        PlacementScope {
            previous: inner.pin.swap(device.index, Ordering::Relaxed),
        }
    }
}

impl Runtime {
    /// Splits each fused kernel of the work recorded while the returned scope lives between
    /// executors by `mode` (seed 002's one launch over several devices): along the domain's
    /// dimension 0, at work-group-aligned rows, each part on its own executor reading only the
    /// rows it needs, the parts joined on the executor of the largest. `SplitMode::Ratio(r)`
    /// gives the first device the share `r` and the second device (or the CPU beside one device)
    /// the rest; `SplitMode::partition(p)` is 002's `partition` 0-10; kernels under
    /// `exec::split::SPLIT_MIN_ELEMENTS` elements run whole unless the mode is
    /// `SplitMode::Force`. Nothing splits without a device. Entering and leaving flush the work
    /// queue, as [`Runtime::place_on`] does; a placement scope's pin applies to launches that do
    /// not split. Runtime-wide, like a placement scope.
    pub fn split(mode: SplitMode) -> SplitScope {
        let inner = Inner::get();
        inner.flush_now();
        SplitScope {
            previous: inner.split.swap(mode.encode(), Ordering::Relaxed),
        }
    }
}

impl<T: Element> Array<T> {
    /// This array with its value moved to `device` (computed first if pending; the move starts
    /// now and does not wait). Programs that read it prefer that device afterwards, since their
    /// input is there; the same values on every device.
    #[track_caller]
    pub fn to_device(&self, device: &Device) -> Result<Array<T>> {
        Inner::get().place(&self.h, device.index, site())?;
        Ok(self.clone())
    }

    /// The executors that hold this array's value (where its program runs while it is being
    /// computed); empty while it is pending (not yet flushed) or a constant.
    pub fn devices(&self) -> Vec<Device> {
        devices_of(Inner::get().holders(&self.h))
    }
}
