"""Warp gangs' global accesses through a 32-bit index tested at run time
(codegen/targets/cpu/gang/indexed.py): a grid-stride loop between the branch that leaves out
the threads past the end and a warp reduction, as reduce_warp.cu's. Its index has no lane
form when compiling; where lane l holds i0 + l (no wrap) and the warp's range lies in one
allocation the access is one vector load, else the general path checks each lane."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import allocate_alone, in_child
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[t] = sum over the grid-stride loop of x[i] (i = ctaid * ntid + tid + k * ntid * nctaid,
# STEP: the index's step; i < n), then the warp's butterfly sum of those (one shfl.bfly by
# 16: lanes l and l ^ 16 add theirs). `base` is x's address minus SHIFT elements (the index
# starts at SHIFT), so that an index near 2^31 can still address x.
REDUCE = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n,
                                  .param .u32 shift)
{
.reg .pred %p<3>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out]; ld.param.u32 %r6, [n];
ld.param.u32 %r12, [shift];
mov.u32 %r1, %ntid.x; mov.u32 %r7, %ctaid.x; mov.u32 %r8, %tid.x;
mad.lo.s32 %r9, %r7, %r1, %r8;
add.s32 %r10, %r9, %r12;
add.s32 %r13, %r6, %r12;
mov.u32 %r11, 0;
setp.ge.s32 %p1, %r10, %r13;
@%p1 bra DONE;
mov.u32 %r2, %nctaid.x; mul.lo.s32 %r3, %r1, %r2; STEP
cvta.to.global.u64 %rd3, %rd1;
LOOP:
mul.wide.s32 %rd5, %r10, 4;
add.s64 %rd6, %rd3, %rd5;
ld.global.u32 %r4, [%rd6];
add.s32 %r11, %r11, %r4;
add.s32 %r10, %r10, %r3;
setp.lt.s32 %p2, %r10, %r13;
@%p2 bra LOOP;
DONE:
shfl.sync.bfly.b32 %r5, %r11, 16, 31, -1;
add.s32 %r14, %r11, %r5;
mul.wide.s32 %rd4, %r9, 4; add.s64 %rd7, %rd2, %rd4;
st.global.u32 [%rd7], %r14;
ret;
}
"""
PLAIN = REDUCE.replace("STEP", "")


def _run(ptx: str, x: np.ndarray, n: int, grid: int, block: int, shift: int = 0,
         base_shift: int = 0) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    out = dev.allocate(4 * grid * block, stream=stream)
    xs = allocate_alone(dev, max(x.nbytes, 4), stream)  # (wrapped lanes fault 2-8 GiB off)
    xs.copy_from(x, stream=stream)
    # x's address as the kernel sees it, less base_shift elements (mod 2^64)
    address = np.uint64((int(xs.handle) - 4 * base_shift) % (1 << 64))
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, address, out,
           np.int32(n), np.int32(shift))
    got = np.empty(grid * block, np.int32)
    out.copy_to(got, stream=stream)
    stream.sync()
    return got


def _expected(x: np.ndarray, n: int, grid: int, block: int, step: int | None = None):
    step = grid * block if step is None else step
    acc = np.zeros(grid * block, np.int64)
    for t in range(grid * block):
        acc[t] = x[t:n:step].sum() if t < n else 0
    lanes = np.arange(grid * block)
    return (acc + acc[lanes ^ 16]).astype(np.int32)


def test_the_loop_loads_through_the_index_test():
    llmod, _ = build_gang(build(parse(PLAIN)), "k", (128, 1, 1), CpuOptions())
    assert "\nindexed_fast" in str(llmod)


@pytest.mark.parametrize("n", [4096, 4096 - 5, 1000, 17])
def test_lanes_with_different_trip_counts_sum_right(n):
    # 4 blocks of 128: where n is not a multiple of the grid, lanes leave the loop a pass
    # apart (the last pass's warp partly in: the general path), or never enter it
    x = (np.arange(n) % 89).astype(np.int32)
    got = _run(PLAIN, x, n, 4, 128)
    assert (got == _expected(x, n, 4, 128)).all()


