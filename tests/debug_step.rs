//! Stepping inside fused kernels (issue 24, seed 000) and the first diverging op, on whichever
//! executor the environment picks (tile VM, native tier, PoCL, lavapipe):
//!
//! - random fused programs (element-wise chains with broadcasting, constants, selects, casts, and
//!   a reduction at the end, along the last or the first axis) are stepped one micro-kernel per
//!   IR node. Asserted: the result read from the fused kernel matches a plain f64 loop; every
//!   step's values match the reference interpreter's value of its node within `1e-4 (1 + |r|)`;
//!   the element-wise step the kernel stores is bit-identical to the fused result (no executor
//!   here contracts or reorders an element-wise op), a reduction step within the rounding of its
//!   sum; each scope (an element, a work unit, a range) reports the same values as the whole run
//!   at its elements;
//! - with one binary op planted wrong (test-only fault injection, in the tile VM and in the
//!   OpenCL and WGSL renderers) in the middle of a fused chain, the divergence finder names it
//!   (op and this file's line) on every executor (on a device, whose counters show the faulty
//!   kernel ran there, with no fallback to the CPU), the ops before it pass, and its reproducing
//!   program is Rust on the public API naming the ops that feed it: it is compiled (rustc against
//!   the arrayflow library this test links) and run, and prints the reference value, or with the
//!   fault injected the optimised value the divergence reports.
//!
//! Tests run one at a time: fault injection and comparison mode are process-wide.

mod common;

use arrayflow::debug::{inject_fault, inject_intrinsic_fault};
use arrayflow::ir::BinaryOp;
use arrayflow::{Array, CompareConfig, CompareMode, MismatchAction, Runtime, StepScope};
use common::kernels_ran_on_the_device;
use parking_lot::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

const ROWS: usize = 40;
const COLS: usize = 64;
const N: usize = ROWS * COLS;

/// A small deterministic generator (the data and the programs are fixed by the seed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in [-2, 2).
    fn value(&mut self) -> f32 {
        (self.next() as f32 / (1u64 << 31) as f32) * 4.0 - 2.0
    }
    fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.value()).collect()
    }
}

/// Resets comparison mode, stepping and fault injection when a test ends (also by a failure).
struct Scope {
    _lock: parking_lot::MutexGuard<'static, ()>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        inject_fault(None);
        inject_intrinsic_fault(None);
        Runtime::set_stepping(0);
        Runtime::set_compare(None);
        Runtime::clear_mismatches();
    }
}

/// The test lock, with comparison mode on (copy-out, mismatches logged) and stepping on.
fn scope() -> Scope {
    let lock = SERIAL.lock();
    inject_fault(None);
    inject_intrinsic_fault(None);
    Runtime::set_compare(Some(
        CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Log),
    ));
    Runtime::clear_mismatches();
    Runtime::set_stepping(16);
    Scope { _lock: lock }
}

/// The inputs of every program: `a` [ROWS, COLS], `b` [COLS] (broadcast along rows), `c` [ROWS, 1]
/// (broadcast along columns).
struct Inputs {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

/// One random fused program: the array computed and the f64 oracle of every element (and, for a
/// sum, the sum of its terms' sizes, which bounds its rounding).
struct Program {
    result: Array<f32>,
    oracle: Vec<f64>,
    scale: Vec<f64>,
    last_op: &'static str,
    reduced: bool,
}

/// A random chain; `end` 0: a sum along the last axis, 1: a maximum along the first (the
/// reduced axis is not the innermost), else none.
fn random_program(rng: &mut Lcg, x: &Inputs, end: usize) -> Program {
    let a = Array::from_slice(&x.a, &[ROWS, COLS]);
    let b = Array::from_slice(&x.b, &[COLS]);
    let c = Array::from_slice(&x.c, &[ROWS, 1]);
    let mut v = a.clone();
    let mut o: Vec<f64> = x.a.iter().map(|&t| t as f64).collect();
    let ops = 3 + rng.below(5);
    let mut last_op = "";
    for _ in 0..ops {
        let (nv, name): (Array<f32>, &'static str) = match rng.below(9) {
            0 => {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(i, t)| *t += x.b[i % COLS] as f64);
                (&v + &b, "add")
            }
            1 => {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(i, t)| *t *= x.c[i / COLS] as f64);
                (&v * &c, "mul")
            }
            2 => {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(i, t)| *t -= x.a[i] as f64);
                (&v - &a, "sub")
            }
            3 => {
                o.iter_mut().for_each(|t| *t = (*t * 0.25).exp());
                ((&v * 0.25f32).exp(), "exp")
            }
            4 => {
                o.iter_mut().for_each(|t| *t = t.abs().sqrt());
                (v.abs().sqrt(), "sqrt")
            }
            5 => {
                o.iter_mut().for_each(|t| *t = t.tanh());
                (v.tanh(), "tanh")
            }
            6 => {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(i, t)| *t = if *t > 0.5 { *t } else { x.a[i] as f64 });
                (v.gt(0.5f32).select(&v, &a), "select")
            }
            7 => {
                o.iter_mut().for_each(|t| *t = (*t * 3.0).trunc());
                ((&v * 3.0f32).cast::<i32>().cast::<f32>(), "cast")
            }
            _ => {
                o.iter_mut()
                    .enumerate()
                    .for_each(|(i, t)| *t = t.min(x.b[i % COLS] as f64));
                (v.minimum(&b), "min")
            }
        };
        v = nv;
        last_op = name;
    }
    match end {
        0 => {
            let oracle = (0..ROWS)
                .map(|r| o[r * COLS..(r + 1) * COLS].iter().sum())
                .collect();
            let scale = (0..ROWS)
                .map(|r| o[r * COLS..(r + 1) * COLS].iter().map(|t| t.abs()).sum())
                .collect();
            Program {
                result: v.sum_axis(1),
                oracle,
                scale,
                last_op: "sum",
                reduced: true,
            }
        }
        1 => {
            let oracle = (0..COLS)
                .map(|col| {
                    (0..ROWS)
                        .map(|r| o[r * COLS + col])
                        .fold(f64::MIN, f64::max)
                })
                .collect();
            Program {
                result: v.max_axis(0),
                oracle,
                scale: vec![0.0; COLS],
                last_op: "max",
                reduced: true,
            }
        }
        _ => Program {
            result: v,
            scale: vec![0.0; N],
            oracle: o,
            last_op,
            reduced: false,
        },
    }
}

