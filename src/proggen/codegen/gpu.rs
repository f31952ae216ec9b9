//! The contract between the GPU code generators (`opencl.rs`, `wgsl.rs`, the GPU intrinsics) and the
//! GPU executors: a kernel becomes a [`GpuPlan`] — one source text and the passes to dispatch from it,
//! in order. Executors know nothing about ops; generators know nothing about devices beyond
//! [`Target`].
//!
//! Buffer binding, per pass, in `Pass::buffers` order:
//! - OpenCL: kernel arguments `0 .. buffers.len()` are `__global` pointers; when `Pass::params` is
//!   set they are followed by one `ulong` argument per kernel parameter slot (its 64 raw bits).
//! - WGSL: `@group(0) @binding(i)` is `buffers[i]` (storage buffers); when `Pass::params` is set,
//!   the parameters are immediate data (`var<immediate> params: array<u32, N>`, no binding, two
//!   words per slot, low word first) when the target takes immediates and the kernel's slots fit
//!   in `wgsl::IMMEDIATE_BYTES`;
//!   otherwise `@binding(buffers.len())` is a read-only storage `array<u32>` of the same words (at
//!   least two words, even with no parameters).
//!
//! Element storage on the device: f32/f64/i32/u32 natively; bool is one byte (`uchar`) on OpenCL and
//! one `u32` (0 or 1) on WGSL. A complex number is its two components, real part first
//! (`float2`/`double2` on OpenCL, `vec2<f32>` on WGSL, which has no `Complex<f64>`), as num-complex
//! lays it out on the host. Every size below is in bytes.

use crate::ir::DType;

/// What a code generator may assume about the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// The device computes f64 (OpenCL `cl_khr_fp64`). WGSL targets always say false.
    pub fp64: bool,
    /// The device takes kernel parameters as immediate data (wgpu `Features::IMMEDIATES`, at
    /// least `wgsl::IMMEDIATE_BYTES`): the WGSL renderer then declares them `var<immediate>`.
    /// OpenCL passes parameters as kernel arguments and says false.
    pub immediates: bool,
    /// WGSL's `fma` rounds once on the device (probed when the wgpu executor starts,
    /// `exec/gpu/wgpu_probe.rs`): the exact library's remainders are then one `fma` each. OpenCL
    /// requires a fused `fma` and says true (its renderer does not use it).
    pub fused_fma: bool,
}

/// A buffer a pass binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BufArg {
    /// The kernel's input `i` (the program's inputs, in order).
    Input(u32),
    /// The kernel's output `i` (the program's outputs, in order).
    Output(u32),
    /// Scratch buffer `i` of [`GpuPlan::scratch`]: allocated per launch and given back after. The
    /// fault word ([`GpuPlan::fault`]) starts at zero; any other scratch buffer starts with
    /// whatever the pool left in it, so the plan's passes write each element before reading it.
    Scratch(u32),
}

/// One dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pass {
    /// The entry point's name in the source.
    pub entry: String,
    pub buffers: Vec<BufArg>,
    /// Whether the entry takes the kernel's parameter values (see the module comment).
    pub params: bool,
    /// Number of work-groups (1-D). Zero means the pass is skipped.
    pub groups: u32,
    /// Work-group size; the source declares the same (WGSL `@workgroup_size`, OpenCL
    /// `reqd_work_group_size`).
    pub local: u32,
}

/// A kernel rendered for one GPU target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GpuPlan {
    /// The whole program: the primitive library's sources the kernel needs, then its entries.
    pub source: String,
    /// Bytes of each scratch buffer.
    pub scratch: Vec<u64>,
    pub passes: Vec<Pass>,
    /// A scratch buffer holding one u32 the executor reads after the last pass: 0 when all went
    /// well, else `1 + i` for a fault at instruction `i` of the fused kernel (integer division by
    /// zero), or `1` for an intrinsic (gather index out of range). A fault buffer of 8 bytes has
    /// a second word, the first failing element and check the kernel found
    /// ([`GpuPlan::first_word`], `crate::debug::trap::device`).
    pub fault: Option<u32>,
    /// WGSL: the `N` of the program's `var<immediate> params: array<u32, N>` (the words the
    /// executor sets before each dispatch that takes parameters); `None` when the parameters come
    /// from a storage buffer, or there are none. Always `None` for OpenCL.
    pub immediate_words: Option<u32>,
    /// Leading passes whose result an executor may keep between launches ([`Kept`]).
    pub kept: Option<Kept>,
    /// The first pass runs a range of the kernel's work ([`Ranged`]).
    pub range: Option<Ranged>,
}

/// A kernel whose first pass runs a range of its work units (a fused kernel with trap checks,
/// so that a launch in resumable passes dispatches the same program once per range,
/// `exec/gpu/passes.rs`). Parameter slots `slot` and `slot + 1`, after the kernel's own, hold the
/// first and end unit: a whole launch binds `0 .. units`; the passes after the first (a
/// reduction's `af_final`) run once, after the range that ends at `units`. The units `a .. b`
/// (`a` and `b` multiples of `align`, or `b = units`) cover one run of the domain's elements in
/// linear order, later units later elements, so the first failing element of the first range that
/// has one is the launch's first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ranged {
    /// The first of the two range slots.
    pub slot: u32,
    /// Units of the whole launch: elements of an element-wise kernel; a reduction's first-pass
    /// work-group slots, or its results where a thread takes a result.
    pub units: u64,
    /// About how many domain elements a unit covers (1 for an element-wise kernel).
    pub elements: u64,
    /// Ranges start and end at multiples of this many units (or at `units`).
    pub align: u64,
}

