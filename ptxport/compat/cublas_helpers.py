"""cuBLAS's helper functions that move vectors and matrices between host and device memory:
cublasSetVector / GetVector / SetMatrix / GetMatrix and their Async forms.

As cuBLAS documents them: a vector is n elements of elemSize bytes, incx (incy) elements
apart; a matrix is rows x cols column-major with leading dimensions lda and ldb (in
elements). The plain forms return once the copy is done; the Async forms queue it on the
stream, copying from pageable host memory at the call (as cudaMemcpyAsync does) and waiting
for a copy into pageable host memory. CUBLAS_STATUS_INVALID_VALUE for an increment, leading
dimension or element size <= 0 or a negative size; CUBLAS_STATUS_MAPPING_ERROR where the
copy itself would fail on a GPU (a NULL pointer, more rows than a leading dimension). On
every device the bytes move through the driver shim's own copies (memory.move_bytes), in
order with the program's work.
"""

from __future__ import annotations

import ctypes

from ptxport.compat import streams
from ptxport.compat.cublas import INVALID_VALUE, MAPPING_ERROR, SUCCESS, CublasError
from ptxport.compat.memory import copy_kind, move_bytes
from ptxport.compat.state import state

__all__ = ["cublasGetMatrix", "cublasGetMatrixAsync", "cublasGetVector",
           "cublasGetVectorAsync", "cublasSetMatrix", "cublasSetMatrixAsync",
           "cublasSetVector", "cublasSetVectorAsync"]


def _strided_copy(count: int, width: int, src: int, src_pitch: int, dst: int, dst_pitch: int,
                  stream: int, sync: bool) -> int:
    """Copy `count` pieces of `width` bytes, `src_pitch` and `dst_pitch` bytes apart, in
    stream order."""
    if count <= 0 or width <= 0:
        return SUCCESS
    if not src or not dst:
        raise CublasError(MAPPING_ERROR, "the source or destination pointer is NULL")
    kind = copy_kind(dst, src)
    if not sync and kind in ("htod", "htoh") and state.allocation_at(src) is None:
        # pageable host memory: taken at the call, so the program may reuse it at once
        staged = ctypes.create_string_buffer(count * width)
        for i in range(count):
            ctypes.memmove(ctypes.addressof(staged) + i * width, src + i * src_pitch, width)
        src, src_pitch = ctypes.addressof(staged), width
    else:
        staged = None
    if kind.endswith("toh") and state.allocation_at(dst) is None:
        sync = True

    def pieces() -> None:
        for i in range(count):
            move_bytes(dst + i * dst_pitch, src + i * src_pitch, width, kind, staged)

    streams.enqueue(stream, pieces, sync)
    return SUCCESS


def _vector(n: int, size: int, x: int, incx: int, y: int, incy: int, stream: int,
            sync: bool) -> int:
    if size <= 0 or incx <= 0 or incy <= 0:
        raise CublasError(INVALID_VALUE, f"elemSize {size}, incx {incx} and incy {incy} must "
                                         "be positive")
    return _strided_copy(n, size, x, incx * size, y, incy * size, stream, sync)


def _matrix(rows: int, cols: int, size: int, a: int, lda: int, b: int, ldb: int, stream: int,
            sync: bool) -> int:
    if rows < 0 or cols < 0 or size <= 0 or lda <= 0 or ldb <= 0:
        raise CublasError(INVALID_VALUE, f"rows {rows}, cols {cols}, elemSize {size}, lda {lda} "
                                         f"and ldb {ldb}: sizes may not be negative, the rest "
                                         "must be positive")
    if cols > 1 and (rows > lda or rows > ldb):   # the pitched copy itself would fail
        raise CublasError(MAPPING_ERROR, f"{rows} rows do not fit leading dimensions {lda} "
                                         f"and {ldb}")
    return _strided_copy(cols, rows * size, a, lda * size, b, ldb * size, stream, sync)


def cublasSetVector(n: int, size: int, x: int, incx: int, y: int, incy: int) -> int:
    return _vector(n, size, x, incx, y, incy, 0, True)


def cublasGetVector(n: int, size: int, x: int, incx: int, y: int, incy: int) -> int:
    return _vector(n, size, x, incx, y, incy, 0, True)


def cublasSetVectorAsync(n: int, size: int, x: int, incx: int, y: int, incy: int,
                         stream: int) -> int:
    return _vector(n, size, x, incx, y, incy, stream, False)


def cublasGetVectorAsync(n: int, size: int, x: int, incx: int, y: int, incy: int,
                         stream: int) -> int:
    return _vector(n, size, x, incx, y, incy, stream, False)


def cublasSetMatrix(rows: int, cols: int, size: int, a: int, lda: int, b: int,
                    ldb: int) -> int:
    return _matrix(rows, cols, size, a, lda, b, ldb, 0, True)


def cublasGetMatrix(rows: int, cols: int, size: int, a: int, lda: int, b: int,
                    ldb: int) -> int:
    return _matrix(rows, cols, size, a, lda, b, ldb, 0, True)


def cublasSetMatrixAsync(rows: int, cols: int, size: int, a: int, lda: int, b: int, ldb: int,
                         stream: int) -> int:
    return _matrix(rows, cols, size, a, lda, b, ldb, stream, False)


def cublasGetMatrixAsync(rows: int, cols: int, size: int, a: int, lda: int, b: int, ldb: int,
                         stream: int) -> int:
    return _matrix(rows, cols, size, a, lda, b, ldb, stream, False)
