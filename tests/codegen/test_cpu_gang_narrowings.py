"""A 64-bit copy of %tid.x truncated back to 32 bits, as NVRTC 13.0 makes transpose's
(`cvt.u64.u32 %rd2, %tid.x` kept for the padded column's `mul.lo.s64 %rd, %rd2, 132`, then
`cvt.u32.u64 %r, %rd2` for the output column's guard, where 13.5 reads %tid.x again):
u + c[i] modulo 2**32 is (u modulo 2**32) + c[i], so passes/lane_offsets.py and lane_forms
keep the lanes' offsets through a truncating cvt (the guard then is one of a register of
lane offsets, not one per lane), and passes/shared_bounds.py keeps an integer's range
through a cvt between integer types that both hold it (the padded column's 64-bit shared
addresses are proven inside the tile). A saturating cvt clamps: no form. A source of unknown
range (tx plus a parameter) proves nothing; an access past the tile faults at its first bad
thread."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.passes.lane_forms import lane_forms
from ptxport.passes.lane_offsets import lane_offsets
from ptxport.passes.shared_bounds import shared_bounds
from ptxport.ptx.parser import parse

HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"
BLOCK = (32, 32, 1)

# tile[ty][tx] = in[32 ty + tx]; if (32 ctaid + tx < n) out[32 ty + tx] = tile[tx][ty]
TILE = HEADER + """.shared .align 4 .b8 tile[4224];
.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n, .param .u32 z)
{
.reg .pred %p<2>; .reg .b32 %r<12>; .reg .f32 %f<3>; .reg .b64 %rd<24>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd6, [out];
ld.param.u32 %r10, [n]; ld.param.u32 %r11, [z];
mov.u32 %r1, %tid.x; mov.u32 %r4, %tid.y;
mov.u32 %r2, %ctaid.x; shl.b32 %r3, %r2, 5;
SOURCE
cvt.u64.u32 %rd2, %r1;
mul.wide.u32 %rd8, %r4, 132;
mov.u64 %rd9, tile;
add.s64 %rd10, %rd9, %rd8;
mul.wide.u32 %rd11, %r1, 4;
add.s64 %rd3, %rd10, %rd11;
shl.b32 %r5, %r4, 5;
add.s32 %r6, %r5, %r1;
cvta.to.global.u64 %rd12, %rd1;
mul.wide.u32 %rd13, %r6, 4;
add.s64 %rd14, %rd12, %rd13;
ld.global.f32 %f1, [%rd14];
st.shared.f32 [%rd3], %f1;
bar.sync 0;
cvt.u32.u64 %r7, %rd2;
add.s32 %r8, %r3, %r7;
setp.ge.s32 %p1, %r8, %r10;
mul.lo.s64 %rd20, %rd2, 132;
add.s64 %rd22, %rd9, %rd20;
mul.wide.u32 %rd23, %r4, 4;
add.s64 %rd5, %rd22, %rd23;
@%p1 bra DONE;
ld.shared.f32 %f2, [%rd5];
cvta.to.global.u64 %rd15, %rd6;
add.s64 %rd16, %rd15, %rd13;
st.global.f32 [%rd16], %f2;
DONE:
ret;
}
"""
EXACT = TILE.replace("SOURCE\n", "")
# tx + z: the same lanes' offsets, its range not known when compiling
UNKNOWN = TILE.replace("SOURCE", "add.s32 %r1, %r1, %r11;")
# a saturating truncation clamps each lane: no offsets
SATURATED = EXACT.replace("cvt.u32.u64 %r7", "cvt.sat.u32.u64 %r7")


def _kernel(ptx: str):
    return build(parse(ptx)).functions["k"]


def test_a_truncation_keeps_the_lanes_offsets():
    plain = {r.name: c for r, c in lane_offsets(_kernel(EXACT), BLOCK).items()}
    assert plain["%r7"] == plain["%r8"] == tuple(range(32))
    forms = {r.name: f for r, f in lane_forms(_kernel(EXACT), BLOCK).items()}
    assert forms["%r8"].offsets == tuple(range(32)) and not forms["%r8"].widened
    # tx + z's widening may wrap inside the warp: its truncation's form waits on that test
    unknown = {r.name: f for r, f in lane_forms(_kernel(UNKNOWN), BLOCK).items()}
    assert unknown["%r8"].offsets == tuple(range(32)) and unknown["%r8"].widened
    saturated = lane_forms(_kernel(SATURATED), BLOCK)
    assert not {"%r7", "%r8"} & {r.name for r in saturated}
    assert not {"%r7", "%r8"} & {r.name for r in lane_offsets(_kernel(SATURATED), BLOCK)}


def test_64_bit_shared_addresses_through_a_cvt_are_proven_inside():
    # the store at tile + 132 ty + 4 tx and the load at tile + 132 tx + 4 ty
    assert sorted(shared_bounds(_kernel(EXACT), BLOCK).values()) == [(0, 4216, 4224)] * 2
    assert not shared_bounds(_kernel(UNKNOWN), BLOCK)


def test_the_tile_runs_as_cuda_would():
    src = np.arange(1024, dtype=np.float32)
    tile = src.reshape(32, 32)
    for ptx in (EXACT, UNKNOWN, SATURATED):
        out = np.zeros_like(src)
        binary = launch_on_cpu(ptx, LaunchConfig(grid=1, block=BLOCK[:2]), src, out,
                               np.uint32(20), np.uint32(0))
        assert binary.gang_refusal is None
        want = np.zeros((32, 32), np.float32)
        want[:, :20] = tile.T[:, :20]
        assert (out.reshape(32, 32) == want).all()


def test_a_64_bit_shared_read_past_the_tile_faults():
    # two rows further: past the tile's 4224 bytes from column 30 on
    ptx = EXACT.replace("ld.shared.f32 %f2, [%rd5]", "ld.shared.f32 %f2, [%rd5+264]")
    assert (264, 4480, 4224) in shared_bounds(_kernel(ptx), BLOCK).values()
    line = next(n for n, text in enumerate(ptx.splitlines(), 1) if "+264]" in text)
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {line} in block \(0, 0, 0\), "
                       r"thread 30;"):
        launch_on_cpu(ptx, LaunchConfig(grid=1, block=BLOCK[:2]), np.zeros(1024, np.float32),
                      np.zeros(1024, np.float32), np.uint32(32), np.uint32(0))
