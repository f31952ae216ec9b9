#!/usr/bin/env python3
"""PyTorch peer of benches/workloads.rs on a GPU: the same programs, at the same sizes, the way a
PyTorch user writes them, each run eagerly and through torch.compile (default mode, and
mode="reduce-overhead" where it applies), then a table next to arrayflow's times.

Each program does what arrayflow's does: inputs start on the host (uploaded every call), results
end on the host (`.cpu()` / `.item()`), so every figure covers the same work. fp32 matmuls run
without TF32 (as arrayflow computes in full f32). Each peer's result is checked before timing
(analytic Monte-Carlo price, softmax rows summing to one, against numpy in f64 elsewhere).

Run after the Rust bench wrote its JSON lines:
    WORKLOADS_GPU=1 WORKLOADS_JSON=/tmp/af.json <workloads bench binary>
    python3 benches/peers/workloads.py /tmp/af.json [more.json ...]
Each JSON file is one arrayflow executor (its label is the file's stem); times are seconds.
"""

import json
import math
import os
import statistics
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("workloads.py: PyTorch is not installed")
if not torch.cuda.is_available():
    sys.exit("workloads.py: CUDA is not available to PyTorch")

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
SECONDS = float(os.environ.get("WORKLOADS_SECONDS", "1.0"))
ALPHA = 0.2
MC = (100.0, 105.0, 0.05, 0.2, 1.0)
BS_R, BS_V = 0.02, 0.30
PK, PC, PDT = 4.0, 0.1, 0.01


def timed(f):
    """First call's time, then the median of repetitions filling about SECONDS."""
    t = time.perf_counter()
    f()
    first = time.perf_counter() - t
    t = time.perf_counter()
    f()
    one = max(time.perf_counter() - t, 1e-6)
    reps = max(3, min(200, int(SECONDS / one)))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


# ------------------------------------------------------------------ programs (inputs on the host)


def heat_slices_step(u):
    c = u[1:-1, 1:-1]
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * c
    inner = c + lap * ALPHA
    return torch.cat([u[:1], torch.cat([u[1:-1, :1], inner, u[1:-1, -1:]], 1), u[-1:]], 0)


def heat_select_step(u, interior):
    lap = (torch.roll(u, 1, 0) + torch.roll(u, -1, 0) + torch.roll(u, 1, 1) + torch.roll(u, -1, 1)
           - 4 * u)
    return torch.where(interior, u + lap * ALPHA, u)


def kmeans_step(p, c):
    d = ((p[:, None, :] - c[None, :, :]) ** 2).sum(2)
    a = d.argmin(1)
    k = c.shape[0]
    oh = (a[:, None] == torch.arange(k, device=p.device)[None, :]).float()
    counts = oh.sum(0)[:, None]
    return (oh.T @ p) / counts.clamp(min=1.0)


def kmeans_scatter_step(p, c):
    d = ((p[:, None, :] - c[None, :, :]) ** 2).sum(2)
    a = d.argmin(1)
    k = c.shape[0]
    sums = torch.zeros_like(c).index_add_(0, a, p)
    counts = torch.bincount(a, minlength=k).float()[:, None]
    return sums / counts.clamp(min=1.0)


def mc_stats(n):
    s0, k, r, sigma, t = MC
    z = torch.randn(n, device=dev)
    st = torch.exp(z * (sigma * math.sqrt(t)) + (r - 0.5 * sigma * sigma) * t) * s0
    pay = torch.clamp(st - k, min=0.0) * math.exp(-r * t)
    return pay.mean(), pay.std(unbiased=False)


def cnd(x):
    return (torch.erf(x * (1 / math.sqrt(2))) + 1) * 0.5


def bs(s, x, t):
    sq = torch.sqrt(t)
    d1 = (torch.log(s / x) + t * (BS_R + 0.5 * BS_V * BS_V)) / (sq * BS_V)
    d2 = d1 - sq * BS_V
    disc = x * torch.exp(t * -BS_R)
    return s * cnd(d1) - disc * cnd(d2), disc * cnd(-d2) - s * cnd(-d1)


def softmax(x):
    return torch.softmax(x, 1)


def layer_norm(x, g, b):
    return torch.nn.functional.layer_norm(x, (x.shape[1],), g, b, eps=1e-5)


def mlp(x, w1, b1, w2, b2):
    return torch.relu(x @ w1 + b1) @ w2 + b2


def normal_eq(a, b):
    return a.T @ a, a.T @ b


def oscillators(x, v):
    a = x * -PK - v * PC
    v = v + a * PDT
    x = x + v * PDT
    return x, v, ((v * v + x * x * PK) * 0.5).sum()


def chol_solve(m, b):
    l = np.linalg.cholesky(m)
    return np.linalg.solve(l.T, np.linalg.solve(l, b))


# ------------------------------------------------------------------ workloads: (check, run)

rng = np.random.default_rng(1)


def heat_numpy(u, steps):
    u = u.astype(np.float64)
    for _ in range(steps):
        c = u[1:-1, 1:-1]
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * c
        u = u.copy()
        u[1:-1, 1:-1] = c + lap * ALPHA
    return u


