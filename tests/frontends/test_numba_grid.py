"""numba-cuda's grid synchronisation (`cuda.cg.this_grid().sync()`) through
ptxport.frontends.numba: numba's calls of cudadevrt (cudaCGGetIntrinsicHandle,
cudaCGSynchronize) are ptxport's own (codegen/cooperative_groups.py), and a kernel calling
them is launched cooperatively, as numba launches it; checked against numpy."""

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install "
                                         "'ptxport[numba]')")

from numba import cuda
from numba import types as numba_types

from ptxport import Device, LaunchConfig, launch
from ptxport.errors import (
    CooperativeLaunchTooLargeError,
    KernelTrapError,
    UnsupportedFeatureError,
)
from ptxport.frontends import numba as pnb
from ptxport.frontends.arrays import staged
from ptxport.runtime.backends import availability
from ptxport.runtime.backends.cpu import executor as cpu_executor

_OPENCL, _WHY = availability("opencl")


@pytest.fixture
def cpu():
    cpu_executor.set_workers(4)
    dev = Device("cpu")
    dev.set_current()
    yield dev
    cpu_executor.set_workers(None)


@pnb.jit
def reverse_then_neighbour_sums(a, b, rounds):
    # phase 1: b = a reversed (each block reads what other blocks' threads own); phase 2:
    # a[i] = b[i] + b[i + 1], `rounds` times, a grid sync between every two steps
    grid = cuda.cg.this_grid()
    start, step, n = cuda.grid(1), cuda.gridsize(1), a.size
    for i in range(start, n, step):
        b[i] = a[n - 1 - i]
    grid.sync()
    for _ in range(rounds):
        for i in range(start, n, step):
            a[i] = b[i] + (b[i + 1] if i + 1 < n else 0)
        grid.sync()
        for i in range(start, n, step):
            b[i] = a[i]
        grid.sync()


def _expected(a: np.ndarray, rounds: int) -> np.ndarray:
    b = a[::-1].astype(np.int64)
    for _ in range(rounds):
        b = b + np.append(b[1:], 0)
    return b


@pytest.mark.parametrize("blocks", [1, 3, 4])
def test_grid_sync_orders_two_phases_over_the_grid(cpu, blocks):
    a = np.random.default_rng(blocks).integers(0, 100, 2000).astype(np.int64)
    expected = _expected(a, 3)
    b = np.zeros_like(a)
    reverse_then_neighbour_sums[blocks, 64](a, b, 3)
    np.testing.assert_array_equal(b, expected)
    np.testing.assert_array_equal(a, expected)


def test_max_cooperative_grid_blocks_is_what_runs_at_once(cpu):
    array = numba_types.Array(numba_types.int64, 1, "C")
    signature = (array, array, numba_types.int64)
    assert reverse_then_neighbour_sums.max_cooperative_grid_blocks(64, signature=signature) == 4
    assert reverse_then_neighbour_sums.max_cooperative_grid_blocks((8, 8), 0, signature) == 4


def test_a_grid_larger_than_the_resident_blocks_is_refused(cpu):
    # numba launches the kernel cooperatively, which CUDA refuses for more blocks than run at
    # once (cudaErrorCooperativeLaunchTooLarge); the cpu device runs one block per worker
    a = np.zeros(64, np.int64)
    with pytest.raises(CooperativeLaunchTooLargeError, match="at most 4 blocks"):
        reverse_then_neighbour_sums[5, 32](a, np.zeros_like(a), 1)


def test_grid_sync_in_a_launch_that_is_not_cooperative_traps(cpu):
    # (numba never makes such a launch; ptxport's Python API can, with the compiled kernel)
    array = numba_types.Array(numba_types.int64, 1, "C")
    kernel = reverse_then_neighbour_sums.compile((array, array, numba_types.int64))
    a, b = np.arange(64), np.zeros(64, np.int64)
    params = pnb._marshal(kernel, [staged(a, cpu, "a"), staged(b, cpu, "b"), 1],
                          [array, array, numba_types.int64])
    stream = cpu.create_stream()
    with pytest.raises(KernelTrapError, match="grid synchronisation in a launch that is not "
                                              "cooperative"):
        launch(stream, LaunchConfig(grid=2, block=32), kernel, *params)
        stream.sync()


@pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")
def test_grid_sync_is_refused_by_name_on_opencl():
    dev = Device("opencl:0")
    dev.set_current()
    a = np.zeros(64, np.int64)
    with pytest.raises(UnsupportedFeatureError, match="grid synchronisation .* kernel "
                                                      "reverse_then_neighbour_sums.*"
                                                      "cooperative launch"):
        reverse_then_neighbour_sums[2, 32](a, np.zeros_like(a), 1)
