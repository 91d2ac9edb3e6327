"""What does a grid launched from the device cost on the CPU device, beside a host launch?

A parent grid of N one-thread blocks, each launching one <<<1, 32>>> child that adds 1 to 32
counters (docs/dynamic-parallelism.md), against the same N children launched from the host
into one stream and synchronized once; microseconds per child grid, side by side, the median
of --runs runs each (the kernels are compiled and warm before timing).

    python benchmarks/dynamic_parallelism.py [--runs 5] [--children 1 100 1000]

prints a table and writes benchmarks/results/dynamic_parallelism.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch

RESULTS = Path(__file__).resolve().parent / "results"
SOURCE = r"""
extern "C" __global__ void add_one(int *x) { atomicAdd(x + threadIdx.x, 1); }
extern "C" __global__ void parent(int *x) { add_one<<<1, 32>>>(x); }
"""


def _seconds(run, n: int) -> float:
    start = time.perf_counter()
    run(n)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--children", type=int, nargs="+", default=[1, 100, 1000])
    args = parser.parse_args(argv)
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    code = Program(SOURCE, "c++", ProgramOptions(extensible_whole_program=True)).compile()
    parent, child = code.get_kernel("parent"), code.get_kernel("add_one")
    counters = device.allocate(128, stream=stream)
    counters.copy_from(np.zeros(32, np.int32), stream=stream)

    def from_device(n: int) -> None:
        launch(stream, LaunchConfig(grid=n, block=1), parent, counters)
        stream.sync()

    def from_host(n: int) -> None:
        for _ in range(n):
            launch(stream, LaunchConfig(grid=1, block=32), child, counters)
        stream.sync()

    rows = []
    print(f"{'children':>9} {'device us/child':>16} {'host us/child':>14} {'ratio':>6}")
    for n in args.children:
        from_device(n)
        from_host(n)
        device_s = statistics.median(_seconds(from_device, n) for _ in range(args.runs))
        host_s = statistics.median(_seconds(from_host, n) for _ in range(args.runs))
        row = {"children": n, "device_us_per_child": 1e6 * device_s / n,
               "host_us_per_child": 1e6 * host_s / n, "ratio": device_s / host_s}
        rows.append(row)
        print(f"{n:>9} {row['device_us_per_child']:>16.1f} {row['host_us_per_child']:>14.1f} "
              f"{row['ratio']:>6.2f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dynamic_parallelism.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
