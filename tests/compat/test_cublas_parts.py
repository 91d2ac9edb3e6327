"""Parts of the cuBLAS libraries that need no CUDA program: the generated entry points, the
argument checks of the GEMMs, and bfloat16 rounding."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ptxport.blas.host import _to_bf16
from ptxport.compat import (
    build,
    cublas,
    cublas_gemm,
    cublas_helpers,
    cublas_level2,
    cublas_signatures,
)
from ptxport.compat.cublas import (
    EXECUTION_FAILED,
    INVALID_VALUE,
    MAPPING_ERROR,
    NOT_SUPPORTED,
    SUCCESS,
    CublasError,
)
from ptxport.compat.cublas_gemm import Numbering, _check, ex_types, to_float

_F32 = np.dtype(np.float32)


def test_every_cublas_name_is_exported_once():
    libraries = {library.names[0]: library for library in build.LIBRARIES}
    for library, names in ((libraries["libcublas.so.13"], cublas_signatures.ENTRY_POINTS),
                           (libraries["libcublasLt.so.13"], cublas_signatures.LT_ENTRY_POINTS)):
        source = build.entry_points_source(library)
        exported = {line.split("(")[0].split()[-1] for line in source.splitlines()
                    if line.startswith("EXPORT")}
        assert {sig.name for sig in names} <= exported
        assert set(library.stub_names) <= exported
        assert len(exported) == len(names) + len(library.stub_names)
    # GemmStridedBatchedEx has 23 parameters: every one reaches the handler
    body = build.entry_points_source(libraries["libcublas.so.13"]).split(
        "cublasGemmStridedBatchedEx(")[1].split("\n}\n")[0]
    assert ", 23, args," in body


@pytest.mark.parametrize("args, message, position", [
    ((0, 0, -1, 4, 4), "negative size: m", 3),
    ((0, 0, 4, 4, -2), "negative size: k", 5),
    ((0, 0, 4, 4, 4, 3), "lda = 3 is less than the 4 rows", 8),
    ((1, 0, 4, 4, 6, 5), "lda = 5 is less than the 6 rows", 8),    # A is k x m when transposed
    ((0, 1, 4, 4, 4, 4, 3), "ldb = 3 is less than the 4 rows", 10),  # B is n x k when transposed
    ((0, 0, 4, 4, 4, 4, 4, 3), "ldc = 3 is less than the 4 rows", 13),
    ((3, 0, 4, 4, 4), "transa = 3", 1),
    ((0, 0, 4, 4, 4, 8, 8, 8, -1), "negative batch count", 14),
])
def test_gemm_argument_checks(args, message, position):
    """Each illegal argument is INVALID_VALUE with the xerbla report cuBLAS prints (numbered
    as NVIDIA's cuBLAS 13 numbered SGEMM's and SgemmStridedBatched's on the H100)."""
    transa, transb, m, n, k, lda, ldb, ldc, batch = (*args, 8, 8, 8, 1)[:9]
    numbering = Numbering.typed("SgemmStridedBatched", batched=True)
    with pytest.raises(CublasError, match=message) as error:
        _check(transa, transb, m, n, k, (lda, ldb, ldc), batch, numbering)
    assert error.value.status == INVALID_VALUE
    assert error.value.xerbla == ("SgemmStridedBatched", position)


def test_gemm_ex_numbers_count_the_data_types():
    """cublasGemmEx's lda is its 9th parameter (Atype is the 8th), ldb the 12th, ldc the 16th."""
    for ld, position in (((3, 8, 8), 9), ((8, 3, 8), 12), ((8, 8, 3), 16)):
        with pytest.raises(CublasError) as error:
            _check(0, 0, 4, 4, 4, ld, 1, Numbering.ex())
        assert error.value.xerbla == ("GEMM_EX ", position)


@pytest.fixture
def handle():
    out = ctypes.c_void_p()
    assert cublas.cublasCreate_v2(ctypes.addressof(out)) == 0
    yield out.value
    cublas.cublasDestroy_v2(out.value)


_ONE = ctypes.c_float(1)


def _strided_ex(handle, m=2, n=2, k=2, lds=(2, 2, 2), types=(0, 0, 0, 68), batch=2):
    """cublasGemmStridedBatchedEx on NULL matrices: only argument checks can answer."""
    alpha = ctypes.addressof(_ONE)
    (lda, ldb, ldc), (atype, btype, ctype, compute) = lds, types
    return cublas_gemm.cublasGemmStridedBatchedEx(
        handle, 0, 0, m, n, k, alpha, 0, atype, lda, 4, 0, btype, ldb, 4, alpha, 0, ctype, ldc,
        4, batch, compute, 0)


def _batched_ex(handle, k=2, lds=(2, 2, 2), types=(0, 0, 0, 68), batch=1):
    alpha = ctypes.addressof(_ONE)
    (lda, ldb, ldc), (atype, btype, ctype, compute) = lds, types
    return cublas_gemm.cublasGemmBatchedEx(handle, 0, 0, 2, 2, k, alpha, 0, atype, lda, 0,
                                           btype, ldb, alpha, 0, ctype, ldc, batch, compute, 0)


@pytest.mark.parametrize("call, status, xerbla", [
    # the batched Ex forms report under GemmEx's name; the strided one counts its strides
    # (lda 9, ldb 13, ldc 18), the pointer-array one does not (H100, cuBLAS 13)
    (lambda h: _strided_ex(h, m=8, lds=(4, 8, 8)), INVALID_VALUE, ("GEMM_EX ", 9)),
    (lambda h: _strided_ex(h, k=8, lds=(8, 4, 8)), INVALID_VALUE, ("GEMM_EX ", 13)),
    (lambda h: _strided_ex(h, m=8, lds=(8, 8, 4)), INVALID_VALUE, ("GEMM_EX ", 18)),
    (lambda h: _batched_ex(h, k=8, lds=(2, 4, 2)), INVALID_VALUE, ("GEMM_EX ", 12)),
    # a negative batch count: EXECUTION_FAILED and no xerbla line, after the other arguments
    (lambda h: _strided_ex(h, batch=-1), EXECUTION_FAILED, None),
    (lambda h: _batched_ex(h, batch=-1), EXECUTION_FAILED, None),
    (lambda h: _strided_ex(h, m=8, lds=(4, 8, 8), batch=-1), INVALID_VALUE, ("GEMM_EX ", 9)),
    # leading dimensions before data types; data types before the batch count
    (lambda h: _strided_ex(h, m=8, lds=(4, 8, 8), types=(3, 3, 3, 72)), INVALID_VALUE,
     ("GEMM_EX ", 9)),
    (lambda h: _strided_ex(h, types=(3, 3, 3, 72), batch=-1), NOT_SUPPORTED, None),
    (lambda h: _batched_ex(h, types=(3, 3, 3, 72)), NOT_SUPPORTED, None),
])
def test_batched_ex_forms_answer_as_nvidia_cublas_13(handle, call, status, xerbla):
    with pytest.raises(CublasError) as error:
        call(handle)
    assert error.value.status == status
    assert error.value.xerbla == xerbla


def test_gemm_ex_type_combinations():
    assert ex_types(2, 2, 0, 68) == (_F32, _F32)    # f16 inputs, f32 output, 32F compute
    assert ex_types(0, 0, 0, 77) == (_F32, _F32)    # FAST_TF32 computed in FP32
    # int8 inputs, int32 output: alpha and beta are int32, the sums exact in int64
    assert ex_types(3, 3, 10, 72) == (np.dtype(np.int32), np.dtype(np.int64))
    # 16F: alpha and beta are half, computed in FP32
    assert ex_types(2, 2, 2, 64) == (np.dtype(np.float16), _F32)
    for combination in ((2, 2, 0, 77), (0, 0, 0, 64), (1, 1, 1, 68), (3, 3, 0, 72),
                        (3, 3, 10, 68)):
        with pytest.raises(CublasError) as error:
            ex_types(*combination)
        assert error.value.status == NOT_SUPPORTED


def test_bfloat16_rounds_to_nearest_even():
    values = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -9), 65504.0, np.inf,
                       np.nan, 3.0e38], np.float32)
    bits = _to_bf16(values)
    back = to_float(bits, _F32)
    assert back[0] == 1.0                      # a tie goes to the even neighbour
    assert back[1] == 1 + 2 ** -6              # a tie goes to the even neighbour, upward
    assert back[2] == -1.0
    assert back[3] == 65536.0
    assert back[4] == np.inf and np.isnan(back[5])
    assert abs(back[6] / np.float32(3.0e38) - 1) <= 2 ** -8


