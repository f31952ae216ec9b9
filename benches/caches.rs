//! Host cost of the caches. A loop of 10,000 iterations of an 8-op f32 chain on 1,024-element
//! arrays, recorded and handed to the executors each iteration (`hint_read`), in three ways in the
//! same run: program generation every time (trace cache off), trace-cache hits, and a code reuse
//! section replayed. "Host time" is the application thread's time per iteration minus the time it
//! waited for the executors (flow control): recording, cache lookup or generation, instantiation
//! and hand-off. Then the cost of a trace cache that never hits: every iteration a new key.
//!
//! Run: `cargo bench --bench caches` (release). `CACHES_ITERS` sets the iteration count.

use arrayflow::{Array, Runtime};
use std::time::Instant;

fn chain(a: &Array<f32>, b: &Array<f32>) -> Array<f32> {
    ((((a * b + 1.0).sqrt()) * a - b).abs()) * 0.5 + a
}

struct Measured {
    host_us: f64,
    flush_us: f64,
    generated: u64,
}

fn measure(iters: usize, mut body: impl FnMut(usize)) -> Measured {
    Runtime::execute();
    let before = Runtime::stats();
    let t = Instant::now();
    for i in 0..iters {
        body(i);
    }
    let wall = t.elapsed().as_secs_f64();
    let s = Runtime::stats().since(&before);
    Runtime::execute();
    Measured {
        host_us: (wall - s.flow_wait_ns as f64 * 1e-9) / iters as f64 * 1e6,
        flush_us: s.flush_ns as f64 / iters as f64 / 1e3,
        generated: s.sequences_generated,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let iters: usize = std::env::var("CACHES_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("arrayflow cache benchmark: {iters} iterations of an 8-op f32 chain on 1024 elements");
    println!(
        "machine: {cpu} | logical CPUs: {} | executor: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        Runtime::executor()
    );
    let n = 1024;
    let av: Vec<f32> = (0..n).map(|i| 0.5 + (i % 97) as f32 / 97.0).collect();
    let bv: Vec<f32> = (0..n).map(|i| 0.25 + (i % 89) as f32 / 89.0).collect();
    let a = Array::from_slice(&av, &[n]);
    let b = Array::from_slice(&bv, &[n]);

    let mut rows = Vec::new();
    for round in 0..3 {
        Runtime::set_trace_cache(false);
        let none = measure(iters, |_| chain(&a, &b).hint_read());
        Runtime::set_trace_cache(true);
        let trace = measure(iters, |_| chain(&a, &b).hint_read());
        let section = measure(iters, |_| {
            let out = Runtime::reuse(&[&a, &b], &[], |ins| vec![chain(&ins[0], &ins[1])]).unwrap();
            drop(out);
        });
        if round > 0 {
            rows.push((none, trace, section));
        }
    }
    // Check the results once.
    let y = Runtime::reuse(&[&a, &b], &[], |ins| vec![chain(&ins[0], &ins[1])])
        .unwrap()
        .remove(0)
        .to_vec()
        .unwrap();
    let z = chain(&a, &b).to_vec().unwrap();
    for i in 0..n {
        let want = ((((av[i] * bv[i] + 1.0).sqrt()) * av[i] - bv[i]).abs()) * 0.5 + av[i];
        assert_eq!((y[i], z[i]), (want, want));
    }

    let col =
        |f: &dyn Fn(&(Measured, Measured, Measured)) -> f64| median(rows.iter().map(f).collect());
    let (h0, h1, h2) = (
        col(&|r| r.0.host_us),
        col(&|r| r.1.host_us),
        col(&|r| r.2.host_us),
    );
    let (f0, f1) = (col(&|r| r.0.flush_us), col(&|r| r.1.flush_us));
    println!();
    println!("host time per iteration (median of 2 rounds after a warm-up round)");
    println!(
        "{:>26} | {:>14} | {:>20} | {:>22}",
        "", "host µs / iter", "of which flush µs", "sequences generated"
    );
    println!("{:->92}", "");
    println!(
        "{:>26} | {:>14.2} | {:>20.2} | {:>22}",
        "no caches (generate)", h0, f0, rows[0].0.generated
    );
    println!(
        "{:>26} | {:>14.2} | {:>20.2} | {:>22}",
        "trace cache (hit)", h1, f1, rows[0].1.generated
    );
    println!(
        "{:>26} | {:>14.2} | {:>20} | {:>22}",
        "code reuse section (replay)", h2, "-", rows[0].2.generated
    );
    println!();
    println!(
        "trace-cache hit vs regenerating: flush {:.1}x cheaper, whole iteration {:.1}x cheaper (target >= 5x)",
        f0 / f1,
        h0 / h1
    );
    println!("replayed section: {h2:.2} µs of host time per iteration (target < 5 µs)");

    // A trace cache that never hits: every iteration records a new key (a new size).
    let miss = |on: bool| {
        Runtime::set_trace_cache(on);
        // Uploaded data (constants would fold the whole chain away at record time).
        let sizes: Vec<(Array<f32>, Array<f32>)> = (0..256)
            .map(|k| {
                (
                    Array::from_vec(vec![1.5f32; 64 + k], &[64 + k]),
                    Array::from_vec(vec![0.5f32; 64 + k], &[64 + k]),
                )
            })
            .collect();
        measure(iters / 4, |i| {
            let (x, y) = &sizes[i % 256];
            // Every key is new: 256 sizes, and the cache emptied whenever they would repeat.
            if on && i % 256 == 0 {
                Runtime::clear_trace_cache();
            }
            chain(x, y).hint_read()
        })
    };
    let (mut off_host, mut on_host, mut off_flush, mut on_flush) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..9 {
        let off = miss(false);
        let on = miss(true);
        off_host.push(off.host_us);
        on_host.push(on.host_us);
        off_flush.push(off.flush_us);
        on_flush.push(on.flush_us);
    }
    Runtime::set_trace_cache(true);
    let (oh, nh, of, nf) = (
        median(off_host),
        median(on_host),
        median(off_flush),
        median(on_flush),
    );
    println!();
    println!(
        "never hitting (median of 9 interleaved rounds of {} iterations):",
        iters / 4
    );
    println!(
        "  host time  {nh:.2} µs/iter with the trace cache, {oh:.2} without: {:+.1}% (target within 5%)",
        (nh / oh - 1.0) * 100.0
    );
    println!(
        "  flush time {nf:.2} µs/iter with the trace cache, {of:.2} without: {:+.2} µs per miss",
        nf - of
    );
}
