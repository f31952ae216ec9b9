//! The CPU's native tier: fused kernels rendered to C (`proggen::codegen::c`), compiled by the
//! system C compiler into a shared library, loaded with `libloading`, and run over the domain in
//! parallel (a reduction over outer axes as its row-order form, accumulated by `rows`, as on the
//! tile VM; one over short power-of-two segments reduced inside the C kernel, `c::segmented`).
//! Compiled kernels are kept by the program cache (`exec/program_cache.rs`, kind `cpu`), in
//! memory and on disk, keyed by a checksum of source, compiler, flags and CPU: each shared
//! object carries the cache's record as a trailer (so it stays loadable) and its C source lies
//! beside it (`<key>.c`, for reading only); a file whose record does not match or that fails to
//! load is rebuilt, never trusted.
//!
//! Policy (`ARRAYFLOW_NATIVE`, or `Runtime::set_native`): `auto` (default) compiles kernels of at
//! least `ARRAYFLOW_NATIVE_MIN` elements (default 65536) in the background and runs them on the
//! tile VM until the library is ready (and smaller kernels once they have run a few times: a loop
//! of small steps); `always` compiles every kernel before running it; `off`
//! uses only the tile VM. Without a working C compiler everything runs on the tile VM.

use super::reduce;
use super::slices::{OutPtr, Src};
use super::vm::Fault;
use crate::error::{Error, ErrorKind};
use crate::exec::TypedVec;
use crate::exec::program_cache::{Found, Key, Layout, ProgramCache, Store};
use crate::proggen::codegen::c;
use crate::proggen::kernel::FusedKernel;
use crate::proggen::sequence::Kernel;
use ahash::AHashMap;
use parking_lot::{Condvar, Mutex};
use rayon::prelude::*;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// When the native tier is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeMode {
    /// Never: the tile VM runs every kernel.
    Off,
    /// Large kernels, compiled in the background (the default).
    Auto,
    /// Every kernel, compiled before it first runs.
    Always,
    /// As `Always`, and a kernel that cannot be compiled fails instead of falling back to the tile
    /// VM (for CI, where the compiler must be there).
    Require,
}

static MODE: AtomicU8 = AtomicU8::new(u8::MAX);
static MIN_ELEMENTS: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Kernels compiled and launches run natively (for `Runtime::stats()`).
pub static COMPILED: AtomicU64 = AtomicU64::new(0);
pub static LAUNCHES: AtomicU64 = AtomicU64::new(0);
/// The program cache's counters: kernels found loaded in memory, loaded from the disk cache, and
/// time spent looking kernels up (rendering + hashing + map). Entries removed from the disk cache:
/// [`evictions`].
pub static MEMORY_HITS: AtomicU64 = AtomicU64::new(0);
pub static DISK_HITS: AtomicU64 = AtomicU64::new(0);
pub static LOOKUP_NS: AtomicU64 = AtomicU64::new(0);

pub fn mode() -> NativeMode {
    match MODE.load(Ordering::Relaxed) {
        0 => NativeMode::Off,
        1 => NativeMode::Auto,
        2 => NativeMode::Always,
        3 => NativeMode::Require,
        _ => {
            let m = match std::env::var("ARRAYFLOW_NATIVE").as_deref() {
                Ok("off") | Ok("0") => NativeMode::Off,
                Ok("always") => NativeMode::Always,
                Ok("require") => NativeMode::Require,
                _ => NativeMode::Auto,
            };
            set_mode(m);
            m
        }
    }
}

pub fn set_mode(m: NativeMode) {
    MODE.store(m as u8, Ordering::Relaxed);
}

fn min_elements() -> usize {
    let v = MIN_ELEMENTS.load(Ordering::Relaxed);
    if v != usize::MAX {
        return v;
    }
    let v = crate::settings::number("ARRAYFLOW_NATIVE_MIN").unwrap_or(1 << 16);
    MIN_ELEMENTS.store(v, Ordering::Relaxed);
    v
}

type KernelFn = unsafe extern "C" fn(
    *const *const c_void,
    *const *mut c_void,
    *const *mut c_void,
    *const u64,
    u64,
    u64,
) -> u32;

/// A loaded native kernel.
pub struct NativeKernel {
    _lib: libloading::Library,
    f: KernelFn,
}

#[derive(Clone)]
enum State {
    Compiling,
    Ready(Arc<NativeKernel>),
    Failed,
}

