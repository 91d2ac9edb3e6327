"""Dynamic parallelism on the CPU: grids that kernels launch, run after their parent grid.

A kernel's calls of CUDA's device runtime (codegen/device_runtime.py) reach `_device_runtime`
here, a ctypes callback (codegen/targets/cpu/device_runtime.py), with the block context and
the thread's frame. Each grid that may launch grids has a `GridLaunches` record while it runs,
found by its parameter block's address (the context's first field):

- cudaGetParameterBuffer(V2) gives the thread a buffer in the *parameter arena*, a device
  heap of ptxport's own (heap.py's allocator) that is one more allocation of such a launch,
  so that the kernel's stores into it pass the access checks;
- cudaLaunchDevice(V2) checks the launch as CUDA's device runtime does, copies the kernel's
  parameters out of the buffer (which it frees) and queues the child grid; an error is
  returned and becomes the thread's last error (cudaGetLastError / cudaPeekAtLastError,
  per thread, as on the device).

CUDA's semantics (Programming Guide, "CUDA Dynamic Parallelism", CDP2, the only kind on
compute_90 and CUDA 12+): a child grid may start at any time after its launch, grids launched
into one stream (a block's implicit NULL stream, a stream the grid created) run in launch
order, fire-and-forget grids (cudaStreamFireAndForget) in no order with the others, and a
parent grid is complete only once all its child grids are; a tail launch
(cudaStreamTailLaunch) runs after the parent grid and all the work it launched, tail launches
of one grid in their launch order. Nothing in CDP2 lets a parent thread wait for a child
(device-side cudaDeviceSynchronize is gone), so one schedule that honours all of this is the
one used here: when the parent grid's blocks are done, its child grids run one after the
other in launch order, each with its own children and tail launches (depth first), then its
tail launches in order; the launch returns (the host sees it complete) after all of them.
Grids nest at most MAX_DEPTH deep (CUDA's hardware limit of 24): a launch from a grid at that
depth fails with cudaErrorLaunchMaxDepthExceeded. A child grid that faults or traps makes the
host launch of its ancestor raise that error.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from ptxport.codegen.device_runtime import FUNCTIONS
from ptxport.codegen.targets.cpu.abi import CTX, FRAME
from ptxport.codegen.targets.cpu.device_runtime import (
    DEVICE_RUNTIME_SYMBOL,
    KERNEL_ADDRESS_BASE,
    KERNEL_ADDRESS_STRIDE,
)
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.runtime.backends.cpu.heap import HEAP, DeviceHeap

__all__ = ["MAX_DEPTH", "GridLaunches", "attach", "detach", "run_grid"]

MAX_DEPTH = 24
ARENA_SIZE = 4 << 20
PARAMETER_ALIGNMENT = 64
# cudaStream_t values with a meaning of their own on the device (driver_types.h)
NULL_STREAM, PER_THREAD_STREAM, TAIL_LAUNCH, FIRE_AND_FORGET = 0, 2, 3, 4
_DEVICE_STREAM_BASE, _DEVICE_EVENT_BASE = 0x5D00_0000, 0x5E00_0000
_EVENT_DISABLE_TIMING = 2
# cudaError_t
SUCCESS, INVALID_VALUE, MEMORY_ALLOCATION, INVALID_CONFIGURATION = 0, 1, 2, 9
MAX_DEPTH_EXCEEDED, INVALID_DEVICE_FUNCTION, INVALID_RESOURCE_HANDLE = 65, 98, 400
_STREAM_NON_BLOCKING = 1
_BLOCK_LIMITS, _GRID_LIMITS = (1024, 1024, 64), (2**31 - 1, 65535, 65535)
_MAX_SHARED = 227 * 1024

_ARENA = DeviceHeap(ARENA_SIZE)   # the parameter buffers of every grid


@dataclass
class ChildGrid:
    """A grid launched from the device: what to run once its parent grid's blocks are done."""

    kernel: ir.Function
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    params: bytes


