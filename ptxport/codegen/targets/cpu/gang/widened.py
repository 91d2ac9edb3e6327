"""Warp gangs' global accesses through widened addresses whose lanes lie consecutive: CUDA's
`x[i]` with an int index (`mul.wide.s32 %rd, %r, 4`, then an add to the base) in a
segment that all 32 lanes run. The lane-forms pass knows such lanes consecutive only while
no lane's 32-bit index wraps (LaneForm.widened); instead of the warp's flag for that
(classify.py's _if_exact: a select of the kind, so that each access carried a gather of its
lanes, their 64-bit address vectors and a test of the flag in the hot code), the range is
taken from the true addresses of the mask's first and last lanes: the lanes' offsets grow
from lane to lane, so where an index wraps, the last lane's does, and its address then lies
below the first lane's, which no range check passes. Where the check fails (a wrap, a fault,
lanes over two allocations), the lanes are checked one by one (a fault names the first bad
lane, as before) and the access is a gather or scatter of their true addresses, off the hot
path.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, PTR
from ptxport.codegen.targets.cpu.gang import checks
from ptxport.codegen.targets.cpu.gang.access_kinds import (
    consecutive,
    interleaved,
    joined,
    lane_by_lane,
)
from ptxport.codegen.targets.cpu.gang.checks import (
    SCATTERED,
    Place,
    check_place,
    group_check,
    inside_one_allocation,
)
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane, recomputed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.streams import prefetch_site
from ptxport.ir.types import Type


def applies(fl: GangLowering, place: Place, size: int) -> bool:
    """Whether the access of `size` bytes a lane at `place` is one of this module's: global,
    its base's lanes consecutive by a widened form, and all 32 lanes running the segment
    (every lane holds its address; the guard aside)."""
    form = place.lanes
    if place.shared or form is None or not form.widened or form.halves or form.scaled \
            or not isinstance(fl.unguarded_mask, ll.Constant):
        return False
    wrap = (1 << place.addrs.type.element.width) - 1
    return [(c - form.offsets[0]) & wrap for c in form.offsets] == [size * i for i in range(W)]


def _range(fl: GangLowering, place: Place, size: int):
    """(lane 0's address as the first active lane's implies, low, high): the range from the
    first active lane's true address to the end of the last's (place.offset included)."""
    b = fl.b
    et = place.addrs.type.element
    if isinstance(fl.mask, ll.Constant):
        first, last, before = I32(0), I32(W - 1), ll.Constant(et, 0)
    else:
        bits = fl.bits(fl.mask)
        # (an empty mask's lanes 32 and -1 read as 0 and 31: its range is never used)
        first = b.and_(fl.cttz(bits), I32(W - 1))
        last = b.and_(b.sub(I32(W - 1), fl.ctlz(bits)), I32(W - 1))
        before = b.mul(b.zext(first, et), ll.Constant(et, size))
    offset = ll.Constant(et, place.offset)
    if isinstance(fl.mask, ll.Constant):    # (scalars: the address vector stays cold)
        first = lane(b, place.addrs, 0, fl.written)
        last = lane(b, place.addrs, W - 1, fl.written)
    else:
        first = ll.IRBuilder.extract_element(b, place.addrs, first)
        last = ll.IRBuilder.extract_element(b, place.addrs, last)
    low = b.add(first, offset)
    high = b.add(last, ll.Constant(et, place.offset + size))
    return b.sub(low, before), low, high


def access(fl: GangLowering, place: Place, t: Type, count: int, values=None, old=None):
    """Load (values None: `count` vectors of the lanes' elements; `old`: the values the
    lanes outside the mask keep, else zeros) or store `values`: one masked access of the
    warp's elements where the lanes' range passes its check (the group's, where the access
    shares one), else each lane checked and a gather or scatter per element."""
    b = fl.b
    size = t.size * count
    load = values is None
    start, low, high = _range(fl, place, size)
    early = isinstance(fl.mask, ll.Constant)
    if early:       # (before the check: LLVM then branches from a cache hit to `fast`)
        ahead = _ahead(fl, place, size, low)
        if ahead is not None:
            prefetch_site(fl, place, *ahead, size, not load)
    # (before the branch on the mask: later accesses of the group reuse the check)
    ok, ahead = _check(fl, place, t, count, low, high)
    fast, slow, done = (fl.llfn.append_basic_block(n) for n in (
        "widened_fast", "widened_lanes", "widened_done"))
    skipped = None
    if not isinstance(fl.mask, ll.Constant):
        skipped, active = b.block, fl.llfn.append_basic_block("widened_active")
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                             active, done)
        b.position_at_end(active)
    if ahead is not None and not early:
        prefetch_site(fl, place, *ahead, size, not load)
    checks.expect(fl, ll.IRBuilder.cbranch(b, ok, fast, slow))
    b.position_at_end(fast)
    pointer = ll.IRBuilder.inttoptr(b, start, PTR)
    if count > 1:
        quick = interleaved(fl, t, count, pointer, values, old)
    elif load:
        quick = [consecutive(fl, t, None, lambda _: pointer, None, None,
                             None if old is None else old[0])]
    else:
        consecutive(fl, t, values[0], lambda _: pointer, None, None)
    fast = b.block
    b.branch(done)
    b.position_at_end(slow)
    if early:       # (the lanes' addresses made here, off the hot path)
        place = Place(recomputed(b, place.addrs, fl.written), place.shared, place.offset,
                      place.key, place.lanes, place.stride)
    check_place(fl, place, size, not load, I32(SCATTERED), low, high)
    each = lane_by_lane(fl, place, t, count, values)
    if load and old is not None:
        each = [b.select(fl.mask, v, o) for v, o in zip(each, old, strict=True)]
    slow = b.block
    b.branch(done)
    b.position_at_end(done)
    if not load:
        return None
    paths = [(quick, fast), (each, slow)]
    return joined(fl, t, paths if skipped is None else [*paths, (old, skipped)])


def _check(fl: GangLowering, place: Place, t: Type, count: int, low, high):
    """(i1: whether [low, high) lies in one allocation, by the access's group check, made
    once for the group, or its own; the arguments of its prefetch, or None), as
    memory.py's checks: the group's first access prefetches for the group."""
    b = fl.b
    size = t.size * count
    idle = None if isinstance(fl.mask, ll.Constant) else ll.IRBuilder.icmp_unsigned(
        b, "==", fl.bits(fl.mask), I32(0))
    group = fl.group_of.get(id(fl.inst)) if fl.guard is None else None
    if group is None:
        return inside_one_allocation(fl, low, high, skip=idle), ([low], size * W)
    et = low.type
    # (group_check adds the group's offsets to the lanes' range without place.offset)
    ok, group_low = group_check(fl, place, t.size, b.sub(low, ll.Constant(et, place.offset)),
                                b.sub(high, ll.Constant(et, place.offset + size - t.size)),
                                known=True)
    return ok, None if group_low is None else ([group_low], 256)


def _ahead(fl: GangLowering, place: Place, size: int, low):
    """The arguments of the prefetch _check's answer gives (None where the group's check,
    and with it its prefetch, was made before), found before the check."""
    group = fl.group_of.get(id(fl.inst)) if fl.guard is None else None
    if group is None:
        return [low], size * W
    if (group, id(fl.mask)) in fl.group_ok:
        return None
    first = fl.group_span[group][0]
    return [fl.b.add(low, ll.Constant(low.type, first - place.offset))], 256
