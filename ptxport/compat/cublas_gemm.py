"""cuBLAS's GEMMs: C = alpha op(A) op(B) + beta C, column-major, single and strided batched,
typed (Sgemm, Dgemm) and with data types named at run time (GemmEx).

As cuBLAS defines them: A, B and C are column-major, element (i, j) of a matrix with leading
dimension ld at offset i + j*ld; op(A) is m x k (A is stored m x k, or k x m for a transpose),
op(B) is k x n, C is m x n. With beta = 0, C is written without being read (NaN in C does not
propagate). On the cpu device the work is numpy's matmul (OpenBLAS) on views of device memory:
it computes C^T = op(B)^T op(A)^T, because C^T is a row-major view with row stride ldc, which
numpy hands to BLAS as it is (a column-major output would be copied).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ptxport.compat.cublas import (
    INVALID_VALUE,
    NOT_SUPPORTED,
    POINTER_MODE_DEVICE,
    SUCCESS,
    CublasError,
    device_array,
    handle_of,
    in_stream_order,
    scalar_reader,
)

__all__ = ["DATA_TYPES", "Operand", "Product", "ex_types", "gemm", "queue"]

_OPS = {0: False, 1: True, 2: True}   # CUBLAS_OP_N, _T, _C (C is T for real data)
_BF16 = np.dtype("<u2")               # bfloat16 is stored as its 16 bits here

# cudaDataType (library_types.h) -> how its elements are stored
DATA_TYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64), 2: np.dtype(np.float16),
               14: _BF16}
_NAMES = {0: "CUDA_R_32F", 1: "CUDA_R_64F", 2: "CUDA_R_16F", 14: "CUDA_R_16BF", 3: "CUDA_R_8I",
          10: "CUDA_R_32I"}
# cublasComputeType_t -> the precision ptxport computes in. 32F_FAST_16F, _16BF and _TF32
# allow cuBLAS to round inputs to less precision; computing in FP32 is within what they allow.
_COMPUTE = {68: np.dtype(np.float32), 69: np.dtype(np.float32), 74: np.dtype(np.float32),
            75: np.dtype(np.float32), 77: np.dtype(np.float32), 70: np.dtype(np.float64),
            71: np.dtype(np.float64)}
# (A, B, C) data types cuBLAS allows with each compute precision (cublasGemmEx's table,
# real types); the FAST modes take FP32 data only.
_ALLOWED = {
    np.dtype(np.float32): {(0, 0, 0), (2, 2, 2), (14, 14, 14), (2, 2, 0), (14, 14, 0)},
    np.dtype(np.float64): {(1, 1, 1)},
}
_FP32_DATA_ONLY = (74, 75, 77)


@dataclass(frozen=True)
class Operand:
    """A matrix argument: its address, element type, leading dimension and batch stride
    (in elements)."""

    address: int
    dtype: np.dtype
    ld: int
    stride: int = 0


def _to_float(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Elements as `dtype` for computing (bfloat16 bits are the high half of a float32)."""
    if values.dtype == _BF16:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(dtype, copy=False)
    return values.astype(dtype, copy=False)


def _to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16 bits; NaN stays a (quiet) NaN."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _store(target: np.ndarray, values: np.ndarray) -> None:
    target[...] = _to_bf16(values) if target.dtype == _BF16 else values


def _matrices(op: Operand, rows: int, cols: int, batch: int, what: str) -> np.ndarray:
    """The `batch` stored rows x cols matrices of `op`, transposed: shape (batch, cols, rows),
    a row-major view (row stride ld)."""
    size = op.dtype.itemsize
    count = (batch - 1) * op.stride + (cols - 1) * op.ld + rows
    flat = device_array(op.address, op.dtype, count, what)
    return np.lib.stride_tricks.as_strided(flat, (batch, cols, rows),
                                           (op.stride * size, op.ld * size, size))


