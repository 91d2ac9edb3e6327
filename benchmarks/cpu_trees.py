"""Is one checkout's CPU code faster than another's on K workers, by wall time?

cpu_compare.py compares checkouts on one worker in process CPU time; on many workers the
wall time is what counts (the last block's end, the launch's own cost), so this alternates
the checkouts' child processes in --rounds rounds (the order reversed every other round):
each child (PYTHONPATH = its checkout, this checkout's cpu_kernels.py and corpus) times C on
K threads and ptxport on K workers in 8 alternating blocks of 6 timed runs (after 3 untimed;
outputs reset untimed before each run, a 0.03 s pause before C's blocks as cpu_kernels.py
does) and prints both medians; the result is checked against C's. Per checkout it prints the
medians over rounds of ptxport's ms, C's and their ratio, and of ptxport's ms over the first
checkout's in the same round, with its least and largest (a round's children ran one after
the other: what slowed the host then slowed both). On the GPU host a round of 6 checkouts
of the stencil at 16 workers takes about 12 s.

    python benchmarks/cpu_trees.py CASE WORKERS ROUNDS CHECKOUT [CHECKOUT ...]

CHECKOUT: a directory holding a `ptxport` package (a worktree, or `git archive REV ptxport`
unpacked); the first is the baseline.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def child(case_name: str, workers: int) -> None:
    """In a checkout's child: time C and ptxport side by side, print their medians (ms)."""
    sys.path[:0] = [str(ROOT)]
    import cpu_kernels as ck
    import numpy as np

    from ptxport import Device
    from ptxport.runtime.backends.cpu import executor

    lib = ck.build_c_library()
    case = next(c for c in ck.CASES if c.name == case_name)
    problem = case.make(case.full, np.random.default_rng(0))
    device = Device("cpu")
    device.set_current()
    ptx = ck.PtxportRun(case, problem, device, device.create_stream(), {})
    c = ck.CRun(problem, lib)
    ptx.first_run()
    executor.set_workers(workers)
    ck.set_cores(lib, workers)
    times: dict = {ptx: [], c: []}
    for block in range(8):
        for side in (ptx, c) if block % 2 == 0 else (c, ptx):
            if side is c and block:
                time.sleep(0.03)    # (libgomp's spinning threads park: cpu_kernels' rule)
            for run in range(9):
                side.reset()
                seconds = side.run()
                if run >= 3:
                    times[side].append(seconds * 1e3)
    print(json.dumps({"p": statistics.median(times[ptx]), "c": statistics.median(times[c]),
                      "bad": ck.mismatch(problem, ptx.results(), c.results())}))


def main() -> None:
    case, workers, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    trees = sys.argv[4:]
    got: dict[str, dict[int, dict]] = {t: {} for t in trees}
    for r in range(rounds):
        for t in trees if r % 2 == 0 else trees[::-1]:
            env = dict(os.environ, PYTHONPATH=str(Path(t).resolve()))
            out = subprocess.run([sys.executable, __file__, "--child", case, str(workers)],
                                 env=env, capture_output=True, text=True, timeout=300)
            try:
                row = json.loads(out.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                print(f"round {r} {t}: failed: {out.stderr[-500:]}", flush=True)
                continue
            got[t][r] = row
            print(f"round {r} {t:12s} p {row['p']:.3f} ms c {row['c']:.3f} ms "
                  f"ratio {row['p'] / row['c']:.2f} {row['bad'] or ''}", flush=True)
    base = got[trees[0]]
    print(f"== {case} at {workers} workers, {rounds} rounds: medians over rounds")
    for t in trees:
        rows = got[t]
        if not rows:
            continue
        rel = [row["p"] / base[r]["p"] for r, row in rows.items() if r in base] or [0.0]
        print(f"{t:12s} ptxport {statistics.median(r['p'] for r in rows.values()):.3f} ms  C "
              f"{statistics.median(r['c'] for r in rows.values()):.3f} ms  ratio "
              f"{statistics.median(r['p'] / r['c'] for r in rows.values()):.2f}  vs "
              f"{trees[0]} {statistics.median(rel):.3f} [{min(rel):.3f}..{max(rel):.3f}]",
              flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
