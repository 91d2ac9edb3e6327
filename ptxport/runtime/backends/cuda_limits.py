"""The CUDA driver's per-context limits for ptxport's cuda backend: cudaLimitMallocHeapSize
(the device heap of kernels' malloc) and cudaLimitStackSize (each thread's stack), set on
every device's context as cudaDeviceSetLimit sets them on the current one (compat/driver.py
reaches them through the backend's set_heap_size and set_stack_size)."""

from __future__ import annotations

from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import cuda

__all__ = ["set_limit"]

# the CUlimit name -> what it sizes, for messages
_WHAT = {"CU_LIMIT_MALLOC_HEAP_SIZE": "its malloc heap",
         "CU_LIMIT_STACK_SIZE": "each thread's stack"}


def set_limit(backend, limit: str, nbytes: int) -> None:
    """cuCtxSetLimit(`limit`, `nbytes`) on every device of `backend` (the cuda Backend).
    Raises InvalidValueError where the driver refuses it (the heap once a kernel using
    malloc has run, as CUDA does)."""
    driver = cuda._driver()
    for ordinal in range(backend.device_count()):
        backend._contexts.enter(ordinal)
        code, *_ = driver.cuCtxSetLimit(getattr(driver.CUlimit, limit), nbytes)
        if code != 0:
            raise InvalidValueError(f"cuda:{ordinal} cannot make {_WHAT[limit]} {nbytes} "
                                    f"bytes: {cuda._error_name(code)}")
