"""numba-cuda kernels on ptxport devices: a `jit` decorator shaped like numba.cuda.jit.

    from ptxport.frontends import numba as pnb

    @pnb.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)                  # numba.cuda's own device API inside kernels
        if i < x.size:
            out[i] = a * x[i] + y[i]

    saxpy[blocks, threads](np.float32(2), x, y, out)          # numpy arrays or DeviceArrays

numba-cuda compiles kernels to PTX with no GPU (numba.cuda.compile_ptx, for sm_80 by
default), but it launches them only through NVIDIA's driver, and its launch path has no
hook for another one; so this module types the arguments as numba would, compiles the
kernel once per signature with compile_ptx, and launches the PTX through ptxport with
numba's argument ABI: each array is passed as (meminfo, parent, nitems, itemsize, data,
shape..., strides...), a complex number as its two parts, a tuple as its items, a record
by reference, any other scalar as itself.

Arrays: numpy arrays (wrapped in place on the cpu device, non-contiguous ones in numba's
"A" layout; copied in and back elsewhere, as numba does for host arrays), and DeviceArrays
(`to_device`, `device_array`) that stay on their device. A launch returns once the kernel
ran. Device functions are numba's own, compiled for the kernel's compute capability, which
numba_target gives numba-cuda in place of NVIDIA's driver; numba_calls refuses the calls a
target cannot run, numba_link links `link=` files, numba_cache keeps PTX for `cache=True`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from numba import cuda, typeof
from numba import types as nbtypes
from numba.np import numpy_support

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:          # numpy < 2
    from numpy import byte_bounds

from ptxport.codegen import cooperative_groups
from ptxport.errors import ArgumentError, InvalidValueError
from ptxport.frontends.arrays import DeviceArray, copy_back, device_array, staged
from ptxport.frontends.numba_cache import cache_key, load, store
from ptxport.frontends.numba_calls import CallGraph, call_graph, refuse_unrunnable_calls
from ptxport.frontends.numba_link import linked_ptx, shims_ptx
from ptxport.frontends.numba_random import create_xoroshiro128p_states, init_xoroshiro128p_states
from ptxport.frontends.numba_target import compiling_for
from ptxport.ptx.link import link_text
from ptxport.runtime import Buffer, Device, LaunchConfig, Program, Stream, launch

__all__ = ["Kernel", "jit", "to_device", "device_array", "DeviceArray",
           "create_xoroshiro128p_states", "init_xoroshiro128p_states"]

# compile_ptx's options for a kernel, and the two Kernel keeps for itself
_KERNEL_OPTIONS = frozenset(("debug", "lineinfo", "fastmath", "opt", "forceinline",
                             "launch_bounds", "link", "cache"))
# cuda.jit's options that steer only NVIDIA's tools (ptxas' register allocation, nvJitLink's
# LTO, the driver's L1/shared split) or numba's own inlining, not what a kernel computes:
# checked as numba checks them, kept on the Kernel, and not passed to compile_ptx
_HINT_OPTIONS = frozenset(("max_registers", "lto", "shared_memory_carveout", "inline"))
_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(")


def to_device(array, device: Device | None = None) -> DeviceArray:
    """A copy of host `array` on `device` (the current device if None), as
    numba.cuda.to_device; `.numpy()` copies it back."""
    device = Device() if device is None else device
    out = device_array(array.shape, device, dtype=array.dtype) if device.backend == "cpu" \
        else device_array(np.ascontiguousarray(array), device)
    if device.backend == "cpu":
        out.numpy()[...] = array
    return out


class Kernel:
    """A numba-cuda kernel, compiled once per argument signature; launch it with
    kernel[grid, block], kernel[grid, block, stream] or kernel[grid, block, stream,
    dynamic_shared_bytes] as in numba."""

    def __init__(self, func, cc: tuple[int, int] = (8, 0), link: Sequence = (),
                 cache: bool = False, **options):
        self.py_func = func
        self.cc = cc
        self.link = tuple(link)
        self.cache = cache
        self.options = options
        self.hints: dict = {}       # cuda.jit's hints to NVIDIA's tools (jit, _hints)
        self._kernels: dict[tuple, object] = {}
        self._calls: dict[tuple, CallGraph] = {}
        self._cooperative: dict[tuple, bool] = {}

    def __getitem__(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise InvalidValueError(
                f"launch {self.py_func.__name__} as kernel[grid, block], kernel[grid, block, "
                "stream] or kernel[grid, block, stream, dynamic_shared_bytes]")
        grid, block, *rest = config
        stream = rest[0] if rest and rest[0] not in (None, 0) else None
        shared = int(rest[1]) if len(rest) > 1 else 0
        if stream is not None and not isinstance(stream, Stream):
            raise InvalidValueError(f"the stream of {self.py_func.__name__}[...] must be a "
                                    f"ptxport Stream, not {type(stream).__name__}")
        return lambda *args: self._launch(grid, block, stream, shared, args)

    def __call__(self, *args):
        raise InvalidValueError(f"kernel {self.py_func.__name__} needs a launch "
                                "configuration: call it as kernel[grid, block](...)")

    def compile(self, signature: tuple):
        """The ptxport Kernel for numba argument types `signature` (compiled on first use)."""
        kernel = self._kernels.get(signature)
        if kernel is None:
            ptx = self._ptx(signature)
            graph = self._calls[signature] = call_graph(ptx)
            # grid sync (cuda.cg.this_grid().sync()) calls cudadevrt, which numba links and
            # launches cooperatively: ptxport links its own cudadevrt functions for it
            cooperative = cooperative_groups.calls_grid_sync(graph.undefined())
            if cooperative:
                ptx = link_text([ptx, cooperative_groups.LIBRARY_PTX],
                                [f"{self.py_func.__name__}.ptx", "cooperative_groups.ptx"])
            self._cooperative[signature] = cooperative
            code = Program(ptx, code_type="ptx").compile("native")
            # numba's kernel is the first entry: link files come after its PTX
            kernel = self._kernels[signature] = code.get_kernel(_ENTRY.search(ptx).group(1))
        return kernel

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0,
                                    signature: tuple | None = None,
                                    device: Device | None = None) -> int:
        """The most blocks a cooperative launch (grid sync) of this kernel may have on
        `device` (the current one) with `blockdim` threads (an int or a tuple) and
        `dynsmemsize` bytes of dynamic shared memory, as numba's
        `kernel.overloads[signature].max_cooperative_grid_blocks`: for `signature` (numba
        argument types), or the kernel's only compiled one; 0 where the device makes no
        cooperative launches."""
        if signature is None:
            if len(self._kernels) != 1:
                raise InvalidValueError(
                    f"{self.py_func.__name__}.max_cooperative_grid_blocks: name the signature "
                    f"(compiled: {len(self._kernels)}; launch the kernel or compile it first)")
            signature = next(iter(self._kernels))
        kernel = self.compile(tuple(signature))
        device = Device() if device is None else device
        block = tuple(blockdim) if isinstance(blockdim, tuple) else (int(blockdim),)
        block = (block + (1, 1))[:3]
        most = device._backend.cooperative_blocks(device.device_id, kernel, block,
                                                  int(dynsmemsize))
        return 0 if most is None else most

    def _ptx(self, signature: tuple) -> str:
        """numba-cuda's PTX for `signature` linked with the link= files; with cache=True
        from (or into) ptxport's on-disk cache."""
        key = cache_key(self.py_func, signature, self.cc, self.options, self.link) \
            if self.cache else None
        ptx = load(key) if key else None
        if ptx is None:
            with compiling_for(self.cc):
                ptx, _ = cuda.compile_ptx(self.py_func, signature, cc=self.cc, **self.options)
            shims = shims_ptx(ptx, self.py_func.__name__, self.cc)
            if shims:
                ptx = link_text([ptx, *(text for _, text in shims)],
                                [f"{self.py_func.__name__}.ptx", *(name for name, _ in shims)])
            if self.link:
                ptx = linked_ptx(ptx, self.py_func.__name__, self.link, self.cc)
            if key:
                store(key, ptx)
        return ptx

    def _launch(self, grid, block, stream, shared, args) -> None:
        device = Device() if stream is None else stream.device
        stream = device.default_stream if stream is None else stream
        name = self.py_func.__name__
        values, types, held = [], [], _Held()
        try:
            for index, arg in enumerate(args):
                ty, value = _argument(arg, device, f"kernel {name}, argument {index}", held)
                types.append(ty)
                values.append(value)
            kernel = self.compile(tuple(types))
            refuse_unrunnable_calls(self._calls[tuple(types)], device, name)
            params = _marshal(kernel, values, types)
            launch(stream, LaunchConfig(grid=grid, block=block, shmem_size=shared,
                                        is_cooperative=self._cooperative[tuple(types)]),
                   kernel, *params)
            stream.sync()
        finally:
            held.release()


