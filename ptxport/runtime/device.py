"""Devices: one processor a backend can run kernels on, named "<backend>:<ordinal>".

Device("cpu"), Device("cpu:0"), Device("cuda:1"); Device(0) is ordinal 0 of the best backend
present; Device() is this thread's current device (set_current) or else the best device
present. There is one Device object per name, so `Device("cpu") is Device()` when the CPU is
all there is. Streams, events and buffers come from Device methods, as in cuda.core.
"""

from __future__ import annotations

import operator
import threading
import time
import weakref
from typing import NamedTuple

from ptxport.errors import BackendUnavailableError, InvalidValueError
from ptxport.runtime import backends
from ptxport.runtime.backends import DeviceProperties
from ptxport.runtime.event import Event, EventOptions, timeout_seconds
from ptxport.runtime.memory import Buffer
from ptxport.runtime.memory_resource import DeviceMemoryResource
from ptxport.runtime.stream import Stream

__all__ = ["ComputeCapability", "Device", "DeviceProperties", "best_backend"]


class ComputeCapability(NamedTuple):
    major: int
    minor: int


_devices: dict[tuple[str, int], Device] = {}
_devices_lock = threading.Lock()
_current = threading.local()


def best_backend() -> str:
    """The first backend of backends.KNOWN that can run here and has a device; OpenCL
    devices that are only the host's CPU rank below the cpu backend (which runs more of PTX
    on the same cores)."""
    for name in backends.KNOWN:
        if backends.availability(name)[0] and backends.get(name).device_count() > 0:
            if name == "opencl" and backends.get(name).host_only():
                continue
            return name
    raise BackendUnavailableError("no backend can run here, not even the cpu backend")


def _parse(device_id: str | int | None) -> tuple[str, int]:
    if device_id is None:
        current = getattr(_current, "device", None)
        if current is not None:
            return current._backend_name, current._ordinal
        return best_backend(), 0
    if isinstance(device_id, str):
        name, _, ordinal = device_id.strip().lower().partition(":")
        if not ordinal:
            return name, 0
        if ordinal.isdigit():
            return name, int(ordinal)
        raise InvalidValueError(
            f"bad device name {device_id!r}: write '<backend>' or '<backend>:<number>', "
            "e.g. 'cpu' or 'cuda:0'")
    try:
        return best_backend(), operator.index(device_id)
    except TypeError:
        raise InvalidValueError(
            f"Device() takes a name such as 'cpu' or 'cuda:0', an ordinal or None, "
            f"not {type(device_id).__name__}") from None


