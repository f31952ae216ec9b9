//! Hardware discovery at initialisation (the seed's section 7.2): an inventory of every OpenCL
//! platform's devices and every wgpu (Vulkan) adapter, taken once per process, and the choice of the
//! executor from `ARRAYFLOW_DEVICE=cpu|opencl[:N]|wgpu[:N]|auto` or the runtime builder.
//!
//! A backend whose loader is missing (no `libOpenCL.so`, no `libvulkan.so`) simply lists no
//! devices. `ARRAYFLOW_REQUIRE_BACKENDS=opencl,wgpu` turns a missing backend into a start-up panic,
//! so test runs on machines that installed the backends fail instead of silently using the CPU.

use std::fmt;
use std::sync::OnceLock;

/// The API an executor drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The CPU executor (native tier and tile VM).
    Cpu,
    /// OpenCL, through the system's ICD loader (`libOpenCL.so`).
    OpenCl,
    /// wgpu on Vulkan (`libvulkan.so`).
    Wgpu,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Cpu => "cpu",
            Backend::OpenCl => "opencl",
            Backend::Wgpu => "wgpu",
        })
    }
}

/// What kind of processor a device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A discrete GPU.
    Discrete,
    /// A GPU that shares the host's memory.
    Integrated,
    /// A CPU device (PoCL's OpenCL device, lavapipe's Vulkan adapter).
    Cpu,
    /// Anything else the API reports (an accelerator, a virtual device).
    Other,
}

/// One device of the inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The API that drives it.
    pub backend: Backend,
    /// Position among the backend's devices (`opencl:N`, `wgpu:N`).
    pub index: usize,
    /// The device's name as the driver reports it.
    pub name: String,
    /// The OpenCL platform or the wgpu driver that offers it.
    pub platform: String,
    /// What kind of processor it is.
    pub kind: DeviceKind,
    /// Global memory in bytes, where the API tells (wgpu does not).
    pub memory: Option<u64>,
    /// The device computes f64 (OpenCL `cl_khr_fp64`; wgpu `SHADER_F64`).
    pub fp64: bool,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} {} ({:?}, {}, {}, f64 {})",
            self.backend,
            self.index,
            self.name,
            self.kind,
            self.platform,
            self.memory
                .map(|m| format!("{} MiB", m >> 20))
                .unwrap_or_else(|| "memory unknown".into()),
            if self.fp64 { "yes" } else { "no" }
        )
    }
}

/// Which executors run programs (the CPU executor always runs beside them). One device: programs
/// go to it first, and to the CPU where it cannot run them. Several (`All`, `List`): each program
/// goes where the scheduler's cost model places it (`exec::placement`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// A discrete GPU when there is one (OpenCL first), else the CPU.
    #[default]
    Auto,
    /// The CPU executor only; the GPU drivers are not touched.
    Cpu,
    /// The OpenCL device of that index (without one: a discrete GPU first, then integrated, then
    /// any other).
    OpenCl(Option<usize>),
    /// The wgpu adapter of that index (without one: a discrete GPU first, then integrated, then
    /// any other).
    Wgpu(Option<usize>),
    /// Every usable device at once, and the CPU: a physical device that both backends offer
    /// (the same name) runs once, through OpenCL.
    All,
    /// These executors at once (`opencl:1,opencl:2,cpu`); the CPU takes programs of its own only
    /// when the list names it.
    List(Vec<DeviceChoice>),
}

impl std::str::FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.contains(',') {
            let list = s
                .split(',')
                .map(|p| match p.trim().parse()? {
                    DeviceChoice::All | DeviceChoice::List(_) | DeviceChoice::Auto => Err(format!(
                        "`{}` cannot be part of a list: name cpu, opencl[:N] or wgpu[:N]",
                        p.trim()
                    )),
                    c => Ok(c),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(DeviceChoice::List(list));
        }
        let (name, index) = match s.split_once(':') {
            Some((n, i)) => (
                n,
                Some(
                    i.parse::<usize>()
                        .map_err(|_| format!("`{i}` is not a device index"))?,
                ),
            ),
            None => (s, None),
        };
        match (name.trim().to_ascii_lowercase().as_str(), index) {
            ("auto", None) => Ok(DeviceChoice::Auto),
            ("cpu", None) => Ok(DeviceChoice::Cpu),
            ("all", None) => Ok(DeviceChoice::All),
            ("opencl", i) => Ok(DeviceChoice::OpenCl(i)),
            ("wgpu", i) => Ok(DeviceChoice::Wgpu(i)),
            _ => Err(format!(
                "`{s}` is not a device: use cpu, opencl[:N], wgpu[:N], auto, all, or a list such \
                 as opencl:0,wgpu:0,cpu"
            )),
        }
    }
}

