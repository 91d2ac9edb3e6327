"""Loading a CPU kernel image (object code and plan) into LLVM's JIT, with the module's variables
in host memory shared by its kernels, and binding the entry points the executor calls.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
import weakref
from collections.abc import Callable
from functools import cache, cached_property

import llvmlite.binding as llvm
import numpy as np

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.targets.cpu import runtime_functions as cpu_runtime
from ptxport.codegen.targets.cpu.calls import ASSERT_SYMBOL, PRINTF_SYMBOL
from ptxport.codegen.targets.cpu.device_runtime import DEVICE_RUNTIME_SYMBOL
from ptxport.codegen.targets.cpu.image import Image
from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, target_machine
from ptxport.codegen.targets.cpu.module import holds_function_addresses
from ptxport.errors import CompileError, InternalError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import runs_to_completion
from ptxport.ptx.ast import FloatImm, IntImm
from ptxport.runtime.backends.cpu import device_launch, stack_limit
from ptxport.runtime.backends.cpu import heap as cpu_heap

RunThreads = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


RunBlock = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
RunWaitingBlocks = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)
RunBlocks = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

# LLVM turns long runs of zero stores or copies (a warp frame's registers set before a loop:
# Triton's 32 accumulators of an sm_90 matmul) into calls of these; the JIT does not search
# the process for them by itself.
_LIBC = ctypes.CDLL(None)
for _name in ("memset", "memcpy", "memmove"):
    llvm.add_symbol(_name, ctypes.cast(getattr(_LIBC, _name), ctypes.c_void_p).value)



_STORAGE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STORAGE_LOCK = threading.Lock()


def module_storage(module: ir.Module) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the module's .global and .const variables (all but
    function-address tables), in host memory shared by every kernel of this module and kept
    as long as the module, filled with their initial values."""
    with _STORAGE_LOCK:
        found = _STORAGE.get(module)
        if found is not None:
            return found[0]
        variables = [v for v in module.globals.values()
                     if v.space in ("global", "const") and not holds_function_addresses(v)]
        arrays, where = [], {}
        for var in variables:
            size, align = max(var.size, 1), max(var.alignment, 16)
            array = np.zeros(size + align, np.uint8)
            start = (-array.ctypes.data) % align
            arrays.append(array)
            where[var.name] = (array.ctypes.data + start, var.size)
        for var, array in zip(variables, arrays, strict=True):
            data = initial_bytes(var, where)
            address, _ = where[var.name]
            start = address - array.ctypes.data
            array[start:start + len(data)] = np.frombuffer(data, np.uint8)
        _STORAGE[module] = (where, arrays)
        return where


def initial_bytes(var: ir.Variable, where: dict) -> bytes:
    """A variable's initial contents (zeros past its initializer), by PTX's rules: integers
    and floats of the element's size, addresses of variables."""
    element = 8 if var.type.kind == "opaque" else max(var.type.size, 1)
    out = bytearray()
    for item in var.init or []:
        if isinstance(item, IntImm):
            value = item.value
            if var.type.kind == "float":
                bits = {2: "<e", 4: "<f", 8: "<d"}[element]
                out += struct.pack(bits, float(value))
                continue
        elif isinstance(item, FloatImm):
            if var.type.kind == "float" and item.width // 8 != element:
                raise UnsupportedFeatureError("initializer", "cpu", None,
                                              f"cannot initialize '{var.name}' with {item!r}")
            value = item.bits
        elif isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Variable) \
                and item.target.name in where:
            value = where[item.target.name][0] + item.offset
        else:
            raise UnsupportedFeatureError("initializer", "cpu", None,
                                          f"cannot initialize '{var.name}' with {item!r}")
        out += (value & ((1 << (8 * element)) - 1)).to_bytes(element, "little")
    return bytes(out[:max(var.size, 0)])


