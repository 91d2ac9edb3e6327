"""Warp gangs' shared loads through windows (codegen/targets/cpu/gang/windows.py) and cp.async
copies in runs of lanes (gang/async_copy.py), in the layouts of Triton's IEEE f32 tl.dot: each
thread reads its rows of A as .v4/.v2/scalar loads that a half warp shares and its columns of
B as .v2 loads 8 bytes apart; the tiles come in by cp.async, 8 lanes to a row. Against numpy,
with the range test's fault."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.gang.windows import LIMIT, Window, window_plan
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"
PARAMS = ".param .u64 src, .param .u64 dst, .param .u32 n"


def _ptx(body: str) -> str:
    return HEADER + f".visible .entry k({PARAMS})\n{{\n{body}\n}}\n"


def _run(body: str, block: int, src: np.ndarray, dst: np.ndarray, n: int):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(_ptx(body), code_type="ptx").compile("native").get_kernel("k")
    buffers = []
    for a in (src, dst):
        buf = dev.allocate(a.nbytes, stream=stream)
        buf.copy_from(a, stream=stream)
        buffers.append(buf)
    launch(stream, LaunchConfig(grid=1, block=block), kernel, *buffers, np.uint32(n))
    buffers[1].copy_to(dst, stream=stream)
    stream.sync()
    return kernel._binary(dev)


# --- the plan ------------------------------------------------------------------------------

HALF_ROWS = [256 * (lane // 16) for lane in range(32)]        # one address a half warp
COLUMNS = [8 * (lane % 16) for lane in range(32)]             # halves alike, 8 bytes apart


def test_one_address_a_half_warp_is_a_window_a_half():
    windows, picks = window_plan(HALF_ROWS, False, 32, 4, 4)
    assert windows == [Window(0, 0, 4), Window(16, 0, 4)]
    assert picks == [0] * 16 + [4] * 16


def test_halves_alike_share_one_window():
    windows, picks = window_plan(COLUMNS, False, 32, 4, 2)
    assert windows == [Window(0, 0, 32)]
    assert picks == [2 * (lane % 16) for lane in range(32)]


def test_offsets_below_lane_0_and_wrapped_offsets():
    """A window starts at the lowest lane, below lane 0's address where lanes lie lower
    (offsets modulo 2**bits: -4 is 2**32 - 4)."""
    offsets = [(4 * (31 - lane) - 4 * 31) % 2**32 for lane in range(32)]
    windows, picks = window_plan(offsets, False, 32, 4, 1)
    assert windows == [Window(0, -124, 32)]
    assert picks == [31 - lane for lane in range(32)]


@pytest.mark.parametrize("offsets, size, count", [
    ([4 * lane for lane in range(32)], 8, 1),            # not whole elements apart
    ([64 * lane for lane in range(32)], 4, 1),           # each half wider than LIMIT
])
def test_no_window(offsets, size, count):
    assert window_plan(offsets, False, 32, size, count) is None


def test_halves_with_their_own_bases():
    """A `halves` form: each half's offsets from its own first lane, the gap unknown."""
    offsets = [4 * (lane % 16) for lane in range(32)]
    windows, picks = window_plan(offsets, True, 64, 4, 1)
    assert windows == [Window(0, 0, 16), Window(16, 0, 16)]
    assert picks == list(range(32))
    assert LIMIT >= 32


# --- kernels -------------------------------------------------------------------------------

