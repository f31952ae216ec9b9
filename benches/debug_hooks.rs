//! The debugger's cost when off (issue 24). A recording-heavy loop (`x = &x * c + d` on a small
//! array, 20 000 API calls per repetition, flushed at the queue threshold and read at the end) is
//! timed with no debugger attached and with one attached whose only breakpoint is never reached
//! (every hook then takes its slow path: the port table's lock, the session's lock and the
//! breakpoint match), in alternating repetitions of the same run. The hooks are compiled into
//! every build, so "off" cannot be compared with a build without them in one run; instead the
//! off path (one relaxed atomic load and a branch) is timed apart, inside the library, and set
//! against the measured time of one recorded call on the last line.
//!
//! Run with `cargo bench --bench debug_hooks`.

use arrayflow::{Array, Debugger, Runtime};
use std::hint::black_box;
use std::time::Instant;

const CALLS: usize = 20_000;

/// One repetition: seconds for `CALLS` recorded API calls (two per iteration) and the read.
fn record_loop() -> f64 {
    let t0 = Instant::now();
    let mut x = Array::from_vec1(vec![1.0f32; 16]);
    for _ in 0..CALLS / 2 {
        x = &x * 0.999f32 + 0.001f32;
    }
    black_box(x.to_vec().unwrap());
    t0.elapsed().as_secs_f64()
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn main() {
    println!("executor: {}", Runtime::executor());
    record_loop(); // warm: caches, threads
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        off.push(record_loop());
        let guard = Runtime::debug(Debugger::new().break_at("never_reached.rs", 1));
        on.push(record_loop());
        drop(guard);
    }
    let (off, on) = (best(&off), best(&on));
    let per_call = off / CALLS as f64 * 1e9;

    // The off path of one hook, alone (the library's own check, compiled as the library is).
    let hook_ns = arrayflow::debug::breakpoints::off_hook_ns(100_000_000);

    println!();
    println!("| run ({CALLS} recorded calls, best of 7) | time | calls/s | vs off |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| debugger off | {:.2} ms | {:.2} M | 1.00 |",
        off * 1e3,
        CALLS as f64 / off / 1e6
    );
    println!(
        "| attached, breakpoint never reached | {:.2} ms | {:.2} M | {:.2} |",
        on * 1e3,
        CALLS as f64 / on / 1e6,
        on / off
    );
    println!();
    println!(
        "off: one hook = {hook_ns:.2} ns (relaxed load + branch) per recorded call of {per_call:.0} ns: {:.2}% of it",
        hook_ns / per_call * 100.0
    );
}
