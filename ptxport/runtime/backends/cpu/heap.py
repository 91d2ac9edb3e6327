"""The device heap on the CPU: CUDA's device-side `malloc` and `free` (and C++'s `new` and
`delete`, which nvcc builds on them).

nvcc compiles them to calls of `.extern .func malloc` and `.extern .func free`, which the CUDA
driver provides. CUDA's semantics (Programming Guide, "Dynamic Global Memory Allocation and
Operations"): one heap per device, of cudaLimitMallocHeapSize bytes (8 MB unless set), fixed
once a kernel that uses malloc or free has been launched; malloc returns memory aligned to 16
bytes, or NULL when the heap cannot hold the request; the memory lives until freed, and is
global memory: other threads, later kernels and the host (through cudaMemcpy) may use it.

On the CPU the calls become native calls of `ptxport_malloc(size)` and `ptxport_free(ptr)`,
ctypes callbacks (they take the GIL and a lock: blocks on several cores allocate safely) into
one process-wide heap: a first-fit allocator over host memory reserved when a kernel that uses
malloc or free is first launched. The whole heap is one range of the launch's access checks
(runtime/backends/cpu/jit.py adds it to every launch once it exists), so a kernel may read memory
another kernel allocated; as on a GPU, an access to freed heap memory is not caught. A `free`
of an address that malloc did not return (or that was freed already) frees nothing and stops
the kernel with IllegalAddressError naming the address.
"""

from __future__ import annotations

import bisect
import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np

from ptxport.codegen.targets.cpu.calls import FREE_SYMBOL, MALLOC_SYMBOL
from ptxport.errors import InvalidValueError, OutOfMemoryError

__all__ = ["DeviceHeap", "HEAP", "DEFAULT_SIZE", "ALIGNMENT"]

DEFAULT_SIZE = 8 << 20           # cudaLimitMallocHeapSize's default
ALIGNMENT = 16                   # what CUDA's device malloc guarantees


class DeviceHeap:
    """A heap of `size` bytes of host memory with first-fit allocation: free blocks are kept
    by address and merged with their neighbours when freed."""

    def __init__(self, size: int = DEFAULT_SIZE):
        self._size = size
        self._memory: np.ndarray | None = None
        self._base = 0
        self._lock = threading.Lock()
        self._free_starts: list[int] = []      # offsets of free blocks, sorted
        self._free_sizes: dict[int, int] = {}  # offset -> size of each free block
        self._used: dict[int, int] = {}        # offset -> size of each allocated block

    @property
    def size(self) -> int:
        return self._size

    def set_size(self, size: int) -> None:
        """cudaDeviceSetLimit(cudaLimitMallocHeapSize): only before the heap is reserved."""
        if size < 0:
            raise InvalidValueError(f"the device heap cannot have {size} bytes")
        with self._lock:
            if self._memory is not None and size != self._size:
                raise InvalidValueError(
                    "the device heap's size is fixed once a kernel that uses malloc or free "
                    "has been launched (as in CUDA); set it before the first such launch")
            self._size = size

    def reserve(self) -> None:
        """Reserve the heap's memory (before the first launch of a kernel using malloc or
        free). np.zeros takes pages from the system as they are first touched."""
        with self._lock:
            if self._memory is not None:
                return
            try:
                raw = np.zeros(self._size + ALIGNMENT, np.uint8)
            except MemoryError:
                raise OutOfMemoryError(
                    f"the device heap of {self._size} bytes (cudaLimitMallocHeapSize) does "
                    "not fit in host memory; set a smaller limit") from None
            start = -raw.ctypes.data % ALIGNMENT
            self._memory, self._base = raw, raw.ctypes.data + start
            self._free_starts, self._free_sizes = ([0], {0: self._size}) if self._size \
                else ([], {})

    def range(self) -> tuple[int, int] | None:
        """(address, size) of the reserved heap, None before it is reserved."""
        return None if self._memory is None else (self._base, self._size)

    def malloc(self, size: int) -> int:
        """The address of `size` fresh bytes aligned to 16, or 0 when none are left."""
        need = max(ALIGNMENT, -(-size // ALIGNMENT) * ALIGNMENT)
        with self._lock:
            if self._memory is None:
                return 0
            for i, start in enumerate(self._free_starts):
                have = self._free_sizes[start]
                if have < need:
                    continue
                del self._free_sizes[start]
                if have == need:
                    del self._free_starts[i]
                else:
                    self._free_starts[i] = start + need
                    self._free_sizes[start + need] = have - need
                self._used[start] = need
                return self._base + start
            return 0

    def free(self, address: int) -> bool:
        """Free what malloc returned at `address` (0: nothing to do); False when `address` is
        no live allocation of this heap."""
        if address == 0:
            return True
        with self._lock:
            start = address - self._base
            size = self._used.pop(start, None)
            if size is None:
                return False
            i = bisect.bisect(self._free_starts, start)
            after = start + size
            if i < len(self._free_starts) and self._free_starts[i] == after:   # merge right
                size += self._free_sizes.pop(after)
                del self._free_starts[i]
            if i > 0:                                                          # merge left
                before = self._free_starts[i - 1]
                if before + self._free_sizes[before] == start:
                    self._free_sizes[before] += size
                    return True
            self._free_starts.insert(i, start)
            self._free_sizes[start] = size
            return True


HEAP = DeviceHeap()      # the CPU device's (there is one CPU device)


def _malloc(size: int) -> int:
    return HEAP.malloc(size)


def _free(address: int | None) -> int:
    return int(not HEAP.free(address or 0))


_MALLOC_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(_malloc)
_FREE_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64)(_free)
llvm.add_symbol(MALLOC_SYMBOL, ctypes.cast(_MALLOC_CALLBACK, ctypes.c_void_p).value)
llvm.add_symbol(FREE_SYMBOL, ctypes.cast(_FREE_CALLBACK, ctypes.c_void_p).value)
