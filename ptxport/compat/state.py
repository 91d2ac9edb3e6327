"""What the driver shim remembers: the devices it shows (CUDA ordinal -> ptxport Device), the
objects behind CUDA's opaque handles, allocations by address (and the ordinal of the device
each belongs to), the current context per thread, and the sticky error.

The calling thread's device (`state.device`) is that of its current context, so the handlers
that act "on the device" act on the one the program chose with cudaSetDevice / cuCtxSetCurrent.

Handles are the `id()` of the Python object they stand for (never 0, and no two live objects
share one); `objects` keeps each alive until its destroy call. Small helpers read and write C
values at raw addresses, which is how results go back to the caller.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import threading

from ptxport.errors import InvalidValueError, PtxportError
from ptxport.runtime import Buffer, Device, Stream

__all__ = ["CudaError", "State", "devices_named", "put", "read_string", "state"]

# CUresult values used here (cuda.h's cudaError_enum)
SUCCESS = 0
INVALID_VALUE = 1
OUT_OF_MEMORY = 2
NOT_INITIALIZED = 3
INVALID_DEVICE = 101
INVALID_CONTEXT = 201
INVALID_PTX = 218
INVALID_HANDLE = 400
NOT_FOUND = 500
NOT_READY = 600
ILLEGAL_ADDRESS = 700
LAUNCH_OUT_OF_RESOURCES = 701
ASSERT = 710
COOPERATIVE_LAUNCH_TOO_LARGE = 720
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
        self._devices: list[Device] | None = None
        self.objects: dict[int, object] = {}
        self.allocations: dict[int, Buffer] = {}    # start address -> buffer
        self.homes: dict[int, int] = {}             # start address -> its device's ordinal
        self._starts: list[int] = []                # sorted starts, for address lookups
        self._lock = threading.Lock()
        self.current = threading.local()
        self.sticky = 0                             # the error a kernel fault left, or 0
        self.per_thread_streams: list[Stream] = []  # each thread's default stream

    @property
    def devices(self) -> list[Device]:
        """The devices the program sees, CUDA ordinal i being devices[i]: those PTXPORT_DEVICE
        names (`ptxport run --device cpu,opencl:0`), else the best device present."""
        if self._devices is None:
            self._devices = devices_named(os.environ.get("PTXPORT_DEVICE") or "")
        return self._devices

    def device_at(self, ordinal: int) -> Device:
        """The device of CUDA ordinal `ordinal`; CUDA_ERROR_INVALID_DEVICE for no such one."""
        devices = self.devices
        if not 0 <= ordinal < len(devices):
            shown = ", ".join(f"{i} ({d})" for i, d in enumerate(devices))
            raise CudaError(INVALID_DEVICE, f"there is no device {ordinal}: ptxport shows "
                                            f"{len(devices)}: {shown}")
        return devices[ordinal]

    @property
    def ordinal(self) -> int:
        """The ordinal of the device of the calling thread's current context (0 if none)."""
        handle = getattr(self.current, "context", None)
        return getattr(self.objects.get(handle), "ordinal", 0) if handle else 0

    @property
    def device(self) -> Device:
        """The device of the calling thread's current context (device 0 if none)."""
        return self.devices[self.ordinal]

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
        """The calling thread's default stream on its current device."""
        streams = self.current.__dict__.setdefault("streams", {})
        stream = streams.get(self.ordinal)
        if stream is None:
            stream = streams[self.ordinal] = self.device.create_stream()
            self.per_thread_streams.append(stream)
        return stream

    # -- allocations ------------------------------------------------------------------------

    # Host threads call CUDA at once, and Python may switch threads between two statements:
    # the table and its sorted index change together under a lock.

    def add_allocation(self, buffer: Buffer, ordinal: int | None = None) -> int:
        """Enter `buffer` (memory of device `ordinal`, the current one if None)."""
        address = buffer.handle
        with self._lock:
            self.allocations[address] = buffer
            self.homes[address] = self.ordinal if ordinal is None else ordinal
            bisect.insort(self._starts, address)
        return address

    def remove_allocation(self, address: int) -> Buffer:
        with self._lock:
            buffer = self.allocations.pop(address, None)
            if buffer is not None:
                del self.homes[address]
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

    def home_of(self, address: int) -> int | None:
        """The ordinal of the device whose allocation holds `address`, or None."""
        buffer = self.allocation_at(address)
        return None if buffer is None else self.homes.get(buffer.handle)

    def device_of(self, address: int) -> Device:
        """The device whose memory `address` is in (the current device for other memory)."""
        ordinal = self.home_of(address)
        return self.device if ordinal is None else self.devices[ordinal]


def devices_named(names: str) -> list[Device]:
    """The devices of a PTXPORT_DEVICE value: comma-separated names ("cpu,opencl:0"; one
    device may be named twice, as two CUDA devices), one group ("group:cpu,opencl:0": one
    CUDA device whose launches the group splits), or "" for the best device present."""
    text = names.strip()
    if text.lower().startswith("group:"):
        from ptxport.runtime.group_device import group_device

        return [group_device(text.lower())]
    if not text:
        return [Device()]
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise InvalidValueError(f"PTXPORT_DEVICE={names!r}: write device names separated by "
                           "commas, e.g. cpu,opencl:0")
    return [Device(part) for part in parts]


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