@dataclass
class GridLaunches:
    """What the threads of one running grid launched, and their device runtime state."""

    module: ir.Module
    options: object                  # the CpuOptions its kernel was compiled with
    depth: int                       # 0: launched by the host
    children: list[ChildGrid] = field(default_factory=list)
    tails: list[ChildGrid] = field(default_factory=list)
    # (ctaid, tid) -> the thread's last error
    errors: dict[tuple, int] = field(default_factory=dict)
    # parameter buffer -> (its arena allocation, and for V2 the launch it was asked for)
    buffers: dict[int, tuple[int, tuple | None]] = field(default_factory=dict)
    streams: set[int] = field(default_factory=set)    # created by its threads
    events: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kernel(self, address: int) -> ir.Function | None:
        index, rest = divmod(address - KERNEL_ADDRESS_BASE, KERNEL_ADDRESS_STRIDE)
        kernels = self.module.kernels
        return kernels[index] if not rest and 0 <= index < len(kernels) else None


_GRIDS: dict[int, GridLaunches] = {}      # by the address of the grid's parameter block
_LOCAL = threading.local()               # the launching thread's: pending record, depth


def attach(params_address: int) -> GridLaunches | None:
    """The executor's call before a grid that may launch grids runs: its record (made by
    run_grid on this thread) is found from now on by its parameter block's address."""
    record = getattr(_LOCAL, "pending", None)
    _LOCAL.pending = None
    if record is not None:
        _GRIDS[params_address] = record
    return record


def detach(params_address: int) -> None:
    """The executor's call once the grid's blocks are done."""
    _GRIDS.pop(params_address, None)


def run_grid(binary, grid, block, dynamic_shared: int, params: bytes, allocations,
             timeout: float | None, run: Callable) -> None:
    """Run a grid of `binary` (a kernel that calls the device runtime) with `run` (the
    executor's run_grid), then the grids it launched (see the module docstring)."""
    _ARENA.reserve()
    record = GridLaunches(binary.module, getattr(binary, "options", None),
                          getattr(_LOCAL, "depth", 0))
    if allocations is not None:
        allocations = (*allocations, _ARENA.range())
    _LOCAL.pending = record
    try:
        run(binary, grid, block, dynamic_shared, params, allocations, timeout)
    finally:
        _LOCAL.pending = None
        for raw, _ in record.buffers.values():      # asked for and never launched
            _ARENA.free(raw)
        record.buffers.clear()
    for child in record.children + record.tails:
        _run_child(record, child, allocations, timeout)


def _run_child(parent: GridLaunches, child: ChildGrid, allocations, timeout) -> None:
    binary = _binary(parent, child.kernel.name)
    _LOCAL.depth = parent.depth + 1
    try:
        binary.launch(child.grid, child.block, child.dynamic_shared, child.params,
                      allocations, timeout=timeout)
    finally:
        _LOCAL.depth = parent.depth


# kernels.compile_kernel, set when kernels.py is imported (which made every binary that can
# launch grids; importing it here would close an import cycle)
compile_kernel: Callable | None = None
_BINARIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BINARIES_LOCK = threading.Lock()


def _binary(parent: GridLaunches, name: str):
    """The CPU binary of kernel `name` of the parent's module, compiled (or loaded) with the
    parent's options at its first device-side launch and kept as long as the module."""
    with _BINARIES_LOCK:
        kept = _BINARIES.setdefault(parent.module, {})
        if (name, parent.options) not in kept:
            kept[name, parent.options] = compile_kernel(parent.module, name, parent.options)
        return kept[name, parent.options]


# --- the callback ----------------------------------------------------------------------------

def _thread(ctx: int, frame: int) -> tuple:
    ctaid = tuple((ctypes.c_uint32 * 3).from_address(ctx + CTX.fields["ctaid"]))
    tid = tuple((ctypes.c_uint32 * 3).from_address(frame + FRAME.fields["tid"]))
    return ctaid, tid


def _dim3(address: int) -> tuple[int, int, int]:
    return tuple((ctypes.c_uint32 * 3).from_address(address))


