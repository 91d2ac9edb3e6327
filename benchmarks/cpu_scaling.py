"""How well does ptxport's CPU device use more cores? The large kernels of cpu_kernels.py at
1, 2, 4, ... workers up to every core this process may use (set_workers(k), and
omp_set_num_threads(k) for the C baseline), side by side with C+OpenMP.

For each kernel it times C and ptxport (launch() + stream.sync(), outputs reset untimed
before each run) at every worker count *interleaved*: --processes fresh processes (3 by
default), one after another, the odd ones in reverse kernel order, each first running C on
its cores for --warmup seconds, then per kernel --rounds rounds, each a C and a ptxport block
at every worker count, the whole round reversed in odd ones (1c 1p 16c 16p | 16p 16c 1p 1c |
...), each block after its warm-up runs (cpu_kernels.py's), so that a worker count's times
and the one-worker times its efficiency divides come from the same stretch of the host: on
the GPU host its single cores run in slow and fast phases (core-bound code 1.5-1.6x slower),
and the one-worker gemm took 104-110 ms on CPU 15 in the processes of one call and 195-203
ms in those of another, 16 workers 14-15 ms in both (efficiency 0.46 in one, 0.82 in the
other), when each process was two: a pinned one for one worker, then an unpinned one for
the rest. Now the one-worker blocks run with the main thread pinned (sched_setaffinity of
that thread alone; libgomp's and the pool's threads start unpinned, before) to one CPU:
with --pin rotate (the default) process i's to the i-th CPU from the last. A clock probe of
plain Python work (bench_stats.probe_ms) is timed before and after each block, and a second
table gives per worker count the probe beside ptxport's blocks over beside C's, the cell's
phase (its probes over its process's fastest), the phase-matched ptxport / C, and the
phase-matched efficiencies of ptxport and C: per round, the one-worker block against the
k-worker one where all their probes lie within 15% (bench_stats.PHASE_TOLERANCE), medians
over those pairs, then over processes, with the pairs kept of all (the probe at k workers
reads the main thread's core only).
The table gives per kernel, size and worker count the medians over processes of C's and
ptxport's median times and of the processes' ratios ptxport / C (with their least and
largest), and the parallel efficiency of each side, t(1) / (k * t(k)), from the median
times, with the least and largest of the processes' own efficiencies
(bench_stats.merge_scaling). Issue 15's goals on 16 cores: ptxport at most 1.5x C on 16
threads, and ptxport's own efficiency from 1 to 16 cores at least 0.8 on these sizes. The
result of the last run at each worker count is checked against C's. Each process also
traces three more runs per worker count (pool.trace_shares) and reports the medians of when
the last helper thread began its share ("late", microseconds after the launching thread
opened the launch: parked threads take tens of microseconds each to wake), of the run's
time outside the pool ("out") and of it before the job opened ("open"), and of the share of
the launch's time the workers spent outside their shares ("idle": starting late, or done
while others still ran), and the gap from the previous launch's end to the traced one's
start ("gap", ms: the adaptive spin keeps idle workers awake through gaps up to its cap).
The header says the worker pool's idle spin policy (pool.set_spin; --spin S fixes it).

    python benchmarks/cpu_scaling.py [--kernels saxpy,vector_add,gemm] [--processes 3]
                                     [--reps 6] [--rounds 3] [--budget 1.0] [--pin rotate]
                                     [--workers 1,2,4,8,16] [--json PATH]
                                     [--order rounds|separate|alternate]
                                     [--schedule guided|chunks] [--warmup 0.3]
                                     [--omp-wait default|active|passive] [--busy N]
                                     [--spin S | --spin-cap S] [--sizes default|large|both]

prints a table and writes benchmarks/results/cpu_scaling.json (or --json): per kernel and
size the merged cells (c_ms, ptxport_ms, ratio medians over processes, ratio_min/max,
per_process, c_efficiency and ptxport_efficiency with their _min/_max, the traced columns'
medians, work, the phase columns: probe_ratio, phase, matched_ratio, pairs, matched, and
eff_/c_eff_ ones for the efficiencies), and under "processes" each process's own rows (each
cell's "blocks" with their probes). --order separate or alternate times each worker count in
turn instead (one block a side, probed before and after both). --processes 1 --pin none
measures in this process. --order, --rounds, --omp-wait, --schedule and --busy are
cpu_kernels.py's (add_machine_flags).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_stats  # (sibling modules: benchmarks/ is on sys.path above)
from cpu_kernels import (
    CASES,
    CPUS_SEEN,
    PROCESSES,
    RESULTS,
    SETTLE_S,
    WARMUP_S,
    CRun,
    MachineSettings,
    NotRunnable,
    PtxportRun,
    _time_alone,
    add_machine_flags,
    build_c_library,
    current_cpu,
    describe_protocol,
    machine,
    machine_settings,
    mismatch,
    pin_cpu,
    print_processes,
    process_info,
    set_cores,
    time_side_by_side,
    warm_cores,
)

from ptxport import Device
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

# Rounds of every worker count's blocks (time_interleaved): fewer than cpu_kernels.py's, as
# each round has two blocks a worker count and a pause after C's on several workers.
ROUNDS = 3
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


def measure(case, lib, device, objects, counts, settings, size: int | None = None,
            pin: int | None = None) -> dict:
    """One kernel's row in this process: its worker counts' blocks interleaved
    (time_interleaved), then per worker count C's and ptxport's medians, their ratio, the
    phase columns (bench_stats' phase notes: C against ptxport, and ptxport's and C's
    one-worker blocks against their k-worker ones for the efficiency), the traced columns
    (shares) and the check of that count's last run against C's; efficiencies over
    processes come from bench_stats.merge_scaling."""
    problem = case.make(size or case.full, np.random.default_rng(0))
    row = {"kernel": case.name, "size": problem.size, "blocks": problem.blocks,
           "status": "ok", "workers": {}}
    c_run, stream = CRun(problem, lib), device.create_stream()
    try:
        ptx_run = PtxportRun(case, problem, device, stream, objects)
        try:
            ptx_run.first_run()     # (compiles the kernel; on every core, unpinned)
            blocks = time_interleaved(c_run, ptx_run, lib, counts, settings, pin)
            for k in counts:
                set_cores(lib, k)
                with pinned(pin if k == 1 else None):
                    traced = shares(ptx_run)
                    wrong = mismatch(problem, ptx_run.results(), c_run.results())
                if wrong and row["status"] == "ok":
                    row["status"] = f"{wrong} ({k} workers)"
                row["workers"][str(k)] = cell(blocks, k, traced)
        finally:
            ptx_run.close()
    except NotRunnable as e:
        row["status"] = str(e)
    stream.close()
    return row


@contextlib.contextmanager
def pinned(cpu: int | None):
    """The calling thread alone (sched_setaffinity of thread 0: not libgomp's or the pool's
    threads, which started unpinned) on `cpu` inside; nothing for None."""
    if cpu is None:
        yield
        return
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def time_interleaved(c_run: CRun, ptx_run: PtxportRun, lib, counts: list[int], settings,
                     pin: int | None) -> list[dict]:
    """--rounds rounds, each a C and a ptxport block (cpu_kernels.py's _time_alone: warm-up
    runs, then -(-reps // rounds) timed runs in budget / (2 * rounds) seconds) at every
    worker count, the whole round reversed in odd ones (1c 1p 16c 16p | 16p 16c 1p 1c | ...),
    the one-worker blocks with the main thread pinned to `pin`; the clock probe before and
    after each block (the one after a block being the next one's before where the next has
    the same worker count, else probed afresh in the next one's placement), the settle pause
    after C on several workers where ptxport's block follows; it stops after the round in
    which budget x worker counts ran out, but not before the second round (the first
    reversed: gemm's one-worker blocks at the large size take most of a second). The blocks,
    with "workers". Another --order (separate, alternate) times each worker count in turn
    as cpu_kernels.py's time_side_by_side does: one block a side, the probe before and after
    the two."""
    if settings.order != "rounds":
        return _side_by_side_blocks(c_run, ptx_run, lib, counts, settings, pin)
    per_block = -(-settings.reps // settings.rounds)
    block_budget = settings.budget / (2 * settings.rounds)
    total = settings.budget * len(counts)
    runs = {"c": c_run, "ptxport": ptx_run}
    sequence = [(r, k, side) for r, order in enumerate(bench_stats.block_order(settings.rounds))
                for k in (counts if r % 2 == 0 else counts[::-1]) for side in order]
    blocks: list[dict] = []
    start, probe = time.perf_counter(), None
    for i, (round_number, k, side) in enumerate(sequence):
        following = sequence[i + 1] if i + 1 < len(sequence) else None
        set_cores(lib, k)
        with pinned(pin if k == 1 else None):
            if probe is None:
                probe = bench_stats.probe_ms()
            warm: list[float] = []
            ms = _time_alone(runs[side], per_block, block_budget, least=1, warm=warm)
            if k == 1:
                CPUS_SEEN.add(current_cpu())
            if side == "c" and k > 1 and following and following[2] == "ptxport":
                time.sleep(SETTLE_S)
            after = bench_stats.probe_ms()
        blocks.append({"side": side, "workers": k, "round": round_number,
                       "ms": [t * 1e3 for t in ms], "warm_ms": [t * 1e3 for t in warm],
                       "probe_ms": [probe, after]})
        probe = after if following and following[1] == k else None
        if following is None or following[0] == round_number:
            continue
        elapsed = time.perf_counter() - start
        if elapsed >= total and round_number >= 1:
            break
    return blocks


def _side_by_side_blocks(c_run, ptx_run, lib, counts, settings, pin) -> list[dict]:
    """time_interleaved's other orders: per worker count time_side_by_side, as one block a
    side probed before and after both."""
    blocks = []
    for k in counts:
        set_cores(lib, k)
        with pinned(pin if k == 1 else None):
            before = bench_stats.probe_ms()
            times = time_side_by_side(c_run, ptx_run, settings.reps, settings.budget,
                                      settings.order, settings.rounds,
                                      SETTLE_S if k > 1 else 0.0)
            if k == 1:
                CPUS_SEEN.add(current_cpu())
            after = bench_stats.probe_ms()
        blocks += [{"side": side, "workers": k, "round": 0, "ms": [t * 1e3 for t in ms],
                    "warm_ms": [], "probe_ms": [before, after]}
                   for side, ms in zip(("c", "ptxport"), times, strict=True)]
    return blocks


def cell(blocks: list[dict], k: int, traced: dict) -> dict:
    """One worker count's cell of a process's row from the interleaved blocks."""
    mine = [b for b in blocks if b["workers"] == k]
    c_times = [t for b in mine if b["side"] == "c" for t in b["ms"]]
    ptx_times = [t for b in mine if b["side"] == "ptxport" for t in b["ms"]]
    c_ms, ptx_ms = statistics.median(c_times), statistics.median(ptx_times)
    out = {"c_ms": c_ms, "ptxport_ms": ptx_ms, "ratio": ptx_ms / c_ms, "runs": len(c_times),
           "c_runs_ms": c_times, "ptxport_runs_ms": ptx_times, "blocks": mine,
           **bench_stats.warm_fields(mine), **traced,
           **bench_stats.phase_fields(mine, lambda b: b["side"] == "c",
                                      lambda b: b["side"] == "ptxport")}
    if k != 1:
        for side, prefix in (("ptxport", "eff_"), ("c", "c_eff_")):
            out.update(bench_stats.phase_fields(
                blocks, lambda b, s=side: b["side"] == s and b["workers"] == 1,
                lambda b, s=side: b["side"] == s and b["workers"] == k, prefix,
                lambda one, many: one / (k * many)))
    return out


def shares(ptx_run) -> dict:
    """Medians over 3 traced runs (after one untraced run: the timed runs' caches, not
    those the result check left): when the last helper thread began its share (us after
    the launch opened; worker 0, the launching thread, joins a launch started early only at
    the sync), the fraction of workers x the launch's time outside shares, the sum of the
    workers' share times (us: the blocks' work, which "work" compares with one worker's),
    the run's time outside the pool (us: Python's launch and sync) and of that the time
    from the run's start to the job's opening (us)."""
    late, idle, gaps, busy, outside, opened = [], [], [], [], [], []
    ptx_run.reset()
    ptx_run.run()
    cpu_pool.trace_shares(True)
    try:
        for _ in range(3):
            ptx_run.reset()
            start = time.monotonic_ns()
            seconds = ptx_run.run()
            # (the pool the launch had: given back to the end of the free list)
            gaps.append(cpu_pool._FREE[-1].spin_state()["gaps"][0] * 1e3)
            record = cpu_pool.last_shares()
            taken = [s for s in record["shares"] if s is not None] if record else []
            if not taken or record["end"] <= 0:
                continue
            helpers = [s for s in record["shares"][1:] if s is not None] or taken
            late.append(max(begin for begin, _ in helpers))
            busy.append(sum(end - begin for begin, end in taken))
            idle.append(1 - busy[-1] / (len(record["shares"]) * record["end"]))
            outside.append(seconds * 1e6 - record["end"])
            opened.append((record["opened_ns"] - start) / 1e3)
    finally:
        cpu_pool.trace_shares(False)
    if not late:
        return {}
    return {"late_us": statistics.median(late), "idle": statistics.median(idle),
            "gap_ms": statistics.median(gaps), "busy_us": statistics.median(busy),
            "outside_us": statistics.median(outside), "open_us": statistics.median(opened)}


def _span(cell: dict, name: str) -> str:
    """ "min-max" of a merged cell's per-process values, or "" with one process."""
    low, high = cell.get(f"{name}_min"), cell.get(f"{name}_max")
    return f"{low:.2f}-{high:.2f}" if low is not None and cell.get("processes", 1) > 1 else ""


def print_table(rows, counts) -> None:
    header = f"{'kernel':<13} {'size':<14} {'blocks':>6} {'wk':>3} | {'C ms':>8} " \
             f"{'C eff':>5} | {'ptxport ms':>10} {'eff':>5} {'eff range':>9} | " \
             f"{'ptx/C':>5} {'range':>9} | {'late us':>7} {'idle':>5} {'work':>5} " \
             f"{'out us':>6} {'open':>5} {'gap ms':>6}"
    print(header)
    print("-" * len(header))
    for row in rows:
        if row["status"] != "ok" and not row["workers"]:
            print(f"{row['kernel']:<13} {row['status']}")
            continue
        for k in map(str, counts):
            cell = row["workers"].get(k)
            if not cell or "ptxport_ms" not in cell:
                continue
            nan = float("nan")
            gap = cell["gap_ms"] if k != "1" and "gap_ms" in cell else nan
            traced = f" | {cell['late_us']:7.1f} {cell['idle']:5.2f} " \
                f"{cell.get('work', nan):5.2f} {cell['outside_us']:6.1f} " \
                f"{cell.get('open_us', nan):5.0f} {gap:6.2f}" if "late_us" in cell else " |"
            span = _span(cell, "ratio")
            print(f"{row['kernel']:<13} {row['size']:<14} {row['blocks']:>6} {k:>3} | "
                  f"{cell['c_ms']:8.3f} {cell.get('c_efficiency', nan):5.2f} | "
                  f"{cell['ptxport_ms']:10.3f} {cell.get('ptxport_efficiency', nan):5.2f} "
                  f"{_span(cell, 'ptxport_efficiency'):>9} | {cell['ratio']:5.2f} {span:>9}"
                  f"{traced}")
        if row["status"] != "ok":
            print(f"{'':<13} {row['status']}")
    print("-" * len(header))
    print("ms and ptx/C: medians over processes (ptx/C the median of each process's ratio); "
          "eff: parallel efficiency t(1) / (workers * t(workers)) from the median times, "
          "eff range the least and largest of the processes' own; goals on 16 cores: "
          "ptxport eff >= 0.8, ptxport/C <= 1.5")
    print("late: when ptxport's last helper thread began its share (us after the launch "
          "opened); "
          "idle: the fraction of workers x time outside their shares; gap: from the previous "
          "launch's end to this one's start, which the pool's adaptive spin follows; work: "
          "the workers' time in their shares over one worker's (above 1: each block takes "
          "longer when k workers run at once: memory bandwidth, clocks); out: the run's time "
          "outside the pool (Python's launch and sync), open the part before the job opened "
          "(medians of 3 traced runs a process, then over processes)")


def print_phases(rows, counts) -> None:
    """The host's phases beside the table (bench_stats' phase notes), per kernel, size and
    worker count: medians over processes of the probe beside ptxport's blocks over beside
    C's ("probe P/C"), of the cell's phase (its probes over its process's fastest), of the
    phase-matched ptxport / C with the pairs kept of all, and of the phase-matched
    efficiencies: per round, ptxport's (C's) one-worker block against its k-worker one where
    their probes agree, with the probe at k over the probe at 1 ("probe k/1")."""
    if not any("pairs" in c for r in rows for c in r["workers"].values()):
        return
    nan = float("nan")
    header = f"{'phases':<13} {'size':<14} {'wk':>3} | {'probe P/C':>9} {'phase':>5} " \
             f"{'matched':>7} {'pairs':>7} | {'probe k/1':>9} {'m-eff':>5} {'pairs':>7} " \
             f"{'C m-eff':>7} {'pairs':>7} | {'cold':>5} {'warm':>5}"
    print(header)
    for row in rows:
        for k in map(str, counts):
            cell = row["workers"].get(k)
            if not cell or "pairs" not in cell:
                continue
            pairs = f"{cell['matched']}/{cell['pairs']}"
            eff = f"{cell.get('eff_matched', 0)}/{cell.get('eff_pairs', 0)}"
            c_eff = f"{cell.get('c_eff_matched', 0)}/{cell.get('c_eff_pairs', 0)}"
            print(f"{row['kernel']:<13} {row['size']:<14} {k:>3} | "
                  f"{cell.get('probe_ratio', nan):9.2f} {cell.get('phase', nan):5.2f} "
                  f"{cell.get('matched_ratio', nan):7.2f} {pairs:>7} | "
                  f"{cell.get('eff_probe_ratio', nan):9.2f} "
                  f"{cell.get('eff_matched_ratio', nan):5.2f} {eff:>7} "
                  f"{cell.get('c_eff_matched_ratio', nan):7.2f} {c_eff:>7} | "
                  f"{cell.get('cold', nan):5.2f} {cell.get('warm', nan):5.2f}")
    print(f"phases: the clock probe (bench_stats.probe_ms) beside each block; a pair (C and "
          f"ptxport at k workers; ptxport, or C, at 1 and at k) is matched where the two "
          f"blocks of one round have all their probes within "
          f"{bench_stats.PHASE_TOLERANCE:.0%} of each other; matched and m-eff: medians over "
          f"the matched pairs of ptxport / C and of t(1) / (k * t(k)), then over processes; "
          f"cold, warm: a block's first and last untimed run over its timed median")


def _sizes(case, which: str) -> list[int | None]:
    """The problem sizes --sizes asks for (None: cpu_kernels.py's)."""
    large = [LARGE[case.name]] if case.name in LARGE else []
    return {"default": [None], "large": large, "both": [None, *large]}[which]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                        help="comma-separated names: " + ",".join(c.name for c in CASES))
    parser.add_argument("--reps", type=int, default=6,
                        help="timed runs per side, worker count and process (median), split "
                             "over --rounds")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="seconds of timing per kernel, worker count and process, after "
                             "which it stops at the end of a round")
    parser.add_argument("--workers", help="comma-separated worker counts (default 1, 2, 4, "
                                          "... up to every core)")
    parser.add_argument("--processes", type=int, default=PROCESSES,
                        help="fresh processes, one after another, each measuring everything; "
                             "the table gives medians over them (1 with --pin none: this "
                             "process)")
    parser.add_argument("--pin", default="rotate",
                        help="a CPU for the one-worker blocks (the main thread pinned to "
                             "it while they run); 'rotate' (default): process i's to the "
                             "i-th CPU from the last this process may use; 'auto': the "
                             "last; 'none'")
    parser.add_argument("--warmup", type=float, default=WARMUP_S,
                        help="seconds each process runs C on its cores before timing")
    parser.add_argument("--json", type=Path, default=RESULTS / "cpu_scaling.json",
                        help="where to write the results")
    parser.add_argument("--spin-cap", type=float,
                        help="the adaptive spin's cap in seconds (pool.set_spin(None, cap); "
                             "default 0.002; --spin S fixes the spin instead)")
    parser.add_argument("--sizes", choices=("default", "large", "both"), default="default",
                        help="cpu_kernels.py's sizes, the larger ones of LARGE, or both")
    parser.add_argument("--child", type=int, metavar="INDEX", help=argparse.SUPPRESS)
    parser.add_argument("--child-pin", type=int, help=argparse.SUPPRESS)
    add_machine_flags(parser, order="rounds", rounds=ROUNDS)
    args = parser.parse_args()
    wanted = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = sorted(set(wanted) - {c.name for c in CASES})
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}")
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    args.cases = [c for c in CASES if c.name in wanted]
    return args


