//! The debugger's stepping API (issue 24, seed 000): keep fused kernels as they run
//! ([`Runtime::set_stepping`]), re-run the kernel that computed an array one IR node at a time
//! ([`Runtime::step_kernel`]), and narrow comparison mode's mismatches to the first diverging op
//! ([`Runtime::divergences`]).

use super::array::{Array, site};
use super::element::Element;
use super::runtime::Runtime;
use crate::debug::step::{Divergence, StepRecord, StepScope};
use crate::error::Result;
use crate::runtime::Inner;

impl Runtime {
    /// Keeps the last `kernels` fused kernels of later flushes and replayed code reuse sections
    /// for stepping (0: off, the default). A kept kernel holds its input buffers (they are freed
    /// when it is dropped from the kept ones, or when stepping is switched off), its parameter
    /// values and its flush's IR nodes (with their reference values in comparison mode).
    ///
    /// Comparison mode keeps kernels of its own to narrow mismatches
    /// ([`crate::debug::CompareConfig::narrow`]); the larger of the two counts is kept.
    pub fn set_stepping(kernels: usize) {
        Inner::get().keep_kernels(|c| c.set_keep(kernels));
    }

    /// Re-runs the fused kernel that computed `array` (computing it first if it is pending) as one
    /// micro-kernel per IR node, on the executor that ran it, and returns each step's values at
    /// `scope`: loads of the kernel's inputs, then each operation in the kernel's order, then its
    /// reductions. The kernel must have been kept ([`Runtime::set_stepping`] before the flush
    /// or the replay that computed it; a replayed kernel's steps name the section's recorded ops
    /// and call sites, and have no reference values). An array an intrinsic computed (`matmul`,
    /// `sort`, a scan, an FFT, ...) is one step, the intrinsic's own: its result as the executor
    /// computed it at the scope's elements of the array, with the reference in comparison mode.
    ///
    /// ```
    /// use arrayflow::{Array, Runtime, StepScope};
    /// Runtime::set_stepping(4);
    /// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]);
    /// let y = (&x * 2.0f32).exp();
    /// let steps = Runtime::step_kernel(&y, StepScope::Element(1))?;
    /// let last = steps.last().unwrap();
    /// assert_eq!(last.op, "exp");
    /// assert_eq!((last.shape.clone(), last.at.clone()), (vec![3], vec![1]));
    /// assert!((last.values[0] - 4f64.exp()).abs() < 1e-5 * 4f64.exp());
    /// Runtime::set_stepping(0);
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn step_kernel<T: Element>(array: &Array<T>, scope: StepScope) -> Result<Vec<StepRecord>> {
        let site = site();
        let inner = Inner::get();
        inner.step_records(array.h.id, site, &scope)
    }

    /// The first diverging op of each mismatch comparison mode found so far whose result came
    /// from a kept kernel ([`Runtime::set_stepping`]): a fused kernel is stepped on the executor
    /// that ran it and each IR node's value is compared with its reference; an intrinsic's launch
    /// (`matmul`, `sort`, ...) is one step, whose inputs are compared first. An input that already
    /// differed is traced to the kept kernel that computed it. Runs what is queued and waits for
    /// pending checks first.
    pub fn divergences() -> Result<Vec<Divergence>> {
        let inner = Inner::get();
        let mismatches = Runtime::mismatches();
        inner.divergences(&mismatches)
    }
}
