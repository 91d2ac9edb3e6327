"""The hip backend: AMD GPUs through HIP's module API (hip-python's `hip.hip`).

Kernels are ptxport's AMDGPU code objects (ptxport.codegen.targets.amdgpu) for the device's
chip (the first field of hipDeviceProp_t.gcnArchName, e.g. "gfx90a" of
"gfx90a:sramecc+:xnack-"), loaded with hipModuleLoadData and launched with
hipModuleLaunchKernel and the packed parameter buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER/SIZE):
the code objects keep the PTX parameter layout, so the runtime's buffer fits as it is. CUDA's
warp is 32 lanes on every AMD GPU (the AMDGPU target makes it so), and `warp_size` says 32.

Kernels that call malloc or free (CUDA's device heap, codegen/targets/spirv_heap.py) find the
heap's address in their code object's global spirv_heap.HEAP_SYMBOL, which `compile` sets
after loading it; the heap is allocated once per device, `set_heap_size` bytes. printf's
records (codegen/targets/amdgpu_printf.py) go to a buffer per device, whose address is set the
same way, and are printed after each launch (hip_printf.py).

Every hook runs synchronously on the device's null stream, as the hook interface asks (the
runtime's streams order the work).

Only `availability` has run so far (no AMD GPU is reachable where ptxport is developed): it
says why the backend cannot run (hip-python not installed, no ROCm, no GPU, a chip the AMDGPU
target does not know). The hooks after it follow HIP's C API as hip-python exposes it and
wait for a machine with ROCm to be tested (docs/amdgpu-target.md).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from functools import cache

from ptxport.errors import (
    BackendUnavailableError,
    LaunchError,
    OutOfMemoryError,
    PtxportError,
)
from ptxport.ir.nodes import Module
from ptxport.runtime.backends import Allocation, BackendBase, DeviceProperties, hip_printf

__all__ = ["Backend", "HipKernelBinary"]

_INSTALL_HINT = "pip install hip-python; it needs ROCm's libamdhip64"
_DEFAULT_HEAP_SIZE = 8 << 20   # cudaLimitMallocHeapSize's default (spirv_heap.DEFAULT_SIZE)
# hipModuleLaunchKernel's `extra` markers (hip_runtime_api.h), the same values as CUDA's.
_BUFFER_POINTER, _BUFFER_SIZE, _END = 1, 2, 3
# DeviceProperties field -> hipDeviceAttribute_t name (after "hipDeviceAttribute").
_ATTRIBUTES = {
    "multiprocessor_count": "MultiprocessorCount",
    "max_threads_per_block": "MaxThreadsPerBlock",
    "max_block_dim_x": "MaxBlockDimX", "max_block_dim_y": "MaxBlockDimY",
    "max_block_dim_z": "MaxBlockDimZ",
    "max_grid_dim_x": "MaxGridDimX", "max_grid_dim_y": "MaxGridDimY",
    "max_grid_dim_z": "MaxGridDimZ",
    "max_shared_memory_per_block": "MaxSharedMemoryPerBlock",
    "max_shared_memory_per_block_optin": "SharedMemPerBlockOptin",
    "max_shared_memory_per_multiprocessor": "MaxSharedMemoryPerMultiprocessor",
    "max_threads_per_multiprocessor": "MaxThreadsPerMultiProcessor",
    "total_constant_memory": "TotalConstantMemory",
    "clock_rate": "ClockRate",
    "compute_capability_major": "ComputeCapabilityMajor",
    "compute_capability_minor": "ComputeCapabilityMinor",
    "integrated": "Integrated",
    "unified_addressing": "UnifiedAddressing",
}


def _hip():
    from hip import hip

    return hip


def _check(result, doing: str):
    """The value of a hip-python call (a tuple whose first item is the hipError_t), or a
    ptxport error saying what failed."""
    error, *values = result if isinstance(result, tuple) else (result,)
    if int(error) != 0:
        name = getattr(error, "name", str(error))
        if name == "hipErrorOutOfMemory":
            raise OutOfMemoryError(f"{doing}: out of device memory")
        raise PtxportError(f"{doing}: {name}")
    return values[0] if len(values) == 1 else values


def _probe() -> tuple[bool, str]:
    """(True, "") when HIP and an AMD GPU ptxport compiles for are present, else why not."""
    try:
        hip = _hip()
    except ImportError:
        return False, f"hip-python is not installed ({_INSTALL_HINT})"
    except OSError as e:  # hip-python present, ROCm's runtime library absent
        return False, f"ROCm's HIP runtime could not be loaded ({e})"
    error, count = hip.hipGetDeviceCount()
    if int(error) != 0 or count == 0:
        return False, "HIP finds no AMD GPU"
    from ptxport.codegen.targets.amdgpu import CHIPS

    chips = [_chip(i) for i in range(count)]
    if not any(c in CHIPS for c in chips):
        return False, (f"the AMD GPUs here ({', '.join(chips)}) are none of the chips ptxport "
                       f"compiles for ({', '.join(CHIPS)})")
    return True, ""


@cache
def _chip(ordinal: int) -> str:
    hip = _hip()
    props = hip.hipDeviceProp_t()
    _check(hip.hipGetDeviceProperties(props, ordinal), f"hipGetDeviceProperties({ordinal})")
    name = props.gcnArchName
    name = name.decode() if isinstance(name, bytes) else str(name)
    return name.split("\0", 1)[0].split(":", 1)[0]


@cache
def _properties(ordinal: int) -> DeviceProperties:
    hip = _hip()
    values = {}
    for field, attribute in _ATTRIBUTES.items():
        value = _check(hip.hipDeviceGetAttribute(
            getattr(hip.hipDeviceAttribute_t, f"hipDeviceAttribute{attribute}"), ordinal),
            f"hipDeviceGetAttribute({attribute})")
        values[field] = bool(value) if field in ("integrated", "unified_addressing") \
            else int(value)
    props = hip.hipDeviceProp_t()
    _check(hip.hipGetDeviceProperties(props, ordinal), f"hipGetDeviceProperties({ordinal})")
    name = props.name.decode() if isinstance(props.name, bytes) else str(props.name)
    return DeviceProperties(name=f"{name.split(chr(0), 1)[0]} ({_chip(ordinal)})",
                            warp_size=32, total_global_memory=int(props.totalGlobalMem),
                            **values)


class HipKernelBinary:
    """One kernel, loaded on every device whose chip ptxport compiles for."""

    def __init__(self, name: str, functions: dict[int, object],
                 drain: Callable[[int], None] | None = None) -> None:
        self.name, self.functions, self.drain = name, functions, drain
        self.ordinal = min(functions, default=0)

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int],
               dynamic_shared: int, params: bytes) -> None:
        self.launch_on(self.ordinal, grid, block, dynamic_shared, params)

    def launch_on(self, ordinal: int, grid: tuple[int, int, int],
                  block: tuple[int, int, int], dynamic_shared: int, params: bytes) -> None:
        hip = _hip()
        _check(hip.hipSetDevice(ordinal), f"hipSetDevice({ordinal})")
        function = self.functions.get(ordinal)
        if function is None:
            raise LaunchError(f"{self.name} is not compiled for hip:{ordinal} (its chip is "
                              "none the AMDGPU target knows)")
        buffer = ctypes.create_string_buffer(params, max(len(params), 1))
        size = ctypes.c_size_t(len(params))
        extra = (ctypes.c_void_p * 5)(_BUFFER_POINTER, ctypes.addressof(buffer), _BUFFER_SIZE,
                                      ctypes.addressof(size), _END)
        doing = (f"cannot launch {self.name} on hip:{ordinal} with grid={grid}, "
                 f"block={block}, dynamic shared memory {dynamic_shared} bytes")
        try:
            _check(hip.hipModuleLaunchKernel(function, *grid, *block, dynamic_shared,
                                             None, None, ctypes.addressof(extra)), doing)
        except PtxportError as e:
            raise LaunchError(str(e)) from None
        _check(hip.hipDeviceSynchronize(), f"kernel {self.name} failed on hip:{ordinal}")
        if self.drain is not None:   # device-side printf's records (hip_printf.py)
            self.drain(ordinal)


class Backend(BackendBase):
    name = "hip"
    dlpack_device_type = 10  # kDLROCM

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._availability: tuple[bool, str] | None = None
        self._owners: dict[int, int] = {}  # address -> ordinal of every live allocation
        self._modules: list = []           # loaded modules stay loaded while the backend is
        self._heaps: dict[int, Allocation] = {}   # each device's heap (device-side malloc)
        self._printf_buffers: dict[int, Allocation] = {}   # each device's printf buffer
        self._heap_size = _DEFAULT_HEAP_SIZE

    def availability(self) -> tuple[bool, str]:
        with self._lock:
            if self._availability is None:
                self._availability = _probe()
            return self._availability

    def _ready(self) -> None:
        ok, why = self.availability()
        if not ok:
            raise BackendUnavailableError(f"the hip backend cannot run here: {why}")

    def device_count(self) -> int:
        self._ready()
        return int(_check(_hip().hipGetDeviceCount(), "hipGetDeviceCount"))

    def properties(self, ordinal: int) -> DeviceProperties:
        return _properties(ordinal)

    def _use(self, ordinal: int):
        hip = _hip()
        _check(hip.hipSetDevice(ordinal), f"hipSetDevice({ordinal})")
        return hip

    def _ordinal_of(self, address: int) -> int:
        """The device of the allocation that starts last at or below `address`."""
        with self._lock:
            start = max((s for s in self._owners if s <= address), default=None)
            return 0 if start is None else self._owners[start]

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        pointer = _check(self._use(ordinal).hipMalloc(max(nbytes, 1)),
                         f"hip:{ordinal} could not allocate {nbytes} bytes")
        address = int(pointer)
        with self._lock:
            self._owners[address] = ordinal
        return Allocation(address, nbytes, pointer)

    def free(self, allocation: Allocation) -> None:
        with self._lock:
            ordinal = self._owners.pop(allocation.address, 0)
        _check(self._use(ordinal).hipFree(allocation.owner), f"hipFree on hip:{ordinal}")

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        if not nbytes:
            return
        ordinal = self._ordinal_of(src if kind == "dtoh" else dst)
        hip = self._use(ordinal)
        direction = {"htod": "HostToDevice", "dtoh": "DeviceToHost",
                     "dtod": "DeviceToDevice"}[kind]
        _check(hip.hipMemcpy(dst, src, nbytes, getattr(hip.hipMemcpyKind,
                                                       f"hipMemcpy{direction}")),
               f"cannot copy {nbytes} bytes ({kind}) on hip:{ordinal}")

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        if not nbytes:
            return
        ordinal = self._ordinal_of(address)
        hip = self._use(ordinal)
        memset = {1: hip.hipMemsetD8, 2: hip.hipMemsetD16, 4: hip.hipMemsetD32}[width]
        _check(memset(address, value, nbytes // width), f"cannot fill {nbytes} bytes on "
                                                        f"hip:{ordinal}")

    def compile(self, module: Module, kernels: list[str]) -> dict[str, HipKernelBinary]:
        """One code object per chip present, loaded on each device of that chip."""
        from ptxport.codegen.targets import amdgpu
        from ptxport.codegen.targets.amdgpu_printf import uses_printf
        from ptxport.codegen.targets.spirv_heap import uses_heap as module_uses_heap

        self._ready()
        uses_heap, prints = module_uses_heap(module), uses_printf(module)
        images: dict[str, bytes] = {}
        functions: dict[str, dict[int, object]] = {name: {} for name in kernels}
        for ordinal in range(self.device_count()):
            chip = _chip(ordinal)
            if chip not in amdgpu.CHIPS:
                continue
            if chip not in images:
                images[chip] = amdgpu.compile_module(module, chip)
            hip = self._use(ordinal)
            loaded = _check(hip.hipModuleLoadData(images[chip]),
                            f"hipModuleLoadData on hip:{ordinal}")
            self._modules.append((loaded, images[chip]))
            if uses_heap:
                self._give_heap(ordinal, loaded)
            if prints:
                self._give_printf_buffer(ordinal, loaded)
            for name in kernels:
                functions[name][ordinal] = _check(hip.hipModuleGetFunction(
                    loaded, name.encode()), f"hipModuleGetFunction({name}) on hip:{ordinal}")
        drain = self._drain_printf if prints else None
        return {name: HipKernelBinary(name, functions[name], drain) for name in kernels}

    def set_heap_size(self, nbytes: int) -> None:
        """The size of the device heap that kernels' malloc and new allocate from
        (cudaLimitMallocHeapSize); fixed once a module that uses it is loaded."""
        from ptxport.runtime.backends.opencl_blocks import check_heap_size

        with self._lock:
            check_heap_size(nbytes, bool(self._heaps), "hip", "loaded")
            self._heap_size = nbytes

    def _give_heap(self, ordinal: int, loaded) -> None:
        """Store device `ordinal`'s heap (made on first use, with its header:
        spirv_heap.py) into the loaded code object's heap global."""
        from ptxport.codegen.targets.spirv_heap import HEADER, HEAP_SYMBOL, initial_header

        with self._lock:
            heap = self._heaps.get(ordinal)
        if heap is None:
            heap = self.allocate(ordinal, HEADER + self._heap_size)
            header = (ctypes.c_uint64 * (HEADER // 8))(*initial_header(self._heap_size))
            self.copy(heap.address, ctypes.addressof(header), HEADER, "htod")
            with self._lock:
                heap = self._heaps.setdefault(ordinal, heap)
        self._set_global(ordinal, loaded, HEAP_SYMBOL, heap.address)

    def _set_global(self, ordinal: int, loaded, name: str, value: int) -> None:
        """Store the 8-byte `value` into the loaded code object's global `name`."""
        symbol, _ = _check(self._use(ordinal).hipModuleGetGlobal(loaded, name.encode()),
                           f"hipModuleGetGlobal({name}) on hip:{ordinal}")
        data = ctypes.c_uint64(value)
        self.copy(int(symbol), ctypes.addressof(data), 8, "htod")

    def _give_printf_buffer(self, ordinal: int, loaded) -> None:
        """Store device `ordinal`'s printf buffer (made on first use, zeroed, with its
        header: amdgpu_printf.py) into the loaded code object's printf global."""
        from ptxport.codegen.targets.amdgpu_printf import CAPACITY, HEADER, PRINTF_SYMBOL

        with self._lock:
            buffer = self._printf_buffers.get(ordinal)
        if buffer is None:
            buffer = self.allocate(ordinal, HEADER + CAPACITY)
            self.fill(buffer.address, HEADER + CAPACITY, 0, 1)
            self._write(buffer.address, hip_printf.initial_header())
            with self._lock:
                buffer = self._printf_buffers.setdefault(ordinal, buffer)
        self._set_global(ordinal, loaded, PRINTF_SYMBOL, buffer.address)

    def _read(self, address: int, nbytes: int) -> bytes:
        out = ctypes.create_string_buffer(nbytes)
        self.copy(ctypes.addressof(out), address, nbytes, "dtoh")
        return out.raw

    def _write(self, address: int, data: bytes) -> None:
        source = ctypes.create_string_buffer(data, len(data))
        self.copy(address, ctypes.addressof(source), len(data), "htod")

    def _drain_printf(self, ordinal: int) -> None:
        """After a launch: print what the kernel's printf calls recorded."""
        with self._lock:
            buffer = self._printf_buffers.get(ordinal)
        if buffer is not None:
            hip_printf.drain(buffer.address, self._read, self._write)

    def launch(self, ordinal: int, binary: HipKernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes) -> None:
        binary.launch_on(ordinal, grid, block, dynamic_shared, params)
