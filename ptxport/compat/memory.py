"""The driver API's memory handlers: allocation, copies, fills, pointer queries.

Memory comes from the runtime (Device.allocate, and the backend's allocate_host and
allocate_managed for pinned host and managed memory), so kernels may touch it and the CPU
backend's access checks know it. On the CPU device, and wherever the device shares the
host's address space, pinned and managed memory are device memory, whose pointer is a host
pointer; on cuda:N they are the real driver's (cuMemHostAlloc, cuMemAllocManaged), which the
host reads and writes at the address kernels use. Copies and fills run in stream
order through the backend of the device whose memory they touch; the synchronous forms wait
for their stream, as CUDA's do (streams.py has the ordering). With several devices (`ptxport
run --device cpu,opencl:0`) every allocation belongs to the device current at its allocation
(state.homes), and a copy between two devices' memory (cuMemcpyPeer, or cuMemcpy with unified
addressing) goes straight between them where one side is host memory, else through the host.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ptxport.compat import streams
from ptxport.compat.state import (
    INVALID_CONTEXT,
    INVALID_DEVICE,
    INVALID_VALUE,
    NOT_SUPPORTED,
    SUCCESS,
    CudaError,
    put,
    state,
)
from ptxport.errors import InvalidValueError, OutOfMemoryError
from ptxport.runtime import Buffer


def allocate(address_out: int, nbytes: int, ctype=ctypes.c_uint64, kind: str = "device",
             flags: int = 0) -> int:
    """Allocate `nbytes` of device memory (`kind` "device"), page-locked host memory
    ("host", with cuMemHostAlloc's `flags`) or managed memory ("managed"), through the
    device's backend, and store its address at `address_out`."""
    if not address_out:
        raise CudaError(INVALID_VALUE, "the pointer for the allocation's address is NULL")
    if nbytes == 0:
        raise CudaError(INVALID_VALUE, "cannot allocate 0 bytes")
    device = state.device
    try:
        if kind == "device":
            buffer = device.allocate(nbytes)
        else:
            # Host-addressable memory: the backend's own kind (the real driver's on cuda:N),
            # device memory where that is host memory already (the backends' default).
            backend, ordinal = device._backend, device.device_id
            allocation = backend.allocate_host(ordinal, nbytes, flags) if kind == "host" \
                else backend.allocate_managed(ordinal, nbytes)
            buffer = Buffer(device, allocation, device.default_stream)
    except OutOfMemoryError as e:
        raise CudaError(2, str(e)) from None
    put(ctype, address_out, state.add_allocation(buffer))
    return SUCCESS


# What CUDA tells apart and ptxport's device memory does not: pinned or registered host
# memory (its flags, which cuMemHostGetFlags reads back) and managed memory, by start address.
_host_flags: dict[int, int] = {}
_managed: set[int] = set()


def _allocated(address_out: int, ctype) -> int:
    """The address an allocate() call just stored at `address_out`."""
    return ctype.from_address(address_out).value


class ModuleVariable:
    """A module's `__device__`, `__constant__` or `__managed__` variable in the allocation
    table, so that copies, fills and pointer queries treat its address as device memory (on
    cuda:N it is, and the host cannot touch it); the module owns it, and cuMemFree refuses
    it."""

    def __init__(self, address: int, size: int):
        self.handle, self.size = address, size

    def close(self, stream=None) -> None:
        pass


def note_module_variable(address: int, size: int, managed: bool) -> None:
    """Enter a module variable found by cuModuleGetGlobal (and the like) in the table."""
    if state.allocation_at(address) is None:
        state.add_allocation(ModuleVariable(address, size))
        if managed:
            _managed.add(address)


def _free(address: int) -> int:
    if address == 0:
        return SUCCESS
    if isinstance(state.allocations.get(address), ModuleVariable):
        raise CudaError(INVALID_VALUE, f"{address:#x} is a module's variable, which cuMemFree "
                                       "cannot free")
    streams.legacy_sync()   # cuMemFree synchronises, as CUDA's does
    state.remove_allocation(address).close()
    _host_flags.pop(address, None)
    _managed.discard(address)
    return SUCCESS


def cuMemAlloc_v2(dptr: int, nbytes: int) -> int:
    return allocate(dptr, nbytes)


def cuMemFree_v2(dptr: int) -> int:
    return _free(dptr)


def cuMemAllocHost_v2(pp: int, nbytes: int) -> int:
    return cuMemHostAlloc(pp, nbytes, 0)


def cuMemHostAlloc(pp: int, nbytes: int, flags: int) -> int:
    allocate(pp, nbytes, ctypes.c_void_p, "host", flags)
    _host_flags[_allocated(pp, ctypes.c_void_p)] = flags
    return SUCCESS


def cuMemFreeHost(p: int) -> int:
    return _free(p)


def cuMemAllocManaged(dptr: int, nbytes: int, flags: int) -> int:
    if not state.device.properties.unified_addressing:
        raise CudaError(NOT_SUPPORTED, f"managed memory needs unified addressing, which "
                                       f"{state.device} does not have")
    allocate(dptr, nbytes, kind="managed")
    _managed.add(_allocated(dptr, ctypes.c_uint64))
    return SUCCESS


def cuMemHostGetDevicePointer_v2(pdptr: int, p: int, flags: int) -> int:
    if state.allocation_at(p) is None:
        raise CudaError(INVALID_VALUE, f"{p:#x} is not memory from cuMemHostAlloc")
    put(ctypes.c_uint64, pdptr, p)
    return SUCCESS


def cuMemGetInfo_v2(free: int, total: int) -> int:
    size, ordinal = state.device.properties.total_global_memory, state.ordinal
    used = sum(b.size for a, b in list(state.allocations.items())
               if state.homes.get(a) == ordinal)
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

def copy_kind(dst: int, src: int) -> str:
    """Which side of a copy between two addresses is on the device (cudaMemcpyDefault)."""
    on_device = (state.allocation_at(src) is not None, state.allocation_at(dst) is not None)
    return {(True, True): "dtod", (True, False): "dtoh", (False, True): "htod"}.get(
        on_device, "htoh")


def move_bytes(dst: int, src: int, nbytes: int, kind: str, keep: object = None) -> None:
    """Copy bytes: host to host is the host's memmove; the rest is the backend's of the
    device whose memory it touches. `keep`: what must live until the copy ran (a staging
    buffer)."""
    if kind == "htoh":
        ctypes.memmove(dst, src, nbytes)
        return
    if kind == "htod":
        state.device_of(dst)._backend.copy(dst, src, nbytes, kind)
        return
    if kind == "dtoh":
        state.device_of(src)._backend.copy(dst, src, nbytes, kind)
        return
    to, source = state.device_of(dst), state.device_of(src)
    if to is not source:
        _copy_between_devices(dst, to, src, source, nbytes)
    elif src != dst and src < dst + nbytes and dst < src + nbytes:
        # CUDA leaves overlapping copies undefined; ptxport gives memmove's result on every
        # device (OpenCL refuses overlapping SVM copies), through host memory.
        staging = ctypes.create_string_buffer(nbytes)
        to._backend.copy(ctypes.addressof(staging), src, nbytes, "dtoh")
        to._backend.copy(dst, ctypes.addressof(staging), nbytes, "htod")
    else:
        to._backend.copy(dst, src, nbytes, kind)


def _host_memory(address: int, device) -> bool:
    """Whether the host reads and writes `address` (of `device`'s memory) in place."""
    buffer = state.allocation_at(address)
    return device.backend == "cpu" or buffer is not None and buffer.handle in _host_flags


def _copy_between_devices(dst: int, to, src: int, source, nbytes: int) -> None:
    """A peer copy: where one side is host memory the other device's backend copies from or
    into it; otherwise the bytes are staged through host memory."""
    if _host_memory(src, source):
        to._backend.copy(dst, src, nbytes, "htod")
    elif _host_memory(dst, to):
        source._backend.copy(dst, src, nbytes, "dtoh")
    else:
        staging = ctypes.create_string_buffer(nbytes)
        source._backend.copy(ctypes.addressof(staging), src, nbytes, "dtoh")
        to._backend.copy(dst, ctypes.addressof(staging), nbytes, "htod")


def _copy(dst: int, src: int, nbytes: int, kind: str, stream: int, sync: bool) -> int:
    """Copy in stream order. An asynchronous copy from pageable host memory (not allocated
    through CUDA) is staged at the call, so the program may reuse its buffer at once; one to
    pageable memory, or between two host buffers, completes before the call returns: what
    CUDA documents for pageable memory ("API synchronization behavior")."""
    if nbytes and not (dst and src):
        raise CudaError(INVALID_VALUE, "a copy's source or destination is NULL")
    if not sync and kind in ("htod", "htoh") and state.allocation_at(src) is None:
        staged = ctypes.create_string_buffer(ctypes.string_at(src, nbytes), nbytes)
        source = ctypes.addressof(staged)
        streams.enqueue(stream, lambda: move_bytes(dst, source, nbytes, kind, staged),
                        kind == "htoh")
        return SUCCESS
    if kind == "dtoh" and state.allocation_at(dst) is None:
        sync = True
    if sync and kind == "dtod":
        _after_peer_work(stream, dst, src)
    streams.enqueue(stream, lambda: move_bytes(dst, src, nbytes, kind), sync)
    return SUCCESS


def _after_peer_work(stream: int, dst: int, src: int) -> None:
    """A synchronous copy between two devices' memory serialises with the work of both
    devices (cudaMemcpyPeer's rule), not only with the current device's: the stream waits
    for the other devices' default and blocking streams."""
    current = state.device
    for device in {state.device_of(dst), state.device_of(src)} - {current}:
        streams.wait_for_device(stream, device)


def cuMemcpy(dst: int, src: int, nbytes: int) -> int:
    return _copy(dst, src, nbytes, copy_kind(dst, src), 0, True)


def cuMemcpyAsync(dst: int, src: int, nbytes: int, stream: int) -> int:
    return _copy(dst, src, nbytes, copy_kind(dst, src), stream, False)


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
    backend = state.device_of(dst)._backend
    streams.enqueue(stream, lambda: backend.fill(dst, count * width, value, width), sync)
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


# -- stream-ordered allocation, peers, hints ------------------------------------------------

def cuMemAllocAsync(dptr: int, nbytes: int, stream: int) -> int:
    """From the current device's current memory pool (mempools.py); the memory exists at
    once, which also satisfies stream order."""
    from ptxport.compat import mempools
    return mempools.allocate_from(mempools.current_pool(state.ordinal), dptr, nbytes, stream)


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


_ATTACH_FLAGS = (1, 2, 4)   # CU_MEM_ATTACH_GLOBAL, _HOST, _SINGLE


def cuStreamAttachMemAsync(stream: int, dptr: int, length: int, flags: int) -> int:
    """Attach managed memory to a stream, in the stream's order. ptxport's managed memory is
    where both host and device reach it at any time (host memory on the cpu device), so the
    attachment changes no access; its checks are CUDA's: `dptr` starts a managed allocation
    (length 0 or its whole size), flags is one of GLOBAL, HOST, SINGLE, and SINGLE needs a
    stream of its own (not the NULL stream)."""
    if flags not in _ATTACH_FLAGS:
        raise CudaError(INVALID_VALUE, f"flags {flags:#x} are not one of CU_MEM_ATTACH_GLOBAL, "
                                       "_HOST or _SINGLE")
    if flags == 4 and stream == 0:
        raise CudaError(INVALID_VALUE, "CU_MEM_ATTACH_SINGLE cannot attach to the NULL stream")
    buffer = state.allocations.get(dptr)
    if buffer is None or dptr not in _managed:
        raise CudaError(INVALID_VALUE, f"{dptr:#x} is not the start of a managed allocation")
    if length not in (0, buffer.size):
        raise CudaError(INVALID_VALUE, f"length {length} is neither 0 nor the allocation's "
                                       f"size ({buffer.size} bytes)")
    streams.enqueue(stream, lambda: None, sync=False)
    return SUCCESS


class _Registered:
    """Host memory registered with cuMemHostRegister, kept in the allocation table (for
    address lookups) like a Buffer: its start, its size, and close() to unregister it."""

    def __init__(self, allocation, device):
        self._allocation, self._device = allocation, device
        self.handle, self.size = allocation.address, allocation.size

    def close(self) -> None:
        self._device._backend.free(self._allocation)


def cuMemHostRegister_v2(p: int, nbytes: int, flags: int) -> int:
    if not p or not nbytes:
        raise CudaError(INVALID_VALUE, "cannot register a NULL pointer or 0 bytes")
    if state.allocation_at(p) is not None or state.allocation_at(p + nbytes - 1) is not None:
        raise CudaError(712, f"{p:#x} overlaps memory registered or allocated already")
    # a view of the caller's memory (owned by the caller, so the view owns nothing)
    memory = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(p))
    device = state.device
    try:
        allocation = device._backend.register_host_memory(device.device_id, memory)
    except InvalidValueError as e:      # a device whose kernels cannot address host memory
        raise CudaError(NOT_SUPPORTED, str(e)) from None
    state.add_allocation(_Registered(allocation, device))
    _host_flags[p] = flags
    return SUCCESS