def test_lanes_that_are_not_consecutive_take_the_general_path():
    # i = ctaid * ntid + (tid ^ 1): lanes pairwise swapped
    ptx = PLAIN.replace("mad.lo.s32 %r9, %r7, %r1, %r8;",
                        "xor.b32 %r15, %r8, 1; mad.lo.s32 %r9, %r7, %r1, %r15;")
    ptx = ptx.replace("mul.wide.s32 %rd4, %r9, 4;",
                      "mad.lo.s32 %r15, %r7, %r1, %r8; mul.wide.s32 %rd4, %r15, 4;")
    n = 2048 + 64
    x = (np.arange(n) % 13).astype(np.int32)
    got = _run(ptx, x, n, 4, 128)
    lanes = np.arange(4 * 128)
    acc = np.array([x[t ^ 1:n:512].sum() for t in lanes], np.int64)
    assert (got == (acc + acc[lanes ^ 16]).astype(np.int32)).all()


def test_an_access_past_the_allocation_still_faults():
    # the loop runs to n + 100 over an allocation of n elements: the access faults with
    # ptxport's error, as on the general path
    n = 4096
    x = np.ones(n, np.int32)
    with pytest.raises(IllegalAddressError):
        _run(PLAIN, x, n + 100, 4, 128)


def test_an_index_that_wraps_inside_a_warp_is_not_taken_as_consecutive():
    # the index starts at 2^31 - 16 (x's address passed 2^31 - 16 elements low): lanes 16
    # to 31 wrap to -2^31..., whose addresses lie 8 GiB below x: the access must fault, not
    # read x[16..31] as one consecutive vector would
    # (the bounds compared unsigned, so that all 32 lanes run the loop)
    ptx = PLAIN.replace("setp.ge.s32", "setp.ge.u32").replace("setp.lt.s32", "setp.lt.u32")
    shift = (1 << 31) - 16
    x = np.ones(64, np.int32)
    with pytest.raises(IllegalAddressError):
        _run(ptx, x, 32, 1, 32, shift=shift, base_shift=shift)
    # and the same lanes 16 elements lower run through x without a fault
    got = _run(ptx, x, 32, 1, 32, shift=shift - 16, base_shift=shift - 16)
    assert (got == 2).all()


def test_a_store_through_the_index_writes_each_lane():
    # x[i] += i in the loop (a load and a store through the tested index), then the sum
    ptx = PLAIN.replace("add.s32 %r11, %r11, %r4;",
                        "add.s32 %r4, %r4, %r10; st.global.u32 [%rd6], %r4; "
                        "add.s32 %r11, %r11, %r4;")
    llmod, _ = build_gang(build(parse(ptx)), "k", (128, 1, 1), CpuOptions())
    labels = [line for line in str(llmod).splitlines()
              if line.startswith(("indexed_fast", '"indexed_fast')) and line.endswith(":")]
    assert len(labels) >= 2     # the load's and the store's
    n = 4096 - 37
    x = (np.arange(n) % 11).astype(np.int32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    xs = dev.allocate(x.nbytes, stream=stream)
    out = dev.allocate(4 * 512, stream=stream)
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=128), kernel, xs, out, np.int32(n),
           np.int32(0))
    after = np.empty_like(x)
    xs.copy_to(after, stream=stream)
    stream.sync()
    assert (after == x + np.arange(n)).all()


# reduce_shared.cu's loop: x[i], then x[i + 64] where i + 64 < n, in a block of its own
# whose one predecessor computed the address (4 blocks of 64 threads, 128 elements a block)
PAIRS = PLAIN.replace("add.s32 %r10, %r9, %r12;",
                      "mad.lo.s32 %r10, %r7, 128, %r8; add.s32 %r10, %r10, %r12;") \
    .replace("mul.lo.s32 %r3, %r1, %r2;", "shl.b32 %r3, %r2, 7;") \
    .replace("""add.s32 %r11, %r11, %r4;
add.s32 %r10, %r10, %r3;""", """add.s32 %r11, %r11, %r4;
add.s32 %r15, %r10, 64;
setp.ge.s32 %p2, %r15, %r13;
@%p2 bra NEXT;
ld.global.u32 %r4, [%rd6+256];
add.s32 %r11, %r11, %r4;
NEXT:
add.s32 %r10, %r10, %r3;""")


