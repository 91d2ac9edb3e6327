"""The CUDA backend: NVIDIA GPUs through the CUDA driver API (cuda-bindings' `driver`).

Which PTX a kernel runs is the backend's `ptx_source`:
- "ptxport" (the default): what ptxport's NVPTX target (ptxport.codegen.targets.nvptx) makes
  of the verified IR, for the device's architecture; the kernels keep the original PTX's
  parameter ABI, so the runtime's packed parameter buffer fits either;
- "native": the program's own PTX text (NVIDIA's own code generation, the oracle).
A module is loaded with cuModuleLoadData. A driver older than the PTX's ISA version cannot
JIT it (NVRTC 13.5 writes PTX ISA 9.5, which a CUDA 13.0 driver refuses): then the PTX is
assembled into a cubin by the ptxas of the nvidia-cuda-nvcc wheel. Cubins are cached on disk
($PTXPORT_CACHE_DIR/cubin, keyed by the PTX text and the architecture), and the cache is
looked at before anything else, so a machine without ptxas loads cubins assembled elsewhere
(benchmarks/gpu_check.py fills the cache this way).

Every hook runs synchronously, as the hook interface asks: the runtime's streams order the
work (one worker thread per stream), and each thread issues its work on CUDA's per-thread
default stream of the device's primary context and waits for it. So different ptxport streams
overlap on the GPU as they would in CUDA.

A kernel that faults (illegal address, trap, failed assert) leaves the context unusable, as in
CUDA: later work on that device fails with the same error until the process ends.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
import threading
import weakref
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.errors import (
    BackendUnavailableError,
    CompileError,
    IllegalAddressError,
    InvalidValueError,
    KernelAssertError,
    KernelExecutionError,
    KernelTrapError,
    LaunchError,
    OutOfMemoryError,
    PtxportError,
    UnsupportedFeatureError,
)
from ptxport.ir.abi import param_layout
from ptxport.ir.nodes import Module
from ptxport.runtime.backends import Allocation, BackendBase, DeviceProperties
from ptxport.runtime.backends.cuda_devrt import calls_device_runtime, link_device_runtime

__all__ = ["Backend", "CudaKernelBinary", "assemble", "wheel_ptxas", "PTX_SOURCES"]

PTX_SOURCES = ("ptxport", "native")
_NVPTX = "ptxport.codegen.targets.nvptx"
_INSTALL_HINT = "pip install 'ptxport[cuda]'"
# The names a ModuleNotFoundError carries when cuda-bindings itself is absent.
_BINDINGS_MODULES = ("cuda", "cuda.bindings", "cuda.bindings.driver")

# CUresult values, by name (looked up in the driver's enum once it is imported).
_ILLEGAL_ADDRESS = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS",
                    "CUDA_ERROR_INVALID_ADDRESS_SPACE")
_TRAPS = ("CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
          "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_HARDWARE_STACK_ERROR")
_STICKY = (*_ILLEGAL_ADDRESS, *_TRAPS, "CUDA_ERROR_LAUNCH_TIMEOUT")
_LAUNCH_REFUSED = ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE")
_NOT_JITTABLE = ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_PTX",
                 "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "CUDA_ERROR_JIT_COMPILATION_DISABLED")


# -- the driver -----------------------------------------------------------------------------------

def _driver():
    from cuda.bindings import driver

    if not _redirected:
        # Inside `ptxport run` the process holds ptxport's libcuda.so.1: cuda-bindings must
        # load NVIDIA's by path (ptxport/runtime/backends/real_driver.py).
        from ptxport.runtime.backends.real_driver import redirect_cuda_bindings

        redirect_cuda_bindings()
        _redirected.append(True)
    return driver


_redirected: list[bool] = []


def _error_name(code) -> str:
    driver = _driver()
    try:
        err, name = driver.cuGetErrorName(code)
        err2, text = driver.cuGetErrorString(code)
    except Exception:  # the driver is gone (interpreter exit): the number will do
        return f"CUresult {int(code)}"
    name = name.decode() if err == 0 and name else f"CUresult {int(code)}"
    return f"{name} ({text.decode()})" if err2 == 0 and text else name


def _failure(code, doing: str) -> PtxportError:
    """The ptxport error for a CUresult other than CUDA_SUCCESS."""
    name = getattr(code, "name", "")
    message = f"{doing}: {_error_name(code)}"
    if name in _STICKY:
        message += ("; the device's context is now unusable, as in CUDA: restart the process "
                    "to use this GPU again")
    if name in _ILLEGAL_ADDRESS:
        return IllegalAddressError(message)
    if name == "CUDA_ERROR_ASSERT":     # the driver printed the assertion's text to stderr
        return KernelAssertError(message)
    if name in _TRAPS:
        return KernelTrapError(message)
    if name == "CUDA_ERROR_OUT_OF_MEMORY":
        return OutOfMemoryError(message + "; free buffers (Buffer.close()) or allocate less")
    if name in _NOT_JITTABLE or name in ("CUDA_ERROR_INVALID_IMAGE",
                                         "CUDA_ERROR_NO_BINARY_FOR_GPU"):
        return CompileError(message)
    if name in _LAUNCH_REFUSED and doing.startswith("cannot launch"):
        return LaunchError(message)
    return KernelExecutionError(message)


def _check(result: tuple, doing: str):
    """The values of a cuda-bindings call (which returns (CUresult, *values)), or raise."""
    code, *values = result
    if code != 0:
        raise _failure(code, doing)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _check_request(result: tuple, doing: str):
    """_check for a call that runs no kernel (an allocation, a registration, a lookup): a
    refusal is the caller's InvalidValueError (or OutOfMemoryError), never a kernel failure
    that would leave the program's context unusable; a fault of earlier work it reports stays
    what it is."""
    code = result[0]
    name = getattr(code, "name", "")
    if code != 0 and name not in _STICKY and name != "CUDA_ERROR_OUT_OF_MEMORY":
        raise InvalidValueError(f"{doing}: {_error_name(code)}")
    return _check(result, doing)


# -- ptxas and the cubin cache --------------------------------------------------------------------

def wheel_ptxas() -> Path | None:
    """The ptxas of the nvidia-cuda-nvcc wheel (the newest CUDA release present), or None.

    CUDA 13 wheels install it as nvidia/cu13/bin/ptxas, CUDA 12 wheels as
    nvidia/cuda_nvcc/bin/ptxas. The system's ptxas is not used: it may be older than the PTX.
    """
    try:
        import nvidia
    except ImportError:
        return None
    candidates: list[tuple[int, Path]] = []
    for root in map(Path, nvidia.__path__):
        for ptxas in root.glob("cu[0-9]*/bin/ptxas"):
            release = ptxas.parent.parent.name[2:]
            if release.isdigit():
                candidates.append((int(release), ptxas))
        candidates.append((12, root / "cuda_nvcc" / "bin" / "ptxas"))
    for _, ptxas in sorted(candidates, key=lambda c: -c[0]):
        if ptxas.is_file() and os.access(ptxas, os.X_OK):
            return ptxas
    return None


def _cubin_path(ptx: str, arch: str) -> Path:
    key = hashlib.sha256(f"cubin 1\0{arch}\0{ptx}".encode()).hexdigest()
    return cache_path("cubin", key, ".cubin")


def cached_cubin(ptx: str, arch: str) -> bytes | None:
    """A cubin assembled earlier from exactly this PTX for `arch`, or None."""
    return read_entry(_cubin_path(ptx, arch))


def assemble(ptx: str, arch: str, name: str = "module") -> bytes:
    """`ptx` assembled for `arch` ("sm_90") by the wheel's ptxas, through the cubin cache.

    Raises CompileError with ptxas's log when it refuses the PTX, BackendUnavailableError
    when there is no ptxas wheel and nothing cached.
    """
    cubin = cached_cubin(ptx, arch)
    if cubin is not None:
        return cubin
    ptxas = wheel_ptxas()
    if ptxas is None:
        raise BackendUnavailableError(
            "no ptxas to assemble the PTX with: pip install nvidia-cuda-nvcc (the release of "
            "the NVRTC that wrote the PTX, or newer)")
    with tempfile.TemporaryDirectory(prefix="ptxport-ptxas-") as tmp:
        source, target = Path(tmp) / f"{name}.ptx", Path(tmp) / f"{name}.cubin"
        source.write_text(ptx)
        result = subprocess.run([str(ptxas), f"-arch={arch}", str(source), "-o", str(target)],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CompileError(f"ptxas ({ptxas}) refused the PTX of {name} for {arch}",
                               result.stderr or result.stdout)
        cubin = target.read_bytes()
    write_entry(_cubin_path(ptx, arch), cubin)
    return cubin


_TARGET = re.compile(r"^\s*\.target\s+([\w, ]+)", re.MULTILINE)


def _ptxas_arch(ptx: str, device_arch: str) -> str:
    """The -arch for ptxas: the device's, or its architecture-specific variant (sm_90a) when
    the PTX targets that."""
    match = _TARGET.search(ptx)
    targets = [t.strip() for t in match.group(1).split(",")] if match else []
    specific = [t for t in targets if t.rstrip("af") == device_arch and t != device_arch]
    return specific[0] if specific else device_arch


# -- devices --------------------------------------------------------------------------------------

_ATTRIBUTES = {  # DeviceProperties field -> CU_DEVICE_ATTRIBUTE_ suffix
    "multiprocessor_count": "MULTIPROCESSOR_COUNT",
    "warp_size": "WARP_SIZE",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_block_dim_x": "MAX_BLOCK_DIM_X",
    "max_block_dim_y": "MAX_BLOCK_DIM_Y",
    "max_block_dim_z": "MAX_BLOCK_DIM_Z",
    "max_grid_dim_x": "MAX_GRID_DIM_X",
    "max_grid_dim_y": "MAX_GRID_DIM_Y",
    "max_grid_dim_z": "MAX_GRID_DIM_Z",
    "max_shared_memory_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "max_shared_memory_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_shared_memory_per_multiprocessor": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "max_threads_per_multiprocessor": "MAX_THREADS_PER_MULTIPROCESSOR",
    "total_constant_memory": "TOTAL_CONSTANT_MEMORY",
    "clock_rate": "CLOCK_RATE",
    "compute_capability_major": "COMPUTE_CAPABILITY_MAJOR",
    "compute_capability_minor": "COMPUTE_CAPABILITY_MINOR",
    "integrated": "INTEGRATED",
    "unified_addressing": "UNIFIED_ADDRESSING",
    "cooperative_launch": "COOPERATIVE_LAUNCH",
    "max_blocks_per_multiprocessor": "MAX_BLOCKS_PER_MULTIPROCESSOR",
}
_BOOLEANS = ("integrated", "unified_addressing", "cooperative_launch")


# What an allocation of this backend is, which says how it is freed and whether the host
# addresses it: device memory (cuMemAlloc), page-locked host memory (cuMemHostAlloc), managed
# memory (cuMemAllocManaged), host memory registered in place (cuMemHostRegister), and a
# module's variable (cuModuleGetGlobal: the module owns it).
DEVICE, HOST, MANAGED, REGISTERED, MODULE = "device", "host", "managed", "registered", "module"
_HOST_ADDRESSABLE = (HOST, MANAGED, REGISTERED)
_MEMHOSTREGISTER_PORTABLE_DEVICEMAP = 0x1 | 0x2
_MEM_ATTACH_GLOBAL = 0x1


@dataclass(frozen=True)
class _DeviceMemory:
    """What an Allocation of this backend owns: memory of one device, of one kind."""

    ordinal: int
    address: int
    kind: str = DEVICE
    keep: object = None   # registered host memory: the array that keeps it alive


class _Contexts:
    """The primary context of each device, retained on first use and made current on the
    threads that use it; work goes to CUDA's per-thread default stream."""

    def __init__(self) -> None:
        self._contexts: dict[int, object] = {}
        self._lock = threading.Lock()
        self._current = threading.local()

    def enter(self, ordinal: int):
        """Make device `ordinal`'s primary context current on this thread; return the
        stream to issue work on."""
        driver = _driver()
        if getattr(self._current, "ordinal", None) != ordinal:
            with self._lock:
                context = self._contexts.get(ordinal)
                if context is None:
                    device = _check(driver.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
                    context = _check(driver.cuDevicePrimaryCtxRetain(device),
                                     f"cannot open cuda:{ordinal}")
                    self._contexts[ordinal] = context
            _check(driver.cuCtxSetCurrent(context), f"cannot make cuda:{ordinal} current")
            self._current.ordinal = ordinal
        return driver.CUstream(driver.CU_STREAM_PER_THREAD)


# -- kernels --------------------------------------------------------------------------------------

class CudaKernelBinary:
    """One kernel of a loadable image (PTX or cubin) per architecture; the module is loaded
    into a device's context the first time the kernel is needed there."""

    def __init__(self, backend: Backend, name: str, images: dict[str, _Image],
                 param_bytes: int):
        self.name = name
        self._backend, self._images = backend, images
        # The driver takes the parameter buffer only at its exact size, the end of the last
        # parameter: the runtime's buffer is rounded up to the largest alignment.
        self.param_bytes = param_bytes
        self._functions: dict[int, object] = {}
        self._dynamic_limit: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def images(self) -> dict[str, _Image]:
        """architecture -> the image loaded on devices of that architecture."""
        return dict(self._images)

    def function(self, ordinal: int):
        """The CUfunction on device `ordinal` (its context must be current)."""
        with self._lock:
            function = self._functions.get(ordinal)
            if function is None:
                module = self._images[self._backend.arch(ordinal)].module(ordinal)
                function = _check(_driver().cuModuleGetFunction(module, self.name.encode()),
                                  f"kernel {self.name} is not in its module on cuda:{ordinal}")
                self._functions[ordinal] = function
            return function

    def allow_dynamic_shared(self, ordinal: int, nbytes: int) -> None:
        """Opt the kernel in to `nbytes` of dynamic shared memory where CUDA requires it
        (past 48 KiB with the static): ptxport's launches need no cudaFuncSetAttribute on any
        device."""
        driver = _driver()
        function = self.function(ordinal)
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        with self._lock:
            limit = self._dynamic_limit.get(ordinal)
            if limit is None:
                limit = _check(driver.cuFuncGetAttribute(attribute, function),
                               f"cannot query kernel {self.name}")
            if nbytes > limit:
                _check(driver.cuFuncSetAttribute(function, attribute, nbytes),
                       f"cannot launch {self.name} with {nbytes} bytes of dynamic shared memory")
                limit = nbytes
            self._dynamic_limit[ordinal] = limit

    def launch(self, ordinal: int, grid: tuple[int, int, int], block: tuple[int, int, int],
               dynamic_shared: int, params: bytes, stream, cooperative: bool = False) -> None:
        """Queue the kernel on `stream` (the context of `ordinal` current) with the packed
        parameter buffer, as CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE; does not wait (a
        `cooperative` one through cuLaunchKernelEx, as cuLaunchCooperativeKernel has no `extra`)."""
        driver = _driver()
        function = self.function(ordinal)
        if dynamic_shared:
            self.allow_dynamic_shared(ordinal, dynamic_shared)
        params = params[:self.param_bytes]
        buffer = ctypes.create_string_buffer(params, max(len(params), 1))
        size = ctypes.c_size_t(len(params))
        extra = (ctypes.c_void_p * 5)(
            driver.CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buffer),
            driver.CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
            driver.CU_LAUNCH_PARAM_END)
        extra_address = ctypes.addressof(extra) if params else 0
        doing = (f"cannot launch {self.name} on cuda:{ordinal} with grid={grid}, "
                 f"block={block}, dynamic shared memory {dynamic_shared} bytes")
        if cooperative:
            _check(driver.cuLaunchKernelEx(_cooperative_config(grid, block, dynamic_shared,
                                                               stream),
                                           function, None, extra_address),
                   doing + " (cooperatively)")
            return
        _check(driver.cuLaunchKernel(function, *grid, *block, dynamic_shared, stream, None,
                                     extra_address), doing)


