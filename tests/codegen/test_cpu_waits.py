"""Barriers and shuffles through the CPU executor: the native fast path
(codegen/targets/cpu/native.py) and the general resolver (runtime/backends/cpu/warps.py) must
give the same, exact PTX results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cpu_harness import compile_ptx, in_child, kernel_ptx, run_ptx

# Each thread loads x[i], shuffles it four ways, writes the result into shared memory, and
# after a barrier reads its mirror thread's value: out[i] = value of thread (ntid-1-tid).
BODY = """
.reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<3>;
.shared .align 4 .b32 sh[256];
ld.param.u64 %rd1, [inp]; ld.param.u64 %rd2, [out]; ld.param.u32 %r10, [idx_lane];
mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
mad.lo.s32 %r4, %r2, %r3, %r1;
mul.wide.u32 %rd3, %r4, 4; add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r5, [%rd4];
shfl.sync.down.b32 %r6|%p1, %r5, 1, 31, -1;
shfl.sync.bfly.b32 %r7, %r6, 3, 31, -1;
shfl.sync.up.b32 %r8|%p2, %r7, 2, 0, -1;
shfl.sync.idx.b32 %r9, %r8, %r10, 0x0f1f, -1;
selp.u32 %r11, 1000, 0, %p1;
add.s32 %r9, %r9, %r11;
selp.u32 %r11, 100000, 0, %p2;
add.s32 %r9, %r9, %r11;
mul.wide.u32 %rd5, %r1, 4; mov.u64 %rd6, sh; add.s64 %rd6, %rd6, %rd5;
st.shared.u32 [%rd6], %r9;
bar.sync 0;
sub.s32 %r12, %r3, 1; sub.s32 %r12, %r12, %r1;
mul.wide.u32 %rd5, %r12, 4; mov.u64 %rd6, sh; add.s64 %rd6, %rd6, %rd5;
ld.shared.u32 %r13, [%rd6];
add.s64 %rd7, %rd2, %rd3;
st.global.u32 [%rd7], %r13;
ret;
"""
PTX = kernel_ptx(BODY, ".param .u64 out, .param .u64 inp, .param .u32 idx_lane")


def shfl_reference(values: np.ndarray, mode: str, b: int, c: int):
    """PTX ISA shfl.sync over whole warps of `values`: (results, valid flags)."""
    lane = np.arange(values.size) % 32
    base = np.arange(values.size) - lane
    b &= 0x1F  # PTX reads b[4:0] only
    clamp, segmask = c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - b
        valid = j >= max_lane
    elif mode == "down":
        j = lane + b
        valid = j <= max_lane
    elif mode == "bfly":
        j = lane ^ b
        valid = j <= max_lane
    else:
        j = min_lane | (b & ~segmask)
        valid = j <= max_lane
    return values[base + np.where(valid, j, lane)], valid


def reference(x: np.ndarray, block: int, idx_lane: int) -> np.ndarray:
    out = np.empty_like(x)
    for start in range(0, x.size, block):
        v = x[start:start + block].astype(np.int64)
        v, p1 = shfl_reference(v, "down", 1, 31)
        v, _ = shfl_reference(v, "bfly", 3, 31)
        v, p2 = shfl_reference(v, "up", 2, 0)
        v, _ = shfl_reference(v, "idx", idx_lane, 0x0F1F)
        v = v + 1000 * p1 + 100000 * p2
        out[start:start + block] = v[::-1].astype(np.int32)
    return out


@pytest.mark.parametrize("native", [True, False], ids=["native", "general"])
@pytest.mark.parametrize("idx_lane", [5, 40])
def test_shuffles_and_barrier(native: bool, idx_lane: int):
    _, binary = compile_ptx(PTX, "k")
    binary.native_waits = native
    try:
        x = np.random.default_rng(1).integers(-10**6, 10**6, 64 * 128).astype(np.int32)
        out = np.zeros_like(x)
        run_ptx(PTX, "k", grid=(64,), block=(128,), args=[out, x, np.uint32(idx_lane)])
    finally:
        binary.native_waits = True
    np.testing.assert_array_equal(out, reference(x, 128, idx_lane))


# (run in a child process: a hang in compiled code is one that no launch timeout stops)
_PARTIAL_WARP = """
import json, sys
import numpy as np
from cpu_harness import run_ptx
x = np.arange(4 * 48, dtype=np.int32)
out = np.zeros_like(x)
run_ptx(sys.stdin.read(), "k", grid=(4,), block=(48,), args=[out, x, np.uint32(5)])
print(json.dumps(out.tolist()))
"""


def test_partial_warp_block_uses_the_general_resolver():
    """A block of 48 threads is one and a half warps: the native path declines and the
    general resolver completes the shuffles (lanes past the block's end do not exist). It
    hung once (gang/streams.held): the store after the barrier read an index no longer
    held there, LLVM dropped what its undefined value decided, and the code spun."""
    x = np.arange(4 * 48, dtype=np.int32)
    out = np.array(json.loads(in_child(_PARTIAL_WARP, PTX).splitlines()[-1]), np.int32)
    # Full warps (lanes 0..31 of each block) follow the reference exactly.
    expected = reference(np.concatenate([x[i * 48:i * 48 + 32] for i in range(4)]), 32, 5)
    got = np.concatenate([out[i * 48 + 16:i * 48 + 48] for i in range(4)])
    np.testing.assert_array_equal(got, expected)
