//! The debugger's console on a small program. Run it with a breakpoint at the line of `w`:
//!
//! ```text
//! ARRAYFLOW_DEBUG=console ARRAYFLOW_BREAK=debug_demo.rs:20 cargo run --example debug_demo
//! ```
//!
//! At the `(arrayflow)` prompt try `where`, `list`, `print v`, `print v [0:3]`, `set $[2] = 100`,
//! `step`, `break debug_demo.rs:25`, `info breakpoints`, `delete 2`, `continue` (`help` lists
//! every command). The same program is the debuggee of `tests/debug_console.rs`, which drives
//! the console under tmux.

use arrayflow::Array;

/// The program: `u`, `v = sqrt(2u + 1)`, `w = v * u`, and the sum of `w`, printed; then
/// `x = w - v`, `y = x * x` and the largest `y`, printed.
pub fn run() -> arrayflow::Result<f32> {
    let u = Array::from_vec1((1..=8).map(|i| i as f32 * 0.5).collect()).named("u");
    let v = (&u * 2.0f32 + 1.0f32).sqrt().named("v");
    // tests/debug_console.rs finds the breakpoint's line by `let w =`.
    let w = (&v * &u).named("w");
    let total = w.sum();
    let t = total.item()?;
    println!("total = {t}");
    // tests/debug_console.rs adds breakpoints at `let x =` and `let y =` with `break`.
    let x = (&w - &v).named("x");
    let y = (&x * &x).named("y");
    println!("max = {}", y.max().item()?);
    Ok(t)
}

#[allow(dead_code)]
fn main() -> arrayflow::Result<()> {
    run().map(|_| ())
}
