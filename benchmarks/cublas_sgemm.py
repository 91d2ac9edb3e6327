"""How fast is cublasSgemm through ptxport's libcublas on the cpu device, next to numpy?

Builds benchmarks/compat/cublas_sgemm.cu with the nvidia-cuda-nvcc wheel's nvcc against
ptxport's own libcublas.so.13 and cublas_v2.h, runs it under `ptxport run --device cpu`, and
times numpy's matmul (the same OpenBLAS) on the same sizes in this process: median of
`--repeats` calls each, C = A B (beta 0) and C = A B + C (beta 1), in GFLOP/s.

    python benchmarks/cublas_sgemm.py [--repeats 7] [--sizes 256 1024 2048]

prints a table and writes benchmarks/results/cublas_sgemm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ptxport.compat.build import shim_directory

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parent / "ptxport" / "compat" / "native" / "include"


def build() -> Path:
    """The benchmark program, built (again when its source changed) against ptxport's
    libcublas."""
    from compat_overhead import _nvcc  # the wheel's nvcc, found as the driver benchmark does

    source, binary = HERE / "compat" / "cublas_sgemm.cu", HERE / "build" / "cublas_sgemm"
    if binary.exists() and binary.stat().st_mtime > source.stat().st_mtime:
        return binary
    binary.parent.mkdir(exist_ok=True)
    nvcc = _nvcc()
    env = {**os.environ, "PATH": f"{nvcc.parent}:{os.environ.get('PATH', '')}"}
    subprocess.run([str(nvcc), "-arch=sm_80", f"-I{INCLUDE}", str(source), "-o", str(binary),
                    f"-L{shim_directory()}", "-lcublas"], check=True, env=env)
    return binary


def numpy_ms(n: int, beta: float, repeats: int) -> float:
    """Median milliseconds of numpy computing C = A B (+ C) on n x n float32 matrices."""
    a = np.ones((n, n), np.float32)
    b, c = a.copy(), a.copy()
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        if beta == 0:
            np.matmul(a, b, out=c)
        else:
            c += a @ b
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 2048])
    args = parser.parse_args()
    result = subprocess.run(
        [sys.executable, "-m", "ptxport.cli", "run", "--device", "cpu", "--", str(build()),
         str(args.repeats), *map(str, args.sizes)], capture_output=True, text=True, check=True)
    rows = []
    print(f"{'n':>6} {'beta':>5} {'shim GFLOP/s':>13} {'numpy GFLOP/s':>14} {'ratio':>6}")
    for line in result.stdout.splitlines():
        n, beta, shim = int(line.split()[0]), float(line.split()[1]), float(line.split()[2])
        flops = 2 * n ** 3 / 1e6   # per millisecond -> GFLOP/s
        direct = numpy_ms(n, beta, args.repeats)
        rows.append({"n": n, "beta": beta, "shim_ms": shim, "numpy_ms": direct,
                     "shim_gflops": flops / shim, "numpy_gflops": flops / direct})
        print(f"{n:6d} {beta:5g} {flops / shim:13.1f} {flops / direct:14.1f} "
              f"{direct / shim:6.2f}")
    out = HERE / "results" / "cublas_sgemm.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                               "cpus": os.cpu_count(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
