"""Strided shared loads made again in a segment (codegen/targets/cpu/gang/reloads.py): the
second takes the first's lanes where no store between them touched them (a store whose
lanes interleave with the load's, half a stride away), else loads again: after a store to
the same elements through another base register (tested at run time), a scattered store
(not strided: every note forgotten) and an atomic. Each thread reads back only what it
wrote itself or what no thread writes, so the results do not depend on the order of the
threads; they must agree with numpy and with the thread-by-thread path, in blocks of whole
warps and with a partial warp."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang import reloads

SOURCE = r"""
extern "C" __global__ void reloads(const int* x, const int* idx, int* y, int o1, int o2)
{
    __shared__ int s[2048 + 64];
    int t = threadIdx.x;
    for (int i = t; i < 2048 + 64; i += blockDim.x)
        s[i] = x[blockIdx.x * 64 + i];
    __syncthreads();
    int a = s[o1 + 2 * t];
    s[o2 + 2 * t] = a + 1000;       // o2 = o1 + 1: between a's elements; o2 = o1: on them
    int b = s[o1 + 2 * t];          // a, or a + 1000 where o2 = o1
    int c = s[2 * t + 1];
    s[idx[t]] = 7 * t;              // scattered: 2t + 1 (c's element) or past the pairs
    int d = s[2 * t + 1];           // 7t or c
    atomicAdd(&s[2 * t + 1], 5);
    int e = s[2 * t + 1];           // d + 5
    int* out = y + (blockIdx.x * blockDim.x + t) * 5;
    out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = e;
}
"""


def _reference(x, idx, block: int, blocks: int, o1: int, o2: int) -> np.ndarray:
    y = np.zeros((blocks * block, 5), np.int64)
    for k in range(blocks):
        s = x[k * 64:k * 64 + 2048 + 64].astype(np.int64).copy()
        t = np.arange(block)
        a = s[o1 + 2 * t].copy()
        s[o2 + 2 * t] = a + 1000
        b = s[o1 + 2 * t].copy()
        c = s[2 * t + 1].copy()
        s[idx[:block]] = 7 * t
        d = s[2 * t + 1].copy()
        s[2 * t + 1] += 5
        e = s[2 * t + 1].copy()
        y[k * block:(k + 1) * block] = np.stack([a, b, c, d, e], axis=1)
    return y


@pytest.mark.parametrize("block, o1, o2", [
    (256, 0, 1),        # the store between the loads' elements: the load taken again
    (256, 0, 0),        # the store on them (another base register): loaded again
    (64, 6, 7),
    (48, 0, 1),         # a partial warp
])
@pytest.mark.parametrize("gang", [True, False])
def test_reloads_agree(cpu_options, block, o1, o2, gang):
    cpu_options(gang=gang)
    blocks = 2
    rng = np.random.default_rng(block + o1 + o2)
    x = rng.integers(-1000, 1000, blocks * 64 + 2048 + 64, dtype=np.int32)
    t = np.arange(block)
    idx = np.where(t % 2 == 0, 2 * t + 1, 2048 + t % 64).astype(np.int32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("reloads")
    bx, bi, by = (dev.allocate(n, stream=stream) for n in (x.nbytes, idx.nbytes,
                                                           blocks * block * 5 * 4))
    bx.copy_from(x, stream=stream)
    bi.copy_from(idx, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=block), kernel, bx, bi, by, np.int32(o1),
           np.int32(o2))
    y = np.empty((blocks * block, 5), np.int32)
    by.copy_to(y, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(y, _reference(x, idx, block, blocks, o1, o2))


def test_the_second_load_goes_by_the_note(monkeypatch):
    """Where whole warps run, b's load finds a's note (tested at run time after the store)."""
    from ptxport.codegen.targets.cpu.gang.build import build_gang
    from ptxport.codegen.targets.cpu.options import CpuOptions

    found = []
    real = reloads.load

    def noting(fl, place, t, access):
        found.append(reloads._key(fl, place, t) in fl.reloads)
        return real(fl, place, t, access)
    monkeypatch.setattr(reloads, "load", noting)
    code = Program(SOURCE, code_type="c++").compile("native")
    llmod, _ = build_gang(code.module, "reloads", (256, 1, 1), CpuOptions())
    assert any(found)
    assert "reloaded" in str(llmod)
