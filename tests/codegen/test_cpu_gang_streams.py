"""Warp gangs' prefetches by how an access site moves (codegen/targets/cpu/gang/streams.py):
every global access site prefetches (`p[blockIdx.x * blockDim.x + threadIdx.x]` too: left to
the hardware's prefetchers, vector_add was slower on the GPU host's Xeon), and a grid-stride
loop, whose step is known when compiling, prefetches by its step."""

from __future__ import annotations

import re

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang import memory, widened
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


@pytest.mark.parametrize("block", [(128, 1, 1), (16, 8, 1)])
def test_a_store_site_prefetches_for_writing(block):
    # c's store fetches its lines to write them (prefetchw on x86), a's and b's loads to
    # read them; llvm.prefetch's second argument says which
    llmod, _ = build_gang(build(parse(ADD.replace("SCALE", "1"))), "k", block, CpuOptions())
    text = str(llmod)
    writes = text.count(", i32 1, i32 3, i32 1)")
    reads = text.count(", i32 0, i32 3, i32 1)")
    assert writes > 0 and reads > writes


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


# acc += x[i] + x[i + 256] in a grid-stride loop of two 256-thread blocks' worth a pass (as
# reduce_shared.cu without its guard), then out[t] = acc; TRIP: the loop's bound
PAIRS = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out]; ld.param.u32 %r6, [n];
mov.u32 %r1, %ntid.x; mov.u32 %r7, %ctaid.x; mov.u32 %r8, %tid.x;
mad.lo.s32 %r10, %r7, 512, %r8;
mov.u32 %r11, 0;
setp.ge.s32 %p1, %r10, %r6;
@%p1 bra DONE;
mov.u32 %r9, %nctaid.x; shl.b32 %r3, %r9, 9;
LOOP:
mul.wide.s32 %rd5, %r10, 4;
add.s64 %rd6, %rd1, %rd5;
ld.global.u32 %r4, [%rd6]; ld.global.u32 %r5, [%rd6+1024];
add.s32 %r11, %r11, %r4; add.s32 %r11, %r11, %r5;
add.s32 %r10, %r10, %r3;
setp.lt.s32 %p2, %r10, %r6;
@%p2 bra LOOP;
DONE:
mad.lo.s32 %r2, %r7, %r1, %r8;
mul.wide.s32 %rd3, %r2, 4; add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r11;
ret;
}
"""


def _steps(ptx: str, monkeypatch) -> set[int]:
    """The steps ahead that the loop's prefetches of `ptx` take (streams._steps_ahead)."""
    from ptxport.codegen.targets.cpu.gang import streams
    seen = []
    real = streams._steps_ahead

    def spy(fl):
        seen.append(real(fl))
        return seen[-1]

    monkeypatch.setattr(streams, "_steps_ahead", spy)
    build_gang(build(parse(ptx)), "k", (256, 1, 1), CpuOptions())
    return set(seen)


@pytest.mark.parametrize("bases, ahead", [(1, 3), (2, 1), (4, 1)])
def test_a_loop_fetching_more_lines_prefetches_fewer_steps_ahead(monkeypatch, bases, ahead):
    # `bases` base registers read a pass (a group's 4 lines each): 3 steps ahead for one
    # (reduce_warp's loop), 1 for two (saxpy's x and y: 3 steps ahead took 25-30% more
    # CPU time than 1 on the GPU host's Xeon)
    loads = "".join(f"add.s64 %rd{7 + j}, %rd6, {4096 * j}; ld.global.u32 %r4, [%rd{7 + j}];"
                    " add.s32 %r11, %r11, %r4;\n" for j in range(bases))
    ptx = PAIRS.replace("ld.global.u32 %r4, [%rd6]; ld.global.u32 %r5, [%rd6+1024];\n"
                        "add.s32 %r11, %r11, %r4; add.s32 %r11, %r11, %r5;\n", loads)
    ptx = ptx.replace(".reg .b64 %rd<8>", ".reg .b64 %rd<12>")
    assert _steps(ptx, monkeypatch) == {ahead}
    assert _steps(LOOP, monkeypatch) == {1}


