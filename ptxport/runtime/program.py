"""Programs: source -> ObjectCode -> Kernel, as cuda.core's chain of nouns.

Program(code, code_type="ptx" | "c++", options).compile("native") reads the PTX (C++ goes
through NVRTC first), builds and verifies the IR once, and returns an ObjectCode holding it.
Nothing is compiled for a processor yet: a Kernel is compiled for a device the first time it
is launched there (through that device's backend, the one place the runtime calls a code
generator), and the binary is kept for later launches; compile("cubin") does that at once
for the current device. ProgramOptions and its NVRTC flags live in program_options.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ptxport.errors import InvalidValueError, KernelNotFoundError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.analysis import pointer_parameters
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.program_options import ProgramOptions, check_supported, nvrtc_options

if TYPE_CHECKING:
    from ptxport.runtime.backends import KernelBinary
    from ptxport.runtime.device import Device

__all__ = ["Kernel", "ObjectCode", "ParamInfo", "Program", "ProgramOptions"]

CODE_TYPES = ("ptx", "c++")
# cuda.core's target types other than "ptx" and "cubin", which ptxport cannot produce.
_REFUSED_TARGETS = {
    "ltoir": "LTO IR is NVVM's input to nvJitLink; ptxport reads and produces PTX",
    "fatbin": "a fat binary holds code for real NVIDIA GPUs; compile to 'ptx' or 'cubin'",
}


class Program:
    """Source code to compile: PTX, or CUDA C++ (through NVRTC).

    Parameters
    ----------
    code : str
        The PTX module or the CUDA C++ source. C++ kernels are found by name when
        `extern "C"`, else by the C++ names given to compile(name_expressions=...), or by
        their mangled names.
    code_type : str
        "ptx" or "c++".
    options : ProgramOptions, optional
        cuda.core's options (ptxport.runtime.program_options); a field ptxport cannot
        honour raises InvalidValueError here.
    """

    def __init__(self, code: str, code_type: str, options: ProgramOptions | None = None):
        code_type = code_type.lower() if isinstance(code_type, str) else code_type
        if code_type not in CODE_TYPES:
            raise InvalidValueError(
                f"code_type must be one of {', '.join(map(repr, CODE_TYPES))}, not {code_type!r}")
        if not isinstance(code, str):
            raise InvalidValueError(f"Program takes its code as a str, not {type(code).__name__}")
        self.code, self.code_type = code, code_type
        self.options = options or ProgramOptions()
        check_supported(self.options)

    def compile(self, target_type: str = "native", name_expressions: Sequence[str] = (),
                logs: TextIO | None = None) -> ObjectCode:
        """Read the program into verified IR, once; kernels are compiled for a device when
        first launched there, and run on any device.

        Parameters
        ----------
        target_type : str
            "native" (the default) or "ptx": only that; the ObjectCode's `code` is the PTX.
            "cubin" (cuda.core's name for a device binary): also compile every kernel now for
            the current device (Device()) through its backend, so that what the device
            cannot run is reported here; `code` stays the PTX, as ptxport's device code
            lives in the process (a JIT-compiled function on the CPU). A target name
            ("nvptx:sm_90", "amdgpu:gfx1100", "spirv", "cpu") compiles every kernel for
            that target now: `code` is then the target's code (PTX text, a code object, a
            SPIR-V module, LLVM IR text per kernel).
        name_expressions : sequence of str
            C++ only: kernels by their C++ names ("saxpy<float>", "ns::scale"), which NVRTC
            instantiates; `get_kernel` then finds them by those names.
        logs : object with a write(str) method, optional
            Receives NVRTC's log (warnings) when NVRTC runs (not on a cache hit).

        Raises
        ------
        CompileError
            NVRTC refused the C++ source or a name expression; `log` holds NVRTC's log.
        PtxSyntaxError, PtxSemanticError
            The PTX is malformed or does not make sense (each error with file:line:column).
        InvalidValueError
            An unknown target type, or name expressions for PTX.
        """
        _check_target_type(target_type)
        ptx, lowered = self._ptx(tuple(name_expressions), logs)
        module = build(parse(ptx, self.options.name))
        verify(module)
        code = ObjectCode(ptx, module, self.options.name, lowered)
        if target_type == "cubin":
            from ptxport.runtime.device import Device

            device = Device()
            for name in code.kernel_names:
                code._binary(device, name)
        if target_type not in ("native", "ptx", "cubin"):
            from ptxport.codegen.compile import compile_for_target

            code.code = compile_for_target(module, target_type)
        code.code_type = target_type
        return code

    def _ptx(self, name_expressions: tuple[str, ...], logs: TextIO | None) \
            -> tuple[str, dict[str, str]]:
        """The program's PTX and the symbols of its name expressions."""
        if self.code_type == "ptx":
            if name_expressions:
                raise InvalidValueError(
                    "name_expressions are C++ names for NVRTC; a PTX program's kernels are "
                    "found by their .entry names")
            return self.code, {}
        from ptxport.frontends.nvrtc import compile_program
        from ptxport.runtime.device import Device

        output = compile_program(self.code, self.options.name,
                                 nvrtc_options(self.options, lambda: Device().arch),
                                 name_expressions, cache=not self.options.no_cache)
        if logs is not None and output.log:
            logs.write(output.log)
        return output.ptx, output.lowered_names