def cuMemHostUnregister(p: int) -> int:
    if not isinstance(state.allocations.get(p), _Registered):
        raise CudaError(713, f"{p:#x} is not the start of memory registered with "
                             "cuMemHostRegister")
    streams.legacy_sync()   # kernels queued before may still use it
    state.remove_allocation(p).close()
    _host_flags.pop(p, None)
    return SUCCESS


def cuMemHostGetFlags(flags: int, p: int) -> int:
    buffer = state.allocation_at(p)
    if buffer is None or buffer.handle not in _host_flags:
        raise CudaError(INVALID_VALUE, f"{p:#x} is not memory from cuMemHostAlloc")
    put(ctypes.c_uint, flags, _host_flags[buffer.handle])
    return SUCCESS


# -- peers ----------------------------------------------------------------------------------

PEER_ACCESS_UNSUPPORTED, PEER_ACCESS_ALREADY_ENABLED, PEER_ACCESS_NOT_ENABLED = 217, 704, 705


def can_access_peer(dev: int, peer: int) -> bool:
    """Whether kernels on device `dev` may use addresses of device `peer`'s memory: only
    where both ordinals are one ptxport device (`--device cpu,cpu`). Between two devices
    (cpu and opencl:0) kernels reach only their own device's memory; copies between them
    (cudaMemcpyPeer) work all the same."""
    return dev != peer and state.device_at(dev) is state.device_at(peer)


