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

from ptxport.blas.host import Epilogue, gemm_work, store, to_float
from ptxport.compat import streams
from ptxport.compat.cublas import (
    EXECUTION_FAILED,
    INVALID_VALUE,
    NOT_SUPPORTED,
    POINTER_MODE_DEVICE,
    SUCCESS,
    CublasError,
    device_array,
    handle_of,
    illegal,
    in_stream_order,
    scalar_reader,
)
from ptxport.compat.state import state

__all__ = ["DATA_TYPES", "Epilogue", "Numbering", "Operand", "Product", "ex_types", "gemm",
           "gemm_work", "matrices", "queue", "store", "to_float", "work_of"]

_OPS = {0: False, 1: True, 2: True}   # CUBLAS_OP_N, _T, _C (C is T for real data)
_BF16 = np.dtype("<u2")               # bfloat16 is stored as its 16 bits here

# cudaDataType (library_types.h) -> how its elements are stored
DATA_TYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64), 2: np.dtype(np.float16),
              14: _BF16, 3: np.dtype(np.int8), 10: np.dtype(np.int32)}
_NAMES = {0: "CUDA_R_32F", 1: "CUDA_R_64F", 2: "CUDA_R_16F", 14: "CUDA_R_16BF", 3: "CUDA_R_8I",
          10: "CUDA_R_32I"}
_F16, _I32 = np.dtype(np.float16), np.dtype(np.int32)
# cublasComputeType_t -> (the type of alpha and beta, the precision ptxport computes in).
# 32F_FAST_16F, _16BF and _TF32 allow cuBLAS to round inputs to less precision; computing in
# FP32 is within what they allow. 16F (Hgemm) is computed in FP32 and rounded once to FP16,
# more precise than FP16 accumulation, which the compute type allows but does not require.
# 32I is computed exactly in int64 and wraps to int32 as the GPU's 32-bit sums do.
_COMPUTE = {
    64: (_F16, np.dtype(np.float32)), 65: (_F16, np.dtype(np.float32)),
    68: (np.dtype(np.float32),) * 2, 69: (np.dtype(np.float32),) * 2,
    74: (np.dtype(np.float32),) * 2, 75: (np.dtype(np.float32),) * 2,
    77: (np.dtype(np.float32),) * 2,
    70: (np.dtype(np.float64),) * 2, 71: (np.dtype(np.float64),) * 2,
    72: (_I32, np.dtype(np.int64)), 73: (_I32, np.dtype(np.int64)),
}
# (A, B, C) data types cuBLAS allows with each compute type (cublasGemmEx's table, real
# types); the FAST modes take FP32 data only.
_FP32_ALLOWED = {(0, 0, 0), (2, 2, 2), (14, 14, 14), (2, 2, 0), (14, 14, 0), (3, 3, 0)}
_ALLOWED = {64: {(2, 2, 2)}, 65: {(2, 2, 2)}, 68: _FP32_ALLOWED, 69: _FP32_ALLOWED,
            74: {(0, 0, 0)}, 75: {(0, 0, 0)}, 77: {(0, 0, 0)}, 70: {(1, 1, 1)},
            71: {(1, 1, 1)}, 72: {(3, 3, 10)}, 73: {(3, 3, 10)}}


@dataclass(frozen=True)
class Operand:
    """A matrix argument: its address, element type, leading dimension and batch stride
    (in elements)."""

    address: int
    dtype: np.dtype
    ld: int
    stride: int = 0
    row_major: bool = False   # cuBLASLt's CUBLASLT_ORDER_ROW: (i, j) at i*ld + j


def matrices(op: Operand, rows: int, cols: int, batch: int, what: str) -> np.ndarray:
    """The `batch` stored rows x cols matrices of `op`, transposed: shape (batch, cols, rows),
    a row-major view (row stride ld)."""
    size = op.dtype.itemsize
    if op.row_major:
        count = (batch - 1) * op.stride + (rows - 1) * op.ld + cols
        steps = (op.stride * size, size, op.ld * size)
    else:
        count = (batch - 1) * op.stride + (cols - 1) * op.ld + rows
        steps = (op.stride * size, op.ld * size, size)
    if batch > 1 and op.stride < 0:
        raise CublasError(INVALID_VALUE, f"{what}'s batch stride {op.stride} is negative")
    flat = device_array(op.address, op.dtype, count if rows and cols else 0, what)
    if not rows or not cols:
        return np.empty((batch, cols, rows), op.dtype)
    return np.lib.stride_tricks.as_strided(flat, (batch, cols, rows), steps)