def _check(transa: int, transb: int, m: int, n: int, k: int, a: Operand, b: Operand,
           c: Operand, batch: int) -> None:
    """cuBLAS's argument checks: CUBLAS_STATUS_INVALID_VALUE for each failed one."""
    for name, op in (("transa", transa), ("transb", transb)):
        if op not in _OPS:
            raise CublasError(INVALID_VALUE, f"{name} = {op} is not CUBLAS_OP_N, _T or _C")
    if min(m, n, k) < 0 or batch < 0:
        raise CublasError(INVALID_VALUE, f"negative size: m={m} n={n} k={k} batch={batch}")
    for name, ld, rows in (("lda", a.ld, k if _OPS[transa] else m),
                           ("ldb", b.ld, n if _OPS[transb] else k), ("ldc", c.ld, m)):
        if ld < max(1, rows):
            raise CublasError(INVALID_VALUE, f"{name} = {ld} is less than the {rows} rows of "
                                             "the matrix as stored")


def gemm(handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int,
         a: Operand, b: Operand, beta: int, c: Operand, batch: int,
         compute: np.dtype) -> int:
    """Queue C = alpha op(A) op(B) + beta C on the handle's stream, for `batch` matrices
    `stride` elements apart; alpha and beta are `compute` values."""
    h = handle_of(handle)
    _check(transa, transb, m, n, k, a, b, c, batch)
    on_device = h.pointer_mode == POINTER_MODE_DEVICE
    product = Product(transa, transb, m, n, k, a, b, batch, compute)
    queue(h.stream, product, scalar_reader(on_device, alpha, compute, "alpha"),
          scalar_reader(on_device, beta, compute, "beta"), c, c)
    return SUCCESS


@dataclass(frozen=True)
class Product:
    """op(A) op(B): m x k times k x n, `batch` times, computed in `compute` precision."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    a: Operand
    b: Operand
    batch: int
    compute: np.dtype

    def views(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(op(B)^T, op(A)^T) as views of device memory, or None when k = 0."""
        if self.k == 0:
            return None
        m, n, k, batch = self.m, self.n, self.k, self.batch
        a_t = _matrices(self.a, *((k, m) if _OPS[self.transa] else (m, k)), batch, "A")
        b_t = _matrices(self.b, *((n, k) if _OPS[self.transb] else (k, n)), batch, "B")
        # op(A)^T is the view (A^T) for N, A itself for T: swap the view's last two axes.
        return (b_t.swapaxes(1, 2) if _OPS[self.transb] else b_t,
                a_t.swapaxes(1, 2) if _OPS[self.transa] else a_t)


def queue(stream: int, product: Product, read_alpha: Callable[[], object],
          read_beta: Callable[[], object], c: Operand, d: Operand,
          bias: np.ndarray | None = None) -> None:
    """Queue D = alpha op(A) op(B) + beta C (+ bias, one value per row of D) on CUstream
    `stream`; C and D may be the same matrices."""
    if product.m == 0 or product.n == 0 or product.batch == 0:
        return
    m, n, batch = product.m, product.n, product.batch
    d_t = _matrices(d, m, n, batch, "D" if d is not c else "C")
    c_t = d_t if c is d else _matrices(c, m, n, batch, "C")
    in_stream_order(stream, _gemm_work(d_t, c_t, product.views(), read_alpha, read_beta,
                                       product.compute, bias))


