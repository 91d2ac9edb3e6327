"""The driver API's pitched, 2D and 3D memory handlers: cuMemAllocPitch, cuMemcpy2D,
cuMemcpy3D and cuMemcpy3DPeer (between host memory, device memory and CUDA arrays, which
textures.py keeps), and the 2D memsets. A copy or fill of many rows is one piece of work in
its stream's order.
"""

from __future__ import annotations

import ctypes

from ptxport.compat import streams, textures
from ptxport.compat.memory import allocate, move_bytes
from ptxport.compat.state import INVALID_VALUE, NOT_SUPPORTED, SUCCESS, CudaError, put, state

_PITCH_ALIGNMENT = 512   # what CUDA's cuMemAllocPitch pads rows to on current GPUs


def cuMemAllocPitch_v2(dptr: int, pitch: int, width: int, height: int, element: int) -> int:
    if element not in (4, 8, 16) or not width or not height:
        raise CudaError(INVALID_VALUE, f"width {width}, height {height} and "
                                       f"element size {element} (4, 8 or 16) are not valid")
    row = -(-width // _PITCH_ALIGNMENT) * _PITCH_ALIGNMENT
    put(ctypes.c_size_t, pitch, row)
    return allocate(dptr, row * height)


class _Memcpy2D(ctypes.Structure):
    """CUDA_MEMCPY2D (cuda.h)."""

    _fields_ = [
        ("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
        ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
        ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
        ("srcPitch", ctypes.c_size_t),
        ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
        ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p),
        ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p),
        ("dstPitch", ctypes.c_size_t),
        ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t),
    ]


_HOST, _DEVICE, _ARRAY, _UNIFIED = 1, 2, 3, 4   # CUmemorytype


def _origin(kind: int, host: int, device: int, array: int, x: int, y: int, z: int,
            pitch: int, height: int) -> tuple[int, str, int, int]:
    """A copy's first byte on one side (byte x of row y of slice z), which side it is on,
    and that side's pitch and slice size (a CUDA array's own)."""
    if kind == _ARRAY:
        address, pitch, slice_ = textures.array_origin(array or 0, x, y, z)
        return address, "d", pitch, slice_
    offset = (y + z * height) * pitch + x
    if kind == _HOST:
        return host + offset, "h", pitch, pitch * height
    if kind in (_DEVICE, _UNIFIED):
        address = device + offset
        side = "d" if state.allocation_at(address) is not None else "h"
        return address, side, pitch, pitch * height
    raise CudaError(NOT_SUPPORTED, f"memory type {kind} is not a CUmemorytype")


def _check_arrays(c, depth: int) -> None:
    """The box of a 2D or 3D copy (CUDA_MEMCPY2D has no Z) lies within the arrays it reads
    or writes."""
    for prefix in ("src", "dst"):
        if getattr(c, f"{prefix}MemoryType") == _ARRAY:
            textures.check_box(getattr(c, f"{prefix}Array") or 0,
                               getattr(c, f"{prefix}XInBytes"), getattr(c, f"{prefix}Y"),
                               getattr(c, f"{prefix}Z", 0), c.WidthInBytes, c.Height, depth)


def _copy_2d(copy: int, stream: int, sync: bool) -> int:
    if not copy:
        raise CudaError(INVALID_VALUE, "the CUDA_MEMCPY2D pointer is NULL")
    c = _Memcpy2D.from_address(copy)
    _check_arrays(c, 1)
    if textures.copy_native(c, stream, sync):
        return SUCCESS
    width, height = c.WidthInBytes, c.Height
    src, src_side, src_pitch, _ = _origin(c.srcMemoryType, c.srcHost or 0, c.srcDevice,
                                          c.srcArray, c.srcXInBytes, c.srcY, 0, c.srcPitch, 0)
    dst, dst_side, dst_pitch, _ = _origin(c.dstMemoryType, c.dstHost or 0, c.dstDevice,
                                          c.dstArray, c.dstXInBytes, c.dstY, 0, c.dstPitch, 0)
    if width > src_pitch and height > 1 or width > dst_pitch and height > 1:
        raise CudaError(INVALID_VALUE, f"a 2D copy of rows of {width} bytes needs pitches of "
                                       f"at least that (source {src_pitch}, destination "
                                       f"{dst_pitch})")
    kind = f"{src_side}to{dst_side}"

    def rows() -> None:
        for row in range(height):
            move_bytes(dst + row * dst_pitch, src + row * src_pitch, width, kind)

    streams.enqueue(stream, rows, sync)
    return SUCCESS


