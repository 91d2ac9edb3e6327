"""Does the CPU device's worker pool take cores from the rest of the process, and do its
workers catch the next launch awake? Its idle threads watch for the next launch for a while
(pool.set_spin) before they park: long enough that a program's next kernel finds them awake,
short enough that a process that launches rarely has its cores back for its other libraries.

Two parts, each policy side by side in one process (adaptive: the default; fixed 0.1 ms: the
default before it; fixed 2 ms: what starved torch's matmul in the same process):
  neighbour  rounds of one saxpy launch (+ sync) then about --numpy-ms of numpy matmul
             (OpenBLAS threads on every core), and the same rounds without a launch ("no
             ptxport"): numpy's GFLOP/s over its first 2 ms (where a spinning worker would
             take a core) and over all of it, medians over rounds, and their ratio to no
             ptxport's;
  frequent   launches --gaps ms apart (the launching thread busy in Python meanwhile, as a
             program preparing its next launch): median launch wall time, the share of
             helper threads parked when a launch opened, when the last worker began its
             share (pool.trace_shares: "late", us after the launch opened;
             parked workers take tens of us each to wake) and the process's CPU time per
             launch and gap (what spinning costs).

    python benchmarks/cpu_spin_neighbour.py [--rounds 11] [--numpy-ms 50] [--gaps 0.2,1,5]
                                            [--launches 30] [--workers N] [--size 262144]
                                            [--caps 5,10]

prints two tables and writes benchmarks/results/cpu_spin_neighbour.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

RESULTS = Path(__file__).resolve().parent / "results"

# saxpy(x, y, a, n): y[i] = a * x[i] + y[i], one element per thread.
SAXPY_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)
{
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<6>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r5, [n];
    setp.ge.u32 %p1, %r4, %r5;
    @%p1 bra $done;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    ld.global.f32 %f2, [%rd5];
    ld.param.f32 %f3, [a];
    fma.rn.f32 %f2, %f3, %f1, %f2;
    st.global.f32 [%rd5], %f2;
$done:
    ret;
}
"""

# label: set_spin's argument (None: adaptive)
# Seconds between the two parts (what the first part's threads do meanwhile ends).
SETTLE_S = 1.0
POLICIES = {"adaptive": (None,), "fixed 0.1 ms": (1e-4,), "fixed 2 ms": (2e-3,)}


def add_caps(caps: str) -> None:
    """--caps: more policies, the adaptive spin with each of these caps (ms)."""
    for cap in (float(c) for c in caps.split(",") if c.strip()):
        POLICIES[f"adaptive {cap:g} ms"] = (None, cap / 1e3)
MATMUL_N, FIRST_MS = 256, 2.0