class _Held:
    """What one launch holds: staged copies of host arrays (copied back after it), strided
    host arrays with their staged copies, and host memory registered with the device."""

    def __init__(self):
        self.staged: list[DeviceArray] = []
        self.strided: list[tuple[np.ndarray, DeviceArray]] = []
        self.registered: list[Buffer] = []
        self.records: list[tuple[np.void, DeviceArray]] = []

    def release(self) -> None:
        copy_back(self.staged)
        for target, copy in self.strided:
            target[...] = copy.numpy()
        for buffer in self.registered:
            buffer.close()
        for record, copy in self.records:
            values = copy.numpy().view(record.dtype)[0]
            for field in record.dtype.names:
                record[field] = values[field]


class _StridedHostArray:
    """A numpy array passed in place on the cpu device, its memory registered with the
    device for the launch: a non-contiguous one (numba's "A" layout), or one of records."""

    def __init__(self, array: np.ndarray, device: Device, held: _Held):
        low, high = byte_bounds(array)
        held.registered.append(Buffer.from_handle(low, high - low, device, owner=array))
        self.buffer, self.dtype, self.shape, self.strides = None, array.dtype, array.shape, \
            array.strides
        self._array = array

    def data_ptr(self) -> int:
        return self._array.ctypes.data

    def numel(self) -> int:
        return self._array.size

    def element_size(self) -> int:
        return self._array.itemsize


