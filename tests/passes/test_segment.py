"""passes/segment.py: which warp operations start a segment. A shfl.sync of the whole warp in a
converged block starts none, its member mask an immediate or a register whose one write is a
mov of 0xffffffff (NVRTC's form of __shfl_up_sync(0xffffffffu, ...)); a partial mask, a
register written twice, or a divergent block keep the segment."""

from __future__ import annotations

import pytest

from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.segment import inline_warp_ops, segments_of
from ptxport.passes.uniformity import uniform_registers
from ptxport.ptx.parser import parse

PTX = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
.reg .pred %p<4>; .reg .b32 %r<12>;
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, 1;
mov.u32 %r4, 0;
mov.u32 %r5, MASK;
EXTRA
shfl.sync.up.b32 %r6|%p1, %r2, %r3, %r4, %r5;
add.s32 %r7, %r6, %r2;
shfl.sync.up.b32 %r8|%p2, %r7, %r3, %r4, %r5;
st.shared.u32 [0], %r8;
ret;
}
"""


def _segments(mask: str, extra: str = "") -> int:
    module = build(parse(PTX.replace("MASK", mask).replace("EXTRA", extra), "shfl.ptx"))
    verify(module)
    kernel = module.functions["k"]
    inline = inline_warp_ops(kernel, uniform_registers(kernel, (32, 1, 1)))
    return len(segments_of(kernel, inline))


@pytest.mark.parametrize("mask", ["-1", "0xffffffff"])
def test_a_whole_warp_shuffle_through_a_mask_register_starts_no_segment(mask):
    assert _segments(mask) == 1


def test_a_partial_mask_starts_segments():
    assert _segments("0xffff") == 3


def test_a_mask_register_written_twice_starts_segments():
    assert _segments("-1", "setp.lt.u32 %p3, %r1, 5;\n@%p3 mov.u32 %r5, 3;") == 3
