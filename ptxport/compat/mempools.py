"""Memory pools, the stream-ordered allocator's own API (driver and runtime): cuMemPoolCreate,
cuMemAllocFromPoolAsync, cuMemPoolSetAttribute/GetAttribute, cuMemPoolTrimTo, each device's
default and current pool, and the cudaMemPool* forms of the same.

A pool keeps the blocks freed into it (cuMemFreeAsync, in stream order) for later allocations
from it, up to its release threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; 0 by default, as in
CUDA); cuMemPoolTrimTo releases kept blocks. A block is reused only after its free ran in its
stream, which is what CUDA's reuse policies allow at the least (a free that ran follows all
the work queued before it). Its counters (reserved and used memory, current and high) count
the bytes of the blocks, as CUDA's do. One difference: CUDA releases memory over the threshold
at the next synchronisation, ptxport when the free runs. Allocations come from the device's
memory (runtime Device.allocate), so kernels, copies and pointer queries treat them as any
other. Pools that export handles (IPC), and pools of host memory, are refused
(CUDA_ERROR_NOT_SUPPORTED).
"""

from __future__ import annotations

import ctypes
import itertools
import threading

from ptxport.compat import streams
from ptxport.compat.state import (
    INVALID_VALUE,
    NOT_SUPPORTED,
    OUT_OF_MEMORY,
    SUCCESS,
    CudaError,
    put,
    state,
)
from ptxport.errors import OutOfMemoryError
from ptxport.runtime import Buffer

_LOCATION_DEVICE, _PINNED = 1, 1     # CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_ALLOCATION_TYPE_PINNED
# CUmemPool_attribute: the reuse policies (int), then the cuuint64_t counters and threshold
_REUSE = (1, 2, 3)
_THRESHOLD, _RESERVED, _RESERVED_HIGH, _USED, _USED_HIGH = 4, 5, 6, 7, 8
_ALLOCATION_TYPE, _EXPORT_TYPES, _LOCATION_ID, _LOCATION_TYPE, _MAX_SIZE = 9, 10, 11, 12, 13


class _PoolProps(ctypes.Structure):
    """CUmemPoolProps (cudaMemPoolProps has the same layout)."""

    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int),
                ("locationType", ctypes.c_int), ("locationId", ctypes.c_int),
                ("win32SecurityAttributes", ctypes.c_void_p), ("maxSize", ctypes.c_size_t),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 54)]


class Pool:
    """One memory pool of device `ordinal`: its kept blocks and counters."""

    _handles = itertools.count(0x7D0000001000, 0x100)   # (opaque, never 0)

    def __init__(self, ordinal: int, max_size: int = 0, default: bool = False):
        self.handle, self.ordinal, self.max_size = next(self._handles), ordinal, max_size
        self.default = default
        self.reuse = {kind: 1 for kind in _REUSE}
        self.threshold = 0
        self.reserved = self.reserved_high = self.used = self.used_high = 0
        self.kept: list[Buffer] = []       # freed blocks, for later allocations
        self.lock = threading.Lock()

    def allocate(self, nbytes: int) -> Buffer:
        """A block of at least `nbytes`: the smallest kept one that fits, else a new one."""
        with self.lock:
            fits = [b for b in self.kept if nbytes <= b.size <= 2 * nbytes]
            block = min(fits, key=lambda b: b.size) if fits else None
            if block is not None:
                self.kept.remove(block)
            elif self.max_size and self.reserved + nbytes > self.max_size:
                raise CudaError(OUT_OF_MEMORY, f"the pool's maxSize ({self.max_size} bytes) "
                                               f"leaves no room for {nbytes} more")
            self.used += nbytes if block is None else block.size
            self.used_high = max(self.used_high, self.used)
        if block is None:
            try:
                block = state.devices[self.ordinal].allocate(nbytes)
            except OutOfMemoryError as e:
                with self.lock:
                    self.used -= nbytes
                raise CudaError(OUT_OF_MEMORY, str(e)) from None
            with self.lock:
                self.reserved += block.size
                self.reserved_high = max(self.reserved_high, self.reserved)
        return block

    def give_back(self, block: Buffer) -> None:
        """Keep a freed block (its free ran in its stream), then release kept blocks over
        the threshold."""
        with self.lock:
            self.used -= block.size
            self.kept.append(block)
        self.trim(self.threshold)

    def trim(self, keep: int) -> None:
        """Release kept blocks, largest first, until at most `keep` bytes are reserved."""
        with self.lock:
            self.kept.sort(key=lambda b: b.size)
            released = []
            while self.kept and self.reserved > keep:
                block = self.kept.pop()
                self.reserved -= block.size
                released.append(block)
        for block in released:
            block.close(state.devices[self.ordinal].default_stream)