# 128 threads fill a 4 KiB tile (thread t's 32 bytes from src), then each reads as Triton's
# f32 dot does: A rows (row = (t >> 4) & 7, 256 bytes apart, the same in a half warp) as a
# .v4 at +OFF, a .v2 at +OFF + 32 and a scalar at +OFF + 80, and B columns (8 bytes apart in
# a half warp, both halves alike) as a .v2 at 2048 + 128 * ((t >> 5) & 3); it writes the 9
# words to dst[12 t ...] (the last three words repeat the ninth).
TILE_READS = """
.reg .b32 %r<24>; .reg .b64 %rd<8>;
.shared .align 16 .b8 tile[4096];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 32; add.s64 %rd4, %rd1, %rd3;
ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd4+16];
mov.u32 %r10, tile; shl.b32 %r11, %r1, 5; add.u32 %r12, %r10, %r11;
st.shared.v4.u32 [%r12], {%r2, %r3, %r4, %r5};
st.shared.v4.u32 [%r12+16], {%r6, %r7, %r8, %r9};
bar.sync 0;
shl.b32 %r13, %r1, 4; and.b32 %r14, %r13, 1792; add.u32 %r15, %r10, %r14;
ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [%r15+OFF];
ld.shared.v2.u32 {%r6, %r7}, [%r15+OFF2];
ld.shared.u32 %r8, [%r15+OFF3];
shl.b32 %r16, %r1, 3; and.b32 %r17, %r16, 120; shl.b32 %r18, %r1, 2; and.b32 %r19, %r18, 384;
add.u32 %r20, %r17, %r19; add.u32 %r21, %r10, %r20;
ld.shared.v2.u32 {%r9, %r22}, [%r21+2048];
mul.wide.u32 %rd5, %r1, 48; add.s64 %rd6, %rd2, %rd5;
st.global.v4.u32 [%rd6], {%r2, %r3, %r4, %r5};
st.global.v4.u32 [%rd6+16], {%r6, %r7, %r8, %r9};
st.global.v4.u32 [%rd6+32], {%r22, %r22, %r22, %r22};
ret;"""


def _tile_reads(off: int) -> str:
    return TILE_READS.replace("OFF3", str(off + 80)).replace("OFF2", str(off + 32)).replace(
        "OFF", str(off))


def test_tile_reads_as_triton_dot_reads_them():
    src = np.arange(1024, dtype=np.uint32) * 7 + 1
    dst = np.zeros(128 * 12, np.uint32)
    binary = _run(_tile_reads(64), 128, src, dst, 0)
    assert binary.gang_refusal is None
    words = src.copy()            # the tile, by 4-byte word
    want = []
    for t in range(128):
        a = ((t >> 4) & 7) * 64 + 16
        b = 512 + ((t >> 5) & 3) * 32 + 2 * (t & 15)
        want += [*words[a:a + 4], words[a + 8], words[a + 9], words[a + 20], words[b],
                 *[words[b + 1]] * 4]
    np.testing.assert_array_equal(dst, np.array(want, np.uint32))


def test_tile_reads_take_windows_not_gathers():
    """The full-mask copy of the segment loads windows: the module has the windows' block
    of zeros (their loads' fallback past the range test)."""
    llmod, _ = build_gang(build(parse(_ptx(_tile_reads(64)))), "k", (128, 1, 1),
                          CpuOptions())
    assert "ptxport.window_zeros" in str(llmod)


def test_window_past_the_tile_faults_at_its_first_thread():
    """With OFF 3400 row r's .v4 ends at 256 r + 3416, past the 4 KiB tile from row 3 on:
    threads 48-63 (warp 1's second half) are the first to read outside it; the windows'
    range test fails and the exact per-lane test names the first of them."""
    src = np.zeros(1024, np.uint32)
    dst = np.zeros(128 * 12, np.uint32)
    with pytest.raises(IllegalAddressError, match="thread 48"):
        _run(_tile_reads(3400), 128, src, dst, 0)


# The tile's .v4 row read of TILE_READS beside a guarded scalar read from the same base at
# +3900, which only threads 0-15 (row 0) make: for the other rows it would lie past the tile,
# so the range test of the loads' group fails where no load faults.
GUARDED_NEIGHBOUR = """
.reg .pred %p<2>; .reg .b32 %r<24>; .reg .b64 %rd<8>;
.shared .align 16 .b8 tile[4096];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 32; add.s64 %rd4, %rd1, %rd3;
ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd4+16];
mov.u32 %r10, tile; shl.b32 %r11, %r1, 5; add.u32 %r12, %r10, %r11;
st.shared.v4.u32 [%r12], {%r2, %r3, %r4, %r5};
st.shared.v4.u32 [%r12+16], {%r6, %r7, %r8, %r9};
bar.sync 0;
shl.b32 %r13, %r1, 4; and.b32 %r14, %r13, 1792; add.u32 %r15, %r10, %r14;
setp.lt.u32 %p1, %r1, 16;
mov.u32 %r6, 0;
ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [%r15+64];
@%p1 ld.shared.u32 %r6, [%r15+3900];
mul.wide.u32 %rd5, %r1, 32; add.s64 %rd6, %rd2, %rd5;
st.global.v4.u32 [%rd6], {%r2, %r3, %r4, %r5};
st.global.v4.u32 [%rd6+16], {%r6, %r6, %r6, %r6};
ret;"""


