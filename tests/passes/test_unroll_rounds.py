"""Barrier loops unrolled for the block shape (passes/unroll_rounds.py): a Blelloch scan's
up-sweep and down-sweep become one copy per level with their counters folded, loops whose
trip count is not known (a parameter's), too long, or without a barrier stay; and the
kernels compute what numpy does with the pass and without it (odd n, a partial last tile,
several block shapes), as warp gangs and thread by thread."""

from __future__ import annotations

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport import Device, LaunchConfig, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.gang.fallthrough import join_fallthrough
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.if_convert import if_convert
from ptxport.passes.unroll_rounds import unroll_rounds
from ptxport.ptx.parser import parse
from ptxport.runtime.program import ObjectCode

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[t] = sum over rounds r < count of (t < bound_r ? r + 1 : 0), bound_r = ntid >> r,
# each round after a barrier; count an immediate (or the parameter n: not unrolled)
LOOP = HEADER + """.visible .entry k(.param .u64 out, .param .u32 n)
{
.reg .pred %p<4>; .reg .b32 %r<20>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r12, [n];
mov.u32 %r1, %tid.x;
mov.u32 %r3, %ctaid.x;
mov.u32 %r4, %ntid.x;
mad.lo.s32 %r5, %r3, %r4, %r1;
mul.wide.u32 %rd2, %r5, 4;
add.s64 %rd4, %rd1, %rd2;
mov.u32 %r9, 0;
mov.u32 %r10, %r4;
mov.u32 %r7, 0;
ROUND:
bar.sync 0;
setp.ge.u32 %p1, %r1, %r10;
@%p1 bra SKIP;
add.s32 %r8, %r9, 1;
add.s32 %r7, %r7, %r8;
SKIP:
shr.u32 %r10, %r10, 1;
add.s32 %r9, %r9, 1;
setp.lt.s32 %p2, %r9, COUNT;
@%p2 bra ROUND;
st.global.u32 [%rd4], %r7;
ret;
}
"""


def _loop(count: str, barrier: bool = True) -> str:
    text = LOOP.replace("COUNT", count)
    return text if barrier else text.replace("bar.sync 0;\n", "")


def _module(text: str):
    module = build(parse(text, "unroll.ptx"))
    verify(module)
    return module


def _unrolled(text: str, kernel: str, block: tuple):
    f = join_fallthrough(_module(text).functions[kernel])
    return f, *unroll_rounds(f, block)


def _barriers(f) -> int:
    return sum(1 for i in f.instructions() if i.opcode == "bar")


def test_blelloch_levels_become_copies_with_constant_counters():
    ptx = corpus_ptx(KERNEL_DIR / "scan_blelloch.cu", "sm_80")
    kernel, f, notes = _unrolled(ptx, "scan_exclusive_blelloch", (64, 1, 1))
    assert f is not kernel
    assert notes == [n for n in notes if "7 iterations unrolled" in n] and len(notes) == 2
    assert _barriers(kernel) == 3 and _barriers(f) == 2 * 7 + 1
    # no back edge is left, and no shift of a counter: each level's stride is an immediate
    index = {id(b): i for i, b in enumerate(f.blocks)}
    assert all(index[id(s)] > index[id(b)] for b in f.blocks for s in b.successors)
    assert not [i for i in f.instructions() if i.opcode in ("shl", "shr")
                and not any(isinstance(o, type(i.operands[-1])) for o in i.operands[1:2])
                and i.operands[0] is i.operands[1]]
    assert {i.operands[2].value for i in f.instructions()
            if i.opcode == "setp" and i.spec.get("cmp") == "ge"
            and hasattr(i.operands[2], "value")} >= {64, 32, 16, 8, 4, 2, 1}
    # the kernel as written is left alone (the pass makes a new function)
    assert _barriers(_module(ptx).functions["scan_exclusive_blelloch"]) == 3


