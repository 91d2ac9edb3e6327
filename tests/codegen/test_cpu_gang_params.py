"""Warp gangs' kernel parameters (codegen/targets/cpu/gang/params.py): direct `ld.param`s
read run_blocks' copy of the parameters, and a register that only holds one reads the copy
wherever it is read (no place in the warp's frame); a kernel that takes a parameter's
address reads the buffer itself. Each is checked against the thread-by-thread path: blocks
of whole and partial warps, threads that exit after the barrier, a parameter read in part
(the high word of a u64) and one read only after the barrier."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.targets.cpu.gang import build as gang_build
from ptxport.codegen.targets.cpu.gang import params
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[i] = (i + hi(pair) + lo(pair)) * scale for i < n (i = ctaid.x * ntid.x + tid.x),
# through shared memory and a barrier; lo(pair) is read after the barrier.
KERNEL = HEADER + """.visible .entry k(.param .u64 out, .param .u32 n, .param .f32 scale,
                                     .param .u64 pair)
{
.reg .pred %p<3>; .reg .b32 %r<14>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
.shared .align 4 .b8 buf[1024];
ld.param.u64 %rd1, [out]; ld.param.u32 %r10, [n]; ld.param.f32 %f1, [scale];
ld.param.u32 %r11, [pair+4];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mad.lo.s32 %r4, %r2, %r3, %r1;
shl.b32 %r5, %r1, 2;
mov.u32 %r6, buf;
add.s32 %r7, %r6, %r5;
st.shared.u32 [%r7], %r4;
setp.ge.u32 %p1, %r4, %r10;
bar.sync 0;
@%p1 ret;
ld.shared.u32 %r8, [%r7];
LOW
add.s32 %r8, %r8, %r11;
add.s32 %r8, %r8, %r9;
cvt.rn.f32.u32 %f2, %r8;
mul.f32 %f3, %f2, %f1;
mul.wide.u32 %rd2, %r4, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.f32 [%rd3], %f3;
ret;
}
"""
DIRECT = KERNEL.replace("LOW", "ld.param.u32 %r9, [pair];")
# a parameter's address taken (unused here): the copy is not used
ADDRESS = KERNEL.replace("LOW", "mov.u64 %rd5, pair;\nld.param.u32 %r9, [pair];")


def _seen(ptx: str, monkeypatch) -> dict:
    """What build_gang makes of the kernel's parameters: the registers that read the copy,
    the parameter bytes copied, whether the gang function reads the buffer's address."""
    seen: dict = {}
    found = params.param_registers

    def spy(fl, kernel):
        registers = found(fl, kernel)
        names = {id(r): r.name for r in kernel.registers.values()}
        seen["registers"] = sorted(names[k] for k in registers)
        return registers

    built = gang_build.build_run_blocks

    def run_blocks(*args, **kwargs):
        seen["buffer"] = (0, "ptr") in args[5]
        seen["copied"] = sorted(offset for offset, _ in args[7])
        return built(*args, **kwargs)

    monkeypatch.setattr(params, "param_registers", spy)
    monkeypatch.setattr(gang_build, "build_run_blocks", run_blocks)
    build_gang(build(parse(ptx)), "k", (64, 1, 1), CpuOptions())
    return seen


def test_direct_loads_read_the_copy(monkeypatch):
    assert _seen(DIRECT, monkeypatch) == {
        "registers": ["%f1", "%r10", "%r11", "%r9", "%rd1"], "buffer": False,
        "copied": [0, 8, 12, 16, 20]}


def test_a_parameter_address_taken_reads_the_buffer(monkeypatch):
    assert _seen(ADDRESS, monkeypatch) == {"registers": [], "buffer": True, "copied": []}


@pytest.mark.parametrize("ptx", [DIRECT, ADDRESS], ids=["direct", "address"])
@pytest.mark.parametrize("block,n", [(64, 192), (96, 250), (80, 200), (48, 100)])
def test_parameters_before_and_after_a_barrier(ptx, block, n, cpu_options):
    grid = 3
    scale, hi, lo = np.float32(0.5), 7, 1000
    pair = np.uint64(hi << 32 | lo)
    i = np.arange(grid * block)
    want = np.where(i < n, (i + hi + lo) * scale, -1).astype(np.float32)
    for gang in (True, False):
        cpu_options(gang=gang)
        out = np.full(grid * block, -1, np.float32)
        binary = launch_on_cpu(ptx, LaunchConfig(grid=grid, block=block), out, np.uint32(n),
                               scale, pair)
        if gang:
            assert binary.gang_refusal is None
        assert (out == want).all()
