"""cuBLAS's handlers: handles and their modes, status names, and Level-1 routines; the GEMMs
are in cublas_gemm.py. cublas_dispatch.py gives the shim one handler per name of
cublas_signatures.py and turns the errors raised here into cuBLAS status codes.

A handle is bound to a CUDA stream (cublasSetStream), and its work runs in that stream's
order through the driver shim's own stream rules (streams.enqueue), so a cuBLAS call and the
program's kernels and copies see each other's results as on a GPU. On the cpu device a device
pointer is a host pointer: the routines run numpy (its OpenBLAS, multi-threaded) on views of
device memory, without copies. On GPU devices (cuda, hip, opencl) the GEMMs run ptxport's
portable GEMM kernels (ptxport.blas.portable) and the other routines kernels of their own
(cublas_gpu.py); what runs only on the host there is refused with CUBLAS_STATUS_NOT_SUPPORTED
and says why (device_array).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

from ptxport.compat import streams
from ptxport.compat.state import put, state
from ptxport.errors import PtxportError

__all__ = ["CublasError", "Handle", "illegal", "in_stream_order", "vector", "xerbla"]

# cublasStatus_t (cublas_api.h)
SUCCESS = 0
NOT_INITIALIZED = 1
ALLOC_FAILED = 3
INVALID_VALUE = 7
ARCH_MISMATCH = 8
MAPPING_ERROR = 11
EXECUTION_FAILED = 13
INTERNAL_ERROR = 14
NOT_SUPPORTED = 15
LICENSE_ERROR = 16

# The release whose API this library follows (CUBLAS_VER_MAJOR, _MINOR, _PATCH), and the
# CUDA runtime version that release was built with (cublasGetCudartVersion).
VERSION = (13, 0, 2)
CUDART_VERSION = 13000

POINTER_MODE_HOST, POINTER_MODE_DEVICE = 0, 1
_MATH_MODES = {0, 1, 2, 3, 4}          # DEFAULT, TENSOR_OP, PEDANTIC, TF32_TENSOR_OP, BF16X9
_DISALLOW_REDUCED_PRECISION = 16       # a flag that may be or'ed into a math mode

_STATUS = {
    SUCCESS: ("CUBLAS_STATUS_SUCCESS", "the operation completed successfully"),
    NOT_INITIALIZED: ("CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"),
    ALLOC_FAILED: ("CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"),
    INVALID_VALUE: ("CUBLAS_STATUS_INVALID_VALUE",
                    "an invalid numeric value was used as an argument"),
    ARCH_MISMATCH: ("CUBLAS_STATUS_ARCH_MISMATCH",
                    "an absent device architectural feature is required"),
    MAPPING_ERROR: ("CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"),
    EXECUTION_FAILED: ("CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"),
    INTERNAL_ERROR: ("CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"),
    NOT_SUPPORTED: ("CUBLAS_STATUS_NOT_SUPPORTED",
                    "the functionality requested is not supported"),
    LICENSE_ERROR: ("CUBLAS_STATUS_LICENSE_ERROR",
                    "the functionality requested requires some license"),
}
_UNKNOWN_STATUS = ("CUBLAS_STATUS_UNKNOWN", "an unknown status")
# C strings handed to the program live as long as the process: status -> (name, text).
_STATUS_STRINGS: dict[int, tuple[ctypes.Array, ctypes.Array]] = {}


class CublasError(PtxportError):
    """A cuBLAS call fails with `status`; the message (if any) goes to stderr. `xerbla`,
    (routine, parameter number), is the report cuBLAS itself prints on stdout for an illegal
    argument (see xerbla)."""

    def __init__(self, status: int, message: str = "", xerbla: tuple[str, int] | None = None):
        super().__init__(message)
        self.status = status
        self.xerbla = xerbla


def illegal(routine: str, position: int, message: str) -> CublasError:
    """CUBLAS_STATUS_INVALID_VALUE for parameter `position` (counted as reference BLAS counts:
    the handle is not a parameter) of `routine`, with cuBLAS's xerbla report."""
    return CublasError(INVALID_VALUE, message, (routine, position))