def workload(name, p, compiled, mode):
    """Returns (run, check) for one workload; `compiled` wraps the per-step functions."""
    def C(f):
        if not compiled:
            return f
        cf = torch.compile(f, mode=mode)
        if mode != "reduce-overhead":
            return cf

        # CUDA graphs reuse their output memory on the next replay: a loop feeding a step's result
        # into the next step keeps a copy (as the error message of torch advises).
        def replay(*args):
            torch.compiler.cudagraph_mark_step_begin()
            out = cf(*args)
            return tuple(o.clone() for o in out) if isinstance(out, tuple) else out.clone()
        return replay
    if name in ("heat_slices", "heat_select"):
        n, steps = p["n"], p["steps"]
        u0 = rng.random((n, n), dtype=np.float32)
        if name == "heat_slices":
            step = C(heat_slices_step)
            extra = ()
        else:
            step = C(heat_select_step)
            m = np.zeros((n, n), bool)
            m[1:-1, 1:-1] = True
            extra = (torch.from_numpy(m).to(dev),)

        def run():
            u = torch.from_numpy(u0).to(dev)
            for _ in range(steps):
                u = step(u, *extra)
            return u.cpu().numpy()

        want = heat_numpy(u0[:256, :256], min(steps, 20)) if n >= 256 else None

        def check():
            # The check runs a smaller copy (same code path) against numpy in f64.
            small = u0[:256, :256]
            u = torch.from_numpy(small).to(dev)
            ex = extra
            if name == "heat_select":
                m = np.zeros((256, 256), bool)
                m[1:-1, 1:-1] = True
                ex = (torch.from_numpy(m).to(dev),)
            for _ in range(min(steps, 20)):
                u = step(u, *ex)
            return np.abs(u.cpu().numpy() - want).max() < 1e-4

        return run, check
    if name in ("kmeans", "kmeans_scatter"):
        n, k, iters = p["n"], p["k"], p["iters"]
        centres = rng.uniform(-10, 10, (k, 2))
        pts = (centres[np.arange(n) % k] + rng.standard_normal((n, 2))).astype(np.float32)
        step = C(kmeans_step if name == "kmeans" else kmeans_scatter_step)

        def run():
            pd = torch.from_numpy(pts).to(dev)
            c = pd[:k].clone()
            for _ in range(iters):
                c = step(pd, c)
            return c.cpu().numpy()

        def check():
            # The same Lloyd iterations from the same start, in f64 with numpy.
            p64 = pts.astype(np.float64)
            c = p64[:k].copy()
            for _ in range(iters):
                a = ((p64[:, None, :] - c[None, :, :]) ** 2).sum(2).argmin(1)
                sums = np.zeros((k, 2))
                np.add.at(sums, a, p64)
                c = sums / np.maximum(np.bincount(a, minlength=k), 1)[:, None]
            return np.abs(run() - c).max() < 1e-3 * max(1.0, np.abs(c).max())
        return run, check
    if name == "monte_carlo":
        n = p["n"]
        f = C(mc_stats)

        def run():
            m, s = f(n)
            return m.item(), s.item() / math.sqrt(n)

        def check():
            price, se = run()
            s0, k, r, sigma, t = MC
            d1 = (math.log(s0 / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * math.sqrt(t))
            d2 = d1 - sigma * math.sqrt(t)
            nn = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
            exact = s0 * nn(d1) - k * math.exp(-r * t) * nn(d2)
            return abs(price - exact) < 4 * se
        return run, check
    if name == "black_scholes":
        n = p["n"]
        s = rng.uniform(5, 30, n).astype(np.float32)
        x = rng.uniform(1, 100, n).astype(np.float32)
        t = rng.uniform(0.25, 10, n).astype(np.float32)
        f = C(bs)

        def run():
            c, pu = f(*(torch.from_numpy(v).to(dev) for v in (s, x, t)))
            return c.cpu().numpy(), pu.cpu().numpy()

        def check():
            c, pu = run()
            # put-call parity: c - p = s - x e^{-rt}
            parity = s.astype(np.float64) - x * np.exp(-BS_R * t.astype(np.float64))
            return np.abs((c - pu) - parity).max() < 1e-3 * max(1.0, np.abs(parity).max())
        return run, check
    if name in ("softmax", "layer_norm"):
        rows, cols = p["rows"], p["cols"]
        xs = rng.uniform(-4, 4, (rows, cols)).astype(np.float32)
        g = rng.uniform(0.5, 1.5, cols).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, cols).astype(np.float32)
        f = C(softmax) if name == "softmax" else C(layer_norm)

        def run():
            xd = torch.from_numpy(xs).to(dev)
            if name == "softmax":
                return f(xd).cpu().numpy()
            return f(xd, torch.from_numpy(g).to(dev), torch.from_numpy(b).to(dev)).cpu().numpy()

        def check():
            y = run()[:64].astype(np.float64)
            x64 = xs[:64].astype(np.float64)
            if name == "softmax":
                e = np.exp(x64 - x64.max(1, keepdims=True))
                want = e / e.sum(1, keepdims=True)
            else:
                mu = x64.mean(1, keepdims=True)
                want = (x64 - mu) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * g + b
            return np.abs(y - want).max() < 1e-4
        return run, check
    if name == "mlp":
        n, d, h, o = p["n"], p["d"], p["h"], p["o"]
        arrs = [rng.uniform(-1, 1, (n, d)), rng.uniform(-0.1, 0.1, (d, h)),
                rng.uniform(-0.1, 0.1, h), rng.uniform(-0.1, 0.1, (h, o)), rng.uniform(-0.1, 0.1, o)]
        arrs = [a.astype(np.float32) for a in arrs]
        f = C(mlp)

        def run():
            return f(*(torch.from_numpy(a).to(dev) for a in arrs)).cpu().numpy()

        def check():
            a64 = [a.astype(np.float64) for a in arrs]
            want = np.maximum(a64[0][:64] @ a64[1] + a64[2], 0) @ a64[3] + a64[4]
            return np.abs(run()[:64] - want).max() < 1e-3
        return run, check
    if name == "least_squares":
        rows, cols = p["rows"], p["cols"]
        a = rng.uniform(-1, 1, (rows, cols))
        coef = np.arange(cols) - 7.5
        bv = a @ coef + rng.uniform(-1e-3, 1e-3, rows)
        f = C(normal_eq)

        def run():
            ata, atb = f(torch.from_numpy(a).to(dev), torch.from_numpy(bv).to(dev))
            return chol_solve(ata.cpu().numpy(), atb.cpu().numpy())

        def check():
            return np.abs(run() - coef).max() < 1e-3
        return run, check
    if name == "particles":
        n, steps = p["n"], p["steps"]
        x0 = rng.uniform(-1, 1, n).astype(np.float32)
        v0 = rng.uniform(-1, 1, n).astype(np.float32)
        f = C(oscillators)

        def run():
            x, v = torch.from_numpy(x0).to(dev), torch.from_numpy(v0).to(dev)
            out = []
            for _ in range(steps):
                x, v, e = f(x, v)
                out.append(e.item())
            return out

        def check():
            x, v = x0.astype(np.float64), v0.astype(np.float64)
            want = []
            for _ in range(steps):
                a = -PK * x - PC * v
                v = v + a * PDT
                x = x + v * PDT
                want.append((0.5 * (v * v + PK * x * x)).sum())
            return np.abs(np.array(run()) - np.array(want)).max() < 1e-3 * max(want)
        return run, check
    raise SystemExit(f"workloads.py: unknown workload {name}")


