"""The opencl backend's module variable blocks (runtime/backends/opencl_blocks.py) given back
when their module's variables go: the finalizer, run by the garbage collector in whatever
thread allocates, never waits for a lock that thread may hold (the blocks' own, the
backend's). A stand-in backend with the hooks VariableBlocks uses: no OpenCL needed."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
from lock_holders import returns_holding

from ptxport import Device
from ptxport.codegen.targets.spirv_globals import ModuleVariables
from ptxport.runtime.backends import Allocation
from ptxport.runtime.backends.opencl_blocks import VariableBlocks


class _Backend:
    """allocate, free, copy and address_scheme, whose allocate and free take the backend's
    lock (`_lock`), as the opencl backend's do."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.live: dict[int, np.ndarray] = {}

    def address_scheme(self, ordinal: int) -> str:
        return "svm"

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        with self._lock:
            memory = np.zeros(nbytes, np.uint8)
            self.live[memory.ctypes.data] = memory
            return Allocation(memory.ctypes.data, nbytes)

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        ctypes.memmove(dst, src, nbytes)

    def free(self, allocation: Allocation) -> None:
        with self._lock:
            del self.live[allocation.address]


def _a_block() -> tuple[_Backend, VariableBlocks, list[ModuleVariables], int]:
    """(backend, blocks, [a module's variables], the address of their block)."""
    backend = _Backend()
    blocks = VariableBlocks(backend)
    variables = [ModuleVariables({"x": (0, 4), "y": (8, 8)}, 16, bytes(range(16)), ())]
    block = blocks.block(0, variables[0])
    assert blocks.block(0, variables[0]) is block
    assert bytes(backend.live[block.address]) == bytes(range(16))
    return backend, blocks, variables, block.address


def test_a_modules_block_goes_with_its_variables():
    backend, blocks, variables, address = _a_block()
    variables.clear()
    assert not blocks._blocks and address not in backend.live


def test_variables_dropped_inside_the_blocks_lock_give_their_block_back():
    backend, blocks, variables, address = _a_block()
    assert returns_holding(blocks._lock, variables.clear)
    assert not blocks._blocks     # (at once: variables made later may have the same id)
    Device("cpu").default_stream.sync()
    assert address not in backend.live


def test_variables_dropped_inside_the_backends_lock_give_their_block_back_later():
    backend, blocks, variables, address = _a_block()
    assert returns_holding(backend._lock, variables.clear)
    assert not blocks._blocks
    Device("cpu").default_stream.sync()     # (the free left for the next submit or sync)
    assert address not in backend.live
