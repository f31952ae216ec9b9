//! Element-wise function benchmark: the device time of one function over 2^24 f32 (`FUNC_LOG2`
//! overrides) on the executor `ARRAYFLOW_DEVICE` selects, next to the cheapest device copy
//! arrayflow has (`&x + 0.0`: one kernel reading n and writing n elements). A function whose
//! kernel takes about the copy's time is bound by memory; the ratio over the copy is how many
//! times over that bound its arithmetic is. Rows: `exp`, `ln`, `sqrt`, `x / y`, `erf`, `cos` and
//! `sin` (of `[0, 2 pi)` and of `[-100, 100]`), `tanh`, `pow`, the Black-Scholes call price of
//! `benches/workloads/af.rs` (three inputs, one output) and two of its parts, normal and uniform
//! draws (Philox).
//!
//! Every function's result is checked before it is timed: a sample of 4096 elements against the
//! same function in f64 on the host, within 32 ulp of the f32 result (an ulp of 1 where the value
//! is below 1 in magnitude, for `sin`/`cos` near their zeros; of the spot for a price); draws by
//! their mean and variance (within five standard errors). Timing: a warm-up, then `FUNC_REPEATS` (default 50) evaluations, each waited for;
//! with `ARRAYFLOW_KERNEL_TIMES=1` the device time per evaluation (the sum over the run divided
//! by the evaluations), otherwise the host's median wall time per evaluation. `FUNC_ONLY=exp,erf`
//! keeps the rows whose names start with one of those (and the copy).
//!
//! ```sh
//! ARRAYFLOW_KERNEL_TIMES=1 ARRAYFLOW_DEVICE=opencl cargo bench --bench functions
//! ARRAYFLOW_KERNEL_TIMES=1 ARRAYFLOW_DEVICE=wgpu cargo bench --bench functions
//! ```

mod common;
use common::{env_usize, random_vec};

use arrayflow::{Array, Rng, Runtime};
use std::time::Instant;

/// One row: its name, how to make it from the inputs, and the f64 reference of one element
/// (`None`: checked by moments instead).
struct Case {
    name: &'static str,
    make: fn(&Inputs) -> Array<f32>,
    reference: Option<fn(&Inputs, usize) -> f64>,
}

struct Inputs {
    /// In (0.5, 4): the argument of exp, ln, sqrt, erf, tanh, pow and a divisor.
    a: Vec<f32>,
    /// In (-4, 4).
    b: Vec<f32>,
    /// In [0, 2 pi).
    angle: Vec<f32>,
    /// In (-100, 100).
    wide: Vec<f32>,
    arrays: [Array<f32>; 4],
    /// Black-Scholes' spot, strike and expiry.
    bs: [Vec<f32>; 3],
    bs_arrays: [Array<f32>; 3],
}

const BS_RATE: f32 = 0.02;
const BS_VOL: f32 = 0.30;

fn cnd(x: &Array<f32>) -> Array<f32> {
    ((x * std::f32::consts::FRAC_1_SQRT_2).erf() + 1.0) * 0.5
}

fn black_scholes(s: &Array<f32>, x: &Array<f32>, t: &Array<f32>) -> Array<f32> {
    let (r, v) = (BS_RATE, BS_VOL);
    let sqrt_t = t.sqrt();
    let d1 = ((s / x).ln() + (t * (r + 0.5 * v * v))) / (&sqrt_t * v);
    let d2 = &d1 - &sqrt_t * v;
    let disc = x * (t * -r).exp();
    s * cnd(&d1) - &disc * cnd(&d2)
}

fn black_scholes_f64(s: f64, x: f64, t: f64) -> f64 {
    let (r, v) = (BS_RATE as f64, BS_VOL as f64);
    let cnd = |z: f64| 0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2));
    let d1 = ((s / x).ln() + t * (r + 0.5 * v * v)) / (t.sqrt() * v);
    let d2 = d1 - t.sqrt() * v;
    s * cnd(d1) - x * (-r * t).exp() * cnd(d2)
}

