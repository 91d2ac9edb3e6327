"""Warp gangs' strided accesses (codegen/targets/cpu/gang/strided.py): lanes one stride apart,
the stride an immediate (a plain lane form) or a value alike in the warp (a scaled form:
`tid * s`), loaded and stored as one span where the stride is 1, 2 or 4 elements and lane by
lane otherwise; odd, non-power-of-two and negative strides give the same values as each lane
on its own, and an access outside shared or global memory still faults at its first bad
lane, also where the lanes' 32-bit addresses wrap."""

from __future__ import annotations

import re

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.codegen.targets.cpu.target import CpuTarget
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.passes.lane_forms import SEXT, WINDOW, lane_forms
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"
N = 1024        # the shared array's elements

# The kernels' parameters and start: buf (shared) filled from in by a loop of the 32 lanes,
# then a barrier
FILLED = """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 base,
                       .param .u32 s, .param .u32 base2, .param .u32 guard)
{
.reg .pred %p<4>; .reg .b32 %r<24>; .reg .b64 %rd<10>;
.shared .align 16 .b8 buf[4096];
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [base];
ld.param.u32 %r2, [s]; ld.param.u32 %r12, [base2]; ld.param.u32 %r20, [guard];
mov.u32 %r3, %tid.x;
mov.u32 %r7, buf;
mov.u32 %r4, %r3;
FILL:
mul.wide.u32 %rd3, %r4, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r5, [%rd4];
shl.b32 %r6, %r4, 2;
add.s32 %r8, %r7, %r6;
st.shared.u32 [%r8], %r5;
add.s32 %r4, %r4, 32;
setp.lt.u32 %p1, %r4, 1024;
@%p1 bra FILL;
bar.sync 0;
"""

# The kernels' end: out[32 + j] = buf[j] for the 1024 elements, by the 32 lanes
COPIED_OUT = """mov.u32 %r4, %r3;
BACK:
shl.b32 %r6, %r4, 2;
add.s32 %r8, %r7, %r6;
ld.shared.u32 %r5, [%r8];
add.s32 %r18, %r4, 32;
mul.wide.u32 %rd3, %r18, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r5;
add.s32 %r4, %r4, 32;
setp.lt.u32 %p1, %r4, 1024;
@%p1 bra BACK;
ret;
}
"""

# out[t] = buf[base + t * STRIDE] (buf a copy of in); then buf[base2 + t * STRIDE] = t + 1000
# for the threads where GUARD holds; then out[32 + j] = buf[j]
SHARED = HEADER + FILLED + """mad.lo.s32 %r9, %r3, STRIDE, %r1;
shl.b32 %r10, %r9, 2;
add.s32 %r11, %r7, %r10;
ld.shared.u32 %r13, [%r11];
mul.wide.u32 %rd5, %r3, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r13;
bar.sync 0;
mad.lo.s32 %r14, %r3, STRIDE, %r12;
shl.b32 %r15, %r14, 2;
add.s32 %r16, %r7, %r15;
add.s32 %r17, %r3, 1000;
setp.lt.u32 %p2, %r3, %r20;
@%p2 st.shared.u32 [%r16], %r17;
bar.sync 0;
""" + COPIED_OUT

# out[2 * t] = in[2 * t + first]: global lanes 8 bytes apart (a widened plain form)
GLOBAL = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 first)
{
.reg .b32 %r<6>; .reg .b64 %rd<7>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [first];
mov.u32 %r2, %tid.x;
shl.b32 %r3, %r2, 1;
add.s32 %r4, %r3, %r1;
mul.wide.s32 %rd3, %r4, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r5, [%rd4];
mul.wide.u32 %rd5, %r2, 8;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r5;
ret;
}
"""


def _line(ptx: str, text: str) -> int:
    return next(i for i, line in enumerate(ptx.splitlines(), 1) if text in line)


def _shared_ptx(stride: int | None) -> str:
    return SHARED.replace("STRIDE", "%r2" if stride is None else str(stride))


def _shared(stride: int | None, s: int, base: int, base2: int, guard: int = 32):
    """Run SHARED with the stride an immediate (stride) or the parameter s (stride None)."""
    src, out, kernel, dev = _run(_shared_ptx(stride), s, base, base2, guard)
    assert kernel._binary(dev).gang_refusal is None
    return src, out


def _run(ptx: str, s: int, base: int, base2: int, guard: int):
    """Run kernel k(src, out, base, s, base2, guard) of `ptx` as one warp; return (src, out,
    the kernel, the device)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(N, dtype=np.uint32) + 7
    out = np.zeros(32 + N, dtype=np.uint32)
    bufs = [dev.allocate(a.nbytes, stream=stream) for a in (src, out)]
    bufs[0].copy_from(src, stream=stream)
    bufs[1].copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, *bufs, np.uint32(base % (1 << 32)),
           np.uint32(s % (1 << 32)), np.uint32(base2 % (1 << 32)), np.uint32(guard))
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return src, out, kernel, dev


