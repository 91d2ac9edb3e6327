"""How well does ptxport's CPU device use more cores? The large kernels of cpu_kernels.py at
1, 2, 4, ... workers up to every core this process may use (set_workers(k), and
omp_set_num_threads(k) for the C baseline), side by side with C+OpenMP.

For each kernel and worker count it times C and ptxport (launch() + stream.sync(), outputs
reset untimed before each run; in the order --order says) and reports the median of each,
ptxport / C, and the parallel efficiency of each: t(1) / (k * t(k)), 1.0 when k workers are
k times faster than one. Issue 15's goals on 16 cores: ptxport at most 1.5x C on 16 threads,
and ptxport's own efficiency from 1 to 16 cores at least 0.8 on these sizes. The result of
the last run at each worker count is checked against C's. For more than one worker it also
traces three more runs (pool.trace_shares) and reports the medians of when the last worker
began its share ("late", microseconds after the launching thread opened the launch: parked
threads take tens of microseconds each to wake) and of the share of the launch's time the
workers spent outside their shares ("idle": starting late, or done while others still ran),
and the gap from the previous launch's end to the traced one's start ("gap", ms: the
adaptive spin keeps idle workers awake through gaps up to its cap). The header says the
worker pool's idle spin policy (pool.set_spin; --spin S fixes it).

    python benchmarks/cpu_scaling.py [--kernels saxpy,vector_add,gemm] [--reps 7]
                                     [--budget 2.0] [--workers 1,2,4,8,16] [--json PATH]
                                     [--order separate|alternate] [--schedule guided|chunks]
                                     [--omp-wait default|active|passive] [--busy N]
                                     [--spin S | --spin-cap S] [--sizes default|large|both]

prints a table and writes benchmarks/results/cpu_scaling.json (or --json). --order,
--omp-wait, --schedule and --busy are cpu_kernels.py's (add_machine_flags).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_kernels import (  # (a sibling script: benchmarks/ is on sys.path above)
    CASES,
    RESULTS,
    CRun,
    MachineSettings,
    NotRunnable,
    PtxportRun,
    add_machine_flags,
    build_c_library,
    machine,
    machine_settings,
    mismatch,
    set_cores,
    time_side_by_side,
)

from ptxport import Device
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

DEFAULT_KERNELS = ("saxpy", "vector_add", "reduce_shared", "gemm", "transpose", "softmax",
                   "stencil")


def worker_counts(cores: int) -> list[int]:
    """1, 2, 4, ... below `cores`, then `cores`."""
    counts, k = [], 1
    while k < cores:
        counts.append(k)
        k *= 2
    return [*counts, cores]


# --sizes large: each kernel's problem at about 4 to 8 times cpu_kernels.py's work, for runs
# of several milliseconds on 16 cores (the default sizes take 0.4-1.6 ms there, against
# 50-100 us to wake a parked worker thread on the GPU machine's VM).
LARGE = {"saxpy": 1 << 24, "vector_add": 1 << 24, "reduce_shared": 1 << 26, "gemm": 1024,
         "transpose": 4096, "softmax": 16384, "stencil": 4096}


def measure(case, lib, device, objects, counts, settings, size: int | None = None) -> dict:
    """One kernel's row: per worker count, C's and ptxport's medians and their ratio."""
    problem = case.make(size or case.full, np.random.default_rng(0))
    row = {"kernel": case.name, "size": problem.size, "blocks": problem.blocks,
           "status": "ok", "workers": {}}
    c_run, stream = CRun(problem, lib), device.create_stream()
    try:
        ptx_run = PtxportRun(case, problem, device, stream, objects)
        try:
            ptx_run.first_run()     # (compiles the kernel)
            for k in counts:
                set_cores(lib, k)
                c_times, ptx_times = time_side_by_side(c_run, ptx_run, settings.reps,
                                                       settings.budget, settings.order)
                wrong = mismatch(problem, ptx_run.results(), c_run.results())
                if wrong and row["status"] == "ok":
                    row["status"] = f"{wrong} ({k} workers)"
                c_ms = statistics.median(c_times) * 1e3
                ptx_ms = statistics.median(ptx_times) * 1e3
                row["workers"][str(k)] = {"c_ms": c_ms, "ptxport_ms": ptx_ms,
                                          "ratio": ptx_ms / c_ms, "runs": len(c_times),
                                          **shares(ptx_run)}
        finally:
            ptx_run.close()
    except NotRunnable as e:
        row["status"] = str(e)
    stream.close()
    one = row["workers"].get("1")
    for k, cell in row["workers"].items():
        cell["ptxport_efficiency"] = one["ptxport_ms"] / (int(k) * cell["ptxport_ms"])
        cell["c_efficiency"] = one["c_ms"] / (int(k) * cell["c_ms"])
        if cell.get("busy_us") and one.get("busy_us"):
            cell["work"] = cell["busy_us"] / one["busy_us"]
    return row


