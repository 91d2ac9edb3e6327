"""The OpenCL backend: SPIR-V devices through pyopencl, running what ptxport's SPIR-V target
(ptxport.codegen.targets.spirv) makes of the IR.

Devices are numbered over every platform, in the ICD loader's order, counting only those whose
CL_DEVICE_IL_VERSION lists SPIR-V (`skipped_devices()` names the others and why).

Device addresses take one of two schemes per device (`address_scheme()`; a device's
properties say unified_addressing for the first):
- "svm", on devices with shared virtual memory (OpenCL 2.0's coarse-grained buffer SVM,
  CL_DEVICE_SVM_CAPABILITIES): every allocation is an SVM allocation and its device address
  is the SVM pointer, one value on the host and on the device. Kernels use addresses found
  anywhere (parameters, structure arguments, device memory) as they are: a launch passes the
  parameter buffer untouched, with every allocation of the device's context named in the
  kernel's CL_KERNEL_EXEC_INFO_SVM_PTRS (OpenCL lets a kernel touch only the SVM memory it
  is given as an argument or named there; pyopencl has no call for it, so clSetKernelExecInfo
  is called through ctypes). Copies and fills are clEnqueueSVMMemcpy/MemFill on the queue,
  so the host never maps the memory.
- "translated", elsewhere: one cl.Buffer per allocation. OpenCL gives buffers no addresses the
  host may know, so each allocation gets a device address of ptxport's own (256-byte
  aligned, never reused) and copies find the buffer an address lies in. A launch maps the
  packed parameter buffer back to kernel arguments (the SPIR-V target's KernelLayout): every
  8-byte parameter holding an address inside an allocation becomes that cl.Buffer plus the
  offset into it, which the kernel adds to the buffer's real address. Addresses stored in
  device memory or inside structure arguments are not translated, so kernels must get their
  pointers as parameters (a structure argument holding an address is refused).
Work is done in stream order: every hook waits for what it enqueued. Kernels' SPIR-V and what
the OpenCL runtime builds of it are kept on disk (opencl_cache.py), so that a program's second
run compiles nothing.

Kernels check their memory accesses (the SPIR-V target's spirv_checks.py): each launch gives
the kernel a checks buffer with the table of the device's allocations ("svm"; none on
"translated") and each pointer parameter's allocation, and reads its fault record back after
the kernel: a bad access raises IllegalAddressError, in the CPU device's words, naming the
user's source line where the PTX has line information (the module's line table, kept with
each kernel's binary). A failed device-side assert (spirv_assert.py) is logged in the checks
buffer, whose log the launch prints on stderr in CUDA's words (opencl_records.py), and is
recorded in the same record: the launch raises KernelAssertError with its text. Module
variables live in a block per (device, module), and device-side malloc allocates from a heap
per device, both kept by opencl_blocks.py.

Host memory that kernels use in place (register_host_memory: cudaHostRegister,
Buffer.from_dlpack) needs fine-grained system SVM, where a host address is valid in kernels
as it is; it joins the device's allocations (copies, fills, bounds checks) and stays its
owner's.

Kernels that call printf (OpenCL C's, which the SPIR-V target makes of CUDA's vprintf) write
to the process's standard output, as the OpenCL runtime does it: Intel's CPU runtime writes
each call's text through C's stdout while the kernel runs. A launch of such a kernel flushes
Python's sys.stdout before it and C's stdio streams once the kernel has completed, so that
the text is in file descriptor 1 when the launch (and so stream.sync()) returns. A kernel that
prints floating-point values (CUDA passes printf a double for each) needs a device with
cl_khr_fp64; on others its launch raises UnsupportedFeatureError.

Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt) is found when this Python environment
has it, beside the system's ICDs: before pyopencl is first imported, OCL_ICD_VENDORS (unless
the user set it) names a directory with the system's ICD files and one naming the wheel's
libintelocl.so (`wheel_icd_directory()`), whose libraries are preloaded with ctypes, so that
no LD_LIBRARY_PATH is needed. It has every kind of SVM, and so uses the "svm" scheme.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import sys
import tempfile
import threading
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.codegen.targets.spirv_checks import (
    CHECKS_HEADER,
    CHECKS_HEAP,
    CHECKS_TABLE,
    CHECKS_TIMER,
    read_fault,
)
from ptxport.errors import (
    CompileError,
    InvalidValueError,
    LaunchError,
    OutOfMemoryError,
    UnsupportedFeatureError,
)
from ptxport.ir.lines import LineTable
from ptxport.ir.nodes import Module
from ptxport.runtime.backends import Allocation, BackendBase, DeviceProperties
from ptxport.runtime.backends.opencl_blocks import DeviceHeaps, VariableBlocks
from ptxport.runtime.backends.opencl_records import (
    fault_error,
    print_assert_log,
    read_records,
    with_assert_log,
)

__all__ = ["Backend", "OpenclKernelBinary", "wheel_icd_directory", "skipped_devices"]

_ALIGNMENT = 256
# clSVMAlloc's alignment may not exceed the largest OpenCL C type (long16, 128 bytes; Intel's
# CPU runtime refuses more): allocations are that much larger, and start at a 256-byte boundary
_SVM_ALIGNMENT = 128
_FIRST_ADDRESS = 1 << 40
_KERNEL_EXEC_INFO_SVM_PTRS = 0x11B6   # CL_KERNEL_EXEC_INFO_SVM_PTRS (cl.h, OpenCL 2.0)
_INSTALL_HINT = "pip install 'ptxport[opencl]'"
_SYSTEM_VENDORS = "/etc/OpenCL/vendors"
# Libraries of intel-opencl-rt / intel-cmplr-lib-rt / tbb that libintelocl.so needs.
_WHEEL_LIBRARIES = ("libtbb.so.12", "libtbbmalloc.so.2", "libsvml.so", "libirng.so",
                    "libimf.so", "libintlc.so.5")


def _wheel_library_dir() -> Path | None:
    lib = Path(sys.prefix) / "lib"
    return lib if (lib / "libintelocl.so").exists() else None


@cache
def wheel_icd_directory() -> str | None:
    """A directory of ICD files for OCL_ICD_VENDORS: the system's (those of
    OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors) and, unless one of them is already Intel's
    OpenCL CPU runtime, one naming intel-opencl-rt's libintelocl.so, whose libraries are
    preloaded. None without the wheel."""
    lib = _wheel_library_dir()
    if lib is None:
        return None
    system = _system_icds()
    icds = dict(system)
    if not any("libintelocl" in text for text in system.values()):
        icds["ptxport-intel-opencl-rt.icd"] = str(lib / "libintelocl.so") + "\n"
        _preload_wheel_libraries(lib)
    return _icd_directory(icds)


def _system_icds() -> dict[str, str]:
    """The ICD files the loader would read without OCL_ICD_VENDORS: name -> contents."""
    vendors = Path(os.environ.get("OPENCL_VENDOR_PATH") or _SYSTEM_VENDORS)
    icds = {}
    for path in sorted(vendors.glob("*.icd")) if vendors.is_dir() else ():
        try:
            icds[path.name] = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue    # the loader would skip it as well
    return icds


def _preload_wheel_libraries(lib: Path) -> None:
    """Load the libraries libintelocl.so needs from the wheel's lib/ (it has no RUNPATH), so
    that the loader's dlopen finds them without LD_LIBRARY_PATH."""
    for name in _WHEEL_LIBRARIES:
        if (lib / name).exists():
            try:
                ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass


