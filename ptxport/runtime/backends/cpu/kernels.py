"""CPU kernels as the backend holds them: one binary per kernel, or, for a kernel that runs as
warp gangs, one per block shape it is launched with, compiled (or loaded from its image) at
that shape's first launch and kept.
"""

from __future__ import annotations

import threading
from functools import cached_property

from ptxport.codegen.compile import compile_cpu_image
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import runs_to_completion
from ptxport.runtime.backends.cpu import device_launch
from ptxport.runtime.backends.cpu.jit import CpuKernelBinary

__all__ = ["compile_kernel", "GangKernelBinary"]


class GangKernelBinary:
    """A kernel that runs as warp gangs (codegen/targets/cpu/gang/), compiled for each block
    shape it is launched with, on that shape's first launch: thread indices, the block's size
    and the registers every lane of a warp holds alike (threadIdx.y in 32-wide blocks) are
    then constants of the code. A shape the gang path refuses sends the kernel thread by
    thread from then on, for every shape."""

    def __init__(self, name: str, module: ir.Module, options: CpuOptions):
        self.name, self.module, self.options = name, module, options
        self.gang_refusal: str | None = None
        self._shapes: dict[tuple, CpuKernelBinary] = {}
        self._scalar: CpuKernelBinary | None = None
        self._lock = threading.Lock()

    @cached_property
    def runs_to_completion(self) -> bool:
        """Whether the kernel ends by itself, soon (ptxport.ir.analysis.runs_to_completion)."""
        return runs_to_completion(self.module.functions[self.name])

    def for_block(self, block) -> CpuKernelBinary:
        """The compiled code for blocks of this shape (loaded or compiled now if it is the
        first)."""
        block = tuple(block)
        binary = self._shapes.get(block)    # (one dict read, atomic: asked at every launch)
        if binary is not None:
            return binary
        with self._lock:
            binary = self._shapes.get(block)
            if binary is None:
                binary = self._shapes[block] = self._load_or_compile(block)
            return binary

    def prepare(self, block) -> bool:
        """Compile (or load) the code for blocks of shape `block` now, if not yet: True if
        it did."""
        with self._lock:
            first = tuple(block) not in self._shapes
        self.for_block(block)
        return first

    def _load_or_compile(self, block: tuple) -> CpuKernelBinary:
        if self._scalar is not None:
            return self._scalar
        image = compile_cpu_image(self.module, self.name, self.options, block)
        binary = CpuKernelBinary(self.name, image, self.module)
        binary.options = self.options
        if image.gang_refusal is not None:
            self.gang_refusal = image.gang_refusal
            self._scalar = binary
        return binary

    def launch(self, grid, block, dynamic_shared: int, params: bytes,
               allocations: list[tuple[int, int]] | None = None,
               timeout: float | None = None, cooperative: bool = False) -> None:
        """CpuKernelBinary.launch with the code for this block shape."""
        self.for_block(block).launch(grid, block, dynamic_shared, params, allocations, timeout,
                                     cooperative)

    def starter(self, block, live_ranges):
        """CpuKernelBinary.starter of the code for this block shape."""
        return self.for_block(block).starter(block, live_ranges)


def compile_kernel(module: ir.Module, kernel: str, options: CpuOptions | None = None
                   ) -> CpuKernelBinary | GangKernelBinary:
    """`kernel` of a verified IR module, ready to launch on the host CPU: as warp gangs
    (machine code per block shape, at its first launch) where that path takes the kernel,
    else thread by thread. A kernel compiled before (in any process) is loaded from its
    image instead: nothing is lowered."""
    options = options or CpuOptions()
    image = compile_cpu_image(module, kernel, options)
    if image.plan is None:
        return GangKernelBinary(kernel, module, options)
    binary = CpuKernelBinary(kernel, image, module)
    binary.options = options
    return binary


device_launch.compile_kernel = compile_kernel   # (grids that kernels launch: device_launch.py)
