"""The runtime API of the drop-in libcudart.so.13: devices, errors, memory, streams, events.

Each function is the runtime's documented behaviour expressed with the driver shim's
handlers (driver.py, memory.py, pitched.py, streams.py, graphs.py), which hold the state:
a program that mixes runtime and driver calls (cudaMalloc, then cuMemcpy) sees one device.
The numbers of cudaError_t equal CUresult's for every error these handlers return
(cudaErrorInvalidValue = CUDA_ERROR_INVALID_VALUE = 1, ... cudaErrorIllegalAddress = 700),
so a driver handler's result is the runtime's. The runtime's own rules are here: the current
device per thread, the primary context made current at the first call of each thread
(cudart_dispatch.py), the last error (cudaGetLastError), memcpy kinds.
"""

from __future__ import annotations

import ctypes
import threading

from ptxport.compat import (
    cudart_device,
    cudart_errors,
    cudart_textures,
    driver,
    graphs,
    memory,
    pitched,
    streams,
)
from ptxport.compat.state import SUCCESS, CudaError, put, state

__all__ = ["last_error", "record_error"]

RUNTIME_VERSION = 13050          # CUDART_VERSION of cuda_runtime_api.h, CUDA 13.5
INVALID_VALUE = 1
INVALID_DEVICE = 101             # cudaErrorInvalidDevice
INVALID_PITCH = 12              # cudaErrorInvalidPitchValue
INVALID_MEMCPY_DIRECTION = 21    # cudaErrorInvalidMemcpyDirection
NOT_READY = 600
NOT_SUPPORTED = 801

_thread = threading.local()      # .error: the thread's last error; .device: its device
_texts: dict[int, ctypes.Array] = {}   # error -> its name and text, kept for the caller


def record_error(code: int) -> None:
    """Remember a failed call's code for cudaGetLastError (cudaErrorNotReady is no error)."""
    if code not in (SUCCESS, NOT_READY):
        _thread.error = code


def last_error() -> int:
    return getattr(_thread, "error", SUCCESS)


# -- errors ---------------------------------------------------------------------------------

def cudaGetLastError() -> int:
    error = last_error()
    _thread.error = SUCCESS
    return error


def cudaPeekAtLastError() -> int:
    return last_error()


def _text_address(key: tuple[int, int], text: str) -> int:
    buffer = _texts.get(key)
    if buffer is None:
        buffer = _texts[key] = ctypes.create_string_buffer(text.encode())
    return ctypes.addressof(buffer)


def cudaGetErrorName(error: int) -> int:
    return _text_address((error, 0), cudart_errors.name(error))


def cudaGetErrorString(error: int) -> int:
    return _text_address((error, 1), cudart_errors.text(error))


# -- devices --------------------------------------------------------------------------------

def cudaGetDeviceCount(count: int) -> int:
    return driver.cuDeviceGetCount(count)


def current_device() -> int:
    """The calling thread's device: its current context's, else the one cudaSetDevice chose
    (0 by default)."""
    if getattr(state.current, "context", None):
        return state.ordinal
    return getattr(_thread, "device", 0)


def make_current(device: int) -> None:
    """Make `device`'s primary context current on this thread (retained once per process,
    as cudart does at a device's first use)."""
    context = driver.primary_context(device)
    if not context.retained:
        context.retained = 1
    driver.cuCtxSetCurrent(driver.context_handle(device))


def cudaGetDevice(device: int) -> int:
    put(ctypes.c_int, device, current_device())
    return SUCCESS


def cudaSetDevice(device: int) -> int:
    driver._check_device(device)   # cudaErrorInvalidDevice (101) for an ordinal not shown
    _thread.device = device
    make_current(device)
    return SUCCESS


def cudaInitDevice(device: int, device_flags: int, flags: int) -> int:
    driver._check_device(device)
    return SUCCESS


def cudaSetDeviceFlags(flags: int) -> int:
    # (less cudaDeviceMapHost)
    return driver.cuDevicePrimaryCtxSetFlags_v2(current_device(), flags & ~0x8)


def cudaGetDeviceFlags(flags: int) -> int:
    value = ctypes.c_uint()
    driver.cuCtxGetFlags(ctypes.addressof(value))
    put(ctypes.c_uint, flags, value.value | 0x8)   # cudaDeviceMapHost: always mapped
    return SUCCESS


def cudaGetDeviceProperties(prop: int, device: int) -> int:
    if not prop:
        raise CudaError(INVALID_VALUE, "the cudaDeviceProp pointer is NULL")
    value = cudart_device.properties(device)
    ctypes.memmove(prop, ctypes.addressof(value), ctypes.sizeof(value))
    return SUCCESS


