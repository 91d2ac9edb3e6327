"""Branches on whole-warp bounds (codegen/targets/cpu/gang/warp_bounds.py): a setp that
orders a register whose lanes hold u + c[i] with aligned offsets against a uniform value
tells from two scalars whether all of a warp's lanes or none hold it, and a branch on that
predicate goes by them. Every ordering (signed and unsigned, the register on either side,
the predicate negated or not), on threadIdx.x, on a register kept as u across a barrier and
on one computed after it, on values at the signed range's ends (t << 26: warps of lanes from
INT_MIN up), in rounds whose thresholds move across the warps, must count as numpy does and
as the thread-by-thread path does; in blocks of whole warps, where the bounds are used, and
in blocks with a partial warp, where the lanes' own predicates decide, and in rows
narrower than a warp and on a sum that wraps inside a warp (t + d, d near INT_MAX), where
the bounds hold only where the lanes' ends are in order.

Each branch skips the count of its test: an add to a counter register, stored once after the
rounds (`body="register"`). The counters were global loads and stores in the round loop once,
and are still, under `-m slow` (`body="memory"`): since the loop's global accesses are also
lowered twice for hoist-global-checks' entry test, each of the 24 accesses came in 8 copies
and a block shape's compile took ~30 s of LLVM on a 2-core machine, ~3 s with the counters
in registers; what the branches decide is counted the same either way."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, launch
from ptxport.codegen.targets.cpu.gang import control
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.program import ObjectCode

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# (setp, whether the branch skips the count where the predicate holds (@p) or where it
# does not (@!p)); operands: %r1 = t, %r2 = t << 26, %r6 = t * 8 (written after the barrier),
# %r15 = t + d (not aligned: with d near INT_MAX a warp's lanes wrap within it),
# %r10 = d - 37 * round, %r11 = e + 29 * round
TESTS = [
    ("setp.lt.s32 %p1, %r1, %r10", False),
    ("setp.le.s32 %p1, %r10, %r1", True),
    ("setp.gt.s32 %p1, %r1, %r10", False),
    ("setp.ge.s32 %p1, %r10, %r1", True),
    ("setp.lo.u32 %p1, %r1, %r11", False),
    ("setp.hs.u32 %p1, %r11, %r1", True),
    ("setp.hi.u32 %p1, %r1, %r11", True),
    ("setp.ls.u32 %p1, %r1, %r11", False),
    ("setp.lt.s32 %p1, %r2, %r10", False),
    ("setp.gt.s32 %p1, %r2, %r10", True),
    ("setp.lt.u32 %p1, %r2, %r11", False),
    ("setp.ge.s32 %p1, %r6, %r10", False),
    ("setp.lt.s32 %p1, %r15, %r10", False),
    # predicates of those combined (the scalars carried through and, or, not; %p3 uniform)
    ("setp.lt.s32 %p1, %r1, %r10;\nsetp.ge.s32 %p4, %r15, %r10;\nor.pred %p1, %p1, %p4",
     False),
    ("setp.lt.s32 %p1, %r1, %r10;\nsetp.lt.u32 %p4, %r1, %r11;\nand.pred %p1, %p1, %p4",
     True),
    ("setp.ge.s32 %p1, %r1, %r10;\nnot.pred %p1, %p1", False),
    ("setp.lt.s32 %p3, %r12, 100;\nsetp.lt.s32 %p1, %r1, %r10;\nand.pred %p1, %p3, %p1",
     False),
    ("setp.lt.s32 %p3, %r12, 100;\nsetp.gt.s32 %p1, %r1, %r10;\nor.pred %p1, %p1, %p3",
     True),
]
ROUNDS = 7


def _ptx(body: str = "register") -> str:
    """The kernel; `body`: what a branch skips, an add to the test's counter register (the
    counters stored after the rounds) or a global load, add and store of its count."""
    count = {"register": "add.s32 %c{k}, %c{k}, 1;",
             "memory": "ld.global.u32 %r7, [%rd4+{o}];\nadd.s32 %r7, %r7, 1;\n"
                       "st.global.u32 [%rd4+{o}], %r7;"}[body]
    branches = []
    for k, (setp, skip_if_true) in enumerate(TESTS):
        guard = "@%p1" if skip_if_true else "@!%p1"
        branches.append(f"""{setp};
{guard} bra SKIP{k};
{count.format(k=k, o=4 * k)}
SKIP{k}:""")
    counters = range(len(TESTS)) if body == "register" else ()
    init = "".join(f"mov.u32 %c{k}, 0;\n" for k in counters)
    stores = "".join(f"st.global.u32 [%rd4+{4 * k}], %c{k};\n" for k in counters)
    return HEADER + f""".visible .entry k(.param .u64 out, .param .u32 d, .param .u32 e)
{{
.reg .pred %p<5>; .reg .b32 %r<20>; .reg .b32 %c<{len(TESTS)}>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r12, [d]; ld.param.u32 %r13, [e];
mov.u32 %r1, %tid.x;
shl.b32 %r2, %r1, 26;
add.s32 %r15, %r1, %r12;
mov.u32 %r3, %ctaid.x;
mov.u32 %r4, %ntid.x;
mad.lo.s32 %r5, %r3, %r4, %r1;
mul.wide.u32 %rd2, %r5, {4 * len(TESTS)};
add.s64 %rd4, %rd1, %rd2;
{init}mov.u32 %r9, 0;
ROUND:
bar.sync 0;
mul.lo.s32 %r14, %r9, 37;
sub.s32 %r10, %r12, %r14;
mad.lo.s32 %r11, %r9, 29, %r13;
shl.b32 %r6, %r1, 3;
{chr(10).join(branches)}
add.s32 %r9, %r9, 1;
setp.lt.s32 %p2, %r9, {ROUNDS};
@%p2 bra ROUND;
{stores}ret;
}}
"""


def _reference(threads: int, block: int, d: int, e: int) -> np.ndarray:
    t = np.arange(threads, dtype=np.int64) % block
    big = ((t << 26) + 2**31) % 2**32 - 2**31
    shifted = (t + d + 2**31) % 2**32 - 2**31
    counts = np.zeros((threads, len(TESTS)), np.uint32)
    for r in range(ROUNDS):
        dr, er = d - 37 * r, (e + 29 * r) % 2**32
        holds = [t < dr, dr <= t, t > dr, dr >= t, t < er, er >= t, t > er, t <= er,
                 big < dr, big > dr, big % 2**32 < er, 8 * t >= dr, shifted < dr,
                 (t < dr) | (shifted >= dr), (t < dr) & (t < er), ~(t >= dr),
                 (t < dr) & (d < 100), (t > dr) | (d < 100)]
        for k, ((_, skip_if_true), h) in enumerate(zip(TESTS, holds, strict=True)):
            counts[:, k] += (~h if skip_if_true else h)
    return counts


@pytest.mark.parametrize("block, d, e", [
    (256, 200, 100),        # thresholds cross warps 3..6 (t) and the big lanes' warps
    (512, 600, 40),         # all lanes of every warp at first, then fewer
    (64, 0, 0),             # none, all, and negative thresholds
    (256, 2**31 - 100, 7),  # t + d wraps in warp 3 (t = 100): its lanes decide
    (96, -5, 2**32 - 3),    # unsigned thresholds near the top
    (48, 30, 20),           # a partial warp: %tid's lanes have no offsets, no bounds
    (16, 9, 5),             # rows of 16 in a warp: bounds with a test for a wrap
])
@pytest.mark.parametrize("gang", [True, False])
@pytest.mark.parametrize("body", ["register", pytest.param("memory", marks=pytest.mark.slow)])
def test_branches_on_bounds_agree(cpu_options, block, d, e, gang, body):
    cpu_options(gang=gang)
    kernel = ObjectCode(_ptx(body), _module(body), "bounds.ptx").get_kernel("k")
    dev = Device("cpu")
    stream = dev.create_stream()
    blocks = 3
    threads = blocks * block
    out = np.zeros((threads, len(TESTS)), np.uint32)
    buf = dev.allocate(out.nbytes, stream=stream)
    buf.copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=block), kernel, buf, np.int32(d),
           np.uint32(e))
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, _reference(threads, block, d, e))


@pytest.mark.parametrize("block, whole", [(256, True), (64, True), (48, False), (16, True)])
def test_bounds_decide_whole_warps_only(monkeypatch, block, whole):
    """Where the block's warps are whole (rows of 16 too: %tid.x's lanes u + i % 16, not
    aligned, tested for a wrap at run time), every branch goes by its bounds in each
    segment's full-mask copy, and in its copy for other masks all but the one on %r6 (not
    kept as u in the frame: under a partial mask its lanes outside the mask are not known
    to hold u + c[i]); none does where %tid's lanes have no offsets (a partial warp)."""
    used = []
    real = control.branch_bounds

    def counting(fl, inst):
        bounds = real(fl, inst)
        used.append(bounds is not None)
        return bounds
    monkeypatch.setattr(control, "branch_bounds", counting)
    build_gang(_module(), "k", (block, 1, 1), CpuOptions())
    assert len(used) == 2 * len(TESTS)
    assert sum(used) == (2 * len(TESTS) - 1 if whole else 0), "".join("ny"[u] for u in used)


def _module(body: str = "register"):
    module = build(parse(_ptx(body), "bounds.ptx"))
    verify(module)
    return module
