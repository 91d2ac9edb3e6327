"""What the driver shim remembers: the device it runs on, the objects behind CUDA's opaque
handles, allocations by address, the current context per thread, and the sticky error.

Handles are the `id()` of the Python object they stand for (never 0, and no two live objects
share one); `objects` keeps each alive until its destroy call. Small helpers read and write C
values at raw addresses, which is how results go back to the caller.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import threading

from ptxport.errors import PtxportError
from ptxport.runtime import Buffer, Device, Stream

__all__ = ["CudaError", "State", "put", "read_string", "state"]

# CUresult values used here (cuda.h's cudaError_enum)
SUCCESS = 0
INVALID_VALUE = 1
OUT_OF_MEMORY = 2
NOT_INITIALIZED = 3
INVALID_CONTEXT = 201
INVALID_PTX = 218
INVALID_HANDLE = 400
NOT_FOUND = 500
NOT_READY = 600
ILLEGAL_ADDRESS = 700
LAUNCH_OUT_OF_RESOURCES = 701
ASSERT = 710
LAUNCH_FAILED = 719
NOT_SUPPORTED = 801
UNKNOWN = 999

# The default stream's special handles: 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD.
DEFAULT_STREAMS = (0, 1, 2)
PER_THREAD = 2


class CudaError(PtxportError):
    """A CUDA call fails with `code`; the message (if any) goes to stderr."""

    def __init__(self, code: int, message: str = ""):
        super().__init__(message)
        self.code = code


class State:
    """The driver's state for one process; `state` below is the one instance."""

    def __init__(self) -> None:
        self._device: Device | None = None
        self.objects: dict[int, object] = {}
        self.allocations: dict[int, Buffer] = {}    # start address -> buffer
        self._starts: list[int] = []                # sorted starts, for address lookups
        self._lock = threading.Lock()
        self.current = threading.local()
        self.sticky = 0                             # the error a kernel fault left, or 0
        self.per_thread_streams: list[Stream] = []  # each thread's default stream

    @property
    def device(self) -> Device:
        if self._device is None:
            self._device = Device(os.environ.get("PTXPORT_DEVICE") or None)
        return self._device

    # -- handles ------------------------------------------------------------------------------

    def handle(self, obj: object) -> int:
        self.objects[id(obj)] = obj
        return id(obj)

    def lookup(self, handle: int, kind: type, what: str):
        obj = self.objects.get(handle)
        if not isinstance(obj, kind):
            raise CudaError(INVALID_HANDLE, f"{handle:#x} is not a {what} handle")
        return obj

    def release(self, handle: int, kind: type, what: str):
        obj = self.lookup(handle, kind, what)
        del self.objects[handle]
        return obj

    def stream(self, handle: int) -> Stream:
        """The stream of `handle`: 0 is the legacy default stream, or in a per-thread call
        (a _ptsz entry point) the calling thread's default stream, which CU_STREAM_PER_THREAD
        names too."""
        if handle == PER_THREAD or handle == 0 and getattr(self.current, "per_thread", False):
            return self.per_thread_stream()
        if handle in DEFAULT_STREAMS:
            return self.device.default_stream
        return self.lookup(handle, Stream, "CUstream")

    def per_thread_stream(self) -> Stream:
        stream = getattr(self.current, "stream", None)
        if stream is None:
            stream = self.current.stream = self.device.create_stream()
            self.per_thread_streams.append(stream)
        return stream

    # -- allocations ------------------------------------------------------------------------

    # Host threads call CUDA at once, and Python may switch threads between two statements:
    # the table and its sorted index change together under a lock.

    def add_allocation(self, buffer: Buffer) -> int:
        address = buffer.handle
        with self._lock:
            self.allocations[address] = buffer
            bisect.insort(self._starts, address)
        return address

    def remove_allocation(self, address: int) -> Buffer:
        with self._lock:
            buffer = self.allocations.pop(address, None)
            if buffer is not None:
                del self._starts[bisect.bisect_left(self._starts, address)]
        if buffer is None:
            raise CudaError(INVALID_VALUE, f"{address:#x} is not the start of an allocation "
                                           "(it was freed already, or never allocated)")
        return buffer

    def allocation_at(self, address: int) -> Buffer | None:
        """The allocation holding `address`, if any."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            if i < 0:
                return None
            start = self._starts[i]
            buffer = self.allocations[start]
        return buffer if address < start + max(buffer.size, 1) else None


state = State()


def put(ctype, address: int, value) -> None:
    """Store `value` as a C `ctype` at `address`; a null address is CUDA_ERROR_INVALID_VALUE."""
    if not address:
        raise CudaError(INVALID_VALUE, "a result pointer is NULL")
    ctype.from_address(address).value = value


def read_string(address: int) -> str:
    if not address:
        raise CudaError(INVALID_VALUE, "a string argument is NULL")
    return ctypes.string_at(address).decode("utf-8", "replace")
