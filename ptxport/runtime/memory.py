"""Buffers: device memory, with stream-ordered copies and fills, as cuda.core's Buffer.

Copies take Buffers and host numpy arrays (C-contiguous, of exactly the buffer's size) and
run on a stream like everything else: a host array handed to a copy must stay as it is until
the stream reaches the copy (sync the stream before reading an array copied into). Work
queued on a stream keeps the memory it uses alive, so closing a buffer, or dropping it,
while work is pending is safe.

Where the host can address the device's memory (the CPU device), a buffer is also a numpy
array without a copy: `np.asarray(buf)` and `buf.view(np.float32)` view its bytes, and DLPack
(`np.from_dlpack(buf)`, torch.from_dlpack, ...) exports them as a 1-D uint8 tensor on kDLCPU;
`buf.view(dtype, shape)` is a typed array, itself a DLPack producer, for a typed export.
These read memory directly: sync the streams that write it first.

The other way, host memory made elsewhere becomes a Buffer without a copy on the CPU device
(and on cuda:N, which registers it with the driver): Buffer.from_dlpack(obj) (a numpy array,
a torch CPU tensor, any DLPack producer on kDLCPU) and Buffer.from_handle(address, size,
owner=...). Kernels then read and write that memory in place; the buffer keeps its producer
(or owner) alive, and exports it with the producer's
dtype and shape. Closing such a buffer only stops kernels using the memory.
"""

from __future__ import annotations

import ctypes
import operator
import weakref
from typing import TYPE_CHECKING

import numpy as np

from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import Allocation
from ptxport.runtime.stream import Stream, later

if TYPE_CHECKING:
    from ptxport.runtime.device import Device

__all__ = ["Buffer"]


