"""Registers every warp of a block holds alike, made again from %ctaid.x after a barrier rather
than kept in each warp's frame (streams.alike_in_every_warp, GangLowering.read_rebuilt): a 2D
stencil's `x = blockIdx.x * 16 + threadIdx.x`. Only where the block's x size divides 32 (else
the warps' %tid.x lanes differ), and only for exact 32-bit arithmetic of %tid.x, %ctaid.x and
constants written once."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang import streams
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

# x = 3 * tid.x + 16 * ctaid.x - 7 before the barrier, stored after it at the thread's
# linear index in the grid (ctaid.x * ntid.y + tid.y) * ntid.x + tid.x
BODY = """
.reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %tid.x;
shl.b32 %r3, %r1, 4;
mad.lo.s32 %r4, %r2, 3, %r3;
add.s32 %r5, %r4, -7;
bar.sync 0;
mov.u32 %r6, %tid.y;
mov.u32 %r7, %ntid.y;
mad.lo.s32 %r8, %r1, %r7, %r6;
mov.u32 %r9, %ntid.x;
mad.lo.s32 %r10, %r8, %r9, %r2;
mul.wide.u32 %rd2, %r10, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r5;
ret;"""
PTX = kernel_ptx(BODY, ".param .u64 out")


def _remade(block) -> dict:
    """Register name -> alike_in_every_warp's answer, for the kernel's rebuilt registers."""
    seen = {}
    real = streams.alike_in_every_warp

    def spy(fl, reg):
        seen[reg.name] = real(fl, reg)
        return seen[reg.name]

    streams.alike_in_every_warp = spy
    try:
        build_gang(build(parse(PTX)), "k", block, CpuOptions())
    finally:
        streams.alike_in_every_warp = real
    return seen


@pytest.mark.parametrize("block, remade", [
    ((16, 4, 1), True),         # each warp two rows of 16: the same tid.x lanes
    ((8, 8, 1), True),
    ((32, 2, 1), True),
    ((64, 2, 1), False),        # warp 1's lanes are tid.x 32..63: kept in the frame
    ((48, 2, 1), False),
])
def test_a_register_alike_in_every_warp_is_made_again_after_the_barrier(block, remade):
    found = _remade(block)
    assert (found.get("%r5") == (16, -7)) == remade
    grid = 3
    threads = block[0] * block[1]
    out = np.full(grid * threads, -1, np.int32)
    launch_on_cpu(PTX, LaunchConfig(grid=(grid,), block=block), out)
    tx = np.arange(threads) % block[0]
    cx = np.repeat(np.arange(grid), threads)
    np.testing.assert_array_equal(out, (3 * np.tile(tx, grid) + 16 * cx - 7).astype(np.int32))


def test_a_widening_or_a_parameter_keeps_the_frame():
    # x from a parameter (not known when compiling) and a 64-bit product are not remade
    ptx = kernel_ptx("""
.reg .b32 %r<8>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r7, [n];
mov.u32 %r1, %ctaid.x; mov.u32 %r2, %tid.x;
mad.lo.s32 %r5, %r1, %r7, %r2;
bar.sync 0;
mul.wide.u32 %rd2, %r5, 4; add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r5;
ret;""", ".param .u64 out, .param .u32 n")
    seen = {}
    real = streams.alike_in_every_warp
    streams.alike_in_every_warp = lambda fl, reg: seen.setdefault(reg.name, real(fl, reg))
    try:
        build_gang(build(parse(ptx)), "k", (16, 2, 1), CpuOptions())
    finally:
        streams.alike_in_every_warp = real
    assert seen.get("%r5") is None
    out = np.full(3 * 40, -1, np.int32)
    launch_on_cpu(ptx, LaunchConfig(grid=(3,), block=(16, 2)), out, np.uint32(40))
    want = np.full(3 * 40, -1, np.int32)
    for cx in range(3):
        want[cx * 40 + np.arange(16)] = cx * 40 + np.arange(16)
    np.testing.assert_array_equal(out, want)
