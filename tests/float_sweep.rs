//! The float-function sweep (issue 18): every float function of the public API, f32 and f64, on
//! the executor this process runs (CPU by default, `ARRAYFLOW_DEVICE=opencl|wgpu`), against a
//! more precise reference, within the 32 ulp the README promises ("Accuracy on GPU executors").
//!
//! References: for f32, the function computed in f64 (std / the platform libm, the `libm` crate
//! for erf, erfc and the inverse hyperbolics) and rounded to f32; for f64, the C library's
//! `long double` functions (x87 80-bit extended precision on x86-64), compiled at test time from
//! a small C file with the system `cc` (`cc -O2 -shared -fPIC ... -lm`), loaded with
//! `libloading` and rounded to f64 (`float_sweep/reference.rs`). Distances (`float_sweep/ulp.rs`):
//! NaN must match NaN and an infinity the same infinity; otherwise the count of floats between
//! result and reference. On device executors f32 elements with a subnormal input, result or
//! reference are not compared (GPUs may flush them to zero).
//!
//! Inputs (`float_sweep/points.rs`): log-spaced over the whole finite range of both signs,
//! uniform over each function's interesting intervals, special values with their neighbours.
//! `sweep_f32` and `sweep_f64` take about 2^18 points per function (`FLOAT_SWEEP_POINTS`
//! changes it) and fail with the table of every function over the limit (`--nocapture` prints
//! the whole table). `exhaustive_f32` walks all 2^32 f32 inputs of every unary function, for a
//! machine with a GPU: `FLOAT_SWEEP=exhaustive cargo test --release --test float_sweep --
//! --ignored --nocapture` (with `ARRAYFLOW_DEVICE=opencl` or `wgpu` to pick the executor).

mod float_sweep {
    pub mod points;
    pub mod reference;
    pub mod ulp;
}

use arrayflow::{Array, Backend, Runtime};
use float_sweep::ulp::{Bits, Stat, assert_within, table};
use float_sweep::{points, reference};
use rayon::prelude::*;

/// The README's promise for every float function on every executor.
const LIMIT: u64 = 32;

/// The unary float functions of the public API (`src/api/math.rs`).
const UNARY: &[&str] = &[
    "sqrt", "rsqrt", "cbrt", "exp", "exp2", "ln", "log10", "log2", "sin", "cos", "tan", "sec",
    "csc", "cot", "asin", "acos", "atan", "asec", "acsc", "acot", "sinh", "cosh", "tanh", "sech",
    "csch", "coth", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil", "trunc", "round",
];

/// The binary float functions of the public API.
const BINARY: &[&str] = &["pow", "atan2", "rem", "mod"];

/// `name` applied to `a` through the public API.
fn apply<T: Bits>(name: &str, a: &Array<T>) -> Array<T> {
    match name {
        "sqrt" => a.sqrt(),
        "rsqrt" => a.rsqrt(),
        "cbrt" => a.cbrt(),
        "exp" => a.exp(),
        "exp2" => a.exp2(),
        "ln" => a.ln(),
        "log10" => a.log10(),
        "log2" => a.log2(),
        "sin" => a.sin(),
        "cos" => a.cos(),
        "tan" => a.tan(),
        "sec" => a.sec(),
        "csc" => a.csc(),
        "cot" => a.cot(),
        "asin" => a.asin(),
        "acos" => a.acos(),
        "atan" => a.atan(),
        "asec" => a.asec(),
        "acsc" => a.acsc(),
        "acot" => a.acot(),
        "sinh" => a.sinh(),
        "cosh" => a.cosh(),
        "tanh" => a.tanh(),
        "sech" => a.sech(),
        "csch" => a.csch(),
        "coth" => a.coth(),
        "asinh" => a.asinh(),
        "acosh" => a.acosh(),
        "atanh" => a.atanh(),
        "erf" => a.erf(),
        "erfc" => a.erfc(),
        "floor" => a.floor(),
        "ceil" => a.ceil(),
        "trunc" => a.trunc(),
        "round" => a.round(),
        _ => panic!("unknown unary function {name}"),
    }
}

