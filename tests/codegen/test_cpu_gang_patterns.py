"""Warp gangs' accesses whose lanes' offsets are known when compiling (passes/lane_offsets.py):
a 16x16 tile reads one address per half warp (`As[ty][k]`) and consecutive words per half
(`Bs[k][tx]`) with no test of the lanes at run time; results against numpy, and accesses past
the shared memory still stop the kernel at the first bad thread."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.errors import IllegalAddressError

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# s[ty][tx] = ty * 16 + tx; then out[ty][tx] = sum over k < 4 of s[ty][k] * s[k][tx]
TILE = HEADER + """.visible .entry k(.param .u64 out)
{
.reg .b32 %r<24>; .reg .b64 %rd<4>; .shared .align 4 .b32 s[256];
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
shl.b32 %r3, %r2, 4; add.s32 %r4, %r3, %r1;
mov.u32 %r5, s; shl.b32 %r6, %r4, 2; add.s32 %r7, %r5, %r6;
st.shared.u32 [%r7], %r4;
bar.sync 0;
shl.b32 %r8, %r2, 6; add.s32 %r9, %r5, %r8;
shl.b32 %r10, %r1, 2; add.s32 %r11, %r5, %r10;
ld.shared.u32 %r12, [%r9]; ld.shared.u32 %r13, [%r11]; mul.lo.s32 %r20, %r12, %r13;
ld.shared.u32 %r12, [%r9+4]; ld.shared.u32 %r13, [%r11+64]; mad.lo.s32 %r20, %r12, %r13, %r20;
ld.shared.u32 %r12, [%r9+8]; ld.shared.u32 %r13, [%r11+128]; mad.lo.s32 %r20, %r12, %r13, %r20;
ld.shared.u32 %r12, [%r9+12]; ld.shared.u32 %r13, [%r11+192]; mad.lo.s32 %r20, %r12, %r13, %r20;
mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r20;
ret;
}
"""

# every thread of a 16x16 block writes its word of dynamic shared memory (consecutive lanes)
DYNAMIC = HEADER + """.extern .shared .align 4 .b32 d[];
.visible .entry k()
{
.reg .b32 %r<8>;
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; shl.b32 %r3, %r2, 4; add.s32 %r4, %r3, %r1;
mov.u32 %r5, d; shl.b32 %r6, %r4, 2; add.s32 %r7, %r5, %r6;
st.shared.u32 [%r7], %r4;
ret;
}
"""


def _launch(ptx: str, arrays, shmem: int = 0):
    return launch_on_cpu(ptx, LaunchConfig(grid=2, block=(16, 16), shmem_size=shmem), *arrays)


def test_tile_reads_per_half_warp():
    out = np.zeros(256, np.uint32)
    binary = _launch(TILE, [out])
    s = np.arange(256, dtype=np.uint32).reshape(16, 16)
    assert (out.reshape(16, 16) == s[:, :4] @ s[:4, :]).all()
    assert binary.gang_refusal is None


def test_consecutive_lanes_past_shared_memory_stop_at_the_first_bad_thread():
    _launch(DYNAMIC, [], shmem=1024)                # 256 words: every thread's fits
    with pytest.raises(IllegalAddressError, match="thread 128"):
        _launch(DYNAMIC, [], shmem=512)             # 128 words: warp 4 on is outside
