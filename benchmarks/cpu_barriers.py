"""What does a barrier round cost a warp on the CPU device, and does another checkout's code
cost more?

Times, on one worker and in process CPU time (time.process_time: other processes' load
stretches wall time, not this), kernels whose work is all barrier rounds: a loop of
`__syncthreads()` alone ("bars") and with a per-lane test and add ("bars_test"), both over
`--rounds` rounds, and the skeleton of tests/kernels/scan_blelloch.cu (its up- and down-sweep
loops, 22 barriers per 1024-element tile, without the shared-memory tree: "blelloch_loops"),
then scan_blelloch itself. 4096 blocks of 512 threads (16 warps) each. Per kernel: the least
CPU time of --runs launches after one untimed launch, and for the barrier loops the cost of
one warp's round (their time at --rounds rounds less their time at 0, per warp and round).
With --other CHECKOUT the same runs in a child process with that checkout's ptxport, the
two taking turns --repeat times, and the change.

    python benchmarks/cpu_barriers.py [--other /path/to/other/checkout] [--rounds 20]
                                      [--runs 7] [--repeat 3]

writes benchmarks/results/cpu_barriers.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BLOCKS, BLOCK = 4096, 512

SOURCE = r"""
extern "C" __global__ void bars(int* y, int rounds)
{
    for (int r = 0; r < rounds; r++)
        __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

extern "C" __global__ void bars_test(int* y, int rounds)
{
    int t = threadIdx.x, acc = 0;
    for (int r = 0; r < rounds; r++) {
        __syncthreads();
        if (t < r)
            acc += r;
    }
    y[blockIdx.x * blockDim.x + t] = acc;
}

extern "C" __global__ void blelloch_loops(int* y, int unused)
{
    int t = threadIdx.x, m = 2 * blockDim.x, offset = 1, acc = 0;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d)
            acc += offset;
        offset <<= 1;
    }
    for (int d = 1; d < m; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d)
            acc += offset;
    }
    __syncthreads();
    y[blockIdx.x * blockDim.x + t] = acc;
}
"""


def child(rounds: int, runs: int) -> dict:
    """In a checkout's own process: least CPU ms of each kernel."""
    import numpy as np

    from ptxport import Device, LaunchConfig, Program, launch
    from ptxport.runtime.backends.cpu import executor

    executor.set_workers(1)
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    n = BLOCKS * 2 * BLOCK
    y = device.allocate(n * 4, stream=stream)
    program = Program(SOURCE, code_type="c++").compile("native")
    scan = Program((HERE.parent / "tests" / "kernels" / "scan_blelloch.cu").read_text(),
                   code_type="c++").compile("native")
    x, sums = device.allocate(n * 4, stream=stream), device.allocate(BLOCKS * 4, stream=stream)
    shared = 2 * BLOCK * 4

    def least(kernel, args) -> float:
        config = LaunchConfig(grid=BLOCKS, block=BLOCK, shmem_size=shared)
        launch(stream, config, kernel, *args)
        stream.sync()
        best = math.inf
        for _ in range(runs):
            start = time.process_time()
            launch(stream, config, kernel, *args)
            stream.sync()
            best = min(best, time.process_time() - start)
        return best * 1e3

    out = {}
    for name in ("bars", "bars_test"):
        kernel = program.get_kernel(name)
        out[f"{name}@0"] = least(kernel, (y, np.int32(0)))
        out[f"{name}@{rounds}"] = least(kernel, (y, np.int32(rounds)))
    out["blelloch_loops"] = least(program.get_kernel("blelloch_loops"), (y, np.int32(0)))
    out["scan_blelloch"] = least(scan.get_kernel("scan_exclusive_blelloch"),
                                 (x, y, sums, np.int32(n)))
    return out


def _run_child(checkout: Path, rounds: int, runs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--rounds",
               str(rounds), "--runs", str(runs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{checkout}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _per_round(times: dict, name: str, rounds: int) -> float:
    """ns per warp and round of a barrier loop."""
    warps = BLOCKS * BLOCK // 32
    return (times[f"{name}@{rounds}"] - times[f"{name}@0"]) * 1e6 / (warps * rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", type=Path, help="a checkout to compare with")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rounds, args.runs)))
        return
    sides = {"this": HERE.parent} | ({"other": args.other.resolve()} if args.other else {})
    best: dict = {side: {} for side in sides}
    for _ in range(args.repeat):
        for side, checkout in sides.items():
            for key, ms in _run_child(checkout, args.rounds, args.runs).items():
                best[side][key] = min(best[side].get(key, math.inf), ms)
    print(f"least process CPU ms, one worker, {BLOCKS} blocks of {BLOCK} threads; "
          f"{args.repeat} x {args.runs} runs" + (f"; other = {args.other}" if args.other else ""))
    rows = [(f"{name} ({args.rounds} rounds)", f"{name}@{args.rounds}")
            for name in ("bars", "bars_test")] + [(k, k) for k in ("blelloch_loops",
                                                                   "scan_blelloch")]
    print(f"{'kernel':<26} " + " ".join(f"{side:>8}" for side in sides)
          + ("  change" if args.other else ""))
    for label, key in rows:
        cells = [best[side][key] for side in sides]
        change = f"  {100 * (cells[0] / cells[1] - 1):+6.1f}%" if args.other else ""
        print(f"{label:<26} " + " ".join(f"{c:8.2f}" for c in cells) + change)
    for name in ("bars", "bars_test"):
        print(f"ns per warp and round, {name}: " + ", ".join(
            f"{side} {_per_round(best[side], name, args.rounds):.2f}" for side in sides))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu_barriers.json").write_text(json.dumps(
        {"other": str(args.other) if args.other else None, "rounds": args.rounds,
         "ms": best}, indent=2))


if __name__ == "__main__":
    main()
