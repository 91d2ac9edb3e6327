"""Buffers: device memory, with stream-ordered copies and fills, as cuda.core's Buffer.

Copies take Buffers and host numpy arrays (C-contiguous, of exactly the buffer's size) and
run on a stream like everything else: a host array handed to a copy must stay as it is until
the stream reaches the copy (sync the stream before reading an array copied into). Work
queued on a stream keeps the memory it uses alive, so closing a buffer, or dropping it,
while work is pending is safe.

Where the host can address the device's memory (the CPU device), a buffer is also a numpy
array without a copy: `np.asarray(buf)` and `buf.view(np.float32)` view its bytes, and DLPack
(`np.from_dlpack(buf)`, torch.from_dlpack, ...) exports them as a 1-D uint8 tensor on kDLCPU.
These read memory directly: sync the streams that write it first.
"""

from __future__ import annotations

import operator
import weakref
from typing import TYPE_CHECKING

import numpy as np

from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import Allocation
from ptxport.runtime.stream import Stream

if TYPE_CHECKING:
    from ptxport.runtime.device import Device

__all__ = ["Buffer"]


class Buffer:
    """Device memory; made by Device.allocate."""

    def __init__(self, device: Device, allocation: Allocation, stream: Stream):
        self._device = device
        self._allocation: Allocation | None = allocation
        self._size = allocation.size
        self._stream = stream
        # A buffer dropped without close() is freed in its stream's order all the same.
        self._free = weakref.finalize(self, _free_in_order, device, allocation, stream)

    # -- what it is ---------------------------------------------------------------------------

    @property
    def handle(self) -> int:
        """The device address of the first byte (0 once closed)."""
        return 0 if self._allocation is None else self._allocation.address

    @property
    def size(self) -> int:
        return self._size

    @property
    def device(self) -> Device:
        return self._device

    @property
    def device_id(self) -> int:
        return self._device.device_id

    @property
    def is_device_accessible(self) -> bool:
        return True

    @property
    def is_host_accessible(self) -> bool:
        return self._allocation is not None and self._host_view() is not None

    @property
    def is_closed(self) -> bool:
        return self._allocation is None

    def __repr__(self) -> str:
        state = "closed" if self._allocation is None else f"at {self.handle:#x}"
        return f"<Buffer of {self._size} bytes on {self._device}, {state}>"

    def _live(self) -> Allocation:
        if self._allocation is None:
            raise InvalidValueError(
                f"this buffer of {self._size} bytes on {self._device} is closed: allocate a "
                "new one")
        return self._allocation

    def _host_view(self) -> np.ndarray | None:
        return self._device._backend.host_view(self._live())

    # -- lifetime -------------------------------------------------------------------------------

    def close(self, stream: Stream | None = None) -> None:
        """Free the memory once `stream` (default: the stream it was allocated on) reaches
        this point; the buffer cannot be used afterwards. Closing twice does nothing."""
        if self._allocation is None:
            return
        stream = self._stream if stream is None else _check_stream(stream, self._device)
        allocation, self._allocation = self._allocation, None
        self._free.detach()
        _free_in_order(self._device, allocation, stream)

    # -- copies -------------------------------------------------------------------------------

    def copy_from(self, src: Buffer | np.ndarray, *, stream: Stream) -> None:
        """Copy all of `src` (a Buffer or host array of this buffer's size) into this
        buffer, in `stream`'s order."""
        _check_stream(stream, self._device)
        dst = self._live()
        backend = self._device._backend
        if isinstance(src, Buffer):
            source = _same_device(src, self)._live()
            _check_sizes("source buffer", source.size, "destination buffer", dst.size)
            stream._submit(lambda: backend.copy(dst.address, source.address, dst.size, "dtod"))
            return
        array = _host_array(src, "copy_from", writeable=False)
        _check_sizes("host array", array.nbytes, "buffer", dst.size)
        stream._submit(lambda: backend.copy(dst.address, array.ctypes.data, dst.size, "htod"))

    def copy_to(self, dst: Buffer | np.ndarray | None = None, *, stream: Stream):
        """Copy this buffer into `dst` (a Buffer or writeable host array of its size; a new
        Buffer on this device if None), in `stream`'s order, and return `dst`."""
        _check_stream(stream, self._device)
        if dst is None:
            dst = self._device.allocate(self._size, stream=stream)
        src = self._live()
        backend = self._device._backend
        if isinstance(dst, Buffer):
            target = _same_device(dst, self)._live()
            _check_sizes("source buffer", src.size, "destination buffer", target.size)
            stream._submit(lambda: backend.copy(target.address, src.address, src.size, "dtod"))
            return dst
        array = _host_array(dst, "copy_to", writeable=True)
        _check_sizes("buffer", src.size, "host array", array.nbytes)
        stream._submit(lambda: backend.copy(array.ctypes.data, src.address, src.size, "dtoh"))
        return dst

    def fill(self, value: int, width: int, *, stream: Stream) -> None:
        """Set the buffer to `value` repeated as `width`-byte words (1, 2 or 4, as CUDA's
        cuMemsetD8/D16/D32), in `stream`'s order. The size must be a multiple of `width`."""
        _check_stream(stream, self._device)
        dst = self._live()
        if width not in (1, 2, 4):
            raise InvalidValueError(f"fill width must be 1, 2 or 4 bytes, not {width!r}")
        try:
            value = operator.index(value)
        except TypeError:
            raise InvalidValueError(
                f"fill value must be an int (a bit pattern), not {type(value).__name__}; for "
                "a float, pass its bits, e.g. int(np.float32(x).view(np.uint32))") from None
        if not 0 <= value < 1 << (8 * width):
            raise InvalidValueError(
                f"fill value {value} does not fit in {width} byte(s) (0 to {(1 << 8 * width) - 1})")
        if dst.size % width:
            raise InvalidValueError(
                f"cannot fill {dst.size} bytes with {width}-byte words: the size is not a "
                f"multiple of {width}")
        backend = self._device._backend
        stream._submit(lambda: backend.fill(dst.address, dst.size, value, width))

    # -- host views and DLPack -----------------------------------------------------------------

    def _require_host_view(self) -> np.ndarray:
        view = self._host_view()
        if view is None:
            raise InvalidValueError(
                f"the memory of {self._device} is not addressable from the host: copy it to "
                "a numpy array with copy_to(array, stream=...)")
        return view

    def view(self, dtype=np.uint8) -> np.ndarray:
        """The buffer's bytes as a 1-D numpy array of `dtype`, without a copy (host-
        accessible devices only). Sync the streams that write the buffer before reading."""
        dtype = np.dtype(dtype)
        if dtype.itemsize == 0 or self._size % dtype.itemsize:
            raise InvalidValueError(
                f"cannot view {self._size} bytes as {dtype}: the size is not a multiple of "
                f"{dtype.itemsize}")
        return self._require_host_view().view(dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """The bytes as uint8 without a copy (numpy's protocol: a dtype converts values;
        use view() to reinterpret the bytes)."""
        view = self._require_host_view()
        if dtype is not None and np.dtype(dtype) != view.dtype:
            if copy is False:
                raise ValueError(f"a buffer's bytes cannot become {np.dtype(dtype)} without a "
                                 "copy; use Buffer.view(dtype) to reinterpret them")
            return view.astype(dtype)
        return view.copy() if copy else view

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._require_host_view().__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device._backend.dlpack_device_type, self._device.device_id


def _check_stream(stream, device: Device) -> Stream:
    if not isinstance(stream, Stream):
        raise InvalidValueError(
            f"stream= takes a Stream (Device.create_stream()), not {type(stream).__name__}")
    if stream.device is not device:
        raise InvalidValueError(
            f"a buffer on {device} needs a stream of {device}, not one of {stream.device}")
    return stream


def _free_in_order(device: Device, allocation: Allocation, stream: Stream) -> None:
    backend = device._backend
    try:
        stream._submit(lambda: backend.free(allocation), skippable=False)
    except InvalidValueError:  # the stream is closed: nothing is queued on it any more
        backend.free(allocation)


def _same_device(other: Buffer, this: Buffer) -> Buffer:
    if other._device is not this._device:
        raise InvalidValueError(
            f"cannot copy between buffers of {other._device} and {this._device} directly: "
            "copy through a host numpy array")
    return other


def _check_sizes(src_what: str, src_size: int, dst_what: str, dst_size: int) -> None:
    if src_size != dst_size:
        raise InvalidValueError(
            f"the {src_what} has {src_size} bytes but the {dst_what} has {dst_size}: copies "
            "move whole buffers; slice the host array or allocate a buffer of the right size")


def _host_array(obj, method: str, writeable: bool) -> np.ndarray:
    if not isinstance(obj, np.ndarray):
        raise InvalidValueError(
            f"Buffer.{method} takes a Buffer or a numpy array, not {type(obj).__name__}")
    if not obj.flags.c_contiguous:
        raise InvalidValueError(
            f"Buffer.{method} needs a C-contiguous array: pass np.ascontiguousarray(a)"
            + (" and copy the result back" if writeable else ""))
    if writeable and not obj.flags.writeable:
        raise InvalidValueError(f"Buffer.{method} cannot write into a read-only array")
    return obj
