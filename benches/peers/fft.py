#!/usr/bin/env python3
"""PyTorch peer of benches/fft.rs's GPU part: the same transforms with cuFFT on CUDA.

- fft c64 [2^FFT_GPU_LOG2] (default 22): torch.fft.fft of one complex64 line
- fft c64 [FFT_GPU_BATCH, FFT_ROW] (default 16384 x 1024): torch.fft.fft along the last axis
- rfft f32 [FFT_GPU_BATCH, FFT_ROW]: torch.fft.rfft along the last axis
- the issue-22 targets too: fft c64 [2^24], fft2 c64 [4096, 4096], rfft f32 [16384, 4096]
  (FFT_TARGETS=0 skips them)
- a prime length: fft c64 [FFT_PRIME_BATCH, FFT_PRIME] (default 64 x 100003; FFT_PRIME=0 skips it)

Each result is first checked against numpy.fft in f64 on 4 sampled lines (the error's 2-norm
within 4 log2(n) 2^-23 of the line's). Timing: a warm-up, then 7 loops of K calls timed with
CUDA events (K chosen so a loop takes about FFT_LOOP_SECONDS, default 0.3 s); the median per
call. cuFFT's plan cache is warm after the warm-up, as arrayflow's program cache is.

Prints a table and one `JSON {...}` line per row in the shape of benches/fft.rs.
Run: python3 benches/peers/fft.py  (needs PyTorch with CUDA, and NumPy).
"""

import json
import math
import os
import statistics
import sys


def fail(msg):
    print(f"fft.py: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    import numpy as np
    import torch
except ImportError as e:
    fail(f"{e}; this peer needs PyTorch with CUDA and NumPy")
if not torch.cuda.is_available():
    fail(f"CUDA is not available to PyTorch {torch.__version__}; run this on a machine with an NVIDIA GPU")
DEV = torch.device("cuda")


def env_int(k, d):
    return int(os.environ.get(k, d))


def check(what, got, x, op):
    """4 sampled lines of `got` (the last axis) against numpy in f64."""
    g = got.reshape(-1, got.shape[-1]).cpu().numpy().astype(np.complex128)
    xs = x.reshape(-1, x.shape[-1]).cpu().numpy()
    n = x.shape[-1]
    for i in sorted({0, g.shape[0] // 3, g.shape[0] // 2, g.shape[0] - 1}):
        want = op(xs[i].astype(np.complex128 if np.iscomplexobj(xs) else np.float64))
        err = np.linalg.norm(g[i] - want)
        tol = 4 * max(1.0, math.log2(n)) * 2.0**-23 * np.linalg.norm(want) + 1e-30
        if err > tol:
            fail(f"{what}: line {i}: error {err:e} > {tol:e}")


def median_time(f):
    """Median seconds per call over 7 loops of K calls (CUDA events)."""
    f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    f()
    end.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(end) / 1e3, 1e-6)
    k = max(1, int(float(os.environ.get("FFT_LOOP_SECONDS", "0.3")) / one))
    loops = []
    for _ in range(7):
        start.record()
        for _ in range(k):
            f()
        end.record()
        torch.cuda.synchronize()
        loops.append(start.elapsed_time(end) / 1e3 / k)
    return statistics.median(loops)


def cdata(shape, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    re = torch.rand(shape, generator=g) * 2 - 1
    im = torch.rand(shape, generator=g) * 2 - 1
    return torch.complex(re, im).to(DEV)


def rdata(shape, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.rand(shape, generator=g) * 2 - 1).to(DEV)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cuFFT {torch.backends.cuda.cufft_plan_cache.max_size} cached plans")
    rows = []
    n = 1 << env_int("FFT_GPU_LOG2", 22)
    b, r = env_int("FFT_GPU_BATCH", 16384), env_int("FFT_ROW", 1024)
    cases = [
        ("fft c64", f"[{n}]", cdata((n,), 3), torch.fft.fft, np.fft.fft),
        ("fft c64", f"[{b}, {r}]", cdata((b, r), 9), torch.fft.fft, np.fft.fft),
        ("rfft f32", f"[{b}, {r}]", rdata((b, r), 13), torch.fft.rfft, np.fft.rfft),
    ]
    if os.environ.get("FFT_TARGETS", "1") != "0":
        cases += [
            ("fft c64", "[16777216]", cdata((1 << 24,), 21), torch.fft.fft, np.fft.fft),
            ("fft2 c64", "[4096, 4096]", cdata((4096, 4096), 23), torch.fft.fft2, None),
            ("rfft f32", "[16384, 4096]", rdata((16384, 4096), 25), torch.fft.rfft, np.fft.rfft),
        ]
    p, pb = env_int("FFT_PRIME", 100003), env_int("FFT_PRIME_BATCH", 64)
    if p != 0:
        cases.append(("fft c64", f"[{pb}, {p}]", cdata((pb, p), 29), torch.fft.fft, np.fft.fft))
    for name, shape, x, op, ref in cases:
        y = op(x)
        if ref is not None:
            check(f"{name} {shape}", y, x, ref)
        s = median_time(lambda: op(x))
        rows.append((name, shape, s, x.numel() * x.element_size()))
        del y
    print(f"\n{'op':<14} {'size':>14} {'torch':>12} {'GB/s (in+out)':>14}")
    for name, shape, s, nbytes in rows:
        out = nbytes * (2 if name.startswith("rfft") else 1)
        print(f"{name:<14} {shape:>14} {s * 1e3:>9.3f} ms {(nbytes + out) / s / 1e9:>14.1f}")
    for name, shape, s, _ in rows:
        print("JSON " + json.dumps({"bench": "fft", "backend": "torch", "op": name, "size": shape,
                                    "peer": "torch.fft (cuFFT)", "peer_s": s,
                                    "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
