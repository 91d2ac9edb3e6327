"""Whole-kernel test cases for the CUDA corpus (tests/kernels/*.cu), with numpy references.

One KernelCase per kernel of every corpus file (template instantiations under their mangled
PTX names): launch shape, deterministic arguments and the expected contents of every buffer
the kernel writes. The cases know nothing about how kernels are launched; run_case takes a
launcher (see _core's docstring for its contract), so the same cases check ptxport's
backends here and NVIDIA's driver on the GPU machine (benchmarks/validate_cases_gpu.py).

The cases are grouped by theme in the modules of this package; CASES holds them all, in
corpus file order.
"""

from __future__ import annotations

from . import atomics, blocks, control, elementwise, intrinsics, linalg, lowprec, memory, pointers
from ._core import (
    Arg,
    CaseReport,
    KernelCase,
    case_seed,
    compare_outputs,
    copy_args,
    run_case,
    seed_for,
)

__all__ = [
    "CASES",
    "Arg",
    "CaseReport",
    "KernelCase",
    "case_seed",
    "compare_outputs",
    "copy_args",
    "run_case",
    "seed_for",
]

CASES: list[KernelCase] = sorted(
    [*elementwise.CASES, *intrinsics.CASES, *lowprec.CASES, *memory.CASES, *control.CASES,
     *atomics.CASES, *blocks.CASES, *linalg.CASES, *pointers.CASES],
    key=lambda case: case.file)