class CpuKernelBinary:
    """A kernel compiled for the host: `launch` runs a whole grid on the calling thread. Made
    from the kernel's object code and plan, fresh from the lowering or from its image."""

    # the CpuOptions it was compiled with (kernels.py sets them): grids it launches from the
    # device are compiled with them too
    options = None

    def __init__(self, name: str, image: Image, module: ir.Module):
        object_code, plan = image.object_code, image.plan
        self.name, self.plan, self.module = name, plan, module
        # why the kernel runs thread by thread (None: it runs as warp gangs)
        self.gang_refusal = image.gang_refusal
        self._prepared = False
        # The object file reads its bytes in place: they must live as long as the engine.
        self.object_code = object_code
        storage = module_storage(module)
        # printf's calls name a callback that importing printf.py registers (a process that
        # loads an image has not lowered a printf, which imports it)
        from ptxport.runtime.backends.cpu import printf  # noqa: F401
        with LLVM_LOCK:
            # this module's variables, for the symbols the object leaves undefined
            for var_name, (address, _) in storage.items():
                llvm.add_symbol(f"ptx.{var_name}", address)
            # (making an engine loads the process's own symbols, libc's clock_gettime among
            # them, into LLVM's search: before one exists a libc function reads as missing)
            empty = llvm.parse_assembly("")
            empty.triple = llvm.get_process_triple()
            # (llvmlite's memory manager: the object's code and data in one mapping, which
            # the small code model needs: machine.kernel_machine)
            self._engine = llvm.create_mcjit_compiler(empty, target_machine(), use_lmm=True)
            missing = [symbol for symbol in cpu_runtime.undefined_symbols(object_code)
                       if not llvm.address_of_symbol(symbol)]
            if missing:
                raise CompileError(
                    f"kernel '{name}' needs {', '.join(missing)}, which this process does not "
                    "provide (a compiler runtime function); please report this to ptxport")
            near = cpu_runtime.near_references(object_code)
            if near:        # (a PLT stub aborts the process there; data may lie too far)
                raise InternalError(
                    f"the object code of kernel '{name}' reaches {', '.join(near)} by a 32-bit "
                    "offset, not through its GOT; please report this to ptxport")
            self._object_file = llvm.ObjectFileRef.from_data(object_code)
            self._engine.add_object_file(self._object_file)
            self._engine.finalize_object()
            self._bind_entry_points()

    def _bind_entry_points(self) -> None:
        address = self._engine.get_function_address
        waits = bool(self.plan.sync_points)
        # (warp gangs have no run_threads: the executor never calls it for them)
        self.run_threads = RunThreads(address("run_threads"))
        self.run_blocks = RunBlocks(address("run_blocks"))
        # (the executor's workers call the claiming entry points through entry.py's
        # trampolines, with their arguments in memory)
        self.run_claimed_blocks_address = address("run_claimed_blocks")
        self.run_claimed_waiting_blocks_address = address("run_claimed_waiting_blocks") \
            if waits else 0
        # Completes the common waits natively (codegen/targets/cpu/native.py); tests turn it off to
        # compare with the general resolver.
        self.run_block = RunBlock(address("run_block")) if waits else None
        self.run_waiting_blocks = (RunWaitingBlocks(address("run_waiting_blocks"))
                                   if waits else None)
        self.native_waits = True

    def image(self) -> Image:
        """What a later process needs to run this kernel without compiling it."""
        return Image(self.plan, self.object_code, self.gang_refusal)

    def for_block(self, block) -> CpuKernelBinary:
        """The code for blocks of shape `block`: this one, for every shape."""
        return self

    def prepare(self, block) -> bool:
        """Ready for a launch with blocks of shape `block`: True the first time (the code was
        compiled or loaded for it, just before)."""
        first, self._prepared = not self._prepared, True
        return first

    @cached_property
    def runs_to_completion(self) -> bool:
        """Whether the kernel ends by itself, soon (ptxport.ir.analysis.runs_to_completion)."""
        return runs_to_completion(self.module.functions[self.name])

    @cached_property
    def calls_printf(self) -> bool:
        """Whether the kernel's code calls printf's or assert's callbacks (its object file
        names them as undefined symbols)."""
        symbols = set(cpu_runtime.undefined_symbols(self.object_code))
        return bool(symbols & {PRINTF_SYMBOL, ASSERT_SYMBOL})

    @cached_property
    def launches_grids(self) -> bool:
        """Whether the kernel's code calls CUDA's device runtime (dynamic parallelism:
        device_launch.py runs the grids it launches)."""
        return DEVICE_RUNTIME_SYMBOL in set(cpu_runtime.undefined_symbols(self.object_code))

    @cached_property
    def global_ranges(self) -> tuple[tuple[int, int], ...]:
        """(address, size) of the module's .global and .const variables in this binary (they
        stay where its code was loaded)."""
        ranges = []
        storage = module_storage(self.module)
        for var in self.module.globals.values():
            if var.space in ("global", "const") and var.size:
                address = storage[var.name][0] if var.name in storage else \
                    self._engine.get_global_value_address(f"ptx.{var.name}")
                ranges.append((address, var.size))
        return tuple(ranges)

    def launch(self, grid, block, dynamic_shared: int, params: bytes,
               allocations: list[tuple[int, int]] | None = None,
               timeout: float | None = None, cooperative: bool = False) -> None:
        """Run the grid. `allocations` lists the (address, size) of the device buffers the
        kernel may reach; every global or generic access is then checked against them (and
        the module's variables, shared and local memory), and an access outside all of them
        raises IllegalAddressError. None runs without checks. A launch still running after
        `timeout` seconds is stopped and raises KernelTimeoutError. The device heap, once a
        kernel using malloc or free reserves it, is one more allocation of every launch.
        `cooperative`: a cooperative launch (executor.run_grid)."""
        if self.plan.stack_from_limit:      # (recursion, alloca: cudaLimitStackSize)
            stack_limit.sized_for_launch(self)
        if self.plan.uses_heap:
            cpu_heap.HEAP.reserve()
        heap = cpu_heap.HEAP.range()
        if allocations is not None and heap is not None:
            allocations = _with_heap(allocations, heap)
        if self.launches_grids:     # (dynamic parallelism)
            device_launch.run_grid(self, tuple(grid), tuple(block), dynamic_shared, params,
                                   allocations, timeout,
                                   functools.partial(_executor().run_grid,
                                                     cooperative=cooperative))
            return
        _executor().run_grid(self, tuple(grid), tuple(block), dynamic_shared, params,
                             allocations, timeout, cooperative)


    def starter(self, block, live_ranges: Callable[[], tuple | None]):
        """What begins this kernel's launches (of blocks of shape `block`) early on the
        worker pool's threads (early.Starter), given the live allocations' ranges; None for
        a kernel whose launches launch() must run (the stack or the device heap set up for
        it, printf's log, grids it launches)."""
        if self.plan.stack_from_limit or self.plan.uses_heap or self.calls_printf \
                or self.launches_grids:
            return None
        return _early().Starter(self, live_ranges, cpu_heap.HEAP.range, _with_heap)


# the last (allocations, heap, both): the executor keeps its workers' allocation tables
# while the same allocations object comes again
_LAST_WITH_HEAP: list[tuple] = [((), None, ())]


def _with_heap(allocations, heap: tuple[int, int]) -> tuple:
    """The allocations and the device heap as one tuple: the same object for the same ones
    (a new list at every launch had the executor set up every worker again)."""
    last = _LAST_WITH_HEAP[0]      # (one read: replaced whole)
    if last[0] is allocations and last[1] == heap:
        return last[2]
    both = (*allocations, heap)
    _LAST_WITH_HEAP[0] = (allocations, heap, both)
    return both


@cache
def _early():
    from ptxport.runtime.backends.cpu import early

    return early


@cache
def _executor():
    # (imported at the first launch, not at the top: the executor imports this module's
    # users; a function-level import statement costs a microsecond at every launch)
    from ptxport.runtime.backends.cpu import executor

    return executor