def _expected(s: int, base: int, base2: int, guard: int = 32):
    src = np.arange(N, dtype=np.uint32) + 7
    buf = src.copy()
    loaded = buf[[base + t * s for t in range(32)]]
    for t in range(min(guard, 32)):
        buf[base2 + t * s] = t + 1000
    return np.concatenate([loaded, buf])


# (s, base, base2): strides of 1, 2 and 4 elements (spans, the lowest lane's element at
# each place in its group of |s|), odd and non-power-of-two ones, long ones (lane by lane),
# negative ones (spans from lane 31's element)
CASES = [(1, 3, 500), (2, 1, 200), (3, 5, 40), (4, 0, 3), (5, 2, 100), (8, 7, 9),
         (33, 0, 0), (-1, 900, 100), (-2, 300, 999), (-3, 1000, 500), (-4, 124, 300),
         (-7, 1023, 600), (2, 2, 901), (4, 5, 2), (4, 6, 7), (4, 3, 897), (-2, 301, 998),
         (-4, 127, 301), (-4, 129, 1002)]


@pytest.mark.parametrize("s, base, base2", CASES)
def test_a_stride_alike_in_the_warp(s, base, base2):
    _, out = _shared(None, s, base, base2)
    assert (out == _expected(s, base, base2)).all()


def test_a_stride_of_zero_reads_one_element():
    _, out = _shared(None, 0, 17, 0, guard=1)
    assert (out == _expected(0, 17, 0, guard=1)).all()


@pytest.mark.parametrize("stride, base, base2", [(2, 1, 200), (3, 5, 40), (-2, 300, 999),
                                                 (6, 0, 800)])
def test_a_stride_known_when_compiling(stride, base, base2):
    _, out = _shared(stride, stride, base, base2)
    assert (out == _expected(stride, base, base2)).all()


@pytest.mark.parametrize("s, guard", [(2, 20), (-1, 7), (5, 31), (1, 0)])
def test_a_guard_stores_its_lanes_only(s, guard):
    base, base2 = (600, 400) if s < 0 else (3, 100)
    if all(0 <= base + t * s < N for t in range(32)):   # (else SHARED's load faults)
        _, out = _shared(None, s, base, base2, guard)
        assert (out == _expected(s, base, base2, guard)).all()


def test_the_strides_are_known_when_compiling():
    """The shared accesses take the span path: the run-time stride's chain of tests, the
    immediate's one masked access of two warps' elements."""
    def code(stride):
        return str(build_gang(build(parse(_shared_ptx(stride))), "k", (32, 1, 1),
                              CpuOptions())[0])
    assert "strided_span" in code(None)
    assert "llvm.masked.load.v64i32" in code(2) and "strided_span" not in code(2)
    # the span starts at an even element: from lane 0's own or the one before it
    assert "strided_at_0" in code(2) and "strided_at_1" in code(2)
    # a kernel whose stride is per lane (tid * tid) is classified at run time, as before
    assert "strided" not in code("%r3")


