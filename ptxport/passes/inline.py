"""Inlining device functions into a kernel, for targets that cannot do something inside a
called function: the CPU target cannot wait there, OpenCL gives shared (local) memory to
kernels only.

The CPU target runs a CUDA thread as a function that returns to the block executor when the
thread must wait for others (a barrier or a warp operation) and resumes where it left off.
A wait inside a called device function would have to return through the call, so such
calls are replaced by the callee's body first: `inline_waiting_calls` gives a copy of the
kernel in which every call of a device function that may wait (directly or through its own
calls) is inlined, recursively. Calls of functions that never wait stay calls.

A call passes its arguments and results in the caller's `.param` variables (PTX ISA 9.7.12.5,
call); the inlined body reads and writes those variables where the callee used its own
parameters, and `ret` becomes a branch to the instruction after the call. The callee's
registers and variables are renamed `<callee>$<name>` (once per callee: invocations of a
non-recursive function never overlap, so call sites may share them); its blocks are copied
per call site. The module itself is not changed (other targets compile it as it is).
"""

from __future__ import annotations

import dataclasses

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.from_ptx import link_blocks
from ptxport.passes import PassResult
from ptxport.ptx.ast import Spec

__all__ = ["run", "inline_calls", "inline_waiting_calls", "functions_that", "uses_shared_memory",
           "Inlined", "WAIT_OPCODES", "is_wait"]

# Operations where a thread waits for other threads (PTX ISA 9.7.13).
WAIT_OPCODES = frozenset(("bar", "barrier", "shfl", "vote", "match", "redux", "activemask",
                          "elect", "mma", "ldmatrix"))

_BRA = Spec("bra", (), (), {})


@dataclasses.dataclass
class Inlined:
    """The kernel with its waiting calls inlined, and for each instruction of the copy the
    instruction of the module it came from (to report problems where the user wrote them)."""

    function: ir.Function
    origin: dict[int, ir.Instruction]


def _callee(inst: ir.Instruction) -> ir.Function | None:
    for value in inst.operands:
        if isinstance(value, ir.Function):
            return value
    return None


def functions_that(module: ir.Module, property_of) -> set[str]:
    """Names of the device functions for which `property_of(function)` holds, directly or
    through the functions they call."""
    found = {f.name for f in module.functions.values()
             if not f.is_kernel and not f.is_declaration and property_of(f)}
    changed = True
    while changed:
        changed = False
        for f in module.functions.values():
            if f.name in found or f.is_kernel:
                continue
            for inst in f.instructions():
                callee = _callee(inst) if inst.opcode == "call" else None
                if callee is not None and callee.name in found:
                    found.add(f.name)
                    changed = True
                    break
    return found


def is_wait(inst: ir.Instruction) -> bool:
    """Whether a thread may wait for other threads at `inst`: barriers, warp operations,
    and the mbarrier tests (a thread spinning on one lets the others arrive)."""
    if inst.opcode in WAIT_OPCODES:
        return True
    if inst.opcode != "mbarrier":
        return False
    ops = inst.spec.get("op")
    ops = (ops,) if isinstance(ops, str) else tuple(ops or ())
    return bool({"test_wait", "try_wait"} & set(ops))


def waits(f: ir.Function) -> bool:
    """Whether `f` itself has an operation where a thread waits for others."""
    return any(is_wait(i) for i in f.instructions())


def uses_shared_memory(f: ir.Function) -> bool:
    """Whether `f` itself names shared memory: a .shared variable of its own or of the
    module, or an instruction on the .shared state space (not generic addresses)."""
    if any(v.space == "shared" for v in f.variables.values()):
        return True

    def shared(v) -> bool:
        if isinstance(v, ir.Variable):
            return v.space == "shared"
        if isinstance(v, ir.Address):
            return shared(v.base)
        if isinstance(v, ir.SymbolAddress):
            return shared(v.target)
        if isinstance(v, ir.VectorValue | ir.ListValue):
            return any(shared(e) for e in v.elements)
        return False

    return any(inst.spec.get("space") in ("shared", "shared::cta", "shared::cluster")
               or any(shared(o) for o in inst.operands) for inst in f.instructions())