@pytest.mark.parametrize("call, status", [
    (lambda: cublas_helpers.cublasSetVector(4, 4, 8, 0, 8, 1), INVALID_VALUE),    # incx 0
    (lambda: cublas_helpers.cublasGetVector(4, 0, 8, 1, 8, 1), INVALID_VALUE),    # elemSize 0
    (lambda: cublas_helpers.cublasSetMatrix(4, 4, 4, 8, 0, 8, 4), INVALID_VALUE),  # lda 0
    (lambda: cublas_helpers.cublasGetMatrix(-1, 4, 4, 8, 4, 8, 4), INVALID_VALUE),
    (lambda: cublas_helpers.cublasSetMatrix(8, 4, 4, 8, 4, 8, 8), MAPPING_ERROR),  # rows > lda
    (lambda: cublas_helpers.cublasSetVector(4, 4, 0, 1, 8, 1), MAPPING_ERROR),     # NULL x
])
def test_set_and_get_helpers_refuse_as_cublas_documents(call, status):
    with pytest.raises(CublasError) as error:
        call()
    assert error.value.status == status


def test_set_and_get_helpers_with_nothing_to_copy_succeed():
    assert cublas_helpers.cublasSetVector(0, 4, 0, 1, 0, 1) == 0
    assert cublas_helpers.cublasGetMatrix(0, 3, 4, 0, 1, 0, 1) == 0


@pytest.mark.parametrize("trans, m, incy", [(0, -1, 1), (7, 4, 1), (0, 4, 0)])
def test_gemv_keeps_the_documented_invalid_value(handle, trans, m, incy):
    """m < 0, a trans that is no cublasOperation_t and incy = 0 are INVALID_VALUE as cuBLAS
    documents (NVIDIA's cuBLAS 13 returned SUCCESS on the H100: a deliberate difference that
    docs/compat.md lists and the stderr line names), without a xerbla line."""
    alpha = ctypes.addressof(_ONE)
    with pytest.raises(CublasError) as error:
        cublas_level2.gemv(_F32, handle, trans, m, 4, alpha, 0, 4, 0, 1, alpha, 0, incy)
    assert error.value.status == INVALID_VALUE
    assert error.value.xerbla is None
    assert "NVIDIA's cuBLAS 13 returns CUBLAS_STATUS_SUCCESS" in str(error.value)


def test_an_empty_ex_product_with_a_negative_count_succeeds(handle):
    """NVIDIA's cuBLAS 13 returns CUBLAS_STATUS_SUCCESS for GemmStridedBatchedEx with m = 0
    and a negative batch count (seen on the H100): the empty product comes first."""
    assert _strided_ex(handle, m=0, batch=-1) == SUCCESS
