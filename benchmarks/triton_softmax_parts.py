"""Where does a Triton fused softmax's time go on one CPU worker, with 4 warps a row and with 1?

Compiles tests/frontends/triton_kernels.py's softmax_kernel with this machine's Triton
(4096 x 1024 f32 by default, BLOCK 1024, as benchmarks/python_kernels.py), then times its PTX
and copies of it with parts replaced (launched directly on Device("cpu") with one worker,
process CPU time per element, median of --runs calls, rounds alternating the variants):

  whole       the kernel as Triton wrote it
  no-shared   each ld.shared replaced by a move of the value the last st.shared stored, the
              st.shared dropped (the cross-warp exchange gone, its barriers kept)
  no-barrier  no-shared without bar.sync (4 warps: each warp runs its rows on its own)
  no-bfly     the butterfly steps (shfl.sync.bfly and the operation that combines its
              result) replaced by moves
  no-cross    4 warps, Triton 3.6's form: the middle stage of each cross-warp reduction
              (a guarded ld.shared of the warps' slots, two butterfly steps, a guarded
              st.shared of the total) dropped; the broadcast load after it kept

Variants other than `whole` compute wrong results (not checked). Rows are taken as the
tutorial's programs take them (`--grid` programs, each every grid-th row) or in order
(`--grid 1`); `--rows 128 --grid 128` keeps everything in cache. `--workers N` times the
calls on N workers by wall time instead (GB/s: bytes read and written per second, the
fastest call of each round; python_kernels.py's measure).

    python benchmarks/triton_softmax_parts.py [--rows 4096] [--cols 1024] [--grid 256]
                                              [--runs 10] [--rounds 3] [--workers 1]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "frontends"))


def triton_ptx(warps: int, rows: int, cols: int) -> str:
    """The softmax kernel's PTX for `warps` warps, as the cpu device's Triton driver gets it
    (Triton specialises integer arguments: equal to 1, multiples of 16)."""
    import triton
    from triton_kernels import softmax_kernel

    import ptxport.frontends.triton as pt
    from ptxport import Device

    device = Device("cpu")
    pt.activate(device)
    try:
        x = pt.device_array(np.zeros((rows, cols), np.float32), device)
        y = pt.device_array(np.zeros((rows, cols), np.float32), device)
        compiled = softmax_kernel[(1,)](y, x, cols, cols, rows, cols,
                                        BLOCK=triton.next_power_of_2(cols), num_warps=warps)
        return compiled.asm["ptx"]
    finally:
        pt.deactivate()


_ST = re.compile(r"^\s*(?:@!?%p\d+\s+)?st\.shared\.b32\s*\[[^\]]*\],\s*(%r\d+);\s*$")
_LD = re.compile(r"^(\s*)(?:@!?%p\d+\s+)?ld\.shared\.b32\s*(%r\d+),\s*\[[^\]]*\];\s*$")
_SHFL = re.compile(r"^(\s*)shfl\.sync\.bfly\.b32\s*(%r\d+),\s*(%r\d+),.*;\s*$")
_OP = re.compile(r"^(\s*)(?:max|min|add|mul)\.f32\s*(%r\d+),\s*(%r\d+),\s*(%r\d+);\s*$")


def without_shared(ptx: str) -> str:
    out, stored = [], None
    for line in ptx.splitlines():
        st, ld = _ST.match(line), _LD.match(line)
        if st:
            stored = st.group(1)
            continue
        if ld and stored is not None:
            out.append(f"{ld.group(1)}mov.b32 {ld.group(2)}, {stored};")
            continue
        out.append(line)
    return "\n".join(out)


def without_barriers(ptx: str) -> str:
    return "\n".join(line for line in ptx.splitlines() if not line.strip().startswith("bar.sync"))


def without_butterflies(ptx: str) -> str:
    out, shuffled = [], set()
    for line in ptx.splitlines():
        shfl, op = _SHFL.match(line), _OP.match(line)
        if shfl:
            shuffled.add(shfl.group(2))
            out.append(f"{shfl.group(1)}mov.b32 {shfl.group(2)}, {shfl.group(3)};")
            continue
        if op and op.group(4) in shuffled:
            out.append(f"{op.group(1)}mov.b32 {op.group(2)}, {op.group(3)};")
            continue
        out.append(line)
    return "\n".join(out)


_GUARDED_LD = re.compile(r"^\s*@%p\d+\s+ld\.shared\.b32")
_GUARDED_ST = re.compile(r"^\s*@%p\d+\s+st\.shared\.b32")


def without_cross_stage(ptx: str) -> str:
    """Drop each run from a guarded ld.shared to the next guarded st.shared (Triton 3.6's
    middle stage: lanes 0-3 of warp 0 reduce the warps' slots and lane 0 stores the total)."""
    out, dropping = [], False
    for line in ptx.splitlines():
        if not dropping and _GUARDED_LD.match(line):
            dropping = True
        if not dropping:
            out.append(line)
        elif _GUARDED_ST.match(line):
            dropping = False
    return "\n".join(out)


def variants(ptx: str, warps: int) -> dict[str, str]:
    found = {"whole": ptx, "no-shared": without_shared(ptx)}
    if warps > 1:
        found["no-barrier"] = without_barriers(found["no-shared"])
        crossless = without_cross_stage(ptx)
        if crossless != ptx:
            found["no-cross"] = crossless
    found["no-bfly"] = without_butterflies(ptx)
    return found


def time_variants(codes: dict[str, str], warps: int, args) -> dict[str, float]:
    """ns per element (median over rounds of each round's median process CPU time), or with
    several workers GB/s (median over rounds of each round's fastest wall time)."""
    from ptxport import Device, LaunchConfig, Program, launch
    from ptxport.runtime.backends.cpu import executor

    executor.set_workers(args.workers)
    clock = time.process_time if args.workers == 1 else time.perf_counter
    pick = statistics.median if args.workers == 1 else min
    device = Device("cpu")
    stream = device.create_stream()
    x = np.random.default_rng(0).standard_normal((args.rows, args.cols), dtype=np.float32)
    xb = device.allocate(x.nbytes, stream=stream)
    xb.copy_from(x, stream=stream)
    yb = device.allocate(x.nbytes, stream=stream)
    config = LaunchConfig(grid=args.grid, block=32 * warps, shmem_size=256)
    kernels = {name: Program(code, code_type="ptx").compile("native")
               .get_kernel("softmax_kernel") for name, code in codes.items()}

    def call(kernel):
        launch(stream, config, kernel, yb, xb, np.int32(args.cols), np.int32(args.cols),
               np.int32(args.rows), np.int32(args.cols), np.uint64(0), np.uint64(0))
        stream.sync()

    medians: dict[str, list[float]] = {name: [] for name in kernels}
    for kernel in kernels.values():
        call(kernel)
    for _ in range(args.rounds):
        for name, kernel in kernels.items():
            seconds = []
            for _ in range(args.runs):
                start = clock()
                call(kernel)
                seconds.append(clock() - start)
            medians[name].append(pick(seconds))
    if args.workers > 1:
        return {name: 2 * x.nbytes / statistics.median(m) / 1e9 for name, m in medians.items()}
    return {name: statistics.median(m) / x.size * 1e9 for name, m in medians.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--grid", type=int, default=256, help="programs (1: rows in order)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1,
                        help="workers (more than 1: wall-time GB/s)")
    args = parser.parse_args()
    import triton

    measure = "one worker: process CPU ns per element (median of" if args.workers == 1 else \
        f"{args.workers} workers: GB/s by wall time (median over rounds of the fastest of"
    print(f"Triton {triton.__version__}, softmax {args.rows} x {args.cols} f32, {args.grid} "
          f"programs, {measure} {args.rounds} rounds x {args.runs} calls)")
    rows = {}
    for warps in (4, 1):
        ptx = triton_ptx(warps, args.rows, args.cols)
        rows[warps] = time_variants(variants(ptx, warps), warps, args)
    names = list(rows[4])
    print(f"{'warps':>5} " + " ".join(f"{n:>10}" for n in names))
    for warps, found in rows.items():
        print(f"{warps:>5} " + " ".join(f"{found[n]:10.3f}" if n in found else f"{'':>10}"
                                        for n in names))


if __name__ == "__main__":
    main()