def cudaDeviceGetAttribute(value: int, attribute: int, device: int) -> int:
    return driver.cuDeviceGetAttribute(value, attribute, device)


def cudaDeviceGetPCIBusId(bus_id: int, length: int, device: int) -> int:
    return driver.cuDeviceGetPCIBusId(bus_id, length, device)


def cudaDeviceSynchronize() -> int:
    return driver.cuCtxSynchronize()


def cudaDeviceReset() -> int:
    _thread.error = SUCCESS
    return driver.cuDevicePrimaryCtxReset_v2(current_device())


def cudaDeviceGetLimit(value: int, limit: int) -> int:
    return driver.cuCtxGetLimit(value, limit)


def cudaDeviceSetLimit(limit: int, value: int) -> int:
    return driver.cuCtxSetLimit(limit, value)


def cudaDeviceGetCacheConfig(config: int) -> int:
    return driver.cuCtxGetCacheConfig(config)


def cudaDeviceSetCacheConfig(config: int) -> int:
    return driver.cuCtxSetCacheConfig(config)


def cudaDeviceGetStreamPriorityRange(least: int, greatest: int) -> int:
    return driver.cuCtxGetStreamPriorityRange(least, greatest)


def cudaDeviceCanAccessPeer(can: int, device: int, peer: int) -> int:
    return memory.cuDeviceCanAccessPeer(can, device, peer)


def cudaDeviceEnablePeerAccess(peer: int, flags: int) -> int:
    """Let the current device's kernels use device `peer`'s memory (memory.can_access_peer
    says where ptxport can)."""
    if peer == current_device():
        raise CudaError(INVALID_DEVICE, f"device {peer} is the current device, not a peer")
    try:
        return memory.cuCtxEnablePeerAccess(driver.context_handle(peer), flags)
    except CudaError as e:   # the runtime's documented code where access cannot be enabled
        if e.code == memory.PEER_ACCESS_UNSUPPORTED:
            raise CudaError(INVALID_DEVICE, str(e)) from None
        raise


def cudaDeviceDisablePeerAccess(peer: int) -> int:
    if peer == current_device():
        raise CudaError(INVALID_DEVICE, f"device {peer} is the current device, not a peer")
    return memory.cuCtxDisablePeerAccess(driver.context_handle(peer))


def cudaDeviceGetP2PAttribute(value: int, attribute: int, src: int, dst: int) -> int:
    return memory.cuDeviceGetP2PAttribute(value, attribute, src, dst)


def cudaDriverGetVersion(version: int) -> int:
    return driver.cuDriverGetVersion(version)


def cudaRuntimeGetVersion(version: int) -> int:
    put(ctypes.c_int, version, RUNTIME_VERSION)
    return SUCCESS


# -- memory ---------------------------------------------------------------------------------

def cudaMalloc(pointer: int, size: int) -> int:
    if size == 0:   # the runtime answers a 0-byte request with NULL, successfully
        put(ctypes.c_void_p, pointer, None)
        return SUCCESS
    return memory.cuMemAlloc_v2(pointer, size)


def cudaFree(pointer: int) -> int:
    return memory.cuMemFree_v2(pointer)


def cudaMallocHost(pointer: int, size: int) -> int:
    return memory.cuMemHostAlloc(pointer, size, 0)


def cudaHostAlloc(pointer: int, size: int, flags: int) -> int:
    return memory.cuMemHostAlloc(pointer, size, flags)


def cudaFreeHost(pointer: int) -> int:
    return memory.cuMemFreeHost(pointer)


def cudaMallocManaged(pointer: int, size: int, flags: int) -> int:
    return memory.cuMemAllocManaged(pointer, size, flags)


def cudaHostRegister(pointer: int, size: int, flags: int) -> int:
    return memory.cuMemHostRegister_v2(pointer, size, flags)


def cudaHostUnregister(pointer: int) -> int:
    return memory.cuMemHostUnregister(pointer)


def cudaHostGetDevicePointer(device: int, host: int, flags: int) -> int:
    return memory.cuMemHostGetDevicePointer_v2(device, host, flags)


def cudaHostGetFlags(flags: int, host: int) -> int:
    return memory.cuMemHostGetFlags(flags, host)


def cudaMallocAsync(pointer: int, size: int, stream: int) -> int:
    return memory.cuMemAllocAsync(pointer, size, stream)


def cudaFreeAsync(pointer: int, stream: int) -> int:
    return memory.cuMemFreeAsync(pointer, stream)


def cudaMemGetInfo(free: int, total: int) -> int:
    return memory.cuMemGetInfo_v2(free, total)


