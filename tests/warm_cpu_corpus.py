"""Compiles corpus cases' kernels for the cpu device into the disk cache, as
tests/test_corpus_cpu.py's tests would: at each case's block shape, on the warp-gang path and
on the scalar one (CpuOptions(gang=False)). That file's start_early runs this in a process of
its own while the suite's process runs the tests before it; its tests then load the images.

    python tests/warm_cpu_corpus.py FILE:KERNEL ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_corpus_cpu import _program

from kernel_cases import CASES
from ptxport import Device
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.runtime import backends


def warm(names: list[str]) -> None:
    wanted = set(names)
    cases = [case for case in CASES if case.name in wanted]
    gangs = []
    for case in cases:
        binary = _program(case.file)._binary(Device("cpu"), case.kernel)
        if hasattr(binary, "prepare"):   # a warp-gang kernel: code per block shape
            binary.prepare(case.block)
        if binary.gang_refusal is None:
            gangs.append(case)
    # test_kernel_on_cpu_scalar_path runs the kernels that took the gang path thread by thread
    backends.get("cpu").options = CpuOptions(gang=False)
    for case in gangs:
        _program(case.file, False)._binary(Device("cpu"), case.kernel)


if __name__ == "__main__":
    warm(sys.argv[1:])
