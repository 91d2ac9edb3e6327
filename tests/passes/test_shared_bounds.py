"""passes/shared_bounds.py: which shared-memory accesses stay inside one `.shared` variable
for a block shape, and what keeps an access unproven (a loop's counter, a register not
written on every path, a value known only at run time, an extern array, a 16-bit sum that
may wrap, a wider block)."""

from __future__ import annotations

from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.shared_bounds import inside, shared_bounds
from ptxport.ptx.parser import parse

# each access stores its own immediate (1..8), to be told apart
PTX = """.version 7.8
.target sm_80
.address_size 64
.extern .shared .align 4 .b8 dyn[];
.visible .entry k(.param .u32 n, .param .u64 bytes)
{
.reg .pred %p<3>; .reg .b32 %r<24>; .reg .b16 %rs<3>; .reg .b64 %rd<2>;
.shared .align 4 .b8 tile[1296];
ld.param.u32 %r9, [n];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %tid.y;
add.s32 %r3, %r1, 1;
mov.u32 %r4, tile;
mad.lo.s32 %r5, %r2, 72, %r4;
add.s32 %r6, %r5, 72;
shl.b32 %r7, %r3, 2;
add.s32 %r8, %r6, %r7;
st.shared.u32 [%r8], 1;
st.shared.u32 [%r8+-76], 2;
add.s32 %r10, %r8, %r9;
st.shared.u32 [%r10], 3;
mov.u32 %r11, dyn;
st.shared.u32 [%r11], 4;
setp.eq.s32 %p1, %r1, 0;
@%p1 bra SKIP;
mov.u32 %r12, %r8;
SKIP:
st.shared.u32 [%r12], 5;
mov.u32 %r13, %r8;
@%p1 mov.u32 %r13, tile;
st.shared.u32 [%r13+4], 6;
mov.u32 %r14, %r4;
LOOP:
st.shared.u32 [%r14], 7;
add.s32 %r14, %r14, 4;
setp.lt.u32 %p2, %r14, %r9;
@%p2 bra LOOP;
and.b32 %r15, %r9, 255;
shl.b32 %r16, %r15, 2;
add.s32 %r17, %r4, %r16;
st.shared.u32 [%r17], 8;
ld.param.u64 %rd1, [bytes];
ld.global.u8 %rs1, [%rd1];
mul.wide.u16 %r18, %rs1, 4;
add.s32 %r19, %r4, %r18;
st.shared.u32 [%r19], 9;
add.u16 %rs2, %rs1, 100;
mul.wide.u16 %r20, %rs2, 4;
add.s32 %r21, %r4, %r20;
st.shared.u32 [%r21], 10;
ret;
}
"""


def _bounds(block):
    module = build(parse(PTX, "shared_bounds.ptx"))
    verify(module)
    kernel = module.functions["k"]
    found = shared_bounds(kernel, block)
    return {inst.operands[1].value: found.get(inst) for inst in kernel.instructions()
            if inst.opcode == "st"}


def test_a_16_by_16_tile_with_its_halo():
    found = _bounds((16, 16, 1))
    # tile + 72 * (tid.y + 1) + 4 * (tid.x + 1): 76 .. 72 * 16 + 64
    assert found[1] == (76, 1216, 1296) and inside(found[1], 4)
    assert found[2] == (0, 1140, 1296) and inside(found[2], 4)
    # a guarded write keeps the register's earlier value: the union of both
    assert found[6] == (4, 1220, 1296) and inside(found[6], 4)
    # the masked byte offset of a run-time value: 0 .. 255 * 4
    assert found[8] == (0, 1020, 1296) and inside(found[8], 4)
    # a byte loaded from memory, times 4 (a histogram's bins[data[i]]): 0 .. 255 * 4
    assert found[9] == (0, 1020, 1296) and inside(found[9], 4)
    assert not inside(found[1], 84)      # an access wider than what is left of the tile


def test_what_stays_unproven():
    found = _bounds((16, 16, 1))
    assert found[3] is None      # plus a parameter: known only at run time
    assert found[4] is None      # an extern (dynamic) shared array: its size is the launch's
    assert found[5] is None      # written on one path only: the other reads an old slot
    assert found[7] is None      # a loop's pointer, written from itself
    assert found[10] is None     # a 16-bit sum, which may wrap before it is widened


def test_the_block_shape_bounds_tid():
    wide = _bounds((64, 16, 1))[1]
    assert wide == (76, 72 * 16 + 4 * 64, 1296) and not inside(wide, 4)
    # with no shape, %tid may be anything CUDA allows: past the tile
    assert not inside(_bounds(None)[1], 4)
