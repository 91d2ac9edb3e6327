"""Segmenting, for warp gangs: a kernel's code cut into segments, the units the gang
dispatcher runs for the lanes at them (codegen/targets/cpu/gang/). A segment starts at each
block's start, before each warp operation (a lane may have to wait there and come back) and
after each block barrier (where a warp resumes).
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.passes import PassResult

__all__ = ["Segment", "segments_of", "is_barrier", "is_warp_op", "run"]


class Segment:
    """Instructions start..end-1 of `block`; `llblock` is its code's LLVM block, once made."""

    __slots__ = ("number", "block", "start", "end", "llblock")

    def __init__(self, number, block, start, end):
        self.number, self.block, self.start, self.end = number, block, start, end
        self.llblock = None


def is_barrier(inst: ir.Instruction) -> bool:
    return inst.opcode in ("bar", "barrier") and not inst.spec.has("warp")


def is_warp_op(inst: ir.Instruction) -> bool:
    return inst.opcode in ("shfl", "vote", "activemask", "mma", "ldmatrix") or (
        inst.opcode in ("bar", "barrier") and inst.spec.has("warp")) or (
        inst.opcode == "wgmma" and inst.spec.get("op") == "mma_async")


def segments_of(kernel: ir.Function) -> list[Segment]:
    """The kernel's segments, numbered in program order (the gang's lanes wait at higher
    numbers while others finish lower ones)."""
    out = []
    for block in kernel.blocks:
        start = 0
        for i, inst in enumerate(block.instructions):
            if is_warp_op(inst) and i > start:
                out.append(Segment(len(out), block, start, i))
                start = i
            if is_barrier(inst):
                out.append(Segment(len(out), block, start, i + 1))
                start = i + 1
        out.append(Segment(len(out), block, start, len(block.instructions)))
    return out


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per segment: its block and instructions."""
    notes = []
    for s in segments_of(kernel):
        first = s.block.instructions[s.start].opcode if s.start < s.end else "-"
        notes.append(f"segment {s.number}: {s.block.label} [{s.start}, {s.end}) from {first}")
    return PassResult(kernel, notes)
