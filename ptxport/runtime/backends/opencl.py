"""The OpenCL backend: SPIR-V devices through pyopencl, running what ptxport's SPIR-V target
(ptxport.codegen.targets.spirv) makes of the IR.

Devices are numbered over every platform, in the ICD loader's order, counting only those whose
CL_DEVICE_IL_VERSION lists SPIR-V (`skipped_devices()` names the others and why).

Memory is one cl.Buffer per allocation. OpenCL gives buffers no addresses the host may know,
so each allocation gets a device address of ptxport's own (256-byte aligned, never reused) and
copies find the buffer an address lies in. A launch maps the packed parameter buffer back to
kernel arguments (the SPIR-V target's KernelLayout): every 8-byte parameter holding an
address inside an allocation becomes that cl.Buffer plus the offset into it, which the kernel
adds to the buffer's real address. Addresses stored in device memory or inside structure
arguments are not translated, so kernels must get their pointers as parameters.

Kernels that call printf (OpenCL C's, which the SPIR-V target makes of CUDA's vprintf) write
to the process's standard output, as the OpenCL runtime does it: Intel's CPU runtime writes
each call's text through C's stdout while the kernel runs. A launch of such a kernel flushes
Python's sys.stdout before it and C's stdio streams once the kernel has completed, so that
the text is in file descriptor 1 when the launch (and so stream.sync()) returns. A kernel that
prints floating-point values (CUDA passes printf a double for each) needs a device with
cl_khr_fp64; on others its launch raises UnsupportedFeatureError.

Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt) is found when this Python environment
has it: `wheel_icd_directory()` writes an ICD file naming its libintelocl.so for the loader
(OCL_ICD_VENDORS; the test suite sets it), and its libraries are preloaded with ctypes, so
that no LD_LIBRARY_PATH is needed.
"""

from __future__ import annotations

import ctypes
import sys
import tempfile
import threading
import warnings
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ptxport.errors import CompileError, LaunchError, OutOfMemoryError, UnsupportedFeatureError
from ptxport.ir.nodes import Module
from ptxport.runtime.backends import Allocation, BackendBase, DeviceProperties

__all__ = ["Backend", "OpenclKernelBinary", "wheel_icd_directory", "skipped_devices"]

_ALIGNMENT = 256
_FIRST_ADDRESS = 1 << 40
_INSTALL_HINT = "pip install 'ptxport[opencl]'"
# Libraries of intel-opencl-rt / intel-cmplr-lib-rt / tbb that libintelocl.so needs.
_WHEEL_LIBRARIES = ("libtbb.so.12", "libtbbmalloc.so.2", "libsvml.so", "libirng.so",
                    "libimf.so", "libintlc.so.5")


def _wheel_library_dir() -> Path | None:
    lib = Path(sys.prefix) / "lib"
    return lib if (lib / "libintelocl.so").exists() else None


@cache
def wheel_icd_directory() -> str | None:
    """A directory holding an ICD file that names intel-opencl-rt's libintelocl.so (for
    OCL_ICD_VENDORS), with the wheel's libraries preloaded; None without the wheel."""
    lib = _wheel_library_dir()
    if lib is None:
        return None
    for name in _WHEEL_LIBRARIES:
        if (lib / name).exists():
            try:
                ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    directory = tempfile.mkdtemp(prefix="ptxport-icd-")
    (Path(directory) / "intel-cpu.icd").write_text(str(lib / "libintelocl.so") + "\n")
    return directory


def _cl():
    import pyopencl

    return pyopencl


def _spirv_devices() -> tuple[list, list[tuple[str, str]]]:
    """(devices that take SPIR-V, [(device name, why not)] for the others)."""
    cl = _cl()
    good, skipped = [], []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return [], []
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for device in devices:
            try:
                il = device.get_info(cl.device_info.IL_VERSION)
            except cl.Error:
                il = ""
            if "SPIR-V" in il:
                good.append(device)
            else:
                skipped.append((f"{platform.name}: {device.name}",
                                "does not accept SPIR-V (CL_DEVICE_IL_VERSION lists none)"))
    return good, skipped


def skipped_devices() -> list[tuple[str, str]]:
    """OpenCL devices the backend does not use, each with the reason."""
    return _spirv_devices()[1]


@dataclass
class OpenclKernelBinary:
    """A kernel's SPIR-V module and layout; cl.Programs are built per device on first use."""

    name: str
    spirv: bytes
    layout: object
    programs: dict


@dataclass
class _Memory:
    buffer: object
    size: int


