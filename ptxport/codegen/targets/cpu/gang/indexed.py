"""Warp gangs' global accesses `x[i]` through a 32-bit index whose lanes the lowering cannot
prove consecutive when compiling: a grid-stride loop's index in a block reduction, whose loop
lies between the branch that leaves out the threads past the end and a barrier or warp
operation (the lanes that skip the loop make the index's writes there not the whole warp's,
so passes/lane_forms.py gives it no form and classify.py looked at the 32 lanes' 64-bit
addresses at run time: about 30 instructions an access).

The address is `base + wide(i) * size` (mul.wide.{s,u}32 of the index by the element's
size, added to a register alike in the warp), written before the access in its block or in
that block's one predecessor (reduce_shared's `x[i + 256]` after its test), the index and
the base not written in between and held at the access (streams.held: where a segment
starts between, a barrier's, they must be live there, or a resumed warp has lost them).
All 32 lanes running, the index itself is tested: lane l holds i0 + l and i0 + 31 does
not wrap (as the widening reads it). Where that holds, the lanes'
addresses are consecutive from base + wide(i0) * size: that range is checked against the
launch's allocations and prefetched, and the access is one vector load or store. Where it
does not, or the range is not inside one allocation, the access takes memory.py's general
path, which classifies the lanes and checks each (a fault names the first bad lane's
address, as before), off the hot path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR
from ptxport.codegen.targets.cpu.gang import checks
from ptxport.codegen.targets.cpu.gang.access_kinds import consecutive, joined
from ptxport.codegen.targets.cpu.gang.checks import Place, inside_one_allocation
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.scalar_lanes import recomputed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.streams import held, kernel_facts, prefetch_site
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.ir.types import Type
from ptxport.ptx.ast import IntImm

__all__ = ["Indexed", "applies", "access"]


class Indexed(NamedTuple):
    """An access's address as `base + wide(index) * size`: the registers, and whether the
    widening is signed."""

    index: ir.Register
    base: ir.Register
    signed: bool


def applies(fl: GangLowering, place: Place, size: int) -> Indexed | None:
    """The index and base of a global access of `size` bytes a lane at `place` whose lanes
    have no known form, made by all 32 lanes unguarded, where its address register is
    written once, as this module's docstring says; else None."""
    if place.shared or place.lanes is not None or place.stride is not None \
            or fl.guard is not None or not isinstance(fl.mask, ll.Constant) \
            or not isinstance(fl.unguarded_mask, ll.Constant):
        return None
    facts = _facts(fl)
    address = facts.registers.get(place.key[0])
    where = facts.position.get(id(fl.inst))
    if address is None or where is None:
        return None
    add = _only_write(facts, address, where)
    if add is None or add.opcode != "add" or add.spec.types[0] not in ("s64", "u64") \
            or len(add.operands) != 3:
        return None
    for base, offset in (add.operands[1:], add.operands[:0:-1]):
        if not isinstance(base, ir.Register) or base not in fl.uniform \
                or not isinstance(offset, ir.Register) or offset.type.bits != 64:
            continue
        wide = _only_write(facts, offset, facts.position[id(add)])
        signed = None if wide is None else _widening(wide, size)
        if signed is None:
            continue
        index = wide.operands[1]
        if not isinstance(index, ir.Register) or index in fl.uniform \
                or index.type.bits != 32 \
                or _written_between(facts, index, wide, where) \
                or _written_between(facts, base, add, where) \
                or not held(fl, index, wide, fl.inst) or not held(fl, base, add, fl.inst):
            continue
        return Indexed(index, base, signed)
    return None


_BYTE_WIDENINGS = ("cvt.s64.s32", "cvt.u64.s32", "cvt.s64.u32", "cvt.u64.u32")


def _widening(wide: ir.Instruction, size: int) -> bool | None:
    """Whether `wide` widens a 32-bit index to a byte offset of elements of `size` bytes
    signed (True) or unsigned (False), or None where it is not such a widening:
    mul.wide.{s,u}32 by the size, or, for bytes, cvt.{s,u}64.{s,u}32 (`data[i]` of a char
    array: the index is the offset; the source's type says whether it extends signed)."""
    text = wide.spec.text
    if text in ("mul.wide.s32", "mul.wide.u32"):
        if isinstance(wide.operands[2], IntImm) and wide.operands[2].value == size:
            return text == "mul.wide.s32"
        return None
    if size == 1 and text in _BYTE_WIDENINGS and len(wide.operands) == 2:
        return text.endswith("s32")     # (the source's type says how it extends)
    return None


class _Facts(NamedTuple):
    registers: dict        # id(register) -> register (streams.kernel_facts')
    writes: dict           # id(register) -> (instruction, cycle) of its writes (the same)
    position: dict         # id(instruction) -> (its block, its index there) (the same)
    before: dict           # id(block) -> its one predecessor (blocks with one)


