"""What does the launch path cost when the launching thread's caches are cold?

A kernel that streams memory evicts the launching thread's caches (its share of the
blocks), so the next launch's Python, and the sync's after the pool's run, run cold. Times
a cpu_kernels case (the stencil by default), medians in microseconds:
  evict MB   launch() and launch + sync of the case at --size after a numpy pass over MB
             megabytes on the launching thread (0: warm, back to back);
  own        launch + sync of the case at its full size back to back (the kernel's own run
             evicts), with the pool's trace (pool.trace_shares): "open", launch() ->
             the job's opening; "pool", the opening -> the last share's end; "out", the
             rest (total - pool: the Python before the opening and after the pool's run).
Each with --workers (1 worker: the launch is queued and the sync runs it; more: the job
opens inside launch(), backends/cpu/early.py).

    python benchmarks/launch_cold.py [--kernel stencil] [--workers 1,16] [--evict 0,32,128]
                                     [--size 512] [--runs 41]

Run it in each checkout to compare (one after the other on a quiet machine, or alternated:
the host's phase moves every figure). Prints a table and writes
benchmarks/results/launch_cold.json. The cache lines behind these times can be counted with
callgrind's cache simulator (docs/cpu-target-measurements.md, "Session 17: launch21").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_kernels as ck
import numpy as np

from ptxport import Device, launch
from ptxport.runtime.backends.cpu import executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

RESULTS = Path(__file__).resolve().parent / "results"


def _setup(name: str, size: int | None, dev, stream):
    case = next(c for c in ck.CASES if c.name == name)
    problem = case.make(size or case.full, np.random.default_rng(0))
    run = ck.PtxportRun(case, problem, dev, stream, {})
    run.first_run()
    launches = [(config, tuple(run.buffers[a] if isinstance(a, str) else a for a in args))
                for config, args in problem.launches]
    return run, launches


def _evicted(run, launches, stream, megabytes: int, runs: int) -> tuple[float, float]:
    """Medians of launch() and launch + sync after a pass over `megabytes` (us)."""
    big = np.ones(megabytes * 1024 * 256, np.float32) if megabytes else None
    rows = []
    for _ in range(runs):
        if big is not None:
            np.add(big, 1.0, out=big)
        t0 = time.perf_counter()
        for config, args in launches:
            launch(stream, config, run.kernel, *args)
        t1 = time.perf_counter()
        stream.sync()
        rows.append(((t1 - t0) * 1e6, (time.perf_counter() - t0) * 1e6))
    return tuple(statistics.median(r[i] for r in rows) for i in range(2))


def _own(run, launches, stream, runs: int) -> dict:
    """Medians of a back-to-back full-size launch + sync, split by the pool's trace (us)."""
    cpu_pool.trace_shares(True)
    rows = []
    try:
        for _ in range(runs):
            start = time.monotonic_ns()
            t0 = time.perf_counter()
            for config, args in launches:
                launch(stream, config, run.kernel, *args)
            t1 = time.perf_counter()
            stream.sync()
            t2 = time.perf_counter()
            record = cpu_pool.last_shares()
            opened = (record["opened_ns"] - start) / 1e3 if record else float("nan")
            pool = record["end"] if record else float("nan")
            rows.append(((t1 - t0) * 1e6, (t2 - t0) * 1e6, opened, pool))
    finally:
        cpu_pool.trace_shares(False)
    launch_us, total, opened, pool = (statistics.median(r[i] for r in rows) for i in range(4))
    return {"launch": launch_us, "total": total, "open": opened, "pool": pool,
            "out": total - pool}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="stencil", help="a cpu_kernels case")
    parser.add_argument("--workers", default="1,16")
    parser.add_argument("--evict", default="0,32,128", help="MB passed over before each")
    parser.add_argument("--size", type=int, default=512, help="the case's size for --evict")
    parser.add_argument("--runs", type=int, default=41, help="launches per figure")
    opts = parser.parse_args()
    dev = Device("cpu")
    dev.set_current()
    stream = dev.create_stream()
    small = _setup(opts.kernel, opts.size, dev, stream)
    full = _setup(opts.kernel, None, dev, stream)
    results = []
    for workers in [int(w) for w in opts.workers.split(",")]:
        executor.set_workers(workers)
        for run, launches in (small, full):     # (the pool's threads started, code warm)
            _evicted(run, launches, stream, 0, 3)
        for megabytes in [int(m) for m in opts.evict.split(",")]:
            launch_us, total = _evicted(*small, stream, megabytes, opts.runs)
            results.append({"workers": workers, "mode": f"evict {megabytes}",
                            "launch": launch_us, "total": total})
            print(f"{opts.kernel} {opts.size} wk {workers:2d} evict {megabytes:4d} MB: launch "
                  f"{launch_us:7.1f} us, total {total:8.1f}", flush=True)
        row = _own(*full, stream, opts.runs)
        results.append({"workers": workers, "mode": "own", **row})
        print(f"{opts.kernel} full wk {workers:2d} own: launch {row['launch']:7.1f} us, total "
              f"{row['total']:8.1f}, open {row['open']:6.1f}, pool {row['pool']:8.1f}, out "
              f"{row['out']:6.1f}", flush=True)
    for run, _ in (small, full):
        run.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "launch_cold.json").write_text(json.dumps(
        {"kernel": opts.kernel, "size": opts.size, "runs": opts.runs, "results": results},
        indent=1))


if __name__ == "__main__":
    main()
