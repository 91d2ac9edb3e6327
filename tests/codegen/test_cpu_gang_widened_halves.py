"""Warp gangs' global accesses through widened addresses whose lanes are consecutive in each
half warp (codegen/targets/cpu/gang/widened.py's per-half form: a 16-wide block's rows,
`in[y * w + x]` with an int index): the range from lanes 0, 15, 16 and 31, a half whose
last lane is not its first plus 15 elements has wrapped and goes lane by lane. A block 16
wide reads and writes each element; one that is not 16 wide too (another path); a widening
that wraps in one half faults at its first wrapped lane, or, with only the wrapped lanes
active, reads their own elements; lane 31 past the end faults there; an address of two
widenings whose wraps cancel at the warp's last lane is not trusted (wraps.py); a widening
kept across a barrier as the 32-bit u it widens is made again as it was, wraps included."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from cpu_harness import allocate_alone, launch_on_cpu
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang import lowering
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.machine import target_machine
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# t = y * w + x (y = ctaid.y * ntid.y + tid.y); out[t] = (t >= lo) ? p[widen(t + b)] : 7
ROWS = HEADER + """.visible .entry k(.param .u64 p, .param .u64 out, .param .u32 w,
                                   .param .u32 b, .param .u32 lo)
{
.reg .b32 %r<12>; .reg .b64 %rd<7>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [w];
ld.param.u32 %r10, [b]; ld.param.u32 %r11, [lo];
mov.u32 %r2, %tid.x; mov.u32 %r3, %tid.y; mov.u32 %r6, %ctaid.y; mov.u32 %r7, %ntid.y;
mad.lo.s32 %r8, %r6, %r7, %r3;
mad.lo.s32 %r4, %r8, %r1, %r2;
add.s32 %r5, %r4, %r10;
mul.wide.s32 %rd3, %r5, 4;
add.s64 %rd4, %rd1, %rd3;
mov.u32 %r9, 7;
setp.ge.u32 %p1, %r4, %r11;
@%p1 ld.global.u32 %r9, [%rd4];
mul.wide.u32 %rd5, %r4, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r9;
ret;
}
"""

# out[t] = *(p + 4 * widen(b + 2t) + 4 * widen(c - t)): lanes 4t apart while neither sum
# wraps; b + 2t wraps (down) from lane 11, c - t (up) from lane 21, so lanes 0 and 31 lie
# where the lanes' offsets say and lanes 11-20 2**34 bytes below
TWO = HEADER + """.visible .entry k(.param .u64 p, .param .u64 out, .param .u32 b,
                                  .param .u32 c)
{
.reg .b32 %r<7>; .reg .b64 %rd<9>;
ld.param.u64 %rd1, [p]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [b];
ld.param.u32 %r2, [c];
mov.u32 %r3, %tid.x;
shl.b32 %r4, %r3, 1;
add.s32 %r4, %r1, %r4;
sub.s32 %r5, %r2, %r3;
mul.wide.s32 %rd3, %r4, 4;
mul.wide.s32 %rd4, %r5, 4;
add.s64 %rd5, %rd1, %rd3;
add.s64 %rd5, %rd5, %rd4;
ld.global.u32 %r6, [%rd5];
mul.wide.u32 %rd6, %r3, 4;
add.s64 %rd7, %rd2, %rd6;
st.global.u32 [%rd7], %r6;
ret;
}
"""


# t = y * w + x; widen(t + b) kept across a barrier (wraps.rebuilt_widening); after it,
# p[widen(t + b)] = t for t >= lo
ACROSS = HEADER + """.visible .entry k(.param .u64 p, .param .u32 w, .param .u32 b,
                                     .param .u32 lo)
{
.reg .b32 %r<12>; .reg .b64 %rd<5>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [w]; ld.param.u32 %r10, [b];
ld.param.u32 %r11, [lo];
mov.u32 %r2, %tid.x; mov.u32 %r3, %tid.y;
mad.lo.s32 %r4, %r3, %r1, %r2;
add.s32 %r5, %r4, %r10;
mul.wide.s32 %rd3, %r5, 4;
bar.sync 0;
add.s64 %rd4, %rd1, %rd3;
setp.ge.u32 %p1, %r4, %r11;
@%p1 st.global.u32 [%rd4], %r4;
ret;
}
"""

# t = y * w + x; out[widen(t)] = p[widen(t)]: no lane needs its index on the hot path
COPY = HEADER + """.visible .entry k(.param .u64 p, .param .u64 out, .param .u32 w)
{
.reg .b32 %r<10>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [p]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [w];
mov.u32 %r2, %tid.x; mov.u32 %r3, %tid.y; mov.u32 %r6, %ctaid.y; mov.u32 %r7, %ntid.y;
mad.lo.s32 %r8, %r6, %r7, %r3;
mad.lo.s32 %r4, %r8, %r1, %r2;
mul.wide.s32 %rd3, %r4, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r9, [%rd4];
add.s64 %rd5, %rd2, %rd3;
st.global.u32 [%rd5], %r9;
ret;
}
"""


def _rows(block, grid, w: int, b: int = 0, lo: int = 0, words: int | None = None,
          first: int = 0):
    """Run ROWS with p placed so that index `first` (widened) reads word 0 of a buffer of
    `words` words (all the grid's threads' by default); (buffer, out)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ROWS, code_type="ptx").compile("native").get_kernel("k")
    threads = block[0] * block[1] * grid[0] * grid[1]
    src = np.arange(words or threads, dtype=np.uint32) + 100
    out_buf = dev.allocate(4 * threads, stream=stream)
    buf = allocate_alone(dev, src.nbytes, stream)      # (its wrapped lanes fault 16 GiB off)
    buf.copy_from(src, stream=stream)
    p = (int(buf.handle) - 4 * first) % (1 << 64)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, np.uint64(p), out_buf,
           np.uint32(w), np.uint32(b), np.uint32(lo))
    out = np.empty(threads, np.uint32)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return src, out