/// `name` applied to `a` and `b` through the public API.
fn apply2<T: Bits>(name: &str, a: &Array<T>, b: &Array<T>) -> Array<T> {
    match name {
        "pow" => a.pow(b),
        "atan2" => a.atan2(b),
        "rem" => a.rem(b),
        "mod" => a.modulo(b),
        _ => panic!("unknown binary function {name}"),
    }
}

/// The reference of unary `name` for each of `x`.
fn reference_unary<T: Bits>(name: &str, x: &[T]) -> Vec<T> {
    if T::SINGLE {
        x.par_iter()
            .map(|&v| T::of(reference::f64_unary(name, v.to())))
            .collect()
    } else {
        let xs: Vec<f64> = x.iter().map(|v| v.to()).collect();
        reference::long_double_unary(name, &xs)
            .into_iter()
            .map(T::of)
            .collect()
    }
}

/// The reference of binary `name` for each pair.
fn reference_binary<T: Bits>(name: &str, x: &[T], y: &[T]) -> Vec<T> {
    if T::SINGLE {
        x.par_iter()
            .zip(y)
            .map(|(&a, &b)| T::of(reference::f64_binary(name, a.to(), b.to())))
            .collect()
    } else {
        let (xs, ys): (Vec<f64>, Vec<f64>) = x.iter().zip(y).map(|(a, b)| (a.to(), b.to())).unzip();
        reference::long_double_binary(name, &xs, &ys)
            .into_iter()
            .map(T::of)
            .collect()
    }
}

/// Reads an array, panicking with the error if the read fails.
#[track_caller]
fn read<T: Bits>(a: &Array<T>) -> Vec<T> {
    a.to_vec()
        .unwrap_or_else(|e| panic!("reading {a:?} failed: {e}"))
}

/// Whether kernels of type `T` run on a device executor here (the wgpu executor sends f64 to the
/// CPU).
fn on_device<T: Bits>() -> bool {
    match Runtime::backend() {
        Backend::Cpu => false,
        Backend::Wgpu => T::SINGLE,
        _ => true,
    }
}

/// The executor's name for the table.
fn executor() -> String {
    let native = std::env::var("ARRAYFLOW_NATIVE").unwrap_or_else(|_| "auto".into());
    format!("{:?} (native tier {native})", Runtime::backend())
}

