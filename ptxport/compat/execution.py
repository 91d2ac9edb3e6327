"""The driver API's handlers for modules, libraries, kernels and launches.

A module is what a program's fat binary (or PTX text) holds: for each fat binary in the
image, the best PTX for the device, read through ptxport's Program -> ObjectCode path (the
runtime compiles each kernel for the device at its first launch, through ptxport's cache).
A CUlibrary is the same object as its CUmodule, and a CUkernel the same as its CUfunction:
CUDA lets either stand for the other in launches. Kernel parameter sizes come from the PTX
.entry parameter list, as CUDA's do from the cubin.
"""

from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass, field
from math import prod

from ptxport.codegen import cooperative_groups
from ptxport.codegen.cooperative_groups import declares_grid_sync
from ptxport.codegen.device_runtime import is_device_runtime_library
from ptxport.compat import fatbin, memory, streams
from ptxport.compat.state import (
    INVALID_VALUE,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    CudaError,
    put,
    read_string,
    state,
)
from ptxport.errors import UnsupportedFeatureError
from ptxport.ptx.link import link_text
from ptxport.runtime import Kernel, LaunchConfig, ObjectCode, Program, ProgramOptions
from ptxport.runtime.launch import check_config, launch_packed

NO_BINARY_FOR_GPU = 209   # CUDA_ERROR_NO_BINARY_FOR_GPU
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)", re.MULTILINE)


@dataclass
class Module:
    """The object codes of one image, and why parts of it could not be loaded."""

    codes: list[ObjectCode]
    missing: list[str] = field(default_factory=list)
    functions: dict[str, int] = field(default_factory=dict)   # name -> handle
    # kernels of CUDA's device runtime library (left out: ptxport provides its functions),
    # which cudart looks up at start and does without
    library_kernels: set[str] = field(default_factory=set)


@dataclass
class Function:
    """A kernel and what a launch needs of it: (offset, size) of each parameter."""

    kernel: Kernel
    module: Module
    params: tuple[tuple[int, int], ...]
    ptx_arch: int   # the PTX's .target (80 for sm_80): cudaFuncAttributes.ptxVersion
    settings: dict[int, int] = field(default_factory=dict)   # cuFuncSetAttribute's, by number


def program_name() -> str:
    """The running program's file name, to name the PTX of its fat binaries in messages."""
    try:
        return os.path.basename(os.readlink("/proc/self/exe"))
    except OSError:
        return "program"


def _compiled(ptx: str, name: str) -> ObjectCode:
    return Program(ptx, "ptx", ProgramOptions(name=name)).compile()


def load_module(image: int, name: str) -> int:
    """Read the image at `image`, return the handle of a new Module; `name` names its PTX
    in messages (NAME[i].ptx for the i-th fat binary of an image that holds several)."""
    if not image:
        raise CudaError(INVALID_VALUE, "the module image is NULL")
    content = fatbin.read_image(image)
    if isinstance(content, str):
        return state.handle(Module([_compiled(content, name)]))
    sm = int(state.device.arch)
    units, missing, library_kernels = [], [], set()
    for index, entries in enumerate(content):
        try:
            ptx = fatbin.best_ptx(entries, sm)
        except Exception as e:  # a part without PTX: its kernels cannot be found
            missing.append(str(e))
            continue
        if is_device_runtime_library(ptx):  # (the cpu provides its functions, cuda links .a)
            library_kernels.update(_ENTRY.findall(ptx))
        else:
            units.append((index, ptx))
    if library_kernels and any(declares_grid_sync(ptx) for _, ptx in units):
        # grid sync through cudadevrt (cudaCGSynchronize): ptxport's definitions
        units.append((len(content), cooperative_groups.LIBRARY_PTX))
    if len(units) > 1:
        # the relocatable units of an `nvcc -rdc=true` program (a wrapper listing several fat
        # binaries): linked into one module, as nvlink links their code
        texts = [ptx for _, ptx in units]
        labels = [f"{name}[{index}].ptx" for index, _ in units]
        return state.handle(Module([_compiled(link_text(texts, labels), f"{name}.ptx")],
                                   missing, library_kernels=library_kernels))
    codes = [_compiled(ptx, f"{name}.ptx" if len(content) == 1 else f"{name}[{index}].ptx")
             for index, ptx in units]
    return state.handle(Module(codes, missing, library_kernels=library_kernels))


