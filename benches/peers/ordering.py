"""PyTorch peers for the ordering, scan, counting and axis-reduction benches (issue 20).

Prints one `PEER {json}` line per measure, on the first CUDA device, with the same sizes as
`benches/sort.rs`, `benches/scan.rs`, `benches/counting.rs` and `benches/gpu.rs`'s axis sums:
sort / argsort of 2^26 f32, topk(100) of 2^24, cumsum of 2^27 f32 and a device copy of it,
histc of 2^27 values into 256 bins, index_add_ of 2^24 values into 2^16 bins and of 2^23 rows
of 2 into 8 rows, and sum over
axis 0 / axis 1 of an 8192 x 8192 f32 array. Each figure is the median of 20 timed runs (CUDA
events) after 3 warm-ups, on random data (never zeros).

    python3 benches/peers/ordering.py
"""

import json
import statistics

import torch


def timed(fn, repeats=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)  # microseconds
    return statistics.median(times)


def main():
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    g = torch.Generator(device=dev).manual_seed(7)
    rows = []

    def row(measure, n, us, nbytes=None):
        r = {"measure": measure, "n": n, "us": round(us, 2), "device": name}
        if nbytes:
            r["GBps"] = round(nbytes / us / 1e3, 1)
        rows.append(r)
        print("PEER " + json.dumps(r), flush=True)

    n = 1 << 26
    keys = (torch.rand(n, device=dev, generator=g) * 2e6 - 1e6).float()
    row("torch.sort f32", n, timed(lambda: torch.sort(keys)))
    row("torch.sort stable f32", n, timed(lambda: torch.sort(keys, stable=True)))
    row("torch.argsort stable f32", n, timed(lambda: torch.argsort(keys, stable=True)))
    del keys

    n = 1 << 24
    x = torch.rand(n, device=dev, generator=g) * 2e6 - 1e6
    row("torch.topk(100)", n, timed(lambda: torch.topk(x, 100)))
    del x

    n = 1 << 27
    x = torch.rand(n, device=dev, generator=g) * 2 - 1
    y = torch.empty_like(x)
    row("torch.cumsum f32", n, timed(lambda: torch.cumsum(x, 0, out=y)), 8 * n)
    row("device copy f32", n, timed(lambda: y.copy_(x)), 8 * n)
    h = torch.rand(n, device=dev, generator=g) * 1.1 - 0.05
    row("torch.histc 256 bins", n, timed(lambda: torch.histc(h, 256, 0.0, 1.0)), 4 * n)
    del x, y, h

    n = 1 << 24
    idx = torch.randint(0, 1 << 16, (n,), device=dev, generator=g)
    vals = torch.rand(n, device=dev, generator=g) * 2 - 1
    base = torch.zeros(1 << 16, device=dev)
    row("index_add_ 2^16 bins", n, timed(lambda: base.clone().index_add_(0, idx, vals)))
    del idx, vals

    # k-means' shape: 2^23 rows of 2 into 8 rows (benches/counting.rs "scatter_add into 8 x 2").
    n = 1 << 23
    idx = torch.randint(0, 8, (n,), device=dev, generator=g)
    vals = torch.rand(n, 2, device=dev, generator=g) * 2 - 1
    base = torch.zeros(8, 2, device=dev)
    row("index_add_ 8 x 2", n, timed(lambda: base.clone().index_add_(0, idx, vals)))
    del idx, vals

    a = torch.rand(8192, 8192, device=dev, generator=g) + 0.5
    row("sum(0) 8192^2 f32", 8192 * 8192, timed(lambda: a.sum(0)), 4 * 8192 * 8192)
    row("sum(1) 8192^2 f32", 8192 * 8192, timed(lambda: a.sum(1)), 4 * 8192 * 8192)


if __name__ == "__main__":
    main()
