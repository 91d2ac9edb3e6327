"""Wait planning: for each instruction where a thread waits for others (a barrier, a warp
operation, an mbarrier test that yields), which registers the thread saves in its frame
before it returns to the executor and which it restores when it resumes.

A register is restored when it is live after the wait (less the wait's own results, written
after it resumes, unless the wait is guarded and may not run); it is saved only when some
path from the kernel's start or an earlier wait writes it first (else its frame slot holds
it already). An mbarrier test reads its operands again when it resumes.
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_after, modified_before, uses_and_defs
from ptxport.passes import PassResult
from ptxport.passes.inline import is_wait

__all__ = ["run", "spills"]


def spills(kernel: ir.Function) -> dict[int, tuple[list[ir.Register], list[ir.Register]]]:
    """id(waiting instruction) -> (registers it saves, registers it restores), each sorted
    by name (the IR is stable, so the frame layout is too)."""
    waits = {id(i) for i in kernel.instructions() if is_wait(i)}
    if not waits:
        return {}
    live = live_after(kernel, waits)
    # an mbarrier test saves registers only when it yields
    modified = modified_before(kernel, waits, frozenset(
        id(i) for i in kernel.instructions() if id(i) in waits and i.opcode == "mbarrier"))
    out = {}
    for inst in kernel.instructions():
        if id(inst) not in waits:
            continue
        uses, defs = uses_and_defs(inst)
        restore = live[id(inst)] - (set() if inst.guard is not None else defs)
        if inst.opcode == "mbarrier":     # it tests again when it resumes
            restore |= uses
        save = restore & modified[id(inst)]
        out[id(inst)] = (sorted(save, key=_name), sorted(restore, key=_name))
    return out


def _name(reg: ir.Register) -> str:
    return reg.name


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per wait: its line, what it saves and restores."""
    notes, planned = [], spills(kernel)
    for inst in kernel.instructions():
        if id(inst) in planned:
            save, restore = planned[id(inst)]
            notes.append(f"wait {inst.opcode} at {_line(module, inst)}: saves "
                         f"{_names(save)}; restores {_names(restore)}")
    return PassResult(kernel, notes)


def _line(module: ir.Module, inst: ir.Instruction) -> str:
    location = module.location(inst.pos)
    return f"line {location.line}" if location else "an unknown line"


def _names(registers: list[ir.Register]) -> str:
    return ", ".join(r.name for r in registers) or "nothing"