class Buffer:
    """Device memory; made by Device.allocate."""

    def __init__(self, device: Device, allocation: Allocation, stream: Stream,
                 typed: np.ndarray | None = None):
        self._device = device
        self._allocation: Allocation | None = allocation
        self._size = allocation.size
        self._stream = stream
        # what the buffer exports (DLPack, __array_interface__) when it wraps a typed array
        self._typed = typed
        # A buffer dropped without close() is freed in its stream's order all the same.
        self._free = weakref.finalize(self, _free_dropped, device, allocation, stream)

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

    # -- host memory made elsewhere ---------------------------------------------------------

    @classmethod
    def from_dlpack(cls, obj, *, device: Device | None = None) -> Buffer:
        """The host memory of `obj` (a numpy array, a torch CPU tensor, any DLPack producer
        on kDLCPU, contiguous and writeable) as a Buffer of `device` (the cpu device if
        None), without a copy.

        Kernels read and write the memory in place; the buffer keeps `obj`'s memory alive,
        and exports it (np.from_dlpack, np.asarray) with `obj`'s dtype and shape. Only
        devices whose kernels address the host's memory in place can: the cpu device, and
        cuda:N (the memory is registered with the driver, cuMemHostRegister).

        Raises
        ------
        InvalidValueError
            `obj` is no DLPack producer, not on the host, not contiguous or read-only, or
            `device` cannot address host memory; the message says what to do instead.
        """
        device = _device_or_cpu(device)
        array = _host_array_of(obj)
        memory = array.ravel(order="K").view(np.uint8)   # a view: C or F order is contiguous
        allocation = device._backend.register_host_memory(device.device_id, memory)
        return cls(device, allocation, device.default_stream, typed=array)

    @classmethod
    def from_handle(cls, ptr: int, size: int, mr: Device | None = None, *,
                    owner: object = None) -> Buffer:
        """`size` bytes of host memory at address `ptr` as a Buffer of the device `mr` (a
        Device, or an object with a `.device`; the cpu device if None), without a copy:
        cuda.core's Buffer.from_handle, for memory from C code or ctypes.

        `owner` is kept alive as long as the buffer and any work that uses it (the object
        that owns the memory); without one, the caller keeps the memory valid. Only the cpu
        device and cuda:N (registering it with the driver) can wrap host memory.
        """
        device = _device_or_cpu(getattr(mr, "device", mr))
        try:
            ptr, size = operator.index(ptr), operator.index(size)
        except TypeError:
            raise InvalidValueError(
                f"Buffer.from_handle takes an address and a size (ints), not "
                f"{type(ptr).__name__} and {type(size).__name__}") from None
        if size < 0 or (ptr <= 0 and size > 0):
            raise InvalidValueError(
                f"Buffer.from_handle: bad memory range (address {ptr:#x}, {size} bytes)")
        if size:
            window = (ctypes.c_char * size).from_address(ptr)
            window._ptxport_owner = owner     # the byte view's base holds the owner
            memory = np.frombuffer(window, np.uint8)
        else:
            memory = np.zeros(0, np.uint8)
        allocation = device._backend.register_host_memory(device.device_id, memory)
        return cls(device, allocation, device.default_stream)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self, stream: Stream | None = None) -> None:
        """Free the memory once `stream` (default: the stream it was allocated on) reaches
        this point; the buffer cannot be used afterwards. Closing twice does nothing."""
        if self._allocation is None:
            return
        stream = self._stream if stream is None else _check_stream(stream, self._device)
        allocation, self._allocation = self._allocation, None
        self._free.detach()
        _free_in_order(self._device, allocation, stream, at_once=True)

    def _close_in_finalizer(self) -> None:
        """close() for another object's finalizer (the Triton driver's, of a tensor whose
        memory this buffer registered): the free queued on the buffer's stream without
        waiting for a lock, as a dropped buffer's (_free_dropped). Closing twice does
        nothing."""
        if self._allocation is not None:
            self._allocation = None
            self._free()    # (the finalizer, now: it runs once)

    # -- copies -------------------------------------------------------------------------------

    def copy_from(self, src: Buffer | np.ndarray, *, stream: Stream) -> None:
        """Copy all of `src` (a Buffer or host array of this buffer's size) into this
        buffer, in `stream`'s order. `src` may be on another device (a peer copy, staged
        through host memory where neither side is the host's): order the stream after the
        work that writes `src` on its own device first (sync it, or an event)."""
        _check_stream(stream, self._device, src)
        dst = self._live()
        backend = self._device._backend
        if isinstance(src, Buffer):
            source = src._live()
            _check_sizes("source buffer", source.size, "destination buffer", dst.size)
            if src._device is not self._device:
                _submit_peer_copy(stream, src._device, source, self._device, dst)
                return
            stream._submit(lambda: backend.copy(dst.address, source.address, dst.size, "dtod"),
                           what=f"a copy of {dst.size} bytes")
            return
        array = _host_array(src, "copy_from", writeable=False)
        _check_sizes("host array", array.nbytes, "buffer", dst.size)
        stream._submit(lambda: backend.copy(dst.address, array.ctypes.data, dst.size, "htod"),
                       what=f"a copy of {dst.size} bytes")

    def copy_to(self, dst: Buffer | np.ndarray | None = None, *, stream: Stream):
        """Copy this buffer into `dst` (a Buffer or writeable host array of its size; a new
        Buffer on this device if None), in `stream`'s order, and return `dst`. `dst` may be
        on another device (a peer copy, as copy_from)."""
        _check_stream(stream, self._device, dst)
        if dst is None:
            dst = self._device.allocate(self._size, stream=stream)
        src = self._live()
        backend = self._device._backend
        if isinstance(dst, Buffer):
            target = dst._live()
            _check_sizes("source buffer", src.size, "destination buffer", target.size)
            if dst._device is not self._device:
                _submit_peer_copy(stream, self._device, src, dst._device, target)
                return dst
            stream._submit(lambda: backend.copy(target.address, src.address, src.size, "dtod"),
                           what=f"a copy of {src.size} bytes")
            return dst
        array = _host_array(dst, "copy_to", writeable=True)
        _check_sizes("buffer", src.size, "host array", array.nbytes)
        stream._submit(lambda: backend.copy(array.ctypes.data, src.address, src.size, "dtoh"),
                       what=f"a copy of {src.size} bytes")
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
        stream._submit(lambda: backend.fill(dst.address, dst.size, value, width),
                       what=f"a fill of {dst.size} bytes")

    # -- host views and DLPack -----------------------------------------------------------------

    def _require_host_view(self) -> np.ndarray:
        view = self._host_view()
        if view is None:
            raise InvalidValueError(
                f"the memory of {self._device} is not addressable from the host: copy it to "
                "a numpy array with copy_to(array, stream=...)")
        return view

    def view(self, dtype=np.uint8, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
        """The buffer's bytes as a numpy array of `dtype` (1-D, or of `shape` in C order),
        without a copy (host-accessible devices only). The array is a typed DLPack producer
        and has __array_interface__: torch.from_dlpack(buf.view(np.float32, (n, m))). Sync
        the streams that write the buffer before reading."""
        dtype = np.dtype(dtype)
        if dtype.itemsize == 0 or self._size % dtype.itemsize:
            raise InvalidValueError(
                f"cannot view {self._size} bytes as {dtype}: the size is not a multiple of "
                f"{dtype.itemsize}")
        flat = self._require_host_view().view(dtype)
        if shape is None:
            return flat
        try:
            return flat.reshape(shape)
        except (TypeError, ValueError):
            raise InvalidValueError(
                f"cannot view {self._size} bytes as {dtype} of shape {shape!r}: that shape "
                f"holds a different number of elements than {flat.size}") from None

    def _export(self) -> np.ndarray:
        """What DLPack and numpy see: the wrapped array (its dtype and shape) for a buffer
        made from one, else the bytes."""
        view = self._require_host_view()
        return view if self._typed is None else self._typed

    @property
    def __array_interface__(self) -> dict:
        if not self.is_host_accessible:
            # (an AttributeError, so that hasattr() probes say no; np.asarray then reaches
            # __array__, which says why)
            raise AttributeError("this buffer is closed or not addressable from the host")
        return self._export().__array_interface__

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """The bytes as uint8 (or a wrapped array's values) without a copy (numpy's
        protocol: a dtype converts values; use view() to reinterpret the bytes)."""
        view = self._export()
        if dtype is not None and np.dtype(dtype) != view.dtype:
            if copy is False:
                raise ValueError(f"a buffer's bytes cannot become {np.dtype(dtype)} without a "
                                 "copy; use Buffer.view(dtype) to reinterpret them")
            return view.astype(dtype)
        return view.copy() if copy else view

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._export().__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        backend = self._device._backend
        if backend.dlpack_device_type != 1 and self.is_host_accessible:
            # host memory of a GPU (pinned, managed, registered): exported as the host's,
            # which is what the capsule from __dlpack__ (numpy's) says
            return 1, 0
        return backend.dlpack_device_type, self._device.device_id


def _device_or_cpu(device) -> Device:
    from ptxport.runtime.device import Device  # (device.py imports this module)

    if device is None:
        return Device("cpu")
    if not isinstance(device, Device):
        raise InvalidValueError(f"device= takes a Device, not {type(device).__name__}")
    return device


def _host_array_of(obj) -> np.ndarray:
    """`obj`'s memory as a numpy array, through DLPack (no copy), checked for wrapping."""
    if not hasattr(obj, "__dlpack__"):
        raise InvalidValueError(
            f"Buffer.from_dlpack takes a DLPack producer (a numpy array, a torch tensor, ...), "
            f"not {type(obj).__name__}; wrap raw memory with Buffer.from_handle(address, size)")
    kind, _ = obj.__dlpack_device__()
    if kind != 1:   # kDLCPU
        raise InvalidValueError(
            f"Buffer.from_dlpack wraps host memory (DLPack device kDLCPU), but this "
            f"{type(obj).__name__} is on DLPack device type {kind}: copy it to the host first")
    try:
        array = np.from_dlpack(obj)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise InvalidValueError(
            f"numpy cannot view this {type(obj).__name__} through DLPack ({e}); wrap its "
            "memory with Buffer.from_handle(address, size, owner=obj)") from None
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise InvalidValueError(
            f"Buffer.from_dlpack needs contiguous memory, but this {type(obj).__name__} of "
            f"shape {array.shape} has strides {array.strides}: wrap a contiguous copy "
            "(np.ascontiguousarray(a)) and copy the results back")
    if not array.flags.writeable:
        raise InvalidValueError(
            f"this {type(obj).__name__} is read-only, and kernels may write a buffer: wrap a "
            "writeable array (or a copy, a.copy())")
    return array


def _check_stream(stream, device: Device, peer=None) -> Stream:
    """`stream`, checked to be one of `device` (or, for a copy with the Buffer `peer` of
    another device, of that device)."""
    if not isinstance(stream, Stream):
        raise InvalidValueError(
            f"stream= takes a Stream (Device.create_stream()), not {type(stream).__name__}")
    if isinstance(peer, Buffer) and stream.device is peer._device:
        return stream
    if stream.device is not device:
        raise InvalidValueError(
            f"a buffer on {device} needs a stream of {device}, not one of {stream.device}")
    return stream


def _free_dropped(device: Device, allocation: Allocation, stream: Stream) -> None:
    """The finalizer of a buffer dropped without close(): its free queued on its stream, or,
    where the stream's lock is not free at once (the garbage collector may run this inside
    a section of this thread that holds it) or the stream is closed (the backend's lock
    then), at the next _submit or sync (stream.py's docstring says why)."""
    backend = device._backend

    def free() -> None:
        backend.free(allocation)

    if not (stream._close.alive
            and stream._worker.try_submit(free, what="the free of a buffer")):
        later(lambda: _free_in_order(device, allocation, stream))


def _free_in_order(device: Device, allocation: Allocation, stream: Stream,
                   at_once: bool = False) -> None:
    backend = device._backend

    def free() -> None:
        backend.free(allocation)

    try:
        # (`at_once`, from close(): on an idle stream now, on this thread; handing it to the
        # stream's thread cost a thread wake-up, 50 us and more on the GPU machine's VM,
        # before the next launch or sync could go on. Not from the finalizer, which the
        # garbage collector may run while this thread holds the backend's lock.)
        if not (at_once and stream._run_now(free, what="the free of a buffer")):
            stream._submit(free, skippable=False, what="the free of a buffer")
    except InvalidValueError:  # the stream is closed: nothing is queued on it any more
        backend.free(allocation)


def _submit_peer_copy(stream: Stream, src_device: Device, src: Allocation,
                      dst_device: Device, dst: Allocation) -> None:
    """Queue a copy between buffers of two devices on `stream` (one of either device's),
    as cudaMemcpyPeerAsync: ordered after the stream's earlier work only. Where one side's
    memory is the host's (the cpu device) the other backend copies straight from or into
    it; otherwise the bytes are staged through host memory."""
    src_backend, dst_backend = src_device._backend, dst_device._backend
    src_host = src_backend.host_view(src) is not None
    dst_host = dst_backend.host_view(dst) is not None

    def copy() -> None:
        if src_host:
            dst_backend.copy(dst.address, src.address, src.size, "htod")
        elif dst_host:
            src_backend.copy(dst.address, src.address, src.size, "dtoh")
        else:
            staging = np.empty(src.size, np.uint8)
            src_backend.copy(staging.ctypes.data, src.address, src.size, "dtoh")
            dst_backend.copy(dst.address, staging.ctypes.data, src.size, "htod")

    stream._submit(copy, what=f"a copy of {src.size} bytes from {src_device} to {dst_device}")


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
