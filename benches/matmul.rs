//! Matrix-product benchmark (issue 21) on the executor `ARRAYFLOW_DEVICE` selects (`opencl[:N]`,
//! `wgpu[:N]`, `cpu`), one executor per process. Measured, each product first checked against
//! f64 dot products of the inputs on 64 sampled entries (relative to `sum |a_ip b_pj|`, within
//! `k * 2^-22`):
//!
//! - **square f32** `n x n x n` for each `n` of `MATMUL_SIZES` (default `1024,4096,8192` on a
//!   device, `512,1024` on the CPU);
//! - **batched f32** `MATMUL_BATCH` (`BxN`, default `4096x64`: 4096 products of 64 x 64; `0`
//!   skips it), one `[B, N, N] @ [B, N, N]` call;
//! - **transposed** `a.transpose().matmul(&b)` at the first size (read in place: no copy);
//! - on the CPU, **2048^3 f32 against `matrixmultiply::sgemm` called directly** in the same run
//!   (`MATMUL_CPU_DIRECT=2048`; `0` skips it); target arrayflow >= 0.9x.
//!
//! Timing: a warm-up, then `K` products each recorded and `eval()`ed (computed and waited for, no
//! copy to the host), `K` chosen so a loop takes about 0.3 s (`MATMUL_LOOP_SECONDS`), 5 loops, the
//! median per product; TFLOP/s = 2 m n k / time. The PyTorch peer (`benches/peers/matmul.py`,
//! `torch.matmul` fp32 with TF32 off, `torch.bmm`) prints the same rows; the lead compares them
//! on an H100 (targets: OpenCL >= 0.8x, wgpu >= 0.7x at 4096^3 and 8192^3, batched >= 0.8x).
//!
//! ```sh
//! cargo bench --bench matmul                               # CPU
//! ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench matmul     # a GPU through OpenCL
//! ARRAYFLOW_DEVICE=wgpu MATMUL_SIZES=4096 cargo bench --bench matmul
//! ```
//!
//! Prints a table and one `JSON {...}` line per row.

mod common;

use arrayflow::{Array, Backend, Runtime};
use common::{env_or, lcg_values_f32, median_call_secs};

/// Checks 64 sampled entries of batch item `t` of `c` (row-major `[.., m, n]`) against f64 dot
/// products; `a_at(t, i, p)` and `b_at(t, p, j)` read the inputs.
fn check(
    what: &str,
    c: &[f32],
    (batches, m, k, n): (usize, usize, usize, usize),
    a_at: impl Fn(usize, usize, usize) -> f32,
    b_at: impl Fn(usize, usize, usize) -> f32,
) {
    let mut s = 12345u64;
    for _ in 0..64 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
        let (t, i, j) = (
            (s >> 33) as usize % batches,
            (s >> 13) as usize % m,
            (s >> 43) as usize % n,
        );
        let (mut want, mut mag) = (0.0f64, 0.0f64);
        for p in 0..k {
            let x = a_at(t, i, p) as f64 * b_at(t, p, j) as f64;
            want += x;
            mag += x.abs();
        }
        let got = c[(t * m + i) * n + j] as f64;
        let tol = k as f64 * 2f64.powi(-22) * mag + 1e-30;
        assert!(
            (got - want).abs() <= tol,
            "{what}: c[{t}, {i}, {j}] = {got}, want {want} (tol {tol:e})"
        );
    }
}

