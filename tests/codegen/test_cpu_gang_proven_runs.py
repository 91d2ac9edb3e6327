"""An if/else over shared loads of one base (a stencil's `v = tile[ty][tx]` or the average
of its four neighbours) whose every access passes/shared_bounds.py proves inside its
variable: their access group shares no run-time check, so the two sides are skippable runs
of their own (lowering._whole_runs, places.proven_groups), jumped over, or taken with the
whole mask, on warp_bounds.py's scalars. Where one access of the group may fall outside the
tile, the group is checked together and neither side is a run (as before): it faults at
its first bad thread, as the thread-by-thread path does. Counted against numpy for rows
and columns on either side of each warp's halves."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse


# Thread (tx, ty) of a 16x16 block stores t = 16 ty + tx at tile[ty + 1][tx + 1] (every
# cell holding 7 before, the border after); after the barrier, where tx == c or ty == r (a
# column or a row: the edge), out[t] = its own cell, else the sum of its four neighbours'
# (the next row at [%r7+`below`]).
def _edges(below: int = 72) -> str:
    return f""".version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 c, .param .u32 r)
{{
.reg .b32 %r<24>; .reg .b64 %rd<4>; .reg .pred %p<4>;
.shared .align 4 .b32 tile[324];
ld.param.u64 %rd1, [out]; ld.param.u32 %r20, [c]; ld.param.u32 %r21, [r];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
shl.b32 %r3, %r2, 4; add.s32 %r4, %r3, %r1;
mad.lo.s32 %r5, %r2, 18, %r1; add.s32 %r6, %r5, 19; shl.b32 %r10, %r6, 2;
mov.u32 %r11, tile; add.s32 %r7, %r11, %r10;
shl.b32 %r22, %r4, 2; add.s32 %r23, %r11, %r22; mov.u32 %r19, 7;
setp.lt.u32 %p1, %r4, 68;
st.shared.u32 [%r23], %r19;
@%p1 st.shared.u32 [%r23+1024], %r19;
bar.sync 0;
st.shared.u32 [%r7], %r4;
bar.sync 0;
setp.eq.s32 %p1, %r1, %r20;
setp.eq.s32 %p2, %r2, %r21;
or.pred %p3, %p1, %p2;
@%p3 bra EDGE;
ld.shared.u32 %r13, [%r7+4]; ld.shared.u32 %r14, [%r7+-4];
ld.shared.u32 %r15, [%r7+{below}]; ld.shared.u32 %r16, [%r7+-72];
add.s32 %r17, %r13, %r14; add.s32 %r18, %r15, %r16; add.s32 %r12, %r17, %r18;
bra.uni DONE;
EDGE:
ld.shared.u32 %r12, [%r7];
DONE:
mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r12;
ret;
}}
"""


# after the if/else, every thread adds its own cell again: a member of the group outside
# both runs
ALSO = ("DONE:\n", "DONE:\nld.shared.u32 %r19, [%r7]; add.s32 %r12, %r12, %r19;\n")


def _whole_runs(ptx: str) -> int:
    llmod, _ = build_gang(build(parse(ptx)), "k", (16, 16, 1), CpuOptions())
    return len(re.findall(r"^whole_run(?:\.\d+)?:", str(llmod), re.MULTILINE))


def test_the_sides_of_a_proven_if_else_are_runs():
    """Both sides in the segment's full-mask copy; in its copy for other masks, whose
    guarded accesses are in no group, they are runs either way. [%r7+160] lies past the
    tile for threads (13, 14) and (14, 14): that group is checked together, and the
    full-mask copy's sides are no runs."""
    assert _whole_runs(_edges()) == _whole_runs(_edges(160)) + 2


def test_a_member_outside_the_runs_keeps_the_group_together(cpu_options):
    """Where a member of the proven group lies outside both runs (the warp makes it
    anyway), the runs do not part the group: splitting it would only add their tests."""
    ptx = _edges().replace(*ALSO)
    assert _whole_runs(ptx) == _whole_runs(_edges(160))
    for gang in (True, False):
        cpu_options(gang=gang)
        out = np.zeros(256, np.uint32)
        launch_on_cpu(ptx, LaunchConfig(grid=1, block=(16, 16)), out, np.uint32(3),
                      np.uint32(99))
        np.testing.assert_array_equal(out, _reference(3, 99) + np.arange(256, dtype=np.uint32))


def _reference(c: int, r: int) -> np.ndarray:
    tile = np.full((18, 18), 7, np.int64)
    tile[1:17, 1:17] = np.arange(256).reshape(16, 16)
    out = np.empty((16, 16), np.int64)
    for ty in range(16):
        for tx in range(16):
            if tx == c or ty == r:
                out[ty, tx] = tile[ty + 1, tx + 1]
            else:
                out[ty, tx] = (tile[ty + 1, tx + 2] + tile[ty + 1, tx]
                               + tile[ty + 2, tx + 1] + tile[ty, tx + 1])
    return out.reshape(-1).astype(np.uint32)


@pytest.mark.parametrize("c, r", [(99, 99), (0, 99), (15, 0), (7, 3), (99, 15), (99, 8),
                                  (-1, 1)])
def test_edges_agree_with_numpy(c, r, cpu_options):
    """No edge, a column in every warp, a row in one warp's first or second half, both."""
    for gang in (True, False):
        cpu_options(gang=gang)
        out = np.zeros(256, np.uint32)
        launch_on_cpu(_edges(), LaunchConfig(grid=1, block=(16, 16)), out,
                      np.uint32(c & 0xffffffff), np.uint32(r & 0xffffffff))
        np.testing.assert_array_equal(out, _reference(c, r))


def test_a_read_past_the_tile_faults_at_its_thread(cpu_options):
    """[%r7+160] reads past the tile's 1296 bytes first for thread (13, 14), 237, which
    takes the interior side (no edge)."""
    ptx = _edges(160)
    line = next(n for n, text in enumerate(ptx.splitlines(), 1) if "+160]" in text)
    for gang in (True, False):
        cpu_options(gang=gang)
        with pytest.raises(IllegalAddressError, match=r"read 4 bytes at address "
                           rf"0x[0-9a-f]+, outside every allocation, at line {line} in "
                           r"block \(0, 0, 0\), thread 237;"):
            launch_on_cpu(ptx, LaunchConfig(grid=1, block=(16, 16)),
                          np.zeros(256, np.uint32), np.uint32(99), np.uint32(99))
