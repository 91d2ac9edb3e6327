"""CUDA's printf on the SPIR-V target: `call vprintf` becomes OpenCL C's printf.

CUDA C++ compiles printf(format, ...) to `call.uni (ret), vprintf, (format, args)`: `format` is
the generic address of a string constant (a .global or .const byte array), `args` that of a
.local buffer in which the compiler packs every argument at its natural alignment after C's
default promotions (cpu_printf.py, the CPU target's vprintf, describes the packing). OpenCL
C's printf is variadic, takes its format as a literal in the constant address space (LLVM's
SPIR-V backend turns a call of `i32 @printf(ptr addrspace(2), ...)` into the OpenCL.std
`printf` extended instruction), and accepts only literals for %s. So the call is resolved
here, at compile time:
- the format: the value stored into vprintf's first .param, followed back through mov, cvta
  and additions of constants to a module variable whose initial bytes are the string (C++
  string literals are constant: changing one is undefined); it is rewritten for OpenCL C
  (below) into an addrspace(2) constant;
- each argument: loaded at run time from the buffer, at the offset vprintf's packing gives
  it, with the type OpenCL's printf expects for its conversion;
- a %s argument: the pointer stored into the buffer, followed back the same way to a string
  constant, whose text (cut to the precision, padded to the width) replaces the conversion.
`_Tracer` follows values back along every path to the call, through mov, cvta, add and sub
of constants: the same definition (or store) must be the last one on all of them. What it
cannot follow (a format or %s string chosen at run time, a store through an address it
cannot follow, a call in between) raises UnsupportedFeatureError naming the call's line,
rather than print something else.

Rewriting for OpenCL C, whose printf is C99's with 64-bit `long`: 8-byte integers take `l`
(C's ll, j, z and t are not OpenCL C), the length modifiers of the other conversions are
dropped (CUDA passes a double for %f, %lf and %Lf alike, an int for %c), literal '%' signs are
doubled, and conversions past the 32nd argument are printed as written, as CUDA does. A %p
argument is passed as the 64-bit integer it is, not as a pointer: LLVM's SPIR-V backend aborts
on a constant pointer among a variadic call's arguments (SPIRVEmitIntrinsics looks for a
formal parameter that is not there), and a null or a variable's address stored for %p folds
to one. OpenCL's printf packs its arguments by size (Intel's runtime reads the 8 bytes back
as the pointer), so %p prints the same.

The call returns what CUDA's vprintf returns: the number of arguments the format reads (at
most 32, known at compile time), -1 for a null format (nothing is printed), -2 (CUDA's
"internal error") where OpenCL's printf reports a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, FunctionLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import predecessors
from ptxport.ir.types import TYPES

__all__ = ["Conversion", "call_printf", "lower_vprintf", "parse_format", "string_constant"]

MAX_ARGUMENTS = 32
GENERIC = 4                         # LLVM's SPIR-V generic address space (spirv.py)
_LONG_SIZES = ("l", "ll", "z", "j", "t")
_FLOATS = "eEfFgGaA"
# Instructions with a memory operand that only read it (any other may write it).
_READERS = frozenset(("ld", "ldu", "prefetch", "prefetchu", "isspacep", "applypriority",
                      "discard", "createpolicy"))
_MAX_DEPTH = 64

# %[flags][width][.precision][size]conversion, as cpu_printf reads it
_SPEC = re.compile(rb"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?"
                   rb"(?P<size>hh|h|ll|l|L|z|j|t)?(?P<conversion>[cdiouxXpeEfFgGaAs%])")


# --- the format ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Conversion:
    """One conversion of a format: where it is, its parts as written (precision b"" for a
    bare '.'), and the offsets in the argument buffer of its `*` width, its `*` precision
    and its value, in that order (none past the 32nd argument)."""

    start: int
    end: int
    flags: bytes
    width: bytes | None
    precision: bytes | None
    size: str
    conversion: str
    offsets: tuple[int, ...]

    @property
    def value_size(self) -> int:
        if self.conversion in _FLOATS + "sp":
            return 8
        return 8 if self.size in _LONG_SIZES else 4

    @property
    def stars(self) -> int:
        return (self.width == b"*") + (self.precision == b"*")


def parse_format(fmt: bytes) -> tuple[list[Conversion], int]:
    """The conversions of a format and how many arguments they read (at most 32)."""
    conversions, offset, count = [], 0, 0
    for m in _SPEC.finditer(fmt):
        conversion = m["conversion"].decode()
        sizes = [] if conversion == "%" else [4] * ((m["width"] == b"*") +
                                                   (m["precision"] == b"*"))
        if conversion != "%":
            long = conversion in _FLOATS + "sp" or (m["size"] or b"").decode() in _LONG_SIZES
            sizes.append(8 if long else 4)
        offsets = []
        if count + len(sizes) <= MAX_ARGUMENTS:     # CUDA reads at most 32
            for size in sizes:
                offset = (offset + size - 1) // size * size
                offsets.append(offset)
                offset += size
            count += len(sizes)
        conversions.append(Conversion(m.start(), m.end(), m["flags"], m["width"],
                                      m["precision"], (m["size"] or b"").decode(), conversion,
                                      tuple(offsets)))
    return conversions, count


def _escaped(text: bytes) -> bytes:
    return text.replace(b"%", b"%%")


def _as_written(fmt: bytes, conversions: list[Conversion]) -> bytes:
    """The OpenCL format that prints `fmt` with every conversion as written (no argument
    buffer), but %% as one '%'."""
    out, position = [], 0
    for c in conversions:
        out += [_escaped(fmt[position:c.start]),
                b"%%" if c.conversion == "%" else _escaped(fmt[c.start:c.end])]
        position = c.end
    return b"".join(out + [_escaped(fmt[position:])])


def _string_field(text: bytes | None, c: Conversion) -> bytes:
    """What %s prints of a string known at compile time (None: a null pointer), as the CPU
    target prints it: cut to the precision, padded with spaces to the width."""
    text = b"(null)" if text is None else text
    if c.precision is not None:
        text = text[:int(c.precision or b"0")]
    width = int(c.width or b"0")
    pad = b" " * max(width - len(text), 0)
    return text + pad if b"-" in c.flags else pad + text


# --- following values back --------------------------------------------------------------------

@dataclass(frozen=True)
class _Address:
    """A variable's address plus a byte offset (in whichever state space: the same memory)."""

    variable: ir.Variable
    offset: int


