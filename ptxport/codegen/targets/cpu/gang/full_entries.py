"""Segments' entries, and straight entries into their full-mask copies.

Each segment is lowered twice (lowering.py): for the full mask (all 32 lanes, a constant)
and for any other; its entry loads the mask and picks the copy. A branch that all 32 lanes
take the same way, from a full-mask copy, goes to its target's full-mask copy's own entry
(`seg<n>_enter_all`): no lane waits elsewhere then, so the segment's entry would pick that
copy anyway. Through the segment's entry, a loop of the full-mask copy (a GEMM's k loop)
shared its header with the other copy's loop, and LLVM kept what is live across either in
memory: its register allocator stored and reloaded a tiled GEMM's accumulators at every
iteration of the k loop. Each copy has one entry block, which every way into it passes
(one header for LLVM's loops), and which polls the launch's stop word where the segment
is a loop's header.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32
from ptxport.codegen.targets.cpu.gang.lanes import FULL, W, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.stop import STOPPED, poll_stop
from ptxport.passes.segment import Segment

__all__ = ["enter_copies", "entry", "is_full"]

_FULL = ll.Constant(vec(I1), [I1(1)] * W)


def is_full(mask) -> bool:
    """Whether `mask` is the constant of all 32 lanes (a segment's full-mask copy)."""
    if not isinstance(mask, ll.Constant):
        return False
    bits = mask.constant
    return isinstance(bits, list) and len(bits) == W and all(
        getattr(bit, "constant", None) in (1, True) for bit in bits)


def entry(fl: GangLowering, segment: Segment) -> ll.Block:
    """Where the mask's lanes, all going to `segment`, enter it: under the full mask its
    full-mask copy's entry, else the segment's."""
    if not fl.options.full_mask_copies or segment.block is None or not is_full(fl.mask):
        return segment.llblock
    return _entry_all(fl, segment.number)


def _entry_all(fl: GangLowering, number: int) -> ll.Block:
    block = fl.full_entries.get(number)
    if block is None:
        block = fl.full_entries[number] = fl.llfn.append_basic_block(f"seg{number}_enter_all")
    return block


def enter_copies(fl: GangLowering, segment: Segment, looped: bool, stop_word) -> list:
    """The segment's entry (its llblock) and its copies' entries: [(mask, block)] for each
    copy, the block where its code goes, the mask the code is lowered for."""
    b = fl.b
    b.position_at_end(segment.llblock)
    if not fl.options.full_mask_copies:
        return [(_enter(fl, segment.number, looped, stop_word, "going_on"), b.block)]
    mask = b.load(fl.mask_slot)
    some = fl.llfn.append_basic_block(f"seg{segment.number}_enter_some")
    enter_all = _entry_all(fl, segment.number)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(mask), I32(FULL)),
                         enter_all, some)
    copies = []
    for lanes, block, name in ((_FULL, enter_all, "all"), (mask, some, "some")):
        b.position_at_end(block)
        _enter(fl, segment.number, looped, stop_word, name)
        copies.append((lanes, b.block))
    return copies


def _enter(fl: GangLowering, number: int, looped: bool, stop_word, name: str) -> ll.Value:
    """At the builder's block: the stop poll where the segment is a loop's header, then a
    new block `seg<n>_<name>` (the builder left there); the mask, loaded there."""
    b = fl.b
    code = fl.llfn.append_basic_block(f"seg{number}_{name}")
    if looped:
        stopping = fl.llfn.append_basic_block(f"seg{number}_{name}_stopping")
        poll_stop(fl, stop_word, stopping, code)
        b.position_at_end(stopping)
        b.ret(I32(STOPPED))
    else:
        b.branch(code)
    b.position_at_end(code)
    return b.load(fl.mask_slot)