#[test]
fn stepping_equals_the_fused_kernel_on_random_programs() {
    let _s = scope();
    // Stepping off (and comparison mode's narrowing, which keeps kernels too): a clear error at
    // this line.
    let compare = || CompareConfig::new(CompareMode::OnCopyOut).action(MismatchAction::Log);
    Runtime::set_compare(Some(compare().narrow(0)));
    Runtime::set_stepping(0);
    let early = Array::from_slice(&[1.0f32, 2.0], &[2]).exp();
    let line = line!() + 1;
    let err = Runtime::step_kernel(&early, StepScope::All).unwrap_err();
    assert_eq!(
        err.site.map(|s| (s.file(), s.line())),
        Some((file!(), line)),
        "{err}"
    );
    Runtime::set_compare(Some(compare()));
    Runtime::set_stepping(16);

    let mut rng = Lcg(0x5eed_0024);
    let x = Inputs {
        a: rng.values(N),
        b: rng.values(COLS),
        c: rng.values(ROWS),
    };
    for program in 0..6 {
        let p = random_program(&mut rng, &x, program % 3);
        let fused = p.result.to_vec().unwrap();
        // The fused kernel against the f64 oracle.
        for (i, (&f, &o)) in fused.iter().zip(&p.oracle).enumerate() {
            let allowed = 2e-4 * (1.0 + o.abs() + p.scale[i]);
            assert!(
                (f as f64 - o).abs() <= allowed,
                "program {program}: fused result {i}: {f} vs oracle {o}"
            );
        }
        let all = Runtime::step_kernel(&p.result, StepScope::All).unwrap();
        let ops: Vec<&str> = all.iter().map(|r| r.op.as_str()).collect();
        println!("program {program} on {}: {ops:?}", Runtime::executor());
        let last = all.last().unwrap();
        assert_eq!(last.op, p.last_op, "program {program}: {all:#?}");
        assert_eq!(last.stored, Some(0));
        assert_eq!(last.site.file(), file!());
        let stored: Vec<_> = all.iter().filter(|r| r.stored.is_some()).collect();
        assert!(!stored.is_empty());
        for r in &all {
            // Every step against the reference interpreter's value of its node (the uploaded
            // inputs and constants have none: they are exact).
            let Some(reference) = r.reference.as_ref() else {
                assert!(["load", "const"].contains(&r.op.as_str()), "{r:?}");
                continue;
            };
            let reduction = p.reduced && r.stored.is_some();
            for (k, (&v, &rf)) in r.values.iter().zip(reference).enumerate() {
                let terms = if reduction { p.scale[r.at[k]] } else { 0.0 };
                assert!(
                    (v - rf).abs() <= 1e-4 * (1.0 + rf.abs() + terms),
                    "program {program}: step {} `{}` at {}: {v} vs reference {rf}",
                    r.step,
                    r.op,
                    r.at[k]
                );
            }
        }
        // The stored step against the fused kernel's output: bit for bit element-wise, within
        // the rounding of the sum for a reduction.
        for r in stored {
            for (k, &j) in r.at.iter().enumerate() {
                if p.reduced {
                    let allowed = 1e-5 * (1.0 + p.scale[j] + fused[j].abs() as f64);
                    assert!(
                        (r.values[k] - fused[j] as f64).abs() <= allowed,
                        "program {program}: stepped {} vs fused {} at {j}",
                        r.values[k],
                        fused[j]
                    );
                } else {
                    assert_eq!(
                        r.bits[k],
                        fused[j].to_bits() as u64,
                        "program {program}: stepped {} vs fused {} at {j}",
                        r.values[k],
                        fused[j]
                    );
                }
            }
        }
        // Each scope reports the whole run's values at its elements.
        let e = rng.below(N);
        let scopes = [
            (StepScope::Element(e), e..e + 1),
            (StepScope::Group(1), 1024..2048),
            (StepScope::Range(100..300), 100..300),
        ];
        for (scope, range) in scopes {
            let part = Runtime::step_kernel(&p.result, scope.clone()).unwrap();
            assert_eq!(part.len(), all.len());
            for (r, w) in part.iter().zip(&all) {
                assert_eq!((&r.op, r.step, r.site), (&w.op, w.step, w.site));
                // A reduction step reports the results whose reduced elements meet the scope
                // (the domain has the reduced axis last: `inner` elements per result).
                let inner = if p.reduced && r.stored.is_some() {
                    N / fused.len()
                } else {
                    1
                };
                let mut want: Vec<usize> = range.clone().map(|d| d / inner).collect();
                want.dedup();
                assert_eq!(r.elements, want, "{scope:?}: step {}", r.step);
                for (k, &el) in r.elements.iter().enumerate() {
                    // The whole run reports every element in order.
                    assert_eq!(w.elements[el], el);
                    assert_eq!(r.bits[k], w.bits[el], "{scope:?} step {}", r.step);
                    assert_eq!(r.at[k], w.at[el]);
                }
            }
        }
    }
    // A scope outside the domain is refused at this line.
    let p = random_program(&mut rng, &x, 2);
    let line = line!() + 1;
    let err = Runtime::step_kernel(&p.result, StepScope::Range(N..N + 5)).unwrap_err();
    assert_eq!(err.site.map(|s| s.line()), Some(line), "{err}");
}