class _Unknown(Exception):
    """A value the tracer cannot know at compile time; the message says why."""


def _writes(inst: ir.Instruction, reg: ir.Register) -> bool:
    """Whether `inst` may write `reg` (its first operand names it)."""
    if not inst.operands:
        return False
    first = inst.operands[0]
    parts = first.elements if isinstance(first, ir.VectorValue) else \
        (first.first, first.second) if isinstance(first, ir.PairValue) else (first,)
    return any(p is reg or (isinstance(p, ir.RegisterElement) and p.register is reg)
               for p in parts)


class _Tracer:
    """What a register or a memory location certainly holds just before an instruction of
    one function, where plain code says so."""

    def __init__(self, function: ir.Function):
        self.function = function
        self.where: dict[int, tuple[ir.BasicBlock, int]] = {}
        self.predecessors = predecessors(function)
        for block in function.blocks:
            for i, inst in enumerate(block.instructions):
                self.where[id(inst)] = (block, i)

    def _last(self, at: ir.Instruction, examine) -> ir.Instruction:
        """The last instruction before `at` that `examine` picks (returns True for), the
        same one on every path to `at`. `examine` raises _Unknown for an instruction that
        may change what is looked for; so does a path from the function's start without
        one, or paths on which different ones come last."""
        block, index = self.where[id(at)]
        found: dict[int, ir.Instruction] = {}
        work, scanned = [(block, index)], set()
        while work:
            block, index = work.pop()
            hit = next((i for i in reversed(block.instructions[:index]) if examine(i)), None)
            if hit is not None:
                found[id(hit)] = hit
                continue
            if block is self.function.blocks[0]:
                raise _Unknown("nothing sets it on every path to the call")
            for predecessor in self.predecessors[id(block)]:
                if id(predecessor) not in scanned:
                    scanned.add(id(predecessor))
                    work.append((predecessor, len(predecessor.instructions)))
        if len(found) != 1:
            raise _Unknown("different paths to the call set it differently")
        return next(iter(found.values()))

    def value(self, operand, at: ir.Instruction, depth: int = 0):
        """An operand's value before `at`: an int, an _Address, or None where unknown."""
        if isinstance(operand, ir.IntImm):
            return operand.value & (2**64 - 1)
        if isinstance(operand, ir.Variable):
            return _Address(operand, 0)
        if isinstance(operand, ir.SymbolAddress) and isinstance(operand.target, ir.Variable):
            return _Address(operand.target, operand.offset)
        if isinstance(operand, ir.Register) and depth < _MAX_DEPTH:
            def examine(inst: ir.Instruction) -> bool:
                if not _writes(inst, operand):
                    return False
                if inst.guard is not None or inst.operands[0] is not operand:
                    raise _Unknown("a guarded or partial write")
                return True

            try:
                definition = self._last(at, examine)
            except _Unknown:
                return None
            return self._result(definition, depth + 1)
        return None

    def _result(self, inst: ir.Instruction, depth: int):
        """What mov, cvta, add and sub compute, where their operands are known."""
        ops = inst.operands
        if inst.opcode in ("mov", "cvta") and len(ops) == 2:
            return self.value(ops[1], inst, depth)
        integer = inst.spec.types and inst.spec.types[0][0] in "usb"
        if inst.opcode not in ("add", "sub") or not integer or len(ops) != 3 or inst.spec.groups:
            return None
        a, b = self.value(ops[1], inst, depth), self.value(ops[2], inst, depth)
        sign = 1 if inst.opcode == "add" else -1
        if isinstance(a, int) and isinstance(b, int):
            return (a + sign * b) & (2**64 - 1)
        if isinstance(a, _Address) and isinstance(b, int):
            return _Address(a.variable, a.offset + sign * _signed(b))
        if isinstance(a, int) and isinstance(b, _Address) and sign == 1:
            return _Address(b.variable, b.offset + _signed(a))
        return None

    def address(self, operand: ir.Address, at: ir.Instruction) -> _Address | None:
        """Where a memory operand points, if known."""
        base = self.value(operand.base, at) if operand.base is not None else None
        return _Address(base.variable, base.offset + operand.offset) \
            if isinstance(base, _Address) else None

    def stored(self, where: _Address, size: int, at: ir.Instruction):
        """The value of the `size` bytes at `where` just before `at`: what the last store
        there wrote (an int, an _Address, or None). Raises _Unknown where another
        instruction may have written them since, or no store is found."""
        def examine(inst: ir.Instruction) -> bool:
            if inst.opcode == "call":
                callee = inst.operands[1] if len(inst.operands) > 1 else None
                if isinstance(callee, ir.Function) and callee.name == "vprintf":
                    return False
                raise _Unknown("another call between its store and this one may change it")
            if inst.opcode == "st":
                return self._written(inst, where, size) is not None
            if inst.opcode in _READERS or not _may_reach(inst.spec.get("space"),
                                                         where.variable):
                return False
            for operand in inst.operands:
                if isinstance(operand, ir.Address):
                    written = self.address(operand, inst)
                    if written is None or written.variable is where.variable:
                        raise _Unknown(f"'{inst.spec.text}' may write it")
            return False

        store = self._last(at, examine)
        return self.value(self._written(store, where, size), store)

    def _written(self, inst: ir.Instruction, where: _Address, size: int):
        """The operand a st writes to exactly the `size` bytes at `where`; None if it writes
        elsewhere. Raises _Unknown if it may write part of them, or may not run."""
        target = self.address(inst.operands[0], inst)
        space = inst.spec.get("space")
        if target is None:
            if _may_reach(space, where.variable):
                raise _Unknown(f"'{inst.spec.text}' writes through an address ptxport cannot "
                               "follow")
            return None
        if target.variable is not where.variable:
            return None
        value = inst.operands[1]
        elements = value.elements if isinstance(value, ir.VectorValue) else (value,)
        element_size = TYPES[inst.spec.types[-1]].size
        for k, element in enumerate(elements):
            start = target.offset + k * element_size
            if start + element_size <= where.offset or start >= where.offset + size:
                continue
            if start != where.offset or element_size != size or inst.guard is not None:
                raise _Unknown(f"'{inst.spec.text}' writes part of it, or may not run")
            return element
        return None