class Saxpy:
    """One saxpy launch of `size` elements on the CPU device, synchronised."""

    def __init__(self, size: int):
        device = Device("cpu")
        device.set_current()
        self.stream = device.create_stream()
        self.x = device.allocate(4 * size, stream=self.stream)
        self.y = device.allocate(4 * size, stream=self.stream)
        self.x.copy_from(np.ones(size, np.float32), stream=self.stream)
        self.y.copy_from(np.zeros(size, np.float32), stream=self.stream)
        self.kernel = Program(SAXPY_PTX, code_type="ptx").compile("native").get_kernel("saxpy")
        self.config = LaunchConfig(grid=(size + 255) // 256, block=256)
        self.size, self.runs = size, 0

    def __call__(self) -> None:
        launch(self.stream, self.config, self.kernel, self.x, self.y, np.float32(1),
               np.uint32(self.size))
        self.stream.sync()
        self.runs += 1

    def check(self) -> None:
        out = np.empty(self.size, np.float32)
        self.y.copy_to(out, stream=self.stream)
        self.stream.sync()
        if not (out == self.runs).all():
            raise SystemExit(f"saxpy's result is wrong after {self.runs} launches")


def neighbour(saxpy: Saxpy, rounds: int, numpy_ms: float) -> dict:
    """Numpy matmul GFLOP/s after one launch, per policy, and with no launch: over the first
    FIRST_MS (where a spin that does not end takes cores) and over all `numpy_ms`."""
    a = np.random.default_rng(0).random((MATMUL_N, MATMUL_N), dtype=np.float32)
    start = time.perf_counter()
    for _ in range(5):
        a @ a
    each = (time.perf_counter() - start) / 5
    first = max(1, round(FIRST_MS / 1e3 / each))
    rest = max(1, round(numpy_ms / 1e3 / each) - first)
    flops = 2 * MATMUL_N ** 3
    rates: dict[str, list[tuple[float, float]]] = {"no ptxport": [],
                                                   **{label: [] for label in POLICIES}}
    for _ in range(rounds):
        for label in rates:
            if label in POLICIES:
                cpu_pool.set_spin(*POLICIES[label])
                saxpy()
            start = time.perf_counter()
            for _ in range(first):
                a @ a
            middle = time.perf_counter()
            for _ in range(rest):
                a @ a
            end = time.perf_counter()
            rates[label].append((flops * first / (middle - start) / 1e9,
                                 flops * (first + rest) / (end - start) / 1e9))
    medians = {label: [statistics.median(r[i] for r in runs) for i in (0, 1)]
               for label, runs in rates.items()}
    alone = medians["no ptxport"]
    return {label: {"first_gflops": m[0], "first_ratio": m[0] / alone[0],
                    "gflops": m[1], "ratio": m[1] / alone[1]} for label, m in medians.items()}


def frequent(saxpy: Saxpy, gap_ms: float, launches: int) -> dict:
    """Per policy, launches `gap_ms` apart: wall, late and CPU time (medians)."""
    row = {}
    for label, policy in POLICIES.items():
        cpu_pool.set_spin(*policy)
        walls, late, asleep = [], [], []
        helpers = cpu_pool._FREE[-1]._threads[:cpu_executor.worker_count() - 1]
        cpu = time.process_time()
        wall = time.perf_counter()
        cpu_pool.trace_shares(True)
        try:
            for _ in range(launches):
                until = time.perf_counter() + gap_ms / 1e3
                while time.perf_counter() < until:
                    pass
                asleep.append(sum(int(t[cpu_pool._PARKED]) for t in helpers) / len(helpers))
                start = time.perf_counter()
                saxpy()
                walls.append(time.perf_counter() - start)
                record = cpu_pool.last_shares()
                taken = [s for s in record["shares"] if s is not None] if record else []
                if len(taken) == len(record["shares"]):
                    late.append(max(begin for begin, _ in taken))
        finally:
            cpu_pool.trace_shares(False)
        row[label] = {"wall_us": statistics.median(walls) * 1e6,
                      "asleep": statistics.mean(asleep),
                      "late_us": statistics.median(late) if late else None,
                      "shared": len(late) / launches,
                      "cpu_ms_per_launch": (time.process_time() - cpu) / launches * 1e3,
                      "wall_ms_per_launch": (time.perf_counter() - wall) / launches * 1e3}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="neighbour rounds (median)")
    parser.add_argument("--numpy-ms", type=float, default=50.0,
                        help="milliseconds of numpy matmul after each launch")
    parser.add_argument("--gaps", default="0.2,1,5", help="ms between frequent launches")
    parser.add_argument("--launches", type=int, default=30, help="launches per gap, policy")
    parser.add_argument("--workers", type=int, help="workers (default: one per core)")
    parser.add_argument("--size", type=int, default=1 << 18, help="saxpy's elements")
    parser.add_argument("--caps", default="",
                        help="comma-separated caps (ms) of more adaptive policies to compare")
    args = parser.parse_args()
    add_caps(args.caps)
    cpu_executor.set_workers(args.workers)
    saxpy = Saxpy(args.size)
    saxpy()                 # (compiles the kernel)
    workers = cpu_executor.worker_count() if args.workers is None else args.workers
    try:
        near = neighbour(saxpy, args.rounds, args.numpy_ms)
        # (numpy's BLAS threads spin a while after its last matmul: on the GPU machine the
        # first gaps timed right after took 16-38 ms of CPU per launch with every policy)
        time.sleep(SETTLE_S)
        gaps = {gap: frequent(saxpy, gap, args.launches)
                for gap in (float(g) for g in args.gaps.split(","))}
    finally:
        cpu_pool.set_spin()
        cpu_executor.set_workers(None)
    saxpy.check()
    print(f"{workers} workers, saxpy of {args.size} elements; adaptive: "
          f"{cpu_pool.spin_policy()}")
    print(f"numpy {MATMUL_N}x{MATMUL_N} float32 matmul after one launch, GFLOP/s over its "
          f"first {FIRST_MS:g} ms and over all {args.numpy_ms:g} ms (median of {args.rounds} "
          "rounds), and each / no ptxport's")
    for label, cell in near.items():
        print(f"  {label:<16} first {cell['first_gflops']:8.1f} ({cell['first_ratio']:5.2f}x)"
              f"   all {cell['gflops']:8.1f} ({cell['ratio']:5.2f}x)")
    print(f"launches with a busy gap between them (medians of {args.launches}): launch wall "
          "us | helpers parked when it opened | late us (launches every worker took part in)"
          " | process CPU ms per launch+gap")
    for gap, row in gaps.items():
        for label, cell in row.items():
            late = "-" if cell["late_us"] is None else f"{cell['late_us']:7.1f}"
            print(f"  gap {gap:4g} ms  {label:<16} {cell['wall_us']:8.1f} | "
                  f"{cell['asleep']:4.0%} | {late:>7} "
                  f"({cell['shared']:4.0%}) | {cell['cpu_ms_per_launch']:6.2f} of "
                  f"{cell['wall_ms_per_launch']:6.2f} wall")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu_spin_neighbour.json").write_text(json.dumps({
        "workers": workers, "size": args.size, "policy": cpu_pool.spin_policy(),
        "neighbour": near, "frequent": {str(g): r for g, r in gaps.items()}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
