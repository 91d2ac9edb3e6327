"""Warp gangs' prefetches by how an access site moves (codegen/targets/cpu/gang/streams.py):
every global access site prefetches (`p[blockIdx.x * blockDim.x + threadIdx.x]` too: left to
the hardware's prefetchers, vector_add was slower on the GPU host's Xeon), and a grid-stride
loop, whose step is known when compiling, prefetches by its step."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# c[i] = a[i] + b[i] for i = ctaid.x * ntid.x + tid.x (times SCALE) < n (vector_add.cu's)
ADD = HEADER + """.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
.reg .pred %p<2>; .reg .f32 %f<4>; .reg .b32 %r<7>; .reg .b64 %rd<11>;
ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [b]; ld.param.u64 %rd3, [c];
ld.param.u32 %r2, [n];
mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
mad.lo.s32 %r6, %r3, %r4, %r5;
mul.lo.s32 %r1, %r6, SCALE;
setp.ge.s32 %p1, %r1, %r2;
@%p1 bra DONE;
cvta.to.global.u64 %rd4, %rd1; mul.wide.s32 %rd5, %r1, 4; add.s64 %rd6, %rd4, %rd5;
cvta.to.global.u64 %rd7, %rd2; add.s64 %rd8, %rd7, %rd5;
ld.global.f32 %f1, [%rd8]; ld.global.f32 %f2, [%rd6];
add.f32 %f3, %f2, %f1;
cvta.to.global.u64 %rd9, %rd3; add.s64 %rd10, %rd9, %rd5;
st.global.f32 [%rd10], %f3;
DONE:
ret;
}
"""

# y[i] += x[i] in a grid-stride loop
LOOP = HEADER + """.visible .entry k(.param .u64 x, .param .u64 y, .param .u32 n)
{
.reg .pred %p<3>; .reg .f32 %f<4>; .reg .b32 %r<11>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y]; ld.param.u32 %r6, [n];
mov.u32 %r1, %ntid.x; mov.u32 %r7, %ctaid.x; mov.u32 %r8, %tid.x;
mad.lo.s32 %r10, %r7, %r1, %r8;
setp.ge.s32 %p1, %r10, %r6;
@%p1 bra DONE;
mov.u32 %r9, %nctaid.x; mul.lo.s32 %r3, %r1, %r9;
LOOP:
mul.wide.s32 %rd5, %r10, 4;
add.s64 %rd6, %rd1, %rd5; ld.global.f32 %f1, [%rd6];
add.s64 %rd7, %rd2, %rd5; ld.global.f32 %f2, [%rd7];
add.f32 %f3, %f1, %f2; st.global.f32 [%rd7], %f3;
add.s32 %r10, %r10, %r3;
setp.lt.s32 %p2, %r10, %r6;
@%p2 bra LOOP;
DONE:
ret;
}
"""


def _prefetches(ptx: str, block) -> int:
    llmod, _ = build_gang(build(parse(ptx)), "k", block, CpuOptions())
    return str(llmod).count("call void @\"llvm.prefetch")


@pytest.mark.parametrize("ptx, block", [
    (ADD.replace("SCALE", "1"), (128, 1, 1)),        # a stream, block after block
    (ADD.replace("SCALE", "2"), (128, 1, 1)),        # every other element
    (ADD.replace("SCALE", "1"), (32, 4, 1)),         # 4 rows of threads on one element each
    (LOOP, (256, 1, 1)),                             # a grid-stride loop
])
def test_global_accesses_are_prefetched(ptx, block):
    assert _prefetches(ptx, block) > 0


def test_a_grid_stride_loop_prefetches_by_its_step():
    # the index moves by blockDim.x * gridDim.x each pass: prefetched that many elements
    # on, with no stride learnt at run time (checks.prefetch's blocks)
    llmod, _ = build_gang(build(parse(LOOP)), "k", (256, 1, 1), CpuOptions())
    text = str(llmod)
    assert text.count('call void @"llvm.prefetch') > 0
    assert "\nprefetched" not in text


def test_a_stream_adds_what_it_should():
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ADD.replace("SCALE", "1"), code_type="ptx").compile(
        "native").get_kernel("k")
    n = 1000
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    bufs = [dev.allocate(4 * n, stream=stream) for _ in range(3)]
    bufs[0].copy_from(a, stream=stream)
    bufs[1].copy_from(b, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, *bufs,
           np.uint32(n))
    out = np.empty(n, np.float32)
    bufs[2].copy_to(out, stream=stream)
    stream.sync()
    assert (out == a + b).all()
