"""How many instructions a block of a cpu_kernels.py case runs, and where: single-steps one
launch's run_blocks calls under gdb and maps each instruction to the LLVM basic block it came
from (warp gangs' code is one function, run_blocks, with the gang function inlined; LLVM keeps
the names our builder gives its blocks, `seg3_all`, `access_done`, ..., though blocks merged by
its optimizer keep one name of several).

    python tools/trace_blocks.py stencil --size 48 [--call 4] [--top 40] [--path] [--asm]
                                 [--ptx variant.ptx]

runs the case at a small size (48: a 3x3 grid of 16x16 blocks; one run_blocks call a block on
one worker), prints the instructions of each call and, for call --call (the grid's middle
block by default), the instructions per LLVM block name, with --path the sequence of blocks
and their counts, with --asm every instruction it ran in order (its disassembly beside its
LLVM block). Needs gdb; a few hundred thousand single steps take about a minute. Hardware
counters are not needed, so it works where `perf stat` has none (virtual machines); what it
counts is instructions, not time (memory stalls, a division's latency do not show).
--ptx runs the case's kernel from a PTX file instead of its CUDA source (the same kernel
name and arguments): a hand-made variant's instructions, before writing the pass that makes
it (the stencil's address saved across its barrier or made again after it, session 11).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _target(case_name: str, size: int, out: Path) -> None:
    """In the traced process: run the case once (compiling it; the LLVM IR and object kept),
    stop with SIGTRAP for gdb to set its breakpoint, then run it once more."""
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import cpu_kernels as ck
    import numpy as np

    from ptxport import Device, Program
    from ptxport.codegen.targets.cpu import compile as cpu_compile
    from ptxport.runtime.backends.cpu import executor
    from ptxport.runtime.backends.cpu.jit import CpuKernelBinary

    ptx = os.environ.get("TRACE_BLOCKS_PTX")
    if ptx:     # (PtxportRun compiles the case's source with ck.Program)
        text = Path(ptx).read_text()
        ck.Program = lambda _source, code_type=None: Program(text, code_type="ptx")
    made = cpu_compile._object_code

    def keep(llvm_ir, kernel, how):
        obj = made(llvm_ir, kernel, how)
        (out / "kernel.ll").write_text(llvm_ir)
        (out / "kernel.o").write_bytes(obj)
        return obj

    cpu_compile._object_code = keep
    executor.set_workers(1)
    case = next(c for c in ck.CASES if c.name == case_name)
    problem = case.make(size, np.random.default_rng(0))
    device = Device("cpu")
    device.set_current()
    run = ck.PtxportRun(case, problem, device, device.create_stream(), {})
    run.first_run()
    import gc
    for binary in gc.get_objects():
        if isinstance(binary, CpuKernelBinary) and binary.name == case.kernel:
            address = binary._engine.get_function_address("run_blocks")
            (out / "address.json").write_text(json.dumps(address))
    os.kill(os.getpid(), signal.SIGTRAP)
    run.run()


def _gdb(out: Path, limit: int) -> None:
    """In gdb: break at run_blocks, single-step each call until it returns."""
    import gdb
    for command in ("set pagination off", "set confirm off", "handle SIGTRAP stop nopass",
                    "run"):
        gdb.execute(command, to_string=True)
    address = json.loads((out / "address.json").read_text())
    gdb.execute(f"break *{address}", to_string=True)
    calls, total = [], 0
    while total < limit:
        try:
            gdb.execute("continue", to_string=True)
            if int(gdb.parse_and_eval("$pc")) != address:
                break
        except gdb.error:
            break
        back = int(gdb.parse_and_eval("*(unsigned long*)$sp"))
        pcs = []
        while total < limit and (pc := int(gdb.parse_and_eval("$pc"))) != back:
            pcs.append(pc - address)
            total += 1
            gdb.execute("stepi", to_string=True)
        calls.append(pcs)
    (out / "trace.json").write_text(json.dumps(calls))
    gdb.execute("kill", to_string=True)


def _labels(out: Path) -> tuple[dict[int, str], dict[int, str]]:
    """Offset in run_blocks -> the LLVM block its instruction came from (the optimized
    module's assembly, block names in its comments, matched instruction by instruction
    with the object's disassembly), and offset -> the instruction's disassembly."""
    import llvmlite.binding as llvm
    sys.path.insert(0, str(ROOT))
    from ptxport.codegen.targets.cpu.machine import kernel_machine, kernel_module
    machine = kernel_machine()
    machine.set_asm_verbosity(True)
    module = kernel_module((out / "kernel.ll").read_text())
    passes = llvm.create_pass_builder(machine, llvm.PipelineTuningOptions(speed_level=3))
    passes.getModulePassManager().run(module, passes)
    lines = machine.emit_assembly(module).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run_blocks:"))
    names, label = [], "entry"
    for line in lines[start + 1:]:
        text = line.strip()
        if text.startswith(".Lfunc_end"):
            break
        named = re.match(r"(?:\.LBB\S+:|#\s*%bb\.\d+:)\s*#\s*(\S+)", text)
        if named:
            label = named.group(1)
        elif text and not text.startswith(("#", ".")) and not re.match(r"[\w.]+:", text):
            names.append(label)
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", out / "kernel.o"],
                                 capture_output=True, text=True, check=True).stdout
    offsets, texts, inside = [], [], False
    for line in disassembly.splitlines():
        if line.endswith("<run_blocks>:"):
            inside = True
        elif inside and re.match(r"[0-9a-f]+ <", line):
            break
        elif inside and (found := re.match(r"\s*([0-9a-f]+):\s*(\S+)(.*)", line)):
            if not found.group(2).startswith(("nop", "data16", "cs", "xchg", "int3")):
                offsets.append(int(found.group(1), 16))
                texts.append(f"{found.group(2)} {found.group(3).strip()}")
    if len(offsets) != len(names):
        raise SystemExit(f"the assembly ({len(names)} instructions) and the object "
                         f"({len(offsets)}) of run_blocks differ")
    base = offsets[0]
    return ({offset - base: name for offset, name in zip(offsets, names, strict=True)},
            {offset - base: text for offset, text in zip(offsets, texts, strict=True)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", help="a cpu_kernels.py case: stencil, scan_warp, ...")
    parser.add_argument("--size", type=int, default=48, help="the case's size (small)")
    parser.add_argument("--call", type=int, default=None,
                        help="the run_blocks call to break down (default: the middle one)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--path", action="store_true", help="also print the block sequence")
    parser.add_argument("--asm", action="store_true",
                        help="also print the call's instructions in the order they ran")
    parser.add_argument("--limit", type=int, default=400_000, help="most steps in all")
    parser.add_argument("--ptx", type=Path, default=None,
                        help="run the case's kernel from this PTX file instead of its source")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        env = dict(os.environ, TRACE_BLOCKS_OUT=str(out), TRACE_BLOCKS_LIMIT=str(args.limit),
                   PTXPORT_CACHE_DIR=str(out / "cache"), PYTHONPATH=str(ROOT),
                   TRACE_BLOCKS_PTX=str(args.ptx.resolve()) if args.ptx else "")
        subprocess.run(["gdb", "-batch", "-x", __file__, "--args", sys.executable, __file__,
                        "--target", args.case, str(args.size)], env=env, check=True,
                       capture_output=True)
        calls = json.loads((out / "trace.json").read_text())
        labels, texts = _labels(out)
    print(f"{args.case} at size {args.size}: instructions per run_blocks call "
          f"{[len(c) for c in calls]}")
    which = len(calls) // 2 if args.call is None else args.call
    steps = [labels.get(pc, "?") for pc in calls[which]]
    print(f"call {which}: {len(steps)} instructions, by LLVM block")
    for name, count in collections.Counter(steps).most_common(args.top):
        print(f"{count:7d}  {name}")
    if args.path:
        print("path:")
        run = 0
        for i, name in enumerate(steps):
            run += 1
            if i + 1 == len(steps) or steps[i + 1] != name:
                print(f"{run:7d}  {name}")
                run = 0
    if args.asm:
        print("instructions:")
        for pc in calls[which]:
            print(f"  {labels.get(pc, '?'):28s} {texts.get(pc, hex(pc))}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--target":
        _target(sys.argv[2], int(sys.argv[3]), Path(os.environ["TRACE_BLOCKS_OUT"]))
    else:
        try:
            import gdb  # noqa: F401  (inside gdb: drive the trace)
        except ImportError:
            main()
        else:
            _gdb(Path(os.environ["TRACE_BLOCKS_OUT"]), int(os.environ["TRACE_BLOCKS_LIMIT"]))
