"""Device code that issue 16 found the GPU targets crashing on or refusing: cp.async into
shared memory (the CUDA samples' tensor-core GEMMs), the reserved shared memory and
environment special registers, and calls through a register. Code generation is checked for
amdgpu and spirv (and ptxas for nvptx); kernels run on opencl:0 where a device is present."""

from __future__ import annotations

import numpy as np
import pytest
from test_memory_ops import CP_ASYNC_BODY, expected_cp_async

from cpu_harness import kernel_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import amdgpu, spirv
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
needs_opencl = pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")


def _module(ptx: str):
    module = build(parse(ptx, "t.ptx"))
    verify(module)
    return module


def _run_opencl(ptx: str, block: int, arrays: list[np.ndarray]) -> None:
    """Run k(arrays...) on opencl:0 in one block of `block` threads; arrays are copied in and
    back."""
    device = Device("opencl:0")
    stream = device.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    buffers = [device.allocate(a.nbytes, stream=stream) for a in arrays]
    for buffer, a in zip(buffers, arrays, strict=True):
        buffer.copy_from(a, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=block), kernel, *buffers)
    for buffer, a in zip(buffers, arrays, strict=True):
        buffer.copy_to(a, stream=stream)
    stream.sync()
    for buffer in buffers:
        buffer.close()


# --- cp.async between address spaces ------------------------------------------------------------

CP_ASYNC = kernel_ptx(CP_ASYNC_BODY, ".param .u64 src, .param .u64 dst", target="sm_80",
                      version="8.0")


@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"])
def test_cp_async_compiles_for_amdgpu(chip):
    """The copy is from .global's address space into .shared's (llvm.memcpy overloaded on
    both), not a generic-pointer memcpy handed an LDS pointer."""
    text = amdgpu.compile_llvm_ir(_module(CP_ASYNC), chip)
    assert "llvm.memcpy.p3.p1.i64" in text


def test_cp_async_compiles_for_spirv():
    assert spirv.compile_module(_module(CP_ASYNC))


@needs_opencl
def test_cp_async_on_opencl():
    src = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16) + np.uint8(1)
    dst = np.zeros((64, 16), np.uint8)
    _run_opencl(CP_ASYNC, 64, [src, dst])
    assert (dst == expected_cp_async(src)).all()
