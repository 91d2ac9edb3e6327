"""What do the opencl device's bounds checks cost on a bandwidth-bound kernel?

saxpy (y = a*x + y, NVRTC's PTX) over 16M floats on opencl:0 (Intel's OpenCL CPU runtime in
CI), compiled with the SPIR-V target's bounds checks (spirv_checks.py; the default) and
without (the backend's private `_bounds_checks` switch), launched alternately in one process
so that both see the same machine load. Reports the median and best launch time of each,
in milliseconds and GB/s (12 bytes per element), and the ratio of the medians.

    python benchmarks/opencl_checks.py [--n 16777216] [--runs 15]

prints a table and writes benchmarks/results/opencl_checks.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

from conftest import SAXPY_PTX  # noqa: E402

from ptxport import Device, LaunchConfig, Program, launch  # noqa: E402
from ptxport.runtime.backends import get  # noqa: E402


def saxpy_kernels():
    """(checked, unchecked) saxpy kernels for opencl:0."""
    backend = get("opencl")
    kernels = []
    for checks in (True, False):
        backend._bounds_checks = checks
        kernels.append(Program(SAXPY_PTX, code_type="ptx").compile("native")
                       .get_kernel("saxpy"))
    backend._bounds_checks = True
    return kernels


def measure(n: int, runs: int) -> dict:
    dev = Device("opencl:0")
    dev.set_current()
    stream = dev.create_stream()
    x, y = dev.allocate(4 * n, stream=stream), dev.allocate(4 * n, stream=stream)
    x.copy_from(np.ones(n, np.float32), stream=stream)
    y.copy_from(np.ones(n, np.float32), stream=stream)
    config = LaunchConfig(grid=(n + 255) // 256, block=256)
    kernels = dict(zip(("checked", "unchecked"), saxpy_kernels(), strict=True))
    times: dict[str, list[float]] = {name: [] for name in kernels}
    for run in range(runs + 1):             # the first round warms up (builds, first touch)
        for name, kernel in kernels.items():
            start = time.perf_counter()
            launch(stream, config, kernel, np.float32(2), x, y, np.int32(n))
            stream.sync()
            if run:
                times[name].append(time.perf_counter() - start)
    report = {"device": f"opencl:0 ({dev.name})", "n": n, "runs": runs}
    for name, values in times.items():
        median = statistics.median(values)
        report[name] = {"median_ms": median * 1e3, "best_ms": min(values) * 1e3,
                        "median_gb_s": 12 * n / median / 1e9}
    report["checked_over_unchecked"] = report["checked"]["median_ms"] / \
        report["unchecked"]["median_ms"]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16 << 20)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    report = measure(args.n, args.runs)
    print(f"saxpy, {args.n} floats, {report['device']}, {args.runs} runs each")
    print(f"{'':10} {'median ms':>10} {'best ms':>9} {'GB/s':>6}")
    for name in ("checked", "unchecked"):
        r = report[name]
        print(f"{name:10} {r['median_ms']:10.2f} {r['best_ms']:9.2f} {r['median_gb_s']:6.2f}")
    print(f"checked / unchecked (medians): {report['checked_over_unchecked']:.2f}")
    out = ROOT / "benchmarks" / "results" / "opencl_checks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