def _icd_directory(icds: dict[str, str]) -> str:
    """A directory holding exactly `icds` (name -> contents): one in ptxport's cache named by
    its contents, written once and shared by processes; a temporary one where the cache
    cannot be written."""
    key = hashlib.sha256(repr(sorted(icds.items())).encode()).hexdigest()[:16]
    directory = cache_path("opencl-icd", key)
    for name, text in icds.items():
        if read_entry(directory / name) != text.encode():
            write_entry(directory / name, text.encode())
    if all(read_entry(directory / name) == text.encode() for name, text in icds.items()):
        return str(directory)
    directory = Path(tempfile.mkdtemp(prefix="ptxport-icd-"))
    for name, text in icds.items():
        (directory / name).write_text(text)
    return str(directory)


@cache
def _register_wheel_runtime() -> bool:
    """Make the ICD loader see intel-opencl-rt (when this environment has it) besides the
    system's ICDs. ocl-icd (which pyopencl's wheels bundle) reads OCL_ICD_VENDORS once, when
    platforms are first enumerated, and it replaces the system's vendors directory; so it
    names a directory with the system's ICD files and the wheel's, and is set before
    pyopencl is first imported here. A user's own OCL_ICD_VENDORS is left as it is.
    Returns whether pyopencl was imported before (then the loader may have listed its
    platforms already, without the wheel's)."""
    imported_before = "pyopencl" in sys.modules
    if not os.environ.get("OCL_ICD_VENDORS"):
        directory = wheel_icd_directory()
        if directory is not None:
            os.environ["OCL_ICD_VENDORS"] = directory
    return imported_before


