"""The cuda backend's memory kinds, module variables and probe, against a stand-in for
cuda-bindings' `driver` (no GPU needed): which driver call each hook makes, and what it
answers. The real driver's behaviour is checked by the corpus under `ptxport run --device
cuda:0` (benchmarks/programs_ptxport_gpu.py) on a GPU machine."""

from __future__ import annotations

import ctypes
import enum
import sys
import types

import numpy as np
import pytest

from ptxport.errors import BackendUnavailableError, InvalidValueError, UnsupportedFeatureError
from ptxport.runtime import Program
from ptxport.runtime.backends import cuda, real_driver

MODULE_PTX = """
.version 7.8
.target sm_80
.address_size 64

.visible .global .align 4 .u32 counter = 42;
.visible .global .attribute(.managed) .align 4 .b8 weights[32];

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

.visible .entry other()
{
	.reg .b32 %r<2>;
	ld.global.u32 %r1, [counter];
	st.global.u32 [counter+0], %r1;
	ret;
}
"""


class _Code(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712


class FakeDriver:
    """Enough of cuda.bindings.driver for the hooks: memory is host memory (ctypes buffers),
    and every call is recorded as (name, args)."""

    CU_STREAM_PER_THREAD = 2
    CUlimit = types.SimpleNamespace(CU_LIMIT_MALLOC_HEAP_SIZE=2)

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self.memory: dict[int, ctypes.Array] = {}
        self.globals = {b"counter": (0x7000_0000, 4), b"weights": (0x7000_1000, 32)}
        self.refuse: dict[str, _Code] = {}   # call name -> the error it answers

    def __getattr__(self, name: str):
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name, args))
            return self._answer(name, args)
        return call

    def CUstream(self, value):   # cuda-bindings' name
        return ("stream", value)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def _block(self, nbytes: int) -> int:
        block = ctypes.create_string_buffer(nbytes)
        self.memory[ctypes.addressof(block)] = block
        return ctypes.addressof(block)

    def _answer(self, name: str, args: tuple):
        ok = _Code.CUDA_SUCCESS
        if name in self.refuse:
            return self.refuse[name], None
        if name in ("cuMemAlloc", "cuMemAllocManaged"):
            return ok, self._block(args[0])
        if name == "cuMemHostAlloc":
            return ok, self._block(args[0])
        if name == "cuMemHostGetDevicePointer":
            return ok, args[0]
        if name == "cuDeviceGet":
            return ok, args[0]
        if name == "cuDevicePrimaryCtxRetain":
            return ok, "context"
        if name == "cuModuleLoadData":
            return ok, f"module{sum(n == name for n in self.names())}"
        if name == "cuModuleGetGlobal":
            found = self.globals.get(args[1])
            return (ok, *found) if found else (_Code.CUDA_ERROR_NOT_FOUND, 0, 0)
        if name == "cuModuleGetFunction":
            return ok, ("function", args[1])
        if name == "cuDeviceGetCount":
            return ok, 1
        if name == "cuMemcpyAsync":
            ctypes.memmove(args[0], args[1], args[2])
        return (ok,)


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "cached_cubin", lambda ptx, arch: None)
    backend = cuda.Backend()
    monkeypatch.setattr(backend, "arch", lambda ordinal: "sm_90")
    return driver, backend


def test_pinned_memory_is_the_drivers_and_host_addressable(fake):
    driver, backend = fake
    allocation = backend.allocate_host(0, 64, 0x3)
    assert driver.calls[-1] == ("cuMemHostAlloc", (64, 0x3))
    view = backend.host_view(allocation)
    view[:] = 7                                   # the host writes it at its address
    assert ctypes.string_at(allocation.address, 64) == bytes([7]) * 64
    backend.free(allocation)
    assert driver.calls[-1] == ("cuMemFreeHost", (allocation.address,))


def test_managed_memory_is_the_drivers_attached_globally(fake):
    driver, backend = fake
    allocation = backend.allocate_managed(0, 128)
    assert driver.calls[-1] == ("cuMemAllocManaged", (128, 1))   # CU_MEM_ATTACH_GLOBAL
    assert backend.host_view(allocation).nbytes == 128
    backend.free(allocation)
    assert driver.calls[-1] == ("cuMemFree", (allocation.address,))


def test_device_memory_has_no_host_view(fake):
    driver, backend = fake
    allocation = backend.allocate(0, 16)
    assert driver.calls[-1] == ("cuMemAlloc", (16,))
    assert backend.host_view(allocation) is None


def test_registered_host_memory_is_mapped_in_place(fake):
    driver, backend = fake
    memory = np.arange(32, dtype=np.uint8)
    allocation = backend.register_host_memory(0, memory)
    assert allocation.address == memory.ctypes.data
    assert ("cuMemHostRegister", (memory.ctypes.data, 32, 0x3)) in driver.calls
    assert backend.host_view(allocation) is memory
    backend.free(allocation)
    assert driver.calls[-1] == ("cuMemHostUnregister", (memory.ctypes.data,))


def test_a_refused_registration_is_the_callers_error_not_a_kernel_failure(fake):
    driver, backend = fake
    driver.refuse["cuMemHostRegister"] = _Code.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    with pytest.raises(InvalidValueError, match="cannot register 32 bytes"):
        backend.register_host_memory(0, np.zeros(32, np.uint8))


