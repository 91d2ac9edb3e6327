"""Warp gangs' global accesses at addresses widened from 32-bit indices (passes/lane_forms.py's
per-half and widened forms; codegen/targets/cpu/gang/classify.py): `in[y * width + x]` in a
16x16 block is consecutive per half warp with no test of the lanes at run time, a halo load
under a partial mask reuses that classification, and an index whose sum wraps inside a warp
(where the widened lanes are not consecutive) is found at run time: the access faults at the
first bad lane as it would without the known form."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cpu_harness import allocate_alone, launch_on_cpu
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[y][x] = in[y][x], plus in[y][x] at byte offset HALO for the threads with x == 0
ROWS = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 width)
{
.reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [width];
mov.u32 %r2, %tid.x; mov.u32 %r3, %tid.y;
mad.lo.s32 %r4, %r3, %r1, %r2;
mul.wide.s32 %rd3, %r4, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.f32 %f1, [%rd4];
setp.ne.s32 %p1, %r2, 0;
@%p1 bra SKIP;
ld.global.f32 %f2, [%rd4+HALO];
add.f32 %f1, %f1, %f2;
SKIP:
add.s64 %rd5, %rd2, %rd3;
st.global.f32 [%rd5], %f1;
ret;
}
"""

# out[t] = *(p + 4 * widen(b + t)) for the 32 threads of one warp
WRAP = HEADER + """.visible .entry k(.param .u64 p, .param .u32 b, .param .u64 out)
{
.reg .b32 %r<5>; .reg .b64 %rd<7>;
ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [b]; ld.param.u64 %rd2, [out];
mov.u32 %r2, %tid.x;
add.s32 %r3, %r1, %r2;
mul.wide.TYPE %rd3, %r3, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r4, [%rd4];
mul.wide.u32 %rd5, %r2, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r4;
ret;
}
"""


def _rows(halo: int, width: int = 32):
    src = np.arange(16 * width, dtype=np.float32)
    out = np.zeros_like(src)
    binary = launch_on_cpu(ROWS.replace("HALO", str(halo)), LaunchConfig(grid=1, block=(16, 16)),
                           src, out, np.uint32(width))
    assert binary.gang_refusal is None
    return src.reshape(16, width), out.reshape(16, width)


def _run_time_tests(ptx: str) -> int:
    """How many run-time tests of the lanes' addresses the gang code of `ptx` has (block
    checks off: the partial-mask copies of the accesses they cover are lowered twice, one
    copy a test or not, which is not what this counts)."""
    llmod, _ = build_gang(build(parse(ptx)), "k", (16, 16, 1), CpuOptions(block_checks=False))
    return len(re.findall(r"^classify_halves(?:\.\d+)?:", str(llmod), re.MULTILINE))


def test_rows_of_a_run_time_width_known_when_compiling():
    rows = ROWS.replace("HALO", "64")
    # the same kernel with the widening's factor in a register, which the lane-offsets
    # pass does not follow: each access's full-mask copy tests its lanes at run time
    unknown = rows.replace("mul.wide.s32 %rd3, %r4, 4;", "mov.u32 %r5, 4; mul.wide.s32 %rd3, "
                           "%r4, %r5;")
    # known: only the partial-mask copies of the load, the halo load and the store test
    assert _run_time_tests(rows) == 3 < _run_time_tests(unknown)
    # the halo's `if` kept as a branch: its load's partial mask reuses the main load's
    # classification (converted, the halo load is a guarded one of the full-mask segment)
    llmod, _ = build_gang(build(parse(rows)), "k", (16, 16, 1), CpuOptions(if_convert=False))
    assert "classified_before" in str(llmod)


def test_rows_and_a_halo_under_a_partial_mask():
    src, out = _rows(64)
    want = np.zeros_like(src)
    want[:, :16] = src[:, :16]
    want[:, 0] += src[:, 16]
    assert (out == want).all()


def test_a_halo_past_the_end_stops_at_the_first_bad_thread():
    # 16 rows further: every halo read is past the input's end; warp 0's first is thread 0
    with pytest.raises(IllegalAddressError, match=r"line 15 in block \(0, 0, 0\), thread 0;"):
        _rows(16 * 32 * 4)


def _wrap(kind: str, base: int):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(WRAP.replace("TYPE", kind), code_type="ptx").compile(
        "native").get_kernel("k")
    src = np.arange(32, dtype=np.uint32) + 100
    out_buf = dev.allocate(src.nbytes, stream=stream)
    buf = allocate_alone(dev, src.nbytes, stream)      # (wrapped lanes fault 16 GiB off)
    buf.copy_from(src, stream=stream)
    first = base - (1 << 32) if kind == "s32" and base >> 31 else base
    p = (int(buf.handle) - 4 * first) % (1 << 64)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, np.uint64(p), np.uint32(base),
           out_buf)
    out = np.empty_like(src)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    return src, out


@pytest.mark.parametrize("kind, base", [("s32", 0x7FFFFFE0), ("s32", -40 % (1 << 32)),
                                        ("u32", 0xFFFFFFE0)])
def test_widened_indices_that_do_not_wrap(kind, base):
    src, out = _wrap(kind, base)
    assert (out == src).all()


@pytest.mark.parametrize("kind, base", [("s32", 0x7FFFFFF0), ("u32", 0xFFFFFFF0)])
def test_an_index_that_wraps_inside_the_warp_faults_at_its_first_lane(kind, base):
    # lanes 16 on wrap: their addresses lie 2**34 bytes below the others, outside memory
    with pytest.raises(IllegalAddressError, match=r"line 12 in block \(0, 0, 0\), thread 16;"):
        _wrap(kind, base)
