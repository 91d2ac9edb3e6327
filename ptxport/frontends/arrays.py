"""Arrays for the Python kernel front ends (Triton, numba-cuda): host arrays on a device.

Triton and numba-cuda kernels take arrays, not Buffers: Triton asks an argument for its
`data_ptr()` and `dtype`, numba for its shape, strides and data pointer. DeviceArray is that
object over a ptxport Buffer. On the cpu device a numpy array (or torch CPU tensor) is
wrapped in place, so kernels write the caller's memory; on devices whose kernels see only
device memory (opencl) it is copied in, and `numpy()` copies the result back.

`staged(obj, device)` is what the launchers call for an argument: a DeviceArray stays as it
is; host memory (a numpy array, a torch CPU tensor) becomes a DeviceArray for the launch,
copied back after it where the device cannot address it in place.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ptxport.errors import ArgumentError, InvalidValueError
from ptxport.runtime import Buffer, Device

__all__ = ["DeviceArray", "copy_back", "device_array", "staged"]


class DeviceArray:
    """A typed, shaped view of a ptxport Buffer, as Triton and numba kernels take arrays.

    Made by `device_array`. `data_ptr()`, `dtype`, `shape`, `stride()`, `numel()` and
    `element_size()` are what Triton's launcher asks of a tensor; `numpy()` gives the values
    (a view without a copy on the cpu device, else a copy).
    """

    def __init__(self, buffer: Buffer, dtype, shape: tuple[int, ...],
                 host: np.ndarray | None = None):
        self.buffer = buffer
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(n) for n in shape)
        # the host array this one mirrors (copied back by `staged`'s caller), if any
        self._host = host

    @property
    def device(self) -> Device:
        return self.buffer.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """C-order strides in bytes, as numpy's."""
        return tuple(s * self.dtype.itemsize for s in self.stride())

    def stride(self, dim: int | None = None):
        """C-order strides in elements, as torch's Tensor.stride()."""
        strides, step = [], 1
        for n in reversed(self.shape):
            strides.append(step)
            step *= n
        strides = tuple(reversed(strides))
        return strides if dim is None else strides[dim]

    def data_ptr(self) -> int:
        return self.buffer.handle

    def numel(self) -> int:
        return prod(self.shape)

    @property
    def size(self) -> int:
        return self.numel()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        """The values: a view on devices the host can address (sync first: launches through
        the front ends do), else a copy made after the device's work so far."""
        if self.buffer.is_host_accessible:
            return self.buffer.view(self.dtype, self.shape)
        out = np.empty(self.shape, self.dtype)
        stream = self.device.default_stream
        self.buffer.copy_to(out, stream=stream)
        stream.sync()
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def device_array(obj, device: Device | None = None, *, dtype=None, shape=None) -> DeviceArray:
    """`obj` on `device` (the cpu device if None) as a DeviceArray.

    obj : numpy array, torch CPU tensor, Buffer, or a shape (tuple/int) for a new array
        A host array is wrapped in place on the cpu device and copied onto other devices; a
        Buffer is viewed as `dtype` and `shape` (both required); a shape allocates an
        uninitialised array of `dtype`.
    """
    device = Device("cpu") if device is None else device
    if isinstance(obj, Buffer):
        if dtype is None or shape is None:
            raise InvalidValueError("device_array(buffer, ...) needs dtype= and shape=")
        shape = tuple(np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        if prod(shape) * np.dtype(dtype).itemsize > obj.size:
            raise InvalidValueError(f"a {obj.size}-byte buffer cannot hold {shape} of {dtype}")
        return DeviceArray(obj, dtype, shape)
    if isinstance(obj, (int, tuple)):
        shape = (obj,) if isinstance(obj, int) else obj
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        stream = device.default_stream
        buffer = device.allocate(max(prod(shape) * dtype.itemsize, 1), stream=stream)
        return DeviceArray(buffer, dtype, shape)
    array = _host_array(obj)
    if device.backend == "cpu":
        return DeviceArray(Buffer.from_dlpack(array, device=device), array.dtype, array.shape)
    stream = device.default_stream
    buffer = device.allocate(max(array.nbytes, 1), stream=stream)
    if array.nbytes:
        buffer.copy_from(array.reshape(-1).view(np.uint8), stream=stream)
    return DeviceArray(buffer, array.dtype, array.shape)


def _host_array(obj) -> np.ndarray:
    """A C-contiguous numpy view of host memory (numpy arrays, torch CPU tensors)."""
    if isinstance(obj, np.ndarray):
        array = obj
    elif hasattr(obj, "__dlpack__"):
        try:
            array = np.from_dlpack(obj)
        except (RuntimeError, TypeError, BufferError) as e:
            raise InvalidValueError(
                f"cannot use a {type(obj).__name__} as a host array: {e}") from None
    else:
        raise InvalidValueError(
            f"expected a numpy array, a torch CPU tensor or a Buffer, not {type(obj).__name__}")
    if not array.flags.c_contiguous:
        raise InvalidValueError(
            f"the array of shape {array.shape} is not C-contiguous: pass np.ascontiguousarray "
            "of it (and copy the result back)")
    return array


def staged(obj, device: Device, what: str) -> DeviceArray:
    """An argument as a DeviceArray on `device` for one launch (see the module's note);
    the caller copies arrays with `_host` set back after the launch (copy_back)."""
    if isinstance(obj, DeviceArray):
        if obj.device is not device:
            raise ArgumentError(f"{what} is on {obj.device} but the launch is on {device}; "
                                f"make it with device_array(..., device)")
        return obj
    try:
        array = device_array(obj, device)
    except InvalidValueError as e:
        raise ArgumentError(f"{what}: {e}") from None
    if device.backend != "cpu":
        array._host = _host_array(obj)
    return array


def copy_back(arrays: list[DeviceArray]) -> None:
    """After a launch: copy staged arrays that mirror host memory back into it."""
    for array in arrays:
        if array._host is not None and array._host.nbytes:
            stream = array.device.default_stream
            array.buffer.copy_to(array._host.reshape(-1).view(np.uint8), stream=stream)
            stream.sync()
