//! The tile VM's view of test-only fault injection: the switch lives with the program generator
//! (`proggen::fault`), where the GPU renderers read it too.

pub use crate::proggen::fault::*;