@dataclass(frozen=True)
class Numbering:
    """How cuBLAS reports an illegal argument of one GEMM entry point (its xerbla line): the
    routine's name as cuBLAS prints it and the numbers of lda, ldb, ldc and the batch count
    among its parameters (transa to k are 1 to 5 in every GEMM). cuBLAS counts as reference
    BLAS does: the handle is not a parameter, and neither are the strides of a strided batch
    (SgemmStridedBatched's batchCount is number 14); the data types of the Ex forms are.
    NVIDIA's cuBLAS 13 reports GemmStridedBatchedEx's and GemmBatchedEx's illegal arguments
    as cublasGemmEx's (`GEMM_EX `, its numbers: lda 9, ldb 12), and gives a negative batch
    count of theirs no xerbla line but CUBLAS_STATUS_EXECUTION_FAILED (seen on the H100)."""

    routine: str
    lda: int
    ldb: int
    ldc: int
    batch: int = 0   # 0: no xerbla for the batch count (no batch, or an Ex form)

    @staticmethod
    def typed(routine: str, batched: bool = False) -> Numbering:
        return Numbering(routine, 8, 10, 13, 14 if batched else 0)

    @staticmethod
    def ex(strided: bool = False) -> Numbering:
        """GemmEx and GemmBatchedEx (lda 9, ldb 12, ldc 16); GemmStridedBatchedEx counts its
        strides (ldb 13, ldc 18), though reporting under GemmEx's name (seen on the H100)."""
        return Numbering("GEMM_EX ", 9, 13, 18) if strided else Numbering("GEMM_EX ", 9, 12, 16)


def _check(transa: int, transb: int, m: int, n: int, k: int, lds: tuple[int, int, int],
           batch: int, numbering: Numbering) -> None:
    """cuBLAS's argument checks, in parameter order: CUBLAS_STATUS_INVALID_VALUE and the
    xerbla line naming the first illegal parameter (`lds`: lda, ldb, ldc). A negative batch
    count of an Ex form is CUBLAS_STATUS_EXECUTION_FAILED, without a xerbla line, as NVIDIA's
    cuBLAS 13 answers; the Ex forms check it after their data types (_ex_checks)."""
    _check_arguments(transa, transb, m, n, k, lds, numbering)
    if batch < 0:
        if numbering.batch:
            raise illegal(numbering.routine, numbering.batch, f"negative batch count {batch}")
        raise CublasError(EXECUTION_FAILED, f"negative batch count {batch} (NVIDIA's cuBLAS 13 "
                                            "answers CUBLAS_STATUS_EXECUTION_FAILED)")


def _check_arguments(transa: int, transb: int, m: int, n: int, k: int,
                     lds: tuple[int, int, int], numbering: Numbering) -> None:
    """transa to k and the leading dimensions, in parameter order (the first illegal one)."""
    def fail(position: int, message: str) -> CublasError:
        return illegal(numbering.routine, position, message)

    for position, name, op in ((1, "transa", transa), (2, "transb", transb)):
        if op not in _OPS:
            raise fail(position, f"{name} = {op} is not CUBLAS_OP_N, _T or _C")
    for position, name, size in ((3, "m", m), (4, "n", n), (5, "k", k)):
        if size < 0:
            raise fail(position, f"negative size: {name} = {size}")
    for position, name, ld, rows in (
            (numbering.lda, "lda", lds[0], k if _OPS[transa] else m),
            (numbering.ldb, "ldb", lds[1], n if _OPS[transb] else k),
            (numbering.ldc, "ldc", lds[2], m)):
        if ld < max(1, rows):
            raise fail(position, f"{name} = {ld} is less than the {rows} rows of the matrix "
                                 "as stored")


