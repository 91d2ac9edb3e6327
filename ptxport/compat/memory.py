"""The driver API's memory handlers: allocation, copies, fills, pointer queries.

Memory comes from the runtime (Device.allocate), so kernels may touch it and the CPU
backend's access checks know it. Pinned host and managed memory are device allocations too:
on the CPU device, and wherever the device shares the host's address space, a device
pointer is a host pointer, which is what both kinds promise. Copies and fills run in stream
order through the device's backend; the synchronous forms wait for their stream, as CUDA's
do (streams.py has the ordering).
"""

from __future__ import annotations

import ctypes

from ptxport.compat import streams
from ptxport.compat.state import (
    INVALID_VALUE,
    NOT_SUPPORTED,
    SUCCESS,
    CudaError,
    put,
    state,
)
from ptxport.errors import OutOfMemoryError


def _allocate(address_out: int, nbytes: int, ctype=ctypes.c_uint64) -> int:
    if not address_out:
        raise CudaError(INVALID_VALUE, "the pointer for the allocation's address is NULL")
    if nbytes == 0:
        raise CudaError(INVALID_VALUE, "cannot allocate 0 bytes")
    try:
        buffer = state.device.allocate(nbytes)
    except OutOfMemoryError as e:
        raise CudaError(2, str(e)) from None
    put(ctype, address_out, state.add_allocation(buffer))
    return SUCCESS


def _free(address: int) -> int:
    if address == 0:
        return SUCCESS
    streams.legacy_sync()   # cuMemFree synchronises, as CUDA's does
    state.remove_allocation(address).close()
    return SUCCESS


def cuMemAlloc_v2(dptr: int, nbytes: int) -> int:
    return _allocate(dptr, nbytes)


def cuMemFree_v2(dptr: int) -> int:
    return _free(dptr)


def cuMemAllocHost_v2(pp: int, nbytes: int) -> int:
    return _allocate(pp, nbytes, ctypes.c_void_p)


def cuMemHostAlloc(pp: int, nbytes: int, flags: int) -> int:
    return _allocate(pp, nbytes, ctypes.c_void_p)


def cuMemFreeHost(p: int) -> int:
    return _free(p)


def cuMemAllocManaged(dptr: int, nbytes: int, flags: int) -> int:
    if not state.device.properties.unified_addressing:
        raise CudaError(NOT_SUPPORTED, f"managed memory needs unified addressing, which "
                                       f"{state.device} does not have")
    return _allocate(dptr, nbytes)


def cuMemHostGetDevicePointer_v2(pdptr: int, p: int, flags: int) -> int:
    if state.allocation_at(p) is None:
        raise CudaError(INVALID_VALUE, f"{p:#x} is not memory from cuMemHostAlloc")
    put(ctypes.c_uint64, pdptr, p)
    return SUCCESS


def cuMemGetInfo_v2(free: int, total: int) -> int:
    size = state.device.properties.total_global_memory
    used = sum(b.size for b in state.allocations.values())
    put(ctypes.c_size_t, free, max(size - used, 0))
    put(ctypes.c_size_t, total, size)
    return SUCCESS


def cuMemGetAddressRange_v2(pbase: int, psize: int, dptr: int) -> int:
    buffer = state.allocation_at(dptr)
    if buffer is None:
        raise CudaError(NOT_SUPPORTED if dptr else INVALID_VALUE,
                        f"{dptr:#x} is not in any allocation")
    if pbase:
        put(ctypes.c_uint64, pbase, buffer.handle)
    if psize:
        put(ctypes.c_size_t, psize, buffer.size)
    return SUCCESS


# -- copies ---------------------------------------------------------------------------------

def _kind(dst: int, src: int) -> str:
    """Which side of a copy between two addresses is on the device (cudaMemcpyDefault)."""
    on_device = (state.allocation_at(src) is not None, state.allocation_at(dst) is not None)
    return {(True, True): "dtod", (True, False): "dtoh", (False, True): "htod"}.get(
        on_device, "htoh")


def _move(dst: int, src: int, nbytes: int, kind: str) -> None:
    """Copy bytes: host to host is the host's memmove; the rest is the backend's."""
    if kind == "htoh":
        ctypes.memmove(dst, src, nbytes)
    else:
        state.device._backend.copy(dst, src, nbytes, kind)


