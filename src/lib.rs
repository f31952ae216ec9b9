//! arrayflow: array code that runs in parallel on every CPU core or on a GPU, without writing a
//! kernel.
//!
//! Operations on [`Array`] values are recorded, not run. When a result is needed (a read such as
//! [`Array::to_vec`] or [`Array::item`]), the recorded operations are fused into as few kernels as
//! possible: intermediates you no longer hold live in registers and get no buffer. A scheduler
//! thread runs the kernels on an executor: the CPU (native code compiled with the system C
//! compiler for large kernels, a tile VM otherwise), or a GPU through OpenCL or wgpu (Vulkan)
//! when one is present. Reads are the only calls that wait, and the only ones that return a
//! [`Result`] for what happened while computing.
//!
//! ```
//! use arrayflow::{Array, Rng};
//!
//! let a = Array::from_vec(vec![1.0f32, 4.0, 9.0, 16.0], &[2, 2]);
//! let b = (&a * 2.0 + 1.0).sqrt(); // recorded, not run
//! assert_eq!(b.shape(), &[2, 2]);
//! let v = b.to_vec()?; // fused into one kernel, run, and read
//! let oracle: Vec<f32> = [1.0f64, 4.0, 9.0, 16.0]
//!     .iter()
//!     .map(|x| (x * 2.0 + 1.0).sqrt() as f32)
//!     .collect();
//! assert_eq!(v, oracle);
//!
//! // Reductions give 0-D arrays; `item` reads the one value.
//! let mean = b.mean_axis(1).sum().item()? / 2.0;
//! assert!((mean - oracle.iter().sum::<f32>() / 4.0).abs() < 1e-5);
//!
//! // Random numbers (Philox4x32-10), reproducible by seed on every executor.
//! let u = Rng::new(7).uniform::<f64>(&[10_000]);
//! let m = u.mean().item()?;
//! assert!((m - 0.5).abs() < 0.02);
//! # Ok::<(), arrayflow::Error>(())
//! ```
//!
//! Where to read on:
//!
//! - [`Array`]: construction, reads, element-wise arithmetic and math, reductions, views and
//!   slicing ([`Slice`]), [`Array::matmul`]; [`select`], [`min`], [`max`]; [`allclose`].
//! - [`Rng`]: random numbers.
//! - [`Runtime`]: configuration ([`Runtime::builder`]), execution control
//!   ([`Runtime::execute`], [`Runtime::block`]), code reuse sections ([`Runtime::reuse`],
//!   [`Runtime::reuse_with`]), comparison mode ([`Runtime::set_compare`]), error handlers and
//!   statistics ([`Runtime::stats`]).
//! - [`Error`]: every error names your `file:line`; the `try_` forms return [`Result`].
//! - `README.md`: the user's guide (what gets stored, reuse sections, comparison mode, the API by
//!   task, every environment variable, running the tests on each backend). `ARCHITECTURE.md`:
//!   how the pipeline is built. `BENCHMARKS.md`: performance and how it was measured.
//!
//! The modules below the crate root that the documentation does not show (`compile`, `exec`,
//! `proggen`, ...) are the runtime's internals. They are public only for the crate's own tests
//! and benchmarks and may change at any time.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod counters;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod ir;
#[doc(hidden)]
#[path = "../primitives/mod.rs"]
pub mod primitives;
#[doc(hidden)]
pub mod settings;

#[doc(hidden)]
pub mod api;
#[doc(hidden)]
pub mod compile;
#[doc(hidden)]
pub mod debug;
#[doc(hidden)]
pub mod exec;
#[doc(hidden)]
pub mod frontend;
#[doc(hidden)]
#[path = "../intrinsics/mod.rs"]
pub mod intrinsics;
pub mod kernels;
pub mod profile;
#[doc(hidden)]
pub mod proggen;
#[doc(hidden)]
pub mod runtime;

#[doc(inline)]
pub use api::*;
pub use compile::FlushReason;
pub use error::{Error, ErrorKind, Result};
pub use ir::Site;
pub use profile::ProfileGuard;
pub use runtime::Config;
pub use runtime::stats::DeviceStats;

/// The code snippets of `README.md`, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