def test_copies_touching_host_addressable_memory_let_the_driver_tell_the_direction(fake):
    driver, backend = fake
    pinned, device = backend.allocate_host(0, 8), backend.allocate(0, 8)
    source = np.arange(8, dtype=np.uint8)
    backend.copy(pinned.address, source.ctypes.data, 8, "htod")
    assert "cuMemcpyAsync" in driver.names()
    assert bytes(backend.host_view(pinned)) == bytes(range(8))
    backend.copy(device.address, source.ctypes.data, 8, "htod")
    assert driver.names()[-2] == "cuMemcpyHtoDAsync"       # device memory: as before


def test_fills_of_pinned_memory_are_the_hosts_and_of_device_memory_the_drivers(fake):
    driver, backend = fake
    pinned, device = backend.allocate_host(0, 16), backend.allocate(0, 16)
    backend.fill(pinned.address, 16, 0xABCD, 2)
    assert bytes(backend.host_view(pinned)) == bytes([0xCD, 0xAB]) * 8
    assert "cuMemsetD16Async" not in driver.names()
    backend.fill(device.address, 16, 0xABCD, 2)
    assert driver.names()[-2] == "cuMemsetD16Async"


def test_heap_size_is_the_drivers_limit(fake):
    driver, backend = fake
    backend.set_heap_size(64 << 20)
    assert driver.calls[-1] == ("cuCtxSetLimit", (2, 64 << 20))


def test_module_variables_come_from_one_module_shared_by_its_kernels(fake):
    driver, backend = fake
    backend.ptx_source = "native"
    code = Program(MODULE_PTX, "ptx").compile()
    module = code.module
    assert backend.module_global(0, module, "counter") == (0x7000_0000, 4)
    assert backend.module_global(0, module, "weights") == (0x7000_1000, 32)
    backend.compile(module, ["bump"])
    backend.compile(module, ["other"])
    assert driver.names().count("cuModuleLoadData") == 1
    looked_up = {args[0] for name, args in driver.calls if name == "cuModuleGetGlobal"}
    functions = {args[0] for name, args in driver.calls if name == "cuModuleGetFunction"}
    assert looked_up == functions == {"module1"}
    # the variables are device memory the backend's copies and fills know
    assert backend._find(0x7000_0002) == (0, cuda.MODULE)
    assert backend._find(0x7000_1000) == (0, cuda.MANAGED)
    with pytest.raises(UnsupportedFeatureError, match="does not define it"):
        driver.globals.pop(b"counter")
        backend.module_global(0, module, "counter")


def test_managed_variables_keep_their_attribute_in_ptxports_ptx():
    module = Program(MODULE_PTX, "ptx").compile().module
    emitted = (".visible .global .align 8 .u64 pointer = weights;\n"
               ".visible .global .align 4 .u32 counter = 42;\n"
               ".visible .global .align 4 .b8 weights[32];\n"
               ".visible .global .align 4 .b8 weights_other[32];\n")
    marked = cuda.mark_managed(emitted, module)
    assert marked.splitlines() == [
        ".visible .global .align 8 .u64 pointer = weights;",
        ".visible .global .align 4 .u32 counter = 42;",
        ".visible .global .attribute(.managed) .align 4 .b8 weights[32];",
        ".visible .global .align 4 .b8 weights_other[32];"]
    assert cuda.mark_managed(marked, module) == marked


def test_probe_tells_missing_bindings_from_broken_ones(monkeypatch):
    def missing():
        raise ModuleNotFoundError("No module named 'cuda'", name="cuda")

    def broken():
        raise ImportError("libcudart.so: cannot open shared object file")

    monkeypatch.setattr(cuda, "_driver", missing)
    assert cuda._probe() == (False, "cuda-bindings is not installed (pip install "
                                    "'ptxport[cuda]')")
    monkeypatch.setattr(cuda, "_driver", broken)
    ok, why = cuda._probe()
    assert not ok and "cannot be imported" in why and "not installed" not in why


def test_old_bindings_inside_the_shim_say_what_to_install(monkeypatch, tmp_path):
    """cuda-bindings < 13.4.1 has no cuda.bindings._internal.driver (it dlopens libcuda.so.1
    by name, ptxport's own inside the shim): a clear error, not "not installed"."""
    try:
        import cuda.bindings._internal as internal
    except ImportError:
        pytest.skip("needs cuda-bindings (pip install 'ptxport[cuda]')")
    monkeypatch.setenv(real_driver.SHIM_DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.delattr(internal, "driver", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings._internal.driver", None)
    with pytest.raises(BackendUnavailableError, match=r"cuda-bindings >= 13\.4\.1"):
        real_driver.redirect_cuda_bindings()
    old = types.SimpleNamespace()   # a loader module without cuda-pathfinder's function
    monkeypatch.setitem(sys.modules, "cuda.bindings._internal.driver", old)
    monkeypatch.setattr(internal, "driver", old, raising=False)
    with pytest.raises(BackendUnavailableError, match="dlopens libcuda.so.1 by name"):
        real_driver.redirect_cuda_bindings()


def test_ptxport_run_refuses_old_bindings_before_the_program_starts(monkeypatch):
    try:
        import cuda.bindings._internal as internal
    except ImportError:
        pytest.skip("needs cuda-bindings (pip install 'ptxport[cuda]')")
    from ptxport.compat import cli
    from ptxport.runtime import backends

    monkeypatch.setattr(backends, "availability", lambda name: (True, ""))
    cli._check_device("cuda:0")     # this venv's cuda-bindings has the loader
    old = types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "cuda.bindings._internal.driver", old)
    monkeypatch.setattr(internal, "driver", old, raising=False)
    with pytest.raises(BackendUnavailableError, match=r"--device cuda:0: .*>= 13\.4\.1"):
        cli._check_device("cuda:0")
    cli._check_device("cpu")
