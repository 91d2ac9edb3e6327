"""The driver API's handlers for initialisation, versions, devices, contexts, entry points
and export tables (memory.py and execution.py hold the rest).

Each handler takes the C arguments as Python ints (pointers as addresses) and returns a
CUresult, or raises CudaError; dispatch.py turns ptxport's other errors into CUresults.
The devices visible are ptxport's Devices chosen by `ptxport run --device` (PTXPORT_DEVICE:
"cpu,opencl:0" shows two), else the best one present. Each has a primary context; a context
(primary or made by cuCtxCreate) names its device's ordinal, and the thread's current context
decides which device "the device" is for the other handlers (state.device).
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import re
import threading

from ptxport.compat import attributes, dark_api, signatures
from ptxport.compat import library as library_module
from ptxport.compat.driver_names import NAMES
from ptxport.compat.state import (
    INVALID_CONTEXT,
    INVALID_VALUE,
    NOT_SUPPORTED,
    SUCCESS,
    CudaError,
    put,
    read_string,
    state,
)
from ptxport.compat.streams import GREATEST_PRIORITY, LEAST_PRIORITY
from ptxport.errors import PtxportError

# The CUDA version ptxport's driver reports (cuda.h's CUDA_VERSION of the release whose
# interfaces it follows): cudart refuses to start with a driver older than itself.
DRIVER_VERSION = 13050


class Context:
    """A context of device `ordinal`: its primary context, or one made by cuCtxCreate
    (sharing the device's memory and streams: ptxport has one address space per device)."""

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.id = next(_context_ids)        # cuCtxGetId's: unique in the process
        self.storage: dict[int, int] = {}   # cudart's context-local storage: key -> value
        self.flags = 0
        self.retained = 0
        self.peers: set[int] = set()        # ordinals whose memory its kernels may access


_primary: dict[int, Context] = {}
_lock = threading.Lock()
_context_ids = itertools.count(1)


def _check_device(dev: int) -> None:
    state.device_at(dev)   # CUDA_ERROR_INVALID_DEVICE for an ordinal not shown


def primary_context(ordinal: int | None = None) -> Context:
    """The primary context of device `ordinal` (the current device's if None)."""
    ordinal = state.ordinal if ordinal is None else ordinal
    _check_device(ordinal)
    with _lock:
        return _primary.setdefault(ordinal, Context(ordinal))


# -- init and versions -------------------------------------------------------------------------

def cuInit(flags: int) -> int:
    if flags != 0:
        raise CudaError(INVALID_VALUE, f"flags must be 0, not {flags}")
    _ = state.devices  # choose the devices now, so that a bad --device fails here
    return SUCCESS


def cuDriverGetVersion(version: int) -> int:
    put(ctypes.c_int, version, DRIVER_VERSION)
    return SUCCESS


def _exported_symbols() -> dict[str, str]:
    """Base name (cuMemAlloc) -> the exported symbol of the newest version (cuMemAlloc_v2)."""
    best: dict[str, tuple[int, str]] = {}
    for sig in signatures.ENTRY_POINTS:
        match = re.fullmatch(r"(cu\w+?)(?:_v(\d+))?", sig.name)
        if match is None:
            continue
        base, version = match[1], int(match[2] or 1)
        if base not in best or version > best[base][0]:
            best[base] = (version, sig.name)
    return {base: name for base, (_, name) in best.items()}


_SYMBOLS = _exported_symbols()
_DRIVER_NAMES = frozenset(NAMES)
_PER_THREAD = 0x2   # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
_FOUND, _SYMBOL_NOT_FOUND = 0, 1   # CUdriverProcAddressQueryResult


def _proc_address(name: str, flags: int) -> int | None:
    """ptxport's function for driver API function `name` (its per-thread-default-stream
    variant when `flags` asks for it), a stub that reports itself when called for a name
    ptxport does not implement, or None for a name that is no driver API function."""
    lib = library_module.library
    address = None
    if name in _SYMBOLS and flags & _PER_THREAD:
        for suffix in signatures.PER_THREAD_SUFFIXES:
            address = address or lib.address_of(_SYMBOLS[name] + suffix)
    if address is None and name in _SYMBOLS:
        address = lib.address_of(_SYMBOLS[name])
    if address is None and name in _DRIVER_NAMES:
        address = lib.stub_for(name)
    return address


def cuGetProcAddress_v2(symbol: int, pfn: int, cuda_version: int, flags: int,
                        status: int) -> int:
    """Every driver API name gets a function (cudart, which asks for ~480 names at start,
    starts with stubs for those ptxport lacks). A name the driver API does not have gets
    NULL and the status CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, and the call succeeds, as
    NVIDIA's driver answers."""
    address = _proc_address(read_string(symbol), flags)
    put(ctypes.c_void_p, pfn, address)
    if status:
        put(ctypes.c_int, status, _FOUND if address else _SYMBOL_NOT_FOUND)
    return SUCCESS


def cuGetProcAddress(symbol: int, pfn: int, cuda_version: int, flags: int) -> int:
    return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, 0)