def _cl():
    _register_wheel_runtime()
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
    """A kernel's SPIR-V module and layout, and its module's source lines (for run-time
    errors); cl.Programs are built per device on first use."""

    name: str
    spirv: bytes
    layout: object
    programs: dict
    lines: LineTable = field(default_factory=LineTable)
    variables: object = None    # the module's ModuleVariables (spirv_globals.py)


@dataclass
class _Memory:
    """One allocation: a cl.SVMAllocation (`svm`) or a cl.Buffer, on device `ordinal`."""

    memory: object
    size: int
    ordinal: int
    svm: bool


class Backend(BackendBase):
    name = "opencl"
    dlpack_device_type = 4  # kDLOpenCL

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._availability: tuple[bool, str] | None = None
        self._devices: list = []
        self._contexts: dict[int, tuple] = {}
        self._timers: dict[int, tuple[int, int, int]] = {}   # ordinal -> %globaltimer's
        self._live: dict[int, _Memory] = {}
        self._starts: list[int] = []
        self._tables: dict[int, np.ndarray] = {}   # by ordinal, for launches (_table)
        self._variable_blocks = VariableBlocks(self)
        self._heaps = DeviceHeaps(self)
        self._next = _FIRST_ADDRESS
        # False puts every device on the "translated" scheme (to test it where SVM exists);
        # it decides for allocations and launches made after it changes
        self._svm_allowed = True
        # False compiles kernels without bounds checks (to measure what they cost; a
        # faulting access then goes unnoticed); it decides for kernels compiled after it
        self._bounds_checks = True

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
        if not why and _register_wheel_runtime() and wheel_icd_directory() is not None:
            why = ("no OpenCL platform found: intel-opencl-rt is installed, but pyopencl was "
                   "imported before ptxport could make the ICD loader see it; set "
                   f"OCL_ICD_VENDORS={wheel_icd_directory()} before the program's first "
                   "OpenCL call")
        return False, ("no OpenCL device accepts SPIR-V" + (f" ({why})" if why else
                       f" (no OpenCL platform found; Intel's CPU runtime: {_INSTALL_HINT})"))

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
        return replace(_properties(self._devices[ordinal]),
                       unified_addressing=self._uses_svm(ordinal))

    def address_scheme(self, ordinal: int) -> str:
        """How device `ordinal` gives kernels addresses: "svm" (shared virtual memory, the
        address is the SVM pointer) or "translated" (buffers, addresses in 8-byte parameters
        translated at launch); see the module's docstring."""
        return "svm" if self._uses_svm(ordinal) else "translated"

    def bounds_checks(self, ordinal: int) -> str:
        """What device `ordinal` checks a kernel's memory accesses against, in words."""
        allocations = ("every allocation of the device" if self._uses_svm(ordinal) else
                       "the allocation each pointer parameter lies in")
        return (f"global, const, generic and shared accesses, against {allocations}, the "
                "block's shared memory, the kernel's parameters, local variables and module "
                "variables; a bad access is skipped and raises IllegalAddressError")

    def _uses_svm(self, ordinal: int) -> bool:
        return self._svm_allowed and _has_coarse_svm(self._devices[ordinal])

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
        svm = self._uses_svm(ordinal)
        try:
            if svm:
                memory = cl.SVMAllocation(context, max(nbytes, 1) + _ALIGNMENT - _SVM_ALIGNMENT,
                                          _SVM_ALIGNMENT, cl.svm_mem_flags.READ_WRITE)
            else:
                memory = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 1))
        except cl.Error as e:
            raise OutOfMemoryError(f"opencl:{ordinal} could not allocate {nbytes} bytes: "
                                   f"{e}") from None
        with self._lock:
            if svm:
                address = -(-memory.svm_ptr // _ALIGNMENT) * _ALIGNMENT
            else:
                address = self._next
                self._next += (max(nbytes, 1) + 2 * _ALIGNMENT - 1) // _ALIGNMENT * _ALIGNMENT
            self._live[address] = _Memory(memory, nbytes, ordinal, svm)
            self._starts.insert(bisect_right(self._starts, address), address)
            self._tables.clear()
        return Allocation(address, nbytes, (ordinal, memory))

    def register_host_memory(self, ordinal: int, memory: np.ndarray) -> Allocation:
        # With fine-grained system SVM a kernel may use any host address as it is; the
        # memory is entered like an SVM allocation, so that copies, fills and bounds checks
        # know it, and stays its owner's (free() only forgets it).
        if not (self._uses_svm(ordinal) and _has_system_svm(self._devices[ordinal])):
            return super().register_host_memory(ordinal, memory)
        address = memory.ctypes.data
        if not memory.nbytes:   # nothing a kernel could reach, and no address to keep
            return Allocation(0, 0, memory)
        with self._lock:
            i = bisect_right(self._starts, address + memory.nbytes - 1) - 1
            if i >= 0 and self._starts[i] + self._live[self._starts[i]].size > address:
                raise InvalidValueError(f"the {memory.nbytes} bytes of host memory at "
                                        f"{address:#x} overlap memory opencl:{ordinal} "
                                        "knows already")
            self._live[address] = _Memory(_HostMemory(memory), memory.nbytes, ordinal, True)
            self._starts.insert(bisect_right(self._starts, address), address)
            self._tables.clear()
        return Allocation(address, memory.nbytes, memory)

    def free(self, allocation: Allocation) -> None:
        with self._lock:   # released inside, so that a launch never names freed memory
            memory = self._live.pop(allocation.address, None)
            if memory is None:
                return
            self._starts.remove(allocation.address)
            self._tables.clear()
            memory.memory.release()

    def _find(self, address: int, locked: bool = False) -> tuple[_Memory, int] | None:
        """(allocation, offset) of the allocation `address` lies in (its end included);
        `locked`: the caller holds the lock."""
        if not locked:
            with self._lock:
                return self._find(address, locked=True)
        i = bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        start = self._starts[i]
        memory = self._live[start]
        if address - start > memory.size:
            return None
        return memory, address - start

    def _located(self, address: int, nbytes: int) -> tuple[_Memory, int]:
        found = self._find(address)
        if found is None or found[1] + nbytes > found[0].size:
            raise LaunchError(f"the {nbytes} bytes at {address:#x} are not inside one opencl "
                              "allocation")
        return found

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        if not nbytes:
            return
        cl = _cl()
        if kind == "htod":
            memory, offset = self._located(dst, nbytes)
            to, source = self._device_side(memory, dst, offset, nbytes), _host_bytes(src, nbytes)
            options = {"dst_offset": offset} if not memory.svm else {}
        elif kind == "dtoh":
            memory, offset = self._located(src, nbytes)
            to, source = _host_bytes(dst, nbytes), self._device_side(memory, src, offset, nbytes)
            options = {"src_offset": offset} if not memory.svm else {}
        else:
            (memory, to_offset), (other, from_offset) = (self._located(dst, nbytes),
                                                        self._located(src, nbytes))
            to = self._device_side(memory, dst, to_offset, nbytes)
            source = self._device_side(other, src, from_offset, nbytes)
            options = {} if memory.svm else {"byte_count": nbytes, "src_offset": from_offset,
                                             "dst_offset": to_offset}
        cl.enqueue_copy(self._queue(memory.ordinal), to, source, **options).wait()

    @staticmethod
    def _device_side(memory: _Memory, address: int, offset: int, nbytes: int):
        """What pyopencl copies to or from for `nbytes` at `address` (`offset` into
        `memory`): the cl.Buffer itself (the copy takes the offset), or an SVM pointer to the
        bytes (a view of their address, which the host does not touch: SVM copies go
        through the queue)."""
        return _cl().SVM(_host_bytes(address, nbytes)) if memory.svm else memory.memory

    def _queue(self, ordinal: int):
        return self._context(ordinal)[1]

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        if not nbytes:
            return
        memory, offset = self._located(address, nbytes)
        pattern = np.array(value, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[width])
        target = self._device_side(memory, address, offset, nbytes)
        _cl().enqueue_fill(self._queue(memory.ordinal), target, pattern, nbytes,
                           offset=0 if memory.svm else offset).wait()

    # -- kernels --------------------------------------------------------------------------------

    def compile(self, module: Module, kernels: list[str]) -> dict[str, OpenclKernelBinary]:
        from ptxport.codegen.targets.spirv import compile_module, variable_block
        from ptxport.runtime.backends import opencl_cache

        binaries = {}
        variables = variable_block(module)
        for name in kernels:  # one SPIR-V module each: a kernel LLVM fails on fails alone
            key = opencl_cache.spirv_key(module, name, self._bounds_checks)
            stored = opencl_cache.load_spirv(key)
            if stored is None:
                spirv, layouts = compile_module(module, [name], self._bounds_checks)
                stored = spirv, layouts[name]
                opencl_cache.store_spirv(key, *stored)
            binaries[name] = OpenclKernelBinary(name, *stored, {}, module.lines, variables)
        return binaries

    def module_global(self, ordinal: int, module: Module, name: str) -> tuple[int, int]:
        from ptxport.codegen.targets.spirv import variable_block

        return self._variable_blocks.address(ordinal, variable_block(module), name)

    def _kernel(self, ordinal: int, binary: OpenclKernelBinary):
        cl = _cl()
        self._check_device(ordinal, binary)
        program = binary.programs.get(ordinal)
        if program is None:
            from ptxport.runtime.backends.opencl_cache import build_program

            context, _ = self._context(ordinal)
            try:
                program = build_program(cl, context, self._devices[ordinal], binary.spirv)
            except cl.Error as e:
                raise CompileError(f"opencl:{ordinal} refused ptxport's SPIR-V for "
                                   f"{binary.name}", str(e)) from None
            binary.programs[ordinal] = program
        return cl.Kernel(program, binary.name)   # a fresh one: its arguments are this launch's

    def _check_device(self, ordinal: int, binary: OpenclKernelBinary) -> None:
        """Raise UnsupportedFeatureError, naming what is missing, where the kernel needs
        what device `ordinal` lacks."""
        layout, device = binary.layout, self._devices[ordinal]
        extensions = device.extensions.split()
        lacks = None
        if layout.needs_warp and not self.warp_capable(ordinal):
            lacks = "it uses warp operations, and {} cannot run sub-groups of 32 work-items"
        elif layout.needs_ballot and "cl_khr_subgroup_ballot" not in extensions:
            lacks = ("it takes ballots of a warp's lanes (vote, activemask or elect), and {} "
                     "has no cl_khr_subgroup_ballot")
        elif layout.reads_clock and "cl_khr_kernel_clock" not in extensions:
            lacks = ("it reads the clock (%clock, %clock64 or %globaltimer), and {} has no "
                     "device clock (cl_khr_kernel_clock)")
        elif layout.prints_doubles and not self.fp64_capable(ordinal):
            lacks = ("it prints floating-point values, which printf takes as doubles, and {} "
                     "has no fp64 (cl_khr_fp64)")
        if lacks:
            raise UnsupportedFeatureError(f"kernel {binary.name}", "spirv", None,
                                          lacks.format(f"opencl:{ordinal} ({device.name})"))

    def launch(self, ordinal: int, binary: OpenclKernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes) -> None:
        cl = _cl()
        kernel = self._kernel(ordinal, binary)
        context, queue = self._context(ordinal)
        layout = binary.layout
        packed = bytearray(params.ljust(max(layout.params_size, 1), b"\0"))
        svm = self._uses_svm(ordinal)
        # on the "svm" scheme every base is NULL: the kernel takes each slot as it is
        bases = [None] * len(layout.pointer_slots) if svm else \
            self._translate_addresses(binary, packed)
        parameters = cl.Buffer(context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                               hostbuf=bytes(packed))
        shared = layout.static_shared + dynamic_shared
        kernel.set_arg(0, parameters)
        kernel.set_arg(1, cl.LocalMemory(max(shared, 16)))
        kernel.set_arg(2, np.uint32(shared))
        kernel.set_arg(4, self._variables_argument(ordinal, binary))
        heap = self._heaps.heap(ordinal).address if layout.uses_heap else 0
        for i, base in enumerate(bases):
            kernel.set_arg(5 + i, base)
        global_size = tuple(g * b for g, b in zip(grid, block, strict=True))
        if layout.prints:   # what Python printed before comes first
            sys.stdout.flush()
        timer = self._timer(ordinal) if layout.reads_timer else (0, 0, 0)
        # no allocation named to the kernel is freed before the kernel is enqueued (nor
        # before its table of allocations is made)
        with self._lock:
            checks = self._checks_buffer(context, ordinal, layout, packed, bases, heap, timer)
            kernel.set_arg(3, checks)
            if svm:
                _name_svm_pointers(kernel, [memory.memory.svm_ptr for memory in self._live.values()
                                            if memory.svm and memory.ordinal == ordinal
                                            and not isinstance(memory.memory, _HostMemory)])
            done = cl.enqueue_nd_range_kernel(queue, kernel, global_size, tuple(block))
        done.wait()
        parameters.release()
        if layout.prints:
            _flush_c_stdio()
        record, log = read_records(cl, queue, checks, layout)
        checks.release()
        print_assert_log(layout, log)
        fault = read_fault(record)
        if fault is not None:
            raise fault_error(binary, fault, block, shared)

    def _variables_argument(self, ordinal: int, binary: OpenclKernelBinary):
        """The kernel's argument for its module's variable block: the SVM pointer, the
        block's cl.Buffer, or None (NULL) for a module without variables."""
        block = self._variable_blocks.block(ordinal, binary.variables)
        if block is None:
            return None
        memory, _ = self._located(block.address, block.size)
        return self._device_side(memory, block.address, 0, block.size) if memory.svm \
            else memory.memory

    def set_heap_size(self, nbytes: int) -> None:
        """The size of the device heap that kernels' malloc and new allocate from
        (cudaLimitMallocHeapSize). Raises InvalidValueError once a kernel using malloc or
        free has been launched, as CUDA does."""
        self._heaps.set_size(nbytes)

    def _timer(self, ordinal: int) -> tuple[int, int, int]:
        """The device clock's calibration for %globaltimer (opencl_timer.py), made at the
        first launch that needs it."""
        timer = self._timers.get(ordinal)
        if timer is None:
            from ptxport.runtime.backends.opencl_timer import calibrate

            timer = self._timers[ordinal] = calibrate(_cl(), *self._context(ordinal))
        return timer

    def _checks_buffer(self, context, ordinal: int, layout, packed: bytearray, bases: list,
                       heap: int, timer: tuple[int, int, int]):
        """The launch's checks buffer (spirv_checks.py): an empty fault record, the table
        of the device's allocations ("svm" scheme; the caller holds the lock), and each
        parameter slot's allocation: absolute where the slot holds an SVM address, relative
        to its buffer argument where it got one, else empty."""
        table = self._table(ordinal)
        sizes = {id(memory.memory): memory.size for memory in self._live.values()} \
            if any(base is not None for base in bases) else {}
        slots = []
        for offset, base in zip(layout.pointer_slots, bases, strict=True):
            value = int.from_bytes(packed[offset:offset + 8], "little")
            found = self._find(value, locked=True) if base is None else None
            if base is not None:
                slots.append((0, sizes[id(base)]))
            elif found is not None and found[0].svm:
                slots.append((value - found[1], value - found[1] + found[0].size))
            else:
                slots.append((0, 0))
        ranges = CHECKS_HEADER + table.size
        words = np.zeros(ranges + 2 * len(slots), np.uint64)
        words[CHECKS_TABLE] = len(table)
        words[CHECKS_HEAP] = heap
        words[CHECKS_TIMER:CHECKS_TIMER + 3] = timer
        words[CHECKS_HEADER:ranges] = table.ravel()
        words[ranges:] = [v for pair in slots for v in pair]
        words = with_assert_log(layout, words)
        cl = _cl()
        return cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=words)

    def _table(self, ordinal: int) -> np.ndarray:
        """The [start, end) pairs of device `ordinal`'s SVM allocations, sorted (made once
        per change of the allocations; the caller holds the lock)."""
        table = self._tables.get(ordinal)
        if table is None:
            pairs = [(start, start + memory.size) for start in self._starts
                     if (memory := self._live[start]).svm and memory.ordinal == ordinal
                     and memory.size]
            table = self._tables[ordinal] = np.array(pairs, np.uint64).reshape(-1, 2)
        return table


    def _translate_addresses(self, binary: OpenclKernelBinary, packed: bytearray) -> list:
        """The "translated" scheme: each 8-byte parameter slot holding an address inside a
        cl.Buffer allocation gets that buffer (returned, one per slot; None for the others)
        and the offset into it (written into `packed`). A device address elsewhere in the
        parameters (inside a structure argument) cannot be given its buffer: the launch is
        refused rather than letting the kernel use it."""
        slots = binary.layout.pointer_slots
        bases = []
        for offset in slots:
            found = self._buffer_at(int.from_bytes(packed[offset:offset + 8], "little"))
            if found is None:
                bases.append(None)
                continue
            memory, inside = found
            packed[offset:offset + 8] = inside.to_bytes(8, "little")
            bases.append(memory.memory)
        for offset in range(0, len(packed) - 7, 8):
            if offset not in slots and \
                    self._buffer_at(int.from_bytes(packed[offset:offset + 8], "little")):
                raise UnsupportedFeatureError(
                    f"kernel {binary.name}", "spirv", None,
                    f"a device address inside a structure argument (bytes {offset}.."
                    f"{offset + 7} of the parameters): without shared virtual memory the "
                    "opencl backend passes buffers as kernel arguments and can translate only "
                    "addresses passed as 8-byte parameters")
        return bases

    def _buffer_at(self, value: int) -> tuple[_Memory, int] | None:
        found = self._find(value) if value >= _FIRST_ADDRESS else None
        return found if found is not None and not found[0].svm else None