def _cooperative_config(grid, block, dynamic_shared: int, stream):
    """A CUlaunchConfig for a cooperative launch (cuda-bindings' structs)."""
    driver = _driver()
    attribute, config = driver.CUlaunchAttribute(), driver.CUlaunchConfig()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    attribute.value.cooperative = 1
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes, config.hStream = dynamic_shared, stream
    config.attrs, config.numAttrs = [attribute], 1
    return config


class _Image:
    """What is loaded for one architecture: PTX text (JIT-compiled by the driver, or
    assembled by ptxas when the driver cannot), where it came from, and the module it became
    on each device. Modules stay loaded until the process ends."""

    def __init__(self, ptx: str, arch: str, source: str, name: str):
        self.ptx, self.arch = ptx, arch
        self.source = source  # "ptxport" or "native"
        self.name = name      # the program's name, for messages
        self._modules: dict[int, object] = {}
        self._lock = threading.Lock()

    def module(self, ordinal: int):
        """The CUmodule on device `ordinal` (its context current), loaded once."""
        with self._lock:
            if ordinal not in self._modules:
                self._modules[ordinal] = _load(self, ordinal)
            return self._modules[ordinal]


# -- the backend ----------------------------------------------------------------------------------

class Backend(BackendBase):
    name = "cuda"
    dlpack_device_type = 2  # kDLCUDA

    # Which PTX a kernel runs: "ptxport" (ptxport's NVPTX target) or "native" (the program's
    # own PTX). Read when a kernel is first compiled for a device (ObjectCode keeps the result).
    ptx_source: str = "ptxport"

    def __init__(self) -> None:
        self._contexts = _Contexts()
        self._lock = threading.Lock()
        self._availability: tuple[bool, str] | None = None
        self._starts: list[int] = []                 # sorted addresses of live allocations
        # address -> (size, ordinal, kind) of live allocations and module variables found
        self._live: dict[int, tuple[int, int, str]] = {}
        self._images: dict[tuple[int, str, str], _Image] = {}  # (id(module), arch, source)
        from ptxport.runtime.backends.cuda_textures import CudaTextures

        self.textures = CudaTextures(self)   # the driver's arrays and texture objects

    # -- presence and properties ------------------------------------------------------------------

    def availability(self) -> tuple[bool, str]:
        with self._lock:
            if self._availability is None:
                self._availability = _probe()
            return self._availability

    def device_count(self) -> int:
        return _check(_driver().cuDeviceGetCount(), "cuDeviceGetCount")

    def properties(self, ordinal: int) -> DeviceProperties:
        return _properties(ordinal)

    def arch(self, ordinal: int) -> str:
        p = _properties(ordinal)
        return f"sm_{p.compute_capability_major}{p.compute_capability_minor}"

    # -- memory -----------------------------------------------------------------------------------

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        # cuMemAlloc refuses 0 bytes; an empty buffer still gets an address of its own.
        return self._allocated(ordinal, nbytes, DEVICE, lambda d: d.cuMemAlloc(max(nbytes, 1)))

    def allocate_host(self, ordinal: int, nbytes: int, flags: int = 0) -> Allocation:
        # The driver's page-locked memory: the host writes it at its address and, with
        # unified addressing, kernels and copies use the same address.
        return self._allocated(ordinal, nbytes, HOST,
                               lambda d: d.cuMemHostAlloc(max(nbytes, 1), flags))

    def allocate_managed(self, ordinal: int, nbytes: int) -> Allocation:
        # Attached globally: ptxport's streams are not the driver's, so a stream attachment
        # (cuStreamAttachMemAsync) cannot be passed on, and global is what every kernel may
        # touch on any device.
        return self._allocated(ordinal, nbytes, MANAGED,
                               lambda d: d.cuMemAllocManaged(max(nbytes, 1), _MEM_ATTACH_GLOBAL))

    def _allocated(self, ordinal: int, nbytes: int, kind: str, call) -> Allocation:
        self._contexts.enter(ordinal)
        address = int(_check_request(
            call(_driver()), f"cuda:{ordinal} could not allocate {nbytes} bytes ({kind} memory)"))
        self._track(address, nbytes, ordinal, kind)
        return Allocation(address, nbytes, _DeviceMemory(ordinal, address, kind))

    def _track(self, address: int, nbytes: int, ordinal: int, kind: str) -> None:
        with self._lock:
            if address not in self._live:
                self._starts.insert(bisect_right(self._starts, address), address)
            self._live[address] = (nbytes, ordinal, kind)

    def register_host_memory(self, ordinal: int, memory) -> Allocation:
        """The host memory of `memory` page-locked and mapped for the device
        (cuMemHostRegister, portable and mapped); kernels use it at its host address."""
        address, nbytes = memory.ctypes.data, memory.nbytes
        if nbytes:
            self._contexts.enter(ordinal)
            driver = _driver()
            doing = (f"cannot register {nbytes} bytes of host memory at {address:#x} with "
                     f"cuda:{ordinal}")
            _check_request(driver.cuMemHostRegister(address, nbytes,
                                                    _MEMHOSTREGISTER_PORTABLE_DEVICEMAP), doing)
            mapped = int(_check_request(driver.cuMemHostGetDevicePointer(address, 0), doing))
            if mapped != address:
                _check(driver.cuMemHostUnregister(address), doing)
                raise InvalidValueError(
                    f"{doing}: the device addresses it at {mapped:#x}, not at its host address "
                    "(the device cannot use host pointers for registered memory): allocate a "
                    "buffer and copy the array into it")
            self._track(address, nbytes, ordinal, REGISTERED)
        return Allocation(address, nbytes, _DeviceMemory(ordinal, address, REGISTERED, memory))

    def free(self, allocation: Allocation) -> None:
        owner = allocation.owner
        with self._lock:
            if self._live.pop(allocation.address, None) is None:
                return
            self._starts.remove(allocation.address)
        self._contexts.enter(owner.ordinal)
        driver = _driver()
        free = {DEVICE: driver.cuMemFree, MANAGED: driver.cuMemFree,
                HOST: driver.cuMemFreeHost, REGISTERED: driver.cuMemHostUnregister}[owner.kind]
        _check(free(allocation.address), f"cannot free memory on cuda:{owner.ordinal}")

    def host_view(self, allocation: Allocation):
        owner = allocation.owner
        if getattr(owner, "kind", DEVICE) not in _HOST_ADDRESSABLE:
            return None
        if owner.keep is not None:
            return owner.keep
        if not allocation.size:
            return np.zeros(0, np.uint8)
        return np.ctypeslib.as_array(
            (ctypes.c_uint8 * allocation.size).from_address(allocation.address))

    def _find(self, address: int) -> tuple[int, str] | None:
        """(ordinal, kind) of the allocation that holds `address`, or None."""
        with self._lock:
            index = bisect_right(self._starts, address) - 1
            if index >= 0:
                start = self._starts[index]
                size, ordinal, kind = self._live[start]
                if address < start + max(size, 1):
                    return ordinal, kind
        return None

    def _ordinal_of(self, address: int) -> int:
        """The device owning the allocation that holds `address`."""
        found = self._find(address)
        if found is None:
            raise InvalidValueError(
                f"{address:#x} is not in any live allocation of the cuda backend")
        return found[0]

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        if not nbytes:
            return
        driver = _driver()
        ends = self._find(dst), self._find(src)
        ordinal = self._ordinal_of(src if kind == "dtoh" else dst)
        stream = self._contexts.enter(ordinal)
        if any(end is not None and end[1] in _HOST_ADDRESSABLE for end in ends):
            # host-addressable memory on either side: the driver tells the direction from
            # the addresses (unified addressing), as cudaMemcpyDefault
            result = driver.cuMemcpyAsync(dst, src, nbytes, stream)
        elif kind == "htod":
            result = driver.cuMemcpyHtoDAsync(dst, src, nbytes, stream)
        elif kind == "dtoh":
            result = driver.cuMemcpyDtoHAsync(dst, src, nbytes, stream)
        else:
            result = driver.cuMemcpyDtoDAsync(dst, src, nbytes, stream)
        doing = f"cannot copy {nbytes} bytes ({kind}) on cuda:{ordinal}"
        _check(result, doing)
        _check(driver.cuStreamSynchronize(stream), doing)

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        if not nbytes:
            return
        driver = _driver()
        ordinal, kind = self._find(address) or (self._ordinal_of(address), DEVICE)
        if kind in (HOST, REGISTERED):
            # page-locked host memory: the host fills it (the work queued before, which
            # this thread waited for, is done)
            dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
            np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)) \
                .view(dtype).fill(value)
            return
        stream = self._contexts.enter(ordinal)
        memset = {1: driver.cuMemsetD8Async, 2: driver.cuMemsetD16Async,
                  4: driver.cuMemsetD32Async}[width]
        doing = f"cannot fill {nbytes} bytes on cuda:{ordinal}"
        _check(memset(address, value, nbytes // width, stream), doing)
        _check(driver.cuStreamSynchronize(stream), doing)

    def set_heap_size(self, nbytes: int) -> None:
        """cudaLimitMallocHeapSize on every device: the driver's (cuda_limits.py)."""
        from ptxport.runtime.backends.cuda_limits import set_limit
        set_limit(self, "CU_LIMIT_MALLOC_HEAP_SIZE", nbytes)

    def set_stack_size(self, nbytes: int) -> None:
        """cudaLimitStackSize on every device: the driver's (cuda_limits.py)."""
        from ptxport.runtime.backends.cuda_limits import set_limit
        set_limit(self, "CU_LIMIT_STACK_SIZE", nbytes)

    def module_global(self, ordinal: int, module: Module, name: str) -> tuple[int, int]:
        """The variable in the module the kernels of `module` run from on this device (one
        CUmodule per IR module and device, loaded here if no kernel loaded it yet): its
        initial value is the PTX's, and every kernel of the module shares it."""
        image = self._image(module, self.arch(ordinal), self._source())
        self._contexts.enter(ordinal)
        cumodule = image.module(ordinal)
        code, *values = _driver().cuModuleGetGlobal(cumodule, name.encode())
        if getattr(code, "name", "") == "CUDA_ERROR_NOT_FOUND":
            raise UnsupportedFeatureError(
                f"the module variable {name!r}", self.name, None,
                f"the {image.source} PTX of {image.name} does not define it (no kernel uses "
                "it, or the target could not keep it)")
        address, size = map(int, _check_request(
            (code, *values), f"cannot find the module variable {name!r} on cuda:{ordinal}"))
        variable = module.globals.get(name)
        kind = MANAGED if variable is not None and variable.managed else MODULE
        self._track(address, size, ordinal, kind)
        return address, size

    # -- kernels ----------------------------------------------------------------------------------

    def compile(self, module: Module, kernels: list[str]) -> dict[str, CudaKernelBinary]:
        source = self._source()
        first_of_arch: dict[str, int] = {}
        for ordinal in range(self.device_count()):
            first_of_arch.setdefault(self.arch(ordinal), ordinal)
        images = {arch: self._image(module, arch, source) for arch in first_of_arch}
        binaries = {name: CudaKernelBinary(self, name, images,
                                           _param_bytes(module.functions[name]))
                    for name in kernels}
        # Load now, on the caller's thread, so that a module the driver refuses is an error
        # of the launch that needed it rather than of a later sync.
        for ordinal in first_of_arch.values():
            self._contexts.enter(ordinal)
            for binary in binaries.values():
                binary.function(ordinal)
        return binaries

    def _source(self) -> str:
        if self.ptx_source not in PTX_SOURCES:
            raise InvalidValueError(
                f"the cuda backend's ptx_source must be one of {', '.join(PTX_SOURCES)}, "
                f"not {self.ptx_source!r}")
        return self.ptx_source

    def _image(self, module: Module, arch: str, source: str) -> _Image:
        """The image of `module` for `arch`, made once and shared by its kernels."""
        key = (id(module), arch, source)
        with self._lock:
            image = self._images.get(key)
        if image is not None:
            return image
        if source == "native":
            if module.source is None:
                raise CompileError(
                    "this IR module has no PTX text of its own (it was not read from PTX): "
                    "use the cuda backend's ptx_source 'ptxport'")
            ptx = module.source.text
        else:
            ptx = mark_managed(_nvptx_compile_module()(module, arch), module)
        with self._lock:
            if key not in self._images:
                self._images[key] = _Image(ptx, arch, source, _name(module))
                weakref.finalize(module, self._images.pop, key, None)
            return self._images[key]

    def launch(self, ordinal: int, binary: CudaKernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes,
               cooperative: bool = False) -> None:
        stream = self._contexts.enter(ordinal)
        binary.launch(ordinal, grid, block, dynamic_shared, params, stream, cooperative)
        _check(_driver().cuStreamSynchronize(stream),
               f"kernel {binary.name} failed on cuda:{ordinal}")

    def cooperative_blocks(self, ordinal: int, kernel, block, dynamic_shared: int) -> int:
        """The driver's occupancy for the kernel times the multiprocessors: the blocks
        resident at once, which a cooperative launch may have."""
        from ptxport.runtime.device import Device
        binary = kernel._binary(Device(f"cuda:{ordinal}"))
        self._contexts.enter(ordinal)
        per_multiprocessor = _check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
            binary.function(ordinal), block[0] * block[1] * block[2], dynamic_shared),
            f"cannot query the occupancy of kernel {binary.name} on cuda:{ordinal}")
        return per_multiprocessor * _properties(ordinal).multiprocessor_count

    def stream(self, ordinal: int):
        """The CUstream this thread's work on device `ordinal` goes to (its context made
        current): for callers that time kernels with CUDA events."""
        return self._contexts.enter(ordinal)


