#!/usr/bin/env python3
"""PyTorch peer of benches/gpu.rs: the same element-wise chain on CUDA,

    y = |sqrt(a*b + 1)*a - b| * 0.5 + a      (8 f32 ops; 12 n bytes: read a, b, write y)

for n = 2^20, 2^24, 2^27 (GPU_SIZES=20,24 overrides), four ways:

- torch eager: torch.abs(torch.sqrt(a*b+1)*a-b)*0.5+a (8 kernels, each through memory)
- torch.compile of the same function (compiled and warmed up first; dynamic=False, so one
  specialised kernel per size; TORCH_COMPILE_MODE sets the mode, default torch's default)
- copy: dst.copy_(src) of 1.5 n f32 (6 n bytes read + 6 n written = the chain's 12 n bytes)
- sum: a.sum() of the largest array (4 n bytes read)
- sum_axis0, sum_axis1: a.sum(0) and a.sum(1) of an N x N array, N = 8192 (GPU_AXIS_N
  overrides, 0 skips them; 4 N^2 bytes read)

Timing as in benches/gpu.rs: a warm-up, K iterations per loop with K chosen so a loop takes
~0.2 s (GPU_LOOP_SECONDS), 7 loops, the median per iteration. "sync": every iteration is followed
by torch.cuda.synchronize() (the structure of arrayflow's `eval()` loop, which waits for each
iteration); "stream": K iterations back to back, one synchronize (the device's throughput without
the per-iteration wait). Wall clock (time.perf_counter) around the synchronized loops.

Prints a table and one `JSON {...}` line per row in the shape of benches/gpu.rs, for
benches/peers/merge.py. Run: python3 benches/peers/chain.py  (needs PyTorch with CUDA).
"""

import json
import os
import statistics
import sys
import time

REPEATS = 7


def fail(msg):
    print(f"chain.py: {msg}", file=sys.stderr)
    sys.exit(2)


try:
    import torch
except ImportError:
    fail("PyTorch is not installed (python3 -c 'import torch' fails); this peer needs PyTorch with CUDA")

if not torch.cuda.is_available():
    fail(
        f"CUDA is not available to PyTorch {torch.__version__} "
        f"(torch.version.cuda={torch.version.cuda}); run this on a machine with an NVIDIA GPU"
    )


def chain(a, b):
    return torch.abs(torch.sqrt(a * b + 1) * a - b) * 0.5 + a


def time_loop(target, run, max_k=100_000):
    """Times run(k) (k iterations, synchronized at the end) as benches/gpu.rs does: warm-up (at
    least 3 single iterations and ~target/4), K from the median warm-up iteration, one correcting
    loop, then REPEATS timed loops. Returns the median/min/max seconds per iteration and K."""
    start = time.perf_counter()
    warm = []
    while len(warm) < 3 or time.perf_counter() - start < target / 4:
        t = time.perf_counter()
        run(1)
        warm.append(time.perf_counter() - t)
    per = statistics.median(warm)  # a slow first call (compile, allocation) does not count
    k = max(1, min(max_k, int(target / max(per, 1e-9))))
    t = time.perf_counter()
    run(k)  # corrects the estimate (a loop can run faster than single iterations)
    el = time.perf_counter() - t
    k = max(1, min(max_k, int(k * target / max(el, 1e-9))))
    per_iter = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        run(k)
        per_iter.append((time.perf_counter() - t) / k)
    per_iter.sort()
    return {"time_s": statistics.median(per_iter), "min_s": per_iter[0], "max_s": per_iter[-1], "k": k}


def sync_and_stream(target, step):
    """Times `step` (one iteration, asynchronous) both ways: synchronized after every iteration,
    and back to back with one synchronize."""
    sync = torch.cuda.synchronize

    def run_sync(k):
        for _ in range(k):
            step()
            sync()

    def run_stream(k):
        for _ in range(k):
            step()
        sync()

    return time_loop(target, run_sync), time_loop(target, run_stream)


