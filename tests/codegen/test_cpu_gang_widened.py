"""Warp gangs' global accesses through widened addresses whose lanes lie consecutive
(codegen/targets/cpu/gang/widened.py): the range from the first and last active lanes' true
addresses, one masked access where it passes its check, else each lane checked and a gather
or scatter. An index that wraps inside the warp must fault at its first bad lane; lanes that
all wrapped (under a guard) are consecutive again and must read their own elements; a guarded
load keeps its registers' values in the lanes it skips; a `.v4` access and a grid-stride
loop read and write what they should; an access past an allocation's end names its thread."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from cpu_harness import allocate_alone, launch_on_cpu
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.machine import target_machine
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[t] = (t >= lo) ? *(p + 4 * widen(b + t)) : 7, one warp, `@%p ld` after `mov %r4, 7`
GUARDED = HEADER + """.visible .entry k(.param .u64 p, .param .u32 b, .param .u64 out,
                                      .param .u32 lo)
{
.reg .b32 %r<6>; .reg .b64 %rd<7>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [b]; ld.param.u64 %rd2, [out];
ld.param.u32 %r5, [lo];
mov.u32 %r2, %tid.x;
add.s32 %r3, %r1, %r2;
mul.wide.TYPE %rd3, %r3, 4;
add.s64 %rd4, %rd1, %rd3;
mov.u32 %r4, 7;
setp.ge.u32 %p1, %r2, %r5;
@%p1 ld.global.u32 %r4, [%rd4];
mul.wide.u32 %rd5, %r2, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r4;
ret;
}
"""

# y[i] = a * x[i] + y[i] for i < n, a grid-stride loop with an int index (saxpy.cu's)
SAXPY = HEADER + """.visible .entry k(.param .f32 a, .param .u64 x, .param .u64 y, .param .u32 n)
{
.reg .pred %p<3>; .reg .f32 %f<5>; .reg .b32 %r<11>; .reg .b64 %rd<8>;
ld.param.f32 %f1, [a]; ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y];
ld.param.u32 %r6, [n];
mov.u32 %r1, %ntid.x; mov.u32 %r7, %ctaid.x; mov.u32 %r8, %tid.x;
mad.lo.s32 %r10, %r7, %r1, %r8;
setp.ge.s32 %p1, %r10, %r6;
@%p1 bra DONE;
mov.u32 %r9, %nctaid.x; mul.lo.s32 %r3, %r1, %r9;
LOOP:
mul.wide.s32 %rd5, %r10, 4;
add.s64 %rd6, %rd1, %rd5; ld.global.f32 %f2, [%rd6];
add.s64 %rd7, %rd2, %rd5; ld.global.f32 %f3, [%rd7];
fma.rn.f32 %f4, %f2, %f1, %f3;
st.global.f32 [%rd7], %f4;
add.s32 %r10, %r10, %r3;
setp.lt.s32 %p2, %r10, %r6;
@%p2 bra LOOP;
DONE:
ret;
}
"""

# out[t] = p[t] + p[32 + t]: the second load's base (%rd5) was computed from %rd4 before
# %rd4 was written again (gemv_transposed_f64's unrolled loop): its range must use the old
# %rd4 (reading rows 0 and 1 of a 2-row buffer), not the new one (row 3: outside it)
REWRITTEN = HEADER + """.visible .entry k(.param .u64 p, .param .u64 out, .param .u32 b)
{
.reg .b32 %r<7>; .reg .b64 %rd<9>;
ld.param.u64 %rd1, [p]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [b];
mov.u32 %r2, %tid.x;
add.s32 %r3, %r1, %r2;
mul.wide.s32 %rd3, %r3, 4;
mov.u64 %rd6, 128;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r4, [%rd4];
add.s64 %rd5, %rd4, %rd6;
add.s64 %rd4, %rd5, %rd6;
ld.global.u32 %r5, [%rd5];
add.s32 %r6, %r4, %r5;
add.s64 %rd7, %rd2, %rd3;
st.global.u32 [%rd7], %r6;
ret;
}
"""

# out[t] = in[t] * 2 as float4 (`ld.global.v4`, a widened int index times 16)
FLOAT4 = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n)
{
.reg .pred %p<2>; .reg .f32 %f<9>; .reg .b32 %r<5>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
mad.lo.s32 %r4, %r2, %r3, %r4;
setp.ge.s32 %p1, %r4, %r1;
@%p1 bra DONE;
mul.wide.s32 %rd3, %r4, 16;
add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];
add.f32 %f5, %f1, %f1; add.f32 %f6, %f2, %f2; add.f32 %f7, %f3, %f3; add.f32 %f8, %f4, %f4;
st.global.v4.f32 [%rd5], {%f5, %f6, %f7, %f8};
DONE:
ret;
}
"""


def _kernel(ptx: str):
    return Program(ptx, code_type="ptx").compile("native").get_kernel("k")


