"""cudaLimitStackSize on the cpu device: the stack of each thread whose kernel's calls may
recurse or use stack memory (alloca), where device functions' escaping local variables and
alloca'd memory live (codegen/targets/cpu/local_stack.py).

CUDA's semantics (cudaDeviceSetLimit): the stack size in bytes of each GPU thread, 1 KiB
unless set, for the device's kernels from then on; cudaDeviceGetLimit returns it, rounded up
to a multiple of 16 bytes as NVIDIA's driver rounds it (seen on an H100, driver 580: 1 reads
back 16, 1000 reads 1008, 0 stays 0). A kernel
whose calls are known when it is compiled (no recursion, no alloca) gets the stack its
deepest chain of calls needs, as the CUDA driver sizes a kernel's stack when ptxas could;
the others get the limit. A worker runs one thread's chain of calls at a time, so its local
stack is one thread's stack: the launch sets the plan's stack size to the limit (and drops
the executor's workers sized for another), and a call or alloca that would pass it is not
made and raises IllegalAddressError naming the limit.
"""

from __future__ import annotations

import threading

from ptxport.codegen.targets.cpu.local_stack import DEFAULT_STACK_LIMIT
from ptxport.errors import InvalidValueError

__all__ = ["MAX_STACK_LIMIT", "set_stack_size", "sized_for_launch", "stack_size"]

# The most a thread may have: each worker holds one such stack (64 MiB: 1 GiB on 16 cores).
# NVIDIA's driver refuses less (on an H100, driver 580: 64 KiB accepted, 512 KiB refused;
# the exact bound is not measured yet), so a value between is accepted here and not there.
MAX_STACK_LIMIT = 64 << 20

_ROUNDING = 16
_size = DEFAULT_STACK_LIMIT
_lock = threading.Lock()


def stack_size() -> int:
    """cudaDeviceGetLimit(cudaLimitStackSize): the bytes of each thread's stack."""
    return _size


def set_stack_size(nbytes: int) -> None:
    """cudaDeviceSetLimit(cudaLimitStackSize, nbytes), for launches from now on."""
    global _size
    nbytes = -(-int(nbytes) // _ROUNDING) * _ROUNDING
    if not 0 <= nbytes <= MAX_STACK_LIMIT:
        raise InvalidValueError(
            f"cudaLimitStackSize of {nbytes} bytes: the cpu device gives each thread a stack "
            f"of 0 to {MAX_STACK_LIMIT} bytes")
    with _lock:
        _size = nbytes


def sized_for_launch(binary) -> None:
    """Give `binary` (a CpuKernelBinary whose stack is the limit's) a stack of the limit's
    size before it runs; the executor's workers, which hold stacks of the size they were
    made with, are made again when it changed."""
    size = _size
    if binary.plan.local_stack != size:
        with _lock:
            binary.plan.local_stack = size
            binary.__dict__.pop("_teams", None)    # (executor._team's, of the old size)