# What an epilogue does (cublaslt_epilogue.py): given the (batch, n, m) values of
# D^T = alpha op(B)^T op(A)^T + beta C^T in compute precision and the product's views
# (None when k = 0), the values D^T gets; it may write outputs of its own.


def gemm(handle: int, numbering: Numbering, transa: int, transb: int, m: int, n: int, k: int,
         alpha: int, a: Operand, b: Operand, beta: int, c: Operand, batch: int,
         compute: np.dtype, scale: np.dtype | None = None) -> int:
    """Queue C = alpha op(A) op(B) + beta C on the handle's stream, for `batch` matrices
    `stride` elements apart; alpha and beta are `scale` values (default: `compute`)."""
    h = handle_of(handle)
    _check(transa, transb, m, n, k, (a.ld, b.ld, c.ld), batch, numbering)
    on_device = h.pointer_mode == POINTER_MODE_DEVICE
    scale = compute if scale is None else scale
    product = Product(transa, transb, m, n, k, a, b, batch, compute)
    if state.device.backend != "cpu":
        return _on_gpu(h, product, (alpha, beta), scale, c)
    queue(h.stream, product, scalar_reader(on_device, alpha, scale, "alpha"),
          scalar_reader(on_device, beta, scale, "beta"), c, c)
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
        a_t = matrices(self.a, *((k, m) if _OPS[self.transa] else (m, k)), batch, "A")
        b_t = matrices(self.b, *((n, k) if _OPS[self.transb] else (k, n)), batch, "B")
        # op(A)^T is the view (A^T) for N, A itself for T: swap the view's last two axes.
        return (b_t.swapaxes(1, 2) if _OPS[self.transb] else b_t,
                a_t.swapaxes(1, 2) if _OPS[self.transa] else a_t)


def queue(stream: int, product: Product, read_alpha: Callable[[], object],
          read_beta: Callable[[], object], c: Operand, d: Operand,
          epilogue: Epilogue | None = None) -> None:
    """Queue D = epilogue(alpha op(A) op(B) + beta C) on CUstream `stream`; C and D may be
    the same matrices."""
    in_stream_order(stream, work_of(product, read_alpha, read_beta, c, d, epilogue))


def work_of(product: Product, read_alpha: Callable[[], object],
            read_beta: Callable[[], object], c: Operand, d: Operand,
            epilogue: Epilogue | None = None) -> Callable[[], None]:
    """The work of one GEMM call (views of device memory made and checked now)."""
    if product.m == 0 or product.n == 0 or product.batch == 0:
        return lambda: None
    m, n, batch = product.m, product.n, product.batch
    d_t = matrices(d, m, n, batch, "D" if d is not c else "C")
    c_t = d_t if c is d else matrices(c, m, n, batch, "C")
    return gemm_work(d_t, c_t, product.views(), read_alpha, read_beta, product.compute,
                     epilogue)


def _on_gpu(h, product: Product, scalars: tuple[int, int], scale: np.dtype,
            c: Operand) -> int:
    """Queue the GEMM on a GPU device with ptxport's portable GEMM kernels. Host pointer
    mode: alpha and beta are read now and passed to the GEMM kernel. Device pointer mode
    (FP32 scalars): the product goes to a workspace and cublaslt_gpu's epilogue kernel reads
    alpha and beta in stream order as it stores C."""
    from ptxport.blas import _Gemm, portable
    from ptxport.compat import cublaslt_gpu

    a, b = product.a, product.b
    if a.dtype != b.dtype:
        raise CublasError(NOT_SUPPORTED, f"on {state.device} the portable GEMM runs f32, f64, "
                                         "f16, bf16 and int8 data (A and B of one type), not "
                                         f"{a.dtype.name}/{b.dtype.name}")
    if h.pointer_mode == POINTER_MODE_DEVICE:
        if scale != np.float32:
            raise CublasError(NOT_SUPPORTED, f"on {state.device} device pointer mode GEMMs take "
                                             f"FP32 alpha and beta, not {scale.name}")
        alpha, beta = (cublaslt_gpu.scalar_args(True, p, w) for p, w in
                       zip(scalars, ("alpha", "beta"), strict=True))
        cublaslt_gpu.matmul(h.stream, product, alpha, beta, c, c, None)
        return SUCCESS
    number = int if scale.kind == "i" else float
    alpha, beta = (number(scalar_reader(False, p, scale, w)()) for p, w in
                   zip(scalars, ("alpha", "beta"), strict=True))
    if product.m == 0 or product.n == 0 or product.batch == 0:
        return SUCCESS
    stream = streams.ordered(h.stream)
    if isinstance(stream, streams.Capture):
        raise CublasError(NOT_SUPPORTED, "GEMMs on GPU devices cannot be captured into a graph "
                                         "yet")
    problem = _Gemm(_OPS[product.transa], _OPS[product.transb], product.m, product.n,
                    product.k, (a.ld, b.ld, c.ld), (a.stride, b.stride, c.stride),
                    product.batch)
    portable.gemm(stream, problem, np.uint64(a.address), np.uint64(b.address),
                  np.uint64(c.address), a.dtype, c.dtype, alpha, beta)
    return SUCCESS


