"""Segmenting, for warp gangs: a kernel's code cut into segments, the units the gang
dispatcher runs for the lanes at them (codegen/targets/cpu/gang/). A segment starts at each
block's start, before each warp operation (a lane may have to wait there and come back) and
after each block barrier (where a warp resumes).

A shfl.sync of the whole warp (member mask 0xffffffff) in a converged block (uniformity.py:
the warp's live lanes only ever run it all together) starts no segment: every non-exited
member is there when one is, so no lane ever waits at it (Triton's reductions are made of
such shuffles, five per warp-wide max or sum), and neither does an unguarded mma.sync or
ldmatrix there (Triton's tl.dot: a run of them between two barriers is then one segment).
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import constant_registers
from ptxport.passes import PassResult
from ptxport.passes.uniformity import converged_writers, uniform_registers
from ptxport.ptx.ast import IntImm

__all__ = ["Segment", "segments_of", "inline_warp_ops", "is_barrier", "is_warp_op", "run"]


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


def inline_warp_ops(kernel: ir.Function, uniform: set) -> frozenset[int]:
    """ids of the warp operations that start no segment: shfl.sync with the full member
    mask (an immediate, or a register NVRTC set to one: scan_warp's shuffles) and unguarded
    mma.sync.aligned and ldmatrix.sync.aligned (the whole warp's, always), run by the warp's
    live lanes together (`uniform`: the kernel's uniform registers, uniformity.py)."""
    together = converged_writers(kernel, uniform)
    constants = constant_registers(kernel)

    def full(mask) -> bool:
        value = mask.value if isinstance(mask, IntImm) else constants.get(mask)
        return value is not None and value & 0xFFFFFFFF == 0xFFFFFFFF
    return frozenset(id(inst) for inst in kernel.instructions() if id(inst) in together and (
        (inst.opcode == "shfl" and len(inst.operands) > 4 and full(inst.operands[4]))
        or (inst.opcode in ("mma", "ldmatrix") and inst.guard is None)))


def segments_of(kernel: ir.Function, inline: frozenset[int] = frozenset()) -> list[Segment]:
    """The kernel's segments, numbered in program order (the gang's lanes wait at higher
    numbers while others finish lower ones); warp operations in `inline` start none."""
    out = []
    for block in kernel.blocks:
        start = 0
        for i, inst in enumerate(block.instructions):
            if is_warp_op(inst) and i > start and id(inst) not in inline:
                out.append(Segment(len(out), block, start, i))
                start = i
            if is_barrier(inst):
                out.append(Segment(len(out), block, start, i + 1))
                start = i + 1
        out.append(Segment(len(out), block, start, len(block.instructions)))
    return out


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per segment: its block and instructions (for blocks of
    shape `block`, which uniformity depends on)."""
    notes = []
    for s in segments_of(kernel, inline_warp_ops(kernel, uniform_registers(kernel, block))):
        first = s.block.instructions[s.start].opcode if s.start < s.end else "-"
        notes.append(f"segment {s.number}: {s.block.label} [{s.start}, {s.end}) from {first}")
    return PassResult(kernel, notes)
