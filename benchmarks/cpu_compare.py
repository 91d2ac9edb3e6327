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
comparison. Prints, per
kernel, the least CPU time of C (one thread), of OTHER and of this checkout, their ratios
to C and the change, and the geometric means. Results are checked against C in each child.

    python benchmarks/cpu_compare.py --other /path/to/main [--kernels gemm,stencil]
                                     [--rounds 3] [--runs 5]

writes benchmarks/results/cpu_compare.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def child(kernels: list[str], runs: int) -> None:
    """In a checkout's own process: per kernel, the least CPU seconds of C and of ptxport
    over `runs` alternating runs, as one JSON line."""
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
        out[case.name] = {"c": min(c_times), "ptxport": min(ptx_times),
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
    best: dict = {}
    sides = [("other", args.other.resolve()), ("this", this)]
    for round_number in range(args.rounds):
        pad = random.randrange(4096)
        for label, checkout in sides if round_number % 2 == 0 else sides[::-1]:
            for kernel, cell in _run_child(checkout, kernels, args.runs, pad).items():
                if cell["check"]:
                    print(f"{label} {kernel}: {cell['check']}", file=sys.stderr)
                slot = best.setdefault(kernel, {"c": math.inf, "other": math.inf,
                                                "this": math.inf})
                slot["c"] = min(slot["c"], cell["c"])
                slot[label] = min(slot[label], cell["ptxport"])
    print(f"least process CPU ms over {args.rounds} rounds x {args.runs} runs, one worker; "
          f"other = {args.other}")
    print(f"{'kernel':<14} {'C':>7} {'other':>8} {'ratio':>6} {'this':>8} {'ratio':>6} "
          f"{'change':>7}")
    logs: dict = {"other": [], "this": []}
    for kernel in kernels:
        cell = best[kernel]
        c, a, b = cell["c"], cell["other"], cell["this"]
        logs["other"].append(math.log(a / c))
        logs["this"].append(math.log(b / c))
        print(f"{kernel:<14} {c * 1e3:7.2f} {a * 1e3:8.2f} {a / c:6.2f} {b * 1e3:8.2f} "
              f"{b / c:6.2f} {100 * (b / a - 1):+6.1f}%")
    means = {k: math.exp(sum(v) / len(v)) for k, v in logs.items()}
    print(f"geometric mean of ratio to C: other {means['other']:.2f}x, this "
          f"{means['this']:.2f}x")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu_compare.json").write_text(json.dumps(
        {"other": str(args.other), "rounds": args.rounds, "runs": args.runs,
         "seconds": best, "geomean": means}, indent=2))


if __name__ == "__main__":
    main()
