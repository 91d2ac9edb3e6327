"""cudaLimitStackSize on the cpu device through the Python runtime (the cpu backend's
set_stack_size / stack_size, which cudaDeviceSetLimit and cudaDeviceGetLimit reach): where a
kernel's calls recurse, each thread's stack is the limit (1 KiB, CUDA's default, unless
set), and a recursion that does not fit raises IllegalAddressError naming the limit."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError, InvalidValueError
from ptxport.frontends.nvrtc import available as nvrtc_available
from ptxport.runtime.backends import get
from ptxport.runtime.backends.cpu.stack_limit import MAX_STACK_LIMIT

pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed")

# each level keeps a 32-int array on the stack (its address goes to the next level)
SOURCE = r"""
__device__ __noinline__ int sum_levels(volatile int *above, int depth)
{
    volatile int local[32];
    for (int i = 0; i < 32; ++i) local[i] = depth;
    int below = depth > 0 ? sum_levels(local, depth - 1) : 0;
    if (above) above[0] = above[0];
    return local[31] + below;
}
extern "C" __global__ void levels(int *out, int depth)
{
    out[threadIdx.x] = sum_levels(0, depth);
}
"""


@pytest.fixture
def cpu():
    backend = get("cpu")
    yield backend
    backend.set_stack_size(1024)


def _levels(depth: int) -> np.ndarray:
    dev = Device("cpu")
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("levels")
    stream = dev.create_stream()
    out = dev.allocate(4 * 8, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=8), kernel, out, np.int32(depth))
    host = np.zeros(8, np.int32)
    out.copy_to(host, stream=stream)
    stream.sync()
    return host


def test_the_default_is_cudas_and_a_deep_recursion_overflows_it(cpu):
    assert cpu.stack_size() == 1024
    np.testing.assert_array_equal(_levels(3), 6)         # 4 levels of 128+ bytes fit
    with pytest.raises(IllegalAddressError, match=r"ran out of stack .*1024 bytes per thread "
                                                  r"\(cudaLimitStackSize"):
        _levels(200)


def test_the_limit_set_is_read_back_and_used(cpu):
    cpu.set_stack_size(64 << 10)
    assert cpu.stack_size() == 64 << 10
    np.testing.assert_array_equal(_levels(200), 200 * 201 // 2)
    cpu.set_stack_size(4096)       # smaller again: the next launch has the smaller stack
    with pytest.raises(IllegalAddressError, match="4096 bytes per thread"):
        _levels(200)


def test_the_limit_is_rounded_up_to_16_bytes_as_nvidias_driver_rounds_it(cpu):
    for value, reads in ((1, 16), (17, 32), (1000, 1008), (0, 0), (4096, 4096)):
        cpu.set_stack_size(value)
        assert cpu.stack_size() == reads


def test_limits_the_cpu_device_cannot_give_are_refused(cpu):
    with pytest.raises(InvalidValueError, match="cudaLimitStackSize"):
        cpu.set_stack_size(MAX_STACK_LIMIT + 1)
    assert cpu.stack_size() == 1024