fn cases() -> Vec<Case> {
    fn f(inp: &Inputs, i: usize) -> f64 {
        inp.a[i] as f64
    }
    vec![
        Case {
            name: "copy (x + 0)",
            make: |i| &i.arrays[0] + 0.0,
            reference: Some(f),
        },
        Case {
            name: "exp",
            make: |i| i.arrays[1].exp(),
            reference: Some(|i, k| (i.b[k] as f64).exp()),
        },
        Case {
            name: "ln",
            make: |i| i.arrays[0].ln(),
            reference: Some(|i, k| f(i, k).ln()),
        },
        Case {
            name: "sqrt",
            make: |i| i.arrays[0].sqrt(),
            reference: Some(|i, k| f(i, k).sqrt()),
        },
        Case {
            name: "x / y",
            make: |i| &i.arrays[1] / &i.arrays[0],
            reference: Some(|i, k| i.b[k] as f64 / f(i, k)),
        },
        Case {
            name: "erf",
            make: |i| i.arrays[1].erf(),
            reference: Some(|i, k| libm::erf(i.b[k] as f64)),
        },
        Case {
            name: "tanh",
            make: |i| i.arrays[1].tanh(),
            reference: Some(|i, k| (i.b[k] as f64).tanh()),
        },
        Case {
            name: "pow(x, y)",
            make: |i| i.arrays[0].pow(&i.arrays[1]),
            reference: Some(|i, k| f(i, k).powf(i.b[k] as f64)),
        },
        Case {
            name: "cos [0, 2pi)",
            make: |i| i.arrays[2].cos(),
            reference: Some(|i, k| (i.angle[k] as f64).cos()),
        },
        Case {
            name: "sin [0, 2pi)",
            make: |i| i.arrays[2].sin(),
            reference: Some(|i, k| (i.angle[k] as f64).sin()),
        },
        Case {
            name: "cos (-100, 100)",
            make: |i| i.arrays[3].cos(),
            reference: Some(|i, k| (i.wide[k] as f64).cos()),
        },
        Case {
            name: "black-scholes call",
            make: |i| black_scholes(&i.bs_arrays[0], &i.bs_arrays[1], &i.bs_arrays[2]),
            reference: Some(|i, k| {
                black_scholes_f64(i.bs[0][k] as f64, i.bs[1][k] as f64, i.bs[2][k] as f64)
            }),
        },
        // The Black-Scholes kernel's parts: its divisions, d1, and the call without `cnd`.
        Case {
            name: "bs part: x / y / y",
            make: |i| &(&i.arrays[1] / &i.arrays[0]) / &i.arrays[0],
            reference: Some(|i, k| i.b[k] as f64 / f(i, k) / f(i, k)),
        },
        Case {
            name: "bs part: d1",
            make: |i| {
                let (s, x, t) = (&i.bs_arrays[0], &i.bs_arrays[1], &i.bs_arrays[2]);
                ((s / x).ln() + (t * (BS_RATE + 0.5 * BS_VOL * BS_VOL))) / (t.sqrt() * BS_VOL)
            },
            reference: Some(|i, k| {
                let (s, x, t) = (i.bs[0][k] as f64, i.bs[1][k] as f64, i.bs[2][k] as f64);
                let (r, v) = (BS_RATE as f64, BS_VOL as f64);
                ((s / x).ln() + t * (r + 0.5 * v * v)) / (t.sqrt() * v)
            }),
        },
        Case {
            name: "normal (Philox)",
            make: |i| Rng::new(7).normal::<f32>(&[i.a.len()]),
            reference: None,
        },
        Case {
            name: "uniform (Philox)",
            make: |i| Rng::new(7).uniform::<f32>(&[i.a.len()]) * 2.0 - 1.0,
            reference: None,
        },
    ]
}