def _host_bytes(address: int, nbytes: int) -> np.ndarray:
    """A uint8 array over `nbytes` at `address` (reads and writes nothing by itself)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


class _HostMemory:
    """Host memory registered on a device with fine-grained system SVM (kept as `array`, a
    uint8 numpy array over it); releasing it leaves it to its owner."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def release(self) -> None:
        self.array = None


@cache
def _has_system_svm(device) -> bool:
    """Whether the device's kernels may use any host address (CL_DEVICE_SVM_FINE_GRAIN_SYSTEM;
    OpenCL 2.0)."""
    cl = _cl()
    try:
        capabilities = device.get_info(cl.device_info.SVM_CAPABILITIES)
    except (cl.Error, AttributeError):
        return False
    return bool(capabilities & cl.device_svm_capabilities.FINE_GRAIN_SYSTEM)


@cache
def _has_coarse_svm(device) -> bool:
    """Whether the device has coarse-grained buffer SVM (every OpenCL 2.x device does;
    OpenCL 3.0 made it optional, and 1.x has no SVM at all)."""
    cl = _cl()
    try:
        capabilities = device.get_info(cl.device_info.SVM_CAPABILITIES)
    except (cl.Error, AttributeError):
        return False
    return bool(capabilities & cl.device_svm_capabilities.COARSE_GRAIN_BUFFER)