@pytest.mark.parametrize("n", [512 * 3 + 256 + 7, 512 * 4, 100])
def test_a_loop_whose_lanes_run_different_trip_counts_sums_right(n):
    # 3 blocks of 256: lanes past n skip the loop or leave it a pass early; each thread's
    # x[i] + x[i + 256] (the second read past n where n is not a multiple: inside the
    # allocation, which holds n + 256 elements)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIRS, code_type="ptx").compile("native").get_kernel("k")
    grid, block = 3, 256
    x = np.arange(n + 256, dtype=np.uint32) % 97
    xs = dev.allocate(x.nbytes, stream=stream)
    out = dev.allocate(4 * grid * block, stream=stream)
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, xs, out, np.uint32(n))
    got = np.empty(grid * block, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    want = np.zeros(grid * block, np.uint32)
    for c in range(grid):
        for t in range(block):
            for i in range(c * 512 + t, n, 512 * grid):
                want[c * block + t] += x[i] + x[i + 256]
    assert (got == want).all()


def test_a_loop_reading_past_its_allocation_still_faults():
    # the allocation holds n elements, the loop reads x[i + 256] past them: the prefetches
    # (further past) never fault, the access does, with ptxport's error
    from ptxport.errors import IllegalAddressError
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PAIRS, code_type="ptx").compile("native").get_kernel("k")
    n = 2048 - 100      # x[i + 256] reaches element 2047
    xs = dev.allocate(4 * n, stream=stream)
    out = dev.allocate(4 * 512, stream=stream)
    xs.copy_from(np.ones(n, np.uint32), stream=stream)
    launch(stream, LaunchConfig(grid=2, block=256), kernel, xs, out, np.uint32(n))
    with pytest.raises(IllegalAddressError):
        stream.sync()


# y[i] += x[i] for i < m (a second bound, a parameter), in a grid-stride loop whose x[i] is
# addressed inside its `if`: if-convert gives the `if` a guarded copy, whose unguarded
# address arithmetic is the region's own instructions (gemm_tiled's `B[kb * N + col]`)
GUARDED = HEADER + """.visible .entry k(.param .u64 x, .param .u64 y, .param .u32 n,
                                        .param .u32 m)
{
.reg .pred %p<4>; .reg .f32 %f<4>; .reg .b32 %r<13>; .reg .b64 %rd<10>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y]; ld.param.u32 %r6, [n]; ld.param.u32 %r12, [m];
mov.u32 %r1, %ntid.x; mov.u32 %r7, %ctaid.x; mov.u32 %r8, %tid.x;
mad.lo.s32 %r10, %r7, %r1, %r8;
setp.ge.s32 %p1, %r10, %r6;
@%p1 bra DONE;
mov.u32 %r9, %nctaid.x; mul.lo.s32 %r3, %r1, %r9;
LOOP:
mov.f32 %f1, 0f00000000;
setp.ge.s32 %p3, %r10, %r12;
@%p3 bra SKIP;
mul.wide.s32 %rd5, %r10, 4;
add.s64 %rd6, %rd1, %rd5; ld.global.f32 %f1, [%rd6];
SKIP:
mul.wide.s32 %rd8, %r10, 4;
add.s64 %rd7, %rd2, %rd8; ld.global.f32 %f2, [%rd7];
add.f32 %f3, %f1, %f2; st.global.f32 [%rd7], %f3;
add.s32 %r10, %r10, %r3;
setp.lt.s32 %p2, %r10, %r6;
@%p2 bra LOOP;
DONE:
ret;
}
"""


def test_an_address_made_in_an_if_converted_region_prefetches_by_its_step():
    # %rd6 is written twice in the loop, by one instruction: the region's and its guarded
    # copy's; its step is still the index's (no stride learnt at run time)
    llmod, _ = build_gang(build(parse(GUARDED)), "k", (256, 1, 1), CpuOptions())
    text = str(llmod)
    assert text.count('call void @"llvm.prefetch') > 0
    assert "\nprefetched" not in text


def test_an_if_converted_loop_adds_what_it_should():
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(GUARDED, code_type="ptx").compile("native").get_kernel("k")
    n, m = 3000, 2100
    x, y = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    xs, ys = dev.allocate(x.nbytes, stream=stream), dev.allocate(y.nbytes, stream=stream)
    xs.copy_from(x, stream=stream)
    ys.copy_from(y, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=256), kernel, xs, ys, np.uint32(n), np.uint32(m))
    out = np.empty(n, np.float32)
    ys.copy_to(out, stream=stream)
    stream.sync()
    assert (out == y + np.where(np.arange(n) < m, x, 0)).all()


