"""How does one launch scale over several CPU workers, and how long does a lost worker cost?

Kernels of benchmarks/cpu_kernels.py (elementwise, reductions with atomics, tiled GEMM,
transpose, softmax, histogram, stencil) run on DeviceGroup.ray(num_workers=W, device="cpu")
for each W of --workers, on a local Ray (each worker pinned to its share of this machine's
cores: with fewer cores than workers they share). For each kernel and W: one untimed launch
(compiles the kernel in every worker and sends the inputs), then --reps timed launches, each
after the outputs are reset on the host (so every timed launch sends the outputs again and
merges them: the whole cost of a group launch). Results are checked against one worker's.
Speed-up is t(1 worker) / t(W), efficiency speed-up / W; the single cpu device in this
process (no Ray) is shown for reference.

Recovery: with 2 workers, worker 1 is killed (SIGKILL) while it runs its blocks of a GEMM;
the launch's time against a normal launch's is the price of replacing the worker, sending it
its inputs again from the object store and re-running its blocks.

With --local (no Ray needed) the members are cpu devices of this process instead: W members,
each launch's blocks on cores/W host threads (the CPU executor's worker count), so that W
members at once use the machine's cores as one device does; the members' copies are host
memory, so this measures the group's own costs (split, send, merge) without the object
store. There is no recovery to measure there.

    python benchmarks/multidevice.py [--quick] [--local] [--workers 1,2,4]
                                    [--kernels gemm,saxpy] [--reps 5]

prints a table and writes benchmarks/results/multidevice.json (multidevice_local.json with
--local).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_kernels import CASES, KERNELS, Case, Problem, _gemm

from ptxport import Device, Program, launch
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.group import DeviceGroup
from ptxport.runtime.launch import LaunchConfig

RESULTS = Path(__file__).resolve().parent / "results"
STENCIL_SWEEPS = 16


def _stencil_sweeps(n: int, rng: np.random.Generator) -> Problem:
    """STENCIL_SWEEPS Jacobi sweeps of the 5-point stencil, ping-ponging between two grids:
    each launch's input is the last one's output, so the members exchange what the others
    wrote at every sweep."""
    arrays = {"a": rng.random((n, n), dtype=np.float32), "b": np.zeros((n, n), np.float32)}
    config = LaunchConfig(grid=((n + 15) // 16, (n + 15) // 16), block=(16, 16))
    sweep = [(config, ("a", "b", np.int32(n), np.int32(n))),
             (config, ("b", "a", np.int32(n), np.int32(n)))]
    return Problem(f"{n}x{n}, {STENCIL_SWEEPS} sweeps", arrays, ("a", "b"),
                   sweep * (STENCIL_SWEEPS // 2), None)


# Compute-heavy problems, where one worker's launch takes long enough for scaling to show.
HEAVY = [
    Case("gemm1024", "tiled GEMM (float)", "gemm_tiled", "sgemm_tiled", 1024, 256, _gemm),
    Case("gemm2048", "tiled GEMM (float)", "gemm_tiled", "sgemm_tiled", 2048, 384, _gemm),
    Case("stencil_sweeps", "2D 5-point stencil, sweeps", "stencil_2d", "stencil_2d_5pt", 2048,
         512, _stencil_sweeps),
]
ALL_CASES = CASES + HEAVY
DEFAULT_KERNELS = ("saxpy", "reduce_shared", "gemm", "transpose", "softmax", "histogram",
                   "stencil", "gemm1024", "gemm2048", "stencil_sweeps")


def _kernel(case, objects: dict):
    if case.source not in objects:
        source = (KERNELS / f"{case.source}.cu").read_text()
        objects[case.source] = Program(source, code_type="c++").compile("native")
    return objects[case.source].get_kernel(case.kernel)


class GroupRun:
    """A problem's buffers on a device group, and timed launches of it."""

    def __init__(self, group, kernel, problem):
        self.group, self.kernel, self.problem = group, kernel, problem
        self.buffers = {}
        for name, array in problem.arrays.items():
            self.buffers[name] = group.allocate(array.nbytes)
            self.buffers[name].copy_from(np.ascontiguousarray(array))

    def run(self) -> float:
        for name in self.problem.outputs:
            self.buffers[name].copy_from(np.ascontiguousarray(self.problem.arrays[name]))
        start = time.perf_counter()
        for config, args in self.problem.launches:
            self.group.launch(config, self.kernel,
                              *(self.buffers[a] if isinstance(a, str) else a for a in args))
        return time.perf_counter() - start

    def outputs(self) -> dict[str, np.ndarray]:
        return {name: self.buffers[name].copy_to(np.empty_like(self.problem.arrays[name]))
                for name in self.problem.outputs}


def _single_device(kernel, problem, reps: int) -> float:
    device = Device("cpu")
    stream = device.create_stream()
    buffers = {}
    for name, array in problem.arrays.items():
        buffers[name] = device.allocate(array.nbytes, stream=stream)
        buffers[name].copy_from(np.ascontiguousarray(array), stream=stream)
    times = []
    for _ in range(reps + 1):
        for name in problem.outputs:
            buffers[name].copy_from(np.ascontiguousarray(problem.arrays[name]), stream=stream)
        stream.sync()
        start = time.perf_counter()
        for config, args in problem.launches:
            launch(stream, config, kernel, *(buffers[a] if isinstance(a, str) else a
                                              for a in args))
        stream.sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _agree(problem, got: dict, want: dict) -> bool:
    return all(np.allclose(got[k], want[k], rtol=max(problem.rtol, 1e-6),
                           atol=max(problem.atol, 1e-6)) for k in want)


