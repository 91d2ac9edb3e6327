"""The runtime's side of nvcc's host code: registration of fat binaries, kernels and
variables, the `<<<...>>>` launch sequence, symbols and function queries (libcudart.so.13).

nvcc's host code registers each fat binary at startup (`__cudaRegisterFatBinary`), then the
host stub of each kernel with its device name (`__cudaRegisterFunction`) and each
`__device__`/`__constant__`/`__managed__` variable with the address of its host shadow. A
`<<<g, b, s, st>>>` pushes its configuration, and the kernel's stub pops it and launches
through `__cudaGetKernel` + `__cudaLaunchKernel` (or `cudaLaunchKernel` with the stub's
address, with -D__NV_LEGACY_LAUNCH). A fat binary's PTX is compiled at the first use of one of
its kernels or variables (CUDA's lazy loading), through the driver handlers (execution.py):
the parameters of a launch are packed from the PTX `.entry` list there.
"""

from __future__ import annotations

import ctypes
import threading

from ptxport.compat import execution, memory
from ptxport.compat.state import SUCCESS, CudaError, put, read_string, state

__all__ = ["FatBinary", "function_of"]

INVALID_SYMBOL = 13              # cudaErrorInvalidSymbol
INVALID_DEVICE_FUNCTION = 98     # cudaErrorInvalidDeviceFunction
MISSING_CONFIGURATION = 52       # cudaErrorMissingConfiguration


class FatBinary:
    """One registered fat binary: its wrapper's address, and its module once loaded. The
    program keeps `cell`'s address as its handle (a `void **`)."""

    def __init__(self, wrapper: int):
        self.wrapper = wrapper
        self.cell = ctypes.c_void_p(wrapper)
        self.module: int | None = None
        self.managed: list[tuple[int, str]] = []   # (host pointer's address, name)
        self.lock = threading.Lock()

    @property
    def handle(self) -> int:
        return ctypes.addressof(self.cell)

    def loaded(self) -> execution.Module:
        with self.lock:
            if self.module is None:
                self.module = execution.load_module(self.wrapper, execution.program_name())
        return state.lookup(self.module, execution.Module, "CUmodule")


_binaries: dict[int, FatBinary] = {}             # handle -> binary
_functions: dict[int, tuple[FatBinary, str]] = {}   # host stub -> (binary, kernel name)
_function_handles: dict[int, int] = {}           # host stub -> CUfunction handle
_variables: dict[int, tuple[FatBinary, str]] = {}   # host shadow -> (binary, variable name)
_managed_addresses: dict[int, tuple[FatBinary, str]] = {}   # managed variable's address
_configurations = threading.local()              # .stack: pushed <<<>>> configurations


def _binary(handle: int) -> FatBinary:
    binary = _binaries.get(handle)
    if binary is None:
        raise CudaError(400, f"{handle:#x} is not a handle __cudaRegisterFatBinary gave")
    return binary


# -- registration ---------------------------------------------------------------------------

def __cudaRegisterFatBinary(wrapper: int) -> int:
    binary = FatBinary(wrapper)
    _binaries[binary.handle] = binary
    return binary.handle


def __cudaRegisterFatBinaryEnd(handle: int) -> int:
    _binary(handle)
    return SUCCESS   # the PTX is compiled at first use


def __cudaUnregisterFatBinary(handle: int) -> int:
    # Called from atexit: the program's kernels are done. Forget the binary; its module's
    # compiled code stays in ptxport's cache for the next run.
    _binaries.pop(handle, None)
    return SUCCESS


def __cudaRegisterFunction(handle: int, host_fun: int, device_fun: int, device_name: int,
                           thread_limit: int, tid: int, bid: int, block: int, grid: int,
                           warp_size: int) -> int:
    _functions[host_fun] = (_binary(handle), read_string(device_name))
    return SUCCESS


def __cudaRegisterVar(handle: int, host_var: int, device_address: int, device_name: int,
                      ext: int, size: int, constant: int, is_global: int) -> int:
    _variables[host_var] = (_binary(handle), read_string(device_name))
    return SUCCESS


def __cudaRegisterManagedVar(handle: int, host_pointer: int, device_address: int,
                             device_name: int, ext: int, size: int, constant: int,
                             is_global: int) -> int:
    _binary(handle).managed.append((host_pointer, read_string(device_name)))
    return SUCCESS