_tables: dark_api.ExportTables | None = None


def export_tables() -> dark_api.ExportTables:
    global _tables
    with _lock:
        if _tables is None:
            lib = library_module.library
            _tables = dark_api.ExportTables(lib.address_of, lib.stub_for)
        return _tables


def _trace_unknown_table(key: bytes) -> None:
    """cudart asks for tables it can do without; name them in the trace only."""
    trace = library_module.library.trace if library_module.library else None
    if trace is not None:
        trace.write(f"  (no export table {{{key.hex().upper()}}})\n")


def cuGetExportTable(table: int, guid: int) -> int:
    key = ctypes.string_at(guid, 16) if guid else b""
    address = export_tables().get(key)
    if address is None:  # what NVIDIA's driver answers for a table it does not have
        _trace_unknown_table(key)
        return INVALID_VALUE
    put(ctypes.c_void_p, table, address)
    return SUCCESS


# -- errors ---------------------------------------------------------------------------------

_ERROR_NAMES = {
    0: ("CUDA_SUCCESS", "no error"), 1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    201: ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on "
                                          "the device"),
    301: ("CUDA_ERROR_FILE_NOT_FOUND", "file not found"),
    712: ("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory "
                                                       "range is already mapped"),
    713: ("CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a "
                                                  "registered memory region"),
    401: ("CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present "
                                      "state"),
    218: ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    400: ("CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    500: ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    600: ("CUDA_ERROR_NOT_READY", "device not ready"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    701: ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"),
    710: ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
    719: ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    801: ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    900: ("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is "
                                                   "capturing"),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}
_error_strings: dict[tuple[int, int], ctypes.Array] = {}  # kept alive: callers keep pointers


def _error_text(error: int, which: int, out: int) -> int:
    entry = _ERROR_NAMES.get(error)
    if entry is None:
        put(ctypes.c_void_p, out, None)
        raise CudaError(INVALID_VALUE)
    text = _error_strings.setdefault((error, which), ctypes.create_string_buffer(
        entry[which].encode()))
    put(ctypes.c_void_p, out, ctypes.addressof(text))
    return SUCCESS


def cuGetErrorName(error: int, out: int) -> int:
    return _error_text(error, 0, out)


def cuGetErrorString(error: int, out: int) -> int:
    return _error_text(error, 1, out)


# -- devices --------------------------------------------------------------------------------

def cuDeviceGetCount(count: int) -> int:
    put(ctypes.c_int, count, len(state.devices))
    return SUCCESS


def cuDeviceGet(device: int, ordinal: int) -> int:
    _check_device(ordinal)
    put(ctypes.c_int, device, ordinal)
    return SUCCESS


def device_name(ordinal: int = 0) -> str:
    device = state.device_at(ordinal)
    return f"ptxport {device} ({device.name})"


def cuDeviceGetName(name: int, length: int, dev: int) -> int:
    if length <= 0:
        raise CudaError(INVALID_VALUE, "the length must be positive")
    text = device_name(dev).encode()[:length - 1] + b"\0"
    ctypes.memmove(name, text, len(text))
    return SUCCESS


def device_uuid(ordinal: int = 0) -> bytes:
    """Each ordinal's own (one device named twice shows two devices, and cudart tells
    devices apart by UUID)."""
    suffix = f"#{ordinal}" if ordinal else ""
    return hashlib.md5(f"ptxport:{state.device_at(ordinal)}{suffix}".encode()).digest()


def cuDeviceGetUuid(uuid: int, dev: int) -> int:
    if not uuid:
        raise CudaError(INVALID_VALUE)
    ctypes.memmove(uuid, device_uuid(dev), 16)
    return SUCCESS