# (s, base, base2, line, thread): the first bad lane of the load (line of ld.shared) or of
# the store (st.shared)
LOAD, STORE = "ld.shared.u32 %r13", "@%p2 st.shared"
FAULTS = [(40, 0, 0, LOAD, 26),             # past the window's end, lane 26 first
          (-2, 5, 0, LOAD, 3),              # below its start: index -1 wraps
          (1 << 29, 0, 0, LOAD, 1),         # 2^31 bytes apart: the 32-bit sums wrap
          (1, 0, 1000, STORE, 24),          # the store past the end, the load inside
          (-3, 600, 40, STORE, 14),
          (3, 0, 1020, STORE, 2)]


@pytest.mark.parametrize("s, base, base2, where, thread", FAULTS)
def test_a_strided_access_outside_shared_memory_faults_at_its_first_bad_lane(
        s, base, base2, where, thread):
    line = _line(SHARED, where)
    with pytest.raises(IllegalAddressError,
                       match=rf"line {line} in block \(0, 0, 0\), thread {thread};"):
        _shared(None, s, base, base2)


def _global(first: int):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(GLOBAL, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(64, dtype=np.uint32) + 3
    out = np.zeros(64, dtype=np.uint32)
    bufs = [dev.allocate(a.nbytes, stream=stream) for a in (src, out)]
    bufs[0].copy_from(src, stream=stream)
    bufs[1].copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, *bufs, np.uint32(first))
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return src, out


@pytest.mark.parametrize("first", [0, 1])
def test_global_lanes_two_elements_apart(first):
    src, out = _global(first)
    want = np.zeros(64, dtype=np.uint32)
    want[0::2] = src[first::2]
    assert (out == want).all()


def test_a_global_strided_access_prefetches_ahead():
    """The span path (the block `strided` and those made after it) prefetches before its
    masked load, as memory.py's accesses do."""
    code = str(build_gang(build(parse(GLOBAL)), "k", (32, 1, 1), CpuOptions())[0])
    fast = code.index("\nstrided:")
    assert "llvm.prefetch" in code[fast:code.index("llvm.masked.load", fast)]


def test_a_widened_strided_load_keeps_the_warps_widening_flag():
    """GLOBAL's load (a widened form: `2 * t + first` through mul.wide.s32) trusts its span
    only while the warp's flag says no widening wrapped: a fresh warp sets the flag to 1 and
    the span check reads it. (When no classified access read it too, the flag's stores were
    dropped and the check read a flag never set: every such access, scan_blelloch's copy in
    and out, took the run-time classification and its gathers.)"""
    code = str(build_gang(build(parse(GLOBAL)), "k", (32, 1, 1), CpuOptions())[0])
    frame = re.escape(re.search(r'@"gang"\(ptr %"[^"]+", ptr noalias (%"[^"]+")',
                                code).group(1))      # (the warp's frame: its second argument)
    fresh = code[code.index("\nfresh:"):code.index("\nresume:")]
    stored = re.findall(rf'(%"[.\w]+") = getelementptr i8, ptr {frame}, i64 (\d+)\n'
                        r'  store i32 1, i32\* \1', fresh)
    assert len(stored) == 1
    offset = stored[0][1]
    assert re.search(rf'(%"[.\w]+") = getelementptr i8, ptr {frame}, i64 {offset}\n'
                     rf'  %"[.\w]+" = load i32, i32\* \1', code)


def test_a_global_strided_load_past_the_end_faults_at_its_first_bad_lane():
    # 2 * t + 40 >= 64 from thread 12 on: the range of the span is past the buffer's end
    with pytest.raises(IllegalAddressError, match=rf"line {_line(GLOBAL, 'ld.global')} in "
                       r"block \(0, 0, 0\), thread 12;"):
        _global(40)


# SHARED with its load guarded as its store is: out[t] = buf[base + t * s] for t < guard
# (else 0), the lanes past the guard possibly outside the window
GUARDED = _shared_ptx(None).replace("ld.shared.u32 %r13, [%r11];",
                                   "setp.lt.u32 %p3, %r3, %r20;\nmov.u32 %r13, 0;\n"
                                   "@%p3 ld.shared.u32 %r13, [%r11];")


def _guarded(s: int, base: int, base2: int, guard: int):
    return _run(GUARDED, s, base, base2, guard)[1]


