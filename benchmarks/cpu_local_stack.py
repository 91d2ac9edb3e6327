"""What does checking the native stack cost a call of a recursive device function on the CPU?

Calls of recursive device functions on the cpu device first check that the worker's native
stack has room (codegen/targets/cpu/local_stack.py: NATIVE_STACK_BUDGET below the thread
function, which bounds the recursion's depth), where plain calls would run an infinite
recursion until the native stack overflowed. The same kernels compiled both ways (the plain
calls by finding no cycles of calls, in a process of its own with its own kernel cache),
milliseconds per launch side by side, the median of --runs launches after a warm-up
launch:

- fib: fib(n) = fib(n-1) + fib(n-2) per thread (two calls a level, no local memory);
- down: down(n) = down(n-1) + 1 per thread (one call a level).

    python benchmarks/cpu_local_stack.py [--runs 7] [--workers 1]

prints a table and writes benchmarks/results/cpu_local_stack.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

RESULTS = Path(__file__).resolve().parent / "results"
# kernel -> (PTX name in tests/recursive_ptx.py, grid, block, n argument or None)
KERNELS = {"fib(20)": ("FIB_PTX", 4, 32, None), "down(2000)": ("DOWN_PTX", 64, 64, 2000)}


def _time_kernels(runs: int, workers: int) -> dict[str, float]:
    """Milliseconds per launch of each kernel (in this process)."""
    import recursive_ptx
    from cpu_harness import compile_ptx, run_ptx
    from ptxport.runtime.backends.cpu import executor

    executor.set_workers(workers)
    times = {}
    for name, (ptx_name, grid, block, n) in KERNELS.items():
        ptx = getattr(recursive_ptx, ptx_name)
        if ptx_name == "FIB_PTX":       # every thread computes fib(20)
            ptx = ptx.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, 20;")
        compile_ptx(ptx, "k")
        out = np.zeros(grid * block * 2, np.uint32)
        args = [out] + ([np.uint32(n)] if n is not None else [])
        run_ptx(ptx, "k", grid, block, args)
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            run_ptx(ptx, "k", grid, block, args)
            samples.append((time.perf_counter() - start) * 1e3)
        times[name] = statistics.median(samples)
    return times


def _in_process(plain: bool, runs: int, workers: int) -> dict[str, float]:
    """_time_kernels in a fresh process with a kernel cache of its own; `plain`: compiled
    without the native stack's checks."""
    code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import cpu_local_stack as b; "
            + ("from ptxport.codegen.targets.cpu import local_stack; "
               "local_stack._on_cycles = lambda graph: set(); " if plain else "")
            + f"print(json.dumps(b._time_kernels({runs}, {workers})))")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PTXPORT_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                                capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    framed = _in_process(False, args.runs, args.workers)
    plain = _in_process(True, args.runs, args.workers)
    print(f"{'kernel':<12} {'checked ms':>10} {'plain ms':>10} {'checked/plain':>13}")
    rows = []
    for name in KERNELS:
        ratio = framed[name] / plain[name]
        print(f"{name:<12} {framed[name]:>10.2f} {plain[name]:>10.2f} {ratio:>13.2f}")
        rows.append({"kernel": name, "frames_ms": framed[name], "plain_ms": plain[name],
                     "ratio": ratio})
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu_local_stack.json").write_text(json.dumps(
        {"runs": args.runs, "workers": args.workers, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