def _pointers_on_gpu(h, job: _PointerBatch, scalars: tuple[int, int], scale: np.dtype) -> int:
    """A batch given as device arrays of pointers on a GPU device: the arrays are read once
    the stream reaches the call (the call waits for that), then one GEMM per matrix."""
    tables = np.zeros((3, job.batch), np.uint64)
    backend = state.device._backend
    for row, address in zip(tables, job.arrays, strict=True):
        if not address:
            raise CublasError(INVALID_VALUE, "an array of matrix pointers is NULL")
        streams.enqueue(h.stream, lambda r=row, p=address: backend.copy(
            r.ctypes.data, p, r.nbytes, "dtoh"), sync=True)
    for i in range(job.batch):
        a, b, c = (Operand(int(table[i]), dtype, ld) for table, dtype, ld in
                   zip(tables, job.types, job.lds, strict=True))
        _on_gpu(h, Product(job.transa, job.transb, job.m, job.n, job.k, a, b, 1, job.compute),
                scalars, scale, c)
    return SUCCESS


# -- entry points -----------------------------------------------------------------------------

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _typed(dtype: np.dtype, numbering: Numbering, handle: int, transa: int, transb: int,
           m: int, n: int, k: int, alpha: int, a: int, lda: int, sa: int, b: int, ldb: int,
           sb: int, beta: int, c: int, ldc: int, sc: int, batch: int) -> int:
    return gemm(handle, numbering, transa, transb, m, n, k, alpha, Operand(a, dtype, lda, sa),
                Operand(b, dtype, ldb, sb), beta, Operand(c, dtype, ldc, sc), batch, dtype)


def cublasSgemm_v2(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                   alpha: int, a: int, lda: int, b: int, ldb: int, beta: int, c: int,
                   ldc: int) -> int:
    return _typed(_F32, Numbering.typed("SGEMM "), handle, transa, transb, m, n, k, alpha, a,
                  lda, 0, b, ldb, 0, beta, c, ldc, 0, 1)


def cublasDgemm_v2(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                   alpha: int, a: int, lda: int, b: int, ldb: int, beta: int, c: int,
                   ldc: int) -> int:
    return _typed(_F64, Numbering.typed("DGEMM "), handle, transa, transb, m, n, k, alpha, a,
                  lda, 0, b, ldb, 0, beta, c, ldc, 0, 1)


def cublasSgemmStridedBatched(*args: int) -> int:
    return _typed(_F32, Numbering.typed("SgemmStridedBatched", batched=True), *args)


def cublasDgemmStridedBatched(*args: int) -> int:
    return _typed(_F64, Numbering.typed("DgemmStridedBatched", batched=True), *args)


def _half(numbering: Numbering, handle: int, transa: int, transb: int, m: int, n: int, k: int,
          alpha: int, a: int, lda: int, sa: int, b: int, ldb: int, sb: int, beta: int, c: int,
          ldc: int, sc: int, batch: int) -> int:
    scale, compute = _COMPUTE[64]
    return gemm(handle, numbering, transa, transb, m, n, k, alpha, Operand(a, _F16, lda, sa),
                Operand(b, _F16, ldb, sb), beta, Operand(c, _F16, ldc, sc), batch, compute,
                scale)