class _PointerAttributes(ctypes.Structure):
    """struct cudaPointerAttributes (driver_types.h)."""

    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", ctypes.c_void_p), ("hostPointer", ctypes.c_void_p),
                ("reserved", ctypes.c_long * 8)]


_UNREGISTERED, _HOST, _DEVICE, _MANAGED = 0, 1, 2, 3   # cudaMemoryType


def cudaPointerGetAttributes(attributes: int, pointer: int) -> int:
    """Memory CUDA does not know is cudaMemoryTypeUnregistered, successfully (CUDA 11+)."""
    if not attributes:
        raise CudaError(INVALID_VALUE, "the cudaPointerAttributes pointer is NULL")
    values = memory._pointer_values(pointer)
    result = _PointerAttributes()
    if state.allocation_at(pointer) is None:
        result.type, result.device, result.hostPointer = _UNREGISTERED, -2, pointer
    else:
        managed, kind = values[8][1], values[2][1]
        result.type = _MANAGED if managed else _HOST if kind == 1 else _DEVICE
        result.devicePointer, result.hostPointer = values[3][1], values[4][1]
        result.device = values[9][1]
    ctypes.memmove(attributes, ctypes.addressof(result), ctypes.sizeof(result))
    return SUCCESS


def _check_kind(kind: int) -> None:
    if not 0 <= kind <= 4:
        raise CudaError(INVALID_MEMCPY_DIRECTION, f"{kind} is not a cudaMemcpyKind")


def cudaMemcpy(dst: int, src: int, count: int, kind: int) -> int:
    _check_kind(kind)
    return memory.cuMemcpy(dst, src, count)   # unified addressing: the addresses tell


def cudaMemcpyAsync(dst: int, src: int, count: int, kind: int, stream: int) -> int:
    _check_kind(kind)
    return memory.cuMemcpyAsync(dst, src, count, stream)


def cudaMemcpyPeer(dst: int, dst_device: int, src: int, src_device: int, count: int) -> int:
    return memory.cuMemcpyPeer(dst, driver.context_handle(dst_device), src,
                               driver.context_handle(src_device), count)


def cudaMemcpyPeerAsync(dst: int, dst_device: int, src: int, src_device: int, count: int,
                        stream: int) -> int:
    return memory.cuMemcpyPeerAsync(dst, driver.context_handle(dst_device), src,
                                    driver.context_handle(src_device), count, stream)


def cudaMemset(pointer: int, value: int, count: int) -> int:
    return memory.cuMemsetD8_v2(pointer, value & 0xFF, count)


def cudaMemsetAsync(pointer: int, value: int, count: int, stream: int) -> int:
    return memory.cuMemsetD8Async(pointer, value & 0xFF, count, stream)


def cudaMallocPitch(pointer: int, pitch: int, width: int, height: int) -> int:
    if not width or not height:
        raise CudaError(INVALID_VALUE, f"a {width} x {height} pitched allocation")
    return pitched.cuMemAllocPitch_v2(pointer, pitch, width, height, 16)


def cudaMalloc3D(pitched_ptr: int, width: int, height: int, depth: int) -> int:
    """struct cudaPitchedPtr {ptr, pitch, xsize, ysize} for a width x height x depth box."""
    if not pitched_ptr:
        raise CudaError(INVALID_VALUE, "the cudaPitchedPtr pointer is NULL")
    address, pitch = ctypes.c_void_p(), ctypes.c_size_t()
    pitched.cuMemAllocPitch_v2(ctypes.addressof(address), ctypes.addressof(pitch),
                               max(width, 1), max(height, 1) * max(depth, 1), 16)
    (ctypes.c_size_t * 4).from_address(pitched_ptr)[:] = (address.value, pitch.value,
                                                          width, height)
    return SUCCESS


def _copy_2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
             kind: int, stream: int, sync: bool) -> int:
    _check_kind(kind)
    if width > dpitch or width > spitch:
        raise CudaError(INVALID_PITCH, f"rows of {width} bytes are wider than a pitch "
                                       f"(source {spitch}, destination {dpitch})")
    copy = pitched._Memcpy2D(srcMemoryType=4, srcHost=src, srcDevice=src, srcPitch=spitch,
                             dstMemoryType=4, dstHost=dst, dstDevice=dst, dstPitch=dpitch,
                             WidthInBytes=width, Height=height)
    return pitched._copy_2d(ctypes.addressof(copy), stream, sync)


def cudaMemcpy2D(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                 kind: int) -> int:
    return _copy_2d(dst, dpitch, src, spitch, width, height, kind, 0, True)