def measure_all(args: argparse.Namespace, counts: list[int], index: int = 0) -> dict:
    """This process's rows at `counts` workers (odd `index`: the kernels in reverse order)
    after --warmup seconds of C on every core it may use, and where it ran."""
    begin = time.perf_counter()
    cases = args.cases[::-1] if index % 2 else args.cases
    device = Device("cpu")
    device.set_current()
    objects: dict = {}
    rows = []
    if args.spin_cap is not None:
        cpu_pool.set_spin(None, cap=args.spin_cap)
    with MachineSettings(args):
        lib = build_c_library()
        warm_cores(lib, counts[-1], args.warmup)
        policy = cpu_pool.spin_policy()
        try:
            for case in cases:
                for size in _sizes(case, args.sizes):
                    rows.append(measure(case, lib, device, objects, counts, args, size,
                                        args.child_pin))
                    print(f"  {'' if args.child is None else f'[{index + 1}] '}measured "
                          f"{case.name} {rows[-1]['size']}: {rows[-1]['status']}",
                          file=sys.stderr)
        finally:
            cpu_executor.set_workers(None)
            cpu_pool.set_spin()
    order = {c.name: i for i, c in enumerate(args.cases)}
    rows.sort(key=lambda row: order[row["kernel"]])
    bench_stats.phase_levels(cell for row in rows for cell in row["workers"].values())
    info = process_info(index, time.perf_counter() - begin,
                        "reverse" if index % 2 else "forward", counts)
    return {"kernels": rows, "process": info, "pool": policy}


