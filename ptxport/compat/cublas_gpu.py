"""cuBLAS's Level 1 routines, gemv and geam on GPU devices (cuda, hip, opencl): the kernels of
ptxport/blas/kernels/routines.cu, queued on the handle's stream (cublas.py and
cublas_level2.py check the arguments, then hand over here when the device is not the cpu).

Scalars follow the handle's pointer mode: CUBLAS_POINTER_MODE_HOST values are read at the
call; with _DEVICE the kernel reads them from device memory, in stream order. A reduction's
result (dot, nrm2, asum, iamax) goes to device memory in stream order (_DEVICE), or to host
memory before the call returns (_HOST: the kernel writes a device cell, which is copied back
and waited for). S routines compute in float (nrm2 sums squares in float: no scaling against
overflow, unlike the cpu device's sum in double), D routines in double.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ptxport.blas import routines
from ptxport.compat import streams
from ptxport.compat.cublas import (
    INVALID_VALUE,
    NOT_SUPPORTED,
    POINTER_MODE_DEVICE,
    SUCCESS,
    CublasError,
    Handle,
)
from ptxport.compat.state import state

__all__ = ["axpy", "geam", "gemv", "reduce", "scal"]

_i32, _u64 = np.int32, np.uint64
_BLOCK = routines.BLOCK


def _stream(h: Handle):
    stream = streams.ordered(h.stream)
    if isinstance(stream, streams.Capture):
        raise CublasError(NOT_SUPPORTED, f"cuBLAS work on {state.device} cannot be captured "
                                         "into a graph yet")
    return stream


def _scalar(h: Handle, address: int, dtype: np.dtype, what: str) -> tuple:
    """(value, device pointer) of alpha or beta as the pointer mode says."""
    if not address:
        raise CublasError(INVALID_VALUE, f"{what} is NULL")
    if h.pointer_mode == POINTER_MODE_DEVICE:
        return dtype.type(0), _u64(address)
    cell = np.frombuffer((ctypes.c_byte * dtype.itemsize).from_address(address), dtype)
    return dtype.type(cell[0]), _u64(0)


def _double(dtype: np.dtype) -> bool:
    if dtype not in (np.float32, np.float64):
        raise CublasError(NOT_SUPPORTED, f"{dtype.name} Level 1/2 routines on {state.device}")
    return dtype == np.float64


def axpy(h: Handle, dtype: np.dtype, n: int, alpha: int, x: int, incx: int, y: int,
         incy: int) -> int:
    """y += alpha x (n > 0, checked by the caller)."""
    stream = _stream(h)
    routines.run(stream, "axpy", routines.elementwise_grid(n), _BLOCK, _i32(n),
                 *_scalar(h, alpha, dtype, "alpha"), _u64(x), _i32(incx), _u64(y), _i32(incy),
                 double=_double(dtype))
    return SUCCESS


def scal(h: Handle, dtype: np.dtype, n: int, alpha: int, x: int, incx: int) -> int:
    """x *= alpha (n > 0 and incx > 0, checked by the caller)."""
    stream = _stream(h)
    routines.run(stream, "scal", routines.elementwise_grid(n), _BLOCK, _i32(n),
                 *_scalar(h, alpha, dtype, "alpha"), _u64(x), _i32(incx),
                 double=_double(dtype))
    return SUCCESS


def reduce(h: Handle, op: str, dtype: np.dtype, n: int, x: int, incx: int, y: int, incy: int,
           result: int) -> int:
    """dot, nrm2, asum or iamax of n elements (n = 0: the result is 0) into `result`."""
    if not result:
        raise CublasError(INVALID_VALUE, "the result pointer is NULL")
    stream = _stream(h)
    out_type = np.dtype(np.int32) if op == "iamax" else dtype
    on_device = h.pointer_mode == POINTER_MODE_DEVICE
    cell = None if on_device else stream.device.allocate(8, stream=stream)
    target = _u64(result) if on_device else cell
    value_out, index_out = (_u64(0), target) if op == "iamax" else (target, _u64(0))
    routines.run(stream, "reduce", 1, _BLOCK, _i32(routines.REDUCE_OPS[op]), _i32(max(n, 0)),
                 _u64(x), _i32(incx), _u64(y), _i32(incy), value_out, index_out,
                 double=_double(dtype))
    if not on_device:
        host = np.zeros(8, np.uint8)
        cell.copy_to(host, stream=stream)
        stream.sync()
        cell.close(stream=stream)
        ctypes.memmove(result, host.ctypes.data, out_type.itemsize)
    return SUCCESS


def gemv(h: Handle, dtype: np.dtype, trans: bool, m: int, n: int, alpha: int, a: int,
         lda: int, x: int, incx: int, beta: int, y: int, incy: int) -> int:
    """y = alpha op(A) x + beta y (checked, m and n > 0)."""
    stream = _stream(h)
    rows = n if trans else m
    routines.run(stream, "gemv", -(-rows // _BLOCK), _BLOCK, _i32(trans), _i32(m), _i32(n),
                 *_scalar(h, alpha, dtype, "alpha"), *_scalar(h, beta, dtype, "beta"),
                 _u64(a), _i32(lda), _u64(x), _i32(incx), _u64(y), _i32(incy),
                 double=_double(dtype))
    return SUCCESS


def geam(h: Handle, dtype: np.dtype, ta: bool, tb: bool, m: int, n: int, alpha: int, a: int,
         lda: int, beta: int, b: int, ldb: int, c: int, ldc: int) -> int:
    """C = alpha op(A) + beta op(B) (checked, m and n > 0)."""
    stream = _stream(h)
    grid = (-(-m // _BLOCK), min(n, 65535))   # the kernel loops over columns past the grid
    routines.run(stream, "geam", grid, _BLOCK, _i32(ta), _i32(tb), _i32(m), _i32(n),
                 *_scalar(h, alpha, dtype, "alpha"), _u64(a), _i32(lda),
                 *_scalar(h, beta, dtype, "beta"), _u64(b), _i32(ldb), _u64(c), _i32(ldc),
                 double=_double(dtype))
    return SUCCESS
