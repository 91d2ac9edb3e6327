"""Calls the CPU target makes into the running process: device malloc and free (the device heap,
runtime/backends/cpu/heap.py) and printf and __assertfail (runtime/backends/cpu/printf.py).
The compiled code calls these symbols; the runtime defines them (llvm.add_symbol) before it
loads a kernel.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR, FunctionLowering
from ptxport.ir import nodes as ir

__all__ = ["MALLOC_SYMBOL", "FREE_SYMBOL", "PRINTF_SYMBOL", "ASSERT_SYMBOL", "lower_malloc",
           "lower_free", "lower_vprintf", "lower_assertfail"]

MALLOC_SYMBOL = "ptxport_malloc"
FREE_SYMBOL = "ptxport_free"
PRINTF_SYMBOL = "ptxport_vprintf"
ASSERT_SYMBOL = "ptxport_assertfail"

def _callee(llmod: ll.Module, name: str, ret: ll.Type) -> ll.Function:
    return llmod.globals.get(name) or ll.Function(llmod, ll.FunctionType(ret, [I64]), name)


def lower_malloc(fl: FunctionLowering, inst: ir.Instruction, pointers: list) -> None:
    """`call (ret), malloc, (size)`, given pointers to the call's .param variables:
    ret = ptxport_malloc(size)."""
    if len(pointers) != 2:
        raise fl.unsupported(inst, "malloc takes a size and returns a .b64 address")
    size = fl.b.load(pointers[1], typ=I64)
    address = fl.b.call(_callee(fl.llfn.module, MALLOC_SYMBOL, I64), [size])
    fl.b.store(address, pointers[0])


def lower_free(fl: FunctionLowering, inst: ir.Instruction,
               pointers: list) -> tuple[ll.Value, ll.Value]:
    """`call free, (address)`: ptxport_free(address); returns the address (an i64) and an i1
    that is true when it was no live allocation (the caller reports the fault)."""
    if len(pointers) != 1:
        raise fl.unsupported(inst, "free takes one .b64 address and returns nothing")
    address = fl.b.load(pointers[0], typ=I64)
    status = fl.b.call(_callee(fl.llfn.module, FREE_SYMBOL, I32), [address])
    return address, fl.b.icmp_unsigned("!=", status, I32(0))

def lower_vprintf(fl: FunctionLowering, inst: ir.Instruction, returns: list,
                  pointers: list) -> None:
    """`call (ret), vprintf, (format, args)`, given pointers to the call's .param variables:
    ret = ptxport_vprintf(ctx, format, args)."""
    if len(pointers) != len(returns) + 2 or len(returns) > 1:
        raise fl.unsupported(inst, "vprintf takes a format and an argument buffer and "
                                   "returns one .b32")
    llmod = fl.llfn.module
    callee = llmod.globals.get(PRINTF_SYMBOL) or ll.Function(
        llmod, ll.FunctionType(I32, [PTR, PTR, PTR]), PRINTF_SYMBOL)
    fmt, args = (fl.b.inttoptr(fl.b.load(p, typ=I64), PTR) for p in pointers[-2:])
    result = fl.b.call(callee, [fl.llfn.args[0], fmt, args])
    if returns:
        fl.b.store(result, fl.b.bitcast(pointers[0], PTR))


def lower_assertfail(fl: FunctionLowering, inst: ir.Instruction, pointers: list) -> None:
    """`call __assertfail, (message, file, line, function, charSize)`, given pointers to the
    call's .param variables: ptxport_assertfail(ctx, frame, message, file, line, function).
    The caller then traps, as the driver's __assertfail ends the kernel."""
    if len(pointers) != 5:
        raise fl.unsupported(inst, "__assertfail takes a message, a file name, a line, a "
                                   "function name and a character size, and returns nothing")
    llmod = fl.llfn.module
    callee = llmod.globals.get(ASSERT_SYMBOL) or ll.Function(
        llmod, ll.FunctionType(ll.VoidType(), [PTR, PTR, PTR, PTR, I32, PTR]), ASSERT_SYMBOL)
    message, file, function = (fl.b.inttoptr(fl.b.load(pointers[i], typ=I64), PTR)
                               for i in (0, 1, 3))
    line = fl.b.load(pointers[2], typ=I32)
    fl.b.call(callee, [fl.llfn.args[0], fl.llfn.args[1], message, file, line, function])
