"""The compute capability numba-cuda compiles for, given to it without NVIDIA's driver.

numba-cuda compiles a device function (`cuda.jit(device=True)`, `register_jitable`,
`overload`) when it types a call of one, or at decoration when it has a signature, for "the
current device": `numba.cuda.get_current_device().compute_capability`. That reads numba's
current CUDA context, and with none attached numba asks the driver for one, which fails
without a GPU. numba-cuda has no setting for this cc (NUMBA_CUDA_DEFAULT_PTX_CC reaches only
`compile_ptx`'s own default, NUMBA_FORCE_CUDA_CC only NVRTC), so `compiling_for` uses the
slot numba keeps for a context attached to the thread (the one `numba.cuda.require_context`
fills with a context activated by another library): for the duration of one compilation it
holds a `TargetContext` whose device is the ptxport target's cc, and anything else numba
would ask of that context is refused by name. The previous attachment is restored after.
"""

from __future__ import annotations

from contextlib import contextmanager

from numba.cuda.cudadrv import devices

from ptxport.errors import UnsupportedFeatureError

__all__ = ["TargetContext", "compiling_for"]


class _TargetDevice:
    """numba's view of the device being compiled for: its compute capability only."""

    def __init__(self, cc: tuple[int, int]):
        self.compute_capability = tuple(cc)

    def __getattr__(self, name: str):
        raise _refused(f"the device attribute {name}")


class TargetContext:
    """What numba-cuda reads as the current CUDA context while ptxport compiles a kernel."""

    def __init__(self, cc: tuple[int, int]):
        self.device = _TargetDevice(cc)

    def __getattr__(self, name: str):
        raise _refused(f"the CUDA context's {name}")


def _refused(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{what} (asked by numba-cuda while compiling for ptxport)", "ptxport", reason=(
            "ptxport gives numba-cuda only the compute capability to compile for; memory, "
            "modules and launches of numba's own CUDA API need NVIDIA's driver"))


@contextmanager
def compiling_for(cc: tuple[int, int]):
    """numba-cuda compiles device functions for `cc` within this block (this thread)."""
    runtime = devices._runtime
    previous = runtime._get_attached_context()
    runtime._set_attached_context(TargetContext(cc))
    try:
        yield
    finally:
        runtime._set_attached_context(previous)