def _guarded(kind: str, base: int, lo: int, words: int = 32, first: int | None = None):
    """Run GUARDED with p placed so that index `first` (widened; by default lane 0's, base
    taken modulo 2**32 where it wraps) reads word 0 of a buffer of `words` words; (buffer,
    out)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = _kernel(GUARDED.replace("TYPE", kind))
    src = np.arange(words, dtype=np.uint32) + 100
    out_buf = dev.allocate(128, stream=stream)
    buf = allocate_alone(dev, src.nbytes, stream)      # (wrapped lanes fault 16 GiB off)
    buf.copy_from(src, stream=stream)
    if first is None:
        first = base - (1 << 32) if kind == "s32" and base >> 31 else base
    p = (int(buf.handle) - 4 * first) % (1 << 64)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, np.uint64(p), np.uint32(base),
           out_buf, np.uint32(lo))
    out = np.empty(32, np.uint32)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return src, out


def test_the_widened_path_is_taken():
    llmod, _ = build_gang(build(parse(SAXPY)), "k", (256, 1, 1), CpuOptions())
    text = str(llmod)
    # the x load and the y group (load and store) of the loop's full-mask copy
    assert text.count("widened_fast") >= 2


def test_the_full_mask_loop_takes_its_range_from_two_lanes():
    # the range check reads lanes 0 and 31 as scalars; the 64-bit address vectors (a sign
    # extension of the 32 indices) are made on the cold paths only, not in the loop's
    # full-mask copy (seg2_all), and the widening flag is neither read nor written
    llmod, _ = build_gang(build(parse(SAXPY)), "k", (256, 1, 1), CpuOptions())
    assert "freeze" in str(llmod)
    module = llvm.parse_assembly(str(llmod))
    passes = llvm.create_pass_builder(target_machine(), llvm.PipelineTuningOptions(speed_level=3))
    passes.getModulePassManager().run(module, passes)
    label, widened = None, []
    for line in str(module).splitlines():
        if found := re.match(r"([\w.]+):", line):
            label = found.group(1)
        if re.search(r"= sext <32 x i32> .* to <32 x i64>", line):
            widened.append(label)
    assert widened and all(not name.startswith("seg2_all") for name in widened), widened
    assert "widened_lanes" in " ".join(widened)


def test_a_guarded_load_keeps_the_lanes_it_skips():
    src, out = _guarded("s32", 1000, 5)
    assert (out[:5] == 7).all() and (out[5:] == src[5:]).all()


@pytest.mark.parametrize("kind, base", [("s32", 0x7FFFFFF0), ("u32", 0xFFFFFFF0)])
def test_lanes_that_all_wrapped_read_their_own_elements(kind, base):
    # lanes 16.. wrap (their indices widen to -2**31.. or 0..): alone under the guard,
    # they are consecutive again; p is set so that they read the buffer (lanes 0-15 would
    # address 2**34 bytes above it)
    wrapped = -(1 << 31) if kind == "s32" else 0        # lane 16's widened index
    src, out = _guarded(kind, base, 16, words=16, first=wrapped)
    assert (out[:16] == 7).all() and (out[16:] == src).all()


@pytest.mark.parametrize("kind, base", [("s32", 0x7FFFFFF0), ("u32", 0xFFFFFFF0)])
def test_a_wrap_inside_the_active_lanes_faults_at_its_first_lane(kind, base):
    with pytest.raises(IllegalAddressError, match=r"thread 16;"):
        _guarded(kind, base, 3)


def test_a_load_past_the_end_names_the_first_bad_thread():
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes .* thread 20;"):
        _guarded("s32", 1000, 0, words=20)[1]


def test_a_grid_stride_loop_reads_and_writes_each_element():
    n = 5 * 1024 + 77       # 4 blocks of 256: five passes, the last partial
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 3, np.float32)
    launch_on_cpu(SAXPY, LaunchConfig(grid=4, block=256), np.float32(2), x, y, np.uint32(n))
    assert (y == 2 * x + 3).all()


def test_a_grid_stride_access_past_the_end_faults():
    x = np.ones(256, np.float32)
    y = np.zeros(100, np.float32)
    # y holds 100 floats: warps 0-2 pass; warp 3's y load is the first bad access
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes .* line 17 .* thread 100;"):
        launch_on_cpu(SAXPY, LaunchConfig(grid=1, block=256), np.float32(2), x, y,
                      np.uint32(256))


def test_a_grid_stride_loop_whose_last_lane_is_past_the_end_faults_there():
    # x holds 255 floats: every warp's range passes but the last one's, whose lane 31
    # (thread 255) reads the 4 bytes past x's end (the range's high end, from lane 31)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = _kernel(SAXPY)
    x = np.ones(255, np.float32)
    xb, yb = dev.allocate(x.nbytes, stream=stream), dev.allocate(1024, stream=stream)
    xb.copy_from(x, stream=stream)
    yb.copy_from(np.zeros(256, np.float32), stream=stream)
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes .* thread 255;"):
        launch(stream, LaunchConfig(grid=1, block=256), kernel, np.float32(2), xb, yb,
               np.uint32(256))
        stream.sync()
    out = np.empty(256, np.float32)
    yb.copy_to(out, stream=stream)
    stream.sync()
    assert out[255] == 0        # (nothing stored past the fault)


def test_a_base_computed_before_its_source_register_was_written_again():
    src = np.arange(64, dtype=np.uint32)
    out = np.zeros(32, np.uint32)
    binary = launch_on_cpu(REWRITTEN, LaunchConfig(grid=1, block=32), src, out, np.uint32(0))
    assert binary.gang_refusal is None
    assert (out == src[:32] + src[32:]).all()


def test_float4_accesses():
    n = 200
    src = np.arange(4 * n, dtype=np.float32)
    out = np.zeros_like(src)
    launch_on_cpu(FLOAT4, LaunchConfig(grid=2, block=128), src, out, np.uint32(n))
    assert (out == 2 * src).all()
    with pytest.raises(IllegalAddressError, match=r"block \(1, 0, 0\), thread 72;"):
        launch_on_cpu(FLOAT4, LaunchConfig(grid=2, block=128), src, out, np.uint32(n + 100))
