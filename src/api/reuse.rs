//! Code reuse sections: `Runtime::reuse` records a closure's array operations once and replays the
//! compiled program sequence on later calls with the same key (call site, optional name, inputs'
//! types, shapes and kinds, control values). See `frontend::section` for the rules.

use super::array::Array;
use super::element::Element;
use super::runtime::Runtime;
use crate::error::Result;
use crate::frontend::Handle;
use crate::runtime::Inner;

impl Runtime {
    /// Runs `f` as a code reuse section over `inputs`. The first call with a given key records: `f`
    /// runs and its operations are compiled and kept in the macro cache. Later calls with the same
    /// key replay that program without calling `f`. `controls` are values that change what `f`
    /// does (the branch of an `if`, a loop count): each distinct set records its own entry. Arrays
    /// `f` uses must be among `inputs` or computed inside it; reads and writes of data inside `f`
    /// are errors. Random generators `f` draws from advance on every replay exactly as if `f` ran.
    ///
    /// Scalars `f` captures are recorded as constants: a replay computes with the values of the
    /// first call. Pass scalars that change as parameters with [`Runtime::reuse_with`]. In debug
    /// builds the replay check re-records the second call and every 16th replay and reports a
    /// section whose recording changed (see [`Runtime::set_reuse_check`]).
    ///
    /// ```
    /// use arrayflow::{Array, Runtime};
    ///
    /// let a = Array::from_vec(vec![1.0f64, 4.0, 9.0], &[3]);
    /// let b = Array::<f64>::full(&[3], 2.0);
    /// let before = Runtime::stats();
    /// for step in 0..6u64 {
    ///     // `step % 2` picks the branch, so it is a control value: one entry per branch.
    ///     let out = Runtime::reuse(&[&a, &b], &[step % 2], |ins| {
    ///         let y = if step % 2 == 0 { &ins[0] * &ins[1] } else { &ins[0] + &ins[1] };
    ///         vec![y.sqrt()]
    ///     })?;
    ///     let oracle: Vec<f64> = [1.0f64, 4.0, 9.0]
    ///         .iter()
    ///         .map(|x| if step % 2 == 0 { x * 2.0 } else { x + 2.0 }.sqrt())
    ///         .collect();
    ///     assert_eq!(out[0].to_vec()?, oracle);
    /// }
    /// let macros = Runtime::stats().since(&before).macros;
    /// assert_eq!((macros.misses, macros.hits), (2, 4)); // two recordings, four replays
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn reuse<T: Element>(
        inputs: &[&Array<T>],
        controls: &[u64],
        f: impl FnOnce(&[Array<T>]) -> Vec<Array<T>>,
    ) -> Result<Vec<Array<T>>> {
        Self::reuse_named_with("", inputs, &[], controls, |ins, _| f(ins))
    }

    /// As [`Runtime::reuse`], with a name that is part of the key (for sections entered from one
    /// call site that should be cached apart).
    #[track_caller]
    pub fn reuse_named<T: Element>(
        name: &str,
        inputs: &[&Array<T>],
        controls: &[u64],
        f: impl FnOnce(&[Array<T>]) -> Vec<Array<T>>,
    ) -> Result<Vec<Array<T>>> {
        Self::reuse_named_with(name, inputs, &[], controls, |ins, _| f(ins))
    }

    /// As [`Runtime::reuse`], with scalar parameters: `f` gets `params` as 0-dimensional arrays
    /// (use them like any array: `&ins[0] * &ps[0]`). Their values are kernel parameters, not part
    /// of the recorded code, so a replay computes with the values passed to its own call:
    ///
    /// ```
    /// use arrayflow::{Array, Runtime};
    /// let x = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    /// for k in 0..3 {
    ///     let c = k as f32 * 10.0;
    ///     let out = Runtime::reuse_with(&[&x], &[c], &[], |ins, ps| vec![&ins[0] + &ps[0]])?;
    ///     assert_eq!(out[0].to_vec()?, vec![1.0 + c, 2.0 + c]);
    /// }
    /// # Ok::<(), arrayflow::Error>(())
    /// ```
    #[track_caller]
    pub fn reuse_with<T: Element>(
        inputs: &[&Array<T>],
        params: &[T],
        controls: &[u64],
        f: impl FnOnce(&[Array<T>], &[Array<T>]) -> Vec<Array<T>>,
    ) -> Result<Vec<Array<T>>> {
        Self::reuse_named_with("", inputs, params, controls, f)
    }

    /// As [`Runtime::reuse_with`], with a name that is part of the key.
    #[track_caller]
    pub fn reuse_named_with<T: Element>(
        name: &str,
        inputs: &[&Array<T>],
        params: &[T],
        controls: &[u64],
        f: impl FnOnce(&[Array<T>], &[Array<T>]) -> Vec<Array<T>>,
    ) -> Result<Vec<Array<T>>> {
        let site = std::panic::Location::caller();
        let handles: Vec<Handle> = inputs.iter().map(|a| a.h.clone()).collect();
        let values: Vec<crate::ir::Scalar> = params.iter().map(|p| p.scalar()).collect();
        let mut f = Some(f);
        let mut call = |hs: &[Handle], ps: &[Handle]| -> Vec<Handle> {
            let wrap = |hs: &[Handle]| -> Vec<Array<T>> {
                hs.iter().map(|h| Array::wrap(h.clone())).collect()
            };
            let f = f
                .take()
                .expect("a section's closure runs at most once per call");
            f(&wrap(hs), &wrap(ps)).into_iter().map(|a| a.h).collect()
        };
        let out = Inner::get().reuse(site, name, &handles, &values, controls, &mut call)?;
        Ok(out.into_iter().map(Array::wrap).collect())
    }

    /// Sets the code reuse replay check: a section's first replay (its second call) and then every
    /// `every`th replay record the section again, calling its closure, and compare the recording
    /// with the cached one (operations, shapes and the constants recorded). A difference means a
    /// value the closure captured changed, and a replay would silently have used the old one: the
    /// call returns an error naming its line. `0` turns the check off. The default is 16 in debug
    /// builds and off in release builds; `ARRAYFLOW_REUSE_CHECK` (`off`, `on` or a number) sets it
    /// at start-up.
    pub fn set_reuse_check(every: u32) {
        Inner::get()
            .reuse_check
            .store(every, std::sync::atomic::Ordering::Relaxed);
    }
    /// The replay check's period (0: off); see [`Runtime::set_reuse_check`].
    pub fn reuse_check() -> u32 {
        Inner::get()
            .reuse_check
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Code reuse sections the macro cache holds now.
    pub fn macro_cache_len() -> usize {
        Inner::get().front().macros.len()
    }
    /// Empties the macro cache.
    pub fn clear_macro_cache() {
        Inner::get().front().macros.clear();
    }
}
