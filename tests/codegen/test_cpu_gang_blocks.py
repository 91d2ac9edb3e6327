"""Per-warp costs of warp gangs in blocks of many warps (a stencil's 16x16 tiles, a block scan):
if-converted region blocks that a warp skips where none of its lanes enters them
(passes/if_convert.py's skippable runs), addresses alike in every lane known when compiling
(gang/classify.py), and guarded accesses checked with their base register's group
(classify.checked_group). Results and faults are the same as with every branch kept and as
thread by thread."""

from __future__ import annotations

import re

import numpy as np
import pytest
from tile_kernels import far_offset, module, run_tile

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.passes.if_convert import if_convert

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[y][x] = in[y][x] + (threadIdx.y == 0 && y > 0 ? in[y - 1][x] : 0) on a width x height
# grid in 16x16 blocks: the row above is read by the first row of each block only (warp 0's
# lanes 0-15), its address computed in the region (unguarded, as if_convert speculates it)
ABOVE = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 width,
                                     .param .u32 height)
{
.reg .pred %p<8>; .reg .b32 %r<16>; .reg .f32 %f<4>; .reg .b64 %rd<10>;
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
mov.f32 %f2, 0f00000000;
setp.ne.s32 %p4, %r7, 0;
@%p4 bra ADD;
setp.lt.s32 %p5, %r10, 1;
@%p5 bra ADD;
add.s32 %r12, %r10, -1;
mad.lo.s32 %r13, %r12, %r1, %r6;
mul.wide.s32 %rd6, %r13, 4;
add.s64 %rd7, %rd1, %rd6;
ld.global.f32 %f2, [%rd7+OFFSET];
ADD:
add.f32 %f1, %f1, %f2;
add.s64 %rd5, %rd2, %rd3;
st.global.f32 [%rd5], %f1;
DONE:
ret;
}
"""


def _module(text: str):
    return module(text, "blocks.ptx")


def _above(cpu_options, width: int, height: int, offset: int | None = 0, **options):
    """(None: an offset far from the row, in no allocation: tile_kernels.far_offset)"""
    cpu_options(**options)
    ptx = far_offset(ABOVE) if offset is None else ABOVE.replace("OFFSET", str(offset))
    return run_tile(ptx, width, height)


def test_a_thread_index_region_is_a_skippable_run_per_block():
    kernel = _module(ABOVE.replace("OFFSET", "0")).functions["k"]
    converted, notes, linear, skips = if_convert(kernel, (16, 16, 1))
    assert linear == {} and len(notes) == 1, notes
    assert "skippable run" in notes[0]
    # each run starts at an instruction of the converted kernel, under a predicate written
    # before it, and one of them holds the region's load
    code = list(converted.instructions())
    where = {id(inst): i for i, inst in enumerate(code)}
    loads = []
    for first, (predicate, length) in skips.items():
        start = where[first]
        assert start + length <= len(code)
        assert any(predicate in inst.operands[:1] for inst in code[:start])
        loads += [inst for inst in code[start:start + length] if inst.opcode == "ld"]
    assert len(loads) == 1 and loads[0].guard is not None


@pytest.mark.parametrize("width,height", [(64, 48), (37, 21)])
def test_rows_above_agree_with_branches_and_threads(cpu_options, width, height):
    src, out = _above(cpu_options, width, height)
    want = src.copy()
    rows = np.arange(height)
    first = (rows % 16 == 0) & (rows > 0)
    want[first] += src[rows[first] - 1]
    np.testing.assert_array_equal(out, want)
    for options in ({"if_convert": False}, {"gang": False}):
        np.testing.assert_array_equal(_above(cpu_options, width, height, **options)[1], out)


def test_a_skipped_region_out_of_bounds_names_the_same_thread(cpu_options, one_worker):
    # the row above is read far from its place, in no allocation: block (0, 1)'s thread 0
    # is the first that reads it, with or without conversion (on one worker: blocks (0, 1)
    # and (1, 1) both fault, and with two workers under load (1, 1) was once reported)
    messages = []
    for options in ({}, {"if_convert": False}, {"gang": False}):
        with pytest.raises(IllegalAddressError) as caught:
            _above(cpu_options, 32, 48, None, **options)
        messages.append(re.sub(r"0x[0-9a-f]+", "ADDRESS", str(caught.value)))
    assert messages[0] == messages[1] == messages[2]
    assert "block (0, 1, 0), thread 0;" in messages[0]


# each warp's lanes with lane % 4 == 0 write their lane number to totals[warp] (shared) and
# threads below 5 write theirs to out[ctaid] (global): one address per warp, alike in every
# lane, the highest active lane's value stays (as thread by thread); after the barrier every
# lane reads totals[warp]
ONE_ADDRESS = HEADER + """.visible .entry k(.param .u64 out, .param .u64 firsts)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 4 .b32 totals[32];
ld.param.u64 %rd1, [out]; ld.param.u64 %rd2, [firsts];
mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %ctaid.x;
and.b32 %r4, %r1, 31; shr.u32 %r5, %r1, 5;
shl.b32 %r6, %r5, 2; mov.u32 %r7, totals; add.s32 %r8, %r7, %r6;
and.b32 %r9, %r4, 3; setp.ne.u32 %p1, %r9, 0;
@%p1 bra STORED;
st.shared.u32 [%r8], %r4;
STORED:
bar.sync 0;
setp.ge.u32 %p2, %r1, 5;
@%p2 bra READ;
mul.wide.u32 %rd3, %r3, 4; add.u64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r1;
READ:
ld.shared.u32 %r10, [%r8];
mad.lo.u32 %r11, %r3, %r2, %r1;
mul.wide.u32 %rd5, %r11, 4; add.u64 %rd6, %rd1, %rd5;
st.global.u32 [%rd6], %r10;
ret;
}
"""


@pytest.mark.parametrize("block", [64, 48])
@pytest.mark.parametrize("options", [{}, {"if_convert": False}, {"gang": False}])
def test_one_address_alike_in_every_lane(cpu_options, options, block):
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ONE_ADDRESS, code_type="ptx").compile("native").get_kernel("k")
    grid = 3
    out = dev.allocate(grid * block * 4, stream=stream)
    firsts = dev.allocate(grid * 4, stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, out, firsts)
    got, got_firsts = np.empty(grid * block, np.uint32), np.empty(grid, np.uint32)
    out.copy_to(got, stream=stream)
    firsts.copy_to(got_firsts, stream=stream)
    stream.sync()
    lanes_in_warp = [min(32, block - 32 * w) for w in range((block + 31) // 32)]
    # (the highest lane with lane % 4 == 0 among the warp's threads)
    per_warp = [(n - 1) // 4 * 4 for n in lanes_in_warp]
    want = np.concatenate([[per_warp[t // 32] for t in range(block)]] * grid)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_firsts, [4] * grid)


# out[linear block][thread] = ctaid.x | ctaid.y << 8 | ctaid.z << 16; with a barrier (warp
# gangs' rounds, run_blocks of gang/rounds.py) or without (the plain loop of entry.py)
CTAID = HEADER + """.visible .entry k(.param .u64 out)
{
.reg .b32 %r<16>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ctaid.y; mov.u32 %r3, %ctaid.z;
mov.u32 %r4, %nctaid.x; mov.u32 %r5, %nctaid.y; mov.u32 %r6, %tid.x; mov.u32 %r7, %ntid.x;
mad.lo.u32 %r8, %r3, %r5, %r2; mad.lo.u32 %r9, %r8, %r4, %r1; mad.lo.u32 %r10, %r9, %r7, %r6;
shl.b32 %r11, %r2, 8; shl.b32 %r12, %r3, 16; or.b32 %r13, %r1, %r11; or.b32 %r14, %r13, %r12;
BARRIER
mul.wide.u32 %rd2, %r10, 4; add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r14;
ret;
}
"""


@pytest.fixture
def workers():
    from ptxport.runtime.backends.cpu import executor
    yield executor.set_workers
    executor.set_workers(None)


@pytest.mark.parametrize("options", [{}, {"gang": False}])
@pytest.mark.parametrize("barrier", ["", "bar.sync 0;"])
@pytest.mark.parametrize("count", [1, 3])
def test_each_block_sees_its_ctaid_across_chunks(cpu_options, workers, options, barrier,
                                                 count):
    # a grid of 7 x 5 x 3 blocks in chunks (the counting on of %ctaid from a chunk's first
    # block: rows and planes wrap inside chunks), each block of 64 threads
    cpu_options(**options)
    workers(count)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(CTAID.replace("BARRIER", barrier), code_type="ptx").compile(
        "native").get_kernel("k")
    grid, threads = (7, 5, 3), 64
    blocks = grid[0] * grid[1] * grid[2]
    out = dev.allocate(blocks * threads * 4, stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=threads), kernel, out)
    got = np.empty(blocks * threads, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    z, y, x = np.meshgrid(*(np.arange(n, dtype=np.uint32) for n in grid[::-1]), indexing="ij")
    want = np.repeat((x | y << 8 | z << 16).ravel(), threads)
    np.testing.assert_array_equal(got, want)
