"""Where does a launch's time on many workers go beyond 1/k of its time on one?

For cpu_kernels.py's kernels (their problems, reset untimed before each run as there), in
one process, rounds that alternate these configurations (the order reversed in odd rounds,
one untimed run after each switch):
  w1        one worker, the main thread pinned to the last CPU it may use;
  w1busy    the same with a spinning process (plain Python) on each other CPU: what a
            loaded machine's clocks (and shared caches) take from one core's blocks alone;
  wK        K workers (guided claiming, the default); wKchunks: equal chunks;
  wKserial  K workers, the outputs' reset copied by one thread (memmove) instead of the
            pool's threads (copies.py: copies of 4 MiB or more): where the output lines
            lie when the kernel starts (one core's caches and L3, or every worker's L2).
Each run is traced (pool.trace_shares): per configuration, medians of the run's wall time
(launch + sync), the efficiency t(w1) / (k * t), "open" (us from the run's start to the
pool's job opening: Python's launch), the pool's time (job open to every share ended),
"late" (when the last worker began its share), "spread" (first share's end to the last's:
the tail), "work" (the workers' summed share time over one worker's: above 1 each block
took longer), "bal" (the longest share over the shortest) and "post" (from the pool's end
to sync()'s return). The median run of each many-worker configuration is printed worker by
worker with --timeline.

    python benchmarks/cpu_workers.py [KERNEL[:SIZE] ...] [--configs w1,w1busy,w16,...]
                                     [--rounds 4] [--runs 3] [--timeline] [--json PATH]

prints a table per kernel and writes benchmarks/results/cpu_workers.json (every run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cpu_kernels  # (a sibling module: benchmarks/ is on sys.path above)

from ptxport import Device
from ptxport.runtime.backends.cpu import copies as cpu_copies
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT = ("scan_warp", "softmax", "softmax:16384", "stencil", "stencil:4096", "gemm",
           "gemm:1024", "reduce_shared", "vector_add")


def parse_config(name: str) -> tuple[int, str, bool, bool]:
    """(workers, schedule, spinners beside, serial reset copies) of a configuration name."""
    spin = name.endswith("busy")
    serial = name.endswith("serial")
    schedule = "chunks" if name.endswith("chunks") else "guided"
    digits = name[1:].removesuffix("busy").removesuffix("serial").removesuffix("chunks")
    if not name.startswith("w") or not digits.isdigit() or int(digits) < 1:
        raise SystemExit(f"unknown configuration {name!r}")
    return int(digits), schedule, spin, serial


class Machine:
    """Switches the process between configurations."""

    def __init__(self) -> None:
        self.cpus = sorted(os.sched_getaffinity(0))
        self.spinners: list[subprocess.Popen] = []
        self.parallel_bytes = cpu_copies.PARALLEL_BYTES

    def set(self, name: str) -> int:
        workers, schedule, spin, serial = parse_config(name)
        self._spin(spin)
        os.sched_setaffinity(0, {self.cpus[-1]} if workers == 1 else set(self.cpus))
        cpu_executor.set_workers(workers)
        cpu_executor.set_schedule(schedule)
        cpu_copies.PARALLEL_BYTES = 1 << 62 if serial else self.parallel_bytes
        return workers

    def _spin(self, on: bool) -> None:
        if on and not self.spinners:
            self.spinners = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                                               "while 1: pass"]) for cpu in self.cpus[:-1]]
            time.sleep(0.05)
        elif not on:
            self.close()

    def close(self) -> None:
        for process in self.spinners:
            process.kill()
        for process in self.spinners:
            process.wait()
        self.spinners = []
        os.sched_setaffinity(0, set(self.cpus))
        cpu_executor.set_workers(None)
        cpu_executor.set_schedule("guided")
        cpu_copies.PARALLEL_BYTES = self.parallel_bytes


def traced_run(run: cpu_kernels.PtxportRun) -> dict:
    """One run after the reset, with its pool trace."""
    run.reset()
    start = time.monotonic_ns()
    seconds = run.run()
    record = cpu_pool.last_shares()
    out: dict = {"wall_us": seconds * 1e6}
    if record and record["end"] > 0:
        shares = record["shares"]
        taken = [s for s in shares if s is not None]
        lengths = [end - begin for begin, end in taken]
        out.update(open_us=(record["opened_ns"] - start) / 1e3, end_us=record["end"],
                   took=len(taken), late_us=max(begin for begin, _ in taken),
                   spread_us=max(e for _, e in taken) - min(e for _, e in taken),
                   busy_us=sum(lengths), balance=max(lengths) / max(min(lengths), 1e-3),
                   post_us=seconds * 1e6 - (record["opened_ns"] - start) / 1e3
                   - record["end"], shares=shares)
    return out


def _median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def measure(spec: str, configs: list[str], rounds: int, runs: int, machine: Machine,
            device, objects: dict) -> dict:
    """Every configuration's traced runs of one kernel, rounds alternating them."""
    name, _, size = spec.partition(":")
    case = {c.name: c for c in cpu_kernels.CASES}[name]
    problem = case.make(int(size) if size else case.full, np.random.default_rng(0))
    stream = device.create_stream()
    run = cpu_kernels.PtxportRun(case, problem, device, stream, objects)
    rows: dict[str, list[dict]] = {c: [] for c in configs}
    try:
        run.first_run()
        cpu_pool.trace_shares(True)
        for r in range(rounds):
            for config in configs if r % 2 == 0 else configs[::-1]:
                machine.set(config)
                traced_run(run)          # (after the switch: untimed)
                rows[config] += [traced_run(run) for _ in range(runs)]
    finally:
        cpu_pool.trace_shares(False)
        machine.close()
        run.close()
        stream.close()
    return {"size": problem.size, "blocks": problem.blocks, "runs": rows}