def __cudaInitModule(handle: int) -> int:
    """Load the binary and point the host's pointer of each `__managed__` variable at its
    memory (nvcc's host code reads a managed variable through that pointer); 1 on success."""
    binary = _binary(handle)
    module = binary.loaded()
    for host_pointer, name in binary.managed:
        address, _ = execution._global(module, name, managed=True)
        put(ctypes.c_void_p, host_pointer, address)
        _managed_addresses[address] = (binary, name)
    return 1


# -- launches -------------------------------------------------------------------------------

def function_of(func: int) -> int:
    """The CUfunction of a kernel named by its host stub's address (or a CUfunction)."""
    handle = _function_handles.get(func)
    if handle is not None:
        return handle
    entry = _functions.get(func)
    if entry is None:
        if isinstance(state.objects.get(func), execution.Function):
            return func
        raise CudaError(INVALID_DEVICE_FUNCTION, f"{func:#x} is not a registered kernel (a "
                                                 "__global__ function's host stub)")
    binary, name = entry
    handle = _function_handles[func] = execution._function(binary.loaded(), name)
    return handle


def __cudaPushCallConfiguration(gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                                shared: int, stream: int) -> int:
    stack = getattr(_configurations, "stack", None)
    if stack is None:
        stack = _configurations.stack = []
    stack.append((gx, gy, gz, bx, by, bz, shared, stream))
    return 0


def __cudaPopCallConfiguration(grid: int, block: int, shared: int, stream: int) -> int:
    stack = getattr(_configurations, "stack", None)
    if not stack:
        raise CudaError(MISSING_CONFIGURATION, "a kernel's stub ran without a <<<>>> "
                                               "configuration")
    gx, gy, gz, bx, by, bz, nbytes, handle = stack.pop()
    (ctypes.c_uint * 3).from_address(grid)[:] = (gx, gy, gz)
    (ctypes.c_uint * 3).from_address(block)[:] = (bx, by, bz)
    put(ctypes.c_size_t, shared, nbytes)
    put(ctypes.c_void_p, stream, handle)
    return SUCCESS


def __cudaGetKernel(kernel: int, func: int) -> int:
    put(ctypes.c_void_p, kernel, function_of(func))
    return SUCCESS


def __cudaLaunchKernel(kernel: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       args: int, shared: int, stream: int) -> int:
    return execution.cuLaunchKernel(function_of(kernel), gx, gy, gz, bx, by, bz, shared,
                                    stream, args, 0)


def cudaLaunchKernel(func: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                     args: int, shared: int, stream: int) -> int:
    return __cudaLaunchKernel(func, gx, gy, gz, bx, by, bz, args, shared, stream)


def cudaLaunchCooperativeKernel(func: int, gx: int, gy: int, gz: int, bx: int, by: int,
                                bz: int, args: int, shared: int, stream: int) -> int:
    return execution.cuLaunchKernel(function_of(func), gx, gy, gz, bx, by, bz, shared,
                                    stream, args, 0, cooperative=True)


def cudaLaunchKernelExC(config: int, func: int, args: int) -> int:
    """cudaLaunchConfig_t has CUlaunchConfig's layout but for dynamicSmemBytes, a size_t
    where the driver's is an unsigned int (the same offset; its padding follows): the driver
    handler reads it in place."""
    if not config:
        raise CudaError(1, "the cudaLaunchConfig_t pointer is NULL")
    shared = ctypes.c_size_t.from_address(config + 24).value
    if shared >= 1 << 32:
        raise CudaError(1, f"{shared} bytes of dynamic shared memory")
    return execution.cuLaunchKernelEx(config, function_of(func), args, 0)


# -- function queries -----------------------------------------------------------------------

class _FuncAttributes(ctypes.Structure):
    """struct cudaFuncAttributes (driver_types.h, CUDA 13)."""

    _fields_ = [("sharedSizeBytes", ctypes.c_size_t), ("constSizeBytes", ctypes.c_size_t),
                ("localSizeBytes", ctypes.c_size_t), ("maxThreadsPerBlock", ctypes.c_int),
                ("numRegs", ctypes.c_int), ("ptxVersion", ctypes.c_int),
                ("binaryVersion", ctypes.c_int), ("cacheModeCA", ctypes.c_int),
                ("maxDynamicSharedSizeBytes", ctypes.c_int),
                ("preferredShmemCarveout", ctypes.c_int), ("rest", ctypes.c_int * 22)]


