#!/usr/bin/env python3
"""Merges the `JSON {...}` lines of several benchmark runs into one comparison table.

Inputs: the outputs of benches/gpu.rs (one per executor: ARRAYFLOW_DEVICE=opencl, =wgpu, ...)
and of benches/peers/chain.py (PyTorch on CUDA), in any order:

    python3 benches/peers/merge.py ocl.txt wgpu.txt torch.txt [--mode sync|stream]

Lines not starting with "JSON " are ignored. When two files hold the same row (impl, backend, op,
n), the later file wins (a note is printed).

Prints, for each n: arrayflow-OpenCL, arrayflow-wgpu, torch eager, torch.compile and copy GB/s,
then the ratios the targets need:

- arrayflow / copy bandwidth                (target >= 0.9), against the faster copy peer of the
  same backend (same process and device: the API's buffer copy or, for wgpu, a copy kernel);
  where a backend has none, against the CUDA copy ('*'). Also "af / best copy": against the
  fastest copy of any run on the same device (CUDA's included), the device's copy bandwidth.
- arrayflow speed-up vs torch eager         (target >= 5x)  = eager time / arrayflow time
- arrayflow vs torch.compile                (target >= 1.0) = compile time / arrayflow time
- sum / copy bandwidth                      (target >= 0.8) at the sum's n, same copy reference
- launch latency, 2^10 chain                (target < 20 µs), with the bare API's launch floor
  from the same process (what the API alone takes to hand a small kernel to the device)
- sum_axis(0) and sum_axis(1) of N x N f32  (target >= 0.9x) = torch time / arrayflow time

--mode sync (default) compares the rows measured with a wait after every iteration, the way
arrayflow's eval() loop runs; --mode stream uses every row's back-to-back ("stream") times
instead: iterations enqueued without a wait between them, one wait at the end (arrayflow starts
each with hint_read), which is how a program that reads its results later keeps the device busy.
"""

import argparse
import json
import sys

TARGETS = {
    "af_copy": 0.9,
    "vs_eager": 5.0,
    "vs_compile": 1.0,
    "sum_copy": 0.8,
    "launch_us": 20.0,
    "axis_vs_torch": 0.9,
}
AF_BACKENDS = [("opencl", "arrayflow-OpenCL"), ("wgpu", "arrayflow-wgpu"), ("cpu", "arrayflow-cpu")]