class Backend(BackendBase):
    name = "opencl"
    dlpack_device_type = 4  # kDLOpenCL

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._availability: tuple[bool, str] | None = None
        self._devices: list = []
        self._contexts: dict[int, tuple] = {}
        self._live: dict[int, _Memory] = {}
        self._starts: list[int] = []
        self._next = _FIRST_ADDRESS

    def availability(self) -> tuple[bool, str]:
        with self._lock:
            if self._availability is None:
                self._availability = self._probe()
            return self._availability

    def _probe(self) -> tuple[bool, str]:
        try:
            _cl()
        except ImportError:
            return False, f"pyopencl is not installed ({_INSTALL_HINT})"
        self._devices, skipped = _spirv_devices()
        if self._devices:
            return True, ""
        why = "; ".join(f"{name} {reason}" for name, reason in skipped)
        return False, ("no OpenCL device accepts SPIR-V" + (f" ({why})" if why else
                       " (no OpenCL platform found; Intel's CPU runtime: pip install "
                       "intel-opencl-rt, and point OCL_ICD_VENDORS at an ICD file naming its "
                       "libintelocl.so)"))

    def device_count(self) -> int:
        return len(self._devices)

    def host_only(self) -> bool:
        """Whether every device is the host's own CPU (then the cpu backend, which runs more
        of PTX, is the better default)."""
        cl = _cl()
        return all(device.type & cl.device_type.CPU for device in self._devices)

    def _context(self, ordinal: int):
        with self._lock:
            if ordinal not in self._contexts:
                cl = _cl()
                context = cl.Context([self._devices[ordinal]])
                self._contexts[ordinal] = (context, cl.CommandQueue(context))
            return self._contexts[ordinal]

    def properties(self, ordinal: int) -> DeviceProperties:
        return _properties(self._devices[ordinal])

    def warp_capable(self, ordinal: int) -> bool:
        """Whether the device can run sub-groups of 32 work-items."""
        extensions = self._devices[ordinal].extensions.split()
        return "cl_intel_required_subgroup_size" in extensions and \
            "cl_khr_subgroup_shuffle" in extensions

    def fp64_capable(self, ordinal: int) -> bool:
        """Whether the device computes with doubles (what printf passes floating-point
        values as)."""
        return "cl_khr_fp64" in self._devices[ordinal].extensions.split()

    # -- memory -----------------------------------------------------------------------------------

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        cl = _cl()
        context, _ = self._context(ordinal)
        try:
            buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 1))
        except cl.Error as e:
            raise OutOfMemoryError(f"opencl:{ordinal} could not allocate {nbytes} bytes: "
                                   f"{e}") from None
        with self._lock:
            address = self._next
            self._next += (max(nbytes, 1) + 2 * _ALIGNMENT - 1) // _ALIGNMENT * _ALIGNMENT
            self._live[address] = _Memory(buffer, nbytes)
            self._starts.insert(bisect_right(self._starts, address), address)
        return Allocation(address, nbytes, (ordinal, buffer))

    def free(self, allocation: Allocation) -> None:
        with self._lock:
            memory = self._live.pop(allocation.address, None)
            if memory is None:
                return
            self._starts.remove(allocation.address)
        memory.buffer.release()

    def _find(self, address: int) -> tuple[object, int] | None:
        """(buffer, offset) of the allocation `address` lies in (its end included)."""
        with self._lock:
            i = bisect_right(self._starts, address) - 1
            if i < 0:
                return None
            start = self._starts[i]
            memory = self._live[start]
            if address - start > memory.size:
                return None
            return memory.buffer, address - start

    def _queue(self):
        return self._context(0)[1]

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        if not nbytes:
            return
        cl = _cl()
        queue = self._queue()
        if kind == "htod":
            buffer, offset = self._located(dst, nbytes)
            host = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(src))
            cl.enqueue_copy(queue, buffer, host, dst_offset=offset, is_blocking=True)
        elif kind == "dtoh":
            buffer, offset = self._located(src, nbytes)
            host = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(dst))
            cl.enqueue_copy(queue, host, buffer, src_offset=offset, is_blocking=True)
        else:
            (to, to_offset), (source, from_offset) = (self._located(dst, nbytes),
                                                      self._located(src, nbytes))
            cl.enqueue_copy(queue, to, source, byte_count=nbytes, src_offset=from_offset,
                            dst_offset=to_offset).wait()

    def _located(self, address: int, nbytes: int):
        found = self._find(address)
        if found is None:
            raise LaunchError(f"the address {address:#x} is not in any opencl allocation")
        return found

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        if not nbytes:
            return
        buffer, offset = self._located(address, nbytes)
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        _cl().enqueue_fill_buffer(self._queue(), buffer, dtype(value), offset, nbytes).wait()

    # -- kernels --------------------------------------------------------------------------------

    def compile(self, module: Module, kernels: list[str]) -> dict[str, OpenclKernelBinary]:
        from ptxport.codegen.targets.spirv import compile_module

        binaries = {}
        for name in kernels:  # one SPIR-V module each: a kernel LLVM fails on fails alone
            spirv, layouts = compile_module(module, [name])
            binaries[name] = OpenclKernelBinary(name, spirv, layouts[name], {})
        return binaries

    def _kernel(self, ordinal: int, binary: OpenclKernelBinary):
        cl = _cl()
        if binary.layout.needs_warp and not self.warp_capable(ordinal):
            raise UnsupportedFeatureError(
                f"kernel {binary.name}", "spirv", None,
                f"it uses warp operations, and opencl:{ordinal} "
                f"({self._devices[ordinal].name}) cannot run sub-groups of 32 work-items")
        if binary.layout.prints_doubles and not self.fp64_capable(ordinal):
            raise UnsupportedFeatureError(
                f"kernel {binary.name}", "spirv", None,
                f"it prints floating-point values, which printf takes as doubles, and "
                f"opencl:{ordinal} ({self._devices[ordinal].name}) has no fp64 "
                "(cl_khr_fp64)")
        program = binary.programs.get(ordinal)
        if program is None:
            context, _ = self._context(ordinal)
            try:
                with warnings.catch_warnings():  # the build log of a successful build
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    program = cl.Program(context, binary.spirv).build()
            except cl.Error as e:
                raise CompileError(f"opencl:{ordinal} refused ptxport's SPIR-V for "
                                   f"{binary.name}", str(e)) from None
            binary.programs[ordinal] = program
        return getattr(program, binary.name)

    def launch(self, ordinal: int, binary: OpenclKernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes) -> None:
        cl = _cl()
        kernel = self._kernel(ordinal, binary)
        context, queue = self._context(ordinal)
        layout = binary.layout
        packed = bytearray(params.ljust(max(layout.params_size, 1), b"\0"))
        bases = []
        for offset in layout.pointer_slots:
            value = int.from_bytes(packed[offset:offset + 8], "little")
            found = self._find(value) if value >= _FIRST_ADDRESS else None
            if found is None:
                bases.append(None)
                continue
            buffer, inside = found
            packed[offset:offset + 8] = inside.to_bytes(8, "little")
            bases.append(buffer)
        _refuse_hidden_addresses(self, binary, packed, layout.pointer_slots)
        parameters = cl.Buffer(context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                               hostbuf=bytes(packed))
        shared = layout.static_shared + dynamic_shared
        kernel.set_arg(0, parameters)
        kernel.set_arg(1, cl.LocalMemory(max(shared, 16)))
        kernel.set_arg(2, np.uint32(shared))
        for i, base in enumerate(bases):
            kernel.set_arg(3 + i, base)
        global_size = tuple(g * b for g, b in zip(grid, block, strict=True))
        if layout.prints:   # what Python printed before comes first
            sys.stdout.flush()
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, tuple(block)).wait()
        parameters.release()
        if layout.prints:
            _flush_c_stdio()


