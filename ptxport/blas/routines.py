"""The BLAS routines besides the GEMM for GPU devices: kernels/routines.cu (cuBLASLt's
epilogues and input sums, Level 1, gemv, geam), compiled by ptxport for the stream's device
once per process and precision, and launched here on Buffers or device addresses.

The module of one precision (float: S routines and every cuBLASLt epilogue, FP32 compute;
double: D routines) is one compilation; element types of cuBLASLt's matrices and vectors are
kernel arguments, not compile-time choices, so a program that mixes f32, f16 and bf16 pays
for one compile (on OpenCL, seconds each).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ptxport.runtime.launch import LaunchConfig, launch
from ptxport.runtime.memory import Buffer
from ptxport.runtime.program import Kernel, Program
from ptxport.runtime.program_options import ProgramOptions
from ptxport.runtime.stream import Stream

__all__ = ["BLOCK", "KINDS", "REDUCE_OPS", "elementwise_grid", "kernel", "run"]

SOURCE = Path(__file__).resolve().parent / "kernels" / "routines.cu"
# element type -> the kernels' kind argument (bfloat16 is stored as its bits, uint16)
KINDS = {"float32": 0, "float16": 2, "uint16": 3}
REDUCE_OPS = {"dot": 0, "nrm2": 1, "asum": 2, "iamax": 3}
_BLOCK = 256
_GRID_LIMIT = 1024


@functools.cache
def _module(arch: str, double: bool):
    options = ProgramOptions(arch=arch, define_macro=[("ACC_KIND", str(int(double)))],
                             name="ptxport_blas_routines.cu")
    return Program(SOURCE.read_text(), "c++", options).compile()


def kernel(stream: Stream, name: str, double: bool = False) -> Kernel:
    return _module(f"sm_{stream.device.arch}", double).get_kernel(name)


def _pointer(value: Buffer | int | None) -> Buffer | np.uint64:
    return value if isinstance(value, Buffer) else np.uint64(value or 0)


def run(stream: Stream, name: str, grid: tuple[int, ...] | int, block: int, *args,
        double: bool = False) -> None:
    """Queue kernel `name` on `stream`; Python ints among `args` are not allowed (the
    caller types each argument), None and Buffers are pointers."""
    typed = [_pointer(a) if a is None or isinstance(a, Buffer) else a for a in args]
    launch(stream, LaunchConfig(grid=grid, block=block), kernel(stream, name, double), *typed)


def elementwise_grid(count: int) -> int:
    """Blocks of _BLOCK threads for a grid-stride loop over `count` elements."""
    return max(1, min(_GRID_LIMIT, -(-count // _BLOCK)))


BLOCK = _BLOCK
