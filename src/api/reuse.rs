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
    #[track_caller]
    pub fn reuse<T: Element>(
        inputs: &[&Array<T>],
        controls: &[u64],
        f: impl FnOnce(&[Array<T>]) -> Vec<Array<T>>,
    ) -> Result<Vec<Array<T>>> {
        Self::reuse_named("", inputs, controls, f)
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
        let site = std::panic::Location::caller();
        let handles: Vec<Handle> = inputs.iter().map(|a| a.h.clone()).collect();
        let mut f = Some(f);
        let mut call = |hs: &[Handle]| -> Vec<Handle> {
            let arrays: Vec<Array<T>> = hs.iter().map(|h| Array::wrap(h.clone())).collect();
            let f = f
                .take()
                .expect("a section's closure runs at most once per call");
            f(&arrays).into_iter().map(|a| a.h).collect()
        };
        let out = Inner::get().reuse(site, name, &handles, controls, &mut call)?;
        Ok(out.into_iter().map(Array::wrap).collect())
    }

    /// Code reuse sections the macro cache holds now.
    pub fn macro_cache_len() -> usize {
        Inner::get().fe.lock().macros.len()
    }
    /// Empties the macro cache.
    pub fn clear_macro_cache() {
        Inner::get().fe.lock().macros.clear();
    }
}
