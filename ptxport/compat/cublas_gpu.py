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

_u64 = np.uint64


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


def _dtype(dtype: np.dtype) -> np.dtype:
    if dtype not in (np.float32, np.float64):
        raise CublasError(NOT_SUPPORTED, f"{dtype.name} Level 1/2 routines on {state.device}")
    return dtype


def axpy(h: Handle, dtype: np.dtype, n: int, alpha: int, x: int, incx: int, y: int,
         incy: int) -> int:
    """y += alpha x (n > 0, checked by the caller)."""
    routines.axpy(_stream(h), _dtype(dtype), n, _scalar(h, alpha, dtype, "alpha"), _u64(x),
                  incx, _u64(y), incy)
    return SUCCESS


def scal(h: Handle, dtype: np.dtype, n: int, alpha: int, x: int, incx: int) -> int:
    """x *= alpha (n > 0 and incx > 0, checked by the caller)."""
    routines.scal(_stream(h), _dtype(dtype), n, _scalar(h, alpha, dtype, "alpha"), _u64(x),
                  incx)
    return SUCCESS


def reduce(h: Handle, op: str, dtype: np.dtype, n: int, x: int, incx: int, y: int, incy: int,
           result: int) -> int:
    """dot, nrm2, asum or iamax of n elements (n = 0: the result is 0) into `result`."""
    if not result:
        raise CublasError(INVALID_VALUE, "the result pointer is NULL")
    stream, dtype = _stream(h), _dtype(dtype)
    if h.pointer_mode == POINTER_MODE_DEVICE:
        routines.reduce(stream, op, dtype, n, _u64(x), incx, _u64(y), incy, _u64(result))
        return SUCCESS
    value = routines.reduce_to_host(stream, op, dtype, n, _u64(x), incx, _u64(y), incy)
    ctypes.memmove(result, value.tobytes(), value.itemsize)
    return SUCCESS


def gemv(h: Handle, dtype: np.dtype, trans: bool, m: int, n: int, alpha: int, a: int,
         lda: int, x: int, incx: int, beta: int, y: int, incy: int) -> int:
    """y = alpha op(A) x + beta y (checked, m and n > 0)."""
    routines.gemv(_stream(h), _dtype(dtype), trans, m, n, _scalar(h, alpha, dtype, "alpha"),
                  _u64(a), lda, _u64(x), incx, _scalar(h, beta, dtype, "beta"), _u64(y), incy)
    return SUCCESS


def geam(h: Handle, dtype: np.dtype, ta: bool, tb: bool, m: int, n: int, alpha: int, a: int,
         lda: int, beta: int, b: int, ldb: int, c: int, ldc: int) -> int:
    """C = alpha op(A) + beta op(B) (checked, m and n > 0)."""
    routines.geam(_stream(h), _dtype(dtype), ta, tb, m, n, _scalar(h, alpha, dtype, "alpha"),
                  _u64(a), lda, _scalar(h, beta, dtype, "beta"), _u64(b), ldb, _u64(c), ldc)
    return SUCCESS