def _target_arch(target: tuple[str, ...]) -> int:
    """80 for `.target sm_80` (90 for sm_90a): the architecture the PTX was written for."""
    match = next((re.fullmatch(r"sm_(\d+)\w*", t) for t in target if t.startswith("sm_")), None)
    return int(match[1]) if match else 0


def _function(module: Module, name: str) -> int:
    handle = module.functions.get(name)
    if handle is not None:
        return handle
    for code in module.codes:
        if name in code.kernel_names:
            kernel = code.get_kernel(name)
            params = tuple((p.offset, p.size) for p in kernel.arguments_info)
            handle = module.functions[name] = state.handle(
                Function(kernel, module, params, _target_arch(code.module.target)))
            return handle
    if name in module.library_kernels:
        raise CudaError(NOT_FOUND)     # (no message: cudart asks for each, and goes on)
    if module.missing:   # CUDA's answer when the binary has no code for the device
        raise CudaError(NO_BINARY_FOR_GPU, f"no kernel named {name!r} in the module's PTX "
                                           f"({'; '.join(module.missing)})")
    raise CudaError(NOT_FOUND, f"no kernel named {name!r} in the module")


# -- modules and libraries ----------------------------------------------------------------

def cuModuleLoadData(module: int, image: int) -> int:
    put(ctypes.c_void_p, module, load_module(image, "cuModuleLoadData"))
    return SUCCESS


def cuModuleLoadFatBinary(module: int, image: int) -> int:
    return cuModuleLoadData(module, image)


def cuModuleLoadDataEx(module: int, image: int, count: int, options: int,
                       values: int) -> int:
    return cuModuleLoadData(module, image)   # JIT options tune NVIDIA's compiler: not ours


def cuModuleLoad(module: int, fname: int) -> int:
    path = read_string(fname)
    try:
        with open(path, "rb") as f:
            image = ctypes.create_string_buffer(f.read())   # NUL-terminated for PTX text
    except OSError as e:
        raise CudaError(301, f"cannot read module file {path}: {e.strerror}") from None
    put(ctypes.c_void_p, module, load_module(ctypes.addressof(image), path))
    return SUCCESS


def cuModuleUnload(handle: int) -> int:
    module = state.release(handle, Module, "CUmodule")
    for function in module.functions.values():
        state.objects.pop(function, None)
    return SUCCESS


def cuModuleGetLoadingMode(mode: int) -> int:
    put(ctypes.c_int, mode, 1)   # CU_MODULE_EAGER_LOADING: modules are read when loaded
    return SUCCESS


def cuModuleGetFunction(hfunc: int, hmod: int, name: int) -> int:
    module = state.lookup(hmod, Module, "CUmodule")
    put(ctypes.c_void_p, hfunc, _function(module, read_string(name)))
    return SUCCESS


def _global(module: Module, name: str, managed: bool = False) -> tuple[int, int]:
    """(address, size) of the module's .global or .const variable `name` on the device
    (with `managed`, only a `__managed__` one: PTX `.attribute(.managed)`)."""
    for code in module.codes:
        variable = code.module.globals.get(name)
        if variable is None or variable.space not in ("global", "const") or (
                managed and not variable.managed):
            continue
        try:
            address, size = code.get_global(name, state.device)
        except UnsupportedFeatureError as e:
            raise CudaError(NOT_SUPPORTED, f"the module variable {name!r} on {state.device}: "
                                           f"{e.reason}") from None
        memory.note_module_variable(address, size, variable.managed)
        return address, size
    kind = "__managed__" if managed else "__device__ or __constant__"
    raise CudaError(NOT_FOUND, f"no {kind} variable named {name!r} in the module")


def cuModuleGetGlobal_v2(dptr: int, nbytes: int, hmod: int, name: int) -> int:
    address, size = _global(state.lookup(hmod, Module, "CUmodule"), read_string(name))
    if dptr:
        put(ctypes.c_uint64, dptr, address)
    if nbytes:
        put(ctypes.c_size_t, nbytes, size)
    return SUCCESS


def cuLibraryLoadData(library: int, code: int, jit_options: int, jit_values: int,
                      n_jit: int, options: int, values: int, n_options: int) -> int:
    put(ctypes.c_void_p, library, load_module(code, program_name()))
    return SUCCESS


def cuLibraryUnload(handle: int) -> int:
    return cuModuleUnload(handle)


def cuLibraryGetModule(pmod: int, library: int) -> int:
    state.lookup(library, Module, "CUlibrary")
    put(ctypes.c_void_p, pmod, library)
    return SUCCESS


def cuLibraryGetKernel(pkernel: int, library: int, name: int) -> int:
    return cuModuleGetFunction(pkernel, library, name)