def cublasHgemm(handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int,
                a: int, lda: int, b: int, ldb: int, beta: int, c: int, ldc: int) -> int:
    return _half(Numbering.typed("HGEMM "), handle, transa, transb, m, n, k, alpha, a, lda, 0,
                 b, ldb, 0, beta, c, ldc, 0, 1)


def cublasHgemmStridedBatched(*args: int) -> int:
    return _half(Numbering.typed("HgemmStridedBatched", batched=True), *args)


def ex_types(atype: int, btype: int, ctype: int, compute_type: int) \
        -> tuple[np.dtype, np.dtype]:
    """(the type of alpha and beta, the compute precision) of a GemmEx call, or
    CUBLAS_STATUS_NOT_SUPPORTED for a combination of types cuBLAS does not allow (cuBLAS
    answers the same)."""
    types = (atype, btype, ctype)
    if types not in _ALLOWED.get(compute_type, ()):
        names = "/".join(_NAMES.get(t, str(t)) for t in types)
        raise CublasError(NOT_SUPPORTED, f"GemmEx with A/B/C types {names} and "
                                         f"cublasComputeType_t {compute_type} is not a "
                                         "combination cuBLAS allows (cublasGemmEx's table)")
    return _COMPUTE[compute_type]


def _ex_checks(transa: int, transb: int, m: int, n: int, k: int, lds: tuple[int, int, int],
               types: tuple[int, int, int, int], batch: int,
               numbering: Numbering) -> tuple[np.dtype, np.dtype]:
    """An Ex form's checks in the order NVIDIA's cuBLAS 13 makes them (seen on the H100):
    the arguments first (an int8 GemmEx with lda < m is INVALID_VALUE and GEMM_EX's xerbla
    line, not NOT_SUPPORTED), then the data types, then the batch count, which an empty
    product (m or n 0) never reaches (it returns CUBLAS_STATUS_SUCCESS); ex_types' answer."""
    _check_arguments(transa, transb, m, n, k, lds, numbering)
    scale_and_compute = ex_types(*types)
    if m and n:
        _check(transa, transb, m, n, k, lds, batch, numbering)
    return scale_and_compute


def _ex(handle: int, transa: int, transb: int, m: int, n: int, k: int,
        alpha: int, a: int, atype: int, lda: int, sa: int, b: int, btype: int, ldb: int,
        sb: int, beta: int, c: int, ctype: int, ldc: int, sc: int, batch: int,
        compute_type: int, algo: int, strided: bool = True) -> int:
    # `algo` picks among GPU kernels; every value names the same computation here.
    handle_of(handle)
    numbering = Numbering.ex(strided)
    scale, compute = _ex_checks(transa, transb, m, n, k, (lda, ldb, ldc),
                                (atype, btype, ctype, compute_type), batch, numbering)
    if batch < 0:
        return SUCCESS      # an empty product with a negative count: nothing to do
    return gemm(handle, numbering, transa, transb, m, n, k, alpha,
                Operand(a, DATA_TYPES[atype], lda, sa), Operand(b, DATA_TYPES[btype], ldb, sb),
                beta, Operand(c, DATA_TYPES[ctype], ldc, sc), batch, compute, scale)


def cublasGemmEx(handle: int, transa: int, transb: int, m: int, n: int, k: int, alpha: int,
                 a: int, atype: int, lda: int, b: int, btype: int, ldb: int, beta: int,
                 c: int, ctype: int, ldc: int, compute_type: int, algo: int) -> int:
    return _ex(handle, transa, transb, m, n, k, alpha, a, atype, lda, 0, b, btype, ldb, 0,
               beta, c, ctype, ldc, 0, 1, compute_type, algo, strided=False)


def cublasGemmStridedBatchedEx(*args: int) -> int:
    return _ex(*args)


# -- batches given as arrays of pointers ------------------------------------------------------