@pytest.mark.parametrize("n", [1024, 1024 - 40, 1024 - 64 - 3, 300])
def test_the_second_load_after_its_test_goes_through_the_index_too(n):
    llmod, _ = build_gang(build(parse(PAIRS)), "k", (64, 1, 1), CpuOptions())
    labels = [line for line in str(llmod).splitlines()
              if line.startswith(("indexed_fast", '"indexed_fast')) and line.endswith(":")]
    assert len(labels) >= 2
    x = (np.arange(n) % 23).astype(np.int32)
    got = _run(PAIRS, x, n, 4, 64)
    acc = np.zeros(256, np.int64)
    for c in range(4):
        for t in range(64):
            for i in range(c * 128 + t, n, 512):
                acc[c * 64 + t] += x[i] + (x[i + 64] if i + 64 < n else 0)
    lanes = np.arange(256)
    assert (got == (acc + acc[lanes ^ 16]).astype(np.int32)).all()


# histogram.cu's byte loads: data[i] of a char array, the index widened by cvt (no scaling),
# summed as in PLAIN (x's elements bytes, `shift` unused)
BYTES = PLAIN.replace("mul.wide.s32 %rd5, %r10, 4;", "cvt.s64.s32 %rd5, %r10;") \
    .replace("ld.global.u32 %r4, [%rd6];", "ld.global.u8 %r4, [%rd6];")


@pytest.mark.parametrize("widen", ["cvt.s64.s32", "cvt.u64.u32", "cvt.u64.s32"])
@pytest.mark.parametrize("n", [4096, 4096 - 5, 1000])
def test_byte_loads_through_a_widened_index_sum_right(widen, n):
    ptx = BYTES.replace("cvt.s64.s32", widen)
    llmod, _ = build_gang(build(parse(ptx)), "k", (128, 1, 1), CpuOptions())
    assert "\nindexed_fast" in str(llmod)
    x = (np.arange(n) % 251).astype(np.uint8)
    got = _run(ptx, x, n, 4, 128)
    assert (got == _expected(x.astype(np.int32), n, 4, 128)).all()


def test_a_scaled_widening_of_bytes_is_not_taken_as_consecutive():
    # cvt then shl by 1: lanes 2 bytes apart, so the 32-byte vector load would be wrong; the
    # access must not go through the index test (and still sums right)
    ptx = BYTES.replace("cvt.s64.s32 %rd5, %r10;",
                        "cvt.s64.s32 %rd4, %r10; shl.b64 %rd5, %rd4, 1;")
    llmod, _ = build_gang(build(parse(ptx)), "k", (128, 1, 1), CpuOptions())
    assert "\nindexed_fast" not in str(llmod)
    n = 2048
    x = (np.arange(2 * n) % 7).astype(np.uint8)
    got = _run(ptx, x, n, 4, 128)
    acc = np.array([x[2 * t:2 * n:2 * 512].astype(np.int64).sum() for t in range(512)])
    lanes = np.arange(512)
    assert (got == (acc + acc[lanes ^ 16]).astype(np.int32)).all()


