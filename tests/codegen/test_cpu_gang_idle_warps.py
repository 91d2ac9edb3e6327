"""Idle warps' rounds ended at once (codegen/targets/cpu/gang/idle_warps.py): in a uniform
round, the first warp that a test of threadIdx.x against a block-uniform value leaves idle,
where every later warp is idle too and runs only memoryless, block-uniform code to the next
barrier, ends the round for the later warps, which take its registers. These kernels have
tree levels whose idle warps are a suffix of the block (`t < d`), a prefix (`t >= d`: the
busy warps' stable side runs memory code, so nothing is skipped), neither (`(t ^ 5) < d`),
idle sides that store or write a per-thread register, block-uniform counters updated on the
idle side (d, off) and per-thread state kept across every level, partial warps and warps
that exit early; each must agree with numpy, with the thread-by-thread path and with the
skipping off."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse
from ptxport.runtime.program import ObjectCode

SOURCE = r"""
// TEST: the level's test. Up-sweep-like levels (d halves, off doubles) then down-sweep-like
// ones (d doubles, off halves), a shared tree, per-thread state `acc` across every level.
#define LEVELS(NAME, TEST, IDLE)                                                           \
extern "C" __global__ void NAME(const int* x, int* y, int n, int quit)                   \
{                                                                                         \
    __shared__ int s[1024], u[1024];                                                      \
    int t = threadIdx.x, m = blockDim.x;                                                  \
    int i = blockIdx.x * m + t;                                                           \
    s[t] = i < n ? x[i] : 0;                                                              \
    u[t] = 0;                                                                             \
    if (t >= quit) return;                                                                \
    int acc = t, off = 1, keep = 0;                                                       \
    for (int d = m >> 1; d > 0; d >>= 1) {                                                \
        __syncthreads();                                                                  \
        if (TEST) {                                                                       \
            int a = (off * (2 * t + 1) + m - 1) % m, b = (off * (2 * t + 2) + m - 1) % m; \
            s[b] += s[a];                                                                 \
            acc = acc * 3 + d;                                                            \
        } else { IDLE; }                                                                  \
        off <<= 1;                                                                        \
    }                                                                                     \
    for (int d = 1; d < m; d <<= 1) {                                                     \
        off >>= 1;                                                                        \
        __syncthreads();                                                                  \
        if (TEST) {                                                                       \
            int a = (off * (2 * t + 1) + m - 1) % m, b = (off * (2 * t + 2) + m - 1) % m; \
            int left = s[a];                                                              \
            s[a] = s[b];                                                                  \
            s[b] += left + off;                                                           \
        } else { IDLE; }                                                                  \
    }                                                                                     \
    __syncthreads();                                                                      \
    if (i < n) y[i] = s[t] + acc + keep * 7 + u[t] * 5;                                   \
}

LEVELS(suffix_idle, t < d, )
LEVELS(prefix_idle, t >= d, )
LEVELS(mixed_idle, (t ^ 5) < d, )
LEVELS(idle_stores, t < d, u[t] += d)
LEVELS(idle_keeps, t < d, keep += t)
"""

KERNELS = ["suffix_idle", "prefix_idle", "mixed_idle", "idle_stores", "idle_keeps"]


def _tests(name: str):
    """Each level's predicate for thread t, and what its idle side does to (s, keep)."""
    return {
        "suffix_idle": lambda t, d: t < d, "prefix_idle": lambda t, d: t >= d,
        "mixed_idle": lambda t, d: (t ^ 5) < d, "idle_stores": lambda t, d: t < d,
        "idle_keeps": lambda t, d: t < d}[name]


