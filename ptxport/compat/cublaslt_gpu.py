"""cublasLtMatmul on GPU devices (cuda, hip, opencl): the product by ptxport's portable GEMM
into an FP32 workspace, then kernels/routines.cu's epilogue kernel on the same stream, which
applies alpha and beta C (scalars from host or device memory), the bias, ReLU or GELU (the
tanh form, as cublaslt_epilogue.gelu computes it), stores GELU's input in the auxiliary matrix
or multiplies by GELU's derivative at it, sums DGELU_BGRAD's bias gradient, and rounds once
into D's type; BGRADA/BGRADB's sums of op(A)'s rows or op(B)'s columns are a third kernel.

Row-major (CUBLASLT_ORDER_ROW) A and B are the column-major transposes the GEMM reads with
its transpose flag flipped; C, D and their batches are addressed by the epilogue kernel as
laid out. FP32 compute only (f32/f16/bf16 data); FP64 and integer matmuls are refused here
by name.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ptxport.blas import routines
from ptxport.compat import streams
from ptxport.compat.cublas import NOT_SUPPORTED, CublasError
from ptxport.compat.cublas_gemm import Operand, Product
from ptxport.compat.cublaslt_epilogue import BGRADA, BGRADB, EPILOGUES, EpilogueSpec
from ptxport.compat.state import state

__all__ = ["matmul", "scalar_args"]

_F32 = np.dtype(np.float32)
_i32, _i64, _f32 = np.int32, np.int64, np.float32


def _kind(dtype: np.dtype, what: str) -> np.int32:
    if dtype.name not in routines.KINDS:
        raise CublasError(NOT_SUPPORTED, f"on {state.device} cuBLASLt runs f32, f16 and bf16 "
                                         f"data with FP32 compute, not {what} of {dtype.name}")
    return _i32(routines.KINDS[dtype.name])


def scalar_args(on_device: bool, address: int, what: str) -> tuple[np.float32, np.uint64]:
    """(value, pointer) of an FP32 alpha or beta: read now from host memory, or a device
    pointer the kernel reads in stream order."""
    if not address:
        from ptxport.compat.cublas import INVALID_VALUE
        raise CublasError(INVALID_VALUE, f"{what} is NULL")
    if on_device:
        return _f32(0), np.uint64(address)
    return _f32(ctypes.c_float.from_address(address).value), np.uint64(0)


def _gpu_stream(handle: int):
    stream = streams.ordered(handle)
    if isinstance(stream, streams.Capture):
        raise CublasError(NOT_SUPPORTED, f"cuBLAS work on {state.device} cannot be captured "
                                         "into a graph yet")
    return stream


def _layout(op: Operand) -> tuple:
    return (np.uint64(op.address), _kind(op.dtype, "a matrix"), _i64(op.ld), _i64(op.stride),
            _i32(op.row_major))


def matmul(stream_handle: int, product: Product, alpha: tuple, beta: tuple, c: Operand,
           d: Operand, spec: EpilogueSpec | None) -> None:
    """Queue D = epilogue(alpha op(A) op(B) + beta C) on the GPU device; alpha and beta are
    scalar_args pairs; `spec` None is DEFAULT."""
    from ptxport.blas import _Gemm, portable

    a, b, (m, n, k, batch) = product.a, product.b, (product.m, product.n, product.k,
                                                     product.batch)
    if product.compute != _F32 or a.dtype != b.dtype:
        raise CublasError(NOT_SUPPORTED, f"on {state.device} cuBLASLt runs FP32 compute with A "
                                         "and B of one type (f32, f16 or bf16), not "
                                         f"{a.dtype.name}/{b.dtype.name} computed in "
                                         f"{product.compute.name}")
    for op, what in ((a, "A"), (c, "C"), (d, "D")):
        _kind(op.dtype, what)
    stream = _gpu_stream(stream_handle)
    if m == 0 or n == 0 or batch == 0:
        return
    ta, tb = bool(product.transa) ^ a.row_major, bool(product.transb) ^ b.row_major
    work = stream.device.allocate(4 * m * n * batch, stream=stream)
    if k == 0:
        work.fill(0, 4, stream=stream)
    else:
        problem = _Gemm(ta, tb, m, n, k, (a.ld, b.ld, m), (a.stride, b.stride, m * n), batch)
        portable.gemm(stream, problem, np.uint64(a.address), np.uint64(b.address), work,
                      a.dtype, _F32, 1.0, 0.0)
    _epilogue(stream, product, work, alpha, beta, c, d, spec)
    if spec is not None and spec.epilogue in (BGRADA, BGRADB):
        _input_sums(stream, product, spec, ta, tb)
    work.close(stream=stream)


def _epilogue(stream, product: Product, work, alpha: tuple, beta: tuple, c: Operand,
              d: Operand, spec: EpilogueSpec | None) -> None:
    m, n, batch = product.m, product.n, product.batch
    kind = 1 if spec is None else spec.epilogue
    bias = aux = (np.uint64(0), _i32(0), _i64(0))
    if spec is not None and spec.bias:
        bias = (np.uint64(spec.bias), _kind(spec.bias_type, "the bias"), _i64(spec.bias_stride))
    if spec is not None and spec.aux:
        aux = (np.uint64(spec.aux), _kind(spec.aux_type, "the auxiliary matrix"),
               _i64(spec.aux_ld), _i64(spec.aux_stride))
    else:
        aux = (*aux, _i64(0))
    grid = (-(-m // routines.BLOCK), batch)
    routines.run(stream, "lt_epilogue", grid, routines.BLOCK, _i32(m), _i32(n), work,
                 *alpha, *beta, *_layout(c), *_layout(d), _i32(kind), *bias, *aux)


def _input_sums(stream, product: Product, spec: EpilogueSpec, ta: bool, tb: bool) -> None:
    """BGRADA: bias[i] = sum_p op(A)(i, p); BGRADB: bias[j] = sum_p op(B)(p, j)."""
    if spec.epilogue == BGRADA:
        op, rows, transposed = product.a, product.m, ta
        rs, ps = (op.ld, 1) if transposed else (1, op.ld)
    else:
        op, rows, transposed = product.b, product.n, tb
        rs, ps = (1, op.ld) if transposed else (op.ld, 1)
    grid = (-(-rows // routines.BLOCK), product.batch)
    routines.run(stream, "lt_sums", grid, routines.BLOCK, _i32(rows), _i32(product.k),
                 np.uint64(op.address), _kind(op.dtype, EPILOGUES[spec.epilogue]), _i64(rs),
                 _i64(ps), _i64(op.stride), np.uint64(spec.bias),
                 _kind(spec.bias_type, "the bias"), _i64(spec.bias_stride))
