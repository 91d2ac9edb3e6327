"""Where the native shim enters Python: `start` gives it one handler per entry point.

Every handler is wrapped once here: a CudaError becomes its code, ptxport's other errors
become the CUresult CUDA would return (their message goes to stderr, once per call that
fails), and a kernel fault reported at a synchronisation becomes sticky, as in CUDA: every
later call that touches the device returns it too. With PTXPORT_TRACE set to a file name
(`ptxport run --trace FILE`), every call is written there with its arguments and result.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

from ptxport.compat import (
    dark_api,
    driver,
    execution,
    graph_nodes,
    graphs,
    hidden,
    memory,
    mempools,
    pitched,
    signatures,
    streams,
    textures,
)
from ptxport.compat import library as library_module
from ptxport.compat.state import (
    ASSERT,
    COOPERATIVE_LAUNCH_TOO_LARGE,
    ILLEGAL_ADDRESS,
    INVALID_PTX,
    INVALID_VALUE,
    LAUNCH_FAILED,
    NOT_FOUND,
    NOT_SUPPORTED,
    OUT_OF_MEMORY,
    UNKNOWN,
    CudaError,
    state,
)
from ptxport.errors import (
    CompileError,
    CooperativeLaunchTooLargeError,
    IllegalAddressError,
    InvalidValueError,
    KernelExecutionError,
    KernelNotFoundError,
    KernelTrapError,
    LaunchError,
    OutOfMemoryError,
    PtxportError,
    PtxSemanticError,
    PtxSyntaxError,
    UnsupportedFeatureError,
)

__all__ = ["start", "traced"]

_MODULES = (driver, memory, mempools, pitched, streams, graphs, graph_nodes, execution, hidden,
            textures)

# ptxport's errors as CUresults; the first match counts (subclasses before their bases).
_CODES: tuple[tuple[type, int], ...] = (
    (IllegalAddressError, ILLEGAL_ADDRESS),
    (KernelTrapError, ASSERT),
    (KernelExecutionError, LAUNCH_FAILED),
    (OutOfMemoryError, OUT_OF_MEMORY),
    (KernelNotFoundError, NOT_FOUND),
    (CooperativeLaunchTooLargeError, COOPERATIVE_LAUNCH_TOO_LARGE),
    (LaunchError, INVALID_VALUE),
    (InvalidValueError, INVALID_VALUE),
    (UnsupportedFeatureError, NOT_SUPPORTED),
    ((CompileError, PtxSyntaxError, PtxSemanticError), INVALID_PTX),
)
_STICKY = (ILLEGAL_ADDRESS, ASSERT, LAUNCH_FAILED)
# Calls that answer even after a kernel fault (they do not touch the device).
_NOT_STICKY = ("cuGetProcAddress", "cuGetExportTable", "cuGetError", "cuDriverGetVersion",
               "cuInit", "cuDeviceGet", "cuDeviceComputeCapability", "cuDeviceTotalMem",
               "cuDevicePrimaryCtx", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice",
               "cuCtxGetApiVersion", "cuCtxGetFlags", "cuCtxGetId",
               "ptxport_cls", "ptxport_context_check")


def code_of(error: BaseException) -> int:
    """The CUresult CUDA returns for what `error` says went wrong."""
    if isinstance(error, CudaError):
        return error.code
    for kind, code in _CODES:
        if isinstance(error, kind):
            return code
    return UNKNOWN


def _wrap(name: str, handler: Callable[..., int]) -> Callable[..., int]:
    sticky_applies = not name.startswith(_NOT_STICKY)

    def call(*args: int) -> int:
        if state.sticky and sticky_applies:
            return state.sticky
        try:
            return handler(*args)
        except PtxportError as e:
            code = code_of(e)
            if code in _STICKY:
                state.sticky = code
            if str(e):
                print(f"ptxport: {name}: {e}", file=sys.stderr, flush=True)
            return code

    call.__name__ = name
    return call


def _shown(param: signatures.Param, value: int) -> str:
    """An argument as the trace writes it: strings as text, pointers in hex."""
    if param.type == "const char *" and value:
        return f"{param.name}={ctypes.string_at(value).decode('utf-8', 'replace')!r}"
    return f"{param.name}={value:#x}" if param.is_pointer else f"{param.name}={value}"


def _slot_names() -> dict[str, str]:
    """ptxport's name of each export-table function -> 'TABLE[slot]', as the trace shows it."""
    return {symbol: f"{table}[{index}]" for table, _, slots in dark_api.TABLES.values()
            for index, symbol in slots.items() if symbol.startswith("ptxport_")}


def traced(sig: signatures.Signature, call: Callable[..., int], trace) -> Callable[..., int]:
    """`call` (the handler of `sig`) writing each call with its arguments and result to
    the file `trace` (cublas_dispatch.py traces cuBLAS's calls with it too)."""
    params = sig.params
    label = _slot_names().get(sig.name, sig.name)

    def traced(*args: int) -> int:
        result = call(*args)
        shown = ", ".join(_shown(p, a) for p, a in zip(params, args, strict=False))
        trace.write(f"{label}({shown}) -> {result}\n")
        return result

    return traced


def _per_thread(handler: Callable[..., int]) -> Callable[..., int]:
    """The handler of a _ptds/_ptsz variant: stream 0 is the calling thread's own default
    stream while it runs (state.State.stream)."""

    def call(*args: int) -> int:
        state.current.per_thread = True
        try:
            return handler(*args)
        finally:
            state.current.per_thread = False

    return call


def find_handler(name: str, modules, per_thread: tuple[str, ...] = ()) -> Callable[..., int]:
    """The Python handler of entry point `name`: the function of that name in the first of
    `modules` that has one; a name ending in one of `per_thread` is its base name's handler
    run with the calling thread's default stream (every drop-in library resolves alike)."""
    if per_thread and name.endswith(per_thread):
        return _per_thread(find_handler(name.rsplit("_", 1)[0], modules, per_thread))
    for module in modules:
        handler = getattr(module, name, None)
        if handler is not None:
            return handler
    raise PtxportError(f"ptxport.compat: entry point {name} has no handler: define it in "
                       f"one of {', '.join(m.__name__ for m in modules)}")


def start(library_path: str) -> tuple[list[Callable[..., int]], Callable[[int], int]]:
    """Called once by the shim: the handlers in signatures.ENTRY_POINTS order, and the
    handler of the unsupported-entry-point stubs."""
    lib = library_module.library = library_module.Library(library_path)
    trace_path = os.environ.get("PTXPORT_TRACE")
    trace = open(trace_path, "a", buffering=1) if trace_path else None
    lib.trace = trace
    handlers = []
    for sig in signatures.ENTRY_POINTS:
        call = _wrap(sig.name, find_handler(sig.name, _MODULES, signatures.PER_THREAD_SUFFIXES))
        handlers.append(traced(sig, call, trace) if trace else call)

    def unsupported(k: int) -> int:
        lib.report_unsupported(k)
        if trace:
            trace.write(f"{lib.stub_name(k)}(...) -> {NOT_SUPPORTED}\n")
        return NOT_SUPPORTED

    return handlers, unsupported