def _name_svm_pointers(kernel, pointers: list[int]) -> None:
    """clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_SVM_PTRS): the SVM allocations the kernel
    may reach other than through its arguments (an empty list is an error: none is named
    then, on a kernel object that is fresh for each launch)."""
    if not pointers:
        return
    values = (ctypes.c_void_p * len(pointers))(*pointers)
    status = _opencl_library().clSetKernelExecInfo(
        kernel.int_ptr, _KERNEL_EXEC_INFO_SVM_PTRS, ctypes.sizeof(ctypes.c_void_p) * len(pointers),
        values)
    if status != 0:
        raise LaunchError(f"clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_SVM_PTRS) failed with "
                          f"OpenCL error {status} for {len(pointers)} SVM allocations")


@cache
def _opencl_library() -> ctypes.CDLL:
    """The ICD loader pyopencl uses (pyopencl has no clSetKernelExecInfo). Any loader would
    do, as the kernel object itself leads to its platform's functions."""
    import pyopencl

    package = Path(pyopencl.__file__).parent
    bundled = sorted([*package.glob(".libs/libOpenCL*"), *package.parent.glob(
        "pyopencl.libs/libOpenCL*")])
    library = ctypes.CDLL(str(bundled[0]) if bundled else
                          ctypes.util.find_library("OpenCL") or "libOpenCL.so.1")
    library.clSetKernelExecInfo.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t,
                                            ctypes.c_void_p)
    library.clSetKernelExecInfo.restype = ctypes.c_int32
    return library


def _flush_c_stdio() -> None:
    """Write out what printf calls of a kernel left in C's stdio buffers (OpenCL leaves the
    stream and its buffering to the runtime; Intel's writes through C's stdout)."""
    _libc().fflush(None)


@cache
def _libc():
    libc = ctypes.CDLL(None)
    libc.fflush.argtypes = (ctypes.c_void_p,)
    return libc


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