def test_a_16_wide_block_takes_the_per_half_path():
    llmod, _ = build_gang(build(parse(ROWS)), "k", (16, 4, 1), CpuOptions())
    text = str(llmod)
    assert text.count("widened_fast") >= 2       # the load and the store
    assert "llvm.masked.load.v16i32" in text


def test_halves_in_a_16_wide_block_read_and_write_each_element():
    src, out = _rows((16, 4), (1, 3), w=16)
    assert (out == src).all()


def test_a_guarded_load_keeps_the_lanes_it_skips():
    src, out = _rows((16, 2), (1, 2), w=16, lo=21)
    assert (out[:21] == 7).all() and (out[21:] == src[21:]).all()


@pytest.mark.parametrize("block", [(8, 4), (32, 2), (4, 8)])
def test_a_block_not_16_wide_reads_each_element(block):
    src, out = _rows(block, (1, 2), w=block[0])
    assert (out == src).all()


def test_a_wrap_in_one_half_faults_at_its_first_wrapped_lane():
    # lane 16's index is 2**31 - 8: lanes 24-31 wrap to -2**31..
    with pytest.raises(IllegalAddressError, match=r"thread 24;"):
        _rows((16, 2), (1, 1), w=16, b=(1 << 31) - 24, words=32, first=(1 << 31) - 24)


def test_lanes_that_wrapped_in_one_half_read_their_own_elements():
    # only the wrapped lanes active, p set so that lane 24's index (-2**31) reads word 0
    src, out = _rows((16, 2), (1, 1), w=16, b=(1 << 31) - 24, lo=24, words=8,
                     first=-(1 << 31))
    assert (out[:24] == 7).all() and (out[24:] == src).all()


def test_lane_31_past_the_end_faults_there():
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes .* thread 31;"):
        _rows((16, 2), (1, 1), w=16, words=31)


