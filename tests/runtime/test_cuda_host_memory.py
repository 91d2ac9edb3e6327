"""Memory the host and an NVIDIA GPU's kernels share, and module variables, on cuda:0 (what
`ptxport run --device cuda:0` gives cudaMallocHost, cudaMallocManaged, cudaHostRegister and
cudaMemcpyToSymbol): the real driver's pinned, managed and registered memory, and a module's
variables through cuModuleGetGlobal, one copy for all the module's kernels. Skipped, with
the backend's reason, where there is no NVIDIA GPU (tests/runtime/test_cuda_fake_driver.py
checks the driver calls everywhere)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime import Buffer, backends

AVAILABLE, WHY_NOT = backends.availability("cuda")

PTX = """
.version 7.8
.target sm_80
.address_size 64

.visible .global .align 4 .u32 counter = 42;
.visible .global .attribute(.managed) .align 4 .u32 total;

.visible .entry bump()
{
	.reg .b32 %r<4>;
	ld.global.u32 %r1, [counter];
	add.s32 %r2, %r1, 1;
	st.global.u32 [counter], %r2;
	atom.global.add.u32 %r3, [total], 1;
	ret;
}

.visible .entry twice()
{
	.reg .b32 %r<3>;
	ld.global.u32 %r1, [counter];
	shl.b32 %r2, %r1, 1;
	st.global.u32 [counter], %r2;
	ret;
}

.visible .entry store(.param .u64 store_param_0)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [store_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, 5;
	st.global.u32 [%rd2], %r1;
	ret;
}
"""


@pytest.fixture(params=["native", "ptxport"])
def code(request, monkeypatch):
    if not AVAILABLE:
        pytest.skip(f"no NVIDIA GPU: {WHY_NOT}")
    monkeypatch.setattr(backends.get("cuda"), "ptx_source", request.param)
    return Program(PTX, code_type="ptx").compile("native")


def _run(stream, code, name, *args):
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel(name), *args)
    stream.sync()


def _read_u32(backend, address: int) -> int:
    out = np.zeros(1, np.uint32)
    backend.copy(out.ctypes.data, address, 4, "dtoh")
    return int(out[0])


def test_module_variables_are_one_copy_for_all_kernels(code):
    dev = Device("cuda:0")
    stream = dev.create_stream()
    address, size = code.get_global("counter", dev)
    assert size == 4 and _read_u32(dev._backend, address) == 42     # the PTX's initializer
    _run(stream, code, "bump")
    _run(stream, code, "twice")
    assert _read_u32(dev._backend, address) == 86
    assert code.get_global("counter", dev) == (address, size)


def test_managed_variables_are_host_addressable(code):
    dev = Device("cuda:0")
    stream = dev.create_stream()
    address, _ = code.get_global("total", dev)
    cell = ctypes.c_uint32.from_address(address)   # the host reads and writes it in place
    cell.value = 10
    _run(stream, code, "bump")
    assert cell.value == 11


@pytest.mark.parametrize("kind", ["host", "managed", "registered"])
def test_kernels_write_memory_the_host_reads_in_place(code, kind):
    dev = Device("cuda:0")
    backend, stream = dev._backend, dev.create_stream()
    keep = np.zeros(64, np.uint8)
    if kind == "host":
        buffer = Buffer(dev, backend.allocate_host(0, 64, 0x1 | 0x2), stream)
    elif kind == "managed":
        buffer = Buffer(dev, backend.allocate_managed(0, 64), stream)
    else:
        buffer = Buffer.from_dlpack(keep, device=dev)
    view = buffer.view(np.uint32)
    view[:] = 1
    _run(stream, code, "store", np.uint64(buffer.handle + 8))
    assert view.tolist() == [1, 1, 5] + [1] * 13
    buffer.fill(7, 1, stream=stream)
    stream.sync()
    assert set(buffer.view(np.uint8).tolist()) == {7}
    buffer.close()
    stream.sync()