def print_kernel(spec: str, result: dict, timeline: bool) -> None:
    rows = result["runs"]
    base = rows.get("w1")
    one_wall = _median(base, "wall_us") if base else float("nan")
    one_busy = _median(base, "busy_us") if base else float("nan")
    print(f"== {spec} ({result['size']}, {result['blocks']} blocks)")
    print(f"{'config':12s} took  wall us   eff open us   pool us late us spread us  work  "
          "bal post us")
    for config, runs in rows.items():
        k = parse_config(config)[0]
        wall = _median(runs, "wall_us")
        print(f"{config:12s} {_median(runs, 'took'):4.0f} {wall:8.1f} "
              f"{one_wall / (k * wall):5.2f} {_median(runs, 'open_us'):7.1f} "
              f"{_median(runs, 'end_us'):9.1f} {_median(runs, 'late_us'):7.1f} "
              f"{_median(runs, 'spread_us'):9.1f} {_median(runs, 'busy_us') / one_busy:5.2f} "
              f"{_median(runs, 'balance'):4.2f} {_median(runs, 'post_us'):7.1f}")
    if timeline:
        for config, runs in rows.items():
            if parse_config(config)[0] == 1 or not runs:
                continue
            middle = sorted(runs, key=lambda r: r["wall_us"])[len(runs) // 2]
            cells = " ".join("-" if s is None else f"{s[0]:.0f}-{s[1]:.0f}"
                             for s in middle.get("shares") or [])
            print(f"  {config} median run, each worker's share (us from the opening): {cells}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", default=list(DEFAULT),
                        help="KERNEL or KERNEL:SIZE (cpu_kernels.py's names and size parameter)")
    parser.add_argument("--configs", default="w1,w1busy,w16,w16chunks,w16serial")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3, help="traced runs a config a round")
    parser.add_argument("--timeline", action="store_true",
                        help="print each many-worker configuration's median run by worker")
    parser.add_argument("--json", type=Path, default=RESULTS / "cpu_workers.json")
    args = parser.parse_args()
    configs = args.configs.split(",")
    for config in configs:
        parse_config(config)
    machine, device, objects, report = Machine(), Device("cpu"), {}, {}
    try:
        for spec in args.kernels:
            report[spec] = measure(spec, configs, args.rounds, args.runs, machine, device,
                                   objects)
            print_kernel(spec, report[spec], args.timeline)
    finally:
        machine.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