def label(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def load(paths):
    rows = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("JSON "):
                    continue
                try:
                    d = json.loads(line[5:])
                except json.JSONDecodeError as e:
                    print(f"note: {path}:{lineno}: bad JSON line ({e}); skipped", file=sys.stderr)
                    continue
                key = (d.get("impl"), d.get("backend"), d.get("op"), d.get("n"))
                if key in rows:
                    print(f"note: {path}:{lineno} replaces an earlier row {key}", file=sys.stderr)
                d["_file"] = path
                rows[key] = d
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="outputs of benches/gpu.rs and benches/peers/chain.py")
    ap.add_argument("--mode", choices=["sync", "stream"], default="sync")
    args = ap.parse_args()
    rows = load(args.files)
    if not rows:
        sys.exit("merge.py: no `JSON ` lines in " + ", ".join(args.files))

    def secs(imp, backend, op, n):
        d = rows.get((imp, backend, op, n))
        if d is None:
            return None
        if args.mode == "stream" and d.get("stream_time_s"):
            return d["stream_time_s"]
        return d.get("time_s")

    def gbs(imp, backend, op, n):
        t = secs(imp, backend, op, n)
        d = rows.get((imp, backend, op, n))
        return d["bytes"] / t / 1e9 if t else None

    # Which arrayflow backends ran, and the devices.
    backends = [(b, name) for b, name in AF_BACKENDS if any(k[0] == "arrayflow" and k[1] == b for k in rows)]
    devices = sorted({(d["backend"], d["device"]) for d in rows.values()})
    print("devices: " + "; ".join(f"{b}: {dev}" for b, dev in devices))
    if len({dev for _, dev in devices if _ != "cpu"}) > 1:
        print("WARNING: the runs name different devices; ratios across them compare different hardware")
    print(f"mode: {args.mode} (see --help); GB/s = bytes / median time per iteration")
    print()

    ns = sorted({k[3] for k in rows if k[2] == "chain"})
    fmt = lambda x, spec=".1f": "-" if x is None else format(x, spec)

    # Bandwidth table.
    cols = [name for _, name in backends] + ["torch eager", "torch.compile"]
    copy_kinds = [
        (imp, b)
        for imp in ("copy", "copy-kernel")
        for b in ("cuda", "opencl", "wgpu")
        if any(k[0] == imp and k[1] == b for k in rows)
    ]
    cols += [f"{imp} {b}" for imp, b in copy_kinds]
    w = max(14, *(len(c) for c in cols))
    print("Chain bandwidth, GB/s (12 n bytes per iteration)")
    head = f"{'n':>6} | " + " | ".join(f"{c:>{w}}" for c in cols)
    print(head)
    print("-" * len(head))
    for n in ns:
        vals = [gbs("arrayflow", b, "chain", n) for b, _ in backends]
        vals += [gbs("torch-eager", "cuda", "chain", n), gbs("torch-compile", "cuda", "chain", n)]
        vals += [gbs(imp, b, "copy", n) for imp, b in copy_kinds]
        print(f"{label(n):>6} | " + " | ".join(f"{fmt(v):>{w}}" for v in vals))
    print()

    def device_of(backend):
        return next((d["device"] for k, d in rows.items() if k[0] == "arrayflow" and k[1] == backend), None)

    def copy_ref(backend, n):
        """(copy seconds, mark): the fastest copy peer of the same backend (API copy or copy
        kernel), else CUDA's copy ('*')."""
        ts = [secs(imp, backend, "copy", n) for imp in ("copy", "copy-kernel")]
        ts = [t for t in ts if t]
        if ts:
            return min(ts), ""
        t = secs("copy", "cuda", "copy", n)
        return (t, "*") if t else (None, "")

    def best_copy(backend, n):
        """The fastest copy of any peer on the same device as `backend`'s run (seconds)."""
        dev = device_of(backend)
        ts = [
            secs(k[0], k[1], "copy", n)
            for k, d in rows.items()
            if k[0] in ("copy", "copy-kernel") and k[3] == n and d.get("device") == dev
        ]
        ts = [t for t in ts if t]
        return min(ts) if ts else None

    def cell(x, target, higher=True, spec=".2f", suffix="x", mark=""):
        if x is None:
            return "-"
        ok = x >= target if higher else x < target
        return f"{format(x, spec)}{suffix}{mark} {'ok' if ok else 'MISS'}"

    print(
        f"Ratios per backend (targets: af/copy >= {TARGETS['af_copy']}, speed-up vs eager >= {TARGETS['vs_eager']}x, "
        f"vs torch.compile >= {TARGETS['vs_compile']})"
    )
    rc = ["af / copy", "af / best copy", "vs eager", "vs torch.compile"]
    head = f"{'backend':>16} | {'n':>6} | " + " | ".join(f"{c:>18}" for c in rc)
    print(head)
    print("-" * len(head))
    for b, name in backends:
        for n in ns:
            af = secs("arrayflow", b, "chain", n)
            if af is None:
                continue
            ct, mark = copy_ref(b, n)
            bt = best_copy(b, n)
            eager = secs("torch-eager", "cuda", "chain", n)
            comp = secs("torch-compile", "cuda", "chain", n)
            print(
                f"{name:>16} | {label(n):>6} | "
                + " | ".join(
                    f"{c:>18}"
                    for c in (
                        cell(ct / af if ct else None, TARGETS["af_copy"], mark=mark),
                        cell(bt / af if bt else None, TARGETS["af_copy"]),
                        cell(eager / af if eager else None, TARGETS["vs_eager"]),
                        cell(comp / af if comp else None, TARGETS["vs_compile"]),
                    )
                )
            )
    print(
        "(af / copy = copy time / arrayflow time at equal bytes, against the faster of the same backend's copy peers\n"
        " (API copy, copy kernel); '*' = against the CUDA copy, no same-backend copy row. af / best copy = against the\n"
        " fastest copy of any run on the same device, CUDA's included: the device's copy bandwidth)"
    )
    print()

    hand_rows(rows, backends)

    print(f"Sum (a.sum(), 4 n bytes read; target sum/copy >= {TARGETS['sum_copy']}) and launch latency (target < {TARGETS['launch_us']:.0f} µs)")
    for b, name in backends:
        s = [d for k, d in rows.items() if k[0] == "arrayflow" and k[1] == b and k[2] == "sum"]
        for d in s:
            n = d["n"]
            sg = gbs("arrayflow", b, "sum", n)
            ct, mark = copy_ref(b, n)
            cg = 12 * n / ct / 1e9 if ct else None
            bt = best_copy(b, n)
            bg = 12 * n / bt / 1e9 if bt else None
            print(
                f"  {name:>16} sum {label(n)}: {fmt(sg)} GB/s, copy {fmt(cg)} GB/s{mark}, sum/copy "
                f"{cell(sg / cg if cg else None, TARGETS['sum_copy'], mark=mark)}; best copy on the device {fmt(bg)} GB/s, "
                f"sum/best copy {cell(sg / bg if bg else None, TARGETS['sum_copy'])}"
            )
        ld = rows.get(("arrayflow", b, "launch", 1024)) or next(
            (d for k, d in rows.items() if k[0] == "arrayflow" and k[1] == b and k[2] == "launch"), None
        )
        if ld is not None:
            lat = ld.get("launch_us")
            print(
                f"  {name:>16} launch latency {label(ld['n'])}: "
                + (cell(lat, TARGETS["launch_us"], higher=False, spec=".1f", suffix=" µs") if lat is not None else "n/a (no device launches)")
                + f", {ld['time_s'] * 1e6:.1f} µs per iteration end to end"
                + floor_note(ld)
            )
    for d in [d for k, d in rows.items() if k[0] == "torch-eager" and k[2] == "sum"]:
        n = d["n"]
        sg = gbs("torch-eager", "cuda", "sum", n)
        ct = secs("copy", "cuda", "copy", n)
        cg = 12 * n / ct / 1e9 if ct else None
        print(f"  {'torch (ref.)':>16} sum {label(n)}: {fmt(sg)} GB/s, copy {fmt(cg)} GB/s, sum/copy {fmt(sg / cg if cg else None, '.2f')}x")

    axis_rows = sorted({(k[2], k[3]) for k in rows if k[2] in ("sum_axis0", "sum_axis1")})
    if axis_rows:
        print()
        print(f"Axis sums of an N x N f32 array (4 N^2 bytes read; target vs torch >= {TARGETS['axis_vs_torch']}x)")
        for op, n in axis_rows:
            side = int(round(n**0.5))
            torch_t = secs("torch-eager", "cuda", op, n)
            for b, name in backends:
                af = secs("arrayflow", b, op, n)
                if af is None:
                    continue
                print(
                    f"  {name:>16} {op} {side}x{side}: {af * 1e6:.1f} µs = {fmt(gbs('arrayflow', b, op, n))} GB/s, "
                    f"torch {fmt(torch_t * 1e6 if torch_t else None)} µs, vs torch "
                    f"{cell(torch_t / af if torch_t else None, TARGETS['axis_vs_torch'])}"
                )


