"""Memory the opencl backend owns on behalf of kernels: each module's variable block (its
.global and .const variables, which the SPIR-V target's kernels take as a hidden argument;
codegen/targets/spirv_globals.py), one per (device, module), allocated and filled with the
variables' initial values on first use, and given back when the module is gone; and each
device's heap for device-side malloc and free (codegen/targets/spirv_heap.py).

The blocks are ordinary allocations of the backend (Backend.allocate), so copies, fills,
bounds checks and the SVM pointers named to kernels treat them like any other memory; a
variable's device address (cuModuleGetGlobal, cudaMemcpyToSymbol) lies inside its module's
block.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ptxport.codegen.targets.spirv_globals import ModuleVariables
from ptxport.errors import InvalidValueError, UnsupportedFeatureError
from ptxport.runtime.backends import Allocation
from ptxport.runtime.stream import later

__all__ = ["DeviceHeaps", "VariableBlocks"]


class VariableBlocks:
    """The variable blocks of one backend (`backend`: its allocate, free and copy hooks,
    address_scheme, and `_lock`, the lock its free takes)."""

    def __init__(self, backend) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._blocks: dict[tuple[int, int], Allocation] = {}

    def block(self, ordinal: int, variables: ModuleVariables) -> Allocation | None:
        """The module's block on device `ordinal` (None for a module without variables),
        made and initialized on first use."""
        if not variables.size:
            return None
        key = (ordinal, id(variables))
        with self._lock:
            found = self._blocks.get(key)
            if found is not None:
                return found
            if variables.problems:
                raise variables.problems[0]
            if variables.relocations and \
                    self._backend.address_scheme(ordinal) != "svm":
                raise UnsupportedFeatureError(
                    "module variables initialized with addresses", "spirv", None,
                    f"opencl:{ordinal} has no shared virtual memory, so the host cannot "
                    "know the device addresses such initial values hold")
            allocation = self._backend.allocate(ordinal, variables.size)
            image = np.frombuffer(variables.initial_image(allocation.address), np.uint8)
            self._backend.copy(allocation.address, image.ctypes.data, image.size, "htod")
            self._blocks[key] = allocation
            weakref.finalize(variables, self._forget, key)
            return allocation

    def _forget(self, key: tuple[int, int]) -> None:
        """The finalizer of a module's variables: their block given back. It never waits
        for a lock: the garbage collector runs it in whatever thread allocates, maybe inside
        that thread's `with self._lock` in block() or the backend's own lock section
        (runtime/stream.py's docstring). The entry goes at once, without the lock (one
        dict operation; the key's module is gone, so no block() is at work on it, and a
        module made later may have the same id); the free where the backend's lock is free
        at once, else at the next submit or sync (stream.later)."""
        allocation = self._blocks.pop(key, None)
        if allocation is None:
            return
        lock = self._backend._lock
        if lock.acquire(blocking=False):    # (not held by this thread: free() may wait)
            lock.release()
            self._backend.free(allocation)
        else:
            later(lambda: self._backend.free(allocation))

    def address(self, ordinal: int, variables: ModuleVariables, name: str) -> tuple[int, int]:
        """(device address, size) of the module's variable `name`."""
        found = variables.offsets.get(name)
        if found is None:
            raise UnsupportedFeatureError(
                f"the module variable {name!r}", "spirv", None,
                "it is a texture, sampler or surface reference or an .extern declaration, "
                "which the SPIR-V target keeps no memory for")
        block = self.block(ordinal, variables)
        offset, size = found
        return (block.address + offset if block is not None else 0), size


class DeviceHeaps:
    """The device heap of each device (CUDA's device-side malloc and free, the SPIR-V
    target's spirv_heap.py): allocated with its header on the first launch of a kernel whose
    module calls malloc or free, `size` bytes (cudaLimitMallocHeapSize), which is fixed from
    then on, as CUDA fixes it."""

    def __init__(self, backend) -> None:
        from ptxport.codegen.targets.spirv_heap import DEFAULT_SIZE

        self._backend = backend
        self._lock = threading.Lock()
        self._heaps: dict[int, Allocation] = {}
        self.size = DEFAULT_SIZE

    def set_size(self, nbytes: int) -> None:
        with self._lock:
            check_heap_size(nbytes, bool(self._heaps), "opencl", "launched")
            self.size = nbytes

    def heap(self, ordinal: int) -> Allocation:
        """Device `ordinal`'s heap, made on first use."""
        from ptxport.codegen.targets.spirv_heap import HEADER, initial_header

        with self._lock:
            found = self._heaps.get(ordinal)
            if found is not None:
                return found
            if self._backend.address_scheme(ordinal) != "svm":
                raise UnsupportedFeatureError(
                    "device-side malloc and free", "spirv", None,
                    f"opencl:{ordinal} has no shared virtual memory, so the host cannot know "
                    "the device addresses malloc returns")
            allocation = self._backend.allocate(ordinal, HEADER + self.size)
            header = np.zeros(HEADER // 8, np.uint64)
            words = initial_header(self.size)
            header[:len(words)] = words
            self._backend.copy(allocation.address, header.ctypes.data, HEADER, "htod")
            self._heaps[ordinal] = allocation
            return allocation


def check_heap_size(nbytes: int, made: bool, backend: str, when: str) -> None:
    """cudaLimitMallocHeapSize's checks for a backend whose kernels use the SPIR-V-style device
    heap (codegen/targets/spirv_heap.py): fixed once a heap is `made` (a kernel using malloc
    or free was `when`: loaded, launched), and at most the heap's MAX_SIZE."""
    from ptxport.codegen.targets.spirv_heap import MAX_SIZE

    if made:
        raise InvalidValueError(
            "the device heap's size cannot change once a kernel that uses malloc or free has "
            f"been {when} (CUDA fixes cudaLimitMallocHeapSize then)")
    if not 0 <= nbytes <= MAX_SIZE:
        raise InvalidValueError(f"a device heap of {nbytes} bytes: the {backend} backend's "
                                f"heap holds at most {MAX_SIZE} bytes")