def cudaMemcpy2DAsync(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                      kind: int, stream: int) -> int:
    return _copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, False)


def cudaMemset2D(pointer: int, pitch: int, value: int, width: int, height: int) -> int:
    return pitched._fill_2d(pointer, pitch, value & 0xFF, width, height, 1, 0, True)


def cudaMemset2DAsync(pointer: int, pitch: int, value: int, width: int, height: int,
                      stream: int) -> int:
    return pitched._fill_2d(pointer, pitch, value & 0xFF, width, height, 1, stream, False)


def cudaMemset3DAsync(ptr: int, pitch: int, xsize: int, ysize: int, value: int, width: int,
                      height: int, depth: int, stream: int) -> int:
    """Rows of `width` bytes, `height` per slice, `depth` slices of `ysize` rows each."""
    for z in range(depth):
        pitched._fill_2d(ptr + z * ysize * pitch, pitch, value & 0xFF, width, height, 1,
                         stream, False)
    return SUCCESS


def cudaMemset3D(ptr: int, pitch: int, xsize: int, ysize: int, value: int, width: int,
                 height: int, depth: int) -> int:
    cudaMemset3DAsync(ptr, pitch, xsize, ysize, value, width, height, depth, 0)
    streams.legacy_sync()
    return SUCCESS


class _Memcpy3DParms(ctypes.Structure):
    """struct cudaMemcpy3DParms (driver_types.h): arrays, positions (x in bytes for linear
    memory), cudaPitchedPtrs, the extent (width in bytes) and the kind."""

    _fields_ = [("srcArray", ctypes.c_void_p), ("srcPos", ctypes.c_size_t * 3),
                ("srcPtr", ctypes.c_size_t * 4), ("dstArray", ctypes.c_void_p),
                ("dstPos", ctypes.c_size_t * 3), ("dstPtr", ctypes.c_size_t * 4),
                ("extent", ctypes.c_size_t * 3), ("kind", ctypes.c_int)]


def _copy_3d(parms: int, stream: int, sync: bool) -> int:
    if not parms:
        raise CudaError(INVALID_VALUE, "the cudaMemcpy3DParms pointer is NULL")
    p = _Memcpy3DParms.from_address(parms)
    if p.srcArray or p.dstArray:
        return cudart_textures.copy_3d(p, stream, sync)
    _check_kind(p.kind)
    (sx, sy, sz), (dx, dy, dz) = p.srcPos, p.dstPos
    src, src_pitch, _, src_height = p.srcPtr
    dst, dst_pitch, _, dst_height = p.dstPtr
    copy = pitched._Memcpy3D(
        srcXInBytes=sx, srcY=sy, srcZ=sz, srcMemoryType=4, srcHost=src, srcDevice=src,
        srcPitch=src_pitch, srcHeight=src_height,
        dstXInBytes=dx, dstY=dy, dstZ=dz, dstMemoryType=4, dstHost=dst, dstDevice=dst,
        dstPitch=dst_pitch, dstHeight=dst_height,
        WidthInBytes=p.extent[0], Height=p.extent[1], Depth=p.extent[2])
    return pitched._copy_3d(ctypes.addressof(copy), stream, sync)


def cudaMemcpy3D(parms: int) -> int:
    return _copy_3d(parms, 0, True)


def cudaMemcpy3DAsync(parms: int, stream: int) -> int:
    return _copy_3d(parms, stream, False)


def cudaMemPrefetchAsync(pointer: int, count: int, location: int, flags: int,
                         stream: int) -> int:
    return memory.cuMemPrefetchAsync_v2(pointer, count, location, flags, stream)


def cudaMemAdvise(pointer: int, count: int, advice: int, location: int) -> int:
    return memory.cuMemAdvise_v2(pointer, count, advice, location)


# -- the driver's entry points ----------------------------------------------------------------

library_directory = ""   # where this libcudart.so.13 is, and ptxport's libcuda.so.1 beside it


def cudaGetDriverEntryPointByVersion(symbol: int, function: int, version: int, flags: int,
                                     status: int) -> int:
    """A driver function of ptxport's libcuda.so.1 (loaded from this library's directory if
    the program has not loaded it), as cuGetProcAddress gives it: the flags (default, legacy
    stream, per-thread stream) and the query result have the driver's values."""
    from ptxport.compat import library as library_module

    if library_module.library is None:
        library_module.library = library_module.Library(f"{library_directory}/libcuda.so.1")
    return driver.cuGetProcAddress_v2(symbol, function, version, flags, status)


def cudaGetDriverEntryPoint(symbol: int, function: int, flags: int, status: int) -> int:
    return cudaGetDriverEntryPointByVersion(symbol, function, RUNTIME_VERSION, flags, status)