def _array_argument(arg, device: Device, what: str, held: _Held):
    """(the array to marshal, numba's layout: "C" or "A") for an array argument."""
    if isinstance(arg, np.ndarray) and arg.dtype.names and arg.size and \
            device.backend == "cpu":
        # records: in place, as DLPack (how host arrays are wrapped) has no structured dtypes
        return _StridedHostArray(arg, device, held), "C" if arg.flags.c_contiguous else "A"
    if isinstance(arg, np.ndarray) and not arg.flags.c_contiguous and arg.size:
        if device.backend == "cpu":
            return _StridedHostArray(arg, device, held), "A"
        copy = staged(np.ascontiguousarray(arg), device, what)
        held.strided.append((arg, copy))
        return copy, "C"
    array = staged(arg, device, what)
    if array is not arg:
        held.staged.append(array)
    return array, "C"


def _argument(arg, device: Device, what: str, held: _Held):
    """(numba's type, the value to marshal) for one kernel argument: an array (staged on
    `device` as needed), a record (a numpy structured scalar), a scalar, or a tuple of
    them (numba flattens tuples)."""
    if isinstance(arg, (DeviceArray, np.ndarray)) or hasattr(arg, "__dlpack__") \
            and not isinstance(arg, np.generic):
        array, layout = _array_argument(arg, device, what, held)
        return nbtypes.Array(numpy_support.from_dtype(array.dtype), len(array.shape),
                             layout), array
    if isinstance(arg, tuple):
        items = [_argument(item, device, f"{what}, item {k}", held)
                 for k, item in enumerate(arg)]
        ty = nbtypes.BaseTuple.from_types([t for t, _ in items], type(arg))
        return ty, tuple(value for _, value in items)
    if isinstance(arg, np.void) and arg.dtype.names:
        # numba passes a record by reference to a copy on the device, copied back after
        copy = device_array(np.array([arg], arg.dtype).view(np.uint8), device)
        held.records.append((arg, copy))
        return typeof(arg), copy
    return _scalar_type(arg, what), arg


def _scalar_type(arg, what: str):
    try:
        ty = typeof(arg)
    except ValueError:
        ty = None
    if not isinstance(ty, (nbtypes.Integer, nbtypes.Float, nbtypes.Boolean, nbtypes.Complex)):
        raise ArgumentError(f"{what}: cannot pass a {type(arg).__name__} (pass numpy arrays, "
                            "DeviceArrays, integer, float, complex or bool scalars, or "
                            "tuples of them)")
    return ty


def _marshal(kernel, values: list, types: list) -> list:
    """The PTX parameters of numba's ABI for the arguments: an array as meminfo, parent,
    nitems, itemsize, data, shape and strides; a complex number as its real and imaginary
    parts; a record as the address of its copy on the device; a tuple as its items in
    turn; any other scalar as itself."""
    params: list = []
    for value, ty in zip(values, types, strict=True):
        _flatten(kernel.arguments_info, value, ty, params)
    return params