# -- cuBLAS's report of an illegal argument -----------------------------------------------------

_XERBLA = " ** On entry to %s parameter number %d had an illegal value\n"


def xerbla(routine: str, position: int) -> None:
    """Print cuBLAS's line for an illegal argument, as NVIDIA's library does: with the
    program's own C stdio `printf` (libcuBLAS's format string), so that it lands in the
    program's stdout buffer between the program's own lines. Routine names follow cuBLAS's
    ("SGEMM ", with the blank that pads BLAS's six-letter names; "SgemmStridedBatched")."""
    ctypes.CDLL(None).printf(_XERBLA.encode(), routine.encode(), ctypes.c_int(position))


def cublasXerbla(routine: int, info: int) -> int:
    """void cublasXerbla(const char *srName, int info): the report itself, for programs that
    call it (legacy cublas.h documents it)."""
    xerbla(ctypes.string_at(routine).decode(errors="replace") if routine else "", info)
    return SUCCESS


class Handle:
    """What a cublasHandle_t stands for: its stream and modes."""

    def __init__(self) -> None:
        self.stream = 0                       # the CUstream handle; 0: the default stream
        self.pointer_mode = POINTER_MODE_HOST
        self.math_mode = 0
        self.atomics_mode = 0
        self.workspace = (0, 0)               # (address, bytes): kept, not needed on the CPU


def handle_of(handle: int) -> Handle:
    obj = state.objects.get(handle)
    if not isinstance(obj, Handle):
        raise CublasError(NOT_INITIALIZED, f"{handle:#x} is not a cuBLAS handle (made by "
                                           "cublasCreate and not destroyed)")
    return obj


# -- handles and modes ------------------------------------------------------------------------

def cublasCreate_v2(handle_out: int) -> int:
    if not handle_out:
        raise CublasError(INVALID_VALUE, "the pointer for the handle is NULL")
    put(ctypes.c_void_p, handle_out, state.handle(Handle()))
    return SUCCESS


def cublasDestroy_v2(handle: int) -> int:
    h = handle_of(handle)
    streams.enqueue(h.stream, lambda: None, sync=True)   # its work has finished, as in cuBLAS
    del state.objects[handle]
    return SUCCESS


def cublasGetVersion_v2(handle: int, version: int) -> int:
    major, minor, patch = VERSION
    put(ctypes.c_int, version, major * 10000 + minor * 100 + patch)
    return SUCCESS


def cublasGetProperty(kind: int, value: int) -> int:
    if kind not in (0, 1, 2):   # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        raise CublasError(INVALID_VALUE, f"libraryPropertyType {kind} is not one of 0, 1, 2")
    put(ctypes.c_int, value, VERSION[kind])
    return SUCCESS


def cublasGetCudartVersion() -> int:
    return CUDART_VERSION


def _status_string(status: int, which: int) -> int:
    if status not in _STATUS_STRINGS:
        name, text = _STATUS.get(status, _UNKNOWN_STATUS)
        _STATUS_STRINGS[status] = (ctypes.create_string_buffer(name.encode()),
                                   ctypes.create_string_buffer(text.encode()))
    return ctypes.addressof(_STATUS_STRINGS[status][which])


def cublasGetStatusName(status: int) -> int:
    return _status_string(status, 0)


def cublasGetStatusString(status: int) -> int:
    return _status_string(status, 1)


def cublasSetWorkspace_v2(handle: int, workspace: int, nbytes: int) -> int:
    handle_of(handle).workspace = (workspace, nbytes)
    return SUCCESS


def cublasSetStream_v2(handle: int, stream: int) -> int:
    h = handle_of(handle)
    state.stream(stream)   # a handle that names no stream is refused here, not at first use
    h.stream = stream
    return SUCCESS


