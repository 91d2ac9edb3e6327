"""Warp operations of sub-warp tiles (cooperative groups' tiled_partition<N>) on warp gangs:
each lane's member mask names its own tile (lane l of a 4-lane tile: 0xF << (l & ~3)), so the
masks differ across the warp. PTX ISA 9.7.9.6 (shfl.sync), 9.7.13.x (vote.sync,
bar.warp.sync): an executing thread waits only for the non-exited threads of *its* member
mask, so each tile completes on its own, even when the tiles arrive at different times."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import KernelExecutionError

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# a[t] in, 8 words per thread out. Tile masks come from %laneid as NVCC's cooperative groups
# make them. With `late` set, odd tiles first loop tile-index times, so the tiles reach the
# operations one after another.
TILES = """
.reg .pred %p<8>; .reg .b32 %r<40>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pout]; ld.param.u32 %r30, [late];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3; ld.global.u32 %r2, [%rd4];
mov.u32 %r3, %laneid;
and.b32 %r4, %r3, -4;
mov.u32 %r5, 15;
shl.b32 %r6, %r5, %r4;
shr.u32 %r7, %r3, 2; and.b32 %r8, %r7, %r30; setp.eq.u32 %p1, %r8, 1;
mov.u32 %r9, 0;
@!%p1 bra OPS;
LOOP: add.u32 %r9, %r9, 1; setp.lt.u32 %p2, %r9, %r7; @%p2 bra LOOP;
OPS:
bar.warp.sync %r6;
shfl.sync.bfly.b32 %r10|%p3, %r2, 2, 0x1C1F, %r6;
add.u32 %r11, %r10, %r2;
shfl.sync.bfly.b32 %r12, %r11, 1, 0x1C1F, %r6;
add.u32 %r13, %r12, %r11;
and.b32 %r14, %r2, 1; setp.eq.u32 %p4, %r14, 1;
vote.sync.ballot.b32 %r15, %p4, %r6;
vote.sync.all.pred %p5, %p4, %r6; selp.u32 %r16, 1, 0, %p5;
vote.sync.any.pred %p5, %p4, %r6; selp.u32 %r17, 1, 0, %p5;
vote.sync.uni.pred %p5, %p4, %r6; selp.u32 %r18, 1, 0, %p5;
shfl.sync.idx.b32 %r19, %r1, 3, 0x1C1F, %r6;
selp.u32 %r20, 1, 0, %p3;
mul.wide.u32 %rd5, %r1, 32; add.s64 %rd6, %rd2, %rd5;
st.global.v4.u32 [%rd6], {%r13, %r15, %r16, %r17};
st.global.v4.u32 [%rd6+16], {%r18, %r19, %r20, %r9};
ret;"""


def _run(a: np.ndarray, late: int, block: int) -> tuple[np.ndarray, object]:
    ptx = HEADER + (".visible .entry k(.param .u64 pa, .param .u64 pout, .param .u32 late)\n"
                    f"{{\n{TILES}\n}}\n")
    out = np.zeros((block, 8), np.uint32)
    binary = launch_on_cpu(ptx, LaunchConfig(grid=1, block=block), a, out, np.uint32(late))
    return out, binary


def _reference(a: np.ndarray, late: int) -> np.ndarray:
    t = np.arange(a.size)
    tile = t // 4
    sums = np.bincount(tile, weights=a).astype(np.uint64)[tile] & 0xFFFFFFFF
    odd = (a & 1).astype(np.uint32)
    ballot = np.zeros(a.size, np.uint32)
    for lane_t in t:
        first = lane_t - lane_t % 4
        ballot[lane_t] = sum(int(odd[u]) << (u % 32) for u in range(first, first + 4))
    every = np.array([odd[f:f + 4].all() for f in tile * 4], np.uint32)
    some = np.array([odd[f:f + 4].any() for f in tile * 4], np.uint32)
    uniform = every | (1 - some)
    last = tile * 4 + 3                       # shfl.idx 3 within the 4-lane segment
    lane_tile = t % 32 // 4
    loops = np.where((lane_tile & late) == 1, np.maximum(lane_tile, 1), 0)
    return np.stack([sums, ballot, every, some, uniform, last, np.ones_like(t), loops],
                    axis=1).astype(np.uint32)


@pytest.mark.parametrize(("late", "block"), [(0, 64), (1, 64), (1, 48)])
def test_tiles_of_four_complete_on_their_own(late, block):
    rng = np.random.default_rng(block + late)
    a = rng.integers(0, 1000, block).astype(np.uint32)
    a[:4] |= 1                                # a tile where every lane votes true
    out, binary = _run(a, late, block)
    assert binary.for_block((block, 1, 1)).gang_refusal is None
    np.testing.assert_array_equal(out, _reference(a, late))


def test_lane_outside_its_own_tile_mask_raises():
    """Lane 5 names tile 0 (0xF) instead of its own: undefined in PTX; ptxport says so."""
    body = """.reg .b32 %r<8>;
    mov.u32 %r1, %laneid; and.b32 %r2, %r1, -4; mov.u32 %r3, 15; shl.b32 %r4, %r3, %r2;
    setp.eq.u32 %p1, %r1, 5; @%p1 mov.u32 %r4, 15;
    shfl.sync.bfly.b32 %r5, %r1, 1, 0x1C1F, %r4;
    ret;"""
    ptx = HEADER + f".visible .entry k()\n{{\n.reg .pred %p<2>;\n{body}\n}}\n"
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    launch(stream, LaunchConfig(grid=1, block=32), kernel)
    with pytest.raises(KernelExecutionError, match="lane 5|thread 5"):
        stream.sync()