def _may_reach(space: str | None, variable: ir.Variable) -> bool:
    """Whether an access in `space` through an address not known at compile time may touch
    `variable` (a call sequence's .param variables have no address one could hold)."""
    return variable.space != "param" and space in (None, variable.space)


def _signed(value: int) -> int:
    return value - 2**64 if value >> 63 else value


def _string(where: _Address) -> bytes | None:
    """The C string at `where` in a variable's initial value; None if it is not one."""
    var = where.variable
    if var.space not in ("global", "const") or var.init is None or var.type.kind == "opaque":
        return None
    element = var.type.size
    data = bytearray()
    for item in var.init:
        if isinstance(item, ir.IntImm):
            data += (item.value & ((1 << 8 * element) - 1)).to_bytes(element, "little")
        elif isinstance(item, ir.FloatImm):
            data += item.bits.to_bytes(element, "little")
        else:
            return None
    data = bytes(data.ljust(var.size, b"\0"))
    end = data.find(b"\0", max(where.offset, 0))
    return data[where.offset:end] if 0 <= where.offset < len(data) and end >= 0 else None


# --- the call ---------------------------------------------------------------------------------

@dataclass
class _Printf:
    """The OpenCL printf call a vprintf becomes: its format and, for each argument, where
    it lies in the buffer and how it is passed (i32, i64, f64, or char64: an 8-byte %lc
    passed as an int)."""

    format: bytes
    arguments: list[tuple[int, str]]
    as_written: bytes          # the format for a null argument buffer
    count: int
    maybe_null: bool           # whether the buffer's address is known only at run time