def cublasGetStream_v2(handle: int, stream_out: int) -> int:
    put(ctypes.c_void_p, stream_out, handle_of(handle).stream or None)
    return SUCCESS


def cublasGetPointerMode_v2(handle: int, mode_out: int) -> int:
    put(ctypes.c_int, mode_out, handle_of(handle).pointer_mode)
    return SUCCESS


def cublasSetPointerMode_v2(handle: int, mode: int) -> int:
    h = handle_of(handle)
    if mode not in (POINTER_MODE_HOST, POINTER_MODE_DEVICE):
        raise CublasError(INVALID_VALUE, f"pointer mode {mode} is neither "
                                         "CUBLAS_POINTER_MODE_HOST (0) nor _DEVICE (1)")
    h.pointer_mode = mode
    return SUCCESS


def cublasGetAtomicsMode(handle: int, mode_out: int) -> int:
    put(ctypes.c_int, mode_out, handle_of(handle).atomics_mode)
    return SUCCESS


def cublasSetAtomicsMode(handle: int, mode: int) -> int:
    h = handle_of(handle)
    if mode not in (0, 1):
        raise CublasError(INVALID_VALUE, f"atomics mode {mode} is neither "
                                         "CUBLAS_ATOMICS_NOT_ALLOWED (0) nor _ALLOWED (1)")
    h.atomics_mode = mode   # the CPU routines give the same results either way
    return SUCCESS


def cublasGetMathMode(handle: int, mode_out: int) -> int:
    put(ctypes.c_int, mode_out, handle_of(handle).math_mode)
    return SUCCESS


def cublasSetMathMode(handle: int, mode: int) -> int:
    h = handle_of(handle)
    if mode & ~_DISALLOW_REDUCED_PRECISION not in _MATH_MODES:
        raise CublasError(INVALID_VALUE, f"math mode {mode} is not a cublasMath_t")
    # Kept and reported back; the CPU computes FP32 work in FP32 in every mode, which each
    # mode allows (TF32 and BF16x9 modes permit, not require, the reduced precision).
    h.math_mode = mode
    return SUCCESS


# -- memory as numpy arrays -------------------------------------------------------------------

def device_array(address: int, dtype: np.dtype, count: int, what: str) -> np.ndarray:
    """The `count` elements of `dtype` at device address `address`, as a flat writable view;
    refused unless they lie inside one allocation (a wild pointer must not crash the
    program: cuBLAS on a GPU would fault, which the program sees as an error)."""
    nbytes = count * dtype.itemsize
    if nbytes == 0:
        return np.empty(0, dtype)
    if state.device.backend != "cpu":
        raise CublasError(NOT_SUPPORTED, f"on {state.device} {what} would be read on the host "
                                         "by a routine that runs only on the cpu device "
                                         "(docs/compat.md lists what runs on GPU devices): "
                                         "run with --device cpu")
    buffer = state.allocation_at(address) if address else None
    if buffer is None or address + nbytes > buffer.handle + buffer.size:
        where = "is NULL" if not address else \
            "is not in device memory" if buffer is None else \
            f"runs {address + nbytes - buffer.handle - buffer.size} byte(s) past the end of " \
            f"its allocation of {buffer.size} bytes at {buffer.handle:#x}"
        raise CublasError(INVALID_VALUE, f"{what} ({count} elements of {dtype.name} at "
                                         f"{address:#x}) {where}")
    return np.frombuffer((ctypes.c_byte * nbytes).from_address(address), dtype)


def scalar_reader(on_device: bool, address: int, dtype: np.dtype,
                  what: str) -> Callable[[], object]:
    """A function giving the scalar at `address` as the pointer mode says: read now from
    host memory, or (`on_device`) from device memory when the work runs (stream order)."""
    if not address:
        raise CublasError(INVALID_VALUE, f"{what} is NULL")
    if not on_device:
        value = np.frombuffer((ctypes.c_byte * dtype.itemsize).from_address(address), dtype)[0]
        return lambda: value
    cell = device_array(address, dtype, 1, what)
    return lambda: cell[0]