def mark_managed(ptx: str, module: Module) -> str:
    """`ptx` (NVPTX's, which writes every module variable as plain .global) with
    `.attribute(.managed)` on the module's `__managed__` variables, as the program's own PTX
    has them: the driver then places them in managed memory, which the host reads and
    writes at the address cuModuleGetGlobal gives."""
    for variable in module.globals.values():
        if variable.space != "global" or not variable.managed:
            continue
        declaration = re.compile(
            rf"^(\s*(?:\.(?:visible|weak|common)\s+)?\.global)"
            rf"(?!\s+\.attribute)(?=[^;=\n]*\s{re.escape(variable.name)}\s*[\[;=])",
            re.MULTILINE)
        ptx = declaration.sub(r"\1 .attribute(.managed)", ptx, count=1)
    return ptx


def _param_bytes(function) -> int:
    slots, _ = param_layout(function)
    return slots[-1].offset + slots[-1].size if slots else 0


def _name(module: Module) -> str:
    return module.source.name if module.source is not None else "module"


def _load(image: _Image, ordinal: int):
    """cuModuleLoadData of a cached cubin, else of the PTX (the driver JITs it), else of the
    cubin ptxas makes; PTX calling cudadevrt is linked with it first (cuda_devrt.py)."""
    driver = _driver()
    where = f"{image.name} ({image.source} PTX) on cuda:{ordinal}"
    arch = _ptxas_arch(image.ptx, image.arch)
    cubin = (link_device_runtime(driver, image.ptx, arch, where, _check, _NOT_JITTABLE)
             if calls_device_runtime(image.ptx) else cached_cubin(image.ptx, arch))
    if cubin is None:
        code, *module = driver.cuModuleLoadData(image.ptx.encode() + b"\0")
        if code == 0:
            return module[0]
        if getattr(code, "name", "") not in _NOT_JITTABLE:
            raise _failure(code, f"cannot load {where}")
        try:
            cubin = assemble(image.ptx, arch, Path(image.name).stem or "module")
        except BackendUnavailableError as e:
            raise CompileError(
                f"the CUDA driver cannot JIT the PTX of {where} ({_error_name(code)}; it may be "
                f"newer than the driver, of CUDA {_driver_version()}), and {e}") from None
    return _check(driver.cuModuleLoadData(cubin), f"cannot load the cubin of {where}")


