"""Warp gangs' .v2/.v4 loads and stores (codegen/targets/cpu/gang/memory.py): lanes whose
vectors lie one after another (Triton's and CUDA's float4 accesses) take one masked access
of the warp's elements, anything else a gather or scatter per element; both against numpy,
with partial masks, shared memory, and an access past the end of a buffer."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"
PARAMS = ".param .u64 src, .param .u64 dst, .param .u32 n"


def _ptx(body: str) -> str:
    return HEADER + f".visible .entry k({PARAMS})\n{{\n{body}\n}}\n"


def _run(body: str, block: int, src: np.ndarray, dst: np.ndarray, n: int):
    return launch_on_cpu(_ptx(body), LaunchConfig(grid=1, block=block), src, dst, np.uint32(n))


def _gang_ir(body: str, block: int) -> str:
    llmod, _ = build_gang(build(parse(_ptx(body))), "k", (block, 1, 1), CpuOptions())
    return str(llmod)


# Thread t (t < n) reads the 4 floats at src + STRIDE * t and writes them reversed at
# dst + STRIDE * t: STRIDE 16 makes the lanes' vectors consecutive, 32 leaves gaps.
COPY_V4 = """
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .f32 %f<5>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.lt.u32 %p1, %r2, %r1;
mul.wide.u32 %rd3, %r2, STRIDE;
add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
@%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+OFFSET];
@%p1 st.global.v4.f32 [%rd5+OFFSET], {%f4, %f3, %f2, %f1};
ret;"""


def _copy_v4(stride: int, offset: int = 0) -> str:
    return COPY_V4.replace("STRIDE", str(stride)).replace("OFFSET", str(offset))


def _expected_copy(src, dst, stride: int, n: int, offset: int = 0):
    want = dst.copy()
    floats, first = stride // 4, offset // 4
    for t in range(n):
        at = t * floats + first
        want[at:at + 4] = src[at:at + 4][::-1]
    return want


@pytest.mark.parametrize("n", [64, 45, 3])
def test_consecutive_v4_is_one_masked_access_of_the_warp(n):
    """All lanes, a partial warp and a few lanes: the lanes' vectors back to back."""
    src = np.arange(64 * 4 + 8, dtype=np.float32)
    dst = np.full(64 * 4 + 8, -1.0, np.float32)
    binary = _run(_copy_v4(16, 16), 64, src, dst, n)
    assert binary.gang_refusal is None
    np.testing.assert_array_equal(dst, _expected_copy(src, np.full_like(dst, -1.0), 16, n, 16))
    text = _gang_ir(_copy_v4(16), 64)
    assert "llvm.masked.load.v128f32" in text and "llvm.masked.store.v128f32" in text


def test_v4_with_gaps_between_lanes_gathers_and_scatters():
    src = np.arange(40 * 8, dtype=np.float32)
    dst = np.full(40 * 8, -1.0, np.float32)
    binary = _run(_copy_v4(32), 40, src, dst, 37)
    assert binary.gang_refusal is None
    np.testing.assert_array_equal(dst, _expected_copy(src, np.full_like(dst, -1.0), 32, 37))


COPY_V2_F64 = """
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .f64 %d<3>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.lt.u32 %p1, %r2, %r1;
mul.wide.u32 %rd3, %r2, 16;
add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
@%p1 ld.global.v2.f64 {%d1, %d2}, [%rd4];
add.f64 %d1, %d1, %d2;
@%p1 st.global.v2.f64 [%rd5], {%d2, %d1};
ret;"""


def test_consecutive_v2_f64():
    src = np.linspace(-3, 7, 96 * 2)
    dst = np.zeros(96 * 2)
    _run(COPY_V2_F64, 96, src, dst, 90)
    pairs = src.reshape(-1, 2)
    want = np.stack([pairs[:, 1], pairs[:, 0] + pairs[:, 1]], axis=1)
    want[90:] = 0
    np.testing.assert_array_equal(dst.reshape(-1, 2), want)