#[test]
fn divergence_names_the_planted_op_on_every_executor() {
    let _s = scope();
    let mut rng = Lcg(0xd1_7e29);
    let (xa, xb) = (rng.values(N), rng.values(COLS));
    let a = Array::from_slice(&xa, &[ROWS, COLS]);
    let b = Array::from_slice(&xb, &[COLS]);
    // The planted op: the chain's only multiplication, in its middle.
    inject_fault(Some(BinaryOp::Mul));
    let l_add = line!() + 1;
    let t1 = &a + &b;
    let l_tanh = line!() + 1;
    let t2 = t1.tanh();
    let l_mul = line!() + 1;
    let t3 = &t2 * &a;
    let t4 = t3.exp();
    let l_sub = line!() + 1;
    let t5 = &t4 - &b;
    drop((t1, t2, t3, t4));
    // On a device, the faulty kernel runs there (its renderer planted the fault): computed first
    // with `eval`, apart from the read's checks and narrowing (which run micro-kernels).
    let before = Runtime::stats();
    t5.eval().unwrap();
    kernels_ran_on_the_device(&before);
    let _ = t5.to_vec().unwrap();
    let ms = Runtime::mismatches();
    assert!(
        ms.iter()
            .any(|m| m.op == "sub" && m.site.line() == l_sub && m.site.file() == file!()),
        "the planted fault is caught on the chain's result: {ms:#?}"
    );
    let d = &divergence_named(l_sub, "mul", l_mul);
    // Both values, against an f64 oracle: the reference is tanh(a + b) * a, the optimised value
    // the planted corruption of it (2x + 1, rounded in f32).
    let j = d.element;
    let oracle = (xa[j] as f64 + xb[j % COLS] as f64).tanh() * xa[j] as f64;
    assert!(
        (d.reference - oracle).abs() <= 1e-6 * (1.0 + oracle.abs()),
        "{d}"
    );
    assert!(
        (d.optimised - (2.0 * oracle + 1.0)).abs() <= 1e-5 * (1.0 + oracle.abs()),
        "{d}"
    );
    // The ops before it pass: their steps equal their references, the planted one does not.
    let steps = Runtime::step_kernel(&t5, StepScope::Element(j)).unwrap();
    let line_of = |op: &str| {
        steps
            .iter()
            .find(|r| r.op == op && r.site.file() == file!())
            .unwrap_or_else(|| panic!("no `{op}` step: {steps:#?}"))
    };
    for (op, line) in [("add", l_add), ("tanh", l_tanh), ("mul", l_mul)] {
        let r = line_of(op);
        assert_eq!(r.site.line(), line);
        let (v, rf) = (r.values[0], r.reference.as_ref().unwrap()[0]);
        let differs = (v - rf).abs() > 1e-5 * (1.0 + rf.abs());
        assert_eq!(differs, op == "mul", "step `{op}`: {v} vs reference {rf}");
    }
    // The reproducing program: Rust on the public API, the ops that feed `mul` at their call
    // sites, the inputs written out, nothing after the diverging op.
    let text = &d.program;
    println!("on {}: {d}\n{text}", Runtime::executor());
    let at = |line: u32| format!("{}:{line}:", file!());
    assert!(text.starts_with("// Reproduces `mul`"), "{text}");
    assert!(
        text.contains("fn main() -> arrayflow::Result<()> {"),
        "{text}"
    );
    for needle in [
        "use arrayflow::Array;",
        "Array::<f32>::from_slice(&[",
        ".tanh()",
        " + &",
        " * &",
        ".to_vec()?",
        &at(l_add),
        &at(l_tanh),
        &at(l_mul),
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    for absent in [".exp()", " - &", &at(l_sub)] {
        assert!(!text.contains(absent), "`{absent}` in:\n{text}");
    }
    let (open, close) = (text.matches('{').count(), text.matches('}').count());
    assert_eq!(open, close, "{text}");
    let (po, pc) = (text.matches('(').count(), text.matches(')').count());
    assert_eq!(po, pc, "{text}");
    assert!(text.trim_end().ends_with('}'));
    // Every statement binds one variable, each used after it is bound.
    let lets: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("let "))
        .collect();
    // Inputs a and b, then add (with b's broadcast, if recorded as a node of its own), tanh and
    // mul, each at its call site, then the values read.
    assert!((6..=7).contains(&lets.len()), "{text}");
    for l in &lets[2..lets.len() - 1] {
        let sites = [at(l_add), at(l_tanh), at(l_mul)];
        assert!(sites.iter().any(|s| l.contains(s.as_str())), "{l}");
    }
    assert!(lets[..2].iter().all(|l| l.contains("from_slice")), "{text}");
    // The inputs are the whole arrays: a's and b's values.
    let first = text.lines().find(|l| l.contains("from_slice")).unwrap();
    assert!(first.contains(&format!("{:?}", xa[0])) || first.contains(&format!("{:?}", xb[0])));

    // It compiles and reproduces: run as written it prints the reference value at the element;
    // with the fault planted again it prints the optimised value the divergence reports.
    let faulty = text.replacen(
        "fn main() -> arrayflow::Result<()> {",
        "fn main() -> arrayflow::Result<()> {\n    if std::env::var_os(\"REPRO_FAULT\").is_some() {\n        arrayflow::debug::inject_fault(Some(arrayflow::ir::BinaryOp::Mul));\n    }",
        1,
    );
    assert_reproduces(&faulty, "divergence", d, j);
}