def shares(ptx_run) -> dict:
    """Medians over 3 traced runs: when the last worker began its share (us after the
    launch opened), the fraction of workers x the launch's time outside shares, the sum of
    the workers' share times (us: the blocks' work, which "work" compares with one
    worker's) and the run's time outside the pool (us: Python's launch and sync)."""
    late, idle, gaps, busy, outside = [], [], [], [], []
    cpu_pool.trace_shares(True)
    try:
        for _ in range(3):
            ptx_run.reset()
            seconds = ptx_run.run()
            # (the pool the launch had: given back to the end of the free list)
            gaps.append(cpu_pool._FREE[-1].spin_state()["gaps"][0] * 1e3)
            record = cpu_pool.last_shares()
            taken = [s for s in record["shares"] if s is not None] if record else []
            if not taken or record["end"] <= 0:
                continue
            late.append(max(begin for begin, _ in taken))
            busy.append(sum(end - begin for begin, end in taken))
            idle.append(1 - busy[-1] / (len(record["shares"]) * record["end"]))
            outside.append(seconds * 1e6 - record["end"])
    finally:
        cpu_pool.trace_shares(False)
    if not late:
        return {}
    return {"late_us": statistics.median(late), "idle": statistics.median(idle),
            "gap_ms": statistics.median(gaps), "busy_us": statistics.median(busy),
            "outside_us": statistics.median(outside)}


def print_table(rows, counts) -> None:
    header = f"{'kernel':<14} {'size':<14} {'blocks':>6} {'workers':>7} | {'C ms':>8} " \
             f"{'C eff':>6} | {'ptxport ms':>10} {'eff':>6} | {'ptxport/C':>9} | " \
             f"{'late us':>7} {'idle':>5} {'work':>5} {'out us':>6} {'gap ms':>6}"
    print(header)
    print("-" * len(header))
    for row in rows:
        if row["status"] != "ok" and not row["workers"]:
            print(f"{row['kernel']:<14} {row['status']}")
            continue
        for k in map(str, counts):
            cell = row["workers"][k]
            traced = f" | {cell['late_us']:7.1f} {cell['idle']:5.2f} " \
                f"{cell.get('work', float('nan')):5.2f} {cell['outside_us']:6.1f} " \
                f"{cell['gap_ms'] if k != '1' else float('nan'):6.2f}" \
                if "late_us" in cell else " |"
            print(f"{row['kernel']:<14} {row['size']:<14} {row['blocks']:>6} {k:>7} | "
                  f"{cell['c_ms']:8.3f} "
                  f"{cell['c_efficiency']:6.2f} | {cell['ptxport_ms']:10.3f} "
                  f"{cell['ptxport_efficiency']:6.2f} | {cell['ratio']:8.2f}x{traced}")
        if row["status"] != "ok":
            print(f"{'':<14} {row['status']}")
    print("-" * len(header))
    print("eff: parallel efficiency t(1) / (workers * t(workers)); goals on 16 cores: "
          "ptxport eff >= 0.8, ptxport/C <= 1.5")
    print("late: when ptxport's last worker began its share (us after the launch opened); "
          "idle: the fraction of workers x time outside their shares; gap: from the previous "
          "launch's end to this one's start, which the pool's adaptive spin follows; work: "
          "the workers' time in their shares over one worker's (above 1: each block takes "
          "longer when k workers run at once: memory bandwidth, clocks); out: the run's time "
          "outside the pool (Python's launch and sync) (medians of 3 traced runs)")


def _sizes(case, which: str) -> list[int | None]:
    """The problem sizes --sizes asks for (None: cpu_kernels.py's)."""
    large = [LARGE[case.name]] if case.name in LARGE else []
    return {"default": [None], "large": large, "both": [None, *large]}[which]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help="comma-separated names: " + ",".join(c.name for c in CASES))
    parser.add_argument("--reps", type=int, default=7, help="timed runs per side (median)")
    parser.add_argument("--budget", type=float, default=2.0,
                        help="seconds of timing per kernel and worker count, after which it "
                             "stops at 3 runs or more")
    parser.add_argument("--workers", help="comma-separated worker counts (default 1, 2, 4, "
                                          "... up to every core)")
    parser.add_argument("--json", type=Path, default=RESULTS / "cpu_scaling.json",
                        help="where to write the results")
    parser.add_argument("--spin-cap", type=float,
                        help="the adaptive spin's cap in seconds (pool.set_spin(None, cap); "
                             "default 0.002; --spin S fixes the spin instead)")
    parser.add_argument("--sizes", choices=("default", "large", "both"), default="default",
                        help="cpu_kernels.py's sizes, the larger ones of LARGE, or both")
    add_machine_flags(parser)
    args = parser.parse_args()
    wanted = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = sorted(set(wanted) - {c.name for c in CASES})
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}")
    counts = [int(k) for k in args.workers.split(",")] if args.workers else \
        worker_counts(cpu_executor.worker_count())
    if counts[0] != 1:
        counts = [1, *counts]       # (efficiency is measured against one worker)
    device = Device("cpu")
    device.set_current()
    objects: dict = {}
    rows = []
    if args.spin_cap is not None:
        cpu_pool.set_spin(None, cap=args.spin_cap)
    with MachineSettings(args):
        lib = build_c_library()
        policy = cpu_pool.spin_policy()
        try:
            for case in (c for c in CASES if c.name in wanted):
                for size in _sizes(case, args.sizes):
                    rows.append(measure(case, lib, device, objects, counts, args, size))
                    print(f"  measured {case.name} {rows[-1]['size']}: {rows[-1]['status']}",
                          file=sys.stderr)
        finally:
            cpu_executor.set_workers(None)
            cpu_pool.set_spin()
    settings = machine_settings(args)
    # (the worker pool's idle spin policy the runs had)
    settings["pool"] = policy
    print(f"ptxport CPU device and C (OpenMP) at 1..{counts[-1]} workers, median of up to "
          f"{args.reps} runs; " + ", ".join(f"{k} {v}" for k, v in settings.items()))
    print_table(rows, counts)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(
        {"machine": machine(), "settings": settings, "reps": args.reps,
         "budget_s": args.budget, "workers": counts, "kernels": rows}, indent=2))


if __name__ == "__main__":
    main()