def cudaProfilerStart() -> int:
    return driver.cuProfilerStart()


def cudaProfilerStop() -> int:
    return driver.cuProfilerStop()


# -- streams, events, graphs -----------------------------------------------------------------

def cudaStreamCreate(stream: int) -> int:
    return streams.cuStreamCreate(stream, 0)


def cudaStreamCreateWithFlags(stream: int, flags: int) -> int:
    return streams.cuStreamCreate(stream, flags)


def cudaStreamCreateWithPriority(stream: int, flags: int, priority: int) -> int:
    return streams.cuStreamCreateWithPriority(stream, flags, priority)


def cudaStreamDestroy(stream: int) -> int:
    return streams.cuStreamDestroy_v2(stream)


def cudaStreamSynchronize(stream: int) -> int:
    return streams.cuStreamSynchronize(stream)


def cudaStreamQuery(stream: int) -> int:
    return streams.cuStreamQuery(stream)


def cudaStreamWaitEvent(stream: int, event: int, flags: int) -> int:
    return streams.cuStreamWaitEvent(stream, event, flags)


def cudaStreamGetFlags(stream: int, flags: int) -> int:
    return streams.cuStreamGetFlags(stream, flags)


def cudaStreamGetPriority(stream: int, priority: int) -> int:
    return streams.cuStreamGetPriority(stream, priority)


def cudaStreamAddCallback(stream: int, callback: int, data: int, flags: int) -> int:
    return streams.cuStreamAddCallback(stream, callback, data, flags)


def cudaLaunchHostFunc(stream: int, fn: int, data: int) -> int:
    return streams.cuLaunchHostFunc(stream, fn, data)


def cudaStreamAttachMemAsync(stream: int, pointer: int, length: int, flags: int) -> int:
    return memory.cuStreamAttachMemAsync(stream, pointer, length, flags)


def cudaStreamBeginCapture(stream: int, mode: int) -> int:
    return graphs.cuStreamBeginCapture_v2(stream, mode)


def cudaStreamEndCapture(stream: int, graph: int) -> int:
    return graphs.cuStreamEndCapture(stream, graph)


def cudaStreamIsCapturing(stream: int, status: int) -> int:
    return graphs.cuStreamIsCapturing(stream, status)


def cudaStreamGetCaptureInfo(stream: int, status: int, capture_id: int, graph: int,
                             dependencies: int, edges: int, count: int) -> int:
    return graphs.cuStreamGetCaptureInfo_v3(stream, status, capture_id, graph, dependencies,
                                            edges, count)


def cudaThreadExchangeStreamCaptureMode(mode: int) -> int:
    return graphs.cuThreadExchangeStreamCaptureMode(mode)


def cudaStreamGetId(stream: int, stream_id: int) -> int:
    return streams.cuStreamGetId(stream, stream_id)


def cudaStreamGetDevice(stream: int, device: int) -> int:
    return streams.cuStreamGetDevice(stream, device)


def cudaGraphUpload(graph_exec: int, stream: int) -> int:
    return graphs.cuGraphUpload(graph_exec, stream)


def cudaGraphInstantiate(graph_exec: int, graph: int, flags: int) -> int:
    return graphs.cuGraphInstantiateWithFlags(graph_exec, graph, flags)


def cudaGraphLaunch(graph_exec: int, stream: int) -> int:
    return graphs.cuGraphLaunch(graph_exec, stream)


def cudaGraphExecDestroy(graph_exec: int) -> int:
    return graphs.cuGraphExecDestroy(graph_exec)


def cudaGraphDestroy(graph: int) -> int:
    return graphs.cuGraphDestroy(graph)


def cudaEventCreate(event: int) -> int:
    return streams.cuEventCreate(event, 0)


def cudaEventCreateWithFlags(event: int, flags: int) -> int:
    return streams.cuEventCreate(event, flags)


def cudaEventRecord(event: int, stream: int) -> int:
    return streams.cuEventRecord(event, stream)


def cudaEventRecordWithFlags(event: int, stream: int, flags: int) -> int:
    return streams.cuEventRecordWithFlags(event, stream, flags)


def cudaEventQuery(event: int) -> int:
    return streams.cuEventQuery(event)


def cudaEventSynchronize(event: int) -> int:
    return streams.cuEventSynchronize(event)


def cudaEventDestroy(event: int) -> int:
    return streams.cuEventDestroy_v2(event)


def cudaEventElapsedTime(ms: int, start: int, end: int) -> int:
    return streams.cuEventElapsedTime_v2(ms, start, end)