/// Points per function of the sampled sweep.
fn points_per_function() -> usize {
    std::env::var("FLOAT_SWEEP_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 18)
}

/// `v` made `len` long by repeating its values (so every function's inputs have one shape).
fn padded<T: Bits>(v: &[T], len: usize) -> Vec<T> {
    v.iter().copied().cycle().take(len).collect()
}

/// The sampled sweep of every function of type `T`: one stat per function. Every function is
/// recorded on inputs of one common length before anything is read, so a device executor
/// compiles a few fused kernels for the whole sweep rather than one per function (on PoCL and
/// lavapipe the compiles are most of the time); only each function's own points are compared.
fn sweep<T: Bits>() -> Vec<Stat> {
    let n = points_per_function();
    let dev = on_device::<T>();
    let unary: Vec<Vec<T>> = UNARY.iter().map(|&f| points::unary::<T>(f, n)).collect();
    let binary: Vec<(Vec<T>, Vec<T>)> = BINARY.iter().map(|&f| points::binary::<T>(f, n)).collect();
    let len = unary
        .iter()
        .map(Vec::len)
        .chain(binary.iter().map(|(x, _)| x.len()))
        .max()
        .unwrap_or(0);
    let array = |v: &[T]| Array::from_vec(padded(v, len), &[len]);
    let results: Vec<Array<T>> = UNARY
        .iter()
        .zip(&unary)
        .map(|(&f, x)| apply(f, &array(x)))
        .chain(
            BINARY
                .iter()
                .zip(&binary)
                .map(|(&f, (x, y))| apply2(f, &array(x), &array(y))),
        )
        .collect();
    let mut results = results.iter().map(read);
    let mut stats = Vec::new();
    for (&name, x) in UNARY.iter().zip(&unary) {
        let got = results.next().expect("one result per function");
        let want = reference_unary(name, x);
        let mut s = Stat::new(name, T::NAME);
        s.add(dev, &[x], &got[..x.len()], &want, LIMIT);
        stats.push(s);
    }
    for (&name, (x, y)) in BINARY.iter().zip(&binary) {
        let got = results.next().expect("one result per function");
        let want = reference_binary(name, x, y);
        let mut s = Stat::new(name, T::NAME);
        s.add(dev, &[x, y], &got[..x.len()], &want, LIMIT);
        stats.push(s);
    }
    stats
}

/// Runs the sampled sweep of `T`, prints its table and fails with the functions over the limit.
fn sweep_and_check<T: Bits>() {
    let t = std::time::Instant::now();
    let stats = sweep::<T>();
    let ex = executor();
    println!("{}({:.1} s)", table(&ex, &stats), t.elapsed().as_secs_f64());
    assert!(
        stats.iter().all(|s| s.n > 0),
        "every function compared some elements"
    );
    assert_within(&ex, &stats, LIMIT);
}

#[test]
fn sweep_f32() {
    sweep_and_check::<f32>();
}

#[test]
fn sweep_f64() {
    sweep_and_check::<f64>();
}

/// Every f32 input of every unary function (2^32 each, in arrays of 2^24) against the f64
/// reference computed with rayon. For a GPU machine; run with `FLOAT_SWEEP=exhaustive` (and
/// `FLOAT_SWEEP_FUNCS=sin,erfc` to pick functions, `FLOAT_SWEEP_CHUNKS=n` to walk only the first
/// n arrays of each).
#[test]
#[ignore = "hours on a CPU; FLOAT_SWEEP=exhaustive cargo test --release --test float_sweep -- --ignored"]
fn exhaustive_f32() {
    if std::env::var("FLOAT_SWEEP").as_deref() != Ok("exhaustive") {
        eprintln!("exhaustive_f32: set FLOAT_SWEEP=exhaustive to run it");
        return;
    }
    let only = std::env::var("FLOAT_SWEEP_FUNCS").ok();
    let dev = on_device::<f32>();
    let chunk: u64 = 1 << 24;
    // FLOAT_SWEEP_CHUNKS=n walks only the first n chunks of each function (a trial run).
    let chunks = std::env::var("FLOAT_SWEEP_CHUNKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or((1u64 << 32) / chunk);
    let mut stats = Vec::new();
    for &name in UNARY {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|f| f == name))
        {
            continue;
        }
        let t = std::time::Instant::now();
        let mut total = Stat::new(name, "f32");
        for c in 0..chunks {
            let x: Vec<f32> = (c * chunk..(c + 1) * chunk)
                .into_par_iter()
                .map(|b| f32::from_bits(b as u32))
                .collect();
            let got = read(&apply(name, &Array::from_slice(&x, &[x.len()])));
            let want = reference_unary(name, &x);
            let part: Vec<Stat> = (0..16usize)
                .into_par_iter()
                .map(|p| {
                    let r = p * x.len() / 16..(p + 1) * x.len() / 16;
                    let mut s = Stat::new(name, "f32");
                    s.add(dev, &[&x[r.clone()]], &got[r.clone()], &want[r], LIMIT);
                    s
                })
                .collect();
            part.iter().for_each(|p| total.merge(p));
        }
        println!("{} ({:.1} s)", total.row(), t.elapsed().as_secs_f64());
        stats.push(total);
    }
    let ex = executor();
    println!("{}", table(&ex, &stats));
    assert_within(&ex, &stats, LIMIT);
}