/// Compiled kernels: their states in memory, shared objects on disk (`<cache>/cpu/<key>.so`).
fn cache() -> &'static ProgramCache<State> {
    static C: OnceLock<ProgramCache<State>> = OnceLock::new();
    C.get_or_init(|| ProgramCache::new(Store::new("cpu", "so", Layout::Trailer)))
}

/// Entries removed from the disk cache to keep it under its size limit (in this process).
pub fn evictions() -> u64 {
    cache().store().evictions()
}

const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-ffp-contract=off",
    "-fno-math-errno",
    // Float ops never trap here (no FP exception handlers), so GCC may evaluate both arms of a
    // select and vectorise it: the values are unchanged.
    "-fno-trapping-math",
    // `#pragma omp simd` (segments of a short reduction, `codegen/c.rs`) without OpenMP's runtime.
    "-fopenmp-simd",
    "-fPIC",
    "-shared",
];

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Where compiled kernels are kept: `cpu` under `ARRAYFLOW_CACHE_DIR`, else under the user's
/// cache directory.
pub fn cache_dir() -> PathBuf {
    cache().store().dir()
}

/// Key of everything besides the kernel body that decides the compiled code: the primitive
/// library's C sources, the compiler, its flags, the CPU and this crate's version.
fn toolchain_key() -> Key {
    static SUM: OnceLock<Key> = OnceLock::new();
    *SUM.get_or_init(|| {
        Key::of_str(&[
            c::HEADER,
            &compiler(),
            &FLAGS.join(" "),
            &host_cpu(),
            env!("CARGO_PKG_VERSION"),
        ])
    })
}

fn host_cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The kernel of `key` from the disk cache, else compiled from `src` (and saved there).
fn compile(src: &str, key: Key) -> Result<NativeKernel, String> {
    let store = cache().store();
    let t0 = crate::profile::now();
    let (nk, found) = store.load_or_build(key, |e| load(&e.path), || build(store, src, key))?;
    if let Some(t0) = t0 {
        let (kind, hit) = match found {
            Found::Built => ("compile", None),
            _ => ("program_cache", Some(true)),
        };
        crate::profile::runtime(kind, "native C", hit, t0, 0, None);
    }
    if found == Found::Disk {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
    } else {
        // The source beside the library, for a person reading the cache.
        let _ = store.write_beside(key, "c", src.as_bytes());
    }
    Ok(nk)
}

