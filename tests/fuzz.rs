//! The project's differential fuzzer (issue 18): random straight-line programs over the public
//! API, run on whatever executor the environment selects and checked against an independent
//! oracle with error bounds from error propagation. Parts: `fuzz/program.rs` (representation,
//! printing as Rust), `fuzz/generator.rs` (seeded generator), `fuzz/oracle.rs` (the oracle),
//! `fuzz/tol.rs` (the error rules), `fuzz/complex.rs` (version 3's complex and spectral
//! expressions: their generator, oracle and run), `fuzz/run.rs` (running through the API), `fuzz/shrink.rs`
//! (delta debugging). `fuzz_corpus` runs the seeds of `fuzz/corpus.txt`; `fuzz_fresh` (ignored)
//! runs fresh seeds for `FUZZ_SECONDS` (default 60) from `FUZZ_SEED` (default: the clock) with
//! the newest generator version (`generator.rs` says what a version is; a seed is written `N`
//! for version 1, `v2:N` for version 2):
//!
//! ```sh
//! FUZZ_SECONDS=3600 cargo test --release --test fuzz -- --ignored fuzz_fresh
//! FUZZ_ONE=v2:1234 cargo test --test fuzz fuzz_corpus -- --nocapture   # one seed, verbosely
//! ```

#[path = "fuzz/complex.rs"]
mod complex;
#[path = "fuzz/generator.rs"]
mod generator;
#[path = "fuzz/oracle.rs"]
mod oracle;
#[path = "fuzz/program.rs"]
mod program;
#[path = "fuzz/run.rs"]
mod run;
#[path = "fuzz/shrink.rs"]
mod shrink;
#[path = "fuzz/tol.rs"]
mod tol;

use run::Outcome;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One test at a time: the fault-injection test changes the runtime for every thread.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs one seed; on a failure returns the report: seed, error and the shrunk program.
fn check_seed(version: u32, seed: u64, verbose: bool) -> Option<String> {
    let p = generator::generate(seed, version);
    let seed = program::seed_name(version, seed);
    if verbose {
        eprintln!("{}", program::to_rust(&p));
    }
    match run::run(&p, verbose) {
        Outcome::Pass => None,
        Outcome::Invalid(e) => Some(format!(
            "seed {seed}: fuzzer bug (invalid program): {e}\n{}",
            program::to_rust(&p)
        )),
        Outcome::Fail(e) => {
            let fails = |q: &program::Program| matches!(run::run(q, false), Outcome::Fail(_));
            let small = shrink::shrink(&p, &fails, Duration::from_secs(60));
            let e2 = match run::run(&small, false) {
                Outcome::Fail(e) => e,
                _ => e.clone(),
            };
            Some(format!(
                "seed {seed}: {e}\nshrunk ({} of {} statements): {e2}\n{}",
                small.stmts.len(),
                p.stmts.len(),
                program::to_rust(&small)
            ))
        }
    }
}

/// The corpus: `(generator version, seed)`.
fn corpus() -> Vec<(u32, u64)> {
    include_str!("fuzz/corpus.txt")
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| program::parse_seed(l).unwrap_or_else(|| panic!("corpus.txt: bad seed {l:?}")))
        .collect()
}

#[test]
fn fuzz_corpus() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(one) = std::env::var("FUZZ_ONE") {
        let (version, seed) = program::parse_seed(&one).expect("FUZZ_ONE is a seed (N or v2:N)");
        if let Some(r) = check_seed(version, seed, true) {
            panic!("{r}");
        }
        return;
    }
    let start = Instant::now();
    let mut failures = vec![];
    for (version, seed) in corpus() {
        let t = Instant::now();
        failures.extend(check_seed(version, seed, false));
        eprintln!(
            "fuzz corpus: seed {} in {:.1?}",
            program::seed_name(version, seed),
            t.elapsed()
        );
    }
    eprintln!(
        "fuzz corpus: {} seeds in {:.1?} on {}",
        corpus().len(),
        start.elapsed(),
        arrayflow::Runtime::executor()
    );
    assert!(
        failures.is_empty(),
        "{} corpus seeds failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
#[ignore = "fresh seeds for FUZZ_SECONDS: reported, not blocking"]
fn fuzz_fresh() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let secs: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let base: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                % 1_000_000_000
                * 1000
        });
    let start = Instant::now();
    let (mut n, mut failures) = (0u64, vec![]);
    while start.elapsed() < Duration::from_secs(secs) {
        let seed = base + n;
        n += 1;
        if let Some(r) = check_seed(generator::VERSION, seed, false) {
            eprintln!("FUZZ FAILURE {r}\n");
            failures.push(program::seed_name(generator::VERSION, seed));
        }
    }
    eprintln!(
        "fuzz_fresh: {n} seeds (generator v{}) from {base} in {:.1?}, {} failed: {failures:?}",
        generator::VERSION,
        start.elapsed(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "fresh seeds failed: {failures:?} (reports above)"
    );
}

