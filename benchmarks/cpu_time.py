"""How much CPU time does each CPU-device kernel take on one core, and a tight loop per pass?

Process CPU time (time.process_time around launch + sync), not wall time, so that other
processes on a shared machine disturb it less: the figure to compare two checkouts of
ptxport by (e.g. the cost of the stop-word poll that lets a launch's watchdog stop loops).
For each kernel of benchmarks/cpu_kernels.py (full sizes) it reports the median of --reps
runs after an untimed first one, and for `tight` (every thread runs --passes dependent
fused multiply-adds in a loop: the worst case for anything added to a loop) the
nanoseconds per pass per warp of 32 threads, on warp gangs and thread by thread.

    PYTHONPATH=<checkout> python benchmarks/cpu_time.py [--reps 7] [--passes 20000]

prints a table and writes benchmarks/results/cpu_time.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from cpu_kernels import CASES, RESULTS, PtxportRun

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.runtime import backends
from ptxport.runtime.backends.cpu import executor as cpu_executor

TIGHT_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry tight(.param .u64 out, .param .u32 passes)
{
  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<2>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [passes];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r2, %r3, %r4, %r2;
  cvt.rn.f32.u32 %f1, %r2;
  mov.u32 %r5, 0;
$L_loop:
  fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3A83126F;
  add.s32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, %r1;
  @%p1 bra $L_loop;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  ret;
}
"""


def cpu_ms(run, reps: int, before=None) -> float:
    """Median CPU milliseconds of `run()`, each after an untimed `before()`."""
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def tight_ns_per_pass(device: Device, gang: bool, passes: int, reps: int) -> float:
    backends.get("cpu").options = CpuOptions(gang=gang)   # for the kernel compiled next
    kernel = Program(TIGHT_PTX, code_type="ptx").compile("native").get_kernel("tight")
    stream = device.create_stream()
    grid, block = 64, 128
    out = device.allocate(grid * block * 4, stream=stream)
    config = LaunchConfig(grid=grid, block=block)

    def run() -> None:
        launch(stream, config, kernel, out, np.uint32(passes))
        stream.sync()

    run()
    warps = grid * block // 32
    return cpu_ms(run, reps) * 1e6 / (passes * warps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--passes", type=int, default=20000)
    args = parser.parse_args()
    cpu_executor.set_workers(1)
    device = Device("cpu")
    device.set_current()
    rows, objects = {}, {}
    for case in CASES:
        problem = case.make(case.full, np.random.default_rng(0))
        run = PtxportRun(case, problem, device, device.create_stream(), objects)
        run.first_run()
        rows[case.name] = cpu_ms(run.run, args.reps, before=run.reset)
        run.close()
    tight = {path: tight_ns_per_pass(device, path == "gang", args.passes, args.reps)
             for path in ("gang", "scalar")}
    print(f"one core, process CPU time, median of {args.reps}")
    for name, ms in rows.items():
        print(f"  {name:14s} {ms:9.2f} ms")
    for path, ns in tight.items():
        print(f"  tight ({path:6s}) {ns:9.3f} ns per pass per warp")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu_time.json").write_text(json.dumps(
        {"reps": args.reps, "passes": args.passes, "kernels_ms": rows,
         "tight_ns_per_pass_per_warp": tight}, indent=2))


if __name__ == "__main__":
    main()
