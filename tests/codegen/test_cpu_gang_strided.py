"""Warp gangs' accesses of every 2nd or 4th element (a Blelloch scan's lower levels, two
elements per thread): one masked access of the span and a shuffle, found at run time or, for
%tid-based shared addresses, when compiling; and %tid-based shared accesses under partial
masks (edges, `if (tid < s)`) and in a padded tile's columns (known to be scattered when
compiling). Results against numpy for several strides and masks; the elements between the
lanes' are left alone (shared and global); a lane past the shared memory still stops the
kernel at the first bad thread."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError

SOURCE = r"""
extern "C" __global__ void strided(const int* x, int* y, int* z, int step, int n)
{
    __shared__ int s[1024];
    int t = threadIdx.x;
    for (int i = t; i < 1024; i += blockDim.x)
        s[i] = -1;
    __syncthreads();
    if (t < n)
        s[step * t] = x[step * t];      // strided shared store, strided global load
    __syncthreads();
    for (int i = t; i < 1024; i += blockDim.x)
        z[i] = s[i];
    if (t < n)
        y[step * t] = 2 * s[step * t];  // strided shared load, strided global store
}

extern "C" __global__ void pairs(int* y, int past)
{
    extern __shared__ int d[];
    int t = threadIdx.x;
    d[2 * t + past] = t;                // every 2nd word, known when compiling
    d[2 * t + 1 + past] = -t;
    __syncthreads();
    y[2 * t] = d[2 * t + 1 + past];
    y[2 * t + 1] = d[2 * t + past];
}

extern "C" __global__ void edges(int* y, int from, int past)
{
    extern __shared__ int e[];
    int t = threadIdx.x;
    e[t] = 0;
    __syncthreads();
    if (t >= from)
        e[t - from + past] = t;         // lane 0's would-be address is before the window
    __syncthreads();
    if (t < 7)
        e[t + 16] += 1000;              // a few lanes of the first warp only
    __syncthreads();
    y[t] = e[t];
}

extern "C" __global__ void columns(int* y, int past)
{
    extern __shared__ int c[];
    int t = threadIdx.x;
    for (int i = t; i < 33 * 32; i += blockDim.x)
        c[i] = -1;
    __syncthreads();
    if (t < 20)
        c[t * 33 + past] = t;           // a padded tile's column: lanes 33 words apart
    __syncthreads();
    if (t < 32)
        y[t] = c[t * 33];
}
"""

THREADS = 128


@pytest.fixture(scope="module")
def program():
    return Program(SOURCE, code_type="c++").compile("native")


def _run(kernel, config, arrays, *scalars):
    dev = Device("cpu")
    stream = dev.create_stream()
    buffers = []
    for a in arrays:
        buffer = dev.allocate(a.nbytes, stream=stream)
        buffer.copy_from(a, stream=stream)
        buffers.append(buffer)
    launch(stream, config, kernel, *buffers, *(np.int32(s) for s in scalars))
    for a, buffer in zip(arrays, buffers, strict=True):
        buffer.copy_to(a, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None


@pytest.mark.parametrize("step", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("n", [THREADS, 77, 5])
def test_strided_lanes_touch_only_their_elements(program, step, n):
    x = np.arange(1, 1025, dtype=np.int32) * 3
    y = np.full(1024, -7, np.int32)
    z = np.zeros(1024, np.int32)
    _run(program.get_kernel("strided"), LaunchConfig(grid=1, block=THREADS), [x, y, z],
         step, n)
    lanes = step * np.arange(n)
    want_z = np.full(1024, -1, np.int32)
    want_z[lanes] = x[lanes]
    want_y = np.full(1024, -7, np.int32)
    want_y[lanes] = 2 * x[lanes]
    assert (z == want_z).all()
    assert (y == want_y).all()


def test_pairs_per_thread(program):
    y = np.zeros(2 * THREADS, np.int32)
    _run(program.get_kernel("pairs"), LaunchConfig(grid=1, block=THREADS,
                                                   shmem_size=8 * THREADS), [y], 0)
    t = np.arange(THREADS)
    assert (y[0::2] == -t).all() and (y[1::2] == t).all()


def test_pairs_past_shared_memory_stop_at_the_first_bad_thread(program):
    y = np.zeros(2 * THREADS, np.int32)
    # 2 * t + 64 words into 256: thread 96's pair is the first outside
    with pytest.raises(IllegalAddressError, match="thread 96"):
        _run(program.get_kernel("pairs"), LaunchConfig(grid=1, block=THREADS,
                                                       shmem_size=8 * THREADS), [y], 64)


@pytest.mark.parametrize("start", [1, 5, 40])
def test_partial_masks_at_known_offsets(program, start):
    y = np.zeros(THREADS, np.int32)
    _run(program.get_kernel("edges"), LaunchConfig(grid=1, block=THREADS,
                                                   shmem_size=4 * THREADS), [y], start, 0)
    want = np.zeros(THREADS, np.int32)
    t = np.arange(start, THREADS)
    want[t - start] = t
    want[16:23] += 1000
    assert (y == want).all()


def test_partial_mask_past_shared_memory_stops_at_the_first_bad_thread(program):
    y = np.zeros(THREADS, np.int32)
    # e[t - 3 + 100] in 128 words: thread 31 (a lane of the first warp) is the first outside
    with pytest.raises(IllegalAddressError, match="thread 31"):
        _run(program.get_kernel("edges"), LaunchConfig(grid=1, block=THREADS,
                                                       shmem_size=4 * THREADS), [y], 3, 100)


def test_columns_at_known_offsets(program):
    y = np.zeros(32, np.int32)
    _run(program.get_kernel("columns"), LaunchConfig(grid=1, block=THREADS,
                                                     shmem_size=33 * 32 * 4), [y], 0)
    want = np.full(32, -1, np.int32)
    want[:20] = np.arange(20)
    assert (y == want).all()


def test_column_past_shared_memory_stops_at_the_first_bad_thread(program):
    y = np.zeros(32, np.int32)
    # c[t * 33 + 429] in 1056 words: thread 19's is the first outside
    with pytest.raises(IllegalAddressError, match="thread 19"):
        _run(program.get_kernel("columns"), LaunchConfig(grid=1, block=THREADS,
                                                         shmem_size=33 * 32 * 4), [y], 429)