# (s, base, base2, guard): a tree's last levels, whose inactive lanes lie past the window's
# end (long strides: lane by lane over the mask; short ones: a span), and negative strides
@pytest.mark.parametrize("s, base, base2, guard", [(64, 63, 31, 16), (128, 127, 0, 8),
                                                   (512, 511, 255, 2), (40, 3, 5, 20),
                                                   (2, 1000, 990, 11), (4, 1000, 3, 5),
                                                   (-70, 1000, 950, 14), (33, 0, 0, 0)])
def test_a_partial_mask_checks_its_own_lanes_only(s, base, base2, guard):
    out = _guarded(s, base, base2, guard)
    loaded = [(base + t * s) % (1 << 32) for t in range(min(guard, 32))]
    buf = np.arange(N, dtype=np.uint32) + 7
    assert (out[:guard] == buf[loaded]).all() and (out[guard:32] == 0).all()
    for t in range(guard):
        buf[base2 + t * s] = t + 1000
    assert (out[32:] == buf).all()


def test_a_partial_mask_faults_at_its_first_bad_lane():
    # lanes 0..19 run: lane 18 is the first past the window's end (18 * 60 >= 1024)
    with pytest.raises(IllegalAddressError, match=rf"line {_line(GUARDED, '@%p3 ld.shared')} "
                       r"in block \(0, 0, 0\), thread 18;"):
        _guarded(60, 0, 0, 20)


def test_a_partial_mask_goes_lane_by_lane_over_its_set_bits():
    code = str(build_gang(build(parse(GUARDED)), "k", (32, 1, 1),
                          CpuOptions(strided_gathers=False))[0])
    assert "strided_lane_head" in code and "llvm.cttz" in code


@pytest.mark.parametrize("gathers", [True, False])
@pytest.mark.parametrize("s, base, base2, guard", [(40, 3, 5, 20), (-70, 1000, 950, 14),
                                                   (8, 7, 9, 32), (-33, 1023, 1023, 32)])
def test_long_strides_either_way(s, base, base2, guard, gathers, cpu_options):
    """Strides of 8 elements and more (no span access) give each lane's own values as
    gathers and scatters and lane by lane: under a guard's mask (GUARDED) and the full
    one (SHARED's load)."""
    cpu_options(strided_gathers=gathers)
    out = _guarded(s, base, base2, guard)
    loaded = [(base + t * s) % (1 << 32) for t in range(min(guard, 32))]
    buf = np.arange(N, dtype=np.uint32) + 7
    assert (out[:guard] == buf[loaded]).all() and (out[guard:32] == 0).all()
    for t in range(guard):
        buf[base2 + t * s] = t + 1000
    assert (out[32:] == buf).all()
    if all(0 <= base + t * s < N for t in range(32)):   # (else SHARED's load faults)
        _, out = _shared(None, s, base, base2, guard)
        assert (out == _expected(s, base, base2, guard)).all()


@pytest.mark.parametrize("gathers", [True, False])
def test_a_long_stride_faults_at_its_first_bad_lane_either_way(gathers, cpu_options):
    cpu_options(strided_gathers=gathers)
    with pytest.raises(IllegalAddressError, match=rf"line {_line(GUARDED, '@%p3 ld.shared')} "
                       r"in block \(0, 0, 0\), thread 18;"):
        _guarded(60, 0, 0, 20)
    with pytest.raises(IllegalAddressError, match=rf"line {_line(SHARED, '@%p2 st.shared')} "
                       r"in block \(0, 0, 0\), thread 24;"):
        _shared(None, 9, 0, 808)     # 808 + 9 * 24 = 1024: past the end