class _Renamed:
    """A callee's registers and variables under new names, made once per callee."""

    def __init__(self, callee: ir.Function, taken: set[str]):
        def fresh(name: str) -> str:
            new = f"{callee.name}${name}"
            while new in taken:
                new += "$"
            taken.add(new)
            return new

        self.registers = {id(r): ir.Register(fresh(r.name), r.type, r.vector)
                          for r in callee.registers.values()}
        # A function's .shared variables are static (every call site shares one copy) and
        # keep their names, which targets lay shared memory out by.
        self.variables = {id(v): (v if v.space == "shared" else
                                  dataclasses.replace(v, name=fresh(v.name)))
                          for v in callee.variables.values()}


def inline_waiting_calls(module: ir.Module, kernel: ir.Function) -> Inlined:
    """`kernel` with every call of a device function that may wait inlined (the CPU
    target's need)."""
    return inline_calls(module, kernel, functions_that(module, waits), "cpu",
                        "waits for other threads (a barrier or warp operation)")


def inline_calls(module: ir.Module, kernel: ir.Function, waiting: set[str], target: str,
                 why: str) -> Inlined:
    """A copy of `kernel` with every call of the functions named in `waiting` (closed
    under callers: see functions_that) replaced by the callee's body, recursively.
    Recursion among them raises UnsupportedFeatureError naming the recursive call (`why`
    says what the function does that needs inlining on `target`); the error's
    `instruction` is that call in the module."""
    origin: dict[int, ir.Instruction] = {}
    if not any(i.opcode == "call" and (_callee(i) is not None and _callee(i).name in waiting)
               for i in kernel.instructions()):
        return Inlined(kernel, {})
    copy = ir.Function(kernel.name, kernel.kind, list(kernel.params), list(kernel.returns),
                       kernel.linkage, dict(kernel.directives), dict(kernel.registers),
                       dict(kernel.variables), [], False, kernel.pos)
    taken = set(copy.registers) | set(copy.variables)
    renamed: dict[str, _Renamed] = {}
    # the kernel's blocks are copied (their instructions are split at calls), not changed
    blocks = []
    for block in kernel.blocks:
        twin = ir.BasicBlock(block.label, block.pos)
        twin.instructions = list(block.instructions)
        blocks.append(twin)
    twins = {id(old): new for old, new in zip(kernel.blocks, blocks, strict=True)}
    for block in blocks:
        block.instructions = [_retarget(inst, twins, origin) for inst in block.instructions]
    counter = 0
    chains: dict[int, tuple[str, ...]] = {}   # id(inlined call) -> functions it came through
    pending = True
    while pending:
        pending = False
        out: list[ir.BasicBlock] = []
        for block in blocks:
            index = next((k for k, inst in enumerate(block.instructions)
                          if inst.opcode == "call" and _callee(inst) is not None
                          and _callee(inst).name in waiting), None)
            if index is None:
                out.append(block)
                continue
            pending = True
            counter += 1
            call = block.instructions[index]
            callee = _callee(call)
            chain = chains.get(id(call), ())
            if callee.name in chain:
                error = UnsupportedFeatureError(
                    "call", target, module.location(call.pos),
                    f"'{callee.name}' {why} and is called recursively; the {target} target "
                    "runs such functions inlined", module.source_line(call.pos))
                error.instruction = origin.get(id(call), call)
                raise error
            if callee.is_declaration:
                out.append(block)
                continue
            names = renamed.get(callee.name)
            if names is None:
                names = renamed[callee.name] = _Renamed(callee, taken)
                for r in names.registers.values():
                    copy.registers[r.name] = r
                for v in names.variables.values():
                    if copy.variables.get(v.name, v) is not v:
                        raise UnsupportedFeatureError(
                            "call", target, module.location(v.pos),
                            f"inlining '{callee.name}': its .shared variable '{v.name}' has "
                            f"the name of one of '{kernel.name}'")
                    copy.variables[v.name] = v
            # the block keeps its identity (branches already point at it) and ends at the call
            before, after = block, ir.BasicBlock(f"%ret{counter}", call.pos)
            after.instructions = block.instructions[index + 1:]
            before.instructions = block.instructions[:index]
            body = _copy_body(call, callee, names, after, counter, origin, chains, target)
            if call.guard is not None:
                skip = ir.Instruction(_BRA, (after,), call.guard, not call.guard_negated,
                                      call.pos)
                origin[id(skip)] = origin.get(id(call), call)
                before.instructions.append(skip)
            out += [before, *body, after]
        blocks = out
    copy.blocks = blocks
    link_blocks(copy)
    return Inlined(copy, origin)


