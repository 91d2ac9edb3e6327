"""Memory resources: cuda.core's allocator interface over a device's memory.

cuda.core allocates through `Device.memory_resource.allocate(size, stream)` and frees through
`deallocate(ptr, size, stream)` (what Buffer.close does there). Here the device's resource
hands out the same Buffers as Device.allocate and frees one by its address, so code written
against either interface works; the memory itself comes from the device's backend.
"""

from __future__ import annotations

import operator
import threading
import weakref
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from ptxport.errors import InvalidValueError
from ptxport.runtime.memory import Buffer

if TYPE_CHECKING:
    from ptxport.runtime.device import Device
    from ptxport.runtime.stream import Stream

__all__ = ["DeviceMemoryResource", "MemoryResource"]


class MemoryResource(ABC):
    """cuda.core's MemoryResource: allocate Buffers, free them by address."""

    @abstractmethod
    def allocate(self, size: int, stream: Stream | None = None) -> Buffer:
        """A Buffer of `size` bytes."""

    @abstractmethod
    def deallocate(self, ptr: int, size: int, stream: Stream | None = None) -> None:
        """Free the memory at `ptr` (a Buffer's handle) of `size` bytes in `stream`'s
        order."""

    @property
    @abstractmethod
    def is_device_accessible(self) -> bool: ...

    @property
    @abstractmethod
    def is_host_accessible(self) -> bool: ...

    @property
    @abstractmethod
    def device_id(self) -> int: ...


class DeviceMemoryResource(MemoryResource):
    """The device memory of one Device, as Device.allocate gives it; Device.memory_resource.

    Parameters
    ----------
    device : Device
    """

    def __init__(self, device: Device):
        self._device = device
        # Buffers handed out and not yet freed, by address: deallocate() finds them there.
        self._buffers: weakref.WeakValueDictionary[int, Buffer] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def allocate(self, size: int, stream: Stream | None = None) -> Buffer:
        """`size` bytes of the device's memory (Device.allocate), aligned to 256 bytes."""
        buffer = self._device.allocate(size, stream=stream)
        with self._lock:
            self._buffers[buffer.handle] = buffer
        return buffer

    def deallocate(self, ptr: int, size: int, stream: Stream | None = None) -> None:
        """Close the Buffer this resource allocated at `ptr` once `stream` (default: the
        stream it was allocated on) gets there.

        Raises
        ------
        InvalidValueError
            `ptr` is not the address of a live buffer from this resource, or `size` is not
            its size.
        """
        try:
            address = operator.index(ptr)
        except TypeError:
            raise InvalidValueError(
                f"deallocate() takes a buffer's address (Buffer.handle, an int), not "
                f"{type(ptr).__name__}") from None
        with self._lock:
            buffer = self._buffers.pop(address, None)
        if buffer is None or buffer.is_closed:
            raise InvalidValueError(
                f"{address:#x} is not the address of a live buffer allocated by "
                f"{self._device}'s memory_resource")
        if size != buffer.size:
            with self._lock:
                self._buffers[address] = buffer
            raise InvalidValueError(
                f"the buffer at {address:#x} has {buffer.size} bytes, not {size}: pass the "
                "size it was allocated with")
        buffer.close(stream)

    @property
    def is_device_accessible(self) -> bool:
        return True

    @property
    def is_host_accessible(self) -> bool:
        """Whether the host can read every buffer directly: on the CPU device only (see
        Buffer.is_host_accessible for one buffer of another device)."""
        return self._device.backend == "cpu"

    @property
    def device_id(self) -> int:
        return self._device.device_id

    def __repr__(self) -> str:
        return f"<DeviceMemoryResource of {self._device}>"