def _u64(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


def _u32(address: int) -> int:
    return ctypes.c_uint32.from_address(address).value


def _parameter_buffer(record: GridLaunches, size: int, alignment: int,
                      launch: tuple | None) -> int:
    alignment = max(alignment, 16)
    raw = _ARENA.malloc(max(size, 1) + alignment)
    if not raw:
        return 0
    buffer = -(-raw // alignment) * alignment
    with record.lock:
        record.buffers[buffer] = (raw, launch)
    return buffer


def _check_launch(record: GridLaunches, grid, block, dynamic_shared: int,
                  stream: int) -> int:
    if record.depth + 1 > MAX_DEPTH:
        return MAX_DEPTH_EXCEEDED
    threads = block[0] * block[1] * block[2]
    if not (all(1 <= n <= limit for n, limit in zip(block, _BLOCK_LIMITS, strict=True))
            and threads <= _BLOCK_LIMITS[0]
            and all(1 <= n <= limit for n, limit in zip(grid, _GRID_LIMITS, strict=True))
            and dynamic_shared <= _MAX_SHARED):
        return INVALID_CONFIGURATION
    if stream not in (NULL_STREAM, PER_THREAD_STREAM, TAIL_LAUNCH, FIRE_AND_FORGET) \
            and stream not in record.streams:
        return INVALID_RESOURCE_HANDLE
    return SUCCESS


def _launch(record: GridLaunches, kernel: ir.Function | None, buffer: int, grid, block,
            dynamic_shared: int, stream: int) -> int:
    """cudaLaunchDevice: check, copy the parameters out of `buffer` (freed), queue."""
    with record.lock:
        raw, _ = record.buffers.pop(buffer, (0, None))
    try:
        if kernel is None:
            return INVALID_DEVICE_FUNCTION
        if not raw:
            return INVALID_VALUE    # no buffer cudaGetParameterBuffer gave (or launched)
        status = _check_launch(record, grid, block, dynamic_shared, stream)
        if status != SUCCESS:
            return status
        _, size = param_layout(kernel)
        child = ChildGrid(kernel, grid, block, dynamic_shared, ctypes.string_at(buffer, size))
        (record.tails if stream == TAIL_LAUNCH else record.children).append(child)
        return SUCCESS
    finally:
        if raw:
            _ARENA.free(raw)


def _get_parameter_buffer(record, p):
    buffer = _parameter_buffer(record, _u64(p[2]), _u64(p[1]), None)
    return buffer, (SUCCESS if buffer else MEMORY_ALLOCATION)


def _get_parameter_buffer_v2(record, p):
    kernel = record.kernel(_u64(p[1]))
    if kernel is None:
        return 0, INVALID_DEVICE_FUNCTION
    launch = (kernel, _dim3(p[2]), _dim3(p[3]), _u32(p[4]))
    buffer = _parameter_buffer(record, param_layout(kernel)[1], PARAMETER_ALIGNMENT, launch)
    return buffer, (SUCCESS if buffer else MEMORY_ALLOCATION)


def _launch_device(record, p):
    kernel = record.kernel(_u64(p[1]))
    return _launch(record, kernel, _u64(p[2]), _dim3(p[3]), _dim3(p[4]), _u32(p[5]),
                   _u64(p[6]))


def _launch_device_v2(record, p):
    buffer = _u64(p[1])
    with record.lock:
        _, launch = record.buffers.get(buffer, (0, None))
    if launch is None:
        with record.lock:
            raw, _ = record.buffers.pop(buffer, (0, None))
        if raw:
            _ARENA.free(raw)
        return INVALID_VALUE        # not a buffer of cudaGetParameterBufferV2
    kernel, grid, block, dynamic_shared = launch
    return _launch(record, kernel, buffer, grid, block, dynamic_shared, _u64(p[2]))


def _create(record, handles: set, base: int, p, flags: int) -> int:
    if _u32(p[2]) != flags or not _u64(p[1]):
        return INVALID_VALUE
    with record.lock:
        handle = base + 8 * (len(handles) + 1)
        handles.add(handle)
    ctypes.c_uint64.from_address(_u64(p[1])).value = handle
    return SUCCESS


def _stream_create(record, p):      # (the device has non-blocking streams only)
    return _create(record, record.streams, _DEVICE_STREAM_BASE, p, _STREAM_NON_BLOCKING)


def _event_create(record, p):       # (and events without timing)
    return _create(record, record.events, _DEVICE_EVENT_BASE, p, _EVENT_DISABLE_TIMING)


def _stream_destroy(record, p):
    return SUCCESS if _u64(p[1]) in record.streams else INVALID_RESOURCE_HANDLE


def _event_destroy(record, p):
    return SUCCESS if _u64(p[1]) in record.events else INVALID_RESOURCE_HANDLE


def _a_stream(record, stream: int) -> bool:
    return stream in (NULL_STREAM, PER_THREAD_STREAM) or stream in record.streams


def _event_record(record, p):
    # (grids run one after another in launch order: every event is complete when recorded)
    known = _u64(p[1]) in record.events and _a_stream(record, _u64(p[2]))
    return SUCCESS if known else INVALID_RESOURCE_HANDLE


def _stream_wait_event(record, p):
    known = _a_stream(record, _u64(p[1])) and _u64(p[2]) in record.events
    return SUCCESS if known else INVALID_RESOURCE_HANDLE


def _malloc(record, p):
    # (cudadevrt's own: device malloc from the device heap, the address stored at devPtr)
    if not _u64(p[1]) or not _u64(p[2]):
        return INVALID_VALUE
    address = HEAP.malloc(_u64(p[2]))
    if not address:
        return MEMORY_ALLOCATION
    ctypes.c_uint64.from_address(_u64(p[1])).value = address
    return SUCCESS


def _free(record, p):
    return SUCCESS if HEAP.free(_u64(p[1])) else INVALID_VALUE


def _get_device(record, p):
    if not _u64(p[1]):
        return INVALID_VALUE
    ctypes.c_int32.from_address(_u64(p[1])).value = 0
    return SUCCESS


# number -> handler(record, addresses of the .param variables) -> result (an error number,
# or an address and the error to record)
_HANDLERS = {
    FUNCTIONS["cudaGetParameterBuffer"][0]: _get_parameter_buffer,
    FUNCTIONS["cudaGetParameterBufferV2"][0]: _get_parameter_buffer_v2,
    FUNCTIONS["cudaLaunchDevice"][0]: _launch_device,
    FUNCTIONS["cudaLaunchDeviceV2"][0]: _launch_device_v2,
    FUNCTIONS["cudaStreamCreateWithFlags"][0]: _stream_create,
    FUNCTIONS["cudaStreamDestroy"][0]: _stream_destroy,
    FUNCTIONS["cudaGetDevice"][0]: _get_device,
    FUNCTIONS["cudaMalloc"][0]: _malloc,
    FUNCTIONS["cudaFree"][0]: _free,
    FUNCTIONS["cudaEventCreateWithFlags"][0]: _event_create,
    FUNCTIONS["cudaEventRecord"][0]: _event_record,
    FUNCTIONS["cudaStreamWaitEvent"][0]: _stream_wait_event,
    FUNCTIONS["cudaEventDestroy"][0]: _event_destroy,
}
_PARAM_COUNTS = {number: len(sizes) for number, sizes in FUNCTIONS.values()}
_GET_LAST_ERROR = FUNCTIONS["cudaGetLastError"][0]
_PEEK_AT_LAST_ERROR = FUNCTIONS["cudaPeekAtLastError"][0]
_RETURNS_ADDRESS = {FUNCTIONS["cudaGetParameterBuffer"][0],
                    FUNCTIONS["cudaGetParameterBufferV2"][0]}


def _device_runtime(ctx: int, frame: int, number: int, params: int) -> None:
    record = _GRIDS.get(_u64(ctx + CTX.fields["params"]))
    p = list((ctypes.c_uint64 * _PARAM_COUNTS[number]).from_address(params))
    thread = _thread(ctx, frame)
    if record is None:      # (a launch not through run_grid: cannot happen)
        result, error = 0, INVALID_VALUE
    elif number in (_GET_LAST_ERROR, _PEEK_AT_LAST_ERROR):
        error = record.errors.get(thread, SUCCESS)
        if number == _GET_LAST_ERROR:
            record.errors.pop(thread, None)
        ctypes.c_uint32.from_address(p[0]).value = error
        return
    elif number in _RETURNS_ADDRESS:
        result, error = _HANDLERS[number](record, p)
    else:
        result = error = _HANDLERS[number](record, p)
    if number in _RETURNS_ADDRESS:
        ctypes.c_uint64.from_address(p[0]).value = result
    else:
        ctypes.c_uint32.from_address(p[0]).value = result
    if error != SUCCESS and record is not None:
        record.errors[thread] = error


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                             ctypes.c_void_p)(_device_runtime)
llvm.add_symbol(DEVICE_RUNTIME_SYMBOL, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)