def test_a_byte_index_that_wraps_inside_a_warp_is_not_taken_as_consecutive():
    # as for words: lanes 16 to 31 wrap to -2^31 (signed widening): 2 GiB below x, a fault
    ptx = BYTES.replace("setp.ge.s32", "setp.ge.u32").replace("setp.lt.s32", "setp.lt.u32")
    shift = (1 << 31) - 16
    x = np.ones(64, np.uint8)
    with pytest.raises(IllegalAddressError):        # (_run's base_shift counts 4 bytes)
        _run(ptx, x, 32, 1, 32, shift=shift, base_shift=shift // 4)
    got = _run(ptx, x, 32, 1, 32, shift=shift - 16, base_shift=(shift - 16) // 4)
    assert (got == 2).all()


def test_a_whole_warp_past_the_allocation_faults_at_its_first_lane():
    # one warp, n = 64 over 32 elements: the second pass's 32 consecutive lanes lie past x
    # (the range test fails: the general path, its address vector made again there from
    # the index), and lane 0's address, x + 128, is the one the error names
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PLAIN, code_type="ptx").compile("native").get_kernel("k")
    xs = dev.allocate(128, stream=stream)
    out = dev.allocate(128, stream=stream)
    xs.copy_from(np.ones(32, np.int32), stream=stream)
    with pytest.raises(IllegalAddressError,
                       match=f"read 4 bytes at address {int(xs.handle) + 128:#x}, .*thread 0;"):
        launch(stream, LaunchConfig(grid=1, block=32), kernel, xs, out, np.int32(64),
               np.int32(0))
        stream.sync()


# out[i] = x[i] (ACROSS_LIVE: + i), the address's widening before a barrier and the store
# after it. In a block of 48 threads the index has no lane form (the second warp's lanes
# past the block's end), so the store is indexed.py's where the index is held there: read
# after the barrier, it is kept in the warp's frame. Where nothing reads it after the
# barrier, a warp resuming there no longer has it (gang/streams.held): reading it gave LLVM
# an undefined value whose branch it dropped, and with the lanes' test a branch of its own
# (inside_one_allocation's `first`) a partial-warp block hung (test_cpu_waits.py).
ACROSS = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out)
{
.reg .b32 %r<8>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %ntid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %tid.x;
mad.lo.s32 %r4, %r2, %r1, %r3;
mul.wide.u32 %rd3, %r4, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r5, [%rd4];
bar.sync 0;
add.s64 %rd5, %rd2, %rd3;
st.global.u32 [%rd5], %r5;
ret;
}
"""
ACROSS_LIVE = ACROSS.replace("st.global.u32 [%rd5], %r5;",
                             "add.s32 %r5, %r5, %r4; st.global.u32 [%rd5], %r5;")


@pytest.mark.parametrize("live", [False, True], ids=["dead", "live"])
def test_an_index_is_read_after_a_barrier_only_where_the_frame_keeps_it(live):
    ptx = ACROSS_LIVE if live else ACROSS
    llmod, _ = build_gang(build(parse(ptx)), "k", (48, 1, 1), CpuOptions())
    assert ("\nindexed_fast" in str(llmod)) == live
    n = 3 * 48
    x = np.random.default_rng(5).integers(-1000, 1000, n).astype(np.int32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    xs = dev.allocate(x.nbytes, stream=stream)
    out = dev.allocate(x.nbytes, stream=stream)
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=3, block=48), kernel, xs, out)
    got = np.empty_like(x)
    out.copy_to(got, stream=stream)
    stream.sync()
    assert (got == x + (np.arange(n) if live else 0)).all()


# tests/kernels/dynamic_shared.cu's reverse_block (NVRTC 13.5's PTX, its .loc lines left out):
# tile[t] = data[base + t]; __syncthreads(); data[base + t] = tile[b - 1 - t]. The store
# after the barrier goes through the address made before it; its index (%r4) and base
# (%rd2) are read no more. In blocks of 48 or 80 threads (a partial warp: no lane forms) the
# store was indexed.py's, reading them where a resumed warp no longer has them, and the
# launch hung (main before streams.held).
REVERSE = HEADER + """.extern .shared .align 16 .b8 tile[];
.visible .entry k(.param .u64 data, .param .u32 n)
{
.reg .b32 %r<14>; .reg .b64 %rd<5>;
ld.param.u64 %rd1, [data];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %ctaid.x;
mad.lo.s32 %r4, %r3, %r2, %r1;
mul.wide.s32 %rd3, %r4, 4;
add.s64 %rd4, %rd2, %rd3;
ld.global.u32 %r5, [%rd4];
shl.b32 %r6, %r1, 2; mov.u32 %r7, tile; add.s32 %r8, %r7, %r6;
st.shared.u32 [%r8], %r5;
bar.sync 0;
not.b32 %r9, %r1; add.s32 %r10, %r2, %r9; shl.b32 %r11, %r10, 2; add.s32 %r12, %r7, %r11;
ld.shared.u32 %r13, [%r12];
st.global.u32 [%rd4], %r13;
ret;
}
"""
_REVERSE_RUN = """
import sys
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
kernel = Program(sys.stdin.read(), code_type="ptx").compile("native").get_kernel("k")
dev = Device("cpu")
stream = dev.create_stream()
for b in (48, 80):
    x = np.arange(5 * b, dtype=np.int32) * 7 + 3
    data = dev.allocate(x.nbytes, stream=stream)
    data.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=5, block=b, shmem_size=4 * b), kernel, data,
           np.int32(x.size))
    got = np.empty_like(x)
    data.copy_to(got, stream=stream)
    stream.sync()
    print(b, bool((got == x.reshape(5, b)[:, ::-1].reshape(-1)).all()))
"""


def test_a_block_reversal_in_partial_warps_ends_and_reverses():
    assert in_child(_REVERSE_RUN, REVERSE).split() == ["48", "True", "80", "True"]