def cuLibraryGetGlobal(dptr: int, nbytes: int, library: int, name: int) -> int:
    return cuModuleGetGlobal_v2(dptr, nbytes, library, name)


def cuLibraryGetManaged(dptr: int, nbytes: int, library: int, name: int) -> int:
    """A `__managed__` variable's memory: on the CPU device, host memory already, so the host
    reads and writes it at the address the kernels use."""
    address, size = _global(state.lookup(library, Module, "CUlibrary"), read_string(name),
                            managed=True)
    if dptr:
        put(ctypes.c_uint64, dptr, address)
    if nbytes:
        put(ctypes.c_size_t, nbytes, size)
    return SUCCESS


def cuKernelGetFunction(pfunc: int, kernel: int) -> int:
    state.lookup(kernel, Function, "CUkernel")
    put(ctypes.c_void_p, pfunc, kernel)
    return SUCCESS


# -- function attributes --------------------------------------------------------------------

def _attribute(function: Function, attribute: int) -> int:
    kernel, p = function.kernel, state.device.properties
    bound = kernel.directives.get("maxntid") or kernel.directives.get("reqntid")
    values = {
        0: min(p.max_threads_per_block, prod(bound) if bound else p.max_threads_per_block),
        1: kernel.static_shared_bytes,         # SHARED_SIZE_BYTES
        2: 0,                                  # CONST_SIZE_BYTES
        3: 0,                                  # LOCAL_SIZE_BYTES
        4: 32,                                 # NUM_REGS
        # PTX_VERSION: what the PTX targets (CUB picks its tuning policy by it, and the
        # device code was compiled with the policy of that architecture); BINARY_VERSION:
        # the device's, for which ptxport compiles it
        5: function.ptx_arch, 6: int(state.device.arch),
        7: 0,                                  # CACHE_MODE_CA
        8: p.max_shared_memory_per_block_optin - kernel.static_shared_bytes,
        9: -1,                                 # PREFERRED_SHARED_MEMORY_CARVEOUT
        **dict.fromkeys(range(10, 18), 0),     # clusters and node updates: none
        **function.settings,
    }
    if attribute not in values:
        raise CudaError(INVALID_VALUE, f"function attribute {attribute} is not supported yet")
    return values[attribute]


def cuFuncGetAttribute(pi: int, attribute: int, hfunc: int) -> int:
    put(ctypes.c_int, pi, _attribute(state.lookup(hfunc, Function, "CUfunction"), attribute))
    return SUCCESS


def cuKernelGetAttribute(pi: int, attribute: int, kernel: int, dev: int) -> int:
    return cuFuncGetAttribute(pi, attribute, kernel)


_MAX_DYNAMIC_SHARED, _CARVEOUT = 8, 9   # the attributes a program sets and reads back


def cuFuncSetAttribute(hfunc: int, attribute: int, value: int) -> int:
    """Keep the dynamic shared memory limit and the carveout, which read back as set (the
    limit within what the device allows); ptxport needs no opt-in to use more shared memory,
    and the other settable attributes (clusters) are accepted and not used."""
    function = state.lookup(hfunc, Function, "CUfunction")
    if attribute == _MAX_DYNAMIC_SHARED:
        most = _attribute(function, _MAX_DYNAMIC_SHARED)
        if not 0 <= value <= most:
            raise CudaError(INVALID_VALUE, f"{value} bytes of dynamic shared memory: the "
                                           f"kernel may use 0 to {most}")
    elif attribute == _CARVEOUT and not -1 <= value <= 100:
        raise CudaError(INVALID_VALUE, f"a shared memory carveout of {value}%: give -1 "
                                       "(the default) or a percentage")
    if attribute in (_MAX_DYNAMIC_SHARED, _CARVEOUT):
        function.settings[attribute] = value
    return SUCCESS


def cuKernelSetAttribute(attribute: int, value: int, kernel: int, dev: int) -> int:
    return cuFuncSetAttribute(kernel, attribute, value)


def cuFuncSetCacheConfig(hfunc: int, config: int) -> int:
    state.lookup(hfunc, Function, "CUfunction")
    return SUCCESS


def cuKernelSetCacheConfig(kernel: int, config: int, dev: int) -> int:
    return cuFuncSetCacheConfig(kernel, config)


_names: dict[int, ctypes.Array] = {}   # kept alive: callers keep the pointers