def check_vprintf_call(fl: FunctionLowering, inst: ir.Instruction, returns: list,
                       args: list) -> None:
    """Refuse a vprintf call that is not (format, argument buffer) -> one .b32, as .param
    variables (the form nvcc and NVRTC emit; amdgpu_printf.py lowers the same calls)."""
    if len(args) != 2 or len(returns) > 1 or \
            not all(isinstance(v, ir.Variable) for v in returns + args):
        raise fl.unsupported(inst, "vprintf takes a format and an argument buffer (.param "
                                   "variables) and returns one .b32")


def lower_vprintf(target, fl: FunctionLowering, inst: ir.Instruction, returns: list,
                  args: list) -> None:
    """`call (ret), vprintf, (format, args)` as OpenCL's printf; ret as CUDA's vprintf."""
    check_vprintf_call(fl, inst, returns, args)
    tracer = _tracer(target, fl)
    result = I32(-1)
    fmt = _format_text(fl, inst, tracer, args[0])
    if fmt is not None:
        call = _rewrite(fl, inst, tracer, fmt, args[1])
        target.prints = True
        target.prints_doubles |= any(kind == "f64" for _, kind in call.arguments)
        result = _emit(target, fl, call, args[1])
    if returns:
        fl.b.store(result, target.own_pointer(fl, returns[0]))


def _tracer(target, fl: FunctionLowering) -> _Tracer:
    tracer = target.printf_tracers.get(id(fl.function))
    if tracer is None:
        tracer = target.printf_tracers[id(fl.function)] = _Tracer(fl.function)
    return tracer


def string_constant(target, fl: FunctionLowering, inst: ir.Instruction, param: ir.Variable,
                    what: str, needs: str = "OpenCL's printf needs it") -> bytes | None:
    """The string constant whose address the 8-byte .param `param` holds when the call
    `inst` is made (None for a null pointer), followed back as printf's format is; raises
    UnsupportedFeatureError naming `what` (and who `needs` it) where it is not such a
    constant."""
    try:
        value = _tracer(target, fl).stored(_Address(param, 0), 8, inst)
    except _Unknown as e:
        raise fl.unsupported(inst, f"{what} cannot be followed to a string constant ({e}): "
                                   f"{needs} at compile time") from None
    if value == 0:
        return None
    text = _string(value) if isinstance(value, _Address) else None
    if text is None:
        raise fl.unsupported(inst, f"{what} is not the address of a string constant of the "
                                   f"module: {needs} at compile time")
    return text


