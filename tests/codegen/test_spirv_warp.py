"""Warp ballots on opencl:0 (spirv_warp.py): activemask, vote.ballot and elect see only the
lanes that execute them, as PTX defines them, also inside a divergent branch (a ballot built
from shuffles would count the inactive lanes' copies of a constant predicate).

Without pyopencl or a device that accepts SPIR-V, the test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability

_AVAILABLE, _WHY = availability("opencl")

SOURCE = r"""
extern "C" __global__ void divergent(const int *x, unsigned *out) {
    int lane = threadIdx.x % 32, i = blockIdx.x * blockDim.x + threadIdx.x;
    out[4 * i] = out[4 * i + 1] = out[4 * i + 2] = out[4 * i + 3] = 0xFFFFFFFFu;
    if (x[i] % 3 == 0) {
        unsigned active = __activemask();
        out[4 * i] = active;
        out[4 * i + 1] = __ballot_sync(active, lane >= 16);
        out[4 * i + 2] = __popc(active & ((1u << lane) - 1));   // coalesced rank
        out[4 * i + 3] = __ffs(active) - 1 == lane;              // the lowest active lane
    }
}
"""


@pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")
@pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed")
def test_ballots_count_only_the_lanes_that_execute_them():
    x = (np.arange(64, dtype=np.int32) * 7 + 2) % 11
    dev = Device("opencl:0")
    stream = dev.create_stream()
    xs, out = dev.allocate(x.nbytes, stream=stream), dev.allocate(4 * 4 * 64, stream=stream)
    xs.copy_from(x, stream=stream)
    kernel = Program(SOURCE, "c++").compile().get_kernel("divergent")
    launch(stream, LaunchConfig(grid=1, block=64), kernel, xs, out)
    got = np.zeros((64, 4), np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    for warp in range(2):
        lanes = [lane for lane in range(32) if x[32 * warp + lane] % 3 == 0]
        mask = sum(1 << lane for lane in lanes)
        for lane in range(32):
            row = got[32 * warp + lane]
            if lane not in lanes:
                assert list(row) == [0xFFFFFFFF] * 4
                continue
            assert row[0] == mask
            assert row[1] == mask & 0xFFFF0000
            assert row[2] == lanes.index(lane)
            assert row[3] == (lane == lanes[0])


PARTIAL = r"""
extern "C" __global__ void partial(unsigned *out) {
    int i = threadIdx.x, pred = 0;
    out[5 * i] = __all_sync(0xFFFFFFFFu, 1);
    out[5 * i + 1] = __all_sync(0xFFFFFFFFu, i != 40);
    out[5 * i + 2] = __uni_sync(0xFFFFFFFFu, 1);
    out[5 * i + 3] = __match_any_sync(0xFFFFFFFFu, i % 2);
    __match_all_sync(0xFFFFFFFFu, 7, &pred);
    out[5 * i + 4] = pred;
}
"""


@pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")
@pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed")
def test_votes_and_matches_leave_out_the_lanes_past_the_end_of_the_block():
    """A block of 48 threads: warp 1 has lanes 0-15 only, and the full member mask's other
    lanes count as exited (PTX: "all non-exited threads in membermask"), as on the CPU and
    AMDGPU targets."""
    dev = Device("opencl:0")
    stream = dev.create_stream()
    out = dev.allocate(4 * 5 * 48, stream=stream)
    kernel = Program(PARTIAL, "c++").compile().get_kernel("partial")
    launch(stream, LaunchConfig(grid=1, block=48), kernel, out)
    got = np.zeros((48, 5), np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    for i in range(48):
        warp, lane = divmod(i, 32)
        lanes = range(32) if warp == 0 else range(16)
        same_parity = sum(1 << k for k in lanes if k % 2 == lane % 2)
        assert list(got[i]) == [1, int(warp == 0), 1, same_parity, 1], i