def cuDeviceCanAccessPeer(can: int, dev: int, peer: int) -> int:
    put(ctypes.c_int, can, int(can_access_peer(dev, peer)))
    return SUCCESS


# CU_DEVICE_P2P_ATTRIBUTE_ values: 1 performance rank, 2 access supported, 3 native atomics,
# 4 CUDA array access, 5 only some native atomics
_P2P_ATTRIBUTES = (1, 2, 3, 4, 5)


def cuDeviceGetP2PAttribute(value: int, attribute: int, src: int, dst: int) -> int:
    if src == dst:
        state.device_at(src)
        raise CudaError(INVALID_DEVICE, f"device {src} and itself have no link")
    if attribute not in _P2P_ATTRIBUTES:
        raise CudaError(INVALID_VALUE, f"{attribute} is not a CUdevice_P2PAttribute")
    access = can_access_peer(src, dst)
    put(ctypes.c_int, value, {1: 0, 5: 0}.get(attribute, int(access)))
    return SUCCESS


def _current_context():
    from ptxport.compat.driver import Context

    handle = getattr(state.current, "context", None)
    if not handle:
        raise CudaError(INVALID_CONTEXT, "no context is current")
    return state.lookup(handle, Context, "CUcontext")


def cuCtxEnablePeerAccess(peer_context: int, flags: int) -> int:
    """Let the current context's kernels use the memory of `peer_context`'s device (one
    way, as in CUDA)."""
    from ptxport.compat.driver import Context

    current = _current_context()
    peer = state.lookup(peer_context, Context, "CUcontext")
    if flags:
        raise CudaError(INVALID_VALUE, f"flags must be 0, not {flags}")
    if peer is current:
        raise CudaError(INVALID_CONTEXT, "a context cannot be its own peer")
    if not can_access_peer(current.ordinal, peer.ordinal):
        raise CudaError(PEER_ACCESS_UNSUPPORTED, f"kernels on {state.device_at(current.ordinal)}"
                                                 f" cannot use memory of "
                                                 f"{state.device_at(peer.ordinal)}: copy "
                                                 "between them (cudaMemcpyPeer) instead")
    if peer.ordinal in current.peers:
        raise CudaError(PEER_ACCESS_ALREADY_ENABLED, f"access to device {peer.ordinal} is "
                                                     "enabled already")
    current.peers.add(peer.ordinal)
    return SUCCESS