def cuFuncGetName(name: int, hfunc: int) -> int:
    function = state.lookup(hfunc, Function, "CUfunction")
    text = _names.setdefault(hfunc, ctypes.create_string_buffer(function.kernel.name.encode()))
    put(ctypes.c_void_p, name, ctypes.addressof(text))
    return SUCCESS


def cuKernelGetName(name: int, kernel: int) -> int:
    return cuFuncGetName(name, kernel)


def cuFuncGetModule(hmod: int, hfunc: int) -> int:
    function = state.lookup(hfunc, Function, "CUfunction")
    put(ctypes.c_void_p, hmod, id(function.module))
    return SUCCESS


def cuFuncGetParamInfo(hfunc: int, index: int, offset: int, size: int) -> int:
    params = state.lookup(hfunc, Function, "CUfunction").params
    if index >= len(params):
        raise CudaError(INVALID_VALUE, f"the kernel has {len(params)} parameters; there is "
                                       f"no parameter {index}")
    if offset:
        put(ctypes.c_size_t, offset, params[index][0])
    if size:
        put(ctypes.c_size_t, size, params[index][1])
    return SUCCESS


def cuKernelGetParamInfo(kernel: int, index: int, offset: int, size: int) -> int:
    return cuFuncGetParamInfo(kernel, index, offset, size)


def cuFuncGetParamCount(hfunc: int, count: int) -> int:
    put(ctypes.c_size_t, count, len(state.lookup(hfunc, Function, "CUfunction").params))
    return SUCCESS


def cuKernelGetParamCount(kernel: int, count: int) -> int:
    return cuFuncGetParamCount(kernel, count)


def cuOccupancyAvailableDynamicSMemPerBlock(size: int, hfunc: int, blocks: int,
                                            block_size: int) -> int:
    function = state.lookup(hfunc, Function, "CUfunction")
    p = state.device.properties
    per_block = p.max_shared_memory_per_multiprocessor // max(blocks, 1)
    available = min(per_block, p.max_shared_memory_per_block_optin)
    put(ctypes.c_size_t, size, max(available - function.kernel.static_shared_bytes, 0))
    return SUCCESS


def cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks: int, hfunc: int, block_size: int,
                                                dynamic_shared: int) -> int:
    function = state.lookup(hfunc, Function, "CUfunction")
    p = state.device.properties
    if block_size <= 0:
        raise CudaError(INVALID_VALUE, "the block size must be positive")
    by_threads = p.max_threads_per_multiprocessor // block_size
    shared = function.kernel.static_shared_bytes + dynamic_shared
    by_shared = p.max_shared_memory_per_multiprocessor // shared if shared else by_threads
    put(ctypes.c_int, blocks,
        max(min(by_threads, by_shared, p.max_blocks_per_multiprocessor), 0))
    return SUCCESS


def cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        blocks: int, hfunc: int, block_size: int, dynamic_shared: int, flags: int) -> int:
    return cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, hfunc, block_size,
                                                       dynamic_shared)


# -- launches -------------------------------------------------------------------------------

_BUFFER_POINTER, _BUFFER_SIZE = 1, 2   # CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE; 0 ends


def _parameters(function: Function, kernel_params: int, extra: int) -> bytes:
    size = function.kernel.param_buffer_size
    if kernel_params:
        pointers = (ctypes.c_void_p * len(function.params)).from_address(kernel_params)
        buffer = bytearray(size)
        for (offset, nbytes), pointer in zip(function.params, pointers, strict=True):
            buffer[offset:offset + nbytes] = ctypes.string_at(pointer, nbytes)
        return bytes(buffer)
    if extra:
        words = ctypes.cast(extra, ctypes.POINTER(ctypes.c_void_p))
        found: dict[int, int] = {}
        i = 0
        while (key := words[i] or 0) != 0:
            found[key] = words[i + 1] or 0
            i += 2
        if _BUFFER_POINTER in found:
            given = ctypes.c_size_t.from_address(found[_BUFFER_SIZE]).value \
                if found.get(_BUFFER_SIZE) else size
            return ctypes.string_at(found[_BUFFER_POINTER], min(given, size)).ljust(size, b"\0")
    if size:
        raise CudaError(INVALID_VALUE, f"kernel {function.kernel.name} takes {size} bytes of "
                                       "parameters and the launch gave none")
    return b""


# Launch shapes already checked against the device, per kernel: a program launches the same
# kernel with the same shape over and over, and the checks (check_config) cost more than the
# rest of queueing a launch. (function handle, grid, block, shared, device) -> (kernel, config).
_checked: dict[tuple, tuple[Kernel, LaunchConfig]] = {}
_CHECKED_MOST = 1024


