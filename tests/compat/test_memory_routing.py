"""Where the driver shim's allocations and module variables go, in-process on the cpu
device: pinned and managed memory through the backend's allocate_host / allocate_managed
(the real driver's on cuda:N), module variables in the allocation table as device memory
(so that a copy to one is a copy to the device, never the host's memmove)."""

from __future__ import annotations

import ctypes

import pytest

from ptxport.compat import execution, memory
from ptxport.compat.state import CudaError, state
from ptxport.runtime import Device

PTX = b"""
.version 7.8
.target sm_80
.address_size 64

.visible .global .align 4 .u32 counter = 42;
.visible .global .attribute(.managed) .align 4 .b8 weights[16];

.visible .entry bump()
{
	.reg .b32 %r<3>;
	ld.global.u32 %r1, [counter];
	add.s32 %r2, %r1, 1;
	st.global.u32 [counter], %r2;
	ld.global.u32 %r1, [weights];
	st.global.u32 [weights], %r1;
	ret;
}
"""


@pytest.fixture
def device(monkeypatch):
    device = Device("cpu")
    monkeypatch.setattr(state, "_devices", [device])
    return device


def _recording(monkeypatch, backend, name, calls):
    hook = getattr(backend, name)

    def record(*args):
        calls.append((name, args))
        return hook(*args)
    monkeypatch.setattr(backend, name, record)


def test_pinned_and_managed_memory_come_from_the_backends_own_hooks(device, monkeypatch):
    calls: list = []
    for name in ("allocate", "allocate_host", "allocate_managed"):
        _recording(monkeypatch, device._backend, name, calls)
    pinned, managed, plain = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_uint64()
    assert memory.cuMemHostAlloc(ctypes.addressof(pinned), 64, 0x3) == 0
    assert memory.cuMemAllocManaged(ctypes.addressof(managed), 32, 1) == 0
    assert memory.cuMemAlloc_v2(ctypes.addressof(plain), 16) == 0
    try:
        # (the cpu backend's default hooks allocate device memory, itself host memory)
        assert [c for c in calls if c[0] != "allocate"] == [
            ("allocate_host", (0, 64, 0x3)), ("allocate_managed", (0, 32))]
        assert calls[-1] == ("allocate", (0, 16))
        values = memory._pointer_values(managed.value)
        assert values[8][1] == 1 and values[4][1] == managed.value   # managed, host pointer
        assert memory._pointer_values(pinned.value)[2][1] == 1        # CU_MEMORYTYPE_HOST
        ctypes.memset(pinned.value, 5, 64)                            # the host writes it
    finally:
        memory.cuMemFreeHost(pinned.value)
        memory.cuMemFree_v2(managed.value)
        memory.cuMemFree_v2(plain.value)


def test_module_variables_are_device_memory_in_the_allocation_table(device):
    image = ctypes.create_string_buffer(PTX)
    handle = ctypes.c_void_p()
    assert execution.cuModuleLoadData(ctypes.addressof(handle), ctypes.addressof(image)) == 0
    module = handle.value
    try:
        address, size = ctypes.c_uint64(), ctypes.c_size_t()
        name = ctypes.create_string_buffer(b"counter")
        assert execution.cuModuleGetGlobal_v2(ctypes.addressof(address), ctypes.addressof(size),
                                              module, ctypes.addressof(name)) == 0
        assert size.value == 4
        entry = state.allocation_at(address.value)
        assert isinstance(entry, memory.ModuleVariable)
        host = ctypes.c_uint32(7)
        assert memory.copy_kind(address.value, ctypes.addressof(host)) == "htod"
        assert memory.cuMemcpy(address.value, ctypes.addressof(host), 4) == 0
        back = ctypes.c_uint32()
        assert memory.cuMemcpy(ctypes.addressof(back), address.value, 4) == 0
        assert back.value == 7
        with pytest.raises(CudaError) as refused:
            memory.cuMemFree_v2(address.value)
        assert refused.value.code == 1
        managed = ctypes.c_uint64()
        weights = ctypes.create_string_buffer(b"weights")
        assert execution.cuLibraryGetManaged(ctypes.addressof(managed), 0, module,
                                             ctypes.addressof(weights)) == 0
        assert memory._pointer_values(managed.value)[8][1] == 1       # IS_MANAGED
    finally:
        execution.cuModuleUnload(module)
        for start, entry in list(state.allocations.items()):
            if isinstance(entry, memory.ModuleVariable):
                state.remove_allocation(start)