def test_guarded_strided_loads_are_not_classified():
    """scan_blelloch's `temp[2 * t] = base + 2 * t < n ? x[base + 2 * t] : 0` (a guarded
    load keeping 0 in its other lanes) and its tree's `if (t < d)` loads are strided: in
    the full-mask copies of their segments no block goes to classify.py's run-time
    classification (it ran for each of them, its answer unused)."""
    ptx = corpus_ptx(KERNEL_DIR / "scan_blelloch.cu", "sm_80")
    code = str(build_gang(build(parse(ptx)), "scan_exclusive_blelloch", (512, 1, 1),
                          CpuOptions())[0])
    blocks = re.split(r"\n(?=[\w.]+:)", code)
    full = [b for b in blocks if re.match(r"seg\d+_all:", b)]
    assert len(full) > 10 and "strided" in code
    assert not [b.split(":")[0] for b in full if "classif" in b.splitlines()[-1]]


# A tree level's read-modify-write of buf[base + t * s] (the store takes the load's stride
# and span check: same base, offset and mask), then the base register rewritten to
# base2 + t * s and read again (nothing of the first span may serve), and a guarded store
# there (another mask): out[t] = the second load; then out[32 + j] = buf[j]
REUSED = HEADER + FILLED + """mad.lo.s32 %r9, %r3, %r2, %r1;
shl.b32 %r10, %r9, 2;
add.s32 %r11, %r7, %r10;
ld.shared.u32 %r13, [%r11];
add.s32 %r13, %r13, 1;
st.shared.u32 [%r11], %r13;
mad.lo.s32 %r14, %r3, %r2, %r12;
shl.b32 %r15, %r14, 2;
add.s32 %r11, %r7, %r15;
ld.shared.u32 %r16, [%r11];
add.s32 %r17, %r16, 1000;
setp.lt.u32 %p2, %r3, %r20;
@%p2 st.shared.u32 [%r11], %r17;
mul.wide.u32 %rd5, %r3, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r16;
bar.sync 0;
""" + COPIED_OUT


@pytest.mark.skipif(not CpuTarget.avx512_lanes, reason="gathers only with AVX-512")
def test_long_shared_strides_are_gathers_and_scatters_under_the_full_mask():
    """On an AVX-512 host the other strides' shared accesses under the full mask are one
    gather or scatter of the lanes' 32-bit window offsets (vpgatherdd); under a guard's
    mask they go lane by lane over its set bits, as without the option."""
    def code(gathers):
        return str(build_gang(build(parse(REUSED)), "k", (32, 1, 1),
                              CpuOptions(strided_gathers=gathers))[0])

    def counts(text):
        return [len(re.findall(rf"call [^@]*@\"llvm\.masked\.{kind}\.v32i32", text))
                for kind in ("gather", "scatter")]
    on, off = code(True), code(False)
    # (the two loads and the unguarded store; the guarded store keeps its lane loop)
    assert [a - b for a, b in zip(counts(on), counts(off), strict=True)] == [2, 1]
    assert "strided_lane_head" in on and "strided_lane_head" in off
    # the lanes' offsets from lane 0's and the stride, in 32 bits
    assert len(re.findall(r"= mul <32 x i32> <i32 0, i32 1, i32 2, i32 3, ", on)) == 3


@pytest.mark.parametrize("s, base, base2, guard", [
    (2, 1, 1, 32), (2, 0, 1, 20), (4, 3, 5, 7), (-2, 300, 301, 31), (8, 7, 9, 32),
    (1, 0, 32, 16), (0, 17, 17, 32)])
def test_a_span_serves_the_next_access_of_its_base_alone(s, base, base2, guard):
    src, out, kernel, dev = _run(REUSED, s, base, base2, guard)
    assert kernel._binary(dev).gang_refusal is None
    buf = src.copy()
    first = [base + t * s for t in range(32)]
    buf[first] = buf[first] + 1
    second = [base2 + t * s for t in range(32)]
    loaded = buf[second].copy()
    for t in range(guard):
        buf[second[t]] = loaded[t] + 1000
    np.testing.assert_array_equal(out, np.concatenate([loaded, buf]))


