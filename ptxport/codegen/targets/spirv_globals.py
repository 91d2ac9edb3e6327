"""Module variables of the SPIR-V target: a module's .global and .const variables (CUDA's
`__device__`, `__constant__` and `__managed__` variables) live in one block of device memory,
the module's *variable block*, which the opencl backend allocates once per device and passes
to every kernel of the module as a hidden argument; kernels address each variable at its
offset from the block's start, and device functions get the block as a hidden parameter.

Why not SPIR-V's own program-scope variables: the backend builds one OpenCL program per kernel
(a kernel LLVM fails on fails alone), so each kernel would have its own copy of every variable,
where CUDA has one per module; and OpenCL has no core call that tells the host where a
program-scope variable is (cl_intel_global_variable_access's
clGetDeviceGlobalVariablePointerINTEL exists on Intel's runtimes only). A block the runtime
owns is one copy per module on every OpenCL 2.x/3.0 device, its address is known to the host
(cuModuleGetGlobal, cudaMemcpyToSymbol, `__managed__` variables), and its initial contents are
written by the host before the first launch (`initial_image`).

Initial values follow PTX's rules (integers and floats of the element's size; addresses of
variables, `var+offset` or `generic(var)+offset`, which on SPIR-V devices are the same generic
address; addresses of functions, which on the SPIR-V target are their numbers among the
module's address-taken functions, gpu.function_numbers). Addresses of variables are the only
contents that depend on where the block is: `ModuleVariables.relocations` lists them, and
`initial_image(base)` adds the block's address to each.
"""

from __future__ import annotations

import struct
import weakref
from dataclasses import dataclass, field

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import FloatImm, IntImm

__all__ = ["ModuleVariables", "module_variables"]

# Every variable starts at a multiple of this (at least), as cudaMalloc'd memory would: vector
# loads that assume more than the declared alignment still find it.
_MIN_ALIGNMENT = 16
_FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}


@dataclass(eq=False)
class ModuleVariables:
    """Where each variable of a module lies in its variable block: name -> (offset, size),
    the block's `size`, its contents before relocation (`image`, variable addresses as
    offsets from the block's start) and the offsets of the 8-byte words that hold such
    addresses (`relocations`). `problems` names variables whose initial value SPIR-V cannot
    make (the first use of the block raises with it)."""

    offsets: dict[str, tuple[int, int]]
    size: int
    image: bytes
    relocations: tuple[int, ...]
    problems: list[UnsupportedFeatureError] = field(default_factory=list)

    def initial_image(self, base: int) -> bytes:
        """The block's initial contents once it lies at device address `base`."""
        if self.problems:
            raise self.problems[0]
        data = bytearray(self.image)
        for at in self.relocations:
            value = int.from_bytes(data[at:at + 8], "little") + base
            data[at:at + 8] = (value & (2**64 - 1)).to_bytes(8, "little")
        return bytes(data)


_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def module_variables(module: ir.Module, function_numbers: dict[str, int]) -> ModuleVariables:
    """The variable block of `module` (made once per module): every .global and .const
    variable but texture, sampler and surface references and `.extern` declarations, each
    aligned, in declaration order. `function_numbers`: the address of each address-taken
    function (gpu.function_numbers)."""
    found = _LAYOUTS.get(module)
    if found is not None:
        return found
    variables = [var for var in module.globals.values()
                 if var.space in ("global", "const") and var.type.kind != "opaque"
                 and not var.is_extern]
    offsets, size = {}, 0
    for var in variables:
        align = max(var.alignment, _MIN_ALIGNMENT)
        size = (size + align - 1) // align * align
        offsets[var.name] = (size, var.size)
        size += var.size
    image = bytearray(size)
    relocations: list[int] = []
    problems = []
    for var in variables:
        start = offsets[var.name][0]
        try:
            data, words = _initial_bytes(module, var, offsets, function_numbers)
        except UnsupportedFeatureError as e:
            problems.append(e)
            continue
        image[start:start + len(data)] = data
        relocations += [start + word for word in words]
    layout = ModuleVariables(offsets, size, bytes(image), tuple(relocations), problems)
    _LAYOUTS[module] = layout
    return layout


def _initial_bytes(module: ir.Module, var: ir.Variable, offsets: dict[str, tuple[int, int]],
                   numbers: dict[str, int]) -> tuple[bytes, list[int]]:
    """A variable's initial contents (zeros past its initializer) and the offsets in them of
    the words that hold variable addresses (relative to the block)."""
    element = max(var.type.size, 1)
    out, words = bytearray(), []
    for item in var.init or []:
        if isinstance(item, ir.SymbolAddress) and element == 8:
            target = item.target
            if isinstance(target, ir.Variable) and target.name in offsets:
                words.append(len(out))
                value = offsets[target.name][0] + item.offset
            elif isinstance(target, ir.Function) and target.name in numbers \
                    and not (item.offset or item.generic):
                value = numbers[target.name]
            else:
                raise _cannot(module, var, item)
        elif var.type.kind == "float" and isinstance(item, (IntImm, FloatImm)):
            out += _float_bytes(module, var, item, element)
            continue
        elif isinstance(item, IntImm):
            value = item.value
        elif isinstance(item, FloatImm):
            value = item.bits
        else:
            raise _cannot(module, var, item)
        out += (value & ((1 << (8 * element)) - 1)).to_bytes(element, "little")
    return bytes(out[:var.size]), [w for w in words if w + 8 <= var.size]


def _float_bytes(module: ir.Module, var: ir.Variable, item: IntImm | FloatImm,
                 element: int) -> bytes:
    """A float element's bytes: an integer literal is its value; a float literal of the
    element's width its exact bits, of another width its value rounded to the element."""
    if isinstance(item, FloatImm) and item.width // 8 == element and var.type.name != "bf16":
        return item.bits.to_bytes(element, "little")
    if isinstance(item, FloatImm):
        value = struct.unpack("<f" if item.width == 32 else "<d",
                              item.bits.to_bytes(item.width // 8, "little"))[0]
    else:
        value = float(item.value)
    if var.type.name == "bf16":  # float32's upper half, rounded to nearest even
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)
        return (bits >> 16 & 0xFFFF).to_bytes(2, "little")
    if element not in _FLOAT_FORMATS:
        raise _cannot(module, var, item)
    try:
        return struct.pack(_FLOAT_FORMATS[element], value)
    except OverflowError:   # out of the element's range: infinity, as a conversion gives
        return struct.pack(_FLOAT_FORMATS[element], float("inf") if value > 0 else -float("inf"))


def _cannot(module: ir.Module, var: ir.Variable, item) -> UnsupportedFeatureError:
    return UnsupportedFeatureError("initializer", "spirv", module.location(var.pos),
                                   f"cannot initialize '{var.name}' with {item!r}")
