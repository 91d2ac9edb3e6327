"""The CPU backend: kernel images of ptxport.codegen.targets.cpu, loaded and run on the host.

Device memory is host memory: an allocation is a numpy array (so its address is a real host
address a compiled kernel can use, and a Buffer gets a zero-copy numpy view), and copies are
memmove. The device presents CUDA's limits, those of an H100 (compute capability 9.0), so a
launch CUDA would refuse is refused here too:

- 1024 threads per block, block dims (1024, 1024, 64), grid dims (2**31-1, 65535, 65535);
- 48 KiB of shared memory per block without opting in, 227 KiB (232448 bytes) with. Unlike
  CUDA, ptxport needs no cudaFuncSetAttribute to opt in: a launch may use up to 227 KiB of
  static plus dynamic shared memory.

Multiprocessors are the cores this process may run on; the warp is 32 lanes.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import weakref
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ptxport.errors import CompileError, OutOfMemoryError
from ptxport.ir.nodes import Module
from ptxport.runtime.backends import Allocation, BackendBase, DeviceProperties, KernelBinary

if TYPE_CHECKING:
    from ptxport.codegen.targets.cpu.options import CpuOptions

__all__ = ["Backend"]

_ALIGNMENT = 256  # what cudaMalloc guarantees; kernels compiled from CUDA may rely on it
_CODEGEN = "ptxport.codegen.targets.cpu"


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


@cache
def _properties() -> DeviceProperties:
    info = _cpuinfo()
    name = info.get("model name") or platform.processor() or f"{platform.machine()} CPU"
    try:
        clock_khz = int(float(info.get("cpu MHz", "0")) * 1000)
    except ValueError:
        clock_khz = 0
    return DeviceProperties(
        name=name,
        multiprocessor_count=_cores(),
        warp_size=32,
        max_threads_per_block=1024,
        max_block_dim_x=1024, max_block_dim_y=1024, max_block_dim_z=64,
        max_grid_dim_x=2**31 - 1, max_grid_dim_y=65535, max_grid_dim_z=65535,
        max_shared_memory_per_block=48 * 1024,
        max_shared_memory_per_block_optin=227 * 1024,
        max_shared_memory_per_multiprocessor=228 * 1024,
        max_threads_per_multiprocessor=2048,
        total_constant_memory=64 * 1024,
        total_global_memory=_total_memory(),
        clock_rate=clock_khz,
        compute_capability_major=9,
        compute_capability_minor=0,
        integrated=True,
        unified_addressing=True,
        # a worker (a multiprocessor) runs one block at a time, to its end: so one block is
        # resident per multiprocessor, and a cooperative launch may have one per worker
        cooperative_launch=True,
        max_blocks_per_multiprocessor=1,
    )


def _bytes_at(address: int, nbytes: int, dtype=np.uint8) -> np.ndarray:
    return np.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=dtype)


class Backend(BackendBase):
    name = "cpu"
    dlpack_device_type = 1  # kDLCPU
    stops_launches = True   # compiled kernels look at a stop word in every loop

    # Compiles one kernel of a verified IR module: (module, kernel name) -> KernelBinary.
    # None means kernels.compile_kernel; tests put a fake here.
    kernel_compiler: Callable[[Module, str], KernelBinary] | None = None
    # What the code generator may do for kernels compiled from now on (e.g.
    # CpuOptions(gang=False) runs every kernel thread by thread, to compare the two paths);
    # None: CpuOptions()'s defaults.
    options: CpuOptions | None = None

    def __init__(self) -> None:
        self._live: dict[int, int] = {}   # address -> size of every allocation not freed
        # id(allocation) -> (address, size) of host memory registered and not freed (apart:
        # it may overlap an allocation, e.g. a wrapped view of a buffer)
        self._registered: dict[int, tuple[int, int]] = {}
        # both as one tuple, made at a launch after they changed (None: not made yet): the
        # executor keeps its allocation tables while the same tuple comes again
        self._ranges: tuple[tuple[int, int], ...] | None = None
        # binary -> the block shapes it was prepared for
        self._prepared: weakref.WeakKeyDictionary[KernelBinary, set[tuple[int, int, int]]] = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def availability(self) -> tuple[bool, str]:
        return True, ""

    def device_count(self) -> int:
        return 1

    def properties(self, ordinal: int) -> DeviceProperties:
        return _properties()

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        try:
            raw = np.empty(nbytes + _ALIGNMENT - 1, dtype=np.uint8)
        except MemoryError:
            raise OutOfMemoryError(
                f"the cpu device could not allocate {nbytes} bytes of host memory; "
                "free buffers (Buffer.close()) or allocate less") from None
        start = -raw.ctypes.data % _ALIGNMENT
        owner = raw[start:start + nbytes]  # keeps `raw` alive through its base
        allocation = Allocation(raw.ctypes.data + start, nbytes, owner)
        with self._lock:
            self._live[allocation.address] = nbytes
            self._ranges = None
        return allocation

    def free(self, allocation: Allocation) -> None:
        # The memory is the owner array's: it goes when the last reference (this allocation,
        # a numpy view, a DLPack consumer) does. Kernels may no longer touch it.
        with self._lock:
            if self._registered.pop(id(allocation), None) is None:
                self._live.pop(allocation.address, None)
            self._ranges = None

    def set_heap_size(self, nbytes: int) -> None:
        """The size of the device heap that kernels' malloc and new allocate from
        (cudaLimitMallocHeapSize; heap.py). Raises InvalidValueError once a
        kernel using malloc or free has been launched, as CUDA does."""
        from ptxport.runtime.backends.cpu.heap import HEAP

        HEAP.set_size(nbytes)

    def set_stack_size(self, nbytes: int) -> None:
        """The stack of each thread whose kernel's calls may recurse or use alloca
        (cudaLimitStackSize; stack_limit.py), for launches from now on."""
        from ptxport.runtime.backends.cpu import stack_limit

        stack_limit.set_stack_size(nbytes)

    def stack_size(self) -> int:
        """cudaLimitStackSize: the bytes of each thread's stack (1024 unless set)."""
        from ptxport.runtime.backends.cpu import stack_limit

        return stack_limit.stack_size()

    def register_host_memory(self, ordinal: int, memory: np.ndarray) -> Allocation:
        # The memory stays the owner's: freeing the allocation only stops kernels using it.
        allocation = Allocation(memory.ctypes.data, memory.nbytes, memory)
        with self._lock:
            self._registered[id(allocation)] = (allocation.address, allocation.size)
            self._ranges = None
        return allocation

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        if nbytes >= 1 << 20:
            # (large ones on the worker threads too: copies.py, which imports the pool)
            executor, _ = _worker_modules()
            _copies().copy(dst, src, nbytes, executor.worker_count())
        elif nbytes:
            ctypes.memmove(dst, src, nbytes)

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        _bytes_at(address, nbytes, dtype).fill(value)

    def host_view(self, allocation: Allocation) -> np.ndarray:
        return allocation.owner

    def module_global(self, ordinal: int, module: Module, name: str) -> tuple[int, int]:
        # The CPU target keeps a module's variables in host memory shared by its kernels.
        from ptxport.runtime.backends.cpu.jit import module_storage

        found = module_storage(module).get(name)
        if found is None:
            from ptxport.errors import UnsupportedFeatureError

            raise UnsupportedFeatureError(
                f"the module variable {name!r}", self.name, None,
                "it holds function addresses (a vtable), which each kernel's code keeps")
        return found

    def compile(self, module: Module, kernels: list[str]) -> dict[str, KernelBinary]:
        if self.kernel_compiler is not None:
            return {name: self.kernel_compiler(module, name) for name in kernels}
        compile_kernel = _codegen_compile_kernel()
        return {name: compile_kernel(module, name, self.options) for name in kernels}

    def prepare(self, binary: KernelBinary, block: tuple[int, int, int]) -> bool:
        # (asked at every launch: the shapes a binary is ready for are kept, so that only a
        # new shape reaches the binary's locks)
        shapes = self._prepared.get(binary)
        if shapes is not None and block in shapes:
            return False
        # warp-gang kernels have code per block shape (a test's stand-in binary has none)
        prepare = getattr(binary, "prepare", None)
        compiled = prepare is not None and prepare(block)
        self._prepared.setdefault(binary, set()).add(block)
        return compiled

    def runs_at_once(self, binary: KernelBinary) -> bool:
        # (a test's stand-in binary does not say, and may do anything: it is queued)
        return getattr(binary, "runs_to_completion", False)

    def expect_launch(self, blocks: int) -> None:
        """A launch of `blocks` blocks on this device is coming (launch.py calls this before
        it checks and packs the arguments): wake the worker threads it will run on that
        parked, so that they are awake when it opens (pool.prewake)."""
        if blocks > 1:
            executor, pool = _worker_modules()
            pool.prewake(min(executor.worker_count(), blocks) - 1)

    def launch(self, ordinal: int, binary: KernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes,
               timeout: float | None = None, cooperative: bool = False) -> None:
        # Kernels may touch the live allocations only: anything else (a freed buffer, an
        # address past a buffer's end) raises IllegalAddressError instead of corrupting the
        # process.
        live = self._live_ranges()
        if cooperative:
            binary.launch(grid, block, dynamic_shared, params, live, timeout=timeout,
                          cooperative=True)
        else:
            binary.launch(grid, block, dynamic_shared, params, live, timeout=timeout)

    def starter(self, ordinal: int, binary: KernelBinary, block: tuple[int, int, int]):
        """What begins launch()es of `binary` with blocks of shape `block` now, on the
        worker threads (runtime/backends/cpu/early.py), asked once per kernel, device and
        shape after prepare(): a function of (grid, block, dynamic_shared, params) giving
        the function that finishes the launch (on the thread that runs the stream's queue),
        or None, having done nothing, for a launch that launch() must run whole (one worker,
        one block); or None for a binary whose launches are never begun early (no timeout
        and not cooperative: launch.py asks only for those). Its `run(grid, block,
        dynamic_shared, params)` runs such a launch whole, as launch() would, reusing the
        last one's setup where it can."""
        starter = getattr(binary, "starter", None)      # (a test's stand-in binary has none)
        return None if starter is None else starter(block, self._live_ranges)

    def _live_ranges(self) -> tuple:
        """The (address, size) of every live allocation and registered host range."""
        live = self._ranges     # (one read: a tuple, replaced whole, never changed)
        if live is None:
            with self._lock:
                if self._ranges is None:
                    self._ranges = (*self._live.items(), *self._registered.values())
                live = self._ranges
        return live

    def cooperative_blocks(self, ordinal: int, kernel, block, dynamic_shared: int) -> int:
        """One block per worker: a worker runs its block to the end, so blocks that wait
        for each other must each have one (executor.run_grid checks it again at the run)."""
        from ptxport.runtime.backends.cpu.executor import worker_count
        return worker_count()


@cache
def _copies():
    """copies.py (it builds native code: imported at the first large copy)."""
    from ptxport.runtime.backends.cpu import copies

    return copies


@cache
def _worker_modules():
    """The executor and the worker pool (imported at the first launch: they build native
    code)."""
    from ptxport.runtime.backends.cpu import executor, pool

    return executor, pool


def _codegen_compile_kernel() -> Callable[[Module, str], KernelBinary]:
    # Imported here, not at the top: the runtime (devices, buffers, streams) works without
    # the code generator and LLVM, and a missing code generator is reported when a kernel
    # is first needed.
    try:
        import ptxport.codegen.targets.cpu  # noqa: F401  (the code generator: is it here?)
        from ptxport.runtime.backends.cpu.kernels import compile_kernel
    except ModuleNotFoundError as e:
        if e.name is None or not _CODEGEN.startswith(e.name):
            raise
        raise CompileError(
            f"cannot compile kernels for the cpu device: the CPU code generator ({_CODEGEN}) "
            "is not part of this installation of ptxport; install a release that has it") \
            from None
    return compile_kernel
