"""Global ranges tested once a block (passes/block_checks.py, gang/block_tests.py,
CpuOptions.block_checks): a 2D kernel whose loads (before a barrier) and store (after it)
have addresses affine in tid.x and tid.y. The pass finds them (and leaves an address it
cannot follow alone); results agree with the test and without it, where it holds for
every block and where it fails for some (a partial last column of blocks reads past its
rows); a load outside its allocation faults at the same thread, with the same error, with
the test, without it and thread by thread, and nothing is stored: the block's test fails
and its warps check themselves."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.passes.block_checks import block_checks
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# x = ctaid.x * 16 + tid.x, y likewise; where x < w and y < h:
# out[y * w + x] = in[y * w + x] + in[y * w + x + 1] (the loads before the barrier, the
# store after it)
PAIRS = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 w,
                                    .param .u32 h)
{
.reg .b32 %r<12>; .reg .b64 %rd<6>; .reg .pred %p<4>; .reg .f32 %f<4>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out];
ld.param.u32 %r1, [w]; ld.param.u32 %r2, [h];
mov.u32 %r3, %ctaid.x; mov.u32 %r4, %tid.x; shl.b32 %r5, %r3, 4; add.s32 %r6, %r5, %r4;
mov.u32 %r7, %ctaid.y; mov.u32 %r8, %tid.y; shl.b32 %r9, %r7, 4; add.s32 %r10, %r9, %r8;
setp.lt.s32 %p1, %r6, %r1; setp.lt.s32 %p2, %r10, %r2; and.pred %p3, %p1, %p2;
mad.lo.s32 %r11, %r10, %r1, %r6;
mul.wide.s32 %rd3, %r11, 4;
add.s64 %rd4, %rd1, %rd3;
add.s64 %rd5, %rd2, %rd3;
mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000;
@%p3 ld.global.f32 %f1, [%rd4];
@%p3 ld.global.f32 %f2, [%rd4+4];
bar.sync 0;
@!%p3 bra DONE;
add.f32 %f3, %f1, %f2;
st.global.f32 [%rd5], %f3;
DONE:
ret;
}
"""


def _kernel(source: str):
    return build(parse(source)).functions["k"]


def test_the_loads_and_the_store_get_one_test():
    kernel = _kernel(PAIRS)
    f, notes, found, _ = block_checks(kernel, (16, 16, 1), {})
    assert f is not kernel and notes == ["3 global access(es) in 2 range(s) tested once a "
                                         "block"]
    assert len(found.tests) == 1 and len(found.checked) == 3
    # the marker first (the verdict known before any access it covers)
    assert id(f.blocks[0].instructions[0]) in found.tests


def test_no_test_for_one_warp_nor_for_an_address_it_cannot_follow():
    kernel = _kernel(PAIRS)
    assert block_checks(kernel, (32, 1, 1), {})[0] is kernel
    # the index loaded from memory: not affine in the thread index
    loaded = PAIRS.replace("mad.lo.s32 %r11, %r10, %r1, %r6;",
                           "ld.global.u32 %r11, [%rd2];")
    # (nor the index's own load, from a parameter: every thread's address alike, no
    # consecutive lanes to send to a fast path)
    assert not block_checks(_kernel(loaded), (16, 16, 1), {})[2].checked
    # every second element (a Blelloch scan's pairs): lanes not consecutive, no test
    pairs = PAIRS.replace("mul.wide.s32 %rd3, %r11, 4;", "mul.wide.s32 %rd3, %r11, 8;")
    assert not block_checks(_kernel(pairs), (16, 16, 1), {})[2].checked
    # written twice: its value is not one form
    twice = PAIRS.replace("mul.wide.s32 %rd3, %r11, 4;",
                          "mul.wide.s32 %rd3, %r11, 4;\nadd.s32 %r11, %r11, 1;\n"
                          "mul.wide.s32 %rd3, %r11, 4;")
    assert not block_checks(_kernel(twice), (16, 16, 1), {})[2].checked