def cuCtxDisablePeerAccess(peer_context: int) -> int:
    from ptxport.compat.driver import Context

    current = _current_context()
    peer = state.lookup(peer_context, Context, "CUcontext")
    if peer.ordinal not in current.peers:
        raise CudaError(PEER_ACCESS_NOT_ENABLED, f"access to device {peer.ordinal} was not "
                                                 "enabled")
    current.peers.discard(peer.ordinal)
    return SUCCESS


# -- pointer attributes ---------------------------------------------------------------------

_MEMORYTYPE_HOST, _MEMORYTYPE_DEVICE = 1, 2


def _pointer_values(ptr: int) -> dict[int, tuple[type, object]]:
    """CUpointer_attribute -> (C type, value) for `ptr`; NULLs and zeros (CUDA's defaults)
    for memory ptxport did not allocate."""
    buffer = state.allocation_at(ptr)
    if buffer is None:
        return {1: (ctypes.c_void_p, None), 2: (ctypes.c_uint, 0), 3: (ctypes.c_uint64, 0),
                4: (ctypes.c_void_p, None), 6: (ctypes.c_int, 0), 8: (ctypes.c_int, 0),
                9: (ctypes.c_int, -2), 11: (ctypes.c_uint64, 0), 12: (ctypes.c_size_t, 0),
                13: (ctypes.c_int, 0)}
    from ptxport.compat.driver import context_handle

    ordinal = state.homes.get(buffer.handle, 0)
    host = buffer.handle in _host_flags
    managed = buffer.handle in _managed
    shared = host or managed or state.devices[ordinal].properties.integrated
    return {
        1: (ctypes.c_void_p, context_handle(ordinal)),    # CONTEXT (the primary one)
        2: (ctypes.c_uint, _MEMORYTYPE_HOST if host else _MEMORYTYPE_DEVICE),
        3: (ctypes.c_uint64, ptr),                        # DEVICE_POINTER
        4: (ctypes.c_void_p, ptr if shared else None),    # HOST_POINTER
        6: (ctypes.c_int, 1),                             # SYNC_MEMOPS
        8: (ctypes.c_int, int(managed)),                  # IS_MANAGED
        9: (ctypes.c_int, ordinal),                       # DEVICE_ORDINAL
        11: (ctypes.c_uint64, buffer.handle),             # RANGE_START_ADDR
        12: (ctypes.c_size_t, buffer.size),               # RANGE_SIZE
        13: (ctypes.c_int, 1),                            # MAPPED
        14: (ctypes.c_ulonglong, 0),                      # ALLOWED_HANDLE_TYPES
        15: (ctypes.c_int, 0),                            # IS_GPU_DIRECT_RDMA_CAPABLE
        16: (ctypes.c_int, 3),                            # ACCESS_FLAGS: read and write
        17: (ctypes.c_void_p, _pool_of(ptr)),             # MEMPOOL_HANDLE
        18: (ctypes.c_size_t, buffer.size),               # MAPPING_SIZE
        19: (ctypes.c_void_p, buffer.handle),             # MAPPING_BASE_ADDR
        20: (ctypes.c_ulonglong, buffer.handle),          # MEMORY_BLOCK_ID
        21: (ctypes.c_int, 0),                            # IS_HW_DECOMPRESS_CAPABLE
        22: (ctypes.c_int, 0),                            # LOCALITY_DOMAIN_ORDINAL
    }


