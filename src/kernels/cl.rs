//! The private OpenCL context user kernels run in: the first OpenCL device (PoCL where no GPU
//! driver is installed), opened on first use, with the programs it built kept by source and
//! options. One launch part at a time: fresh device buffers per part (as a part on another device
//! would have), only the part's reads uploaded and its writes read back.

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

/// The context, its queue and the programs built in it.
pub(crate) struct ClDevice {
    pub name: String,
    context: Context,
    queue: CommandQueue,
    programs: HashMap<(String, String), Program>,
}

// SAFETY: the queue is used only behind the `Mutex` below, one thread at a time; OpenCL objects
// may be used from any thread.
unsafe impl Send for ClDevice {}

static DEVICE: OnceLock<Result<Mutex<ClDevice>, String>> = OnceLock::new();

fn open() -> Result<Mutex<ClDevice>, String> {
    let ids = crate::exec::device::opencl_device_ids();
    let Some(&(ref platform, id)) = ids.first() else {
        return Err("no OpenCL device found".into());
    };
    let device = Device::new(id);
    let name = format!("{} ({platform})", device.name().unwrap_or_default().trim());
    let context = Context::from_device(&device).map_err(|e| format!("{name}: {e}"))?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0).map_err(|e| format!("{name}: {e}"))?;
    Ok(Mutex::new(ClDevice {
        name,
        context,
        queue,
        programs: HashMap::new(),
    }))
}

/// The private device, opened on first use, or why there is none.
pub(crate) fn device() -> Result<&'static Mutex<ClDevice>, String> {
    DEVICE.get_or_init(open).as_ref().map_err(Clone::clone)
}

/// A kernel argument of one part.
pub(crate) enum ClArg<'a> {
    /// A buffer of `bytes` bytes: `upload` (byte range, host bytes) written before the launch,
    /// the `download` byte range read back into `out` after it.
    Buffer {
        bytes: usize,
        upload: Option<(Range<usize>, &'a [u8])>,
        download: Option<(Range<usize>, &'a mut [u8])>,
    },
    /// A scalar's bytes.
    Scalar(Vec<u8>),
}

/// One launch of `name` from `source` over `global` work items from `offset`.
pub(crate) struct ClLaunch<'a> {
    pub source: &'a str,
    pub name: &'a str,
    pub offset: [usize; 3],
    pub global: [usize; 3],
    pub local: Option<[usize; 3]>,
    pub work_dim: usize,
}

impl ClDevice {
    fn kernel(&mut self, source: &str, name: &str) -> Result<Kernel, String> {
        let options = std::env::var("ARRAYFLOW_OPENCL_BUILD_OPTIONS").unwrap_or_default();
        let key = (source.to_string(), options.clone());
        if !self.programs.contains_key(&key) {
            let p = Program::create_and_build_from_source(&self.context, source, &options)
                .map_err(|e| format!("the OpenCL C does not build on {}: {e}", self.name))?;
            self.programs.insert(key.clone(), p);
        }
        Kernel::create(&self.programs[&key], name)
            .map_err(|e| format!("no kernel `{name}` in the source ({e})"))
    }

    /// Runs one part: uploads, the launch, downloads (all blocking).
    pub(crate) fn run(&mut self, l: &ClLaunch, args: &mut [ClArg]) -> Result<(), String> {
        let kernel = self.kernel(l.source, l.name)?;
        let e = |e: opencl3::error_codes::ClError| e.to_string();
        let mut bufs: Vec<Option<Buffer<u8>>> = Vec::new();
        for a in args.iter() {
            bufs.push(match a {
                ClArg::Buffer { bytes, upload, .. } => {
                    // SAFETY: a fresh buffer with no host pointer.
                    let mut b = unsafe {
                        Buffer::<u8>::create(
                            &self.context,
                            CL_MEM_READ_WRITE,
                            (*bytes).max(1),
                            std::ptr::null_mut(),
                        )
                    }
                    .map_err(e)?;
                    if let Some((r, data)) = upload
                        && r.start < r.end
                    {
                        // SAFETY: blocking write of `data` into the buffer's range.
                        unsafe {
                            self.queue
                                .enqueue_write_buffer(&mut b, CL_BLOCKING, r.start, data, &[])
                        }
                        .map_err(e)?;
                    }
                    Some(b)
                }
                ClArg::Scalar(_) => None,
            });
        }
        for (i, (a, b)) in args.iter().zip(&bufs).enumerate() {
            // SAFETY: arguments of the kernel's declared kinds (the spec's positions and types).
            unsafe {
                match (a, b) {
                    (_, Some(b)) => kernel.set_arg(i as u32, &b.get()),
                    (ClArg::Scalar(v), None) => opencl3::kernel::set_kernel_arg(
                        kernel.get(),
                        i as u32,
                        v.len(),
                        v.as_ptr().cast(),
                    )
                    .map_err(Into::into),
                    _ => unreachable!(),
                }
            }
            .map_err(|err| format!("argument {i}: {err}"))?;
        }
        let local = l.local.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
        // SAFETY: offsets and sizes of `work_dim` entries; arguments set above.
        unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.get(),
                l.work_dim as u32,
                l.offset.as_ptr(),
                l.global.as_ptr(),
                local,
                &[],
            )
        }
        .map_err(|err| format!("the launch failed: {err}"))?;
        for (a, b) in args.iter_mut().zip(&bufs) {
            if let (
                ClArg::Buffer {
                    download: Some((r, out)),
                    ..
                },
                Some(b),
            ) = (a, b)
                && r.start < r.end
            {
                // SAFETY: blocking read of the range into `out` (its length).
                unsafe {
                    self.queue
                        .enqueue_read_buffer(b, CL_BLOCKING, r.start, &mut out[..], &[])
                }
                .map_err(e)?;
            }
        }
        self.queue.finish().map_err(e)?;
        Ok(())
    }
}