def _nvptx_compile_module():
    # Imported on first use: the backend's memory, copies and native PTX work without it.
    try:
        from ptxport.codegen.targets.nvptx import compile_module
    except ModuleNotFoundError as e:
        if e.name is None or not _NVPTX.startswith(e.name):
            raise
        raise CompileError(
            f"ptxport's NVPTX target ({_NVPTX}) is not part of this installation, so the cuda "
            "backend cannot make its own PTX: set ptxport.runtime.backends.get('cuda')"
            ".ptx_source = 'native' to run the program's own PTX") from None
    return compile_module


@cache
def _driver_version() -> str:
    version = _check(_driver().cuDriverGetVersion(), "cuDriverGetVersion")
    return f"{version // 1000}.{version % 1000 // 10}"


def _probe() -> tuple[bool, str]:
    """(True, "") when a driver and a GPU are present, else (False, why)."""
    try:
        driver = _driver()
    except ModuleNotFoundError as e:
        if e.name not in _BINDINGS_MODULES:   # something cuda-bindings itself needs
            return False, f"cuda-bindings cannot be imported ({e}): reinstall it ({_INSTALL_HINT})"
        return False, f"cuda-bindings is not installed ({_INSTALL_HINT})"
    except ImportError as e:   # installed, but broken or of another layout
        return False, f"cuda-bindings cannot be imported ({e}): reinstall it ({_INSTALL_HINT})"
    except BackendUnavailableError as e:   # inside the shim: no NVIDIA driver, or old bindings
        return False, str(e)
    try:
        (code,) = driver.cuInit(0)
    except RuntimeError:  # cuda.pathfinder found no libcuda
        return False, "no NVIDIA driver here (libcuda.so.1 was not found)"
    if getattr(code, "name", "") == "CUDA_ERROR_NO_DEVICE":
        return False, "the NVIDIA driver is installed but finds no GPU (CUDA_ERROR_NO_DEVICE)"
    if code != 0:
        return False, f"the CUDA driver did not start: cuInit failed with {_error_name(code)}"
    count = _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
    if count == 0:
        return False, "the NVIDIA driver finds no GPU"
    return True, ""


@cache
def _properties(ordinal: int) -> DeviceProperties:
    driver = _driver()
    device = _check(driver.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
    name = _check(driver.cuDeviceGetName(256, device), f"cuDeviceGetName({ordinal})")
    values = {}
    for field, attribute in _ATTRIBUTES.items():
        value = _check(driver.cuDeviceGetAttribute(
            getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{attribute}"), device),
            f"cuDeviceGetAttribute({attribute})")
        values[field] = bool(value) if field in _BOOLEANS else int(value)
    total = _check(driver.cuDeviceTotalMem(device), f"cuDeviceTotalMem({ordinal})")
    return DeviceProperties(name=name.split(b"\0", 1)[0].decode(), total_global_memory=int(total),
                            **values)
