"""Warp gangs' window loads: where all 32 lanes run the segment and a load's lanes read a few
elements whose offsets from lane 0 are known when compiling (passes/lane_offsets.py), every
element between the lowest and the highest read by some lane, the warp reads that window once
(one range check, one small vector load) and shuffles it out to its lanes by constant indices.

Triton 3.9 meets a 4-warp reduction's partial results so: each warp stores its part at
`smem + 4 * warp` and, after the barrier, lane l of every warp reads `smem + 4 * (l & 3)`
(the lanes' offsets 0 4 8 12 0 4 ...). classify.py finds no pattern in those lanes when
compiling (not consecutive, not one address per half warp): it classified them at run time,
as scattered, and loaded them with a gather whose lanes were checked one by one; a 4-warp
fused softmax spent ~16% of its CPU time (in cache) in these accesses and the stores beside
them.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR, value_type
from ptxport.codegen.targets.cpu.gang.checks import CONSECUTIVE, Place, check_place
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir.types import Type

__all__ = ["MAX_WINDOW", "window_of", "applies", "window_load"]

MAX_WINDOW = 64     # bytes: a window load is one vector load of at most 16 words


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def window_of(offsets: tuple[int, ...], size: int, bits: int) -> tuple[int, list[int]] | None:
    """(lo, indices) of lanes at `offsets` (a register's lane offsets, modulo 2**bits) reading
    `size` bytes each: the window starts lo bytes after lane 0's address and lane i reads its
    element indices[i]; None where the lanes do not read a dense window of at most
    MAX_WINDOW bytes, or read consecutive elements (one masked vector access already)."""
    d = [_signed(c - offsets[0], bits) for c in offsets]
    lo, hi = min(d), max(d) + size
    if hi - lo > MAX_WINDOW or any((x - lo) % size for x in d):
        return None
    indices = [(x - lo) // size for x in d]
    if indices == list(range(W)) or set(indices) != set(range((hi - lo) // size)):
        return None
    return lo, indices


def applies(fl: GangLowering, place: Place, size: int, value) -> bool:
    """Whether the access is a load lowered here: under the constant full mask (every lane
    holds its address and reads), at a base whose lanes' offsets form a window."""
    form = place.lanes
    return (value is None and form is not None and not form.halves and not form.widened
            and isinstance(fl.mask, ll.Constant)
            and window_of(form.offsets, size, place.addrs.type.element.width) is not None)


def window_load(fl: GangLowering, place: Place, t: Type):
    """The lanes' values of a load `applies` took: the window checked as one range (the
    exact per-lane check where that fails: every window element is some lane's), loaded as
    a vector and shuffled to the lanes."""
    b = fl.b
    et = place.addrs.type.element
    lo, indices = window_of(place.lanes.offsets, t.size, et.width)
    count = max(indices) + 1
    start = b.add(ll.IRBuilder.extract_element(b, place.addrs, I32(0)),
                  ll.Constant(et, lo + place.offset))
    end = b.add(start, ll.Constant(et, count * t.size))
    check_place(fl, place, t.size, False, I32(CONSECUTIVE), start, end)
    if place.shared:
        at = start if et.width == 64 else b.sext(start, I64)
        pointer = b.gep(fl.target.space_base(fl, "shared"), [at], source_etype=ll.IntType(8))
    else:
        pointer = b.inttoptr(start, PTR)
    element = value_type(t)
    window = b.load(pointer, typ=ll.VectorType(element, count), align=t.size)
    return ll.IRBuilder.shuffle_vector(b, window, ll.Constant(window.type, None),
                                       ll.Constant(ll.VectorType(I32, W), indices))