def _pool_of(ptr: int) -> int | None:
    from ptxport.compat import mempools
    return mempools.pool_of(ptr)


def cuPointerGetAttribute(data: int, attribute: int, ptr: int) -> int:
    if state.allocation_at(ptr) is None:
        raise CudaError(INVALID_VALUE)   # what CUDA answers; cudart asks this of host memory
    values = _pointer_values(ptr)
    if attribute not in values:
        raise CudaError(INVALID_VALUE, f"pointer attribute {attribute} is not supported yet")
    ctype, value = values[attribute]
    put(ctype, data, value)
    return SUCCESS


def cuPointerGetAttributes(count: int, attributes: int, data: int, ptr: int) -> int:
    """Several attributes at once; unlike cuPointerGetAttribute, memory CUDA does not know
    is no error: its attributes are NULL or 0 (CUDA's documented behaviour)."""
    if count and not (attributes and data):
        raise CudaError(INVALID_VALUE, "NULL attribute or data array")
    values = _pointer_values(ptr)
    kinds = (ctypes.c_int * count).from_address(attributes) if count else ()
    slots = (ctypes.c_void_p * count).from_address(data) if count else ()
    for kind, slot in zip(kinds, slots, strict=True):
        if kind not in values:
            raise CudaError(INVALID_VALUE, f"pointer attribute {kind} is not supported yet")
        ctype, value = values[kind]
        put(ctype, slot or 0, value)
    return SUCCESS
