"""Checks the IR's invariants; raises IrVerificationError listing every violation.

The builder (from_ptx.py) should never produce IR that fails here, and each pass should keep
it so: run `verify` after building and after every pass in tests. What it checks:
  - every function's blocks: a non-empty label, successors within the function, matching the
    block's last instruction (branch targets plus fall-through);
  - guards are predicate registers;
  - a destination operand is something that can be written: a register, a field of one, a
    vector or `d|p` pair of those, or the sink `_` (never an immediate, special register or
    variable);
  - memory operands: the base of an address is a variable or a register of 32 or 64 bits;
  - branches name blocks of the same function; calls name a function (or a register, for an
    indirect call) with as many arguments and results as the callee declares.
"""

from __future__ import annotations

from ptxport.errors import Diagnostic, IrVerificationError, SourceLocation
from ptxport.ir import nodes as ir
from ptxport.ir.blocks import successors
from ptxport.ir.wgmma import wgmma_problem
from ptxport.ptx.ast import Sink

__all__ = ["verify", "writes_destination"]

# Opcodes whose first operand is not a register they write (PTX ISA chapter 9: stores,
# reductions, barriers, control flow, fences, prefetches, asynchronous copies, ...). For
# these the first operand is only read, or is memory.
_NO_DESTINATION = frozenset((
    "st", "red", "bar", "barrier", "bra", "brx", "call", "ret", "exit", "trap", "brkpt",
    "membar", "fence", "prefetch", "prefetchu", "nanosleep", "pmevent", "cp", "multimem",
    "applypriority", "discard", "sust", "sured", "stmatrix", "tcgen05", "setmaxnreg",
    "griddepcontrol", "stackrestore", "tensormap", "clusterlaunchcontrol", "st_async",
))
# Opcodes whose destination depends on the form; the verifier accepts any first operand.
_SOMETIMES_DESTINATION = frozenset(("mbarrier", "wmma", "cp", "elect", "barrier", "redux",
                                    "vote", "alloca", "stacksave"))


def writes_destination(inst: ir.Instruction) -> bool:
    """Whether the first operand of `inst` is a register the instruction writes."""
    op = inst.opcode
    if op == "wgmma":       # mma_async writes (and may read) d; fence, commit, wait write nothing
        return inst.spec.get("op") == "mma_async"
    if op in _NO_DESTINATION or op in _SOMETIMES_DESTINATION:
        return False
    return bool(inst.operands)


def verify(module: ir.Module) -> None:
    problems: list[Diagnostic] = []

    def report(pos: int, where: str, message: str) -> None:
        location = module.location(pos) or SourceLocation("<ir>", 0, 0)
        problems.append(Diagnostic(location, f"{where}: {message}"))

    for function in module.functions.values():
        _verify_function(module, function, report)
    if problems:
        raise IrVerificationError(problems)


def _verify_function(module: ir.Module, f: ir.Function, report) -> None:
    if f.is_declaration:
        if f.blocks:
            report(f.pos, f.name, "a declaration has no body but has blocks")
        return
    if not f.blocks:
        report(f.pos, f.name, "a function with a body has no entry block")
        return
    blocks = set(map(id, f.blocks))
    for i, block in enumerate(f.blocks):
        where = f"{f.name}, block {block.label}"
        if not block.label:
            report(block.pos, where, "block without a label")
        for succ in block.successors:
            if id(succ) not in blocks:
                report(block.pos, where, f"successor {succ.label} is not a block of {f.name}")
        following = f.blocks[i + 1] if i + 1 < len(f.blocks) else None
        expected = successors(block, following)
        if [id(b) for b in block.successors] != [id(b) for b in expected]:
            report(block.pos, where, "successors do not match the block's last instruction")
        for inst in block.instructions:
            _verify_instruction(module, f, inst, blocks, report)


def _is_writable(value) -> bool:
    if isinstance(value, ir.Register | ir.RegisterElement | Sink):
        return True
    if isinstance(value, ir.VectorValue):
        return all(_is_writable(e) for e in value.elements)
    if isinstance(value, ir.PairValue):
        return _is_writable(value.first) and _is_writable(value.second)
    return False


def _verify_instruction(module, f, inst: ir.Instruction, blocks: set, report) -> None:
    def fail(message: str) -> None:
        report(inst.pos, f"{f.name}: '{inst.spec.text}'", message)

    if inst.guard is not None and (not isinstance(inst.guard, ir.Register)
                                   or inst.guard.type.kind != "pred"):
        fail("the guard is not a predicate register")
    if writes_destination(inst) and not _is_writable(inst.operands[0]):
        fail("the destination (first operand) cannot be written: it must be a register, "
             "a vector or pair of registers, or '_'")
    for value in inst.operands:
        if value.__class__ is ir.Address and value.base.__class__ is ir.Register:
            base = value.base.type
            if base.bits not in (32, 64) or base.kind not in ("signed", "unsigned", "bits"):
                fail(f"address base {value.base.name} must be a 32- or 64-bit integer register")
    op = inst.opcode
    if op == "bra":
        targets = [o for o in inst.operands if isinstance(o, ir.BasicBlock)]
        if len(targets) != 1 or id(targets[0]) not in blocks:
            fail(f"bra needs one label of {f.name}")
    elif op == "call":
        _verify_call(module, f, inst, fail)
    elif op == "wgmma":
        problem = wgmma_problem(inst)
        if problem is not None:
            fail(problem)


def _verify_call(module, f, inst: ir.Instruction, fail) -> None:
    """call{.uni} [(rets),] target [, (args)] [, prototype-or-targets];"""
    operands = list(inst.operands)
    returns = operands.pop(0).elements if operands and isinstance(operands[0],
                                                                  ir.ListValue) else ()
    if not operands:
        fail("call has no target")
        return
    target = operands.pop(0)
    args = operands.pop(0).elements if operands and isinstance(operands[0], ir.ListValue) else ()
    if isinstance(target, ir.Function):
        if len(args) != len(target.params):
            fail(f"{target.name} takes {len(target.params)} arguments, given {len(args)}")
        if len(returns) != len(target.returns):
            fail(f"{target.name} returns {len(target.returns)} values, "
                 f"call expects {len(returns)}")
    elif not isinstance(target, ir.Register):
        fail("the call target must be a function or a register")