/// Leading passes of a plan that compute a constant table (Bluestein's transformed chirp
/// filter): passes `0 .. passes` read nothing a launch provides and leave the table in scratch
/// buffer `scratch` (their other scratch buffers are their own). Every plan with the same `key`
/// computes the same table on one device, so an executor may run them once, keep the buffer
/// under `key`, and on later launches skip them and bind the kept buffer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kept {
    /// What the table depends on besides the device (e.g. length, element type, direction).
    pub key: String,
    /// The passes that compute it, from the first.
    pub passes: u32,
    /// The scratch buffer that holds it after them.
    pub scratch: u32,
}

impl GpuPlan {
    /// Whether the fault buffer keeps the first failing element's word after the fault code.
    pub fn first_word(&self) -> bool {
        self.fault.is_some_and(|f| self.scratch[f as usize] >= 8)
    }
    /// An intrinsic's plan: `source` with the one pass `entry`, no parameters, binding inputs
    /// `0 .. inputs` and output 0, and with `fault_word` a one-word fault scratch buffer after
    /// them (`fault` = that scratch).
    pub fn single_pass(
        source: String,
        entry: &str,
        inputs: u32,
        fault_word: bool,
        groups: u32,
        local: u32,
    ) -> GpuPlan {
        let mut buffers: Vec<BufArg> = (0..inputs).map(BufArg::Input).collect();
        buffers.push(BufArg::Output(0));
        if fault_word {
            buffers.push(BufArg::Scratch(0));
        }
        GpuPlan {
            source,
            scratch: if fault_word { vec![4] } else { Vec::new() },
            passes: vec![Pass {
                entry: entry.into(),
                buffers,
                params: false,
                groups,
                local,
            }],
            fault: fault_word.then_some(0),
            immediate_words: None,
            kept: None,
            range: None,
        }
    }
}

/// Bytes one element of `d` takes on the device.
pub fn elem_bytes(d: DType, wgsl: bool) -> u64 {
    match d {
        DType::Bool if wgsl => 4,
        d => d.size() as u64,
    }
}

/// Why a target cannot run a kernel (the kernel then goes to the CPU executor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Shapes of the generated element-wise kernels, read once from the environment (README, the
/// variables table); the defaults measured fastest on an H200. The alternatives stay reachable
/// for comparisons and for the CI runs that exercise every loop shape.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// OpenCL: four consecutive elements per vector load and store (`ARRAYFLOW_OPENCL_VECTOR=0`:
    /// the scalar loop).
    pub opencl_vector: bool,
    /// OpenCL: quads per thread and main-loop trip, a global size apart, loaded before any is
    /// computed (`ARRAYFLOW_OPENCL_QUADS`, 1 to 4; default 1: with a work-group per 256 quads,
    /// one quad per thread ran the chain 0.5% faster than two on the H200, session 10).
    pub opencl_quads: u64,
    /// OpenCL: most work-groups of an element-wise kernel (`ARRAYFLOW_OPENCL_GROUPS`; default
    /// 2^20, so a large array is one trip per thread and no thread runs a lone extra trip).
    pub opencl_groups: u64,
    /// WGSL: the quad form (`array<vec4<T>>` bindings) where a kernel qualifies
    /// (`ARRAYFLOW_WGPU_VECTOR=0`: always the scalar form).
    pub wgpu_vector: bool,
    /// WGSL: quads per thread and main-loop trip (`ARRAYFLOW_WGPU_QUADS`, 1 to 4; default 2).
    pub wgpu_quads: u32,
    /// WGSL: the exact library takes a fused `fma` where the device has one
    /// (`ARRAYFLOW_WGPU_FMA=0`: Dekker's products on every device).
    pub wgpu_fma: bool,
}

/// The process's [`Tuning`].
pub fn tuning() -> &'static Tuning {
    static T: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let on = |k: &str| std::env::var(k).map_or(true, |v| v.trim() != "0");
        let num = |k: &str, default: u64, lo: u64, hi: u64| {
            crate::settings::number(k).map_or(default, |v: u64| v.clamp(lo, hi))
        };
        Tuning {
            opencl_vector: on("ARRAYFLOW_OPENCL_VECTOR"),
            opencl_quads: num("ARRAYFLOW_OPENCL_QUADS", 1, 1, 4),
            opencl_groups: num("ARRAYFLOW_OPENCL_GROUPS", 1 << 20, 1, 1 << 24),
            wgpu_vector: on("ARRAYFLOW_WGPU_VECTOR"),
            wgpu_quads: num("ARRAYFLOW_WGPU_QUADS", 2, 1, 4) as u32,
            wgpu_fma: on("ARRAYFLOW_WGPU_FMA"),
        }
    })
}