class _Pooled:
    """A pool's block in the allocation table, at the size asked for: cuMemFreeAsync
    gives it back to its pool in stream order (close)."""

    def __init__(self, pool: Pool, block: Buffer, nbytes: int):
        self.pool, self.block = pool, block
        self.handle, self.size = block.handle, nbytes

    def close(self, stream=None) -> None:
        block, pool = self.block, self.pool
        target = stream if stream is not None else block.device.default_stream
        # (the block stays the device's: only its place in the allocation table goes now)
        target._submit(lambda: pool.give_back(block), skippable=False,
                       what="the free of a memory pool's allocation")


_pools: dict[int, Pool] = {}               # handle -> pool
_current: dict[int, Pool] = {}             # device ordinal -> its current pool
_defaults: dict[int, Pool] = {}            # device ordinal -> its default pool
_LOCK = threading.Lock()


def _pool(handle: int | None) -> Pool:
    handle = handle or 0
    pool = _pools.get(handle)
    if pool is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a memory pool (destroyed already, "
                                       "or never created)")
    return pool


def default_pool(ordinal: int) -> Pool:
    with _LOCK:
        pool = _defaults.get(ordinal)
        if pool is None:
            pool = _defaults[ordinal] = Pool(ordinal, default=True)
            _pools[pool.handle] = pool
        return pool


def current_pool(ordinal: int) -> Pool:
    return _current.get(ordinal) or default_pool(ordinal)


def allocate_from(pool: Pool, dptr: int, nbytes: int, stream: int) -> int:
    """cuMemAllocFromPoolAsync: the block exists at once (stream order is satisfied)."""
    if not dptr:
        raise CudaError(INVALID_VALUE, "the pointer for the allocation's address is NULL")
    if nbytes == 0:
        raise CudaError(INVALID_VALUE, "cannot allocate 0 bytes")
    streams.ordered(stream)
    block = pool.allocate(nbytes)
    state.add_allocation(_Pooled(pool, block, nbytes), pool.ordinal)
    put(ctypes.c_uint64, dptr, block.handle)
    return SUCCESS


def pool_of(address: int) -> int | None:
    """The handle of the pool `address`'s allocation came from (pointer attribute
    MEMPOOL_HANDLE), or None."""
    allocation = state.allocation_at(address)
    return allocation.pool.handle if isinstance(allocation, _Pooled) else None


# -- the driver API ---------------------------------------------------------------------------

def cuMemPoolCreate(pool_out: int, props: int) -> int:
    if not pool_out or not props:
        raise CudaError(INVALID_VALUE, "cuMemPoolCreate: a NULL pointer")
    p = _PoolProps.from_address(props)
    if p.allocType != _PINNED:
        raise CudaError(INVALID_VALUE, f"allocType {p.allocType}: pools allocate "
                                       "CU_MEM_ALLOCATION_TYPE_PINNED memory")
    if p.locationType != _LOCATION_DEVICE:
        raise CudaError(NOT_SUPPORTED, f"pools of location type {p.locationType}: ptxport "
                                       "makes pools of device memory only")
    state.device_at(p.locationId)       # (CUDA_ERROR_INVALID_DEVICE for one not shown)
    if p.handleTypes:
        raise CudaError(NOT_SUPPORTED, f"pools exporting handles (handleTypes "
                                       f"{p.handleTypes}): ptxport has no IPC")
    pool = Pool(p.locationId, p.maxSize)
    with _LOCK:
        _pools[pool.handle] = pool
    put(ctypes.c_void_p, pool_out, pool.handle)
    return SUCCESS


def cuMemPoolDestroy(handle: int) -> int:
    pool = _pool(handle)
    if pool.default:
        raise CudaError(INVALID_VALUE, "a device's default pool cannot be destroyed")
    with _LOCK:
        del _pools[handle]
        for ordinal, current in list(_current.items()):
            if current is pool:
                del _current[ordinal]
    pool.trim(0)    # (blocks still allocated from it are freed by cuMemFreeAsync as usual)
    return SUCCESS


def cuMemPoolTrimTo(handle: int, keep: int) -> int:
    _pool(handle).trim(keep)
    return SUCCESS