def label(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def fmt_time(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.3f} ms"


def main():
    target = float(os.environ.get("GPU_LOOP_SECONDS", "0.2"))
    sizes_env = os.environ.get("GPU_SIZES", "").strip()
    sizes = [1 << int(p) for p in sizes_env.split(",")] if sizes_env else [1 << 20, 1 << 24, 1 << 27]
    mode = os.environ.get("TORCH_COMPILE_MODE") or None
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    props = torch.cuda.get_device_properties(dev)
    print("PyTorch peer: y = |sqrt(a*b + 1)*a - b| * 0.5 + a  (8 f32 ops, 2 inputs, 1 output)")
    print(
        f"torch {torch.__version__} (CUDA {torch.version.cuda}) | device: {name}, "
        f"{props.multi_processor_count} SMs, {props.total_memory >> 20} MiB | torch.compile mode: {mode or 'default'}"
    )
    print(
        f"each cell: K iterations per loop (~{target:.2f} s), {REPEATS} loops, median per iteration; "
        "sync = synchronize after each iteration, stream = one synchronize per loop"
    )
    print()

    compiled = torch.compile(chain, dynamic=False, mode=mode)
    gen = torch.Generator(device=dev)
    rows = []  # (impl, op, n, bytes, sync, stream, extra)

    for n in sizes:
        gen.manual_seed(n)
        a = torch.rand(n, device=dev, generator=gen) + 0.5  # [0.5, 1.5): non-zero, as chain.rs
        b = torch.rand(n, device=dev, generator=gen) + 0.5
        bytes_ = 12 * n

        # Compile first (its time is not measured), then check against eager.
        t = time.perf_counter()
        y_c = compiled(a, b)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t
        y_e = chain(a, b)
        err = ((y_c - y_e).abs() / y_e.abs()).max().item()
        del y_c, y_e

        s, st = sync_and_stream(target, lambda: chain(a, b))
        rows.append(("torch-eager", "chain", n, bytes_, s, st, {}))
        print(f"{label(n):>5}: eager   {fmt_time(s['time_s'])} (stream {fmt_time(st['time_s'])})")
        s, st = sync_and_stream(target, lambda: compiled(a, b))
        rows.append(("torch-compile", "chain", n, bytes_, s, st, {"max_rel_err_vs_eager": err, "compile_s": compile_s}))
        print(
            f"       compile {fmt_time(s['time_s'])} (stream {fmt_time(st['time_s'])}); first call (compile) "
            f"{compile_s:.2f} s, max rel. diff vs eager {err:.1e}"
        )
        del a, b

        m = n * 3 // 2
        src = torch.rand(m, device=dev, generator=gen)
        dst = torch.empty_like(src)
        s, st = sync_and_stream(target, lambda: dst.copy_(src))
        rows.append(("copy", "copy", n, bytes_, s, st, {}))
        print(f"       copy    {fmt_time(s['time_s'])} (stream {fmt_time(st['time_s'])})")
        del src, dst
        torch.cuda.empty_cache()

    n = max(sizes)
    gen.manual_seed(n)
    a = torch.rand(n, device=dev, generator=gen) + 0.5
    exact = a.double().sum().item()
    err = abs(a.sum().item() - exact) / exact
    s, st = sync_and_stream(target, lambda: a.sum())
    rows.append(("torch-eager", "sum", n, 4 * n, s, st, {"max_rel_err": err}))
    print(f"sum {label(n)}: {fmt_time(s['time_s'])} (stream {fmt_time(st['time_s'])}), rel. diff vs f64 {err:.1e}")
    del a

    # Axis sums of an N x N array, as benches/gpu.rs (GPU_AXIS_N, default 8192; 0 skips them).
    na = int(os.environ.get("GPU_AXIS_N", "8192") or 0)
    if na > 0:
        gen.manual_seed(na)
        a = torch.rand(na, na, device=dev, generator=gen) + 0.5
        for axis in (0, 1):
            exact = a.double().sum(axis)
            err = ((a.sum(axis).double() - exact).abs() / exact).max().item()
            s, st = sync_and_stream(target, lambda: a.sum(axis))
            rows.append(("torch-eager", f"sum_axis{axis}", na * na, 4 * na * na, s, st, {"max_rel_err": err}))
            print(
                f"sum_axis({axis}) {na}x{na}: {fmt_time(s['time_s'])} = {4 * na * na / s['time_s'] / 1e9:.1f} GB/s "
                f"(stream {fmt_time(st['time_s'])}), rel. diff vs f64 {err:.1e}"
            )
        del a
    print()

    for imp, op, n, bytes_, s, st, extra in rows:
        d = {
            "bench": "gpu",
            "impl": imp,
            "backend": "cuda",
            "device": name,
            "op": op,
            "n": n,
            "bytes": bytes_,
            "time_s": s["time_s"],
            "gbs": bytes_ / s["time_s"] / 1e9,
            "min_s": s["min_s"],
            "max_s": s["max_s"],
            "k": s["k"],
            "repeats": REPEATS,
            "stream_time_s": st["time_s"],
            "stream_gbs": bytes_ / st["time_s"] / 1e9,
            **extra,
        }
        print("JSON " + json.dumps(d))
    print()

    hdr = f"{'impl':>13} | {'op':>5} | {'n':>6} | {'time (sync)':>12} | {'GB/s sync':>9} | {'time (stream)':>13} | {'GB/s stream':>11}"
    print(hdr)
    print("-" * len(hdr))
    for imp, op, n, bytes_, s, st, _ in rows:
        print(
            f"{imp:>13} | {op:>5} | {label(n):>6} | {fmt_time(s['time_s']):>12} | {bytes_ / s['time_s'] / 1e9:>9.1f} | "
            f"{fmt_time(st['time_s']):>13} | {bytes_ / st['time_s'] / 1e9:>11.1f}"
        )
    print(f"(device: {name}; chain and copy bytes = 12 n, sum bytes = 4 n)")


if __name__ == "__main__":
    main()