def _flatten(info, value, ty, params: list) -> None:
    if isinstance(ty, nbtypes.Array):
        data_is_pointer = info[len(params) + 4].pointer is not False
        data = value.buffer if data_is_pointer and value.buffer is not None else \
            np.uint64(value.data_ptr())
        params += [np.uint64(0), np.uint64(0), np.int64(value.numel()),
                   np.int64(value.element_size()), data]
        params += [np.int64(n) for n in value.shape]
        params += [np.int64(s) for s in value.strides]
    elif isinstance(ty, nbtypes.BaseTuple):
        for item, item_ty in zip(value, ty, strict=True):
            _flatten(info, item, item_ty, params)
    elif isinstance(ty, nbtypes.Record):
        params.append(value.buffer if info[len(params)].pointer is not False else
                      np.uint64(value.data_ptr()))
    elif isinstance(ty, nbtypes.Complex):
        part = numpy_support.as_dtype(ty.underlying_float).type
        params += [part(value.real), part(value.imag)]
    else:
        params.append(numpy_support.as_dtype(ty).type(value))


def jit(func_or_sig=None, *, device: bool = False, cc: tuple[int, int] = (8, 0), **options):
    """numba.cuda.jit for ptxport devices: `@jit` or `@jit(fastmath=True, ...)` for a kernel
    (options go to numba.cuda.compile_ptx; `link=[...]` names .ptx and .cu files whose
    functions the kernel calls through `cuda.declare_device`; `cache=True` keeps its PTX
    in ptxport's on-disk cache across processes).

    `@jit(device=True)` or `@jit("float32(float32, int64)", device=True)` makes a device
    function: numba's own dispatcher (as `numba.cuda.jit(device=True)` makes), compiled for
    `cc` here when a signature is given, else when a kernel calling it is compiled. Kernels
    may also call numba's `cuda.jit(device=True)` functions, `register_jitable` helpers and
    `overload`s directly (those with a signature need `jit` here: numba-cuda would compile
    them at decoration for the GPU in the machine).
    """
    func = func_or_sig if callable(func_or_sig) else None
    signatures = None if func is not None else func_or_sig
    if device and options.get("link"):
        raise InvalidValueError(
            "link= on a device function: ptxport links files into kernels; pass "
            "link=[...] to the jit of the kernels that call it")
    if not device and signatures is not None:
        raise InvalidValueError(
            "a kernel's signature in jit(...): ptxport compiles a kernel for the types of "
            "the arguments of each launch; decorate it with @jit or @jit(**options)")
    unknown = sorted(set(options) - _KERNEL_OPTIONS - _HINT_OPTIONS) if not device else []
    if unknown:
        raise InvalidValueError(
            f"jit option {', '.join(unknown)} for a kernel: ptxport's numba kernels take "
            f"{', '.join(sorted(_KERNEL_OPTIONS | _HINT_OPTIONS))} (numba.cuda.compile_ptx's "
            "options, link, cache and cuda.jit's hints to NVIDIA's tools)")
    hints = {} if device else _hints(options)

    def make(f):
        if device:
            return _device_function(f, signatures, cc, options)
        kernel = Kernel(f, cc, **options)
        kernel.hints = hints
        return kernel
    return make if func is None else make(func)


def _hints(options: dict) -> dict:
    """cuda.jit's hint options (_HINT_OPTIONS), taken out of `options` after numba's checks:
    max_registers a positive int, lto a bool, shared_memory_carveout "default", "MaxL1",
    "MaxShared" or a percentage (-1 for the default), inline "never", "always" or a
    function."""
    hints = {name: options.pop(name) for name in _HINT_OPTIONS if name in options}
    problems = []
    registers = hints.get("max_registers")
    if registers is not None and (not isinstance(registers, int) or registers <= 0):
        problems.append(f"max_registers={registers!r} (a positive number of registers)")
    if not isinstance(hints.get("lto", False), (bool, type(None))):
        problems.append(f"lto={hints['lto']!r} (True or False)")
    carveout = hints.get("shared_memory_carveout")
    if carveout is not None and not (
            isinstance(carveout, str) and carveout.lower() in ("default", "maxl1", "maxshared")
            or isinstance(carveout, int) and -1 <= carveout <= 100):
        problems.append(f"shared_memory_carveout={carveout!r} (\"default\", \"MaxL1\", "
                        "\"MaxShared\" or a percentage from 0 to 100, -1 for the default)")
    inline = hints.get("inline", "never")
    if not (inline in ("never", "always") or callable(inline) or isinstance(inline, bool)):
        problems.append(f"inline={inline!r} (\"never\", \"always\" or a function)")
    if problems:
        raise InvalidValueError(f"jit: {'; '.join(problems)}")
    return hints


def _device_function(func, signatures, cc: tuple[int, int], options: dict):
    """numba's device-function dispatcher for `func`, compiled for `cc` if signed."""
    with compiling_for(cc):
        return cuda.jit(signatures, device=True, **options)(func)