impl DeviceChoice {
    /// `ARRAYFLOW_DEVICE`, or `Auto`; a bad value is reported and ignored.
    pub fn from_env() -> DeviceChoice {
        match std::env::var("ARRAYFLOW_DEVICE") {
            Ok(v) => v.parse().unwrap_or_else(|e| {
                tracing::warn!(target: "arrayflow::device", "ARRAYFLOW_DEVICE: {e}; using auto");
                DeviceChoice::Auto
            }),
            Err(_) => DeviceChoice::Auto,
        }
    }

    /// The devices this choice starts, in executor order (executor 1 first), and whether the
    /// CPU executor is placed on like a device (`All`, or a list naming `cpu`).
    pub fn resolve_all(&self) -> (Vec<&'static DeviceInfo>, bool) {
        match self {
            DeviceChoice::All => {
                let mut out: Vec<&'static DeviceInfo> = Vec::new();
                let mut devices: Vec<&'static DeviceInfo> = inventory().iter().collect();
                // OpenCL first, so a device both backends offer runs through OpenCL.
                devices.sort_by_key(|d| d.backend != Backend::OpenCl);
                // The k-th wgpu adapter of a name OpenCL offers k times or more is the same
                // physical device (two identical GPUs are two devices, not one).
                let mut seen: std::collections::HashMap<&str, (usize, usize)> = Default::default();
                for d in devices {
                    let c = seen.entry(d.name.as_str()).or_default();
                    if d.backend == Backend::OpenCl {
                        c.0 += 1;
                        out.push(d);
                    } else {
                        c.1 += 1;
                        if c.1 > c.0 {
                            out.push(d);
                        }
                    }
                }
                (out, true)
            }
            DeviceChoice::List(list) => {
                let mut out: Vec<&'static DeviceInfo> = Vec::new();
                for c in list {
                    if let Some(d) = c.clone().resolve()
                        && !out.contains(&d)
                    {
                        out.push(d);
                    }
                }
                (out, list.contains(&DeviceChoice::Cpu))
            }
            c => (c.clone().resolve().into_iter().collect(), false),
        }
    }

    /// The device this choice names in the inventory, or `None` for the CPU executor alone (for
    /// `All` and `List`, their first device).
    pub fn resolve(self) -> Option<&'static DeviceInfo> {
        if let DeviceChoice::All | DeviceChoice::List(_) = self {
            return self.resolve_all().0.first().copied();
        }
        if self == DeviceChoice::Cpu {
            return None; // the GPU drivers are not touched at all
        }
        let inv = inventory();
        let pick = |b: Backend, i: Option<usize>| {
            // Without an index: the backend's best device (discrete, then integrated, then any).
            let rank = |d: &DeviceInfo| match d.kind {
                DeviceKind::Discrete => 0,
                DeviceKind::Integrated => 1,
                _ => 2,
            };
            let found = match i {
                Some(i) => inv.iter().find(|d| d.backend == b && d.index == i),
                None => inv
                    .iter()
                    .filter(|d| d.backend == b)
                    .min_by_key(|d| rank(d)),
            };
            if found.is_none() {
                missing_backend(&format!(
                    "ARRAYFLOW_DEVICE asks for {b}{} but the inventory has {}; using the CPU",
                    i.map(|i| format!(":{i}")).unwrap_or_default(),
                    describe(inv)
                ));
            }
            found
        };
        match self {
            DeviceChoice::Cpu => None,
            DeviceChoice::OpenCl(i) => pick(Backend::OpenCl, i),
            DeviceChoice::Wgpu(i) => pick(Backend::Wgpu, i),
            DeviceChoice::Auto => inv.iter().find(|d| d.kind == DeviceKind::Discrete),
            DeviceChoice::All | DeviceChoice::List(_) => None,
        }
    }
}