/// The divergence found for the mismatch reported at this file's line `line`, which must name op
/// `op` recorded at line `at`.
#[track_caller]
fn divergence_named(line: u32, op: &str, at: u32) -> arrayflow::Divergence {
    let ds = Runtime::divergences().unwrap();
    let d = ds
        .iter()
        .find(|d| d.mismatch.site.line() == line)
        .unwrap_or_else(|| panic!("no divergence for the mismatch at line {line}: {ds:#?}"))
        .clone();
    assert_eq!(
        (d.op.as_str(), d.site.file(), d.site.line()),
        (op, file!(), at),
        "{d}"
    );
    d
}

/// Compiles reproducing program `program` (whose fault the `REPRO_FAULT` variable plants) and
/// runs it without and with the fault: it prints divergence `d`'s element `j` with the reference
/// value, then with the optimised one.
fn assert_reproduces(program: &str, name: &str, d: &arrayflow::Divergence, j: usize) {
    let bin = compile_program(program, name);
    for fault in [false, true] {
        let (element, value) = run_program(&bin, fault);
        assert_eq!(element, j, "{program}");
        let want = if fault { d.optimised } else { d.reference };
        assert!(
            (value - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "fault {fault}: the program printed {value}, the divergence says {want}: {d}"
        );
    }
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
}

/// Compiles a reproducing program with rustc against the arrayflow library this test links: its
/// rlib in this test binary's folder (`target/debug/deps`, with the crates it depends on). Of
/// the library's rlibs there (builds with other features), the newest that compiles the program
/// is taken. Returns the executable.
fn compile_program(program: &str, name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let dir = std::env::temp_dir().join(format!("arrayflow-repro-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("main.rs");
    std::fs::write(&src, program).unwrap();
    let mut rlibs: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(deps)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_string_lossy().into_owned();
            if !(n.starts_with("libarrayflow-") && n.ends_with(".rlib")) {
                return None;
            }
            Some((e.metadata().ok()?.modified().ok()?, e.path()))
        })
        .collect();
    rlibs.sort_by_key(|r| std::cmp::Reverse(r.0));
    assert!(
        !rlibs.is_empty(),
        "no libarrayflow rlib in {}",
        deps.display()
    );
    let bin = dir.join("repro");
    let mut errors = String::new();
    for (_, rlib) in &rlibs {
        let out = std::process::Command::new("rustc")
            .args([
                "--edition",
                "2024",
                "--crate-type",
                "bin",
                "-C",
                "debuginfo=0",
                "-o",
            ])
            .arg(&bin)
            .arg("--extern")
            .arg(format!("arrayflow={}", rlib.display()))
            .arg("-L")
            .arg(format!("dependency={}", deps.display()))
            .arg(&src)
            .output()
            .expect("rustc runs");
        if out.status.success() {
            return bin;
        }
        errors += &format!(
            "with {}:\n{}\n",
            rlib.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    panic!("the reproducing program does not compile:\n{errors}\n{program}");
}

/// Runs a compiled reproducing program (on this test's executor; comparison mode off, the fault
/// planted when `fault`) and parses what it prints: `element J: VALUE (reference R)`.
fn run_program(bin: &std::path::Path, fault: bool) -> (usize, f64) {
    let mut cmd = std::process::Command::new(bin);
    cmd.env_remove("ARRAYFLOW_COMPARE");
    if fault {
        cmd.env("REPRO_FAULT", "1");
    }
    let out = cmd.output().expect("the program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the program failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("element "))
        .unwrap_or_else(|| panic!("no element printed: {stdout}"));
    let (element, rest) = line["element ".len()..].split_once(": ").unwrap();
    let value = rest.split_once(" (reference").unwrap().0;
    (element.parse().unwrap(), value.parse().unwrap())
}

#[test]
fn a_kernel_input_that_already_differed_is_traced_to_the_kernel_computing_it() {
    let _s = scope();
    let mut rng = Lcg(0x0be7_0024);
    let (xa, xb) = (rng.values(N), rng.values(COLS));
    let a = Array::from_slice(&xa, &[ROWS, COLS]);
    let b = Array::from_slice(&xb, &[COLS]);
    inject_fault(Some(BinaryOp::Mul));
    // Two kernels: the first computes and stores `t2` (planted `mul`), the second reads it.
    let t1 = (&a + &b).tanh();
    let l_mul = line!() + 1;
    let t2 = &t1 * &a;
    Runtime::execute();
    let l_sub = line!() + 1;
    let t3 = t2.exp() - &b;
    let _ = t3.to_vec().unwrap();
    let d = &divergence_named(l_sub, "mul", l_mul);
    let j = d.element;
    let oracle = (xa[j] as f64 + xb[j % COLS] as f64).tanh() * xa[j] as f64;
    assert!(
        (d.reference - oracle).abs() <= 1e-6 * (1.0 + oracle.abs()),
        "{d}"
    );
    assert!(d.program.contains(".tanh()") && !d.program.contains(".exp()"));
}

/// An intrinsic planted wrong (test-only: a `cumsum`'s result comes out `2x + 1` on whichever
/// executor runs it) between two fused kernels: stepping its array shows its launch as one step
/// with the executor's values and the references; a mismatch on the second kernel's result is
/// traced through that kernel's load to the intrinsic, whose input agrees with its reference, so
/// the divergence names the `cumsum` call (op, line, element, both values against an f64 oracle);
/// its reproducing program writes the intrinsic's input out, calls `cumsum`, and compiled and run
/// prints the reference value, or with the fault planted the optimised one.
#[test]
fn a_divergence_in_an_intrinsic_is_traced_to_it_and_it_steps_as_one_step() {
    let _s = scope();
    let mut rng = Lcg(0x1a7e_0024);
    let (xa, xb) = (rng.values(N), rng.values(COLS));
    let a = Array::from_slice(&xa, &[ROWS, COLS]);
    let b = Array::from_slice(&xb, &[COLS]);
    inject_intrinsic_fault(Some("scan"));
    let t1 = (&a * 0.5f32).tanh();
    let l_scan = line!() + 1;
    let t2 = t1.cumsum(1);
    let l_sub = line!() + 1;
    let t3 = (&t2 * 0.1f32).exp() - &b;
    let _ = t3.to_vec().unwrap();
    // The f64 oracle of the cumulative sum.
    let oracle = |j: usize| {
        let (r, c) = (j / COLS, j % COLS);
        (0..=c)
            .map(|k| (0.5 * xa[r * COLS + k] as f64).tanh())
            .sum::<f64>()
    };
    let close = |v: f64, w: f64| (v - w).abs() <= 1e-5 * (1.0 + w.abs());
    let d = &divergence_named(l_sub, "scan", l_scan);
    let j = d.element;
    assert!(close(d.reference, oracle(j)), "{d} against {}", oracle(j));
    assert!(close(d.optimised, 2.0 * oracle(j) + 1.0), "{d}");
    // The intrinsic's array steps as one step: the executor's values and the references.
    let steps = Runtime::step_kernel(&t2, StepScope::Range(j..j + 3)).unwrap();
    assert_eq!(steps.len(), 1, "{steps:#?}");
    let st = &steps[0];
    assert_eq!((st.op.as_str(), st.site.line()), ("scan", l_scan), "{st:?}");
    assert_eq!(
        (st.elements.clone(), st.shape.clone()),
        ((j..j + 3).collect(), vec![ROWS, COLS])
    );
    let reference = st.reference.as_ref().expect("comparison mode's reference");
    for (k, &e) in st.elements.iter().enumerate() {
        assert!(close(st.values[k], 2.0 * oracle(e) + 1.0), "{st:?}");
        assert!(close(reference[k], oracle(e)), "{st:?}");
    }
    // The reproducing program: the intrinsic's input written out, then `cumsum`.
    let text = &d.program;
    println!("on {}: {d}\n{text}", Runtime::executor());
    assert!(text.starts_with("// Reproduces `scan`"), "{text}");
    for needle in ["Array::<f32>::from_slice(&[", ".cumsum(1)", ".to_vec()?"] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    assert!(!text.contains(".exp()"), "{text}");
    let faulty = text.replacen(
        "fn main() -> arrayflow::Result<()> {",
        "fn main() -> arrayflow::Result<()> {\n    if std::env::var_os(\"REPRO_FAULT\").is_some() {\n        arrayflow::debug::inject_intrinsic_fault(Some(\"scan\"));\n    }",
        1,
    );
    assert_reproduces(&faulty, "intrinsic", d, j);
}

/// Every intrinsic spelling a reproducing program uses (`IntrinsicDef::spelling`) is Rust on the
/// public API that computes what the intrinsic does: a program of one statement per spelling,
/// on small inputs written out, is compiled with rustc and run, and each result it prints equals
/// the same call made here through the API.
#[test]
fn intrinsic_spellings_compile_and_compute_the_intrinsic() {
    use arrayflow::fft::{self, Norm};
    use arrayflow::ir::{FftNorm, Intrinsic, ReduceOp};
    let _s = scope();
    Runtime::set_compare(None);
    let spd = [4.0f32, 1.0, 0.5, 1.0, 3.0, 0.25, 0.5, 0.25, 2.0];
    let (m, r) = (
        Array::from_slice(&spd, &[3, 3]),
        [1.0f32, -2.0, 0.5, 3.0, 2.5, -1.0],
    );
    let rhs = Array::from_slice(&r, &[3, 2]);
    let v = Array::from_slice(&[3.0f32, -1.0, 2.0, 0.5, -4.0, 1.5], &[6]);
    let idx = Array::from_slice(&[2u32, 0, 1], &[3]);
    let sorted = Array::from_slice(&[-1.0f32, 0.0, 0.0, 2.5, 7.0], &[5]);
    let ints = Array::from_slice(&[1u32, 3, 1, 0, 3, 3], &[6]);
    let rows = Array::from_slice(&[0u32, 2, 1, 1, 0, 2, 2, 1, 0], &[3, 3]);
    // (name, op, argument variables, their shapes, the same call through the API)
    type Case = (
        &'static str,
        Intrinsic,
        Vec<&'static str>,
        Vec<Vec<usize>>,
        Array<f32>,
    );
    let cases: Vec<Case> = vec![
        (
            "matmul_ta",
            Intrinsic::Matmul {
                trans_a: true,
                trans_b: false,
            },
            vec!["m", "rhs"],
            vec![vec![3, 3], vec![3, 2]],
            m.transpose().matmul(&rhs),
        ),
        (
            "concat",
            Intrinsic::Concat { axis: 0 },
            vec!["v", "v"],
            vec![vec![6], vec![6]],
            Array::concat(&[&v, &v], 0),
        ),
        (
            "gather",
            Intrinsic::Gather { axis: 0 },
            vec!["v", "idx"],
            vec![vec![6], vec![3]],
            v.gather(&idx, 0),
        ),
        (
            "cummax",
            Intrinsic::Scan {
                op: ReduceOp::Max,
                axis: 1,
            },
            vec!["m"],
            vec![vec![3, 3]],
            m.cummax(1),
        ),
        (
            "sort",
            Intrinsic::Sort {
                axis: 0,
                descending: true,
            },
            vec!["v"],
            vec![vec![6]],
            v.sort_axis_descending(0),
        ),
        (
            "argsort",
            Intrinsic::Argsort {
                axis: 0,
                descending: false,
            },
            vec!["v"],
            vec![vec![6]],
            v.argsort_axis(0).cast::<f32>(),
        ),
        (
            "take_along",
            Intrinsic::TakeAlongAxis { axis: 1 },
            vec!["m", "rows"],
            vec![vec![3, 3], vec![3, 3]],
            m.take_along_axis(&rows, 1),
        ),
        (
            "scatter_add",
            Intrinsic::ScatterAdd { axis: 0 },
            vec!["v", "idx", "r3"],
            vec![vec![6], vec![3], vec![3]],
            v.scatter_add(&idx, &v.slice(arrayflow::s![0..3]), 0),
        ),
        (
            "bincount",
            Intrinsic::Bincount { length: 5 },
            vec!["ints"],
            vec![vec![6]],
            ints.bincount(5).cast::<f32>(),
        ),
        (
            "searchsorted",
            Intrinsic::SearchSorted { right: true },
            vec!["sorted", "v"],
            vec![vec![5], vec![6]],
            sorted
                .searchsorted(&v, arrayflow::Side::Right)
                .cast::<f32>(),
        ),
        (
            "solve",
            Intrinsic::Solve,
            vec!["m", "rhs"],
            vec![vec![3, 3], vec![3, 2]],
            m.solve(&rhs),
        ),
        ("inv", Intrinsic::Inv, vec!["m"], vec![vec![3, 3]], m.inv()),
        ("det", Intrinsic::Det, vec!["m"], vec![vec![3, 3]], m.det()),
        (
            "cholesky",
            Intrinsic::Cholesky,
            vec!["m"],
            vec![vec![3, 3]],
            m.cholesky(),
        ),
        (
            "fft",
            Intrinsic::Fft {
                axis: 0,
                n: 8,
                inverse: false,
                norm: FftNorm::Ortho,
            },
            vec!["v"],
            vec![vec![6]],
            fft::fft(&v, Some(8), 0, Norm::Ortho).abs(),
        ),
    ];
    let mut text = String::from("use arrayflow::Array;\n\nfn main() -> arrayflow::Result<()> {\n");
    for line in [
        format!("    let m = Array::<f32>::from_slice(&{spd:?}, &[3, 3]);"),
        format!("    let rhs = Array::<f32>::from_slice(&{r:?}, &[3, 2]);"),
        "    let v = Array::<f32>::from_slice(&[3.0, -1.0, 2.0, 0.5, -4.0, 1.5], &[6]);".into(),
        "    let r3 = v.slice(arrayflow::s![0..3]);".into(),
        "    let idx = Array::<u32>::from_slice(&[2, 0, 1], &[3]);".into(),
        "    let sorted = Array::<f32>::from_slice(&[-1.0, 0.0, 0.0, 2.5, 7.0], &[5]);".into(),
        "    let ints = Array::<u32>::from_slice(&[1, 3, 1, 0, 3, 3], &[6]);".into(),
        "    let rows = Array::<u32>::from_slice(&[0, 2, 1, 1, 0, 2, 2, 1, 0], &[3, 3]);".into(),
    ] {
        text += &line;
        text.push('\n');
    }
    for (name, op, args, shapes, _) in &cases {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let shapes: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
        let e = arrayflow::intrinsics::def(op)
            .spelling(op, &args, &shapes)
            .unwrap_or_else(|| panic!("{name} has no spelling"));
        // Complex results print their moduli; integer ones as f32.
        let (pre, post) = match *name {
            "fft" => ("(", ").abs()"),
            "argsort" | "bincount" | "searchsorted" => ("(", ").cast::<f32>()"),
            _ => ("", ""),
        };
        text += &format!("    println!(\"{name}: {{:?}}\", {pre}{e}{post}.to_vec()?);\n");
    }
    text += "    Ok(())\n}\n";
    let bin = compile_program(&text, "spellings");
    let out = std::process::Command::new(&bin)
        .output()
        .expect("the program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, _, _, _, want) in &cases {
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("{name} not printed:\n{stdout}\n{text}"));
        let got: Vec<f64> = line
            .trim_matches(|c| c == '[' || c == ']')
            .split(", ")
            .map(|x| x.parse().unwrap())
            .collect();
        let want = want.to_vec().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: {line}\n{text}");
        for (g, w) in got.iter().zip(&want) {
            let w = *w as f64;
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{name}: {line} vs {want:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
}

/// Stepping a scope of a 2^20-element fused kernel runs its micro-kernels over the box of the
/// domain the scope needs, not the whole kernel (`stats().stepped_elements`: one element per
/// step for one element), and the stored step equals the fused result there bit for bit, which
/// a plain f64 loop checks.
#[test]
fn stepping_a_scope_computes_only_that_scope() {
    let _s = scope();
    let (rows, cols) = (1024, 1024);
    let n = rows * cols;
    let mut rng = Lcg(0x5c09e);
    let x = rng.values(n);
    let w = rng.values(cols);
    let xa = Array::from_slice(&x, &[rows, cols]);
    let wa = Array::from_slice(&w, &[cols]);
    let y = &(&(&(&xa * 1.5f32) + &wa).sin() * &xa) - 0.25f32;
    let fused = y.to_vec().unwrap();
    let oracle = |j: usize| ((x[j] as f64 * 1.5 + w[j % cols] as f64).sin()) * x[j] as f64 - 0.25;
    let tile = Runtime::config().tile;
    let (e, g) = (rng.below(n), rng.below(n / tile));
    let a = rng.below(n - 3000);
    let cases = [
        (StepScope::Element(e), e..e + 1, 1),
        (
            StepScope::Group(g),
            g * tile..((g + 1) * tile).min(n),
            tile + 2 * cols,
        ),
        (StepScope::Range(a..a + 2500), a..a + 2500, 2500 + 2 * cols),
    ];
    for (scope, range, most) in cases {
        let before = Runtime::stats();
        let steps = Runtime::step_kernel(&y, scope.clone()).unwrap();
        let computed = Runtime::stats().since(&before).stepped_elements as usize;
        let per_step = computed / steps.len();
        assert_eq!(computed % steps.len(), 0, "{scope:?}");
        assert!(
            per_step >= range.len() && per_step <= most,
            "{scope:?}: {per_step} elements per step"
        );
        let last = steps.iter().rfind(|r| r.stored.is_some()).unwrap();
        assert_eq!(
            last.elements,
            range.clone().collect::<Vec<_>>(),
            "{scope:?}"
        );
        for (k, &j) in last.elements.iter().enumerate() {
            assert_eq!(last.bits[k], fused[j].to_bits() as u64, "{scope:?} at {j}");
            let want = oracle(j);
            assert!(
                (last.values[k] - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "{scope:?} at {j}: {} vs {want}",
                last.values[k]
            );
        }
        // The load steps report the inputs at their own elements (the broadcast row of w).
        let loads: Vec<_> = steps.iter().filter(|r| r.op == "load").collect();
        for r in loads {
            for (k, &at) in r.at.iter().enumerate() {
                let v = if r.shape == vec![cols] { w[at] } else { x[at] };
                assert_eq!(r.values[k], v as f64, "{scope:?}: load at {at}");
            }
        }
    }
}

/// A replayed code reuse section's fused kernel is kept like a flushed one: stepping the array a
/// replay returned re-runs that replay's kernel (its input and its parameter's value), each op
/// named by the section's recorded op and line, the stored step bit-identical to the replay's
/// result; the arrays of earlier calls (recorded, re-recorded by the replay check, replayed)
/// still step to their own values.
#[test]
fn a_replayed_sections_kernel_steps_with_the_replays_values() {
    let _s = scope();
    let mut rng = Lcg(0x5eed_0029);
    let mut calls = Vec::new();
    for call in 0..5 {
        let x = rng.values(N);
        let c = 0.25 + call as f32 * 0.5;
        let a = Array::from_slice(&x, &[ROWS, COLS]);
        let before = Runtime::stats();
        let line = line!() + 2;
        let out = Runtime::reuse_with(&[&a], &[c], &[], |ins, ps| {
            vec![((&ins[0] * &ps[0]) + 1.0f32).sin() * &ins[0]]
        })
        .unwrap();
        let replayed = Runtime::stats().since(&before).macros.hits == 1;
        let y = out.into_iter().next().unwrap();
        let got = y.to_vec().unwrap();
        calls.push((x, c, y, got, replayed, line));
    }
    let replays = calls.iter().filter(|c| c.4).count();
    assert!(replays >= 2, "{replays} of the calls replayed");
    for (call, (x, c, y, got, replayed, line)) in calls.iter().enumerate() {
        let oracle = |j: usize| ((x[j] as f64 * *c as f64) + 1.0).sin() * x[j] as f64;
        let steps = Runtime::step_kernel(y, StepScope::All).unwrap();
        let ops: Vec<&str> = steps.iter().map(|r| r.op.as_str()).collect();
        let sin = steps.iter().find(|r| r.op == "sin").expect("a sin step");
        assert_eq!(
            (sin.site.file(), sin.site.line()),
            (file!(), *line),
            "call {call} (replayed: {replayed}): {ops:?}"
        );
        let last = steps.iter().rfind(|r| r.stored.is_some()).unwrap();
        assert_eq!(last.op, "mul", "call {call}: {ops:?}");
        assert_eq!(last.elements.len(), N);
        for (k, &j) in last.elements.iter().enumerate() {
            assert_eq!(
                last.bits[k],
                got[j].to_bits() as u64,
                "call {call} (replayed: {replayed}) at {j}"
            );
            let want = oracle(j);
            assert!(
                (last.values[k] - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "call {call} at {j}: {} vs {want}",
                last.values[k]
            );
        }
    }
}
