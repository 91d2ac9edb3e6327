"""Is this checkout's CPU code faster than another's, kernel by kernel, on one worker?

Runs cpu_kernels.py's kernels (its problems, its C baselines) on one worker with this
checkout's ptxport and with OTHER's (another checkout or worktree), alternating the two in
child processes (both use this checkout's cpu_kernels.py and corpus) for --rounds rounds,
and times each run in *process CPU time* (time.process_time) rather than wall time: on a
shared, loaded machine other processes' load stretches wall time but not the CPU time the
run itself uses (cache sharing still adds noise). Each round gives both children the same
environment padding of a random length and alternates which runs first: where a process's
stack and arrays land (its environment's size moves the stack) changed one kernel's CPU time
by up to 20% between two identical checkouts on a 2-core AMD machine (saxpy +22%, stencil
-18% for the same code under paths of different lengths), so one layout per side is not a
comparison. Each child gives, per kernel, the median CPU time of its C runs and of its
ptxport runs and their ratio; per kernel it prints C's median time, each side's median ratio
to C over the rounds (cpu_kernels.py --processes' medians, bench_stats.py), and the change:
the median over rounds of this round's ratio / other's (the two children of a round ran one
after the other, so what slowed the host then slowed both), with its least and largest;
then the geometric means. --stat least takes each child's least CPU times instead of its
medians (the earlier protocol took the least over all rounds). Results are checked against C
in each child.

    python benchmarks/cpu_compare.py --other /path/to/main [--kernels gemm,stencil]
                                     [--rounds 3] [--runs 5] [--stat median|least]

writes benchmarks/results/cpu_compare.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_stats

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def child(kernels: list[str], runs: int) -> None:
    """In a checkout's own process: per kernel, the CPU seconds of `runs` alternating runs of
    C and of ptxport, as one JSON line."""
    import cpu_kernels as ck
    import numpy as np

    from ptxport import Device

    lib = ck.build_c_library()
    ck.set_cores(lib, 1)
    device = Device("cpu")
    device.set_current()
    out = {}
    for case in (c for c in ck.CASES if c.name in kernels):
        problem = case.make(case.full, np.random.default_rng(0))
        c_run, stream = ck.CRun(problem, lib), device.create_stream()
        run = ck.PtxportRun(case, problem, device, stream, {})
        run.first_run()
        c_run.reset()
        c_run.run()
        c_times, ptx_times = [], []
        for _ in range(runs):
            for timed, times in ((c_run, c_times), (run, ptx_times)):
                timed.reset()
                start = time.process_time()
                timed.run()
                times.append(time.process_time() - start)
        out[case.name] = {"c": c_times, "ptxport": ptx_times,
                          "check": ck.mismatch(problem, run.results(), c_run.results())}
        run.close()
        stream.close()
    print(json.dumps(out))


def _run_child(checkout: Path, kernels: list[str], runs: int, pad: int) -> dict:
    # this script and cpu_kernels.py (the same problems for both), ptxport from `checkout`;
    # the padding evens out the environments' sizes and moves both stacks alike
    env = dict(os.environ, PYTHONPATH=str(checkout),
               CPU_COMPARE_PAD="x" * (pad + 256 - len(str(checkout)) % 256))
    command = [sys.executable, str(HERE / "cpu_compare.py"), "--child",
               "--kernels", ",".join(kernels), "--runs", str(runs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{checkout}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", type=Path, help="the checkout to compare with")
    parser.add_argument("--kernels", help="comma-separated cpu_kernels.py names (default all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per child")
    parser.add_argument("--stat", choices=("median", "least"), default="median",
                        help="each child's figure: the median of its runs' CPU times, or "
                             "the least")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import cpu_kernels as ck

    kernels = args.kernels.split(",") if args.kernels else [c.name for c in ck.CASES]
    if args.child:
        child(kernels, args.runs)
        return
    if args.other is None:
        parser.error("--other CHECKOUT is needed")
    this = HERE.parent
    stat = min if args.stat == "least" else statistics.median
    # kernel -> side -> per round: C's seconds and ptxport's, each `stat` of the child's runs
    seconds: dict = {k: {"other": [], "this": []} for k in kernels}
    sides = [("other", args.other.resolve()), ("this", this)]
    for round_number in range(args.rounds):
        pad = random.randrange(4096)
        for label, checkout in sides if round_number % 2 == 0 else sides[::-1]:
            for kernel, cell in _run_child(checkout, kernels, args.runs, pad).items():
                if cell["check"]:
                    print(f"{label} {kernel}: {cell['check']}", file=sys.stderr)
                seconds[kernel][label].append((stat(cell["c"]), stat(cell["ptxport"])))
    report(args, kernels, seconds)


def report(args: argparse.Namespace, kernels: list[str], seconds: dict) -> None:
    """Print and write the comparison: per kernel C's time, each side's ratio to C (the
    median over rounds of each child's own ratio) and the paired change."""
    what = "least" if args.stat == "least" else "median"
    print(f"process CPU ms, {what} of {args.runs} runs per child, {args.rounds} rounds, one "
          f"worker; ratios to C: medians over rounds; other = {args.other}")
    print(f"{'kernel':<14} {'C':>7} {'other':>8} {'ratio':>6} {'this':>8} {'ratio':>6} "
          f"{'change':>7} {'min..max':>15}")
    ratios, summary = {"other": [], "this": []}, {}
    for kernel in kernels:
        sides = seconds[kernel]
        per_round = {label: [p / c for c, p in pairs] for label, pairs in sides.items()}
        c = statistics.median(c for pairs in sides.values() for c, _ in pairs)
        a, b = (statistics.median(p for _, p in sides[label]) for label in ("other", "this"))
        ra, rb = (statistics.median(per_round[label]) for label in ("other", "this"))
        change = bench_stats.paired_change(per_round["other"], per_round["this"])
        ratios["other"].append(ra)
        ratios["this"].append(rb)
        summary[kernel] = {"c": c, "other": a, "this": b, "ratio_other": ra, "ratio_this": rb,
                           "ratios": per_round, "change": change}
        span = f"{100 * (change['min'] - 1):+.1f}..{100 * (change['max'] - 1):+.1f}%"
        print(f"{kernel:<14} {c * 1e3:7.2f} {a * 1e3:8.2f} {ra:6.2f} {b * 1e3:8.2f} "
              f"{rb:6.2f} {100 * (change['median'] - 1):+6.1f}% {span:>15}")
    means = {k: bench_stats.geomean(v) for k, v in ratios.items()}
    print(f"geometric mean of ratio to C: other {means['other']:.2f}x, this "
          f"{means['this']:.2f}x")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu_compare.json").write_text(json.dumps(
        {"other": str(args.other), "rounds": args.rounds, "runs": args.runs,
         "stat": args.stat, "seconds": summary, "geomean": means}, indent=2))


if __name__ == "__main__":
    main()