def _config(f: int, function: Function, shape: tuple[int, ...], shared: int,
            cooperative: bool = False) -> LaunchConfig:
    device = state.device
    key = (f, shape, shared, id(device), cooperative)
    kernel, config = _checked.get(key, (None, None))
    if kernel is not function.kernel:   # (a handle reused by another function: not it)
        config = LaunchConfig(grid=shape[:3], block=shape[3:], shmem_size=shared,
                              is_cooperative=cooperative)
        check_config(config, function.kernel, device)
        if len(_checked) >= _CHECKED_MOST:
            _checked.clear()
        _checked[key] = (function.kernel, config)
    return config


def cuLaunchKernel(f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                   shared: int, stream: int, kernel_params: int, extra: int,
                   cooperative: bool = False) -> int:
    function = state.lookup(f, Function, "CUfunction")
    params = _parameters(function, kernel_params, extra)
    config = _config(f, function, (gx, gy, gz, bx, by, bz), shared, cooperative)
    target = streams.ordered(stream)
    if streams.LAUNCH_BLOCKING and streams.idle(target):
        launch_packed(streams.Inline(target), config, function.kernel, params, checked=True)
        return SUCCESS
    launch_packed(target, config, function.kernel, params, checked=True)
    if streams.LAUNCH_BLOCKING and not isinstance(target, streams.Capture):
        target.sync()
    return SUCCESS


def cuLaunchCooperativeKernel(f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                              shared: int, stream: int, kernel_params: int) -> int:
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, kernel_params, 0,
                          cooperative=True)


class _LaunchConfigStruct(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute (cuda.h): an id, padding, and a 64-byte union of values."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_uint * 16)]


# CUlaunchAttributeID values that only tune how a launch is scheduled: honoured by running
# the launch in plain stream order. PROGRAMMATIC_STREAM_SERIALIZATION (6) allows a kernel to
# overlap the one before it; waiting for that one to finish is one of the orders it allows.
_HINTS = {0: "IGNORE", 1: "ACCESS_POLICY_WINDOW", 3: "SYNCHRONIZATION_POLICY",
          5: "CLUSTER_SCHEDULING_POLICY_PREFERENCE", 6: "PROGRAMMATIC_STREAM_SERIALIZATION",
          8: "PRIORITY", 9: "MEM_SYNC_DOMAIN_MAP", 10: "MEM_SYNC_DOMAIN",
          11: "PREFERRED_CLUSTER_DIMENSION", 14: "PREFERRED_SHARED_MEMORY_CARVEOUT",
          16: "NVLINK_UTIL_CENTRIC_SCHEDULING", 17: "PORTABLE_CLUSTER_SIZE_MODE"}
_COOPERATIVE, _CLUSTER_DIMENSION = 2, 4


def _check_launch_attributes(address: int, count: int) -> bool:
    """Accept the attributes a launch in stream order satisfies; refuse the others with
    CUDA_ERROR_NOT_SUPPORTED, naming them. Whether the launch is cooperative."""
    cooperative = False
    for attribute in (_LaunchAttribute * count).from_address(address):
        value = attribute.value
        if attribute.id in _HINTS:
            continue
        if attribute.id == _COOPERATIVE:
            cooperative = value[0] != 0
            continue
        if attribute.id == _CLUSTER_DIMENSION and max(value[0], value[1], value[2]) <= 1:
            continue   # a cluster of one block is what every launch has
        what = {_COOPERATIVE: "cooperative launches",
                _CLUSTER_DIMENSION: f"thread block clusters ({value[0]}x{value[1]}x"
                                    f"{value[2]})"}.get(attribute.id,
                                                         f"launch attribute {attribute.id}")
        raise CudaError(NOT_SUPPORTED, f"{what} are not supported yet")
    return cooperative


def cuLaunchKernelEx(config: int, f: int, kernel_params: int, extra: int) -> int:
    if not config:
        raise CudaError(INVALID_VALUE, "the config is NULL")
    c = _LaunchConfigStruct.from_address(config)
    cooperative = False
    if c.num_attrs:
        if not c.attrs:
            raise CudaError(INVALID_VALUE, f"the config names {c.num_attrs} attributes and "
                                           "gives no array")
        cooperative = _check_launch_attributes(c.attrs, c.num_attrs)
    return cuLaunchKernel(f, *c.grid, *c.block, c.shared, c.stream or 0, kernel_params, extra,
                          cooperative)
