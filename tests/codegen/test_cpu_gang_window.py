"""Warp gangs' window loads (codegen/targets/cpu/gang/window.py): lanes reading a few elements
at offsets known when compiling (Triton 3.9's cross-warp reduction: `smem + 4 * (lane & 3)`)
load the window once and shuffle it to the lanes; the values are each lane's own, an access
outside shared memory faults at its first bad lane, and no gather is left. A guarded access of
lanes known consecutive in shared memory (Triton 3.6's) is checked over its active lanes."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang import window
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# 4 warps: threads 0..15 fill buf[t] = 1000 + t; each warp w stores 100 + w at its slot
# (tid >> 3) & 12 (Triton's); then out[t] = buf[(t & 3) + base / 4] through a window load,
# and out[128 + t] = in[(t & 3) + first] through a global one
KERNEL = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 base,
                       .param .u32 first)
{
.reg .pred %p<2>; .reg .b32 %r<20>; .reg .b64 %rd<10>;
.shared .align 16 .b8 buf[64];
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [base];
ld.param.u32 %r15, [first];
mov.u32 %r2, %tid.x;
mov.u32 %r5, buf;
shl.b32 %r8, %r2, 2;
add.s32 %r13, %r5, %r8;
add.s32 %r14, %r2, 1000;
setp.lt.u32 %p1, %r2, 16;
@%p1 st.shared.u32 [%r13], %r14;
bar.sync 0;
shr.u32 %r3, %r2, 3;
and.b32 %r4, %r3, 12;
add.s32 %r6, %r5, %r4;
shr.u32 %r16, %r2, 5;
add.s32 %r7, %r16, 100;
st.shared.u32 [%r6], %r7;
bar.sync 0;
and.b32 %r9, %r8, 12;
add.s32 %r10, %r5, %r9;
add.s32 %r11, %r10, %r1;
ld.shared.u32 %r12, [%r11];
mul.wide.u32 %rd3, %r2, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r12;
and.b32 %r17, %r2, 3;
mul.wide.u32 %rd5, %r17, 4;
mul.wide.u32 %rd7, %r15, 4;
add.s64 %rd8, %rd1, %rd7;
add.s64 %rd6, %rd8, %rd5;
ld.global.u32 %r19, [%rd6];
st.global.u32 [%rd4+512], %r19;
ret;
}
"""


def _run(base: int, first: int = 0, n: int = 64) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(KERNEL, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(n, dtype=np.uint32) + 7
    out = np.zeros(256, dtype=np.uint32)
    bufs = [dev.allocate(a.nbytes, stream=stream) for a in (src, out)]
    bufs[0].copy_from(src, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=128), kernel, *bufs, np.uint32(base),
           np.uint32(first))
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return out


def _expected(base: int, first: int = 0) -> np.ndarray:
    buf = np.arange(16, dtype=np.uint32) + 1000
    buf[:4] = 100 + np.arange(4)
    lanes = np.arange(128) & 3
    src = np.arange(64, dtype=np.uint32) + 7
    return np.concatenate([buf[lanes + base // 4], src[lanes + first]])


@pytest.mark.parametrize("base, first", [(0, 0), (4, 5), (48, 60)])
def test_window_loads_give_each_lane_its_element(base, first):
    assert (_run(base, first) == _expected(base, first)).all()


def test_a_window_past_shared_memory_faults_at_its_first_bad_lane():
    line = next(i for i, text in enumerate(KERNEL.splitlines(), 1)
                if "ld.shared.u32 %r12" in text)
    # buf[13..16]: lane 3 reads the word after the 64 bytes
    with pytest.raises(IllegalAddressError,
                       match=rf"line {line} in block \(0, 0, 0\), thread 3;"):
        _run(52)


def test_a_window_past_its_allocation_faults():
    with pytest.raises(IllegalAddressError, match="thread 3;"):
        _run(0, first=61)


def test_the_windows_are_loaded_once_not_gathered(monkeypatch):
    """Both loads' full-mask copies load a window of 4 words (their partial-mask copies,
    which the kernel never runs, keep the general path)."""
    def code():
        return str(build_gang(build(parse(KERNEL)), "k", (128, 1, 1), CpuOptions())[0])
    windows = code()
    monkeypatch.setattr(window, "applies", lambda *args: False)
    general = code()
    assert windows.count("load <4 x i32>") == 2 and "load <4 x i32>" not in general
    assert windows.count("masked.gather") < general.count("masked.gather")


def test_window_of():
    lanes = tuple(4 * (i & 3) for i in range(32))
    assert window.window_of(lanes, 4, 32) == (0, [i & 3 for i in range(32)])
    # lane 0 reads the window's last element
    assert window.window_of(tuple(12 - c for c in lanes), 4, 32) == (-12, [3 - (i & 3)
                                                                    for i in range(32)])
    assert window.window_of((0,) * 32, 4, 32) == (0, [0] * 32)             # one element, all lanes
    assert window.window_of(tuple(4 * i for i in range(32)), 4, 32) is None  # consecutive
    assert window.window_of(tuple(8 * (i & 3) for i in range(32)), 4, 32) is None  # not dense
    assert window.window_of(tuple(4 * (i & 31) for i in range(32)), 4, 32) is None
    assert window.window_of(tuple(4 * (i & 15) for i in range(32)), 4, 32) is not None  # 64 bytes
    assert window.window_of(tuple(2 * (i & 3) for i in range(32)), 4, 32) is None  # misaligned


# Triton 3.6's cross-warp step: lanes 0..3 of warp 0 read a 16-byte buffer under a guard
# (tid < count), every lane's address at buf + 4 * tid (the other lanes' past its end)
GUARDED = HEADER + """.visible .entry k(.param .u64 out, .param .u32 count)
{
.reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
.shared .align 16 .b8 buf[16];
ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [count];
mov.u32 %r2, %tid.x;
mov.u32 %r3, buf;
shl.b32 %r4, %r2, 2;
add.s32 %r5, %r3, %r4;
setp.lt.u32 %p1, %r2, 4;
@%p1 st.shared.u32 [%r5], %r4;
bar.sync 0;
mov.u32 %r6, 7;
setp.lt.u32 %p1, %r2, %r1;
@%p1 ld.shared.u32 %r6, [%r5];
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r6;
ret;
}
"""


def _guarded(count: int) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(GUARDED, code_type="ptx").compile("native").get_kernel("k")
    out = dev.allocate(128 * 4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=128), kernel, out, np.uint32(count))
    host = np.zeros(128, dtype=np.uint32)
    out.copy_to(host, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return host


def test_a_guarded_shared_access_is_checked_over_its_active_lanes():
    expected = np.full(128, 7, dtype=np.uint32)
    expected[:4] = 4 * np.arange(4)
    assert (_guarded(4) == expected).all()
    line = next(i for i, text in enumerate(GUARDED.splitlines(), 1)
                if "@%p1 ld.shared" in text)
    with pytest.raises(IllegalAddressError,
                       match=rf"line {line} in block \(0, 0, 0\), thread 4;"):
        _guarded(5)