def pin_cpus(choice: str) -> list[int] | None:
    """--pin's CPUs, one for each process in turn ("rotate": every CPU this process may use,
    the last first; else cpu_kernels.pin_cpu's one); None: no pinning."""
    if choice != "rotate":
        pin = pin_cpu(choice)
        return None if pin is None else [pin]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return cpus[::-1] if len(cpus) > 1 else None


def run_processes(args, counts: list[int], pins: list[int] | None) \
        -> tuple[list, list, str]:
    """--processes fresh processes of this script, one after another, each measuring every
    worker count (interleaved: time_interleaved), its one-worker blocks with the main thread
    pinned to the next of `pins` in turn. Each process's rows, their info, and the pool's
    spin policy."""
    runs, infos, policy = [], [], ""
    for index in range(args.processes):
        command = [sys.executable, __file__, *sys.argv[1:], "--child", str(index)]
        if pins:
            command += ["--child-pin", str(pins[index % len(pins)])]
        result = bench_stats.run_child(command, None, f"{index + 1} of {args.processes}")
        if result is None:
            continue
        infos.append(dict(result["process"], kernels=result["kernels"]))
        policy = result["pool"]
        runs.append(result["kernels"])
        # (what is measured so far, should a later process not end)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"partial": True, "workers": counts,
                                         "kernels": bench_stats.merge_scaling(runs),
                                         "processes": infos}, indent=2))
    if not runs:
        sys.exit(f"all {args.processes} processes failed")
    return runs, infos, policy


