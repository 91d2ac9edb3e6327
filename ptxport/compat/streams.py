"""Streams and events for the driver API, and the ordering rules of CUDA's default stream.

The legacy default stream (handle 0 or CU_STREAM_LEGACY) waits for all work queued before on
blocking streams (those created without CU_STREAM_NON_BLOCKING), and they wait for it: here,
work queued on the default stream first waits for every busy blocking stream, and work queued
on a blocking stream first waits for the default stream when it is busy. Each device has its
own default stream, and these rules hold among the streams of one device.

A synchronous call on an idle stream runs its work on the caller's thread: nothing is queued
before it, so the order is the same, and a 4-byte cudaMemcpy costs no thread switch. With
CUDA_LAUNCH_BLOCKING=1 (CUDA's switch), launches are synchronous too, and run the same way.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

from ptxport.compat.state import (
    DEFAULT_STREAMS,
    INVALID_HANDLE,
    NOT_READY,
    SUCCESS,
    CudaError,
    put,
    state,
)
from ptxport.runtime import Event, Stream

_NON_BLOCKING = 0x1            # CU_STREAM_NON_BLOCKING
_DISABLE_TIMING = 0x2          # CU_EVENT_DISABLE_TIMING
_blocking: dict[int, Stream] = {}   # handle -> created blocking stream
_flags: dict[int, int] = {}
_priorities: dict[int, int] = {}    # handle -> priority given at creation (0 otherwise)
_ordinals: dict[int, int] = {}      # handle -> ordinal of the device it was created on
# cuCtxGetStreamPriorityRange's answer: lower numbers are higher priorities, as in CUDA.
LEAST_PRIORITY, GREATEST_PRIORITY = 0, -5


class Capture:
    """A stream being captured into a graph (graphs.py): work queued on it is kept as nodes,
    each a function that queues the same work on the stream a launch of the graph gives."""

    def __init__(self, stream: Stream):
        self.stream, self.device = stream, stream.device
        self.nodes: list[Callable[[Stream], None]] = []
        self.kinds: list[int] = []      # each node's CUgraphNodeType (graph_nodes.py)

    def _submit(self, work: Callable[[], None], skippable: bool = True, **about) -> None:
        """Stream._submit's interface (what ptxport.runtime queues on a stream): kept as a
        node that queues the same work, described alike, on the stream a launch gives."""
        self.nodes.append(lambda stream: stream._submit(work, skippable, **about))
        self.kinds.append(_node_kind(about))

    def _run_now(self, work: Callable[[], None], **about) -> bool:
        """Stream._run_now's interface: captured work never runs at once (it is kept as a
        node by _submit)."""
        return False

    def record(self, event: Event) -> Event:
        self.nodes.append(lambda stream: stream.record(event))
        self.kinds.append(7)        # CU_GRAPH_NODE_TYPE_EVENT_RECORD
        recorded_in[id(event)] = self
        return event

    def wait(self, event) -> None:
        # A join: the event's work is earlier in this capture, and a graph's nodes are
        # replayed in capture order on one stream, so the dependency holds already.
        if recorded_in.get(id(event)) is not self:
            raise CudaError(CAPTURE_UNSUPPORTED, "a captured stream may wait only for events "
                                                 "recorded in the same capture")

    def sync(self) -> None:
        raise CudaError(CAPTURE_UNSUPPORTED, "a stream cannot be synchronised while it is "
                                             "captured into a graph")


CAPTURE_UNSUPPORTED = 900      # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED


def _node_kind(about: dict) -> int:
    """The CUgraphNodeType of captured work, from how the runtime describes it: a kernel,
    a copy (MEMCPY), a fill (MEMSET), a free (MEM_FREE), else a host function."""
    if "kernel" in about:
        return 0
    what = about.get("what", "")
    what = what if isinstance(what, str) else ""
    for start, kind in (("a copy", 1), ("a fill", 2), ("the free", 11)):
        if what.startswith(start):
            return kind
    return 3
captures: dict[int, Capture] = {}   # stream handle -> its capture in progress
recorded_in: dict[int, Capture] = {}   # id of an event recorded in a capture -> that capture


def _busy(stream: Stream) -> bool:
    """Whether `stream` has queued work not yet run, or a failure not yet reported."""
    worker = stream._worker
    return worker._pending > 0 or worker.error is not None


def ordered(handle: int) -> Stream | Capture:
    """The stream of `handle`, made to wait as CUDA's default-stream rules say."""
    capture = captures.get(handle)
    if capture is not None:
        return capture
    stream = state.stream(handle)
    default = stream.device.default_stream
    if stream is default:
        for other in (*_blocking.values(), *state.per_thread_streams):
            if other.device is stream.device and _busy(other):
                stream.wait(other)
    elif (handle in _blocking or handle in DEFAULT_STREAMS) and _busy(default):
        stream.wait(default)   # a blocking stream, or a thread's own default stream
    return stream


