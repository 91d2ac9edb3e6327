"""Would another order of handing out a 2D grid's blocks pay on the CPU target? (issue 15)

The runtime hands out block numbers n = y * gx + x in order (a worker claims runs of
consecutive numbers; codegen/targets/cpu/entry.py's open_block_loop counts x fastest). This
script tries other orders without changing the runtime: PTX variants of cpu_kernels.py's 2D
kernels in which block number n computes the tile that another order would hand it:

- `gG` (G block rows a group, walked column by column; Triton's "grouped" order): group =
  n / (G gx), gs = G group, rows = min(G, gy - gs), w = n - gs gx, x = w / rows, y = gs +
  w % rows, so that a worker's consecutive blocks share a column of blocks and G rows;
- `cols`: column by column over the whole grid (G = gy).

The variant's entry computes that (x, y) from %ctaid and %nctaid once and uses it for every
read of %ctaid.x / %ctaid.y, so its code differs from the kernel's by those instructions
and by what the CPU target's analyses make of a remapped ctaid: compare instruction counts
(`tools/trace_blocks.py CASE --ptx FILE`, --write-ptx here) before reading a time as the
order's. Every variant's outputs are checked bit for bit against the kernel's own.

All variants of a case are timed in one process, in rounds alternating them (the order
reversed every other round) at 1 worker (the main thread pinned to the last CPU) and at k
workers (all CPUs): launch + sync after an untimed reset, --runs runs a variant, worker
count and round; medians, ratio to the kernel's own order, efficiency t(1) / (k t(k)).

    python benchmarks/cpu_block_order.py [gemm:1024,transpose:4096] [--groups 2,4,8,16]
                                         [--cols] [--rounds 4] [--runs 3] [--workers 16]
                                         [--write-ptx DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from pathlib import Path

import cpu_kernels as ck  # (a sibling module: benchmarks/ is the script's folder)
import numpy as np

from ptxport import Device, Program
from ptxport.runtime.backends.cpu import executor as cpu_executor

CPUS = sorted(os.sched_getaffinity(0))


def grouped(ptx: str, entry: str, rows: int | None) -> str:
    """`ptx` with entry `entry`'s %ctaid.x and %ctaid.y replaced by the grouped order's tile
    (rows None: column by column)."""
    start = ptx.index(f".entry {entry}(")
    end = ptx.index("\n}", start)
    body = ptx[start:end].split("\n")
    last_reg = max(i for i, line in enumerate(body) if line.strip().startswith(".reg"))
    g = "%gq10" if rows is None else str(rows)       # (column order: G = gy)
    code = [
        "\t.reg .b32 \t%gq<16>;",
        "\tmov.u32 \t%gq0, %ctaid.x;", "\tmov.u32 \t%gq1, %ctaid.y;",
        "\tmov.u32 \t%gq2, %nctaid.x;", "\tmov.u32 \t%gq10, %nctaid.y;",
        "\tmad.lo.s32 \t%gq3, %gq1, %gq2, %gq0;",        # n
        f"\tmul.lo.s32 \t%gq4, %gq2, {g};",
        "\tdiv.u32 \t%gq5, %gq3, %gq4;",                 # group
        f"\tmul.lo.s32 \t%gq11, %gq5, {g};",             # gs
        "\tsub.s32 \t%gq12, %gq10, %gq11;",
        f"\tmin.u32 \t%gq13, %gq12, {g};",               # rows of this group
        "\tmul.lo.s32 \t%gq14, %gq11, %gq2;",
        "\tsub.s32 \t%gq6, %gq3, %gq14;",                # w
        "\tdiv.u32 \t%gq7, %gq6, %gq13;",                # x
        "\trem.u32 \t%gq8, %gq6, %gq13;",
        "\tadd.s32 \t%gq9, %gq11, %gq8;"]                # y
    rest = "\n".join(body[last_reg + 1:])
    if not re.search(r"%ctaid\.[xy]\b", rest):
        raise SystemExit(f"{entry} reads neither %ctaid.x nor %ctaid.y")
    rest = re.sub(r"%ctaid\.x\b", "%gq7", re.sub(r"%ctaid\.y\b", "%gq9", rest))
    return ptx[:start] + "\n".join(body[:last_reg + 1] + code) + "\n" + rest + ptx[end:]


def variants(ptx: str, entry: str, groups: list[int], cols: bool) -> dict[str, str]:
    out = {"rows": ptx}
    out.update({f"g{g}": grouped(ptx, entry, g) for g in groups})
    if cols:
        out["cols"] = grouped(ptx, entry, None)
    return out


def prepare(case: ck.Case, problem: ck.Problem, texts: dict[str, str], device, stream) -> dict:
    """Each variant's PtxportRun (compiled, run once, its outputs checked against rows')."""
    runs, first = {}, None
    for name, text in texts.items():
        ck.Program = lambda _source, code_type=None, text=text: Program(text, code_type="ptx")
        start = time.perf_counter()
        run = ck.PtxportRun(case, problem, device, stream, {})
        run.first_run()
        out = run.results()
        same = first is None or all(np.array_equal(out[k], first[k]) for k in out)
        first = first or out
        print(f"  {name}: ready in {time.perf_counter() - start:.1f} s, outputs bitwise "
              f"as rows': {same}", flush=True)
        if not same:
            raise SystemExit(f"{case.name} {name}: outputs differ")
        runs[name] = run
    return runs


def timed(run: ck.PtxportRun) -> float:
    run.reset()
    return run.run() * 1e6


def measure(runs: dict, workers: int, rounds: int, per: int) -> dict:
    times: dict[tuple[str, int], list[float]] = {(v, w): [] for v in runs for w in (1, workers)}
    keys = list(times)
    try:
        for r in range(rounds):
            for name, w in keys if r % 2 == 0 else keys[::-1]:
                cpu_executor.set_workers(w)
                os.sched_setaffinity(0, {CPUS[-1]} if w == 1 else set(CPUS))
                timed(runs[name])                       # (after the switch: untimed)
                times[name, w] += [timed(runs[name]) for _ in range(per)]
    finally:
        os.sched_setaffinity(0, set(CPUS))
        cpu_executor.set_workers(None)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="?", default="gemm:1024,transpose:4096",
                        help="CASE[:SIZE],... (cpu_kernels.py's 2D kernels)")
    parser.add_argument("--groups", default="2,4,8,16")
    parser.add_argument("--cols", action="store_true", help="also column by column")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=len(CPUS))
    parser.add_argument("--write-ptx", type=Path, default=None,
                        help="write each variant's PTX here (CASE.VARIANT.ptx)")
    args = parser.parse_args()
    groups = [int(g) for g in args.groups.split(",") if g]
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    for spec in args.cases.split(","):
        name, _, size = spec.partition(":")
        case = next(c for c in ck.CASES if c.name == name)
        problem = case.make(int(size) if size else case.full, np.random.default_rng(0))
        source = (ck.KERNELS / f"{case.source}.cu").read_text()
        texts = variants(Program(source, code_type="c++").compile("ptx").code, case.kernel,
                         groups, args.cols)
        if args.write_ptx:
            args.write_ptx.mkdir(parents=True, exist_ok=True)
            for variant, text in texts.items():
                (args.write_ptx / f"{name}.{variant}.ptx").write_text(text)
        print(f"{spec} ({problem.size}, {problem.blocks} blocks)", flush=True)
        runs = prepare(case, problem, texts, device, stream)
        times = measure(runs, args.workers, args.rounds, args.runs)
        k = args.workers
        base = {w: statistics.median(times["rows", w]) for w in (1, k)}
        print(f"  {args.rounds} rounds x {args.runs} runs, median us (ratio to rows)")
        for variant in runs:
            one, many = (statistics.median(times[variant, w]) for w in (1, k))
            print(f"  {variant:5s} 1 worker {one:9.1f} ({one / base[1]:.3f})  {k} workers "
                  f"{many:8.1f} ({many / base[k]:.3f}) [{min(times[variant, k]):.0f}-"
                  f"{max(times[variant, k]):.0f}]  eff {one / (k * many):.2f}", flush=True)
        for run in runs.values():
            run.close()


if __name__ == "__main__":
    main()
