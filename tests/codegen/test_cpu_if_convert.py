"""If-conversion for warp gangs (passes/if_convert.py, gang/control.py's split): which regions
get guarded (in place, on a thread-index predicate; as a copy beside the branch, which the
warp takes when its lanes split), which stay branches, and that results and faults are the
same as with every branch kept and as thread by thread (a stencil's halos: 16x16 blocks,
edge blocks, nested ifs, an if/else, one store per half warp)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from tile_kernels import far_offset, module, run_tile

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.passes.if_convert import LIMIT, if_convert

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[y][x] = in[y][x] + (x == 0 ? in[y][x - 1] : 0) for a width x height grid, 16x16
# blocks; threads past the grid do nothing; x == 0 of the grid adds nothing
HALO = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 width,
                                     .param .u32 height)
{
.reg .pred %p<8>; .reg .b32 %r<12>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out];
ld.param.u32 %r1, [width]; ld.param.u32 %r2, [height];
mov.u32 %r3, %tid.x; mov.u32 %r4, %ctaid.x; shl.b32 %r5, %r4, 4; add.s32 %r6, %r5, %r3;
mov.u32 %r7, %tid.y; mov.u32 %r8, %ctaid.y; shl.b32 %r9, %r8, 4; add.s32 %r10, %r9, %r7;
setp.ge.s32 %p1, %r6, %r1; setp.ge.s32 %p2, %r10, %r2; or.pred %p3, %p1, %p2;
@%p3 bra DONE;
mad.lo.s32 %r11, %r10, %r1, %r6;
mul.wide.s32 %rd3, %r11, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.f32 %f1, [%rd4];
setp.ne.s32 %p4, %r3, 0;
@%p4 bra STORE;
setp.lt.s32 %p5, %r6, 1;
mov.f32 %f2, 0f00000000;
@%p5 bra ADD;
ld.global.f32 %f2, [%rd4+OFFSET];
ADD:
add.f32 %f1, %f1, %f2;
STORE:
add.s64 %rd5, %rd2, %rd3;
st.global.f32 [%rd5], %f1;
DONE:
ret;
}
"""

# if/else on a run-time value, and one shared address per half warp written by lanes 3 and 7
# of each half (the highest active lane's value stays, as thread by thread)
HALVES = HEADER + """.visible .entry k(.param .u64 out, .param .u32 limit)
{
.reg .pred %p<5>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
.shared .align 4 .b32 row[2];
ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [limit];
mov.u32 %r2, %tid.x; mov.u32 %r3, %tid.y;
shl.b32 %r4, %r3, 2; mov.u32 %r5, row; add.s32 %r6, %r5, %r4;
st.shared.u32 [%r6], 99;
bar.sync 0;
setp.ne.s32 %p1, %r2, 3; setp.ne.s32 %p2, %r2, 7; and.pred %p3, %p1, %p2;
@%p3 bra SKIP;
st.shared.u32 [%r6], %r2;
SKIP:
bar.sync 0;
ld.shared.u32 %r7, [%r6];
setp.lt.u32 %p4, %r2, %r1;
@%p4 bra SMALL;
mul.lo.u32 %r8, %r7, 1000;
bra JOIN;
SMALL:
add.u32 %r8, %r7, %r2;
JOIN:
mad.lo.u32 %r9, %r3, 16, %r2;
mul.wide.u32 %rd2, %r9, 4; add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r8;
ret;
}
"""


def _module(text: str):
    return module(text, "if_convert.ptx")


def _halo(cpu_options, width: int, height: int, offset: int | None = -4, **options):
    """(None: an offset far from the row, in no allocation: tile_kernels.far_offset)"""
    cpu_options(**options)
    ptx = far_offset(HALO) if offset is None else HALO.replace("OFFSET", str(offset))
    return run_tile(ptx, width, height)


def test_a_thread_index_if_is_guarded_in_place_and_a_bounds_if_gets_a_copy():
    kernel = _module(HALO.replace("OFFSET", "-4")).functions["k"]
    converted, notes, linear, _ = if_convert(kernel, (16, 16, 1))
    text = "\n".join(notes)
    # `if (x == 0)` (with its inner `if (x >= 1)`) guarded where it was; the bounds test
    # that returns is no join; the module's own kernel is untouched
    assert "guarded the region after" in text
    assert not any(i.opcode == "bra" and i.guard is not None and i.guard.name == "%p4"
                   for i in converted.instructions())
    assert any(i.opcode == "bra" and i.guard is not None and i.guard.name == "%p4"
               for i in kernel.instructions())
    assert linear == {}
    kernel = _module(HALVES).functions["k"]
    converted, notes, linear, _ = if_convert(kernel, (16, 2, 1))
    # the store by lanes 3 and 7 in place, and the if/else on `limit` (both sides run when
    # the lanes split)
    assert linear == {} and len(notes) == 2
    assert not any(i.opcode == "bra" and i.guard is not None for i in converted.instructions())


def test_regions_with_a_barrier_or_too_long_stay_branches():
    body = "\n".join(["add.u32 %r4, %r4, 1;"] * (LIMIT + 1))
    long = HEADER + f""".visible .entry k(.param .u64 out)
{{
.reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r4, 0;
setp.eq.u32 %p1, %r1, 0;
@%p1 bra SKIP;
{body}
SKIP:
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r4;
ret;
}}
"""
    kernel = _module(long).functions["k"]
    assert if_convert(kernel, (32, 1, 1))[0] is kernel
    barrier = long.replace(body, "bar.sync 0;")
    kernel = _module(barrier).functions["k"]
    assert if_convert(kernel, (32, 1, 1))[0] is kernel