@pytest.mark.parametrize("count, barrier, block, unrolled", [
    ("5", True, (128, 1, 1), True),
    ("%r12", True, (128, 1, 1), False),      # the trip count is a parameter
    ("40", True, (128, 1, 1), False),        # more than TRIPS iterations
    ("5", False, (128, 1, 1), False),        # no barrier: LLVM's loop
])
def test_which_loops_unroll(count, barrier, block, unrolled):
    kernel, f, notes = _unrolled(_loop(count, barrier), "k", block)
    assert (f is not kernel) == unrolled
    assert bool(notes) == unrolled
    if unrolled:
        assert _barriers(f) == int(count)


@pytest.mark.parametrize("bound, converted", [(64, False), (96, False), (16, True),
                                              (100, True)])
def test_tid_bounds_at_warp_edges_are_not_if_converted(bound, converted):
    """`if (t < k)` with k a multiple of 32 splits no warp of a 128-thread block: its
    region keeps its branch; other bounds split one warp and are converted."""
    text = _loop("1").replace("setp.ge.u32 %p1, %r1, %r10", f"setp.ge.u32 %p1, %r1, {bound}")
    f = join_fallthrough(_module(text).functions["k"])
    _, notes, _, _ = if_convert(f, (128, 1, 1))
    assert bool(notes) == converted


def _reference(block: int, blocks: int, count: int) -> np.ndarray:
    t = np.arange(block * blocks) % block
    return sum(np.where(t < block >> r, r + 1, 0) for r in range(count)).astype(np.uint32)


@pytest.mark.parametrize("count", ["5", "%r12"])
@pytest.mark.parametrize("block", [128, 64, 48])
@pytest.mark.parametrize("unroll", [True, False])
def test_rounds_agree(cpu_options, count, block, unroll):
    cpu_options(unroll_rounds=unroll)
    kernel = ObjectCode(_loop(count), _module(_loop(count)), "unroll.ptx").get_kernel("k")
    dev = Device("cpu")
    stream = dev.create_stream()
    blocks = 3
    out = np.zeros(block * blocks, np.uint32)
    buf = dev.allocate(out.nbytes, stream=stream)
    buf.copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=block), kernel, buf, np.int32(5))
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, _reference(block, blocks, 5))


# slow: the unrolled scan compiles for 40-45 s on a 2-core machine, and unroll_rounds is off by
# default; the tests above check the pass on small kernels in the default run
@pytest.mark.slow
@pytest.mark.parametrize("block, n", [(32, 1001), (32, 2 * 32 * 3)])
def test_blelloch_scan_agrees(cpu_options, block, n):
    """scan_exclusive_blelloch unrolled, with odd n (a partial last tile) and whole tiles,
    against numpy's exclusive scan per tile (one small block shape: the unrolled levels
    compile slowly; tests/test_corpus_cpu.py runs 64 threads, the benchmark 512)."""
    cpu_options(unroll_rounds=True)
    ptx = corpus_ptx(KERNEL_DIR / "scan_blelloch.cu", "sm_80")
    kernel = ObjectCode(ptx, _module(ptx), "scan.ptx").get_kernel("scan_exclusive_blelloch")
    dev = Device("cpu")
    stream = dev.create_stream()
    tile = 2 * block
    tiles = -(-n // tile)
    x = np.random.default_rng(block + n).integers(-1000, 1000, n).astype(np.int32)
    bufs = [dev.allocate(4 * k, stream=stream) for k in (n, n, tiles)]
    bufs[0].copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=tiles, block=block, shmem_size=tile * 4), kernel,
           *bufs, np.int32(n))
    y, sums = np.empty(n, np.int32), np.empty(tiles, np.int32)
    bufs[1].copy_to(y, stream=stream)
    bufs[2].copy_to(sums, stream=stream)
    stream.sync()
    padded = np.zeros(tiles * tile, np.int64)
    padded[:n] = x
    inclusive = np.cumsum(padded.reshape(tiles, tile), axis=1)
    np.testing.assert_array_equal(y, (inclusive - padded.reshape(tiles, tile)).ravel()[:n])
    np.testing.assert_array_equal(sums, inclusive[:, -1].astype(np.int32))


def test_gang_build_with_and_without():
    """Both choices build (the option is part of the image key)."""
    module = _module(_loop("5"))
    for unroll in (True, False):
        build_gang(module, "k", (64, 1, 1), CpuOptions(unroll_rounds=unroll))
