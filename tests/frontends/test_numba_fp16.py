"""numba-cuda's half precision (float16 arithmetic, `cuda.fp16.*`, `math` on float16) through
ptxport.frontends.numba on the cpu device and opencl:0: numba lowers each operation to a
call of a CUDA C++ shim (its Numbast bindings of cuda_fp16.h), whose source ptxport
compiles and links as numba's linker does (numba_link.shims_ptx); checked against numpy."""

import math

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install "
                                         "'ptxport[numba]')")

from numba import cuda
from numba.cuda.bf16 import bfloat162float, float2bfloat16, hfma

from ptxport import Device
from ptxport.frontends import numba as pnb
from ptxport.frontends.nvrtc import available as nvrtc_available
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]
pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC compiles numba's shims")


@pnb.jit
def half_ops(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = cuda.fp16.hfma(a[i], b[i], a[i])
        out[i, 1] = a[i] * b[i] + a[i] - b[i]
        out[i, 2] = cuda.fp16.hmax(a[i], b[i])
        out[i, 3] = math.sqrt(b[i])


@pytest.mark.parametrize("name", DEVICES)
def test_half_precision_arithmetic(name):
    Device(name).set_current()
    a = np.linspace(-2, 2, 200).astype(np.float16)
    b = np.linspace(0.5, 3, 200).astype(np.float16)
    out = np.zeros((200, 4), np.float16)
    half_ops[2, 128](a, b, out)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    # each fp16 operation rounds to half: compare within half precision's resolution
    expected = np.stack([a32 * b32 + a32, (a * b).astype(np.float32) + a32 - b32,
                         np.maximum(a32, b32), np.sqrt(b32)], axis=1)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2e-3, atol=4e-3)
    np.testing.assert_array_equal(out[:, 2], np.maximum(a, b))


@pnb.jit
def bfloat16_fma(a, out):
    i = cuda.grid(1)
    if i < a.size:
        x = float2bfloat16(a[i])
        out[i] = bfloat162float(hfma(x, x, x))


@pytest.mark.parametrize("name", DEVICES)
def test_bfloat16_through_numbas_bindings(name):
    Device(name).set_current()
    a = np.linspace(-2, 2, 64).astype(np.float32)
    out = np.zeros_like(a)
    bfloat16_fma[1, 64](a, out)
    # bfloat16 keeps 8 significant bits
    np.testing.assert_allclose(out, a * a + a, rtol=1e-2, atol=2e-2)