# out[2t] = in[2t] + 1, out[2t + 1] = in[2t + 1] + 2: a pair per thread, each access a span
# of 64 elements of which it touches every second; the pair's second load and store touch
# the lines of its first (scan_blelloch's copy in and out)
PAIRS = HEADER + """.visible .entry k(.param .u64 in, .param .u64 out)
{
.reg .b32 %r<8>; .reg .b64 %rd<7>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out];
mov.u32 %r2, %tid.x;
shl.b32 %r3, %r2, 1;
mul.wide.s32 %rd3, %r3, 4;
add.s64 %rd4, %rd1, %rd3;
add.s64 %rd6, %rd2, %rd3;
ld.global.u32 %r5, [%rd4];
add.s32 %r6, %r5, 1;
st.global.u32 [%rd6], %r6;
ld.global.u32 %r5, [%rd4+4];
add.s32 %r7, %r5, 2;
st.global.u32 [%rd6+4], %r7;
ret;
}
"""


def test_a_pairs_second_access_does_not_prefetch_its_firsts_lines_again():
    """Each base's first span access prefetches on its span path (strided.py's block
    `strided` and those after it, up to its masked access); the pair's second access, 4
    bytes on, prefetches nothing; the values are each lane's."""
    code = str(build_gang(build(parse(PAIRS)), "k", (32, 1, 1), CpuOptions())[0])
    fast = [code.index(f"\n{name}:") for name in ("strided", "strided.1", "strided.2",
                                                     "strided.3")]
    fetched = ["llvm.prefetch" in code[at:code.index("llvm.masked.", at)] for at in fast]
    assert fetched == [True, True, False, False]    # (in order: load, store, load, store)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIRS, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(64, dtype=np.uint32) * 3
    out = np.zeros(64, dtype=np.uint32)
    bufs = [dev.allocate(a.nbytes, stream=stream) for a in (src, out)]
    bufs[0].copy_from(src, stream=stream)
    bufs[1].copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, *bufs)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    assert (out == src + np.tile(np.uint32([1, 2]), 32)).all()


def test_which_strided_spans_prefetch_again():
    """The rule itself (strided._prefetched_before): per base and stride S, an offset less
    than |S| from one that prefetched does not; the same offset again (the same access in
    another copy of its segment) and offsets |S| or more away do; another base or stride
    is another site."""
    from types import SimpleNamespace

    from ptxport.codegen.targets.cpu.gang import strided as st
    from ptxport.codegen.targets.cpu.gang.checks import Place

    fl = SimpleNamespace(span_prefetches={})
    again = [st._prefetched_before(fl, Place(None, False, offset, key), known)
             for offset, key, known in [(0, "x", 8), (0, "x", 8), (4, "x", 8), (8, "x", 8),
                                        (4, "y", 8), (4, "x", 16), (12, "x", 8)]]
    assert again == [False, False, True, False, False, False, True]
    assert st._prefetched_before(fl, Place(None, False, 4, "x"), None) is False


# SHARED with 64-bit shared addresses, as NVRTC 13.0 writes a tree level's: the 32-bit
# index base + t * s widened (mul.wide.s32: a scaled form's widening) and added to the
# window's 64-bit address
WIDE = _shared_ptx(None).replace(".reg .b64 %rd<10>;", ".reg .b64 %rd<16>;").replace(
    "shl.b32 %r10, %r9, 2;\nadd.s32 %r11, %r7, %r10;\nld.shared.u32 %r13, [%r11];",
    "mul.wide.s32 %rd10, %r9, 4;\nmov.u64 %rd11, buf;\nadd.s64 %rd12, %rd11, %rd10;\n"
    "ld.shared.u32 %r13, [%rd12];").replace(
    "shl.b32 %r15, %r14, 2;\nadd.s32 %r16, %r7, %r15;",
    "mul.wide.s32 %rd13, %r14, 4;\nadd.s64 %rd14, %rd11, %rd13;").replace(
    "@%p2 st.shared.u32 [%r16], %r17;", "@%p2 st.shared.u32 [%rd14], %r17;")


def test_a_widened_tree_index_is_strided():
    assert "ld.shared.u32 %r13, [%rd12];" in WIDE and "[%rd14], %r17" in WIDE
    code = str(build_gang(build(parse(WIDE)), "k", (32, 1, 1), CpuOptions())[0])
    assert "strided_span" in code


