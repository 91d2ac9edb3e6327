"""A block's first round (codegen/targets/cpu/gang/rounds.py): every warp starts fresh in a
loop of its own whose copy of the gang function is its straight path from the start; a warp
whose lanes take different ways before its first barrier leaves that round at the
dispatcher (CONTINUE), resumes in the general round's loop, and the warps after it start
fresh there. These kernels diverge before the first barrier in some warps only (so that
later warps start fresh after one left), keep registers live across the split and the
barrier, read other warps' shared words after it, and fault in a warp after one that left:
results against numpy and the thread-by-thread path, the fault at the same thread."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

SOURCE = r"""
extern "C" __global__ void first(const int* x, int* y, int split_warp, int bad_thread)
{
    __shared__ int s[256];
    int t = threadIdx.x, n = blockDim.x;
    int i = blockIdx.x * n + t;
    int v = x[i];
    int keep = v * 5;                   // live across the split and the barrier
    if ((t >> 5) == split_warp || (t >> 5) == split_warp + 2) {
        for (int k = 0; k < (t & 3); k++)       // as many passes as the lane says
            v = v * 3 + k;
        if (t & 1)
            v -= 7;
    }
    if (t == bad_thread)
        v += x[i + (1 << 28)];          // far outside x
    s[t] = v;
    __syncthreads();
    y[i] = s[(t + 37) % n] + keep;
}
"""


def _wrap(v: np.ndarray) -> np.ndarray:
    return (v + 2**31) % 2**32 - 2**31


def _reference(x: np.ndarray, block: int, split_warp: int) -> np.ndarray:
    y = np.empty_like(x)
    t = np.arange(block)
    for first in range(0, x.size, block):
        v = x[first:first + block].astype(np.int64)
        keep = v * 5
        split = ((t >> 5) == split_warp) | ((t >> 5) == split_warp + 2)
        w = v.copy()
        for k in range(3):
            w = _wrap(np.where(k < (t & 3), w * 3 + k, w))
        w = np.where(t & 1, w - 7, w)
        v = _wrap(np.where(split, w, v))
        y[first:first + block] = _wrap(v[(t + 37) % block] + keep)
    return y


def _run(x: np.ndarray, block: int, split_warp: int, bad_thread: int):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("first")
    buf_x, buf_y = (dev.allocate(x.nbytes, stream=stream) for _ in range(2))
    buf_x.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=x.size // block, block=block), kernel, buf_x, buf_y,
           np.int32(split_warp), np.int32(bad_thread))
    y = np.empty_like(x)
    buf_y.copy_to(y, stream=stream)
    stream.sync()
    return y, kernel._binary(dev).for_block((block, 1, 1))


@pytest.mark.parametrize("block, split_warp", [
    (256, 0),       # warp 0 leaves the first round: warps 1..7 start fresh in the general
    (256, 5),       # warps 5 and 7 leave it, the warps before finish in it
    (96, 1),        # warp 1 leaves it; warp 3 does not exist
    (80, 1),        # ... and warp 2 is partial
    (128, 9),       # none leaves it
])
@pytest.mark.parametrize("gang", [True, False])
def test_warps_that_leave_the_first_round_agree(cpu_options, block, split_warp, gang):
    cpu_options(gang=gang)
    x = np.random.default_rng(block + split_warp).integers(-1000, 1000, 3 * block,
                                                           dtype=np.int32)
    y, binary = _run(x, block, split_warp, -1)
    assert (binary.gang_refusal is None) == gang, binary.gang_refusal
    np.testing.assert_array_equal(y, _reference(x, block, split_warp))


@pytest.mark.parametrize("gang", [True, False])
def test_a_fault_after_a_warp_that_left_names_the_same_thread(cpu_options, gang):
    """Warp 1 leaves the first round; thread 100 (warp 3, fresh in the general round)
    reads outside x: both paths name block 0, thread 100."""
    cpu_options(gang=gang)
    x = np.zeros(256, np.int32)      # one block
    with pytest.raises(IllegalAddressError) as caught:
        _run(x, 256, 1, 100)
    assert re.search(r"block \(0, 0, 0\), thread 100;", str(caught.value)), caught.value


GATE_SOURCE = r"""
extern "C" __global__ void looped_barrier(int* y, int n)
{
    __shared__ int s[128];
    int t = threadIdx.x, v = t;
    for (int r = 0; r < n; r++) {
        s[t] = v;
        __syncthreads();
        v += s[(t + 1) % blockDim.x];
        __syncthreads();
    }
    y[t] = v;
}

extern "C" __global__ void grid_stride(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
}

extern "C" __global__ void straight(const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
}
"""


@pytest.mark.parametrize("source, name, first_round, expected", [
    (SOURCE, "first", None, True),              # one barrier, outside any loop
    (GATE_SOURCE, "straight", None, False),     # no barrier: one round, the general's
    (GATE_SOURCE, "looped_barrier", None, False),   # a round a pass
    (GATE_SOURCE, "grid_stride", None, False),      # the loop yields: a round a few passes
    (GATE_SOURCE, "looped_barrier", True, True),
    (SOURCE, "first", False, False),
    (GATE_SOURCE, "straight", True, True),
])
def test_the_first_round_has_a_loop_where_rounds_are_few(source, name, first_round,
                                                         expected):
    """By default (CpuOptions.first_round None) a block's first round has a loop of its own
    only where the block's rounds are few but more than one; the option forces it either
    way."""
    ptx = Program(source, code_type="c++").compile("ptx").code
    llmod, _ = build_gang(build(parse(ptx)), name, (128, 1, 1),
                          CpuOptions(first_round=first_round))
    assert ("first_round" in str(llmod.globals["run_blocks"])) == expected