def _pairs(w: int, h: int, words: int | None = None, planes: int = 1):
    """PAIRS on a w x h grid of floats (`words` in `in`: w * h + 1 by default; `planes`
    grid planes, each doing the same); (out, the expected out, the launch's
    IllegalAddressError or None)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIRS, code_type="ptx").compile("native").get_kernel("k")
    n = w * h + 1 if words is None else words
    src = (np.arange(w * h + 1, dtype=np.float32) % 97) + 1
    bufs = [dev.allocate(4 * n, stream=stream), dev.allocate(4 * w * h, stream=stream)]
    bufs[0].copy_from(src[:n], stream=stream)
    bufs[1].copy_from(np.zeros(w * h, np.float32), stream=stream)
    fault = None
    try:
        launch(stream, LaunchConfig(grid=((w + 15) // 16, (h + 15) // 16, planes), block=(16, 16)),
               kernel, bufs[0], bufs[1], np.uint32(w), np.uint32(h))
        stream.sync()
    except IllegalAddressError as e:
        fault = e
    out = np.empty(w * h, np.float32)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return out.reshape(h, w), (src[:w * h] + src[1:]).reshape(h, w), fault


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("w, h", [(48, 32), (40, 24), (16, 48)])
def test_sums_agree_with_the_test_and_without(cpu_options, on, w, h):
    # 40 x 24: the last column's and row's blocks reach past the grid (their threads past
    # it do nothing): their test fails, the others' holds
    cpu_options(block_checks=on)
    out, expected, fault = _pairs(w, h)
    assert fault is None and (out == expected).all()


# warps run each load for all their lanes in PTX order: tid (11, 15) (thread 251) at the
# first load (line 18); thread by thread, thread 250 runs both loads before 251 runs any:
# its second (line 19) reads past the end first
@pytest.mark.parametrize("how, where", [
    (dict(block_checks=True), "at line 18 in block (2, 2, 0), thread 251;"),
    (dict(block_checks=False), "at line 18 in block (2, 2, 0), thread 251;"),
    (dict(gang=False), "at line 19 in block (2, 2, 0), thread 250;")])
def test_a_load_past_the_end_faults_at_its_thread_storing_nothing(cpu_options, one_worker,
                                                                  how, where):
    # `in` holds w * h - 5 floats: the last block's threads from x = 42 in its last row
    # read past it; the blocks before stored theirs, this one nothing (its store is after
    # the barrier). One worker runs it after blocks that passed: a verdict byte not zeroed
    # where a block starts (rounds.py) would let it skip its checks and read silently
    cpu_options(**how)
    w = h = 48
    out, expected, fault = _pairs(w, h, w * h - 5)
    assert fault is not None
    message = str(fault)
    assert "read 4 bytes" in message and where in message, message
    assert (out[:32] == expected[:32]).all() and (out[:, :32] == expected[:, :32]).all()
    assert (out[32:, 32:] == 0).all()


def test_a_call_test_over_the_blocks_of_a_call():
    # the same ranges with %ctaid an axis of their forms (its registers the lowering
    # writes), covering the same accesses
    kernel = _kernel(PAIRS)
    f, _, found, _ = block_checks(kernel, (16, 16, 1), {})
    (code, ranges, call), = found.tests.values()
    assert call is not None
    call_code, call_ranges, corners, extents = call
    assert len(call_ranges) == len(ranges) == 2
    assert [r.type.name for r in corners + extents] == ["u32"] * 3 + ["s64"] * 3
    # the box's %ctaid, not the block's, read by the call test
    assert not any(i.opcode == "mov" and getattr(i.operands[1], "name", "") == "%ctaid"
                   for i in call_code)


@pytest.mark.parametrize("w, h, planes", [(128, 64, 1), (40, 352, 1), (16, 32, 32)])
def test_sums_agree_in_calls_of_several_blocks(cpu_options, one_worker, w, h, planes):
    # one worker runs blocks // 16 a call: 128 x 64, runs of 2 in a row (the call test
    # holds where the run is inside); 40 x 352, calls of 4 over rows of 3 blocks (its box
    # whole rows); 16 x 32 in 32 planes, calls of 4 over planes of 2 blocks (whole planes)
    cpu_options(block_checks=True)
    out, expected, fault = _pairs(w, h, planes=planes)
    assert fault is None and (out == expected).all()


@pytest.mark.parametrize("how", [dict(block_checks=True), dict(block_checks=False)])
def test_a_load_past_the_end_faults_in_a_call_of_several_blocks(cpu_options, one_worker,
                                                                how):
    # 128 x 128, one worker: calls of 4 blocks, the last (4..7, 7); `in` 5 floats short:
    # block (7, 7)'s threads from x = 122 in its last row read past it. The call's test
    # fails (a box of its first block alone would pass it, and block (7, 7) would read
    # silently); each block tests itself, (4..6, 7) pass and store, (7, 7) faults
    cpu_options(**how)
    w = h = 128
    out, expected, fault = _pairs(w, h, w * h - 5)
    assert fault is not None
    message = str(fault)
    assert "read 4 bytes" in message and "in block (7, 7, 0), thread 251;" in message, message
    assert (out[:112] == expected[:112]).all() and (out[:, :112] == expected[:, :112]).all()
    assert (out[112:, 112:] == 0).all()
