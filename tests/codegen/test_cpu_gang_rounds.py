"""Uniform rounds of warp gangs (codegen/targets/cpu/gang/rounds.py): after a round in which
every warp waits at the same barrier with all 32 lanes, the block loop resumes the warps
straight after it, and a warp whose lanes then take different ways leaves the uniform round
(CONTINUE) and goes on from its frame in the general round. These kernels make warps leave
in every round (if/else chains on the thread index and loops whose trip count differs per
lane, inside a barrier loop, with registers live across the split), mix in shuffles, partial
warps (never uniform) and warps that exit in the middle of the loop, and must agree with
numpy and with the thread-by-thread path."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch

SOURCE = r"""
template <bool SHUFFLE>
__device__ void rounds(const int* x, int* y, int iters, int quit_round, int quit_from)
{
    __shared__ int s[256];
    int t = threadIdx.x, n = blockDim.x;
    int i = blockIdx.x * n + t;
    int v = x[i];
    int keep = v * 7;                       // live across every round and every split
    s[t] = v;
    for (int r = 0; r < iters; r++) {
        __syncthreads();
        if (r == quit_round && t >= quit_from) {
            y[i] = -1;
            return;
        }
        int other = s[(t + r + 1) % n];
        if ((t + r) % 3 == 0) {
            for (int k = 0; k < ((t + r) & 3); k++)     // as many passes as the lane says
                v = v * 3 + other;
        } else if (t & 1) {
            v -= other >> 1;
        } else {
            v ^= r;
        }
        int up = SHUFFLE ? __shfl_xor_sync(0xffffffffu, v, 1) : 0;
        __syncthreads();
        s[t] = v + (up & 15);
    }
    y[i] = v + keep;
}

extern "C" __global__ void rounds_shuffle(const int* x, int* y, int iters, int quit_round,
                                          int quit_from)
{
    rounds<true>(x, y, iters, quit_round, quit_from);
}

extern "C" __global__ void rounds_plain(const int* x, int* y, int iters, int quit_round,
                                        int quit_from)
{
    rounds<false>(x, y, iters, quit_round, quit_from);
}
"""


def _wrap(v: np.ndarray) -> np.ndarray:
    return (v + 2**31) % 2**32 - 2**31


def _reference(x: np.ndarray, block: int, iters: int, shuffle: bool, quit_round: int,
               quit_from: int) -> np.ndarray:
    y = np.empty_like(x)
    t = np.arange(block)
    for first in range(0, x.size, block):
        v = x[first:first + block].astype(np.int64)
        keep = v * 7
        s = v.copy()
        live = np.ones(block, bool)
        for r in range(iters):
            if r == quit_round:
                live &= t < quit_from
            other = s[(t + r + 1) % block]
            looped = v.copy()
            for k in range(3):
                passes = k < ((t + r) & 3)
                looped = _wrap(np.where(passes, looped * 3 + other, looped))
            v = np.where((t + r) % 3 == 0, looped, np.where(t & 1, v - (other >> 1), v ^ r))
            v = _wrap(v)
            up = v[t ^ 1] if shuffle else np.zeros(block, np.int64)
            s = _wrap(np.where(live, v + (up & 15), s))
        out = _wrap(v + keep)
        y[first:first + block] = np.where(live, out, -1) if quit_round < iters else out
    return y


def _run(kernel_name: str, x: np.ndarray, block: int, iters: int, quit_round: int,
         quit_from: int):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel(kernel_name)
    buf_x, buf_y = (dev.allocate(x.nbytes, stream=stream) for _ in range(2))
    buf_x.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=x.size // block, block=block), kernel, buf_x, buf_y,
           np.int32(iters), np.int32(quit_round), np.int32(quit_from))
    y = np.empty_like(x)
    buf_y.copy_to(y, stream=stream)
    stream.sync()
    return y, kernel._binary(dev).for_block((block, 1, 1))


@pytest.mark.parametrize("kernel, block, quit_round, quit_from", [
    ("rounds_shuffle", 128, 99, 0),     # every round uniform at first, then split
    ("rounds_shuffle", 256, 3, 64),     # warps 2..7 exit in round 3: general rounds after
    ("rounds_plain", 96, 99, 0),
    ("rounds_plain", 48, 2, 40),        # a partial warp (never uniform), lanes exit
    # warp 2 waits with 8 lanes (its frame names where), warps 0 and 1 with all 32 (their
    # status does) in general rounds
    ("rounds_plain", 128, 2, 72),
])
# (first_round True: the block's first round has its own loop here too, where a barrier on
# a loop leaves it out by default: the rounds that run every warp then tell whether one
# waits from their results' AND, and warps leave uniform rounds for the general round)
@pytest.mark.parametrize("gang, first_round", [(True, None), (True, True), (False, None)])
def test_uniform_rounds_agree(cpu_options, kernel, block, quit_round, quit_from, gang,
                              first_round):
    cpu_options(gang=gang, first_round=first_round)
    iters = 6
    x = np.random.default_rng(block + quit_round).integers(-1000, 1000, 3 * block,
                                                           dtype=np.int32)
    y, binary = _run(kernel, x, block, iters, quit_round, quit_from)
    assert (binary.gang_refusal is None) == gang, binary.gang_refusal
    expected = _reference(x, block, iters, kernel == "rounds_shuffle", quit_round, quit_from)
    np.testing.assert_array_equal(y, expected)
