"""Where does a Triton launch's time go on the cpu device? Triton's vector add (BLOCK=1024,
DeviceArrays, as benchmarks/python_kernels.py's `add`) at a few sizes, on 1 worker and on
every core, split into:

  call     add_kernel[grid](...) as a program calls it, launch and sync (median, and the
           fastest in brackets; GB/s of the median: 12 bytes an element);
  triton   Triton's own dispatch before it calls this driver's launcher (binding and
           specializing the arguments, its cache lookup): the call's median less the
           launcher's, called directly with the same arguments;
  before   from the call's start to the worker pool's opening of the job (Triton's
           dispatch, the launcher, ptxport's launch path in Python);
  pool     the pool's run: the workers' shares of the blocks, from the job's opening to
           the last share's end (`late`: when the last worker began its share);
  after    from the pool's end to the call's return (ptxport's launch and sync, Triton's
           return).
The last three are medians over traced calls (pool.trace_shares), which cost a little more
than plain calls. A kernel that streams tens of MB leaves the Python of the launch out of
the caches, so `before` and `after` grow with the size (docs/cpu-target-measurements.md,
"What bounds 16 cores").

    python benchmarks/triton_launch.py [--workers 1,16] [--sizes 4096,65536,4194304]
                                       [--arrays device|torch] [--compare OTHER_CHECKOUT]
                                       [--runs 3]

--arrays torch passes torch CPU tensors (torch.from_numpy) instead of DeviceArrays.

--compare times another checkout too, process by process in turns (on a shared machine
timings drift: compare only figures measured side by side). Prints a table and writes
benchmarks/results/triton_launch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"


def _timed(call, reps: int) -> list[float]:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return times


def _traced(call, reps: int, pool) -> dict[str, float]:
    """Medians of before / pool / after / late over `reps` traced calls (us)."""
    rows = []
    pool.trace_shares(True)
    try:
        for _ in range(reps):
            start = time.monotonic_ns()
            call()
            end = time.monotonic_ns()
            record = pool.last_shares()
            if record is None:      # (a grid run without the pool: none here)
                continue
            taken = [s for s in record["shares"] if s is not None]
            before = (record["opened_ns"] - start) / 1e3
            rows.append((before, record["end"], (end - start) / 1e3 - before - record["end"],
                         max(begin for begin, _ in taken)))
    finally:
        pool.trace_shares(False)
    return {key: statistics.median(row[i] for row in rows)
            for i, key in enumerate(("before", "pool", "after", "late"))}


def _with_opening(pool) -> None:
    """Have the pool's traced runs say when they opened (`opened_ns`), in a checkout from
    before Job.traced did."""
    traced = pool.Job.traced

    def with_opening(job, workers: int):
        record = traced(job, workers)
        if record is not None and "opened_ns" not in record:
            record["opened_ns"] = int(job._trace[0])
        return record

    pool.Job.traced = with_opening


def _measure(workers: list[int], sizes: list[int], kind: str) -> dict:
    """In this process (the checkout on sys.path): the split of each size and worker count."""
    sys.path.insert(0, str(ROOT / "tests" / "frontends"))
    import numpy as np
    from triton_kernels import add_kernel

    import ptxport.frontends.triton as pt
    from ptxport import Device
    from ptxport.runtime.backends.cpu import executor
    from ptxport.runtime.backends.cpu import pool as cpu_pool

    _with_opening(cpu_pool)

    device = Device("cpu")
    pt.activate(device)
    rng = np.random.default_rng(0)
    figures = {}
    for n in sizes:
        host = [rng.random(n, dtype=np.float32) for _ in range(2)] + [np.zeros(n, np.float32)]
        if kind == "torch":
            import torch

            arrays = [torch.from_numpy(a) for a in host]
        else:       # (wrapped in place on the cpu device)
            arrays = [pt.device_array(a, device) for a in host]
        for count in workers:
            executor.set_workers(count)
            figures[f"{n} {count}"] = _split(add_kernel, arrays, n, device)
            if not np.array_equal(host[2], host[0] + host[1]):
                raise AssertionError(f"wrong sums at n={n}")
    return figures


def _split(add_kernel, arrays, n: int, device) -> dict[str, float]:
    """One size and worker count: the call's median and fastest, Triton's dispatch, and the
    traced parts (us)."""
    import triton

    from ptxport.runtime.backends.cpu import pool as cpu_pool

    x, y, out = arrays
    grid = (triton.cdiv(n, 1024),)
    reps = 400 if n <= 1 << 16 else 60

    def call():
        add_kernel[grid](x, y, out, n, BLOCK=1024)

    launcher = add_kernel[grid](x, y, out, n, BLOCK=1024).run
    stream = device.default_stream

    def direct():      # (the launcher as Triton calls it: grid, stream, no hooks, arguments)
        launcher(grid[0], 1, 1, stream, None, None, None, None, None, x, y, out, n, 1024)

    calls, directs = _timed(call, reps), _timed(direct, reps)
    return {"call": statistics.median(calls), "fastest": min(calls),
            "triton": statistics.median(calls) - statistics.median(directs),
            **_traced(call, reps, cpu_pool)}


def _run_child(root: Path, workers: str, sizes: str, kind: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                          "--workers", workers, "--sizes", sizes, "--arrays", kind],
                         capture_output=True, text=True, check=True, env=env, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default=f"1,{len(os.sched_getaffinity(0))}")
    parser.add_argument("--sizes", default="4096,65536,4194304")
    parser.add_argument("--arrays", choices=("device", "torch"), default="device",
                        help="the kernel's arguments: DeviceArrays (python_kernels.py's) or "
                        "torch CPU tensors")
    parser.add_argument("--runs", type=int, default=3, help="processes per checkout")
    parser.add_argument("--compare", type=Path, help="another checkout to time, alternately")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    workers = [int(w) for w in options.workers.split(",")]
    sizes = [int(s) for s in options.sizes.split(",")]
    if options.child:
        print(json.dumps(_measure(workers, sizes, options.arrays)))
        return
    roots = {"this": ROOT}
    if options.compare:
        roots["other"] = options.compare.resolve()
    runs: dict[str, list[dict]] = {label: [] for label in roots}
    for _ in range(options.runs):
        for label, root in roots.items():
            runs[label].append(_run_child(root, options.workers, options.sizes,
                                          options.arrays))
    keys = ("call", "fastest", "triton", "before", "pool", "after", "late")
    medians = {label: {case: {k: statistics.median(r[case][k] for r in results) for k in keys}
                       for case in results[0]} for label, results in runs.items()}
    print(f"Triton vector add on the cpu device ({options.arrays} arrays), us (medians of "
          f"{options.runs} processes)")
    print(f"{'n':>8} {'workers':>7} {'checkout':>8} {'call':>7} {'(fastest)':>9} {'GB/s':>6} "
          f"{'triton':>6} {'before':>6} {'pool':>7} {'after':>6} {'late':>5}")
    for case in medians["this"]:
        n, count = case.split()
        for label in roots:
            m = medians[label][case]
            print(f"{n:>8} {count:>7} {label:>8} {m['call']:7.1f} {m['fastest']:9.1f} "
                  f"{12 * int(n) / m['call'] / 1e3:6.1f} {m['triton']:6.1f} {m['before']:6.1f} "
                  f"{m['pool']:7.1f} {m['after']:6.1f} {m['late']:5.1f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "triton_launch.json").write_text(json.dumps({
        "cores": len(os.sched_getaffinity(0)), "runs": options.runs, "arrays": options.arrays,
        "checkouts": {label: str(root) for label, root in roots.items()},
        "microseconds": medians}, indent=1) + "\n")


if __name__ == "__main__":
    main()
