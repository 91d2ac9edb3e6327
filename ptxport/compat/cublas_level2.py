"""cuBLAS's matrix-vector product (gemv) and matrix addition (geam, a BLAS-like extension),
in S and D, on the same views of device memory and stream order as cublas_gemm.py.

gemv: y = alpha op(A) x + beta y, A m x n column-major; geam: C = alpha op(A) + beta op(B),
C m x n. As cuBLAS (and reference BLAS) define them: with beta = 0, y (or B) is not read;
gemv with m = 0 or n = 0 returns without touching y; geam may work in place (C = A with
transa N and lda = ldc, likewise B) and refuses any other aliasing of C. On GPU devices the
work is cublas_gpu.py's kernels, after the same checks.

Where NVIDIA's cuBLAS 13 differs from its documentation, this follows the library: gemv
takes incx = 0 (every element of x is x[0]; the documentation lists it as invalid, the H100's
cuBLAS returned CUBLAS_STATUS_SUCCESS) and reports its invalid arguments without a xerbla
line, while geam prints one for its sizes and leading dimensions but not for an aliased C.
Where the library's answer would hide a user error, this keeps the documented one: gemv with
m = -1, trans = 7 or incy = 0 is CUBLAS_STATUS_INVALID_VALUE here (NVIDIA's cuBLAS 13
returned CUBLAS_STATUS_SUCCESS for each on the H100); the stderr line says so, and
docs/compat.md lists these differences.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ptxport.compat import cublas_gpu
from ptxport.compat.cublas import (
    INVALID_VALUE,
    POINTER_MODE_DEVICE,
    SUCCESS,
    CublasError,
    device_array,
    handle_of,
    illegal,
    in_stream_order,
    scalar_reader,
    vector,
)
from ptxport.compat.state import state

__all__ = ["geam", "gemv"]

_OPS = {0: False, 1: True, 2: True}   # CUBLAS_OP_N, _T, _C (C is T for real data)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


_NVIDIA_SUCCEEDS = ("; cuBLAS documents it as invalid, NVIDIA's cuBLAS 13 returns "
                    "CUBLAS_STATUS_SUCCESS (seen for m = -1, trans = 7 and incy = 0): "
                    "docs/compat.md")


def _op(name: str, op: int) -> bool:
    if op not in _OPS:
        raise CublasError(INVALID_VALUE, f"{name} = {op} is not CUBLAS_OP_N, _T or _C"
                                         f"{_NVIDIA_SUCCEEDS}")
    return _OPS[op]


def _geam_op(routine: str, position: int, name: str, op: int) -> bool:
    if op not in _OPS:
        raise illegal(routine, position, f"{name} = {op} is not CUBLAS_OP_N, _T or _C")
    return _OPS[op]


def _matrix(address: int, dtype: np.dtype, rows: int, cols: int, ld: int,
            what: str) -> np.ndarray:
    """The stored rows x cols column-major matrix at `address` as a (rows, cols) view."""
    if rows == 0 or cols == 0:
        return np.empty((rows, cols), dtype)
    flat = device_array(address, dtype, (cols - 1) * ld + rows, what)
    size = dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (size, ld * size))


def _readers(handle: int, alpha: int, beta: int, dtype: np.dtype) \
        -> tuple[int, Callable[[], object], Callable[[], object]]:
    h = handle_of(handle)
    on_device = h.pointer_mode == POINTER_MODE_DEVICE
    return (h.stream, scalar_reader(on_device, alpha, dtype, "alpha"),
            scalar_reader(on_device, beta, dtype, "beta"))


def gemv(dtype: np.dtype, handle: int, trans: int, m: int, n: int, alpha: int, a: int,
         lda: int, x: int, incx: int, beta: int, y: int, incy: int) -> int:
    """Queue y = alpha op(A) x + beta y (cublas<t>gemv's argument checks first)."""
    handle_of(handle)
    transposed = _op("trans", trans)
    if m < 0 or n < 0:
        raise CublasError(INVALID_VALUE, f"negative size: m={m} n={n}{_NVIDIA_SUCCEEDS}")
    if lda < max(1, m):
        raise CublasError(INVALID_VALUE, f"lda = {lda} is less than the {m} rows of A")
    if incy == 0:
        raise CublasError(INVALID_VALUE, "incy = 0: every element of y would be one location"
                                         f"{_NVIDIA_SUCCEEDS}")
    if m == 0 or n == 0:   # BLAS's quick return: y is left as it is
        return SUCCESS
    if state.device.backend != "cpu":
        return cublas_gpu.gemv(handle_of(handle), dtype, transposed, m, n, alpha, a, lda, x,
                               incx, beta, y, incy)
    stream, read_alpha, read_beta = _readers(handle, alpha, beta, dtype)
    matrix = _matrix(a, dtype, m, n, lda, "A")
    op_a = matrix.T if transposed else matrix
    xs = vector(x, dtype, op_a.shape[1], incx, "x")
    ys = vector(y, dtype, op_a.shape[0], incy, "y")

    def work() -> None:
        alpha, beta = read_alpha(), read_beta()
        total = op_a @ xs * alpha if alpha != 0 else np.zeros(ys.shape, dtype)
        if beta != 0:
            total = total + ys * beta
        ys[...] = total

    in_stream_order(stream, work)
    return SUCCESS


def _check_alias(name: str, address: int, transposed: bool, ld: int, c: int,
                 ldc: int) -> None:
    if address == c and (transposed or ld != ldc):
        raise CublasError(INVALID_VALUE, f"C is {name} but {name} is transposed or its ld "
                                         f"{ld} is not ldc {ldc}: only an identical in-place "
                                         "matrix may be C")


def geam(dtype: np.dtype, handle: int, transa: int, transb: int, m: int, n: int, alpha: int,
         a: int, lda: int, beta: int, b: int, ldb: int, c: int, ldc: int) -> int:
    """Queue C = alpha op(A) + beta op(B) (cublas<t>geam's argument checks first, numbered
    for xerbla: transa 1, transb 2, m 3, n 4, lda 7, ldb 10, ldc 12)."""
    handle_of(handle)
    routine = "SGEAM " if dtype == _F32 else "DGEAM "
    trans_a = _geam_op(routine, 1, "transa", transa)
    trans_b = _geam_op(routine, 2, "transb", transb)
    for position, name, size in ((3, "m", m), (4, "n", n)):
        if size < 0:
            raise illegal(routine, position, f"negative size: {name} = {size}")
    for position, name, ld, rows in ((7, "lda", lda, n if trans_a else m),
                                     (10, "ldb", ldb, n if trans_b else m),
                                     (12, "ldc", ldc, m)):
        if ld < max(1, rows):
            raise illegal(routine, position, f"{name} = {ld} is less than the {rows} rows of "
                                             "the matrix as stored")
    _check_alias("A", a, trans_a, lda, c, ldc)
    _check_alias("B", b, trans_b, ldb, c, ldc)
    if m == 0 or n == 0:
        return SUCCESS
    if state.device.backend != "cpu":
        return cublas_gpu.geam(handle_of(handle), dtype, trans_a, trans_b, m, n, alpha, a, lda,
                               beta, b, ldb, c, ldc)
    stream, read_alpha, read_beta = _readers(handle, alpha, beta, dtype)
    stored = ((n, m) if trans_a else (m, n)), ((n, m) if trans_b else (m, n))

    def operand(address: int, ld: int, shape: tuple[int, int], transposed: bool,
                what: str) -> np.ndarray:
        view = _matrix(address, dtype, *shape, ld, what)
        return view.T if transposed else view

    out = _matrix(c, dtype, m, n, ldc, "C")

    def work() -> None:
        alpha, beta = read_alpha(), read_beta()
        # A term whose scalar is 0 is not read: its matrix may be NULL (a transpose is
        # geam with beta = 0), and NaN in it does not propagate.
        total = np.zeros((m, n), dtype)
        if alpha != 0:
            total = operand(a, lda, stored[0], trans_a, "A") * alpha
        if beta != 0:
            total = total + operand(b, ldb, stored[1], trans_b, "B") * beta
        out[...] = total

    in_stream_order(stream, work)
    return SUCCESS


def cublasSgemv_v2(*args: int) -> int:
    return gemv(_F32, *args)


def cublasDgemv_v2(*args: int) -> int:
    return gemv(_F64, *args)


def cublasSgeam(*args: int) -> int:
    return geam(_F32, *args)


def cublasDgeam(*args: int) -> int:
    return geam(_F64, *args)
