"""numba-cuda kernels through ptxport.frontends.numba on the cpu device and opencl:0,
checked against numpy (numba compiles each kernel once per signature, in process)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install "
                                         "'ptxport[numba]')")

from numba import cuda, float32

from ptxport import Device
from ptxport.errors import ArgumentError, InvalidValueError, UnsupportedFeatureError
from ptxport.frontends import numba as pnb
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]


@pytest.fixture(params=DEVICES)
def device(request):
    dev = Device(request.param)
    dev.set_current()
    return dev


@pnb.jit
def scale_grid_stride(x, out, alpha):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        out[i] = alpha * x[i]


@pnb.jit
def block_sums(x, total, partial):
    # a shared-memory tree reduction per block, then one atomic per block
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = tile[0]
        cuda.atomic.add(total, 0, tile[0])


@pnb.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i] % bins.size, 1)


@pnb.jit
def stencil_2d(a, out):
    y, x = cuda.grid(2)
    if 0 < y < a.shape[0] - 1 and 0 < x < a.shape[1] - 1:
        out[y, x] = 0.25 * (a[y - 1, x] + a[y + 1, x] + a[y, x - 1] + a[y, x + 1]) - a[y, x]


@pnb.jit
def dynamic_shared_reverse(x, out):
    buf = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[cuda.blockDim.x - 1 - t]


@pnb.jit
def clamp_with_local_array(x, out):
    # a per-thread local array
    i = cuda.grid(1)
    bounds = cuda.local.array(2, float32)
    bounds[0], bounds[1] = -1, 1
    if i < x.size:
        out[i] = min(max(x[i], bounds[0]), bounds[1])


def test_local_array(device):
    x = np.linspace(-3, 3, 100).astype(np.float32)
    out = np.zeros_like(x)
    clamp_with_local_array[1, 128](x, out)
    np.testing.assert_array_equal(out, np.clip(x, -1, 1))


def test_device_functions_are_refused_with_the_reason():
    with pytest.raises(UnsupportedFeatureError, match="compute capability"):
        @pnb.jit(device=True)
        def helper(v):
            return v


def test_grid_stride_loop(device):
    x = np.arange(10_000, dtype=np.float32)
    out = np.zeros_like(x)
    scale_grid_stride[4, 64](x, out, np.float32(1.5))        # 256 threads, 10000 elements
    np.testing.assert_array_equal(out, np.float32(1.5) * x)


def test_strided_arrays(device):
    """Non-contiguous arrays (numba's "A" layout on the cpu device, in place; copied in and
    back elsewhere): a reversed every-other view in, one column of a 2-D array out."""
    x = np.arange(200, dtype=np.float32)[::-2]
    out = np.zeros((100, 3), np.float32)
    scale_grid_stride[2, 32](x, out[:, 1], np.float32(2))
    np.testing.assert_array_equal(out[:, 1], 2 * x)
    assert not out[:, 0].any() and not out[:, 2].any()


def test_shared_memory_reduction_and_atomics(device):
    rng = np.random.default_rng(0)
    x = rng.random(1000).astype(np.float32)
    total = np.zeros(1, np.float32)
    blocks = 8
    partial = np.zeros(blocks, np.float32)
    block_sums[blocks, 128](x, total, partial)
    padded = np.concatenate([x, np.zeros(blocks * 128 - x.size, np.float32)])
    np.testing.assert_allclose(partial, padded.reshape(blocks, 128).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_integer_atomics_histogram(device):
    values = np.random.default_rng(1).integers(0, 1000, 5000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    histogram[(values.size + 255) // 256, 256](values, bins)
    np.testing.assert_array_equal(bins, np.bincount(values % 16, minlength=16))


def test_2d_stencil_on_device_arrays(device):
    a = np.random.default_rng(2).random((30, 45)).astype(np.float32)
    d_a, d_out = pnb.to_device(a, device), pnb.to_device(np.zeros_like(a), device)
    stencil_2d[(4, 6), (8, 8)](d_a, d_out)
    expected = np.zeros_like(a)
    expected[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]) \
        - a[1:-1, 1:-1]
    np.testing.assert_allclose(d_out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_dynamic_shared_memory(device):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    dynamic_shared_reverse[1, 64, device.default_stream, 64 * 4](x, out)
    np.testing.assert_array_equal(out, x[::-1])


def test_launch_mistakes_are_named():
    with pytest.raises(InvalidValueError, match="kernel\\[grid, block\\]"):
        scale_grid_stride(np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0)
    with pytest.raises(ArgumentError, match="argument 2: cannot pass a str"):
        scale_grid_stride[1, 1](np.zeros(1, np.float32), np.zeros(1, np.float32), "x")


def test_example_numba_saxpy_runs():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(root / "examples" / "numba_saxpy.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "matches numpy" in result.stdout, result.stdout