def _retarget(inst: ir.Instruction, twins: dict, origin: dict) -> ir.Instruction:
    """`inst` with its branch targets (blocks, and blocks in brx's list) replaced by their
    copies; the instruction itself when it names no block."""
    def value(v):
        if isinstance(v, ir.BasicBlock):
            return twins[id(v)]
        if isinstance(v, ir.ListValue) and any(isinstance(e, ir.BasicBlock) for e in v.elements):
            return dataclasses.replace(v, elements=tuple(value(e) for e in v.elements))
        return v

    operands = tuple(value(o) for o in inst.operands)
    if all(a is b for a, b in zip(operands, inst.operands, strict=True)):
        return inst
    made = ir.Instruction(inst.spec, operands, inst.guard, inst.guard_negated, inst.pos)
    origin[id(made)] = inst
    return made


def _copy_body(call: ir.Instruction, callee: ir.Function, names: _Renamed,
               after: ir.BasicBlock, counter: int, origin: dict,
               chains: dict, target: str) -> list[ir.BasicBlock]:
    operands = list(call.operands)
    returns = operands.pop(0).elements if isinstance(operands[0], ir.ListValue) else ()
    operands.pop(0)
    args = operands.pop(0).elements if operands and isinstance(operands[0], ir.ListValue) else ()
    if len(returns) != len(callee.returns) or len(args) != len(callee.params):
        raise UnsupportedFeatureError(
            "call", target, None, f"a call of '{callee.name}' whose arguments do not match "
                                  "its parameters")
    mapping: dict[int, object] = {}
    for formal, actual in zip(list(callee.returns) + list(callee.params),
                              list(returns) + list(args), strict=True):
        if not isinstance(actual, ir.Variable):
            raise UnsupportedFeatureError(
                "call", target, None, f"inlining '{callee.name}': arguments must be .param "
                                      "variables")
        mapping[id(formal)] = actual
    mapping.update(names.registers)
    mapping.update(names.variables)
    copies = {id(b): ir.BasicBlock(f"{b.label}${counter}", b.pos) for b in callee.blocks}
    mapping.update(copies)
    chain = chains.get(id(call), ()) + (callee.name,)

    def value(v):
        new = mapping.get(id(v))
        if new is not None:
            return new
        if isinstance(v, ir.RegisterElement):
            return ir.RegisterElement(value(v.register), v.component)
        if isinstance(v, ir.Address):
            return dataclasses.replace(v, base=value(v.base)) if v.base is not None else v
        if isinstance(v, ir.SymbolAddress):
            return dataclasses.replace(v, target=value(v.target))
        if isinstance(v, ir.VectorValue | ir.ListValue):
            return dataclasses.replace(v, elements=tuple(value(e) for e in v.elements))
        if isinstance(v, ir.PairValue):
            return ir.PairValue(value(v.first), value(v.second))
        if isinstance(v, ir.NotValue | ir.NegValue):
            return dataclasses.replace(v, value=value(v.value))
        return v

    out = []
    for block in callee.blocks:
        new = copies[id(block)]
        for inst in block.instructions:
            guard = value(inst.guard) if inst.guard is not None else None
            if inst.opcode == "ret":
                made = ir.Instruction(_BRA, (after,), guard, inst.guard_negated, inst.pos)
            else:
                made = ir.Instruction(inst.spec, tuple(value(o) for o in inst.operands),
                                      guard, inst.guard_negated, inst.pos)
            if made.opcode == "call":
                chains[id(made)] = chain
            origin[id(made)] = inst
            new.instructions.append(made)
        out.append(new)
    if out and (not out[-1].instructions or not out[-1].instructions[-1].is_terminator):
        # falling off the end of a function returns
        made = ir.Instruction(_BRA, (after,), None, False, callee.pos)
        origin[id(made)] = call
        out[-1].instructions.append(made)
    return out


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel with its calls of device functions that wait inlined (the module is not
    changed); a note naming the functions inlined."""
    inlined = inline_waiting_calls(module, kernel)
    called = sorted(functions_that(module, waits))
    return PassResult(inlined.function, [f"functions that wait: {', '.join(called) or 'none'}"])