def cuMemcpy2D_v2(copy: int) -> int:
    return _copy_2d(copy, 0, True)


def cuMemcpy2DUnaligned_v2(copy: int) -> int:
    return _copy_2d(copy, 0, True)


def cuMemcpy2DAsync_v2(copy: int, stream: int) -> int:
    return _copy_2d(copy, stream, False)


def _fill_2d(dst: int, pitch: int, value: int, width: int, height: int, size: int,
             stream: int, sync: bool) -> int:
    if height > 1 and width * size > pitch:
        raise CudaError(INVALID_VALUE, f"a 2D memset of rows of {width * size} bytes needs a "
                                       f"pitch of at least that, not {pitch}")
    backend = state.device_of(dst)._backend

    def rows() -> None:
        for row in range(height):
            backend.fill(dst + row * pitch, width * size, value, size)

    streams.enqueue(stream, rows, sync)
    return SUCCESS


def cuMemsetD2D8_v2(dst: int, pitch: int, value: int, width: int, height: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 1, 0, True)


def cuMemsetD2D16_v2(dst: int, pitch: int, value: int, width: int, height: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 2, 0, True)


def cuMemsetD2D32_v2(dst: int, pitch: int, value: int, width: int, height: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 4, 0, True)


def cuMemsetD2D8Async(dst: int, pitch: int, value: int, width: int, height: int,
                      stream: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 1, stream, False)


def cuMemsetD2D16Async(dst: int, pitch: int, value: int, width: int, height: int,
                       stream: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 2, stream, False)


def cuMemsetD2D32Async(dst: int, pitch: int, value: int, width: int, height: int,
                       stream: int) -> int:
    return _fill_2d(dst, pitch, value, width, height, 4, stream, False)


class _Memcpy3D(ctypes.Structure):
    """CUDA_MEMCPY3D (cuda.h)."""

    _fields_ = [
        ("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
        ("srcZ", ctypes.c_size_t), ("srcLOD", ctypes.c_size_t),
        ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
        ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
        ("reserved0", ctypes.c_void_p), ("srcPitch", ctypes.c_size_t),
        ("srcHeight", ctypes.c_size_t),
        ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
        ("dstZ", ctypes.c_size_t), ("dstLOD", ctypes.c_size_t),
        ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p),
        ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p),
        ("reserved1", ctypes.c_void_p), ("dstPitch", ctypes.c_size_t),
        ("dstHeight", ctypes.c_size_t),
        ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t),
        ("Depth", ctypes.c_size_t),
    ]


def _copy_3d(copy: int, stream: int, sync: bool) -> int:
    if not copy:
        raise CudaError(INVALID_VALUE, "the CUDA_MEMCPY3D pointer is NULL")
    c = _Memcpy3D.from_address(copy)
    _check_arrays(c, c.Depth)
    if textures.copy_native(c, stream, sync):
        return SUCCESS
    width, height, depth = c.WidthInBytes, c.Height, c.Depth
    src, src_side, src_pitch, src_slice = _origin(
        c.srcMemoryType, c.srcHost or 0, c.srcDevice, c.srcArray, c.srcXInBytes, c.srcY,
        c.srcZ, c.srcPitch, c.srcHeight)
    dst, dst_side, dst_pitch, dst_slice = _origin(
        c.dstMemoryType, c.dstHost or 0, c.dstDevice, c.dstArray, c.dstXInBytes, c.dstY,
        c.dstZ, c.dstPitch, c.dstHeight)
    kind = f"{src_side}to{dst_side}"

    def rows() -> None:
        for z in range(depth):
            for y in range(height):
                move_bytes(dst + z * dst_slice + y * dst_pitch, src + z * src_slice + y * src_pitch,
                      width, kind)

    streams.enqueue(stream, rows, sync)
    return SUCCESS


def cuMemcpy3D_v2(copy: int) -> int:
    return _copy_3d(copy, 0, True)


def cuMemcpy3DAsync_v2(copy: int, stream: int) -> int:
    return _copy_3d(copy, stream, False)


# CUDA_MEMCPY3D_PEER is CUDA_MEMCPY3D with each side's CUcontext where CUDA_MEMCPY3D has a
# reserved pointer; ptxport's contexts all share the one device's memory.
def cuMemcpy3DPeer(copy: int) -> int:
    return _copy_3d(copy, 0, True)


def cuMemcpy3DPeerAsync(copy: int, stream: int) -> int:
    return _copy_3d(copy, stream, False)