def test_a_tile_s_two_rows_are_both_prefetched(monkeypatch):
    # sgemm_tiled in 16x16 blocks: each half warp loads a row of A's and of B's tile, the
    # rows K (N) elements apart; each row's lines are fetched, not the lines after the
    # first row's (other blocks' columns); a row of 16 floats is one line, so one line a
    # row (the line after it, another block's columns or the next tile's, is not fetched)
    seen = []
    real = memory.prefetch_site

    def spy(fl, place, lows, span, size, write=False):
        seen.append((fl.inst.operands[1].base.name, len(lows), span))
        return real(fl, place, lows, span, size, write)

    monkeypatch.setattr(memory, "prefetch_site", spy)
    monkeypatch.setattr(widened, "prefetch_site", spy)     # (B's per-half widened loads)
    ptx = corpus_ptx(KERNEL_DIR / "gemm_tiled.cu", "sm_90")
    build_gang(build(parse(ptx)), "sgemm_tiled", (16, 16, 1), CpuOptions())
    rows = {name for name, lows, _ in seen if lows == 2}
    assert {"%rd15", "%rd11"} <= rows       # A's and B's tile loads
    assert {span for name, lows, span in seen if name in ("%rd15", "%rd11") and lows == 2} \
        == {64}


@pytest.mark.parametrize("block, learnt", [
    ((16, 16, 1), False),       # 8 warps of two rows: the warp 3 on is 6 rows down
    ((16, 2, 1), True),         # one warp a block: no next warp in it
    ((32, 8, 1), True),         # one row a warp: not each half its own
])
def test_a_2d_tile_prefetches_the_next_warps_rows_with_no_stride_learnt(block, learnt):
    # stencil_2d_5pt's load of `in` and store of `out`, outside loops: in 16-wide blocks
    # each half warp is a row, and the warp 3 on is lane 0's and lane 16's address plus 6
    # times their distance; checks.prefetch (which learns a stride at run time, its
    # `prefetched` blocks) is left for the other shapes
    ptx = corpus_ptx(KERNEL_DIR / "stencil_2d.cu", "sm_90")
    on = CpuOptions(row_load_prefetches=True, row_store_prefetches=True)
    llmod, _ = build_gang(build(parse(ptx)), "stencil_2d_5pt", block, on)
    text = str(llmod)
    assert text.count('call void @"llvm.prefetch') > 0
    assert ("\nprefetched" in text) == learnt
    # (the distance: 2 rows a warp, 3 warps on)
    assert (re.search(r"= mul i64 %\S+, 6$", text, re.M) is None) == learnt


@pytest.mark.parametrize("loads, stores", [(False, False), (False, True), (True, False)])
def test_row_prefetches_off_leave_the_stencils_rows_unfetched(loads, stores):
    # CpuOptions.row_load_prefetches / row_store_prefetches False: those rows-ahead sites
    # take no prefetch at all (not checks.prefetch's learnt stride instead), so that their
    # gain can be timed; llvm.prefetch's second argument: 0 read, 1 write
    ptx = corpus_ptx(KERNEL_DIR / "stencil_2d.cu", "sm_90")
    llmod, _ = build_gang(build(parse(ptx)), "stencil_2d_5pt", (16, 16, 1),
                          CpuOptions(row_load_prefetches=loads, row_store_prefetches=stores))
    text = str(llmod)
    kinds = set(re.findall(r'call void @"llvm\.prefetch[^(]*"\(ptr [^,]+, i32 (\d)', text))
    assert kinds == {kind for kind, on in (("0", loads), ("1", stores)) if on}
    assert "\nprefetched" not in text


@pytest.mark.parametrize("n", [48, 61])
def test_a_2d_stencil_prefetching_rows_ahead_computes_what_it_should(cpu_options, n):
    # past the grid's last rows too (the last blocks' warps prefetch rows below the array:
    # a prefetch never faults), and with a partial edge block (61); the rows-ahead
    # prefetches are off by default (CpuOptions): on here
    cpu_options(row_load_prefetches=True, row_store_prefetches=True)
    ptx = corpus_ptx(KERNEL_DIR / "stencil_2d.cu", "sm_90")
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("stencil_2d_5pt")
    grid_in = np.random.default_rng(n).random((n, n), dtype=np.float32)
    src, dst = dev.allocate(grid_in.nbytes, stream=stream), dev.allocate(grid_in.nbytes,
                                                                          stream=stream)
    src.copy_from(grid_in, stream=stream)
    launch(stream, LaunchConfig(grid=((n + 15) // 16, (n + 15) // 16), block=(16, 16)), kernel,
           src, dst, np.int32(n), np.int32(n))
    out = np.empty_like(grid_in)
    dst.copy_to(out, stream=stream)
    stream.sync()
    want = grid_in.copy()
    want[1:-1, 1:-1] = np.float32(0.25) * (((grid_in[:-2, 1:-1] + grid_in[2:, 1:-1])
                                            + grid_in[1:-1, :-2]) + grid_in[1:-1, 2:])
    assert (out == want).all()
