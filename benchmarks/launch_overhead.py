"""What does launching a kernel cost on the CPU device, apart from the kernel's own work?

Times an empty kernel (`ret;` only) on Device("cpu") with 8 live buffers (so the access
checks have an allocation table, as in a real program), in microseconds per launch:
  sync grid 1     launch + stream.sync() of a <<<1, 1>>> grid;
  sync grid 1024  launch + stream.sync() of 1024 empty blocks of 1 thread;
  queued          launches queued back to back, one sync after the batch (per launch);
  loop            the same of a kernel with a loop (run 0 times), which launch() queues
                  for the stream (only loop-free kernels of small grids run at once), so
                  that the sync takes it from the queue;
  new buffer      a buffer allocated before each launch + sync and freed after it (every
                  worker's allocation table is made anew);
each with 1 worker (set_workers(1)) and with 16 (issue 15's goals: launch + sync under
20 us on one core, under 50 us with 16 workers; --workers 1,2 on a machine of 2 cores).
Each figure is the median over batches.

    python benchmarks/launch_overhead.py [--runs 7] [--calls 300] [--compare OTHER_CHECKOUT]
                                         [--workers 1,16]

--compare times another checkout of ptxport too, taking turns process by process (timings
on a shared machine drift; compare only figures measured side by side):
    git worktree add /tmp/before main     (or: git archive main | tar -x -C /tmp/before)
    python benchmarks/launch_overhead.py --compare /tmp/before

prints a table and writes benchmarks/results/launch_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

EMPTY_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry empty()
{
    ret;
}
"""

# A kernel with a backward branch: launch() does not run it at once but queues it.
LOOP_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry loop(.param .u32 n)
{
    .reg .b32 %r<3>;
    .reg .pred %p<2>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
$top:
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $end;
    add.u32 %r2, %r2, 1;
    bra.uni $top;
$end:
    ret;
}
"""

# (name, grid, queued, kernel): queued launches are timed as a batch with one sync at its end;
# "new buffer": a buffer of 256 bytes allocated before each launch and freed after its sync
# (the allocations change between launches, so every worker gets a new allocation table)
CASES = [("sync grid 1", 1, False, "empty"), ("sync grid 1024", 1024, False, "empty"),
         ("queued grid 1", 1, True, "empty"), ("loop, sync grid 1", 1, False, "loop"),
         ("loop, sync grid 1024", 1024, False, "loop"),
         ("new buffer, sync grid 1024", 1024, False, "empty")]
WORKERS = (1, 16)


def _measure(calls: int, workers_list: tuple[int, ...] = WORKERS) -> dict[str, float]:
    """In this process (the checkout on sys.path): the median microseconds per launch of
    each case, over 5 batches of `calls` launches."""
    import numpy as np

    from ptxport import Device, LaunchConfig, Program, launch

    try:
        from ptxport.runtime.backends.cpu import executor as cpu_executor
    except ImportError:     # a checkout from before the CPU backend became a package
        from ptxport.codegen.targets import cpu_executor

    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    buffers = [device.allocate(4096, stream=stream) for _ in range(8)]  # noqa: F841 (live)
    kernels = {"empty": (Program(EMPTY_PTX, code_type="ptx").compile("native")
                         .get_kernel("empty"), ()),
               "loop": (Program(LOOP_PTX, code_type="ptx").compile("native")
                        .get_kernel("loop"), (np.uint32(0),))}
    figures = {}
    for workers in workers_list:
        cpu_executor.set_workers(workers)
        for name, grid, queued, which in CASES:
            kernel, args = kernels[which]
            config = LaunchConfig(grid=grid, block=1)
            launch(stream, config, kernel, *args)   # warm-up (compiles for the block shape)
            stream.sync()
            batches = []
            for _ in range(5):
                start = time.perf_counter()
                for _ in range(calls):
                    fresh = device.allocate(256, stream=stream) if name[0] == "n" else None
                    launch(stream, config, kernel, *args)
                    if not queued:
                        stream.sync()
                    if fresh is not None:
                        fresh.close(stream=stream)
                stream.sync()
                batches.append((time.perf_counter() - start) / calls * 1e6)
            figures[f"{name}, {workers} worker(s)"] = statistics.median(batches)
    return figures


def _run_child(root: Path, calls: int, workers: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, __file__, "--child", "--calls", str(calls),
                          "--workers", workers],
                         capture_output=True, text=True, check=True, env=env, cwd=root)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="processes per checkout")
    parser.add_argument("--calls", type=int, default=300, help="launches per timed batch")
    parser.add_argument("--workers", default=",".join(map(str, WORKERS)),
                        help="comma-separated worker counts to time (default 1,16)")
    parser.add_argument("--compare", type=Path, help="another checkout to time, alternately")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(_measure(options.calls, tuple(map(int, options.workers.split(","))))))
        return
    roots = {"this": ROOT}
    if options.compare:
        roots["other"] = options.compare.resolve()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in roots}
    for _ in range(options.runs):
        for label, root in roots.items():
            runs[label].append(_run_child(root, options.calls, options.workers))
    medians = {label: {case: statistics.median(r[case] for r in results)
                       for case in results[0]} for label, results in runs.items()}
    print(f"{'us per launch':<32}" + "".join(f"{label:>10}" for label in roots))
    for case in medians["this"]:
        print(f"{case:<32}" + "".join(f"{medians[label][case]:10.1f}" for label in roots))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "launch_overhead.json").write_text(json.dumps({
        "machine": platform.machine(), "processor": platform.processor(),
        "cores": len(os.sched_getaffinity(0)), "runs": options.runs, "calls": options.calls,
        "checkouts": {label: str(root) for label, root in roots.items()},
        "microseconds": medians}, indent=2) + "\n")


if __name__ == "__main__":
    main()