def cuMemPoolSetAttribute(handle: int, attribute: int, value: int) -> int:
    pool = _pool(handle)
    if not value:
        raise CudaError(INVALID_VALUE, "the value pointer is NULL")
    if attribute in _REUSE:
        pool.reuse[attribute] = ctypes.c_int.from_address(value).value
    elif attribute == _THRESHOLD:
        pool.threshold = ctypes.c_uint64.from_address(value).value
        pool.trim(pool.threshold)
    elif attribute in (_RESERVED_HIGH, _USED_HIGH):
        if ctypes.c_uint64.from_address(value).value != 0:
            raise CudaError(INVALID_VALUE, "a high-water mark can only be reset to 0")
        with pool.lock:
            if attribute == _RESERVED_HIGH:
                pool.reserved_high = pool.reserved
            else:
                pool.used_high = pool.used
    else:
        raise CudaError(INVALID_VALUE, f"memory pool attribute {attribute} cannot be set")
    return SUCCESS


def cuMemPoolGetAttribute(handle: int, attribute: int, value: int) -> int:
    pool = _pool(handle)
    if not value:
        raise CudaError(INVALID_VALUE, "the value pointer is NULL")
    ints = {**pool.reuse, _ALLOCATION_TYPE: _PINNED, _EXPORT_TYPES: 0,
            _LOCATION_ID: pool.ordinal, _LOCATION_TYPE: _LOCATION_DEVICE}
    words = {_THRESHOLD: pool.threshold, _RESERVED: pool.reserved,
             _RESERVED_HIGH: pool.reserved_high, _USED: pool.used, _USED_HIGH: pool.used_high,
             _MAX_SIZE: pool.max_size}
    if attribute in ints:
        put(ctypes.c_int, value, ints[attribute])
    elif attribute in words:
        put(ctypes.c_uint64, value, words[attribute])
    else:
        raise CudaError(INVALID_VALUE, f"memory pool attribute {attribute} is not known")
    return SUCCESS


def cuMemAllocFromPoolAsync(dptr: int, nbytes: int, handle: int, stream: int) -> int:
    return allocate_from(_pool(handle), dptr, nbytes, stream)


def cuDeviceGetDefaultMemPool(pool_out: int, device: int) -> int:
    state.device_at(device)
    put(ctypes.c_void_p, pool_out, default_pool(device).handle)
    return SUCCESS


def cuDeviceGetMemPool(pool_out: int, device: int) -> int:
    state.device_at(device)
    put(ctypes.c_void_p, pool_out, current_pool(device).handle)
    return SUCCESS


def cuDeviceSetMemPool(device: int, handle: int) -> int:
    state.device_at(device)
    pool = _pool(handle)
    if pool.ordinal != device:
        raise CudaError(INVALID_VALUE, f"the pool is device {pool.ordinal}'s, not {device}'s")
    _current[device] = pool
    return SUCCESS


class _AccessDesc(ctypes.Structure):
    """CUmemAccessDesc: a location (type, id) and the access flags."""

    _fields_ = [("locationType", ctypes.c_int), ("locationId", ctypes.c_int),
                ("flags", ctypes.c_int)]


_READ_WRITE = 3     # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


def cuMemPoolSetAccess(handle: int, descriptors: int, count: int) -> int:
    """Every device ptxport shows reaches every pool's memory (peers are always enabled):
    read-write access is what each has; less is refused."""
    pool = _pool(handle)
    for d in (_AccessDesc * count).from_address(descriptors) if count else ():
        state.device_at(d.locationId)
        if d.flags != _READ_WRITE and d.locationId != pool.ordinal:
            raise CudaError(NOT_SUPPORTED, "revoking another device's access to a pool: "
                                           "ptxport's devices always reach each other's memory")
    return SUCCESS


def cuMemPoolGetAccess(flags: int, handle: int, location: int) -> int:
    _pool(handle)
    put(ctypes.c_int, flags, _READ_WRITE)
    return SUCCESS


# -- the runtime API (the same arguments) -------------------------------------------------------

cudaMemPoolCreate = cuMemPoolCreate
cudaMemPoolDestroy = cuMemPoolDestroy
cudaMemPoolTrimTo = cuMemPoolTrimTo
cudaMemPoolSetAttribute = cuMemPoolSetAttribute
cudaMemPoolGetAttribute = cuMemPoolGetAttribute
cudaDeviceGetDefaultMemPool = cuDeviceGetDefaultMemPool
cudaDeviceGetMemPool = cuDeviceGetMemPool
cudaDeviceSetMemPool = cuDeviceSetMemPool
cudaMemPoolSetAccess = cuMemPoolSetAccess
cudaMemPoolGetAccess = cuMemPoolGetAccess
cudaMallocFromPoolAsync = cuMemAllocFromPoolAsync
