"""Where the drop-in libcudart.so.13 enters Python: `start` gives it one handler per entry
point of cudart_signatures.py (found in cudart.py or cudart_launch.py).

Each handler is wrapped once here, as dispatch.py wraps the driver's, with the runtime's
rules on top: the first call of a thread makes the device's primary context current (the
runtime's implicit initialisation), a failed call's code becomes the thread's last error
(cudaGetLastError), and a kernel fault is sticky for the calls that touch the device. A stub
(an unimplemented name) returns cudaErrorNotSupported and names itself once on stderr. Calls
are traced with the driver's (`ptxport run --trace FILE`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ptxport.compat import (
    cudart,
    cudart_launch,
    cudart_signatures,
    cudart_textures,
    driver,
    graph_nodes,
    mempools,
)
from ptxport.compat.dispatch import code_of, find_handler, traced
from ptxport.compat.signatures import flat
from ptxport.compat.state import NOT_SUPPORTED, state
from ptxport.errors import PtxportError

__all__ = ["start"]

_MODULES = (cudart, cudart_launch, mempools, graph_nodes, cudart_textures)
_STICKY = (700, 710, 719)   # illegal address, assert, launch failure
# Calls that answer after a kernel fault (they do not touch the device), and need no context.
_NOT_STICKY = ("cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorName",
               "cudaGetErrorString", "cudaGetDeviceCount", "cudaGetDevice", "cudaSetDevice",
               "cudaDriverGetVersion", "cudaRuntimeGetVersion", "__cudaRegister",
               "__cudaUnregister", "__cudaPushCallConfiguration",
               "__cudaPopCallConfiguration")
# Whose result is no cudaError_t (a pointer, a string), or reads the last error: never
# recorded as the last error.
_NO_STATUS = ("__cudaRegister", "__cudaUnregister", "__cudaInitModule",
              "__cudaPushCallConfiguration", "cudaGetErrorName", "cudaGetErrorString",
              "cudaGetLastError", "cudaPeekAtLastError")


def _make_current() -> None:
    """The runtime's implicit initialisation: the primary context of the thread's device
    (cudaSetDevice's, else 0), current on this thread."""
    driver.cuInit(0)
    cudart.make_current(cudart.current_device())


def _wrap(name: str, handler: Callable[..., int]) -> Callable[..., int]:
    device_call = not name.startswith(_NOT_STICKY)
    has_status = not name.startswith(_NO_STATUS)
    current, record = state.current, cudart.record_error

    def call(*args: int) -> int:
        if device_call and state.sticky:
            record(state.sticky)
            return state.sticky
        try:
            if device_call and getattr(current, "context", None) is None:
                _make_current()
            code = handler(*args)
        except PtxportError as e:
            code = code_of(e)
            if code in _STICKY:
                state.sticky = code
            if str(e):
                print(f"ptxport: {name}: {e}", file=sys.stderr, flush=True)
            if not has_status:
                return 0
        if code and has_status:
            record(code)
        return code

    call.__name__ = name
    return call


def start(library_path: str) -> tuple[list[Callable[..., int]], Callable[[int], int]]:
    """Called once by libcudart.so.13: the handlers in cudart_signatures.ENTRY_POINTS order,
    and the handler of its stubs (stub STUB_COUNT + i is unsupported_names()[i])."""
    cudart.library_directory = os.path.dirname(library_path)
    trace_path = os.environ.get("PTXPORT_TRACE")
    trace = open(trace_path, "a", buffering=1) if trace_path else None
    handlers = []
    for sig in cudart_signatures.ENTRY_POINTS:
        call = _wrap(sig.name, find_handler(sig.name, _MODULES, cudart_signatures.PER_THREAD))
        handlers.append(traced(flat(sig), call, trace) if trace else call)
    names = cudart_signatures.unsupported_names()
    reported: set[str] = set()

    def unsupported(k: int) -> int:
        name = names[k - _STUB_COUNT]
        if name not in reported:
            reported.add(name)
            print(f"ptxport: {name} is not supported yet; it returns "
                  "cudaErrorNotSupported", file=sys.stderr, flush=True)
        if trace:
            trace.write(f"{name}(...) -> {NOT_SUPPORTED}\n")
        cudart.record_error(NOT_SUPPORTED)
        return NOT_SUPPORTED

    return handlers, unsupported


_STUB_COUNT = 1024   # PTXPORT_STUB_COUNT in shim.c: named stubs are numbered after it
