#!/usr/bin/env python3
"""PyTorch peer of benches/matmul.rs: the same products on CUDA, fp32 with TF32 off
(torch.backends.cuda.matmul.allow_tf32 = False, cuBLAS's full-precision SGEMM):

- square: torch.matmul(a, b) of n x n f32 for each n of MATMUL_SIZES (default 1024,4096,8192)
- a^T b: torch.matmul(a.t(), b) at the first size (cuBLAS reads the transpose in place)
- batched: torch.bmm of MATMUL_BATCH (BxN, default 4096x64: 4096 products of 64 x 64)
- solve: torch.linalg.solve of B random N x N matrices against b [B, N, 1] for each BxN of
  LINALG_SOLVE (default 10000x8,1000x32,1x1024,1x2048,1x4096), the peer of benches/linalg.rs; checked by the
  residual |A x - b|_inf / (|A|_inf |x|_inf) of 64 sampled matrices within 8 n 2^-23

Each result is first checked against f64 dot products on 64 sampled entries (relative to
sum |a_ip b_pj|, within k * 2^-22). Timing as in benches/matmul.rs: a warm-up, K products each
followed by torch.cuda.synchronize() (arrayflow's eval() waits for each product), K chosen so a
loop takes ~0.3 s (MATMUL_LOOP_SECONDS), 5 loops, the median per product.

Prints a table and one `JSON {...}` line per row in the shape of benches/matmul.rs.
Run: python3 benches/peers/matmul.py  (needs PyTorch with CUDA).
"""

import json
import os
import statistics
import sys
import time


def fail(msg):
    print(f"matmul.py: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    import torch
except ImportError:
    fail("PyTorch is not installed; this peer needs PyTorch with CUDA")
if not torch.cuda.is_available():
    fail(f"CUDA is not available to PyTorch {torch.__version__}; run this on a machine with an NVIDIA GPU")

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
DEV = torch.device("cuda")


def check(what, c, a, b):
    """64 sampled entries of c (batched [B, m, n] or [m, n]) against f64 dot products."""
    g = torch.Generator().manual_seed(12345)
    c3, a3, b3 = (x if x.dim() == 3 else x.unsqueeze(0) for x in (c, a, b))
    bt, m, k = a3.shape
    n = b3.shape[2]
    for _ in range(64):
        t, i, j = (int(torch.randint(0, s, (1,), generator=g)) for s in (bt, m, n))
        row = a3[t, i, :].double()
        col = b3[t, :, j].double()
        want = float((row * col).sum())
        mag = float((row * col).abs().sum())
        got = float(c3[t, i, j])
        tol = k * 2.0**-22 * mag + 1e-30
        if abs(got - want) > tol:
            fail(f"{what}: c[{t}, {i}, {j}] = {got}, want {want} (tol {tol:e})")


def check_solve(bt, n, x, a, b):
    """The residual of 64 sampled matrices of a batched solve, in f64."""
    g = torch.Generator().manual_seed(12345)
    for _ in range(min(64, bt)):
        t = int(torch.randint(0, bt, (1,), generator=g))
        am, xm, bm = a[t].double(), x[t].double(), b[t].double()
        res = float((am @ xm - bm).abs().max())
        rel = res / max(float(am.abs().sum(1).max()) * float(xm.abs().max()), 1e-300)
        if rel > 8 * n * 2.0**-23:
            fail(f"solve {bt} x {n}: matrix {t} residual {rel:e}")


def median_time(f):
    budget = float(os.environ.get("MATMUL_LOOP_SECONDS", "0.3"))
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-7)
    k = max(1, min(10000, int(budget / one)))
    loops = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(k):
            f()
            torch.cuda.synchronize()
        loops.append((time.perf_counter() - t) / k)
    return statistics.median(loops)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, allow_tf32={torch.backends.cuda.matmul.allow_tf32}")
    rows = []
    sizes = [int(s) for s in os.environ.get("MATMUL_SIZES", "1024,4096,8192").split(",") if s.strip()]
    for idx, n in enumerate(sizes):
        a = torch.rand(n, n, device=DEV) * 2 - 1
        b = torch.rand(n, n, device=DEV) * 2 - 1
        check("square", torch.matmul(a, b).cpu(), a.cpu(), b.cpu())
        s = median_time(lambda: torch.matmul(a, b))
        rows.append(("square", f"{n}^3", 2.0 * n**3, s))
        if idx == 0:
            check("a^T b", torch.matmul(a.t(), b).cpu(), a.t().contiguous().cpu(), b.cpu())
            s = median_time(lambda: torch.matmul(a.t(), b))
            rows.append(("a^T b", f"{n}^3", 2.0 * n**3, s))
        del a, b
    batch = os.environ.get("MATMUL_BATCH", "4096x64")
    if "x" in batch:
        bt, n = (int(x) for x in batch.split("x"))
        if bt > 0 and n > 0:
            a = torch.rand(bt, n, n, device=DEV) * 2 - 1
            b = torch.rand(bt, n, n, device=DEV) * 2 - 1
            check("batched", torch.bmm(a, b).cpu(), a.cpu(), b.cpu())
            s = median_time(lambda: torch.bmm(a, b))
            rows.append(("batched", f"{bt} x {n}^3", 2.0 * bt * n**3, s))
    for spec in os.environ.get("LINALG_SOLVE", "10000x8,1000x32,1x1024,1x2048,1x4096").split(","):
        if "x" not in spec:
            continue
        bt, n = (int(x) for x in spec.strip().split("x"))
        if bt <= 0 or n <= 0:
            continue
        a = torch.rand(bt, n, n, device=DEV) * 2 - 1
        b = torch.rand(bt, n, 1, device=DEV) * 2 - 1
        check_solve(bt, n, torch.linalg.solve(a, b).cpu(), a.cpu(), b.cpu())
        s = median_time(lambda: torch.linalg.solve(a, b))
        rows.append(("solve", f"{bt} x {n}x{n}", bt * (2.0 / 3.0 * n**3 + 2.0 * n * n), s))
    print(f"\n{'product':<14} {'shape':>14} {'torch':>12} {'TFLOP/s':>10}")
    for name, shape, flops, s in rows:
        print(f"{name:<14} {shape:>14} {s * 1e3:>9.3f} ms {flops / s / 1e12:>10.2f}")
    for name, shape, flops, s in rows:
        print("JSON " + json.dumps({"bench": "matmul", "backend": "torch", "row": name, "shape": shape,
                                    "ms": round(s * 1e3, 6), "tflops": round(flops / s / 1e12, 4)}))


if __name__ == "__main__":
    main()
