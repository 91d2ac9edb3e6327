"""widened.py's per-half no-wrap test as a branch of its own before the range check, where no
other access relies on it (an access in no group, or alone in its group: a stencil's out[]
store; here a guarded store, in no group): a store whose half wraps faults at its first
wrapped lane with nothing stored, and with only the wrapped lanes storing, each stores its
own element. In a group of two loads (where the reasoning does not apply) the test stays an
`and` with the group's answer and each load's: where one half wraps and the buffer holds
the unwrapped range (the range check passes), the first wrapped lane faults."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import allocate_alone
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# t = tid.y * w + tid.x (w = 16: rows of 16); for t >= lo: p[widen(t + b)] = t (the store
# alone in its group)
STORE = HEADER + """.visible .entry k(.param .u64 p, .param .u32 b, .param .u32 lo,
                                    .param .u32 w)
{
.reg .b32 %r<8>; .reg .b64 %rd<5>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [b]; ld.param.u32 %r2, [lo];
ld.param.u32 %r7, [w];
mov.u32 %r3, %tid.x; mov.u32 %r4, %tid.y;
mad.lo.s32 %r5, %r4, %r7, %r3;
add.s32 %r6, %r5, %r1;
mul.wide.s32 %rd2, %r6, 4;
add.s64 %rd3, %rd1, %rd2;
setp.ge.u32 %p1, %r5, %r2;
@%p1 st.global.u32 [%rd3], %r5;
ret;
}
"""

# (t as in STORE) out[t] = p[widen(t + b)] + p[widen(t + b) + 64] (two loads of one group;
# lo unused)
PAIR = HEADER + """.visible .entry k(.param .u64 p, .param .u64 out, .param .u32 b,
                                   .param .u32 lo, .param .u32 w)
{
.reg .b32 %r<11>; .reg .b64 %rd<7>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p]; ld.param.u64 %rd5, [out]; ld.param.u32 %r1, [b];
ld.param.u32 %r2, [lo]; ld.param.u32 %r10, [w];
mov.u32 %r3, %tid.x; mov.u32 %r4, %tid.y;
mad.lo.s32 %r5, %r4, %r10, %r3;
add.s32 %r6, %r5, %r1;
mul.wide.s32 %rd2, %r6, 4;
add.s64 %rd3, %rd1, %rd2;
mov.u32 %r7, 7; mov.u32 %r8, 0;
setp.ge.u32 %p1, %r5, %r2;
ld.global.u32 %r7, [%rd3];
ld.global.u32 %r8, [%rd3+256];
add.u32 %r9, %r7, %r8;
mul.wide.u32 %rd4, %r5, 4;
add.s64 %rd6, %rd5, %rd4;
st.global.u32 [%rd6], %r9;
ret;
}
"""

WRAP = (1 << 31) - 24       # t + WRAP wraps from lane 24 on (to -2**31 ..)


def _gang_code(source: str) -> str:
    return str(build_gang(build(parse(source)), "k", (16, 2, 1), CpuOptions())[0])


def _store(lo: int, words: int, first: int):
    """STORE with p placed so that index `first` is word 0 of a buffer of `words` zeros;
    the buffer afterwards (raises the launch's fault)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(STORE, code_type="ptx").compile("native").get_kernel("k")
    buf = allocate_alone(dev, 4 * words, stream)
    buf.copy_from(np.zeros(words, np.uint32), stream=stream)
    p = (int(buf.handle) - 4 * first) % (1 << 64)
    launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, np.uint64(p),
           np.uint32(WRAP), np.uint32(lo), np.uint32(16))
    stream.sync()
    out = np.empty(words, np.uint32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return out


def test_the_guarded_store_branches_on_its_no_wrap_test():
    code = _gang_code(STORE)
    assert "widened_fast" in code and "range_first" in code


def test_a_store_whose_half_wraps_faults_at_its_first_wrapped_lane_storing_nothing():
    # the buffer holds the unwrapped range (words 0..31: the range check passes), lanes
    # 24-31's true addresses lie 16 GiB below it: only the no-wrap test finds them
    words = 32
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(STORE, code_type="ptx").compile("native").get_kernel("k")
    buf = allocate_alone(dev, 4 * words, stream)
    buf.copy_from(np.zeros(words, np.uint32), stream=stream)
    p = (int(buf.handle) - 4 * WRAP) % (1 << 64)
    with pytest.raises(IllegalAddressError, match=r"thread 24;"):
        launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, np.uint64(p),
               np.uint32(WRAP), np.uint32(0), np.uint32(16))
        stream.sync()
    out = np.ones(words, np.uint32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out == 0).all()


def test_only_the_wrapped_lanes_storing_store_their_own_elements():
    # lane 24's index is -2**31: word 0
    out = _store(24, 8, -(1 << 31))
    assert (out == np.arange(24, 32)).all()


def test_two_loads_of_one_group_read_their_own_elements():
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIR, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(96, dtype=np.uint32) + 100
    out_buf = dev.allocate(128, stream=stream)
    buf = dev.allocate(src.nbytes, stream=stream)
    buf.copy_from(src, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, buf, out_buf,
           np.uint32(0), np.uint32(0), np.uint32(16))
    out = np.empty(32, np.uint32)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    assert (out == src[:32] + src[64:]).all()


def test_a_group_of_two_loads_whose_half_wraps_faults_at_its_first_wrapped_lane():
    # the buffer holds the unwrapped range of both loads (the group's range check passes):
    # the second load relies on the group's answer holding the no-wrap test
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIR, code_type="ptx").compile("native").get_kernel("k")
    out_buf = dev.allocate(128, stream=stream)
    buf = allocate_alone(dev, 4 * 96, stream)
    buf.copy_from(np.zeros(96, np.uint32), stream=stream)
    p = (int(buf.handle) - 4 * WRAP) % (1 << 64)
    with pytest.raises(IllegalAddressError, match=r"thread 24;"):
        launch(stream, LaunchConfig(grid=1, block=(16, 2)), kernel, np.uint64(p), out_buf,
               np.uint32(WRAP), np.uint32(0), np.uint32(16))
        stream.sync()