def fmt(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main():
    runs = {}
    for path in sys.argv[1:]:
        label = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            runs[label] = [json.loads(l) for l in f if l.strip()]
    if not runs:
        sys.exit("usage: workloads.py AF_JSON [AF_JSON ...]")
    first_label = next(iter(runs))
    rows = []
    for w in runs[first_label]:
        name, params = w["name"], w["params"]
        peer = {}
        for label, compiled, mode in [("eager", False, None), ("compile", True, "default"),
                                      ("reduce-overhead", True, "reduce-overhead")]:
            try:
                run, check = workload(name, params, compiled, mode)
                if not check():
                    print(f"{name}: torch {label} fails its check", file=sys.stderr)
                    peer[label] = None
                    continue
                peer[label] = timed(run)
            except Exception as e:  # a mode that does not apply (or fails) is reported, not fatal
                print(f"{name}: torch {label}: {type(e).__name__}: {e}", file=sys.stderr)
                peer[label] = None
            torch.cuda.synchronize()
        rows.append((w, peer))
        print(f"  {name}: {({k: (fmt(v[1]) if v else None) for k, v in peer.items()})}", file=sys.stderr)

    gpu = torch.cuda.get_device_name()
    print(f"\nWorkload suite on {gpu} (torch {torch.__version__}); ratios are peer time / arrayflow "
          f"time (above 1: arrayflow faster), steady state medians; first = first call "
          f"(arrayflow: program generation and driver compiles; torch.compile: compilation)\n")
    labels = list(runs)
    head = "| workload | size | " + " | ".join(f"{l} first | {l}" for l in labels) + \
        " | torch eager | torch.compile (first) | reduce-overhead | " + \
        " | ".join(f"{l} vs eager | {l} vs compile" for l in labels) + " |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for w, peer in rows:
        cells = [w["name"], w["size"]]
        by = {l: next((r for r in runs[l] if r["name"] == w["name"]), None) for l in labels}
        for l in labels:
            r = by[l]
            cells += [fmt(r["first_s"]), fmt(r["steady_s"])] if r else ["-", "-"]
        e, c, ro = peer.get("eager"), peer.get("compile"), peer.get("reduce-overhead")
        cells.append(fmt(e[1]) if e else "-")
        cells.append(f"{fmt(c[1])} ({fmt(c[0])})" if c else "-")
        cells.append(fmt(ro[1]) if ro else "-")
        for l in labels:
            r = by[l]
            for p in (e, c):
                cells.append(f"{p[1] / r['steady_s']:.2f}x" if (r and p) else "-")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