def _gemm_work(d_t: np.ndarray, c_t: np.ndarray, views: tuple[np.ndarray, np.ndarray] | None,
               read_alpha: Callable[[], object], read_beta: Callable[[], object],
               compute: np.dtype, bias: np.ndarray | None) -> Callable[[], None]:
    """The work of one GEMM call on transposed views: D^T = alpha B^T A^T + beta C^T, plus
    the bias along D^T's rows (`views` None: k = 0)."""

    def work() -> None:
        alpha, beta = read_alpha(), read_beta()
        if views is None or alpha == 0:
            product = None
        elif alpha == 1 and beta == 0 and bias is None and \
                views[0].dtype == views[1].dtype == d_t.dtype == compute:
            np.matmul(*views, out=d_t)   # straight into D: the common case, no temporary
            return
        else:
            product = np.matmul(_to_float(views[0], compute), _to_float(views[1], compute))
            if alpha != 1:
                product *= alpha
        # With beta = 0, C is not read: NaN or garbage in it must not propagate.
        total = product if product is not None else np.zeros((), compute)
        if beta != 0:
            total = _to_float(c_t, compute) * beta + total
        if bias is not None:
            total = total + _to_float(bias, compute)
        _store(d_t, total)

    return work


# -- entry points -----------------------------------------------------------------------------

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _typed(dtype: np.dtype, handle: int, transa: int, transb: int, m: int, n: int, k: int,
           alpha: int, a: int, lda: int, sa: int, b: int, ldb: int, sb: int, beta: int,
           c: int, ldc: int, sc: int, batch: int) -> int:
    return gemm(handle, transa, transb, m, n, k, alpha, Operand(a, dtype, lda, sa),
                Operand(b, dtype, ldb, sb), beta, Operand(c, dtype, ldc, sc), batch, dtype)


def cublasSgemm_v2(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                   alpha: int, a: int, lda: int, b: int, ldb: int, beta: int, c: int,
                   ldc: int) -> int:
    return _typed(_F32, handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta,
                  c, ldc, 0, 1)


def cublasDgemm_v2(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                   alpha: int, a: int, lda: int, b: int, ldb: int, beta: int, c: int,
                   ldc: int) -> int:
    return _typed(_F64, handle, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta,
                  c, ldc, 0, 1)


def cublasSgemmStridedBatched(*args: int) -> int:
    return _typed(_F32, *args)


def cublasDgemmStridedBatched(*args: int) -> int:
    return _typed(_F64, *args)


def ex_types(atype: int, btype: int, ctype: int, compute_type: int) -> np.dtype:
    """The compute precision of a GemmEx call, or CUBLAS_STATUS_NOT_SUPPORTED for a
    combination of types this library does not run (cuBLAS answers the same for one it
    does not support)."""
    compute = _COMPUTE.get(compute_type)
    types = (atype, btype, ctype)
    if compute is None or types not in _ALLOWED[compute] or \
            compute_type in _FP32_DATA_ONLY and types != (0, 0, 0):
        names = "/".join(_NAMES.get(t, str(t)) for t in types)
        raise CublasError(NOT_SUPPORTED, f"GemmEx with A/B/C types {names} and "
                                         f"cublasComputeType_t {compute_type} is not "
                                         "supported (ptxport runs 32F and 64F compute types "
                                         "with 32F, 64F, 16F and 16BF data)")
    return compute


def cublasGemmEx(handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int,
                 a: int, atype: int, lda: int, b: int, btype: int, ldb: int, beta: int,
                 c: int, ctype: int, ldc: int, compute_type: int, algo: int) -> int:
    return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, a, atype, lda,
                                      0, b, btype, ldb, 0, beta, c, ctype, ldc, 0, 1,
                                      compute_type, algo)


def cublasGemmStridedBatchedEx(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                               alpha: int, a: int, atype: int, lda: int, sa: int, b: int,
                               btype: int, ldb: int, sb: int, beta: int, c: int, ctype: int,
                               ldc: int, sc: int, batch: int, compute_type: int,
                               algo: int) -> int:
    # `algo` picks among GPU kernels; every value names the same computation here.
    handle_of(handle)
    compute = ex_types(atype, btype, ctype, compute_type)
    return gemm(handle, transa, transb, m, n, k, alpha, Operand(a, DATA_TYPES[atype], lda, sa),
                Operand(b, DATA_TYPES[btype], ldb, sb), beta,
                Operand(c, DATA_TYPES[ctype], ldc, sc), batch, compute)
