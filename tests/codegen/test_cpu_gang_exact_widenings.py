"""Warp gangs' shared accesses at 64-bit addresses widened from %tid, as NVRTC 13.0 makes
them (`mul.wide.u32 %rd, %tid.y, 64; add.s64 %rd, As, %rd`, where 13.5 stays in 32 bits):
passes/shared_bounds.exact_widenings finds that such a widening's source lies in [0, 16)
in every thread, so lane_forms gives it an exact form, not a widened one that the gang
trusts only behind a run-time flag (each access then chose its kind at run time: gemm's k
loop with 13.0's PTX ran 2.2x the instructions of 13.5's), and passes/shared_bounds.py
proves such 64-bit shared addresses inside their variable as it does 32-bit ones. A source
whose range is not known (a parameter added) keeps the widened form and its run-time test;
an access past the variable is checked and faults."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.passes.lane_forms import lane_forms
from ptxport.passes.shared_bounds import shared_bounds
from ptxport.ptx.parser import parse

HEADER = ".version 9.0\n.target sm_90\n.address_size 64\n"

# As[ty][tx] = in[16 ty + tx]; out[16 ty + tx] = As[1][tx] + As[ty][2] (NVRTC 13.0's shape)
TILE = HEADER + """.shared .align 4 .b8 As[1024];
.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 z)
{
.reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<16>;
ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r7, [z];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
SOURCE
mul.wide.u32 %rd3, %r2, 64;
mov.u64 %rd4, As;
add.s64 %rd5, %rd4, %rd3;
mul.wide.u32 %rd6, %r1, 4;
add.s64 %rd7, %rd5, %rd6;
shl.b32 %r3, %r2, 4;
add.s32 %r4, %r3, %r1;
cvta.to.global.u64 %rd8, %rd1;
mul.wide.u32 %rd9, %r4, 4;
add.s64 %rd10, %rd8, %rd9;
ld.global.f32 %f1, [%rd10];
st.shared.f32 [%rd7], %f1;
bar.sync 0;
add.s64 %rd11, %rd4, %rd6;
ld.shared.f32 %f2, [%rd11+64];
ld.shared.f32 %f3, [%rd5+8];
add.f32 %f2, %f2, %f3;
cvta.to.global.u64 %rd12, %rd2;
add.s64 %rd13, %rd12, %rd9;
st.global.f32 [%rd13], %f2;
ret;
}
"""
EXACT = TILE.replace("SOURCE\n", "")
# tx + z: the same lanes' offsets, its range not known when compiling
UNKNOWN = TILE.replace("SOURCE", "add.s32 %r1, %r1, %r7;")


def _forms(ptx: str) -> dict:
    kernel = build(parse(ptx)).functions["k"]
    return {r.name: f for r, f in lane_forms(kernel, (16, 16, 1)).items()}


def _run_time_tests(ptx: str) -> int:
    # (block checks off: where they hold, the global accesses they cover are lowered twice,
    # one copy a test or not, in EXACT and UNKNOWN alike: not the shared accesses' tests)
    llmod, _ = build_gang(build(parse(ptx)), "k", (16, 16, 1), CpuOptions(block_checks=False))
    return len(re.findall(r"^(?:classify|access)_(?:halves|uniform)(?:\.\d+)?:", str(llmod),
                          re.MULTILINE))


def test_a_widening_of_tid_is_exact():
    exact, unknown = _forms(EXACT), _forms(UNKNOWN)
    assert exact["%rd6"].offsets[:17] == tuple(4 * i for i in range(16)) + (0,)
    assert not exact["%rd6"].widened and not exact["%rd7"].widened
    assert exact["%rd3"].offsets == (0,) * 16 + (64,) * 16 and not exact["%rd3"].widened
    # tx + z may lie anywhere: its widening may wrap inside the warp
    assert unknown["%rd6"].offsets == exact["%rd6"].offsets and unknown["%rd6"].widened


def test_exact_widenings_need_no_run_time_test():
    # (the partial-mask copies of each segment test their lanes either way)
    assert _run_time_tests(EXACT) < _run_time_tests(UNKNOWN)


def test_the_tile_runs_as_cuda_would():
    src = np.arange(256, dtype=np.float32)
    for ptx in (EXACT, UNKNOWN):
        out = np.zeros_like(src)
        binary = launch_on_cpu(ptx, LaunchConfig(grid=1, block=(16, 16)), src, out,
                               np.uint32(0))
        assert binary.gang_refusal is None
        tile = src.reshape(16, 16)
        assert (out.reshape(16, 16) == tile[1][None, :] + tile[:, 2][:, None]).all()


def test_64_bit_shared_addresses_are_proven_inside():
    kernel = build(parse(EXACT)).functions["k"]
    found = shared_bounds(kernel, (16, 16, 1))
    assert sorted(found.values()) == [(0, 1020, 1024), (8, 968, 1024), (64, 124, 1024)]
    unknown = build(parse(UNKNOWN)).functions["k"]
    assert list(shared_bounds(unknown, (16, 16, 1)).values()) == [(8, 968, 1024)]


def test_a_64_bit_shared_read_past_the_variable_faults():
    # As[ty][2] 15 rows down: past the 1024 bytes of As for the rows ty >= 1
    ptx = EXACT.replace("[%rd5+8]", "[%rd5+968]")
    kernel = build(parse(ptx)).functions["k"]
    assert (968, 1928, 1024) in shared_bounds(kernel, (16, 16, 1)).values()
    line = next(n for n, text in enumerate(ptx.splitlines(), 1) if "+968]" in text)
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {line} in block \(0, 0, 0\), "
                       r"thread 16;"):
        launch_on_cpu(ptx, LaunchConfig(grid=1, block=(16, 16)), np.zeros(256, np.float32),
                      np.zeros(256, np.float32), np.uint32(0))


# NVRTC 13.0's stencil tile address, live across the barrier: &tile[ty + 1][tx + 1] as
# tile + wide(ty) * 72 + wide(tx) * 4 (+76); out[16 ty + tx] = tile[ty + 1][tx + 1] +
# tile[ty + 1][1] = t + 16 ty.
ACROSS = HEADER + """.shared .align 4 .b8 tile[1296];
.visible .entry k(.param .u64 out, .param .u32 z)
{
.reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<16>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r7, [z];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
SOURCE
mul.wide.s32 %rd3, %r2, 72;
mov.u64 %rd4, tile;
add.s64 %rd5, %rd4, %rd3;
mul.wide.s32 %rd6, %r1, 4;
add.s64 %rd7, %rd5, %rd6;
shl.b32 %r3, %r2, 4;
add.s32 %r4, %r3, %r1;
cvt.rn.f32.u32 %f1, %r4;
st.shared.f32 [%rd7+76], %f1;
bar.sync 0;
ld.shared.f32 %f2, [%rd7+76];
ld.shared.f32 %f3, [%rd5+76];
add.f32 %f2, %f2, %f3;
mul.wide.u32 %rd9, %r4, 4;
add.s64 %rd13, %rd1, %rd9;
st.global.f32 [%rd13], %f2;
ret;
}
"""


def _kept_as_u(ptx: str, monkeypatch) -> list[str]:
    """The registers whose frame slot holds u alone (lowering._rebuilt_registers)."""
    from ptxport.codegen.targets.cpu.gang import lowering
    seen = []
    chosen = lowering._rebuilt_registers

    def spy(fl, registers):
        found = chosen(fl, registers)
        seen.extend(sorted(r.name for r in found))
        return found
    monkeypatch.setattr(lowering, "_rebuilt_registers", spy)
    build_gang(build(parse(ptx)), "k", (16, 16, 1), CpuOptions())
    return seen


def test_an_exact_widening_across_a_barrier_is_kept_as_u(monkeypatch):
    """The 64-bit tile address has an exact form (not passes/lane_offsets.py's, which
    follows aligned registers only through a widening): its frame keeps u, not 32 lanes
    of 64 bits (NVRTC 13.0's stencil: 4 vector stores a warp before the barrier). With
    tx + z, whose widening may wrap inside a warp, it is kept lane by lane."""
    exact = _kept_as_u(ACROSS.replace("SOURCE\n", ""), monkeypatch)
    assert "%rd7" in exact and "%rd5" in exact
    unknown = _kept_as_u(ACROSS.replace("SOURCE", "add.s32 %r1, %r1, %r7;"), monkeypatch)
    assert "%rd7" not in unknown and "%rd5" in unknown


@pytest.mark.parametrize("source", ["", "add.s32 %r1, %r1, %r7;"])
def test_the_tile_address_kept_across_the_barrier_reads_each_threads_cell(source,
                                                                           cpu_options):
    t = np.arange(256)
    for gang in (True, False):
        cpu_options(gang=gang)
        out = np.zeros(256, np.float32)
        launch_on_cpu(ACROSS.replace("SOURCE", source), LaunchConfig(grid=1, block=(16, 16)),
                      out, np.uint32(0))
        assert (out == t + 16 * (t // 16)).all()
