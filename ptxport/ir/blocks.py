"""Functions rebuilt with basic blocks of their own (a pass's copy, blocks joined): each new
block takes its edges and its branch's targets from an old block, through a map of old
blocks to new ones."""

from __future__ import annotations

from collections.abc import Iterable

from ptxport.ir import nodes as ir

__all__ = ["relink"]


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
