"""CUDA's printf on the AMDGPU target: `call vprintf` appends a record to a device-side buffer
that the hip backend drains and formats on the host after the launch.

CUDA C++ compiles printf(format, ...) to `call.uni (ret), vprintf, (format, args)`: `format`
is the generic address of a string constant, `args` that of a .local buffer in which the
compiler packs the arguments (cpu/printf.py describes the packing). The format is followed
back to its string constant at compile time, as the SPIR-V target does (spirv_printf.py's
tracer), which gives the size of the argument buffer and vprintf's return value (the number
of arguments the format reads). The call then
- adds the record's size to the buffer's fill level with one atomic add (a record that does
  not fit is dropped, as CUDA drops output past its printf FIFO's size);
- writes the record: its size, the format's address and the argument bytes, copied out of
  the thread's private memory, which the host cannot read.

The host reads the format and the %s strings from device memory by address when it drains
the buffer (string constants stay in the loaded code object); a %s string in the thread's
own private memory cannot be read there and prints as "(private)".

The buffer's address is in the code object's global PRINTF_SYMBOL (set by the hip backend
after loading it; while it is 0 nothing is recorded and the call returns -2, CUDA's
"internal error"). Its first HEADER bytes hold, in 8-byte words: [0] the bytes of records
written (or claimed), [1] the capacity in bytes of records.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64, PTR, FunctionLowering, declare
from ptxport.codegen.targets import spirv_printf
from ptxport.ir import nodes as ir

__all__ = ["CAPACITY", "HEADER", "PRINTF_SYMBOL", "RECORD_HEADER", "declare_buffer",
           "lower_vprintf", "uses_printf"]

PRINTF_SYMBOL = "__ptxport_printf_buffer"
CAPACITY = 1 << 20          # cudaLimitPrintfFifoSize's default
HEADER = 16
RECORD_HEADER = 16          # the record's size, the format's address
_GLOBAL = 1
_GLOBAL_PTR = ll.PointerType(addrspace=_GLOBAL)


def uses_printf(module: ir.Module) -> bool:
    """Whether the module calls the driver's vprintf."""
    return any(inst.opcode == "call" and any(
        isinstance(o, ir.Function) and o.is_declaration and o.name == "vprintf"
        for o in inst.operands) for f in module.functions.values() for inst in f.instructions())


def declare_buffer(llmod: ll.Module) -> None:
    """The global holding the printf buffer's address (0 until the runtime sets it)."""
    buffer = ll.GlobalVariable(llmod, I64, PRINTF_SYMBOL, addrspace=_GLOBAL)
    buffer.initializer = I64(0)
    buffer.align = 8


def argument_size(fmt: bytes) -> int:
    """The bytes of vprintf's argument buffer that `fmt` reads."""
    conversions, _ = spirv_printf.parse_format(fmt)
    end = 0
    for c in conversions:
        for i, offset in enumerate(c.offsets):
            last = i == len(c.offsets) - 1
            end = max(end, offset + (c.value_size if last else 4))
    return end


def lower_vprintf(target, fl: FunctionLowering, inst: ir.Instruction, returns: list,
                  args: list) -> None:
    """`call (ret), vprintf, (format, args)` as a record in the printf buffer."""
    spirv_printf.check_vprintf_call(fl, inst, returns, args)
    fmt = _format(target, fl, inst, args[0])
    result = I32(-1)
    if fmt is not None:
        size = argument_size(fmt)
        _, count = spirv_printf.parse_format(fmt)
        b = fl.b
        fmt_address = b.load(target.variable_pointer(fl, args[0]), typ=I64)
        buffer = b.load(target.variable_pointer(fl, args[1]), typ=I64)
        written = _append(fl, fmt_address, buffer, size)
        result = b.select(written, I32(count), I32(-2))
    if returns:
        fl.b.store(result, target.own_pointer(fl, returns[0]))


def _format(target, fl: FunctionLowering, inst: ir.Instruction,
            param: ir.Variable) -> bytes | None:
    """The format's text, known at compile time (None for a null format)."""
    return spirv_printf.string_constant(target, fl, inst, param, "printf's format",
                                        "the AMDGPU target needs it (for the size of the "
                                        "argument buffer)")


def _append(fl: FunctionLowering, fmt: ll.Value, args: ll.Value, size: int) -> ll.Value:
    """Claim room for a record and write it; whether it was written (an i1)."""
    b = fl.b
    record_size = RECORD_HEADER + (size + 7) // 8 * 8
    base = b.load(fl.llfn.module.globals[PRINTF_SYMBOL], typ=I64)
    start = b.block
    claim = fl.llfn.append_basic_block("printf_claim")
    write = fl.llfn.append_basic_block("printf_write")
    done = fl.llfn.append_basic_block("printf_done")
    b.cbranch(b.icmp_unsigned("!=", base, I64(0)), claim, done)
    b.position_at_end(claim)
    used = b.atomic_rmw("add", b.inttoptr(base, _GLOBAL_PTR), I64(record_size), "monotonic")
    capacity = b.load(b.inttoptr(b.add(base, I64(8)), _GLOBAL_PTR), typ=I64)
    fits = b.icmp_unsigned("<=", b.add(used, I64(record_size)), capacity)
    b.cbranch(fits, write, done)
    b.position_at_end(write)
    record = b.add(base, b.add(used, I64(HEADER)))
    b.store(I64(record_size), b.inttoptr(record, _GLOBAL_PTR), align=8)
    b.store(fmt, b.inttoptr(b.add(record, I64(8)), _GLOBAL_PTR), align=8)
    if size:
        memcpy = declare(fl.llfn.module, "llvm.memcpy.p1.p0.i64", ll.VoidType(),
                         [_GLOBAL_PTR, PTR, I64, I1])
        b.call(memcpy, [b.inttoptr(b.add(record, I64(RECORD_HEADER)), _GLOBAL_PTR),
                        b.inttoptr(args, PTR), I64(size), I1(0)])
    b.branch(done)
    b.position_at_end(done)
    written = b.phi(I1)
    written.add_incoming(I1(0), start)
    written.add_incoming(I1(0), claim)
    written.add_incoming(I1(1), write)
    return written