def _copy(dst: int, src: int, nbytes: int, kind: str, stream: int, sync: bool) -> int:
    if nbytes and not (dst and src):
        raise CudaError(INVALID_VALUE, "a copy's source or destination is NULL")
    streams.enqueue(stream, lambda: _move(dst, src, nbytes, kind), sync)
    return SUCCESS


def cuMemcpy(dst: int, src: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, _kind(dst, src), 0, True)


def cuMemcpyAsync(dst: int, src: int, nbytes: int, stream: int) -> int:
    return _copy(dst, src, nbytes, _kind(dst, src), stream, False)


def cuMemcpyHtoD_v2(dst: int, src: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, "htod", 0, True)


def cuMemcpyDtoH_v2(dst: int, src: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, "dtoh", 0, True)


def cuMemcpyDtoD_v2(dst: int, src: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, "dtod", 0, False)   # asynchronous, as CUDA's


def cuMemcpyHtoDAsync_v2(dst: int, src: int, nbytes: int, stream: int) -> int:
    return _copy(dst, src, nbytes, "htod", stream, False)


def cuMemcpyDtoHAsync_v2(dst: int, src: int, nbytes: int, stream: int) -> int:
    return _copy(dst, src, nbytes, "dtoh", stream, False)


def cuMemcpyDtoDAsync_v2(dst: int, src: int, nbytes: int, stream: int) -> int:
    return _copy(dst, src, nbytes, "dtod", stream, False)


# -- fills ----------------------------------------------------------------------------------

def _fill(dst: int, value: int, count: int, width: int, stream: int, sync: bool) -> int:
    if count and not dst:
        raise CudaError(INVALID_VALUE, "a memset's destination is NULL")
    streams.enqueue(
        stream, lambda: state.device._backend.fill(dst, count * width, value, width), sync)
    return SUCCESS


def cuMemsetD8_v2(dst: int, value: int, count: int) -> int:
    return _fill(dst, value, count, 1, 0, True)


def cuMemsetD16_v2(dst: int, value: int, count: int) -> int:
    return _fill(dst, value, count, 2, 0, True)


def cuMemsetD32_v2(dst: int, value: int, count: int) -> int:
    return _fill(dst, value, count, 4, 0, True)


def cuMemsetD8Async(dst: int, value: int, count: int, stream: int) -> int:
    return _fill(dst, value, count, 1, stream, False)


def cuMemsetD16Async(dst: int, value: int, count: int, stream: int) -> int:
    return _fill(dst, value, count, 2, stream, False)


def cuMemsetD32Async(dst: int, value: int, count: int, stream: int) -> int:
    return _fill(dst, value, count, 4, stream, False)


# -- pitched and 2D memory ------------------------------------------------------------------

_PITCH_ALIGNMENT = 512   # what CUDA's cuMemAllocPitch pads rows to on current GPUs


