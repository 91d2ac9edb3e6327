"""Parts of the cuBLAS libraries that need no CUDA program: the generated entry points, the
argument checks of the GEMMs, and bfloat16 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport.blas.host import _to_bf16
from ptxport.compat import build, cublas_helpers, cublas_signatures
from ptxport.compat.cublas import INVALID_VALUE, MAPPING_ERROR, NOT_SUPPORTED, CublasError
from ptxport.compat.cublas_gemm import Numbering, Operand, _check, ex_types, to_float

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
        _check(transa, transb, m, n, k, Operand(0, _F32, lda), Operand(0, _F32, ldb),
               Operand(0, _F32, ldc), batch, numbering)
    assert error.value.status == INVALID_VALUE
    assert error.value.xerbla == ("SgemmStridedBatched", position)


def test_gemm_ex_numbers_count_the_data_types():
    """cublasGemmEx's lda is its 9th parameter (Atype is the 8th), ldb the 12th, ldc the 16th."""
    for ld, position in (((3, 8, 8), 9), ((8, 3, 8), 12), ((8, 8, 3), 16)):
        with pytest.raises(CublasError) as error:
            _check(0, 0, 4, 4, 4, *(Operand(0, _F32, x) for x in ld), 1,
                   Numbering.ex("GEMM_EX "))
        assert error.value.xerbla == ("GEMM_EX ", position)


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