def vector(address: int, dtype: np.dtype, n: int, inc: int, what: str) -> np.ndarray:
    """Vector x of a Level-1 routine: n elements |inc| apart; with inc < 0 the first element
    is the last in memory (BLAS's rule: x[(n-1-i)*|inc|] is element i)."""
    step = abs(inc)
    flat = device_array(address, dtype, (n - 1) * step + 1, what)
    view = np.lib.stride_tricks.as_strided(flat, (n,), (step * dtype.itemsize,))
    return view[::-1] if inc < 0 else view


def _result_writer(h: Handle, address: int, dtype: np.dtype) -> Callable[[object], None]:
    """Where a reduction's result goes: host memory (the call waits for it) or device
    memory (in stream order)."""
    if not address:
        raise CublasError(INVALID_VALUE, "the result pointer is NULL")
    if h.pointer_mode == POINTER_MODE_HOST:
        cell = np.frombuffer((ctypes.c_byte * dtype.itemsize).from_address(address), dtype)
    else:
        cell = device_array(address, dtype, 1, "the result")

    def write(value: object) -> None:
        cell[0] = value

    return write


def in_stream_order(stream_handle: int, work: Callable[[], None]) -> None:
    """Run `work` in the order of CUstream `stream_handle`: at once on the calling thread
    when nothing is queued before it (the cpu device's cores are the host's, so running it
    here overlaps nothing less, and saves handing it to the stream's thread: on a loaded
    machine that hand-over cost a small GEMM milliseconds), else queued behind that work."""
    stream = streams.ordered(stream_handle)
    if streams.idle(stream):
        work()
    else:
        stream._submit(work)


def _run(h: Handle, work: Callable[[], None], waits_for_host: bool) -> int:
    """Run `work` in the handle's stream order; when a result goes to host memory, it is
    there when this returns."""
    if waits_for_host:
        streams.enqueue(h.stream, work, sync=True)
    else:
        in_stream_order(h.stream, work)
    return SUCCESS


# -- Level 1 ----------------------------------------------------------------------------------

def _on_gpu() -> bool:
    return state.device.backend != "cpu"


def _gpu():
    """cublas_gpu.py, the routines' kernels for GPU devices (imported on first use: it
    imports this module)."""
    from ptxport.compat import cublas_gpu
    return cublas_gpu


def _nrm2(dtype: np.dtype, handle: int, n: int, x: int, incx: int, result: int) -> int:
    h = handle_of(handle)
    if _on_gpu():
        return _gpu().reduce(h, "nrm2", dtype, n if incx > 0 else 0, x, incx, 0, 0, result)
    write = _result_writer(h, result, dtype)
    if n <= 0 or incx <= 0:   # BLAS's quick return: the norm is 0
        return _run(h, lambda: write(0), h.pointer_mode == POINTER_MODE_HOST)
    xs = vector(x, dtype, n, incx, "x")
    # Squares summed in double: a float vector's norm neither overflows nor underflows on
    # the way (cuBLAS scales for the same end).
    return _run(h, lambda: write(np.sqrt(np.sum(np.square(xs, dtype=np.float64)))),
                h.pointer_mode == POINTER_MODE_HOST)


def _dot(dtype: np.dtype, handle: int, n: int, x: int, incx: int, y: int, incy: int,
         result: int) -> int:
    h = handle_of(handle)
    if _on_gpu():
        return _gpu().reduce(h, "dot", dtype, n, x, incx, y, incy, result)
    write = _result_writer(h, result, dtype)
    if n <= 0:
        return _run(h, lambda: write(0), h.pointer_mode == POINTER_MODE_HOST)
    xs, ys = vector(x, dtype, n, incx, "x"), vector(y, dtype, n, incy, "y")
    return _run(h, lambda: write(np.dot(xs, ys)), h.pointer_mode == POINTER_MODE_HOST)


