//! Code generation: renders a scheduled fused kernel as source for a compiled target. `c` emits C
//! for the CPU's native tier, calling the primitive library's C sources (`primitives/c/`); the
//! GPU targets render the same kernels the same way.

pub mod c;
