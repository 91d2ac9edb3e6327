"""A block's edges: what they are from its last instruction (successors), and functions
rebuilt with basic blocks of their own (a pass's copy, blocks joined), where each new block
takes its edges and its branch's targets from an old block, through a map of old blocks to
new ones (relink)."""

from __future__ import annotations

from collections.abc import Iterable

from ptxport.ir import nodes as ir

__all__ = ["relink", "successors"]


def successors(block: ir.BasicBlock, following: ir.BasicBlock | None) -> list[ir.BasicBlock]:
    """The blocks control may go to from `block`, in order and once each: the targets of its
    last instruction (bra, brx), and `following` (the next block) unless that instruction
    always leaves (unguarded bra, brx, ret, exit or trap)."""
    last = block.instructions[-1] if block.instructions else None
    found: list[ir.BasicBlock] = []
    if last is not None and last.opcode == "bra":
        found.extend(o for o in last.operands if isinstance(o, ir.BasicBlock))
    elif last is not None and last.opcode == "brx":
        for o in last.operands:
            if isinstance(o, ir.ListValue):
                found.extend(e for e in o.elements if isinstance(e, ir.BasicBlock))
    if (last is None or not last.is_terminator) and following is not None:
        found.append(following)
    return list(dict.fromkeys(found))


def relink(pairs: Iterable[tuple[ir.BasicBlock, ir.BasicBlock]], new: dict) -> None:
    """For each (old, block): block's successors are old's, and the block operands of its
    last instruction (a branch) are theirs, mapped through `new` (id(old block) -> new
    block; an operand not in it stays)."""
    for old, block in pairs:
        block.successors = [new[id(s)] for s in old.successors]
        last = block.instructions[-1] if block.instructions else None
        if last is not None and any(isinstance(o, ir.BasicBlock) for o in last.operands):
            block.instructions[-1] = ir.Instruction(
                last.spec, tuple(new.get(id(o), o) if isinstance(o, ir.BasicBlock) else o
                                 for o in last.operands),
                last.guard, last.guard_negated, last.pos)