@pytest.mark.parametrize("width,height", [(64, 32), (37, 21)])
def test_halos_agree_with_branches_and_threads(cpu_options, width, height):
    src, out = _halo(cpu_options, width, height)
    want = src.copy()
    edge = np.zeros_like(src)
    edge[:, 16::16] = src[:, 15:-1:16]
    np.testing.assert_array_equal(out, want + edge)
    for options in ({"if_convert": False}, {"gang": False}):
        np.testing.assert_array_equal(_halo(cpu_options, width, height, **options)[1], out)


def test_a_guarded_halo_out_of_bounds_names_the_same_thread(cpu_options, one_worker):
    # the halo reads far from its row, in no allocation: the first bad thread (block 1's
    # thread 0; block 0's x == 0 reads nothing) is the same with and without conversion
    # (on one worker: every block but column 0's faults)
    messages = []
    for options in ({}, {"if_convert": False}, {"gang": False}):
        with pytest.raises(IllegalAddressError) as caught:
            _halo(cpu_options, 64, 64, None, **options)
        # (each run's buffers lie elsewhere: the address aside)
        messages.append(re.sub(r"0x[0-9a-f]+", "ADDRESS", str(caught.value)))
    assert messages[0] == messages[1] == messages[2]
    assert "block (1, 0, 0), thread 0;" in messages[0]


@pytest.mark.parametrize("options", [{}, {"if_convert": False}, {"gang": False}])
def test_one_address_per_half_warp_keeps_the_highest_lane(cpu_options, options):
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(HALVES, code_type="ptx").compile("native").get_kernel("k")
    out = dev.allocate(32 * 4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, out, np.uint32(5))
    got = np.empty(32, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    x = np.tile(np.arange(16, dtype=np.uint32), 2)
    want = np.where(x < 5, 7 + x, 7 * 1000)
    np.testing.assert_array_equal(got, want)


# lanes 0-15 read in[0]; lanes 16-31 (threadIdx.y == 1) would read 60 GiB further (a row of
# the run-time width 0xF0000000), in no allocation, but skip it: guarded in place, a half without
# active lanes reads nothing
FAR = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 width)
{
.reg .pred %p<2>; .reg .b32 %r<7>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r6, [width];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
mul.lo.s32 %r5, %r2, %r6;
mul.wide.u32 %rd4, %r5, 4;
add.s64 %rd5, %rd1, %rd4;
mov.u32 %r3, 7;
setp.ne.u32 %p1, %r2, 0;
@%p1 bra SKIP;
ld.global.u32 %r3, [%rd5];
SKIP:
mad.lo.u32 %r4, %r2, 16, %r1;
mul.wide.u32 %rd6, %r4, 4; add.u64 %rd7, %rd2, %rd6;
st.global.u32 [%rd7], %r3;
ret;
}
"""


@pytest.mark.parametrize("options", [{}, {"if_convert": False}, {"gang": False}])
def test_a_guarded_half_without_lanes_reads_nothing(cpu_options, options):
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(FAR, code_type="ptx").compile("native").get_kernel("k")
    src = dev.allocate(4, stream=stream)
    src.copy_from(np.array([42], np.uint32), stream=stream)
    out = dev.allocate(32 * 4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, src, out, np.uint32(0xF0000000))
    got = np.empty(32, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(got, [42] * 16 + [7] * 16)


# `if (i < n) v = x[i]` (lanes 4 bytes apart) or `if (i < n) v = x[2 * i]` (8 apart)
BOUNDED = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
{
.reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x; mad.lo.s32 %r4, %r3, 32, %r2;
mul.wide.s32 %rd3, %r4, STRIDE; add.s64 %rd4, %rd1, %rd3;
mov.u32 %r5, 0;
setp.ge.s32 %p1, %r4, %r1;
@%p1 bra SKIP;
ld.global.u32 %r5, [%rd4];
SKIP:
mul.wide.s32 %rd5, %r4, 4; add.s64 %rd6, %rd2, %rd5; st.global.u32 [%rd6], %r5;
ret;
}
"""


def test_one_coalesced_load_is_guarded_in_place_and_a_strided_one_gets_a_copy():
    for stride, in_place in ((4, True), (8, False)):
        kernel = _module(BOUNDED.replace("STRIDE", str(stride))).functions["k"]
        converted, notes, linear, _ = if_convert(kernel, (32, 1, 1))
        assert (linear == {}) == in_place, notes
        assert len(notes) == 1


@pytest.mark.parametrize("stride", [4, 8])
@pytest.mark.parametrize("options", [{}, {"if_convert": False}, {"gang": False}])
def test_a_bounds_test_that_splits_a_warp(cpu_options, options, stride):
    # n = 40: warp 0 all in, warp 1 split (the strided load's copy beside its branch)
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(BOUNDED.replace("STRIDE", str(stride)), code_type="ptx").compile(
        "native").get_kernel("k")
    x = np.arange(128, dtype=np.uint32) + 1
    xs, out = dev.allocate(x.nbytes, stream=stream), dev.allocate(64 * 4, stream=stream)
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=32), kernel, xs, out, np.uint32(40))
    got = np.empty(64, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    i = np.arange(64)
    np.testing.assert_array_equal(got, np.where(i < 40, x[(stride // 4) * i], 0))
