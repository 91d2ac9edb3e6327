"""Control flow (PTX ISA 9.7.12): bra, brx.idx, call, ret, exit; and trap, brkpt."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, FunctionLowering, lowering
from ptxport.ir import nodes as ir


@lowering("bra")
def bra(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bra{.uni} target;  @p bra target falls through when p is false."""
    target = fl.block_of(inst.operands[0])
    if inst.guard is None:
        fl.b.branch(target)
        return
    guard = fl.b.load(fl.register_slot(inst.guard))
    if inst.guard_negated:
        guard = fl.b.not_(guard)
    following = fl.llfn.append_basic_block("fallthrough")
    fl.b.cbranch(guard, target, following)
    fl.b.position_at_end(following)


@lowering("brx")
def brx(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """brx.idx index, targets;  index out of range is undefined in PTX: we trap."""
    index = fl.read(inst.operands[0], "u32")
    targets = inst.operands[1]
    if not isinstance(targets, ir.ListValue):
        raise fl.unsupported(inst, "brx.idx needs a .branchtargets list")
    out_of_range = fl.llfn.append_basic_block("brx_out_of_range")
    switch = fl.b.switch(index, out_of_range)
    for i, block in enumerate(targets.elements):
        switch.add_case(ll.Constant(I32, i), fl.block_of(block))
    fl.b.position_at_end(out_of_range)
    fl.target.trap(fl, inst)


@lowering("ret")
def ret(fl: FunctionLowering, inst: ir.Instruction) -> None:
    if fl.function.is_kernel:
        fl.target.exit(fl)
    else:
        fl.b.ret_void()
    fl.b.position_at_end(fl.llfn.append_basic_block("after_ret"))


@lowering("exit")
def exit_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    fl.target.exit(fl)
    fl.b.position_at_end(fl.llfn.append_basic_block("after_exit"))


@lowering("trap")
def trap(fl: FunctionLowering, inst: ir.Instruction) -> None:
    fl.target.trap(fl, inst)
    fl.b.position_at_end(fl.llfn.append_basic_block("after_trap"))


@lowering("brkpt")
def brkpt(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """A breakpoint suspends execution for a debugger; with none attached it does nothing."""


@lowering("call")
def call(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """call{.uni} [(ret),] func, [(args)] [, prototype]: parameters are passed as pointers to
    the caller's `.param` storage (or as values for `.reg` parameters)."""
    operands = list(inst.operands)
    returns = operands.pop(0).elements if isinstance(operands[0], ir.ListValue) else ()
    callee = operands.pop(0)
    args = operands.pop(0).elements if operands and isinstance(operands[0], ir.ListValue) else ()
    if not isinstance(callee, ir.Function):
        if not isinstance(callee, ir.Register):
            raise fl.unsupported(inst, "a call through something other than a register")
        address = fl.read(callee, "u64" if callee.type.bits == 64 else "u32")
        if address.type.width == 32:
            address = fl.b.zext(address, ll.IntType(64))
        fl.target.indirect_call(fl, inst, address, list(returns), list(args))
        return
    fl.target.call(fl, inst, callee, list(returns), list(args))