class Device:
    """A processor that runs kernels: the host CPU, or (with their backends) a GPU.

    Parameters
    ----------
    device_id : str, int or None
        "cpu", "cuda:0", "hip:1", "opencl:0" ("<backend>" means ordinal 0); an int is an
        ordinal of the best backend present; None is this thread's current device, or else
        the best device present. "group:cpu,opencl:0" gives a DeviceGroup of those devices
        (runtime/group.py), which has the methods used to allocate, copy and launch.

    Raises
    ------
    BackendUnavailableError
        The backend does not exist yet or cannot run here; the message says why.
    InvalidValueError
        The backend has no device of that ordinal.
    """

    def __new__(cls, device_id: str | int | None = None) -> Device:
        if isinstance(device_id, str) and device_id.strip().lower().startswith("group:"):
            from ptxport.runtime.group import group_from_name

            return group_from_name(device_id.strip().lower()[len("group:"):])
        key = _parse(device_id)
        with _devices_lock:
            device = _devices.get(key)
        if device is not None:
            return device
        name, ordinal = key
        backend = backends.get(name)
        count = backend.device_count()
        if not 0 <= ordinal < count:
            raise InvalidValueError(
                f"there is no device {name}:{ordinal}; the {name} backend has {count} "
                f"device(s), {name}:0 to {name}:{count - 1}")
        device = super().__new__(cls)
        device._backend_name, device._ordinal, device._backend = name, ordinal, backend
        device._properties = backend.properties(ordinal)
        device._workers = weakref.WeakSet()
        device._workers_lock = threading.RLock()  # default_stream makes a Stream, which registers
        device._default_stream = None
        with _devices_lock:
            return _devices.setdefault(key, device)

    # -- identity and properties ------------------------------------------------------------

    @property
    def device_id(self) -> int:
        """The ordinal of this device among its backend's."""
        return self._ordinal

    @property
    def backend(self) -> str:
        return self._backend_name

    @property
    def name(self) -> str:
        """The processor's model name (for the CPU, the host's, from /proc/cpuinfo)."""
        return self._properties.name

    @property
    def properties(self) -> DeviceProperties:
        return self._properties

    @property
    def compute_capability(self) -> ComputeCapability:
        """The compute capability whose limits the device presents (the CPU: 9.0)."""
        p = self._properties
        return ComputeCapability(p.compute_capability_major, p.compute_capability_minor)

    @property
    def arch(self) -> str:
        """The compute capability as digits ("90"), as cuda.core's Device.arch."""
        major, minor = self.compute_capability
        return f"{major}{minor}"

    def __repr__(self) -> str:
        return f"<Device {self} ({self.name})>"

    def __str__(self) -> str:
        return f"{self._backend_name}:{self._ordinal}"

    # -- the current device ----------------------------------------------------------------

    def set_current(self) -> None:
        """Make this the device that Device() returns on this thread."""
        _current.device = self

    # -- streams, events, memory ---------------------------------------------------------------

    def create_stream(self) -> Stream:
        return Stream(self)

    @property
    def default_stream(self) -> Stream:
        """A stream made on first use and kept for the device's lifetime. Unlike CUDA's
        legacy default stream it does not synchronise with other streams."""
        stream = self._default_stream   # (asked at every Triton launch: no lock once made)
        if stream is not None:
            return stream
        with self._workers_lock:
            if self._default_stream is None:
                self._default_stream = Stream(self)
            return self._default_stream

    def create_event(self, options: EventOptions | dict | None = None) -> Event:
        """An event to record on this device's streams; options={'enable_timing': True} to
        time with `end - start`."""
        return Event(self, options)

    @property
    def memory_resource(self) -> DeviceMemoryResource:
        """cuda.core's allocator interface to this device's memory: allocate(size, stream)
        gives the Buffers allocate() gives; deallocate(ptr, size, stream) frees one."""
        with self._workers_lock:
            if getattr(self, "_memory_resource", None) is None:
                self._memory_resource = DeviceMemoryResource(self)
            return self._memory_resource

    def allocate(self, size: int, stream: Stream | None = None) -> Buffer:
        """`size` bytes of device memory, aligned to 256 bytes and not initialised.

        The allocation happens at once; `stream` (default: the default stream) is where
        Buffer.close() frees it unless told otherwise.
        """
        try:
            size = operator.index(size)
        except TypeError:
            raise InvalidValueError(
                f"allocate() takes a size in bytes (an int), not {type(size).__name__}") \
                from None
        if size < 0:
            raise InvalidValueError(f"cannot allocate a negative size ({size} bytes)")
        if stream is None:
            stream = self.default_stream
        elif not isinstance(stream, Stream):
            raise InvalidValueError(f"stream= takes a Stream, not {type(stream).__name__}")
        return Buffer(self, self._backend.allocate(self._ordinal, size), stream)

    def sync(self, timeout: float | None = None) -> None:
        """Wait until the work of every stream of this device has run; raise the first
        failure found (the other streams keep theirs for their own sync). With `timeout`
        (seconds, for all streams together), give up then and raise KernelTimeoutError
        naming what still runs (the work goes on)."""
        seconds = timeout_seconds(timeout)
        deadline = None if seconds is None else time.monotonic() + seconds
        with self._workers_lock:
            workers = list(self._workers)
        for worker in workers:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not worker.wait_idle(left):
                raise worker.timeout_error(f"{self!r}.sync(timeout={seconds:g})", seconds,
                                           self)
        for worker in workers:
            error = worker.take_error()
            if error is not None:
                raise error

    def _streams_started(self, worker) -> None:
        with self._workers_lock:
            self._workers.add(worker)
