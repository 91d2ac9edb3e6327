"""What does a CUDA call cost through ptxport's driver shim (`ptxport run`)?

Builds benchmarks/compat/overhead.cu with the nvidia-cuda-nvcc wheel's nvcc twice (default
flags: static cudart over ptxport's libcuda; and `-cudart shared`: ptxport's libcudart) into
benchmarks/build/, runs both under `ptxport run --device cpu`, and reports side by side the
median time of an empty <<<1,1>>> launch (queued, and followed by cudaDeviceSynchronize) and
of a 4-byte cudaMemcpy each way, in microseconds (goal: under 20 each).

    python benchmarks/compat_overhead.py [--calls 200]

prints a table and writes benchmarks/results/compat_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _nvcc() -> Path:
    from ptxport.runtime.backends.cuda import wheel_ptxas

    ptxas = wheel_ptxas()
    if ptxas is None or not (ptxas.parent / "nvcc").is_file():
        sys.exit("needs the nvcc of the nvidia-cuda-nvcc wheel: pip install 'ptxport[test]'")
    return ptxas.parent / "nvcc"


def build(shared: bool = False) -> Path:
    """The benchmark built with static cudart, or with `-cudart shared` linked against
    ptxport's own libcudart.so (the shim's directory)."""
    source = HERE / "compat" / "overhead.cu"
    binary = HERE / "build" / ("compat_overhead_shared" if shared else "compat_overhead")
    if binary.exists() and binary.stat().st_mtime > source.stat().st_mtime:
        return binary
    binary.parent.mkdir(exist_ok=True)
    nvcc = _nvcc()
    env = {**os.environ, "PATH": f"{nvcc.parent}:{os.environ.get('PATH', '')}"}
    flags = []
    if shared:
        from ptxport.compat.build import shim_directory

        flags = ["-cudart", "shared", f"-L{shim_directory()}"]
    subprocess.run([str(nvcc), "-arch=sm_80", *flags, str(source), "-o", str(binary)],
                   check=True, env=env)
    return binary


def measure(binary: Path, calls: int) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-m", "ptxport.cli", "run", "--device", "cpu", "--", str(binary),
         str(calls)], capture_output=True, text=True, check=True)
    return {name: float(value) for name, value in
            (line.split() for line in result.stdout.splitlines() if line[:1].islower()
             and not line.startswith("errors"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per timed batch")
    args = parser.parse_args()
    static = measure(build(), args.calls)
    shared = measure(build(shared=True), args.calls)
    print(f"{'call':<20} {'static cudart us':>17} {'ptxport libcudart us':>21}")
    for name, value in static.items():
        print(f"{name:<20} {value:17.2f} {shared.get(name, float('nan')):21.2f}")
    out = HERE / "results" / "compat_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": platform.machine(), "processor": platform.processor(),
                               "load": os.getloadavg()[0], "calls_per_batch": args.calls,
                               "microseconds": static, "microseconds_libcudart": shared},
                              indent=2) + "\n")


if __name__ == "__main__":
    main()
