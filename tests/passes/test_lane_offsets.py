"""passes/lane_offsets.py: which registers' lanes lie constant offsets apart, per block
shape, and which writes break that (a varying guard, a divergent branch, a product of
lanes, a widening)."""

from __future__ import annotations

from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.lane_forms import LaneForm, lane_forms, widening_guard
from ptxport.passes.lane_offsets import lane_offsets, tid_offsets
from ptxport.ptx.parser import parse

PTX = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
.reg .pred %p<3>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
.shared .align 4 .b32 s[512];
ld.param.u32 %r9, [n];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %tid.y;
shl.b32 %r3, %r1, 2;
mad.lo.s32 %r4, %r2, 64, %r3;
mov.u32 %r5, s;
add.s32 %r6, %r5, %r4;
mov.u32 %r7, %r1;
setp.eq.s32 %p1, %r1, 0;
@%p1 mov.u32 %r7, 5;
mul.lo.s32 %r8, %r1, %r2;
mul.lo.s32 %r10, %r1, %r9;
mul.wide.u32 %rd1, %r1, 4;
sub.s32 %r12, %r6, %r3;
@%p1 bra SKIP;
add.s32 %r11, %r1, 1;
SKIP:
st.shared.u32 [%r6], %r7;
st.shared.u32 [%r12], %r11;
ret;
}
"""


def _offsets(block):
    module = build(parse(PTX, "lane_offsets.ptx"))
    verify(module)
    found = lane_offsets(module.functions["k"], block)
    return {reg.name: c for reg, c in found.items()}


def test_a_16_by_16_tile():
    found = _offsets((16, 16, 1))
    assert found["%r1"] == tuple(i % 16 for i in range(32))
    assert found["%r2"] == tuple(i // 16 for i in range(32))
    assert found["%r6"] == tuple(4 * (i % 16) + 64 * (i // 16) for i in range(32))
    assert found["%r12"] == tuple(64 * (i // 16) for i in range(32))
    # a varying guard, a product of two lanes' values, a product with a value known only at
    # run time, a widening and a write in a divergent branch: no constant offsets
    for name in ("%r7", "%r8", "%r10", "%rd1", "%r11"):
        assert name not in found, name


def test_rows_of_whole_warps():
    found = _offsets((64, 2, 1))
    assert found["%r4"] == tuple(4 * i for i in range(32))
    assert "%r2" not in found           # uniform (a scalar), not a vector with offsets


def test_without_a_block_shape_nothing_from_tid():
    assert _offsets(None) == {}


def test_tid_offsets_of_block_shapes():
    assert tid_offsets((8, 8, 1), "y") == tuple(i // 8 for i in range(32))
    assert tid_offsets((4, 4, 4), "z") == tuple(i // 16 for i in range(32))
    assert tid_offsets((24, 4, 1), "x") is None       # rows straddle warps unevenly
    assert tid_offsets((16, 1, 2), "y") == (0,) * 32  # one row per plane: y alike
    assert tid_offsets((16, 3, 1), "y") is None       # a warp's rows may wrap into z


# Triton's vector add (BLOCK=1024, 4 warps): each thread's 4 contiguous elements at
# ((tid * 4) & 508) | (ctaid << 10), and 512 on; the index widened to 64 bits
TRITON = """.version 8.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 x, .param .u32 n)
{
.reg .b32 %r<13>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [x];
ld.param.u32 %r9, [n];
mov.u32 %r1, %ctaid.x;
shl.b32 %r2, %r1, 10;
mov.u32 %r3, %tid.x;
shl.b32 %r4, %r3, 2;
and.b32 %r5, %r4, 508;
or.b32 %r6, %r5, %r2;
or.b32 %r7, %r6, 512;
mul.wide.s32 %rd2, %r6, 4;
add.s64 %rd3, %rd1, %rd2;
cvt.u64.u32 %rd4, %r7;
or.b32 %r8, %r5, %r9;
shr.u32 %r10, %r3, 3;
and.b32 %r11, %r10, 12;
shr.u32 %r12, %r8, 3;
ret;
}
"""


def test_triton_index_arithmetic():
    module = build(parse(TRITON, "triton.ptx"))
    verify(module)
    found = {r.name: c for r, c in lane_offsets(module.functions["k"], (128, 1, 1)).items()}
    four = tuple(4 * i for i in range(32))
    for name in ("%r4", "%r5", "%r6", "%r7", "%rd4"):
        assert tuple(v - found[name][0] for v in found[name]) == four, name
    # the widened index, scaled to bytes: each lane's float4 16 bytes after the last
    assert tuple(v - found["%rd3"][0] for v in found["%rd3"]) == tuple(16 * i for i in range(32))
    # or with a value whose low bits may be set: no offsets claimed, nor for its shift
    assert "%r8" not in found and "%r12" not in found
    # an aligned register shifted right: tid >> 3 holds lane >> 3 over u, and Triton's
    # shared-memory slot of a warp, (tid >> 3) & 12, is alike in the warp's lanes
    assert found["%r10"] == tuple(i >> 3 for i in range(32))
    assert found["%r11"] == (0,) * 32


def test_unpacked_halves_keep_no_low_zeros():
    # n << 32 has 32 low zero bits, its high half (n) none known: or-ing that half with an
    # aligned index claims nothing
    ptx = TRITON.replace(".reg .b64 %rd<6>;", ".reg .b64 %rd<8>;").replace(
        "or.b32 %r8, %r5, %r9;", """cvt.u64.u32 %rd5, %r9;
