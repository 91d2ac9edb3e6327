"""Programs calling cuBLAS (linked against ptxport's own libcublas.so.13 and built with its
cublas_v2.h, so NVIDIA's cuBLAS is never needed) under `ptxport run --device cpu`; each
checks its results against a host reference and prints one line per case."""

from __future__ import annotations

from pathlib import Path

import pytest

import ptxport.compat
from ptxport.compat.build import shim_directory

INCLUDE = Path(ptxport.compat.__file__).parent / "native" / "include"


@pytest.fixture(scope="session")
def build_cublas(build):
    """build_cublas(name) -> tests/compat/programs/NAME.cu built with -lcublasLt -lcublas."""

    def build_program(name: str) -> Path:
        return build(name, f"-I{INCLUDE}", f"-L{shim_directory()}", "-lcublasLt", "-lcublas")

    return build_program


def test_gemms_against_a_host_reference(build_cublas, ptxport_run):
    result = ptxport_run(build_cublas("cublas_gemm"))
    assert result.returncode == 0, result.stderr
    ops = [a + b for a in "NTC" for b in "NTC"]
    assert result.stdout.splitlines() == [
        "create: CUBLAS_STATUS_SUCCESS", *(f"sgemm {op}: PASS" for op in ops),
        "beta 0 over NaN: PASS", "k 0 scales C: PASS", "strided batched: PASS",
        "gemmex half: PASS", "gemmex bf16: PASS", "stream order: PASS",
        # cuBLAS's own report of the illegal argument (its xerbla line), then the status
        " ** On entry to SGEMM  parameter number 8 had an illegal value",
        "lda < m: CUBLAS_STATUS_INVALID_VALUE", "bad type: CUBLAS_STATUS_NOT_SUPPORTED",
        "destroy: CUBLAS_STATUS_SUCCESS"], \
        result.stderr
    assert "lda = 4 is less than the 8 rows" in result.stderr
    assert "CUDA_R_8I" in result.stderr


_LEVEL1_OUTPUT = [
    "version: CUBLAS_STATUS_SUCCESS 1", "modes: 3 0", "dot: CUBLAS_STATUS_SUCCESS PASS",
    "nrm2: PASS", "axpy: wrong 0", "device mode 1: scal+dot PASS",
    "swap: CUBLAS_STATUS_NOT_SUPPORTED", "swap again: CUBLAS_STATUS_NOT_SUPPORTED",
    "string: an invalid numeric value was used as an argument",
    "bad mode: CUBLAS_STATUS_INVALID_VALUE", "destroy: CUBLAS_STATUS_SUCCESS"]


def test_level1_modes_and_unsupported_calls(build_cublas, ptxport_run):
    result = ptxport_run(build_cublas("cublas_level1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == _LEVEL1_OUTPUT, result.stderr
    assert result.stderr.count("cublasSswap_v2 is not supported yet") == 1, result.stderr


def test_cublaslt_matmul_with_bias_epilogue(build_cublas, ptxport_run):
    result = ptxport_run(build_cublas("cublaslt_matmul"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "create: 0", "heuristic: 0 found 1 state 0", "matmul bias: 0 PASS",
        "drelu: CUBLAS_STATUS_NOT_SUPPORTED", "destroy: 0"], result.stderr
    assert "epilogue DRELU (136) is not supported" in result.stderr


def test_level1_on_opencl_runs_kernels(build_cublas, ptxport_run):
    from ptxport.runtime import backends

    ok, why = backends.availability("opencl")
    if not ok:
        pytest.skip(f"no OpenCL device: {why}")
    result = ptxport_run(build_cublas("cublas_level1"), device="opencl:0")
    # the same results as on the cpu device, host and device pointer modes, from the kernels
    # of ptxport/blas/kernels/routines.cu
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == _LEVEL1_OUTPUT, result.stderr