# Each thread stores its 4 values to shared memory as one .v4, and after the barrier reads
# its neighbour's (thread t + 1, wrapping) vector.
SHARED_V4 = """
.reg .b32 %r<12>; .reg .b64 %rd<5>;
.shared .align 16 .b8 tile[1024];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 16;
add.s64 %rd4, %rd1, %rd3;
ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
mov.u32 %r6, tile;
shl.b32 %r7, %r1, 4; add.u32 %r8, %r6, %r7;
st.shared.v4.u32 [%r8], {%r2, %r3, %r4, %r5};
bar.sync 0;
add.u32 %r9, %r1, 1; and.b32 %r9, %r9, 63;
shl.b32 %r9, %r9, 4; add.u32 %r9, %r6, %r9;
ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [%r9];
add.s64 %rd4, %rd2, %rd3;
st.global.v4.u32 [%rd4], {%r2, %r3, %r4, %r5};
ret;"""


def test_shared_memory_v4():
    src = np.arange(64 * 4, dtype=np.uint32) * 7
    dst = np.zeros(64 * 4, np.uint32)
    binary = _run(SHARED_V4, 64, src, dst, 0)
    assert binary.gang_refusal is None
    np.testing.assert_array_equal(dst.reshape(64, 4), np.roll(src.reshape(64, 4), -1, axis=0))


def test_v4_past_the_end_faults_at_its_thread():
    """The last active lane's vector ends 16 bytes past the source buffer."""
    src = np.arange(33 * 4 - 4, dtype=np.float32)
    dst = np.zeros(33 * 4, np.float32)
    with pytest.raises(IllegalAddressError, match="thread 32"):
        _run(_copy_v4(16), 64, src, dst, 33)


# cp.async of 16 bytes per thread into shared memory with a src-size per thread (src[n + t]
# as a byte count: 16, 0 or in between), then each thread copies its shared vector out.
CP_ASYNC = """
.reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 16 .b8 tile[1024];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
add.u32 %r3, %r1, %r2; mul.wide.u32 %rd3, %r3, 4; add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r4, [%rd4];
mul.wide.u32 %rd5, %r2, 16; add.s64 %rd6, %rd1, %rd5;
mov.u32 %r5, tile; shl.b32 %r6, %r2, 4; add.u32 %r7, %r5, %r6;
cp.async.cg.shared.global [%r7], [%rd6], 16, %r4;
cp.async.commit_group;
cp.async.wait_group 0;
bar.sync 0;
ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r7];
add.s64 %rd7, %rd2, %rd5;
st.global.v4.u32 [%rd7], {%r8, %r9, %r10, %r11};
ret;"""


@pytest.mark.parametrize("counts", ["whole", "whole_or_none", "partial"])
def test_cp_async_copies_its_source_bytes_and_zero_fills(counts):
    """Whole copies and src-size 0 (Triton's masked lanes) a lane's 16 bytes at once (every
    lane whole: without masks); partial byte counts lane by lane."""
    threads = 64
    rng = np.random.default_rng(3)
    sizes = np.full(threads, 16) if counts == "whole" else \
        rng.choice([0, 16], threads) if counts == "whole_or_none" else \
        rng.integers(0, 17, threads)
    data = rng.integers(1, 2**32, threads * 4, dtype=np.uint64).astype(np.uint32)
    src = np.concatenate([data, sizes.astype(np.uint32)])
    dst = np.full(threads * 4, 7, np.uint32)
    binary = _run(CP_ASYNC, threads, src, dst, threads * 4)
    assert binary.gang_refusal is None
    want = np.zeros(threads * 16, np.uint8)
    raw = data.view(np.uint8)
    for t, size in enumerate(sizes):
        want[16 * t:16 * t + size] = raw[16 * t:16 * t + size]
    np.testing.assert_array_equal(dst.view(np.uint8), want)



def test_cp_async_past_its_source_faults_at_its_thread():
    """Every lane copies 16 bytes, from a source of 64 words (its src-sizes, all 16): lane
    16's copy is the first past its end."""
    src = np.full(64, 16, np.uint32)
    dst = np.zeros(64 * 4, np.uint32)
    with pytest.raises(IllegalAddressError, match="thread 16"):
        _run(CP_ASYNC, 64, src, dst, 0)

