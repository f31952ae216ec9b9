//! User kernels from a spec (seed 002): an OpenCL C kernel described by a JSON file (name, source,
//! work dimension, global and local sizes over `dataset`, buffers with kind, type, size, position
//! and whether they split, scalar arguments, `partition`), run on arrayflow arrays.
//!
//! ```json
//! { "name": "VectorAdd", "src": "vector_add.cl", "workDimension": 1,
//!   "globalWorkSize": "dataset", "localWorkSize": 8, "partition": 3,
//!   "buffers": [
//!     { "kind": "input",  "type": "f32", "size": "dataset", "pos": 0, "split": true },
//!     { "kind": "input",  "type": "f32", "size": "dataset", "pos": 1, "split": true },
//!     { "kind": "output", "type": "f32", "size": "dataset", "pos": 2, "split": true } ],
//!   "scalars": [ { "type": "i32", "pos": 3, "value": "dataset" } ] }
//! ```
//!
//! PySchedCL's own form (`inputBuffers`/`outputBuffers`/`ioBuffers` with `break`,
//! `varArguments`, `"type": "float"`) is read too. A launch is split along dimension 0 at a
//! work-group-aligned point into a first part of `partition / 10` of the work items (the CPU's
//! share in 002) and the rest, each part launched with its global offset; a splittable buffer
//! moves only the part's rows (its `size / global[0]` elements per work item of dimension 0),
//! the others whole; inputs are never copied back, outputs never uploaded
//! ([`KernelSpec::access`], in the terms of `proggen::access`). Bytes moved per part are in
//! [`KernelRun::parts`].
//!
//! Today the kernel runs in a private OpenCL context on the first OpenCL device (PoCL on a
//! machine without a GPU driver), both parts one after the other, from host copies of the input
//! arrays; its outputs are new arrays that fuse into later operations like any other. Without an
//! OpenCL device a launch is an error saying so.

mod cl;
pub mod expr;
mod launch;
pub mod spec;

use crate::api::DynArray;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Site;
use crate::proggen::access::{self, Arg, ArgAccess, Span, Transfer};
use expr::Expr;
use spec::{BufferKind, BufferSpec, ScalarSpec};
use std::ops::Range;
use std::panic::Location;
use std::path::{Path, PathBuf};

/// A parsed, checked kernel spec with its OpenCL C source.
#[derive(Debug, Clone)]
pub struct KernelSpec {
    /// The kernel function's name.
    pub name: String,
    /// The source file, as resolved.
    pub src: PathBuf,
    /// The OpenCL C source.
    pub source: String,
    /// 1, 2 or 3.
    pub work_dim: usize,
    /// Global work size per dimension, over `dataset`.
    pub global: Vec<Expr>,
    /// Local work size per dimension (the driver's choice when absent).
    pub local: Option<Vec<Expr>>,
    /// Buffer arguments, in the order the spec lists them.
    pub buffers: Vec<BufferSpec>,
    /// Scalar arguments.
    pub scalars: Vec<ScalarSpec>,
    /// The first part's share of dimension 0, in tenths (002's CPU share).
    pub partition: u32,
    /// Where the spec came from (a file, or `JSON text`), for errors.
    origin: String,
}

/// One part of a launch: its work items of dimension 0 and the bytes it moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartStats {
    /// Work items of dimension 0 (the global offset is `items.start`).
    pub items: Range<usize>,
    /// Bytes it uploaded and read back (counted from the transfers made).
    pub moved: Transfer,
}

/// The result of [`KernelSpec::launch`].
#[derive(Debug, Clone)]
pub struct KernelRun {
    /// The output and io buffers as arrays, in position order.
    pub outputs: Vec<DynArray>,
    /// The parts that ran (empty ones are left out), in order.
    pub parts: Vec<PartStats>,
    /// The OpenCL device that ran them.
    pub device: String,
}

fn spec_error(origin: &str, msg: String, site: Site) -> Error {
    Error::new(ErrorKind::Argument, format!("kernel spec {origin}: {msg}")).at(site)
}

impl KernelSpec {
    /// Parses the JSON text of a spec; its `src` is relative to the current directory. Bad specs
    /// are errors naming the field and your line.
    #[track_caller]
    pub fn from_json(text: &str) -> Result<KernelSpec> {
        Self::parse(
            text,
            Path::new("."),
            "(JSON text)".into(),
            Location::caller(),
        )
    }