def _group(count: int, local: bool) -> DeviceGroup:
    """`count` members: Ray workers, or (local) cpu devices of this process sharing the
    cores, each launch of a member running on cores/count host threads."""
    if not local:
        return DeviceGroup.ray(num_workers=count, device="cpu", object_store_mb=512)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    cpu_executor.set_workers(max(1, cores // count))
    return DeviceGroup(["cpu"] * count)


def measure(cases, workers: list[int], reps: int, quick: bool,
            local: bool = False) -> list[dict]:
    objects, rows = {}, []
    problems = {c.name: c.make(c.quick if quick else c.full, np.random.default_rng(1))
                for c in cases}
    reference: dict[str, dict] = {}
    for case in cases:
        kernel = _kernel(case, objects)
        rows.append({"kernel": case.name, "algorithm": case.algorithm,
                     "size": problems[case.name].size,
                     "cpu_device_s": _single_device(kernel, problems[case.name], reps),
                     "seconds": {}, "split": {}, "agrees": {}})
    for count in workers:
        group = _group(count, local)
        try:
            for case, row in zip(cases, rows, strict=True):
                run = GroupRun(group, _kernel(case, objects), problems[case.name])
                run.run()                                  # compile everywhere, send inputs
                times = [run.run() for _ in range(reps)]
                row["seconds"][count] = statistics.median(times)
                row["split"][count] = group.last_plan.split
                got = run.outputs()
                reference.setdefault(case.name, got)
                row["agrees"][count] = _agree(problems[case.name], got, reference[case.name])
        finally:
            group.close()
            cpu_executor.set_workers(None)
    return rows


def measure_recovery(quick: bool) -> dict:
    """Seconds of a GEMM launch on 2 workers, normally and with worker 1 killed in it."""
    import ray

    case = next(c for c in CASES if c.name == "gemm")
    problem = case.make(case.quick if quick else case.full, np.random.default_rng(1))
    group = DeviceGroup.ray(num_workers=2, device="cpu", object_store_mb=512)
    try:
        run = GroupRun(group, _kernel(case, {}), problem)
        run.run()
        normal = statistics.median(run.run() for _ in range(3))
        want = run.outputs()
        member = group.members[1]
        marker = Path(tempfile.mkdtemp()) / "running"
        pid = member.pid()
        ray.get(member.actor.hold_next_launch.remote(str(marker)))

        def kill():
            while not marker.exists():
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)

        killer = threading.Thread(target=kill)
        killer.start()
        killed = run.run()
        killer.join()
        same = all(np.array_equal(run.outputs()[k], want[k]) for k in want)
        return {"kernel": "gemm", "size": problem.size, "normal_s": normal, "killed_s": killed,
                "replacement_s": member.recoveries[-1], "identical": same}
    finally:
        group.close()


def _table(rows, workers, recovery) -> str:
    head = f"{'kernel':14} {'size':20} {'cpu dev':>9}" + "".join(
        f" {f'{w} worker(s)':>12} {'speed-up':>8} {'eff.':>5}" for w in workers)
    lines = [head, "-" * len(head)]
    for row in rows:
        base = row["seconds"][workers[0]]
        line = f"{row['kernel']:14} {row['size']:20} {row['cpu_device_s'] * 1e3:7.2f}ms"
        for w in workers:
            t = row["seconds"][w]
            mark = "" if row["agrees"][w] else "!"
            mark += "" if row["split"][w] or w == 1 else "w"
            line += f" {t * 1e3:10.2f}ms{mark:1} {base / t:7.2f}x {base / t / w:5.2f}"
        lines.append(line)
    lines.append("(ms: median wall time of a group launch, outputs sent and merged; "
                 "w: not split; !: differs from 1 worker)")
    if recovery:
        lines.append(
            f"recovery (gemm {recovery['size']}, 2 workers, worker 1 killed mid-launch): "
            f"normal {recovery['normal_s'] * 1e3:.1f} ms, with the kill "
            f"{recovery['killed_s'] * 1e3:.1f} ms (replacing the worker and re-running its "
            f"blocks: {recovery['replacement_s'] * 1e3:.1f} ms); result identical: "
            f"{recovery['identical']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problems")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-recovery", action="store_true")
    parser.add_argument("--local", action="store_true",
                        help="cpu members in this process, no Ray (and no recovery)")
    options = parser.parse_args()
    workers = [int(w) for w in options.workers.split(",")]
    names = options.kernels.split(",")
    cases = [c for c in ALL_CASES if c.name in names]
    rows = measure(cases, workers, options.reps, options.quick, options.local)
    recovery = None if options.no_recovery or options.local else \
        measure_recovery(options.quick)
    print(_table(rows, workers, recovery))
    RESULTS.mkdir(exist_ok=True)
    name = "multidevice_local.json" if options.local else "multidevice.json"
    (RESULTS / name).write_text(json.dumps({
        "machine": platform.node(), "cores": len(os.sched_getaffinity(0)),
        "members": "local" if options.local else "ray", "workers": workers, "rows": rows,
        "recovery": recovery}, indent=1, default=str))


if __name__ == "__main__":
    main()
