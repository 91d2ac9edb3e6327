"""Memory the opencl backend owns on behalf of kernels: each module's variable block (its
.global and .const variables, which the SPIR-V target's kernels take as a hidden argument;
codegen/targets/spirv_globals.py), one per (device, module), allocated and filled with the
variables' initial values on first use, and given back when the module is gone.

The blocks are ordinary allocations of the backend (Backend.allocate), so copies, fills,
bounds checks and the SVM pointers named to kernels treat them like any other memory; a
variable's device address (cuModuleGetGlobal, cudaMemcpyToSymbol) lies inside its module's
block.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ptxport.codegen.targets.spirv_globals import ModuleVariables
from ptxport.errors import UnsupportedFeatureError
from ptxport.runtime.backends import Allocation

__all__ = ["VariableBlocks"]


class VariableBlocks:
    """The variable blocks of one backend (`backend`: its allocate, free and copy hooks, and
    address_scheme)."""

    def __init__(self, backend) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._blocks: dict[tuple[int, int], Allocation] = {}

    def block(self, ordinal: int, variables: ModuleVariables) -> Allocation | None:
        """The module's block on device `ordinal` (None for a module without variables),
        made and initialized on first use."""
        if not variables.size:
            return None
        key = (ordinal, id(variables))
        with self._lock:
            found = self._blocks.get(key)
            if found is not None:
                return found
            if variables.problems:
                raise variables.problems[0]
            if variables.relocations and \
                    self._backend.address_scheme(ordinal) != "svm":
                raise UnsupportedFeatureError(
                    "module variables initialized with addresses", "spirv", None,
                    f"opencl:{ordinal} has no shared virtual memory, so the host cannot "
                    "know the device addresses such initial values hold")
            allocation = self._backend.allocate(ordinal, variables.size)
            image = np.frombuffer(variables.initial_image(allocation.address), np.uint8)
            self._backend.copy(allocation.address, image.ctypes.data, image.size, "htod")
            self._blocks[key] = allocation
            weakref.finalize(variables, self._forget, key)
            return allocation

    def _forget(self, key: tuple[int, int]) -> None:
        with self._lock:
            allocation = self._blocks.pop(key, None)
        if allocation is not None:
            self._backend.free(allocation)

    def address(self, ordinal: int, variables: ModuleVariables, name: str) -> tuple[int, int]:
        """(device address, size) of the module's variable `name`."""
        found = variables.offsets.get(name)
        if found is None:
            raise UnsupportedFeatureError(
                f"the module variable {name!r}", "spirv", None,
                "it is a texture, sampler or surface reference or an .extern declaration, "
                "which the SPIR-V target keeps no memory for")
        block = self.block(ordinal, variables)
        offset, size = found
        return (block.address + offset if block is not None else 0), size