def cuMemAllocPitch_v2(dptr: int, pitch: int, width: int, height: int, element: int) -> int:
    if element not in (4, 8, 16) or not width or not height:
        raise CudaError(INVALID_VALUE, f"cuMemAllocPitch: width {width}, height {height} and "
                                       f"element size {element} (4, 8 or 16) are not valid")
    row = -(-width // _PITCH_ALIGNMENT) * _PITCH_ALIGNMENT
    put(ctypes.c_size_t, pitch, row)
    return _allocate(dptr, row * height)


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


def _origin(kind: int, host: int, device: int, x: int, y: int, pitch: int) -> tuple[int, str]:
    """The address of a 2D copy's first byte on one side, and which side it is on."""
    if kind == _HOST:
        return host + y * pitch + x, "h"
    if kind in (_DEVICE, _UNIFIED):
        address = device + y * pitch + x
        return address, "d" if state.allocation_at(address) is not None else "h"
    raise CudaError(NOT_SUPPORTED, "2D copies to or from CUDA arrays are not supported yet"
                    if kind == _ARRAY else f"memory type {kind} is not a CUmemorytype")


def _copy_2d(copy: int, stream: int, sync: bool) -> int:
    if not copy:
        raise CudaError(INVALID_VALUE, "the CUDA_MEMCPY2D pointer is NULL")
    c = _Memcpy2D.from_address(copy)
    width, height = c.WidthInBytes, c.Height
    if width > c.srcPitch and height > 1 or width > c.dstPitch and height > 1:
        raise CudaError(INVALID_VALUE, f"a 2D copy of rows of {width} bytes needs pitches of "
                                       f"at least that (source {c.srcPitch}, destination "
                                       f"{c.dstPitch})")
    src, src_side = _origin(c.srcMemoryType, c.srcHost or 0, c.srcDevice, c.srcXInBytes,
                            c.srcY, c.srcPitch)
    dst, dst_side = _origin(c.dstMemoryType, c.dstHost or 0, c.dstDevice, c.dstXInBytes,
                            c.dstY, c.dstPitch)
    kind = f"{src_side}to{dst_side}"
    src_pitch, dst_pitch = c.srcPitch, c.dstPitch

    def rows() -> None:
        for row in range(height):
            _move(dst + row * dst_pitch, src + row * src_pitch, width, kind)

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
    backend = state.device._backend

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


# -- stream-ordered allocation, peers, hints ------------------------------------------------

def cuMemAllocAsync(dptr: int, nbytes: int, stream: int) -> int:
    streams.ordered(stream)   # the memory exists at once, which also satisfies stream order
    return _allocate(dptr, nbytes)


def cuMemFreeAsync(dptr: int, stream: int) -> int:
    state.remove_allocation(dptr).close(streams.ordered(stream))
    return SUCCESS


def cuMemcpyPeer(dst: int, dst_ctx: int, src: int, src_ctx: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, "dtod", 0, True)   # one device: its own peer


def cuMemcpyPeerAsync(dst: int, dst_ctx: int, src: int, src_ctx: int, nbytes: int,
                      stream: int) -> int:
    return _copy(dst, src, nbytes, "dtod", stream, False)


def cuMemPrefetchAsync_v2(ptr: int, count: int, location: int, flags: int,
                          stream: int) -> int:
    streams.ordered(stream)
    return SUCCESS   # managed memory is where the device reads it already


def cuMemAdvise_v2(ptr: int, count: int, advice: int, location: int) -> int:
    return SUCCESS   # a hint; ptxport's managed memory does not migrate


def cuMemHostGetFlags(flags: int, p: int) -> int:
    if state.allocation_at(p) is None:
        raise CudaError(INVALID_VALUE, f"{p:#x} is not memory from cuMemHostAlloc")
    put(ctypes.c_uint, flags, 0)
    return SUCCESS


def cuDeviceCanAccessPeer(can: int, dev: int, peer: int) -> int:
    put(ctypes.c_int, can, 0)   # ptxport shows one device, which has no peer
    return SUCCESS


# -- pointer attributes ---------------------------------------------------------------------

_MEMORYTYPE_DEVICE = 2


def cuPointerGetAttribute(data: int, attribute: int, ptr: int) -> int:
    buffer = state.allocation_at(ptr)
    if buffer is None:
        raise CudaError(INVALID_VALUE, f"{ptr:#x} is not memory ptxport allocated")
    values = {
        1: (ctypes.c_void_p, None),                       # CONTEXT (the primary one)
        2: (ctypes.c_uint, _MEMORYTYPE_DEVICE),           # MEMORY_TYPE
        3: (ctypes.c_uint64, ptr),                        # DEVICE_POINTER
        4: (ctypes.c_void_p, ptr if state.device.properties.integrated else None),
        6: (ctypes.c_int, 1),                             # SYNC_MEMOPS
        8: (ctypes.c_int, 0),                             # IS_MANAGED
        9: (ctypes.c_int, 0),                             # DEVICE_ORDINAL
        11: (ctypes.c_uint64, buffer.handle),             # RANGE_START_ADDR
        12: (ctypes.c_size_t, buffer.size),               # RANGE_SIZE
        13: (ctypes.c_int, 1),                            # MAPPED
    }
    if attribute not in values:
        raise CudaError(INVALID_VALUE, f"cuPointerGetAttribute: attribute {attribute} is "
                                       "not supported yet")
    ctype, value = values[attribute]
    if attribute == 1:
        from ptxport.compat.driver import context_handle

        value = context_handle()
    put(ctype, data, value)
    return SUCCESS
