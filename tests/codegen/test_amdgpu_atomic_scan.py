"""A work-around of LLVM 22's AMDGPU backend (amdgpu._choose_atomic_scan): with the atomic
optimizer's default strategy, a 64-bit atomic whose value differs per lane, followed by a
trap, aborted the process on gfx11 ("Cannot print this instruction"; cooperative_launch.cu's
grid_sum, whose cooperative-groups check traps)."""

from __future__ import annotations

import pytest

from ptxport.codegen.targets import amdgpu
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed to compile the CUDA C++ kernel")

TRAP_AFTER_WIDE_ATOMIC = r"""
extern "C" __global__ void k(unsigned long long *sum, const int *x) {
    atomicAdd(sum, (unsigned long long)x[threadIdx.x]);
    __trap();
}
"""


@needs_nvrtc
@pytest.mark.parametrize("chip", list(amdgpu.CHIPS))
def test_a_64_bit_atomic_before_a_trap_compiles(chip):
    module = build(parse(nvrtc.compile_to_ptx(TRAP_AFTER_WIDE_ATOMIC, "wide.cu"), "w.ptx"))
    verify(module)
    assert amdgpu.compile_object(module, chip)[:4] == b"\x7fELF"