/// The fuzzer is not vacuous: with the tile VM computing `add` wrongly (the crate's test-only
/// fault injection), some corpus-sized run of seeds fails, and its shrunk program still does.
/// CPU executor only (a device runs its own kernels); skipped in comparison mode, whose
/// reference would report the fault first.
#[test]
fn fuzz_catches_an_injected_fault() {
    use arrayflow::debug::inject_fault;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if arrayflow::Runtime::backend() != arrayflow::Backend::Cpu
        || std::env::var("ARRAYFLOW_COMPARE").is_ok()
    {
        return;
    }
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            inject_fault(None);
        }
    }
    let _off = Off;
    inject_fault(Some(arrayflow::ir::BinaryOp::Add));
    let caught = (1..=40u64).find_map(|seed| {
        let p = generator::generate(seed, generator::VERSION);
        matches!(run::run(&p, false), Outcome::Fail(_)).then_some(p)
    });
    let p = caught.expect("40 seeds ran with a wrong `add` and none failed");
    let fails = |q: &program::Program| matches!(run::run(q, false), Outcome::Fail(_));
    let small = shrink::shrink(&p, &fails, Duration::from_secs(20));
    assert!(fails(&small) && small.stmts.len() <= p.stmts.len());
    inject_fault(None);
    assert!(
        matches!(run::run(&p, false), Outcome::Pass),
        "seed {} fails without the fault",
        program::seed_name(p.version, p.seed)
    );
}

/// The generator's op mix: `let`s by kind over `FUZZ_MIX` seeds (default 500) of the newest
/// version, from seed 1; a check on the share of each kind when the generator changes.
#[test]
#[ignore = "prints statistics"]
fn fuzz_mix() {
    use program::Stmt;
    use std::collections::BTreeMap;
    fn walk(stmts: &[Stmt], out: &mut BTreeMap<String, usize>) {
        for s in stmts {
            match s {
                Stmt::Let { expr, .. } => {
                    let name = format!("{expr:?}");
                    let name = name.split([' ', '{', '(']).next().unwrap().to_string();
                    *out.entry(name).or_default() += 1;
                }
                Stmt::Block(b) => walk(b, out),
                Stmt::Reuse(sec) => walk(&sec.body, out),
                _ => {}
            }
        }
    }
    let n: u64 = std::env::var("FUZZ_MIX")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let (mut kinds, mut stmts) = (BTreeMap::new(), 0);
    for seed in 1..=n {
        let p = generator::generate(seed, generator::VERSION);
        stmts += p.stmts.len();
        walk(&p.stmts, &mut kinds);
    }
    let lets: usize = kinds.values().sum();
    let new: usize = ["Scan", "Sort", "Argsort", "TopK", "TakeAlong", "Scatter"]
        .iter()
        .map(|k| kinds.get(*k).copied().unwrap_or(0))
        .sum();
    for (k, c) in &kinds {
        eprintln!("{k:>10} {c:6} {:5.1}%", 100.0 * *c as f64 / lets as f64);
    }
    let data: usize = ["Input", "Full", "Iota", "Uniform", "Literal"]
        .iter()
        .map(|k| kinds.get(*k).copied().unwrap_or(0))
        .sum();
    eprintln!(
        "{n} programs, {:.1} statements and {:.1} lets each; issue 20's ops: {:.1}% of lets, \
         {:.1}% of the lets that compute (not data)",
        stmts as f64 / n as f64,
        lets as f64 / n as f64,
        100.0 * new as f64 / lets as f64,
        100.0 * new as f64 / (lets - data) as f64
    );
}