def _wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def _reference(name: str, x: np.ndarray, block: int, quit: int) -> np.ndarray:
    """Threads run level by level (for the kernels whose busy threads' shared accesses
    touch disjoint pairs, `_disjoint`: there the threads' order does not matter)."""
    test = _tests(name)
    y = np.zeros_like(x)
    for first in range(0, x.size, block):
        t = np.arange(block)
        live = t < quit
        s = x[first:first + block].astype(np.int64)
        acc, keep, off = t.astype(np.int64), np.zeros(block, np.int64), 1
        u = np.zeros(block, np.int64)
        d = block >> 1
        while d > 0:
            busy = test(t, d) & live
            for k in np.flatnonzero(busy):
                a, b = (off * (2 * k + 1) - 1) % block, (off * (2 * k + 2) - 1) % block
                s[b] = _wrap(s[b] + s[a])
            acc = np.where(busy, _wrap(acc * 3 + d), acc)
            keep = np.where(live & ~busy & (name == "idle_keeps"), keep + t, keep)
            u = np.where(live & ~busy & (name == "idle_stores"), u + d, u)
            off <<= 1
            d >>= 1
        d = 1
        while d < block:
            off >>= 1
            busy = test(t, d) & live
            for k in np.flatnonzero(busy):
                a, b = (off * (2 * k + 1) - 1) % block, (off * (2 * k + 2) - 1) % block
                left = s[a]
                s[a] = s[b]
                s[b] = _wrap(s[b] + left + off)
            keep = np.where(live & ~busy & (name == "idle_keeps"), keep + t, keep)
            u = np.where(live & ~busy & (name == "idle_stores"), u + d, u)
            d <<= 1
        out = _wrap(s + acc + keep * 7 + u * 5)
        y[first:first + block] = np.where(live, out, -1)
    return y


def _disjoint(name: str, block: int) -> bool:
    """Whether a level's busy threads touch disjoint elements (a tree's `t < d` in a block
    of a power of two), so that the result does not depend on the order they run in."""
    return name in ("suffix_idle", "idle_stores", "idle_keeps") and block & (block - 1) == 0