/// Runs the C compiler on `src` into a temporary file of the store's directory and loads the
/// result; returns it with the library's bytes for the cache entry.
fn build(store: &Store, src: &str, key: Key) -> Result<(NativeKernel, Option<Vec<u8>>), String> {
    let err = |e: std::io::Error| format!("cannot write to {}: {e}", store.dir().display());
    let tmp = store.temp_path(key, "so").map_err(err)?;
    let tmp_src = store.temp_path(key, "c").map_err(err)?;
    let r = (|| {
        std::fs::write(&tmp_src, src)
            .map_err(|e| format!("cannot write {}: {e}", tmp_src.display()))?;
        let out = std::process::Command::new(compiler())
            .args(FLAGS)
            .arg("-o")
            .arg(&tmp)
            .arg(&tmp_src)
            .arg("-lm")
            .output()
            .map_err(|e| format!("cannot run the C compiler `{}`: {e}", compiler()))?;
        if !out.status.success() {
            return Err(format!(
                "the C compiler failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        COMPILED.fetch_add(1, Ordering::Relaxed);
        // Loaded from the temporary file (the mapping outlives its removal); the cache entry is
        // a copy with the record appended.
        let bytes = std::fs::read(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        Ok((load(&tmp)?, Some(bytes)))
    })();
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_file(&tmp_src);
    r
}

fn load(path: &Path) -> Result<NativeKernel, String> {
    // SAFETY: the library is one this module compiled from generated C; loading runs no
    // initialisers of its own, and the symbol has the signature `render` emits.
    unsafe {
        // Symbols (libm's) bound now, in the load the profiler counts as compile time, not lazily
        // in the kernel's first launch.
        #[cfg(unix)]
        let lib: libloading::Library = libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
        .map_err(|e| e.to_string())?
        .into();
        #[cfg(not(unix))]
        let lib = libloading::Library::new(path).map_err(|e| e.to_string())?;
        let f: KernelFn = *lib
            .get::<KernelFn>(b"af_kernel\0")
            .map_err(|e| e.to_string())?;
        Ok(NativeKernel { _lib: lib, f })
    }
}

/// The native version of `k`, if the policy wants one and it is ready (starting its compilation
/// if needed). `Err` only in `Require` mode, when the kernel cannot be compiled.
/// `whole`: `k` runs over its domain in domain order ([`run`]), not in row order ([`run_rows`]),
/// so a [`c::segmented`] kernel's C code finishes its reductions itself.
pub fn lookup(
    kernel: &Arc<Kernel>,
    k: &FusedKernel,
    whole: bool,
) -> Result<Option<Arc<NativeKernel>>, Error> {
    let id = Arc::as_ptr(kernel) as *const () as usize;
    let hot = {
        let mut memo = memo().lock();
        let same = |e: &Memo| std::ptr::eq(e.kernel.as_ptr(), Arc::as_ptr(kernel));
        match memo.get_mut(&id) {
            Some(e) if same(e) => {
                if let Some(nk) = &e.native {
                    MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(nk.clone()));
                }
                e.launches += 1;
                e.launches >= HOT_LAUNCHES
            }
            _ => {
                if memo.len() >= MEMO_PRUNE {
                    memo.retain(|_, e| e.kernel.strong_count() > 0);
                }
                memo.insert(
                    id,
                    Memo {
                        kernel: Arc::downgrade(kernel),
                        launches: 1,
                        native: None,
                    },
                );
                false
            }
        }
    };
    // One reading of the mode for the whole lookup: another thread may change it meanwhile.
    let mode = mode();
    let r = lookup_inner(k, mode, hot, whole);
    if let Some(nk) = &r
        && let Some(e) = memo().lock().get_mut(&id)
    {
        e.native = Some(nk.clone());
    }
    if mode == NativeMode::Require && r.is_none() && !super::fault::any_fault() {
        return Err(Error::new(ErrorKind::Runtime, "ARRAYFLOW_NATIVE=require, but this kernel could not be compiled to native code")
            .hint("install a C compiler (`cc`), or see the arrayflow::native warning in the log for the compiler's message"));
    }
    Ok(r)
}

/// Launches after which `auto` compiles a kernel smaller than `ARRAYFLOW_NATIVE_MIN` too: a
/// loop of small steps runs the same few kernels thousands of times.
const HOT_LAUNCHES: u32 = 8;

/// Entries of the launch memo before dropped kernels are pruned from it.
const MEMO_PRUNE: usize = 4096;

/// What the native tier knows of one generated kernel (the trace cache hands the same kernel to
/// every repetition): its launches, and its native code once loaded, so a hot kernel is found
/// without rendering its C source again.
struct Memo {
    kernel: std::sync::Weak<Kernel>,
    launches: u32,
    native: Option<Arc<NativeKernel>>,
}

fn memo() -> &'static Mutex<AHashMap<usize, Memo>> {
    static M: OnceLock<Mutex<AHashMap<usize, Memo>>> = OnceLock::new();
    M.get_or_init(|| Mutex::new(AHashMap::new()))
}

/// Signalled whenever a compilation finishes (its state leaves `Compiling`).
fn compiled() -> &'static Condvar {
    static C: Condvar = Condvar::new();
    &C
}

fn lookup_inner(
    k: &FusedKernel,
    mode: NativeMode,
    hot: bool,
    whole: bool,
) -> Option<Arc<NativeKernel>> {
    if super::fault::any_fault() {
        return None;
    }
    if mode == NativeMode::Off
        || (mode == NativeMode::Auto && k.domain.len() < min_elements() && !hot)
    {
        return None;
    }
    let start = std::time::Instant::now();
    let body = c::render(k, whole);
    let key = Key::of(&[&toolchain_key().0.to_le_bytes(), body.as_bytes()]);
    {
        let mut cache = cache().loaded();
        LOOKUP_NS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        // `always` / `require` want this launch native: while another thread compiles the same
        // kernel (tests or threads tracing one program), wait for its result rather than
        // reporting the kernel unavailable.
        while matches!(mode, NativeMode::Always | NativeMode::Require)
            && matches!(cache.get(&key), Some(State::Compiling))
        {
            compiled().wait(&mut cache);
        }
        match cache.get(&key) {
            Some(State::Ready(nk)) => {
                MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
                return Some(nk.clone());
            }
            Some(State::Compiling) | Some(State::Failed) => return None,
            None => {
                cache.insert(key, State::Compiling);
            }
        }
    }
    let finish = move |r: Result<NativeKernel, String>| -> Option<Arc<NativeKernel>> {
        let state = match r {
            Ok(nk) => State::Ready(Arc::new(nk)),
            Err(e) => {
                tracing::warn!(target: "arrayflow::native", "native kernel unavailable, using the tile VM: {e}");
                State::Failed
            }
        };
        let ready = match &state {
            State::Ready(nk) => Some(nk.clone()),
            _ => None,
        };
        cache().insert(key, state);
        compiled().notify_all();
        ready
    };
    let src = format!("{}\n{body}", c::HEADER);
    if matches!(mode, NativeMode::Always | NativeMode::Require) {
        finish(compile(&src, key))
    } else {
        std::thread::spawn(move || finish(compile(&src, key)));
        None
    }
}

/// Forgets every kernel loaded in this process, so the next launch looks in the disk cache again
/// (for tests of the disk cache).
#[doc(hidden)]
pub fn forget_loaded() {
    cache().forget_loaded();
    memo().lock().clear();
}

/// Raw pointers handed to the C kernel; each task writes disjoint ranges.
struct Ptrs(Vec<*const c_void>, Vec<*mut c_void>);
// SAFETY: the buffers outlive the parallel loop; tasks write disjoint element ranges.
unsafe impl Send for Ptrs {}
unsafe impl Sync for Ptrs {}

/// Domains up to this many elements run on the executor thread alone: waking the rayon workers
/// costs more than it saves.
const INLINE_MAX: usize = 1 << 16;

/// Elements per call of the C kernel (and per rayon task).
const CHUNK: usize = 1 << 14;
// A segmented kernel's calls cover whole segments that the tile VM reduces whole
// (`c::SEGMENT_MAX` divides the grouping block, which divides a call).
const _: () =
    assert!(CHUNK.is_multiple_of(reduce::BLOCK) && reduce::BLOCK.is_multiple_of(c::SEGMENT_MAX));

/// Runs `k` natively over its whole domain; same contract as `vm::run_fused`.
pub fn run(
    nk: &NativeKernel,
    k: &FusedKernel,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
    params: &[u64],
) -> Result<(), Error> {
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let len = k.domain.len();
    let ptr_of = |v: &TypedVec| -> *const c_void {
        match v {
            TypedVec::F32(v) => v.as_ptr() as _,
            TypedVec::F64(v) => v.as_ptr() as _,
            TypedVec::I32(v) => v.as_ptr() as _,
            TypedVec::U32(v) => v.as_ptr() as _,
            TypedVec::Bool(v) => v.as_ptr() as _,
            TypedVec::C64(v) => v.as_ptr() as _,
            TypedVec::C128(v) => v.as_ptr() as _,
        }
    };
    let ins: Vec<*const c_void> = inputs.iter().map(|v| ptr_of(v)).collect();
    let outs: Vec<*mut c_void> = outputs
        .iter_mut()
        .zip(external)
        .map(|(v, e)| match e {
            Some(OutPtr::F32(p)) => *p as *mut c_void,
            Some(OutPtr::F64(p)) => *p as *mut c_void,
            Some(OutPtr::I32(p)) => *p as *mut c_void,
            Some(OutPtr::U32(p)) => *p as *mut c_void,
            Some(OutPtr::Bool(p)) => *p as *mut c_void,
            Some(OutPtr::C64(p)) => *p as *mut c_void,
            Some(OutPtr::C128(p)) => *p as *mut c_void,
            None => ptr_of(v) as *mut c_void,
        })
        .collect();
    let ptrs = &Ptrs(ins, outs);
    let tasks = len.div_ceil(CHUNK);
    let red_types: Vec<_> = k
        .reductions
        .iter()
        .map(|r| k.reg_dtypes[r.reg as usize])
        .collect();
    let red_outs: Vec<OutPtr> = k
        .reductions
        .iter()
        .map(|r| {
            OutPtr::from_raw(
                k.outputs[r.output as usize],
                ptrs.1[r.output as usize] as *mut u8,
            )
        })
        .collect();
    // The C code finishes the reductions of a segmented kernel: no partials are left.
    let segmented = c::segmented(k);
    let run = |scratch: &mut Vec<TypedVec>, t: usize| -> Result<super::vm::TaskPartials, Fault> {
        let t0 = t * CHUNK;
        let n = CHUNK.min(len - t0);
        let reds: Vec<*mut c_void> = scratch
            .iter_mut()
            .map(|v| ptr_of(v) as *mut c_void)
            .collect();
        // SAFETY: `af_kernel` reads inputs and writes outputs at domain indices t0..t0+n (all in
        // bounds by construction of the kernel), and writes n elements of each scratch tile.
        let code = unsafe {
            (nk.f)(
                ptrs.0.as_ptr(),
                ptrs.1.as_ptr(),
                reds.as_ptr(),
                params.as_ptr(),
                t0 as u64,
                n as u64,
            )
        };
        if code != 0 {
            return Err(Fault {
                instr: code as usize - 1,
                message: "integer division by zero",
            });
        }
        if segmented {
            return Ok(vec![Vec::new(); k.reductions.len()]);
        }
        Ok(k.reductions
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                reduce::partials(
                    r.op,
                    Src::of(&scratch[ri], 0, n),
                    t0,
                    k.domain.inner,
                    red_outs[ri],
                )
            })
            .collect())
    };
    let new_scratch = || {
        red_types
            .iter()
            .map(|&d| TypedVec::zeros(d, CHUNK))
            .collect::<Vec<_>>()
    };
    let results: Result<Vec<_>, Fault> = if len <= INLINE_MAX {
        let mut s = new_scratch();
        (0..tasks).map(|t| run(&mut s, t)).collect()
    } else {
        (0..tasks)
            .into_par_iter()
            .map_init(new_scratch, run)
            .collect()
    };
    super::vm::finish(k, results, outputs)
}

