"""The gang's memory checks fail into paths that recompute the lanes' addresses from lane 0's
(checks.cold_addrs) where their offsets are known: those paths must still fault at the first
bad lane of the access, naming its line, thread, size and address, in loops (where the hot
code no longer keeps the lanes' address vectors for them) and per half warp."""

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# thread t (block (16, H)) stores d[i * stride + ty * half + tx] = that index for i < n, then
# sums d[...] for i < m into out[t]: a loop of shared accesses at lane-constant offsets
# (tx * 4, plus ty * half * 4 per half warp: a form known per half when `half` is a param)
SHARED = HEADER + """.extern .shared .align 4 .b32 d[];
.visible .entry k(.param .u64 out, .param .u32 n, .param .u32 m, .param .u32 half,
                  .param .u32 stride)
{
.reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .pred %p<3>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [n]; ld.param.u32 %r2, [m];
ld.param.u32 %r3, [half]; ld.param.u32 %r4, [stride];
mov.u32 %r5, %tid.x; mov.u32 %r6, %tid.y;
mad.lo.s32 %r7, %r6, %r3, %r5;
mov.u32 %r8, d; shl.b32 %r9, %r7, 2; add.s32 %r10, %r8, %r9;
shl.b32 %r11, %r4, 2;
mov.u32 %r12, 0; mov.u32 %r13, %r10; mov.u32 %r14, %r7;
STORE:
st.shared.u32 [%r13], %r14;
add.s32 %r13, %r13, %r11; add.s32 %r14, %r14, %r4; add.s32 %r12, %r12, 1;
setp.lt.u32 %p1, %r12, %r1;
@%p1 bra STORE;
bar.sync 0;
mov.u32 %r12, 0; mov.u32 %r13, %r10; mov.u32 %r15, 0;
LOAD:
ld.shared.u32 %r16, [%r13];
add.s32 %r15, %r15, %r16;
add.s32 %r13, %r13, %r11; add.s32 %r12, %r12, 1;
setp.lt.u32 %p2, %r12, %r2;
@%p2 bra LOAD;
mad.lo.s32 %r17, %r6, 16, %r5;
mul.wide.u32 %rd2, %r17, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r15;
ret;
}
"""

# thread t sums a[i * 32 + t] for i < m (one warp): a loop of global loads at lane offsets
GLOBAL = HEADER + """.visible .entry k(.param .u64 a, .param .u64 out, .param .u32 m)
{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [m];
mov.u32 %r2, %tid.x;
mul.wide.u32 %rd3, %r2, 4; add.s64 %rd4, %rd1, %rd3;
mov.u32 %r3, 0; mov.u32 %r4, 0;
LOOP:
ld.global.u32 %r5, [%rd4];
add.s32 %r4, %r4, %r5;
add.s64 %rd4, %rd4, 128; add.s32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, %r1;
@%p1 bra LOOP;
add.s64 %rd5, %rd2, %rd3; st.global.u32 [%rd5], %r4;
ret;
}
"""


def _line(ptx: str, text: str) -> int:
    return next(i for i, line in enumerate(ptx.splitlines(), 1) if text in line)


def _shared(n: int, m: int, half: int, stride: int, shmem: int, rows: int = 2):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SHARED, code_type="ptx").compile("native").get_kernel("k")
    out = np.zeros(16 * rows, np.uint32)
    buffer = dev.allocate(out.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=(16, rows), shmem_size=shmem), kernel, buffer,
           np.uint32(n), np.uint32(m), np.uint32(half), np.uint32(stride))
    buffer.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return out


def _sums(m: int, half: int, stride: int, rows: int = 2):
    t = np.arange(16 * rows)
    first = (t // 16) * half + t % 16
    return sum(first + i * stride for i in range(m)).astype(np.uint32)


@pytest.mark.parametrize("half", [16, 40])
def test_shared_loops_at_lane_offsets_read_what_they_wrote(half):
    stride = 2 * half
    assert (_shared(5, 5, half, stride, 4 * 5 * stride) == _sums(5, half, stride)).all()


@pytest.mark.parametrize("half, shmem, text, thread", [
    # 5 rounds of 32 words: the last store's lanes 24.. (consecutive) are past 152 words
    (16, 4 * 152, "st.shared", 24),
    # halves 40 words apart: the last round's second half starts at word 4 * 80 + 40
    (40, 4 * (4 * 80 + 45), "st.shared", 21),
])
def test_a_shared_store_in_a_loop_faults_at_its_first_bad_lane(half, shmem, text, thread):
    with pytest.raises(IllegalAddressError, match=rf"wrote 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {_line(SHARED, text)} in "
                       rf"block \(0, 0, 0\), thread {thread};"):
        _shared(5, 5, half, 2 * half, shmem)


@pytest.mark.parametrize("half", [16, 40])
def test_a_shared_load_past_the_stores_faults_at_its_first_bad_lane(half):
    # stores inside (4 rounds), loads one round more: half a round (the first half warp's
    # words) fits past the 4 rounds, the second half warp's first lane is outside
    stride = 2 * half
    with pytest.raises(IllegalAddressError, match=rf"read 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {_line(SHARED, 'ld.shared')} in "
                       r"block \(0, 0, 0\), thread 16;"):
        _shared(4, 5, half, stride, 4 * (4 * stride + half))


def _global(words: int, m: int):
    """(the address of a's buffer, the function that launches the kernel, out)"""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(GLOBAL, code_type="ptx").compile("native").get_kernel("k")
    a = np.arange(words, dtype=np.uint32)
    out = np.zeros(32, np.uint32)
    bufs = [dev.allocate(x.nbytes, stream=stream) for x in (a, out)]
    bufs[0].copy_from(a, stream=stream)

    def run():
        launch(stream, LaunchConfig(grid=1, block=32), kernel, *bufs, np.uint32(m))
        bufs[1].copy_to(out, stream=stream)
        stream.sync()
        assert kernel._binary(dev).gang_refusal is None
    return int(bufs[0].handle), run, out


def test_a_global_loop_at_lane_offsets_sums_its_columns():
    _, run, out = _global(32 * 6, 6)
    run()
    assert (out == np.arange(32 * 6).reshape(6, 32).sum(axis=0)).all()


def test_a_global_load_in_a_loop_faults_at_its_first_bad_lane_and_address():
    # the buffer ends 8 words into round 5 (i = 5): lane 8 there is the first outside it
    base, run, _ = _global(32 * 5 + 8, 6)
    with pytest.raises(IllegalAddressError, match=rf"read 4 bytes at address "
                       rf"{base + 4 * (32 * 5 + 8):#x}, outside every allocation, at line "
                       rf"{_line(GLOBAL, 'ld.global')} in block \(0, 0, 0\), thread 8;"):
        run()