def _flush_c_stdio() -> None:
    """Write out what printf calls of a kernel left in C's stdio buffers (OpenCL leaves the
    stream and its buffering to the runtime; Intel's writes through C's stdout)."""
    _libc().fflush(None)


@cache
def _libc():
    libc = ctypes.CDLL(None)
    libc.fflush.argtypes = (ctypes.c_void_p,)
    return libc


def _refuse_hidden_addresses(backend: Backend, binary: OpenclKernelBinary, packed: bytearray,
                             slots: tuple[int, ...]) -> None:
    """A device address anywhere but in an 8-byte parameter (inside a structure argument)
    cannot be given its buffer: refuse the launch rather than let the kernel use it."""
    for offset in range(0, len(packed) - 7, 8):
        if offset in slots:
            continue
        value = int.from_bytes(packed[offset:offset + 8], "little")
        if value >= _FIRST_ADDRESS and backend._find(value) is not None:
            raise UnsupportedFeatureError(
                f"kernel {binary.name}", "spirv", None,
                f"a device address inside a structure argument (bytes {offset}..{offset + 7} "
                "of the parameters): the opencl backend passes buffers as kernel arguments "
                "and can translate only addresses passed as 8-byte parameters")


@cache
def _properties(device) -> DeviceProperties:
    cl = _cl()
    dims = device.max_work_item_sizes
    local = device.local_mem_size
    threads = min(device.max_work_group_size, 1024)
    return DeviceProperties(
        name=device.name.strip(),
        multiprocessor_count=device.max_compute_units,
        warp_size=32,
        max_threads_per_block=threads,
        max_block_dim_x=min(dims[0], 1024), max_block_dim_y=min(dims[1], 1024),
        max_block_dim_z=min(dims[2], 64),
        max_grid_dim_x=2**31 - 1, max_grid_dim_y=65535, max_grid_dim_z=65535,
        max_shared_memory_per_block=min(local, 48 * 1024),
        max_shared_memory_per_block_optin=local,
        max_shared_memory_per_multiprocessor=local,
        max_threads_per_multiprocessor=2048,
        total_constant_memory=device.max_constant_buffer_size,
        total_global_memory=device.global_mem_size,
        clock_rate=device.max_clock_frequency * 1000,
        compute_capability_major=9,
        compute_capability_minor=0,
        integrated=bool(device.type & cl.device_type.CPU) or bool(
            device.host_unified_memory),
        unified_addressing=False,
    )