/// Checks a sample of `got` against `reference` (see the module comment), or a draw's moments.
fn check(case: &Case, inp: &Inputs, got: &[f32]) {
    let n = got.len();
    let Some(reference) = case.reference else {
        let (m, v) = got.iter().fold((0.0f64, 0.0f64), |(m, v), &x| {
            (m + x as f64, v + (x as f64) * (x as f64))
        });
        let (m, v) = (m / n as f64, v / n as f64);
        let var: f64 = if case.name.starts_with("normal") {
            1.0
        } else {
            1.0 / 3.0
        };
        // Five standard errors of each moment (a normal's sample variance has variance 2 / n).
        let se = 5.0 / (n as f64).sqrt();
        assert!(
            m.abs() < se * var.sqrt() && (v - var).abs() < se * 2.0f64.sqrt(),
            "{}: mean {m}, variance {v}",
            case.name
        );
        return;
    };
    let mut worst = 0.0f64;
    for k in (0..n).step_by((n / 4096).max(1)) {
        let want = reference(inp, k);
        let g = got[k] as f64;
        // A price is a difference of terms as large as the spot: its ulp is the spot's.
        let scale = if case.name.starts_with("black") {
            inp.bs[0][k] as f64
        } else {
            1.0
        };
        let ulp = (want.abs().max(scale) as f32 * f32::EPSILON) as f64;
        let err = (g - want).abs() / ulp.max(f64::MIN_POSITIVE);
        assert!(
            err <= 32.0,
            "{}: element {k} is {g}, f64 gives {want} ({err:.1} ulp)",
            case.name
        );
        worst = worst.max(err);
    }
    println!("  checked {}: largest error {worst:.2} ulp", case.name);
}

fn main() {
    common::init_log();
    let n = 1usize << env_usize("FUNC_LOG2", 24);
    let repeats = env_usize("FUNC_REPEATS", 50);
    let a = random_vec(n, 1, 0.5, 4.0);
    let b = random_vec(n, 2, -4.0, 4.0);
    let angle = random_vec(n, 3, 0.0, std::f32::consts::TAU)
        .into_iter()
        .map(|x| x.min(std::f32::consts::TAU.next_down()))
        .collect::<Vec<_>>();
    let wide = random_vec(n, 4, -100.0, 100.0);
    let bs = [
        random_vec(n, 5, 5.0, 30.0),
        random_vec(n, 6, 1.0, 100.0),
        random_vec(n, 7, 0.25, 10.0),
    ];
    let up = |v: &Vec<f32>| {
        let x = Array::from_slice(v, &[n]);
        x.eval().unwrap();
        x
    };
    let arrays = [up(&a), up(&b), up(&angle), up(&wide)];
    let bs_arrays = [up(&bs[0]), up(&bs[1]), up(&bs[2])];
    let inp = Inputs {
        a,
        b,
        angle,
        wide,
        arrays,
        bs,
        bs_arrays,
    };
    println!(
        "element-wise functions over {n} f32 on {} ({} evaluations each)",
        Runtime::executor(),
        repeats
    );
    let only = std::env::var("FUNC_ONLY").unwrap_or_default();
    let wanted = |name: &str| {
        name.starts_with("copy")
            || only.is_empty()
            || only.split(',').any(|o| name.starts_with(o.trim()))
    };
    let mut rows = Vec::new();
    for case in cases().into_iter().filter(|c| wanted(c.name)) {
        let y = (case.make)(&inp);
        check(&case, &inp, &y.to_vec().unwrap());
        let _ = Runtime::take_kernel_times();
        let mut wall = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let t = Instant::now();
            (case.make)(&inp).eval().unwrap();
            wall.push(t.elapsed().as_secs_f64());
        }
        wall.sort_by(f64::total_cmp);
        let times = Runtime::take_kernel_times();
        let (ns, launches) = times
            .iter()
            .fold((0u64, 0u64), |(s, l), t| (s + t.device_ns, l + t.launches));
        let device = (launches > 0).then(|| ns as f64 / repeats as f64 / 1e3);
        rows.push((case.name, wall[repeats / 2] * 1e6, device, launches));
    }
    let copy = rows[0].2.unwrap_or(rows[0].1);
    println!("\n| function | host wall per eval | device per eval | launches per eval | x copy |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, wall, device, launches) in &rows {
        let t = device.unwrap_or(*wall);
        println!(
            "| {name} | {wall:.1} us | {} | {:.1} | {:.2}x |",
            device.map_or("-".into(), |d| format!("{d:.1} us")),
            *launches as f64 / repeats as f64,
            t / copy
        );
    }
}
