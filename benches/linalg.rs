//! Solve benchmark (issue 21) on the executor `ARRAYFLOW_DEVICE` selects (`opencl[:N]`,
//! `wgpu[:N]`, `cpu`), one executor per process: `linalg::solve` of `B` random `N x N` f32
//! matrices against one right-hand side each (`b [B, N, 1]`), for each `BxN` of `LINALG_SOLVE`
//! (default `10000x8,1000x32,1x1024,1x2048,1x4096`). On the OpenCL and wgpu executors the small
//! batches run the batched kernels (`intrinsics/linalg/batched/`: one work-group per matrix) and
//! the single large matrices the blocked LU (`intrinsics/linalg/blocked/`; target on an H100:
//! 1 x 4096 >= 0.5x torch); on the CPU, faer per matrix over rayon. Each result is first checked: the residual `|A x - b|_inf /
//! (|A|_inf |x|_inf)` of 64 sampled matrices in f64 within `8 n 2^-23`.
//!
//! Timing as `benches/matmul.rs`: a warm-up, then `K` solves each recorded and `eval()`ed
//! (computed and waited for, no copy to the host), `K` chosen so a loop takes about 0.3 s
//! (`MATMUL_LOOP_SECONDS`), 5 loops, the median per call. The PyTorch peer is
//! `benches/peers/matmul.py` (its `solve` rows: `torch.linalg.solve` on the same shapes, with
//! `LINALG_SOLVE` read the same way); targets on an H100: 10000 x 8x8 at least 1.0x torch, 1 x
//! 4096x4096 at least 0.5x. `ARRAYFLOW_LINALG_GPU_BLOCKED=off` runs the large rows on the CPU instead, and
//! `ARRAYFLOW_LINALG_GPU_NB=8|32|64` sets the blocked LU's panel width, for comparisons.
//!
//! ```sh
//! ARRAYFLOW_DEVICE=opencl:1 cargo bench --bench linalg
//! ARRAYFLOW_DEVICE=wgpu LINALG_SOLVE=10000x8 cargo bench --bench linalg
//! ```
//!
//! Prints a table and one `JSON {...}` line per row.

mod common;

use arrayflow::{Array, Runtime, linalg};
use common::{env_or, lcg_values_f32, median_call_secs};

/// Checks the residual of 64 sampled matrices of the batch.
fn check(x: &[f32], a: &[f32], b: &[f32], bt: usize, n: usize) {
    let mut s = 12345u64;
    for _ in 0..64.min(bt) {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
        let t = (s >> 33) as usize % bt;
        let (am, xm, bm) = (
            &a[t * n * n..(t + 1) * n * n],
            &x[t * n..(t + 1) * n],
            &b[t * n..(t + 1) * n],
        );
        let (mut res, mut anorm) = (0.0f64, 0.0f64);
        for i in 0..n {
            let row = &am[i * n..(i + 1) * n];
            let ax: f64 = row.iter().zip(xm).map(|(p, q)| *p as f64 * *q as f64).sum();
            res = res.max((ax - bm[i] as f64).abs());
            anorm = anorm.max(row.iter().map(|v| v.abs() as f64).sum());
        }
        let xnorm = xm.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64));
        let rel = res / (anorm * xnorm).max(f64::MIN_POSITIVE);
        let bound = 8.0 * n as f64 * 2f64.powi(-23);
        assert!(
            rel <= bound,
            "solve {bt} x {n}: matrix {t} residual {rel:e} > {bound:e}"
        );
    }
}

fn main() {
    let backend = Runtime::backend();
    println!("executor: {}", Runtime::executor());
    let mut rows = Vec::new();
    for spec in env_or("LINALG_SOLVE", "10000x8,1000x32,1x1024,1x2048,1x4096").split(',') {
        let Some((bs, ns)) = spec.trim().split_once('x') else {
            continue;
        };
        let (bt, n): (usize, usize) = (bs.parse().unwrap_or(0), ns.parse().unwrap_or(0));
        if bt == 0 || n == 0 {
            continue;
        }
        let (x, y) = (
            lcg_values_f32(bt * n * n, 21 + n as u64),
            lcg_values_f32(bt * n, 22 + n as u64),
        );
        let (a, b) = (
            Array::from_slice(&x, &[bt, n, n]),
            Array::from_slice(&y, &[bt, n, 1]),
        );
        let sol = linalg::solve(&a, &b).to_vec().expect("solve");
        check(&sol, &x, &y, bt, n);
        let secs = median_call_secs(|| linalg::solve(&a, &b).eval().expect("eval"));
        rows.push((format!("{bt} x {n}x{n}"), bt, n, secs));
    }
    println!(
        "\n{:<8} {:>16} {:>12} {:>14}",
        "routine", "shape", "arrayflow", "GFLOP/s"
    );
    // 2/3 n^3 for the factors, 2 n^2 for the two triangular solves.
    let flops =
        |bt: usize, n: usize| bt as f64 * (2.0 / 3.0 * (n as f64).powi(3) + 2.0 * (n * n) as f64);
    for (shape, bt, n, s) in &rows {
        println!(
            "{:<8} {:>16} {:>9.3} ms {:>14.2}",
            "solve",
            shape,
            s * 1e3,
            flops(*bt, *n) / s / 1e9
        );
    }
    for (shape, bt, n, s) in &rows {
        println!(
            "JSON {{\"bench\": \"linalg\", \"backend\": \"{backend:?}\", \"row\": \"solve\", \"shape\": \"{shape}\", \"ms\": {:.6}, \"gflops\": {:.4}}}",
            s * 1e3,
            flops(*bt, *n) / s / 1e9
        );
    }
}
