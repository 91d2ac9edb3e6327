"""A kernel's fault belongs to the launch that made it: after an IllegalAddressError the same
kernel, block shape and stream run correctly again (the CPU device keeps each host thread's
worker memory between launches, and once kept the old fault with it)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from tests.cpu_harness import index_outside, launch_on_cpu

SOURCE = r"""
extern "C" __global__ void store_at(float* p, int i)
{
    if (threadIdx.x == 0)
        p[i] = 1.0f;
}

__device__ __noinline__ void put(float* p, int i) { p[i] = 2.0f; }

extern "C" __global__ void store_through_a_function(float* p, int i)
{
    if (threadIdx.x == 0)
        put(p, i);
}

extern "C" __global__ void store_after_a_barrier(float* p, int i)
{
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0)
        p[i] = s[blockDim.x - 1] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def module():
    return Program(SOURCE, code_type="c++").compile("native")


@pytest.mark.parametrize("name", ["store_at", "store_through_a_function",
                                  "store_after_a_barrier"])
@pytest.mark.parametrize("block", [1, 32, 64])
def test_a_fault_is_reported_once_and_the_next_launch_runs(module, name, block):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = module.get_kernel(name)
    buffer = dev.allocate(16, stream=stream)
    buffer.copy_from(np.zeros(4, np.float32), stream=stream)
    config = LaunchConfig(grid=1, block=block)
    bad = np.int32(index_outside(dev, buffer))
    with pytest.raises(IllegalAddressError, match=f"kernel '{name}' wrote 4 bytes"):
        launch(stream, config, kernel, buffer, bad)
        stream.sync()
    for _ in range(2):
        launch(stream, config, kernel, buffer, np.int32(1))
        stream.sync()
    out = np.zeros(4, np.float32)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    assert out[1] != 0 and out[0] == 0 and out[2] == 0


def test_a_fault_in_a_device_function_names_the_blocks_it_may_be_in(module):
    dev = Device("cpu")
    stream = dev.create_stream()
    buffer = dev.allocate(16, stream=stream)
    kernel = module.get_kernel("store_through_a_function")
    bad = np.int32(index_outside(dev, buffer))
    with pytest.raises(IllegalAddressError) as caught:
        launch(stream, LaunchConfig(grid=3, block=1), kernel, buffer, bad)
        stream.sync()
    assert "'blocks'" not in str(caught.value) and "thread -1" not in str(caught.value)


@pytest.mark.parametrize("block", [1, 64])
def test_allocations_made_or_freed_between_launches_are_checked_as_they_are_now(module, block):
    """Workers keep their allocation table between launches only while the allocations stay
    the same: a buffer made since is inside, one freed since is outside."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = module.get_kernel("store_at")
    config = LaunchConfig(grid=1, block=block)
    first = dev.allocate(16, stream=stream)
    launch(stream, config, kernel, first, np.int32(1))
    stream.sync()
    second = dev.allocate(16, stream=stream)
    second.copy_from(np.zeros(4, np.float32), stream=stream)
    launch(stream, config, kernel, second, np.int32(2))
    stream.sync()
    address = first.handle
    first.close(stream=stream)
    stream.sync()
    with pytest.raises(IllegalAddressError, match=f"address {address + 4:#x}, outside"):
        launch(stream, config, kernel, np.uint64(address), np.int32(1))
        stream.sync()
    out = np.zeros(4, np.float32)
    second.copy_to(out, stream=stream)
    stream.sync()
    assert out.tolist() == [0, 0, 1, 0]


# a store through the generic address of the block's shared memory at byte `off`: `s` is
# 64 bytes of static shared memory, or (.extern) the dynamic shared memory of the launch
def _generic_shared_store(declaration: str) -> str:
    return f"""
.version 8.0
.target sm_80
.address_size 64
{declaration}
.visible .entry k(.param .u64 out, .param .u32 off)
{{
.reg .b32 %r<4>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out];
ld.param.u32 %r1, [off];
mov.u64 %rd2, s;
cvta.shared.u64 %rd3, %rd2;
cvt.u64.u32 %rd4, %r1;
add.s64 %rd5, %rd3, %rd4;
st.u32 [%rd5], 7;
ld.shared.u32 %r2, [s+60];
cvta.to.global.u64 %rd6, %rd1;
st.global.u32 [%rd6], %r2;
ret;
}}
"""


@pytest.mark.parametrize("declaration, shmem", [
    (".shared .align 16 .b8 s[64];", 0), (".extern .shared .align 16 .b8 s[];", 64)])
@pytest.mark.parametrize("block", [1, 32])
def test_a_generic_store_just_past_the_blocks_shared_memory_is_reported(declaration, shmem,
                                                                        block):
    """The block's shared memory is checked as declared: a generic store at its last word
    runs, one at the first byte past it (and the 16 bytes after, which the workers' tables
    once accepted) is reported."""
    ptx = _generic_shared_store(declaration)
    config = LaunchConfig(grid=1, block=block, shmem_size=shmem)
    out = np.zeros(1, np.uint32)
    launch_on_cpu(ptx, config, out, np.uint32(60))
    assert out[0] == 7
    for off in (64, 76):
        with pytest.raises(IllegalAddressError, match=f"kernel 'k' wrote 4 bytes at address "
                           "0x[0-9a-f]+, outside every allocation, at line 15 .* usable "
                           f"\\(the address is {off - 64} bytes past the end of the block's "
                           "64 bytes of shared memory\\)"):
            launch_on_cpu(ptx, config, out, np.uint32(off))