def test_window_beside_a_guarded_access_whose_group_test_fails():
    """The group's range test fails (the guarded read's lanes outside its guard lie past
    the tile), yet no access faults: the window loads read the tile, not their fallback."""
    src = np.arange(1024, dtype=np.uint32) * 3 + 5
    dst = np.zeros(128 * 8, np.uint32)
    _run(GUARDED_NEIGHBOUR, 128, src, dst, 0)
    want = []
    for t in range(128):
        a = ((t >> 4) & 7) * 64 + 16
        want += [*src[a:a + 4], *[src[975] if t < 16 else 0] * 4]
    np.testing.assert_array_equal(dst, np.array(want, np.uint32))


# cp.async of a 32 x 32 f32 tile in Triton's f32 layout: thread t copies 16 bytes of row
# t >> 3 (rows n bytes apart in src), column chunk t & 7, into tile + 16 t; src-size 16, or 0
# for every thread where n is 0 (zero-filled: Triton's copies past the last tile); then each
# thread copies its 16 shared bytes to dst + 16 t.
CP_ASYNC_ROWS = """
.reg .pred %p<2>; .reg .b32 %r<16>; .reg .b64 %rd<10>;
.shared .align 16 .b8 tile[4096];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
shr.u32 %r3, %r2, 3; mul.lo.u32 %r4, %r3, %r1; and.b32 %r5, %r2, 7; shl.b32 %r6, %r5, 4;
add.u32 %r7, %r4, %r6; cvt.u64.u32 %rd3, %r7; add.s64 %rd4, %rd1, %rd3;
setp.eq.u32 %p1, %r1, 0; selp.b32 %r8, 0, 16, %p1;
mov.u32 %r9, tile; shl.b32 %r10, %r2, 4; add.u32 %r11, %r9, %r10;
cp.async.cg.shared.global [%r11], [%rd4], 16, %r8;
cp.async.commit_group;
cp.async.wait_group 0;
bar.sync 0;
ld.shared.v4.u32 {%r12, %r13, %r14, %r15}, [%r11];
mul.wide.u32 %rd5, %r2, 16; add.s64 %rd6, %rd2, %rd5;
st.global.v4.u32 [%rd6], {%r12, %r13, %r14, %r15};
ret;"""


@pytest.mark.parametrize("row_bytes", [128, 1024, 0])
def test_cp_async_in_runs_of_a_tile_row(row_bytes):
    """Rows of 8 lanes' 16 bytes (128 bytes a row): one run a row where rows lie apart
    (row_bytes 1024), the whole warp one run where they follow each other (128), zeros
    where no lane reads (0)."""
    threads = 256
    rng = np.random.default_rng(5)
    src = rng.integers(0, 2**32, 32 * 1024 // 4, dtype=np.uint64).astype(np.uint32)
    dst = np.full(threads * 4, 7, np.uint32)
    binary = _run(CP_ASYNC_ROWS, threads, src, dst, row_bytes)
    assert binary.gang_refusal is None
    if row_bytes == 0:
        np.testing.assert_array_equal(dst, np.zeros_like(dst))
        return
    raw = src.view(np.uint8)
    want = np.concatenate([raw[(t >> 3) * row_bytes + (t & 7) * 16:][:16]
                           for t in range(threads)])
    np.testing.assert_array_equal(dst.view(np.uint8), want)
