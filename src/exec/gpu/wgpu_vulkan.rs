//! Opening the wgpu device on Vulkan without robust buffer access.
//!
//! wgpu-hal always enables Vulkan's `robustBufferAccess` (and `robustBufferAccess2` where the
//! driver has `VK_EXT_robustness2`), so the driver bounds-checks every storage-buffer load and
//! store, a cost an element-wise kernel pays per element. arrayflow's generated kernels never
//! index outside their bindings (their shaders are already created without naga's checks, as
//! trusted), like the OpenCL executor's, so this module creates the `VkDevice` itself: the same
//! extensions and feature chain wgpu-hal would request ([`wgpu::hal::vulkan::Adapter`]'s
//! `required_device_extensions` and `physical_device_features`), with those two features off, then
//! hands it to wgpu (`device_from_raw`, `create_device_from_hal`).
//!
//! `ARRAYFLOW_WGPU_ROBUST=1` keeps wgpu's own device (robust access on). Any adapter that is not
//! Vulkan, or a device creation that fails here, also falls back to `request_device`.

use ash::vk;
use wgpu::hal::api::Vulkan;

/// Whether robust buffer access stays on (`ARRAYFLOW_WGPU_ROBUST=1`).
pub fn robust() -> bool {
    std::env::var_os("ARRAYFLOW_WGPU_ROBUST").is_some_and(|v| v == "1")
}

/// Opens `adapter`'s device as `desc` asks, with robust buffer access off. `None` when the adapter
/// is not a Vulkan one or the driver refuses the device (the caller then uses `request_device`).
pub fn open_unchecked(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
) -> Option<(wgpu::Device, wgpu::Queue)> {
    // SAFETY: `as_hal` gives the adapter's own Vulkan handle; the device is created from that
    // physical device with exactly the extensions and feature structures wgpu-hal computes for
    // `desc.required_features` (so `device_from_raw`'s contract holds), except that two
    // robustness features are off, which only removes bounds checks the executor does not rely
    // on. The feature structures live in `phd` until `create_device` returns.
    unsafe {
        let hal = adapter.as_hal::<Vulkan>()?;
        let features = desc.required_features;
        let extensions = hal.required_device_extensions(features);
        let mut phd = hal.physical_device_features(&extensions, features);
        let family = vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&[1.0]);
        let names: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
        let families = [family];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&families)
            .enabled_extension_names(&names);
        let mut info = phd.add_to_device_create(info);
        let mut core = *info.p_enabled_features;
        core.robust_buffer_access = vk::FALSE;
        info.p_enabled_features = &core;
        // The chain's structures were pushed from `&mut` borrows of `phd`, which `info` holds.
        let mut next = info.p_next as *mut vk::BaseOutStructure<'_>;
        while !next.is_null() {
            if (*next).s_type == vk::StructureType::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT {
                (*next.cast::<vk::PhysicalDeviceRobustness2FeaturesEXT<'_>>())
                    .robust_buffer_access2 = vk::FALSE;
            }
            next = (*next).p_next;
        }
        let instance = hal.shared_instance().raw_instance();
        let raw = match instance.create_device(hal.raw_physical_device(), &info, None) {
            Ok(raw) => raw,
            Err(e) => {
                tracing::warn!(target: "arrayflow::exec", "wgpu: vkCreateDevice without robust access failed ({e}); using wgpu's device");
                return None;
            }
        };
        let open = hal
            .device_from_raw(
                raw,
                None,
                &extensions,
                features,
                &desc.required_limits,
                &desc.memory_hints,
                0,
                0,
            )
            .ok()?;
        drop(hal);
        match adapter.create_device_from_hal(open, desc) {
            Ok(pair) => Some(pair),
            Err(e) => {
                tracing::warn!(target: "arrayflow::exec", "wgpu: device from a raw Vulkan device failed ({e}); using wgpu's device");
                None
            }
        }
    }
}
