"""A warp gang's first segment (codegen/targets/cpu/gang/lowering.py's _dispatched_first):
the dispatcher has no case for it unless a lane can wait there (a warp operation starting
it; a branch there, though a kernel that starts with a label starts with an empty block
before it), so that only a fresh warp's entry runs it. Kernels with a loop at their start
(lanes leaving it one by one and waiting for the dispatcher), with a warp operation first,
and without either run as on the thread-by-thread path, in whole and partial warps."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang import lowering
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# Each thread takes tickets from out[0] until it draws one >= limit, and stores that one at
# out[1 + its index]: out[0] ends at limit + threads, the stored tickets are limit.. once each.
LOOP = HEADER + """.visible .entry k(.param .u64 out, .param .u32 limit)
{
.reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
START:
ld.param.u64 %rd1, [out];
ld.param.u32 %r3, [limit];
atom.global.add.u32 %r2, [%rd1], 1;
setp.lt.u32 %p1, %r2, %r3;
@%p1 bra START;
mov.u32 %r1, %tid.x;
mov.u32 %r4, %ctaid.x;
mov.u32 %r5, %ntid.x;
mad.lo.s32 %r6, %r4, %r5, %r1;
mul.wide.u32 %rd2, %r6, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3+4], %r2;
ret;
}
"""
STRAIGHT = LOOP.replace("@%p1 bra START;", "").replace("START:\n", "")
WARP_OP = STRAIGHT.replace("{\n", "{\nbar.warp.sync -1;\n", 1)


def _dispatched(ptx: str, monkeypatch) -> list[bool]:
    seen = []
    chosen = lowering._dispatched_first

    def spy(fl, segments):
        seen.append(chosen(fl, segments))
        return seen[-1]
    monkeypatch.setattr(lowering, "_dispatched_first", spy)
    # (block checks off: their marker, first in the kernel, would start the first segment
    # before the warp operation)
    build_gang(build(parse(ptx)), "k", (64, 1, 1), CpuOptions(block_checks=False))
    return seen


def test_the_first_segment_has_a_case_where_lanes_can_wait_there(monkeypatch):
    assert _dispatched(WARP_OP, monkeypatch) == [True]
    # (the loop's header is the second segment, after the empty block the label ends)
    assert _dispatched(LOOP, monkeypatch) == [False]
    assert _dispatched(STRAIGHT, monkeypatch) == [False]


@pytest.mark.parametrize("ptx", [LOOP, STRAIGHT, WARP_OP], ids=["loop", "straight", "warp_op"])
@pytest.mark.parametrize("block,limit", [(64, 1000), (48, 1000), (96, 50), (64, 0)])
def test_a_kernel_whose_first_block_is_a_loop(ptx, block, limit, cpu_options):
    grid = 2
    threads = grid * block
    for gang in (True, False):
        cpu_options(gang=gang)
        out = np.zeros(1 + threads, np.uint32)
        binary = launch_on_cpu(ptx, LaunchConfig(grid=grid, block=block), out,
                               np.uint32(limit))
        if gang:
            assert binary.gang_refusal is None
        if ptx is LOOP:
            assert out[0] == max(limit, 0) + threads
            assert sorted(out[1:]) == list(range(limit, limit + threads))
        else:
            assert out[0] == threads
            assert sorted(out[1:]) == list(range(threads))