def _facts(fl: GangLowering) -> _Facts:
    facts = fl.streams.get("indexed")
    if facts is None:
        entering = {}
        for block in fl.function.blocks:
            for successor in block.successors:
                entering.setdefault(id(successor), []).append(block)
        before = {b: p[0] for b, p in entering.items() if len(p) == 1}
        known = kernel_facts(fl)
        facts = fl.streams["indexed"] = _Facts(known.registers, known.writes, known.position,
                                               before)
    return facts


def _only_write(facts: _Facts, register, where) -> ir.Instruction | None:
    """The one write of `register`, unguarded, before `where` in its block or in that
    block's one predecessor (another block than its own)."""
    writes = facts.writes.get(id(register), ())
    if len(writes) != 1 or writes[0][0].guard is not None:
        return None
    write = writes[0][0]
    block, i = facts.position[id(write)]
    if block is where[0]:
        return write if i < where[1] else None
    return write if facts.before.get(id(where[0])) is block else None


def _written_between(facts: _Facts, register, first: ir.Instruction, where) -> bool:
    """Whether an instruction after `first` and before `where` (in its block, or in the
    one before it: _only_write) writes `register`."""
    block, start = facts.position[id(first)]
    if block is where[0]:
        between = block.instructions[start + 1:where[1]]
    else:
        between = block.instructions[start + 1:] + where[0].instructions[:where[1]]
    return any(register in may_write(inst) for inst in between)


def access(fl: GangLowering, place: Place, t: Type, found: Indexed, value,
           general: Callable[[], list | None]):
    """Load (value None: a list of the lanes' vector) or store `value` at `place`: one
    vector access where the index's lanes are consecutive and their range lies in one
    allocation, else `general()` (memory.py's path) in a block of its own."""
    b = fl.b
    load = value is None
    low, ok = _range(fl, place, t.size, found)
    fast, slow, done = (fl.llfn.append_basic_block(n) for n in (
        "indexed_fast", "indexed_lanes", "indexed_done"))
    checks.expect(fl, ll.IRBuilder.cbranch(b, ok, fast, slow))
    b.position_at_end(fast)
    # (as a group's first access: 256 bytes, the next warp's lines too; with the warp's 128
    # alone reduce_shared took 36% more CPU time on the GPU host's Xeon. On the fast path
    # alone: between the range check and this branch, it kept LLVM from branching on the
    # check's compares, which it then kept in a register and tested again)
    prefetch_site(fl, place, [low], max(t.size * W, 256), t.size, not load)
    pointer = ll.IRBuilder.inttoptr(b, low, PTR)
    quick = consecutive(fl, t, value, lambda _: pointer, None, None)
    fast = b.block
    b.branch(done)
    b.position_at_end(slow)
    # (what the general path classifies and checks holds on its path only; its address
    # vector made again there, from the index's 32-bit lanes: made once for both cold paths,
    # LLVM left the 32 sign extensions in the hot one)
    memos, addrs = (dict(fl.patterns), dict(fl.group_ok)), place.addrs
    place.addrs = recomputed(b, addrs, fl.written)
    each = general()
    (fl.patterns, fl.group_ok), place.addrs = memos, addrs
    slow = b.block
    b.branch(done)
    b.position_at_end(done)
    if not load:
        return None
    return joined(fl, t, [([quick], fast), (each, slow)])


def _range(fl: GangLowering, place: Place, size: int, found: Indexed):
    """(low: the address lane 0's index gives, i64; i1: whether the lanes' indices run
    i0, i0 + 1, ... without wrapping and [low, low + 32 * size) lies in one allocation)."""
    b = fl.b
    lanes = fl.read_lanes(found.index, "s32" if found.signed else "u32")
    first = ll.IRBuilder.extract_element(b, lanes, I32(0))
    along = ll.IRBuilder.icmp_unsigned(b, "==", lanes, b.add(b.splat(first), fl.lane))
    every = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(along), I32(-1))
    if found.signed:
        unwrapped = ll.IRBuilder.icmp_signed(b, "<=", first, I32((1 << 31) - W))
        wide = b.sext(first, I64)
    else:
        unwrapped = ll.IRBuilder.icmp_unsigned(b, "<=", first, I32(-W))
        wide = b.zext(first, I64)
    base = fl.read(found.base, "u64")
    low = b.add(b.add(base, b.mul(wide, I64(size))), I64(place.offset))
    # (the lanes' test first, a branch of its own: with an `and` after the range check LLVM
    # kept the check's answer in a register and tested it again, 3 instructions a pass)
    return low, inside_one_allocation(fl, low, b.add(low, I64(size * W)),
                                      first=b.and_(every, unwrapped))