struct Row {
    name: String,
    shape: String,
    flops: f64,
    secs: f64,
    peer: Option<(&'static str, f64)>,
}

fn main() {
    let backend = Runtime::backend();
    let on_device = backend != Backend::Cpu;
    println!("executor: {}", Runtime::executor());
    let default_sizes = if on_device {
        "1024,4096,8192"
    } else {
        "512,1024"
    };
    let sizes: Vec<usize> = env_or("MATMUL_SIZES", default_sizes)
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut rows: Vec<Row> = Vec::new();

    for (idx, &n) in sizes.iter().enumerate() {
        let (x, y) = (
            lcg_values_f32(n * n, 1 + n as u64),
            lcg_values_f32(n * n, 2 + n as u64),
        );
        let (a, b) = (
            Array::from_slice(&x, &[n, n]),
            Array::from_slice(&y, &[n, n]),
        );
        let c = a.matmul(&b).to_vec().expect("matmul");
        check(
            "square",
            &c,
            (1, n, n, n),
            |_, i, p| x[i * n + p],
            |_, p, j| y[p * n + j],
        );
        let secs = median_call_secs(|| a.matmul(&b).eval().expect("eval"));
        let flops = 2.0 * (n as f64).powi(3);
        rows.push(Row {
            name: "square".into(),
            shape: format!("{n}^3"),
            flops,
            secs,
            peer: None,
        });
        if idx == 0 {
            let c = a.transpose().matmul(&b).to_vec().expect("matmul");
            check(
                "a^T b",
                &c,
                (1, n, n, n),
                |_, i, p| x[p * n + i],
                |_, p, j| y[p * n + j],
            );
            let secs = median_call_secs(|| a.transpose().matmul(&b).eval().expect("eval"));
            rows.push(Row {
                name: "a^T b".into(),
                shape: format!("{n}^3"),
                flops,
                secs,
                peer: None,
            });
        }
    }

    let batch = env_or("MATMUL_BATCH", "4096x64");
    if let Some((bs, ns)) = batch.split_once('x') {
        let (bt, n): (usize, usize) = (bs.parse().unwrap_or(0), ns.parse().unwrap_or(0));
        if bt > 0 && n > 0 {
            let (x, y) = (lcg_values_f32(bt * n * n, 7), lcg_values_f32(bt * n * n, 8));
            let (a, b) = (
                Array::from_slice(&x, &[bt, n, n]),
                Array::from_slice(&y, &[bt, n, n]),
            );
            let c = a.matmul(&b).to_vec().expect("matmul");
            let mm = n * n;
            check(
                "batched",
                &c,
                (bt, n, n, n),
                |t, i, p| x[t * mm + i * n + p],
                |t, p, j| y[t * mm + p * n + j],
            );
            let secs = median_call_secs(|| a.matmul(&b).eval().expect("eval"));
            rows.push(Row {
                name: "batched".into(),
                shape: format!("{bt} x {n}^3"),
                flops: 2.0 * bt as f64 * (n as f64).powi(3),
                secs,
                peer: None,
            });
        }
    }

    let direct: usize = env_or("MATMUL_CPU_DIRECT", if on_device { "0" } else { "2048" })
        .parse()
        .unwrap_or(0);
    if direct > 0 {
        let n = direct;
        let (x, y) = (lcg_values_f32(n * n, 11), lcg_values_f32(n * n, 12));
        let (a, b) = (
            Array::from_slice(&x, &[n, n]),
            Array::from_slice(&y, &[n, n]),
        );
        let c = a.matmul(&b).to_vec().expect("matmul");
        check(
            "cpu square",
            &c,
            (1, n, n, n),
            |_, i, p| x[i * n + p],
            |_, p, j| y[p * n + j],
        );
        let mut out = vec![0f32; n * n];
        let sgemm = |out: &mut [f32]| {
            // SAFETY: x, y and out are n x n row-major.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    n,
                    n,
                    1.0,
                    x.as_ptr(),
                    n as isize,
                    1,
                    y.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    out.as_mut_ptr(),
                    n as isize,
                    1,
                )
            }
        };
        sgemm(&mut out);
        check(
            "sgemm direct",
            &out,
            (1, n, n, n),
            |_, i, p| x[i * n + p],
            |_, p, j| y[p * n + j],
        );
        let peer = median_call_secs(|| sgemm(&mut out));
        let secs = median_call_secs(|| a.matmul(&b).eval().expect("eval"));
        rows.push(Row {
            name: "cpu vs sgemm".into(),
            shape: format!("{n}^3"),
            flops: 2.0 * (n as f64).powi(3),
            secs,
            peer: Some(("matrixmultiply::sgemm", peer)),
        });
    }

    println!(
        "\n{:<14} {:>14} {:>12} {:>10} {:>24} {:>10}",
        "product", "shape", "arrayflow", "TFLOP/s", "peer", "af / peer"
    );
    for r in &rows {
        let (peer, ratio) = match r.peer {
            Some((name, s)) => (
                format!("{name} {:.3} ms", s * 1e3),
                format!("{:.2}x", s / r.secs),
            ),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<14} {:>14} {:>9.3} ms {:>10.2} {:>24} {:>10}",
            r.name,
            r.shape,
            r.secs * 1e3,
            r.flops / r.secs / 1e12,
            peer,
            ratio
        );
    }
    for r in &rows {
        println!(
            "JSON {{\"bench\": \"matmul\", \"backend\": \"{backend:?}\", \"row\": \"{}\", \"shape\": \"{}\", \"ms\": {:.6}, \"tflops\": {:.4}{}}}",
            r.name,
            r.shape,
            r.secs * 1e3,
            r.flops / r.secs / 1e12,
            r.peer
                .map(|(n, s)| format!(", \"peer\": \"{n}\", \"peer_ms\": {:.6}", s * 1e3))
                .unwrap_or_default()
        );
    }
}
