"""Handlers of the functions in cudart's hidden export tables (dark_api.py lists the tables).

cudart registers each fat binary of the program through CUDART_INTERFACE (one of the
get_module_from_cubin slots), asks for its primary context there, keeps per-context values
in CONTEXT_LOCAL_STORAGE, and checks INTEGRITY_CHECK's answer before its first allocation.
"""

from __future__ import annotations

import ctypes
import ctypes.util

from ptxport.compat import dark_api, driver, execution
from ptxport.compat.state import INVALID_HANDLE, NOT_SUPPORTED, SUCCESS, CudaError, put, state

_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.pthread_self.restype = ctypes.c_ulong


def ptxport_cudart_get_module_from_cubin(module: int, wrapper: int) -> int:
    put(ctypes.c_void_p, module, execution.load_module(wrapper, execution.program_name()))
    return SUCCESS


def ptxport_cudart_get_module_from_cubin_ext1(module: int, wrapper: int, arg3: int, arg4: int,
                                              arg5: int) -> int:
    if arg3 or arg4 or arg5:
        raise CudaError(NOT_SUPPORTED, "CUDART_INTERFACE[6] with arguments ptxport does not "
                                       "know")
    return ptxport_cudart_get_module_from_cubin(module, wrapper)


def ptxport_cudart_get_module_from_cubin_ext2(header: int, module: int, arg3: int, arg4: int,
                                              arg5: int) -> int:
    return ptxport_cudart_get_module_from_cubin_ext1(module, header, arg3, arg4, arg5)


def ptxport_cudart_primary_context(pctx: int, dev: int) -> int:
    return driver.cuDevicePrimaryCtxRetain(pctx, dev)


def ptxport_cudart_fn7(arg: int) -> int:
    return SUCCESS


def ptxport_cudart_load_compilers() -> int:
    return SUCCESS   # CUDA loads its PTX compiler here; ptxport's is Python


def _buffer(ptr: int, size: int, array: ctypes.Array) -> int:
    put(ctypes.c_void_p, ptr, ctypes.addressof(array))
    put(ctypes.c_size_t, size, len(array))
    return SUCCESS


def ptxport_tools_get_buffer1(ptr: int, size: int) -> int:
    return _buffer(ptr, size, driver.export_tables().buffer1)


def ptxport_tools_get_buffer2(ptr: int, size: int) -> int:
    return _buffer(ptr, size, driver.export_tables().buffer2)


def _context(ctx: int) -> driver.Context:
    if ctx == 0:
        ctx = getattr(state.current, "context", None) or driver.context_handle()
    return state.lookup(ctx, driver.Context, "CUcontext")


def ptxport_cls_put(ctx: int, key: int, value: int, destructor: int) -> int:
    _context(ctx).storage[key] = value
    return SUCCESS


def ptxport_cls_delete(ctx: int, key: int) -> int:
    _context(ctx).storage.pop(key, None)
    return SUCCESS


def ptxport_cls_get(value: int, ctx: int, key: int) -> int:
    storage = _context(ctx).storage
    if key not in storage:
        return INVALID_HANDLE   # what CUDA answers for a key never put; not an error to log
    put(ctypes.c_void_p, value, storage[key])
    return SUCCESS


def ptxport_context_check(ctx: int, result1: int, result2: int) -> int:
    put(ctypes.c_uint, result1, 0)
    return SUCCESS


def ptxport_context_check_fn3() -> int:
    return 0


def ptxport_device_extended_13(result: int, dev: int) -> int:
    """DEVICE_EXTENDED_RT[13]: a byte about the device whose meaning is unknown; ZLUDA saw
    NVIDIA's driver answer 0 (GTX 1060), and so does ptxport."""
    put(ctypes.c_ubyte, result, 0)
    return SUCCESS


def ptxport_integrity_check(version: int, unix_seconds: int, result: int) -> int:
    tables = driver.export_tables()
    identities = [dark_api.DeviceIdentity(
        driver.device_uuid(ordinal), driver.device_attribute(50, ordinal),
        driver.device_attribute(33, ordinal), driver.device_attribute(34, ordinal))
        for ordinal in range(len(state.devices))]
    answer = dark_api.integrity_check(
        version, unix_seconds, driver.DRIVER_VERSION,
        _libc.pthread_self(), tables.addresses["CUDART_INTERFACE"],
        tables.addresses["INTEGRITY_CHECK"], tables.slot("INTEGRITY_CHECK", 1), identities)
    if not result:
        raise CudaError(1, "the integrity check's result pointer is NULL")
    ctypes.memmove(result, answer, 16)
    return SUCCESS
