"""Warp gangs' shared-memory loads whose lanes read a small window: one vector load of the
window (or of each half warp's), then each element's lanes taken from it by a shuffle.

memory.py loads a warp's lanes as one vector where they are consecutive, and otherwise
gathers them lane by lane. Where passes/lane_offsets.py knows the lanes' offsets when
compiling and they fall in a few dozen elements, a gather reads memory that one vector load
holds: Triton's IEEE f32 `tl.dot` (an FMA loop over tiles in shared memory) has each thread
read its rows of A as .v4/.v2 loads that a half warp shares (one address a half) and its
columns of B as .v2 loads 8 bytes apart (each half the same 128 bytes), and gathered, those
loads took most of the loop's time. Here the first is two 16-byte loads whose elements are
broadcast, the second one 128-byte load taken apart into its even and odd elements, which
LLVM folds into the FMAs' operands (broadcasts) or turns into a permute.

Only loads of every lane of the warp (the segment's full-mask copy) with no guard: a partial
mask goes to memory.py, which also checks each lane where the window's range check fails.
"""

from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, value_type
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang import memory
from ptxport.codegen.targets.cpu.gang.checks import HALF_UNIFORM, check_place
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir

__all__ = ["LIMIT", "Window", "lower_ld", "window_plan"]

HALF = W // 2
# the most elements one window loads: 64 f32 are four 512-bit registers (a 32-lane f32
# register is two); wider windows would load more than the lanes' gather touches
LIMIT = 64


class Window(NamedTuple):
    """`elements` elements loaded from lane `lane`'s address plus `start` bytes."""

    lane: int
    start: int
    elements: int


def window_plan(offsets, halves: bool, bits: int, size: int, count: int,
                limit: int = LIMIT):
    """(windows, picks) for a warp's load of `count` elements of `size` bytes a lane at
    lane offsets `offsets` (passes/lane_forms.py's LaneForm, modulo 2**bits; `halves`:
    each half's from its own first lane, the halves' bases unknown): one window for all
    lanes where they fit in `limit` elements, else one per half warp; picks[l] the index
    of lane l's first element in the windows laid end to end. None where the lanes do not
    fit, or an offset is not a whole number of elements from the window's start."""
    wrap, sign = (1 << bits) - 1, 1 << (bits - 1)

    def relative(lanes, ref):
        return [((offsets[lane] - offsets[ref] + sign) & wrap) - sign for lane in lanes]

    def window(lanes, ref):
        rel = relative(lanes, ref)
        low = min(rel)
        elements, rest = divmod(max(rel) - low + size * count, size)
        if rest or elements > limit or any((r - low) % size for r in rel):
            return None
        return Window(ref, low, elements), [(r - low) // size for r in rel]

    whole = None if halves else window(range(W), 0)
    if whole is not None:
        return [whole[0]], whole[1]
    parts = [window(range(h * HALF, h * HALF + HALF), h * HALF) for h in range(2)]
    if None in parts:
        return None
    first = parts[0][0].elements
    return [parts[0][0], parts[1][0]], parts[0][1] + [first + p for p in parts[1][1]]


def lower_ld(fl: GangLowering, inst: ir.Instruction) -> None:
    """A load: through a window where _plan finds one, else memory.py's lower_ld."""
    found = _plan(fl, inst)
    if found is None:
        memory.lower_ld(fl, inst)
        return
    place, t, count, (windows, picks) = found
    loaded = [_load_window(fl, place, t, count, w) for w in windows]
    if len(loaded) == 2 and windows[0].elements != windows[1].elements:
        n = max(w.elements for w in windows)
        loaded = [_widened(fl, v, n) for v in loaded]
        picks = picks[:HALF] + [p - windows[0].elements + n for p in picks[HALF:]]
    other = loaded[1] if len(loaded) == 2 else ll.Constant(loaded[0].type, None)
    values = [ll.IRBuilder.shuffle_vector(fl.b, loaded[0], other, ll.Constant(
        ll.VectorType(I32, W), [p + i for p in picks])) for i in range(count)]
    dest = inst.operands[0]
    if count == 1 and not isinstance(dest, ir.VectorValue):
        fl.write(dest, values[0], t)
    else:
        fl.write_vector(dest, values, t)


def _plan(fl: GangLowering, inst: ir.Instruction):
    """(place, type, count, window_plan) of a shared load of every lane whose lanes' offsets
    are known and fit windows, else None."""
    if inst.opcode != "ld" or inst.guard is not None or state_space(inst) != "shared" \
            or id(inst) in fl.runs or id(inst) in fl.pending:
        return None
    if not _full(fl.mask) or memory._vector_access(fl, inst) is None:
        return None
    t, count = instruction_type(inst), vector_count(inst)
    if isinstance(value_type(t), ll.VectorType):
        return None
    place = memory.place_of(fl, inst.operands[1], "shared")
    form = place.lanes
    if form is None or form.widened or form.scaled:
        return None
    plan = window_plan(form.offsets, form.halves, place.addrs.type.element.width, t.size,
                       count)
    return None if plan is None else (place, t, count, plan)


def _full(mask) -> bool:
    """Whether the mask is the constant of all 32 lanes (the segment's full-mask copy)."""
    if not isinstance(mask, ll.Constant):
        return False
    bits = mask.constant
    return isinstance(bits, list) and len(bits) == W and all(
        getattr(b, "constant", None) in (1, True) for b in bits)


def _load_window(fl: GangLowering, place, t, count: int, window: Window):
    """The window's elements as one vector, after the range check of its bytes (which
    fails only where some lane's own access is outside the shared window: the exact
    per-lane check then raises the fault)."""
    b = fl.b
    et = place.addrs.type.element
    start = b.add(ll.IRBuilder.extract_element(b, place.addrs, I32(window.lane)),
                  ll.Constant(et, place.offset + window.start))
    end = b.add(start, ll.Constant(et, window.elements * t.size))
    check_place(fl, place, t.size * count, False, I32(HALF_UNIFORM), start, end)
    at = start if et.width == 64 else b.sext(start, I64)
    pointer = ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"), [at],
                               source_etype=ll.IntType(8))
    return ll.IRBuilder.load(b, pointer, typ=ll.VectorType(value_type(t), window.elements),
                             align=t.size)


def _widened(fl: GangLowering, v, n: int):
    """`v` as a vector of n elements (its own first, then the first repeated), so that two
    windows of unlike sizes make one shuffle's operands."""
    have = v.type.count
    if have == n:
        return v
    return ll.IRBuilder.shuffle_vector(fl.b, v, ll.Constant(v.type, None), ll.Constant(
        ll.VectorType(I32, n), list(range(have)) + [0] * (n - have)))
