"""Where the drop-in libcublas.so.13 enters Python: `start` gives it one handler per entry
point of cublas_signatures.py (found in cublas.py, cublas_gemm.py, cublas_level2.py or
cublas_helpers.py);
libcublasLt.so.13's (cublaslt_dispatch.py) are made the same way.

Each handler is wrapped once here, as dispatch.py wraps the driver's: a CublasError becomes
its status (an illegal argument also prints cuBLAS's own xerbla line on stdout, as NVIDIA's
library does), ptxport's other errors the status cuBLAS would return, with ptxport's
explanation on stderr; a stub (an unimplemented name) returns CUBLAS_STATUS_NOT_SUPPORTED
and names itself once. Calls are traced with the driver's (`ptxport run --trace FILE`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType

from ptxport.compat import (
    cublas,
    cublas_gemm,
    cublas_helpers,
    cublas_level2,
    cublas_signatures,
)
from ptxport.compat.dispatch import find_handler, traced
from ptxport.compat.signatures import Signature
from ptxport.compat.state import CudaError, state
from ptxport.errors import (
    InvalidValueError,
    OutOfMemoryError,
    PtxportError,
    UnsupportedFeatureError,
)

__all__ = ["handlers_for", "start", "status_of"]

# ptxport's errors as cublasStatus_t; the first match counts.
_CODES: tuple[tuple[type, int], ...] = (
    (OutOfMemoryError, cublas.ALLOC_FAILED),
    ((InvalidValueError, CudaError), cublas.INVALID_VALUE),
    (UnsupportedFeatureError, cublas.NOT_SUPPORTED),
)
# Calls that do not touch the device, and answer after a kernel fault too.
_NOT_STICKY = ("cublasGetStatus", "cublasGetVersion", "cublasGetProperty",
               "cublasGetCudartVersion")


def status_of(error: PtxportError) -> int:
    """The cublasStatus_t for what `error` says went wrong (a failure of the work itself,
    such as an earlier kernel's fault on the stream, is CUBLAS_STATUS_EXECUTION_FAILED)."""
    if isinstance(error, cublas.CublasError):
        return error.status
    for kind, status in _CODES:
        if isinstance(error, kind):
            return status
    return cublas.EXECUTION_FAILED


def _wrap(name: str, handler: Callable[..., int]) -> Callable[..., int]:
    sticky_applies = not name.startswith(_NOT_STICKY)

    def call(*args: int) -> int:
        if state.sticky and sticky_applies:   # the context is lost, as for every CUDA call
            return cublas.EXECUTION_FAILED
        try:
            return handler(*args)
        except PtxportError as e:
            if isinstance(e, cublas.CublasError) and e.xerbla:
                cublas.xerbla(*e.xerbla)
            if str(e):
                print(f"ptxport: {name}: {e}", file=sys.stderr, flush=True)
            return status_of(e)

    call.__name__ = name
    return call


def handlers_for(entry_points: tuple[Signature, ...], stub_names: tuple[str, ...],
                 modules: tuple[ModuleType, ...]) \
        -> tuple[list[Callable[..., int]], Callable[[int], int]]:
    """The handlers of `entry_points` (found in `modules`), wrapped and traced, and the
    handler of the stubs (stub PTXPORT_STUB_COUNT + i is `stub_names[i]`)."""
    trace_path = os.environ.get("PTXPORT_TRACE")
    trace = open(trace_path, "a", buffering=1) if trace_path else None
    handlers = []
    for sig in entry_points:
        call = _wrap(sig.name, find_handler(sig.name, modules))
        handlers.append(traced(sig, call, trace) if trace else call)
    reported: set[str] = set()

    def unsupported(k: int) -> int:
        name = stub_names[k - _STUB_COUNT]
        if name not in reported:
            reported.add(name)
            print(f"ptxport: {name} is not supported yet; it returns "
                  "CUBLAS_STATUS_NOT_SUPPORTED", file=sys.stderr, flush=True)
        if trace:
            trace.write(f"{name}(...) -> {cublas.NOT_SUPPORTED}\n")
        return cublas.NOT_SUPPORTED

    return handlers, unsupported


def start(library_path: str) -> tuple[list[Callable[..., int]], Callable[[int], int]]:
    """Called once by libcublas.so.13: the handlers in cublas_signatures.ENTRY_POINTS order,
    and the handler of its stubs."""
    return handlers_for(cublas_signatures.ENTRY_POINTS, cublas_signatures.unsupported_names(),
                        (cublas, cublas_gemm, cublas_level2, cublas_helpers))


_STUB_COUNT = 1024   # PTXPORT_STUB_COUNT in shim.c: named stubs are numbered after it
