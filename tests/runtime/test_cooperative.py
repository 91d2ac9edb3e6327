"""Cooperative launches (LaunchConfig(is_cooperative=True)): on the cpu device every block has
a worker of its own, so blocks meet at cooperative groups' grid.sync() (which finds its
barrier in the grid workspace the launch passes in %envreg1:%envreg2, as NVIDIA's driver
does); a grid larger than the blocks that run at once is refused as CUDA refuses it, and
grid.sync() in a plain launch traps (CUDA's code checks for the workspace)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import (
    CooperativeLaunchTooLargeError,
    KernelTrapError,
    UnsupportedFeatureError,
)
from ptxport.runtime.backends import availability
from ptxport.runtime.backends.cpu import executor as cpu_executor

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// out[i] = the sum of in[] over the whole grid, after `rounds` grid-wide steps in which each
// element becomes the sum of itself and its right neighbour (in a buffer read after a sync)
extern "C" __global__ void neighbour_sums(float *a, float *b, int n, int rounds)
{
    cg::grid_group grid = cg::this_grid();
    for (int r = 0; r < rounds; ++r) {
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            b[i] = a[i] + (i + 1 < n ? a[i + 1] : 0.0f);
        grid.sync();
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            a[i] = b[i];
        grid.sync();
    }
}
"""


@pytest.fixture(scope="module")
def kernel():
    return Program(SOURCE, code_type="c++").compile("native").get_kernel("neighbour_sums")


@pytest.fixture
def workers():
    yield cpu_executor.set_workers
    cpu_executor.set_workers(None)


def _expected(a: np.ndarray, rounds: int) -> np.ndarray:
    a = a.astype(np.float64)
    for _ in range(rounds):
        a = a + np.append(a[1:], 0.0)
    return a


def _run(dev, kernel, grid: int, a: np.ndarray, rounds: int, cooperative: bool = True):
    stream = dev.create_stream()
    buffer_a, buffer_b = dev.allocate(a.nbytes, stream=stream), dev.allocate(a.nbytes,
                                                                             stream=stream)
    buffer_a.copy_from(a, stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=128, is_cooperative=cooperative, timeout=60),
           kernel, buffer_a, buffer_b, np.int32(a.size), np.int32(rounds))
    out = np.empty_like(a)
    buffer_a.copy_to(out, stream=stream)
    stream.sync()
    return out


@pytest.mark.parametrize("count", [1, 2, 4])
def test_blocks_meet_at_grid_sync(kernel, workers, count):
    workers(count)
    dev = Device("cpu")
    a = np.random.default_rng(count).integers(0, 8, 3000).astype(np.float32)
    out = _run(dev, kernel, count, a, rounds=5)
    np.testing.assert_array_equal(out, _expected(a, 5).astype(np.float32))


def test_the_occupancy_api_and_the_limit_agree(kernel, workers):
    # (one resident block per multiprocessor: what cudaOccupancyMaxActiveBlocksPerMultiprocessor
    # reports for the cpu device, so a program sizing its grid by it is accepted)
    workers(2)
    dev = Device("cpu")
    assert dev.properties.cooperative_launch
    assert dev.properties.max_blocks_per_multiprocessor == 1
    a = np.ones(256, np.float32)
    with pytest.raises(CooperativeLaunchTooLargeError, match="at most 2 blocks"):
        _run(dev, kernel, 3, a, rounds=1)


def test_grid_sync_outside_a_cooperative_launch_traps(kernel, workers):
    workers(2)
    dev = Device("cpu")
    with pytest.raises(KernelTrapError):
        _run(dev, kernel, 2, np.ones(256, np.float32), rounds=1, cooperative=False)
    # and the device goes on
    out = _run(dev, kernel, 2, np.ones(256, np.float32), rounds=1)
    assert out[0] == 2.0 and out[-1] == 1.0


@pytest.mark.skipif(not availability("opencl")[0], reason="no OpenCL device here")
def test_a_device_without_cooperative_launches_refuses_them(kernel):
    dev = Device("opencl:0")
    stream = dev.create_stream()
    buffer = dev.allocate(1024, stream=stream)
    with pytest.raises(UnsupportedFeatureError, match="makes no cooperative launches"):
        launch(stream, LaunchConfig(grid=1, block=128, is_cooperative=True), kernel,
               buffer, buffer, np.int32(0), np.int32(0))