fn describe(inv: &[DeviceInfo]) -> String {
    if inv.is_empty() {
        "no devices".into()
    } else {
        inv.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Reports a backend or device that is not there: a panic when `ARRAYFLOW_REQUIRE_BACKENDS` is set
/// (a test machine that installed the backends), else a warning.
pub fn missing_backend(what: &str) {
    if let Ok(req) = std::env::var("ARRAYFLOW_REQUIRE_BACKENDS")
        && !req.trim().is_empty()
    {
        panic!("arrayflow: {what} (ARRAYFLOW_REQUIRE_BACKENDS={req})");
    }
    tracing::warn!(target: "arrayflow::device", "{what}");
}

/// Whether `ARRAYFLOW_REQUIRE_BACKENDS` names `backend`.
pub fn required(backend: Backend) -> bool {
    std::env::var("ARRAYFLOW_REQUIRE_BACKENDS")
        .map(|v| v.split(',').any(|b| b.trim() == backend.to_string()))
        .unwrap_or(false)
}

/// Every device of every backend, found once per process.
pub fn inventory() -> &'static [DeviceInfo] {
    static INVENTORY: OnceLock<Vec<DeviceInfo>> = OnceLock::new();
    INVENTORY.get_or_init(|| {
        let mut v = opencl_devices();
        v.extend(wgpu_devices());
        for d in &v {
            tracing::info!(target: "arrayflow::device", "found {d}");
        }
        for b in [Backend::OpenCl, Backend::Wgpu] {
            if required(b) && !v.iter().any(|d| d.backend == b) {
                missing_backend(&format!("no {b} device found"));
            }
        }
        v
    })
}

/// Every OpenCL device id, platforms in order and their devices in order: the numbering of
/// `opencl:N`, shared by the inventory and the executor that opens device N.
pub(crate) fn opencl_device_ids() -> Vec<(String, opencl3::types::cl_device_id)> {
    use opencl3::device::CL_DEVICE_TYPE_ALL;
    if !cl3::is_opencl_runtime_available() {
        return Vec::new();
    }
    let Ok(platforms) = opencl3::platform::get_platforms() else {
        return Vec::new();
    };
    platforms
        .iter()
        .flat_map(|p| {
            let name = p.name().unwrap_or_default().trim().to_string();
            let ids = p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
            ids.into_iter().map(move |id| (name.clone(), id))
        })
        .collect()
}

/// Every Vulkan adapter wgpu sees, in order: the numbering of `wgpu:N`.
pub(crate) fn wgpu_adapters() -> Vec<wgpu::Adapter> {
    quiet_stderr(|| {
        pollster::block_on(super::gpu::wgpu::instance().enumerate_adapters(wgpu::Backends::VULKAN))
    })
}

/// Runs `f` with the process's standard error sent to `/dev/null`: the Vulkan loader and Mesa's
/// drivers print complaints (`XDG_RUNTIME_DIR is invalid or not set`) while adapters are
/// enumerated, which would otherwise appear in every program's output. Errors that matter come
/// back through the API and are logged on `arrayflow::device`.
#[cfg(target_os = "linux")]
fn quiet_stderr<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: plain descriptor calls; fd 2 is restored before returning, whatever `f` returns.
    unsafe {
        let saved = libc::dup(2);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved < 0 || null < 0 {
            if saved >= 0 {
                libc::close(saved);
            }
            if null >= 0 {
                libc::close(null);
            }
            return f();
        }
        libc::dup2(null, 2);
        libc::close(null);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        libc::dup2(saved, 2);
        libc::close(saved);
        match r {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn quiet_stderr<R>(f: impl FnOnce() -> R) -> R {
    f()
}

fn opencl_devices() -> Vec<DeviceInfo> {
    use opencl3::device::{CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device};
    opencl_device_ids()
        .into_iter()
        .enumerate()
        .map(|(index, (platform, id))| {
            let d = Device::new(id);
            let ty = d.dev_type().unwrap_or(0);
            let kind = if ty & CL_DEVICE_TYPE_CPU != 0 {
                DeviceKind::Cpu
            } else if ty & CL_DEVICE_TYPE_GPU != 0 {
                if d.host_unified_memory().unwrap_or(false) {
                    DeviceKind::Integrated
                } else {
                    DeviceKind::Discrete
                }
            } else {
                DeviceKind::Other
            };
            DeviceInfo {
                backend: Backend::OpenCl,
                index,
                name: d.name().unwrap_or_default().trim().to_string(),
                platform,
                kind,
                memory: d.global_mem_size().ok(),
                fp64: d.double_fp_config().unwrap_or(0) != 0,
            }
        })
        .collect()
}

/// The adapter's largest device-local memory heap, from Vulkan (wgpu itself does not tell). The
/// device executor keeps its buffers within it: past it, the Vulkan allocator would quietly place
/// new buffers in host memory, which kernels reach at PCIe speed.
fn vulkan_device_memory(a: &wgpu::Adapter) -> Option<u64> {
    const DEVICE_LOCAL: u32 = 0x1; // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    // SAFETY: the hal adapter is only read (its instance and physical device handles), and the
    // guard is dropped before this returns.
    unsafe {
        let hal = a.as_hal::<wgpu::hal::api::Vulkan>()?;
        let props = hal
            .shared_instance()
            .raw_instance()
            .get_physical_device_memory_properties(hal.raw_physical_device());
        props.memory_heaps[..props.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.as_raw() & DEVICE_LOCAL != 0)
            .map(|h| h.size)
            .max()
    }
}

fn wgpu_devices() -> Vec<DeviceInfo> {
    wgpu_adapters()
        .iter()
        .enumerate()
        .map(|(index, a)| {
            let info = a.get_info();
            DeviceInfo {
                backend: Backend::Wgpu,
                index,
                name: info.name.clone(),
                platform: format!("{:?} {}", info.backend, info.driver),
                kind: match info.device_type {
                    wgpu::DeviceType::DiscreteGpu => DeviceKind::Discrete,
                    wgpu::DeviceType::IntegratedGpu => DeviceKind::Integrated,
                    wgpu::DeviceType::Cpu => DeviceKind::Cpu,
                    _ => DeviceKind::Other,
                },
                memory: vulkan_device_memory(a),
                fp64: a.features().contains(wgpu::Features::SHADER_F64),
            }
        })
        .collect()
}