@pytest.mark.parametrize("s, base, base2", CASES[:8] + [(0, 17, 0), (-33, 1023, 1023)])
def test_a_widened_tree_index_reads_each_lanes_element(s, base, base2):
    src, out, kernel, dev = _run(WIDE, s, base, base2, 32 if s else 1)
    assert kernel._binary(dev).gang_refusal is None
    assert (out == _expected(s, base, base2, 32 if s else 1)).all()


# (s, base, base2, line, thread): past the end, below the start, the 32-bit index wrapping
# between lanes (2^31 - 4 + 2 * t: lane 2 wraps to -2^31; lanes 0 and 1 far outside too)
WIDE_FAULTS = [(40, 0, 0, "ld.shared.u32 %r13", 26), (-2, 5, 0, "ld.shared.u32 %r13", 3),
               (2, (1 << 31) - 4, 0, "ld.shared.u32 %r13", 0),
               (1, 0, 1000, "@%p2 st.shared", 24),
               # strides whose 4-byte multiple is 0 modulo 2^32 (lane 1 2^30 and 2^31
               # elements from lane 0: a stride taken in 32 bits would put every lane on
               # lane 0's element, and the windowed span check would pass)
               (1 << 30, 0, 0, "ld.shared.u32 %r13", 1), (1 << 31, 5, 0, "ld.shared.u32 %r13", 1)]


@pytest.mark.parametrize("s, base, base2, where, thread", WIDE_FAULTS)
def test_a_widened_tree_index_faults_at_its_first_bad_lane(s, base, base2, where, thread):
    with pytest.raises(IllegalAddressError, match=rf"line {_line(WIDE, where)} in block "
                       rf"\(0, 0, 0\), thread {thread};"):
        _run(WIDE, s, base, base2, 32)


# WIDE's indices zero-extended (mul.wide.u32), the buffer after another variable's 1024
# bytes: a lane whose index wraps below 0 lies 2^32 elements up, where lane order puts it
# inside the window (strided._windowed holds for sign extensions only)
UNSIGNED = WIDE.replace(".shared .align 16 .b8 buf[4096];",
                        ".shared .align 16 .b8 pad[1024];\n.shared .align 16 .b8 buf[4096];\n"
                        "mov.u32 %r21, pad;\nst.shared.u32 [%r21], %r21;").replace(
    "mul.wide.s32 %rd10", "mul.wide.u32 %rd10").replace("mul.wide.s32 %rd13", "mul.wide.u32 %rd13")
# WIDE's index added to a parameter, not to a shared variable's address
PARAM_BASE = WIDE.replace("add.s64 %rd12, %rd11, %rd10", "add.s64 %rd12, %rd1, %rd10")


def test_a_tree_index_sign_extended_onto_a_shared_variable_is_windowed():
    def window(ptx: str, reg: str) -> int:
        forms = lane_forms(build(parse(ptx)).functions["k"], (32, 1, 1))
        return next(f.window for r, f in forms.items() if r.name == reg)
    assert window(WIDE, "%rd10") == SEXT and window(WIDE, "%rd12") == WINDOW
    assert window(UNSIGNED, "%rd10") == window(UNSIGNED, "%rd12") == 0
    assert window(PARAM_BASE, "%rd12") == 0


def test_a_windowed_span_needs_no_lane_order_test(monkeypatch):
    import ptxport.codegen.targets.cpu.gang.strided as st
    tested = []
    checked = st._in_lane_order
    monkeypatch.setattr(st, "_in_lane_order", lambda *a: tested.append(1) or checked(*a))
    for ptx in (WIDE, UNSIGNED, PARAM_BASE):
        tested.clear()
        code = str(build_gang(build(parse(ptx)), "k", (32, 1, 1), CpuOptions())[0])
        assert "strided_span" in code and bool(tested) == (ptx is not WIDE)


@pytest.mark.parametrize("s, base, base2", [(1, 3, 500), (-2, 900, 100), (-1, 40, 40)])
def test_a_zero_extended_tree_index_reads_each_lanes_element(s, base, base2):
    src, out, kernel, dev = _run(UNSIGNED, s, base, base2, 32)
    assert kernel._binary(dev).gang_refusal is None
    assert (out == _expected(s, base, base2)).all()


