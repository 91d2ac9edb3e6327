"""Where the drop-in libcublasLt.so.13 enters Python: its handlers (cublaslt.py), wrapped as
cuBLAS's are (cublas_dispatch.py)."""

from __future__ import annotations

from collections.abc import Callable

from ptxport.compat import cublas_signatures, cublaslt
from ptxport.compat.cublas_dispatch import handlers_for

__all__ = ["start"]


def start(library_path: str) -> tuple[list[Callable[..., int]], Callable[[int], int]]:
    """Called once by libcublasLt.so.13: the handlers in cublas_signatures.LT_ENTRY_POINTS
    order, and the handler of its stubs."""
    return handlers_for(cublas_signatures.LT_ENTRY_POINTS,
                        cublas_signatures.lt_unsupported_names(), (cublaslt,))