def _format_text(fl: FunctionLowering, inst: ir.Instruction, tracer: _Tracer,
                 param: ir.Variable) -> bytes | None:
    """The format's bytes; None for a null format."""
    try:
        fmt = tracer.stored(_Address(param, 0), 8, inst)
    except _Unknown as e:
        raise fl.unsupported(inst, f"printf's format cannot be followed to a string "
                                   f"constant ({e}): OpenCL's printf needs it at compile "
                                   "time") from None
    if fmt == 0:
        return None
    text = _string(fmt) if isinstance(fmt, _Address) else None
    if text is None:
        raise fl.unsupported(inst, "printf's format is not the address of a string constant "
                                   "of the module (mov/cvta of a .global or .const variable "
                                   "with an initial value): OpenCL's printf needs it at "
                                   "compile time")
    return text


def _rewrite(fl: FunctionLowering, inst: ir.Instruction, tracer: _Tracer, fmt: bytes,
             args_param: ir.Variable) -> _Printf:
    conversions, count = parse_format(fmt)
    try:
        buffer = tracer.stored(_Address(args_param, 0), 8, inst)
    except _Unknown:
        buffer = None      # known at run time only
    as_written = _as_written(fmt, conversions)
    if buffer == 0:
        return _Printf(as_written, [], as_written, count, False)
    out, arguments, position = [], [], 0
    for c in conversions:
        out.append(_escaped(fmt[position:c.start]))
        position = c.end
        if c.conversion == "%":
            out.append(b"%%")
        elif not c.offsets:
            out.append(_escaped(fmt[c.start:c.end]))
        else:
            c = _fixed_stars(fl, inst, tracer, buffer, c) if c.stars else c
            if c.conversion == "s":
                text = _string_argument(fl, inst, tracer, buffer, c)
                out.append(_escaped(_string_field(text, c)))
            else:
                out.append(_opencl_conversion(c))
                arguments.append((c.offsets[-1], _passed_as(c)))
    out.append(_escaped(fmt[position:]))
    return _Printf(b"".join(out), arguments, as_written, count,
                   not isinstance(buffer, _Address))


def _argument_value(tracer: _Tracer, buffer, offset: int, size: int,
                    inst: ir.Instruction) -> tuple[int | _Address | None, str]:
    """The value stored in the argument buffer at `offset`, if known at compile time, and
    why not otherwise."""
    if not isinstance(buffer, _Address):
        return None, "the argument buffer cannot be followed"
    try:
        return tracer.stored(_Address(buffer.variable, buffer.offset + offset), size,
                             inst), ""
    except _Unknown as e:
        return None, str(e)


def _fixed_stars(fl: FunctionLowering, inst: ir.Instruction, tracer: _Tracer, buffer,
                 c: Conversion) -> Conversion:
    """`c` with its `*` width and precision written as digits: OpenCL C's printf has no `*`,
    so their values must be constants known at compile time."""
    values = []
    for offset in c.offsets[:-1]:
        value, why = _argument_value(tracer, buffer, offset, 4, inst)
        if not isinstance(value, int):
            why = why or "it is not a constant"
            raise fl.unsupported(inst, f"printf's '*' width or precision is not known at "
                                       f"compile time ({why}): OpenCL C's printf takes "
                                       "widths and precisions only as digits in the format")
        value &= 0xFFFFFFFF                             # the int the buffer holds
        values.append(value - (1 << 32) if value >> 31 else value)
    flags, width, precision = c.flags, c.width, c.precision
    if width == b"*":           # a negative width is a '-' flag
        value = values.pop(0)
        flags += b"-" if value < 0 else b""
        width = str(abs(value)).encode() if value else None
    if precision == b"*":       # a negative precision is none
        value = values.pop(0)
        precision = str(value).encode() if value >= 0 else None
    return replace(c, flags=flags, width=width, precision=precision, offsets=c.offsets[-1:])


