"""Warp gangs' frames (codegen/targets/cpu/gang/lowering.py): a register live across a barrier
whose lanes hold u + c[i] (passes/lane_offsets.py) keeps u alone in the warp's frame, and its
lanes are rebuilt where they are read; written after some lanes exited (lane 0 among them),
in a loop around a barrier, widened to 64 bits, it gives each live thread its own value, as
on the thread-by-thread path, in blocks whose warps are whole (where %tid's offsets are known)
and in a block with a partial warp (where they are not, and nothing is rebuilt)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang import lowering
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# Threads whose index is a multiple of `mod` exit; the others, after a barrier, write
# out[t] = buf[t] + 3t + 7 = 4t + 7 (%r4: &buf[t], %r6: 3t + 7 written after the exits,
# %rd3: &out[t], widened).
EXITS = HEADER + """.visible .entry k(.param .u64 out, .param .u32 mod)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<6>;
.shared .align 4 .b8 buf[512];
ld.param.u64 %rd1, [out]; ld.param.u32 %r10, [mod];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
shl.b32 %r2, %r1, 2;
mov.u32 %r3, buf;
add.s32 %r4, %r3, %r2;
st.shared.u32 [%r4], %r1;
rem.u32 %r5, %r1, %r10;
setp.eq.u32 %p1, %r5, 0;
@%p1 ret;
mad.lo.s32 %r6, %r1, 3, 7;
bar.sync 0;
ld.shared.u32 %r8, [%r4];
add.s32 %r9, %r8, %r6;
st.global.u32 [%rd3], %r9;
ret;
}
"""

# Four rounds around a barrier: idx = t + n * i (a register rewritten each round), then
# out[idx] = idx + 1000 * i.
LOOP = HEADER + """.visible .entry k(.param .u64 out, .param .u32 mod)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mov.u32 %r7, %ntid.x;
mov.u32 %r2, %r1;
mov.u32 %r3, 0;
ROUND:
bar.sync 0;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
mad.lo.s32 %r4, %r3, 1000, %r2;
st.global.u32 [%rd3], %r4;
add.s32 %r2, %r2, %r7;
add.s32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, 4;
@%p1 bra ROUND;
ret;
}
"""


def _rebuilt(ptx: str, threads: int, monkeypatch) -> list[str]:
    """The registers whose frame slot holds u alone, for blocks of `threads`."""
    seen = []
    chosen = lowering._rebuilt_registers

    def spy(fl, registers):
        found = chosen(fl, registers)
        seen.extend(sorted(r.name for r in found))
        return found
    monkeypatch.setattr(lowering, "_rebuilt_registers", spy)
    build_gang(build(parse(ptx)), "k", (threads, 1, 1), CpuOptions())
    return seen


def _run(ptx: str, threads: int, mod: int, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.uint32)
    launch_on_cpu(ptx, LaunchConfig(grid=1, block=threads), out, np.uint32(mod))
    return out


def test_registers_with_lane_offsets_are_kept_as_one_value(monkeypatch):
    assert _rebuilt(EXITS, 64, monkeypatch) == ["%r4", "%r6", "%rd3"]
    assert _rebuilt(LOOP, 64, monkeypatch)[-1:] == ["%r2"]
    # a partial warp: %tid's lanes are not known to lie one apart in every warp
    assert _rebuilt(EXITS, 48, monkeypatch) == []


@pytest.mark.parametrize("threads", [64, 48, 128])
@pytest.mark.parametrize("mod", [1, 2, 3, 4, 7, 33, 1000])
def test_a_register_written_after_some_lanes_exited(threads, mod, cpu_options):
    """mod 1: every thread exits; 2, 4: lane 0 of each warp exits, the others write u;
    33: one lane of the first two warps; 1000: only thread 0."""
    t = np.arange(threads)
    want = np.where(t % mod == 0, 0, 4 * t + 7).astype(np.uint32)
    assert (_run(EXITS, threads, mod, threads) == want).all()
    cpu_options(gang=False)
    assert (_run(EXITS, threads, mod, threads) == want).all()


@pytest.mark.parametrize("threads", [64, 96])
def test_a_register_rewritten_around_a_barrier(threads):
    idx = np.arange(4 * threads)
    want = (idx + 1000 * (idx // threads)).astype(np.uint32)
    assert (_run(LOOP, threads, 0, 4 * threads) == want).all()