def _check_target_type(target_type: str) -> None:
    if not isinstance(target_type, str):
        raise InvalidValueError(f"target_type must be a str, not {type(target_type).__name__}")
    if target_type in _REFUSED_TARGETS:
        raise UnsupportedFeatureError(f"target_type {target_type!r}", "ptxport",
                                      reason=_REFUSED_TARGETS[target_type])


class ObjectCode:
    """A verified IR module and the kernels in it; made by Program.compile."""

    code_type = "native"

    def __init__(self, ptx: str, module: ir.Module, name: str,
                 symbol_mapping: dict[str, str] | None = None):
        self.code, self.module, self.name = ptx, module, name
        self.ptx = ptx   # the PTX the module was read from (what `code` is for "native")
        # C++ name expression -> its symbol in the PTX (Program.compile(name_expressions=)).
        self.symbol_mapping = dict(symbol_mapping or {})
        self._kernels: dict[str, Kernel] = {}
        self._binaries: dict[tuple[str, str], KernelBinary] = {}
        self._lock = threading.Lock()
        self._portable: ir.Module | None = None

    @property
    def kernel_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.module.kernels)

    def get_kernel(self, name: str) -> Kernel:
        """The kernel (`.entry`) called `name`, or whose C++ name expression (given to
        Program.compile) is `name`; raises KernelNotFoundError listing the kernels there
        are."""
        name = self.symbol_mapping.get(name, name)
        with self._lock:
            kernel = self._kernels.get(name)
            if kernel is None:
                function = self.module.functions.get(name)
                if function is None or not function.is_kernel:
                    raise KernelNotFoundError(self._not_found(name))
                kernel = self._kernels[name] = Kernel(self, function)
            return kernel

    def _not_found(self, name: str) -> str:
        names = self.kernel_names
        there = ", ".join(names) if names else "none"
        hint = ""
        if any(n.startswith("_Z") for n in names):
            hint = ('; C++ kernels declared without extern "C" have mangled names: declare '
                    'them extern "C", pass their C++ names to Program.compile('
                    'name_expressions=[...]) or ask for the mangled name')
        return f"{self.name}: no kernel named {name!r}; the kernels are: {there}{hint}"

    def get_global(self, name: str, device: Device) -> tuple[int, int]:
        """(address, size) on `device` of the module's .global or .const variable `name`
        (a `__device__`, `__constant__` or `__managed__` variable), shared by the module's
        kernels there. Raises KernelNotFoundError if the module has no such variable, and
        UnsupportedFeatureError where the device cannot say."""
        variable = self.module.globals.get(name)
        if variable is None or variable.space not in ("global", "const"):
            raise KernelNotFoundError(f"{self.name}: no .global or .const variable named "
                                      f"{name!r}")
        with self._lock:
            module = self._module_for(device)
        return device._backend.module_global(device.device_id, module, name)

    def _module_for(self, device: Device) -> ir.Module:
        """What `device` compiles: the module, or, where there are no NVIDIA texture units,
        the module with its texture and surface instructions lowered (passes/textures.py)."""
        if device._backend.name == "cuda":
            return self.module
        if self._portable is None:
            from ptxport.codegen.compile import sampler_lowered

            self._portable = sampler_lowered(self.module, device._backend.name)
        return self._portable

    def _binary(self, device: Device, kernel: str) -> KernelBinary:
        """The kernel compiled for `device`, compiled on first use and kept."""
        key = (str(device), kernel)
        with self._lock:
            binary = self._binaries.get(key)
            if binary is None:
                binary = device._backend.compile(self._module_for(device), [kernel])[kernel]
                self._binaries[key] = binary
            return binary

    def __repr__(self) -> str:
        return f"<ObjectCode {self.name}: {', '.join(self.kernel_names)}>"


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter: where it lies in the parameter buffer and what it holds.

    `pointer` is True when the kernel uses the parameter as an address (a `.ptr` attribute,
    or a value loaded from it that becomes an address; `evidence` says which), False when it
    cannot be one (not a 64-bit integer), and None when it is a 64-bit integer the kernel
    never uses as an address (an unused pointer, or a 64-bit count).
    """

    name: str
    offset: int
    size: int
    alignment: int
    type: str          # the PTX type: "f32", "u64", "b8[16]" for a struct by value
    pointer: bool | None
    evidence: str = ""


def _ptx_type(p: ir.Variable) -> str:
    vector = f"v{p.vector}." if p.vector else ""
    array = "".join(f"[{d if d is not None else ''}]" for d in p.dims)
    return f"{vector}{p.type.name}{array}"


def _could_be_pointer(p: ir.Variable) -> bool | None:
    """None (unknown) for a 64-bit integer the kernel never uses as an address; False for
    anything else, which cannot hold an address."""
    return None if p.size == 8 and not p.dims and p.type.is_integer else False


def _operand_values(values):
    """Every Variable and Function an operand list mentions, looking inside addresses,
    symbol addresses, vectors and lists."""
    for value in values:
        if isinstance(value, ir.Address):
            yield value.base
        elif isinstance(value, ir.SymbolAddress):
            yield value.target
        elif isinstance(value, (ir.ListValue, ir.VectorValue)):
            yield from _operand_values(value.elements)
        else:
            yield value


def _static_shared_bytes(kernel: ir.Function) -> int:
    """The bytes of non-extern .shared variables the kernel and the functions it calls
    use (sizes only: padding between them is not counted)."""
    shared: dict[int, ir.Variable] = {}
    seen: set[int] = set()
    todo = [kernel]
    while todo:
        function = todo.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        found = list(function.variables.values())
        for inst in function.instructions():
            found += _operand_values(inst.operands)
        for value in found:
            if isinstance(value, ir.Function):
                todo.append(value)
            elif isinstance(value, ir.Variable) and value.space == "shared" \
                    and not value.is_extern:
                shared[id(value)] = value
    return sum(v.size for v in shared.values())


class Kernel:
    """A kernel of an ObjectCode, launchable on any device; made by ObjectCode.get_kernel.

    Launch it with launch(stream, config, kernel, *args), or numba/CuPy style with
    kernel[grid, block, stream, shmem_size](*args) (stream and shmem_size optional).
    """

    def __init__(self, object_code: ObjectCode, function: ir.Function):
        self._object_code, self._function = object_code, function
        slots, self._param_size = param_layout(function)
        pointers = pointer_parameters(function)
        self._arguments_info = tuple(
            ParamInfo(
                name=slot.name, offset=slot.offset, size=slot.size, alignment=slot.align,
                type=_ptx_type(slot.variable),
                pointer=True if slot.name in pointers else _could_be_pointer(slot.variable),
                evidence=pointers.get(slot.name, ""))
            for slot in slots)
        self._static_shared = _static_shared_bytes(function)
        self._last_binary: tuple[Device, KernelBinary] | None = None
        # (device, block shape) -> (binary, whether a launch may run at once) of the
        # shapes prepared for a launch (runtime/launch.py)
        self._ready: dict[tuple, tuple[KernelBinary, bool]] = {}
        self._packer = None     # how launch() packs arguments (runtime/launch.py)
        # its last launch (launch(); launch_packed()), for one like it (runtime/launch.py)
        self._like: tuple | None = None
        self._like_packed: tuple | None = None
        # launch configurations check_config accepted, by device (runtime/launch.py)
        self._accepted: set[tuple] = set()

    @property
    def name(self) -> str:
        return self._function.name

    @property
    def object_code(self) -> ObjectCode:
        return self._object_code

    @property
    def num_arguments(self) -> int:
        return len(self._arguments_info)

    @property
    def arguments_info(self) -> tuple[ParamInfo, ...]:
        return self._arguments_info

    @property
    def param_buffer_size(self) -> int:
        """The size of the packed parameter buffer (ptxport.ir.abi.param_layout)."""
        return self._param_size

    @property
    def static_shared_bytes(self) -> int:
        return self._static_shared

    @property
    def directives(self) -> dict[str, tuple[int, ...]]:
        """Performance directives of the kernel: maxntid, reqntid, minnctapersm, ..."""
        return dict(self._function.directives)

    def _binary(self, device: Device) -> KernelBinary:
        # (asked at every launch: the last device's binary is kept here, as one tuple)
        last = self._last_binary
        if last is not None and last[0] is device:
            return last[1]
        binary = self._object_code._binary(device, self.name)
        self._last_binary = (device, binary)
        return binary

    def __getitem__(self, launch_spec):
        """kernel[grid, block], kernel[grid, block, stream] or kernel[grid, block, stream,
        shmem_size]: a callable that launches with the given arguments. Without a stream,
        the current device's default stream."""
        from ptxport.runtime.launch import LaunchConfig, launch

        if not isinstance(launch_spec, tuple) or not 2 <= len(launch_spec) <= 4:
            raise InvalidValueError(
                "write kernel[grid, block], kernel[grid, block, stream] or "
                "kernel[grid, block, stream, shmem_size]")
        grid, block, *rest = launch_spec
        stream = rest[0] if rest else None
        shmem_size = rest[1] if len(rest) > 1 else 0
        config = LaunchConfig(grid=grid, block=block, shmem_size=shmem_size)

        def launch_with(*args) -> None:
            from ptxport.runtime.device import Device

            launch(stream if stream is not None else Device().default_stream, config, self,
                   *args)

        return launch_with

    def __repr__(self) -> str:
        params = ", ".join(f"{a.type} {a.name}" for a in self._arguments_info)
        return f"<Kernel {self.name}({params})>"