    /// Reads and parses a spec file; its `src` is relative to the spec's folder.
    #[track_caller]
    pub fn from_file(path: impl AsRef<Path>) -> Result<KernelSpec> {
        let site = Location::caller();
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| spec_error(&origin, format!("cannot read it: {e}"), site))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir, origin, site)
    }

    fn parse(text: &str, dir: &Path, origin: String, site: Site) -> Result<KernelSpec> {
        let mut spec = spec::parse(text).map_err(|m| spec_error(&origin, m, site))?;
        spec.source =
            spec::read_source(dir, &spec.src).map_err(|m| spec_error(&origin, m, site))?;
        spec.src = dir.join(&spec.src);
        spec.origin = origin;
        Ok(spec)
    }

    /// The spec with another `partition` (0 to 10).
    pub fn with_partition(mut self, partition: u32) -> KernelSpec {
        self.partition = partition.min(10);
        self
    }

    fn eval(&self, e: &Expr, field: &str, dataset: usize, site: Site) -> Result<usize> {
        match e.eval(dataset as i64) {
            Ok(v) if v >= 0 => Ok(v as usize),
            Ok(v) => Err(self.err(
                format!("{field}: {v} is negative for dataset {dataset}"),
                site,
            )),
            Err(m) => Err(self.err(format!("{field}: {m} for dataset {dataset}"), site)),
        }
    }

    fn err(&self, msg: String, site: Site) -> Error {
        spec_error(&self.origin, msg, site)
    }

    /// Global sizes, local sizes (if given) and buffer lengths for `dataset`, checked.
    fn sizes(&self, dataset: usize, site: Site) -> Result<Sizes> {
        let mut global = [1usize; 3];
        for (d, e) in self.global.iter().enumerate() {
            global[d] = self.eval(e, &format!("globalWorkSize[{d}]"), dataset, site)?;
        }
        let local = match &self.local {
            None => None,
            Some(l) => {
                let mut local = [1usize; 3];
                for (d, e) in l.iter().enumerate() {
                    let f = format!("localWorkSize[{d}]");
                    local[d] = self.eval(e, &f, dataset, site)?;
                    if local[d] == 0 || global[d] % local[d] != 0 {
                        return Err(self.err(
                            format!(
                                "{f}: {} does not divide the global size {}",
                                local[d], global[d]
                            ),
                            site,
                        ));
                    }
                }
                Some(local)
            }
        };
        let mut lens = Vec::new();
        for b in &self.buffers {
            let len = self.eval(&b.size, &format!("{}.size", b.field), dataset, site)?;
            if b.split && global[0] > 0 && len % global[0] != 0 {
                return Err(self.err(
                    format!(
                        "{}.split: its {len} elements do not split into the {} work items of \
                         dimension 0",
                        b.field, global[0]
                    ),
                    site,
                ));
            }
            lens.push(len);
        }
        Ok(Sizes {
            global,
            local,
            lens,
        })
    }

    /// The parts a launch over `dataset` runs: dimension 0 split at a work-group-aligned point
    /// by `partition`, empty parts left out.
    #[track_caller]
    pub fn parts(&self, dataset: usize) -> Result<Vec<Range<usize>>> {
        let s = self.sizes(dataset, Location::caller())?;
        Ok(self.parts_of(&s))
    }

    fn parts_of(&self, s: &Sizes) -> Vec<Range<usize>> {
        let align = s.local.map_or(1, |l| l[0]);
        access::split_by_ratio(s.global[0], align, self.partition)
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect()
    }

    /// What `part` (work items of dimension 0) reads and writes of each buffer, in the order of
    /// [`KernelSpec::buffers`]: a splittable buffer its rows (`size / global[0]` elements per work
    /// item), the others whole; inputs are only read, outputs only written.
    #[track_caller]
    pub fn access(&self, dataset: usize, part: Range<usize>) -> Result<Vec<ArgAccess>> {
        let s = self.sizes(dataset, Location::caller())?;
        Ok(self.access_of(&s, part))
    }

    fn access_of(&self, s: &Sizes, part: Range<usize>) -> Vec<ArgAccess> {
        self.buffers
            .iter()
            .zip(&s.lens)
            .enumerate()
            .map(|(i, (b, &len))| {
                let span = if part.is_empty() {
                    Span::Empty
                } else if b.split && s.global[0] > 0 {
                    let row = len / s.global[0];
                    Span::interval(part.start * row..part.end * row).within(len)
                } else {
                    Span::Whole
                };
                let (reads, writes) = match b.kind {
                    BufferKind::Input => (span, Span::Empty),
                    BufferKind::Output => (Span::Empty, span),
                    BufferKind::InOut => (span.clone(), span),
                };
                ArgAccess {
                    arg: if b.kind == BufferKind::Input {
                        Arg::Input(i)
                    } else {
                        Arg::Output(i)
                    },
                    dtype: b.dtype,
                    reads,
                    writes,
                }
            })
            .collect()
    }
}

/// Sizes of one launch.
struct Sizes {
    global: [usize; 3],
    local: Option<[usize; 3]>,
    lens: Vec<usize>,
}