def wait_for_device(handle: int, device) -> None:
    """Make stream `handle` wait for the work queued so far on `device`'s default stream and
    blocking streams (a synchronous copy between devices waits for both devices)."""
    stream = ordered(handle)
    if isinstance(stream, Capture):
        return
    for other in (device.default_stream, *_blocking.values(), *state.per_thread_streams):
        if other.device is device and other is not stream and _busy(other):
            stream.wait(other)


# CUDA's own switch (documented for debugging): every launch completes before it returns.
LAUNCH_BLOCKING = os.environ.get("CUDA_LAUNCH_BLOCKING") == "1"


class Inline:
    """An idle stream's stand-in that runs work at once on the caller's thread (blocking
    launches: there is nothing queued to wait for, and no thread to hand over to)."""

    def __init__(self, stream: Stream):
        self.device = stream.device

    def _submit(self, work: Callable[[], None], skippable: bool = True, **about) -> None:
        """Stream._submit's interface; `about` (what the work is, for a stream's error
        messages) has no use when the work runs at once."""
        work()


def idle(stream: Stream | Capture) -> bool:
    return not isinstance(stream, Capture) and not _busy(stream)


def enqueue(handle: int, work: Callable[[], None], sync: bool) -> None:
    """Run `work` in the order of stream `handle`; with `sync`, wait until it ran."""
    stream = ordered(handle)
    if isinstance(stream, Capture):
        if sync:
            stream.sync()   # raises: CUDA refuses synchronous work on a capturing stream
        stream._submit(work)
        return
    if sync and not _busy(stream):
        work()
        return
    stream._submit(work)
    if sync:
        stream.sync()


def legacy_sync() -> None:
    """Wait for the default stream and every blocking stream (what CUDA's synchronous calls
    such as cuMemFree do)."""
    ordered(0).sync()


# -- streams --------------------------------------------------------------------------------

def cuStreamCreate(phStream: int, flags: int) -> int:
    stream = state.device.create_stream()
    handle = state.handle(stream)
    _flags[handle] = flags
    _ordinals[handle] = state.ordinal
    if not flags & _NON_BLOCKING:
        _blocking[handle] = stream
    put(ctypes.c_void_p, phStream, handle)
    return SUCCESS


def cuStreamCreateWithPriority(phStream: int, flags: int, priority: int) -> int:
    """Priorities are kept to read back and not used to schedule; one outside the range is
    clamped to it, as CUDA documents."""
    cuStreamCreate(phStream, flags)
    handle = ctypes.c_void_p.from_address(phStream).value
    _priorities[handle] = min(max(priority, GREATEST_PRIORITY), LEAST_PRIORITY)
    return SUCCESS


def cuStreamDestroy_v2(handle: int) -> int:
    if handle in DEFAULT_STREAMS:
        raise CudaError(INVALID_HANDLE, "the default stream cannot be destroyed")
    stream = state.release(handle, Stream, "CUstream")
    _blocking.pop(handle, None)
    _flags.pop(handle, None)
    _priorities.pop(handle, None)
    _ordinals.pop(handle, None)
    stream.close()   # queued work still runs, as CUDA's cuStreamDestroy promises
    return SUCCESS


def cuStreamSynchronize(handle: int) -> int:
    ordered(handle).sync()
    return SUCCESS


def cuStreamQuery(handle: int) -> int:
    """CUDA_ERROR_NOT_READY while work is pending. The worker counts a piece of work done
    just after it ran (an event recorded at the end completes a moment before): a query
    waits up to a millisecond for that count, so that a stream whose last event completed
    reads as done, as in CUDA."""
    stream = state.stream(handle)
    worker = stream._worker
    worker.kick()       # (a launch queued without waking the stream's thread starts now)
    with worker._state:
        worker._state.wait_for(lambda: worker._pending == 0, timeout=0.001)
    return NOT_READY if _busy(stream) else SUCCESS


