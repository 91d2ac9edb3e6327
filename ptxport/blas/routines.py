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

import numpy as np

from ptxport.blas.portable import KERNELS, kernel_source
from ptxport.errors import UnsupportedFeatureError
from ptxport.runtime.launch import LaunchConfig, launch
from ptxport.runtime.memory import Buffer
from ptxport.runtime.program import Kernel, Program
from ptxport.runtime.program_options import ProgramOptions
from ptxport.runtime.stream import Stream

__all__ = ["BLOCK", "KINDS", "REDUCE_OPS", "axpy", "elementwise_grid", "geam", "gemv", "kernel",
           "reduce", "reduce_to_host", "run", "scal"]

SOURCE = KERNELS / "routines.cu"
# element type -> the kernels' kind argument (bfloat16 is stored as its bits, uint16)
KINDS = {"float32": 0, "float16": 2, "uint16": 3}
REDUCE_OPS = {"dot": 0, "nrm2": 1, "asum": 2, "iamax": 3}
_BLOCK = 256
_GRID_LIMIT = 1024


@functools.cache
def _module(arch: str, double: bool):
    options = ProgramOptions(arch=arch, define_macro=[("ACC_KIND", str(int(double)))],
                             name="ptxport_blas_routines.cu")
    return Program(kernel_source(SOURCE), "c++", options).compile()


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

# -- Level 1/2 on Buffers or device addresses (np.uint64) ----------------------------------------
# A scalar is (value, device pointer): the pointer, when not 0, is read by the kernel instead
# (cuBLAS's device pointer mode). Arguments are checked by the callers (ptxport.blas and
# ptxport.compat); n, m > 0 unless said.

Pointer = Buffer | np.uint64
Scalar = tuple[np.floating, np.uint64]
_i32 = np.int32


def _double(dtype: np.dtype) -> bool:
    if dtype not in (np.float32, np.float64):
        raise UnsupportedFeatureError(f"BLAS routines on {dtype.name} data", "GPU devices",
                                      reason="the Level 1/2 kernels are float32 and float64")
    return dtype == np.float64


def axpy(stream: Stream, dtype: np.dtype, n: int, alpha: Scalar, x: Pointer, incx: int,
         y: Pointer, incy: int) -> None:
    """y += alpha x."""
    run(stream, "axpy", elementwise_grid(n), _BLOCK, _i32(n), *alpha, x, _i32(incx), y,
        _i32(incy), double=_double(dtype))


def scal(stream: Stream, dtype: np.dtype, n: int, alpha: Scalar, x: Pointer, incx: int) -> None:
    """x *= alpha (incx > 0)."""
    run(stream, "scal", elementwise_grid(n), _BLOCK, _i32(n), *alpha, x, _i32(incx),
        double=_double(dtype))


def reduce(stream: Stream, op: str, dtype: np.dtype, n: int, x: Pointer, incx: int,
           y: Pointer | None, incy: int, out: Pointer) -> None:
    """dot (x . y), nrm2, asum or iamax (an int32, 1-based; 0 when n is 0) of n >= 0
    elements into device memory `out`."""
    value, index = (None, out) if op == "iamax" else (out, None)
    run(stream, "reduce", 1, _BLOCK, _i32(REDUCE_OPS[op]), _i32(max(n, 0)), x, _i32(incx),
        y, _i32(incy), value, index, double=_double(dtype))


def reduce_to_host(stream: Stream, op: str, dtype: np.dtype, n: int, x: Pointer, incx: int,
                   y: Pointer | None = None, incy: int = 1) -> np.generic:
    """reduce(), with the result brought to the host once the stream reaches it."""
    cell = stream.device.allocate(8, stream=stream)
    reduce(stream, op, dtype, n, x, incx, y, incy, cell)
    host = np.zeros(8, np.uint8)
    cell.copy_to(host, stream=stream)
    stream.sync()
    cell.close(stream=stream)
    return host.view(np.int32 if op == "iamax" else dtype)[0]


def gemv(stream: Stream, dtype: np.dtype, trans: bool, m: int, n: int, alpha: Scalar,
         a: Pointer, lda: int, x: Pointer, incx: int, beta: Scalar, y: Pointer,
         incy: int) -> None:
    """y = alpha op(A) x + beta y (y not read when beta is 0)."""
    rows = n if trans else m
    run(stream, "gemv", -(-rows // _BLOCK), _BLOCK, _i32(trans), _i32(m), _i32(n), *alpha,
        *beta, a, _i32(lda), x, _i32(incx), y, _i32(incy), double=_double(dtype))


def geam(stream: Stream, dtype: np.dtype, ta: bool, tb: bool, m: int, n: int, alpha: Scalar,
         a: Pointer, lda: int, beta: Scalar, b: Pointer, ldb: int, c: Pointer,
         ldc: int) -> None:
    """C = alpha op(A) + beta op(B) (a term whose scalar is 0 is not read)."""
    grid = (-(-m // _BLOCK), min(n, 65535))   # the kernel loops over columns past the grid
    run(stream, "geam", grid, _BLOCK, _i32(ta), _i32(tb), _i32(m), _i32(n), *alpha, a,
        _i32(lda), *beta, b, _i32(ldb), c, _i32(ldc), double=_double(dtype))