def _run(name: str, x: np.ndarray, block: int, quit: int) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel(name)
    buf_x, buf_y = (dev.allocate(x.nbytes, stream=stream) for _ in range(2))
    buf_x.copy_from(x, stream=stream)
    buf_y.copy_from(np.full_like(x, -1), stream=stream)
    launch(stream, LaunchConfig(grid=x.size // block, block=block), kernel, buf_x, buf_y,
           np.int32(x.size), np.int32(quit))
    y = np.empty_like(x)
    buf_y.copy_to(y, stream=stream)
    stream.sync()
    return y


# Block shapes (block, quit): 8 whole warps (uniform rounds, idle warps skipped at most
# levels); 3 warps; a warp's last lanes exit at the start (general rounds only); warps 4..7
# exit at the start; a partial warp (general rounds only). The kernels other than
# suffix_idle have no skip path (test_which_kernels_skip): with the skipping on and off
# they lower to the same LLVM IR at each of these shapes, so the suite runs them at 256
# threads, where suffix_idle skips; their other shapes (an LLVM compile each, 12 in all)
# check the warp gangs' rounds in general, as suffix_idle's cases at those shapes do, and
# run under `pytest -m slow`.
SHAPES = [(256, 256), (96, 96), (64, 40), (256, 128), (48, 48)]
CASES = [pytest.param(name, block, quit, id=f"{block}-{quit}-{name}",
                      marks=() if name == "suffix_idle" or block == 256 else pytest.mark.slow)
         for block, quit in SHAPES for name in KERNELS]


@pytest.mark.parametrize("name, block, quit", CASES)
def test_idle_warps_agree(cpu_options, name, block, quit):
    x = np.random.default_rng(block + quit).integers(-1000, 1000, 3 * block, dtype=np.int32)
    # (thread by thread only where it is compared: elsewhere the busy threads' updates race,
    # and their order decides)
    # (first_round: the skip path where the first round has a loop of its own, which a
    # barrier on a loop leaves out by default; suffix_idle alone has a skip path)
    choices = [{}, {"skip_idle_warps": False}] + [{"first_round": True}] * (
        name == "suffix_idle") + [{"gang": False}] * _disjoint(name, block)
    results = []
    for choice in choices:
        cpu_options(**choice)
        results.append(_run(name, x, block, quit))
    for other, choice in zip(results[1:], choices[1:], strict=True):
        np.testing.assert_array_equal(results[0], other, err_msg=str(choice))
    if _disjoint(name, block):
        np.testing.assert_array_equal(results[0],
                                      _reference(name, x, block, quit).astype(np.int32))


def _skips_ptx(ptx: str, name: str, block: tuple[int, int, int]) -> bool:
    """Whether run_blocks may end a uniform round for the later warps (its skip path)."""
    llmod, _ = build_gang(build(parse(ptx)), name, block, CpuOptions())
    return "skip_rest" in str(llmod)


def _skips(name: str, block: tuple[int, int, int]) -> bool:
    return _skips_ptx(Program(SOURCE, code_type="c++").compile("ptx").code, name, block)


@pytest.mark.parametrize("name, block, skips", [
    ("suffix_idle", (256, 1, 1), True),
    ("prefix_idle", (256, 1, 1), False),    # the stable side is the busy one
    ("idle_stores", (256, 1, 1), False),    # the idle side stores
    ("idle_keeps", (256, 1, 1), False),     # the idle side writes a per-thread register
    ("mixed_idle", (256, 1, 1), False),     # (t ^ 5) is no copy of threadIdx.x
    ("suffix_idle", (48, 1, 1), False),     # a partial warp
    ("suffix_idle", (64, 2, 1), False),     # two rows: threadIdx.x is not the warp order
])
def test_which_kernels_skip(name, block, skips):
    assert _skips(name, block) == skips


def _levels_ptx(label: str) -> str:
    """Levels of `t < d` (d = ntid, halved each level) summing d per thread; `label` after
    the loop's barrier (a branch never taken goes there) ends its block there (an empty
    segment after it, the test in a block of its own: nothing is skipped) or, empty, keeps
    the test in the barrier's block."""
    return f""".version 7.8
.target sm_80
.address_size 64
.visible .entry levels(.param .u64 out)
{{
.reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, 0;
{"setp.eq.u32 %p0, %r2, 0;" if label else ""}
{"@%p0 bra TEST;" if label else ""}
LOOP:
bar.sync 0;
{label}
setp.lt.u32 %p1, %r1, %r2;
@!%p1 bra IDLE;
add.s32 %r3, %r3, %r2;
IDLE:
shr.u32 %r2, %r2, 1;
setp.ne.s32 %p2, %r2, 0;
@%p2 bra LOOP;
bar.sync 0;
mov.u32 %r4, %ctaid.x;
mov.u32 %r6, %ntid.x;
mad.lo.s32 %r5, %r4, %r6, %r1;
mul.wide.u32 %rd2, %r5, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
ret;
}}
"""


@pytest.mark.parametrize("label, skips", [("", True), ("TEST:", False)])
@pytest.mark.parametrize("gang", [True, False])
def test_levels_in_ptx(cpu_options, label, skips, gang):
    cpu_options(gang=gang)
    block = 256
    assert _skips_ptx(_levels_ptx(label), "levels", (block, 1, 1)) == skips
    kernel = ObjectCode(_levels_ptx(label), build(parse(_levels_ptx(label))),
                        "levels.ptx").get_kernel("levels")
    dev = Device("cpu")
    stream = dev.create_stream()
    out = np.zeros(2 * block, np.uint32)
    buf = dev.allocate(out.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=block), kernel, buf)
    buf.copy_to(out, stream=stream)
    stream.sync()
    t = np.arange(block)
    expected = sum(np.where(t < d, d, 0) for d in (256, 128, 64, 32, 16, 8, 4, 2, 1))
    np.testing.assert_array_equal(out, np.tile(expected, 2))