def test_two_widenings_whose_wraps_cancel_at_the_last_lane_fault_in_the_middle():
    # lanes 0-10 and 21-31 read src[t]; lanes 11-20 address 2**34 bytes below: lane 11
    # (thread 11) faults, which a range from lanes 0 and 31 alone would not find
    src = np.arange(32, dtype=np.uint32)
    out = np.zeros(32, np.uint32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(TWO, code_type="ptx").compile("native").get_kernel("k")
    out_buf = dev.allocate(128, stream=stream)
    buf = allocate_alone(dev, 128, stream)
    buf.copy_from(src, stream=stream)
    b, c = (1 << 31) - 1 - 20, -(1 << 31) + 20     # lane t: p + 4 * (b + c) + 4t = p - 4 + 4t
    with pytest.raises(IllegalAddressError, match=r"thread 11;"):
        launch(stream, LaunchConfig(grid=1, block=32), kernel, np.uint64(int(buf.handle) + 4),
               out_buf, np.uint32(b), np.uint32(c & 0xFFFFFFFF))
        stream.sync()
    # with neither sum wrapping the lanes are consecutive and read their elements
    launch_on_cpu(TWO, LaunchConfig(grid=1, block=32), src, out, np.uint32(0), np.uint32(0))
    assert (out == src).all()


@pytest.mark.parametrize("block", [(16, 2), (32, 1)])
def test_a_widening_kept_across_a_barrier_is_made_again_with_its_wraps(block):
    # lanes 24-31's indices wrap to -2**31..: only they store, p set so that lane 24's
    # reaches word 0; a widening made again from u without the wrap would fault
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ACROSS, code_type="ptx").compile("native").get_kernel("k")
    buf = dev.allocate(32, stream=stream)
    buf.copy_from(np.zeros(8, np.uint32), stream=stream)
    p = (int(buf.handle) + 4 * (1 << 31)) % (1 << 64)
    launch(stream, LaunchConfig(grid=1, block=block), kernel, np.uint64(p),
           np.uint32(block[0]), np.uint32((1 << 31) - 24), np.uint32(24))
    out = np.empty(8, np.uint32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    assert (out == np.arange(24, 32)).all()


def test_a_widening_kept_across_a_barrier_is_kept_as_its_32_bit_u(monkeypatch):
    seen = {}
    real = lowering.rebuilt_widening

    def spy(fl, register):
        seen[register.name] = found = real(fl, register)
        return found

    monkeypatch.setattr(lowering, "rebuilt_widening", spy)
    build_gang(build(parse(ACROSS)), "k", (16, 2, 1), CpuOptions())
    lanes, halves, shift, signed = seen["%rd3"]
    assert halves and shift == 2 and signed
    assert [c.constant for c in lanes.constant] == [i % 16 for i in range(32)]


def _unsigned_rows(b: int, words: int, first: int):
    """ROWS with `mul.wide.u32` (a zext) for the load's widening: (buffer, out) as _rows."""
    dev = Device("cpu")
    stream = dev.create_stream()
    source = ROWS.replace("mul.wide.s32 %rd3", "mul.wide.u32 %rd3")
    kernel = Program(source, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(words, dtype=np.uint32) + 100
    out_buf = dev.allocate(128, stream=stream)
    buf = allocate_alone(dev, src.nbytes, stream)
    buf.copy_from(src, stream=stream)
    p = (int(buf.handle) - 4 * first) % (1 << 64)
    launch(stream, LaunchConfig(grid=(1, 1), block=(16, 2)), kernel, np.uint64(p), out_buf,
           np.uint32(16), np.uint32(b), np.uint32(0))
    out = np.empty(32, np.uint32)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return src, out


def test_an_unsigned_widening_that_wraps_in_one_half_faults_at_its_first_wrapped_lane():
    # lane t's index is 2**32 - 24 + t: lanes 24-31 wrap to 0.. (zero-extended, far below)
    assert "widened_fast" in str(build_gang(build(parse(ROWS.replace(
        "mul.wide.s32 %rd3", "mul.wide.u32 %rd3"))), "k", (16, 2, 1), CpuOptions())[0])
    with pytest.raises(IllegalAddressError, match=r"thread 24;"):
        _unsigned_rows((1 << 32) - 24, 32, (1 << 32) - 24)
    # one lane short of the wrap: lane 31's index is 2**32 - 1, every lane reads its own
    src, out = _unsigned_rows((1 << 32) - 32, 32, (1 << 32) - 32)
    assert (out == src).all()


@pytest.mark.parametrize("b", [(1 << 31) - 32, (1 << 31) - 31, (1 << 31) - 17,
                               (1 << 31) - 16, -16])
def test_the_halves_exact_test_at_the_signed_end(b):
    # half 1's last lane (index b + 31) is 2**31 - 1 for the first b: no lane wraps, each
    # reads its own; past it the lanes from 2**31 - b on wrap and fault there (half 1
    # wholly wrapped for 2**31 - 16: exact, its range below the buffer); b = -16: half 0
    # runs from -16 to -1 and half 1 from 0 to 15, neither wraps
    wrapped = (1 << 31) - b
    if 0 < wrapped < 32:
        with pytest.raises(IllegalAddressError, match=rf"thread {wrapped};"):
            _rows((16, 2), (1, 1), w=16, b=b % (1 << 32), words=32, first=b)
        return
    src, out = _rows((16, 2), (1, 1), w=16, b=b % (1 << 32), words=32, first=b)
    assert (out == src).all()


def test_the_per_half_cold_paths_make_their_32_bit_indices_themselves():
    # the lanes' 32-bit indices (each half's first plus 0..15) are made on each access's
    # lane-by-lane path, not once above both on the hot path (widened._slow: the stencil's
    # interior warps computed them for the three in[] loads' cold paths)
    llmod, _ = build_gang(build(parse(COPY)), "k", (16, 4, 1), CpuOptions())
    module = llvm.parse_assembly(str(llmod))
    passes = llvm.create_pass_builder(target_machine(), llvm.PipelineTuningOptions(speed_level=3))
    passes.getModulePassManager().run(module, passes)
    offsets = ", ".join(f"i32 {i % 16}" for i in range(32))
    label, made = None, []
    for line in str(module).splitlines():
        if found := re.match(r"([\w.]+):", line):
            label = found.group(1)
        if re.search(rf"= add <32 x i32> .*<{offsets}>", line):
            made.append(label)
    assert len(made) == 2 and all(name.startswith("widened_lanes") for name in made), made