def _string_argument(fl: FunctionLowering, inst: ir.Instruction, tracer: _Tracer, buffer,
                     c: Conversion) -> bytes | None:
    """The text a %s prints (None for a null pointer), known at compile time or refused."""
    pointer, why = _argument_value(tracer, buffer, c.offsets[-1], 8, inst)
    if pointer == 0:
        return None
    text = _string(pointer) if isinstance(pointer, _Address) else None
    if text is not None:
        return text
    if pointer is not None:
        why = "it is not the address of a string constant of the module"
    raise fl.unsupported(inst, f"printf's %s of a string that is not a constant known at "
                               f"compile time ({why}): OpenCL's printf takes only string "
                               "literals for %s")


def _opencl_conversion(c: Conversion) -> bytes:
    size = b""
    if c.conversion in "diouxX":
        size = b"l" if c.size in _LONG_SIZES else c.size.encode() if c.size in ("h", "hh") \
            else b""
    precision = b"" if c.precision is None else b"." + c.precision
    return b"%" + c.flags + (c.width or b"") + precision + size + c.conversion.encode()


def _passed_as(c: Conversion) -> str:
    if c.conversion in _FLOATS:
        return "f64"
    if c.conversion == "c":
        return "char64" if c.value_size == 8 else "i32"
    return "i64" if c.value_size == 8 else "i32"


def _emit(target, fl: FunctionLowering, call: _Printf, args_param: ir.Variable) -> ll.Value:
    """The printf call(s) and vprintf's result: the argument count, or -2 if printf
    failed. Where the buffer may be null at run time, a null one prints the format as
    written."""
    b = fl.b
    if not call.arguments:
        printed = call_printf(target, fl, call.format, [])
    elif not call.maybe_null:
        printed = call_printf(target, fl, call.format, _arguments(target, fl, call,
                                                                   args_param))
    else:
        address = b.load(target.own_pointer(fl, args_param), typ=I64)
        null = b.icmp_unsigned("==", address, I64(0))
        with_buffer = fl.llfn.append_basic_block("printf.args")
        without = fl.llfn.append_basic_block("printf.no_args")
        done = fl.llfn.append_basic_block("printf.done")
        b.cbranch(null, without, with_buffer)
        b.position_at_end(without)
        plain = call_printf(target, fl, call.as_written, [])
        b.branch(done)
        b.position_at_end(with_buffer)
        full = call_printf(target, fl, call.format, _arguments(target, fl, call, args_param))
        end = b.block
        b.branch(done)
        b.position_at_end(done)
        printed = b.phi(I32)
        printed.add_incoming(plain, without)
        printed.add_incoming(full, end)
    failed = b.icmp_signed("<", printed, I32(0))
    return b.select(failed, I32(-2), I32(call.count))


def _arguments(target, fl: FunctionLowering, call: _Printf,
               args_param: ir.Variable) -> list[ll.Value]:
    """printf's arguments, loaded from vprintf's buffer."""
    address = fl.b.load(target.own_pointer(fl, args_param), typ=I64)
    buffer = fl.b.inttoptr(address, ll.PointerType(addrspace=GENERIC))
    return [_argument(fl, buffer, offset, kind) for offset, kind in call.arguments]


def _argument(fl: FunctionLowering, buffer: ll.Value, offset: int, kind: str) -> ll.Value:
    b = fl.b
    at = b.gep(buffer, [I64(offset)], source_etype=I8)
    if kind == "f64":
        return b.load(at, typ=ll.DoubleType(), align=1)
    if kind == "i32":
        return b.load(at, typ=I32, align=1)
    value = b.load(at, typ=I64, align=1)
    return b.trunc(value, I32) if kind == "char64" else value


def call_printf(target, fl: FunctionLowering, fmt: bytes, values: list) -> ll.Value:
    """OpenCL's printf of `fmt` (OpenCL C's format, written as a constant) and `values`."""
    return fl.b.call(target.printf(fl), [target.constant_string(fmt), *values],
                     cconv="spir_func")