def cudaFuncGetAttributes(attributes: int, func: int) -> int:
    """The CU_FUNC_ATTRIBUTEs 0 to 9 (cuFuncGetAttribute's values) in the runtime's struct."""
    if not attributes:
        raise CudaError(1, "the cudaFuncAttributes pointer is NULL")
    handle = function_of(func)
    value = ctypes.c_int()
    order = ("maxThreadsPerBlock", "sharedSizeBytes", "constSizeBytes", "localSizeBytes",
             "numRegs", "ptxVersion", "binaryVersion", "cacheModeCA",
             "maxDynamicSharedSizeBytes", "preferredShmemCarveout")
    result = _FuncAttributes()
    for attribute, field in enumerate(order):
        execution.cuFuncGetAttribute(ctypes.addressof(value), attribute, handle)
        setattr(result, field, value.value)
    ctypes.memmove(attributes, ctypes.addressof(result), ctypes.sizeof(result))
    return SUCCESS


def cudaFuncSetAttribute(func: int, attribute: int, value: int) -> int:
    return execution.cuFuncSetAttribute(function_of(func), attribute, value)


def cudaFuncSetCacheConfig(func: int, config: int) -> int:
    return execution.cuFuncSetCacheConfig(function_of(func), config)


def cudaFuncGetName(name: int, func: int) -> int:
    return execution.cuFuncGetName(name, function_of(func))


def cudaFuncGetParamInfo(func: int, index: int, offset: int, size: int) -> int:
    return execution.cuFuncGetParamInfo(function_of(func), index, offset, size)


def cudaFuncGetParamCount(func: int, count: int) -> int:
    return execution.cuFuncGetParamCount(function_of(func), count)


def cudaGetFuncBySymbol(function: int, symbol: int) -> int:
    put(ctypes.c_void_p, function, function_of(symbol))
    return SUCCESS


def cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks: int, func: int, block_size: int,
                                                  dynamic: int) -> int:
    return execution.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks, function_of(func), block_size, dynamic)


def cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        blocks: int, func: int, block_size: int, dynamic: int, flags: int) -> int:
    return execution.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        blocks, function_of(func), block_size, dynamic, flags)


# -- symbols --------------------------------------------------------------------------------

def symbol(host_var: int) -> tuple[int, int]:
    """(device address, size) of the variable whose host shadow is at `host_var` (for a
    `__managed__` variable, its memory)."""
    entry = _variables.get(host_var)
    managed = entry is None
    entry = entry or _managed_addresses.get(host_var)
    if entry is None:
        raise CudaError(INVALID_SYMBOL, f"{host_var:#x} is not a registered __device__, "
                                        "__constant__ or __managed__ variable")
    binary, name = entry
    return execution._global(binary.loaded(), name, managed=managed)


def _symbol_range(host_var: int, count: int, offset: int) -> int:
    address, size = symbol(host_var)
    if offset + count > size:
        raise CudaError(1, f"{count} bytes at offset {offset} overrun the variable's "
                           f"{size} bytes")
    return address + offset


def cudaMemcpyToSymbol(host_var: int, src: int, count: int, offset: int, kind: int) -> int:
    return memory.cuMemcpy(_symbol_range(host_var, count, offset), src, count)


def cudaMemcpyFromSymbol(dst: int, host_var: int, count: int, offset: int, kind: int) -> int:
    return memory.cuMemcpy(dst, _symbol_range(host_var, count, offset), count)


def cudaMemcpyToSymbolAsync(host_var: int, src: int, count: int, offset: int, kind: int,
                            stream: int) -> int:
    return memory.cuMemcpyAsync(_symbol_range(host_var, count, offset), src, count, stream)


def cudaMemcpyFromSymbolAsync(dst: int, host_var: int, count: int, offset: int, kind: int,
                              stream: int) -> int:
    return memory.cuMemcpyAsync(dst, _symbol_range(host_var, count, offset), count, stream)


def cudaGetSymbolAddress(pointer: int, host_var: int) -> int:
    put(ctypes.c_void_p, pointer, symbol(host_var)[0])
    return SUCCESS


def cudaGetSymbolSize(size: int, host_var: int) -> int:
    put(ctypes.c_size_t, size, symbol(host_var)[1])
    return SUCCESS