shl.b64 %rd6, %rd5, 32;
mov.b64 {%r10, %r11}, %rd6;
or.b32 %r8, %r5, %r11;""").replace("shr.u32 %r10, %r3, 3;", "")
    module = build(parse(ptx, "triton.ptx"))
    verify(module)
    found = {r.name for r in lane_offsets(module.functions["k"], (128, 1, 1))}
    assert "%r8" not in found and "%r6" in found


FORMS = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<8>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, %tid.y;
mad.lo.s32 %r4, %r3, %r1, %r2;
mul.wide.s32 %rd2, %r4, 4;
add.s64 %rd3, %rd1, %rd2;
mul.lo.s32 %r5, %r2, %r1;
mov.u32 %r6, %ctaid.x;
mad.lo.s32 %r7, %r6, %r1, %r2;
cvt.u64.u32 %rd4, %r7;
ret;
}
"""


def _forms(block):
    module = build(parse(FORMS, "forms.ptx"))
    verify(module)
    kernel = module.functions["k"]
    found = lane_forms(kernel, block)
    insts = {i.spec.text + " " + i.operands[0].name: i for i in kernel.instructions()
             if i.operands and hasattr(i.operands[0], "name")}
    return {reg.name: form for reg, form in found.items()}, insts


def test_rows_of_a_run_time_width_are_per_half_warp_and_widened():
    found, insts = _forms((16, 16, 1))
    rows = tuple(i % 16 for i in range(32))
    # y * n + x: the rows any distance apart, consecutive within each half warp
    assert found["%r4"] == LaneForm(rows, halves=True)
    assert found["%rd2"] == LaneForm(tuple(4 * r for r in rows), halves=True, widened=True)
    assert found["%rd3"] == found["%rd2"]
    # x * n: lanes a run-time multiple (n, alike in the warp) of x's offsets apart
    assert found["%r5"] == LaneForm(rows, scaled=True)
    # ctaid.x * n (alike in every lane) + x: a plain form, then widened
    assert found["%r7"] == LaneForm(rows)
    assert found["%rd4"] == LaneForm(rows, widened=True)
    # none of them is one of lane_offsets' (exact) plain offsets
    plain = {r.name for r in lane_offsets(build(parse(FORMS, "forms.ptx")).functions["k"],
                                          (16, 16, 1))}
    assert {"%r4", "%rd2", "%rd3", "%rd4"}.isdisjoint(plain)
    # no lane's sum wraps while each reference lane's value leaves room for its half's
    assert widening_guard(insts["mul.wide.s32 %rd2"], found["%r4"]) == [
        (0, -(1 << 31), (1 << 31) - 1 - 15), (16, -(1 << 31), (1 << 31) - 1 - 15)]
    assert widening_guard(insts["cvt.u64.u32 %rd4"], found["%r7"]) == [
        (0, 0, (1 << 32) - 1 - 15)]


# A tree's index (Blelloch's up-sweep): offset * (2 * tid + 1) - 1, offset alike in the warp
SCALED = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
.reg .b32 %r<16>; .reg .b64 %rd<4>;
.shared .align 4 .b32 s[2048];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
shl.b32 %r3, %r2, 1;
add.s32 %r4, %r3, 1;
mul.lo.s32 %r5, %r1, %r4;
shl.b32 %r6, %r5, 2;
mov.u32 %r7, s;
add.s32 %r8, %r7, %r6;
add.s32 %r9, %r8, -4;
mul.lo.s32 %r10, %r6, 3;
add.s32 %r11, %r6, %r2;
add.s32 %r12, %r6, %r6;
cvt.u64.u32 %rd1, %r6;
mul.lo.s32 %r13, %r6, %r1;
ret;
}
"""


def test_products_with_a_value_alike_in_the_warp_are_scaled():
    module = build(parse(SCALED, "scaled.ptx"))
    verify(module)
    found = {reg.name: form for reg, form in lane_forms(module.functions["k"],
                                                         (64, 1, 1)).items()}
    # n * (2 * tid + 1): lanes 2 * n apart, then the byte offsets 8 * n apart
    assert found["%r5"] == LaneForm(tuple(2 * i for i in range(32)), scaled=True)
    eight = LaneForm(tuple(8 * i for i in range(32)), scaled=True)
    # sums with values alike in the warp (a variable, an immediate) keep the scaled form
    assert found["%r6"] == found["%r8"] == found["%r9"] == eight
    assert found["%r10"] == LaneForm(tuple(24 * i for i in range(32)), scaled=True)
    assert found["%r13"] == eight                  # scaled again by n: still u + s * c
    # s * c + tid, or two scales (s * c + s * c: maybe not one s): no form
    assert {"%r11", "%r12"}.isdisjoint(found)
    # a widening stays scaled, marked widened (its sums may wrap: gang/strided.py tests
    # lane 31 against lanes 0 and 1 at run time)
    assert found["%rd1"] == LaneForm(tuple(8 * i for i in range(32)), widened=True,
                                     scaled=True)
    # (a scaled form asks nothing of a widening's guard)
    insts = {i.operands[0].name: i for i in module.functions["k"].instructions()
             if i.operands and hasattr(i.operands[0], "name")}
    assert widening_guard(insts["%rd1"], eight) == []