@dataclass(frozen=True)
class _PointerBatch:
    """A GEMM over `batch` matrices whose addresses are in device arrays of pointers (read
    when the work runs, in stream order, as the GPU kernel reads them)."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    types: tuple[np.dtype, np.dtype, np.dtype]
    lds: tuple[int, int, int]
    arrays: tuple[int, int, int]
    batch: int
    compute: np.dtype

    def work(self, read_alpha: Callable[[], object],
             read_beta: Callable[[], object]) -> Callable[[], None]:
        tables = [device_array(address, np.dtype(np.uint64), self.batch, f"{name}array")
                  for name, address in zip("ABC", self.arrays, strict=True)]

        def run() -> None:
            for i in range(self.batch):
                a, b, c = (Operand(int(table[i]), dtype, ld) for table, dtype, ld in
                           zip(tables, self.types, self.lds, strict=True))
                product = Product(self.transa, self.transb, self.m, self.n, self.k, a, b, 1,
                                  self.compute)
                work_of(product, read_alpha, read_beta, c, c)()

        return run


def _pointer_batched(numbering: Numbering, handle: int, transa: int, transb: int, m: int,
                     n: int, k: int, alpha: int, arrays: tuple[int, int, int],
                     lds: tuple[int, int, int], beta: int,
                     types: tuple[np.dtype, np.dtype, np.dtype], batch: int,
                     compute: np.dtype, scale: np.dtype) -> int:
    h = handle_of(handle)
    _check(transa, transb, m, n, k, lds, batch, numbering)
    if state.device.backend != "cpu":
        if m == 0 or n == 0 or batch == 0:
            return SUCCESS
        job = _PointerBatch(transa, transb, m, n, k, types, lds, arrays, batch, compute)
        return _pointers_on_gpu(h, job, (alpha, beta), scale)
    on_device = h.pointer_mode == POINTER_MODE_DEVICE
    read_alpha = scalar_reader(on_device, alpha, scale, "alpha")
    read_beta = scalar_reader(on_device, beta, scale, "beta")
    if m == 0 or n == 0 or batch == 0:
        return SUCCESS
    job = _PointerBatch(transa, transb, m, n, k, types, lds, arrays, batch, compute)
    in_stream_order(h.stream, job.work(read_alpha, read_beta))
    return SUCCESS


def cublasGemmBatchedEx(handle: int, transa: int, transb: int, m: int, n: int, k: int,
                        alpha: int, a: int, atype: int, lda: int, b: int, btype: int, ldb: int,
                        beta: int, c: int, ctype: int, ldc: int, batch: int, compute_type: int,
                        algo: int) -> int:
    handle_of(handle)
    scale, compute = _ex_checks(transa, transb, m, n, k, (lda, ldb, ldc),
                                (atype, btype, ctype, compute_type), batch, Numbering.ex())
    if batch < 0:
        return SUCCESS      # an empty product with a negative count: nothing to do
    types = (DATA_TYPES[atype], DATA_TYPES[btype], DATA_TYPES[ctype])
    return _pointer_batched(Numbering.ex(), handle, transa, transb, m, n, k, alpha, (a, b, c),
                            (lda, ldb, ldc), beta, types, batch, compute, scale)


def _typed_batched(dtype: np.dtype, compute_type: int, routine: str, handle: int,
                   transa: int, transb: int, m: int, n: int, k: int, alpha: int, a: int,
                   lda: int, b: int, ldb: int, beta: int, c: int, ldc: int, batch: int) -> int:
    scale, compute = _COMPUTE[compute_type]
    return _pointer_batched(Numbering.typed(routine, batched=True), handle, transa, transb, m,
                            n, k, alpha, (a, b, c), (lda, ldb, ldc), beta, (dtype,) * 3, batch,
                            compute, scale)


def cublasSgemmBatched(*args: int) -> int:
    return _typed_batched(_F32, 68, "SgemmBatched", *args)


def cublasDgemmBatched(*args: int) -> int:
    return _typed_batched(_F64, 70, "DgemmBatched", *args)


def cublasHgemmBatched(*args: int) -> int:
    return _typed_batched(_F16, 64, "HgemmBatched", *args)
