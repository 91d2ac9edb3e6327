"""Warp gangs' yields at barrier-free loops' back edges (codegen/targets/cpu/gang/interleave.py,
CpuOptions.interleave_passes): a block's warps run such loops interleaved pass by pass. In one
round warps then wait at different points (some at a loop's back edge, some at the barrier
after it, some exited); the barrier completes only once every live warp is at it. These
kernels' loops end at different passes per warp and per lane, hold shared and global atomics,
and are followed by a barrier whose readers look at other warps' results; a warp that spins
on a flag another warp of its block sets goes on once that warp has run.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.interleave import yield_edges
from ptxport.inspection import load

SOURCE = r"""
extern "C" __global__ void interleaved(const int* x, int* y, int* total, int n)
{
    __shared__ int s[256];
    __shared__ int bins[16];
    int t = threadIdx.x, w = t >> 5, warps = (blockDim.x + 31) >> 5;
    if (t < 16)
        bins[t] = 0;
    __syncthreads();
    int acc = 0;
    // a grid-stride loop that ends at different passes per warp and per lane
    int end = n - (w * 97 + (t & 31) * 5);
    for (int i = blockIdx.x * blockDim.x + t; i < end; i += gridDim.x * blockDim.x) {
        acc += x[i];
        atomicAdd(&bins[x[i] & 15], 1);
        atomicAdd(total, 1);
    }
    if (w == warps - 1)         // the last warp exits while the others wait at the barrier
        return;
    s[t] = acc;
    __syncthreads();
    int others = 32 * (warps - 1);
    y[blockIdx.x * blockDim.x + t] = s[(t + 33) % others] + (t < 16 ? bins[t] << 20 : 0);
}

extern "C" __global__ void handoff(int* out)
{
    __shared__ int flag;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    __syncthreads();
    if (t < 32) {               // warp 0 waits for warp 1, which runs after it
        int seen;
        while ((seen = atomicAdd(&flag, 0)) == 0)
            ;
        out[blockIdx.x * 32 + t] = seen + t;
    } else if (t == 32) {
        atomicAdd(&flag, 42);
    }
}

extern "C" __global__ void handoff_lane(int* out)
{
    __shared__ int flag;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    __syncthreads();
    int seen = -1;
    if (t == 5) {               // one lane of warp 0 waits for warp 1, its warp's others
        while ((seen = atomicAdd(&flag, 0)) == 0)     // wait where the if joins
            ;
    } else if (t == 32) {
        atomicAdd(&flag, 42);
    }
    out[blockIdx.x * blockDim.x + t] = seen + t;
}

extern "C" __global__ void loops(const float* x, float* y, int n)
{
    __shared__ float s[64];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)       // yields
        acc += x[i];
    for (int r = 0; r < n; r++) {                          // a barrier inside: no yield
        s[threadIdx.x & 63] = acc;
        __syncthreads();
        acc += s[(threadIdx.x + 1) & 63];
        __syncthreads();
    }
    for (int i = 0; i < n; i++)                            // a shuffle inside: no yield
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    for (int i = threadIdx.x & 31; i < n; i += 32)         // dense and counted: no yield
        acc += x[i];
    y[threadIdx.x] = acc;
}
"""


def _reference(x: np.ndarray, grid: int, block: int) -> tuple[np.ndarray, int]:
    n, stride, warps = x.size, grid * block, (block + 31) // 32
    y = np.full(grid * block, -7, np.int64)
    total = 0
    t = np.arange(block)
    for k in range(grid):
        end = n - ((t >> 5) * 97 + (t & 31) * 5)
        acc = np.zeros(block, np.int64)
        bins = np.zeros(16, np.int64)
        for lane in range(block):
            i = np.arange(k * block + lane, max(end[lane], 0), stride)
            i = i[i < end[lane]]
            acc[lane] = x[i].sum()
            bins += np.bincount(x[i] & 15, minlength=16)
            total += i.size
        others = 32 * (warps - 1)
        live = t < others
        read = acc[(t + 33) % others] + np.where(t < 16, bins[np.minimum(t, 15)] << 20, 0)
        y[k * block:(k + 1) * block] = np.where(live, read, -7)
    return y, total


@pytest.mark.parametrize("passes", [0, 1, 3])
@pytest.mark.parametrize("block", [256, 200, 96])
def test_interleaved_loops_agree(cpu_options, passes, block):
    cpu_options(interleave_passes=passes)
    grid, n = 3, 5000
    x = np.random.default_rng(block + passes).integers(0, 1000, n, dtype=np.int32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("interleaved")
    buf_x, buf_y, buf_total = (dev.allocate(size, stream=stream)
                               for size in (x.nbytes, 4 * grid * block, 4))
    buf_x.copy_from(x, stream=stream)
    buf_y.copy_from(np.full(grid * block, -7, np.int32), stream=stream)
    buf_total.copy_from(np.zeros(1, np.int32), stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, buf_x, buf_y, buf_total,
           np.int32(n))
    y, total = np.empty(grid * block, np.int32), np.empty(1, np.int32)
    buf_y.copy_to(y, stream=stream)
    buf_total.copy_to(total, stream=stream)
    stream.sync()
    assert kernel._binary(dev).for_block((block, 1, 1)).gang_refusal is None
    expected, count = _reference(x, grid, block)
    np.testing.assert_array_equal(y, expected)
    assert total[0] == count


def _handoff(name: str, count: int) -> np.ndarray:
    """Launch SOURCE's `name` on 2 blocks of 64 threads of the CPU device, checking that it
    ran as a warp gang; its `count` ints of output."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel(name)
    out = dev.allocate(4 * count, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=64), kernel, out)
    got = np.empty(count, np.int32)
    out.copy_to(got, stream=stream)
    stream.sync()
    assert kernel._binary(dev).for_block((64, 1, 1)).gang_refusal is None
    return got


@pytest.mark.parametrize("passes", [1, 2])
def test_a_spinning_warp_lets_the_others_run(cpu_options, passes):
    """Warp 0 spins until warp 1 sets a flag: warps that never yield would spin forever
    (warp 1 runs after warp 0 in the round)."""
    cpu_options(interleave_passes=passes)
    np.testing.assert_array_equal(_handoff("handoff", 64), 42 + np.arange(64) % 32)


@pytest.mark.parametrize("passes", [1, 3])
def test_a_spinning_lane_lets_the_others_run(cpu_options, passes):
    """One lane of warp 0 spins, the warp's other lanes wait after the if: the warp yields
    with its lanes apart, and resumes through its dispatcher."""
    cpu_options(interleave_passes=passes)
    t = np.arange(128) % 64
    np.testing.assert_array_equal(_handoff("handoff_lane", 128),
                                  np.where(t == 5, 42, -1) + t)


def test_which_loops_yield(tmp_path):
    """Of the loops with neither a barrier nor a warp operation in their bodies, the
    block-stride one yields, and a dense counted one, which ends without other warps' help,
    does not; spins on a flag in memory yield, though neither is a stride loop."""
    path = tmp_path / "loops.cu"
    path.write_text(SOURCE)
    module, _ = load(path)
    for spin in ("handoff", "handoff_lane"):
        assert [strided for _, strided in yield_edges(module.functions[spin]).values()] \
            == [False]
    kernel = module.functions["loops"]
    edges = yield_edges(kernel)
    assert len(edges) == 1
    ((header, strided),) = edges.values()
    assert strided      # (`i += blockDim.x`)
    body = [i.opcode for i in header.instructions]
    assert "ld" in body and "bar" not in body and "shfl" not in body