def test_a_zero_extended_tree_index_below_0_faults_at_its_first_bad_lane():
    # base 1, stride -1: lane 2's index is 2^32 - 1
    with pytest.raises(IllegalAddressError, match=rf"line {_line(UNSIGNED, 'ld.shared.u32 %r13')}"
                       r" in block \(0, 0, 0\), thread 2;"):
        _run(UNSIGNED, -1, 1, 0, 32)


# WIDE's load index scaled by 2^24 bytes: a windowed form whose K is too large for the span
# check's sums to be bounded without the |S| < 2^32 test
HUGE_K = WIDE.replace("mul.wide.s32 %rd10, %r9, 4;", "mul.wide.s32 %rd10, %r9, 16777216;")


def test_a_windowed_stride_is_bounded_where_its_factor_is_small(monkeypatch):
    """The level's accesses share K * sext(v[1] - v[0]); with |K| < 2^24 the span check
    leaves out the |S| < 2^32 test, not with K = 2^24 nor off the window."""
    import ptxport.codegen.targets.cpu.gang.strided as st
    seen = []
    span = st._span
    monkeypatch.setattr(st, "_span", lambda *a: seen.append(a[5] if len(a) > 5 else False)
                        or span(*a))
    for ptx, bounded in ((WIDE, [True, True]), (HUGE_K, [False, True]),
                         (UNSIGNED, [False, False]), (PARAM_BASE, [False, True])):
        seen.clear()
        code = str(build_gang(build(parse(ptx)), "k", (32, 1, 1), CpuOptions())[0])
        assert "strided_span" in code and sorted(set(seen)) == sorted(set(bounded))


@pytest.mark.parametrize("s, base, fault", [(0, 0, None), (1, 0, 1), (-1, 0, 1), (0, 1, 0)])
def test_a_large_windowed_factor_reads_or_faults_as_each_lane(s, base, fault):
    """HUGE_K: lane i reads byte 2^24 * (base + i * s) of buf (4096 bytes): only index 0
    lies inside."""
    if fault is None:
        src, out, kernel, dev = _run(HUGE_K, s, base, 0, 1)
        assert (out[:32] == src[0]).all()
        return
    with pytest.raises(IllegalAddressError, match=rf"line {_line(HUGE_K, 'ld.shared.u32 %r13')}"
                       rf" in block \(0, 0, 0\), thread {fault};"):
        _run(HUGE_K, s, base, 0, 1)


def _wide_known(stride: int) -> str:
    return WIDE.replace("%r3, %r2,", f"%r3, {stride},")


# (stride, base, base2, where, thread): an immediate stride's span checked in one unsigned
# order (strided._known_span): below the window's start (a negative offset, large unsigned),
# past its end, either sign, 32- and 64-bit shared addresses
KNOWN_FAULTS = [(2, -3, 0, LOAD, 0), (-2, 5, 0, LOAD, 3), (6, 900, 0, LOAD, 21),
                (-6, 40, 0, LOAD, 7), (1, 0, 1000, STORE, 24), (-1, 600, 10, STORE, 11)]


@pytest.mark.parametrize("stride, base, base2, where, thread", KNOWN_FAULTS)
@pytest.mark.parametrize("wide", [False, True])
def test_an_immediate_strides_span_faults_at_its_first_bad_lane(stride, base, base2, where,
                                                                 thread, wide):
    ptx = _wide_known(stride) if wide else _shared_ptx(stride)
    with pytest.raises(IllegalAddressError,
                       match=rf"line {_line(ptx, where)} in block \(0, 0, 0\), thread {thread};"):
        _run(ptx, stride, base, base2, 32)


@pytest.mark.parametrize("stride, base, base2", [(2, 0, 958), (-2, 62, 1023), (1, 992, 0),
                                                 (-4, 124, 127)])
def test_an_immediate_strides_span_at_the_windows_ends(stride, base, base2):
    for ptx in (_shared_ptx(stride), _wide_known(stride)):
        src, out, kernel, dev = _run(ptx, stride, base, base2, 32)
        assert (out == _expected(stride, base, base2)).all()