def _scal(dtype: np.dtype, handle: int, n: int, alpha: int, x: int, incx: int) -> int:
    h = handle_of(handle)
    if _on_gpu():
        return SUCCESS if n <= 0 or incx <= 0 else _gpu().scal(h, dtype, n, alpha, x, incx)
    read_alpha = scalar_reader(h.pointer_mode == POINTER_MODE_DEVICE, alpha, dtype, "alpha")
    if n <= 0 or incx <= 0:   # BLAS's quick return
        return SUCCESS
    xs = vector(x, dtype, n, incx, "x")

    def work() -> None:
        np.multiply(xs, read_alpha(), out=xs)

    return _run(h, work, False)


def _axpy(dtype: np.dtype, handle: int, n: int, alpha: int, x: int, incx: int, y: int,
          incy: int) -> int:
    h = handle_of(handle)
    if _on_gpu():
        return SUCCESS if n <= 0 else _gpu().axpy(h, dtype, n, alpha, x, incx, y, incy)
    read_alpha = scalar_reader(h.pointer_mode == POINTER_MODE_DEVICE, alpha, dtype, "alpha")
    if n <= 0:
        return SUCCESS
    xs, ys = vector(x, dtype, n, incx, "x"), vector(y, dtype, n, incy, "y")

    def work() -> None:
        np.add(ys, read_alpha() * xs, out=ys)

    return _run(h, work, False)


def _asum(dtype: np.dtype, handle: int, n: int, x: int, incx: int, result: int) -> int:
    h = handle_of(handle)
    if _on_gpu():
        return _gpu().reduce(h, "asum", dtype, n if incx > 0 else 0, x, incx, 0, 0, result)
    write = _result_writer(h, result, dtype)
    if n <= 0 or incx <= 0:   # BLAS's quick return: the sum is 0
        return _run(h, lambda: write(0), h.pointer_mode == POINTER_MODE_HOST)
    xs = vector(x, dtype, n, incx, "x")
    return _run(h, lambda: write(np.sum(np.abs(xs), dtype=np.float64)),
                h.pointer_mode == POINTER_MODE_HOST)


def _iamax(dtype: np.dtype, handle: int, n: int, x: int, incx: int, result: int) -> int:
    """The 1-based index of the first element of largest magnitude (0 for no elements)."""
    h = handle_of(handle)
    if _on_gpu():
        return _gpu().reduce(h, "iamax", dtype, n if incx > 0 else 0, x, incx, 0, 0, result)
    write = _result_writer(h, result, np.dtype(np.int32))
    if n <= 0 or incx <= 0:
        return _run(h, lambda: write(0), h.pointer_mode == POINTER_MODE_HOST)
    xs = vector(x, dtype, n, incx, "x")
    return _run(h, lambda: write(int(np.argmax(np.abs(xs))) + 1),
                h.pointer_mode == POINTER_MODE_HOST)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def cublasSnrm2_v2(*args: int) -> int:
    return _nrm2(_F32, *args)


def cublasDnrm2_v2(*args: int) -> int:
    return _nrm2(_F64, *args)


def cublasSdot_v2(*args: int) -> int:
    return _dot(_F32, *args)


def cublasDdot_v2(*args: int) -> int:
    return _dot(_F64, *args)


def cublasSscal_v2(*args: int) -> int:
    return _scal(_F32, *args)


def cublasDscal_v2(*args: int) -> int:
    return _scal(_F64, *args)


def cublasSaxpy_v2(*args: int) -> int:
    return _axpy(_F32, *args)


def cublasDaxpy_v2(*args: int) -> int:
    return _axpy(_F64, *args)


def cublasSasum_v2(*args: int) -> int:
    return _asum(_F32, *args)


def cublasDasum_v2(*args: int) -> int:
    return _asum(_F64, *args)


def cublasIsamax_v2(*args: int) -> int:
    return _iamax(_F32, *args)


def cublasIdamax_v2(*args: int) -> int:
    return _iamax(_F64, *args)
