"""Straight-line code split only by labels that nothing branches to, joined again for the
warp gangs.

Triton writes a label before nearly every instruction of its PTX (`$L__tmp14:`, for the
debug information's line table); the IR gives each label a basic block, so its 4-warp
softmax has 45 blocks, most of one instruction, where its control flow has three. The
gang lowering works block by block: a segment, a skippable run (guarded_runs.py), a run
of coalesced accesses or of FMAs lies inside one block. Here a block that only its
predecessor in program order reaches, by falling through, joins that predecessor.
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.blocks import relink

__all__ = ["join_fallthrough"]

_ENDS = frozenset({"bra", "brx", "ret", "exit", "trap"})


def join_fallthrough(kernel: ir.Function) -> ir.Function:
    """`kernel` with each block that is reached only by falling through from the block
    before it joined to that block (a new function; `kernel` itself where none is)."""
    if any(isinstance(o, ir.ListValue) for inst in kernel.instructions()
           for o in inst.operands):         # (branch tables name labels too)
        return kernel
    entered: dict[int, int] = {}            # id(block) -> edges into it
    for block in kernel.blocks:
        for successor in block.successors:
            entered[id(successor)] = entered.get(id(successor), 0) + 1
    groups: list[list[ir.BasicBlock]] = []
    for i, block in enumerate(kernel.blocks):
        before = kernel.blocks[i - 1] if i else None
        if before is not None and groups and _falls_into(before, block, entered):
            groups[-1].append(block)
        else:
            groups.append([block])
    if len(groups) == len(kernel.blocks):
        return kernel
    return _joined(kernel, groups)


def _falls_into(before: ir.BasicBlock, block: ir.BasicBlock, entered: dict) -> bool:
    last = before.instructions[-1] if before.instructions else None
    return (last is None or last.opcode not in _ENDS) and before.successors == [block] \
        and entered.get(id(block)) == 1


def _joined(kernel: ir.Function, groups: list) -> ir.Function:
    f = dataclasses.replace(kernel, registers=dict(kernel.registers), blocks=[])
    joined: dict[int, ir.BasicBlock] = {}
    for group in groups:
        block = ir.BasicBlock(group[0].label, group[0].pos)
        block.instructions = [inst for member in group for inst in member.instructions]
        f.blocks.append(block)
        joined[id(group[0])] = block
    relink(((group[-1], block) for group, block in zip(groups, f.blocks, strict=True)),
           joined)
    return f
