"""Strided shared-memory loads a segment makes again: the second takes the first's lanes
where nothing between them can have changed those elements. A Blelloch down-sweep's
`left = temp[ai]; temp[ai] = temp[bi]; temp[bi] += left` loads temp[bi] twice, around the
store to temp[ai], and its lanes are interleaved with temp[ai]'s in one span: a second masked
load of that span waits for the masked store before it to leave the store buffer.

Within a segment (straight-line code; no other warp of the block runs meanwhile), a load of
a strided place (strided.py) under a mask is noted by its base, offset, type and mask. A
strided store whose lanes lie the same stride S apart as a noted load's, with its lane 0 D
bytes away where 2D is S or -S (modulo the addresses' width: the pairs of a tree level,
`temp[2t]` and `temp[2t + 1]`, `ai` and `bi = ai + offset`), cannot touch the load's lanes:
every lane's distance to every other is D times an odd number, which has D's trailing zero
bits, so it is not zero and at least the access size where D's low bits are zero below it.
That is tested at run time (S and D are scalars strided.py found); the load again branches
on it. A store to the noted place itself leaves its value there for the next load; any other
store, atomic, call, fence, barrier or memory instruction forgets every note, and so does a
write of a note's base register (state.py's forget) and a region the warp may skip.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, value_type
from ptxport.codegen.targets.cpu.gang import strided
from ptxport.codegen.targets.cpu.gang.checks import Place
from ptxport.codegen.targets.cpu.gang.refusals import SIMPLE_OPCODES
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import Type

__all__ = ["before", "hold", "load", "stored"]

# instructions that leave memory alone (ld and st: the notes follow them here)
_KEEPS = (SIMPLE_OPCODES - {"membar", "fence"}) | {"ld", "ldu", "st"}


def before(fl: GangLowering, inst: ir.Instruction) -> None:
    """Before lowering `inst`: an instruction that may write memory forgets the notes."""
    if inst.opcode not in _KEEPS:
        fl.reloads.clear()


def hold(fl: GangLowering) -> None:
    """At a store: the notes leave fl.reloads (any path of the store but stored() keeps
    none) for stored() to take back those the store cannot touch."""
    fl.reloads_held, fl.reloads = fl.reloads, {}


def _key(fl: GangLowering, place: Place, t: Type) -> tuple:
    return place.key, place.offset, str(value_type(t)), id(fl.mask)


def _plain(fl: GangLowering, place: Place) -> bool:
    return place.shared and fl.inst.spec.get("sem") in (None, "weak")


def load(fl: GangLowering, place: Place, t: Type, access):
    """The lanes' values of a strided load at `place` (`access()` loads them): a noted
    load's where it holds (tested at run time where a store came between)."""
    if not _plain(fl, place):
        return access()
    key = _key(fl, place, t)
    noted = fl.reloads.get(key)
    if noted is None:
        value = access()
    elif isinstance(noted[1], ll.Constant) and noted[1].constant == 1:
        return noted[0]
    else:
        b = fl.b
        again, done = (fl.llfn.append_basic_block(n) for n in ("reload", "reloaded"))
        kept = b.block
        ll.IRBuilder.cbranch(b, noted[1], done, again)
        b.position_at_end(again)
        fresh = access()
        fresh_block = b.block
        b.branch(done)
        b.position_at_end(done)
        value = ll.IRBuilder.phi(b, fresh.type)
        value.add_incoming(noted[0], kept)
        value.add_incoming(fresh, fresh_block)
    span = fl.patterns.get(strided.span_key(fl, place, t))
    if span is not None:
        fl.reloads[key] = (value, I1(1), span[0], span[1], t.size)
    return value


def stored(fl: GangLowering, place: Place, t: Type, value) -> None:
    """After a strided store of `value` at `place`: the held notes the store cannot touch,
    each with the run-time test that says so, and the stored value at its own place."""
    held, fl.reloads_held = fl.reloads_held, None
    span = fl.patterns.get(strided.span_key(fl, place, t))
    if held is None or span is None or not _plain(fl, place):
        fl.reloads.clear()      # (a vector store's later elements: none held any more)
        return
    start, stride = span[0], span[1]
    key = _key(fl, place, t)
    for other, (loaded, valid, other_start, other_stride, size) in held.items():
        if other == key or other_start.type != start.type:
            continue
        apart = _apart(fl, start, stride, other_start, other_stride, max(size, t.size))
        fl.reloads[other] = (loaded, fl.b.and_(valid, apart), other_start, other_stride, size)
    fl.reloads[key] = (value, I1(1), start, stride, t.size)


def _apart(fl: GangLowering, start, stride, other_start, other_stride, size: int):
    """i1: no lane's `size` bytes at start + i * stride meet any at other_start + j *
    other_stride (the same stride S, D = other_start - start with 2D = +-S, D not zero and
    a multiple of `size`, a power of two)."""
    b = fl.b
    typ = start.type
    d = b.sub(other_start, start)
    twice = b.add(d, d)
    halves = b.or_(ll.IRBuilder.icmp_unsigned(b, "==", twice, stride),
                   ll.IRBuilder.icmp_unsigned(b, "==", twice, b.neg(stride)))
    aligned = ll.IRBuilder.icmp_unsigned(b, "==", b.and_(d, ll.Constant(typ, size - 1)),
                                         ll.Constant(typ, 0))
    nonzero = ll.IRBuilder.icmp_unsigned(b, "!=", d, ll.Constant(typ, 0))
    same = ll.IRBuilder.icmp_unsigned(b, "==", stride, other_stride)
    return b.and_(b.and_(halves, same), b.and_(aligned, nonzero))