def cuStreamWaitEvent(handle: int, event: int, flags: int) -> int:
    waited = state.lookup(event, Event, "CUevent")
    capture = recorded_in.get(id(waited))
    if handle not in captures and capture in captures.values():
        captures[handle] = capture   # a fork: the stream joins the capture, as in CUDA
        return SUCCESS
    ordered(handle).wait(waited)
    return SUCCESS


def cuStreamGetFlags(handle: int, flags: int) -> int:
    put(ctypes.c_uint, flags, 0 if handle in DEFAULT_STREAMS else _flags.get(handle, 0))
    return SUCCESS


def cuStreamGetPriority(handle: int, priority: int) -> int:
    state.stream(handle)
    put(ctypes.c_int, priority, _priorities.get(handle, LEAST_PRIORITY))
    return SUCCESS


def cuStreamGetId(handle: int, stream_id: int) -> int:
    put(ctypes.c_ulonglong, stream_id, id(state.stream(handle)))
    return SUCCESS


def _ordinal_of(handle: int) -> int:
    """The ordinal of the device of stream `handle` (a default stream: the current one's)."""
    state.stream(handle)
    return _ordinals.get(handle, state.ordinal)


def cuStreamGetCtx(handle: int, pctx: int) -> int:
    from ptxport.compat.driver import context_handle

    put(ctypes.c_void_p, pctx, context_handle(_ordinal_of(handle)))
    return SUCCESS


def cuStreamGetDevice(handle: int, device: int) -> int:
    put(ctypes.c_int, device, _ordinal_of(handle))
    return SUCCESS


_HostFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_StreamCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


def cuLaunchHostFunc(handle: int, fn: int, user_data: int) -> int:
    if not fn:
        raise CudaError(1, "the function is NULL")
    call = _HostFn(fn)
    ordered(handle)._submit(lambda: call(user_data))
    return SUCCESS


def cuStreamAddCallback(handle: int, callback: int, user_data: int, flags: int) -> int:
    if not callback or flags:
        raise CudaError(1, "takes a function and flags 0")
    call = _StreamCallback(callback)
    stream = ordered(handle)
    # CUDA calls it with the stream's status: 0, or the error of earlier work
    stream._submit(lambda: call(handle, _status(stream), user_data), skippable=False)
    return SUCCESS


def _status(stream: Stream) -> int:
    from ptxport.compat.dispatch import code_of

    error = stream._worker.error
    return 0 if error is None else code_of(error)




# -- events ---------------------------------------------------------------------------------

def cuEventCreate(phEvent: int, flags: int) -> int:
    event = state.device.create_event({"enable_timing": not flags & _DISABLE_TIMING})
    put(ctypes.c_void_p, phEvent, state.handle(event))
    return SUCCESS


def cuEventDestroy_v2(handle: int) -> int:
    state.release(handle, Event, "CUevent")
    return SUCCESS


def cuEventRecord(handle: int, stream: int) -> int:
    ordered(stream).record(state.lookup(handle, Event, "CUevent"))
    return SUCCESS


def cuEventRecordWithFlags(handle: int, stream: int, flags: int) -> int:
    return cuEventRecord(handle, stream)


def cuEventSynchronize(handle: int) -> int:
    state.lookup(handle, Event, "CUevent").sync()
    return SUCCESS


def cuEventQuery(handle: int) -> int:
    return SUCCESS if state.lookup(handle, Event, "CUevent").is_done else NOT_READY


def cuEventElapsedTime_v2(ms: int, start: int, end: int) -> int:
    first = state.lookup(start, Event, "CUevent")
    last = state.lookup(end, Event, "CUevent")
    if not (first.is_done and last.is_done):
        return NOT_READY
    if first.is_timing_disabled or last.is_timing_disabled:
        raise CudaError(INVALID_HANDLE, "an event created with CU_EVENT_DISABLE_TIMING "
                                        "cannot be timed")
    put(ctypes.c_float, ms, last - first)
    return SUCCESS


cuEventElapsedTime = cuEventElapsedTime_v2
