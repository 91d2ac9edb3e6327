"""What does `jit(cache=True)` save a new process running a numba-cuda kernel on ptxport?

Each run is a fresh Python process that imports numba and ptxport, defines a kernel (a
saxpy and a kernel calling two device functions, from one generated file), and launches it
once on the cpu device; the figures are the seconds from the decorator to the end of the
first launch (numba's compile_ptx, ptxport's load of the PTX, the launch), the fastest of
--runs processes, with `cache=False` and with `cache=True` (its cache written by an untimed
process first). ptxport's own cache of the code it builds from PTX is warm in both columns
(an untimed process first), so the difference is numba's compiler. The import of numba is
timed apart.

    python benchmarks/numba_cache.py [--runs 3]

prints a table and writes benchmarks/results/numba_cache.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

_PROGRAM = """
import math, sys, time
start = time.perf_counter()
import numpy as np
from numba import cuda
from ptxport import Device
from ptxport.frontends import numba as pnb
imported = time.perf_counter()
CACHE = sys.argv[1] == "1"

@pnb.jit(cache=CACHE)
def saxpy(a, x, y, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]

@cuda.jit(device=True)
def clamp(v):
    return min(max(v, -1.0), 1.0)

@pnb.jit(device=True)
def smooth(values, i):
    return clamp(values[i]) + math.exp(values[i])

@pnb.jit(cache=CACHE)
def smoothed(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = smooth(x, i)

Device("cpu").set_current()
x = np.linspace(-2, 2, 1000).astype(np.float32)
out = np.zeros_like(x)
kernel = smoothed if sys.argv[2] == "smoothed" else saxpy
args = (x, out) if kernel is smoothed else (np.float32(2), x, x, out)
began = time.perf_counter()
kernel[4, 128](*args)
print(imported - start, time.perf_counter() - began)
"""


def _run(script: Path, cache: bool, kernel: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), "1" if cache else "0", kernel],
                          capture_output=True, text=True, env=env, check=True)
    imported, launched = done.stdout.split()
    return float(imported), float(launched)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "numba_cache_program.py"
        script.write_text(_PROGRAM)
        for kernel in ("saxpy", "smoothed"):
            for cache in (False, True):
                _run(script, cache, kernel)          # warm ptxport's cache (and numba's PTX)
            plain = [_run(script, False, kernel) for _ in range(args.runs)]
            cached = [_run(script, True, kernel) for _ in range(args.runs)]
            rows.append({"kernel": kernel, "import_s": min(i for i, _ in plain + cached),
                         "first_launch_s": min(t for _, t in plain),
                         "first_launch_cached_s": min(t for _, t in cached)})
    print(f"{'kernel':<10} {'import numba':>13} {'cache=False':>12} {'cache=True':>11} "
          f"{'ratio':>6}")
    for row in rows:
        print(f"{row['kernel']:<10} {row['import_s']:>12.2f}s {row['first_launch_s']:>11.2f}s "
              f"{row['first_launch_cached_s']:>10.2f}s "
              f"{row['first_launch_s'] / row['first_launch_cached_s']:>5.1f}x")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "numba_cache.json").write_text(json.dumps(
        {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
         "runs": args.runs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