cuDeviceGetUuid_v2 = cuDeviceGetUuid


def cuDeviceTotalMem_v2(total: int, dev: int) -> int:
    put(ctypes.c_size_t, total, state.device_at(dev).properties.total_global_memory)
    return SUCCESS


_PCI_BUS_ID = 33   # CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: the ordinal, so that devices differ


def device_attribute(attribute: int, ordinal: int) -> int:
    if attribute == _PCI_BUS_ID:
        _check_device(ordinal)
        return ordinal
    return attributes.attribute(attribute, state.device_at(ordinal).properties)


def cuDeviceGetAttribute(value: int, attribute: int, dev: int) -> int:
    put(ctypes.c_int, value, device_attribute(attribute, dev))
    return SUCCESS


def cuDeviceComputeCapability(major: int, minor: int, dev: int) -> int:
    p = state.device_at(dev).properties
    put(ctypes.c_int, major, p.compute_capability_major)
    put(ctypes.c_int, minor, p.compute_capability_minor)
    return SUCCESS


def cuDeviceGetPCIBusId(bus_id: int, length: int, dev: int) -> int:
    _check_device(dev)
    text = f"0000:{dev:02x}:00.0".encode()[:max(length - 1, 0)] + b"\0"
    ctypes.memmove(bus_id, text, len(text))
    return SUCCESS


# -- contexts -------------------------------------------------------------------------------

def context_handle(ordinal: int | None = None) -> int:
    """The handle of device `ordinal`'s primary context (the current device's if None)."""
    return state.handle(primary_context(ordinal))


def cuDevicePrimaryCtxRetain(pctx: int, dev: int) -> int:
    primary_context(dev).retained += 1
    put(ctypes.c_void_p, pctx, context_handle(dev))
    return SUCCESS


def cuDevicePrimaryCtxRelease_v2(dev: int) -> int:
    context = primary_context(dev)
    context.retained = max(context.retained - 1, 0)
    return SUCCESS


def cuDevicePrimaryCtxReset_v2(dev: int) -> int:
    """Wait for all work, free every allocation and forget the sticky error (cudaDeviceReset,
    the way a program recovers from a kernel fault). Modules stay loaded: cudart keeps the
    handles of the program's kernels."""
    device = state.device_at(dev)
    for _ in range(1 + len(state.objects)):   # each sync reports one stream's failure
        try:
            device.sync()
            break
        except PtxportError:
            continue   # failures of work before the reset die with it, as in CUDA
    for address, home in list(state.homes.items()):
        if home == dev:
            state.remove_allocation(address).close()
    primary_context(dev).peers.clear()
    state.sticky = 0
    return SUCCESS


def cuDevicePrimaryCtxGetState(dev: int, flags: int, active: int) -> int:
    context = primary_context(dev)
    put(ctypes.c_uint, flags, context.flags)
    put(ctypes.c_int, active, int(context.retained > 0))
    return SUCCESS


def cuDevicePrimaryCtxSetFlags_v2(dev: int, flags: int) -> int:
    primary_context(dev).flags = flags
    return SUCCESS


def cuCtxCreate_v2(pctx: int, flags: int, dev: int) -> int:
    """A context of its own handle on device `dev` (sharing its memory and streams: ptxport
    has one address space per device), pushed as the thread's current context."""
    _check_device(dev)
    context = Context(dev)
    context.flags = flags
    handle = state.handle(context)
    cuCtxPushCurrent_v2(handle)
    put(ctypes.c_void_p, pctx, handle)
    return SUCCESS


def cuCtxCreate_v4(pctx: int, params: int, flags: int, dev: int) -> int:
    if params:
        raise CudaError(NOT_SUPPORTED, "context creation parameters (execution affinity, CIG) "
                                       "are not supported yet: pass NULL")
    return cuCtxCreate_v2(pctx, flags, dev)


def cuCtxDestroy_v2(ctx: int) -> int:
    if any(ctx == id(context) for context in _primary.values()):
        raise CudaError(INVALID_CONTEXT, "a primary context cannot be destroyed: use "
                                         "cuDevicePrimaryCtxRelease")
    context = state.release(ctx, Context, "CUcontext")
    state.device_at(context.ordinal).sync()
    if getattr(state.current, "context", None) == ctx:
        stack = state.current.__dict__.get("stack") or [None]
        state.current.context = stack.pop()
    return SUCCESS


