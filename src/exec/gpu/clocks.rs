//! Keeps an NVIDIA GPU at compute clocks while the wgpu executor drives it.
//!
//! NVIDIA's driver runs a Vulkan device under its graphics power policy: it raises the clocks
//! only after the GPU has been busy for a while and lowers them again between bursts. A runtime's
//! work is bursts (a kernel, a read, host code, the next kernel), so on an H100 wgpu's kernels ran
//! at the idle 345 MHz most of the time, 3-20x slower than the same WGSL timed back to back
//! (measured in session 19: BENCHMARKS.md's git history). While a process holds a compute context
//! (CUDA, or OpenCL, which NVIDIA builds on it) on the GPU, the driver uses its compute policy for
//! the whole GPU and keeps the clocks up. So the wgpu executor opens an OpenCL context on the same
//! GPU, when the machine has NVIDIA's OpenCL driver, and holds it (no memory, no queue, no work)
//! for as long as the executor lives. `ARRAYFLOW_WGPU_CLOCKS=driver` leaves the policy to the
//! driver.

use opencl3::context::Context;
use opencl3::device::Device;

/// The PCI vendor id of NVIDIA.
const NVIDIA: u32 = 0x10de;

/// A held compute context (dropped with the executor), or nothing where none is needed or none
/// could be opened.
pub struct ClockHold(#[allow(dead_code)] Option<Context>);

/// Opens a compute context on the GPU wgpu's adapter `info` names, where that GPU is NVIDIA's and
/// `ARRAYFLOW_WGPU_CLOCKS` is not `driver`.
pub fn hold(info: &wgpu::AdapterInfo) -> ClockHold {
    let off = std::env::var("ARRAYFLOW_WGPU_CLOCKS").is_ok_and(|v| v == "driver");
    if off || info.vendor != NVIDIA || info.device_type != wgpu::DeviceType::DiscreteGpu {
        return ClockHold(None);
    }
    let bus = pci_bus(&info.device_pci_bus_id);
    let found = crate::exec::device::opencl_device_ids()
        .into_iter()
        .map(|(_, id)| Device::new(id))
        .find(|d| {
            d.vendor_id().is_ok_and(|v| v == NVIDIA)
                && d.name().is_ok_and(|n| n.trim() == info.name.trim())
                && bus.is_none_or(|b| d.pci_bus_id_nv().is_ok_and(|x| x == b))
        });
    let context = found.and_then(|d| match Context::from_device(&d) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::info!(target: "arrayflow::exec", "wgpu {}: no compute context to hold the clocks ({e})", info.name);
            None
        }
    });
    if context.is_some() {
        tracing::info!(target: "arrayflow::exec", "wgpu {}: holding a compute context (the driver's compute clocks)", info.name);
    }
    ClockHold(context)
}

/// The bus number of a PCI address `domain:bus:device.function` (hexadecimal).
fn pci_bus(address: &str) -> Option<u32> {
    let mut parts = address.split(':');
    let (_domain, bus) = (parts.next()?, parts.next()?);
    parts.next()?;
    u32::from_str_radix(bus, 16).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_bus_of_a_pci_address() {
        assert_eq!(super::pci_bus("0000:1a:00.0"), Some(0x1a));
        assert_eq!(super::pci_bus(""), None);
        assert_eq!(super::pci_bus("garbage"), None);
    }
}
