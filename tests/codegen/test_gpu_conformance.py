"""Device code that issue 16 found the GPU targets crashing on or refusing: cp.async into
shared memory (the CUDA samples' tensor-core GEMMs), the reserved shared memory and
environment special registers, and calls through a register. Code generation is checked for
amdgpu and spirv (and ptxas for nvptx); kernels run on opencl:0 where a device is present."""

from __future__ import annotations

import numpy as np
import pytest
from test_memory_ops import CP_ASYNC_BODY, expected_cp_async

from corpus import ptxas_errors, ptxas_path
from cpu_harness import kernel_ptx, run_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import amdgpu, nvptx, spirv
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


# --- %envreg and %reserved_smem_* ---------------------------------------------------------------

DRIVER_REGISTERS = ["%reserved_smem_offset_begin", "%reserved_smem_offset_end",
                    "%reserved_smem_offset_cap", "%reserved_smem_offset_0",
                    "%reserved_smem_offset_1", "%envreg0", "%envreg17", "%envreg31"]


def _driver_registers_ptx() -> str:
    """k(out): out[i] = the i-th of DRIVER_REGISTERS, and out[len] their OR."""
    body = [".reg .b32 %r<4>; .reg .b64 %rd<2>;",
            "ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;", "mov.b32 %r2, 0;"]
    for i, name in enumerate(DRIVER_REGISTERS):
        body += [f"mov.b32 %r1, {name};", f"st.global.u32 [%rd1+{4 * i}], %r1;",
                 "or.b32 %r2, %r2, %r1;"]
    body += [f"st.global.u32 [%rd1+{4 * len(DRIVER_REGISTERS)}], %r2;", "ret;"]
    return kernel_ptx("\n".join(body), ".param .u64 out", target="sm_80", version="7.6")


def test_driver_registers_read_zero_on_the_cpu():
    """No driver sets an environment register, and no shared memory is reserved: an empty
    region at offset 0 (PTX ISA 10.24, 10.26-10.29)."""
    out = np.full(len(DRIVER_REGISTERS) + 1, 0xDEAD, np.uint32)
    run_ptx(_driver_registers_ptx(), "k", 1, 1, [out])
    assert out.tolist() == [0] * len(out)


@needs_opencl
def test_driver_registers_read_zero_on_opencl():
    out = np.full(len(DRIVER_REGISTERS) + 1, 0xDEAD, np.uint32)
    _run_opencl(_driver_registers_ptx(), 1, [out])
    assert out.tolist() == [0] * len(out)


def test_driver_registers_read_zero_on_amdgpu():
    _, optimized = amdgpu._optimized(_module(_driver_registers_ptx()), "gfx942")
    stores = [line for line in str(optimized).splitlines() if "store " in line]
    assert stores and all(line.strip().startswith("store i32 0,") for line in stores), stores


def test_nvptx_reads_the_drivers_registers():
    """On NVIDIA the driver's values are the truth: the registers pass through to ptxas."""
    ptx = nvptx.compile_module(_module(_driver_registers_ptx()))
    for name in DRIVER_REGISTERS:
        assert f"{name};" in ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_80") == ""
