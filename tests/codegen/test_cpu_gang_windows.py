"""Warp gangs' window loads (codegen/targets/cpu/gang/windows.py) and cp.async copies in runs of
lanes (gang/async_copy.py). In the layouts of Triton's IEEE f32 tl.dot: each thread reads its
rows of A as .v4/.v2/scalar loads that a half warp shares and its columns of B as .v2 loads 8
bytes apart; the tiles come in by cp.async, 8 lanes to a row. In Triton 3.9's cross-warp
reduction: lanes read `smem + 4 * (lane & 3)`, in shared memory and (the same lanes) in
global memory. Against numpy, with the range tests' faults at the first bad lane; and a
guarded access of lanes known consecutive in shared memory (Triton 3.6's) is checked over
its active lanes (memory.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang import windows as windows_module
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


def _launch(ptx: str, block: int, arrays: list, *scalars):
    """Launch the kernel `k` of `ptx` on one block, on device copies of `arrays` (copied back
    into them) and `scalars`; its binary."""
    return launch_on_cpu(ptx, LaunchConfig(grid=1, block=block), *arrays, *scalars)


def _run(body: str, block: int, src: np.ndarray, dst: np.ndarray, n: int):
    return _launch(_ptx(body), block, [src, dst], np.uint32(n))


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

# thread t copies its 32 bytes of src into a 4 KiB shared tile; %r15 = the tile + 256 *
# ((t >> 4) & 7), its row's start as Triton's f32 dot reads A
FILL_TILE = """.shared .align 16 .b8 tile[4096];
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
"""

# 128 threads fill a 4 KiB tile (thread t's 32 bytes from src), then each reads as Triton's
# f32 dot does: A rows (row = (t >> 4) & 7, 256 bytes apart, the same in a half warp) as a
# .v4 at +OFF, a .v2 at +OFF + 32 and a scalar at +OFF + 80, and B columns (8 bytes apart in
# a half warp, both halves alike) as a .v2 at 2048 + 128 * ((t >> 5) & 3); it writes the 9
# words to dst[12 t ...] (the last three words repeat the ninth).
TILE_READS = """
.reg .b32 %r<24>; .reg .b64 %rd<8>;
""" + FILL_TILE + """ld.shared.v4.u32 {%r2, %r3, %r4, %r5}, [%r15+OFF];
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
    of zeros (their loads' fallback past the range test) and their exact test, where
    passes/shared_bounds.py cannot prove them inside the tile (OFF 3400: rows 3-7 read past
    it); where it can (OFF 64, 128 threads), neither: they test nothing at run time."""
    def module(off: int) -> str:
        return str(build_gang(build(parse(_ptx(_tile_reads(off)))), "k", (128, 1, 1),
                              CpuOptions())[0])

    unproven, proven = module(3400), module(64)
    assert "ptxport.window_zeros" in unproven and "window_exact" in unproven
    assert "ptxport.window_zeros" not in proven and "window_exact" not in proven


def test_window_bases_are_opaque_registers():
    """CpuOptions.opaque_window_bases: each window group's base goes through an empty inline
    asm (its loads then address base + constant, not window + lane + constant); off, none."""
    def module(**choice) -> str:
        return str(build_gang(build(parse(_ptx(_tile_reads(64)))), "k", (128, 1, 1),
                              CpuOptions(**choice))[0])

    assert 'asm  "", "=r,0"' in module()
    assert "asm" not in module(opaque_window_bases=False)


@pytest.mark.parametrize("off", [64, 3400])
def test_opaque_window_bases_change_no_result(cpu_options, off):
    """The tile's reads with and without opaque bases: the same words, and past the tile the
    same fault at thread 48."""
    src = np.arange(1024, dtype=np.uint32) * 11 + 2
    results = []
    for opaque in (True, False):
        cpu_options(opaque_window_bases=opaque)
        dst = np.zeros(128 * 12, np.uint32)
        if off == 3400:
            with pytest.raises(IllegalAddressError, match="thread 48"):
                _run(_tile_reads(off), 128, src, dst, 0)
        else:
            _run(_tile_reads(off), 128, src, dst, 0)
        results.append(dst)
    np.testing.assert_array_equal(*results)


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
""" + FILL_TILE + """setp.lt.u32 %p1, %r1, 16;
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


# --- Triton 3.9's cross-warp reduction ----------------------------------------------------

# 4 warps: threads 0..15 fill buf[t] = 1000 + t; each warp w stores 100 + w at its slot
# (tid >> 3) & 12 (Triton's); then out[t] = buf[(t & 3) + base / 4] through a window load,
# and out[128 + t] = in[(t & 3) + first] through a global one
REDUCTION = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 base,
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


def _reduction(base: int, first: int = 0, n: int = 64) -> np.ndarray:
    src = np.arange(n, dtype=np.uint32) + 7
    out = np.zeros(256, dtype=np.uint32)
    binary = _launch(REDUCTION, 128, [src, out], np.uint32(base), np.uint32(first))
    assert binary.gang_refusal is None
    return out


def _reduction_expected(base: int, first: int = 0) -> np.ndarray:
    buf = np.arange(16, dtype=np.uint32) + 1000
    buf[:4] = 100 + np.arange(4)
    lanes = np.arange(128) & 3
    src = np.arange(64, dtype=np.uint32) + 7
    return np.concatenate([buf[lanes + base // 4], src[lanes + first]])


@pytest.mark.parametrize("base, first", [(0, 0), (4, 5), (48, 60)])
def test_window_loads_give_each_lane_its_element(base, first):
    assert (_reduction(base, first) == _reduction_expected(base, first)).all()


def test_a_window_past_shared_memory_faults_at_its_first_bad_lane():
    line = next(i for i, text in enumerate(REDUCTION.splitlines(), 1)
                if "ld.shared.u32 %r12" in text)
    # buf[13..16]: lane 3 reads the word after the 64 bytes
    with pytest.raises(IllegalAddressError,
                       match=rf"line {line} in block \(0, 0, 0\), thread 3;"):
        _reduction(52)


def test_a_window_past_its_allocation_faults():
    with pytest.raises(IllegalAddressError, match="thread 3;"):
        _reduction(0, first=61)


def test_the_windows_are_loaded_once_not_gathered(monkeypatch):
    """Both loads' full-mask copies load a window of 4 words, the shared one and the global
    one alike (their partial-mask copies, which the kernel never runs, keep the general
    path); without windows (_plan finding none) neither does, and more is gathered."""
    def code():
        return str(build_gang(build(parse(REDUCTION)), "k", (128, 1, 1), CpuOptions())[0])
    windows = code()
    monkeypatch.setattr(windows_module, "_plan", lambda fl, inst: None)
    general = code()
    assert windows.count("load <4 x i32>") == 2 and "load <4 x i32>" not in general
    assert windows.count("masked.gather") < general.count("masked.gather")


def test_dense_windows():
    """Global windows are dense (every element some lane's), in whole elements."""
    lanes = [4 * (i & 3) for i in range(32)]

    def plan(offsets, size=4):
        return window_plan(offsets, False, 32, size, 1, dense=True)

    assert plan(lanes) == ([Window(0, 0, 4)], [i & 3 for i in range(32)])
    # lane 0 reads the window's last element
    assert plan([12 - c for c in lanes]) == ([Window(0, -12, 4)], [3 - (i & 3)
                                                                    for i in range(32)])
    assert plan([0] * 32) == ([Window(0, 0, 1)], [0] * 32)        # one element, all lanes
    assert plan([4 * (i & 15) for i in range(32)]) == ([Window(0, 0, 16)],
                                                       [i & 15 for i in range(32)])
    assert plan([8 * (i & 3) for i in range(32)]) is None           # not dense
    assert window_plan([8 * (i & 3) for i in range(32)], False, 32, 4, 1) is not None
    assert plan([2 * (i & 3) for i in range(32)]) is None           # misaligned
    # a .v2 of each lane's two words, one address a half warp: dense
    assert window_plan(HALF_ROWS, False, 32, 4, 2, dense=True) == (
        [Window(0, 0, 2), Window(16, 0, 2)], [0] * 16 + [2] * 16)


# Global windows of vectors: a .v4 at one address a half warp (src + n + 256 * half: a window
# a half, each element broadcast) and a .v2 of lane t at src + n + 512 + 8 * (t & 7) (one
# dense window of 16 words for the warp); thread t writes the six words to dst[8 t ...].
GLOBAL_VECTORS = """
.reg .b32 %r<24>; .reg .b64 %rd<12>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
cvt.u64.u32 %rd9, %r1; add.s64 %rd10, %rd1, %rd9;
shr.u32 %r3, %r2, 4; and.b32 %r4, %r3, 1; mul.wide.u32 %rd3, %r4, 256; add.s64 %rd4, %rd10, %rd3;
ld.global.v4.u32 {%r7, %r8, %r9, %r10}, [%rd4];
and.b32 %r11, %r2, 7; mul.wide.u32 %rd5, %r11, 8; add.s64 %rd6, %rd10, %rd5;
ld.global.v2.u32 {%r15, %r16}, [%rd6+512];
mul.wide.u32 %rd7, %r2, 32; add.s64 %rd8, %rd2, %rd7;
st.global.v4.u32 [%rd8], {%r7, %r8, %r9, %r10};
st.global.v4.u32 [%rd8+16], {%r15, %r16, %r15, %r16};
ret;"""


def test_global_windows_of_vectors(monkeypatch):
    src = np.arange(256, dtype=np.uint32) * 5 + 3
    dst = np.zeros(64 * 8, np.uint32)
    assert _run(GLOBAL_VECTORS, 64, src, dst, 16).gang_refusal is None
    want = []
    for t in range(64):
        a, b = 4 + 64 * ((t >> 4) & 1), 4 + 128 + 2 * (t & 7)
        want += [*src[a:a + 4], src[b], src[b + 1], src[b], src[b + 1]]
    np.testing.assert_array_equal(dst, np.array(want, np.uint32))
    # past the source's 1 KiB: the .v2's window from lane 0 at 1000 + 512 is past it; the
    # .v4's first, of the second half (1000 + 256 + 16 > 1024): thread 16 first
    with pytest.raises(IllegalAddressError, match="thread 16;"):
        _run(GLOBAL_VECTORS, 64, src, dst, 1000)

    def code():
        return str(build_gang(build(parse(_ptx(GLOBAL_VECTORS))), "k", (64, 1, 1),
                              CpuOptions())[0])
    windows = code()     # (the .v2's window loaded whole, the .v4's 2 x 4 words broadcast)
    assert windows.count("load <16 x i32>") == 1 and windows.count("load <1 x i32>") == 8
    monkeypatch.setattr(windows_module, "_plan", lambda fl, inst: None)
    assert windows.count("masked.gather") < code().count("masked.gather")


# Two loads from one base, 4 bytes apart (a run for coalesce.py), whose lanes read 4 words
# (src + 4 * (t & 3)): never one after another, so each is a window of its own.
RUN_OF_WINDOWS = """
.reg .b32 %r<24>; .reg .b64 %rd<12>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r2, %tid.x;
and.b32 %r11, %r2, 3; mul.wide.u32 %rd5, %r11, 4; add.s64 %rd6, %rd1, %rd5;
ld.global.u32 %r15, [%rd6];
ld.global.u32 %r16, [%rd6+4];
mul.wide.u32 %rd7, %r2, 8; add.s64 %rd8, %rd2, %rd7;
st.global.v2.u32 [%rd8], {%r15, %r16};
ret;"""


def test_a_run_of_window_loads():
    src = np.arange(16, dtype=np.uint32) * 5 + 3
    dst = np.zeros(64 * 2, np.uint32)
    _run(RUN_OF_WINDOWS, 64, src, dst, 0)
    want = [[src[t & 3], src[(t & 3) + 1]] for t in range(64)]
    np.testing.assert_array_equal(dst, np.array(want, np.uint32).ravel())
    code = str(build_gang(build(parse(_ptx(RUN_OF_WINDOWS))), "k", (64, 1, 1),
                          CpuOptions())[0])
    assert code.count("load <4 x i32>") == 2


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
    out = np.zeros(128, dtype=np.uint32)
    assert _launch(GUARDED, 128, [out], np.uint32(count)).gang_refusal is None
    return out


def test_a_guarded_shared_access_is_checked_over_its_active_lanes():
    expected = np.full(128, 7, dtype=np.uint32)
    expected[:4] = 4 * np.arange(4)
    assert (_guarded(4) == expected).all()
    line = next(i for i, text in enumerate(GUARDED.splitlines(), 1)
                if "@%p1 ld.shared" in text)
    with pytest.raises(IllegalAddressError,
                       match=rf"line {line} in block \(0, 0, 0\), thread 4;"):
        _guarded(5)