def cuCtxGetCurrent(pctx: int) -> int:
    put(ctypes.c_void_p, pctx, getattr(state.current, "context", None))
    return SUCCESS


def _context_of(handle: int) -> Context:
    if handle == 0:
        handle = getattr(state.current, "context", 0) or 0
    return state.lookup(handle, Context, "CUcontext")


def cuCtxSetCurrent(ctx: int) -> int:
    if ctx:
        _context_of(ctx)
    state.current.context = ctx or None
    return SUCCESS


def cuCtxPushCurrent_v2(ctx: int) -> int:
    _context_of(ctx)
    stack = state.current.__dict__.setdefault("stack", [])
    stack.append(getattr(state.current, "context", None))
    state.current.context = ctx
    return SUCCESS


def cuCtxPopCurrent_v2(pctx: int) -> int:
    current = getattr(state.current, "context", None)
    if current is None:
        raise CudaError(INVALID_CONTEXT, "no context is current")
    if pctx:
        put(ctypes.c_void_p, pctx, current)
    stack = state.current.__dict__.get("stack") or [None]
    state.current.context = stack.pop()
    return SUCCESS


def cuCtxGetDevice(device: int) -> int:
    put(ctypes.c_int, device, state.ordinal)
    return SUCCESS


def cuCtxGetFlags(flags: int) -> int:
    put(ctypes.c_uint, flags, primary_context().flags)
    return SUCCESS


def cuCtxGetApiVersion(ctx: int, version: int) -> int:
    put(ctypes.c_uint, version, 3020)  # contexts of the _v2 API, as CUDA reports
    return SUCCESS


def cuCtxGetId(ctx: int, ctx_id: int) -> int:
    put(ctypes.c_ulonglong, ctx_id, _context_of(ctx).id)
    return SUCCESS


def cuProfilerStart() -> int:
    return SUCCESS   # there is no profiler to start; programs call it around timed parts


def cuProfilerStop() -> int:
    return SUCCESS


def cuCtxSynchronize() -> int:
    state.device.sync()
    return SUCCESS


# cudaLimit values cudart reads: stack size, printf FIFO, malloc heap, ...
_limits: dict[int, int] = {0: 1024, 1: 1 << 20, 2: 8 << 20, 3: 2, 4: 2048, 5: 128}


def cuCtxGetLimit(value: int, limit: int) -> int:
    if limit not in _limits:
        raise CudaError(NOT_SUPPORTED, f"limit {limit} is not supported")
    stack_size = getattr(state.device._backend, "stack_size", None)
    if limit == _STACK_SIZE and stack_size is not None:
        put(ctypes.c_size_t, value, stack_size())
        return SUCCESS
    put(ctypes.c_size_t, value, _limits[limit])
    return SUCCESS


_STACK_SIZE, _MALLOC_HEAP_SIZE = 0, 2     # CU_LIMIT_STACK_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE


def cuCtxSetLimit(limit: int, value: int) -> int:
    if limit not in _limits:
        raise CudaError(NOT_SUPPORTED, f"limit {limit} is not supported")
    set_heap_size = getattr(state.device._backend, "set_heap_size", None)
    if limit == _MALLOC_HEAP_SIZE and set_heap_size is not None:
        # the device heap of kernels' malloc (InvalidValueError once a kernel used it); on
        # cuda:N the real driver's limit
        set_heap_size(value)
    set_stack_size = getattr(state.device._backend, "set_stack_size", None)
    if limit == _STACK_SIZE and set_stack_size is not None:
        # each thread's stack where calls recurse (InvalidValueError past the most it gives)
        set_stack_size(value)
    _limits[limit] = value
    return SUCCESS


def cuCtxGetCacheConfig(config: int) -> int:
    put(ctypes.c_int, config, 0)
    return SUCCESS


def cuCtxSetCacheConfig(config: int) -> int:
    return SUCCESS   # a preference; ptxport's devices have no configurable L1


def cuCtxGetStreamPriorityRange(least: int, greatest: int) -> int:
    if least:
        put(ctypes.c_int, least, LEAST_PRIORITY)
    if greatest:
        put(ctypes.c_int, greatest, GREATEST_PRIORITY)
    return SUCCESS