/// Elements per call of a row-order kernel: its values stay in L1 until accumulated.
const ROW_CHUNK: usize = 1 << 12;

/// Runs a permuted-reduction kernel natively in its input's row order (`nk` compiled from
/// `g.kernel`); same contract as [`run`] for the original kernel.
pub fn run_rows(
    nk: &NativeKernel,
    g: &super::rows::RowPlan,
    inputs: &[&TypedVec],
    outputs: &mut [TypedVec],
    external: &[Option<OutPtr>],
    params: &[u64],
) -> Result<(), Error> {
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let k = &g.kernel;
    let ins: Vec<*const c_void> = inputs.iter().map(|v| ptr_of(v)).collect();
    let outs: Vec<OutPtr> = outputs
        .iter_mut()
        .zip(external)
        .map(|(v, e)| e.unwrap_or_else(|| OutPtr::of(v)))
        .collect();
    // The kernel stores nothing element-wise: its outputs are reached only through `outs`.
    let ptrs = &Ptrs(ins, Vec::new());
    let red_types: Vec<_> = k
        .reductions
        .iter()
        .map(|r| k.reg_dtypes[r.reg as usize])
        .collect();
    // When every reduction reads an input contiguously and there is nothing else to compute,
    // the values are read where they are (the compiled kernel would only copy them).
    let direct: Option<Vec<u32>> = if g.reads_in_place() {
        k.reductions
            .iter()
            .map(|r| match k.instrs.iter().rev().find(|i| i.dst() == r.reg) {
                Some(crate::proggen::kernel::Instr::Load { input, .. }) => Some(*input),
                _ => None,
            })
            .collect()
    } else {
        None
    };
    let results = super::rows::drive(
        g,
        ROW_CHUNK,
        || {
            red_types
                .iter()
                .map(|&d| TypedVec::zeros(d, ROW_CHUNK))
                .collect::<Vec<_>>()
        },
        |scratch, t0, n, sink| {
            if let Some(direct) = &direct {
                // Nothing to compute: the reductions read their inputs in place.
                for (ri, &input) in direct.iter().enumerate() {
                    sink(ri, Src::of(inputs[input as usize], t0, n));
                }
                return Ok(());
            }
            let reds: Vec<*mut c_void> = scratch
                .iter_mut()
                .map(|v| ptr_of(v) as *mut c_void)
                .collect();
            // SAFETY: `af_kernel` reads inputs at domain indices t0..t0+n (in bounds by
            // construction of the kernel) and writes n elements of each scratch tile.
            let code = unsafe {
                (nk.f)(
                    ptrs.0.as_ptr(),
                    ptrs.1.as_ptr(),
                    reds.as_ptr(),
                    params.as_ptr(),
                    t0 as u64,
                    n as u64,
                )
            };
            if code != 0 {
                return Err(Fault {
                    instr: code as usize - 1,
                    message: "integer division by zero",
                });
            }
            for (ri, v) in scratch.iter().enumerate() {
                sink(ri, Src::of(v, 0, n));
            }
            Ok(())
        },
    );
    super::vm::finish_rows(k, results, &outs)
}

fn ptr_of(v: &TypedVec) -> *const c_void {
    match v {
        TypedVec::F32(v) => v.as_ptr() as _,
        TypedVec::F64(v) => v.as_ptr() as _,
        TypedVec::I32(v) => v.as_ptr() as _,
        TypedVec::U32(v) => v.as_ptr() as _,
        TypedVec::Bool(v) => v.as_ptr() as _,
        TypedVec::C64(v) => v.as_ptr() as _,
        TypedVec::C128(v) => v.as_ptr() as _,
    }
}