def hand_rows(rows, backends):
    """arrayflow's stream time against the chain written by hand for the same API (benches/gpu.rs,
    `chain_alloc`), in each of the hand-written kernel's launch modes (their names say which one
    launches as arrayflow does). Modes named "diagnostic" compute something arrayflow's launches
    cannot (outputs in turn) and are left out of the best."""
    lines = []
    for b, name in backends:
        for (imp, backend, op, n), d in sorted(rows.items(), key=lambda kv: kv[0][3]):
            if imp != "hand" or backend != b:
                continue
            af = rows.get(("arrayflow", b, "chain", n), {}).get("stream_time_s")
            modes = d.get("modes") or []
            if not af or not modes:
                continue
            lines.append(
                f"  {name:>16} {label(n)}: arrayflow {af * 1e6:.1f} µs; hand-written "
                + ", ".join(f"{t * 1e6:.1f} µs ({m})" for m, t in modes)
                + f"; best hand-written / arrayflow "
                + f"{min(t for m, t in modes if not m.startswith('diagnostic')) / af:.3f}x"
            )
    if lines:
        print("The chain written by hand on the same API, launches back to back (stream), per launch")
        print("\n".join(lines))
        print()


def floor_note(ld):
    """The bare API's launch floor measured in the same process (benches/gpu.rs, `launch_floor`)."""
    once, fresh = ld.get("floor_us"), ld.get("floor_fresh_group_us")
    if once is None:
        return ""
    note = f"; the bare API's launch floor {once:.1f} µs"
    if fresh is not None:
        note += f" ({fresh:.1f} µs with a new bind group per launch)"
    return note


if __name__ == "__main__":
    main()