# Triton's layout for a size not known to be a multiple of 16: thread t loads elements
# 4t..4t+3 one by one, each under its own predicate (element < n), zero where not loaded,
# and stores their sum at dst[t].
PREDICATED_RUN = """
.reg .pred %p<5>; .reg .b32 %r<12>; .reg .f32 %f<8>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x; shl.b32 %r3, %r2, 2;
or.b32 %r4, %r3, 1; or.b32 %r5, %r3, 2; or.b32 %r6, %r3, 3;
setp.lt.u32 %p1, %r3, %r1; setp.lt.u32 %p2, %r4, %r1;
setp.lt.u32 %p3, %r5, %r1; setp.lt.u32 %p4, %r6, %r1;
mul.wide.u32 %rd3, %r3, 4; add.s64 %rd4, %rd1, %rd3;
mov.f32 %f1, 0f00000000;
@%p1 ld.global.f32 %f1, [%rd4];
mov.f32 %f2, 0f00000000;
@%p2 ld.global.f32 %f2, [%rd4+4];
mov.f32 %f3, 0f00000000;
@%p3 ld.global.f32 %f3, [%rd4+8];
mov.f32 %f4, 0f00000000;
@%p4 ld.global.f32 %f4, [%rd4+12];
add.f32 %f5, %f1, %f2; add.f32 %f6, %f3, %f4; add.f32 %f7, %f5, %f6;
mul.wide.u32 %rd3, %r2, 4; add.s64 %rd5, %rd2, %rd3;
st.global.f32 [%rd5], %f7;
ret;"""


@pytest.mark.parametrize("n", [256, 150, 149, 1])
def test_predicated_scalar_loads_of_a_run_load_together(n):
    """Four predicated loads of consecutive elements per thread: one masked access of the
    warp's 128 elements; a source of exactly n floats, so the last lanes' runs end past
    it (149: three of a lane's four elements) without a fault."""
    src = np.arange(1, n + 1, dtype=np.float32)
    dst = np.full(64, -1.0, np.float32)
    assert _run(PREDICATED_RUN, 64, src, dst, n).gang_refusal is None
    padded = np.zeros(256, np.float32)
    padded[:n] = src
    np.testing.assert_array_equal(dst, padded.reshape(64, 4).sum(axis=1))
    assert "llvm.masked.load.v128f32" in _gang_ir(PREDICATED_RUN, 64)


# The stores' counterpart: thread t writes t + k / 4 to element 4t + k (k < 4) of dst, each
# under its own predicate (element < n).
PREDICATED_STORES = """
.reg .pred %p<5>; .reg .b32 %r<12>; .reg .f32 %f<6>; .reg .b64 %rd<6>;
ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x; shl.b32 %r3, %r2, 2;
or.b32 %r4, %r3, 1; or.b32 %r5, %r3, 2; or.b32 %r6, %r3, 3;
setp.lt.u32 %p1, %r3, %r1; setp.lt.u32 %p2, %r4, %r1;
setp.lt.u32 %p3, %r5, %r1; setp.lt.u32 %p4, %r6, %r1;
cvt.rn.f32.u32 %f1, %r2;
add.f32 %f2, %f1, 0f3E800000; add.f32 %f3, %f1, 0f3F000000; add.f32 %f4, %f1, 0f3F400000;
mul.wide.u32 %rd3, %r3, 4; add.s64 %rd4, %rd2, %rd3;
@%p1 st.global.f32 [%rd4], %f1;
@%p2 st.global.f32 [%rd4+4], %f2;
@%p3 st.global.f32 [%rd4+8], %f3;
@%p4 st.global.f32 [%rd4+12], %f4;
ret;"""


@pytest.mark.parametrize("n", [256, 149, 2])
def test_predicated_scalar_stores_of_a_run_store_together(n):
    src = np.zeros(1, np.float32)
    dst = np.full(n, -1.0, np.float32)
    _run(PREDICATED_STORES, 64, src, dst, n)
    np.testing.assert_array_equal(dst, (np.arange(256) / 4).astype(np.float32)[:n])
    assert "llvm.masked.store.v128f32" in _gang_ir(PREDICATED_STORES, 64)