def main() -> None:
    args = parse_args()
    counts = [int(k) for k in args.workers.split(",")] if args.workers else \
        worker_counts(cpu_executor.worker_count())
    if counts[0] != 1:
        counts = [1, *counts]       # (efficiency is measured against one worker)
    if args.child is not None:
        print(json.dumps(measure_all(args, counts, args.child)))
        return
    if args.processes == 1 and args.pin == "none":
        measured = measure_all(args, counts)
        runs, policy = [measured["kernels"]], measured["pool"]
        infos = [dict(measured["process"], kernels=measured["kernels"])]
    else:
        runs, infos, policy = run_processes(args, counts, pin_cpus(args.pin))
    rows = bench_stats.merge_scaling(runs)
    settings = machine_settings(args)
    # (the worker pool's idle spin policy the runs had)
    settings["pool"] = policy
    print(f"ptxport CPU device and C (OpenMP) at 1..{counts[-1]} workers, "
          f"{describe_protocol(args)}; " + ", ".join(f"{k} {v}" for k, v in settings.items()))
    print_table(rows, counts)
    print_phases(rows, counts)
    print_processes(infos)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(
        {"machine": machine(), "settings": settings, "reps": args.reps,
         "budget_s": args.budget, "workers": counts, "kernels": rows,
         "processes": infos}, indent=2))


if __name__ == "__main__":
    main()
